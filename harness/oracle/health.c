/* health.c - operational health from run.db (health.h).
 *
 *   batch_*_ms      commit_ms - begin_ms of every batch that began and
 *                   committed in one incarnation (nearest-rank quantiles)
 *   throughput_rps  rows of the committed batches over the time from the
 *                   first batch's begin to the last commit
 *   backlog_max     at every commit and every fault, what Kafka had
 *                   acknowledged of the source then (batch.acked,
 *                   fault.acked: recorded at that moment) less what the
 *                   pipeline had committed just before (the newest
 *                   commit's offsets), summed over the partitions
 *   restarts        incarnations after the first
 *   log_errors      lines of the pipeline's logs with ERROR, FATAL,
 *   log_warnings    Exception or Traceback; with WARN
 *   executors_lost  a Spark driver's "Lost executor N" lines (an executor
 *                   killed or its worker gone)
 *   tasks_lost      its "Lost task" lines (a task failed and retried)
 *   job_restarts, checkpoints_completed, checkpoints_failed,
 *   checkpoint_max_ms, checkpoint_bytes_max
 *                   a Flink JobManager's lines about the job (what
 *                   scenarios/deployed/flink-job.sh logs prints): "switched
 *                   from state RUNNING to RESTARTING", "Completed checkpoint
 *                   N for job J (B bytes, checkpointDuration=D ms, ...)",
 *                   and a checkpoint that failed to trigger or complete,
 *                   expired or was declined */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health.h"
#include "util.h"

static int sd_cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    int64_t *o;
    int n;
} sd_offs_into_t;

static void sd_health_one(void *opaque, int p, int64_t o) {
    sd_offs_into_t *t = opaque;
    if (p < t->n) t->o[p] = o;
}

/* An offsets list's source entries by partition (up to n); 0 when none. */
static int sd_health_offs(const char *s, int64_t *o, int n) {
    for (int i = 0; i < n; i++) o[i] = 0;
    sd_offs_into_t t = {o, n};
    return sd_util_each_offset(s, sd_health_one, &t) > 0;
}

static void sd_health_batches(sqlite3 *db, sd_health_t *h) {
    sqlite3_stmt *st = NULL;
    int64_t *d = NULL, n = 0, cap = 0, rows = 0, first = -1, last = -1;
    if (sqlite3_prepare_v2(db, "SELECT begin_ms, commit_ms, rows FROM batch", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            int has_b = sqlite3_column_type(st, 0) != SQLITE_NULL, has_c = sqlite3_column_type(st, 1) != SQLITE_NULL;
            int64_t b = sqlite3_column_int64(st, 0), c = sqlite3_column_int64(st, 1);
            if (has_b && (first < 0 || b < first)) first = b;
            if (!has_c) continue;
            if (c > last) last = c;
            if (sqlite3_column_type(st, 2) != SQLITE_NULL && sqlite3_column_int64(st, 2) > 0) rows += sqlite3_column_int64(st, 2);
            if (!has_b || c < b) continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 256;
                d = sd_util_xrealloc(d, sizeof(int64_t) * (size_t)cap);
            }
            d[n++] = c - b;
        }
    }
    sqlite3_finalize(st);
    h->batch_p50_ms = h->batch_p95_ms = h->batch_max_ms = -1;
    if (n) {
        qsort(d, (size_t)n, sizeof(int64_t), sd_cmp64);
        h->batch_p50_ms = d[(n - 1) * 50 / 100];
        h->batch_p95_ms = d[(n - 1) * 95 / 100];
        h->batch_max_ms = d[n - 1];
    }
    free(d);
    h->throughput_rps = first >= 0 && last > first && rows > 0 ? rows * 1000 / (last - first) : -1;
}

/* The backlog at each commit (before it) and each fault: acknowledged less
 * committed, over the time-ordered union of both. */
static void sd_health_backlog(sqlite3 *db, sd_health_t *h, void (*point)(void *, int64_t, int64_t), void *opaque) {
    enum { NP = 1024 };
    int64_t *committed = sd_util_xcalloc(NP, sizeof(int64_t)), *acked = sd_util_xcalloc(NP, sizeof(int64_t));
    int64_t *next = sd_util_xcalloc(NP, sizeof(int64_t));
    int have_commit = 0;
    h->backlog_max = -1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT t, offsets, acked FROM ("
                               " SELECT commit_ms AS t, offsets, acked, 0 AS k FROM batch WHERE commit_ms IS NOT NULL"
                               " UNION ALL SELECT t_ms, NULL, acked, 1 FROM fault WHERE acked IS NOT NULL AND undoes IS NULL)"
                               " ORDER BY t, k", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            int64_t t = sqlite3_column_int64(st, 0);
            const char *off = (const char *)sqlite3_column_text(st, 1);
            if (have_commit && sd_health_offs((const char *)sqlite3_column_text(st, 2), acked, NP)) {
                int64_t b = 0;
                for (int p = 0; p < NP; p++)
                    if (acked[p] > committed[p]) b += acked[p] - committed[p];
                if (b > h->backlog_max) h->backlog_max = b;
                if (point) point(opaque, t, b);
            }
            if (off && sd_health_offs(off, next, NP)) {
                memcpy(committed, next, sizeof(int64_t) * NP);
                have_commit = 1;
            }
        }
    }
    sqlite3_finalize(st);
    free(committed);
    free(acked);
    free(next);
}

/* A Flink JobManager's line about the job: a restart, a checkpoint. */
static void sd_health_flink_line(const char *line, sd_health_t *h) {
    const char *c;
    if (strstr(line, "switched from state RUNNING to RESTARTING")) h->job_restarts++;
    if ((c = strstr(line, "Completed checkpoint "))) {
        long long id, bytes, ms;
        char job[64];
        h->checkpoints_completed++;
        if (sscanf(c, "Completed checkpoint %lld for job %63s (%lld bytes, checkpointDuration=%lld ms", &id, job, &bytes, &ms) == 4) {
            if (ms > h->checkpoint_max_ms) h->checkpoint_max_ms = ms;
            if (bytes > h->checkpoint_bytes_max) h->checkpoint_bytes_max = bytes;
        }
    }
    if (strstr(line, "Failed to trigger checkpoint") || strstr(line, "Failed to trigger or complete checkpoint") ||
        (strstr(line, "Checkpoint ") && strstr(line, " expired before completing")) || strstr(line, "Decline checkpoint"))
        h->checkpoints_failed++;
}

/* Lines of a log file with an error word, with a warning word; Spark's
 * lost executors and tasks. */
static void sd_health_log(const char *path, sd_health_t *h) {
    FILE *f = path && *path ? fopen(path, "r") : NULL;
    if (!f) return;
    char line[4096];
    while (fgets(line, sizeof(line), f)) {
        if (strstr(line, "ERROR") || strstr(line, "FATAL") || strstr(line, "Exception") || strstr(line, "Traceback")) h->log_errors++;
        else if (strstr(line, "WARN")) h->log_warnings++;
        if (strstr(line, "Lost executor ")) h->executors_lost++;
        if (strstr(line, "Lost task ")) h->tasks_lost++;
        sd_health_flink_line(line, h);
        /* a line longer than the buffer is one line */
        while (!strchr(line, '\n') && fgets(line, sizeof(line), f)) {}
    }
    fclose(f);
}

void sd_health_compute(sqlite3 *db, sd_health_t *h, void (*point)(void *opaque, int64_t t_ms, int64_t records), void *opaque) {
    memset(h, 0, sizeof(*h));
    sd_health_batches(db, h);
    sd_health_backlog(db, h, point, opaque);
    sqlite3_stmt *st = NULL;
    int64_t incs = 0;
    if (sqlite3_prepare_v2(db, "SELECT log_out, log_err FROM incarnation", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            incs++;
            sd_health_log((const char *)sqlite3_column_text(st, 0), h);
            sd_health_log((const char *)sqlite3_column_text(st, 1), h);
        }
    }
    sqlite3_finalize(st);
    h->restarts = incs > 1 ? incs - 1 : 0;
    if (h->batch_p50_ms < 0) snprintf(h->why, sizeof(h->why), "no batch both began and committed in the pipeline's own account");
    else if (h->backlog_max < 0) snprintf(h->why, sizeof(h->why), "backlog: no commit names the offsets it reached");
}
