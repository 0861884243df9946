/* sink_jsonl.c - reads a JSON-lines sink: path=GLOB [id=FIELD].
 *
 * Every file matching the glob (in sorted order) holds one JSON object per
 * line; the id is the object's id field (the contract's by default). The
 * writer label is the file's name and the line: "FILE line N" when path=
 * names one file (no glob characters: rows in the order they were written,
 * so the runner can tell from the sink's growth which incarnation wrote
 * line N), "FILE:N" otherwise. time=FIELD names a field holding the
 * row's write time (epoch ms or ISO-8601), for the latency figures. Counting is incremental: a file that
 * only grew is read from where the last count stopped.
 *
 * flink-files path=DIR [id=FIELD] [time=FIELD]: a Flink FileSink's output
 * (JSON lines), read as Flink's contract says: only finished part files,
 * in DIR or in its bucket folders (DIR/BUCKET/part-...). A part file
 * being written, or closed and waiting for the checkpoint that commits it
 * (in-progress and pending), is a hidden ".part-....inprogress.UUID" file
 * that becomes output when that checkpoint completes, and one left by a
 * job that failed never does: those are not rows, and are counted in the
 * notes. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsonfast.h"
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
    char *pattern2;    /* flink-files: the bucket folders' files beside DIR's own */
    char *flink_dir;   /* flink-files: DIR */
    char *id_field;
    char *time_field;  /* time=FIELD: the row's write time, for latency; NULL if none */
    int one_file;      /* path= is a file name, not a glob */
    sd_jsonl_file_t *files;
    int nfiles;
    /* the last scan's files that end in a line cut short (no newline, not
     * a whole object): not rows, and said so in the notes */
    int64_t cut_lines;
    char *cut_first;
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

/* flink-files: the finished part files of DIR and DIR/BUCKET (glob leaves
 * out the hidden in-progress ones; folders and any name still marked
 * in-progress are dropped here; sd_flink_files_in_progress counts the
 * hidden ones for the notes). */
static void sd_flink_files_keep(glob_t *g) {
    size_t k = 0;
    for (size_t i = 0; i < g->gl_pathc; i++) {
        struct stat st;
        const char *base = strrchr(g->gl_pathv[i], '/');
        base = base ? base + 1 : g->gl_pathv[i];
        if (stat(g->gl_pathv[i], &st) || !S_ISREG(st.st_mode) || strstr(base, ".inprogress") || base[0] == '_')
            free(g->gl_pathv[i]);
        else
            g->gl_pathv[k++] = g->gl_pathv[i];
    }
    g->gl_pathc = k;
}

int64_t sd_flink_files_in_progress(const char *dir) {
    glob_t g = {0};
    char *a = sd_util_fmt("%s/.*.inprogress.*", dir), *b = sd_util_fmt("%s/*/.*.inprogress.*", dir);
    int rc = glob(a, GLOB_PERIOD, NULL, &g);
    rc = glob(b, GLOB_PERIOD | (rc == 0 ? GLOB_APPEND : 0), NULL, &g);
    int64_t n = (int64_t)g.gl_pathc;
    globfree(&g);
    free(a);
    free(b);
    return n;
}

static sd_err_t sd_jsonl_glob(sd_jsonl_sink_t *s, glob_t *g, int missing_ok, char *err, size_t errlen) {
    int rc = glob(s->pattern, 0, NULL, g);
    if (s->pattern2) {
        int rc2 = glob(s->pattern2, rc == 0 ? GLOB_APPEND : 0, NULL, g);
        if (rc == GLOB_NOMATCH) rc = rc2;
        if (!rc) sd_flink_files_keep(g);
        if (!rc && !g->gl_pathc) rc = GLOB_NOMATCH;
    }
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
typedef int (*sd_jsonl_line_fn)(void *ctx, const char *line, size_t len, int64_t lineno, int unterminated);

/* A handler that takes the line at p and finds its end itself, within
 * [p, p + avail): the bytes it took, the newline included, counting the
 * line numbered lineno (an empty one too); 0 when it cannot, and the line
 * goes the plain way. Nonzero *stop stops the reading. */
typedef size_t (*sd_jsonl_fast_fn)(void *ctx, const char *p, size_t avail, int64_t lineno, int *stop);

/* The non-empty lines of buf[0, len) (a CR before a newline removed)
 * through fn, numbered on from *lineno counting empty ones; with final, the
 * bytes after the last newline too, as an unterminated line. With fast,
 * each line is offered to it first. Returns how many bytes it walked
 * through (the rest begin a line not ended yet); *rc 1 when fn stopped it,
 * else 0. */
static size_t sd_jsonl_lines(const char *buf, size_t len, int final, int64_t *lineno, sd_jsonl_line_fn fn, sd_jsonl_fast_fn fast,
                             void *ctx, int *rc) {
    size_t start = 0;
    const char *nl;
    *rc = 0;
    for (;;) {
        size_t took;
        if (fast && (took = fast(ctx, buf + start, len - start, *lineno + 1, rc))) {
            ++*lineno;
            start += took;
            if (*rc) break;
            continue;
        }
        if (*rc || !(nl = memchr(buf + start, '\n', len - start))) break;
        size_t n = (size_t)(nl - (buf + start));
        ++*lineno;
        if (n && buf[start + n - 1] == '\r') n--;
        if (n && fn(ctx, buf + start, n, *lineno, 0)) *rc = 1;
        start = (size_t)(nl - buf) + 1;
        if (*rc) break;
    }
    if (!*rc && final && start < len) {
        size_t n = len - start;
        ++*lineno;
        if (buf[start + n - 1] == '\r') n--;
        if (n && fn(ctx, buf + start, n, *lineno, 1)) *rc = 1;
        start = len;
    }
    return start;
}

/* Every non-empty line of fd through fn (sd_jsonl_lines, offered to fast
 * first when there is one), numbered from 1:
 * read in large blocks, a line handed over where it lies (no copy, no
 * stdio). 0 done, 1 stopped, -1 a read error. */
static int sd_jsonl_each_line(int fd, sd_jsonl_line_fn fn, sd_jsonl_fast_fn fast, void *ctx) {
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
        size_t end = have + (size_t)got, start = sd_jsonl_lines(buf, end, !got, &lineno, fn, fast, ctx, &rc);
        if (rc || !got) break;
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
    int64_t label_line;  /* the line label[] names; 0: none yet */
    size_t label_len, digits_at;
    char idbuf[512], label[512];
    sd_jsonfast_shape_t shape; /* the rows' shape, for sd_jsonfast_line */
} sd_jsonl_scan_t;

/* "FILE line N" (one file) or "FILE:N", without printf: it is every row's.
 * The next line's label is the last one's with its number counted up in
 * place. */
static size_t sd_jsonl_label(sd_jsonl_scan_t *c, int64_t lineno) {
    if (c->label_line && lineno == c->label_line + 1) {
        char *d = c->label + c->label_len;
        while (d > c->label + c->digits_at && d[-1] == '9') *--d = '0';
        if (d > c->label + c->digits_at) {
            d[-1]++;
            c->label_line = lineno;
            return c->label_len;
        }
        /* 9...9 + 1: one digit more, written in full below */
    }
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
    c->digits_at = (size_t)(o - c->label);
    while (nd) *o++ = digits[--nd];
    *o = 0;
    c->label_line = lineno;
    c->label_len = (size_t)(o - c->label);
    return c->label_len;
}

/* A row to the callback: its id (NULL when it has none), line and time. */
static int sd_jsonl_emit(sd_jsonl_scan_t *c, const char *id, int idlen, int64_t lineno, int unterminated, int64_t t) {
    /* the last line may lack its newline: it is a row when it holds a
     * whole JSON object with an id (a writer still writing it would leave
     * it cut short, and it is read again at the next scan) */
    if (unterminated && idlen < 0) {
        if (!c->s->cut_lines++) c->s->cut_first = sd_util_fmt("%.*s line %lld", (int)c->baselen, c->base, (long long)lineno);
        return 1;
    }
    size_t ll = sd_jsonl_label(c, lineno);
    return c->cb(c->opaque, idlen >= 0 ? id : NULL, idlen >= 0 ? (size_t)idlen : 0, c->label, ll, t);
}

static int sd_jsonl_scan_line(void *ctx, const char *line, size_t len, int64_t lineno, int unterminated) {
    sd_jsonl_scan_t *c = ctx;
    int64_t t;
    int idlen = sd_sink_json_id_time(line, len, c->s->id_field, c->idbuf, sizeof(c->idbuf), c->s->time_field, &t);
    return sd_jsonl_emit(c, c->idbuf, idlen, lineno, unterminated, t);
}

/* The same for a plain row, its end found as it is read (sd_jsonfast_line). */
static size_t sd_jsonl_scan_fast(void *ctx, const char *p, size_t avail, int64_t lineno, int *stop) {
    sd_jsonl_scan_t *c = ctx;
    size_t len, used;
    int64_t t;
    *stop = 0;
    int idlen = sd_jsonfast_line(&c->shape, p, avail, &len, &used, c->s->id_field, c->idbuf, sizeof(c->idbuf),
                                 c->s->time_field, &t, sd_util_parse_iso8601);
    if (idlen == SD_JSONFAST_UNSURE) return 0;
    if (len && sd_jsonl_emit(c, c->idbuf, idlen, lineno, 0, t)) *stop = 1;
    return used;
}

/* A large file is read by two threads, each parsing blocks of it (the
 * rows' ids and times) where the file is mapped, while this one hands the
 * parsed rows to the callback, in the file's order. Block i holds the lines
 * that begin in bytes [i B, (i + 1) B) of the file, the last one read on to
 * its end: so a block is found without knowing where the last one ended,
 * and no byte is copied (a copy costs as much as the parse on two threads
 * that share a core).
 *
 * The file is read as it was when the scan began (bytes appended later
 * are the next scan's). A writer that cuts it short meanwhile makes the
 * pages past its new end fault (SIGBUS): the worker reading one goes back
 * to its block, and the scan fails with the file named, instead of the
 * harness dying. */
#define SD_JSONL_BLOCK ((size_t)1 << 20)
#define SD_JSONL_PARALLEL_MIN ((size_t)4 << 20) /* a file this large is read by the pool */
#define SD_JSONL_JOBS 4
#define SD_JSONL_WORKERS 2
#define SD_JSONL_ID_MAX 512 /* bytes of an id kept, its NUL included (as idbuf) */

typedef struct {
    int64_t line;        /* from 1 at the block's first line */
    int64_t t;
    uint32_t idoff;
    int32_t idlen;       /* -1: no id */
} sd_jsonl_row_t;

typedef struct {
    const sd_jsonl_sink_t *s;
    const char *map;     /* the file, size bytes */
    size_t size;
    int64_t index;       /* the block */
    size_t start, end;   /* its lines: map[start, end) */
    int eof;             /* its last line ends the file (it may lack its newline) */
    int cut;             /* the file was cut short while the block was read */
    enum { SD_JOB_FREE, SD_JOB_QUEUED, SD_JOB_BUSY, SD_JOB_PARSED } state;
    sd_jsonl_row_t *rows;
    size_t nrows, rcap;
    char *ids;
    size_t idlen, idcap;
    char *copy;          /* a line for the full parser, copied out of the map */
    size_t copycap;
    int64_t lines;       /* lines in the block, empty ones included */
    int last_unterminated;
    sd_jsonfast_shape_t shape; /* the rows' shape, for sd_jsonfast_line (one thread at a time parses a job) */
} sd_jsonl_job_t;

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t queued, parsed;
    sd_jsonl_job_t jobs[SD_JSONL_JOBS];
    int quit;
} sd_jsonl_pool_t;

/* Room in j for one more row and its id (parsed into j->ids + j->idlen). */
static inline __attribute__((always_inline)) void sd_jsonl_block_room(sd_jsonl_job_t *j) {
    if (j->nrows == j->rcap) {
        j->rcap = j->rcap ? j->rcap * 2 : 8192;
        j->rows = sd_util_xrealloc(j->rows, sizeof(*j->rows) * j->rcap);
    }
    if (j->idcap - j->idlen < SD_JSONL_ID_MAX) j->ids = sd_util_xrealloc(j->ids, j->idcap = j->idcap ? j->idcap * 2 : 262144);
}

/* That row kept: its line, time and id (n bytes, -1 none). */
static inline __attribute__((always_inline)) void sd_jsonl_block_keep(sd_jsonl_job_t *j, int64_t lineno, int64_t t, int n,
                                                                      int unterminated) {
    sd_jsonl_row_t *r = &j->rows[j->nrows++];
    r->line = lineno, r->t = t, r->idoff = (uint32_t)j->idlen, r->idlen = n;
    if (n > 0) j->idlen += (size_t)n;
    j->last_unterminated = unterminated;
}

/* A line of a block: its row. The full parser reads a copy, so the map is
 * only read here, in C, where a fault can be taken back (see above). */
static int sd_jsonl_block_line(void *ctx, const char *line, size_t len, int64_t lineno, int unterminated) {
    sd_jsonl_job_t *j = ctx;
    sd_jsonl_block_room(j);
    if (j->copycap < len) j->copy = sd_util_xrealloc(j->copy, j->copycap = 2 * len);
    memcpy(j->copy, line, len);
    int64_t t;
    int n = sd_sink_json_id_time(j->copy, len, j->s->id_field, j->ids + j->idlen, SD_JSONL_ID_MAX, j->s->time_field, &t);
    sd_jsonl_block_keep(j, lineno, t, n, unterminated);
    return 0;
}

/* The same for a plain row, its end found as it is read (sd_jsonfast_line):
 * most rows, one pass over their bytes instead of two. */
static size_t sd_jsonl_block_fast(void *ctx, const char *p, size_t avail, int64_t lineno, int *stop) {
    sd_jsonl_job_t *j = ctx;
    sd_jsonl_block_room(j);
    size_t len, used;
    int64_t t;
    *stop = 0;
    int n = sd_jsonfast_line(&j->shape, p, avail, &len, &used, j->s->id_field, j->ids + j->idlen, SD_JSONL_ID_MAX,
                             j->s->time_field, &t, sd_util_parse_iso8601);
    if (n == SD_JSONFAST_UNSURE) return 0;
    if (len) sd_jsonl_block_keep(j, lineno, t, n, 0); /* an empty line is only counted */
    return used;
}

/* Where the lines of block j->index, bytes [begin, stop) of the file, lie:
 * from the first newline at or after the byte before it, to the first
 * newline at or after its last byte (or the file's end: j->eof). */
static void sd_jsonl_find(sd_jsonl_job_t *j, size_t begin, size_t stop) {
    j->start = j->end = begin;
    j->eof = 0;
    if (begin) {
        const char *nl = memchr(j->map + begin - 1, '\n', stop - (begin - 1));
        if (!nl) return; /* inside a line that began in a block before */
        j->start = (size_t)(nl - j->map) + 1;
    }
    const char *nl = memchr(j->map + stop - 1, '\n', j->size - (stop - 1));
    if (nl) j->end = (size_t)(nl - j->map) + 1;
    else j->end = j->size, j->eof = 1;
}

/* The block's worker, while it reads the map: where a fault goes back to. */
static __thread sigjmp_buf *sd_jsonl_guard;
static pthread_mutex_t sd_jsonl_bus_lock = PTHREAD_MUTEX_INITIALIZER;
static int sd_jsonl_bus_scans;
static struct sigaction sd_jsonl_bus_before;

static void sd_jsonl_on_bus(int sig, siginfo_t *si, void *uc) {
    (void)si, (void)uc;
    if (sd_jsonl_guard) siglongjmp(*sd_jsonl_guard, 1);
    sigaction(sig, &sd_jsonl_bus_before, NULL); /* not a map's read: as before (the access faults again) */
}

/* The SIGBUS handler, set while any scan reads a map (on = 0 when one ends). */
static void sd_jsonl_bus(int on) {
    pthread_mutex_lock(&sd_jsonl_bus_lock);
    if (on && !sd_jsonl_bus_scans++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = sd_jsonl_on_bus;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, &sa, &sd_jsonl_bus_before);
    } else if (!on && !--sd_jsonl_bus_scans) {
        sigaction(SIGBUS, &sd_jsonl_bus_before, NULL);
    }
    pthread_mutex_unlock(&sd_jsonl_bus_lock);
}

static void sd_jsonl_parse_block(sd_jsonl_job_t *j) {
    sigjmp_buf back;
    int stopped;
    size_t begin = (size_t)j->index * SD_JSONL_BLOCK, stop = begin + SD_JSONL_BLOCK < j->size ? begin + SD_JSONL_BLOCK : j->size;
    j->nrows = j->idlen = 0;
    j->lines = 0;
    j->last_unterminated = 0;
    j->cut = 0;
    if (sigsetjmp(back, 1)) { /* a page past the file's end now */
        sd_jsonl_guard = NULL;
        j->cut = 1;
        return;
    }
    sd_jsonl_guard = &back;
    sd_jsonl_find(j, begin, stop);
    sd_jsonl_lines(j->map + j->start, j->end - j->start, j->eof, &j->lines, sd_jsonl_block_line, sd_jsonl_block_fast, j, &stopped);
    sd_jsonl_guard = NULL;
    /* its pages let go now (a worker reading across the block's edge takes
     * them again from the page cache): the harness's memory stays a few
     * blocks, and the unmapping is spread over the workers */
    madvise((void *)(j->map + begin), (stop - begin) & ~(size_t)4095, MADV_DONTNEED);
}

static void *sd_jsonl_worker(void *arg) {
    sd_jsonl_pool_t *pool = arg;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        sd_jsonl_job_t *j = NULL; /* the first block queued */
        for (int i = 0; i < SD_JSONL_JOBS; i++)
            if (pool->jobs[i].state == SD_JOB_QUEUED && (!j || pool->jobs[i].index < j->index)) j = &pool->jobs[i];
        if (!j) {
            if (pool->quit) break;
            pthread_cond_wait(&pool->queued, &pool->lock);
            continue;
        }
        j->state = SD_JOB_BUSY;
        pthread_mutex_unlock(&pool->lock);
        sd_jsonl_parse_block(j);
        pthread_mutex_lock(&pool->lock);
        j->state = SD_JOB_PARSED;
        pthread_cond_broadcast(&pool->parsed);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

/* The parsed blocks' rows to the callback, in order. 0 done, 1 stopped,
 * -2 the file was cut short while read. */
static int sd_jsonl_take(sd_jsonl_pool_t *pool, int64_t blocks, sd_jsonl_scan_t *c) {
    int64_t next_fill = 0, next_take = 0, base = 0;
    int rc = 0;
    while (!rc && next_take < blocks) {
        pthread_mutex_lock(&pool->lock);
        for (; next_fill < blocks && next_fill - next_take < SD_JSONL_JOBS; next_fill++) {
            sd_jsonl_job_t *j = &pool->jobs[next_fill % SD_JSONL_JOBS];
            j->index = next_fill;
            j->state = SD_JOB_QUEUED;
            pthread_cond_signal(&pool->queued);
        }
        sd_jsonl_job_t *j = &pool->jobs[next_take % SD_JSONL_JOBS];
        while (j->state != SD_JOB_PARSED) pthread_cond_wait(&pool->parsed, &pool->lock);
        pthread_mutex_unlock(&pool->lock);
        if (j->cut) return -2;
        for (size_t i = 0; i < j->nrows && !rc; i++) {
            sd_jsonl_row_t *r = &j->rows[i];
            int unterminated = j->eof && i + 1 == j->nrows && j->last_unterminated;
            if (sd_jsonl_emit(c, r->idlen > 0 ? j->ids + r->idoff : "", r->idlen, base + r->line, unterminated, r->t)) rc = 1;
        }
        base += j->lines;
        pthread_mutex_lock(&pool->lock);
        j->state = SD_JOB_FREE;
        pthread_mutex_unlock(&pool->lock);
        next_take++;
        if (j->eof) break; /* no block after it holds a line */
    }
    return rc;
}

/* The file (size bytes when the scan began) read by the pool: as
 * sd_jsonl_each_line with the scan's rows, or -2 (see sd_jsonl_take). */
static int sd_jsonl_scan_parallel(int fd, off_t size, sd_jsonl_scan_t *c) {
    const char *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) return sd_jsonl_each_line(fd, sd_jsonl_scan_line, sd_jsonl_scan_fast, c); /* read it here */
    madvise((void *)map, (size_t)size, MADV_SEQUENTIAL);
    sd_jsonl_pool_t *pool = sd_util_xcalloc(1, sizeof(*pool));
    for (int i = 0; i < SD_JSONL_JOBS; i++) pool->jobs[i].s = c->s, pool->jobs[i].map = map, pool->jobs[i].size = (size_t)size;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->queued, NULL);
    pthread_cond_init(&pool->parsed, NULL);
    sd_jsonl_bus(1);
    pthread_t th[SD_JSONL_WORKERS];
    int nth = 0;
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGBUS); /* the workers take no signal but their own faults: SIGINT and SIGTERM stay this thread's */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (; nth < SD_JSONL_WORKERS; nth++)
        if (pthread_create(&th[nth], NULL, sd_jsonl_worker, pool)) break;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    int rc = nth ? sd_jsonl_take(pool, (int64_t)(((size_t)size + SD_JSONL_BLOCK - 1) / SD_JSONL_BLOCK), c) : 0;
    pthread_mutex_lock(&pool->lock);
    for (int i = 0; i < SD_JSONL_JOBS; i++) /* stopped early: blocks not begun are not parsed */
        if (pool->jobs[i].state == SD_JOB_QUEUED) pool->jobs[i].state = SD_JOB_FREE;
    pool->quit = 1;
    pthread_cond_broadcast(&pool->queued);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < nth; i++) pthread_join(th[i], NULL);
    sd_jsonl_bus(0);
    munmap((void *)map, (size_t)size);
    if (!nth) rc = sd_jsonl_each_line(fd, sd_jsonl_scan_line, sd_jsonl_scan_fast, c); /* no thread could start: read it here */
    for (int i = 0; i < SD_JSONL_JOBS; i++) {
        free(pool->jobs[i].rows);
        free(pool->jobs[i].ids);
        free(pool->jobs[i].copy);
    }
    pthread_cond_destroy(&pool->queued);
    pthread_cond_destroy(&pool->parsed);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
    return rc;
}

static sd_err_t sd_jsonl_scan(void *state, sd_sink_row_cb cb, void *opaque, char *err, size_t errlen) {
    sd_jsonl_sink_t *s = state;
    glob_t g = {0};
    sd_err_t e = sd_jsonl_glob(s, &g, 0, err, errlen);
    if (e) return e;
    sd_jsonl_scan_t *c = sd_util_xcalloc(1, sizeof(*c));
    c->s = s, c->cb = cb, c->opaque = opaque;
    s->cut_lines = 0;
    free(s->cut_first);
    s->cut_first = NULL;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        int fd = open(g.gl_pathv[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            e = sd_err_set(err, errlen, SD_ERR_SINK, "open %s: cannot read", g.gl_pathv[i]);
            break;
        }
        const char *base = strrchr(g.gl_pathv[i], '/');
        c->base = base ? base + 1 : g.gl_pathv[i];
        c->baselen = strlen(c->base);
        c->label_line = 0;
        struct stat st;
        int big = !fstat(fd, &st) && st.st_size >= (off_t)SD_JSONL_PARALLEL_MIN;
        int rc = big ? sd_jsonl_scan_parallel(fd, st.st_size, c) : sd_jsonl_each_line(fd, sd_jsonl_scan_line, sd_jsonl_scan_fast, c);
        close(fd);
        if (rc == -2)
            e = sd_err_set(err, errlen, SD_ERR_SINK, "read %s: the file was cut short while it was read (a writer truncated it)",
                           g.gl_pathv[i]);
        else if (rc < 0) e = sd_err_set(err, errlen, SD_ERR_SINK, "read %s: %s", g.gl_pathv[i], strerror(errno));
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

static int sd_jsonl_cols_line(void *ctx, const char *line, size_t len, int64_t lineno, int unterminated) {
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
        int rc = sd_jsonl_each_line(fd, sd_jsonl_cols_line, NULL, &c);
        close(fd);
        if (rc == -2)
            e = sd_err_set(err, errlen, SD_ERR_SINK, "read %s: the file was cut short while it was read (a writer truncated it)",
                           g.gl_pathv[i]);
        else if (rc < 0) e = sd_err_set(err, errlen, SD_ERR_SINK, "read %s: %s", g.gl_pathv[i], strerror(errno));
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
    free(s->pattern2);
    free(s->flink_dir);
    free(s->id_field);
    free(s->time_field);
    free(s->cut_first);
    free(s);
}

static char *sd_jsonl_notes(void *state) {
    sd_jsonl_sink_t *s = state;
    if (!s->cut_lines) return NULL;
    return sd_util_fmt("%lld file%s end%s in a line cut short (no newline and not a whole JSON object), not read as a row%s: "
                       "%s%s", (long long)s->cut_lines, s->cut_lines == 1 ? "" : "s", s->cut_lines == 1 ? "s" : "",
                       s->cut_lines == 1 ? "" : "s", s->cut_first ? s->cut_first : "", s->cut_lines > 1 ? ", ..." : "");
}

static sd_err_t sd_flink_files_open(const sd_kvlist_t *params, const sd_sink_ctx_t *ctx, void **state, char *err, size_t errlen) {
    sd_err_t e = sd_jsonl_open(params, ctx, state, err, errlen);
    if (e) return e;
    sd_jsonl_sink_t *s = *state;
    char *dir = s->pattern;
    s->pattern = sd_util_fmt("%s/*", dir);
    s->pattern2 = sd_util_fmt("%s/*/*", dir);
    s->flink_dir = dir;
    s->one_file = 0;
    return SD_OK;
}

static char *sd_flink_files_notes(void *state) {
    sd_jsonl_sink_t *s = state;
    char *cut = sd_jsonl_notes(state);
    int64_t n = sd_flink_files_in_progress(s->flink_dir);
    if (!n) return cut;
    char *out = sd_util_fmt("%s%s%lld in-progress or pending part file%s in %s not read (Flink's FileSink makes a part file output "
                            "when the checkpoint after it completes; one left by a job that failed never is)",
                            cut ? cut : "", cut ? "; " : "", (long long)n, n == 1 ? "" : "s", s->flink_dir);
    free(cut);
    return out;
}

const sd_sink_ops_t sd_sink_flink_files = {
    .name = "flink-files", .open = sd_flink_files_open, .count = sd_jsonl_count, .scan = sd_jsonl_scan, .close = sd_jsonl_close,
    .notes = sd_flink_files_notes, .scan_cols = sd_jsonl_scan_cols
};

const sd_sink_ops_t sd_sink_jsonl = {
    .name = "jsonl", .open = sd_jsonl_open, .count = sd_jsonl_count, .scan = sd_jsonl_scan, .close = sd_jsonl_close,
    .notes = sd_jsonl_notes, .scan_cols = sd_jsonl_scan_cols
};
