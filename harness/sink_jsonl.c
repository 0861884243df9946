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
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* A line's handler: nonzero stops the reading. unterminated: the file's
 * last line, without its newline (a writer may still be writing it). */
typedef int (*sd_jsonl_line_fn)(void *ctx, char *line, size_t len, int64_t lineno, int unterminated);

/* Every non-empty line of fd (a CR before its newline removed) through fn,
 * numbered from 1 counting empty ones: read in large blocks, a line handed
 * over where it lies (no copy, no stdio). 0 done, 1 stopped, -1 a read error. */
static int sd_jsonl_each_line(int fd, sd_jsonl_line_fn fn, void *ctx) {
    size_t cap = (size_t)1 << 20, have = 0;
    char *buf = sd_util_xmalloc(cap);
    int64_t lineno = 0;
    int rc = 0;
    for (;;) {
        if (have == cap) { /* one line longer than the block */
            cap *= 2;
            buf = sd_util_xrealloc(buf, cap);
        }
        ssize_t got = read(fd, buf + have, cap - have);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            rc = -1;
            break;
        }
        size_t end = have + (size_t)got, start = 0;
        char *nl;
        while (!rc && (nl = memchr(buf + start, '\n', end - start))) {
            size_t len = (size_t)(nl - (buf + start));
            lineno++;
            if (len && buf[start + len - 1] == '\r') len--;
            if (len && fn(ctx, buf + start, len, lineno, 0)) rc = 1;
            start = (size_t)(nl - buf) + 1;
        }
        if (rc) break;
        if (!got) {
            size_t len = end - start;
            if (len && buf[start + len - 1] == '\r') len--;
            if (len && fn(ctx, buf + start, len, ++lineno, 1)) rc = 1;
            break;
        }
        memmove(buf, buf + start, end - start);
        have = end - start;
    }
    free(buf);
    return rc;
}

typedef struct {
    sd_jsonl_sink_t *s;
    sd_sink_row_cb cb;
    void *opaque;
    const char *base;
    size_t baselen;
    char idbuf[512], label[512];
} sd_jsonl_scan_t;

/* "FILE line N" (one file) or "FILE:N", without printf: it is every row's. */
static size_t sd_jsonl_label(sd_jsonl_scan_t *c, int64_t lineno) {
    char digits[24];
    int nd = 0;
    for (uint64_t v = (uint64_t)lineno; nd == 0 || v; v /= 10) digits[nd++] = (char)('0' + v % 10);
    const char *sep = c->s->one_file ? " line " : ":";
    size_t sl = strlen(sep), bl = c->baselen;
    if (bl + sl + (size_t)nd >= sizeof(c->label)) bl = sizeof(c->label) - sl - (size_t)nd - 1;
    char *o = c->label;
    memcpy(o, c->base, bl);
    memcpy(o + bl, sep, sl);
    o += bl + sl;
    while (nd) *o++ = digits[--nd];
    *o = 0;
    return (size_t)(o - c->label);
}

static int sd_jsonl_scan_line(void *ctx, char *line, size_t len, int64_t lineno, int unterminated) {
    sd_jsonl_scan_t *c = ctx;
    int64_t t;
    int idlen = sd_sink_json_id_time(line, len, c->s->id_field, c->idbuf, sizeof(c->idbuf), c->s->time_field, &t);
    /* the last line may lack its newline: it is a row when it holds a
     * whole JSON object with an id (a writer still writing it would leave
     * it cut short, and it is read again at the next scan) */
    if (unterminated && idlen < 0) return 1;
    size_t ll = sd_jsonl_label(c, lineno);
    return c->cb(c->opaque, idlen >= 0 ? c->idbuf : NULL, idlen >= 0 ? (size_t)idlen : 0, c->label, ll, t);
}

static sd_err_t sd_jsonl_scan(void *state, sd_sink_row_cb cb, void *opaque, char *err, size_t errlen) {
    sd_jsonl_sink_t *s = state;
    glob_t g = {0};
    sd_err_t e = sd_jsonl_glob(s, &g, 0, err, errlen);
    if (e) return e;
    sd_jsonl_scan_t *c = sd_util_xcalloc(1, sizeof(*c));
    c->s = s, c->cb = cb, c->opaque = opaque;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        int fd = open(g.gl_pathv[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            e = sd_err_set(err, errlen, SD_ERR_SINK, "open %s: cannot read", g.gl_pathv[i]);
            break;
        }
        const char *base = strrchr(g.gl_pathv[i], '/');
        c->base = base ? base + 1 : g.gl_pathv[i];
        c->baselen = strlen(c->base);
        int rc = sd_jsonl_each_line(fd, sd_jsonl_scan_line, c);
        close(fd);
        if (rc < 0) e = sd_err_set(err, errlen, SD_ERR_SINK, "read %s: %s", g.gl_pathv[i], strerror(errno));
        if (rc) break;
    }
    free(c);
    globfree(&g);
    return e;
}

typedef struct {
    const char *const *names;
    int n;
    sd_sink_cols_cb cb;
    void *opaque;
    const char *path;
    sd_err_t e;
    char *err;
    size_t errlen;
} sd_jsonl_cols_t;

static int sd_jsonl_cols_line(void *ctx, char *line, size_t len, int64_t lineno, int unterminated) {
    sd_jsonl_cols_t *c = ctx;
    int rc = sd_sink_json_cols(line, len, c->names, c->n, NULL, c->cb, c->opaque);
    if (rc < 0 && unterminated) return 1; /* still being written */
    if (rc < 0) {
        c->e = sd_err_set(c->err, c->errlen, SD_ERR_SINK, "%s:%lld: expected a JSON object, found something else", c->path,
                          (long long)lineno);
        return 1;
    }
    return rc != 0;
}

static sd_err_t sd_jsonl_scan_cols(void *state, const char *const *names, int n, sd_sink_cols_cb cb, void *opaque, char *err,
                                   size_t errlen) {
    sd_jsonl_sink_t *s = state;
    glob_t g = {0};
    sd_err_t e = sd_jsonl_glob(s, &g, 0, err, errlen);
    if (e) return e;
    sd_jsonl_cols_t c = {names, n, cb, opaque, NULL, SD_OK, err, errlen};
    for (size_t i = 0; i < g.gl_pathc; i++) {
        int fd = open(g.gl_pathv[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            e = sd_err_set(err, errlen, SD_ERR_SINK, "open %s: cannot read", g.gl_pathv[i]);
            break;
        }
        c.path = g.gl_pathv[i];
        int rc = sd_jsonl_each_line(fd, sd_jsonl_cols_line, &c);
        close(fd);
        if (rc < 0) e = sd_err_set(err, errlen, SD_ERR_SINK, "read %s: %s", g.gl_pathv[i], strerror(errno));
        if (c.e) e = c.e;
        if (rc) break;
    }
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
