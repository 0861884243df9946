/* test_util.c - durations, counts, timestamps, paths. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "result.h"
#include "util.h"

Test(util, durations) {
    struct { const char *s; int64_t ms; } ok[] = {{"250ms", 250}, {"3s", 3000}, {"1.5s", 1500}, {"10m", 600000},
                                                   {"2h", 7200000}, {"1d", 86400000}, {"7", 7000}, {"0s", 0}};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int64_t v = -1;
        cr_assert_eq(sd_util_parse_duration(ok[i].s, &v), 0, "%s must parse", ok[i].s);
        cr_assert_eq(v, ok[i].ms, "%s: expected %lld ms, got %lld", ok[i].s, (long long)ok[i].ms, (long long)v);
    }
    const char *bad[] = {"", "s", "-1s", "3x", "1e400s", "10 s", NULL};
    for (int i = 0; bad[i]; i++) {
        int64_t v;
        cr_assert_eq(sd_util_parse_duration(bad[i], &v), -1, "\"%s\" must not parse", bad[i]);
    }
}

Test(util, counts) {
    int64_t v;
    cr_assert_eq(sd_util_parse_count("100", &v), 0); cr_assert_eq(v, 100);
    cr_assert_eq(sd_util_parse_count("10k", &v), 0); cr_assert_eq(v, 10000);
    cr_assert_eq(sd_util_parse_count("2M", &v), 0); cr_assert_eq(v, 2000000);
    cr_assert_eq(sd_util_parse_count("abc", &v), -1);
    cr_assert_eq(sd_util_parse_count("-5", &v), -1);
    cr_assert_eq(sd_util_parse_count("5m", &v), -1, "m is minutes, not millions");
}

Test(util, iso8601_round_trip) {
    char buf[32];
    int64_t t;
    cr_assert_str_eq(sd_util_iso8601(1767254400123LL, buf, sizeof(buf)), "2026-01-01T08:00:00.123Z");
    cr_assert_eq(sd_util_parse_iso8601("2026-01-01T08:00:00.123Z", &t), 0);
    cr_assert_eq(t, 1767254400123LL);
    cr_assert_eq(sd_util_parse_iso8601("2026-01-01T08:00:00Z", &t), 0);
    cr_assert_eq(t, 1767254400000LL);
    cr_assert_eq(sd_util_parse_iso8601("2026-13-01T08:00:00Z", &t), -1);
    cr_assert_eq(sd_util_parse_iso8601("yesterday", &t), -1);
}

Test(util, paths) {
    char *p = sd_util_abspath("/a/b/../c/./d//e");
    cr_assert_str_eq(p, "/a/c/d/e");
    free(p);
    p = sd_util_dirname("x/y/z.drill");
    cr_assert_str_eq(p, "x/y");
    free(p);
    p = sd_util_stem("x/y/z.drill");
    cr_assert_str_eq(p, "z");
    free(p);
}

Test(util, timeout_multiplier_scales) {
    setenv("STREAMDRILL_TIMEOUT_MULTIPLIER", "2.5", 1);
    cr_assert_eq(sd_util_scaled_ms(1000), 2500);
    unsetenv("STREAMDRILL_TIMEOUT_MULTIPLIER");
    cr_assert_eq(sd_util_scaled_ms(1000), 1000);
}

static char *shell_word(const char *s) {
    sd_buf_t b;
    sd_buf_init(&b);
    sd_buf_put_shell_word(&b, s);
    return sd_buf_steal(&b);
}

Test(util, shell_words_for_reproduce_lines) {
    struct { const char *in, *out; } cases[] = {
        {"scenarios/x.drill", "scenarios/x.drill"}, {"mode=at-least-once", "mode=at-least-once"}, {"", "''"},
        {"a b", "'a b'"}, {"it's", "'it'\\''s'"}, {"$(id)", "'$(id)'"}, {"x;rm -rf /", "'x;rm -rf /'"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *w = shell_word(cases[i].in);
        cr_assert_str_eq(w, cases[i].out, "%s -> %s", cases[i].in, w);
        free(w);
    }
}

Test(util, iso8601_matches_gmtime) {
    /* the hand-rolled civil date against the C library, across leap years,
     * centuries, 1970, negative times and millisecond edges */
    uint64_t x = 7;
    for (int i = 0; i < 200000; i++) {
        x = sd_util_mix64(x + (uint64_t)i);
        int64_t ms = (int64_t)(x % 400000000000000ULL) - 100000000000000LL; /* about 1800..9600 */
        if (i < 4) ms = (int64_t[]){0, -1, 951782400000LL, 4107542399999LL}[i];
        time_t secs = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        char want[64], got[64];
        snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, (int)(ms - (int64_t)secs * 1000));
        sd_util_iso8601(ms, got, sizeof(got));
        cr_assert_str_eq(got, want, "%lld", (long long)ms);
    }
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* quantiles from a histogram of the small values and the sorted large
 * ones (latency percentiles) against a full sort, on random, sorted,
 * reversed, all-equal and few-valued arrays; the large ones start at 1000
 * here (65534 in a run) */
/* Decimal by digit pairs: every length from 1 to 20 digits, each edge of
 * a length (10^k - 1, 10^k), and runs of numbers as printf writes them. */
Test(util, put_u64_matches_printf) {
    uint64_t probes[64];
    int n = 0;
    probes[n++] = 0;
    probes[n++] = UINT64_MAX;
    for (uint64_t p = 1; n < 60; p *= 10) {
        probes[n++] = p;
        probes[n++] = p - 1 ? p - 1 : 1;
        probes[n++] = p + 1;
        if (p > UINT64_MAX / 10) break;
    }
    for (uint64_t v = 0; v < 200000; v = v < 1000 ? v + 1 : v * 3 + 7) {
        char want[32], got[32];
        snprintf(want, sizeof(want), "%llu", (unsigned long long)v);
        *sd_util_put_u64(got, v) = 0;
        cr_assert_str_eq(got, want);
    }
    for (int i = 0; i < n; i++) {
        char want[32], got[32];
        snprintf(want, sizeof(want), "%llu", (unsigned long long)probes[i]);
        char *end = sd_util_put_u64(got, probes[i]);
        *end = 0;
        cr_assert_str_eq(got, want);
        cr_assert_eq((size_t)(end - got), strlen(want));
    }
    /* a fixed number of digits, zero-padded: each width from 1 to 19 */
    for (int w = 1; w < 20; w++)
        for (uint64_t v = 0; v < 100000; v = v * 7 + 3) {
            char want[32], got[32];
            uint64_t cut = 1;
            for (int k = 0; k < w; k++) cut *= 10;
            snprintf(want, sizeof(want), "%0*llu", w, (unsigned long long)(v % cut));
            char *end = sd_util_put_digits(got, v, w);
            *end = 0;
            cr_assert_eq(end - got, w);
            cr_assert_str_eq(got, want, "v %llu in %d digits", (unsigned long long)v, w);
        }
}

Test(util, hist_rank_matches_sort) {
    srand(7);
    for (int shape = 0; shape < 5; shape++) {
        for (int64_t n = 1; n <= 3000; n = n * 3 + 1) {
            uint32_t *sorted = malloc(sizeof(uint32_t) * (size_t)n), *big = malloc(sizeof(uint32_t) * (size_t)n);
            uint32_t hist[1000] = {0};
            int64_t nbig = 0;
            for (int64_t i = 0; i < n; i++) {
                uint32_t v = shape == 0 ? (uint32_t)(rand() % 5000) : shape == 1 ? (uint32_t)i : shape == 2 ? (uint32_t)(n - i)
                           : shape == 3 ? 42u : (uint32_t)(rand() % 3);
                sorted[i] = v;
                if (v < 1000) hist[v]++;
                else big[nbig++] = v;
            }
            qsort(sorted, (size_t)n, sizeof(uint32_t), cmp_u32);
            qsort(big, (size_t)nbig, sizeof(uint32_t), cmp_u32);
            int64_t ks[] = {0, (n - 1) * 50 / 100, (n - 1) * 95 / 100, (n - 1) * 99 / 100, n - 1};
            for (int q = 0; q < 5; q++)
                cr_assert_eq(sd_util_hist_rank(hist, 1000, big, nbig, ks[q]), (int64_t)sorted[ks[q]], "rank %lld, shape %d, n %lld",
                             (long long)ks[q], shape, (long long)n);
            cr_assert_eq(sd_util_hist_rank(hist, 1000, big, nbig, n), -1);
            free(sorted);
            free(big);
        }
    }
}

static uint32_t cell_of(const void *ctx, int64_t i) { return ((const uint32_t *)ctx)[i]; }

/* the latencies' quantiles: 24-bit values counted in two passes, the
 * larger ones from a sorted list, "none" skipped, against a full sort */
Test(util, ranks_u24_match_sort) {
    srand(11);
    const uint32_t none = (1u << 24) - 1, top = (1u << 24) - 2;
    for (int shape = 0; shape < 4; shape++) {
        int64_t n = 20000;
        uint32_t *v = malloc(sizeof(uint32_t) * (size_t)n), *sorted = malloc(sizeof(uint32_t) * (size_t)n),
                 *big = malloc(sizeof(uint32_t) * (size_t)n);
        int64_t m = 0, nbig = 0;
        for (int64_t i = 0; i < n; i++) {
            uint32_t x = shape == 0 ? (uint32_t)rand() % (1u << 24) : shape == 1 ? (uint32_t)(rand() % 70000)
                       : shape == 2 ? 4096u * (uint32_t)(rand() % 3) + 7u : (uint32_t)rand();
            if (i % 7 == 3) x = none;
            if (x == none) {
                v[i] = none;
                continue;
            }
            sorted[m++] = x;
            if (x >= top) {
                big[nbig++] = x;
                v[i] = top; /* as a cell: its value is in the list */
            } else {
                v[i] = x;
            }
        }
        qsort(sorted, (size_t)m, sizeof(uint32_t), cmp_u32);
        qsort(big, (size_t)nbig, sizeof(uint32_t), cmp_u32);
        int64_t ks[] = {0, (m - 1) * 50 / 100, (m - 1) * 95 / 100, (m - 1) * 99 / 100, m - 1, m}, got[6];
        sd_util_ranks_u24(cell_of, v, n, big, nbig, ks, got, 6);
        for (int q = 0; q < 5; q++)
            cr_assert_eq(got[q], (int64_t)sorted[ks[q]], "shape %d rank %lld", shape, (long long)ks[q]);
        cr_assert_eq(got[5], -1, "past the end");
        free(v);
        free(sorted);
        free(big);
    }
}

/* The send stamps against a plain array over 300,000 seqs set in the ways a
 * run sets them: in order, out of order within a block, some never, some
 * before their block's first time (a clock stepped back), some long after
 * it, every seq set twice (the second is ignored), grown while in use. */
Test(util, stamps_exact) {
    const int64_t n = 300000;
    uint32_t *want = malloc(sizeof(uint32_t) * n);
    sd_stamps_t s = {0};
    uint64_t x = 7;
    uint32_t now = 1000;
    for (int64_t i = 0; i < n; i++) {
        if (i % 50000 == 0) sd_stamps_reserve(&s, i + 50000);
        sd_stamps_add(&s, i);
        x = sd_util_mix64(x);
        now += (uint32_t)(x % 3);
        uint32_t v = now;
        switch (x >> 61) {
        case 0: v = UINT32_MAX; break;                       /* never sent */
        case 1: v = now > 5000 ? now - 5000 : 0; break;      /* before the block's first time */
        case 2: v = now + 70000 + (uint32_t)(x % 9); break;  /* past two bytes */
        case 3: v = UINT32_MAX - 1; break;                   /* the largest time */
        default: break;
        }
        want[i] = v;
        if (v != UINT32_MAX) {
            cr_assert_eq(sd_stamps_set_once(&s, i, v), 1, "seq %lld: the first set must take", (long long)i);
            cr_assert_eq(sd_stamps_set_once(&s, i, v + 1), 0, "seq %lld: a second set must not", (long long)i);
        }
    }
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(sd_stamps_get(&s, i), want[i], "seq %lld: expected %u, got %u", (long long)i, want[i], sd_stamps_get(&s, i));
    cr_assert_lt(s.big.n, n / 2, "the map holds only what does not fit (%lld of %lld)", (long long)s.big.n, (long long)n);
    sd_stamps_free(&s);
    free(want);
}

/* W-06: RFC 3339 offsets name the same instant as its UTC form */
Test(util, iso8601_offsets_are_the_same_instant) {
    int64_t z, t;
    cr_assert_eq(sd_util_parse_iso8601("2026-02-01T10:00:00.000Z", &z), 0);
    cr_assert_eq(sd_util_parse_iso8601("2026-02-01T11:00:00.000+01:00", &t), 0);
    cr_expect_eq(t, z);
    cr_assert_eq(sd_util_parse_iso8601("2026-02-01T05:30:00-04:30", &t), 0);
    cr_expect_eq(t, z);
    cr_assert_eq(sd_util_parse_iso8601("2026-02-01T10:00:00+0000", &t), 0);
    cr_expect_eq(t, z);
    cr_assert_eq(sd_util_parse_iso8601("2026-02-01t10:00:00z", &t), 0);
    cr_expect_eq(t, z);
    cr_assert_eq(sd_util_parse_iso8601("2026-02-01T00:30:00+14:00", &t), 0, "a date line away");
    cr_expect_eq(t, z - 23 * 3600000LL - 30 * 60000LL);
    cr_expect_eq(sd_util_parse_iso8601("2026-02-01T10:00:00+1:00", &t), -1);
    cr_expect_eq(sd_util_parse_iso8601("2026-02-01T10:00:00+01:60", &t), -1);
    cr_expect_eq(sd_util_parse_iso8601("2026-02-01T10:00:00+01:00x", &t), -1);
    int64_t s;
    cr_assert_eq(sd_result_parse_start("2026-02-01T11:00:00.000+01:00", 29, &s), 0, "a window start with an offset");
    cr_expect_eq(s, z);
}

/* a day its month does not have is refused, not moved on by timegm; a time
 * without an offset is read as UTC and said to have none */
Test(util, iso8601_refuses_days_months_lack) {
    int64_t t, u;
    int zoned = -1;
    cr_expect_eq(sd_util_parse_iso8601("2026-02-31T10:00:00Z", &t), -1, "February 31");
    cr_expect_eq(sd_util_parse_iso8601("2026-02-29T10:00:00Z", &t), -1, "2026 is no leap year");
    cr_expect_eq(sd_util_parse_iso8601("2028-02-29T10:00:00Z", &t), 0, "2028 is a leap year");
    cr_expect_eq(sd_util_parse_iso8601("2100-02-29T10:00:00Z", &t), -1, "2100 is no leap year");
    cr_expect_eq(sd_util_parse_iso8601("2000-02-29T10:00:00Z", &t), 0, "2000 is a leap year");
    cr_expect_eq(sd_util_parse_iso8601("2026-04-31T10:00:00Z", &t), -1, "April 31");
    cr_expect_eq(sd_util_parse_iso8601("2026-12-31T23:59:59Z", &t), 0);
    cr_assert_eq(sd_util_parse_iso8601_zone("2026-02-01T10:00:00", &t, &zoned), 0);
    cr_expect_eq(zoned, 0, "no offset: said");
    cr_assert_eq(sd_util_parse_iso8601_zone("2026-02-01T10:00:00Z", &u, &zoned), 0);
    cr_expect_eq(zoned, 1);
    cr_expect_eq(t, u, "no offset is read as UTC");
    cr_assert_eq(sd_util_parse_iso8601_zone("2026-02-01T10:00:00-00:00", &u, &zoned), 0);
    cr_expect_eq(zoned, 1);
}
