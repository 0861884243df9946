"""Kafka -> foreachBatch -> SQLite: the latest scan of each parcel.

--mode newest    an upsert that replaces a parcel's row only with a scan
                 whose event time is not older (MERGE ... WHEN MATCHED AND
                 source.event_time >= target.event_time): idempotent, so a
                 batch run again after a failure, replays and scans that
                 arrive out of order leave the newest scan
--mode arrival   a blind upsert: the last scan written wins, even an older
                 one that arrived late

Table latest(parcel_id, location, scan, sd_event_ms, sd_writer)."""
import os
import sqlite3

from pyspark.sql import functions as F
from sdspark import arguments, parse, run, session, source, trigger


def extra(ap):
    ap.add_argument("--db", default=None)
    ap.add_argument("--mode", choices=["newest", "arrival"], default="newest")


a = arguments(__doc__, extra)
db_path = a.db or os.path.join(a.run, "target.db")
incarnation = int(os.environ.get("STREAMDRILL_INCARNATION", "0"))
con = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
con.execute("PRAGMA journal_mode=WAL")
con.execute("CREATE TABLE IF NOT EXISTS latest(parcel_id TEXT PRIMARY KEY, location TEXT, scan TEXT, sd_event_ms INTEGER,"
            " sd_writer TEXT)")
UPSERT = ("INSERT INTO latest VALUES(?,?,?,?,?) ON CONFLICT(parcel_id) DO UPDATE SET location=excluded.location,"
          " scan=excluded.scan, sd_event_ms=excluded.sd_event_ms, sd_writer=excluded.sd_writer")
if a.mode == "newest":
    UPSERT += " WHERE excluded.sd_event_ms >= latest.sd_event_ms"
spark = session("streamdrill-foreach-latest", a)
scans = (parse(source(spark, a), a.row_delay_ms).where("valid")
         .select(F.col("j.parcel_id").alias("parcel_id"), F.col("j.location").alias("location"), F.col("j.scan").alias("scan"),
                 F.unix_millis(F.col("ts")).alias("event_ms"), F.col("partition"), F.col("offset")))


def write(batch_df, batch_id):
    # in the order the records were read: what a blind upsert gets wrong
    rows = batch_df.orderBy("partition", "offset").collect()
    con.execute("BEGIN IMMEDIATE")
    for r in rows:
        con.execute(UPSERT, (r.parcel_id, r.location, r.scan, r.event_ms, f"incarnation {incarnation} batch {batch_id}"))
    con.execute("COMMIT")


q = trigger(scans.writeStream.foreachBatch(write).queryName("target")
            .option("checkpointLocation", a.checkpoint + "/target"), a.trigger).start()
run(spark, [q], a)
