/* jsonfast.c - the id of a sink row without a parser, for the rows that are
 * plain (see jsonfast.h).
 *
 * Two passes over the row: its bytes 64 at a time (SSE2, or AVX2 where the
 * CPU has it), each a quote, a space or a byte a plain string may hold, and
 * a bitmap of its quotes (for a line of a block, this pass also finds the
 * newline that ends it); then a walk over its tokens that takes where each
 * string ends from that bitmap, accepting only a grammar on which its
 * answer and the full parser's (jsonscan.cpp) cannot differ:
 *
 *   row    = ws "{" ws [ member *( ws "," ws member ) ] ws "}" ws
 *   member = string ws ":" ws value
 *   value  = string / number / "true" / "false" / "null"
 *   string = '"' *( %x20-7F except '"' and '\' ) '"'
 *   ws     = *space
 *
 * and numbers by JSON's own grammar, without an exponent and at most 20
 * characters long (always in the full parser's range). Anything else - an
 * escape, a byte outside ASCII (UTF-8 is the full parser's to check), a tab
 * or any other control byte (even between tokens), a nested object or
 * array, a number in the id or time field that is not a plain run of at
 * most 18 digits, a row over 1024 bytes - is SD_JSONFAST_UNSURE, and the
 * caller asks the full parser. Duplicate keys: the last one wins, as
 * there.
 *
 * A reader that keeps a shape (sd_jsonfast_line) skips the walk for a row
 * whose bytes around its values are the last walked row's: the same keys,
 * literals and spacing, each string value running to its closing quote and
 * each number by the grammar above. The walk would see the same tokens in
 * such a row, so the answer is the one it would give. */
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

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SD_JF_AVX2 1
/* The same chunk in two 32-byte loads, where the CPU has them (asked once,
 * as the program loads). */
static int sd_jf_has_avx2;
__attribute__((constructor)) static void sd_jf_init(void) {
    __builtin_cpu_init();
    sd_jf_has_avx2 = __builtin_cpu_supports("avx2");
}

__attribute__((target("avx2"))) static inline uint64_t sd_jf_chunk_avx2(const char *p, uint64_t *quotes) {
    const __m256i bs = _mm256_set1_epi8('\\'), lo = _mm256_set1_epi8(0x20), quote = _mm256_set1_epi8('"');
    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)p);
    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
    uint64_t bad_a = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(_mm256_cmpeq_epi8(a, bs), _mm256_cmpgt_epi8(lo, a)));
    uint64_t bad_b = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(_mm256_cmpeq_epi8(b, bs), _mm256_cmpgt_epi8(lo, b)));
    *quotes = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, quote)) |
              (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, quote)) << 32;
    return bad_a | bad_b << 32;
}
#endif

/* sd_jf_clean's loop over whole chunks and the overlapping last one, for
 * each chunk function. */
#define SD_JF_CLEAN_CHUNKS(chunk)                                             \
    do {                                                                      \
        size_t i = 0, w = 0;                                                  \
        for (; i + 64 <= len; i += 64, w++)                                   \
            if (chunk(p + i, &quotes[w])) return 0;                           \
        if (i < len) {                                                        \
            uint64_t q;                                                       \
            unsigned shift = (unsigned)(64 - (len - i));                      \
            if (chunk(p + len - 64, &q) >> shift) return 0;                   \
            quotes[w] = q >> shift;                                           \
        }                                                                     \
        return 1;                                                             \
    } while (0)

#ifdef SD_JF_AVX2
__attribute__((target("avx2"))) static int sd_jf_clean_avx2(const char *p, size_t len, uint64_t *quotes) {
    SD_JF_CLEAN_CHUNKS(sd_jf_chunk_avx2);
}
#endif

/* A row whose every byte is plain (a string may hold it as is), a quote or
 * a space: no escape, no control byte (so no tab or newline between tokens
 * either), nothing outside ASCII; its quotes as a bitmap, bit i of
 * quotes[i / 64] for byte i. Checked 64 bytes at a time, the last chunk
 * being the row's last 64 bytes shifted past the ones already seen (a row
 * under 64 bytes byte by byte). */
static int sd_jf_clean(const char *p, size_t len, uint64_t *quotes) {
#ifdef SD_JF_AVX2
    if (len >= 64 && sd_jf_has_avx2) return sd_jf_clean_avx2(p, len, quotes);
#endif
#ifdef __SSE2__
    if (len >= 64) SD_JF_CLEAN_CHUNKS(sd_jf_chunk);
#endif
    memset(quotes, 0, sizeof(uint64_t) * ((len + 63) / 64));
    for (size_t i = 0; i < len; i++) {
        if (p[i] == '"') quotes[i / 64] |= (uint64_t)1 << (i % 64);
        else if (!sd_jf_plain[(unsigned char)p[i]]) return 0;
    }
    return 1;
}

#ifdef __SSE2__
/* As sd_jf_clean for the line at p, whose end is not known yet: the bytes
 * up to the first newline in [p, p + avail), read 64 at a time and never
 * past avail. 1 when a newline comes within SD_JF_MAX bytes and every byte
 * before it is plain, with *len the row's bytes (a CR before the newline
 * not counted) and *used the line's, its newline included; else 0. */
#define SD_JF_CLEAN_LINE(chunk)                                               \
    do {                                                                      \
        for (size_t i = 0, w = 0; w < SD_JF_MAX / 64 && i + 64 <= avail; i += 64, w++) { \
            uint64_t q, bad = chunk(p + i, &q);                               \
            if (!bad) {                                                       \
                quotes[w] = q;                                                \
                continue;                                                     \
            }                                                                 \
            unsigned b = (unsigned)__builtin_ctzll(bad);                      \
            size_t at = i + b;                                                \
            if (p[at] == '\n') *used = at + 1;                                \
            else if (p[at] == '\r' && at + 1 < avail && p[at + 1] == '\n') *used = at + 2; \
            else return 0;                                                    \
            quotes[w] = b ? q & (~(uint64_t)0 >> (64 - b)) : 0;               \
            *len = at;                                                        \
            return 1;                                                         \
        }                                                                     \
        return 0;                                                             \
    } while (0)

static int sd_jf_clean_line_sse2(const char *p, size_t avail, uint64_t *quotes, size_t *len, size_t *used) {
    SD_JF_CLEAN_LINE(sd_jf_chunk);
}
#ifdef SD_JF_AVX2
__attribute__((target("avx2"))) static int sd_jf_clean_line_avx2(const char *p, size_t avail, uint64_t *quotes, size_t *len,
                                                                  size_t *used) {
    SD_JF_CLEAN_LINE(sd_jf_chunk_avx2);
}
#endif

static int sd_jf_clean_line(const char *p, size_t avail, uint64_t *quotes, size_t *len, size_t *used) {
#ifdef SD_JF_AVX2
    if (sd_jf_has_avx2) return sd_jf_clean_line_avx2(p, avail, quotes, len, used);
#endif
    return sd_jf_clean_line_sse2(p, avail, quotes, len, used);
}
#endif

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

/* The first and last 8 of n bytes at p (4 and 4 for 4 to 7 bytes; none
 * under 4 or over 16): how a key, or a piece of a shape, is compared. */
static inline __attribute__((always_inline)) void sd_jf_words(const char *p, size_t n, uint64_t *head, uint64_t *tail) {
    *head = *tail = 0;
    if (n >= 8 && n <= 16) {
        memcpy(head, p, 8);
        memcpy(tail, p + n - 8, 8);
    } else if (n >= 4 && n < 8) {
        uint32_t h, t;
        memcpy(&h, p, 4);
        memcpy(&t, p + n - 4, 4);
        *head = h, *tail = t;
    }
}

/* The n bytes at p are the n at text, whose words (sd_jf_words) are head
 * and tail. */
static inline __attribute__((always_inline)) int sd_jf_same(const char *p, size_t n, const char *text, uint64_t head,
                                                            uint64_t tail) {
    if (n >= 8) {
        if (n > 16) return !memcmp(p, text, n);
        uint64_t h, t;
        memcpy(&h, p, 8);
        memcpy(&t, p + n - 8, 8);
        return h == head && t == tail;
    }
    if (n >= 4) {
        uint32_t h, t;
        memcpy(&h, p, 4);
        memcpy(&t, p + n - 4, 4);
        return h == head && t == tail;
    }
    for (size_t k = 0; k < n; k++)
        if (p[k] != text[k]) return 0;
    return 1;
}

/* A field's name, as the walk compares keys with it. */
typedef struct {
    const char *name;
    size_t n;
    uint64_t head, tail; /* its words (sd_jf_words) */
} sd_jf_key_t;

static inline __attribute__((always_inline)) void sd_jf_key(sd_jf_key_t *f, const char *name) {
    f->name = name;
    f->n = name ? strlen(name) : SIZE_MAX;
    f->head = f->tail = 0;
    if (name) sd_jf_words(name, f->n, &f->head, &f->tail);
}

/* A key of kn bytes at k is the field f. */
static inline __attribute__((always_inline)) int sd_jf_is(const char *k, size_t kn, const sd_jf_key_t *f) {
    return kn == f->n && sd_jf_same(k, kn, f->name, f->head, f->tail);
}

/* An id of n bytes at id into out, cut to what outlen holds and ended:
 * its length, as the full parser gives it. */
static inline __attribute__((always_inline)) int sd_jf_put_id(char *out, size_t outlen, const char *id, size_t n) {
    size_t k = n < outlen - 1 ? n : outlen - 1;
    memcpy(out, id, k);
    out[k] = 0;
    return (int)k;
}

/* JSON's number at p, which stops at a byte that cannot go on with it:
 * its end, *digits 1 when it is a plain run of digits; NULL when it is not
 * a number, or not plain (an exponent, or over 20 characters, may be out of
 * the full parser's range, and it refuses the whole row then). */
static inline __attribute__((always_inline)) const char *sd_jf_number(const char *p, int *digits) {
    const char *d = p;
    *digits = 1;
    if (*d == '-') d++, *digits = 0;
    if (*d == '0') d++;
    else if (*d >= '1' && *d <= '9')
        while (*d >= '0' && *d <= '9') d++;
    else return NULL;
    if (*d == '.') {
        *digits = 0;
        const char *f = ++d;
        while (*d >= '0' && *d <= '9') d++;
        if (d == f) return NULL;
    }
    if (*d == 'e' || *d == 'E' || d - p > 20) return NULL;
    return d;
}

/* The walk below keeps its cursor p in a local, and finds where strings
 * end in pos[], the row's closing quotes in order (a quote with an odd
 * number of quotes before it; a plain row has no escape). Nothing it steps
 * over (a space, ':', ',', a number, true, false, null) holds a quote, so
 * a quote at p opens the next string not read, and the next closing quote
 * ends it. It reads bytes up to the row's last one but spaces, which must
 * be its closing '}': so every byte it looks at before that one is there
 * to read without a bound check, as long as it stops at a '}'. */
#define SD_JF_WS() while (*p == ' ') p++
/* the string at p: its bytes [s, s + n) */
#define SD_JF_STRING(s, n)                                                    \
    do {                                                                      \
        if (*p != '"' || q == qend) return SD_JSONFAST_UNSURE;                \
        (s) = p + 1;                                                          \
        p = json + *q++;                                                      \
        (n) = (size_t)(p - (s));                                              \
        p++;                                                                  \
    } while (0)

/* What a walk saw of its row, for its shape: where each string or number
 * value lies, and which ones the answer came from. */
typedef struct {
    int n;               /* values; -1: too many to keep */
    int id_slot, t_slot;
    uint16_t at[SD_JSONFAST_SLOTS], end[SD_JSONFAST_SLOTS];
    uint8_t number[SD_JSONFAST_SLOTS];
} sd_jf_seen_t;

/* The walk over a plain row (sd_jf_clean's answer, its quotes); with
 * seen, what it saw. */
static int sd_jf_walk(const char *json, size_t len, const uint64_t *quotes, const char *field, char *out, size_t outlen,
                      const char *time_field, int64_t *t_ms, int (*parse_time)(const char *, int64_t *), sd_jf_seen_t *seen) {
    const char *p = json, *end = json + len, *last = end;
    while (last > json && last[-1] == ' ') last--;
    if (last == json || last[-1] != '}') return SD_JSONFAST_UNSURE;
    uint32_t pos[SD_JF_MAX / 2];
    size_t nq = 0;
    uint64_t inside = 0;
    for (size_t w = 0, nwords = (len + 63) / 64; w < nwords; w++) {
        uint64_t x = quotes[w]; /* bit i: an odd number of quotes up to byte i */
        x ^= x << 1, x ^= x << 2, x ^= x << 4, x ^= x << 8, x ^= x << 16, x ^= x << 32;
        x ^= inside;
        inside = (uint64_t)((int64_t)x >> 63);
        for (uint64_t b = quotes[w] & ~x; b; b &= b - 1) pos[nq++] = (uint32_t)(w * 64) + (uint32_t)__builtin_ctzll(b);
    }
    if (inside) return SD_JSONFAST_UNSURE; /* a string not closed */
    const uint32_t *q = pos, *qend = pos + nq;
    sd_jf_key_t fk, tk;
    sd_jf_key(&fk, field);
    sd_jf_key(&tk, time_field);
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
            int type, digits = 0;
            SD_JF_STRING(k, kn);
            if (p[0] == ':' && p[1] == '"') { /* "key":"value", the common case */
                p++;
                SD_JF_STRING(v, vn);
                type = SD_JF_STR;
                goto member;
            }
            SD_JF_WS();
            if (*p++ != ':') return SD_JSONFAST_UNSURE;
            SD_JF_WS();
            char ch = *p;
            if (ch == '"') {
                SD_JF_STRING(v, vn);
                type = SD_JF_STR;
            } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
                const char *d = sd_jf_number(v = p, &digits);
                if (!d) return SD_JSONFAST_UNSURE;
                vn = (size_t)(d - p);
                p = d;
                type = SD_JF_NUM;
            } else {
                const char *w = ch == 't' ? "true" : ch == 'f' ? "false" : "null";
                size_t wn = ch == 'f' ? 5 : 4;
                if ((size_t)(end - p) < wn || memcmp(p, w, wn)) return SD_JSONFAST_UNSURE; /* an object, an array, or not JSON */
                v = p;
                p += wn;
                type = SD_JF_OTHER;
            }
        member:;
            int is_id = sd_jf_is(k, kn, &fk), is_t = sd_jf_is(k, kn, &tk), slot = -1;
            if (seen && type != SD_JF_OTHER && seen->n >= 0) {
                if (seen->n == SD_JSONFAST_SLOTS) seen->n = -1;
                else {
                    slot = seen->n++;
                    seen->at[slot] = (uint16_t)(v - json), seen->end[slot] = (uint16_t)(v - json + (ptrdiff_t)vn);
                    seen->number[slot] = type == SD_JF_NUM;
                }
            }
            if (is_id | is_t) {
                /* a number the full parser might not read as a plain int64 */
                if (type == SD_JF_NUM && (!digits || vn > 18)) return SD_JSONFAST_UNSURE;
                if (is_id) id = v, idn = vn, idtype = type, have_id = 1;
                if (is_t) tv = v, tn = vn, ttype = type, have_t = 1;
                if (seen && is_id) seen->id_slot = slot;
                if (seen && is_t) seen->t_slot = slot;
            }
            if (p[0] == ',' && p[1] == '"') { /* the next key, at once */
                p++;
                continue;
            }
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
    int n = have_id && idtype != SD_JF_OTHER ? sd_jf_put_id(out, outlen, id, idn) : -1;
    if (have_t && t_ms) *t_ms = sd_jf_time(ttype, tv, tn, parse_time);
    return n;
}

/* The shape: the bytes before each value and after the last, each
 * compared as a key is (sd_jf_same). */
static void sd_jf_shape_learn(sd_jsonfast_shape_t *sh, const char *json, size_t len, const sd_jf_seen_t *seen,
                              const char *field, const char *time_field) {
    sh->nslots = -1;
    if (seen->n < 0 || len > sizeof(sh->text)) return;
    size_t from = 0;
    for (int i = 0; i <= seen->n; i++) {
        size_t to = i < seen->n ? seen->at[i] : len, n = to - from;
        memcpy(sh->text + from, json + from, n);
        sh->at[i] = (uint16_t)from, sh->n[i] = (uint16_t)n;
        sd_jf_words(json + from, n, &sh->head[i], &sh->tail[i]);
        if (i < seen->n) {
            sh->number[i] = seen->number[i];
            from = seen->end[i];
        }
    }
    sh->id_slot = seen->id_slot, sh->t_slot = seen->t_slot;
    sh->field = field, sh->time_field = time_field;
    sh->nslots = seen->n;
}

/* The shape's bytes number i at p. */
static inline __attribute__((always_inline)) int sd_jf_shape_is(const sd_jsonfast_shape_t *sh, int i, const char *p) {
    return sd_jf_same(p, sh->n[i], sh->text + sh->at[i], sh->head[i], sh->tail[i]);
}

/* A plain row (its quotes) read by the shape: the walk's answer when the
 * row has the shape's bytes around its values, each string value running
 * to the next quote and each number one by JSON's grammar (the id's and
 * the time's a plain run of at most 18 digits, as the walk asks). The walk
 * then sees the same tokens with the same keys, so it would answer the
 * same. SD_JSONFAST_UNSURE when the row has another shape. */
static int sd_jf_shape_read(const sd_jsonfast_shape_t *sh, const char *json, size_t len, const uint64_t *quotes, char *out,
                            size_t outlen, int64_t *t_ms, int (*parse_time)(const char *, int64_t *)) {
    int ns = sh->nslots;
    size_t tailn = sh->n[ns];
    /* the bytes after the last value first: they hold the row's '}', where
     * a number's digits stop at the latest */
    if (tailn > len || !sd_jf_shape_is(sh, ns, json + len - tailn)) return SD_JSONFAST_UNSURE;
    size_t limit = len - tailn, pos = 0, nwords = (len + 63) / 64;
    const char *id = NULL, *tv = NULL;
    size_t idn = 0, tn = 0;
    for (int i = 0; i < ns; i++) {
        size_t n = sh->n[i];
        if (n > limit - pos || !sd_jf_shape_is(sh, i, json + pos)) return SD_JSONFAST_UNSURE;
        size_t at = pos += n, end;
        if (!sh->number[i]) { /* the next quote ends it */
            size_t w = at >> 6;
            uint64_t m = quotes[w] >> (at & 63);
            while (!m && ++w < nwords) m = quotes[w], at = w * 64;
            if (!m) return SD_JSONFAST_UNSURE;
            end = at + (size_t)__builtin_ctzll(m);
        } else {
            int digits;
            const char *d = sd_jf_number(json + at, &digits);
            if (!d) return SD_JSONFAST_UNSURE;
            end = (size_t)(d - json);
            if ((i == sh->id_slot || i == sh->t_slot) && (!digits || end - pos > 18)) return SD_JSONFAST_UNSURE;
        }
        if (end > limit) return SD_JSONFAST_UNSURE;
        if (i == sh->id_slot) id = json + pos, idn = end - pos;
        if (i == sh->t_slot) tv = json + pos, tn = end - pos;
        pos = end;
    }
    if (pos != limit) return SD_JSONFAST_UNSURE;
    int n = id ? sd_jf_put_id(out, outlen, id, idn) : -1;
    if (tv && t_ms) *t_ms = sd_jf_time(sh->number[sh->t_slot] ? SD_JF_NUM : SD_JF_STR, tv, tn, parse_time);
    return n;
}

int sd_jsonfast_id_time(const char *json, size_t len, const char *field, char *out, size_t outlen, const char *time_field,
                        int64_t *t_ms, int (*parse_time)(const char *, int64_t *)) {
    if (t_ms) *t_ms = INT64_MIN;
    if (!json || !len || !outlen) return -1; /* as the full parser */
    if (len > SD_JF_MAX) return SD_JSONFAST_UNSURE;
    uint64_t quotes[SD_JF_MAX / 64];
    if (!sd_jf_clean(json, len, quotes)) return SD_JSONFAST_UNSURE;
    return sd_jf_walk(json, len, quotes, field, out, outlen, time_field, t_ms, parse_time, NULL);
}

int sd_jsonfast_line(sd_jsonfast_shape_t *shape, const char *p, size_t avail, size_t *len, size_t *used, const char *field,
                     char *out, size_t outlen, const char *time_field, int64_t *t_ms, int (*parse_time)(const char *, int64_t *)) {
#ifdef __SSE2__
    uint64_t quotes[SD_JF_MAX / 64];
    if (!outlen || !sd_jf_clean_line(p, avail, quotes, len, used)) return SD_JSONFAST_UNSURE;
    if (t_ms) *t_ms = INT64_MIN;
    if (!*len) return -1; /* an empty line: no row (the caller's to skip) */
    if (!shape) return sd_jf_walk(p, *len, quotes, field, out, outlen, time_field, t_ms, parse_time, NULL);
    if (shape->nslots >= 0 && shape->field && shape->field == field && shape->time_field == time_field) {
        int n = sd_jf_shape_read(shape, p, *len, quotes, out, outlen, t_ms, parse_time);
        if (n != SD_JSONFAST_UNSURE) {
            shape->hits++;
            return n;
        }
    }
    sd_jf_seen_t seen = {.n = 0, .id_slot = -1, .t_slot = -1};
    int n = sd_jf_walk(p, *len, quotes, field, out, outlen, time_field, t_ms, parse_time, &seen);
    if (n != SD_JSONFAST_UNSURE) sd_jf_shape_learn(shape, p, *len, &seen, field, time_field);
    return n;
#else
    (void)shape, (void)p, (void)avail, (void)len, (void)used, (void)field, (void)out, (void)outlen, (void)time_field, (void)t_ms,
        (void)parse_time;
    return SD_JSONFAST_UNSURE;
#endif
}
