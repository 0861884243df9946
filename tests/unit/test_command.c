/* test_command.c - the helper-command runner (command.c) that sink commands
 * and the Delta reader use, on commands whose behaviour is known: output
 * and stdin, an exit code, exec failing, a command that closed its output
 * and lingers (the timeout covers the wait for its exit), endless output
 * (capped), a stop request (the harness's SIGINT), and the process group
 * killed with whatever the command left in it. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "command.h"
#include "util.h"

static sd_err_t run(char **argv, const char *in, int64_t timeout_ms, size_t max_out, sd_buf_t *out, sd_cmd_status_t *st,
                    int64_t *took_ms) {
    char err[512];
    sd_buf_init(out);
    int64_t t0 = sd_util_mono_ms();
    sd_err_t e = sd_cmd_run(argv, in, in ? strlen(in) : 0, timeout_ms, max_out, NULL, out, st, err, sizeof(err));
    *took_ms = sd_util_mono_ms() - t0;
    return e;
}

Test(command, output_stdin_and_exit_code) {
    char *cat[] = {"cat", NULL};
    sd_buf_t out;
    sd_cmd_status_t st;
    int64_t took;
    cr_assert_eq(run(cat, "{\"id\":\"a-1\"}\n", 5000, 0, &out, &st, &took), SD_OK);
    cr_expect_eq(st.code, 0);
    cr_expect_eq(out.len, 13);
    cr_expect(!memcmp(out.data, "{\"id\":\"a-1\"}\n", 13));
    sd_buf_free(&out);
    char *fail[] = {"sh", "-c", "echo x; exit 3", NULL};
    cr_assert_eq(run(fail, NULL, 5000, 0, &out, &st, &took), SD_OK);
    cr_expect_eq(st.code, 3);
    cr_expect(!st.timed_out && !st.too_much && !st.interrupted);
    sd_buf_free(&out);
    char *none[] = {"/no/such/program", NULL};
    cr_expect_eq(run(none, NULL, 5000, 0, &out, &st, &took), SD_ERR_SINK, "exec failing is an error naming the program");
    sd_buf_free(&out);
}

Test(command, a_command_that_closed_its_output_ends_at_the_timeout) {
    char *linger[] = {"sh", "-c", "echo row; exec >&-; sleep 30", NULL};
    sd_buf_t out;
    sd_cmd_status_t st;
    int64_t took;
    cr_assert_eq(run(linger, NULL, 700, 0, &out, &st, &took), SD_OK);
    cr_expect(st.timed_out, "killed at the timeout");
    cr_expect_lt(took, 3000, "took %lld ms for a 700 ms timeout", (long long)took);
    cr_expect_eq(out.len, 4, "what it printed before is kept");
    sd_buf_free(&out);
}

Test(command, endless_output_is_capped) {
    char *yes[] = {"yes", "a row of the sink", NULL};
    sd_buf_t out;
    sd_cmd_status_t st;
    int64_t took;
    cr_assert_eq(run(yes, NULL, 20000, 1 << 20, &out, &st, &took), SD_OK);
    cr_expect(st.too_much);
    cr_expect_leq(out.len, (1 << 20) + 65536, "read past the cap by at most one chunk: %zu", out.len);
    char how[128];
    sd_cmd_status_text(&st, 20000, 1 << 20, how, sizeof(how));
    cr_expect(strstr(how, "printed more than 1048576 bytes") != NULL, "%s", how);
    sd_buf_free(&out);
}

static volatile sig_atomic_t stop_flag;
static void *stop_soon(void *arg) {
    (void)arg;
    usleep(300000);
    stop_flag = 1;
    return NULL;
}

Test(command, a_stop_request_kills_a_running_command) {
    stop_flag = 0;
    sd_cmd_set_run(NULL, &stop_flag);
    pthread_t t;
    pthread_create(&t, NULL, stop_soon, NULL);
    char *sleeper[] = {"sleep", "30", NULL};
    sd_buf_t out;
    sd_cmd_status_t st;
    int64_t took;
    cr_assert_eq(run(sleeper, NULL, 60000, 0, &out, &st, &took), SD_OK);
    pthread_join(t, NULL);
    sd_cmd_set_run(NULL, NULL);
    cr_expect(st.interrupted);
    cr_expect_lt(took, 2000, "stopped after %lld ms", (long long)took);
    sd_buf_free(&out);
}

/* running or stopped, not a zombie waiting for its reaper */
static int alive(pid_t pid) {
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

Test(command, its_process_group_dies_with_it_and_it_carries_the_token) {
    sd_cmd_set_run("tok123", NULL);
    char *bg[] = {"sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!; echo $STREAMDRILL_RUN_TOKEN", NULL};
    sd_buf_t out;
    sd_cmd_status_t st;
    int64_t took;
    cr_assert_eq(run(bg, NULL, 5000, 0, &out, &st, &took), SD_OK);
    sd_cmd_set_run(NULL, NULL);
    sd_buf_putc(&out, 0);
    long pid = strtol(out.data, NULL, 10);
    cr_assert_gt(pid, 1);
    cr_expect(strstr(out.data, "tok123") != NULL, "the run's token is in its environment: %s", out.data);
    cr_expect_lt(took, 2000, "the command's own exit ends the run: %lld ms", (long long)took);
    usleep(100000);
    cr_expect(!alive((pid_t)pid), "the command's background child %ld was killed with its group", pid);
    sd_buf_free(&out);
}

/* While a pipeline runs, the supervisor reaps every child of the harness:
 * a command's exit status taken that way must still reach its waiter, and
 * a failing command must never read as a success. */
static volatile int stealing;
static void *steal(void *arg) {
    (void)arg;
    while (stealing) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p > 0) sd_cmd_reaped(p, st);
        usleep(200);
    }
    return NULL;
}

Test(command, an_exit_status_another_waiter_took_reaches_the_command) {
    stealing = 1;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, steal, NULL), 0);
    for (int i = 0; i < 20; i++) {
        char *fail[] = {"/bin/sh", "-c", "sleep 0.02; exit 3", NULL};
        char *ok[] = {"/bin/sh", "-c", "sleep 0.02", NULL};
        sd_buf_t out;
        sd_buf_init(&out);
        sd_cmd_status_t st;
        cr_assert_eq(sd_cmd_run(fail, NULL, 0, 5000, 0, NULL, &out, &st, NULL, 0), SD_OK);
        cr_assert_eq(st.code, 3, "run %d: exit 3 read as %d", i, st.code);
        cr_assert_eq(sd_cmd_run(ok, NULL, 0, 5000, 0, NULL, &out, &st, NULL, 0), SD_OK);
        cr_assert_eq(st.code, 0, "run %d: exit 0 read as %d", i, st.code);
        sd_buf_free(&out);
    }
    stealing = 0;
    pthread_join(t, NULL);
}
