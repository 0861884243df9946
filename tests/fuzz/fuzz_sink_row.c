/* fuzz_sink_row.c - libFuzzer target: what the harness does with a sink's
 * row, on any bytes: the id and write time out of a JSON line (simdjson,
 * sink.c), the ledger id back to its sequence number (events.c), and the
 * printable form reports show (util.c). `make fuzz` runs it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../harness/events.h"
#include "../../harness/sink.h"
#include "../../harness/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *s = (const char *)data;
    char id[512];
    int64_t t = 0, seq = -1;
    int n = sd_sink_json_id_time(s, size, "event_id", id, sizeof(id), "event_time", &t);
    if (n >= (int)sizeof(id)) abort();
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
