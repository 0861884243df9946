"""A small Kafka consumer of the kind a data engineer writes first:
confluent-kafka in, SQLite out, offsets committed after each batch is
written (at-least-once). With --idempotent, the fix: the event id is the
table's primary key and a row already there is not written again.

  python3 consumer.py --brokers B --topic T --group G --db sink.db [--idempotent]
"""
import argparse
import json
import os
import sqlite3
import time

from confluent_kafka import Consumer

ap = argparse.ArgumentParser()
ap.add_argument("--brokers", required=True)
ap.add_argument("--topic", required=True)
ap.add_argument("--group", required=True)
ap.add_argument("--db", required=True)
ap.add_argument("--idempotent", action="store_true")
a = ap.parse_args()

db = sqlite3.connect(a.db, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
key = " PRIMARY KEY" if a.idempotent else ""
db.execute(f"CREATE TABLE IF NOT EXISTS events (event_id TEXT{key}, parcel_id TEXT, event_time TEXT, location TEXT, writer TEXT)")
insert = "INSERT OR IGNORE INTO events VALUES (?, ?, ?, ?, ?)" if a.idempotent else "INSERT INTO events VALUES (?, ?, ?, ?, ?)"
# which run of the job wrote a row: streamdrill numbers each start
writer = "incarnation " + os.environ.get("STREAMDRILL_INCARNATION", "?")
c = Consumer({"bootstrap.servers": a.brokers, "group.id": a.group, "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
c.subscribe([a.topic])
while True:
    msgs = [m for m in c.consume(20, 0.5) if not m.error()]
    for m in msgs:
        try:
            e = json.loads(m.value())
        except ValueError:
            continue
        if not isinstance(e, dict) or not isinstance(e.get("event_id"), str) or not isinstance(e.get("event_time"), str):
            continue
        db.execute(insert, (e["event_id"], e.get("parcel_id"), e["event_time"], e.get("location"), writer))
        time.sleep(0.05)  # the work a real job does per record
    if msgs:
        c.commit(asynchronous=False)
