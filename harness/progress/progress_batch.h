/* progress_batch.h - what a progress source is (its ops) and what every
 * source may call (progress_batch.c): the batch state they feed, the
 * markers' readiness rule, the target's row count. Below the sources; the
 * interface the runner asks through is progress.h. */
#ifndef SD_PROGRESS_BATCH_H
#define SD_PROGRESS_BATCH_H

#include <stdint.h>

#include "err.h"
#include "supervisor.h"
#include "util.h"

struct sd_run_s;

/* Where the newest incarnation's batches are, whatever reports them. */
typedef struct sd_run_batches_s {
    int incarnation;
    int64_t begun, begun_rows, begun_mono;  /* newest batch begun, -1 if none */
    int64_t begun_sink_rows;                /* target rows when it began, -1 unknown */
    int64_t committed_sink_rows;            /* target rows when the newest commit was seen, -1 unknown */
    int begun_with_incarnation;             /* began when the process started (its duration includes start-up) */
    int64_t committed, committed_mono;      /* newest batch committed, -1 if none */
    int64_t commits;                        /* commits seen in this incarnation */
    int64_t last_event_mono;                /* any batch event, any incarnation */
    int64_t events;
    int64_t hist_rows[32], hist_ms[32];     /* the last completed batches: rows, duration */
    int nhist;
} sd_run_batches_t;

typedef struct sd_progress_ops_s {
    const char *name;
    /* it sees batches begin and commit: kills and pauses land on them, and
     * `await batches` counts them */
    int batches;
    /* a batch runs from one commit to the next and is always open while the
     * pipeline runs (Flink's checkpoint intervals): a kill aims at the
     * middle of an interval, and an open one is not work under way */
    int intervals;
    /* the engine keeps an event-time watermark per source partition, the
     * oldest of them (Flink's Kafka source): a window closes later than
     * under one watermark per source (Spark's), which the result models
     * allow for */
    int partition_watermark;
    /* the source's own state for the run (both may be NULL): open returns
     * it in *state, the run keeps it (sd_progress_run_t.source) and hands it back to close */
    sd_err_t (*open)(struct sd_run_s *r, void **state, char *err, size_t errlen);
    void (*close)(void *state);
    /* turn what changed since the last call into batch events (NULL: the
     * events are pushed by the supervisor) */
    sd_err_t (*poll)(struct sd_run_s *r, char *err, size_t errlen);
    /* poll now, however recently it polled (NULL: poll is always fresh):
     * a fault about to act on a batch it believes open asks first */
    sd_err_t (*refresh)(struct sd_run_s *r, char *err, size_t errlen);
    /* the batches the engine planned, with the source offsets each read
     * up to (NULL: the source cannot tell; see sd_progress_batch_ends) */
    int (*batch_ends)(struct sd_run_s *r, const int64_t **ids, const int64_t **ends);
    /* append what the engine's own records say now, for the runbook at a
     * fault (NULL: nothing beyond the batch events; see sd_progress_context) */
    void (*context)(struct sd_run_s *r, sd_buf_t *out);
    /* is the newest incarnation ready? st: its process; up_ms: since it started */
    int (*ready)(struct sd_run_s *r, const sd_sup_state_t *st, int64_t up_ms);
    /* records of open transactions in the pipeline's own topics beside the
     * target (a Kafka Streams application's repartition and changelog
     * topics); -1 none seen (NULL: the source knows of none) */
    int64_t (*open_records)(struct sd_run_s *r);
    /* what a readiness wait that timed out did not see (the warning's words) */
    const char *not_ready;
} sd_progress_ops_t;

/* The progress source's part of a run: progress/ writes it, the run reads
 * it (sd_run_progress). The batch state, the source's own state, what the
 * pipeline's commits say it consumed, and how it was found ready. */
typedef struct sd_progress_run_s {
    const sd_progress_ops_t *ops; /* where batches, readiness and catching up come from */
    void *source;                 /* the source's own state: what its open returned (a checkpoint, a group) */
    sd_run_batches_t bs;
    int64_t last_offsets_mono;    /* last commit marker with offsets */
    int64_t *consumed;            /* per source partition, from commits (-1 unknown) */
    int64_t *side_consumed;       /* per partition of the second source (deliveries), from commits (-1 unknown) */
    int broker_ports[8];          /* the ports a pipeline connects to: the broker's, the proxy's */
    int nbroker_ports;
    int no_ready_marker;          /* the pipeline was found ready by its connection: it prints no SD-READY */
    int64_t next_connect_check_mono;
    int64_t account_next;         /* 1 + the newest batch the pipeline's own account (Spark's progress) reported; 0 none */
    int account_stateful;         /* that account named state operators (a watermark may still evict and emit) */
    int64_t inc_started_wall;     /* when the newest incarnation was started */
    int64_t inc_events0;          /* batch events seen before it started */
    int64_t inc_rows0;            /* target rows when it started (-1 unknown) */
    int engine_inc;               /* the newest incarnation whose engine told its state (Kafka Streams' account), 0 none */
    int engine_running;           /* that incarnation's newest state is RUNNING */
    int aiming;                   /* a fault waits for a batch to begin: progress group looks for one at each pump */
} sd_progress_run_t;

extern const sd_progress_ops_t sd_progress_markers;
extern const sd_progress_ops_t sd_progress_sink;
extern const sd_progress_ops_t sd_progress_none;

/* The markers' readiness rule, for sources that fall back on it:
 * SD-READY, a batch seen, or a TCP connection to the broker after 1 s. */
int sd_progress_connected_ready(struct sd_run_s *r, const sd_sup_state_t *st, int64_t up_ms);
/* The target's row count when counting it is cheap (a sample took 20 ms
 * or less), else -1: what a batch's begin records. */
int64_t sd_progress_target_rows(struct sd_run_s *r);

/* Messages the harness sent past what the pipeline's newest commit says it
 * read (an estimate of an in-flight batch's size when its marker does not
 * say), -1 when the commits carry no offsets. */
int64_t sd_progress_rows_pending(const struct sd_run_s *r);
/* A batch began or committed in incarnation inc: record it in run.db and
 * keep the newest incarnation's batch state. offsets: "P:O,P:O" consumed
 * up to, on a commit (may be NULL). */
sd_err_t sd_progress_batch_event(struct sd_run_s *r, sd_sup_ev_type_t type, int inc, int64_t id, int64_t rows,
                                 const char *offsets, int64_t t_ms, char *err, size_t errlen);

#endif
