/* sink_sqlite.c - reads a SQLite sink: db=PATH query=SQL.
 *
 * The query's first column is the row's id; an optional second column is
 * the writer label (e.g. the incarnation that wrote the row) and an
 * optional third the write time in epoch ms. The database is opened
 * read-only; a pipeline writing in WAL mode is never blocked by it. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "sink.h"
#include "util.h"

typedef struct {
    char *path;
    char *query;
    char *count_sql;
    sqlite3 *db;
} sd_sqlite_sink_t;

static sd_err_t sd_sqlite_open(const sd_kvlist_t *params, const sd_sink_ctx_t *ctx, void **state, char *err, size_t errlen) {
    (void)ctx; (void)err; (void)errlen;
    sd_sqlite_sink_t *s = sd_util_xcalloc(1, sizeof(*s));
    s->path = sd_util_strdup(sd_kvlist_get(params, "db"));
    s->query = sd_util_strdup(sd_kvlist_get(params, "query"));
    /* strip a trailing semicolon so the query can be wrapped */
    size_t n = strlen(s->query);
    while (n && (s->query[n - 1] == ';' || s->query[n - 1] == ' ')) s->query[--n] = 0;
    s->count_sql = sd_util_fmt("SELECT count(*) FROM (%s)", s->query);
    *state = s;
    return SD_OK;
}

/* Open the database on first use; *missing when it does not exist yet. */
static sd_err_t sd_sqlite_connect(sd_sqlite_sink_t *s, int *missing, char *err, size_t errlen) {
    *missing = 0;
    if (s->db) return SD_OK;
    if (!sd_util_exists(s->path)) {
        *missing = 1;
        return sd_err_set(err, errlen, SD_ERR_SINK, "database %s does not exist", s->path);
    }
    if (sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        sd_err_t e = sd_err_set(err, errlen, SD_ERR_SINK, "open %s: %s", s->path, s->db ? sqlite3_errmsg(s->db) : "out of memory");
        sqlite3_close(s->db);
        s->db = NULL;
        return e;
    }
    sqlite3_busy_timeout(s->db, 10000);
    return SD_OK;
}

static sd_err_t sd_sqlite_count(void *state, int missing_ok, int64_t *rows, char *err, size_t errlen) {
    sd_sqlite_sink_t *s = state;
    int missing;
    sd_err_t e = sd_sqlite_connect(s, &missing, err, errlen);
    if (e) {
        if (missing && missing_ok) { *rows = 0; return SD_OK; }
        return e;
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, s->count_sql, -1, &st, NULL) != SQLITE_OK) {
        const char *m = sqlite3_errmsg(s->db);
        if (missing_ok && strstr(m, "no such table")) { *rows = 0; return SD_OK; }
        return sd_err_set(err, errlen, SD_ERR_SINK, "query %s: %s", s->path, m);
    }
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *rows = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) return sd_err_set(err, errlen, SD_ERR_SINK, "count rows in %s: %s", s->path, sqlite3_errmsg(s->db));
    return SD_OK;
}

static sd_err_t sd_sqlite_scan(void *state, sd_sink_row_cb cb, void *opaque, char *err, size_t errlen) {
    sd_sqlite_sink_t *s = state;
    int missing;
    sd_err_t e = sd_sqlite_connect(s, &missing, err, errlen);
    if (e) return e;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, s->query, -1, &st, NULL) != SQLITE_OK)
        return sd_err_set(err, errlen, SD_ERR_SINK, "query %s: %s", s->path, sqlite3_errmsg(s->db));
    int ncol = sqlite3_column_count(st);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        size_t idlen = id ? (size_t)sqlite3_column_bytes(st, 0) : 0;
        const char *w = ncol > 1 ? (const char *)sqlite3_column_text(st, 1) : NULL;
        size_t wlen = w ? (size_t)sqlite3_column_bytes(st, 1) : 0;
        int64_t t = ncol > 2 && sqlite3_column_type(st, 2) != SQLITE_NULL ? sqlite3_column_int64(st, 2) : INT64_MIN;
        if (cb(opaque, id, idlen, w, wlen, t)) break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        e = sd_err_set(err, errlen, SD_ERR_SINK, "read %s: %s", s->path, sqlite3_errmsg(s->db));
        sqlite3_finalize(st);
        return e;
    }
    sqlite3_finalize(st);
    return SD_OK;
}

static sd_err_t sd_sqlite_scan_cols(void *state, const char *const *names, int n, sd_sink_cols_cb cb, void *opaque, char *err,
                                    size_t errlen) {
    sd_sqlite_sink_t *s = state;
    int missing;
    sd_err_t e = sd_sqlite_connect(s, &missing, err, errlen);
    if (e) return e;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, s->query, -1, &st, NULL) != SQLITE_OK)
        return sd_err_set(err, errlen, SD_ERR_SINK, "query %s: %s", s->path, sqlite3_errmsg(s->db));
    int ncol = sqlite3_column_count(st);
    int *at = sd_util_xmalloc(sizeof(int) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        const char *want = names[i][0] == '?' ? names[i] + 1 : names[i];
        at[i] = -1;
        for (int k = 0; k < ncol; k++)
            if (!strcmp(sqlite3_column_name(st, k), want)) at[i] = k;
        if (at[i] < 0 && names[i][0] != '?') {
            sd_buf_t have;
            sd_buf_init(&have);
            for (int k = 0; k < ncol; k++) sd_buf_printf(&have, "%s%s", k ? ", " : "", sqlite3_column_name(st, k));
            e = sd_err_set(err, errlen, SD_ERR_SINK, "query %s: expected a column named %s, found %s", s->path, want,
                           have.data ? have.data : "none");
            sd_buf_free(&have);
            sqlite3_finalize(st);
            free(at);
            return e;
        }
    }
    const char **vals = sd_util_xmalloc(sizeof(char *) * (size_t)(n ? n : 1));
    size_t *lens = sd_util_xmalloc(sizeof(size_t) * (size_t)(n ? n : 1));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        for (int i = 0; i < n; i++) {
            vals[i] = at[i] >= 0 && sqlite3_column_type(st, at[i]) != SQLITE_NULL ? (const char *)sqlite3_column_text(st, at[i]) : NULL;
            lens[i] = vals[i] ? (size_t)sqlite3_column_bytes(st, at[i]) : 0;
        }
        if (cb(opaque, vals, lens)) break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) e = sd_err_set(err, errlen, SD_ERR_SINK, "read %s: %s", s->path, sqlite3_errmsg(s->db));
    sqlite3_finalize(st);
    free(at);
    free(vals);
    free(lens);
    return e;
}

static void sd_sqlite_close(void *state) {
    sd_sqlite_sink_t *s = state;
    if (s->db) sqlite3_close(s->db);
    free(s->path);
    free(s->query);
    free(s->count_sql);
    free(s);
}

const sd_sink_ops_t sd_sink_sqlite = {
    .name = "sqlite", .open = sd_sqlite_open, .count = sd_sqlite_count, .scan = sd_sqlite_scan, .close = sd_sqlite_close,
    .scan_cols = sd_sqlite_scan_cols
};
