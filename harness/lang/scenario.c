/* scenario.c - the plan a drill parses into: its names (counts, profiles,
 * dispositions, operators), run-time placeholder expansion, and freeing it.
 * The parsing itself is parse.c's, the language's table lang.c's. */
#include "scenario.h"

#include <ctype.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *const sd_deploy_words[] = {"start", "status", "stop", "kill", "logs", NULL};

const char *const sd_scenario_runtime_vars[] = {
    "run", "brokers", "topic", "checkpoint", "pipelines", "here", "seed", "tag",
    "group", "name", "proxy", "deliveries", "libexec", "instance", "deployment", "registry-url", "kafka-config", NULL};

/* Canonical names first; summary.json "counts" uses these keys (counts.h). */
#define SD_COUNT_NAME(name, kind, grows, meaning) #name,
const char *const sd_scenario_count_names[] = {SD_COUNTS(SD_COUNT_NAME) NULL};
#undef SD_COUNT_NAME

int sd_scenario_is_state_count(const char *name) { return !strncmp(name, "state_", 6); }

int sd_scenario_is_bounds_count(const char *name) {
#define SD_COUNT_BOUNDS(n, kind, grows, meaning) if (kind == SD_CK_BOUNDS && !strcmp(name, #n)) return 1;
    SD_COUNTS(SD_COUNT_BOUNDS)
#undef SD_COUNT_BOUNDS
    return 0;
}

int sd_scenario_is_group_count(const char *name) {
#define SD_COUNT_MODEL(n, kind, grows, meaning) if (kind == SD_CK_MODEL && !strcmp(name, #n)) return 1;
    SD_COUNTS(SD_COUNT_MODEL)
#undef SD_COUNT_MODEL
    return 0;
}

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

const char *sd_scenario_count_alias(const char *name) {
    for (int i = 0; sd_count_aliases[i].alias; i++)
        if (!strcmp(name, sd_count_aliases[i].name)) return sd_count_aliases[i].alias;
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
    "duplicate-keys", "bad-magic", "unknown-schema-id", "truncated-record", "foreign-schema",
    "schema-violation"};

static const char *const sd_inject_names[SD_INJ__COUNT] = {
    "late", "out-of-order", "future", "at-max", "at-watermark", "burst", "skew", "drift", "no-key", "retry-dup", "delete", "edges"};

const char *sd_inject_name(sd_inject_kind_t k) {
    return (int)k >= 0 && k < SD_INJ__COUNT ? sd_inject_names[k] : "?";
}

int sd_inject_on_deliveries(sd_inject_kind_t k) {
    return k == SD_INJ_LATE || k == SD_INJ_OUT_OF_ORDER || k == SD_INJ_FUTURE || k == SD_INJ_RETRY_DUP;
}

const char *sd_malformed_name(sd_malformed_t m) {
    return (int)m >= 0 && m < SD_MAL__COUNT ? sd_malformed_names[m] : "?";
}

int sd_malformed_parse(const char *name) {
    for (int m = 0; m < SD_MAL__COUNT; m++)
        if (!strcmp(name, sd_malformed_names[m])) return m;
    return -1;
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

/* ---- scenario ---- */

sd_step_args_t sd_step_args(sd_step_kind_t kind) {
    switch (kind) {
    case SD_STEP_PRODUCE: case SD_STEP_REPLAY: case SD_STEP_INJECT: return SD_ARGS_SEND;
    case SD_STEP_START: case SD_STEP_STOP: case SD_STEP_KILL: case SD_STEP_RESTART: case SD_STEP_PAUSE: case SD_STEP_RESUME:
    case SD_STEP_BROKER: case SD_STEP_FAULT: case SD_STEP_SCALE:
        return SD_ARGS_PROC;
    case SD_STEP_AWAIT_SINK: case SD_STEP_AWAIT_QUIESCENT: case SD_STEP_AWAIT_BATCHES: return SD_ARGS_AWAIT;
    case SD_STEP_CLOCK: return SD_ARGS_CLOCK;
    case SD_STEP_DAMAGE: return SD_ARGS_DAMAGE;
    case SD_STEP_NETWORK: return SD_ARGS_NET;
    case SD_STEP_NOTE: return SD_ARGS_NOTE;
    case SD_STEP_EXPECT: return SD_ARGS_EXPECT;
    case SD_STEP_OPERATOR: return SD_ARGS_OPER;
    default: return SD_ARGS_NONE; /* sleep (its timeout), heal, resolve */
    }
}

/* A step's own strings, by the member its kind uses. */
static void sd_step_free(sd_step_t *st) {
    free(st->text);
    switch (sd_step_args(st->kind)) {
    case SD_ARGS_SEND: free(st->send.skew_key); break;
    case SD_ARGS_PROC: free(st->proc.variant); break;
    case SD_ARGS_AWAIT: free(st->await.sink); break;
    case SD_ARGS_DAMAGE: free(st->damage.path); break;
    case SD_ARGS_NET: free(st->net.errors); break;
    case SD_ARGS_NOTE: free(st->note.text); break;
    case SD_ARGS_OPER:
        free(st->oper.text);
        for (int k = 0; k < st->oper.argc; k++) free(st->oper.argv[k]);
        free(st->oper.argv);
        break;
    case SD_ARGS_EXPECT:
        for (int k = 0; k < st->expect.n; k++) { free(st->expect.v[k].count); free(st->expect.v[k].value_count); }
        free(st->expect.v);
        break;
    default: break;
    }
}

void sd_scenario_free(sd_scenario_t *sc) {
    if (!sc) return;
    free(sc->path); free(sc->dir); free(sc->name); free(sc->description); free(sc->topic); free(sc->deliveries_topic); free(sc->deliveries_log); free(sc->deliveries_id);
    free(sc->deliveries_key); free(sc->deliveries_time);
    free(sc->log_path); free(sc->log_id_field); free(sc->schema_path); free(sc->registry_url);
    free(sc->registry_auth); free(sc->registry_ca); free(sc->registry_cert); free(sc->registry_key); free(sc->id_field); free(sc->time_field);
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
    for (int v = 0; v < sc->nfault_cmds; v++) {
        for (int i = 0; i < sc->fault_cmds[v].argc; i++) free(sc->fault_cmds[v].argv[i]);
        free(sc->fault_cmds[v].argv);
        free(sc->fault_cmds[v].name);
    }
    free(sc->fault_cmds);
    for (int k = 0; k < SD_DEPLOY__COUNT; k++) {
        for (int i = 0; i < sc->deploy[k].argc; i++) free(sc->deploy[k].argv[i]);
        free(sc->deploy[k].argv);
    }
    sd_kvlist_free(&sc->env);
    for (int i = 0; i < sc->version_argc; i++) free(sc->version_argv[i]);
    free(sc->version_argv);
    free(sc->version_files);
    free(sc->checkpoint);
    free(sc->progress_group);
    free(sc->model.sink); free(sc->model.keys); free(sc->model.value); free(sc->model.aggs); free(sc->model.start_col); free(sc->model.fields); free(sc->model.left_col); free(sc->model.right_col);
    for (int a = 0; a < 5; a++) free(sc->model.agg_cols[a]);
    sd_kvlist_free(&sc->producer_props);
    sd_kvlist_free(&sc->vars);
    free(sc->faketime_lib);
    for (int i = 0; i < sc->nsteps; i++) sd_step_free(&sc->steps[i]);
    free(sc->steps);
    free(sc);
}
