/* test_ledger.c - run.db: what is written is there, also after a reopen,
 * and a ledger id maps back through the ledger_ids view. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../harness/ledger.h"
#include "../../harness/util.h"

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
