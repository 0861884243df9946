"""Coded tests of `streamdrill explore`: schedules, shrinking, the end-to-end hunt."""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import time

from .common import OUT, REAL, ROOT, pids_with, result
from .registry import coded

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


@coded("explore", "after")
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
        # once a run's pipeline is up: explore's own command line names `out` too,
        # so it is left out (a signal before explore's handler is set kills it bare)
        deadline = time.time() + 60
        while time.time() < deadline and not [p for p in pids_with(out) if p != proc.pid]:
            time.sleep(0.1)
        if not [p for p in pids_with(out) if p != proc.pid]:
            problems.append(f"{sig.name}: no run of explore started within 60 s")
        proc.send_signal(sig)
        rc = proc.wait(timeout=60)
        deadline = time.time() + 15
        while pids_with(out) and time.time() < deadline:
            time.sleep(0.2)
        left = pids_with(out)
        if left:
            problems.append(f"{sig.name}: processes outlived explore: {left}")
        if sig == signal.SIGINT:
            path = os.path.join(out, "refpipe-explore", "explore.json")
            doc = json.load(open(path)) if os.path.exists(path) else {}
            if rc != 130 or doc.get("ended") != "interrupted":
                problems.append(f"SIGINT: exit {rc}, ended {doc.get('ended')!r} ({'no explore.json' if not doc else path})")
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
    steps = [ln for ln in p.stdout.splitlines() if ln and not ln.startswith("#")]
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


@coded("explore-interrupted", "after")
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
        if only and "explore-" + name not in only:
            continue
        out = os.path.join(base, name)
        problems = []
        p, doc, secs = explore(binary, out, "--seed", "1", "--budget", "10m", "--jobs", "2", *args)
        fails = doc["failures"] if doc else []
        if p.returncode != 1 or not fails:
            problems.append(f"not found: exit {p.returncode}, {doc and doc['counts']}")
        else:
            f = fails[0]
            check_minimal(binary, f, out, 5, problems, name)
            rows.append(f"| {name} | [{f['signature']}] | {f['first_run']} | {f['actions_before']} -> {f['actions']} | "
                        f"{f['faults']} | {f['confirm_failed']}/{f['confirm_runs']} | {doc['seconds']['exploring']:.0f} | "
                        f"{doc['seconds']['shrinking']:.0f} |")
        print(("FAIL" if problems else "ok  ") + f" explore-{name}: " + ("; ".join(problems) or rows[-1]) + f" ({secs:.0f}s)")
        ok &= not problems
    if not only or "explore-correct" in only:
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
