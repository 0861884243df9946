/* fuzz_delta_log.c - libFuzzer target: the Delta reader's log replay
 * (harness/sinks/sink_delta.c) on any bytes, as a table's _delta_log may
 * hold them. The input's pieces (apart at NUL bytes, fuzz_dir.h): the
 * first names the commit files (apart by spaces; a missing or unusable
 * name is 00000000000000000000.json, ...01.json, ... by the piece's
 * place), each later one is a commit file's text. The files are written
 * one at a time, the log replayed after each (incrementally, as a run
 * reads a growing table): its newest commit, its mark and the files each
 * commit added; then every commit but the first is taken away (a table
 * made again) and the log replayed once more. The Parquet helper is
 * never run (no row is read, only the log). Nothing may crash, leak or
 * hang; a newest commit is "Delta version N (...)" with N the mark.
 * `make fuzz` runs it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_dir.h"
#include "sink.h"
#include "util.h"

#define SD_FUZZ_COMMITS 8

static void sd_fuzz_file_cb(void *opaque, int64_t commit, int64_t bytes) {
    (void)bytes;
    if (commit < 0) abort();
    (*(int *)opaque)++;
}

/* The newest commit and the mark, which must agree. */
static void sd_fuzz_replay(void *st) {
    char err[512];
    int64_t mark = -2;
    char *c = sd_sink_delta.newest_commit(st);
    if (sd_sink_delta.mark(st, &mark, err, sizeof(err))) abort(); /* the folder is there */
    if (c) {
        long long v = -1;
        if (sscanf(c, "Delta version %lld (", &v) != 1 || v != mark) abort();
        free(c);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *table = sd_util_fmt("%s/t", sd_fuzz_dir()), *log = sd_util_fmt("%s/_delta_log", table);
    sd_util_rmtree(table, NULL, 0);
    if (sd_util_mkdirs(log, NULL, 0)) abort();
    sd_fuzz_piece_t pc[SD_FUZZ_COMMITS + 1];
    int n = sd_fuzz_pieces(data, size, pc, SD_FUZZ_COMMITS + 1);
    sd_kvlist_t params = {0};
    sd_kvlist_add(&params, "path", table);
    sd_kvlist_add(&params, "python", "/nonexistent/python"); /* never run: no row is read */
    sd_sink_ctx_t ctx = {.id_field = "event_id"};
    void *st = NULL;
    char err[512];
    if (sd_sink_delta.open(&params, &ctx, &st, err, sizeof(err))) abort();
    char *first = NULL;
    for (int i = 1; i < n; i++) {
        char name[256];
        if (!sd_fuzz_name(&pc[0], i - 1, name, sizeof(name))) snprintf(name, sizeof(name), "%020d.json", i - 1);
        char *p = sd_util_fmt("%s/%s", log, name);
        if (sd_util_write_file(p, pc[i].p, pc[i].n, NULL, 0)) abort();
        if (!first) first = p;
        else free(p);
        sd_fuzz_replay(st);
    }
    int files = 0;
    sd_sink_delta.files(st, sd_fuzz_file_cb, &files, err, sizeof(err));
    /* the table made again: only its first commit left */
    sd_util_rmtree(log, NULL, 0);
    if (sd_util_mkdirs(log, NULL, 0)) abort();
    if (first) {
        if (sd_util_write_file(first, pc[1].p, pc[1].n, NULL, 0)) abort();
        sd_fuzz_replay(st);
    }
    sd_sink_delta.close(st);
    sd_kvlist_free(&params);
    free(first);
    free(log);
    free(table);
    return 0;
}
