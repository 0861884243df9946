/* sink_jsonl.c - reads a JSON-lines sink: path=GLOB [id=FIELD].
 *
 * Every file matching the glob (in sorted order) holds one JSON object per
 * line; the id is the object's id field (the contract's by default). The
 * writer label is the file's name and the line: "FILE line N" when path=
 * names one file (no glob characters: rows in the order they were written,
 * so the runner can tell from the sink's growth which incarnation wrote
 * line N), "FILE:N" otherwise. time=FIELD names a field holding the
 * row's write time (epoch ms or ISO-8601), for the latency figures. Counting is incremental: a file that
 * only grew is read from where the last count stopped. */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sink.h"
#include "util.h"

typedef struct {
    char *path;
    dev_t dev;
    ino_t ino;
    off_t done;      /* bytes counted */
    int64_t lines;   /* complete lines in [0, done) */
} sd_jsonl_file_t;

typedef struct {
    char *pattern;
    char *id_field;
    char *time_field;  /* time=FIELD: the row's write time, for latency; NULL if none */
    int one_file;      /* path= is a file name, not a glob */
    sd_jsonl_file_t *files;
    int nfiles;
} sd_jsonl_sink_t;

static sd_err_t sd_jsonl_open(const sd_kvlist_t *params, const sd_sink_ctx_t *ctx, void **state, char *err, size_t errlen) {
    (void)err; (void)errlen;
    sd_jsonl_sink_t *s = sd_util_xcalloc(1, sizeof(*s));
    s->pattern = sd_util_strdup(sd_kvlist_get(params, "path"));
    const char *id = sd_kvlist_get(params, "id");
    s->id_field = sd_util_strdup(id ? id : ctx->id_field ? ctx->id_field : "event_id");
    const char *tf = sd_kvlist_get(params, "time");
    s->time_field = tf ? sd_util_strdup(tf) : NULL;
    s->one_file = !strpbrk(s->pattern, "*?[");
    *state = s;
    return SD_OK;
}

static sd_err_t sd_jsonl_glob(sd_jsonl_sink_t *s, glob_t *g, int missing_ok, char *err, size_t errlen) {
    int rc = glob(s->pattern, 0, NULL, g);
    if (rc == GLOB_NOMATCH) {
        if (missing_ok) return SD_OK;
        return sd_err_set(err, errlen, SD_ERR_SINK, "no file matches %s", s->pattern);
    }
    if (rc) return sd_err_set(err, errlen, SD_ERR_SINK, "glob %s: read error", s->pattern);
    return SD_OK;
}

static sd_err_t sd_jsonl_count(void *state, int missing_ok, int64_t *rows, char *err, size_t errlen) {
    sd_jsonl_sink_t *s = state;
    glob_t g = {0};
    sd_err_t e = sd_jsonl_glob(s, &g, missing_ok, err, errlen);
    if (e) return e;
    int64_t total = 0;
    char buf[65536];
    for (size_t i = 0; i < g.gl_pathc; i++) {
        struct stat st;
        if (stat(g.gl_pathv[i], &st) || !S_ISREG(st.st_mode)) continue;
        sd_jsonl_file_t *f = NULL;
        for (int k = 0; k < s->nfiles; k++)
            if (!strcmp(s->files[k].path, g.gl_pathv[i])) f = &s->files[k];
        if (!f) {
            s->files = sd_util_xrealloc(s->files, sizeof(*s->files) * (size_t)(s->nfiles + 1));
            f = &s->files[s->nfiles++];
            memset(f, 0, sizeof(*f));
            f->path = sd_util_strdup(g.gl_pathv[i]);
        }
        if (f->dev != st.st_dev || f->ino != st.st_ino || st.st_size < f->done) {
            f->dev = st.st_dev;
            f->ino = st.st_ino;
            f->done = 0;
            f->lines = 0;
        }
        if (st.st_size > f->done) {
            FILE *fp = fopen(f->path, "rb");
            if (!fp) continue;
            fseeko(fp, f->done, SEEK_SET);
            size_t n;
            off_t pos = f->done, last_nl = f->done;
            while ((n = fread(buf, 1, sizeof(buf), fp)) > 0) {
                for (size_t k = 0; k < n; k++)
                    if (buf[k] == '\n') { f->lines++; last_nl = pos + (off_t)k + 1; }
                pos += (off_t)n;
            }
            fclose(fp);
            f->done = last_nl; /* a partial last line is counted when it ends */
        }
        total += f->lines;
    }
    globfree(&g);
    *rows = total;
    return SD_OK;
}

static sd_err_t sd_jsonl_scan(void *state, sd_sink_row_cb cb, void *opaque, char *err, size_t errlen) {
    sd_jsonl_sink_t *s = state;
    glob_t g = {0};
    sd_err_t e = sd_jsonl_glob(s, &g, 0, err, errlen);
    if (e) return e;
    char idbuf[512];
    char *line = NULL;
    size_t cap = 0;
    int stop = 0;
    for (size_t i = 0; i < g.gl_pathc && !stop; i++) {
        FILE *fp = fopen(g.gl_pathv[i], "rb");
        if (!fp) {
            e = sd_err_set(err, errlen, SD_ERR_SINK, "open %s: cannot read", g.gl_pathv[i]);
            break;
        }
        const char *base = strrchr(g.gl_pathv[i], '/');
        base = base ? base + 1 : g.gl_pathv[i];
        char label[512];
        int64_t lineno = 0;
        ssize_t n;
        while (!stop && (n = getline(&line, &cap, fp)) > 0) {
            lineno++;
            /* the last line may lack its newline: it is a row when it holds a
             * whole JSON object with an id (a writer still writing it would
             * leave it cut short, and it is read again at the next scan) */
            int unterminated = line[n - 1] != '\n';
            size_t len = unterminated ? (size_t)n : (size_t)n - 1;
            if (len && line[len - 1] == '\r') len--;
            if (!len) continue;
            int64_t t;
            int idlen = sd_sink_json_id_time(line, len, s->id_field, idbuf, sizeof(idbuf), s->time_field, &t);
            if (unterminated && idlen < 0) break;
            int ll = snprintf(label, sizeof(label), s->one_file ? "%s line %lld" : "%s:%lld", base, (long long)lineno);
            if (ll < 0 || ll >= (int)sizeof(label)) ll = (int)strlen(label);
            if (cb(opaque, idlen >= 0 ? idbuf : NULL, idlen >= 0 ? (size_t)idlen : 0, label, (size_t)ll, t)) stop = 1;
        }
        fclose(fp);
    }
    free(line);
    globfree(&g);
    return e;
}

static sd_err_t sd_jsonl_scan_cols(void *state, const char *const *names, int n, sd_sink_cols_cb cb, void *opaque, char *err,
                                   size_t errlen) {
    sd_jsonl_sink_t *s = state;
    glob_t g = {0};
    sd_err_t e = sd_jsonl_glob(s, &g, 0, err, errlen);
    if (e) return e;
    char *line = NULL;
    size_t cap = 0;
    int stop = 0;
    for (size_t i = 0; i < g.gl_pathc && !stop; i++) {
        FILE *fp = fopen(g.gl_pathv[i], "rb");
        if (!fp) {
            e = sd_err_set(err, errlen, SD_ERR_SINK, "open %s: cannot read", g.gl_pathv[i]);
            break;
        }
        ssize_t got;
        int64_t lineno = 0;
        while (!stop && (got = getline(&line, &cap, fp)) > 0) {
            lineno++;
            int unterminated = line[got - 1] != '\n';
            size_t len = unterminated ? (size_t)got : (size_t)got - 1;
            if (len && line[len - 1] == '\r') len--;
            if (!len) continue;
            int rc = sd_sink_json_cols(line, len, names, n, NULL, cb, opaque);
            if (rc < 0 && unterminated) break; /* still being written */
            if (rc < 0) {
                e = sd_err_set(err, errlen, SD_ERR_SINK, "%s:%lld: expected a JSON object, found something else", g.gl_pathv[i],
                               (long long)lineno);
                stop = 1;
                break;
            }
            if (rc) stop = 1;
        }
        fclose(fp);
    }
    free(line);
    globfree(&g);
    return e;
}

static void sd_jsonl_close(void *state) {
    sd_jsonl_sink_t *s = state;
    for (int i = 0; i < s->nfiles; i++) free(s->files[i].path);
    free(s->files);
    free(s->pattern);
    free(s->id_field);
    free(s->time_field);
    free(s);
}

const sd_sink_ops_t sd_sink_jsonl = {"jsonl", sd_jsonl_open, sd_jsonl_count, sd_jsonl_scan, sd_jsonl_close, NULL,
                                     sd_jsonl_scan_cols, NULL};
