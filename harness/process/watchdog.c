/* watchdog.c - the process that kills the pipeline if the harness dies. */
#include "watchdog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

struct sd_watchdog_s {
    pid_t pid;
    int fd;  /* write end */
};

/* Does /proc/<pid>/environ contain needle (a NAME=VALUE string)? */
static int sd_watchdog_env_has(pid_t pid, const char *needle, size_t nlen) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    static char buf[1 << 17];
    size_t len = 0;
    ssize_t r;
    while (len < sizeof(buf) && (r = read(fd, buf + len, sizeof(buf) - len)) > 0) len += (size_t)r;
    close(fd);
    for (size_t i = 0; i < len;) {
        size_t n = strnlen(buf + i, len - i);
        if (n == nlen && !memcmp(buf + i, needle, nlen)) return 1;
        i += n + 1;
    }
    return 0;
}

static int sd_watchdog_scan(const char *token, int do_kill) {
    char needle[256];
    int nlen = snprintf(needle, sizeof(needle), "STREAMDRILL_RUN_TOKEN=%s", token);
    DIR *d = opendir("/proc");
    if (!d) return 0;
    int found = 0;
    pid_t self = getpid();
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 1 || pid == self) continue;
        if (sd_watchdog_env_has((pid_t)pid, needle, (size_t)nlen)) {
            found++;
            if (do_kill) kill((pid_t)pid, SIGKILL);
        }
    }
    closedir(d);
    return found;
}

int sd_watchdog_sweep(const char *token) {
    int total = 0;
    for (int round = 0; round < 5; round++) {
        int n = sd_watchdog_scan(token, 1);
        total += n;
        if (!n) break;
        sd_util_sleep_ms(20);
    }
    return total;
}

int sd_watchdog_count(const char *token) { return sd_watchdog_scan(token, 0); }

static void sd_watchdog_main(int rfd, const char *token) {
    pid_t groups[4096];
    int ng = 0;
    char line[64];
    size_t len = 0;
    for (;;) {
        char ch;
        ssize_t r = read(rfd, &ch, 1);
        if (r == 1) {
            if (ch == '\n') {
                line[len] = 0;
                len = 0;
                long v = strtol(line + 1, NULL, 10);
                if (line[0] == 'T' && v > 1 && ng < (int)(sizeof(groups) / sizeof(groups[0]))) groups[ng++] = (pid_t)v;
                if (line[0] == 'U')
                    for (int i = 0; i < ng; i++)
                        if (groups[i] == v) groups[i] = 0;
            } else if (len < sizeof(line) - 1) {
                line[len++] = ch;
            }
            continue;
        }
        if (r == -1 && errno == EINTR) continue;
        break; /* EOF: the harness is gone or done */
    }
    for (int i = 0; i < ng; i++)
        if (groups[i] > 1) kill(-groups[i], SIGKILL);
    sd_watchdog_sweep(token);
    _exit(0);
}

sd_err_t sd_watchdog_start(const char *token, sd_watchdog_t **out, char *err, size_t errlen) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) == -1) return sd_err_set(err, errlen, SD_ERR_INTERNAL, "watchdog: pipe: %s", strerror(errno));
    char *tok = sd_util_strdup(token);
    pid_t pid = fork();
    if (pid == -1) {
        close(p[0]);
        close(p[1]);
        free(tok);
        return sd_err_set(err, errlen, SD_ERR_INTERNAL, "watchdog: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        setsid(); /* out of the harness's process group and terminal */
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        /* keep only the pipe: an inherited stdout would make whoever reads
         * the harness's output wait for the watchdog too */
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) { dup2(devnull, 0); dup2(devnull, 1); dup2(devnull, 2); }
        for (int fd = 3; fd < 1024; fd++)
            if (fd != p[0]) close(fd);
        sd_watchdog_main(p[0], tok);
    }
    close(p[0]);
    sd_watchdog_t *wd = sd_util_xcalloc(1, sizeof(*wd));
    wd->pid = pid;
    wd->fd = p[1];
    free(tok);
    *out = wd;
    return SD_OK;
}

static void sd_watchdog_write(sd_watchdog_t *wd, char c, pid_t pgid) {
    if (!wd || wd->fd < 0) return;
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%c%d\n", c, (int)pgid);
    ssize_t w = write(wd->fd, buf, (size_t)n);
    (void)w;
}

void sd_watchdog_track(sd_watchdog_t *wd, pid_t pgid) { sd_watchdog_write(wd, 'T', pgid); }

void sd_watchdog_stop(sd_watchdog_t *wd) {
    if (!wd) return;
    close(wd->fd);
    int st;
    while (waitpid(wd->pid, &st, 0) == -1 && errno == EINTR)
        ;
    free(wd);
}
