/* ecmare.c - ECMA-262 patterns matched with PCRE2 (see ecmare.h).
 *
 * PCRE2 reads a Perl dialect: most of ECMA-262 means the same there, some
 * of it does not (`.`, \s, \v, \0, \u{...}, `]` at the start of a class)
 * and much of Perl's is not ECMA-262 at all. So a pattern is read token by
 * token first: each token ECMA-262 and PCRE2 read alike is copied, each
 * they read differently is spelt out in PCRE2's terms (a class's atoms and
 * class escapes as code points and ranges), and each PCRE2 alone has is
 * refused by name. PCRE2 then compiles the result with its options set to
 * the ECMA meaning (UTF, $ only at the end, a backreference to an unset
 * group matching empty, no UCP: \d \w ASCII), under bounds on length,
 * nesting, memory and steps. tests/ecmare_diff.py holds it to Node's
 * RegExp.
 * Written without the rest of the harness (the reference pipelines link
 * it alone with jschema.c). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "ecmare.h"
#include "util.h"

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

/* A group name: its characters in UTF-8, at off in sd_er_t's namebuf. */
typedef struct {
    size_t off, len;
    unsigned group; /* the number of the group of that name, 0 while there is none */
} sd_er_name_t;

/* A backreference, checked at the end: \1 to \9, or a name's index. */
typedef struct {
    unsigned num;
    int name; /* -1 for a number */
} sd_er_ref_t;

/* What the token before a quantifier is: nothing it can repeat (the
 * start, a |, a ( or another quantifier), an atom, or an assertion. */
typedef enum { SD_ER_NOTHING, SD_ER_ATOM, SD_ER_ASSERTION } sd_er_last_t;

typedef struct {
    const char *s;
    size_t n, i;
    char *out;
    size_t olen, ocap;
    sd_ecmare_refusal_t kind;
    char *err;
    size_t errlen;
    char posix;                           /* a class ended as [[:alpha:] does: its : . or = */
    char open[SD_ECMARE_NEST];            /* the groups open, innermost last: 1 a lookahead or lookbehind */
    unsigned open_groups[SD_ECMARE_NEST]; /* and how many capturing groups opened before each */
    int depth;
    unsigned groups;             /* the capturing groups so far */
    unsigned char *repeated;     /* by group number: inside a quantifier that repeats more than once */
    sd_er_ref_t *refs;           /* the backreferences */
    size_t nrefs;
    sd_er_last_t last;           /* what a quantifier here would repeat */
    unsigned last_from, last_to; /* and the groups in it: numbers last_from + 1 to last_to */
    sd_er_name_t *names;         /* the group names seen, in groups and in \k<name> */
    size_t nnames;
    char *namebuf; /* their characters (never longer than the pattern's text of them) */
    size_t namelen;
    pcre2_code *id[2]; /* sd_er_idchar's patterns, once compiled */
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
        size_t end = c->errlen - 1, k = end; /* the bytes kept; the last character's first byte */
        while (k > 0 && ((unsigned char)c->err[k - 1] & 0xc0) == 0x80) k--;
        unsigned char lead = k > 0 ? (unsigned char)c->err[k - 1] : 0;
        if (lead >= 0xc0 && k - 1 + (lead >= 0xf0 ? 4u : lead >= 0xe0 ? 3u : 2u) > end) c->err[k - 1] = 0;
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

/* cp in UTF-8 into b (4 bytes at most): its length. */
static size_t sd_er_utf8_put(char *b, uint32_t cp) {
    static const unsigned char lead[] = {0, 0, 0xc0, 0xe0, 0xf0};
    size_t n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    for (size_t k = n - 1; k > 0; k--, cp >>= 6) b[k] = (char)(0x80 | (cp & 0x3f));
    b[0] = (char)(lead[n] | cp);
    return n;
}

/* cp as a literal character: a letter or digit itself, other ASCII
 * escaped, the rest as UTF-8. */
static int sd_er_emit_cp(sd_er_t *c, uint32_t cp) {
    char b[8];
    size_t n = 0;
    if ((cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z')) b[n++] = (char)cp;
    else if (cp < 0x20 || cp == 0x7f) n = (size_t)snprintf(b, sizeof(b), "\\x%02x", (unsigned)cp);
    else if (cp < 0x80) b[n++] = '\\', b[n++] = (char)cp;
    else n = sd_er_utf8_put(b, cp);
    return sd_er_emit(c, b, n);
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

/* \u at s[at] (the backslash): \uXXXX, two of them joined when they are
 * a surrogate pair, or \u{X...}: the code point (a lone surrogate too),
 * *end on its last byte; -1 when it is neither form. */
static long sd_er_u(const sd_er_t *c, size_t at, size_t *end) {
    long cp, lo;
    if (at + 2 < c->n && c->s[at + 2] == '{') {
        size_t j = at + 3;
        cp = 0;
        while (j < c->n && sd_er_hex(c->s[j]) >= 0 && cp <= 0x10ffff) cp = cp * 16 + sd_er_hex(c->s[j++]);
        if (j == at + 3 || j >= c->n || c->s[j] != '}' || cp > 0x10ffff) return -1;
        *end = j;
        return cp;
    }
    if ((cp = sd_er_hexn(c, at + 2, 4)) < 0) return -1;
    *end = at + 5;
    if (cp >= 0xd800 && cp <= 0xdbff && at + 11 < c->n && c->s[at + 6] == '\\' && c->s[at + 7] == 'u' &&
        (lo = sd_er_hexn(c, at + 8, 4)) >= 0xdc00 && lo <= 0xdfff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        *end = at + 11;
    }
    return cp;
}

/* Whether cp may start (first) or go on a group name: ECMA-262's
 * identifier characters, ID_Start and $ _, then ID_Continue and $ and the
 * joiners. Outside ASCII by PCRE2's Unicode tables: L Nl and Other_ID_Start
 * for ID_Start, with Mn Mc Nd Pc and Other_ID_Continue for ID_Continue,
 * less U+2E2F (Pattern_Syntax); the two patterns compiled when first
 * needed. 1 yes, 0 no, -1 out of memory. */
static int sd_er_idchar(sd_er_t *c, uint32_t cp, int first) {
    if (cp < 0x80)
        return (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z') || cp == '$' || cp == '_' || (!first && cp >= '0' && cp <= '9');
    static const char *const src[2] = {
        "^(?!\\x{2E2F})[\\p{L}\\p{Nl}\\x{1885}\\x{1886}\\x{2118}\\x{212E}\\x{309B}\\x{309C}]",
        "^(?!\\x{2E2F})[\\p{L}\\p{Nl}\\p{Mn}\\p{Mc}\\p{Nd}\\p{Pc}\\x{1885}\\x{1886}\\x{2118}\\x{212E}\\x{309B}\\x{309C}"
        "\\x{B7}\\x{387}\\x{1369}-\\x{1371}\\x{19DA}\\x{200C}\\x{200D}\\x{30FB}\\x{FF65}]"};
    int k = first ? 0 : 1, code;
    PCRE2_SIZE off;
    if (!c->id[k] && !(c->id[k] = pcre2_compile((PCRE2_SPTR)src[k], PCRE2_ZERO_TERMINATED, PCRE2_UTF, &code, &off, NULL))) return -1;
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    char b[4];
    int rc = md ? pcre2_match(c->id[k], (PCRE2_SPTR)b, sd_er_utf8_put(b, cp), 0, 0, md, NULL) : -1;
    pcre2_match_data_free(md);
    return !md ? -1 : rc >= 0;
}

/* A group name at c->s[at], up to its >: an identifier, \u escapes read
 * as the characters they name. *end is left on the >. Names are compared
 * as those characters; each distinct one gets an index (in order of first
 * sight, a reference \k<name> before its group too), and PCRE2 sees
 * gINDEX: its names are ASCII letters, digits and _ only. The index, or
 * -1 refused. */
static int sd_er_name(sd_er_t *c, size_t at, size_t *end) {
    size_t j = at, start = c->namelen;
    while (j < c->n && c->s[j] != '>') {
        uint32_t cp;
        if (c->s[j] == '\\') {
            size_t last = j;
            long v = j + 1 < c->n && c->s[j + 1] == 'u' ? sd_er_u(c, j, &last) : -1;
            if (v < 0 || (v >= 0xd800 && v <= 0xdfff))
                return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a group name with a \\ that is no \\u escape of a character");
            cp = (uint32_t)v, j = last + 1;
        } else {
            j += sd_util_utf8_decode(c->s + j, c->n - j, &cp);
        }
        int ok = sd_er_idchar(c, cp, c->namelen == start);
        if (ok < 0) return sd_er_refuse(c, SD_ECMARE_UNSUPPORTED, "out of memory");
        if (!ok)
            return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a group name with U+%04X %s (a name is an identifier)", (unsigned)cp,
                                c->namelen == start ? "first" : "in it");
        c->namelen += sd_er_utf8_put(c->namebuf + c->namelen, cp);
    }
    if (j >= c->n || c->namelen == start)
        return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, j >= c->n ? "a group name without its >" : "an empty group name");
    *end = j;
    size_t len = c->namelen - start;
    for (size_t k = 0; k < c->nnames; k++)
        if (c->names[k].len == len && !memcmp(c->namebuf + c->names[k].off, c->namebuf + start, len)) {
            c->namelen = start;
            return (int)k;
        }
    c->names[c->nnames] = (sd_er_name_t){.off = start, .len = len};
    return (int)c->nnames++;
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

/* Scripts that Unicode 15 to 17 added, by their long and short names:
 * ECMA-262 has them (node 20 here reads Unicode 17), a PCRE2 only from
 * its Unicode 15 on (10.43). */
static const char *const sd_er_new_scripts[] = {
    "Kawi", "Nag_Mundari", "Nagm",                                      /* Unicode 15 */
    "Garay", "Gara", "Gurung_Khema", "Gukh", "Kirat_Rai", "Krai", "Ol_Onal", "Onao",
    "Sunuwar", "Sunu", "Todhri", "Todr", "Tulu_Tigalari", "Tutg",       /* Unicode 16 */
    "Beria_Erfe", "Berf", "Sidetic", "Sidt", "Tai_Yo", "Tayo", "Tolong_Siki", "Tols", /* Unicode 17 */
};

/* Whether this PCRE2's Unicode tables have the script of pcre (\p{sc:X}
 * or \p{scx:X}): compiled alone to see. */
static int sd_er_script_known(const char *pcre) {
    int code;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pcre, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &code, &off, NULL);
    pcre2_code_free(re);
    return re != NULL || code != PCRE2_ERROR_UNKNOWN_UNICODE_PROPERTY;
}

/* A script PCRE2 does not know: one newer than its Unicode tables is
 * past what the harness follows, any other no script at all. */
static int sd_er_script_unknown(sd_er_t *c, char neg, const char *name, const char *value) {
    for (size_t k = 0; k < sizeof(sd_er_new_scripts) / sizeof(*sd_er_new_scripts); k++)
        if (!strcmp(value, sd_er_new_scripts[k])) {
            char version[24] = "";
            pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, version);
            return sd_er_refuse(c, SD_ECMARE_UNSUPPORTED, "\\%c{%s}: a script newer than PCRE2's Unicode tables (Unicode %s)", neg, name,
                                version);
        }
    return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\%c{%s}: no script of that name", neg, name);
}

/* \p{...} or \P{...} after the backslash at c->i: a General_Category value
 * (gc=, General_Category= or alone), or a script (Script=, sc=,
 * Script_Extensions=, scx=); c->i left on the closing brace. */
static int sd_er_property(sd_er_t *c) {
    char neg = c->s[c->i + 1], name[80];
    size_t j = c->i + 3, k = 0;
    if (c->i + 2 >= c->n || c->s[c->i + 2] != '{')
        return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\%c is not followed by a property in braces", neg);
    while (j < c->n && c->s[j] != '}') j++;
    if (j >= c->n) return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\%c{ is not closed", neg);
    if ((k = j - c->i - 3) >= sizeof(name)) return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\%c{...} is no Unicode property's name", neg);
    memcpy(name, c->s + c->i + 3, k);
    name[k] = 0;
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
        return sd_er_script_known(pcre) ? sd_er_emits(c, pcre) : sd_er_script_unknown(c, neg, name, value);
    }
    if (!eq || (klen == 2 && !strncmp(name, "gc", 2)) || (klen == 16 && !strncmp(name, "General_Category", 16)))
        for (size_t g = 0; g < sizeof(sd_er_gc) / sizeof(sd_er_gc[0]); g++)
            if (!strcmp(value, sd_er_gc[g][0])) {
                snprintf(pcre, sizeof(pcre), "\\%c{%s}", neg, sd_er_gc[g][1]);
                return sd_er_emits(c, pcre);
            }
    /* ECMA-262's binary properties: ECMA-262 has them, the harness does not
     * follow them; any other name is no property at all */
    static const char *const binary[] = {
        "ASCII", "ASCII_Hex_Digit", "AHex", "Alphabetic", "Alpha", "Any", "Assigned", "Bidi_Control", "Bidi_C", "Bidi_Mirrored",
        "Bidi_M", "Case_Ignorable", "CI", "Cased", "Changes_When_Casefolded", "CWCF", "Changes_When_Casemapped", "CWCM",
        "Changes_When_Lowercased", "CWL", "Changes_When_NFKC_Casefolded", "CWKCF", "Changes_When_Titlecased", "CWT",
        "Changes_When_Uppercased", "CWU", "Dash", "Default_Ignorable_Code_Point", "DI", "Deprecated", "Dep", "Diacritic", "Dia",
        "Emoji", "Emoji_Component", "EComp", "Emoji_Modifier", "EMod", "Emoji_Modifier_Base", "EBase", "Emoji_Presentation", "EPres",
        "Extended_Pictographic", "ExtPict", "Extender", "Ext", "Grapheme_Base", "Gr_Base", "Grapheme_Extend", "Gr_Ext", "Hex_Digit",
        "Hex", "IDS_Binary_Operator", "IDSB", "IDS_Trinary_Operator", "IDST", "ID_Continue", "IDC", "ID_Start", "IDS", "Ideographic",
        "Ideo", "Join_Control", "Join_C", "Logical_Order_Exception", "LOE", "Lowercase", "Lower", "Math", "Noncharacter_Code_Point",
        "NChar", "Pattern_Syntax", "Pat_Syn", "Pattern_White_Space", "Pat_WS", "Quotation_Mark", "QMark", "Radical",
        "Regional_Indicator", "RI", "Sentence_Terminal", "STerm", "Soft_Dotted", "SD", "Terminal_Punctuation", "Term",
        "Unified_Ideograph", "UIdeo", "Uppercase", "Upper", "Variation_Selector", "VS", "White_Space", "space", "XID_Continue", "XIDC",
        "XID_Start", "XIDS"};
    for (size_t b = 0; !eq && b < sizeof(binary) / sizeof(binary[0]); b++)
        if (!strcmp(name, binary[b]))
            return sd_er_refuse(c, SD_ECMARE_UNSUPPORTED, "\\%c{%s}: a binary property, which the harness does not follow "
                                "(General_Category values and Script= only)", neg, name);
    return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\%c{%s}: no Unicode property or value of that name", neg, name);
}

/* Ranges of code points, for the class escapes. */
typedef struct {
    uint32_t lo, hi;
} sd_er_range_t;

static const sd_er_range_t sd_er_digit[] = {{'0', '9'}};
static const sd_er_range_t sd_er_word[] = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
/* ECMA-262's white space and line terminators: \t \n \v \f \r, the Zs
 * category, U+2028, U+2029 and U+FEFF */
static const sd_er_range_t sd_er_space[] = {{0x09, 0x0d},     {0x20, 0x20},     {0xa0, 0xa0},     {0x1680, 0x1680}, {0x2000, 0x200a},
                                            {0x2028, 0x2029}, {0x202f, 0x202f}, {0x205f, 0x205f}, {0x3000, 0x3000}, {0xfeff, 0xfeff}};

/* \d \D \w \W \s or \S (e) as the ranges it stands for, to go inside a
 * class's brackets; the upper-case ones as the ranges between. Spelt out
 * rather than left to PCRE2: its \s is not ECMA's, and PCRE2 10.42 reads
 * \D \W \S wrongly in a negated class that also holds a \p
 * ([^\p{M}\W] matched U+1F600). */
static int sd_er_set(sd_er_t *c, char e) {
    const sd_er_range_t *r = e == 'd' || e == 'D' ? sd_er_digit : e == 'w' || e == 'W' ? sd_er_word : sd_er_space;
    size_t n = r == sd_er_digit ? 1 : r == sd_er_word ? sizeof(sd_er_word) / sizeof(*r) : sizeof(sd_er_space) / sizeof(*r);
    int neg = e >= 'A' && e <= 'Z', rc = 0;
    uint32_t next = 0; /* negated: the first code point not yet in a range */
    for (size_t k = 0; !rc && k <= n; k++) {
        uint32_t lo = k < n ? r[k].lo : 0, hi = k < n ? r[k].hi : 0;
        if (neg) {
            lo = next, hi = k < n ? r[k].lo - 1 : 0x10ffff;
            if (k < n) next = r[k].hi + 1;
            if (lo > hi) continue;
        } else if (k == n) {
            break;
        }
        rc = sd_er_emit_cp(c, lo);
        if (!rc && hi > lo) rc = sd_er_emits(c, "-");
        if (!rc && hi > lo) rc = sd_er_emit_cp(c, hi);
    }
    return rc;
}

/* The character escape at c->i (a backslash), inside a class or not: its
 * code point in *cp and c->i left on its last byte, 1; 0 when it is an
 * escape of another kind (\d \s \w \p, \b and \B outside a class, \k,
 * \1...), the caller's; -1 refused. */
static int sd_er_char_escape(sd_er_t *c, int in_class, uint32_t *cp) {
    if (c->i + 1 >= c->n) return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a \\ at the end");
    char e = c->s[c->i + 1];
    size_t end = c->i + 1;
    long v;
    switch (e) {
    case 't': *cp = '\t'; break;
    case 'n': *cp = '\n'; break;
    case 'v': *cp = '\v'; break;
    case 'f': *cp = '\f'; break;
    case 'r': *cp = '\r'; break;
    case 'b': /* a word boundary, in a class a backspace */
        if (!in_class) return 0;
        *cp = '\b';
        break;
    case '0':
        if (c->i + 2 < c->n && c->s[c->i + 2] >= '0' && c->s[c->i + 2] <= '9')
            return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\0 followed by a digit (an octal escape)");
        *cp = 0;
        break;
    case 'c': {
        char l = c->i + 2 < c->n ? c->s[c->i + 2] : 0;
        if (!((l >= 'A' && l <= 'Z') || (l >= 'a' && l <= 'z')))
            return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\c is not followed by a letter");
        *cp = (uint32_t)(l & 0x1f), end = c->i + 2;
        break;
    }
    case 'x':
        if ((v = sd_er_hexn(c, c->i + 2, 2)) < 0) return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\x is not followed by 2 hex digits");
        *cp = (uint32_t)v, end = c->i + 3;
        break;
    case 'u':
        if ((v = sd_er_u(c, c->i, &end)) < 0)
            return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, c->i + 2 < c->n && c->s[c->i + 2] == '{'
                                                            ? "\\u{...} is not a code point's hex digits in braces"
                                                            : "\\u is not followed by 4 hex digits");
        if (v >= 0xd800 && v <= 0xdfff)
            return sd_er_refuse(c, SD_ECMARE_UNSUPPORTED, "\\u%04lX is a lone surrogate, which no UTF-8 string holds", v);
        *cp = (uint32_t)v;
        break;
    case 'd': case 'D': case 'w': case 'W': case 's': case 'S': case 'p': case 'P': case 'B': case 'k':
        return 0;
    default:
        if (e >= '1' && e <= '9') return 0;
        if ((e >= 'A' && e <= 'Z') || (e >= 'a' && e <= 'z'))
            return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\%c is no ECMA-262 escape%s", e,
                                e == 'A' || e == 'Z' || e == 'z' || e == 'G' ? " (ECMA-262 anchors are ^ and $)" : "");
        /* with the u flag \ makes a character itself only before a syntax
         * character or /, and inside a class before - (PCRE2 takes any) */
        if (!((e && strchr("^$\\.*+?()[]{}|/", e)) || (in_class && e == '-'))) {
            uint32_t at = 0;
            sd_util_utf8_decode(c->s + c->i + 1, c->n - c->i - 1, &at);
            char shown[24];
            snprintf(shown, sizeof(shown), e > ' ' && e < 0x7f ? "\\%c" : "\\ before U+%04X", e > ' ' && e < 0x7f ? (unsigned)e : (unsigned)at);
            return sd_er_refuse(c, SD_ECMARE_NOT_ECMA,
                                "%s is no ECMA-262 escape (with the u flag \\ escapes only ^ $ \\ . * + ? ( ) [ ] { } | /%s)", shown,
                                in_class ? " and, in a class, -" : "");
        }
        *cp = (uint32_t)e;
    }
    c->i = end;
    return 1;
}

/* The escape at c->i (a backslash) outside a class; c->i left on its
 * last byte. */
static int sd_er_escape(sd_er_t *c) {
    uint32_t cp;
    int rc = sd_er_char_escape(c, 0, &cp);
    if (rc) return rc < 0 ? rc : sd_er_emit_cp(c, cp);
    char e = c->s[c->i + 1];
    char two[3] = {'\\', e, 0};
    switch (e) {
    case 'd': case 'D': case 'w': case 'W': case 's': case 'S':
        c->i++;
        rc = sd_er_emits(c, "[");
        if (!rc) rc = sd_er_set(c, e);
        return rc ? rc : sd_er_emits(c, "]");
    case 'b': case 'B':
        c->i++;
        return sd_er_emits(c, two);
    case 'p': case 'P':
        return sd_er_property(c);
    case 'k': {
        size_t end;
        if (c->i + 2 >= c->n || c->s[c->i + 2] != '<')
            return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\k is not a reference \\k<name> to a named group");
        int name = sd_er_name(c, c->i + 3, &end);
        if (name < 0) return -1;
        c->refs[c->nrefs++] = (sd_er_ref_t){.name = name};
        char ref[32];
        snprintf(ref, sizeof(ref), "\\k<g%d>", name);
        c->i = end;
        return sd_er_emits(c, ref);
    }
    default: /* \1 to \9 */
        if (c->i + 2 < c->n && c->s[c->i + 2] >= '0' && c->s[c->i + 2] <= '9')
            return sd_er_refuse(c, SD_ECMARE_UNSUPPORTED, "a backreference above \\9");
        c->refs[c->nrefs++] = (sd_er_ref_t){.num = (unsigned)(e - '0'), .name = -1};
        c->i++;
        return sd_er_emits(c, two);
    }
}

/* One atom of a class at c->i, c->i left on its last byte: a character
 * (1, its code point in *cp, not yet written), a class escape (0, written
 * already), or -1 refused. */
static int sd_er_class_atom(sd_er_t *c, uint32_t *cp) {
    if (c->s[c->i] != '\\') {
        c->i += sd_util_utf8_decode(c->s + c->i, c->n - c->i, cp) - 1; /* the pattern is UTF-8: checked first */
        return 1;
    }
    int rc = sd_er_char_escape(c, 1, cp);
    if (rc) return rc;
    char e = c->s[c->i + 1];
    if (e == 'p' || e == 'P') return sd_er_property(c);
    if (e == 'B' || e == 'k') return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\%c inside a class", e);
    if (e >= '1' && e <= '9') return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "\\%c inside a class (an octal escape)", e);
    c->i++;
    return sd_er_set(c, e);
}

/* A character class from the [ at c->i to its ], c->i left on the ]: its
 * atoms and ranges read as ECMA-262 reads them (a range is of two
 * characters, in order; [ is itself) and written out for PCRE2. The empty
 * class is written as one of every code point negated, and its negation
 * as that class: PCRE2 10.42 read []* and []? as matching nothing. */
static int sd_er_class(sd_er_t *c) {
    size_t start = ++c->i;
    int neg = c->i < c->n && c->s[c->i] == '^';
    if (neg) start = ++c->i;
    int empty = c->i < c->n && c->s[c->i] == ']';
    int rc = sd_er_emits(c, neg != empty ? "[^" : "[");
    if (!rc && empty) rc = sd_er_set(c, 'D');
    if (!rc && empty) rc = sd_er_set(c, 'd');
    while (!rc && c->i < c->n && c->s[c->i] != ']') {
        uint32_t a, b;
        int ra = sd_er_class_atom(c, &a), rb = 1;
        if (ra < 0) return -1;
        c->i++;
        if (c->i + 1 < c->n && c->s[c->i] == '-' && c->s[c->i + 1] != ']') {
            c->i++;
            if ((rb = sd_er_class_atom(c, &b)) < 0) return -1;
            c->i++;
            if (!ra || !rb)
                return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a range from or to a class escape inside a class (write the - first or last)");
            if (a > b) return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a range U+%04X-U+%04X out of order inside a class", a, b);
            rc = sd_er_emit_cp(c, a);
            if (!rc) rc = sd_er_emits(c, "-");
            if (!rc) rc = sd_er_emit_cp(c, b);
        } else if (ra) {
            rc = sd_er_emit_cp(c, a);
        }
    }
    if (rc) return rc;
    if (c->i >= c->n) return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a [ without its ]");
    /* [[:alpha:]] reads as the class [[:alpha:] and a lone ]: named there */
    if (c->i - start >= 4 && c->s[start] == '[' && c->s[start + 1] && strchr(":.=", c->s[start + 1]) && c->s[c->i - 1] == c->s[start + 1])
        c->posix = c->s[start + 1];
    return sd_er_emits(c, "]");
}

/* A group's opening at c->i: (, (?:, (?=, (?!, (?<=, (?<!, (?<name>;
 * c->i left on its last byte. */
static int sd_er_group(sd_er_t *c) {
    const char *p = c->s + c->i;
    size_t left = c->n - c->i, n = 1;
    int look = 0;
    if (left > 1 && p[1] == '*') return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "(* (a PCRE verb or option)");
    if (c->depth == SD_ECMARE_NEST)
        return sd_er_refuse(c, SD_ECMARE_UNSUPPORTED, "past what the harness compiles (parentheses nested more than %d deep)", SD_ECMARE_NEST);
    char k = left > 2 && p[1] == '?' ? p[2] : 0;
    if (left > 1 && p[1] == '?' && !(k == ':' || k == '=' || k == '!' || k == '<')) {
        const char *what = k == '>' ? "an atomic group" : k == '|' ? "a branch reset" : k == '#' ? "a comment" : k == '(' ? "a conditional"
                           : k == 'R' || k == '&' || k == '+' || (k >= '0' && k <= '9') ? "recursion or a subroutine call"
                           : k == 'P' || k == '\'' ? "a Python or Perl named group" : k == 'C' ? "a callout"
                           : (k >= 'a' && k <= 'z') || (k >= 'A' && k <= 'Z') || k == '-' || k == '^' || k == ')' ? "inline flags"
                           : "no group ECMA-262 has";
        /* the character named only when it is printable ASCII: the message stays UTF-8 */
        if (k > ' ' && k < 0x7f) return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "(?%c (%s)", k, what);
        return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "(? before %s (%s)", k ? "a character no group opens with" : "the end", what);
    }
    if (k == ':' || k == '=' || k == '!') {
        n = 3, look = k != ':';
    } else if (k == '<' && left > 3 && (p[3] == '=' || p[3] == '!')) {
        n = 4, look = 1;
    } else if (k == '<') {
        size_t end;
        int name = sd_er_name(c, c->i + 3, &end);
        if (name < 0) return -1;
        char open[32];
        snprintf(open, sizeof(open), "(?<g%d>", name);
        c->open_groups[c->depth] = c->groups++;
        c->open[c->depth++] = 0;
        if (!c->names[name].group) c->names[name].group = c->groups; /* a second is PCRE2's to refuse */
        c->last = SD_ER_NOTHING;
        c->i = end;
        return sd_er_emits(c, open);
    }
    c->open_groups[c->depth] = c->groups;
    if (n == 1) c->groups++;
    c->open[c->depth++] = (char)look;
    c->last = SD_ER_NOTHING;
    c->i += n - 1;
    return sd_er_emit(c, p, n);
}

/* A group's closing ) at c->i: what it closed is what a quantifier after
 * it would repeat. */
static int sd_er_close(sd_er_t *c) {
    if (!c->depth) return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a ) without its (");
    c->last = c->open[--c->depth] ? SD_ER_ASSERTION : SD_ER_ATOM;
    c->last_from = c->open_groups[c->depth], c->last_to = c->groups;
    return sd_er_emits(c, ")");
}

/* A quantifier at c->i (* + ? {n} {n,} {n,m}, lazy with a ? after it),
 * copied; c->i left on its last byte. With the u flag ECMA-262 repeats
 * no assertion (PCRE2 repeats a lookahead). */
static int sd_er_quantifier(sd_er_t *c) {
    size_t j = c->i;
    int many = c->s[c->i] != '?'; /* whether it may repeat more than once */
    if (c->s[c->i] == '{') {
        size_t d1 = 0, d2 = 0, comma = 0;
        for (j++; j < c->n && c->s[j] >= '0' && c->s[j] <= '9'; j++) d1++;
        if (d1 && j < c->n && c->s[j] == ',')
            for (comma = j++; j < c->n && c->s[j] >= '0' && c->s[j] <= '9'; j++) d2++;
        if (!d1 || j >= c->n || c->s[j] != '}')
            return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a { that starts no quantifier {n}, {n,} or {n,m} (write \\{)");
        const char *top = comma ? c->s + comma + 1 : c->s + c->i + 1; /* {n,m}'s m, {n}'s n; {n,} has none */
        size_t k = 0, digits = comma ? d2 : d1;
        while (k + 1 < digits && top[k] == '0') k++;
        many = (comma && !d2) || digits - k > 1 || top[k] > '1';
    }
    if (c->last == SD_ER_NOTHING)
        return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a quantifier %.*s with nothing before it to repeat", (int)(j + 1 - c->i), c->s + c->i);
    if (c->last == SD_ER_ASSERTION)
        return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a quantifier %.*s after an assertion (^ $ \\b \\B, a lookahead or lookbehind: "
                            "with the u flag ECMA-262 repeats none)", (int)(j + 1 - c->i), c->s + c->i);
    if (j + 1 < c->n && c->s[j + 1] == '+')
        return sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a possessive quantifier (%.*s+)", (int)(j + 1 - c->i), c->s + c->i);
    if (j + 1 < c->n && c->s[j + 1] == '?') j++;
    for (unsigned g = c->last_from + 1; many && g <= c->last_to; g++) c->repeated[g] = 1;
    int rc = sd_er_emit(c, c->s + c->i, j + 1 - c->i);
    c->i = j;
    c->last = SD_ER_NOTHING;
    return rc;
}

/* Each backreference against the group it names: one to a group inside a
 * quantifier that repeats is refused as past what the harness follows.
 * ECMA-262 forgets a group's text at the start of each repetition, PCRE2
 * keeps the last one: ^(?:(a)|b)*\1$ matches "ab" in ECMA-262 (the b
 * repetition left group 1 unset, so \1 is empty) and not in PCRE2. A
 * reference to no group is PCRE2's to refuse. */
static int sd_er_refs(sd_er_t *c) {
    for (size_t k = 0; k < c->nrefs; k++) {
        const sd_er_ref_t *r = &c->refs[k];
        unsigned g = r->name < 0 ? r->num : c->names[r->name].group;
        if (!g || g > c->groups || !c->repeated[g]) continue;
        if (r->name < 0)
            return sd_er_refuse(c, SD_ECMARE_UNSUPPORTED, "\\%u refers to a group inside a quantifier that repeats it (ECMA-262 "
                                "forgets the group's text at each repetition, PCRE2 keeps the last)", g);
        const sd_er_name_t *nm = &c->names[r->name];
        return sd_er_refuse(c, SD_ECMARE_UNSUPPORTED, "\\k<%.*s> refers to a group inside a quantifier that repeats it (ECMA-262 "
                            "forgets the group's text at each repetition, PCRE2 keeps the last)", (int)nm->len, c->namebuf + nm->off);
    }
    return 0;
}

/* The whole pattern as PCRE2 is to read it, into c->out. */
static int sd_er_read(sd_er_t *c) {
    int rc = 0;
    for (c->i = 0; !rc && c->i < c->n; c->i++) {
        char ch = c->s[c->i];
        sd_er_last_t last = SD_ER_ATOM;
        switch (ch) {
        case '\\': {
            size_t at = c->i;
            rc = sd_er_escape(c);
            if (c->i == at + 1 && (c->s[c->i] == 'b' || c->s[c->i] == 'B')) last = SD_ER_ASSERTION;
            break;
        }
        case '[': rc = sd_er_class(c); break;
        case '(': rc = sd_er_group(c); continue;
        case ')': rc = sd_er_close(c); continue;
        case '.': rc = sd_er_emits(c, SD_ECMARE_DOT); break;
        case '{': case '*': case '+': case '?': rc = sd_er_quantifier(c); continue;
        case '^': case '$':
            rc = sd_er_emit(c, &ch, 1);
            last = SD_ER_ASSERTION;
            break;
        case '|':
            rc = sd_er_emit(c, &ch, 1);
            last = SD_ER_NOTHING;
            break;
        case '}': case ']':
            if (ch == ']' && c->posix)
                rc = sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "[%c...%c] inside a class (a POSIX class: ECMA-262 has none)", c->posix, c->posix);
            else
                rc = sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a lone %c (write \\%c)", ch, ch);
            break;
        case 0: rc = sd_er_emits(c, "\\x00"); break;
        default: rc = sd_er_emit(c, &ch, 1);
        }
        c->last = last;
        c->last_from = c->last_to = c->groups;
    }
    if (!rc && c->depth) rc = sd_er_refuse(c, SD_ECMARE_NOT_ECMA, "a ( without its )");
    return rc ? rc : sd_er_refs(c);
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
        if (!(k = sd_util_utf8_decode(src + at, len - at, &cp))) {
            snprintf(err, errlen, "not UTF-8 at byte %zu", at);
            *refusal = SD_ECMARE_NOT_ECMA;
            return NULL;
        }
    }
    /* a name takes 4 bytes at the least, (?<a> or \k<a>, and its characters no more than their text */
    c.names = malloc((len / 4 + 1) * sizeof(*c.names));
    c.namebuf = malloc(len + 1);
    /* a group takes a ( at the least, a backreference 2 bytes */
    c.repeated = calloc(len + 2, 1);
    c.refs = malloc((len / 2 + 1) * sizeof(*c.refs));
    int rc = c.names && c.namebuf && c.repeated && c.refs ? sd_er_read(&c) : sd_er_refuse(&c, SD_ECMARE_UNSUPPORTED, "out of memory");
    free(c.names), free(c.namebuf), free(c.repeated), free(c.refs);
    pcre2_code_free(c.id[0]), pcre2_code_free(c.id[1]);
    if (rc || sd_er_emit(&c, "", 0)) {
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
        /* no auto-possessification: PCRE2 10.42 made \P{P}+ possessive
         * before \P{N}, as if the two could match no character alike,
         * and \P{P}+\P{N} did not match "ab" */
        re->code = pcre2_compile((PCRE2_SPTR)c.out, c.olen,
                                 PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_NEVER_BACKSLASH_C | PCRE2_DOLLAR_ENDONLY |
                                     PCRE2_MATCH_UNSET_BACKREF | PCRE2_NEVER_UCP | PCRE2_NO_AUTO_POSSESS,
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
