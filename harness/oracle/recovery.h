/* recovery.h - how the pipeline recovered from each fault: the figures a
 * runbook drill reports per fault and `expect` judges, computed from run.db
 * alone (faults, steps, the ledger's delivery reports, batches with their
 * offsets, anomalies, latency samples) and, when the target gives write
 * times, from when each event was first written there. docs/oracle.md
 * ("Recovery figures") says each definition. */
#ifndef SD_RECOVERY_H
#define SD_RECOVERY_H

#include <sqlite3.h>
#include <stdint.h>

#include "err.h"
#include "figures.h"

typedef struct sd_recovery_s {
    int64_t fault;          /* run.db fault.id */
    int line;               /* the drill line of the step it happened in (0 unknown) */
    char kind[16];
    int incarnation;        /* the incarnation it struck (0 none) */
    int ends;               /* it ended that incarnation (kill, stop, crash, a restart of a running one) */
    int64_t t_ms, end_ms;   /* wall ms; end_ms a stall's end, -1 */
    int64_t caught_ms;      /* when it was caught up again, -1 never or unknown */
    char basis[16];         /* what caught_ms comes from: "target" (its rows' write times), "commits", "samples" (the harness's looks at the target, where they say later) or "" */
    char acked[1024];       /* what Kafka had acknowledged when it struck ("P:O,...", fault.acked; "" unknown) */
    int64_t v[SD_FIG__COUNT];
    char why[600];          /* what could not be measured, and why */
} sd_recovery_t;

typedef struct sd_recovery_in_s {
    /* over the target events the harness sent before t (wall ms): the
     * newest first write of one to the target (wall ms), and into *n how
     * many there were, *missing how many were never written, *untimed how
     * many were written without a time (every one when the target gives no
     * write times, or the drill moved the pipeline's clock: then the
     * commits decide); NULL when the target's rows are not ids (a result
     * model's groups) */
    int64_t (*newest_seen)(void *opaque, int64_t t_ms, int64_t *n, int64_t *missing, int64_t *untimed);
    /* the latency quantiles (nearest rank) over every target event the
     * harness sent in [from, to) (wall ms) that has one: the count, 0 when
     * none; NULL: run.db's latency table, a sample for the charts, is used
     * instead (a run.db read back without the observations) */
    int64_t (*window_latency)(void *opaque, int64_t from, int64_t to, int64_t *p50, int64_t *p99);
    void *opaque;
    const char *sink; /* the target's name in anomaly and latency */
} sd_recovery_in_t;

/* Every fault's figures, oldest first (*out freed by the caller); the
 * count, or -1 when run.db cannot be read (err says why). */
int sd_recovery_compute(sqlite3 *db, const sd_recovery_in_t *in, sd_recovery_t **out, char *err, size_t errlen);
/* Store them in run.db's recovery table (figures as a JSON object). */
sd_err_t sd_recovery_store(sqlite3 *db, const sd_recovery_t *v, int n, char *err, size_t errlen);


#endif
