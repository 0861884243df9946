#!/bin/sh
# A schema registry on 127.0.0.1 for streamdrill's tests and CI: Apicurio
# Registry, which serves the Confluent-compatible API under
# /apis/ccompat/v7, kept in memory (a stop forgets every schema, as a
# registry that lost its storage would). Its runnable build comes from
# Maven Central (io.apicurio:apicurio-registry-app, classifier all) and is
# cached in .cache/registry/VERSION, or under SD_REGISTRY_CACHE. Release
# 3.3.3 needs Java 21 or newer; with none to be found (JAVA_HOME, java on
# PATH, /usr/lib/jvm) release 2.6.13.Final runs on Java 17.
#
#   registry.sh fetch                       download and unpack it (once)
#   registry.sh start DIR [PORT] [OWNER_PID]
#                                           start it, wait until it answers, print
#                                           its URL (http://127.0.0.1:PORT/apis/ccompat/v7);
#                                           with OWNER_PID it is killed when that
#                                           process ends; DIR keeps its pid, log and URL
#   registry.sh stop DIR                    stop it (SIGTERM, then SIGKILL)
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
    for j in "${JAVA_HOME:-/nonexistent}/bin/java" "$(command -v java || echo /nonexistent)" /usr/lib/jvm/*/bin/java; do
        [ -x "$j" ] || continue
        m=$(java_major "$j")
        if [ "$m" -gt "$best" ]; then best=$m; JAVA=$j; fi
    done
    [ -n "$JAVA" ] || { echo "registry.sh: no java found (JAVA_HOME, PATH, /usr/lib/jvm); install openjdk-17-jre-headless" >&2; exit 1; }
    if [ "$best" -ge 21 ]; then VERSION=3.3.3; else VERSION=2.6.13.Final; fi
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
    [ -f "$app/quarkus-run.jar" ] || { echo "registry.sh: $app holds no quarkus-run.jar after unpacking" >&2; exit 1; }
    touch "$app/.complete"
}

start() {
    dir=$1; port=${2:-}; owner=${3:-}
    fetch
    [ -n "$port" ] || port=$(free_port)
    mkdir -p "$dir"
    rm -f "$dir/registry.log" "$dir/url"
    # the app's own folder is its working directory: Quarkus finds lib/ and
    # quarkus/ beside the jar; its log goes to DIR
    (cd "$cache/$VERSION" && exec "$JAVA" -Xms64m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
        -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
        -jar quarkus-run.jar) >"$dir/registry.log" 2>&1 </dev/null &
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

stop() {
    cluster_stop "$1"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
    fetch) fetch ;;
    start) [ $# -ge 1 ] || { echo "usage: registry.sh start DIR [PORT] [OWNER_PID]" >&2; exit 2; }; start "$@" ;;
    stop) [ $# -ge 1 ] || { echo "usage: registry.sh stop DIR" >&2; exit 2; }; stop "$1" ;;
    *) echo "usage: registry.sh fetch | start DIR [PORT] [OWNER_PID] | stop DIR" >&2; exit 2 ;;
esac
