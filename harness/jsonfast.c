/* jsonfast.c - the id of a sink row without a parser, for the rows that are
 * plain (see jsonfast.h).
 *
 * One pass over the row, validating as it goes, accepting only a grammar
 * on which its answer and the full parser's (jsonscan.cpp) cannot differ:
 *
 *   row    = ws "{" ws [ member *( ws "," ws member ) ] ws "}" ws
 *   member = string ws ":" ws value
 *   value  = string / number / "true" / "false" / "null"
 *   string = '"' *( %x20-7F except '"' and '\' ) '"'
 *   ws     = *space
 *
 * and numbers by JSON's own grammar, without an exponent and at most 20
 * characters long (always in the full parser's range). Anything else - an escape, a byte
 * outside ASCII (UTF-8 is the full parser's to check), a tab or any other
 * control byte (even between tokens), a nested object or
 * array, a control byte, a number in the id or time field that is not a
 * plain run of at most 18 digits - is SD_JSONFAST_UNSURE, and the caller
 * asks the full parser. Duplicate keys: the last one wins, as there. */
#include "jsonfast.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Bytes a plain string may hold, as is. */
static const unsigned char sd_jf_plain[256] = {
#define R16(v) v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v
    R16(0), R16(0), /* 0x00-0x1f: control bytes */
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x20-0x2f: '"' is not */
    R16(1), R16(1),
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x50-0x5f: '\' is not */
    R16(1), R16(1),
    R16(0), R16(0), R16(0), R16(0), R16(0), R16(0), R16(0), R16(0) /* 0x80-0xff: the full parser's */
#undef R16
};

/* The quotes of a row up to this many bytes are found through a bitmap
 * made in the same pass that checks the row; longer rows use memchr. */
#define SD_JF_MAP 1024

typedef struct {
    const char *start, *p, *end;
    int mapped;                          /* quotes[] holds the row's quotes */
    uint64_t quotes[SD_JF_MAP / 64];
} sd_jf_t;

/* Whitespace of a clean row: spaces. */
static void sd_jf_ws(sd_jf_t *c) {
    while (c->p < c->end && *c->p == ' ') c->p++;
}

/* A row whose every byte is plain (a string may hold it as is), a quote or
 * a space: no escape, no control byte (so no tab or newline between tokens
 * either), nothing outside ASCII. Checked sixteen bytes at a time, marking
 * the quotes in c->quotes on the way. */
static int sd_jf_clean(sd_jf_t *c, const char *p, size_t len) {
    size_t i = 0;
    int map = len <= SD_JF_MAP;
    c->mapped = map;
    if (map) memset(c->quotes, 0, sizeof(uint64_t) * ((len + 63) / 64));
#ifdef __SSE2__
    /* '\\', and anything below 0x20 as a signed byte: controls and 0x80 up */
    const __m128i bs = _mm_set1_epi8('\\'), lo = _mm_set1_epi8(0x20), quote = _mm_set1_epi8('"');
    for (; i + 16 <= len; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        if (_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, bs), _mm_cmplt_epi8(v, lo)))) return 0;
        if (map) c->quotes[i / 64] |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)) << (i % 64);
    }
#endif
    for (; i < len; i++) {
        if (p[i] == '"') {
            if (map) c->quotes[i / 64] |= (uint64_t)1 << (i % 64);
        } else if (!sd_jf_plain[(unsigned char)p[i]]) {
            return 0;
        }
    }
    return 1;
}

/* A string of a clean row: its bytes in [*s, *s + *n); 0, or -1 when
 * there is none. */
static int sd_jf_string(sd_jf_t *c, const char **s, size_t *n) {
    if (c->p >= c->end || *c->p != '"') return -1;
    const char *q = NULL;
    size_t from = (size_t)(c->p + 1 - c->start), len = (size_t)(c->end - c->start);
    if (c->mapped) {
        for (size_t w = from / 64; w * 64 < len; w++) {
            uint64_t bits = c->quotes[w] & (w == from / 64 ? ~(uint64_t)0 << (from % 64) : ~(uint64_t)0);
            if (bits) {
                q = c->start + w * 64 + (size_t)__builtin_ctzll(bits);
                break;
            }
        }
    } else {
        q = memchr(c->p + 1, '"', (size_t)(c->end - c->p - 1));
    }
    if (!q) return -1;
    *s = c->p + 1;
    *n = (size_t)(q - *s);
    c->p = q + 1;
    return 0;
}

/* A JSON number; *digits_only set when it is a plain run of digits. */
static int sd_jf_number(sd_jf_t *c, const char **s, size_t *n, int *digits_only) {
    const char *q = c->p, *e = c->end;
    *digits_only = 1;
    if (q < e && *q == '-') q++, *digits_only = 0;
    if (q >= e) return -1;
    if (*q == '0') q++;
    else if (*q >= '1' && *q <= '9')
        while (q < e && *q >= '0' && *q <= '9') q++;
    else return -1;
    if (q < e && *q == '.') {
        *digits_only = 0;
        const char *f = ++q;
        while (q < e && *q >= '0' && *q <= '9') q++;
        if (q == f) return -1;
    }
    /* an exponent, or a long number, may be out of the full parser's
     * range (it refuses the whole row then): not plain */
    if ((q < e && (*q == 'e' || *q == 'E')) || q - c->p > 20) return -1;
    *s = c->p;
    *n = (size_t)(q - c->p);
    c->p = q;
    return 0;
}

static int sd_jf_word(sd_jf_t *c, const char *w, size_t n) {
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n)) return -1;
    c->p += n;
    return 0;
}

enum { SD_JF_STR, SD_JF_NUM, SD_JF_OTHER };

/* The time field's value as the full parser reads it. */
static int64_t sd_jf_time(int type, const char *v, size_t n, int (*parse_time)(const char *, int64_t *)) {
    if (type == SD_JF_NUM) return strtoll(v, NULL, 10); /* digits only, at most 18 */
    if (type != SD_JF_STR) return INT64_MIN;
    char tb[64];
    if (n >= sizeof(tb)) return INT64_MIN;
    memcpy(tb, v, n);
    tb[n] = 0;
    char *end;
    long long t = strtoll(tb, &end, 10);
    if (end != tb && !*end) return t;
    int64_t parsed;
    if (parse_time && !parse_time(tb, &parsed)) return parsed;
    return INT64_MIN;
}

int sd_jsonfast_id_time(const char *json, size_t len, const char *field, char *out, size_t outlen, const char *time_field,
                        int64_t *t_ms, int (*parse_time)(const char *, int64_t *)) {
    if (t_ms) *t_ms = INT64_MIN;
    if (!json || !len || !outlen) return -1; /* as the full parser */
    size_t flen = strlen(field), tlen = time_field ? strlen(time_field) : 0;
    sd_jf_t c;
    c.start = c.p = json;
    c.end = json + len;
    if (!sd_jf_clean(&c, json, len)) return SD_JSONFAST_UNSURE;
    const char *id = NULL, *tv = NULL;
    size_t idn = 0, tn = 0;
    int idtype = SD_JF_OTHER, ttype = SD_JF_OTHER, have_id = 0, have_t = 0;
    sd_jf_ws(&c);
    if (c.p >= c.end || *c.p++ != '{') return SD_JSONFAST_UNSURE;
    sd_jf_ws(&c);
    if (c.p < c.end && *c.p == '}') {
        c.p++;
    } else {
        for (;;) {
            const char *k, *v = NULL;
            size_t kn, vn = 0;
            int type = SD_JF_OTHER, digits = 0;
            if (sd_jf_string(&c, &k, &kn)) return SD_JSONFAST_UNSURE;
            sd_jf_ws(&c);
            if (c.p >= c.end || *c.p++ != ':') return SD_JSONFAST_UNSURE;
            sd_jf_ws(&c);
            if (c.p >= c.end) return SD_JSONFAST_UNSURE;
            char ch = *c.p;
            if (ch == '"') {
                if (sd_jf_string(&c, &v, &vn)) return SD_JSONFAST_UNSURE;
                type = SD_JF_STR;
            } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
                if (sd_jf_number(&c, &v, &vn, &digits)) return SD_JSONFAST_UNSURE;
                type = SD_JF_NUM;
            } else if (sd_jf_word(&c, "true", 4) && sd_jf_word(&c, "false", 5) && sd_jf_word(&c, "null", 4)) {
                return SD_JSONFAST_UNSURE; /* an object, an array, or not JSON */
            }
            int is_id = kn == flen && !memcmp(k, field, kn), is_t = time_field && kn == tlen && !memcmp(k, time_field, kn);
            /* a number the full parser might not read as a plain int64 */
            if ((is_id || is_t) && type == SD_JF_NUM && (!digits || vn > 18)) return SD_JSONFAST_UNSURE;
            if (is_id) id = v, idn = vn, idtype = type, have_id = 1;
            if (is_t) tv = v, tn = vn, ttype = type, have_t = 1;
            sd_jf_ws(&c);
            if (c.p < c.end && *c.p == ',') {
                c.p++;
                sd_jf_ws(&c);
                continue;
            }
            if (c.p < c.end && *c.p == '}') {
                c.p++;
                break;
            }
            return SD_JSONFAST_UNSURE;
        }
    }
    sd_jf_ws(&c);
    if (c.p != c.end) return SD_JSONFAST_UNSURE;
    int n = -1;
    if (have_id && idtype != SD_JF_OTHER) {
        size_t k = idn < outlen - 1 ? idn : outlen - 1;
        memcpy(out, id, k);
        out[k] = 0;
        n = (int)k;
    }
    if (have_t && t_ms) *t_ms = sd_jf_time(ttype, tv, tn, parse_time);
    return n;
}
