"""Coded tests of what a run writes: the golden reports, the reports as their readers see them, the live progress line."""
import json
import os
import re
import shutil
import subprocess

from .common import OUT, ROOT, run_on_a_terminal
from .registry import coded

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


@coded("golden", "static")
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


@coded("reports", "after")
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


@coded("live-progress", "after")
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


@coded("reports-failed", "after")
def test_reports_failed(binary):
    """--reports failed: a drill that passes writes summary.json and junit.xml only, one that fails every report;
    `streamdrill report DIR` writes the rest later from run.db; any other value is refused (exit 2)."""
    out = os.path.join(OUT, "reports-failed")
    shutil.rmtree(out, ignore_errors=True)
    drill = os.path.join(ROOT, "scenarios", "parcel-restart.drill")
    problems = []
    people = ("report.md", "report.html", "charts", "export")
    for name, want, extra in (("pass", 0, []), ("fail", 1, ["--set", "mode=at-least-once"])):
        p = subprocess.run([binary, "run", drill, "--quiet", "--reports", "failed", "--out", os.path.join(out, name)] + extra,
                           capture_output=True, text=True, timeout=300)
        d = os.path.join(out, name, "parcel-restart")
        have = {f for f in people + ("summary.json", "junit.xml") if os.path.exists(os.path.join(d, f))}
        if p.returncode != want:
            problems.append(f"{name}: exit {p.returncode}, expected {want}: {p.stderr[-300:]!r}")
        if not {"summary.json", "junit.xml"} <= have:
            problems.append(f"{name}: no summary.json or junit.xml ({sorted(have)})")
        if want == 0 and have & set(people):
            problems.append(f"a passing drill wrote {sorted(have & set(people))}")
        if want == 1 and not set(people) <= have:
            problems.append(f"a failing drill lacks {sorted(set(people) - have)}")
        if want == 0:
            r = subprocess.run([binary, "report", d], capture_output=True, text=True, timeout=120)
            if r.returncode != 0 or not os.path.exists(os.path.join(d, "report.html")):
                problems.append(f"streamdrill report after --reports failed: exit {r.returncode}, {r.stderr[-200:]!r}")
    p = subprocess.run([binary, "run", drill, "--reports", "some", "--out", os.path.join(out, "bad")], capture_output=True, text=True)
    if p.returncode != 2 or "expected all or failed" not in p.stderr:
        problems.append(f"--reports some: exit {p.returncode}, {p.stderr[-200:]!r}")
    if problems:
        print("FAIL reports-failed: " + "; ".join(problems))
        return False
    print("ok   reports-failed: a pass wrote summary.json and junit.xml only, a failure every report, `streamdrill report` the "
          "rest later; --reports some refused (exit 2)")
    return True
