"""The real stack a case may need, started and stopped by the project's own scripts: Apache Kafka (KRaft), a cluster of three brokers, Spark and Flink clusters, PostgreSQL, Kafka Connect's jars."""
import contextlib
import os
import subprocess
import time

from .cases import run_case, run_cases_pooled
from .common import OUT, REAL, ROOT, free_port

# how many real-stack runs outside the clusters go at once (two Spark drivers fit two cores)
REAL_AT_ONCE = 2


def wants_secure(cases):
    """Whether a case runs on one of the broker's TLS and SASL listeners (`# test: needs kafka-secure=SHAPE`)."""
    return any(n.startswith("kafka-secure=") for c in cases for n in c.needs)


def start_real_kafka(secure=False):
    """The broker of the real cases (kafka.sh start); secure: with its TLS and SASL listeners too (kafka.sh
    start-secure), one per shape in REAL["secure"]: SHAPE -> (address, client properties file)."""
    # a broker someone else started and stops (scripts/mutate.py --real: one for all its mutants)
    given = os.environ.get("SD_TEST_KAFKA", "").split()
    if len(given) == 2 and not secure:
        REAL["brokers"], REAL["proxy"] = given
        print(f"--   Apache Kafka given at {REAL['brokers']} (proxied listener: {REAL['proxy']})")
        return
    d = os.path.join(OUT, "kafka")
    t0 = time.time()
    r = subprocess.run([os.path.join(ROOT, "scenarios", "env", "kafka", "kafka.sh"), "start-secure" if secure else "start", d, "",
                        str(os.getpid()), str(free_port())], capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise SystemExit("cannot start the Apache Kafka broker: " + r.stderr[-2000:])
    lines = r.stdout.strip().splitlines()
    REAL["brokers"] = [ln for ln in lines if not ln.startswith(("proxy ", "secure "))][-1]
    REAL["proxy"] = [ln for ln in lines if ln.startswith("proxy ")][-1].split(" ", 1)[1]
    REAL["secure"] = {w[1]: (w[2], w[3]) for w in (ln.split() for ln in lines if ln.startswith("secure "))}
    REAL["dir"] = d
    shapes = f"; TLS and SASL listeners: {', '.join(f'{k} {v[0]}' for k, v in REAL['secure'].items())}" if secure else ""
    print(f"--   Apache Kafka (KRaft) started at {REAL['brokers']} (proxied listener: {REAL['proxy']}{shapes}) in {time.time() - t0:.0f}s")


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


def start_engine_cluster(engine, what, key, *args, env=None):
    """ENGINE's cluster (scenarios/env/ENGINE/ENGINE.sh cluster DIR ARGS...
    OWNER_PID), killed with this process at the latest: its folder in
    REAL[key]; returns the address it prints."""
    d = os.path.join(OUT, key.replace("_", "-"))
    r = subprocess.run([os.path.join(ROOT, "scenarios", "env", engine, engine + ".sh"), "cluster", d, *args, str(os.getpid())],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, **(env or {})))
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


# the older Flink release the drills of bugs in released connectors run on
# (scenarios/bugs/, docs/bugs.md), and the connector releases they name
OLD_FLINK = "1.19.3"
OLD_FLINK_CONNECTORS = ("3.2.0-1.19", "3.3.0-1.19")


def start_old_flink_cluster():
    start_engine_cluster("flink", f"Flink {OLD_FLINK} session cluster", "old_flink_cluster", env={"SD_FLINK_VERSION": OLD_FLINK})


def stop_old_flink_cluster():
    stop_engine_cluster("flink", f"Flink {OLD_FLINK} session cluster", "old_flink_cluster")


def run_cases_real(binary, cases, at_once=REAL_AT_ONCE):
    """The cases that need real engines, AT_ONCE runs at a time (1: one case
    at a time). Those on the 3-broker cluster, on the standalone Spark
    cluster and on each Flink cluster share it: a segment each (cases.py),
    the cluster up only for its own cases, in a lane beside the other
    cases' runs. The proxy is one for the whole real part: the segments
    whose cases use it, and its other cases, make one lane, one case at a
    time."""
    clusters = (("cluster", start_cluster, stop_cluster), ("sparkcluster", start_spark_cluster, stop_spark_cluster),
                ("flink", start_flink_cluster, stop_flink_cluster), ("flink-1.19", start_old_flink_cluster, stop_old_flink_cluster))
    segments = []
    for need, start, stop in clusters:
        group = [c for c in cases if need in c.needs and not any(c in g for _, _, g in segments)]
        if group:
            segments.append((start, stop, group))
    rest = [c for c in cases if not any(c in group for _, _, group in segments)]
    proxied = [c for c in rest if "proxy" in c.needs]
    through_proxy = [seg for seg in segments if any("proxy" in c.needs for c in seg[2])]
    if proxied:
        through_proxy.append((lambda: None, lambda: None, proxied))
    lanes = [[seg] for seg in segments if seg not in through_proxy] + ([through_proxy] if through_proxy else [])
    ok = True
    if at_once <= 1:
        # one case at a time, its repeats `parallel J` at once
        for lane in lanes:
            for start, stop, group in lane:
                start()
                try:
                    for case in group:
                        ok &= run_case(binary, case)
                finally:
                    stop()
        for case in rest:
            if case not in proxied:
                ok &= run_case(binary, case)
        return ok
    pooled = run_cases_pooled(binary, [c for c in rest if c not in proxied], at_once, lanes)
    with contextlib.closing(pooled):
        for good, text in pooled:
            print(text, flush=True)
            ok &= good
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


def start_registry():
    """The schema registry the drills share (scenarios/env/registry/registry.sh:
    Apicurio Registry; a drill that stops and starts its registry gets one of
    its own, cases.py), stopped with this process at the latest."""
    script = os.path.join(ROOT, "scenarios", "env", "registry", "registry.sh")
    install_phase("Apicurio Registry", "registry-fetch", [script, "fetch"])
    for key in ("registry",):
        d = os.path.join(OUT, key)
        r = subprocess.run([script, "start", d, str(free_port()), str(os.getpid())], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise SystemExit("cannot start the schema registry: " + r.stderr[-2000:])
        REAL[key] = r.stdout.split()[-1]
        REAL[key + "_dir"] = d
    print(f"--   schema registry started at {REAL['registry']}")


def stop_registry():
    for key in ("registry",):
        if REAL.get(key + "_dir"):
            subprocess.run([os.path.join(ROOT, "scenarios", "env", "registry", "registry.sh"), "stop", REAL[key + "_dir"]], timeout=60)
            REAL[key + "_dir"] = None
    print("--   schema registry stopped")


def install_phase(what, name, cmd, timeout=1800, env=None):
    """One line for an install step (pip, Maven): its output in .cache/logs/NAME.log, shown only when it fails."""
    log = os.path.join(ROOT, ".cache", "logs", name + ".log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    t0 = time.time()
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, text=True, timeout=timeout, env=env)
    if r.returncode != 0:
        tail = "".join(open(log).readlines()[-25:])
        raise SystemExit(f"cannot set up {what} (exit {r.returncode}); the whole output is in {log}:\n{tail}")
    print(f"--   {what}: ready in {time.time() - t0:.0f}s (log: {os.path.relpath(log, ROOT)})")


def setup_connect():
    install_phase("Kafka Connect's jars (Maven)", "connect-fetch", [os.path.join(ROOT, "scenarios", "env", "connect", "connect.sh"), "fetch"])


def setup_streams(cases):
    """The default release's jars and those of every release a case names (`--set version=V`)."""
    script = os.path.join(ROOT, "scenarios", "env", "streams", "streams.sh")
    versions = sorted({a.split("=", 1)[1] for c in cases for a in c.args if a.startswith("version=")})
    install_phase("Kafka Streams' jars (Maven)", "streams-fetch", [script, "fetch"])
    for v in versions:
        install_phase(f"Kafka Streams {v}'s jars (Maven)", f"streams-fetch-{v}", [script, "fetch", v])


def setup_pyproc():
    install_phase("the Python stream processors (pip: Quix Streams, faust-streaming)", "pyproc-fetch",
                  [os.path.join(ROOT, "scenarios", "env", "python", "pyproc.sh"), "fetch"])


def setup_flink():
    install_phase("Flink's runtime (pip: apache-flink-libraries) and its Kafka connector (Maven)", "flink-setup",
                  [os.path.join(ROOT, "scenarios", "env", "flink", "flink.sh"), "setup"])


def setup_old_flink():
    install_phase(f"Flink {OLD_FLINK}'s runtime (pip) and the Kafka connector releases {', '.join(OLD_FLINK_CONNECTORS)} (Maven)",
                  "flink-old-setup", [os.path.join(ROOT, "scenarios", "env", "flink", "flink.sh"), "setup", *OLD_FLINK_CONNECTORS],
                  env=dict(os.environ, SD_FLINK_VERSION=OLD_FLINK))


def setup_spark():
    install_phase("PySpark, delta-spark, pyarrow (pip) and the Kafka connector's jars (Maven)", "spark-setup",
                  [os.path.join(ROOT, "scenarios", "env", "spark", "spark.sh"), "setup"])


def setup_stacks(cases, spark=False):
    """Install what CASES need (their `needs`), Spark also when asked."""
    if spark or any("spark" in c.needs for c in cases):
        setup_spark()
    if any("connect" in c.needs for c in cases):
        setup_connect()
    if any("streams" in c.needs for c in cases):
        setup_streams([c for c in cases if "streams" in c.needs])
    if any("pyproc" in c.needs for c in cases):
        setup_pyproc()
    if any("flink" in c.needs for c in cases):
        setup_flink()
    if any("flink-1.19" in c.needs for c in cases):
        setup_old_flink()
