# shellcheck shell=sh
# daemons.sh - sourced by spark.sh and flink.sh: the processes of a cluster
# the tests start, each with its pid in DIR/NAME.pid and its log in
# DIR/NAME.log, all of them killed when the process named in DIR/owner ends.

# owner_watch DIR PID: kill PID when DIR/owner's process ends (no owner: never)
owner_watch() {
    owner=$(cat "$1/owner" 2>/dev/null || true)
    if [ -n "$owner" ]; then
        # shellcheck disable=SC2016 # the watcher's own $1 and $2, expanded by the sh it runs
        setsid sh -c 'while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done; kill -9 "$2" 2>/dev/null || true' \
            owner-watch "$owner" "$2" >/dev/null 2>&1 </dev/null &
    fi
}

# wait_log WHO DIR NAME TEXT [SECONDS]: until DIR/NAME.log says TEXT (60 s
# at most by default); when NAME's process ends first or the time runs
# out, WHO names the script in the error, with the end of the log (and of
# DIR/NAME.out when there is one)
wait_log() {
    who=$1; d=$2; name=$3; text=$4; ticks=$((${5:-60} * 10)); i=0
    while ! grep -q "$text" "$d/$name.log" 2>/dev/null; do
        i=$((i + 1))
        if ! kill -0 "$(cat "$d/$name.pid")" 2>/dev/null || [ $i -gt $ticks ]; then
            echo "$who: $name did not start; the end of $d/$name.log:" >&2
            tail -20 "$d/$name.log" >&2 2>/dev/null || true
            [ ! -f "$d/$name.out" ] || { echo "and of $d/$name.out:" >&2; tail -20 "$d/$name.out" >&2; }
            return 1
        fi
        sleep 0.1
    done
}

# cluster_stop DIR: every process of DIR (SIGTERM, then SIGKILL a second later)
cluster_stop() {
    for f in "$1"/*.pid; do
        [ -f "$f" ] || continue
        kill "$(cat "$f")" 2>/dev/null || true
    done
    sleep 1
    for f in "$1"/*.pid; do
        [ -f "$f" ] || continue
        kill -9 "$(cat "$f")" 2>/dev/null || true
        rm -f "$f"
    done
}
