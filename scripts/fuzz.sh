#!/bin/sh
# scripts/fuzz.sh SECONDS JOBS TARGET...: each libFuzzer target of make fuzz
# for SECONDS on its own corpus and seeds (build-fuzz/), JOBS of them at
# once (one per core: each target's inputs are its own core's), then each
# target's figures in the order given. Any crash, sanitizer report, leak or
# hang fails it, with that target's log's end and its input left in
# build-fuzz/. A target may have leak suppressions of its own
# (tests/fuzz/TARGET.supp).
set -u
secs=$1
jobs=$2
shift 2
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
run() {
    t=$1
    mkdir -p "build-fuzz/corpus-${t#fuzz_}"
    # a target's own leak suppressions (tests/fuzz/TARGET.supp: a library's
    # leaks, matched by its functions, so with the full stacks they need)
    asan=detect_leaks=1
    lsan=
    if [ -f "tests/fuzz/$t.supp" ]; then
        asan="$asan:fast_unwind_on_malloc=0"
        lsan="suppressions=$(pwd)/tests/fuzz/$t.supp"
    fi
    ASAN_OPTIONS=$asan LSAN_OPTIONS=$lsan "build-fuzz/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="build-fuzz/$t-" "build-fuzz/corpus-${t#fuzz_}" "build-fuzz/seed-${t#fuzz_}" \
        2>"build-fuzz/$t.log"
    echo $? > "build-fuzz/$t.rc"
}
# the targets in rounds of JOBS, each round waited for (every child ends here)
set -- "$@" ""
while [ "$1" != "" ]; do
    round=""
    n=0
    while [ "$1" != "" ] && [ "$n" -lt "$jobs" ]; do
        echo "== $1 for ${secs}s"
        rm -f "build-fuzz/$1.rc"
        run "$1" &
        round="$round $1"
        n=$((n + 1))
        shift
    done
    wait
    for t in $round; do
        if [ "$(cat "build-fuzz/$t.rc" 2>/dev/null)" != 0 ]; then
            echo "== $t FAILED (its log: build-fuzz/$t.log)"
            tail -40 "build-fuzz/$t.log"
            exit 1
        fi
        echo "== $t"
        grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "build-fuzz/$t.log"
    done
done
