"""Kafka -> foreachBatch -> PostgreSQL (psycopg), one transaction per batch.

--mode upsert   INSERT ... ON CONFLICT (event_id) DO NOTHING on a table
                keyed on event_id: a batch re-run after a kill between the
                database's commit and Spark's checkpoint commit, and replayed
                input, leave one row per id
--mode naive    a plain INSERT on a table without a key: the re-run batch
                is inserted again, each copy labelled with the incarnation
                that wrote it

Malformed records go to the table REJECTED with their sd-id, in the same
transaction."""
import os
import time

import psycopg
from sdspark import arguments, events, parse, rejected, run, session, source, trigger


def extra(ap):
    ap.add_argument("--dsn", required=True, help="libpq connection string or URI")
    ap.add_argument("--table", default="bronze")
    ap.add_argument("--rejected", default="rejected")
    ap.add_argument("--mode", choices=["upsert", "naive"], default="upsert")


a = arguments(__doc__, extra)
incarnation = int(os.environ.get("STREAMDRILL_INCARNATION", "0"))
con = psycopg.connect(a.dsn, autocommit=True)
key = " PRIMARY KEY" if a.mode == "upsert" else ""
con.execute(f"CREATE TABLE IF NOT EXISTS {a.table}(event_id TEXT{key}, event_time TEXT, parcel_id TEXT, sd_batch BIGINT,"
            " sd_incarnation INT, sd_written_ms BIGINT)")
con.execute(f"CREATE TABLE IF NOT EXISTS {a.rejected}(sd_id TEXT, raw TEXT, sd_batch BIGINT)")
spark = session(f"streamdrill-foreach-postgres-{a.mode}", a)
df = parse(source(spark, a), a.row_delay_ms)
conflict = " ON CONFLICT (event_id) DO NOTHING" if a.mode == "upsert" else ""


def write(batch_df, batch_id):
    good = events(batch_df).select("event_id", "event_time", "parcel_id").collect()
    bad = rejected(batch_df).select("sd_id", "raw").collect()
    now = int(time.time() * 1000)
    with con.transaction():
        with con.cursor() as cur:
            if good:
                cur.executemany(f"INSERT INTO {a.table} VALUES (%s, %s, %s, %s, %s, %s){conflict}",
                                [(r.event_id, r.event_time, r.parcel_id, batch_id, incarnation, now) for r in good])
            if bad:
                cur.executemany(f"INSERT INTO {a.rejected} VALUES (%s, %s, %s)", [(r.sd_id, r.raw, batch_id) for r in bad])


q = trigger(df.writeStream.foreachBatch(write).queryName("target")
            .option("checkpointLocation", a.checkpoint + "/target"), a.trigger).start()
run(spark, [q], a)
