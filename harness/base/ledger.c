/* ledger.c - run.db schema and writers (see ledger.h). */
#include "ledger.h"

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

/* Rows per multi-row INSERT of messages and delivery reports: one
 * statement step per 16 rows costs about two thirds of 16 single steps. */
#define SD_LEDGER_ROWS 16
/* Delivery reports gathered before they are handed to the writer. */
#define SD_LEDGER_ACKS_PER_BATCH 2048

/* A message as recorded: text fields live in the batch's arena. */
typedef struct {
    int64_t n, seq, event_time_ms, queued_ms;
    int step;
    int side;                       /* a message to the second source (table side) */
    const char *kind, *disp;        /* static strings */
    size_t detail_off, key_off;     /* into text, (size_t)-1 = NULL */
} sd_lsend_t;
typedef struct {
    int64_t n, offset, acked_ms;
    int32_t partition;
    size_t err_off;                 /* into text, (size_t)-1 = delivered */
} sd_lack_t;

/* What the runner thread gathers between two hand-overs to the writer. */
typedef struct sd_lbatch_s {
    sd_lsend_t *sends;
    int64_t nsends, capsends;
    sd_lack_t *acks;
    int64_t nacks, capacks;
    sd_buf_t text;
    int64_t ticket;
    int64_t first_ms;               /* when its first record came, for sd_ledger_dirty_ms */
    struct sd_lbatch_s *next;
} sd_lbatch_t;

struct sd_ledger_s {
    sqlite3 *db;
    char *path;
    int in_txn;                     /* under mu */
    int64_t txn_started_ms;
    sqlite3_stmt *ins_side;          /* prepared on first use: run.db files of older versions lack the table */
    sqlite3_stmt *ins_send, *ins_send_n, *ins_ack, *ins_ack_n, *ins_sample, *ins_batch_begin, *upd_batch_commit;
    sqlite3_stmt *ins_pack, *sel_pack, *del_pack;
    sd_buf_t packbuf;               /* the writer's pack being built */
    int64_t packs;                  /* packs not unpacked yet (atomic) */
    pthread_mutex_t mu;             /* the connection: held around every use of db */

    /* messages and delivery reports go to a writer thread in batches, so
     * the runner thread renders and produces while SQLite works */
    int64_t next_n;                 /* message number of the next send */
    sd_lbatch_t *open;              /* being filled by the runner thread (no lock) */
    pthread_mutex_t qmu;            /* the queue below */
    pthread_cond_t qcv, donecv;
    sd_lbatch_t *qhead, *qtail, *pool;
    int64_t submitted, done;        /* tickets */
    int64_t last_submit_ms;         /* the newest hand-over: the writer unpacks only after SD_LEDGER_IDLE_MS */
    sd_lbatch_t *scratch;           /* a pack being unpacked (under mu, by the writer or a reader) */
    sd_err_t async_err;             /* the writer's first failure */
    char async_errstr[512];
    int stop, writer_started;
    pthread_t writer;
    /* what Kafka had acknowledged of the source, asked when a fault is recorded */
    void (*frontier)(void *opaque, char *out, size_t outlen);
    void *frontier_opaque;
};

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
    " ledger_rows INTEGER, spark_dropped INTEGER, ledger_late INTEGER, agree INTEGER);\n";

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

/* Under mu. */
static sd_err_t sd_ledger_begin(sd_ledger_t *l, char *err, size_t errlen) {
    if (l->in_txn) return SD_OK;
    sd_err_t e = sd_ledger_exec(l, "BEGIN", "begin transaction", err, errlen);
    if (!e) {
        l->in_txn = 1;
        l->txn_started_ms = sd_util_mono_ms();
    }
    return e;
}

/* Under mu. */
static sd_err_t sd_ledger_commit_locked(sd_ledger_t *l, char *err, size_t errlen) {
    if (!l->in_txn) return SD_OK;
    sd_err_t e = sd_ledger_exec(l, "COMMIT", "commit", err, errlen);
    l->in_txn = 0;
    return e;
}

/* ---- the writer thread ---- */

static void sd_bind_text_or_null(sqlite3_stmt *st, int i, const sd_buf_t *text, size_t off) {
    if (off == (size_t)-1) sqlite3_bind_null(st, i);
    else sqlite3_bind_text(st, i, text->data + off, -1, SQLITE_STATIC);
}

/* Under mu: one batch's messages, then its delivery reports, committed. */
static sd_err_t sd_ledger_write_side(sd_ledger_t *l, const sd_lbatch_t *b, const sd_lsend_t *m, char *err, size_t errlen) {
    if (!l->ins_side && sqlite3_prepare_v2(l->db, "INSERT INTO side(n,seq,event_time_ms,msg_key,step,queued_ms,kind,disposition,"
                                           "detail) VALUES(?,?,?,?,?,?,?,?,?)",
                                           -1, &l->ins_side, NULL) != SQLITE_OK)
        return sd_ledger_sqlerr(l, "prepare the second source's record", err, errlen);
    sqlite3_stmt *st = l->ins_side;
    sqlite3_bind_int64(st, 1, m->n);
    sqlite3_bind_int64(st, 2, m->seq);
    if (m->event_time_ms != INT64_MIN) sqlite3_bind_int64(st, 3, m->event_time_ms);
    else sqlite3_bind_null(st, 3);
    sd_bind_text_or_null(st, 4, &b->text, m->key_off);
    sqlite3_bind_int(st, 5, m->step);
    sqlite3_bind_int64(st, 6, m->queued_ms);
    sqlite3_bind_text(st, 7, m->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, m->disp, -1, SQLITE_STATIC);
    sd_bind_text_or_null(st, 9, &b->text, m->detail_off);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? SD_OK : sd_ledger_sqlerr(l, "record the second source's messages", err, errlen);
}

/* Under mu, inside a transaction: one batch's messages, then its delivery
 * reports, as rows of sent, side and ack. */
static sd_err_t sd_ledger_write_rows(sd_ledger_t *l, const sd_lbatch_t *b, char *err, size_t errlen) {
    sd_err_t e = SD_OK;
    for (int64_t i = 0; !e && i < b->nsends;) {
        if (b->sends[i].side) {
            e = sd_ledger_write_side(l, b, &b->sends[i], err, errlen);
            i++;
            continue;
        }
        int64_t run = 0;
        while (i + run < b->nsends && !b->sends[i + run].side && run < SD_LEDGER_ROWS) run++;
        int rows = run >= SD_LEDGER_ROWS ? SD_LEDGER_ROWS : 1;
        sqlite3_stmt *st = rows > 1 ? l->ins_send_n : l->ins_send;
        for (int k = 0; k < rows; k++, i++) {
            const sd_lsend_t *m = &b->sends[i];
            int c = k * 9;
            sqlite3_bind_int64(st, c + 1, m->n);
            sqlite3_bind_int64(st, c + 2, m->seq);
            sqlite3_bind_text(st, c + 3, m->kind, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, c + 4, m->disp, -1, SQLITE_STATIC);
            sd_bind_text_or_null(st, c + 5, &b->text, m->detail_off);
            if (m->event_time_ms != INT64_MIN) sqlite3_bind_int64(st, c + 6, m->event_time_ms);
            else sqlite3_bind_null(st, c + 6);
            sd_bind_text_or_null(st, c + 7, &b->text, m->key_off);
            sqlite3_bind_int(st, c + 8, m->step);
            sqlite3_bind_int64(st, c + 9, m->queued_ms);
        }
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) e = sd_ledger_sqlerr(l, "record sent messages", err, errlen);
    }
    for (int64_t i = 0; !e && i < b->nacks;) {
        int rows = b->nacks - i >= SD_LEDGER_ROWS ? SD_LEDGER_ROWS : 1;
        sqlite3_stmt *st = rows > 1 ? l->ins_ack_n : l->ins_ack;
        for (int k = 0; k < rows; k++, i++) {
            const sd_lack_t *a = &b->acks[i];
            int c = k * 5;
            sqlite3_bind_int64(st, c + 1, a->n);
            if (a->err_off == (size_t)-1) {
                sqlite3_bind_int(st, c + 2, a->partition);
                sqlite3_bind_int64(st, c + 3, a->offset);
            } else {
                sqlite3_bind_null(st, c + 2);
                sqlite3_bind_null(st, c + 3);
            }
            sqlite3_bind_int64(st, c + 4, a->acked_ms);
            sd_bind_text_or_null(st, c + 5, &b->text, a->err_off);
        }
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) e = sd_ledger_sqlerr(l, "record delivery reports", err, errlen);
    }
    return e;
}

static void sd_lbatch_free(sd_lbatch_t *b) {
    free(b->sends);
    free(b->acks);
    sd_buf_free(&b->text);
    free(b);
}

static sd_err_t sd_ledger_sync(sd_ledger_t *l, char *err, size_t errlen);

/* ---- the packed form ----
 *
 * The writer thread does not insert a row per message and per delivery
 * report while messages are being sent: it packs a whole hand-over into one
 * row of table pack, every field of every record kept (the numbers as
 * varints of their difference to the previous record's, the strings as
 * they are, a kind or a disposition only when it changes). One INSERT per
 * hand-over is what the hot path pays; the rows of sent, side and ack are
 * written from the packs when the writer has had nothing to write for
 * SD_LEDGER_IDLE_MS, or before any reader reads them (sd_ledger_settle).
 * Unpacking a pack and deleting it is one transaction: after a kill at any
 * moment a message is in its pack or in its rows, never in neither. */

#define SD_LEDGER_IDLE_MS 250

enum { SD_PK_SIDE = 1, SD_PK_TIME = 2, SD_PK_DETAIL = 4, SD_PK_KEY = 8, SD_PK_KIND = 16, SD_PK_DISP = 32, SD_PK_STEP = 64 };

/* A reader over a pack; any read past its end marks it damaged. */
typedef struct {
    const uint8_t *p, *end;
    int bad;
} sd_pkr_t;

static uint64_t sd_pkr_u(sd_pkr_t *r) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) break;
        uint8_t c = *r->p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) return v;
    }
    r->bad = 1;
    return 0;
}

static int64_t sd_pkr_z(sd_pkr_t *r) {
    uint64_t v = sd_pkr_u(r);
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* A string into the batch's text (room reserved by the caller). */
static size_t sd_pkr_s(sd_pkr_t *r, sd_buf_t *text) {
    uint64_t n = sd_pkr_u(r);
    if (r->bad || n > (uint64_t)(r->end - r->p)) {
        r->bad = 1;
        return (size_t)-1;
    }
    size_t off = text->len;
    sd_buf_append(text, r->p, (size_t)n);
    sd_buf_putc(text, 0);
    r->p += n;
    return off;
}

static const char *sd_lbatch_str(const sd_lbatch_t *b, size_t off) { return off == (size_t)-1 ? NULL : b->text.data + off; }

/* A varint at w; the byte after it. */
static uint8_t *sd_pk_w(uint8_t *w, uint64_t v) {
    while (v >= 0x80) {
        *w++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *w++ = (uint8_t)v;
    return w;
}

static uint8_t *sd_pk_wz(uint8_t *w, int64_t v) { return sd_pk_w(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); }

static uint8_t *sd_pk_ws(uint8_t *w, const char *s, size_t n) {
    w = sd_pk_w(w, n);
    memcpy(w, s, n);
    return w + n;
}

/* One hand-over in its packed form, into o: written in place, room for a
 * record reserved before it (this is the writer's hot path). */
static void sd_ledger_pack(const sd_lbatch_t *b, sd_buf_t *o) {
    sd_buf_reset(o);
    sd_buf_reserve(o, 2 * 10);
    o->len = (size_t)((char *)sd_pk_w(sd_pk_w((uint8_t *)o->data, (uint64_t)b->nsends), (uint64_t)b->nacks) - o->data);
    int64_t n = 0, seq = 0, t = 0, q = 0;
    int step = -1;
    const char *kind = NULL, *disp = NULL;
    for (int64_t i = 0; i < b->nsends; i++) {
        const sd_lsend_t *m = &b->sends[i];
        int f = (m->side ? SD_PK_SIDE : 0) | (m->event_time_ms != INT64_MIN ? SD_PK_TIME : 0) |
                (m->detail_off != (size_t)-1 ? SD_PK_DETAIL : 0) | (m->key_off != (size_t)-1 ? SD_PK_KEY : 0) |
                (!kind || (m->kind != kind && strcmp(m->kind, kind)) ? SD_PK_KIND : 0) |
                (!disp || (m->disp != disp && strcmp(m->disp, disp)) ? SD_PK_DISP : 0) | (m->step != step ? SD_PK_STEP : 0);
        const char *detail = sd_lbatch_str(b, m->detail_off), *key = sd_lbatch_str(b, m->key_off);
        size_t kl = (f & SD_PK_KIND) ? strlen(m->kind) : 0, dl = (f & SD_PK_DISP) ? strlen(m->disp) : 0,
               tl = detail ? strlen(detail) : 0, yl = key ? strlen(key) : 0;
        sd_buf_reserve(o, 1 + 7 * 10 + 4 * 10 + kl + dl + tl + yl);
        uint8_t *w = (uint8_t *)o->data + o->len;
        *w++ = (uint8_t)f;
        w = sd_pk_wz(w, m->n - n);
        w = sd_pk_wz(w, m->seq - seq);
        w = sd_pk_wz(w, m->queued_ms - q);
        n = m->n, seq = m->seq, q = m->queued_ms;
        if (f & SD_PK_KIND) w = sd_pk_ws(w, kind = m->kind, kl);
        if (f & SD_PK_DISP) w = sd_pk_ws(w, disp = m->disp, dl);
        if (f & SD_PK_STEP) w = sd_pk_wz(w, step = m->step);
        if (f & SD_PK_TIME) {
            w = sd_pk_wz(w, m->event_time_ms - t);
            t = m->event_time_ms;
        }
        if (f & SD_PK_DETAIL) w = sd_pk_ws(w, detail, tl);
        if (f & SD_PK_KEY) w = sd_pk_ws(w, key, yl);
        o->len = (size_t)((char *)w - o->data);
    }
    int64_t last_off[64] = {0}, a_n = 0, a_t = 0;
    for (int64_t i = 0; i < b->nacks; i++) {
        const sd_lack_t *a = &b->acks[i];
        int failed = a->err_off != (size_t)-1;
        const char *error = failed ? sd_lbatch_str(b, a->err_off) : NULL;
        size_t el = error ? strlen(error) : 0;
        sd_buf_reserve(o, 1 + 4 * 10 + el);
        uint8_t *w = (uint8_t *)o->data + o->len;
        *w++ = (uint8_t)failed;
        w = sd_pk_wz(w, a->n - a_n);
        w = sd_pk_wz(w, a->acked_ms - a_t);
        a_n = a->n, a_t = a->acked_ms;
        if (failed) {
            w = sd_pk_ws(w, error, el);
        } else {
            int64_t *prev = &last_off[(uint32_t)a->partition % 64];
            w = sd_pk_wz(w, a->partition);
            w = sd_pk_wz(w, a->offset - *prev);
            *prev = a->offset;
        }
        o->len = (size_t)((char *)w - o->data);
    }
    if (o->data) o->data[o->len] = 0; /* the buffer's own rule */
}

static void sd_lbatch_grow(sd_lbatch_t *b, int64_t nsends, int64_t nacks) {
    if (nsends > b->capsends) {
        b->capsends = nsends;
        b->sends = sd_util_xrealloc(b->sends, sizeof(*b->sends) * (size_t)nsends);
    }
    if (nacks > b->capacks) {
        b->capacks = nacks;
        b->acks = sd_util_xrealloc(b->acks, sizeof(*b->acks) * (size_t)nacks);
    }
}

/* A pack back into records: 0, or -1 when it is damaged. */
static int sd_ledger_unpack_into(const void *data, size_t len, sd_lbatch_t *b) {
    sd_pkr_t r = {data, (const uint8_t *)data + len, 0};
    int64_t nsends = (int64_t)sd_pkr_u(&r), nacks = (int64_t)sd_pkr_u(&r);
    if (r.bad || nsends < 0 || nacks < 0 || (uint64_t)nsends + (uint64_t)nacks > len) return -1;
    sd_lbatch_grow(b, nsends, nacks);
    sd_buf_reset(&b->text);
    sd_buf_reserve(&b->text, 2 * len + 1); /* every string fits: its pointers stay put */
    int64_t n = 0, seq = 0, t = 0, q = 0;
    int step = -1;
    const char *kind = NULL, *disp = NULL;
    for (int64_t i = 0; i < nsends && !r.bad; i++) {
        sd_lsend_t *m = &b->sends[i];
        if (r.p >= r.end) return -1;
        int f = *r.p++;
        m->n = n += sd_pkr_z(&r);
        m->seq = seq += sd_pkr_z(&r);
        m->queued_ms = q += sd_pkr_z(&r);
        if (f & SD_PK_KIND) kind = sd_lbatch_str(b, sd_pkr_s(&r, &b->text));
        if (f & SD_PK_DISP) disp = sd_lbatch_str(b, sd_pkr_s(&r, &b->text));
        if (f & SD_PK_STEP) step = (int)sd_pkr_z(&r);
        m->event_time_ms = (f & SD_PK_TIME) ? (t += sd_pkr_z(&r)) : INT64_MIN;
        m->detail_off = (f & SD_PK_DETAIL) ? sd_pkr_s(&r, &b->text) : (size_t)-1;
        m->key_off = (f & SD_PK_KEY) ? sd_pkr_s(&r, &b->text) : (size_t)-1;
        m->side = (f & SD_PK_SIDE) != 0;
        m->step = step;
        m->kind = kind;
        m->disp = disp;
        if (!kind || !disp) r.bad = 1;
    }
    int64_t last_off[64] = {0}, a_n = 0, a_t = 0;
    for (int64_t i = 0; i < nacks && !r.bad; i++) {
        sd_lack_t *a = &b->acks[i];
        if (r.p >= r.end) return -1;
        int failed = *r.p++;
        a->n = a_n += sd_pkr_z(&r);
        a->acked_ms = a_t += sd_pkr_z(&r);
        a->err_off = (size_t)-1;
        a->partition = -1;
        a->offset = -1;
        if (failed) {
            a->err_off = sd_pkr_s(&r, &b->text);
            continue;
        }
        a->partition = (int32_t)sd_pkr_z(&r);
        int64_t *prev = &last_off[(uint32_t)a->partition % 64];
        a->offset = *prev += sd_pkr_z(&r);
    }
    if (r.bad || r.p != r.end) return -1;
    b->nsends = nsends;
    b->nacks = nacks;
    return 0;
}

/* Under mu: a hand-over as one pack row, committed. */
static sd_err_t sd_ledger_write_pack(sd_ledger_t *l, const sd_lbatch_t *b, char *err, size_t errlen) {
    sd_err_t e = sd_ledger_begin(l, err, errlen);
    if (e) return e;
    if (!l->ins_pack) { /* a run.db of a version without packs: rows */
        e = sd_ledger_write_rows(l, b, err, errlen);
        return e ? e : sd_ledger_commit_locked(l, err, errlen);
    }
    sd_ledger_pack(b, &l->packbuf);
    sqlite3_stmt *st = l->ins_pack;
    sqlite3_bind_int64(st, 1, b->nsends);
    sqlite3_bind_int64(st, 2, b->nacks);
    sqlite3_bind_blob(st, 3, l->packbuf.data, (int)l->packbuf.len, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return sd_ledger_sqlerr(l, "record sent messages", err, errlen);
    __atomic_add_fetch(&l->packs, 1, __ATOMIC_RELAXED);
    return sd_ledger_commit_locked(l, err, errlen);
}

/* Under mu: the oldest pack written out as rows and deleted, in one
 * transaction. 1 when one was unpacked, 0 when none is left. */
static int sd_ledger_unpack_one(sd_ledger_t *l, sd_lbatch_t *scratch, sd_err_t *e, char *err, size_t errlen) {
    if (!l->sel_pack) return 0; /* a run.db of a version without packs */
    sqlite3_stmt *st = l->sel_pack;
    int rc = sqlite3_step(st), got = 0;
    int64_t id = 0;
    if (rc == SQLITE_ROW) {
        got = 1;
        id = sqlite3_column_int64(st, 0);
        if (sd_ledger_unpack_into(sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1), scratch))
            *e = sd_err_set(err, errlen, SD_ERR_IO, "ledger: %s: pack %lld is damaged", l->path, (long long)id);
    } else if (rc != SQLITE_DONE) {
        *e = sd_ledger_sqlerr(l, "read packed messages", err, errlen);
    }
    sqlite3_reset(st);
    if (!got || *e) {
        __atomic_store_n(&l->packs, 0, __ATOMIC_RELAXED);
        return 0;
    }
    if (!(*e = sd_ledger_begin(l, err, errlen)) && !(*e = sd_ledger_write_rows(l, scratch, err, errlen))) {
        sqlite3_bind_int64(l->del_pack, 1, id);
        rc = sqlite3_step(l->del_pack);
        sqlite3_reset(l->del_pack);
        if (rc != SQLITE_DONE) *e = sd_ledger_sqlerr(l, "unpack messages", err, errlen);
    }
    if (!*e) *e = sd_ledger_commit_locked(l, err, errlen);
    if (__atomic_load_n(&l->packs, __ATOMIC_RELAXED) > 0) __atomic_sub_fetch(&l->packs, 1, __ATOMIC_RELAXED);
    return !*e;
}

/* Every message and delivery report committed and in its rows: what each
 * reader of sent, side, ack and the views calls first. */
static sd_err_t sd_ledger_settle(sd_ledger_t *l, char *err, size_t errlen) {
    sd_err_t e = sd_ledger_sync(l, err, errlen);
    if (e) return e;
    pthread_mutex_lock(&l->mu); /* l->scratch is used under it only, by whichever thread unpacks */
    while (sd_ledger_unpack_one(l, l->scratch, &e, err, errlen)) {
    }
    pthread_mutex_unlock(&l->mu);
    return e;
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

/* Under qmu, or with no writer thread: the first failure is what every
 * later call reports. */
static void sd_ledger_keep_err(sd_ledger_t *l, sd_err_t e, const char *err) {
    if (!e || l->async_err) return;
    l->async_err = e;
    snprintf(l->async_errstr, sizeof(l->async_errstr), "%s", err);
}

/* A read that failed (not prepared, a step that ended in an error, packs
 * that would not unpack) is the run's error, never an empty answer: kept
 * as the writer's first failure is, so the reader returns it and every
 * later commit, wait and read reports it (the judgement ends in error
 * instead of a verdict on what could not be read). Called without mu. */
static sd_err_t sd_ledger_read_failed(sd_ledger_t *l, sd_err_t e, const char *why) {
    if (!e) return SD_OK;
    pthread_mutex_lock(&l->qmu);
    sd_ledger_keep_err(l, e, why);
    pthread_mutex_unlock(&l->qmu);
    return e;
}

/* A reader of messages or delivery reports: every one in its rows, then the
 * connection's lock (held on SD_OK, and on a failure too: the caller
 * unlocks as always and reports what is in why). */
static sd_err_t sd_ledger_lock_read(sd_ledger_t *l, char *why, size_t wlen) {
    sd_err_t e = sd_ledger_settle(l, why, wlen);
    pthread_mutex_lock(&l->mu);
    return e;
}


/* Under qmu: wait on qcv at most ms (qcv runs on the monotonic clock). */
static void sd_ledger_wait_ms(sd_ledger_t *l, int64_t ms) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&l->qcv, &l->qmu, &ts);
}

static void *sd_ledger_writer(void *arg) {
    sd_ledger_t *l = arg;
    pthread_setname_np(pthread_self(), "sd-ledger");
    pthread_mutex_lock(&l->qmu);
    for (;;) {
        int unpack = 0;
        while (!l->qhead && !l->stop && !unpack) {
            int64_t idle = sd_util_mono_ms() - l->last_submit_ms;
            if (!__atomic_load_n(&l->packs, __ATOMIC_RELAXED) || l->async_err) pthread_cond_wait(&l->qcv, &l->qmu);
            else if (idle < SD_LEDGER_IDLE_MS) sd_ledger_wait_ms(l, SD_LEDGER_IDLE_MS - idle);
            else unpack = 1;
        }
        if (!l->qhead && unpack) { /* idle: one pack into rows, then look at the queue again */
            pthread_mutex_unlock(&l->qmu);
            char err[512] = "";
            sd_err_t e = SD_OK;
            pthread_mutex_lock(&l->mu);
            sd_ledger_unpack_one(l, l->scratch, &e, err, sizeof(err));
            pthread_mutex_unlock(&l->mu);
            pthread_mutex_lock(&l->qmu);
            sd_ledger_keep_err(l, e, err);
            continue;
        }
        if (!l->qhead) break;
        sd_lbatch_t *b = l->qhead;
        l->qhead = b->next;
        if (!l->qhead) l->qtail = NULL;
        int failed = l->async_err != SD_OK;
        pthread_mutex_unlock(&l->qmu);
        char err[512] = "";
        sd_err_t e = SD_OK;
        if (!failed) {
            pthread_mutex_lock(&l->mu);
            e = sd_ledger_write_pack(l, b, err, sizeof(err));
            pthread_mutex_unlock(&l->mu);
        }
        pthread_mutex_lock(&l->qmu);
        sd_ledger_keep_err(l, e, err);
        b->nsends = b->nacks = 0;
        sd_buf_reset(&b->text);
        b->next = l->pool;
        l->pool = b;
        l->done = b->ticket;
        pthread_cond_broadcast(&l->donecv);
    }
    pthread_mutex_unlock(&l->qmu);
    return NULL;
}

static sd_lbatch_t *sd_ledger_open_batch(sd_ledger_t *l) {
    if (l->open) return l->open;
    pthread_mutex_lock(&l->qmu);
    sd_lbatch_t *b = l->pool;
    if (b) l->pool = b->next;
    pthread_mutex_unlock(&l->qmu);
    if (!b) {
        b = sd_util_xcalloc(1, sizeof(*b));
        sd_buf_init(&b->text);
    }
    b->next = NULL;
    b->first_ms = sd_util_mono_ms();
    return l->open = b;
}

int64_t sd_ledger_submit(sd_ledger_t *l) {
    if (!l->open || (!l->open->nsends && !l->open->nacks)) return l->submitted;
    if (!l->writer_started) { /* no thread (it could not be started): write here */
        sd_lbatch_t *b = l->open;
        char err[512] = "";
        pthread_mutex_lock(&l->mu);
        sd_err_t e = sd_ledger_write_pack(l, b, err, sizeof(err));
        pthread_mutex_unlock(&l->mu);
        sd_ledger_keep_err(l, e, err);
        b->nsends = b->nacks = 0;
        sd_buf_reset(&b->text);
        b->first_ms = sd_util_mono_ms();
        l->done = ++l->submitted;
        return l->submitted;
    }
    sd_lbatch_t *b = l->open;
    l->open = NULL;
    pthread_mutex_lock(&l->qmu);
    l->last_submit_ms = sd_util_mono_ms();
    b->ticket = ++l->submitted;
    if (l->qtail) l->qtail->next = b;
    else l->qhead = b;
    l->qtail = b;
    pthread_cond_signal(&l->qcv);
    pthread_mutex_unlock(&l->qmu);
    return b->ticket;
}

sd_err_t sd_ledger_wait(sd_ledger_t *l, int64_t ticket, char *err, size_t errlen) {
    pthread_mutex_lock(&l->qmu);
    while (l->done < ticket && !l->async_err) pthread_cond_wait(&l->donecv, &l->qmu);
    sd_err_t e = l->async_err;
    if (e) sd_err_set(err, errlen, e, "%s", l->async_errstr);
    pthread_mutex_unlock(&l->qmu);
    return e;
}

int64_t sd_ledger_done(sd_ledger_t *l) {
    pthread_mutex_lock(&l->qmu);
    int64_t d = l->done;
    pthread_mutex_unlock(&l->qmu);
    return d;
}

/* Everything gathered so far, written and committed. */
static sd_err_t sd_ledger_sync(sd_ledger_t *l, char *err, size_t errlen) {
    return sd_ledger_wait(l, sd_ledger_submit(l), err, errlen);
}

sd_err_t sd_ledger_commit(sd_ledger_t *l, char *err, size_t errlen) {
    if (!l) return SD_OK;
    sd_err_t e = sd_ledger_sync(l, err, errlen);
    pthread_mutex_lock(&l->mu);
    sd_err_t e2 = sd_ledger_commit_locked(l, err, errlen);
    pthread_mutex_unlock(&l->mu);
    return e ? e : e2;
}

sd_err_t sd_ledger_checkpoint(sd_ledger_t *l, char *err, size_t errlen) {
    if (!l) return SD_OK;
    if (l->async_err) return sd_ledger_wait(l, 0, err, errlen);
    sd_ledger_submit(l);
    pthread_mutex_lock(&l->mu);
    sd_err_t e = sd_ledger_commit_locked(l, err, errlen);
    pthread_mutex_unlock(&l->mu);
    return e;
}

int64_t sd_ledger_dirty_ms(sd_ledger_t *l) {
    int64_t now = sd_util_mono_ms(), d = 0;
    /* the runner asks this between batches of messages: it never waits for
     * the writer (who holds the lock while it commits, and commits) */
    if (pthread_mutex_trylock(&l->mu) == 0) {
        if (l->in_txn) d = now - l->txn_started_ms;
        pthread_mutex_unlock(&l->mu);
    }
    if (l->open && (l->open->nsends || l->open->nacks) && now - l->open->first_ms > d) d = now - l->open->first_ms;
    return d;
}

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
    free(l->path);
    free(l);
}

sqlite3 *sd_ledger_db(sd_ledger_t *l) {
    /* whoever queries the connection directly sees every message so far,
     * and the writer is idle until the runner hands it more (messages that
     * will not settle are the run's error, kept for the next commit) */
    char why[512] = "";
    sd_ledger_read_failed(l, sd_ledger_settle(l, why, sizeof(why)), why);
    return l->db;
}

sd_err_t sd_ledger_error(sd_ledger_t *l, char *err, size_t errlen) {
    pthread_mutex_lock(&l->qmu);
    sd_err_t e = l->async_err;
    if (e) sd_err_set(err, errlen, e, "%s", l->async_errstr);
    pthread_mutex_unlock(&l->qmu);
    return e;
}

/* Run a one-off statement with text/int parameters described by fmt
 * ('s' text or NULL, 'i' int64, 'n' int64 or NULL when < 0 ... see below). */
static sd_err_t sd_ledger_run(sd_ledger_t *l, const char *sql, const char *op, char *err, size_t errlen,
                              int64_t *last_rowid, const char *types, ...) {
    pthread_mutex_lock(&l->mu);
    sd_err_t e = sd_ledger_begin(l, err, errlen);
    sqlite3_stmt *st = NULL;
    if (!e && sqlite3_prepare_v2(l->db, sql, -1, &st, NULL) != SQLITE_OK) e = sd_ledger_sqlerr(l, op, err, errlen);
    if (e) {
        pthread_mutex_unlock(&l->mu);
        return e;
    }
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
    if (rc != SQLITE_DONE) e = sd_ledger_sqlerr(l, op, err, errlen);
    if (!e && last_rowid) *last_rowid = sqlite3_last_insert_rowid(l->db);
    pthread_mutex_unlock(&l->mu);
    return e;
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

/* n bytes of t (n == 0: up to its NUL) into the batch's text, NUL-ended. */
static size_t sd_lbatch_textn(sd_lbatch_t *b, const char *t, size_t n) {
    if (!t) return (size_t)-1;
    if (!n) n = strlen(t);
    size_t off = b->text.len;
    sd_buf_append(&b->text, t, n);
    sd_buf_putc(&b->text, 0);
    return off;
}

static size_t sd_lbatch_text(sd_lbatch_t *b, const char *t) { return sd_lbatch_textn(b, t, 0); }

sd_err_t sd_ledger_send(sd_ledger_t *l, const sd_send_t *s, int64_t queued_ms, int64_t *n_out, char *err,
                        size_t errlen) {
    if (l->async_err) return sd_ledger_wait(l, 0, err, errlen);
    sd_lbatch_t *b = sd_ledger_open_batch(l);
    if (b->nsends == b->capsends) {
        b->capsends = b->capsends ? b->capsends * 2 : 1024;
        b->sends = sd_util_xrealloc(b->sends, sizeof(*b->sends) * (size_t)b->capsends);
    }
    sd_lsend_t *m = &b->sends[b->nsends++];
    m->n = l->next_n++;
    m->seq = s->seq;
    m->event_time_ms = s->event_time_ms;
    m->queued_ms = queued_ms;
    m->step = s->step;
    m->kind = s->kind;
    m->disp = s->disposition;
    m->side = s->side;
    m->detail_off = sd_lbatch_text(b, s->detail);
    m->key_off = sd_lbatch_textn(b, s->key, s->keylen);
    if (n_out) *n_out = m->n;
    return SD_OK;
}

sd_err_t sd_ledger_ack(sd_ledger_t *l, int64_t n, int32_t partition, int64_t offset, int64_t acked_ms,
                       const char *error, char *err, size_t errlen) {
    if (l->async_err) return sd_ledger_wait(l, 0, err, errlen);
    sd_lbatch_t *b = sd_ledger_open_batch(l);
    if (b->nacks == b->capacks) {
        b->capacks = b->capacks ? b->capacks * 2 : 1024;
        b->acks = sd_util_xrealloc(b->acks, sizeof(*b->acks) * (size_t)b->capacks);
    }
    sd_lack_t *a = &b->acks[b->nacks++];
    a->n = n;
    a->partition = partition;
    a->offset = offset;
    a->acked_ms = acked_ms;
    a->err_off = sd_lbatch_text(b, error);
    /* delivery reports need no barrier: hand them over in large batches */
    if (b->nacks >= SD_LEDGER_ACKS_PER_BATCH && !b->nsends) sd_ledger_submit(l);
    return SD_OK;
}

sd_err_t sd_ledger_step_begin(sd_ledger_t *l, int idx, int line, const char *text, char *err, size_t errlen) {
    return sd_ledger_run(l, "INSERT OR REPLACE INTO step(idx,line,text,started_ms,status) VALUES(?,?,?,?,'running')",
                         "record a step", err, errlen, NULL, "iisi", (int64_t)idx, (int64_t)line, text, sd_util_wall_ms());
}

sd_err_t sd_ledger_step_end(sd_ledger_t *l, int idx, const char *status, const char *detail, char *err, size_t errlen) {
    return sd_ledger_run(l, "UPDATE step SET ended_ms=?, status=?, detail=? WHERE idx=?", "record a step end", err,
                         errlen, NULL, "issi", sd_util_wall_ms(), status, detail, (int64_t)idx);
}

void sd_ledger_set_frontier(sd_ledger_t *l, void (*fn)(void *opaque, char *out, size_t outlen), void *opaque) {
    l->frontier = fn;
    l->frontier_opaque = opaque;
}

sd_err_t sd_ledger_fault(sd_ledger_t *l, int step, const char *kind, const char *detail, int incarnation,
                         int64_t *id_out, char *err, size_t errlen) {
    char acked[2048] = "";
    if (l->frontier) l->frontier(l->frontier_opaque, acked, sizeof(acked));
    sd_err_t e = sd_ledger_run(l, "INSERT INTO fault(t_ms,step,kind,detail,incarnation,acked) VALUES(?,?,?,?,?,?)",
                               "record a fault", err, errlen, id_out, "iissns", sd_util_wall_ms(), (int64_t)step, kind,
                               detail, incarnation > 0 ? (int64_t)incarnation : INT64_MIN, acked[0] ? acked : NULL);
    return e;
}

/* A record that undoes a fault (a resume, a lifted blackhole): the newest
 * open fault of kind undone whose detail is LIKE like ends now (end_ms),
 * and the record names it (undoes; 0 when none was open). */
sd_err_t sd_ledger_fault_undo(sd_ledger_t *l, int step, const char *undone, const char *like, const char *kind,
                              const char *detail, int incarnation, char *err, size_t errlen) {
    int64_t now = sd_util_wall_ms(), id = 0;
    sqlite3_stmt *st = NULL;
    pthread_mutex_lock(&l->mu);
    if (sqlite3_prepare_v2(l->db, "SELECT max(id) FROM fault WHERE kind=? AND end_ms IS NULL AND undoes IS NULL AND detail LIKE ?", -1,
                           &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, undone, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, like, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) id = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&l->mu);
    sd_err_t e = SD_OK;
    if (id) e = sd_ledger_run(l, "UPDATE fault SET end_ms=? WHERE id=?", "record a fault's end", err, errlen, NULL, "ii", now, id);
    if (!e)
        e = sd_ledger_run(l, "INSERT INTO fault(t_ms,step,kind,detail,incarnation,undoes) VALUES(?,?,?,?,?,?)", "record a fault's end",
                          err, errlen, NULL, "iissni", now, (int64_t)step, kind, detail,
                          incarnation > 0 ? (int64_t)incarnation : INT64_MIN, id);
    return e;
}

static int64_t sd_ledger_scalar(sd_ledger_t *l, const char *sql);

sd_err_t sd_ledger_fault_missed(sd_ledger_t *l, int step, const char *kind, int incarnation, const char *why, char *err,
                                size_t errlen) {
    char sql[96];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM fault WHERE step=%d", step);
    sd_err_t e = SD_OK;
    if (!sd_ledger_scalar(l, sql))
        e = sd_ledger_fault(l, step, kind, "did not land", incarnation, NULL, err, errlen);
    if (!e)
        /* the reason joins the landing once: a reason that already holds
         * the landing (the landing and what would fix it) replaces it */
        e = sd_ledger_run(l, "UPDATE fault SET landed=0, landing=CASE WHEN landing IS NULL OR landing='' THEN ?1"
                             " WHEN instr(?1, landing) = 1 THEN ?1 WHEN instr(landing, ?1) > 0 THEN landing"
                             " ELSE landing || '; ' || ?1 END WHERE step=?2", "record a fault that did not land", err, errlen, NULL,
                          "si", why, (int64_t)step);
    return e;
}

sd_err_t sd_ledger_fault_context(sd_ledger_t *l, int64_t id, const char *context, char *err, size_t errlen) {
    return sd_ledger_run(l, "UPDATE fault SET context=? WHERE id=?", "record what the pipeline's records said at a fault", err, errlen,
                         NULL, "si", context, id);
}

sd_err_t sd_ledger_fault_unstruck(sd_ledger_t *l, int64_t id, const char *why, char *err, size_t errlen) {
    return sd_ledger_run(l, "UPDATE fault SET struck=0, landed=0, landing=? WHERE id=?", "record a fault that did not strike", err, errlen,
                         NULL, "si", why, id);
}

sd_err_t sd_ledger_fault_landing(sd_ledger_t *l, int64_t id, int64_t batch, int landed, int64_t rows_visible,
                                 int64_t batch_rows, const char *detail, char *err, size_t errlen) {
    return sd_ledger_run(l, "UPDATE fault SET batch=?, landed=?, rows_visible=?, batch_rows=?, landing=? WHERE id=?",
                         "record where a kill landed", err, errlen, NULL, "ninnsi", batch, (int64_t)landed, rows_visible,
                         batch_rows, detail, id);
}

sd_err_t sd_ledger_backlog(sd_ledger_t *l, int64_t t_ms, int64_t records, char *err, size_t errlen) {
    return sd_ledger_run(l, "INSERT INTO backlog(t_ms,records) VALUES(?,?)", "record the backlog", err, errlen, NULL, "ii", t_ms, records);
}

sd_err_t sd_ledger_idle_watch(sd_ledger_t *l, int64_t fault, int64_t timeout_ms, int64_t connections, int64_t quiet_closed,
                              int64_t max_quiet_ms, char *err, size_t errlen) {
    return sd_ledger_run(l, "INSERT INTO idle_watch(fault,timeout_ms,connections,quiet_closed,max_quiet_ms) VALUES(?,?,?,?,?)",
                         "record what an idle timeout saw", err, errlen, NULL, "iiiii", fault, timeout_ms, connections, quiet_closed,
                         max_quiet_ms);
}

sd_err_t sd_ledger_idle_drop(sd_ledger_t *l, int64_t fault, int64_t dropped_ms, int64_t used_ms, int64_t closed_ms, char *err,
                             size_t errlen) {
    return sd_ledger_run(l, "INSERT INTO idle_drop(fault,dropped_ms,used_ms,closed_ms) VALUES(?,?,?,?)", "record an idle connection dropped",
                         err, errlen, NULL, "iinn", fault, dropped_ms, used_ms >= 0 ? used_ms : INT64_MIN,
                         closed_ms >= 0 ? closed_ms : INT64_MIN);
}

sd_err_t sd_ledger_leader_move(sd_ledger_t *l, int64_t fault, int partition, int old_leader, int new_leader, int64_t leaderless_ms,
                               char *err, size_t errlen) {
    return sd_ledger_run(l, "INSERT INTO leader_move(fault,partition,old_leader,new_leader,leaderless_ms) VALUES(?,?,?,?,?)",
                         "record a leader move", err, errlen, NULL, "iiinn", fault, (int64_t)partition, (int64_t)old_leader,
                         new_leader >= 0 ? (int64_t)new_leader : INT64_MIN, leaderless_ms >= 0 ? leaderless_ms : INT64_MIN);
}

sd_err_t sd_ledger_edge(sd_ledger_t *l, const char *id, const char *source, const char *edge, int64_t at_ms, int offset_ms,
                        char *err, size_t errlen) {
    return sd_ledger_run(l, "INSERT INTO edge(id,source,edge,at_ms,offset_ms) VALUES(?,?,?,?,?)", "record an edge", err, errlen, NULL,
                         "sssii", id, source, edge, at_ms, (int64_t)offset_ms);
}

sd_err_t sd_ledger_fault_note(sd_ledger_t *l, int64_t id, const char *text, char *err, size_t errlen) {
    return sd_ledger_run(l, "UPDATE fault SET landing = COALESCE(landing || '; ', '') || ? WHERE id=?", "add to a fault's landing", err,
                         errlen, NULL, "si", text, id);
}

sd_err_t sd_ledger_warning(sd_ledger_t *l, const char *kind, const char *detail, char *err, size_t errlen) {
    return sd_ledger_run(l, "INSERT INTO warning(t_ms,kind,detail) VALUES(?,?,?)", "record a warning", err, errlen,
                         NULL, "iss", sd_util_wall_ms(), kind, detail);
}

sd_err_t sd_ledger_incarnation_begin(sd_ledger_t *l, int n, int instance, int pid, const char *argv, const char *log_out,
                                     const char *log_err, int64_t started_ms, const char *version, char *err, size_t errlen) {
    return sd_ledger_run(l, "INSERT INTO incarnation(n,pid,argv,started_ms,log_out,log_err,version,instance) VALUES(?,?,?,?,?,?,?,?)",
                         "record a pipeline start", err, errlen, NULL, "iisisssi", (int64_t)n, (int64_t)pid, argv,
                         started_ms, log_out, log_err, version, (int64_t)instance);
}

sd_err_t sd_ledger_incarnation_version(sd_ledger_t *l, int n, const char *version, char *err, size_t errlen) {
    return sd_ledger_run(l, "UPDATE incarnation SET version=? WHERE n=? AND version IS NULL", "record a pipeline's versions", err, errlen,
                         NULL, "si", version, (int64_t)n);
}

sd_err_t sd_ledger_incarnation_end(sd_ledger_t *l, int n, int64_t ended_ms, int exit_code, int exit_signal,
                                   const char *ended_by, char *err, size_t errlen) {
    return sd_ledger_run(l, "UPDATE incarnation SET ended_ms=?, exit_code=?, exit_signal=?, ended_by=? WHERE n=?",
                         "record a pipeline exit", err, errlen, NULL, "innsi", ended_ms,
                         exit_code >= 0 ? (int64_t)exit_code : INT64_MIN,
                         exit_signal > 0 ? (int64_t)exit_signal : INT64_MIN, ended_by, (int64_t)n);
}

sd_err_t sd_ledger_batch(sd_ledger_t *l, int incarnation, int64_t id, const char *phase, int64_t t_ms, int64_t rows,
                         const char *offsets, char *err, size_t errlen) {
    char acked[2048] = "";
    if (strcmp(phase, "begin") && l->frontier) l->frontier(l->frontier_opaque, acked, sizeof(acked));
    pthread_mutex_lock(&l->mu);
    sd_err_t e = sd_ledger_begin(l, err, errlen);
    if (e) {
        pthread_mutex_unlock(&l->mu);
        return e;
    }
    sqlite3_stmt *st = !strcmp(phase, "begin") ? l->ins_batch_begin : l->upd_batch_commit;
    sqlite3_bind_int(st, 1, incarnation);
    sqlite3_bind_int64(st, 2, id);
    sqlite3_bind_int64(st, 3, t_ms);
    if (rows >= 0) sqlite3_bind_int64(st, 4, rows);
    else sqlite3_bind_null(st, 4);
    if (st == l->upd_batch_commit) {
        if (offsets) sqlite3_bind_text(st, 5, offsets, -1, SQLITE_TRANSIENT);
        else sqlite3_bind_null(st, 5);
        if (acked[0]) sqlite3_bind_text(st, 6, acked, -1, SQLITE_TRANSIENT);
        else sqlite3_bind_null(st, 6);
    }
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) e = sd_ledger_sqlerr(l, "record a batch marker", err, errlen);
    pthread_mutex_unlock(&l->mu);
    return e;
}

sd_err_t sd_ledger_sample(sd_ledger_t *l, int64_t t_ms, const char *sink, int64_t rows, int64_t looked_ms, char *err, size_t errlen) {
    pthread_mutex_lock(&l->mu);
    sd_err_t e = sd_ledger_begin(l, err, errlen);
    if (e) {
        pthread_mutex_unlock(&l->mu);
        return e;
    }
    sqlite3_stmt *st = l->ins_sample;
    sqlite3_bind_int64(st, 1, t_ms);
    sqlite3_bind_text(st, 2, sink, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, rows);
    if (looked_ms >= 0) sqlite3_bind_int64(st, 4, looked_ms);
    else sqlite3_bind_null(st, 4);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) e = sd_ledger_sqlerr(l, "record a sink sample", err, errlen);
    pthread_mutex_unlock(&l->mu);
    return e;
}

sd_err_t sd_ledger_watermark(sd_ledger_t *l, int64_t t_ms, int32_t partition, int64_t low, int64_t high, char *err,
                             size_t errlen) {
    return sd_ledger_run(l, "INSERT INTO watermark(t_ms,partition,low,high) VALUES(?,?,?,?)", "record watermarks",
                         err, errlen, NULL, "iiii", t_ms, (int64_t)partition, low, high);
}

sd_err_t sd_ledger_progress(sd_ledger_t *l, int incarnation, int64_t t_ms, const char *query, int64_t batch,
                            int64_t input_rows, int64_t dropped, int64_t duration_ms, const char *json, char *err,
                            size_t errlen) {
    return sd_ledger_run(l, "INSERT INTO progress(incarnation,t_ms,query,batch,input_rows,dropped_by_watermark,duration_ms,json)"
                            " VALUES(?,?,?,?,?,?,?,?)", "record the pipeline's progress", err, errlen, NULL, "iisiiiis",
                         (int64_t)incarnation, t_ms, query, batch, input_rows, dropped, duration_ms, json);
}

sd_err_t sd_ledger_state(sd_ledger_t *l, const sd_state_row_t *s, char *err, size_t errlen) {
    return sd_ledger_run(l, "INSERT INTO state(incarnation,t_ms,query,batch,operator,rows_total,rows_updated,rows_removed,"
                            "memory_bytes,watermark_ms,input_rows,custom) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
                         "record a batch's state", err, errlen, NULL, "iisisnnnnnns", (int64_t)s->incarnation, s->t_ms,
                         s->query ? s->query : "", s->batch, s->op ? s->op : "", s->rows_total, s->rows_updated,
                         s->rows_removed, s->memory_bytes, s->watermark_ms, s->input_rows, s->custom);
}

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
static int64_t sd_ledger_scalar(sd_ledger_t *l, const char *sql) {
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

/* Messages and late events the ledger has at offsets [begin, end) of a
 * partition, for each partition a progress report names. 1 when the
 * report named the topic at all. */
static int sd_ledger_account_batch(sqlite3_stmt *cnt, const char *topic, const char *json, int64_t *rows,
                                   int64_t *late, int *failed) {
    json_t *o = json_loads(json, 0, NULL);
    int known = 0;
    size_t i;
    json_t *src;
    *rows = *late = 0;
    json_array_foreach(json_object_get(o, "sources"), i, src) {
        json_t *so = json_object_get(src, "startOffset"), *eo = json_object_get(src, "endOffset");
        if (json_is_string(so)) so = json_loads(json_string_value(so), 0, NULL); else json_incref(so);
        if (json_is_string(eo)) eo = json_loads(json_string_value(eo), 0, NULL); else json_incref(eo);
        json_t *sp = json_object_get(so, topic), *ep = json_object_get(eo, topic);
        if (json_is_object(ep)) {
            known = 1;
            const char *k;
            json_t *v;
            json_object_foreach(ep, k, v) {
                int64_t end = json_integer_value(v);
                int64_t begin = json_is_object(sp) && json_object_get(sp, k) ? json_integer_value(json_object_get(sp, k)) : 0;
                sqlite3_bind_int(cnt, 1, atoi(k));
                sqlite3_bind_int64(cnt, 2, begin);
                sqlite3_bind_int64(cnt, 3, end);
                if (sqlite3_step(cnt) == SQLITE_ROW) {
                    *rows += sqlite3_column_int64(cnt, 0);
                    *late += sqlite3_column_int64(cnt, 1);
                } else {
                    *failed = 1;
                }
                sqlite3_reset(cnt);
            }
        }
        json_decref(so);
        json_decref(eo);
    }
    json_decref(o);
    return known;
}

sd_err_t sd_ledger_compare_account(sd_ledger_t *l, const char *topic, int64_t produced,
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
        if (!sd_ledger_account_batch(cnt, topic, (const char *)sqlite3_column_text(st, 5), &lrows, &llate, &failed) || failed) continue;
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
