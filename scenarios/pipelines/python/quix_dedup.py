"""quix_dedup.py - a Quix Streams application as a Python team would write
one: parcel scans de-duplicated by event id in its state store, written to
an output topic, malformed records to a dead-letter topic.

  quix-dedup --brokers B --topic T --out OUT --dead DEAD --group G
             --state-dir DIR [--guarantee exactly-once|at-least-once]
             [--store changelog|no-changelog] [--row-delay-ms 0]
             [--commit-ms 100] [--transactional-id random|ID]

The store is Quix Streams' RocksDB state with its changelog topic (the
default). Under exactly-once the output, the changelog and the consumed
offsets commit in one Kafka transaction every commit interval, so a kill
leaves an open transaction that the restarted instance's producer aborts,
and the state it left on disk is that of the last commit. Under
at-least-once the offsets and the state are committed every interval and
the output is not transactional: a kill after records were written and
before the commit replays them into a state that has not seen them, and
they are written again. --store no-changelog keeps the state on local disk
only: a restarted instance whose state folder was lost forgets what it saw.

Quix Streams gives its transactional producer a new random
transactional.id each time the application starts (the default, "random").
The transaction a killed instance left open is then aborted by nobody but
the broker, after the producer's transaction.timeout.ms (60 s): until
then a read_committed reader of the output sees nothing written after it.
--transactional-id ID sets a stable one: the restarted instance's producer
fences the killed one and aborts its transaction at once.

A value that is not a JSON object with a string event_id and event_time
goes to DEAD as {"sd_id": <the record's sd-id header>, "reason": ...}. Each
record costs --row-delay-ms (standing in for real work). SIGTERM stops it
cleanly (Quix Streams' own handler).
"""
import argparse
import sys
import time

from quixstreams import Application
from scans import header, parse


def main(argv):
    ap = argparse.ArgumentParser(prog="quix-dedup")
    for k in ("brokers", "topic", "out", "dead", "group", "state-dir"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--guarantee", choices=("exactly-once", "at-least-once"), default="exactly-once")
    ap.add_argument("--store", choices=("changelog", "no-changelog"), default="changelog")
    ap.add_argument("--row-delay-ms", type=int, default=0)
    ap.add_argument("--commit-ms", type=int, default=100)
    ap.add_argument("--transactional-id", default="random")
    a = ap.parse_args(argv)
    delay = a.row_delay_ms / 1000.0
    producer = {"linger.ms": 5}
    if a.transactional_id != "random":
        producer["transactional.id"] = a.transactional_id

    app = Application(
        broker_address=a.brokers,
        consumer_group=a.group,
        auto_offset_reset="earliest",
        processing_guarantee=a.guarantee,
        commit_interval=a.commit_ms / 1000.0,
        state_dir=a.state_dir,
        use_changelog_topics=a.store == "changelog",
        consumer_extra_config={"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000},
        producer_extra_config=producer,
        loglevel="WARNING",
    )
    t_in = app.topic(a.topic, value_deserializer="bytes")
    t_out = app.topic(a.out, value_serializer="bytes")
    t_dead = app.topic(a.dead, value_serializer="json")

    def classify(value, key, timestamp, headers, state):
        j, why = parse(value)
        if delay:
            time.sleep(delay)
        if why is not None:
            return {"to": "dead", "row": {"sd_id": header(headers, "sd-id"), "reason": why}}
        if state.get(j["event_id"]) is not None:
            return {"to": "none"}
        state.set(j["event_id"], timestamp)
        return {"to": "out", "row": value}

    sdf = app.dataframe(t_in)
    sdf = sdf.apply(classify, stateful=True, metadata=True)
    sdf.filter(lambda r: r["to"] == "dead").apply(lambda r: r["row"]).to_topic(t_dead)
    sdf.filter(lambda r: r["to"] == "out").apply(lambda r: r["row"]).to_topic(t_out)
    app.run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
