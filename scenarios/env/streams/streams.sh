#!/bin/sh
# Kafka Streams for streamdrill's drills: the jars of a Streams application
# (scenarios/env/streams/pom.xml: Kafka Streams, its RocksDB, Jackson, a
# console logger) from Maven Central, cached once per Streams version in
# .cache/streams/VERSION (or under SD_STREAMS_LIBS).
#
#   streams.sh fetch [VERSION]       download the jars of that version (once)
#   streams.sh classpath [VERSION]   fetch if needed, print the class path
#
# VERSION defaults to the broker's (scenarios/env/kafka/pom.xml); a client
# of 3.x talks to the 4.x broker the tests start.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
version=${2:-$(sed -n 's:.*<streams.version>\(.*\)</streams.version>.*:\1:p' "$here/pom.xml")}
case "$version" in
    *[!0-9.]*|'') echo "streams.sh: bad version '$version'" >&2; exit 2 ;;
esac
libs="${SD_STREAMS_LIBS:-$root/.cache/streams}/$version"

fetch() {
    "$here/../fetch-jars.sh" "$here/pom.xml" "$libs" "the Kafka Streams $version jars" "-Dstreams.version=$version"
}

case "${1:-}" in
    fetch) fetch ;;
    classpath) fetch; echo "$libs/*" ;;
    *) echo "usage: streams.sh fetch|classpath [VERSION]" >&2; exit 2 ;;
esac
