#!/usr/bin/env python3
"""What makes the bundled rule pack slow to scan, in CPU seconds on a slice of the benchmark log.

Rules share one Vectorscan pass, so a rule's cost is what the pack saves without it, not what the
rule costs alone. This script rebuilds the pack (from `faultline rules list --format json`) in
variants and times each with the others, interleaved, keeping the fastest of --runs runs:

  pack            the pack as it is
  no context      every rule without its `context` patterns (which are scanned on every line)
  no hot          the patterns that match more than --hot of the slice's lines replaced by one
                  that never matches (each hit costs an RE2 confirmation and per-line work)
  no (?i)         every pattern with a case-insensitive group replaced likewise
  no DOMAIN       (with --domains) the pack without rules/DOMAIN/

and lists the hot patterns with their rules and hit rates. Figures are CPU seconds (user + sys)
for scanning the slice --repeat times in one process, so start-up weighs little; compare the
variants of one run, and expect a few hundredths of a second of noise on a shared machine.

Usage: tests/bench/pack_cost.py [--bin build/release/faultline] [--log FILE] [--bytes 60000000]
       [--runs 5] [--repeat 2] [--hot 0.002] [--domains]
The log defaults to the largest log_*.log in $FAULTLINE_BENCH_DIR (/tmp/faultline-bench), which
tests/bench/run.sh generates. Needs only python3 and the release build.
"""
import argparse
import collections
import glob
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile

NEVER = "zq7xv9 this pattern never matches"


def quote(text):
    return "'" + str(text).replace("'", "''") + "'"


def write_pack(rules, directory, replace=lambda p: p, keep_context=True):
    """Writes `rules` (rules list JSON) as a pack that matches like them, patterns mapped."""
    os.makedirs(directory, exist_ok=True)
    docs = []
    for r in rules:
        lines = [f"id: {r['id']}", "title: t", f"severity: {r.get('severity', 'error')}",
                 f"category: {r['category']}", "match:"]
        for m in r["match"]:
            if isinstance(m, str):
                lines.append(f"  - {quote(replace(m))}")
            else:
                lines.append("  - sequence: [" + ", ".join(quote(replace(s)) for s in m["sequence"]) +
                             f"]\n    within_lines: {m['within_lines']}")
        ctx = r.get("context")
        if keep_context and ctx:
            lines.append("context:")
            lines.append(f"  within_lines: {ctx['within_lines']}")
            for key in ("requires_any", "downgrade_if_followed_by", "downgrade_if_preceded_by"):
                if ctx[key]:
                    lines.append(f"  {key}: [" + ", ".join(quote(replace(p)) for p in ctx[key]) + "]")
            if "unconfirmed_severity" in ctx:
                lines.append(f"  unconfirmed_severity: {ctx['unconfirmed_severity']}")
            lines.append(f"  downgrade_to: {ctx['downgrade_to']}")
        if r.get("labels"):
            lines.append("labels:")
            for name, pattern in r["labels"].items():
                lines.append(f"  {name}: {quote(pattern)}")
        if r.get("generic"):
            lines.append("generic: true")
        lines += ["root_cause: r", "fix: f"]
        docs.append("\n".join(lines) + "\n")
    with open(os.path.join(directory, "pack.yaml"), "w", encoding="utf-8") as f:
        f.write("---\n".join(docs))


def scan(binary, rules_dir, logs):
    """CPU seconds of one scan, and its JSON report."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([binary, "scan", "--rules", rules_dir, "--format", "json"] + logs,
                          capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        sys.exit(f"pack_cost.py: scan with {rules_dir} failed: {done.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, json.loads(done.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--bin", default=os.environ.get("FAULTLINE_BIN",
                                                    os.path.join(repo, "build/release/faultline")))
    ap.add_argument("--rules", default=os.path.join(repo, "rules"))
    ap.add_argument("--log")
    ap.add_argument("--bytes", type=int, default=60_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--hot", type=float, default=0.002)
    ap.add_argument("--domains", action="store_true")
    args = ap.parse_args()

    log = args.log
    if log is None:
        bench = os.environ.get("FAULTLINE_BENCH_DIR", "/tmp/faultline-bench")
        logs = sorted(glob.glob(os.path.join(bench, "log_*.log")), key=os.path.getsize)
        if not logs:
            sys.exit("pack_cost.py: no log: run tests/bench/run.sh first, or give --log")
        log = logs[-1]
    listed = subprocess.run([args.bin, "rules", "list", "--rules", args.rules, "--format", "json"],
                            capture_output=True, text=True)
    if listed.returncode != 0:
        sys.exit(f"pack_cost.py: {listed.stderr.strip()}")
    rules = json.loads(listed.stdout)

    work = tempfile.mkdtemp(prefix="faultline_pack_cost_")
    try:
        slice_path = os.path.join(work, "slice.log")
        with open(log, "rb") as src, open(slice_path, "wb") as dst:
            data = src.read(args.bytes)
            dst.write(data[:data.rfind(b"\n") + 1])
        total_lines = data.count(b"\n")

        # Lines each pattern matches: one rule per distinct pattern, one scan.
        users = collections.defaultdict(list)
        for r in rules:
            for m in r["match"]:
                for p in ([m] if isinstance(m, str) else m["sequence"]):
                    users[p].append(r["id"])
            for key in ("requires_any", "downgrade_if_followed_by", "downgrade_if_preceded_by"):
                for p in (r.get("context") or {}).get(key, []):
                    users[p].append(f"{r['id']} ({key})")
        patterns = sorted(users)
        probe = [{"id": f"probe.p{i}", "category": "build", "match": [p], "labels": {}}
                 for i, p in enumerate(patterns)]
        write_pack(probe, os.path.join(work, "probe"))
        _, report = scan(args.bin, os.path.join(work, "probe"), [slice_path])
        hits = {patterns[int(f["signature"][len("probe.p"):])]: f["count"]
                for f in report["findings"]}
        hot = {p for p, n in hits.items() if n > args.hot * total_lines}

        variants = {"pack": dict(rules=rules)}
        variants["no context"] = dict(rules=rules, keep_context=False)
        variants["no hot"] = dict(rules=rules, replace=lambda p: NEVER if p in hot else p)
        variants["no (?i)"] = dict(rules=rules, replace=lambda p: NEVER if "(?i" in p else p)
        if args.domains:
            by_domain = collections.defaultdict(list)
            for r in rules:
                by_domain[os.path.basename(os.path.dirname(r["file"]))].append(r["id"])
            for domain, ids in sorted(by_domain.items()):
                variants[f"no {domain} ({len(ids)})"] = dict(
                    rules=[r for r in rules if r["id"] not in set(ids)])
        dirs = {}
        for i, (name, spec) in enumerate(variants.items()):
            dirs[name] = os.path.join(work, f"v{i}")
            write_pack(spec["rules"], dirs[name], spec.get("replace", lambda p: p),
                       spec.get("keep_context", True))
            scan(args.bin, dirs[name], [os.devnull])  # compiles (and caches) its database
        best = {}
        for _ in range(args.runs):
            for name, d in dirs.items():
                cpu, _ = scan(args.bin, d, [slice_path] * args.repeat)
                best[name] = min(best.get(name, cpu), cpu)

        mib = len(data) * args.repeat / 2**20
        print(f"slice: {len(data)} bytes ({total_lines} lines) of {log}, scanned {args.repeat}x; "
              f"{len(rules)} rules, {len(patterns)} distinct patterns")
        print(f"{'variant':28} {'cpu s':>7} {'MiB/s':>8} {'vs pack':>8}")
        for name in variants:
            print(f"{name:28} {best[name]:7.2f} {mib / best[name]:8.0f} "
                  f"{best[name] / best['pack'] - 1:+8.0%}")
        print(f"\npatterns matching more than {args.hot:.1%} of the lines "
              "(each hit is an RE2 confirmation):")
        for p in sorted(hot, key=lambda p: -hits[p]):
            print(f"  {hits[p] / total_lines:6.1%}  {p[:90]}\n          used by {', '.join(users[p])}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
