"""Kafka scans joined with Kafka deliveries -> JSON file sink.

A stream-stream join of the parcel scans (streamdrill's source topic) with
the deliveries (its second, `deliveries` topic): a delivery matches a scan
of its parcel delivered from the scan's event time to --within after it.
Both sides carry a watermark (--watermark); the scans are deduplicated
within it first (dropDuplicatesWithinWatermark), so a replayed scan is
joined once. --type inner | left (left outer: a scan no delivery matched
gets a row with a null delivery once the watermark has passed scan time +
within). Rows: event_id, delivery_id, parcel_id.

--right-watermark no leaves the deliveries without a watermark: an inner
join still runs, but Spark can never evict a scan from its state (a
delivery that matches it could still come), and the state grows with every
scan: the bounded-state rule catches it."""
import os

from pyspark.sql import functions as F
from pyspark.sql import types as T
from sdspark import arguments, events, interval, parse, run, session, source, trigger

DELIVERY = T.StructType([
    T.StructField("delivery_id", T.StringType()),
    T.StructField("parcel_id", T.StringType()),
    T.StructField("delivered_at", T.StringType()),
    T.StructField("courier", T.StringType()),
])


def extra(ap):
    ap.add_argument("--deliveries", default=os.environ.get("STREAMDRILL_DELIVERIES_TOPIC"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--watermark", default="1 minute")
    ap.add_argument("--within", default="5 minutes")
    ap.add_argument("--type", choices=("inner", "left"), default="left")
    ap.add_argument("--right-watermark", choices=("yes", "no"), default="yes")


a = arguments(__doc__, extra)
if not a.deliveries:
    raise SystemExit("--deliveries is required (or streamdrill's STREAMDRILL_DELIVERIES_TOPIC)")
out = a.out or os.path.join(a.run, "out")
spark = session("streamdrill-join", a)
scans = (events(parse(source(spark, a), a.row_delay_ms))
         .withWatermark("ts", interval(a.watermark))
         .dropDuplicatesWithinWatermark(["event_id"])
         .select("event_id", "parcel_id", "ts"))
r = (spark.readStream.format("kafka")
     .option("kafka.bootstrap.servers", a.brokers)
     .option("subscribe", a.deliveries)
     .option("startingOffsets", "earliest")
     .option("failOnDataLoss", "true"))
if a.max_offsets:
    r = r.option("maxOffsetsPerTrigger", str(a.max_offsets))
d = (r.load().select(F.from_json(F.col("value").cast("string"), DELIVERY).alias("j"))
     .select(F.col("j.delivery_id").alias("delivery_id"), F.col("j.parcel_id").alias("d_parcel_id"),
             F.to_timestamp(F.col("j.delivered_at")).alias("dts"))
     .where("delivery_id IS NOT NULL AND dts IS NOT NULL"))
if a.right_watermark == "yes":
    d = d.withWatermark("dts", interval(a.watermark))
cond = F.expr(f"parcel_id = d_parcel_id AND dts >= ts AND dts <= ts + interval {interval(a.within)}")
joined = scans.join(d, cond, "leftouter" if a.type == "left" else "inner").select("event_id", "delivery_id", "parcel_id")
q = trigger(joined.writeStream.format("json").queryName("target").outputMode("append")
            .option("path", out).option("checkpointLocation", a.checkpoint + "/target"), a.trigger).start()
run(spark, [q], a)
