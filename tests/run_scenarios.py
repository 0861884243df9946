#!/usr/bin/env python3
"""End-to-end scenario tests for streamdrill, as data (like curl's tests/data).

Each tests/scenarios/*.drill case carries its expectations in `# test:` lines (the directives: `--help-directives`,
docs/testing.md, tests/suite/cases.py's DIRECTIVES), like curl's tests/data:

    # test: args --set mode=at-least-once
    # test: exit 1
    # test: summary counts.duplicated > 0

Cases under tests/long/ (`--long`, make test-real-long) are the longer
real-stack matrix: the same directives, run against the real broker.

Each tests/broken/*.drill file starts with `# expect: LINE:COL TEXT`: `check`
and `run` must both exit 2 with an error naming FILE:LINE:COL and containing
TEXT, and `run` must start nothing (no run folder).

The coded tests (the harness killed mid-run, the reports as readers see them, an
external broker, ...) are functions in tests/suite/, each registered by name
in the module of its concern (tests/suite/registry.py); the static checks
(the docs against the code) are tests/suite/static.py.

--only takes exact names, comma-separated: a case, a broken drill, a coded
test, or `broken` (every broken drill) or `cases` (every scenario case); a
name with * is a pattern ('join-*'); a name or pattern that matches nothing
is an error.
"""
import argparse
import concurrent.futures
import contextlib
import fcntl
import fnmatch
import glob
import os
import sys
import time
import traceback

from suite import explore, install, process, reports, secrets, static, verdicts  # noqa: F401  (each registers its coded tests)
from suite.cases import DIRECTIVES, Case, run_broken, run_cases_pooled
from suite.common import OUT, ROOT, CountingOut
from suite.explore import EXPLORE_WEAK, test_explore_cluster, test_explore_long, test_explore_real
from suite.install import test_image, test_realtime_compare
from suite.registry import CODED, call, in_phase
from suite.reports import test_golden
from suite.stacks import (
    run_cases_real,
    setup_stacks,
    start_cluster,
    start_postgres,
    start_real_kafka,
    start_registry,
    stop_cluster,
    stop_postgres,
    stop_real_kafka,
    stop_registry,
    wants_secure,
)
from suite.static import update_readme_reference


def run_long(binary, only, once=False):
    """The longer real-stack matrix (tests/long/): repeated drills on the real
    broker, Kafka Connect and Spark, each case as in tests/scenarios/; only: the names to run (None: all); once: each
    case once, whatever its repeat says."""
    cases = [Case(p) for p in sorted(glob.glob(os.path.join(ROOT, "tests", "long", "*.drill")))]
    cases = [c for c in cases if not only or c.name in only]
    for c in cases if once else ():
        c.repeat = c.parallel = 1
    t0 = time.time()
    ok = True
    if not only or "image" in only:
        ok &= test_image(binary)  # the OCI image (make image), about a minute
    if not only or "explore-cluster" in only:
        start_cluster()
        try:
            ok &= test_explore_cluster(binary)
        finally:
            stop_cluster()
    if not only or any(n.startswith("explore-") and n != "explore-cluster" for n in only):
        ok &= test_explore_long(binary, only)
    if not only or "ci-recipes" in only:
        ok &= call("ci-recipes", binary, only)  # docs/ci.md's recipes in bare Debian roots, about four minutes
    want_rt = not only or "realtime-compare" in only
    want_real = cases or want_rt or not only or "explore-real" in only
    if want_real:
        setup_stacks(cases, spark=want_rt)
        start_real_kafka(secure=wants_secure(cases))
        try:
            if not only or "explore-real" in only:
                ok &= test_explore_real(binary)
            if want_rt:
                # the three-way comparison (not in make test: about a minute and a half)
                ok &= test_realtime_compare(binary, both_intervals=True)
            if any("postgres" in c.needs for c in cases):
                start_postgres()
            if any("registry" in c.needs for c in cases):
                start_registry()
            # one run at a time (a repeat's `parallel J` aside): the long matrix's figures are each drill's own
            ok &= run_cases_real(binary, cases, at_once=1)
        finally:
            stop_registry()
            stop_postgres()
            stop_real_kafka()
    print(f"--   long real-stack matrix: {time.time() - t0:.0f}s")
    print("long matrix: " + ("all passed" if ok else "FAILED"))
    return ok


LONG_CODED = {"image", "explore-cluster", "explore-real", "explore-correct", "realtime-compare", "ci-recipes"}


def names_of(only, long_run):
    """--only's names as a set (None: everything), each checked to name something."""
    if not only:
        return None
    names = {n.strip() for n in only.split(",") if n.strip()}
    folder = "long" if long_run else "scenarios"
    known = {os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, "tests", folder, "*.drill"))}
    if long_run:
        known |= LONG_CODED | {"explore-" + n for n, _ in EXPLORE_WEAK}
    else:
        known |= {n for n, (_, phase) in CODED.items() if phase != "long"} | {"broken", "cases"}
        known |= {os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, "tests", "broken", "*.drill"))}
    # a name with * or ? is a pattern (`'join-*'`): it stands for the names it matches, at least one
    out, unknown = set(), []
    for n in sorted(names):
        hits = fnmatch.filter(sorted(known), n) if any(c in n for c in "*?[") else [n] if n in known else []
        if not hits:
            unknown.append(n)
        out |= set(hits)
    if unknown:
        print(f"run_scenarios: --only {', '.join(unknown)}: no such case, broken drill or coded test "
              f"(tests/{folder}/*.drill, tests/suite/registry.py)", file=sys.stderr)
        sys.exit(2)
    return out


def hold_the_out_folder():
    """One runner at a time in tests/out: a second one would start its
    broker, registry and clusters in the same folders and stop the first's
    at its end (a run of the first then waits on a broker that is gone)."""
    lock = open(os.path.join(OUT, ".runner.lock"), "a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.seek(0)
        print(f"run_scenarios: another run_scenarios.py (pid {lock.read().strip() or '?'}) is using {OUT}; "
              "wait for it to end", file=sys.stderr)
        sys.exit(2)
    lock.truncate(0)
    lock.write(str(os.getpid()))
    lock.flush()
    globals()["_out_lock"] = lock  # held until this process ends


# how many coded tests of a phase go at once: those on the embedded cluster
# mostly wait on their pipelines (each has its own folder, pipeline and
# cluster); the others one at a time
CODED_AT_ONCE = {"before": 2, "after": 2}

# how many embedded runs go at once (make test's case phase; --stop-at-first runs one)
EMBEDDED_AT_ONCE = 6


class Runner:
    def __init__(self, binary, only, once, stop):
        self.binary, self.only, self.once, self.stop = binary, only, once, stop
        self.ok = True
        self.took = {}  # part of the run -> seconds, printed at its end
        self.slow = []  # (seconds, coded test), the slowest printed at its end

    @contextlib.contextmanager
    def timed(self, part):
        t0 = time.time()
        try:
            yield
        finally:
            self.took[part] = self.took.get(part, 0) + time.time() - t0

    def times(self):
        return ", ".join(f"{k} {v:.0f}s" for k, v in self.took.items() if v >= 0.5)

    def wants(self, name, group=None):
        return not self.only or name in self.only or (group is not None and group in self.only)

    def done(self, good):
        self.ok &= bool(good)
        if self.stop and not self.ok:
            print("scenario tests: FAILED (stopped at the first failure)")
            sys.exit(1)

    def coded(self, phase):
        with self.timed(phase):
            self._coded(phase)

    def _coded(self, phase):
        names = [n for n in in_phase(phase) if self.wants(n)]
        at_once = 1 if self.stop else CODED_AT_ONCE.get(phase, 1)
        if at_once <= 1:
            for name in names:
                self.done(self._one(name))
            return
        # beside each other, each test's lines held and printed whole, in the phase's order
        with concurrent.futures.ThreadPoolExecutor(max_workers=at_once) as ex:
            for f in [ex.submit(self._one, name, True) for name in names]:
                good, text = f.result()
                sys.stdout.write(text)
                sys.stdout.flush()
                self.done(good)

    def _one(self, name, hold=False):
        """Coded test NAME: whether it passed (and, held, the lines it printed)."""
        t0 = time.time()
        with sys.stdout.held() if hold else contextlib.nullcontext([]) as lines:
            try:
                good = call(name, self.binary, self.only)
            except Exception:  # noqa: BLE001 - a coded test that breaks is a failure of its own, never the runner's end
                print(f"FAIL {name}: the test itself raised\n  " + traceback.format_exc().strip().replace("\n", "\n  "))
                good = False
        self.slow.append((time.time() - t0, name))
        return (good, "".join(lines)) if hold else good


def main():
    sys.stdout = CountingOut(sys.stdout)
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "streamdrill"))
    ap.add_argument("--only", default=None, help="names, comma-separated: cases, broken drills, coded tests, `broken`, `cases`; "
                    "a name with * is a pattern")
    ap.add_argument("--no-real", action="store_true", help="skip cases that need the real Kafka broker or Spark")
    ap.add_argument("--once", action="store_true", help="run each case once, whatever its repeat says")
    ap.add_argument("--stop-at-first", action="store_true", help="stop at the first failure (exit 1)")
    ap.add_argument("--help-directives", action="store_true", help="the `# test:` directives a case may carry")
    ap.add_argument("--update-readme", action="store_true", help="rewrite docs/language.md's scenario-language reference from the table")
    ap.add_argument("--update-golden", action="store_true", help="rewrite tests/golden/ from this build, run nothing else")
    ap.add_argument("--long", action="store_true", help="run the longer real-stack matrix in tests/long/ instead")
    a = ap.parse_args()
    if a.help_directives:
        for _, form, meaning, _ in DIRECTIVES:
            print(f"# test: {form}\n    {meaning}")
        sys.exit(0)
    binary = os.path.abspath(a.bin)
    os.makedirs(OUT, exist_ok=True)
    hold_the_out_folder()
    if a.update_readme:
        sys.exit(0 if update_readme_reference(binary) else 1)
    if a.update_golden:
        sys.exit(0 if test_golden(binary, update=True) else 1)
    only = names_of(a.only, a.long)
    if a.long:
        sys.exit(0 if run_long(binary, only, a.once) else 1)
    run = Runner(binary, only, a.once, a.stop_at_first)
    run.coded("static")
    run.coded("before")
    with run.timed("broken"):
        for path in sorted(glob.glob(os.path.join(ROOT, "tests", "broken", "*.drill"))):
            if run.wants(os.path.splitext(os.path.basename(path))[0], "broken"):
                run.done(run_broken(binary, path))
    cases = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "scenarios", "*.drill"))):
        case = Case(path)
        if not run.wants(case.name, "cases") or case.name == "long-running" or (a.no_real and case.needs):
            continue
        if a.once:
            case.repeat = case.parallel = 1
        cases.append(case)
    want_rt = not a.no_real and run.wants("realtime-compare")
    want_lk = not a.no_real and run.wants("ledger-kill")
    real = [c for c in cases if c.needs] + ([True] if want_rt or want_lk else [])
    # the embedded cases' runs in one pool: each run starts its own embedded
    # cluster and pipeline, and most of a run is spent waiting on the pipeline
    with run.timed("cases"):
        pooled = run_cases_pooled(binary, [c for c in cases if not c.needs], 1 if a.stop_at_first else EMBEDDED_AT_ONCE)
        with contextlib.closing(pooled):
            for good, text in pooled:
                print(text)
                run.done(good)
    run.coded("after")
    if not a.no_real:
        run.coded("local-real")
    if real:
        t0 = time.time()
        run.took["real cases"] = 0  # the real part, before "real" (its coded tests) and "last"
        # Spark for the real phase's coded tests; --only with none of them: what its cases need
        setup_stacks(cases, spark=any(run.wants(n) for n in in_phase("real")))
        start_real_kafka(secure=wants_secure(cases))
        try:
            if any("postgres" in c.needs for c in cases):
                start_postgres()
            if any("registry" in c.needs for c in cases):
                start_registry()
            run.done(run_cases_real(binary, [c for c in cases if c.needs]))
            run.coded("real")
        finally:
            stop_registry()
            stop_postgres()
            stop_real_kafka()
        print(f"--   real Kafka and Spark part: {time.time() - t0:.0f}s")
        run.took["real cases"] = time.time() - t0 - run.took.get("real", 0)
    run.coded("last")
    if run.times():
        print(f"--   time by part: {run.times()}")
    if run.slow:
        print("--   slowest coded tests: " + ", ".join(f"{n} {t:.0f}s" for t, n in sorted(run.slow, reverse=True)[:8]))
    print("scenario tests: " + ("all passed" if run.ok else "FAILED"))
    print(f"scenarios: {sys.stdout.passed} passed, {sys.stdout.failed} failed")
    sys.exit(0 if run.ok else 1)


if __name__ == "__main__":
    main()
