/* ledger_sql.c - the statements every ledger file runs, below all of them:
 * an SQLite error naming run.db, a transaction opened and committed, a
 * one-off statement with its arguments, the run's kept error (see
 * ledger_int.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ledger_int.h"
#include "util.h"

sd_err_t sd_ledger_sqlerr(sd_ledger_t *l, const char *op, char *err, size_t errlen) {
    return sd_err_set(err, errlen, SD_ERR_IO, "ledger: %s in %s: %s", op, l->path, sqlite3_errmsg(l->db));
}

sd_err_t sd_ledger_exec(sd_ledger_t *l, const char *sql, const char *op, char *err, size_t errlen) {
    char *msg = NULL;
    if (sqlite3_exec(l->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        sd_err_t e = sd_err_set(err, errlen, SD_ERR_IO, "ledger: %s in %s: %s", op, l->path, msg ? msg : "?");
        sqlite3_free(msg);
        return e;
    }
    return SD_OK;
}

/* Under mu. */
sd_err_t sd_ledger_begin(sd_ledger_t *l, char *err, size_t errlen) {
    if (l->in_txn) return SD_OK;
    sd_err_t e = sd_ledger_exec(l, "BEGIN", "begin transaction", err, errlen);
    if (!e) {
        l->in_txn = 1;
        l->txn_started_ms = sd_util_mono_ms();
    }
    return e;
}

/* Under mu. */
sd_err_t sd_ledger_commit_locked(sd_ledger_t *l, char *err, size_t errlen) {
    if (!l->in_txn) return SD_OK;
    sd_err_t e = sd_ledger_exec(l, "COMMIT", "commit", err, errlen);
    l->in_txn = 0;
    return e;
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
sd_err_t sd_ledger_run(sd_ledger_t *l, const char *sql, const char *op, char *err, size_t errlen,
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
