/* test_spark.c - the Spark checkpoint reader and the Spark file sink reader
 * on hand-made folders where the answer is known: a compacted sink log with
 * a later delete, orphan part files, batches in flight. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    sd_spark_poll(s, &st);
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
    sd_spark_poll(s, &st);
    cr_assert_eq(st.committed, 1);
    sd_spark_close(s);
    free(chk);
}
