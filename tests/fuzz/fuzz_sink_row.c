/* fuzz_sink_row.c - libFuzzer target: what the harness does with a sink's
 * row, on any bytes: the id and write time out of a JSON line (the fast
 * path and simdjson, sink.c; the fast path's answer, when it gives one,
 * must be simdjson's to the byte), the ledger id back to its sequence number (events.c), and the
 * printable form reports show (util.c). `make fuzz` runs it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../harness/events.h"
#include "../../harness/jsonscan.h"
#include "../../harness/sink.h"
#include "../../harness/util.h"

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
