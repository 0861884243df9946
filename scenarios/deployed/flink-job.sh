#!/bin/sh
# A Flink job submitted to a session cluster, as a drill's `deploy`
# commands (scenarios/flink-kafka-sink.drill). The cluster is the one
# scenarios/env/flink/flink.sh cluster FLINKDIR started: FLINKDIR/rest is its
# REST address, FLINKDIR/conf its configuration.
#
#   flink-job.sh start [--connector VERSION] [--restore=no] FLINKDIR CHECKPOINTS SOURCE.java ARG...
#                         compile SOURCE.java against the runtime's jars
#                         (once; .cache/flink/jobs), submit it detached with
#                         its checkpoints under CHECKPOINTS, resumed from the
#                         newest completed checkpoint or savepoint there
#                         (CHECKPOINTS/JOB/chk-N, CHECKPOINTS/savepoints/
#                         savepoint-..., each with its _metadata) when there
#                         is one, as a job cancelled or stopped and submitted
#                         again is; print the job id
#                         (with --allow-non-restored-state[=yes] first, state of the
#                         checkpoint or savepoint that no operator of the job
#                         claims is dropped instead of refused); a job that
#                         fails while it starts (Flink refuses the savepoint)
#                         is an error with Flink's message; with --connector
#                         the job carries that release of the Kafka connector
#                         (a cluster of another Flink release has none); with
#                         --restore=no it starts afresh, whatever checkpoints
#                         there are
#   flink-job.sh status FLINKDIR ID   exit 0 while the job is created, running
#                                     or restarting (a lost TaskManager), 10
#                                     once it finished (a bounded job)
#   flink-job.sh kill FLINKDIR ID     cancel the job (its checkpoints are kept)
#   flink-job.sh stop FLINKDIR ID CHECKPOINTS
#                                     stop the job with a savepoint in
#                                     CHECKPOINTS/savepoints (Flink's graceful
#                                     stop: the sinks commit what the savepoint
#                                     holds); returns once it is taken
#   flink-job.sh logs FLINKDIR ID     follow the JobManager's lines that name
#                                     the job (its checkpoints, restarts and
#                                     failures: the run's counts of them)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
flink="$root/scenarios/env/flink/flink.sh"

rest() {
    [ -f "$1/rest" ] || { echo "flink-job.sh: $1/rest: no Flink cluster there (start one with flink.sh cluster)" >&2; exit 2; }
    cat "$1/rest"
}

# build FLINKDIR SOURCE.java [CONNECTOR]: the jar holding it and the
# classes it uses from the sources beside it, compiled against the
# runtime of FLINKDIR's cluster when missing or older than one of them;
# with CONNECTOR (a release of flink-connector-kafka) the connector and
# kafka-clients go into the jar too, as a job built for a cluster without
# them carries them
build() {
    dir=$1; src=$2; conn=${3:-}; name=$(basename "$src" .java); out="$root/.cache/flink/jobs"
    cp=$("$flink" classpath "$dir")
    if [ -n "$conn" ]; then
        cdir=$("$flink" connector "$conn") || exit 1
        out="$out/$(cat "$dir/flink-version")-$conn"; cp="$cp:$cdir/*"
    fi
    jar="$out/$name.jar"
    stale=
    [ -f "$jar" ] || stale=1
    # shellcheck disable=SC3013 # -nt: dash's test has it, as bash's does
    for f in "$(dirname "$src")"/*.java; do [ "$f" -nt "$jar" ] && stale=1; done
    if [ -n "$stale" ]; then
        rm -rf "$out/$name.classes"; mkdir -p "$out/$name.classes"
        javac -nowarn -cp "$cp" -sourcepath "$(dirname "$src")" -d "$out/$name.classes" "$src" >&2
        if [ -n "$conn" ]; then
            for j in "$cdir"/*.jar; do (cd "$out/$name.classes" && jar xf "$j"); done
            rm -rf "$out/$name.classes/META-INF"/*.SF "$out/$name.classes/META-INF"/*.RSA "$out/$name.classes/META-INF"/*.DSA
        fi
        (cd "$out/$name.classes" && jar cf "$jar.tmp" .) && mv "$jar.tmp" "$jar"
    fi
    echo "$jar"
}

# newest CHECKPOINTS: the newest completed checkpoint or savepoint under
# it (by its _metadata's time), or nothing
newest() {
    # shellcheck disable=SC2012
    m=$(ls -t "$1"/*/chk-*/_metadata "$1"/savepoints/savepoint-*/_metadata 2>/dev/null | head -1)
    [ -z "$m" ] || dirname "$m"
}

start() {
    allow=; conn=; restore=yes
    while :; do
        case "${1:-}" in
            --allow-non-restored-state|--allow-non-restored-state=yes) allow=1; shift ;;
            --allow-non-restored-state=no) shift ;;
            --connector) conn=$2; shift 2 ;;
            --restore=yes|--restore=no) restore=${1#--restore=}; shift ;;
            *) break ;;
        esac
    done
    dir=$1; chk=$2; src=$3; shift 3
    jar=$(build "$dir" "$src" "$conn")
    mkdir -p "$chk"; chk=$(cd "$chk" && pwd)
    from=; [ "$restore" = no ] || from=$(newest "$chk")
    log=$(mktemp)
    # the checkpoint folder under Flink 2.x's key and 1.x's
    set -- -d -m "$(rest "$dir" | sed 's|^http://||')" -Dexecution.checkpointing.dir="file://$chk" -Dstate.checkpoints.dir="file://$chk" \
        ${from:+-s "file://$from"} ${from:+${allow:+-n}} -c "$(basename "$src" .java)" "$jar" "$@"
    # shellcheck disable=SC2046
    if ! FLINK_CONF_DIR="$dir/conf" java $("$flink" jvm-opts) -Xmx256m -cp "$("$flink" classpath "$dir")" \
            -Dlog4j.configurationFile="file:$dir/conf/log4j-cli.properties" -Dlog.file="$dir/client.log" \
            org.apache.flink.client.cli.CliFrontend run "$@" >"$log" 2>&1; then
        # the causes without their stack frames, the innermost (what Flink
        # refused: a savepoint it cannot map, a class it cannot load) last
        grep -v '^[[:space:]]*at \|^[[:space:]]*\.\.\. [0-9]* more' "$log" >&2
        cause=$(grep '^Caused by: ' "$log" | tail -1 | cut -c1-600)
        [ -z "$cause" ] || echo "flink-job.sh: Flink refused the job: ${cause#Caused by: }" >&2
        rm -f "$log"; exit 1
    fi
    id=$(sed -n 's/.*JobID \([0-9a-f]\{32\}\).*/\1/p' "$log" | tail -1)
    [ -n "$id" ] || { echo "flink-job.sh: the client named no job:" >&2; cat "$log" >&2; rm -f "$log"; exit 1; }
    rm -f "$log"
    [ -z "$from" ] || echo "flink-job.sh: job $id resumed from $from${allow:+ (state no operator of the job claims is dropped)}" >&2
    settled "$dir" "$id" || exit 1
    echo "$id"
}

# settled FLINKDIR ID: wait until the job has left its initialization (a
# minute at most); a job that failed there (a checkpoint or savepoint it
# cannot restore: operators it cannot map, state it cannot read) is an
# error with Flink's own message
settled() {
    python3 - "$(rest "$1")" "$2" <<'PY'
import json, sys, time, urllib.request
base, job = sys.argv[1:3]
for _ in range(120):
    try:
        state = json.load(urllib.request.urlopen(f"{base}/jobs/{job}", timeout=10)).get("state")
    except Exception:
        state = None
    if state in ("FAILED", "CANCELED"):
        why = ""
        try:
            doc = json.load(urllib.request.urlopen(f"{base}/jobs/{job}/exceptions", timeout=10))
            entries = (doc.get("exceptionHistory") or {}).get("entries") or []
            trace = entries[0].get("stacktrace", "") if entries else doc.get("root-exception", "")
            # the causes, outermost first: the innermost names what Flink refused
            why = "\n".join(l for l in trace.splitlines() if not l.startswith("\t"))[:3000]
        except Exception as e:
            why = f"(its exceptions could not be read: {e})"
        sys.exit(f"flink-job.sh: job {job} {state.lower()} while it started:\n{why}")
    if state not in (None, "INITIALIZING", "CREATED"):
        sys.exit(0)
    time.sleep(0.5)
sys.exit(0)
PY
}

# ask METHOD FLINKDIR PATH: the JSON answer's "state" (or "accepted" for a
# PATCH), three tries
ask() {
    python3 - "$1" "$(rest "$2")$3" <<'PY'
import json, sys, time, urllib.request
method, url = sys.argv[1], sys.argv[2]
for attempt in range(3):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as r:
            body = r.read()
            print(json.loads(body).get("state", "?") if method == "GET" else "accepted")
        sys.exit(0)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            print("UNKNOWN")
            sys.exit(0)
        err = e
    except Exception as e:  # the JobManager busy or restarting: try again
        err = e
    time.sleep(1)
sys.stderr.write(f"flink-job.sh: {url}: {err}\n")
sys.exit(2)
PY
}

status() {
    state=$(ask GET "$1" "/jobs/$2") || exit 2
    case "$state" in
        INITIALIZING|CREATED|RUNNING|RESTARTING|FAILING|RECONCILING) exit 0 ;;
        FINISHED) echo "job $2: FINISHED" >&2; exit 10 ;; # a bounded job that read its input to the end
        *) echo "job $2: $state" >&2; exit 1 ;;
    esac
}

cancel() {
    ask PATCH "$1" "/jobs/$2?mode=cancel" >/dev/null
}

# stop FLINKDIR ID CHECKPOINTS: POST /jobs/ID/stop, then wait for the
# savepoint (two minutes at most)
stop() {
    mkdir -p "$3/savepoints"
    python3 - "$(rest "$1")" "$2" "$(cd "$3/savepoints" && pwd)" <<'PY'
import json, sys, time, urllib.request
base, job, target = sys.argv[1:4]
body = json.dumps({"targetDirectory": "file://" + target, "drain": False}).encode()
req = urllib.request.Request(f"{base}/jobs/{job}/stop", data=body, method="POST", headers={"Content-Type": "application/json"})
trigger = json.load(urllib.request.urlopen(req, timeout=30))["request-id"]
for _ in range(240):
    doc = json.load(urllib.request.urlopen(f"{base}/jobs/{job}/savepoints/{trigger}", timeout=10))
    if doc.get("status", {}).get("id") == "COMPLETED":
        op = doc.get("operation") or {}
        if "location" in op:
            print(f"flink-job.sh: job {job} stopped with savepoint {op['location']}", file=sys.stderr)
            sys.exit(0)
        sys.exit(f"flink-job.sh: stop {job}: {json.dumps(op.get('failure-cause', op))[:2000]}")
    time.sleep(0.5)
sys.exit(f"flink-job.sh: stop {job}: no savepoint within 2 minutes")
PY
}

logs() {
    exec tail -n +1 -F "$1/jobmanager.log" 2>/dev/null | grep --line-buffered -F "$2"
}

case "${1:-}" in
    start) shift; start "$@" ;;
    status) shift; status "$@" ;;
    kill) shift; cancel "$@" ;;
    stop) shift; stop "$@" ;;
    logs) shift; logs "$@" ;;
    *) echo "usage: flink-job.sh start [--allow-non-restored-state[=yes|no]] [--connector VERSION] [--restore=no] FLINKDIR CHECKPOINTS SOURCE.java ARG... | status FLINKDIR ID | kill FLINKDIR ID | stop FLINKDIR ID CHECKPOINTS | logs FLINKDIR ID" >&2; exit 2 ;;
esac
