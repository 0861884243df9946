#!/bin/sh
# A throwaway PostgreSQL server on 127.0.0.1 for streamdrill's tests and CI:
# Debian's server binaries (scripts/deps.sh installs postgresql), a fresh
# cluster made by initdb in DIR, started with pg_ctl, trust authentication
# for the user streamdrill, listening on 127.0.0.1 only (and a socket in DIR).
# Run as root, the server runs as the postgres system user (initdb refuses
# root) in a folder of its own under /tmp (DIR may lie below folders that
# user cannot enter), named in DIR/base and removed by `stop`.
#
#   postgres.sh start DIR [PORT] [OWNER_PID]
#                      make the cluster, start it, wait until it answers and
#                      print a libpq connection string; with OWNER_PID the
#                      server is stopped when that process ends
#   postgres.sh stop DIR
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../daemons.sh"

bindir() {
    # shellcheck disable=SC2012 # the folders are version numbers (15, 16): ls | sort -V puts the newest first
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        [ -x "$d/initdb" ] && { echo "$d"; return 0; }
    done
    echo "postgres.sh: no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (Debian: apt-get install postgresql)" >&2
    exit 1
}

# run as the cluster's owner: ourselves, or postgres when we are root
as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
    dir=$1; port=${2:-}; owner=${3:-}
    bin=$(bindir)
    [ -n "$port" ] || port=$(free_port)
    [ -f "$dir/base" ] && stop "$dir"
    rm -rf "$dir"; mkdir -p "$dir"
    base=$dir
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || { echo "postgres.sh: running as root needs the postgres system user (Debian's postgresql package makes it)" >&2; exit 1; }
        base=$(mktemp -d /tmp/streamdrill-pg.XXXXXX)
        chown postgres "$base"
    fi
    echo "$base" > "$dir/base"
    as_owner "$bin/initdb" -D "$base/data" -U streamdrill --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
        || { echo "postgres.sh: initdb failed:" >&2; tail -20 "$dir/initdb.log" >&2; exit 1; }
    as_owner "$bin/pg_ctl" -D "$base/data" -l "$base/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $base -c fsync=off -c full_page_writes=off" start >"$dir/pg_ctl.log" 2>&1 \
        || { echo "postgres.sh: the server did not start:" >&2; tail -20 "$base/server.log" "$dir/pg_ctl.log" >&2; exit 1; }
    pid=$(head -1 "$base/data/postmaster.pid")
    echo "$pid" > "$dir/pid"
    watch_owner "$owner" "$pid" INT  # the server must not outlive whoever started it (SIGINT: a fast shutdown)
    echo "host=127.0.0.1 port=$port user=streamdrill dbname=postgres" > "$dir/dsn"
    cat "$dir/dsn"
}

stop() {
    dir=$1
    if [ -f "$dir/pid" ]; then
        pid=$(cat "$dir/pid")
        kill -INT "$pid" 2>/dev/null || true
        i=0
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$dir/pid"
    fi
    # the folder this script made under /tmp for a root run (nothing else)
    if [ -f "$dir/base" ]; then
        base=$(cat "$dir/base")
        case "$base" in /tmp/streamdrill-pg.*) cp "$base/server.log" "$dir/server.log" 2>/dev/null || true; rm -rf "$base" ;; esac
        rm -f "$dir/base"
    fi
}

case "${1:-}" in
    start) shift; start "$@" ;;
    stop) shift; stop "$@" ;;
    *) echo "usage: postgres.sh start DIR [PORT] [OWNER_PID] | stop DIR" >&2; exit 2 ;;
esac
