#!/bin/sh
# The Debian package on a machine that has only its runtime dependencies:
# a minimal Debian 12 root made with mmdebstrap (no compiler, no -dev
# package, no Python), the .deb installed into it with apt (which brings
# exactly what its Depends name), then from the installed files alone:
# --version, check of every example drill, init + run of a first drill and
# a run of the installed parcel drill on the embedded Kafka, both PASS; then
# the package removed and its files gone. Before all that, lintian
# -EvIL +pedantic: no tag above info, no hardening tag. Needs root
# (chroot, mount).
#
#   tests/deb/test_deb.sh build/streamdrill_0.1.0_amd64.deb OUTDIR
#
# The bare root comes from tests/deb/bare-root.sh; OUTDIR receives the runs' folders for the schema check.
set -eu
deb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
cache="$root/.cache/deb-test"
mkdir -p "$cache"
# lintian at its most pedantic: no tag above info, no hardening tag, md5sums present
tags=$(lintian -EvIL +pedantic "$deb" 2>&1 | grep -v 'running with root privileges' | grep -E '^[EWIPX]: ' || true)
bad=$(printf '%s\n' "$tags" | grep -E '^[EW]: |hardening-|no-md5sums' || true)
[ -z "$bad" ] || { printf 'test_deb: lintian -EvIL +pedantic:\n%s\n' "$bad" >&2; exit 1; }
chr=$(mktemp -u /tmp/streamdrill-deb-XXXXXX)
trap '"$root/tests/deb/bare-root.sh" destroy "$chr" 2>/dev/null || true' EXIT INT TERM
"$root/tests/deb/bare-root.sh" create "$chr"
cp "$deb" "$chr/tmp/streamdrill.deb"
inside() { chroot "$chr" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

# a root without the build dependencies
for p in gcc make librdkafka-dev libsqlite3-dev libjansson-dev libsimdjson-dev python3; do
    # shellcheck disable=SC2016 # dpkg-query's own format, not the shell's
    if inside dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        echo "test_deb: the bare root already has $p" >&2; exit 1
    fi
done
inside apt-get update -qq >"$cache/apt.log" 2>&1 || { tail -5 "$cache/apt.log" >&2; exit 1; }
inside env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /tmp/streamdrill.deb >>"$cache/apt.log" 2>&1 \
    || { tail -20 "$cache/apt.log" >&2; exit 1; }
for p in gcc librdkafka-dev libsqlite3-dev; do
    # shellcheck disable=SC2016 # dpkg-query's own format, not the shell's
    if inside dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        echo "test_deb: installing the package pulled in the build dependency $p" >&2; exit 1
    fi
done
inside streamdrill --version | head -1
inside sh -c 'streamdrill check /usr/share/streamdrill/scenarios/*.drill'
inside streamdrill init /tmp/first.drill
inside streamdrill check /tmp/first.drill
rc=0
inside streamdrill run /tmp/first.drill --out /tmp/out --quiet || rc=$?
[ "$rc" = 0 ] || { echo "test_deb: the init drill exited $rc from the installed package" >&2; exit 1; }
inside streamdrill run /usr/share/streamdrill/scenarios/parcel-restart.drill --out /tmp/out --quiet || rc=$?
[ "$rc" = 0 ] || { echo "test_deb: the installed parcel drill exited $rc" >&2; exit 1; }
inside sh -c 'grep -q "\"verdict\": \"pass\"" /tmp/out/first/summary.json && test -s /tmp/out/parcel-restart/report.html'
rm -rf "$out" && mkdir -p "$out" && cp -r "$chr/tmp/out/." "$out/"
# the references the README links to are beside it
inside sh -c 'test -s /usr/share/doc/streamdrill/README.md && test -s /usr/share/doc/streamdrill/docs/oracle.md'
# bash completion answers from the installed file
inside sh -c 'test -s /usr/share/bash-completion/completions/streamdrill'
inside dpkg -r streamdrill >>"$cache/apt.log" 2>&1
for f in /usr/bin/streamdrill /usr/libexec/streamdrill /usr/share/streamdrill /usr/share/man/man1/streamdrill.1.gz; do
    [ ! -e "$chr$f" ] || { echo "test_deb: $f is still there after dpkg -r" >&2; exit 1; }
done
echo "test_deb: lintian -EvIL +pedantic: $(printf '%s\n' "$tags" | grep -c . || true) tags, none above info nor of hardening; installed on a bare Debian 12 root with its Depends only, ran two drills (pass), removed cleanly"
