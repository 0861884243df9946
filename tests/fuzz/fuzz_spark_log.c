/* fuzz_spark_log.c - libFuzzer target: the Spark file sink's log reader
 * (harness/sinks/sink_spark.c) on any bytes, as a sink's _spark_metadata
 * may hold them: batch files N and compact files N.compact, each a "v1"
 * line then JSON lines of entries. The input's pieces (apart at NUL
 * bytes, fuzz_dir.h): the first names the log files (apart by spaces; a
 * missing or unusable name is 0, 1, 2, ... by the piece's place, and any
 * name a folder can hold is tried: the reader meets whatever a folder
 * lists), each later one is a log file's text. The files are written one
 * at a time, and after each the log is read as a run reads a growing
 * sink: the files it lists now (beside one part file it never lists, for
 * the note about it) and the files each batch added. The part files the
 * log names are never opened (no row is read, only the log). Nothing may
 * crash, leak or hang. `make fuzz` runs it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_dir.h"
#include "sink.h"
#include "util.h"

#define SD_FUZZ_LOGS 8

static void sd_fuzz_file_cb(void *opaque, int64_t commit, int64_t bytes) {
    (void)commit;
    (void)bytes;
    (*(int *)opaque)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *out = sd_util_fmt("%s/s", sd_fuzz_dir()), *meta = sd_util_fmt("%s/_spark_metadata", out);
    sd_util_rmtree(out, NULL, 0);
    if (sd_util_mkdirs(meta, NULL, 0)) abort();
    char *orphan = sd_util_fmt("%s/part-00000-orphan.json", out);
    static const char rows[] = "{\"event_id\":\"o-1\"}\n{\"event_id\":\"o-2\"}\n";
    if (sd_util_write_file(orphan, rows, sizeof(rows) - 1, NULL, 0)) abort();
    sd_fuzz_piece_t pc[SD_FUZZ_LOGS + 1];
    int n = sd_fuzz_pieces(data, size, pc, SD_FUZZ_LOGS + 1);
    sd_kvlist_t params = {0};
    sd_kvlist_add(&params, "path", out);
    sd_sink_ctx_t ctx = {.id_field = "event_id"};
    void *st = NULL;
    char err[512];
    if (sd_sink_spark_files.open(&params, &ctx, &st, err, sizeof(err))) abort();
    for (int i = 1; i < n; i++) {
        char name[256];
        if (!sd_fuzz_name(&pc[0], i - 1, name, sizeof(name))) snprintf(name, sizeof(name), "%d", i - 1);
        char *p = sd_util_fmt("%s/%s", meta, name);
        if (sd_util_write_file(p, pc[i].p, pc[i].n, NULL, 0)) abort();
        free(p);
        /* the listing (a note names the orphan when the log reads) */
        char *note = sd_sink_spark_files.notes(st);
        if (note && !strstr(note, "part-00000-orphan.json")) abort();
        free(note);
    }
    int files = 0;
    sd_sink_spark_files.files(st, sd_fuzz_file_cb, &files, err, sizeof(err));
    sd_sink_spark_files.close(st);
    sd_kvlist_free(&params);
    free(orphan);
    free(meta);
    free(out);
    return 0;
}
