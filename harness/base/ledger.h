/* ledger.h - run.db: everything a run knows, written as it happens.
 *
 * One SQLite file in WAL mode per run. The harness writes the plan, every
 * message it sends (before it hands it to Kafka, then its delivery report),
 * every fault, every pipeline incarnation and batch marker, sink samples,
 * the reconciliation's anomalies, counts and checks. Reports are pure
 * functions of this file, and a run that died half-way can still be read:
 * writes are grouped in short transactions (sd_ledger_commit) and WAL with
 * synchronous=NORMAL survives the death of the process.
 *
 * Ledger ids: every distinct event has a sequence number seq (0, 1, 2, ...)
 * and its id is "<tag>-<seq>", tag being the run's tag (meta 'tag'). A
 * duplicate (replay) is a new message with the seq of its original. The
 * reconciler maps an observed id back to seq by parsing it: no lookup.
 *
 * Messages (table sent) and their delivery reports (table ack, appended,
 * never updated in place) are read through the view `ledger`. While a run
 * sends, they are written in a packed form, one row per hand-over (table
 * pack), and written out as rows when the writer is idle, before any read
 * of them, at close, and by sd_ledger_unpack_file for a killed run.
 *
 * The API belongs to one thread (the runner's); the ledger's own writer
 * thread shares the connection under a mutex. */
#ifndef SD_LEDGER_H
#define SD_LEDGER_H

#include <sqlite3.h>
#include <stdint.h>

#include "err.h"

typedef struct sd_ledger_s sd_ledger_t;

/* One message as the harness is about to send it. */
typedef struct sd_send_s {
    int64_t seq;
    const char *kind;         /* valid, duplicate, late, malformed, out-of-order */
    const char *disposition;  /* target, dropped, quarantine */
    const char *detail;       /* malformed kind, replay origin, ... or NULL */
    int64_t event_time_ms;    /* or INT64_MIN when none */
    const char *key;          /* message key or NULL */
    size_t keylen;            /* its length; 0: up to its NUL */
    int step;                 /* index of the step that sent it */
    int side;                 /* to the second source (`deliveries`): seq is its scan's */
} sd_send_t;

/* Create a new run.db at path (must not exist). */
sd_err_t sd_ledger_create(const char *path, sd_ledger_t **out, char *err, size_t errlen);
/* Open an existing run.db (report rebuilding, tests). */
sd_err_t sd_ledger_open(const char *path, int readonly, sd_ledger_t **out, char *err, size_t errlen);
/* A run.db whose run was killed can hold messages still in their packed
 * form (table pack, see ledger.c): written out as rows of sent, side and
 * ack, so that every reader sees them. Does nothing when there are none. */
sd_err_t sd_ledger_unpack_file(const char *path, char *err, size_t errlen);
/* Commit what is pending and close. NULL is accepted. */
void sd_ledger_close(sd_ledger_t *l);

sqlite3 *sd_ledger_db(sd_ledger_t *l);

/* Commit the open transaction (if any) and start a new one lazily. */
sd_err_t sd_ledger_commit(sd_ledger_t *l, char *err, size_t errlen);
/* Commit the runner's own writes and hand what was gathered to the writer
 * thread without waiting for it (the runner's periodic commit). */
sd_err_t sd_ledger_checkpoint(sd_ledger_t *l, char *err, size_t errlen);
/* Milliseconds since the last commit (the runner commits every ~100 ms). */
int64_t sd_ledger_dirty_ms(sd_ledger_t *l);

sd_err_t sd_ledger_meta_set(sd_ledger_t *l, const char *key, const char *value, char *err, size_t errlen);
sd_err_t sd_ledger_meta_set_int(sd_ledger_t *l, const char *key, int64_t value, char *err, size_t errlen);
/* Caller frees; NULL when absent. */
char *sd_ledger_meta_get(sd_ledger_t *l, const char *key);

/* Record a message before it is sent. *n_out is its message number. */
sd_err_t sd_ledger_send(sd_ledger_t *l, const sd_send_t *s, int64_t queued_ms, int64_t *n_out,
                        char *err, size_t errlen);
/* Record its delivery report: partition/offset on success, error text on failure. */
sd_err_t sd_ledger_ack(sd_ledger_t *l, int64_t n, int32_t partition, int64_t offset, int64_t acked_ms,
                       const char *error, char *err, size_t errlen);
/* Messages and delivery reports are gathered by the calling thread and
 * written by the ledger's writer thread in batches (multi-row INSERTs, one
 * transaction each). sd_ledger_submit hands over what was gathered and
 * returns its ticket; sd_ledger_wait returns once that ticket is committed
 * (or with the writer's error). The runner waits for a batch's ticket
 * before it hands the batch to Kafka: the ledger holds every message before
 * Kafka sees it. sd_ledger_commit waits for everything. */
int64_t sd_ledger_submit(sd_ledger_t *l);
sd_err_t sd_ledger_wait(sd_ledger_t *l, int64_t ticket, char *err, size_t errlen);
/* The newest ticket committed (without waiting). */
int64_t sd_ledger_done(sd_ledger_t *l);

/* Steps of the plan. */
sd_err_t sd_ledger_step_begin(sd_ledger_t *l, int idx, int line, const char *text, char *err, size_t errlen);
sd_err_t sd_ledger_step_end(sd_ledger_t *l, int idx, const char *status, const char *detail, char *err, size_t errlen);

/* A fault or notable event. Returns its id in *id_out (may be NULL). */
/* Who says what Kafka had acknowledged of the source when a fault is
 * recorded ("P:O,..." one past the newest acknowledged offset per
 * partition): kept in fault.acked for the recovery figures. */
void sd_ledger_set_frontier(sd_ledger_t *l, void (*fn)(void *opaque, char *out, size_t outlen), void *opaque);
sd_err_t sd_ledger_fault(sd_ledger_t *l, int step, const char *kind, const char *detail, int incarnation,
                         int64_t *id_out, char *err, size_t errlen);
/* Where a kill landed. */
/* A fault step that did not do what it says: its fault row (made when it
 * has none) marked not landed, why appended to its landing. */
/* A record that undoes the newest open fault of kind undone (detail LIKE
 * like): sets its end_ms and names it in the new record's undoes. */
sd_err_t sd_ledger_fault_undo(sd_ledger_t *l, int step, const char *undone, const char *like, const char *kind,
                              const char *detail, int incarnation, char *err, size_t errlen);
/* What an idle timeout saw while it was on (sd_proxy_idle_seen_t). */
sd_err_t sd_ledger_idle_watch(sd_ledger_t *l, int64_t fault, int64_t timeout_ms, int64_t connections, int64_t quiet_closed,
                              int64_t max_quiet_ms, char *err, size_t errlen);
/* Fault id did not strike at all (a kill that left the pipeline running):
 * no recovery is computed for it; why is its landing. */
/* What the pipeline's own records said at a fault (its checkpoints, its
 * sink's newest commit), for the runbook. */
sd_err_t sd_ledger_fault_context(sd_ledger_t *l, int64_t id, const char *context, char *err, size_t errlen);
sd_err_t sd_ledger_fault_unstruck(sd_ledger_t *l, int64_t id, const char *why, char *err, size_t errlen);
/* A connection dropped under an idle timeout (times in wall ms; -1: never). */
sd_err_t sd_ledger_idle_drop(sd_ledger_t *l, int64_t fault, int64_t dropped_ms, int64_t used_ms, int64_t closed_ms, char *err,
                             size_t errlen);
sd_err_t sd_ledger_fault_missed(sd_ledger_t *l, int step, const char *kind, int incarnation, const char *why, char *err,
                                size_t errlen);
/* A source partition a broker fault's broker led: its new leader (-1: none
 * in time) and how long it had none (-1: not known). */
sd_err_t sd_ledger_leader_move(sd_ledger_t *l, int64_t fault, int partition, int old_leader, int new_leader, int64_t leaderless_ms,
                               char *err, size_t errlen);
/* Append text to fault id's landing ("; " between). */
/* A generated event probing an edge (run.db edge). */
sd_err_t sd_ledger_edge(sd_ledger_t *l, const char *id, const char *source, const char *edge, int64_t at_ms, int offset_ms,
                        char *err, size_t errlen);
sd_err_t sd_ledger_fault_note(sd_ledger_t *l, int64_t id, const char *text, char *err, size_t errlen);
sd_err_t sd_ledger_fault_landing(sd_ledger_t *l, int64_t id, int64_t batch, int landed, int64_t rows_visible,
                                 int64_t batch_rows, const char *detail, char *err, size_t errlen);

/* The backlog at one moment: records acknowledged, not yet committed. */
sd_err_t sd_ledger_backlog(sd_ledger_t *l, int64_t t_ms, int64_t records, char *err, size_t errlen);
sd_err_t sd_ledger_warning(sd_ledger_t *l, const char *kind, const char *detail, char *err, size_t errlen);
/* The events seq_lo..seq_hi-1, sent as valid in a transaction the broker
 * aborted, recorded as `abort=` records its own: kind aborted, disposition
 * dropped, detail why. */
sd_err_t sd_ledger_mark_aborted(sd_ledger_t *l, int64_t seq_lo, int64_t seq_hi, const char *why, char *err, size_t errlen);

/* version: what the header's `version` line found (NULL: none). */
/* instance: which of the pipeline's instances (1 without instances=) */
sd_err_t sd_ledger_incarnation_begin(sd_ledger_t *l, int n, int instance, int pid, const char *argv, const char *log_out,
                                     const char *log_err, int64_t started_ms, const char *version, char *err, size_t errlen);
/* The versions an incarnation named itself (its ready line), kept when the
 * header's `version` line gave none. */
/* The engine's own account from its log (supervisor.h, sd_sup_streams_line's
 * words: "state A B" or "restored N STORE"); other words are let go. */
sd_err_t sd_ledger_engine(sd_ledger_t *l, int incarnation, int64_t t_ms, const char *words, char *err, size_t errlen);
sd_err_t sd_ledger_incarnation_version(sd_ledger_t *l, int n, const char *version, char *err, size_t errlen);
sd_err_t sd_ledger_incarnation_end(sd_ledger_t *l, int n, int64_t ended_ms, int exit_code, int exit_signal,
                                   const char *ended_by, char *err, size_t errlen);
sd_err_t sd_ledger_batch(sd_ledger_t *l, int incarnation, int64_t id, const char *phase, int64_t t_ms,
                         int64_t rows, const char *offsets, char *err, size_t errlen);
/* A sink's row count as the harness read it at t_ms; looked_ms: its look
 * before, which counted other rows (-1 none). */
sd_err_t sd_ledger_sample(sd_ledger_t *l, int64_t t_ms, const char *sink, int64_t rows, int64_t looked_ms, char *err, size_t errlen);
sd_err_t sd_ledger_watermark(sd_ledger_t *l, int64_t t_ms, int32_t partition, int64_t low, int64_t high,
                             char *err, size_t errlen);

/* The pipeline's own account of a batch (Spark's StreamingQueryProgress). */
sd_err_t sd_ledger_progress(sd_ledger_t *l, int incarnation, int64_t t_ms, const char *query, int64_t batch,
                            int64_t input_rows, int64_t dropped, int64_t duration_ms, const char *json, char *err,
                            size_t errlen);

/* The state one stateful operator left after a batch (INT64_MIN: not reported). */
typedef struct sd_state_row_s {
    int incarnation;
    int64_t t_ms;
    const char *query;        /* Spark's query name, "" for markers */
    int64_t batch;
    const char *op;           /* Spark's operatorName#index, or "markers" */
    int64_t rows_total, rows_updated, rows_removed, memory_bytes, watermark_ms, input_rows;
    const char *custom;       /* the operator's customMetrics JSON (the RocksDB figures), or NULL */
} sd_state_row_t;
sd_err_t sd_ledger_state(sd_ledger_t *l, const sd_state_row_t *s, char *err, size_t errlen);
/* Each batch's rows read and state rows (summed over its operators), per
 * query in batch order, the newest report of a batch that ran more than once. */
sd_err_t sd_ledger_each_state(sd_ledger_t *l, void (*cb)(void *opaque, const char *query, int64_t input_rows, int64_t state_rows),
                          void *opaque);
/* Batches that read rows, and the most rows one read (the largest over
 * queries); both -1 when no batch said its size. */
sd_err_t sd_ledger_batch_bounds(sd_ledger_t *l, int64_t *batches, int64_t *rows_max);
/* Lowest and highest event time of the valid events sent (INT64_MIN: none). */
sd_err_t sd_ledger_event_span(sd_ledger_t *l, int64_t *lo, int64_t *hi);

/* Each acknowledged tombstone (`inject delete=`): its seq and its key. */
sd_err_t sd_ledger_each_delete(sd_ledger_t *l, void (*cb)(void *opaque, int64_t seq, const char *key), void *opaque);
/* Each acknowledged message of the second source (`deliveries`): the seq
 * of its scan, its event time, its key, and where the contract sends it
 * ("target"; "dropped" or "quarantine" for a late, future or malformed
 * delivery). */
sd_err_t sd_ledger_each_side(sd_ledger_t *l, void (*cb)(void *opaque, int64_t seq, int64_t t_ms, const char *key, const char *disp),
                         void *opaque);
/* Each acknowledged message with an event time, of the source (side 0) and
 * the second source (side 1), in the order they were handed to Kafka. */
sd_err_t sd_ledger_each_arrival(sd_ledger_t *l, void (*cb)(void *opaque, int side, int64_t seq, int64_t t_ms), void *opaque);

/* The oldest of the partitions' newest event times, over the events sent to
 * the target and the second source's: the watermark an engine that keeps
 * one per Kafka partition (Flink) reaches. INT64_MIN: none. */
int64_t sd_ledger_oldest_partition_max(sd_ledger_t *l);

/* Highest seq assigned so far + 1 (after a reopen). */
int64_t sd_ledger_max_seq(sd_ledger_t *l);

/* ---- reads and writes of the reconciliation (run_judge.c) ----
 *
 * A reader that cannot read (a statement that does not prepare or stops
 * on an error, messages that will not settle into their rows) returns the
 * error and keeps it as the run's (sd_ledger_error, every later commit):
 * it never answers with an empty set. The counts answer 0 then. */

/* Messages acknowledged by the broker (with an offset), and messages that
 * failed or were never acknowledged. */
int64_t sd_ledger_count_produced(sd_ledger_t *l);
int64_t sd_ledger_count_send_failed(sd_ledger_t *l);
/* cb(opaque, seq) for every original (not a replay) that failed or was never acknowledged. */
sd_err_t sd_ledger_each_unsent(sd_ledger_t *l, void (*cb)(void *opaque, int64_t seq), void *opaque);
/* cb(opaque, seq, partition, offset) for every acknowledged message. */
/* Every acknowledged message's seq and event time as sent (INT64_MIN when
 * it had none), for the result models. */
sd_err_t sd_ledger_each_event_time(sd_ledger_t *l, void (*cb)(void *opaque, int64_t seq, int64_t t_ms), void *opaque);
/* A result model's anomalous groups (table group_anomaly). */
typedef struct {
    int64_t start_ms;
    const char *keys;     /* "location=AMS-03 ..." */
    const char *buckets;  /* "wrong_value,emitted_twice" */
    const char *detail;
} sd_ledger_group_t;
sd_err_t sd_ledger_groups(sd_ledger_t *l, const char *sink, const sd_ledger_group_t *v, int64_t n, char *err, size_t errlen);
/* Every acknowledged message of the source (side: of the second source,
 * each named by its scan's seq), with whether Kafka lost it since: its
 * offset is at or past the partition's end now (ends[p], the high
 * watermarks), or a later acknowledgement names the same offset. */
sd_err_t sd_ledger_each_acked_lost(sd_ledger_t *l, int side, const int64_t *ends, int nparts,
                               void (*cb)(void *opaque, int64_t seq, int lost), void *opaque);
sd_err_t sd_ledger_each_position(sd_ledger_t *l, void (*cb)(void *opaque, int64_t seq, int partition, int64_t offset),
                             void *opaque);
/* cb(opaque, seq, partition, offset, event time as sent or INT64_MIN) for
 * every acknowledged message of the source. */
sd_err_t sd_ledger_each_placed(sd_ledger_t *l, void (*cb)(void *opaque, int64_t seq, int partition, int64_t offset, int64_t t_ms),
                               void *opaque);
/* cb(opaque, incarnation, batch, begin_ms, end_ms) for every batch that began,
 * oldest first; end_ms is its commit, else its incarnation's end, else INT64_MAX. */
sd_err_t sd_ledger_each_batch_window(sd_ledger_t *l, void (*cb)(void *opaque, int inc, int64_t batch, int64_t begin_ms,
                                                            int64_t end_ms), void *opaque);
/* cb(opaque, t_ms, rows, inc) for every sampled row count of a sink, oldest
 * first, with the incarnation that was running then (the newest started at
 * or before t_ms, 0 before the first): which incarnation wrote the N-th row
 * of an append-only sink that gives no write times. */
sd_err_t sd_ledger_each_growth(sd_ledger_t *l, const char *sink, void (*cb)(void *opaque, int64_t t_ms, int64_t rows, int inc),
                           void *opaque);
/* cb(opaque, t_ms, rows, looked_ms) for every sample of a sink's row
 * count, oldest first (looked_ms -1: unknown). */
sd_err_t sd_ledger_each_sample(sd_ledger_t *l, const char *sink, void (*cb)(void *opaque, int64_t t_ms, int64_t rows, int64_t looked_ms),
                               void *opaque, char *err, size_t errlen);
/* counts(name, value): names[i] prefixed with prefix ("" for the target). */
sd_err_t sd_ledger_counts(sd_ledger_t *l, const char *prefix, const char *const *names, const int64_t *values, int n,
                          char *err, size_t errlen);
/* One anomalous ledger id of a sink (writers may be NULL). */
typedef struct sd_ledger_anomaly_s {
    int64_t seq;
    const char *bucket;
    int64_t copies;
    const char *writers;
} sd_ledger_anomaly_t;
sd_err_t sd_ledger_anomalies(sd_ledger_t *l, const char *sink, const sd_ledger_anomaly_t *v, int64_t n, char *err,
                             size_t errlen);
/* Sink rows whose ids map to no ledger event (one statement for all). */
typedef struct sd_ledger_unexpected_s {
    const char *raw_id;
    int64_t copies;
    const char *writers;
} sd_ledger_unexpected_t;
sd_err_t sd_ledger_unexpected(sd_ledger_t *l, const char *sink, const sd_ledger_unexpected_t *v, int64_t n, char *err,
                              size_t errlen);
/* One check of the verdict. */
sd_err_t sd_ledger_check(sd_ledger_t *l, int idx, const char *name, int pass, const char *expected, const char *actual,
                         const char *detail, char *err, size_t errlen);
/* The run's first ledger failure (a write, or a read that could not be
 * made: every reader above returns it and keeps it), SD_OK when none. */
sd_err_t sd_ledger_error(sd_ledger_t *l, char *err, size_t errlen);
/* Latency samples of a sink: seq, when it was handed to Kafka, when it was first seen. */
sd_err_t sd_ledger_latency(sd_ledger_t *l, const char *sink, const int64_t *seq, const int64_t *sent_ms,
                           const int64_t *seen_ms, int64_t n, char *err, size_t errlen);
/* After the reconciliation: an index the reports need when there are anomalies. */
void sd_ledger_index_for_reports(sd_ledger_t *l);
/* One partition's offsets [begin, end) of the source a batch read. */
typedef struct sd_offset_range_s {
    int partition;
    int64_t begin, end;
} sd_offset_range_t;
/* The ranges of the source a progress report (its json) says its batch
 * read, into *out (caller frees); their number, -1 when the report does
 * not name the source (progress_spark.c reads Spark's). */
typedef int (*sd_account_ranges_fn)(void *opaque, const char *json, sd_offset_range_t **out);
/* The pipeline's own account (table progress) against the ledger, into table
 * account; one summary per query through warn(opaque, disagrees, text).
 * Does nothing when the pipeline reported no progress. */
sd_err_t sd_ledger_compare_account(sd_ledger_t *l, int64_t produced, sd_account_ranges_fn ranges,
                                   void (*warn)(void *opaque, int disagrees, const char *text), void *opaque);

#endif
