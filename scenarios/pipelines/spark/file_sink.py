"""Kafka -> JSON (or, --format parquet, Parquet; --format avro, Avro) file sink, the sink Spark
documents as exactly-once.

Valid parcel scans go to --out (default RUN/out), malformed records with
their sd-id to --quarantine (default RUN/quarantine); each is its own
streaming query with its own checkpoint (CHECKPOINT/target,
CHECKPOINT/quarantine). With --trigger available-now the same query drains
what is in Kafka on the same checkpoint and exits."""
import os

from sdspark import arguments, events, parse, rejected, run, session, source, trigger


def extra(ap):
    ap.add_argument("--out", default=None)
    ap.add_argument("--quarantine", default=None)
    ap.add_argument("--format", choices=["json", "parquet", "avro"], default="json")


a = arguments(__doc__, extra)
out = a.out or os.path.join(a.run, "out")
qout = a.quarantine or os.path.join(a.run, "quarantine")
spark = session("streamdrill-file-sink", a)
target = parse(source(spark, a), a.row_delay_ms)
q1 = trigger(events(target).drop("ts").writeStream.format(a.format).queryName("target")
             .option("path", out).option("checkpointLocation", a.checkpoint + "/target"), a.trigger).start()
bad = parse(source(spark, a))
q2 = trigger(rejected(bad).writeStream.format(a.format).queryName("quarantine")
             .option("path", qout).option("checkpointLocation", a.checkpoint + "/quarantine"), a.trigger).start()
run(spark, [q1, q2], a)
