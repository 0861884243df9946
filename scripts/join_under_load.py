#!/usr/bin/env python3
"""The join model's pending rules under load (`make join-under-load`):
refjoin's left and full outer joins (scenarios/parcel-join.drill, and the
lagging deliveries of join-lag) run N times each while two processes burn
a CPU each, and none may fail: a correct join judged wrong under load is a
false FAIL. Prints each drill's passes, failures and inconclusive runs and
the median run time; keeps the folder of every run that did not pass.

    python3 scripts/join_under_load.py --bin build/streamdrill --runs 100
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DRILLS = [("left outer", "scenarios/parcel-join.drill", ["--set", "type=left"]),
          ("full outer", "scenarios/parcel-join.drill", ["--set", "type=full"]),
          ("full outer, lagging deliveries", "tests/scenarios/join-lag-x5.drill", ["--set", "type=full"])]


def burners(n):
    """n processes that each keep a CPU busy, in sessions of their own."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(n)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "streamdrill"))
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--burners", type=int, default=2)
    ap.add_argument("--keep", default=os.path.join(ROOT, "tests", "out", "join-under-load"), help="where runs that did not pass are kept")
    a = ap.parse_args()
    shutil.rmtree(a.keep, ignore_errors=True)
    os.makedirs(a.keep)
    burn = burners(a.burners)
    bad = 0
    rows = []
    try:
        for name, drill, args in DRILLS:
            counts = {"pass": 0, "fail": 0, "inconclusive": 0, "error": 0}
            took = []
            for i in range(a.runs):
                out = tempfile.mkdtemp(prefix="sd-load-")
                t0 = time.time()
                p = subprocess.run([a.bin, "run", os.path.join(ROOT, drill), "--out", out, "--quiet"] + args, capture_output=True, text=True)
                took.append(time.time() - t0)
                summ = [os.path.join(r, f) for r, _, fs in os.walk(out) for f in fs if f == "summary.json"]
                verdict = json.load(open(summ[0]))["verdict"] if summ else "error"
                counts[verdict if verdict in counts else "error"] += 1
                if verdict != "pass":
                    bad += verdict == "fail" or verdict == "error"
                    shutil.move(out, os.path.join(a.keep, f"{name.replace(' ', '-').replace(',', '')}-{i}"))
                    print(f"  {name} run {i}: {verdict} (exit {p.returncode}): {p.stderr.strip()[-300:]}", flush=True)
                else:
                    shutil.rmtree(out, ignore_errors=True)
            rows.append((name, counts, statistics.median(took)))
            print(f"{name}: {counts['pass']} of {a.runs} pass, {counts['fail']} fail, {counts['inconclusive']} inconclusive, "
                  f"{counts['error']} error; median {statistics.median(took):.1f}s", flush=True)
    finally:
        for b in burn:
            os.killpg(b.pid, signal.SIGKILL)
            b.wait()
    print(f"\n| join | runs beside {a.burners} CPU burners | pass | fail | inconclusive | median run |\n|---|---:|---:|---:|---:|---:|")
    for name, c, med in rows:
        print(f"| {name} | {a.runs} | {c['pass']} | {c['fail'] + c['error']} | {c['inconclusive']} | {med:.1f} s |")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
