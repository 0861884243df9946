/* ecmare.c - ECMA-262 patterns matched with PCRE2 (see ecmare.h).
 *
 * PCRE2 reads a Perl dialect: most of ECMA-262 means the same there, some
 * of it does not (`.`, \s, \v, \0, \u{...}, `]` at the start of a class)
 * and much of Perl's is not ECMA-262 at all. So a pattern is read token by
 * token first: each token ECMA-262 and PCRE2 read alike is copied, each
 * they read differently is spelt out in PCRE2's terms, and each PCRE2
 * alone has is refused by name. PCRE2 then compiles the result with its
 * options set to the ECMA meaning (UTF, $ only at the end, a backreference
 * to an unset group matching empty, an empty class matching nothing, no
 * UCP: \d \w ASCII), under bounds on length, nesting, memory and steps.
 * Written without the rest of the harness (the reference pipelines link
 * it alone with jschema.c). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "ecmare.h"

#include <pcre2.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the bounds (ecmare.h says them) */
#define SD_ECMARE_NEST 64
#define SD_ECMARE_COMPILE_MEM ((size_t)8 << 20)
#define SD_ECMARE_MATCH_STEPS 1000000
#define SD_ECMARE_MATCH_DEPTH 10000
#define SD_ECMARE_HEAP_KIB 16384

/* ECMA-262 white space and line terminators, for \s: \t \n \v \f \r,
 * the Z category (Zs, U+2028, U+2029) and U+FEFF in UTF-8 (PCRE2's
 * \p{Xps} would add U+0085) */
#define SD_ECMARE_WS "\\t\\n\\x0b\\f\\r\\p{Z}\xef\xbb\xbf"
/* `.`: any code point but \n \r U+2028 U+2029 */
#define SD_ECMARE_DOT "[^\\n\\r\xe2\x80\xa8\xe2\x80\xa9]"

/* PCRE2's memory for compiling a pattern, counted against a cap: a
 * pattern of nested bounded repeats is refused, not given gigabytes. */
typedef struct {
    size_t used, cap;
} sd_ecmare_mem_t;

struct sd_ecmare_s {
    pcre2_code *code;
    pcre2_match_context *mctx;
    sd_ecmare_mem_t mem; /* the code's allocator's, while the code lives */
};

static void *sd_ecmare_malloc(PCRE2_SIZE n, void *ud) {
    sd_ecmare_mem_t *m = ud;
    if (n > m->cap - m->used) return NULL;
    max_align_t *p = malloc(sizeof(max_align_t) + n);
    if (!p) return NULL;
    *(size_t *)p = n;
    m->used += n;
    return p + 1;
}

static void sd_ecmare_mfree(void *q, void *ud) {
    if (!q) return;
    max_align_t *p = (max_align_t *)q - 1;
    ((sd_ecmare_mem_t *)ud)->used -= *(size_t *)p;
    free(p);
}

/* ---- reading the ECMA-262 pattern ---- */

typedef struct {
    const char *s;
    size_t n, i;
    char *out;
    size_t olen, ocap;
    sd_ecmare_refusal_t kind;
    char *err;
    size_t errlen;
} sd_er_t;

/* The message into c->err; one cut short by the buffer loses the UTF-8
 * character it cut as well, so that it stays UTF-8 (a schema's error
 * ends up in JSON reports). */
static int sd_er_refuse(sd_er_t *c, sd_ecmare_refusal_t kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = c->err && c->errlen ? vsnprintf(c->err, c->errlen, fmt, ap) : 0;
    va_end(ap);
    if (n >= 0 && (size_t)n >= c->errlen && c->errlen) {
        size_t k = c->errlen - 1;
        while (k > 0 && ((unsigned char)c->err[k - 1] & 0xc0) == 0x80) k--;
        if (k > 0 && (unsigned char)c->err[k - 1] >= 0xc0) c->err[k - 1] = 0;
    }
    c->kind = kind;
    return -1;
}

static int sd_er_emit(sd_er_t *c, const char *p, size_t n) {
    if (c->olen + n + 1 > c->ocap) {
        size_t cap = (c->olen + n + 1) * 2;
        char *more = realloc(c->out, cap);
        if (!more) return sd_er_refuse(c, SD_ECMARE_UNSUPPORTED, "out of memory");
        c->out = more, c->ocap = cap;
    }
    memcpy(c->out + c->olen, p, n);
    c->olen += n;
    c->out[c->olen] = 0;
    return 0;
}

static int sd_er_emits(sd_er_t *c, const char *p) { return sd_er_emit(c, p, strlen(p)); }

/* cp as a literal character: a letter or digit itself, other ASCII
 * escaped, the rest as UTF-8. */
static int sd_er_emit_cp(sd_er_t *c, uint32_t cp) {
    char b[8];
    size_t n = 0;
    if ((cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z')) b[n++] = (char)cp;
    else if (cp < 0x20 || cp == 0x7f) n = (size_t)snprintf(b, sizeof(b), "\\x%02x", (unsigned)cp);
    else if (cp < 0x80) b[n++] = '\\', b[n++] = (char)cp;
    else if (cp < 0x800) b[n++] = (char)(0xc0 | cp >> 6), b[n++] = (char)(0x80 | (cp & 0x3f));
    else if (cp < 0x10000) b[n++] = (char)(0xe0 | cp >> 12), b[n++] = (char)(0x80 | ((cp >> 6) & 0x3f)), b[n++] = (char)(0x80 | (cp & 0x3f));
    else b[n++] = (char)(0xf0 | cp >> 18), b[n++] = (char)(0x80 | ((cp >> 12) & 0x3f)), b[n++] = (char)(0x80 | ((cp >> 6) & 0x3f)),
         b[n++] = (char)(0x80 | (cp & 0x3f));
    return sd_er_emit(c, b, n);
}

/* The UTF-8 character at s (n bytes left): its length, its code point in
 * *cp; 0 when it is none (cut short, overlong, a surrogate, past
 * U+10FFFF). */
static size_t sd_er_utf8(const char *s, size_t n, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    size_t len = u[0] < 0x80 ? 1 : u[0] >= 0xc2 && u[0] <= 0xdf ? 2 : u[0] >= 0xe0 && u[0] <= 0xef ? 3 : u[0] >= 0xf0 && u[0] <= 0xf4 ? 4 : 0;
    uint32_t v = len == 1 ? u[0] : len == 2 ? u[0] & 0x1fu : len == 3 ? u[0] & 0x0fu : u[0] & 0x07u;
    if (!len || len > n) return 0;
    for (size_t k = 1; k < len; k++) {
        if ((u[k] & 0xc0) != 0x80) return 0;
        v = v << 6 | (u[k] & 0x3fu);
    }
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < least[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    *cp = v;
    return len;
}

static int sd_er_hex(char ch) {
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

/* k hex digits at s[at]: their value, or -1 */
static long sd_er_hexn(const sd_er_t *c, size_t at, int k) {
    long v = 0;
    for (int j = 0; j < k; j++) {
        if (at + (size_t)j >= c->n || sd_er_hex(c->s[at + (size_t)j]) < 0) return -1;
        v = v * 16 + sd_er_hex(c->s[at + (size_t)j]);
    }
    return v;
}

/* \u after the backslash at c->i: \uXXXX (a surrogate pair joined) or
 * \u{X...}; c->i left on the last byte read. */
static int sd_er_unicode(sd_er_t *c) {
    long cp;
    if (c->i + 2 < c->n && c->s[c->i + 2] == '{') {
        size_t j = c->i + 3;
        cp = 0;
        while (j < c->n && sd_er_hex(c->s[j]) >= 0 && cp <= 0x10ffff) cp = cp * 16 + sd_er_hex(c->s[j++]);
        if (j == c->i + 3 || j >= c->n || c->s[j] != '}' || cp > 0x10ffff)
            return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\u{...} is not a code point's hex digits in braces");
        c->i = j;
    } else {
        if ((cp = sd_er_hexn(c, c->i + 2, 4)) < 0) return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\u is not followed by 4 hex digits");
        c->i += 5;
        long lo;
        if (cp >= 0xd800 && cp <= 0xdbff && c->i + 6 < c->n && c->s[c->i + 1] == '\\' && c->s[c->i + 2] == 'u' &&
            (lo = sd_er_hexn(c, c->i + 3, 4)) >= 0xdc00 && lo <= 0xdfff) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            c->i += 6;
        }
    }
    if (cp >= 0xd800 && cp <= 0xdfff)
        return sd_er_refuse(c, SD_ECMARE_UNSUPPORTED, "\\u%04lX is a lone surrogate, which no UTF-8 string holds", cp);
    return sd_er_emit_cp(c, (uint32_t)cp);
}

/* General_Category values by their ECMA-262 names, as PCRE2 names them */
static const char *const sd_er_gc[][2] = {
    {"L", "L"}, {"Letter", "L"}, {"LC", "L&"}, {"Cased_Letter", "L&"}, {"Lu", "Lu"}, {"Uppercase_Letter", "Lu"},
    {"Ll", "Ll"}, {"Lowercase_Letter", "Ll"}, {"Lt", "Lt"}, {"Titlecase_Letter", "Lt"}, {"Lm", "Lm"}, {"Modifier_Letter", "Lm"},
    {"Lo", "Lo"}, {"Other_Letter", "Lo"}, {"M", "M"}, {"Mark", "M"}, {"Combining_Mark", "M"}, {"Mn", "Mn"},
    {"Nonspacing_Mark", "Mn"}, {"Mc", "Mc"}, {"Spacing_Mark", "Mc"}, {"Me", "Me"}, {"Enclosing_Mark", "Me"}, {"N", "N"},
    {"Number", "N"}, {"Nd", "Nd"}, {"Decimal_Number", "Nd"}, {"digit", "Nd"}, {"Nl", "Nl"}, {"Letter_Number", "Nl"},
    {"No", "No"}, {"Other_Number", "No"}, {"P", "P"}, {"Punctuation", "P"}, {"punct", "P"}, {"Pc", "Pc"},
    {"Connector_Punctuation", "Pc"}, {"Pd", "Pd"}, {"Dash_Punctuation", "Pd"}, {"Ps", "Ps"}, {"Open_Punctuation", "Ps"},
    {"Pe", "Pe"}, {"Close_Punctuation", "Pe"}, {"Pi", "Pi"}, {"Initial_Punctuation", "Pi"}, {"Pf", "Pf"},
    {"Final_Punctuation", "Pf"}, {"Po", "Po"}, {"Other_Punctuation", "Po"}, {"S", "S"}, {"Symbol", "S"}, {"Sm", "Sm"},
    {"Math_Symbol", "Sm"}, {"Sc", "Sc"}, {"Currency_Symbol", "Sc"}, {"Sk", "Sk"}, {"Modifier_Symbol", "Sk"}, {"So", "So"},
    {"Other_Symbol", "So"}, {"Z", "Z"}, {"Separator", "Z"}, {"Zs", "Zs"}, {"Space_Separator", "Zs"}, {"Zl", "Zl"},
    {"Line_Separator", "Zl"}, {"Zp", "Zp"}, {"Paragraph_Separator", "Zp"}, {"C", "C"}, {"Other", "C"}, {"Cc", "Cc"},
    {"Control", "Cc"}, {"cntrl", "Cc"}, {"Cf", "Cf"}, {"Format", "Cf"}, {"Cs", "Cs"}, {"Surrogate", "Cs"}, {"Co", "Co"},
    {"Private_Use", "Co"}, {"Cn", "Cn"}, {"Unassigned", "Cn"}};

/* \p{...} or \P{...} after the backslash at c->i: a General_Category value
 * (gc=, General_Category= or alone), or a script (Script=, sc=,
 * Script_Extensions=, scx=); c->i left on the closing brace. */
static int sd_er_property(sd_er_t *c) {
    char neg = c->s[c->i + 1], name[80];
    size_t j = c->i + 3, k = 0;
    if (c->i + 2 >= c->n || c->s[c->i + 2] != '{')
        return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\%c is not followed by a property in braces", neg);
    while (j < c->n && c->s[j] != '}' && k + 1 < sizeof(name)) name[k++] = c->s[j++];
    name[k] = 0;
    if (j >= c->n || c->s[j] != '}') return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\%c{ is not closed", neg);
    c->i = j;
    for (size_t t = 0; t < k; t++)
        if (!((name[t] >= 'A' && name[t] <= 'Z') || (name[t] >= 'a' && name[t] <= 'z') || (name[t] >= '0' && name[t] <= '9') ||
              name[t] == '_' || name[t] == '='))
            return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\%c{%s} is not a Unicode property's name", neg, name);
    const char *eq = strchr(name, '='), *value = eq ? eq + 1 : name;
    size_t klen = eq ? (size_t)(eq - name) : 0;
    const char *prefix = NULL;
    if (eq && ((klen == 6 && !strncmp(name, "Script", 6)) || (klen == 2 && !strncmp(name, "sc", 2)))) prefix = "sc:";
    else if (eq && ((klen == 17 && !strncmp(name, "Script_Extensions", 17)) || (klen == 3 && !strncmp(name, "scx", 3)))) prefix = "scx:";
    char pcre[100];
    if (prefix && *value && !strchr(value, '=')) {
        snprintf(pcre, sizeof(pcre), "\\%c{%s%s}", neg, prefix, value);
        return sd_er_emits(c, pcre);
    }
    if (!eq || (klen == 2 && !strncmp(name, "gc", 2)) || (klen == 16 && !strncmp(name, "General_Category", 16)))
        for (size_t g = 0; g < sizeof(sd_er_gc) / sizeof(sd_er_gc[0]); g++)
            if (!strcmp(value, sd_er_gc[g][0])) {
                snprintf(pcre, sizeof(pcre), "\\%c{%s}", neg, sd_er_gc[g][1]);
                return sd_er_emits(c, pcre);
            }
    return sd_er_refuse(c, SD_ECMARE_UNSUPPORTED, "\\%c{%s}: the harness follows General_Category values and Script= only", neg, name);
}

/* The escape at c->i (a backslash), inside a class or not; c->i left on
 * its last byte. */
static int sd_er_escape(sd_er_t *c, int in_class) {
    if (c->i + 1 >= c->n) return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a \\ at the end");
    char e = c->s[c->i + 1];
    char two[3] = {'\\', e, 0};
    switch (e) {
    case 'd': case 'D': case 'w': case 'W': case 't': case 'n': case 'r': case 'f':
        c->i++;
        return sd_er_emits(c, two);
    case 'b':
        c->i++; /* a word boundary, in a class a backspace: the same in both */
        return sd_er_emits(c, two);
    case 'B':
        if (in_class) return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\B inside a class");
        c->i++;
        return sd_er_emits(c, two);
    case 's':
        c->i++;
        return sd_er_emits(c, in_class ? SD_ECMARE_WS : "[" SD_ECMARE_WS "]");
    case 'S':
        if (in_class) return sd_er_refuse(c, SD_ECMARE_UNSUPPORTED, "\\S inside a class (write the class as an alternative)");
        c->i++;
        return sd_er_emits(c, "[^" SD_ECMARE_WS "]");
    case 'v':
        c->i++; /* PCRE2's \v is every vertical space */
        return sd_er_emits(c, "\\x0b");
    case '0':
        if (c->i + 2 < c->n && c->s[c->i + 2] >= '0' && c->s[c->i + 2] <= '9')
            return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\0 followed by a digit (an octal escape)");
        c->i++;
        return sd_er_emits(c, "\\x00");
    case 'c': {
        char l = c->i + 2 < c->n ? c->s[c->i + 2] : 0;
        if (!((l >= 'A' && l <= 'Z') || (l >= 'a' && l <= 'z')))
            return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\c is not followed by a letter");
        c->i += 2;
        return sd_er_emit_cp(c, (uint32_t)(l & 0x1f));
    }
    case 'x': {
        long v = sd_er_hexn(c, c->i + 2, 2);
        if (v < 0) return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\x is not followed by 2 hex digits");
        c->i += 3;
        return sd_er_emit_cp(c, (uint32_t)v);
    }
    case 'u':
        return sd_er_unicode(c);
    case 'p': case 'P':
        return sd_er_property(c);
    case 'k': {
        size_t j = c->i + 3;
        while (j < c->n && c->s[j] != '>') j++;
        if (in_class || c->i + 2 >= c->n || c->s[c->i + 2] != '<' || j >= c->n)
            return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\k is not a reference \\k<name> to a named group");
        int rc = sd_er_emit(c, c->s + c->i, j + 1 - c->i);
        c->i = j;
        return rc;
    }
    default:
        break;
    }
    if (e >= '1' && e <= '9') {
        if (in_class) return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\%c inside a class (an octal escape)", e);
        if (c->i + 2 < c->n && c->s[c->i + 2] >= '0' && c->s[c->i + 2] <= '9')
            return sd_er_refuse(c, SD_ECMARE_UNSUPPORTED, "a backreference above \\9");
        c->i++;
        return sd_er_emits(c, two);
    }
    if ((e >= 'A' && e <= 'Z') || (e >= 'a' && e <= 'z'))
        return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\%c is no ECMA-262 escape%s", e,
                            e == 'A' || e == 'Z' || e == 'z' || e == 'G' ? " (ECMA-262 anchors are ^ and $)" : "");
    /* with the u flag \ makes a character itself only before a syntax
     * character or /, and inside a class before - (PCRE2 takes any) */
    if ((e && strchr("^$\\.*+?()[]{}|/", e)) || (in_class && e == '-')) {
        c->i++;
        return sd_er_emit(c, c->s + c->i - 1, 2);
    }
    uint32_t cp = 0;
    sd_er_utf8(c->s + c->i + 1, c->n - c->i - 1, &cp);
    char shown[24];
    snprintf(shown, sizeof(shown), e > ' ' && e < 0x7f ? "\\%c" : "\\ before U+%04X", e > ' ' && e < 0x7f ? (unsigned)e : (unsigned)cp);
    return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "%s is no ECMA-262 escape (with the u flag \\ escapes only ^ $ \\ . * + ? ( ) [ ] { } | /%s)",
                        shown, in_class ? " and, in a class, -" : "");
}

/* A character class from the [ at c->i to its ], c->i left on the ]. */
static int sd_er_class(sd_er_t *c) {
    int rc = sd_er_emits(c, "[");
    c->i++;
    if (!rc && c->i < c->n && c->s[c->i] == '^') rc = sd_er_emits(c, "^"), c->i++;
    for (; !rc && c->i < c->n; c->i++) {
        char ch = c->s[c->i];
        if (ch == ']') return sd_er_emits(c, "]");
        if (ch == '\\') {
            rc = sd_er_escape(c, 1);
        } else if (ch == '[') {
            char p = c->i + 1 < c->n ? c->s[c->i + 1] : 0;
            char end[2] = {p, ']'};
            if ((p == ':' || p == '.' || p == '=') && c->i + 2 < c->n && memmem(c->s + c->i + 2, c->n - c->i - 2, end, 2))
                return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "[%c...%c] inside a class (a POSIX class: ECMA-262 has none)", p, p);
            rc = sd_er_emits(c, "\\[");
        } else {
            rc = sd_er_emit(c, &ch, 1);
        }
    }
    return rc ? rc : sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a [ without its ]");
}

/* A group's opening at c->i: (, (?:, (?=, (?!, (?<=, (?<!, (?<name>. */
static int sd_er_group(sd_er_t *c) {
    const char *p = c->s + c->i;
    size_t left = c->n - c->i;
    if (left > 1 && p[1] == '*') return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "(* (a PCRE verb or option)");
    if (left < 2 || p[1] != '?') return sd_er_emits(c, "(");
    char k = left > 2 ? p[2] : 0;
    if (k == ':' || k == '=' || k == '!' || (k == '<' && left > 3 && (p[3] == '=' || p[3] == '!'))) {
        size_t n = k == '<' ? 4 : 3;
        c->i += n - 1;
        return sd_er_emit(c, p, n);
    }
    if (k == '<') {
        size_t j = 3;
        while (j < left && ((p[j] >= 'A' && p[j] <= 'Z') || (p[j] >= 'a' && p[j] <= 'z') || p[j] == '_' || (j > 3 && p[j] >= '0' && p[j] <= '9'))) j++;
        if (j == 3 || j >= left || p[j] != '>')
            return sd_er_refuse(c, j < left && p[j] != '>' ? SD_ECMARE_UNSUPPORTED : SD_ECMARE_NOT_ECMA,
                                "(?<name>: the harness follows group names of ASCII letters, digits and _ only");
        c->i += j;
        return sd_er_emit(c, p, j + 1);
    }
    const char *what = k == '>' ? "an atomic group" : k == '|' ? "a branch reset" : k == '#' ? "a comment" : k == '(' ? "a conditional"
                       : k == 'R' || k == '&' || k == '+' || (k >= '0' && k <= '9') ? "recursion or a subroutine call"
                       : k == 'P' || k == '\'' ? "a Python or Perl named group" : k == 'C' ? "a callout"
                       : (k >= 'a' && k <= 'z') || (k >= 'A' && k <= 'Z') || k == '-' || k == '^' || k == ')' ? "inline flags"
                       : "no group ECMA-262 has";
    /* the character named only when it is printable ASCII: the message stays UTF-8 */
    if (k > ' ' && k < 0x7f) return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "(?%c (%s)", k, what);
    return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "(? before %s (%s)", k ? "a character no group opens with" : "the end", what);
}

/* A quantifier's end at c->i: a + after it makes it possessive. */
static int sd_er_possessive(sd_er_t *c) {
    if (c->i + 1 < c->n && c->s[c->i + 1] == '+')
        return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a possessive quantifier (%c+)", c->s[c->i]);
    return 0;
}

/* {n}, {n,} or {n,m} at c->i, copied; c->i left on the }. */
static int sd_er_braces(sd_er_t *c) {
    size_t j = c->i + 1, d1 = 0, d2 = 0;
    while (j < c->n && c->s[j] >= '0' && c->s[j] <= '9') j++, d1++;
    if (d1 && j < c->n && c->s[j] == ',')
        for (j++; j < c->n && c->s[j] >= '0' && c->s[j] <= '9'; j++) d2++;
    if (!d1 || j >= c->n || c->s[j] != '}')
        return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a { that starts no quantifier {n}, {n,} or {n,m} (write \\{)");
    int rc = sd_er_emit(c, c->s + c->i, j + 1 - c->i);
    c->i = j;
    return rc ? rc : sd_er_possessive(c);
}

/* The whole pattern as PCRE2 is to read it, into c->out. */
static int sd_er_read(sd_er_t *c) {
    int rc = 0;
    for (c->i = 0; !rc && c->i < c->n; c->i++) {
        char ch = c->s[c->i];
        switch (ch) {
        case '\\': rc = sd_er_escape(c, 0); break;
        case '[': rc = sd_er_class(c); break;
        case '(': rc = sd_er_group(c); break;
        case '.': rc = sd_er_emits(c, SD_ECMARE_DOT); break;
        case '{': rc = sd_er_braces(c); break;
        case '*': case '+': case '?':
            rc = sd_er_emit(c, &ch, 1);
            if (!rc) rc = sd_er_possessive(c);
            break;
        case '}': case ']':
            rc = sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a lone %c (write \\%c)", ch, ch);
            break;
        case 0: rc = sd_er_emits(c, "\\x00"); break;
        default: rc = sd_er_emit(c, &ch, 1);
        }
    }
    return rc;
}

/* ---- compiling and matching ---- */

static sd_ecmare_refusal_t sd_ecmare_kind(int code) {
    switch (code) {
    case PCRE2_ERROR_QUANTIFIER_TOO_BIG:
    case PCRE2_ERROR_PARENTHESES_NEST_TOO_DEEP:
    case PCRE2_ERROR_PATTERN_TOO_LARGE:
    case PCRE2_ERROR_HEAP_FAILED:
    case PCRE2_ERROR_LOOKBEHIND_NOT_FIXED_LENGTH:
    case PCRE2_ERROR_LOOKBEHIND_TOO_COMPLICATED:
    case PCRE2_ERROR_TOO_MANY_NAMED_SUBPATTERNS:
    case PCRE2_ERROR_PATTERN_TOO_COMPLICATED:
    case PCRE2_ERROR_LOOKBEHIND_TOO_LONG:
    case PCRE2_ERROR_PATTERN_STRING_TOO_LONG:
    case PCRE2_ERROR_TOO_MANY_CAPTURES:
        return SD_ECMARE_UNSUPPORTED;
    default:
        return SD_ECMARE_NOT_ECMA;
    }
}

sd_ecmare_t *sd_ecmare_compile(const char *src, size_t len, sd_ecmare_refusal_t *refusal, char *err, size_t errlen) {
    sd_er_t c = {.s = src, .n = len, .err = err, .errlen = errlen};
    sd_ecmare_refusal_t dummy;
    if (!refusal) refusal = &dummy;
    if (len > SD_ECMARE_MAX_LEN) {
        snprintf(err, errlen, "%zu bytes, more than the %d the harness compiles", len, SD_ECMARE_MAX_LEN);
        *refusal = SD_ECMARE_UNSUPPORTED;
        return NULL;
    }
    for (size_t at = 0, k; at < len; at += k) {
        uint32_t cp;
        if (!(k = sd_er_utf8(src + at, len - at, &cp))) {
            snprintf(err, errlen, "not UTF-8 at byte %zu", at);
            *refusal = SD_ECMARE_NOT_ECMA;
            return NULL;
        }
    }
    if (sd_er_read(&c) || sd_er_emit(&c, "", 0)) {
        free(c.out);
        *refusal = c.kind;
        return NULL;
    }
    sd_ecmare_t *re = calloc(1, sizeof(*re));
    if (!re) {
        free(c.out);
        snprintf(err, errlen, "out of memory");
        *refusal = SD_ECMARE_UNSUPPORTED;
        return NULL;
    }
    re->mem.cap = SD_ECMARE_COMPILE_MEM;
    pcre2_general_context *g = pcre2_general_context_create(sd_ecmare_malloc, sd_ecmare_mfree, &re->mem);
    pcre2_compile_context *cc = g ? pcre2_compile_context_create(g) : NULL;
    int code = PCRE2_ERROR_HEAP_FAILED;
    PCRE2_SIZE off = 0;
    if (cc) {
        pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
        pcre2_set_bsr(cc, PCRE2_BSR_UNICODE);
        pcre2_set_max_pattern_length(cc, (PCRE2_SIZE)SD_ECMARE_MAX_LEN * 16);
        pcre2_set_parens_nest_limit(cc, SD_ECMARE_NEST);
        re->code = pcre2_compile((PCRE2_SPTR)c.out, c.olen,
                                 PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_NEVER_BACKSLASH_C | PCRE2_DOLLAR_ENDONLY | PCRE2_ALLOW_EMPTY_CLASS |
                                     PCRE2_MATCH_UNSET_BACKREF | PCRE2_NEVER_UCP,
                                 &code, &off, cc);
    }
    pcre2_compile_context_free(cc);
    pcre2_general_context_free(g);
    free(c.out);
    if (re->code && (re->mctx = pcre2_match_context_create(NULL))) {
        pcre2_set_match_limit(re->mctx, SD_ECMARE_MATCH_STEPS);
        pcre2_set_depth_limit(re->mctx, SD_ECMARE_MATCH_DEPTH);
        pcre2_set_heap_limit(re->mctx, SD_ECMARE_HEAP_KIB);
        return re;
    }
    if (!re->code) {
        char msg[160] = "";
        pcre2_get_error_message(code, (PCRE2_UCHAR *)msg, sizeof(msg));
        *refusal = sd_ecmare_kind(code);
        snprintf(err, errlen, "%s (PCRE2: %s)", *refusal == SD_ECMARE_UNSUPPORTED ? "past what the harness compiles" : "not an expression",
                 msg);
    } else {
        *refusal = SD_ECMARE_UNSUPPORTED;
        snprintf(err, errlen, "out of memory");
    }
    sd_ecmare_free(re);
    return NULL;
}

void sd_ecmare_free(sd_ecmare_t *re) {
    if (!re) return;
    pcre2_code_free(re->code);
    pcre2_match_context_free(re->mctx);
    free(re);
}

int sd_ecmare_match(const sd_ecmare_t *re, const char *s, size_t len, char *why, size_t whylen) {
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    int rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, 0, 0, md, re->mctx);
    pcre2_match_data_free(md);
    if (rc >= 0) return 1;
    if (rc == PCRE2_ERROR_NOMATCH) return 0;
    if (rc == PCRE2_ERROR_MATCHLIMIT) snprintf(why, whylen, "the match took more than %d steps", SD_ECMARE_MATCH_STEPS);
    else if (rc == PCRE2_ERROR_DEPTHLIMIT) snprintf(why, whylen, "the match nested more than %d steps deep", SD_ECMARE_MATCH_DEPTH);
    else if (rc == PCRE2_ERROR_HEAPLIMIT) snprintf(why, whylen, "the match needed more than %d KiB", SD_ECMARE_HEAP_KIB);
    else {
        char msg[160] = "";
        pcre2_get_error_message(rc, (PCRE2_UCHAR *)msg, sizeof(msg));
        snprintf(why, whylen, "PCRE2: %s", msg);
    }
    return -1;
}
