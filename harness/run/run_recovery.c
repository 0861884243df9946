/* run_recovery.c - each fault's recovery figures, computed once the target
 * is read (recovery.c, over run.db), stored in run.db's recovery table and
 * judged against the drill's `expect` clauses that name a figure: for every
 * fault, or with `step=LINE` for the fault step at that line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "observe.h"
#include "recovery.h"
#include "run_int.h"

typedef struct {
    const sd_run_t *r;
    const sd_observe_t *obs;
    int timed;  /* the write times are on the harness's clock */
} sd_seen_ctx_t;

/* Over the target events sent before t_ms: the newest first write (wall
 * ms), how many, how many never written, how many written without a time. */
static int64_t sd_run_newest_seen(void *opaque, int64_t t_ms, int64_t *n, int64_t *missing, int64_t *untimed) {
    const sd_seen_ctx_t *c = opaque;
    const sd_run_t *r = c->r;
    int64_t newest = INT64_MIN;
    for (int64_t s = 0; s < r->sends.nseq && s < c->obs->nseq; s++) {
        if (sd_seqs_disp(&r->sends.seqs, s) != SD_DISP_TARGET) continue;
        if (r->sends.acked_lost && r->sends.acked_lost[s]) continue; /* no pipeline could read it */
        uint32_t sent = sd_stamps_get(&r->sends.sent, s);
        if (sent == UINT32_MAX || r->t0_wall + (int64_t)sent >= t_ms) continue; /* queued in the fault's own millisecond: after it (the steps run in order) */
        (*n)++;
        if (!sd_counts_get(&c->obs->copies, s)) {
            (*missing)++;
            continue;
        }
        int64_t lat = c->timed ? sd_observe_latency(c->obs, s) : -1;
        if (lat < 0) (*untimed)++;
        else if (r->t0_wall + (int64_t)sent + lat > newest) newest = r->t0_wall + (int64_t)sent + lat;
    }
    return newest;
}

static int sd_run_cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The latency quantiles (nearest rank) over every target event sent in
 * [from, to) that has a write time: exact, the figures an `expect` gates
 * (run.db's latency table keeps only a sample, for the charts). */
static int64_t sd_run_window_latency(void *opaque, int64_t from, int64_t to, int64_t *p50, int64_t *p99) {
    const sd_seen_ctx_t *c = opaque;
    const sd_run_t *r = c->r;
    if (!c->timed) return 0;
    int64_t n = 0, cap = 0, *v = NULL;
    for (int64_t s = 0; s < r->sends.nseq && s < c->obs->nseq; s++) {
        if (sd_seqs_disp(&r->sends.seqs, s) != SD_DISP_TARGET) continue;
        uint32_t sent = sd_stamps_get(&r->sends.sent, s);
        if (sent == UINT32_MAX) continue;
        int64_t at = r->t0_wall + (int64_t)sent, lat;
        if (at < from || at >= to || (lat = sd_observe_latency(c->obs, s)) < 0) continue;
        if (n == cap) v = sd_util_xrealloc(v, sizeof(int64_t) * (size_t)(cap = cap ? cap * 2 : 1024));
        v[n++] = lat;
    }
    if (n) {
        qsort(v, (size_t)n, sizeof(int64_t), sd_run_cmp_i64);
        *p50 = v[(n - 1) * 50 / 100];
        *p99 = v[(n - 1) * 99 / 100];
    }
    free(v);
    return n;
}

static void sd_run_fig_check(sd_run_t *r, const sd_expect_t *x, const sd_recovery_t *f, int *check_idx, int *failed) {
    char name[160], expected[96], actual[64], val[64], detail[800];
    int64_t v = f->v[x->figure];
    snprintf(name, sizeof(name), "%s (%s at line %d)", x->count, f->kind, f->line);
    sd_figure_text(x->figure, x->value, val, sizeof(val));
    snprintf(expected, sizeof(expected), "%s %s", sd_op_text(x->op), val);
    sd_figure_text(x->figure, v, actual, sizeof(actual));
    int pass = v == SD_FIG_NEVER ? (x->op == SD_OP_GT || x->op == SD_OP_GE || x->op == SD_OP_NE) : sd_op_eval(x->op, v, x->value);
    const char *ev = sd_figure_evidence(x->figure, f->basis, sd_progress_get(r->sc->progress)->name);
    if (x->figure == SD_FIG_recovery_s && f->basis[0])
        snprintf(detail, sizeof(detail), "caught up by the %s%s%s (%s)", f->basis, v == SD_FIG_NEVER ? ": " : "", v == SD_FIG_NEVER ? f->why : "", ev);
    else
        snprintf(detail, sizeof(detail), "%s (%s)", sd_figure_meaning(x->figure), ev);
    if (!strcmp(ev, "pipeline-claimed")) {
        size_t l = strlen(detail);
        snprintf(detail + l, sizeof(detail) - l, "; this check rests on the pipeline's own words (%s), not on what the harness observed",
                 x->figure == SD_FIG_restore_s || x->figure == SD_FIG_restored_records ? "its log lines"
                 : x->figure >= SD_FIG_latency_p50_before_ms ? "the write times it stamps" : "its batch markers");
    }
    sd_ledger_check(r->ledger, (*check_idx)++, name, pass, expected, actual, detail, NULL, 0);
    if (!pass) (*failed)++;
}

/* The figures of every fault, stored; each `expect` clause on a figure
 * judged against the faults it names. A figure the run could not measure
 * makes the run inconclusive (r->verdict.unmeasured) instead of passing. */
sd_err_t sd_run_recovery(sd_run_t *r, const struct sd_observe_s *obs, const char *sink, const sd_step_t *const *expects, int nexp,
                         int *check_idx, int *failed, char *err, size_t errlen) {
    /* write times from a pipeline whose clock the drill moved are on its
     * clock: the commits decide */
    sd_seen_ctx_t sc = {r, obs, obs && obs->lat && !r->faults.clock_moved_line};
    sd_recovery_in_t in = {.newest_seen = obs ? sd_run_newest_seen : NULL, .window_latency = obs ? sd_run_window_latency : NULL,
                           .opaque = &sc, .sink = sink};
    sd_recovery_t *v = NULL;
    /* the duplicates' seqs are looked up in the ledger: index it first */
    sd_ledger_index_for_reports(r->ledger);
    sqlite3 *db = sd_ledger_db(r->ledger);
    int n = sd_recovery_compute(db, &in, &v, err, errlen);
    if (n < 0) return SD_ERR_IO;
    sd_err_t e = sd_recovery_store(db, v, n, err, errlen);
    for (int s = 0; s < nexp && !e; s++)
        for (int k = 0; k < expects[s]->expect.n; k++) {
            const sd_expect_t *x = &expects[s]->expect.v[k];
            if (!x->per_fault) continue;
            int judged = 0;
            char why[1024] = "";
            for (int i = 0; i < n; i++) {
                const sd_recovery_t *f = &v[i];
                if (x->step_line && f->line != x->step_line) continue;
                int64_t fv = f->v[x->figure];
                if (fv == SD_FIG_NA && !x->step_line) continue; /* detect_s of a kill: not this fault's figure */
                if (fv == SD_FIG_NA || fv == SD_FIG_UNMEASURED) {
                    snprintf(why, sizeof(why), "expect %s (line %d): %s at line %d: %s", x->count, expects[s]->line, f->kind, f->line,
                             fv == SD_FIG_NA ? "the figure does not apply to this fault" : f->why[0] ? f->why : "not measured");
                    continue;
                }
                sd_run_fig_check(r, x, f, check_idx, failed);
                judged++;
            }
            if (!why[0] && !judged)
                snprintf(why, sizeof(why), "expect %s (line %d): %s", x->count, expects[s]->line,
                         x->step_line ? "the fault step it names did not strike (no fault was recorded for it)" : "no fault struck in this run");
            if (why[0]) {
                sd_ledger_warning(r->ledger, "figure-not-measured", why, NULL, 0);
                if (!r->verdict.unmeasured++) snprintf(r->verdict.unmeasured_why, sizeof(r->verdict.unmeasured_why), "%s", why);
            }
        }
    for (int i = 0; i < n; i++) {
        char rec[32], rep[32], rew[32], rc[32], more[160] = "";
        sd_figure_text(SD_FIG_recovery_s, v[i].v[SD_FIG_recovery_s], rec, sizeof(rec));
        sd_figure_text(SD_FIG_replayed_input, v[i].v[SD_FIG_replayed_input], rep, sizeof(rep));
        sd_figure_text(SD_FIG_rewritten_rows, v[i].v[SD_FIG_rewritten_rows], rew, sizeof(rew));
        if (v[i].v[SD_FIG_dropped_connections] != SD_FIG_NA) {
            char dc[32];
            sd_figure_text(SD_FIG_reconnect_s, v[i].v[SD_FIG_reconnect_s], rc, sizeof(rc));
            sd_figure_text(SD_FIG_dropped_connections, v[i].v[SD_FIG_dropped_connections], dc, sizeof(dc));
            snprintf(more, sizeof(more), ", reconnect_s %s (connections dropped: %s)", rc, dc);
        } else if (v[i].v[SD_FIG_leaderless_s] != SD_FIG_NA) {
            sd_figure_text(SD_FIG_leaderless_s, v[i].v[SD_FIG_leaderless_s], rc, sizeof(rc));
            snprintf(more, sizeof(more), ", leaderless_s %s", rc);
        }
        if (v[i].v[SD_FIG_restore_s] != SD_FIG_NA) {
            char rr[32];
            size_t l = strlen(more);
            sd_figure_text(SD_FIG_restore_s, v[i].v[SD_FIG_restore_s], rc, sizeof(rc));
            sd_figure_text(SD_FIG_restored_records, v[i].v[SD_FIG_restored_records], rr, sizeof(rr));
            snprintf(more + l, sizeof(more) - l, ", restore_s %s (records restored: %s; pipeline-claimed, by its log)", rc, rr);
        }
        sd_run_say(r, "recovery from the %s at line %d: recovery_s %s%s%s, replayed_input %s, rewritten_rows %s%s", v[i].kind, v[i].line, rec,
                   v[i].basis[0] ? " by the " : "", v[i].basis, rep, rew, more);
    }
    free(v);
    return e;
}
