"""Kafka -> withWatermark + dropDuplicatesWithinWatermark -> JSON file sink.

Duplicates of an event_id that arrive within the watermark delay are
removed; events older than the watermark are dropped by the deduplication
operator (Spark reports them as numRowsDroppedByWatermark). Malformed
records are not written.

--dedup key-only is the classic mistake: the same watermark, but
dropDuplicates on event_id alone, without the event-time column, so Spark
can never evict an id: the output is right and the state grows with every
event (the bounded-state rule catches it).

--watermark none is the careless job: no watermark at all, dropDuplicates
on event_id: no event is ever late to it, so late events reach the sink."""
import os

from sdspark import arguments, events, parse, run, session, source, trigger


def extra(ap):
    ap.add_argument("--out", default=None)
    ap.add_argument("--watermark", default="10 minutes")
    ap.add_argument("--dedup", choices=("within-watermark", "key-only"), default="within-watermark")


a = arguments(__doc__, extra)
out = a.out or os.path.join(a.run, "out")
spark = session("streamdrill-dedup", a)
rows = events(parse(source(spark, a), a.row_delay_ms))
if a.watermark != "none":
    rows = rows.withWatermark("ts", a.watermark)
if a.dedup == "key-only" or a.watermark == "none":
    rows = rows.dropDuplicates(["event_id"])
else:
    rows = rows.dropDuplicatesWithinWatermark(["event_id"])
rows = rows.drop("ts")
q = trigger(rows.writeStream.format("json").queryName("target").outputMode("append")
            .option("path", out).option("checkpointLocation", a.checkpoint + "/target"), a.trigger).start()
run(spark, [q], a)
