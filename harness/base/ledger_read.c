/* ledger_read.c - the judge's readers, the reconciliation's bulk writes and the pipeline's own account beside the ledger's (see ledger_int.h). The account's reports are read by the progress source that wrote them (ranges). */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ledger_int.h"
#include "util.h"

/* ---- the judge's readers ----
 *
 * Every reader runs its query through sd_ledger_rows: a query that cannot
 * be prepared or stops on an error (a damaged page, a busy database), and
 * messages that cannot be settled into their rows (a damaged pack), are
 * the run's error (sd_ledger_read_failed), returned and reported by every
 * later commit: a reader that could not read never answers "none". */

/* One reader's query: row(ctx, st) for each row; messages and delivery
 * reports settled first when `settle`; text bound as ?1 unless NULL. */
static sd_err_t sd_ledger_rows(sd_ledger_t *l, int settle, const char *sql, const char *text, const char *op,
                               void (*row)(void *ctx, sqlite3_stmt *st), void *ctx) {
    char why[512] = "";
    sd_err_t e = SD_OK;
    if (settle) e = sd_ledger_lock_read(l, why, sizeof(why));
    else pthread_mutex_lock(&l->mu);
    sqlite3_stmt *st = NULL;
    if (!e && sqlite3_prepare_v2(l->db, sql, -1, &st, NULL) != SQLITE_OK) {
        e = sd_ledger_sqlerr(l, op, why, sizeof(why));
    } else if (!e) {
        if (text) sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) row(ctx, st);
        if (rc != SQLITE_DONE) e = sd_ledger_sqlerr(l, op, why, sizeof(why));
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&l->mu);
    return sd_ledger_read_failed(l, e, why);
}

static int64_t sd_col64(sqlite3_stmt *st, int i) { return sqlite3_column_type(st, i) == SQLITE_NULL ? INT64_MIN : sqlite3_column_int64(st, i); }

/* a reader's callback and its opaque, for the row adapters below */
typedef struct {
    void (*cb)(void);
    void *opaque;
    int64_t v[3];
} sd_lrow_t;

static void sd_row_state(void *c, sqlite3_stmt *st) {
    sd_lrow_t *x = c;
    ((void (*)(void *, const char *, int64_t, int64_t))x->cb)(x->opaque, (const char *)sqlite3_column_text(st, 0),
                                                            sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2));
}

/* Each batch's state, summed over its operators, per query in batch order;
 * a batch reported more than once (re-run by a later incarnation) counts
 * as its newest report. */
sd_err_t sd_ledger_each_state(sd_ledger_t *l, void (*cb)(void *opaque, const char *query, int64_t input_rows, int64_t state_rows),
                              void *opaque) {
    sd_lrow_t x = {(void (*)(void))cb, opaque, {0}};
    return sd_ledger_rows(l, 0,
                          "WITH k AS (SELECT query, batch, max(t_ms) AS t FROM state GROUP BY query, batch)"
                          " SELECT s.query, max(coalesce(s.input_rows, 0)), sum(coalesce(s.rows_total, 0))"
                          " FROM state s JOIN k ON k.query = s.query AND k.batch = s.batch AND k.t = s.t_ms"
                          " GROUP BY s.query, s.batch ORDER BY s.query, s.batch",
                          NULL, "read the state the batches left", sd_row_state, &x);
}

/* the first row's three numbers (INT64_MIN where NULL), v[2] also counts rows */
static void sd_row_first(void *c, sqlite3_stmt *st) {
    sd_lrow_t *x = c;
    if (x->opaque) return; /* taken */
    for (int i = 0; i < 3 && i < sqlite3_column_count(st); i++) x->v[i] = sd_col64(st, i);
    x->opaque = x;
}

/* Batches that read rows and the most one read, per query: from the
 * pipeline's own account when it gave one (newest report per batch), else
 * from the batch markers' rows= (a re-run batch once). */
sd_err_t sd_ledger_batch_bounds(sd_ledger_t *l, int64_t *batches, int64_t *rows_max) {
    static const char *const sql[2] = {
        "WITH p AS (SELECT query, batch, input_rows, row_number() OVER (PARTITION BY query, batch ORDER BY t_ms DESC) AS k"
        " FROM progress WHERE batch >= 0), q AS (SELECT query, sum(input_rows > 0) AS n, max(input_rows) AS m FROM p"
        " WHERE k = 1 GROUP BY query) SELECT max(n), max(m), count(*) FROM q",
        "WITH b AS (SELECT id, max(rows) AS rows FROM batch WHERE commit_ms IS NOT NULL AND rows IS NOT NULL AND rows >= 0"
        " GROUP BY id) SELECT sum(rows > 0), max(rows), count(*) FROM b"};
    *batches = *rows_max = -1;
    sd_err_t e = SD_OK;
    for (int pass = 0; pass < 2 && *batches < 0 && !e; pass++) {
        sd_lrow_t x = {NULL, NULL, {INT64_MIN, INT64_MIN, 0}};
        e = sd_ledger_rows(l, 0, sql[pass], NULL, "read the batches' sizes", sd_row_first, &x);
        if (!e && x.v[2] > 0) {
            *batches = x.v[0] == INT64_MIN ? 0 : x.v[0];
            *rows_max = x.v[1] == INT64_MIN ? 0 : x.v[1];
        }
    }
    return e;
}

/* The event times of the events sent as valid: the span a drill covered. */
sd_err_t sd_ledger_event_span(sd_ledger_t *l, int64_t *lo, int64_t *hi) {
    sd_lrow_t x = {NULL, NULL, {INT64_MIN, INT64_MIN, 0}};
    sd_err_t e = sd_ledger_rows(l, 1, "SELECT min(event_time_ms), max(event_time_ms) FROM sent WHERE kind = 'valid'", NULL,
                                "read the event times sent", sd_row_first, &x);
    *lo = x.v[0];
    *hi = x.v[0] == INT64_MIN ? INT64_MIN : x.v[1];
    return e;
}

/* A one-value query (count(*), ...), INT64_MIN where NULL; 0 on a failure
 * (kept: the run's error). */
int64_t sd_ledger_scalar(sd_ledger_t *l, const char *sql) {
    sd_lrow_t x = {NULL, NULL, {INT64_MIN, 0, 0}};
    if (sd_ledger_rows(l, 1, sql, NULL, "read a count", sd_row_first, &x)) return 0;
    return x.v[0];
}

int64_t sd_ledger_max_seq(sd_ledger_t *l) { return sd_ledger_scalar(l, "SELECT coalesce(max(seq)+1,0) FROM ledger"); }

/* ---- reads and writes of the reconciliation ---- */

int64_t sd_ledger_count_produced(sd_ledger_t *l) {
    return sd_ledger_scalar(l, "SELECT count(*) FROM ledger WHERE offset IS NOT NULL");
}

int64_t sd_ledger_count_send_failed(sd_ledger_t *l) {
    return sd_ledger_scalar(l, "SELECT count(*) FROM ledger WHERE error IS NOT NULL OR acked_ms IS NULL");
}

static void sd_row_seq(void *c, sqlite3_stmt *st) {
    sd_lrow_t *x = c;
    ((void (*)(void *, int64_t))x->cb)(x->opaque, sqlite3_column_int64(st, 0));
}

sd_err_t sd_ledger_each_unsent(sd_ledger_t *l, void (*cb)(void *opaque, int64_t seq), void *opaque) {
    sd_lrow_t x = {(void (*)(void))cb, opaque, {0}};
    /* failed or never acknowledged originals: rare, found through the error column */
    return sd_ledger_rows(l, 1, "SELECT seq FROM ledger WHERE kind<>'duplicate' AND (error IS NOT NULL OR acked_ms IS NULL)", NULL,
                          "read the messages Kafka never acknowledged", sd_row_seq, &x);
}

static void sd_row_position(void *c, sqlite3_stmt *st) {
    sd_lrow_t *x = c;
    ((void (*)(void *, int64_t, int, int64_t))x->cb)(x->opaque, sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1),
                                                   sqlite3_column_int64(st, 2));
}

sd_err_t sd_ledger_each_position(sd_ledger_t *l, void (*cb)(void *opaque, int64_t seq, int partition, int64_t offset), void *opaque) {
    sd_lrow_t x = {(void (*)(void))cb, opaque, {0}};
    return sd_ledger_rows(l, 1, "SELECT seq, partition, offset FROM ledger WHERE offset IS NOT NULL", NULL,
                          "read the messages' offsets", sd_row_position, &x);
}

static void sd_row_placed(void *c, sqlite3_stmt *st) {
    sd_lrow_t *x = c;
    ((void (*)(void *, int64_t, int, int64_t, int64_t))x->cb)(x->opaque, sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1),
                                                            sqlite3_column_int64(st, 2), sd_col64(st, 3));
}

sd_err_t sd_ledger_each_placed(sd_ledger_t *l, void (*cb)(void *opaque, int64_t seq, int partition, int64_t offset, int64_t t_ms),
                               void *opaque) {
    sd_lrow_t x = {(void (*)(void))cb, opaque, {0}};
    return sd_ledger_rows(l, 1, "SELECT seq, partition, offset, event_time_ms FROM ledger WHERE offset IS NOT NULL", NULL,
                          "read the messages' offsets and event times", sd_row_placed, &x);
}

/* two acknowledgements of one offset: the partition was cut back and the
 * offset written again, so the earlier event is gone */
typedef struct {
    void (*cb)(void *opaque, int64_t seq, int lost);
    void *opaque;
    const int64_t *ends;
    int nparts;
    int64_t pseq, poff;
    int ppart, have;
} sd_lost_scan_t;

static void sd_row_acked_lost(void *c, sqlite3_stmt *st) {
    sd_lost_scan_t *x = c;
    int64_t seq = sqlite3_column_int64(st, 0), off = sqlite3_column_int64(st, 2);
    int part = sqlite3_column_int(st, 1);
    if (x->have)
        x->cb(x->opaque, x->pseq, (part == x->ppart && off == x->poff) || (x->ppart >= 0 && x->ppart < x->nparts && x->poff >= x->ends[x->ppart]));
    x->pseq = seq, x->poff = off, x->ppart = part, x->have = 1;
}

sd_err_t sd_ledger_each_acked_lost(sd_ledger_t *l, int side, const int64_t *ends, int nparts,
                                   void (*cb)(void *opaque, int64_t seq, int lost), void *opaque) {
    sd_lost_scan_t x = {cb, opaque, ends, nparts, -1, -1, -1, 0};
    sd_err_t e = sd_ledger_rows(l, 1,
                                side ? "SELECT seq, partition, offset FROM side_ledger WHERE offset >= 0 AND error IS NULL"
                                       " ORDER BY partition, offset, acked_ms, n"
                                     : "SELECT seq, partition, offset FROM ledger WHERE offset >= 0 AND error IS NULL"
                                       " ORDER BY partition, offset, acked_ms, n",
                                NULL, "read the acknowledged offsets", sd_row_acked_lost, &x);
    if (!e && x.have) cb(opaque, x.pseq, x.ppart >= 0 && x.ppart < nparts && x.poff >= ends[x.ppart]);
    return e;
}

static void sd_row_event_time(void *c, sqlite3_stmt *st) {
    sd_lrow_t *x = c;
    ((void (*)(void *, int64_t, int64_t))x->cb)(x->opaque, sqlite3_column_int64(st, 0), sd_col64(st, 1));
}

sd_err_t sd_ledger_each_event_time(sd_ledger_t *l, void (*cb)(void *opaque, int64_t seq, int64_t t_ms), void *opaque) {
    sd_lrow_t x = {(void (*)(void))cb, opaque, {0}};
    return sd_ledger_rows(l, 1, "SELECT seq, event_time_ms FROM ledger WHERE offset IS NOT NULL", NULL, "read the event times sent",
                          sd_row_event_time, &x);
}

static void sd_row_delete(void *c, sqlite3_stmt *st) {
    sd_lrow_t *x = c;
    ((void (*)(void *, int64_t, const char *))x->cb)(x->opaque, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1));
}

sd_err_t sd_ledger_each_delete(sd_ledger_t *l, void (*cb)(void *opaque, int64_t seq, const char *key), void *opaque) {
    sd_lrow_t x = {(void (*)(void))cb, opaque, {0}};
    return sd_ledger_rows(l, 1, "SELECT seq, msg_key FROM ledger WHERE kind = 'delete' AND offset IS NOT NULL ORDER BY n", NULL,
                          "read the tombstones sent", sd_row_delete, &x);
}

static void sd_row_side(void *c, sqlite3_stmt *st) {
    sd_lrow_t *x = c;
    ((void (*)(void *, int64_t, int64_t, const char *, const char *))x->cb)(
        x->opaque, sqlite3_column_int64(st, 0), sd_col64(st, 1), (const char *)sqlite3_column_text(st, 2), (const char *)sqlite3_column_text(st, 3));
}

sd_err_t sd_ledger_each_side(sd_ledger_t *l, void (*cb)(void *opaque, int64_t seq, int64_t t_ms, const char *key, const char *disp),
                             void *opaque) {
    sd_lrow_t x = {(void (*)(void))cb, opaque, {0}};
    return sd_ledger_rows(l, 1, "SELECT seq, event_time_ms, msg_key, coalesce(disposition, 'target') FROM side_ledger"
                                " WHERE offset IS NOT NULL ORDER BY n", NULL, "read the second source's messages", sd_row_side, &x);
}

static void sd_row_arrival(void *c, sqlite3_stmt *st) {
    sd_lrow_t *x = c;
    ((void (*)(void *, int, int64_t, int64_t))x->cb)(x->opaque, sqlite3_column_int(st, 0), sqlite3_column_int64(st, 1),
                                                   sqlite3_column_int64(st, 2));
}

sd_err_t sd_ledger_each_arrival(sd_ledger_t *l, void (*cb)(void *opaque, int side, int64_t seq, int64_t t_ms), void *opaque) {
    sd_lrow_t x = {(void (*)(void))cb, opaque, {0}};
    return sd_ledger_rows(l, 1,
                          "SELECT 0, seq, event_time_ms, n FROM ledger WHERE offset IS NOT NULL AND event_time_ms IS NOT NULL UNION ALL"
                          " SELECT 1, seq, event_time_ms, n FROM side_ledger WHERE offset IS NOT NULL AND event_time_ms IS NOT NULL ORDER BY 4",
                          NULL, "read the order messages reached Kafka in", sd_row_arrival, &x);
}

int64_t sd_ledger_oldest_partition_max(sd_ledger_t *l) {
    return sd_ledger_scalar(l, "SELECT min(m) FROM (SELECT max(event_time_ms) AS m FROM ledger WHERE offset IS NOT NULL AND disposition = 'target'"
                               " GROUP BY partition UNION ALL SELECT max(event_time_ms) FROM side_ledger WHERE offset IS NOT NULL GROUP BY partition)");
}

static void sd_row_window(void *c, sqlite3_stmt *st) {
    sd_lrow_t *x = c;
    ((void (*)(void *, int, int64_t, int64_t, int64_t))x->cb)(x->opaque, sqlite3_column_int(st, 0), sqlite3_column_int64(st, 1),
                                                            sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3));
}

sd_err_t sd_ledger_each_batch_window(sd_ledger_t *l, void (*cb)(void *opaque, int inc, int64_t batch, int64_t begin_ms, int64_t end_ms),
                                     void *opaque) {
    sd_lrow_t x = {(void (*)(void))cb, opaque, {0}};
    return sd_ledger_rows(l, 0,
                          "SELECT b.incarnation, b.id, b.begin_ms, coalesce(b.commit_ms, i.ended_ms, 9223372036854775807)"
                          " FROM batch b LEFT JOIN incarnation i ON i.n = b.incarnation WHERE b.begin_ms IS NOT NULL ORDER BY b.begin_ms",
                          NULL, "read the batches' windows", sd_row_window, &x);
}

static void sd_row_growth(void *c, sqlite3_stmt *st) {
    sd_lrow_t *x = c;
    ((void (*)(void *, int64_t, int64_t, int))x->cb)(x->opaque, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                                                   sqlite3_column_int(st, 2));
}

sd_err_t sd_ledger_each_growth(sd_ledger_t *l, const char *sink, void (*cb)(void *opaque, int64_t t_ms, int64_t rows, int inc), void *opaque) {
    sd_lrow_t x = {(void (*)(void))cb, opaque, {0}};
    return sd_ledger_rows(l, 0,
                          "SELECT s.t_ms, s.rows, coalesce((SELECT max(n) FROM incarnation WHERE started_ms <= s.t_ms), 0)"
                          " FROM sample s WHERE s.sink = ? ORDER BY s.t_ms, s.rowid",
                          sink, "read the sink's growth", sd_row_growth, &x);
}

static void sd_row_sample(void *c, sqlite3_stmt *st) {
    sd_lrow_t *x = c;
    ((void (*)(void *, int64_t, int64_t, int64_t))x->cb)(x->opaque, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                                                       sqlite3_column_int64(st, 2));
}

sd_err_t sd_ledger_each_sample(sd_ledger_t *l, const char *sink, void (*cb)(void *opaque, int64_t t_ms, int64_t rows, int64_t looked_ms),
                               void *opaque, char *err, size_t errlen) {
    sd_lrow_t x = {(void (*)(void))cb, opaque, {0}};
    sd_err_t e = sd_ledger_rows(l, 0, "SELECT t_ms, rows, coalesce(looked_ms, -1) FROM sample WHERE sink = ? ORDER BY t_ms, rowid", sink,
                                "read the sink samples", sd_row_sample, &x);
    if (e) sd_ledger_error(l, err, errlen);
    return e;
}

/* Prepare sql inside the open transaction, under the lock (held on SD_OK). */
static sd_err_t sd_ledger_bulk_begin(sd_ledger_t *l, const char *sql, const char *op, sqlite3_stmt **st, char *err, size_t errlen) {
    pthread_mutex_lock(&l->mu);
    sd_err_t e = sd_ledger_begin(l, err, errlen);
    if (!e && sqlite3_prepare_v2(l->db, sql, -1, st, NULL) != SQLITE_OK) e = sd_ledger_sqlerr(l, op, err, errlen);
    if (e) pthread_mutex_unlock(&l->mu);
    return e;
}

static sd_err_t sd_ledger_bulk_row(sd_ledger_t *l, sqlite3_stmt *st, const char *op, char *err, size_t errlen) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? SD_OK : sd_ledger_sqlerr(l, op, err, errlen);
}

static void sd_ledger_bulk_end(sd_ledger_t *l, sqlite3_stmt *st) {
    sqlite3_finalize(st);
    pthread_mutex_unlock(&l->mu);
}

sd_err_t sd_ledger_counts(sd_ledger_t *l, const char *prefix, const char *const *names, const int64_t *values, int n,
                          char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    sd_err_t e = sd_ledger_bulk_begin(l, "INSERT OR REPLACE INTO count(name,value) VALUES(?,?)", "store counts", &st, err, errlen);
    for (int i = 0; !e && i < n; i++) {
        char name[160];
        snprintf(name, sizeof(name), "%s%s", prefix, names[i]);
        sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, values[i]);
        e = sd_ledger_bulk_row(l, st, "store counts", err, errlen);
    }
    if (st) sd_ledger_bulk_end(l, st);
    return e;
}

sd_err_t sd_ledger_anomalies(sd_ledger_t *l, const char *sink, const sd_ledger_anomaly_t *v, int64_t n, char *err,
                             size_t errlen) {
    sqlite3_stmt *st = NULL;
    sd_err_t e = sd_ledger_bulk_begin(l, "INSERT OR REPLACE INTO anomaly(sink,seq,bucket,copies,writers) VALUES(?,?,?,?,?)",
                                      "store anomalies", &st, err, errlen);
    for (int64_t i = 0; !e && i < n; i++) {
        sqlite3_bind_text(st, 1, sink, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, v[i].seq);
        sqlite3_bind_text(st, 3, v[i].bucket, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, v[i].copies);
        if (v[i].writers) sqlite3_bind_text(st, 5, v[i].writers, -1, SQLITE_TRANSIENT);
        e = sd_ledger_bulk_row(l, st, "store anomalies", err, errlen);
    }
    if (st) sd_ledger_bulk_end(l, st);
    return e;
}

sd_err_t sd_ledger_unexpected(sd_ledger_t *l, const char *sink, const sd_ledger_unexpected_t *v, int64_t n, char *err,
                              size_t errlen) {
    sqlite3_stmt *st = NULL;
    sd_err_t e = sd_ledger_bulk_begin(l, "INSERT INTO unexpected(sink,raw_id,copies,writers) VALUES(?,?,?,?)", "store unexpected rows",
                                      &st, err, errlen);
    for (int64_t i = 0; !e && i < n; i++) {
        sqlite3_bind_text(st, 1, sink, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, v[i].raw_id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 3, v[i].copies);
        sqlite3_bind_text(st, 4, v[i].writers, -1, SQLITE_TRANSIENT);
        e = sd_ledger_bulk_row(l, st, "store unexpected rows", err, errlen);
    }
    if (st) sd_ledger_bulk_end(l, st);
    return e;
}

sd_err_t sd_ledger_groups(sd_ledger_t *l, const char *sink, const sd_ledger_group_t *v, int64_t n, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    sd_err_t e = sd_ledger_bulk_begin(l, "INSERT INTO group_anomaly VALUES(?,?,?,?,?)", "store result groups", &st, err, errlen);
    for (int64_t i = 0; !e && i < n; i++) {
        sqlite3_bind_text(st, 1, sink, -1, SQLITE_TRANSIENT);
        if (v[i].start_ms == INT64_MIN) sqlite3_bind_null(st, 2);
        else sqlite3_bind_int64(st, 2, v[i].start_ms);
        sqlite3_bind_text(st, 3, v[i].keys, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, v[i].buckets, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 5, v[i].detail, -1, SQLITE_TRANSIENT);
        e = sd_ledger_bulk_row(l, st, "store result groups", err, errlen);
    }
    if (st) sd_ledger_bulk_end(l, st);
    return e;
}

sd_err_t sd_ledger_check(sd_ledger_t *l, int idx, const char *name, int pass, const char *expected, const char *actual,
                         const char *detail, char *err, size_t errlen) {
    return sd_ledger_run(l, "INSERT INTO \"check\"(idx,name,pass,expected,actual,detail) VALUES(?,?,?,?,?,?)", "store checks", err,
                         errlen, NULL, "isisss", (int64_t)idx, name, (int64_t)pass, expected, actual, detail);
}

sd_err_t sd_ledger_latency(sd_ledger_t *l, const char *sink, const int64_t *seq, const int64_t *sent_ms,
                           const int64_t *seen_ms, int64_t n, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    sd_err_t e = sd_ledger_bulk_begin(l, "INSERT INTO latency VALUES(?,?,?,?)", "store latency samples", &st, err, errlen);
    for (int64_t i = 0; !e && i < n; i++) {
        sqlite3_bind_text(st, 1, sink, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, seq[i]);
        sqlite3_bind_int64(st, 3, sent_ms[i]);
        sqlite3_bind_int64(st, 4, seen_ms[i]);
        e = sd_ledger_bulk_row(l, st, "store latency samples", err, errlen);
    }
    if (st) sd_ledger_bulk_end(l, st);
    return e;
}

void sd_ledger_index_for_reports(sd_ledger_t *l) {
    /* reports look up each anomalous id in the ledger: index by seq then */
    if (sd_ledger_scalar(l, "SELECT count(*) FROM (SELECT 1 FROM anomaly LIMIT 1)") <= 0) return;
    pthread_mutex_lock(&l->mu);
    char *msg = NULL;
    if (sqlite3_exec(l->db, "CREATE INDEX IF NOT EXISTS sent_seq ON sent(seq)", NULL, NULL, &msg) != SQLITE_OK) sqlite3_free(msg);
    pthread_mutex_unlock(&l->mu);
}

/* Messages and late events the ledger has at the offsets a progress
 * report read (ranges names them); 1 when the report named the source. */
static int sd_ledger_account_batch(sqlite3_stmt *cnt, const char *json, sd_account_ranges_fn ranges, void *opaque, int64_t *rows,
                                   int64_t *late, int *failed) {
    sd_offset_range_t *v = NULL;
    int n = ranges(opaque, json, &v);
    *rows = *late = 0;
    for (int i = 0; i < n; i++) {
        sqlite3_bind_int(cnt, 1, v[i].partition);
        sqlite3_bind_int64(cnt, 2, v[i].begin);
        sqlite3_bind_int64(cnt, 3, v[i].end);
        if (sqlite3_step(cnt) == SQLITE_ROW) {
            *rows += sqlite3_column_int64(cnt, 0);
            *late += sqlite3_column_int64(cnt, 1);
        } else {
            *failed = 1;
        }
        sqlite3_reset(cnt);
    }
    free(v);
    return n >= 0;
}

sd_err_t sd_ledger_compare_account(sd_ledger_t *l, int64_t produced, sd_account_ranges_fn ranges,
                                   void (*warn)(void *opaque, int disagrees, const char *text), void *opaque) {
    if (sd_ledger_scalar(l, "SELECT count(*) FROM progress") <= 0) return sd_ledger_error(l, NULL, 0);
    sd_buf_t out;   /* the summaries, NUL-separated, each after a 0/1 byte: said once the lock is released */
    sd_buf_init(&out);
    char why[512] = "";
    sd_err_t e = sd_ledger_lock_read(l, why, sizeof(why));
    sqlite3_stmt *st = NULL, *cnt = NULL, *ins = NULL;
    const char *sql = "SELECT query, batch, incarnation, input_rows, dropped_by_watermark, json FROM ("
                      " SELECT *, row_number() OVER (PARTITION BY query, batch ORDER BY t_ms DESC) AS k FROM progress WHERE batch >= 0)"
                      " WHERE k = 1 ORDER BY query, batch";
    /* partition and offset live in table ack (the view ledger cannot be indexed) */
    if (!e && (sqlite3_exec(l->db, "CREATE INDEX IF NOT EXISTS ack_pos ON ack(partition, offset)", NULL, NULL, NULL) != SQLITE_OK ||
               sqlite3_prepare_v2(l->db, sql, -1, &st, NULL) != SQLITE_OK ||
               sqlite3_prepare_v2(l->db, "SELECT count(*), sum(kind='late') FROM ledger WHERE partition=? AND offset>=? AND offset<?", -1,
                                  &cnt, NULL) != SQLITE_OK ||
               sqlite3_prepare_v2(l->db, "INSERT INTO account VALUES(?,?,?,?,?,?,?,?)", -1, &ins, NULL) != SQLITE_OK))
        e = sd_ledger_sqlerr(l, "compare the pipeline's account with the ledger", why, sizeof(why));
    char cur[128] = "";
    int64_t covered = 0, batches = 0, bad = 0, spark_rows = 0, dropped = 0, late = 0;
    int failed = 0;
    for (int more = !e; more && !failed;) {
        int rc = sqlite3_step(st);
        more = rc == SQLITE_ROW;
        if (!more && rc != SQLITE_DONE) failed = 1;
        const char *q = more ? (const char *)sqlite3_column_text(st, 0) : "";
        if (!q) q = "";
        if ((!more || strcmp(q, cur)) && batches) {
            sd_buf_putc(&out, bad ? '1' : '0');
            sd_buf_printf(&out, "query %s: %lld batches reported, %lld input rows; the ledger has %lld messages in their offsets "
                          "(%lld batches disagree); %lld of the %lld messages sent lie in no reported batch; %lld rows dropped by "
                          "the watermark, %lld late events sent in those offsets",
                          cur[0] ? cur : "(unnamed)", (long long)batches, (long long)spark_rows, (long long)covered, (long long)bad,
                          (long long)(produced - covered), (long long)produced, (long long)dropped, (long long)late);
            sd_buf_putc(&out, 0);
            covered = batches = bad = spark_rows = dropped = late = 0;
        }
        if (!more) break;
        snprintf(cur, sizeof(cur), "%s", q);
        int64_t batch = sqlite3_column_int64(st, 1), srows = sqlite3_column_int64(st, 3), sdrop = sqlite3_column_int64(st, 4);
        int inc = sqlite3_column_int(st, 2);
        int64_t lrows, llate;
        if (!sd_ledger_account_batch(cnt, (const char *)sqlite3_column_text(st, 5), ranges, opaque, &lrows, &llate, &failed) || failed)
            continue;
        int agree = srows == lrows;
        batches++;
        covered += lrows;
        spark_rows += srows;
        dropped += sdrop;
        late += llate;
        if (!agree) bad++;
        sqlite3_bind_text(ins, 1, cur, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(ins, 2, batch);
        sqlite3_bind_int(ins, 3, inc);
        sqlite3_bind_int64(ins, 4, srows);
        sqlite3_bind_int64(ins, 5, lrows);
        sqlite3_bind_int64(ins, 6, sdrop);
        sqlite3_bind_int64(ins, 7, llate);
        sqlite3_bind_int(ins, 8, agree);
        if (sqlite3_step(ins) != SQLITE_DONE) failed = 1;
        sqlite3_reset(ins);
    }
    if (failed && !e) e = sd_ledger_sqlerr(l, "compare the pipeline's account with the ledger", why, sizeof(why));
    sqlite3_finalize(cnt);
    sqlite3_finalize(ins);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&l->mu);
    /* a comparison that could not be made whole says nothing (the error does) */
    for (size_t i = 0; !e && i < out.len; i += strlen(out.data + i) + 1) warn(opaque, out.data[i] == '1', out.data + i + 1);
    sd_buf_free(&out);
    return sd_ledger_read_failed(l, e, why);
}
