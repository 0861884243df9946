#!/usr/bin/env python3
"""List the functions a header of streamdrill declares that nothing calls.

    scripts/exports.py

A function declared in a header under harness/, injectors/ or reports/ is
exported; it is called when its name appears, as a word, anywhere in the
sources (the harness, the unit tests, the fuzz targets, the benchmarks)
other than its declaration and its definition. Exit 1, naming each one,
when an exported function has no caller: dead code, or a function that
should be static.
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADERS = [p for d in ("harness", "injectors", "reports") for p in glob.glob(os.path.join(ROOT, d, "**", "*.h"), recursive=True)]
SOURCES = [p for d in ("harness", "injectors", "reports", "tests/unit", "tests/fuzz", "tests/bench")
           for ext in ("*.c", "*.cpp", "*.h") for p in glob.glob(os.path.join(ROOT, d, "**", ext), recursive=True)]
# a declaration: a line at column 0 (or after `extern "C"`) with a type, the name and '(' (the rest may wrap)
DECL = re.compile(r"^(?!typedef|struct|#|static|\s)[A-Za-z_][\w\s\*]*?\b(sd_\w+)\s*\(")


def declared():
    names = {}
    for h in HEADERS:
        for line in open(h, encoding="utf-8", errors="replace"):
            m = DECL.match(line)
            if m:
                names.setdefault(m.group(1), os.path.relpath(h, ROOT))
    return names


def main():
    names = declared()
    text = {p: open(p, encoding="utf-8", errors="replace").read() for p in SOURCES}
    words = {}
    for body in text.values():
        for w in re.findall(r"\bsd_\w+", body):
            words[w] = words.get(w, 0) + 1
    unused = sorted(n for n in names if words.get(n, 0) <= 2)
    for n in unused:
        print(f"{names[n]}: {n} is exported and never called")
    return 1 if unused else 0


if __name__ == "__main__":
    sys.exit(main())
