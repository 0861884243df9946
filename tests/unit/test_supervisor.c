/* test_supervisor.c - process groups, output capture, markers, exits.
 * The test pipelines are tiny shell scripts: the supervisor execs them
 * directly (no shell of its own in between). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "supervisor.h"
#include "util.h"
#include "watchdog.h"

static char dir[64];
static char token[33];
static void setup(void) {
    snprintf(dir, sizeof(dir), "/tmp/sd_sup_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    sd_util_random_hex(token, 16);
}
static void teardown(void) {
    sd_watchdog_sweep(token);
    sd_util_rmtree(dir, NULL, 0);
}
TestSuite(supervisor, .init = setup, .fini = teardown, .timeout = 60);

static sd_sup_t *sup_for(const char *script) {
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    sd_kvlist_t env = {0};
    sd_kvlist_add(&env, "EXTRA", "yes");
    sd_sup_conf_t c = {.argv = argv, .env = &env, .run_dir = dir, .token = token, .watchdog = NULL};
    sd_sup_t *s;
    char err[256];
    cr_assert_eq(sd_sup_new(&c, &s, err, sizeof(err)), SD_OK, "%s", err);
    sd_kvlist_free(&env);
    return s;
}

static int wait_for(sd_sup_t *s, sd_sup_ev_type_t type, sd_sup_event_t *out, int64_t ms) {
    int64_t deadline = sd_util_mono_ms() + ms;
    while (sd_util_mono_ms() < deadline) {
        sd_sup_event_t ev;
        while (sd_sup_next_event(s, &ev) == 0) {
            if (ev.type == type) { *out = ev; return 0; }
            free(ev.text);
        }
        sd_sup_wait_change(s, 50);
    }
    return -1;
}

Test(supervisor, markers_logs_and_clean_exit) {
    sd_sup_t *s = sup_for("echo SD-READY; echo \"[log] SD-BATCH begin id=4 rows=3\"; sleep 0.2;"
                          " echo \"SD-BATCH commit id=4 rows=3 offsets=0:10,1:12\"; echo oops >&2; echo env=$EXTRA;"
                          " echo token=$STREAMDRILL_RUN_TOKEN inc=$STREAMDRILL_INCARNATION; exit 0");
    int inc;
    char err[256];
    cr_assert_eq(sd_sup_start(s, NULL, 1, &inc, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(inc, 1);
    sd_sup_event_t ev;
    cr_assert_eq(wait_for(s, SD_SUP_EV_BEGIN, &ev, 5000), 0, "no begin marker");
    cr_assert_eq(ev.batch, 4);
    cr_assert_eq(ev.rows, 3);
    cr_assert_eq(wait_for(s, SD_SUP_EV_COMMIT, &ev, 5000), 0, "no commit marker");
    cr_assert_str_eq(ev.text, "0:10,1:12");
    free(ev.text);
    cr_assert_eq(wait_for(s, SD_SUP_EV_EXIT, &ev, 5000), 0, "no exit");
    cr_assert_eq(ev.exit_code, 0);
    cr_assert_str_eq(ev.ended_by, "exit");
    sd_sup_state_t st;
    sd_sup_state(s, &st);
    cr_assert(st.ready && !st.running && st.drained);
    cr_assert_eq(st.commit_batch, 4);
    cr_assert(st.ms_per_row > 0, "the batch took ~200 ms for 3 rows");
    char *tail = sd_sup_tail(s);
    cr_assert(strstr(tail, "oops"), "stderr tail: %s", tail);
    free(tail);
    char *out = NULL;
    char *path = sd_sup_log_path(s, 1, 0);
    cr_assert_eq(sd_util_read_file(path, &out, NULL, NULL, 0), SD_OK);
    cr_assert(strstr(out, "Z env=yes\n"), "log lines carry a timestamp and the scenario's env: %s", out);
    char want[64];
    snprintf(want, sizeof(want), "token=%s inc=1", token);
    cr_assert(strstr(out, want), "expected %s in %s", want, out);
    free(out);
    free(path);
    sd_sup_free(s);
}

Test(supervisor, the_error_line_is_kept_past_a_long_dump) {
    /* a JVM's way of dying: the exception, its stack (frames naming
     * exception classes too), then a plan dump far longer than the tail */
    sd_sup_t *s = sup_for("echo 'Exception in thread main org.x.SparkIllegalArgumentException: [STREAMING_REAL_TIME_MODE] not allowed' >&2;"
                          " echo '\tat org.x.Allowlist$.notInAllowlistException(Allowlist.scala:83)' >&2;"
                          " i=0; while [ $i -lt 200 ]; do echo \"   +- ~ScanRelation[key#$i, value#$i] KafkaTable\" >&2; i=$((i+1)); done; exit 1");
    int inc;
    char err[256];
    cr_assert_eq(sd_sup_start(s, NULL, 1, &inc, err, sizeof(err)), SD_OK, "%s", err);
    sd_sup_event_t ev;
    cr_assert_eq(wait_for(s, SD_SUP_EV_EXIT, &ev, 5000), 0, "no exit");
    char *tail = sd_sup_tail(s), *telling = sd_sup_telling(s);
    cr_assert_null(strstr(tail, "STREAMING_REAL_TIME_MODE"), "the dump pushed the error out of the tail");
    cr_assert_not_null(telling);
    cr_assert(strstr(telling, "SparkIllegalArgumentException: [STREAMING_REAL_TIME_MODE] not allowed"), "%s", telling);
    free(tail);
    free(telling);
    sd_sup_free(s);
}

Test(supervisor, exec_failure_is_a_pipeline_error) {
    char *argv[] = {"/nonexistent/pipeline", "--x", NULL};
    sd_sup_conf_t c = {.argv = argv, .run_dir = dir, .token = token};
    sd_sup_t *s;
    char err[256];
    cr_assert_eq(sd_sup_new(&c, &s, err, sizeof(err)), SD_OK);
    int inc;
    cr_assert_eq(sd_sup_start(s, NULL, 1, &inc, err, sizeof(err)), SD_ERR_PIPELINE);
    cr_assert(strstr(err, "/nonexistent/pipeline") && strstr(err, "No such file"), "got %s", err);
    sd_sup_free(s);
}

Test(supervisor, kill_reaches_the_whole_process_group) {
    /* the child starts a grandchild; SIGKILL to the group must take both */
    sd_sup_t *s = sup_for("sleep 300 & echo SD-READY; wait");
    int inc;
    char err[256];
    cr_assert_eq(sd_sup_start(s, NULL, 1, &inc, err, sizeof(err)), SD_OK);
    sd_sup_event_t ev;
    cr_assert_eq(wait_for(s, SD_SUP_EV_READY, &ev, 5000), 0);
    /* the shell forks sleep before it echoes, but sleep's exec may still be
     * under way when the line is read: look until both are seen, 2 s at most */
    int n = 0;
    for (int i = 0; i < 200 && (n = sd_watchdog_count(token)) != 2; i++) sd_util_sleep_ms(10);
    cr_assert_eq(n, 2, "sh and sleep carry the token, found %d", n);
    cr_assert_eq(sd_sup_signal(s, SIGKILL, "kill", err, sizeof(err)), SD_OK);
    cr_assert_eq(sd_sup_wait_exit(s, 5000, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(wait_for(s, SD_SUP_EV_EXIT, &ev, 5000), 0);
    cr_assert_eq(ev.exit_signal, SIGKILL);
    cr_assert_str_eq(ev.ended_by, "kill");
    sd_util_sleep_ms(100);
    cr_assert_eq(sd_watchdog_count(token), 0, "a process of the group survived");
    sd_sup_free(s);
}

Test(supervisor, graceful_stop_escalates) {
    sd_sup_t *s = sup_for("trap '' TERM; echo SD-READY; while true; do sleep 0.05; done");
    int inc;
    char err[256];
    cr_assert_eq(sd_sup_start(s, NULL, 1, &inc, err, sizeof(err)), SD_OK);
    sd_sup_event_t ev;
    cr_assert_eq(wait_for(s, SD_SUP_EV_READY, &ev, 5000), 0);
    int64_t t0 = sd_util_mono_ms();
    cr_assert_eq(sd_sup_stop(s, 300, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_geq(sd_util_mono_ms() - t0, 300, "TERM is ignored, so the stop waits for its grace period");
    sd_sup_state_t st;
    sd_sup_state(s, &st);
    cr_assert_eq(st.exit_signal, SIGKILL);
    sd_sup_free(s);
}

Test(supervisor, watchdog_kills_the_group_when_its_pipe_closes) {
    sd_watchdog_t *wd;
    char err[256];
    cr_assert_eq(sd_watchdog_start(token, &wd, err, sizeof(err)), SD_OK);
    char *argv[] = {"/bin/sh", "-c", "sleep 300 & sleep 300", NULL};
    sd_sup_conf_t c = {.argv = argv, .run_dir = dir, .token = token, .watchdog = wd};
    sd_sup_t *s;
    cr_assert_eq(sd_sup_new(&c, &s, err, sizeof(err)), SD_OK);
    int inc;
    cr_assert_eq(sd_sup_start(s, NULL, 1, &inc, err, sizeof(err)), SD_OK);
    sd_util_sleep_ms(200);
    cr_assert_eq(sd_watchdog_count(token), 3, "sh and two sleeps, found %d", sd_watchdog_count(token));
    sd_watchdog_stop(wd); /* as if the harness had died */
    int64_t deadline = sd_util_mono_ms() + 3000;
    while (sd_watchdog_count(token) && sd_util_mono_ms() < deadline) sd_util_sleep_ms(20);
    cr_assert_eq(sd_watchdog_count(token), 0, "the watchdog left processes behind");
    sd_sup_free(s);
}

/* Two instances of one command run side by side: each has its own state
 * (its incarnation, markers, exit), STREAMDRILL_INSTANCE says which it is,
 * and a signal reaches only the instance in focus. */
Test(supervisor, instances_run_side_by_side_and_a_signal_takes_one) {
    sd_sup_t *s = sup_for("echo SD-READY; echo \"SD-BATCH begin id=$((STREAMDRILL_INSTANCE * 10)) rows=2\";"
                          " echo inst=$STREAMDRILL_INSTANCE inc=$STREAMDRILL_INCARNATION; exec sleep 300");
    int inc1, inc2;
    char err[256];
    cr_assert_eq(sd_sup_start(s, NULL, 1, &inc1, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(sd_sup_start(s, NULL, 2, &inc2, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(inc1, 1);
    cr_assert_eq(inc2, 2, "incarnations are numbered across instances");
    sd_sup_state_t a, b;
    int64_t deadline = sd_util_mono_ms() + 5000;
    do {
        sd_sup_wait_change(s, 50);
        sd_sup_instance_state(s, 1, &a);
        sd_sup_instance_state(s, 2, &b);
    } while ((a.begin_batch < 0 || b.begin_batch < 0) && sd_util_mono_ms() < deadline);
    cr_assert_eq(a.begin_batch, 10, "instance 1's batch, got %lld", (long long)a.begin_batch);
    cr_assert_eq(b.begin_batch, 20, "instance 2's batch, got %lld", (long long)b.begin_batch);
    cr_assert_eq(a.incarnation, 1);
    cr_assert_eq(b.incarnation, 2);
    cr_assert(a.ready && b.ready);
    sd_sup_state_t f;
    sd_sup_state(s, &f);
    cr_assert_eq(f.incarnation, 1, "the focus is instance 1 unless moved");
    cr_assert_eq(sd_sup_focus(s, 2), 1);
    cr_assert_eq(sd_sup_signal(s, SIGKILL, "kill", err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(sd_sup_wait_exit(s, 5000, err, sizeof(err)), SD_OK, "%s", err);
    sd_sup_instance_state(s, 1, &a);
    sd_sup_instance_state(s, 2, &b);
    cr_assert(a.running, "instance 1 was not signalled");
    cr_assert(!b.running && b.exit_signal == SIGKILL);
    int inc3;
    cr_assert_eq(sd_sup_start(s, NULL, 2, &inc3, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(inc3, 3);
    deadline = sd_util_mono_ms() + 5000;
    do {
        sd_sup_wait_change(s, 50);
        sd_sup_instance_state(s, 2, &b);
    } while (b.begin_batch < 0 && sd_util_mono_ms() < deadline);
    cr_assert(b.running && b.incarnation == 3 && b.begin_batch == 20);
    sd_util_sleep_ms(100);
    sd_sup_free(s);
    char *log = sd_util_fmt("%s/logs/pipeline-3.stdout.log", dir);
    char *text = NULL;
    size_t tlen;
    sd_util_read_file(log, &text, &tlen, err, sizeof(err));
    cr_assert(text && strstr(text, "inst=2 inc=3"), "%s", text ? text : "(no log)");
    free(text);
    free(log);
}

/* Kafka Streams' own lines, as its default logging prints them, and lines
 * that only look like them */
Test(supervisor, streams_log_lines_are_its_account) {
    char out[300];
    const char *client = "[main] INFO org.apache.kafka.streams.KafkaStreams - stream-client [app-3f2a-0c1d] State transition from REBALANCING to RUNNING";
    cr_assert_eq(sd_sup_streams_line(client, strlen(client), out, sizeof(out)), 1);
    cr_assert_str_eq(out, "state REBALANCING RUNNING");
    const char *restored = "[app-StreamThread-1] INFO org.apache.kafka.streams.processor.internals.StoreChangelogReader - stream-thread "
                           "[app-StreamThread-1] Finished restoring changelog app-seen-ids-changelog-2 to store seen-ids with a total "
                           "number of 41 records";
    cr_assert_eq(sd_sup_streams_line(restored, strlen(restored), out, sizeof(out)), 1);
    cr_assert_str_eq(out, "restored 41 seen-ids");
    /* a thread's transition is not the application's */
    const char *thread = "stream-thread [app-StreamThread-1] State transition from RUNNING to PARTITIONS_REVOKED";
    cr_assert_eq(sd_sup_streams_line(thread, strlen(thread), out, sizeof(out)), 0);
    /* control characters, a missing count, a cut line: not an account */
    const char *ctl = "stream-client [x] State transition from RUN\x1b[2JNING to ERROR";
    cr_assert_eq(sd_sup_streams_line(ctl, strlen(ctl), out, sizeof(out)), 0);
    const char *nocount = "Finished restoring changelog c-0 to store s with a total number of  records";
    cr_assert_eq(sd_sup_streams_line(nocount, strlen(nocount), out, sizeof(out)), 0);
    const char *cut = "stream-client [x] State transition from REBALANCING to";
    cr_assert_eq(sd_sup_streams_line(cut, strlen(cut), out, sizeof(out)), 0);
    const char *huge = "Finished restoring changelog c-0 to store s with a total number of 123456789012345678901 records";
    cr_assert_eq(sd_sup_streams_line(huge, strlen(huge), out, sizeof(out)), 0);
    /* Kafka's log4j layout: the logger in parentheses at the end */
    const char *log4j = "[2026-12-07 10:00:00,123] INFO stream-client [app-1] State transition from REBALANCING to RUNNING "
                        "(org.apache.kafka.streams.KafkaStreams)";
    cr_assert_eq(sd_sup_streams_line(log4j, strlen(log4j), out, sizeof(out)), 1);
    cr_assert_str_eq(out, "state REBALANCING RUNNING");
    const char *log4jr = "[2026-12-07 10:00:00,456] INFO stream-thread [app-StreamThread-1] Finished restoring changelog c-0 to store s "
                         "with a total number of 7 records (org.apache.kafka.streams.processor.internals.StoreChangelogReader)\r";
    cr_assert_eq(sd_sup_streams_line(log4jr, strlen(log4jr), out, sizeof(out)), 1);
    cr_assert_str_eq(out, "restored 7 s");
}

/* The words alone, outside Kafka Streams' logging layout, are not its
 * account: a wrapper that echoes them sets no restore figure */
Test(supervisor, streams_words_without_its_layout_are_not_its_account) {
    char out[300];
    const char *bare = "stream-client [app-1] State transition from REBALANCING to RUNNING";
    cr_expect_eq(sd_sup_streams_line(bare, strlen(bare), out, sizeof(out)), 0, "no logger");
    const char *echo = "echo: org.apache.kafka.streams.KafkaStreams says stream-client [a] State transition from REBALANCING to RUNNING";
    cr_expect_eq(sd_sup_streams_line(echo, strlen(echo), out, sizeof(out)), 0, "the logger's name, not before the message");
    const char *other = "[main] INFO com.example.Wrapper - stream-client [a] State transition from REBALANCING to RUNNING";
    cr_expect_eq(sd_sup_streams_line(other, strlen(other), out, sizeof(out)), 0, "another logger");
    const char *suffix = "[main] INFO my.org.apache.kafka.streams.KafkaStreams - stream-client [a] State transition from REBALANCING to RUNNING";
    cr_expect_eq(sd_sup_streams_line(suffix, strlen(suffix), out, sizeof(out)), 0, "a logger whose name only ends the same");
    /* Kafka Streams 4's restoring thread, with a timestamp before its layout */
    const char *updater = "2026-12-07T19:03:14.489Z [app-StateUpdater-1] INFO org.apache.kafka.streams.processor.internals.StoreChangelogReader - "
                          "state-updater [app-StateUpdater-1] Finished restoring changelog app-seen-ids-changelog-0 to store seen-ids with a "
                          "total number of 3 records";
    cr_expect_eq(sd_sup_streams_line(updater, strlen(updater), out, sizeof(out)), 1, "the state updater's restore");
    const char *rest = "stream-thread [t] Finished restoring changelog c-0 to store s with a total number of 7 records";
    cr_expect_eq(sd_sup_streams_line(rest, strlen(rest), out, sizeof(out)), 0, "a restore with no logger");
    const char *wrong = "[t] INFO org.apache.kafka.streams.KafkaStreams - stream-thread [t] Finished restoring changelog c-0 to store s "
                        "with a total number of 7 records";
    cr_expect_eq(sd_sup_streams_line(wrong, strlen(wrong), out, sizeof(out)), 0, "a restore by the client's logger");
}
