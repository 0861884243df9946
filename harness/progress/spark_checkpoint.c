/* spark_checkpoint.c - Spark checkpoint reader (see spark_checkpoint.h). */
#include "spark_checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* The ids a folder held at the last poll, sorted. */
typedef struct {
    int64_t *v;
    int n, cap;
} sd_spark_ids_t;

/* offsets/N files read lately, kept while the file is unchanged (a batch's
 * rows and its offsets text read the same two files) */
#define SD_SPARK_CACHE 4
typedef struct {
    int64_t n;            /* -1: empty */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    char *text;
    size_t len;
} sd_spark_cached_t;

struct sd_spark_s {
    char *dir;
    char *topic;
    int partitions;
    char *side_topic;     /* a second source the query reads (deliveries), or NULL */
    int side_partitions;
    sd_spark_ids_t ids[2]; /* offsets/, commits/ */
    sd_spark_cached_t cache[SD_SPARK_CACHE];
    int cache_next;
    char *damaged;        /* why the checkpoint cannot be read safely, or NULL */
    /* the batches' end offsets for the late-event rule, read once at its
     * first question (sd_spark_batch_ends) */
    int late_loaded, late_n;
    int64_t *late_ids, *late_ends;
};

/* The newest batches the late-event rule reads (Spark keeps 100 by default). */
#define SD_SPARK_LATE_IDS 4096

static const char *const sd_spark_sub[2] = {"offsets", "commits"};

void sd_spark_set_side(sd_spark_t *s, const char *topic, int partitions) {
    free(s->side_topic);
    s->side_topic = topic ? sd_util_strdup(topic) : NULL;
    s->side_partitions = partitions;
}

sd_err_t sd_spark_open(const char *checkpoint, const char *topic, int partitions, sd_spark_t **out, char *err,
                       size_t errlen) {
    (void)err; (void)errlen;
    sd_spark_t *s = sd_util_xcalloc(1, sizeof(*s));
    s->dir = sd_util_strdup(checkpoint);
    s->topic = sd_util_strdup(topic);
    s->partitions = partitions;
    for (int i = 0; i < SD_SPARK_CACHE; i++) s->cache[i].n = -1;
    *out = s;
    return SD_OK;
}

void sd_spark_close(sd_spark_t *s) {
    if (!s) return;
    free(s->late_ids);
    free(s->late_ends);
    free(s->dir);
    free(s->topic);
    free(s->side_topic);
    for (int i = 0; i < 2; i++) free(s->ids[i].v);
    for (int i = 0; i < SD_SPARK_CACHE; i++) free(s->cache[i].text);
    free(s->damaged);
    free(s);
}

const char *sd_spark_damaged(const sd_spark_t *s) { return s->damaged; }

/* The first cause is kept: it names the file that broke the rules. */
static void sd_spark_damage(sd_spark_t *s, const char *sub, const char *name, const char *why) {
    if (!s->damaged) s->damaged = sd_util_fmt("Spark checkpoint %s: %s/%s: %s", s->dir, sub, name, why);
}

int64_t sd_checkpoint_id(const char *name, const char *prefix) {
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl)) return -1;
    const char *p = name + pl;
    if (*p < '0' || *p > '9') return -1;
    int64_t v = 0;
    int big = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        if (!big && v > (SD_CHECKPOINT_ID_MAX - (*p - '0')) / 10) big = 1;
        if (!big) v = v * 10 + (*p - '0');
    }
    return big ? -2 : v;
}

static int sd_cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t sd_ms(const struct timespec *t) { return (int64_t)t->tv_sec * 1000 + t->tv_nsec / 1000000; }

/* List dir/sub's numbered files into s->ids[which]; the newest, -1 if none;
 * its mtime in *mtime. */
static int64_t sd_spark_list(sd_spark_t *s, int which, int64_t *mtime) {
    const char *sub = sd_spark_sub[which];
    sd_spark_ids_t *ids = &s->ids[which];
    ids->n = 0;
    *mtime = 0;
    char *path = sd_util_fmt("%s/%s", s->dir, sub);
    DIR *d = opendir(path);
    free(path);
    if (!d) return -1; /* not yet, or gone for now */
    struct dirent *de;
    while ((de = readdir(d))) {
        int64_t v = sd_checkpoint_id(de->d_name, "");
        if (v == -2) sd_spark_damage(s, sub, de->d_name, "a batch id past 10^15");
        if (v < 0) continue;
        if (ids->n == ids->cap) {
            ids->cap = ids->cap ? ids->cap * 2 : 64;
            ids->v = sd_util_xrealloc(ids->v, sizeof(int64_t) * (size_t)ids->cap);
        }
        ids->v[ids->n++] = v;
    }
    closedir(d);
    if (!ids->n) return -1;
    qsort(ids->v, (size_t)ids->n, sizeof(int64_t), sd_cmp_i64);
    int64_t best = ids->v[ids->n - 1];
    char *f = sd_util_fmt("%s/%s/%lld", s->dir, sub, (long long)best);
    struct stat st;
    if (!lstat(f, &st)) {
        if (S_ISREG(st.st_mode)) {
            *mtime = sd_ms(&st.st_mtim);
        } else {
            char name[32];
            snprintf(name, sizeof(name), "%lld", (long long)best);
            char why[64];
            snprintf(why, sizeof(why), "%s, not a regular file", sd_util_file_kind(st.st_mode));
            sd_spark_damage(s, sub, name, why);
        }
    }
    free(f);
    return best;
}

sd_err_t sd_spark_poll(sd_spark_t *s, sd_spark_state_t *out, char *err, size_t errlen) {
    out->planned = sd_spark_list(s, 0, &out->planned_mtime);
    out->committed = sd_spark_list(s, 1, &out->committed_mtime);
    if (s->damaged) return sd_err_set(err, errlen, SD_ERR_CHECKPOINT, "%s", s->damaged);
    return SD_OK;
}

int sd_spark_ids(const sd_spark_t *s, int which, int64_t after, int64_t upto, int64_t *ids, int max) {
    const sd_spark_ids_t *x = &s->ids[which ? 1 : 0];
    int lo = x->n, hi = x->n; /* the newest max ids in range: x->v[lo..hi) */
    while (hi > 0 && x->v[hi - 1] > upto) hi--;
    lo = hi;
    while (lo > 0 && x->v[lo - 1] > after && hi - lo < max) lo--;
    for (int i = lo; i < hi; i++) ids[i - lo] = x->v[i];
    return hi - lo;
}

/* offsets/n's text, from the cache while the file is unchanged; NULL when
 * it is absent or cannot be read safely (then the checkpoint is damaged). */
static const char *sd_spark_text(sd_spark_t *s, int64_t n, size_t *len) {
    char name[32];
    snprintf(name, sizeof(name), "%lld", (long long)n);
    char *path = sd_util_fmt("%s/offsets/%s", s->dir, name);
    char why[256];
    int fd = sd_util_open_foreign(path, 0, why, sizeof(why));
    free(path);
    if (fd == -2) sd_spark_damage(s, "offsets", name, why);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st)) {
        close(fd);
        return NULL;
    }
    for (int i = 0; i < SD_SPARK_CACHE; i++) {
        sd_spark_cached_t *c = &s->cache[i];
        if (c->n == n && c->dev == st.st_dev && c->ino == st.st_ino && c->size == st.st_size && c->mtime.tv_sec == st.st_mtim.tv_sec &&
            c->mtime.tv_nsec == st.st_mtim.tv_nsec) {
            close(fd);
            *len = c->len;
            return c->text;
        }
    }
    if ((uint64_t)st.st_size > SD_SPARK_FILE_MAX) {
        close(fd);
        snprintf(why, sizeof(why), "%lld bytes, more than the %u an offsets file may have", (long long)st.st_size, SD_SPARK_FILE_MAX);
        sd_spark_damage(s, "offsets", name, why);
        return NULL;
    }
    sd_buf_t b;
    sd_buf_init(&b);
    char chunk[65536];
    for (;;) {
        ssize_t k = read(fd, chunk, sizeof(chunk));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        if (b.len + (size_t)k > SD_SPARK_FILE_MAX) {
            sd_spark_damage(s, "offsets", name, "grew past the size an offsets file may have while it was read");
            close(fd);
            sd_buf_free(&b);
            return NULL;
        }
        sd_buf_append(&b, chunk, (size_t)k);
    }
    close(fd);
    sd_spark_cached_t *c = &s->cache[s->cache_next];
    s->cache_next = (s->cache_next + 1) % SD_SPARK_CACHE;
    free(c->text);
    *c = (sd_spark_cached_t){.n = n, .dev = st.st_dev, .ino = st.st_ino, .size = st.st_size, .mtime = st.st_mtim, .len = b.len};
    c->text = sd_buf_steal(&b);
    *len = c->len;
    return c->text;
}

int sd_spark_parse_offsets(const char *text, size_t len, const char *topic, int partitions, int64_t *offsets) {
    int found = -1;
    /* "v1", the batch metadata, then one line of JSON per source */
    const char *p = text, *end = text + len;
    for (int line = 0; p < end && found; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (line >= 2 && n) {
            json_t *o = json_loadb(p, n, 0, NULL);
            json_t *t = o ? json_object_get(o, topic) : NULL;
            if (json_is_object(t)) {
                for (int i = 0; i < partitions; i++) offsets[i] = 0;
                const char *k;
                json_t *v;
                json_object_foreach(t, k, v) {
                    char *kend;
                    errno = 0;
                    long pn = strtol(k, &kend, 10);
                    if (errno || kend == k || *kend || pn < 0 || pn >= partitions || !json_is_integer(v)) continue;
                    offsets[pn] = json_integer_value(v);
                }
                found = 0;
            }
            json_decref(o);
        }
        p += n + (nl != NULL);
    }
    return found;
}

int sd_spark_parse_watermark(const char *text, size_t len, int64_t *wm_ms) {
    /* the second line: {"batchWatermarkMs":0,"batchTimestampMs":...,"conf":{...}} */
    const char *nl = memchr(text, '\n', len);
    if (!nl) return -1;
    const char *p = nl + 1, *end = text + len, *nl2 = memchr(p, '\n', (size_t)(end - p));
    json_t *o = json_loadb(p, nl2 ? (size_t)(nl2 - p) : (size_t)(end - p), 0, NULL);
    json_t *w = o ? json_object_get(o, "batchWatermarkMs") : NULL;
    int rc = json_is_integer(w) && json_integer_value(w) >= 0 ? 0 : -1;
    if (!rc) *wm_ms = json_integer_value(w);
    json_decref(o);
    return rc;
}

int sd_spark_watermark(sd_spark_t *s, int64_t n, int64_t *wm_ms) {
    size_t len = 0;
    const char *text = sd_spark_text(s, n, &len);
    return text ? sd_spark_parse_watermark(text, len, wm_ms) : -1;
}

static int sd_spark_offsets_of(sd_spark_t *s, int64_t n, const char *topic, int partitions, int64_t *offsets) {
    size_t len = 0;
    const char *text = sd_spark_text(s, n, &len);
    return text ? sd_spark_parse_offsets(text, len, topic, partitions, offsets) : -1;
}

int sd_spark_offsets(sd_spark_t *s, int64_t n, int64_t *offsets) {
    return sd_spark_offsets_of(s, n, s->topic, s->partitions, offsets);
}

int64_t sd_spark_batch_rows(sd_spark_t *s, int64_t n) {
    int64_t *a = sd_util_xcalloc((size_t)s->partitions + 1, sizeof(int64_t));
    int64_t *b = sd_util_xcalloc((size_t)s->partitions + 1, sizeof(int64_t));
    int64_t rows = -1;
    if (!sd_spark_offsets(s, n, a) && (n == 0 || !sd_spark_offsets(s, n - 1, b))) {
        rows = 0;
        for (int p = 0; p < s->partitions; p++) rows += a[p] - b[p];
    }
    free(a);
    free(b);
    return rows;
}

char *sd_spark_offsets_text(sd_spark_t *s, int64_t n) {
    int64_t *a = sd_util_xcalloc((size_t)s->partitions + 1, sizeof(int64_t));
    char *t = NULL;
    if (!sd_spark_offsets(s, n, a)) {
        sd_buf_t b;
        sd_buf_init(&b);
        for (int p = 0; p < s->partitions; p++) sd_buf_printf(&b, "%s%d:%lld", p ? "," : "", p, (long long)a[p]);
        int64_t *d = s->side_topic ? sd_util_xcalloc((size_t)s->side_partitions + 1, sizeof(int64_t)) : NULL;
        if (d && !sd_spark_offsets_of(s, n, s->side_topic, s->side_partitions, d))
            for (int p = 0; p < s->side_partitions; p++) sd_buf_printf(&b, ",%s:%d:%lld", s->side_topic, p, (long long)d[p]);
        free(d);
        t = sd_buf_steal(&b);
    }
    free(a);
    return t;
}

int sd_spark_batch_ends(sd_spark_t *s, const int64_t **ids, const int64_t **ends) {
    if (!s->late_loaded) {
        s->late_loaded = 1;
        sd_spark_state_t st;
        if (!sd_spark_poll(s, &st, NULL, 0) && st.planned >= 0) {
            size_t np = (size_t)s->partitions;
            s->late_ids = sd_util_xcalloc(SD_SPARK_LATE_IDS, sizeof(int64_t));
            s->late_n = sd_spark_ids(s, 0, -1, st.planned, s->late_ids, SD_SPARK_LATE_IDS);
            s->late_ends = sd_util_xcalloc((size_t)s->late_n * np + 1, sizeof(int64_t));
            for (int i = 0; i < s->late_n; i++) {
                int64_t *e = s->late_ends + (size_t)i * np;
                if (sd_spark_offsets(s, s->late_ids[i], e))
                    for (size_t p = 0; p < np; p++) e[p] = -1;
            }
        }
    }
    *ids = s->late_ids;
    *ends = s->late_ends;
    return s->late_n;
}
