"""Kafka -> Kafka, a sink Spark documents as at-least-once: after a failure
the re-run batch writes its records again. Valid parcel scans go to
--out-topic (default TOPIC-out) as JSON; malformed records are dropped.
Works with every trigger, real-time mode included (--trigger
real-time:5s, Spark 4.1 and later, update output mode). --shape window
writes a one-minute count per location instead (update mode), the stateful
shape Apache Spark's real-time mode accepts from 4.3 on; Spark 4.2 refuses
it at the first interval and the query dies, which the drill counts as a
crash."""
from pyspark.sql import functions as F
from sdspark import arguments, events, kafka_options, parse, run, session, source, trigger


def extra(ap):
    ap.add_argument("--out-topic", default=None)
    ap.add_argument("--shape", choices=("stateless", "window"), default="stateless")


a = arguments(__doc__, extra)
out_topic = a.out_topic or a.topic + "-out"
spark = session("streamdrill-kafka-sink", a)
scans = events(parse(source(spark, a), a.row_delay_ms))
if a.shape == "window":
    rows = (scans.withWatermark("ts", "1 minute").groupBy(F.window("ts", "1 minute"), "location").count()
            .select(F.col("window.start").cast("string").alias("window_start"), "location", "count"))
    key = F.col("location")
else:
    rows = scans.drop("ts")
    key = F.col("parcel_id")
value = F.to_json(F.struct(*[F.col(c) for c in rows.columns]))
w = (rows.select(key.alias("key"), value.alias("value"))
     .writeStream.format("kafka").queryName("target")
     .option("kafka.bootstrap.servers", a.brokers).option("topic", out_topic)
     .option("checkpointLocation", a.checkpoint + "/target"))
for option, setting in kafka_options(a).items():
    w = w.option(option, setting)
if a.trigger.startswith("real-time") or a.shape == "window":
    w = w.outputMode("update")
q = trigger(w, a.trigger).start()
run(spark, [q], a)
