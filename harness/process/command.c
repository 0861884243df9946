/* command.c - run a helper command to completion (see command.h). */
#include "command.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char *sd_cmd_token;
static volatile sig_atomic_t *sd_cmd_stop;

void sd_cmd_set_run(const char *token, volatile sig_atomic_t *stop) {
    free(sd_cmd_token);
    sd_cmd_token = token ? sd_util_fmt("STREAMDRILL_RUN_TOKEN=%s", token) : NULL;
    sd_cmd_stop = stop;
}

/* The environment a command gets: ours, with the run's token. */
static char **sd_cmd_env(void) {
    size_t n = 0;
    while (environ[n]) n++;
    char **env = sd_util_xcalloc(n + 2, sizeof(char *));
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!sd_cmd_token || strncmp(environ[i], "STREAMDRILL_RUN_TOKEN=", 22)) env[k++] = environ[i];
    if (sd_cmd_token) env[k++] = sd_cmd_token;
    env[k] = NULL;
    return env;
}

/* The child: its own group, dies with the harness, stdin/stdout on the
 * pipes, stderr to the file, then exec (the errno back on execp). */
static void sd_cmd_child(char *const *argv, char **envp, int in_fd, int out_fd, const char *stderr_path, int exec_fd) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGPIPE, SIG_DFL);
    dup2(in_fd, 0);
    dup2(out_fd, 1);
    int ef = stderr_path ? open(stderr_path, O_WRONLY | O_CREAT | O_APPEND, 0644) : open("/dev/null", O_WRONLY);
    if (ef >= 0) dup2(ef, 2);
    sd_util_child_cloexec(3);
    execvpe(argv[0], argv, envp);
    int e = errno;
    ssize_t w = write(exec_fd, &e, sizeof(e));
    (void)w;
    _exit(127);
}

sd_err_t sd_cmd_run_logged(char *const *argv, int64_t timeout_ms, size_t max_out, const char *log, sd_cmd_status_t *st, int *ok,
                           char *how, size_t hlen, char *err, size_t errlen) {
    sd_buf_t out;
    sd_buf_init(&out);
    sd_err_t e = sd_cmd_run(argv, NULL, 0, timeout_ms, max_out, log, &out, st, err, errlen);
    if (out.len) {
        /* its stdout beside its stderr, in the same log */
        FILE *f = fopen(log, "a");
        if (f) {
            fwrite(out.data, 1, out.len, f);
            fclose(f);
        }
    }
    sd_buf_free(&out);
    if (!e) sd_cmd_status_text(st, timeout_ms, max_out, how, hlen);
    *ok = !e && !st->timed_out && !st->signal && st->code == 0;
    return e;
}

/* Statuses another waiter of this process took (the supervisor reaps every
 * child while a pipeline runs: the harness is a subreaper), kept for the
 * command that waits for them. */
static pthread_mutex_t sd_cmd_reaped_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { pid_t pid; int status; } sd_cmd_reaped_v[64];
static int sd_cmd_reaped_next;

void sd_cmd_reaped(pid_t pid, int status) {
    pthread_mutex_lock(&sd_cmd_reaped_mu);
    sd_cmd_reaped_v[sd_cmd_reaped_next].pid = pid;
    sd_cmd_reaped_v[sd_cmd_reaped_next].status = status;
    sd_cmd_reaped_next = (sd_cmd_reaped_next + 1) % 64;
    pthread_mutex_unlock(&sd_cmd_reaped_mu);
}

static int sd_cmd_take_reaped(pid_t pid, int *status) {
    int found = 0;
    pthread_mutex_lock(&sd_cmd_reaped_mu);
    for (int i = 0; i < 64 && !found; i++)
        if (sd_cmd_reaped_v[i].pid == pid) {
            *status = sd_cmd_reaped_v[i].status;
            sd_cmd_reaped_v[i].pid = 0;
            found = 1;
        }
    pthread_mutex_unlock(&sd_cmd_reaped_mu);
    return found;
}

/* The status of pid when another waiter took it (it records it just after
 * its waitpid, so allow it a moment); unknown after a second: a failure,
 * never a success. */
static int sd_cmd_status_taken(pid_t pid) {
    int ws;
    for (int i = 0; i < 200; i++) {
        if (sd_cmd_take_reaped(pid, &ws)) return ws;
        usleep(5000);
    }
    return W_EXITCODE(255, 0);
}

/* Wait for pid until the deadline (then, or on a stop request, its group
 * is killed first); its wait status. */
static int sd_cmd_reap(pid_t pid, int64_t deadline, sd_cmd_status_t *st) {
    int ws = 0;
    for (;;) {
        pid_t w = waitpid(pid, &ws, WNOHANG);
        if (w == pid) return ws;
        if (w < 0 && errno == ECHILD) return sd_cmd_status_taken(pid);
        if (w < 0 && errno != EINTR) return W_EXITCODE(255, 0);
        if (sd_cmd_stop && *sd_cmd_stop) {
            st->interrupted = 1;
            break;
        }
        if (sd_util_mono_ms() >= deadline) {
            st->timed_out = 1;
            break;
        }
        usleep(5000);
    }
    kill(-pid, SIGKILL);
    for (;;) {
        if (waitpid(pid, &ws, 0) == pid) return ws;
        if (errno == ECHILD) return sd_cmd_status_taken(pid);
        if (errno != EINTR) return W_EXITCODE(255, 0);
    }
}

sd_err_t sd_cmd_run(char *const *argv, const char *in, size_t inlen, int64_t timeout_ms, size_t max_out, const char *stderr_path,
                    sd_buf_t *out, sd_cmd_status_t *st, char *err, size_t errlen) {
    memset(st, 0, sizeof(*st));
    int inp[2], outp[2], execp[2];
    if (pipe2(inp, O_CLOEXEC) == -1) return sd_err_set(err, errlen, SD_ERR_INTERNAL, "pipe: %s", strerror(errno));
    if (pipe2(outp, O_CLOEXEC) == -1) {
        close(inp[0]); close(inp[1]);
        return sd_err_set(err, errlen, SD_ERR_INTERNAL, "pipe: %s", strerror(errno));
    }
    if (pipe2(execp, O_CLOEXEC) == -1) {
        close(inp[0]); close(inp[1]); close(outp[0]); close(outp[1]);
        return sd_err_set(err, errlen, SD_ERR_INTERNAL, "pipe: %s", strerror(errno));
    }
    char **envp = sd_cmd_env();
    pid_t pid = fork();
    if (pid == 0) sd_cmd_child(argv, envp, inp[0], outp[1], stderr_path, execp[1]);
    int fork_errno = errno;
    free(envp);
    close(inp[0]); close(outp[1]); close(execp[1]);
    if (pid < 0) {
        close(inp[1]); close(outp[0]); close(execp[0]);
        return sd_err_set(err, errlen, SD_ERR_INTERNAL, "fork: %s", strerror(fork_errno));
    }
    setpgid(pid, pid);
    int exec_errno = 0;
    ssize_t r;
    while ((r = read(execp[0], &exec_errno, sizeof(exec_errno))) == -1 && errno == EINTR)
        ;
    close(execp[0]);
    int wfd = inp[1];
    fcntl(wfd, F_SETFL, O_NONBLOCK);
    size_t sent = 0;
    if (!in || !inlen || r == sizeof(exec_errno)) { close(wfd); wfd = -1; }
    int64_t deadline = sd_util_mono_ms() + timeout_ms;
    char chunk[65536];
    int rfd = outp[0];
    while (rfd >= 0) {
        struct pollfd p[2];
        int np = 0;
        p[np++] = (struct pollfd){.fd = rfd, .events = POLLIN};
        if (wfd >= 0) p[np++] = (struct pollfd){.fd = wfd, .events = POLLOUT};
        int64_t left = deadline - sd_util_mono_ms();
        if (left <= 0 || (sd_cmd_stop && *sd_cmd_stop)) {
            if (left <= 0) st->timed_out = 1;
            else st->interrupted = 1;
            kill(-pid, SIGKILL);
            break;
        }
        int n = poll(p, (nfds_t)np, left > 100 ? 100 : (int)left);
        if (n < 0 && errno != EINTR) break;
        if (n <= 0) continue;
        if (np > 1 && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t w = write(wfd, in + sent, inlen - sent);
            if (w > 0) sent += (size_t)w;
            if ((w < 0 && errno != EAGAIN && errno != EINTR) || sent == inlen) {
                close(wfd);
                wfd = -1;
            }
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t got = read(rfd, chunk, sizeof(chunk));
            if (got > 0) sd_buf_append(out, chunk, (size_t)got);
            else if (got == 0 || (errno != EINTR && errno != EAGAIN)) rfd = -1;
            if (max_out && out->len > max_out) {
                st->too_much = 1;
                kill(-pid, SIGKILL);
                break;
            }
        }
    }
    if (wfd >= 0) close(wfd);
    close(outp[0]);
    int ws = sd_cmd_reap(pid, deadline, st);
    kill(-pid, SIGKILL); /* anything it left behind in its group */
    if (r == sizeof(exec_errno))
        return sd_err_set(err, errlen, SD_ERR_SINK, "cannot run %s: %s", argv[0], strerror(exec_errno));
    st->code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    st->signal = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
    return SD_OK;
}

void sd_cmd_status_text(const sd_cmd_status_t *st, int64_t timeout_ms, size_t max_out, char *out, size_t olen) {
    if (st->interrupted) snprintf(out, olen, "stopped: the harness was interrupted (killed)");
    else if (st->too_much) snprintf(out, olen, "printed more than %zu bytes, max-output= (killed)", max_out);
    else if (st->timed_out) snprintf(out, olen, "timed out after %.0fs (killed)", (double)timeout_ms / 1000.0);
    else if (st->signal) snprintf(out, olen, "killed by signal %d", st->signal);
    else snprintf(out, olen, "exit %d", st->code);
}

void sd_cmd_last_line(const char *path, char *out, size_t cap) {
    out[0] = 0;
    if (!path || cap < 2) return;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char buf[4096];
    long at = 0;
    if (fseek(f, 0, SEEK_END) == 0 && (at = ftell(f)) > (long)sizeof(buf) - 1) fseek(f, at - (long)sizeof(buf) + 1, SEEK_SET);
    else fseek(f, 0, SEEK_SET);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) n--;
    size_t start = n;
    while (start && buf[start - 1] != '\n') start--;
    sd_buf_t b;
    sd_buf_init(&b);
    sd_buf_put_printable(&b, buf + start, n - start, cap - 1);
    snprintf(out, cap, "%s", b.data ? b.data : "");
    sd_buf_free(&b);
}
