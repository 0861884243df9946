/* sink_delta.c - reads a Delta Lake table: `sink delta path=DIR [id=F]
 * [time=F] [python=PATH]`.
 *
 * The snapshot is found the way Delta's readers find it: by replaying the
 * commits in DIR/_delta_log (00000000000000000000.json, ...) in order,
 * each `add` making a data file part of the table and each `remove`
 * taking one out; the directory's files are never listed as the table.
 * Every file keeps the commit that added it, and that commit is each of its
 * rows' writer label: "version 7 (WRITE, txn q1=3)" with the transaction's
 * txnAppId and txnVersion when the writer set them, so a duplicate names
 * the two commits that wrote it. The commit's timestamp is the rows' write
 * time.
 *
 * Counting needs no data file: the rows of a file are its add's
 * stats.numRecords (the Parquet helper counts the rest). The mark for
 * `kill after-sink-commit` is the newest version, from the log's file
 * names. Rows are read from Parquet by a Python helper with pyarrow
 * (harness/sinks/parquet_rows.py; Parquet has no reader in Debian's C
 * libraries), given the snapshot's files on stdin. Replay is incremental:
 * a later read applies only the new commits.
 *
 * Not read (the run is inconclusive, saying so): a log whose first commits
 * were cleaned up behind a checkpoint, and deletion vectors. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "command.h"
#include "sink.h"
#include "util.h"

typedef struct {
    char *path;       /* as in the log (decoded), relative to the table or absolute */
    int64_t version;  /* the commit that added it */
    int64_t records;  /* stats.numRecords, -1 when absent */
    char *pv;         /* partitionValues as JSON, or NULL */
    int dv;           /* has a deletion vector */
    int used;
} sd_dfile_t;

typedef struct {
    char *label;
    int64_t t_ms;
} sd_dcommit_t;

typedef struct {
    char *dir, *log;
    char *id_field, *time_field;
    char *python, *helper;
    char *stderr_path;
    int64_t done;        /* versions [0, done) are applied */
    sd_dfile_t *files;   /* open addressing on path */
    size_t cap, used;
    sd_dcommit_t *commits;
    int64_t ncommits;
} sd_delta_t;

static uint64_t sd_dhash(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static sd_dfile_t *sd_dfind(sd_delta_t *d, const char *path, int create) {
    if (create && (d->used + 1) * 2 > d->cap) {
        size_t ncap = d->cap ? d->cap * 2 : 64;
        sd_dfile_t *nf = sd_util_xcalloc(ncap, sizeof(*nf));
        for (size_t i = 0; i < d->cap; i++) {
            if (!d->files[i].used) continue;
            size_t k = sd_dhash(d->files[i].path) & (ncap - 1);
            while (nf[k].used) k = (k + 1) & (ncap - 1);
            nf[k] = d->files[i];
        }
        free(d->files);
        d->files = nf;
        d->cap = ncap;
    }
    if (!d->cap) return NULL;
    size_t k = sd_dhash(path) & (d->cap - 1);
    while (d->files[k].used) {
        if (!strcmp(d->files[k].path, path)) return &d->files[k];
        k = (k + 1) & (d->cap - 1);
    }
    if (!create) return NULL;
    d->files[k].used = 1;
    d->files[k].path = sd_util_strdup(path);
    d->used++;
    return &d->files[k];
}

/* Removing from open addressing: re-insert the run that follows. */
static void sd_dremove(sd_delta_t *d, const char *path) {
    sd_dfile_t *f = sd_dfind(d, path, 0);
    if (!f) return;
    free(f->path);
    free(f->pv);
    memset(f, 0, sizeof(*f));
    d->used--;
    size_t k = ((size_t)(f - d->files) + 1) & (d->cap - 1);
    while (d->files[k].used) {
        sd_dfile_t moved = d->files[k];
        memset(&d->files[k], 0, sizeof(moved));
        d->used--;
        sd_dfile_t *n = sd_dfind(d, moved.path, 1);
        free(n->path);
        *n = moved;
        k = (k + 1) & (d->cap - 1);
    }
}

static void sd_dreset(sd_delta_t *d) {
    for (size_t i = 0; i < d->cap; i++)
        if (d->files[i].used) { free(d->files[i].path); free(d->files[i].pv); }
    free(d->files);
    d->files = NULL;
    d->cap = d->used = 0;
    for (int64_t i = 0; i < d->ncommits; i++) free(d->commits[i].label);
    free(d->commits);
    d->commits = NULL;
    d->ncommits = 0;
    d->done = 0;
}

static void sd_delta_close(void *state);

static sd_err_t sd_delta_open(const sd_kvlist_t *params, const sd_sink_ctx_t *ctx, void **state, char *err, size_t errlen) {
    (void)err; (void)errlen;
    sd_delta_t *d = sd_util_xcalloc(1, sizeof(*d));
    d->dir = sd_util_strdup(sd_kvlist_get(params, "path"));
    d->log = sd_util_fmt("%s/_delta_log", d->dir);
    const char *v;
    d->id_field = sd_util_strdup((v = sd_kvlist_get(params, "id")) ? v : ctx->id_field ? ctx->id_field : "event_id");
    d->time_field = sd_util_strdup((v = sd_kvlist_get(params, "time")) ? v : "sd_commit_ms");
    char *exe = sd_util_exe_dir();
    if ((v = sd_kvlist_get(params, "python")) || (v = getenv("STREAMDRILL_PYTHON"))) {
        d->python = sd_util_strdup(v);
    } else {
        /* the project's own virtualenv (pyarrow installed by spark.sh), else python3 */
        char *venv = sd_util_fmt("%s/../.cache/venv/bin/python", exe);
        d->python = sd_util_exists(venv) ? venv : (free(venv), sd_util_strdup("python3"));
    }
    d->helper = (v = getenv("STREAMDRILL_PARQUET_HELPER")) ? sd_util_strdup(v) : sd_util_libexec_path("parquet_rows.py");
    free(exe);
    if (ctx->run_dir) d->stderr_path = sd_util_fmt("%s/sink-%s.stderr", ctx->run_dir, ctx->name ? ctx->name : "delta");
    *state = d;
    return SD_OK;
}

static int sd_delta_cmp_version(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The versions in the log: *first and *last (-1, -1 when there is none),
 * and when all is given every version the folder lists, sorted (*all,
 * *nall; the caller frees it). A name past a version (a long) is no
 * commit file, as for Delta's own readers. */
static sd_err_t sd_delta_versions(sd_delta_t *d, int64_t *first, int64_t *last, int64_t **all, size_t *nall, char *err,
                                  size_t errlen) {
    *first = *last = -1;
    if (all) *all = NULL, *nall = 0;
    DIR *dir = opendir(d->log);
    if (!dir) return sd_util_is_dir(d->dir) || !sd_util_exists(d->dir) ? SD_OK : sd_err_set(err, errlen, SD_ERR_SINK, "%s is not a directory", d->dir);
    struct dirent *de;
    while ((de = readdir(dir))) {
        const char *n = de->d_name;
        if (strlen(n) != 25 || strcmp(n + 20, ".json") || strspn(n, "0123456789") != 20) continue;
        errno = 0;
        int64_t v = strtoll(n, NULL, 10);
        if (errno == ERANGE) continue;
        if (*first < 0 || v < *first) *first = v;
        if (v > *last) *last = v;
        if (all) {
            *all = sd_util_xrealloc(*all, sizeof(**all) * (*nall + 1));
            (*all)[(*nall)++] = v;
        }
    }
    closedir(dir);
    if (all && *nall) qsort(*all, *nall, sizeof(**all), sd_delta_cmp_version);
    return SD_OK;
}

/* A path as the log writes it (a URI-encoded relative path, or a file:
 * URI), decoded. */
static char *sd_delta_decode(const char *p) {
    if (!strncmp(p, "file://", 7)) p += 7;
    else if (!strncmp(p, "file:", 5)) p += 5;
    char *o = sd_util_xmalloc(strlen(p) + 1), *w = o;
    for (; *p; p++) {
        if (*p == '%' && p[1] && p[2]) {
            char hex[3] = {p[1], p[2], 0};
            char *end;
            long c = strtol(hex, &end, 16);
            if (!*end) { *w++ = (char)c; p += 2; continue; }
        }
        *w++ = *p;
    }
    *w = 0;
    return o;
}

/* Apply one commit file. */
static sd_err_t sd_delta_apply(sd_delta_t *d, int64_t version, char *err, size_t errlen) {
    char *path = sd_util_fmt("%s/%020lld.json", d->log, (long long)version);
    char *text = NULL;
    size_t len = 0;
    char rerr[512];
    sd_err_t e = sd_util_read_file(path, &text, &len, rerr, sizeof(rerr));
    if (e) {
        free(path);
        return sd_err_set(err, errlen, SD_ERR_SINK, "commit %lld of %s cannot be read: %s", (long long)version, d->dir, rerr);
    }
    /* first the commit's own facts (operation, time, transaction), then its files */
    json_t **acts = NULL;
    size_t nacts = 0;
    const char *op = "?";
    char txn[256] = "";
    int64_t t_ms = INT64_MIN;
    for (size_t at = 0, lineno = 1; at < len; lineno++) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        if (n) {
            json_error_t je;
            json_t *o = json_loadb(text + at, n, 0, &je);
            if (!o || !json_is_object(o)) {
                json_decref(o);
                for (size_t i = 0; i < nacts; i++) json_decref(acts[i]);
                free(acts);
                e = sd_err_set(err, errlen, SD_ERR_SINK, "%s:%zu: expected a Delta action (a JSON object), found %s", path, lineno,
                               o ? "another JSON value" : je.text);
                free(text);
                free(path);
                return e;
            }
            acts = sd_util_xrealloc(acts, sizeof(*acts) * (nacts + 1));
            acts[nacts++] = o;
            json_t *ci = json_object_get(o, "commitInfo"), *tx = json_object_get(o, "txn");
            if (json_is_object(ci)) {
                json_t *jop = json_object_get(ci, "operation"), *jt = json_object_get(ci, "timestamp");
                if (json_is_string(jop)) op = json_string_value(jop);
                if (json_is_integer(jt)) t_ms = json_integer_value(jt);
            }
            if (json_is_object(tx) && json_is_string(json_object_get(tx, "appId")))
                snprintf(txn + strlen(txn), sizeof(txn) - strlen(txn), "%stxn %.100s=%lld", txn[0] ? ", " : "",
                         json_string_value(json_object_get(tx, "appId")), (long long)json_integer_value(json_object_get(tx, "version")));
        }
        at += n + (nl ? 1 : 0);
    }
    d->commits = sd_util_xrealloc(d->commits, sizeof(*d->commits) * (size_t)(version + 1));
    d->commits[version].label = sd_util_fmt("version %lld (%s%s%s)", (long long)version, op, txn[0] ? ", " : "", txn);
    d->commits[version].t_ms = t_ms;
    d->ncommits = version + 1;
    for (size_t i = 0; i < nacts; i++) {
        json_t *add = json_object_get(acts[i], "add"), *rm = json_object_get(acts[i], "remove");
        if (json_is_object(rm) && json_is_string(json_object_get(rm, "path"))) {
            char *p = sd_delta_decode(json_string_value(json_object_get(rm, "path")));
            sd_dremove(d, p);
            free(p);
        }
        if (json_is_object(add) && json_is_string(json_object_get(add, "path"))) {
            char *p = sd_delta_decode(json_string_value(json_object_get(add, "path")));
            sd_dremove(d, p); /* an add of a path already there replaces it */
            sd_dfile_t *f = sd_dfind(d, p, 1);
            free(p);
            f->version = version;
            f->records = -1;
            json_t *st = json_object_get(add, "stats");
            if (json_is_string(st)) {
                json_t *so = json_loads(json_string_value(st), 0, NULL);
                json_t *nr = so ? json_object_get(so, "numRecords") : NULL;
                if (json_is_integer(nr)) f->records = json_integer_value(nr);
                json_decref(so);
            }
            json_t *pv = json_object_get(add, "partitionValues");
            f->pv = json_is_object(pv) && json_object_size(pv) ? json_dumps(pv, JSON_COMPACT) : NULL;
            f->dv = json_is_object(json_object_get(add, "deletionVector"));
        }
        json_decref(acts[i]);
    }
    free(acts);
    free(text);
    free(path);
    return SD_OK;
}

/* Bring the snapshot up to the newest commit. *absent: no table yet. */
static sd_err_t sd_delta_replay(sd_delta_t *d, int *absent, char *err, size_t errlen) {
    int64_t first, last;
    sd_err_t e = sd_delta_versions(d, &first, &last, NULL, NULL, err, errlen);
    if (e) return e;
    *absent = last < 0;
    if (last < 0) {
        sd_dreset(d);
        return SD_OK;
    }
    if (first > 0)
        return sd_err_set(err, errlen, SD_ERR_SINK, "%s: the log starts at version %lld (the commits before it were cleaned up behind "
                          "a checkpoint); streamdrill replays the commits from version 0 and does not read checkpoints", d->dir, (long long)first);
    if (last < d->done - 1) sd_dreset(d); /* the table was made again (last may be a long's largest) */
    for (int64_t v = d->done; v <= last; v++) {
        if ((e = sd_delta_apply(d, v, err, errlen))) return e;
        d->done = v + 1;
    }
    return SD_OK;
}

static sd_err_t sd_delta_mark(void *state, int64_t *mark, char *err, size_t errlen) {
    sd_delta_t *d = state;
    int64_t first;
    return sd_delta_versions(d, &first, mark, NULL, NULL, err, errlen);
}

static sd_err_t sd_delta_files_json(sd_delta_t *d, sd_buf_t *in, char *err, size_t errlen) {
    for (size_t i = 0; i < d->cap; i++) {
        sd_dfile_t *f = &d->files[i];
        if (!f->used) continue;
        if (f->dv)
            return sd_err_set(err, errlen, SD_ERR_SINK, "%s: data file %s has a deletion vector (added by %s); streamdrill does not read "
                              "deletion vectors: disable them on the table (delta.enableDeletionVectors=false)", d->dir, f->path,
                              d->commits[f->version].label);
        json_t *o = json_object();
        char *abs = f->path[0] == '/' ? sd_util_strdup(f->path) : sd_util_fmt("%s/%s", d->dir, f->path);
        json_object_set_new(o, "path", json_string(abs));
        json_object_set_new(o, "writer", json_string(d->commits[f->version].label));
        json_object_set_new(o, "t", json_integer(d->commits[f->version].t_ms));
        if (f->pv) json_object_set_new(o, "pv", json_loads(f->pv, 0, NULL));
        char *line = json_dumps(o, JSON_COMPACT);
        sd_buf_puts(in, line);
        sd_buf_putc(in, '\n');
        free(line);
        free(abs);
        json_decref(o);
    }
    return SD_OK;
}

/* The snapshot's rows as JSON lines, through the Parquet helper. */
static sd_err_t sd_delta_rows(sd_delta_t *d, sd_buf_t *out, char *err, size_t errlen) {
    int absent;
    sd_err_t e = sd_delta_replay(d, &absent, err, errlen);
    if (e) return e;
    if (absent) return sd_err_set(err, errlen, SD_ERR_SINK, "%s has no _delta_log: no table was written there", d->dir);
    sd_buf_t in;
    sd_buf_init(&in);
    if (!(e = sd_delta_files_json(d, &in, err, errlen)) && in.len) {
        char *argv[] = {d->python, d->helper, NULL};
        e = sd_sink_command_output(argv, in.data, in.len, sd_util_scaled_ms(300000), 0, d->stderr_path, out, err, errlen);
    }
    sd_buf_free(&in);
    return e;
}

static sd_err_t sd_delta_count(void *state, int missing_ok, int64_t *rows, char *err, size_t errlen) {
    sd_delta_t *d = state;
    int absent;
    sd_err_t e = sd_delta_replay(d, &absent, err, errlen);
    if (e) return e;
    if (absent) {
        if (missing_ok) { *rows = 0; return SD_OK; }
        return sd_err_set(err, errlen, SD_ERR_SINK, "%s has no _delta_log: no table was written there", d->dir);
    }
    int64_t n = 0;
    for (size_t i = 0; i < d->cap; i++) {
        if (!d->files[i].used) continue;
        if (d->files[i].records < 0 || d->files[i].dv) {
            /* a file without numRecords: count the rows themselves */
            sd_buf_t out;
            sd_buf_init(&out);
            e = sd_delta_rows(d, &out, err, errlen);
            if (!e) e = sd_sink_lines_count(out.data ? out.data : "", out.len, "the Parquet helper's output", &n, err, errlen);
            sd_buf_free(&out);
            if (!e) *rows = n;
            return e;
        }
        n += d->files[i].records;
    }
    *rows = n;
    return SD_OK;
}

static sd_err_t sd_delta_scan(void *state, sd_sink_row_cb cb, void *opaque, char *err, size_t errlen) {
    sd_delta_t *d = state;
    sd_buf_t out;
    sd_buf_init(&out);
    sd_err_t e = sd_delta_rows(d, &out, err, errlen);
    if (!e) e = sd_sink_lines_scan(out.data ? out.data : "", out.len, "the Parquet helper's output", d->id_field, "sd_writer", d->time_field,
                                   cb, opaque, err, errlen);
    sd_buf_free(&out);
    return e;
}

static sd_err_t sd_delta_scan_cols(void *state, const char *const *names, int n, sd_sink_cols_cb cb, void *opaque, char *err,
                                   size_t errlen) {
    sd_delta_t *d = state;
    sd_buf_t out;
    sd_buf_init(&out);
    sd_err_t e = sd_delta_rows(d, &out, err, errlen);
    if (!e) e = sd_sink_lines_scan_cols(out.data ? out.data : "", out.len, "the Parquet helper's output", "sd_writer", names, n, cb, opaque,
                                        err, errlen);
    sd_buf_free(&out);
    return e;
}

static void sd_delta_close(void *state) {
    sd_delta_t *d = state;
    sd_dreset(d);
    free(d->dir);
    free(d->log);
    free(d->id_field);
    free(d->time_field);
    free(d->python);
    free(d->helper);
    free(d->stderr_path);
    free(d);
}

/* The files each version added (its add actions, with their sizes). */
static sd_err_t sd_delta_files(void *state, void (*cb)(void *opaque, int64_t commit, int64_t bytes), void *opaque, char *err,
                               size_t errlen) {
    sd_delta_t *d = state;
    int64_t first, last, *vs;
    size_t nvs;
    sd_err_t e = sd_delta_versions(d, &first, &last, &vs, &nvs, err, errlen);
    /* the versions the folder lists, never counted up to (a commit file
     * named by a huge version is one file, not a wait) */
    for (size_t i = 0; !e && i < nvs; i++) {
        int64_t v = vs[i];
        char *path = sd_util_fmt("%s/%020lld.json", d->log, (long long)v);
        char *text = NULL;
        size_t len = 0;
        if (!sd_util_read_file(path, &text, &len, NULL, 0)) {
            for (size_t at = 0; at < len;) {
                const char *nl = memchr(text + at, '\n', len - at);
                size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
                json_t *o = n ? json_loadb(text + at, n, 0, NULL) : NULL;
                json_t *add = o ? json_object_get(o, "add") : NULL;
                if (json_is_object(add)) {
                    json_t *sz = json_object_get(add, "size");
                    cb(opaque, v, json_is_integer(sz) ? (int64_t)json_integer_value(sz) : -1);
                }
                json_decref(o);
                at += n + (nl ? 1 : 0);
            }
        }
        free(text);
        free(path);
    }
    free(vs);
    return e;
}

/* "version 4 (WRITE, txn q1=3)": the newest commit, its operation and its
 * writer's transaction id */
static char *sd_delta_newest_commit(void *state) {
    sd_delta_t *d = state;
    int absent = 0;
    if (sd_delta_replay(d, &absent, NULL, 0) || absent || d->done < 1 || !d->commits[d->done - 1].label) return NULL;
    return sd_util_fmt("Delta %s", d->commits[d->done - 1].label);
}

const sd_sink_ops_t sd_sink_delta = {
    .name = "delta", .open = sd_delta_open, .count = sd_delta_count, .scan = sd_delta_scan, .close = sd_delta_close,
    .scan_cols = sd_delta_scan_cols, .mark = sd_delta_mark, .files = sd_delta_files, .newest_commit = sd_delta_newest_commit
};
