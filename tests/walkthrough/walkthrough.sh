#!/bin/sh
# A new user's first hour, replayed on a bare Debian 12 root (no compiler,
# no Python): the package installed with apt, then in an empty repository
# `streamdrill init` around a small at-least-once consumer of one's own
# (tests/walkthrough/consumer.py: confluent-kafka to SQLite), `check`, a
# first run that must FAIL naming the duplicates the kill caused, the
# consumer made idempotent, and a run that must PASS. Each step is
# asserted; the wall time of each is printed. Needs root (chroot, mount).
#
#   tests/walkthrough/walkthrough.sh build/streamdrill_0.1.0_amd64.deb OUTDIR
set -eu
deb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
chr=$(mktemp -u /tmp/streamdrill-walk-XXXXXX)
trap '"$root/tests/deb/bare-root.sh" destroy "$chr" 2>/dev/null || true' EXIT INT TERM
t0=$(date +%s)
step() { echo "walkthrough: $(($(date +%s) - t0))s: $*"; }
fail() { echo "walkthrough: FAILED at $(($(date +%s) - t0))s: $*" >&2; exit 1; }
inside() { chroot "$chr" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
in_repo() { inside sh -c "cd /repo && $1"; }

"$root/tests/deb/bare-root.sh" create "$chr"
cp "$deb" "$chr/tmp/streamdrill.deb"
mkdir -p "$out"
inside apt-get update -qq >"$out/apt.log" 2>&1 || { tail -5 "$out/apt.log" >&2; fail "apt-get update"; }
# the package, and what the user's consumer needs
inside env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /tmp/streamdrill.deb \
    python3 python3-confluent-kafka >>"$out/apt.log" 2>&1 || { tail -20 "$out/apt.log" >&2; fail "apt-get install"; }
step "installed the package and python3-confluent-kafka"

mkdir -p "$chr/repo"
cp "$root/tests/walkthrough/consumer.py" "$chr/repo/consumer.py"
# 1. a first drill around the consumer, in a folder that does not exist yet
in_repo "streamdrill init drills/first.drill --pipeline 'python3 {here}/../consumer.py --brokers {brokers} --topic {topic} --group {group} --db {run}/sink.db' --sink sqlite" \
    >"$out/init.log" 2>&1 || fail "init: $(cat "$out/init.log")"
grep -q '^sink       sqlite db={run}/sink.db ' "$chr/repo/drills/first.drill" || fail "init's sink does not follow --db {run}/sink.db"
step "init wrote drills/first.drill, its sink on the consumer's --db"
# a consumer with no watermark keeps late events: the contract says so,
# and the 2 late ones count among the ids expected; the sink's second
# column names the run of the job that wrote each row
sed -i -e 's/ late=drop / late=accept /' -e 's/^expect     unique=120 /expect     unique=122 /' \
    -e 's/query="SELECT event_id FROM events"/query="SELECT event_id, writer FROM events"/' \
    "$chr/repo/drills/first.drill"
in_repo "streamdrill check drills/first.drill" >"$out/check.log" 2>&1 || fail "check: $(cat "$out/check.log")"
# a typo in --set is refused
rc=0
in_repo "streamdrill check drills/first.drill --set moed=x" >"$out/typo.log" 2>&1 || rc=$?
if [ "$rc" != 2 ] || ! grep -q "has no variable moed" "$out/typo.log"; then fail "--set moed=x: exit $rc: $(cat "$out/typo.log")"; fi
step "check passed; a misspelt --set refused"

# 2. the at-least-once consumer: a FAIL naming the duplicates
rc=0
in_repo "streamdrill run drills/first.drill --out out/alo --json" >"$out/alo.json" 2>"$out/alo.log" || rc=$?
[ "$rc" = 1 ] || fail "the at-least-once consumer: exit $rc, expected 1 (fail): $(tail -5 "$out/alo.log")"
python3 - "$out/alo.json" <<'PY' || fail "the at-least-once run's summary"
import json, sys
s = json.loads(open(sys.argv[1]).read())
assert s["verdict"] == "fail", s["verdict"]
assert s["counts"]["duplicated"] > 0, s["counts"]
assert any(c["name"] == "duplicated" and not c["pass"] for c in s["checks"]), s["checks"]
kills = [f for f in s["faults"] if f["kind"] == "kill"]
assert kills and kills[0]["landed_mid_batch"], kills
dups = s["anomalies"]["target"]["duplicated"]["sample"]
# the kill's copies are named apart from the drill's own replays: sent once, written by two incarnations
rerun = [d for d in dups if d.get("times_sent", 1) == 1]
assert rerun and all("incarnation 1" in d.get("writers", "") and "incarnation 2" in d.get("writers", "") for d in rerun), dups[:3]
PY
step "the at-least-once consumer FAILed: duplicates named with the incarnations that wrote them"

# 3. the fix: the consumer made idempotent, the same drill passes
sed -i 's/--db {run}\/sink.db/--db {run}\/sink.db --idempotent/' "$chr/repo/drills/first.drill"
rc=0
in_repo "streamdrill run drills/first.drill --out out/fixed --json" >"$out/fixed.json" 2>"$out/fixed.log" || rc=$?
[ "$rc" = 0 ] || fail "the idempotent consumer: exit $rc, expected 0 (pass): $(tail -5 "$out/fixed.log")"
python3 - "$out/fixed.json" <<'PY' || fail "the idempotent run's summary"
import json, sys
s = json.loads(open(sys.argv[1]).read())
assert s["verdict"] == "pass" and s["counts"]["duplicated"] == 0 and s["counts"]["lost"] == 0, s["counts"]
PY
test -s "$chr/repo/out/fixed/first/report.html" || fail "no report.html"
cp -r "$chr/repo/out/." "$out/"
step "the idempotent consumer PASSed"
echo "walkthrough: from an installed package to a FAIL and its fix's PASS in $(($(date +%s) - t0))s"
