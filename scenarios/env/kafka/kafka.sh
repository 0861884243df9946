#!/bin/sh
# A single-node Apache Kafka broker in KRaft mode (broker and controller in
# one JVM) on 127.0.0.1, for streamdrill's tests and CI. Its jars come from
# Maven Central through scenarios/env/kafka/pom.xml and are cached in
# .cache/kafka/libs.
#
#   kafka.sh fetch                          download the jars (once)
#   kafka.sh start DIR [PORT] [OWNER_PID] [PROXY_PORT]
#                                           format DIR, start, wait until it answers,
#                                           print the bootstrap address; with OWNER_PID
#                                           the broker is killed when that process ends;
#                                           with PROXY_PORT a second listener is opened
#                                           that advertises 127.0.0.1:PROXY_PORT, and a
#                                           second line "proxy 127.0.0.1:PROXY_PORT=127.0.0.1:P"
#                                           tells streamdrill --proxy what to forward
#   kafka.sh stop DIR                       stop it (SIGTERM, then SIGKILL)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
libs="$root/.cache/kafka/libs"

fetch() {
    "$here/../fetch-jars.sh" "$here/pom.xml" "$libs" "the Kafka jars"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

start() {
    dir=$1; port=${2:-}; owner=${3:-}; proxy=${4:-}
    fetch
    [ -n "$port" ] || port=$(free_port)
    while [ "$port" = "$proxy" ]; do port=$(free_port); done
    cport=$(free_port)
    while [ "$cport" = "$port" ] || [ "$cport" = "$proxy" ]; do cport=$(free_port); done
    listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
    advertised="PLAINTEXT://127.0.0.1:$port"
    protocols="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    if [ -n "$proxy" ]; then
        pport=$(free_port)
        while [ "$pport" = "$port" ] || [ "$pport" = "$cport" ] || [ "$pport" = "$proxy" ]; do pport=$(free_port); done
        listeners="$listeners,PROXIED://127.0.0.1:$pport"
        advertised="$advertised,PROXIED://127.0.0.1:$proxy"
        protocols="$protocols,PROXIED:PLAINTEXT"
    fi
    rm -rf "$dir"; mkdir -p "$dir/data"
    cat > "$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=$listeners
advertised.listeners=$advertised
controller.listener.names=CONTROLLER
listener.security.protocol.map=$protocols
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=3
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
group.initial.rebalance.delay.ms=0
log.retention.hours=24
PROPS
    cat > "$dir/log4j2.properties" <<LOG
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = $dir/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.apache.name = org.apache.kafka
logger.apache.level = WARN
LOG
    cp="$libs/*"
    java -cp "$cp" kafka.tools.StorageTool format -t "$(java -cp "$cp" kafka.tools.StorageTool random-uuid)" \
        -c "$dir/server.properties" >"$dir/format.log" 2>&1 || { cat "$dir/format.log" >&2; exit 1; }
    java -Xms256m -Xmx768m -XX:+UseG1GC -Dlog4j2.configurationFile="$dir/log4j2.properties" \
        -cp "$cp" kafka.Kafka "$dir/server.properties" >"$dir/stdout.log" 2>&1 &
    pid=$!
    echo "$pid" > "$dir/pid"
    if [ -n "$owner" ]; then
        # the broker must not outlive whoever started it
        ( while kill -0 "$owner" 2>/dev/null && kill -0 "$pid" 2>/dev/null; do sleep 1; done
          kill -9 "$pid" 2>/dev/null || true ) >/dev/null 2>&1 </dev/null &
    fi
    i=0
    while ! grep -q "Kafka Server started" "$dir/server.log" 2>/dev/null; do
        i=$((i + 1))
        if ! kill -0 "$pid" 2>/dev/null || [ $i -gt 600 ]; then
            echo "kafka.sh: the broker did not start; last lines of $dir/server.log and stdout.log:" >&2
            tail -20 "$dir/server.log" "$dir/stdout.log" >&2 2>/dev/null || true
            kill -9 "$pid" 2>/dev/null || true
            exit 1
        fi
        sleep 0.1
    done
    echo "127.0.0.1:$port" > "$dir/bootstrap"
    echo "127.0.0.1:$port"
    if [ -n "$proxy" ]; then echo "proxy 127.0.0.1:$proxy=127.0.0.1:$pport"; fi
}

stop() {
    dir=$1
    [ -f "$dir/pid" ] || return 0
    pid=$(cat "$dir/pid")
    kill "$pid" 2>/dev/null || true
    i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/pid"
}

case "${1:-}" in
    fetch) fetch ;;
    start) shift; start "$@" ;;
    stop) shift; stop "$@" ;;
    *) echo "usage: kafka.sh fetch | start DIR [PORT] [OWNER_PID] [PROXY_PORT] | stop DIR" >&2; exit 2 ;;
esac
