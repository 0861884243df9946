/* sink_postgres.c - reads a PostgreSQL sink through libpq:
 * `sink postgres dsn=DSN query=SQL`.
 *
 * The same contract as the SQLite reader: the query's first column is the
 * row's id, an optional second the writer label, an optional third the
 * write time in epoch ms; the result models read columns by name. dsn= is
 * any libpq connection string or URI ("host=127.0.0.1 port=5432
 * dbname=app", "postgresql://user@host/db"). The session is read-only
 * (default_transaction_read_only) and reused between reads; a dropped
 * connection is opened again at the next read. A table that does not exist
 * yet counts 0 rows while the harness waits (SQLSTATE 42P01). */
#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

#include "sink.h"
#include "util.h"

typedef struct {
    char *dsn, *query, *count_sql;
    PGconn *conn;
} sd_pg_sink_t;

static sd_err_t sd_pg_open(const sd_kvlist_t *params, const sd_sink_ctx_t *ctx, void **state, char *err, size_t errlen) {
    (void)ctx; (void)err; (void)errlen;
    sd_pg_sink_t *s = sd_util_xcalloc(1, sizeof(*s));
    s->dsn = sd_util_strdup(sd_kvlist_get(params, "dsn"));
    s->query = sd_util_strdup(sd_kvlist_get(params, "query"));
    size_t n = strlen(s->query);
    while (n && (s->query[n - 1] == ';' || s->query[n - 1] == ' ')) s->query[--n] = 0;
    s->count_sql = sd_util_fmt("SELECT count(*) FROM (%s) AS sd_rows", s->query);
    *state = s;
    return SD_OK;
}

/* The last line of libpq's message (it ends in a newline). */
static void sd_pg_msg(const char *m, char *out, size_t olen) {
    snprintf(out, olen, "%s", m ? m : "unknown error");
    size_t n = strlen(out);
    while (n && (out[n - 1] == '\n' || out[n - 1] == ' ')) out[--n] = 0;
}

static sd_err_t sd_pg_connect(sd_pg_sink_t *s, char *err, size_t errlen) {
    if (s->conn && PQstatus(s->conn) == CONNECTION_OK) return SD_OK;
    if (s->conn) PQfinish(s->conn);
    const char *keys[] = {"dbname", "connect_timeout", "options", "application_name", NULL};
    const char *vals[] = {s->dsn, "10", "-c default_transaction_read_only=on", "streamdrill", NULL};
    s->conn = PQconnectdbParams(keys, vals, 1);
    if (PQstatus(s->conn) != CONNECTION_OK) {
        char m[512];
        sd_pg_msg(PQerrorMessage(s->conn), m, sizeof(m));
        PQfinish(s->conn);
        s->conn = NULL;
        return sd_err_set(err, errlen, SD_ERR_SINK, "cannot connect: %s", m);
    }
    return SD_OK;
}

/* Run sql; *res holds the rows. missing: the error was "no such table". */
static sd_err_t sd_pg_exec(sd_pg_sink_t *s, const char *sql, PGresult **res, int *missing, char *err, size_t errlen) {
    *missing = 0;
    sd_err_t e = sd_pg_connect(s, err, errlen);
    if (e) return e;
    *res = PQexecParams(s->conn, sql, 0, NULL, NULL, NULL, NULL, 0);
    if (PQresultStatus(*res) == PGRES_TUPLES_OK) return SD_OK;
    const char *state = PQresultErrorField(*res, PG_DIAG_SQLSTATE);
    *missing = state && !strcmp(state, "42P01");
    char m[512];
    sd_pg_msg(PQresultErrorMessage(*res), m, sizeof(m));
    PQclear(*res);
    *res = NULL;
    if (PQstatus(s->conn) != CONNECTION_OK) { PQfinish(s->conn); s->conn = NULL; }
    return sd_err_set(err, errlen, SD_ERR_SINK, "query: %s", m);
}

static sd_err_t sd_pg_count(void *state, int missing_ok, int64_t *rows, char *err, size_t errlen) {
    sd_pg_sink_t *s = state;
    PGresult *res;
    int missing;
    sd_err_t e = sd_pg_exec(s, s->count_sql, &res, &missing, err, errlen);
    if (e) {
        if (missing && missing_ok) { *rows = 0; return SD_OK; }
        return e;
    }
    *rows = PQntuples(res) ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : 0;
    PQclear(res);
    return SD_OK;
}

static sd_err_t sd_pg_scan(void *state, sd_sink_row_cb cb, void *opaque, char *err, size_t errlen) {
    sd_pg_sink_t *s = state;
    PGresult *res;
    int missing;
    sd_err_t e = sd_pg_exec(s, s->query, &res, &missing, err, errlen);
    if (e) return e;
    int n = PQntuples(res), ncol = PQnfields(res);
    for (int i = 0; i < n; i++) {
        int idnull = PQgetisnull(res, i, 0);
        const char *w = ncol > 1 && !PQgetisnull(res, i, 1) ? PQgetvalue(res, i, 1) : NULL;
        int64_t t = ncol > 2 && !PQgetisnull(res, i, 2) ? strtoll(PQgetvalue(res, i, 2), NULL, 10) : INT64_MIN;
        if (cb(opaque, idnull ? NULL : PQgetvalue(res, i, 0), idnull ? 0 : (size_t)PQgetlength(res, i, 0), w,
               w ? (size_t)PQgetlength(res, i, 1) : 0, t))
            break;
    }
    PQclear(res);
    return SD_OK;
}

static sd_err_t sd_pg_scan_cols(void *state, const char *const *names, int n, sd_sink_cols_cb cb, void *opaque, char *err,
                                size_t errlen) {
    sd_pg_sink_t *s = state;
    PGresult *res;
    int missing;
    sd_err_t e = sd_pg_exec(s, s->query, &res, &missing, err, errlen);
    if (e) return e;
    int ncol = PQnfields(res);
    int *at = sd_util_xmalloc(sizeof(int) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        const char *want = names[i][0] == '?' ? names[i] + 1 : names[i];
        at[i] = PQfnumber(res, want);
        if (at[i] < 0 && names[i][0] != '?') {
            sd_buf_t have;
            sd_buf_init(&have);
            for (int k = 0; k < ncol; k++) sd_buf_printf(&have, "%s%s", k ? ", " : "", PQfname(res, k));
            e = sd_err_set(err, errlen, SD_ERR_SINK, "query: expected a column named %s, found %s", want, have.data ? have.data : "none");
            sd_buf_free(&have);
            free(at);
            PQclear(res);
            return e;
        }
    }
    const char **vals = sd_util_xmalloc(sizeof(char *) * (size_t)(n ? n : 1));
    size_t *lens = sd_util_xmalloc(sizeof(size_t) * (size_t)(n ? n : 1));
    for (int r = 0, rows = PQntuples(res); r < rows; r++) {
        for (int i = 0; i < n; i++) {
            vals[i] = at[i] >= 0 && !PQgetisnull(res, r, at[i]) ? PQgetvalue(res, r, at[i]) : NULL;
            lens[i] = vals[i] ? (size_t)PQgetlength(res, r, at[i]) : 0;
        }
        if (cb(opaque, vals, lens)) break;
    }
    free(at);
    free(vals);
    free(lens);
    PQclear(res);
    return SD_OK;
}

static void sd_pg_close(void *state) {
    sd_pg_sink_t *s = state;
    if (s->conn) PQfinish(s->conn);
    free(s->dsn);
    free(s->query);
    free(s->count_sql);
    free(s);
}

const sd_sink_ops_t sd_sink_postgres = {
    .name = "postgres", .open = sd_pg_open, .count = sd_pg_count, .scan = sd_pg_scan, .close = sd_pg_close,
    .scan_cols = sd_pg_scan_cols
};
