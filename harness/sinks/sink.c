/* sink.c - reader registry and the open-sink wrapper (see sink.h). */
#include "sink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const sd_sink_ops_t *const sd_sink_readers[] = {&sd_sink_sqlite, &sd_sink_kafka, &sd_sink_jsonl, &sd_sink_spark_files, &sd_sink_flink_files, &sd_sink_command,
                                                      &sd_sink_delta, &sd_sink_postgres, NULL};

const sd_sink_ops_t *sd_sink_find(const char *name) {
    for (int i = 0; sd_sink_readers[i]; i++)
        if (!strcmp(sd_sink_readers[i]->name, name)) return sd_sink_readers[i];
    return NULL;
}

sd_err_t sd_sink_open(const sd_sink_decl_t *decl, const sd_kvlist_t *vars, const sd_sink_ctx_t *ctx, sd_sink_t **out,
                      char *err, size_t errlen) {
    const sd_sink_ops_t *ops = sd_sink_find(decl->kind);
    if (!ops) return sd_err_set(err, errlen, SD_ERR_SCENARIO, "sink %s: unknown kind %s", decl->name, decl->kind);
    sd_kvlist_t params = {0};
    sd_buf_t d;
    sd_buf_init(&d);
    sd_buf_puts(&d, decl->kind);
    for (int i = 0; i < decl->params.n; i++) {
        char perr[256];
        char *v = sd_scenario_expand(decl->params.v[i].value, vars, perr, sizeof(perr));
        if (!v) {
            sd_kvlist_free(&params);
            sd_buf_free(&d);
            return sd_err_set(err, errlen, SD_ERR_SCENARIO, "sink %s: %s", decl->name, perr);
        }
        sd_kvlist_add(&params, decl->params.v[i].key, v);
        /* a command's words as they are, its options as KEY=VALUE */
        if (!strcmp(decl->params.v[i].key, "arg")) sd_buf_printf(&d, " %s", v);
        else sd_buf_printf(&d, " %s=%s", decl->params.v[i].key, v);
        free(v);
    }
    void *state = NULL;
    char rerr[1024];
    sd_err_t e = ops->open(&params, ctx, &state, rerr, sizeof(rerr));
    sd_kvlist_free(&params);
    if (e) {
        e = sd_err_set(err, errlen, e, "sink %s (%s): %s", decl->name, d.data, rerr);
        sd_buf_free(&d);
        return e;
    }
    sd_sink_t *s = sd_util_xcalloc(1, sizeof(*s));
    s->name = sd_util_strdup(decl->name);
    s->is_quarantine = decl->is_quarantine;
    s->ops = ops;
    s->state = state;
    s->describe = sd_buf_steal(&d);
    *out = s;
    return SD_OK;
}

void sd_sink_close(sd_sink_t *s) {
    if (!s) return;
    if (s->ops && s->state) s->ops->close(s->state);
    free(s->name);
    free(s->describe);
    free(s);
}

sd_err_t sd_sink_count(sd_sink_t *s, int missing_ok, int64_t *rows, char *err, size_t errlen) {
    char rerr[1024];
    sd_err_t e = s->ops->count(s->state, missing_ok, rows, rerr, sizeof(rerr));
    if (e) return sd_err_set(err, errlen, e, "sink %s (%s): %s", s->name, s->describe, rerr);
    return SD_OK;
}

sd_err_t sd_sink_scan(sd_sink_t *s, sd_sink_row_cb cb, void *opaque, char *err, size_t errlen) {
    char rerr[1024];
    sd_err_t e = s->ops->scan(s->state, cb, opaque, rerr, sizeof(rerr));
    if (e) return sd_err_set(err, errlen, e, "sink %s (%s): %s", s->name, s->describe, rerr);
    return SD_OK;
}

sd_err_t sd_sink_scan_cols(sd_sink_t *s, const char *const *names, int n, sd_sink_cols_cb cb, void *opaque, char *err,
                           size_t errlen) {
    if (!s->ops->scan_cols)
        return sd_err_set(err, errlen, SD_ERR_SINK, "sink %s (%s): a %s reader gives ids only; a result model needs a sqlite or "
                          "jsonl sink", s->name, s->describe, s->ops->name);
    char rerr[1024];
    sd_err_t e = s->ops->scan_cols(s->state, names, n, cb, opaque, rerr, sizeof(rerr));
    if (e) return sd_err_set(err, errlen, e, "sink %s (%s): %s", s->name, s->describe, rerr);
    return SD_OK;
}

char *sd_sink_newest_commit(sd_sink_t *s) { return s->ops->newest_commit ? s->ops->newest_commit(s->state) : NULL; }

int64_t sd_sink_mark(sd_sink_t *s) {
    int64_t m = -1;
    if (s->ops->mark) {
        if (s->ops->mark(s->state, &m, NULL, 0) != SD_OK) m = -1;
    } else if (s->ops->count(s->state, 1, &m, NULL, 0) != SD_OK) {
        m = -1;
    }
    return m;
}

int64_t sd_sink_pending(sd_sink_t *s) {
    int64_t rows = -1;
    if (s->ops->pending && s->ops->pending(s->state, &rows, NULL, 0) != SD_OK) rows = -1;
    return rows;
}

int64_t sd_sink_aborted(sd_sink_t *s) { return s->ops->aborted ? s->ops->aborted(s->state) : -1; }
int sd_sink_ends(sd_sink_t *s, int nmax, int64_t *stable, int64_t *end) {
    return s->ops->ends ? s->ops->ends(s->state, nmax, stable, end) : -1;
}
int sd_sink_open_holds(sd_sink_t *s, const char *needle, const int64_t *from, int nfrom, int64_t budget_ms) {
    return s->ops->open_holds ? s->ops->open_holds(s->state, needle, from, nfrom, budget_ms) : -1;
}
int64_t sd_sink_committed(sd_sink_t *s) { return s->ops->committed ? s->ops->committed(s->state) : -1; }

sd_err_t sd_sink_files(sd_sink_t *s, void (*cb)(void *opaque, int64_t commit, int64_t bytes), void *opaque, char *err, size_t errlen) {
    if (!s->ops->files) return sd_err_set(err, errlen, SD_ERR_SINK, "sink %s (%s) keeps no log of the files it wrote", s->name, s->ops->name);
    return s->ops->files(s->state, cb, opaque, err, errlen);
}

char *sd_sink_notes(sd_sink_t *s) {
    return s->ops->notes ? s->ops->notes(s->state) : NULL;
}
