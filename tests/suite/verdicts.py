"""Coded tests of the verdict and its figures against independent counts: recovery figures, the runbook, hostile checkpoints, control characters from outside."""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import time

from .common import ROOT, fresh, result, run_drill_text
from .registry import coded


@coded("recovery", "before")
def test_recovery(binary):
    """Each fault's recovery figures on the parcel drill and refpipe, recomputed here from run.db and the target's
    own rows (the newest first write among events sent before the kill; the batches' offsets and rows), and
    the same in summary.json and the runbook table; expect on a figure below the measured value fails (exit 1), above
    it passes, on a fault step by its line too; refpipe --weak rewind (right output, everything re-read after the
    restart) passes without the expect and is caught by expect replayed_input<=50; the at-least-once mode's rows
    written again traced to the kill; a figure expected of a drill without a fault is inconclusive (exit 3)."""
    problems = []
    base = fresh("recovery")
    text = open(os.path.join(ROOT, "scenarios", "parcel-restart.drill")).read()
    kill_line = next(i + 1 for i, ln in enumerate(text.splitlines()) if ln.startswith("kill "))
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
    def osum(off):
        return sum(int(x.split(":")[-1]) for x in off.split(",") if x.count(":") == 1)
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
    def parse(off):
        return {int(x.split(":")[0]): int(x.split(":")[1]) for x in (off or "").split(",") if x.count(":") == 1}
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
    nofault = "\n".join(ln for ln in text.splitlines() if not ln.startswith(("kill ", "restart"))) + "\nexpect     recovery_s<=60\n"
    p6, run6 = run_drill_text(binary, base, "no-fault", nofault)
    if p6.returncode != 3 or "no fault struck" not in p6.stdout + p6.stderr + open(os.path.join(run6, "report.md")).read():
        problems.append(f"expect recovery_s on a drill without a fault exited {p6.returncode} (3), or did not say why: {p6.stderr[-300:]}")
    return result("recovery", problems, f"health: backlog_max {backlog}, batch_max_ms {durs[-1]}, restarts 1 as run.db says; "
                  f"the kill's recovery {measured:.3f} s by the target, replayed_input {want_replay}, as run.db and "
                  f"target.db say; expect below/above fails/passes; rewind caught (replayed 120); at-least-once rewrote {got} rows "
                  f"({traced} traced); no fault: inconclusive")


@coded("runbook", "before")
def test_runbook(binary):
    """The runbook of the parcel drill with a `version` line: the checkpoint, each incarnation's command and version
    (what refpipe --version prints, the SHA-256 of its binary, recomputed here), and the committed progress before
    and after each fault, recomputed here from run.db's batch and fault tables; the same section in report.md and
    export/runbook.md; without a `version` line it says so; a version command that fails is said, not fatal."""
    import hashlib
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


@coded("hostile-checkpoints", "before")
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


@coded("control-characters", "before")
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


@coded("files-sink", "before")
def test_files_sink(binary):
    """The file-sink bounds against the log itself: tests/scenarios/files-sink-refpipe.drill (refpipe --files, a
    Spark file sink's layout, 25 rows a batch at most) run, then every _spark_metadata/N entry read here: files_written
    is the files the entries added, files_per_batch_max the most one entry added, file_bytes_p50 the median of their
    sizes (the lower middle of an even count), each size the file's on disk; the rows of the listed files are the
    observed rows, each id once."""
    base = fresh("files-sink")
    text = open(os.path.join(ROOT, "tests", "scenarios", "files-sink-refpipe.drill")).read()
    p, run = run_drill_text(binary, base, "files", text)
    if p.returncode != 0:
        return result("files-sink", [f"the drill exited {p.returncode}: {p.stderr[-400:]}"], "")
    meta = os.path.join(run, "files", "_spark_metadata")
    sizes, per_batch, ids, problems = [], [], [], []
    for name in sorted((n for n in os.listdir(meta) if n.isdigit()), key=int):
        lines = open(os.path.join(meta, name)).read().splitlines()
        if not lines or not lines[0].startswith("v"):
            problems.append(f"_spark_metadata/{name}: no version line")
            continue
        added = [json.loads(ln) for ln in lines[1:] if ln.strip()]
        added = [a for a in added if a.get("action") == "add"]
        per_batch.append(len(added))
        for a in added:
            path = a["path"][len("file://"):] if a["path"].startswith("file://") else a["path"]
            if os.path.getsize(path) != a["size"]:
                problems.append(f"{path}: {os.path.getsize(path)} bytes on disk, {a['size']} in the log")
            sizes.append(a["size"])
            ids += [json.loads(ln)["event_id"] for ln in open(path) if ln.strip()]
    counts = json.load(open(os.path.join(run, "summary.json")))["counts"]
    sizes.sort()
    want = {"files_written": len(sizes), "files_per_batch_max": max(per_batch, default=0),
            "file_bytes_p50": sizes[(len(sizes) - 1) // 2] if sizes else None,
            "observed_rows": len(ids), "observed_unique": len(set(ids))}
    for k, v in want.items():
        if counts.get(k) != v:
            problems.append(f"{k}: summary.json says {counts.get(k)}, the log and its files say {v}")
    if len(sizes) < 4:
        problems.append(f"only {len(sizes)} files: the drill should write one per batch of at most 25 rows")
    return result("files-sink", problems, f"{len(sizes)} files in {len(per_batch)} log entries, median {want['file_bytes_p50']} "
                  f"bytes, {len(ids)} rows: summary.json's figures match the log")
