/* fuzz_wire.c - libFuzzer target: what the registry's formats read from
 *   outside. The first byte picks the reader (its high bit set: mode 3,
 *   else its value modulo 3), the rest is its input:
 *   0  a Protobuf record decoded by a schema with nested messages, enums,
 *      packed fields and a oneof, by the parcel scans', and by one with
 *      maps, imported well-known types, 64-bit and proto2 fields (a sink's
 *      hostile bytes, harness/format/protodyn.cpp); what decodes by the
 *      parcel scans' and the wide one is encoded again and must decode to
 *      the same JSON;
 *   1  `.proto` text read (a registry's answer), then a fixed record
 *      decoded and a fixed object encoded by whatever it read;
 *   3  JSON encoded by the wide schema (an event's values: out of range,
 *      of the wrong type, nested deep); what encodes must decode, and
 *      encode again to the same bytes;
 *   2  a JSON Schema compiled (a user's schema file), then fixed values
 *      checked against it (strings and names its patterns match, one
 *      that backtracks without end: ECMA-262 patterns, ecmare.c); and a
 *      JSON value checked against the parcel scans' schema
 *      (harness/format/jschema.c). Every answer is valid, invalid or not
 *      judged, and not judged always says why.
 * A decoded record is always a JSON object; nothing may crash, leak or
 * hang. `make fuzz` runs it. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jschema.h"
#include "protodyn.h"
#include "wire.h"

static const char rich[] =
    "syntax = \"proto3\";\npackage t;\nmessage Other { string x = 1; }\n"
    "message Scan {\n  enum Kind { UNKNOWN = 0; IN = 1; OUT = 2; }\n  message Where { string hub = 1; sint64 dz = 2; Where inner = 3; }\n"
    "  string id = 1;\n  Kind kind = 2;\n  repeated int32 bins = 3;\n  Where where = 4;\n  double w = 5;\n  bytes raw = 6;\n"
    "  oneof o { string note = 7; int32 code = 8; }\n  .t.Other other = 9;\n  repeated fixed64 f = 10;\n  float g = 11;\n}\n";

static const char wide[] =
    "syntax = \"proto3\";\npackage w;\nimport \"google/protobuf/timestamp.proto\";\nimport \"google/protobuf/duration.proto\";\n"
    "import \"google/protobuf/wrappers.proto\";\nmessage Wide {\n  enum E { Z = 0; H = 0x10; }\n  string id = 1;\n"
    "  google.protobuf.Timestamp at = 2;\n  google.protobuf.Duration took = 3;\n  google.protobuf.Int64Value w = 4;\n"
    "  map<string, int64> counts = 5;\n  map<int32, Wide> kids = 6;\n  map<bool, E> flags = 7;\n  uint64 u64 = 8;\n  fixed64 f64 = 9;\n"
    "  int32 i32 = 10;\n  uint32 u32 = 11;\n  sint32 s32 = 12;\n  float fl = 13;\n  double d = 14;\n  bytes raw = 15;\n"
    "  repeated google.protobuf.Timestamp seen = 16;\n  optional int64 maybe = 17;\n  oneof o { string note = 18; E e = 19; }\n}\n";

static void decode(const sd_protodyn_t *p, const uint8_t *b, size_t n, int round_trip) {
    json_t *o = NULL;
    char why[256];
    if (!sd_protodyn_decode(p, b, n, &o, why, sizeof(why))) {
        if (!json_is_object(o)) abort();
        char *t = json_dumps(o, JSON_COMPACT);
        if (!t) abort();
        free(t);
        if (round_trip && n && b[0] == 0) { /* the first message: encoded again, it reads back the same */
            uint8_t *again = calloc(1, 1);
            size_t len = 1;
            json_t *back = NULL;
            if (sd_protodyn_encode(p, o, &again, &len, why, sizeof(why))) {
                char *t2 = json_dumps(o, JSON_COMPACT);
                fprintf(stderr, "decoded but does not encode again: %s\n%s\n", why, t2 ? t2 : "");
                abort();
            }
            if (sd_protodyn_decode(p, again, len, &back, why, sizeof(why)) || !json_equal(o, back)) abort();
            json_decref(back);
            free(again);
        }
        json_decref(o);
    }
}

/* JSON into the wide schema: refused, or bytes that decode and encode
 * again to themselves */
static void encode_json(const char *text, size_t n) {
    char why[512];
    json_t *o = json_loadb(text, n, 0, NULL);
    if (!o) return;
    sd_protodyn_t *p = sd_protodyn_parse(wide, why, sizeof(why));
    if (!p) abort();
    uint8_t *b = calloc(1, 1);
    size_t len = 1;
    if (!sd_protodyn_encode(p, o, &b, &len, why, sizeof(why))) {
        json_t *back = NULL;
        if (sd_protodyn_decode(p, b, len, &back, why, sizeof(why))) {
            fprintf(stderr, "encoded but does not decode: %s\n", why);
            abort();
        }
        uint8_t *again = calloc(1, 1);
        size_t alen = 1;
        if (sd_protodyn_encode(p, back, &again, &alen, why, sizeof(why))) abort();
        json_t *back2 = NULL;
        if (sd_protodyn_decode(p, again, alen, &back2, why, sizeof(why)) || !json_equal(back, back2)) abort();
        json_decref(back), json_decref(back2);
        free(again);
    }
    free(b);
    json_decref(o);
    sd_protodyn_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const uint8_t *b = data + 1;
    size_t n = size - 1;
    char why[512];
    char *text = malloc(n + 1);
    memcpy(text, b, n);
    text[n] = 0;
    if (data[0] & 0x80) {
        encode_json(text, n);
    } else if (data[0] % 3 == 0) {
        sd_protodyn_t *p = sd_protodyn_parse(rich, why, sizeof(why));
        char *parcel = sd_wire_parcel_schema(SD_WIRE_PROTOBUF, "event_id", "event_time");
        sd_protodyn_t *q = sd_protodyn_parse(parcel, why, sizeof(why));
        sd_protodyn_t *w = sd_protodyn_parse(wide, why, sizeof(why));
        if (!p || !q || !w) abort();
        decode(p, b, n, 0);
        decode(q, b, n, 1);
        decode(w, b, n, 1);
        sd_protodyn_free(p), sd_protodyn_free(q), sd_protodyn_free(w);
        free(parcel);
    } else if (data[0] % 3 == 1) {
        sd_protodyn_t *p = sd_protodyn_parse(text, why, sizeof(why));
        static const uint8_t rec[] = {0x00, 0x0a, 0x01, 'a', 0x10, 0x02, 0x1a, 0x02, 0x01, 0x02, 0x22, 0x03, 0x0a, 0x01, 'H'};
        if (p) {
            decode(p, rec, sizeof(rec), 0);
            json_t *o = json_pack("{s:s, s:i, s:[i, i], s:{s:s}}", "id", "a", "kind", 2, "bins", 1, 2, "where", "hub", "H");
            uint8_t *out = NULL;
            size_t len = 0;
            sd_protodyn_encode(p, o, &out, &len, why, sizeof(why));
            free(out);
            json_decref(o);
        }
        sd_protodyn_free(p);
    } else {
        sd_jschema_t *s = sd_jschema_compile(text, n, why, sizeof(why));
        static const char *const docs[] = {"{\"a\":1,\"b\":[1,2,{\"c\":\"x\"}]}", "[1,\"two\",3.5,null,true]", "\"text\"", "-7", "{}",
                                           "\"parcel-17_a\\n\\u2028\u00e9\\t \\u00a0x\"", "{\"id-1\":\"A\",\"\u00e9\":0.3,\"\":1e308}",
                                           "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\"",
                                           "12345678.123", "9223372036854775807"};
        for (size_t i = 0; s && i < sizeof(docs) / sizeof(docs[0]); i++) {
            json_t *d = json_loads(docs[i], JSON_DECODE_ANY, NULL);
            if (!d) abort();
            why[0] = 0;
            int v = sd_jschema_valid(s, d, why, sizeof(why));
            if (v != SD_JSCHEMA_VALID && v != SD_JSCHEMA_INVALID && (v != SD_JSCHEMA_UNJUDGED || !strstr(why, "could not judge"))) abort();
            json_decref(d);
        }
        sd_jschema_free(s);
        char *parcel = sd_wire_parcel_schema(SD_WIRE_JSON, "event_id", "event_time");
        sd_jschema_t *ps = sd_jschema_compile(parcel, strlen(parcel), why, sizeof(why));
        if (!ps) abort();
        json_t *d = json_loadb(text, n, JSON_DECODE_ANY, NULL);
        if (d) sd_jschema_valid(ps, d, why, sizeof(why));
        json_decref(d);
        sd_jschema_free(ps);
        free(parcel);
    }
    free(text);
    return 0;
}
