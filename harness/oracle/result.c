/* result.c - the windows result model (see result.h).
 *
 * Each event is spread over the windows that contain it ("contributions"),
 * the contributions and the sink's rows are sorted by (window start, key),
 * and one merge walk over both gives every group its expected value, its
 * rows and its flags. O((events x windows per event + rows) log) time. */
#include "result.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "util.h"

const char *sd_gbucket_name(sd_gbucket_t b) {
    static const char *const n[] = {"correct", "wrong_value", "missing_group", "unexpected_group", "emitted_twice",
                                    "emitted_early", "pending", "changed", "null_for_matched"};
    return b < SD_G__COUNT ? n[b] : "?";
}

int sd_result_aggs(const char *list) {
    static const char *const w[] = {"count", "sum", "min", "max", "avg"};
    int bits = 0;
    const char *p = list;
    while (p && *p) {
        size_t n = strcspn(p, ",");
        int hit = -1;
        for (int i = 0; i < 5; i++)
            if (strlen(w[i]) == n && !strncmp(p, w[i], n)) hit = i;
        if (hit < 0) return -1;
        bits |= 1 << hit;
        p += n + (p[n] == ',');
    }
    return bits;
}

int sd_result_parse_start(const char *s, size_t len, int64_t *out) {
    char buf[64];
    if (!s || !len || len >= sizeof(buf)) return -1;
    memcpy(buf, s, len);
    buf[len] = 0;
    char *end;
    long long v = strtoll(buf, &end, 10);
    if (end != buf && !*end) {
        *out = v;
        return 0;
    }
    return sd_util_parse_iso8601(buf, out);
}

typedef struct {
    int64_t start;
    const char *keys;
    int64_t ev;     /* index into the events */
} sd_contrib_t;

static int sd_cmp_group(int64_t sa, const char *ka, int64_t sb, const char *kb) {
    if (sa != sb) return sa < sb ? -1 : 1;
    return strcmp(ka, kb);
}

static int sd_cmp_contrib(const void *a, const void *b) {
    const sd_contrib_t *x = a, *y = b;
    int c = sd_cmp_group(x->start, x->keys, y->start, y->keys);
    return c ? c : (x->ev > y->ev) - (x->ev < y->ev);
}

static const sd_result_row_t *sd_sort_rows_base;
static int sd_cmp_row_idx(const void *a, const void *b) {
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    const sd_result_row_t *x = &sd_sort_rows_base[i], *y = &sd_sort_rows_base[j];
    int c = sd_cmp_group(x->start_ms, x->keys, y->start_ms, y->keys);
    return c ? c : (i > j) - (i < j);
}

static int64_t sd_floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int sd_result_num(const char *s, size_t len, double *d, int64_t *iv, uint8_t *is_int) {
    int integer;
    *is_int = 0;
    *iv = 0;
    *d = 0;
    /* a value surrounded by spaces (a fixed-width column) is still the number */
    while (len && (*s == ' ' || *s == '\t')) s++, len--;
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r')) len--;
    if (!len || len > 400 || sd_json_number_span(s, len, &integer, 1) != len) return 0;
    char buf[408];
    memcpy(buf, s, len);
    buf[len] = 0;
    if (integer) {
        errno = 0;
        long long v = strtoll(buf, NULL, 10);
        if (errno != ERANGE) {
            *iv = v;
            *is_int = 1;
            *d = (double)v;
            return 1;
        }
    }
    *d = strtod(buf, NULL);
    return isfinite(*d);
}

/* Two integers written in decimal, of any size, equal? */
static int sd_int_text_eq(const char *a, size_t al, const char *b, size_t bl) {
    int na = al && *a == '-', nb = bl && *b == '-';
    a += na, al -= (size_t)na, b += nb, bl -= (size_t)nb;
    while (al > 1 && *a == '0') a++, al--;
    while (bl > 1 && *b == '0') b++, bl--;
    int za = al == 1 && *a == '0', zb = bl == 1 && *b == '0';
    if (za || zb) return za && zb;
    return na == nb && al == bl && !memcmp(a, b, al);
}

int sd_result_same_value(const char *a, size_t al, const char *b, size_t bl) {
    if (al == bl && !memcmp(a, b, al)) return 1;
    int ia, ib;
    if (!al || !bl || sd_json_number_span(a, al, &ia, 1) != al || sd_json_number_span(b, bl, &ib, 1) != bl) return 0;
    if (ia && ib) return sd_int_text_eq(a, al, b, bl);
    if (al > 400 || bl > 400) return 0;
    char x[408], y[408];
    memcpy(x, a, al), x[al] = 0;
    memcpy(y, b, bl), y[bl] = 0;
    /* long double holds every 64-bit integer: a float equals an integer
     * only when it is exactly that integer */
    return strtold(x, NULL) == strtold(y, NULL);
}

/* Floating-point values agree within a relative 1e-9 (at least 1e-6). */
static int sd_float_eq(double expected, double actual) {
    double tol = 1e-9 * (fabs(expected) > 1 ? fabs(expected) : 1);
    return fabs(expected - actual) <= (tol > 1e-6 ? tol : 1e-6);
}

/* An aggregate the model expects: none (no numeric value: SQL's NULL), an
 * exact integer, or a floating-point value. */
typedef struct {
    int null, is_int;
    int64_t i;
    double d;
} sd_want_t;

/* Does a row's value a agree with w? Integers exactly; a float written for
 * an integer only when it is exactly that integer. */
static int sd_agg_ok(const sd_want_t *w, const sd_result_row_t *row, int a) {
    if (w->null) return !row->has[a];
    if (!row->has[a]) return 0;
    if (w->is_int) {
        if (row->is_int[a]) return row->iv[a] == w->i;
        return (long double)row->v[a] == (long double)w->i;
    }
    return sd_float_eq(w->d, row->v[a]);
}

static void sd_want_text(const sd_want_t *w, sd_buf_t *b) {
    if (w->null) sd_buf_puts(b, "null (no numeric value among its events)");
    else if (w->is_int) sd_buf_printf(b, "%lld", (long long)w->i);
    else sd_buf_printf(b, "%.17g", w->d);
}

static void sd_row_text(const sd_result_row_t *row, int a, sd_buf_t *b) {
    if (!row->has[a]) sd_buf_puts(b, "missing");
    else if (row->is_int[a]) sd_buf_printf(b, "%lld", (long long)row->iv[a]);
    else sd_buf_printf(b, "%.17g", row->v[a]);
}

/* An event's id as the run names it, or #seq without a formatter. */
static void sd_result_id(const sd_result_conf_t *conf, int64_t seq, char *out, size_t len) {
    if (conf->fmt_id) conf->fmt_id(conf->fmt_opaque, seq, out, len);
    else snprintf(out, len, "#%lld", (long long)seq);
}

static void sd_keys_text(const char *key_names, const char *keys, sd_buf_t *b) {
    if (!key_names || !*key_names) return;
    const char *n = key_names, *v = keys;
    while (*n) {
        size_t nl = strcspn(n, ","), vl = strcspn(v, "\x1f");
        sd_buf_printf(b, " %.*s=%.*s", (int)nl, n, (int)vl, v);
        n += nl + (n[nl] == ',');
        v += vl + (v[vl] == '\x1f');
    }
}

/* up to max ids of the group's events that satisfy want(), with a title */
static void sd_list_ids(const sd_result_conf_t *conf, const sd_result_event_t *ev, const sd_contrib_t *c, int64_t nc,
                        int (*want)(const sd_result_event_t *), const char *title, sd_buf_t *b) {
    int64_t n = 0;
    for (int64_t i = 0; i < nc; i++)
        if (want(&ev[c[i].ev])) n++;
    if (!n) return;
    sd_buf_printf(b, "; %s (%lld): ", title, (long long)n);
    int64_t shown = 0;
    for (int64_t i = 0; i < nc && shown < 5; i++) {
        const sd_result_event_t *e = &ev[c[i].ev];
        if (!want(e)) continue;
        char id[64];
        sd_result_id(conf, e->seq, id, sizeof(id));
        sd_buf_printf(b, "%s%s", shown ? ", " : "", id);
        if (e->sent > 1) sd_buf_printf(b, " (sent %u times)", e->sent);
        shown++;
    }
    if (n > shown) sd_buf_printf(b, ", ...");
}

/* A wrong window's events on its edges (exactly on its start, 1 ms before
 * its end): the signature of an off-by-one window bound. */
static void sd_window_edges(const sd_result_event_t *ev, const sd_contrib_t *c, int64_t nc, int64_t start, int64_t end, int task_clock,
                            sd_buf_t *b) {
    int64_t on_start = 0, before_end = 0, wm[2] = {0, 0};
    for (int64_t i = 0; i < nc; i++) {
        const sd_result_event_t *e = &ev[c[i].ev];
        if (!e->copies) continue;
        on_start += e->t_ms == start;
        before_end += e->t_ms == end - 1;
        if (e->wm_edge) wm[e->wm_edge - 1]++;
    }
    if (on_start || before_end)
        sd_buf_printf(b, "; on its edges: %lld of its events lie exactly on its start, %lld 1 ms before its end (a window bound "
                         "off by one moves them)", (long long)on_start, (long long)before_end);
    if (wm[0] || wm[1])
        sd_buf_printf(b, "; %lld of its events were sent exactly on the watermark's cut-off, %lld 1 ms inside it (%s)", (long long)wm[0],
                      (long long)wm[1], task_clock ? "under a task's stream time either may be dropped as late, when newer scans "
                                                     "reached its task first"
                                                   : "one on it may be taken as late, one inside it must count");
}

static int sd_is_counted(const sd_result_event_t *e) { return e->copies > 0; }
static int sd_is_late(const sd_result_event_t *e) { return e->late; }
static int sd_is_resent(const sd_result_event_t *e) { return e->copies > 0 && e->sent > e->copies; }

/* A group judged: correct without flags, else counted in each of its flags'
 * buckets and kept as an anomaly with its detail (d is taken over). */
static void sd_group_judged(sd_result_t *out, int64_t start, const char *keys, unsigned flags, sd_buf_t *d) {
    if (!flags) {
        out->n[SD_G_CORRECT]++;
        sd_buf_free(d);
        return;
    }
    for (int b = 0; b < SD_G__COUNT; b++)
        if (flags & (1u << b)) out->n[b]++;
    out->anomalies = sd_util_xrealloc(out->anomalies, sizeof(*out->anomalies) * (size_t)(out->nanomalies + 1));
    out->anomalies[out->nanomalies++] =
        (sd_result_group_t){.start_ms = start, .keys = sd_util_strdup(keys), .flags = flags, .detail = sd_buf_steal(d)};
}

/* What a group's counted events give: each aggregate, the count, and how
 * many hold no numeric value. skip_cut: without the events sent exactly on
 * the watermark's cut-off (an engine may rightly have dropped them), and,
 * with cut_kinds 2, those sent 1 ms inside it too (under a task clock the
 * harness cannot know whether newer scans reached the task first and
 * closed their window): bit k leaves the k-th such event out (the 32nd
 * bit every one from there on). */
typedef struct {
    sd_want_t w[5];
    double cnt;
    int any, nonnum, cut;
} sd_group_want_t;

static void sd_group_want(const sd_result_event_t *ev, const sd_contrib_t *c, int64_t nc, int cut_kinds, uint32_t skip_cut,
                          sd_group_want_t *g) {
    double cnt = 0, sum = 0, mn = 0, mx = 0, nvals = 0;
    __int128 isum = 0;
    int64_t imn = 0, imx = 0;
    int any = 0, anyv = 0, all_int = 1, nonnum = 0, cut = 0;
    for (int64_t i = 0; i < nc; i++) {
        const sd_result_event_t *e = &ev[c[i].ev];
        if (!e->copies) continue;
        int on_cut = e->wm_edge && e->wm_edge <= cut_kinds;
        if (on_cut && (skip_cut >> (cut < 31 ? cut : 31) & 1)) {
            cut++;
            continue;
        }
        cut += on_cut;
        cnt += e->copies;
        any = 1;
        /* sum, min, max and avg are over the numeric values, as SQL and
         * Spark aggregate: a null (or text) value is left out */
        if (!e->has_value) { nonnum++; continue; }
        if (!e->is_int) all_int = 0;
        nvals += e->copies;
        sum += e->value * e->copies;
        isum += (__int128)e->ivalue * e->copies;
        if (!anyv || e->value < mn) mn = e->value;
        if (!anyv || e->value > mx) mx = e->value;
        if (!anyv || e->ivalue < imn) imn = e->ivalue;
        if (!anyv || e->ivalue > imx) imx = e->ivalue;
        anyv = 1;
    }
    int sum_int = all_int && isum >= INT64_MIN && isum <= INT64_MAX;
    sd_want_t want[5] = {
        {.is_int = 1, .i = (int64_t)cnt, .d = cnt},
        {.null = !anyv, .is_int = sum_int, .i = sum_int ? (int64_t)isum : 0, .d = sum},
        {.null = !anyv, .is_int = all_int, .i = imn, .d = mn},
        {.null = !anyv, .is_int = all_int, .i = imx, .d = mx},
        {.null = !anyv, .d = nvals ? sum / nvals : 0}};
    memcpy(g->w, want, sizeof(want));
    g->cnt = cnt;
    g->any = any;
    g->nonnum = nonnum;
    g->cut = cut;
}

static int sd_group_agrees(const sd_result_conf_t *conf, const sd_group_want_t *g, const sd_result_row_t *row) {
    for (int a = 0; a < 5; a++)
        if ((conf->aggs & (1 << a)) && !sd_agg_ok(&g->w[a], row, a)) return 0;
    return 1;
}

/* Up to this many events on a group's cut-off, every subset of them is
 * tried as the ones dropped (64 sums); past it, all or none. */
#define SD_CUT_SUBSETS 6

/* One group: its contributions c[0..nc) and its rows idx[0..nr) (sink order). */
static void sd_judge_group(const sd_result_conf_t *conf, const sd_result_event_t *ev, const sd_contrib_t *c, int64_t nc,
                           const sd_result_row_t *rows, const int64_t *idx, int64_t nr, int64_t start, const char *keys,
                           int64_t wm_gap, sd_result_t *out) {
    sd_group_want_t g, without;
    int cut_kinds = conf->task_clock ? 2 : 1;
    sd_group_want(ev, c, nc, cut_kinds, 0, &g);
    /* an event exactly on the watermark's cut-off: Spark's event-time
     * filters (dropDuplicatesWithinWatermark) take it as late, refpipe and
     * Flink's windows do not; the group is right either way. Under a task
     * clock one 1 ms inside it too: a few newer scans reaching its task
     * first (a restarted task reading its partitions on) close its window */
    if (g.cut) sd_group_want(ev, c, nc, cut_kinds, UINT32_MAX, &without);
    double cnt = g.cnt;
    int nonnum = g.nonnum;
    int expected = g.any;
    if (!expected && !nr) return; /* only events that must not count, and no row: nothing to judge */
    if (g.cut && !without.any && !nr) return; /* only events on the cut-off, dropped as late as Spark may */
    out->groups_observed += nr > 0;
    int64_t end = start + conf->size_ms;
    int closed = conf->final_wm != INT64_MIN && end <= conf->final_wm;
    /* at the final watermark, or past an engine's that keeps one per
     * partition: closed or not, as the engine saw it */
    int boundary = conf->final_wm != INT64_MIN &&
                   (end == conf->final_wm || (wm_gap > 0 && end > conf->final_wm - wm_gap && closed));
    /* the groups a correct pipeline holds by now: in append mode, not a
     * window the final watermark has not closed (pending), as for a join's
     * null rows */
    out->groups_expected += expected && !(conf->output == SD_OUT_APPEND && (!closed || boundary));
    unsigned flags = 0;
    sd_buf_t d;
    sd_buf_init(&d);
    char iso[40];
    sd_buf_printf(&d, "window %s", sd_util_iso8601(start, iso, sizeof(iso)));
    sd_keys_text(conf->key_names, keys, &d);
    sd_buf_puts(&d, ": ");
    if (!expected) {
        flags |= 1u << SD_G_UNEXPECTED;
        sd_buf_printf(&d, "%lld row%s for a group no counted event belongs to", (long long)nr, nr == 1 ? "" : "s");
        sd_list_ids(conf, ev, c, nc, sd_is_late, "late events in it, dropped by the contract", &d);
    } else if (!nr) {
        if (conf->output == SD_OUT_APPEND && (!closed || boundary)) {
            flags |= 1u << SD_G_PENDING;
            sd_buf_printf(&d, "no row yet; %s",
                          !boundary ? "the final watermark has not closed it"
                          : end == conf->final_wm ? "the window ends exactly at the final watermark (engines differ on whether that "
                                                    "closes it)"
                          : conf->task_clock ? "the window ends past the newest event of its key less the delay, and its "
                                               "task's stream time may not have passed it (Kafka Streams keeps one per task)"
                                             : "the window ends past the final watermark of an engine that keeps one per "
                                               "partition (the oldest partition's newest event time less the delay)");
        } else {
            flags |= 1u << SD_G_MISSING;
            sd_buf_printf(&d, "no row; expected count %.0f", cnt);
            sd_list_ids(conf, ev, c, nc, sd_is_counted, "its events", &d);
        }
    } else if (conf->output == SD_OUT_APPEND && !closed) {
        flags |= 1u << SD_G_EARLY;
        char wm[40];
        sd_buf_printf(&d, "%lld row%s for a window the final watermark (%s) has not closed: it cannot be final",
                      (long long)nr, nr == 1 ? "" : "s",
                      conf->final_wm == INT64_MIN ? "none" : sd_util_iso8601(conf->final_wm, wm, sizeof(wm)));
    } else {
        const sd_result_row_t *last = &rows[idx[nr - 1]];
        static const char *const an[] = {"count", "sum", "min", "max", "avg"};
        const sd_want_t *want = g.w;
        int wrong = 0, over = 0, either = g.cut && without.any && sd_group_agrees(conf, &without, last);
        /* some of them dropped, not all (read at different moments): each
         * subset, for a few */
        for (uint32_t m = 1; !either && g.cut > 1 && g.cut <= SD_CUT_SUBSETS && m < (1u << g.cut) - 1; m++) {
            sd_group_want_t some;
            sd_group_want(ev, c, nc, cut_kinds, m, &some);
            either = some.any && sd_group_agrees(conf, &some, last);
        }
        sd_buf_t v;
        sd_buf_init(&v);
        for (int a = 0; a < 5 && !either; a++) {
            if (!(conf->aggs & (1 << a))) continue;
            if (!sd_agg_ok(&want[a], last, a)) {
                wrong = 1;
                if (a == 0 && last->has[a] && last->v[a] > cnt) over = 1;
                sd_buf_printf(&v, "%s%s ", v.len ? "; " : "", an[a]);
                sd_row_text(last, a, &v);
                sd_buf_puts(&v, ", expected ");
                sd_want_text(&want[a], &v);
            }
        }
        if (wrong && nonnum && (conf->aggs & ~SD_AGG_COUNT))
            sd_buf_printf(&v, " (%d of its events hold no numeric value, left out of sum, min, max and avg)", nonnum);
        if (wrong) {
            flags |= 1u << SD_G_WRONG_VALUE;
            sd_buf_printf(&d, "%s", v.data);
            if (last->writer) sd_buf_printf(&d, " (row by %s)", last->writer);
            if (over) {
                size_t before = d.len;
                sd_list_ids(conf, ev, c, nc, sd_is_late, "late events in it, dropped by the contract", &d);
                sd_list_ids(conf, ev, c, nc, sd_is_resent, "events sent more than once", &d);
                if (d.len == before)
                    sd_buf_puts(&d, "; no late or resent event lies in it: the pipeline counted some of its own events more "
                                    "than once (a batch run again after a restart) or put another window's events in it");
            } else {
                sd_list_ids(conf, ev, c, nc, sd_is_counted, "its events", &d);
                if (conf->task_clock)
                    sd_buf_puts(&d, "; Kafka Streams drops a record whose window its task's stream time has closed: one that "
                                    "reached its task behind newer ones (a task moved or restarted, reading on from its last "
                                    "commit; a lagging partition through a repartition topic) is lost unless the grace period "
                                    "covers the lag");
            }
            sd_window_edges(ev, c, nc, start, end, conf->task_clock, &d);
        }
        sd_buf_free(&v);
        if (conf->output == SD_OUT_APPEND && nr > 1) {
            flags |= 1u << SD_G_TWICE;
            sd_buf_printf(&d, "%s%lld rows in append mode (a window is written once, when final)", wrong ? "; " : "", (long long)nr);
            for (int64_t k = 0; k < nr && k < 4; k++) {
                const sd_result_row_t *rw = &rows[idx[k]];
                sd_buf_printf(&d, "%s count %.10g%s%s", k ? "," : ":", rw->has[0] ? rw->v[0] : NAN, rw->writer ? " by " : "",
                              rw->writer ? rw->writer : "");
            }
        }
    }
    sd_group_judged(out, start, keys, flags, &d);
}

/* a key's newest counted event time, for a task clock */
typedef struct {
    const char *keys;
    int64_t t;
} sd_key_time_t;

static int sd_cmp_key_time(const void *a, const void *b) {
    return strcmp(((const sd_key_time_t *)a)->keys, ((const sd_key_time_t *)b)->keys);
}

/* Each key's newest counted event time, sorted by key, one entry a key;
 * *nk entries, *newest the newest of all (INT64_MIN: none). */
static sd_key_time_t *sd_key_times(const sd_result_event_t *ev, int64_t nev, int64_t *nk, int64_t *newest) {
    sd_key_time_t *k = sd_util_xmalloc(sizeof(*k) * (size_t)(nev ? nev : 1));
    int64_t n = 0;
    *newest = INT64_MIN;
    for (int64_t i = 0; i < nev; i++)
        if (ev[i].copies && ev[i].t_ms != INT64_MIN) k[n++] = (sd_key_time_t){.keys = ev[i].keys, .t = ev[i].t_ms};
    if (n) qsort(k, (size_t)n, sizeof(*k), sd_cmp_key_time);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (k[i].t > *newest) *newest = k[i].t;
        if (m && !strcmp(k[m - 1].keys, k[i].keys)) {
            if (k[i].t > k[m - 1].t) k[m - 1].t = k[i].t;
        } else {
            k[m++] = k[i];
        }
    }
    *nk = m;
    return k;
}

/* How far behind the final watermark a group's may be: the partition gap,
 * or, with a task clock, the newest of all less its key's newest. */
static int64_t sd_group_gap(const sd_result_conf_t *conf, const sd_key_time_t *kt, int64_t nk, int64_t newest, const char *keys) {
    if (!conf->task_clock) return conf->final_wm_gap;
    sd_key_time_t probe = {.keys = keys}, *hit = nk ? bsearch(&probe, kt, (size_t)nk, sizeof(*kt), sd_cmp_key_time) : NULL;
    return hit ? newest - hit->t : 0;
}

void sd_result_windows(const sd_result_conf_t *conf, const sd_result_event_t *ev, int64_t nev, const sd_result_row_t *rows,
                       int64_t nrows, sd_result_t *out) {
    memset(out, 0, sizeof(*out));
    out->rows = nrows;
    int64_t per = conf->size_ms / conf->slide_ms;
    int64_t cap = 0, nc = 0;
    sd_contrib_t *c = NULL;
    for (int64_t i = 0; i < nev; i++) {
        const sd_result_event_t *e = &ev[i];
        if (e->t_ms == INT64_MIN || (!e->copies && !e->late)) continue;
        int64_t last = sd_floor_div(e->t_ms, conf->slide_ms) * conf->slide_ms;
        for (int64_t k = 0; k < per; k++) {
            int64_t s = last - k * conf->slide_ms;
            if (s + conf->size_ms <= e->t_ms) break;
            if (nc == cap) {
                cap = cap ? cap * 2 : 1024;
                c = sd_util_xrealloc(c, sizeof(*c) * (size_t)cap);
            }
            c[nc++] = (sd_contrib_t){.start = s, .keys = e->keys, .ev = i};
        }
    }
    if (nc) qsort(c, (size_t)nc, sizeof(*c), sd_cmp_contrib);
    int64_t *idx = sd_util_xmalloc(sizeof(int64_t) * (size_t)(nrows ? nrows : 1));
    for (int64_t i = 0; i < nrows; i++) idx[i] = i;
    sd_sort_rows_base = rows;
    if (nrows) qsort(idx, (size_t)nrows, sizeof(int64_t), sd_cmp_row_idx);
    int64_t nk = 0, newest = INT64_MIN;
    sd_key_time_t *kt = conf->task_clock ? sd_key_times(ev, nev, &nk, &newest) : NULL;
    int64_t i = 0, j = 0;
    while (i < nc || j < nrows) {
        int64_t start;
        const char *keys;
        if (j >= nrows || (i < nc && sd_cmp_group(c[i].start, c[i].keys, rows[idx[j]].start_ms, rows[idx[j]].keys) <= 0)) {
            start = c[i].start;
            keys = c[i].keys;
        } else {
            start = rows[idx[j]].start_ms;
            keys = rows[idx[j]].keys;
        }
        int64_t i2 = i, j2 = j;
        while (i2 < nc && !sd_cmp_group(c[i2].start, c[i2].keys, start, keys)) i2++;
        while (j2 < nrows && !sd_cmp_group(rows[idx[j2]].start_ms, rows[idx[j2]].keys, start, keys)) j2++;
        sd_judge_group(conf, ev, c + i, i2 - i, rows, idx + j, j2 - j, start, keys, sd_group_gap(conf, kt, nk, newest, keys),
                       out);
        i = i2;
        j = j2;
    }
    free(kt);
    free(idx);
    free(c);
}

void sd_result_free(sd_result_t *r) {
    for (int64_t i = 0; i < r->nanomalies; i++) {
        free(r->anomalies[i].keys);
        free(r->anomalies[i].detail);
    }
    free(r->anomalies);
    memset(r, 0, sizeof(*r));
}

/* ---- latest ---- */

static const sd_result_event_t *sd_sort_ev_base;
static int sd_cmp_ev_key(const void *a, const void *b) {
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    const sd_result_event_t *x = &sd_sort_ev_base[i], *y = &sd_sort_ev_base[j];
    int c = strcmp(x->keys, y->keys);
    if (c) return c;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    /* equal event times: the one sent last is the newest */
    if (x->arrival != y->arrival) return x->arrival < y->arrival ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* equal as text, or as the same number (12345 and 12345.0; integers exactly) */
static int sd_field_eq(const char *a, size_t al, const char *b, size_t bl) { return sd_result_same_value(a, al, b, bl); }

static int sd_fields_eq(const char *a, const char *b) {
    for (;;) {
        size_t al = strcspn(a, "\x1f"), bl = strcspn(b, "\x1f");
        if (!sd_field_eq(a, al, b, bl)) return 0;
        if (!a[al] || !b[bl]) return !a[al] && !b[bl];
        a += al + 1;
        b += bl + 1;
    }
}

static void sd_fields_text(const char *names, const char *vals, sd_buf_t *b) {
    const char *n = names ? names : "", *v = vals;
    int first = 1;
    while (*n) {
        size_t nl = strcspn(n, ","), vl = strcspn(v, "\x1f");
        sd_buf_printf(b, "%s%.*s=%.*s", first ? "" : " ", (int)nl, n, (int)vl, v);
        first = 0;
        n += nl + (n[nl] == ',');
        v += vl + (v[vl] == '\x1f');
    }
}

static void sd_latest_group(const sd_result_conf_t *conf, const sd_result_event_t *ev, const int64_t *ei, int64_t ne,
                            const sd_result_row_t *rows, const int64_t *ri, int64_t nr, const char *keys, sd_result_t *out) {
    /* a tombstone removes the key: what counts is what came after the last one */
    const sd_result_event_t *want = NULL, *del = NULL;
    for (int64_t i = 0; i < ne; i++)
        if (ev[ei[i]].del && (!del || ev[ei[i]].arrival > del->arrival)) del = &ev[ei[i]];
    for (int64_t i = 0; i < ne; i++)
        if (ev[ei[i]].copies && (!del || ev[ei[i]].arrival > del->arrival)) want = &ev[ei[i]]; /* sorted by rank: the last counted one */
    if (!want && !nr) return;
    out->groups_expected += want != NULL;
    out->groups_observed += nr > 0;
    unsigned flags = 0;
    sd_buf_t d;
    sd_buf_init(&d);
    sd_buf_puts(&d, "key");
    sd_keys_text(conf->key_names, keys, &d);
    sd_buf_puts(&d, ": ");
    char id[64];
    if (want) {
        sd_result_id(conf, want->seq, id, sizeof(id));
    }
    if (!want && del) {
        char did[64];
        sd_result_id(conf, del->seq, did, sizeof(did));
        flags |= 1u << SD_G_UNEXPECTED;
        sd_buf_printf(&d, "%lld row%s for a key deleted by tombstone %s (no event of the key came after it)", (long long)nr,
                      nr == 1 ? "" : "s", did);
    } else if (!want) {
        flags |= 1u << SD_G_UNEXPECTED;
        sd_buf_printf(&d, "%lld row%s for a key no counted event has", (long long)nr, nr == 1 ? "" : "s");
    } else if (!nr) {
        flags |= 1u << SD_G_MISSING;
        sd_buf_puts(&d, "no row; expected ");
        sd_fields_text(conf->field_names, want->fields, &d);
        sd_buf_printf(&d, " (from %s)", id);
    } else {
        const sd_result_row_t *last = &rows[ri[nr - 1]];
        if (!sd_fields_eq(want->fields, last->fields)) {
            flags |= 1u << SD_G_WRONG_VALUE;
            sd_fields_text(conf->field_names, last->fields, &d);
            sd_buf_puts(&d, ", expected ");
            sd_fields_text(conf->field_names, want->fields, &d);
            sd_buf_printf(&d, " (from %s, the newest of the key's %lld events)", id, (long long)ne);
            if (last->writer) sd_buf_printf(&d, "; row by %s", last->writer);
            /* an older event whose values the row holds: the pipeline kept a stale one */
            for (int64_t i = ne - 1; i >= 0; i--) {
                const sd_result_event_t *o = &ev[ei[i]];
                if (o != want && o->fields && sd_fields_eq(o->fields, last->fields)) {
                    char oid[64];
                    sd_result_id(conf, o->seq, oid, sizeof(oid));
                    sd_buf_printf(&d, "; the row holds the values of %s, %s", oid, o->late ? "a late event the contract drops"
                                  : o->rank < want->rank ? "an older event"
                                  : o->rank == want->rank ? "an event of the same event time sent before it (on equal event times "
                                                            "the one sent last is the newest)"
                                                          : "an event the contract does not count");
                    break;
                }
            }
        }
        if (nr > 1) {
            flags |= 1u << SD_G_TWICE;
            sd_buf_printf(&d, "%s%lld rows for the key (an upsert keeps one)", flags & (1u << SD_G_WRONG_VALUE) ? "; " : "",
                          (long long)nr);
        }
    }
    sd_group_judged(out, 0, keys, flags, &d);
}

void sd_result_latest(const sd_result_conf_t *conf, const sd_result_event_t *ev, int64_t nev, const sd_result_row_t *rows,
                      int64_t nrows, sd_result_t *out) {
    memset(out, 0, sizeof(*out));
    out->rows = nrows;
    int64_t *ei = sd_util_xmalloc(sizeof(int64_t) * (size_t)(nev ? nev : 1)), ne = 0;
    for (int64_t i = 0; i < nev; i++)
        if (ev[i].copies || ev[i].late || ev[i].del) ei[ne++] = i;
    sd_sort_ev_base = ev;
    if (ne) qsort(ei, (size_t)ne, sizeof(int64_t), sd_cmp_ev_key);
    int64_t *ri = sd_util_xmalloc(sizeof(int64_t) * (size_t)(nrows ? nrows : 1));
    for (int64_t i = 0; i < nrows; i++) ri[i] = i;
    sd_sort_rows_base = rows;
    if (nrows) qsort(ri, (size_t)nrows, sizeof(int64_t), sd_cmp_row_idx); /* start_ms is 0 for every row: by key, then sink order */
    int64_t i = 0, j = 0;
    while (i < ne || j < nrows) {
        const char *keys;
        if (j >= nrows || (i < ne && strcmp(ev[ei[i]].keys, rows[ri[j]].keys) <= 0)) keys = ev[ei[i]].keys;
        else keys = rows[ri[j]].keys;
        int64_t i2 = i, j2 = j;
        while (i2 < ne && !strcmp(ev[ei[i2]].keys, keys)) i2++;
        while (j2 < nrows && !strcmp(rows[ri[j2]].keys, keys)) j2++;
        sd_latest_group(conf, ev, ei + i, i2 - i, rows, ri + j, j2 - j, keys, out);
        i = i2;
        j = j2;
    }
    free(ei);
    free(ri);
}

void sd_result_state_rule(const int64_t *read, const int64_t *state, int64_t n, sd_state_rule_t *out) {
    memset(out, 0, sizeof(*out));
    int64_t total = n ? read[n - 1] : 0;
    for (int64_t i = 0; i < n; i++)
        if (state[i] > out->peak) out->peak = state[i];
    if (n < 4 || total < 100) return;
    int64_t h = 0;
    while (h < n - 1 && read[h] * 2 < total) h++;
    /* the second half must be spread over batches, not one batch's jump */
    if (n - 1 - h < 3 || (total - read[h]) * 4 < total) return;
    out->judged = 1;
    out->half = state[h];
    out->final = state[n - 1];
    out->growth = out->final - out->half;
    out->read_after = total - read[h];
    out->unbounded = out->growth > 0 && out->growth * 10 > out->read_after;
}
