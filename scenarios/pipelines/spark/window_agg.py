"""Kafka -> withWatermark -> scans counted and weighed per location in
tumbling event-time windows.

--output append     the JSON file sink in append mode: a window is written
                    once, when the watermark has passed its end
--output update     foreachBatch upsert into SQLite (table agg keyed on the
                    window and the location): each batch rewrites the windows
                    it changed, open ones included
--output complete   foreachBatch of the whole result table: each batch
                    replaces table agg with it in one transaction (Spark
                    keeps every window's state in complete mode, so late
                    events are counted)
--dedup yes|no      dropDuplicatesWithinWatermark(event_id) before the
                    aggregation (yes, the default): input duplicates within
                    the watermark count once (with no they count twice)

Rows: window_start (epoch ms), location, count, sum (of weight_g), and in
update mode sd_writer (the incarnation and batch that wrote the row)."""
import os
import sqlite3

from pyspark.sql import functions as F
from sdspark import arguments, parse, run, session, source, trigger


def extra(ap):
    ap.add_argument("--out", default=None)
    ap.add_argument("--db", default=None)
    ap.add_argument("--output", choices=["append", "update", "complete"], default="append")
    ap.add_argument("--watermark", default="1 minute")
    ap.add_argument("--window", default="1 minute")
    ap.add_argument("--dedup", choices=["yes", "no"], default="yes")


a = arguments(__doc__, extra)
spark = session("streamdrill-window-agg", a)
scans = (parse(source(spark, a), a.row_delay_ms).where("valid")
         .select(F.col("j.event_id").alias("event_id"), F.col("j.location").alias("location"),
                 F.col("j.weight_g").alias("weight_g"), F.col("ts"))
         .withWatermark("ts", a.watermark))
if a.dedup == "yes":
    scans = scans.dropDuplicatesWithinWatermark(["event_id"])
agg = (scans.groupBy(F.window("ts", a.window).alias("w"), "location")
       .agg(F.count("*").alias("count"), F.sum("weight_g").alias("sum"))
       .select((F.unix_millis(F.col("w.start"))).alias("window_start"), "location", "count", "sum"))

if a.output == "append":
    out = a.out or os.path.join(a.run, "out")
    q = trigger(agg.writeStream.format("json").queryName("target").outputMode("append")
                .option("path", out).option("checkpointLocation", a.checkpoint + "/target"), a.trigger).start()
else:
    db_path = a.db or os.path.join(a.run, "target.db")
    incarnation = int(os.environ.get("STREAMDRILL_INCARNATION", "0"))
    con = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE IF NOT EXISTS agg(window_start INTEGER, location TEXT, count INTEGER, sum INTEGER, sd_writer TEXT,"
                " PRIMARY KEY(window_start, location))")

    def upsert(batch_df, batch_id):
        rows = batch_df.collect()
        con.execute("BEGIN IMMEDIATE")
        if a.output == "complete":
            con.execute("DELETE FROM agg")
        for r in rows:
            con.execute("INSERT OR REPLACE INTO agg VALUES(?,?,?,?,?)",
                        (r["window_start"], r["location"], r["count"], r["sum"], f"incarnation {incarnation} batch {batch_id}"))
        con.execute("COMMIT")

    q = trigger(agg.writeStream.foreachBatch(upsert).queryName("target").outputMode(a.output)
                .option("checkpointLocation", a.checkpoint + "/target"), a.trigger).start()
run(spark, [q], a)
