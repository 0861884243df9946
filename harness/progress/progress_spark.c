/* progress_spark.c - progress from a Spark checkpoint (`progress spark`).
 *
 * Batch N is in flight while offsets/N exists and commits/N does not. A
 * new incarnation re-runs the batch its predecessor planned and did not
 * commit: that batch begins again when the incarnation starts. In
 * real-time mode (`batches=real-time`) Spark writes offsets/N when
 * interval N ends, so interval N runs from the commit of N-1 to its own
 * commit. The query itself says it is up (SD-READY): the checkpoint shows
 * batches of earlier incarnations too. */
#include <stdlib.h>

#include "progress_batch.h"
#include "run.h"
#include "spark_checkpoint.h"

/* The checkpoint watched, and what was reported of it for the newest incarnation. */
typedef struct {
    sd_spark_t *spark;
    int64_t planned, committed;
    int inc;
} sd_spark_source_t;

/* Batch ids looked at in one poll: of more new ones at once (ids that
 * jump past a gap, a checkpoint of another query) the newest are taken,
 * the rest crossed in one step. */
#define SD_SPARK_STEP_IDS 64

/* Spark: a commit event for each batch committed since the last poll
 * (each commits/N file, not each number below the newest). */
static sd_err_t sd_spark_progress_commits(sd_run_t *r, sd_spark_source_t *S, const sd_spark_state_t *st, char *err, size_t errlen) {
    sd_err_t e = SD_OK;
    if (st->committed <= S->committed) return SD_OK;
    int64_t ids[SD_SPARK_STEP_IDS];
    int k = sd_spark_ids(S->spark, 1, S->committed, st->committed, ids, SD_SPARK_STEP_IDS);
    for (int i = 0; !e && i < k; i++) {
        int64_t n = ids[i];
        char *off = sd_spark_offsets_text(S->spark, n);
        e = sd_progress_batch_event(r, SD_SUP_EV_COMMIT, r->pipe.bs.incarnation, n, sd_spark_batch_rows(S->spark, n), off,
                                    n == st->committed && st->committed_mtime ? st->committed_mtime : sd_util_wall_ms(), err, errlen);
        free(off);
    }
    S->committed = st->committed;
    return e;
}

static sd_err_t sd_spark_damaged_err(sd_spark_source_t *S, sd_err_t e, char *err, size_t errlen) {
    const char *d = sd_spark_damaged(S->spark);
    return e || !d ? e : sd_err_set(err, errlen, SD_ERR_CHECKPOINT, "%s", d);
}

/* Spark: turn checkpoint changes into batch events for the newest incarnation. */
static sd_err_t sd_spark_progress_poll(sd_run_t *r, char *err, size_t errlen) {
    sd_spark_source_t *S = r->pipe.source;
    if (!S || !r->pipe.bs.incarnation) return SD_OK;
    sd_spark_state_t st;
    sd_err_t e = sd_spark_poll(S->spark, &st, err, errlen);
    if (e) return e;
    if (S->inc != r->pipe.bs.incarnation) {
        /* a new incarnation re-runs the uncommitted batch, if any */
        S->inc = r->pipe.bs.incarnation;
        S->planned = st.committed;
        S->committed = st.committed;
    }
    if (r->sc->spark_realtime) {
        /* Real-time mode writes offsets/N when interval N ends, just before
         * commits/N: batch N runs from the commit of N-1 (or the start of the
         * incarnation) to its own commit. */
        e = sd_spark_progress_commits(r, S, &st, err, errlen);
        if (!e && S->planned < st.committed + 1) {
            int64_t t = st.committed_mtime > r->pipe.inc_started_wall ? st.committed_mtime : r->pipe.inc_started_wall;
            S->planned = st.committed + 1;
            e = sd_progress_batch_event(r, SD_SUP_EV_BEGIN, r->pipe.bs.incarnation, S->planned, -1, NULL, t, err, errlen);
            r->pipe.bs.begun_with_incarnation = t == r->pipe.inc_started_wall;
        }
        return sd_spark_damaged_err(S, e, err, errlen);
    }
    if (st.planned > S->planned) {
        /* each offsets/N planned since the last poll and not committed
         * begins; one planned by an earlier incarnation begins again now */
        int64_t from = S->planned > st.committed ? S->planned : st.committed, ids[SD_SPARK_STEP_IDS];
        int k = sd_spark_ids(S->spark, 0, from, st.planned, ids, SD_SPARK_STEP_IDS);
        for (int i = 0; !e && i < k; i++) {
            int64_t n = ids[i];
            int64_t t = n == st.planned && st.planned_mtime ? st.planned_mtime : sd_util_wall_ms();
            int rerun = t < r->pipe.inc_started_wall;
            if (rerun) t = r->pipe.inc_started_wall;
            e = sd_progress_batch_event(r, SD_SUP_EV_BEGIN, r->pipe.bs.incarnation, n, sd_spark_batch_rows(S->spark, n), NULL, t, err, errlen);
            r->pipe.bs.begun_with_incarnation = rerun;
        }
        S->planned = st.planned;
    }
    if (!e) e = sd_spark_progress_commits(r, S, &st, err, errlen);
    return sd_spark_damaged_err(S, e, err, errlen);
}

static sd_err_t sd_spark_progress_open(sd_run_t *r, void **state, char *err, size_t errlen) {
    char *chk = sd_scenario_expand(r->sc->checkpoint ? r->sc->checkpoint : "{checkpoint}", &r->vars, err, errlen);
    if (!chk) return SD_ERR_SCENARIO;
    sd_spark_source_t *S = sd_util_xcalloc(1, sizeof(*S));
    *state = S;
    sd_err_t e = sd_spark_open(chk, r->topic, r->partitions, &S->spark, err, errlen);
    if (!e && r->side.topic) sd_spark_set_side(S->spark, r->side.topic, r->side.partitions);
    sd_ledger_meta_set(r->ledger, "spark_checkpoint", chk, NULL, 0);
    free(chk);
    return e;
}

static int sd_spark_progress_batch_ends(sd_run_t *r, const int64_t **ids, const int64_t **ends) {
    sd_spark_source_t *S = r->pipe.source;
    return sd_spark_batch_ends(S->spark, ids, ends);
}

static void sd_spark_progress_close(void *state) {
    sd_spark_source_t *S = state;
    sd_spark_close(S->spark);
    free(S);
}

static int sd_spark_progress_ready(sd_run_t *r, const sd_sup_state_t *st, int64_t up_ms) {
    (void)r; (void)up_ms;
    return st->ready;
}

const sd_progress_ops_t sd_progress_spark = {.name = "spark", .batches = 1, .open = sd_spark_progress_open,
                                             .close = sd_spark_progress_close, .poll = sd_spark_progress_poll,
                                             .batch_ends = sd_spark_progress_batch_ends,
                                             .ready = sd_spark_progress_ready};
