/* test_ledger.c - run.db: what is written is there, also after a reopen,
 * and a ledger id maps back through the ledger_ids view. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ledger.h"
#include "util.h"

static char dir[64];

static void setup(void) {
    snprintf(dir, sizeof(dir), "/tmp/sd_ledger_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}
static void teardown(void) { sd_util_rmtree(dir, NULL, 0); }

TestSuite(ledger, .init = setup, .fini = teardown);

static int64_t q1(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = -1;
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

Test(ledger, sends_and_acks_survive_a_reopen) {
    char *path = sd_util_fmt("%s/run.db", dir);
    sd_ledger_t *l;
    char err[512];
    cr_assert_eq(sd_ledger_create(path, &l, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(sd_ledger_meta_set(l, "tag", "ab12", err, sizeof(err)), SD_OK);
    for (int i = 0; i < 100; i++) {
        sd_send_t s = {.seq = i, .kind = "valid", .disposition = "target", .event_time_ms = 1000 + i, .key = "k", .step = 1};
        int64_t n;
        cr_assert_eq(sd_ledger_send(l, &s, 5, &n, err, sizeof(err)), SD_OK, "%s", err);
        cr_assert_eq(n, i + 1);
        if (i % 10) cr_assert_eq(sd_ledger_ack(l, n, i % 3, i / 3, 7, NULL, err, sizeof(err)), SD_OK);
        else cr_assert_eq(sd_ledger_ack(l, n, -1, -1, 7, "Local: Message timed out", err, sizeof(err)), SD_OK);
    }
    sd_send_t dup = {.seq = 4, .kind = "duplicate", .disposition = "target", .event_time_ms = INT64_MIN, .detail = "replay"};
    cr_assert_eq(sd_ledger_send(l, &dup, 9, NULL, err, sizeof(err)), SD_OK);
    cr_assert_eq(sd_ledger_commit(l, err, sizeof(err)), SD_OK);
    sd_ledger_close(l);

    cr_assert_eq(sd_ledger_open(path, 1, &l, err, sizeof(err)), SD_OK, "%s", err);
    sqlite3 *db = sd_ledger_db(l);
    cr_assert_eq(q1(db, "SELECT count(*) FROM ledger"), 101);
    cr_assert_eq(q1(db, "SELECT count(*) FROM ledger WHERE error IS NOT NULL"), 10);
    cr_assert_eq(q1(db, "SELECT count(DISTINCT seq) FROM ledger"), 100);
    cr_assert_eq(q1(db, "SELECT count(*) FROM ledger_ids WHERE id='ab12-4'"), 2, "the original and its replay");
    cr_assert_eq(sd_ledger_max_seq(l), 100);
    char *tag = sd_ledger_meta_get(l, "tag");
    cr_assert_str_eq(tag, "ab12");
    free(tag);
    sd_ledger_close(l);
    free(path);
}

Test(ledger, uncommitted_writes_are_committed_on_close) {
    char *path = sd_util_fmt("%s/run.db", dir);
    sd_ledger_t *l;
    cr_assert_eq(sd_ledger_create(path, &l, NULL, 0), SD_OK);
    int64_t fid;
    cr_assert_eq(sd_ledger_fault(l, 3, "kill", "signal=KILL mid-batch", 1, &fid, NULL, 0), SD_OK);
    cr_assert_eq(sd_ledger_fault_landing(l, fid, 7, 1, 4, 20, "inside batch 7", NULL, 0), SD_OK);
    cr_assert_eq(sd_ledger_batch(l, 1, 7, "begin", 100, 20, NULL, NULL, 0), SD_OK);
    cr_assert_eq(sd_ledger_batch(l, 1, 7, "commit", 180, 20, "0:5,1:7", NULL, 0), SD_OK);
    sd_ledger_close(l);
    cr_assert_eq(sd_ledger_open(path, 1, &l, NULL, 0), SD_OK);
    cr_assert_eq(q1(sd_ledger_db(l), "SELECT landed FROM fault WHERE batch=7"), 1);
    cr_assert_eq(q1(sd_ledger_db(l), "SELECT commit_ms - begin_ms FROM batch WHERE id=7"), 80);
    sd_ledger_close(l);
    free(path);
}

static char *s1(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sql);
    char *v = NULL;
    if (sqlite3_step(st) == SQLITE_ROW) v = sd_util_strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
}

/* A missed fault's reason joins its landing once: a reason that repeats
 * the landing and adds the fix replaces it, a reason said twice is kept once. */
Test(ledger, a_missed_faults_landing_says_each_reason_once) {
    char *path = sd_util_fmt("%s/run.db", dir);
    sd_ledger_t *l;
    cr_assert_eq(sd_ledger_create(path, &l, NULL, 0), SD_OK);
    int64_t fid;
    cr_assert_eq(sd_ledger_fault(l, 3, "kill", "signal=KILL mid-batch", 1, &fid, NULL, 0), SD_OK);
    cr_assert_eq(sd_ledger_fault_landing(l, fid, 7, 0, 4, 20, "after the commit of batch 7", NULL, 0), SD_OK);
    cr_assert_eq(sd_ledger_fault_missed(l, 3, "kill", 1, "after the commit of batch 7; to land inside a batch: slower batches", NULL, 0), SD_OK);
    cr_assert_eq(sd_ledger_fault_missed(l, 3, "kill", 1, "the group never committed", NULL, 0), SD_OK);
    cr_assert_eq(sd_ledger_fault_missed(l, 3, "kill", 1, "the group never committed", NULL, 0), SD_OK);
    char *landing = s1(sd_ledger_db(l), "SELECT landing FROM fault WHERE step=3");
    cr_assert_str_eq(landing, "after the commit of batch 7; to land inside a batch: slower batches; the group never committed");
    cr_assert_eq(q1(sd_ledger_db(l), "SELECT landed FROM fault WHERE step=3"), 0);
    free(landing);
    sd_ledger_close(l);
    free(path);
}

Test(ledger, create_refuses_an_existing_file_and_open_a_missing_one) {
    char *path = sd_util_fmt("%s/run.db", dir);
    sd_ledger_t *l;
    char err[512];
    cr_assert_eq(sd_ledger_open(path, 1, &l, err, sizeof(err)), SD_ERR_IO);
    cr_assert(strstr(err, "no such file"), "got %s", err);
    cr_assert_eq(sd_ledger_create(path, &l, err, sizeof(err)), SD_OK);
    sd_ledger_close(l);
    cr_assert_eq(sd_ledger_create(path, &l, err, sizeof(err)), SD_ERR_IO);
    cr_assert(strstr(err, "exists"), "got %s", err);
    free(path);
}

/* Every field of every message and delivery report comes back from its
 * packed form exactly: kinds and steps that change, seqs that go back
 * (replays), times absent or far apart, partitions beyond 64 (they share a
 * slot of the offset table), failed deliveries, the second source. */
static void send_varied(sd_ledger_t *l, int count) {
    static const char *kinds[] = {"valid", "duplicate", "late", "malformed", "out-of-order"};
    static const char *disps[] = {"target", "dropped", "quarantine"};
    char key[64], detail[300];
    for (int i = 0; i < count; i++) {
        snprintf(key, sizeof(key), "k%d", i * 7919 % 1000);
        memset(detail, 'x', (size_t)(i % 290));
        detail[i % 290] = 0;
        sd_send_t s = {.seq = (i % 11 == 5) ? i / 3 : i, .kind = kinds[(i / 7) % 5], .disposition = disps[(i / 13) % 3],
                       .detail = (i % 4) ? NULL : detail, .event_time_ms = (i % 9 == 0) ? INT64_MIN : (i % 2 ? 4102444800000LL : -5) - i,
                       .key = (i % 5) ? key : NULL, .step = i / 100, .side = (i % 17 == 3)};
        int64_t n;
        cr_assert_eq(sd_ledger_send(l, &s, 1000000 + i * (i % 3), &n, NULL, 0), SD_OK);
        if (i % 23 == 0) cr_assert_eq(sd_ledger_ack(l, n, -1, -1, 2000 + i, "Broker: Leader not available", NULL, 0), SD_OK);
        else if (i % 29) cr_assert_eq(sd_ledger_ack(l, n, i % 131, (int64_t)i * 1000003 % 99991, 2000 - i, NULL, NULL, 0), SD_OK);
        if (i % 500 == 499) sd_ledger_submit(l);
    }
}

/* The same rows, in one text, for comparing two ledgers. */
static char *dump(sqlite3 *db) {
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT group_concat(r, '|') FROM (SELECT quote(n)||quote(seq)||quote(kind)||quote(disposition)||"
                                    "quote(detail)||quote(event_time_ms)||quote(msg_key)||quote(step)||quote(queued_ms)||quote(partition)||"
                                    "quote(offset)||quote(acked_ms)||quote(error) AS r FROM ledger UNION ALL SELECT quote(n)||quote(seq)||"
                                    "quote(event_time_ms)||quote(msg_key)||quote(step)||quote(queued_ms)||quote(partition)||quote(offset)||"
                                    "quote(kind)||quote(disposition)||quote(detail) FROM side_ledger ORDER BY 1)",
                                    -1, &st, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    char *v = sd_util_strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
}

Test(ledger, packed_messages_come_back_exactly) {
    char *path = sd_util_fmt("%s/run.db", dir);
    sd_ledger_t *l;
    cr_assert_eq(sd_ledger_create(path, &l, NULL, 0), SD_OK);
    send_varied(l, 3000);
    sd_ledger_close(l);
    cr_assert_eq(sd_ledger_open(path, 1, &l, NULL, 0), SD_OK);
    sqlite3 *db = sd_ledger_db(l);
    cr_assert_eq(q1(db, "SELECT count(*) FROM pack"), 0, "a ledger closed in order holds no packs");
    cr_assert_eq(q1(db, "SELECT count(*) FROM sent") + q1(db, "SELECT count(*) FROM side"), 3000);
    cr_assert_eq(q1(db, "SELECT count(*) FROM ack WHERE error IS NOT NULL"), 131);
    cr_assert_eq(q1(db, "SELECT count(*) FROM ledger WHERE n=1931 AND seq=643 AND kind='valid' AND disposition='dropped'"
                        " AND event_time_ms=-1935 AND queued_ms=1001930 AND partition=96 AND offset=79499"
                        " AND acked_ms=70 AND msg_key IS NULL AND step=19 AND detail IS NULL AND error IS NULL"),
                 1, "one message, field by field");
    cr_assert_eq(q1(db, "SELECT count(*) FROM side WHERE seq=20 AND kind='late' AND disposition='dropped'"
                        " AND detail='xxxxxxxxxxxxxxxxxxxx'"), 1, "a delivery keeps its kind, disposition and detail");
    char *packed = dump(db);
    sd_ledger_close(l);

    /* the same messages written row by row, as before packs: the same rows */
    char *path2 = sd_util_fmt("%s/rows.db", dir);
    cr_assert_eq(sd_ledger_create(path2, &l, NULL, 0), SD_OK);
    sqlite3_exec(sd_ledger_db(l), "DROP TABLE pack", NULL, NULL, NULL); /* an older run.db: no pack table */
    sd_ledger_close(l);
    cr_assert_eq(sd_ledger_open(path2, 0, &l, NULL, 0), SD_OK);
    send_varied(l, 3000);
    sd_ledger_close(l);
    cr_assert_eq(sd_ledger_open(path2, 1, &l, NULL, 0), SD_OK);
    char *rows = dump(sd_ledger_db(l));
    sd_ledger_close(l);
    cr_assert_str_eq(packed, rows);
    free(packed);
    free(rows);
    free(path);
    free(path2);
}

/* A run killed while its messages are packed: the report's loader writes
 * them out as rows, all of them; a damaged pack is named, never guessed. */
Test(ledger, a_killed_runs_packs_are_unpacked_for_its_report) {
    char *path = sd_util_fmt("%s/run.db", dir);
    pid_t pid = fork();
    if (pid == 0) {
        sd_ledger_t *l;
        if (sd_ledger_create(path, &l, NULL, 0)) _exit(1);
        send_varied(l, 5000);
        _exit(sd_ledger_commit(l, NULL, 0) ? 1 : 0); /* no close: as after a SIGKILL */
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    sd_ledger_t *l;
    cr_assert_eq(sd_ledger_open(path, 1, &l, NULL, 0), SD_OK);
    int64_t packs = q1(sd_ledger_db(l), "SELECT count(*) FROM pack"),
            packed = q1(sd_ledger_db(l), "SELECT coalesce(sum(sends),0) FROM pack"),
            rows = q1(sd_ledger_db(l), "SELECT (SELECT count(*) FROM sent) + (SELECT count(*) FROM side)");
    sd_ledger_close(l);
    cr_assert_gt(packs, 0, "the child had no time to unpack");
    cr_assert_eq(packed + rows, 5000);
    char err[512];
    cr_assert_eq(sd_ledger_unpack_file(path, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(sd_ledger_open(path, 1, &l, NULL, 0), SD_OK);
    cr_assert_eq(q1(sd_ledger_db(l), "SELECT count(*) FROM pack"), 0);
    cr_assert_eq(q1(sd_ledger_db(l), "SELECT (SELECT count(*) FROM sent) + (SELECT count(*) FROM side)"), 5000);
    cr_assert_eq(q1(sd_ledger_db(l), "SELECT count(*) FROM ack"), 5000 - 5000 / 29 - 1 + 5000 / 29 / 23 + 1);
    sd_ledger_close(l);

    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "INSERT INTO pack(id,sends,acks,data) VALUES(77,2,0,x'0202ff')", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    cr_assert_eq(sd_ledger_unpack_file(path, err, sizeof(err)), SD_ERR_IO);
    cr_assert(strstr(err, "pack 77 is damaged"), "got %s", err);
    free(path);
}

/* acked_lost: a partition cut back below an acknowledged offset, and an
 * offset acknowledged twice (written again after a failover) */
typedef struct { int acked[16], lost[16]; } acked_ctx_t;
static void count_acked(void *opaque, int64_t seq, int lost) {
    acked_ctx_t *c = opaque;
    if (seq >= 0 && seq < 16) lost ? c->lost[seq]++ : c->acked[seq]++;
}

Test(ledger, acked_events_kafka_no_longer_holds) {
    char *path = sd_util_fmt("%s/run.db", dir);
    sd_ledger_t *l;
    char err[512];
    cr_assert_eq(sd_ledger_create(path, &l, err, sizeof(err)), SD_OK, "%s", err);
    /* partition 0: seqs 0..4 at offsets 0..4, acked at 100 ms; the
     * partition is cut back to 3 and seqs 5, 6 are written at offsets 3, 4
     * after the failover (acked at 900 ms): seqs 3 and 4 are lost.
     * partition 1: seqs 7, 8 at offsets 0, 1; the end is 1 now: seq 8 lost.
     * seq 9: sent twice (a replay), the first copy lost at offset 2 of
     * partition 1, the second kept at offset 0 of partition 2: not lost.
     * seq 10: never acknowledged (an error): neither. */
    struct { int seq, part; int64_t off, acked_ms; const char *error; } m[] = {
        {0, 0, 0, 100, NULL}, {1, 0, 1, 100, NULL}, {2, 0, 2, 100, NULL}, {3, 0, 3, 100, NULL}, {4, 0, 4, 100, NULL},
        {5, 0, 3, 900, NULL}, {6, 0, 4, 900, NULL}, {7, 1, 0, 100, NULL}, {8, 1, 1, 100, NULL}, {9, 1, 2, 100, NULL},
        {9, 2, 0, 950, NULL}, {10, -1, -1, 999, "Broker: Not enough in-sync replicas"}};
    for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
        sd_send_t s = {.seq = m[i].seq, .kind = "valid", .disposition = "target", .event_time_ms = 1000, .key = "k", .step = 1};
        int64_t n;
        cr_assert_eq(sd_ledger_send(l, &s, 5, &n, err, sizeof(err)), SD_OK, "%s", err);
        cr_assert_eq(sd_ledger_ack(l, n, m[i].part, m[i].off, m[i].acked_ms, m[i].error, err, sizeof(err)), SD_OK, "%s", err);
    }
    cr_assert_eq(sd_ledger_commit(l, err, sizeof(err)), SD_OK);
    int64_t ends[3] = {5, 1, 1};
    acked_ctx_t c = {{0}, {0}};
    sd_ledger_each_acked_lost(l, 0, ends, 3, count_acked, &c);
    static const int want_lost[11] = {0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0}, want_kept[11] = {1, 1, 1, 0, 0, 1, 1, 1, 0, 1, 0};
    for (int s = 0; s <= 10; s++) {
        cr_assert_eq(c.lost[s], want_lost[s], "seq %d: %d lost copies, expected %d", s, c.lost[s], want_lost[s]);
        cr_assert_eq(c.acked[s], want_kept[s], "seq %d: %d kept copies, expected %d", s, c.acked[s], want_kept[s]);
    }
    /* the second source, on its own: the deliveries of scans 0, 1, 2 at
     * offsets 0..2 of its partition 0, whose end is 2 now: 2's is lost */
    for (int s = 0; s < 3; s++) {
        sd_send_t d = {.seq = s, .kind = "valid", .disposition = "target", .event_time_ms = 2000, .key = "k", .step = 1, .side = 1};
        int64_t n;
        cr_assert_eq(sd_ledger_send(l, &d, 5, &n, err, sizeof(err)), SD_OK, "%s", err);
        cr_assert_eq(sd_ledger_ack(l, n, 0, s, 100, NULL, err, sizeof(err)), SD_OK, "%s", err);
    }
    cr_assert_eq(sd_ledger_commit(l, err, sizeof(err)), SD_OK);
    int64_t side_ends[1] = {2};
    acked_ctx_t sc = {{0}, {0}};
    sd_ledger_each_acked_lost(l, 1, side_ends, 1, count_acked, &sc);
    cr_assert(sc.acked[0] == 1 && sc.acked[1] == 1 && sc.lost[0] == 0 && sc.lost[1] == 0);
    cr_assert_eq(sc.lost[2], 1, "the delivery past the end is lost");
    for (int s = 3; s <= 10; s++) cr_assert(!sc.acked[s] && !sc.lost[s], "seq %d: the source's messages are not the second's", s);
    /* and the source's answer is unchanged by the second source */
    acked_ctx_t c2 = {{0}, {0}};
    sd_ledger_each_acked_lost(l, 0, ends, 3, count_acked, &c2);
    for (int s = 0; s <= 10; s++) cr_assert_eq(c2.lost[s], want_lost[s], "seq %d", s);
    sd_ledger_close(l);
    free(path);
}

/* ---- a reader that cannot read is the run's error, never "none" ---- */

static void count_cb(void *opaque, int64_t seq, int partition, int64_t offset) {
    (void)seq, (void)partition, (void)offset;
    (*(int64_t *)opaque)++;
}

/* a run killed with its messages packed, then a damaged pack first in line */
static char *packed_run_with_a_damaged_pack(void) {
    char *path = sd_util_fmt("%s/run.db", dir);
    pid_t pid = fork();
    if (pid == 0) {
        sd_ledger_t *l;
        if (sd_ledger_create(path, &l, NULL, 0)) _exit(1);
        send_varied(l, 5000);
        _exit(sd_ledger_commit(l, NULL, 0) ? 1 : 0);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "INSERT INTO pack(id,sends,acks,data) VALUES(0,2,0,x'0202ff')", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    return path;
}

Test(ledger, a_damaged_pack_fails_every_reader) {
    char *path = packed_run_with_a_damaged_pack();
    sd_ledger_t *l;
    char err[512] = "";
    cr_assert_eq(sd_ledger_open(path, 0, &l, err, sizeof(err)), SD_OK, "%s", err);
    int64_t n = 0;
    cr_assert_eq(sd_ledger_each_position(l, count_cb, &n), SD_ERR_IO, "not an empty set");
    cr_assert_eq(n, 0);
    cr_assert_eq(sd_ledger_error(l, err, sizeof(err)), SD_ERR_IO);
    cr_assert(strstr(err, "pack 0 is damaged"), "got %s", err);
    cr_assert_eq(sd_ledger_count_produced(l), 0);
    cr_assert_eq(sd_ledger_commit(l, err, sizeof(err)), SD_ERR_IO, "every later commit reports it");
    sd_ledger_close(l);
    free(path);
}

Test(ledger, a_corrupt_page_under_an_open_ledger) {
    char *path = sd_util_fmt("%s/run.db", dir);
    sd_ledger_t *l;
    char err[512] = "";
    cr_assert_eq(sd_ledger_create(path, &l, err, sizeof(err)), SD_OK, "%s", err);
    send_varied(l, 3000);
    cr_assert_eq(sd_ledger_commit(l, err, sizeof(err)), SD_OK, "%s", err);
    int64_t before = sd_ledger_count_produced(l);
    cr_assert_gt(before, 0);
    /* another connection checkpoints the WAL and overwrites ack's root page */
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL), SQLITE_OK);
    int64_t root = q1(db, "SELECT rootpage FROM sqlite_master WHERE name='ack'"), psize = q1(db, "PRAGMA page_size");
    sqlite3_close(db);
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    char junk[65536];
    memset(junk, 0xA5, sizeof(junk));
    cr_assert_eq(fseek(f, (long)((root - 1) * psize), SEEK_SET), 0);
    cr_assert_eq(fwrite(junk, 1, (size_t)psize, f), (size_t)psize);
    fclose(f);
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "PRAGMA user_version = 7", NULL, NULL, NULL), SQLITE_OK, "a change the open ledger sees");
    sqlite3_close(db);
    cr_assert_eq(sd_ledger_count_produced(l), 0);
    cr_assert_eq(sd_ledger_error(l, err, sizeof(err)), SD_ERR_IO);
    cr_assert(strstr(err, "malformed"), "got %s", err);
    int64_t n = 0;
    cr_assert_eq(sd_ledger_each_position(l, count_cb, &n), SD_ERR_IO);
    sd_ledger_close(l);
    free(path);
}

static int warned;
/* the ranges a report read: partition 0, offsets 0..10 (what its JSON says is progress_spark.c's to read) */
static int t_ranges(void *opaque, const char *json, sd_offset_range_t **out) {
    (void)opaque;
    (void)json;
    *out = malloc(sizeof(**out));
    (*out)[0] = (sd_offset_range_t){.partition = 0, .begin = 0, .end = 10};
    return 1;
}

static void warn_cb(void *opaque, int disagrees, const char *text) {
    (void)opaque, (void)disagrees, (void)text;
    warned++;
}
static void side_cb(void *opaque, int64_t seq, int64_t t, const char *key, const char *disp) {
    (void)seq, (void)t, (void)key, (void)disp;
    (*(int64_t *)opaque)++;
}

Test(ledger, a_query_that_cannot_be_prepared_is_no_empty_set) {
    char *path = sd_util_fmt("%s/run.db", dir);
    sd_ledger_t *l;
    char err[512] = "";
    cr_assert_eq(sd_ledger_create(path, &l, err, sizeof(err)), SD_OK, "%s", err);
    send_varied(l, 1000);
    cr_assert_eq(sd_ledger_progress(l, 1, 5000, "q", 0, 10, 0, 100,
                                    "{\"sources\":[{\"startOffset\":{\"t\":{\"0\":0}},\"endOffset\":{\"t\":{\"0\":10}}}]}", err, sizeof(err)),
                 SD_OK, "%s", err);
    cr_assert_eq(sd_ledger_commit(l, err, sizeof(err)), SD_OK, "%s", err);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "DROP VIEW side_ledger; DROP VIEW ledger_ids; DROP VIEW ledger", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    warned = 0;
    cr_assert_eq(sd_ledger_compare_account(l, 1000, t_ranges, warn_cb, NULL), SD_ERR_IO);
    cr_assert_eq(warned, 0, "no disagreement blamed on the pipeline");
    int64_t n = 0;
    cr_assert_eq(sd_ledger_each_side(l, side_cb, &n), SD_ERR_IO);
    cr_assert_eq(sd_ledger_error(l, err, sizeof(err)), SD_ERR_IO);
    cr_assert(strstr(err, "no such table"), "got %s", err);
    sd_ledger_close(l);
    free(path);
}

/* The timeline's series the run keeps as it sends (ledger_series.c) is the
 * one a scan of the ledger gives: per bucket the messages sent, those
 * acknowledged, and the first acknowledged copy of each id the target
 * should hold; the second source's messages are in none; a long run
 * widens the buckets, never more than 4096 of them. */
Test(ledger, the_drawn_series_is_the_ledgers_own_count) {
    char *path = sd_util_fmt("%s/run.db", dir);
    sd_ledger_t *l;
    char err[512];
    cr_assert_eq(sd_ledger_create(path, &l, err, sizeof(err)), SD_OK, "%s", err);
    int64_t t0 = 1700000000000;
    for (int i = 0; i < 3000; i++) {
        /* three phases: dense, then sparse over 100,000 s (the buckets widen) */
        int64_t q = i < 2000 ? t0 + i : t0 + 2000 + (int64_t)(i - 2000) * 100000;
        sd_send_t s = {.seq = i, .kind = i % 7 ? "valid" : "late", .disposition = i % 2 ? "target" : "quarantine",
                       .event_time_ms = q, .key = "k", .step = 1};
        int64_t n;
        cr_assert_eq(sd_ledger_send(l, &s, q, &n, err, sizeof(err)), SD_OK, "%s", err);
        if (i % 10 == 3) cr_assert_eq(sd_ledger_ack(l, n, -1, -1, q + 5, "Local: Message timed out", err, sizeof(err)), SD_OK);
        else cr_assert_eq(sd_ledger_ack(l, n, i % 3, i, q + 5, NULL, err, sizeof(err)), SD_OK);
    }
    /* replays: of an id acknowledged (not expected again) and of one whose
     * first copy failed (expected at this one) */
    for (int seq = 1; seq <= 3; seq += 2) {
        sd_send_t dup = {.seq = seq, .kind = "duplicate", .disposition = "target", .event_time_ms = INT64_MIN, .detail = "replay"};
        int64_t n;
        cr_assert_eq(sd_ledger_send(l, &dup, t0 + 9000, &n, err, sizeof(err)), SD_OK);
        cr_assert_eq(sd_ledger_ack(l, n, 0, 5000 + seq, t0 + 9100, NULL, err, sizeof(err)), SD_OK);
    }
    sd_send_t side = {.seq = 0, .kind = "valid", .disposition = "side", .event_time_ms = t0, .side = 1};
    int64_t n;
    cr_assert_eq(sd_ledger_send(l, &side, t0 + 10, &n, err, sizeof(err)), SD_OK);
    cr_assert_eq(sd_ledger_ack(l, n, 0, 0, t0 + 11, NULL, err, sizeof(err)), SD_OK);
    sd_ledger_close(l);

    cr_assert_eq(sd_ledger_open(path, 1, &l, err, sizeof(err)), SD_OK, "%s", err);
    sqlite3 *db = sd_ledger_db(l);
    int64_t w = q1(db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key='series_bucket_ms'");
    cr_expect_gt(w, 10, "the sparse phase widened the buckets: %lld", (long long)w);
    cr_expect_leq(q1(db, "SELECT count(*) FROM series"), 4096);
    cr_expect_eq(q1(db, "SELECT sum(sent) FROM series"), q1(db, "SELECT count(*) FROM ledger"));
    cr_expect_eq(q1(db, "SELECT sum(acked) FROM series"), q1(db, "SELECT count(*) FROM ledger WHERE offset IS NOT NULL"));
    cr_expect_eq(q1(db, "SELECT sum(expected_acked) FROM series"),
                 q1(db, "SELECT count(DISTINCT seq) FROM ledger WHERE disposition='target' AND offset IS NOT NULL"));
    cr_expect_eq(q1(db, "SELECT sum(expected_acked) FROM series"), 1500 - 300 + 1, "seq 3's replay is its first acknowledged copy");
    /* bucket by bucket, the ledger grouped the same way */
    char *q = sd_util_fmt("SELECT count(*) FROM (SELECT (queued_ms - (SELECT min(t_ms) FROM series)) / %lld AS k, count(*) AS c FROM ledger"
                          " GROUP BY k) g LEFT JOIN series s ON s.t_ms = (SELECT min(t_ms) FROM series) + g.k * %lld"
                          " WHERE s.sent IS NOT g.c", (long long)w, (long long)w);
    cr_expect_eq(q1(db, q), 0, "every bucket's sent count is the ledger's");
    free(q);
    cr_expect_eq(q1(db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key='ledger_messages'"), 3002);
    cr_expect_eq(q1(db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key='ledger_distinct_ids'"), 3000);
    cr_expect_eq(q1(db, "SELECT json_extract(value, '$.late') FROM meta WHERE key='ledger_kinds'"),
                 q1(db, "SELECT count(*) FROM ledger WHERE kind='late'"));
    sd_ledger_close(l);
    free(path);
}

/* More messages in flight than the series can follow: it says nothing
 * rather than something wrong (the charts then scan the ledger). */
Test(ledger, a_series_it_cannot_keep_exactly_is_not_stored) {
    char *path = sd_util_fmt("%s/run.db", dir);
    sd_ledger_t *l;
    char err[512];
    cr_assert_eq(sd_ledger_create(path, &l, err, sizeof(err)), SD_OK, "%s", err);
    for (int i = 0; i < 300000; i++) {
        sd_send_t s = {.seq = i, .kind = "valid", .disposition = "target", .event_time_ms = i, .key = "k", .step = 1};
        cr_assert_eq(sd_ledger_send(l, &s, 1000 + i / 1000, NULL, err, sizeof(err)), SD_OK, "%s", err);
    }
    cr_assert_eq(sd_ledger_ack(l, 1, 0, 0, 2000, NULL, err, sizeof(err)), SD_OK);
    sd_ledger_close(l);
    cr_assert_eq(sd_ledger_open(path, 1, &l, err, sizeof(err)), SD_OK, "%s", err);
    cr_expect_eq(q1(sd_ledger_db(l), "SELECT count(*) FROM series"), 0);
    cr_expect_eq(q1(sd_ledger_db(l), "SELECT count(*) FROM meta WHERE key='series_bucket_ms'"), 0);
    sd_ledger_close(l);
    free(path);
}
