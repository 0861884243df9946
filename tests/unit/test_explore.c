/* test_explore.c - the schedule generator (well-formed, reproducible) and
 * the shrinker on fake runners whose failure condition is known, a flaky
 * one included. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "shrink.h"
#include "xsched.h"

static const char *const header =
    "source kafka topic=t partitions=2\n"
    "events parcel-scans seed=7\n"
    "contract id=event_id time=event_time watermark=10m\n"
    "sink sqlite db={run}/t.db query=\"SELECT event_id FROM t\"\n"
    "pipeline /bin/true\n";

static char *render(const sd_xsched_t *s) {
    sd_buf_t b;
    sd_buf_init(&b);
    sd_xsched_render(s, &b);
    return sd_buf_steal(&b);
}

/* The drill of header + a schedule parses; returns the scenario. */
static sd_scenario_t *parse(const char *hdr, const sd_xsched_t *s) {
    char *steps = render(s);
    char *text = sd_util_fmt("%s%s", hdr, steps);
    sd_scenario_t *sc = NULL;
    char err[2048] = "";
    sd_err_t e = sd_scenario_parse_text("gen.drill", text, NULL, &sc, err, sizeof(err));
    cr_assert_eq(e, SD_OK, "a generated schedule must parse; got: %s\n%s", err, steps);
    free(text);
    free(steps);
    return sc;
}

Test(explore, generated_schedules_are_well_formed) {
    const char *faketime_header =
        "source kafka topic=t\nevents parcel-scans start=now\nsink jsonl path={run}/o.jsonl\nclock faketime lib=/x.so\n"
        "progress sink\npipeline /bin/true\n";
    for (int variant = 0; variant < 2; variant++) {
        sd_xcaps_t caps = variant ? (sd_xcaps_t){.batches = 0, .network = 0, .faketime = 1, .future = 1, .watermark_ms = 600000}
                                  : (sd_xcaps_t){.batches = 1, .network = 1, .faketime = 0, .future = 0, .watermark_ms = 600000,
                                                 .brokers = 1, .partitions = 2};
        int kinds[SD_XA__COUNT] = {0};
        for (int run = 1; run <= 300; run++) {
            sd_xsched_t s;
            sd_xsched_generate(&caps, 99, run, &s);
            cr_assert_geq(s.n, 3, "run %d: a first chunk, a settle and at least one more action; got %d", run, s.n);
            cr_assert_eq(s.a[0].kind, SD_XA_PRODUCE, "run %d: the first action produces", run);
            sd_scenario_t *sc = parse(variant ? faketime_header : header, &s);
            /* the steps: start first, await quiescent last, every kill and stop followed by a restart */
            cr_assert_eq(sc->steps[0].kind, SD_STEP_START);
            cr_assert_eq(sc->steps[sc->nsteps - 1].kind, SD_STEP_AWAIT_QUIESCENT, "run %d: judged after an await", run);
            for (int i = 0; i < sc->nsteps; i++) {
                const sd_step_t *st = &sc->steps[i];
                if (st->kind == SD_STEP_KILL || st->kind == SD_STEP_STOP)
                    cr_assert(i + 1 < sc->nsteps && sc->steps[i + 1].kind == SD_STEP_RESTART, "run %d: `%s` without a restart", run, st->text);
                if (st->kind == SD_STEP_PAUSE) cr_assert_gt(st->proc.delay_ms, 0, "run %d: `%s` never resumes", run, st->text);
                if (st->kind == SD_STEP_NETWORK && st->net.op != 4) cr_assert_gt(st->net.for_ms, 0, "run %d: `%s` never heals", run, st->text);
                if (st->kind == SD_STEP_NETWORK) cr_assert(caps.network, "run %d: a network fault the broker cannot take", run);
                if (st->kind == SD_STEP_CLOCK) cr_assert(caps.faketime, "run %d: a clock step without faketime", run);
                if (st->kind == SD_STEP_KILL || st->kind == SD_STEP_PAUSE)
                    cr_assert(caps.batches || !st->proc.mid_batch, "run %d: `%s` needs batches", run, st->text);
                if (st->kind == SD_STEP_INJECT) cr_assert(caps.future || !st->send.inject[SD_INJ_FUTURE], "run %d: a future event", run);
                if (st->kind == SD_STEP_BROKER && st->proc.bop != SD_BROKER_START) {
                    cr_assert(caps.brokers, "run %d: a broker fault without brokers to break", run);
                    cr_assert(st->proc.leader_of >= 0 && st->proc.leader_of < caps.partitions, "run %d: `%s`", run, st->text);
                    cr_assert(i + 1 < sc->nsteps && sc->steps[i + 1].kind == SD_STEP_BROKER && sc->steps[i + 1].proc.bop == SD_BROKER_START,
                              "run %d: `%s` without a broker start", run, st->text);
                }
            }
            for (int i = 0; i < s.n; i++) kinds[s.a[i].kind]++;
            sd_scenario_free(sc);
            sd_xsched_free(&s);
        }
        /* over 300 runs every kind the caps allow shows up */
        for (int k = 0; k < SD_XA__COUNT; k++) {
            int allowed = !(k == SD_XA_NETWORK && !caps.network) && !(k == SD_XA_CLOCK && !caps.faketime) && !(k == SD_XA_BROKER && !caps.brokers);
            if (allowed) cr_assert_gt(kinds[k], 0, "caps %d: action kind %d never drawn in 300 runs", variant, k);
            else cr_assert_eq(kinds[k], 0, "caps %d: action kind %d drawn though not allowed", variant, k);
        }
    }
}

Test(explore, a_fault_aimed_at_a_batch_follows_events_not_yet_read) {
    /* a mid-batch or at-boundary fault after a settle, with nothing sent
     * since, waits its whole timeout for a batch that never begins */
    sd_xcaps_t caps = {.batches = 1, .network = 1, .watermark_ms = 600000, .brokers = 1, .partitions = 2};
    int aimed = 0, now_alone = 0;
    for (int run = 1; run <= 500; run++) {
        sd_xsched_t s;
        sd_xsched_generate(&caps, 7, run, &s);
        int flowing = 0;
        for (int i = 0; i < s.n; i++) {
            const sd_xa_t *a = &s.a[i];
            if (a->kind == SD_XA_PRODUCE || a->kind == SD_XA_REPLAY || a->kind == SD_XA_INJECT) flowing = 1;
            if (a->kind == SD_XA_SETTLE) flowing = 0;
            if (!sd_xsched_is_fault(a)) continue;
            if (a->where != SD_XW_NOW) {
                cr_assert(flowing, "run %d, action %d: a fault aimed at a batch with nothing sent since the last settle", run, i + 1);
                aimed++;
            } else if (!flowing) {
                now_alone++;
            }
        }
        sd_xsched_free(&s);
    }
    cr_assert_gt(aimed, 100, "faults aimed at a batch are still drawn; %d", aimed);
    cr_assert_gt(now_alone, 10, "faults on their own still drawn; %d", now_alone);
}

/* A long pause (5-10 s, to cost a consumer-group member its membership),
 * and a restart delay with no background produce that can still be
 * sending, only for a pipeline followed through its group; for any other
 * they would only wait. The pipeline's kind changes nothing else in a
 * schedule. */
Test(explore, long_pauses_and_idle_restart_delays_only_for_a_consumer_group_member) {
    sd_xcaps_t assigned = {.batches = 1, .network = 1, .watermark_ms = 600000, .partitions = 2}, member = assigned;
    member.member = 1;
    int long_member = 0, pauses = 0, delays_kept = 0, delays_dropped = 0;
    for (int run = 1; run <= 500; run++) {
        sd_xsched_t a, m;
        sd_xsched_generate(&assigned, 7, run, &a);
        sd_xsched_generate(&member, 7, run, &m);
        cr_assert_eq(a.n, m.n, "run %d: the same actions either way", run);
        int background = 0;
        for (int i = 0; i < a.n; i++) {
            const sd_xa_t *x = &a.a[i], *y = &m.a[i];
            cr_assert_eq(x->kind, y->kind, "run %d, action %d: the same kind either way", run, i);
            if (x->kind == SD_XA_PRODUCE) background = x->rate != 0;
            if (x->kind == SD_XA_SETTLE) background = 0;
            if (x->kind == SD_XA_PAUSE) {
                pauses++;
                cr_assert_leq(x->ms, 1500, "run %d: a pause of %lld ms for a pipeline that is no group member", run, (long long)x->ms);
                long_member += y->ms >= 5000;
            } else if (x->kind == SD_XA_KILL || x->kind == SD_XA_STOP || x->kind == SD_XA_RESTART) {
                if (!background) cr_assert_eq(x->ms, 0, "run %d, action %d: a restart delay with nothing being sent", run, i);
                else cr_assert_eq(x->ms, y->ms, "run %d, action %d: a delay while a background produce sends stays", run, i);
                delays_kept += background && x->ms;
                delays_dropped += !background && y->ms;
            } else {
                cr_assert_eq(x->ms, y->ms, "run %d, action %d", run, i);
            }
        }
        sd_xsched_free(&a);
        sd_xsched_free(&m);
    }
    cr_assert_gt(pauses, 50, "500 runs draw pauses");
    cr_assert_gt(long_member, pauses / 5, "a group member's pauses are often long (%d of %d)", long_member, pauses);
    cr_assert_gt(delays_kept, 20, "delays while a background produce sends are kept (%d)", delays_kept);
    cr_assert_gt(delays_dropped, 20, "a group member keeps its delays with nothing being sent (%d)", delays_dropped);
}

/* A Fetch error the protocol has a client retry comes up to five in a
 * row; one it does not (an authorization failure: librdkafka backs off
 * 5 s after each) comes once. */
Test(explore, a_non_retriable_error_once_retriable_ones_up_to_five) {
    sd_xcaps_t caps = {.batches = 1, .network = 1, .watermark_ms = 600000, .partitions = 2};
    int auth = 0, retriable = 0, repeated = 0;
    for (int run = 1; run <= 500; run++) {
        sd_xsched_t a;
        sd_xsched_generate(&caps, 7, run, &a);
        char *t = render(&a);
        for (const char *p = t; (p = strstr(p, "network errors=Fetch:")); p++) {
            const char *c = strstr(p, " count=");
            cr_assert_not_null(c, "run %d: an error fault without its count", run);
            long n = strtol(c + 7, NULL, 10);
            if (!strncmp(p + 21, "TOPIC_AUTHORIZATION_FAILED ", 27)) {
                auth++;
                cr_assert_eq(n, 1, "run %d: %ld authorization failures in a row", run, n);
            } else {
                retriable++;
                cr_assert(n >= 1 && n <= 5, "run %d: %ld retriable errors", run, n);
                repeated += n > 1;
            }
        }
        free(t);
        sd_xsched_free(&a);
    }
    cr_assert_gt(auth, 10, "500 runs draw authorization failures (%d)", auth);
    cr_assert_gt(repeated, retriable / 2, "retriable errors come several in a row (%d of %d)", repeated, retriable);
}

Test(explore, the_same_seed_and_run_give_the_same_schedule) {
    sd_xcaps_t caps = {.batches = 1, .network = 1, .watermark_ms = 600000};
    int distinct = 0;
    char *prev = NULL;
    for (int run = 1; run <= 100; run++) {
        sd_xsched_t a, b;
        sd_xsched_generate(&caps, 12345, run, &a);
        sd_xsched_generate(&caps, 12345, run, &b);
        char *ta = render(&a), *tb = render(&b);
        cr_assert_str_eq(ta, tb, "run %d generated twice differs", run);
        if (!prev || strcmp(prev, ta)) distinct++;
        free(prev);
        prev = ta;
        free(tb);
        sd_xsched_free(&a);
        sd_xsched_free(&b);
    }
    free(prev);
    cr_assert_geq(distinct, 95, "consecutive runs should differ; %d of 100 did", distinct);
    sd_xsched_t a, b;
    sd_xsched_generate(&caps, 1, 1, &a);
    sd_xsched_generate(&caps, 2, 1, &b);
    char *ta = render(&a), *tb = render(&b);
    cr_assert_str_neq(ta, tb, "another seed, the same schedule");
    free(ta);
    free(tb);
    sd_xsched_free(&a);
    sd_xsched_free(&b);
}

Test(explore, simplifications_are_milder) {
    sd_xa_t kill = {.kind = SD_XA_KILL, .where = SD_XW_MID_BATCH, .sig = SD_XS_KILL, .ms = 500};
    sd_xa_t out[8];
    const char *label[8];
    int n = sd_xsched_simpler(&kill, out, label, 8);
    cr_assert_eq(n, 4, "boundary, TERM, no delay, must land; got %d", n);
    cr_assert_eq(out[0].where, SD_XW_AT_BOUNDARY);
    cr_assert_eq(out[1].sig, SD_XS_TERM);
    cr_assert_eq(out[2].ms, 0);
    cr_assert_eq(out[3].strict, 1);
    sd_xa_t bad = {.kind = SD_XA_INJECT, .op = SD_XI_MALFORMED, .variant = SD_XM_ALL, .n = 9};
    n = sd_xsched_simpler(&bad, out, label, 8);
    cr_assert_eq(n, 8, "a full buffer is filled, never overrun; got %d", n);
    sd_xa_t many[16];
    const char *many_label[16];
    n = sd_xsched_simpler(&bad, many, many_label, 16);
    cr_assert_eq(n, 11, "half, the default five, each of the nine kinds alone; got %d", n);
    cr_assert_eq(many[1].variant, 0);
    for (int k = 0; k < 9; k++) cr_assert_eq(many[2 + k].variant, k + 1);
    sd_xa_t settled = {.kind = SD_XA_SETTLE};
    cr_assert_eq(sd_xsched_simpler(&settled, out, label, 8), 0, "a settle can only be removed");
    sd_xa_t produce = {.kind = SD_XA_PRODUCE, .n = 1};
    cr_assert_eq(sd_xsched_simpler(&produce, out, label, 8), 0, "one event at once is as small as a produce gets");
}

/* ---- the shrinker on fake runners ---- */

/* Fails when a mid-batch kill is followed (anywhere later) by a replay of
 * at least 5 events; flaky: then shows it only with probability 1/flake. */
typedef struct {
    int flake;
    uint64_t rng;
    int calls, runs, max_tries_seen;
    int kept_without_condition;
    char dropped[64][256]; /* the shapes of the removals dropped so far */
    int ndropped;
} fake_t;

static int condition(const sd_xsched_t *s) {
    for (int i = 0; i < s->n; i++)
        if (s->a[i].kind == SD_XA_KILL && s->a[i].where == SD_XW_MID_BATCH)
            for (int k = i + 1; k < s->n; k++)
                if (s->a[k].kind == SD_XA_REPLAY && s->a[k].n >= 5) return 1;
    return 0;
}

static int fake_attempt(void *ctx, const sd_xsched_t *cand, int tries, int all, int *runs) {
    fake_t *f = ctx;
    f->calls++;
    if (tries > f->max_tries_seen) f->max_tries_seen = tries;
    int c = condition(cand);
    for (*runs = 0; *runs < tries;) {
        (*runs)++;
        f->runs++;
        f->rng = sd_util_mix64(f->rng);
        int shown = c && (f->flake <= 1 || f->rng % (uint64_t)f->flake == 0);
        if (shown && !all) return 1;
        if (!shown && all) return 0;
    }
    return all;
}

/* a candidate's shape: each action's kind and choices, not its sizes */
static void kinds_of(const sd_xsched_t *s, char *out, size_t n) {
    size_t k = 0;
    out[0] = 0;
    for (int i = 0; i < s->n && k + 12 < n; i++) {
        const sd_xa_t *a = &s->a[i];
        k += (size_t)snprintf(out + k, n - k, "%d%d%d%d%d%d%d%d ", a->kind, a->where, a->sig, a->op, a->variant, a->strict, a->rate != 0,
                              a->ms != 0);
    }
}

static void fake_log(void *ctx, const sd_xsched_t *cand, const char *move, int kept, int runs) {
    fake_t *f = ctx;
    (void)runs;
    if (kept && !condition(cand)) f->kept_without_condition++;
    /* a removal dropped once is not tried again on a schedule that differs
     * only in sizes, but by the last word at the final sizes */
    if (!strncmp(move, "remove", 6) && !strstr(move, "again, at the final sizes")) {
        char k[256];
        kinds_of(cand, k, sizeof(k));
        for (int i = 0; i < f->ndropped; i++) cr_assert_str_neq(f->dropped[i], k, "removal to [%s] tried again after it was dropped", k);
        if (!kept && f->ndropped < 64) snprintf(f->dropped[f->ndropped++], sizeof(f->dropped[0]), "%s", k);
    }
}

static void noisy_failing(sd_xsched_t *s) {
    sd_xa_t acts[] = {
        {.kind = SD_XA_PRODUCE, .n = 120},
        {.kind = SD_XA_SETTLE},
        {.kind = SD_XA_INJECT, .op = SD_INJ_LATE, .n = 4},
        {.kind = SD_XA_PRODUCE, .n = 80, .rate = 200},
        {.kind = SD_XA_KILL, .where = SD_XW_MID_BATCH, .sig = SD_XS_KILL, .ms = 700},
        {.kind = SD_XA_PAUSE, .where = SD_XW_NOW, .ms = 6000},
        {.kind = SD_XA_PRODUCE, .n = 30},
        {.kind = SD_XA_PRODUCE, .n = 40},
        {.kind = SD_XA_REPLAY, .n = 17},
        {.kind = SD_XA_NETWORK, .op = 2, .ms = 2000},
        {.kind = SD_XA_RESTART, .ms = 300},
    };
    s->n = (int)(sizeof(acts) / sizeof(acts[0]));
    s->a = malloc(sizeof(acts));
    memcpy(s->a, acts, sizeof(acts));
}

Test(explore, shrinks_a_deterministic_failure_to_its_three_actions) {
    sd_xsched_t s, min;
    noisy_failing(&s);
    cr_assert(condition(&s));
    fake_t f = {.flake = 1, .rng = 1};
    sd_shrink_cfg_t cfg = {.attempt = fake_attempt, .log = fake_log, .ctx = &f, .tries = 3};
    sd_shrink_stats_t st;
    sd_shrink(&cfg, &s, &min, &st);
    /* the mid-batch kill needs events before it (without them it would
     * land now, sd_xsched_aim): one event, the kill, the replay */
    cr_assert_eq(min.n, 3, "events, the kill and the replay are what fails; got %d actions", min.n);
    cr_assert_eq(min.a[0].kind, SD_XA_PRODUCE);
    cr_assert_eq(min.a[0].n, 1, "the events halved down to one; got %lld", (long long)min.a[0].n);
    cr_assert_eq(min.a[0].rate, 0, "sent at once");
    cr_assert_eq(min.a[1].kind, SD_XA_KILL);
    cr_assert_eq(min.a[1].where, SD_XW_MID_BATCH, "a boundary kill does not fail: mid-batch must stay");
    cr_assert_eq(min.a[1].sig, SD_XS_TERM, "KILL made milder to TERM (the condition does not need KILL)");
    cr_assert_eq(min.a[1].ms, 0, "the restart delay removed");
    cr_assert_eq(min.a[1].strict, 1, "the kill must land in the minimal drill");
    cr_assert_eq(min.a[2].kind, SD_XA_REPLAY);
    cr_assert(min.a[2].n >= 5 && min.a[2].n < 10, "replay halved while it fails: 17 -> 8; got %lld", (long long)min.a[2].n);
    cr_assert_eq(f.kept_without_condition, 0);
    cr_assert_eq(st.runs, f.runs, "the stats count every run: %d against %d", st.runs, f.runs);
    cr_assert_eq(st.candidates, f.calls);
    cr_assert(!st.stopped);
    sd_xsched_free(&s);
    sd_xsched_free(&min);
}

Test(explore, a_flaky_failure_is_never_shrunk_into_a_passing_drill) {
    for (uint64_t seed = 1; seed <= 20; seed++) {
        sd_xsched_t s, min;
        noisy_failing(&s);
        fake_t f = {.flake = 2, .rng = seed};
        sd_shrink_cfg_t cfg = {.attempt = fake_attempt, .log = fake_log, .ctx = &f, .tries = 3};
        sd_shrink_stats_t st;
        sd_shrink(&cfg, &s, &min, &st);
        cr_assert(condition(&min), "seed %llu: the result must still fail", (unsigned long long)seed);
        cr_assert_eq(f.kept_without_condition, 0, "seed %llu: a candidate kept without the failure", (unsigned long long)seed);
        cr_assert_eq(f.max_tries_seen, 3, "each candidate gets the 3 tries");
        cr_assert_leq(min.n, s.n);
        cr_assert_leq(st.runs, 3 * st.candidates, "at most 3 runs per candidate");
        sd_xsched_free(&s);
        sd_xsched_free(&min);
    }
    /* one try per candidate on a 1-in-2 failure drops more: a 3-try shrink
     * reaches the three actions on most seeds */
    int two = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        sd_xsched_t s, min;
        noisy_failing(&s);
        fake_t f = {.flake = 2, .rng = seed};
        sd_shrink_cfg_t cfg = {.attempt = fake_attempt, .ctx = &f, .tries = 3};
        sd_shrink_stats_t st;
        sd_shrink(&cfg, &s, &min, &st);
        two += min.n == 3;
        sd_xsched_free(&s);
        sd_xsched_free(&min);
    }
    cr_assert_geq(two, 14, "3 tries of a 1-in-2 failure should reach 3 actions on most seeds; %d of 20 did", two);
}

Test(explore, the_candidate_limit_stops_the_shrink) {
    sd_xsched_t s, min;
    noisy_failing(&s);
    fake_t f = {.flake = 1, .rng = 1};
    sd_shrink_cfg_t cfg = {.attempt = fake_attempt, .ctx = &f, .tries = 1, .max_candidates = 3};
    sd_shrink_stats_t st;
    sd_shrink(&cfg, &s, &min, &st);
    cr_assert_eq(st.candidates, 3);
    cr_assert(st.stopped);
    cr_assert(condition(&min), "what was kept so far still fails");
    sd_xsched_free(&s);
    sd_xsched_free(&min);
}

/* A failure that depends on sizes: a mid-batch kill fails the drill when a
 * pause comes with it, or without one once at most 8 events went before it.
 * The pause's removal is dropped while 120 events go first; the events then
 * shrink to one, and the removal, of the same shape, must be tried again:
 * the pause is not needed at the final sizes. */
static int sized_condition(const sd_xsched_t *s) {
    int64_t before = 0;
    int pause = 0, kill = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->a[i].kind == SD_XA_PRODUCE && !kill) before += s->a[i].n;
        if (s->a[i].kind == SD_XA_KILL && s->a[i].where == SD_XW_MID_BATCH) kill = 1;
        if (s->a[i].kind == SD_XA_PAUSE) pause = 1;
    }
    return kill && before > 0 && (pause || before <= 8);
}

static int sized_attempt(void *ctx, const sd_xsched_t *cand, int tries, int all, int *runs) {
    (void)all;
    (void)tries;
    int *calls = ctx;
    (*calls)++;
    *runs = 1;
    return sized_condition(cand);
}

Test(explore, a_removal_dropped_at_larger_sizes_is_tried_again_at_the_final_ones) {
    sd_xa_t acts[] = {
        {.kind = SD_XA_PRODUCE, .n = 120},
        {.kind = SD_XA_KILL, .where = SD_XW_MID_BATCH, .sig = SD_XS_TERM, .strict = 1},
        {.kind = SD_XA_PAUSE, .where = SD_XW_NOW, .ms = 6000},
    };
    sd_xsched_t s = {.n = 3, .a = malloc(sizeof(acts))}, min;
    memcpy(s.a, acts, sizeof(acts));
    cr_assert(sized_condition(&s));
    int calls = 0;
    sd_shrink_cfg_t cfg = {.attempt = sized_attempt, .ctx = &calls, .tries = 1};
    sd_shrink_stats_t st;
    sd_shrink(&cfg, &s, &min, &st);
    cr_assert(sized_condition(&min), "the result still fails");
    for (int i = 0; i < min.n; i++)
        cr_expect_neq(min.a[i].kind, SD_XA_PAUSE, "the pause is removable once the events shrank, yet it was left (%d actions)", min.n);
    cr_expect_eq(min.n, 2, "the events and the kill; got %d actions", min.n);
    /* and every action of the result is needed at its sizes */
    for (int i = 0; i < min.n; i++) {
        sd_xsched_t without = {.n = 0, .a = malloc(sizeof(sd_xa_t) * (size_t)min.n)};
        for (int k = 0; k < min.n; k++)
            if (k != i) without.a[without.n++] = min.a[k];
        cr_expect(!sized_condition(&without), "action %d of the result is not needed", i + 1);
        sd_xsched_free(&without);
    }
    sd_xsched_free(&s);
    sd_xsched_free(&min);
}
