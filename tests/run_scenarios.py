#!/usr/bin/env python3
"""End-to-end scenario tests for streamdrill, as data (like curl's tests/data).

Each tests/scenarios/*.drill case carries its expectations in `# test:` lines:

    # test: args --set mode=at-least-once     extra command-line arguments
    # test: scenario ../../scenarios/x.drill  run another file instead of this one
    # test: exit 1                            expected exit code (0|3: either)
    # test: summary verdict == fail           a summary.json value (dotted path, ==, !=, >, >=, <, <=)
    # test: stderr contains TEXT              streamdrill's stderr must contain TEXT
    # test: repeat 20 parallel 4              run it N times, every run must meet every expectation
    # test: duplicates-traced                 every sampled duplicated id lists one writer per copy
    # test: needs kafka                       run against the real Apache Kafka broker (started here)
    # test: needs cluster                     run against a real cluster of 3 Kafka brokers (started here, --cluster)
    # test: needs sparkcluster                a standalone Spark cluster (a master, 2 workers) started here: --set master=URL
    # test: needs spark                       PySpark and the Kafka connector must be installed
    # test: needs flink                       a Flink session cluster (a JobManager, a TaskManager of 2 slots)
    #                                         started here: --set flinkdir=DIR
    # test: kills-landed-at-least 0.95        share of kills (over all repeats) that landed mid-batch
    # test: writers-contain TEXT              every sampled duplicate's writers mention TEXT
    # test: needs connect                     Kafka Connect's jars must be fetched (done here)
    # test: file-count NAME                   count the JSON-lines file NAME in the run folder
                                              independently (ids per line against the ledger's
                                              sends): rows, duplicated, duplicate_rows and lost
                                              must match summary.json
    # test: rundb SQL ;; OP V                 a query on the run's run.db (its first value), compared like summary

Cases under tests/long/ (`--long`, make test-real-long) are the longer
real-stack matrix: the same directives, run against the real broker.

Each tests/broken/*.drill file starts with `# expect: LINE:COL TEXT`: `check`
and `run` must both exit 2 with an error naming FILE:LINE:COL and containing
TEXT, and `run` must start nothing (no run folder).

Special tests (harness killed mid-run, the reports as readers see them, an
external broker, real-time mode compared) are functions below.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import random
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "out")


def load_json_path(doc, path):
    cur = doc
    for part in path.split("."):
        if part == "__len__":
            cur = len(cur)
        elif isinstance(cur, list):
            cur = cur[int(part)]
        else:
            cur = cur[part]
    return cur


def compare(actual, op, expected):
    """A summary value against an expectation. null (None: "never", "not measured", "does not apply") equals
    only `null` and satisfies no ordering: `recovery_s >= 0` cannot pass on a figure that is missing."""
    if op == "contains":
        return expected in str(actual)
    if actual is None or expected == "null":
        if op in ("==", "!="):
            return (actual is None and expected == "null") == (op == "==")
        return False
    try:
        a, e = float(actual), float(expected)
    except (TypeError, ValueError):
        a, e = str(actual).lower() if isinstance(actual, bool) else str(actual), expected
    return {"==": a == e, "!=": a != e, ">": a > e, ">=": a >= e, "<": a < e, "<=": a <= e}[op]


class Case:
    def __init__(self, path):
        self.path = path
        self.name = os.path.splitext(os.path.basename(path))[0]
        self.args, self.exit, self.summary, self.stderr = [], [0], [], []
        self.repeat, self.parallel, self.traced = 1, 1, False
        self.scenario = path
        self.needs = set()
        self.landed_share = None
        self.allow_timeouts = False
        self.reports_max = None
        self.writers_contain = []
        self.file_counts = []
        self.runbook_contains = []
        self.rundb = []
        for line in open(path):
            m = re.match(r"#\s*test:\s*(\S+)\s*(.*)$", line)
            if not m:
                continue
            key, rest = m.group(1), m.group(2).strip()
            if key == "args":
                self.args += shlex.split(rest)
            elif key == "scenario":
                self.scenario = os.path.normpath(os.path.join(os.path.dirname(path), rest))
            elif key == "exit":
                self.exit = [int(x) for x in rest.split("|")]
            elif key == "summary":
                p, op, v = rest.split(None, 2)
                self.summary.append((p, op, v))
            elif key == "stderr":
                self.stderr.append(rest.split(None, 1)[1])
            elif key == "repeat":
                parts = rest.split()
                self.repeat = int(parts[0])
                if "parallel" in parts:
                    self.parallel = int(parts[parts.index("parallel") + 1])
            elif key == "duplicates-traced":
                self.traced = True
            elif key == "needs":
                self.needs |= set(rest.split())
            elif key == "kills-landed-at-least":
                self.landed_share = float(rest)
            elif key == "reports-smaller-than":
                self.reports_max = int(rest)
            elif key == "allow-timeouts":
                self.allow_timeouts = True
            elif key == "writers-contain":
                self.writers_contain.append(rest)
            elif key == "file-count":
                self.file_counts.append(rest)
            elif key == "runbook-contains":
                self.runbook_contains.append(rest)
            elif key == "rundb":
                sql, cmp = rest.split(";;")
                op, v = cmp.split(None, 1)
                self.rundb.append((sql.strip(), op, v.strip()))
            else:
                raise SystemExit(f"{path}: unknown test directive {key}")


REAL = {"brokers": None}


def run_case_once(binary, case, i):
    out = os.path.join(OUT, f"{case.name}-{i}")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [binary, "run", case.scenario, "--out", out, "--quiet"] + case.args
    if "kafka" in case.needs:
        cmd += ["--brokers", REAL["brokers"]]
    if "proxy" in case.needs:
        cmd += ["--proxy", REAL["proxy"]]
    if "cluster" in case.needs:
        cmd += ["--cluster", REAL["cluster"]]
    if "sparkcluster" in case.needs:
        # only the variables the drill uses: --set of one it does not is an error
        text = open(case.scenario).read()
        cmd += [a for k, v in (("master", REAL["spark_master"]), ("sparkdir", REAL["spark_cluster"]))
                if re.search(r"^set .*\b%s=|\{%s[}:]" % (k, k), text, re.M) for a in ("--set", f"{k}={v}")]
    if "flink" in case.needs:
        cmd += ["--set", "flinkdir=" + REAL["flink_cluster"]]
    if "postgres" in case.needs:
        cmd += ["--set", "pg=" + REAL["pg"]]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    took = time.time() - t0
    problems = []
    if p.returncode not in case.exit:
        problems.append(f"exit {p.returncode}, expected {' or '.join(map(str, case.exit))}")
    for text in case.stderr:
        if text not in p.stderr:
            problems.append(f"stderr lacks {text!r}")
    summary = None
    sdirs = glob.glob(os.path.join(out, "*", "summary.json"))
    if sdirs:
        summary = json.load(open(sdirs[0]))
    elif case.summary or case.traced or case.landed_share is not None or case.writers_contain:
        problems.append("no summary.json written")
    if sdirs:
        # every run's reports must be readable by their parsers
        import xml.etree.ElementTree as ET
        rdir = os.path.dirname(sdirs[0])
        try:
            ET.parse(os.path.join(rdir, "junit.xml"))
        except (ET.ParseError, OSError) as e:
            problems.append(f"junit.xml is not well-formed XML: {e}")
        for name in ("summary.json", "junit.xml", "report.md", "report.html"):
            size = os.path.getsize(os.path.join(rdir, name)) if os.path.exists(os.path.join(rdir, name)) else 0
            if case.reports_max and size > case.reports_max:
                problems.append(f"{name} has {size} bytes, over {case.reports_max}")
    if "--json" in case.args:
        # --json: stdout is summary.json, one line, and nothing else
        lines = p.stdout.splitlines()
        try:
            if len(lines) != 1 or json.loads(lines[0]) != summary:
                problems.append(f"--json: stdout is not summary.json on one line: {p.stdout[:200]!r}")
        except ValueError as e:
            problems.append(f"--json: stdout is not JSON ({e}): {p.stdout[:200]!r}")
    if summary and not case.allow_timeouts:
        # a healthy drill never waits out a readiness or await timeout
        waited = [w for w in summary.get("warnings", []) if w.get("kind") in ("no-ready-marker", "await-timeout")]
        if waited:
            problems.append(f"waited for a timeout: {waited[0].get('detail', '')[:160]} (say `# test: allow-timeouts` if meant)")
    if summary:
        # a kill that did not land inside its batch can never leave a pass
        for f in summary.get("faults", []):
            if (f.get("kind") == "kill" and "mid-batch" in f.get("detail", "") and f.get("landed_mid_batch") is False
                    and summary.get("verdict") == "pass"):
                problems.append(f"verdict pass although a kill landed outside its batch: {f.get('landing', '')[:120]}")
    if summary:
        for path, op, want in case.summary:
            try:
                got = load_json_path(summary, path)
            except (KeyError, IndexError):
                problems.append(f"summary has no {path}")
                continue
            if not compare(got, op, want):
                problems.append(f"summary {path} = {got!r}, expected {op} {want}")
        if case.traced:
            dups = summary.get("anomalies", {}).get("target", {}).get("duplicated")
            if not dups:
                problems.append("no duplicated ids listed")
            else:
                if len(dups["sample"]) != min(dups["total"], 20):
                    problems.append(f"{len(dups['sample'])} sampled duplicates for {dups['total']}")
                for d in dups["sample"]:
                    writers = d.get("writers", "").split("; ")
                    if len(writers) != d["copies"] or not all(writers):
                        problems.append(f"{d['id']}: {d['copies']} copies but writers {d.get('writers')!r}")
                md = open(os.path.join(os.path.dirname(sdirs[0]), "report.md")).read()
                for d in dups["sample"]:
                    if d["id"] not in md:
                        problems.append(f"report.md does not list {d['id']}")
        for text in case.writers_contain:
            dups = summary.get("anomalies", {}).get("target", {}).get("duplicated", {}).get("sample", [])
            for d in dups:
                if text not in d.get("writers", ""):
                    problems.append(f"{d['id']}: writers {d.get('writers')!r} do not mention {text!r}")
    for name in case.file_counts:
        if sdirs:
            problems += independent_file_count(os.path.dirname(sdirs[0]), name, summary)
    for sql, op, want in case.rundb:
        if not sdirs:
            problems.append("no run.db to query")
            break
        db = sqlite3.connect(os.path.join(os.path.dirname(sdirs[0]), "run.db"))
        row = db.execute(sql).fetchone()
        db.close()
        got = row[0] if row else None
        if not compare(got, op, want):
            problems.append(f"run.db: {sql} = {got!r}, expected {op} {want}")
    if case.runbook_contains and sdirs:
        rb = subprocess.run([binary, "runbook", os.path.dirname(sdirs[0])], capture_output=True, text=True).stdout
        for pattern in case.runbook_contains:
            if not re.search(pattern, rb):
                problems.append(f"the runbook has no line matching {pattern!r}:\n{rb}")
    kills = [f for f in (summary or {}).get("faults", []) if f["kind"] == "kill" and "mid-batch" in f["detail"]]
    return problems, took, p.stderr, kills


def independent_file_count(run_dir, name, summary):
    """Count a JSON-lines sink file without the harness (like sort | uniq -c on
    its ids) against what the ledger says was sent, and compare with summary.json."""
    import collections
    path = os.path.join(run_dir, name)
    if not os.path.exists(path):
        return [f"{name}: no such file in the run folder"]
    lines, ids = 0, collections.Counter()
    for raw in open(path, "rb"):
        if not raw.strip():
            continue
        lines += 1
        try:
            ids[str(json.loads(raw).get(summary.get("id_field", "event_id")))] += 1
        except (ValueError, AttributeError):
            pass
    db = sqlite3.connect(os.path.join(run_dir, "run.db"))
    sent = dict(db.execute("SELECT id, count(*) FROM ledger_ids WHERE offset IS NOT NULL AND disposition = 'target' GROUP BY id"))
    db.close()
    dup = sum(1 for i, n in sent.items() if ids[i] > n)
    dup_rows = sum(ids[i] - n for i, n in sent.items() if ids[i] > n)
    lost = sum(1 for i in sent if ids[i] == 0)
    c = summary["counts"]
    problems = []
    for key, mine in (("observed_rows", lines), ("duplicated", dup), ("duplicate_rows", dup_rows), ("lost", lost)):
        if c.get(key) != mine:
            problems.append(f"{name}: counted {key}={mine} independently, summary says {c.get(key)}")
    return problems


def run_case(binary, case):
    ok, text = run_case_quiet(binary, case)
    print(text)
    return ok


def run_case_quiet(binary, case):
    out = []
    ok = _run_case(binary, case, out.append)
    return ok, "\n".join(out)


def _run_case(binary, case, print):
    with concurrent.futures.ThreadPoolExecutor(max_workers=case.parallel) as ex:
        results = list(ex.map(lambda i: run_case_once(binary, case, i), range(case.repeat)))
    bad = [(i, r) for i, r in enumerate(results) if r[0]]
    took = sorted(r[1] for r in results)
    label = f"{case.name}" + (f" x{case.repeat}" if case.repeat > 1 else "")
    extra = ""
    if case.landed_share is not None:
        kills = [k for r in results for k in r[3]]
        landed = sum(1 for k in kills if k.get("landed_mid_batch"))
        extra = f"; {landed} of {len(kills)} kills landed mid-batch"
        if not kills or landed < case.landed_share * len(kills):
            print(f"FAIL {label}: only {landed} of {len(kills)} kills landed mid-batch (need {case.landed_share:.0%})")
            return False
    if bad:
        print(f"FAIL {label}: {len(bad)} of {case.repeat} runs wrong")
        for i, (problems, _, err, _k) in bad[:3]:
            print(f"  run {i}: " + "; ".join(problems))
            print("  stderr: " + err.strip().replace("\n", "\n          ")[-1500:])
        return False
    print(f"ok   {label}: {case.repeat} of {case.repeat} as expected (median {took[len(took) // 2]:.1f}s){extra}")
    return True


def run_broken(binary, path):
    first = open(path).readline()
    m = re.match(r"#\s*expect:\s*(\d+):(\d+)\s+(.*)$", first)
    if not m:
        print(f"FAIL {path}: first line must be '# expect: LINE:COL TEXT'")
        return False
    line, col, text = m.group(1), m.group(2), m.group(3).strip()
    rel = os.path.relpath(path, ROOT)
    want = f"{rel}:{line}:{col}:"
    ok = True
    c = subprocess.run([binary, "check", rel], capture_output=True, text=True, cwd=ROOT)
    if c.returncode != 2 or not c.stderr.startswith(want) or text not in c.stderr:
        print(f"FAIL {rel}: check exit {c.returncode}, stderr {c.stderr.strip()!r}; expected exit 2, {want} ... {text}")
        ok = False
    out = os.path.join(OUT, "broken")
    shutil.rmtree(out, ignore_errors=True)
    r = subprocess.run([binary, "run", rel, "--out", out], capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 2 or want not in r.stderr:
        print(f"FAIL {rel}: run exit {r.returncode}, stderr {r.stderr.strip()!r}")
        ok = False
    if os.path.exists(out):
        print(f"FAIL {rel}: run created {out} although the scenario is bad")
        ok = False
    if ok:
        print(f"ok   {rel}: exit 2, {want} {c.stderr.strip().split(': ', 1)[1][:90]}")
    return ok


def pids_with(text):
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            cmd = open(f"/proc/{d}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd:
            found.append(int(d))
    return found


def test_harness_sigkill(binary):
    """SIGKILL the harness mid-run: no pipeline process is left, run.db is readable."""
    out = os.path.join(OUT, "harness-sigkill")
    shutil.rmtree(out, ignore_errors=True)
    scenario = os.path.join(ROOT, "tests", "scenarios", "long-running.drill")
    p = subprocess.Popen([binary, "run", scenario, "--out", out, "--quiet"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    run_dir = os.path.join(out, "long-running")
    deadline = time.time() + 60
    while time.time() < deadline and not pids_with(run_dir):
        time.sleep(0.1)
    pipeline = pids_with(run_dir)
    problems = []
    if not pipeline:
        problems.append("the pipeline never started")
    time.sleep(1.5)  # let it consume something
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    deadline = time.time() + 5
    while time.time() < deadline and pids_with(run_dir):
        time.sleep(0.05)
    left = pids_with(run_dir)
    if left:
        problems.append(f"pipeline processes survived the harness: {left}")
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    db = os.path.join(run_dir, "run.db")
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        if con.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            problems.append("run.db integrity check failed")
        status = con.execute("SELECT value FROM meta WHERE key='status'").fetchone()[0]
        if status != "running":
            problems.append(f"meta status {status!r}, expected 'running' (the harness died)")
        con.close()
    except sqlite3.Error as e:
        problems.append(f"run.db unreadable: {e}")
        sent = 0
    # messages may still be packed (table pack) in a killed run's run.db:
    # the report writes them out as rows first
    r = subprocess.run([binary, "report", run_dir], capture_output=True, text=True)
    if r.returncode != 0:
        problems.append(f"streamdrill report exit {r.returncode}: {r.stderr.strip()}")
    else:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        sent = con.execute("SELECT count(*) FROM ledger WHERE offset IS NOT NULL").fetchone()[0]
        packs = con.execute("SELECT count(*) FROM pack").fetchone()[0]
        con.close()
        if sent < 1 or packs:
            problems.append(f"after the report run.db holds {sent} acknowledged events and {packs} packs")
        s = json.load(open(os.path.join(run_dir, "summary.json")))
        if s["complete"] or s["verdict"] != "inconclusive" or not s["missing"]:
            problems.append(f"rebuilt summary should say incomplete/inconclusive: {s['verdict']} {s['missing']}")
    if problems:
        print("FAIL harness-sigkill: " + "; ".join(problems))
        return False
    print(f"ok   harness-sigkill: pipeline {pipeline} gone after the harness was SIGKILLed; run.db readable ({sent} events acknowledged); report rebuilt")
    return True


def test_ledger_kill(binary, kills=3):
    """SIGKILL the harness at random moments of a large produce step to the
    real broker: after `streamdrill report`, every message the topic holds is
    in run.db, and every delivery report run.db holds names the partition
    and offset where the topic holds that very message."""
    drill = os.path.join(ROOT, "tests", "ledger-kill.drill")
    seed = int(os.environ.get("SD_LEDGER_KILL_SEED", str(int(time.time()))))
    rnd = random.Random(seed)
    problems, lines = [], []
    landed = 0
    for k in range(2 * kills):
        if landed == kills:
            break
        out = os.path.join(OUT, "ledger-kill", str(k))
        shutil.rmtree(out, ignore_errors=True)
        p = subprocess.Popen([binary, "run", drill, "--out", out, "--quiet", "--brokers", REAL["brokers"]],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        run_dir = os.path.join(out, "ledger-kill")
        db = os.path.join(run_dir, "run.db")
        # from the first message on, at a random moment of the step
        deadline = time.time() + 60
        while time.time() < deadline and p.poll() is None:
            try:
                con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
                begun = con.execute("SELECT count(*) FROM step WHERE started_ms IS NOT NULL").fetchone()[0]
                con.close()
                if begun:
                    break
            except sqlite3.Error:
                pass
            time.sleep(0.02)
        delay = rnd.uniform(0.2, 3.0)
        time.sleep(delay)
        if p.poll() is not None:
            problems.append(f"kill {k}: the run ended before the kill at {delay:.2f}s (exit {p.returncode})")
            continue
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        packs = con.execute("SELECT count(*) FROM pack").fetchone()[0]
        tag = con.execute("SELECT value FROM meta WHERE key='tag'").fetchone()[0]
        topic = con.execute("SELECT value FROM meta WHERE key='topic'").fetchone()[0]
        con.close()
        r = subprocess.run([binary, "report", run_dir], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            problems.append(f"kill {k}: streamdrill report exit {r.returncode}: {r.stderr.strip()[-300:]}")
            continue
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        if con.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            problems.append(f"kill {k}: run.db integrity check failed")
        left = con.execute("SELECT count(*) FROM pack").fetchone()[0]
        seqs = set(s for (s,) in con.execute("SELECT seq FROM sent"))
        acks = con.execute("SELECT seq, partition, offset FROM ledger WHERE offset IS NOT NULL").fetchall()
        con.close()
        summary = json.load(open(os.path.join(run_dir, "summary.json")))
        # the topic as the broker holds it: partition, offset, the event's id
        kc = subprocess.run(["kcat", "-C", "-b", REAL["brokers"], "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%p %o %s\\n"],
                            capture_output=True, text=True, timeout=600)
        at, in_topic, foreign = {}, 0, 0
        idre = re.compile(r'"event_id":"' + re.escape(tag) + r'-(\d+)"')
        for line in kc.stdout.splitlines():
            part, off, payload = line.split(" ", 2)
            m = idre.search(payload)
            in_topic += 1
            if not m:
                foreign += 1
                continue
            at[(int(part), int(off))] = int(m.group(1))
        if kc.returncode == 0 and not in_topic and not acks:
            # killed before the first message reached the broker (it was
            # still fetching metadata): run.db holds them as sent, nothing to
            # hold against the topic; draw another moment
            lines.append(f"kill {k} at {delay:.2f}s: {len(seqs)} in run.db, none had reached the topic yet")
            continue
        landed += 1
        missing = [v for v in at.values() if v not in seqs]
        wrong = [(s, pa, o) for s, pa, o in acks if at.get((pa, o)) != s]
        unacked = in_topic - len(acks)
        lines.append(f"kill {k} at {delay:.2f}s: {len(seqs)} in run.db ({packs} packs unpacked by report), {in_topic} in the topic, "
                     f"{len(acks)} acknowledged, {unacked} delivered but their reports not yet written")
        if kc.returncode != 0 or not in_topic:
            problems.append(f"kill {k}: kcat read {in_topic} messages (exit {kc.returncode}): {kc.stderr.strip()[-200:]}")
        if foreign:
            problems.append(f"kill {k}: {foreign} messages in {topic} carry no id of this run")
        if missing:
            problems.append(f"kill {k}: {len(missing)} messages in the topic are not in run.db (first seq {missing[0]})")
        if wrong:
            problems.append(f"kill {k}: {len(wrong)} delivery reports name a partition and offset holding another message: {wrong[:3]}")
        if unacked < 0:
            problems.append(f"kill {k}: run.db acknowledges {len(acks)} messages, the topic holds {in_topic}")
        if left:
            problems.append(f"kill {k}: {left} packs left after the report")
        if len(seqs) >= 2000000:
            problems.append(f"kill {k}: the kill came after the produce step had sent everything")
        c = summary["counts"]
        if c.get("produced") != len(acks) or c.get("send_failed") != len(seqs) - len(acks) or summary["complete"]:
            problems.append(f"kill {k}: summary says produced {c.get('produced')}, send_failed {c.get('send_failed')}, complete "
                            f"{summary['complete']}; run.db holds {len(seqs)} messages, {len(acks)} acknowledged")
        if not any("handed to Kafka" in m for m in summary["missing"]):
            problems.append(f"kill {k}: the report does not say what run.db knows of the messages: {summary['missing']}")
    if landed < kills:
        problems.append(f"only {landed} of {2 * kills} kills came after the first message reached the topic")
    if problems:
        print(f"FAIL ledger-kill (seed {seed}): " + "; ".join(problems))
        return False
    print(f"ok   ledger-kill (seed {seed}): " + "; ".join(lines))
    return True


def test_reports(binary):
    """The reports as their readers see them (tests/check_reports.py): a passing
    exactly-once drill and a second scenario in one invocation (index, --summary),
    the failing at-least-once drill, and a pipeline writing markup ids."""
    out = os.path.join(OUT, "reports")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    runs = [
        ("multi", 0, [os.path.join(ROOT, "scenarios", "parcel-restart.drill"), os.path.join(ROOT, "scenarios", "faults", "late.drill"),
                      "--out", os.path.join(out, "multi"), "--summary", os.path.join(out, "summary.md")]),
        ("alo", 1, [os.path.join(ROOT, "scenarios", "parcel-restart.drill"), "--set", "mode=at-least-once", "--out", os.path.join(out, "alo")]),
        ("hostile", 1, [os.path.join(ROOT, "tests", "reports", "hostile.drill"), "--out", os.path.join(out, "hostile")]),
        ("state", 1, [os.path.join(ROOT, "scenarios", "parcel-state.drill"), "--set", "weak=keep-state", "--out", os.path.join(out, "state")]),
    ]
    problems = []
    procs = [(name, want, subprocess.Popen([binary, "run", "--quiet"] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
             for name, want, args in runs]
    for name, want, p in procs:
        text, _ = p.communicate(timeout=300)
        if p.returncode != want:
            problems.append(f"{name}: exit {p.returncode}, expected {want}: {text[-400:]}")
    if not problems:
        py = subprocess.run([os.path.join(ROOT, "tests", "venv.sh")], capture_output=True, text=True)
        if py.returncode != 0:
            problems.append(f"tests/venv.sh failed: {py.stderr[-400:]}")
        else:
            r = subprocess.run([py.stdout.strip(), os.path.join(ROOT, "tests", "check_reports.py"), out, "--self-test"],
                               capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                problems.append("tests/check_reports.py:\n" + r.stdout + r.stderr[-1000:])
    if problems:
        print("FAIL reports: " + "; ".join(problems))
        return False
    print("ok   reports: report.html rendered in Chromium (verdict, counts, charts), junit.xml read by junitparser, report.md by "
          "markdown-it-py, export tied out, markup ids escaped, index over 2 scenarios, the state chart of a growing state; "
          "10 broken reports caught (tests/out/reports)")
    return True


def run_on_a_terminal(binary, args, env=None):
    """Run streamdrill with stdout and stderr on a pseudo-terminal; its exit code and everything it drew."""
    import pty
    master, slave = pty.openpty()
    p = subprocess.Popen([binary] + args, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                         env=dict(os.environ, TERM="xterm", **(env or {})))
    os.close(slave)
    raw = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        raw += chunk
    p.wait()
    os.close(master)
    return p.returncode, raw.decode(errors="replace")


def test_live_progress(binary):
    """On a terminal a live progress line (step, sent, acknowledged, target rows) is redrawn in place, a step that
    counts toward a number over a second shows a bar, its rate and the time left, and the verdict is in colour
    (plain with NO_COLOR); on a pipe the same run prints plain lines only."""
    scenario = os.path.join(ROOT, "scenarios", "faults", "late.drill")
    out = os.path.join(OUT, "live-progress")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    rc, tty = run_on_a_terminal(binary, ["run", scenario, "--out", os.path.join(out, "tty")])
    frames = [f for f in tty.split("\r\x1b[K") if re.match(r"\[late [0-9.]+s\] step \d+/\d+: .* \| sent \d+, acked \d+ \| target", f)]
    piped = subprocess.run([binary, "run", scenario, "--out", os.path.join(out, "pipe")], capture_output=True, text=True)
    # a slow produce and an await behind it: both over a second
    slow = os.path.join(out, "slow.drill")
    with open(slow, "w") as f:
        f.write(open(scenario).read().split("\nstart\n")[0].replace("{here}/../pipelines", os.path.join(ROOT, "scenarios", "pipelines"))
                + "\nstart\nproduce 300 rate=150\nawait sink rows>=300 timeout=20s\n")
    src, stty = run_on_a_terminal(binary, ["run", slow, "--out", os.path.join(out, "slow")], {"NO_COLOR": "1"})
    bars = re.findall(r"step 2/3: produce 300 rate=150 \[[#.]{10}\] \d+% \d+/s, ~\d+s left \| sent", stty)
    problems = []
    if rc != 0 or piped.returncode != 0 or src not in (0, 1):
        problems.append(f"exit {rc} on a terminal, {piped.returncode} on a pipe, {src} for the slow produce")
    if len(frames) < 3:
        problems.append(f"{len(frames)} progress frames on a terminal")
    elif not any(re.search(r"sent (\d+), acked \1 \| target [1-9]\d* rows", f) for f in frames):
        problems.append("no frame shows events acknowledged and rows in the target")
    if not bars:
        problems.append("no bar with a rate and the time left while 300 events went out at 150/s: " + stty[-600:])
    if "\x1b[" in piped.stdout + piped.stderr:
        problems.append("terminal control sequences on a pipe")
    if "step 1/" not in piped.stderr or "late: PASS" not in piped.stderr:
        problems.append("the plain output lacks its step lines or the verdict")
    if "late: \x1b[1;32mPASS\x1b[0m" not in tty:
        problems.append("no green PASS on the terminal")
    if not re.search(r"slow: (PASS|FAIL|INCONCLUSIVE)", stty) or "\x1b[1;3" in stty:
        problems.append("NO_COLOR did not make the verdict plain")
    if problems:
        print("FAIL live-progress: " + "; ".join(problems))
        return False
    print(f"ok   live-progress: {len(frames)} frames redrawn on a terminal, e.g. {frames[-1].strip()!r}; a bar with the time "
          f"left, e.g. {bars[-1]!r}; the verdict green, plain with NO_COLOR; plain lines on a pipe")
    return True


def test_external_broker(binary):
    """`streamdrill broker` serves the embedded cluster to other processes;
    a run given its address (through KAFKA_BOOTSTRAP_SERVERS) treats it as
    an external broker and passes."""
    b = subprocess.Popen([binary, "broker", "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    problems = []
    addr = b.stdout.readline().strip()
    if not re.match(r"^127\.0\.0\.1:\d+$", addr):
        problems.append(f"broker printed {addr!r}, expected 127.0.0.1:PORT")
    else:
        out = os.path.join(OUT, "external-broker")
        shutil.rmtree(out, ignore_errors=True)
        env = dict(os.environ, KAFKA_BOOTSTRAP_SERVERS=addr)
        r = subprocess.run([binary, "run", os.path.join(ROOT, "scenarios", "parcel-restart.drill"), "--out", out, "--quiet"],
                           capture_output=True, text=True, env=env, timeout=300)
        if r.returncode != 0:
            problems.append(f"run exit {r.returncode}: {r.stderr.strip()[-500:]}")
        else:
            s = json.load(open(os.path.join(out, "parcel-restart", "summary.json")))
            if s["broker_kind"] != "external" or s["brokers"] != addr:
                problems.append(f"summary says {s['broker_kind']} {s['brokers']}, expected external {addr}")
            if f"--brokers {addr}" not in s.get("reproduce", ""):
                problems.append(f"the reproduce line does not name the broker: {s.get('reproduce')!r}")
    b.send_signal(signal.SIGTERM)
    try:
        rc = b.wait(timeout=10)
        if rc != 0:
            problems.append(f"broker exited {rc} on SIGTERM")
    except subprocess.TimeoutExpired:
        b.kill()
        problems.append("broker did not stop on SIGTERM")
    if problems:
        print("FAIL external-broker: " + "; ".join(problems))
        return False
    print(f"ok   external-broker: `streamdrill broker` at {addr}, KAFKA_BOOTSTRAP_SERVERS run passed, broker stopped on SIGTERM")
    return True


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_real_kafka():
    d = os.path.join(OUT, "kafka")
    r = subprocess.run([os.path.join(ROOT, "scenarios", "env", "kafka", "kafka.sh"), "start", d, "", str(os.getpid()),
                        str(free_port())], capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise SystemExit("cannot start the Apache Kafka broker: " + r.stderr[-2000:])
    lines = r.stdout.strip().splitlines()
    REAL["brokers"] = [l for l in lines if not l.startswith("proxy ")][-1]
    REAL["proxy"] = [l for l in lines if l.startswith("proxy ")][-1].split(" ", 1)[1]
    REAL["dir"] = d
    print(f"--   Apache Kafka (KRaft) started at {REAL['brokers']} (proxied listener: {REAL['proxy']})")


def stop_real_kafka():
    if REAL.get("dir"):
        subprocess.run([os.path.join(ROOT, "scenarios", "env", "kafka", "kafka.sh"), "stop", REAL["dir"]], timeout=60)
        print("--   Apache Kafka stopped")


def start_cluster():
    """Three Kafka brokers of one KRaft quorum (kafka.sh cluster), stopped
    with this process at the latest."""
    d = os.path.join(OUT, "cluster")
    t0 = time.time()
    r = subprocess.run([os.path.join(ROOT, "scenarios", "env", "kafka", "kafka.sh"), "cluster", d, "3", str(os.getpid())],
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise SystemExit("cannot start the Kafka cluster: " + r.stderr[-2000:])
    REAL["cluster"] = d
    print(f"--   Kafka cluster of 3 brokers started at {r.stdout.strip().splitlines()[-1]} in {time.time() - t0:.0f}s")


def stop_cluster():
    if REAL.get("cluster"):
        subprocess.run([os.path.join(ROOT, "scenarios", "env", "kafka", "kafka.sh"), "cluster-stop", REAL["cluster"]], timeout=120)
        REAL["cluster"] = None
        print("--   Kafka cluster stopped")


def start_engine_cluster(engine, what, key, *args):
    """ENGINE's cluster (scenarios/env/ENGINE/ENGINE.sh cluster DIR ARGS...
    OWNER_PID), killed with this process at the latest: its folder in
    REAL[key]; returns the address it prints."""
    d = os.path.join(OUT, key.replace("_", "-"))
    r = subprocess.run([os.path.join(ROOT, "scenarios", "env", engine, engine + ".sh"), "cluster", d, *args, str(os.getpid())],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"cannot start the {what}: " + r.stderr[-2000:])
    REAL[key] = d
    address = r.stdout.strip().splitlines()[-1]
    print(f"--   {what} started at {address}")
    return address


def stop_engine_cluster(engine, what, key):
    if REAL.get(key):
        subprocess.run([os.path.join(ROOT, "scenarios", "env", engine, engine + ".sh"), "cluster-stop", REAL[key]], timeout=60)
        REAL[key] = None
        print(f"--   {what} stopped")


SPARK_CLUSTER = "standalone Spark cluster (a master, 2 workers)"
FLINK_CLUSTER = "Flink session cluster (a JobManager, a TaskManager of two slots)"


def start_spark_cluster():
    REAL["spark_master"] = start_engine_cluster("spark", SPARK_CLUSTER, "spark_cluster", "2")


def stop_spark_cluster():
    stop_engine_cluster("spark", SPARK_CLUSTER, "spark_cluster")


def start_flink_cluster():
    start_engine_cluster("flink", FLINK_CLUSTER, "flink_cluster")


def stop_flink_cluster():
    stop_engine_cluster("flink", FLINK_CLUSTER, "flink_cluster")


def run_cases_real(binary, cases):
    """The cases that need real engines: those on the 3-broker cluster, on
    the standalone Spark cluster and on the Flink cluster first, each
    cluster up only for its own cases, then the rest."""
    ok = True
    clusters = (("cluster", start_cluster, stop_cluster), ("sparkcluster", start_spark_cluster, stop_spark_cluster),
                ("flink", start_flink_cluster, stop_flink_cluster))
    for need, start, stop in clusters:
        group = [c for c in cases if need in c.needs]
        if group:
            start()
            try:
                for case in group:
                    ok &= run_case(binary, case)
            finally:
                stop()
    for case in [c for c in cases if not any(need in c.needs for need, _, _ in clusters)]:
        ok &= run_case(binary, case)
    return ok


def start_postgres():
    """A throwaway PostgreSQL (scenarios/env/postgres/postgres.sh), stopped
    with this process at the latest."""
    d = os.path.join(OUT, "postgres")
    r = subprocess.run([os.path.join(ROOT, "scenarios", "env", "postgres", "postgres.sh"), "start", d, str(free_port()), str(os.getpid())],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit("cannot start PostgreSQL: " + r.stderr[-2000:])
    kv = dict(x.split("=", 1) for x in r.stdout.split())
    REAL["pg"] = f"postgresql://{kv['user']}@{kv['host']}:{kv['port']}/{kv['dbname']}"
    REAL["pg_dir"] = d
    print(f"--   PostgreSQL started at {kv['host']}:{kv['port']}")


def stop_postgres():
    if REAL.get("pg_dir"):
        subprocess.run([os.path.join(ROOT, "scenarios", "env", "postgres", "postgres.sh"), "stop", REAL["pg_dir"]], timeout=60)
        REAL["pg_dir"] = None
        print("--   PostgreSQL stopped")


def install_phase(what, name, cmd, timeout=1800):
    """One line for an install step (pip, Maven): its output in .cache/logs/NAME.log, shown only when it fails."""
    log = os.path.join(ROOT, ".cache", "logs", name + ".log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    t0 = time.time()
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    if r.returncode != 0:
        tail = "".join(open(log).readlines()[-25:])
        raise SystemExit(f"cannot set up {what} (exit {r.returncode}); the whole output is in {log}:\n{tail}")
    print(f"--   {what}: ready in {time.time() - t0:.0f}s (log: {os.path.relpath(log, ROOT)})")


def setup_connect():
    install_phase("Kafka Connect's jars (Maven)", "connect-fetch", [os.path.join(ROOT, "scenarios", "env", "connect", "connect.sh"), "fetch"])


def setup_flink():
    install_phase("Flink's runtime (pip: apache-flink-libraries) and its Kafka connector (Maven)", "flink-setup",
                  [os.path.join(ROOT, "scenarios", "env", "flink", "flink.sh"), "setup"])


def setup_spark():
    install_phase("PySpark, delta-spark, pyarrow (pip) and the Kafka connector's jars (Maven)", "spark-setup",
                  [os.path.join(ROOT, "scenarios", "env", "spark", "spark.sh"), "setup"])


def test_realtime_compare(binary, both_intervals=False):
    """Real-time mode (10 s intervals, and 5 s with both_intervals: the long
    target) beside the same query on a micro-batch trigger: each run killed
    mid-interval (mid-batch) and restarted; the replayed records (duplicates
    in the Kafka sink), the end-to-end latency and each kill's recovery (time,
    input read again, rows written again) side by side, from `streamdrill
    compare`."""
    runs = [("rtm-5s", ["--set", "trigger=real-time:5s"])] if both_intervals else []
    runs += [("rtm-10s", ["--set", "trigger=real-time:10s"]),
             ("micro-batch", ["--set", "trigger=processing-time:0s", "--set", "batches=micro"])]
    dirs, problems, got = [], [], {}
    for name, args in runs:
        out = os.path.join(OUT, "realtime-" + name)
        shutil.rmtree(out, ignore_errors=True)
        r = subprocess.run([binary, "run", os.path.join(ROOT, "scenarios", "spark-realtime.drill"), "--out", out, "--quiet",
                            "--brokers", REAL["brokers"]] + args, capture_output=True, text=True, timeout=900)
        d = os.path.join(out, "spark-realtime")
        dirs.append(d)
        if r.returncode != 0:
            problems.append(f"{name}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
            continue
        s = json.load(open(os.path.join(d, "summary.json")))
        got[name] = s["counts"]
        k = [f for f in s["faults"] if f["kind"] == "kill"]
        if not k or not k[0].get("landed_mid_batch"):
            problems.append(f"{name}: the kill did not land mid-batch: {k}")
        # the recovery is measured; the input replayed too, or said why not (a
        # real-time interval in flight has no size until it commits)
        rec = k[0].get("recovery") if k else None
        if not rec or rec.get("recovery_s") is None or rec.get("rewritten_rows") is None or (
                rec.get("replayed_input") is None and not ("replayed_input" in rec.get("not_measured", []) and "replayed_input" in rec.get("why", ""))):
            problems.append(f"{name}: the kill's recovery was not measured: {rec}")
    table = subprocess.run([binary, "compare"] + dirs, capture_output=True, text=True).stdout
    open(os.path.join(OUT, "realtime-compare.md"), "w").write(table)
    if len(got) == len(runs):
        # latency is a figure of a shared, noisy machine: the better of the
        # real-time runs must beat the micro-batches
        best = min(got[n]["latency_p50_ms"] for n, _ in runs if n.startswith("rtm"))
        if not best < got["micro-batch"]["latency_p50_ms"]:
            problems.append("real-time mode should have a lower median latency than micro-batches")
        if not got["rtm-10s"]["duplicate_rows"] > got["micro-batch"]["duplicate_rows"]:
            problems.append("a kill mid-interval should replay more with 10 s real-time intervals than with micro-batches")
    if problems:
        print("FAIL realtime-compare: " + "; ".join(problems))
        print(table)
        return False
    print("ok   realtime-compare: replay and latency side by side (tests/out/realtime-compare.md):")
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        trig = re.search(r"trigger=(\S+)", cells[1])
        label = trig.group(1) if trig else ("trigger" if cells[1] == "variables" else "")
        print(f"       {label:22} | " + " | ".join(cells[2:3] + cells[4:12] + cells[19:23]))
    return True


# ---- golden outputs: the parcel drill's reports must not change when the
# code is restructured. Times, pids, ports, paths and other figures of the
# moment are masked; everything else (counts, checks, faults and where they
# landed, steps, warnings, the reproduce line) must match byte for byte.

GOLDEN = os.path.join(ROOT, "tests", "golden", "parcel-restart")
GOLDEN_FILES = ("summary.json", "junit.xml", "report.md")
# summary.json keys whose values are figures of the moment
MOMENT_KEYS = {"t_ms", "duration_ms", "started_at", "brokers", "pid", "stdout", "stderr", "cpu_ms", "peak_rss_kb",
               "reconcile_ms", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "latency_max_ms", "rows_visible",
               "idle_ms", "idle_share", "recovery_s", "caught_up_t_ms", "latency_p50_before_ms", "latency_p99_before_ms",
               "latency_p50_during_ms", "latency_p99_during_ms", "latency_p50_after_ms", "latency_p99_after_ms",
               "batch_p50_ms", "batch_p95_ms", "batch_max_ms", "throughput_rps", "backlog_max"}


def normalize_golden(name, text, run_dir):
    # whether a look of the harness fell between refpipe's inserts and its commit is timing (test_recovery holds
    # the figures to run.db and target.db): the note it gives is left out
    if name.endswith(".json"):
        doc = json.loads(text)
        doc["warnings"] = [w for w in doc.get("warnings", []) if w.get("kind") != "write-times-early"]
        text = json.dumps(doc)
    else:
        text = re.sub(r"\n- [^\n]*`write-times-early`[^\n]*\n", "\n", text)
        text = re.sub(r"## Warnings and what was not judged\n\n+(?=## )", "", text)
    if name.endswith(".json"):
        def mask(o):
            if isinstance(o, dict):
                return {k: ("<moment>" if k in MOMENT_KEYS else mask(v)) for k, v in o.items()}
            if isinstance(o, list):
                return [mask(v) for v in o]
            return o
        text = json.dumps(mask(json.loads(text)), indent=2, sort_keys=False)
    text = text.replace(run_dir, "<RUN>").replace(ROOT, "<ROOT>")
    subs = [
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?", "<TIME>"),
        (r"127\.0\.0\.1:\d+", "127.0.0.1:<PORT>"),
        (r"pid \d+", "pid <PID>"),
        (r"\| (\d+) \| \d+ \| (kill|stop|crash|exit)", r"| \1 | <PID> | \2"),
        (r"\d+(\.\d+)?s\b", "<S>s"),
        (r"\(\d+/s\)", "(<R>/s)"),
        (r"\d+ rows reached the target", "<N> rows reached the target"),
        (r"(latency_(p50|p95|p99|max)_ms\D+)\d+", r"\1<MS>"),
        (r"p50 \d+ ms, p95 \d+ ms, p99 \d+ ms, max \d+ ms", "p50 <MS>, p95 <MS>, p99 <MS>, max <MS>"),
        (r'time="[0-9.]+"', 'time="<S>"'),
        # how the records fell into batches is timing
        (r'"(batches|batch_rows_max)": \d+', r'"\1": <N>'),
        (r"\| (batches|batch_rows_max|batch_p50_ms|batch_p95_ms|batch_max_ms|throughput_rps|backlog_max) \| \d+ \|", r"| \1 | <N> |"),
        # so is which batch a fault fell after (the runbook; test_runbook holds it to run.db)
        (r"batch \d+, offsets [0-9:,]+", "batch <N>, offsets <O>"),
        # a recovery's seconds and the latency around it (test_recovery holds them to run.db)
        (r"\| \d+\.\d{3} s \| target", "| <S> s | target"),
        (r"\d+ ms / \d+ ms", "<MS> / <MS>"),
    ]
    for pat, rep in subs:
        text = re.sub(pat, rep, text)
    return text


def test_golden(binary, update=False):
    """The parcel drill with a fixed seed and tag: summary.json (times aside), junit.xml and report.md as kept."""
    out = os.path.join(OUT, "golden")
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([binary, "run", os.path.join("scenarios", "parcel-restart.drill"), "--out", out, "--seed", "42",
                        "--tag", "golden", "--quiet"], capture_output=True, text=True, cwd=ROOT)
    run_dir = os.path.join(out, "parcel-restart")
    problems = [] if p.returncode == 0 else [f"exit {p.returncode}: {p.stderr[-400:]}"]
    for name in GOLDEN_FILES if not problems else ():
        got = normalize_golden(name, open(os.path.join(run_dir, name)).read(), run_dir)
        path = os.path.join(GOLDEN, name)
        if update:
            os.makedirs(GOLDEN, exist_ok=True)
            open(path, "w").write(got)
            continue
        want = open(path).read()
        if got != want:
            import difflib
            diff = "".join(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "golden/" + name,
                                                     "now/" + name))[:40])
            problems.append(f"{name} differs from tests/golden/parcel-restart/{name}:\n{diff}")
    if problems:
        print("FAIL golden: " + "\n".join(problems))
        return False
    print("ok   golden: parcel-restart's summary.json, junit.xml and report.md " + ("written" if update else "as kept"))
    return True


README_REF = (r"(tests/run_scenarios.py \(readme-reference\) fails when the two differ -->\n)(.*?)(<!-- end of the generated reference -->)")


def update_readme_reference(binary):
    gen = subprocess.run([binary, "help", "--markdown"], capture_output=True, text=True, check=True).stdout
    path = os.path.join(ROOT, "docs", "language.md")
    text = open(path).read()
    new, n = re.subn(README_REF, lambda m: m.group(1) + gen + m.group(3), text, flags=re.S)
    if n != 1:
        print("docs/language.md: the reference markers are missing")
        return False
    open(path, "w").write(new)
    print("docs/language.md: reference rewritten from `streamdrill help --markdown`")
    return True


def test_terminal_help(binary):
    """`streamdrill help NAME` reads as text on a terminal (a Markdown link shown as its text and page), and --version
    names every sink reader the language has."""
    problems = []
    kill = subprocess.run([binary, "help", "kill"], capture_output=True, text=True).stdout
    if "](" in kill or "see no pass without the drill (docs/pipelines.md)" not in kill or "(see progress sources)" not in kill:
        problems.append("help kill shows Markdown links: " + kill[:400])
    ver = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    readers = next((l.split(":", 1)[1].split() for l in ver.splitlines() if "sink readers:" in l), [])
    if sorted(readers) != sorted(INIT_KINDS):
        problems.append(f"--version names the sink readers {readers}, the language has {sorted(INIT_KINDS)}")
    return result("terminal-help", problems, f"help kill as plain text, --version names the {len(readers)} sink readers")


def test_readme_reference(binary):
    """docs/language.md's reference is what `streamdrill help --markdown` prints from the table."""
    gen = subprocess.run([binary, "help", "--markdown"], capture_output=True, text=True).stdout
    readme = open(os.path.join(ROOT, "docs", "language.md")).read()
    m = re.search(r"tests/run_scenarios.py \(readme-reference\) fails when the two differ -->\n(.*?)<!-- end of the generated reference -->",
                  readme, re.S)
    if not m or m.group(1) != gen:
        import difflib
        diff = "" if not m else "".join(list(difflib.unified_diff(m.group(1).splitlines(True), gen.splitlines(True), "docs/language.md",
                                                                  "streamdrill help --markdown"))[:30])
        print("FAIL readme-reference: docs/language.md's reference differs from `streamdrill help --markdown` "
              "(paste its output between the markers):\n" + (diff or "markers not found"))
        return False
    print(f"ok   readme-reference: docs/language.md's header and step tables are the table in harness/lang/lang.c ({gen.count(chr(10))} lines)")
    return True


def test_run_db_tables():
    """Every table and view of run.db's one schema is named in docs/outputs.md, and nothing creates a table elsewhere."""
    src = open(os.path.join(ROOT, "harness", "base", "ledger.c")).read()
    schema = src[src.index("sd_ledger_schema[] ="):]
    schema = schema[:schema.index(";\n\n")]
    names = re.findall(r'CREATE (?:TABLE|VIEW) \\?"?(\w+)', schema)
    doc = open(os.path.join(ROOT, "docs", "outputs.md")).read()
    row = next((l for l in doc.splitlines() if l.startswith("| `run.db` |")), "")
    problems = [f"`{n}` is not named in docs/outputs.md's run.db row" for n in names if f"`{n}`" not in row]
    others = [p for p in [f for d in ("harness", "injectors", "reports") for f in glob.glob(os.path.join(ROOT, d, "**", "*.c"), recursive=True)]
              if "CREATE TABLE" in open(p).read() and not p.endswith(os.path.join("harness", "base", "ledger.c"))
              and "pipelines" not in p]
    problems += [f"{os.path.relpath(p, ROOT)} creates a table outside the schema" for p in others]
    if "CREATE TABLE IF NOT EXISTS" in src:
        problems.append("ledger.c creates a table on first use, outside its schema")
    if len(names) < 20:
        problems.append(f"only {len(names)} tables found in the schema: {names}")
    return result("run-db-tables", problems, f"{len(names)} tables and views in one schema, each in docs/outputs.md")


def test_structure():
    """The run's handle stays small and its rooms own their state: sd_run_t has at most 30 top-level members; the
    injectors write no field of the run but their own faults (they tell the run the rest through calls in run.h), the
    progress sources only the pipeline's progress, and no other file outside the run layer writes any."""
    problems = []
    h = open(os.path.join(ROOT, "harness", "run", "run.h")).read()
    body = h[h.index("typedef struct sd_run_s {") + len("typedef struct sd_run_s {"):h.index("} sd_run_t;")]
    depth, members, stmt = 0, 0, ""
    for ch in re.sub(r"/\*.*?\*/", "", body, flags=re.S):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == ";" and depth == 0:
            members += stmt.count(",") + 1
            stmt = ""
            continue
        if depth == 0:
            stmt += ch
        elif ch == "}" and depth == 0:
            stmt = ""
    if members > 30:
        problems.append(f"sd_run_t has {members} top-level members (at most 30)")
    write = re.compile(r"\br->([a-z_]+)[\w.\[\]]* *(=[^=]|\+=|-=|\+\+|--)")
    # every file outside the run layer that sees the run's handle, and what it may write of it:
    # the injectors their faults, the progress sources the pipeline's progress (and the second
    # source's consumed offsets), the rest nothing
    allowed = {"injectors": {"faults"}, "progress": {"pipe", "side"}}
    outside = 0
    for path in sorted(glob.glob(os.path.join(ROOT, "harness", "**", "*.c"), recursive=True) +
                       glob.glob(os.path.join(ROOT, "injectors", "*.c")) + glob.glob(os.path.join(ROOT, "reports", "*.c"))):
        rel = os.path.relpath(path, ROOT)
        if not rel.startswith("harness/run/") and '#include "run_int.h"' in open(path).read():
            problems.append(f"{rel} includes run_int.h, the run's inside")
        if rel.startswith("harness/run/") or '#include "run.h"' not in open(path).read():
            continue
        outside += 1
        may = allowed.get(rel.split("/")[-2], set())
        for n, line in enumerate(open(path), 1):
            for m in write.finditer(line):
                if m.group(1) not in may:
                    problems.append(f"{rel}:{n} writes r->{m.group(1)}")
    if outside < 8:
        problems.append(f"only {outside} files outside the run layer include run.h: the check reads the wrong files")
    return result("structure", problems, f"sd_run_t has {members} top-level members; none but the run's rooms include run_int.h; of "
                  f"{outside} files outside the run layer that see the handle, the injectors write only their faults, the progress "
                  "sources only the pipeline's progress, the rest nothing")


def test_doc_links():
    """Every relative link of README.md and docs/*.md names a file that exists and, with #anchor, a heading in it."""
    def anchor(h):
        t = re.sub(r"[^\w\- ]", "", h.lstrip("#").strip().lower())
        return t.replace(" ", "-")
    files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    heads = {f: {anchor(l) for l in open(f).read().split("\n") if l.startswith("#")} for f in files}
    bad, n = [], 0
    for f in files:
        for m in re.finditer(r"\]\(([^)\s]+)\)", open(f).read()):
            t = m.group(1)
            if t.startswith(("http:", "https:", "mailto:")):
                continue
            n += 1
            path, _, a = t.partition("#")
            tgt = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            if not os.path.exists(tgt):
                bad.append(f"{os.path.relpath(f, ROOT)}: {t}: no such file")
            elif a and tgt in heads and a not in heads[tgt]:
                bad.append(f"{os.path.relpath(f, ROOT)}: {t}: no such heading")
    if bad:
        print("FAIL doc-links: " + "; ".join(bad))
        return False
    print(f"ok   doc-links: {n} relative links of README.md and docs/ lead to a file and heading")
    return True


def test_run_folder_safety(binary):
    """Nothing streamdrill did not write is deleted: foreign folders are refused, bad names and bad usage touch nothing."""
    base = os.path.join(OUT, "folder-safety")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    drill = os.path.join(base, "tiny.drill")
    open(drill, "w").write("source kafka topic=t\nsink jsonl path={run}/none.jsonl\nproduce 5\nawait quiescent 200ms\n")
    out = os.path.join(base, "out")
    problems = []

    def run(*args):
        return subprocess.run([binary, "run", *args, "--out", out, "--quiet"], capture_output=True, text=True, cwd=base)

    # 1. a folder of the scenario's name that a run did not write: an empty run.db and a file of the user's
    mine = os.path.join(out, "tiny")
    os.makedirs(mine)
    open(os.path.join(mine, "run.db"), "w").close()
    open(os.path.join(mine, "notes.txt"), "w").write("mine")
    p = run(drill)
    if p.returncode != 2 or "refusing to replace it" not in p.stderr:
        problems.append(f"a foreign folder: exit {p.returncode}, {p.stderr.strip()[-200:]!r}")
    if sorted(os.listdir(mine)) != ["notes.txt", "run.db"]:
        problems.append(f"a foreign folder was changed: {sorted(os.listdir(mine))}")
    shutil.rmtree(mine)
    # 2. a run folder is replaced by the next run of the same scenario
    p = run(drill)
    first = os.path.join(mine, "summary.json")
    if not os.path.exists(first):
        problems.append(f"the first run wrote no summary.json (exit {p.returncode})")
    open(os.path.join(mine, "left.txt"), "w").write("written after the run")
    p = run(drill)
    if p.returncode not in (0, 1, 3) or os.path.exists(os.path.join(mine, "left.txt")):
        problems.append(f"a previous run's folder was not replaced (exit {p.returncode})")
    # 3. bad usage touches nothing: the previous run's folder stays as it was
    before = open(first).read() if os.path.exists(first) else None
    p = run(drill, "-X", "no.such.property=1")
    if p.returncode != 2 or not os.path.exists(first) or open(first).read() != before:
        problems.append(f"-X no.such.property: exit {p.returncode}, previous run folder {'kept' if os.path.exists(first) else 'gone'}")
    # 4. a file name that is no folder name (`...drill` names "..")
    dots = os.path.join(base, "...drill")
    shutil.copy(drill, dots)
    p = run(dots)
    if p.returncode != 2 or "names its run folder" not in p.stderr or not os.path.exists(drill):
        problems.append(f"...drill: exit {p.returncode}, {p.stderr.strip()[-200:]!r}")
    # 5. a run folder that is a symlink to another run's: refused, and no report path of the other run printed
    other = os.path.join(base, "other")
    subprocess.run([binary, "run", drill, "--out", other, "--quiet"], capture_output=True, text=True, cwd=base)
    shutil.rmtree(mine, ignore_errors=True)
    os.symlink(os.path.join(other, "tiny"), mine)
    p = run(drill)
    if p.returncode != 2 or "report:" in p.stderr:
        problems.append(f"a symlinked run folder: exit {p.returncode}, {p.stderr.strip()[-200:]!r}")
    os.unlink(mine)
    if problems:
        print("FAIL folder-safety: " + "; ".join(problems))
        return False
    print("ok   folder-safety: a foreign folder refused and kept, a run folder replaced, -X checked before the disk, ...drill refused")
    return True


def fresh(name):
    """An empty folder for a coded test's files, under tests/out."""
    base = os.path.join(OUT, name)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    return base


def run_drill_text(binary, base, name, text):
    """Write a drill NAME.drill of text into base and run it into base/out; the process and the run folder."""
    drill = os.path.join(base, name + ".drill")
    open(drill, "w").write(text)
    p = subprocess.run([binary, "run", drill, "--out", os.path.join(base, "out"), "--quiet"], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)  # no terminal: an operator step runs its command
    return p, os.path.join(base, "out", name)


def test_recovery(binary):
    """Each fault's recovery figures on the parcel drill and refpipe, recomputed here from run.db and the target's
    own rows (the newest first write among events sent before the kill; the batches' offsets and rows), and
    the same in summary.json and the runbook table; expect on a figure below the measured value fails (exit 1), above
    it passes, on a fault step by its line too; refpipe --weak rewind (right output, everything re-read after the
    restart) passes without the expect and is caught by expect replayed_input<=50; the at-least-once mode's rows
    written again traced to the kill; a figure expected of a drill without a fault is inconclusive (exit 3)."""
    import sqlite3
    problems = []
    base = fresh("recovery")
    text = open(os.path.join(ROOT, "scenarios", "parcel-restart.drill")).read()
    kill_line = next(i + 1 for i, l in enumerate(text.splitlines()) if l.startswith("kill "))
    p, run = run_drill_text(binary, base, "eo", text)
    if p.returncode != 0:
        return result("recovery", [f"the parcel drill exited {p.returncode}: {p.stderr[-400:]}"], "")
    db = sqlite3.connect(os.path.join(run, "run.db"))
    (fid, t), = db.execute("SELECT id, t_ms FROM fault WHERE kind='kill'").fetchall()
    rows = db.execute("SELECT line, basis, caught_ms, figures FROM recovery").fetchall()
    if len(rows) != 1 or rows[0][0] != kill_line:
        return result("recovery", [f"expected one recovery row, for the kill at line {kill_line}: {rows}"], "")
    line, basis, caught, figs = rows[0]
    figs = json.loads(figs)
    # the target basis, recomputed: the first write of every target event acknowledged before the kill
    tag = db.execute("SELECT value FROM meta WHERE key='tag'").fetchone()[0]
    before = db.execute("SELECT seq, min(queued_ms) AS q FROM ledger WHERE disposition='target' AND error IS NULL"
                        " GROUP BY seq HAVING q<?", (t,)).fetchall()
    tdb = sqlite3.connect(os.path.join(run, "target.db"))
    written = dict(tdb.execute("SELECT event_id, min(sd_written_ms) FROM bronze GROUP BY event_id").fetchall())
    # a write time a look of the harness contradicts (a later look counted fewer rows than were written by
    # then, rows taken in the order of their times, a millisecond's rows by the least rank) gives way to
    # the first look that counted the row
    samples = db.execute("SELECT t_ms, rows, looked_ms FROM sample WHERE sink='target' ORDER BY t_ms, rowid").fetchall()
    stamps = sorted(written.values())
    def readable(w):
        rank = 1 + sum(1 for x in stamps if x < w)
        for i, (ts, rows, looked) in enumerate(samples):
            if rows >= rank:
                prev = looked if looked is not None else (samples[i - 1][0] if i else None)
                return ts if prev is not None and prev > w and ts > w else w
        return w
    newest = max([t] + [max(readable(written[f"{tag}-{s}"]), q) for s, q in before])
    if basis != "target" or abs(figs["recovery_s"] - (newest - t)) > 2 or abs(caught - newest) > 2:
        problems.append(f"recovery_s: {figs['recovery_s']} ms by {basis}, caught at {caught}; the target's rows say {newest - t} ms "
                        f"({len(before)} events sent before the kill)")
    # replayed input, recomputed from the batches
    commits = db.execute("SELECT incarnation, rows, offsets, commit_ms FROM batch WHERE commit_ms IS NOT NULL ORDER BY commit_ms").fetchall()
    osum = lambda off: sum(int(x.split(":")[-1]) for x in off.split(",") if x.count(":") == 1)
    last = [c for c in commits if c[3] <= t][-1]
    inflight = db.execute("SELECT coalesce(sum(rows), 0) FROM batch WHERE incarnation=1 AND begin_ms<=? AND (commit_ms IS NULL OR commit_ms>?)",
                          (t, t)).fetchone()[0]
    first_after = [c for c in commits if c[0] > 1][0]
    want_replay = max(0, osum(last[2]) + inflight - (osum(first_after[2]) - first_after[1]))
    if figs["replayed_input"] != want_replay or want_replay != inflight:
        problems.append(f"replayed_input {figs['replayed_input']}, run.db's batches say {want_replay} (the batch in flight: {inflight})")
    if figs["rewritten_rows"] != 0 or figs["batches_rerun"] != 1 or figs["detect_s"] is not None:
        problems.append(f"exactly-once refpipe: rewritten_rows {figs['rewritten_rows']} (0), batches_rerun {figs['batches_rerun']} (1), "
                        f"detect_s {figs['detect_s']} (null)")
    summary = json.load(open(os.path.join(run, "summary.json")))
    rec = [f["recovery"] for f in summary["faults"] if f["kind"] == "kill"][0]
    if rec["replayed_input"] != figs["replayed_input"] or abs(rec["recovery_s"] * 1000 - figs["recovery_s"]) > 0.6 or rec["line"] != kill_line:
        problems.append(f"summary.json's recovery {rec} is not run.db's {figs}")
    if any(f["recovery"] is not None for f in summary["faults"] if f["kind"] == "restart"):
        problems.append("the restart after a kill has recovery figures of its own")
    md = open(os.path.join(run, "report.md")).read()
    if not re.search(rf"\| {kill_line} \| kill \| {figs['recovery_s'] / 1000:.3f} s \| target \| n/a \| n/a \| {want_replay} \| 0 \| 1 \|", md):
        problems.append("report.md's runbook has no recovery row with run.db's figures")
    # expect below and above the measured value, for every fault and for the kill by its line
    measured = figs["recovery_s"] / 1000
    for name, clause, code in (("below", "recovery_s<=0.001", 1), ("above", "recovery_s<=600 rewritten_rows<=0", 0),
                               ("step-below", f"step={kill_line} recovery_s<0.001", 1), ("step-above", f"step={kill_line} recovery_s<=600", 0)):
        p2, run2 = run_drill_text(binary, base, name, text + f"expect     {clause}\n")
        if p2.returncode != code:
            problems.append(f"expect {clause} (measured {measured:.3f} s) exited {p2.returncode}, expected {code}: {p2.stderr[-300:]}")
    if measured <= 0.001:
        problems.append(f"the kill's recovery measured {measured} s: the below-the-measured case proves nothing")
    # operational health, recomputed from run.db: batch durations, restarts, the backlog at each commit and fault
    counts = summary["counts"]
    durs = sorted(c - b for b, c in db.execute("SELECT begin_ms, commit_ms FROM batch WHERE begin_ms IS NOT NULL AND commit_ms IS NOT NULL"))
    events = db.execute("SELECT t, offsets, acked FROM (SELECT commit_ms AS t, offsets, acked, 0 AS k FROM batch WHERE commit_ms IS NOT NULL"
                        " UNION ALL SELECT t_ms, NULL, acked, 1 FROM fault WHERE acked IS NOT NULL AND undoes IS NULL) ORDER BY t, k").fetchall()
    parse = lambda off: {int(x.split(":")[0]): int(x.split(":")[1]) for x in (off or "").split(",") if x.count(":") == 1}
    committed, backlog = None, -1
    for _, off, acked in events:
        if committed is not None and acked:
            backlog = max(backlog, sum(max(0, o - committed.get(p_, 0)) for p_, o in parse(acked).items()))
        if off:
            committed = parse(off)
    if counts.get("restarts") != 1 or counts.get("batch_max_ms") != durs[-1] or counts.get("backlog_max") != backlog or backlog < 20:
        problems.append(f"health: restarts {counts.get('restarts')} (1), batch_max_ms {counts.get('batch_max_ms')} ({durs[-1]}), "
                        f"backlog_max {counts.get('backlog_max')} ({backlog}, at least the 20 in flight at the kill)")
    p_h, _ = run_drill_text(binary, base, "backlog", text + "expect     backlog_max<=1\n")
    if p_h.returncode != 1:
        problems.append(f"expect backlog_max<=1 (measured {backlog}) exited {p_h.returncode}, expected 1")
    # a pipeline that rewinds: right rows, everything read again
    rewind = text.replace("--group {group}", "--group {group} --weak rewind")
    p3, run3 = run_drill_text(binary, base, "rewind-ok", rewind)
    p4, run4 = run_drill_text(binary, base, "rewind", rewind + "expect     replayed_input<=50\n")
    r4 = json.load(open(os.path.join(run4, "summary.json"))) if os.path.exists(os.path.join(run4, "summary.json")) else {}
    rep = [f["recovery"]["replayed_input"] for f in r4.get("faults", []) if f["kind"] == "kill"]
    if p3.returncode != 0 or p4.returncode != 1 or rep != [120]:
        problems.append(f"--weak rewind: without the expect exit {p3.returncode} (0), with expect replayed_input<=50 exit "
                        f"{p4.returncode} (1), replayed_input {rep} ([120]): {p4.stderr[-300:]}")
    # at-least-once: the kill's rows written again, traced through the writers
    p5, run5 = run_drill_text(binary, base, "alo", text.replace("set        mode=exactly-once", "set        mode=at-least-once"))
    d5 = sqlite3.connect(os.path.join(run5, "run.db"))
    traced = d5.execute("SELECT count(*) FROM anomaly WHERE bucket='duplicated' AND writers LIKE 'incarnation 1 %; incarnation 2 %'"
                        " AND seq NOT IN (SELECT seq FROM sent GROUP BY seq HAVING count(*) > 1)").fetchone()[0]
    vis = d5.execute("SELECT rows_visible FROM fault WHERE kind='kill'").fetchone()[0] or 0
    (f5,), = d5.execute("SELECT figures FROM recovery").fetchall()
    got = json.loads(f5)["rewritten_rows"]
    if p5.returncode != 1 or traced == 0 or got != max(traced, min(vis, json.loads(f5)["replayed_input"])):
        problems.append(f"at-least-once: exit {p5.returncode} (1), rewritten_rows {got}, traced duplicates {traced}, rows visible at the kill {vis}")
    # a figure of a drill with no fault: inconclusive
    nofault = "\n".join(l for l in text.splitlines() if not l.startswith(("kill ", "restart"))) + "\nexpect     recovery_s<=60\n"
    p6, run6 = run_drill_text(binary, base, "no-fault", nofault)
    if p6.returncode != 3 or "no fault struck" not in p6.stdout + p6.stderr + open(os.path.join(run6, "report.md")).read():
        problems.append(f"expect recovery_s on a drill without a fault exited {p6.returncode} (3), or did not say why: {p6.stderr[-300:]}")
    return result("recovery", problems, f"health: backlog_max {backlog}, batch_max_ms {durs[-1]}, restarts 1 as run.db says; "
                  f"the kill's recovery {measured:.3f} s by the target, replayed_input {want_replay}, as run.db and "
                  f"target.db say; expect below/above fails/passes; rewind caught (replayed 120); at-least-once rewrote {got} rows "
                  f"({traced} traced); no fault: inconclusive")


def test_operator(binary):
    """An `operator` step: under tmux (a terminal) the run shows the instruction and waits; Enter after 3 s is about 3 s
    of human time in the step and in the kill's recovery (operator_s, and recovery_s at least that); without a
    terminal, --operator ask waits for `streamdrill ack DIR`; --operator auto runs the step's command; without a
    terminal and without a command the run is inconclusive (exit 3) and says why."""
    import sqlite3
    problems = []
    base = fresh("operator")
    if not shutil.which("tmux"):
        return result("operator", ["tmux is not installed (scripts/deps.sh installs it)"], "")
    text = open(os.path.join(ROOT, "scenarios", "parcel-restart.drill")).read()
    bare = text.replace("\nrestart\n", "\noperator   \"page the owner, then restart from the runbook\" timeout=60s\nrestart\n", 1)
    drill = os.path.join(base, "op.drill")
    open(drill, "w").write(bare)
    out = os.path.join(base, "out")
    # a person, on a terminal (tmux), presses Enter 3 s after the instruction appears
    sess = f"sdop{os.getpid()}"
    done = os.path.join(base, "tmux.exit")
    cmd = f"{shlex.quote(binary)} run {shlex.quote(drill)} --out {shlex.quote(out)}; echo $? > {shlex.quote(done)}; sleep 60"
    subprocess.run(["tmux", "new-session", "-d", "-s", sess, "-x", "200", "-y", "50", cmd], check=True)
    try:
        shown = False
        for _ in range(240):
            pane = subprocess.run(["tmux", "capture-pane", "-p", "-t", sess], capture_output=True, text=True).stdout
            if "press Enter" in pane and "page the owner" in pane:
                shown = True
                break
            time.sleep(0.25)
        if not shown:
            problems.append("the instruction never appeared on the terminal")
        time.sleep(3)
        subprocess.run(["tmux", "send-keys", "-t", sess, "Enter"], check=True)
        for _ in range(240):
            if os.path.exists(done):
                break
            time.sleep(0.25)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", sess], capture_output=True)
    code = open(done).read().strip() if os.path.exists(done) else "none"
    run = os.path.join(out, "op")
    human = rec = None
    if code != "0":
        problems.append(f"under tmux the drill exited {code}, expected 0")
    else:
        db = sqlite3.connect(os.path.join(run, "run.db"))
        (detail, took), = db.execute("SELECT detail, ended_ms - started_ms FROM step WHERE text LIKE 'operator %'").fetchall()
        (figs,), = db.execute("SELECT figures FROM recovery WHERE kind='kill'").fetchall()
        figs = json.loads(figs)
        human, rec = figs["operator_s"], figs["recovery_s"]
        if "(Enter)" not in detail or not 2800 <= took <= 6000 or abs(human - took) > 5 or rec < human:
            problems.append(f"the step says {detail!r}, took {took} ms; operator_s {human} ms, recovery_s {rec} ms (expected about 3 s, "
                            "recovery at least the human part)")
        if not re.search(r"\| kill \| [0-9.]+ s \| target \| n/a \| n/a \| \d+ \| \d+ \| \d+ \| [3-5]\.\d{3} s \|", open(os.path.join(run, "report.md")).read()):
            problems.append("report.md's recovery table does not show the operator's seconds")
    # no terminal: --operator ask waits for `streamdrill ack DIR`
    out2 = os.path.join(base, "out-ack")
    p = subprocess.Popen([binary, "run", drill, "--out", out2, "--operator", "ask"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    acked = None
    for _ in range(240):
        time.sleep(0.25)
        if os.path.exists(os.path.join(out2, "op", "run.db")):
            db2 = sqlite3.connect(os.path.join(out2, "op", "run.db"))
            try:
                waiting = db2.execute("SELECT count(*) FROM step WHERE text LIKE 'operator %' AND status='running'").fetchone()[0]
            except sqlite3.Error:
                waiting = 0
            db2.close()
            if waiting:
                time.sleep(1)
                acked = subprocess.run([binary, "ack", os.path.join(out2, "op")], capture_output=True, text=True)
                break
    try:
        text2, _ = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        text2 = p.communicate()[0]
    if not acked or acked.returncode != 0 or p.returncode != 0 or "(streamdrill ack)" not in open(os.path.join(out2, "op", "report.md")).read():
        problems.append(f"--operator ask with streamdrill ack: ack {acked and acked.returncode}, run exit {p.returncode}: {text2[-300:]}")
    # --operator auto runs the command; no terminal and no command: inconclusive
    with_cmd = bare.replace('timeout=60s\n', 'timeout=60s command=touch {run}/paged\n', 1)
    p3, run3 = run_drill_text(binary, base, "auto", with_cmd)
    if p3.returncode != 0 or not os.path.exists(os.path.join(run3, "paged")):
        problems.append(f"--operator auto (no terminal) with command=touch exited {p3.returncode} (0) or did not run it: {p3.stderr[-300:]}")
    p4 = subprocess.run([binary, "run", drill, "--out", os.path.join(base, "out-none"), "--quiet"], stdin=subprocess.DEVNULL,
                        capture_output=True, text=True)
    if p4.returncode != 3 or "no person can confirm" not in p4.stderr:
        problems.append(f"no terminal, no command: exit {p4.returncode} (3), {p4.stderr[-300:]}")
    bad = subprocess.run([binary, "check", "/dev/stdin"], input=text.replace("\nrestart\n", "\noperator timeout=5s\n", 1),
                         capture_output=True, text=True)
    if bad.returncode != 2 or "operator: expected the instruction in quotes" not in bad.stderr:
        problems.append(f"an operator step without its instruction: exit {bad.returncode}, {bad.stderr[-200:]}")
    return result("operator", problems, f"Enter after 3 s under tmux: operator_s {human} ms inside recovery_s {rec} ms; "
                  "streamdrill ack answers --operator ask; --operator auto ran the command; no person, no command: inconclusive")


def test_runbook(binary):
    """The runbook of the parcel drill with a `version` line: the checkpoint, each incarnation's command and version
    (what refpipe --version prints, the SHA-256 of its binary, recomputed here), and the committed progress before
    and after each fault, recomputed here from run.db's batch and fault tables; the same section in report.md and
    export/runbook.md; without a `version` line it says so; a version command that fails is said, not fatal."""
    import hashlib
    import sqlite3
    problems = []
    base = fresh("runbook")
    refpipe = os.path.join(ROOT, "scenarios", "pipelines", "refpipe")
    text = open(os.path.join(ROOT, "scenarios", "parcel-restart.drill")).read()
    with_version = text.replace("\npipeline ", "\nversion    files={libexec}/refpipe {libexec}/refpipe --version\npipeline ", 1)
    p, run = run_drill_text(binary, base, "with-version", with_version)
    if p.returncode != 0:
        return result("runbook", [f"the parcel drill with a version line exited {p.returncode}: {p.stderr[-400:]}"], "")
    rb = subprocess.run([binary, "runbook", run], capture_output=True, text=True)
    if rb.returncode != 0:
        problems.append(f"streamdrill runbook exited {rb.returncode}: {rb.stderr}")
    out = rb.stdout
    digest = hashlib.sha256(open(refpipe, "rb").read()).hexdigest()
    want_version = f"refpipe 1 (the reference pipeline of streamdrill); {refpipe} sha256:{digest}"
    if out.count(want_version) != 2:
        problems.append(f"expected the version `{want_version}` for both incarnations, found:\n{out}")
    if f"| checkpoint | `{run}/checkpoint` |" not in out:
        problems.append("the checkpoint location is not in the runbook")
    db = sqlite3.connect(os.path.join(run, "run.db"))
    faults = db.execute("SELECT t_ms, kind FROM fault ORDER BY t_ms, id").fetchall()
    if [k for _, k in faults] != ["kill", "restart"]:
        problems.append(f"expected a kill and a restart in run.db, found {faults}")
    def commit(q, t):
        row = db.execute(q, (t,)).fetchone()
        return f"incarnation {row[0]}, batch {row[1]}, offsets {row[2]}" if row else None
    for t, kind in faults:
        before = commit("SELECT incarnation, id, offsets FROM batch WHERE commit_ms IS NOT NULL AND commit_ms<=? "
                        "ORDER BY commit_ms DESC, id DESC LIMIT 1", t)
        after = commit("SELECT incarnation, id, offsets FROM batch WHERE commit_ms IS NOT NULL AND commit_ms>? "
                       "ORDER BY commit_ms, id LIMIT 1", t)
        if not before or not after:
            problems.append(f"{kind}: run.db has no commit before or after it ({before}, {after})")
            continue
        if not re.search(rf"\| {kind} \| \d+ \| {re.escape(before)} \| {re.escape(after)} \|", out):
            problems.append(f"{kind}: expected before `{before}` and after `{after}` in:\n{out}")
    if kind == "restart" and not after.startswith("incarnation 2"):
        problems.append(f"the first commit after the restart is not incarnation 2's: {after}")
    # each incarnation: the newest commit before it started, its own last commit
    for n, started in db.execute("SELECT n, started_ms FROM incarnation ORDER BY n").fetchall():
        resumed = commit("SELECT incarnation, id, offsets FROM batch WHERE commit_ms IS NOT NULL AND commit_ms<=? "
                         "ORDER BY commit_ms DESC, id DESC LIMIT 1", started) or "no commit yet"
        reached = commit("SELECT incarnation, id, offsets FROM batch WHERE commit_ms IS NOT NULL AND incarnation=? "
                         "ORDER BY commit_ms DESC, id DESC LIMIT 1", n) or "none"
        if not re.search(rf"^\| {n} \| [0-9.]+s \| .* \| {re.escape(resumed)} \| {re.escape(reached)} \|$", out, re.M):
            problems.append(f"incarnation {n}: expected resumed from `{resumed}` and last commit `{reached}` in:\n{out}")
        if n == 1 and resumed != "no commit yet":
            problems.append(f"the first incarnation resumed from {resumed}")
    md = open(os.path.join(run, "report.md")).read()
    exp = open(os.path.join(run, "export", "runbook.md")).read() if os.path.exists(os.path.join(run, "export", "runbook.md")) else ""
    section = out[out.index("## Runbook"):]
    if section not in md:
        problems.append("report.md's Runbook section differs from `streamdrill runbook`")
    if section not in exp:
        problems.append("export/runbook.md differs from `streamdrill runbook`")
    # no version line: said; a version command that fails: said, the run goes on
    p, run2 = run_drill_text(binary, base, "without-version", text)
    out2 = subprocess.run([binary, "runbook", run2], capture_output=True, text=True).stdout
    if p.returncode != 0 or out2.count("not declared (`version` in the header)") != 2:
        problems.append(f"without a version line (exit {p.returncode}) the runbook should say so twice:\n{out2}")
    failing = text.replace("\npipeline ", "\nversion    false\npipeline ", 1)
    p, run3 = run_drill_text(binary, base, "failing-version", failing)
    out3 = subprocess.run([binary, "runbook", run3], capture_output=True, text=True).stdout
    if p.returncode != 0 or "(false: failed)" not in out3:
        problems.append(f"a failing version command should be said and the run pass (exit {p.returncode}):\n{out3}")
    return result("runbook", problems, f"checkpoint, both incarnations' version (refpipe --version and sha256 {digest[:12]}...), "
                  f"each incarnation's resume point and last commit, and the commits around the kill and the restart as run.db has "
                  "them; report.md and export/runbook.md the "
                  "same; a missing and a failing version said")


HOSTILE_HEAD = """source     kafka topic=hostile partitions=1
events     parcel-scans seed=3
contract   id=event_id time=event_time watermark=10m late=drop malformed=quarantine
sink       sqlite db={run}/target.db query="SELECT event_id, 'incarnation ' || sd_incarnation, sd_written_ms FROM bronze"
pipeline   {libexec}/refpipe --brokers {brokers} --topic {topic} --db {run}/target.db --group {group}
"""


def test_hostile_checkpoints(binary):
    """A checkpoint folder filled with what no checkpoint should hold, read by progress spark and progress flink
    while the run goes: a FIFO where offsets/N or _metadata should be, a link to /dev/zero, an offsets file past its
    size cap, a batch id past 10^15, a completed Flink checkpoint whose id would overflow the next interval's,
    commits/N far past the others (a gap, no damage), a folder that appears and vanishes, and `version files=`
    naming a FIFO. Every case ends within its timeout and none crashes; a damaged checkpoint makes the run
    inconclusive (checkpoint-damaged) naming the file."""
    import threading
    problems, seen = [], []
    base = fresh("hostile-checkpoints")
    steps = "start      timeout=10s\nproduce    20\nawait      quiescent 1s timeout=10s\n"

    def case(name, progress, make, want_exit, want_text, version=""):
        chk = os.path.join(base, "chk-" + name)
        os.makedirs(chk)
        stop = make(chk)
        drill = os.path.join(base, name + ".drill")
        open(drill, "w").write(HOSTILE_HEAD + version + f"progress   {progress} checkpoint={chk}\n" + steps)
        t0 = time.time()
        try:
            p = subprocess.run([binary, "run", drill, "--out", os.path.join(base, "out"), "--quiet"], capture_output=True, text=True,
                               timeout=90, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            problems.append(f"{name}: still running after 90 s")
            return None
        finally:
            if stop:
                stop.set()
        took = time.time() - t0
        run = os.path.join(base, "out", name)
        path = os.path.join(run, "summary.json")
        s = json.load(open(path)) if os.path.exists(path) else {}
        said = (s.get("message") or "") + p.stderr
        if p.returncode not in want_exit or (want_text and want_text not in said):
            problems.append(f"{name}: exit {p.returncode} (want {want_exit}), reason {s.get('reason')!r}, message {s.get('message')!r}; "
                            f"expected {want_text!r}; stderr {p.stderr[-300:]!r}")
        if want_text and s.get("reason") != "checkpoint-damaged":
            problems.append(f"{name}: reason {s.get('reason')!r}, not checkpoint-damaged")
        if os.path.exists(os.path.join(run, "run.db-wal")) and os.path.getsize(os.path.join(run, "run.db-wal")) > 16 << 20:
            problems.append(f"{name}: run.db's WAL grew to {os.path.getsize(os.path.join(run, 'run.db-wal')) >> 20} MB")
        seen.append(f"{name} {took:.0f}s")
        return run

    def at(chk, rel, text=None, fifo=False, link=None, size=None):
        path = os.path.join(chk, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if fifo:
            os.mkfifo(path)
        elif link:
            os.symlink(link, path)
        elif size is not None:
            with open(path, "wb") as f:
                f.truncate(size)
        else:
            open(path, "w").write(text)

    def flicker(chk):
        stop = threading.Event()

        def loop():
            i = 0
            while not stop.is_set():
                try:
                    at(chk, f"offsets/{i}", 'v1\n{}\n{"hostile":{"0":1}}\n')
                    shutil.rmtree(os.path.join(chk, "offsets"), ignore_errors=True)
                except OSError:
                    pass
                i += 1
        threading.Thread(target=loop, daemon=True).start()
        return stop

    case("spark-fifo", "spark", lambda c: at(c, "offsets/0", fifo=True), [3], "offsets/0: a FIFO, not a regular file")
    case("spark-dev-zero", "spark", lambda c: at(c, "offsets/0", link="/dev/zero"), [3], "offsets/0: a symbolic link")
    case("spark-too-big", "spark", lambda c: (at(c, "offsets/0", size=5 << 20), at(c, "offsets/1", 'v1\n{}\n{"hostile":{"0":0}}\n'))[0],
         [3], "5242880 bytes, more than the 4194304")
    case("spark-huge-id", "spark", lambda c: at(c, "commits/99999999999999999999", "v1\n{}\n"), [3], "a batch id past 10^15")
    def far_commit(chk):  # commits/100000000 written while the run polls: crossed in one step
        at(chk, "offsets/0", 'v1\n{}\n{"hostile":{"0":0}}\n')
        at(chk, "commits/0", "v1\n{}\n")
        stop = threading.Event()
        threading.Thread(target=lambda: stop.wait(0.3) or at(chk, "commits/100000000", "v1\n{}\n"), daemon=True).start()
        return stop
    case("spark-far-commit", "spark", far_commit, [0], None)
    case("flink-overflow", "flink", lambda c: at(c, "job/chk-9223372036854775807/_metadata", "x"), [3],
         "chk-9223372036854775807: a checkpoint id past 10^15")
    case("flink-fifo", "flink", lambda c: at(c, "job/chk-1/_metadata", fifo=True), [3], "_metadata: a FIFO, not a regular file")
    # a checkpoint that never stops changing: no quiescence, or a pass; never a crash or a hang
    case("spark-flicker", "spark", flicker, [0, 3], None)
    fifo = os.path.join(base, "version.fifo")
    os.mkfifo(fifo)
    run = case("version-fifo", "spark", lambda c: None, [0], None, version=f"version    files={fifo}\n")
    if run:
        rb = subprocess.run([binary, "runbook", run], capture_output=True, text=True, timeout=30).stdout
        if "a FIFO, not a regular file" not in rb:
            problems.append(f"version files= a FIFO: the runbook does not say why it was not read:\n{rb[-600:]}")
    return result("hostile-checkpoints", problems, "every case ended in time, each damaged one named: " + ", ".join(seen))


def test_control_characters(binary):
    """Text from outside the harness with terminal escapes in it: a version program printing OSC 0, ESC[2J, OSC 8
    hyperlinks, BEL and C1's U+009B, and a pipeline that writes the same to stderr as it dies. None of those bytes
    reach streamdrill's stderr, report.md, junit.xml, summary.json, export/runbook.md, the export CSVs or
    `streamdrill runbook`'s stdout; each is shown as \\xHH."""
    problems = []
    base = fresh("control-characters")
    evil = '"\\033]0;pwned\\007\\033[2J\\033]8;;http://x\\033\\\\link\\033]8;;\\033\\\\ \\302\\233 end"'
    text = open(os.path.join(ROOT, "scenarios", "parcel-restart.drill")).read()
    dies = ('python3 -c "import sys; sys.stderr.write(\'Exception: \\x1b]0;pwned\\x07\\x1b[2J\\xc2\\x9b boom\\n\'); '
            'sys.exit(3)"')
    drills = {
        "version": text.replace("\npipeline ", f"\nversion    /usr/bin/printf {evil}\npipeline ", 1),
        "crash": re.sub(r"\npipeline .*", lambda m: "\npipeline   " + dies, text),
    }
    bad = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")
    for name, body in drills.items():
        drill = os.path.join(base, name + ".drill")
        open(drill, "w").write(body)
        p = subprocess.run([binary, "run", drill, "--out", os.path.join(base, "out")], capture_output=True, stdin=subprocess.DEVNULL)
        run = os.path.join(base, "out", name)
        outputs = {"stderr": p.stderr, "runbook stdout": subprocess.run([binary, "runbook", run], capture_output=True).stdout}
        for f in ["report.md", "summary.json", "junit.xml"] + [os.path.join("export", x) for x in os.listdir(os.path.join(run, "export"))]:
            outputs[f] = open(os.path.join(run, f), "rb").read()
        for what, data in outputs.items():
            m = bad.search(data)
            if m:
                problems.append(f"{name}: {what} carries the control character {m.group(0)!r}: {data[max(0, m.start() - 60):m.end() + 20]!r}")
        if name == "version" and (p.returncode != 0 or not re.search(rb"x1B\\*\]0;pwned", outputs["runbook stdout"])):
            problems.append(f"version: exit {p.returncode} (0), or the runbook does not show the version escaped")
        if name == "crash" and (p.returncode != 3 or b"\\x1B]0;pwned\\x07" not in p.stderr):
            problems.append(f"crash: exit {p.returncode} (3), or stderr does not quote the pipeline's last line escaped: {p.stderr[-400:]!r}")
    return result("control-characters", problems, "escapes from a version program shown as \\xHH on stderr, in report.md, "
                  "summary.json, junit.xml, the export and `streamdrill runbook`")


def test_hostile_paths(binary):
    """Run folders and working folders whose paths hold quotes, ;, $(), backticks, newlines and non-UTF-8 bytes:
    the charts are drawn and nothing in a path is ever run (gnuplot, or any program the harness starts)."""
    base = fresh("hostile-paths")
    drill = os.path.join(ROOT, "scenarios", "parcel-restart.drill")
    names = [b"q';system('touch PWNED1');'", b'd";system("touch PWNED2");"', b"s;touch PWNED3;", b"c$(touch PWNED4)",
             b"b`touch PWNED5`", b"n\nsystem('touch PWNED6')\n", b"o'brien \xff\xfe"]
    problems = []
    for name in names:
        for where in ("out", "cwd"):
            top = os.path.join(os.fsencode(base), where.encode() + b"-" + name)
            os.makedirs(top)
            out = os.path.join(top, b"out") if where == "out" else b"out"
            p = subprocess.run([os.fsencode(binary), b"run", os.fsencode(drill), b"--out", out, b"--quiet"], capture_output=True,
                               cwd=top if where == "cwd" else os.fsencode(base))
            charts = os.path.join(top, b"out", b"parcel-restart", b"charts")
            made = [c for c in (b"timeline.svg", b"timeline.png", b"latency.svg") if os.path.exists(os.path.join(charts, c))]
            if p.returncode != 0 or b"timeline.svg" not in made:
                problems.append(f"{where} {name!r}: exit {p.returncode}, charts {made}, {p.stderr.decode(errors='replace').strip()[-200:]!r}")
    pwned = [os.path.join(d, f) for d, _, fs in os.walk(os.fsencode(base)) for f in fs if f.startswith(b"PWNED")]
    pwned += [f for f in glob.glob("PWNED*") + glob.glob(os.path.join(ROOT, "PWNED*"))]
    if pwned:
        problems.append(f"a path ran a command: {pwned}")
    return result("hostile-paths", problems, f"{len(names)} hostile names as run folder and as working folder: charts drawn, nothing run")


def test_command_bounds(binary):
    """A sink command is bounded like the pipeline: its timeout covers a command that closed its output and lingers,
    SIGINT stops a run whatever it reads, its output has a cap, and nothing it started outlives the run."""
    base = fresh("command-bounds")
    problems = []

    def drill(name, sink):
        path = os.path.join(base, name + ".drill")
        open(path, "w").write(f"source kafka topic=t partitions=1\nsink command {sink}\nproduce 5\nawait quiescent 1s timeout=5s\n")
        return path

    def run(path, **kw):
        t0 = time.time()
        p = subprocess.run([binary, "run", path, "--out", os.path.join(base, "out"), "--quiet"], capture_output=True, text=True, **kw)
        return p, time.time() - t0

    # 1. closes its stdout, then lingers 30 s: each read ends at its 2 s timeout
    p, took = run(drill("linger", 'timeout=2s sh -c "exec >&-; sleep 30"'))
    if p.returncode != 3 or took > 15 or "timed out after 2s" not in p.stderr:
        problems.append(f"a command that closed its output and lingers: exit {p.returncode} in {took:.1f}s, {p.stderr.strip()[-200:]!r}")
    # 2. a command that never ends, a 10-minute timeout: SIGINT stops the run within 3 s
    path = drill("forever", "timeout=10m sleep 600")
    proc = subprocess.Popen([binary, "run", path, "--out", os.path.join(base, "out"), "--quiet"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    t0 = time.time()
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=10)
        took = time.time() - t0
        if proc.returncode != 130 or took > 3:
            problems.append(f"SIGINT while a sink command runs: exit {proc.returncode} after {took:.1f}s")
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        problems.append("SIGINT while a sink command runs: still running 10 s later")
    # 3. output without end is capped: the sink is unreadable with the cause, no abort
    p, took = run(drill("flood", "max-output=10M yes row"))
    if p.returncode != 3 or "printed more than 10000000 bytes" not in p.stderr:
        problems.append(f"endless output: exit {p.returncode}, {p.stderr.strip()[-200:]!r}")
    # 4. a child that left the command's process group (setsid) does not outlive the run
    p, took = run(drill("orphan", 'timeout=5s sh -c "setsid sleep 317 </dev/null >/dev/null 2>&1 &"'))
    time.sleep(0.5)
    left = pids_with("sleep 317")
    if left:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        problems.append(f"a sink command's setsid child outlived the run: {left}")
    return result("command-bounds", problems, "a lingering command ends at its timeout, SIGINT stops a read at once, output capped, no orphan left")


def test_descriptors(binary):
    """A program the harness starts holds none of the harness's descriptors (broker sockets, the ledger, logs):
    the pipeline of the second incarnation and a sink command each list their open descriptors."""
    _, run_dir = run_drill_text(binary, fresh("descriptors"), "fds",
                                "source kafka topic=t partitions=1\n"
                                "sink command sh -c \"ls /proc/self/fd > $0.sink\" {run}/fds\n"
                                "pipeline sh -c \"ls /proc/self/fd > $0.$STREAMDRILL_INCARNATION; exec sleep 30\" {run}/fds\n"
                                "start timeout=2s\nproduce 5\nrestart timeout=2s optional\nawait quiescent 500ms timeout=3s\n")
    problems = []
    for name in ("fds.2", "fds.sink"):
        path = os.path.join(run_dir, name)
        if not os.path.exists(path):
            problems.append(f"{name} was not written")
            continue
        fds = sorted(int(x) for x in open(path).read().split())
        # 0, 1, 2 and the one ls opened to list them
        if len(fds) > 4:
            problems.append(f"{name}: descriptors {fds}")
    return result("descriptors", problems, "the second incarnation and a sink command hold only stdin, stdout, stderr")


def test_log_cap(binary):
    """A pipeline that prints without end makes no unbounded run folder: each log keeps its head and tail under
    `logs max=`, says how much was cut, and the markers in the cut part still count."""
    p, run_dir = run_drill_text(binary, fresh("log-cap"), "loud",
                                "source kafka topic=t partitions=1\nsink jsonl path={run}/none.jsonl\nlogs max=1M\n"
                                # stderr written in full before the marker: the run cannot end before it was
                                "pipeline sh -c \"yes 'an error' | head -c 30000000 >&2; yes 'a line of the pipeline' | head -c 40000000; "
                                "echo SD-READY; echo last-line; exec sleep 30\"\n"
                                "start timeout=60s\nawait quiescent 500ms timeout=3s\n")
    logs = os.path.join(run_dir, "logs")
    problems = []
    if "SD-READY" in p.stderr or not os.path.isdir(logs):
        problems.append(f"no run: exit {p.returncode}, {p.stderr.strip()[-200:]!r}")
    else:
        for name in ("pipeline-1.stdout.log", "pipeline-1.stderr.log"):
            path = os.path.join(logs, name)
            size = os.path.getsize(path)
            text = open(path, errors="replace").read()
            m = re.search(r"streamdrill: +(\d+) bytes of this log were cut here", text)
            if size > 1100000 or not m or int(m.group(1)) < 20000000:
                problems.append(f"{name}: {size} bytes, cut line {m.group(0) if m else None!r}")
            if name.endswith("stdout.log") and "last-line" not in text[-4096:]:
                problems.append(f"{name}: the last line was not kept")
        if "did not become ready" in p.stderr or "not ready" in p.stderr:
            problems.append("the SD-READY marker after 40 MB of output was not seen")
    return result("log-cap", problems, "40 MB of stdout and 30 MB of stderr kept as 1 MB each, the cut counted, the marker past it seen")


def test_report_running(binary):
    """`report` on a run still in progress says so and writes nothing; the reproduce line names the broker it ran on."""
    base = fresh("report-running")
    drill = os.path.join(base, "slow.drill")
    open(drill, "w").write("source kafka topic=t partitions=1\nsink jsonl path={run}/none.jsonl\nproduce 5\nsleep 6s\n")
    out = os.path.join(base, "out")
    proc = subprocess.Popen([binary, "run", drill, "--out", out, "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run_dir = os.path.join(out, "slow")
    problems = []
    for _ in range(100):
        if os.path.exists(os.path.join(run_dir, "run.db")):
            break
        time.sleep(0.05)
    time.sleep(1)
    before = sorted(os.listdir(run_dir))
    p = subprocess.run([binary, "report", run_dir], capture_output=True, text=True)
    after = sorted(os.listdir(run_dir))
    if p.returncode != 2 or "still in progress" not in p.stderr or before != after:
        problems.append(f"report on a running run: exit {p.returncode}, {p.stderr.strip()[-160:]!r}, files {before} -> {after}")
    proc.communicate(timeout=60)
    p = subprocess.run([binary, "report", run_dir], capture_output=True, text=True)
    if p.returncode != 0 or "rebuilt" not in p.stdout:
        problems.append(f"report after the run ended: exit {p.returncode}, {p.stderr.strip()[-160:]!r}")
    return result("report-running", problems, "a running run's reports left alone (exit 2, said why), rebuilt once it ended")


def test_disk_full(binary):
    """A run whose folder fills up ends with a clear error naming the cause, never "(null)"."""
    mnt = os.path.join(OUT, "disk-full")
    os.makedirs(mnt, exist_ok=True)
    subprocess.run(["umount", mnt], capture_output=True)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=260k", "tmpfs", mnt], capture_output=True, text=True)
    if m.returncode:
        # mounting needs root (CI is root): without it the check cannot run, and says so as a failure
        print(f"FAIL disk-full: cannot mount a small tmpfs to fill: {m.stderr.strip()}")
        return False
    try:
        p = subprocess.run([binary, "run", os.path.join(ROOT, "tests", "scenarios", "pause-resume.drill"), "--out",
                            os.path.join(mnt, "out"), "--quiet"], capture_output=True, text=True, timeout=300)
    finally:
        subprocess.run(["umount", mnt], capture_output=True)
    problems = []
    if p.returncode in (0, 1):
        problems.append(f"exit {p.returncode}: a run that could not write its folder gave a verdict")
    if "(null)" in p.stderr:
        problems.append("the error says (null)")
    if "full" not in p.stderr and "No space left" not in p.stderr:
        problems.append("the error does not name the full disk")
    if problems:
        print("FAIL disk-full: " + "; ".join(problems) + f"; stderr: {p.stderr.strip()[-300:]!r}")
        return False
    said = next((l for l in p.stderr.splitlines() if "full" in l or "No space" in l), "")
    print(f"ok   disk-full: exit {p.returncode}, the cause named: {said.strip()[-110:]}")
    return True


def test_edges(binary):
    """Bad command lines and poor machines: a clear error and a distinct exit code before anything is written."""
    base = os.path.join(OUT, "edges")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    drill = os.path.join(ROOT, "tests", "scenarios", "pause-resume.drill")
    out = os.path.join(base, "out")
    problems = []

    def expect(label, p, code, text):
        if p.returncode != code or text not in p.stderr:
            problems.append(f"{label}: exit {p.returncode} (expected {code}), stderr {p.stderr.strip()[-160:]!r}")

    expect("--seed 99999999999999999999", subprocess.run([binary, "run", drill, "--out", out, "--seed", "99999999999999999999"],
                                                         capture_output=True, text=True), 2, "expected a whole number from 0")
    expect("--summary to nowhere", subprocess.run([binary, "run", drill, "--out", out, "--summary", "/proc/nowhere/sum.md"],
                                                  capture_output=True, text=True), 2, "No such file or directory")
    expect("ulimit -n 14", subprocess.run(["sh", "-c", 'ulimit -n 14 && exec "$0" run "$1" --out "$2"', binary, drill, out],
                                          capture_output=True, text=True), 4, "open-file limit is 14")
    # (under AddressSanitizer, make asan, the shadow memory alone needs terabytes of address space)
    if "ASAN_OPTIONS" not in os.environ:
        expect("ulimit -v 50000", subprocess.run(["sh", "-c", 'ulimit -v 50000 && exec "$0" run "$1" --out "$2"', binary, drill, out],
                                                 capture_output=True, text=True), 4, "address-space limit")
    if os.path.exists(out):
        problems.append(f"{out} was written by a run that was refused")
    # --proxy on a port in use: a usage error naming the port, not an inconclusive run
    import socket
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    expect("--proxy on a port in use", subprocess.run([binary, "run", drill, "--out", os.path.join(base, "proxy-out"), "--proxy",
                                                       f"127.0.0.1:{port}=127.0.0.1:9"], capture_output=True, text=True),
           2, f"listen on 127.0.0.1:{port}")
    busy.close()
    # R-03: a 64 KiB variable used 20,000 times is refused at its line, in bounded memory
    big = os.path.join(base, "expand.drill")
    with open(big, "w") as f:
        f.write("set v=" + "x" * 65536 + "\nsource kafka topic=t\n")
        for i in range(20000):
            f.write(f"env E{i}={{v}}\n")
    rss0 = __import__("resource").getrusage(__import__("resource").RUSAGE_CHILDREN).ru_maxrss
    p = subprocess.run([binary, "check", big], capture_output=True, text=True)
    rss = __import__("resource").getrusage(__import__("resource").RUSAGE_CHILDREN).ru_maxrss
    expect("a drill expanding to gigabytes", p, 2, "expand to more than 16 MB")
    if not re.search(r"expand\.drill:\d+:\d+:", p.stderr):
        problems.append(f"the expansion error names no file:line: {p.stderr.strip()[-160:]!r}")
    if rss > 400000 and rss > rss0:
        problems.append(f"check used {rss // 1024} MB on the expanding drill")
    notrun = os.path.join(base, "notrun")
    os.makedirs(notrun)
    open(os.path.join(notrun, "run.db"), "w").write("not a database")
    expect("report on a file that is no run.db", subprocess.run([binary, "report", notrun], capture_output=True, text=True), 2,
           "is not the run.db of a streamdrill run")
    if os.listdir(notrun) != ["run.db"]:
        problems.append(f"report wrote into a folder that holds no run: {os.listdir(notrun)}")
    if problems:
        print("FAIL edges: " + "; ".join(problems))
        return False
    v = "" if "ASAN_OPTIONS" in os.environ else " ulimit -v 50000,"
    print(f"ok   edges: seed overflow, unwritable --summary, ulimit -n 14,{v} a drill expanding to gigabytes and a fake run.db each refused with the cause")
    return True


EXPLORE_HEADER = os.path.join(ROOT, "scenarios", "explore", "refpipe.drill")


def explore(binary, out, *args):
    t0 = time.time()
    p = subprocess.run([binary, "explore", EXPLORE_HEADER, "--out", out, "--quiet", *args], capture_output=True, text=True,
                       errors="backslashreplace")
    doc = None
    path = os.path.join(out, "refpipe-explore", "explore.json")
    if os.path.exists(path):
        doc = json.load(open(path))
    return p, doc, time.time() - t0


def check_minimal(binary, fail, base, reruns, problems, label, need=None):
    """A minimal drill: at most 3 fault steps, and `streamdrill run` fails it
    with the same signature at least `need` of `reruns` times (every time
    unless told), and never any other way: a rerun that does not fail with
    the signature passes. A minimal drill is a timing race confirmed inside
    explore; a run on its own can miss it (the fault lands a few rows
    earlier), which is a pass, never a different failure."""
    need = reruns if need is None else need
    if fail["faults"] > 3:
        problems.append(f"{label}: the minimal drill has {fail['faults']} fault steps")
    drill = os.path.join(base, "refpipe-explore", fail["minimal"])
    failed, other = 0, []
    for i in range(reruns):
        out = os.path.join(base, f"rerun-{i}")
        p = subprocess.run([binary, "run", drill, "--out", out, "--quiet"], capture_output=True, text=True)
        doc = json.load(open(os.path.join(out, "minimal", "summary.json")))
        sig = ",".join(sorted({c["name"] for c in doc["checks"] if not c["pass"]}))
        if p.returncode == 1 and sig == fail["signature"]:
            failed += 1
        elif p.returncode != 0:
            other.append(f"exit {p.returncode} [{sig}]")
    if failed < need or other:
        problems.append(f"{label}: the minimal drill failed {failed} of {reruns} reruns with [{fail['signature']}] "
                        f"(at least {need} expected){', otherwise ' + ', '.join(other) if other else ''}")
    return failed


def test_explore(binary):
    """explore: schedules reproducible byte for byte; the correct refpipe survives; at-least-once is found and shrunk."""
    base = os.path.join(OUT, "explore")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    problems = []
    t0 = time.time()
    # 1. the same seed, the same schedules: printed twice, and as a run writes them
    a = subprocess.run([binary, "explore", EXPLORE_HEADER, "--seed", "7", "--runs", "12", "--print"], capture_output=True, text=True)
    b = subprocess.run([binary, "explore", EXPLORE_HEADER, "--seed", "7", "--runs", "12", "--print"], capture_output=True, text=True)
    c = subprocess.run([binary, "explore", EXPLORE_HEADER, "--seed", "8", "--runs", "12", "--print"], capture_output=True, text=True)
    docs = a.stdout.split("\f\n")
    if a.returncode or a.stdout != b.stdout or len(docs) != 12:
        problems.append(f"--print twice: exit {a.returncode}, same bytes {a.stdout == b.stdout}, {len(docs)} schedules")
    if a.stdout == c.stdout:
        problems.append("seeds 7 and 8 printed the same schedules")
    # 2. the correct pipeline: no failure, nothing inconclusive (its runs are the schedules printed above)
    p, doc, secs = explore(binary, os.path.join(base, "ok"), "--seed", "7", "--runs", "4", "--jobs", "2")
    if p.returncode != 0 or not doc or doc["counts"]["passed"] != 4:
        problems.append(f"correct refpipe: exit {p.returncode}, {doc and doc['counts']}, {p.stderr.strip()[-300:]!r}")
    for i in range(1, 5):
        path = os.path.join(base, "ok", "refpipe-explore", "runs", f"run-{i:04d}.drill")
        if not os.path.exists(path) or open(path).read() != docs[i - 1]:
            problems.append(f"run {i}'s drill is not the schedule --print gave")
    # 3. at-least-once, not told which: found, shrunk, and the minimal drill fails every rerun
    alo = os.path.join(base, "alo")
    p, doc, secs = explore(binary, alo, "--seed", "1", "--runs", "10", "--jobs", "2", "--set", "mode=at-least-once")
    fails = doc["failures"] if doc else []
    if p.returncode != 1 or not fails or "duplicated" not in fails[0]["signature"]:
        problems.append(f"at-least-once: exit {p.returncode}, failures {[f['signature'] for f in fails]}, {p.stderr.strip()[-300:]!r}")
    else:
        f = fails[0]
        if f["confirm_failed"] != f["confirm_runs"] or f["confirm_runs"] != 10:
            problems.append(f"at-least-once: confirmed {f['confirm_failed']} of {f['confirm_runs']}")
        reran = check_minimal(binary, f, alo, 3, problems, "at-least-once", need=2)
        for name in ("explore.md", "explore.html"):
            if not os.path.exists(os.path.join(alo, "refpipe-explore", name)):
                problems.append(f"no {name}")
    # 4. bad input: a scenario with no pipeline, a folder explore did not write
    bad = os.path.join(base, "nopipe.drill")
    open(bad, "w").write("source kafka topic=t\nsink jsonl path={run}/o.jsonl\n")
    p = subprocess.run([binary, "explore", bad, "--out", base], capture_output=True, text=True)
    if p.returncode != 2 or "no `pipeline` line" not in p.stderr:
        problems.append(f"no pipeline: exit {p.returncode}, {p.stderr.strip()[-200:]!r}")
    foreign = os.path.join(base, "foreign", "refpipe-explore")
    os.makedirs(foreign)
    open(os.path.join(foreign, "mine.txt"), "w").write("mine")
    p, doc, secs = explore(binary, os.path.join(base, "foreign"), "--runs", "1")
    if p.returncode != 2 or "refusing to replace it" not in p.stderr or os.listdir(foreign) != ["mine.txt"]:
        problems.append(f"a foreign folder: exit {p.returncode}, left {os.listdir(foreign)}")
    # 5. explore killed (SIGINT: exit 130, the report says so; SIGKILL: no run and no pipeline outlives it)
    for sig in (signal.SIGINT, signal.SIGKILL):
        out = os.path.join(base, f"sig{int(sig)}")
        proc = subprocess.Popen([binary, "explore", EXPLORE_HEADER, "--out", out, "--runs", "10", "--jobs", "2", "--quiet"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(3)
        proc.send_signal(sig)
        rc = proc.wait(timeout=60)
        deadline = time.time() + 15
        while pids_with(out) and time.time() < deadline:
            time.sleep(0.2)
        left = pids_with(out)
        if left:
            problems.append(f"{sig.name}: processes outlived explore: {left}")
        if sig == signal.SIGINT:
            doc = json.load(open(os.path.join(out, "refpipe-explore", "explore.json")))
            if rc != 130 or doc["ended"] != "interrupted":
                problems.append(f"SIGINT: exit {rc}, ended {doc['ended']!r}")
    # 6. a pipeline that never starts: every run inconclusive, exit 3
    dead = os.path.join(base, "dead.drill")
    open(dead, "w").write("source kafka topic=t\nsink jsonl path={run}/o.jsonl\npipeline /bin/false\n")
    p = subprocess.run([binary, "explore", dead, "--out", base, "--runs", "3", "--quiet"], capture_output=True, text=True)
    doc = json.load(open(os.path.join(base, "dead-explore", "explore.json"))) if p.returncode != 2 else None
    if p.returncode != 3 or not doc or doc["counts"]["inconclusive"] != 3:
        problems.append(f"a pipeline that never starts: exit {p.returncode} (expected 3), {doc and doc['counts']}")
    # 7. --keep-steps: the file's steps first (one start), its expect lines last, and `check` accepts the result
    p = subprocess.run([binary, "explore", os.path.join(ROOT, "scenarios", "parcel-restart.drill"), "--keep-steps", "--seed", "3",
                        "--runs", "1", "--print"], capture_output=True, text=True)
    kept = os.path.join(base, "kept.drill")
    open(kept, "w").write(p.stdout)
    steps = [l for l in p.stdout.splitlines() if l and not l.startswith("#")]
    chk = subprocess.run([binary, "check", kept], capture_output=True, text=True)
    if (p.returncode or chk.returncode or steps.count("start") != 1 or not steps[-1].startswith("expect")
            or "kill       mid-batch signal=KILL" not in p.stdout):
        problems.append(f"--keep-steps: exit {p.returncode}, check {chk.returncode} {chk.stderr.strip()[-200:]!r}, "
                        f"{steps.count('start')} starts, last step {steps[-1] if steps else None!r}")
    if problems:
        print("FAIL explore: " + "; ".join(problems))
        return False
    f = fails[0]
    print(f"ok   explore: schedules byte for byte; correct refpipe 4 of 4 passed; at-least-once found [{f['signature']}] in run "
          f"{f['first_run']}, shrunk {f['actions_before']} -> {f['actions']} actions ({f['faults']} faults), failed 10 of 10 "
          f"confirmations and {reran} of 3 reruns; no pipeline and a foreign folder refused, SIGINT (exit 130) and SIGKILL leave no process, a dead pipeline inconclusive (exit 3), "
          f"--keep-steps ({time.time() - t0:.0f}s)")
    return True


# refpipe's weak modes the explore matrix must find from a header with no
# steps (tests/long: make test-real-long), and the arguments that turn each on
EXPLORE_WEAK = [("at-least-once", ["--set", "mode=at-least-once"]), ("at-most-once", ["--set", "mode=at-most-once"])] + [
    (w, ["--set", f"weak={w}"]) for w in ("drop-out-of-order", "no-watermark", "strictly-after-max", "drop-overflow",
                                          "per-key-limit", "strict-schema", "crash-on-bad-type", "lenient-json", "crash-on-null",
                                          "need-key", "commit-on-term", "late-inclusive", "fatal-errors", "hostile-ids")]


def test_explore_interrupted(binary):
    """explore interrupted while it shrinks says so (ended: interrupted), and claims no confirmation it did not run."""
    out = os.path.join(OUT, "explore-interrupted")
    shutil.rmtree(out, ignore_errors=True)
    proc = subprocess.Popen([binary, "explore", EXPLORE_HEADER, "--out", out, "--seed", "1", "--runs", "10", "--jobs", "2", "--set",
                             "mode=at-least-once"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="backslashreplace")
    problems = []
    deadline = time.time() + 240
    while time.time() < deadline and not glob.glob(os.path.join(out, "refpipe-explore", "shrink-1", "*")):
        time.sleep(0.2)
    time.sleep(2)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        problems.append("explore still running 60 s after SIGINT")
    path = os.path.join(out, "refpipe-explore", "explore.json")
    doc = json.load(open(path)) if os.path.exists(path) else {}
    if proc.returncode != 130 or doc.get("ended") != "interrupted":
        problems.append(f"exit {proc.returncode}, ended {doc.get('ended')!r}")
    if "fails 0 of 0" in err:
        problems.append("it claims a confirmation of 0 of 0 reruns")
    if problems:
        problems.append(f"stderr {err.strip()[-300:]!r}")
    return result("explore-interrupted", problems, "SIGINT while shrinking ends with 130, explore.json says interrupted, no unconfirmed claim")


def test_explore_long(binary, only):
    """Each weak mode found within a 10-minute budget and shrunk to at most 3
    fault steps that fail 5 of 5 reruns; the correct refpipe 50 runs clean."""
    base = os.path.join(OUT, "explore-long")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    ok = True
    rows = []
    for name, args in EXPLORE_WEAK:
        if only and only not in "explore-" + name:
            continue
        out = os.path.join(base, name)
        problems = []
        p, doc, secs = explore(binary, out, "--seed", "1", "--budget", "10m", "--jobs", "2", *args)
        fails = doc["failures"] if doc else []
        if p.returncode != 1 or not fails:
            problems.append(f"not found: exit {p.returncode}, {doc and doc['counts']}")
        else:
            f = fails[0]
            found = next(r for r in doc["runs"] if r["run"] == f["first_run"])
            check_minimal(binary, f, out, 5, problems, name)
            rows.append(f"| {name} | [{f['signature']}] | {f['first_run']} | {f['actions_before']} -> {f['actions']} | "
                        f"{f['faults']} | {f['confirm_failed']}/{f['confirm_runs']} | {doc['seconds']['exploring']:.0f} | "
                        f"{doc['seconds']['shrinking']:.0f} |")
        print(("FAIL" if problems else "ok  ") + f" explore-{name}: " + ("; ".join(problems) or rows[-1]) + f" ({secs:.0f}s)")
        ok &= not problems
    if not only or only in "explore-correct":
        p, doc, secs = explore(binary, os.path.join(base, "correct"), "--seed", "2", "--runs", "50", "--jobs", "2")
        good = p.returncode == 0 and doc and doc["counts"]["passed"] == 50
        print(("ok  " if good else "FAIL") + f" explore-correct: 50 runs, {doc and doc['counts']} ({secs:.0f}s)")
        ok &= bool(good)
    if rows:
        print("| weak mode | signature | found in run | actions | faults | confirmed | exploring s | shrinking s |\n"
              "|---|---|---:|---|---:|---|---:|---:|\n" + "\n".join(rows))
    return ok


def test_explore_real(binary):
    """explore on the real broker (no network faults there): the correct
    refpipe 10 runs clean, at-least-once found and shrunk."""
    base = os.path.join(OUT, "explore-real")
    shutil.rmtree(base, ignore_errors=True)
    problems = []
    p, doc, secs = explore(binary, os.path.join(base, "ok"), "--seed", "4", "--runs", "10", "--jobs", "2", "--brokers", REAL["brokers"])
    if p.returncode != 0 or not doc or doc["counts"]["passed"] != 10:
        problems.append(f"correct: exit {p.returncode}, {doc and doc['counts']}")
    if doc and any(c["kind"] == "network" for c in doc["coverage"]):
        problems.append("a network fault was drawn on the real broker")
    alo = os.path.join(base, "alo")
    p2, doc2, secs2 = explore(binary, alo, "--seed", "4", "--runs", "10", "--jobs", "2", "--brokers", REAL["brokers"],
                              "--set", "mode=at-least-once")
    fails = doc2["failures"] if doc2 else []
    if p2.returncode != 1 or not fails:
        problems.append(f"at-least-once: exit {p2.returncode}, {doc2 and doc2['counts']}")
    else:
        f = fails[0]
        if f["faults"] > 3 or f["confirm_failed"] != f["confirm_runs"]:
            problems.append(f"at-least-once: {f['faults']} faults, confirmed {f['confirm_failed']} of {f['confirm_runs']}")
    print(("FAIL" if problems else "ok  ") + " explore-real: " + ("; ".join(problems) or
          f"correct refpipe 10 of 10 passed ({secs:.0f}s); at-least-once [{fails[0]['signature']}] found in run "
          f"{fails[0]['first_run']}, {fails[0]['actions_before']} -> {fails[0]['actions']} actions, confirmed "
          f"{fails[0]['confirm_failed']} of {fails[0]['confirm_runs']} ({secs2:.0f}s)"))
    return not problems


EXPLORE_CLUSTER = os.path.join(ROOT, "scenarios", "explore", "refpipe-cluster.drill")


def test_explore_cluster(binary):
    """explore on the 3-broker cluster (one run at a time: the runs share its
    brokers): the correct refpipe survives the broker kills, shutdowns and
    cut-offs it draws; weak=fatal-errors (it gives up on a lost broker
    connection) is found through a broker fault and shrunk to a drill that
    keeps one and fails every confirmation."""
    base = os.path.join(OUT, "explore-cluster")
    shutil.rmtree(base, ignore_errors=True)
    problems = []

    def run(out, *args):
        t0 = time.time()
        p = subprocess.run([binary, "explore", EXPLORE_CLUSTER, "--cluster", REAL["cluster"], "--out", out, "--quiet", *args],
                           capture_output=True, text=True, errors="backslashreplace")
        path = os.path.join(out, "refpipe-cluster-explore", "explore.json")
        return p, (json.load(open(path)) if os.path.exists(path) else None), time.time() - t0

    p, doc, secs = run(os.path.join(base, "ok"), "--seed", "3", "--runs", "6")
    drawn = {c["kind"] for c in doc["coverage"]} if doc else set()
    if p.returncode != 0 or not doc or doc["counts"]["passed"] != 6:
        problems.append(f"correct: exit {p.returncode}, {doc and doc['counts']}")
    if "broker" not in drawn:
        problems.append(f"correct: no broker fault drawn in 6 runs ({sorted(drawn)})")
    weak = os.path.join(base, "fatal-errors")
    p2, doc2, secs2 = run(weak, "--seed", "3", "--runs", "10", "--confirm", "5", "--set", "weak=fatal-errors")
    fails = doc2["failures"] if doc2 else []
    minimal = ""
    if p2.returncode != 1 or not fails:
        problems.append(f"fatal-errors: exit {p2.returncode}, {doc2 and doc2['counts']}")
    else:
        f = fails[0]
        minimal = open(os.path.join(weak, "refpipe-cluster-explore", f["minimal"])).read()
        if not re.search(r"^broker (kill|stop|isolate) ", minimal, re.M):
            problems.append("fatal-errors: the minimal drill keeps no broker fault:\n" + minimal)
        if f["faults"] > 3 or f["confirm_failed"] != f["confirm_runs"]:
            problems.append(f"fatal-errors: {f['faults']} faults, confirmed {f['confirm_failed']} of {f['confirm_runs']}")
    return result("explore-cluster", problems,
                  f"correct refpipe 6 of 6 passed with {', '.join(sorted(drawn))} drawn ({secs:.0f}s); fatal-errors "
                  f"[{fails[0]['signature'] if fails else ''}] found in run {fails[0]['first_run'] if fails else 0}, shrunk "
                  f"{fails[0]['actions_before'] if fails else 0} -> {fails[0]['actions'] if fails else 0} actions keeping "
                  f"`{(re.search(r'^broker .*$', minimal, re.M) or [''])[0]}`, confirmed "
                  f"{fails[0]['confirm_failed'] if fails else 0} of {fails[0]['confirm_runs'] if fails else 0} ({secs2:.0f}s)")


def run_long(binary, only):
    """The longer real-stack matrix (tests/long/): repeated drills on the real
    broker, Kafka Connect and Spark, each case as in tests/scenarios/."""
    cases = [Case(p) for p in sorted(glob.glob(os.path.join(ROOT, "tests", "long", "*.drill")))]
    cases = [c for c in cases if not only or only in c.name]
    t0 = time.time()
    ok = True
    if not only or only in "image":
        ok &= test_image(binary)  # the OCI image (make image), about a minute
        if only and not cases:
            return ok
    if not only or only in "explore-cluster":
        start_cluster()
        try:
            ok &= test_explore_cluster(binary)
        finally:
            stop_cluster()
    if not only or "explore" in only:
        ok &= test_explore_long(binary, only)
        if only and not cases:
            print("long matrix: " + ("all passed" if ok else "FAILED"))
            return ok
    want_rt = not only or only in "realtime-compare"
    if want_rt or any("spark" in c.needs for c in cases):
        setup_spark()
    if any("connect" in c.needs for c in cases):
        setup_connect()
    if any("flink" in c.needs for c in cases):
        setup_flink()
    start_real_kafka()
    try:
        if not only or "explore" in only:
            ok &= test_explore_real(binary)
        if want_rt:
            # the three-way comparison (make test runs the 10 s and micro-batch pair)
            ok &= test_realtime_compare(binary, both_intervals=True)
        if any("postgres" in c.needs for c in cases):
            start_postgres()
        ok &= run_cases_real(binary, cases)
    finally:
        stop_postgres()
        stop_real_kafka()
    print(f"--   long real-stack matrix: {time.time() - t0:.0f}s")
    print("long matrix: " + ("all passed" if ok else "FAILED"))
    return ok


def result(name, problems, ok_text):
    """The closing line of a coded test: FAIL with every problem, else ok with what was shown."""
    if problems:
        print(f"FAIL {name}: " + "\n  ".join(problems))
        return False
    print(f"ok   {name}: {ok_text}")
    return True


# ---- adoption: init, install, the Debian package, the pytest plugin

INIT_KINDS = ("sqlite", "postgres", "kafka", "jsonl", "spark-files", "flink-files", "delta", "command")


def test_init(binary):
    """streamdrill init: the refpipe drill (its folder made) checks and runs green as written; every sink kind with a pipeline checks;
    an existing file is never replaced; a bad --sink or pipeline line is exit 2 with the reason."""
    base = os.path.join(OUT, "init")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    problems = []
    # into a folder that does not exist yet, as in a new repository
    first = os.path.join(base, "drills", "first.drill")
    p = subprocess.run([binary, "init", first], capture_output=True, text=True)
    if p.returncode or not os.path.exists(first):
        problems.append(f"init first.drill: exit {p.returncode}: {p.stderr.strip()}")
    else:
        text = open(first).read()
        if not text.startswith("# first: a first drill") or "{libexec}/refpipe" not in text:
            problems.append("first.drill: not the commented refpipe drill")
        p = subprocess.run([binary, "run", first, "--out", os.path.join(base, "out"), "--quiet"], capture_output=True, text=True)
        summ = os.path.join(base, "out", "first", "summary.json")
        verdict = json.load(open(summ))["verdict"] if os.path.exists(summ) else None
        if p.returncode != 0 or verdict != "pass":
            problems.append(f"run first.drill: exit {p.returncode}, verdict {verdict}: {p.stderr[-300:]}")
        before = open(first).read()
        p = subprocess.run([binary, "init", first], capture_output=True, text=True)
        if p.returncode != 2 or "refusing to replace it" not in p.stderr or open(first).read() != before:
            problems.append(f"init over an existing file: exit {p.returncode}, {p.stderr.strip()}")
    for kind in INIT_KINDS:
        path = os.path.join(base, kind + ".drill")
        # the sink follows the path the command writes (a file for sqlite and jsonl, a folder for the others)
        out = {"sqlite": " --db {run}/sink.db", "jsonl": " --out {run}/out/rows.jsonl"}.get(kind, " --out {run}/table")
        p = subprocess.run([binary, "init", path, "--sink", kind, "--pipeline", "python3 job.py --brokers {brokers} --topic {topic}" + out],
                           capture_output=True, text=True)
        c = subprocess.run([binary, "check", path], capture_output=True, text=True)
        if p.returncode or c.returncode:
            problems.append(f"init --sink {kind}: exit {p.returncode}/check {c.returncode}: {p.stderr.strip()} {c.stderr.strip()}")
        elif f"\nsink       {kind} " not in open(path).read():
            problems.append(f"init --sink {kind}: no `sink {kind}` line")
    # no path on the command line: a placeholder check refuses until it is filled in
    hole = os.path.join(base, "hole.drill")
    p = subprocess.run([binary, "init", hole, "--pipeline", "python3 job.py --brokers {brokers}"], capture_output=True, text=True)
    c = subprocess.run([binary, "check", hole], capture_output=True, text=True)
    f = subprocess.run([binary, "check", hole, "--set", "sink_path=/tmp/x.db"], capture_output=True, text=True)
    if p.returncode or "fill in {sink_path}" not in p.stdout or c.returncode != 2 or "undefined variable {sink_path}" not in c.stderr \
            or f.returncode:
        problems.append(f"init without a sink path: exit {p.returncode} {p.stdout.strip()!r}; check exit {c.returncode} "
                        f"{c.stderr.strip()!r}; check --set sink_path= exit {f.returncode} {f.stderr.strip()!r}")
    for args, want in [(["--sink", "parquet"], "--sink parquet: expected one of"),
                       (["--sink", "kafka"], "needs --pipeline"),
                       (["--pipeline", "job --x {nope}"], "undefined variable {nope}"),
                       (["--progress", "psychic"], "--progress psychic")]:
        path = os.path.join(base, "bad.drill")
        p = subprocess.run([binary, "init", path] + args, capture_output=True, text=True)
        if p.returncode != 2 or want not in p.stderr or os.path.exists(path):
            problems.append(f"init {' '.join(args)}: exit {p.returncode}, {p.stderr.strip()!r} (wanted exit 2 with {want!r}, no file)")
    return result("init", problems, f"the refpipe drill passes as written; {len(INIT_KINDS)} sink kinds check, each sink on the "
                  "command's path; none on it: a placeholder check refuses; existing files kept; bad options exit 2")


# every file `make install` writes under PREFIX, as docs/install.md lists them
INSTALL_LAYOUT = ["bin/streamdrill", "libexec/streamdrill/refpipe", "libexec/streamdrill/refjoin",
                  "libexec/streamdrill/parquet_rows.py", "share/streamdrill/scenarios/readers/sqlite_rows.py",
                  "share/streamdrill/schemas/summary.schema.json", "share/streamdrill/schemas/manifest.schema.json",
                  "share/man/man1/streamdrill.1", "share/bash-completion/completions/streamdrill",
                  "share/doc/streamdrill/README.md"] + \
                 ["share/streamdrill/scenarios/" + os.path.basename(f) for f in glob.glob(os.path.join(ROOT, "scenarios", "parcel-*.drill"))] + \
                 ["share/doc/streamdrill/docs/" + os.path.basename(f) for f in glob.glob(os.path.join(ROOT, "docs", "*.md"))]


def test_install(binary):
    """make install DESTDIR=... PREFIX=/opt/sd lays out exactly the documented files; the installed binary finds its
    refpipe and runs an installed drill; the man page renders without a warning and covers every command and step;
    bash completion completes; make uninstall removes every file it wrote and nothing else."""
    dest = os.path.join(OUT, "install")
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(os.path.join(dest, "opt", "sd", "bin"))
    keep = os.path.join(dest, "opt", "sd", "bin", "not-ours")
    open(keep, "w").write("a file streamdrill did not write\n")
    prefix = os.path.join(dest, "opt", "sd")
    problems = []
    p = subprocess.run(["make", "-s", "install", "DESTDIR=" + dest, "PREFIX=/opt/sd"], capture_output=True, text=True, cwd=ROOT)
    if p.returncode:
        print("FAIL install: make install: " + p.stderr[-600:])
        return False
    got = sorted(os.path.relpath(os.path.join(d, f), prefix) for d, _, fs in os.walk(prefix) for f in fs)
    want = sorted(INSTALL_LAYOUT + ["bin/not-ours"])
    if got != want:
        problems.append(f"installed files differ from the layout: extra {sorted(set(got) - set(want))}, "
                        f"missing {sorted(set(want) - set(got))}")
    sd = os.path.join(prefix, "bin", "streamdrill")
    env = dict(os.environ)
    env.pop("STREAMDRILL_LIBEXEC", None)
    run = subprocess.run([sd, "run", os.path.join(prefix, "share/streamdrill/scenarios/parcel-restart.drill"), "--out",
                          os.path.join(dest, "out"), "--quiet"], capture_output=True, text=True, env=env)
    if run.returncode:
        problems.append(f"the installed parcel drill: exit {run.returncode}: {run.stderr[-300:]}")
    man = subprocess.run(["man", "--warnings", "-l", os.path.join(prefix, "share/man/man1/streamdrill.1")], capture_output=True,
                         text=True, env=dict(env, MANWIDTH="100", MAN_KEEP_FORMATTING="0"))
    page = re.sub(r".\x08", "", man.stdout)
    if man.returncode or man.stderr.strip():
        problems.append(f"man -l streamdrill.1: exit {man.returncode}: {man.stderr.strip()[:300]}")
    names = [l.split()[0] for l in subprocess.run([binary, "help"], capture_output=True, text=True).stdout.splitlines()
             if l.startswith("  ") and l[2:3].isalpha()]
    if "/opt/sd/share/streamdrill/schemas/summary.schema.json" not in page or "/opt/sd/libexec/streamdrill" not in page:
        problems.append("the installed man page does not name the paths of its own PREFIX (/opt/sd/share/streamdrill/schemas, "
                        "/opt/sd/libexec/streamdrill)")
    for word in ["run", "check", "init", "explore", "report", "compare", "broker", "EXIT STATUS", "--pipeline", "--brokers"] + names:
        if not re.search(r"(?m)^\s+" + re.escape(word) + r"\b", page) and word not in page:
            problems.append(f"the man page does not mention {word}")
    comp = subprocess.run(["bash", "-c", "source " + prefix + "/share/bash-completion/completions/streamdrill; "
                           "COMP_WORDS=(streamdrill init --s); COMP_CWORD=2; _streamdrill; echo ${COMPREPLY[@]}; "
                           "COMP_WORDS=(streamdrill in); COMP_CWORD=1; _streamdrill; echo ${COMPREPLY[@]}; "
                           "COMP_WORDS=(streamdrill init --sink de); COMP_CWORD=3; _streamdrill; echo ${COMPREPLY[@]}"],
                          capture_output=True, text=True)
    if comp.stdout.split("\n")[:3] != ["--sink", "init", "delta"]:
        problems.append(f"bash completion: {comp.stdout!r} {comp.stderr[-200:]!r}")
    p = subprocess.run(["make", "-s", "uninstall", "DESTDIR=" + dest, "PREFIX=/opt/sd"], capture_output=True, text=True, cwd=ROOT)
    left = sorted(os.path.relpath(os.path.join(d, f), prefix) for d, _, fs in os.walk(prefix) for f in fs)
    if p.returncode or left != ["bin/not-ours"]:
        problems.append(f"make uninstall: exit {p.returncode}, left {left}")
    for d in ["libexec/streamdrill", "share/streamdrill", "share/doc/streamdrill"]:
        if os.path.exists(os.path.join(prefix, d)):
            problems.append(f"make uninstall left the folder {d}")
    return result("install", problems, f"{len(INSTALL_LAYOUT)} files as documented, the installed drill passes, streamdrill(1) "
                  f"renders ({len(names)} directives and steps in it), completion works, uninstall removes exactly them")


def test_deb(binary):
    """make deb (one line per phase, lintian clean, pedantic included), then the package on a bare Debian 12 root with its
    Depends only (tests/deb/test_deb.sh)."""
    t0 = time.time()
    p = subprocess.run(["make", "--no-print-directory", "deb"], capture_output=True, text=True, cwd=ROOT)
    if p.returncode:
        print("FAIL deb: make deb: " + (p.stdout + p.stderr)[-1500:])
        return False
    lines = (p.stdout + p.stderr).splitlines()
    if len(lines) > 12 or not any("with Debian's hardening flags ... done" in l for l in lines):
        print(f"FAIL deb: make deb printed {len(lines)} lines, not one per phase: {lines[:5]}")
        return False
    debs = glob.glob(os.path.join(os.path.dirname(binary), "streamdrill_*.deb"))
    if len(debs) != 1:
        print(f"FAIL deb: expected one .deb beside {binary}, found {debs}")
        return False
    p = subprocess.run([os.path.join(ROOT, "tests", "deb", "test_deb.sh"), debs[0], os.path.join(OUT, "deb")],
                       capture_output=True, text=True, timeout=1200)
    if p.returncode:
        print("FAIL deb: " + (p.stdout + p.stderr)[-1500:])
        return False
    print(f"ok   deb: {os.path.basename(debs[0])} lintian clean; " + p.stdout.strip().splitlines()[-1].replace("test_deb: ", "")
          + f" ({time.time() - t0:.0f}s)")
    return True


def test_image(binary):
    """make image: an OCI image of the package (mmdebstrap, umoci), unpacked as a runtime would and the parcel drill run in
    it (tests/image/test_image.sh)."""
    t0 = time.time()
    p = subprocess.run(["make", "--no-print-directory", "image"], capture_output=True, text=True, cwd=ROOT)
    img = os.path.join(os.path.dirname(binary), "streamdrill-oci.tar")
    if p.returncode or not os.path.exists(img):
        print("FAIL image: make image: " + (p.stdout + p.stderr)[-1500:])
        return False
    p = subprocess.run([os.path.join(ROOT, "tests", "image", "test_image.sh"), img], capture_output=True, text=True, timeout=900)
    last = [l for l in p.stdout.splitlines() if l.startswith("test_image: ")]
    if p.returncode or not last:
        print("FAIL image: " + (p.stdout + p.stderr)[-1500:])
        return False
    print(f"ok   image: {last[-1].replace('test_image: ', '')} ({time.time() - t0:.0f}s)")
    return True


def test_walkthrough(binary):
    """A new user's first hour on a bare Debian 12 root: the package, init around a small at-least-once consumer of one's
    own, check, a FAIL naming the kill's duplicates, the idempotent fix's PASS (tests/walkthrough/walkthrough.sh)."""
    debs = glob.glob(os.path.join(os.path.dirname(binary), "streamdrill_*.deb"))
    if len(debs) != 1:
        print(f"FAIL walkthrough: expected one .deb beside {binary} (make deb), found {debs}")
        return False
    p = subprocess.run([os.path.join(ROOT, "tests", "walkthrough", "walkthrough.sh"), debs[0], os.path.join(OUT, "walkthrough")],
                       capture_output=True, text=True, timeout=900)
    lines = [l.replace("walkthrough: ", "") for l in p.stdout.splitlines() if l.startswith("walkthrough: ")]
    if p.returncode or not lines:
        print("FAIL walkthrough: " + (p.stdout + p.stderr)[-1500:])
        return False
    print(f"ok   walkthrough: {lines[-1]} ({'; '.join(l.split(': ', 1)[1] for l in lines[:-1])})")
    return True


def test_quiet_phases(binary):
    """make demo prints at most 30 lines (one per install or build phase, the drill, the report's path); a phase that fails
    prints FAILED, its log's path and the log's last lines; deps.sh's apt output stays in its log."""
    problems = []
    p = subprocess.run(["make", "--no-print-directory", "demo"], capture_output=True, text=True, cwd=ROOT)
    lines = (p.stdout + p.stderr).splitlines()
    if p.returncode or len(lines) > 30 or not any(l.startswith("streamdrill: building") for l in lines) or \
            not any("parcel-restart: PASS" in l for l in lines):
        problems.append(f"make demo: exit {p.returncode}, {len(lines)} lines: {lines[:3]} ... {lines[-3:]}")
    broken = os.path.join(ROOT, "build-quiet-test")
    shutil.rmtree(broken, ignore_errors=True)
    p = subprocess.run(["make", "--no-print-directory", "demo", "BUILD=build-quiet-test", "CC=false"], capture_output=True, text=True,
                       cwd=ROOT)
    out = p.stdout + p.stderr
    if p.returncode == 0 or "FAILED (exit" not in out or "build-quiet-test/logs/build.log" not in out or len(out.splitlines()) > 40:
        problems.append(f"make demo with a compiler that fails: exit {p.returncode}: {out[-600:]}")
    shutil.rmtree(broken, ignore_errors=True)
    p = subprocess.run(["sh", os.path.join(ROOT, "scripts", "deps.sh"), "build", "streamdrill-no-such-package"], capture_output=True,
                       text=True, cwd=ROOT)
    out = p.stdout + p.stderr
    if p.returncode == 0 or "FAILED" not in out or ".cache/logs/deps.log" not in out or "Unable to locate package" not in out \
            or len(out.splitlines()) > 25:
        problems.append(f"deps.sh with a package apt does not know: exit {p.returncode}: {out[-600:]}")
    return result("quiet-phases", problems, f"make demo in {len(lines)} lines; a failing build and a failing apt-get each named "
                  "their log")


def venv_python(what):
    """The test virtualenv's python (tests/venv.sh), or None after a FAIL line for WHAT."""
    py = subprocess.run(["sh", os.path.join(ROOT, "tests", "venv.sh")], capture_output=True, text=True)
    if py.returncode:
        print(f"FAIL {what}: tests/venv.sh: " + py.stderr[-400:])
        return None
    return py.stdout.strip()


def test_ci_recipes(binary):
    """docs/ci.md's GitHub Actions workflow and GitLab job, run as written in bare Debian 12 roots (tests/ci_recipes.py)."""
    py = venv_python("ci-recipes")
    if not py:
        return False
    p = subprocess.Popen([py, os.path.join(ROOT, "tests", "ci_recipes.py"), binary, os.path.join(OUT, "ci-recipes")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = p.communicate(timeout=2400)
    except subprocess.TimeoutExpired:
        # SIGTERM first: ci_recipes.py stops its job and unmounts its roots
        p.terminate()
        out, _ = p.communicate(timeout=120)
        print("FAIL ci-recipes: still running after 2400 s: " + out[-2000:])
        return False
    print(out.strip()[-3000:])
    return p.returncode == 0


def test_pytest_plugin(binary):
    """pytest, with the package `pip install ./python` put in the test virtualenv: the plugin over the repository's drills
    and drills made to fail, to be inconclusive and broken (tests/test_pytest_plugin.py), and the Python API on a pass, a
    fail and an inconclusive drill (tests/test_python_api.py)."""
    py = venv_python("pytest-plugin")
    if not py:
        return False
    p = subprocess.run([py, "-m", "pytest", os.path.join(ROOT, "tests", "test_pytest_plugin.py"),
                        os.path.join(ROOT, "tests", "test_python_api.py"), "-q",
                        "-p", "no:cacheprovider"], capture_output=True, text=True, cwd=os.path.join(OUT),
                       env=dict(os.environ, STREAMDRILL_BIN=binary))
    last = (p.stdout.strip().splitlines() or [""])[-1]
    if p.returncode:
        print("FAIL pytest-plugin: " + p.stdout[-2500:] + p.stderr[-500:])
        return False
    print(f"ok   pytest-plugin: {last}")
    return True


def test_schemas(only):
    """Every summary.json and manifest.json this test run wrote (tests/out/) against reports/schemas/, validated by jsonschema."""
    py = venv_python("schemas")
    if not py:
        return False
    p = subprocess.run([py, os.path.join(ROOT, "tests", "check_schemas.py"), OUT, "--min", "1" if only else "50"],
                       capture_output=True, text=True)
    print((p.stdout + p.stderr).strip())
    return p.returncode == 0


class CountingOut:
    """stdout that counts the result lines ("ok   ..." and "FAIL ...") for the closing line."""

    def __init__(self, out):
        self.out, self.passed, self.failed, self.bol = out, 0, 0, True

    def write(self, text):
        for i, line in enumerate(text.split("\n")):
            if self.bol or i:
                if line.startswith("ok   "):
                    self.passed += 1
                elif line.startswith("FAIL"):
                    self.failed += 1
        self.bol = text.endswith("\n")
        return self.out.write(text)

    def flush(self):
        self.out.flush()


def main():
    sys.stdout = CountingOut(sys.stdout)
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "streamdrill"))
    ap.add_argument("--only", default=None, help="run cases whose name contains this")
    ap.add_argument("--no-real", action="store_true", help="skip cases that need the real Kafka broker or Spark")
    ap.add_argument("--update-readme", action="store_true", help="rewrite docs/language.md's scenario-language reference from the table")
    ap.add_argument("--update-golden", action="store_true", help="rewrite tests/golden/ from this build, run nothing else")
    ap.add_argument("--long", action="store_true", help="run the longer real-stack matrix in tests/long/ instead")
    a = ap.parse_args()
    binary = os.path.abspath(a.bin)
    os.makedirs(OUT, exist_ok=True)
    if a.update_readme:
        sys.exit(0 if update_readme_reference(binary) else 1)
    if a.update_golden:
        sys.exit(0 if test_golden(binary, update=True) else 1)
    if a.long:
        sys.exit(0 if run_long(binary, a.only) else 1)
    ok = True
    if not a.only or a.only in "golden":
        ok &= test_golden(binary)
    if not a.only or a.only in "readme-reference":
        ok &= test_readme_reference(binary)
        ok &= test_terminal_help(binary)
        ok &= test_doc_links()
        ok &= test_run_db_tables()
        ok &= test_structure()
    if not a.only or a.only in "folder-safety":
        ok &= test_run_folder_safety(binary)
    if not a.only or a.only in "edges":
        ok &= test_edges(binary)
    if not a.only or a.only in "hostile-paths":
        ok &= test_hostile_paths(binary)
    if not a.only or a.only in "hostile-checkpoints":
        ok &= test_hostile_checkpoints(binary)
    if not a.only or a.only in "control-characters":
        ok &= test_control_characters(binary)
    if not a.only or a.only in "runbook":
        ok &= test_runbook(binary)
    if not a.only or a.only in "recovery":
        ok &= test_recovery(binary)
    if not a.only or a.only in "operator":
        ok &= test_operator(binary)
    if not a.only or a.only in "command-bounds":
        ok &= test_command_bounds(binary)
    if not a.only or a.only in "descriptors":
        ok &= test_descriptors(binary)
    if not a.only or a.only in "log-cap":
        ok &= test_log_cap(binary)
    if not a.only or a.only in "report-running":
        ok &= test_report_running(binary)
    if not a.only or a.only in "disk-full":
        ok &= test_disk_full(binary)
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "broken", "*.drill"))):
        if a.only and a.only not in path:
            continue
        ok &= run_broken(binary, path)
    cases = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "scenarios", "*.drill"))):
        case = Case(path)
        if a.only and a.only not in case.name:
            continue
        if case.name == "long-running" or (a.no_real and case.needs):
            continue
        cases.append(case)
    want_rt = not a.no_real and (not a.only or a.only in "realtime-compare")
    want_lk = not a.no_real and (not a.only or a.only in "ledger-kill")
    real = [c for c in cases if c.needs] + ([True] if want_rt or want_lk else [])
    # single runs side by side (3 at a time; repeated cases parallelise themselves)
    singles = [c for c in cases if not c.needs and c.repeat == 1]
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as ex:
        for good, text in ex.map(lambda c: run_case_quiet(binary, c), singles):
            print(text)
            ok &= good
    for case in [c for c in cases if not c.needs and c.repeat > 1]:
        ok &= run_case(binary, case)
    if not a.only or a.only in "harness-sigkill":
        ok &= test_harness_sigkill(binary)
    if not a.only or a.only in "live-progress":
        ok &= test_live_progress(binary)
    if not a.only or a.only in "reports":
        ok &= test_reports(binary)
    if not a.only or a.only in "external-broker":
        ok &= test_external_broker(binary)
    if not a.only or a.only in "explore":
        ok &= test_explore(binary)
    if not a.only or a.only in "explore-interrupted":
        ok &= test_explore_interrupted(binary)
    if not a.only or a.only in "init":
        ok &= test_init(binary)
    if not a.only or a.only in "install":
        ok &= test_install(binary)
    if not a.only or a.only in "pytest-plugin":
        ok &= test_pytest_plugin(binary)
    if not a.no_real and (not a.only or a.only in "quiet-phases"):
        ok &= test_quiet_phases(binary)
    if not a.no_real and (not a.only or a.only in "deb"):
        ok &= test_deb(binary)
    if not a.no_real and (not a.only or a.only in "walkthrough"):
        ok &= test_walkthrough(binary)
    if not a.no_real and (not a.only or a.only in "ci-recipes"):
        ok &= test_ci_recipes(binary)
    if real:
        t0 = time.time()
        setup_spark()
        if any("connect" in c.needs for c in cases):
            setup_connect()
        if any("flink" in c.needs for c in cases):
            setup_flink()
        start_real_kafka()
        try:
            if any("postgres" in c.needs for c in cases):
                start_postgres()
            ok &= run_cases_real(binary, [c for c in cases if c.needs])
            if not a.only or a.only in "ledger-kill":
                ok &= test_ledger_kill(binary)
            if want_rt:
                ok &= test_realtime_compare(binary)
        finally:
            stop_postgres()
            stop_real_kafka()
        print(f"--   real Kafka and Spark part: {time.time() - t0:.0f}s")
    if not a.only or a.only in "schemas":
        ok &= test_schemas(a.only)
    print("scenario tests: " + ("all passed" if ok else "FAILED"))
    print(f"scenarios: {sys.stdout.passed} passed, {sys.stdout.failed} failed")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
