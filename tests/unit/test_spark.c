/* test_spark.c - the Spark checkpoint reader and the Spark file sink reader
 * on hand-made folders where the answer is known: a compacted sink log with
 * a later delete, orphan part files, batches in flight. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sink.h"
#include "spark_checkpoint.h"
#include "util.h"

static char dir[64];
static void setup(void) {
    snprintf(dir, sizeof(dir), "/tmp/sd_spark_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}
static void teardown(void) { sd_util_rmtree(dir, NULL, 0); }
TestSuite(spark, .init = setup, .fini = teardown);

static void put(const char *rel, const char *text) {
    char *p = sd_util_fmt("%s/%s", dir, rel);
    char *d = sd_util_dirname(p);
    sd_util_mkdirs(d, NULL, 0);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "cannot write %s", p);
    fputs(text, f);
    fclose(f);
    free(d);
    free(p);
}

static char *entry(const char *file, const char *action) {
    return sd_util_fmt("{\"path\":\"file://%s/out/%s\",\"size\":1,\"isDir\":false,\"modificationTime\":1,"
                       "\"blockReplication\":1,\"blockSize\":1,\"action\":\"%s\"}\n", dir, file, action);
}

typedef struct { char ids[32][32]; char w[32][96]; int n; } rows_t;
static int collect(void *o, const char *id, size_t idlen, const char *w, size_t wlen, int64_t t) {
    (void)t;
    rows_t *r = o;
    snprintf(r->ids[r->n], 32, "%.*s", (int)idlen, id ? id : "");
    snprintf(r->w[r->n], 96, "%.*s", (int)wlen, w);
    r->n++;
    return 0;
}

Test(spark, file_sink_reader_follows_the_log_not_the_folder) {
    put("out/part-a.json", "{\"event_id\":\"t-0\"}\n{\"event_id\":\"t-1\"}\n");
    put("out/part-b.json", "{\"event_id\":\"t-2\"}\n");
    put("out/part-c.json", "{\"event_id\":\"t-3\"}\n");
    put("out/part-d.json", "{\"event_id\":\"t-4\"}\n{\"event_id\":\"t-5\"}\n");
    put("out/part-orphan.json", "{\"event_id\":\"t-9\"}\n{\"event_id\":\"t-9\"}\n{\"event_id\":\"t-9\"}\n");
    /* batches 0..9 compacted into 9.compact (a and b), then 10 adds c and d, 11 deletes c */
    char *a = entry("part-a.json", "add"), *b = entry("part-b.json", "add"), *c = entry("part-c.json", "add"),
         *d = entry("part-d.json", "add"), *cdel = entry("part-c.json", "delete");
    char *compact = sd_util_fmt("v1\n%s%s", a, b), *b10 = sd_util_fmt("v1\n%s%s", c, d), *b11 = sd_util_fmt("v1\n%s", cdel);
    put("out/_spark_metadata/9.compact", compact);
    put("out/_spark_metadata/8", "v1\nthis file predates the compaction and must not be read\n");
    put("out/_spark_metadata/10", b10);
    put("out/_spark_metadata/11", b11);
    put("out/_spark_metadata/.12.tmp", "v1\n{garbage");
    sd_sink_decl_t decl = {.name = "target", .kind = "spark-files"};
    char *path = sd_util_fmt("%s/out", dir);
    sd_kvlist_add(&decl.params, "path", path);
    sd_kvlist_t vars = {0};
    sd_sink_ctx_t ctx = {.id_field = "event_id"};
    sd_sink_t *s;
    char err[512];
    cr_assert_eq(sd_sink_open(&decl, &vars, &ctx, &s, err, sizeof(err)), SD_OK, "%s", err);
    int64_t rows = -1;
    cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(rows, 5, "a (2) + b (1) + d (2); c deleted, orphan not listed: got %lld", (long long)rows);
    rows_t r = {0};
    cr_assert_eq(sd_sink_scan(s, collect, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(r.n, 5);
    int saw_d = 0;
    for (int i = 0; i < r.n; i++) {
        cr_assert(strcmp(r.ids[i], "t-3") && strcmp(r.ids[i], "t-9"), "read a row of an unlisted file: %s", r.ids[i]);
        if (!strcmp(r.ids[i], "t-4")) {
            saw_d = 1;
            cr_assert(!strncmp(r.w[i], "batch 10 ", 9), "t-4's writer should be batch 10, got %s", r.w[i]);
        }
    }
    cr_assert(saw_d);
    char *note = sd_sink_notes(s);
    cr_assert_not_null(note, "the orphan files must be reported");
    cr_assert(strstr(note, "2 part files (4 rows)"), "c (deleted) and the orphan, got: %s", note);
    free(note);
    sd_sink_close(s);
    sd_kvlist_free(&decl.params);
    free(a); free(b); free(c); free(d); free(cdel); free(compact); free(b10); free(b11); free(path);
}

Test(spark, file_sink_without_a_log_is_unreadable) {
    put("out/part-a.json", "{\"event_id\":\"t-0\"}\n");
    sd_sink_decl_t decl = {.name = "target", .kind = "spark-files"};
    char *path = sd_util_fmt("%s/out", dir);
    sd_kvlist_add(&decl.params, "path", path);
    sd_kvlist_t vars = {0};
    sd_sink_ctx_t ctx = {0};
    sd_sink_t *s;
    char err[512];
    cr_assert_eq(sd_sink_open(&decl, &vars, &ctx, &s, err, sizeof(err)), SD_OK);
    int64_t rows;
    cr_assert_eq(sd_sink_count(s, 1, &rows, err, sizeof(err)), SD_OK, "while waiting, no log counts 0");
    cr_assert_eq(rows, 0);
    cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_ERR_SINK);
    cr_assert(strstr(err, "_spark_metadata"), "got %s", err);
    sd_sink_close(s);
    sd_kvlist_free(&decl.params);
    free(path);
}

Test(spark, checkpoint_shows_batches_in_flight) {
    put("chk/offsets/0", "v1\n{\"batchWatermarkMs\":0}\n{\"orders\":{\"0\":5,\"1\":3}}\n");
    put("chk/commits/0", "v1\n{\"nextBatchWatermarkMs\":0}\n");
    put("chk/offsets/1", "v1\n{\"batchWatermarkMs\":0}\n{\"other\":{\"0\":1}}\n{\"orders\":{\"0\":9,\"1\":7}}\n");
    put("chk/offsets/.2.abc.tmp", "partial");
    char *chk = sd_util_fmt("%s/chk", dir);
    sd_spark_t *s;
    cr_assert_eq(sd_spark_open(chk, "orders", 2, &s, NULL, 0), SD_OK);
    sd_spark_state_t st;
    cr_assert_eq(sd_spark_poll(s, &st, NULL, 0), SD_OK);
    cr_assert_eq(st.planned, 1);
    cr_assert_eq(st.committed, 0, "batch 1 is in flight");
    int64_t off[2];
    cr_assert_eq(sd_spark_offsets(s, 1, off), 0);
    cr_assert_eq(off[0], 9);
    cr_assert_eq(off[1], 7);
    cr_assert_eq(sd_spark_batch_rows(s, 1), 8, "(9-5)+(7-3)");
    cr_assert_eq(sd_spark_batch_rows(s, 0), 8, "the first batch reads from 0");
    char *t = sd_spark_offsets_text(s, 1);
    cr_assert_str_eq(t, "0:9,1:7");
    free(t);
    put("chk/commits/1", "v1\n{}\n");
    cr_assert_eq(sd_spark_poll(s, &st, NULL, 0), SD_OK);
    cr_assert_eq(st.committed, 1);
    sd_spark_close(s);
    free(chk);
}

/* ---- a checkpoint that is hostile, not merely Spark's in mid-write: each
 * case is answered at once, the checkpoint named damaged with the file */

static sd_spark_t *open_chk(void) {
    char *chk = sd_util_fmt("%s/chk", dir);
    sd_spark_t *s;
    cr_assert_eq(sd_spark_open(chk, "orders", 2, &s, NULL, 0), SD_OK);
    free(chk);
    return s;
}

Test(spark, a_fifo_for_offsets_is_damage_not_a_hang, .timeout = 10) {
    put("chk/offsets/0", "v1\n{}\n{\"orders\":{\"0\":5,\"1\":3}}\n");
    char *fifo = sd_util_fmt("%s/chk/offsets/1", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    sd_spark_t *s = open_chk();
    sd_spark_state_t st;
    char err[512] = "";
    /* the newest is the FIFO: named at the poll, before anything reads it */
    cr_assert_eq(sd_spark_poll(s, &st, err, sizeof(err)), SD_ERR_CHECKPOINT);
    cr_assert(strstr(err, "offsets/1") && strstr(err, "not a regular file"), "got %s", err);
    int64_t off[2];
    cr_assert_eq(sd_spark_offsets(s, 1, off), -1, "never opened for a blocking read");
    sd_spark_close(s);
    free(fifo);
}

Test(spark, an_older_fifo_is_found_when_it_is_read, .timeout = 10) {
    char *fifo = sd_util_fmt("%s/chk/offsets/0", dir);
    put("chk/offsets/1", "v1\n{}\n{\"orders\":{\"0\":5,\"1\":3}}\n");
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    sd_spark_t *s = open_chk();
    sd_spark_state_t st;
    cr_assert_eq(sd_spark_poll(s, &st, NULL, 0), SD_OK);
    cr_assert_eq(sd_spark_batch_rows(s, 1), -1, "offsets/0 cannot be read");
    cr_assert_not_null(sd_spark_damaged(s));
    cr_assert(strstr(sd_spark_damaged(s), "offsets/0: a FIFO"), "got %s", sd_spark_damaged(s));
    sd_spark_close(s);
    free(fifo);
}

Test(spark, a_link_to_dev_zero_is_not_read, .timeout = 10) {
    put("chk/offsets/0", "v1\n{}\n{\"orders\":{\"0\":5,\"1\":3}}\n");
    char *link = sd_util_fmt("%s/chk/offsets/1", dir);
    cr_assert_eq(symlink("/dev/zero", link), 0);
    sd_spark_t *s = open_chk();
    sd_spark_state_t st;
    char err[512] = "";
    cr_assert_eq(sd_spark_poll(s, &st, err, sizeof(err)), SD_ERR_CHECKPOINT);
    cr_assert(strstr(err, "offsets/1: a symbolic link"), "got %s", err);
    sd_spark_close(s);
    free(link);
}

Test(spark, an_offsets_file_past_its_cap_is_damage) {
    put("chk/offsets/0", "v1\n{}\n{\"orders\":{\"0\":5,\"1\":3}}\n");
    char *big = sd_util_fmt("%s/chk/offsets/1", dir);
    FILE *f = fopen(big, "w");
    cr_assert_not_null(f);
    cr_assert_eq(ftruncate(fileno(f), SD_SPARK_FILE_MAX + 1), 0);
    fclose(f);
    sd_spark_t *s = open_chk();
    sd_spark_state_t st;
    cr_assert_eq(sd_spark_poll(s, &st, NULL, 0), SD_OK, "a regular file: read when a batch needs it");
    cr_assert_eq(sd_spark_batch_rows(s, 1), -1);
    cr_assert(sd_spark_damaged(s) && strstr(sd_spark_damaged(s), "more than the"), "got %s", sd_spark_damaged(s));
    sd_spark_close(s);
    free(big);
}

Test(spark, batch_ids_out_of_range_and_gaps) {
    put("chk/offsets/0", "v1\n{}\n{\"orders\":{\"0\":5,\"1\":3}}\n");
    put("chk/commits/0", "v1\n{}\n");
    put("chk/commits/1", "v1\n{}\n");
    put("chk/commits/100000000", "v1\n{}\n");
    sd_spark_t *s = open_chk();
    sd_spark_state_t st;
    cr_assert_eq(sd_spark_poll(s, &st, NULL, 0), SD_OK, "a large id is no damage");
    cr_assert_eq(st.committed, 100000000);
    int64_t ids[8];
    int n = sd_spark_ids(s, 1, 0, st.committed, ids, 8);
    cr_assert_eq(n, 2, "the gap is crossed in one step: only the files there");
    cr_assert_eq(ids[0], 1);
    cr_assert_eq(ids[1], 100000000);
    cr_assert_eq(sd_spark_ids(s, 1, -1, st.committed, ids, 2), 2, "the newest two of three");
    cr_assert_eq(ids[0], 1);
    put("chk/commits/99999999999999999999", "v1\n{}\n");
    char err[512] = "";
    cr_assert_eq(sd_spark_poll(s, &st, err, sizeof(err)), SD_ERR_CHECKPOINT);
    cr_assert(strstr(err, "commits/99999999999999999999: a batch id past 10^15"), "got %s", err);
    sd_spark_close(s);
    cr_assert_eq(sd_checkpoint_id("9223372036854775807", ""), -2);
    cr_assert_eq(sd_checkpoint_id("1000000000000000", ""), SD_CHECKPOINT_ID_MAX);
    cr_assert_eq(sd_checkpoint_id("1000000000000001", ""), -2);
    cr_assert_eq(sd_checkpoint_id("chk-12", "chk-"), 12);
    cr_assert_eq(sd_checkpoint_id("chk-", "chk-"), -1);
    cr_assert_eq(sd_checkpoint_id("12.crc", ""), -1);
    cr_assert_eq(sd_checkpoint_id("-3", ""), -1);
}

Test(spark, a_folder_that_vanishes_is_no_batch) {
    put("chk/offsets/0", "v1\n{}\n{\"orders\":{\"0\":5,\"1\":3}}\n");
    sd_spark_t *s = open_chk();
    sd_spark_state_t st;
    cr_assert_eq(sd_spark_poll(s, &st, NULL, 0), SD_OK);
    cr_assert_eq(st.planned, 0);
    char *chk = sd_util_fmt("%s/chk", dir);
    sd_util_rmtree(chk, NULL, 0);
    cr_assert_eq(sd_spark_poll(s, &st, NULL, 0), SD_OK);
    cr_assert_eq(st.planned, -1);
    cr_assert_eq(sd_spark_batch_rows(s, 0), -1);
    cr_assert_null(sd_spark_damaged(s), "absent is not damaged");
    sd_spark_close(s);
    free(chk);
}

Test(spark, offsets_text_parses_safely) {
    int64_t off[3];
    const char *t = "v1\n{\"batchWatermarkMs\":0}\n{\"orders\":{\"0\":5,\"1x\":7,\"2\":\"9\",\"99\":1}}\n";
    cr_assert_eq(sd_spark_parse_offsets(t, strlen(t), "orders", 3, off), 0);
    cr_assert_eq(off[0], 5);
    cr_assert_eq(off[1], 0, "a partition name that is not a number is left out");
    cr_assert_eq(off[2], 0, "a value that is not an integer is left out");
    cr_assert_eq(sd_spark_parse_offsets("v1\n{}\n{\"orders\":", 16, "orders", 3, off), -1);
    cr_assert_eq(sd_spark_parse_offsets("", 0, "orders", 3, off), -1);
}

/* ---- the batches' ends, for the late-event rule */

Test(spark, batch_ends_list_every_planned_batch) {
    put("chk/offsets/2", "v1\n{\"batchWatermarkMs\":5000}\n{\"orders\":{\"0\":12,\"1\":7}}\n");
    put("chk/offsets/3", "v1\n{\"batchWatermarkMs\":6000}\n{\"orders\":{\"0\":15,\"1\":8}}\n");
    put("chk/offsets/5", "v1\n{}\n{\"other\":{\"0\":20}}\n");
    put("chk/offsets/.6.tmp", "partial");
    sd_spark_t *s = open_chk();
    const int64_t *ids, *ends;
    cr_assert_eq(sd_spark_batch_ends(s, &ids, &ends), 3);
    cr_assert_eq(ids[0], 2);
    cr_assert_eq(ids[1], 3);
    cr_assert_eq(ids[2], 5);
    cr_assert_eq(ends[0], 12);
    cr_assert_eq(ends[1], 7);
    cr_assert_eq(ends[2], 15);
    cr_assert_eq(ends[4], -1, "offsets/5 does not name the topic: its ends are unknown");
    cr_assert_eq(ends[5], -1);
    sd_spark_close(s);
}

Test(spark, batch_ends_of_an_empty_checkpoint) {
    put("chk/commits/.keep", "");
    sd_spark_t *s = open_chk();
    const int64_t *ids, *ends;
    cr_assert_eq(sd_spark_batch_ends(s, &ids, &ends), 0);
    sd_spark_close(s);
}

Test(spark, partitions_past_nine_are_read_in_decimal) {
    int64_t off[12];
    const char *t = "v1\n{\"batchWatermarkMs\":0}\n{\"orders\":{\"9\":90,\"10\":100,\"11\":110}}\n";
    cr_assert_eq(sd_spark_parse_offsets(t, strlen(t), "orders", 12, off), 0);
    cr_expect_eq(off[9], 90);
    cr_expect_eq(off[10], 100);
    cr_expect_eq(off[11], 110);
    cr_expect_eq(off[8], 0);
}

Test(spark, a_batch_is_dated_by_its_files_time_to_the_millisecond) {
    put("chk/offsets/0", "v1\n{\"batchWatermarkMs\":0}\n{\"orders\":{\"0\":5,\"1\":3}}\n");
    char *f = sd_util_fmt("%s/chk/offsets/0", dir);
    struct timespec ts[2] = {{1767254400, 123456789}, {1767254400, 123456789}};
    cr_assert_eq(utimensat(AT_FDCWD, f, ts, 0), 0);
    free(f);
    sd_spark_t *s = open_chk();
    sd_spark_state_t st;
    cr_assert_eq(sd_spark_poll(s, &st, NULL, 0), SD_OK);
    cr_expect_eq(st.planned, 0);
    cr_expect_eq(st.planned_mtime, 1767254400123LL, "%lld", (long long)st.planned_mtime);
    sd_spark_close(s);
}

Test(spark, ids_in_a_range_below_the_newest) {
    for (int i = 0; i < 4; i++) {
        char rel[32];
        snprintf(rel, sizeof(rel), "chk/offsets/%d", i);
        put(rel, "v1\n{\"batchWatermarkMs\":0}\n{\"orders\":{\"0\":1,\"1\":1}}\n");
    }
    sd_spark_t *s = open_chk();
    sd_spark_state_t st;
    cr_assert_eq(sd_spark_poll(s, &st, NULL, 0), SD_OK);
    cr_assert_eq(st.planned, 3);
    int64_t ids[8];
    cr_assert_eq(sd_spark_ids(s, 0, 0, 1, ids, 8), 1, "after 0 up to 1: batch 1 alone, two newer ones above the range");
    cr_expect_eq(ids[0], 1);
    cr_assert_eq(sd_spark_ids(s, 0, -1, 3, ids, 2), 2, "the newest two when at most two are asked");
    cr_expect(ids[0] == 2 && ids[1] == 3);
    sd_spark_close(s);
}
