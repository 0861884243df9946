#!/bin/sh
# Apache Flink for streamdrill's tests and CI: the runtime from PyPI
# (apache-flink-libraries ships Flink's lib/ folder: flink-dist and its
# neighbours) unpacked into .cache/flink/py, the Kafka connector from Maven
# Central at the matching version (.cache/flink/connector, pom.xml beside
# this script). Idempotent: what is there is not fetched again.
#
# Another release of Flink (SD_FLINK_VERSION=1.19.3, a drill of a bug in
# it, docs/bugs.md) goes into .cache/flink/py-VERSION with no connector on
# its classpath: its jobs bring the connector they name (`connector`).
#
#   flink.sh setup [CONNECTOR...]   install the runtime (and, for the
#                                   default release, its connector), and
#                                   each connector release named (`connector`)
#   flink.sh connector VERSION      fetch flink-connector-kafka VERSION and
#                                   the kafka-clients it depends on into
#                                   .cache/flink/connector-VERSION; print it
#   flink.sh cluster DIR [OWNER_PID]
#                      a standalone session cluster on 127.0.0.1: a JobManager
#                      and a TaskManager with two slots, killed when OWNER_PID
#                      ends; prints the REST address (http://127.0.0.1:PORT),
#                      also in DIR/rest; checkpoints go under DIR/checkpoints;
#                      the release it runs in DIR/flink-version
#   flink.sh cluster-stop DIR
#   flink.sh taskmanager-kill DIR      SIGKILL the TaskManager (a `fault-command`)
#   flink.sh taskmanager-start DIR     start a TaskManager again
#   flink.sh jobmanager-kill DIR       SIGKILL the JobManager
#   flink.sh jobmanager-start DIR      start the JobManager again (same ports)
#   flink.sh classpath [DIR]           the runtime's classpath (lib and connector;
#                                      of DIR's cluster's release)
#   flink.sh jvm-opts                  the JVM options every Flink process needs
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
DEFAULT_VERSION=2.2.0
. "$here/../daemons.sh"

# release VERSION: where its runtime and connector are
release() {
    FLINK_VERSION=$1
    if [ "$FLINK_VERSION" = "$DEFAULT_VERSION" ]; then
        py="$root/.cache/flink/py"; conn="$root/.cache/flink/connector"
    else
        py="$root/.cache/flink/py-$FLINK_VERSION"; conn=
    fi
    lib="$py/pyflink/lib"
}
release "${SD_FLINK_VERSION:-$DEFAULT_VERSION}"
# a command on a cluster's folder runs that cluster's release
case "${1:-}" in
    classpath|cluster-stop|taskmanager-*|jobmanager-*) [ ! -f "${2:-}/flink-version" ] || release "$(cat "$2/flink-version")" ;;
esac

setup() {
    if [ ! -f "$py/.flink-$FLINK_VERSION" ]; then
        rm -rf "$py"
        # pip from a virtualenv of its own (Debian's python3 may have none,
        # and refuses to install beside its own packages)
        [ -x "$root/.cache/flink/venv/bin/pip" ] || python3 -m venv "$root/.cache/flink/venv" >&2
        "$root/.cache/flink/venv/bin/pip" install -q --no-deps --target "$py" "apache-flink-libraries==$FLINK_VERSION" >&2
        touch "$py/.flink-$FLINK_VERSION"
    fi
    [ -z "$conn" ] || "$here/../fetch-jars.sh" "$here/pom.xml" "$conn" "the Kafka connector" -DexcludeArtifactIds=slf4j-api
}

# connector VERSION: the connector and what it needs beyond Flink's own
# lib/ (kafka-clients and its compression codecs), for a job to bundle
connector() {
    case "$1" in
        *[!0-9A-Za-z.-]*|'') echo "flink.sh: $1: not a connector version (such as 3.2.0-1.19)" >&2; exit 2 ;;
    esac
    d="$root/.cache/flink/connector-$1"
    "$here/../fetch-jars.sh" "$here/connector-pom.xml" "$d" "the Kafka connector $1" -Dconnector.version="$1" \
        -DexcludeGroupIds=org.slf4j,com.google.code.findbugs -DexcludeArtifactIds=flink-connector-base
    echo "$d"
}

classpath() { echo "$lib/*${conn:+:$conn/*}"; }

# what Flink's own config.yaml gives every process (env.java.opts.all):
# Flink reaches into these packages of the JDK; and the JIT's C1 tier only
# (a cluster lives for a few drills, where C2's compiles cost more CPU than
# they give back, as for the Connect workers and the Spark drivers)
jvm_opts() {
    echo "-XX:TieredStopAtLevel=1 --add-exports=java.base/sun.net.util=ALL-UNNAMED --add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED" \
        "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED" \
        "--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.net=ALL-UNNAMED" \
        "--add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED" \
        "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED" \
        "--add-opens=java.base/java.text=ALL-UNNAMED --add-opens=java.base/java.time=ALL-UNNAMED" \
        "--add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED" \
        "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED --add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED"
}

# daemon DIR NAME CLASS JVM-OPTION...: a Flink process in the background, its pid in
# DIR/NAME.pid, its log in DIR/NAME.log, killed when DIR/owner's process
# ends. Sessions of their own and without the run's token, like spark.sh's:
# a TaskManager a drill starts again belongs to the cluster.
daemon() {
    d=$1; name=$2; cls=$3; shift 3
    # shellcheck disable=SC2046
    env -u STREAMDRILL_RUN_TOKEN setsid java $(jvm_opts) "$@" -cp "$(classpath)" -Dlog.file="$d/$name.log" \
        -Dlog4j.configurationFile="file:$d/conf/log4j.properties" "$cls" --configDir "$d/conf" \
        >"$d/$name.out" 2>&1 </dev/null &
    echo "$!" > "$d/$name.pid"
    owner_watch "$d" "$!"
}

jobmanager_start() {
    mv "$1/jobmanager.log" "$1/jobmanager.log.$(date +%s%N)" 2>/dev/null || true
    daemon "$1" jobmanager org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint -Xmx512m
    wait_log flink.sh "$1" jobmanager "Rest endpoint listening at" 90
}

taskmanager_start() {
    mv "$1/taskmanager.log" "$1/taskmanager.log.$(date +%s%N)" 2>/dev/null || true
    # the JVM's sizes are those config.yaml gives the TaskManager's memory
    # (what Flink's start-up script computes from them)
    daemon "$1" taskmanager org.apache.flink.runtime.taskexecutor.TaskManagerRunner -Xmx384m -Xms384m \
        -XX:MaxDirectMemorySize=192m -XX:MaxMetaspaceSize=256m
    wait_log flink.sh "$1" taskmanager "Successful registration at resource manager" 90
}

cluster() {
    dir=$1; owner=${2:-}
    [ -f "$lib/flink-dist-$FLINK_VERSION.jar" ] || { echo "flink.sh: Flink is not installed (flink.sh setup)" >&2; exit 1; }
    rm -rf "$dir"; mkdir -p "$dir/conf" "$dir/checkpoints" "$dir/savepoints" "$dir/tmp"
    dir=$(cd "$dir" && pwd)
    [ -z "$owner" ] || echo "$owner" > "$dir/owner"
    echo "$FLINK_VERSION" > "$dir/flink-version"
    rpc=$(free_port); rest=$(free_port); blob=$(free_port)
    # Flink's own defaults but for: loopback only, small memory, a loss of
    # the TaskManager seen within seconds (heartbeats), a job that restarts
    # without end under a fixed delay, and checkpoints kept when a job is
    # cancelled (a drill resubmits from the latest one); the checkpoint
    # keys twice, under Flink 1.x's names (state.*) and 2.x's
    cat > "$dir/conf/config.yaml" <<EOF
jobmanager.rpc.address: 127.0.0.1
jobmanager.rpc.port: $rpc
jobmanager.bind-host: 127.0.0.1
jobmanager.memory.process.size: 900m
taskmanager.host: 127.0.0.1
taskmanager.bind-host: 127.0.0.1
taskmanager.numberOfTaskSlots: 2
taskmanager.cpu.cores: 2
taskmanager.memory.framework.heap.size: 128m
taskmanager.memory.task.heap.size: 256m
taskmanager.memory.managed.size: 64m
taskmanager.memory.framework.off-heap.size: 128m
taskmanager.memory.task.off-heap.size: 0m
taskmanager.memory.network.min: 64m
taskmanager.memory.network.max: 64m
taskmanager.memory.jvm-metaspace.size: 256m
taskmanager.memory.jvm-overhead.min: 192m
taskmanager.memory.jvm-overhead.max: 192m
rest.address: 127.0.0.1
rest.bind-address: 127.0.0.1
rest.port: $rest
blob.server.port: $blob
parallelism.default: 1
heartbeat.interval: 1000
heartbeat.timeout: 6000
restart-strategy.type: fixed-delay
restart-strategy.fixed-delay.attempts: 1000
restart-strategy.fixed-delay.delay: 1 s
execution.checkpointing.dir: file://$dir/checkpoints
execution.checkpointing.savepoint-dir: file://$dir/savepoints
execution.checkpointing.externalized-checkpoint-retention: RETAIN_ON_CANCELLATION
execution.checkpointing.num-retained: 2
state.checkpoints.dir: file://$dir/checkpoints
state.savepoints.dir: file://$dir/savepoints
state.checkpoints.num-retained: 2
io.tmp.dirs: $dir/tmp
web.submit.enable: false
EOF
    cat > "$dir/conf/log4j.properties" <<'EOF'
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = MainAppender
appender.main.name = MainAppender
appender.main.type = File
appender.main.fileName = ${sys:log.file}
appender.main.layout.type = PatternLayout
appender.main.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
logger.kafka.name = org.apache.kafka
logger.kafka.level = WARN
EOF
    cp "$dir/conf/log4j.properties" "$dir/conf/log4j-cli.properties"
    jobmanager_start "$dir" || { cluster_stop "$dir"; exit 1; }
    taskmanager_start "$dir" || { cluster_stop "$dir"; exit 1; }
    echo "http://127.0.0.1:$rest" > "$dir/rest"
    echo "http://127.0.0.1:$rest"
}

case "${1:-}" in
    setup) setup; shift; for v in "$@"; do connector "$v" >/dev/null; done ;;
    classpath) classpath ;;
    connector) connector "${2:-}" ;;
    jvm-opts) jvm_opts ;;
    cluster) shift; cluster "$@" ;;
    cluster-stop) shift; cluster_stop "$@" ;;
    taskmanager-kill) kill -9 "$(cat "$2/taskmanager.pid")" ;;
    taskmanager-start) taskmanager_start "$2" ;;
    jobmanager-kill) kill -9 "$(cat "$2/jobmanager.pid")" ;;
    jobmanager-start) jobmanager_start "$2" ;;
    *) echo "usage: flink.sh setup [CONNECTOR...] | connector VERSION | classpath [DIR] | jvm-opts | cluster DIR [OWNER_PID] | cluster-stop DIR | taskmanager-kill DIR | taskmanager-start DIR | jobmanager-kill DIR | jobmanager-start DIR" >&2; exit 2 ;;
esac
