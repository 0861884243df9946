/* progress_flink.c - progress from a Flink job's checkpoints (`progress
 * flink checkpoint=DIR`).
 *
 * Flink's unit of progress is the checkpoint: what the job read and wrote
 * between two completed checkpoints is what a failure rolls back (a
 * transactional sink commits it when the next one completes). So a batch
 * here is a checkpoint interval: batch N begins when checkpoint N-1
 * completes (or the incarnation starts) and commits when checkpoint N
 * completes. A kill mid-batch lands with the interval's records read, and
 * written to an open transaction, and not yet committed.
 *
 * The checkpoint storage is DIR/JOB/chk-N (one folder per submitted job;
 * a job submitted again from a checkpoint numbers on from it): chk-N is
 * made when checkpoint N is triggered and holds _metadata once it has
 * completed. Flink removes the older ones (execution.checkpointing.num-retained).
 * The job is ready once a checkpoint completes after the incarnation
 * started: its sources and operators run and have taken their state. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "progress.h"
#include "run.h"

typedef struct {
    char *dir;
    int64_t begun, committed; /* what was reported for the newest incarnation */
    int inc;
} sd_flink_source_t;

/* The newest completed checkpoint under dir (its id and _metadata's mtime
 * in epoch ms) and the newest triggered one; -1 when none. */
void sd_flink_scan(const char *dir, int64_t *completed, int64_t *completed_ms, int64_t *triggered) {
    *completed = *triggered = -1;
    *completed_ms = 0;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *job;
    while ((job = readdir(d))) {
        if (job->d_name[0] == '.') continue;
        char *jp = sd_util_fmt("%s/%s", dir, job->d_name);
        DIR *j = opendir(jp);
        struct dirent *c;
        while (j && (c = readdir(j))) {
            char *end;
            if (strncmp(c->d_name, "chk-", 4)) continue;
            long long n = strtoll(c->d_name + 4, &end, 10);
            if (end == c->d_name + 4 || *end || n < 0) continue;
            if (n > *triggered) *triggered = n;
            char *meta = sd_util_fmt("%s/%s/_metadata", jp, c->d_name);
            struct stat sb;
            if (n > *completed && !stat(meta, &sb)) {
                *completed = n;
                *completed_ms = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
            }
            free(meta);
        }
        if (j) closedir(j);
        free(jp);
    }
    closedir(d);
}

static sd_err_t sd_flink_poll(sd_run_t *r, char *err, size_t errlen) {
    sd_flink_source_t *S = r->pipe.source;
    if (!S || !r->pipe.bs.incarnation) return SD_OK;
    int64_t done, done_ms, trig;
    sd_flink_scan(S->dir, &done, &done_ms, &trig);
    sd_err_t e = SD_OK;
    if (S->inc != r->pipe.bs.incarnation) {
        /* a new incarnation resumes from the newest completed checkpoint:
         * its first interval begins once it is ready */
        S->inc = r->pipe.bs.incarnation;
        S->committed = done;
        S->begun = -1;
    }
    if (done > S->committed) {
        /* a checkpoint completed: the interval in flight commits under the
         * checkpoint's id (an interval whose checkpoint failed runs on to
         * the next one that completes) */
        if (S->begun >= 0 && S->begun != done)
            e = sd_progress_batch_event(r, SD_SUP_EV_BEGIN, r->pipe.bs.incarnation, done, -1, NULL, done_ms, err, errlen);
        if (!e) e = sd_progress_batch_event(r, SD_SUP_EV_COMMIT, r->pipe.bs.incarnation, done, -1, NULL, done_ms, err, errlen);
        S->committed = done;
        S->begun = -1;
    }
    /* the next interval: from the newest completion in this incarnation */
    if (!e && S->begun < 0 && r->pipe.bs.commits > 0) {
        S->begun = S->committed + 1;
        e = sd_progress_batch_event(r, SD_SUP_EV_BEGIN, r->pipe.bs.incarnation, S->begun, -1, NULL, done_ms, err, errlen);
    }
    return e;
}

static sd_err_t sd_flink_open(sd_run_t *r, void **state, char *err, size_t errlen) {
    char *dir = sd_scenario_expand(r->sc->checkpoint ? r->sc->checkpoint : "{checkpoint}", &r->vars, err, errlen);
    if (!dir) return SD_ERR_SCENARIO;
    sd_flink_source_t *S = sd_util_xcalloc(1, sizeof(*S));
    S->dir = dir;
    S->begun = S->committed = -1;
    *state = S;
    sd_ledger_meta_set(r->ledger, "flink_checkpoints", dir, NULL, 0);
    return SD_OK;
}

static void sd_flink_close(void *state) {
    sd_flink_source_t *S = state;
    free(S->dir);
    free(S);
}

/* ready: a checkpoint completed in this incarnation */
static int sd_flink_ready(sd_run_t *r, const sd_sup_state_t *st, int64_t up_ms) {
    (void)up_ms;
    if (st->ready) return 1;
    sd_flink_poll(r, NULL, 0);
    return r->pipe.bs.commits > 0;
}

const sd_progress_ops_t sd_progress_flink = {.name = "flink", .batches = 1, .intervals = 1, .partition_watermark = 1, .open = sd_flink_open,
                                             .close = sd_flink_close, .poll = sd_flink_poll, .ready = sd_flink_ready,
                                             .not_ready = "completed no checkpoint"};
