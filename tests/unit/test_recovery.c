/* test_recovery.c - each fault's recovery figures (harness/oracle/recovery.c)
 * on run.db files written by hand, where every answer is known: caught up by
 * the commits and by the target's write times, never caught up, the input
 * replayed by a restart that resumes where it should and by one that rewinds
 * to the beginning, rows written again traced through the writers, a stall's
 * detection time, a restart of a running pipeline as a fault, a progress
 * source without batch begins, and latency around the fault. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ledger.h"
#include "observe.h"
#include "recovery.h"
#include "util.h"

static char dir[64];
static sd_ledger_t *L;
static sqlite3 *db;

static void setup(void) {
    snprintf(dir, sizeof(dir), "/tmp/sd_recovery_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    char *path = sd_util_fmt("%s/run.db", dir);
    char err[512];
    cr_assert_eq(sd_ledger_create(path, &L, err, sizeof(err)), SD_OK, "%s", err);
    free(path);
    db = sd_ledger_db(L);
}
static void teardown(void) {
    sd_ledger_close(L);
    sd_util_rmtree(dir, NULL, 0);
}

TestSuite(recovery, .init = setup, .fini = teardown);

static void sql(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *q = sqlite3_vmprintf(fmt, ap);
    va_end(ap);
    char *msg = NULL;
    cr_assert_eq(sqlite3_exec(db, q, NULL, NULL, &msg), SQLITE_OK, "%s: %s", q, msg ? msg : "");
    sqlite3_free(q);
}

/* n target events, seq 0..n-1, event i acknowledged at t0 + i ms on
 * partition i % 2 at offset i / 2 */
static void sent(int n, int64_t t0) {
    for (int i = 0; i < n; i++) {
        sql("INSERT INTO sent(n, seq, kind, disposition, step) VALUES(%d, %d, 'valid', 'target', 1)", i + 1, i);
        sql("INSERT INTO ack(n, partition, offset, acked_ms) VALUES(%d, %d, %d, %lld)", i + 1, i % 2, i / 2, (long long)(t0 + i));
    }
}

static int compute(sd_recovery_in_t *in, sd_recovery_t **v) {
    char err[512] = "";
    cr_assert_eq(sd_ledger_commit(L, err, sizeof(err)), SD_OK, "%s", err);
    int n = sd_recovery_compute(db, in, v, err, sizeof(err));
    cr_assert_geq(n, 0, "%s", err);
    return n;
}

/* The canonical drill's shape: 100 events committed by batch 1, 20 more in
 * batch 2 when incarnation 1 is killed at 10,000; incarnation 2 re-runs
 * batch 2 (rows read: rows2 from offsets 0:60,1:60) and commits at 11,500. */
static void kill_and_restart(int64_t rows2) {
    sent(120, 1000);
    sql("INSERT INTO step(idx, line, text, started_ms) VALUES(4, 21, 'kill mid-batch', 9990)");
    sql("INSERT INTO step(idx, line, text, started_ms) VALUES(5, 22, 'restart', 10001)");
    sql("INSERT INTO fault(id, t_ms, step, kind, detail, incarnation, batch, landed, rows_visible, batch_rows)"
        " VALUES(1, 10000, 4, 'kill', 'signal=KILL mid-batch', 1, 2, 1, 7, 20)");
    sql("INSERT INTO fault(id, t_ms, step, kind, detail, incarnation) VALUES(2, 10002, 5, 'restart', 'same command and checkpoint', 2)");
    sql("INSERT INTO incarnation(n, started_ms, ended_ms, ended_by) VALUES(1, 0, 10000, 'kill'), (2, 10002, 20000, 'stop')");
    sql("INSERT INTO batch(incarnation, id, begin_ms, commit_ms, rows, offsets) VALUES(1, 1, 2000, 3000, 100, '0:50,1:50')");
    sql("INSERT INTO batch(incarnation, id, begin_ms, commit_ms, rows, offsets) VALUES(1, 2, 9000, NULL, 20, NULL)");
    sql("INSERT INTO batch(incarnation, id, begin_ms, commit_ms, rows, offsets) VALUES(2, 2, 11000, 11500, %lld, '0:60,1:60')", (long long)rows2);
}

Test(recovery, a_kill_judged_by_the_commits) {
    kill_and_restart(20);
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    int n = compute(&in, &v);
    cr_assert_eq(n, 1, "the restart after a kill is no fault of its own: %d", n);
    cr_assert_eq(v[0].line, 21);
    cr_assert_str_eq(v[0].basis, "commits");
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], 1500, "caught up at batch 2's commit: %lld", (long long)v[0].v[SD_FIG_recovery_s]);
    cr_assert_eq(v[0].v[SD_FIG_replayed_input], 20, "the batch in flight read again: %lld", (long long)v[0].v[SD_FIG_replayed_input]);
    cr_assert_eq(v[0].v[SD_FIG_batches_rerun], 1);
    cr_assert_eq(v[0].v[SD_FIG_rewritten_rows], 7, "its 7 visible rows written again");
    cr_assert_eq(v[0].v[SD_FIG_detect_s], SD_FIG_NA, "a kill is no stall");
    free(v);
}

Test(recovery, a_restart_that_rewinds_replays_everything_it_had_read) {
    kill_and_restart(120); /* incarnation 2 read offsets 0 to 60 on both partitions */
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_replayed_input], 120, "%lld", (long long)v[0].v[SD_FIG_replayed_input]);
    free(v);
}

Test(recovery, commits_that_never_reach_the_acknowledged_offsets_never_catch_up) {
    kill_and_restart(20);
    sql("UPDATE batch SET offsets='0:60,1:59' WHERE incarnation=2");
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], SD_FIG_NEVER);
    cr_assert_eq(v[0].caught_ms, -1);
    cr_assert(strstr(v[0].why, "no commit reached"), "%s", v[0].why);
    free(v);
}

/* 120 events sent at 1000 + i; every one first written at when[0], event 7
 * at when[1] (-1 never, -2 without a time) */
static int64_t newest_seen(void *opaque, int64_t t_ms, int64_t *n, int64_t *missing, int64_t *untimed) {
    const int64_t *when = opaque;
    int64_t newest = INT64_MIN;
    for (int i = 0; i < 120; i++) {
        if (1000 + i > t_ms) continue;
        (*n)++;
        int64_t w = i == 7 ? when[1] : when[0];
        if (w == -1) (*missing)++;
        else if (w == -2) (*untimed)++;
        else if (w > newest) newest = w;
    }
    return newest;
}

Test(recovery, by_the_target_the_last_event_sent_before_the_fault_decides) {
    kill_and_restart(20);
    int64_t when[2] = {10400, 12345};
    sd_recovery_in_t in = {.newest_seen = newest_seen, .opaque = when, .sink = "target"};
    sd_recovery_t *v;
    compute(&in, &v);
    cr_assert_str_eq(v[0].basis, "target");
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], 2345);
    cr_assert_eq(v[0].caught_ms, 12345);
    free(v);
    when[1] = -1; /* event 7 never written */
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], SD_FIG_NEVER);
    cr_assert(strstr(v[0].why, "1 of the 120 events"), "%s", v[0].why);
    free(v);
    when[1] = -2; /* written without a time: the commits decide */
    compute(&in, &v);
    cr_assert_str_eq(v[0].basis, "commits");
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], 1500);
    free(v);
    when[0] = when[1] = 9000; /* everything was in before the kill */
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], 0);
    free(v);
}

/* a fault before Kafka acknowledged anything: nothing to catch up with,
 * whenever the first commit comes */
Test(recovery, nothing_acknowledged_before_the_fault_is_caught_up_at_once) {
    sent(10, 1000);
    sql("INSERT INTO step(idx, line, text, started_ms) VALUES(2, 9, 'kill now', 500)");
    sql("INSERT INTO fault(id, t_ms, step, kind, detail, incarnation, landed, rows_visible, batch_rows) VALUES(1, 500, 2, 'kill', 'signal=KILL now', 1, 0, 0, 0)");
    sql("INSERT INTO incarnation(n, started_ms, ended_ms, ended_by) VALUES(1, 0, 500, 'kill'), (2, 600, 9000, 'stop')");
    sql("INSERT INTO batch(incarnation, id, begin_ms, commit_ms, rows, offsets) VALUES(1, 1, 400, NULL, 0, NULL)");
    sql("INSERT INTO batch(incarnation, id, begin_ms, commit_ms, rows, offsets) VALUES(2, 1, 1500, 3000, 10, '0:5,1:5')");
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    compute(&in, &v);
    cr_assert_str_eq(v[0].basis, "commits");
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], 0, "%lld", (long long)v[0].v[SD_FIG_recovery_s]);
    free(v);
}

Test(recovery, the_frontier_recorded_with_the_fault_decides_over_the_ack_table) {
    kill_and_restart(20);
    /* the harness recorded less acknowledged than the table says by 10,000:
     * batch 1's commit (0:50,1:50) already covers it */
    sql("UPDATE fault SET acked='0:50,1:50' WHERE id=1");
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], 0, "%lld", (long long)v[0].v[SD_FIG_recovery_s]);
    free(v);
    sql("UPDATE fault SET acked='0:60,1:61' WHERE id=1");
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], SD_FIG_NEVER);
    free(v);
}

/* the visible rows of the interrupted batch are written again only when
 * their input is read again: a restart that skips the batch in flight
 * (at-most-once: incarnation 2 reads on from 0:60,1:60) rewrites none of
 * them, one that re-reads part of it at most that part */
Test(recovery, visible_rows_are_rewritten_only_as_far_as_their_input_is_read_again) {
    kill_and_restart(20);
    sql("UPDATE batch SET offsets='0:70,1:70', rows=20 WHERE incarnation=2");
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_replayed_input], 0, "%lld", (long long)v[0].v[SD_FIG_replayed_input]);
    cr_assert_eq(v[0].v[SD_FIG_rewritten_rows], 0, "7 rows were visible, none of their input read again: %lld",
                 (long long)v[0].v[SD_FIG_rewritten_rows]);
    free(v);
    sql("UPDATE batch SET offsets='0:68,1:68', rows=20 WHERE incarnation=2"); /* began at 116: 4 of the batch read again */
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_replayed_input], 4);
    cr_assert_eq(v[0].v[SD_FIG_rewritten_rows], 4, "%lld", (long long)v[0].v[SD_FIG_rewritten_rows]);
    free(v);
}

Test(recovery, extra_copies_by_a_later_incarnation_are_traced_to_the_fault) {
    kill_and_restart(20);
    /* 9 ids written by both incarnations, one replayed by the harness itself
     * (left out), one whose writer is ambiguous (left out) */
    for (int s = 100; s < 109; s++)
        sql("INSERT INTO anomaly VALUES('target', %d, 'duplicated', 2, 'incarnation 1 batch 2; incarnation 2 batch 2')", s);
    sql("INSERT INTO sent(n, seq, kind, disposition, step) VALUES(500, 5, 'duplicate', 'target', 6)");
    sql("INSERT INTO anomaly VALUES('target', 5, 'duplicated', 2, 'incarnation 1 batch 1; incarnation 2 batch 2')");
    sql("INSERT INTO anomaly VALUES('target', 110, 'duplicated', 2, 'line 3 (incarnation 1 or 2, by the sink''s growth); incarnation 2 batch 2')");
    /* a copy whose writer names no incarnation: which restart wrote it is unknown, left out */
    sql("INSERT INTO anomaly VALUES('target', 111, 'duplicated', 3, 'batch 2; incarnation 1 batch 2; incarnation 2 batch 2')");
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_rewritten_rows], 9, "%lld", (long long)v[0].v[SD_FIG_rewritten_rows]);
    free(v);
}

/* 10 events; the pipeline paused from 5,000 to 10,000 inside batch 1,
 * batch 2 begun and committed at the times given */
static void paused(int64_t begin2, int64_t commit2) {
    sent(10, 1000);
    sql("INSERT INTO step(idx, line, text, started_ms) VALUES(3, 12, 'pause for=5s', 5000)");
    sql("INSERT INTO fault(id, t_ms, step, kind, detail, incarnation, end_ms) VALUES(1, 5000, 3, 'pause', 'SIGSTOP to the process group', 1, 10000)");
    sql("INSERT INTO fault(id, t_ms, step, kind, detail, incarnation, undoes) VALUES(2, 10000, 3, 'resume', 'SIGCONT to the process group', 1, 1)");
    sql("INSERT INTO incarnation(n, started_ms, ended_ms, ended_by) VALUES(1, 0, 20000, 'stop')");
    sql("INSERT INTO batch(incarnation, id, begin_ms, commit_ms, rows, offsets) VALUES(1, 1, 4000, NULL, 10, NULL)");
    sql("INSERT INTO batch(incarnation, id, begin_ms, commit_ms, rows, offsets) VALUES(1, 2, %lld, %lld, 0, '0:5,1:5')", (long long)begin2,
        (long long)commit2);
}

Test(recovery, a_pause_is_detected_at_the_first_batch_after_it_ends) {
    paused(10250, 10600);
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    int n = compute(&in, &v);
    cr_assert_eq(n, 1, "the resume undoes the pause: %d", n);
    cr_assert_eq(v[0].v[SD_FIG_detect_s], 250);
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], 5600);
    cr_assert_eq(v[0].v[SD_FIG_replayed_input], SD_FIG_NA, "the incarnation went on");
    free(v);
    /* a stall that had not ended when the run did: no detection time,
     * whatever began after it */
    sql("UPDATE fault SET end_ms=NULL WHERE id=1");
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_detect_s], SD_FIG_UNMEASURED, "%lld", (long long)v[0].v[SD_FIG_detect_s]);
    cr_assert(strstr(v[0].why, "did not end before the run did"), "%s", v[0].why);
    free(v);
}

/* run.db that cannot be read is an error of the figures, not no figures */
Test(recovery, an_unreadable_run_db_is_an_error) {
    kill_and_restart(20);
    sql("DROP TABLE batch");
    sd_recovery_t *v = NULL;
    sd_recovery_in_t in = {.sink = "target"};
    char err[512] = "";
    cr_assert_eq(sd_recovery_compute(db, &in, &v, err, sizeof(err)), -1);
    cr_assert(strstr(err, "no such table: batch"), "%s", err);
    cr_assert_null(v);
}

/* commits whose offsets name many partitions: the per-partition tables
 * grow past their first room */
Test(recovery, offsets_of_many_partitions) {
    for (int i = 0; i < 200; i++) {
        sql("INSERT INTO sent(n, seq, kind, disposition, step) VALUES(%d, %d, 'valid', 'target', 1)", i + 1, i);
        sql("INSERT INTO ack(n, partition, offset, acked_ms) VALUES(%d, %d, 0, %d)", i + 1, i, 1000 + i);
    }
    sd_buf_t off;
    sd_buf_init(&off);
    for (int p = 0; p < 200; p++) sd_buf_printf(&off, "%s%d:1", p ? "," : "", p);
    sql("INSERT INTO step(idx, line, text, started_ms) VALUES(4, 21, 'kill', 5000)");
    sql("INSERT INTO fault(id, t_ms, step, kind, detail, incarnation, landed, rows_visible, batch_rows) VALUES(1, 5000, 4, 'kill', 'signal=KILL now', 1, 0, 0, 0)");
    sql("INSERT INTO incarnation(n, started_ms, ended_ms, ended_by) VALUES(1, 0, 5000, 'kill'), (2, 5100, 9000, 'stop')");
    sql("INSERT INTO batch(incarnation, id, begin_ms, commit_ms, rows, offsets) VALUES(2, 1, 5200, 6000, 200, '%q')", off.data);
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    compute(&in, &v);
    cr_assert_str_eq(v[0].basis, "commits");
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], 1000, "every one of the 200 partitions committed at 6,000: %lld", (long long)v[0].v[SD_FIG_recovery_s]);
    free(v);
    sd_buf_free(&off);
}

/* a broker fault: the longest time a partition it led had no usable
 * leader; never when one had none within the step's timeout */
Test(recovery, a_broker_fault_measures_its_leaderless_partitions) {
    sent(10, 1000);
    sql("INSERT INTO step(idx, line, text, started_ms) VALUES(2, 14, 'broker kill leader-of=0', 5000)");
    sql("INSERT INTO fault(id, t_ms, step, kind, detail, incarnation) VALUES(1, 5000, 2, 'broker', 'SIGKILL to broker 2', 1)");
    sql("INSERT INTO incarnation(n, started_ms, ended_ms, ended_by) VALUES(1, 0, 20000, 'stop')");
    sql("INSERT INTO batch(incarnation, id, begin_ms, commit_ms, rows, offsets) VALUES(1, 1, 1500, 4000, 10, '0:5,1:5')");
    sql("INSERT INTO leader_move VALUES(1, 0, 2, 1, 9200), (1, 1, 2, 3, 8700), (7, 0, 2, 1, 99999)");
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_leaderless_s], 9200, "%lld", (long long)v[0].v[SD_FIG_leaderless_s]);
    free(v);
    sql("INSERT INTO leader_move VALUES(1, 2, 2, NULL, NULL)");
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_leaderless_s], SD_FIG_NEVER, "a partition found no leader");
    free(v);
    sql("UPDATE fault SET kind='pause', detail='SIGSTOP to the process group'");
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_leaderless_s], SD_FIG_NA, "not a broker fault");
    free(v);
}

/* a drill of many faults: every one gets its figures (the per-fault tables
 * grow with them) */
Test(recovery, forty_pauses_each_with_its_figures) {
    sent(10, 1000);
    sql("INSERT INTO incarnation(n, started_ms, ended_ms, ended_by) VALUES(1, 0, 900000, 'stop')");
    sql("INSERT INTO batch(incarnation, id, begin_ms, commit_ms, rows, offsets) VALUES(1, 1, 1500, 2000, 10, '0:5,1:5')");
    for (int i = 0; i < 40; i++) {
        int64_t t = 10000 + i * 10000;
        sql("INSERT INTO step(idx, line, text, started_ms) VALUES(%d, %d, 'pause for=1s', %lld)", 10 + i, 30 + i, (long long)t);
        sql("INSERT INTO fault(id, t_ms, step, kind, detail, incarnation, end_ms) VALUES(%d, %lld, %d, 'pause', 'SIGSTOP to the process group', 1, %lld)",
            1 + i, (long long)t, 10 + i, (long long)(t + 1000));
        sql("INSERT INTO batch(incarnation, id, begin_ms, commit_ms, rows, offsets) VALUES(1, %d, %lld, %lld, 0, '0:5,1:5')", 2 + i,
            (long long)(t + 1250), (long long)(t + 1300));
    }
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    int n = compute(&in, &v);
    cr_assert_eq(n, 40);
    for (int i = 0; i < 40; i++) {
        cr_assert_eq(v[i].line, 30 + i);
        cr_assert_eq(v[i].v[SD_FIG_detect_s], 250, "pause %d: %lld", i, (long long)v[i].v[SD_FIG_detect_s]);
        cr_assert_eq(v[i].v[SD_FIG_recovery_s], 0, "everything sent before it was committed at 2,000");
    }
    free(v);
}

Test(recovery, a_restart_of_a_running_pipeline_is_a_fault_from_its_step) {
    sent(10, 1000);
    sql("INSERT INTO step(idx, line, text, started_ms) VALUES(2, 9, 'restart', 5000)");
    sql("INSERT INTO fault(id, t_ms, step, kind, detail, incarnation) VALUES(1, 5400, 2, 'restart', 'same command and checkpoint', 2)");
    sql("INSERT INTO incarnation(n, started_ms, ended_ms, ended_by) VALUES(1, 0, 5300, 'stop'), (2, 5400, 9000, 'stop')");
    sql("INSERT INTO batch(incarnation, id, begin_ms, commit_ms, rows, offsets) VALUES(1, 1, 1500, 4000, 10, '0:5,1:5')");
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    int n = compute(&in, &v);
    cr_assert_eq(n, 1);
    cr_assert_eq(v[0].t_ms, 5000, "from when the stop began");
    cr_assert_eq(v[0].incarnation, 1);
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], 0, "everything was committed before it");
    free(v);
}

Test(recovery, a_source_without_begins_cannot_say_what_was_replayed) {
    kill_and_restart(20);
    sql("UPDATE batch SET begin_ms=NULL");
    sql("DELETE FROM batch WHERE commit_ms IS NULL");
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_replayed_input], SD_FIG_UNMEASURED);
    cr_assert_eq(v[0].v[SD_FIG_batches_rerun], SD_FIG_UNMEASURED);
    cr_assert(strstr(v[0].why, "no batch's begin"), "%s", v[0].why);
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], 1500, "the commits still say when it caught up");
    free(v);
}

Test(recovery, latency_before_during_and_after) {
    kill_and_restart(20);
    /* before the kill: 100 ms; during (10,000 to 11,500): 1,000 ms; after: 50 ms */
    for (int i = 0; i < 10; i++) sql("INSERT INTO latency VALUES('target', %d, %d, %d)", i, 5000 + i, 5100 + i);
    for (int i = 0; i < 10; i++) sql("INSERT INTO latency VALUES('target', %d, %d, %d)", 10 + i, 10100 + i, 11100 + i);
    for (int i = 0; i < 10; i++) sql("INSERT INTO latency VALUES('target', %d, %d, %d)", 20 + i, 12000 + i, 12050 + i);
    sql("INSERT INTO latency VALUES('other', 0, 12000, 99999)");
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_latency_p50_before_ms], 100);
    cr_assert_eq(v[0].v[SD_FIG_latency_p99_during_ms], 1000);
    cr_assert_eq(v[0].v[SD_FIG_latency_p99_after_ms], 50, "another sink's samples are not this one's");
    free(v);
}

Test(recovery, an_idle_timeout_counts_its_drops_and_the_longest_wait) {
    sent(10, 1000);
    sql("INSERT INTO step(idx, line, text, started_ms) VALUES(2, 12, 'network idle-timeout=3s', 4000)");
    sql("INSERT INTO fault(id, t_ms, step, kind, detail, incarnation, end_ms)"
        " VALUES(1, 4000, 2, 'network', 'idle timeout 3.0s: connections idle longer are dropped silently (proxy)', 1, 30000)");
    sql("INSERT INTO fault(id, t_ms, step, kind, detail, undoes) VALUES(2, 30000, 3, 'network', 'idle timeout lifted', 1)");
    sql("INSERT INTO incarnation(n, started_ms, ended_ms, ended_by) VALUES(1, 0, 40000, 'stop')");
    sql("INSERT INTO batch(incarnation, id, begin_ms, commit_ms, rows, offsets) VALUES(1, 1, 1500, 2000, 10, '0:5,1:5')");
    /* three drops: one never used, one the client waited 9.5 s on, one 2 s */
    sql("INSERT INTO idle_drop VALUES(1, 7000, NULL, NULL), (1, 7000, 12000, 21500), (1, 15000, 16000, 18000)");
    sql("INSERT INTO idle_drop VALUES(99, 7000, 7000, 99000)"); /* another fault's */
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    int n = compute(&in, &v);
    cr_assert_eq(n, 1, "the lifting is no fault of its own: %d", n);
    cr_assert_eq(v[0].v[SD_FIG_dropped_connections], 3);
    cr_assert_eq(v[0].v[SD_FIG_reconnect_s], 9500);
    cr_assert_eq(v[0].v[SD_FIG_detect_s], SD_FIG_NA, "not a stall");
    free(v);
    /* a client still waiting when the pipeline stopped: not measured */
    sql("INSERT INTO idle_drop VALUES(1, 25000, 26000, NULL)");
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_reconnect_s], SD_FIG_UNMEASURED);
    cr_assert(strstr(v[0].why, "still waited"), "%s", v[0].why);
    free(v);
    /* a timeout that dropped nothing tested nothing: the figures are not
     * measured, and why says which way */
    sql("DELETE FROM idle_drop");
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_reconnect_s], SD_FIG_UNMEASURED, "no drop and nothing says what the timeout saw");
    cr_assert_eq(v[0].v[SD_FIG_dropped_connections], SD_FIG_UNMEASURED);
    free(v);
    sql("INSERT INTO idle_watch VALUES(1, 3000, 0, 0, 0)");
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_reconnect_s], SD_FIG_UNMEASURED);
    cr_assert(strstr(v[0].why, "no pipeline connection went through the proxy"), "%s", v[0].why);
    free(v);
    sql("UPDATE idle_watch SET connections=4, max_quiet_ms=400");
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_reconnect_s], SD_FIG_UNMEASURED, "a pipeline that never went quiet");
    cr_assert(strstr(v[0].why, "none of the 4 pipeline connections") && strstr(v[0].why, "longest silence 0.4 s"), "%s", v[0].why);
    free(v);
    /* a client that closed its quiet connections itself before the timeout
     * could drop them met it: measured, nothing dropped, no wait */
    sql("UPDATE idle_watch SET quiet_closed=2, max_quiet_ms=6000");
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_reconnect_s], 0);
    cr_assert_eq(v[0].v[SD_FIG_dropped_connections], 0);
    free(v);
    /* other faults have neither figure */
    sql("DELETE FROM idle_watch");
    sql("UPDATE fault SET detail='latency 300 ms (proxy)' WHERE id=1");
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_reconnect_s], SD_FIG_NA);
    cr_assert_eq(v[0].v[SD_FIG_dropped_connections], SD_FIG_NA);
    free(v);
}

Test(recovery, latency_during_a_stall_lasts_until_it_ends) {
    sent(10, 1000);
    sql("INSERT INTO step(idx, line, text, started_ms) VALUES(2, 12, 'network latency=2s for=10s', 4000)");
    sql("INSERT INTO fault(id, t_ms, step, kind, detail, incarnation, end_ms) VALUES(1, 4000, 2, 'network', 'latency 2000 ms (proxy)', 1, 14000)");
    sql("INSERT INTO incarnation(n, started_ms, ended_ms, ended_by) VALUES(1, 0, 40000, 'stop')");
    sql("INSERT INTO batch(incarnation, id, begin_ms, commit_ms, rows, offsets) VALUES(1, 1, 1500, 2000, 10, '0:5,1:5')");
    /* everything before it was committed at 2,000: caught up at once; the
     * events sent while it lasted are its own, those after it are after */
    for (int i = 0; i < 10; i++) sql("INSERT INTO latency VALUES('target', %d, %d, %d)", i, 6000 + i * 500, 8000 + i * 500);
    for (int i = 0; i < 10; i++) sql("INSERT INTO latency VALUES('target', %d, %d, %d)", 10 + i, 15000 + i, 15040 + i);
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], 0);
    cr_assert_eq(v[0].v[SD_FIG_latency_p50_during_ms], 2000, "the events sent while the latency lasted");
    cr_assert_eq(v[0].v[SD_FIG_latency_p99_after_ms], 40);
    free(v);
}

Test(recovery, stored_figures_read_back) {
    kill_and_restart(20);
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    int n = compute(&in, &v);
    char err[256];
    cr_assert_eq(sd_recovery_store(db, v, n, err, sizeof(err)), SD_OK, "%s", err);
    sqlite3_stmt *st;
    free(v);
    /* never caught up: the same run with batch 2's commit short of the acknowledged offsets */
    sql("UPDATE batch SET offsets='0:10,1:10' WHERE incarnation=2");
    n = compute(&in, &v);
    cr_assert_eq(v[0].caught_ms, -1);
    for (int i = 0; i < n; i++) v[i].fault += 10; /* stored beside the first figures */
    cr_assert_eq(sd_recovery_store(db, v, n, err, sizeof(err)), SD_OK, "%s", err);
    free(v);
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT line, basis, json_extract(figures, '$.recovery_s'), json_extract(figures, '$.detect_s'),"
                                        " json_extract(figures, '$.latency_p50_during_ms'), caught_ms FROM recovery ORDER BY fault",
                                    -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_eq(sqlite3_column_int(st, 0), 21);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 1), "commits");
    cr_assert_eq(sqlite3_column_int64(st, 2), 1500);
    cr_assert_eq(sqlite3_column_type(st, 3), SQLITE_NULL, "does not apply: null");
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 4), "not measured");
    cr_expect_eq(sqlite3_column_int64(st, 5), 11500, "when it caught up");
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_expect_eq(sqlite3_column_type(st, 5), SQLITE_NULL, "never caught up: null");
    sqlite3_finalize(st);
}

/* ---- operational health (health.c) on the same hand-written run ---- */

#include "health.h"

static int64_t points[16][2];
static int npoints;
static void point(void *opaque, int64_t t, int64_t records) {
    (void)opaque;
    if (npoints < 16) points[npoints][0] = t, points[npoints][1] = records, npoints++;
}

Test(recovery, health_batches_backlog_restarts_and_logs) {
    kill_and_restart(20);
    /* what Kafka had acknowledged at each commit and at the kill */
    sql("UPDATE batch SET acked='0:60,1:60' WHERE incarnation=1 AND id=1");
    sql("UPDATE batch SET acked='0:70,1:65' WHERE incarnation=2");
    sql("UPDATE fault SET acked='0:60,1:60' WHERE id=1");
    char *log = sd_util_fmt("%s/pipeline-1.stderr.log", dir);
    FILE *f = fopen(log, "w");
    fputs("12:00 INFO started\n12:01 WARN slow fetch\n12:02 ERROR lost the coordinator\n12:03 java.lang.IllegalStateException: x\n"
          "12:04 WARNING retrying\n"
          "12:05 ERROR TaskSchedulerImpl: Lost executor 1 on 127.0.0.1: Command exited with code 137\n"
          "12:06 WARN TaskSetManager: Lost task 0.0 in stage 3.0 (TID 7) (127.0.0.1 executor 1): ExecutorLostFailure\n"
          "12:07 WARN TaskSetManager: Lost task 1.0 in stage 3.0 (TID 8) (127.0.0.1 executor 1): ExecutorLostFailure\n", f);
    fclose(f);
    sql("UPDATE incarnation SET log_err='%s' WHERE n=1", log);
    free(log);
    sd_health_t h;
    npoints = 0;
    sd_health_compute(db, &h, point, NULL);
    /* batches that began and committed: 1 (1000 ms) and incarnation 2's 2 (500 ms) */
    cr_assert_eq(h.batch_max_ms, 1000);
    cr_assert_eq(h.batch_p50_ms, 500);
    /* 120 rows committed from 2000 to 11500 */
    cr_assert_eq(h.throughput_rps, 120 * 1000 / 9500);
    /* at the kill: 120 acknowledged, 100 committed; at incarnation 2's commit: 135 against 100 */
    cr_assert_eq(npoints, 2, "%d", npoints);
    cr_assert_eq(points[0][1], 20);
    cr_assert_eq(points[1][1], 35);
    cr_assert_eq(h.backlog_max, 35);
    cr_assert_eq(h.restarts, 1);
    cr_assert_eq(h.log_errors, 3);
    cr_assert_eq(h.log_warnings, 4);
    /* Spark's own account: an executor lost, two tasks retried */
    cr_assert_eq(h.executors_lost, 1);
    cr_assert_eq(h.tasks_lost, 2);
    /* no commit names its offsets: no backlog */
    sql("UPDATE batch SET offsets=NULL");
    sd_health_compute(db, &h, NULL, NULL);
    cr_assert_eq(h.backlog_max, -1);
    cr_assert(strstr(h.why, "backlog"), "%s", h.why);
}

/* A Flink JobManager's lines about the job (flink-job.sh logs): its
 * restarts, completed checkpoints with their duration and size, and the
 * ones that failed */
Test(recovery, health_counts_a_flink_jobs_account) {
    kill_and_restart(20);
    char *log = sd_util_fmt("%s/pipeline-1.stdout.log", dir);
    FILE *f = fopen(log, "w");
    const char *cc = "INFO  org.apache.flink.runtime.checkpoint.CheckpointCoordinator    [] - ";
    fprintf(f, "%sCompleted checkpoint 4 for job 5a89 (9374 bytes, checkpointDuration=34 ms, finalizationTime=0 ms).\n", cc);
    fprintf(f, "%sCompleted checkpoint 5 for job 5a89 (12001 bytes, checkpointDuration=3330 ms, finalizationTime=1 ms).\n", cc);
    fputs("INFO  ExecutionGraph [] - Job streamdrill-dedup-scans (5a89) switched from state RUNNING to RESTARTING.\n"
          "INFO  ExecutionGraph [] - Job streamdrill-dedup-scans (5a89) switched from state RESTARTING to RUNNING.\n"
          "INFO  CheckpointFailureManager [] - Failed to trigger checkpoint for job 5a89 since Checkpoint triggering task "
          "Source: scans (1/1) of job 5a89 is not being executed at the moment.\n"
          "INFO  CheckpointCoordinator [] - Checkpoint 6 of job 5a89 expired before completing.\n", f);
    fclose(f);
    sql("UPDATE incarnation SET log_out='%s' WHERE n=1", log);
    free(log);
    sd_health_t h;
    sd_health_compute(db, &h, NULL, NULL);
    cr_assert_eq(h.job_restarts, 1);
    cr_assert_eq(h.checkpoints_completed, 2);
    cr_assert_eq(h.checkpoints_failed, 2);
    cr_assert_eq(h.checkpoint_max_ms, 3330);
    cr_assert_eq(h.checkpoint_bytes_max, 12001);
}

/* ---- what the harness could read: its own looks at the target bound the
 * figures the rows' write times give ---- */

Test(recovery, rows_stamped_before_they_could_be_read_are_caught_up_by_the_samples) {
    kill_and_restart(20);
    /* stamped 0.4 s after the kill, first counted 20 s after it: a look at
     * 29,800 still counted 100 */
    sql("INSERT INTO sample(t_ms, sink, rows, looked_ms) VALUES(3000, 'target', 100, 2800), (30000, 'target', 120, 29800)");
    int64_t when[2] = {10400, 10400};
    sd_recovery_in_t in = {.newest_seen = newest_seen, .opaque = when, .sink = "target"};
    sd_recovery_t *v;
    compute(&in, &v);
    cr_assert_str_eq(v[0].basis, "samples");
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], 20000, "%lld", (long long)v[0].v[SD_FIG_recovery_s]);
    cr_assert_eq(v[0].caught_ms, 30000);
    free(v);
    /* the same by the commits (no write times): a consumer that commits its
     * offsets (11,500) ahead of its sink's writes */
    when[0] = when[1] = -2;
    compute(&in, &v);
    cr_assert_str_eq(v[0].basis, "samples");
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], 20000);
    free(v);
    /* a look before the stamp (12,200) that counted fewer is no contradiction */
    sql("DELETE FROM sample");
    sql("INSERT INTO sample(t_ms, sink, rows, looked_ms) VALUES(3000, 'target', 100, 2800), (12400, 'target', 120, 12200)");
    when[0] = when[1] = 12345;
    compute(&in, &v);
    cr_assert_str_eq(v[0].basis, "target");
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], 2345);
    free(v);
    /* a sample without its look before (an older run.db): the sample before it is the look */
    sql("DELETE FROM sample");
    sql("INSERT INTO sample(t_ms, sink, rows) VALUES(3000, 'target', 100), (11000, 'target', 110), (30000, 'target', 120)");
    when[0] = when[1] = 10400;
    compute(&in, &v);
    cr_assert_str_eq(v[0].basis, "samples", "the look at 11,000 counted 110 after the stamp");
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], 20000);
    free(v);
}

Test(recovery, a_missing_event_is_never_caught_up_whatever_the_commits_say) {
    kill_and_restart(20);
    int64_t when[2] = {-2, -1}; /* no write times; event 7 not in the target */
    sd_recovery_in_t in = {.newest_seen = newest_seen, .opaque = when, .sink = "target"};
    sd_recovery_t *v;
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_recovery_s], SD_FIG_NEVER, "batch 2's commit covers the offsets, the rows are not there");
    cr_assert(strstr(v[0].why, "never reached the target"), "%s", v[0].why);
    free(v);
}

/* n seqs sent at base + 10 * s, stamped written at w[s] (absolute ms) */
static void obs_make(sd_observe_t *o, sd_stamps_t *st, int n, const int64_t *w) {
    memset(o, 0, sizeof(*o));
    memset(st, 0, sizeof(*st));
    sd_stamps_reserve(st, n);
    o->nseq = n;
    o->base_ms = 1000000;
    o->sent = st;
    o->lat = sd_util_xmalloc(3 * (size_t)n);
    memset(o->lat, 0xff, 3 * (size_t)n);
    for (int s = 0; s < n; s++) {
        sd_stamps_add(st, s);
        sd_stamps_set_once(st, s, (uint32_t)(10 * s));
        uint32_t lat = (uint32_t)(w[s] - o->base_ms - 10 * s);
        o->lat[3 * s] = (uint8_t)lat, o->lat[3 * s + 1] = (uint8_t)(lat >> 8), o->lat[3 * s + 2] = (uint8_t)(lat >> 16);
    }
}

Test(recovery, latency_is_bounded_by_the_harness_looks) {
    sd_observe_t o;
    sd_stamps_t st;
    int64_t w[10];
    const int64_t B = 1000000;
    for (int s = 0; s < 10; s++) w[s] = B + 100 + 10 * s; /* each written 100 ms after it was sent */
    /* the insert-then-commit pipeline: rows 5..9 stamped at 150..190 but
     * first counted at 20,000 (a look at 19,800 counted 5) */
    obs_make(&o, &st, 10, w);
    int64_t t[] = {B + 160, B + 20000}, rows[] = {5, 10}, looked[] = {B + 50, B + 19800};
    sd_observe_bound_t b;
    sd_observe_bound(&o, t, rows, looked, 2, B + 20000, B + 21000, &b);
    cr_assert_eq(b.rows_late, 5);
    cr_assert_eq(b.max_gap_ms, 20000 - 150);
    for (int s = 0; s < 5; s++) cr_assert_eq(sd_observe_latency(&o, s), 100, "row %d was counted in time", s);
    for (int s = 5; s < 10; s++) cr_assert_eq(sd_observe_latency(&o, s), 20000 - 10 * s, "row %d: from the look that counted it", s);
    sd_observe_free(&o);
    sd_stamps_free(&st);
    /* a look before each stamp: the stamps stand */
    obs_make(&o, &st, 10, w);
    int64_t t2[] = {B + 160, B + 400}, rows2[] = {5, 10}, looked2[] = {B + 50, B + 145};
    sd_observe_bound(&o, t2, rows2, looked2, 2, B + 400, B + 500, &b);
    cr_assert_eq(b.rows_late, 0, "rows 5..9 were written after the look at 145");
    cr_assert_eq(sd_observe_latency(&o, 9), 100);
    sd_observe_free(&o);
    sd_stamps_free(&st);
    /* no look counted them: the final read did, after a last look at 300 */
    obs_make(&o, &st, 10, w);
    int64_t t3[] = {B + 160}, rows3[] = {5}, looked3[] = {B + 50};
    sd_observe_bound(&o, t3, rows3, looked3, 1, B + 300, B + 5000, &b);
    cr_assert_eq(b.rows_late, 5);
    cr_assert_eq(sd_observe_latency(&o, 7), 5000 - 70);
    sd_observe_free(&o);
    sd_stamps_free(&st);
    /* rows of one millisecond are in no order: each takes the least rank */
    for (int s = 0; s < 10; s++) w[s] = B + 200;
    obs_make(&o, &st, 10, w);
    int64_t t4[] = {B + 250, B + 9000}, rows4[] = {3, 10}, looked4[] = {B + 100, B + 8800};
    sd_observe_bound(&o, t4, rows4, looked4, 2, B + 9000, B + 9100, &b);
    cr_assert_eq(b.rows_late, 0, "some row of the millisecond was readable at 250");
    sd_observe_free(&o);
    sd_stamps_free(&st);
}

Test(recovery, stamps_that_are_the_inputs_own_are_no_write_times) {
    sd_observe_t o;
    sd_stamps_t st;
    int64_t w[10];
    const int64_t B = 1000000;
    /* every row stamped with its own send time (the input's time copied):
     * no look contradicts a stamp, yet none is a write time; each row's
     * latency is the look that first counted it */
    for (int s = 0; s < 10; s++) w[s] = B + 10 * s;
    obs_make(&o, &st, 10, w);
    int64_t t[] = {B + 50, B + 500}, rows[] = {0, 10}, looked[] = {B + 10, B + 50};
    sd_observe_bound_t b;
    sd_observe_bound(&o, t, rows, looked, 2, B + 500, B + 600, &b);
    cr_assert_eq(b.copied, 10);
    cr_assert_eq(b.timed, 10);
    cr_assert_eq(b.rows_late, 0, "a copied stamp is not a late row: it is no time at all");
    for (int s = 0; s < 10; s++) cr_assert_eq(sd_observe_latency(&o, s), 500 - 10 * s, "row %d: from the look that counted it", s);
    sd_observe_free(&o);
    sd_stamps_free(&st);
    /* 8 of 10 at their send (under the share): the stamps stand */
    for (int s = 0; s < 10; s++) w[s] = B + 10 * s + (s < 2 ? 40 : 0);
    obs_make(&o, &st, 10, w);
    int64_t t2[] = {B + 500}, rows2[] = {10}, looked2[] = {B + 5};
    sd_observe_bound(&o, t2, rows2, looked2, 1, B + 500, B + 600, &b);
    cr_assert_eq(b.copied, 0);
    cr_assert_eq(sd_observe_latency(&o, 5), 0);
    sd_observe_free(&o);
    sd_stamps_free(&st);
}

Test(recovery, latency_percentiles_are_the_nearest_ranks_of_the_sorted_values) {
    kill_and_restart(20);
    /* before the kill, four events with latencies 400, 100, 300, 200 ms
     * (inserted out of order): p50 the 2nd smallest (200), p99 the 3rd of
     * the four by (n-1)*99/100 (300); during, one event of 700 ms */
    static const int lat[4] = {400, 100, 300, 200};
    for (int i = 0; i < 4; i++) sql("INSERT INTO latency VALUES('target', %d, %d, %d)", i, 5000 + i, 5000 + i + lat[i]);
    sql("INSERT INTO latency VALUES('target', 9, 10100, 10800)");
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    compute(&in, &v);
    cr_expect_eq(v[0].v[SD_FIG_latency_p50_before_ms], 200);
    cr_expect_eq(v[0].v[SD_FIG_latency_p99_before_ms], 300);
    cr_expect_eq(v[0].v[SD_FIG_latency_p50_during_ms], 700, "one value is its own median");
    cr_expect_eq(v[0].v[SD_FIG_latency_p99_during_ms], 700);
    free(v);
}

Test(recovery, a_stall_is_detected_when_its_own_sink_grows_before_any_batch) {
    paused(10900, 11000);
    /* another sink grows at 10,050, the judged one at 10,300 (from 4 rows) */
    sql("INSERT INTO sample(t_ms, sink, rows) VALUES(4500, 'target', 4), (10050, 'other', 9), (10300, 'target', 10)");
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    compute(&in, &v);
    cr_assert_eq(v[0].v[SD_FIG_detect_s], 300, "%lld", (long long)v[0].v[SD_FIG_detect_s]);
    free(v);
}

Test(recovery, an_operator_step_counts_only_its_time_inside_the_recovery) {
    kill_and_restart(20); /* recovered 10,000 to 11,500 */
    sql("INSERT INTO step(idx, line, text, started_ms, ended_ms, status) VALUES(6, 23, 'operator sh fix.sh', 10100, 10400, 'ok')");
    sql("INSERT INTO step(idx, line, text, started_ms, ended_ms, status) VALUES(7, 24, 'operator sh late.sh', 11400, 12400, 'ok')");
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    compute(&in, &v);
    cr_assert_eq(v[0].caught_ms, 11500);
    cr_assert_eq(v[0].v[SD_FIG_operator_s], 300 + 100, "300 ms inside, and the 100 ms of the second before 11,500: %lld",
                 (long long)v[0].v[SD_FIG_operator_s]);
    free(v);
}

/* A Kafka Streams application's account (run.db engine): the restore
 * figures span its first rebalance after the fault to the moment every
 * instance alive was RUNNING again, whatever it did before the fault. */
Test(recovery, a_streams_restore_spans_the_rebalance_after_the_fault_until_every_instance_runs) {
    kill_and_restart(20);
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    compute(&in, &v);
    cr_expect_eq(v[0].v[SD_FIG_restore_s], SD_FIG_NA, "no engine account: not an application that restores");
    free(v);
    sql("INSERT INTO engine(incarnation, t_ms, what, from_state, to_state) VALUES(1, 500, 'state', 'CREATED', 'REBALANCING'),"
        " (1, 900, 'state', 'REBALANCING', 'RUNNING'), (2, 12000, 'state', 'CREATED', 'REBALANCING'),"
        " (2, 15000, 'state', 'REBALANCING', 'RUNNING')");
    sql("INSERT INTO engine(incarnation, t_ms, what, records, store) VALUES(1, 800, 'restored', 5, 'seen'),"
        " (2, 14000, 'restored', 500, 'seen'), (2, 14500, 'restored', 300, 'windows')");
    compute(&in, &v);
    cr_expect_eq(v[0].v[SD_FIG_restore_s], 3000, "%lld", (long long)v[0].v[SD_FIG_restore_s]);
    cr_expect_eq(v[0].v[SD_FIG_restored_records], 800, "the first start's restore is not the fault's");
    free(v);
    /* a second instance that was running all along goes through its own
     * rebalance first: the span ends only when both run */
    sql("INSERT INTO incarnation(n, started_ms) VALUES(3, 100)");
    sql("INSERT INTO engine(incarnation, t_ms, what, from_state, to_state) VALUES(3, 600, 'state', 'CREATED', 'REBALANCING'),"
        " (3, 950, 'state', 'REBALANCING', 'RUNNING'), (3, 11000, 'state', 'RUNNING', 'REBALANCING'),"
        " (3, 16000, 'state', 'REBALANCING', 'RUNNING')");
    compute(&in, &v);
    cr_expect_eq(v[0].v[SD_FIG_restore_s], 5000, "%lld", (long long)v[0].v[SD_FIG_restore_s]);
    free(v);
    /* never RUNNING again */
    sql("DELETE FROM engine WHERE t_ms=16000");
    compute(&in, &v);
    cr_expect_eq(v[0].v[SD_FIG_restore_s], SD_FIG_NEVER);
    free(v);
}

Test(recovery, a_pause_without_a_rebalance_restores_nothing) {
    paused(10250, 10600);
    sql("INSERT INTO engine(incarnation, t_ms, what, from_state, to_state) VALUES(1, 500, 'state', 'CREATED', 'REBALANCING'),"
        " (1, 900, 'state', 'REBALANCING', 'RUNNING')");
    sd_recovery_t *v;
    sd_recovery_in_t in = {.sink = "target"};
    compute(&in, &v);
    cr_expect_eq(v[0].v[SD_FIG_restore_s], 0);
    cr_expect_eq(v[0].v[SD_FIG_restored_records], 0);
    free(v);
}

/* The windows' figures come from every event when the observations are at
 * hand, not from the charts' sample: a delayed burst that falls between the
 * sampled events still lifts the p99 during the fault. */
typedef struct {
    int64_t n, sent[30], lat[30];
} lat_all_t;

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t every_event(void *opaque, int64_t from, int64_t to, int64_t *p50, int64_t *p99) {
    const lat_all_t *a = opaque;
    int64_t v[30], n = 0;
    for (int64_t i = 0; i < a->n; i++)
        if (a->sent[i] >= from && a->sent[i] < to) v[n++] = a->lat[i];
    if (!n) return 0;
    qsort(v, (size_t)n, sizeof(int64_t), cmp64);
    *p50 = v[(n - 1) * 50 / 100];
    *p99 = v[(n - 1) * 99 / 100];
    return n;
}

Test(recovery, latency_windows_are_exact_not_the_charts_sample) {
    kill_and_restart(20);
    /* during the fault (10,000 to 11,500) 20 events: every odd one delayed
     * 5 s; the sample keeps every other event, the even ones (50 ms) */
    lat_all_t all = {.n = 20};
    for (int i = 0; i < 20; i++) {
        all.sent[i] = 10100 + i;
        all.lat[i] = i % 2 ? 5000 : 50;
        if (i % 2 == 0) sql("INSERT INTO latency VALUES('target', %d, %lld, %lld)", i, (long long)all.sent[i], (long long)(all.sent[i] + all.lat[i]));
    }
    sd_recovery_t *v;
    sd_recovery_in_t sampled = {.sink = "target"};
    compute(&sampled, &v);
    cr_assert_eq(v[0].v[SD_FIG_latency_p99_during_ms], 50, "the sample alone misses the burst");
    free(v);
    sd_recovery_in_t exact = {.sink = "target", .window_latency = every_event, .opaque = &all};
    compute(&exact, &v);
    cr_expect_eq(v[0].v[SD_FIG_latency_p99_during_ms], 5000, "every event: the burst is the p99, got %lld",
                 (long long)v[0].v[SD_FIG_latency_p99_during_ms]);
    cr_expect_eq(v[0].v[SD_FIG_latency_p50_during_ms], 50);
    cr_expect_eq(v[0].v[SD_FIG_latency_p99_before_ms], SD_FIG_UNMEASURED, "no event was sent before the fault");
    free(v);
}
