"""Kafka -> Kafka, a sink Spark documents as at-least-once: after a failure
the re-run batch writes its records again. Valid parcel scans go to
--out-topic (default TOPIC-out) as JSON; malformed records are dropped.
Works with every trigger, real-time mode included (--trigger
real-time:5s, Spark 4.1 and later, update output mode)."""
from pyspark.sql import functions as F

from sdspark import arguments, events, parse, run, session, source, trigger


def extra(ap):
    ap.add_argument("--out-topic", default=None)


a = arguments(__doc__, extra)
out_topic = a.out_topic or a.topic + "-out"
spark = session("streamdrill-kafka-sink", a)
rows = events(parse(source(spark, a), a.row_delay_ms)).drop("ts")
value = F.to_json(F.struct(*[F.col(c) for c in rows.columns]))
w = (rows.select(F.col("parcel_id").alias("key"), value.alias("value"))
     .writeStream.format("kafka").queryName("target")
     .option("kafka.bootstrap.servers", a.brokers).option("topic", out_topic)
     .option("checkpointLocation", a.checkpoint + "/target"))
if a.trigger.startswith("real-time"):
    w = w.outputMode("update")
q = trigger(w, a.trigger).start()
run(spark, [q], a)
