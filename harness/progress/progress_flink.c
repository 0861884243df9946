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
 * started: its sources and operators run and have taken their state.
 *
 * A commit carries the source offsets the checkpoint holds (what the job
 * resumes from), read from _metadata: Flink's Kafka source keeps each
 * partition's split in its state as the connector's split serializer
 * writes it, inline in _metadata while small (state under
 * state.storage.fs.memory-threshold, 20 KB, is). They give the rows a
 * batch read and the runbook's committed progress; they do not prove the
 * job caught up (sd_progress_caught_up says why). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "progress.h"
#include "run.h"
#include "spark_checkpoint.h"

typedef struct {
    char *dir;
    int64_t begun, committed; /* what was reported for the newest incarnation */
    int inc;
} sd_flink_source_t;

int sd_flink_scan(const char *dir, int64_t *completed, int64_t *completed_ms, int64_t *triggered, char **meta_path, char *why,
                  size_t wlen) {
    *completed = *triggered = -1;
    *completed_ms = 0;
    if (meta_path) *meta_path = NULL;
    if (why && wlen) why[0] = 0;
    int damaged = 0;
    DIR *d = opendir(dir);
    if (!d) return 0; /* not yet, or gone for now */
    struct dirent *job;
    while ((job = readdir(d)) && !damaged) {
        if (job->d_name[0] == '.') continue;
        char *jp = sd_util_fmt("%s/%s", dir, job->d_name);
        DIR *j = opendir(jp);
        struct dirent *c;
        while (j && (c = readdir(j)) && !damaged) {
            int64_t n = sd_checkpoint_id(c->d_name, "chk-");
            if (n == -2) {
                if (why) snprintf(why, wlen, "Flink checkpoint %s/%s: a checkpoint id past 10^15", jp, c->d_name);
                damaged = 1;
            }
            if (n < 0) continue;
            if (n > *triggered) *triggered = n;
            char *meta = sd_util_fmt("%s/%s/_metadata", jp, c->d_name);
            struct stat sb;
            if (n > *completed && !lstat(meta, &sb)) {
                if (!S_ISREG(sb.st_mode)) {
                    if (why) snprintf(why, wlen, "Flink checkpoint %s: %s, not a regular file", meta, sd_util_file_kind(sb.st_mode));
                    damaged = 1;
                } else {
                    *completed = n;
                    *completed_ms = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
                    if (meta_path) {
                        free(*meta_path);
                        *meta_path = meta;
                        meta = NULL;
                    }
                }
            }
            free(meta);
        }
        if (j) closedir(j);
        free(jp);
    }
    closedir(d);
    return damaged ? -1 : 0;
}

static uint64_t sd_flink_be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

/* The offsets of topic's partitions in buf: every split the serializer
 * wrote (writeUTF(topic): a 2-byte length and the name; writeInt(partition);
 * writeLong(the offset read next); writeLong(the stopping offset)). The
 * enumerator's state names the same partitions with a negative offset (the
 * earliest, not yet read): those are not a position. Returns how many of
 * the partitions were found; off[p] stays -1 for the others. */
static int sd_flink_splits(const unsigned char *buf, size_t n, const char *topic, int partitions, int64_t *off) {
    size_t tl = strlen(topic);
    int found = 0;
    for (int p = 0; p < partitions; p++) off[p] = -1;
    if (!tl || tl > 0xffff) return 0;
    for (size_t i = 2; i + tl + 20 <= n; i++) {
        if (buf[i] != (unsigned char)topic[0] || sd_flink_be(buf + i - 2, 2) != tl || memcmp(buf + i, topic, tl)) continue;
        int64_t p = (int32_t)sd_flink_be(buf + i + tl, 4), o = (int64_t)sd_flink_be(buf + i + tl + 4, 8);
        if (p < 0 || p >= partitions || o < 0) continue;
        if (off[p] < 0) found++;
        if (o > off[p]) off[p] = o;
    }
    return found;
}

char *sd_flink_offsets_in(const void *buf, size_t n, const char *topic, int partitions, const char *side, int side_partitions) {
    if (partitions <= 0) return NULL;
    int64_t *off = sd_util_xcalloc((size_t)(partitions > side_partitions ? partitions : side_partitions) + 1, sizeof(int64_t));
    char *text = NULL;
    if (sd_flink_splits(buf, n, topic, partitions, off) == partitions) {
        sd_buf_t t;
        sd_buf_init(&t);
        for (int p = 0; p < partitions; p++) sd_buf_printf(&t, "%s%d:%lld", p ? "," : "", p, (long long)off[p]);
        if (side && side_partitions > 0 && sd_flink_splits(buf, n, side, side_partitions, off) == side_partitions)
            for (int p = 0; p < side_partitions; p++) sd_buf_printf(&t, ",%s:%d:%lld", side, p, (long long)off[p]);
        text = sd_buf_steal(&t);
    }
    free(off);
    return text;
}

char *sd_flink_offsets(const char *meta, const char *topic, int partitions, const char *side, int side_partitions, char *why,
                       size_t wlen) {
    char *buf = NULL, cause[256];
    size_t n = 0;
    if (why && wlen) why[0] = 0;
    int rc = sd_util_read_foreign(meta, 0, SD_FLINK_METADATA_MAX, &buf, &n, cause, sizeof(cause));
    if (rc == -2 && why) snprintf(why, wlen, "Flink checkpoint %s: %s", meta, cause);
    if (rc) return NULL;
    char *text = sd_flink_offsets_in(buf, n, topic, partitions, side, side_partitions);
    free(buf);
    return text;
}

static sd_err_t sd_flink_poll(sd_run_t *r, char *err, size_t errlen) {
    sd_progress_run_t *P = sd_run_progress(r);
    sd_flink_source_t *S = P->source;
    if (!S || !P->bs.incarnation) return SD_OK;
    int64_t done, done_ms, trig;
    char *meta, why[1024];
    if (sd_flink_scan(S->dir, &done, &done_ms, &trig, &meta, why, sizeof(why))) {
        free(meta);
        return sd_err_set(err, errlen, SD_ERR_CHECKPOINT, "%s", why);
    }
    sd_err_t e = SD_OK;
    if (S->inc != P->bs.incarnation) {
        /* a new incarnation resumes from the newest completed checkpoint:
         * its first interval begins once it is ready */
        S->inc = P->bs.incarnation;
        S->committed = done;
        S->begun = -1;
    }
    if (done > S->committed) {
        /* a checkpoint completed: the interval in flight commits under the
         * checkpoint's id (an interval whose checkpoint failed runs on to
         * the next one that completes) */
        if (S->begun >= 0 && S->begun != done)
            e = sd_progress_batch_event(r, SD_SUP_EV_BEGIN, P->bs.incarnation, done, -1, NULL, done_ms, err, errlen);
        int side_parts;
        const char *side = sd_run_side_topic(r, &side_parts);
        char *offsets = meta ? sd_flink_offsets(meta, sd_run_topic(r), sd_run_partitions(r), side, side_parts, why, sizeof(why)) : NULL;
        if (!e && meta && why[0]) e = sd_err_set(err, errlen, SD_ERR_CHECKPOINT, "%s", why);
        if (!e) e = sd_progress_batch_event(r, SD_SUP_EV_COMMIT, P->bs.incarnation, done, -1, offsets, done_ms, err, errlen);
        free(offsets);
        S->committed = done;
        S->begun = -1;
    }
    /* the next interval: from the newest completion in this incarnation */
    if (!e && S->begun < 0 && P->bs.commits > 0) {
        S->begun = S->committed + 1;
        e = sd_progress_batch_event(r, SD_SUP_EV_BEGIN, P->bs.incarnation, S->begun, -1, NULL, done_ms, err, errlen);
    }
    free(meta);
    return e;
}

static sd_err_t sd_flink_open(sd_run_t *r, void **state, char *err, size_t errlen) {
    char *dir = sd_scenario_expand(sd_run_sc(r)->checkpoint ? sd_run_sc(r)->checkpoint : "{checkpoint}", sd_run_vars(r), err, errlen);
    if (!dir) return SD_ERR_SCENARIO;
    sd_flink_source_t *S = sd_util_xcalloc(1, sizeof(*S));
    S->dir = dir;
    S->begun = S->committed = -1;
    *state = S;
    sd_ledger_meta_set(sd_run_ledger(r), "flink_checkpoints", dir, NULL, 0);
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
    return sd_run_progress(r)->bs.commits > 0;
}

const sd_progress_ops_t sd_progress_flink = {.name = "flink", .batches = 1, .intervals = 1, .partition_watermark = 1, .open = sd_flink_open,
                                             .close = sd_flink_close, .poll = sd_flink_poll, .ready = sd_flink_ready,
                                             .not_ready = "completed no checkpoint"};
