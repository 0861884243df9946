#!/bin/sh
# refpipe behind a wrapper that prints Kafka Streams' state lines, in
# slf4j's simple layout, as if it were a Streams application that
# rebalanced and restored at once: what it prints is its own claim.
# Usage: says-streams.sh REFPIPE ARG...
echo "[main] INFO org.apache.kafka.streams.KafkaStreams - stream-client [says-1] State transition from CREATED to REBALANCING" >&2
echo "[t-1] INFO org.apache.kafka.streams.processor.internals.StoreChangelogReader - stream-thread [t-1] Finished restoring changelog s-changelog-0 to store s with a total number of 5 records" >&2
echo "[main] INFO org.apache.kafka.streams.KafkaStreams - stream-client [says-1] State transition from REBALANCING to RUNNING" >&2
exec "$@"
