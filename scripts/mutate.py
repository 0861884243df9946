#!/usr/bin/env python3
"""Mutation testing of the verdict logic (`make mutate`): deliberate bugs
planted one at a time in a room's C files, each built and run against the
tests that exercise that room; a mutant the tests do not fail "survived".

    python3 scripts/mutate.py --build build --room oracle --n 40 --seed 1

Mutants come from universalmutator (PyPI; the test virtualenv, tests/venv.sh)
as line rewrites, generated in memory. They are drawn in the order of a hash
of the seed and each mutant's text (file, line, rewrite), so a run is
repeatable and an edit to one function leaves the draw of the others. For
each one drawn, in a scratch folder and nothing written to the tree:

  1. the mutated file is compiled with the real flags (those `make` uses for
     its object): a failure is "not compiling" (-Werror included);
  2. its object, debug info stripped, is compared with the original's: the
     same bytes are "equivalent" (the compiler made them one program: trivial
     compiler equivalence), and the same bytes as an earlier mutant's share
     its answer;
  3. the room's unit tests and the harness binary are linked with the mutant
     object ahead of the library (it replaces the library's copy of the file);
  4. the room's suite runs: its unit tests, then its scenario cases through
     tests/run_scenarios.py with the mutant harness; the first failure (or a
     run past the timeout) "killed" it.

It prints killed, survived, not compiling and equivalent per room, the kill
rate (killed over killed plus survived), and writes BUILD/mutate/ROOM.txt and
ROOM.json with each survivor's file, line and rewrite. docs/testing.md lists
the survivors left, each as equivalent (with the reason) or accepted (why).
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Each room: its files, the unit tests and scenario cases that exercise it
# (the cases by exact name, run with the mutant harness; about a minute a
# mutant at most).
ROOMS = {
    "oracle": {
        "files": ["harness/oracle/recon.c", "harness/oracle/result.c", "harness/oracle/result_join.c", "harness/oracle/recovery.c",
                  "harness/oracle/observe.c", "harness/oracle/health.c"],
        "units": ["test_recon", "test_result", "test_recovery", "test_sink"],
        "cases": ["exactly-once-x20", "at-least-once-x20", "at-most-once-x20", "recovery-never-amo", "recovery-stamps-before-visible",
                  "windows-exactly-once-x20", "join-lag-full-x3", "recovery", "nothing-sent"],
    },
    "progress": {
        "files": ["harness/progress/progress.c", "harness/progress/progress_batch.c", "harness/progress/progress_spark.c",
                  "harness/progress/progress_group.c", "harness/progress/progress_flink.c", "harness/progress/spark_checkpoint.c"],
        "units": ["test_progress", "test_spark"],
        "cases": ["exactly-once-x20", "bare-markers-x20", "group-at-least-once-x10", "not-caught-up-group", "kill-not-landed",
                  "join-lag-full-x3", "hostile-checkpoints", "group-never-commits"],
        # --real: cases on the real broker, run for the mutants of these files
        # only (the embedded cluster cannot describe a consumer group)
        "real": {"harness/progress/progress_group.c": ["group-session-wait", "group-unseen-kill"]},
    },
    "run": {
        "files": ["harness/run/run_judge.c", "harness/run/run_facts.c", "harness/run/run_model.c", "harness/run/run_join.c",
                  "harness/run/run_recovery.c"],
        "units": [],
        "cases": ["exactly-once-x20", "at-least-once-x20", "at-most-once-x20", "recovery-never-amo", "recovery-stamps-before-visible",
                  "windows-exactly-once-x20", "windows-weak-count-late-x5", "join-lag-full-x3", "join-weak-late-as-null-x3",
                  "join-deliveries-faults-x3", "latest-weak-ignore-deletes-x5", "state-not-measured", "not-caught-up-group", "recovery",
                  "windows-all-aggregates", "writers-by-write-time", "fault-field-values-weak", "fault-malformed-lenient", "windows-nothing-counted",
                  "fault-field-values-ok", "fault-field-values-reordered", "nothing-sent", "windows-complete",
                  "fault-field-values-long-writer", "files-sink"],
    },
    # the sink readers: what the harness observes (a reader that drops a row
    # or reads one twice is a wrong verdict no oracle test can see)
    "sinks": {
        "files": ["harness/sinks/sink.c", "harness/sinks/sink_json.c", "harness/sinks/jsonfast.c", "harness/sinks/sink_sqlite.c",
                  "harness/sinks/sink_jsonl.c", "harness/sinks/sink_spark.c", "harness/sinks/sink_delta.c", "harness/sinks/sink_command.c",
                  "harness/sinks/sink_kafka.c"],
        "units": ["test_sink"],
        "cases": ["exactly-once-x20", "at-least-once-x20", "files-sink-refpipe", "files-sink", "command-sink-ok", "command-sink-alo",
                  "command-sink-garbage", "hostile-bytes", "sink-unreadable", "log-replay", "fault-field-values-weak"],
        # --real: the Kafka sink's transaction-aware counts need the real broker
        "real": {"harness/sinks/sink_kafka.c": ["kafka-txn", "kafka-read-uncommitted-nothing-committed"]},
    },
}
# the scenario cases' repeats are cut to one run each: a mutant that changes
# a verdict changes it every time
RULES = ["universal.rules", "c.rules", "c_like.rules"]



def say(text):
    print(text, flush=True)


# --sanitize FLAGS: the build make asan-build makes (build-asan/, its SAN
# flags and -O1), given to make for the compile commands; the sanitizers'
# options come from the environment (make mutate SANITIZE=1 sets the
# Makefile's ASAN_ENV)
SANITIZE_BUILD = "build-asan"
MAKE_VARS = []


def make_libs():
    """The libraries the harness links with: the Makefile's LIBS, as written there."""
    m = re.search(r"^LIBS\s*=\s*(.*)$", open(os.path.join(ROOT, "Makefile")).read(), re.M)
    if not m:
        sys.exit("mutate: the Makefile has no LIBS line")
    return m.group(1).split()


def make_command(build, obj):
    """The compile command make runs for obj (cc ... -c SRC -o OBJ), as a list."""
    out = subprocess.run(["make", "-n", "-B", f"BUILD={build}"] + MAKE_VARS + [obj], cwd=ROOT, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if f"-o {obj}" in line and " -c " in line:
            return line.split()
    sys.exit(f"mutate: make -n prints no compile command for {obj}")


def test_command(build, name):
    out = subprocess.run(["make", "-n", "-B", f"BUILD={build}"] + MAKE_VARS + [f"{build}/tests/{name}"], cwd=ROOT, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        if f"-o {build}/tests/{name}" in line:
            return line.split()
    sys.exit(f"mutate: make -n prints no link command for {build}/tests/{name}")


def stripped_hash(obj, tmp):
    out = os.path.join(tmp, "stripped.o")
    subprocess.run(["objcopy", "--strip-debug", obj, out], check=True)
    return hashlib.sha256(open(out, "rb").read()).hexdigest()


def run(cmd, timeout, stderr=subprocess.DEVNULL, **kw):
    """Run cmd in a session of its own; its exit code, or None past the timeout (the session killed)."""
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True, **kw)
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        return None


class Suite:
    """The room's tests against one build of the harness: the unit test binaries and the harness binary in tmp."""

    def __init__(self, build, room, tmp, cases, real=None, san_flags=()):
        self.build, self.room, self.tmp, self.cases = build, room, tmp, cases
        self.real = real or {}  # file -> cases on the real broker (SD_TEST_KAFKA in the environment)
        self.units = ROOMS[room]["units"]
        libs = make_libs()
        # the harness in tmp/build/, tmp/scenarios and tmp/harness the tree's: it finds its helpers (refpipe, refjoin,
        # the Parquet reader) beside it as a build tree's harness does
        os.makedirs(os.path.join(tmp, "build"))
        for d in ("scenarios", "harness"):
            os.symlink(os.path.join(ROOT, d), os.path.join(tmp, d))
        self.harness = os.path.join(tmp, "build", "streamdrill")
        self.link_main = ["cc", "-o", self.harness, f"{build}/harness/main.o", "MUTANT", f"{build}/libstreamdrill.a"] + libs + \
            [f for f in san_flags if f.startswith("-fsanitize")]
        self.link_units = {}
        for u in self.units:
            cmd = test_command(build, u)
            # compile the test once; link it with the mutant object ahead of the library
            src = next(a for a in cmd if a.endswith(f"tests/unit/{u}.c"))
            uo = os.path.join(tmp, u + ".o")
            compile_cmd = [a for a in cmd if a not in (src, f"{build}/libstreamdrill.a") and not a.startswith("-l")]
            i = compile_cmd.index("-o")
            compile_cmd[i + 1] = uo
            subprocess.run(compile_cmd + ["-c", src], cwd=ROOT, check=True)
            # the sanitizer the tests run under (LeakSanitizer: a leak fails them) is linked in too
            san = [a for a in cmd if a.startswith("-fsanitize")]
            self.link_units[u] = ["cc", "-o", os.path.join(tmp, u), uo, "MUTANT", f"{build}/libstreamdrill.a", "-lcriterion"] + san + libs

    def link(self, obj):
        for cmd in [self.link_main] + list(self.link_units.values()):
            if subprocess.run([obj if a == "MUTANT" else a for a in cmd], cwd=ROOT, capture_output=True).returncode:
                return False
        return True

    def passes(self, timeout, f=None):
        """True when every test passes (those of file f on the real broker too; of every file when f is None);
        which one failed otherwise."""
        t_end = time.time() + timeout
        for u in self.units:
            log = os.path.join(self.tmp, u + ".log")
            with open(log, "w") as out:
                rc = run([os.path.join(self.tmp, u), "--jobs", "2"], max(1, t_end - time.time()), stderr=out,
                         env=dict(os.environ, LSAN_OPTIONS="suppressions=" + os.path.join(ROOT, "tests", "unit", "lsan.supp")))
            if rc != 0:
                return u + (" (timed out)" if rc is None else "")
            if "ERROR: LeakSanitizer: detected memory leaks" in open(log, errors="replace").read():
                return u + " (a leak)"
        if self.cases:
            rc = run([sys.executable, "tests/run_scenarios.py", "--bin", self.harness, "--no-real", "--once",
                      "--stop-at-first", "--only", ",".join(self.cases)], max(1, t_end - time.time()))
            if rc != 0:
                return "scenario cases" + (" (timed out)" if rc is None else "")
        real = sorted({c for k, v in self.real.items() if f in (None, k) for c in v})
        if real:
            rc = run([sys.executable, "tests/run_scenarios.py", "--bin", self.harness, "--once", "--stop-at-first", "--only",
                      ",".join(real)], max(1, t_end - time.time()))
            if rc != 0:
                return "real-broker cases" + (" (timed out)" if rc is None else "")
        return True


# calls whose only effect is free text for a person (a progress line, a
# warning's words, a figure's reason, what was not judged), alone or behind
# an `if`: a mutant of such a statement changes words, no verdict. Text
# that a reader or a report parses, and the details of anomalies, stay
# mutated: their words are the forensics, tested as such.
FORMATTERS = re.compile(r"^\s*(?:if \(.*\)\s*)?(?:[\w.>-]+\s*=\s*)?(sd_run_say|fprintf|sd_ledger_warning|sd_why|sd_checks_not_judged)\(\s*(\w+)?")


def message_text(lines):
    """Per line (0-based): 0 code, 1 the first line of a statement that writes a `why` buffer (a mutant there is
    kept when it changes what comes before the format string), 2 a line of a statement that only formats text."""
    kind = [0] * len(lines)
    i = 0
    while i < len(lines):
        m = FORMATTERS.match(lines[i])
        if m:
            text_only = m.group(2) != "why"
            kind[i] = 2 if text_only else 1
            depth = lines[i].count("(") - lines[i].count(")")
            j = i
            while depth > 0 and j + 1 < len(lines):
                j += 1
                kind[j] = 2
                depth += lines[j].count("(") - lines[j].count(")")
            i = j + 1
        else:
            i += 1
    return kind


def mutants_of(path):
    """The mutants of a file: (path, line, old, new), leaving out what only changes the words of a message."""
    from universalmutator import mutator
    lines = open(os.path.join(ROOT, path)).read().splitlines(keepends=True)
    kind = message_text(lines)
    ms = mutator.mutants_regexp(lines, ruleFiles=RULES, ignorePatterns=[], ignoreStringOnly=True)
    out = []
    for lineno, new, _rule, _ in ms:
        old = lines[lineno - 1].rstrip("\n")
        new = new.rstrip("\n")
        if new == old or kind[lineno - 1] == 2:
            continue
        if kind[lineno - 1] == 1:
            first = next((k for k in range(min(len(old), len(new))) if old[k] != new[k]), min(len(old), len(new)))
            quote = old.find('"')
            if quote >= 0 and first > quote:
                continue
        out.append((path, lineno, old, new))
    return out


LISTED_DOC = os.path.join(ROOT, "docs", "testing.md")


def listed_survivors():
    """The survivors docs/testing.md lists (its "Mutants left" block): (file, old, new) -> (class, why), the lines
    compared without their indentation, so that a mutant is known wherever its line moves."""
    text = open(LISTED_DOC).read()
    m = re.search(r"<!-- mutants left: read by scripts/mutate.py -->\n```text\n(.*?)```", text, re.S)
    out = {}
    if not m:
        return out
    lines = m.group(1).splitlines()
    for i, line in enumerate(lines):
        h = re.match(r"(equivalent|accepted) (\S+): (.*)$", line)
        if h and i + 2 < len(lines) and lines[i + 1].startswith("- ") and lines[i + 2].startswith("+ "):
            k = i + 2  # a mutant that adds a line has two + lines
            new = []
            while k < len(lines) and lines[k].startswith("+ "):
                new.append(lines[k][2:])
                k += 1
            out[(h.group(2), squeeze(lines[i + 1][2:]), squeeze("\n".join(new)))] = (h.group(1), h.group(3))
    return out


def squeeze(text):
    """A line as compared with a listed one: its words, whatever the spacing."""
    return " ".join(text.split())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--room", action="append", choices=sorted(ROOMS), help="a room (repeatable; default: all)")
    ap.add_argument("--n", type=int, default=40, help="mutants that compile, per room")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--units-only", action="store_true", help="the unit tests only (the quick check make test runs)")
    ap.add_argument("--timeout", type=float, default=0, help="seconds a mutant's suite may take (default: 3 times the original's + 30)")
    ap.add_argument("--recheck", action="store_true", help="run only the survivors of the room's last run (BUILD/mutate/ROOM.json) "
                    "again, after tests were added: its counts, with those now killed moved from survived to killed")
    ap.add_argument("--real", action="store_true", help="also the room's cases on the real Apache Kafka broker (one started "
                    "for the run), for the mutants of the files they cover")
    ap.add_argument("--sanitize", metavar="FLAGS", help="mutants built with these sanitizer flags (the Makefile's ASAN_SAN) in the "
                    "build make asan-build makes (build-asan/), and run under them: a leak, an overflow or undefined behaviour a "
                    "mutant causes kills it")
    ap.add_argument("--expect-killed", type=int, default=0, help="fail unless at least this many mutants of each room were killed "
                    "(make test's check that the tool still finds what it plants)")
    a = ap.parse_args()
    build = a.build
    if a.sanitize:
        build = SANITIZE_BUILD
        MAKE_VARS[:] = [f"SAN={a.sanitize}", "OPT=-O1"]
    outdir = os.path.join(ROOT, build, "mutate")
    os.makedirs(outdir, exist_ok=True)
    ok = True
    for room in a.room or sorted(ROOMS):
        cases = [] if a.units_only else ROOMS[room]["cases"]
        if not ROOMS[room]["units"] and not cases:
            say(f"mutate {room}: no tests to run with --units-only, skipped")
            continue
        tmp = tempfile.mkdtemp(prefix=f"sd-mutate-{room}-")
        real = ROOMS[room].get("real") if a.real and not a.units_only else None
        try:
            if real:
                start_kafka(tmp)
            ok &= mutate_room(build, room, a, cases, tmp, outdir, real) >= a.expect_killed
        finally:
            if real:
                subprocess.run([KAFKA_SH, "stop", os.path.join(tmp, "kafka")], cwd=ROOT, timeout=120)
                os.environ.pop("SD_TEST_KAFKA", None)
            shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(0 if ok else 1)


KAFKA_SH = os.path.join(ROOT, "scenarios", "env", "kafka", "kafka.sh")


def start_kafka(tmp):
    """One Apache Kafka broker for every mutant's real-broker cases (stopped by the caller, and with this process at the latest)."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    r = subprocess.run([KAFKA_SH, "start", os.path.join(tmp, "kafka"), "", str(os.getpid()), str(port)], cwd=ROOT,
                       capture_output=True, text=True, timeout=900)
    if r.returncode:
        sys.exit("mutate: cannot start the Apache Kafka broker: " + r.stderr[-2000:])
    lines = r.stdout.strip().splitlines()
    brokers = [ln for ln in lines if not ln.startswith("proxy ")][-1]
    proxy = [ln for ln in lines if ln.startswith("proxy ")][-1].split(" ", 1)[1]
    os.environ["SD_TEST_KAFKA"] = f"{brokers} {proxy}"
    say(f"mutate: Apache Kafka at {brokers} for the real-broker cases")


def mutate_room(build, room, a, cases, tmp, outdir, real=None):
    t0 = time.time()
    suite = Suite(build, room, tmp, cases, real, a.sanitize.split() if a.sanitize else ())
    compile_of, orig_hash, orig_obj = {}, {}, {}
    for f in ROOMS[room]["files"]:
        obj = f"{build}/{os.path.splitext(f)[0]}.o"
        cmd = make_command(build, obj)
        compile_of[f] = cmd
        o = os.path.join(tmp, "orig-" + os.path.basename(obj))
        c = [o if x == obj else x for x in cmd]
        subprocess.run(c, cwd=ROOT, check=True)
        orig_obj[f] = o
        orig_hash[f] = stripped_hash(o, tmp)
    # the suite must pass on the original first (one file's original object stands for the library's)
    first = ROOMS[room]["files"][0]
    if not suite.link(orig_obj[first]):
        say(f"mutate {room}: the tests do not link with the original objects")
        return -1
    t1 = time.time()
    base = suite.passes(3600)
    if base is not True:
        say(f"mutate {room}: the room's tests fail on the original code ({base}): nothing to measure")
        return -1
    took = time.time() - t1
    timeout = a.timeout or 3 * took + 30
    pool = []
    for f in ROOMS[room]["files"]:
        pool += mutants_of(f)
    # each mutant's place in the draw is a hash of the seed and its text
    # (file, line, rewrite), not of its place in the pool: an edit elsewhere
    # in the room adds or drops its own mutants and leaves the others' order
    pool.sort(key=lambda m: (hashlib.sha256(f"{a.seed}\0{m[0]}\0{squeeze(m[2])}\0{squeeze(m[3])}".encode()).hexdigest(), m[1]))
    counts = {"killed": 0, "survived": 0, "not compiling": 0, "equivalent": 0, "equivalent (listed)": 0, "accepted (listed)": 0}
    limit, first_tried = a.n, 0
    if a.recheck:
        # the last run's survivors, wherever their lines are now; the rest of its counts stand
        last = json.load(open(os.path.join(outdir, room + ".json")))
        want = {(v["file"], squeeze(v["old"]), squeeze(v["new"])) for v in last["survivors"]}
        pool = [m for m in pool if (m[0], squeeze(m[2]), squeeze(m[3])) in want]
        counts = dict(last["counts"], survived=0)
        first_tried = last.get("tried") or int((re.findall(r"of (\d+) drawn", open(os.path.join(outdir, room + ".txt")).read()) or [0])[0])
        limit = sum(v for k, v in counts.items() if k != "not compiling") + len(pool)
        say(f"mutate {room}: rechecking the {len(pool)} survivors of the last run (seed {last['seed']}, {last['n']} that compile)")
    seen, survivors, tried = {}, [], 0
    listed = listed_survivors()
    say(f"mutate {room}: {len(pool)} mutants of {len(ROOMS[room]['files'])} files; the suite takes {took:.0f}s on the original "
        f"(a mutant's timeout {timeout:.0f}s); seed {a.seed}, {a.n} that compile")
    for f, lineno, old, new in pool:
        if sum(v for k, v in counts.items() if k != "not compiling") >= limit:
            break
        tried += 1
        known = listed.get((f, squeeze(old), squeeze(new)))
        if a.recheck and known:
            # it survived the last run, and is listed since: nothing to run
            counts[f"{known[0]} (listed)"] += 1
            say(f"  survived, {known[0]:<10} (listed) {f}:{lineno}: {old.strip()}  ==>  {new.strip()}")
            continue
        src = open(os.path.join(ROOT, f)).read().splitlines(keepends=True)
        src[lineno - 1] = new + "\n"
        mdir = os.path.join(tmp, "m", os.path.dirname(f))
        os.makedirs(mdir, exist_ok=True)
        mpath = os.path.join(mdir, os.path.basename(f))
        open(mpath, "w").writelines(src)
        obj = f"{build}/{os.path.splitext(f)[0]}.o"
        mobj = os.path.join(tmp, "mutant.o")
        cmd = [mobj if x == obj else mpath if x == f else x for x in compile_of[f]]
        if subprocess.run(cmd, cwd=ROOT, capture_output=True).returncode:
            counts["not compiling"] += 1
            continue
        h = stripped_hash(mobj, tmp)
        where = f"{f}:{lineno}: {old.strip()}  ==>  {new.strip()}"
        if h == orig_hash[f]:
            counts["equivalent"] += 1
            say(f"  equivalent (the same object)  {where}")
            continue
        if h in seen:
            verdict = seen[h]
        elif not suite.link(mobj):
            counts["not compiling"] += 1
            continue
        else:
            res = suite.passes(timeout, f)
            verdict = "survived" if res is True else "killed"
            seen[h] = verdict
            if verdict == "killed":
                say(f"  killed by {res:<22} {where}")
        known = listed.get((f, squeeze(old), squeeze(new))) if verdict == "survived" else None
        if known:
            counts[f"{known[0]} (listed)"] += 1
            say(f"  survived, {known[0]:<10} (listed) {where}")
            continue
        counts[verdict] += 1
        if verdict == "survived":
            survivors.append({"file": f, "line": lineno, "old": old, "new": new})
            say(f"  SURVIVED                      {where}")
    # the rate over the mutants that are faults: killed against every survivor but the equivalent ones
    judged = counts["killed"] + counts["survived"] + counts["accepted (listed)"]
    rate = 100.0 * counts["killed"] / judged if judged else 0.0
    summary = (f"mutate {room}: {counts['killed']} killed, {counts['survived']} survived, {counts['accepted (listed)']} accepted and "
               f"{counts['equivalent (listed)']} equivalent as docs/testing.md lists, {counts['equivalent']} the same object, "
               f"{counts['not compiling']} not compiling, of {first_tried if a.recheck else tried} drawn; kill rate {rate:.1f}% ({time.time() - t0:.0f}s"
               f"{', the survivors rechecked' if a.recheck else ''})")
    say(summary)
    with open(os.path.join(outdir, room + ".json"), "w") as fh:
        json.dump({"room": room, "seed": a.seed, "n": a.n, "counts": counts, "kill_rate": rate, "survivors": survivors,
                   "cases": cases, "tried": first_tried if a.recheck else tried}, fh, indent=1)
    with open(os.path.join(outdir, room + ".txt"), "w") as fh:
        fh.write(summary + "\n")
        for s in survivors:
            fh.write(f"{s['file']}:{s['line']}\n- {s['old']}\n+ {s['new']}\n")
    return counts["killed"]


if __name__ == "__main__":
    main()
