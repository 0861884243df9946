/* scenario.c - tokenizer, parser and validator of .drill files.
 *
 * Lines are split into words the way a careful shell would, but nothing is
 * ever run through a shell: double quotes group (with \" and \\ escapes),
 * single quotes group literally, # begins a comment at the start of a word,
 * a trailing backslash continues the line. Each word keeps its line and
 * column so every error can point at it. */
#include "scenario.h"

#include <ctype.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *const sd_scenario_runtime_vars[] = {
    "run", "brokers", "topic", "checkpoint", "pipelines", "here", "seed", "tag",
    "group", "name", "proxy", NULL};

/* Canonical names first; summary.json "counts" uses these keys. */
const char *const sd_scenario_count_names[] = {
    "produced", "expected_in_target", "observed_rows", "observed_unique", "duplicated", "lost",
    "unexpected", "late_leaked", "malformed_leaked", "quarantined",
    /* further counts, also in summary.json */
    "delivered_once", "duplicate_rows", "late_sent", "late_dropped", "malformed_sent",
    "malformed_vanished", "replayed", "unjudgeable", "quarantine_unexpected", "send_failed",
    "valid_quarantined", "late_vanished", "crashes", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms",
    "latency_max_ms", "latency_samples", NULL};

static const struct { const char *alias, *name; } sd_count_aliases[] = {
    {"unique", "observed_unique"}, {"rows", "observed_rows"}, {"expected", "expected_in_target"},
    {"duplicates", "duplicated"}, {"loss", "lost"}, {NULL, NULL}};

const char *sd_scenario_count_canonical(const char *name) {
    for (int i = 0; sd_scenario_count_names[i]; i++)
        if (!strcmp(name, sd_scenario_count_names[i])) return sd_scenario_count_names[i];
    for (int i = 0; sd_count_aliases[i].alias; i++)
        if (!strcmp(name, sd_count_aliases[i].alias)) return sd_count_aliases[i].name;
    return NULL;
}

const char *sd_disp_name(sd_disp_t d) {
    switch (d) {
    case SD_DISP_TARGET: return "target";
    case SD_DISP_DROPPED: return "dropped";
    case SD_DISP_QUARANTINE: return "quarantine";
    default: return "?";
    }
}

const char *sd_profile_name(sd_profile_t p) {
    switch (p) {
    case SD_PROFILE_EXACTLY_ONCE: return "exactly-once";
    case SD_PROFILE_AT_LEAST_ONCE: return "at-least-once";
    case SD_PROFILE_AT_MOST_ONCE: return "at-most-once";
    }
    return "?";
}

static const char *const sd_malformed_names[SD_MAL__COUNT] = {
    "truncated", "not-json", "missing-id", "wrong-type", "empty", "invalid-utf8", "oversized", "null-value",
    "duplicate-keys"};

static const char *const sd_inject_names[SD_INJ__COUNT] = {
    "late", "out-of-order", "future", "at-max", "at-watermark", "burst", "skew", "drift", "no-key", "retry-dup"};

const char *sd_inject_name(sd_inject_kind_t k) {
    return (int)k >= 0 && k < SD_INJ__COUNT ? sd_inject_names[k] : "?";
}

const char *sd_malformed_name(sd_malformed_t m) {
    return (int)m >= 0 && m < SD_MAL__COUNT ? sd_malformed_names[m] : "?";
}

const char *sd_op_text(sd_op_t op) {
    static const char *t[] = {"=", "!=", ">=", "<=", ">", "<"};
    return t[op];
}

int sd_op_eval(sd_op_t op, int64_t a, int64_t e) {
    switch (op) {
    case SD_OP_EQ: return a == e;
    case SD_OP_NE: return a != e;
    case SD_OP_GE: return a >= e;
    case SD_OP_LE: return a <= e;
    case SD_OP_GT: return a > e;
    case SD_OP_LT: return a < e;
    }
    return 0;
}

/* ---- kv lists ---- */

void sd_kvlist_add(sd_kvlist_t *l, const char *key, const char *value) {
    l->v = sd_util_xrealloc(l->v, sizeof(*l->v) * (size_t)(l->n + 1));
    l->v[l->n].key = sd_util_strdup(key);
    l->v[l->n].value = sd_util_strdup(value);
    l->n++;
}

const char *sd_kvlist_get(const sd_kvlist_t *l, const char *key) {
    if (!l) return NULL;
    for (int i = l->n - 1; i >= 0; i--)
        if (!strcmp(l->v[i].key, key)) return l->v[i].value;
    return NULL;
}

void sd_kvlist_free(sd_kvlist_t *l) {
    for (int i = 0; i < l->n; i++) { free(l->v[i].key); free(l->v[i].value); }
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

/* ---- tokens ---- */

typedef struct {
    char *text;  /* quotes removed, escapes resolved */
    int line, col;
    int quoted;
} sd_tok_t;

typedef struct {
    sd_tok_t *t;
    int n;
    int line;    /* first physical line */
    char *raw;   /* the logical line as written (continuations joined) */
} sd_toks_t;

typedef struct {
    const char *path;
    char *err;
    size_t errlen;
    const sd_kvlist_t *vars;   /* user variables after overrides */
} sd_pctx_t;

static sd_err_t sd_perr(sd_pctx_t *c, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static sd_err_t sd_perr(sd_pctx_t *c, int line, int col, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sd_err_set(c->err, c->errlen, SD_ERR_SCENARIO, "%s:%d:%d: %s", c->path, line, col, msg);
}

static void sd_toks_free(sd_toks_t *ts) {
    for (int i = 0; i < ts->n; i++) free(ts->t[i].text);
    free(ts->t);
    free(ts->raw);
    memset(ts, 0, sizeof(*ts));
}

static void sd_toks_push(sd_toks_t *ts, sd_buf_t *w, int line, int col, int quoted) {
    ts->t = sd_util_xrealloc(ts->t, sizeof(*ts->t) * (size_t)(ts->n + 1));
    ts->t[ts->n].text = sd_util_strdup(w->data ? w->data : "");
    ts->t[ts->n].line = line;
    ts->t[ts->n].col = col;
    ts->t[ts->n].quoted = quoted;
    ts->n++;
    sd_buf_reset(w);
}

/* Tokenize the logical line that starts at *pos (physical line *lineno).
 * Advances *pos and *lineno past it. Returns SD_OK with ts->n == 0 for a
 * blank or comment line. */
static sd_err_t sd_tokenize(sd_pctx_t *c, const char *text, size_t *pos, int *lineno, sd_toks_t *ts) {
    memset(ts, 0, sizeof(*ts));
    ts->line = *lineno;
    sd_buf_t w, raw;
    sd_buf_init(&w);
    sd_buf_init(&raw);
    size_t i = *pos;
    size_t line_start = i;
    int in_word = 0, quoted = 0, wline = 0, wcol = 0;
    sd_err_t rc = SD_OK;
    for (;;) {
        char ch = text[i];
        int col = (int)(i - line_start) + 1;
        if (ch == 0 || ch == '\n') {
            if (in_word) sd_toks_push(ts, &w, wline, wcol, quoted);
            if (ch == '\n') i++;
            (*lineno)++;
            break;
        }
        if (ch == '\r' && (text[i + 1] == '\n' || text[i + 1] == 0)) { i++; continue; }
        if (ch == '\\' && (text[i + 1] == '\n' || (text[i + 1] == '\r' && text[i + 2] == '\n'))) {
            /* continuation: the word (if any) ends here, the line goes on */
            if (in_word) { sd_toks_push(ts, &w, wline, wcol, quoted); in_word = 0; quoted = 0; }
            i += text[i + 1] == '\n' ? 2 : 3;
            (*lineno)++;
            line_start = i;
            if (raw.len && raw.data[raw.len - 1] != ' ') sd_buf_putc(&raw, ' ');
            continue;
        }
        if (isspace((unsigned char)ch)) {
            if (in_word) { sd_toks_push(ts, &w, wline, wcol, quoted); in_word = 0; quoted = 0; }
            /* the step as recorded: single spaces between words */
            if (raw.len && raw.data[raw.len - 1] != ' ') sd_buf_putc(&raw, ' ');
            i++;
            continue;
        }
        if (ch == '\\' && text[i + 1] && text[i + 1] != '\n' && text[i + 1] != '\r') {
            /* outside quotes a backslash takes the next character literally */
            if (!in_word) { in_word = 1; wline = *lineno; wcol = col; }
            sd_buf_putc(&w, text[i + 1]);
            sd_buf_putc(&raw, ch);
            sd_buf_putc(&raw, text[i + 1]);
            i += 2;
            continue;
        }
        if (ch == '#' && !in_word) {
            while (text[i] && text[i] != '\n') i++;
            continue;
        }
        if (!in_word) { in_word = 1; wline = *lineno; wcol = col; }
        if (ch == '"' || ch == '\'') {
            char q = ch;
            int qline = *lineno, qcol = col;
            quoted = 1;
            sd_buf_putc(&raw, ch);
            i++;
            for (;;) {
                char d = text[i];
                if (d == 0 || d == '\n') {
                    rc = sd_perr(c, qline, qcol, "unterminated %s quote: expected a closing %c before the end of the line",
                                 q == '"' ? "double" : "single", q);
                    goto out;
                }
                sd_buf_putc(&raw, d);
                if (d == q) { i++; break; }
                if (q == '"' && d == '\\' && (text[i + 1] == '"' || text[i + 1] == '\\')) {
                    sd_buf_putc(&w, text[i + 1]);
                    sd_buf_putc(&raw, text[i + 1]);
                    i += 2;
                    continue;
                }
                sd_buf_putc(&w, d);
                i++;
            }
            continue;
        }
        sd_buf_putc(&w, ch);
        sd_buf_putc(&raw, ch);
        i++;
    }
out:
    *pos = i;
    /* trim the raw text */
    {
        char *r = raw.data ? raw.data : "";
        while (*r == ' ') r++;
        size_t n = strlen(r);
        while (n && r[n - 1] == ' ') n--;
        ts->raw = sd_util_strndup(r, n);
    }
    sd_buf_free(&w);
    sd_buf_free(&raw);
    if (rc != SD_OK) sd_toks_free(ts);
    return rc;
}

static int sd_is_runtime_var(const char *name, size_t n) {
    for (int i = 0; sd_scenario_runtime_vars[i]; i++)
        if (strlen(sd_scenario_runtime_vars[i]) == n && !strncmp(sd_scenario_runtime_vars[i], name, n))
            return 1;
    return 0;
}

/* Substitute user variables in a token; keep run-time ones. */
static sd_err_t sd_subst_user(sd_pctx_t *c, sd_tok_t *t) {
    const char *s = t->text;
    if (!strchr(s, '{') && !strchr(s, '}')) return SD_OK;
    sd_buf_t b;
    sd_buf_init(&b);
    for (size_t i = 0; s[i];) {
        if (s[i] == '{' && s[i + 1] == '{') { sd_buf_puts(&b, "{{"); i += 2; continue; }
        if (s[i] == '}' && s[i + 1] == '}') { sd_buf_puts(&b, "}}"); i += 2; continue; }
        if (s[i] == '{') {
            const char *end = strchr(s + i, '}');
            size_t n = end ? (size_t)(end - (s + i + 1)) : 0;
            int ok = end && n > 0;
            for (size_t k = 0; ok && k < n; k++) {
                char ch = s[i + 1 + k];
                if (!(isalnum((unsigned char)ch) || ch == '_' || ch == '-')) ok = 0;
            }
            if (!ok) {
                sd_buf_free(&b);
                return sd_perr(c, t->line, t->col + (t->quoted ? 0 : (int)i),
                               "expected a {variable} name of letters, digits, _ or -, found \"%s\" (write {{ for a literal brace)",
                               s + i);
            }
            char *name = sd_util_strndup(s + i + 1, n);
            const char *v = sd_kvlist_get(c->vars, name);
            if (v) {
                sd_buf_puts(&b, v);
            } else if (sd_is_runtime_var(name, n)) {
                sd_buf_append(&b, s + i, n + 2);
            } else {
                sd_err_t e = sd_perr(c, t->line, t->col + (t->quoted ? 0 : (int)i),
                                     "undefined variable {%s}: expected a `set %s=...` line or --set %s=VALUE "
                                     "(run-time placeholders: run, brokers, proxy, topic, checkpoint, pipelines, here, seed, tag, group, name)",
                                     name, name, name);
                free(name);
                sd_buf_free(&b);
                return e;
            }
            free(name);
            i += n + 2;
            continue;
        }
        if (s[i] == '}') {
            sd_buf_free(&b);
            return sd_perr(c, t->line, t->col + (t->quoted ? 0 : (int)i),
                           "expected a matching { before }, found a lone } (write }} for a literal brace)");
        }
        sd_buf_putc(&b, s[i]);
        i++;
    }
    free(t->text);
    t->text = sd_buf_steal(&b);
    return SD_OK;
}

char *sd_scenario_expand(const char *s, const sd_kvlist_t *vars, char *err, size_t errlen) {
    sd_buf_t b;
    sd_buf_init(&b);
    for (size_t i = 0; s[i];) {
        if (s[i] == '{' && s[i + 1] == '{') { sd_buf_putc(&b, '{'); i += 2; continue; }
        if (s[i] == '}' && s[i + 1] == '}') { sd_buf_putc(&b, '}'); i += 2; continue; }
        if (s[i] == '{') {
            const char *end = strchr(s + i, '}');
            if (!end) break;
            char *name = sd_util_strndup(s + i + 1, (size_t)(end - (s + i + 1)));
            const char *v = sd_kvlist_get(vars, name);
            if (!v) {
                sd_err_set(err, errlen, SD_ERR_SCENARIO, "placeholder {%s} has no value in this run", name);
                free(name);
                sd_buf_free(&b);
                return NULL;
            }
            sd_buf_puts(&b, v);
            free(name);
            i = (size_t)(end - s) + 1;
            continue;
        }
        sd_buf_putc(&b, s[i]);
        i++;
    }
    return sd_buf_steal(&b);
}

/* ---- argument helpers ---- */

typedef struct {
    char key[64];
    sd_op_t op;
    const char *value;  /* points into the token */
    int has_op;
} sd_kvtok_t;

/* Split "key=value", "key>=value", ... ; has_op = 0 for a bare word. */
static void sd_split_kv(const sd_tok_t *t, sd_kvtok_t *kv) {
    memset(kv, 0, sizeof(*kv));
    const char *s = t->text;
    size_t k = 0;
    while (s[k] && (isalnum((unsigned char)s[k]) || s[k] == '_' || s[k] == '-' || s[k] == '.')) k++;
    if (k == 0 || k >= sizeof(kv->key) || !s[k]) { kv->value = s; return; }
    const char *o = s + k;
    sd_op_t op;
    size_t olen;
    if (!strncmp(o, ">=", 2)) { op = SD_OP_GE; olen = 2; }
    else if (!strncmp(o, "<=", 2)) { op = SD_OP_LE; olen = 2; }
    else if (!strncmp(o, "!=", 2)) { op = SD_OP_NE; olen = 2; }
    else if (!strncmp(o, "==", 2)) { op = SD_OP_EQ; olen = 2; }
    else if (*o == '=') { op = SD_OP_EQ; olen = 1; }
    else if (*o == '>') { op = SD_OP_GT; olen = 1; }
    else if (*o == '<') { op = SD_OP_LT; olen = 1; }
    else { kv->value = s; return; }
    memcpy(kv->key, s, k);
    kv->key[k] = 0;
    kv->op = op;
    kv->value = o + olen;
    kv->has_op = 1;
}

/* Column of a token's value part (for messages). */
static int sd_value_col(const sd_tok_t *t, const sd_kvtok_t *kv) {
    if (t->quoted || !kv->has_op) return t->col;
    return t->col + (int)(kv->value - t->text);
}

static sd_err_t sd_need_eq(sd_pctx_t *c, const sd_tok_t *t, const sd_kvtok_t *kv, const char *what) {
    if (kv->op != SD_OP_EQ)
        return sd_perr(c, t->line, t->col + (int)strlen(kv->key), "%s: expected `%s=`, found `%s%s`", what,
                       kv->key, kv->key, sd_op_text(kv->op));
    return SD_OK;
}

static sd_err_t sd_get_duration(sd_pctx_t *c, const sd_tok_t *t, const sd_kvtok_t *kv, const char *what,
                                int64_t *out) {
    if (sd_util_parse_duration(kv->value, out))
        return sd_perr(c, t->line, sd_value_col(t, kv),
                       "%s: expected a duration (250ms, 3s, 10m, 2h), found \"%s\"", what, kv->value);
    return SD_OK;
}

static sd_err_t sd_get_count(sd_pctx_t *c, const sd_tok_t *t, const sd_kvtok_t *kv, const char *what,
                             int64_t *out) {
    if (sd_util_parse_count(kv->value, out))
        return sd_perr(c, t->line, sd_value_col(t, kv),
                       "%s: expected a count (a whole number like 100, 10k or 2M), found \"%s\"", what,
                       kv->value[0] ? kv->value : "nothing");
    return SD_OK;
}

static sd_err_t sd_get_choice(sd_pctx_t *c, const sd_tok_t *t, const sd_kvtok_t *kv, const char *what,
                              const char *const *choices, int *out) {
    for (int i = 0; choices[i]; i++)
        if (!strcmp(kv->value, choices[i])) { *out = i; return SD_OK; }
    sd_buf_t b;
    sd_buf_init(&b);
    for (int i = 0; choices[i]; i++) sd_buf_printf(&b, "%s%s", i ? "|" : "", choices[i]);
    sd_err_t e = sd_perr(c, t->line, sd_value_col(t, kv), "%s: expected %s=%s, found \"%s\"", what,
                         kv->key[0] ? kv->key : "one of", b.data, kv->value);
    sd_buf_free(&b);
    return e;
}

static sd_err_t sd_unknown_key(sd_pctx_t *c, const sd_tok_t *t, const char *what, const char *known) {
    return sd_perr(c, t->line, t->col, "%s: expected one of %s, found \"%s\"", what, known, t->text);
}

static sd_err_t sd_get_rate(sd_pctx_t *c, const sd_tok_t *t, const sd_kvtok_t *kv, double *out) {
    char *end;
    double v = strtod(kv->value, &end);
    if (end != kv->value && v > 0 && (!*end || !strcmp(end, "/s"))) { *out = v; return SD_OK; }
    if (end != kv->value && v > 0 && !strcmp(end, "/m")) { *out = v / 60.0; return SD_OK; }
    return sd_perr(c, t->line, sd_value_col(t, kv), "rate: expected events per second (500/s), found \"%s\"",
                   kv->value);
}

static int sd_parse_signal(const char *s) {
    static const struct { const char *n; int s; } sigs[] = {
        {"KILL", SIGKILL}, {"TERM", SIGTERM}, {"INT", SIGINT}, {"QUIT", SIGQUIT}, {"HUP", SIGHUP},
        {"SIGKILL", SIGKILL}, {"SIGTERM", SIGTERM}, {"SIGINT", SIGINT}, {"SIGQUIT", SIGQUIT}, {"SIGHUP", SIGHUP},
        {NULL, 0}};
    for (int i = 0; sigs[i].n; i++)
        if (!strcasecmp(s, sigs[i].n)) return sigs[i].s;
    return 0;
}

/* ---- scenario ---- */

void sd_scenario_free(sd_scenario_t *sc) {
    if (!sc) return;
    free(sc->path); free(sc->dir); free(sc->name); free(sc->description); free(sc->topic);
    free(sc->log_path); free(sc->log_id_field); free(sc->id_field); free(sc->time_field);
    for (int i = 0; i < sc->nsinks; i++) {
        free(sc->sinks[i].name);
        free(sc->sinks[i].kind);
        sd_kvlist_free(&sc->sinks[i].params);
    }
    for (int i = 0; i < sc->argc; i++) free(sc->argv[i]);
    free(sc->argv);
    for (int v = 0; v < sc->nvariants; v++) {
        for (int i = 0; i < sc->variants[v].argc; i++) free(sc->variants[v].argv[i]);
        free(sc->variants[v].argv);
        free(sc->variants[v].name);
    }
    free(sc->variants);
    sd_kvlist_free(&sc->env);
    free(sc->checkpoint);
    sd_kvlist_free(&sc->producer_props);
    sd_kvlist_free(&sc->vars);
    free(sc->faketime_lib);
    for (int i = 0; i < sc->nsteps; i++) {
        sd_step_t *st = &sc->steps[i];
        free(st->text);
        free(st->sink);
        free(st->variant);
        free(st->skew_key);
        free(st->damage_path);
        free(st->net_errors);
        for (int k = 0; k < st->nexpects; k++) { free(st->expects[k].count); free(st->expects[k].value_count); }
        free(st->expects);
    }
    free(sc->steps);
    free(sc);
}

static const char *const sd_sink_kinds[] = {"sqlite", "kafka", "jsonl", "spark-files", NULL};

static int sd_is_sink_kind(const char *s) {
    for (int i = 0; sd_sink_kinds[i]; i++)
        if (!strcmp(s, sd_sink_kinds[i])) return 1;
    return 0;
}

static int sd_valid_name(const char *s) {
    if (!*s || !isalpha((unsigned char)*s)) return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '-' || *s == '.')) return 0;
    return 1;
}

typedef struct {
    int line;   /* where first declared, 0 = not yet */
} sd_seen_t;

static sd_err_t sd_once(sd_pctx_t *c, sd_seen_t *seen, const sd_tok_t *t, const char *what) {
    if (seen->line)
        return sd_perr(c, t->line, t->col, "%s: expected one `%s` line, found a second (the first is at line %d)",
                       what, what, seen->line);
    seen->line = t->line;
    return SD_OK;
}

/* Parameters a sink kind accepts, and which it requires. */
static sd_err_t sd_parse_sink(sd_pctx_t *c, sd_scenario_t *sc, sd_toks_t *ts, int quarantine) {
    const char *what = quarantine ? "quarantine" : "sink";
    int i = 1;
    if (sc->nsinks >= SD_MAX_SINKS)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "%s: expected at most %d sinks, found more", what, SD_MAX_SINKS);
    char *name = NULL;
    if (i < ts->n && !strchr(ts->t[i].text, '=') && !sd_is_sink_kind(ts->t[i].text)) {
        if (!sd_valid_name(ts->t[i].text))
            return sd_perr(c, ts->t[i].line, ts->t[i].col,
                           "%s: expected a sink name or kind (sqlite, kafka, jsonl, spark-files), found \"%s\"", what, ts->t[i].text);
        name = ts->t[i].text;
        i++;
    }
    if (i >= ts->n)
        return sd_perr(c, ts->t[0].line, ts->t[0].col + (int)strlen(ts->t[0].text) + 1,
                       "%s: expected a sink kind (sqlite, kafka, jsonl, spark-files), found the end of the line", what);
    if (!sd_is_sink_kind(ts->t[i].text))
        return sd_perr(c, ts->t[i].line, ts->t[i].col, "%s: expected a sink kind (sqlite, kafka, jsonl, spark-files), found \"%s\"",
                       what, ts->t[i].text);
    const char *kind = ts->t[i].text;
    int kind_tok = i;
    i++;
    if (!name) name = quarantine ? "quarantine" : "target";
    for (int k = 0; k < sc->nsinks; k++)
        if (!strcmp(sc->sinks[k].name, name))
            return sd_perr(c, ts->t[0].line, ts->t[0].col,
                           "%s: expected a new sink name, found \"%s\" again (declared at line %d; name the second one: `sink NAME %s ...`)",
                           what, name, sc->sinks[k].line, kind);
    sd_sink_decl_t *d = &sc->sinks[sc->nsinks];
    memset(d, 0, sizeof(*d));
    static const char *const sqlite_keys[] = {"db", "query", NULL};
    static const char *const kafka_keys[] = {"topic", "id", "header", "isolation", NULL};
    static const char *const jsonl_keys[] = {"path", "id", "time", NULL};
    const char *const *keys = !strcmp(kind, "sqlite") ? sqlite_keys : !strcmp(kind, "kafka") ? kafka_keys : jsonl_keys;
    const char *known = !strcmp(kind, "sqlite") ? "db=, query=" : !strcmp(kind, "kafka") ? "topic=, id=, header=, isolation=" : "path=, id=, time=";
    /* spark-files takes the same keys as jsonl: path= (the sink folder), id=, time= */
    for (; i < ts->n; i++) {
        sd_kvtok_t kv;
        sd_split_kv(&ts->t[i], &kv);
        int ok = 0;
        for (int k = 0; keys[k]; k++)
            if (kv.has_op && !strcmp(kv.key, keys[k])) ok = 1;
        if (!ok) {
            sd_kvlist_free(&d->params);
            char w[64];
            snprintf(w, sizeof(w), "%s %s", what, kind);
            return sd_unknown_key(c, &ts->t[i], w, known);
        }
        sd_err_t e = sd_need_eq(c, &ts->t[i], &kv, what);
        if (e) { sd_kvlist_free(&d->params); return e; }
        if (!kv.value[0]) {
            sd_kvlist_free(&d->params);
            return sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv), "%s: expected a value after %s=, found nothing", what, kv.key);
        }
        sd_kvlist_add(&d->params, kv.key, kv.value);
    }
    const char *need = !strcmp(kind, "sqlite") ? (sd_kvlist_get(&d->params, "db") ? (sd_kvlist_get(&d->params, "query") ? NULL : "query") : "db")
                     : !strcmp(kind, "kafka") ? (sd_kvlist_get(&d->params, "topic") ? NULL : "topic")
                     : (sd_kvlist_get(&d->params, "path") ? NULL : "path");
    if (need) {
        sd_kvlist_free(&d->params);
        return sd_perr(c, ts->t[kind_tok].line, ts->t[kind_tok].col, "%s %s: expected %s=..., found none", what, kind, need);
    }
    const char *iso = sd_kvlist_get(&d->params, "isolation");
    if (iso && strcmp(iso, "read_committed") && strcmp(iso, "read_uncommitted")) {
        sd_kvlist_free(&d->params);
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "%s kafka: expected isolation=read_committed|read_uncommitted, found \"%s\"", what, iso);
    }
    d->name = sd_util_strdup(name);
    d->kind = sd_util_strdup(kind);
    d->is_quarantine = quarantine;
    d->line = ts->t[0].line;
    sc->nsinks++;
    return SD_OK;
}

static sd_err_t sd_parse_source(sd_pctx_t *c, sd_scenario_t *sc, sd_toks_t *ts) {
    if (ts->n < 2 || strcmp(ts->t[1].text, "kafka"))
        return sd_perr(c, ts->n < 2 ? ts->t[0].line : ts->t[1].line,
                       ts->n < 2 ? ts->t[0].col + 7 : ts->t[1].col, "source: expected `kafka`, found %s%s%s",
                       ts->n < 2 ? "the end of the line" : "\"", ts->n < 2 ? "" : ts->t[1].text, ts->n < 2 ? "" : "\"");
    for (int i = 2; i < ts->n; i++) {
        sd_kvtok_t kv;
        sd_split_kv(&ts->t[i], &kv);
        sd_err_t e;
        int64_t v;
        if (!kv.has_op) return sd_unknown_key(c, &ts->t[i], "source kafka", "topic=, partitions=, replication=, exact=");
        if ((e = sd_need_eq(c, &ts->t[i], &kv, "source"))) return e;
        if (!strcmp(kv.key, "topic")) {
            if (!kv.value[0] || strspn(kv.value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-{}") != strlen(kv.value))
                return sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv),
                               "source: expected a topic name of letters, digits, '.', '_' or '-', found \"%s\"", kv.value);
            free(sc->topic);
            sc->topic = sd_util_strdup(kv.value);
        } else if (!strcmp(kv.key, "partitions")) {
            if ((e = sd_get_count(c, &ts->t[i], &kv, "source partitions", &v))) return e;
            if (v < 1 || v > 1000) return sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv), "source: expected 1 to 1000 partitions, found %lld", (long long)v);
            sc->partitions = (int)v;
        } else if (!strcmp(kv.key, "replication")) {
            if ((e = sd_get_count(c, &ts->t[i], &kv, "source replication", &v))) return e;
            if (v < 1 || v > 10) return sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv), "source: expected replication 1 to 10, found %lld", (long long)v);
            sc->replication = (int)v;
        } else if (!strcmp(kv.key, "exact")) {
            static const char *const yn[] = {"no", "yes", NULL};
            if ((e = sd_get_choice(c, &ts->t[i], &kv, "source", yn, &sc->exact_topic))) return e;
        } else {
            return sd_unknown_key(c, &ts->t[i], "source kafka", "topic=, partitions=, replication=, exact=");
        }
    }
    if (!sc->topic) return sd_perr(c, ts->t[0].line, ts->t[0].col, "source kafka: expected topic=NAME, found none");
    sc->has_source = 1;
    sc->source_line = ts->t[0].line;
    return SD_OK;
}

static sd_err_t sd_parse_events(sd_pctx_t *c, sd_scenario_t *sc, sd_toks_t *ts) {
    int i = 1;
    sc->events_kind = SD_EVENTS_PARCEL;
    if (i < ts->n && !strchr(ts->t[i].text, '=')) {
        if (strcmp(ts->t[i].text, "parcel-scans"))
            return sd_perr(c, ts->t[i].line, ts->t[i].col,
                           "events: expected the generator `parcel-scans` or log=PATH, found \"%s\"", ts->t[i].text);
        i++;
    }
    for (; i < ts->n; i++) {
        sd_kvtok_t kv;
        sd_split_kv(&ts->t[i], &kv);
        sd_err_t e;
        int64_t v;
        const char *known = "seed=, start=, step=, parcels=, locations=, log=, id=";
        if (!kv.has_op) return sd_unknown_key(c, &ts->t[i], "events", known);
        if ((e = sd_need_eq(c, &ts->t[i], &kv, "events"))) return e;
        if (!strcmp(kv.key, "seed")) {
            char *end;
            unsigned long long s = strtoull(kv.value, &end, 10);
            if (!isdigit((unsigned char)kv.value[0]) || *end)
                return sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv), "events: expected seed=NUMBER, found \"%s\"", kv.value);
            sc->seed = s;
            sc->has_seed = 1;
        } else if (!strcmp(kv.key, "start") && !strcmp(kv.value, "now")) {
            sc->start_now = 1;
        } else if (!strcmp(kv.key, "start")) {
            if (sd_util_parse_iso8601(kv.value, &sc->start_ms))
                return sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv),
                               "events: expected start=YYYY-MM-DDTHH:MM:SSZ or start=now, found \"%s\"", kv.value);
        } else if (!strcmp(kv.key, "step")) {
            if ((e = sd_get_duration(c, &ts->t[i], &kv, "events step", &sc->step_ms))) return e;
        } else if (!strcmp(kv.key, "parcels")) {
            if ((e = sd_get_count(c, &ts->t[i], &kv, "events parcels", &v))) return e;
            if (v < 1) return sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv), "events: expected parcels >= 1, found 0");
            sc->parcels = (int)v;
        } else if (!strcmp(kv.key, "locations")) {
            if ((e = sd_get_count(c, &ts->t[i], &kv, "events locations", &v))) return e;
            if (v < 1) return sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv), "events: expected locations >= 1, found 0");
            sc->locations = (int)v;
        } else if (!strcmp(kv.key, "log")) {
            sc->events_kind = SD_EVENTS_LOG;
            free(sc->log_path);
            sc->log_path = sd_util_strdup(kv.value);
        } else if (!strcmp(kv.key, "id")) {
            free(sc->log_id_field);
            sc->log_id_field = sd_util_strdup(kv.value);
        } else {
            return sd_unknown_key(c, &ts->t[i], "events", known);
        }
    }
    if (sc->events_kind == SD_EVENTS_LOG && !sc->log_id_field)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "events log: expected id=FIELD (the field that carries each event's id), found none");
    sc->has_events = 1;
    sc->events_line = ts->t[0].line;
    return SD_OK;
}

static sd_err_t sd_parse_contract(sd_pctx_t *c, sd_scenario_t *sc, sd_toks_t *ts) {
    for (int i = 1; i < ts->n; i++) {
        sd_kvtok_t kv;
        sd_split_kv(&ts->t[i], &kv);
        sd_err_t e;
        int v;
        const char *known = "id=, time=, watermark=, late=, malformed=, duplicates=, future=, schema=, profile=";
        if (!kv.has_op) return sd_unknown_key(c, &ts->t[i], "contract", known);
        if ((e = sd_need_eq(c, &ts->t[i], &kv, "contract"))) return e;
        if (!strcmp(kv.key, "id") || !strcmp(kv.key, "time")) {
            if (!kv.value[0] || strspn(kv.value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != strlen(kv.value))
                return sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv),
                               "contract: expected a field name of letters, digits, '_', '-' or '.', found \"%s\"", kv.value);
            char **dst = !strcmp(kv.key, "id") ? &sc->id_field : &sc->time_field;
            free(*dst);
            *dst = sd_util_strdup(kv.value);
        } else if (!strcmp(kv.key, "watermark")) {
            if ((e = sd_get_duration(c, &ts->t[i], &kv, "contract watermark", &sc->watermark_ms))) return e;
        } else if (!strcmp(kv.key, "late")) {
            static const char *const ch[] = {"accept", "drop", "quarantine", NULL};
            if ((e = sd_get_choice(c, &ts->t[i], &kv, "contract", ch, &v))) return e;
            sc->late_disp = v == 0 ? SD_DISP_TARGET : v == 1 ? SD_DISP_DROPPED : SD_DISP_QUARANTINE;
        } else if (!strcmp(kv.key, "malformed")) {
            static const char *const ch[] = {"quarantine", "drop", NULL};
            if ((e = sd_get_choice(c, &ts->t[i], &kv, "contract", ch, &v))) return e;
            sc->malformed_disp = v == 0 ? SD_DISP_QUARANTINE : SD_DISP_DROPPED;
        } else if (!strcmp(kv.key, "future")) {
            static const char *const ch[] = {"quarantine", "accept", NULL};
            if ((e = sd_get_choice(c, &ts->t[i], &kv, "contract", ch, &v))) return e;
            sc->future_disp = v == 0 ? SD_DISP_QUARANTINE : SD_DISP_TARGET;
        } else if (!strcmp(kv.key, "schema")) {
            static const char *const ch[] = {"lenient", "strict", NULL};
            if ((e = sd_get_choice(c, &ts->t[i], &kv, "contract", ch, &v))) return e;
            sc->drift_disp = v == 0 ? SD_DISP_TARGET : SD_DISP_QUARANTINE;
        } else if (!strcmp(kv.key, "duplicates")) {
            static const char *const ch[] = {"drop", "keep", NULL};
            if ((e = sd_get_choice(c, &ts->t[i], &kv, "contract", ch, &sc->keep_duplicates))) return e;
        } else if (!strcmp(kv.key, "profile")) {
            static const char *const ch[] = {"exactly-once", "at-least-once", "at-most-once", NULL};
            if ((e = sd_get_choice(c, &ts->t[i], &kv, "contract", ch, &v))) return e;
            sc->profile = (sd_profile_t)v;
        } else {
            return sd_unknown_key(c, &ts->t[i], "contract", known);
        }
    }
    return SD_OK;
}

static sd_err_t sd_parse_progress(sd_pctx_t *c, sd_scenario_t *sc, sd_toks_t *ts) {
    if (ts->n < 2)
        return sd_perr(c, ts->t[0].line, ts->t[0].col + 9, "progress: expected markers, spark checkpoint=PATH, sink or none, found the end of the line");
    const char *w = ts->t[1].text;
    if (!strcmp(w, "markers")) sc->progress = SD_PROGRESS_MARKERS;
    else if (!strcmp(w, "sink")) sc->progress = SD_PROGRESS_SINK;
    else if (!strcmp(w, "none")) sc->progress = SD_PROGRESS_NONE;
    else if (!strcmp(w, "spark")) sc->progress = SD_PROGRESS_SPARK;
    else
        return sd_perr(c, ts->t[1].line, ts->t[1].col, "progress: expected markers, spark, sink or none, found \"%s\"", w);
    for (int i = 2; i < ts->n; i++) {
        sd_kvtok_t kv;
        sd_split_kv(&ts->t[i], &kv);
        if (sc->progress == SD_PROGRESS_SPARK && kv.has_op && kv.op == SD_OP_EQ && !strcmp(kv.key, "checkpoint")) {
            free(sc->checkpoint);
            sc->checkpoint = sd_util_strdup(kv.value);
        } else if (sc->progress == SD_PROGRESS_SPARK && kv.has_op && kv.op == SD_OP_EQ && !strcmp(kv.key, "batches")) {
            static const char *const ch[] = {"micro", "real-time", NULL};
            sd_err_t e = sd_get_choice(c, &ts->t[i], &kv, "progress spark", ch, &sc->spark_realtime);
            if (e) return e;
        } else {
            return sd_unknown_key(c, &ts->t[i], "progress", sc->progress == SD_PROGRESS_SPARK ? "checkpoint=, batches=" : "nothing more");
        }
    }
    if (sc->progress == SD_PROGRESS_SPARK && !sc->checkpoint) sc->checkpoint = sd_util_strdup("{checkpoint}");
    return SD_OK;
}

static sd_err_t sd_parse_kvs(sd_pctx_t *c, sd_toks_t *ts, const char *what, sd_kvlist_t *into, int envstyle) {
    if (ts->n < 2)
        return sd_perr(c, ts->t[0].line, ts->t[0].col + (int)strlen(ts->t[0].text) + 1,
                       "%s: expected NAME=VALUE, found the end of the line", what);
    for (int i = 1; i < ts->n; i++) {
        const char *s = ts->t[i].text;
        const char *eq = strchr(s, '=');
        int ok = eq && eq != s;
        for (const char *p = s; ok && p < eq; p++)
            if (!(isalnum((unsigned char)*p) || *p == '_' || (!envstyle && (*p == '.' || *p == '-')))) ok = 0;
        if (!ok)
            return sd_perr(c, ts->t[i].line, ts->t[i].col, "%s: expected NAME=VALUE, found \"%s\"", what, s);
        char *k = sd_util_strndup(s, (size_t)(eq - s));
        sd_kvlist_add(into, k, eq + 1);
        free(k);
    }
    return SD_OK;
}

/* ---- steps ---- */

static sd_step_t *sd_new_step(sd_scenario_t *sc, sd_step_kind_t kind, sd_toks_t *ts) {
    sc->steps = sd_util_xrealloc(sc->steps, sizeof(*sc->steps) * (size_t)(sc->nsteps + 1));
    sd_step_t *st = &sc->steps[sc->nsteps++];
    memset(st, 0, sizeof(*st));
    st->kind = kind;
    st->line = ts->line;
    st->text = sd_util_strdup(ts->raw);
    st->after_ms = -1;
    return st;
}

static sd_err_t sd_parse_timeout(sd_pctx_t *c, const sd_tok_t *t, const sd_kvtok_t *kv, sd_step_t *st) {
    sd_err_t e = sd_need_eq(c, t, kv, "timeout");
    if (e) return e;
    if ((e = sd_get_duration(c, t, kv, "timeout", &st->timeout_ms))) return e;
    if (st->timeout_ms <= 0) return sd_perr(c, t->line, sd_value_col(t, kv), "timeout: expected a duration above zero, found \"%s\"", kv->value);
    return SD_OK;
}

/* mid-batch | at-boundary | now: where a kill or a pause lands. 1 when
 * the word was one of them. */
static int sd_landing_word(const sd_kvtok_t *kv, sd_step_t *st) {
    if (kv->has_op) return 0;
    if (!strcmp(kv->value, "mid-batch")) st->mid_batch = 1;
    else if (!strcmp(kv->value, "at-boundary")) st->mid_batch = 2;
    else if (!strcmp(kv->value, "now")) st->mid_batch = 0;
    else return 0;
    return 1;
}

static sd_err_t sd_parse_step(sd_pctx_t *c, sd_scenario_t *sc, sd_toks_t *ts) {
    const char *w = ts->t[0].text;
    sd_err_t e;
    sd_kvtok_t kv;
    sd_step_t *st;
    int endcol = ts->t[ts->n - 1].col + (int)strlen(ts->t[ts->n - 1].text);

    if (!strcmp(w, "pause")) {
        st = sd_new_step(sc, SD_STEP_PAUSE, ts);
        st->timeout_ms = 60000;
        for (int i = 1; i < ts->n; i++) {
            sd_split_kv(&ts->t[i], &kv);
            if (sd_landing_word(&kv, st)) continue;
            if (kv.has_op && !strcmp(kv.key, "for")) {
                if ((e = sd_need_eq(c, &ts->t[i], &kv, "pause")) || (e = sd_get_duration(c, &ts->t[i], &kv, "pause for", &st->delay_ms))) return e;
            } else if (kv.has_op && !strcmp(kv.key, "after")) {
                if ((e = sd_need_eq(c, &ts->t[i], &kv, "pause")) || (e = sd_get_duration(c, &ts->t[i], &kv, "pause after", &st->after_ms))) return e;
            } else if (kv.has_op && !strcmp(kv.key, "timeout")) {
                if ((e = sd_parse_timeout(c, &ts->t[i], &kv, st))) return e;
            } else {
                return sd_unknown_key(c, &ts->t[i], "pause", "mid-batch, at-boundary, now, for=, after=, timeout=");
            }
        }
        return SD_OK;
    }
    if (!strcmp(w, "start") || !strcmp(w, "stop") || !strcmp(w, "restart") || !strcmp(w, "resume")) {
        sd_step_kind_t k = !strcmp(w, "start") ? SD_STEP_START : !strcmp(w, "stop") ? SD_STEP_STOP
                         : !strcmp(w, "restart") ? SD_STEP_RESTART : SD_STEP_RESUME;
        st = sd_new_step(sc, k, ts);
        st->timeout_ms = k == SD_STEP_STOP || k == SD_STEP_RESTART ? 10000 : 30000;
        for (int i = 1; i < ts->n; i++) {
            sd_split_kv(&ts->t[i], &kv);
            if (kv.has_op && !strcmp(kv.key, "timeout")) {
                if ((e = sd_parse_timeout(c, &ts->t[i], &kv, st))) return e;
            } else if (k == SD_STEP_RESTART && kv.has_op && !strcmp(kv.key, "delay")) {
                if ((e = sd_need_eq(c, &ts->t[i], &kv, w)) || (e = sd_get_duration(c, &ts->t[i], &kv, "restart delay", &st->delay_ms))) return e;
            } else if ((k == SD_STEP_RESTART || k == SD_STEP_START) && kv.has_op && !strcmp(kv.key, "as")) {
                if ((e = sd_need_eq(c, &ts->t[i], &kv, w))) return e;
                int found = -1;
                for (int v = 0; v < sc->nvariants; v++)
                    if (!strcmp(sc->variants[v].name, kv.value)) found = v;
                if (found < 0)
                    return sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv), "%s: expected a `variant %s ...` line in the header, found none",
                                   w, kv.value);
                free(st->variant);
                st->variant = sd_util_strdup(kv.value);
            } else {
                return sd_unknown_key(c, &ts->t[i], w, k == SD_STEP_RESTART ? "timeout=, delay=, as=" : k == SD_STEP_START ? "timeout=, as=" : "timeout=");
            }
        }
        return SD_OK;
    }
    if (!strcmp(w, "kill")) {
        st = sd_new_step(sc, SD_STEP_KILL, ts);
        st->signal = SIGKILL;
        st->timeout_ms = 60000;
        for (int i = 1; i < ts->n; i++) {
            sd_split_kv(&ts->t[i], &kv);
            if (sd_landing_word(&kv, st)) continue;
            if (kv.has_op && !strcmp(kv.key, "signal")) {
                if ((e = sd_need_eq(c, &ts->t[i], &kv, "kill"))) return e;
                st->signal = sd_parse_signal(kv.value);
                if (!st->signal)
                    return sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv), "kill: expected signal=KILL|TERM|INT|QUIT|HUP, found \"%s\"", kv.value);
            } else if (kv.has_op && !strcmp(kv.key, "timeout")) {
                if ((e = sd_parse_timeout(c, &ts->t[i], &kv, st))) return e;
            } else if (kv.has_op && !strcmp(kv.key, "after")) {
                if ((e = sd_need_eq(c, &ts->t[i], &kv, "kill")) || (e = sd_get_duration(c, &ts->t[i], &kv, "kill after", &st->after_ms))) return e;
            } else {
                return sd_unknown_key(c, &ts->t[i], "kill", "mid-batch, at-boundary, now, signal=, after=, timeout=");
            }
        }
        return SD_OK;
    }
    if (!strcmp(w, "produce") || !strcmp(w, "replay")) {
        int is_replay = !strcmp(w, "replay");
        st = sd_new_step(sc, is_replay ? SD_STEP_REPLAY : SD_STEP_PRODUCE, ts);
        st->timeout_ms = 120000;
        st->range_partition = -1;
        if (ts->n < 2)
            return sd_perr(c, ts->t[0].line, endcol + 1, "%s: expected a count (e.g. %s 100), found the end of the line", w, w);
        sd_split_kv(&ts->t[1], &kv);
        int first = 2;
        if (is_replay && kv.has_op && !strcmp(kv.key, "range")) {
            int p = -1, used = 0;
            long long a = -1, b2 = -1;
            if (sscanf(kv.value, "%d:%lld-%lld%n", &p, &a, &b2, &used) != 3 || kv.value[used] || p < 0 || a < 0 || b2 <= a)
                return sd_perr(c, ts->t[1].line, sd_value_col(&ts->t[1], &kv),
                               "replay: expected range=PARTITION:FROM-TO (offsets FROM to TO-1, e.g. range=0:10-40), found \"%s\"", kv.value);
            st->range_partition = p;
            st->range_from = a;
            st->range_to = b2;
            st->count = b2 - a;
        } else {
            if (kv.has_op) return sd_perr(c, ts->t[1].line, ts->t[1].col, "%s: expected a count first%s, found \"%s\"", w,
                                          is_replay ? " (or range=P:FROM-TO)" : "", ts->t[1].text);
            if ((e = sd_get_count(c, &ts->t[1], &kv, w, &st->count))) return e;
            if (st->count < 1) return sd_perr(c, ts->t[1].line, ts->t[1].col, "%s: expected a count of at least 1, found 0", w);
        }
        for (int i = first; i < ts->n; i++) {
            sd_split_kv(&ts->t[i], &kv);
            if (kv.has_op && !strcmp(kv.key, "rate")) {
                if ((e = sd_need_eq(c, &ts->t[i], &kv, w)) || (e = sd_get_rate(c, &ts->t[i], &kv, &st->rate))) return e;
            } else if (kv.has_op && !strcmp(kv.key, "timeout")) {
                if ((e = sd_parse_timeout(c, &ts->t[i], &kv, st))) return e;
            } else if (!is_replay && !kv.has_op && !strcmp(kv.value, "background")) {
                st->background = 1;
            } else if (is_replay && kv.has_op && !strcmp(kv.key, "from")) {
                static const char *const ch[] = {"first", "last", NULL};
                if ((e = sd_need_eq(c, &ts->t[i], &kv, w)) || (e = sd_get_choice(c, &ts->t[i], &kv, "replay", ch, &st->replay_from_last))) return e;
            } else {
                return sd_unknown_key(c, &ts->t[i], w, is_replay ? "rate=, from=, timeout=" : "rate=, background, timeout=");
            }
        }
        if (st->background && st->rate <= 0)
            return sd_perr(c, ts->t[0].line, ts->t[0].col, "produce: expected rate=R/s with background (a background send needs a pace), found none");
        return SD_OK;
    }
    if (!strcmp(w, "inject")) {
        st = sd_new_step(sc, SD_STEP_INJECT, ts);
        st->timeout_ms = 60000;
        st->late_by_ms = 3600000;
        st->ahead_ms = 7200000;
        st->offline_ms = 30 * 60000;
        st->within_ms = -1; /* half the watermark delay */
        int any = 0;
        const char *known = "malformed=N, late=N, out-of-order=N, future=N, at-max=N, at-watermark=N, burst=N, skew=N, "
                            "drift=N, no-key=N, retry-dup=N, by=, within=, ahead=, offline=, key=, as=, kinds=, timeout=";
        for (int i = 1; i < ts->n; i++) {
            sd_split_kv(&ts->t[i], &kv);
            int kind = -1;
            for (int k = 0; kv.has_op && k < SD_INJ__COUNT; k++)
                if (!strcmp(kv.key, sd_inject_names[k])) kind = k;
            if (kind >= 0 || (kv.has_op && !strcmp(kv.key, "malformed"))) {
                int64_t n;
                if ((e = sd_need_eq(c, &ts->t[i], &kv, "inject"))) return e;
                if ((e = sd_get_count(c, &ts->t[i], &kv, "inject", &n))) return e;
                if (kind >= 0) st->inject[kind] = n;
                else st->malformed = n;
                if (n > 0) any = 1;
            } else if (kv.has_op && (!strcmp(kv.key, "by") || !strcmp(kv.key, "within") || !strcmp(kv.key, "ahead") ||
                                     !strcmp(kv.key, "offline"))) {
                int64_t *dst = !strcmp(kv.key, "by") ? &st->late_by_ms : !strcmp(kv.key, "within") ? &st->within_ms
                             : !strcmp(kv.key, "ahead") ? &st->ahead_ms : &st->offline_ms;
                char what[80]; /* "inject " and a key of up to 63 bytes */
                snprintf(what, sizeof(what), "inject %s", kv.key);
                if ((e = sd_need_eq(c, &ts->t[i], &kv, "inject")) || (e = sd_get_duration(c, &ts->t[i], &kv, what, dst))) return e;
                if (*dst <= 0) return sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv), "inject: expected %s= above zero, found \"%s\"", kv.key, kv.value);
            } else if (kv.has_op && !strcmp(kv.key, "key")) {
                if ((e = sd_need_eq(c, &ts->t[i], &kv, "inject"))) return e;
                free(st->skew_key);
                st->skew_key = sd_util_strdup(kv.value);
            } else if (kv.has_op && !strcmp(kv.key, "as")) {
                static const char *const ch[] = {"extra-field", "type-change", NULL};
                if ((e = sd_need_eq(c, &ts->t[i], &kv, "inject")) || (e = sd_get_choice(c, &ts->t[i], &kv, "inject drift", ch, &st->drift_type))) return e;
            } else if (kv.has_op && !strcmp(kv.key, "kinds")) {
                if ((e = sd_need_eq(c, &ts->t[i], &kv, "inject"))) return e;
                char *list = sd_util_strdup(kv.value), *save = NULL;
                for (char *k = strtok_r(list, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
                    int found = -1;
                    for (int m = 0; m < SD_MAL__COUNT; m++)
                        if (!strcmp(k, sd_malformed_names[m])) found = m;
                    if (found < 0) {
                        e = sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv),
                                    "inject kinds: expected truncated, not-json, missing-id, wrong-type, empty, invalid-utf8, oversized, "
                                    "null-value or duplicate-keys, found \"%s\"", k);
                        free(list);
                        return e;
                    }
                    st->malformed_kinds |= 1 << found;
                }
                free(list);
            } else if (kv.has_op && !strcmp(kv.key, "timeout")) {
                if ((e = sd_parse_timeout(c, &ts->t[i], &kv, st))) return e;
            } else {
                return sd_unknown_key(c, &ts->t[i], "inject", known);
            }
        }
        st->late = st->inject[SD_INJ_LATE];
        if (!any)
            return sd_perr(c, ts->t[0].line, ts->n > 1 ? ts->t[1].col : endcol + 1, "inject: expected malformed=N or late=N (or another kind), found %s",
                           ts->n > 1 ? "no count above zero" : "the end of the line");
        return SD_OK;
    }
    if (!strcmp(w, "await")) {
        if (ts->n < 2)
            return sd_perr(c, ts->t[0].line, endcol + 1, "await: expected `sink`, `quiescent` or `batches`, found the end of the line");
        const char *what = ts->t[1].text;
        if (!strcmp(what, "sink")) {
            st = sd_new_step(sc, SD_STEP_AWAIT_SINK, ts);
            st->timeout_ms = 60000;
            int have_rows = 0;
            for (int i = 2; i < ts->n; i++) {
                sd_split_kv(&ts->t[i], &kv);
                if (kv.has_op && !strcmp(kv.key, "rows")) {
                    st->op = kv.op;
                    if ((e = sd_get_count(c, &ts->t[i], &kv, "await sink rows", &st->rows))) return e;
                    have_rows = 1;
                } else if (kv.has_op && !strcmp(kv.key, "timeout")) {
                    if ((e = sd_parse_timeout(c, &ts->t[i], &kv, st))) return e;
                } else if (!kv.has_op && i == 2 && sd_valid_name(kv.value)) {
                    st->sink = sd_util_strdup(kv.value);
                } else {
                    return sd_unknown_key(c, &ts->t[i], "await sink", "a sink name, rows>=N, timeout=");
                }
            }
            if (!have_rows)
                return sd_perr(c, ts->t[0].line, endcol + 1, "await sink: expected rows>=N (or rows=N, rows>N), found %s",
                               ts->n > 2 ? "no rows condition" : "the end of the line");
            if (!st->sink) st->sink = sd_util_strdup("target");
            return SD_OK;
        }
        if (!strcmp(what, "quiescent")) {
            st = sd_new_step(sc, SD_STEP_AWAIT_QUIESCENT, ts);
            st->timeout_ms = 60000;
            st->quiet_ms = 3000;
            for (int i = 2; i < ts->n; i++) {
                sd_split_kv(&ts->t[i], &kv);
                if (!kv.has_op && i == 2) {
                    if ((e = sd_get_duration(c, &ts->t[i], &kv, "await quiescent", &st->quiet_ms))) return e;
                } else if (kv.has_op && !strcmp(kv.key, "timeout")) {
                    if ((e = sd_parse_timeout(c, &ts->t[i], &kv, st))) return e;
                } else if (kv.has_op && !strcmp(kv.key, "for")) {
                    if ((e = sd_need_eq(c, &ts->t[i], &kv, "await")) || (e = sd_get_duration(c, &ts->t[i], &kv, "await quiescent for", &st->quiet_ms))) return e;
                } else {
                    return sd_unknown_key(c, &ts->t[i], "await quiescent", "a duration, timeout=");
                }
            }
            if (st->quiet_ms <= 0) return sd_perr(c, ts->t[0].line, ts->t[1].col, "await quiescent: expected a quiet period above zero, found 0");
            return SD_OK;
        }
        if (!strcmp(what, "batches")) {
            st = sd_new_step(sc, SD_STEP_AWAIT_BATCHES, ts);
            st->timeout_ms = 60000;
            int have = 0;
            for (int i = 2; i < ts->n; i++) {
                sd_split_kv(&ts->t[i], &kv);
                if (!kv.has_op && i == 2) {
                    st->op = SD_OP_GE;
                    if ((e = sd_get_count(c, &ts->t[i], &kv, "await batches", &st->rows))) return e;
                    have = 1;
                } else if (kv.has_op && !strcmp(kv.key, "timeout")) {
                    if ((e = sd_parse_timeout(c, &ts->t[i], &kv, st))) return e;
                } else {
                    return sd_unknown_key(c, &ts->t[i], "await batches", "a count, timeout=");
                }
            }
            if (!have) return sd_perr(c, ts->t[0].line, endcol + 1, "await batches: expected a count of committed batches, found the end of the line");
            return SD_OK;
        }
        return sd_perr(c, ts->t[1].line, ts->t[1].col, "await: expected `sink`, `quiescent` or `batches`, found \"%s\"", what);
    }
    if (!strcmp(w, "sleep")) {
        st = sd_new_step(sc, SD_STEP_SLEEP, ts);
        if (ts->n != 2)
            return sd_perr(c, ts->t[0].line, ts->n < 2 ? endcol + 1 : ts->t[2].col, "sleep: expected one duration, found %s",
                           ts->n < 2 ? "the end of the line" : "more words");
        sd_split_kv(&ts->t[1], &kv);
        if ((e = sd_get_duration(c, &ts->t[1], &kv, "sleep", &st->timeout_ms))) return e;
        return SD_OK;
    }
    if (!strcmp(w, "clock")) {
        st = sd_new_step(sc, SD_STEP_CLOCK, ts);
        if (ts->n != 2)
            return sd_perr(c, ts->t[0].line, ts->n < 2 ? endcol + 1 : ts->t[2].col,
                           "clock: expected one of offset=+2h, jump=-10m, rate=2x, reset, found %s", ts->n < 2 ? "the end of the line" : "more words");
        sd_split_kv(&ts->t[1], &kv);
        if (!kv.has_op && !strcmp(kv.value, "reset")) {
            st->clock_op = 3;
        } else if (kv.has_op && (!strcmp(kv.key, "offset") || !strcmp(kv.key, "jump"))) {
            st->clock_op = !strcmp(kv.key, "offset") ? 0 : 1;
            const char *v = kv.value;
            int neg = *v == '-';
            if (*v == '+' || *v == '-') v++;
            if (sd_util_parse_duration(v, &st->clock_ms))
                return sd_perr(c, ts->t[1].line, sd_value_col(&ts->t[1], &kv), "clock %s: expected a signed duration (+2h, -10m), found \"%s\"", kv.key, kv.value);
            if (neg) st->clock_ms = -st->clock_ms;
        } else if (kv.has_op && !strcmp(kv.key, "rate")) {
            char *end;
            st->clock_op = 2;
            st->clock_rate = strtod(kv.value, &end);
            if (end == kv.value || st->clock_rate <= 0 || (*end && strcmp(end, "x")))
                return sd_perr(c, ts->t[1].line, sd_value_col(&ts->t[1], &kv), "clock rate: expected a factor above zero (2x, 0.5x), found \"%s\"", kv.value);
        } else {
            return sd_unknown_key(c, &ts->t[1], "clock", "offset=, jump=, rate=, reset");
        }
        return SD_OK;
    }
    if (!strcmp(w, "damage")) {
        st = sd_new_step(sc, SD_STEP_DAMAGE, ts);
        int i = 1;
        if (i < ts->n && !strcmp(ts->t[i].text, "spark")) {
            i++;
            if (i >= ts->n) return sd_perr(c, ts->t[0].line, endcol + 1, "damage spark: expected commit-marker, offsets or state, found the end of the line");
            const char *what = ts->t[i].text;
            if (!strcmp(what, "commit-marker")) st->damage_what = 0;
            else if (!strcmp(what, "offsets")) st->damage_what = 1;
            else if (!strcmp(what, "state")) st->damage_what = 2;
            else return sd_perr(c, ts->t[i].line, ts->t[i].col, "damage spark: expected commit-marker, offsets or state, found \"%s\"", what);
            for (i++; i < ts->n; i++) {
                sd_split_kv(&ts->t[i], &kv);
                if (!kv.has_op && !strcmp(kv.value, "truncate") && st->damage_what == 1) continue;
                if (kv.has_op && !strcmp(kv.key, "checkpoint")) {
                    free(st->damage_path);
                    st->damage_path = sd_util_strdup(kv.value);
                } else {
                    return sd_unknown_key(c, &ts->t[i], "damage spark", "checkpoint=PATH (and truncate for offsets)");
                }
            }
            return SD_OK;
        }
        for (; i < ts->n; i++) {
            sd_split_kv(&ts->t[i], &kv);
            if (kv.has_op && !strcmp(kv.key, "file")) {
                free(st->damage_path);
                st->damage_path = sd_util_strdup(kv.value);
            } else if (!kv.has_op && (!strcmp(kv.value, "delete") || !strcmp(kv.value, "truncate"))) {
                st->damage_what = !strcmp(kv.value, "delete") ? 3 : 4;
            } else {
                return sd_unknown_key(c, &ts->t[i], "damage", "spark commit-marker|offsets truncate|state, or file=PATH delete|truncate");
            }
        }
        if (!st->damage_path || st->damage_what < 3)
            return sd_perr(c, ts->t[0].line, ts->t[0].col, "damage: expected `spark commit-marker|offsets truncate|state` or `file=PATH delete|truncate`, found %s",
                           ts->n > 1 ? "neither" : "nothing");
        return SD_OK;
    }
    if (!strcmp(w, "network")) {
        st = sd_new_step(sc, SD_STEP_NETWORK, ts);
        int have = 0;
        for (int i = 1; i < ts->n; i++) {
            sd_split_kv(&ts->t[i], &kv);
            if (!have && !kv.has_op && (!strcmp(kv.value, "reset") || !strcmp(kv.value, "blackhole"))) {
                st->net_op = !strcmp(kv.value, "reset") ? 1 : 2;
                have = 1;
            } else if (!have && kv.has_op && !strcmp(kv.key, "latency")) {
                if ((e = sd_need_eq(c, &ts->t[i], &kv, "network")) || (e = sd_get_duration(c, &ts->t[i], &kv, "network latency", &st->net_value))) return e;
                st->net_op = 0;
                have = 1;
            } else if (!have && kv.has_op && !strcmp(kv.key, "bandwidth")) {
                char *end;
                double v = strtod(kv.value, &end);
                double mult = !strcmp(end, "B/s") ? 1 : !strcmp(end, "KB/s") ? 1024 : !strcmp(end, "MB/s") ? 1048576 : -1;
                if (end == kv.value || v <= 0 || mult < 0)
                    return sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv), "network bandwidth: expected a rate (200KB/s, 1MB/s), found \"%s\"", kv.value);
                st->net_op = 3;
                st->net_value = (int64_t)(v * mult);
                have = 1;
            } else if (!have && kv.has_op && !strcmp(kv.key, "errors")) {
                if ((e = sd_need_eq(c, &ts->t[i], &kv, "network"))) return e;
                st->net_op = 4;
                st->net_errors = sd_util_strdup(kv.value);
                st->net_value = 1;
                have = 1;
            } else if (kv.has_op && !strcmp(kv.key, "count") && st->net_op == 4) {
                if ((e = sd_need_eq(c, &ts->t[i], &kv, "network")) || (e = sd_get_count(c, &ts->t[i], &kv, "network count", &st->net_value))) return e;
            } else if (kv.has_op && !strcmp(kv.key, "for")) {
                if ((e = sd_need_eq(c, &ts->t[i], &kv, "network")) || (e = sd_get_duration(c, &ts->t[i], &kv, "network for", &st->for_ms))) return e;
            } else {
                return sd_unknown_key(c, &ts->t[i], "network", "latency=D, reset, blackhole, bandwidth=RATE, errors=API:ERROR, count=N, for=D");
            }
        }
        if (!have) return sd_perr(c, ts->t[0].line, endcol + 1, "network: expected latency=, reset, blackhole, bandwidth= or errors=, found %s",
                                  ts->n > 1 ? "none of them" : "the end of the line");
        return SD_OK;
    }
    if (!strcmp(w, "heal")) {
        st = sd_new_step(sc, SD_STEP_HEAL, ts);
        if (ts->n > 1) return sd_perr(c, ts->t[1].line, ts->t[1].col, "heal: expected nothing after it, found \"%s\"", ts->t[1].text);
        return SD_OK;
    }
    if (!strcmp(w, "expect")) {
        st = sd_new_step(sc, SD_STEP_EXPECT, ts);
        for (int i = 1; i < ts->n; i++) {
            sd_split_kv(&ts->t[i], &kv);
            if (!kv.has_op)
                return sd_perr(c, ts->t[i].line, ts->t[i].col, "expect: expected COUNT=N (e.g. unique=120 lost=0), found \"%s\"", ts->t[i].text);
            const char *name = sd_scenario_count_canonical(kv.key);
            if (!name)
                return sd_perr(c, ts->t[i].line, ts->t[i].col,
                               "expect: expected a count name (produced, expected, unique, rows, duplicated, lost, unexpected, late_leaked, malformed_leaked, quarantined, ...), found \"%s\"",
                               kv.key);
            st->expects = sd_util_xrealloc(st->expects, sizeof(*st->expects) * (size_t)(st->nexpects + 1));
            sd_expect_t *x = &st->expects[st->nexpects];
            memset(x, 0, sizeof(*x));
            x->count = sd_util_strdup(name);
            x->op = kv.op;
            const char *other = isalpha((unsigned char)kv.value[0]) ? sd_scenario_count_canonical(kv.value) : NULL;
            if (other) {
                x->value_count = sd_util_strdup(other);
            } else if (sd_util_parse_count(kv.value, &x->value)) {
                st->nexpects++;
                return sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv),
                               "expect %s: expected a whole number or a count name, found \"%s\"", kv.key, kv.value);
            }
            st->nexpects++;
        }
        return SD_OK;
    }
    return sd_perr(c, ts->t[0].line, ts->t[0].col,
                   "expected a directive (source, events, contract, sink, quarantine, pipeline, variant, env, progress, producer, set, name) "
                   "or a step (start, produce, replay, inject, await, kill, stop, restart, pause, resume, sleep, clock, damage, network, heal, expect), found \"%s\"", w);
}

/* `clock faketime ...` is a header line; `clock offset=...` a step. */
static int sd_is_header_line(const sd_toks_t *ts) {
    return !strcmp(ts->t[0].text, "clock") && ts->n >= 2 && !strcmp(ts->t[1].text, "faketime");
}

static int sd_is_header(const char *w) {
    static const char *const h[] = {"name", "set", "source", "events", "contract", "sink", "quarantine",
                                    "pipeline", "variant", "env", "progress", "producer", NULL};
    for (int i = 0; h[i]; i++)
        if (!strcmp(w, h[i])) return 1;
    return 0;
}

/* Checks that need the whole file. */
static sd_err_t sd_validate(sd_pctx_t *c, sd_scenario_t *sc) {
    int started = 0;
    for (int i = 0; i < sc->nsteps; i++) {
        sd_step_t *st = &sc->steps[i];
        switch (st->kind) {
        case SD_STEP_START:
        case SD_STEP_RESTART:
            if (!sc->argv)
                return sd_perr(c, st->line, 1, "%s: expected a `pipeline` line in the header to start, found none", st->kind == SD_STEP_START ? "start" : "restart");
            if (st->kind == SD_STEP_START && started)
                return sd_perr(c, st->line, 1, "start: expected the pipeline to be stopped, found it started already (use `restart`)");
            started = 1;
            break;
        case SD_STEP_STOP:
        case SD_STEP_KILL:
        case SD_STEP_PAUSE:
        case SD_STEP_RESUME:
            if (!started)
                return sd_perr(c, st->line, 1, "%s: expected a `start` step before it, found none", strtok(strdupa(st->text), " "));
            break;
        case SD_STEP_PRODUCE:
        case SD_STEP_REPLAY:
        case SD_STEP_INJECT:
            if (!sc->has_source)
                return sd_perr(c, st->line, 1, "%s: expected a `source kafka topic=...` line in the header, found none", strtok(strdupa(st->text), " "));
            break;
        case SD_STEP_AWAIT_SINK: {
            int found = 0;
            for (int k = 0; k < sc->nsinks; k++)
                if (!strcmp(sc->sinks[k].name, st->sink)) found = 1;
            if (!found)
                return sd_perr(c, st->line, 1, "await sink: expected a declared sink named \"%s\", found %s", st->sink,
                               sc->nsinks ? "only other names" : "no `sink` line");
            break;
        }
        case SD_STEP_CLOCK:
            if (!sc->faketime)
                return sd_perr(c, st->line, 1, "clock: expected a `clock faketime` line in the header (the pipeline must run under libfaketime), found none");
            break;
        case SD_STEP_AWAIT_BATCHES:
            if (!started)
                return sd_perr(c, st->line, 1, "await batches: expected a `start` step before it, found none");
            if (sc->progress != SD_PROGRESS_MARKERS && sc->progress != SD_PROGRESS_SPARK)
                return sd_perr(c, st->line, 1, "await batches: expected `progress markers` or `progress spark` (batches must be visible), found none");
            break;
        case SD_STEP_AWAIT_QUIESCENT:
        case SD_STEP_EXPECT:
            if (!sc->nsinks)
                return sd_perr(c, st->line, 1, "%s: expected a `sink` line in the header, found none",
                               st->kind == SD_STEP_EXPECT ? "expect" : "await quiescent");
            if (st->kind == SD_STEP_EXPECT) {
                int target = 0;
                for (int k = 0; k < sc->nsinks; k++) if (!sc->sinks[k].is_quarantine) target = 1;
                if (!target) return sd_perr(c, st->line, 1, "expect: expected a target `sink` line (not only `quarantine`), found none");
            }
            break;
        default:
            break;
        }
    }
    if (sc->nsteps == 0)
        return sd_perr(c, 1, 1, "expected at least one step (start, produce, ..., expect), found none");
    return SD_OK;
}

sd_err_t sd_scenario_parse_text(const char *path, const char *text, const sd_kvlist_t *overrides,
                                sd_scenario_t **out, char *err, size_t errlen) {
    sd_scenario_t *sc = sd_util_xcalloc(1, sizeof(*sc));
    sd_pctx_t c = {.path = path, .err = err, .errlen = errlen, .vars = &sc->vars};
    sd_err_t rc = SD_OK;
    sc->path = sd_util_strdup(path);
    char *abs = sd_util_abspath(path);
    sc->dir = sd_util_dirname(abs);
    free(abs);
    sc->name = sd_util_stem(path);
    sc->partitions = 3;
    sc->replication = 1;
    sc->start_ms = 1767254400000LL; /* 2026-01-01T08:00:00Z */
    sc->step_ms = 1000;
    sc->parcels = 5000;
    sc->locations = 24;
    sc->seed = 42;
    sc->id_field = sd_util_strdup("event_id");
    sc->time_field = sd_util_strdup("event_time");
    sc->watermark_ms = 10 * 60000;
    sc->late_disp = SD_DISP_DROPPED;
    sc->malformed_disp = SD_DISP_QUARANTINE;
    sc->future_disp = SD_DISP_QUARANTINE;
    sc->drift_disp = SD_DISP_TARGET;
    sc->profile = SD_PROFILE_EXACTLY_ONCE;

    /* description: the leading comment block */
    {
        sd_buf_t d;
        sd_buf_init(&d);
        const char *p = text;
        while (*p == '#') {
            const char *nl = strchr(p, '\n');
            size_t n = nl ? (size_t)(nl - p) : strlen(p);
            const char *s = p + 1;
            size_t m = n - 1;
            if (m && *s == ' ') { s++; m--; }
            if (d.len) sd_buf_putc(&d, '\n');
            sd_buf_append(&d, s, m);
            p = nl ? nl + 1 : p + n;
        }
        sc->description = sd_buf_steal(&d);
    }

    /* Pass 1: `set` lines define defaults; overrides win. They are read
     * first so a variable may be used above its `set` line. */
    sd_seen_t seen_name = {0}, seen_source = {0}, seen_events = {0}, seen_contract = {0}, seen_pipeline = {0}, seen_progress = {0};
    {
        size_t pos = 0;
        int lineno = 1;
        while (text[pos]) {
            sd_toks_t ts;
            if ((rc = sd_tokenize(&c, text, &pos, &lineno, &ts))) goto fail;
            if (ts.n && !strcmp(ts.t[0].text, "set")) {
                sd_kvlist_t tmp = {0};
                rc = sd_parse_kvs(&c, &ts, "set", &tmp, 0);
                for (int i = 0; !rc && i < tmp.n; i++)
                    if (!sd_kvlist_get(overrides, tmp.v[i].key)) sd_kvlist_add(&sc->vars, tmp.v[i].key, tmp.v[i].value);
                sd_kvlist_free(&tmp);
            }
            sd_toks_free(&ts);
            if (rc) goto fail;
        }
        for (int i = 0; overrides && i < overrides->n; i++) sd_kvlist_add(&sc->vars, overrides->v[i].key, overrides->v[i].value);
        for (int i = 0; i < sc->vars.n; i++)
            if (sd_is_runtime_var(sc->vars.v[i].key, strlen(sc->vars.v[i].key))) {
                rc = sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s: variable {%s} is provided by the run and cannot be set", path, sc->vars.v[i].key);
                goto fail;
            }
    }

    size_t pos = 0;
    int lineno = 1;
    int in_steps = 0;
    while (text[pos]) {
        sd_toks_t ts;
        if ((rc = sd_tokenize(&c, text, &pos, &lineno, &ts))) goto fail;
        if (ts.n == 0) { sd_toks_free(&ts); continue; }
        for (int i = 0; i < ts.n; i++)
            if ((rc = sd_subst_user(&c, &ts.t[i]))) { sd_toks_free(&ts); goto fail; }
        const char *w = ts.t[0].text;
        if (sd_is_header_line(&ts)) {
            if (in_steps) {
                rc = sd_perr(&c, ts.t[0].line, ts.t[0].col, "expected a step, found the header directive `clock faketime` after the first step (move it above the steps)");
            } else {
                sc->faketime = 1;
                for (int i = 2; !rc && i < ts.n; i++) {
                    if (!strncmp(ts.t[i].text, "lib=", 4) && ts.t[i].text[4]) {
                        free(sc->faketime_lib);
                        sc->faketime_lib = sd_util_strdup(ts.t[i].text + 4);
                    } else if (!strcmp(ts.t[i].text, "preload=all") || !strcmp(ts.t[i].text, "preload=children")) {
                        sc->faketime_children = !strcmp(ts.t[i].text, "preload=children");
                    } else {
                        rc = sd_perr(&c, ts.t[i].line, ts.t[i].col, "clock faketime: expected lib=PATH or preload=all|children, found \"%s\"", ts.t[i].text);
                    }
                }
            }
        } else if (sd_is_header(w)) {
            if (in_steps && strcmp(w, "set")) {
                rc = sd_perr(&c, ts.t[0].line, ts.t[0].col, "expected a step, found the header directive `%s` after the first step (move it above the steps)", w);
            } else if (!strcmp(w, "set")) {
                rc = SD_OK; /* done in pass 1 */
            } else if (!strcmp(w, "name")) {
                if (!(rc = sd_once(&c, &seen_name, &ts.t[0], "name"))) {
                    if (ts.n != 2 || !sd_valid_name(ts.t[1].text))
                        rc = sd_perr(&c, ts.t[0].line, ts.n >= 2 ? ts.t[1].col : ts.t[0].col + 5,
                                     "name: expected one name of letters, digits, '.', '_' or '-', found %s%s%s", ts.n >= 2 ? "\"" : "the end of the line",
                                     ts.n >= 2 ? ts.t[1].text : "", ts.n >= 2 ? "\"" : "");
                    else { free(sc->name); sc->name = sd_util_strdup(ts.t[1].text); }
                }
            } else if (!strcmp(w, "source")) {
                if (!(rc = sd_once(&c, &seen_source, &ts.t[0], "source"))) rc = sd_parse_source(&c, sc, &ts);
            } else if (!strcmp(w, "events")) {
                if (!(rc = sd_once(&c, &seen_events, &ts.t[0], "events"))) rc = sd_parse_events(&c, sc, &ts);
            } else if (!strcmp(w, "contract")) {
                if (!(rc = sd_once(&c, &seen_contract, &ts.t[0], "contract"))) rc = sd_parse_contract(&c, sc, &ts);
            } else if (!strcmp(w, "sink") || !strcmp(w, "quarantine")) {
                rc = sd_parse_sink(&c, sc, &ts, !strcmp(w, "quarantine"));
            } else if (!strcmp(w, "pipeline")) {
                if (!(rc = sd_once(&c, &seen_pipeline, &ts.t[0], "pipeline"))) {
                    if (ts.n < 2) {
                        rc = sd_perr(&c, ts.t[0].line, ts.t[0].col + 9, "pipeline: expected a command line (program and arguments), found the end of the line");
                    } else {
                        sc->argc = ts.n - 1;
                        sc->argv = sd_util_xcalloc((size_t)ts.n, sizeof(char *));
                        for (int i = 1; i < ts.n; i++) sc->argv[i - 1] = sd_util_strdup(ts.t[i].text);
                        sc->pipeline_line = ts.t[0].line;
                    }
                }
            } else if (!strcmp(w, "variant")) {
                if (ts.n < 3 || !sd_valid_name(ts.t[1].text)) {
                    rc = sd_perr(&c, ts.t[0].line, ts.n >= 2 ? ts.t[1].col : ts.t[0].col + 8,
                                 "variant: expected a name and a command line (variant NAME PROGRAM ARG...), found %s",
                                 ts.n >= 2 ? "no command" : "the end of the line");
                } else {
                    for (int v = 0; !rc && v < sc->nvariants; v++)
                        if (!strcmp(sc->variants[v].name, ts.t[1].text))
                            rc = sd_perr(&c, ts.t[1].line, ts.t[1].col, "variant: expected a new name, found \"%s\" again (line %d)",
                                         ts.t[1].text, sc->variants[v].line);
                    if (!rc) {
                        sc->variants = sd_util_xrealloc(sc->variants, sizeof(*sc->variants) * (size_t)(sc->nvariants + 1));
                        struct sd_variant_s *v = &sc->variants[sc->nvariants++];
                        v->name = sd_util_strdup(ts.t[1].text);
                        v->argc = ts.n - 2;
                        v->argv = sd_util_xcalloc((size_t)ts.n, sizeof(char *));
                        for (int i = 2; i < ts.n; i++) v->argv[i - 2] = sd_util_strdup(ts.t[i].text);
                        v->line = ts.t[0].line;
                    }
                }
            } else if (!strcmp(w, "env")) {
                rc = sd_parse_kvs(&c, &ts, "env", &sc->env, 1);
            } else if (!strcmp(w, "producer")) {
                rc = sd_parse_kvs(&c, &ts, "producer", &sc->producer_props, 0);
            } else if (!strcmp(w, "progress")) {
                if (!(rc = sd_once(&c, &seen_progress, &ts.t[0], "progress"))) rc = sd_parse_progress(&c, sc, &ts);
            }
        } else {
            in_steps = 1;
            rc = sd_parse_step(&c, sc, &ts);
        }
        sd_toks_free(&ts);
        if (rc) goto fail;
    }
    if ((rc = sd_validate(&c, sc))) goto fail;
    *out = sc;
    return SD_OK;
fail:
    sd_scenario_free(sc);
    *out = NULL;
    return rc;
}

sd_err_t sd_scenario_parse(const char *path, const sd_kvlist_t *overrides, sd_scenario_t **out, char *err,
                           size_t errlen) {
    char *text = NULL;
    char ioerr[512];
    size_t len = 0;
    if (sd_util_read_file(path, &text, &len, ioerr, sizeof(ioerr)))
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s: cannot read the scenario: %s", path, ioerr);
    if (strlen(text) != len) {
        free(text);
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:1:1: expected a text file, found a NUL byte", path);
    }
    sd_err_t rc = sd_scenario_parse_text(path, text, overrides, out, err, errlen);
    free(text);
    return rc;
}
