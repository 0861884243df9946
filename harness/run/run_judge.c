/* run_judge.c - the runner's judgement: read every sink, put each ledger
 * event into its bucket (recon.c), store anomalies with the writers of
 * each copy, counts, checks and latency in run.db (through the ledger's
 * reads and writes: no SQL here), and set the pipeline's own account
 * beside the ledger. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "observe.h"
#include "recon.h"
#include "result.h"
#include "run_int.h"

static int sd_cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    sd_run_t *r;
    const int64_t *lows;
    uint8_t *trimmed;
    int64_t n;
} sd_trim_ctx_t;
/* Mark ids whose every message failed, and ids in trimmed offsets. */

static void sd_run_mark_unsent(void *opaque, int64_t s) {
    sd_run_t *r = opaque;
    if (s >= 0 && s < r->sends.nseq) sd_seqs_unsend(&r->sends.seqs, s);
}

static void sd_run_mark_trimmed(void *opaque, int64_t s, int p, int64_t o) {
    sd_trim_ctx_t *t = opaque;
    if (p >= 0 && p < t->r->src.partitions && o < t->lows[p] && s >= 0 && s < t->r->sends.nseq && !t->trimmed[s]) {
        t->trimmed[s] = 1;
        t->n++;
    }
}

/* Events Kafka acknowledged and no longer holds (acked_lost): judged from
 * the ledger's acknowledged offsets against the partitions' ends now. */
static uint8_t *sd_run_acked_lost(sd_run_t *r, const int64_t *highs) {
    int64_t n;
    uint8_t *lost = sd_run_acked_lost_seqs(r, 0, highs, r->src.partitions, &n);
    if (!lost) return NULL;
    char w[512];
    snprintf(w, sizeof(w), "Kafka lost %lld events of topic %s after acknowledging them (the producer: %s); they are counted as "
             "acked_lost, not against the pipeline", (long long)n, r->src.topic, r->src.producer ? sd_producer_settings(r->src.producer) : "?");
    sd_ledger_warning(r->ledger, "acked-lost", w, NULL, 0);
    sd_run_say(r, "warning: %s", w);
    return lost;
}

static void sd_run_ledger_exceptions(sd_run_t *r, uint8_t **trimmed_out, uint8_t **vanished_out) {
    *trimmed_out = NULL;
    sd_ledger_each_unsent(r->ledger, sd_run_mark_unsent, r);
    /* the broker deleted data below its low watermark: those events cannot
     * be re-read by a pipeline that restarts from an older position */
    int any = 0;
    int64_t *lows = sd_util_xcalloc((size_t)r->src.partitions + 1, sizeof(int64_t));
    int64_t *highs = sd_util_xcalloc((size_t)r->src.partitions + 1, sizeof(int64_t));
    int all = 1;
    for (int p = 0; p < r->src.partitions; p++) {
        int64_t lo = 0, hi = 0;
        highs[p] = INT64_MAX;
        if (sd_broker_watermarks(r->broker, r->src.topic, p, &lo, &hi, NULL, 0) != SD_OK) all = 0;
        else {
            lows[p] = lo;
            highs[p] = hi;
            sd_ledger_watermark(r->ledger, sd_util_wall_ms(), p, lo, hi, NULL, 0);
            if (lo > 0) any = 1;
        }
    }
    if (any) {
        sd_trim_ctx_t t = {.r = r, .lows = lows, .trimmed = sd_util_xcalloc((size_t)(r->sends.nseq ? r->sends.nseq : 1), 1)};
        sd_ledger_each_position(r->ledger, sd_run_mark_trimmed, &t);
        char w[512];
        snprintf(w, sizeof(w), "the broker deleted %lld of the run's events from topic %s (low watermarks above the first "
                 "offsets sent%s); a loss among them cannot be attributed to the pipeline",
                 (long long)t.n, r->src.topic, sd_broker_is_embedded(r->broker) ? ": the embedded broker keeps about 5 MB per partition" : "");
        sd_ledger_warning(r->ledger, "trimmed", w, NULL, 0);
        sd_run_say(r, "warning: %s", w);
        *trimmed_out = t.trimmed;
    }
    /* a partition whose end could not be read cuts nothing (INT64_MAX) */
    *vanished_out = sd_run_acked_lost(r, highs);
    if (!all) sd_ledger_warning(r->ledger, "watermarks", "a source partition's end could not be read: events Kafka lost past it "
                                "after acknowledging them are not told apart from the pipeline's losses", NULL, 0);
    free(highs);
    free(lows);
}

static sd_err_t sd_run_store_counts(sd_run_t *r, const char *prefix, const sd_recon_counts_t *c, int has_state, char *err,
                                    size_t errlen) {
    int64_t values[128];
    const char *names[128];
    int n = 0;
    for (int i = 0; sd_scenario_count_names[i] && n < 128; i++) {
        const char *name = sd_scenario_count_names[i];
        /* a result model's counts only where one judged the sink */
        if (r->sc->model.kind == SD_MODEL_NONE && sd_scenario_is_group_count(name)) continue;
        /* the bounds only where the pipeline reported them */
        if (!has_state && sd_scenario_is_state_count(name)) continue;
        if ((!strcmp(name, "batches") || !strcmp(name, "batch_rows_max")) && c->batches < 0) continue;
        /* operational health: only the figures the run could measure */
        if (sd_scenario_is_bounds_count(name) && !sd_scenario_is_state_count(name) && sd_recon_count_get(c, name, NULL) < 0) continue;
        names[n] = name;
        values[n++] = sd_recon_count_get(c, name, NULL);
    }
    return sd_ledger_counts(r->ledger, prefix, names, values, n, err, errlen);
}

/* Batch windows of every incarnation, to say which batch wrote a row whose
 * sink knows its write time (a Kafka record's timestamp, for instance). */
typedef struct {
    int64_t t_ms, rows;
    int inc;
} sd_growth_t;

typedef struct {
    sd_batch_span_t *w;
    int n;
    sd_growth_t *g;        /* the sink's sampled row counts */
    int ng;
    const sd_run_t *r;     /* a pipeline of several instances: each incarnation's instance */
} sd_windows_t;

static void sd_run_add_window(void *opaque, int inc, int64_t batch, int64_t begin_ms, int64_t end_ms) {
    sd_windows_t *ws = opaque;
    ws->w = sd_util_xrealloc(ws->w, sizeof(*ws->w) * (size_t)(ws->n + 1));
    ws->w[ws->n++] = (sd_batch_span_t){.inc = inc, .batch = batch, .begin_ms = begin_ms, .end_ms = end_ms};
}

static void sd_run_add_growth(void *opaque, int64_t t_ms, int64_t rows, int inc) {
    sd_windows_t *ws = opaque;
    ws->g = sd_util_xrealloc(ws->g, sizeof(*ws->g) * (size_t)(ws->ng + 1));
    ws->g[ws->ng++] = (sd_growth_t){.t_ms = t_ms, .rows = rows, .inc = inc};
}

static void sd_run_load_windows(sd_run_t *r, const char *sink, sd_windows_t *ws) {
    memset(ws, 0, sizeof(*ws));
    ws->r = sd_run_instances(r) > 1 ? r : NULL;
    sd_ledger_each_batch_window(r->ledger, sd_run_add_window, ws);
    sd_ledger_each_growth(r->ledger, sink, sd_run_add_growth, ws);
}

static void sd_run_free_windows(sd_windows_t *ws) {
    free(ws->w);
    free(ws->g);
}

/* An append-only sink's row N (a label ending "line N") without a write
 * time: written between the last sample that had fewer rows and the first
 * that had N, by the incarnation running then (both named when an
 * incarnation started in between). */
static void sd_run_writer_by_growth(const sd_windows_t *ws, const char *label, size_t len, sd_buf_t *out) {
    const char *k = NULL;
    for (size_t i = 0; i + 6 <= len; i++)
        if (!memcmp(label + i, " line ", 6)) k = label + i + 6;
    if (!k) return;
    int64_t n = 0;
    for (; k < label + len && *k >= '0' && *k <= '9'; k++) n = n * 10 + (*k - '0');
    if (k != label + len || n <= 0) return;
    for (int i = 0; i < ws->ng; i++) {
        if (ws->g[i].rows < n) continue;
        int inc = ws->g[i].inc, before = i ? ws->g[i - 1].inc : inc;
        if (!inc) return;
        if (before && before != inc) sd_buf_printf(out, " (incarnation %d or %d, by the sink's growth)", before, inc);
        else sd_buf_printf(out, " (incarnation %d, by the sink's growth)", inc);
        return;
    }
}

/* The label with each "incarnation N" followed by N's instance. */
static void sd_run_label_instances(const sd_windows_t *ws, const char *label, size_t len, sd_buf_t *out) {
    size_t i = 0;
    while (i < len) {
        const char *m = memmem(label + i, len - i, "incarnation ", 12);
        size_t at = m ? (size_t)(m - label) + 12 : len;
        int n = 0;
        while (m && at < len && label[at] >= '0' && label[at] <= '9') n = n * 10 + (label[at++] - '0');
        sd_buf_append(out, label + i, at - i);
        int k = m ? sd_run_instance_of(ws->r, n) : 0;
        if (k) sd_buf_printf(out, " (instance %d)", k);
        i = at;
    }
}

static void sd_run_fmt_writer(void *opaque, const char *label, size_t len, int64_t t_ms, sd_buf_t *out) {
    const sd_windows_t *ws = opaque;
    if (len && ws->r) sd_run_label_instances(ws, label, len, out);
    else if (len) sd_buf_append(out, label, len);
    else sd_buf_putc(out, '?');
    if (memmem(label, len, "batch", 5) || memmem(label, len, "incarnation", 11)) return;
    if (t_ms == INT64_MIN) {
        sd_run_writer_by_growth(ws, label, len, out);
        return;
    }
    const sd_batch_span_t *best = sd_observe_batch_at(ws->w, ws->n, t_ms);
    int k = best && ws->r ? sd_run_instance_of(ws->r, best->inc) : 0;
    if (best && k) sd_buf_printf(out, " (incarnation %d of instance %d, batch %lld)", best->inc, k, (long long)best->batch);
    else if (best) sd_buf_printf(out, " (incarnation %d, batch %lld)", best->inc, (long long)best->batch);
}

/* Rows of a sink whose ids map to no ledger event. */
static sd_err_t sd_run_store_unexpected(sd_run_t *r, const char *sink, const sd_observe_t *obs, char *err, size_t errlen) {
    sd_ledger_unexpected_t *rows = sd_util_xmalloc(sizeof(*rows) * (size_t)(obs->n_unexpected ? obs->n_unexpected : 1));
    for (int64_t i = 0; i < obs->n_unexpected; i++)
        rows[i] = (sd_ledger_unexpected_t){.raw_id = obs->unexpected[i].id, .copies = obs->unexpected[i].copies,
                                           .writers = obs->unexpected[i].writers};
    sd_err_t e = sd_ledger_unexpected(r->ledger, sink, rows, obs->n_unexpected, err, errlen);
    free(rows);
    return e;
}

/* the reconciliation's context holds one detail per group bucket */
_Static_assert(sizeof(((sd_recon_ctx_t *)0)->group_detail) / sizeof(((sd_recon_ctx_t *)0)->group_detail[0]) == SD_G__COUNT,
               "recon.h: group_detail[] must hold one entry per sd_gbucket_t");

static sd_err_t sd_run_store_anomalies(sd_run_t *r, sd_sink_t *sink, const sd_recon_result_t *res,
                                       const sd_observe_t *obs, char *err, size_t errlen) {
    /* writers of every id that has rows in this sink and is an anomaly */
    int64_t nwant = 0;
    for (int b = 0; b < SD_B__COUNT; b++)
        if (b == SD_B_DUPLICATED || b == SD_B_LATE_LEAKED || b == SD_B_MALFORMED_LEAKED || b == SD_B_ABORTED_LEAKED || b == SD_B_VALID_QUARANTINED)
            nwant += res->lists[b].n;
    int64_t *want = sd_util_xmalloc(sizeof(int64_t) * (size_t)(nwant ? nwant : 1));
    int64_t k = 0;
    for (int b = 0; b < SD_B__COUNT; b++)
        if (b == SD_B_DUPLICATED || b == SD_B_LATE_LEAKED || b == SD_B_MALFORMED_LEAKED || b == SD_B_ABORTED_LEAKED)
            for (int64_t i = 0; i < res->lists[b].n; i++) want[k++] = res->lists[b].seq[i];
    nwant = k;
    qsort(want, (size_t)nwant, sizeof(int64_t), sd_cmp_i64);
    char **writers = sd_util_xcalloc((size_t)(nwant ? nwant : 1), sizeof(char *));
    sd_windows_t ws;
    sd_run_load_windows(r, sink->name, &ws);
    sd_err_t e = nwant ? sd_observe_writers(sink, r->tag, want, nwant, writers, sd_run_fmt_writer, &ws, err, errlen) : SD_OK;
    sd_run_free_windows(&ws);
    if (e) {
        for (int64_t i = 0; i < nwant; i++) free(writers[i]);
        free(writers);
        free(want);
        return e;
    }
    int64_t total = 0;
    for (int b = 0; b < SD_B__COUNT; b++)
        if (b != SD_B_DELIVERED && b != SD_B_QUARANTINED) total += res->lists[b].n;
    sd_ledger_anomaly_t *rows = sd_util_xmalloc(sizeof(*rows) * (size_t)(total ? total : 1));
    int64_t nrows = 0;
    for (int b = 0; b < SD_B__COUNT; b++) {
        if (b == SD_B_DELIVERED || b == SD_B_QUARANTINED) continue;
        const sd_recon_list_t *l = &res->lists[b];
        for (int64_t i = 0; i < l->n; i++) {
            int64_t *hit = bsearch(&l->seq[i], want, (size_t)nwant, sizeof(int64_t), sd_cmp_i64);
            rows[nrows++] = (sd_ledger_anomaly_t){.seq = l->seq[i], .bucket = sd_bucket_name((sd_bucket_t)b),
                                                  .copies = l->copies[i], .writers = hit ? writers[hit - want] : NULL};
        }
    }
    e = sd_ledger_anomalies(r->ledger, sink->name, rows, nrows, err, errlen);
    free(rows);
    if (!e) e = sd_run_store_unexpected(r, sink->name, obs, err, errlen);
    for (int64_t i = 0; i < nwant; i++) free(writers[i]);
    free(writers);
    free(want);
    return e;
}

static int sd_run_cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    const sd_run_t *r;
    const sd_observe_t *obs;
} sd_lat_ctx_t;

/* A target event's latency cell (SD_LAT_NONE for any other event). */
static uint32_t sd_run_lat_cell(const void *opaque, int64_t s) {
    const sd_lat_ctx_t *c = opaque;
    return sd_seqs_disp(&c->r->sends.seqs, s) == SD_DISP_TARGET ? sd_observe_lat_cell(c->obs, s) : SD_LAT_NONE;
}

/* Latency quantiles of a sink over the target events it holds (exact:
 * nearest rank, sd_util_ranks_u24 over the 3-byte cells), and a sample of
 * (seq, sent, seen) every nseq / 20,000 events into the table `latency`
 * for the charts; seen is sent plus the latency (a write time before the
 * send counts as the send). why says why there are none. */
static void sd_run_latency(sd_run_t *r, sd_observe_t *obs, const char *sink, sd_recon_counts_t *c, char *why, size_t wlen) {
    c->latency_p50_ms = c->latency_p95_ms = c->latency_p99_ms = c->latency_max_ms = -1;
    c->latency_samples = 0;
    snprintf(why, wlen, "sink %s gave no write time for any expected id (a time= column)", sink);
    /* write times from a pipeline whose clock the drill moved are on its
     * clock, not the harness's: no latency */
    if (r->faults.clock_moved_line)
        snprintf(why, wlen, "the drill moved the pipeline's clock (the clock step at line %d), so the write times it gave are not on "
                 "the harness's clock", r->faults.clock_moved_line);
    if (!obs->lat || r->faults.clock_moved_line) return;
    {
        int64_t stride = r->sends.nseq / 20000 + 1, k = 0, cap = r->sends.nseq / stride + 1;
        int64_t *seq = sd_util_xmalloc(sizeof(int64_t) * (size_t)cap * 3), *sent = seq + cap, *seen = sent + cap;
        for (int64_t s = 0; s < r->sends.nseq && k < cap; s += stride) {
            int64_t lat = sd_observe_latency(obs, s);
            if (sd_seqs_disp(&r->sends.seqs, s) != SD_DISP_TARGET || lat < 0) continue;
            seq[k] = s;
            sent[k] = r->t0_wall + sd_stamps_get(&r->sends.sent, s);
            seen[k] = sent[k] + lat;
            k++;
        }
        sd_ledger_latency(r->ledger, sink, seq, sent, seen, k, NULL, 0);
        free(seq);
    }
    uint32_t *big = NULL;
    int64_t n = 0, nbig = 0;
    for (int64_t s = 0; s < r->sends.nseq; s++) {
        if (sd_seqs_disp(&r->sends.seqs, s) != SD_DISP_TARGET) continue;
        uint32_t cell = sd_observe_lat_cell(obs, s);
        if (cell == SD_LAT_NONE) continue;
        n++;
        if (cell == SD_LAT_BIG) {
            big = sd_util_xrealloc(big, sizeof(uint32_t) * (size_t)(nbig + 1));
            big[nbig++] = sd_i64map_get(&obs->lat_big, s);
        }
    }
    if (n) {
        if (nbig) qsort(big, (size_t)nbig, sizeof(uint32_t), sd_run_cmp_u32); /* qsort takes no NULL, even for 0 */
        sd_lat_ctx_t lc = {r, obs};
        int64_t ks[4] = {(n - 1) * 50 / 100, (n - 1) * 95 / 100, (n - 1) * 99 / 100, n - 1}, q[4];
        sd_util_ranks_u24(sd_run_lat_cell, &lc, r->sends.nseq, big, nbig, ks, q, 4);
        c->latency_p50_ms = q[0];
        c->latency_p95_ms = q[1];
        c->latency_p99_ms = q[2];
        c->latency_max_ms = q[3];
        c->latency_samples = n;
    }
    free(big);
}

typedef struct {
    int64_t *t, *rows, *looked;
    int64_t n, cap;
} sd_run_samples_t;

static void sd_run_sample_cb(void *opaque, int64_t t_ms, int64_t rows, int64_t looked_ms) {
    sd_run_samples_t *v = opaque;
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 256;
        v->t = sd_util_xrealloc(v->t, sizeof(int64_t) * (size_t)v->cap);
        v->rows = sd_util_xrealloc(v->rows, sizeof(int64_t) * (size_t)v->cap);
        v->looked = sd_util_xrealloc(v->looked, sizeof(int64_t) * (size_t)v->cap);
    }
    v->t[v->n] = t_ms, v->rows[v->n] = rows, v->looked[v->n++] = looked_ms;
}

/* The sink's write times held against the harness's own looks at it
 * (sd_observe_bound), before any latency or recovery figure is taken from
 * them: where they disagree, what the harness could read wins, and a
 * warning says by how much. read_ms: when the final read began. */
static sd_err_t sd_run_bound_by_samples(sd_run_t *r, sd_observe_t *obs, const sd_sink_t *sink, int idx, int64_t read_ms, char *err,
                                        size_t errlen) {
    if (!obs->lat) return SD_OK;
    sd_run_samples_t v = {0};
    sd_err_t e = sd_ledger_each_sample(r->ledger, sink->name, sd_run_sample_cb, &v, err, errlen);
    if (!e) {
        sd_observe_bound_t b;
        int64_t last = r->sampling.sampled ? r->sampling.looked_wall[idx] : INT64_MIN;
        sd_observe_bound(obs, v.t, v.rows, v.looked, v.n, last, read_ms, &b);
        if (b.copied) {
            char w[512];
            snprintf(w, sizeof(w), "sink %s: %lld of %lld rows carry a time within %d ms of their own send or before it: the input "
                     "record's time copied to the output (as Kafka Streams and Quix Streams do) or an event time, not when they were "
                     "written; their latency and the recovery figures are from the look of the harness that first counted them",
                     sink->name, (long long)b.copied, (long long)b.timed, SD_BOUND_COPIED_MS);
            e = sd_ledger_warning(r->ledger, "write-times-copied", w, err, errlen);
            sd_run_say(r, "note: %s", w);
        } else if (b.rows_late) {
            char w[512];
            snprintf(w, sizeof(w), "sink %s: %lld rows became readable up to %.1f s after the write times they carry (a look of "
                     "the harness after such a time still counted fewer rows; a row written in a transaction is readable at its "
                     "commit): their latency and the recovery figures are from the look that first counted them", sink->name, (long long)b.rows_late, (double)b.max_gap_ms / 1000.0);
            e = sd_ledger_warning(r->ledger, "write-times-early", w, err, errlen);
            sd_run_say(r, "note: %s", w);
        }
    }
    free(v.t);
    free(v.rows);
    free(v.looked);
    return e;
}

/* A sink of ids read in full into obs, its write times held against the
 * harness's looks at it (freed on a failure). */
static sd_err_t sd_run_read_sink(sd_run_t *r, sd_sink_t *sink, int idx, sd_observe_t *obs, char *err, size_t errlen) {
    int64_t read_ms = sd_util_wall_ms();
    sd_err_t e = sd_observe_sink(sink, r->tag, r->sends.nseq, r->t0_wall, &r->sends.sent, obs, err, errlen);
    if (!e && (e = sd_run_bound_by_samples(r, obs, sink, idx, read_ms, err, errlen))) sd_observe_free(obs);
    return e;
}

/* A result model judged a share of the groups a correct pipeline may owe
 * (the rest pending): the count groups_judged_pct, and a warning on the
 * console and in the reports when it is less than half, so that a drill
 * judging a sliver of what it expected does not read as a full pass. */
#define SD_RUN_JUDGED_WARN_PCT 50
static void sd_run_judged_share(sd_run_t *r, const sd_sink_t *sink, sd_recon_counts_t *c) {
    int64_t all = c->groups_expected + c->groups_pending;
    c->groups_judged_pct = all ? c->groups_expected * 100 / all : 0;
    if (!all || c->groups_judged_pct >= SD_RUN_JUDGED_WARN_PCT) return;
    char w[512];
    snprintf(w, sizeof(w), "sink %s: the result model judged %lld of the %lld groups a correct pipeline may owe (%lld%%); the other "
             "%lld are pending (a final watermark short of them, events that may have reached the pipeline late, or scans a join's grace period may hold back); `expect "
             "groups_judged_pct>=N` makes a drill hold to a share", sink->name, (long long)c->groups_expected, (long long)all,
             (long long)c->groups_judged_pct, (long long)c->groups_pending);
    sd_ledger_warning(r->ledger, "judged-share", w, NULL, 0);
    sd_run_say(r, "warning: %s", w);
}

/* A summary of the pipeline's own account (ledger.c compares it). */
static void sd_run_account_warning(void *opaque, int disagrees, const char *text) {
    sd_run_t *r = opaque;
    sd_ledger_warning(r->ledger, disagrees ? "account-disagrees" : "account", text, NULL, 0);
    if (disagrees) sd_run_say(r, "warning: %s", text);
}

typedef struct {
    const int64_t *consumed;
    int partitions;
    uint8_t *pending;
    int64_t nseq;
} sd_pending_ctx_t;

/* The array is made at the first pending id: a pipeline that caught up
 * costs no byte per event. */
static void sd_run_mark_pending(void *opaque, int64_t s, int p, int64_t o) {
    sd_pending_ctx_t *c = opaque;
    if (p >= 0 && p < c->partitions && s >= 0 && s < c->nseq && o >= (c->consumed[p] < 0 ? 0 : c->consumed[p])) {
        if (!c->pending) c->pending = sd_util_xcalloc((size_t)c->nseq, 1);
        c->pending[s] = 1;
    }
}

/* Ids the pipeline has not consumed yet, as far as the harness can see:
 * with the offsets its progress reports (commit markers' offsets=, Spark's
 * checkpoint, the consumer group's commits), an id with a message at or
 * past them; without offsets, every id when the newest incarnation is a
 * restart that has neither reported a batch nor grown the target since it
 * started. Only while the pipeline runs or was stopped by a step. NULL
 * when nothing is pending. */
uint8_t *sd_run_pending(sd_run_t *r, char *why, size_t wlen) {
    if (!r->sup) return NULL;
    /* a pipeline that ended by itself while the drill wanted it running
     * will not catch up: what it left is lost */
    sd_sup_state_t st;
    sd_sup_state(r->sup, &st);
    if (!st.running && r->pipe.wanted) return NULL;
    sd_progress_poll(r, NULL, 0); /* the freshest committed offsets */
    uint8_t *pending = NULL;
    if (r->prog.consumed && r->prog.last_offsets_mono) {
        sd_pending_ctx_t c = {.consumed = r->prog.consumed, .partitions = r->src.partitions, .pending = NULL, .nseq = r->sends.nseq};
        sd_ledger_each_position(r->ledger, sd_run_mark_pending, &c);
        if (!(pending = c.pending)) return NULL;
        sd_buf_t b;
        sd_buf_init(&b);
        for (int p = 0; p < r->src.partitions; p++)
            sd_buf_printf(&b, "%s%d:%lld", p ? "," : "", p, (long long)(r->prog.consumed[p] < 0 ? 0 : r->prog.consumed[p]));
        snprintf(why, wlen, "the pipeline's progress says it has consumed up to offsets %s of topic %s", b.data ? b.data : "",
                 r->src.topic);
        sd_buf_free(&b);
        return pending;
    }
    int64_t rows = -1;
    if (r->pipe.incarnations >= 2 && r->prog.inc_rows0 >= 0 && r->prog.bs.events == r->prog.inc_events0 && r->sink.target &&
        sd_sink_count(r->sink.target, 1, &rows, NULL, 0) == SD_OK && rows == r->prog.inc_rows0) {
        pending = sd_util_xmalloc((size_t)(r->sends.nseq ? r->sends.nseq : 1));
        memset(pending, 1, (size_t)(r->sends.nseq ? r->sends.nseq : 1));
        snprintf(why, wlen, "incarnation %d, a restart, has neither reported a batch nor added a row to the target since it "
                 "started (a consumer group still waiting for its dead member's session to expire looks like this)",
                 r->pipe.incarnations);
    }
    return pending;
}

/* What the checks judge a sink by. */
static sd_judged_t sd_run_judged_by(const sd_run_t *r, int by_model, int by_fields) {
    if (by_fields) return SD_JUDGE_ROWS;
    if (!by_model) return SD_JUDGE_IDS;
    switch ((sd_model_kind_t)r->sc->model.kind) {
    case SD_MODEL_JOIN: return SD_JUDGE_JOIN;
    case SD_MODEL_LATEST: return SD_JUDGE_LATEST;
    default: return r->sc->model.output ? SD_JUDGE_WINDOWS_UPDATE : SD_JUDGE_WINDOWS_APPEND;
    }
}

/* Reconcile every target sink. Sets *failed to the number of failed checks. */
typedef struct {
    int64_t *commit, *bytes, n, cap;
} sd_files_t;

static void sd_run_file_cb(void *opaque, int64_t commit, int64_t bytes) {
    sd_files_t *f = opaque;
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 64;
        f->commit = sd_util_xrealloc(f->commit, sizeof(int64_t) * (size_t)f->cap);
        f->bytes = sd_util_xrealloc(f->bytes, sizeof(int64_t) * (size_t)f->cap);
    }
    f->commit[f->n] = commit;
    f->bytes[f->n++] = bytes;
}

/* The small-file figures of a sink that logs its files (Delta, a Spark
 * file sink): files its commits added, the most one commit added, their
 * median size; -1 for a sink without such a log. */
static void sd_run_sink_files(sd_sink_t *sink, sd_recon_counts_t *c) {
    c->files_written = c->files_per_batch_max = c->file_bytes_p50 = -1;
    sd_files_t f = {0};
    if (sd_sink_files(sink, sd_run_file_cb, &f, NULL, 0) == SD_OK) {
        c->files_written = f.n;
        c->files_per_batch_max = 0;
        qsort(f.commit, (size_t)f.n, sizeof(int64_t), sd_cmp_i64);
        for (int64_t i = 0, run = 0; i < f.n; i++) {
            run = i && f.commit[i] == f.commit[i - 1] ? run + 1 : 1;
            if (run > c->files_per_batch_max) c->files_per_batch_max = run;
        }
        int64_t k = 0;
        for (int64_t i = 0; i < f.n; i++)
            if (f.bytes[i] >= 0) f.bytes[k++] = f.bytes[i];
        if (k) {
            qsort(f.bytes, (size_t)k, sizeof(int64_t), sd_cmp_i64);
            c->file_bytes_p50 = f.bytes[(k - 1) / 2];
        }
    }
    free(f.commit);
    free(f.bytes);
}

/* The pipeline's own account into a sink's counts: its batches, its
 * state, its operational health (run_bounds.c). */
static void sd_run_bounds_counts(const sd_bounds_t *b, sd_recon_counts_t *c) {
    c->batches = b->batches;
    c->batch_rows_max = b->batch_rows_max;
    c->state_rows_peak = b->state_rows_peak;
    c->state_rows_final = b->state_rows_final;
    c->state_rows_half = b->state_rows_half;
    c->state_growth = b->state_growth;
    c->state_unbounded = b->state_unbounded;
    c->batch_p50_ms = b->health.batch_p50_ms;
    c->batch_p95_ms = b->health.batch_p95_ms;
    c->batch_max_ms = b->health.batch_max_ms;
    c->throughput_rps = b->health.throughput_rps;
    c->backlog_max = b->health.backlog_max;
    c->restarts = b->health.restarts;
    c->log_errors = b->health.log_errors;
    c->log_warnings = b->health.log_warnings;
    c->executors_lost = b->health.executors_lost;
    c->tasks_lost = b->health.tasks_lost;
    c->job_restarts = b->health.job_restarts;
    c->checkpoints_completed = b->health.checkpoints_completed;
    c->checkpoints_failed = b->health.checkpoints_failed;
    c->checkpoint_max_ms = b->health.checkpoint_max_ms;
    c->checkpoint_bytes_max = b->health.checkpoint_bytes_max;
}

/* The deliveries the contract quarantines (late, future or malformed ones
 * a step sent) against the quarantine sink's rows of delivery ids: found
 * or vanished; the rows found leave the quarantine's unexpected ids. */
typedef struct {
    uint8_t *want;   /* by delivery seq: 1 expected in the quarantine, 2 found there */
    int64_t n, expected;
} sd_run_side_quarantine_t;

static void sd_run_side_quarantined(void *opaque, int64_t seq, int64_t t_ms, const char *key, const char *disp) {
    sd_run_side_quarantine_t *q = opaque;
    (void)t_ms, (void)key;
    if (seq < 0 || strcmp(disp, "quarantine")) return;
    if (seq >= q->n) {
        int64_t n = seq * 2 + 64;
        q->want = sd_util_xrealloc(q->want, (size_t)n);
        memset(q->want + q->n, 0, (size_t)(n - q->n));
        q->n = n;
    }
    if (!q->want[seq]) q->expected++;
    q->want[seq] = 1;
}

typedef struct {
    sd_run_t *r;
    sd_run_side_quarantine_t *q;
    size_t taglen;
    int64_t found;
} sd_run_side_claim_t;

static int sd_run_side_claim(void *opaque, const sd_unexpected_t *u) {
    sd_run_side_claim_t *c = opaque;
    int64_t seq;
    if (sd_events_delivery_id_parse(c->r->tag, c->taglen, u->raw, u->rawlen, &seq) || seq >= c->q->n || c->q->want[seq] != 1)
        return 0;
    c->q->want[seq] = 2;
    c->found++;
    return 1;
}

static void sd_run_deliveries_quarantine(sd_run_t *r, sd_observe_t *qobs, int64_t *found, int64_t *vanished) {
    *found = *vanished = 0;
    if (!r->side.topic) return;
    sd_run_side_quarantine_t q = {0};
    sd_ledger_each_side(r->ledger, sd_run_side_quarantined, &q);
    sd_run_side_claim_t c = {.r = r, .q = &q, .taglen = strlen(r->tag)};
    if (q.expected) sd_observe_claim_unexpected(qobs, sd_run_side_claim, &c);
    *found = c.found;
    *vanished = q.expected - c.found;
    free(q.want);
}

/* The quarantine sink read (the run's ids counted in q), and the
 * deliveries the contract sends there: found (qdel[0]) and vanished. */
static sd_err_t sd_run_read_quarantine(sd_run_t *r, sd_observe_t *q, int64_t qdel[2], char *err, size_t errlen) {
    int64_t t0 = sd_util_mono_ms();
    sd_err_t e = sd_observe_sink(r->sink.quarantine, r->tag, r->sends.nseq, r->t0_wall, NULL, q, err, errlen);
    if (e) return e;
    sd_run_say(r, "read quarantine sink %s: %lld rows in %.2fs", r->sink.quarantine->name, (long long)q->rows,
               (double)(sd_util_mono_ms() - t0) / 1000.0);
    sd_run_deliveries_quarantine(r, q, &qdel[0], &qdel[1]);
    return SD_OK;
}

/* What the readers noticed besides rows, once all are read (files a killed
 * Spark batch left behind, an output transaction left open, ...). */
static void sd_run_sink_notes(sd_run_t *r) {
    for (int si = 0; si < r->sink.n; si++) {
        char *note = sd_sink_notes(r->sink.v[si]);
        if (note) {
            char *w = sd_util_fmt("sink %s: %s", r->sink.v[si]->name, note);
            sd_ledger_warning(r->ledger, "sink-note", w, NULL, 0);
            sd_run_say(r, "note: %s", w);
            free(w);
            free(note);
        }
    }
}

/* A sink read read_uncommitted whose every row is of an aborted or open
 * transaction: why it is not the pipeline's output, in why; NULL when it
 * is not so. */
static const char *sd_run_uncommitted_why(sd_sink_t *sink, int64_t rows, char *why, size_t wlen) {
    if (rows <= 0 || sd_sink_committed(sink) != 0) return NULL;
    snprintf(why, wlen, "sink %s was read isolation=read_uncommitted: all %lld of its rows are of aborted or open transactions, "
             "none committed", sink->name, (long long)rows);
    return why;
}

/* deliveries lag= still held when the run ended: never sent, said */
static void sd_run_note_held(sd_run_t *r) {
    if (!r->side.held_n) return;
    char w[256];
    snprintf(w, sizeof(w), "%lld deliveries held back by lag=%.1fs were never sent: the run ended before they were due",
             (long long)r->side.held_n, (double)r->sc->delivery_lag_ms / 1000.0);
    sd_ledger_warning(r->ledger, "deliveries-held", w, NULL, 0);
    sd_run_say(r, "note: %s", w);
}

/* Each `await exit` as a check: did the pipeline end by itself (no
 * writing changes it, so a failure is settled). */
static sd_err_t sd_run_judge_ends(sd_run_t *r, int *check_idx, int *failed, int *settled, char *err, size_t errlen) {
    sd_err_t e = SD_OK;
    for (int i = 0; !e && i < r->verdict.nends; i++) {
        const struct sd_run_end_s *end = &r->verdict.ends[i];
        char name[64];
        snprintf(name, sizeof(name), "ended (line %d)", end->line);
        e = sd_ledger_check(r->ledger, (*check_idx)++, name, end->ok, end->expected, end->actual, NULL, err, errlen);
        if (!end->ok) {
            (*failed)++;
            (*settled)++;
        }
    }
    return e;
}

sd_err_t sd_run_reconcile(sd_run_t *r, uint8_t *pending, int *failed, int *settled, int *unjudgeable, int *unconsumed, char *err,
                          size_t errlen) {
    *failed = *settled = *unjudgeable = *unconsumed = 0;
    sd_err_t e = sd_ledger_commit(r->ledger, err, errlen);
    if (e) { free(pending); return e; }
    /* a last look at every sink, the pipeline stopped: what the final read
     * finds was there by then (sd_run_bound_by_samples) */
    if ((e = sd_run_sample(r, 1, err, errlen))) { free(pending); return e; }
    /* what the producer's queues and the ledger's batches held while the
     * run sent is free by now: give it back before the sinks' per-event
     * arrays are made (the run's peak memory is here) */
    malloc_trim(0);
    sd_run_record_edges(r);
    sd_run_note_held(r);
    sd_progress_group_last_look(r);
    uint8_t *trimmed = NULL, *vanished = NULL;
    sd_run_ledger_exceptions(r, &trimmed, &vanished);
    r->sends.acked_lost = vanished;
    int64_t nmaybe = 0;
    uint8_t *maybe_late = sd_run_late_rule(r, &nmaybe);
    r->sends.maybe_late = maybe_late;
    sd_recon_ledger_t L = {.nseq = r->sends.nseq, .seqs = &r->sends.seqs, .trimmed = trimmed, .vanished = vanished, .pending = pending,
                           .expect_sends = r->sc->keep_duplicates, .maybe_late = maybe_late};
    sd_observe_t qobs;
    memset(&qobs, 0, sizeof(qobs));
    int64_t qdel[2] = {0, 0}; /* deliveries the contract quarantines: found there, vanished */
    int have_q = r->sink.quarantine != NULL;
    if (have_q && (e = sd_run_read_quarantine(r, &qobs, qdel, err, errlen))) goto out;
    /* the same for every sink: what reached Kafka, what did not */
    int64_t produced = sd_ledger_count_produced(r->ledger);
    int64_t send_failed = sd_ledger_count_send_failed(r->ledger);
    sd_ledger_compare_account(r->ledger, produced, sd_progress_spark_ranges, sd_run_account_warning, r);
    /* expect steps */
    sd_bounds_t bounds;
    sd_run_bounds(r, &bounds);
    const sd_step_t **expects = sd_util_xcalloc((size_t)r->sc->nsteps + 1, sizeof(*expects));
    int nexp = 0;
    for (int i = 0; i < r->sc->nsteps; i++)
        if (r->sc->steps[i].kind == SD_STEP_EXPECT) expects[nexp++] = &r->sc->steps[i];
    int check_idx = 0;
    for (int si = 0; si < r->sink.n; si++) {
        sd_sink_t *sink = r->sink.v[si];
        if (sink->is_quarantine) continue;
        int primary = sink == r->sink.target;
        const sd_model_ops_t *model = sd_run_model_for(r, sink);
        int by_model = model && model->groups;
        sd_observe_t obs;
        memset(&obs, 0, sizeof(obs));
        int64_t t0 = sd_util_mono_ms();
        if (!by_model && (e = sd_run_read_sink(r, sink, si, &obs, err, errlen))) {
            free(expects);
            goto out;
        }
        double read_s = (double)(sd_util_mono_ms() - t0) / 1000.0;
        sd_recon_result_t res;
        memset(&res, 0, sizeof(res));
        sd_recon_ledger_t LS = L;
        LS.by_model = by_model;
        sd_recon_classify(&LS, by_model ? NULL : &obs.copies, have_q ? &qobs.copies : NULL, obs.rows, obs.unexpected_rows,
                          obs.unexpected_unique, &res);
        char *gdetail[SD_G__COUNT] = {0};
        int by_fields = model && !model->groups;
        if (model && (e = model->judge(r, sink, &res.counts, gdetail, err, errlen))) {
            sd_recon_result_free(&res);
            if (!by_model) sd_observe_free(&obs);
            free(expects);
            goto out;
        }
        if (by_model) sd_run_judged_share(r, sink, &res.counts);
        res.counts.quarantine_unexpected = have_q ? qobs.unexpected_rows : 0;
        res.counts.deliveries_quarantined = qdel[0], res.counts.deliveries_vanished = qdel[1];
        res.counts.produced = produced;
        res.counts.send_failed = send_failed;
        res.counts.late_sent = r->sends.late_sent;
        res.counts.late_maybe = nmaybe;
        res.counts.malformed_sent = r->sends.malformed_sent;
        res.counts.replayed = r->sends.replayed;
        res.counts.crashes = r->pipe.crashes;
        sd_run_bounds_counts(&bounds, &res.counts);
        sd_run_sink_files(sink, &res.counts);
        res.counts.aborted_in_target = sd_sink_aborted(sink);
        char uncommitted[200];
        char latency_why[300];
        sd_run_latency(r, &obs, sink->name, &res.counts, latency_why, sizeof(latency_why));
        *unjudgeable += (int)res.counts.unjudgeable;
        if (primary) *unconsumed += (int)res.counts.not_yet_consumed;
        if (!by_model)
            sd_run_say(r, "read sink %s: %lld rows in %.2fs: %lld unique, %lld duplicated, %lld lost, %lld unexpected", sink->name,
                       (long long)obs.rows, read_s, (long long)res.counts.observed_unique, (long long)res.counts.duplicated,
                       (long long)res.counts.lost, (long long)res.counts.unexpected);
        sd_recon_ctx_t ctx = {
            .profile = r->sc->profile,
            .has_quarantine_sink = have_q,
            .malformed_to_quarantine = r->sc->malformed_disp == SD_DISP_QUARANTINE,
            .keep_duplicates = r->sc->keep_duplicates,
            .model = sd_run_judged_by(r, by_model, by_fields),
            .expects = primary ? expects : NULL,
            .nexpects = primary ? nexp : 0,
            .bounds_why = bounds.why[0] ? bounds.why : NULL,
            .bounds_detail = bounds.detail[0] ? bounds.detail : NULL,
            .health_why = bounds.health.why[0] ? bounds.health.why : NULL,
            .latency_why = latency_why[0] ? latency_why : NULL,
            .uncommitted_why = sd_run_uncommitted_why(sink, obs.rows, uncommitted, sizeof(uncommitted)),
            .fmt_id = sd_run_fmt_id,
            .fmt_opaque = r};
        for (int b = 0; b < SD_G__COUNT; b++) ctx.group_detail[b] = gdetail[b];
        sd_checks_t checks;
        sd_recon_checks(&ctx, &res, &checks);
        for (int b = 0; b < SD_G__COUNT; b++) free(gdetail[b]);
        *failed += sd_checks_failed(&checks);
        *settled += sd_checks_settled(&checks);
        if (checks.unmeasured && !r->verdict.unmeasured++) snprintf(r->verdict.unmeasured_why, sizeof(r->verdict.unmeasured_why), "%s", checks.unmeasured_why);
        char prefix[128];
        snprintf(prefix, sizeof(prefix), "%s%s", primary ? "" : sink->name, primary ? "" : ".");
        if (!e) e = sd_run_store_counts(r, prefix, &res.counts, bounds.has_state, err, errlen);
        if (!e) e = sd_run_store_anomalies(r, sink, &res, &obs, err, errlen);
        /* quarantine anomalies: rows that map to nothing */
        if (!e && have_q && primary) e = sd_run_store_unexpected(r, r->sink.quarantine->name, &qobs, err, errlen);
        if (!e) {
            for (int i = 0; i < checks.n && !e; i++) {
                char name[256];
                snprintf(name, sizeof(name), "%s%s", prefix, checks.v[i].name);
                e = sd_ledger_check(r->ledger, check_idx++, name, checks.v[i].pass, checks.v[i].expected, checks.v[i].actual,
                                    checks.v[i].detail, err, errlen);
            }
            for (int i = 0; i < checks.n_not_judged; i++) sd_ledger_warning(r->ledger, "not-judged", checks.not_judged[i], NULL, 0);
        }
        /* the run's anomalies are stored: how it recovered from each fault */
        if (!e && primary)
            e = sd_run_recovery(r, by_model ? NULL : &obs, sink->name, (const sd_step_t *const *)expects, nexp, &check_idx, failed, err, errlen);
        sd_checks_free(&checks);
        sd_recon_result_free(&res);
        sd_observe_free(&obs);
        if (e) break;
    }
    if (!e) e = sd_run_judge_ends(r, &check_idx, failed, settled, err, errlen);
    sd_run_sink_notes(r);
    free(expects);
    if (!e) sd_ledger_index_for_reports(r->ledger);
out:
    if (have_q) sd_observe_free(&qobs);
    free(trimmed);
    r->sends.maybe_late = NULL;
    free(maybe_late);
    r->sends.acked_lost = NULL;
    free(vanished);
    free(pending);
    if (!e) e = sd_ledger_commit(r->ledger, err, errlen);
    return e;
}



