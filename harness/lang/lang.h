/* lang.h - the .drill language as data: one table of every header
 * directive and every step, with the keys each takes, their types,
 * defaults and ranges, and where each value lands in the plan.
 *
 * The parser (scenario.c) tokenizes a line and hands it to
 * sd_lang_parse_line(), which finds the line's entry and parses its words
 * by the entry's keys: every range check and every "expected ..., found
 * ..." message comes from here. `streamdrill help [NAME]` and the
 * reference tables of docs/language.md (`streamdrill help --markdown`, checked by
 * a test) are printed from the same table. Adding a step is one entry in
 * lang.c and the code that runs it. */
#ifndef SD_LANG_H
#define SD_LANG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "scenario.h"
#include "util.h"

/* ---- tokens (made by scenario.c's tokenizer) ---- */

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

/* What a parse needs to report an error and to look things up. */
typedef struct {
    const char *path;
    char *err;
    size_t errlen;
    const sd_kvlist_t *vars;   /* user variables after overrides */
    int in_steps;              /* a step was seen: header directives are refused */
    int seen[64];              /* per table entry: line of its first use (entries that may appear once) */
    size_t expanded;           /* bytes the drill's {variables} have expanded to so far (bounded: SD_EXPAND_MAX) */
    const struct sd_lang_entry_s *entry; /* the line's entry while its keys and hooks are read */
} sd_pctx_t;

/* What a drill's {variables} may expand to, in all: a drill is a page of
 * text, and a variable used 20,000 times must not make it a gigabyte. */
#define SD_EXPAND_MAX ((size_t)16 << 20)

sd_err_t sd_perr(sd_pctx_t *c, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* "; did you mean X?" for the candidate of list (", "-separated, as the
 * messages list them; backticks ignored) nearest to word, a KEY=VALUE word
 * compared by its KEY=; "" when none is near enough to be a typo. */
const char *sd_lang_near(const char *word, const char *list, char *out, size_t outlen);

/* ---- the table ---- */

/* How a value is written and what it becomes. */
typedef enum {
    SD_V_COUNT,      /* 100, 10k, 2M -> int64_t, in [min, max] */
    SD_V_INT,        /* a count that lands in an int, in [min, max] */
    SD_V_DURATION,   /* 250ms, 3s, 10m, 2h, 1d -> int64_t ms, in [min, max] */
    SD_V_SDURATION,  /* a signed duration +2h, -10m -> int64_t ms */
    SD_V_RATE,       /* 500/s, 30/m -> double per second, above zero */
    SD_V_FACTOR,     /* 2x, 0.5x -> double, above zero */
    SD_V_BANDWIDTH,  /* 200KB/s, 1MB/s, 500B/s -> int64_t bytes per second */
    SD_V_CHOICE,     /* a word of `choices` -> int (values[i], or i) */
    SD_V_SIGNAL,     /* KILL, TERM, INT, QUIT, HUP (SIG prefix allowed) -> int */
    SD_V_FLAG,       /* a bare word -> int `set` */
    SD_V_TEXT,       /* any text, {placeholders} kept -> char * */
    SD_V_FIELD,      /* a field name: letters, digits, '_', '-', '.' -> char * */
    SD_V_TOPIC,      /* a topic name: letters, digits, '.', '_', '-', placeholders -> char * */
    SD_V_NAME,       /* a name: a letter, then letters, digits, '_', '-', '.' -> char * */
    SD_V_VARIANT,    /* a name declared by a `variant` line -> char * */
    SD_V_KINDS,      /* a list of malformed kinds a,b,c -> int bit set */
    SD_V_ROWS,       /* rows>=N, rows=N, ...: the operator at off2, the count at off */
    SD_V_RANGE,      /* replay range=P:FROM-TO (the step's range fields and count) */
    SD_V_SEED,       /* a whole number 0..2^64-1 -> uint64_t, and has_seed */
    SD_V_START,      /* YYYY-MM-DDTHH:MM:SSZ -> int64_t ms, or `now` -> start_now */
} sd_vtype_t;

/* How a key is written on the line. */
typedef enum {
    SD_K_KEY,        /* name=VALUE */
    SD_K_WORD,       /* the bare word `name` (SD_V_FLAG) */
    SD_K_POS,        /* a bare value, in order (name is its label in messages and help) */
} sd_kform_t;

#define SD_NOWHERE ((size_t)-1)

typedef struct sd_lang_key_s {
    const char *name;
    sd_kform_t form;
    sd_vtype_t type;
    size_t off;                  /* where the value lands; SD_NOWHERE: checked, not kept */
    int64_t min, max;            /* range of COUNT, INT, DURATION (max 0: no upper bound) */
    const char *const *choices;  /* CHOICE: the words, NULL-terminated */
    const int *values;           /* CHOICE: what each word stores (NULL: its index) */
    int64_t set;                 /* FLAG: the value it stores */
    int required;                /* the line needs it */
    int group;                   /* keys of one group (1, 2, ...) exclude each other */
    size_t tag_off;              /* when present, also store `tag` (int) here; 0: nothing */
    int tag;
    size_t off2;                 /* ROWS: where the operator lands */
    int64_t def;                 /* the default, applied before the line is read (has_def) */
    int has_def;
    const char *meta;            /* how the value is shown in usage lines (PATH, K); NULL: from the type */
    const char *help;            /* one line for `streamdrill help NAME` */
} sd_lang_key_t;

typedef enum { SD_LANG_HEADER, SD_LANG_STEP } sd_lang_role_t;

/* What a step needs declared or done before it (checked over the whole file). */
enum {
    SD_NEEDS_PIPELINE = 1,       /* a `pipeline` line */
    SD_NEEDS_STARTED = 2,        /* a `start` step before it */
    SD_NEEDS_SOURCE = 4,         /* a `source` line */
    SD_NEEDS_SINK = 8,           /* a `sink` line */
    SD_NEEDS_FAKETIME = 16,      /* a `clock faketime` line */
    SD_NEEDS_BATCHES = 32,       /* progress markers or spark */
};

typedef struct sd_lang_entry_s sd_lang_entry_t;
/* A hook gets the plan object the line fills (sd_scenario_t * for a
 * header entry, sd_step_t * for a step), the line, and the bit set of the
 * keys that were present (bit i: keys[i]). */
typedef sd_err_t (*sd_lang_hook_t)(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);

struct sd_lang_entry_s {
    const char *name;            /* "kill"; two words ("await sink") when the second word selects the entry */
    sd_lang_role_t role;
    sd_step_kind_t kind;         /* steps */
    const sd_lang_key_t *keys;   /* NULL-name-terminated; NULL: `parse` reads the line */
    int once;                    /* header: at most one such line */
    int one_of;                  /* exactly one key of group 1 must be present */
    int needs;                   /* SD_NEEDS_* (steps) */
    int fault;                   /* a fault step: if it does not do what it says, the run is inconclusive */
    int64_t timeout_ms;          /* steps: the default of timeout= */
    sd_lang_hook_t parse;        /* reads the whole line instead of the keys */
    sd_lang_hook_t finish;       /* after the keys: combinations, derived values */
    const char *usage;           /* NULL: made from the keys */
    const char *meaning;         /* docs/language.md's and help's description */
};

/* Every entry, NULL-name-terminated, in the order of the reference. */
extern const sd_lang_entry_t sd_lang_entries[];

/* The entry a line starts with (two-word entries first), or NULL. */
const sd_lang_entry_t *sd_lang_find(const sd_toks_t *ts);
/* The entry of a step kind. */
const sd_lang_entry_t *sd_lang_step_entry(sd_step_kind_t kind);
/* Words of the entry's name (1 or 2). */
int sd_lang_name_words(const sd_lang_entry_t *e);

/* Parse one line into the scenario: a header directive fills sc, a step
 * is appended to sc->steps. Errors name file:line:col. */
sd_err_t sd_lang_parse_line(sd_pctx_t *c, sd_scenario_t *sc, const sd_toks_t *ts);

/* NAME=VALUE words of a line (set, env, producer) into a list; envstyle:
 * names of letters, digits and '_' only. */
sd_err_t sd_lang_parse_kvs(sd_pctx_t *c, const sd_toks_t *ts, const char *what, sd_kvlist_t *into, int envstyle);
/* Defaults of every header directive's keys into a new scenario. */
void sd_lang_header_defaults(sd_scenario_t *sc);

/* The usage line of an entry (made from its keys unless written out). */
void sd_lang_usage(const sd_lang_entry_t *e, sd_buf_t *out);
/* `streamdrill help [NAME]` to f; 1 when NAME is no entry. */
int sd_lang_help(FILE *f, const char *name);
/* The sink kinds the language reads, space-separated (for --version). */
void sd_lang_sink_kinds(sd_buf_t *b);
/* The reference tables of docs/language.md (header, steps) in Markdown. */
void sd_lang_markdown(FILE *f);
/* The same two tables as roff (.SS and .TP), for the man page streamdrill(1). */
void sd_lang_man(FILE *f);

#endif
