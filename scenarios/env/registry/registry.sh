#!/bin/sh
# A schema registry on 127.0.0.1 for streamdrill's tests and CI: Apicurio
# Registry, which serves the Confluent-compatible API under
# /apis/ccompat/v7. Release 3.x keeps its schemas in an H2 database in DIR,
# so a restart finds them again with their ids (release 2.x keeps them in
# memory: a restart forgets them, as a registry that lost its storage
# would). Its runnable build comes from
# Maven Central (io.apicurio:apicurio-registry-app, classifier all) and is
# cached in .cache/registry/VERSION, or under SD_REGISTRY_CACHE. Release
# 3.3.3 needs Java 21 or newer; with none to be found (JAVA_HOME, java on
# PATH, /usr/lib/jvm) release 2.6.13.Final runs on Java 17. SD_REGISTRY_JAVA
# names the java to use instead of looking.
#
#   registry.sh fetch                       download and unpack it (once)
#   registry.sh start DIR [PORT] [OWNER_PID]
#                                           start it, wait until it answers, print
#                                           its URL (http://127.0.0.1:PORT/apis/ccompat/v7);
#                                           with OWNER_PID it is killed when that
#                                           process ends; DIR keeps its pid, log and URL
#   registry.sh stop DIR                    stop it (SIGTERM, then SIGKILL)
#   registry.sh restart DIR                 start it again on its port and its storage
#                                           (after a stop: a registry outage ends), for the
#                                           same owner
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
cache="${SD_REGISTRY_CACHE:-$root/.cache/registry}"
. "$here/../daemons.sh"

# java_major JAVA: the feature release of that java (17, 21, 25), 0 if it does not run
java_major() {
    v=$("$1" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
    echo "${v:-0}"
}

# pick: JAVA and VERSION, the newest release this machine's Java runs
pick() {
    JAVA=; best=0
    if [ -n "${SD_REGISTRY_JAVA:-}" ]; then
        JAVA=$SD_REGISTRY_JAVA; best=$(java_major "$JAVA")
        [ "$best" -gt 0 ] || { echo "registry.sh: SD_REGISTRY_JAVA=$JAVA does not run" >&2; exit 1; }
    fi
    for j in "${JAVA_HOME:-/nonexistent}/bin/java" "$(command -v java || echo /nonexistent)" /usr/lib/jvm/*/bin/java; do
        if [ -n "${SD_REGISTRY_JAVA:-}" ] || [ ! -x "$j" ]; then continue; fi
        m=$(java_major "$j")
        if [ "$m" -gt "$best" ]; then best=$m; JAVA=$j; fi
    done
    [ -n "$JAVA" ] || { echo "registry.sh: no java found (JAVA_HOME, PATH, /usr/lib/jvm); install openjdk-17-jre-headless" >&2; exit 1; }
    if [ "$best" -ge 21 ]; then VERSION=3.3.3; else VERSION=2.6.13.Final; fi
}

# app_jar DIR: the jar that starts the app unpacked in DIR (3.x: quarkus-run.jar; 2.x: a legacy *-runner.jar)
app_jar() {
    for j in "$1/quarkus-run.jar" "$1"/*-runner.jar; do
        if [ -f "$j" ]; then echo "$j"; return 0; fi
    done
    return 1
}

fetch() {
    pick
    app="$cache/$VERSION"
    [ -f "$app/.complete" ] && return 0
    command -v mvn >/dev/null || { echo "registry.sh: mvn is needed to fetch Apicurio Registry $VERSION" >&2; exit 1; }
    rm -rf "$app"; mkdir -p "$app"
    mvn -q dependency:copy -Dartifact="io.apicurio:apicurio-registry-app:$VERSION:tar.gz:all" \
        -DoutputDirectory="$app" >&2
    tar xzf "$app/apicurio-registry-app-$VERSION-all.tar.gz" -C "$app"
    rm -f "$app/apicurio-registry-app-$VERSION-all.tar.gz"
    app_jar "$app" >/dev/null || { echo "registry.sh: $app holds no quarkus-run.jar or *-runner.jar after unpacking" >&2; exit 1; }
    touch "$app/.complete"
}

start() {
    dir=$1; port=${2:-}; owner=${3:-}; keep=${4:-}
    fetch
    [ -n "$port" ] || port=$(free_port)
    mkdir -p "$dir"
    rm -f "$dir/registry.log" "$dir/url"
    [ -n "$keep" ] || rm -f "$dir"/registry-db.*
    mport=$(free_port)
    while [ "$mport" = "$port" ]; do mport=$(free_port); done
    echo "$port" > "$dir/port"
    echo "$owner" > "$dir/owner"
    # the app's own folder is its working directory: Quarkus finds lib/ and
    # quarkus/ beside the jar; its log goes to DIR. A session of its own,
    # without a run's token: started again by a drill's fault command, it
    # belongs to its owner, not to the run (the owner watch ends it)
    jar=$(app_jar "$cache/$VERSION")
    (cd "$cache/$VERSION" && exec env -u STREAMDRILL_RUN_TOKEN setsid "$JAVA" -Xms64m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
        -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
        -Dquarkus.management.host=127.0.0.1 -Dquarkus.management.port="$mport" \
        -Dapicurio.datasource.url="jdbc:h2:file:$dir/registry-db" \
        -jar "$jar") >"$dir/registry.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" > "$dir/registry.pid"
    watch_owner "$owner" "$pid"  # the registry must not outlive whoever started it
    url="http://127.0.0.1:$port/apis/ccompat/v7"
    i=0
    until python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/subjects", timeout=2)' "$url" 2>/dev/null; do
        i=$((i + 1))
        if ! alive "$pid" || [ $i -gt 600 ]; then
            echo "registry.sh: the registry did not start; the end of $dir/registry.log:" >&2
            tail -20 "$dir/registry.log" >&2 || true
            kill -9 "$pid" 2>/dev/null || true
            exit 1
        fi
        sleep 0.1
    done
    echo "$url" > "$dir/url"
    echo "$url"
}

# stop DIR: SIGTERM, and SIGKILL only if it has not ended 15 s later (its
# database is written out as it shuts down: a schema registered a moment
# before the stop is there after the restart)
stop() {
    f="$1/registry.pid"
    [ -f "$f" ] || return 0
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
    i=0
    while alive "$pid" && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
    fetch) fetch ;;
    start) [ $# -ge 1 ] || { echo "usage: registry.sh start DIR [PORT] [OWNER_PID]" >&2; exit 2; }; start "$@" ;;
    restart) [ $# -ge 1 ] || { echo "usage: registry.sh restart DIR" >&2; exit 2; }
        [ -f "$1/port" ] || { echo "registry.sh restart: $1 holds no registry started before" >&2; exit 2; }
        start "$1" "$(cat "$1/port")" "$(cat "$1/owner")" keep >/dev/null ;;
    stop) [ $# -ge 1 ] || { echo "usage: registry.sh stop DIR" >&2; exit 2; }; stop "$1" ;;
    *) echo "usage: registry.sh fetch | start DIR [PORT] [OWNER_PID] | stop DIR | restart DIR" >&2; exit 2 ;;
esac
