/* sink_command.c - reads any store through a user's command:
 * `sink command [id=F] [writer=F] [time=F] [timeout=D] [max-output=N] PROGRAM ARG...`.
 *
 * The command is run (no shell, its own process group, a timeout) each
 * time the harness reads the sink, and prints the sink's rows as JSON
 * lines: the id in field "id" (id=), an optional writer label in
 * "writer" (writer=) and write time in "time" (time=, epoch ms or
 * ISO-8601), and any fields the result models read. Its stderr is kept in
 * the run folder (sink-NAME.stderr). A non-zero exit, a timeout or a line
 * that is not a JSON object is an error naming the command and its last
 * stderr line: the run is inconclusive, never judged on half an answer.
 *
 * The JSON-lines parsing is shared with the Delta reader (sink_delta.c),
 * whose Parquet helper prints rows the same way. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "json.h"
#include "sink.h"
#include "util.h"

typedef struct {
    char **argv;
    int argc;
    char *id_field, *writer_field, *time_field;
    int64_t timeout_ms;
    size_t max_out;
    char *stderr_path;
} sd_cmd_sink_t;

/* A command's output is held in memory to be read: at most this much
 * unless max-output= says otherwise */
#define SD_CMDSINK_MAX_OUTPUT ((size_t)2 << 30)

static void sd_cmdsink_close(void *state);

static sd_err_t sd_cmdsink_open(const sd_kvlist_t *params, const sd_sink_ctx_t *ctx, void **state, char *err, size_t errlen) {
    sd_cmd_sink_t *s = sd_util_xcalloc(1, sizeof(*s));
    s->argv = sd_util_xcalloc((size_t)params->n + 1, sizeof(char *));
    for (int i = 0; i < params->n; i++)
        if (!strcmp(params->v[i].key, "arg")) s->argv[s->argc++] = sd_util_strdup(params->v[i].value);
    const char *v;
    s->id_field = sd_util_strdup((v = sd_kvlist_get(params, "id")) ? v : "id");
    s->writer_field = sd_util_strdup((v = sd_kvlist_get(params, "writer")) ? v : "writer");
    s->time_field = sd_util_strdup((v = sd_kvlist_get(params, "time")) ? v : "time");
    s->timeout_ms = 60000;
    if ((v = sd_kvlist_get(params, "timeout")) && sd_util_parse_duration(v, &s->timeout_ms)) {
        sd_cmdsink_close(s);
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "timeout=%s: expected a duration (30s, 2m)", v);
    }
    s->max_out = SD_CMDSINK_MAX_OUTPUT;
    int64_t mo;
    if ((v = sd_kvlist_get(params, "max-output"))) {
        if (sd_util_parse_count(v, &mo) || mo < 1) {
            sd_cmdsink_close(s);
            return sd_err_set(err, errlen, SD_ERR_SCENARIO, "max-output=%s: expected a number of bytes (64M, 2G)", v);
        }
        s->max_out = (size_t)mo;
    }
    if (!s->argc) {
        sd_cmdsink_close(s);
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "expected the command's program after the options");
    }
    if (ctx->run_dir) s->stderr_path = sd_util_fmt("%s/sink-%s.stderr", ctx->run_dir, ctx->name ? ctx->name : "command");
    *state = s;
    return SD_OK;
}

/* Run the command; its stdout in out. An error names the command, how it
 * ended and its last stderr line. */
sd_err_t sd_sink_command_output(char *const *argv, const char *in, size_t inlen, int64_t timeout_ms, size_t max_out,
                                const char *stderr_path, sd_buf_t *out, char *err, size_t errlen) {
    sd_cmd_status_t st;
    sd_err_t e = sd_cmd_run(argv, in, inlen, timeout_ms, max_out, stderr_path, out, &st, err, errlen);
    if (e) return e;
    if (st.code == 0 && !st.signal && !st.timed_out && !st.too_much && !st.interrupted) return SD_OK;
    char how[96], last[300];
    sd_cmd_status_text(&st, timeout_ms, max_out, how, sizeof(how));
    sd_cmd_last_line(stderr_path, last, sizeof(last));
    return sd_err_set(err, errlen, st.interrupted ? SD_ERR_INTERRUPTED : SD_ERR_SINK, "%s: %s%s%s%s%s", argv[0], how, last[0] ? ": " : "", last,
                      stderr_path ? " (stderr in " : "", stderr_path ? stderr_path : "");
}

/* The next line of text [*at, len): its bounds, without \r\n; 0 at the end. */
static int sd_next_line(const char *text, size_t len, size_t *at, const char **line, size_t *ll) {
    while (*at < len) {
        const char *p = text + *at;
        const char *nl = memchr(p, '\n', len - *at);
        size_t n = nl ? (size_t)(nl - p) : len - *at;
        *at += n + (nl ? 1 : 0);
        /* JSON's blanks around a row are no part of it: a row is counted
         * while it runs as it is read at the end, and a blank line is none */
        while (n && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
        while (n && (*p == ' ' || *p == '\t' || *p == '\r')) p++, n--;
        if (!n) continue;
        *line = p;
        *ll = n;
        return 1;
    }
    return 0;
}

static sd_err_t sd_not_object(const char *what, int64_t lineno, const char *line, size_t ll, char *err, size_t errlen) {
    sd_buf_t b;
    sd_buf_init(&b);
    sd_buf_put_printable(&b, line, ll, 80);
    sd_err_t e = sd_err_set(err, errlen, SD_ERR_SINK, "%s, line %lld: expected a JSON object, found \"%s\"", what, (long long)lineno,
                            b.data ? b.data : "");
    sd_buf_free(&b);
    return e;
}

static int sd_is_object(const char *line, size_t ll) {
    json_t *o = sd_json_loadb(line, ll, JSON_ALLOW_NUL);
    int ok = o && json_is_object(o);
    json_decref(o);
    return ok;
}

sd_err_t sd_sink_lines_scan(const char *text, size_t len, const char *what, const char *id_field, const char *writer_field,
                            const char *time_field, sd_sink_row_cb cb, void *opaque, char *err, size_t errlen) {
    size_t at = 0, ll;
    const char *line;
    int64_t lineno = 0;
    char idbuf[512], wbuf[512];
    while (sd_next_line(text, len, &at, &line, &ll)) {
        lineno++;
        int64_t t = INT64_MIN;
        int idlen = sd_sink_json_id_time(line, ll, id_field, idbuf, sizeof(idbuf), time_field, &t);
        if (idlen < 0 && !sd_is_object(line, ll)) return sd_not_object(what, lineno, line, ll, err, errlen);
        int wl = writer_field ? sd_sink_json_field(line, ll, writer_field, wbuf, sizeof(wbuf)) : -1;
        if (cb(opaque, idlen >= 0 ? idbuf : NULL, idlen >= 0 ? (size_t)idlen : 0, wl >= 0 ? wbuf : NULL, wl >= 0 ? (size_t)wl : 0, t))
            break;
    }
    return SD_OK;
}

sd_err_t sd_sink_lines_scan_cols(const char *text, size_t len, const char *what, const char *writer_field, const char *const *names,
                                 int n, sd_sink_cols_cb cb, void *opaque, char *err, size_t errlen) {
    size_t at = 0, ll;
    const char *line;
    int64_t lineno = 0;
    char wbuf[512];
    while (sd_next_line(text, len, &at, &line, &ll)) {
        lineno++;
        int wl = writer_field ? sd_sink_json_field(line, ll, writer_field, wbuf, sizeof(wbuf)) : -1;
        int rc = sd_sink_json_cols(line, ll, names, n, wl >= 0 ? wbuf : NULL, cb, opaque);
        if (rc < 0) return sd_not_object(what, lineno, line, ll, err, errlen);
        if (rc) break;
    }
    return SD_OK;
}

sd_err_t sd_sink_lines_count(const char *text, size_t len, const char *what, int64_t *rows, char *err, size_t errlen) {
    size_t at = 0, ll;
    const char *line;
    int64_t n = 0;
    while (sd_next_line(text, len, &at, &line, &ll)) {
        n++;
        /* a cheap check: every row is an object (a full parse at the scan) */
        if (line[0] != '{') return sd_not_object(what, n, line, ll, err, errlen);
    }
    *rows = n;
    return SD_OK;
}

static sd_err_t sd_cmdsink_run(sd_cmd_sink_t *s, sd_buf_t *out, char *err, size_t errlen) {
    return sd_sink_command_output(s->argv, NULL, 0, s->timeout_ms, s->max_out, s->stderr_path, out, err, errlen);
}

static sd_err_t sd_cmdsink_count(void *state, int missing_ok, int64_t *rows, char *err, size_t errlen) {
    (void)missing_ok;
    sd_cmd_sink_t *s = state;
    sd_buf_t out;
    sd_buf_init(&out);
    sd_err_t e = sd_cmdsink_run(s, &out, err, errlen);
    if (!e) e = sd_sink_lines_count(out.data ? out.data : "", out.len, "the command's output", rows, err, errlen);
    sd_buf_free(&out);
    return e;
}

static sd_err_t sd_cmdsink_scan(void *state, sd_sink_row_cb cb, void *opaque, char *err, size_t errlen) {
    sd_cmd_sink_t *s = state;
    sd_buf_t out;
    sd_buf_init(&out);
    sd_err_t e = sd_cmdsink_run(s, &out, err, errlen);
    if (!e) e = sd_sink_lines_scan(out.data ? out.data : "", out.len, "the command's output", s->id_field, s->writer_field, s->time_field,
                                   cb, opaque, err, errlen);
    sd_buf_free(&out);
    return e;
}

static sd_err_t sd_cmdsink_scan_cols(void *state, const char *const *names, int n, sd_sink_cols_cb cb, void *opaque, char *err,
                                     size_t errlen) {
    sd_cmd_sink_t *s = state;
    sd_buf_t out;
    sd_buf_init(&out);
    sd_err_t e = sd_cmdsink_run(s, &out, err, errlen);
    if (!e) e = sd_sink_lines_scan_cols(out.data ? out.data : "", out.len, "the command's output", s->writer_field, names, n, cb, opaque,
                                        err, errlen);
    sd_buf_free(&out);
    return e;
}

static void sd_cmdsink_close(void *state) {
    sd_cmd_sink_t *s = state;
    for (int i = 0; i < s->argc; i++) free(s->argv[i]);
    free(s->argv);
    free(s->id_field);
    free(s->writer_field);
    free(s->time_field);
    free(s->stderr_path);
    free(s);
}

const sd_sink_ops_t sd_sink_command = {
    .name = "command", .open = sd_cmdsink_open, .count = sd_cmdsink_count, .scan = sd_cmdsink_scan, .close = sd_cmdsink_close,
    .scan_cols = sd_cmdsink_scan_cols
};
