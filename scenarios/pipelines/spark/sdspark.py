"""Shared plumbing of streamdrill's PySpark pipelines.

Every pipeline here is a real Spark Structured Streaming query in local
mode: Kafka source (the spark-sql-kafka connector), a real sink, a real
checkpoint. This module gives them what streamdrill needs from any
pipeline and nothing more:

- the values of the run (brokers, topic, checkpoint, run folder) from
  streamdrill's environment or the command line;
- `SD-READY` when the query has started and `SD-PROGRESS <json>` for each
  StreamingQueryProgress, printed by the listener any job imports
  (`streamdrill.spark.watch`, in python/), so the harness can put Spark's
  own account beside its ledger;
- parsing of the parcel-scan JSON, with malformed records (not JSON, no
  id, no or unparsable event time) kept apart with their `sd-id` header;
- an optional per-row delay (`--row-delay-ms`), done in the JVM with
  `reflect('java.lang.Thread', 'sleep', ...)`, which stands in for real
  work and makes a micro-batch wide enough to be killed in;
- a clean stop on SIGTERM (the query is stopped, the JVM exits).
"""
import argparse
import glob
import os
import signal
import sys
import threading

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
# the listener a user's job imports (pip install ./python), used here as a user would
sys.path.insert(0, os.path.join(ROOT, "python"))
from streamdrill.spark import watch  # noqa: E402

SCHEMA = T.StructType([
    T.StructField("event_id", T.StringType()),
    T.StructField("parcel_id", T.StringType()),
    T.StructField("event_time", T.StringType()),
    T.StructField("location", T.StringType()),
    T.StructField("scan", T.StringType()),
    T.StructField("weight_g", T.LongType()),
])


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def arguments(description, extra=None):
    ap = argparse.ArgumentParser(description=description)
    env = os.environ.get
    ap.add_argument("--brokers", default=env("STREAMDRILL_BROKERS"))
    ap.add_argument("--topic", default=env("STREAMDRILL_TOPIC"))
    ap.add_argument("--checkpoint", default=env("STREAMDRILL_CHECKPOINT"))
    ap.add_argument("--run", default=env("STREAMDRILL_RUN_DIR"), help="the run folder (outputs go below it)")
    ap.add_argument("--trigger", default="processing-time:0s",
                    help="processing-time:INTERVAL | available-now | once | real-time:INTERVAL")
    ap.add_argument("--row-delay-ms", type=int, default=0, help="per-row pause standing in for real work")
    ap.add_argument("--max-offsets", type=int, default=0, help="maxOffsetsPerTrigger (0: no limit)")
    ap.add_argument("--state-store", choices=("default", "rocksdb"), default="default",
                    help="the state store provider (HDFS-backed default, or RocksDB)")
    ap.add_argument("--master", default=env("STREAMDRILL_SPARK_MASTER", "local[4]"))
    ap.add_argument("--kafka", action="append", default=[], metavar="KEY=VALUE",
                    help="a Kafka client setting of the source (and of a Kafka sink): the option kafka.KEY")
    ap.add_argument("--value-format", choices=("json", "avro"), default="json",
                    help="the values: JSON, or Avro in a schema registry's wire format (--registry)")
    ap.add_argument("--registry", default=env("STREAMDRILL_REGISTRY"), help="the schema registry's Confluent-compatible API")
    ap.add_argument("--avro-weak", choices=("none", "newest-schema"), default="none",
                    help="newest-schema: the deliberate bug of decoding every record with the subject's newest schema, "
                         "whatever its header says")
    if extra:
        extra(ap)
    a = ap.parse_args()
    for kv in a.kafka:
        if "=" not in kv:
            ap.error(f"--kafka {kv}: expected KEY=VALUE")
    for need in ("brokers", "topic", "checkpoint"):
        if not getattr(a, need):
            ap.error(f"--{need} is required (or streamdrill's STREAMDRILL_{need.upper()})")
    if a.value_format == "avro" and not a.registry:
        ap.error("--value-format avro: --registry URL is required (or streamdrill's STREAMDRILL_REGISTRY)")
    return a


JIT = "-XX:TieredStopAtLevel=1"


def session(app, a, delta=False):
    # `clock faketime preload=children`: the JVM runs on streamdrill's fake
    # clock; this Python process does not (Python's time.sleep fails under
    # libfaketime), so the library goes into the JVM's environment only.
    lib = os.environ.get("STREAMDRILL_FAKETIME_LIB")
    if lib:
        os.environ["LD_PRELOAD"] = lib
    jars = os.environ.get("STREAMDRILL_SPARK_JARS") or ",".join(sorted(glob.glob(os.path.join(ROOT, ".cache", "spark", "jars", "*.jar"))))
    if delta:
        # Delta Lake's jars (scenarios/env/spark/delta-pom.xml) beside the Kafka connector's
        jars = ",".join(filter(None, [jars] + sorted(glob.glob(os.path.join(ROOT, ".cache", "spark", "delta-jars", "*.jar")))))
    b = (SparkSession.builder.master(a.master).appName(app)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.driver.memory", "1g")
         # a drill's pipeline lives for seconds: the JIT's C2 tier compiles
         # more than it ever gives back (on two cores a driver spent about
         # 45% less CPU per drill with C1 only, the same verdicts)
         .config("spark.driver.extraJavaOptions", JIT)
         .config("spark.executor.extraJavaOptions", JIT)
         .config("spark.sql.streaming.numRecentProgressUpdates", "1000"))
    if a.state_store == "rocksdb":
        b = b.config("spark.sql.streaming.stateStore.providerClass",
                     "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
    if delta:
        b = (b.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
             .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
    if jars:
        b = b.config("spark.jars", jars)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    watch(spark)
    return spark


def source(spark, a):
    r = (spark.readStream.format("kafka")
         .option("kafka.bootstrap.servers", a.brokers)
         .option("subscribe", a.topic)
         .option("startingOffsets", "earliest")
         .option("failOnDataLoss", "true")
         .option("includeHeaders", "true"))
    if a.max_offsets:
        r = r.option("maxOffsetsPerTrigger", str(a.max_offsets))
    for option, setting in kafka_options(a).items():
        r = r.option(option, setting)
    return r.load()


def kafka_options(a):
    """--kafka KEY=VALUE settings as Spark's kafka.KEY options."""
    return {"kafka." + kv.split("=", 1)[0]: kv.split("=", 1)[1] for kv in a.kafka}


def subject_versions(url, subject):
    """[(schema id, Avro schema text)] of every version of the subject, oldest first."""
    import json
    import urllib.request

    def get(path):
        with urllib.request.urlopen(url.rstrip("/") + path, timeout=30) as r:
            return json.load(r)
    return [(d["id"], d["schema"]) for d in (get(f"/subjects/{subject}/versions/{v}") for v in get(f"/subjects/{subject}/versions"))]


def avro_scans(value, a):
    """The parcel-scan struct of a value in the registry's wire format: a zero
    byte, the schema id (4 bytes), the record. Each record is decoded with the
    version its id names (from_avro, PERMISSIVE: null when it does not
    decode), among the topic subject's versions when the query starts; a
    value without the magic byte or with another id is null (malformed).
    --avro-weak newest-schema decodes every value with the newest version
    and looks at no header."""
    from pyspark.sql.avro.functions import from_avro
    versions = subject_versions(a.registry, a.topic + "-value")
    body = F.expr("substring(value, 6, length(value) - 5)")
    magic_ok = F.hex(F.substring(value, 1, 1)) == F.lit("00")
    schema_id = F.conv(F.hex(F.substring(value, 2, 4)), 16, 10).cast("long")

    def scan(schema_text):
        d = from_avro(body, schema_text, {"mode": "PERMISSIVE"})
        names = {f["name"] for f in __import__("json").loads(schema_text).get("fields", [])}
        return F.struct(*[(d[f.name] if f.name in names else F.lit(None)).cast(f.dataType).alias(f.name) for f in SCHEMA.fields])
    if a.avro_weak == "newest-schema":
        return scan(versions[-1][1])
    pick = None
    for sid, text in versions:
        pick = (pick if pick is not None else F).when(magic_ok & (schema_id == sid), scan(text))
    return pick


def parse(raw, row_delay_ms=0, a=None):
    """Kafka records -> parcel scans, with `valid` telling malformed ones apart."""
    avro = a is not None and a.value_format == "avro"
    df = (raw.withColumn("raw", F.hex(F.col("value")) if avro else F.col("value").cast("string"))
          .withColumn("j", avro_scans(F.col("value"), a) if avro else F.from_json(F.col("raw"), SCHEMA))
          .withColumn("sd_id", F.expr("CAST(filter(headers, h -> h.key = 'sd-id')[0].value AS STRING)"))
          .withColumn("ts", F.to_timestamp(F.col("j.event_time"))))
    if row_delay_ms > 0:
        # sleeps, then returns the time the row was processed (epoch ms)
        df = df.withColumn("sd_processed_ms", F.expr(
            f"coalesce(nullif(reflect('java.lang.Thread', 'sleep', CAST({int(row_delay_ms)} AS BIGINT)), 'null'),"
            " reflect('java.lang.System', 'currentTimeMillis'))"))
    else:
        df = df.withColumn("sd_processed_ms", F.expr("reflect('java.lang.System', 'currentTimeMillis')"))
    return df.withColumn("valid", F.col("j.event_id").isNotNull() & F.col("ts").isNotNull())


def events(df):
    """The columns a parcel-scan sink row carries."""
    return df.where("valid").select(
        F.col("j.event_id").alias("event_id"), F.col("j.parcel_id").alias("parcel_id"),
        F.col("j.event_time").alias("event_time"), F.col("j.location").alias("location"),
        F.col("partition").alias("sd_partition"), F.col("offset").alias("sd_offset"),
        F.col("sd_processed_ms"), F.col("ts"))


def rejected(df):
    return df.where("NOT valid").select(
        F.coalesce(F.col("sd_id"), F.col("j.event_id")).alias("sd_id"), F.col("raw"),
        F.col("partition").alias("sd_partition"), F.col("offset").alias("sd_offset"))


def interval(text):
    """'500ms', '2s', '1m' or a Spark interval ('2 seconds') -> a Spark interval."""
    import re
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text.strip())
    if not m:
        return text
    unit = {"ms": "milliseconds", "s": "seconds", "m": "minutes", "h": "hours"}[m.group(2)]
    return f"{m.group(1)} {unit}"


def trigger(writer, spec):
    if spec == "available-now":
        return writer.trigger(availableNow=True)
    if spec == "once":
        return writer.trigger(once=True)
    kind, _, every = spec.partition(":")
    if kind == "processing-time":
        return writer.trigger(processingTime=interval(every or "0s"))
    if kind == "real-time":
        return writer.trigger(realTime=interval(every or "5s"))
    raise SystemExit(f"--trigger {spec}: expected processing-time:INTERVAL, available-now, once or real-time:INTERVAL")


def run(spark, queries, a):
    """Wait for the queries; stop them on SIGTERM/SIGINT. Exit 0 when they
    end by themselves (available-now, once) or are stopped, 1 on failure."""
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    failed = None
    while not stop.is_set():
        active = [q for q in queries if q.isActive]
        for q in queries:
            if not q.isActive and q.exception() is not None:
                failed = q.exception()
        if failed or not active:
            break
        stop.wait(0.2)
    for q in queries:
        try:
            q.stop()
        except Exception:
            pass
    spark.stop()
    if failed:
        sys.stderr.write(f"query failed: {failed}\n")
        sys.exit(1)
    sys.exit(0)
