/* run_bounds.c - what the pipeline's own account says about its bounds:
 * the rows per batch, and the state it keeps.
 *
 * The figures come from table state (Spark's stateOperators, or a batch
 * marker's state=) and from the batches' sizes. The rule that says state
 * is unbounded (docs/oracle.md, "State and batch bounds"):
 *
 *   For each query, its batches in order, each with the rows it read and
 *   the state rows (summed over operators) it left behind. R is the rows
 *   all of them read; the half-way batch is the first after which R/2 rows
 *   had been read. Growth is the state after the last batch minus the state
 *   after the half-way batch. State is unbounded when growth exceeds 10% of
 *   the rows read after the half-way batch: a bounded operator evicts about
 *   as much as it takes in once the watermark has passed its horizon, so
 *   its state levels off; an unbounded one keeps a share of every event.
 *
 * The rule can only judge a drill long enough for eviction to show: at
 * least 4 batches with state and 100 rows read, the second half of them
 * over 3 batches or more (sd_result_state_rule), and the events' second
 * half spanning more event time than the contract's watermark delay.
 * Otherwise the state counts are -1, a `state-not-measured` warning says
 * why (how many more batches or rows it needs), and an expectation on them
 * makes the run inconclusive (not-measured), with the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result.h"
#include "run_int.h"

typedef struct {
    char query[128];
    int64_t n, cap;
    int64_t *read, *state;           /* cumulative rows read, state rows after each batch */
} sd_series_t;

typedef struct {
    sd_series_t *s;
    int n;
} sd_series_set_t;

static void sd_bounds_add(void *opaque, const char *query, int64_t input_rows, int64_t state_rows) {
    sd_series_set_t *ss = opaque;
    if (!query) query = "";
    sd_series_t *s = ss->n ? &ss->s[ss->n - 1] : NULL;
    if (!s || strcmp(s->query, query)) {
        ss->s = sd_util_xrealloc(ss->s, sizeof(*ss->s) * (size_t)(ss->n + 1));
        s = &ss->s[ss->n++];
        memset(s, 0, sizeof(*s));
        snprintf(s->query, sizeof(s->query), "%s", query);
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->read = sd_util_xrealloc(s->read, sizeof(int64_t) * (size_t)s->cap);
        s->state = sd_util_xrealloc(s->state, sizeof(int64_t) * (size_t)s->cap);
    }
    s->read[s->n] = (s->n ? s->read[s->n - 1] : 0) + (input_rows > 0 ? input_rows : 0);
    s->state[s->n] = state_rows;
    s->n++;
}

/* One query's figures. 0 judged, -1 too short to judge (why says so). */
static int sd_bounds_series(const sd_series_t *s, sd_bounds_t *b, char *why, size_t wlen) {
    sd_state_rule_t rule;
    sd_result_state_rule(s->read, s->state, s->n, &rule);
    if (rule.peak > b->state_rows_peak) b->state_rows_peak = rule.peak;
    if (!rule.judged) {
        /* what is short, in the units a drill writer changes */
        int64_t rows = s->n ? s->read[s->n - 1] : 0;
        char more[96] = "";
        if (s->n < 4 && rows < 100) snprintf(more, sizeof(more), " (%lld more batch%s, %lld more rows)", (long long)(4 - s->n),
                                             4 - s->n == 1 ? "" : "es", (long long)(100 - rows));
        else if (s->n < 4) snprintf(more, sizeof(more), " (%lld more batch%s)", (long long)(4 - s->n), 4 - s->n == 1 ? "" : "es");
        else if (rows < 100) snprintf(more, sizeof(more), " (%lld more rows)", (long long)(100 - rows));
        snprintf(why, wlen, "%s%s%shas %lld batch%s with state that read %lld rows; the bounded-state rule needs at least 4 "
                 "batches and 100 rows%s, with the second half of the rows read over 3 batches or more", s->query[0] ? "query " : "",
                 s->query, s->query[0] ? " " : "the pipeline ",
                 (long long)s->n, s->n == 1 ? "" : "es", (long long)rows, more);
        return -1;
    }
    /* the query that says the most: unbounded first, then the largest state */
    if (rule.unbounded > b->state_unbounded || (rule.unbounded == b->state_unbounded && rule.final >= b->state_rows_final)) {
        b->state_unbounded = rule.unbounded;
        b->state_rows_final = rule.final;
        b->state_rows_half = rule.half;
        b->state_growth = rule.growth;
        b->rows_after_half = rule.read_after;
        snprintf(b->query, sizeof(b->query), "%s", s->query);
    }
    return 0;
}

static void sd_bounds_backlog_point(void *opaque, int64_t t_ms, int64_t records) {
    sd_run_t *r = opaque;
    sd_ledger_backlog(r->ledger, t_ms, records, NULL, 0);
}

void sd_run_bounds(sd_run_t *r, sd_bounds_t *b) {
    memset(b, 0, sizeof(*b));
    /* operational health, and the backlog over time for the charts */
    sd_health_compute(sd_ledger_db(r->ledger), &b->health, sd_bounds_backlog_point, r);
    sd_ledger_batch_bounds(r->ledger, &b->batches, &b->batch_rows_max);
    sd_series_set_t ss = {0};
    sd_ledger_each_state(r->ledger, sd_bounds_add, &ss);
    b->has_state = ss.n > 0;
    b->state_rows_peak = b->state_rows_final = b->state_rows_half = b->state_growth = b->state_unbounded = -1;
    if (!ss.n) {
        snprintf(b->why, sizeof(b->why), "the pipeline reported no state (Spark's stateOperators, or state= in its batch markers)");
        snprintf(b->detail, sizeof(b->detail), "%lld batches read rows, the largest %lld; no state reported",
                 (long long)b->batches, (long long)b->batch_rows_max);
        return;
    }
    b->state_rows_peak = 0;
    int judged = 0;
    char why[512] = "";
    for (int i = 0; i < ss.n; i++) {
        if (sd_bounds_series(&ss.s[i], b, why, sizeof(why)) == 0) judged = 1;
        else snprintf(b->why, sizeof(b->why), "%s", why);
        free(ss.s[i].read); free(ss.s[i].state);
    }
    free(ss.s);
    if (judged) {
        int64_t lo, hi;
        sd_ledger_event_span(r->ledger, &lo, &hi);
        if (lo != INT64_MIN && (hi - lo) / 2 <= r->sc->watermark_ms) {
            snprintf(b->why, sizeof(b->why), "the drill's second half spans %.0f s of event time, not more than the watermark "
                     "delay (%.0f s): a bounded operator need not have evicted anything yet",
                     (double)(hi - lo) / 2000.0, (double)r->sc->watermark_ms / 1000.0);
            judged = 0;
        }
    }
    if (!judged) {
        /* said whether or not the drill expects anything of the state: a
         * pipeline that keeps state was not checked for keeping too much */
        char w[700];
        snprintf(w, sizeof(w), "the pipeline keeps state (peak %lld rows), and whether it is bounded is not measured: %s",
                 (long long)b->state_rows_peak, b->why);
        sd_ledger_warning(r->ledger, "state-not-measured", w, NULL, 0);
        b->state_unbounded = b->state_rows_final = b->state_rows_half = b->state_growth = -1;
        snprintf(b->detail, sizeof(b->detail), "%lld batches read rows, the largest %lld; state peaked at %lld rows; the "
                 "bounded-state rule could not judge: %s", (long long)b->batches, (long long)b->batch_rows_max,
                 (long long)b->state_rows_peak, b->why);
        return;
    }
    b->why[0] = 0;
    snprintf(b->detail, sizeof(b->detail), "%s%s%sstate rows: %lld after half the rows were read, %lld at the end (peak %lld): "
             "%s %lld while %lld rows were read (%.0f%%; unbounded above 10%%); %lld batches read rows, the largest %lld",
             b->query[0] ? "query " : "", b->query, b->query[0] ? ": " : "", (long long)b->state_rows_half,
             (long long)b->state_rows_final, (long long)b->state_rows_peak, b->state_growth >= 0 ? "grew" : "fell",
             (long long)(b->state_growth >= 0 ? b->state_growth : -b->state_growth), (long long)b->rows_after_half,
             b->rows_after_half > 0 ? 100.0 * (double)b->state_growth / (double)b->rows_after_half : 0.0,
             (long long)b->batches, (long long)b->batch_rows_max);
}
