#!/bin/sh
# Install the Debian packages streamdrill needs, if any is missing.
# Idempotent: installed packages are detected with dpkg-query and skipped.
set -eu

# the harness and its unit tests
PKGS="gcc g++ make pkg-config python3 librdkafka-dev libsqlite3-dev sqlite3 libjansson-dev libsimdjson-dev libcriterion-dev gnuplot-nox fonts-dejavu-core libfaketime kcat jq"
# the PostgreSQL reader (libpq) and the throwaway server of its tests
# (scenarios/env/postgres/postgres.sh: initdb and pg_ctl)
PKGS="$PKGS libpq-dev postgresql"
# the fuzz targets (make fuzz, and 60 s each in make test): clang and its libFuzzer runtime
PKGS="$PKGS clang libclang-rt-dev"
# the report tests render report.html in headless Chromium
PKGS="$PKGS chromium"
# the real-stack tests: Apache Kafka and Spark need a JDK 17 and Maven (their
# jars come from Maven Central), PySpark a Python with venv
command -v java >/dev/null 2>&1 || PKGS="$PKGS openjdk-17-jdk-headless"
command -v mvn >/dev/null 2>&1 || PKGS="$PKGS maven"
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || PKGS="$PKGS python3-venv"
# extra packages a target asks for (make bench-profile: linux-perf)
PKGS="$PKGS $*"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

echo "streamdrill: installing$missing"
SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "streamdrill: need root (or sudo) to install:$missing" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing
