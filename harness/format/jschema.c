/* jschema.c - JSON Schema validation on jansson values (see jschema.h).
 *
 * A schema is compiled once: every keyword checked against the set this
 * file validates, every $ref resolved, every pattern compiled. Validation
 * then walks the schema beside the value, stopping at the first failure,
 * and names its place as a JSON pointer. anyOf, oneOf, not and if try
 * their branches quietly: only the outcome counts, never a branch's
 * reason. */
#include "jschema.h"

#include "ecmare.h"
#include "util.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *src;
    size_t len;
    sd_ecmare_t *re;
} sd_jschema_re_t;

struct sd_jschema_s {
    json_t *root;
    int dialect; /* 7: draft 7 (4 and 6 read the same), 2019: 2019-09, 2020: 2020-12, by the root's $schema */
    sd_jschema_re_t *re;
    size_t nre, cap;
    json_t **targets; /* what the $refs point at, while compiling */
    size_t ntargets;
};

/* the keywords validated, and those read as annotations only */
static const char *const sd_jschema_keywords[] = {
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
    "maxLength", "pattern", "properties", "required", "additionalProperties", "patternProperties", "propertyNames",
    "dependencies", "minProperties", "maxProperties", "items", "additionalItems", "contains", "minItems", "maxItems",
    "uniqueItems", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "definitions", "$ref",
    "$schema", "$id", "id", "$comment", "title", "description", "default", "examples", "readOnly", "writeOnly", "format", "$defs", NULL};
/* 2019-09 and 2020-12's keywords it checks too, under those dialects only */
static const char *const sd_jschema_keywords_2019[] = {"dependentRequired", "dependentSchemas", NULL};
/* theirs it does not check: refused by name */
static const char *const sd_jschema_keywords_later[] = {
    "prefixItems", "unevaluatedProperties", "unevaluatedItems", "minContains", "maxContains", "$anchor", "$dynamicRef",
    "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor", "$vocabulary", "contentSchema", NULL};

static int sd_jschema_listed(const char *const *list, const char *k) {
    for (int i = 0; list[i]; i++)
        if (!strcmp(k, list[i])) return 1;
    return 0;
}

/* ---- compiling ---- */

/* A message made valid UTF-8 for every report that carries it: a name cut
 * by a %.80s (or by the buffer) in the middle of a character, or bytes
 * that were never UTF-8, become \xHH (sd_util_safe_text); cut again, at a
 * whole character, to fit cap. */
static void sd_jschema_mend(char *buf, size_t cap) {
    if (!buf || !cap) return;
    char *s = sd_util_safe_text(buf, 1);
    size_t n = strlen(s);
    if (n >= cap)
        for (n = cap - 1; n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80; n--) {}
    memcpy(buf, s, n);
    buf[n] = 0;
    free(s);
}

static int sd_jschema_err(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    sd_jschema_mend(err, errlen);
    return -1;
}

static const sd_ecmare_t *sd_jschema_re(const sd_jschema_t *s, const char *src, size_t len) {
    for (size_t i = 0; i < s->nre; i++)
        if (s->re[i].len == len && !memcmp(s->re[i].src, src, len)) return s->re[i].re;
    return NULL;
}

/* The pattern src (len bytes) compiled as ECMA-262 (ecmare.c), once. */
static int sd_jschema_add_re(sd_jschema_t *s, const char *src, size_t len, const char *at, char *err, size_t errlen) {
    if (sd_jschema_re(s, src, len)) return 0;
    if (s->nre == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        sd_jschema_re_t *more = realloc(s->re, cap * sizeof(*s->re));
        if (!more) return sd_jschema_err(err, errlen, "out of memory");
        s->re = more, s->cap = cap;
    }
    char why[256];
    sd_ecmare_refusal_t kind;
    sd_ecmare_t *re = sd_ecmare_compile(src, len, &kind, why, sizeof(why));
    if (!re)
        return sd_jschema_err(err, errlen, "at %s: pattern \"%.80s\"%s: %s", at[0] ? at : "/", src,
                              kind == SD_ECMARE_NOT_ECMA ? " is not an ECMA-262 expression" : " is past what the harness checks", why);
    sd_jschema_re_t *r = &s->re[s->nre];
    if (!(r->src = malloc(len + 1))) {
        sd_ecmare_free(re);
        return sd_jschema_err(err, errlen, "out of memory");
    }
    memcpy(r->src, src, len);
    r->src[len] = 0;
    r->len = len, r->re = re;
    s->nre++;
    return 0;
}

/* The place a local $ref points at: "#" or a JSON pointer after "#/",
 * its tokens with ~0, ~1 and %XX decoded. NULL when there is none. */
static json_t *sd_jschema_follow(json_t *root, const char *ref) {
    if (!strcmp(ref, "#")) return root;
    if (strncmp(ref, "#/", 2)) return NULL;
    json_t *cur = root;
    const char *p = ref + 2;
    char tok[512];
    for (;;) {
        size_t t = 0;
        for (; *p && *p != '/' && t + 1 < sizeof(tok); p++) {
            if (p[0] == '~' && (p[1] == '0' || p[1] == '1')) tok[t++] = p[1] == '0' ? '~' : '/', p++;
            else if (p[0] == '%' && p[1] && p[2] && sscanf(p + 1, "%2hhx", (unsigned char *)&tok[t]) == 1) t++, p += 2;
            else tok[t++] = *p;
        }
        tok[t] = 0;
        if (json_is_object(cur)) {
            cur = json_object_get(cur, tok);
        } else if (json_is_array(cur)) {
            char *end;
            long i = strtol(tok, &end, 10);
            cur = *tok && !*end && i >= 0 ? json_array_get(cur, (size_t)i) : NULL;
        } else {
            cur = NULL;
        }
        if (!cur || *p != '/') return *p ? NULL : cur;
        p++;
    }
}

static int sd_jschema_walk(sd_jschema_t *s, json_t *node, const char *at, char *err, size_t errlen);

/* Every place a $ref in node points at, into s->targets: a schema kept
 * under a name no keyword has is still a schema when a $ref reaches it. */
static void sd_jschema_targets(sd_jschema_t *s, json_t *node) {
    const char *k;
    json_t *v;
    size_t i;
    if (json_is_array(node)) json_array_foreach(node, i, v) sd_jschema_targets(s, v);
    if (!json_is_object(node)) return;
    json_object_foreach(node, k, v) {
        json_t *t = !strcmp(k, "$ref") && json_is_string(v) ? sd_jschema_follow(s->root, json_string_value(v)) : NULL;
        if (t) {
            json_t **more = realloc(s->targets, (s->ntargets + 1) * sizeof(*more));
            if (more) s->targets = more, s->targets[s->ntargets++] = t;
        }
        sd_jschema_targets(s, v);
    }
}

static int sd_jschema_walk_in(sd_jschema_t *s, json_t *node, const char *at, const char *key, char *err, size_t errlen) {
    char sub[1024];
    if (snprintf(sub, sizeof(sub), "%s/%s", at, key) >= (int)sizeof(sub)) return sd_jschema_err(err, errlen, "at %.200s: nested too deep", at);
    return sd_jschema_walk(s, node, sub, err, errlen);
}

/* Every schema in an object of named schemas (properties, ...). */
static int sd_jschema_walk_named(sd_jschema_t *s, json_t *v, const char *at, const char *k, char *err, size_t errlen) {
    if (!json_is_object(v)) return sd_jschema_err(err, errlen, "at %s/%s: expected an object of schemas", at, k);
    const char *name;
    json_t *sub;
    char here[1024];
    if (snprintf(here, sizeof(here), "%s/%s", at, k) >= (int)sizeof(here)) return sd_jschema_err(err, errlen, "at %.200s: nested too deep", at);
    json_object_foreach(v, name, sub) {
        if (!strcmp(k, "patternProperties") && sd_jschema_add_re(s, name, strlen(name), here, err, errlen)) return -1;
        if (!strcmp(k, "dependencies") && json_is_array(sub)) continue; /* the names it needs */
        if (sd_jschema_walk_in(s, sub, here, name, err, errlen)) return -1;
    }
    return 0;
}

static int sd_jschema_walk(sd_jschema_t *s, json_t *node, const char *at, char *err, size_t errlen) {
    if (json_is_boolean(node)) return 0;
    if (!json_is_object(node)) return sd_jschema_err(err, errlen, "at %s: a schema is an object or true or false", at[0] ? at : "/");
    const char *k;
    json_t *v;
    json_object_foreach(node, k, v) {
        int known = sd_jschema_listed(sd_jschema_keywords, k) || (s->dialect >= 2019 && sd_jschema_listed(sd_jschema_keywords_2019, k));
        if (s->dialect == 2020 && !strcmp(k, "additionalItems")) known = 0; /* 2020-12 has no such keyword */
        for (size_t i = 0; i < s->ntargets && !known; i++) known = s->targets[i] == v ? 2 : 0;
        if (known == 2) {
            if (sd_jschema_walk_in(s, v, at, k, err, errlen)) return -1;
            continue;
        }
        if (!known && (sd_jschema_listed(sd_jschema_keywords_later, k) || sd_jschema_listed(sd_jschema_keywords_2019, k) ||
                       !strcmp(k, "additionalItems")))
            return sd_jschema_err(err, errlen, "at %s: keyword \"%s\" is not one the harness checks under %s (%sdocs/formats.md lists "
                                  "them)", at[0] ? at : "/", k,
                                  s->dialect == 2020 ? "draft 2020-12" : s->dialect == 2019 ? "draft 2019-09" : "draft 7",
                                  s->dialect == 7 ? "a keyword of drafts 2019-09 and 2020-12; " : "");
        if (!known)
            return sd_jschema_err(err, errlen, "at %s: keyword \"%.80s\" is not one the harness checks (docs/formats.md lists them)",
                                  at[0] ? at : "/", k);
        int rc = 0;
        if (s->dialect == 2020 && !strcmp(k, "items") && json_is_array(v))
            return sd_jschema_err(err, errlen, "at %s/items: an array of schemas is no items of draft 2020-12 (its tuples are "
                                  "prefixItems, which the harness does not check)", at);
        if (!strcmp(k, "dependentRequired")) {
            const char *name;
            json_t *names, *one;
            size_t i;
            int ok = json_is_object(v);
            json_object_foreach(v, name, names) {
                ok &= json_is_array(names);
                json_array_foreach(names, i, one) ok &= json_is_string(one);
            }
            if (!ok) return sd_jschema_err(err, errlen, "at %s/dependentRequired: expected an object of arrays of names", at);
        } else if (!strcmp(k, "properties") || !strcmp(k, "patternProperties") || !strcmp(k, "definitions") || !strcmp(k, "$defs") ||
                   !strcmp(k, "dependencies") || !strcmp(k, "dependentSchemas")) {
            rc = sd_jschema_walk_named(s, v, at, k, err, errlen);
        } else if (!strcmp(k, "additionalProperties") || !strcmp(k, "additionalItems") || !strcmp(k, "contains") ||
                   !strcmp(k, "propertyNames") || !strcmp(k, "not") || !strcmp(k, "if") || !strcmp(k, "then") || !strcmp(k, "else") ||
                   (!strcmp(k, "items") && !json_is_array(v))) {
            rc = sd_jschema_walk_in(s, v, at, k, err, errlen);
        } else if (!strcmp(k, "items") || !strcmp(k, "allOf") || !strcmp(k, "anyOf") || !strcmp(k, "oneOf")) {
            if (!json_is_array(v) || (strcmp(k, "items") && !json_array_size(v)))
                return sd_jschema_err(err, errlen, "at %s/%s: expected an array of schemas", at, k);
            size_t i;
            json_t *sub;
            json_array_foreach(v, i, sub) {
                char idx[32];
                snprintf(idx, sizeof(idx), "%s/%zu", k, i);
                if ((rc = sd_jschema_walk_in(s, sub, at, idx, err, errlen))) break;
            }
        } else if (!strcmp(k, "pattern")) {
            if (!json_is_string(v)) return sd_jschema_err(err, errlen, "at %s/pattern: expected a string", at);
            rc = sd_jschema_add_re(s, json_string_value(v), json_string_length(v), at, err, errlen);
        } else if (!strcmp(k, "$ref")) {
            if (!json_is_string(v) || !sd_jschema_follow(s->root, json_string_value(v)))
                return sd_jschema_err(err, errlen, "at %s: $ref \"%.120s\": the harness follows references inside the schema only "
                                      "(\"#\", \"#/definitions/...\"), and this one leads nowhere there", at[0] ? at : "/",
                                      json_is_string(v) ? json_string_value(v) : "");
        } else if (!strcmp(k, "type")) {
            static const char *const types[] = {"null", "boolean", "object", "array", "number", "integer", "string", NULL};
            json_t *one;
            size_t i;
            json_t *list = json_is_array(v) ? v : NULL;
            for (i = 0; list ? i < json_array_size(list) : i < 1; i++) {
                one = list ? json_array_get(list, i) : v;
                int ok = 0;
                for (int t = 0; types[t] && json_is_string(one) && !ok; t++) ok = !strcmp(json_string_value(one), types[t]);
                if (!ok) return sd_jschema_err(err, errlen, "at %s/type: expected a JSON type's name or a list of them", at);
            }
        }
        if (rc) return rc;
    }
    return 0;
}

sd_jschema_t *sd_jschema_compile_json(json_t *schema, char *err, size_t errlen) {
    sd_jschema_t *s = calloc(1, sizeof(*s));
    if (!s) return NULL;
    s->root = json_incref(schema);
    s->dialect = 7;
    const char *d = json_is_object(schema) ? json_string_value(json_object_get(schema, "$schema")) : NULL;
    if (d && strstr(d, "json-schema.org/draft/2020-12/")) s->dialect = 2020;
    else if (d && strstr(d, "json-schema.org/draft/2019-09/")) s->dialect = 2019;
    else if (d && (strstr(d, "json-schema.org/draft-03/") || strstr(d, "json-schema.org/schema"))) {
        /* draft 3, or "the newest", whichever that is when it is read */
        sd_jschema_err(err, errlen, "$schema \"%.120s\": the harness checks drafts 4, 6, 7, 2019-09 and 2020-12; name one of them", d);
        sd_jschema_free(s);
        return NULL;
    }
    sd_jschema_targets(s, schema);
    int rc = sd_jschema_walk(s, schema, "", err, errlen);
    free(s->targets);
    s->targets = NULL;
    if (rc) {
        sd_jschema_free(s);
        return NULL;
    }
    return s;
}

sd_jschema_t *sd_jschema_compile(const char *text, size_t len, char *err, size_t errlen) {
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_DECODE_ANY, &je);
    if (!root) {
        snprintf(err, errlen, "not JSON: line %d: %s", je.line, je.text);
        return NULL;
    }
    sd_jschema_t *s = sd_jschema_compile_json(root, err, errlen);
    json_decref(root);
    return s;
}

void sd_jschema_free(sd_jschema_t *s) {
    if (!s) return;
    for (size_t i = 0; i < s->nre; i++) sd_ecmare_free(s->re[i].re), free(s->re[i].src);
    free(s->re);
    json_decref(s->root);
    free(s);
}

/* ---- validating ---- */

typedef struct {
    const sd_jschema_t *s;
    char *why;
    size_t whylen;
    int quiet;
    char path[1024];
    size_t plen;
    long steps; /* schemas checked for this value: references that loop through anyOf grow it without end */
    int unjudged; /* a bound ran out: no answer, whatever the branches said */
} sd_jv_t;

/* why = "<path>: <what><fmt...>" */
static void sd_jv_vsay(sd_jv_t *c, const char *what, const char *fmt, va_list ap) {
    int n = snprintf(c->why, c->whylen, "%s: %s", c->plen ? c->path : "/", what);
    if (n >= 0 && (size_t)n < c->whylen) vsnprintf(c->why + n, c->whylen - (size_t)n, fmt, ap);
    sd_jschema_mend(c->why, c->whylen);
}

static int sd_jv_fail(sd_jv_t *c, const char *fmt, ...) {
    if (c->quiet || !c->why || c->why[0]) return 0;
    va_list ap;
    va_start(ap, fmt);
    sd_jv_vsay(c, "", fmt, ap);
    va_end(ap);
    return 0;
}

/* A bound that ran out (checks, depth, a pattern's match): the value can
 * be judged neither valid nor invalid. The flag sticks, so that a branch's
 * false never turns into a pass through not, anyOf, oneOf or if; why says
 * the bound whatever was written there before. */
static int sd_jv_limit(sd_jv_t *c, const char *fmt, ...) {
    if (c->unjudged) return 0;
    c->unjudged = 1;
    if (!c->why || !c->whylen) return 0;
    va_list ap;
    va_start(ap, fmt);
    sd_jv_vsay(c, "could not judge: ", fmt, ap);
    va_end(ap);
    return 0;
}

/* JSON equality as the schema means it: 1 and 1.0 are one number. */
static int sd_jschema_equal(json_t *a, json_t *b) {
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b)) return json_integer_value(a) == json_integer_value(b);
        return json_number_value(a) == json_number_value(b);
    }
    if (json_typeof(a) != json_typeof(b)) return 0;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b)) return 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!sd_jschema_equal(json_array_get(a, i), json_array_get(b, i))) return 0;
        return 1;
    }
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b)) return 0;
        const char *k;
        json_t *v;
        json_object_foreach(a, k, v) {
            json_t *w = json_object_get(b, k);
            if (!w || !sd_jschema_equal(v, w)) return 0;
        }
        return 1;
    }
    return json_equal(a, b);
}

static const char *sd_jschema_typename(json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    default: return "null";
    }
}

static int sd_jschema_type_is(const char *t, json_t *v) {
    if (!strcmp(t, "integer")) {
        double d = json_is_real(v) ? json_real_value(v) : 0.5;
        return json_is_integer(v) || (isfinite(d) && floor(d) == d);
    }
    if (!strcmp(t, "number")) return json_is_number(v);
    if (!strcmp(t, "boolean")) return json_is_boolean(v);
    return !strcmp(t, sd_jschema_typename(v));
}

static int sd_jv(sd_jv_t *c, json_t *sch, json_t *v, int depth);

/* v at the path's next step (a name, or an array's index when name is NULL). */
static int sd_jv_at(sd_jv_t *c, json_t *sch, json_t *v, const char *name, size_t index, int depth) {
    size_t mark = c->plen;
    int n = name ? snprintf(c->path + mark, sizeof(c->path) - mark, "/%s", name)
                 : snprintf(c->path + mark, sizeof(c->path) - mark, "/%zu", index);
    c->plen = n > 0 && mark + (size_t)n < sizeof(c->path) ? mark + (size_t)n : sizeof(c->path) - 1;
    int ok = sd_jv(c, sch, v, depth);
    c->plen = mark;
    c->path[mark] = 0;
    return ok;
}

static int sd_jv_quiet(sd_jv_t *c, json_t *sch, json_t *v, int depth) {
    c->quiet++;
    int ok = sd_jv(c, sch, v, depth);
    c->quiet--;
    return ok;
}

/* 1 when the compiled pattern (src, n bytes) matches s (len bytes), 0
 * when not, -1 (c->unjudged set) when a bound of the match ran out. */
static int sd_jv_match(sd_jv_t *c, const char *src, size_t n, const char *s, size_t len) {
    const sd_ecmare_t *re = sd_jschema_re(c->s, src, n);
    char why[200];
    int m = re ? sd_ecmare_match(re, s, len, why, sizeof(why)) : -1;
    if (m < 0) sd_jv_limit(c, "pattern \"%.80s\": %s", src, re ? why : "not compiled");
    return m;
}

static size_t sd_jschema_codepoints(const char *s, size_t n) {
    size_t cp = 0;
    for (size_t i = 0; i < n; i++) cp += ((unsigned char)s[i] & 0xc0) != 0x80;
    return cp;
}

/* |v| as digits and a power of ten, |v| = *d * 10^*e with no trailing
 * zero in *d, and v as text (text: 40 bytes): an integer's own digits; a
 * real's shortest decimal that reads back as the same double, which is the
 * number as the JSON wrote it whenever it had 15 significant digits or
 * fewer (more: the double jansson kept is what is judged). */
static void sd_jschema_decimal(json_t *v, uint64_t *d, int *e, char *text) {
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        *d = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;
        *e = 0;
        snprintf(text, 40, "%" JSON_INTEGER_FORMAT, i);
    } else {
        double x = json_real_value(v);
        char buf[40];
        int p = 1;
        for (; p < 17; p++) {
            snprintf(buf, sizeof(buf), "%.*e", p - 1, fabs(x));
            if (strtod(buf, NULL) == fabs(x)) break;
        }
        snprintf(buf, sizeof(buf), "%.*e", p - 1, fabs(x));
        snprintf(text, 40, "%.*g", p, x);
        uint64_t m = 0;
        int after = 0, point = 0;
        const char *q = buf;
        for (; *q && *q != 'e'; q++) {
            if (*q == '.') point = 1;
            else m = m * 10 + (uint64_t)(*q - '0'), after += point;
        }
        *d = m;
        *e = (*q ? atoi(q + 1) : 0) - after;
    }
    while (*d && *d % 10 == 0) *d /= 10, (*e)++;
}

/* Whether xd * 10^xe is an integer multiple of md * 10^me (md > 0),
 * exactly: for xe >= me, whether md divides xd * 10^(xe - me), worked
 * out modulo md a power of ten at a time; else whether md * 10^(me - xe)
 * divides xd. */
static int sd_jschema_multiple(uint64_t xd, int xe, uint64_t md, int me) {
    if (!xd) return 1;
    if (!md) return 0;
    if (xe >= me) {
        unsigned __int128 r = xd % md;
        for (int k = xe - me; k > 0 && r; k--) r = r * 10 % md;
        return r == 0;
    }
    unsigned __int128 q = md;
    for (int k = me - xe; k > 0; k--)
        if ((q *= 10) > xd) return 0;
    return xd % q == 0;
}

static int sd_jv_number(sd_jv_t *c, json_t *sch, json_t *v) {
    double x = json_number_value(v);
    json_t *b;
    int draft4_exmin = json_is_true(json_object_get(sch, "exclusiveMinimum"));
    int draft4_exmax = json_is_true(json_object_get(sch, "exclusiveMaximum"));
    if ((b = json_object_get(sch, "minimum")) && json_is_number(b) &&
        (draft4_exmin ? x <= json_number_value(b) : x < json_number_value(b)))
        return sd_jv_fail(c, "minimum: %g is below %g", x, json_number_value(b));
    if ((b = json_object_get(sch, "maximum")) && json_is_number(b) &&
        (draft4_exmax ? x >= json_number_value(b) : x > json_number_value(b)))
        return sd_jv_fail(c, "maximum: %g is above %g", x, json_number_value(b));
    if ((b = json_object_get(sch, "exclusiveMinimum")) && json_is_number(b) && x <= json_number_value(b))
        return sd_jv_fail(c, "exclusiveMinimum: %g is not above %g", x, json_number_value(b));
    if ((b = json_object_get(sch, "exclusiveMaximum")) && json_is_number(b) && x >= json_number_value(b))
        return sd_jv_fail(c, "exclusiveMaximum: %g is not below %g", x, json_number_value(b));
    if ((b = json_object_get(sch, "multipleOf")) && json_is_number(b) && json_number_value(b) > 0) {
        uint64_t xd, md;
        int xe, me;
        char xt[40], mt[40];
        sd_jschema_decimal(v, &xd, &xe, xt);
        sd_jschema_decimal(b, &md, &me, mt);
        if (!sd_jschema_multiple(xd, xe, md, me)) return sd_jv_fail(c, "multipleOf: %s is no multiple of %s", xt, mt);
    }
    return 1;
}

static int sd_jv_string(sd_jv_t *c, json_t *sch, json_t *v) {
    size_t cp = sd_jschema_codepoints(json_string_value(v), json_string_length(v));
    json_t *b;
    if ((b = json_object_get(sch, "minLength")) && json_is_number(b) && (double)cp < json_number_value(b))
        return sd_jv_fail(c, "minLength: %zu characters, fewer than %g", cp, json_number_value(b));
    if ((b = json_object_get(sch, "maxLength")) && json_is_number(b) && (double)cp > json_number_value(b))
        return sd_jv_fail(c, "maxLength: %zu characters, more than %g", cp, json_number_value(b));
    if ((b = json_object_get(sch, "pattern")) && json_is_string(b)) {
        int m = sd_jv_match(c, json_string_value(b), json_string_length(b), json_string_value(v), json_string_length(v));
        if (m < 0) return 0;
        if (!m) return sd_jv_fail(c, "pattern: the value does not match \"%.80s\"", json_string_value(b));
    }
    /* the one format checked: a pattern is what the schema's own patterns are */
    if ((b = json_object_get(sch, "format")) && json_is_string(b) && !strcmp(json_string_value(b), "regex")) {
        char why[256];
        sd_ecmare_refusal_t kind;
        sd_ecmare_t *re = sd_ecmare_compile(json_string_value(v), json_string_length(v), &kind, why, sizeof(why));
        sd_ecmare_free(re);
        if (!re && kind == SD_ECMARE_NOT_ECMA) return sd_jv_fail(c, "format: not an ECMA-262 regular expression: %s", why);
        if (!re) return sd_jv_limit(c, "format regex: %s", why);
    }
    return 1;
}

static int sd_jv_object(sd_jv_t *c, json_t *sch, json_t *v, int depth) {
    json_t *props = json_object_get(sch, "properties"), *pats = json_object_get(sch, "patternProperties");
    json_t *addl = json_object_get(sch, "additionalProperties"), *b;
    const char *k, *p;
    json_t *val, *sub;
    json_object_foreach(v, k, val) {
        int matched = 0;
        if ((sub = json_object_get(props, k))) {
            matched = 1;
            if (!sd_jv_at(c, sub, val, k, 0, depth)) return 0;
        }
        json_object_foreach(pats, p, sub) {
            int m = sd_jv_match(c, p, strlen(p), k, strlen(k));
            if (m < 0) return 0;
            if (m) {
                matched = 1;
                if (!sd_jv_at(c, sub, val, k, 0, depth)) return 0;
            }
        }
        if (!matched && addl) {
            if (json_is_false(addl)) return sd_jv_fail(c, "additionalProperties: \"%.80s\" is not allowed", k);
            if (!sd_jv_at(c, addl, val, k, 0, depth)) return 0;
        }
        if ((sub = json_object_get(sch, "propertyNames"))) {
            json_t *name = json_string(k);
            int ok = sd_jv_at(c, sub, name, k, 0, depth);
            json_decref(name);
            if (!ok) return 0;
        }
        json_t *dep = json_object_get(json_object_get(sch, "dependentRequired"), k);
        size_t i;
        if (dep) json_array_foreach(dep, i, sub) if (!json_object_get(v, json_string_value(sub)))
            return sd_jv_fail(c, "dependentRequired: \"%.80s\" needs \"%.80s\"", k, json_string_value(sub));
        if ((dep = json_object_get(json_object_get(sch, "dependentSchemas"), k)) && !sd_jv(c, dep, v, depth)) return 0;
        dep = json_object_get(json_object_get(sch, "dependencies"), k);
        if (json_is_array(dep)) {
            size_t i;
            json_array_foreach(dep, i, sub) if (json_is_string(sub) && !json_object_get(v, json_string_value(sub)))
                return sd_jv_fail(c, "dependencies: \"%.80s\" needs \"%.80s\"", k, json_string_value(sub));
        } else if (dep && !sd_jv(c, dep, v, depth)) {
            return 0;
        }
    }
    if ((b = json_object_get(sch, "required"))) {
        size_t i;
        json_array_foreach(b, i, sub) if (json_is_string(sub) && !json_object_get(v, json_string_value(sub)))
            return sd_jv_fail(c, "required: \"%.80s\" is missing", json_string_value(sub));
    }
    size_t n = json_object_size(v);
    if ((b = json_object_get(sch, "minProperties")) && json_is_number(b) && (double)n < json_number_value(b))
        return sd_jv_fail(c, "minProperties: %zu properties, fewer than %g", n, json_number_value(b));
    if ((b = json_object_get(sch, "maxProperties")) && json_is_number(b) && (double)n > json_number_value(b))
        return sd_jv_fail(c, "maxProperties: %zu properties, more than %g", n, json_number_value(b));
    return 1;
}

static int sd_jv_array(sd_jv_t *c, json_t *sch, json_t *v, int depth) {
    json_t *items = json_object_get(sch, "items"), *addl = json_object_get(sch, "additionalItems"), *b, *el;
    size_t n = json_array_size(v), i;
    json_array_foreach(v, i, el) {
        json_t *sub = json_is_array(items) ? (i < json_array_size(items) ? json_array_get(items, i) : addl) : items;
        if (sub && !sd_jv_at(c, sub, el, NULL, i, depth)) return 0;
    }
    if ((b = json_object_get(sch, "contains"))) {
        int any = 0;
        json_array_foreach(v, i, el) if (!any) any = sd_jv_quiet(c, b, el, depth);
        if (!any) return sd_jv_fail(c, "contains: no item is valid against it");
    }
    if ((b = json_object_get(sch, "minItems")) && json_is_number(b) && (double)n < json_number_value(b))
        return sd_jv_fail(c, "minItems: %zu items, fewer than %g", n, json_number_value(b));
    if ((b = json_object_get(sch, "maxItems")) && json_is_number(b) && (double)n > json_number_value(b))
        return sd_jv_fail(c, "maxItems: %zu items, more than %g", n, json_number_value(b));
    if (json_is_true(json_object_get(sch, "uniqueItems")))
        for (i = 0; i < n; i++)
            for (size_t j = i + 1; j < n; j++)
                if (sd_jschema_equal(json_array_get(v, i), json_array_get(v, j)))
                    return sd_jv_fail(c, "uniqueItems: items %zu and %zu are equal", i, j);
    return 1;
}

static int sd_jv_combined(sd_jv_t *c, json_t *sch, json_t *v, int depth) {
    json_t *b, *sub;
    size_t i;
    if ((b = json_object_get(sch, "allOf")))
        json_array_foreach(b, i, sub) if (!sd_jv(c, sub, v, depth)) return 0;
    if ((b = json_object_get(sch, "anyOf"))) {
        int any = 0;
        json_array_foreach(b, i, sub) if (!any) any = sd_jv_quiet(c, sub, v, depth);
        if (!any) return sd_jv_fail(c, "anyOf: valid against none of %zu schemas", json_array_size(b));
    }
    if ((b = json_object_get(sch, "oneOf"))) {
        int valid = 0;
        json_array_foreach(b, i, sub) valid += sd_jv_quiet(c, sub, v, depth);
        if (valid != 1) return sd_jv_fail(c, "oneOf: valid against %d of %zu schemas, not exactly one", valid, json_array_size(b));
    }
    if ((b = json_object_get(sch, "not")) && sd_jv_quiet(c, b, v, depth)) return sd_jv_fail(c, "not: valid against the schema it negates");
    if ((b = json_object_get(sch, "if"))) {
        json_t *branch = json_object_get(sch, sd_jv_quiet(c, b, v, depth) ? "then" : "else");
        if (branch && !sd_jv(c, branch, v, depth)) return 0;
    }
    return 1;
}

static int sd_jv(sd_jv_t *c, json_t *sch, json_t *v, int depth) {
    if (json_is_true(sch)) return 1;
    if (json_is_false(sch)) return sd_jv_fail(c, "the schema here is false: no value is valid");
    if (c->unjudged) return 0;
    if (depth > 256) return sd_jv_limit(c, "$ref: references nested more than 256 deep");
    if (++c->steps > 1000000) return sd_jv_limit(c, "the schema asks more than 1,000,000 checks of one value (references that loop)");
    json_t *b;
    /* draft 7: beside a $ref, the other keywords are not read; from
     * 2019-09 on they are, as well as the schema it points at */
    if ((b = json_object_get(sch, "$ref"))) {
        if (!sd_jv(c, sd_jschema_follow(c->s->root, json_string_value(b)), v, depth + 1)) return 0;
        if (c->s->dialect == 7) return 1;
    }
    if ((b = json_object_get(sch, "type"))) {
        int ok = 0;
        if (json_is_array(b)) {
            size_t i;
            json_t *t;
            json_array_foreach(b, i, t) ok |= sd_jschema_type_is(json_string_value(t), v);
        } else {
            ok = sd_jschema_type_is(json_string_value(b), v);
        }
        if (!ok) {
            char want[128];
            if (json_is_string(b)) snprintf(want, sizeof(want), "%s", json_string_value(b));
            else snprintf(want, sizeof(want), "one of %zu types", json_array_size(b));
            return sd_jv_fail(c, "type: expected %s, found %s", want, sd_jschema_typename(v));
        }
    }
    if ((b = json_object_get(sch, "enum"))) {
        int any = 0;
        size_t i;
        json_t *e;
        json_array_foreach(b, i, e) any |= sd_jschema_equal(e, v);
        if (!any) return sd_jv_fail(c, "enum: not one of its %zu values", json_array_size(b));
    }
    if ((b = json_object_get(sch, "const")) && !sd_jschema_equal(b, v)) return sd_jv_fail(c, "const: not the value it names");
    if (json_is_number(v) && !sd_jv_number(c, sch, v)) return 0;
    if (json_is_string(v) && !sd_jv_string(c, sch, v)) return 0;
    if (json_is_object(v) && !sd_jv_object(c, sch, v, depth)) return 0;
    if (json_is_array(v) && !sd_jv_array(c, sch, v, depth)) return 0;
    return sd_jv_combined(c, sch, v, depth);
}

int sd_jschema_valid(const sd_jschema_t *s, json_t *v, char *why, size_t whylen) {
    sd_jv_t c = {.s = s, .why = why, .whylen = whylen};
    if (why && whylen) why[0] = 0;
    int ok = sd_jv(&c, s->root, v, 0);
    return c.unjudged ? SD_JSCHEMA_UNJUDGED : ok ? SD_JSCHEMA_VALID : SD_JSCHEMA_INVALID;
}
