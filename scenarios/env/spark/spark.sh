#!/bin/sh
# Local Spark for streamdrill's tests and CI: PySpark from PyPI in a
# virtualenv (.cache/venv) with delta-spark, psycopg and pyarrow (the Delta
# reader's Parquet helper), the Kafka connector jars from Maven Central
# (.cache/spark/jars), Delta Lake's (.cache/spark/delta-jars).
# Idempotent: what is there is not fetched again.
#
#   spark.sh setup     install both, print the virtualenv's python
#   spark.sh python    print the virtualenv's python (after setup)
#   spark.sh cluster DIR [WORKERS] [OWNER_PID]
#                      a standalone Spark cluster on 127.0.0.1 from the PySpark
#                      installation: a master and WORKERS workers (default 2,
#                      one core and 1 GB each), killed when OWNER_PID ends; prints
#                      the master's URL (spark://127.0.0.1:PORT), also in DIR/master;
#                      its REST submission server's (cluster deploy mode) in DIR/rest
#   spark.sh cluster-stop DIR
#   spark.sh worker-kill DIR K     SIGKILL worker K (a `fault-command` of a drill)
#   spark.sh worker-start DIR K    start worker K again on the same master
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
venv="$root/.cache/venv"
jars="$root/.cache/spark/jars"
PYSPARK_VERSION=4.2.0
DELTA_VERSION=4.4.0
PYARROW_VERSION=26.0.1
PSYCOPG_VERSION=3.3.9
delta_jars="$root/.cache/spark/delta-jars"
. "$here/../daemons.sh"

setup() {
    if [ ! -f "$venv/.pyspark-$PYSPARK_VERSION" ]; then
        python3 -m venv "$venv" >&2
        "$venv/bin/pip" install -q "pyspark==$PYSPARK_VERSION" >&2
        touch "$venv/.pyspark-$PYSPARK_VERSION"
    fi
    extras="delta-spark-$DELTA_VERSION-pyarrow-$PYARROW_VERSION-psycopg-$PSYCOPG_VERSION"
    if [ ! -f "$venv/.$extras" ]; then
        "$venv/bin/pip" install -q "pyspark==$PYSPARK_VERSION" "delta-spark==$DELTA_VERSION" "pyarrow==$PYARROW_VERSION" \
            "psycopg[binary]==$PSYCOPG_VERSION" >&2
        touch "$venv/.$extras"
    fi
    # the mark names the pom's version: a pom that lists more jars fetches again
    pom_mark=".complete-$(cksum < "$here/pom.xml" | cut -d' ' -f1)"
    if [ ! -f "$jars/$pom_mark" ]; then
        command -v mvn >/dev/null || { echo "spark.sh: mvn is needed to fetch the Kafka connector" >&2; exit 1; }
        rm -rf "$jars"
        mvn -q -f "$here/pom.xml" dependency:copy-dependencies -DexcludeTransitive=true -DoutputDirectory="$jars" >&2
        touch "$jars/$pom_mark"
    fi
    if [ ! -f "$delta_jars/.complete-$DELTA_VERSION" ]; then
        rm -rf "$delta_jars"
        mvn -q -f "$here/delta-pom.xml" dependency:copy-dependencies -DexcludeTransitive=true -DoutputDirectory="$delta_jars" >&2
        touch "$delta_jars/.complete-$DELTA_VERSION"
    fi
    echo "$venv/bin/python"
}

# daemon DIR NAME CLASS ARG...: a Spark daemon in the background, its pid in
# DIR/NAME.pid, its log in DIR/NAME.log, killed when DIR/owner's process ends
daemon() {
    d=$1; name=$2; shift 2
    # sessions of their own: started by a drill's fault command, they must
    # outlive it (what a command leaves in its process group is killed)
    # and without the run's token: a worker a drill starts again belongs to
    # the cluster (killed with its owner), not to the run that started it
    SPARK_HOME="$spark_home" env -u STREAMDRILL_RUN_TOKEN setsid "$spark_home/bin/spark-class" "$@" >"$d/$name.log" 2>&1 </dev/null &
    echo "$!" > "$d/$name.pid"
    owner_watch "$d" "$!"
}

cluster() {
    dir=$1; n=${2:-2}; owner=${3:-}
    spark_home=$("$venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
    rm -rf "$dir"; mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [ -z "$owner" ] || echo "$owner" > "$dir/owner"
    port=$(free_port)
    rport=$(free_port)
    while [ "$rport" = "$port" ]; do rport=$(free_port); done
    # the REST submission server: drivers submitted in cluster deploy mode
    # are asked for and killed through it (scenarios/deployed/spark-cluster.sh)
    printf 'spark.master.rest.enabled true\nspark.master.rest.host 127.0.0.1\nspark.master.rest.port %s\n' "$rport" > "$dir/master.conf"
    daemon "$dir" master org.apache.spark.deploy.master.Master --host 127.0.0.1 --port "$port" --webui-port 0 \
        --properties-file "$dir/master.conf"
    wait_log spark.sh "$dir" master "Successfully started service 'sparkMaster'" || { cluster_stop "$dir"; exit 1; }
    for k in $(seq 1 "$n"); do
        mkdir -p "$dir/work-$k"
        daemon "$dir" "worker-$k" org.apache.spark.deploy.worker.Worker "spark://127.0.0.1:$port" --host 127.0.0.1 \
            --cores 1 --memory 1g --webui-port 0 --work-dir "$dir/work-$k"
    done
    for k in $(seq 1 "$n"); do
        wait_log spark.sh "$dir" "worker-$k" "Successfully registered with master" || { cluster_stop "$dir"; exit 1; }
    done
    echo "spark://127.0.0.1:$port" > "$dir/master"
    echo "spark://127.0.0.1:$rport" > "$dir/rest"
    echo "spark://127.0.0.1:$port"
}

# worker-kill DIR K: SIGKILL worker K (its executors exit when they lose it)
worker_kill() {
    kill -9 "$(cat "$1/worker-$2.pid")"
}

# worker-start DIR K: start worker K again, on the same master and folder
worker_start() {
    dir=$1; k=$2
    spark_home=$("$venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
    mv "$dir/worker-$k.log" "$dir/worker-$k.log.$(date +%s)" 2>/dev/null || true
    daemon "$dir" "worker-$k" org.apache.spark.deploy.worker.Worker "$(cat "$dir/master")" --host 127.0.0.1 \
        --cores 1 --memory 1g --webui-port 0 --work-dir "$dir/work-$k"
    wait_log spark.sh "$dir" "worker-$k" "Successfully registered with master"
}

case "${1:-}" in
    setup) setup ;;
    python) echo "$venv/bin/python" ;;
    cluster) shift; cluster "$@" ;;
    cluster-stop) shift; cluster_stop "$@" ;;
    worker-kill) shift; worker_kill "$@" ;;
    worker-start) shift; worker_start "$@" ;;
    *) echo "usage: spark.sh setup | python | cluster DIR [WORKERS] [OWNER_PID] | cluster-stop DIR | worker-kill DIR K | worker-start DIR K" >&2; exit 2 ;;
esac
