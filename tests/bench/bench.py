#!/usr/bin/env python3
"""make bench: streamdrill's speed and memory beside the tools a user would
otherwise use, each baseline measured in the same run, medians of several
runs, ratios against their targets.

    python3 tests/bench/bench.py [--build build] [--quick] [--keep] [--explore-matrix five|all] [--no-100m]

Figures (docs/testing.md, "Benchmarks", says what each one means):

  produce     events/s through the harness (generator, ledger, delivery
              reports: the produce step of tests/bench/produce.drill) vs a bare
              librdkafka producer loop (tests/bench/bare_produce.c) with the same
              configuration and message sizes, to the embedded cluster and to a
              real Apache Kafka broker, 7 pairs alternating (each broker
              warmed first by one run of each, not counted: the real
              broker's JVM is still compiling its hot paths in its first
              runs)                                            target >= 0.9x
  reconcile   10M observed ids (1% duplicated, 0.1% lost, shuffled) against a
              10M event ledger (sd_bench reconcile) vs `sort | uniq -d` and
              `sort -u | comm -23` (LC_ALL=C); the outputs are compared as sets
                                                               target <= 0.15x time
  sink read   10M rows through each sink reader and the observation vs the
              plain tool on the same data: sqlite3 CLI, kcat (target >= 0.9x
              rate), cat (target >= 0.25x rate)
  scale       tests/bench/scale-10m.drill: 10M events, three mid-batch kills,
              refpipe exactly-once on the real broker; must pass; the harness's
              peak RSS                                          target <= 128 MB
              and the time its charts take to draw              target < 10 s
  overhead    the parcel drill with refpipe: wall time (target <= 2.5 s), how
              it splits into waiting for the pipeline and the harness's own
              work, and the harness's idle share (summary.json harness.idle_ms:
              waiting after the pipeline's last sign of work)
  explore     streamdrill explore over scenarios/explore/refpipe.drill with the
              correct refpipe (--budget 3m --jobs 2 --seed 1 --keep-going):
              runs a minute, beside the share of the runs' step time spent
              on the pipeline (awaits, starts, kills, pauses, restarts)
                                                               target >= 30/min
  shrink      the weak-mode matrix's shrinks (seed 1, --jobs 2; five modes,
              --explore-matrix all for the long target's 16): the median
              seconds from the first failing run to its confirmed minimal
              drill                                            target <= 60 s
  growth      produce (to the real broker), read and reconcile at 1e5, 1e6,
              1e7 and 1e8 events, the produce run's report and charts, and the
              harness's peak RSS (table and tests/out/bench/growth.svg);
              --no-100m stops at 1e7

Every command runs without a shell. Output: the table on stdout and in
tests/out/bench/bench.md, every sample in tests/out/bench/results.json.
"""
import argparse
import json
import os
import platform
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "out", "bench")
DATA = os.path.join(OUT, "data")
KAFKA_SH = os.path.join(ROOT, "scenarios", "env", "kafka", "kafka.sh")
TAG = "ab12cd34"

results = {"machine": {}, "figures": [], "growth": [], "samples": {}}


def say(msg):
    print(msg, flush=True)


def run(cmd, stdout=subprocess.PIPE, ok=(0,), timeout=3600, env=None):
    r = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=timeout, env=env)
    if r.returncode not in ok:
        sys.exit(f"bench: {' '.join(cmd[:4])}... exited {r.returncode}: {r.stderr[-800:]}")
    return r


def timed(cmd, stdout=subprocess.DEVNULL, stdin=None):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=stdout, stdin=stdin, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd[:4])}... exited {r.returncode}: {r.stderr[-500:]}")
    return dt


def timed_pipe(a, b, out_path, b_stdin_arg=None):
    """a | b > out_path, both without a shell; seconds until both are done."""
    with open(out_path, "w") as out:
        t0 = time.perf_counter()
        pa = subprocess.Popen(a, stdout=subprocess.PIPE, env=dict(os.environ, LC_ALL="C"))
        pb = subprocess.Popen(b, stdin=pa.stdout, stdout=out, env=dict(os.environ, LC_ALL="C"))
        pa.stdout.close()
        pb.wait()
        pa.wait()
        dt = time.perf_counter() - t0
    if pa.returncode or pb.returncode:
        sys.exit(f"bench: {a[0]} | {b[0]} failed ({pa.returncode}, {pb.returncode})")
    return dt


def kv(text):
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", text)}


def med(xs):
    return statistics.median(xs)


def figure(name, what, ours, base, unit, ratio, target, op, note=""):
    """target None: a baseline shown for comparison, with no target of its own."""
    if target is None:
        results["figures"].append({"name": name, "what": what, "streamdrill": ours, "baseline": base, "unit": unit,
                                   "ratio": round(ratio, 3), "target": "", "met": None, "note": note})
        say(f"  {name:<28} {ours:>14} vs {base:<26} ratio {ratio:5.2f}  (for comparison)")
        return
    ok = ratio >= target if op == ">=" else ratio <= target
    results["figures"].append({"name": name, "what": what, "streamdrill": ours, "baseline": base, "unit": unit,
                               "ratio": round(ratio, 3), "target": f"{op} {target}", "met": ok, "note": note})
    say(f"  {name:<28} {ours:>14} vs {base:<26} ratio {ratio:5.2f}  target {op} {target}  {'met' if ok else 'MISSED'}")


def fmt_rate(x):
    return f"{x / 1e6:.2f} M/s" if x >= 1e6 else f"{x / 1e3:.0f} k/s"


def machine():
    cpu = "?"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = next((int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal")), 0)
    ver = run([BIN, "--version"]).stdout.splitlines()
    m = {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem / 1048576, 1), "kernel": platform.release(),
         "streamdrill": ver[0] if ver else "?", "librdkafka": next((v.strip() for v in ver if "librdkafka" in v), "?"),
         "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    results["machine"] = m
    say(f"machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, Linux {m['kernel']}; {m['librdkafka']}; {m['date']}")


# ---- the real broker ----

class Kafka:
    def __init__(self):
        self.dir = os.path.join(OUT, "kafka")
        self.addr = None

    def __enter__(self):
        r = subprocess.run([KAFKA_SH, "start", self.dir, "", str(os.getpid())], capture_output=True,
                           text=True, timeout=300)
        if r.returncode == 0 and r.stdout.strip():
            self.addr = r.stdout.split()[0]
        else:
            say(f"  (no real Kafka broker: {r.stderr.strip()[-300:]})")
        return self

    def __exit__(self, *a):
        if self.addr:
            subprocess.run([KAFKA_SH, "stop", self.dir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# ---- figures ----

def run_db(run_dir):
    return sqlite3.connect(f"file:{os.path.join(run_dir, 'run.db')}?mode=ro", uri=True)


def meta(con, key, default=None):
    row = con.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return row[0] if row else default


def produce_run(n, brokers, i):
    """The produce drill: its step's seconds, the run's folder, its summary."""
    out = os.path.join(OUT, "runs", f"produce-{i}")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [BIN, "run", os.path.join(ROOT, "tests", "bench", "produce.drill"), "--set", f"n={n}", "--quiet", "--out", out]
    if brokers:
        cmd += ["--brokers", brokers]
    run(cmd, ok=(3,))  # no sink: nothing-judged
    d = os.path.join(out, "produce")
    con = run_db(d)
    started, ended = con.execute("SELECT started_ms, ended_ms FROM step WHERE text LIKE 'produce%'").fetchone()
    con.close()
    return (ended - started) / 1000.0, d, json.load(open(os.path.join(d, "summary.json")))


def produce_sd(n, brokers, i):
    return produce_run(n, brokers, i)[0]


def produce_bare(n, brokers, sizes, i):
    cmd = [BARE, "--count", str(n), "--key", str(sizes["key"]), "--value", str(sizes["value"]), "--id", str(sizes["id"]),
           "--topic", f"bare-{os.getpid()}-{i}-{n}", "--partitions", "3"]
    cmd += ["--brokers", brokers] if brokers else ["--embedded"]
    return kv(run(cmd).stdout)["seconds"]


def bench_produce(label, brokers, n, reps, sizes):
    bare, ours = [], []
    produce_bare(n, brokers, sizes, "warm")  # not counted: a broker's first runs are slower (the JVM compiles)
    produce_sd(n, brokers, "warm")
    for i in range(reps):  # alternate, so drift on a shared machine hits both alike
        bare.append(n / produce_bare(n, brokers, sizes, i))
        ours.append(n / produce_sd(n, brokers, i))
    results["samples"][f"produce-{label}"] = {"bare_per_s": bare, "streamdrill_per_s": ours}
    figure(f"produce ({label})", "events/s", fmt_rate(med(ours)), f"bare librdkafka {fmt_rate(med(bare))}", "events/s",
           med(ours) / med(bare), 0.9, ">=", f"{n:,} events, median of {reps}")
    return med(ours)


def bench_reconcile(n, reps, baselines=True):
    ids, exp, srt = (os.path.join(DATA, f) for f in (f"ids-{n}.txt", f"expected-{n}.txt", f"expected-{n}.sorted"))
    run([SDB, "gen-ids", str(n), TAG, "1", "10", ids, exp])
    if not baselines:  # growth: streamdrill's own time only (sorting 10^8 lines takes minutes)
        outd = os.path.join(DATA, "recon")
        os.makedirs(outd, exist_ok=True)
        return med([kv(run([SDB, "reconcile", str(n), TAG, ids, outd]).stdout)["seconds"] for _ in range(reps)]), None, None
    with open(srt, "w") as f:
        subprocess.run(["sort", exp], stdout=f, env=dict(os.environ, LC_ALL="C"), check=True)
    outd = os.path.join(DATA, "recon")
    os.makedirs(outd, exist_ok=True)
    ours, uniq, comm = [], [], []
    for _ in range(reps):
        ours.append(kv(run([SDB, "reconcile", str(n), TAG, ids, outd]).stdout)["seconds"])
        uniq.append(timed_pipe(["sort", ids], ["uniq", "-d"], os.path.join(outd, "uniq-d.txt")))
        comm.append(timed_pipe(["sort", "-u", ids], ["comm", "-23", srt, "-"], os.path.join(outd, "comm.txt")))
    # the same answers
    same = (sorted(open(os.path.join(outd, "duplicated.txt")).read().split()) == sorted(open(os.path.join(outd, "uniq-d.txt")).read().split())
            and sorted(open(os.path.join(outd, "lost.txt")).read().split()) == sorted(open(os.path.join(outd, "comm.txt")).read().split()))
    if not same:
        sys.exit("bench: reconcile and sort | uniq -d / comm disagree on the duplicated or lost ids")
    results["samples"][f"reconcile-{n}"] = {"streamdrill_s": ours, "sort_uniq_s": uniq, "sort_comm_s": comm}
    return med(ours), med(uniq), med(comm)


def read_sd(kind, n, params):
    return kv(run([SDB, "read", kind, str(n), TAG] + params).stdout)


def bench_read(n, reps, kafka_addr, growth=False):
    """Seconds per sink kind (ours, tool)."""
    res = {}
    db = os.path.join(DATA, f"sink-{n}.db")
    jl = os.path.join(DATA, f"sink-{n}.jsonl")
    if not os.path.exists(db):
        run([SDB, "gen-sqlite", str(n), TAG, db])
    if not os.path.exists(jl) and not growth:
        run([SDB, "gen-jsonl", str(n), TAG, jl])
    os.sync()  # the files just written reach the disk before the timed reads, not during them
    q = "SELECT event_id FROM bronze"
    kinds = [("sqlite", ["db=" + db, "query=" + q], ["sqlite3", db, q], None)]
    if not growth:
        # cat parses nothing; jq reading the id of every row is the tool that does the same work
        kinds.append(("jsonl", ["path=" + jl], ["cat", jl], ["jq", "-r", ".event_id", jl]))
    if kafka_addr and not growth:
        topic = f"sink-{n}-{os.getpid()}"
        run([BARE, "--brokers", kafka_addr, "--topic", topic, "--partitions", "3", "--count", str(n), "--json", TAG])
        kinds.append(("kafka", ["brokers=" + kafka_addr, "topic=" + topic],
                      ["kcat", "-C", "-b", kafka_addr, "-t", topic, "-o", "beginning", "-e", "-q", "-X", "isolation.level=read_committed",
                       "-f", "%s\n"], None))
    for kind, params, tool, tool2 in kinds:
        ours, base, base2 = [], [], []
        for _ in range(reps):
            r = read_sd(kind, n, params)
            if r["once"] != n:
                sys.exit(f"bench: reading the {kind} sink found {r['once']:.0f} of {n} ids once")
            ours.append(r["seconds"])
            base.append(timed(tool))
            if tool2:
                base2.append(timed(tool2))
        res[kind] = (med(ours), med(base), med(base2) if base2 else None)
        results["samples"][f"read-{kind}-{n}"] = {"streamdrill_s": ours, "tool_s": base, "second_tool_s": base2}
    return res


def bench_scale(kafka_addr):
    out = os.path.join(OUT, "runs", "scale")
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    r = subprocess.run([BIN, "run", os.path.join(ROOT, "tests", "bench", "scale-10m.drill"), "--brokers", kafka_addr, "--quiet",
                        "--out", out], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    d = os.path.join(out, "scale-10m")
    s = json.load(open(os.path.join(d, "summary.json")))
    con = run_db(d)
    rss_kb = int(meta(con, "harness_peak_rss_kb", "0"))
    cpu_ms = int(meta(con, "harness_cpu_ms", "0"))
    rec_ms = int(meta(con, "reconcile_ms", "0"))
    steps = con.execute("SELECT text, ended_ms - started_ms, detail FROM step ORDER BY idx").fetchall()
    con.close()
    kills = [f for f in s["faults"] if f["kind"] == "kill"]
    landed = sum(1 for f in kills if f.get("landed_mid_batch"))
    t1 = time.perf_counter()
    rep = run([BIN, "report", "--verbose", d])
    report_s = time.perf_counter() - t1
    charts = float(re.search(r"charts=([0-9.]+)s", rep.stdout).group(1))
    c = {k: (v if v is not None else -1) for k, v in s["counts"].items()}
    passed = r.returncode == 0 and s["verdict"] == "pass" and c["observed_unique"] == 10_000_000 and landed == 3
    results["scale"] = {"exit": r.returncode, "verdict": s["verdict"], "counts": c, "kills": len(kills), "kills_mid_batch": landed,
                        "wall_s": round(wall, 1), "harness_cpu_s": cpu_ms / 1000, "peak_rss_mb": round(rss_kb / 1024, 1),
                        "reconcile_s": rec_ms / 1000, "report_rebuild_s": round(report_s, 2), "charts_s": charts,
                        "steps": [{"step": t, "seconds": (ms or 0) / 1000, "detail": det} for t, ms, det in steps]}
    say(f"  scale drill: exit {r.returncode}, verdict {s['verdict']}, {c['observed_unique']:,} unique, {c['lost']} lost, "
        f"{c['duplicated']} duplicated, kills inside a batch {landed} of {len(kills)}, {wall:.0f} s wall "
        f"(reconciliation {rec_ms / 1000:.1f} s), harness CPU {cpu_ms / 1000:.0f} s")
    if not passed:
        say(f"  SCALE DRILL DID NOT PASS: {s['reason']}: {s['message'][:600]}")
    figure("peak RSS (10M run)", "MB", f"{rss_kb / 1024:.0f} MB", "budget 128 MB", "MB", rss_kb / 1024 / 128, 1.0, "<=",
           "the harness process, all threads")
    figure("charts (10M run)", "s", f"{charts:.2f} s", "budget 10 s", "s", charts / 10, 1.0, "<=",
           f"all reports rebuilt in {report_s:.1f} s")
    # the baseline, in the same run: the same run.db without the series the
    # run kept (as an older version wrote it), so the ledger is scanned
    base_dir = os.path.join(out, "scan-baseline")
    shutil.rmtree(base_dir, ignore_errors=True)
    os.makedirs(base_dir)
    shutil.copy(os.path.join(d, "run.db"), base_dir)
    con = sqlite3.connect(os.path.join(base_dir, "run.db"))
    con.execute("DELETE FROM meta WHERE key IN ('series_bucket_ms', 'ledger_messages', 'ledger_distinct_ids', 'ledger_kinds')")
    con.commit()
    con.close()
    ours, base = [], []
    for _ in range(3):  # alternate, so drift on a shared machine hits both alike
        for target, acc in ((d, ours), (base_dir, base)):
            t1 = time.perf_counter()
            run([BIN, "report", target])
            acc.append(time.perf_counter() - t1)
    shutil.rmtree(base_dir, ignore_errors=True)
    results["scale"]["report_s"] = {"series": ours, "ledger_scan": base}
    figure("report (10M run)", "s", f"{med(ours):.2f} s", f"{med(base):.2f} s scanning the ledger", "x", med(ours) / med(base), round(2 / med(base), 3),
           "<=", "every report and chart rebuilt from run.db, median of 3 each; target at most 2 s")
    return passed


def bench_overhead(reps):
    walls, waits, sends, procs, recs, cpus, idles = [], [], [], [], [], [], []
    for i in range(reps):
        out = os.path.join(OUT, "runs", f"parcel-{i}")
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.perf_counter()
        run([BIN, "run", os.path.join(ROOT, "scenarios", "parcel-restart.drill"), "--quiet", "--out", out])
        walls.append(time.perf_counter() - t0)
        con = run_db(os.path.join(out, "parcel-restart"))
        wait = send = proc = 0.0
        for text, ms in con.execute("SELECT text, ended_ms - started_ms FROM step"):
            word = text.split()[0]
            sec = (ms or 0) / 1000
            if word in ("await", "sleep"):
                wait += sec
            elif word in ("produce", "replay", "inject"):
                send += sec
            else:
                proc += sec
        recs.append(int(meta(con, "reconcile_ms", "0")) / 1000)
        cpus.append(int(meta(con, "harness_cpu_ms", "0")) / 1000)
        con.close()
        h = json.load(open(os.path.join(out, "parcel-restart", "summary.json")))["harness"]
        idles.append(h["idle_ms"] / 1000)
        waits.append(wait)
        sends.append(send)
        procs.append(proc)
    w = med(walls)
    results["overhead"] = {"wall_s": w, "waiting_for_pipeline_s": med(waits), "sending_s": med(sends),
                           "process_control_s": med(procs), "reconcile_s": med(recs), "harness_cpu_s": med(cpus),
                           "other_s": w - med(waits) - med(sends) - med(procs) - med(recs), "runs": reps,
                           "idle_s": med(idles), "idle_share": med(idles) / w, "walls_s": walls}
    o = results["overhead"]
    say(f"  parcel drill: {w:.2f} s wall (median of {reps}): waiting for the pipeline {o['waiting_for_pipeline_s']:.2f} s "
        f"(await, quiescence), sending {o['sending_s']:.2f} s, start/kill/restart {o['process_control_s']:.2f} s, "
        f"reconciliation {o['reconcile_s']:.2f} s, setup and reports {o['other_s']:.2f} s; "
        f"the harness's own CPU {o['harness_cpu_s']:.2f} s ({100 * o['harness_cpu_s'] / w:.0f}% of the wall time); "
        f"idle after the pipeline's last sign of work {o['idle_s']:.2f} s ({100 * o['idle_share']:.0f}% of the wall time)")
    figure("parcel-restart.drill wall time (embedded)", "s", f"{w:.2f} s", "budget 2.5 s", "s", w / 2.5, 1.0, "<=",
           f"median of {reps}; harness idle {100 * o['idle_share']:.0f}%")
    # what the harness spends beside the pipeline: everything but the waits
    # on it (awaits, quiescence) and its starts, kills and restarts, which
    # include its start-up; sending, the settle, setup, judging, reports
    pipe = o["waiting_for_pipeline_s"] + o["process_control_s"]
    own = w - pipe
    o["harness_share"] = own / w
    figure("parcel drill: the harness's own time", "s", f"{own:.2f} s", f"the pipeline's {pipe:.2f} s", "share", own / w, 0.25, "<=",
           f"of the {w:.2f} s wall: sending {o['sending_s']:.2f} s, setup, judging and reports {o['other_s'] + o['reconcile_s']:.2f} s")


EXPLORE_HEADER = os.path.join(ROOT, "scenarios", "explore", "refpipe.drill")
# the weak modes the shrink figure takes from the long target's matrix
# (tests/suite/explore.py EXPLORE_WEAK, each with its --set): --explore-matrix
# all takes all 16
sys.path.insert(0, os.path.join(ROOT, "tests"))
from suite.explore import EXPLORE_WEAK  # noqa: E402

WEAK_ARGS = dict(EXPLORE_WEAK)
SHRINK_MODES = ["at-least-once", "at-most-once", "commit-on-term", "drop-out-of-order", "lenient-json"]


def explore_json(out, *args):
    """streamdrill explore over refpipe's header into OUT; its explore.json."""
    run([BIN, "explore", EXPLORE_HEADER, "--out", out, "--quiet", *args], ok=(0, 1, 3), timeout=7200)
    return json.load(open(os.path.join(out, "refpipe-explore", "explore.json")))


def pipeline_share(run_dirs):
    """Of the runs' step time, the share spent on the pipeline: awaiting it
    (quiescence), and its starts, kills, stops, pauses and restarts (which
    wait for the batch or commit they aim at)."""
    pipe = total = 0.0
    for d in run_dirs:
        try:
            con = run_db(d)
            rows = con.execute("SELECT text, ended_ms - started_ms FROM step").fetchall()
            con.close()
        except sqlite3.Error:
            continue
        for text, ms in rows:
            sec = (ms or 0) / 1000
            total += sec
            if text.split()[0] in ("await", "start", "kill", "stop", "restart", "pause", "broker"):
                pipe += sec
    return pipe / total if total else 0.0


def bench_explore(budget):
    """explore's runs a minute over refpipe's header, the correct refpipe
    (the issue's measure: --budget 3m --jobs 2 --seed 1 --keep-going)."""
    out = os.path.join(OUT, "explore", "correct")
    shutil.rmtree(out, ignore_errors=True)
    doc = explore_json(out, "--budget", budget, "--jobs", "2", "--seed", "1", "--keep-going")
    secs = doc["seconds"]["exploring"]
    n = len(doc["runs"])
    per_min = 60 * n / secs if secs else 0
    walls = sorted(r["seconds"] for r in doc["runs"])
    share = pipeline_share(os.path.join(out, "refpipe-explore", r["run_dir"]) for r in doc["runs"] if r.get("run_dir"))
    results["explore"] = {"runs": n, "seconds": secs, "runs_per_min": per_min, "run_seconds": walls, "pipeline_share": share,
                          "counts": doc["counts"]}
    say(f"  explore: {n} runs in {secs:.0f} s ({per_min:.1f} a minute), {doc['counts']}; a run {walls[0]:.1f} to {walls[-1]:.1f} s "
        f"(median {med(walls):.1f} s); of the runs' step time {100 * share:.0f}% on the pipeline (awaits, starts, kills, pauses, restarts)")
    figure("explore runs a minute", "runs/min", f"{per_min:.1f}/min", f"the pipeline's share {100 * share:.0f}%", "runs/min",
           per_min / 30, 1.0, ">=", f"refpipe.drill --budget {budget} --jobs 2 --seed 1 --keep-going; target at least 30 a minute")


def bench_shrink(modes):
    """Shrinking on the weak-mode matrix (seed 1, --jobs 2): the median
    seconds from the first failing run to the confirmed minimal drill."""
    rows = []
    for mode in modes:
        out = os.path.join(OUT, "explore", mode)
        shutil.rmtree(out, ignore_errors=True)
        doc = explore_json(out, "--seed", "1", "--budget", "10m", "--jobs", "2", *WEAK_ARGS[mode])
        f = doc["failures"][0] if doc["failures"] else None
        if not f:
            say(f"  shrink {mode}: no failure found ({doc['counts']})")
            continue
        rows.append({"mode": mode, "signature": f["signature"], "actions": [f["actions_before"], f["actions"]], "faults": f["faults"],
                     "confirmed": [f["confirm_failed"], f["confirm_runs"]], "shrink_s": f["seconds"], "runs": f["runs"],
                     "explore_s": doc["seconds"]["exploring"]})
        say(f"  shrink {mode}: [{f['signature']}] {f['actions_before']} -> {f['actions']} actions, {f['faults']} faults, "
            f"confirmed {f['confirm_failed']}/{f['confirm_runs']}; shrinking {f['seconds']:.0f} s ({f['runs']} runs) "
            f"(exploring {doc['seconds']['exploring']:.0f} s)")
        shutil.rmtree(out, ignore_errors=True)
    results["shrink"] = rows
    if rows:
        m = med([r["shrink_s"] for r in rows])
        figure("shrink (weak-mode matrix)", "s", f"{m:.0f} s", f"{len(rows)} modes, {min(r['shrink_s'] for r in rows):.0f} to "
               f"{max(r['shrink_s'] for r in rows):.0f} s", "s", m / 60, 1.0, "<=",
               "median seconds from the first failing run to its confirmed minimal drill (10 reruns); target at most 60 s")


def growth_chart():
    rows = results["growth"]
    dat = os.path.join(OUT, "growth.dat")
    with open(dat, "w") as f:
        f.write("# events produce_s read_sqlite_s reconcile_s\n")
        for g in rows:
            f.write(f"{g['events']} {g['produce_s']} {g['read_sqlite_s']} {g['reconcile_s']}\n")
    gp = os.path.join(OUT, "growth.gp")
    with open(gp, "w") as f:
        f.write(f"""set terminal svg size 760,420 dynamic font 'DejaVu Sans,11' background '#ffffff'
set output '{OUT}/growth.svg'
set logscale xy
set grid
set key top left
set xlabel 'events'
set ylabel 'seconds'
set title 'streamdrill: cost against size (a slope of 1 is linear)'
plot '{dat}' using 1:2 with linespoints lw 2 pt 7 title 'produce (real broker)', \\
     '' using 1:3 with linespoints lw 2 pt 5 title 'read a sqlite sink', \\
     '' using 1:4 with linespoints lw 2 pt 9 title 'reconcile', \\
     '' using 1:($1/1e6) with lines dt 2 lc rgb '#999999' title 'linear (1 us per event)'
set terminal pngcairo size 760,420 font 'DejaVu Sans,10'
set output '{OUT}/growth.png'
replot
""")
    subprocess.run(["gnuplot", gp], check=False, stderr=subprocess.DEVNULL)


def write_markdown():
    m = results["machine"]
    lines = [f"Measured by `make bench` on {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, Linux {m['kernel']}, "
             f"{m['librdkafka']}, {m['date']}; medians, each baseline measured in the same run.", "",
             "| figure | streamdrill | baseline | ratio | target | |", "|---|---:|---|---:|---|---|"]
    for f in results["figures"]:
        base = f["baseline"].replace("|", "\\|")  # sort|uniq: a bare pipe would split the table cell
        lines.append(f"| {f['name']} | {f['streamdrill']} | {base} | {f['ratio']:.2f} | {f['target']} | "
                     f"{'' if f['met'] is None else 'met' if f['met'] else '**missed**'} |")
    if "overhead" in results:
        o = results["overhead"]
        lines += ["", f"Parcel drill overhead: {o['wall_s']:.2f} s wall; waiting for the pipeline {o['waiting_for_pipeline_s']:.2f} s, "
                      f"sending {o['sending_s']:.2f} s, start/kill/restart {o['process_control_s']:.2f} s, reconciliation "
                      f"{o['reconcile_s']:.2f} s, setup and reports {o['other_s']:.2f} s; harness CPU {o['harness_cpu_s']:.2f} s."]
    if "scale" in results:
        s = results["scale"]
        lines += ["", f"Scale drill (10M events, 3 mid-batch kills, refpipe exactly-once, real broker): verdict {s['verdict']}, "
                      f"{s['counts']['observed_unique']:,} unique, {s['counts']['lost']} lost, {s['counts']['duplicated']} duplicated, "
                      f"{s['kills_mid_batch']} of {s['kills']} kills inside a batch, {s['wall_s']:.0f} s wall, reconciliation "
                      f"{s['reconcile_s']:.1f} s, peak RSS {s['peak_rss_mb']:.0f} MB, charts {s['charts_s']:.2f} s."]
    if results["growth"]:
        lines += ["", "| events | broker | produce (s) | read sqlite (s) | reconcile (s) | report (s) | charts (s) | produce ns/event | "
                      "read ns/event | reconcile ns/event | produce run peak RSS (MB) |",
                  "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for g in results["growth"]:
            n = g["events"]
            lines.append(f"| {n:,} | {g['broker']} | {g['produce_s']:.3f} | {g['read_sqlite_s']:.3f} | {g['reconcile_s']:.3f} | "
                         f"{g['report_s']:.1f} | {g['charts_s']:.1f} | {1e9 * g['produce_s'] / n:.0f} | {1e9 * g['read_sqlite_s'] / n:.0f} | "
                         f"{1e9 * g['reconcile_s'] / n:.0f} | {g['produce_peak_rss_mb']:.0f} |")
    open(os.path.join(OUT, "bench.md"), "w").write("\n".join(lines) + "\n")
    say("\n" + "\n".join(lines))


def main():
    global BIN, SDB, BARE
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--quick", action="store_true", help="small sizes, one repetition: a smoke run of the bench itself")
    ap.add_argument("--keep", action="store_true", help="keep the generated data in tests/out/bench/data")
    ap.add_argument("--explore-matrix", choices=("five", "all"), default="five",
                    help="the shrink figure's weak modes: five of the long target's matrix, or all 16 (about 40 minutes)")
    ap.add_argument("--no-100m", action="store_true", help="growth stops at 10 million events (the 100 million point takes about 15 minutes and 40 GB of disk)")
    a = ap.parse_args()
    b = os.path.join(ROOT, a.build)
    BIN, SDB, BARE = os.path.join(b, "streamdrill"), os.path.join(b, "bench", "sd_bench"), os.path.join(b, "bench", "bare_produce")
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(DATA)
    big = 100_000 if a.quick else 10_000_000
    reps = 1 if a.quick else 3
    machine()
    sz = kv(run([SDB, "event-sizes", "1", "10000"]).stdout)
    sizes = {"key": round(sz["key"]), "value": round(sz["value"]), "id": round(sz["id"])}
    say(f"event sizes: key {sizes['key']} B, value {sizes['value']} B, sd-id header {sizes['id']} B")
    with Kafka() as kafka:
        say("produce")
        pn = 100_000 if a.quick else 1_000_000
        bench_produce("embedded cluster", None, pn, 1 if a.quick else 7, sizes)
        if kafka.addr:
            bench_produce("real Kafka broker", kafka.addr, pn, 1 if a.quick else 7, sizes)
        say("reconcile")
        ours, uniq, comm = bench_reconcile(big, reps)
        figure(f"reconcile {big:,} ids", "s", f"{ours:.2f} s", f"sort|uniq -d {uniq:.2f} s", "s", ours / uniq, 0.15, "<=")
        figure(f"reconcile {big:,} ids", "s", f"{ours:.2f} s", f"sort -u|comm {comm:.2f} s", "s", ours / comm, 0.15, "<=")
        say("sink read")
        rd = bench_read(big, reps, kafka.addr)
        tools = {"sqlite": "sqlite3 CLI", "jsonl": "cat", "kafka": "kcat"}
        for kind, (ours_s, tool_s, tool2_s) in rd.items():
            figure(f"read {big:,} rows ({kind})", "rows/s", fmt_rate(big / ours_s), f"{tools[kind]} {fmt_rate(big / tool_s)}",
                   "rows/s", tool_s / ours_s, 0.25 if kind == "jsonl" else 0.9, ">=")
            if tool2_s:
                figure(f"read {big:,} rows ({kind})", "rows/s", fmt_rate(big / ours_s), f"jq -r .event_id {fmt_rate(big / tool2_s)}",
                       "rows/s", tool2_s / ours_s, None, ">=")
        if kafka.addr and not a.quick:
            say("scale")
            bench_scale(kafka.addr)
        say("overhead")
        bench_overhead(1 if a.quick else 5)
        say("explore")
        bench_explore("30s" if a.quick else "3m")
        bench_shrink(SHRINK_MODES[:1] if a.quick else list(WEAK_ARGS) if a.explore_matrix == "all" else SHRINK_MODES)
        say("growth")
        sizes_g = [10_000, 100_000] if a.quick else [100_000, 1_000_000, 10_000_000] + ([] if a.no_100m else [100_000_000])
        for n in sizes_g:
            if n > 10_000_000 and not kafka.addr:
                say(f"  {n:,} events: skipped (needs the real broker: the embedded cluster keeps every message in memory)")
                continue
            # the reads first and their data removed: at 10^8 the sink file
            # (20 GB) and the broker's copy of the topic (25 GB) do not fit together
            if n == big:
                rs, rc = rd["sqlite"][0], ours
            else:
                rs = bench_read(n, 1, None, growth=True)["sqlite"][0]
                rc = bench_reconcile(n, 1, baselines=False)[0]
                for f in os.listdir(DATA):
                    if str(n) in f:
                        p2 = os.path.join(DATA, f)
                        shutil.rmtree(p2) if os.path.isdir(p2) else os.unlink(p2)
            p, d, summ = produce_run(n, kafka.addr, f"g{n}")
            t1 = time.perf_counter()
            rep = run([BIN, "report", "--verbose", d])
            report_s = time.perf_counter() - t1
            charts = float(re.search(r"charts=([0-9.]+)s", rep.stdout).group(1))
            rss = summ["harness"]["peak_rss_kb"] / 1024
            shutil.rmtree(os.path.dirname(d), ignore_errors=True)
            results["growth"].append({"events": n, "produce_s": round(p, 4), "read_sqlite_s": round(rs, 4), "reconcile_s": round(rc, 4),
                                      "report_s": round(report_s, 2), "charts_s": charts, "produce_peak_rss_mb": round(rss, 1),
                                      "broker": "real" if kafka.addr else "embedded"})
            say(f"  {n:>12,} events: produce {p:.3f} s, read {rs:.3f} s, reconcile {rc:.3f} s, report {report_s:.1f} s "
                f"(charts {charts:.1f} s), produce run's peak RSS {rss:.0f} MB")
        growth_chart()
    write_markdown()
    json.dump(results, open(os.path.join(OUT, "results.json"), "w"), indent=2)
    if not a.keep:
        shutil.rmtree(DATA, ignore_errors=True)
    say("\nbench: tests/out/bench/bench.md, results.json, growth.svg")


if __name__ == "__main__":
    main()
