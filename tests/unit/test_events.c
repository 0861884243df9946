/* test_events.c - ledger ids and the seeded generator: same seed and tag,
 * same bytes; every event is valid JSON with the contract's fields. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../harness/events.h"
#include "../../harness/scenario.h"

static sd_events_t *gen(uint64_t seed, const char *tag) {
    sd_events_conf_t c = {.kind = SD_EVENTS_PARCEL, .seed = seed, .tag = tag, .start_ms = 1767254400000LL, .step_ms = 1000,
                          .parcels = 5000, .locations = 24, .id_field = "event_id", .time_field = "event_time"};
    sd_events_t *ev;
    char err[256];
    cr_assert_eq(sd_events_open(&c, &ev, err, sizeof(err)), SD_OK, "%s", err);
    return ev;
}

Test(events, id_round_trip) {
    sd_events_t *ev = gen(1, "a1b2c3d4");
    int64_t probes[] = {0, 1, 9, 10, 99, 12345, 9999999, 123456789012LL};
    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
        char id[64];
        size_t n = sd_events_id(ev, probes[i], id);
        int64_t back = -1;
        cr_assert_eq(sd_events_id_parse("a1b2c3d4", 8, id, n, &back), 0, "id %s did not parse", id);
        cr_assert_eq(back, probes[i], "id %s parsed to %lld", id, (long long)back);
    }
    sd_events_close(ev);
}

Test(events, id_parse_rejects_foreign_ids) {
    const char *bad[] = {"a1b2c3d4-", "a1b2c3d4-01", "a1b2c3d4-1a", "a1b2c3d5-1", "a1b2c3d4_1", "a1b2c3d4", "", "-1",
                         "a1b2c3d4--1", "a1b2c3d4-99999999999999999999", NULL};
    for (int i = 0; bad[i]; i++) {
        int64_t s;
        cr_assert_eq(sd_events_id_parse("a1b2c3d4", 8, bad[i], strlen(bad[i]), &s), -1, "\"%s\" must not parse", bad[i]);
    }
}

/* The id parser reads digits eight at a time: against a plain reading of
 * the same bytes, on ids of every length up to past the limit, for tags
 * long and short, with each byte in turn replaced by a non-digit next to
 * the digits ('/', ':', bytes whose low nibble is a digit's). */
static int plain_seq(const char *tag, const char *s, size_t len, int64_t *seq) {
    size_t tl = strlen(tag);
    if (len < tl + 2 || len > tl + 20 || memcmp(s, tag, tl) || s[tl] != '-') return -1;
    const char *p = s + tl + 1;
    size_t n = len - tl - 1;
    if (p[0] == '0' && n != 1) return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return -1;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX / 2) return -1;
    *seq = (int64_t)v;
    return 0;
}

Test(events, id_parse_agrees_with_a_plain_reading) {
    const char *tags[] = {"a1b2c3d4", "t1", "abcdef"};
    const char swaps[] = {'/', ':', 'a', ' ', '\x30' + 0x40, '\xb5', '\0', '-'};
    int64_t checked = 0;
    for (size_t t = 0; t < sizeof(tags) / sizeof(tags[0]); t++) {
        for (int digits = 1; digits <= 21; digits++) {
            for (int variant = 0; variant < 40; variant++) {
                char id[64];
                size_t tl = strlen(tags[t]);
                memcpy(id, tags[t], tl);
                id[tl] = '-';
                for (int i = 0; i < digits; i++) id[tl + 1 + i] = (char)('0' + (variant * 7 + i * 3 + digits) % 10);
                if (variant % 5 == 0) id[tl + 1] = '0';                   /* a leading zero */
                if (variant % 7 == 1) memset(id + tl + 1, '9', (size_t)digits); /* the largest of its length */
                if (variant >= 20) id[tl + 1 + (variant % digits)] = swaps[variant % sizeof(swaps)];
                size_t len = tl + 1 + (size_t)digits;
                int64_t a = -7, b = -7;
                int ra = sd_events_id_parse(tags[t], tl, id, len, &a), rb = plain_seq(tags[t], id, len, &b);
                cr_assert_eq(ra, rb, "%.*s: %d against %d", (int)len, id, ra, rb);
                if (!ra) cr_assert_eq(a, b, "%.*s: %lld against %lld", (int)len, id, (long long)a, (long long)b);
                checked++;
            }
        }
    }
    cr_assert_eq(checked, 3 * 21 * 40);
}

Test(events, same_seed_same_bytes) {
    sd_events_t *a = gen(42, "t1"), *b = gen(42, "t1"), *c = gen(43, "t1");
    sd_buf_t pa, pb, pc, ka, kb, kc;
    sd_buf_init(&pa); sd_buf_init(&pb); sd_buf_init(&pc); sd_buf_init(&ka); sd_buf_init(&kb); sd_buf_init(&kc);
    int differ = 0;
    for (int64_t s = 0; s < 1000; s++) {
        int64_t t1, t2, t3;
        sd_events_render(a, s, INT64_MIN, &pa, &ka, &t1, NULL, 0);
        sd_events_render(b, s, INT64_MIN, &pb, &kb, &t2, NULL, 0);
        sd_events_render(c, s, INT64_MIN, &pc, &kc, &t3, NULL, 0);
        cr_assert_eq(pa.len, pb.len);
        cr_assert(!memcmp(pa.data, pb.data, pa.len), "seq %lld differs between two generators of seed 42", (long long)s);
        cr_assert_str_eq(ka.data, kb.data);
        if (strcmp(pa.data, pc.data)) differ++;
    }
    cr_assert_gt(differ, 900, "seed 43 should give other events, only %d of 1000 differ", differ);
    /* random access: event 500 alone equals event 500 in sequence */
    sd_events_render(a, 500, INT64_MIN, &pa, &ka, NULL, NULL, 0);
    sd_events_render(b, 500, INT64_MIN, &pb, &kb, NULL, NULL, 0);
    cr_assert_str_eq(pa.data, pb.data);
    sd_buf_free(&pa); sd_buf_free(&pb); sd_buf_free(&pc); sd_buf_free(&ka); sd_buf_free(&kb); sd_buf_free(&kc);
    sd_events_close(a); sd_events_close(b); sd_events_close(c);
}

Test(events, generated_events_are_valid_json) {
    sd_events_t *ev = gen(7, "feed");
    sd_buf_t p, k;
    sd_buf_init(&p);
    sd_buf_init(&k);
    for (int64_t s = 0; s < 2000; s++) {
        int64_t t;
        sd_events_render(ev, s, INT64_MIN, &p, &k, &t, NULL, 0);
        json_error_t je;
        json_t *o = json_loads(p.data, 0, &je);
        cr_assert_not_null(o, "event %lld is not JSON: %s (%s)", (long long)s, je.text, p.data);
        char id[64];
        sd_events_id(ev, s, id);
        cr_assert_str_eq(json_string_value(json_object_get(o, "event_id")), id);
        cr_assert(json_is_string(json_object_get(o, "parcel_id")));
        cr_assert(json_is_string(json_object_get(o, "location")));
        cr_assert_str_eq(json_string_value(json_object_get(o, "parcel_id")), k.data, "the key is the parcel id");
        cr_assert_eq(t, 1767254400000LL + s * 1000);
        json_decref(o);
    }
    /* a time override (late events) */
    int64_t t;
    sd_events_render(ev, 3, 1767254400000LL - 3600000, &p, &k, &t, NULL, 0);
    cr_assert(strstr(p.data, "\"event_time\":\"2026-01-01T07:00:00.000Z\""), "got %s", p.data);
    cr_assert_eq(t, 1767254400000LL - 3600000);
    sd_buf_free(&p);
    sd_buf_free(&k);
    sd_events_close(ev);
}

Test(events, log_replay_rewrites_ids) {
    char path[] = "/tmp/sd_events_logXXXXXX";
    int fd = mkstemp(path);
    const char *text = "{\"order\":\"o-1\",\"ts\":\"2026-03-01T10:00:00Z\",\"amount\":5}\n"
                       "\n"
                       "{\"order\":\"o-2\",\"ts\":\"2026-03-01T10:00:01.500Z\",\"amount\":7}\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    sd_events_conf_t c = {.kind = SD_EVENTS_LOG, .tag = "ab", .log_path = path, .id_field = "order", .time_field = "ts"};
    sd_events_t *ev;
    char err[256];
    cr_assert_eq(sd_events_open(&c, &ev, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(sd_events_available(ev), 2);
    sd_buf_t p, k;
    sd_buf_init(&p);
    sd_buf_init(&k);
    int64_t t;
    cr_assert_eq(sd_events_render(ev, 1, INT64_MIN, &p, &k, &t, err, sizeof(err)), SD_OK);
    cr_assert_str_eq(p.data, "{\"order\":\"ab-1\",\"ts\":\"2026-03-01T10:00:01.500Z\",\"amount\":7}");
    cr_assert_eq(t, 1772359201500LL);
    cr_assert_neq(sd_events_render(ev, 2, INT64_MIN, &p, &k, &t, err, sizeof(err)), SD_OK, "only two events in the log");
    cr_assert(strstr(err, "has 2 events"), "got %s", err);
    sd_buf_free(&p);
    sd_buf_free(&k);
    sd_events_close(ev);
    unlink(path);
}

Test(events, log_with_a_broken_line_names_it) {
    char path[] = "/tmp/sd_events_badXXXXXX";
    int fd = mkstemp(path);
    const char *text = "{\"id\":\"1\"}\n{\"id\":\"2\"}\n{\"id\": oops}\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    sd_events_conf_t c = {.kind = SD_EVENTS_LOG, .tag = "ab", .log_path = path, .id_field = "id"};
    sd_events_t *ev = NULL;
    char err[512];
    cr_assert_eq(sd_events_open(&c, &ev, err, sizeof(err)), SD_ERR_SCENARIO);
    char want[128];
    snprintf(want, sizeof(want), "%s:3:", path);
    cr_assert(strstr(err, want), "expected %s in \"%s\"", want, err);
    unlink(path);
}

/* The deliveries generator: a share of the scans, within the delays, keyed
 * by the scan's parcel, ids that parse back and never as scan ids. */
Test(events, deliveries_follow_their_scans) {
    sd_events_conf_t c = {.kind = SD_EVENTS_PARCEL, .seed = 7, .tag = "a1b2c3d4", .start_ms = 1767254400000LL, .step_ms = 1000,
                          .parcels = 50, .locations = 24, .id_field = "event_id", .time_field = "event_time",
                          .delivery_share = 70, .delivery_min_ms = 60000, .delivery_max_ms = 1200000};
    sd_events_t *ev;
    char err[256];
    cr_assert_eq(sd_events_open(&c, &ev, err, sizeof(err)), SD_OK, "%s", err);
    sd_buf_t p, k, sp, sk;
    sd_buf_init(&p); sd_buf_init(&k); sd_buf_init(&sp); sd_buf_init(&sk);
    int have = 0;
    for (int64_t s = 0; s < 2000; s++) {
        int64_t st, dt;
        cr_assert_eq(sd_events_render(ev, s, INT64_MIN, &sp, &sk, &st, err, sizeof(err)), SD_OK);
        if (!sd_events_delivery(ev, s, st, &p, &k, &dt)) continue;
        have++;
        cr_assert(dt >= st + 60000 && dt <= st + 1200000, "delivery of %lld %lld ms after its scan", (long long)s, (long long)(dt - st));
        cr_assert_eq(k.len, sk.len);
        cr_assert(!memcmp(k.data, sk.data, k.len), "keyed by the scan's parcel");
        json_error_t je;
        json_t *o = json_loadb(p.data, p.len, 0, &je);
        cr_assert(o, "not JSON: %.*s", (int)p.len, p.data);
        const char *id = json_string_value(json_object_get(o, "delivery_id"));
        int64_t back = -1, scan = -1;
        cr_assert_eq(sd_events_delivery_id_parse("a1b2c3d4", 8, id, strlen(id), &back), 0);
        cr_assert_eq(back, s);
        cr_assert_eq(sd_events_id_parse("a1b2c3d4", 8, id, strlen(id), &scan), -1, "a delivery id is no scan id");
        cr_assert_str_eq(json_string_value(json_object_get(o, "parcel_id")), json_string_value(json_object_get(o, "parcel_id")));
        json_decref(o);
        /* the same again: a pure function of (seed, seq) */
        sd_buf_t p2, k2;
        sd_buf_init(&p2); sd_buf_init(&k2);
        int64_t dt2;
        cr_assert(sd_events_delivery(ev, s, st, &p2, &k2, &dt2) && dt2 == dt && p2.len == p.len && !memcmp(p2.data, p.data, p.len));
        sd_buf_free(&p2); sd_buf_free(&k2);
    }
    cr_assert(have > 1300 && have < 1500, "%d of 2000 scans have a delivery, expected about 70%%", have);
    sd_buf_free(&p); sd_buf_free(&k); sd_buf_free(&sp); sd_buf_free(&sk);
    sd_events_close(ev);
}
