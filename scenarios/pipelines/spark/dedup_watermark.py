"""Kafka -> withWatermark + dropDuplicatesWithinWatermark -> JSON file sink.

Duplicates of an event_id that arrive within the watermark delay are
removed; events older than the watermark are dropped by the deduplication
operator (Spark reports them as numRowsDroppedByWatermark). Malformed
records are not written."""
import os

from sdspark import arguments, events, parse, run, session, source, trigger


def extra(ap):
    ap.add_argument("--out", default=None)
    ap.add_argument("--watermark", default="10 minutes")


a = arguments(__doc__, extra)
out = a.out or os.path.join(a.run, "out")
spark = session("streamdrill-dedup", a)
rows = (events(parse(source(spark, a), a.row_delay_ms))
        .withWatermark("ts", a.watermark)
        .dropDuplicatesWithinWatermark(["event_id"])
        .drop("ts"))
q = trigger(rows.writeStream.format("json").queryName("target").outputMode("append")
            .option("path", out).option("checkpointLocation", a.checkpoint + "/target"), a.trigger).start()
run(spark, [q], a)
