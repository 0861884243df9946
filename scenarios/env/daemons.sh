# shellcheck shell=sh
# daemons.sh - sourced by kafka.sh, postgres.sh, spark.sh and flink.sh: the
# processes of a server or cluster the tests start, each with its pid in
# DIR/NAME.pid and its log in DIR/NAME.log, all of them killed when their
# owner (the process that asked for them) ends.

# free_port: a TCP port free on 127.0.0.1 now
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# alive PID: PID runs (a zombie, ended but not yet reaped, does not); its
# text is given to the owner watcher's shell too, so it is written once
# shellcheck disable=SC2016 # the function's text: expanded where it is defined and run
ALIVE_FN='alive() { st=$(sed "s/.*) //" "/proc/$1/stat" 2>/dev/null | cut -c1); [ -n "$st" ] && [ "$st" != Z ]; }'
eval "$ALIVE_FN"

# watch_owner OWNER PID [SIGNAL]: send PID SIGNAL (KILL unless told) once
# OWNER's process ends (no OWNER: never); the watcher is a session of its
# own, so a signal to the caller's process group leaves it watching
watch_owner() {
    [ -n "$1" ] || return 0
    # shellcheck disable=SC2016 # the watcher's own $1, $2 and $3, expanded by the sh it runs
    setsid sh -c "$ALIVE_FN"'
        while alive "$1" && alive "$2"; do sleep 1; done; kill "-$3" "$2" 2>/dev/null || true' \
        owner-watch "$1" "$2" "${3:-KILL}" >/dev/null 2>&1 </dev/null &
}

# owner_watch DIR PID: kill PID when DIR/owner's process ends (no owner: never)
owner_watch() {
    watch_owner "$(cat "$1/owner" 2>/dev/null || true)" "$2"
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
