/* test_progress.c - the progress layer's decisions on cases whose answer is
 * known: batch events and their offsets (the markers' commit lines), the
 * fitted batch length and a mid-batch fault's aim, where a fault landed
 * (inside a batch, between batches, a graceful stop that finished its
 * batch), what was sent and not yet consumed, the markers' readiness, and
 * caught-up against an embedded cluster's partition ends with a running
 * pipeline process. */
#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker.h"
#include "ledger.h"
#include "progress.h"
#include "run_int.h"
#include "supervisor.h"
#include "util.h"
#include "watchdog.h"

static char dir[] = "/tmp/sd-progress-XXXXXX";
static sd_scenario_t sc;
static sd_run_t R;

static void setup(void) {
    cr_assert_not_null(mkdtemp(dir));
    memset(&sc, 0, sizeof(sc));
    memset(&R, 0, sizeof(R));
    R.sc = &sc;
    R.src.partitions = 2;
    R.src.topic = "scans";
    R.prog.consumed = sd_util_xmalloc(2 * sizeof(int64_t));
    R.prog.consumed[0] = R.prog.consumed[1] = -1;
    R.prog.bs.incarnation = 1;
    R.prog.bs.begun = R.prog.bs.committed = -1;
    R.prog.ops = &sd_progress_markers;
    char *path = sd_util_fmt("%s/run.db", dir);
    char err[256];
    cr_assert_eq(sd_ledger_create(path, &R.ledger, err, sizeof(err)), SD_OK, "%s", err);
    free(path);
}

static void teardown(void) {
    sd_ledger_close(R.ledger);
    free(R.prog.consumed); /* NULL once sd_progress_close freed them */
    free(R.prog.side_consumed);
    sd_util_rmtree(dir, NULL, 0);
}

TestSuite(progress, .init = setup, .fini = teardown, .timeout = 60);

/* run a shell line made by sd_util_fmt, and free it */
static int sh(char *cmd) {
    int rc = system(cmd);
    free(cmd);
    return rc;
}

static void event(sd_sup_ev_type_t type, int inc, int64_t id, int64_t rows, const char *offsets) {
    char err[256];
    cr_assert_eq(sd_progress_batch_event(&R, type, inc, id, rows, offsets, sd_util_wall_ms(), err, sizeof(err)), SD_OK, "%s", err);
}

/* a batch of `rows` rows that took about `ms` (begun ms ago, committed now) */
static void batch(int64_t id, int64_t rows, int64_t ms) {
    event(SD_SUP_EV_BEGIN, R.prog.bs.incarnation, id, rows, NULL);
    R.prog.bs.begun_mono -= ms; /* as though it began ms earlier */
    event(SD_SUP_EV_COMMIT, R.prog.bs.incarnation, id, rows, NULL);
}

Test(progress, a_commit_line_moves_the_consumed_offsets_and_the_batch_state) {
    event(SD_SUP_EV_BEGIN, 1, 4, 3, NULL);
    cr_assert_eq(R.prog.bs.begun, 4);
    cr_assert(R.prog.bs.begun > R.prog.bs.committed, "a begun batch is in flight");
    event(SD_SUP_EV_COMMIT, 1, 4, 3, "0:10,1:12");
    cr_assert_eq(R.prog.consumed[0], 10);
    cr_assert_eq(R.prog.consumed[1], 12);
    cr_assert_eq(R.prog.bs.committed, 4);
    cr_assert_eq(R.prog.bs.commits, 1);
    cr_assert_eq(R.prog.bs.nhist, 1, "a completed batch is history");
    cr_assert_eq(R.prog.bs.hist_rows[0], 3);
    /* a partition the topic does not have, a malformed pair and another
     * topic's offsets (without a second source) change nothing */
    event(SD_SUP_EV_COMMIT, 1, 5, -1, "7:99,x:y,deliveries:0:5,1:15");
    cr_assert_eq(R.prog.consumed[0], 10);
    cr_assert_eq(R.prog.consumed[1], 15);
    /* the second source's offsets, when it has one */
    R.side.topic = "deliveries";
    R.side.partitions = 1;
    R.prog.side_consumed = sd_util_xmalloc(sizeof(int64_t));
    R.prog.side_consumed[0] = -1;
    event(SD_SUP_EV_COMMIT, 1, 6, -1, "deliveries:0:5");
    cr_assert_eq(R.prog.side_consumed[0], 5);
    cr_assert_eq(R.prog.consumed[1], 15);
}

Test(progress, an_older_incarnations_markers_leave_the_newest_batch_state_alone) {
    R.prog.bs.incarnation = 2;
    event(SD_SUP_EV_BEGIN, 1, 9, 5, NULL);
    event(SD_SUP_EV_COMMIT, 1, 9, 5, "0:3");
    cr_assert_eq(R.prog.bs.begun, -1);
    cr_assert_eq(R.prog.bs.committed, -1);
    cr_assert_eq(R.prog.bs.commits, 0);
    cr_assert_eq(R.prog.consumed[0], 3, "the offsets it read are still read");
    cr_assert_eq(R.prog.bs.events, 2, "and recorded");
}

Test(progress, a_batch_without_rows_takes_its_size_from_the_offsets_it_moved) {
    event(SD_SUP_EV_COMMIT, 1, 0, -1, "0:0,1:0");
    event(SD_SUP_EV_BEGIN, 1, 1, -1, NULL);
    event(SD_SUP_EV_COMMIT, 1, 1, -1, "0:20,1:30");
    cr_assert_eq(R.prog.bs.nhist, 1);
    cr_assert_eq(R.prog.bs.hist_rows[0], 50);
}

Test(progress, the_batch_length_is_fitted_on_size_and_duration) {
    cr_assert_eq(sd_progress_expected_batch_ms(&R, 100), 0, "no history, no estimate");
    batch(1, 10, 100);
    batch(2, 20, 200);
    batch(3, 40, 400);
    int64_t e = sd_progress_expected_batch_ms(&R, 30);
    cr_assert(e >= 290 && e <= 320, "30 rows at 10 ms a row: %lld", (long long)e);
    cr_assert(sd_progress_shortest_batch_ms(&R) >= 100 && sd_progress_shortest_batch_ms(&R) < 120);
    /* a fixed cost per batch is the intercept */
    sd_run_batches_t *b = &R.prog.bs;
    b->nhist = 0;
    batch(4, 10, 1100);
    batch(5, 20, 1200);
    e = sd_progress_expected_batch_ms(&R, 40);
    cr_assert(e >= 1390 && e <= 1420, "1 s a batch and 10 ms a row: %lld", (long long)e);
}

Test(progress, a_mid_batch_fault_aims_at_half_the_batch_and_earlier_after_each_miss) {
    cr_assert_eq(sd_progress_aim_ms(&R, 30, 0), 0, "no history: at once");
    batch(1, 10, 100);
    batch(2, 20, 200);
    int64_t aim = sd_progress_aim_ms(&R, 40, 0);
    cr_assert(aim >= 195 && aim <= 215, "half of a 40-row batch of 400 ms: %lld", (long long)aim);
    cr_assert_eq(sd_progress_aim_ms(&R, 40, 1), aim / 2, "a miss halves it");
    cr_assert_eq(sd_progress_aim_ms(&R, 40, 31), 0, "many misses: at once");
    /* size unknown and nothing sent past a commit with offsets: an eighth of the shortest */
    int64_t unknown = sd_progress_aim_ms(&R, -1, 0);
    cr_assert(unknown >= 12 && unknown <= 16, "an eighth of the shortest (100 ms): %lld", (long long)unknown);
    /* size unknown, but the commits name offsets: what was sent past them */
    event(SD_SUP_EV_COMMIT, 1, 2, 20, "0:15,1:15");
    R.sends.messages = 70;
    cr_assert_eq(sd_progress_rows_pending(&R), 40);
    cr_assert_eq(sd_progress_aim_ms(&R, -1, 0), aim);
}

Test(progress, what_was_sent_and_not_consumed) {
    R.sends.messages = 100;
    cr_assert_eq(sd_progress_rows_pending(&R), -1, "no commit with offsets yet: unknown");
    event(SD_SUP_EV_COMMIT, 1, 1, -1, "0:40,1:50");
    cr_assert_eq(sd_progress_rows_pending(&R), 10);
    event(SD_SUP_EV_COMMIT, 1, 2, -1, "0:50,1:50");
    cr_assert_eq(sd_progress_rows_pending(&R), -1, "all consumed: nothing pending");
}

Test(progress, where_a_fault_landed) {
    int finished = -1;
    event(SD_SUP_EV_BEGIN, 1, 7, 10, NULL);
    /* the pipeline died before committing batch 7: inside */
    cr_assert(sd_progress_landed_inside(&R, 7, 0, sd_util_mono_ms(), &finished));
    cr_assert_eq(finished, 0);
    int64_t signal_mono = sd_util_mono_ms();
    usleep(2000);
    event(SD_SUP_EV_COMMIT, 1, 7, 10, NULL);
    /* SIGKILL cannot let it finish: a commit means the kill came after it */
    cr_assert_not(sd_progress_landed_inside(&R, 7, 0, signal_mono, &finished));
    /* SIGTERM that the pipeline answered by finishing the batch: inside */
    cr_assert(sd_progress_landed_inside(&R, 7, 1, signal_mono, &finished));
    cr_assert_eq(finished, 1);
    /* a commit before the graceful signal: the fault came too late */
    cr_assert_not(sd_progress_landed_inside(&R, 7, 1, sd_util_mono_ms() + 1000, &finished));
    /* at a boundary: clean while no later batch began */
    cr_assert(sd_progress_landed_between(&R, 7));
    event(SD_SUP_EV_BEGIN, 1, 8, 10, NULL);
    cr_assert_not(sd_progress_landed_between(&R, 7));
}

Test(progress, markers_readiness) {
    sd_sup_state_t st = {0};
    cr_assert_not(sd_progress_ready(&R, &st, 5000), "no SD-READY, no batch, no broker port known");
    st.ready = 1;
    cr_assert(sd_progress_ready(&R, &st, 0), "SD-READY");
    st.ready = 0;
    event(SD_SUP_EV_BEGIN, 1, 1, 5, NULL);
    cr_assert(sd_progress_ready(&R, &st, 0), "a batch marker");
    /* sink and none: up for two seconds */
    R.prog.ops = &sd_progress_sink;
    cr_assert_not(sd_progress_ready(&R, &st, 500));
    cr_assert(sd_progress_ready(&R, &st, 2500));
}

/* caught up: the committed offsets against the partitions' ends on an
 * embedded cluster, while a pipeline process runs */
Test(progress, caught_up_against_the_partition_ends) {
    char err[512];
    sd_broker_t *b;
    cr_assert_eq(sd_broker_embedded(1, &b, err, sizeof(err)), SD_OK, "%s", err);
    int actual = 0;
    cr_assert_eq(sd_broker_create_topic(b, "scans", 2, 1, &actual, err, sizeof(err)), SD_OK, "%s", err);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", sd_broker_bootstrap(b), NULL, 0);
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    cr_assert_not_null(p, "%s", err);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(rd_kafka_producev(p, RD_KAFKA_V_TOPIC("scans"), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_VALUE("x", 1), RD_KAFKA_V_END), 0);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(rd_kafka_producev(p, RD_KAFKA_V_TOPIC("scans"), RD_KAFKA_V_PARTITION(1), RD_KAFKA_V_VALUE("x", 1), RD_KAFKA_V_END), 0);
    cr_assert_eq(rd_kafka_flush(p, 10000), 0);
    rd_kafka_destroy(p);

    char token[33];
    sd_util_random_hex(token, 16);
    char *argv[] = {"/bin/sh", "-c", "sleep 30", NULL};
    sd_sup_conf_t c = {.argv = argv, .run_dir = dir, .token = token};
    sd_sup_t *s;
    cr_assert_eq(sd_sup_new(&c, &s, err, sizeof(err)), SD_OK, "%s", err);
    R.sup = s;
    R.broker = b;
    char why[512] = "";
    cr_assert_eq(sd_progress_caught_up(&R, why, sizeof(why)), -1, "no pipeline running, no commit: unknown");
    int inc;
    cr_assert_eq(sd_sup_start(s, NULL, 1, &inc, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(sd_progress_caught_up(&R, why, sizeof(why)), -1, "no commit with offsets yet: unknown");
    event(SD_SUP_EV_COMMIT, 1, 1, -1, "0:5,1:2");
    cr_assert_eq(sd_progress_caught_up(&R, why, sizeof(why)), 0);
    cr_assert(strstr(why, "offset 2 of partition 1, which holds 3"), "%s", why);
    event(SD_SUP_EV_COMMIT, 1, 2, -1, "1:3");
    cr_assert_eq(sd_progress_caught_up(&R, why, sizeof(why)), 1, "%s", why);
    /* the second source too, once the commits name its offsets: 4
     * deliveries, 2 committed, is not caught up, whatever the scans say */
    cr_assert_eq(sd_broker_create_topic(b, "scans-deliveries", 1, 1, &actual, err, sizeof(err)), SD_OK, "%s", err);
    conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", sd_broker_bootstrap(b), NULL, 0);
    p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    for (int i = 0; i < 4; i++)
        cr_assert_eq(rd_kafka_producev(p, RD_KAFKA_V_TOPIC("scans-deliveries"), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_VALUE("d", 1),
                                       RD_KAFKA_V_END), 0);
    cr_assert_eq(rd_kafka_flush(p, 10000), 0);
    rd_kafka_destroy(p);
    R.side.topic = "scans-deliveries";
    R.side.partitions = 1;
    R.prog.side_consumed = sd_util_xmalloc(sizeof(int64_t));
    R.prog.side_consumed[0] = -1;
    cr_assert_eq(sd_progress_caught_up(&R, why, sizeof(why)), 1, "no commit names the deliveries: judged by the scans alone");
    event(SD_SUP_EV_COMMIT, 1, 3, -1, "0:5,1:3,scans-deliveries:0:2");
    why[0] = 0;
    cr_assert_eq(sd_progress_caught_up(&R, why, sizeof(why)), 0, "2 of 4 deliveries committed");
    cr_assert(strstr(why, "offset 2 of scans-deliveries partition 0, which holds 4"), "%s", why);
    event(SD_SUP_EV_COMMIT, 1, 4, -1, "0:5,1:3,scans-deliveries:0:4");
    cr_assert_eq(sd_progress_caught_up(&R, why, sizeof(why)), 1, "%s", why);
    R.side.topic = NULL;
    free(R.prog.side_consumed);
    R.prog.side_consumed = NULL;
    R.side.partitions = 0;
    /* the same offsets from a Flink checkpoint prove nothing: unknown */
    sc.progress = SD_PROGRESS_FLINK;
    cr_assert_eq(sd_progress_caught_up(&R, why, sizeof(why)), -1);
    sc.progress = SD_PROGRESS_MARKERS;
    sd_sup_kill_all(s);
    sd_sup_free(s);
    R.sup = NULL;
    sd_watchdog_sweep(token);
    sd_broker_close(b);
    cr_assert_eq(sd_broker_reaped_wait(10000), 0);
}

/* progress flink: a hand-made checkpoint storage, DIR/JOB/chk-N with
 * _metadata once complete */
static void flink_chk(const char *job, int n, int complete) {
    char *d = sd_util_fmt("%s/cp/%s/chk-%d", dir, job, n);
    char *cmd = sd_util_fmt("mkdir -p '%s'", d);
    cr_assert_eq(system(cmd), 0);
    if (complete) {
        char *m = sd_util_fmt("%s/_metadata", d);
        FILE *f = fopen(m, "w");
        cr_assert_not_null(f);
        fputs("x", f);
        fclose(f);
        free(m);
    }
    free(cmd);
    free(d);
}

Test(progress, flink_checkpoints_found_in_every_jobs_folder) {
    char *cp = sd_util_fmt("%s/cp", dir);
    int64_t done, done_ms, trig;
    cr_assert_eq(sd_flink_scan(cp, &done, &done_ms, &trig, NULL, NULL, 0), 0);
    cr_assert_eq(done, -1, "no storage yet");
    cr_assert_eq(trig, -1);
    flink_chk("aaaa", 1, 1);
    flink_chk("aaaa", 2, 0); /* triggered, not complete */
    flink_chk("bbbb", 7, 1); /* a job submitted again numbers on */
    flink_chk("bbbb", 8, 0);
    cr_assert_eq(sh(sd_util_fmt("mkdir -p '%s/cp/bbbb/chk-x' '%s/cp/bbbb/chk-' '%s/cp/bbbb/shared'", dir, dir, dir)), 0);
    cr_assert_eq(sd_flink_scan(cp, &done, &done_ms, &trig, NULL, NULL, 0), 0);
    cr_assert_eq(done, 7);
    cr_assert_eq(trig, 8);
    cr_assert(done_ms > 0 && done_ms <= sd_util_wall_ms());
    free(cp);
}

/* one split as Flink's Kafka split serializer writes it: writeUTF(topic),
 * writeInt(partition), writeLong(offset), writeLong(stopping offset) */
static void flink_split(FILE *f, const char *topic, int p, int64_t off) {
    size_t n = strlen(topic);
    fputc((int)(n >> 8), f);
    fputc((int)(n & 0xff), f);
    fwrite(topic, 1, n, f);
    for (int i = 3; i >= 0; i--) fputc((int)((uint32_t)p >> (8 * i)) & 0xff, f);
    for (int i = 7; i >= 0; i--) fputc((int)((uint64_t)off >> (8 * i)) & 0xff, f);
    for (int i = 7; i >= 0; i--) fputc((int)((uint64_t)INT64_MIN >> (8 * i)) & 0xff, f);
}

Test(progress, flink_offsets_are_the_readers_splits_in_the_metadata) {
    char *m = sd_util_fmt("%s/_metadata", dir);
    FILE *f = fopen(m, "wb");
    cr_assert_not_null(f);
    fputs("\x00\x01header", f);
    for (int p = 0; p < 3; p++) flink_split(f, "scans", p, -2);  /* the enumerator's: earliest, not a position */
    flink_split(f, "scans-out", 0, 999);                          /* another topic whose name begins the same */
    flink_split(f, "scans", 7, 999);                              /* a partition the source does not have */
    flink_split(f, "scans", 0, 56);
    flink_split(f, "scans", 1, 52);
    flink_split(f, "scans-deliveries", 0, 30);
    fclose(f);
    cr_assert_null(sd_flink_offsets(m, "scans", 3, NULL, 0, NULL, 0), "partition 2 has no split yet");
    f = fopen(m, "ab");
    flink_split(f, "scans", 2, 51);
    flink_split(f, "scans-deliveries", 1, 31);
    fclose(f);
    char *o = sd_flink_offsets(m, "scans", 3, NULL, 0, NULL, 0);
    cr_assert_str_eq(o, "0:56,1:52,2:51");
    free(o);
    o = sd_flink_offsets(m, "scans", 3, "scans-deliveries", 2, NULL, 0);
    cr_assert_str_eq(o, "0:56,1:52,2:51,scans-deliveries:0:30,scans-deliveries:1:31");
    free(o);
    o = sd_flink_offsets(m, "scans", 3, "scans-deliveries", 3, NULL, 0);
    cr_assert_str_eq(o, "0:56,1:52,2:51", "the deliveries only when each of their partitions is there");
    free(o);
    cr_assert_null(sd_flink_offsets("/nonexistent/_metadata", "scans", 3, NULL, 0, NULL, 0));
    free(m);
}

/* a batch is a checkpoint interval: it begins when one completes and
 * commits when the next completes; a new incarnation's first interval
 * begins at its first completed checkpoint */
Test(progress, flink_batches_are_checkpoint_intervals) {
    sc.progress = SD_PROGRESS_FLINK;
    sc.checkpoint = sd_util_fmt("%s/cp", dir);
    char err[256];
    cr_assert_eq(sd_progress_open(&R, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert(sd_progress_intervals(&R));
    sd_sup_state_t st = {0};
    flink_chk("aaaa", 1, 0);
    cr_assert_not(sd_progress_ready(&R, &st, 10000), "no checkpoint completed yet");
    cr_assert_not(sd_progress_in_flight(&R));
    flink_chk("aaaa", 1, 1);
    cr_assert(sd_progress_ready(&R, &st, 0), "a checkpoint completed");
    cr_assert_eq(R.prog.bs.committed, 1);
    cr_assert_eq(R.prog.bs.begun, 2, "the next interval is open");
    cr_assert(sd_progress_in_flight(&R));
    /* checkpoint 2 failed (its folder gone), 3 completed: the open interval commits as 3 */
    flink_chk("aaaa", 3, 1);
    sd_progress_poll(&R, err, sizeof(err));
    cr_assert_eq(R.prog.bs.committed, 3);
    cr_assert_eq(R.prog.bs.begun, 4);
    cr_assert(sd_progress_landed_inside(&R, 4, 0, 0, NULL), "interval 4 has not committed");
    cr_assert_not(sd_progress_landed_inside(&R, 3, 0, 0, NULL));
    /* a second incarnation (the job submitted again from checkpoint 3) */
    sd_progress_new_incarnation(&R, 2, R.prog.inc_started_wall);
    sd_progress_poll(&R, err, sizeof(err));
    cr_assert_eq(R.prog.bs.begun, -1, "nothing begins before the new job completes a checkpoint");
    cr_assert_not(sd_progress_ready(&R, &st, 10000));
    flink_chk("bbbb", 4, 1);
    cr_assert(sd_progress_ready(&R, &st, 0));
    cr_assert_eq(R.prog.bs.committed, 4);
    cr_assert_eq(R.prog.bs.begun, 5);
    /* the ledger holds every interval's commit */
    sqlite3 *db = sd_ledger_db(R.ledger);
    sqlite3_stmt *q;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT group_concat(id) FROM (SELECT id FROM batch WHERE commit_ms IS NOT NULL ORDER BY id)", -1,
                                    &q, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(q, 0), "1,3,4");
    sqlite3_finalize(q);
    sd_progress_close(&R);
    free(sc.checkpoint);
}

/* a checkpoint storage that is hostile: a number that would overflow the
 * next interval's id, a _metadata that is a FIFO or a link, each named as
 * damage at once; nothing polls once run.db is closed */
Test(progress, flink_hostile_checkpoints_are_damage, .timeout = 20) {
    sc.progress = SD_PROGRESS_FLINK;
    sc.checkpoint = sd_util_fmt("%s/cp", dir);
    char err[512] = "";
    cr_assert_eq(sd_progress_open(&R, err, sizeof(err)), SD_OK, "%s", err);
    sd_sup_state_t st = {0};
    cr_assert_not(sd_progress_ready(&R, &st, 0));
    flink_chk("aaaa", 1, 1);
    cr_assert(sd_progress_ready(&R, &st, 0));
    /* completed: its id + 1, the next interval's, would overflow */
    cr_assert_eq(sh(sd_util_fmt("mkdir -p '%s/cp/aaaa/chk-9223372036854775807' && echo x > '%s/cp/aaaa/chk-9223372036854775807/_metadata'",
                                    dir, dir)), 0);
    cr_assert_eq(sd_progress_poll(&R, err, sizeof(err)), SD_ERR_CHECKPOINT);
    cr_assert(strstr(err, "chk-9223372036854775807: a checkpoint id past 10^15"), "got %s", err);
    cr_assert_eq(R.prog.bs.begun, 2, "no interval began past the id");
    cr_assert_eq(sh(sd_util_fmt("rm -r '%s/cp/aaaa/chk-9223372036854775807'", dir)), 0);
    /* a completed checkpoint whose _metadata is a FIFO */
    char *d = sd_util_fmt("%s/cp/aaaa/chk-2", dir), *m = sd_util_fmt("%s/_metadata", d);
    cr_assert_eq(sh(sd_util_fmt("mkdir -p '%s'", d)), 0);
    cr_assert_eq(mkfifo(m, 0600), 0);
    err[0] = 0;
    cr_assert_eq(sd_progress_poll(&R, err, sizeof(err)), SD_ERR_CHECKPOINT);
    cr_assert(strstr(err, "chk-2/_metadata: a FIFO, not a regular file"), "got %s", err);
    unlink(m);
    /* a link to /dev/zero, read by the offsets reader directly */
    cr_assert_eq(symlink("/dev/zero", m), 0);
    char why[512] = "";
    cr_assert_null(sd_flink_offsets(m, "scans", 2, NULL, 0, why, sizeof(why)));
    cr_assert(strstr(why, "a symbolic link"), "got %s", why);
    cr_assert_eq(sd_progress_poll(&R, err, sizeof(err)), SD_ERR_CHECKPOINT);
    unlink(m);
    /* once run.db is closed, a poll does nothing */
    flink_chk("aaaa", 5, 1);
    sd_ledger_t *l = R.ledger;
    R.ledger = NULL;
    cr_assert_eq(sd_progress_poll(&R, err, sizeof(err)), SD_OK);
    cr_assert_eq(R.prog.bs.committed, 1, "not polled");
    R.ledger = l;
    sd_progress_close(&R);
    free(sc.checkpoint);
    free(d);
    free(m);
}

/* ---- each a mutant the suite once let live */

Test(progress, a_cost_of_under_a_millisecond_a_row_is_still_a_cost) {
    /* 1 s a batch and half a millisecond a row: the fitted slope is 0.5 */
    batch(1, 100, 1050);
    batch(2, 200, 1100);
    batch(3, 400, 1200);
    int64_t e = sd_progress_expected_batch_ms(&R, 800);
    cr_assert(e >= 1385 && e <= 1420, "1000 + 800 * 0.5: %lld", (long long)e);
}

Test(progress, flink_checkpoint_zero_counts) {
    flink_chk("cccc", 0, 1);
    char *cp = sd_util_fmt("%s/cp", dir);
    int64_t done, done_ms, trig;
    cr_assert_eq(sd_flink_scan(cp, &done, &done_ms, &trig, NULL, NULL, 0), 0);
    cr_assert_eq(done, 0, "chk-0 with its _metadata is a completed checkpoint");
    cr_assert_eq(trig, 0);
    free(cp);
}

/* progress spark on a hand-made checkpoint: CHK/offsets/N and CHK/commits/N */
static void spark_file(const char *chk, const char *sub, int n, const char *text) {
    char *path = sd_util_fmt("%s/%s/%d", chk, sub, n);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
    free(path);
}

static void spark_offsets(const char *chk, int n, int o0, int o1) {
    char text[128];
    snprintf(text, sizeof(text), "v1\n{\"batchWatermarkMs\":0}\n{\"scans\":{\"0\":%d,\"1\":%d}}\n", o0, o1);
    spark_file(chk, "offsets", n, text);
}

static void spark_commit(const char *chk, int n) { spark_file(chk, "commits", n, "v1\n{}\n"); }

/* an empty checkpoint the run's progress spark source will read */
static char *spark_chk(void) {
    char *chk = sd_util_fmt("%s/chk", dir);
    cr_assert_eq(sh(sd_util_fmt("mkdir -p %s/offsets %s/commits", chk, chk)), 0);
    sc.checkpoint = chk;
    R.prog.ops = &sd_progress_spark;
    return chk;
}

static void spark_open(void) {
    char err[256] = "";
    cr_assert_eq(sd_progress_spark.open(&R, &R.prog.source, err, sizeof(err)), SD_OK, "%s", err);
}

static void spark_poll(void) {
    char err[256] = "";
    cr_assert_eq(sd_progress_spark.poll(&R, err, sizeof(err)), SD_OK, "%s", err);
}

static void spark_done(char *chk) {
    sd_progress_spark.close(R.prog.source);
    R.prog.source = NULL;
    sc.checkpoint = NULL;
    free(chk);
}

/* progress spark batches=real-time on a hand-made checkpoint: interval N
 * begins at the commit of N-1, its size not known until its offsets/N */
Test(progress, spark_real_time_intervals_begin_at_the_previous_commit_with_no_size) {
    char *chk = spark_chk();
    spark_offsets(chk, 0, 4, 6);
    spark_commit(chk, 0);
    sc.checkpoint = chk;
    sc.spark_realtime = 1;
    R.prog.ops = &sd_progress_spark;
    R.prog.inc_started_wall = sd_util_wall_ms() - 60000;
    spark_open();
    spark_poll();
    cr_expect_eq(R.prog.bs.begun, 1, "interval 1 runs from the commit of 0");
    cr_expect_eq(R.prog.bs.begun_rows, -1, "its size is not known until Spark writes offsets/1: %lld", (long long)R.prog.bs.begun_rows);
    cr_expect_eq(R.prog.bs.committed, -1, "commits/0 was there when the incarnation began: none of its own yet");
    spark_done(chk);
}

/* progress flink: checkpoints the storage held before the pipeline started
 * are where it resumes from, not commits of its own */
Test(progress, flink_checkpoints_from_before_the_incarnation_are_no_commit_of_it) {
    flink_chk("old", 5, 1);
    char *cp = sd_util_fmt("%s/cp", dir);
    sc.checkpoint = cp;
    R.prog.ops = &sd_progress_flink;
    char err[512] = "";
    cr_assert_eq(sd_progress_flink.open(&R, &R.prog.source, err, sizeof(err)), SD_OK, "%s", err);
    sd_err_t e = sd_progress_flink.poll(&R, err, sizeof(err));
    cr_expect_eq(R.prog.bs.committed, -1, "chk-5 was there before incarnation 1 (poll: %d %s)", e, err);
    cr_expect_eq(R.prog.bs.commits, 0);
    flink_chk("old", 6, 1);
    e = sd_progress_flink.poll(&R, err, sizeof(err));
    cr_expect_eq(R.prog.bs.committed, 6, "chk-6 completed in incarnation 1 (poll: %d %s)", e, err);
    sd_progress_flink.close(R.prog.source);
    R.prog.source = NULL;
    sc.checkpoint = NULL;
    free(cp);
}

/* progress spark: the planned batches' ends the late rule reads, through the source */
Test(progress, spark_batch_ends_through_the_source) {
    char *chk = spark_chk();
    spark_offsets(chk, 3, 4, 6);
    spark_offsets(chk, 4, 9, 7);
    spark_open();
    const int64_t *ids = NULL, *ends = NULL;
    cr_assert_eq(sd_progress_spark.batch_ends(&R, &ids, &ends), 2);
    cr_expect(ids[0] == 3 && ids[1] == 4, "the batches' ids: %lld, %lld", (long long)ids[0], (long long)ids[1]);
    cr_expect(ends[0] == 4 && ends[1] == 6 && ends[2] == 9 && ends[3] == 7, "each batch's partition ends");
    spark_done(chk);
}

Test(progress, the_fitted_batch_length_is_exact_on_two_batches) {
    /* 1 row in 1.001 s, 2 in 1.002 s (set as the history holds them, no
     * clock read): 1 s a batch and 1 ms a row, so 801 rows take 1.801 s */
    sd_run_batches_t *b = &R.prog.bs;
    b->nhist = 2;
    b->hist_rows[0] = 1, b->hist_ms[0] = 1001;
    b->hist_rows[1] = 2, b->hist_ms[1] = 1002;
    cr_expect_eq(sd_progress_expected_batch_ms(&R, 801), 1801);
}

/* progress spark: a batch planned before the incarnation started is its
 * predecessor's, run again: it begins with the incarnation */
Test(progress, spark_a_batch_planned_before_the_incarnation_begins_with_it) {
    char *chk = spark_chk();
    spark_offsets(chk, 0, 4, 6);
    R.prog.inc_started_wall = sd_util_wall_ms() + 60000; /* the file is older than the incarnation */
    spark_open();
    spark_poll();
    cr_expect_eq(R.prog.bs.begun, 0);
    cr_expect_eq(R.prog.bs.begun_with_incarnation, 1, "offsets/0 was planned before incarnation 1 started");
    /* a batch this incarnation planned itself */
    R.prog.inc_started_wall = sd_util_wall_ms() - 60000;
    spark_offsets(chk, 1, 8, 9);
    spark_poll();
    cr_expect_eq(R.prog.bs.begun, 1);
    cr_expect_eq(R.prog.bs.begun_with_incarnation, 0);
    spark_done(chk);
}

Test(progress, flink_a_metadata_file_that_cannot_be_read_safely_is_named_first) {
    flink_chk("job", 1, 0);
    char *meta = sd_util_fmt("%s/cp/job/chk-1/_metadata", dir);
    cr_assert_eq(mkfifo(meta, 0644), 0);
    char why[512] = "";
    char *text = sd_flink_offsets(meta, "scans", 2, NULL, 0, why, sizeof(why));
    cr_expect_null(text);
    char *want = sd_util_fmt("Flink checkpoint %s: ", meta);
    cr_expect(!strncmp(why, want, strlen(want)), "the file first, then why: %s", why);
    free(want);
    free(text);
    free(meta);
}

Test(progress, flink_the_newest_of_many_checkpoints_and_its_metadata) {
    for (int i = 1; i <= 24; i++) flink_chk("many", i, 1);
    char *cp = sd_util_fmt("%s/cp", dir);
    int64_t done, done_ms, trig;
    char *meta = NULL, why[256];
    cr_assert_eq(sd_flink_scan(cp, &done, &done_ms, &trig, &meta, why, sizeof(why)), 0);
    cr_expect_eq(done, 24, "every checkpoint of the job looked at, whatever order the folder lists them in");
    cr_assert_not_null(meta);
    cr_expect(strstr(meta, "/chk-24/_metadata") != NULL, "%s", meta);
    free(meta);
    free(cp);
}

Test(progress, a_commit_from_no_offsets_counts_every_row_it_read) {
    event(SD_SUP_EV_BEGIN, 1, 1, -1, NULL);
    event(SD_SUP_EV_COMMIT, 1, 1, -1, "0:10,1:12");
    cr_assert_eq(R.prog.bs.nhist, 1);
    cr_expect_eq(R.prog.bs.hist_rows[0], 22, "offsets 0 to 10 and 0 to 12: %lld rows", (long long)R.prog.bs.hist_rows[0]);
}

/* progress spark: batches committed since the last poll are not begun again */
Test(progress, spark_a_batch_committed_between_two_polls_does_not_begin) {
    char *chk = spark_chk();
    for (int i = 0; i <= 2; i++) {
        spark_offsets(chk, i, i + 1, i + 1);
        spark_commit(chk, i);
    }
    R.prog.inc_started_wall = sd_util_wall_ms() - 60000;
    spark_open();
    spark_poll(); /* the incarnation starts at commit 2 */
    /* between two polls: batch 3 planned and committed, batch 4 planned */
    spark_offsets(chk, 3, 5, 5);
    spark_commit(chk, 3);
    spark_offsets(chk, 4, 7, 7);
    spark_poll();
    cr_expect_eq(R.prog.bs.begun, 4);
    cr_expect_eq(R.prog.bs.committed, 3);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(sd_ledger_db(R.ledger), "SELECT count(*) FROM batch WHERE id=3 AND begin_ms IS NOT NULL", -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_expect_eq(sqlite3_column_int(st, 0), 0, "batch 3 was committed when it was first seen: no begin of it");
    sqlite3_finalize(st);
    spark_done(chk);
}

/* Spark's account of a batch: the source offsets it read, each partition
 * [startOffset, endOffset), whether Spark wrote them as objects or as
 * their JSON text; a report naming another topic only reads nothing here */
Test(progress, spark_account_ranges_read_the_source_offsets) {
    sd_offset_range_t *v = NULL;
    const char *objects = "{\"sources\":[{\"startOffset\":{\"scans\":{\"0\":3,\"1\":5}},\"endOffset\":{\"scans\":{\"0\":10,\"1\":7}}}]}";
    cr_assert_eq(sd_progress_spark_ranges(&R, objects, &v), 2);
    int p0 = v[0].partition == 0 ? 0 : 1;
    cr_expect_eq(v[p0].begin, 3);
    cr_expect_eq(v[p0].end, 10);
    cr_expect_eq(v[1 - p0].partition, 1);
    cr_expect_eq(v[1 - p0].begin, 5);
    cr_expect_eq(v[1 - p0].end, 7);
    free(v);
    /* text offsets, and the first batch (no startOffset: from 0) */
    const char *text = "{\"sources\":[{\"endOffset\":\"{\\\"scans\\\":{\\\"0\\\":4}}\"}]}";
    cr_assert_eq(sd_progress_spark_ranges(&R, text, &v), 1);
    cr_expect_eq(v[0].partition, 0);
    cr_expect_eq(v[0].begin, 0);
    cr_expect_eq(v[0].end, 4);
    free(v);
    const char *other = "{\"sources\":[{\"startOffset\":{\"orders\":{\"0\":0}},\"endOffset\":{\"orders\":{\"0\":9}}}]}";
    cr_expect_eq(sd_progress_spark_ranges(&R, other, &v), -1, "a report that does not name the source");
    free(v);
    cr_expect_eq(sd_progress_spark_ranges(&R, "not json", &v), -1);
    free(v);
}
