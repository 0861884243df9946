#!/usr/bin/env python3
"""Validate every summary.json and export/manifest.json under the given
folders against the shipped JSON Schemas (reports/schemas/), with a real
validator (jsonschema, Draft 2020-12).

First the validator is proven on known-bad copies of the first summary and
manifest found (a stable key removed, a count of the wrong type, a key the
schema does not know, a verdict outside the enum): each must be refused, or
the check itself is broken. Prints one `ok`/`FAIL` line; exit 1 on any
invalid file, 0 otherwise. --min N: fewer than N files found is a failure
(a test run that wrote no summaries proves nothing)."""
import argparse
import copy
import json
import os
import sys

from jsonschema import Draft202012Validator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_schema(name):
    path = os.path.join(ROOT, "reports", "schemas", name)
    schema = json.load(open(path))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def find(dirs):
    summaries, manifests = [], []
    for d in dirs:
        for here, _, files in os.walk(d):
            # a run folder is one with run.db (a clone's tests/golden/ copy is not)
            if "summary.json" in files and "run.db" in files:
                summaries.append(os.path.join(here, "summary.json"))
            if "manifest.json" in files and os.path.basename(here) == "export" and \
                    os.path.exists(os.path.join(os.path.dirname(here), "run.db")):
                manifests.append(os.path.join(here, "manifest.json"))
    return sorted(summaries), sorted(manifests)


def errors_of(validator, doc):
    return sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))


def prove(validator, doc, mutations, what):
    """Every mutation of a valid doc must be refused."""
    problems = []
    for name, change in mutations:
        bad = copy.deepcopy(doc)
        change(bad)
        if not errors_of(validator, bad):
            problems.append(f"{what}: the validator accepted a copy with {name}")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--min", type=int, default=1)
    a = ap.parse_args()
    vs, vm = load_schema("summary.schema.json"), load_schema("manifest.schema.json")
    summaries, manifests = find(a.dirs)
    problems = []
    valid_s = valid_m = 0
    for path, v, kind in [(p, vs, "summary") for p in summaries] + [(p, vm, "manifest") for p in manifests]:
        try:
            doc = json.load(open(path))
        except (OSError, ValueError) as e:
            problems.append(f"{path}: not JSON: {e}")
            continue
        errs = errors_of(v, doc)
        for e in errs[:3]:
            where = "/".join(str(x) for x in e.absolute_path) or "(top)"
            problems.append(f"{os.path.relpath(path, ROOT)}: {where}: {e.message[:200]}")
        if not errs:
            if kind == "summary":
                valid_s += 1
            else:
                valid_m += 1
    if summaries:
        doc = json.load(open(summaries[0]))
        problems += prove(vs, doc, [
            ("no verdict", lambda d: d.pop("verdict")),
            ("counts.lost as a string", lambda d: d["counts"].__setitem__("lost", "0")),
            ("a count counts.h does not list", lambda d: d["counts"].__setitem__("lsot", 0)),
            ("a key the schema does not know", lambda d: d.__setitem__("verdikt", "pass")),
            ("verdict \"green\"", lambda d: d.__setitem__("verdict", "green")),
            ("a check without pass", lambda d: d["checks"].append({"name": "x", "expected": "", "actual": "", "detail": ""})),
            ("schema_version 2", lambda d: d.__setitem__("schema_version", 2)),
        ], "summary.schema.json")
    if manifests:
        doc = json.load(open(manifests[0]))
        problems += prove(vm, doc, [
            ("no ledger", lambda d: d.pop("ledger")),
            ("a seed as a number", lambda d: d.__setitem__("seed", 42)),
            ("a bucket CSV not named .csv", lambda d: d["bucket_csvs"].append("target-lost.txt")),
        ], "manifest.schema.json")
    total = len(summaries) + len(manifests)
    if total < a.min:
        problems.append(f"only {total} files found under {', '.join(a.dirs)} (expected at least {a.min})")
    if problems:
        print("FAIL schemas: " + "\n  ".join(problems[:40]))
        return 1
    print(f"ok   schemas: {valid_s} summary.json and {valid_m} manifest.json valid against reports/schemas/ "
          "(and known-bad copies refused)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
