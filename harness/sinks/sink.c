/* sink.c - reader registry and the open-sink wrapper (see sink.h). */
#include "sink.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfast.h"
#include "json.h"
#include "jsonscan.h"
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

sd_err_t sd_sink_files(sd_sink_t *s, void (*cb)(void *opaque, int64_t commit, int64_t bytes), void *opaque, char *err, size_t errlen) {
    if (!s->ops->files) return sd_err_set(err, errlen, SD_ERR_SINK, "sink %s (%s) keeps no log of the files it wrote", s->name, s->ops->name);
    return s->ops->files(s->state, cb, opaque, err, errlen);
}

char *sd_sink_notes(sd_sink_t *s) {
    return s->ops->notes ? s->ops->notes(s->state) : NULL;
}

/* A plain row is read without a parser (jsonfast.c), any other by simdjson
 * (jsonscan.cpp): the same answer on every row. */
int sd_sink_json_field(const char *json, size_t len, const char *field, char *out, size_t outlen) {
    int n = sd_jsonfast_id_time(json, len, field, out, outlen, NULL, NULL, NULL);
    return n != SD_JSONFAST_UNSURE ? n : sd_jsonscan_id_time(json, len, field, out, outlen, NULL, NULL, NULL);
}

int sd_sink_json_id_time(const char *json, size_t len, const char *field, char *out, size_t outlen,
                         const char *time_field, int64_t *t_ms) {
    int n = sd_jsonfast_id_time(json, len, field, out, outlen, time_field, t_ms, sd_util_parse_iso8601);
    return n != SD_JSONFAST_UNSURE ? n : sd_jsonscan_id_time(json, len, field, out, outlen, time_field, t_ms, sd_util_parse_iso8601);
}

/* The value at a dotted path (window.start) of a JSON object, as text. */
static const char *sd_sink_path_text(json_t *o, const char *path, char *buf, size_t blen, size_t *len) {
    json_t *v = o;
    char part[256];
    for (const char *p = path; v && *p;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof(part)) return NULL;
        memcpy(part, p, n);
        part[n] = 0;
        v = json_is_object(v) ? json_object_get(v, part) : NULL;
        p += n + (dot ? 1 : 0);
    }
    if (!v) return NULL;
    int n = -1;
    if (json_is_string(v)) {
        *len = json_string_length(v);
        return json_string_value(v);
    }
    if (json_is_integer(v)) n = snprintf(buf, blen, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v)) n = snprintf(buf, blen, "%.17g", json_real_value(v));
    else if (json_is_boolean(v)) n = snprintf(buf, blen, "%s", json_is_true(v) ? "true" : "false");
    if (n < 0 || (size_t)n >= blen) return NULL;
    *len = (size_t)n;
    return buf;
}

int sd_sink_json_cols(const char *line, size_t len, const char *const *names, int n, const char *writer, sd_sink_cols_cb cb,
                      void *opaque) {
    json_t *o = sd_json_loadb(line, len, JSON_REJECT_DUPLICATES);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        return -1;
    }
    const char *vals[32];
    size_t lens[32];
    char bufs[32][64];
    if (n > 32) n = 32;
    for (int k = 0; k < n; k++) {
        const char *name = names[k][0] == '?' ? names[k] + 1 : names[k];
        lens[k] = 0;
        vals[k] = sd_sink_path_text(o, name, bufs[k], sizeof(bufs[k]), &lens[k]);
        if (!vals[k] && writer && !strcmp(name, "sd_writer")) {
            vals[k] = writer;
            lens[k] = strlen(writer);
        }
    }
    int stop = cb(opaque, vals, lens) ? 1 : 0;
    json_decref(o);
    return stop;
}
