/* lang_hooks.c - the hooks of the language's table (see lang_int.h): the
 * combinations a key list cannot say (produce ... background needs a rate,
 * network takes one fault at a time, ...), for header directives and steps. */
#include "figures.h"
#include "lang_int.h"
#include "registry.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sqlite3.h>
#include <string.h>

/* the words of `damage spark`: the table's key and its hook's check */
const char *const sd_spark_what[] = {"commit-marker", "offsets", "state", NULL};

/* ---- header hooks ---- */

sd_err_t sd_hook_name(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    if (ts->n != 2 || !sd_valid_name(ts->t[1].text) || strlen(ts->t[1].text) > 128)
        return sd_perr(c, ts->t[0].line, ts->n >= 2 ? ts->t[1].col : sd_end_col(ts),
                       "name: expected one name of letters, digits, '.', '_' or '-' (up to 128, a letter first), found %s%s%s",
                       ts->n >= 2 ? "\"" : "the end of the line", ts->n >= 2 ? ts->t[1].text : "", ts->n >= 2 ? "\"" : "");
    free(sc->name);
    sc->name = sd_util_strdup(ts->t[1].text);
    return SD_OK;
}

sd_err_t sd_lang_parse_kvs(sd_pctx_t *c, const sd_toks_t *ts, const char *what, sd_kvlist_t *into, int envstyle) {
    if (ts->n < 2) return sd_perr(c, ts->t[0].line, sd_end_col(ts), "%s: expected NAME=VALUE, found the end of the line", what);
    for (int i = 1; i < ts->n; i++) {
        const char *s = ts->t[i].text;
        const char *eq = strchr(s, '=');
        int ok = eq && eq != s;
        for (const char *p = s; ok && p < eq; p++)
            if (!(isalnum((unsigned char)*p) || *p == '_' || (!envstyle && (*p == '.' || *p == '-')))) ok = 0;
        if (!ok) return sd_perr(c, ts->t[i].line, ts->t[i].col, "%s: expected NAME=VALUE, found \"%s\"", what, s);
        char *k = sd_util_strndup(s, (size_t)(eq - s));
        sd_kvlist_add(into, k, eq + 1);
        free(k);
    }
    return SD_OK;
}

sd_err_t sd_hook_set(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    /* the values were taken in the first pass; the words are checked again here */
    (void)sc; (void)obj; (void)present;
    sd_kvlist_t tmp = {0};
    sd_err_t err = sd_lang_parse_kvs(c, ts, "set", &tmp, 0);
    sd_kvlist_free(&tmp);
    return err;
}

sd_err_t sd_hook_env(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    return sd_lang_parse_kvs(c, ts, "env", &sc->env, 1);
}

sd_err_t sd_hook_producer(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    return sd_lang_parse_kvs(c, ts, "producer", &sc->producer_props, 0);
}

sd_err_t sd_hook_pipeline(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    int first = 1;
    sc->instances = 1;
    /* pipeline [instances=N] PROGRAM ARG...: a program's name holds no '=' */
    if (ts->n >= 2 && !strncmp(ts->t[1].text, "instances=", 10)) {
        const char *v = ts->t[1].text + 10;
        char *end;
        long n = strtol(v, &end, 10);
        if (!*v || *end || n < 1 || n > SD_MAX_INSTANCES)
            return sd_perr(c, ts->t[1].line, ts->t[1].col + 10, "pipeline: expected instances=N with N from 1 to %d, found \"%s\"",
                           SD_MAX_INSTANCES, v);
        sc->instances = (int)n;
        first = 2;
    }
    if (ts->n < first + 1)
        return sd_perr(c, ts->t[0].line, sd_end_col(ts), "pipeline: expected a command line (program and arguments), found the end of the line");
    sc->argc = ts->n - first;
    sc->argv = sd_util_xcalloc((size_t)ts->n, sizeof(char *));
    for (int i = first; i < ts->n; i++) sc->argv[i - first] = sd_util_strdup(ts->t[i].text);
    sc->pipeline_line = ts->t[0].line;
    return SD_OK;
}

/* NAME PROGRAM ARG...: a named command line (variant, fault-command) */
static sd_err_t sd_named_command(sd_pctx_t *c, const sd_toks_t *ts, struct sd_variant_s **arr, int *n, const char *what) {
    if (ts->n < 3 || !sd_valid_name(ts->t[1].text))
        return sd_perr(c, ts->t[0].line, ts->n >= 2 ? ts->t[1].col : sd_end_col(ts),
                       "%s: expected a name and a command line (%s NAME PROGRAM ARG...), found %s", what, what,
                       ts->n >= 2 ? "no command" : "the end of the line");
    for (int k = 0; k < *n; k++)
        if (!strcmp((*arr)[k].name, ts->t[1].text))
            return sd_perr(c, ts->t[1].line, ts->t[1].col, "%s: expected a new name, found \"%s\" again (line %d)", what, ts->t[1].text,
                           (*arr)[k].line);
    *arr = sd_util_xrealloc(*arr, sizeof(**arr) * (size_t)(*n + 1));
    struct sd_variant_s *v = &(*arr)[(*n)++];
    v->name = sd_util_strdup(ts->t[1].text);
    v->argc = ts->n - 2;
    v->argv = sd_util_xcalloc((size_t)ts->n, sizeof(char *));
    for (int i = 2; i < ts->n; i++) v->argv[i - 2] = sd_util_strdup(ts->t[i].text);
    v->line = ts->t[0].line;
    return SD_OK;
}

sd_err_t sd_hook_variant(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    return sd_named_command(c, ts, &sc->variants, &sc->nvariants, "variant");
}

/* deploy start|status|stop|kill|logs PROGRAM ARG... */
sd_err_t sd_hook_deploy(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    int k = 0;
    while (ts->n >= 2 && sd_deploy_words[k] && strcmp(sd_deploy_words[k], ts->t[1].text)) k++;
    if (ts->n < 2 || !sd_deploy_words[k])
        return sd_perr(c, ts->t[0].line, ts->n >= 2 ? ts->t[1].col : sd_end_col(ts),
                       "deploy: expected start, status, stop, kill or logs, found %s%s%s", ts->n >= 2 ? "\"" : "the end of the line",
                       ts->n >= 2 ? ts->t[1].text : "", ts->n >= 2 ? "\"" : "");
    if (ts->n < 3)
        return sd_perr(c, ts->t[0].line, sd_end_col(ts), "deploy %s: expected a command line (program and arguments), found the end of the line",
                       sd_deploy_words[k]);
    if (sc->deploy[k].argv)
        return sd_perr(c, ts->t[1].line, ts->t[1].col, "deploy %s: expected one such line, found another (line %d)", sd_deploy_words[k],
                       sc->deploy[k].line);
    sc->deploy[k].argc = ts->n - 2;
    sc->deploy[k].argv = sd_util_xcalloc((size_t)ts->n, sizeof(char *));
    for (int i = 2; i < ts->n; i++) sc->deploy[k].argv[i - 2] = sd_util_strdup(ts->t[i].text);
    sc->deploy[k].line = ts->t[0].line;
    return SD_OK;
}

sd_err_t sd_hook_fault_command(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    return sd_named_command(c, ts, &sc->fault_cmds, &sc->nfault_cmds, "fault-command");
}

/* version [files=PATH,...] [PROGRAM ARG...]: leading files= (the only
 * key), then the command line, exec'd without a shell. */
sd_err_t sd_hook_version(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    int i = 1;
    for (; i < ts->n && !strncmp(ts->t[i].text, "files=", 6); i++) {
        if (sc->version_files)
            return sd_perr(c, ts->t[i].line, ts->t[i].col, "version: expected files= once, found it again");
        if (!ts->t[i].text[6])
            return sd_perr(c, ts->t[i].line, ts->t[i].col + 6, "version: expected a path after files=, found nothing");
        sc->version_files = sd_util_strdup(ts->t[i].text + 6);
    }
    if (i == ts->n && !sc->version_files)
        return sd_perr(c, ts->t[0].line, sd_end_col(ts),
                       "version: expected files=PATH[,PATH...] or a command line that prints the version, found the end of the line");
    sc->version_argc = ts->n - i;
    sc->version_argv = sd_util_xcalloc((size_t)(sc->version_argc + 1), sizeof(char *));
    for (int k = i; k < ts->n; k++) sc->version_argv[k - i] = sd_util_strdup(ts->t[k].text);
    sc->version_line = ts->t[0].line;
    return SD_OK;
}

/* operator "TEXT" [timeout=D] [command=PROGRAM ARG...]: the instruction,
 * then timeout=, then the command line to the end (exec'd without a shell). */
sd_err_t sd_parse_operator(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)sc; (void)present;
    sd_step_t *st = obj;
    if (ts->n < 2 || !ts->t[1].text[0] || (strchr(ts->t[1].text, '=') && !ts->t[1].quoted))
        return sd_perr(c, ts->t[0].line, ts->n < 2 ? sd_end_col(ts) : ts->t[1].col,
                       "operator: expected the instruction in quotes (operator \"restart the query from the runbook\"), found %s",
                       ts->n < 2 ? "the end of the line" : ts->t[1].text);
    st->oper.text = sd_util_strdup(ts->t[1].text);
    for (int i = 2; i < ts->n; i++) {
        const char *t = ts->t[i].text;
        if (!strncmp(t, "timeout=", 8)) {
            if (sd_util_parse_duration(t + 8, &st->timeout_ms) || st->timeout_ms <= 0)
                return sd_perr(c, ts->t[i].line, ts->t[i].col + 8, "operator: expected a duration above zero (10m), found \"%s\"", t + 8);
            st->timeout_given = 1;
        } else if (!strncmp(t, "command=", 8)) {
            if (!t[8])
                return sd_perr(c, ts->t[i].line, ts->t[i].col + 8, "operator: expected a program after command=, found nothing");
            st->oper.argc = ts->n - i;
            st->oper.argv = sd_util_xcalloc((size_t)st->oper.argc + 1, sizeof(char *));
            st->oper.argv[0] = sd_util_strdup(t + 8);
            for (int k = i + 1; k < ts->n; k++) st->oper.argv[k - i] = sd_util_strdup(ts->t[k].text);
            break;
        } else {
            return sd_perr(c, ts->t[i].line, ts->t[i].col, "operator: expected timeout= or command=PROGRAM ARG..., found \"%s\"", t);
        }
    }
    return SD_OK;
}

/* Sink kinds and the parameters each takes (the readers are in sink_*.c). */
static const struct {
    const char *kind;
    const char *const keys[12];
    const char *required[3];
} sd_sink_kinds[] = {
    {"sqlite", {"db", "query", NULL}, {"db", "query", NULL}},
    {"kafka", {"topic", "id", "header", "isolation", "format", "registry", "registry-auth", "registry-ca", "registry-cert", "registry-key", NULL},
     {"topic", NULL}},
    {"jsonl", {"path", "id", "time", NULL}, {"path", NULL}},
    {"spark-files", {"path", "id", "time", "format", NULL}, {"path", NULL}},
    {"flink-files", {"path", "id", "time", NULL}, {"path", NULL}},
    {"delta", {"path", "id", "time", "python", NULL}, {"path", NULL}},
    {"postgres", {"dsn", "query", NULL}, {"dsn", "query", NULL}},
    /* its options, then PROGRAM ARG... (stored as arg= in order) */
    {"command", {"id", "writer", "time", "timeout", "max-output", NULL}, {NULL}},
    {NULL, {NULL}, {NULL}}};

void sd_lang_sink_kinds(sd_buf_t *b) {
    for (int i = 0; sd_sink_kinds[i].kind; i++) sd_buf_printf(b, "%s%s", i ? " " : "", sd_sink_kinds[i].kind);
}

static int sd_sink_kind(const char *s) {
    for (int i = 0; sd_sink_kinds[i].kind; i++)
        if (!strcmp(s, sd_sink_kinds[i].kind)) return i;
    return -1;
}

/* The first registry-* parameter given, or NULL. */
static const char *sd_sink_registry_extra(const sd_kvlist_t *params) {
    static const char *const keys[] = {"registry-auth", "registry-ca", "registry-cert", "registry-key", NULL};
    for (int i = 0; keys[i]; i++)
        if (sd_kvlist_get(params, keys[i])) return keys[i];
    return NULL;
}

/* A kafka sink's registry=URL and its registry-auth=, -cert=, -key=, as
 * the registry client takes them (harness/format/registry.c). */
static sd_err_t sd_sink_registry_check(sd_pctx_t *c, const sd_toks_t *ts, const char *what, const sd_kvlist_t *params) {
    char why[512];
    const char *auth = sd_kvlist_get(params, "registry-auth");
    if (sd_registry_url_check(sd_kvlist_get(params, "registry"), why, sizeof(why)) || (auth && sd_registry_auth_check(auth, why, sizeof(why))))
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "%s kafka: %s", what, why);
    if (!sd_kvlist_get(params, "registry-cert") != !sd_kvlist_get(params, "registry-key"))
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "%s kafka: expected registry-cert= and registry-key= together (mutual TLS), "
                       "found only one", what);
    return SD_OK;
}

/* How many SQL statements a text holds (sqlite3_complete finds where the
 * first one ends; what follows must be blanks and semicolons). */
static int sd_sql_statements(const char *q) {
    size_t n = strlen(q);
    char *buf = sd_util_xmalloc(n + 1);
    int count = 1;
    for (size_t i = 1; i <= n; i++) {
        if (q[i - 1] != ';') continue;
        memcpy(buf, q, i);
        buf[i] = 0;
        if (sqlite3_complete(buf)) {
            if (q[i + strspn(q + i, " \t\r\n;")]) count = 2;
            break;
        }
    }
    free(buf);
    return count;
}

sd_err_t sd_hook_sink(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    int quarantine = !strcmp(ts->t[0].text, "quarantine");
    const char *what = ts->t[0].text;
    const char *kinds = "sqlite, postgres, kafka, jsonl, spark-files, flink-files, delta, command";
    int i = 1;
    if (sc->nsinks >= SD_MAX_SINKS)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "%s: expected at most %d sinks, found more", what, SD_MAX_SINKS);
    const char *name = NULL;
    if (i < ts->n && !strchr(ts->t[i].text, '=') && sd_sink_kind(ts->t[i].text) < 0) {
        if (!sd_valid_name(ts->t[i].text))
            return sd_perr(c, ts->t[i].line, ts->t[i].col, "%s: expected a sink name or kind (%s), found \"%s\"", what, kinds, ts->t[i].text);
        name = ts->t[i].text;
        i++;
    }
    if (i >= ts->n)
        return sd_perr(c, ts->t[0].line, sd_end_col(ts), "%s: expected a sink kind (%s), found the end of the line", what, kinds);
    int kind = sd_sink_kind(ts->t[i].text);
    if (kind < 0)
        return sd_perr(c, ts->t[i].line, ts->t[i].col, "%s: expected a sink kind (%s), found \"%s\"", what, kinds, ts->t[i].text);
    int kind_tok = i++;
    if (!name) name = quarantine ? "quarantine" : "target";
    for (int k = 0; k < sc->nsinks; k++)
        if (!strcmp(sc->sinks[k].name, name))
            return sd_perr(c, ts->t[0].line, ts->t[0].col,
                           "%s: expected a new sink name, found \"%s\" again (declared at line %d; name the second one: `sink NAME %s ...`)",
                           what, name, sc->sinks[k].line, sd_sink_kinds[kind].kind);
    sd_sink_decl_t d;
    memset(&d, 0, sizeof(d));
    sd_err_t err = SD_OK;
    int is_command = !strcmp(sd_sink_kinds[kind].kind, "command"), program = 0;
    for (; i < ts->n && !err; i++) {
        sd_kvtok_t kv;
        /* command: the first word that is not KEY=VALUE begins the argv */
        if (is_command && (program || !strchr(ts->t[i].text, '='))) {
            program = 1;
            sd_kvlist_add(&d.params, "arg", ts->t[i].text);
            continue;
        }
        sd_split_kv(&ts->t[i], &kv);
        int ok = 0;
        for (int k = 0; sd_sink_kinds[kind].keys[k]; k++)
            if (kv.has_op && !strcmp(kv.key, sd_sink_kinds[kind].keys[k])) ok = 1;
        if (!ok) {
            sd_buf_t b;
            sd_buf_init(&b);
            for (int k = 0; sd_sink_kinds[kind].keys[k]; k++) sd_buf_printf(&b, "%s%s=", k ? ", " : "", sd_sink_kinds[kind].keys[k]);
            char near[96];
            err = sd_perr(c, ts->t[i].line, ts->t[i].col, "%s %s: expected one of %s, found \"%s\"%s", what, sd_sink_kinds[kind].kind, b.data,
                          ts->t[i].text, sd_lang_near(ts->t[i].text, b.data, near, sizeof(near)));
            sd_buf_free(&b);
        } else if (kv.op != SD_OP_EQ) {
            err = sd_perr(c, ts->t[i].line, ts->t[i].col + (int)strlen(kv.key), "%s: expected `%s=`, found `%s%s`", what, kv.key, kv.key,
                          sd_op_text(kv.op));
        } else if (!kv.value[0]) {
            err = sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv), "%s: expected a value after %s=, found nothing", what, kv.key);
        } else {
            sd_kvlist_add(&d.params, kv.key, kv.value);
        }
    }
    for (int k = 0; !err && sd_sink_kinds[kind].required[k]; k++)
        if (!sd_kvlist_get(&d.params, sd_sink_kinds[kind].required[k]))
            err = sd_perr(c, ts->t[kind_tok].line, ts->t[kind_tok].col, "%s %s: expected %s=..., found none", what, sd_sink_kinds[kind].kind,
                          sd_sink_kinds[kind].required[k]);
    if (!err && is_command && !program)
        err = sd_perr(c, ts->t[0].line, sd_end_col(ts), "%s command: expected the command's PROGRAM ARG... after its options, found the end "
                      "of the line", what);
    const char *to = err || !is_command ? NULL : sd_kvlist_get(&d.params, "timeout");
    int64_t to_ms;
    if (to && (sd_util_parse_duration(to, &to_ms) || to_ms <= 0))
        err = sd_perr(c, ts->t[0].line, ts->t[0].col, "%s command: expected timeout= to be a duration (30s, 2m), found \"%s\"", what, to);
    const char *query = err || strcmp(sd_sink_kinds[kind].kind, "sqlite") ? NULL : sd_kvlist_get(&d.params, "query");
    if (query && sd_sql_statements(query) > 1)
        err = sd_perr(c, ts->t[0].line, ts->t[0].col, "%s sqlite: expected query= to be one SQL statement, found more (\"%.80s\")", what,
                      query);
    const char *iso = err ? NULL : sd_kvlist_get(&d.params, "isolation");
    if (iso && strcmp(iso, "read_committed") && strcmp(iso, "read_uncommitted"))
        err = sd_perr(c, ts->t[0].line, ts->t[0].col, "%s kafka: expected isolation=read_committed|read_uncommitted, found \"%s\"", what, iso);
    int files = !strcmp(sd_sink_kinds[kind].kind, "spark-files");
    const char *fmt = err ? NULL : sd_kvlist_get(&d.params, "format");
    const char *reg = err ? NULL : sd_kvlist_get(&d.params, "registry");
    if (files && fmt && strcmp(fmt, "avro") && strcmp(fmt, "json"))
        err = sd_perr(c, ts->t[0].line, ts->t[0].col, "%s spark-files: expected format=json|avro (Avro object container files), "
                      "found \"%s\"", what, fmt);
    else if (files) (void)0;
    else if (fmt && strcmp(fmt, "avro") && strcmp(fmt, "protobuf") && strcmp(fmt, "json-schema") && strcmp(fmt, "json"))
        err = sd_perr(c, ts->t[0].line, ts->t[0].col, "%s kafka: expected format=json|avro|protobuf|json-schema, found \"%s\"", what, fmt);
    else if (!err && (fmt && strcmp(fmt, "json")) != (reg != NULL))
        err = sd_perr(c, ts->t[0].line, ts->t[0].col, "%s kafka: expected format=avro (or protobuf, json-schema) and registry=URL together (the "
                      "registry its records' schemas are read from), found %s", what, reg ? "registry= alone" : "the format alone");
    if (!err && reg) err = sd_sink_registry_check(c, ts, what, &d.params);
    else if (!err && !files && sd_sink_registry_extra(&d.params))
        err = sd_perr(c, ts->t[0].line, ts->t[0].col, "%s kafka: expected %s= beside registry=URL, found no registry=", what,
                      sd_sink_registry_extra(&d.params));
    if (err) {
        sd_kvlist_free(&d.params);
        return err;
    }
    d.name = sd_util_strdup(name);
    d.kind = sd_util_strdup(sd_sink_kinds[kind].kind);
    d.is_quarantine = quarantine;
    d.line = ts->t[0].line;
    sc->sinks[sc->nsinks++] = d;
    return SD_OK;
}

sd_err_t sd_fin_source(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    if (!sc->topic) return sd_perr(c, ts->t[0].line, ts->t[0].col, "source kafka: expected topic=NAME, found none");
    sc->has_source = 1;
    sc->source_line = ts->t[0].line;
    return SD_OK;
}

sd_err_t sd_fin_events(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    if (sc->events_kind == SD_EVENTS_LOG && !sc->log_id_field)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "events log: expected id=FIELD (the field that carries each event's id), found none");
    if (sc->schema_path && !sc->events_format)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "events schema=: expected format=avro, protobuf or json-schema beside it (the "
                       "schema of the wire format), found JSON events");
    sc->has_events = 1;
    sc->events_line = ts->t[0].line;
    return SD_OK;
}

sd_err_t sd_fin_registry(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    /* as the registry client takes them (harness/format/registry.c) */
    const char *u = sc->registry_url;
    char why[512];
    if (sd_registry_url_check(u, why, sizeof(why)) || (sc->registry_auth && sd_registry_auth_check(sc->registry_auth, why, sizeof(why))))
        return sd_perr(c, ts->t[0].line, 1, "%s", why);
    if (!sc->registry_cert != !sc->registry_key)
        return sd_perr(c, ts->t[0].line, 1, "registry: expected cert= and key= together (mutual TLS), found only %s=",
                       sc->registry_cert ? "cert" : "key");
    if (sc->registry_proxy && strncmp(u, "http://", 7))
        return sd_perr(c, ts->t[0].line, 1, "registry proxy: expected an http:// URL (the proxy is plain TCP on 127.0.0.1, a name "
                       "the registry's certificate does not carry), found %.8s...", u);
    sc->registry_line = ts->t[0].line;
    return SD_OK;
}

sd_err_t sd_fin_deliveries(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    if (sc->delivery_min_ms > sc->delivery_max_ms)
        return sd_perr(c, ts->line, 1, "deliveries: expected min-delay= at most max-delay=, found %lld ms and %lld ms",
                       (long long)sc->delivery_min_ms, (long long)sc->delivery_max_ms);
    sc->has_deliveries = 1;
    sc->deliveries_line = ts->line;
    return SD_OK;
}

sd_err_t sd_fin_progress(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj;
    /* checkpoint= belongs to progress spark and flink, batches= to spark, group= to progress group */
    int chk = sc->progress == SD_PROGRESS_SPARK || sc->progress == SD_PROGRESS_FLINK;
    if ((!chk && sd_has_key(c, present, "checkpoint")) || (sc->progress != SD_PROGRESS_SPARK && sd_has_key(c, present, "batches")) ||
        (sc->progress != SD_PROGRESS_GROUP && sd_has_key(c, present, "group")))
        return sd_perr(c, ts->t[2].line, ts->t[2].col, "progress %s: expected nothing more (checkpoint= is for progress spark and "
                       "flink, batches= for spark, group= for progress group), found \"%s\"", ts->t[1].text, ts->t[2].text);
    if (chk && !sc->checkpoint) sc->checkpoint = sd_util_strdup("{checkpoint}");
    return SD_OK;
}

/* model: the aggregates are known words, and sum/min/max/avg need value= */
sd_err_t sd_fin_model(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    struct sd_model_decl_s *m = &sc->model;
    m->line = ts->line;
    for (const char *list = m->keys; list; list = list == m->keys ? m->fields : NULL)
        for (const char *p = list; *p; p++)
            if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '-' || *p == '.' || *p == ','))
                return sd_perr(c, ts->line, 1, "model: expected field names separated by commas in %s=, found \"%s\"",
                               list == m->keys ? "key" : "fields", list);
    for (int a = 0; a < 5; a++)
        if (m->agg_cols[a] && m->kind != 1)
            return sd_perr(c, ts->line, 1, "model %s: expected no count=, sum=, min=, max= or avg= (they name a windows model's "
                           "columns), found one", ts->t[1].text);
    if (m->clock && m->kind != 1)
        return sd_perr(c, ts->line, 1, "model %s: expected no clock= (it says whose event time closes a window), found one",
                       ts->t[1].text);
    if (m->kind != 4 && (m->within_ms || m->grace_ms || m->left_col || m->right_col || m->join_type))
        return sd_perr(c, ts->line, 1, "model %s: expected no type=, within=, grace=, left= or right= (they are for join), found one",
                       ts->t[1].text);
    if (m->kind == 4) {
        if (!sc->has_deliveries)
            return sd_perr(c, ts->line, 1, "model join: expected a `deliveries` line before it (the join's second source), found none");
        if (m->join_type == SD_JOIN_ASOF && m->within_ms)
            return sd_perr(c, ts->line, 1, "model join type=as-of: expected no within= (the newest delivery at or before each scan "
                           "is its match, however old), found one");
        if (m->join_type != SD_JOIN_ASOF && m->grace_ms)
            return sd_perr(c, ts->line, 1, "model join: expected no grace= (a stream-table join's, for type=as-of), found one");
        if (m->join_type != SD_JOIN_ASOF && !m->within_ms)
            return sd_perr(c, ts->line, 1, "model join: expected within=DURATION (the time-range condition), found none");
        if (m->size_ms || m->aggs || m->value || m->fields || m->slide_ms)
            return sd_perr(c, ts->line, 1, "model join: expected no size=, slide=, agg=, value= or fields=, found one");
        if (!m->keys) m->keys = sd_util_strdup("parcel_id");
        if (strchr(m->keys, ',')) return sd_perr(c, ts->line, 1, "model join: expected one key field, found \"%s\"", m->keys);
        return SD_OK;
    }
    if (m->kind == 3) {
        if (!m->fields) return sd_perr(c, ts->line, 1, "model rows: expected fields=FIELD[,...], found none");
        if (m->keys || m->size_ms || m->aggs || m->value)
            return sd_perr(c, ts->line, 1, "model rows: expected only fields= (and sink=), found key=, size=, agg= or value=");
        return SD_OK;
    }
    if (m->kind == 2) {
        if (!m->keys || !m->fields)
            return sd_perr(c, ts->line, 1, "model latest: expected key=FIELD[,...] and fields=FIELD[,...], found %s",
                           m->keys ? "no fields=" : "no key=");
        if (m->size_ms || m->aggs || m->value)
            return sd_perr(c, ts->line, 1, "model latest: expected no size=, agg= or value= (they are for windows), found one");
        return SD_OK;
    }
    if (!m->size_ms) return sd_perr(c, ts->line, 1, "model windows: expected size=DURATION, found none");
    if (m->fields) return sd_perr(c, ts->line, 1, "model windows: expected no fields= (it is for latest), found one");
    if (!m->aggs) m->aggs = sd_util_strdup("count");
    if (!m->slide_ms) m->slide_ms = m->size_ms;
    if (m->slide_ms > m->size_ms)
        return sd_perr(c, ts->line, 1, "model windows: expected slide= at most size= (a window every slide), found a slide longer than the window");
    if (m->size_ms % m->slide_ms)
        return sd_perr(c, ts->line, 1, "model windows: expected size= a whole number of slide=, found %lld ms and %lld ms",
                       (long long)m->size_ms, (long long)m->slide_ms);
    char *copy = sd_util_strdup(m->aggs), *save = NULL;
    int needs_value = 0, n = 0;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save), n++) {
        if (strcmp(t, "count") && strcmp(t, "sum") && strcmp(t, "min") && strcmp(t, "max") && strcmp(t, "avg")) {
            sd_err_t e = sd_perr(c, ts->line, 1, "model windows: expected agg= of count, sum, min, max, avg, found \"%s\"", t);
            free(copy);
            return e;
        }
        if (strcmp(t, "count")) needs_value = 1;
    }
    free(copy);
    if (!n) return sd_perr(c, ts->line, 1, "model windows: expected at least one aggregate in agg=, found none");
    if (needs_value && !m->value)
        return sd_perr(c, ts->line, 1, "model windows: expected value=FIELD for sum, min, max or avg, found none");
    return SD_OK;
}

sd_err_t sd_fin_faketime(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)c; (void)obj; (void)ts; (void)present;
    sc->faketime = 1;
    return SD_OK;
}

/* ---- step hooks ---- */

sd_err_t sd_fin_produce(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)sc; (void)present;
    sd_step_t *st = obj;
    if (st->send.background && st->send.rate <= 0)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "produce: expected rate=R/s with background (a background send needs a pace), found none");
    if (!st->send.transactional && (st->send.txn_abort || st->send.txn_open || sd_has_key(c, present, "size")))
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "produce: expected `transactional` with size=, abort= or open=, found none");
    if (st->send.transactional && st->send.background)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "produce: expected transactional or background, found both");
    int64_t txns = st->send.transactional ? (st->send.count + st->send.txn_size - 1) / st->send.txn_size : 0;
    if (st->send.transactional && st->send.txn_abort + st->send.txn_open > txns)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "produce: expected abort= plus open= at most the %lld transactions of %lld events "
                       "(size=%lld), found %lld", (long long)txns, (long long)st->send.count, (long long)st->send.txn_size,
                       (long long)(st->send.txn_abort + st->send.txn_open));
    if (st->send.txn_open > SD_MAX_OPEN_TXN)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "produce: expected open= at most %d (each open transaction holds a producer), found %lld",
                       SD_MAX_OPEN_TXN, (long long)st->send.txn_open);
    return SD_OK;
}

/* kill and pause: after= and visible= say where inside a batch, so they
 * need mid-batch, and only one of them can say it */
/* instance=K names one of the pipeline's instances=N. */
sd_err_t sd_fin_instance(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)present;
    const sd_step_t *st = obj;
    int n = sc->instances > 0 ? sc->instances : 1;
    if (st->proc.instance > n) {
        int i = 1;
        while (i < ts->n && strncmp(ts->t[i].text, "instance=", 9)) i++;
        return sd_perr(c, ts->t[0].line, i < ts->n ? ts->t[i].col + 9 : ts->t[0].col,
                       "%s: expected an instance from 1 to %d (the pipeline line declares %d), found instance=%d", ts->t[0].text, n, n,
                       st->proc.instance);
    }
    return SD_OK;
}

sd_err_t sd_fin_landing(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    sd_err_t ie = sd_fin_instance(c, sc, obj, ts, present);
    if (ie) return ie;
    const sd_step_t *st = obj;
    const char *verb = st->kind == SD_STEP_PAUSE ? "pause" : "kill";
    if (st->proc.after_ms >= 0 && st->proc.visible > 0)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "%s: expected after= or visible=, found both (each says where in the batch to land)", verb);
    if (st->proc.visible > 0 && sc->instances > 1)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "%s: visible= counts the target's rows, which every instance of the pipeline writes: "
                       "use after= or the harness's aim with instances=%d", verb, sc->instances);
    if ((st->proc.after_ms >= 0 || st->proc.visible > 0) && st->proc.mid_batch != SD_LAND_MID_BATCH)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "%s: expected mid-batch with %s (it says where inside a batch to land), found %s", verb,
                       st->proc.visible > 0 ? "visible=" : "after=", st->proc.mid_batch == SD_LAND_AT_BOUNDARY ? "at-boundary" : st->proc.mid_batch == SD_LAND_AFTER_SINK_COMMIT ? "after-sink-commit" : "no mid-batch");
    /* the pipeline is frozen at that point: only SIGKILL keeps it from
     * finishing the checkpoint's commit */
    if (st->proc.mid_batch == SD_LAND_AFTER_SINK_COMMIT && st->proc.signal != SIGKILL)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "kill after-sink-commit: expected signal=KILL (any other signal lets the pipeline "
                       "record the batch in its checkpoint), found signal=%s", st->proc.signal == SIGTERM ? "TERM" : "another");
    return SD_OK;
}

sd_err_t sd_fin_broker(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)sc; (void)present;
    const sd_step_t *st = obj;
    int op = st->proc.bop, strikes = op == SD_BROKER_KILL || op == SD_BROKER_STOP || op == SD_BROKER_PAUSE || op == SD_BROKER_RESTART ||
                                     op == SD_BROKER_ISOLATE;
    if (strikes && st->proc.broker_id < 0 && st->proc.leader_of < 0 && st->proc.follower_of < 0)
        return sd_perr(c, ts->t[0].line, sd_end_col(ts), "broker %s: expected id=N, leader-of=P or follower-of=P (which broker), found none", ts->t[1].text);
    if (!strikes && (st->proc.leader_of >= 0 || st->proc.follower_of >= 0))
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "broker %s: expected id=N or nothing (every broker the run took down), found %s", ts->t[1].text,
                       st->proc.leader_of >= 0 ? "leader-of=" : "follower-of=");
    if (!strikes && st->proc.mid_batch != SD_LAND_NOW)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "broker %s: expected no landing word (only kill, stop, pause, isolate and restart strike)", ts->t[1].text);
    if (st->proc.delay_ms > 0 && (op == SD_BROKER_START || op == SD_BROKER_RESUME || op == SD_BROKER_RESTART || op == SD_BROKER_REJOIN))
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "broker %s: expected for= only with kill, stop, pause or isolate", ts->t[1].text);
    int p = st->proc.leader_of >= 0 ? st->proc.leader_of : st->proc.follower_of;
    if (p >= 0 && sc->has_source && p >= sc->partitions)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "broker: %s=%d, but the source has %d partition%s", st->proc.leader_of >= 0 ? "leader-of" : "follower-of",
                       p, sc->partitions, sc->partitions == 1 ? "" : "s");
    return SD_OK;
}

sd_err_t sd_fin_fault(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)present;
    const sd_step_t *st = obj;
    for (int i = 0; i < sc->nfault_cmds; i++)
        if (!strcmp(sc->fault_cmds[i].name, st->proc.variant)) return SD_OK;
    sd_buf_t names;
    sd_buf_init(&names);
    for (int i = 0; i < sc->nfault_cmds; i++) sd_buf_printf(&names, "%s%s", i ? ", " : "", sc->fault_cmds[i].name);
    sd_err_t e = sd_perr(c, ts->t[1].line, ts->t[1].col, "fault: expected a name a `fault-command` line declares (%s), found \"%s\"",
                         names.len ? names.data : "none is declared", st->proc.variant);
    sd_buf_free(&names);
    return e;
}

sd_err_t sd_fin_replay(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)sc;
    int count = sd_has_key(c, present, "N"), range = sd_has_key(c, present, "range");
    if (count && range)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "replay: expected a count or range=P:FROM-TO, found both");
    if (!count && !range)
        return sd_perr(c, ts->t[0].line, sd_end_col(ts), "replay: expected a count (e.g. replay 100) or range=P:FROM-TO, found %s",
                       ts->n > 1 ? "neither" : "the end of the line");
    (void)obj;
    return SD_OK;
}

sd_err_t sd_fin_inject(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)present;
    sd_step_t *st = obj;
    int any = st->send.malformed > 0;
    for (int k = 0; k < SD_INJ__COUNT; k++)
        if (st->send.inject[k] > 0) any = 1;
    if (!any)
        return sd_perr(c, ts->t[0].line, ts->n > 1 ? ts->t[1].col : sd_end_col(ts),
                       "inject: expected malformed=N or late=N (or another kind), found %s", ts->n > 1 ? "no count above zero" : "the end of the line");
    /* the wire format's kinds break an encoded record: Avro scans only */
    if ((st->send.malformed_kinds & (1 << SD_MAL_SCHEMA_VIOLATION)) && sc->events_format && sc->events_format != 3 && !st->send.side)
        return sd_perr(c, ts->t[0].line, 1, "inject kinds=schema-violation: expected events format=json-schema (a record the "
                       "schema refuses; Avro and Protobuf encode only what fits), found format=%s", sc->events_format == 2 ? "protobuf" : "avro");
    for (int m = SD_MAL_BAD_MAGIC; m < SD_MAL__COUNT; m++)
        if ((st->send.malformed_kinds & (1 << m)) && (!sc->events_format || st->send.side))
            return sd_perr(c, ts->t[0].line, 1, "inject kinds=%s: expected events format=avro, protobuf or json-schema and the scans' source (a kind of the "
                           "registry wire format), found %s", sd_malformed_name((sd_malformed_t)m),
                           st->send.side ? "source=deliveries" : "JSON events");
    return SD_OK;
}

sd_err_t sd_fin_await_sink(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)c; (void)sc; (void)ts; (void)present;
    sd_step_t *st = obj;
    if (!st->await.sink) st->await.sink = sd_util_strdup("target");
    return SD_OK;
}

sd_err_t sd_fin_await_batches(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)c; (void)sc; (void)ts; (void)present;
    ((sd_step_t *)obj)->await.op = SD_OP_GE;
    return SD_OK;
}

sd_err_t sd_fin_damage_spark(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)sc;
    sd_step_t *st = obj;
    if (sd_has_key(c, present, "truncate") && st->damage.what != SD_DAMAGE_OFFSETS)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "damage spark: expected truncate only with offsets, found it with %s",
                       sd_spark_what[st->damage.what]);
    return SD_OK;
}

sd_err_t sd_fin_network(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)sc;
    sd_step_t *st = obj;
    /* count= is errors='s alone */
    int count = sd_has_key(c, present, "count");
    if (count && st->net.op != SD_NET_ERRORS)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "network: expected count= only with errors=, found it without");
    if (st->net.op == SD_NET_ERRORS && !count) st->net.value = 1;
    return SD_OK;
}

/* The step at line n above st that can be a fault, or NULL (why says). */
static const sd_step_t *sd_expect_fault_step(const sd_scenario_t *sc, const sd_step_t *st, int n, const char **found) {
    *found = NULL;
    for (int i = 0; i < sc->nsteps && &sc->steps[i] != st; i++) {
        const sd_step_t *s = &sc->steps[i];
        if (s->line != n) continue;
        *found = s->text;
        switch (s->kind) {
        case SD_STEP_KILL: case SD_STEP_STOP: case SD_STEP_RESTART: case SD_STEP_PAUSE: case SD_STEP_NETWORK: case SD_STEP_DAMAGE:
        case SD_STEP_BROKER: case SD_STEP_FAULT:
            return s;
        default:
            return NULL;
        }
    }
    return NULL;
}

/* expect COUNT OP VALUE ... [step=LINE]: counts of the run, and the
 * recovery figures of every fault (or of the fault step at LINE). */
sd_err_t sd_parse_expect(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)present;
    sd_step_t *st = obj;
    int step_line = 0, first_count = 0, first_figure = 0;
    for (int i = 1; i < ts->n; i++) {
        sd_kvtok_t kv;
        sd_split_kv(&ts->t[i], &kv);
        if (!kv.has_op || strcmp(kv.key, "step")) continue;
        int64_t n = 0;
        const char *found = NULL;
        if (kv.op != SD_OP_EQ || sd_util_parse_count(kv.value, &n) || n <= 0 || n > 1000000)
            return sd_perr(c, ts->t[i].line, ts->t[i].col, "expect: expected step=LINE (the line of a fault step above), found \"%s\"", ts->t[i].text);
        if (!sd_expect_fault_step(sc, st, (int)n, &found))
            return found ? sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv),
                                   "expect step=%lld: expected a fault step at line %lld (kill, stop, restart, pause, network, damage, broker, fault), found `%s`",
                                   (long long)n, (long long)n, found)
                         : sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv),
                                   "expect step=%lld: expected a fault step at line %lld above this one, found no step there", (long long)n, (long long)n);
        step_line = (int)n;
    }
    for (int i = 1; i < ts->n; i++) {
        sd_kvtok_t kv;
        sd_split_kv(&ts->t[i], &kv);
        if (!kv.has_op)
            return sd_perr(c, ts->t[i].line, ts->t[i].col, "expect: expected COUNT=N (e.g. unique=120 lost=0), found \"%s\"", ts->t[i].text);
        if (!strcmp(kv.key, "step")) continue;
        int fig = sd_figure_by_name(kv.key);
        const char *name = fig >= 0 ? sd_figure_name(fig) : sd_scenario_count_canonical(kv.key);
        if (!name)
            return sd_perr(c, ts->t[i].line, ts->t[i].col,
                           "expect: expected a count name (produced, expected, unique, rows, duplicated, lost, unexpected, late_leaked, "
                           "malformed_leaked, quarantined, ...) or a fault's figure (recovery_s, detect_s, replayed_input, rewritten_rows, "
                           "batches_rerun, latency_p99_during_ms, ...), found \"%s\"", kv.key);
        if (fig < 0 && !first_count) first_count = i;
        if (fig >= 0 && !first_figure) first_figure = i;
        st->expect.v = sd_util_xrealloc(st->expect.v, sizeof(*st->expect.v) * (size_t)(st->expect.n + 1));
        sd_expect_t *x = &st->expect.v[st->expect.n];
        memset(x, 0, sizeof(*x));
        x->count = sd_util_strdup(name);
        x->op = kv.op;
        x->per_fault = fig >= 0;
        x->figure = fig >= 0 ? fig : 0;
        x->step_line = fig >= 0 ? step_line : 0;
        st->expect.n++;
        if (fig >= 0) {
            /* a figure in seconds takes a fraction (recovery_s<=2.5) */
            char *end = NULL;
            double d = strtod(kv.value, &end);
            int ok = sd_figure_unit(fig) == 's' ? end != kv.value && !*end && d >= 0 && d < 1e9 : !sd_util_parse_count(kv.value, &x->value);
            if (!ok)
                return sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv), "expect %s: expected %s, found \"%s\"", kv.key,
                               sd_figure_unit(fig) == 's' ? "seconds (a number like 30 or 2.5)" : "a whole number", kv.value);
            if (sd_figure_unit(fig) == 's') x->value = (int64_t)(d * 1000.0 + 0.5);
            continue;
        }
        const char *other = isalpha((unsigned char)kv.value[0]) ? sd_scenario_count_canonical(kv.value) : NULL;
        if (other) x->value_count = sd_util_strdup(other);
        else if (sd_util_parse_count(kv.value, &x->value))
            return sd_perr(c, ts->t[i].line, sd_value_col(&ts->t[i], &kv), "expect %s: expected a whole number or a count name, found \"%s\"",
                           kv.key, kv.value);
    }
    if (step_line && first_count) {
        sd_kvtok_t kv;
        sd_split_kv(&ts->t[first_count], &kv);
        return sd_perr(c, ts->t[first_count].line, ts->t[first_count].col,
                       "expect: step= names one fault, and %s is a count of the whole run: write it on an `expect` line of its own", kv.key);
    }
    if (step_line && !first_figure)
        return sd_perr(c, ts->t[0].line, sd_end_col(ts), "expect step=%d: expected a fault's figure (recovery_s<=30, rewritten_rows<=500, ...), found none",
                       step_line);
    return SD_OK;
}
