/* lang_words.c - the scenario language's machinery (see lang_int.h): split
 * a word into key, operator and value, parse a value by its type with its
 * range, report what was expected and what was found at the value's
 * column, find a line's entry in the table and parse it. */
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

sd_err_t sd_perr(sd_pctx_t *c, int line, int col, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sd_err_set(c->err, c->errlen, SD_ERR_SCENARIO, "%s:%d:%d: %s", c->path, line, col, msg);
}

/* ---- words: key, operator, value ---- */


/* Split "key=value", "key>=value", ... ; has_op = 0 for a bare word. */
void sd_split_kv(const sd_tok_t *t, sd_kvtok_t *kv) {
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
int sd_value_col(const sd_tok_t *t, const sd_kvtok_t *kv) {
    if (t->quoted || !kv->has_op) return t->col;
    return t->col + (int)(kv->value - t->text);
}

/* Column just after the line's last word. */
int sd_end_col(const sd_toks_t *ts) {
    const sd_tok_t *t = &ts->t[ts->n - 1];
    return t->col + (int)strlen(t->text) + 1;
}

int sd_lang_name_words(const sd_lang_entry_t *e) { return strchr(e->name, ' ') ? 2 : 1; }

int sd_valid_name(const char *s) {
    if (!*s || !isalpha((unsigned char)*s)) return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '-' || *s == '.')) return 0;
    return 1;
}

/* A duration in the shortest exact unit: 60s, 2m, 250ms, 1h, 1d. */
void sd_fmt_duration(int64_t ms, char *out, size_t n) {
    if (ms % 86400000 == 0 && ms) snprintf(out, n, "%" PRId64 "d", ms / 86400000);
    else if (ms % 3600000 == 0 && ms) snprintf(out, n, "%" PRId64 "h", ms / 3600000);
    else if (ms % 60000 == 0 && ms) snprintf(out, n, "%" PRId64 "m", ms / 60000);
    else if (ms % 1000 == 0) snprintf(out, n, "%" PRId64 "s", ms / 1000);
    else snprintf(out, n, "%" PRId64 "ms", ms);
}

void sd_join_choices(const char *const *ch, const char *sep, sd_buf_t *b) {
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
            int found = sd_malformed_parse(w);
            if (found < 0) {
                sd_err_t err = sd_perr(c, t->line, col,
                                       "%s: expected truncated, not-json, missing-id, wrong-type, empty, invalid-utf8, oversized, "
                                       "null-value, duplicate-keys, bad-magic, unknown-schema-id, truncated-record or foreign-schema, found \"%s\"", what, w);
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
    {
        int zoned = 0;
        if (sd_util_parse_iso8601_zone(v, &sc->start_ms, &zoned))
            return sd_perr(c, t->line, col, "%s: expected start=YYYY-MM-DDTHH:MM:SSZ (a real date, an offset from UTC) or start=now, "
                           "found \"%s\"", e->name, v);
        if (!zoned)
            return sd_perr(c, t->line, col, "%s: expected start= with its offset from UTC (Z or +HH:MM), found \"%s\" with none: "
                           "a time without one names a different instant in every zone", e->name, v);
        return SD_OK;
    }
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
void sd_apply_defaults(const sd_lang_entry_t *e, void *obj) {
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
sd_err_t sd_parse_keys(sd_pctx_t *c, const sd_lang_entry_t *e, sd_scenario_t *sc, void *obj, const sd_toks_t *ts,
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

/* In a finish hook: was the key named `key` on the line? (present: the
 * hook's bit set, bit i for keys[i] of the line's entry, c->entry) */
int sd_has_key(const sd_pctx_t *c, uint64_t present, const char *key) {
    const sd_lang_entry_t *e = c->entry;
    for (int k = 0; e && e->keys && e->keys[k].name && k < 64; k++)
        if (!strcmp(e->keys[k].name, key)) return (present >> k) & 1;
    return 0;
}

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
