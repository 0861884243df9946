#!/bin/sh
# Apache Kafka Connect for streamdrill's drills: its jars (the broker's
# version, with the file connectors and MirrorMaker 2) come from Maven
# Central through scenarios/env/connect/pom.xml and are cached in
# .cache/connect/libs.
#
#   connect.sh fetch       download the jars (once)
#   connect.sh classpath   fetch if needed, print the class path
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
libs="$root/.cache/connect/libs"

fetch() {
    "$here/../fetch-jars.sh" "$here/pom.xml" "$libs" "the Kafka Connect jars"
}

case "${1:-}" in
    fetch) fetch ;;
    classpath) fetch; echo "$libs/*" ;;
    *) echo "usage: connect.sh fetch | classpath" >&2; exit 2 ;;
esac
