#!/bin/sh
# A Spark query deployed to a standalone cluster in cluster deploy mode (the
# master runs its driver on a worker), as a drill's `deploy` commands
# (scenarios/deployed/spark-cluster.drill). The cluster is the one
# scenarios/env/spark/spark.sh cluster SPARKDIR started: SPARKDIR/rest is its
# master's REST submission server, SPARKDIR/work-K the workers' folders.
#
#   spark-cluster.sh start SPARKDIR SOURCE.java ARG...
#                                  compile SOURCE.java against PySpark's jars
#                                  (once; .cache/spark/jvm), submit it with
#                                  spark-submit --deploy-mode cluster, print
#                                  the driver's id (driver-...)
#   spark-cluster.sh status SPARKDIR ID   exit 0 while the driver is submitted,
#                                         running or relaunching
#   spark-cluster.sh kill SPARKDIR ID     ask the master to kill the driver
#   spark-cluster.sh logs SPARKDIR ID     follow the driver's stdout and stderr
#                                         (its folder on the worker that runs it)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv="$root/.cache/venv"

spark_home() { "$venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))'; }

# rest SPARKDIR: the REST server's http address
rest() {
    [ -f "$1/rest" ] || { echo "spark-cluster.sh: $1/rest: no REST submission server (start the cluster with spark.sh cluster)" >&2; exit 2; }
    sed 's|^spark://|http://|' "$1/rest"
}

# build SOURCE.java: the jar holding it, compiled when missing or older
build() {
    src=$1; name=$(basename "$src" .java); out="$root/.cache/spark/jvm"
    jar="$out/$name.jar"
    # shellcheck disable=SC3013 # -nt: dash's test has it, as bash's does
    if [ ! -f "$jar" ] || [ "$src" -nt "$jar" ]; then
        mkdir -p "$out/$name.classes"
        javac -nowarn -cp "$(spark_home)/jars/*" -d "$out/$name.classes" "$src" >&2
        (cd "$out/$name.classes" && jar cf "$jar.tmp" .) && mv "$jar.tmp" "$jar"
    fi
    echo "$jar"
}

start() {
    dir=$1; src=$2; shift 2
    jar=$(build "$src")
    jars=$(printf '%s\n' "$root"/.cache/spark/jars/*.jar | paste -sd, -)
    sh=$(spark_home)
    log=$(mktemp)
    if ! SPARK_HOME="$sh" "$sh/bin/spark-submit" --master "$(cat "$dir/rest")" --deploy-mode cluster \
            --conf spark.master.rest.enabled=true --conf spark.driver.memory=768m --conf spark.executor.memory=768m \
            --conf spark.ui.enabled=false --jars "$jars" --class "$(basename "$src" .java)" "$jar" "$@" >"$log" 2>&1; then
        cat "$log" >&2; rm -f "$log"; exit 1
    fi
    id=$(grep -o 'driver-[0-9]*-[0-9]*' "$log" | tail -1)
    [ -n "$id" ] || { echo "spark-cluster.sh: spark-submit named no driver:" >&2; cat "$log" >&2; rm -f "$log"; exit 1; }
    rm -f "$log"
    echo "$id"
}

# ask METHOD SPARKDIR PATH: the REST server's JSON answer's driverState (or
# "success" for a kill), three tries
ask() {
    "$venv/bin/python" - "$1" "$(rest "$2")$3" <<'PY'
import json, sys, time, urllib.request
method, url = sys.argv[1], sys.argv[2]
for attempt in range(3):
    try:
        req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
        doc = json.load(urllib.request.urlopen(req, timeout=10))
        print(doc.get("driverState") or ("success" if doc.get("success") else doc.get("message", "failed")))
        sys.exit(0)
    except Exception as e:  # the master busy or restarting: try again
        err = e
        time.sleep(1)
sys.stderr.write(f"spark-cluster.sh: {url}: {err}\n")
sys.exit(2)
PY
}

status() {
    state=$(ask GET "$1" "/v1/submissions/status/$2") || exit 2
    case "$state" in SUBMITTED|RUNNING|RELAUNCHING) exit 0 ;; *) echo "driver $2: $state" >&2; exit 1 ;; esac
}

kill_driver() {
    answer=$(ask POST "$1" "/v1/submissions/kill/$2") || exit 2
    [ "$answer" = success ] || { echo "spark-cluster.sh: kill $2: $answer" >&2; exit 1; }
}

logs() {
    dir=$1; id=$2
    # the driver's folder appears on the worker the master chose
    while :; do
        for d in "$dir"/work-*/"$id"; do
            if [ -d "$d" ]; then exec tail -q -n +1 -F "$d/stdout" "$d/stderr" 2>/dev/null; fi
        done
        sleep 0.2
    done
}

case "${1:-}" in
    start) shift; start "$@" ;;
    status) shift; status "$@" ;;
    kill) shift; kill_driver "$@" ;;
    logs) shift; logs "$@" ;;
    *) echo "usage: spark-cluster.sh start SPARKDIR SOURCE.java ARG... | status SPARKDIR ID | kill SPARKDIR ID | logs SPARKDIR ID" >&2; exit 2 ;;
esac
