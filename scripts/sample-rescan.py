#!/usr/bin/env python3
"""Rescans the issue-thread sample (tests/corpus/sample/) and shows where the pack's answer moved.

Usage: scripts/sample-rescan.py [FAULTLINE_BINARY] [--rules DIR]
       (default build/debug/faultline and the bundled pack)

Each MANIFEST-*.tsv row holds a failure written down by a person before the file was scanned, the
top rule faultline gave then (`top_rule`) and that person's verdict (named, generic, wrong, missed;
tests/corpus/sample/README.md); a row judged again has `top_rule_now` and `verdict_now` beside
them, and those are the ones compared. Whether a rule fits a failure is a judgement, so this script does not
judge: it prints the verdicts as recorded, and lists every row whose top error-level rule is now a
different one, for a person to judge again and update its row.
"""
import csv
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "corpus" / "sample"


def top_rule(binary, log, rules):
    """The report's first failure, else its first error-level finding, else '-'."""
    command = [binary, "scan", "--format", "json"] + (["--rules", rules] if rules else []) + [str(log)]
    out = subprocess.run(command, capture_output=True, text=True, check=False).stdout
    report = json.loads(out)
    if report.get("first_failure"):
        return report["first_failure"]["signature"]
    for finding in report.get("findings", []):
        if finding.get("severity") in ("error", "critical"):
            return finding["signature"]
    return "-"


def main(argv):
    binary = str(ROOT / "build" / "debug" / "faultline")
    rules = None
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--rules" and args:
            rules = args.pop(0)
        else:
            binary = arg
    verdicts = Counter()
    moved = []
    for manifest in sorted(SAMPLE.glob("MANIFEST-*.tsv")):
        with manifest.open(newline="") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                log = SAMPLE / Path(row["path"]).name
                # The latest judgement: a re-judged row's *_now columns, else its first ones.
                verdict = row.get("verdict_now") or row["verdict"]
                judged_top = row.get("top_rule_now") or row["top_rule"]
                verdicts[verdict] += 1
                now = top_rule(binary, log, rules)
                # A missed row had no error-level finding, whatever warning its top rule names.
                before = "-" if verdict == "missed" else judged_top
                if now != before:
                    moved.append((manifest.name, log.name, verdict, before, now,
                                  row["failure"]))
    total = sum(verdicts.values())
    print(f"sample: {total} threads; latest verdicts: " +
          ", ".join(f"{v} {verdicts[v]}" for v in ("named", "generic", "wrong", "missed")))
    print(f"{len(moved)} rows whose top rule changed since their verdict (judge them again):")
    for manifest, log, verdict, before, now, failure in moved:
        print(f"  {manifest} {log}: was {before} ({verdict}), now {now}\n      failure: {failure}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
