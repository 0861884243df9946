/* deployed.c - the follower of a pipeline the harness does not fork (see deployed.h). */
#include "deployed.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "command.h"
#include "util.h"

#define SD_DEPLOY_POLL_MS 500
#define SD_DEPLOY_SETTLE_MS 1000
#define SD_DEPLOY_CMD_MS 120000
/* deploy status's exit code for a pipeline that finished its work (a
 * bounded job): it ended by itself, well */
#define SD_DEPLOY_FINISHED 10

char **sd_deployed_argv(const char *exe, char **const argv[SD_DEPLOY__COUNT], const int argc[SD_DEPLOY__COUNT]) {
    int n = 2;
    for (int k = 0; k < SD_DEPLOY__COUNT; k++)
        if (argv[k]) n += 2 + argc[k];
    char **out = sd_util_xcalloc((size_t)n + 1, sizeof(char *));
    int i = 0;
    out[i++] = sd_util_strdup(exe);
    out[i++] = sd_util_strdup("_deployed");
    for (int k = 0; k < SD_DEPLOY__COUNT; k++) {
        if (!argv[k]) continue;
        out[i++] = sd_util_strdup(sd_deploy_words[k]);
        out[i++] = sd_util_fmt("%d", argc[k]);
        for (int a = 0; a < argc[k]; a++) out[i++] = sd_util_strdup(argv[k][a]);
    }
    out[i] = NULL;
    return out;
}

static volatile sig_atomic_t sd_deploy_stop, sd_deploy_kill;

static void sd_deploy_on_signal(int sig) {
    if (sig == SIGUSR1) sd_deploy_kill = 1;
    else sd_deploy_stop = 1;
}

/* A command with "{deployment}" replaced by the deployment's name. */
static char **sd_deploy_subst(char **argv, int argc, const char *name) {
    char **out = sd_util_xcalloc((size_t)argc + 1, sizeof(char *));
    for (int a = 0; a < argc; a++) {
        sd_buf_t b;
        sd_buf_init(&b);
        for (const char *p = argv[a]; *p;) {
            const char *m = strstr(p, "{deployment}");
            if (!m) { sd_buf_append(&b, p, strlen(p)); break; }
            sd_buf_append(&b, p, (size_t)(m - p));
            sd_buf_append(&b, name, strlen(name));
            p = m + 12;
        }
        out[a] = b.data ? sd_buf_steal(&b) : sd_util_strdup("");
    }
    return out;
}

static void sd_deploy_free(char **argv) {
    for (int a = 0; argv && argv[a]; a++) free(argv[a]);
    free(argv);
}

/* Run one of the commands; its stdout (start: kept in out) and stderr go
 * to the follower's stderr, so the incarnation's log shows them. 0 when it
 * ended well, SD_DEPLOY_FINISHED when it exited with that code (status:
 * the pipeline finished its work), 1 otherwise, -1 when it could not run. */
static int sd_deploy_run(char **argv, int argc, const char *name, const char *word, sd_buf_t *out, int quiet) {
    char **a = sd_deploy_subst(argv, argc, name);
    sd_buf_t o;
    sd_buf_init(&o);
    sd_cmd_status_t st;
    char err[512];
    sd_err_t e = sd_cmd_run(a, NULL, 0, SD_DEPLOY_CMD_MS, 1 << 20, "/dev/stderr", &o, &st, err, sizeof(err));
    int ok = !e && !st.timed_out && !st.signal && st.code == 0;
    if (o.len && !quiet) fprintf(stderr, "%.*s%s", (int)o.len, o.data, o.data[o.len - 1] == '\n' ? "" : "\n");
    if (e) fprintf(stderr, "streamdrill: deploy %s: %s\n", word, err);
    else if (!ok && !quiet) {
        char how[128];
        sd_cmd_status_text(&st, SD_DEPLOY_CMD_MS, 1 << 20, how, sizeof(how));
        fprintf(stderr, "streamdrill: deploy %s (%s): %s\n", word, a[0], how);
    } else if (!strcmp(word, "kill") || !strcmp(word, "stop")) {
        /* what was done, for the fault's record (sd_process_kill reads it) */
        fprintf(stderr, "streamdrill: deploy %s ran %s: it ended well (exit code 0)\n", word, a[0]);
    }
    if (out) sd_buf_append(out, o.data ? o.data : "", o.len);
    sd_buf_free(&o);
    sd_deploy_free(a);
    return e ? -1 : ok ? 0 : !st.timed_out && !st.signal && st.code == SD_DEPLOY_FINISHED ? SD_DEPLOY_FINISHED : 1;
}

/* The last non-empty line of text, trimmed: the deployment's name. */
static char *sd_deploy_name(const sd_buf_t *out) {
    char *t = sd_util_strndup(out->data ? out->data : "", out->len);
    char *name = NULL;
    for (char *save = NULL, *l = strtok_r(t, "\r\n", &save); l; l = strtok_r(NULL, "\r\n", &save)) {
        while (*l == ' ' || *l == '\t') l++;
        size_t n = strlen(l);
        while (n && (l[n - 1] == ' ' || l[n - 1] == '\t')) l[--n] = 0;
        if (n) { free(name); name = sd_util_strdup(l); }
    }
    free(t);
    return name ? name : sd_util_strdup("");
}

static pid_t sd_deploy_logs(char **argv, int argc, const char *name) {
    char **a = sd_deploy_subst(argv, argc, name);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGUSR1, SIG_DFL);
        sd_util_child_cloexec(3);
        execvp(a[0], a);
        fprintf(stderr, "streamdrill: deploy logs: exec %s failed\n", a[0]);
        _exit(127);
    }
    sd_deploy_free(a);
    return pid;
}

/* A request (stop, kill) the follower has not acted on yet. */
static int sd_deploy_pending(int stop_sent, int kill_sent) {
    return (sd_deploy_kill && !kill_sent) || (sd_deploy_stop && !stop_sent && !kill_sent);
}

/* Up to ms, cut short by a request not acted on yet. */
static void sd_deploy_sleep(int64_t ms, int stop_sent, int kill_sent) {
    int64_t end = sd_util_mono_ms() + ms;
    while (sd_util_mono_ms() < end && !sd_deploy_pending(stop_sent, kill_sent)) sd_util_sleep_ms(20);
}

int sd_deployed_main(int nargs, char **args) {
    char **cmd[SD_DEPLOY__COUNT] = {0};
    int cnt[SD_DEPLOY__COUNT] = {0};
    for (int i = 0; i + 1 < nargs;) {
        int k = 0;
        while (sd_deploy_words[k] && strcmp(sd_deploy_words[k], args[i])) k++;
        int n = atoi(args[i + 1]);
        if (!sd_deploy_words[k] || n < 1 || i + 2 + n > nargs) {
            fprintf(stderr, "streamdrill _deployed: malformed command lines at \"%s\"\n", args[i]);
            return 2;
        }
        cmd[k] = args + i + 2;
        cnt[k] = n;
        i += 2 + n;
    }
    if (!cmd[SD_DEPLOY_START] || !cmd[SD_DEPLOY_STATUS] || !cmd[SD_DEPLOY_KILL]) {
        fprintf(stderr, "streamdrill _deployed: start, status and kill commands are needed\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = sd_deploy_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    /* the harness gone: the deployment is killed, not left running */
    prctl(PR_SET_PDEATHSIG, SIGUSR1);

    sd_buf_t out;
    sd_buf_init(&out);
    int rc = sd_deploy_run(cmd[SD_DEPLOY_START], cnt[SD_DEPLOY_START], "", "start", &out, 0);
    char *name = sd_deploy_name(&out);
    sd_buf_free(&out);
    if (rc) {
        fprintf(stderr, "streamdrill: deploy start did not end well: the pipeline was not deployed\n");
        free(name);
        return 3;
    }
    fprintf(stderr, "streamdrill: deployed as \"%s\"\n", name);
    pid_t logs = cmd[SD_DEPLOY_LOGS] ? sd_deploy_logs(cmd[SD_DEPLOY_LOGS], cnt[SD_DEPLOY_LOGS], name) : -1;
    int stop_sent = 0, kill_sent = 0, code = 1;
    for (;;) {
        if (sd_deploy_kill && !kill_sent) {
            kill_sent = 1;
            sd_deploy_run(cmd[SD_DEPLOY_KILL], cnt[SD_DEPLOY_KILL], name, "kill", NULL, 0);
        } else if (sd_deploy_stop && !stop_sent) { /* after a kill too: one that left the deployment running */
            stop_sent = 1;
            int k = cmd[SD_DEPLOY_STOP] ? SD_DEPLOY_STOP : SD_DEPLOY_KILL;
            sd_deploy_run(cmd[k], cnt[k], name, sd_deploy_words[k], NULL, 0);
        }
        int st = sd_deploy_run(cmd[SD_DEPLOY_STATUS], cnt[SD_DEPLOY_STATUS], name, "status", NULL, 1);
        if (st < 0) {
            code = 3;
            break;
        }
        if (st == SD_DEPLOY_FINISHED && !kill_sent && !stop_sent) {
            code = 0; /* a bounded job that read its input to the end */
            fprintf(stderr, "streamdrill: deploy status says \"%s\" finished its work\n", name);
            break;
        }
        if (st > 0) {
            /* the follower's own code, for the supervisor: the harness never
             * reports it as the job's (sd_process_kill says what was done) */
            code = stop_sent ? 0 : kill_sent ? 137 : 1; /* a stop after a kill: the kill had not ended it */
            if (!kill_sent && !stop_sent) fprintf(stderr, "streamdrill: deploy status says \"%s\" no longer runs, and nothing asked it to end\n", name);
            else fprintf(stderr, "streamdrill: deploy status says \"%s\" no longer runs, after deploy %s\n", name, kill_sent ? "kill" : "stop");
            break;
        }
        if (logs > 0 && waitpid(logs, NULL, WNOHANG) == logs) {
            fprintf(stderr, "streamdrill: deploy logs ended while the pipeline runs: its markers are no longer followed\n");
            logs = -1;
        }
        sd_deploy_sleep(SD_DEPLOY_POLL_MS, stop_sent, kill_sent);
    }
    /* its last lines: the logs command may deliver them a little late */
    if (logs > 0) {
        sd_util_sleep_ms(SD_DEPLOY_SETTLE_MS);
        kill(logs, SIGTERM);
        waitpid(logs, NULL, 0);
    }
    free(name);
    return code;
}
