#!/usr/bin/env python3
"""Fails when a file of the repository cites a path of the repository that does not exist.

Read: the comments of source files (C++, CMake, shell, Python, YAML, systemd, Dockerfile, JS)
and the whole text of every Markdown file. Cited: paths that start at a top-level folder or file
of the repository (`docs/design.md`, `agent/source/file_tailer.h`, `rules/README.md`,
`tests/...`, `rules/**/*.versions.yaml`, `agent/{core,config}`), bare Markdown file names
(the design card was cited as a bare name that was not in the repository), and relative Markdown links (`[x](../rules/README.md#root-cause)`, anchors
included). A path counts as found when it exists from the repository root or from the citing
file's folder; a glob when it matches something; `<placeholder>` and `CAPITALS/` parts are cut off. A cited
`docs/<file>.md section N` must have a heading numbered N in that file.

Not checked: a line holding `doc-links: ignore`, and Markdown between `<!-- doc-links: off -->`
and `<!-- doc-links: on -->` (files of other projects named in the research notes).

  scripts/check-doc-links.py [ROOT]      exit 0 when every citation holds, 1 naming file:line
  scripts/check-doc-links.py --self-test plants broken citations in a temporary tree and fails
                                         unless each one is reported

ctest runs both (tests/CMakeLists.txt), so scripts/test.sh does.
"""
import glob
import os
import re
import sys
import tempfile

SKIP_DIRS = {".git", "node_modules", "__pycache__"}
# Data, not prose: fuzz inputs, logs, corpora.
SKIP_PREFIXES = ("tests/fuzz/corpus/", "tests/data/", "tests/healthy/", "tests/corpus/",
                 "examples/logs/", "build")
C_LIKE = {".h", ".hpp", ".cc", ".cpp", ".c", ".in", ".js", ".mjs"}
HASH_LIKE = {".py", ".sh", ".cmake", ".yaml", ".yml", ".service", ".toml", ".ini", ".conf"}
HASH_NAMES = {"CMakeLists.txt", "Dockerfile", ".clang-format", ".gitignore"}


def comment_fragments(path, text):
    """(line number, comment text) for each comment line of a source file."""
    name = os.path.basename(path)
    ext = os.path.splitext(name)[1]
    lines = text.split("\n")
    out = []
    if ext in C_LIKE:
        return c_comments(text)
    hash_like = ext in HASH_LIKE or name in HASH_NAMES or text.startswith("#!")
    if not hash_like:
        return out
    in_doc = None
    for n, line in enumerate(lines, 1):
        if ext == ".py":
            quotes = line.count('"""') + line.count("'''")
            if in_doc or (quotes and line.strip().startswith(('"""', "'''", 'r"""'))):
                out.append((n, line))
                if quotes % 2 == 1:
                    in_doc = not in_doc
                continue
        m = re.search(r"(^|\s)#(.*)$", line)
        if m and not line.lstrip().startswith("#!"):
            out.append((n, m.group(2)))
    return out


def c_comments(text):
    """Comments of C-like text, skipping string and character literals (raw strings too)."""
    out = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append((line, text[i + 2:end]))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end
            for k, part in enumerate(text[i + 2:end].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, end)
            i = end + 2
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            open_end = text.find("(", i + 2)
            delim = text[i + 2:open_end]
            end = text.find(")" + delim + '"', open_end)
            end = n if end < 0 else end + len(delim) + 2
            line += text.count("\n", i, end)
            i = end
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return out


def markdown_fragments(text):
    out = []
    on = True
    for n, line in enumerate(text.split("\n"), 1):
        if "<!-- doc-links: off -->" in line:
            on = False
        elif "<!-- doc-links: on -->" in line:
            on = True
        elif on:
            out.append((n, line))
    return out


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(md_path, cache={}):
    if md_path not in cache:
        found = set()
        fence = False
        seen = {}
        with open(md_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("```"):
                    fence = not fence
                m = None if fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
                if m:
                    base = slug(m.group(1))
                    k = seen.get(base, 0)
                    seen[base] = k + 1
                    found.add(base if k == 0 else f"{base}-{k}")
        cache[md_path] = found
    return cache[md_path]


def has_section(md_path, number):
    with open(md_path, encoding="utf-8", errors="replace") as f:
        pattern = re.compile(r"#{1,6}\s+" + re.escape(number) + r"(\.|\s)")
        return any(pattern.match(line) for line in f)


def expand_braces(p):
    m = re.search(r"\{([^{}]*)\}", p)
    if not m:
        return [p]
    out = []
    for alt in m.group(1).split(","):
        out.extend(expand_braces(p[:m.start()] + alt + p[m.end():]))
    return out


def exists(root, citing_dir, p):
    """From the root, the citing file's folder, or a folder above it (a config's relative path)."""
    bases = [root]
    d = citing_dir
    while os.path.commonpath([root, d]) == root and d != root:
        bases.append(d)
        d = os.path.dirname(d)
    for base in bases:
        for q in expand_braces(p):
            full = os.path.join(base, q)
            if any(c in q for c in "*?["):
                if glob.glob(full, recursive=True):
                    break
            elif os.path.exists(full):
                break
        else:
            continue
        return True
    return False


def check(root):
    root = os.path.abspath(root)
    tops = sorted(e for e in os.listdir(root)
                  if e not in SKIP_DIRS and not e.startswith("build") and
                  (os.path.isdir(os.path.join(root, e)) or e.endswith((".md", ".txt", ".json"))))
    dirs = [re.escape(e) for e in tops if os.path.isdir(os.path.join(root, e))]
    files = [re.escape(e) for e in tops if not os.path.isdir(os.path.join(root, e))]
    seg = r"(?:[\w.*+-]|\{[\w.,+-]*\}|<[\w.-]+>)"
    path_re = re.compile(r"(?<![\w./<-])((?:" + "|".join(dirs) + r")/(?:" + seg + r"|/)*"
                         + (r"|(?:" + "|".join(files) + r")\b" if files else "") + r")")
    bare_md_re = re.compile(r"(?<![\w./<-])([\w-]+\.md)\b(?!/)")
    link_re = re.compile(r"\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
    section_re = re.compile(r"\s*(?:,\s*)?sections?\s+(\d+(?:\.\d+)*)"
                            r"((?:\s*(?:,|and)\s*\d+(?:\.\d+)*)*)")
    problems = []
    count = 0

    def report(rel, line, message):
        problems.append(f"{rel}:{line}: {message}")

    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and
                             not (dirpath == root and d.startswith("build")))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if rel.startswith(SKIP_PREFIXES) and not rel.endswith(".md"):
                continue
            if rel.startswith("tests/fuzz/corpus/"):
                continue
            try:
                with open(full, encoding="utf-8") as f:
                    text = f.read()
            except (UnicodeDecodeError, OSError):
                continue
            is_md = name.endswith(".md")
            frags = markdown_fragments(text) if is_md else comment_fragments(rel, text)
            here = os.path.dirname(full)
            for n, frag in frags:
                if "doc-links: ignore" in frag:
                    continue
                for m in path_re.finditer(frag):
                    p = m.group(1).rstrip(".,:;")
                    if "<" in p:
                        p = p[:p.index("<")]
                    caps = re.search(r"(^|/)[A-Z][A-Z_]*(/|$)", p)  # rules/DOMAIN/
                    if caps:
                        p = p[:caps.start() + 1]
                    if not p:
                        continue
                    count += 1
                    if not exists(root, here, p):
                        report(rel, n, f"cites '{p}', which does not exist")
                        continue
                    tail = frag[m.end():]
                    s = section_re.match(tail)
                    if s and p.endswith(".md") and os.path.isfile(os.path.join(root, p)):
                        numbers = [s.group(1)] + re.findall(r"\d+(?:\.\d+)*", s.group(2))
                        for number in numbers:
                            if not has_section(os.path.join(root, p), number):
                                report(rel, n, f"cites {p} section {number}, which has no "
                                               f"heading numbered {number}")
                for m in bare_md_re.finditer(frag):
                    p = m.group(1)
                    if path_re.fullmatch(p):
                        continue  # a top-level file, checked above
                    count += 1
                    if not exists(root, here, p):
                        report(rel, n, f"cites '{p}', which is neither at the root nor beside "
                                       f"{rel}")
                if not is_md:
                    continue
                for m in link_re.finditer(frag):
                    target = m.group(1)
                    if re.match(r"[a-z][a-z0-9+.-]*:", target):
                        continue  # https:, mailto:
                    count += 1
                    file_part, _, anchor = target.partition("#")
                    dest = os.path.normpath(os.path.join(here, file_part)) if file_part else full
                    if not os.path.exists(dest):
                        report(rel, n, f"links to '{target}', which does not exist")
                    elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                        report(rel, n, f"links to '{target}': {os.path.relpath(dest, root)} "
                                       f"has no heading '#{anchor}'")
    return count, problems


def self_test():
    with tempfile.TemporaryDirectory() as t:
        os.makedirs(os.path.join(t, "docs"))
        os.makedirs(os.path.join(t, "agent", "core"))
        with open(os.path.join(t, "docs", "design.md"), "w") as f:
            f.write("# design\n\n## 1. One\n\n## 2. Two\n")
        with open(os.path.join(t, "README.md"), "w") as f:
            f.write("See [the design](docs/design.md#2-two) and `agent/core/`.\n")
        cases = {
            "agent/core/a.h": "// Holds (docs/design.md section 2).\nint a;\n",
            "agent/core/b.h": "// Holds (DESIGN.md section 2).\nint b;\n",
            "agent/core/c.h": "// Holds (docs/design.md section 7).\nint c;\n",
            "agent/core/d.h": "int d;  // see agent/core/missing.h\n",
            "docs/e.md": "[gone](../docs/nothere.md), [anchor](design.md#9-nine)\n",
            "agent/CMakeLists.txt": "# see docs/tailing.md\n",
        }
        for rel, body in cases.items():
            with open(os.path.join(t, rel), "w") as f:
                f.write(body)
        _, problems = check(t)
        expected = ["agent/core/b.h:1: cites 'DESIGN.md'",
                    "agent/core/c.h:1: cites docs/design.md section 7",
                    "agent/core/d.h:1: cites 'agent/core/missing.h'",
                    "docs/e.md:1: links to '../docs/nothere.md'",
                    "docs/e.md:1: links to 'design.md#9-nine'",
                    "agent/CMakeLists.txt:1: cites 'docs/tailing.md'"]
        missed = [e for e in expected if not any(p.startswith(e) for p in problems)]
        extra = [p for p in problems if not any(p.startswith(e) for e in expected)]
        for p in problems:
            print("reported as expected:", p)
        if missed or extra:
            for e in missed:
                print("NOT REPORTED:", e)
            for p in extra:
                print("REPORTED WRONGLY:", p)
            return 1
        print(f"self-test: all {len(expected)} planted broken citations reported, none else")
        return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    count, problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check-doc-links: {len(problems)} broken of {count} citations", file=sys.stderr)
        return 1
    print(f"check-doc-links: {count} citations, every one exists")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
