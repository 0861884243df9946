#!/bin/sh
# One line for a phase of make demo / make test whose own output would be
# noise: `scripts/phase.sh WHAT LOG COMMAND...` runs COMMAND with its output
# in LOG and prints "streamdrill: WHAT ... done in Ns"; on failure the
# log's last lines and its path, and COMMAND's exit code.
set -u
what=$1
log=$2
shift 2
mkdir -p "$(dirname "$log")"
start=$(date +%s)
printf 'streamdrill: %s ... ' "$what"
if "$@" >"$log" 2>&1; then
    echo "done in $(($(date +%s) - start))s"
else
    rc=$?
    echo "FAILED (exit $rc) after $(($(date +%s) - start))s; the whole output is in $log:"
    tail -n 25 "$log" | sed 's/^/  | /'
    exit "$rc"
fi
