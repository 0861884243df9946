"""Kafka -> foreachBatch -> SQLite, the way many teams write to a database.

--mode naive        inserts every row of the batch, one transaction per
                    row: a batch re-run after a failure inserts its rows again
--mode idempotent   one transaction per batch, skipped when its batch id is
                    already recorded, rows keyed on event_id (INSERT OR
                    IGNORE): re-runs and replayed input leave one row per id

Malformed records go to the table `rejected` with their sd-id."""
import os
import sqlite3
import time

from sdspark import arguments, parse, run, session, source, trigger


def extra(ap):
    ap.add_argument("--db", default=None)
    ap.add_argument("--mode", choices=["naive", "idempotent"], default="naive")


a = arguments(__doc__, extra)
db_path = a.db or os.path.join(a.run, "target.db")
incarnation = int(os.environ.get("STREAMDRILL_INCARNATION", "0"))
con = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
con.execute("PRAGMA journal_mode=WAL")
key = " PRIMARY KEY" if a.mode == "idempotent" else ""
con.execute(f"CREATE TABLE IF NOT EXISTS bronze(event_id TEXT{key}, event_time TEXT, parcel_id TEXT, sd_batch INTEGER,"
            " sd_incarnation INTEGER, sd_written_ms INTEGER)")
con.execute("CREATE TABLE IF NOT EXISTS rejected(sd_id TEXT, raw TEXT, sd_batch INTEGER)")
con.execute("CREATE TABLE IF NOT EXISTS sd_batches(batch INTEGER PRIMARY KEY)")
spark = session("streamdrill-foreach-sqlite", a)
df = parse(source(spark, a))


def write_rows(rows, batch_id, insert):
    """Each row to bronze (INSERT or INSERT OR IGNORE) or, malformed, to rejected."""
    for r in rows:
        if r.valid:
            con.execute(insert + " INTO bronze VALUES(?,?,?,?,?,?)",
                        (r.event_id, r.event_time, r.parcel_id, batch_id, incarnation, int(time.time() * 1000)))
        else:
            con.execute("INSERT INTO rejected VALUES(?,?,?)", (r.sd_id or r.event_id, r.raw, batch_id))
        if a.row_delay_ms:
            time.sleep(a.row_delay_ms / 1000.0)


def write(batch_df, batch_id):
    rows = batch_df.select("valid", "j.event_id", "j.event_time", "j.parcel_id", "sd_id", "raw").collect()
    if a.mode == "naive":
        write_rows(rows, batch_id, "INSERT")
        return
    con.execute("BEGIN IMMEDIATE")
    try:
        if con.execute("SELECT 1 FROM sd_batches WHERE batch=?", (batch_id,)).fetchone():
            con.execute("ROLLBACK")
            return
        write_rows(rows, batch_id, "INSERT OR IGNORE")
        con.execute("INSERT INTO sd_batches VALUES(?)", (batch_id,))
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise


q = trigger(df.writeStream.foreachBatch(write).queryName("target")
            .option("checkpointLocation", a.checkpoint + "/target"), a.trigger).start()
run(spark, [q], a)
