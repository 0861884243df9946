#!/bin/sh
# Local Spark for streamdrill's tests and CI: PySpark from PyPI in a
# virtualenv (.cache/venv) with delta-spark, psycopg and pyarrow (the Delta
# reader's Parquet helper), the Kafka connector jars from Maven Central
# (.cache/spark/jars), Delta Lake's (.cache/spark/delta-jars).
# Idempotent: what is there is not fetched again.
#
#   spark.sh setup     install both, print the virtualenv's python
#   spark.sh python    print the virtualenv's python (after setup)
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
    if [ ! -f "$jars/.complete" ]; then
        command -v mvn >/dev/null || { echo "spark.sh: mvn is needed to fetch the Kafka connector" >&2; exit 1; }
        rm -rf "$jars"
        mvn -q -f "$here/pom.xml" dependency:copy-dependencies -DexcludeTransitive=true -DoutputDirectory="$jars" >&2
        touch "$jars/.complete"
    fi
    if [ ! -f "$delta_jars/.complete-$DELTA_VERSION" ]; then
        rm -rf "$delta_jars"
        mvn -q -f "$here/delta-pom.xml" dependency:copy-dependencies -DexcludeTransitive=true -DoutputDirectory="$delta_jars" >&2
        touch "$delta_jars/.complete-$DELTA_VERSION"
    fi
    echo "$venv/bin/python"
}

case "${1:-}" in
    setup) setup ;;
    python) echo "$venv/bin/python" ;;
    *) echo "usage: spark.sh setup | python" >&2; exit 2 ;;
esac
