/* test_sink.c - the three sink readers on data whose rows are known:
 * sqlite (query columns), jsonl (glob, partial last lines, incremental
 * counts), kafka (the embedded cluster: payload ids, header ids, writer
 * positions, a topic that does not exist). */
#include <avro.h>
#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <sqlite3.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker.h"
#include "jsonfast.h"
#include "jsonscan.h"
#include "observe.h"
#include "sink.h"
#include "util.h"

static char dir[64];
static void setup(void) {
    snprintf(dir, sizeof(dir), "/tmp/sd_sink_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}
static void teardown(void) { sd_util_rmtree(dir, NULL, 0); }
TestSuite(sink, .init = setup, .fini = teardown);

typedef struct { char ids[64][64]; char writers[64][64]; int n; } rows_t;

static int collect(void *o, const char *id, size_t idlen, const char *w, size_t wlen, int64_t t) {
    (void)t;
    rows_t *r = o;
    if (r->n >= 64) return 1;
    snprintf(r->ids[r->n], 64, "%.*s", id ? (int)idlen : 6, id ? id : "(null)");
    snprintf(r->writers[r->n], 64, "%.*s", w ? (int)wlen : 0, w ? w : "");
    r->n++;
    return 0;
}

static sd_sink_t *open_sink(const char *kind, const char *k1, const char *v1, const char *k2, const char *v2,
                            const char *brokers) {
    sd_sink_decl_t d = {.name = "target", .kind = (char *)kind};
    sd_kvlist_add(&d.params, k1, v1);
    if (k2) sd_kvlist_add(&d.params, k2, v2);
    sd_kvlist_t vars = {0};
    sd_sink_ctx_t ctx = {.brokers = brokers, .id_field = "event_id"};
    sd_sink_t *s;
    char err[512];
    cr_assert_eq(sd_sink_open(&d, &vars, &ctx, &s, err, sizeof(err)), SD_OK, "%s", err);
    sd_kvlist_free(&d.params);
    return s;
}

Test(sink, sqlite_reads_ids_and_writers) {
    char *db = sd_util_fmt("%s/t.db", dir);
    sd_sink_t *s = open_sink("sqlite", "db", db, "query", "SELECT id, w FROM t ORDER BY rowid", NULL);
    int64_t rows = -1;
    char err[512];
    cr_assert_eq(sd_sink_count(s, 1, &rows, err, sizeof(err)), SD_OK, "a missing db counts 0 while waiting: %s", err);
    cr_assert_eq(rows, 0);
    cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_ERR_SINK, "but is an error at the final read");
    cr_assert(strstr(err, "does not exist"), "got %s", err);
    sqlite3 *h;
    sqlite3_open(db, &h);
    sqlite3_exec(h, "CREATE TABLE t(id TEXT, w TEXT); INSERT INTO t VALUES('a-1','inc 1'),('a-2','inc 1'),(NULL,'inc 2'),('a-1','inc 2')", NULL, NULL, NULL);
    sqlite3_close(h);
    cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(rows, 4);
    rows_t r = {0};
    cr_assert_eq(sd_sink_scan(s, collect, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(r.n, 4);
    cr_assert_str_eq(r.ids[2], "(null)");
    cr_assert_str_eq(r.ids[3], "a-1");
    cr_assert_str_eq(r.writers[3], "inc 2");
    sd_sink_close(s);
    /* a query on a table that does not exist: a clear error naming the sink */
    s = open_sink("sqlite", "db", db, "query", "SELECT id FROM nope", NULL);
    cr_assert_eq(sd_sink_scan(s, collect, &r, err, sizeof(err)), SD_ERR_SINK);
    cr_assert(strstr(err, "sink target") && strstr(err, "no such table: nope"), "got %s", err);
    sd_sink_close(s);
    free(db);
}

Test(sink, jsonl_counts_complete_lines_incrementally) {
    char *a = sd_util_fmt("%s/part-0.json", dir), *b = sd_util_fmt("%s/part-1.json", dir);
    char *glob = sd_util_fmt("%s/part-*.json", dir);
    sd_sink_t *s = open_sink("jsonl", "path", glob, NULL, NULL, NULL);
    int64_t rows = -1;
    char err[512];
    cr_assert_eq(sd_sink_count(s, 1, &rows, err, sizeof(err)), SD_OK);
    cr_assert_eq(rows, 0);
    FILE *f = fopen(a, "w");
    fputs("{\"event_id\":\"x-1\"}\n{\"event_id\":\"x-2\"}\n{\"event_id\":\"x-3\"", f); /* last line unfinished */
    fclose(f);
    cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_OK);
    cr_assert_eq(rows, 2, "a partial last line is not a row yet, got %lld", (long long)rows);
    f = fopen(a, "a");
    fputs("}\n", f);
    fclose(f);
    f = fopen(b, "w");
    fputs("{\"event_id\":\"x-4\",\"v\":1}\nnot json\n", f);
    fclose(f);
    cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_OK);
    cr_assert_eq(rows, 5);
    rows_t r = {0};
    cr_assert_eq(sd_sink_scan(s, collect, &r, err, sizeof(err)), SD_OK);
    cr_assert_eq(r.n, 5);
    cr_assert_str_eq(r.ids[2], "x-3");
    cr_assert_str_eq(r.ids[4], "(null)", "a line that is not JSON has no id");
    cr_assert_str_eq(r.writers[3], "part-1.json:1", "a glob's rows: FILE:LINE");
    cr_assert_str_eq(r.writers[2], "part-0.json:3");
    sd_sink_close(s);
    /* path= naming one file: rows in write order, "FILE line N" (the runner
     * maps line N to an incarnation by the sink's growth) */
    s = open_sink("jsonl", "path", a, NULL, NULL, NULL);
    rows_t one = {0};
    cr_assert_eq(sd_sink_scan(s, collect, &one, err, sizeof(err)), SD_OK);
    cr_assert_eq(one.n, 3);
    cr_assert_str_eq(one.writers[2], "part-0.json line 3");
    sd_sink_close(s);
    free(a); free(b); free(glob);
}

Test(sink, jsonl_last_line_without_a_newline_is_a_row_when_whole) {
    char *a = sd_util_fmt("%s/end.json", dir);
    sd_sink_t *s = open_sink("jsonl", "path", a, NULL, NULL, NULL);
    char err[512];
    FILE *f = fopen(a, "w");
    fputs("{\"event_id\":\"y-1\"}\n{\"event_id\":\"y-2\"}", f); /* a writer that never ends its last line */
    fclose(f);
    rows_t r = {0};
    cr_assert_eq(sd_sink_scan(s, collect, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(r.n, 2, "the whole last line is a row (a false loss otherwise), got %d rows", r.n);
    cr_assert_str_eq(r.ids[1], "y-2");
    f = fopen(a, "w");
    fputs("{\"event_id\":\"y-1\"}\n{\"event_id\":\"y-", f); /* cut short: being written */
    fclose(f);
    memset(&r, 0, sizeof(r));
    cr_assert_eq(sd_sink_scan(s, collect, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(r.n, 1, "a last line cut short is not a row yet, got %d rows", r.n);
    char *note = sd_sink_notes(s);
    cr_assert_not_null(note, "a last line cut short is said");
    cr_expect(strstr(note, "end.json line 2") && strstr(note, "cut short"), "%s", note);
    free(note);
    sd_sink_close(s);
    free(a);
}

Test(sink, json_field_extraction) {
    char out[64];
    cr_assert_eq(sd_sink_json_field("{\"event_id\":\"a-1\",\"x\":2}", 24, "event_id", out, sizeof(out)), 3);
    cr_assert_str_eq(out, "a-1");
    cr_assert_eq(sd_sink_json_field("{\"event_id\":17}", 15, "event_id", out, sizeof(out)), 2);
    cr_assert_eq(sd_sink_json_field("{\"other\":1}", 11, "event_id", out, sizeof(out)), -1);
    cr_assert_eq(sd_sink_json_field("[1,2]", 5, "event_id", out, sizeof(out)), -1);
    cr_assert_eq(sd_sink_json_field("{\"event_id\":\"a-1\"", 17, "event_id", out, sizeof(out)), -1, "truncated JSON");
}

/* The same answers as jansson's defaults, on the rows a buggy pipeline writes. */
Test(sink, json_field_edge_cases) {
    struct { const char *json, *want; } cases[] = {
        {"{\"event_id\":\"a-1\",\"event_id\":\"a-2\"}", "a-2"},             /* duplicate keys: the last wins */
        {"{\"x\":{\"event_id\":\"a-1\"}}", NULL},                          /* only a top-level field counts */
        {"{\"event_id\":\"a-\\u0031\"}", "a-1"},                            /* escapes are decoded */
        {"{\"event_id\":\"a\\u0000b\"}", NULL},                             /* U+0000: refused, as jansson does */
        {"{\"event_id\":\"\xff\xfe\"}", NULL},                              /* invalid UTF-8 */
        {"{\"event_id\":1.5}", NULL},                                       /* a real is no id */
        {"{\"event_id\":-42}", "-42"},
        {"{\"event_id\":true}", NULL},
        {"{\"event_id\":\"a-1\"} trailing", NULL},                            /* garbage after the object */
        {"{\"event_id\":\"a-1\",}", NULL},                                    /* trailing comma */
        {"  {\"event_id\" : \"a-1\" }  ", "a-1"},                              /* whitespace */
        {"{\"event_id\":\"a-1\",\"n\":[1,{\"k\":[]}],\"s\":\"\\\"q\\\"\"}", "a-1"},
        {"\"event_id\"", NULL},
        {"", NULL}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[64] = "";
        int n = sd_sink_json_field(cases[i].json, strlen(cases[i].json), "event_id", out, sizeof(out));
        if (!cases[i].want) cr_assert_eq(n, -1, "%s -> %d (%s)", cases[i].json, n, out);
        else {
            cr_assert_eq(n, (int)strlen(cases[i].want), "%s -> %d", cases[i].json, n);
            cr_assert_str_eq(out, cases[i].want);
        }
    }
    /* the write time: a number, a string of digits, an ISO-8601 string */
    char out[64];
    int64_t t;
    const char *num = "{\"event_id\":\"a\",\"t\":1767254400000}";
    cr_assert_eq(sd_sink_json_id_time(num, strlen(num), "event_id", out, sizeof(out), "t", &t), 1);
    cr_assert_eq(t, 1767254400000LL);
    const char *iso = "{\"event_id\":\"a\",\"t\":\"2026-01-01T08:00:00.000Z\"}";
    cr_assert_eq(sd_sink_json_id_time(iso, strlen(iso), "event_id", out, sizeof(out), "t", &t), 1);
    cr_assert_eq(t, 1767254400000LL);
    const char *bad = "{\"event_id\":\"a\",\"t\":\"yesterday\"}";
    cr_assert_eq(sd_sink_json_id_time(bad, strlen(bad), "event_id", out, sizeof(out), "t", &t), 1);
    cr_assert_eq(t, INT64_MIN);
    /* an id longer than the buffer is cut, not overflowed */
    char small[4];
    cr_assert_eq(sd_sink_json_field("{\"event_id\":\"abcdefgh\"}", 23, "event_id", small, sizeof(small)), 3);
    cr_assert_str_eq(small, "abc");
}

Test(sink, kafka_reads_a_topic_of_the_embedded_cluster, .timeout = 60) {
    sd_broker_t *b;
    char err[512];
    cr_assert_eq(sd_broker_embedded(1, &b, err, sizeof(err)), SD_OK, "%s", err);
    int got = 0;
    cr_assert_eq(sd_broker_create_topic(b, "out", 2, 1, &got, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(got, 2);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", sd_broker_bootstrap(b), NULL, 0);
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    for (int i = 0; i < 10; i++) {
        char v[64], h[16];
        snprintf(v, sizeof(v), "{\"event_id\":\"k-%d\"}", i % 8);
        snprintf(h, sizeof(h), "k-%d", i % 8);
        cr_assert_eq(rd_kafka_producev(p, RD_KAFKA_V_TOPIC("out"), RD_KAFKA_V_PARTITION(i % 2), RD_KAFKA_V_VALUE(v, strlen(v)),
                                       RD_KAFKA_V_HEADER("sd-id", h, -1), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END), 0);
    }
    cr_assert_eq(rd_kafka_flush(p, 10000), 0);
    rd_kafka_destroy(p);
    sd_sink_t *s = open_sink("kafka", "topic", "out", NULL, NULL, sd_broker_bootstrap(b));
    int64_t rows = -1;
    cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(rows, 10);
    rows_t r = {0};
    cr_assert_eq(sd_sink_scan(s, collect, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(r.n, 10, "expected 10 records, read %d", r.n);
    int k0 = 0;
    for (int i = 0; i < r.n; i++) {
        if (!strcmp(r.ids[i], "k-0")) k0++;
        cr_assert(r.writers[i][0] == 'p' && strchr(r.writers[i], '@'), "writer should be a position, got %s", r.writers[i]);
    }
    cr_assert_eq(k0, 2, "k-0 was written twice, read %d", k0);
    sd_sink_close(s);
    /* header ids */
    sd_sink_decl_t d = {.name = "h", .kind = "kafka"};
    sd_kvlist_add(&d.params, "topic", "out");
    sd_kvlist_add(&d.params, "header", "sd-id");
    sd_kvlist_t vars = {0};
    sd_sink_ctx_t ctx = {.brokers = sd_broker_bootstrap(b)};
    cr_assert_eq(sd_sink_open(&d, &vars, &ctx, &s, err, sizeof(err)), SD_OK);
    memset(&r, 0, sizeof(r));
    cr_assert_eq(sd_sink_scan(s, collect, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(r.n, 10);
    sd_sink_close(s);
    sd_kvlist_free(&d.params);
    /* a topic that does not exist yet: 0 while waiting, an error at the end */
    s = open_sink("kafka", "topic", "never", NULL, NULL, sd_broker_bootstrap(b));
    cr_assert_eq(sd_sink_count(s, 1, &rows, err, sizeof(err)), SD_OK);
    cr_assert_eq(rows, 0);
    sd_sink_close(s);
    sd_broker_close(b);
    /* the cluster's own thread destroys it: waited for, or LeakSanitizer
     * would see it half gone at the test's exit */
    cr_assert_eq(sd_broker_reaped_wait(10000), 0);
}

/* named columns for the result models */
typedef struct { char v[16][3][64]; int n; } cols_t;

static int collect_cols(void *o, const char *const *vals, const size_t *lens) {
    cols_t *c = o;
    if (c->n >= 16) return 1;
    for (int i = 0; i < 3; i++) snprintf(c->v[c->n][i], 64, "%.*s", vals[i] ? (int)lens[i] : 6, vals[i] ? vals[i] : "(null)");
    c->n++;
    return 0;
}

Test(sink, sqlite_gives_named_columns_and_names_a_missing_one) {
    char *db = sd_util_fmt("%s/agg.db", dir);
    sqlite3 *h;
    sqlite3_open(db, &h);
    sqlite3_exec(h, "CREATE TABLE agg(window_start INTEGER, location TEXT, count INTEGER);"
                    "INSERT INTO agg VALUES(60000, 'AMS-01', 3), (120000, NULL, 4)", NULL, NULL, NULL);
    sqlite3_close(h);
    sd_sink_t *s = open_sink("sqlite", "db", db, "query", "SELECT count, location, window_start FROM agg ORDER BY rowid", NULL);
    const char *names[] = {"window_start", "location", "?sd_writer"};
    cols_t c = {0};
    char err[512];
    cr_assert_eq(sd_sink_scan_cols(s, names, 3, collect_cols, &c, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(c.n, 2);
    cr_expect_str_eq(c.v[0][0], "60000");
    cr_expect_str_eq(c.v[0][1], "AMS-01");
    cr_expect_str_eq(c.v[0][2], "(null)", "an optional column the query lacks is NULL");
    cr_expect_str_eq(c.v[1][1], "(null)", "SQL NULL is NULL");
    const char *bad[] = {"window_start", "sum"};
    cr_expect_eq(sd_sink_scan_cols(s, bad, 2, collect_cols, &c, err, sizeof(err)), SD_ERR_SINK);
    cr_expect(strstr(err, "expected a column named sum, found count, location, window_start") != NULL, "%s", err);
    sd_sink_close(s);
    free(db);
}

Test(sink, jsonl_gives_named_fields_with_dotted_paths) {
    char *path = sd_util_fmt("%s/out.jsonl", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"window\":{\"start\":\"2026-01-01T08:01:00.000Z\"},\"location\":\"AMS-01\",\"count\":3}\n"
          "{\"window\":{\"start\":120000},\"location\":7,\"count\":2.5}\n"
          "{\"window\":{\"start\":\"2026-01-01T08:02:00.000Z\"},\"loc", f); /* still being written */
    fclose(f);
    sd_sink_t *s = open_sink("jsonl", "path", path, NULL, NULL, NULL);
    const char *names[] = {"window.start", "location", "count"};
    cols_t c = {0};
    char err[512];
    cr_assert_eq(sd_sink_scan_cols(s, names, 3, collect_cols, &c, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(c.n, 2, "the unfinished last line is not a row yet");
    cr_expect_str_eq(c.v[0][0], "2026-01-01T08:01:00.000Z");
    cr_expect_str_eq(c.v[1][0], "120000");
    cr_expect_str_eq(c.v[1][1], "7", "numbers as text");
    cr_expect_str_eq(c.v[1][2], "2.5");
    sd_sink_close(s);
    /* a line that is no JSON object, in the middle: an error naming file and line */
    f = fopen(path, "w");
    fputs("{\"count\":1}\nnot json\n{\"count\":2}\n", f);
    fclose(f);
    s = open_sink("jsonl", "path", path, NULL, NULL, NULL);
    c.n = 0;
    cr_expect_eq(sd_sink_scan_cols(s, names, 3, collect_cols, &c, err, sizeof(err)), SD_ERR_SINK);
    cr_expect(strstr(err, "out.jsonl:2: expected a JSON object") != NULL, "%s", err);
    sd_sink_close(s);
    free(path);
}

static void write_commit(const char *log, int v, const char *text) {
    char *p = sd_util_fmt("%s/%020d.json", log, v);
    cr_assert_eq(sd_util_write_file(p, text, strlen(text), NULL, 0), SD_OK);
    free(p);
}

/* The Delta reader's log replay: rows counted from the adds' numRecords,
 * removes taking files out, the newest version as the mark; a log whose
 * first commits were cleaned up, and a broken action line, are errors. */
Test(sink, delta_log_replay) {
    char *table = sd_util_fmt("%s/tbl", dir), *log = sd_util_fmt("%s/tbl/_delta_log", dir);
    sd_sink_t *s = open_sink("delta", "path", table, NULL, NULL, NULL);
    int64_t rows = -1;
    char err[512];
    cr_assert_eq(sd_sink_count(s, 1, &rows, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(rows, 0, "no table yet: 0 rows while waiting");
    cr_assert_eq(sd_sink_mark(s), -1);
    cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_ERR_SINK);
    cr_assert(strstr(err, "no _delta_log"), "got %s", err);
    cr_assert_eq(sd_util_mkdirs(log, NULL, 0), SD_OK);
    write_commit(log, 0, "{\"commitInfo\":{\"timestamp\":1000,\"operation\":\"WRITE\"}}\n"
                         "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n"
                         "{\"metaData\":{\"id\":\"x\",\"format\":{\"provider\":\"parquet\"},\"partitionColumns\":[]}}\n"
                         "{\"add\":{\"path\":\"a%20b.parquet\",\"size\":1,\"stats\":\"{\\\"numRecords\\\":10}\",\"dataChange\":true}}\n");
    write_commit(log, 1, "{\"txn\":{\"appId\":\"q1\",\"version\":3}}\n"
                         "{\"add\":{\"path\":\"c.parquet\",\"size\":1,\"stats\":\"{\\\"numRecords\\\":5}\",\"dataChange\":true}}\n"
                         "{\"commitInfo\":{\"timestamp\":2000,\"operation\":\"STREAMING UPDATE\"}}\n");
    cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(rows, 15);
    cr_assert_eq(sd_sink_mark(s), 1);
    /* a rewrite: the first file removed (its path as the log encodes it), a new one added */
    write_commit(log, 2, "{\"remove\":{\"path\":\"a%20b.parquet\",\"dataChange\":true}}\n"
                         "{\"add\":{\"path\":\"d.parquet\",\"size\":1,\"stats\":\"{\\\"numRecords\\\":7}\",\"dataChange\":true}}\n");
    cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(rows, 12, "incremental replay applies the remove");
    cr_assert_eq(sd_sink_mark(s), 2);
    write_commit(log, 3, "{\"add\":{\"path\":\"e.parquet\"\n");
    cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_ERR_SINK);
    cr_assert(strstr(err, "00000000000000000003.json:1: expected a Delta action"), "got %s", err);
    sd_sink_close(s);
    /* a log that starts after version 0 (cleaned up behind a checkpoint) */
    char *log2 = sd_util_fmt("%s/t2/_delta_log", dir), *t2 = sd_util_fmt("%s/t2", dir);
    cr_assert_eq(sd_util_mkdirs(log2, NULL, 0), SD_OK);
    write_commit(log2, 11, "{\"commitInfo\":{\"timestamp\":1,\"operation\":\"WRITE\"}}\n");
    s = open_sink("delta", "path", t2, NULL, NULL, NULL);
    cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_ERR_SINK);
    /* the whole reason, not only the version */
    char *full = sd_util_fmt("%s: the log starts at version 11 (the commits before it were cleaned up behind a checkpoint); streamdrill "
                             "replays the commits from version 0 and does not read checkpoints", t2);
    cr_assert(strstr(err, full), "got %s", err);
    free(full);
    sd_sink_close(s);
    free(table); free(log); free(log2); free(t2);
}

typedef struct {
    int64_t commit[16], bytes[16];
    int n;
} files_t;
static void file_cb(void *opaque, int64_t commit, int64_t bytes) {
    files_t *f = opaque;
    if (f->n < 16) f->commit[f->n] = commit, f->bytes[f->n] = bytes, f->n++;
}

/* The small-file figures' source: the files each commit added, with their
 * sizes, from a Delta log (add actions; a remove is no file written) and a
 * Spark file sink's log (a batch's entry; a compact file is not counted
 * twice); a reader without such a log says so. */
Test(sink, files_each_commit_added) {
    char *table = sd_util_fmt("%s/ft", dir), *log = sd_util_fmt("%s/ft/_delta_log", dir);
    cr_assert_eq(sd_util_mkdirs(log, NULL, 0), SD_OK);
    write_commit(log, 0, "{\"commitInfo\":{\"timestamp\":1000,\"operation\":\"WRITE\"}}\n"
                         "{\"add\":{\"path\":\"a.parquet\",\"size\":700,\"dataChange\":true}}\n");
    write_commit(log, 1, "{\"add\":{\"path\":\"b.parquet\",\"size\":100,\"dataChange\":true}}\n"
                         "{\"add\":{\"path\":\"c.parquet\",\"size\":300,\"dataChange\":true}}\n"
                         "{\"remove\":{\"path\":\"a.parquet\",\"dataChange\":true}}\n");
    sd_sink_t *s = open_sink("delta", "path", table, NULL, NULL, NULL);
    files_t f = {0};
    char err[512];
    cr_assert_eq(sd_sink_files(s, file_cb, &f, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(f.n, 3);
    int in1 = 0;
    int64_t total = 0;
    for (int i = 0; i < f.n; i++) in1 += f.commit[i] == 1, total += f.bytes[i];
    cr_assert_eq(in1, 2);
    cr_assert_eq(total, 1100);
    sd_sink_close(s);
    char *out = sd_util_fmt("%s/sparkout", dir), *meta = sd_util_fmt("%s/sparkout/_spark_metadata", dir);
    cr_assert_eq(sd_util_mkdirs(meta, NULL, 0), SD_OK);
    const char *entries[3][2] = {{"0", "v1\n{\"path\":\"file:///x/p0\",\"size\":10,\"action\":\"add\"}\n"},
                                 {"1", "v1\n{\"path\":\"file:///x/p1\",\"size\":20,\"action\":\"add\"}\n"
                                       "{\"path\":\"file:///x/p2\",\"size\":30,\"action\":\"add\"}\n"},
                                 {"1.compact", "v1\n{\"path\":\"file:///x/p0\",\"size\":10,\"action\":\"add\"}\n"}};
    for (int i = 0; i < 3; i++) {
        char *p = sd_util_fmt("%s/%s", meta, entries[i][0]);
        FILE *w = fopen(p, "w");
        fputs(entries[i][1], w);
        fclose(w);
        free(p);
    }
    s = open_sink("spark-files", "path", out, NULL, NULL, NULL);
    memset(&f, 0, sizeof(f));
    cr_assert_eq(sd_sink_files(s, file_cb, &f, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(f.n, 3, "p0, p1, p2 once each: %d", f.n);
    sd_sink_close(s);
    char *db = sd_util_fmt("%s/x.db", dir);
    s = open_sink("sqlite", "db", db, "query", "SELECT 1", NULL);
    cr_assert_eq(sd_sink_files(s, file_cb, &f, err, sizeof(err)), SD_ERR_SINK);
    cr_assert(strstr(err, "keeps no log of the files"), "%s", err);
    sd_sink_close(s);
    free(db); free(out); free(meta); free(table); free(log);
}

/* The fast path (jsonfast.c) against the full parser (jsonscan.cpp) on
 * hostile rows: valid rows mutated at random (bytes replaced, inserted,
 * removed; escapes, non-ASCII bytes, NULs, nesting, numbers at their
 * edges), whole and cut short. Every row gives the same id, length and
 * write time both ways; and the fast path must answer for a good share of
 * them, or it proves nothing. */
#define S10 "0123456789"
#define S100 S10 S10 S10 S10 S10 S10 S10 S10 S10 S10
static const char *const templates[] = {
    "{\"event_id\":\"ab12-7\",\"event_time\":\"2026-01-01T08:00:00.000Z\",\"location\":\"HUB-03\",\"sd_batch\":4}",
    "{\"event_id\":42,\"event_time\":1767254400000,\"ok\":true,\"x\":null,\"y\":false,\"f\":-0.5}",
    " { \"event_id\" : \"ab12-8\" , \"event_time\" : \"1767254400000\" } ",
    "{\"a\":1,\"event_id\":\"first\",\"event_id\":\"last\",\"event_time\":12}",
    "{\"event_id\":\"ab12-9\",\"n\":{\"event_id\":\"inner\"},\"l\":[1,2]}",
    "{\"event_id\":\"caf\\u00e9\",\"event_time\":\"x\\\"y\"}",
    "{\"event_id\":123456789012345678,\"event_time\":-5}",
    "{\"event_id\":1234567890123456789012,\"event_time\":1e3}",
    "{}",
    "{\"event_id\":\"\",\"event_time\":\"\"}",
    "{\"event_id\":\"\xc3\xa9t\xc3\xa9\",\"event_time\":0}",
    /* strings across the bitmap's 64-byte words, and a row over the fast
     * path's 1,024 bytes */
    "{\"event_id\":\"ab12-10\",\"event_time\":\"2026-01-01T08:00:00.000Z\",\"parcel_id\":\"P00000001\",\"location\":\"HUB-01\","
    "\"status\":\"scanned\",\"note\":\"a plain string long enough to cross the second word\",\"sd_batch\":0}",
    "{\"note\":\"" S100 S100 S100 S100 S100 S100 S100 S100 S100 S100 "\",\"event_id\":\"ab12-11\",\"event_time\":7}",
};
static const char alphabet[] = "{}[]:,\"\\ \t\r\n0123456789-+.eEtrufalsn\x7f\x80\xc3\xa9\xff\x01";

Test(sink, json_fast_path_agrees_with_the_full_parser_on_hostile_rows) {
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    int64_t fast = 0, ids = 0, total = 0, lines_fast = 0, shape_hits = 0;
    static sd_jsonfast_shape_t shape;
    char row[1536];
    for (int it = 0; it < 200000; it++) {
        const char *t = templates[it % (sizeof(templates) / sizeof(templates[0]))];
        size_t n = strlen(t);
        memcpy(row, t, n);
        int edits = it % 4; /* a quarter of the rows unmutated */
        for (int k = 0; k < edits; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t pos = n ? (size_t)(x % n) : 0;
            char c = alphabet[(x >> 20) % (sizeof(alphabet) - 1)];
            int op = (int)((x >> 40) % 3);
            if (op == 0 && n) row[pos] = c;
            else if (op == 1 && n + 1 < sizeof(row)) {
                memmove(row + pos + 1, row + pos, n - pos);
                row[pos] = c;
                n++;
            } else if (n) {
                memmove(row + pos, row + pos + 1, n - pos - 1);
                n--;
            }
        }
        for (int cut = 0; cut < 2; cut++) { /* the whole row, and the row cut short */
            size_t len = cut ? n / 2 : n;
            char a[64], b[64];
            int64_t ta, tb;
            memset(a, 0, sizeof(a));
            memset(b, 0, sizeof(b));
            int na = sd_sink_json_id_time(row, len, "event_id", a, sizeof(a), "event_time", &ta);
            int nb = sd_jsonscan_id_time(row, len, "event_id", b, sizeof(b), "event_time", &tb, sd_util_parse_iso8601);
            cr_assert_eq(na, nb, "row %d [%.*s]: %d against the full parser's %d", it, (int)len, row, na, nb);
            cr_assert(na < 0 || !memcmp(a, b, (size_t)na + 1), "row %d [%.*s]: id %s against %s", it, (int)len, row, a, b);
            cr_assert_eq(ta, tb, "row %d [%.*s]: time %lld against %lld", it, (int)len, row, (long long)ta, (long long)tb);
            char c2[64];
            int64_t tc;
            if (sd_jsonfast_id_time(row, len, "event_id", c2, sizeof(c2), "event_time", &tc, sd_util_parse_iso8601) !=
                SD_JSONFAST_UNSURE)
                fast++;
            ids += na >= 0;
            total++;
            /* the same row as a line of a block, its end found on the way:
             * ended by a newline, a CR and a newline, or nothing (the
             * buffer exactly as long as the bytes, so ASan sees a read past
             * them), with the next line's bytes after it or not. It reads
             * 64 bytes at a time and never past the buffer, so a plain row
             * must be answered when a whole 64 follow it (the last). */
            static const char *const ends[] = {"\n", "\r\n", "\n{\"event_id\":\"next\"}\n", "",
                                               "\r\n{\"event_id\":\"next\",\"event_time\":\"2026-01-01T08:00:00.000Z\",\"n\":12345}\n"};
            for (size_t e = 0; e < sizeof(ends) / sizeof(ends[0]); e++) {
                size_t el = strlen(ends[e]), avail = len + el;
                char *lb = malloc(avail ? avail : 1);
                memcpy(lb, row, len);
                memcpy(lb + len, ends[e], el);
                size_t rl, used;
                int64_t tl;
                int nl_ = sd_jsonfast_line(NULL, lb, avail, &rl, &used, "event_id", c2, sizeof(c2), "event_time", &tl,
                                           sd_util_parse_iso8601);
                if (nl_ != SD_JSONFAST_UNSURE) {
                    /* the line the plain walk would see: up to the first
                     * newline, a CR before it removed */
                    const char *nl = memchr(lb, '\n', avail);
                    cr_assert_not_null(nl, "row %d [%.*s]: a line without a newline answered", it, (int)len, row);
                    size_t want = (size_t)(nl - lb);
                    cr_assert_eq(used, want + 1, "row %d: used %zu, the newline at %zu", it, used, want);
                    if (want && lb[want - 1] == '\r') want--;
                    cr_assert_eq(rl, want, "row %d: length %zu against %zu", it, rl, want);
                    int nr = -1;
                    int64_t tr = INT64_MIN;
                    if (want) nr = sd_jsonscan_id_time(lb, want, "event_id", b, sizeof(b), "event_time", &tr, sd_util_parse_iso8601);
                    cr_assert_eq(nl_, nr, "row %d [%.*s] end %zu: %d against the full parser's %d", it, (int)len, row, e, nl_, nr);
                    cr_assert(nl_ < 0 || !memcmp(c2, b, (size_t)nl_ + 1), "row %d: id %s against %s", it, c2, b);
                    if (want) cr_assert_eq(tl, tr, "row %d: time %lld against %lld", it, (long long)tl, (long long)tr);
                    lines_fast++;
                } else if (e == 4 && !cut && !memchr(row, '\n', len) && !memchr(row, '\r', len) && len < 1000 &&
                           sd_jsonfast_id_time(row, len, "event_id", c2, sizeof(c2), "event_time", &tc, sd_util_parse_iso8601) !=
                               SD_JSONFAST_UNSURE) {
                    cr_assert(0, "row %d [%.*s] end %zu: plain, answered whole, but not as a line", it, (int)len, row, e);
                }
                free(lb);
            }
            /* and read by the shape its template's row left (a row of that
             * shape is read by comparing bytes, any other one walked) */
            size_t tn = strlen(t), rl, used;
            int64_t tl;
            char *teach = malloc(tn + 65), *lb = malloc(len + 65); /* and the next line's 64 bytes */
            memcpy(teach, t, tn);
            memset(teach + tn, ' ', 65);
            teach[tn] = '\n';
            memcpy(lb, row, len);
            memset(lb + len, ' ', 65);
            lb[len] = '\n';
            memset(&shape, 0, sizeof(shape));
            sd_jsonfast_line(&shape, teach, tn + 65, &rl, &used, "event_id", c2, sizeof(c2), "event_time", &tl, sd_util_parse_iso8601);
            int ns = sd_jsonfast_line(&shape, lb, len + 65, &rl, &used, "event_id", c2, sizeof(c2), "event_time", &tl,
                                      sd_util_parse_iso8601);
            if (ns != SD_JSONFAST_UNSURE) {
                size_t want = (size_t)((char *)memchr(lb, '\n', len + 1) - lb);
                if (want && lb[want - 1] == '\r') want--;
                cr_assert_eq(rl, want, "row %d: length %zu against %zu", it, rl, want);
                int nr = -1;
                int64_t tr = INT64_MIN;
                if (want) nr = sd_jsonscan_id_time(lb, want, "event_id", b, sizeof(b), "event_time", &tr, sd_util_parse_iso8601);
                cr_assert_eq(ns, nr, "row %d [%.*s] by the shape of [%s]: %d against the full parser's %d", it, (int)len, row, t, ns,
                             nr);
                cr_assert(ns < 0 || !memcmp(c2, b, (size_t)ns + 1), "row %d [%.*s] by its shape: id %s against %s", it, (int)len,
                          row, c2, b);
                if (want) cr_assert_eq(tl, tr, "row %d [%.*s] by its shape: time %lld against %lld", it, (int)len, row, (long long)tl,
                                       (long long)tr);
            }
            shape_hits += shape.hits;
            free(teach);
            free(lb);
        }
    }
    cr_assert_gt(lines_fast, total / 10, "the line fast path answered %lld lines", (long long)lines_fast);
    /* the plain templates' rows unmutated, or mutated only inside a value
     * (a cut row is never of its template's shape) */
    cr_assert_gt(shape_hits, total / 20, "the shape read %lld rows", (long long)shape_hits);
    /* it answers the valid plain rows (7 of the 11 templates, unmutated or
     * mutated into another plain row); a broken row is the full parser's */
    cr_assert_gt(fast, total / 10, "the fast path answered %lld of %lld rows", (long long)fast, (long long)total);
    cr_assert_gt(ids, total / 10);
    cr_log_info("fast path answered %lld of %lld rows (%lld with an id), %lld lines, %lld by a shape", (long long)fast, (long long)total,
                (long long)ids, (long long)lines_fast, (long long)shape_hits);
}

/* A shape read (jsonfast.c): rows whose bytes around the values are the
 * last plain row's are read by comparing those bytes; each case says
 * whether the shape must read it, and every answer must be the full
 * parser's, as for the rows no shape reads. */
Test(sink, json_shape_reads_rows_of_its_shape_and_no_other) {
    static const struct {
        const char *teacher, *row;
        int by_shape;
    } cases[] = {
        {"{\"event_id\":\"ab12-7\",\"event_time\":\"2026-01-01T08:00:00.000Z\",\"n\":12,\"ok\":true,\"f\":-0.5}",
         "{\"event_id\":\"zz-99999\",\"event_time\":\"2026-01-02T00:00:00.000Z\",\"n\":0,\"ok\":true,\"f\":3.25}", 1},
        {"{\"event_id\":\"ab12-7\",\"n\":12}", "{\"event_id\":\"\",\"n\":9}", 1},
        {"{\"event_id\":\"ab12-7\",\"n\":12}", "{\"event_id\":\"a\"b\",\"n\":12}", 0},
        {"{\"event_id\":\"ab12-7\",\"n\":12}", "{\"event_id\":\"ab\",\"n\":012}", 0},
        {"{\"event_id\":\"ab12-7\",\"n\":12}", "{\"event_id\":\"ab\",\"n\":\"12\"}", 0},
        {"{\"event_id\":\"ab12-7\",\"n\":12}", "{\"event_id\":\"ab\",\"n\":1e2}", 0},
        {"{\"event_id\":\"ab12-7\",\"n\":12}", "{\"event_id\":\"ab\",\"n\":-}", 0},
        {"{\"event_id\":\"ab12-7\",\"n\":12}", "{\"event_iD\":\"ab\",\"n\":12}", 0},
        {"{\"event_id\":\"ab12-7\",\"n\":12}", "{\"event_id\":\"ab\", \"n\":12}", 0},
        {"{\"event_id\":\"ab12-7\",\"n\":12}", "{\"event_id\":\"ab\",\"n\":12} ", 0},
        {"{\"event_id\":\"ab12-7\",\"n\":12}", "{\"event_id\":\"ab\",\"n\":12", 0},
        {"{\"event_id\":\"ab12-7\",\"n\":12}", "{\"event_id\":\"ab12-7\",\"n\":12}}", 0},
        {"{\"event_id\":\"ab12-7\",\"n\":12}", "{\"event_id\":\"ab\",\"n\":12,\"m\":1}", 0},
        {"{\"event_id\":\"ab12-7\",\"ok\":true}", "{\"event_id\":\"ab\",\"ok\":false}", 0},
        {"{\"event_id\":\"ab12-7\",\"ok\":true}", "{\"event_id\":\"ab\",\"ok\":true}", 1},
        {"{\"event_id\":42,\"event_time\":1767254400000}", "{\"event_id\":7,\"event_time\":0}", 1},
        {"{\"event_id\":42,\"event_time\":1767254400000}", "{\"event_id\":123456789012345678,\"event_time\":5}", 1},
        {"{\"event_id\":42,\"event_time\":1767254400000}", "{\"event_id\":1234567890123456789,\"event_time\":5}", 0},
        {"{\"event_id\":42,\"event_time\":1767254400000}", "{\"event_id\":-4,\"event_time\":5}", 0},
        {"{\"event_id\":42,\"event_time\":1767254400000}", "{\"event_id\":4.5,\"event_time\":5}", 0},
        {"{\"event_id\":42,\"event_time\":1767254400000}", "{\"event_id\":00,\"event_time\":5}", 0},
        {"{\"event_id\":42,\"event_time\":1767254400000}", "{\"event_id\":\"42\",\"event_time\":5}", 0},
        {"{\"event_id\":\"first\",\"event_id\":\"last\"}", "{\"event_id\":\"x\",\"event_id\":\"y\"}", 1},
        {"{\"event_id\":\"first\",\"event_id\":null}", "{\"event_id\":\"x\",\"event_id\":null}", 1},
        {"{\"event_time\":\"x\",\"a\":\"b\"}", "{\"event_time\":\"2026-01-01T08:00:00.000Z\",\"a\":\"\"}", 1},
        {" { \"event_id\" : \"a\" } ", " { \"event_id\" : \"bcd\" } ", 1},
        {"{}", "{}", 1},
        {"{\"event_id\":\"ab12-7\"}", "{\"event_id\":\"ab\\u0041\"}", 0},
    };
    int hits = 0, want_hits = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sd_jsonfast_shape_t shape;
        memset(&shape, 0, sizeof(shape));
        char line[256], id[64], full[64];
        size_t len, used;
        int64_t t, ft;
        /* a line is read 64 bytes at a time, never past the buffer: a whole
         * 64 follow each (the next line's) */
        snprintf(line, sizeof(line), "%s\n%64s", cases[i].teacher, "{}");
        int nt = sd_jsonfast_line(&shape, line, strlen(line), &len, &used, "event_id", id, sizeof(id), "event_time", &t,
                                  sd_util_parse_iso8601);
        cr_assert_neq(nt, SD_JSONFAST_UNSURE, "case %zu: the teacher [%s] is plain", i, cases[i].teacher);
        cr_assert_eq(shape.hits, 0);
        size_t rn = strlen(cases[i].row);
        char *lb = malloc(rn + 65); /* as long as the line and the next: ASan sees a read past them */
        memcpy(lb, cases[i].row, rn);
        memset(lb + rn, ' ', 65);
        lb[rn] = '\n';
        int n = sd_jsonfast_line(&shape, lb, rn + 65, &len, &used, "event_id", id, sizeof(id), "event_time", &t, sd_util_parse_iso8601);
        int nf = sd_jsonscan_id_time(lb, rn, "event_id", full, sizeof(full), "event_time", &ft, sd_util_parse_iso8601);
        if (n != SD_JSONFAST_UNSURE) {
            cr_assert_eq(n, nf, "case %zu [%s]: %d against the full parser's %d", i, cases[i].row, n, nf);
            cr_assert(n < 0 || !strcmp(id, full), "case %zu [%s]: id %s against %s", i, cases[i].row, id, full);
            cr_assert_eq(t, ft, "case %zu [%s]: time %lld against %lld", i, cases[i].row, (long long)t, (long long)ft);
        }
        cr_assert_eq(shape.hits, cases[i].by_shape, "case %zu [%s]: read by the shape %lld times, want %d", i, cases[i].row,
                     (long long)shape.hits, cases[i].by_shape);
        hits += (int)shape.hits, want_hits += cases[i].by_shape;
        free(lb);
    }
    cr_assert_eq(hits, want_hits);
}

/* Latencies as the observation keeps them (three bytes a seq, the large
 * ones exactly in a map): the earliest copy's write time minus the send
 * time, 0 for a write before the send, none for an event never sent or a
 * row without a time; past 2^24 - 3 ms (4.6 hours) exact through the map. */
Test(sink, observed_latencies_are_exact_in_three_bytes) {
    char *path = sd_util_fmt("%s/t.jsonl", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"event_id\":\"abc-0\",\"t\":1500}\n"     /* sent at 1000 (base 0 + 1000): 500 */
          "{\"event_id\":\"abc-0\",\"t\":1200}\n"     /* an earlier copy: 200 */
          "{\"event_id\":\"abc-0\",\"t\":1900}\n"     /* a later one changes nothing */
          "{\"event_id\":\"abc-1\",\"t\":20001000}\n" /* sent at 1000: 20,000,000 ms, past three bytes */
          "{\"event_id\":\"abc-1\",\"t\":20005000}\n"
          "{\"event_id\":\"abc-2\",\"t\":10}\n"       /* written before it was sent: 0 */
          "{\"event_id\":\"abc-3\",\"t\":5000}\n"     /* never sent */
          "{\"event_id\":\"abc-4\"}\n",               /* no write time */
          f);
    fclose(f);
    sd_sink_t *s = open_sink("jsonl", "path", path, "time", "t", NULL);
    sd_stamps_t sent = {0};
    sd_stamps_reserve(&sent, 5);
    for (int i = 0; i < 5; i++) {
        sd_stamps_add(&sent, i);
        if (i != 3) sd_stamps_set_once(&sent, i, 1000);
    }
    sd_observe_t o;
    char err[512];
    cr_assert_eq(sd_observe_sink(s, "abc", 5, 0, &sent, &o, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(sd_observe_latency(&o, 0), 200);
    cr_assert_eq(sd_observe_latency(&o, 1), 20000000);
    cr_assert_eq(sd_observe_latency(&o, 2), 0);
    cr_assert_eq(sd_observe_latency(&o, 3), -1);
    cr_assert_eq(sd_observe_latency(&o, 4), -1);
    cr_assert_eq(sd_counts_get(&o.copies, 0), 3u);
    cr_assert_eq(o.timed_rows, 7);
    sd_observe_free(&o);
    sd_stamps_free(&sent);
    sd_sink_close(s);
    free(path);
}

/* A JSON-lines file of more than four blocks is parsed by threads, block
 * by block, and its rows reach the callback in the file's order with the
 * serial reader's ids, labels and times: empty lines and CRLF counted as
 * lines, rows without an id, a line longer than a block, a last line
 * without its newline (a row when whole, none when cut short), and a
 * callback that stops the scan. */
typedef struct {
    int64_t *line;  /* expected line of each row */
    int64_t *num;   /* its id's number, -1 for no id */
    int64_t n, got, stop_after;
    char bad[256];
} big_rows_t;

static int big_collect(void *o, const char *id, size_t idlen, const char *w, size_t wlen, int64_t t) {
    big_rows_t *r = o;
    int64_t k = r->got++;
    if (r->bad[0]) return 1;
    char want[96];
    if (k >= r->n) {
        snprintf(r->bad, sizeof(r->bad), "row %lld past the %lld written", (long long)k, (long long)r->n);
        return 1;
    }
    snprintf(want, sizeof(want), "big.jsonl line %lld", (long long)r->line[k]);
    if (wlen != strlen(want) || memcmp(w, want, wlen)) {
        snprintf(r->bad, sizeof(r->bad), "row %lld: writer %.*s, expected %s", (long long)k, (int)wlen, w, want);
        return 1;
    }
    if (r->num[k] < 0) {
        if (id || t != INT64_MIN) snprintf(r->bad, sizeof(r->bad), "row %lld: an id or time where there is none", (long long)k);
    } else {
        snprintf(want, sizeof(want), "p-%lld", (long long)r->num[k]);
        if (!id || idlen != strlen(want) || memcmp(id, want, idlen) || t != r->num[k])
            snprintf(r->bad, sizeof(r->bad), "row %lld: id %.*s time %lld, expected %s", (long long)k, id ? (int)idlen : 6,
                     id ? id : "(null)", (long long)t, want);
    }
    return r->stop_after && r->got == r->stop_after;
}

Test(sink, jsonl_large_file_is_read_in_parallel_in_order, .timeout = 60) {
    char *path = sd_util_fmt("%s/big.jsonl", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    big_rows_t r = {0};
    int64_t cap = 200000;
    r.line = malloc(sizeof(int64_t) * (size_t)cap);
    r.num = malloc(sizeof(int64_t) * (size_t)cap);
    int64_t line = 0;
    for (int64_t i = 0; i < 150000; i++) {
        line++;
        if (i % 1000 == 999) { fputs("\n", f); continue; }   /* an empty line: no row */
        if (i == 70000) {                                   /* longer than a block */
            fputs("{\"note\":\"", f);
            for (int k = 0; k < 1500000; k++) fputc('a' + k % 26, f);
            fprintf(f, "\",\"event_id\":\"p-%lld\",\"event_time\":%lld}\n", (long long)i, (long long)i);
        } else if (i % 5000 == 17) {
            fputs("not json at all\n", f);
            r.line[r.n] = line, r.num[r.n++] = -1;
            continue;
        } else {
            fprintf(f, "{\"event_id\":\"p-%lld\",\"event_time\":%lld,\"pad\":\"%0*d\"}%s\n", (long long)i, (long long)i,
                    (int)(i % 40), 0, i % 777 == 5 ? "\r" : "");
        }
        r.line[r.n] = line, r.num[r.n++] = i;
    }
    fputs("{\"event_id\":\"p-150000\",\"event_time\":150000}", f); /* whole, without its newline */
    r.line[r.n] = ++line, r.num[r.n++] = 150000;
    fclose(f);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_gt(st.st_size, 6 << 20, "the file must be over four blocks: %lld bytes", (long long)st.st_size);
    sd_sink_t *s = open_sink("jsonl", "path", path, "time", "event_time", NULL);
    char err[512];
    cr_assert_eq(sd_sink_scan(s, big_collect, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_str_empty(r.bad, "%s", r.bad);
    cr_assert_eq(r.got, r.n, "%lld rows, %lld written", (long long)r.got, (long long)r.n);
    /* a callback that stops: no row after it */
    r.got = 0, r.stop_after = 100000;
    cr_assert_eq(sd_sink_scan(s, big_collect, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_str_empty(r.bad, "%s", r.bad);
    cr_assert_eq(r.got, 100000);
    /* the last line cut short (a writer still writing it) is not a row */
    f = fopen(path, "a");
    fputs("\n{\"event_id\":\"p-1500", f);
    fclose(f);
    r.got = 0, r.stop_after = 0;
    cr_assert_eq(sd_sink_scan(s, big_collect, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_str_empty(r.bad, "%s", r.bad);
    cr_assert_eq(r.got, r.n, "%lld rows, %lld whole ones written", (long long)r.got, (long long)r.n);
    sd_sink_close(s);
    free(r.line);
    free(r.num);
    free(path);
}

/* A large file is read where it is mapped; a writer that cuts it short
 * while it is read makes the pages past its new end fault. The scan fails
 * with the file named (a sink that cannot be read), the harness lives on,
 * and SIGBUS is left as it was. */
typedef struct {
    const char *path;
    int64_t rows;
} cut_ctx_t;

static int cut_on_first_row(void *o, const char *id, size_t idlen, const char *w, size_t wlen, int64_t t) {
    (void)id, (void)idlen, (void)w, (void)wlen, (void)t;
    cut_ctx_t *c = o;
    /* the first block's rows come while at most the next three are read:
     * the fifth block and on are read after the cut */
    if (!c->rows++) cr_assert_eq(truncate(c->path, 2 << 20), 0);
    return 0;
}

Test(sink, jsonl_file_cut_short_while_read_fails_the_scan, .timeout = 60) {
    char *path = sd_util_fmt("%s/cut.jsonl", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 400000; i++) fprintf(f, "{\"event_id\":\"c-%d\",\"pad\":\"%080d\"}\n", i, 0);
    fclose(f);
    struct sigaction before, after;
    sigaction(SIGBUS, NULL, &before);
    sd_sink_t *s = open_sink("jsonl", "path", path, NULL, NULL, NULL);
    cut_ctx_t c = {path, 0};
    char err[512] = "";
    cr_assert_eq(sd_sink_scan(s, cut_on_first_row, &c, err, sizeof(err)), SD_ERR_SINK, "%s", err);
    cr_assert(strstr(err, "cut.jsonl") && strstr(err, "cut short while it was read"), "got %s", err);
    cr_assert_lt(c.rows, 400000, "%lld rows", (long long)c.rows);
    sigaction(SIGBUS, NULL, &after);
    cr_assert(after.sa_handler == before.sa_handler, "SIGBUS not restored: %p, before %p", (void *)after.sa_handler,
              (void *)before.sa_handler);
    /* the file as it is now reads whole */
    c.rows = 1; /* no second cut */
    cr_assert_eq(sd_sink_scan(s, cut_on_first_row, &c, err, sizeof(err)), SD_OK, "%s", err);
    sd_sink_close(s);
    free(path);
}

/* W-05: valid JSON with a number too wide for simdjson and jansson (past
 * 2^64, or past a double) has one answer whichever path reads the row: a
 * short ASCII row (the fast path), a long one or one with non-ASCII text
 * (simdjson), and a command sink's line (jansson tells an object) */
Test(sink, numbers_too_wide_for_the_parsers_read_the_same_on_every_path) {
    char pad[1500];
    memset(pad, 'p', sizeof(pad) - 1);
    pad[sizeof(pad) - 1] = 0;
    char *rows[4];
    rows[0] = sd_util_fmt("{\"event_id\":\"w-1\",\"n\":31111111111111111111}");
    rows[1] = sd_util_fmt("{\"event_id\":\"w-2\",\"n\":31111111111111111111,\"pad\":\"%s\"}", pad);
    rows[2] = sd_util_fmt("{\"event_id\":\"w-3\",\"n\":-31111111111111111111,\"s\":\"h\xc3\xa9llo\",\"f\":1e400}");
    rows[3] = sd_util_fmt("{\"event_id\":31111111111111111111}");
    const char *want[4] = {"w-1", "w-2", "w-3", "31111111111111111111"};
    char out[64];
    sd_buf_t text;
    sd_buf_init(&text);
    for (int i = 0; i < 4; i++) {
        int64_t t;
        int n = sd_sink_json_id_time(rows[i], strlen(rows[i]), "event_id", out, sizeof(out), NULL, &t);
        cr_expect_eq(n, (int)strlen(want[i]), "row %d: %d", i, n);
        if (n >= 0) cr_expect_str_eq(out, want[i]);
        sd_buf_printf(&text, "%s\n", rows[i]);
    }
    rows_t r = {0};
    char err[512];
    cr_expect_eq(sd_sink_lines_scan(text.data, text.len, "command", "event_id", NULL, NULL, collect, &r, err, sizeof(err)), SD_OK,
                 "%s", err);
    cr_expect_eq(r.n, 4);
    for (int i = 0; i < r.n; i++) cr_expect_str_eq(r.ids[i], want[i]);
    /* a string holding U+0000 is no id, but the row is still an object */
    const char *nul = "{\"event_id\":\"a\\u0000b\"}\n";
    memset(&r, 0, sizeof(r));
    cr_expect_eq(sd_sink_lines_scan(nul, strlen(nul), "command", "event_id", NULL, NULL, collect, &r, err, sizeof(err)), SD_OK,
                 "%s", err);
    cr_expect_eq(r.n, 1);
    cr_expect_str_eq(r.ids[0], "(null)");
    sd_buf_free(&text);
    for (int i = 0; i < 4; i++) free(rows[i]);
}

/* a command's rows counted while the run goes (await sink) and read at the
 * end agree, whatever blanks surround them */
Test(sink, command_rows_with_blanks_count_as_they_scan) {
    const char *text = "  {\"id\":\"a-1\"}\n\t{\"id\":\"a-2\"}  \r\n   \n{\"id\":\"a-3\"}\n";
    int64_t rows = -1;
    char err[512];
    cr_assert_eq(sd_sink_lines_count(text, strlen(text), "command", &rows, err, sizeof(err)), SD_OK, "%s", err);
    rows_t r = {0};
    cr_assert_eq(sd_sink_lines_scan(text, strlen(text), "command", "id", NULL, NULL, collect, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_expect_eq(rows, 3);
    cr_expect_eq(r.n, 3);
    cr_expect_str_eq(r.ids[1], "a-2");
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* A Flink FileSink's folder, made by hand as a killed job leaves it:
 * finished part files in a bucket and in the base folder, and hidden
 * in-progress (or pending) part files that hold a row already committed
 * (the interval the restart replays) and a row not yet committed. A reader
 * that lists every file counts both; flink-files reads finished files
 * only and names the others in its notes. */
Test(sink, flink_files_reads_finished_part_files_only) {
    char *bucket = sd_util_fmt("%s/2026-12-04--20", dir);
    cr_assert_eq(mkdir(bucket, 0755), 0);
    char *p;
    write_file(p = sd_util_fmt("%s/part-7f3a-0", bucket), "{\"event_id\":\"e-1\"}\n{\"event_id\":\"e-2\"}\n"), free(p);
    write_file(p = sd_util_fmt("%s/part-7f3a-1", bucket), "{\"event_id\":\"e-3\"}\n"), free(p);
    write_file(p = sd_util_fmt("%s/part-9c1d-0", dir), "{\"event_id\":\"e-4\"}\n"), free(p);
    write_file(p = sd_util_fmt("%s/.part-7f3a-2.inprogress.0b9e", bucket), "{\"event_id\":\"e-3\"}\n{\"event_id\":\"e-5\"}\n"), free(p);
    write_file(p = sd_util_fmt("%s/.part-9c1d-1.inprogress.77aa", dir), "{\"event_id\":\"e-6\"}\n"), free(p);
    char err[512];
    /* every file, in-progress ones too: 7 rows, e-3 twice, e-5 and e-6 not yet output */
    char *all = sd_util_fmt("%s/*/.part*", dir), *all2 = sd_util_fmt("%s/.part*", dir);
    sd_sink_t *naive = open_sink("jsonl", "path", all, NULL, NULL, NULL), *naive2 = open_sink("jsonl", "path", all2, NULL, NULL, NULL);
    rows_t wrong = {0};
    cr_assert_eq(sd_sink_scan(naive, collect, &wrong, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(sd_sink_scan(naive2, collect, &wrong, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(wrong.n, 3, "the in-progress files alone hold 3 rows");
    sd_sink_close(naive);
    sd_sink_close(naive2);
    sd_sink_t *s = open_sink("flink-files", "path", dir, NULL, NULL, NULL);
    int64_t rows = -1;
    cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(rows, 4, "finished files only, got %lld", (long long)rows);
    rows_t r = {0};
    cr_assert_eq(sd_sink_scan(s, collect, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(r.n, 4);
    for (int i = 0; i < r.n; i++) {
        cr_assert(strcmp(r.ids[i], "e-5") && strcmp(r.ids[i], "e-6"), "row %s of an in-progress file read", r.ids[i]);
        cr_assert_null(strstr(r.writers[i], "inprogress"), "%s", r.writers[i]);
    }
    char *notes = sd_sink_notes(s);
    cr_assert_not_null(notes);
    cr_assert(strstr(notes, "2 in-progress or pending part files"), "%s", notes);
    cr_assert_eq(sd_flink_files_in_progress(dir), 2);
    free(notes);
    sd_sink_close(s);
    /* an empty folder: no rows yet while waiting, an error when judged */
    char *empty = sd_util_fmt("%s/none", dir);
    cr_assert_eq(mkdir(empty, 0755), 0);
    s = open_sink("flink-files", "path", empty, NULL, NULL, NULL);
    cr_assert_eq(sd_sink_count(s, 1, &rows, err, sizeof(err)), SD_OK);
    cr_assert_eq(rows, 0);
    cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_ERR_SINK);
    sd_sink_close(s);
    free(empty);
    free(all);
    free(all2);
    free(bucket);
}

/* A write time past what a latency holds (2^32 - 1 ms after the run's
 * start and more) is held to the cap, less the send time: never wrapped. */
Test(sink, latency_caps_a_write_time_beyond_its_range) {
    char *path = sd_util_fmt("%s/far.jsonl", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"event_id\":\"abc-0\",\"t\":%lld}\n{\"event_id\":\"abc-1\",\"t\":%lld}\n", (long long)UINT32_MAX,
            (long long)UINT32_MAX + 1);
    fclose(f);
    sd_sink_t *s = open_sink("jsonl", "path", path, "time", "t", NULL);
    sd_stamps_t sent = {0};
    sd_stamps_reserve(&sent, 2);
    for (int i = 0; i < 2; i++) {
        sd_stamps_add(&sent, i);
        sd_stamps_set_once(&sent, i, 5);
    }
    sd_observe_t o;
    char err[512];
    cr_assert_eq(sd_observe_sink(s, "abc", 2, 0, &sent, &o, err, sizeof(err)), SD_OK, "%s", err);
    cr_expect_eq(sd_observe_latency(&o, 0), (int64_t)UINT32_MAX - 1 - 5, "written at the cap: the cap less the send time");
    cr_expect_eq(sd_observe_latency(&o, 1), (int64_t)UINT32_MAX - 1 - 5);
    sd_observe_free(&o);
    sd_stamps_free(&sent);
    sd_sink_close(s);
    free(path);
}

Test(sink, writers_are_found_for_every_wanted_id_in_sink_order) {
    char *db = sd_util_fmt("%s/w.db", dir);
    sqlite3 *h;
    sqlite3_open(db, &h);
    sqlite3_exec(h, "CREATE TABLE t(id TEXT, w TEXT);"
                    "INSERT INTO t VALUES('a-0','b0'),('a-1','b1'),('a-2','b2'),('a-3','b3'),('a-4','b4'),('a-5','b5'),"
                    "('a-7','b7'),('a-8','b8'),('a-9','b9'),('a-4','b4 again'),('x-1','other tag')",
                 NULL, NULL, NULL);
    sqlite3_close(h);
    sd_sink_t *s = open_sink("sqlite", "db", db, "query", "SELECT id, w FROM t ORDER BY rowid", NULL);
    const int64_t want[] = {0, 1, 4, 6, 8, 9}; /* sorted; 6 is in no row */
    char *out[6];
    char err[512];
    cr_assert_eq(sd_observe_writers(s, "a", want, 6, out, NULL, NULL, err, sizeof(err)), SD_OK, "%s", err);
    const char *expect[6] = {"b0", "b1", "b4; b4 again", NULL, "b8", "b9"};
    for (int i = 0; i < 6; i++) {
        if (expect[i]) cr_expect(out[i] && !strcmp(out[i], expect[i]), "a-%lld: %s", (long long)want[i], out[i] ? out[i] : "(none)");
        else cr_expect(!out[i] || !*out[i], "a-6 has no writer: %s", out[i]);
        free(out[i]);
    }
    sd_sink_close(s);
    free(db);
}

/* A Spark file sink in Avro (`.format("avro")`): part files are object
 * container files, snappy-compressed by Spark's default; the reader lists
 * them by the sink's log as for JSON and reads each record as a row. A
 * part file the log does not list is not read; one that is not Avro is an
 * error naming it. */
static void write_ocf(const char *path, const char *codec, int from, int to) {
    avro_schema_t schema;
    const char *text = "{\"type\":\"record\",\"name\":\"topLevelRecord\",\"fields\":[{\"name\":\"event_id\",\"type\":[\"string\",\"null\"]},"
                       "{\"name\":\"weight_g\",\"type\":[\"long\",\"null\"]}]}";
    cr_assert_eq(avro_schema_from_json_length(text, strlen(text), &schema), 0);
    avro_file_writer_t w;
    cr_assert_eq(avro_file_writer_create_with_codec(path, schema, &w, codec, 0), 0, "%s", avro_strerror());
    avro_value_iface_t *iface = avro_generic_class_from_schema(schema);
    avro_value_t v, f, b;
    avro_generic_value_new(iface, &v);
    for (int i = from; i < to; i++) {
        char id[32];
        snprintf(id, sizeof(id), "ocf-%d", i);
        avro_value_get_by_name(&v, "event_id", &f, NULL);
        avro_value_set_branch(&f, 0, &b);
        avro_value_set_string(&b, id);
        avro_value_get_by_name(&v, "weight_g", &f, NULL);
        avro_value_set_branch(&f, 0, &b);
        avro_value_set_long(&b, 100 + i);
        cr_assert_eq(avro_file_writer_append_value(w, &v), 0);
    }
    avro_file_writer_close(w);
    avro_value_decref(&v);
    avro_value_iface_decref(iface);
    avro_schema_decref(schema);
}

Test(sink, spark_files_in_avro_are_read_record_by_record) {
    char *out = sd_util_fmt("%s/sparkavro", dir), *meta = sd_util_fmt("%s/sparkavro/_spark_metadata", dir);
    cr_assert_eq(sd_util_mkdirs(meta, NULL, 0), SD_OK);
    char *p0 = sd_util_fmt("%s/part-00000-a.avro", out), *p1 = sd_util_fmt("%s/part-00001-b.avro", out);
    char *orphan = sd_util_fmt("%s/part-00002-c.avro", out);
    write_ocf(p0, "snappy", 0, 3);
    write_ocf(p1, "deflate", 3, 5);
    write_ocf(orphan, "null", 5, 9); /* a killed batch's file: not in the log */
    char *log0 = sd_util_fmt("%s/0", meta), *entry = sd_util_fmt("v1\n{\"path\":\"file://%s\",\"size\":1,\"action\":\"add\"}\n"
                                                               "{\"path\":\"file://%s\",\"size\":1,\"action\":\"add\"}\n", p0, p1);
    FILE *w = fopen(log0, "w");
    fputs(entry, w);
    fclose(w);
    sd_sink_t *s = open_sink("spark-files", "path", out, "format", "avro", NULL);
    char err[512];
    int64_t n = -1;
    cr_assert_eq(sd_sink_count(s, 0, &n, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(n, 5);
    rows_t r = {0};
    cr_assert_eq(sd_sink_scan(s, collect, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(r.n, 5);
    for (int i = 0; i < 5; i++) {
        char want[32];
        snprintf(want, sizeof(want), "ocf-%d", i);
        cr_assert_str_eq(r.ids[i], want);
        cr_assert(strstr(r.writers[i], "batch 0"), "%s", r.writers[i]);
    }
    sd_sink_close(s);
    /* a listed file that is a FIFO: refused, never waited on */
    unlink(p1);
    cr_assert_eq(mkfifo(p1, 0600), 0);
    s = open_sink("spark-files", "path", out, "format", "avro", NULL);
    memset(&r, 0, sizeof(r));
    cr_assert_eq(sd_sink_scan(s, collect, &r, err, sizeof(err)), SD_ERR_SINK);
    cr_assert(strstr(err, "part-00001-b.avro"), "%s", err);
    sd_sink_close(s);
    unlink(p1);
    /* a listed file that is not Avro: named, never read as zero rows */
    w = fopen(p1, "w");
    fputs("{\"event_id\":\"not avro\"}\n", w);
    fclose(w);
    s = open_sink("spark-files", "path", out, "format", "avro", NULL);
    memset(&r, 0, sizeof(r));
    cr_assert_eq(sd_sink_scan(s, collect, &r, err, sizeof(err)), SD_ERR_SINK);
    cr_assert(strstr(err, "part-00001-b.avro") && strstr(err, "Avro object container file"), "%s", err);
    sd_sink_close(s);
    free(out), free(meta), free(p0), free(p1), free(orphan), free(log0), free(entry);
}

/* The watermarks of a partition whose broker went away after its leader
 * was known: an error within the timeout, never a wait without end (the
 * way librdkafka 2.0's rd_kafka_query_watermark_offsets waits). */
Test(sink, watermarks_keep_their_timeout_when_the_broker_is_gone, .timeout = 60) {
    sd_broker_t *b;
    char err[512];
    cr_assert_eq(sd_broker_embedded(1, &b, err, sizeof(err)), SD_OK, "%s", err);
    int got = 0;
    cr_assert_eq(sd_broker_create_topic(b, "wm", 1, 1, &got, err, sizeof(err)), SD_OK, "%s", err);
    int64_t lo = -5, hi = -5;
    cr_assert_eq(sd_broker_watermarks(b, "wm", 0, &lo, &hi, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(lo, 0);
    cr_assert_eq(hi, 0);
    rd_kafka_mock_broker_set_down(sd_broker_mock(b), 1);
    setenv("STREAMDRILL_TIMEOUT_MULTIPLIER", "0.2", 1); /* its 10 s timeout as 2 s */
    int64_t t0 = sd_util_mono_ms();
    cr_assert_neq(sd_broker_watermarks(b, "wm", 0, &lo, &hi, err, sizeof(err)), SD_OK);
    int64_t took = sd_util_mono_ms() - t0;
    unsetenv("STREAMDRILL_TIMEOUT_MULTIPLIER");
    cr_assert(took < 5000, "the watermarks took %lld ms with the broker gone", (long long)took);
    cr_log_info("watermarks with the broker gone: an error after %lld ms", (long long)took);
    cr_assert(strstr(err, "watermarks of wm [0]"), "%s", err);
    sd_broker_close(b);
    /* the cluster is destroyed by a thread of its own: done before the test's end */
    cr_assert_eq(sd_broker_reaped_wait(10000), 0);
}

/* A sink opened with any parameters (key, value pairs, NULL-ended): its
 * answer, and the error it gives. */
static sd_err_t open_sink_kv(const char *kind, const char *const *kv, const sd_kvlist_t *props, const char *brokers, sd_sink_t **s,
                             char *err, size_t errlen) {
    sd_sink_decl_t d = {.name = "target", .kind = (char *)kind};
    for (int i = 0; kv[i]; i += 2) sd_kvlist_add(&d.params, kv[i], kv[i + 1]);
    sd_kvlist_t vars = {0};
    sd_sink_ctx_t ctx = {.brokers = brokers, .id_field = "event_id", .props = props};
    sd_err_t e = sd_sink_open(&d, &vars, &ctx, s, err, errlen);
    sd_kvlist_free(&d.params);
    return e;
}

/* A command sink's options: max-output= of no byte is refused as it is
 * read; and a command's rows read as named columns: every row, the
 * writer field standing in for sd_writer, and a line that is no JSON
 * object an error naming it. */
Test(sink, command_options_and_columns) {
    sd_sink_t *s = NULL;
    char err[512] = "";
    const char *zero[] = {"max-output", "0", "arg", "true", NULL};
    cr_assert_neq(open_sink_kv("command", zero, NULL, NULL, &s, err, sizeof(err)), SD_OK, "max-output=0 is refused");
    cr_expect(strstr(err, "max-output=0: expected a number of bytes"), "%s", err);
    const char *one[] = {"max-output", "1", "arg", "true", NULL};
    cr_assert_eq(open_sink_kv("command", one, NULL, NULL, &s, err, sizeof(err)), SD_OK, "%s", err);
    sd_sink_close(s);
    const char *text = "{\"location\":\"AMS-01\",\"count\":3,\"w\":\"inc 1\"}\n"
                       "  {\"location\":\"HUB-02\",\"count\":4}\r\n"
                       "\n{\"location\":\"HUB-03\",\"count\":5,\"w\":\"inc 2\"}\n";
    const char *names[] = {"location", "count", "?sd_writer"};
    cols_t c = {0};
    cr_assert_eq(sd_sink_lines_scan_cols(text, strlen(text), "command", "w", names, 3, collect_cols, &c, err, sizeof(err)), SD_OK, "%s",
                 err);
    cr_assert_eq(c.n, 3, "every row, got %d", c.n);
    cr_expect_str_eq(c.v[0][0], "AMS-01");
    cr_expect_str_eq(c.v[0][2], "inc 1", "the writer field is the row's sd_writer");
    cr_expect_str_eq(c.v[1][1], "4");
    cr_expect_str_eq(c.v[1][2], "(null)");
    cr_expect_str_eq(c.v[2][0], "HUB-03");
    cr_expect_str_eq(c.v[2][2], "inc 2");
    const char *bad = "{\"location\":\"AMS-01\",\"count\":3}\n[1,2]\n{\"location\":\"HUB-03\",\"count\":5}\n";
    memset(&c, 0, sizeof(c));
    cr_assert_eq(sd_sink_lines_scan_cols(bad, strlen(bad), "command", "w", names, 3, collect_cols, &c, err, sizeof(err)), SD_ERR_SINK);
    cr_expect(strstr(err, "command, line 2: expected a JSON object, found \"[1,2]\""), "%s", err);
    cr_expect_eq(c.n, 1);
}

/* A Delta table of more files than its path table first holds (it grows
 * past 32), one of them with a percent-encoded name: the count from every
 * add's numRecords, and the files given to the Parquet helper (here a
 * helper that prints what it is given) each once, by its decoded path;
 * the error for a log cleaned up behind a checkpoint in full. */
Test(sink, delta_table_of_many_files_reads_each_file_once) {
    char *table = sd_util_fmt("%s/many", dir), *log = sd_util_fmt("%s/many/_delta_log", dir);
    cr_assert_eq(sd_util_mkdirs(log, NULL, 0), SD_OK);
    sd_buf_t c0;
    sd_buf_init(&c0);
    sd_buf_puts(&c0, "{\"commitInfo\":{\"timestamp\":1000,\"operation\":\"WRITE\"}}\n");
    int64_t want = 0;
    for (int i = 0; i < 40; i++) {
        sd_buf_printf(&c0, "{\"add\":{\"path\":\"%s%d.parquet\",\"size\":1,\"stats\":\"{\\\"numRecords\\\":%d}\"}}\n",
                      i == 7 ? "part%20seven%2F" : "part-", i, i + 1);
        want += i + 1;
    }
    write_commit(log, 0, c0.data);
    sd_buf_free(&c0);
    write_commit(log, 1, "{\"remove\":{\"path\":\"part-3.parquet\"}}\n{\"commitInfo\":{\"timestamp\":2000,\"operation\":\"DELETE\"}}\n");
    want -= 4;
    char *helper = sd_util_fmt("%s/helper.sh", dir);
    write_file(helper, "exec cat\n");
    cr_assert_eq(setenv("STREAMDRILL_PARQUET_HELPER", helper, 1), 0);
    const char *kv[] = {"path", table, "id", "path", "python", "/bin/sh", NULL};
    sd_sink_t *s;
    char err[512];
    cr_assert_eq(open_sink_kv("delta", kv, NULL, NULL, &s, err, sizeof(err)), SD_OK, "%s", err);
    int64_t rows = -1;
    cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_OK, "%s", err);
    cr_expect_eq(rows, want, "rows %lld, expected %lld", (long long)rows, (long long)want);
    rows_t r = {0};
    cr_assert_eq(sd_sink_scan(s, collect, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(r.n, 39, "each file remaining once, got %d", r.n);
    int seen[40] = {0};
    for (int i = 0; i < r.n; i++) {
        int k = -1;
        char *p7 = sd_util_fmt("%s/part seven/7.parquet", table);
        if (!strcmp(r.ids[i], p7)) k = 7;
        free(p7);
        size_t tl = strlen(table);
        if (k < 0 && !strncmp(r.ids[i], table, tl) && !strncmp(r.ids[i] + tl, "/part-", 6)) k = atoi(r.ids[i] + tl + 6);
        cr_assert(k >= 0 && k < 40 && k != 3, "a path not in the table: %s", r.ids[i]);
        cr_assert_eq(seen[k]++, 0, "%s twice", r.ids[i]);
    }
    cr_expect_eq(seen[7], 1, "the percent-encoded path is read back decoded");
    sd_sink_close(s);
    free(helper);
    free(table); free(log);
}

/* A JSON-lines file under the pool's size is read in blocks of 1 MiB: a
 * line that spans two blocks is carried to the next read whole, for the
 * rows and for the named columns. */
static int seq_collect(void *o, const char *id, size_t idlen, const char *w, size_t wlen, int64_t t) {
    (void)w, (void)wlen;
    big_rows_t *r = o;
    int64_t k = r->got++;
    char want[32];
    snprintf(want, sizeof(want), "s-%lld", (long long)k);
    if (!r->bad[0] && (!id || idlen != strlen(want) || memcmp(id, want, idlen) || t != k))
        snprintf(r->bad, sizeof(r->bad), "row %lld: id %.*s time %lld", (long long)k, id ? (int)idlen : 6, id ? id : "(null)", (long long)t);
    return 0;
}

static int seq_cols(void *o, const char *const *vals, const size_t *lens) {
    big_rows_t *r = o;
    int64_t k = r->got++;
    char want[32];
    snprintf(want, sizeof(want), "s-%lld", (long long)k);
    if (!r->bad[0] && (!vals[0] || lens[0] != strlen(want) || memcmp(vals[0], want, lens[0])))
        snprintf(r->bad, sizeof(r->bad), "row %lld: %.*s", (long long)k, vals[0] ? (int)lens[0] : 6, vals[0] ? vals[0] : "(null)");
    return 0;
}

Test(sink, jsonl_line_across_a_block_edge_is_read_whole) {
    char *path = sd_util_fmt("%s/mid.jsonl", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    int64_t n = 0;
    long at = 0;
    while (at < (3L << 20)) { /* past three blocks, under the pool's four */
        fprintf(f, "{\"event_id\":\"s-%lld\",\"event_time\":%lld,\"pad\":\"%0*d\"}\n", (long long)n, (long long)n, (int)(n % 53), 0);
        n++;
        at = ftell(f);
    }
    fclose(f);
    sd_sink_t *s = open_sink("jsonl", "path", path, "time", "event_time", NULL);
    big_rows_t r = {0};
    char err[512];
    cr_assert_eq(sd_sink_scan(s, seq_collect, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_str_empty(r.bad, "%s", r.bad);
    cr_assert_eq(r.got, n, "%lld rows of %lld", (long long)r.got, (long long)n);
    const char *names[] = {"event_id"};
    memset(&r, 0, sizeof(r));
    cr_assert_eq(sd_sink_scan_cols(s, names, 1, seq_cols, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_str_empty(r.bad, "%s", r.bad);
    cr_assert_eq(r.got, n, "%lld rows of %lld", (long long)r.got, (long long)n);
    sd_sink_close(s);
    free(path);
}

/* A Kafka sink on the embedded cluster: the -X properties reach its
 * clients (a property librdkafka does not know fails the open); a writer
 * label (header sd-writer) is looked for in the first thousand records
 * only, so a pipeline that starts labelling later keeps positions; a
 * header= id a record lacks is no id; and the records read as named
 * columns. */
typedef struct {
    int64_t n, no_id;
    char last_writer[64];
} kafka_rows_t;

static int kafka_collect(void *o, const char *id, size_t idlen, const char *w, size_t wlen, int64_t t) {
    (void)idlen, (void)t;
    kafka_rows_t *r = o;
    r->n++;
    r->no_id += !id;
    snprintf(r->last_writer, sizeof(r->last_writer), "%.*s", w ? (int)wlen : 0, w ? w : "");
    return 0;
}

static int kafka_cols(void *o, const char *const *vals, const size_t *lens) {
    (void)lens;
    kafka_rows_t *r = o;
    r->n++;
    r->no_id += !vals[0];
    return 0;
}

Test(sink, kafka_properties_late_labels_and_missing_header_ids, .timeout = 60) {
    sd_sink_t *s = NULL;
    char err[512] = "";
    sd_kvlist_t props = {0};
    sd_kvlist_add(&props, "no.such.property", "1");
    const char *kv[] = {"topic", "lab", NULL};
    cr_assert_neq(open_sink_kv("kafka", kv, &props, "127.0.0.1:1", &s, err, sizeof(err)), SD_OK, "an unknown -X property fails the open");
    cr_expect(strstr(err, "no.such.property"), "%s", err);
    sd_kvlist_free(&props);
    sd_broker_t *b;
    cr_assert_eq(sd_broker_embedded(1, &b, err, sizeof(err)), SD_OK, "%s", err);
    int got = 0;
    cr_assert_eq(sd_broker_create_topic(b, "lab", 1, 1, &got, err, sizeof(err)), SD_OK, "%s", err);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", sd_broker_bootstrap(b), NULL, 0);
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    cr_assert_not_null(p, "%s", err);
    for (int i = 0; i < 1001; i++) {
        char v[64];
        snprintf(v, sizeof(v), "{\"event_id\":\"l-%d\"}", i);
        cr_assert_eq(rd_kafka_producev(p, RD_KAFKA_V_TOPIC("lab"), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_VALUE(v, strlen(v)),
                                       RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END), 0);
    }
    cr_assert_eq(rd_kafka_flush(p, 10000), 0);
    char v[] = "{\"event_id\":\"l-1001\"}";
    cr_assert_eq(rd_kafka_producev(p, RD_KAFKA_V_TOPIC("lab"), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_VALUE(v, strlen(v)),
                                   RD_KAFKA_V_HEADER("sd-writer", "inc 2", -1), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END), 0);
    cr_assert_eq(rd_kafka_flush(p, 10000), 0);
    rd_kafka_destroy(p);
    s = open_sink("kafka", "topic", "lab", NULL, NULL, sd_broker_bootstrap(b));
    kafka_rows_t r = {0};
    cr_assert_eq(sd_sink_scan(s, kafka_collect, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(r.n, 1002);
    cr_expect_eq(r.no_id, 0);
    cr_expect_str_eq(r.last_writer, "p0@1001", "a label after the first thousand unlabelled records is not looked for");
    const char *names[] = {"event_id"};
    memset(&r, 0, sizeof(r));
    cr_assert_eq(sd_sink_scan_cols(s, names, 1, kafka_cols, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_expect_eq(r.n, 1002);
    cr_expect_eq(r.no_id, 0);
    sd_sink_close(s);
    s = open_sink("kafka", "topic", "lab", "header", "sd-id", sd_broker_bootstrap(b));
    memset(&r, 0, sizeof(r));
    cr_assert_eq(sd_sink_scan(s, kafka_collect, &r, err, sizeof(err)), SD_OK, "%s", err);
    cr_expect_eq(r.n, 1002);
    cr_expect_eq(r.no_id, 1002, "a record without the id header has no id: %lld of %lld", (long long)r.no_id, (long long)r.n);
    sd_sink_close(s);
    sd_broker_close(b);
    cr_assert_eq(sd_broker_reaped_wait(10000), 0);
}

/* A Kafka sink's count that has not caught up within its half second (a
 * large topic's first count after a burst) takes the offsets it has not
 * read yet for records: exact for a topic without gaps, and exact again
 * once it has read them. The half second is cut to a millisecond here
 * (STREAMDRILL_TIMEOUT_MULTIPLIER), the burst far more than one take and
 * under what the embedded cluster keeps before it trims the log (some
 * 130,000 records of this size; a trimmed log is checked first). */
static void burst_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk, (void)opaque;
    if (m->err) (*(int64_t *)m->_private)++;
}

Test(sink, kafka_count_behind_a_burst_takes_the_unread_offsets, .timeout = 60) {
    int64_t failed = 0;
    sd_broker_t *b;
    char err[512];
    cr_assert_eq(sd_broker_embedded(1, &b, err, sizeof(err)), SD_OK, "%s", err);
    int got = 0;
    cr_assert_eq(sd_broker_create_topic(b, "burst", 1, 1, &got, err, sizeof(err)), SD_OK, "%s", err);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", sd_broker_bootstrap(b), NULL, 0);
    rd_kafka_conf_set(conf, "linger.ms", "20", NULL, 0);
    rd_kafka_conf_set_dr_msg_cb(conf, burst_dr);
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    cr_assert_not_null(p, "%s", err);
    sd_sink_t *s = open_sink("kafka", "topic", "burst", NULL, NULL, sd_broker_bootstrap(b));
    int64_t sent = 0, rows = -1;
    for (int round = 0; round < 2; round++) {
        int64_t more = round ? 120000 : 1000;
        for (int64_t i = 0; i < more; i++, sent++) {
            char v[48];
            int n = snprintf(v, sizeof(v), "{\"event_id\":\"b-%lld\"}", (long long)sent);
            while (rd_kafka_producev(p, RD_KAFKA_V_TOPIC("burst"), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_VALUE(v, (size_t)n), RD_KAFKA_V_OPAQUE(&failed),
                                     RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                rd_kafka_poll(p, 10);
        }
        cr_assert_eq(rd_kafka_flush(p, 30000), 0);
        int64_t wlo = -1, whi = -1;
        rd_kafka_query_watermark_offsets(p, "burst", 0, &wlo, &whi, 5000);
        cr_assert(!failed && wlo == 0 && whi == sent, "every record kept: %lld not delivered, offsets %lld to %lld", (long long)failed,
                  (long long)wlo, (long long)whi);
        if (round) cr_assert_eq(setenv("STREAMDRILL_TIMEOUT_MULTIPLIER", "0.002", 1), 0);
        cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_OK, "%s", err);
        unsetenv("STREAMDRILL_TIMEOUT_MULTIPLIER");
        cr_expect_eq(rows, sent, "round %d: %lld rows, %lld written", round, (long long)rows, (long long)sent);
    }
    cr_assert_eq(sd_sink_count(s, 0, &rows, err, sizeof(err)), SD_OK, "%s", err);
    cr_expect_eq(rows, sent, "caught up: %lld rows, %lld written", (long long)rows, (long long)sent);
    rd_kafka_destroy(p);
    sd_sink_close(s);
    sd_broker_close(b);
    cr_assert_eq(sd_broker_reaped_wait(10000), 0);
}
