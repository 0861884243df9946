/* lang_help.c - help, docs/language.md's reference tables and the man page,
 * printed from the language's table (see lang_int.h). */
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

static void sd_key_value_form(const sd_lang_key_t *k, sd_buf_t *b) {
    char d[32];
    if (k->meta) { sd_buf_puts(b, k->meta); return; }
    if (k->has_def && (k->type == SD_V_DURATION) && k->def > 0) {
        sd_fmt_duration(k->def, d, sizeof(d));
        sd_buf_puts(b, d);
        return;
    }
    if (k->has_def && (k->type == SD_V_COUNT || k->type == SD_V_INT)) { sd_buf_printf(b, "%" PRId64, k->def); return; }
    if (k->has_def && k->type == SD_V_SEED) { sd_buf_printf(b, "%" PRId64, k->def); return; }
    switch (k->type) {
    case SD_V_CHOICE: sd_join_choices(k->choices, "|", b); return;
    case SD_V_SIGNAL: sd_buf_puts(b, "KILL|TERM|INT|QUIT|HUP"); return;
    case SD_V_COUNT: case SD_V_INT: sd_buf_puts(b, "N"); return;
    case SD_V_DURATION: sd_buf_puts(b, "DURATION"); return;
    case SD_V_SDURATION: sd_buf_puts(b, "±DURATION"); return;
    case SD_V_RATE: sd_buf_puts(b, "R/s"); return;
    case SD_V_FACTOR: sd_buf_puts(b, "Fx"); return;
    case SD_V_BANDWIDTH: sd_buf_puts(b, "RATE"); return;
    case SD_V_FIELD: sd_buf_puts(b, "FIELD"); return;
    case SD_V_TOPIC: case SD_V_NAME: sd_buf_puts(b, "NAME"); return;
    case SD_V_VARIANT: sd_buf_puts(b, "VARIANT"); return;
    case SD_V_KINDS: sd_buf_puts(b, "LIST"); return;
    case SD_V_RANGE: sd_buf_puts(b, "P:FROM-TO"); return;
    case SD_V_START: sd_buf_puts(b, "2026-01-01T08:00:00Z"); return;
    case SD_V_SEED: sd_buf_puts(b, "N"); return;
    default: sd_buf_puts(b, "VALUE"); return;
    }
}

void sd_lang_usage(const sd_lang_entry_t *e, sd_buf_t *out) {
    if (e->usage) { sd_buf_puts(out, e->usage); return; }
    sd_buf_puts(out, e->name);
    for (const sd_lang_key_t *k = e->keys; k && k->name; k++) {
        if (k->form == SD_K_WORD && k->group && k > e->keys && k[-1].form == SD_K_WORD && k[-1].group == k->group) continue;
        sd_buf_putc(out, ' ');
        if (!k->required) sd_buf_putc(out, '[');
        if (k->form == SD_K_WORD) {
            /* a group of words: one slot, the words joined by | */
            for (const sd_lang_key_t *w = k; w->name && w->form == SD_K_WORD && (w == k || (k->group && w->group == k->group)); w++)
                sd_buf_printf(out, "%s%s", w == k ? "" : "|", w->name);
        } else if (k->form == SD_K_POS) {
            sd_buf_puts(out, k->name);
        } else if (k->type == SD_V_ROWS) {
            sd_buf_puts(out, "rows>=N");
        } else if (!strcmp(k->name, "timeout") && e->timeout_ms) {
            char d[32];
            sd_fmt_duration(e->timeout_ms, d, sizeof(d));
            sd_buf_printf(out, "timeout=%s", d);
        } else {
            sd_buf_printf(out, "%s=", k->name);
            sd_key_value_form(k, out);
        }
        if (!k->required) sd_buf_putc(out, ']');
    }
}

/* Markdown table cells: | must not end the cell. */
static void sd_md_cell(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '|') fputs("\\|", f);
        else fputc(*s, f);
    }
}

/* Text for roff: markdown links become their text, backticks and emphasis
 * stars go, a backslash is \e, and a line never starts with a control
 * character ('.' or '\''). */
static void sd_man_text(FILE *f, const char *s) {
    int bol = 1, code = 0;
    const char *start = s;
    for (; *s; s++) {
        if (*s == '`') { code = !code; continue; }
        /* *emphasis* outside code: a star with a word on one side only */
        if (*s == '*' && !code && (s == start || !isalnum((unsigned char)s[-1])) != !isalnum((unsigned char)s[1])) continue;
        if (*s == '[') {
            const char *close = strchr(s, ']');
            if (close && close[1] == '(' && strchr(close, ')')) {
                for (const char *t = s + 1; t < close; t++) {
                    if (*t == '\\') fputs("\\e", f);
                    else if (*t != '`') fputc(*t, f);
                }
                s = strchr(close, ')');
                bol = 0;
                continue;
            }
        }
        if (bol && (*s == '.' || *s == '\'')) fputs("\\&", f);
        if (*s == '\\') fputs("\\e", f);
        else if (*s == '-') fputs("\\-", f);
        else fputc(*s, f);
        bol = *s == '\n';
    }
}

/* Every count, from the one list (counts.h), as a Markdown table. */
static void sd_lang_counts(FILE *f) {
    static const char *const kept[] = {"every run", "with a `model`", "the pipeline's own account (-1 without it)"};
    fputs("\n### Counts\n\n| count | kept | only grows | meaning |\n|---|---|---|---|\n", f);
#define SD_COUNT_ROW(n, kind, grows, meaning)                                                                   \
    {                                                                                                           \
        const char *alias = sd_scenario_count_alias(#n);                                                        \
        fprintf(f, "| `%s`%s%s%s | %s | %s | ", #n, alias ? " [`" : "", alias ? alias : "", alias ? "`]" : "", \
                kept[kind], grows ? "yes" : "");                                                                \
        sd_md_cell(f, meaning);                                                                                 \
        fputs(" |\n", f);                                                                                       \
    }
    SD_COUNTS(SD_COUNT_ROW)
#undef SD_COUNT_ROW
}

/* Every recovery figure, from its one list (figures.h), as a Markdown table. */
static void sd_lang_figures(FILE *f) {
    fputs("\n### Recovery figures\n\nOne set per fault (kill, stop, a crash, a restart of a running pipeline, pause, network, broker, fault, "
          "damage), in summary.json's `faults[].recovery`, the runbook's table and `expect` (docs/oracle.md says how each is "
          "measured). Each rests on one kind of evidence, named in summary.json's `faults[].recovery.evidence`: observed by "
          "the harness itself, recorded by the engine (the progress source's checkpoints, commit logs or group offsets), or "
          "claimed by the pipeline (its batch markers, its log lines, the write times it stamps); an `expect` on a claimed "
          "figure says in its check that it rests on the pipeline's words.\n\n| figure | unit | rests on | meaning |\n|---|---|---|---|\n", f);
    for (int k = 0; k < SD_FIG__COUNT; k++) {
        char u = sd_figure_unit(k);
        /* by its class under an engine's progress source and under batch markers */
        const char *eng = sd_figure_evidence(k, "commits", "spark"), *mark = sd_figure_evidence(k, "commits", "markers");
        fprintf(f, "| `%s` | %s | ", sd_figure_name(k), u == 's' ? "seconds" : u == 'm' ? "ms" : "count");
        if (k == SD_FIG_recovery_s) fputs("observed (by the target); by the commits, as the progress source | ", f);
        else if (strcmp(eng, mark)) fputs("the progress source: engine-recorded, pipeline-claimed for batch markers, observed for sink | ", f);
        else fprintf(f, "%s | ", eng);
        sd_md_cell(f, sd_figure_meaning(k));
        fputs(" |\n", f);
    }
}

/* The header and step tables, as Markdown (docs/language.md) or roff
 * (streamdrill(1)): one walk over the table for both. */
static void sd_lang_tables(FILE *f, int man) {
    for (int role = SD_LANG_HEADER; role <= SD_LANG_STEP; role++) {
        if (man) fputs(role == SD_LANG_HEADER ? ".SS Header directives\n" : ".SS Steps\n", f);
        else fprintf(f, "%s| %s | meaning |\n|---|---|\n", role == SD_LANG_HEADER ? "### Header\n\n" : "### Steps\n\n",
                     role == SD_LANG_HEADER ? "directive" : "step");
        for (const sd_lang_entry_t *e = sd_lang_entries; e->name; e++) {
            if ((int)e->role != role) continue;
            sd_buf_t u;
            sd_buf_init(&u);
            sd_lang_usage(e, &u);
            fputs(man ? ".TP\n.B " : "| `", f);
            (man ? sd_man_text : sd_md_cell)(f, u.data);
            fputs(man ? "\n" : "` | ", f);
            (man ? sd_man_text : sd_md_cell)(f, e->meaning);
            fputs(man ? "\n" : " |\n", f);
            sd_buf_free(&u);
        }
        if (!man && role == SD_LANG_HEADER) fputc('\n', f);
    }
    if (!man) sd_lang_counts(f);
    if (!man) sd_lang_figures(f);
}

void sd_lang_markdown(FILE *f) { sd_lang_tables(f, 0); }

void sd_lang_man(FILE *f) { sd_lang_tables(f, 1); }

int sd_lang_help(FILE *f, const char *name) {
    if (!name) {
        fputs("The .drill language (streamdrill help NAME for one directive or step):\n\nheader directives:\n", f);
        for (int role = SD_LANG_HEADER; role <= SD_LANG_STEP; role++) {
            if (role == SD_LANG_STEP) fputs("\nsteps:\n", f);
            for (const sd_lang_entry_t *e = sd_lang_entries; e->name; e++) {
                if ((int)e->role != role) continue;
                sd_buf_t u;
                sd_buf_init(&u);
                sd_lang_usage(e, &u);
                fprintf(f, "  %s\n", u.data);
                sd_buf_free(&u);
            }
        }
        return 0;
    }
    int found = 0;
    for (const sd_lang_entry_t *e = sd_lang_entries; e->name; e++) {
        const char *sp = strchr(e->name, ' ');
        if (strcmp(e->name, name) && !(sp && !strncmp(e->name, name, (size_t)(sp - e->name)) && !name[sp - e->name])) continue;
        sd_buf_t u;
        sd_buf_init(&u);
        sd_lang_usage(e, &u);
        /* a terminal shows a Markdown link as its text, and the page it names */
        sd_buf_t plain;
        sd_buf_init(&plain);
        for (const char *p = e->meaning; *p;) {
            const char *close = *p == '[' ? strstr(p, "](") : NULL, *end = close ? strchr(close, ')') : NULL;
            if (!end || memchr(p, '\n', (size_t)(end - p))) { sd_buf_putc(&plain, *p++); continue; }
            sd_buf_append(&plain, p + 1, (size_t)(close - p - 1));
            size_t page = strcspn(close + 2, "#)");
            if (page) sd_buf_printf(&plain, " (docs/%.*s)", (int)page, close + 2);
            p = end + 1;
        }
        fprintf(f, "%s%s (%s)\n  %s\n\n  %s\n", found ? "\n" : "", e->name, e->role == SD_LANG_HEADER ? "header directive" : "step",
                u.data, plain.data ? plain.data : "");
        sd_buf_free(&plain);
        sd_buf_free(&u);
        if (e->role == SD_LANG_STEP && e->timeout_ms) {
            char d[32];
            sd_fmt_duration(e->timeout_ms, d, sizeof(d));
            fprintf(f, "  default timeout: %s\n", d);
        }
        for (const sd_lang_key_t *k = e->keys; k && k->name; k++) {
            sd_buf_t v;
            sd_buf_init(&v);
            if (k->type == SD_V_ROWS) sd_buf_puts(&v, "rows>=N");
            else if (k->form == SD_K_KEY) { sd_buf_printf(&v, "%s=", k->name); sd_key_value_form(k, &v); }
            else sd_buf_puts(&v, k->name);
            fprintf(f, "  %-28s %s%s\n", v.data, k->help ? k->help : "", k->required ? " (required)" : "");
            sd_buf_free(&v);
        }
        found = 1;
    }
    return !found;
}
