#!/bin/sh
# The tests' virtualenv (.cache/testvenv): tests/requirements.txt and the
# Python package of python/ (the streamdrill API and its pytest plugin;
# `pip install ./python`, as a user installs it).
# Idempotent: reinstalled only when either changes. Prints the
# virtualenv's python.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.cache/testvenv"
req="$root/tests/requirements.txt"
sum=$(cat "$req" "$root/python/pyproject.toml" "$root"/python/pytest_streamdrill/*.py "$root"/python/streamdrill/*.py | cksum | cut -d' ' -f1)
stamp="$venv/.requirements-$sum"
if [ ! -f "$stamp" ]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q -r "$req" >&2
    "$venv/bin/pip" install -q --no-deps --force-reinstall "$root/python" >&2
    rm -rf "$root/python/build" "$root"/python/*.egg-info
    rm -f "$venv"/.requirements-*
    touch "$stamp"
fi
echo "$venv/bin/python"
