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
 * plain run of at most 18 digits, a row over 1024 bytes - is
 * SD_JSONFAST_UNSURE, and the caller asks the full parser. Duplicate keys:
 * the last one wins, as there. */
#include "jsonfast.h"

#include <limits.h>
#include <stdint.h>
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

/* Rows up to this many bytes take the fast path; a longer one is the full
 * parser's (it is as fast there). */
#define SD_JF_MAX 1024

#ifdef __SSE2__
/* 64 bytes: *quotes gets a bit for each quote; nonzero when one of them is
 * not plain ('\\', and anything below 0x20 as a signed byte: control
 * bytes and 0x80 up). */
static inline __attribute__((always_inline)) uint64_t sd_jf_chunk(const char *p, uint64_t *quotes) {
    const __m128i bs = _mm_set1_epi8('\\'), lo = _mm_set1_epi8(0x20), quote = _mm_set1_epi8('"');
    uint64_t bad = 0, q = 0;
    for (int k = 0; k < 4; k++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
        bad |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, bs), _mm_cmplt_epi8(v, lo))) << (16 * k);
        q |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)) << (16 * k);
    }
    *quotes = q;
    return bad;
}
#endif

/* A row whose every byte is plain (a string may hold it as is), a quote or
 * a space: no escape, no control byte (so no tab or newline between tokens
 * either), nothing outside ASCII; its quotes as a bitmap, bit i of
 * quotes[i / 64] for byte i. Checked 64 bytes at a time, the last chunk
 * being the row's last 64 bytes shifted past the ones already seen (a row
 * under 64 bytes byte by byte). */
static int sd_jf_clean(const char *p, size_t len, uint64_t *quotes) {
    size_t i = 0;
#ifdef __SSE2__
    if (len >= 64) {
        size_t w = 0;
        for (; i + 64 <= len; i += 64, w++)
            if (sd_jf_chunk(p + i, &quotes[w])) return 0;
        if (i < len) {
            uint64_t q;
            unsigned shift = (unsigned)(64 - (len - i));
            if (sd_jf_chunk(p + len - 64, &q) >> shift) return 0;
            quotes[w] = q >> shift;
        }
        return 1;
    }
#endif
    memset(quotes, 0, sizeof(uint64_t) * ((len + 63) / 64));
    for (; i < len; i++) {
        if (p[i] == '"') quotes[i / 64] |= (uint64_t)1 << (i % 64);
        else if (!sd_jf_plain[(unsigned char)p[i]]) return 0;
    }
    return 1;
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

/* A key of kn bytes at k is the field f of fn bytes (f8: its first 8). */
static inline __attribute__((always_inline)) int sd_jf_is(const char *k, size_t kn, const char *f, size_t fn, uint64_t f8) {
    if (kn != fn) return 0;
    if (fn < 8) return !memcmp(k, f, fn);
    uint64_t k8;
    memcpy(&k8, k, 8);
    return k8 == f8 && !memcmp(k + 8, f + 8, fn - 8);
}

/* The walk below keeps its cursor in locals: p the next byte, and the
 * quotes not read yet as the word qw of quotes[] with the bits qb left. */
/* The walk reads bytes up to the row's last one but spaces, which must be
 * its closing '}': so every byte it looks at before that one is there to
 * read without a bound check, as long as it stops at a '}'. */
#define SD_JF_WS() while (*p == ' ') p++
/* q = the next quote not read yet, or the row is not plain */
#define SD_JF_NEXTQ(q)                                                        \
    do {                                                                      \
        while (!qb) {                                                         \
            if (++qw >= nwords) return SD_JSONFAST_UNSURE;                    \
            qb = quotes[qw];                                                  \
        }                                                                     \
        (q) = json + qw * 64 + (size_t)__builtin_ctzll(qb);                   \
        qb &= qb - 1;                                                         \
    } while (0)
/* a string at p (its opening quote is the next one not read: strings are
 * read in order and nothing else holds a quote): its bytes [s, s + n) */
#define SD_JF_STRING(s, n)                                                    \
    do {                                                                      \
        const char *q_;                                                       \
        if (*p != '"') return SD_JSONFAST_UNSURE;                             \
        SD_JF_NEXTQ(q_);                                                      \
        if (q_ != p) return SD_JSONFAST_UNSURE;                               \
        SD_JF_NEXTQ(q_);                                                      \
        (s) = p + 1;                                                          \
        (n) = (size_t)(q_ - (s));                                             \
        p = q_ + 1;                                                           \
    } while (0)

int sd_jsonfast_id_time(const char *json, size_t len, const char *field, char *out, size_t outlen, const char *time_field,
                        int64_t *t_ms, int (*parse_time)(const char *, int64_t *)) {
    if (t_ms) *t_ms = INT64_MIN;
    if (!json || !len || !outlen) return -1; /* as the full parser */
    if (len > SD_JF_MAX) return SD_JSONFAST_UNSURE;
    uint64_t quotes[SD_JF_MAX / 64];
    if (!sd_jf_clean(json, len, quotes)) return SD_JSONFAST_UNSURE;
    size_t flen = strlen(field), tlen = time_field ? strlen(time_field) : 0;
    uint64_t f8 = 0, t8 = 0;
    if (flen >= 8) memcpy(&f8, field, 8);
    if (tlen >= 8) memcpy(&t8, time_field, 8);
    const char *p = json, *end = json + len, *last = end;
    while (last > json && last[-1] == ' ') last--;
    if (last == json || last[-1] != '}') return SD_JSONFAST_UNSURE;
    size_t nwords = (len + 63) / 64, qw = 0;
    uint64_t qb = quotes[0];
    const char *id = NULL, *tv = NULL;
    size_t idn = 0, tn = 0;
    int idtype = SD_JF_OTHER, ttype = SD_JF_OTHER, have_id = 0, have_t = 0;
    SD_JF_WS();
    if (*p++ != '{') return SD_JSONFAST_UNSURE;
    SD_JF_WS();
    if (*p == '}') {
        p++;
    } else {
        for (;;) {
            const char *k, *v;
            size_t kn, vn = 0;
            int type;
            SD_JF_STRING(k, kn);
            SD_JF_WS();
            if (*p++ != ':') return SD_JSONFAST_UNSURE;
            SD_JF_WS();
            char ch = *p;
            int digits = 0;
            if (ch == '"') {
                SD_JF_STRING(v, vn);
                type = SD_JF_STR;
            } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
                /* JSON's number; digits when it is a plain run of digits */
                const char *q = v = p;
                digits = 1;
                if (*q == '-') q++, digits = 0;
                if (*q == '0') q++;
                else if (*q >= '1' && *q <= '9')
                    while (*q >= '0' && *q <= '9') q++;
                else return SD_JSONFAST_UNSURE;
                if (*q == '.') {
                    digits = 0;
                    const char *f = ++q;
                    while (*q >= '0' && *q <= '9') q++;
                    if (q == f) return SD_JSONFAST_UNSURE;
                }
                /* an exponent, or a long number, may be out of the full
                 * parser's range (it refuses the whole row then): not plain */
                if (*q == 'e' || *q == 'E' || q - p > 20) return SD_JSONFAST_UNSURE;
                vn = (size_t)(q - p);
                p = q;
                type = SD_JF_NUM;
            } else {
                const char *w = ch == 't' ? "true" : ch == 'f' ? "false" : "null";
                size_t wn = ch == 'f' ? 5 : 4;
                if ((size_t)(end - p) < wn || memcmp(p, w, wn)) return SD_JSONFAST_UNSURE; /* an object, an array, or not JSON */
                v = p;
                p += wn;
                type = SD_JF_OTHER;
            }
            int is_id = sd_jf_is(k, kn, field, flen, f8), is_t = time_field && sd_jf_is(k, kn, time_field, tlen, t8);
            /* a number the full parser might not read as a plain int64 */
            if ((is_id || is_t) && type == SD_JF_NUM && (!digits || vn > 18)) return SD_JSONFAST_UNSURE;
            if (is_id) id = v, idn = vn, idtype = type, have_id = 1;
            if (is_t) tv = v, tn = vn, ttype = type, have_t = 1;
            SD_JF_WS();
            if (*p == ',') {
                p++;
                SD_JF_WS();
                continue;
            }
            if (*p == '}') {
                p++;
                break;
            }
            return SD_JSONFAST_UNSURE;
        }
    }
    while (p < end && *p == ' ') p++;
    if (p != end) return SD_JSONFAST_UNSURE;
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
