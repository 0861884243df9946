#!/usr/bin/env python3
"""make bench-profile: where the time goes in the two figures of `make bench`
that miss their targets, sampled with perf (cpu-clock, so it works in a VM
without hardware counters).

    python3 tests/bench/profile.py [--build build] [--events N]

  produce   tests/bench/produce.drill (1,000,000 events to the embedded
            cluster) beside the bare librdkafka loop with the same messages:
            CPU per event by thread, for streamdrill only inside the produce
            step (perf's wall-clock timestamps against the step's times in
            run.db), then the hottest functions of each
  jsonl     reading a 2,000,000-row JSON lines sink: the hottest functions

Output: the tables on stdout and in tests/out/bench/profile.md.
"""
import argparse
import os
import re
import shutil
import sqlite3
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "out", "bench", "profile")
TAG = "ab12cd34"
md = []


def say(s=""):
    print(s, flush=True)
    md.append(s)


def run(cmd, ok=(0,)):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in ok:
        sys.exit(f"profile: {' '.join(cmd[:5])}... exited {r.returncode}: {r.stderr[-800:]}")
    return r.stdout


HZ = 2000


def record(name, cmd, ok=(0,)):
    """perf record with wall-clock timestamps, so a run's steps (run.db, epoch
    milliseconds) select their own samples."""
    data = os.path.join(OUT, f"{name}.perf")
    run(["perf", "record", "-k", "CLOCK_REALTIME", "-e", "cpu-clock", "-F", str(HZ), "-o", data, "--"] + cmd, ok=ok)
    return data


def window(t):
    return ["--time", f"{t[0]:.3f},{t[1]:.3f}"] if t else []


def report(data, sort, limit, t=None):
    """[(percent, key)] from perf report --sort SORT, largest first."""
    cmd = ["perf", "report", "-i", data, "--stdio", "--no-children", "--sort", sort, "--percent-limit", "0.5"] + window(t)
    rows = []
    for line in run(cmd).splitlines():
        m = re.match(r"\s*([0-9.]+)%\s+(.*\S)", line)
        if m and not line.lstrip().startswith("#"):
            rows.append((float(m.group(1)), re.sub(r"\s{2,}", "  ", m.group(2))))
    return rows[:limit]


def thread_group(comm):
    if comm.startswith("rdk:broker"):
        return "rdk:broker (librdkafka, talks to the broker)"
    if comm.startswith("rdk:mock"):
        return "rdk:mock (the embedded cluster)"
    if comm.startswith("rdk:"):
        return comm + " (librdkafka)"
    return comm


def thread_cpu(data, t=None):
    """{thread group: CPU seconds} from the samples (each 1/HZ s) inside t."""
    cpu = {}
    for line in run(["perf", "script", "-i", data, "-F", "comm,time"]).splitlines():
        m = re.match(r"\s*(.*?)\s+([0-9]+\.[0-9]+):", line)
        if not m:
            continue
        ts = float(m.group(2))
        if t and not (t[0] <= ts <= t[1]):
            continue
        g = thread_group(m.group(1))
        cpu[g] = cpu.get(g, 0.0) + 1.0 / HZ
    return cpu


def table(title, rows, head):
    say(f"\n{title}\n")
    say(f"| {head} | share of CPU samples |")
    say("|---|---:|")
    for key, pct in rows:
        say(f"| `{key}` | {pct:.1f}% |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--events", type=int, default=1_000_000)
    a = ap.parse_args()
    if not shutil.which("perf"):
        sys.exit("profile: perf is not installed (make bench-profile installs linux-perf)")
    b = os.path.join(ROOT, a.build)
    sd, sdb, bare = (os.path.join(b, p) for p in ("streamdrill", "bench/sd_bench", "bench/bare_produce"))
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    n = a.events
    sz = dict(re.findall(r"(\w+)=([0-9.]+)", run([sdb, "event-sizes", "1", "10000"])))
    say(f"Profiles by `make bench-profile` ({n:,} events; perf cpu-clock samples at 2 kHz)")

    runs = os.path.join(OUT, "runs")
    pd = record("produce", [sd, "run", os.path.join(ROOT, "tests", "bench", "produce.drill"), "--set", f"n={n}",
                            "--quiet", "--out", runs], ok=(3,))
    con = sqlite3.connect(os.path.join(runs, "produce", "run.db"))
    t = tuple(v / 1000.0 for v in con.execute("SELECT started_ms, ended_ms FROM step WHERE text LIKE 'produce%'").fetchone())
    con.close()
    bd = record("bare", [bare, "--embedded", "--count", str(n), "--key", str(round(float(sz["key"]))),
                         "--value", str(round(float(sz["value"]))), "--id", str(round(float(sz["id"]))),
                         "--topic", "profile-bare", "--partitions", "3"])
    ours, base = thread_cpu(pd, t), thread_cpu(bd)
    say(f"\nproduce: CPU per event by thread, microseconds (streamdrill: the produce step only; {t[1] - t[0]:.2f} s wall)\n")
    say("| thread | streamdrill | bare librdkafka loop |")
    say("|---|---:|---:|")
    main_ours, main_base = os.path.basename(sd), os.path.basename(bare)
    keys = sorted(set(ours) | set(base), key=lambda k: -(ours.get(k, 0) + base.get(k, 0)))
    for k in keys:
        if k == main_base:
            continue
        b = base.get(main_base if k == main_ours else k, 0.0)
        label = "main thread (renders events, calls rd_kafka_producev, serves delivery reports)" if k == main_ours else k
        if k == "sd-ledger":
            label = "sd-ledger (writes every message and delivery report to run.db)"
        say(f"| {label} | {1e6 * ours.get(k, 0) / n:.2f} | {1e6 * b / n:.2f} |")
    say(f"| total | {1e6 * sum(ours.values()) / n:.2f} | {1e6 * sum(base.values()) / n:.2f} |")
    table("produce step through streamdrill, hottest functions", [(k, p) for p, k in report(pd, "comm,dso,sym", 25, t)],
          "thread, object, function")
    table("bare librdkafka loop, hottest functions", [(k, p) for p, k in report(bd, "comm,dso,sym", 12)],
          "thread, object, function")

    jl = os.path.join(OUT, "sink.jsonl")
    run([sdb, "gen-jsonl", "2000000", TAG, jl])
    jd = record("jsonl", [sdb, "read", "jsonl", "2000000", TAG, "path=" + jl])
    table("reading a 2,000,000-row JSON lines sink, hottest functions", [(k, p) for p, k in report(jd, "dso,sym", 15)],
          "object, function")
    os.unlink(jl)
    open(os.path.join(ROOT, "tests", "out", "bench", "profile.md"), "w").write("\n".join(md) + "\n")
    say(f"\nprofile: tests/out/bench/profile.md; perf data in {os.path.relpath(OUT, ROOT)} (perf report -i FILE)")


if __name__ == "__main__":
    main()
