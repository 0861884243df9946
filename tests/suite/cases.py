"""The case runner: tests/scenarios/*.drill and tests/long/*.drill carry their expectations in `# test:` lines (the directives, listed once in DIRECTIVES: their help, docs/testing.md and the parser come from it); tests/broken/*.drill carry `# expect: LINE:COL TEXT`."""
import concurrent.futures
import glob
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import threading
import time

from .common import OUT, REAL, ROOT


def load_json_path(doc, path):
    """The value at a dotted path of summary.json; KeyError when the path leads nowhere (a missing key, an index past
    the end, a step through null or through a value that is no object or list)."""
    cur = doc
    for part in path.split("."):
        try:
            if part == "__len__":
                cur = len(cur)
            elif isinstance(cur, list):
                cur = cur[int(part)]
            elif isinstance(cur, dict):
                cur = cur[part]
            else:
                raise KeyError(part)
        except (KeyError, IndexError, TypeError, ValueError):
            raise KeyError(path) from None
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


OPS = ("==", "!=", ">=", "<=", ">", "<", "contains")


def _args(case, rest):
    case.args += shlex.split(rest)


def _scenario(case, rest):
    case.scenario = os.path.normpath(os.path.join(os.path.dirname(case.path), rest))


def _exit(case, rest):
    parts = rest.split()
    case.exit = [int(x) for x in parts[0].split("|")]
    case.exit_reason = parts[1] if len(parts) > 1 else None
    if 3 in case.exit and len(case.exit) > 1 and not case.exit_reason:
        raise ValueError("an exit that allows inconclusive (3) beside another code names the one reason it allows: "
                         "`exit 0|3 REASON`")


def _summary(case, rest):
    p, op, v = rest.split(None, 2)
    if op not in OPS:
        raise ValueError(f"summary: unknown comparison {op}")
    case.summary.append((p, op, v))


def _stderr(case, rest):
    # `stderr contains TEXT` or `stderr TEXT`: the whole text either way
    case.stderr.append(rest[len("contains "):] if rest.startswith("contains ") else rest)


def _repeat(case, rest):
    parts = rest.split()
    case.repeat = int(parts[0])
    if "parallel" in parts:
        case.parallel = int(parts[parts.index("parallel") + 1])


def _rundb(case, rest):
    sql, cmp = rest.split(";;")
    op, v = cmp.split(None, 1)
    if op not in OPS:
        raise ValueError(f"rundb: unknown comparison {op}")
    case.rundb.append((sql.strip(), op, v.strip()))


def _set(attr, conv=None):
    def f(case, rest):
        setattr(case, attr, conv(rest) if conv else True)
    return f


def _add(attr):
    def f(case, rest):
        getattr(case, attr).append(rest)
    return f


# Every `# test:` directive, once: its form, what it means, how it is read. The runner's --help-directives and
# docs/testing.md's table are made from it (tests/suite/static.py checks the docs against it).
DIRECTIVES = [
    ("args", "args ARG...", "extra command-line arguments", _args),
    ("scenario", "scenario PATH", "run another file instead of this one (relative to this one)", _scenario),
    ("exit", "exit CODE[|CODE...] [REASON]", "the expected exit code; one that allows 3 beside another names the only "
     "inconclusive reason it allows", _exit),
    ("summary", "summary PATH OP VALUE", "a summary.json value (dotted path, `__len__` for a length) compared with ==, !=, >, >=, "
     "<, <= or contains; null equals only `null` and satisfies no ordering; a path that leads nowhere fails", _summary),
    ("stderr", "stderr [contains] TEXT", "streamdrill's stderr must contain TEXT, all of it", _stderr),
    ("repeat", "repeat N [parallel J]", "run it N times (J at once on the real stacks; the embedded cases' runs share one "
     "pool); every run must meet every expectation", _repeat),
    ("duplicates-traced", "duplicates-traced", "every sampled duplicated id lists one writer per copy, in report.md too",
     _set("traced")),
    ("within", "within SECONDS", "the run ends within SECONDS (a refusal that must not hang)", _set("within", float)),
    ("secrets-nowhere", "secrets-nowhere", "the values of the secret properties (a name holding password or secret) of "
     "the client properties file the case ran with (`needs kafka-secure=...`), of its environment (`:env`) and of the "
     "`-X` options of its args are in no file of its out folder (run.db, the reports, export/, the logs), nor its "
     "console, nor `streamdrill runbook`", _set("secrets_nowhere")),
    ("needs", "needs WHAT...", "kafka (the real broker), kafka-secure=SHAPE[:wrong-secret|:wrong-ca|:env] (the same broker's "
     "TLS and SASL listener of SHAPE, eventhubs, confluent, msk-scram or msk-mtls: `--brokers` and `--kafka-config` its "
     "client properties, spoilt with a wrong secret or an untrusted CA, or `:env` with the secret in the run's "
     "environment as ${ENV:SD_TEST_KAFKA_SECRET}), proxy, cluster (3 brokers), sparkcluster, spark, flink, flink-1.19 (an older Flink release), connect, streams (Kafka Streams' jars), pyproc (the Python stream processors' virtualenv), postgres, registry (Apicurio Registry: `--set registry=URL`): "
     "started here; such a case is left out by --no-real", lambda c, r: c.needs.update(r.split())),
    ("kills-landed-at-least", "kills-landed-at-least SHARE", "share of kills, over all repeats, that landed mid-batch",
     _set("landed_share", float)),
    ("reports-smaller-than", "reports-smaller-than BYTES", "summary.json, junit.xml, report.md and report.html each smaller",
     _set("reports_max", int)),
    ("allow-timeouts", "allow-timeouts", "the drill may wait out a readiness or await timeout (otherwise a failure)",
     _set("allow_timeouts")),
    ("writers-contain", "writers-contain TEXT", "every sampled duplicate's writers mention TEXT", _add("writers_contain")),
    ("file-count", "file-count NAME", "count the JSON-lines file NAME of the run folder independently (ids per line against the "
     "ledger's sends): rows, duplicated, duplicate_rows and lost must match summary.json", _add("file_counts")),
    ("runbook-contains", "runbook-contains REGEX", "`streamdrill runbook` prints a line matching REGEX", _add("runbook_contains")),
    ("rundb", "rundb SQL ;; OP VALUE", "a query on the run's run.db (its first value), compared like summary", _rundb),
]
DIRECTIVE_BY_NAME = {d[0]: d for d in DIRECTIVES}


def directives_markdown():
    """The directives as the Markdown table docs/testing.md holds."""
    rows = ["| directive | meaning |", "|---|---|"]
    for _, form, meaning, _ in DIRECTIVES:
        rows.append(f"| `# test: {form}` | {meaning} |")
    return "\n".join(rows) + "\n"


class Case:
    def __init__(self, path):
        self.path = path
        self.name = os.path.splitext(os.path.basename(path))[0]
        self.args, self.exit, self.exit_reason, self.summary, self.stderr = [], [0], None, [], []
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
        self.secrets_nowhere = False
        self.within = None
        for n, line in enumerate(open(path), 1):
            m = re.match(r"#\s*test:\s*(\S+)\s*(.*)$", line)
            if not m:
                continue
            key, rest = m.group(1), m.group(2).strip()
            if key not in DIRECTIVE_BY_NAME:
                raise SystemExit(f"{path}:{n}: unknown test directive {key} (tests/run_scenarios.py --help-directives)")
            try:
                DIRECTIVE_BY_NAME[key][3](self, rest)
            except (ValueError, IndexError) as e:
                raise SystemExit(f"{path}:{n}: {key}: {e or 'malformed'}") from None


def run_case_once(binary, case, i):
    out = os.path.join(OUT, f"{case.name}-{i}")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [binary, "run", case.scenario, "--out", out, "--quiet"] + case.args
    if "kafka" in case.needs:
        cmd += ["--brokers", REAL["brokers"]]
    conf, env = None, None
    for need in sorted(n for n in case.needs if n.startswith("kafka-secure=")):
        shape, _, spoil = need.split("=", 1)[1].partition(":")
        address, conf = REAL["secure"][shape]
        if spoil == "env":
            # the secrets out of the file, in the environment of the run: ${ENV:NAME}
            env = dict(os.environ, SD_TEST_KAFKA_SECRET=config_secrets(conf)[0])
            conf = spoilt_config(conf, spoil, out + f"-{spoil}.properties")
        elif spoil:
            conf = spoilt_config(conf, spoil, out + f"-{spoil}.properties")
        cmd += ["--brokers", address, "--kafka-config", conf]
    if "proxy" in case.needs:
        cmd += ["--proxy", REAL["proxy"]]
    if "cluster" in case.needs:
        cmd += ["--cluster", REAL["cluster"]]
    if "sparkcluster" in case.needs:
        # only the variables the drill uses: --set of one it does not is an error
        text = open(case.scenario).read()
        cmd += [a for k, v in (("master", REAL["spark_master"]), ("sparkdir", REAL["spark_cluster"]))
                if re.search(rf"^set .*\b{k}=|\{{{k}[}}:]", text, re.M) for a in ("--set", f"{k}={v}")]
    if "flink" in case.needs:
        cmd += ["--set", "flinkdir=" + REAL["flink_cluster"]]
    if "flink-1.19" in case.needs:
        cmd += ["--set", "flinkdir=" + REAL["old_flink_cluster"]]
    if "postgres" in case.needs:
        cmd += ["--set", "pg=" + REAL["pg"]]
    if "registry" in case.needs:
        # a drill whose fault commands stop and start the registry (it names
        # its folder) gets one of its own for the run: the others' stays up
        own = re.search(r"^set .*\bregistrydir=", open(case.scenario).read(), re.M)
        if own:
            reg_dir = out + "-registry"
            reg = subprocess.run([os.path.join(ROOT, "scenarios", "env", "registry", "registry.sh"), "start", reg_dir, "", str(os.getpid())],
                                 capture_output=True, text=True, timeout=300)
            if reg.returncode != 0:
                return [f"its own schema registry did not start: {reg.stderr[-1000:]}"], 0.0, "", []
            cmd += ["--set", "registry=" + reg.stdout.split()[-1], "--set", "registrydir=" + reg_dir]
        else:
            cmd += ["--set", "registry=" + REAL["registry"]]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    finally:
        if "registry" in case.needs and own:
            subprocess.run([os.path.join(ROOT, "scenarios", "env", "registry", "registry.sh"), "stop", reg_dir], timeout=60)
    took = time.time() - t0
    problems = []
    if case.within is not None and took > case.within:
        problems.append(f"the run took {took:.1f}s, over {case.within:g}s")
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
    if p.returncode == 3 and case.exit_reason and (summary or {}).get("reason") != case.exit_reason:
        problems.append(f"inconclusive for {(summary or {}).get('reason')!r}, the only reason allowed is {case.exit_reason}")
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
            except KeyError:
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
    if case.secrets_nowhere:
        rb = "".join(subprocess.run([binary, "runbook", os.path.dirname(d)], capture_output=True, text=True).stdout for d in sdirs)
        problems += secrets_found(conf, env, case.args, out, p.stdout, p.stderr, rb)
    kills = [f for f in (summary or {}).get("faults", []) if f["kind"] == "kill" and "mid-batch" in f["detail"]]
    return problems, took, p.stderr, kills


def config_secrets(conf):
    """The values of the secret properties (a name holding password or secret) of a client properties file."""
    found = []
    for line in open(conf):
        k, eq, v = line.strip().partition("=")
        if eq and not k.startswith(("#", "!")) and ("password" in k.lower() or "secret" in k.lower()) and v.strip():
            found.append(v.strip())
    return found


def spoilt_config(conf, spoil, path):
    """A copy of the client properties file conf at path (mode 0600): wrong-secret, each secret value changed;
    wrong-ca, ssl.ca.location a CA that signed nothing of the broker's (kafka.sh's untrusted-ca.pem); env, each secret
    value ${ENV:SD_TEST_KAFKA_SECRET} (the file holds one secret)."""
    lines = []
    for line in open(conf):
        k, eq, v = line.rstrip("\n").partition("=")
        if eq and spoil == "wrong-secret" and ("password" in k.lower() or "secret" in k.lower()):
            line = f"{k}=wr0ng-{v[::-1]}\n"
        elif eq and spoil == "env" and ("password" in k.lower() or "secret" in k.lower()):
            line = f"{k}=${{ENV:SD_TEST_KAFKA_SECRET}}\n"
        elif eq and spoil == "wrong-ca" and k == "ssl.ca.location":
            line = f"{k}={os.path.join(os.path.dirname(v), 'untrusted-ca.pem')}\n"
        lines.append(line)
    if spoil not in ("wrong-secret", "wrong-ca", "env"):
        raise SystemExit(f"needs kafka-secure=...:{spoil}: expected wrong-secret, wrong-ca or env")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.writelines(lines)
    return path


def secrets_found(conf, env, args, out, *outputs):
    """Where the secrets show (of the client properties file conf, of its ${ENV:...} in env, of the -X options in
    args): the files under out and the outputs given."""
    secrets = config_secrets(conf) if conf else []
    if env and "SD_TEST_KAFKA_SECRET" in env:
        secrets.append(env["SD_TEST_KAFKA_SECRET"])
    secrets += [a.split("=", 1)[1] for x, a in zip(args, args[1:], strict=False) if x == "-X" and "=" in a
                and ("password" in a.split("=", 1)[0].lower() or "secret" in a.split("=", 1)[0].lower())]
    if not secrets:
        return ["secrets-nowhere: no secret to look for (needs kafka-secure=SHAPE, or -X with a secret property in args)"]
    conf = conf or "-X"
    found = []
    for path in glob.glob(os.path.join(out, "**", "*"), recursive=True):
        if os.path.isfile(path):
            data = open(path, "rb").read()
            found += [f"{os.path.relpath(path, OUT)} holds a secret of {os.path.basename(conf)}" for t in secrets if t.encode() in data]
    names = ("stdout", "stderr", "the runbook")
    for name, text in zip(names, outputs, strict=True):
        found += [f"{name} holds a secret of {os.path.basename(conf)}" for t in secrets if t in text]
    return found


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
    """Run CASE's runs, CASE.parallel at a time, and print its line."""
    (ok, text), = run_cases_pooled(binary, [case], case.parallel)
    print(text)
    return ok


def run_cases_pooled(binary, cases, workers, lanes=()):
    """Every run of every case in one pool of WORKERS, yielding (ok, text) per
    case in the order given (LANES' cases first), as soon as that case's runs
    are all done.

    A lane holds one worker for cases that share something only one of them
    may use at a time (a cluster started for them, the proxy): a list of
    segments (start, stop, cases), each START, its cases one after another,
    STOP. Lanes go first and the repeated cases' runs next (many short runs
    fill the pool; a long run at the end would leave it half empty for
    longer)."""
    order = sorted(cases, key=lambda c: -c.repeat)
    ex = concurrent.futures.ThreadPoolExecutor(max_workers=workers)
    closing = threading.Event()
    futures = {}
    laned = [c for lane in lanes for _, _, group in lane for c in group]
    try:
        for lane in lanes:
            done = {id(c): [concurrent.futures.Future() for _ in range(c.repeat)] for _, _, group in lane for c in group}
            futures.update(done)
            ex.submit(run_lane, binary, lane, done, closing)
        for c in order:
            futures[id(c)] = [ex.submit(run_case_once, binary, c, i) for i in range(c.repeat)]
        for case in laned + list(cases):
            yield judge_case(case, [f.result() for f in futures[id(case)]])
    finally:
        # closed early (--stop-at-first): the runs not yet begun are dropped
        closing.set()
        ex.shutdown(wait=True, cancel_futures=True)


def run_lane(binary, lane, done, closing):
    """A lane of run_cases_pooled: segment by segment, START, each case's
    runs one after another (each run's result in its future, DONE[id(case)]),
    STOP. A start or a stop that fails fails every run of the lane not yet
    done with its error; once the pool closes, the runs not begun are
    cancelled."""
    runs = [f for fs in done.values() for f in fs]
    try:
        for start, stop, group in lane:
            if closing.is_set():
                break
            start()
            try:
                for case in group:
                    if closing.is_set():
                        break
                    for i, f in enumerate(done[id(case)]):
                        f.set_result(run_case_once(binary, case, i))
            finally:
                stop()
    except BaseException as e:  # noqa: BLE001 - handed to whoever waits on the lane's cases
        for f in runs:
            if not f.done():
                f.set_exception(e)
        return
    for f in runs:
        if not f.done():
            f.cancel()


def judge_case(case, results):
    """A case's line from its runs' results: ok when every run met every
    expectation (and enough kills landed, if the case asks)."""
    out = []
    bad = [(i, r) for i, r in enumerate(results) if r[0]]
    took = sorted(r[1] for r in results)
    label = f"{case.name}" + (f" x{case.repeat}" if case.repeat > 1 else "")
    extra = ""
    if case.landed_share is not None:
        kills = [k for r in results for k in r[3]]
        landed = sum(1 for k in kills if k.get("landed_mid_batch"))
        extra = f"; {landed} of {len(kills)} kills landed mid-batch"
        if not kills or landed < case.landed_share * len(kills):
            return False, f"FAIL {label}: only {landed} of {len(kills)} kills landed mid-batch (need {case.landed_share:.0%})"
    if bad:
        out.append(f"FAIL {label}: {len(bad)} of {case.repeat} runs wrong")
        for i, (problems, _, err, _k) in bad[:3]:
            out.append(f"  run {i}: " + "; ".join(problems))
            out.append("  stderr: " + err.strip().replace("\n", "\n          ")[-1500:])
        return False, "\n".join(out)
    return True, f"ok   {label}: {case.repeat} of {case.repeat} as expected (median {took[len(took) // 2]:.1f}s){extra}"


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
