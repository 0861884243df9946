/* test_cluster.c - the description of a cluster whose brokers the harness
 * may break (kafka.sh cluster writes it), and starting a broker again
 * through its start command; the cut that isolates brokers. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "links.h"
#include "util.h"

static char dir[64];

static void setup(void) {
    snprintf(dir, sizeof(dir), "/tmp/sd_cluster_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}
static void teardown(void) { sd_util_rmtree(dir, NULL, 0); }

TestSuite(cluster, .init = setup, .fini = teardown);

static void write_desc(const char *text) {
    char *p = sd_util_fmt("%s/cluster", dir);
    cr_assert_eq(sd_util_write_file(p, text, strlen(text), NULL, 0), SD_OK);
    free(p);
}

Test(cluster, reads_brokers_and_starts_one_again) {
    char *text = sd_util_fmt("# a comment\nbootstrap 127.0.0.1:1,127.0.0.1:2\nbroker 1 127.0.0.1:1 %s/1.pid\nbroker 7 127.0.0.1:2 %s/7.pid\n"
                             "start /bin/sh -c \"sleep 30 & echo $! > %s/{id}.pid\"\n", dir, dir, dir);
    write_desc(text);
    free(text);
    sd_cluster_t *c = NULL;
    char err[512];
    cr_assert_eq(sd_cluster_load(dir, &c, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_str_eq(c->bootstrap, "127.0.0.1:1,127.0.0.1:2");
    cr_assert_eq(c->n, 2);
    cr_assert_eq(c->b[1].id, 7);
    cr_assert_null(sd_cluster_find(c, 2));
    sd_cluster_broker_t *b = sd_cluster_find(c, 7);
    cr_assert_eq(sd_cluster_pid(b), -1, "no pid file: not running");
    cr_assert_eq(sd_cluster_signal(b, SIGKILL, err, sizeof(err)), SD_ERR_BROKER);
    cr_assert(strstr(err, "broker 7: not running"), "%s", err);
    b->down = 1;
    cr_assert_eq(sd_cluster_start_begin(c, b, err, sizeof(err)), SD_OK, "%s", err);
    char why[256] = "";
    int done = 0;
    for (int i = 0; i < 500 && !(done = sd_cluster_start_poll(b, why, sizeof(why))); i++) usleep(10000);
    cr_assert_eq(done, 1, "the start command ended well and the broker runs: %s", why);
    cr_assert_eq(b->down, 0);
    pid_t pid = sd_cluster_pid(b);
    cr_assert_gt(pid, 1, "{id} was replaced: the pid is in 7.pid");
    cr_assert_eq(sd_cluster_signal(b, SIGKILL, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(sd_cluster_wait_gone(b, pid, 5000), 1);
    sd_cluster_free(c);
}

Test(cluster, a_start_that_leaves_no_broker_fails) {
    char *text = sd_util_fmt("bootstrap h:1\nbroker 1 h:1 %s/1.pid\nstart /bin/sh -c \"exit 3\"\n", dir);
    write_desc(text);
    free(text);
    sd_cluster_t *c = NULL;
    cr_assert_eq(sd_cluster_load(dir, &c, NULL, 0), SD_OK);
    sd_cluster_broker_t *b = &c->b[0];
    b->down = 1;
    cr_assert_eq(sd_cluster_start_begin(c, b, NULL, 0), SD_OK);
    char why[256] = "";
    int done = 0;
    for (int i = 0; i < 500 && !(done = sd_cluster_start_poll(b, why, sizeof(why))); i++) usleep(10000);
    cr_assert_eq(done, -1);
    cr_assert_eq(b->down, 1);
    cr_assert(strstr(why, "ended") || strstr(why, "exited with 3"), "%s", why);
    sd_cluster_free(c);
}

Test(cluster, errors_name_the_line) {
    static const struct { const char *text, *want; } bad[] = {
        {"bootstrap a:1\nbroker x a:1 /p\n", "cluster:2: expected a broker id, found \"x\""},
        {"bootstrap a:1\nbroker 1 a:1 /p\nbroker 1 a:2 /q\n", "cluster:3: broker 1 is listed twice"},
        {"bootstrap a:1\nbrokers 1 2 3\n", "cluster:2: expected `bootstrap LIST`"},
        {"broker 1 a:1 /p\n", "no `bootstrap` line"},
        {"bootstrap a:1\n", "no `broker` line"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        write_desc(bad[i].text);
        sd_cluster_t *c = NULL;
        char err[512] = "";
        cr_assert_eq(sd_cluster_load(dir, &c, err, sizeof(err)), SD_ERR_USAGE, "case %zu parsed", i);
        cr_assert(strstr(err, bad[i].want), "expected \"%s\" in: %s", bad[i].want, err);
        cr_assert_null(c);
    }
    sd_cluster_t *c = NULL;
    char err[512];
    char *none = sd_util_fmt("%s/nothing", dir);
    cr_assert_eq(sd_cluster_load(none, &c, err, sizeof(err)), SD_ERR_USAGE);
    cr_assert(strstr(err, "kafka.sh cluster DIR"), "%s", err);
    free(none);
}

/* the cut file the link proxies read (links.h): written whole, and done
 * only when they say so */
static void *links_daemon(void *arg) {
    /* stands in for `streamdrill _links`: applies the cut after 100 ms */
    usleep(100 * 1000);
    char *cut = sd_util_fmt("%s/cut", (const char *)arg), *done = sd_util_fmt("%s/cut.done", (const char *)arg);
    int64_t mask = sd_links_read_cut(cut);
    FILE *f = fopen(done, "w");
    for (int id = 1; id < 32; id++)
        if ((mask >> id) & 1) fprintf(f, "%d ", id);
    fputc('\n', f);
    fclose(f);
    free(cut);
    free(done);
    return NULL;
}

Test(cluster, a_cut_is_written_and_waits_for_the_links) {
    char *text = sd_util_fmt("bootstrap 127.0.0.1:1\nbroker 1 127.0.0.1:1 %s/1.pid\nbroker 3 127.0.0.1:2 %s/3.pid\nisolate %s/cut\n", dir, dir, dir);
    write_desc(text);
    free(text);
    sd_cluster_t *c = NULL;
    char err[512];
    cr_assert_eq(sd_cluster_load(dir, &c, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_not_null(c->cut_path);
    c->b[1].isolated = 1;
    pthread_t t;
    pthread_create(&t, NULL, links_daemon, dir);
    cr_assert_eq(sd_cluster_cut(c, 3000, err, sizeof(err)), SD_OK, "%s", err);
    pthread_join(t, NULL);
    char *cut = sd_util_fmt("%s/cut", dir);
    cr_assert_eq(sd_links_read_cut(cut), (int64_t)1 << 3, "broker 3 and no other is cut off");
    /* no daemon to apply the next one: the cut times out and says where to look */
    c->b[1].isolated = 0;
    cr_assert_eq(sd_cluster_cut(c, 300, err, sizeof(err)), SD_ERR_BROKER);
    cr_assert(strstr(err, "did not apply the cut") && strstr(err, "links.pid"), "%s", err);
    cr_assert_eq(sd_links_read_cut(cut), 0, "the cut file asks for no cut");
    free(cut);
    sd_cluster_free(c);
    /* a cut file with something else than ids is refused by the reader */
    write_desc("1 x\n");
    char *bad = sd_util_fmt("%s/cluster", dir);
    cr_assert_eq(sd_links_read_cut(bad), -1);
    free(bad);
}

Test(cluster, a_cut_needs_an_isolate_line) {
    char *text = sd_util_fmt("bootstrap 127.0.0.1:1\nbroker 1 127.0.0.1:1 %s/1.pid\n", dir);
    write_desc(text);
    free(text);
    sd_cluster_t *c = NULL;
    char err[512];
    cr_assert_eq(sd_cluster_load(dir, &c, err, sizeof(err)), SD_OK, "%s", err);
    c->b[0].isolated = 1;
    cr_assert_eq(sd_cluster_cut(c, 300, err, sizeof(err)), SD_ERR_USAGE);
    cr_assert(strstr(err, "isolate FILE"), "%s", err);
    sd_cluster_free(c);
}
