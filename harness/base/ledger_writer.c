/* ledger_writer.c - the writer thread, its ticket queue and the packed form of messages and delivery reports (see ledger_int.h). */
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

void sd_lbatch_free(sd_lbatch_t *b) {
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
sd_err_t sd_ledger_settle(sd_ledger_t *l, char *err, size_t errlen) {
    sd_err_t e = sd_ledger_sync(l, err, errlen);
    if (e) return e;
    pthread_mutex_lock(&l->mu); /* l->scratch is used under it only, by whichever thread unpacks */
    while (sd_ledger_unpack_one(l, l->scratch, &e, err, errlen)) {
    }
    pthread_mutex_unlock(&l->mu);
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
sd_err_t sd_ledger_read_failed(sd_ledger_t *l, sd_err_t e, const char *why) {
    if (!e) return SD_OK;
    pthread_mutex_lock(&l->qmu);
    sd_ledger_keep_err(l, e, why);
    pthread_mutex_unlock(&l->qmu);
    return e;
}

/* A reader of messages or delivery reports: every one in its rows, then the
 * connection's lock (held on SD_OK, and on a failure too: the caller
 * unlocks as always and reports what is in why). */
sd_err_t sd_ledger_lock_read(sd_ledger_t *l, char *why, size_t wlen) {
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

void *sd_ledger_writer(void *arg) {
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

sd_lbatch_t *sd_ledger_open_batch(sd_ledger_t *l) {
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
