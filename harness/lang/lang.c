/* lang.c - the .drill language as one table (see lang.h).
 *
 * The first half is the machinery: split a word into key, operator and
 * value, parse a value by its type with its range, report what was
 * expected and what was found at the value's column. The second half is
 * the table itself: every header directive and every step, in the order
 * of the reference, with the few hooks that check combinations a key
 * list cannot say (produce ... background needs a rate, network takes one
 * fault at a time, ...). Help and docs/language.md's reference are printed from it. */
#include "figures.h"
#include "lang.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sqlite3.h>
#include <string.h>

sd_err_t sd_perr(sd_pctx_t *c, int line, int col, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sd_err_set(c->err, c->errlen, SD_ERR_SCENARIO, "%s:%d:%d: %s", c->path, line, col, msg);
}

/* ---- words: key, operator, value ---- */

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

/* Column just after the line's last word. */
static int sd_end_col(const sd_toks_t *ts) {
    const sd_tok_t *t = &ts->t[ts->n - 1];
    return t->col + (int)strlen(t->text) + 1;
}

int sd_lang_name_words(const sd_lang_entry_t *e) { return strchr(e->name, ' ') ? 2 : 1; }

static int sd_valid_name(const char *s) {
    if (!*s || !isalpha((unsigned char)*s)) return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '-' || *s == '.')) return 0;
    return 1;
}

/* A duration in the shortest exact unit: 60s, 2m, 250ms, 1h, 1d. */
static void sd_fmt_duration(int64_t ms, char *out, size_t n) {
    if (ms % 86400000 == 0 && ms) snprintf(out, n, "%" PRId64 "d", ms / 86400000);
    else if (ms % 3600000 == 0 && ms) snprintf(out, n, "%" PRId64 "h", ms / 3600000);
    else if (ms % 60000 == 0 && ms) snprintf(out, n, "%" PRId64 "m", ms / 60000);
    else if (ms % 1000 == 0) snprintf(out, n, "%" PRId64 "s", ms / 1000);
    else snprintf(out, n, "%" PRId64 "ms", ms);
}

static void sd_join_choices(const char *const *ch, const char *sep, sd_buf_t *b) {
    for (int i = 0; ch[i]; i++) sd_buf_printf(b, "%s%s", i ? sep : "", ch[i]);
}

/* "what" of a message: the entry, and the key for name=VALUE keys. */
static void sd_what(const sd_lang_entry_t *e, const sd_lang_key_t *k, char *out, size_t n) {
    if (k->form == SD_K_KEY) snprintf(out, n, "%s %s", e->name, k->name);
    else snprintf(out, n, "%s", e->name);
}

/* ---- values ---- */

#define SD_AT(obj, off, type) ((type *)((char *)(obj) + (off)))

static void sd_store_str(void *obj, size_t off, const char *v) {
    if (off == SD_NOWHERE) return;
    char **dst = SD_AT(obj, off, char *);
    free(*dst);
    *dst = sd_util_strdup(v);
}

static sd_err_t sd_range_err(sd_pctx_t *c, const sd_lang_entry_t *e, const sd_lang_key_t *k, const sd_tok_t *t,
                             const sd_kvtok_t *kv, const char *unit_min, const char *unit_max) {
    const char *noun = k->form == SD_K_POS ? (k->type == SD_V_DURATION ? "a duration" : "a count") : k->name;
    if (k->max)
        return sd_perr(c, t->line, sd_value_col(t, kv), "%s: expected %s to %s %s, found \"%s\"", e->name, unit_min, unit_max,
                       noun, kv->value);
    return sd_perr(c, t->line, sd_value_col(t, kv), "%s: expected %s of at least %s, found \"%s\"", e->name, noun, unit_min,
                   kv->value);
}

/* Long because it is one case per value type of the language, each a few
 * lines: splitting it would scatter the types the table names. */
static sd_err_t sd_parse_value(sd_pctx_t *c, const sd_lang_entry_t *e, const sd_lang_key_t *k, const sd_tok_t *t,
                               const sd_kvtok_t *kv, sd_scenario_t *sc, void *obj) {
    char what[160];
    sd_what(e, k, what, sizeof(what));
    const char *v = kv->value;
    int col = sd_value_col(t, kv);
    switch (k->type) {
    case SD_V_COUNT:
    case SD_V_INT: {
        int64_t n;
        if (sd_util_parse_count(v, &n))
            return sd_perr(c, t->line, col, "%s: expected a count (a whole number like 100, 10k or 2M), found \"%s\"", what,
                           v[0] ? v : "nothing");
        int64_t max = k->max ? k->max : k->type == SD_V_INT ? INT_MAX : INT64_MAX;
        if (n < k->min || n > max) {
            char a[32], b[32];
            snprintf(a, sizeof(a), "%" PRId64, k->min);
            snprintf(b, sizeof(b), "%" PRId64, max);
            sd_lang_key_t kk = *k;
            kk.max = k->max || k->type == SD_V_INT ? max : 0;
            return sd_range_err(c, e, &kk, t, kv, a, b);
        }
        if (k->off == SD_NOWHERE) return SD_OK;
        if (k->type == SD_V_INT) *SD_AT(obj, k->off, int) = (int)n;
        else *SD_AT(obj, k->off, int64_t) = n;
        return SD_OK;
    }
    case SD_V_DURATION:
    case SD_V_SDURATION: {
        int64_t ms;
        const char *s = v;
        int neg = 0;
        if (k->type == SD_V_SDURATION && (*s == '+' || *s == '-')) neg = *s++ == '-';
        if (sd_util_parse_duration(s, &ms)) {
            if (k->type == SD_V_SDURATION)
                return sd_perr(c, t->line, col, "%s: expected a signed duration (+2h, -10m), found \"%s\"", what, v);
            return sd_perr(c, t->line, col, "%s: expected a duration (250ms, 3s, 10m, 2h), found \"%s\"", what, v);
        }
        if (ms < k->min || (k->max && ms > k->max)) {
            char a[32], b[32];
            sd_fmt_duration(k->min, a, sizeof(a));
            sd_fmt_duration(k->max, b, sizeof(b));
            if (k->min == 1 && !k->max)
                return sd_perr(c, t->line, col, "%s: expected a duration above zero, found \"%s\"", what, v);
            return sd_range_err(c, e, k, t, kv, a, b);
        }
        if (k->off != SD_NOWHERE) *SD_AT(obj, k->off, int64_t) = neg ? -ms : ms;
        return SD_OK;
    }
    case SD_V_RATE: {
        char *end;
        double r = strtod(v, &end);
        if (end != v && r > 0 && r < 1e12 && (!*end || !strcmp(end, "/s"))) { *SD_AT(obj, k->off, double) = r; return SD_OK; }
        if (end != v && r > 0 && r < 1e12 && !strcmp(end, "/m")) { *SD_AT(obj, k->off, double) = r / 60.0; return SD_OK; }
        return sd_perr(c, t->line, col, "%s: expected events per second (500/s), found \"%s\"", what, v);
    }
    case SD_V_FACTOR: {
        char *end;
        double f = strtod(v, &end);
        if (end == v || !(f > 0) || f > 1e6 || (*end && strcmp(end, "x")))
            return sd_perr(c, t->line, col, "%s: expected a factor above zero (2x, 0.5x), found \"%s\"", what, v);
        *SD_AT(obj, k->off, double) = f;
        return SD_OK;
    }
    case SD_V_BANDWIDTH: {
        char *end;
        double f = strtod(v, &end);
        double mult = !strcmp(end, "B/s") ? 1 : !strcmp(end, "KB/s") ? 1024 : !strcmp(end, "MB/s") ? 1048576 : -1;
        if (end == v || !(f > 0) || mult < 0 || f * mult > 1e15)
            return sd_perr(c, t->line, col, "%s: expected a rate (200KB/s, 1MB/s), found \"%s\"", what, v);
        *SD_AT(obj, k->off, int64_t) = (int64_t)(f * mult);
        return SD_OK;
    }
    case SD_V_CHOICE:
        for (int i = 0; k->choices[i]; i++)
            if (!strcmp(v, k->choices[i])) {
                if (k->off != SD_NOWHERE) *SD_AT(obj, k->off, int) = k->values ? k->values[i] : i;
                return SD_OK;
            }
        {
            sd_buf_t b;
            sd_buf_init(&b);
            sd_join_choices(k->choices, "|", &b);
            sd_err_t err = k->form == SD_K_KEY
                ? sd_perr(c, t->line, col, "%s: expected %s=%s, found \"%s\"", e->name, k->name, b.data, v)
                : sd_perr(c, t->line, col, "%s: expected %s, found \"%s\"", e->name, b.data, v);
            sd_buf_free(&b);
            return err;
        }
    case SD_V_SIGNAL: {
        static const struct { const char *n; int s; } sigs[] = {
            {"KILL", SIGKILL}, {"TERM", SIGTERM}, {"INT", SIGINT}, {"QUIT", SIGQUIT}, {"HUP", SIGHUP}, {NULL, 0}};
        const char *s = strncasecmp(v, "SIG", 3) ? v : v + 3;
        for (int i = 0; sigs[i].n; i++)
            if (!strcasecmp(s, sigs[i].n)) { *SD_AT(obj, k->off, int) = sigs[i].s; return SD_OK; }
        return sd_perr(c, t->line, col, "%s: expected signal=KILL|TERM|INT|QUIT|HUP, found \"%s\"", e->name, v);
    }
    case SD_V_FLAG:
        if (k->off != SD_NOWHERE) *SD_AT(obj, k->off, int) = (int)k->set;
        return SD_OK;
    case SD_V_TEXT:
        if (!v[0]) return sd_perr(c, t->line, col, "%s: expected a value after %s=, found nothing", e->name, k->name);
        sd_store_str(obj, k->off, v);
        return SD_OK;
    case SD_V_FIELD:
        if (!v[0] || strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != strlen(v))
            return sd_perr(c, t->line, col, "%s: expected a field name of letters, digits, '_', '-' or '.', found \"%s\"", e->name, v);
        sd_store_str(obj, k->off, v);
        return SD_OK;
    case SD_V_TOPIC:
        if (!v[0] || strlen(v) > 200 ||
            strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-{}") != strlen(v))
            return sd_perr(c, t->line, col, "%s: expected a topic name of letters, digits, '.', '_' or '-', found \"%s\"", e->name, v);
        sd_store_str(obj, k->off, v);
        return SD_OK;
    case SD_V_NAME:
        if (!sd_valid_name(v) || strlen(v) > 128)
            return sd_perr(c, t->line, col, "%s: expected a name of letters, digits, '.', '_' or '-' (up to 128, a letter first), found \"%s\"",
                           e->name, v);
        sd_store_str(obj, k->off, v);
        return SD_OK;
    case SD_V_VARIANT:
        for (int i = 0; i < sc->nvariants; i++)
            if (!strcmp(sc->variants[i].name, v)) { sd_store_str(obj, k->off, v); return SD_OK; }
        return sd_perr(c, t->line, col, "%s: expected a `variant %s ...` line in the header, found none", e->name, v);
    case SD_V_KINDS: {
        char *list = sd_util_strdup(v), *save = NULL;
        int bits = 0;
        for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
            int found = -1;
            for (int m = 0; m < SD_MAL__COUNT; m++)
                if (!strcmp(w, sd_malformed_name((sd_malformed_t)m))) found = m;
            if (found < 0) {
                sd_err_t err = sd_perr(c, t->line, col,
                                       "%s: expected truncated, not-json, missing-id, wrong-type, empty, invalid-utf8, oversized, "
                                       "null-value or duplicate-keys, found \"%s\"", what, w);
                free(list);
                return err;
            }
            bits |= 1 << found;
        }
        free(list);
        *SD_AT(obj, k->off, int) = bits;
        return SD_OK;
    }
    case SD_V_ROWS: {
        sd_lang_key_t kk = *k;
        kk.type = SD_V_COUNT;
        sd_err_t err = sd_parse_value(c, e, &kk, t, kv, sc, obj);
        if (!err) *SD_AT(obj, k->off2, int) = (int)kv->op;
        return err;
    }
    case SD_V_RANGE: {
        sd_step_t *st = obj;
        int p = -1, used = 0;
        long long a = -1, b = -1;
        if (sscanf(v, "%d:%lld-%lld%n", &p, &a, &b, &used) != 3 || v[used] || p < 0 || a < 0 || b <= a)
            return sd_perr(c, t->line, col, "%s: expected range=PARTITION:FROM-TO (offsets FROM to TO-1, e.g. range=0:10-40), found \"%s\"",
                           e->name, v);
        st->send.range_partition = p;
        st->send.range_from = a;
        st->send.range_to = b;
        st->send.count = b - a;
        return SD_OK;
    }
    case SD_V_SEED: {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(v, &end, 10);
        if (!isdigit((unsigned char)v[0]) || *end || errno || s > (unsigned long long)INT64_MAX)
            return sd_perr(c, t->line, col, "%s: expected seed=NUMBER (0 to 9223372036854775807), found \"%s\"", e->name, v);
        sc->seed = s;
        sc->has_seed = 1;
        return SD_OK;
    }
    case SD_V_START:
        if (!strcmp(v, "now")) { sc->start_now = 1; return SD_OK; }
        if (sd_util_parse_iso8601(v, &sc->start_ms))
            return sd_perr(c, t->line, col, "%s: expected start=YYYY-MM-DDTHH:MM:SSZ or start=now, found \"%s\"", e->name, v);
        return SD_OK;
    }
    return sd_perr(c, t->line, col, "%s: value type %d has no parser", what, (int)k->type);
}

/* The keys an entry takes, as a message lists them: mid-batch, for=, N. */
static void sd_known(const sd_lang_entry_t *e, sd_buf_t *b) {
    int any = 0;
    for (const sd_lang_key_t *k = e->keys; k && k->name; k++) {
        sd_buf_printf(b, "%s%s%s", any ? ", " : "", k->name, k->form == SD_K_KEY ? "=" : "");
        any = 1;
    }
    if (!any) sd_buf_puts(b, "nothing more");
}

static sd_err_t sd_unknown(sd_pctx_t *c, const sd_lang_entry_t *e, const sd_tok_t *t) {
    sd_buf_t b;
    sd_buf_init(&b);
    sd_known(e, &b);
    char near[96];
    sd_err_t err = e->keys && e->keys[0].name ? sd_perr(c, t->line, t->col, "%s: expected one of %s, found \"%s\"%s", e->name, b.data, t->text,
                                                        sd_lang_near(t->text, b.data, near, sizeof(near)))
                                              : sd_perr(c, t->line, t->col, "%s: expected nothing after it, found \"%s\"", e->name, t->text);
    sd_buf_free(&b);
    return err;
}

/* Defaults of an entry's keys into obj. */
static void sd_apply_defaults(const sd_lang_entry_t *e, void *obj) {
    for (const sd_lang_key_t *k = e->keys; k && k->name; k++) {
        if (!k->has_def || k->off == SD_NOWHERE) continue;
        switch (k->type) {
        case SD_V_COUNT: case SD_V_DURATION: case SD_V_SDURATION: case SD_V_BANDWIDTH:
            *SD_AT(obj, k->off, int64_t) = k->def; break;
        case SD_V_INT: case SD_V_CHOICE: case SD_V_SIGNAL:
            *SD_AT(obj, k->off, int) = (int)k->def; break;
        case SD_V_RATE: case SD_V_FACTOR:
            *SD_AT(obj, k->off, double) = (double)k->def; break;
        case SD_V_SEED:
            *SD_AT(obj, k->off, uint64_t) = (uint64_t)k->def; break;
        default: break;
        }
    }
}

/* Parse the line's words after the entry's name by the entry's keys. */
static sd_err_t sd_parse_keys(sd_pctx_t *c, const sd_lang_entry_t *e, sd_scenario_t *sc, void *obj, const sd_toks_t *ts,
                              uint64_t *present_out) {
    uint64_t present = 0;
    int nkeys = 0;
    while (e->keys[nkeys].name) nkeys++;
    sd_err_t err;
    for (int i = sd_lang_name_words(e); i < ts->n; i++) {
        const sd_tok_t *t = &ts->t[i];
        sd_kvtok_t kv;
        sd_split_kv(t, &kv);
        int hit = -1;
        for (int k = 0; k < nkeys && hit < 0; k++) {
            const sd_lang_key_t *K = &e->keys[k];
            if (kv.has_op ? K->form == SD_K_KEY && !strcmp(K->name, kv.key)
                          : K->form == SD_K_WORD && !strcmp(K->name, kv.value))
                hit = k;
        }
        /* a bare word that is no WORD: the next positional value not filled yet */
        for (int k = 0; k < nkeys && hit < 0 && !kv.has_op; k++)
            if (e->keys[k].form == SD_K_POS && !(present & (1ull << k))) hit = k;
        if (hit < 0) return sd_unknown(c, e, t);
        const sd_lang_key_t *K = &e->keys[hit];
        if (kv.has_op && kv.op != SD_OP_EQ && K->type != SD_V_ROWS)
            return sd_perr(c, t->line, t->col + (int)strlen(kv.key), "%s: expected `%s=`, found `%s%s`", e->name, kv.key, kv.key,
                           sd_op_text(kv.op));
        for (int k = 0; K->group && k < nkeys; k++)
            if (k != hit && e->keys[k].group == K->group && (present & (1ull << k)))
                return sd_perr(c, t->line, t->col, "%s: expected one of %s%s and %s%s, found both", e->name, e->keys[k].name,
                               e->keys[k].form == SD_K_KEY ? "=" : "", K->name, K->form == SD_K_KEY ? "=" : "");
        if ((err = sd_parse_value(c, e, K, t, &kv, sc, obj))) return err;
        if (K->tag_off) *SD_AT(obj, K->tag_off, int) = K->tag;
        present |= 1ull << hit;
    }
    for (int k = 0; k < nkeys; k++) {
        const sd_lang_key_t *K = &e->keys[k];
        if (!K->required || (present & (1ull << k))) continue;
        if (K->form == SD_K_POS)
            return sd_perr(c, ts->t[0].line, sd_end_col(ts), "%s: expected %s, found the end of the line", e->name, K->help ? K->help : K->name);
        if (K->type == SD_V_ROWS)
            return sd_perr(c, ts->t[0].line, sd_end_col(ts), "%s: expected rows>=N (or rows=N, rows>N), found none", e->name);
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "%s: expected %s=..., found none", e->name, K->name);
    }
    if (e->one_of) {
        int n = 0;
        sd_buf_t b;
        sd_buf_init(&b);
        for (int k = 0; k < nkeys; k++)
            if (e->keys[k].group == 1) {
                if (present & (1ull << k)) n++;
                sd_buf_printf(&b, "%s%s%s", b.len ? ", " : "", e->keys[k].name, e->keys[k].form == SD_K_KEY ? "=" : "");
            }
        if (!n) {
            err = sd_perr(c, ts->t[0].line, ts->n > sd_lang_name_words(e) ? ts->t[0].col : sd_end_col(ts),
                          "%s: expected one of %s, found %s", e->name, b.data,
                          ts->n > sd_lang_name_words(e) ? "none of them" : "the end of the line");
            sd_buf_free(&b);
            return err;
        }
        sd_buf_free(&b);
    }
    *present_out = present;
    return SD_OK;
}

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

/* In a finish hook: was the key named `key` on the line ts? (present:
 * the hook's bit set, bit i for keys[i] of the line's entry) */
static int sd_has_key(const sd_toks_t *ts, uint64_t present, const char *key) {
    const sd_lang_entry_t *e = sd_lang_find(ts);
    for (int k = 0; e && e->keys && e->keys[k].name && k < 64; k++)
        if (!strcmp(e->keys[k].name, key)) return (present >> k) & 1;
    return 0;
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

/* ======================================================================
 * The table
 * ====================================================================== */

#define S(f) offsetof(sd_step_t, f)
#define H(f) offsetof(sd_scenario_t, f)
#define TIMEOUT {.name = "timeout", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(timeout_ms), .min = 1, \
                 .tag_off = S(timeout_given), .tag = 1, \
                 .help = "how long the step may wait (scaled by STREAMDRILL_TIMEOUT_MULTIPLIER)"}
#define OPTIONAL {.name = "optional", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(optional), .set = 1, \
                  .help = "the fault may be skipped: if it does not land, a warning instead of an inconclusive run"}
#define LANDING(fld)                                                                                                     \
    {.name = "mid-batch", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(fld), .set = SD_LAND_MID_BATCH, .group = 2,  \
     .help = "inside a batch: after its begin, before its commit"},                                                   \
    {.name = "at-boundary", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(fld), .set = SD_LAND_AT_BOUNDARY, .group = 2, \
     .help = "right after a batch's commit, before the next batch begins"},                                           \
    {.name = "now", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(fld), .set = SD_LAND_NOW, .group = 2, .help = "at once (the default)"}
#define END {.name = NULL}

static const char *const sd_yes_no[] = {"no", "yes", NULL};
static const char *const sd_profiles[] = {"exactly-once", "at-least-once", "at-most-once", NULL};
static const char *const sd_late_words[] = {"drop", "quarantine", "accept", NULL};
static const int sd_late_values[] = {SD_DISP_DROPPED, SD_DISP_QUARANTINE, SD_DISP_TARGET};
static const char *const sd_malformed_words[] = {"quarantine", "drop", NULL};
static const int sd_malformed_values[] = {SD_DISP_QUARANTINE, SD_DISP_DROPPED};
static const char *const sd_future_words[] = {"quarantine", "accept", NULL};
static const int sd_future_values[] = {SD_DISP_QUARANTINE, SD_DISP_TARGET};
static const char *const sd_schema_words[] = {"lenient", "strict", NULL};
static const int sd_schema_values[] = {SD_DISP_TARGET, SD_DISP_QUARANTINE};
static const char *const sd_dup_words[] = {"drop", "keep", NULL};
static const char *const sd_progress_words[] = {"markers", "spark", "flink", "group", "sink", "none", NULL};
static const int sd_progress_values[] = {SD_PROGRESS_MARKERS, SD_PROGRESS_SPARK, SD_PROGRESS_FLINK, SD_PROGRESS_GROUP, SD_PROGRESS_SINK, SD_PROGRESS_NONE};
static const char *const sd_batch_words[] = {"micro", "real-time", NULL};
static const char *const sd_preload_words[] = {"all", "children", NULL};
static const char *const sd_from_words[] = {"first", "last", NULL};
static const char *const sd_source_words[] = {"scans", "deliveries", NULL};
static const char *const sd_drift_words[] = {"extra-field", "type-change", NULL};
static const char *const sd_kafka_word[] = {"kafka", NULL};
static const char *const sd_parcel_word[] = {"parcel-scans", NULL};
static const char *const sd_spark_what[] = {"commit-marker", "offsets", "state", NULL};
static const char *const sd_model_words[] = {"windows", "latest", "rows", "join", NULL};
static const int sd_model_values[] = {SD_MODEL_WINDOWS, SD_MODEL_LATEST, SD_MODEL_ROWS, SD_MODEL_JOIN};
static const char *const sd_join_words[] = {"inner", "left", "full", NULL};
static const char *const sd_order_words[] = {"event-time", "arrival", NULL};
static const char *const sd_output_words[] = {"append", "update", "complete", NULL};

/* ---- header hooks ---- */

static sd_err_t sd_hook_name(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
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

static sd_err_t sd_hook_set(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    /* the values were taken in the first pass; the words are checked again here */
    (void)sc; (void)obj; (void)present;
    sd_kvlist_t tmp = {0};
    sd_err_t err = sd_lang_parse_kvs(c, ts, "set", &tmp, 0);
    sd_kvlist_free(&tmp);
    return err;
}

static sd_err_t sd_hook_env(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    return sd_lang_parse_kvs(c, ts, "env", &sc->env, 1);
}

static sd_err_t sd_hook_producer(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    return sd_lang_parse_kvs(c, ts, "producer", &sc->producer_props, 0);
}

static sd_err_t sd_hook_pipeline(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
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

static sd_err_t sd_hook_variant(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    return sd_named_command(c, ts, &sc->variants, &sc->nvariants, "variant");
}

/* deploy start|status|stop|kill|logs PROGRAM ARG... */
static sd_err_t sd_hook_deploy(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
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

static sd_err_t sd_hook_fault_command(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    return sd_named_command(c, ts, &sc->fault_cmds, &sc->nfault_cmds, "fault-command");
}

/* version [files=PATH,...] [PROGRAM ARG...]: leading files= (the only
 * key), then the command line, exec'd without a shell. */
static sd_err_t sd_hook_version(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
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
static sd_err_t sd_parse_operator(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
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
    const char *const keys[6];
    const char *required[3];
} sd_sink_kinds[] = {
    {"sqlite", {"db", "query", NULL}, {"db", "query", NULL}},
    {"kafka", {"topic", "id", "header", "isolation", NULL}, {"topic", NULL}},
    {"jsonl", {"path", "id", "time", NULL}, {"path", NULL}},
    {"spark-files", {"path", "id", "time", NULL}, {"path", NULL}},
    {"flink-files", {"path", "id", "time", NULL}, {"path", NULL}},
    {"delta", {"path", "id", "time", "python", NULL}, {"path", NULL}},
    {"postgres", {"dsn", "query", NULL}, {"dsn", "query", NULL}},
    /* its options, then PROGRAM ARG... (stored as arg= in order) */
    {"command", {"id", "writer", "time", "timeout", "max-output", NULL}, {NULL}},
    {NULL, {NULL}, {NULL}}};

/* Edit distance of a and b (a swap of two neighbours is one edit, as a
 * typist makes it), capped at 3: for "did you mean". */
static int sd_edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return 3;
    int d[65][65];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int m = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < m) m = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < m) m = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < m) m = d[i - 2][j - 2] + 1;
            d[i][j] = m;
        }
    return d[la][lb] < 3 ? d[la][lb] : 3;
}

const char *sd_lang_near(const char *word, const char *list, char *out, size_t outlen) {
    char w[65], best[65] = "";
    size_t wl = strcspn(word, "=");
    if (wl > 63) return out[0] = 0, out;
    snprintf(w, sizeof(w), "%.*s%s", (int)wl, word, word[wl] == '=' ? "=" : "");
    int bestd = 3;
    for (const char *p = list ? list : ""; *p;) {
        size_t n = strcspn(p, ",");
        char cand[65];
        size_t i = 0;
        for (size_t k = 0; k < n && i < 64; k++)
            if (p[k] != '`' && p[k] != ' ') cand[i++] = p[k];
        cand[i] = 0;
        /* a short word is near only one edit away, a longer one two */
        int d = i ? sd_edit_distance(w, cand) : 3, most = i >= 5 ? 2 : 1;
        if (d > 0 && d <= most && d < bestd) bestd = d, snprintf(best, sizeof(best), "%s", cand);
        p += n;
        if (*p == ',') p++;
    }
    if (best[0]) snprintf(out, outlen, "; did you mean %s?", best);
    else out[0] = 0;
    return out;
}

void sd_lang_sink_kinds(sd_buf_t *b) {
    for (int i = 0; sd_sink_kinds[i].kind; i++) sd_buf_printf(b, "%s%s", i ? " " : "", sd_sink_kinds[i].kind);
}

static int sd_sink_kind(const char *s) {
    for (int i = 0; sd_sink_kinds[i].kind; i++)
        if (!strcmp(s, sd_sink_kinds[i].kind)) return i;
    return -1;
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

static sd_err_t sd_hook_sink(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
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

static sd_err_t sd_fin_source(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    if (!sc->topic) return sd_perr(c, ts->t[0].line, ts->t[0].col, "source kafka: expected topic=NAME, found none");
    sc->has_source = 1;
    sc->source_line = ts->t[0].line;
    return SD_OK;
}

static sd_err_t sd_fin_events(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    if (sc->events_kind == SD_EVENTS_LOG && !sc->log_id_field)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "events log: expected id=FIELD (the field that carries each event's id), found none");
    sc->has_events = 1;
    sc->events_line = ts->t[0].line;
    return SD_OK;
}

static sd_err_t sd_fin_deliveries(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj; (void)present;
    if (sc->delivery_min_ms > sc->delivery_max_ms)
        return sd_perr(c, ts->line, 1, "deliveries: expected min-delay= at most max-delay=, found %lld ms and %lld ms",
                       (long long)sc->delivery_min_ms, (long long)sc->delivery_max_ms);
    sc->has_deliveries = 1;
    sc->deliveries_line = ts->line;
    return SD_OK;
}

static sd_err_t sd_fin_progress(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)obj;
    /* checkpoint= belongs to progress spark and flink, batches= to spark, group= to progress group */
    int chk = sc->progress == SD_PROGRESS_SPARK || sc->progress == SD_PROGRESS_FLINK;
    if ((!chk && sd_has_key(ts, present, "checkpoint")) || (sc->progress != SD_PROGRESS_SPARK && sd_has_key(ts, present, "batches")) ||
        (sc->progress != SD_PROGRESS_GROUP && sd_has_key(ts, present, "group")))
        return sd_perr(c, ts->t[2].line, ts->t[2].col, "progress %s: expected nothing more (checkpoint= is for progress spark and "
                       "flink, batches= for spark, group= for progress group), found \"%s\"", ts->t[1].text, ts->t[2].text);
    if (chk && !sc->checkpoint) sc->checkpoint = sd_util_strdup("{checkpoint}");
    return SD_OK;
}

/* model: the aggregates are known words, and sum/min/max/avg need value= */
static sd_err_t sd_fin_model(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
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
    if (m->kind != 4 && (m->within_ms || m->left_col || m->right_col || m->join_type))
        return sd_perr(c, ts->line, 1, "model %s: expected no type=, within=, left= or right= (they are for join), found one",
                       ts->t[1].text);
    if (m->kind == 4) {
        if (!sc->has_deliveries)
            return sd_perr(c, ts->line, 1, "model join: expected a `deliveries` line before it (the join's second source), found none");
        if (!m->within_ms) return sd_perr(c, ts->line, 1, "model join: expected within=DURATION (the time-range condition), found none");
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

static sd_err_t sd_fin_faketime(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)c; (void)obj; (void)ts; (void)present;
    sc->faketime = 1;
    return SD_OK;
}

/* ---- step hooks ---- */

static sd_err_t sd_fin_produce(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)sc; (void)present;
    sd_step_t *st = obj;
    if (st->send.background && st->send.rate <= 0)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "produce: expected rate=R/s with background (a background send needs a pace), found none");
    if (!st->send.transactional && (st->send.txn_abort || st->send.txn_open || sd_has_key(ts, present, "size")))
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
static sd_err_t sd_fin_instance(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
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

static sd_err_t sd_fin_landing(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
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

static sd_err_t sd_fin_broker(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
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

static sd_err_t sd_fin_fault(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
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

static sd_err_t sd_fin_replay(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)sc;
    int count = sd_has_key(ts, present, "N"), range = sd_has_key(ts, present, "range");
    if (count && range)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "replay: expected a count or range=P:FROM-TO, found both");
    if (!count && !range)
        return sd_perr(c, ts->t[0].line, sd_end_col(ts), "replay: expected a count (e.g. replay 100) or range=P:FROM-TO, found %s",
                       ts->n > 1 ? "neither" : "the end of the line");
    (void)obj;
    return SD_OK;
}

static sd_err_t sd_fin_inject(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)sc; (void)present;
    sd_step_t *st = obj;
    int any = st->send.malformed > 0;
    for (int k = 0; k < SD_INJ__COUNT; k++)
        if (st->send.inject[k] > 0) any = 1;
    if (!any)
        return sd_perr(c, ts->t[0].line, ts->n > 1 ? ts->t[1].col : sd_end_col(ts),
                       "inject: expected malformed=N or late=N (or another kind), found %s", ts->n > 1 ? "no count above zero" : "the end of the line");
    return SD_OK;
}

static sd_err_t sd_fin_await_sink(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)c; (void)sc; (void)ts; (void)present;
    sd_step_t *st = obj;
    if (!st->await.sink) st->await.sink = sd_util_strdup("target");
    return SD_OK;
}

static sd_err_t sd_fin_await_batches(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)c; (void)sc; (void)ts; (void)present;
    ((sd_step_t *)obj)->await.op = SD_OP_GE;
    return SD_OK;
}

static sd_err_t sd_fin_damage_spark(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)sc;
    sd_step_t *st = obj;
    if (sd_has_key(ts, present, "truncate") && st->damage.what != SD_DAMAGE_OFFSETS)
        return sd_perr(c, ts->t[0].line, ts->t[0].col, "damage spark: expected truncate only with offsets, found it with %s",
                       sd_spark_what[st->damage.what]);
    return SD_OK;
}

static sd_err_t sd_fin_network(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
    (void)sc;
    sd_step_t *st = obj;
    /* count= is errors='s alone */
    int count = sd_has_key(ts, present, "count");
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
static sd_err_t sd_parse_expect(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present) {
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

/* ---- keys ---- */

static const sd_lang_key_t sd_keys_source[] = {
    {.name = "kafka", .form = SD_K_POS, .type = SD_V_CHOICE, .off = SD_NOWHERE, .choices = sd_kafka_word, .required = 1,
     .help = "`kafka` (the only source kind)"},
    {.name = "topic", .form = SD_K_KEY, .type = SD_V_TOPIC, .off = H(topic), .required = 1, .help = "the topic's name"},
    {.name = "partitions", .form = SD_K_KEY, .type = SD_V_INT, .off = H(partitions), .min = 1, .max = 1000, .def = 3, .has_def = 1,
     .help = "partitions of the topic the run creates"},
    {.name = "replication", .form = SD_K_KEY, .type = SD_V_INT, .off = H(replication), .min = 1, .max = 10, .def = 1, .has_def = 1,
     .help = "its replication factor"},
    {.name = "exact", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(exact_topic), .choices = sd_yes_no, .def = 0, .has_def = 1,
     .help = "yes: the topic's name as is, no per-run suffix"},
    {.name = "min-insync", .form = SD_K_KEY, .type = SD_V_INT, .off = H(min_insync), .min = 1, .max = 10,
     .help = "the topic's min.insync.replicas (default: the broker's)"},
    {.name = "unclean-election", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(unclean_election), .choices = sd_yes_no, .def = 0, .has_def = 1,
     .help = "yes: a replica out of sync may become leader (unclean.leader.election.enable), and acknowledged events may be lost"},
    END};

static const sd_lang_key_t sd_keys_events[] = {
    {.name = "parcel-scans", .form = SD_K_POS, .type = SD_V_CHOICE, .off = SD_NOWHERE, .choices = sd_parcel_word,
     .help = "the seeded generator (the default)"},
    {.name = "seed", .form = SD_K_KEY, .type = SD_V_SEED, .off = H(seed), .def = 42, .has_def = 1, .help = "the generator's seed"},
    {.name = "start", .form = SD_K_KEY, .type = SD_V_START, .off = H(start_ms), .help = "event time of the first event, or now"},
    {.name = "step", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(step_ms), .def = 1000, .has_def = 1,
     .help = "event time between two events"},
    {.name = "parcels", .form = SD_K_KEY, .type = SD_V_INT, .off = H(parcels), .min = 1, .def = 5000, .has_def = 1,
     .help = "distinct parcel ids"},
    {.name = "locations", .form = SD_K_KEY, .type = SD_V_INT, .off = H(locations), .min = 1, .def = 24, .has_def = 1,
     .help = "distinct locations"},
    {.name = "edges", .form = SD_K_KEY, .type = SD_V_INT, .off = H(edge_share), .min = 0, .max = 100, .def = 25, .has_def = 1,
     .help = "events on the edges the model declares (0: none): the three scans before each window boundary moved to 1 ms before "
             "it, onto it and 1 ms after; this percent of the deliveries at a join bound or 1 ms beside it; this percent of the "
             "scans tied (key and event time) with the one before, for latest"},
    {.name = "log", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "PATH", .off = H(log_path), .tag_off = H(events_kind), .tag = SD_EVENTS_LOG,
     .help = "a JSON-lines file to replay instead"},
    {.name = "id", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(log_id_field), .help = "the log's id field"},
    END};

static const sd_lang_key_t sd_keys_deliveries[] = {
    {.name = "topic", .form = SD_K_KEY, .type = SD_V_TOPIC, .off = H(deliveries_topic),
     .help = "its topic (default: the source's name and `-deliveries`, with the run's suffix)"},
    {.name = "partitions", .form = SD_K_KEY, .type = SD_V_INT, .off = H(deliveries_partitions), .min = 1, .max = 1000, .def = 3,
     .has_def = 1, .help = "partitions of the topic the run creates"},
    {.name = "share", .form = SD_K_KEY, .type = SD_V_INT, .off = H(delivery_share), .min = 1, .max = 100, .def = 70, .has_def = 1,
     .help = "percent of the scans that get a delivery"},
    {.name = "min-delay", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(delivery_min_ms), .def = 60000, .has_def = 1,
     .help = "a delivery's event time is at least this after its scan's"},
    {.name = "max-delay", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(delivery_max_ms), .def = 1200000, .has_def = 1,
     .help = "and at most this"},
    {.name = "orphans", .form = SD_K_KEY, .type = SD_V_INT, .off = H(delivery_orphans), .min = 0, .max = 100, .def = 0, .has_def = 1,
     .help = "percent of the deliveries for a parcel no scan has (a full outer join owes each a null row; the others, nothing)"},
    {.name = "lag", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(delivery_lag_ms),
     .help = "each delivery sent this long after its scan (wall clock: it reaches the pipeline later, in another batch, whatever "
             "its event time); those still held when the run ends are never sent (default: right behind its scan)"},
    {.name = "log", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "PATH", .off = H(deliveries_log),
     .help = "a JSON-lines file of deliveries instead (one sent behind each new scan, in order)"},
    {.name = "id", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(deliveries_id), .help = "log: its id field (default delivery_id)"},
    {.name = "key", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(deliveries_key), .help = "log: the field that keys it (default parcel_id)"},
    {.name = "time", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(deliveries_time),
     .help = "log: its event-time field (default delivered_at)"},
    END};

static const sd_lang_key_t sd_keys_contract[] = {
    {.name = "id", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(id_field), .help = "the id field (default event_id)"},
    {.name = "time", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(time_field), .help = "the event-time field (default event_time)"},
    {.name = "watermark", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(watermark_ms), .def = 600000, .has_def = 1,
     .help = "the watermark delay"},
    {.name = "late", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(late_disp), .choices = sd_late_words, .values = sd_late_values,
     .def = SD_DISP_DROPPED, .has_def = 1, .help = "where late events go"},
    {.name = "malformed", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(malformed_disp), .choices = sd_malformed_words,
     .values = sd_malformed_values, .def = SD_DISP_QUARANTINE, .has_def = 1, .help = "where malformed events go"},
    {.name = "future", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(future_disp), .choices = sd_future_words,
     .values = sd_future_values, .def = SD_DISP_QUARANTINE, .has_def = 1, .help = "where events from the future go"},
    {.name = "schema", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(drift_disp), .choices = sd_schema_words,
     .values = sd_schema_values, .def = SD_DISP_TARGET, .has_def = 1, .help = "strict: a field of another type is quarantined"},
    {.name = "duplicates", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(keep_duplicates), .choices = sd_dup_words,
     .has_def = 1, .help = "keep: an id sent n times must be in the target n times"},
    {.name = "profile", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(profile), .choices = sd_profiles, .has_def = 1,
     .help = "which buckets may be non-empty"},
    END};

static const sd_lang_key_t sd_keys_progress[] = {
    {.name = "markers|spark|flink|group|sink|none", .form = SD_K_POS, .type = SD_V_CHOICE, .off = H(progress), .choices = sd_progress_words,
     .values = sd_progress_values, .required = 1, .help = "markers, spark, flink, group, sink or none"},
    {.name = "checkpoint", .form = SD_K_KEY, .type = SD_V_TEXT, .off = H(checkpoint), .meta = "PATH",
     .help = "progress spark: the checkpoint; progress flink: the job's checkpoint storage, DIR/JOB/chk-N (default {checkpoint})"},
    {.name = "batches", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(spark_realtime), .choices = sd_batch_words, .has_def = 1,
     .help = "progress spark: micro-batches or real-time intervals"},
    {.name = "group", .form = SD_K_KEY, .type = SD_V_TEXT, .off = H(progress_group), .meta = "NAME",
     .help = "progress group: the pipeline's consumer group (default {group})"},
    END};

static const sd_lang_key_t sd_keys_model[] = {
    {.name = "windows|latest|rows|join", .form = SD_K_POS, .type = SD_V_CHOICE, .off = H(model.kind), .choices = sd_model_words,
     .values = sd_model_values, .required = 1,
     .help = "event-time windows aggregated per key, the latest row per key, the ids (the default) with their fields, or the "
             "rows of a join of the scans with the deliveries"},
    {.name = "size", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(model.size_ms), .min = 1,
     .help = "windows: the window length"},
    {.name = "slide", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(model.slide_ms), .min = 1,
     .help = "sliding windows: a new one every slide (default: size, tumbling)"},
    {.name = "key", .form = SD_K_KEY, .type = SD_V_TEXT, .off = H(model.keys), .meta = "FIELD[,FIELD...]",
     .help = "the group key fields besides the window (default: none)"},
    {.name = "value", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.value), .help = "the numeric field sum, min, max and avg read"},
    {.name = "agg", .form = SD_K_KEY, .type = SD_V_TEXT, .off = H(model.aggs), .meta = "count,sum,min,max,avg",
     .help = "the aggregates, each a column of the sink (default count)"},
    {.name = "output", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(model.output), .choices = sd_output_words, .has_def = 1,
     .help = "append: each closed window once, final; update: the last row per window is its value; complete: the sink holds "
             "the whole table, late events counted"},
    {.name = "sink", .form = SD_K_KEY, .type = SD_V_NAME, .off = H(model.sink), .help = "the sink it judges (default target)"},
    {.name = "start", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.start_col), .meta = "COLUMN",
     .help = "the column holding a window's start (default window_start)"},
    {.name = "count", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.agg_cols[0]), .meta = "COLUMN",
     .help = "windows: the column holding the count (default count); sum=, min=, max=, avg= the same for theirs"},
    {.name = "sum", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.agg_cols[1]), .meta = "COLUMN", .help = "windows: the sum's column"},
    {.name = "min", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.agg_cols[2]), .meta = "COLUMN", .help = "windows: the min's column"},
    {.name = "max", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.agg_cols[3]), .meta = "COLUMN", .help = "windows: the max's column"},
    {.name = "avg", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.agg_cols[4]), .meta = "COLUMN", .help = "windows: the avg's column"},
    {.name = "fields", .form = SD_K_KEY, .type = SD_V_TEXT, .off = H(model.fields), .meta = "FIELD[,FIELD...]",
     .help = "latest, rows: the fields whose values a row must hold"},
    {.name = "order", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(model.by_arrival), .choices = sd_order_words, .has_def = 1,
     .help = "latest: the newest event is the one with the newest event time, or the last one sent"},
    {.name = "type", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(model.join_type), .choices = sd_join_words, .has_def = 1,
     .help = "join: inner, left outer or full outer"},
    {.name = "within", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(model.within_ms),
     .help = "join: a delivery matches a scan of its parcel from the scan's event time to this much after it"},
    {.name = "left", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.left_col), .meta = "COLUMN",
     .help = "join: the column holding the scan's id (default event_id)"},
    {.name = "right", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.right_col), .meta = "COLUMN",
     .help = "join: the column holding the delivery's id (default delivery_id)"},
    END};

static const sd_lang_key_t sd_keys_faketime[] = {
    {.name = "lib", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "PATH", .off = H(faketime_lib), .help = "libfaketimeMT.so.1 (default: found in Debian's paths)"},
    {.name = "preload", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(faketime_children), .choices = sd_preload_words, .has_def = 1,
     .help = "children: the pipeline preloads it into what it starts"},
    END};

static const sd_lang_key_t sd_keys_logs[] = {
    {.name = "max", .form = SD_K_KEY, .type = SD_V_COUNT, .off = H(log_max), .min = 4096, .def = SD_LOG_MAX_DEFAULT, .has_def = 1,
     .meta = "BYTES", .help = "bytes kept of each of the pipeline's logs (default 64M)"},
    END};

#define INSTANCE {.name = "instance", .form = SD_K_KEY, .type = SD_V_INT, .off = S(proc.instance), .min = 1, .max = SD_MAX_INSTANCES, \
                  .meta = "K", .help = "that instance of a pipeline with instances=N only (default: every instance)"}

static const sd_lang_key_t sd_keys_start[] = {
    {.name = "as", .form = SD_K_KEY, .type = SD_V_VARIANT, .off = S(proc.variant), .help = "a variant's command line instead of the pipeline's"},
    INSTANCE, TIMEOUT, END};

static const sd_lang_key_t sd_keys_timeout[] = {TIMEOUT, END};
static const sd_lang_key_t sd_keys_resume[] = {INSTANCE, TIMEOUT, END};
static const sd_lang_key_t sd_keys_stop[] = {INSTANCE, TIMEOUT, OPTIONAL, END};

static const sd_lang_key_t sd_keys_restart[] = {
    {.name = "as", .form = SD_K_KEY, .type = SD_V_VARIANT, .off = S(proc.variant), .help = "a variant's command line instead of the pipeline's"},
    {.name = "delay", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(proc.delay_ms), .help = "how long the pipeline stays down"},
    INSTANCE, TIMEOUT, OPTIONAL, END};

static const sd_lang_key_t sd_keys_scale[] = {
    {.name = "to", .form = SD_K_KEY, .type = SD_V_INT, .off = S(proc.scale_to), .min = 0, .max = SD_MAX_INSTANCES, .required = 1,
     .meta = "N", .help = "the instances wanted running: the missing ones are started (each waited for), the ones above N stopped (SIGTERM)"},
    TIMEOUT, END};

static const char *const sd_broker_ops[] = {"kill", "stop", "start", "restart", "pause", "resume", "isolate", "rejoin", NULL};

static const sd_lang_key_t sd_keys_broker[] = {
    {.name = "kill|stop|start|restart|pause|resume|isolate|rejoin", .form = SD_K_POS, .type = SD_V_CHOICE, .off = S(proc.bop), .choices = sd_broker_ops, .required = 1,
     .help = "kill (SIGKILL), stop (SIGTERM: a controlled shutdown), start (again, on its own data), restart (stop, then start), "
             "pause (SIGSTOP), resume (SIGCONT), isolate (cut off from the other brokers while clients still reach it), "
             "rejoin (the links back)"},
    {.name = "id", .form = SD_K_KEY, .type = SD_V_INT, .off = S(proc.broker_id), .min = 0, .max = 1000000, .def = -1, .has_def = 1,
     .group = 3, .meta = "N", .help = "the broker's node id"},
    {.name = "leader-of", .form = SD_K_KEY, .type = SD_V_INT, .off = S(proc.leader_of), .min = 0, .max = 999, .def = -1, .has_def = 1,
     .group = 3, .meta = "P", .help = "the broker leading source partition P when the step strikes"},
    {.name = "follower-of", .form = SD_K_KEY, .type = SD_V_INT, .off = S(proc.follower_of), .min = 0, .max = 999, .def = -1, .has_def = 1,
     .group = 3, .meta = "P", .help = "a replica of source partition P that is not its leader and that the run has not taken down or paused"},
    LANDING(proc.mid_batch),
    {.name = "for", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(proc.delay_ms),
     .help = "kill, stop, pause: start (or resume) it again after this long"},
    TIMEOUT, OPTIONAL, END};

static const sd_lang_key_t sd_keys_fault[] = {
    {.name = "NAME", .form = SD_K_POS, .type = SD_V_NAME, .off = S(proc.variant), .required = 1, .help = "a name declared by a `fault-command` line"},
    LANDING(proc.mid_batch),
    TIMEOUT, OPTIONAL, END};

static const sd_lang_key_t sd_keys_kill[] = {
    LANDING(proc.mid_batch),
    {.name = "after-sink-commit", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(proc.mid_batch), .set = SD_LAND_AFTER_SINK_COMMIT, .group = 2,
     .help = "after the target sink committed a batch (a new Delta version, its rows visible), before the checkpoint recorded it"},
    {.name = "signal", .form = SD_K_KEY, .type = SD_V_SIGNAL, .off = S(proc.signal), .def = SIGKILL, .has_def = 1,
     .help = "KILL, TERM, INT, QUIT or HUP"},
    {.name = "after", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(proc.after_ms), .help = "mid-batch: this long after the batch began"},
    {.name = "visible", .form = SD_K_KEY, .type = SD_V_COUNT, .off = S(proc.visible), .min = 1, .meta = "N",
     .help = "mid-batch: once N of the batch's rows are in the target (at most the batch's size)"},
    INSTANCE, TIMEOUT, OPTIONAL, END};

static const sd_lang_key_t sd_keys_pause[] = {
    LANDING(proc.mid_batch),
    {.name = "for", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(proc.delay_ms), .help = "resume by itself after this long"},
    {.name = "after", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(proc.after_ms), .help = "mid-batch: this long after the batch began"},
    {.name = "visible", .form = SD_K_KEY, .type = SD_V_COUNT, .off = S(proc.visible), .min = 1, .meta = "N",
     .help = "mid-batch: once N of the batch's rows are in the target (at most the batch's size)"},
    INSTANCE, TIMEOUT, OPTIONAL, END};

static const sd_lang_key_t sd_keys_produce[] = {
    {.name = "N", .form = SD_K_POS, .type = SD_V_COUNT, .off = S(send.count), .min = 1, .required = 1, .help = "a count (e.g. produce 100)"},
    {.name = "rate", .form = SD_K_KEY, .type = SD_V_RATE, .off = S(send.rate), .help = "events per second (default: as fast as possible)"},
    {.name = "background", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(send.background), .set = 1,
     .help = "send while the next steps run (needs rate=)"},
    {.name = "transactional", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(send.transactional), .set = 1,
     .help = "through a transactional producer, in transactions of size= events (a real broker only)"},
    {.name = "size", .form = SD_K_KEY, .type = SD_V_COUNT, .off = S(send.txn_size), .min = 1, .def = 10, .has_def = 1,
     .help = "transactional: events per transaction"},
    {.name = "abort", .form = SD_K_KEY, .type = SD_V_COUNT, .off = S(send.txn_abort),
     .help = "transactional: this many of the transactions are aborted (spread over the step)"},
    {.name = "open", .form = SD_K_KEY, .type = SD_V_COUNT, .off = S(send.txn_open),
     .help = "transactional: the last this many transactions are left open until a `resolve` step"},
    TIMEOUT, END};

static const sd_lang_key_t sd_keys_replay[] = {
    {.name = "N", .form = SD_K_POS, .type = SD_V_COUNT, .off = S(send.count), .min = 1, .help = "how many events already sent"},
    {.name = "range", .form = SD_K_KEY, .type = SD_V_RANGE, .off = SD_NOWHERE, .help = "P:FROM-TO, offsets FROM to TO-1 of partition P"},
    {.name = "from", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = S(send.replay_from_last), .choices = sd_from_words, .has_def = 1,
     .help = "the oldest or the newest events"},
    {.name = "source", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = S(send.side), .choices = sd_source_words, .has_def = 1,
     .help = "scans (the source) or deliveries (the second source: deliveries already sent, sent again byte for byte)"},
    {.name = "rate", .form = SD_K_KEY, .type = SD_V_RATE, .off = S(send.rate), .help = "events per second"},
    TIMEOUT, END};

#define INJ(k, word, what) {.name = word, .form = SD_K_KEY, .type = SD_V_COUNT, .off = S(send.inject[k]), .help = what}
#define INJ_D(fld, word, d, what) \
    {.name = word, .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(fld), .min = 1, .def = d, .has_def = 1, .help = what}
static const sd_lang_key_t sd_keys_inject[] = {
    {.name = "malformed", .form = SD_K_KEY, .type = SD_V_COUNT, .off = S(send.malformed), .help = "events broken in turn (see kinds=)"},
    INJ(SD_INJ_LATE, "late", "event time `by` behind the watermark"),
    INJ(SD_INJ_OUT_OF_ORDER, "out-of-order", "behind the newest, `within` the watermark"),
    INJ(SD_INJ_FUTURE, "future", "`ahead` of the newest"),
    INJ(SD_INJ_AT_MAX, "at-max", "event time equal to the newest"),
    INJ(SD_INJ_AT_WATERMARK, "at-watermark", "event time equal to the watermark"),
    INJ(SD_INJ_BURST, "burst", "`offline` worth of backlog at once"),
    INJ(SD_INJ_SKEW, "skew", "every event with one `key`"),
    INJ(SD_INJ_DRIFT, "drift", "an extra field or a field of another type (`as=`)"),
    INJ(SD_INJ_NO_KEY, "no-key", "valid events without a message key"),
    INJ(SD_INJ_RETRY_DUP, "retry-dup", "each new event sent twice in a row"),
    INJ(SD_INJ_DELETE, "delete", "tombstones for the keys of the newest events"),
    INJ(SD_INJ_EDGE, "edges", "events on the next edge the model declares: scans 1 ms before, on and 1 ms after the next window "
                              "boundary; or new scans with a delivery on a join bound or 1 ms beside one"),
    INJ_D(send.late_by_ms, "by", 3600000, "late: how far behind the watermark"),
    {.name = "within", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(send.within_ms), .min = 1, .def = -1, .has_def = 1,
     .help = "out-of-order: how far behind the newest (default half the watermark)"},
    INJ_D(send.ahead_ms, "ahead", 7200000, "future: how far ahead"),
    INJ_D(send.offline_ms, "offline", 1800000, "burst: how long the device was offline"),
    {.name = "key", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "K", .off = S(send.skew_key), .help = "skew: the one key"},
    {.name = "as", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = S(send.drift_type), .choices = sd_drift_words, .has_def = 1,
     .help = "drift: extra-field or type-change"},
    {.name = "kinds", .form = SD_K_KEY, .type = SD_V_KINDS, .off = S(send.malformed_kinds),
     .help = "malformed kinds to cycle through (default: the first five)"},
    {.name = "source", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = S(send.side), .choices = sd_source_words, .has_def = 1,
     .help = "scans (the source) or deliveries (the second source: late=, out-of-order=, future=, retry-dup= and malformed= "
             "deliveries, each for a scan already sent that has no delivery of its own)"},
    TIMEOUT, END};

static const sd_lang_key_t sd_keys_await_sink[] = {
    {.name = "NAME", .form = SD_K_POS, .type = SD_V_NAME, .off = S(await.sink), .help = "the sink (default: the target)"},
    {.name = "rows", .form = SD_K_KEY, .type = SD_V_ROWS, .off = S(await.rows), .off2 = S(await.op), .required = 1,
     .help = "rows>=N (or =, >, <=, <, !=)"},
    TIMEOUT, END};

static const sd_lang_key_t sd_keys_await_quiescent[] = {
    {.name = "D", .form = SD_K_POS, .type = SD_V_DURATION, .off = S(await.quiet_ms), .min = 1, .def = 3000, .has_def = 1,
     .help = "how long nothing may change"},
    {.name = "for", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(await.quiet_ms), .min = 1, .help = "the same as D"},
    TIMEOUT, END};

static const sd_lang_key_t sd_keys_await_batches[] = {
    {.name = "N", .form = SD_K_POS, .type = SD_V_COUNT, .off = S(await.rows), .required = 1, .help = "a count of committed batches"},
    TIMEOUT, END};

static const sd_lang_key_t sd_keys_sleep[] = {
    {.name = "D", .form = SD_K_POS, .type = SD_V_DURATION, .off = S(timeout_ms), .required = 1, .help = "one duration"}, END};

static const sd_lang_key_t sd_keys_clock[] = {
    {.name = "offset", .form = SD_K_KEY, .type = SD_V_SDURATION, .off = S(clock.ms), .group = 1, .tag_off = S(clock.op), .tag = SD_CLOCK_OFFSET,
     .help = "the clock this far from real time (+2h)"},
    {.name = "jump", .form = SD_K_KEY, .type = SD_V_SDURATION, .off = S(clock.ms), .group = 1, .tag_off = S(clock.op), .tag = SD_CLOCK_JUMP,
     .help = "move the clock by this much (-10m)"},
    {.name = "rate", .form = SD_K_KEY, .type = SD_V_FACTOR, .off = S(clock.rate), .group = 1, .tag_off = S(clock.op), .tag = SD_CLOCK_RATE,
     .help = "the clock runs this many times as fast (2x)"},
    {.name = "reset", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(clock.op), .set = SD_CLOCK_RESET, .group = 1, .help = "back to real time"},
    OPTIONAL, END};

static const sd_lang_key_t sd_keys_damage_spark[] = {
    {.name = "commit-marker|offsets|state", .form = SD_K_POS, .type = SD_V_CHOICE, .off = S(damage.what), .choices = sd_spark_what,
     .required = 1, .help = "commit-marker, offsets or state"},
    {.name = "truncate", .form = SD_K_WORD, .type = SD_V_FLAG, .off = SD_NOWHERE, .help = "offsets: cut the newest offsets file short"},
    {.name = "checkpoint", .form = SD_K_KEY, .type = SD_V_TEXT, .off = S(damage.path), .meta = "PATH", .help = "the checkpoint (default: the scenario's)"},
    OPTIONAL, END};

static const sd_lang_key_t sd_keys_damage[] = {
    {.name = "file", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "PATH", .off = S(damage.path), .required = 1, .help = "the file to damage"},
    {.name = "delete", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(damage.what), .set = SD_DAMAGE_FILE_DELETE, .group = 1, .help = "remove it"},
    {.name = "truncate", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(damage.what), .set = SD_DAMAGE_FILE_TRUNCATE, .group = 1, .help = "cut it short"},
    OPTIONAL, END};

static const sd_lang_key_t sd_keys_network[] = {
    {.name = "latency", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(net.value), .group = 1, .tag_off = S(net.op), .tag = SD_NET_LATENCY,
     .help = "added to every broker request"},
    {.name = "reset", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(net.op), .set = SD_NET_RESET, .group = 1, .help = "close every connection"},
    {.name = "blackhole", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(net.op), .set = SD_NET_BLACKHOLE, .group = 1, .help = "drop every packet"},
    {.name = "bandwidth", .form = SD_K_KEY, .type = SD_V_BANDWIDTH, .off = S(net.value), .group = 1, .tag_off = S(net.op), .tag = SD_NET_BANDWIDTH,
     .help = "a rate limit (200KB/s)"},
    {.name = "errors", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "API:ERR[,..]", .off = S(net.errors), .group = 1, .tag_off = S(net.op), .tag = SD_NET_ERRORS,
     .help = "API:ERROR[,API:ERROR...] returned by the broker"},
    {.name = "idle-timeout", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(net.value), .group = 1, .tag_off = S(net.op), .tag = SD_NET_IDLE,
     .help = "connections idle longer than this are dropped silently, as Azure Event Hubs' load balancer does (--proxy)"},
    {.name = "count", .form = SD_K_KEY, .type = SD_V_COUNT, .off = S(net.value), .help = "errors: how many times each (default 1)"},
    {.name = "for", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(net.for_ms), .help = "heal by itself after this long"},
    OPTIONAL, END};

static const sd_lang_key_t sd_keys_none[] = {END};

static const sd_lang_key_t sd_keys_note[] = {
    {.name = "TEXT", .form = SD_K_POS, .type = SD_V_TEXT, .off = S(note.text), .required = 1, .help = "the note (quote it)"}, END};

/* ---- entries ---- */

const sd_lang_entry_t sd_lang_entries[] = {
    /* header */
    {.name = "name", .role = SD_LANG_HEADER, .once = 1, .parse = sd_hook_name, .usage = "name NAME",
     .meaning = "the scenario's name (default: the file name without `.drill`); names the run folder"},
    {.name = "set", .role = SD_LANG_HEADER, .parse = sd_hook_set, .usage = "set NAME=VALUE ...",
     .meaning = "default values of user variables; `--set` wins"},
    {.name = "source", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_source, .finish = sd_fin_source,
     .meaning = "the topic the harness produces to. Each run uses `NAME-<tag>` so reruns on a shared broker never read stale data; "
                "`exact=yes` uses NAME as is."},
    {.name = "events", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_events, .finish = sd_fin_events,
     .meaning = "the seeded generator (the default): event *n* has event time `start + n*step` (but for the events put on the edges the model declares, see docs/oracle.md, \"Edges\"; `edges=0`: none), a `parcel_id`, a `location` (one of `locations=`), a `scan` type and a `weight_g` of 50 to 30,000 (integers), each a function of the seed and *n*; `start=now` starts at the run's "
                "start instead (for pipelines that compare event time with the wall clock; not reproducible). `log=PATH id=FIELD` "
                "replays a JSON-lines file instead, one event per line, in order: each event's FIELD is rewritten to its ledger id, "
                "the rest of the line is kept; a relative PATH is looked up in the current folder, then next to the scenario."},
    {.name = "deliveries", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_deliveries, .finish = sd_fin_deliveries,
     .meaning = "a second source topic for joins, fed by a generator correlated with the scans: scan *n* has a delivery when a hash "
                "of the seed and *n* falls in `share=` percent, `{\"delivery_id\":\"<tag>-d<n>\",\"parcel_id\":<the scan's>,"
                "\"delivered_at\":<the scan's event time + min-delay..max-delay>,\"courier\":\"C<nn>\"}`, keyed by the parcel, "
                "sent with the scan's first copy (replays, late and malformed events have none). Its topic is `{deliveries}` in the "
                "pipeline's command, `STREAMDRILL_DELIVERIES_TOPIC` in its environment. With the parcel-scan generator; or "
                "`log=PATH`: a JSON-lines file of deliveries, line *n* sent behind the *n*-th new scan (its `id=` field rewritten to "
                "`<tag>-d<n>`, keyed by its `key=` field, its event time in `time=`), with any events."},
    {.name = "contract", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_contract,
     .meaning = "what the pipeline promises: the id and event-time fields, the watermark delay, what happens to late and malformed "
                "events, whether it removes duplicate input (`drop`: each id once in the target) or passes every input record on "
                "(`keep`: an id sent *n* times must be there *n* times, the guarantee of Spark's file sink), and which buckets may "
                "be non-empty (defaults shown first)"},
    {.name = "sink", .role = SD_LANG_HEADER, .parse = sd_hook_sink,
     .usage = "sink [NAME] sqlite db=PATH query=SQL | postgres dsn=DSN query=SQL | kafka topic=NAME [id=FIELD] [header=NAME] [isolation=read_committed] | "
              "jsonl path=GLOB [id=FIELD] [time=FIELD] | spark-files path=DIR [id=FIELD] [time=FIELD] | flink-files path=DIR [id=FIELD] [time=FIELD] | "
              "delta path=DIR [id=FIELD] [time=FIELD] [python=PATH] | command [id=FIELD] [writer=FIELD] [time=FIELD] [timeout=D] [max-output=N] PROGRAM ARG...",
     .meaning = "where the pipeline's output is read from (see [sink readers](#sink-readers)). The first `sink` is the target the "
                "contract is about (named `target` unless named); further sinks are reconciled too, their checks prefixed with "
                "their name."},
    {.name = "quarantine", .role = SD_LANG_HEADER, .parse = sd_hook_sink, .usage = "quarantine [NAME] KIND ...",
     .meaning = "where malformed (and, with `late=quarantine`, late) events must go; same readers as `sink`"},
    {.name = "pipeline", .role = SD_LANG_HEADER, .once = 1, .parse = sd_hook_pipeline, .usage = "pipeline [instances=N] PROGRAM ARG...",
     .meaning = "the pipeline's command line, exec'd without a shell. With `instances=N` (at most 8) `start` runs N copies side by "
                "side, each its own incarnation with its own logs, `{instance}` and `$STREAMDRILL_INSTANCE` (1 to N), for "
                "consumers that share a consumer group; `kill`, `pause`, `stop`, `restart`, `resume` and `start` act on every "
                "running instance, or on one with `instance=K`"},
    {.name = "variant", .role = SD_LANG_HEADER, .parse = sd_hook_variant, .usage = "variant NAME PROGRAM ARG...",
     .meaning = "another command line of the same pipeline (same checkpoint, same placeholders), started by `start as=NAME` or "
                "`restart as=NAME`: changed code, or the same query with `Trigger.AvailableNow`; with `deploy` lines, another "
                "`deploy start` command line (a job upgraded from its savepoint)"},
    {.name = "deploy", .role = SD_LANG_HEADER, .parse = sd_hook_deploy, .usage = "deploy start|status|stop|kill|logs PROGRAM ARG...",
     .meaning = "a pipeline the harness does not fork, instead of a `pipeline` line (see [deployed pipelines](pipelines.md#pipelines-the-harness-does-not-fork)): "
                "`start` deploys it (the last line it prints is `{deployment}` in the others), `status` exits 0 while it runs, `kill` "
                "ends it at once, `stop` gracefully (default: `kill`), `logs` prints its output as it comes (batch markers are read from "
                "it). start, status and kill are needed; each is exec'd without a shell, placeholders expanded"},
    {.name = "fault-command", .role = SD_LANG_HEADER, .parse = sd_hook_fault_command, .usage = "fault-command NAME PROGRAM ARG...",
     .meaning = "a fault the harness cannot make itself, as a command a `fault NAME` step runs (exec'd without a shell, "
                "placeholders expanded): a pod deleted, a YARN container or a Spark executor killed, a broker of a managed "
                "cluster restarted"},
    {.name = "version", .role = SD_LANG_HEADER, .once = 1, .parse = sd_hook_version, .usage = "version [files=PATH[,PATH...]] [PROGRAM ARG...]",
     .meaning = "the application version each incarnation records in the runbook: what PROGRAM prints (run without a shell when "
                "the incarnation starts, e.g. `git describe --always` or `spark-submit --version`, its first line, 30 s at most) and "
                "the SHA-256 of the named files (the pipeline's code), placeholders expanded"},
    {.name = "env", .role = SD_LANG_HEADER, .parse = sd_hook_env, .usage = "env NAME=VALUE ...",
     .meaning = "extra environment for the pipeline"},
    {.name = "logs", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_logs,
     .meaning = "how much of the pipeline's output the run folder keeps: each log (`logs/pipeline-N.stdout.log`, "
                "`.stderr.log`) keeps its first and its last `max/2` bytes, and a line between them says how many bytes were cut "
                "(a pipeline that prints a gigabyte makes no gigabyte run folder); markers are read from every line all the same"},
    {.name = "clock faketime", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_faketime, .finish = sd_fin_faketime,
     .meaning = "run the pipeline under libfaketime so `clock` steps move its clock; `preload=children` leaves the pipeline itself "
                "on real time and lets it preload the library into what it starts (a PySpark driver does this for its JVM, since "
                "Python's `time.sleep` fails under libfaketime)"},
    {.name = "model", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_model, .finish = sd_fin_model,
     .meaning = "judge a sink by the result it must hold instead of by ids (see [result models](oracle.md#result-models)): `windows`, "
                "event-time windows (`size=`, `slide=` for sliding ones) per `key=` field, with the aggregates of `agg=` over "
                "`value=`; or `latest`, one row per `key=` holding the `fields=` of its newest event (by event time, or "
                "`order=arrival`); or `rows`, the ids as without a model, and each row's `fields=` equal to what was sent (else "
                "`changed`). Computed from the ledger under the contract (watermark, late and duplicate policies). The "
                "sink's rows name their columns: a window's start (`start=`, epoch ms or ISO-8601), each key field, and "
                "`count`, `sum`, `min`, `max`, `avg`, or the `fields=`."},
    {.name = "progress", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_progress, .finish = sd_fin_progress,
     .usage = "progress markers|sink|none / progress spark [checkpoint={checkpoint}] [batches=micro|real-time] / progress flink "
              "[checkpoint={checkpoint}] / progress group [group={group}]",
     .meaning = "how readiness, \"mid-batch\" and \"caught up\" are found (see [progress sources](#progress-sources)): batch markers "
                "(default), sink growth, not at all, a Spark checkpoint (batch N is in flight while `offsets/N` exists and "
                "`commits/N` does not; with `batches=real-time`, interval N runs from the commit of N-1 to its own commit), a Flink job's "
                "checkpoints (batch N runs from the completion of checkpoint N-1 to that of N: `DIR/JOB/chk-N` holding `_metadata`, "
                "whose Kafka source offsets are the commit's; its watermark is the oldest source partition's, which the result "
                "models allow for), "
                "or the pipeline's consumer group (a commit when its committed offsets move, a batch in flight while the target holds rows "
                "past the newest commit, ready when a new member holds an assignment)"},
    {.name = "producer", .role = SD_LANG_HEADER, .parse = sd_hook_producer, .usage = "producer PROP=VALUE ...",
     .meaning = "librdkafka properties of the harness's producer (before `-X`)"},

    /* steps */
    {.name = "start", .role = SD_LANG_STEP, .kind = SD_STEP_START, .keys = sd_keys_start, .timeout_ms = 30000,
     .needs = SD_NEEDS_PIPELINE, .finish = sd_fin_instance,
     .meaning = "start the pipeline. With markers, waits for `SD-READY`, a first batch marker, or (a pipeline that prints no "
                "`SD-READY`) a connection to the broker; otherwise the process must still run after 2 s. A pipeline that cannot be exec'd or exits before it is ready makes the run inconclusive (exit 3)."},
    {.name = "produce", .role = SD_LANG_STEP, .kind = SD_STEP_PRODUCE, .keys = sd_keys_produce, .timeout_ms = 120000,
     .needs = SD_NEEDS_SOURCE, .finish = sd_fin_produce,
     .meaning = "send N new events, then wait until all are acknowledged. With `background` (and a rate) they are sent at that pace "
                "while the next steps run (a kill during a steady flow); a later `produce`, `await quiescent` and the "
                "reconciliation wait for it to finish. With `transactional` they go through a transactional producer in "
                "transactions of `size=` events: `abort=M` aborts M of them (their events must never reach the target: "
                "`aborted_leaked`), `open=K` leaves the last K open until a `resolve` step (a hanging transaction). Needs a real "
                "broker: the embedded cluster does not hide aborted transactions from `read_committed` readers."},
    {.name = "replay", .role = SD_LANG_STEP, .kind = SD_STEP_REPLAY, .keys = sd_keys_replay, .timeout_ms = 120000,
     .needs = SD_NEEDS_SOURCE, .finish = sd_fin_replay,
     .meaning = "send again N events already sent, byte for byte (same id, same payload): exact duplicates. `range=P:FROM-TO` reads "
                "the records at offsets FROM to TO-1 of partition P back from Kafka and sends them again as they are: an upstream "
                "replay of an offset range."},
    {.name = "inject", .role = SD_LANG_STEP, .kind = SD_STEP_INJECT, .keys = sd_keys_inject, .timeout_ms = 60000,
     .needs = SD_NEEDS_SOURCE, .finish = sd_fin_inject,
     .usage = "inject KIND=N ... [by=1h] [within=D] [ahead=2h] [offline=30m] [key=K] [as=extra-field|type-change] [kinds=LIST]",
     .meaning = "the data faults of the [catalogue](faults.md#fault-catalogue): `late=N` (event time `by` behind the watermark: newest event "
                "time sent minus the contract's delay), `out-of-order=N` (behind the newest, `within` the watermark, default half "
                "of it), `future=N` (`ahead` of the newest), `at-watermark=N`, `at-max=N`, `burst=N` (`offline` worth of backlog), "
                "`skew=N` (one `key`), `drift=N` (`as=extra-field` or `type-change`), `no-key=N`, `retry-dup=N` (each new event "
                "sent twice in a row), `malformed=N` broken in turn as `truncated`, `not-json`, `missing-id`, `wrong-type`, "
                "`empty` (the default five) or, with `kinds=`, also `invalid-utf8`, `oversized` (900 KB), `null-value` (a "
                "tombstone), `duplicate-keys`. Every message carries its ledger id in the `sd-id` header."},
    {.name = "kill", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_KILL, .keys = sd_keys_kill, .timeout_ms = 60000,
     .needs = SD_NEEDS_STARTED, .finish = sd_fin_landing,
     .meaning = "signal the pipeline's process group. `mid-batch` lands between a batch's begin and commit; `at-boundary` right "
                "after a commit, before the next batch; `now` (default) at once. Inside the batch, the harness aims (see [progress "
                "sources](#progress-sources)) unless `after=D` (that long after the batch began) or `visible=N` (once N of the "
                "batch's rows are in the target, all of them when it is smaller: a drill that needs part of a batch written) "
                "says where. A `TERM` that is not obeyed within the timeout is "
                "escalated to `KILL`; a pipeline that finishes its batch on `TERM` is reported as such. A kill that finds no "
                "batch, lands after the batch's commit, or finds no pipeline makes the run inconclusive (see [no pass without "
                "the drill](pipelines.md#no-pass-without-the-drill)), unless the step says `optional`."},
    {.name = "stop", .role = SD_LANG_STEP, .kind = SD_STEP_STOP, .keys = sd_keys_stop, .fault = 1, .timeout_ms = 10000,
     .needs = SD_NEEDS_STARTED, .finish = sd_fin_instance, .meaning = "graceful stop: SIGTERM, SIGKILL after the timeout"},
    {.name = "restart", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_RESTART, .keys = sd_keys_restart, .timeout_ms = 10000,
     .needs = SD_NEEDS_PIPELINE, .finish = sd_fin_instance,
     .meaning = "stop the pipeline if it runs, wait `delay`, start it again with the same command and checkpoint. `timeout=` "
                "bounds the stop and the wait for the new incarnation to be ready (without it, that wait is up to 30 s). A restart "
                "that does not come up is a finding (a crash), not an inconclusive run."},
    {.name = "pause", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_PAUSE, .keys = sd_keys_pause, .timeout_ms = 60000,
     .needs = SD_NEEDS_STARTED, .finish = sd_fin_landing,
     .meaning = "SIGSTOP to the process group, landing like `kill`; with `for=` the step resumes it after that long (long enough, "
                "and a consumer-group member loses its membership)"},
    {.name = "resume", .role = SD_LANG_STEP, .kind = SD_STEP_RESUME, .keys = sd_keys_resume, .timeout_ms = 30000,
     .needs = SD_NEEDS_STARTED, .finish = sd_fin_instance, .meaning = "SIGCONT to the process group"},
    {.name = "scale", .role = SD_LANG_STEP, .kind = SD_STEP_SCALE, .keys = sd_keys_scale, .timeout_ms = 60000,
     .needs = SD_NEEDS_STARTED,
     .meaning = "run N instances of the pipeline while data flows: the missing ones are started one after the other, each "
                "waited for until it is ready, with its own `{instance}`; the ones above N get SIGTERM (a graceful leave of the "
                "consumer group). `scale to=0` stops them all"},
    {.name = "await sink", .role = SD_LANG_STEP, .kind = SD_STEP_AWAIT_SINK, .keys = sd_keys_await_sink, .timeout_ms = 60000,
     .needs = SD_NEEDS_SINK, .finish = sd_fin_await_sink,
     .meaning = "wait until the sink has N rows. A timeout is recorded as a warning; the run goes on and the reconciliation judges. A sink that cannot be read (no such file, table or topic) is named on the live line and in the warnings (`sink-unreadable`) after 3 s; once every pipeline instance has exited with it still unreadable, the step ends 2 s later and the run is inconclusive (exit 3), naming the sink and the exit; readable but short of N with every instance gone and no step to start one, it ends 2 s later as a timeout naming how the pipeline ended. When a fault aimed at a batch comes next (`kill`, `stop` or `pause` with `mid-batch`, `at-boundary` or `after-sink-commit`, past any `produce`, `replay` and `inject`), the step then waits, within its timeout, for the commit of the batch in flight when the rows appeared: a sink may show a batch before the pipeline commits it (Delta's commit, then Spark's `commits/N`), and a kill must not find that batch still open. The step says when it committed, or warns (`await-uncommitted`) that it did not."},
    {.name = "await quiescent", .role = SD_LANG_STEP, .kind = SD_STEP_AWAIT_QUIESCENT, .keys = sd_keys_await_quiescent,
     .timeout_ms = 60000, .needs = SD_NEEDS_SINK,
     .meaning = "wait until every sink's row count and the batch markers have been still for D and, when the pipeline reports "
                "consumed offsets, it has consumed every source partition to its end. When those offsets prove it "
                "caught up, D is not waited for: the sinks need only stay still for 150 ms after the commit that "
                "proved it (D stays the rule for pipelines that report no offsets, and for a Spark checkpoint when "
                "another sink, another query's, is judged too, for a Spark query whose progress names state operators, since a "
                "batch without new data may still emit what its watermark evicts, and until a pipeline that gives its own "
                "account, Spark's progress, has given it for the newest committed batch). A batch that began and has not "
                "committed is not still, however still the sinks look (an aggregation writes nothing until a window "
                "closes). If that never happens the run is inconclusive (exit 3)."},
    {.name = "await batches", .role = SD_LANG_STEP, .kind = SD_STEP_AWAIT_BATCHES, .keys = sd_keys_await_batches, .timeout_ms = 60000,
     .finish = sd_fin_await_batches,
     .needs = SD_NEEDS_STARTED | SD_NEEDS_BATCHES,
     .meaning = "wait until the running incarnation has committed N batches (markers or a Spark checkpoint)"},
    {.name = "sleep", .role = SD_LANG_STEP, .kind = SD_STEP_SLEEP, .keys = sd_keys_sleep,
     .meaning = "wait (the harness keeps recording)"},
    {.name = "clock", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_CLOCK, .keys = sd_keys_clock, .one_of = 1, .needs = SD_NEEDS_FAKETIME,
     .usage = "clock offset=+2h | jump=-10m | rate=2x | reset [optional]", .meaning = "move the pipeline's clock (needs `clock faketime`)"},
    {.name = "damage spark", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_DAMAGE, .keys = sd_keys_damage_spark,
     .finish = sd_fin_damage_spark, .usage = "damage spark commit-marker | offsets [truncate] | state [checkpoint=PATH] [optional]",
     .meaning = "damage the Spark checkpoint while the pipeline is down"},
    {.name = "damage", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_DAMAGE, .keys = sd_keys_damage, .one_of = 1,
     .usage = "damage file=PATH delete|truncate [optional]", .meaning = "delete or cut short a file of the pipeline's state"},
    {.name = "network", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_NETWORK, .keys = sd_keys_network, .one_of = 1,
     .finish = sd_fin_network,
     .usage = "network latency=D | reset | blackhole | bandwidth=R | idle-timeout=D | errors=API:ERR[,..] [count=N], each [for=D] [optional]",
     .meaning = "broker and network faults (see the [catalogue](faults.md#fault-catalogue))"},
    {.name = "broker", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_BROKER, .keys = sd_keys_broker, .timeout_ms = 60000,
     .finish = sd_fin_broker,
     .meaning = "break a broker of the cluster `--cluster DIR` describes (`kafka.sh cluster` starts one): `kill`, `stop`, `pause` "
                "it, `start` or `resume` it again, or `restart` it; `isolate` cuts it off from the other brokers (its inter-broker and "
                "controller links) while clients still reach it, and `rejoin` gives the links back; chosen by `id=N`, or as the leader (`leader-of=P`) or a follower "
                "(`follower-of=P`) of a source partition when the step strikes. `mid-batch` and `at-boundary` land as `kill`'s do, in the pipeline's batches. A kill, "
                "stop or pause waits (up to the timeout) until every source partition has a leader again and records which leaders "
                "moved and how long a partition had none (`leaderless_s`); `for=D` starts it again after D. The run ends with "
                "every broker it took down started again and every broker it cut off rejoined. On the embedded cluster (`--broker-count N`) kill and stop set a mock "
                "broker down and the harness moves its leaderships at once; pause needs a real cluster."},
    {.name = "fault", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_FAULT, .keys = sd_keys_fault, .timeout_ms = 60000,
     .finish = sd_fin_fault,
     .meaning = "run the `fault-command` NAME: `mid-batch` and `at-boundary` land as `kill`'s do, in the pipeline's batches (the "
                "pipeline is not signalled, so a batch that commits after the command started counts as landed inside it). "
                "The command's output is in logs/fault-LINE.log; one that fails, is not found or outlasts the timeout did not do "
                "what the step says: inconclusive unless `optional`. The pipeline's own process is `kill`'s: a fault command that "
                "ends it is counted as a crash."},
    {.name = "resolve", .role = SD_LANG_STEP, .kind = SD_STEP_RESOLVE, .keys = sd_keys_timeout, .timeout_ms = 60000,
     .meaning = "commit the transactions a `produce ... transactional open=K` left open (until then a `read_committed` reader "
                "cannot read past them); the harness commits any still open before it reconciles, and says so"},
    {.name = "heal", .role = SD_LANG_STEP, .kind = SD_STEP_HEAL, .keys = sd_keys_none,
     .meaning = "end every fault that is still on (a pause, the clock, network faults, brokers the run took down or froze); the "
                "harness also does it before it reconciles"},
    {.name = "note", .role = SD_LANG_STEP, .kind = SD_STEP_NOTE, .keys = sd_keys_note,
     .meaning = "a line of the runbook, recorded in run.db and shown in the report's steps: `note \"the on-call pages the owner\"`"},
    {.name = "operator", .role = SD_LANG_STEP, .kind = SD_STEP_OPERATOR, .parse = sd_parse_operator, .timeout_ms = 600000,
     .usage = "operator \"TEXT\" [timeout=10m] [command=PROGRAM ARG...]",
     .meaning = "a step a person does on a game day: on a terminal the harness shows TEXT and waits until the operator presses "
                "Enter (or runs `streamdrill ack DIR` from another shell), recording how long it took (the human part of each "
                "recovery, `operator_s`). Without a terminal, or with `--operator auto`, it runs the command instead (exec'd without a "
                "shell, placeholders expanded, its output in logs/); with neither a person nor a command, or no confirmation within "
                "the timeout, the drill did not do what it says: inconclusive."},
    {.name = "expect", .role = SD_LANG_STEP, .kind = SD_STEP_EXPECT, .parse = sd_parse_expect, .needs = SD_NEEDS_SINK,
     .usage = "expect COUNT OP VALUE ... | expect [step=LINE] FIGURE OP VALUE ...",
     .meaning = "checks made at reconciliation: `unique=120 lost=0 duplicated>0 quarantined=3`. VALUE is a number or another count "
                "(`unique=expected`). An `expect` on a count replaces the profile's implicit check of it. A [recovery "
                "figure](#recovery-figures) holds for every fault (`expect recovery_s<=60 rewritten_rows<=500`), or with `step=LINE` "
                "for the fault step at that line (`expect step=21 recovery_s<=2.5`; seconds take a fraction); a figure the run could "
                "not measure makes it inconclusive."},
    {.name = NULL}};

/* ======================================================================
 * Help and reference
 * ====================================================================== */

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
          "measured).\n\n| figure | unit | meaning |\n|---|---|---|\n", f);
    for (int k = 0; k < SD_FIG__COUNT; k++) {
        char u = sd_figure_unit(k);
        fprintf(f, "| `%s` | %s | ", sd_figure_name(k), u == 's' ? "seconds" : u == 'm' ? "ms" : "count");
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
