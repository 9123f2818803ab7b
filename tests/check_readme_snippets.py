#!/usr/bin/env python3
"""check_readme_snippets.py README.md DIR [DIR...]

The README shows only code that compiles and runs: every fenced code block
of the README preceded by a line `<!-- snippet: NAME -->` must equal the
region of a file under one of the DIRs (examples/, and tools/java/ for the
Java check program tools/run.sh rocksdb-java runs) between a comment line
`// [readme-snippet:NAME]` (or `# ...`) and the next comment line
`// [/readme-snippet]` (both lines excluded; compared after removing the region's common
indentation and trailing blanks). Every C++ block of the README must be
marked, every marked name must exist exactly once, and there must be at
least one. The example programs themselves are built and run by ctest
(examples/CMakeLists.txt). Exit 0 on success, 1 with a diff otherwise.
"""
import difflib
import os
import re
import sys
import textwrap

MARK = re.compile(r"^<!--\s*snippet:\s*([\w.-]+)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
# A marker is a comment line of its own: `// [readme-snippet:NAME]` or
# `# [readme-snippet:NAME]`, closed by `// [/readme-snippet]`.
BEGIN = re.compile(r"^\s*(?://|#)\s*\[readme-snippet:([\w.-]+)\]\s*$")
END = re.compile(r"^\s*(?://|#)\s*\[/readme-snippet\]\s*$")
CPP = {"cpp", "c++", "cc", "cxx"}


def normalize(lines):
    text = textwrap.dedent("\n".join(l.rstrip() for l in lines))
    return text.strip("\n").split("\n")


def readme_blocks(path):
    """[(name or None, language, lines, line number)] for every fenced block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, pending, i = [], None, 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if m:
            pending = (m.group(1), i + 1)
            i += 1
            continue
        f = FENCE.match(lines[i])
        if f:
            fence, lang, start = f.group(2), f.group(3).lower(), i + 1
            body, i = [], i + 1
            while i < len(lines) and not lines[i].strip().startswith(fence):
                body.append(lines[i])
                i += 1
            blocks.append((pending[0] if pending else None, lang, body, start))
            pending = None
        elif lines[i].strip() and pending:
            sys.exit(f"{path}:{pending[1]}: snippet marker '{pending[0]}' is not followed by a code block")
        i += 1
    return blocks


def example_regions(root):
    regions, errors = {}, []
    for d, _dirs, files in os.walk(root):
        for fn in sorted(files):
            p = os.path.join(d, fn)
            try:
                lines = open(p, encoding="utf-8").read().split("\n")
            except (UnicodeDecodeError, OSError):
                continue
            name, body = None, []
            for n, line in enumerate(lines, 1):
                b = BEGIN.search(line)
                if b and name is None:
                    name, body, start = b.group(1), [], n
                elif END.search(line) and name is not None:
                    if name in regions:
                        errors.append(f"{p}:{start}: snippet '{name}' defined twice "
                                      f"(also {regions[name][1]})")
                    regions[name] = (body, f"{p}:{start}")
                    name = None
                elif name is not None:
                    body.append(line)
            if name is not None:
                errors.append(f"{p}:{start}: snippet '{name}' has no [/readme-snippet]")
    return regions, errors


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    readme = argv[1]
    regions, errors = {}, []
    for root in argv[2:]:
        r, e = example_regions(root)
        for name, where in r.items():
            if name in regions:
                errors.append(f"{where[1]}: snippet '{name}' defined twice (also {regions[name][1]})")
            regions[name] = where
        errors += e
    blocks = readme_blocks(readme)
    checked = 0
    for name, lang, body, line in blocks:
        if name is None:
            if lang in CPP:
                errors.append(f"{readme}:{line}: a C++ block without <!-- snippet: NAME -->: "
                              "take it from an example program under examples/")
            continue
        if name not in regions:
            errors.append(f"{readme}:{line}: snippet '{name}' is in no file under {root}")
            continue
        want, where = normalize(regions[name][0]), regions[name][1]
        got = normalize(body)
        if got != want:
            diff = "\n".join(difflib.unified_diff(want, got, f"{where} ({name})",
                                                  f"{readme}:{line}", lineterm=""))
            errors.append(f"{readme}:{line}: snippet '{name}' differs from {where}:\n{diff}")
        checked += 1
    if checked == 0:
        errors.append(f"{readme}: no code block marked <!-- snippet: NAME -->")
    if errors:
        print("FAIL:\n" + "\n".join(errors))
        return 1
    print(f"PASS: {checked} README snippet(s) equal their example regions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
