/* xsched.c - fault schedules for `streamdrill explore` (see xsched.h).
 *
 * The generator draws from splitmix64 seeded by (seed, run), so it needs no
 * state and the same inputs give the same schedule. Weights favour what
 * finds real bugs: a fault while data flows (a background produce, or a
 * kill right after a chunk), then duplicates and data faults. A settle
 * (await quiescent) before the watermark-sensitive injections keeps a
 * correct pipeline's verdict independent of how far behind it happens to
 * be when the step runs. */
#include "xsched.h"

#include <stdlib.h>
#include <string.h>

#include "progress.h"

/* the Fetch errors a network fault draws, and whether the protocol has a
 * client retry each */
static const struct {
    const char *name;
    int retriable;
} sd_xsched_errors[] = {{"Fetch:NOT_LEADER_FOR_PARTITION", 1}, {"Fetch:REQUEST_TIMED_OUT", 1}, {"Fetch:TOPIC_AUTHORIZATION_FAILED", 0}};

typedef struct {
    uint64_t s;
} sd_xrng_t;

static uint64_t sd_xrng_next(sd_xrng_t *g) {
    g->s += 0x9e3779b97f4a7c15ULL;
    return sd_util_mix64(g->s);
}

/* uniform in [lo, hi] */
static int64_t sd_xrng_range(sd_xrng_t *g, int64_t lo, int64_t hi) {
    return lo + (int64_t)(sd_xrng_next(g) % (uint64_t)(hi - lo + 1));
}

/* index drawn by weight (weights of 0 never drawn; at least one > 0) */
static int sd_xrng_pick(sd_xrng_t *g, const int *w, int n) {
    int total = 0;
    for (int i = 0; i < n; i++) total += w[i];
    int r = (int)(sd_xrng_next(g) % (uint64_t)total);
    for (int i = 0; i < n; i++) {
        if (r < w[i]) return i;
        r -= w[i];
    }
    return n - 1;
}

void sd_xsched_caps(const sd_scenario_t *sc, int embedded, sd_xcaps_t *caps) {
    memset(caps, 0, sizeof(*caps));
    caps->batches = sd_progress_get(sc->progress)->batches;
    caps->network = embedded;
    caps->faketime = sc->faketime;
    caps->future = sc->start_now;
    caps->edges = sc->model.kind == SD_MODEL_WINDOWS || (sc->model.kind == SD_MODEL_JOIN && !sc->deliveries_log);
    caps->watermark_ms = sc->watermark_ms;
    caps->partitions = sc->partitions > 0 ? sc->partitions : 1;
    caps->member = sc->progress == SD_PROGRESS_GROUP;
}

static void sd_xsched_push(sd_xsched_t *s, const sd_xa_t *a) {
    s->a = sd_util_xrealloc(s->a, sizeof(*s->a) * (size_t)(s->n + 1));
    s->a[s->n++] = *a;
}

void sd_xsched_free(sd_xsched_t *s) {
    free(s->a);
    s->a = NULL;
    s->n = 0;
}

void sd_xsched_copy(sd_xsched_t *dst, const sd_xsched_t *src) {
    dst->n = src->n;
    dst->member = src->member;
    dst->a = sd_util_xmalloc(sizeof(*dst->a) * (size_t)(src->n ? src->n : 1));
    if (src->n) memcpy(dst->a, src->a, sizeof(*dst->a) * (size_t)src->n);
}

/* A fault, drawn from the catalogue the header allows. */
static void sd_xsched_fault(const sd_xcaps_t *caps, sd_xrng_t *g, sd_xa_t *a) {
    enum { F_KILL_MID, F_KILL_BOUNDARY, F_KILL_NOW, F_STOP, F_RESTART, F_PAUSE, F_NETWORK, F_CLOCK, F_BROKER, F_N };
    int w[F_N] = {caps->batches ? 30 : 0, caps->batches ? 10 : 0, 10, 8, 8, 12, caps->network ? 12 : 0, caps->faketime ? 8 : 0,
                  caps->brokers ? 12 : 0};
    memset(a, 0, sizeof(*a));
    int f = sd_xrng_pick(g, w, F_N);
    switch (f) {
    case F_KILL_MID: case F_KILL_BOUNDARY: case F_KILL_NOW:
        a->kind = SD_XA_KILL;
        a->where = f == F_KILL_MID ? SD_XW_MID_BATCH : f == F_KILL_BOUNDARY ? SD_XW_AT_BOUNDARY : SD_XW_NOW;
        a->sig = sd_xrng_range(g, 0, 9) < 7 ? SD_XS_KILL : SD_XS_TERM;
        a->ms = sd_xrng_range(g, 0, 9) < 6 ? 0 : sd_xrng_range(g, 2, 20) * 100;
        break;
    case F_STOP:
        a->kind = SD_XA_STOP;
        a->ms = sd_xrng_range(g, 0, 9) < 6 ? 0 : sd_xrng_range(g, 2, 20) * 100;
        break;
    case F_RESTART:
        a->kind = SD_XA_RESTART;
        a->ms = sd_xrng_range(g, 0, 9) < 5 ? 0 : sd_xrng_range(g, 2, 20) * 100;
        break;
    case F_PAUSE:
        a->kind = SD_XA_PAUSE;
        a->where = caps->batches && sd_xrng_range(g, 0, 1) ? SD_XW_MID_BATCH : SD_XW_NOW;
        /* short, or long enough for a consumer-group member to lose its
         * membership: only a pipeline followed through its group is known
         * to be one (Spark, Flink and refpipe read by assignment, and a
         * long pause of theirs only waits); the draws are the same either
         * way, so a header's other actions do not change with it */
        a->ms = sd_xrng_range(g, 0, 9) < 6 || !caps->member ? sd_xrng_range(g, 3, 15) * 100 : sd_xrng_range(g, 5, 10) * 1000;
        break;
    case F_NETWORK:
        a->kind = SD_XA_NETWORK;
        a->op = (int)sd_xrng_range(g, 0, 2) * 2; /* 0 latency, 2 blackhole, 4 errors */
        if (a->op == 0) a->n = sd_xrng_range(g, 1, 5) * 100; /* latency in ms */
        if (a->op == 4) {
            a->n = sd_xrng_range(g, 1, 5);
            a->variant = (int)sd_xrng_range(g, 0, 2);
            /* a retriable error, up to five in a row (a client's retries
             * may run out); one the protocol says not to retry, once: a
             * client that does not give up on the first waits out a long
             * backoff for each (librdkafka: ten times fetch.error.backoff.ms,
             * 5 s), and a second tests nothing the first did not */
            if (!sd_xsched_errors[a->variant % 3].retriable) a->n = 1;
        }
        a->ms = sd_xrng_range(g, 2, 6) * 500;
        break;
    case F_BROKER:
        a->kind = SD_XA_BROKER;
        {
            /* kill, a controlled shutdown, or cut off from the others */
            int64_t r = sd_xrng_range(g, 0, 9);
            a->op = r < (caps->isolate ? 5 : 7) ? 0 : !caps->isolate || r < 7 ? 1 : 2;
        }
        a->where = caps->batches && sd_xrng_range(g, 0, 1) ? SD_XW_MID_BATCH : SD_XW_NOW;
        a->n = sd_xrng_range(g, 0, caps->partitions - 1);
        break;
    default:
        a->kind = SD_XA_CLOCK;
        a->op = sd_xrng_range(g, 0, 3) ? 0 : 1;
        a->ms = (sd_xrng_range(g, 0, 3) ? 1 : -1) * sd_xrng_range(g, 1, 12) * 10 * 60000;
        break;
    }
}

/* A data fault: duplicates, or one of the inject kinds. */
static void sd_xsched_data(const sd_xcaps_t *caps, sd_xrng_t *g, sd_xsched_t *s) {
    /* replay, then the inject kinds in sd_inject_kind_t order, then malformed */
    int w[SD_INJ__COUNT + 2] = {0};
    w[0] = 20;
    w[1 + SD_INJ_LATE] = 10;
    w[1 + SD_INJ_OUT_OF_ORDER] = 10;
    w[1 + SD_INJ_FUTURE] = caps->future ? 5 : 0;
    w[1 + SD_INJ_AT_MAX] = 5;
    w[1 + SD_INJ_AT_WATERMARK] = 5;
    w[1 + SD_INJ_BURST] = 6;
    w[1 + SD_INJ_SKEW] = 6;
    w[1 + SD_INJ_DRIFT] = 6;
    w[1 + SD_INJ_NO_KEY] = 5;
    w[1 + SD_INJ_RETRY_DUP] = 6;
    w[1 + SD_INJ_EDGE] = caps->edges ? 8 : 0;
    w[1 + SD_XI_MALFORMED] = 10;
    int k = sd_xrng_pick(g, w, SD_INJ__COUNT + 2);
    sd_xa_t a = {0};
    if (k == 0) {
        a.kind = SD_XA_REPLAY;
        a.n = sd_xrng_range(g, 1, 20);
        a.op = (int)sd_xrng_range(g, 0, 1);
        sd_xsched_push(s, &a);
        return;
    }
    a.kind = SD_XA_INJECT;
    a.op = k - 1;
    a.n = a.op == SD_INJ_BURST || a.op == SD_INJ_SKEW ? sd_xrng_range(g, 20, 200) : sd_xrng_range(g, 1, 10);
    if (a.op == SD_INJ_DRIFT) a.variant = (int)sd_xrng_range(g, 0, 1);
    if (a.op == SD_XI_MALFORMED) {
        /* every kind at once (a bug that only one kind trips is then
         * found, and the shrinker narrows it to that kind), the default
         * five, or one kind */
        int64_t r = sd_xrng_range(g, 0, 9);
        a.variant = r < 4 ? SD_XM_ALL : r < 7 ? 0 : (int)sd_xrng_range(g, 1, SD_MAL_JSON_COUNT);
        if (a.variant == SD_XM_ALL) a.n = sd_xrng_range(g, SD_MAL_JSON_COUNT, 2 * SD_MAL_JSON_COUNT);
    }
    if (a.op == SD_INJ_LATE || a.op == SD_INJ_OUT_OF_ORDER || a.op == SD_INJ_AT_MAX || a.op == SD_INJ_AT_WATERMARK) {
        sd_xa_t settle = {.kind = SD_XA_SETTLE};
        sd_xsched_push(s, &settle);
    }
    sd_xsched_push(s, &a);
}

void sd_xsched_generate(const sd_xcaps_t *caps, uint64_t seed, int run, sd_xsched_t *out) {
    sd_xrng_t g = {sd_util_mix64(seed ^ sd_util_mix64((uint64_t)run * 0x632be59bd9b4e019ULL))};
    memset(out, 0, sizeof(*out));
    out->member = caps->member;
    sd_xa_t a = {.kind = SD_XA_PRODUCE, .n = sd_xrng_range(&g, 6, 16) * 10};
    sd_xsched_push(out, &a);
    a = (sd_xa_t){.kind = SD_XA_SETTLE};
    sd_xsched_push(out, &a);
    int segments = (int)sd_xrng_range(&g, 2, 6);
    for (int i = 0; i < segments; i++) {
        int w[3] = {40, 35, 25}; /* a fault under load, a data fault, a fault on its own */
        int what = sd_xrng_pick(&g, w, 3);
        if (what == 1) {
            sd_xsched_data(caps, &g, out);
            continue;
        }
        if (what == 0) {
            a = (sd_xa_t){.kind = SD_XA_PRODUCE, .n = sd_xrng_range(&g, 2, 12) * 10};
            if (sd_xrng_range(&g, 0, 1)) a.rate = sd_xrng_range(&g, 1, 4) * 100;
            sd_xsched_push(out, &a);
        }
        sd_xsched_fault(caps, &g, &a);
        sd_xsched_push(out, &a);
    }
    sd_xsched_aim(out);
}

int sd_xsched_aim(sd_xsched_t *s) {
    int changed = 0, flowing = 0, background = 0;
    for (int i = 0; i < s->n; i++) {
        sd_xa_t *a = &s->a[i];
        if (a->kind == SD_XA_PRODUCE || a->kind == SD_XA_REPLAY || a->kind == SD_XA_INJECT) flowing = 1;
        if (a->kind == SD_XA_PRODUCE) background = a->rate != 0;
        if (a->kind == SD_XA_SETTLE) flowing = background = 0;
        if (sd_xsched_is_fault(a) && a->where != SD_XW_NOW && !flowing) {
            a->where = SD_XW_NOW;
            changed = 1;
        }
        int delayed = a->kind == SD_XA_KILL || a->kind == SD_XA_STOP || a->kind == SD_XA_RESTART;
        if (delayed && a->ms && !background && !s->member) {
            a->ms = 0;
            changed = 1;
        }
    }
    return changed;
}

/* ---- rendering ---- */

static void sd_xsched_dur(sd_buf_t *b, int64_t ms) {
    if (ms < 0) { sd_buf_putc(b, '-'); ms = -ms; }
    if (ms && ms % 60000 == 0) sd_buf_printf(b, "%lldm", (long long)(ms / 60000));
    else if (ms % 1000 == 0) sd_buf_printf(b, "%llds", (long long)(ms / 1000));
    else sd_buf_printf(b, "%lldms", (long long)ms);
}

static const char *const sd_xsched_where[] = {"now", "mid-batch", "at-boundary"};

static void sd_xsched_restart(sd_buf_t *b, int64_t delay_ms, const char *sep) {
    sd_buf_puts(b, sep);
    sd_buf_puts(b, "restart");
    if (delay_ms > 0) { sd_buf_puts(b, " delay="); sd_xsched_dur(b, delay_ms); }
}

/* One action's steps, separated by sep. */
static void sd_xsched_steps(const sd_xa_t *a, sd_buf_t *b, const char *sep) {
    const char *opt = a->strict ? "" : " optional";
    switch (a->kind) {
    case SD_XA_PRODUCE:
        sd_buf_printf(b, "produce %lld", (long long)a->n);
        if (a->rate) sd_buf_printf(b, " rate=%lld/s background", (long long)a->rate);
        break;
    case SD_XA_REPLAY:
        sd_buf_printf(b, "replay %lld%s", (long long)a->n, a->op ? " from=last" : "");
        break;
    case SD_XA_INJECT:
        if (a->op == SD_XI_MALFORMED) {
            sd_buf_printf(b, "inject malformed=%lld", (long long)a->n);
            if (a->variant == SD_XM_ALL) {
                for (int k = 0; k < SD_MAL_JSON_COUNT; k++) sd_buf_printf(b, "%s%s", k ? "," : " kinds=", sd_malformed_name((sd_malformed_t)k));
            } else if (a->variant) {
                sd_buf_printf(b, " kinds=%s", sd_malformed_name((sd_malformed_t)(a->variant - 1)));
            }
            break;
        }
        sd_buf_printf(b, "inject %s=%lld", sd_inject_name((sd_inject_kind_t)a->op), (long long)a->n);
        if (a->op == SD_INJ_BURST) sd_buf_puts(b, " offline=5m");
        if (a->op == SD_INJ_FUTURE) sd_buf_puts(b, " ahead=2h");
        if (a->op == SD_INJ_DRIFT) sd_buf_puts(b, a->variant ? " as=type-change" : " as=extra-field");
        break;
    case SD_XA_SETTLE:
        sd_buf_puts(b, "await quiescent 1s timeout=30s");
        break;
    case SD_XA_KILL:
        sd_buf_printf(b, "kill %s signal=%s timeout=10s%s", sd_xsched_where[a->where], a->sig == SD_XS_TERM ? "TERM" : "KILL", opt);
        sd_xsched_restart(b, a->ms, sep);
        break;
    case SD_XA_STOP:
        sd_buf_printf(b, "stop timeout=10s%s", opt);
        sd_xsched_restart(b, a->ms, sep);
        break;
    case SD_XA_RESTART:
        sd_xsched_restart(b, a->ms, "");
        break;
    case SD_XA_PAUSE:
        sd_buf_printf(b, "pause %s for=", sd_xsched_where[a->where]);
        sd_xsched_dur(b, a->ms);
        sd_buf_printf(b, " timeout=10s%s", opt);
        break;
    case SD_XA_NETWORK:
        if (a->op == 4) {
            sd_buf_printf(b, "network errors=%s count=%lld%s", sd_xsched_errors[a->variant % 3].name, (long long)a->n, opt);
            break;
        }
        if (a->op == 0) { sd_buf_puts(b, "network latency="); sd_xsched_dur(b, a->n); }
        else sd_buf_puts(b, "network blackhole");
        sd_buf_puts(b, " for=");
        sd_xsched_dur(b, a->ms);
        sd_buf_puts(b, opt);
        break;
    case SD_XA_BROKER:
        sd_buf_printf(b, "broker %s leader-of=%lld %s timeout=30s%s%sbroker %s", a->op == 2 ? "isolate" : a->op ? "stop" : "kill",
                      (long long)a->n, sd_xsched_where[a->where], opt, sep, a->op == 2 ? "rejoin" : "start");
        break;
    case SD_XA_CLOCK:
        if (a->op == 1) {
            sd_buf_printf(b, "clock rate=2x%s", opt);
            break;
        }
        sd_buf_printf(b, "clock jump=%s", a->ms >= 0 ? "+" : "");
        sd_xsched_dur(b, a->ms);
        sd_buf_puts(b, opt);
        break;
    default:
        break;
    }
}

void sd_xsched_render(const sd_xsched_t *s, sd_buf_t *b) {
    sd_buf_puts(b, "start\n");
    for (int i = 0; i < s->n; i++) {
        sd_xsched_steps(&s->a[i], b, "\n");
        sd_buf_putc(b, '\n');
    }
    sd_buf_puts(b, "await quiescent 2s timeout=90s\n");
}

int sd_xsched_is_fault(const sd_xa_t *a) {
    return a->kind >= SD_XA_KILL && a->kind < SD_XA__COUNT;
}

int sd_xsched_fault_count(const sd_xsched_t *s) {
    int n = 0;
    for (int i = 0; i < s->n; i++) n += sd_xsched_is_fault(&s->a[i]);
    return n;
}

/* ---- simplifications ---- */

int sd_xsched_simpler(const sd_xa_t *a, sd_xa_t *out, const char **label, int max) {
    int n = 0;
#define SD_XS_ADD(lbl, stmt)                  \
    do {                                      \
        if (n < max) {                        \
            out[n] = *a;                      \
            { sd_xa_t *c = &out[n]; stmt; }   \
            label[n++] = lbl;                 \
        }                                     \
    } while (0)
    switch (a->kind) {
    case SD_XA_PRODUCE:
        if (a->rate) SD_XS_ADD("at once instead of in the background", c->rate = 0);
        if (a->n > 1) SD_XS_ADD("half the events", c->n = a->n / 2);
        break;
    case SD_XA_REPLAY:
    case SD_XA_INJECT:
        if (a->n > 1) SD_XS_ADD("half the events", c->n = a->n / 2);
        if (a->kind == SD_XA_INJECT && a->op == SD_XI_MALFORMED) {
            /* fewer kinds: the default five, then each kind alone */
            static const char *const only[SD_MAL_JSON_COUNT] = {"only truncated", "only not-json", "only missing-id", "only wrong-type",
                                                            "only empty", "only invalid-utf8", "only oversized", "only null-value",
                                                            "only duplicate-keys"};
            if (a->variant == SD_XM_ALL) SD_XS_ADD("the default five kinds", c->variant = 0);
            int last = a->variant == SD_XM_ALL ? SD_MAL_JSON_COUNT : a->variant == 0 ? 5 : 0;
            for (int k = 0; k < last; k++) SD_XS_ADD(only[k], c->variant = k + 1);
        }
        break;
    case SD_XA_KILL:
        if (a->where == SD_XW_MID_BATCH) SD_XS_ADD("at a boundary instead of mid-batch", c->where = SD_XW_AT_BOUNDARY);
        if (a->sig == SD_XS_KILL) SD_XS_ADD("TERM instead of KILL", c->sig = SD_XS_TERM);
        if (a->ms) SD_XS_ADD("restart without a delay", c->ms = 0);
        break;
    case SD_XA_STOP:
    case SD_XA_RESTART:
        if (a->ms) SD_XS_ADD("restart without a delay", c->ms = 0);
        break;
    case SD_XA_PAUSE:
        if (a->ms > 500) SD_XS_ADD("half as long", c->ms = a->ms / 2);
        if (a->where == SD_XW_MID_BATCH) SD_XS_ADD("now instead of mid-batch", c->where = SD_XW_NOW);
        break;
    case SD_XA_NETWORK:
        if (a->op == 4 && a->n > 1) SD_XS_ADD("half the errors", c->n = a->n / 2);
        if (a->op == 0 && a->n > 100) SD_XS_ADD("half the latency", c->n = a->n / 2);
        if (a->op != 4 && a->ms > 500) SD_XS_ADD("half as long", c->ms = a->ms / 2);
        break;
    case SD_XA_CLOCK:
        if (a->op == 0 && (a->ms > 60000 || a->ms < -60000)) SD_XS_ADD("half the jump", c->ms = a->ms / 2);
        break;
    case SD_XA_BROKER:
        if (a->where == SD_XW_MID_BATCH) SD_XS_ADD("now instead of mid-batch", c->where = SD_XW_NOW);
        if (a->op == 0) SD_XS_ADD("a controlled shutdown instead of a kill", c->op = 1);
        break;
    default:
        break;
    }
    /* last: the fault must land, so the drill cannot pass by missing it */
    if (sd_xsched_is_fault(a) && a->kind != SD_XA_RESTART && !a->strict) SD_XS_ADD("must land (not optional)", c->strict = 1);
#undef SD_XS_ADD
    return n;
}
