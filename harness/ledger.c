/* ledger.c - run.db schema and writers (see ledger.h). */
#include "ledger.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct sd_ledger_s {
    sqlite3 *db;
    char *path;
    int in_txn;
    int64_t txn_started_ms;
    sqlite3_stmt *ins_send, *ack_send, *ins_sample, *ins_batch_begin, *upd_batch_commit;
};

static const char sd_ledger_schema[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);\n"
    "CREATE TABLE step(idx INTEGER PRIMARY KEY, line INTEGER, text TEXT, started_ms INTEGER,"
    " ended_ms INTEGER, status TEXT, detail TEXT);\n"
    /* one row per message sent; seq is the ledger id's sequence number */
    "CREATE TABLE ledger(n INTEGER PRIMARY KEY, seq INTEGER NOT NULL, kind TEXT NOT NULL,"
    " disposition TEXT NOT NULL, detail TEXT, event_time_ms INTEGER, msg_key TEXT, step INTEGER,"
    " queued_ms INTEGER, partition INTEGER, offset INTEGER, acked_ms INTEGER, error TEXT);\n"
    "CREATE VIEW ledger_ids AS SELECT (SELECT value FROM meta WHERE key='tag')||'-'||seq AS id, * FROM ledger;\n"
    "CREATE TABLE fault(id INTEGER PRIMARY KEY, t_ms INTEGER, step INTEGER, kind TEXT, detail TEXT,"
    " incarnation INTEGER, batch INTEGER, landed INTEGER, rows_visible INTEGER, batch_rows INTEGER,"
    " landing TEXT, end_ms INTEGER);\n"
    "CREATE TABLE warning(t_ms INTEGER, kind TEXT, detail TEXT);\n"
    "CREATE TABLE incarnation(n INTEGER PRIMARY KEY, pid INTEGER, argv TEXT, started_ms INTEGER,"
    " ended_ms INTEGER, exit_code INTEGER, exit_signal INTEGER, ended_by TEXT, log_out TEXT, log_err TEXT);\n"
    "CREATE TABLE batch(incarnation INTEGER, id INTEGER, begin_ms INTEGER, commit_ms INTEGER,"
    " rows INTEGER, offsets TEXT, PRIMARY KEY(incarnation, id));\n"
    "CREATE TABLE sample(t_ms INTEGER, sink TEXT, rows INTEGER);\n"
    /* the pipeline's own account (Spark's StreamingQueryProgress), as it printed it */
    "CREATE TABLE progress(incarnation INTEGER, t_ms INTEGER, query TEXT, batch INTEGER, input_rows INTEGER,"
    " dropped_by_watermark INTEGER, duration_ms INTEGER, json TEXT);\n"
    "CREATE TABLE watermark(t_ms INTEGER, partition INTEGER, low INTEGER, high INTEGER);\n"
    /* reconciliation: ids that are not 'delivered once as expected' */
    "CREATE TABLE anomaly(sink TEXT, seq INTEGER, bucket TEXT, copies INTEGER, writers TEXT,"
    " PRIMARY KEY(sink, seq)) WITHOUT ROWID;\n"
    "CREATE TABLE unexpected(sink TEXT, raw_id TEXT, copies INTEGER, writers TEXT);\n"
    "CREATE TABLE count(name TEXT PRIMARY KEY, value INTEGER);\n"
    "CREATE TABLE \"check\"(idx INTEGER PRIMARY KEY, name TEXT, pass INTEGER, expected TEXT,"
    " actual TEXT, detail TEXT);\n";

static sd_err_t sd_ledger_sqlerr(sd_ledger_t *l, const char *op, char *err, size_t errlen) {
    return sd_err_set(err, errlen, SD_ERR_IO, "ledger: %s in %s: %s", op, l->path, sqlite3_errmsg(l->db));
}

static sd_err_t sd_ledger_exec(sd_ledger_t *l, const char *sql, const char *op, char *err, size_t errlen) {
    char *msg = NULL;
    if (sqlite3_exec(l->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        sd_err_t e = sd_err_set(err, errlen, SD_ERR_IO, "ledger: %s in %s: %s", op, l->path, msg ? msg : "?");
        sqlite3_free(msg);
        return e;
    }
    return SD_OK;
}

static sd_err_t sd_ledger_begin(sd_ledger_t *l, char *err, size_t errlen) {
    if (l->in_txn) return SD_OK;
    sd_err_t e = sd_ledger_exec(l, "BEGIN", "begin transaction", err, errlen);
    if (!e) {
        l->in_txn = 1;
        l->txn_started_ms = sd_util_mono_ms();
    }
    return e;
}

sd_err_t sd_ledger_commit(sd_ledger_t *l, char *err, size_t errlen) {
    if (!l || !l->in_txn) return SD_OK;
    sd_err_t e = sd_ledger_exec(l, "COMMIT", "commit", err, errlen);
    l->in_txn = 0;
    return e;
}

int64_t sd_ledger_dirty_ms(sd_ledger_t *l) {
    return l->in_txn ? sd_util_mono_ms() - l->txn_started_ms : 0;
}

static sd_err_t sd_ledger_prepare(sd_ledger_t *l, char *err, size_t errlen) {
    struct { sqlite3_stmt **st; const char *sql; } s[] = {
        {&l->ins_send, "INSERT INTO ledger(seq,kind,disposition,detail,event_time_ms,msg_key,step,queued_ms)"
                       " VALUES(?,?,?,?,?,?,?,?)"},
        {&l->ack_send, "UPDATE ledger SET partition=?, offset=?, acked_ms=?, error=? WHERE n=?"},
        {&l->ins_sample, "INSERT INTO sample(t_ms,sink,rows) VALUES(?,?,?)"},
        {&l->ins_batch_begin, "INSERT OR REPLACE INTO batch(incarnation,id,begin_ms,rows) VALUES(?,?,?,?)"},
        {&l->upd_batch_commit, "INSERT INTO batch(incarnation,id,commit_ms,rows,offsets) VALUES(?1,?2,?3,?4,?5)"
                               " ON CONFLICT(incarnation,id) DO UPDATE SET commit_ms=?3,"
                               " rows=coalesce(?4,rows), offsets=?5"},
    };
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
        if (sqlite3_prepare_v2(l->db, s[i].sql, -1, s[i].st, NULL) != SQLITE_OK)
            return sd_ledger_sqlerr(l, "prepare", err, errlen);
    return SD_OK;
}

static sd_err_t sd_ledger_open_db(const char *path, int flags, sd_ledger_t **out, char *err, size_t errlen) {
    sd_ledger_t *l = sd_util_xcalloc(1, sizeof(*l));
    l->path = sd_util_strdup(path);
    if (sqlite3_open_v2(path, &l->db, flags, NULL) != SQLITE_OK) {
        sd_err_t e = sd_err_set(err, errlen, SD_ERR_IO, "ledger: open %s: %s", path,
                                l->db ? sqlite3_errmsg(l->db) : "out of memory");
        sd_ledger_close(l);
        return e;
    }
    sqlite3_busy_timeout(l->db, 5000);
    *out = l;
    return SD_OK;
}

sd_err_t sd_ledger_create(const char *path, sd_ledger_t **out, char *err, size_t errlen) {
    if (sd_util_exists(path))
        return sd_err_set(err, errlen, SD_ERR_IO, "ledger: create %s: file exists", path);
    sd_ledger_t *l;
    sd_err_t e = sd_ledger_open_db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &l, err, errlen);
    if (e) return e;
    if ((e = sd_ledger_exec(l, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", "set WAL mode", err, errlen)) ||
        (e = sd_ledger_exec(l, sd_ledger_schema, "create schema", err, errlen)) ||
        (e = sd_ledger_prepare(l, err, errlen))) {
        sd_ledger_close(l);
        return e;
    }
    *out = l;
    return SD_OK;
}

sd_err_t sd_ledger_open(const char *path, int readonly, sd_ledger_t **out, char *err, size_t errlen) {
    if (!sd_util_exists(path))
        return sd_err_set(err, errlen, SD_ERR_IO, "ledger: open %s: no such file", path);
    sd_ledger_t *l;
    sd_err_t e = sd_ledger_open_db(path, readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE, &l, err, errlen);
    if (e) return e;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "SELECT count(*) FROM meta", -1, &st, NULL) != SQLITE_OK) {
        e = sd_err_set(err, errlen, SD_ERR_IO, "ledger: open %s: not a streamdrill run.db (%s)", path, sqlite3_errmsg(l->db));
        sd_ledger_close(l);
        return e;
    }
    sqlite3_finalize(st);
    if (!readonly && (e = sd_ledger_prepare(l, err, errlen))) {
        sd_ledger_close(l);
        return e;
    }
    *out = l;
    return SD_OK;
}

void sd_ledger_close(sd_ledger_t *l) {
    if (!l) return;
    sd_ledger_commit(l, NULL, 0);
    sqlite3_finalize(l->ins_send);
    sqlite3_finalize(l->ack_send);
    sqlite3_finalize(l->ins_sample);
    sqlite3_finalize(l->ins_batch_begin);
    sqlite3_finalize(l->upd_batch_commit);
    if (l->db) sqlite3_close(l->db);
    free(l->path);
    free(l);
}

sqlite3 *sd_ledger_db(sd_ledger_t *l) { return l->db; }
const char *sd_ledger_path(sd_ledger_t *l) { return l->path; }

/* Run a one-off statement with text/int parameters described by fmt
 * ('s' text or NULL, 'i' int64, 'n' int64 or NULL when < 0 ... see below). */
static sd_err_t sd_ledger_run(sd_ledger_t *l, const char *sql, const char *op, char *err, size_t errlen,
                              const char *types, ...) {
    sd_err_t e = sd_ledger_begin(l, err, errlen);
    if (e) return e;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, sql, -1, &st, NULL) != SQLITE_OK) return sd_ledger_sqlerr(l, op, err, errlen);
    va_list ap;
    va_start(ap, types);
    for (int i = 0; types[i]; i++) {
        if (types[i] == 's') {
            const char *v = va_arg(ap, const char *);
            if (v) sqlite3_bind_text(st, i + 1, v, -1, SQLITE_TRANSIENT);
            else sqlite3_bind_null(st, i + 1);
        } else if (types[i] == 'i') {
            sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
        } else if (types[i] == 'n') { /* int64, NULL when INT64_MIN */
            int64_t v = va_arg(ap, int64_t);
            if (v == INT64_MIN) sqlite3_bind_null(st, i + 1);
            else sqlite3_bind_int64(st, i + 1, v);
        }
    }
    va_end(ap);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return sd_ledger_sqlerr(l, op, err, errlen);
    return SD_OK;
}

sd_err_t sd_ledger_meta_set(sd_ledger_t *l, const char *key, const char *value, char *err, size_t errlen) {
    return sd_ledger_run(l, "INSERT OR REPLACE INTO meta(key,value) VALUES(?,?)", "write meta", err, errlen, "ss",
                         key, value);
}

sd_err_t sd_ledger_meta_set_int(sd_ledger_t *l, const char *key, int64_t value, char *err, size_t errlen) {
    char buf[32];
    snprintf(buf, sizeof(buf), "%lld", (long long)value);
    return sd_ledger_meta_set(l, key, buf, err, errlen);
}

char *sd_ledger_meta_get(sd_ledger_t *l, const char *key) {
    sqlite3_stmt *st;
    char *v = NULL;
    if (sqlite3_prepare_v2(l->db, "SELECT value FROM meta WHERE key=?", -1, &st, NULL) != SQLITE_OK) return NULL;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        v = sd_util_strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
}

int64_t sd_ledger_meta_get_int(sd_ledger_t *l, const char *key, int64_t dflt) {
    char *v = sd_ledger_meta_get(l, key);
    if (!v) return dflt;
    int64_t r = strtoll(v, NULL, 10);
    free(v);
    return r;
}

sd_err_t sd_ledger_send(sd_ledger_t *l, const sd_send_t *s, int64_t queued_ms, int64_t *n_out, char *err,
                        size_t errlen) {
    sd_err_t e = sd_ledger_begin(l, err, errlen);
    if (e) return e;
    sqlite3_stmt *st = l->ins_send;
    sqlite3_bind_int64(st, 1, s->seq);
    sqlite3_bind_text(st, 2, s->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, s->disposition, -1, SQLITE_STATIC);
    if (s->detail) sqlite3_bind_text(st, 4, s->detail, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, 4);
    if (s->event_time_ms != INT64_MIN) sqlite3_bind_int64(st, 5, s->event_time_ms);
    else sqlite3_bind_null(st, 5);
    if (s->key) sqlite3_bind_text(st, 6, s->key, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, 6);
    sqlite3_bind_int(st, 7, s->step);
    sqlite3_bind_int64(st, 8, queued_ms);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return sd_ledger_sqlerr(l, "record a sent message", err, errlen);
    if (n_out) *n_out = sqlite3_last_insert_rowid(l->db);
    return SD_OK;
}

sd_err_t sd_ledger_ack(sd_ledger_t *l, int64_t n, int32_t partition, int64_t offset, int64_t acked_ms,
                       const char *error, char *err, size_t errlen) {
    sd_err_t e = sd_ledger_begin(l, err, errlen);
    if (e) return e;
    sqlite3_stmt *st = l->ack_send;
    if (error) {
        sqlite3_bind_null(st, 1);
        sqlite3_bind_null(st, 2);
        sqlite3_bind_text(st, 4, error, -1, SQLITE_TRANSIENT);
    } else {
        sqlite3_bind_int(st, 1, partition);
        sqlite3_bind_int64(st, 2, offset);
        sqlite3_bind_null(st, 4);
    }
    sqlite3_bind_int64(st, 3, acked_ms);
    sqlite3_bind_int64(st, 5, n);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return sd_ledger_sqlerr(l, "record a delivery report", err, errlen);
    return SD_OK;
}

sd_err_t sd_ledger_step_begin(sd_ledger_t *l, int idx, int line, const char *text, char *err, size_t errlen) {
    return sd_ledger_run(l, "INSERT OR REPLACE INTO step(idx,line,text,started_ms,status) VALUES(?,?,?,?,'running')",
                         "record a step", err, errlen, "iisi", (int64_t)idx, (int64_t)line, text, sd_util_wall_ms());
}

sd_err_t sd_ledger_step_end(sd_ledger_t *l, int idx, const char *status, const char *detail, char *err, size_t errlen) {
    return sd_ledger_run(l, "UPDATE step SET ended_ms=?, status=?, detail=? WHERE idx=?", "record a step end", err,
                         errlen, "issi", sd_util_wall_ms(), status, detail, (int64_t)idx);
}

sd_err_t sd_ledger_fault(sd_ledger_t *l, int step, const char *kind, const char *detail, int incarnation,
                         int64_t *id_out, char *err, size_t errlen) {
    sd_err_t e = sd_ledger_run(l, "INSERT INTO fault(t_ms,step,kind,detail,incarnation) VALUES(?,?,?,?,?)",
                               "record a fault", err, errlen, "iissn", sd_util_wall_ms(), (int64_t)step, kind,
                               detail, incarnation > 0 ? (int64_t)incarnation : INT64_MIN);
    if (!e && id_out) *id_out = sqlite3_last_insert_rowid(l->db);
    return e;
}

sd_err_t sd_ledger_fault_landing(sd_ledger_t *l, int64_t id, int64_t batch, int landed, int64_t rows_visible,
                                 int64_t batch_rows, const char *detail, char *err, size_t errlen) {
    return sd_ledger_run(l, "UPDATE fault SET batch=?, landed=?, rows_visible=?, batch_rows=?, landing=? WHERE id=?",
                         "record where a kill landed", err, errlen, "ninnsi", batch, (int64_t)landed, rows_visible,
                         batch_rows, detail, id);
}

sd_err_t sd_ledger_warning(sd_ledger_t *l, const char *kind, const char *detail, char *err, size_t errlen) {
    return sd_ledger_run(l, "INSERT INTO warning(t_ms,kind,detail) VALUES(?,?,?)", "record a warning", err, errlen,
                         "iss", sd_util_wall_ms(), kind, detail);
}

sd_err_t sd_ledger_incarnation_begin(sd_ledger_t *l, int n, int pid, const char *argv, const char *log_out,
                                     const char *log_err, int64_t started_ms, char *err, size_t errlen) {
    return sd_ledger_run(l, "INSERT INTO incarnation(n,pid,argv,started_ms,log_out,log_err) VALUES(?,?,?,?,?,?)",
                         "record a pipeline start", err, errlen, "iisiss", (int64_t)n, (int64_t)pid, argv,
                         started_ms, log_out, log_err);
}

sd_err_t sd_ledger_incarnation_end(sd_ledger_t *l, int n, int64_t ended_ms, int exit_code, int exit_signal,
                                   const char *ended_by, char *err, size_t errlen) {
    return sd_ledger_run(l, "UPDATE incarnation SET ended_ms=?, exit_code=?, exit_signal=?, ended_by=? WHERE n=?",
                         "record a pipeline exit", err, errlen, "innsi", ended_ms,
                         exit_code >= 0 ? (int64_t)exit_code : INT64_MIN,
                         exit_signal > 0 ? (int64_t)exit_signal : INT64_MIN, ended_by, (int64_t)n);
}

sd_err_t sd_ledger_batch(sd_ledger_t *l, int incarnation, int64_t id, const char *phase, int64_t t_ms, int64_t rows,
                         const char *offsets, char *err, size_t errlen) {
    sd_err_t e = sd_ledger_begin(l, err, errlen);
    if (e) return e;
    sqlite3_stmt *st = !strcmp(phase, "begin") ? l->ins_batch_begin : l->upd_batch_commit;
    sqlite3_bind_int(st, 1, incarnation);
    sqlite3_bind_int64(st, 2, id);
    sqlite3_bind_int64(st, 3, t_ms);
    if (rows >= 0) sqlite3_bind_int64(st, 4, rows);
    else sqlite3_bind_null(st, 4);
    if (st == l->upd_batch_commit) {
        if (offsets) sqlite3_bind_text(st, 5, offsets, -1, SQLITE_TRANSIENT);
        else sqlite3_bind_null(st, 5);
    }
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) return sd_ledger_sqlerr(l, "record a batch marker", err, errlen);
    return SD_OK;
}

sd_err_t sd_ledger_sample(sd_ledger_t *l, int64_t t_ms, const char *sink, int64_t rows, char *err, size_t errlen) {
    sd_err_t e = sd_ledger_begin(l, err, errlen);
    if (e) return e;
    sqlite3_stmt *st = l->ins_sample;
    sqlite3_bind_int64(st, 1, t_ms);
    sqlite3_bind_text(st, 2, sink, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, rows);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return sd_ledger_sqlerr(l, "record a sink sample", err, errlen);
    return SD_OK;
}

sd_err_t sd_ledger_watermark(sd_ledger_t *l, int64_t t_ms, int32_t partition, int64_t low, int64_t high, char *err,
                             size_t errlen) {
    return sd_ledger_run(l, "INSERT INTO watermark(t_ms,partition,low,high) VALUES(?,?,?,?)", "record watermarks",
                         err, errlen, "iiii", t_ms, (int64_t)partition, low, high);
}

sd_err_t sd_ledger_progress(sd_ledger_t *l, int incarnation, int64_t t_ms, const char *query, int64_t batch,
                            int64_t input_rows, int64_t dropped, int64_t duration_ms, const char *json, char *err,
                            size_t errlen) {
    return sd_ledger_run(l, "INSERT INTO progress(incarnation,t_ms,query,batch,input_rows,dropped_by_watermark,duration_ms,json)"
                            " VALUES(?,?,?,?,?,?,?,?)", "record the pipeline's progress", err, errlen, "iisiiiis",
                         (int64_t)incarnation, t_ms, query, batch, input_rows, dropped, duration_ms, json);
}

int64_t sd_ledger_max_seq(sd_ledger_t *l) {
    sqlite3_stmt *st;
    int64_t v = 0;
    if (sqlite3_prepare_v2(l->db, "SELECT coalesce(max(seq)+1,0) FROM ledger", -1, &st, NULL) != SQLITE_OK) return 0;
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}
