#!/bin/sh
# Install the Debian packages streamdrill needs, if any is missing.
#
#   scripts/deps.sh [build] [PACKAGE...]
#
# With `build`: only what building and running streamdrill needs (make,
# make install, make deb); without: also everything the tests use. Extra
# PACKAGEs are added (make bench-profile: linux-perf).
#
# Idempotent: installed packages are detected with dpkg-query and skipped.
# Quiet: one line says what is installed and how long it took; apt's own
# output goes to .cache/logs/deps.log, whose last lines are shown on failure.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
mode=all
if [ "${1:-}" = build ]; then mode=build; shift; fi

# building and running the harness: compilers, the libraries it links
# (libprotoc-dev only for the headers of protoc's .proto parser, which
# libprotobuf itself carries), gnuplot for the charts, Python for the sink
# helpers
PKGS="gcc g++ make pkg-config python3 librdkafka-dev libsqlite3-dev libjansson-dev libpcre2-dev libavro-dev libprotobuf-c-dev protobuf-c-compiler libprotobuf-dev libprotoc-dev libsimdjson-dev libpq-dev libssl-dev libcurl4-openssl-dev gnuplot-nox fonts-dejavu-core libfaketime"
# make deb: dpkg-shlibdeps, lintian
PKGS="$PKGS dpkg-dev lintian fakeroot"
if [ "$mode" = all ]; then
    # the unit tests (Criterion), the tools the scenario tests read topics
    # and JSON with, the manual page check
    PKGS="$PKGS libcriterion-dev sqlite3 kcat jq man-db groff-base"
    # the JSON Schema validator's unit test reads the JSON Schema Test Suite
    PKGS="$PKGS json-schema-test-suite"
    # the operator-step test answers a waiting run on a terminal it drives (tmux)
    PKGS="$PKGS tmux"
    # the PostgreSQL reader's throwaway server (scenarios/env/postgres/postgres.sh: initdb and pg_ctl)
    PKGS="$PKGS postgresql"
    # make ecmare-diff (in make test): Node's RegExp, what the ECMA-262 pattern reader is compared with
    PKGS="$PKGS nodejs"
    # the fuzz targets (make fuzz, and 8 s each in make test): clang and its libFuzzer runtime
    PKGS="$PKGS clang libclang-rt-dev"
    # the report tests render report.html in headless Chromium
    PKGS="$PKGS chromium"
    # the .deb test installs the package on a bare Debian root made with mmdebstrap
    PKGS="$PKGS mmdebstrap"
    # make image: an OCI image of the package, laid out with umoci (no daemon)
    PKGS="$PKGS umoci"
    # the real-stack tests: Apache Kafka, Spark and Flink need a JDK 17 and Maven (their
    # jars come from Maven Central; the Flink job is compiled), PySpark a Python with venv
    { command -v java && command -v javac; } >/dev/null 2>&1 || PKGS="$PKGS openjdk-17-jdk-headless"
    command -v mvn >/dev/null 2>&1 || PKGS="$PKGS maven"
    python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || PKGS="$PKGS python3-venv"
    # the standalone Spark cluster's executor kill (a fault-command) uses pkill
    PKGS="$PKGS procps"
    # make lint: shellcheck over the shell scripts (ruff, for the Python, is in the test virtualenv);
    # make mutate: objcopy, to compare a mutant's object with the original's; make test (call-circles): nm and ar read who calls whom from the objects
    PKGS="$PKGS shellcheck binutils"
fi
PKGS="$PKGS $*"

missing=""
n=0
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
        n=$((n + 1))
    fi
done
[ -z "$missing" ] && exit 0

SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "streamdrill: need root (or sudo) to install:$missing" >&2
        exit 1
    fi
fi
log="$root/.cache/logs/deps.log"
mkdir -p "$(dirname "$log")"
start=$(date +%s)
# shellcheck disable=SC2086 # $missing is a list of package names, split on purpose
printf 'streamdrill: installing %d Debian package%s (%s) ... ' "$n" "$([ "$n" = 1 ] || echo s)" "$(echo $missing | tr ' ' ',' | sed 's/,/, /g')"
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086 # the same list, and $SUDO empty or sudo
if { $SUDO apt-get update -q && $SUDO apt-get install -y -q --no-install-recommends $missing; } >"$log" 2>&1; then
    echo "done in $(($(date +%s) - start))s"
else
    rc=$?
    echo "FAILED (exit $rc); apt-get's output is in $log:"
    tail -n 20 "$log" | sed 's/^/  | /'
    exit "$rc"
fi
