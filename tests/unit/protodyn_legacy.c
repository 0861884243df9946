/* protodyn_legacy.c - the hand-written Protobuf reader the harness used
 * before harness/format/protodyn.cpp (libprotobuf), kept only for
 * test_protodyn.c, which reads the existing corpus with both side by side
 * (issue 76: "the existing corpus read by both readers side by side before
 * the old one goes") and can be pointed at it to show each defect the new
 * tests name failing here. Nothing in the harness links it. Its defects
 * are left as they were: they are what the tests show.
 *
 * Protobuf schema text read at run time, and records decoded by it (see
 * protodyn_legacy.h). The wire format is Protobuf's own: each field a
 * varint tag (number << 3 | wire type), then a varint, 8 bytes, a length
 * and that many bytes, or 4 bytes. */
#include "protodyn_legacy.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    PT_DOUBLE, PT_FLOAT, PT_INT32, PT_INT64, PT_UINT32, PT_UINT64, PT_SINT32, PT_SINT64, PT_FIXED32, PT_FIXED64,
    PT_SFIXED32, PT_SFIXED64, PT_BOOL, PT_STRING, PT_BYTES, PT_NAMED
} sd_pt_t;

static const char *const sd_pt_names[] = {"double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32",
                                          "fixed64", "sfixed32", "sfixed64", "bool", "string", "bytes", NULL};

typedef struct {
    char *name, *type_name;
    int number, type, repeated, optional;
    int msg, en; /* PT_NAMED: the message or enum it names (-1: neither) */
} sd_pf_t;

typedef struct {
    char *name; /* dotted within the file: Outer.Inner */
    sd_pf_t *f;
    int nf;
    int *nested, nnested;
} sd_pm_t;

typedef struct {
    char *name;
    char **sym;
    int *val, n;
} sd_pe_t;

struct sd_protodyn_legacy_s {
    int proto3;
    char *package;
    sd_pm_t *m;
    int nm;
    sd_pe_t *e;
    int ne;
    int *top, ntop; /* the file's messages in order: index 0 is the first */
};

static int sd_pr_fail(char *why, size_t whylen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- the text ---- */

typedef struct {
    const char *s;
    size_t at;
    int line;
    char tok[256];
    char *err;
    size_t errlen;
    int failed;
} sd_px_t;

static int sd_px_fail(sd_px_t *x, const char *fmt, ...) {
    if (x->failed) return -1;
    x->failed = 1;
    int n = snprintf(x->err, x->errlen, "line %d: ", x->line);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < x->errlen) vsnprintf(x->err + n, x->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* The next token into x->tok ("" at the end): a word, a number, a quoted
 * string (its quotes kept), or one punctuation character. */
static const char *sd_px_next(sd_px_t *x) {
    const char *s = x->s;
    for (;;) {
        while (s[x->at] && isspace((unsigned char)s[x->at])) x->line += s[x->at++] == '\n';
        if (s[x->at] == '/' && s[x->at + 1] == '/') {
            while (s[x->at] && s[x->at] != '\n') x->at++;
        } else if (s[x->at] == '/' && s[x->at + 1] == '*') {
            x->at += 2;
            while (s[x->at] && !(s[x->at] == '*' && s[x->at + 1] == '/')) x->line += s[x->at++] == '\n';
            if (s[x->at]) x->at += 2;
        } else {
            break;
        }
    }
    size_t n = 0;
    char c = s[x->at];
    if (!c) {
        x->tok[0] = 0;
    } else if (isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-' || c == '+') {
        while (n + 1 < sizeof(x->tok) && (isalnum((unsigned char)s[x->at]) || (s[x->at] && strchr("_.-+", s[x->at])))) x->tok[n++] = s[x->at++];
        x->tok[n] = 0;
    } else if (c == '"' || c == '\'') {
        x->tok[n++] = s[x->at++];
        while (s[x->at] && s[x->at] != c) {
            if (s[x->at] == '\\' && s[x->at + 1]) x->at++;
            if (n + 2 < sizeof(x->tok)) x->tok[n++] = s[x->at];
            x->at++;
        }
        if (s[x->at]) x->at++;
        x->tok[n++] = c;
        x->tok[n] = 0;
    } else {
        x->tok[0] = c, x->tok[1] = 0;
        x->at++;
    }
    return x->tok;
}

static int sd_px_expect(sd_px_t *x, const char *want) {
    if (strcmp(sd_px_next(x), want)) return sd_px_fail(x, "expected \"%s\", found \"%s\"", want, x->tok[0] ? x->tok : "the end");
    return 0;
}

/* Past the next `;` (an option or a reserved line: read, not used). */
static int sd_px_skip_statement(sd_px_t *x) {
    while (sd_px_next(x)[0] && strcmp(x->tok, ";"))
        ;
    return x->tok[0] ? 0 : sd_px_fail(x, "a statement without its \";\"");
}

static char *sd_px_join(const char *prefix, const char *name) {
    size_t a = prefix ? strlen(prefix) : 0, b = strlen(name);
    char *s = malloc(a + b + 2);
    if (a) memcpy(s, prefix, a), s[a] = '.';
    memcpy(s + (a ? a + 1 : 0), name, b + 1);
    return s;
}

static int sd_px_enum(sd_px_t *x, sd_protodyn_legacy_t *p, const char *prefix) {
    sd_px_next(x);
    p->e = realloc(p->e, sizeof(*p->e) * (size_t)(p->ne + 1));
    sd_pe_t *e = &p->e[p->ne++];
    memset(e, 0, sizeof(*e));
    e->name = sd_px_join(prefix, x->tok);
    if (sd_px_expect(x, "{")) return -1;
    while (strcmp(sd_px_next(x), "}")) {
        if (!x->tok[0]) return sd_px_fail(x, "enum %s: no closing \"}\"", e->name);
        if (!strcmp(x->tok, "option") || !strcmp(x->tok, "reserved")) {
            if (sd_px_skip_statement(x)) return -1;
            continue;
        }
        if (!strcmp(x->tok, ";")) continue;
        char sym[256];
        snprintf(sym, sizeof(sym), "%s", x->tok);
        if (sd_px_expect(x, "=")) return -1;
        int v = atoi(sd_px_next(x));
        e->sym = realloc(e->sym, sizeof(char *) * (size_t)(e->n + 1));
        e->val = realloc(e->val, sizeof(int) * (size_t)(e->n + 1));
        e->sym[e->n] = strdup(sym);
        e->val[e->n++] = v;
        if (sd_px_skip_statement(x)) return -1; /* [options] ; */
    }
    return 0;
}

static int sd_px_message(sd_px_t *x, sd_protodyn_legacy_t *p, const char *prefix, int parent);

/* One field line, its label already read into label (or NULL). */
static int sd_px_field(sd_px_t *x, sd_protodyn_legacy_t *p, int mi, const char *label, int in_oneof) {
    char type[256], name[256];
    snprintf(type, sizeof(type), "%s", x->tok);
    if (!strcmp(type, "map") || !strcmp(type, "group"))
        return sd_px_fail(x, "message %s: a %s field is not read here", p->m[mi].name, type);
    snprintf(name, sizeof(name), "%s", sd_px_next(x));
    if (sd_px_expect(x, "=")) return -1;
    const char *num = sd_px_next(x);
    char *end;
    long number = strtol(num, &end, 0);
    if (*end || number < 1 || number > 536870911) return sd_px_fail(x, "field %s: expected a field number, found \"%s\"", name, num);
    if (sd_px_skip_statement(x)) return -1;
    sd_pm_t *m = &p->m[mi];
    m->f = realloc(m->f, sizeof(*m->f) * (size_t)(m->nf + 1));
    sd_pf_t *f = &m->f[m->nf++];
    memset(f, 0, sizeof(*f));
    f->name = strdup(name);
    f->number = (int)number;
    f->repeated = label && !strcmp(label, "repeated");
    f->optional = in_oneof || (label && (!strcmp(label, "optional") || !strcmp(label, "required")));
    f->type = PT_NAMED;
    f->msg = f->en = -1;
    for (int t = 0; sd_pt_names[t]; t++)
        if (!strcmp(type, sd_pt_names[t])) f->type = t;
    if (f->type == PT_NAMED) f->type_name = strdup(type);
    return 0;
}

static int sd_px_body(sd_px_t *x, sd_protodyn_legacy_t *p, int mi, int in_oneof) {
    for (;;) {
        const char *t = sd_px_next(x);
        if (!strcmp(t, "}")) return 0;
        if (!t[0]) return sd_px_fail(x, "message %s: no closing \"}\"", p->m[mi].name);
        if (!strcmp(t, ";")) continue;
        if (!strcmp(t, "option") || !strcmp(t, "reserved") || !strcmp(t, "extensions")) {
            if (sd_px_skip_statement(x)) return -1;
        } else if (!strcmp(t, "message") && !in_oneof) {
            char *scope = strdup(p->m[mi].name);
            int rc = sd_px_message(x, p, scope, mi);
            free(scope);
            if (rc) return -1;
        } else if (!strcmp(t, "enum") && !in_oneof) {
            char *scope = strdup(p->m[mi].name);
            int rc = sd_px_enum(x, p, scope);
            free(scope);
            if (rc) return -1;
        } else if (!strcmp(t, "oneof") && !in_oneof) {
            sd_px_next(x);
            if (sd_px_expect(x, "{") || sd_px_body(x, p, mi, 1)) return -1;
        } else if (!strcmp(t, "extend")) {
            return sd_px_fail(x, "message %s: extend is not read here", p->m[mi].name);
        } else {
            char label[32] = "";
            if (!strcmp(t, "optional") || !strcmp(t, "repeated") || !strcmp(t, "required")) {
                snprintf(label, sizeof(label), "%s", t);
                sd_px_next(x);
            }
            if (sd_px_field(x, p, mi, label[0] ? label : NULL, in_oneof)) return -1;
        }
    }
}

static int sd_px_message(sd_px_t *x, sd_protodyn_legacy_t *p, const char *prefix, int parent) {
    sd_px_next(x);
    if (!x->tok[0] || strchr("{};=", x->tok[0])) return sd_px_fail(x, "message: expected its name, found \"%s\"", x->tok);
    p->m = realloc(p->m, sizeof(*p->m) * (size_t)(p->nm + 1));
    int mi = p->nm++;
    memset(&p->m[mi], 0, sizeof(p->m[mi]));
    p->m[mi].name = sd_px_join(prefix, x->tok);
    if (parent >= 0) {
        sd_pm_t *pm = &p->m[parent];
        pm->nested = realloc(pm->nested, sizeof(int) * (size_t)(pm->nnested + 1));
        pm->nested[pm->nnested++] = mi;
    } else {
        p->top = realloc(p->top, sizeof(int) * (size_t)(p->ntop + 1));
        p->top[p->ntop++] = mi;
    }
    if (sd_px_expect(x, "{")) return -1;
    return sd_px_body(x, p, mi, 0);
}

/* A field's TYPE among the file's messages and enums: the innermost scope
 * first, as protoc looks names up; a leading dot or the package is the
 * file's root. */
static int sd_px_resolve(sd_protodyn_legacy_t *p, sd_pm_t *m, sd_pf_t *f) {
    const char *t = f->type_name;
    if (t[0] == '.') t++;
    size_t pl = p->package ? strlen(p->package) : 0;
    if (pl && !strncmp(t, p->package, pl) && t[pl] == '.') t += pl + 1;
    char scope[512];
    snprintf(scope, sizeof(scope), "%s", m->name);
    for (;;) {
        char *full = f->type_name[0] == '.' ? strdup(t) : sd_px_join(scope[0] ? scope : NULL, t);
        for (int i = 0; i < p->nm && f->msg < 0; i++)
            if (!strcmp(p->m[i].name, full)) f->msg = i;
        for (int i = 0; i < p->ne && f->en < 0 && f->msg < 0; i++)
            if (!strcmp(p->e[i].name, full)) f->en = i;
        free(full);
        if (f->msg >= 0 || f->en >= 0) return 0;
        if (!scope[0] || f->type_name[0] == '.') return -1;
        char *dot = strrchr(scope, '.');
        if (dot) *dot = 0;
        else scope[0] = 0;
    }
}

void sd_protodyn_legacy_free(sd_protodyn_legacy_t *p) {
    if (!p) return;
    for (int i = 0; i < p->nm; i++) {
        for (int k = 0; k < p->m[i].nf; k++) free(p->m[i].f[k].name), free(p->m[i].f[k].type_name);
        free(p->m[i].f), free(p->m[i].nested), free(p->m[i].name);
    }
    for (int i = 0; i < p->ne; i++) {
        for (int k = 0; k < p->e[i].n; k++) free(p->e[i].sym[k]);
        free(p->e[i].sym), free(p->e[i].val), free(p->e[i].name);
    }
    free(p->m), free(p->e), free(p->top), free(p->package);
    free(p);
}

sd_protodyn_legacy_t *sd_protodyn_legacy_parse(const char *text, char *err, size_t errlen) {
    sd_protodyn_legacy_t *p = calloc(1, sizeof(*p));
    sd_px_t x = {.s = text, .line = 1, .err = err, .errlen = errlen};
    int rc = 0;
    while (!rc && sd_px_next(&x)[0]) {
        if (!strcmp(x.tok, ";")) continue;
        if (!strcmp(x.tok, "syntax")) {
            if (sd_px_expect(&x, "=")) rc = -1;
            else p->proto3 = !strcmp(sd_px_next(&x), "\"proto3\"") || !strcmp(x.tok, "'proto3'");
            if (!rc) rc = sd_px_skip_statement(&x);
        } else if (!strcmp(x.tok, "package")) {
            free(p->package);
            p->package = strdup(sd_px_next(&x));
            rc = sd_px_skip_statement(&x);
        } else if (!strcmp(x.tok, "option")) {
            rc = sd_px_skip_statement(&x);
        } else if (!strcmp(x.tok, "message")) {
            rc = sd_px_message(&x, p, NULL, -1);
        } else if (!strcmp(x.tok, "enum")) {
            rc = sd_px_enum(&x, p, NULL);
        } else {
            rc = sd_px_fail(&x, "\"%s\" is not read here (messages, enums, options and the syntax and package lines are)", x.tok);
        }
    }
    for (int i = 0; !rc && i < p->nm; i++)
        for (int k = 0; !rc && k < p->m[i].nf; k++)
            if (p->m[i].f[k].type == PT_NAMED && sd_px_resolve(p, &p->m[i], &p->m[i].f[k]))
                rc = sd_pr_fail(err, errlen, "message %s, field %s: type %s is not in the schema (imports are not read)", p->m[i].name,
                                p->m[i].f[k].name, p->m[i].f[k].type_name);
    if (!rc && !p->ntop) rc = sd_pr_fail(err, errlen, "no message in the schema");
    if (rc) {
        sd_protodyn_legacy_free(p);
        return NULL;
    }
    return p;
}

/* ---- records ---- */

typedef struct {
    const uint8_t *b, *end;
} sd_pr_t;

static int sd_pr_varint(sd_pr_t *r, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64 && r->b < r->end; shift += 7) {
        uint8_t c = *r->b++;
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) return 0;
    }
    return -1;
}

static uint64_t sd_pr_le(const uint8_t *b, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | b[i];
    return v;
}

static json_t *sd_pr_base64(const uint8_t *b, size_t n) {
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *o = malloc(4 * ((n + 2) / 3) + 1), *w = o;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)b[i] << 16 | (i + 1 < n ? (uint32_t)b[i + 1] << 8 : 0) | (i + 2 < n ? b[i + 2] : 0);
        *w++ = a[v >> 18 & 63], *w++ = a[v >> 12 & 63];
        *w++ = i + 1 < n ? a[v >> 6 & 63] : '=';
        *w++ = i + 2 < n ? a[v & 63] : '=';
    }
    *w = 0;
    json_t *j = json_string(o);
    free(o);
    return j;
}

static json_t *sd_pr_message(const sd_protodyn_legacy_t *p, int mi, const uint8_t *b, size_t n, int depth, char *why, size_t whylen);

/* A scalar of the wire type the field's type is written with. */
static json_t *sd_pr_scalar(const sd_protodyn_legacy_t *p, const sd_pf_t *f, uint64_t v) {
    switch (f->type) {
    case PT_INT32: return json_integer((int32_t)v);
    case PT_INT64: case PT_UINT64: case PT_FIXED64: case PT_SFIXED64: return json_integer((json_int_t)v);
    case PT_UINT32: case PT_FIXED32: return json_integer((uint32_t)v);
    case PT_SFIXED32: return json_integer((int32_t)(uint32_t)v);
    case PT_SINT32: case PT_SINT64: return json_integer((json_int_t)(v >> 1) ^ -(json_int_t)(v & 1));
    case PT_BOOL: return json_boolean(v != 0);
    case PT_DOUBLE: { double d; memcpy(&d, &v, 8); return json_real(d); }
    case PT_FLOAT: { uint32_t u = (uint32_t)v; float fl; memcpy(&fl, &u, 4); return json_real(fl); }
    default: /* an enum: its symbol, or the number it does not name */
        for (int i = 0; f->en >= 0 && i < p->e[f->en].n; i++)
            if (p->e[f->en].val[i] == (int)v) return json_string(p->e[f->en].sym[i]);
        return json_integer((int32_t)v);
    }
}

/* The wire type a field's type is written with (2 for packed repeated scalars). */
static int sd_pr_wiretype(const sd_pf_t *f) {
    switch (f->type) {
    case PT_DOUBLE: case PT_FIXED64: case PT_SFIXED64: return 1;
    case PT_FLOAT: case PT_FIXED32: case PT_SFIXED32: return 5;
    case PT_STRING: case PT_BYTES: return 2;
    case PT_NAMED: return f->msg >= 0 ? 2 : 0;
    default: return 0;
    }
}

static void sd_pr_put(json_t *o, const sd_pf_t *f, json_t *v) {
    if (!f->repeated) {
        json_object_set_new(o, f->name, v);
        return;
    }
    json_t *a = json_object_get(o, f->name);
    if (!a) json_object_set_new(o, f->name, a = json_array());
    json_array_append_new(a, v);
}

static json_t *sd_pr_message(const sd_protodyn_legacy_t *p, int mi, const uint8_t *b, size_t n, int depth, char *why, size_t whylen) {
    const sd_pm_t *m = &p->m[mi];
    if (depth > 64) return sd_pr_fail(why, whylen, "%s: messages nested more than 64 deep", m->name), NULL;
    json_t *o = json_object();
    sd_pr_t r = {b, b + n};
    while (r.b < r.end) {
        uint64_t tag, v = 0, len = 0;
        if (sd_pr_varint(&r, &tag) || !(tag >> 3)) goto bad;
        int wt = (int)(tag & 7), num = (int)(tag >> 3);
        const sd_pf_t *f = NULL;
        for (int i = 0; i < m->nf && !f; i++)
            if (m->f[i].number == num) f = &m->f[i];
        const uint8_t *data = NULL;
        switch (wt) {
        case 0: if (sd_pr_varint(&r, &v)) goto bad; break;
        case 1: if (r.end - r.b < 8) goto bad; v = sd_pr_le(r.b, 8); r.b += 8; break;
        case 5: if (r.end - r.b < 4) goto bad; v = sd_pr_le(r.b, 4); r.b += 4; break;
        case 2:
            if (sd_pr_varint(&r, &len) || len > (uint64_t)(r.end - r.b)) goto bad;
            data = r.b;
            r.b += len;
            break;
        default: goto bad; /* groups (3, 4) and what is no wire type */
        }
        if (!f) continue; /* a field of a newer schema: skipped, as protobuf does */
        int want = sd_pr_wiretype(f);
        if (wt == 2 && want != 2 && f->repeated) { /* packed */
            sd_pr_t q = {data, data + len};
            while (q.b < q.end) {
                uint64_t e = 0;
                if (want == 0 ? sd_pr_varint(&q, &e) : q.end - q.b < (want == 1 ? 8 : 4)) goto bad;
                if (want) e = sd_pr_le(q.b, want == 1 ? 8 : 4), q.b += want == 1 ? 8 : 4;
                sd_pr_put(o, f, sd_pr_scalar(p, f, e));
            }
            continue;
        }
        if (wt != want) {
            json_decref(o);
            return sd_pr_fail(why, whylen, "%s.%s: wire type %d where its type is written with %d", m->name, f->name, wt, want), NULL;
        }
        json_t *val;
        if (wt != 2) {
            val = sd_pr_scalar(p, f, v);
        } else if (f->type == PT_STRING) {
            if (!(val = json_stringn((const char *)data, len))) {
                json_decref(o);
                return sd_pr_fail(why, whylen, "%s.%s: a string that is not UTF-8", m->name, f->name), NULL;
            }
        } else if (f->type == PT_BYTES) {
            val = sd_pr_base64(data, len);
        } else if (!(val = sd_pr_message(p, f->msg, data, len, depth + 1, why, whylen))) {
            json_decref(o);
            return NULL;
        }
        sd_pr_put(o, f, val);
    }
    /* proto3: what the record leaves out is its default */
    for (int i = 0; i < m->nf; i++) {
        const sd_pf_t *f = &m->f[i];
        if (json_object_get(o, f->name)) continue;
        if (f->repeated) json_object_set_new(o, f->name, json_array());
        else if (!p->proto3 || f->optional || f->msg >= 0) continue;
        else if (f->type == PT_STRING || f->type == PT_BYTES) json_object_set_new(o, f->name, json_string(""));
        else if (f->type == PT_BOOL) json_object_set_new(o, f->name, json_false());
        else if (f->type == PT_DOUBLE || f->type == PT_FLOAT) json_object_set_new(o, f->name, json_real(0));
        else json_object_set_new(o, f->name, sd_pr_scalar(p, f, 0));
    }
    return o;
bad:
    json_decref(o);
    sd_pr_fail(why, whylen, "%s: a record cut short or not Protobuf (at byte %zu of %zu)", m->name, (size_t)(r.b - b), n);
    return NULL;
}

int sd_protodyn_legacy_decode(const sd_protodyn_legacy_t *p, const uint8_t *b, size_t n, json_t **out, char *why, size_t whylen) {
    sd_pr_t r = {b, b + n};
    uint64_t count;
    if (sd_pr_varint(&r, &count)) return sd_pr_fail(why, whylen, "no message indexes");
    int64_t cnt = (int64_t)(count >> 1) ^ -(int64_t)(count & 1);
    if (cnt < 0 || cnt > 64) return sd_pr_fail(why, whylen, "message indexes: a count of %lld", (long long)cnt);
    int mi = p->top[0];
    for (int64_t i = 0; i < cnt; i++) {
        uint64_t z;
        if (sd_pr_varint(&r, &z)) return sd_pr_fail(why, whylen, "message indexes cut short");
        int64_t idx = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
        const int *list = i ? p->m[mi].nested : p->top;
        int nl = i ? p->m[mi].nnested : p->ntop;
        if (idx < 0 || idx >= nl) return sd_pr_fail(why, whylen, "message index %lld: the schema has %d there", (long long)idx, nl);
        mi = list[idx];
    }
    *out = sd_pr_message(p, mi, r.b, (size_t)(r.end - r.b), 0, why, whylen);
    return *out ? 0 : -1;
}

/* ---- encoding ---- */

typedef struct {
    uint8_t *b;
    size_t len, cap;
} sd_pw_t;

static void sd_pw_put(sd_pw_t *w, const void *p, size_t n) {
    if (w->len + n > w->cap) {
        w->cap = (w->len + n) * 2 + 64;
        w->b = realloc(w->b, w->cap);
    }
    memcpy(w->b + w->len, p, n);
    w->len += n;
}

static void sd_pw_varint(sd_pw_t *w, uint64_t v) {
    uint8_t c[10];
    int n = 0;
    do {
        c[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) c[n] |= 0x80;
        n++;
    } while (v);
    sd_pw_put(w, c, (size_t)n);
}

static void sd_pw_le(sd_pw_t *w, uint64_t v, int n) {
    uint8_t c[8];
    for (int i = 0; i < n; i++) c[i] = (uint8_t)(v >> (8 * i));
    sd_pw_put(w, c, (size_t)n);
}

static int sd_pw_unbase64(const char *s, sd_pw_t *w) {
    uint32_t acc = 0;
    int bits = 0;
    for (; *s && *s != '='; s++) {
        const char *a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", *at = strchr(a, *s);
        if (!at) return -1;
        acc = acc << 6 | (uint32_t)(at - a);
        if ((bits += 6) >= 8) {
            uint8_t c = (uint8_t)(acc >> (bits -= 8));
            sd_pw_put(w, &c, 1);
        }
    }
    return 0;
}

/* One scalar (or enum) value as its wire type writes it, without a tag;
 * -1 when v does not fit the field's type. */
static int sd_pw_scalar(const sd_protodyn_legacy_t *p, const sd_pf_t *f, json_t *v, sd_pw_t *w) {
    if (f->en >= 0) {
        const sd_pe_t *e = &p->e[f->en];
        if (json_is_integer(v)) return sd_pw_varint(w, (uint64_t)json_integer_value(v)), 0;
        for (int i = 0; json_is_string(v) && i < e->n; i++)
            if (!strcmp(e->sym[i], json_string_value(v))) return sd_pw_varint(w, (uint64_t)(int64_t)e->val[i]), 0;
        return -1;
    }
    switch (f->type) {
    case PT_BOOL:
        if (!json_is_boolean(v)) return -1;
        sd_pw_varint(w, json_is_true(v));
        return 0;
    case PT_DOUBLE: case PT_FLOAT: {
        if (!json_is_number(v)) return -1;
        double d = json_number_value(v);
        uint64_t u = 0;
        if (f->type == PT_DOUBLE) memcpy(&u, &d, 8);
        else { float fl = (float)d; uint32_t u32; memcpy(&u32, &fl, 4); u = u32; }
        sd_pw_le(w, u, f->type == PT_DOUBLE ? 8 : 4);
        return 0;
    }
    default: {
        if (!json_is_integer(v)) return -1;
        int64_t i = json_integer_value(v);
        switch (f->type) {
        case PT_SINT32: case PT_SINT64: sd_pw_varint(w, (uint64_t)(i << 1) ^ (uint64_t)(i >> 63)); break;
        case PT_FIXED64: case PT_SFIXED64: sd_pw_le(w, (uint64_t)i, 8); break;
        case PT_FIXED32: case PT_SFIXED32: sd_pw_le(w, (uint64_t)(uint32_t)i, 4); break;
        case PT_INT32: sd_pw_varint(w, (uint64_t)(int64_t)(int32_t)i); break; /* a negative int32 is ten bytes, as protobuf writes it */
        default: sd_pw_varint(w, (uint64_t)i); break;
        }
        return 0;
    }
    }
}

static int sd_pw_message(const sd_protodyn_legacy_t *p, int mi, json_t *o, sd_pw_t *w, int depth, char *why, size_t whylen);

/* One value of field f, its tag first. */
static int sd_pw_field(const sd_protodyn_legacy_t *p, const sd_pf_t *f, json_t *v, sd_pw_t *w, int depth, char *why, size_t whylen) {
    int wt = sd_pr_wiretype(f);
    sd_pw_varint(w, (uint64_t)f->number << 3 | (uint64_t)wt);
    if (f->type == PT_STRING) {
        if (!json_is_string(v)) return -1;
        sd_pw_varint(w, json_string_length(v));
        sd_pw_put(w, json_string_value(v), json_string_length(v));
        return 0;
    }
    if (f->type == PT_BYTES || f->msg >= 0) {
        sd_pw_t inner = {0};
        int rc = f->type == PT_BYTES ? (json_is_string(v) ? sd_pw_unbase64(json_string_value(v), &inner) : -1)
                                     : sd_pw_message(p, f->msg, v, &inner, depth + 1, why, whylen);
        if (!rc) sd_pw_varint(w, inner.len), sd_pw_put(w, inner.b, inner.len);
        free(inner.b);
        return rc;
    }
    return sd_pw_scalar(p, f, v, w);
}

static int sd_pw_message(const sd_protodyn_legacy_t *p, int mi, json_t *o, sd_pw_t *w, int depth, char *why, size_t whylen) {
    const sd_pm_t *m = &p->m[mi];
    if (!json_is_object(o)) return why[0] ? -1 : sd_pr_fail(why, whylen, "%s: expected an object", m->name);
    if (depth > 64) return sd_pr_fail(why, whylen, "%s: objects nested more than 64 deep", m->name);
    for (int i = 0; i < m->nf; i++) {
        const sd_pf_t *f = &m->f[i];
        json_t *v = json_object_get(o, f->name);
        if (!v || json_is_null(v)) continue;
        int rc = 0;
        if (f->repeated) {
            if (!json_is_array(v)) return sd_pr_fail(why, whylen, "%s.%s: expected an array (a repeated field)", m->name, f->name);
            size_t k;
            json_t *el;
            int wt = sd_pr_wiretype(f);
            if (p->proto3 && wt != 2 && json_array_size(v)) { /* packed */
                sd_pw_t inner = {0};
                json_array_foreach(v, k, el) if (!rc) rc = sd_pw_scalar(p, f, el, &inner);
                if (!rc) sd_pw_varint(w, (uint64_t)f->number << 3 | 2), sd_pw_varint(w, inner.len), sd_pw_put(w, inner.b, inner.len);
                free(inner.b);
            } else {
                json_array_foreach(v, k, el) if (!rc) rc = sd_pw_field(p, f, el, w, depth, why, whylen);
            }
        } else {
            rc = sd_pw_field(p, f, v, w, depth, why, whylen);
        }
        if (rc) return why[0] ? -1 : sd_pr_fail(why, whylen, "%s.%s: the value does not fit its type", m->name, f->name);
    }
    return 0;
}

int sd_protodyn_legacy_encode(const sd_protodyn_legacy_t *p, json_t *o, uint8_t **out, size_t *len, char *why, size_t whylen) {
    sd_pw_t w = {*out, *len, *len};
    if (whylen) why[0] = 0;
    int rc = sd_pw_message(p, p->top[0], o, &w, 0, why, whylen);
    *out = w.b;
    *len = w.len;
    return rc;
}
