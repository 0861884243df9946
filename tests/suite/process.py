"""Coded tests of the harness as a process among others: killed mid-run, folders it must not touch, hostile paths, commands that misbehave, descriptors, log caps, a full disk, operator steps, edges of its input."""
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
import time

from .common import OUT, REAL, ROOT, fresh, pids_with, result, run_drill_text
from .registry import coded


@coded("harness-sigkill", "after")
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
    # once Kafka has acknowledged some of what it sent (an event, not a clock)
    db_path, deadline = os.path.join(run_dir, "run.db"), time.time() + 60
    while time.time() < deadline:
        try:
            con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=1)
            acked = con.execute("SELECT (SELECT count(*) FROM ack) + (SELECT coalesce(sum(acks), 0) FROM pack)").fetchone()[0]
            con.close()
            if acked > 0:
                break
        except sqlite3.Error:
            pass
        time.sleep(0.1)
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


@coded("ledger-kill", "real")
def test_ledger_kill(binary, kills=3):
    """SIGKILL the harness at random moments of a large produce step to the
    real broker: after `streamdrill report`, every message the topic holds is
    in run.db, and every delivery report run.db holds names the partition
    and offset where the topic holds that very message."""
    drill = os.path.join(ROOT, "tests", "ledger-kill.drill")
    seed = int(os.environ.get("SD_LEDGER_KILL_SEED", str(int(time.time()))))
    rnd = random.Random(seed)
    problems, lines = [], []
    landed, hi = 0, 3.0
    for k in range(3 * kills):
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
        delay = rnd.uniform(0.2, hi)
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
        if len(seqs) >= 2000000:
            # the step had sent everything before the kill (a fast machine):
            # no kill mid-step to judge; draw an earlier moment
            lines.append(f"kill {k} at {delay:.2f}s: came after the step had sent all {len(seqs)}")
            hi = max(0.3, delay / 2)
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
        c = summary["counts"]
        if c.get("produced") != len(acks) or c.get("send_failed") != len(seqs) - len(acks) or summary["complete"]:
            problems.append(f"kill {k}: summary says produced {c.get('produced')}, send_failed {c.get('send_failed')}, complete "
                            f"{summary['complete']}; run.db holds {len(seqs)} messages, {len(acks)} acknowledged")
        if not any("handed to Kafka" in m for m in summary["missing"]):
            problems.append(f"kill {k}: the report does not say what run.db knows of the messages: {summary['missing']}")
    if landed < kills:
        problems.append(f"only {landed} of {k + 1} kills came after the first message reached the topic and before the last was sent")
    if problems:
        print(f"FAIL ledger-kill (seed {seed}): " + "; ".join(problems))
        return False
    print(f"ok   ledger-kill (seed {seed}): " + "; ".join(lines))
    return True


@coded("folder-safety", "before")
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


@coded("operator", "before")
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
        # at least the 3 s the person waited; the upper bound leaves a loaded machine room
        if "(Enter)" not in detail or not 2800 <= took <= 15000 or abs(human - took) > 5 or rec < human:
            problems.append(f"the step says {detail!r}, took {took} ms; operator_s {human} ms, recovery_s {rec} ms (expected about 3 s, "
                            "recovery at least the human part)")
        if not re.search(r"\| kill \| [0-9.]+ s \| target \| n/a \| n/a \| \d+ \| \d+ \| \d+ \| (?:[3-9]|1[0-4])\.\d{3} s \|",
                         open(os.path.join(run, "report.md")).read()):
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


@coded("hostile-paths", "before")
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


@coded("command-bounds", "before")
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
    # 2. a command that never ends, a 10-minute timeout: SIGINT stops the run at once (within 10 s on a loaded
    # machine, not the command's 10 minutes), sent once the command runs
    path = drill("forever", "timeout=10m sleep 600")
    proc = subprocess.Popen([binary, "run", path, "--out", os.path.join(base, "out"), "--quiet"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and not pids_with("sleep 600"):
        time.sleep(0.05)
    t0 = time.time()
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
        took = time.time() - t0
        if proc.returncode != 130 or took > 10:
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


@coded("descriptors", "before")
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


@coded("log-cap", "before")
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


@coded("report-running", "before")
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


@coded("disk-full", "before")
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
    said = next((ln for ln in p.stderr.splitlines() if "full" in ln or "No space" in ln), "")
    print(f"ok   disk-full: exit {p.returncode}, the cause named: {said.strip()[-110:]}")
    return True


@coded("edges", "before")
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
    # a 64 KiB variable used 20,000 times is refused at its line, in bounded memory
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
