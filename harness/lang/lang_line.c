/* lang_line.c - a line of a drill found in the language's table and parsed
 * by its entry's keys and hooks, a step made of it, the header's defaults
 * (see lang_int.h). The one file of the machinery that reads the table. */
#include "figures.h"
#include "lang_int.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sqlite3.h>
#include <string.h>

void sd_lang_header_defaults(sd_scenario_t *sc) {
    for (const sd_lang_entry_t *e = sd_lang_entries; e->name; e++)
        if (e->role == SD_LANG_HEADER) sd_apply_defaults(e, sc);
}

static sd_step_t *sd_new_step(sd_scenario_t *sc, const sd_lang_entry_t *e, const sd_toks_t *ts) {
    sc->steps = sd_util_xrealloc(sc->steps, sizeof(*sc->steps) * (size_t)(sc->nsteps + 1));
    sd_step_t *st = &sc->steps[sc->nsteps++];
    memset(st, 0, sizeof(*st));
    st->kind = e->kind;
    st->line = ts->line;
    st->text = sd_util_strdup(ts->raw);
    if (sd_step_args(e->kind) == SD_ARGS_PROC) st->proc.after_ms = -1;
    if (e->kind == SD_STEP_REPLAY || e->kind == SD_STEP_PRODUCE) st->send.range_partition = -1;
    st->timeout_ms = e->timeout_ms;
    sd_apply_defaults(e, st);
    return st;
}

const sd_lang_entry_t *sd_lang_find(const sd_toks_t *ts) {
    if (ts->n >= 2) {
        size_t a = strlen(ts->t[0].text);
        for (const sd_lang_entry_t *e = sd_lang_entries; e->name; e++)
            if (sd_lang_name_words(e) == 2 && !strncmp(e->name, ts->t[0].text, a) && e->name[a] == ' ' &&
                !strcmp(e->name + a + 1, ts->t[1].text))
                return e;
    }
    for (const sd_lang_entry_t *e = sd_lang_entries; e->name; e++)
        if (sd_lang_name_words(e) == 1 && !strcmp(e->name, ts->t[0].text)) return e;
    return NULL;
}

const sd_lang_entry_t *sd_lang_step_entry(sd_step_kind_t kind) {
    for (const sd_lang_entry_t *e = sd_lang_entries; e->name; e++)
        if (e->role == SD_LANG_STEP && e->kind == kind) return e;
    return NULL;
}

/* A line whose first word starts a two-word entry but whose second word
 * is none of them: "await: expected sink, quiescent or batches". */
static sd_err_t sd_second_word(sd_pctx_t *c, const sd_toks_t *ts) {
    sd_buf_t b;
    sd_buf_init(&b);
    int n = 0;
    size_t a = strlen(ts->t[0].text);
    for (const sd_lang_entry_t *e = sd_lang_entries; e->name; e++)
        if (sd_lang_name_words(e) == 2 && !strncmp(e->name, ts->t[0].text, a) && e->name[a] == ' ') {
            sd_buf_printf(&b, "%s`%s`", n ? ", " : "", e->name + a + 1);
            n++;
        }
    if (!n) {
        sd_buf_free(&b);
        return SD_OK;
    }
    char near[96];
    sd_err_t err = ts->n < 2 ? sd_perr(c, ts->t[0].line, sd_end_col(ts), "%s: expected %s, found the end of the line", ts->t[0].text, b.data)
                             : sd_perr(c, ts->t[1].line, ts->t[1].col, "%s: expected %s, found \"%s\"%s", ts->t[0].text, b.data, ts->t[1].text,
                                       sd_lang_near(ts->t[1].text, b.data, near, sizeof(near)));
    sd_buf_free(&b);
    return err;
}

/* The first words of the entries of one role, each once: "source, events, ...". */
static void sd_first_words(sd_lang_role_t role, sd_buf_t *b) {
    const char *seen[128];
    int n = 0;
    for (const sd_lang_entry_t *e = sd_lang_entries; e->name && n < 128; e++) {
        if (e->role != role) continue;
        size_t len = strcspn(e->name, " ");
        int dup = 0;
        for (int i = 0; i < n && !dup; i++) dup = strlen(seen[i]) >= len && !strncmp(seen[i], e->name, len) && strcspn(seen[i], " ") == len;
        if (dup) continue;
        seen[n++] = e->name;
        sd_buf_printf(b, "%s%.*s", b->len ? ", " : "", (int)len, e->name);
    }
}

static sd_err_t sd_not_found(sd_pctx_t *c, const sd_toks_t *ts) {
    if (sd_second_word(c, ts)) return SD_ERR_SCENARIO;
    sd_buf_t h, s;
    sd_buf_init(&h);
    sd_buf_init(&s);
    sd_first_words(SD_LANG_HEADER, &h);
    sd_first_words(SD_LANG_STEP, &s);
    char near[96];
    sd_buf_printf(&h, ", %s", s.data);
    sd_err_t err = sd_perr(c, ts->t[0].line, ts->t[0].col, "expected a directive (%.*s) or a step (%s), found \"%s\"%s",
                           (int)(h.len - s.len - 2), h.data, s.data, ts->t[0].text, sd_lang_near(ts->t[0].text, h.data, near, sizeof(near)));
    sd_buf_free(&h);
    sd_buf_free(&s);
    return err;
}

sd_err_t sd_lang_parse_line(sd_pctx_t *c, sd_scenario_t *sc, const sd_toks_t *ts) {
    const sd_lang_entry_t *e = sd_lang_find(ts);
    if (!e) return sd_not_found(c, ts);
    c->entry = e;
    int idx = (int)(e - sd_lang_entries);
    if (e->role == SD_LANG_HEADER) {
        if (c->in_steps && strcmp(e->name, "set"))
            return sd_perr(c, ts->t[0].line, ts->t[0].col,
                           "expected a step, found the header directive `%s` after the first step (move it above the steps)", e->name);
        if (e->once && idx < 64) {
            if (c->seen[idx])
                return sd_perr(c, ts->t[0].line, ts->t[0].col, "%s: expected one `%s` line, found a second (the first is at line %d)",
                               e->name, e->name, c->seen[idx]);
            c->seen[idx] = ts->t[0].line;
        }
        uint64_t present = 0;
        sd_err_t err = e->parse ? e->parse(c, sc, sc, ts, 0) : sd_parse_keys(c, e, sc, sc, ts, &present);
        if (!err && e->finish) err = e->finish(c, sc, sc, ts, present);
        return err;
    }
    c->in_steps = 1;
    sd_step_t *st = sd_new_step(sc, e, ts);
    uint64_t present = 0;
    sd_err_t err = e->parse ? e->parse(c, sc, st, ts, 0) : sd_parse_keys(c, e, sc, st, ts, &present);
    /* sc->steps may not move between here and the hook: nothing adds a step */
    if (!err && e->finish) err = e->finish(c, sc, st, ts, present);
    return err;
}
