/* result_join.c - the join result model (see result.h).
 *
 * What a correct stream-stream join writes, from the events alone:
 *
 *   matched pairs   every (left, right) with equal keys and right.t - left.t
 *                   in [lower, upper]: each once, whatever the type
 *   left nulls      (left, null) for a left event no right event matches
 *                   (left and full outer): final once the watermark has
 *                   passed left.t + upper (no right event that could match
 *                   can still come: it would be late)
 *   right nulls     (null, right) for an unmatched right event (full
 *                   outer): final once the watermark has passed
 *                   right.t - lower
 *
 * A null row that must be final is judged when its horizon is before the
 * final watermark; one whose horizon lies after it is not final yet (a
 * row for it was emitted before it could be known: emitted_early); a
 * horizon exactly at the final watermark is pending, and so is one between
 * the watermark of an engine that keeps one per source (Spark: the newest
 * event time of each source) and the lower one of an engine that keeps one
 * per Kafka partition (Flink: the oldest partition's newest), where
 * engines rightly differ. A null row for an event that did match is its own flag,
 * null_for_matched: the outer-join bug of emitting the null row first and
 * the pair later.
 *
 * An event that reached Kafka after others had put a watermark past its
 * event time (maybe_late: a delivery held back behind a burst of scans)
 * is dropped as late by an engine that read those first and joined by
 * one that did not: the race of its arrival decides. Every group that
 * rests on it (its pairs; the null row of an event matched only through
 * it, or of the event itself) is pending either way; a null row beside a
 * pair the sink holds is still null_for_matched, and a group written
 * twice is still written twice. A maybe-late event that matches an event
 * that was not late owes no null row either way (dropped: no row at all;
 * joined: the pair), so a null row for it is null_for_matched: pending
 * covers only what the race truly leaves open.
 *
 * An as-of join (a stream-table join on a table with history) owes each
 * left event one row: the newest right event of its key at or before its
 * event time, or null; final when written. A right event handed to Kafka
 * after the left one may or may not have been read first: when that can
 * change the answer, every possible answer is pending (sd_asof_answers).
 *
 * The expected groups and the sink's rows are sorted by (left, right) and
 * merged in one walk. O((pairs + rows) log). */
#include "result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct {
    int64_t left, right;   /* -1 null */
    int kind;              /* 0 pair, 1 left null, 2 right null */
    int64_t horizon;       /* null rows: when it is final */
    int maybe;             /* rests on an event that may have been dropped as late: pending either way */
    int held;              /* as-of with a grace period: no scan of its key is newer by the grace, so the engine
                              may hold it back still; pending when absent */
} sd_jexp_t;

static int sd_cmp_lr(int64_t al, int64_t ar, int64_t bl, int64_t br) {
    if (al != bl) return al < bl ? -1 : 1;
    return ar < br ? -1 : ar > br;
}
static int sd_cmp_jexp(const void *a, const void *b) {
    const sd_jexp_t *x = a, *y = b;
    return sd_cmp_lr(x->left, x->right, y->left, y->right);
}
static int sd_cmp_jrow(const void *a, const void *b) {
    const sd_join_row_t *x = a, *y = b;
    int c = sd_cmp_lr(x->left, x->right, y->left, y->right);
    return c ? c : strcmp(x->writer ? x->writer : "", y->writer ? y->writer : "");
}

/* "N rows: by W1, by W2, ..." for the copies rs[j..j2) of one group: each
 * copy's writer, so a duplicate names the restart that wrote each (at most
 * four named) */
static char *sd_join_copies(const char *a, const char *b, const sd_join_row_t *rs, int64_t j, int64_t j2) {
    sd_buf_t d;
    sd_buf_init(&d);
    sd_buf_printf(&d, "%s + %s: %lld rows:", a, b, (long long)(j2 - j));
    for (int64_t k = j; k < j2 && k < j + 4; k++)
        sd_buf_printf(&d, "%s by %s", k > j ? "," : "", rs[k].writer ? rs[k].writer : "an unnamed writer");
    if (j2 - j > 4) sd_buf_printf(&d, " and %lld more", (long long)(j2 - j - 4));
    return sd_buf_steal(&d);
}

static const sd_join_event_t *sd_jsort_base;
static int sd_cmp_jev(const void *a, const void *b) {
    const sd_join_event_t *x = &sd_jsort_base[*(const int64_t *)a], *y = &sd_jsort_base[*(const int64_t *)b];
    int c = strcmp(x->key, y->key);
    return c ? c : (x->t_ms < y->t_ms ? -1 : x->t_ms > y->t_ms);
}

static int64_t *sd_jsorted(const sd_join_event_t *ev, int64_t n) {
    int64_t *ix = sd_util_xmalloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) ix[i] = i;
    sd_jsort_base = ev;
    if (n) qsort(ix, (size_t)n, sizeof(int64_t), sd_cmp_jev);
    return ix;
}

static void sd_jid(const sd_join_conf_t *c, int side, int64_t seq, char *out, size_t len) {
    if (seq == -1) snprintf(out, len, "null");
    else if (seq < 0) snprintf(out, len, "(not an id of this run)");
    else if (side == 0 && c->fmt_left) c->fmt_left(c->fmt_opaque, seq, out, len);
    else if (side == 1 && c->fmt_right) c->fmt_right(c->fmt_opaque, seq, out, len);
    else snprintf(out, len, "#%lld", (long long)seq);
}

static void sd_jadd(const sd_join_conf_t *c, sd_result_t *out, int64_t l, int64_t r, int64_t t, unsigned flags, char *detail) {
    char a[64], b[64], keys[160];
    sd_jid(c, 0, l, a, sizeof(a));
    sd_jid(c, 1, r, b, sizeof(b));
    snprintf(keys, sizeof(keys), "%s\x1f%s", a, b);
    out->anomalies = sd_util_xrealloc(out->anomalies, sizeof(*out->anomalies) * (size_t)(out->nanomalies + 1));
    out->anomalies[out->nanomalies++] = (sd_result_group_t){.start_ms = t, .keys = sd_util_strdup(keys), .flags = flags, .detail = detail};
}

/* Where a pair's distance d (right.t - left.t) lies against the range's
 * bounds, when on one or 1 ms beside it: "; the delivery lies exactly on
 * the join range's upper bound" (an off-by-one bug's signature), or "". */
static const char *sd_join_edge(const sd_join_conf_t *c, int64_t d, char *buf, size_t len) {
    static const char *const where[] = {"1 ms before", "exactly on", "1 ms after"};
    int64_t off = d - c->upper_ms;
    const char *bound = "upper";
    if (off < -1 || off > 1) off = d - c->lower_ms, bound = "lower";
    if (off < -1 || off > 1) return "";
    snprintf(buf, len, "; the delivery lies %s the join range's %s bound", where[off + 1], bound);
    return buf;
}

static void sd_jpush(sd_jexp_t **x, int64_t *n, int64_t *cap, sd_jexp_t v) {
    if (*n == *cap) *x = sd_util_xrealloc(*x, sizeof(**x) * (size_t)(*cap *= 2));
    (*x)[(*n)++] = v;
}

/* Is right event b newer for an as-of lookup than a (event time, then the
 * later hand-over: a table keeps the last write at one time)? */
static int sd_asof_newer(const sd_join_event_t *R, int64_t b, int64_t a) {
    if (a < 0) return 1;
    return R[b].t_ms != R[a].t_ms ? R[b].t_ms > R[a].t_ms : R[b].arrival > R[a].arrival;
}

/* As-of: left event a's answers, given the right events of its key
 * ri[j..j2) (sorted by event time). The answer is the newest of them at or
 * before its time that had reached Kafka when the engine read it; the
 * harness knows the hand-over order, not when the engine read: the
 * deliveries handed over after the scan may or may not have been read
 * first. One answer is certain; several are each pending. */
static void sd_asof_answers(const sd_join_event_t *L, int64_t a, const sd_join_event_t *R, const int64_t *ri, int64_t j, int64_t j2,
                            sd_jexp_t **x, int64_t *n, int64_t *cap, uint8_t *lmatched) {
    int64_t best = -1, nans = 0, first = *n;
    for (int64_t b = j; b < j2; b++)
        if (R[ri[b]].t_ms <= L[a].t_ms && R[ri[b]].arrival < L[a].arrival && sd_asof_newer(R, ri[b], best)) best = ri[b];
    sd_jpush(x, n, cap, (sd_jexp_t){.left = L[a].seq, .right = best < 0 ? -1 : R[best].seq, .kind = best < 0, .horizon = INT64_MIN + 1});
    nans++;
    /* the later ones, in hand-over order, each a possible newer answer */
    for (;;) {
        int64_t next = -1;
        for (int64_t b = j; b < j2; b++) {
            const sd_join_event_t *d = &R[ri[b]];
            if (d->t_ms > L[a].t_ms || d->arrival < L[a].arrival || !sd_asof_newer(R, ri[b], best)) continue;
            if (next < 0 || d->arrival < R[next].arrival) next = ri[b];
        }
        if (next < 0) break;
        best = next;
        sd_jpush(x, n, cap, (sd_jexp_t){.left = L[a].seq, .right = R[best].seq, .kind = 0, .horizon = INT64_MIN + 1});
        nans++;
    }
    for (int64_t k = first; k < *n; k++) (*x)[k].maybe = nans > 1;
    lmatched[a] = nans > 1 ? 2 : (*x)[first].kind ? 0 : 1;
}

/* The expected groups: every matched pair, and the null rows the type asks for. */
static sd_jexp_t *sd_join_expected(const sd_join_conf_t *c, const sd_join_event_t *L, int64_t nl, const sd_join_event_t *R, int64_t nr,
                                   int64_t *nexp, uint8_t *lmatched, uint8_t *rmatched) {
    int64_t *li = sd_jsorted(L, nl), *ri = sd_jsorted(R, nr), cap = 64, n = 0;
    sd_jexp_t *x = sd_util_xmalloc(sizeof(*x) * (size_t)cap);
    if (c->type == SD_JOIN_ASOF) {
        /* a grace period: the engine releases a scan once its task has read
         * one newer by the grace; a newer scan of the same key is a task's,
         * the only one the harness can name */
        int64_t keymax = INT64_MIN;
        for (int64_t i = 0, j = 0; i < nl; i++) {
            if (!i || strcmp(L[li[i - 1]].key, L[li[i]].key)) {
                keymax = INT64_MIN;
                for (int64_t k = i; k < nl && !strcmp(L[li[k]].key, L[li[i]].key); k++)
                    if (L[li[k]].t_ms > keymax) keymax = L[li[k]].t_ms;
            }
            while (j < nr && strcmp(R[ri[j]].key, L[li[i]].key) < 0) j++;
            int64_t j2 = j, first = n;
            while (j2 < nr && !strcmp(R[ri[j2]].key, L[li[i]].key)) j2++;
            sd_asof_answers(L, li[i], R, ri, j, j2, &x, &n, &cap, lmatched);
            for (int64_t k = first; c->grace_ms > 0 && k < n; k++) x[k].held = L[li[i]].t_ms > keymax - c->grace_ms;
        }
        free(li);
        free(ri);
        if (n) qsort(x, (size_t)n, sizeof(*x), sd_cmp_jexp);
        *nexp = n;
        return x;
    }
    for (int64_t i = 0, j = 0; i < nl && j < nr;) {
        int k = strcmp(L[li[i]].key, R[ri[j]].key);
        if (k) { if (k < 0) i++; else j++; continue; }
        int64_t i2 = i, j2 = j;
        while (i2 < nl && !strcmp(L[li[i2]].key, L[li[i]].key)) i2++;
        while (j2 < nr && !strcmp(R[ri[j2]].key, R[ri[j]].key)) j2++;
        for (int64_t a = i; a < i2; a++)
            for (int64_t b = j; b < j2; b++) {
                int64_t d = R[ri[b]].t_ms - L[li[a]].t_ms;
                if (d < c->lower_ms || d > c->upper_ms) continue;
                if (n == cap) x = sd_util_xrealloc(x, sizeof(*x) * (size_t)(cap *= 2));
                int ml = L[li[a]].maybe_late, mr = R[ri[b]].maybe_late, maybe = ml || mr;
                x[n++] = (sd_jexp_t){.left = L[li[a]].seq, .right = R[ri[b]].seq, .kind = 0, .maybe = maybe};
                /* 1: matched for sure; 3: maybe late itself, matched by an
                 * event that was not (no null row whether it was dropped or
                 * joined); 2: only by pairs that rest on a maybe-late event */
                if (!maybe) lmatched[li[a]] = rmatched[ri[b]] = 1;
                if (ml && !mr && lmatched[li[a]] != 1) lmatched[li[a]] = 3;
                if (mr && !ml && rmatched[ri[b]] != 1) rmatched[ri[b]] = 3;
                if (!lmatched[li[a]]) lmatched[li[a]] = 2;
                if (!rmatched[ri[b]]) rmatched[ri[b]] = 2;
            }
        i = i2;
        j = j2;
    }
    for (int64_t i = 0; c->type >= SD_JOIN_LEFT && i < nl; i++) {
        if (lmatched[i] == 1 || lmatched[i] == 3) continue;
        if (n == cap) x = sd_util_xrealloc(x, sizeof(*x) * (size_t)(cap *= 2));
        x[n++] = (sd_jexp_t){.left = L[i].seq, .right = -1, .kind = 1, .horizon = L[i].t_ms + c->upper_ms,
                             .maybe = lmatched[i] == 2 || L[i].maybe_late};
    }
    for (int64_t j = 0; c->type == SD_JOIN_FULL && j < nr; j++) {
        if (rmatched[j] == 1 || rmatched[j] == 3) continue;
        if (n == cap) x = sd_util_xrealloc(x, sizeof(*x) * (size_t)(cap *= 2));
        x[n++] = (sd_jexp_t){.left = -1, .right = R[j].seq, .kind = 2, .horizon = R[j].t_ms - c->lower_ms,
                             .maybe = rmatched[j] == 2 || R[j].maybe_late};
    }
    free(li);
    free(ri);
    if (n) qsort(x, (size_t)n, sizeof(*x), sd_cmp_jexp);
    *nexp = n;
    return x;
}

/* Is this null row final (1), not yet (-1), or on the boundary (0): at
 * the final watermark, or between the one an engine keeping a watermark
 * per source reaches and the lower one of an engine keeping it per
 * partition? */
static int sd_join_final(const sd_join_conf_t *c, int64_t horizon) {
    if (c->type == SD_JOIN_ASOF) return 1; /* written when the scan is read */
    if (c->final_wm == INT64_MIN || horizon > c->final_wm) return -1;
    int64_t low = c->final_wm_low == INT64_MIN || c->final_wm_low > c->final_wm ? c->final_wm : c->final_wm_low;
    return horizon < low ? 1 : 0;
}

/* Find seq's event (linear index by seq: seqs are small and dense). */
static int64_t sd_join_find(const sd_join_event_t *ev, int64_t n, const int64_t *byseq, int64_t nseq, int64_t seq) {
    (void)ev; (void)n;
    return seq >= 0 && seq < nseq ? byseq[seq] : -1;
}

/* A row (or rows) of one group that is not among the expected ones. */
static void sd_join_unexpected(const sd_join_conf_t *c, const sd_join_row_t *row, int64_t copies, const sd_join_event_t *L, int64_t lpos,
                               const sd_join_event_t *R, int64_t rpos, const uint8_t *lmatched, const uint8_t *rmatched, sd_result_t *out) {
    char a[64], b[64];
    sd_jid(c, 0, row->left, a, sizeof(a));
    sd_jid(c, 1, row->right, b, sizeof(b));
    const char *w = row->writer ? row->writer : "an unnamed writer";
    sd_buf_t d;
    sd_buf_init(&d);
    unsigned flags = 1u << SD_G_UNEXPECTED;
    int64_t t = lpos >= 0 ? L[lpos].t_ms : rpos >= 0 ? R[rpos].t_ms : 0;
    if (row->right == -1 && lpos >= 0 && lmatched[lpos] == 1) {
        flags = 1u << SD_G_NULL_MATCHED;
        sd_buf_printf(&d, "%s + null (by %s): %s did match a right row, so no null row may be written for it", a, w, a);
    } else if (row->left == -1 && rpos >= 0 && rmatched[rpos] == 1) {
        flags = 1u << SD_G_NULL_MATCHED;
        sd_buf_printf(&d, "null + %s (by %s): %s did match a left row, so no null row may be written for it", b, w, b);
    } else if ((row->right == -1 && lpos >= 0 && lmatched[lpos] == 3) || (row->left == -1 && rpos >= 0 && rmatched[rpos] == 3)) {
        flags = 1u << SD_G_NULL_MATCHED;
        const char *e = row->right == -1 ? a : b;
        sd_buf_printf(&d, "%s + %s (by %s): %s may have reached the pipeline late, and it matches an event that was not late: "
                      "dropped as late it owes no row, joined it owes the pair; no null row may be written for it either way", a, b, w, e);
    } else if (row->left >= 0 && lpos < 0) {
        sd_buf_printf(&d, "%s + %s (by %s): %s is not an event the contract counts (late, malformed or never sent)", a, b, w, a);
    } else if (row->right >= 0 && rpos < 0) {
        sd_buf_printf(&d, "%s + %s (by %s): %s is not a delivery the contract counts (late, malformed, or never sent)", a, b, w, b);
    } else if (row->left < -1 || row->right < -1) {
        sd_buf_printf(&d, "a row whose ids are not this run's (by %s)", w);
    } else if (row->left >= 0 && row->right >= 0 && c->type == SD_JOIN_ASOF) {
        int64_t dt = R[rpos].t_ms - L[lpos].t_ms;
        int same = !strcmp(L[lpos].key, R[rpos].key);
        sd_buf_printf(&d, "%s + %s (by %s): %s", a, b, w,
                      !same    ? "their keys differ"
                      : dt > 0 ? "the delivery is after the scan's event time: an as-of join takes the newest one at or before it "
                                 "(a table without history joins whatever it holds when the scan is read)"
                               : "not the newest delivery of its key at or before the scan's event time");
        if (same) sd_buf_printf(&d, " (%+.3f s from it)", (double)dt / 1000.0);
    } else if (row->left >= 0 && row->right >= 0) {
        char edge[96];
        sd_buf_printf(&d, "%s + %s (by %s): they do not match: keys %s and %s, %+.3f s apart (the condition asks %.3f..%.3f s)%s", a, b, w,
                      L[lpos].key, R[rpos].key, (double)(R[rpos].t_ms - L[lpos].t_ms) / 1000.0, (double)c->lower_ms / 1000.0,
                      (double)c->upper_ms / 1000.0,
                      strcmp(L[lpos].key, R[rpos].key) ? "" : sd_join_edge(c, R[rpos].t_ms - L[lpos].t_ms, edge, sizeof(edge)));
    } else {
        sd_buf_printf(&d, "%s + %s (by %s): a null row the join type does not write", a, b, w);
    }
    if (copies > 1) sd_buf_printf(&d, " (%lld rows)", (long long)copies);
    sd_jadd(c, out, row->left, row->right, t, flags, sd_buf_steal(&d));
}

int64_t sd_join_final_wm(int64_t left_newest, int64_t right_newest, int64_t delay_ms) {
    int64_t older = left_newest < right_newest ? left_newest : right_newest;
    return older == INT64_MIN ? INT64_MIN : older - delay_ms;
}

void sd_result_join(const sd_join_conf_t *c, const sd_join_event_t *L, int64_t nl, const sd_join_event_t *R, int64_t nr,
                    const sd_join_row_t *rows, int64_t nrows, sd_result_t *out) {
    memset(out, 0, sizeof(*out));
    out->rows = nrows;
    uint8_t *lm = sd_util_xcalloc((size_t)(nl ? nl : 1), 1), *rm = sd_util_xcalloc((size_t)(nr ? nr : 1), 1);
    int64_t nexp;
    sd_jexp_t *x = sd_join_expected(c, L, nl, R, nr, &nexp, lm, rm);
    /* seq -> position, for the rows' ids */
    int64_t lmax = 0, rmax = 0;
    for (int64_t i = 0; i < nl; i++) if (L[i].seq + 1 > lmax) lmax = L[i].seq + 1;
    for (int64_t i = 0; i < nr; i++) if (R[i].seq + 1 > rmax) rmax = R[i].seq + 1;
    int64_t *lpos = sd_util_xmalloc(sizeof(int64_t) * (size_t)(lmax ? lmax : 1)), *rpos = sd_util_xmalloc(sizeof(int64_t) * (size_t)(rmax ? rmax : 1));
    for (int64_t i = 0; i < lmax; i++) lpos[i] = -1;
    for (int64_t i = 0; i < rmax; i++) rpos[i] = -1;
    for (int64_t i = 0; i < nl; i++) lpos[L[i].seq] = i;
    for (int64_t i = 0; i < nr; i++) rpos[R[i].seq] = i;
    sd_join_row_t *rs = sd_util_xmalloc(sizeof(*rs) * (size_t)(nrows ? nrows : 1));
    memcpy(rs, rows, sizeof(*rs) * (size_t)nrows);
    /* the events some row joins as a matching pair: a null row beside such a
     * row is wrong even when the pair rests on a maybe-late event */
    uint8_t *lobs = sd_util_xcalloc((size_t)(nl ? nl : 1), 1), *robs = sd_util_xcalloc((size_t)(nr ? nr : 1), 1);
    for (int64_t k = 0; k < nrows; k++) {
        int64_t a = sd_join_find(L, nl, lpos, lmax, rows[k].left), b = sd_join_find(R, nr, rpos, rmax, rows[k].right);
        if (a < 0 || b < 0 || strcmp(L[a].key, R[b].key)) continue;
        int64_t d = R[b].t_ms - L[a].t_ms;
        if (d >= c->lower_ms && d <= c->upper_ms) lobs[a] = robs[b] = 1;
    }
    if (nrows) qsort(rs, (size_t)nrows, sizeof(*rs), sd_cmp_jrow);
    int64_t i = 0, j = 0;
    while (i < nexp || j < nrows) {
        int cmp = i >= nexp ? 1 : j >= nrows ? -1 : sd_cmp_lr(x[i].left, x[i].right, rs[j].left, rs[j].right);
        int64_t j2 = j;
        if (cmp >= 0)
            while (j2 < nrows && !sd_cmp_lr(rs[j2].left, rs[j2].right, rs[j].left, rs[j].right)) j2++;
        int64_t copies = j2 - j;
        if (cmp > 0) { /* rows for a group that is not expected */
            out->groups_observed++;
            sd_join_unexpected(c, &rs[j], copies, L, sd_join_find(L, nl, lpos, lmax, rs[j].left), R,
                               sd_join_find(R, nr, rpos, rmax, rs[j].right), lm, rm, out);
            out->n[out->anomalies[out->nanomalies - 1].flags & (1u << SD_G_NULL_MATCHED) ? SD_G_NULL_MATCHED : SD_G_UNEXPECTED]++;
            j = j2;
            continue;
        }
        const sd_jexp_t *g = &x[i++];
        int fin = g->kind ? sd_join_final(c, g->horizon) : 1;
        if (g->maybe && fin > 0) fin = 0;
        if (g->held && !copies && fin > 0) fin = 0;
        char a[64], b[64], edge[96];
        sd_jid(c, 0, g->left, a, sizeof(a));
        sd_jid(c, 1, g->right, b, sizeof(b));
        int64_t t = g->left >= 0 ? L[lpos[g->left]].t_ms : R[rpos[g->right]].t_ms;
        if (fin > 0) out->groups_expected++;
        if (!copies) {
            if (fin > 0) {
                out->n[SD_G_MISSING]++;
                sd_jadd(c, out, g->left, g->right, t, 1u << SD_G_MISSING,
                        g->kind && c->type == SD_JOIN_ASOF
                            ? sd_util_fmt("%s + null: no row; %s had no delivery of its key at or before its event time", a, a)
                        : g->kind ? sd_util_fmt("%s + %s: no row; %s matched nothing and the final watermark passed its horizon %.1f s "
                                              "before the end", a, b, g->kind == 1 ? a : b, (double)(c->final_wm - g->horizon) / 1000.0)
                        : c->type == SD_JOIN_ASOF
                            ? sd_util_fmt("%s + %s: no row; %s is the newest delivery of its key at or before the scan (%.3f s before "
                                          "it)", a, b, b, (double)(L[lpos[g->left]].t_ms - R[rpos[g->right]].t_ms) / 1000.0)
                                : sd_util_fmt("%s + %s: no row for a matching pair (keys equal, %+.3f s apart)%s", a, b,
                                              (double)(R[rpos[g->right]].t_ms - L[lpos[g->left]].t_ms) / 1000.0,
                                              sd_join_edge(c, R[rpos[g->right]].t_ms - L[lpos[g->left]].t_ms, edge, sizeof(edge))));
            } else {
                out->n[SD_G_PENDING]++;
            }
            continue;
        }
        out->groups_observed++;
        j = j2;
        const char *w = rs[j - 1].writer ? rs[j - 1].writer : "an unnamed writer";
        if (fin < 0) {
            out->n[SD_G_EARLY]++;
            sd_jadd(c, out, g->left, g->right, t, 1u << SD_G_EARLY | (copies > 1 ? 1u << SD_G_TWICE : 0),
                    sd_util_fmt("%s + %s (by %s): written before it could be final: the watermark had not passed its horizon "
                                "(%.1f s after the final watermark)", a, b, w, (double)(g->horizon - c->final_wm) / 1000.0));
            if (copies > 1) out->n[SD_G_TWICE]++;
        } else if (fin == 0 && g->maybe && g->kind && (g->kind == 1 ? lobs[lpos[g->left]] : robs[rpos[g->right]])) {
            out->n[SD_G_NULL_MATCHED]++;
            sd_jadd(c, out, g->left, g->right, t, 1u << SD_G_NULL_MATCHED,
                    sd_util_fmt("%s + %s (by %s): %s is joined in another row of the sink, so no null row may be written for it", a, b,
                                w, g->kind == 1 ? a : b));
        } else if (fin == 0 && copies > 1) {
            out->n[SD_G_TWICE]++;
            sd_jadd(c, out, g->left, g->right, t, 1u << SD_G_TWICE, sd_join_copies(a, b, rs, j - copies, j));
        } else if (fin == 0) {
            out->n[SD_G_PENDING]++;
        } else if (copies > 1) {
            out->n[SD_G_TWICE]++;
            sd_jadd(c, out, g->left, g->right, t, 1u << SD_G_TWICE, sd_join_copies(a, b, rs, j - copies, j));
        } else {
            out->n[SD_G_CORRECT]++;
        }
    }
    free(x);
    free(lm);
    free(rm);
    free(lpos);
    free(rpos);
    free(rs);
    free(lobs);
    free(robs);
}
