"""faust_dedup.py - a faust-streaming application as a Python team would
write one: parcel scans de-duplicated by event id in a faust Table, written
to an output topic, malformed records to a dead-letter topic.

  faust-dedup --brokers B --topic T --out OUT --dead DEAD --group G
              --state-dir DIR [--partitions 3]
              [--guarantee exactly_once|at_least_once]
              [--store table|no-changelog] [--row-delay-ms 0]
              [--commit-ms 100]

The store is a faust Table (in memory, with its changelog topic; the
default): a restarted worker reads the changelog back before it processes
anything. Under exactly_once faust runs one transactional producer per
input partition (its transactional.id is the application's and the
partition's), so the output, the changelog and the consumed offsets of a
partition commit in one Kafka transaction, and a restarted worker fences
the killed one's producers. --store no-changelog is the mistake: a plain
Python set, forgotten by a restarted worker (the replays it saw are
written again). --partitions must be the input topic's: a Table's
changelog is partitioned as its input.

A value that is not a JSON object with a string event_id and event_time
goes to DEAD as {"sd_id": <the record's sd-id header>, "reason": ...}. Each
record costs --row-delay-ms (standing in for real work). SIGTERM stops the
worker cleanly (faust's own handler).
"""
import argparse
import asyncio
import logging
import sys

import faust
from scans import header, parse


def main(argv):
    ap = argparse.ArgumentParser(prog="faust-dedup")
    for k in ("brokers", "topic", "out", "dead", "group", "state-dir"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--guarantee", choices=("exactly_once", "at_least_once"), default="exactly_once")
    ap.add_argument("--store", choices=("table", "no-changelog"), default="table")
    ap.add_argument("--row-delay-ms", type=int, default=0)
    ap.add_argument("--commit-ms", type=int, default=100)
    a = ap.parse_args(argv)
    delay = a.row_delay_ms / 1000.0

    app = faust.App(
        a.group,
        broker="kafka://" + a.brokers,
        store="memory://",
        processing_guarantee=a.guarantee,
        datadir=a.state_dir,
        topic_partitions=a.partitions,
        topic_replication_factor=1,
        broker_commit_interval=a.commit_ms / 1000.0,
        broker_session_timeout=6.0,
        broker_heartbeat_interval=1.0,
        consumer_auto_offset_reset="earliest",
        web_enabled=False,
    )
    src = app.topic(a.topic, key_serializer="raw", value_serializer="raw", partitions=a.partitions)
    out = app.topic(a.out, key_serializer="raw", value_serializer="raw", partitions=a.partitions)
    dead = app.topic(a.dead, key_serializer="raw", value_serializer="json", partitions=a.partitions)
    seen = app.Table("seen-ids", default=None, partitions=a.partitions) if a.store == "table" else set()

    @app.agent(src)
    async def dedup(stream):
        async for event in stream.events():
            value = event.value
            j, why = parse(value)
            if delay:
                await asyncio.sleep(delay)
            if why is not None:
                await dead.send(key=event.key, value={"sd_id": header(event.headers, "sd-id"), "reason": why})
                continue
            eid = j["event_id"]
            if isinstance(seen, set):
                if eid in seen:
                    continue
                seen.add(eid)
            else:
                if seen.get(eid) is not None:
                    continue
                seen[eid] = event.message.timestamp
            await out.send(key=event.key, value=value)

    logging.getLogger("faust").setLevel(logging.WARNING)
    worker = faust.Worker(app, loglevel="WARNING", quiet=True)
    worker.execute_from_commandline()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
