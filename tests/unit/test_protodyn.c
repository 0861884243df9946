/* test_protodyn.c - the Protobuf reader and writer by a schema's text
 * (harness/format/protodyn.cpp, libprotobuf behind protodyn.h).
 *
 * First the existing corpus read by the new reader and by the hand-written
 * one it replaced (tests/unit/protodyn_legacy.c) side by side: the parcel
 * scans as the harness sends them, tests/scenarios/data/scans.proto with
 * tests/scenarios/data/scans.jsonl, every prefix of those records, and the
 * fuzz seeds of fuzz_wire. Then one test per defect issue 76 found in the
 * hand-written reader, and the parts it refused (import, map<>, the
 * well-known types).
 *
 * Each defect test fails on the hand-written reader: build this file with
 * -DSD_PROTODYN_TEST_LEGACY (the calls then go to protodyn_legacy.c) and
 * run it:
 *   cc -DSD_PROTODYN_TEST_LEGACY $(CPPFLAGS) -o build/tests/test_protodyn_legacy tests/unit/test_protodyn.c \
 *      tests/unit/protodyn_legacy.c build/libstreamdrill.a -lcriterion $(LIBS)
 * (`make protodyn-legacy-check` does that and lists what fails there). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "protodyn.h"
#include "protodyn_legacy.h"
#include "util.h"
#include "wire.h"

#ifdef SD_PROTODYN_TEST_LEGACY
/* the hand-written reader under the new one's names (it has no files to import) */
#define sd_protodyn_t sd_protodyn_legacy_t
#define sd_protodyn_parse sd_protodyn_legacy_parse
#define sd_protodyn_decode sd_protodyn_legacy_decode
#define sd_protodyn_encode sd_protodyn_legacy_encode
#define sd_protodyn_free sd_protodyn_legacy_free
#define sd_protodyn_parse_files(text, names, texts, n, err, errlen) ((void)(names), (void)(texts), sd_protodyn_legacy_parse(text, err, errlen))
#endif

static sd_protodyn_t *parse(const char *text) {
    char why[512];
    sd_protodyn_t *p = sd_protodyn_parse(text, why, sizeof(why));
    cr_assert(p, "the schema should read: %s\n%s", why, text);
    return p;
}

/* The record b decoded; NULL (why filled) when it does not decode. */
static json_t *decode(const sd_protodyn_t *p, const uint8_t *b, size_t n, char *why, size_t whylen) {
    json_t *o = NULL;
    return sd_protodyn_decode(p, b, n, &o, why, whylen) ? NULL : o;
}

static void expect_json(json_t *got, const char *want_text) {
    json_t *want = json_loads(want_text, 0, NULL);
    cr_assert(want, "a bad expectation: %s", want_text);
    char *g = got ? json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    cr_assert(got && json_equal(got, want), "expected %s, got %s", want_text, g ? g : "nothing");
    free(g);
    json_decref(want);
}

/* o encoded as the first message (the message indexes, a single 0, first) */
static int encode(const sd_protodyn_t *p, const char *json, uint8_t **buf, size_t *n, char *why, size_t whylen) {
    json_t *o = json_loads(json, 0, NULL);
    cr_assert(o, "bad JSON in the test: %s", json);
    *buf = calloc(1, 1);
    *n = 1;
    int rc = sd_protodyn_encode(p, o, buf, n, why, whylen);
    json_decref(o);
    return rc;
}

static char *slurp(const char *path, size_t *len) {
    char *t = NULL, err[256];
    size_t n = 0;
    cr_assert_eq(sd_util_read_file(path, &t, &n, err, sizeof(err)), SD_OK, "%s", err);
    if (len) *len = n;
    return t;
}

/* ---- the corpus, read by both ---- */

typedef struct {
    sd_protodyn_t *now;
    sd_protodyn_legacy_t *old;
    int records, decoded, refused;
} both_t;

static void both_open(both_t *b, const char *text) {
    char why[512];
    b->now = sd_protodyn_parse(text, why, sizeof(why));
    cr_assert(b->now, "new reader: %s", why);
    b->old = sd_protodyn_legacy_parse(text, why, sizeof(why));
    cr_assert(b->old, "old reader: %s", why);
}

static void both_close(both_t *b) {
    sd_protodyn_free(b->now);
    sd_protodyn_legacy_free(b->old);
}

/* One record by both: both refuse it, or both read the same JSON. */
static void both_decode(both_t *b, const uint8_t *rec, size_t n, const char *what) {
    char why_now[512] = "", why_old[512] = "";
    json_t *a = NULL, *o = NULL;
    int rn = sd_protodyn_decode(b->now, rec, n, &a, why_now, sizeof(why_now));
    int ro = sd_protodyn_legacy_decode(b->old, rec, n, &o, why_old, sizeof(why_old));
    char *ta = a ? json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS) : NULL, *to = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    cr_assert_eq(rn, ro, "%s (%zu bytes): new reader %s (%s), old reader %s (%s)", what, n, rn ? "refuses" : "reads", rn ? why_now : ta,
                 ro ? "refuses" : "reads", ro ? why_old : to);
    cr_assert(rn || json_equal(a, o), "%s: new %s, old %s", what, ta, to);
    b->records++;
    rn ? b->refused++ : b->decoded++;
    free(ta), free(to);
    json_decref(a), json_decref(o);
}

/* rec and every prefix of it */
static void both_decode_prefixes(both_t *b, const uint8_t *rec, size_t n, const char *what) {
    for (size_t k = 0; k <= n; k++) both_decode(b, rec, k, what);
}

Test(protodyn, the_parcel_scans_read_the_same_by_both_readers) {
    char *text = sd_wire_parcel_schema(SD_WIRE_PROTOBUF, "event_id", "event_time"), err[256];
    both_t b = {0};
    both_open(&b, text);
    sd_events_conf_t c = {.kind = SD_EVENTS_PARCEL, .seed = 76, .tag = "pd", .start_ms = 1767254400000LL, .step_ms = 1000,
                          .parcels = 5000, .locations = 24, .id_field = "event_id", .time_field = "event_time"};
    sd_events_t *ev;
    cr_assert_eq(sd_events_open(&c, &ev, err, sizeof(err)), SD_OK, "%s", err);
    sd_wire_t *w = NULL;
    cr_assert_eq(sd_wire_open(SD_WIRE_PROTOBUF, text, 7, 8, &w, err, sizeof(err)), SD_OK, "%s", err);
    sd_buf_t p, k, out;
    sd_buf_init(&p), sd_buf_init(&k), sd_buf_init(&out);
    for (int64_t s = 0; s < 500; s++) {
        sd_buf_reset(&p), sd_buf_reset(&k);
        cr_assert_eq(sd_events_render(ev, s, INT64_MIN, &p, &k, NULL, err, sizeof(err)), SD_OK);
        cr_assert_eq(sd_wire_encode(w, p.data, p.len, &out, err, sizeof(err)), SD_OK, "%s", err);
        char what[64];
        snprintf(what, sizeof(what), "parcel scan %lld", (long long)s);
        if (s < 20) both_decode_prefixes(&b, (const uint8_t *)out.data + 5, out.len - 5, what);
        else both_decode(&b, (const uint8_t *)out.data + 5, out.len - 5, what);
    }
    cr_assert_gt(b.decoded, 500);
    cr_assert_gt(b.refused, 100, "the prefixes cut inside a field: %d refused", b.refused);
    sd_buf_free(&p), sd_buf_free(&k), sd_buf_free(&out);
    sd_wire_close(w);
    sd_events_close(ev);
    both_close(&b);
    free(text);
}

/* scans.proto and scans.jsonl, the user's schema the drills register
 * (tests/scenarios/protobuf-log.drill): encoded by both byte for byte the
 * same, and read back the same by both. */
Test(protodyn, the_scans_of_the_drills_encode_and_read_the_same_by_both) {
    char *text = slurp("tests/scenarios/data/scans.proto", NULL), *lines = slurp("tests/scenarios/data/scans.jsonl", NULL);
    both_t b = {0};
    both_open(&b, text);
    int n = 0;
    for (char *line = strtok(lines, "\n"); line; line = strtok(NULL, "\n"), n++) {
        json_t *o = json_loads(line, 0, NULL);
        if (!o) continue; /* the file's malformed lines are the drills' own */
        uint8_t *a = calloc(1, 1), *c = calloc(1, 1);
        size_t na = 1, nc = 1;
        char why[512];
        int ra = sd_protodyn_encode(b.now, o, &a, &na, why, sizeof(why));
        cr_assert_eq(ra, 0, "line %d: %s", n + 1, why);
        cr_assert_eq(sd_protodyn_legacy_encode(b.old, o, &c, &nc, why, sizeof(why)), 0, "line %d: %s", n + 1, why);
        cr_assert(na == nc && !memcmp(a, c, na), "line %d: the two encodings differ (%zu and %zu bytes)", n + 1, na, nc);
        both_decode_prefixes(&b, a, na, line);
        free(a), free(c);
        json_decref(o);
    }
    cr_assert_gt(n, 40, "scans.jsonl: %d lines", n);
    both_close(&b);
    free(text), free(lines);
}

/* fuzz_wire's seeds and regressions (tests/fuzz/): records (first byte 0)
 * by its rich schema and the parcel scans', schema texts (first byte 1)
 * read by both and a fixed record decoded by what they read. */
static const char rich[] =
    "syntax = \"proto3\";\npackage t;\nmessage Other { string x = 1; }\n"
    "message Scan {\n  enum Kind { UNKNOWN = 0; IN = 1; OUT = 2; }\n  message Where { string hub = 1; sint64 dz = 2; Where inner = 3; }\n"
    "  string id = 1;\n  Kind kind = 2;\n  repeated int32 bins = 3;\n  Where where = 4;\n  double w = 5;\n  bytes raw = 6;\n"
    "  oneof o { string note = 7; int32 code = 8; }\n  .t.Other other = 9;\n  repeated fixed64 f = 10;\n  float g = 11;\n}\n";

static void fuzz_seed(const char *path, const uint8_t *d, size_t n) {
    if (!n || d[0] & 0x80) return; /* JSON for the encoder (mode 3): no record, no schema */
    if (d[0] % 3 == 0) {
        char *parcel = sd_wire_parcel_schema(SD_WIRE_PROTOBUF, "event_id", "event_time");
        both_t r = {0}, q = {0};
        both_open(&r, rich), both_open(&q, parcel);
        both_decode_prefixes(&r, d + 1, n - 1, path);
        both_decode_prefixes(&q, d + 1, n - 1, path);
        both_close(&r), both_close(&q);
        free(parcel);
    } else if (d[0] % 3 == 1) {
        char *text = sd_util_strndup((const char *)d + 1, n - 1), why[512];
        sd_protodyn_t *now = sd_protodyn_parse(text, why, sizeof(why));
        sd_protodyn_legacy_t *old = sd_protodyn_legacy_parse(text, why, sizeof(why));
        if (now && old) {
            both_t b = {now, old, 0, 0, 0};
            static const uint8_t rec[] = {0x00, 0x0a, 0x01, 'a', 0x10, 0x02, 0x1a, 0x02, 0x01, 0x02, 0x22, 0x03, 0x0a, 0x01, 'H'};
            both_decode(&b, rec, sizeof(rec), path);
        }
        sd_protodyn_free(now);
        sd_protodyn_legacy_free(old);
        free(text);
    }
}

Test(protodyn, the_fuzz_seeds_read_the_same_by_both_readers) {
    const char *dirs[] = {"tests/fuzz/seeds/wire", "tests/fuzz/regressions/wire"};
    int files = 0;
    for (size_t i = 0; i < 2; i++) {
        DIR *dir = opendir(dirs[i]);
        cr_assert(dir, "%s: not found (run from the checkout's root)", dirs[i]);
        struct dirent *e;
        while ((e = readdir(dir))) {
            if (e->d_name[0] == '.') continue;
            char *path = sd_util_fmt("%s/%s", dirs[i], e->d_name);
            size_t n;
            char *d = slurp(path, &n);
            fuzz_seed(path, (const uint8_t *)d, n);
            files++;
            free(d), free(path);
        }
        closedir(dir);
    }
    cr_assert_geq(files, 6);
}

/* The richer schema of test_events.c's reader test, its record by both. */
Test(protodyn, the_rich_record_reads_the_same_by_both_readers) {
    const char *proto = "syntax = \"proto3\";\npackage t;\n// a comment\nmessage Other { string x = 1; }\n"
                        "message Scan {\n  enum Kind { UNKNOWN = 0; IN = 1; OUT = 2; }\n  message Where { string hub = 1; sint64 dz = 2; }\n"
                        "  string id = 1;\n  Kind kind = 2;\n  repeated int32 bins = 3 [packed = true];\n  Where where = 4;\n"
                        "  double w = 5;\n  bytes raw = 6;\n  oneof o { string note = 7; int32 code = 8; }\n  .t.Other other = 9;\n"
                        "  bool flag = 10;\n  reserved 11;\n}\n";
    static const uint8_t rec[] = {0x02, 0x02, 0x0a, 0x01, 'a', 0x10, 0x02, 0x1a, 0x03, 0x01, 0xac, 0x02, 0x22, 0x05, 0x0a, 0x01, 'H', 0x10, 0x05,
                                  0x29, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0x32, 0x02, 'h', 'i', 0x40, 0x07, 0x78, 0x01};
    both_t b = {0};
    both_open(&b, proto);
    both_decode_prefixes(&b, rec, sizeof(rec), "the rich record");
    both_close(&b);
}

/* ---- the defects of issue 76 ---- */

static const char ranges[] = "syntax = \"proto3\";\nmessage R {\n  int32 i32 = 1;\n  uint32 u32 = 2;\n  sint32 s32 = 3;\n  fixed32 f32 = 4;\n"
                             "  sfixed32 sf32 = 5;\n  int64 i64 = 6;\n  uint64 u64 = 7;\n  fixed64 f64 = 8;\n  float fl = 9;\n"
                             "  enum E { Z = 0; H = 0x10; O = 010; }\n  E e = 10;\n  repeated int32 many = 11;\n  R inner = 12;\n}\n";

/* The encoder sent an int32 of 3e9 as -1294967296 and a uint32 of -1 as
 * 4294967295, while the ledger kept the value the event had. */
Test(protodyn, an_out_of_range_value_is_refused_by_name_not_wrapped) {
    sd_protodyn_t *p = parse(ranges);
    const char *cases[][2] = {
        {"{\"i32\":3000000000}", "R.i32: 3000000000 is out of range for int32"},
        {"{\"i32\":-2147483649}", "R.i32: -2147483649 is out of range for int32"},
        {"{\"u32\":-1}", "R.u32: -1 is out of range for uint32"},
        {"{\"u32\":4294967296}", "R.u32: 4294967296 is out of range for uint32"},
        {"{\"s32\":2147483648}", "R.s32: 2147483648 is out of range for sint32"},
        {"{\"f32\":-1}", "R.f32: -1 is out of range for fixed32"},
        {"{\"sf32\":-3000000000}", "R.sf32: -3000000000 is out of range for sfixed32"},
        {"{\"u64\":-1}", "R.u64: -1 is out of range for uint64"},
        {"{\"f64\":\"18446744073709551616\"}", "R.f64: \"18446744073709551616\" is out of range for fixed64"},
        {"{\"i64\":\"9223372036854775808\"}", "R.i64: \"9223372036854775808\" is out of range for int64"},
        {"{\"fl\":1e39}", "R.fl: 1e39 is out of range for float"},
        {"{\"e\":3000000000}", "R.e: 3000000000 is out of range for R.E"},
        {"{\"many\":[1,2,4294967295]}", "R.many: 4294967295 is out of range for int32"},
        {"{\"inner\":{\"u32\":-5}}", "R.u32: -5 is out of range for uint32"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t *buf;
        size_t n;
        char why[512] = "";
        int rc = encode(p, cases[i][0], &buf, &n, why, sizeof(why));
        cr_expect_eq(rc, -1, "%s: encoded (%zu bytes) where it should be refused", cases[i][0], n);
        cr_expect(strstr(why, cases[i][1]), "%s: expected \"%s\", got \"%s\"", cases[i][0], cases[i][1], why);
        free(buf);
    }
    /* the edges themselves go through, and come back as they went */
    uint8_t *buf;
    size_t n;
    char why[512];
    const char *edges = "{\"i32\":-2147483648,\"u32\":4294967295,\"s32\":2147483647,\"f32\":4294967295,\"sf32\":-2147483648,"
                        "\"i64\":-9223372036854775808,\"u64\":\"18446744073709551615\",\"f64\":9223372036854775807,\"fl\":3e38,"
                        "\"e\":\"H\",\"many\":[-1],\"inner\":{\"u32\":1}}";
    cr_assert_eq(encode(p, edges, &buf, &n, why, sizeof(why)), 0, "%s", why);
    json_t *back = decode(p, buf, n, why, sizeof(why));
    cr_assert(back, "%s", why);
    json_t *want = json_loads(edges, 0, NULL);
    cr_assert(json_equal(json_object_get(back, "u64"), json_object_get(want, "u64")));
    cr_assert_eq(json_integer_value(json_object_get(back, "i32")), INT32_MIN);
    cr_assert_eq(json_integer_value(json_object_get(back, "u32")), 4294967295LL);
    cr_assert_eq(json_integer_value(json_object_get(back, "i64")), INT64_MIN);
    json_decref(back), json_decref(want);
    free(buf);
    sd_protodyn_free(p);
}

/* A tag is a varint of number << 3 | wire type; the reader took the number
 * as (int)(tag >> 3), so field 2^32 + 1 (refused by every Protobuf parser:
 * numbers stop at 2^29 - 1) was read as field 1 and counted as a valid row. */
Test(protodyn, a_field_number_past_2_29_is_refused_not_truncated) {
    sd_protodyn_t *p = parse("syntax = \"proto3\";\nmessage M { string id = 1; }\n");
    /* indexes [0]; tag (2^32 + 1) << 3 | 2 as a varint; length 1; "x" */
    uint64_t tag = ((1ULL << 32) + 1) << 3 | 2;
    uint8_t rec[32];
    size_t n = 0;
    rec[n++] = 0;
    for (uint64_t v = tag; v; v >>= 7) rec[n++] = (uint8_t)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
    rec[n++] = 1, rec[n++] = 'x';
    char why[512] = "";
    json_t *o = decode(p, rec, n, why, sizeof(why));
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    cr_assert_null(o, "read as %s", t);
    cr_assert(strstr(why, "M: a record cut short or not Protobuf"), "%s", why);
    /* field 2^29 - 1, the largest there is, unknown to the schema: skipped */
    uint8_t ok[] = {0x00, 0xfa, 0xff, 0xff, 0xff, 0x0f, 0x01, 'y', 0x0a, 0x01, 'a'};
    o = decode(p, ok, sizeof(ok), why, sizeof(why));
    expect_json(o, "{\"id\":\"a\"}");
    json_decref(o);
    sd_protodyn_free(p);
}

/* A uint64 (or fixed64) over 2^63 - 1 came out negative. */
Test(protodyn, a_uint64_over_2_63_stays_positive) {
    sd_protodyn_t *p = parse(ranges);
    /* u64 = 2^63 + 5 (varint), f64 = 2^64 - 1 (8 bytes) */
    static const uint8_t rec[] = {0x00, 0x38, 0x85, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
                                  0x41, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    char why[512] = "";
    json_t *o = decode(p, rec, sizeof(rec), why, sizeof(why));
    cr_assert(o, "%s", why);
    cr_assert_str_eq(json_string_value(json_object_get(o, "u64")) ? json_string_value(json_object_get(o, "u64")) : "(not text)",
                     "9223372036854775813");
    cr_assert_str_eq(json_string_value(json_object_get(o, "f64")) ? json_string_value(json_object_get(o, "f64")) : "(not text)",
                     "18446744073709551615");
    /* and back to the same bytes */
    uint8_t *buf = calloc(1, 1);
    size_t n = 1;
    cr_assert_eq(sd_protodyn_encode(p, o, &buf, &n, why, sizeof(why)), 0, "%s", why);
    cr_assert(n == sizeof(rec) && !memcmp(buf, rec, n), "re-encoded as %zu bytes", n);
    json_decref(o);
    free(buf);
    sd_protodyn_free(p);
}

/* `H = 0x10;` was read as 0 (atoi), `O = 010` as 10. */
Test(protodyn, hex_and_octal_enum_values_read_as_written) {
    sd_protodyn_t *p = parse(ranges);
    static const uint8_t h[] = {0x00, 0x50, 0x10}, o8[] = {0x00, 0x50, 0x08};
    char why[512] = "";
    json_t *o = decode(p, h, sizeof(h), why, sizeof(why));
    cr_assert(o, "%s", why);
    cr_assert_str_eq(json_string_value(json_object_get(o, "e")) ? json_string_value(json_object_get(o, "e")) : "(no symbol)", "H");
    json_decref(o);
    o = decode(p, o8, sizeof(o8), why, sizeof(why));
    cr_assert(o, "%s", why);
    cr_assert_str_eq(json_string_value(json_object_get(o, "e")) ? json_string_value(json_object_get(o, "e")) : "(no symbol)", "O");
    json_decref(o);
    uint8_t *buf;
    size_t n;
    cr_assert_eq(encode(p, "{\"e\":\"H\"}", &buf, &n, why, sizeof(why)), 0, "%s", why);
    cr_assert(n == sizeof(h) && !memcmp(buf, h, n), "H sent as %zu bytes, its value %d", n, n > 2 ? buf[2] : -1);
    free(buf);
    sd_protodyn_free(p);
}

/* A message field that comes twice in a record is one message, the second
 * merged into the first (Protobuf's rule; producers concatenate records to
 * update them); the reader kept only the second. Repeated fields append. */
Test(protodyn, a_message_field_sent_twice_is_merged_not_replaced) {
    sd_protodyn_t *p = parse("syntax = \"proto3\";\nmessage M {\n  message W { string hub = 1; int32 dz = 2; repeated int32 bins = 3; }\n"
                             "  W where = 1;\n  repeated W path = 2;\n}\n");
    /* where {hub: "H", bins: [1]}, where {dz: 5, bins: [2]}, path {hub: "A"}, path {hub: "B"} */
    static const uint8_t rec[] = {0x00, 0x0a, 0x05, 0x0a, 0x01, 'H', 0x18, 0x01, 0x0a, 0x04, 0x10, 0x05, 0x18, 0x02,
                                  0x12, 0x03, 0x0a, 0x01, 'A', 0x12, 0x03, 0x0a, 0x01, 'B'};
    char why[512] = "";
    json_t *o = decode(p, rec, sizeof(rec), why, sizeof(why));
    expect_json(o, "{\"where\":{\"hub\":\"H\",\"dz\":5,\"bins\":[1,2]},"
                   "\"path\":[{\"hub\":\"A\",\"dz\":0,\"bins\":[]},{\"hub\":\"B\",\"dz\":0,\"bins\":[]}]}");
    json_decref(o);
    sd_protodyn_free(p);
}

/* A .proto nested deep crashed the reader (recursion without a limit, each
 * nested name repeating its scope, allocations unchecked): it must be an
 * error naming the place. */
Test(protodyn, a_proto_nested_deep_is_an_error_not_a_crash) {
    const int depth = 200000;
    sd_buf_t t;
    sd_buf_init(&t);
    sd_buf_puts(&t, "syntax = \"proto3\";\n");
    for (int i = 0; i < depth; i++) sd_buf_puts(&t, "message A {\n");
    for (int i = 0; i < depth; i++) sd_buf_puts(&t, "}\n");
    char why[512] = "";
    sd_protodyn_t *p = sd_protodyn_parse(t.data, why, sizeof(why));
    cr_assert_null(p, "a schema nested %d deep was read", depth);
    cr_assert(strstr(why, "line 102:11: blocks nested more than 100 deep"), "%s", why);
    sd_buf_free(&t);
    /* a record nested deeper than the reader goes: refused, not a crash */
    p = parse("syntax = \"proto3\";\nmessage N { N n = 1; int32 v = 2; }\n");
    /* 1000 levels, each the next one's bytes behind tag 1 and a length: built inside out */
    size_t len = 0;
    uint8_t *inner = NULL;
    for (int i = 0; i < 1000; i++) {
        uint8_t *next = malloc(len + 11);
        size_t k = 0;
        next[k++] = 0x0a;
        for (size_t v = len;; v >>= 7) {
            next[k++] = (uint8_t)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
            if (!(v >> 7)) break;
        }
        if (len) memcpy(next + k, inner, len);
        free(inner);
        inner = next, len += k;
    }
    uint8_t *rec = malloc(len + 1);
    rec[0] = 0;
    memcpy(rec + 1, inner, len);
    json_t *o = decode(p, rec, len + 1, why, sizeof(why));
    cr_assert_null(o, "a record nested 1000 deep was read");
    free(rec), free(inner);
    sd_protodyn_free(p);
}

/* ---- what the old reader refused: import, map<>, the well-known types ---- */

static const char stamped[] = "syntax = \"proto3\";\npackage t;\nimport \"google/protobuf/timestamp.proto\";\n"
                              "import \"google/protobuf/duration.proto\";\nimport \"google/protobuf/wrappers.proto\";\n"
                              "message S {\n  string id = 1;\n  google.protobuf.Timestamp at = 2;\n  google.protobuf.Duration took = 3;\n"
                              "  google.protobuf.Int64Value weight = 4;\n  map<string, int64> counts = 5;\n  map<int32, S> kids = 6;\n"
                              "  repeated google.protobuf.Timestamp seen = 7;\n}\n";

Test(protodyn, a_timestamp_import_and_maps_read_and_write) {
    sd_protodyn_t *p = parse(stamped);
    /* id "a"; at {seconds: 1767312245, nanos: 500000000}; counts {"x": 3} */
    static const uint8_t rec[] = {0x00, 0x0a, 0x01, 'a', 0x12, 0x0c, 0x08, 0xf5, 0x96, 0xdc, 0xca, 0x06, 0x10, 0x80, 0xca, 0xb5, 0xee, 0x01,
                                  0x2a, 0x05, 0x0a, 0x01, 'x', 0x10, 0x03};
    char why[512] = "";
    json_t *o = decode(p, rec, sizeof(rec), why, sizeof(why));
    cr_assert(o, "%s", why);
    expect_json(o, "{\"id\":\"a\",\"at\":\"2026-01-02T00:04:05.500Z\",\"counts\":{\"x\":3},\"kids\":{},\"seen\":[]}");
    json_decref(o);
    /* written from JSON, read back the same */
    const char *in = "{\"id\":\"b\",\"at\":\"2026-02-01T10:00:00Z\",\"took\":\"1.500s\",\"weight\":300,\"counts\":{\"x\":1,\"y\":-2},"
                     "\"kids\":{\"7\":{\"id\":\"k\",\"counts\":{},\"kids\":{},\"seen\":[]}},\"seen\":[\"1970-01-01T00:00:00Z\"]}";
    uint8_t *buf;
    size_t n;
    cr_assert_eq(encode(p, in, &buf, &n, why, sizeof(why)), 0, "%s", why);
    o = decode(p, buf, n, why, sizeof(why));
    cr_assert(o, "%s", why);
    expect_json(o, in);
    json_decref(o);
    free(buf);
    /* what does not fit is named */
    const char *bad[][2] = {{"{\"at\":\"yesterday\"}", "google.protobuf.Timestamp: \"yesterday\" does not read"},
                            {"{\"counts\":{\"x\":\"many\"}}", "t.S.counts[\"x\"]: the value does not fit its type (int64): \"many\""},
                            {"{\"kids\":{\"seven\":{}}}", "S.kids: key \"seven\" is no int32"},
                            {"{\"kids\":{\"3000000000\":{}}}", "3000000000 is out of range for int32"},
                            {"{\"counts\":[1]}", "S.counts: expected an object (a map)"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_expect_eq(encode(p, bad[i][0], &buf, &n, why, sizeof(why)), -1, "%s was encoded", bad[i][0]);
        cr_expect(strstr(why, bad[i][1]), "%s: expected \"%s\", got \"%s\"", bad[i][0], bad[i][1], why);
        free(buf);
    }
    sd_protodyn_free(p);
}

/* An import of another file: given by name (a registry's references), or
 * refused naming it. */
Test(protodyn, an_import_is_read_from_the_files_given_or_refused_by_name) {
    const char *text = "syntax = \"proto3\";\nimport \"common/where.proto\";\nmessage Scan { string id = 1; common.Where where = 2; }\n";
    const char *names[] = {"common/where.proto"};
    const char *texts[] = {"syntax = \"proto3\";\npackage common;\nimport \"google/protobuf/timestamp.proto\";\n"
                           "message Where { string hub = 1; google.protobuf.Timestamp at = 2; }\n"};
    char why[512] = "";
    sd_protodyn_t *p = sd_protodyn_parse_files(text, names, texts, 1, why, sizeof(why));
    cr_assert(p, "%s", why);
    uint8_t *buf;
    size_t n;
    const char *in = "{\"id\":\"s\",\"where\":{\"hub\":\"H\",\"at\":\"2026-02-01T10:00:00Z\"}}";
    cr_assert_eq(encode(p, in, &buf, &n, why, sizeof(why)), 0, "%s", why);
    json_t *o = decode(p, buf, n, why, sizeof(why));
    expect_json(o, in);
    json_decref(o);
    free(buf);
    sd_protodyn_free(p);
    cr_assert_null(sd_protodyn_parse(text, why, sizeof(why)));
    cr_assert(strstr(why, "import \"common/where.proto\": not a well-known type"), "%s", why);
    /* an imported file that does not parse is named, with its line */
    const char *broken[] = {"syntax = \"proto3\";\npackage common;\nmessage Where { string hub = 1 }\n"};
    cr_assert_null(sd_protodyn_parse_files(text, names, broken, 1, why, sizeof(why)));
    cr_assert(strstr(why, "common/where.proto: line 3:"), "%s", why);
}

/* What protoc refuses is refused with line:column and its reason. */
Test(protodyn, a_schema_protoc_refuses_is_refused_with_its_place) {
    const char *bad[][2] = {
        {"syntax = \"proto3\";\nmessage M {\n  int32 a = 1\n}\n", "line 4:1: Expected \";\"."},
        {"syntax = \"proto3\";\nmessage M { int32 a = 0; }\n", "line 2:23: M.a: Field numbers must be positive integers."},
        {"syntax = \"proto3\";\nmessage M {\n  Missing a = 1;\n}\n", "line 3:3: M.a: \"Missing\" is not defined."},
        {"syntax = \"proto3\";\nmessage M { int32 a = 1; int32 b = 1; }\n", "Field number 1 has already been used"},
        {"syntax = \"proto3\";\nmessage M { google.protobuf.Timestamp at = 1; }\n", "\"google.protobuf.Timestamp\" is not defined"},
        {"syntax = \"proto3\";\n", "no message in the schema"},
        {"syntax = \"proto3\";\nimport \"nowhere.proto\";\nmessage M { int32 a = 1; }\n", "import \"nowhere.proto\""},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char why[512] = "";
        sd_protodyn_t *p = sd_protodyn_parse(bad[i][0], why, sizeof(why));
        cr_expect_null(p, "read: %s", bad[i][0]);
        sd_protodyn_free(p);
        cr_expect(strstr(why, bad[i][1]), "%s: expected \"%s\", got \"%s\"", bad[i][0], bad[i][1], why);
    }
}

/* A record that is not all Protobuf, or lacks a proto2 required field, or
 * holds a string that is not UTF-8, is refused. */
Test(protodyn, a_record_must_be_protobuf_to_its_end) {
    sd_protodyn_t *p = parse("syntax = \"proto2\";\nmessage M { required string id = 1; optional int32 n = 2; }\n");
    char why[512] = "";
    static const uint8_t no_id[] = {0x00, 0x10, 0x01}, bad_utf8[] = {0x00, 0x0a, 0x02, 0xc3, 0x28}, zero_tag[] = {0x00, 0x0a, 0x01, 'a', 0x00},
                         ok[] = {0x00, 0x0a, 0x01, 'a'};
    cr_assert_null(decode(p, no_id, sizeof(no_id), why, sizeof(why)));
    cr_assert(strstr(why, "M: required fields missing: id"), "%s", why);
    cr_assert_null(decode(p, bad_utf8, sizeof(bad_utf8), why, sizeof(why)));
    cr_assert(strstr(why, "UTF-8"), "%s", why);
    cr_assert_null(decode(p, zero_tag, sizeof(zero_tag), why, sizeof(why)));
    json_t *o = decode(p, ok, sizeof(ok), why, sizeof(why));
    expect_json(o, "{\"id\":\"a\"}"); /* proto2: n has presence, absent here */
    json_decref(o);
    uint8_t *buf;
    size_t n;
    cr_assert_eq(encode(p, "{\"n\":1}", &buf, &n, why, sizeof(why)), -1);
    cr_assert(strstr(why, "M: required fields missing: id"), "%s", why);
    free(buf);
    sd_protodyn_free(p);
}
