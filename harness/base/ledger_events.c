/* ledger_events.c - the run's writes into run.db, one call per thing that happened (see ledger_int.h). */
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
    sd_lseries_sent(l, m->n, s->seq, s->kind, s->disposition && !strcmp(s->disposition, "target"), s->side, queued_ms);
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
    sd_lseries_acked(l, n, !error, acked_ms);
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

sd_err_t sd_ledger_mark_aborted(sd_ledger_t *l, int64_t seq_lo, int64_t seq_hi, const char *why, char *err, size_t errlen) {
    /* the messages out of their packs first: the update is of rows */
    sd_err_t e = sd_ledger_settle(l, err, errlen);
    if (e) return e;
    return sd_ledger_run(l, "UPDATE sent SET kind='aborted', disposition='dropped', detail=? WHERE seq>=? AND seq<? AND kind='valid'",
                         "record a transaction the broker aborted", err, errlen, NULL, "sii", why, seq_lo, seq_hi);
}

sd_err_t sd_ledger_incarnation_begin(sd_ledger_t *l, int n, int instance, int pid, const char *argv, const char *log_out,
                                     const char *log_err, int64_t started_ms, const char *version, char *err, size_t errlen) {
    return sd_ledger_run(l, "INSERT INTO incarnation(n,pid,argv,started_ms,log_out,log_err,version,instance) VALUES(?,?,?,?,?,?,?,?)",
                         "record a pipeline start", err, errlen, NULL, "iisisssi", (int64_t)n, (int64_t)pid, argv,
                         started_ms, log_out, log_err, version, (int64_t)instance);
}

sd_err_t sd_ledger_engine(sd_ledger_t *l, int incarnation, int64_t t_ms, const char *words, char *err, size_t errlen) {
    char a[128], b[128];
    long long n;
    if (sscanf(words, "state %127s %127s", a, b) == 2)
        return sd_ledger_run(l, "INSERT INTO engine(incarnation,t_ms,what,from_state,to_state) VALUES(?,?,'state',?,?)",
                             "record the engine's state", err, errlen, NULL, "iiss", (int64_t)incarnation, t_ms, a, b);
    if (sscanf(words, "restored %lld %127s", &n, a) == 2)
        return sd_ledger_run(l, "INSERT INTO engine(incarnation,t_ms,what,records,store) VALUES(?,?,'restored',?,?)",
                             "record a restore", err, errlen, NULL, "iiis", (int64_t)incarnation, t_ms, (int64_t)n, a);
    return SD_OK;
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
