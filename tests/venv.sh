#!/bin/sh
# The report tests' virtualenv (.cache/testvenv) with tests/requirements.txt.
# Idempotent: reinstalled only when requirements.txt changes. Prints the
# virtualenv's python.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.cache/testvenv"
req="$root/tests/requirements.txt"
stamp="$venv/.requirements-$(cksum < "$req" | cut -d' ' -f1)"
if [ ! -f "$stamp" ]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q -r "$req" >&2
    rm -f "$venv"/.requirements-*
    touch "$stamp"
fi
echo "$venv/bin/python"
