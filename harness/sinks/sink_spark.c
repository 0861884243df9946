/* sink_spark.c - reads a Spark file sink (JSON, or with format=avro Avro
 * object container files) the way Spark's readers do: path=DIR [id=FIELD]
 * [format=json|avro].
 *
 * A Spark file sink is exactly-once because of its log, DIR/_spark_metadata:
 * batch N's files count only once the log file N lists them. The reader
 * takes the newest compacted log (N.compact, written every
 * spark.sql.streaming.fileSink.log.compactInterval batches, holding every
 * earlier entry) and every later batch file, applies their "add" and
 * "delete" entries, and reads only the files that remain - never by
 * listing the folder. Part files on disk that the log does not list (left
 * by a batch that was killed before its log entry) are reported as a note,
 * since Spark's readers ignore them too. The writer label of a row is the
 * batch whose log entry added its file; time=FIELD names a field holding
 * the row's write time, for the latency figures. An Avro part file is read
 * as the JSON lines of its records (harness/format/wire.h), so every count
 * and column reads it as it reads JSON. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sink.h"
#include "util.h"
#include "wire.h"

typedef struct {
    char *path;     /* local path */
    int64_t batch;  /* log batch that added it, -1 if only seen in a compact file */
    int64_t lines;  /* cached line count, -1 unknown */
} sd_sfile_t;

typedef struct {
    char *dir;
    char *id_field;
    char *time_field;  /* time=FIELD: the row's write time, for latency; NULL if none */
    int avro;          /* format=avro: part files are Avro object container files */
    sd_sfile_t *known;   /* every file ever seen in a batch log (path -> batch), across calls */
    int nknown;
} sd_spark_sink_t;

static sd_err_t sd_sspark_open(const sd_kvlist_t *params, const sd_sink_ctx_t *ctx, void **state, char *err, size_t errlen) {
    (void)err; (void)errlen;
    sd_spark_sink_t *s = sd_util_xcalloc(1, sizeof(*s));
    s->dir = sd_util_strdup(sd_kvlist_get(params, "path"));
    const char *id = sd_kvlist_get(params, "id");
    s->id_field = sd_util_strdup(id ? id : ctx->id_field ? ctx->id_field : "event_id");
    const char *tf = sd_kvlist_get(params, "time");
    s->time_field = tf ? sd_util_strdup(tf) : NULL;
    const char *fmt = sd_kvlist_get(params, "format");
    s->avro = fmt && !strcmp(fmt, "avro");
    *state = s;
    return SD_OK;
}

static sd_sfile_t *sd_sspark_known(sd_spark_sink_t *s, const char *path, int create) {
    for (int i = 0; i < s->nknown; i++)
        if (!strcmp(s->known[i].path, path)) return &s->known[i];
    if (!create) return NULL;
    s->known = sd_util_xrealloc(s->known, sizeof(*s->known) * (size_t)(s->nknown + 1));
    sd_sfile_t *f = &s->known[s->nknown++];
    f->path = sd_util_strdup(path);
    f->batch = -1;
    f->lines = -1;
    return f;
}

typedef struct {
    char **paths;
    int64_t *batch;
    int n;
} sd_listing_t;

static void sd_listing_free(sd_listing_t *l) {
    for (int i = 0; i < l->n; i++) free(l->paths[i]);
    free(l->paths);
    free(l->batch);
    *l = (sd_listing_t){0};
}

static void sd_listing_apply(sd_listing_t *l, const char *path, int add, int64_t batch) {
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->paths[i], path)) {
            if (!add) {
                free(l->paths[i]);
                l->paths[i] = l->paths[--l->n];
                l->batch[i] = l->batch[l->n];
            }
            return;
        }
    if (!add) return;
    l->paths = sd_util_xrealloc(l->paths, sizeof(char *) * (size_t)(l->n + 1));
    l->batch = sd_util_xrealloc(l->batch, sizeof(int64_t) * (size_t)(l->n + 1));
    l->paths[l->n] = sd_util_strdup(path);
    l->batch[l->n] = batch;
    l->n++;
}

/* Read one log file into the listing. */
static sd_err_t sd_sspark_read_log(sd_spark_sink_t *s, const char *file, int64_t batch, int compact, sd_listing_t *l,
                                   char *err, size_t errlen) {
    char *text = NULL;
    if (sd_util_read_file(file, &text, NULL, NULL, 0))
        return sd_err_set(err, errlen, SD_ERR_SINK, "cannot read the sink log %s", file);
    char *save = NULL;
    int line = 0;
    sd_err_t e = SD_OK;
    for (char *t = strtok_r(text, "\n", &save); t; t = strtok_r(NULL, "\n", &save), line++) {
        if (line == 0) {
            if (strncmp(t, "v", 1)) { e = sd_err_set(err, errlen, SD_ERR_SINK, "%s: not a Spark sink log (first line \"%.20s\")", file, t); break; }
            continue;
        }
        json_t *o = json_loads(t, 0, NULL);
        const char *path = o ? json_string_value(json_object_get(o, "path")) : NULL;
        const char *action = o ? json_string_value(json_object_get(o, "action")) : NULL;
        if (!path || !action) {
            json_decref(o);
            e = sd_err_set(err, errlen, SD_ERR_SINK, "%s:%d: expected a file entry with path and action", file, line + 1);
            break;
        }
        if (!strncmp(path, "file://", 7)) path += 7;
        while (path[0] == '/' && path[1] == '/') path++;
        int add = !strcmp(action, "add");
        sd_sfile_t *k = sd_sspark_known(s, path, !compact && add);
        if (k && !compact && add) k->batch = batch;
        sd_listing_apply(l, path, add, compact ? (k ? k->batch : -1) : batch);
        json_decref(o);
    }
    free(text);
    return e;
}

static int sd_cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The files the log lists now. *missing when the log folder is absent. */
static sd_err_t sd_sspark_list(sd_spark_sink_t *s, sd_listing_t *l, int *missing, char *err, size_t errlen) {
    memset(l, 0, sizeof(*l));
    *missing = 0;
    char meta[4096];
    snprintf(meta, sizeof(meta), "%s/_spark_metadata", s->dir);
    DIR *d = opendir(meta);
    if (!d) {
        *missing = 1;
        return sd_err_set(err, errlen, SD_ERR_SINK, "%s has no _spark_metadata log: not a Spark file sink, or no batch committed yet", s->dir);
    }
    int64_t compact = -1;
    int64_t *nums = NULL;
    int nn = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        if (!isdigit((unsigned char)n[0])) continue;
        char *end;
        errno = 0;
        long long v = strtoll(n, &end, 10);
        if (errno == ERANGE) continue; /* past a batch id (a long), as Spark's own reader skips it */
        if (!strcmp(end, ".compact")) {
            if (v > compact) compact = v;
        } else if (!*end) {
            nums = sd_util_xrealloc(nums, sizeof(int64_t) * (size_t)(nn + 1));
            nums[nn++] = v;
        }
    }
    closedir(d);
    sd_err_t e = SD_OK;
    if (compact >= 0) {
        char f[4200];
        snprintf(f, sizeof(f), "%s/%lld.compact", meta, (long long)compact);
        e = sd_sspark_read_log(s, f, compact, 1, l, err, errlen);
    }
    /* later batches in order: the folder's batch numbers sorted, never
     * counted up to (a file named by a huge number is one file, not a wait) */
    if (nn) qsort(nums, (size_t)nn, sizeof(*nums), sd_cmp_i64);
    for (int i = 0; !e && i < nn; i++) {
        int64_t b = nums[i];
        if (b <= compact || (i && b == nums[i - 1])) continue;
        char f[4200];
        snprintf(f, sizeof(f), "%s/%lld", meta, (long long)b);
        e = sd_sspark_read_log(s, f, b, 0, l, err, errlen);
    }
    free(nums);
    if (e) sd_listing_free(l);
    return e;
}

/* A part file as JSON lines: the file, or an Avro one's records; a file
 * the pipeline wrote, so a regular one only, opened without blocking. */
static FILE *sd_sspark_fopen(const sd_spark_sink_t *s, const char *path) {
    char why[512];
    if (s->avro) return sd_wire_ocf_lines(path, why, sizeof(why));
    return sd_util_fopen_foreign(path, why, sizeof(why));
}

static int64_t sd_count_lines(const sd_spark_sink_t *s, const char *path) {
    FILE *f = sd_sspark_fopen(s, path);
    if (!f) return -1;
    char buf[65536];
    size_t n;
    int64_t lines = 0;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        for (size_t i = 0; i < n; i++) lines += buf[i] == '\n';
    fclose(f);
    return lines;
}

static sd_err_t sd_sspark_count(void *state, int missing_ok, int64_t *rows, char *err, size_t errlen) {
    sd_spark_sink_t *s = state;
    sd_listing_t l;
    int missing;
    sd_err_t e = sd_sspark_list(s, &l, &missing, err, errlen);
    if (e) {
        if (missing && missing_ok) { *rows = 0; return SD_OK; }
        return e;
    }
    int64_t total = 0;
    for (int i = 0; i < l.n; i++) {
        sd_sfile_t *k = sd_sspark_known(s, l.paths[i], 1);
        if (k->lines < 0) k->lines = sd_count_lines(s, l.paths[i]); /* part files never change once listed */
        if (k->lines < 0) {
            e = sd_err_set(err, errlen, SD_ERR_SINK, "the log lists %s but it cannot be read%s", l.paths[i],
                           s->avro ? " (as an Avro object container file)" : "");
            break;
        }
        total += k->lines;
    }
    sd_listing_free(&l);
    if (!e) *rows = total;
    return e;
}

static sd_err_t sd_sspark_scan(void *state, sd_sink_row_cb cb, void *opaque, char *err, size_t errlen) {
    sd_spark_sink_t *s = state;
    sd_listing_t l;
    int missing;
    sd_err_t e = sd_sspark_list(s, &l, &missing, err, errlen);
    if (e) return e;
    char idbuf[512], wbuf[128];
    char *line = NULL;
    size_t cap = 0;
    int stop = 0;
    for (int i = 0; i < l.n && !stop && !e; i++) {
        FILE *f = sd_sspark_fopen(s, l.paths[i]);
        if (!f) {
            e = sd_err_set(err, errlen, SD_ERR_SINK, "the log lists %s but it cannot be read%s", l.paths[i],
                           s->avro ? " (as an Avro object container file)" : "");
            break;
        }
        const char *base = strrchr(l.paths[i], '/');
        base = base ? base + 1 : l.paths[i];
        int wl = l.batch[i] >= 0 ? snprintf(wbuf, sizeof(wbuf), "batch %lld (%.40s)", (long long)l.batch[i], base)
                                 : snprintf(wbuf, sizeof(wbuf), "compacted log (%.40s)", base);
        ssize_t n;
        while (!stop && (n = getline(&line, &cap, f)) > 0) {
            size_t len = (size_t)n;
            while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
            if (!len) continue;
            int64_t t;
            int idlen = sd_sink_json_id_time(line, len, s->id_field, idbuf, sizeof(idbuf), s->time_field, &t);
            if (cb(opaque, idlen >= 0 ? idbuf : NULL, idlen >= 0 ? (size_t)idlen : 0, wbuf, (size_t)wl, t)) stop = 1;
        }
        fclose(f);
    }
    free(line);
    sd_listing_free(&l);
    return e;
}

static sd_err_t sd_sspark_scan_cols(void *state, const char *const *names, int n, sd_sink_cols_cb cb, void *opaque, char *err,
                                    size_t errlen) {
    sd_spark_sink_t *s = state;
    sd_listing_t l;
    int missing;
    sd_err_t e = sd_sspark_list(s, &l, &missing, err, errlen);
    if (e) return e;
    char wbuf[128];
    char *line = NULL;
    size_t cap = 0;
    int stop = 0;
    for (int i = 0; i < l.n && !stop && !e; i++) {
        FILE *f = sd_sspark_fopen(s, l.paths[i]);
        if (!f) {
            e = sd_err_set(err, errlen, SD_ERR_SINK, "the log lists %s but it cannot be read%s", l.paths[i],
                           s->avro ? " (as an Avro object container file)" : "");
            break;
        }
        const char *base = strrchr(l.paths[i], '/');
        base = base ? base + 1 : l.paths[i];
        if (l.batch[i] >= 0) snprintf(wbuf, sizeof(wbuf), "batch %lld (%.40s)", (long long)l.batch[i], base);
        else snprintf(wbuf, sizeof(wbuf), "compacted log (%.40s)", base);
        ssize_t got;
        int64_t lineno = 0;
        while (!stop && (got = getline(&line, &cap, f)) > 0) {
            lineno++;
            size_t len = (size_t)got;
            while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
            if (!len) continue;
            int rc = sd_sink_json_cols(line, len, names, n, wbuf, cb, opaque);
            if (rc < 0) {
                e = sd_err_set(err, errlen, SD_ERR_SINK, "%s:%lld: expected a JSON object, found something else", l.paths[i], (long long)lineno);
                break;
            }
            if (rc) stop = 1;
        }
        fclose(f);
    }
    free(line);
    sd_listing_free(&l);
    return e;
}

static int sd_cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Part files on disk that the log does not list. */
static char *sd_sspark_notes(void *state) {
    sd_spark_sink_t *s = state;
    sd_listing_t l;
    int missing;
    if (sd_sspark_list(s, &l, &missing, NULL, 0)) return NULL;
    if (l.n) qsort(l.paths, (size_t)l.n, sizeof(char *), sd_cmp_str); /* batch[] order is not needed here; an empty log lists none */
    DIR *d = opendir(s->dir);
    char *note = NULL;
    if (d) {
        int orphans = 0;
        int64_t rows = 0;
        char first[256] = "";
        struct dirent *de;
        while ((de = readdir(d))) {
            if (de->d_name[0] == '.' || de->d_name[0] == '_' || strncmp(de->d_name, "part-", 5)) continue;
            char *p = sd_util_fmt("%s/%s", s->dir, de->d_name);
            char *key = p;
            if (!l.n || !bsearch(&key, l.paths, (size_t)l.n, sizeof(char *), sd_cmp_str)) {
                orphans++;
                int64_t n = sd_count_lines(s, p);
                if (n > 0) rows += n;
                if (!first[0]) snprintf(first, sizeof(first), "%s", de->d_name);
            }
            free(p);
        }
        closedir(d);
        if (orphans)
            note = sd_util_fmt("%d part file%s (%lld rows) in %s are not in its _spark_metadata log, e.g. %s: written by a batch "
                               "that did not commit; Spark's readers ignore them and so does the reconciliation",
                               orphans, orphans == 1 ? "" : "s", (long long)rows, s->dir, first);
    }
    sd_listing_free(&l);
    return note;
}

static void sd_sspark_close(void *state) {
    sd_spark_sink_t *s = state;
    for (int i = 0; i < s->nknown; i++) free(s->known[i].path);
    free(s->known);
    free(s->dir);
    free(s->id_field);
    free(s->time_field);
    free(s);
}

/* The files each batch's log entry added (_spark_metadata/N, with their
 * sizes); batches only in a compact file are not counted. */
static sd_err_t sd_sspark_files(void *state, void (*cb)(void *opaque, int64_t commit, int64_t bytes), void *opaque, char *err,
                                size_t errlen) {
    sd_spark_sink_t *s = state;
    char *meta = sd_util_fmt("%s/_spark_metadata", s->dir);
    DIR *d = opendir(meta);
    if (!d) {
        free(meta);
        return sd_err_set(err, errlen, SD_ERR_SINK, "%s has no _spark_metadata log", s->dir);
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        if (!isdigit((unsigned char)de->d_name[0])) continue;
        long long batch = strtoll(de->d_name, &end, 10);
        if (*end) continue; /* N.compact: the batches it folds in are counted where their own files remain */
        char *file = sd_util_fmt("%s/%s", meta, de->d_name), *text = NULL;
        if (!sd_util_read_file(file, &text, NULL, NULL, 0)) {
            char *save = NULL;
            int line = 0;
            for (char *t = strtok_r(text, "\n", &save); t; t = strtok_r(NULL, "\n", &save), line++) {
                json_t *o = line ? json_loads(t, 0, NULL) : NULL;
                const char *action = o ? json_string_value(json_object_get(o, "action")) : NULL;
                json_t *sz = o ? json_object_get(o, "size") : NULL;
                if (action && !strcmp(action, "add")) cb(opaque, batch, json_is_integer(sz) ? (int64_t)json_integer_value(sz) : -1);
                json_decref(o);
            }
        }
        free(text);
        free(file);
    }
    closedir(d);
    free(meta);
    return SD_OK;
}

const sd_sink_ops_t sd_sink_spark_files = {
    .name = "spark-files", .open = sd_sspark_open, .count = sd_sspark_count, .scan = sd_sspark_scan, .close = sd_sspark_close,
    .notes = sd_sspark_notes, .scan_cols = sd_sspark_scan_cols, .files = sd_sspark_files
};
