/* spark_checkpoint.c - Spark checkpoint reader (see spark_checkpoint.h). */
#include "spark_checkpoint.h"

#include <ctype.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

struct sd_spark_s {
    char *dir;
    char *topic;
    int partitions;
    char *side_topic;     /* a second source the query reads (deliveries), or NULL */
    int side_partitions;
};

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
    *out = s;
    return SD_OK;
}

void sd_spark_close(sd_spark_t *s) {
    if (!s) return;
    free(s->dir);
    free(s->topic);
    free(s->side_topic);
    free(s);
}

/* Highest numeric file name in dir/sub, -1 if none; its mtime in *mtime. */
static int64_t sd_spark_max(const sd_spark_t *s, const char *sub, int64_t *mtime) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", s->dir, sub);
    DIR *d = opendir(path);
    *mtime = 0;
    if (!d) return -1;
    int64_t best = -1;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        if (!isdigit((unsigned char)n[0])) continue;
        char *end;
        long long v = strtoll(n, &end, 10);
        if (*end) continue;
        if (v > best) best = v;
    }
    closedir(d);
    if (best >= 0) {
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s/%lld", s->dir, sub, (long long)best);
        if (!stat(path, &st)) *mtime = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
    }
    return best;
}

void sd_spark_poll(sd_spark_t *s, sd_spark_state_t *out) {
    out->planned = sd_spark_max(s, "offsets", &out->planned_mtime);
    out->committed = sd_spark_max(s, "commits", &out->committed_mtime);
}

static int sd_spark_offsets_of(sd_spark_t *s, int64_t n, const char *topic, int partitions, int64_t *offsets);

int sd_spark_offsets(sd_spark_t *s, int64_t n, int64_t *offsets) {
    return sd_spark_offsets_of(s, n, s->topic, s->partitions, offsets);
}

static int sd_spark_offsets_of(sd_spark_t *s, int64_t n, const char *topic, int partitions, int64_t *offsets) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/offsets/%lld", s->dir, (long long)n);
    char *text = NULL;
    if (sd_util_read_file(path, &text, NULL, NULL, 0)) return -1;
    int found = -1;
    /* "v1", the batch metadata, then one line of JSON per source */
    char *save = NULL;
    int line = 0;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save), line++) {
        if (line < 2) continue;
        json_t *o = json_loads(l, 0, NULL);
        json_t *t = o ? json_object_get(o, topic) : NULL;
        if (json_is_object(t)) {
            for (int p = 0; p < partitions; p++) offsets[p] = 0;
            const char *k;
            json_t *v;
            json_object_foreach(t, k, v) {
                int p = atoi(k);
                if (p >= 0 && p < partitions && json_is_integer(v)) offsets[p] = json_integer_value(v);
            }
            found = 0;
        }
        json_decref(o);
        if (!found) break;
    }
    free(text);
    return found;
}

int64_t sd_spark_batch_rows(sd_spark_t *s, int64_t n) {
    int64_t *a = sd_util_xcalloc((size_t)s->partitions, sizeof(int64_t));
    int64_t *b = sd_util_xcalloc((size_t)s->partitions, sizeof(int64_t));
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
    int64_t *a = sd_util_xcalloc((size_t)s->partitions, sizeof(int64_t));
    char *t = NULL;
    if (!sd_spark_offsets(s, n, a)) {
        sd_buf_t b;
        sd_buf_init(&b);
        for (int p = 0; p < s->partitions; p++) sd_buf_printf(&b, "%s%d:%lld", p ? "," : "", p, (long long)a[p]);
        int64_t *d = s->side_topic ? sd_util_xcalloc((size_t)s->side_partitions, sizeof(int64_t)) : NULL;
        if (d && !sd_spark_offsets_of(s, n, s->side_topic, s->side_partitions, d))
            for (int p = 0; p < s->side_partitions; p++) sd_buf_printf(&b, ",%s:%d:%lld", s->side_topic, p, (long long)d[p]);
        free(d);
        t = sd_buf_steal(&b);
    }
    free(a);
    return t;
}
