#!/bin/sh
# The Python stream processors' virtualenv (.cache/pyproc, or SD_PYPROC_VENV):
# the pinned packages of scenarios/env/python/requirements.txt from PyPI.
#
#   pyproc.sh fetch     make or update the virtualenv (once per requirements)
#   pyproc.sh python    fetch if needed, print its python
#
# Idempotent: reinstalled only when the requirements change.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
venv="${SD_PYPROC_VENV:-$root/.cache/pyproc}"
req="$here/requirements.txt"

fetch() {
    stamp="$venv/.requirements-$(cksum <"$req" | cut -d' ' -f1)"
    [ -f "$stamp" ] && return 0
    echo "pyproc.sh: installing the Python stream processors ($(grep -v '^#' "$req" | tr '\n' ' ')) into $venv" >&2
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q -r "$req" >&2
    rm -f "$venv"/.requirements-*
    touch "$stamp"
}

case "${1:-}" in
    fetch) fetch ;;
    python) fetch; echo "$venv/bin/python" ;;
    *) echo "usage: pyproc.sh fetch|python" >&2; exit 2 ;;
esac
