/* test_events.c - ledger ids and the seeded generator: same seed and tag,
 * same bytes; every event is valid JSON with the contract's fields. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "events.h"
#include "jschema.h"
#include "protodyn.h"
#include "scenario.h"
#include "sink.h"

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

/* The generator's template, written the plain way (snprintf, gmtime_r):
 * the bytes the generator writes in place must be these, for every
 * configuration a drill can give it (field names, tag lengths, an infix,
 * parcel and location counts past the padded widths) and for times the
 * generator chose or a late event overrides. The tables are the
 * generator's own: changing one changes every drill's events. */
static const char *const ref_scans[] = {"received", "sorted", "loaded", "in-transit", "out-for-delivery", "delivered"};
static const char *const ref_hubs[] = {"AMS", "BER", "CDG", "DUB", "FRA", "HAM", "LHR", "LYS", "MAD", "MIL", "MUC", "OSL",
                                       "PRG", "RIX", "ROM", "STO", "TLL", "VIE", "WAW", "ZRH", "BCN", "BRU", "CPH", "HEL"};

static void ref_render(const sd_events_conf_t *c, int64_t seq, int64_t time_ms, char *out, size_t outlen, char *key) {
    uint64_t h = sd_util_mix64(c->seed * 0x9E3779B97F4A7C15ULL ^ (uint64_t)seq), h2 = sd_util_mix64(h);
    int64_t t = time_ms != INT64_MIN ? time_ms : c->start_ms + seq * c->step_ms;
    time_t secs = (time_t)(t >= 0 ? t / 1000 : (t - 999) / 1000);
    struct tm tm;
    cr_assert_not_null(gmtime_r(&secs, &tm));
    char iso[64];
    snprintf(iso, sizeof(iso), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, (int)(t - (int64_t)secs * 1000));
    unsigned loc = (unsigned)((h >> 32) % (uint64_t)c->locations);
    snprintf(key, 32, "P%08u", (unsigned)(h % (uint64_t)c->parcels));
    snprintf(out, outlen, "{\"%s\":\"%s-%s%llu\",\"parcel_id\":\"%s\",\"%s\":\"%s\",\"location\":\"%s-%02u\",\"scan\":\"%s\",\"weight_g\":%u}",
             c->id_field, c->tag, c->id_infix ? c->id_infix : "", (unsigned long long)seq, key, c->time_field, iso, ref_hubs[loc % 24], loc,
             ref_scans[h2 % 6], 50u + (unsigned)((h2 >> 24) % 29951u));
}

Test(events, generated_bytes_are_the_template_written_plainly) {
    const char *tags[] = {"ab12cd34", "f", "0123456789abcdef0123"};
    const char *fields[][2] = {{"event_id", "event_time"}, {"id", "ts"}, {"scan_event_identifier", "observed_at_utc"}};
    int counts[][2] = {{5000, 24}, {1, 1}, {2000000000, 1000}};
    int64_t overrides[] = {INT64_MIN, 0, -1, -86400001LL, 951782400000LL /* 2000-02-29 */, 253402300799999LL /* 9999-12-31 */,
                           -62135596800000LL /* 0001-01-01 */, 1767254400000LL};
    sd_buf_t p, k;
    sd_buf_init(&p);
    sd_buf_init(&k);
    long checked = 0;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int x = 0; x < 2; x++) {
                sd_events_conf_t c = {.kind = SD_EVENTS_PARCEL, .seed = 11u * (unsigned)a + (unsigned)b, .tag = tags[a],
                                      .start_ms = a == 2 ? -86400000LL * 400 : 1767254400000LL, .step_ms = b ? 997 : 1000,
                                      .parcels = counts[b][0], .locations = counts[b][1], .id_field = fields[b][0],
                                      .id_infix = x ? "d" : NULL, .time_field = fields[b][1]};
                sd_events_t *ev;
                char err[256];
                cr_assert_eq(sd_events_open(&c, &ev, err, sizeof(err)), SD_OK, "%s", err);
                for (int64_t i = 0; i < 4000; i++) {
                    int64_t seq = i < 3900 ? i : (int64_t)1 << (i - 3900) % 40; /* and seqs of up to 13 digits */
                    int64_t tm = overrides[i % 8], t;
                    char want[512], wkey[32];
                    ref_render(&c, seq, tm, want, sizeof(want), wkey);
                    cr_assert_eq(sd_events_render(ev, seq, tm, &p, &k, &t, err, sizeof(err)), SD_OK, "%s", err);
                    cr_assert_str_eq(p.data, want, "seq %lld of configuration %d/%d/%d", (long long)seq, a, b, x);
                    cr_assert_eq(p.len, strlen(want));
                    cr_assert_str_eq(k.data, wkey);
                    if (i % 97 == 0) { /* appended after what a buffer holds: the same bytes after it */
                        sd_buf_t ap, ak;
                        sd_buf_init(&ap);
                        sd_buf_init(&ak);
                        sd_buf_puts(&ap, "held:");
                        sd_buf_puts(&ak, "k:");
                        cr_assert_eq(sd_events_render_append(ev, seq, tm, &ap, &ak, &t, err, sizeof(err)), SD_OK, "%s", err);
                        cr_assert(!strncmp(ap.data, "held:", 5) && !strcmp(ap.data + 5, want), "got %s", ap.data);
                        cr_assert_eq(ap.len, 5 + strlen(want));
                        cr_assert(!strncmp(ak.data, "k:", 2) && !strcmp(ak.data + 2, wkey), "got %s", ak.data);
                        sd_buf_free(&ap);
                        sd_buf_free(&ak);
                    }
                    checked++;
                }
                sd_events_close(ev);
            }
    cr_assert_eq(checked, 18 * 4000);
    sd_buf_free(&p);
    sd_buf_free(&k);
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

/* The generator of c twice (the same seed must give the same edges) and
 * once with edges=0. */
static void open_with_edges_and_without(const sd_events_conf_t *c, sd_events_t **ev, sd_events_t **ev2, sd_events_t **off) {
    char err[256];
    cr_assert_eq(sd_events_open(c, ev, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(sd_events_open(c, ev2, err, sizeof(err)), SD_OK, "%s", err);
    sd_events_conf_t c0 = *c;
    c0.edge_share = 0;
    cr_assert_eq(sd_events_open(&c0, off, err, sizeof(err)), SD_OK, "%s", err);
}

/* Window edges: with edges on, the three scans before each window
 * boundary (a multiple of the slide) move to 1 ms before it, onto it and
 * 1 ms after it, the same from the same seed; every other scan keeps its
 * time, and the order of event times is kept. With a step over a third of
 * the slide, the last scan before each boundary alone. */
static void check_window_edges(int64_t step, int64_t slide, int triple) {
    sd_events_conf_t c = {.kind = SD_EVENTS_PARCEL, .seed = 11, .tag = "a1b2c3d4", .start_ms = 1767254400000LL + 500, .step_ms = step,
                          .parcels = 50, .locations = 24, .edge_share = 25, .edge_slide_ms = slide};
    sd_events_t *ev, *ev2, *off;
    char err[256];
    open_with_edges_and_without(&c, &ev, &ev2, &off);
    int64_t by_off[3] = {0}, boundaries = 0, prev = INT64_MIN, last_b = INT64_MIN;
    sd_buf_t p, k;
    sd_buf_init(&p); sd_buf_init(&k);
    for (int64_t s = 0; s < 6000; s++) {
        int64_t t = sd_events_time(ev, s), natural = c.start_ms + s * step, b = (natural + slide - 1) / slide * slide, rt;
        sd_edge_t e, e2;
        int is = sd_events_edge(ev, s, &e);
        cr_assert_eq(is, sd_events_edge(ev2, s, &e2), "seq %lld: not reproducible", (long long)s);
        cr_assert(!sd_events_edge(off, s, &e2) && sd_events_time(off, s) == natural, "edges=0 moved seq %lld", (long long)s);
        int64_t before = (b - natural) / step; /* scans between it and the boundary */
        if (before <= (triple ? 2 : 0)) {
            cr_assert(is, "seq %lld, %lld scans before boundary %lld, probes nothing", (long long)s, (long long)before, (long long)b);
            cr_assert_eq(e.kind, SD_EDGE_WINDOW);
            cr_assert_eq(e.at_ms, b, "seq %lld: edge at %lld, boundary %lld", (long long)s, (long long)e.at_ms, (long long)b);
            if (triple) cr_assert_eq(e.offset_ms, 1 - before);
            cr_assert(e.offset_ms >= -1 && e.offset_ms <= 1);
            cr_assert_eq(t, b + e.offset_ms, "seq %lld: time %lld, edge %lld%+d", (long long)s, (long long)t, (long long)b, e.offset_ms);
            by_off[e.offset_ms + 1]++;
            if (b != last_b) boundaries++, last_b = b;
        } else {
            cr_assert(!is && t == natural, "seq %lld moved without an edge", (long long)s);
        }
        cr_assert(t > prev, "seq %lld at %lld is not after the scan ahead of it (%lld)", (long long)s, (long long)t, (long long)prev);
        prev = t;
        /* the rendered event carries that time, to the millisecond */
        cr_assert_eq(sd_events_render(ev, s, INT64_MIN, &p, &k, &rt, err, sizeof(err)), SD_OK);
        cr_assert_eq(rt, t);
    }
    int64_t want = 6000 * step / slide;
    cr_assert(boundaries >= want - 1 && boundaries <= want + 1, "%lld boundaries probed of %lld", (long long)boundaries, (long long)want);
    for (int i = 0; i < 3; i++)
        cr_assert(triple ? by_off[i] == boundaries || by_off[i] == boundaries - 1 : by_off[i] > boundaries / 5, "offset %d: %lld of %lld",
                  i - 1, (long long)by_off[i], (long long)boundaries);
    sd_buf_free(&p); sd_buf_free(&k);
    sd_events_close(ev); sd_events_close(ev2); sd_events_close(off);
}

Test(events, window_edges_lie_on_the_boundary_and_1ms_either_side) {
    check_window_edges(7000, 60000, 1);
    check_window_edges(2000, 60000, 1);
    check_window_edges(25000, 60000, 0);
}

/* Join edges: a share of the deliveries lies exactly on the join range's
 * lower or upper bound (a delay of 0 or within) or 1 ms to either side;
 * the exact bounds are the commonest; the delivery's event time is its
 * scan's plus that delay, reproducibly. */
Test(events, join_edges_lie_on_the_bounds_and_1ms_either_side) {
    sd_events_conf_t c = {.kind = SD_EVENTS_PARCEL, .seed = 5, .tag = "a1b2c3d4", .start_ms = 1767254400000LL, .step_ms = 1000,
                          .parcels = 50, .locations = 24, .delivery_share = 70, .delivery_min_ms = 60000, .delivery_max_ms = 480000,
                          .edge_share = 25, .edge_join = 1, .edge_lower_ms = 0, .edge_upper_ms = 300000};
    sd_events_t *ev;
    char err[256];
    cr_assert_eq(sd_events_open(&c, &ev, err, sizeof(err)), SD_OK, "%s", err);
    sd_buf_t p, k, sp, sk;
    sd_buf_init(&p); sd_buf_init(&k); sd_buf_init(&sp); sd_buf_init(&sk);
    int64_t n[4][3] = {{0}}, have = 0;
    for (int64_t s = 0; s < 4000; s++) {
        int64_t st, dt, dt2;
        cr_assert_eq(sd_events_render(ev, s, INT64_MIN, &sp, &sk, &st, err, sizeof(err)), SD_OK);
        sd_edge_t e;
        int is = sd_events_delivery_edge(ev, s, &e);
        if (!sd_events_delivery(ev, s, st, &p, &k, &dt)) {
            cr_assert(!is, "seq %lld: an edge without a delivery", (long long)s);
            continue;
        }
        have++;
        cr_assert(sd_events_delivery(ev, s, st, &p, &k, &dt2) && dt2 == dt);
        if (!is) {
            cr_assert(dt - st >= 60000 && dt - st <= 480000);
            continue;
        }
        cr_assert(e.kind == SD_EDGE_JOIN_LOWER || e.kind == SD_EDGE_JOIN_UPPER);
        cr_assert_eq(e.at_ms, e.kind == SD_EDGE_JOIN_UPPER ? 300000 : 0);
        cr_assert_eq(dt - st, e.at_ms + e.offset_ms, "seq %lld: delay %lld, edge %s%+d", (long long)s, (long long)(dt - st),
                     sd_edge_name(e.kind), e.offset_ms);
        n[e.kind][e.offset_ms + 1]++;
    }
    int64_t edges = 0;
    for (int kk = SD_EDGE_JOIN_LOWER; kk <= SD_EDGE_JOIN_UPPER; kk++) {
        edges += n[kk][0] + n[kk][1] + n[kk][2];
        cr_assert(n[kk][1] > n[kk][0] && n[kk][1] > n[kk][2] && n[kk][0] > 0 && n[kk][2] > 0, "%s: %lld/%lld/%lld",
                  sd_edge_name((sd_edge_kind_t)kk), (long long)n[kk][0], (long long)n[kk][1], (long long)n[kk][2]);
    }
    cr_assert(edges > have * 20 / 100 && edges < have * 30 / 100, "%lld edges of %lld deliveries", (long long)edges, (long long)have);
    sd_buf_free(&p); sd_buf_free(&k); sd_buf_free(&sp); sd_buf_free(&sk);
    sd_events_close(ev);
}

/* Ties (latest by event time): a share of the scans take the key
 * (parcel, location) and the event time of the scan before them, never two
 * in a row, reproducibly; with edges=0 none does. */
Test(events, tied_scans_share_the_key_and_time_of_the_one_before) {
    sd_events_conf_t c = {.kind = SD_EVENTS_PARCEL, .seed = 9, .tag = "a1b2c3d4", .start_ms = 1767254400000LL, .step_ms = 2000,
                          .parcels = 5000, .locations = 24, .edge_share = 25, .edge_ties = 1};
    sd_events_t *ev, *ev2, *off;
    char err[256];
    open_with_edges_and_without(&c, &ev, &ev2, &off);
    sd_buf_t p, k, pp, pk;
    sd_buf_init(&p); sd_buf_init(&k); sd_buf_init(&pp); sd_buf_init(&pk);
    char loc[64], ploc[64];
    int64_t ties = 0, prev_tie = 0, pt = 0;
    for (int64_t s = 0; s < 4000; s++) {
        int64_t t;
        sd_edge_t e, e2;
        cr_assert_eq(sd_events_render(ev, s, INT64_MIN, &p, &k, &t, err, sizeof(err)), SD_OK);
        int is = sd_events_edge(ev, s, &e);
        cr_assert_eq(is, sd_events_edge(ev2, s, &e2), "seq %lld: not reproducible", (long long)s);
        cr_assert(!sd_events_edge(off, s, &e2), "edges=0 tied seq %lld", (long long)s);
        sd_sink_json_field(p.data, p.len, "location", loc, sizeof(loc));
        if (is) {
            cr_assert_eq(e.kind, SD_EDGE_TIE);
            cr_assert(!prev_tie, "seq %lld ties right after a tie", (long long)s);
            cr_assert_eq(t, pt, "seq %lld: time %lld, the one before %lld", (long long)s, (long long)t, (long long)pt);
            cr_assert_eq(e.at_ms, t);
            cr_assert(k.len == pk.len && !memcmp(k.data, pk.data, k.len), "seq %lld: another parcel", (long long)s);
            cr_assert_str_eq(loc, ploc, "seq %lld: another location", (long long)s);
            ties++;
        }
        prev_tie = is;
        pt = t;
        snprintf(ploc, sizeof(ploc), "%s", loc);
        sd_buf_reset(&pk);
        sd_buf_append(&pk, k.data, k.len);
    }
    cr_assert(ties > 4000 * 15 / 100 && ties < 4000 * 25 / 100, "%lld ties of 4000", (long long)ties);
    sd_buf_free(&p); sd_buf_free(&k); sd_buf_free(&pp); sd_buf_free(&pk);
    sd_events_close(ev); sd_events_close(ev2); sd_events_close(off);
}

/* A scan has a delivery of the generator's exactly when the generator
 * renders one for it (what `inject ... source=deliveries` leaves alone). */
Test(events, has_delivery_agrees_with_the_delivery_rendered) {
    sd_events_conf_t c = {.kind = SD_EVENTS_PARCEL, .seed = 3, .tag = "a1b2c3d4", .start_ms = 1767254400000LL, .step_ms = 1000,
                          .parcels = 50, .locations = 24, .delivery_share = 70, .delivery_min_ms = 60000, .delivery_max_ms = 480000,
                          .delivery_orphans = 5};
    sd_events_t *ev;
    char err[256];
    cr_assert_eq(sd_events_open(&c, &ev, err, sizeof(err)), SD_OK, "%s", err);
    sd_buf_t p, k;
    sd_buf_init(&p); sd_buf_init(&k);
    int64_t have = 0, t;
    for (int64_t s = 0; s < 2000; s++) {
        int d = sd_events_delivery(ev, s, 1767254400000LL, &p, &k, &t);
        cr_assert_eq(sd_events_has_delivery(ev, s), d, "seq %lld", (long long)s);
        have += d;
    }
    cr_assert(have > 2000 * 60 / 100 && have < 2000 * 80 / 100, "%lld of 2000", (long long)have);
    sd_buf_free(&p); sd_buf_free(&k);
    sd_events_close(ev);
}

/* orphans=: that share of the deliveries is for a parcel no scan has (a
 * parcel number past the generator's), never on a join edge; the rest
 * keep their scan's parcel. */
Test(events, orphan_deliveries_name_parcels_never_scanned) {
    sd_events_conf_t c = {.kind = SD_EVENTS_PARCEL, .seed = 9, .tag = "a1b2c3d4", .start_ms = 1767254400000LL, .step_ms = 1000,
                          .parcels = 50, .locations = 24, .delivery_share = 100, .delivery_min_ms = 0, .delivery_max_ms = 1000,
                          .delivery_orphans = 20, .edge_share = 25, .edge_join = 1, .edge_upper_ms = 300000};
    sd_events_t *ev;
    char err[256];
    cr_assert_eq(sd_events_open(&c, &ev, err, sizeof(err)), SD_OK, "%s", err);
    sd_buf_t p, k, sp, sk;
    sd_buf_init(&p); sd_buf_init(&k); sd_buf_init(&sp); sd_buf_init(&sk);
    int orphans = 0;
    for (int64_t s = 0; s < 2000; s++) {
        int64_t st, dt;
        cr_assert_eq(sd_events_render(ev, s, INT64_MIN, &sp, &sk, &st, err, sizeof(err)), SD_OK);
        cr_assert(sd_events_delivery(ev, s, st, &p, &k, &dt));
        unsigned parcel = (unsigned)strtoul(k.data + 1, NULL, 10);
        sd_edge_t e;
        if (parcel >= 50) {
            orphans++;
            cr_assert(parcel < 100, "orphan parcel %u", parcel);
            cr_assert(!sd_events_delivery_edge(ev, s, &e), "an orphan on an edge");
        } else {
            cr_assert(k.len == sk.len && !memcmp(k.data, sk.data, k.len), "keyed by its scan's parcel");
        }
    }
    cr_assert(orphans > 300 && orphans < 500, "%d orphans of 2000, expected about 20%%", orphans);
    sd_buf_free(&p); sd_buf_free(&k); sd_buf_free(&sp); sd_buf_free(&sk);
    sd_events_close(ev);
}

/* ---- the registry wire format (harness/format/wire.c) ---- */

#include <avro.h>

#include "wire.h"

static sd_wire_t *parcel_wire(int id, int foreign_id) {
    char *schema = sd_wire_parcel_schema(SD_WIRE_AVRO, "event_id", "event_time"), err[256];
    sd_wire_t *w = NULL;
    cr_assert_eq(sd_wire_open(SD_WIRE_AVRO, schema, id, foreign_id, &w, err, sizeof(err)), SD_OK, "%s", err);
    free(schema);
    return w;
}

Test(wire, a_scan_is_encoded_byte_for_byte_as_avro_specifies) {
    sd_wire_t *w = parcel_wire(7, 8);
    const char *json = "{\"event_id\":\"t-1\",\"parcel_id\":\"P1\",\"event_time\":\"2026\",\"location\":\"L\",\"scan\":\"s\",\"weight_g\":300}";
    /* magic 0, id 7 big-endian; strings: zigzag length, bytes; 300 as a long: zigzag 600 = varint d8 04 */
    static const unsigned char want[] = {0, 0, 0, 0, 7, 6, 't', '-', '1', 4, 'P', '1', 8, '2', '0', '2', '6', 2, 'L', 2, 's', 0xd8, 0x04};
    sd_buf_t out;
    sd_buf_init(&out);
    char err[256];
    cr_assert_eq(sd_wire_encode(w, json, strlen(json), &out, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(out.len, sizeof(want));
    cr_assert_eq(memcmp(out.data, want, sizeof(want)), 0);
    /* each malformed kind of the wire format, from the same event */
    sd_wire_malformed(w, SD_MAL_BAD_MAGIC, json, strlen(json), &out);
    cr_assert_eq(out.len, sizeof(want));
    cr_assert_eq((unsigned char)out.data[0], 1);
    cr_assert_eq(memcmp(out.data + 1, want + 1, sizeof(want) - 1), 0);
    sd_wire_malformed(w, SD_MAL_UNKNOWN_SCHEMA, json, strlen(json), &out);
    static const unsigned char unknown[] = {0, 0x7f, 0xff, 0xff, 0xef};
    cr_assert_eq(memcmp(out.data, unknown, 5), 0);
    cr_assert_eq(memcmp(out.data + 5, want + 5, sizeof(want) - 5), 0);
    sd_wire_malformed(w, SD_MAL_TRUNCATED_RECORD, json, strlen(json), &out);
    cr_assert_eq(out.len, 5 + (sizeof(want) - 5) / 2);
    cr_assert_eq(memcmp(out.data, want, out.len), 0);
    sd_wire_malformed(w, SD_MAL_FOREIGN_SCHEMA, json, strlen(json), &out);
    static const unsigned char foreign_head[] = {0, 0, 0, 0, 8, 6, 't', '-', '1'};
    cr_assert_eq(memcmp(out.data, foreign_head, sizeof(foreign_head)), 0);
    /* a JSON kind is sent as its own bytes, no header */
    sd_wire_malformed(w, SD_MAL_NOT_JSON, "not json", 8, &out);
    cr_assert_eq(out.len, 8);
    cr_assert_eq(memcmp(out.data, "not json", 8), 0);
    sd_buf_free(&out);
    sd_wire_close(w);
}

Test(wire, every_generated_scan_decodes_back_to_its_json) {
    sd_events_t *ev = gen(3, "w1");
    sd_wire_t *w = parcel_wire(1, 2);
    char *schema_text = sd_wire_parcel_schema(SD_WIRE_AVRO, "event_id", "event_time");
    avro_schema_t schema;
    cr_assert_eq(avro_schema_from_json_length(schema_text, strlen(schema_text), &schema), 0);
    avro_value_iface_t *iface = avro_generic_class_from_schema(schema);
    sd_buf_t p, k, out;
    sd_buf_init(&p), sd_buf_init(&k), sd_buf_init(&out);
    char err[256];
    for (int64_t s = 0; s < 1000; s++) {
        sd_buf_reset(&p), sd_buf_reset(&k);
        cr_assert_eq(sd_events_render(ev, s, INT64_MIN, &p, &k, NULL, err, sizeof(err)), SD_OK);
        cr_assert_eq(sd_wire_encode(w, p.data, p.len, &out, err, sizeof(err)), SD_OK, "%s", err);
        avro_value_t v;
        avro_generic_value_new(iface, &v);
        avro_reader_t r = avro_reader_memory(out.data + 5, (int64_t)out.len - 5);
        cr_assert_eq(avro_value_read(r, &v), 0);
        avro_reader_free(r);
        char *back = NULL;
        cr_assert_eq(avro_value_to_json(&v, 1, &back), 0);
        json_t *a = json_loadb(p.data, p.len, 0, NULL), *b = json_loads(back, 0, NULL);
        cr_assert(json_equal(a, b), "event %lld: %s came back as %s", (long long)s, p.data, back);
        json_decref(a), json_decref(b), free(back);
        avro_value_decref(&v);
    }
    sd_buf_free(&p), sd_buf_free(&k), sd_buf_free(&out);
    avro_value_iface_decref(iface);
    avro_schema_decref(schema);
    free(schema_text);
    sd_wire_close(w);
    sd_events_close(ev);
}

Test(wire, an_event_that_does_not_fit_the_schema_is_refused_by_its_field) {
    const char *schema = "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"id\",\"type\":\"string\"},"
                         "{\"name\":\"at\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-millis\"}},"
                         "{\"name\":\"note\",\"type\":[\"null\",\"string\"]}]}";
    sd_wire_t *w = NULL;
    char err[256];
    cr_assert_eq(sd_wire_open(SD_WIRE_AVRO, schema, 1, -1, &w, err, sizeof(err)), SD_OK, "%s", err);
    sd_buf_t out;
    sd_buf_init(&out);
    /* an ISO-8601 time into a timestamp-millis long; an optional field left out is null (union branch 0) */
    const char *ok = "{\"id\":\"a\",\"at\":\"1970-01-01T00:00:00.001Z\"}";
    cr_assert_eq(sd_wire_encode(w, ok, strlen(ok), &out, err, sizeof(err)), SD_OK, "%s", err);
    static const unsigned char want[] = {0, 0, 0, 0, 1, 2, 'a', 2, 0};
    cr_assert_eq(out.len, sizeof(want));
    cr_assert_eq(memcmp(out.data, want, sizeof(want)), 0);
    const char *missing = "{\"at\":1}";
    cr_assert_eq(sd_wire_encode(w, missing, strlen(missing), &out, err, sizeof(err)), SD_ERR_SCENARIO);
    cr_assert(strstr(err, "field id"), "%s", err);
    const char *wrong = "{\"id\":\"a\",\"at\":\"yesterday\"}";
    cr_assert_eq(sd_wire_encode(w, wrong, strlen(wrong), &out, err, sizeof(err)), SD_ERR_SCENARIO);
    cr_assert(strstr(err, "field at"), "%s", err);
    sd_buf_free(&out);
    sd_wire_close(w);
    cr_assert_eq(sd_wire_open(SD_WIRE_AVRO, "{\"type\":\"record\"", 1, -1, &w, err, sizeof(err)), SD_ERR_SCENARIO);
}

Test(wire, a_scan_is_encoded_in_protobuf_byte_for_byte) {
    sd_wire_t *w = NULL;
    char err[256];
    cr_assert_eq(sd_wire_open(SD_WIRE_PROTOBUF, "", 7, 8, &w, err, sizeof(err)), SD_OK, "%s", err);
    const char *json = "{\"event_id\":\"t-1\",\"parcel_id\":\"P1\",\"event_time\":\"2026\",\"location\":\"L\",\"scan\":\"s\",\"weight_g\":300}";
    /* magic 0, id 7, message index 0; fields 1-5 length-delimited (tag n<<3|2), field 6 a varint (tag 0x30): 300 = ac 02 */
    static const unsigned char want[] = {0, 0, 0, 0, 7, 0, 0x0a, 3, 't', '-', '1', 0x12, 2, 'P', '1', 0x1a, 4, '2', '0', '2', '6',
                                         0x22, 1, 'L', 0x2a, 1, 's', 0x30, 0xac, 0x02};
    sd_buf_t out;
    sd_buf_init(&out);
    cr_assert_eq(sd_wire_encode(w, json, strlen(json), &out, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(out.len, sizeof(want));
    cr_assert_eq(memcmp(out.data, want, sizeof(want)), 0);
    sd_wire_malformed(w, SD_MAL_TRUNCATED_RECORD, json, strlen(json), &out);
    cr_assert_eq(out.len, 6 + (sizeof(want) - 6) / 2);
    sd_wire_malformed(w, SD_MAL_FOREIGN_SCHEMA, json, strlen(json), &out);
    static const unsigned char foreign_head[] = {0, 0, 0, 0, 8, 0, 0x0a, 3, 't', '-', '1', 0x12};
    cr_assert_eq(memcmp(out.data, foreign_head, sizeof(foreign_head)), 0);
    const char *missing = "{\"event_id\":\"t-1\"}";
    cr_assert_eq(sd_wire_encode(w, missing, strlen(missing), &out, err, sizeof(err)), SD_ERR_SCENARIO);
    cr_assert(strstr(err, "field parcel_id"), "%s", err);
    /* the registered text is harness/format/parcel_scan.proto, as compiled */
    char *proto = sd_wire_parcel_schema(SD_WIRE_PROTOBUF, "event_id", "event_time");
    cr_assert(strstr(proto, "message ParcelScan {") && strstr(proto, "int64 weight_g = 6;"), "%s", proto);
    free(proto);
    sd_buf_free(&out);
    sd_wire_close(w);
}

Test(wire, a_scan_in_json_schema_is_its_json_after_the_header_and_each_kind_breaks_it) {
    char *schema = sd_wire_parcel_schema(SD_WIRE_JSON, "event_id", "event_time"), err[256];
    sd_wire_t *w = NULL;
    cr_assert_eq(sd_wire_open(SD_WIRE_JSON, schema, 7, 8, &w, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert(sd_wire_pick_violation(w, schema, "event_id", "event_time"));
    const char *json = "{\"event_id\":\"t-1\",\"parcel_id\":\"P1\",\"event_time\":\"2026\",\"location\":\"L\",\"scan\":\"s\",\"weight_g\":300}";
    sd_buf_t out;
    sd_buf_init(&out);
    /* magic 0, id 7 big-endian, then the event's own bytes */
    cr_assert_eq(sd_wire_encode(w, json, strlen(json), &out, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(out.len, 5 + strlen(json));
    cr_assert_eq(memcmp(out.data, "\0\0\0\0\7", 5), 0);
    cr_assert_eq(memcmp(out.data + 5, json, strlen(json)), 0);
    /* the schema refuses what does not fit, by place and keyword */
    const char *light = "{\"event_id\":\"t-1\",\"parcel_id\":\"P1\",\"event_time\":\"2026\",\"location\":\"L\",\"scan\":\"s\",\"weight_g\":-3}";
    cr_assert_eq(sd_wire_encode(w, light, strlen(light), &out, err, sizeof(err)), SD_ERR_SCENARIO);
    cr_assert(strstr(err, "/weight_g: minimum: -3 is below 0"), "%s", err);
    /* the kinds: bad magic, an unknown id, half the text, a Note under the foreign id, weight_g as text */
    sd_wire_malformed(w, SD_MAL_BAD_MAGIC, json, strlen(json), &out);
    cr_assert_eq((unsigned char)out.data[0], 1);
    cr_assert_eq(memcmp(out.data + 5, json, strlen(json)), 0);
    sd_wire_malformed(w, SD_MAL_UNKNOWN_SCHEMA, json, strlen(json), &out);
    cr_assert_eq(memcmp(out.data, "\0\x7f\xff\xff\xef", 5), 0);
    sd_wire_malformed(w, SD_MAL_TRUNCATED_RECORD, json, strlen(json), &out);
    cr_assert_eq(out.len, 5 + strlen(json) / 2);
    sd_wire_malformed(w, SD_MAL_FOREIGN_SCHEMA, json, strlen(json), &out);
    const char note[] = "\0\0\0\0\x08{\"event_id\":\"t-1\",\"note\":\"a record of a schema this topic's subject never accepted\"}";
    cr_assert_eq(out.len, sizeof(note) - 1);
    cr_assert_eq(memcmp(out.data, note, sizeof(note) - 1), 0);
    sd_wire_malformed(w, SD_MAL_SCHEMA_VIOLATION, json, strlen(json), &out);
    const char bad[] = "\0\0\0\0\7{\"event_id\":\"t-1\",\"parcel_id\":\"P1\",\"event_time\":\"2026\",\"location\":\"L\",\"scan\":\"s\",\"weight_g\":\"300\"}";
    cr_assert_eq(out.len, sizeof(bad) - 1);
    cr_assert_eq(memcmp(out.data, bad, sizeof(bad) - 1), 0);
    /* the violation is one the schema refuses, the foreign Note one it refuses too */
    sd_jschema_t *js = sd_jschema_compile(schema, strlen(schema), err, sizeof(err));
    json_t *j = json_loadb(bad + 5, sizeof(bad) - 6, 0, NULL), *n = json_loadb(note + 5, sizeof(note) - 6, 0, NULL);
    cr_assert_eq(sd_jschema_valid(js, j, err, sizeof(err)), SD_JSCHEMA_INVALID);
    cr_assert_eq(sd_jschema_valid(js, n, err, sizeof(err)), SD_JSCHEMA_INVALID);
    json_decref(j), json_decref(n);
    sd_jschema_free(js);
    /* a schema with no number field beside the id and the time has nothing to break */
    cr_assert_not(sd_wire_pick_violation(w, "{\"properties\":{\"event_id\":{\"type\":\"integer\"},\"x\":{\"type\":\"string\"}}}", "event_id", "t"));
    sd_buf_free(&out);
    free(schema);
    sd_wire_close(w);
}

Test(wire, every_generated_scan_is_valid_by_the_parcel_json_schema) {
    sd_events_t *ev = gen(3, "w1");
    char *schema = sd_wire_parcel_schema(SD_WIRE_JSON, "event_id", "event_time"), err[256];
    sd_wire_t *w = NULL;
    cr_assert_eq(sd_wire_open(SD_WIRE_JSON, schema, 1, 2, &w, err, sizeof(err)), SD_OK, "%s", err);
    sd_buf_t p, k, out;
    sd_buf_init(&p), sd_buf_init(&k), sd_buf_init(&out);
    for (int64_t s = 0; s < 1000; s++) {
        sd_buf_reset(&p), sd_buf_reset(&k);
        cr_assert_eq(sd_events_render(ev, s, INT64_MIN, &p, &k, NULL, err, sizeof(err)), SD_OK);
        cr_assert_eq(sd_wire_encode(w, p.data, p.len, &out, err, sizeof(err)), SD_OK, "event %lld: %s", (long long)s, err);
    }
    sd_buf_free(&p), sd_buf_free(&k), sd_buf_free(&out);
    free(schema);
    sd_wire_close(w);
    sd_events_close(ev);
}

/* The Protobuf reader (harness/format/protodyn.cpp): records decoded by the
 * schema's text as a registry holds it, not by compiled code. */
Test(wire, protobuf_records_decode_by_the_schema_text) {
    /* the parcel scans: protobuf-c's bytes read back by the .proto text */
    char *text = sd_wire_parcel_schema(SD_WIRE_PROTOBUF, "event_id", "event_time"), why[256];
    sd_protodyn_t *pd = sd_protodyn_parse(text, why, sizeof(why));
    cr_assert(pd, "%s", why);
    sd_wire_t *w = NULL;
    cr_assert_eq(sd_wire_open(SD_WIRE_PROTOBUF, "", 7, 8, &w, why, sizeof(why)), SD_OK);
    const char *json = "{\"event_id\":\"t-1\",\"parcel_id\":\"P1\",\"event_time\":\"2026\",\"location\":\"L\",\"scan\":\"s\",\"weight_g\":300}";
    sd_buf_t out;
    sd_buf_init(&out);
    cr_assert_eq(sd_wire_encode(w, json, strlen(json), &out, why, sizeof(why)), SD_OK, "%s", why);
    json_t *got = NULL, *want = json_loads(json, 0, NULL);
    cr_assert_eq(sd_protodyn_decode(pd, (const uint8_t *)out.data + 5, out.len - 5, &got, why, sizeof(why)), 0, "%s", why);
    cr_assert(json_equal(got, want), "%s", json_dumps(got, JSON_COMPACT));
    json_decref(got);
    /* cut short: named, never half a row */
    cr_assert_eq(sd_protodyn_decode(pd, (const uint8_t *)out.data + 5, (out.len - 5) / 2, &got, why, sizeof(why)), -1);
    cr_assert(strstr(why, "ParcelScan: a record cut short"), "%s", why);
    json_decref(want);
    sd_buf_free(&out);
    sd_wire_close(w);
    sd_protodyn_free(pd);
    free(text);

    /* nested messages, an enum, packed repeated, sint64, double, bytes, a
     * oneof, a field of a newer schema; the second message of the file */
    const char *proto = "syntax = \"proto3\";\npackage t;\n// a comment\nmessage Other { string x = 1; }\n"
                        "message Scan {\n  enum Kind { UNKNOWN = 0; IN = 1; OUT = 2; }\n  message Where { string hub = 1; sint64 dz = 2; }\n"
                        "  string id = 1;\n  Kind kind = 2;\n  repeated int32 bins = 3 [packed = true];\n  Where where = 4;\n"
                        "  double w = 5;\n  bytes raw = 6;\n  oneof o { string note = 7; int32 code = 8; }\n  .t.Other other = 9;\n"
                        "  bool flag = 10;\n  reserved 11;\n}\n";
    pd = sd_protodyn_parse(proto, why, sizeof(why));
    cr_assert(pd, "%s", why);
    static const uint8_t rec[] = {0x02, 0x02, /* message indexes [1]: Scan */
                                  0x0a, 0x01, 'a', 0x10, 0x02, 0x1a, 0x03, 0x01, 0xac, 0x02, 0x22, 0x05, 0x0a, 0x01, 'H', 0x10, 0x05,
                                  0x29, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0x32, 0x02, 'h', 'i', 0x40, 0x07, 0x78, 0x01};
    cr_assert_eq(sd_protodyn_decode(pd, rec, sizeof(rec), &got, why, sizeof(why)), 0, "%s", why);
    want = json_loads("{\"id\":\"a\",\"kind\":\"OUT\",\"bins\":[1,300],\"where\":{\"hub\":\"H\",\"dz\":-3},\"w\":1.5,\"raw\":\"aGk=\","
                      "\"code\":7,\"flag\":false}", 0, NULL);
    cr_assert(json_equal(got, want), "%s", json_dumps(got, JSON_COMPACT));
    json_decref(got), json_decref(want);
    /* a message index the file does not have */
    static const uint8_t far[] = {0x02, 0x06, 0x0a, 0x01, 'a'};
    cr_assert_eq(sd_protodyn_decode(pd, far, sizeof(far), &got, why, sizeof(why)), -1);
    cr_assert(strstr(why, "message index 3"), "%s", why);
    sd_protodyn_free(pd);

    /* what protoc would refuse is refused with its place; map<> and the
     * well-known types' imports are read (tests/unit/test_protodyn.c) */
    const char *bad[][2] = {{"syntax = \"proto3\";\nmessage M {\n  map<string> m = 1;\n}", "line 3:13: Expected \",\"."},
                            {"syntax = \"proto3\";\nimport \"other.proto\";\nmessage M { int32 a = 1; }", "import \"other.proto\""},
                            {"syntax = \"proto3\";\nmessage M { google.protobuf.Timestamp at = 1; }", "\"google.protobuf.Timestamp\" is not defined"},
                            {"syntax = \"proto3\";\nmessage M { int32 a = 0; }", "M.a: Field numbers must be positive integers"},
                            {"syntax = \"proto3\";", "no message in the schema"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_null(sd_protodyn_parse(bad[i][0], why, sizeof(why)), "%s", bad[i][0]);
        cr_assert(strstr(why, bad[i][1]), "%s: %s", bad[i][0], why);
    }
}

/* The Protobuf encoder by a schema's text: the parcel scans byte for byte
 * as protobuf-c's compiled message writes them, and a richer message back
 * through the decoder as it went in. */
Test(wire, protobuf_records_encode_by_the_schema_text) {
    char *text = sd_wire_parcel_schema(SD_WIRE_PROTOBUF, "event_id", "event_time"), why[256];
    /* a schema text that is not the compiled one's goes through protodyn.cpp */
    char *own = sd_util_fmt("// a user's copy\n%s", text);
    sd_wire_t *compiled = NULL, *dyn = NULL;
    cr_assert_eq(sd_wire_open(SD_WIRE_PROTOBUF, text, 7, 8, &compiled, why, sizeof(why)), SD_OK, "%s", why);
    cr_assert_eq(sd_wire_open(SD_WIRE_PROTOBUF, own, 7, 8, &dyn, why, sizeof(why)), SD_OK, "%s", why);
    sd_events_t *ev = gen(5, "pb");
    sd_buf_t p, k, a, b;
    sd_buf_init(&p), sd_buf_init(&k), sd_buf_init(&a), sd_buf_init(&b);
    for (int64_t s = 0; s < 500; s++) {
        sd_buf_reset(&p), sd_buf_reset(&k);
        cr_assert_eq(sd_events_render(ev, s, INT64_MIN, &p, &k, NULL, why, sizeof(why)), SD_OK);
        cr_assert_eq(sd_wire_encode(compiled, p.data, p.len, &a, why, sizeof(why)), SD_OK, "%s", why);
        cr_assert_eq(sd_wire_encode(dyn, p.data, p.len, &b, why, sizeof(why)), SD_OK, "%s", why);
        cr_assert(a.len == b.len && !memcmp(a.data, b.data, a.len), "event %lld: the two encodings differ", (long long)s);
    }
    /* a value that does not fit its field: named */
    const char *bad = "{\"event_id\":\"x\",\"weight_g\":\"heavy\"}";
    cr_assert_eq(sd_wire_encode(dyn, bad, strlen(bad), &b, why, sizeof(why)), SD_ERR_SCENARIO);
    cr_assert(strstr(why, "ParcelScan.weight_g: the value does not fit its type"), "%s", why);
    sd_buf_free(&p), sd_buf_free(&k), sd_buf_free(&a), sd_buf_free(&b);
    sd_wire_close(compiled), sd_wire_close(dyn);
    sd_events_close(ev);
    free(own), free(text);

    const char *proto = "syntax = \"proto3\";\nmessage Scan {\n  enum Kind { UNKNOWN = 0; IN = 1; OUT = 2; }\n"
                        "  message Where { string hub = 1; sint64 dz = 2; }\n  string id = 1;\n  Kind kind = 2;\n  repeated int32 bins = 3;\n"
                        "  Where where = 4;\n  double w = 5;\n  bytes raw = 6;\n  repeated Where path = 7;\n  fixed32 f = 8;\n  bool flag = 9;\n"
                        "  int32 neg = 10;\n  float g = 11;\n}\n";
    sd_protodyn_t *pd = sd_protodyn_parse(proto, why, sizeof(why));
    cr_assert(pd, "%s", why);
    json_t *in = json_loads("{\"id\":\"a\",\"kind\":\"OUT\",\"bins\":[1,300,-2],\"where\":{\"hub\":\"H\",\"dz\":-3},\"w\":1.5,\"raw\":\"aGk=\","
                            "\"path\":[{\"hub\":\"A\",\"dz\":0},{\"hub\":\"B\",\"dz\":7}],\"f\":4000000000,\"flag\":true,\"neg\":-1,\"g\":0.25,"
                            "\"extra\":\"not in the schema\"}", 0, NULL);
    uint8_t *buf = malloc(1);
    buf[0] = 0; /* the message indexes, as the wire format puts them first */
    size_t n = 1;
    cr_assert_eq(sd_protodyn_encode(pd, in, &buf, &n, why, sizeof(why)), 0, "%s", why);
    json_t *back = NULL;
    cr_assert_eq(sd_protodyn_decode(pd, buf, n, &back, why, sizeof(why)), 0, "%s", why);
    json_object_del(in, "extra");
    cr_assert(json_equal(in, back), "%s", json_dumps(back, JSON_COMPACT));
    json_decref(in), json_decref(back);
    free(buf);
    sd_protodyn_free(pd);
}

/* An Avro bytes or fixed value read from a file sink: UTF-8 text as it is,
 * other bytes as base64, never the record dropped (jansson refuses a
 * string that is no UTF-8). */
Test(wire, avro_bytes_that_are_no_utf8_are_kept_as_base64) {
    char path[] = "/tmp/sd-test-avro-bytes-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    unlink(path);
    avro_schema_t schema;
    const char *text = "{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"event_id\",\"type\":\"string\"},"
                       "{\"name\":\"blob\",\"type\":\"bytes\"},{\"name\":\"tag\",\"type\":{\"type\":\"fixed\",\"name\":\"t4\",\"size\":4}}]}";
    cr_assert_eq(avro_schema_from_json_length(text, strlen(text), &schema), 0);
    avro_file_writer_t w;
    cr_assert_eq(avro_file_writer_create(path, schema, &w), 0, "%s", avro_strerror());
    avro_value_iface_t *iface = avro_generic_class_from_schema(schema);
    avro_value_t v, f;
    avro_generic_value_new(iface, &v);
    const char *ids[2] = {"text", "binary"};
    const char *blobs[2] = {"caf\xc3\xa9", "\xff\xfe\x00\x01"};
    const size_t blens[2] = {5, 4};
    const char *tags[2] = {"abcd", "\x80" "abc"};
    for (int i = 0; i < 2; i++) {
        avro_value_get_by_name(&v, "event_id", &f, NULL);
        avro_value_set_string(&f, ids[i]);
        avro_value_get_by_name(&v, "blob", &f, NULL);
        avro_value_set_bytes(&f, (void *)blobs[i], blens[i]);
        avro_value_get_by_name(&v, "tag", &f, NULL);
        avro_value_set_fixed(&f, (void *)tags[i], 4);
        cr_assert_eq(avro_file_writer_append_value(w, &v), 0);
    }
    avro_file_writer_close(w);
    avro_value_decref(&v);
    avro_value_iface_decref(iface);
    avro_schema_decref(schema);
    char err[512];
    FILE *lines = sd_wire_ocf_lines(path, err, sizeof(err));
    cr_assert(lines, "%s", err);
    char buf[512];
    cr_assert(fgets(buf, sizeof(buf), lines));
    json_t *j = json_loads(buf, 0, NULL);
    cr_assert(j, "%s", buf);
    cr_assert_str_eq(json_string_value(json_object_get(j, "blob")), "caf\xc3\xa9");
    cr_assert_str_eq(json_string_value(json_object_get(j, "tag")), "abcd");
    json_decref(j);
    cr_assert(fgets(buf, sizeof(buf), lines), "the record with bytes that are no UTF-8 is there");
    j = json_loads(buf, 0, NULL);
    cr_assert(j, "%s", buf);
    cr_assert_str_eq(json_string_value(json_object_get(j, "event_id")), "binary");
    cr_assert_str_eq(json_string_value(json_object_get(j, "blob")), "//4AAQ==");
    cr_assert_str_eq(json_string_value(json_object_get(j, "tag")), "gGFiYw==");
    json_decref(j);
    fclose(lines);
    unlink(path);
}
