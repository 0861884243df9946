/* sink_json.c - a JSON row's fields as every reader takes them (see
 * sink.h): the id and event time, a named field, the columns a model
 * names at dotted paths. The readers call this file; it calls none of them. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfast.h"
#include "json.h"
#include "jsonscan.h"
#include "sink.h"
#include "util.h"

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
