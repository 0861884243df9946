#!/usr/bin/env python3
"""Print the largest C files and the longest C functions of streamdrill.

    scripts/sizes.py [--top N] [--max-lines L]

A function is found the simple way the code is written: a line at column 0
that opens a definition (a name and '(' before the first '{' that ends a
line), up to the '}' at column 0 that closes it. With --max-lines, exit 1
when a function is longer than L lines and no comment line just above it
says why (a comment containing "long because").
"""
import argparse
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ("harness", "injectors", "reports")
DEF = re.compile(r"^(?:static\s+)?(?:inline\s+)?[A-Za-z_][\w\s\*]*?\b(\w+)\s*\(")


def functions(path):
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = DEF.match(lines[i])
        if m and not lines[i].rstrip().endswith(";") and not lines[i].startswith(("typedef", "struct", "#")):
            # the definition's body opens at the first line ending with '{'
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith("{") and not lines[j].rstrip().endswith(";"):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                k = j + 1
                while k < len(lines) and lines[k] != "}":
                    k += 1
                above = "\n".join(lines[max(0, i - 6):i])
                out.append((m.group(1), i + 1, k - i + 1, "long because" in above.lower()))
                i = k + 1
                continue
        i += 1
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--max-lines", type=int, default=0)
    a = ap.parse_args()
    files = sorted(f for d in DIRS for f in glob.glob(os.path.join(ROOT, d, "**", "*.c"), recursive=True))
    sizes = sorted(((sum(1 for _ in open(f)), os.path.relpath(f, ROOT)) for f in files), reverse=True)
    print(f"{'lines':>6}  largest files")
    for n, f in sizes[:a.top]:
        print(f"{n:>6}  {f}")
    funcs = sorted(((n, os.path.relpath(f, ROOT), name, line, why) for f in files for name, line, n, why in functions(f)),
                   reverse=True)
    print(f"\n{'lines':>6}  longest functions")
    for n, f, name, line, why in funcs[:a.top]:
        print(f"{n:>6}  {name} ({f}:{line}){'  [reason given]' if why else ''}")
    if a.max_lines:
        bad = [x for x in funcs if x[0] > a.max_lines and not x[4]]
        for n, f, name, line, _ in bad:
            print(f"too long: {name} ({f}:{line}) has {n} lines, over {a.max_lines}, with no 'long because' comment above it",
                  file=sys.stderr)
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
