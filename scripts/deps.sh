#!/bin/sh
# Install the Debian packages streamdrill needs, if any is missing.
# Idempotent: installed packages are detected with dpkg-query and skipped.
set -eu

PKGS="gcc make pkg-config python3 librdkafka-dev libsqlite3-dev sqlite3 libjansson-dev libcriterion-dev"

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
