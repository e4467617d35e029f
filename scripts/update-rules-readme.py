#!/usr/bin/env python3
"""Rewrites the "Failure classes" tables at the end of rules/README.md from the loaded pack, and
the counts in README.md's summary of the pack.

Usage: scripts/update-rules-readme.py [FAULTLINE_BINARY]   (default: build/debug/faultline)
The RulePack integration test fails when a class or rule is missing from those tables.
"""
import collections
import json
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
binary = sys.argv[1] if len(sys.argv) > 1 else str(root / "build/debug/faultline")
rules = json.loads(subprocess.check_output(
    [binary, "rules", "list", "--rules", str(root / "rules"), "--format", "json"]))
by_domain = collections.OrderedDict()
for r in sorted(rules, key=lambda r: r["id"]):
    by_domain.setdefault(r["id"].split(".")[0], collections.OrderedDict()).setdefault(
        r["class"], []).append(r)
classes = {r["class"] for r in rules}
# A reference that is a user's public report (an issue, pull request, discussion or forum thread),
# not documentation: how the classes were chosen is how often users report them there.
THREAD = re.compile(r"github\.com/[^/]+/[^/]+/(issues|discussions|pull)/\d+|discuss\.|forums?\."
                    r"|stackoverflow\.com/questions|huggingface\.co/.*/discussions")
threads = collections.defaultdict(set)
for r in rules:
    threads[r["class"]].update(u for u in r["references"] if THREAD.search(u))
counts = sorted(len(threads[c]) for c in classes)
out = ["## Failure classes", "",
       f"The pack names {len(classes)} failure classes with {len(rules)} rules (`faultline rules list` "
       "prints both", "counts, and `tests/integration/rule_pack_test.cc` fails when a class or rule "
       "is missing here;", "`scripts/update-rules-readme.py` rewrites these tables). A class is one "
       "failure as an engineer names", "it; its rules are the wordings and tools that print it. "
       "*generic* rules are catch-alls that give", "way to a specific rule on the same line; "
       "*symptom* rules are consequences that `scan` lists under", "their root cause.", "",
       "*threads* counts the distinct public user reports (GitHub issues, pull requests and "
       "discussions, forum", "and Stack Overflow threads) its rules cite as references: classes "
       "were chosen by how often", "users report them there. "
       f"{sum(counts)} threads in all, a median of {counts[len(counts) // 2]} per class; "
       f"{sum(1 for n in counts if n == 0)} classes", "cite only the documentation or source of the "
       "tool that prints them: mostly libc, kernel, scheduler", "and container-runtime messages "
       "(EDQUOT, EROFS, ECONNREFUSED, Slurm and Kubernetes states), and a few", "of Ray, Gloo and "
       "Python.", ""]
for domain, domain_classes in by_domain.items():
    out += [f"### {domain}", "", "| class | rules | threads |", "|---|---|---|"]
    for name, members in domain_classes.items():
        def shown(r):
            tags = [t for t, on in (("generic", r["generic"]), ("symptom", r["role"] == "symptom")) if on]
            return f"`{r['id']}`" + (f" ({', '.join(tags)})" if tags else "")
        out.append(f"| {name} | " + ", ".join(shown(r) for r in members) +
                   f" | {len(threads[name])} |")
    out.append("")
readme = root / "rules/README.md"
text = readme.read_text()
if "## Failure classes" in text:
    text = text[:text.index("## Failure classes")]
readme.write_text(text.rstrip("\n") + "\n\n" + "\n".join(out))
# The project README's one-line summary of the pack says the same counts.
project_readme = root / "README.md"
summary = re.sub(r"\d+ rules in \d+ failure classes", f"{len(rules)} rules in {len(classes)} failure classes",
                 project_readme.read_text(), count=1)
project_readme.write_text(summary)
print(f"{len(rules)} rules, {len(classes)} classes")
