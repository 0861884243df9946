#!/bin/sh
# service.sh - a stand-in for a platform the harness cannot fork into (a
# Kubernetes deployment, a YARN application): it runs a command detached,
# in a session of its own, and answers for it by name.
#
#   service.sh start  DIR PROGRAM ARG...   start it detached; print its name
#   service.sh status DIR NAME             exit 0 while it runs
#   service.sh stop   DIR NAME             SIGTERM (a graceful stop)
#   service.sh kill   DIR NAME             SIGKILL
#   service.sh logs   DIR NAME             follow its output from the start
#
# DIR holds NAME.pid and NAME.log. The name is svc-PID.
set -eu
action=$1 dir=$2
shift 2
case $action in
start)
    mkdir -p "$dir"
    tmp=$dir/starting.$$.log
    # the log is opened here, before the fork: renamed below, it stays the
    # file the service writes
    exec 3> "$tmp"
    setsid "$@" >&3 2>&3 < /dev/null &
    pid=$!
    exec 3>&-
    mv "$tmp" "$dir/svc-$pid.log"
    echo "$pid" > "$dir/svc-$pid.pid"
    # detached before this returns: what is left in the caller's process
    # group when a command ends is killed (the harness's rule for commands)
    i=0
    while [ "$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f4)" != "$pid" ] && [ $i -lt 500 ]; do
        sleep 0.01
        i=$((i + 1))
    done
    echo "service.sh: started $1 as svc-$pid" >&2
    echo "svc-$pid"
    ;;
status)
    pid=$(cat "$dir/$1.pid")
    # a zombie (killed, not yet reaped) no longer runs
    [ -r "/proc/$pid/stat" ] || exit 1
    state=$(sed 's/^.*) //' "/proc/$pid/stat" | cut -c1)
    [ "$state" != Z ] && [ "$state" != X ]
    ;;
stop) kill -TERM "$(cat "$dir/$1.pid")" 2>/dev/null || true ;;
kill) kill -KILL "$(cat "$dir/$1.pid")" 2>/dev/null || true ;;
logs) exec tail -n +1 -F "$dir/$1.log" ;;
*) echo "service.sh: unknown action $action" >&2; exit 2 ;;
esac
