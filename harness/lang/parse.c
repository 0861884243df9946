/* parse.c - tokenizer, parser and validator of .drill files.
 *
 * Lines are split into words the way a careful shell would, but nothing is
 * ever run through a shell: double quotes group (with \" and \\ escapes),
 * single quotes group literally, # begins a comment at the start of a word,
 * a trailing backslash continues the line. Each word keeps its line and
 * column so every error can point at it. Each line is then read by the
 * language's table (lang.c) into the plan (scenario.h). */
#include <ctype.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang.h"
#include "scenario.h"
#include "util.h"

/* ---- tokens ---- */

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
                /* single quotes are literal, braces too: doubled, they come
                 * out of the substitutions as themselves */
                if (q == '\'' && (d == '{' || d == '}')) sd_buf_putc(&w, d);
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

/* The line as the run shows it (a step's text): user variables filled in
 * (outside single quotes), everything else as written. */
static void sd_subst_raw(sd_pctx_t *c, sd_toks_t *ts) {
    const char *s = ts->raw;
    if (!s || !strchr(s, '{')) return;
    sd_buf_t b;
    sd_buf_init(&b);
    int single = 0;
    for (size_t i = 0; s[i];) {
        if (s[i] == '\'') single = !single;
        if (!single && s[i] == '{' && s[i + 1] == '{') { sd_buf_puts(&b, "{{"); i += 2; continue; }
        if (!single && s[i] == '{') {
            size_t n = strcspn(s + i + 1, "{} ");
            if (s[i + 1 + n] == '}') {
                char *name = sd_util_strndup(s + i + 1, n);
                const char *v = sd_kvlist_get(c->vars, name);
                free(name);
                if (v) {
                    sd_buf_puts(&b, v);
                    i += n + 2;
                    continue;
                }
            }
        }
        sd_buf_putc(&b, s[i]);
        i++;
    }
    free(ts->raw);
    ts->raw = sd_buf_steal(&b);
}

/* {name:unit}: user variable name, a duration, written as a whole number
 * of unit (ms, s, m or h) into b: `--within {within:ms}` beside the
 * model's `within={within}`, one value for both. */
static sd_err_t sd_subst_unit(sd_pctx_t *c, const sd_tok_t *t, const char *name, size_t nl, const char *unit, size_t ul, int at,
                              sd_buf_t *b) {
    static const struct { const char *u; int64_t ms; } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    int col = t->col + (t->quoted ? 0 : at);
    char *nm = sd_util_strndup(name, nl);
    const char *v = sd_kvlist_get(c->vars, nm);
    int64_t per = 0, ms = 0;
    for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++)
        if (strlen(units[k].u) == ul && !memcmp(units[k].u, unit, ul)) per = units[k].ms;
    sd_err_t e = SD_OK;
    if (!per)
        e = sd_perr(c, t->line, col, "{%s:%.*s}: expected a unit of ms, s, m or h after the colon, found \"%.*s\"", nm, (int)ul, unit,
                    (int)ul, unit);
    else if (!v)
        e = sd_perr(c, t->line, col, "undefined variable {%s} in {%s:%.*s}: expected a `set %s=DURATION` line or --set %s=DURATION "
                    "(a unit renders a variable of the drill, not a run-time placeholder)", nm, nm, (int)ul, unit, nm, nm);
    else if (sd_util_parse_duration(v, &ms))
        e = sd_perr(c, t->line, col, "{%s:%.*s}: expected %s to hold a duration (5m, 300s, 1500ms), found \"%s\"", nm, (int)ul, unit, nm, v);
    else if (ms % per)
        e = sd_perr(c, t->line, col, "{%s:%.*s}: %s=%s is not a whole number of %.*s (write {%s:ms})", nm, (int)ul, unit, nm, v, (int)ul,
                    unit, nm);
    else
        sd_buf_printf(b, "%lld", (long long)(ms / per));
    free(nm);
    return e;
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
            /* {name:unit}: a duration variable in ms, s, m or h */
            const char *colon = end ? memchr(s + i + 1, ':', n) : NULL;
            if (colon) {
                sd_err_t e = sd_subst_unit(c, t, s + i + 1, (size_t)(colon - (s + i + 1)), colon + 1, (size_t)(end - colon - 1), (int)i, &b);
                if (e) { sd_buf_free(&b); return e; }
                i += n + 2;
                continue;
            }
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
            if (v && (c->expanded += strlen(v)) > SD_EXPAND_MAX) {
                sd_err_t e = sd_perr(c, t->line, t->col + (t->quoted ? 0 : (int)i),
                                     "{%s}: the drill's variables expand to more than %zu MB in all here; expected a drill of "
                                     "ordinary size (is a large variable used many times?)", name, SD_EXPAND_MAX >> 20);
                free(name);
                sd_buf_free(&b);
                return e;
            }
            if (v) {
                sd_buf_puts(&b, v);
            } else if (sd_is_runtime_var(name, n)) {
                sd_buf_append(&b, s + i, n + 2);
            } else {
                /* the run-time placeholders, then the drill's own variables: the words a typo may be near */
                sd_buf_t known;
                sd_buf_init(&known);
                for (int j = 0; sd_scenario_runtime_vars[j]; j++) sd_buf_printf(&known, "%s%s", j ? ", " : "", sd_scenario_runtime_vars[j]);
                size_t runtime_len = known.len;
                for (int j = 0; c->vars && j < c->vars->n; j++) sd_buf_printf(&known, ", %s", c->vars->v[j].key);
                char near[96];
                sd_err_t e = sd_perr(c, t->line, t->col + (t->quoted ? 0 : (int)i),
                                     "undefined variable {%s}: expected a `set %s=...` line or --set %s=VALUE (run-time placeholders: %.*s)%s",
                                     name, name, name, (int)runtime_len, known.data, sd_lang_near(name, known.data, near, sizeof(near)));
                sd_buf_free(&known);
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

/* Checks that need the whole file: what each step needs declared or done
 * before it (the table's `needs`), and the order of start and restart. */
/* deploy lines: the three a follower needs, and nothing a deployed
 * pipeline cannot do (process/deployed.h). */
static sd_err_t sd_validate_deploy(sd_pctx_t *c, sd_scenario_t *sc) {
    int first = 0;
    for (int k = 0; k < SD_DEPLOY__COUNT; k++)
        if (sc->deploy[k].argv && (!first || sc->deploy[k].line < first)) first = sc->deploy[k].line;
    if (!first) return SD_OK;
    if (sc->argv)
        return sd_perr(c, sc->pipeline_line, 1, "pipeline: expected either a `pipeline` line or `deploy` lines (line %d), found both", first);
    static const int need[] = {SD_DEPLOY_START, SD_DEPLOY_STATUS, SD_DEPLOY_KILL};
    for (int i = 0; i < 3; i++)
        if (!sc->deploy[need[i]].argv)
            return sd_perr(c, first, 1, "deploy: expected `deploy start`, `deploy status` and `deploy kill` lines (stop and logs are "
                           "optional), found no `deploy %s`", sd_deploy_words[need[i]]);
    for (int i = 0; i < sc->nsteps; i++) {
        const sd_step_t *st = &sc->steps[i];
        if (st->kind == SD_STEP_PAUSE || st->kind == SD_STEP_RESUME)
            return sd_perr(c, st->line, 1, "%s: a deployed pipeline cannot be frozen by the harness (use `fault NAME` with a command "
                           "that can)", st->kind == SD_STEP_PAUSE ? "pause" : "resume");
        if (st->kind == SD_STEP_KILL && st->proc.signal != SIGKILL && st->proc.signal != SIGTERM)
            return sd_perr(c, st->line, 1, "kill: a deployed pipeline is killed by `deploy kill` (signal=KILL) or stopped by `deploy "
                           "stop` (signal=TERM), found another signal");
        if (st->kind == SD_STEP_KILL && st->proc.mid_batch == SD_LAND_AFTER_SINK_COMMIT)
            return sd_perr(c, st->line, 1, "kill after-sink-commit: a deployed pipeline cannot be frozen at the sink's commit");
        /* proc is one member of the step's union: read only in its steps */
        if (st->kind == SD_STEP_SCALE || (sd_step_args(st->kind) == SD_ARGS_PROC && st->proc.instance))
            return sd_perr(c, st->line, 1, "%s: a deployed pipeline has one instance (scale it with its own tools, in a `fault` command)",
                           st->kind == SD_STEP_SCALE ? "scale" : "instance=");
    }
    return SD_OK;
}

static sd_err_t sd_validate(sd_pctx_t *c, sd_scenario_t *sc) {
    int started = 0, running = 0, target = 0;
    sd_err_t de = sd_validate_deploy(c, sc);
    if (de) return de;
    if (sc->instances > 1 && sc->progress == SD_PROGRESS_SPARK)
        return sd_perr(c, sc->pipeline_line, 1, "pipeline: instances= with `progress spark`: a Spark query's checkpoint has one "
                       "writer (several consumers of one group print markers or use `progress group`)");
    for (int k = 0; k < sc->nsinks; k++)
        if (!sc->sinks[k].is_quarantine) target = 1;
    const char *fmt = sc->events_format == 3 ? "json-schema" : sc->events_format == 2 ? "protobuf" : "avro";
    if (sc->events_format && !sc->registry_url)
        return sd_perr(c, sc->events_line, 1, "events format=%s: expected a `registry url=URL` line (the schema registry its schema "
                       "goes to; scenarios/env/registry/registry.sh start DIR starts one), found none", fmt);
    if (sc->events_format && sc->has_deliveries)
        return sd_perr(c, sc->deliveries_line, 1, "deliveries: the second source's events are JSON; expected no `deliveries` line "
                       "beside events format=%s", fmt);
    for (int i = 0; i < sc->nsteps; i++) {
        const sd_step_t *st = &sc->steps[i];
        if (st->kind != SD_STEP_NETWORK || !st->net.on) continue;
        if (!sc->registry_proxy)
            return sd_perr(c, st->line, 1, "network on=registry: expected `registry url=URL proxy` (the proxy the pipeline reaches "
                           "the registry through), found %s", sc->registry_url ? "a registry line without proxy" : "no registry line");
        if (st->net.op == SD_NET_ERRORS)
            return sd_perr(c, st->line, 1, "network errors= on=registry: broker request errors are the embedded cluster's; "
                           "expected latency=, reset, blackhole, bandwidth= or idle-timeout=");
    }
    for (int i = 0; sc->events_format >= 2 && i < sc->nsteps; i++)
        if (sc->steps[i].kind == SD_STEP_INJECT && sc->steps[i].send.inject[SD_INJ_DRIFT])
            return sd_perr(c, sc->steps[i].line, 1, "inject drift=: the schema evolves in Avro only; expected no drift= with events "
                           "format=%s", fmt);
    for (int i = 0; i < sc->nsteps; i++) {
        sd_step_t *st = &sc->steps[i];
        const sd_lang_entry_t *e = sd_lang_step_entry(st->kind);
        const char *name = st->kind == SD_STEP_DAMAGE ? "damage" : e->name;
        int needs = e->needs;
        if ((needs & SD_NEEDS_PIPELINE) && !sc->argv && !sc->deploy[SD_DEPLOY_START].argv)
            return sd_perr(c, st->line, 1, "%s: expected a `pipeline` line (or `deploy` lines) in the header to start, found none", name);
        if ((needs & SD_NEEDS_STARTED) && !started)
            return sd_perr(c, st->line, 1, "%s: expected a `start` step before it, found none", name);
        if ((needs & SD_NEEDS_SOURCE) && !sc->has_source)
            return sd_perr(c, st->line, 1, "%s: expected a `source kafka topic=...` line in the header, found none", name);
        if ((needs & SD_NEEDS_FAKETIME) && !sc->faketime)
            return sd_perr(c, st->line, 1, "%s: expected a `clock faketime` line in the header (the pipeline must run under libfaketime), found none", name);
        if ((needs & SD_NEEDS_BATCHES) && sc->progress != SD_PROGRESS_MARKERS && sc->progress != SD_PROGRESS_SPARK &&
            sc->progress != SD_PROGRESS_FLINK)
            return sd_perr(c, st->line, 1, "%s: expected `progress markers`, `progress spark` or `progress flink` (batches must be visible), found none", name);
        if (st->kind == SD_STEP_AWAIT_SINK) {
            int found = 0;
            for (int k = 0; k < sc->nsinks; k++)
                if (!strcmp(sc->sinks[k].name, st->await.sink)) found = 1;
            if (!found)
                return sd_perr(c, st->line, 1, "await sink: expected a declared sink named \"%s\", found %s", st->await.sink,
                               sc->nsinks ? "only other names" : "no `sink` line");
        } else if ((needs & SD_NEEDS_SINK) && !sc->nsinks) {
            return sd_perr(c, st->line, 1, "%s: expected a `sink` line in the header, found none", name);
        }
        /* a member's own batches are seen only in its markers: the group's
         * commits, a sink's growth do not say whose batch was in flight */
        if ((st->kind == SD_STEP_KILL || st->kind == SD_STEP_PAUSE) && st->proc.instance && st->proc.mid_batch != SD_LAND_NOW &&
            sc->progress != SD_PROGRESS_MARKERS)
            return sd_perr(c, st->line, 1, "%s instance=%d: landing in one instance's batch needs its batch markers (`progress "
                           "markers`): the group's commits do not say which member's batch was in flight (kill every instance, "
                           "or land `now`)", name, st->proc.instance);
        if (st->kind == SD_STEP_INJECT && st->send.inject[SD_INJ_EDGE] && sc->model.kind != SD_MODEL_WINDOWS &&
            sc->model.kind != SD_MODEL_JOIN)
            return sd_perr(c, st->line, 1, "inject edges=: expected a `model windows` or `model join` line (the edges are the "
                           "model's), found %s", sc->model.kind ? "another model" : "none");
        if (st->kind == SD_STEP_INJECT && st->send.inject[SD_INJ_EDGE] && sc->model.kind == SD_MODEL_JOIN && sc->deliveries_log)
            return sd_perr(c, st->line, 1, "inject edges=: a join's edges are placed on generated deliveries, found `deliveries log=`");
        if ((st->kind == SD_STEP_REPLAY || st->kind == SD_STEP_INJECT) && st->send.side && !sc->has_deliveries)
            return sd_perr(c, st->line, 1, "%s source=deliveries: expected a `deliveries` line in the header (the second source), "
                           "found none", name);
        if (st->kind == SD_STEP_INJECT && st->send.side) {
            if (sc->deliveries_log)
                return sd_perr(c, st->line, 1, "inject source=deliveries: the deliveries it sends are the generator's, found "
                               "`deliveries log=` (put such deliveries in the log)");
            for (int k = 0; k < SD_INJ__COUNT; k++)
                if (st->send.inject[k] && !sd_inject_on_deliveries((sd_inject_kind_t)k))
                    return sd_perr(c, st->line, 1, "inject source=deliveries: expected late=, out-of-order=, future=, retry-dup= "
                                   "or malformed= (the faults a delivery can have), found %s=", sd_inject_name((sd_inject_kind_t)k));
        }
        if (st->kind == SD_STEP_REPLAY && st->send.side && st->send.range_partition >= 0)
            return sd_perr(c, st->line, 1, "replay source=deliveries: expected N deliveries, not range= (a range is of the source topic)");
        if (st->kind == SD_STEP_EXPECT && !target)
            return sd_perr(c, st->line, 1, "expect: expected a target `sink` line (not only `quarantine`), found none");
        /* a start of the whole pipeline needs it stopped (by `stop`, `kill`
         * or `scale to=0`); `start instance=K` starts one that is not running */
        if (st->kind == SD_STEP_START && running && !st->proc.instance)
            return sd_perr(c, st->line, 1, "start: expected the pipeline to be stopped, found it started already (use `restart`, or "
                           "`stop` or `kill` before this line)");
        if (st->kind == SD_STEP_START || st->kind == SD_STEP_RESTART) started = running = 1;
        if ((st->kind == SD_STEP_STOP || st->kind == SD_STEP_KILL) && !st->proc.instance) running = 0;
        if (st->kind == SD_STEP_SCALE) running = st->proc.scale_to > 0;
    }
    if (sc->model.kind) {
        const char *want = sc->model.sink ? sc->model.sink : "target";
        int found = 0;
        for (int k = 0; k < sc->nsinks; k++)
            if (!sc->sinks[k].is_quarantine && !strcmp(sc->sinks[k].name, want)) found = 1;
        if (!found)
            return sd_perr(c, sc->model.line, 1, "model: expected a declared sink named \"%s\" (not a quarantine) to judge, found %s", want,
                           sc->nsinks ? "only other names" : "no `sink` line");
    }
    if (sc->nsteps == 0)
        return sd_perr(c, 1, 1, "expected at least one step (start, produce, ..., expect), found none");
    /* the name is the run folder's: never a path, never . or .. */
    size_t nl = strlen(sc->name);
    if (!nl || nl > 128 || sc->name[0] == '.' || strspn(sc->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != nl)
        return sd_perr(c, 1, 1, "the scenario's name comes from its file name and names its run folder: expected letters, digits, "
                       "'.', '_' or '-' (not first a '.', up to 128), found \"%.140s\" (add a `name NAME` line)", sc->name);
    return SD_OK;
}

/* The leading comment block: the scenario's description. */
static char *sd_description(const char *text) {
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
    return sd_buf_steal(&d);
}

/* Does the drill's text use {name} (or {name:unit})? */
static int sd_text_uses(const char *text, const char *name) {
    size_t n = strlen(name);
    for (const char *p = strchr(text, '{'); p; p = strchr(p + 1, '{'))
        if (!strncmp(p + 1, name, n) && (p[1 + n] == '}' || p[1 + n] == ':')) return 1;
    return 0;
}

/* --set NAME=... for a name the drill neither sets nor uses is a typo, not
 * a no-op: refused, with the names it does use. */
static sd_err_t sd_check_overrides(sd_pctx_t *c, const sd_kvlist_t *declared, const char *text, const sd_kvlist_t *overrides) {
    for (int i = 0; overrides && i < overrides->n; i++) {
        const char *k = overrides->v[i].key;
        if (sd_kvlist_get(declared, k) || sd_text_uses(text, k)) continue;
        sd_buf_t names;
        sd_buf_init(&names);
        for (int j = 0; j < declared->n; j++) sd_buf_printf(&names, "%s%s", j ? ", " : "", declared->v[j].key);
        char near[96];
        sd_err_t e = sd_err_set(c->err, c->errlen, SD_ERR_SCENARIO, "%s: --set %s=...: the drill has no variable %s (%s%s)%s", c->path, k,
                                k, declared->n ? "its `set` variables: " : "it sets none", names.len ? names.data : "",
                                sd_lang_near(k, names.data, near, sizeof(near)));
        sd_buf_free(&names);
        return e;
    }
    return SD_OK;
}

/* Pass 1: `set` lines define defaults; overrides win. They are read first
 * so a variable may be used above its `set` line. */
static sd_err_t sd_read_variables(sd_pctx_t *c, sd_scenario_t *sc, const char *text, const sd_kvlist_t *overrides) {
    size_t pos = 0;
    int lineno = 1;
    sd_err_t rc = SD_OK;
    sd_kvlist_t declared = {0};
    while (text[pos] && !rc) {
        sd_toks_t ts;
        size_t at = pos;
        if ((rc = sd_tokenize(c, text, &pos, &lineno, &ts))) {
            /* a line that cannot be split is named by pass 2, with the others */
            sd_toks_free(&ts);
            if (pos == at) { sd_kvlist_free(&declared); return rc; }
            rc = SD_OK;
            continue;
        }
        if (ts.n && !strcmp(ts.t[0].text, "set")) {
            sd_kvlist_t tmp = {0};
            rc = sd_lang_parse_kvs(c, &ts, "set", &tmp, 0);
            for (int i = 0; !rc && i < tmp.n; i++) {
                if (!sd_kvlist_get(overrides, tmp.v[i].key)) sd_kvlist_add(&sc->vars, tmp.v[i].key, tmp.v[i].value);
                sd_kvlist_add(&declared, tmp.v[i].key, tmp.v[i].value);
            }
            sd_kvlist_free(&tmp);
        }
        sd_toks_free(&ts);
    }
    if (!rc) rc = sd_check_overrides(c, &declared, text, overrides);
    sd_kvlist_free(&declared);
    if (rc) return rc;
    for (int i = 0; overrides && i < overrides->n; i++) sd_kvlist_add(&sc->vars, overrides->v[i].key, overrides->v[i].value);
    /* a value may hold run-time placeholders ({run}, ...), nothing else:
     * what `check` accepts, `run` can expand */
    for (int i = 0; i < sc->vars.n; i++) {
        const char *v = sc->vars.v[i].value;
        for (size_t k = 0; v[k]; k++) {
            if ((v[k] == '{' && v[k + 1] == '{') || (v[k] == '}' && v[k + 1] == '}')) { k++; continue; }
            if (v[k] != '{') continue;
            size_t n = strcspn(v + k + 1, "}");
            if (!v[k + 1 + n] || !sd_is_runtime_var(v + k + 1, n))
                return sd_err_set(c->err, c->errlen, SD_ERR_SCENARIO,
                                  "%s: variable %s=%s: {%.*s} is no run-time placeholder (run, brokers, proxy, topic, checkpoint, "
                                  "pipelines, here, seed, tag, group, name, libexec, registry-url, kafka-config; {{ for a literal brace)",
                                  c->path, sc->vars.v[i].key, v, (int)(n > 64 ? 64 : n), v + k + 1);
            k += n + 1;
        }
    }
    for (int i = 0; i < sc->vars.n; i++)
        if (sd_is_runtime_var(sc->vars.v[i].key, strlen(sc->vars.v[i].key)))
            return sd_err_set(c->err, c->errlen, SD_ERR_SCENARIO, "%s: variable {%s} is provided by the run and cannot be set", c->path,
                              sc->vars.v[i].key);
    return SD_OK;
}

/* How many refused lines one parse names. */
#define SD_PARSE_MAX_ERRORS 10

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
    sd_lang_header_defaults(sc);
    sc->start_ms = 1767254400000LL; /* 2026-01-01T08:00:00Z */
    sc->id_field = sd_util_strdup("event_id");
    sc->time_field = sd_util_strdup("event_time");
    sc->description = sd_description(text);

    if ((rc = sd_read_variables(&c, sc, text, overrides))) goto fail;
    /* every line is read even after one is refused, so `check` names each
     * wrong line at once (up to SD_PARSE_MAX_ERRORS); the plan is kept only
     * when none is, and only then is it validated as a whole */
    sd_buf_t errs;
    sd_buf_init(&errs);
    int nerrs = 0;
    size_t pos = 0;
    int lineno = 1;
    while (text[pos]) {
        sd_toks_t ts;
        size_t at = pos;
        sd_err_t e = sd_tokenize(&c, text, &pos, &lineno, &ts);
        for (int i = 0; !e && i < ts.n; i++) e = sd_subst_user(&c, &ts.t[i]);
        if (!e) sd_subst_raw(&c, &ts);
        if (!e && ts.n) e = sd_lang_parse_line(&c, sc, &ts);
        sd_toks_free(&ts);
        if (!e) continue;
        rc = e;
        if (nerrs++ < SD_PARSE_MAX_ERRORS) sd_buf_printf(&errs, "%s%s", errs.len ? "\n" : "", err);
        if (pos == at) break; /* the tokenizer could not move past it */
    }
    if (nerrs) {
        if (nerrs > SD_PARSE_MAX_ERRORS) sd_buf_printf(&errs, "\n%s: %d more errors not shown", path, nerrs - SD_PARSE_MAX_ERRORS);
        snprintf(err, errlen, "%s", errs.data);
        sd_buf_free(&errs);
        goto fail;
    }
    sd_buf_free(&errs);
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
        /* where the NUL is, as line:column */
        size_t at = strlen(text);
        int line = 1, col = 1;
        for (size_t i = 0; i < at; i++) {
            if (text[i] == '\n') line++, col = 1;
            else col++;
        }
        free(text);
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d:%d: expected a text file, found a NUL byte", path, line, col);
    }
    /* a byte-order mark (some editors write one) is not part of the text */
    const char *body = text;
    if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) body += 3;
    sd_err_t rc = sd_scenario_parse_text(path, body, overrides, out, err, errlen);
    free(text);
    return rc;
}
