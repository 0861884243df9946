/* fuzz_sink_row.c - libFuzzer target: what the harness does with a sink's
 * row, on any bytes: the id and write time out of a JSON line (the fast
 * path and simdjson, sink.c; the fast path's answer, when it gives one,
 * must be simdjson's to the byte; so must the line-at-a-time fast path's,
 * on the bytes up to the first newline, and it must find that newline;
 * and so must the next line's, read by the shape the first one left), the
 * ledger id back to its sequence number (events.c), and the
 * printable form reports show (util.c). `make fuzz` runs it. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "jsonfast.h"
#include "json.h"
#include "jsonscan.h"
#include "sink.h"
#include "util.h"

/* The line at p through sd_jsonfast_line: when it answers, it must have
 * found the first newline and given the full parser's answer on the bytes
 * before it. The bytes it took, or 0. */
static size_t sd_fuzz_line(sd_jsonfast_shape_t *shape, const char *s, size_t size) {
    size_t len, used;
    int64_t t3 = 0;
    char id2[512];
    int n3 = sd_jsonfast_line(shape, s, size, &len, &used, "event_id", id2, sizeof(id2), "event_time", &t3, sd_util_parse_iso8601);
    if (n3 == SD_JSONFAST_UNSURE) return 0;
    const char *nl = memchr(s, '\n', size);
    if (!nl) abort();
    size_t want = (size_t)(nl - s);
    if (used != want + 1) abort();
    if (want && s[want - 1] == '\r') want--;
    if (len != want) abort();
    if (!len) {
        if (n3 != -1) abort();
    } else {
        char id3[512];
        int64_t t4 = 0;
        int n4 = sd_jsonscan_id_time(s, len, "event_id", id3, sizeof(id3), "event_time", &t4, sd_util_parse_iso8601);
        if (n3 != n4 || t3 != t4 || (n3 >= 0 && memcmp(id2, id3, (size_t)n3 + 1))) abort();
    }
    return used;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *s = (const char *)data;
    char id[512];
    int64_t t = 0, seq = -1;
    int n = sd_sink_json_id_time(s, size, "event_id", id, sizeof(id), "event_time", &t);
    if (n >= (int)sizeof(id)) abort();
    char id2[512];
    int64_t t2 = 0;
    int n2 = sd_jsonscan_id_time(s, size, "event_id", id2, sizeof(id2), "event_time", &t2, sd_util_parse_iso8601);
    if (n != n2 || t != t2 || (n >= 0 && memcmp(id, id2, (size_t)n + 1))) abort();
    /* jansson, which reads the rows of command and file sinks by column and
     * tells an object from anything else, takes every row simdjson read an
     * id from as an object (numbers of any size, U+0000 in strings) */
    if (n2 >= 0) {
        json_t *o = sd_json_loadb(s, size, JSON_ALLOW_NUL);
        if (!o || !json_is_object(o)) abort();
        json_decref(o);
    }
    /* the input as the start of a block (ASan: nothing past size is read),
     * and what follows its first line read by the shape that line left */
    sd_jsonfast_shape_t shape;
    memset(&shape, 0, sizeof(shape));
    size_t used = sd_fuzz_line(&shape, s, size);
    if (used) sd_fuzz_line(&shape, s + used, size - used);
    if (n >= 0) sd_events_id_parse("a1b2", 4, id, (size_t)n, &seq);
    sd_events_id_parse("a1b2", 4, s, size, &seq);
    sd_buf_t b;
    sd_buf_init(&b);
    sd_buf_put_printable(&b, s, size, 256);
    /* what reports carry is printable: no control byte survives */
    for (size_t i = 0; i < b.len; i++)
        if ((unsigned char)b.data[i] < 0x20 || b.data[i] == 0x7f) abort();
    if (b.len > 256 * 4 + 32) abort();
    sd_buf_free(&b);
    return 0;
}
