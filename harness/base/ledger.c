/* ledger.c - run.db: its one schema, opening, preparing and closing, and
 * meta (see ledger.h; ledger_int.h lists the other ledger files). */
#include "ledger.h"

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ledger_int.h"
#include "util.h"

static const char sd_ledger_schema[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);\n"
    "CREATE TABLE step(idx INTEGER PRIMARY KEY, line INTEGER, text TEXT, started_ms INTEGER,"
    " ended_ms INTEGER, status TEXT, detail TEXT);\n"
    /* one row per message, written before Kafka sees it; seq is the ledger
     * id's sequence number */
    "CREATE TABLE sent(n INTEGER PRIMARY KEY, seq INTEGER NOT NULL, kind TEXT NOT NULL,"
    " disposition TEXT NOT NULL, detail TEXT, event_time_ms INTEGER, msg_key TEXT, step INTEGER,"
    " queued_ms INTEGER);\n"
    /* its delivery report (appended, never updated in place) */
    "CREATE TABLE ack(n INTEGER PRIMARY KEY, partition INTEGER, offset INTEGER, acked_ms INTEGER, error TEXT);\n"
    /* what every reader reads: a message with its delivery report */
    "CREATE VIEW ledger AS SELECT s.n AS n, s.seq AS seq, s.kind AS kind, s.disposition AS disposition,"
    " s.detail AS detail, s.event_time_ms AS event_time_ms, s.msg_key AS msg_key, s.step AS step,"
    " s.queued_ms AS queued_ms, a.partition AS partition, a.offset AS offset, a.acked_ms AS acked_ms,"
    " a.error AS error FROM sent s LEFT JOIN ack a ON a.n = s.n;\n"
    /* messages to the second source (`deliveries`): seq is the scan whose
     * delivery it is; its delivery report is in ack like any message's */
    "CREATE TABLE side(n INTEGER PRIMARY KEY, seq INTEGER NOT NULL, event_time_ms INTEGER, msg_key TEXT, step INTEGER,"
    " queued_ms INTEGER, kind TEXT, disposition TEXT, detail TEXT);\n"
    "CREATE VIEW side_ledger AS SELECT s.*, a.partition AS partition, a.offset AS offset, a.acked_ms AS acked_ms,"
    " a.error AS error FROM side s LEFT JOIN ack a ON a.n = s.n;\n"
    /* the hot path's form of messages and delivery reports: one row per
     * hand-over to the writer, every field of every message packed in data
     * (see sd_ledger_pack); unpacked into sent, side and ack when nothing is
     * being sent, and by every reader before it reads them */
    "CREATE TABLE pack(id INTEGER PRIMARY KEY, sends INTEGER NOT NULL, acks INTEGER NOT NULL, data BLOB NOT NULL);\n"
    "CREATE VIEW ledger_ids AS SELECT (SELECT value FROM meta WHERE key='tag')||'-'||seq AS id, * FROM ledger;\n"
    "CREATE TABLE fault(id INTEGER PRIMARY KEY, t_ms INTEGER, step INTEGER, kind TEXT, detail TEXT,"
    " incarnation INTEGER, batch INTEGER, landed INTEGER, rows_visible INTEGER, batch_rows INTEGER,"
    " landing TEXT, end_ms INTEGER, undoes INTEGER, acked TEXT, struck INTEGER, context TEXT);\n"
    "CREATE TABLE warning(t_ms INTEGER, kind TEXT, detail TEXT);\n"
    /* version: what the header's `version` line found when it started (the runbook) */
    "CREATE TABLE incarnation(n INTEGER PRIMARY KEY, pid INTEGER, argv TEXT, started_ms INTEGER,"
    " ended_ms INTEGER, exit_code INTEGER, exit_signal INTEGER, ended_by TEXT, log_out TEXT, log_err TEXT, version TEXT, instance INTEGER);\n"
    /* acked: what Kafka had acknowledged of the source at the commit (the backlog) */
    "CREATE TABLE batch(incarnation INTEGER, id INTEGER, begin_ms INTEGER, commit_ms INTEGER,"
    " rows INTEGER, offsets TEXT, acked TEXT, PRIMARY KEY(incarnation, id));\n"
    /* looked_ms: the harness's look at the sink before this one, which
     * counted other rows (NULL: none, or not a look of the sampler) */
    "CREATE TABLE sample(t_ms INTEGER, sink TEXT, rows INTEGER, looked_ms INTEGER);\n"
    /* the ledger's drawn series, per bucket of meta series_bucket_ms (ledger_series.c) */
    "CREATE TABLE series(t_ms INTEGER PRIMARY KEY, sent INTEGER, acked INTEGER, expected_acked INTEGER);\n"
    /* the pipeline's own account (Spark's StreamingQueryProgress), as it printed it */
    "CREATE TABLE progress(incarnation INTEGER, t_ms INTEGER, query TEXT, batch INTEGER, input_rows INTEGER,"
    " dropped_by_watermark INTEGER, duration_ms INTEGER, json TEXT);\n"
    "CREATE TABLE watermark(t_ms INTEGER, partition INTEGER, low INTEGER, high INTEGER);\n"
    /* the state a batch left behind, per stateful operator: from Spark's
     * stateOperators, or a batch marker's state= (operator 'markers') */
    "CREATE TABLE state(incarnation INTEGER, t_ms INTEGER, query TEXT, batch INTEGER, operator TEXT,"
    " rows_total INTEGER, rows_updated INTEGER, rows_removed INTEGER, memory_bytes INTEGER, watermark_ms INTEGER,"
    " input_rows INTEGER, custom TEXT);\n"
    /* records Kafka had acknowledged that the pipeline had not committed, at
     * each commit and fault (harness/oracle/health.c), for the charts */
    "CREATE TABLE backlog(t_ms INTEGER, records INTEGER);\n"
    /* connections the proxy dropped silently under `network idle-timeout`
     * (fault): when, when the client next sent on it, when it gave up and
     * closed it (wall ms; NULL: not in the run) */
    "CREATE TABLE idle_drop(fault INTEGER, dropped_ms INTEGER, used_ms INTEGER, closed_ms INTEGER);\n"
    /* what an idle timeout (fault) saw while it was on: the pipeline's
     * connections through the proxy, those its client closed itself after a
     * silence the timeout would have dropped, the longest silence */
    "CREATE TABLE idle_watch(fault INTEGER, timeout_ms INTEGER, connections INTEGER, quiet_closed INTEGER, max_quiet_ms INTEGER);\n"
    /* a broker fault's source partitions that the broker led: who leads
     * each after it, and how long it had no leader (NULL: no new leader
     * before the step's timeout) */
    "CREATE TABLE leader_move(fault INTEGER, partition INTEGER, old_leader INTEGER, new_leader INTEGER, leaderless_ms INTEGER);\n"
    /* the generated events that probe an edge the drill's model declares
     * (events.h): source scans or deliveries, the edge, and where it lies
     * (an event time for a window boundary, a delay for a join bound);
     * offset_ms -1, 0 or +1 from it */
    "CREATE TABLE edge(id TEXT, source TEXT, edge TEXT, at_ms INTEGER, offset_ms INTEGER);\n"
    /* how the pipeline recovered from each fault (harness/oracle/recovery.c):
     * times in wall ms, counts; NULL where a figure does not apply, why says
     * what could not be measured */
    "CREATE TABLE recovery(fault INTEGER PRIMARY KEY, line INTEGER, kind TEXT, incarnation INTEGER, t_ms INTEGER,"
    " end_ms INTEGER, caught_ms INTEGER, basis TEXT, figures TEXT, why TEXT);\n"
    /* reconciliation: ids that are not 'delivered once as expected' */
    "CREATE TABLE anomaly(sink TEXT, seq INTEGER, bucket TEXT, copies INTEGER, writers TEXT,"
    " PRIMARY KEY(sink, seq)) WITHOUT ROWID;\n"
    "CREATE TABLE unexpected(sink TEXT, raw_id TEXT, copies INTEGER, writers TEXT);\n"
    "CREATE TABLE count(name TEXT PRIMARY KEY, value INTEGER);\n"
    "CREATE TABLE \"check\"(idx INTEGER PRIMARY KEY, name TEXT, pass INTEGER, expected TEXT,"
    " actual TEXT, detail TEXT);\n"
    /* a result model's groups that are not correct */
    "CREATE TABLE group_anomaly(sink TEXT, window_start_ms INTEGER, keys TEXT, buckets TEXT, detail TEXT);\n"
    /* end-to-end latency of a sample of ids, for the charts */
    "CREATE TABLE latency(sink TEXT, seq INTEGER, sent_ms INTEGER, seen_ms INTEGER);\n"
    /* the pipeline's own account of each batch beside the ledger's */
    "CREATE TABLE account(query TEXT, batch INTEGER, incarnation INTEGER, spark_rows INTEGER,"
    " ledger_rows INTEGER, spark_dropped INTEGER, ledger_late INTEGER, agree INTEGER);\n"
    /* the engine's own account of itself, from its log (Kafka Streams: each
     * state change, and each changelog restored with its records) */
    "CREATE TABLE engine(incarnation INTEGER, t_ms INTEGER, what TEXT, from_state TEXT, to_state TEXT, records INTEGER, store TEXT);\n";

static char *sd_ledger_multi_insert(const char *head, const char *row, int rows) {
    sd_buf_t b;
    sd_buf_init(&b);
    sd_buf_puts(&b, head);
    for (int i = 0; i < rows; i++) sd_buf_printf(&b, "%s%s", i ? "," : " VALUES", row);
    return sd_buf_steal(&b);
}

static sd_err_t sd_ledger_prepare(sd_ledger_t *l, char *err, size_t errlen) {
    static const char send_head[] = "INSERT INTO sent(n,seq,kind,disposition,detail,event_time_ms,msg_key,step,queued_ms)";
    static const char ack_head[] = "INSERT OR REPLACE INTO ack(n,partition,offset,acked_ms,error)";
    char *sends1 = sd_ledger_multi_insert(send_head, "(?,?,?,?,?,?,?,?,?)", 1);
    char *sendsn = sd_ledger_multi_insert(send_head, "(?,?,?,?,?,?,?,?,?)", SD_LEDGER_ROWS);
    char *acks1 = sd_ledger_multi_insert(ack_head, "(?,?,?,?,?)", 1);
    char *acksn = sd_ledger_multi_insert(ack_head, "(?,?,?,?,?)", SD_LEDGER_ROWS);
    struct { sqlite3_stmt **st; const char *sql; } s[] = {
        {&l->ins_send, sends1},
        {&l->ins_send_n, sendsn},
        {&l->ins_ack, acks1},
        {&l->ins_ack_n, acksn},
        {&l->ins_sample, "INSERT INTO sample(t_ms,sink,rows,looked_ms) VALUES(?,?,?,?)"},
        {&l->ins_batch_begin, "INSERT OR REPLACE INTO batch(incarnation,id,begin_ms,rows) VALUES(?,?,?,?)"},
        {&l->upd_batch_commit, "INSERT INTO batch(incarnation,id,commit_ms,rows,offsets,acked) VALUES(?1,?2,?3,?4,?5,?6)"
                               " ON CONFLICT(incarnation,id) DO UPDATE SET commit_ms=?3,"
                               " rows=coalesce(?4,rows), offsets=?5, acked=?6"},
    };
    sd_err_t e = SD_OK;
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]) && !e; i++)
        if (sqlite3_prepare_v2(l->db, s[i].sql, -1, s[i].st, NULL) != SQLITE_OK) e = sd_ledger_sqlerr(l, "prepare", err, errlen);
    /* a run.db of a version without packs has nothing to unpack */
    if (!e && sqlite3_prepare_v2(l->db, "INSERT INTO pack(sends,acks,data) VALUES(?,?,?)", -1, &l->ins_pack, NULL) == SQLITE_OK) {
        sqlite3_prepare_v2(l->db, "SELECT id, data FROM pack ORDER BY id LIMIT 1", -1, &l->sel_pack, NULL);
        sqlite3_prepare_v2(l->db, "DELETE FROM pack WHERE id=?", -1, &l->del_pack, NULL);
    }
    free(sends1);
    free(sendsn);
    free(acks1);
    free(acksn);
    return e;
}

static sd_err_t sd_ledger_open_db(const char *path, int flags, sd_ledger_t **out, char *err, size_t errlen) {
    sd_ledger_t *l = sd_util_xcalloc(1, sizeof(*l));
    l->path = sd_util_strdup(path);
    l->next_n = 1;
    pthread_mutex_init(&l->mu, NULL);
    pthread_mutex_init(&l->qmu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->qcv, &ca);
    pthread_condattr_destroy(&ca);
    sd_buf_init(&l->packbuf);
    l->scratch = sd_util_xcalloc(1, sizeof(*l->scratch));
    sd_buf_init(&l->scratch->text);
    pthread_cond_init(&l->donecv, NULL);
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
    if ((e = sd_ledger_exec(l, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=10000;", "set WAL mode", err, errlen)) ||
        (e = sd_ledger_exec(l, sd_ledger_schema, "create schema", err, errlen)) ||
        (e = sd_ledger_prepare(l, err, errlen))) {
        sd_ledger_close(l);
        return e;
    }
    l->writer_started = pthread_create(&l->writer, NULL, sd_ledger_writer, l) == 0;
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
    sd_ledger_settle(l, NULL, 0); /* a run.db closed in order holds rows, no packs */
    sd_lseries_store(l, NULL, 0);
    sd_ledger_commit(l, NULL, 0);
    if (l->writer_started) {
        pthread_mutex_lock(&l->qmu);
        l->stop = 1;
        pthread_cond_signal(&l->qcv);
        pthread_mutex_unlock(&l->qmu);
        pthread_join(l->writer, NULL);
    }
    sqlite3_stmt *sts[] = {l->ins_side, l->ins_send, l->ins_send_n, l->ins_ack, l->ins_ack_n, l->ins_sample, l->ins_batch_begin,
                           l->upd_batch_commit, l->ins_pack, l->sel_pack, l->del_pack};
    for (size_t i = 0; i < sizeof(sts) / sizeof(sts[0]); i++) sqlite3_finalize(sts[i]);
    if (l->db) sqlite3_close(l->db);
    if (l->open) sd_lbatch_free(l->open);
    sd_lbatch_free(l->scratch);
    sd_buf_free(&l->packbuf);
    while (l->pool) {
        sd_lbatch_t *b = l->pool;
        l->pool = b->next;
        sd_lbatch_free(b);
    }
    pthread_mutex_destroy(&l->mu);
    pthread_mutex_destroy(&l->qmu);
    pthread_cond_destroy(&l->qcv);
    pthread_cond_destroy(&l->donecv);
    sd_lseries_free(l);
    free(l->path);
    free(l);
}

sd_err_t sd_ledger_unpack_file(const char *path, char *err, size_t errlen) {
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int packed = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
                 sqlite3_prepare_v2(db, "SELECT 1 FROM pack LIMIT 1", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (!packed) return SD_OK;
    sd_ledger_t *l;
    sd_err_t e = sd_ledger_open(path, 0, &l, err, errlen);
    if (e) return e;
    e = sd_ledger_settle(l, err, errlen);
    sd_ledger_close(l);
    return e;
}

sqlite3 *sd_ledger_db(sd_ledger_t *l) {
    /* whoever queries the connection directly sees every message so far,
     * and the writer is idle until the runner hands it more (messages that
     * will not settle are the run's error, kept for the next commit) */
    char why[512] = "";
    sd_ledger_read_failed(l, sd_ledger_settle(l, why, sizeof(why)), why);
    return l->db;
}

sd_err_t sd_ledger_meta_set(sd_ledger_t *l, const char *key, const char *value, char *err, size_t errlen) {
    return sd_ledger_run(l, "INSERT OR REPLACE INTO meta(key,value) VALUES(?,?)", "write meta", err, errlen, NULL, "ss",
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
    pthread_mutex_lock(&l->mu);
    if (sqlite3_prepare_v2(l->db, "SELECT value FROM meta WHERE key=?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            v = sd_util_strdup((const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&l->mu);
    return v;
}
