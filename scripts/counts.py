#!/usr/bin/env python3
"""summary.json's "counts" in reports/schemas/summary.schema.json, generated
from the one list of counts (harness/base/counts.h): every count, in the
list's order, with its meaning; and each fault's "recovery", from the list of
recovery figures (harness/base/figures.h). `make unit` runs it to check the
schema is what the lists say; --write rewrites those parts from the lists."""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COUNTS_H = os.path.join(ROOT, "harness", "base", "counts.h")
FIGURES_H = os.path.join(ROOT, "harness", "base", "figures.h")
SCHEMA = os.path.join(ROOT, "reports", "schemas", "summary.schema.json")
# the counts every run writes, whatever its sinks and model (the rest may be absent)
REQUIRED = ["produced", "expected_in_target", "observed_rows", "observed_unique", "duplicated", "lost", "unexpected",
            "late_leaked", "malformed_leaked", "quarantined"]
KEPT = {"SD_CK_RUN": "every run", "SD_CK_MODEL": "with a model", "SD_CK_BOUNDS": "the pipeline's own account, -1 without it"}


def counts():
    text = open(COUNTS_H).read()
    body = text[text.index("#define SD_COUNTS(X)"):]
    found = re.findall(r'X\((\w+), (SD_CK_\w+), ([01]), "((?:[^"\\]|\\.)*)"\)', body)
    if len(found) < 40:
        sys.exit(f"scripts/counts.py: only {len(found)} counts read from {COUNTS_H}: its form changed")
    return found


def expected():
    props = {}
    for name, kind, grows, meaning in counts():
        desc = f"{meaning} ({KEPT[kind]}{'; only grows while the pipeline writes' if grows == '1' else ''})"
        props[name] = {"type": ["integer", "null"], "description": desc}
    return {"type": "object", "description": "every count of the run, generated from harness/base/counts.h (scripts/counts.py)",
            "required": REQUIRED, "properties": props, "additionalProperties": False}


def figures():
    text = open(FIGURES_H).read()
    body = text[text.index("#define SD_FIGURES(X)"):text.index("typedef enum")]
    body = re.sub(r'"\s*\\\s*\n\s*"', "", body)  # join the C string pieces
    found = re.findall(r"X\((\w+), '([smn])', \"((?:[^\"\\]|\\.)*)\"\)", body)
    if len(found) < 5:
        sys.exit(f"scripts/counts.py: only {len(found)} figures read from {FIGURES_H}: its form changed")
    return found


def bases():
    """The values harness/oracle/recovery.c writes as a fault's basis, in its order."""
    src = open(os.path.join(ROOT, "harness", "oracle", "recovery.c")).read()
    out = []
    for b in re.findall(r'snprintf\(r->basis, sizeof\(r->basis\), "([a-z]+)"\)', src):
        if b not in out:
            out.append(b)
    if not out:
        sys.exit("counts.py: no basis written in harness/oracle/recovery.c")
    return out


def recovery():
    unit = {"s": "seconds", "m": "milliseconds", "n": "a count"}
    props = {"line": {"type": "integer", "minimum": 0, "description": "the drill line of the step it struck in"}}
    for name, u, meaning in figures():
        props[name] = {"type": ["number" if u == "s" else "integer", "null"], "minimum": 0,
                       "description": f"{meaning} ({unit[u]}; null where it does not apply, cannot be measured or never happened)"}
    props["caught_up"] = {"type": ["boolean", "null"], "description": "false: it never caught up; null: unknown"}
    props["caught_up_t_ms"] = {"type": ["integer", "null"], "description": "when it caught up, since the run started"}
    props["basis"] = {"type": ["string", "null"], "enum": bases() + [None],
                      "description": "what recovery_s rests on: the target's write times, the pipeline's commits, or the harness's "
                                     "own looks at the target (samples) where those say later than the write times"}
    classes = ["observed", "engine-recorded", "pipeline-claimed"]
    props["evidence"] = {"type": "object", "required": [f[0] for f in figures()], "additionalProperties": False,
                         "properties": {f[0]: {"type": "string", "enum": classes} for f in figures()},
                         "description": "what each figure rests on: observed (the harness's own looks: the target as a reader "
                                        "sees it, the broker, its proxy, its clock), engine-recorded (checkpoints, commit logs, "
                                        "group offsets) or pipeline-claimed (the pipeline's own batch markers, log lines or write "
                                        "times); an expect on a pipeline-claimed figure says it rests on the pipeline's words"}
    props["not_measured"] = {"type": "array", "items": {"type": "string"}, "description": "figures that apply and could not be measured"}
    props["why"] = {"type": "string", "description": "what could not be measured, and why"}
    return {"type": ["object", "null"], "required": list(props), "additionalProperties": False, "properties": props,
            "description": "how the pipeline recovered from this fault, generated from harness/base/figures.h (scripts/counts.py); "
                           "null for a record that is no fault of its own (a resume, a restart of a stopped pipeline)"}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--write", action="store_true", help="rewrite the schema's counts from counts.h")
    a = ap.parse_args()
    schema = json.load(open(SCHEMA))
    want = expected()
    if a.write:
        schema["properties"]["counts"] = want
        fi = schema["properties"]["faults"]["items"]
        fi["properties"]["recovery"] = recovery()
        if "recovery" not in fi["required"]:
            fi["required"].append("recovery")
        with open(SCHEMA, "w") as f:
            json.dump(schema, f, indent=2, ensure_ascii=False)
            f.write("\n")
        print(f"{os.path.relpath(SCHEMA, ROOT)}: counts rewritten from counts.h ({len(want['properties'])} counts)")
        return 0
    have = schema["properties"].get("counts")
    if have != want or list(have.get("properties", {})) != list(want["properties"]):
        missing = [n for n in want["properties"] if n not in (have or {}).get("properties", {})]
        extra = [n for n in (have or {}).get("properties", {}) if n not in want["properties"]]
        print(f"FAIL counts: {os.path.relpath(SCHEMA, ROOT)}'s counts are not counts.h's (missing {missing}, extra {extra}, "
              "or order or meaning differ): run scripts/counts.py --write", file=sys.stderr)
        return 1
    fi = schema["properties"]["faults"]["items"]
    if fi["properties"].get("recovery") != recovery() or "recovery" not in fi["required"]:
        print(f"FAIL counts: {os.path.relpath(SCHEMA, ROOT)}'s faults[].recovery is not figures.h's: run scripts/counts.py --write",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
