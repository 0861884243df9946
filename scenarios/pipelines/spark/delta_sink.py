"""Kafka -> Delta Lake, the four ways teams write a stream into a Delta table.

--mode stream   the Delta streaming sink (writeStream.format("delta")): each
                micro-batch one Delta commit carrying the query's id and the
                batch id as its transaction, so a re-run batch is skipped
--mode txn      foreachBatch appending with txnAppId/txnVersion (the batch
                id): Delta skips a version it already holds
--mode naive    foreachBatch appending without them: a batch re-run after a
                kill between the Delta commit and Spark's checkpoint commit
                is written twice
--mode merge    foreachBatch MERGE keyed on event_id (insert when not
                matched): re-runs and replayed input leave one row per id
--mode txn-state          the txn append with a stateful step before it
                (withWatermark + dropDuplicatesWithinWatermark): when Delta
                skips a re-run batch it already holds, the batch's plan never
                runs, its state is never committed, and the restarted query
                dies (STATE_STORE_COMMIT_VALIDATION_FAILED on Spark 4)
--mode txn-state-counted  the same, the fix: the batch is persisted and
                counted before the write, so its plan (and its state commit)
                runs whether or not Delta writes it

Malformed records go to a second Delta table (--rejected) with their
sd-id, written in the same batch (stream mode: by a second query)."""
import os

from pyspark.sql import functions as F
from sdspark import arguments, events, parse, rejected, run, session, source, trigger


def extra(ap):
    ap.add_argument("--mode", choices=["stream", "txn", "naive", "merge", "txn-state", "txn-state-counted"], default="txn")
    ap.add_argument("--watermark", default="10 minutes", help="the stateful modes' watermark delay")
    ap.add_argument("--table", default=None, help="the target table's folder (default RUN/delta/bronze)")
    ap.add_argument("--rejected", default=None, help="the quarantine table's folder (default RUN/delta/rejected)")
    ap.add_argument("--app-id", default="streamdrill-bronze", help="txnAppId in --mode txn")


a = arguments(__doc__, extra)
table = a.table or os.path.join(a.run, "delta", "bronze")
rej_table = a.rejected or os.path.join(a.run, "delta", "rejected")
spark = session(f"streamdrill-delta-{a.mode}", a, delta=True)
# no deletion vectors: every row lives in the data files the log names
spark.conf.set("spark.databricks.delta.properties.defaults.enableDeletionVectors", "false")
df = parse(source(spark, a), a.row_delay_ms, a)
bad = rejected(df)


def stamped(frame):
    return events(frame).drop("ts").withColumn("sd_written_ms", F.expr("reflect('java.lang.System', 'currentTimeMillis')").cast("long"))


good = stamped(df)
if a.mode == "merge":
    from delta.tables import DeltaTable
    (DeltaTable.createIfNotExists(spark).location(table)
     .addColumns(good.schema).execute())


def write_state(batch_df, batch_id):
    """The txn append after a stateful step: the rows are deduplicated
    already; nothing here reads them but the write itself, unless counted."""
    if a.mode == "txn-state-counted":
        batch_df.persist()
        batch_df.count()
    (stamped_rows(batch_df).write.format("delta").mode("append")
     .option("txnAppId", a.app_id).option("txnVersion", batch_id).save(table))
    if a.mode == "txn-state-counted":
        batch_df.unpersist()


def stamped_rows(frame):
    return frame.drop("ts").withColumn("sd_written_ms", F.expr("reflect('java.lang.System', 'currentTimeMillis')").cast("long"))


def write(batch_df, batch_id):
    batch_df.persist()
    rows = stamped(batch_df)
    bad_rows = rejected(batch_df)
    if not bad_rows.isEmpty():
        w = bad_rows.write.format("delta").mode("append")
        if a.mode != "naive":
            w = w.option("txnAppId", a.app_id).option("txnVersion", batch_id)
        w.save(rej_table)
    if a.mode == "txn":
        (rows.write.format("delta").mode("append")
         .option("txnAppId", a.app_id).option("txnVersion", batch_id).save(table))
    elif a.mode == "naive":
        rows.write.format("delta").mode("append").save(table)
    else:
        from delta.tables import DeltaTable
        (DeltaTable.forPath(spark, table).alias("t")
         .merge(rows.dropDuplicates(["event_id"]).alias("s"), "t.event_id = s.event_id")
         .whenNotMatchedInsertAll().execute())
    batch_df.unpersist()


if a.mode == "stream":
    q = trigger(good.writeStream.format("delta").queryName("target")
                .option("checkpointLocation", a.checkpoint + "/target"), a.trigger).start(table)
    q2 = trigger(bad.writeStream.format("delta").queryName("rejected")
                 .option("checkpointLocation", a.checkpoint + "/rejected"), a.trigger).start(rej_table)
    run(spark, [q, q2], a)
elif a.mode.startswith("txn-state"):
    deduped = events(df).withWatermark("ts", a.watermark).dropDuplicatesWithinWatermark(["event_id"])
    q = trigger(deduped.writeStream.foreachBatch(write_state).queryName("target")
                .option("checkpointLocation", a.checkpoint + "/target"), a.trigger).start()
    run(spark, [q], a)
else:
    q = trigger(df.writeStream.foreachBatch(write).queryName("target")
                .option("checkpointLocation", a.checkpoint + "/target"), a.trigger).start()
    run(spark, [q], a)
