/* health.h - the pipeline's operational health over a run, from run.db:
 * how long its batches took, how fast it committed, how far its commits
 * fell behind what Kafka had acknowledged, how often it restarted, and
 * what its logs said. The runbook's "is it healthy?" beside the oracle's
 * "is the data right?" (docs/oracle.md, "Operational health"). */
#ifndef SD_HEALTH_H
#define SD_HEALTH_H

#include <sqlite3.h>
#include <stdint.h>

typedef struct sd_health_s {
    int64_t batch_p50_ms, batch_p95_ms, batch_max_ms; /* committed batches' begin to commit; -1 none */
    int64_t throughput_rps;                           /* -1 without two batch events and rows */
    int64_t backlog_max;                              /* -1 when no commit names its offsets */
    int64_t restarts;
    int64_t log_errors, log_warnings;
    int64_t executors_lost, tasks_lost;               /* a Spark driver's "Lost executor" and "Lost task" lines */
    int64_t job_restarts;                             /* a Flink JobManager's lines about the job: restarts, */
    int64_t checkpoints_completed, checkpoints_failed; /* checkpoints, the longest and the largest */
    int64_t checkpoint_max_ms, checkpoint_bytes_max;
    char why[256];                                    /* what could not be measured */
} sd_health_t;

/* The figures; the backlog at every commit and fault, as (t_ms, records),
 * handed to point (may be NULL) for the charts' table. */
void sd_health_compute(sqlite3 *db, sd_health_t *h, void (*point)(void *opaque, int64_t t_ms, int64_t records), void *opaque);

#endif
