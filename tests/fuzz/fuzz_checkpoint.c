/* fuzz_checkpoint.c - libFuzzer target: the checkpoint readers on any bytes,
 * as a pipeline's checkpoint folder may hold them: a Flink _metadata's
 * bytes scanned for the Kafka source's splits (progress_flink.c), a Spark
 * offsets/N file's text parsed for the source's offsets and its watermark, and a checkpoint
 * file's name read as a batch or checkpoint id (spark_checkpoint.c). Every
 * answer must stay in range: offsets not below zero from the splits, a
 * name's id within SD_CHECKPOINT_ID_MAX. `make fuzz` runs it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "progress.h"
#include "spark_checkpoint.h"
#include "util.h"

static void sd_fuzz_offsets_text(const char *t) {
    /* "P:O,P:O,...[,TOPIC:P:O...]": each segment's last colon is followed
     * by an offset, a number not below zero */
    for (const char *p = t; p && *p;) {
        const char *end = strchr(p, ','), *colon = NULL;
        for (const char *q = p; *q && q != end; q++)
            if (*q == ':') colon = q;
        if (!colon || colon[1] == '-') abort();
        p = end ? end + 1 : NULL;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* Flink: the source's splits among the bytes */
    char *t = sd_flink_offsets_in(data, size, "scans", 3, "scans-deliveries", 2);
    if (t) sd_fuzz_offsets_text(t);
    free(t);
    /* a one-letter topic name: the scan's first-byte test meets more bytes */
    t = sd_flink_offsets_in(data, size, "s", 1, NULL, 0);
    if (t) sd_fuzz_offsets_text(t);
    free(t);
    /* Spark: offsets/N's text */
    int64_t off[4] = {0};
    if (sd_spark_parse_offsets((const char *)data, size, "orders", 3, off) == 0) off[3] = off[0];
    /* and its metadata line's watermark: never below zero */
    int64_t wm = 0;
    if (sd_spark_parse_watermark((const char *)data, size, &wm) == 0 && wm < 0) abort();
    /* a file name: the bytes up to the first NUL or newline, as a name */
    char name[64];
    size_t n = 0;
    while (n < size && n < sizeof(name) - 1 && data[n] && data[n] != '\n') {
        name[n] = (char)data[n];
        n++;
    }
    name[n] = 0;
    int64_t id = sd_checkpoint_id(name, "");
    if (id < -2 || id > SD_CHECKPOINT_ID_MAX) abort();
    id = sd_checkpoint_id(name, "chk-");
    if (id < -2 || id > SD_CHECKPOINT_ID_MAX) abort();
    return 0;
}
