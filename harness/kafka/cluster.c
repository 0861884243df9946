/* cluster.c - the brokers of a cluster the harness may break (see cluster.h). */
#include "cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "links.h"
#include "util.h"

/* The words of a line: split at blanks, a word in double quotes kept whole
 * (without its quotes). */
static char **sd_cluster_words(char *s, int *n) {
    char **v = NULL;
    int k = 0;
    while (*s) {
        s += strspn(s, " \t");
        if (!*s) break;
        char *w;
        if (*s == '"') {
            w = ++s;
            s += strcspn(s, "\"");
        } else {
            w = s;
            s += strcspn(s, " \t");
        }
        char *end = s;
        if (*s) s++;
        v = sd_util_xrealloc(v, (size_t)(k + 2) * sizeof(*v));
        v[k++] = sd_util_strndup(w, (size_t)(end - w));
        v[k] = NULL;
    }
    *n = k;
    return v;
}

static void sd_cluster_words_free(char **v) {
    for (int i = 0; v && v[i]; i++) free(v[i]);
    free(v);
}

sd_err_t sd_cluster_load(const char *path, sd_cluster_t **out, char *err, size_t errlen) {
    *out = NULL;
    struct stat sb;
    char *file = NULL;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) file = sd_util_fmt("%s/cluster", path);
    else file = sd_util_strdup(path);
    FILE *f = fopen(file, "r");
    if (!f) {
        sd_err_t e = sd_err_set(err, errlen, SD_ERR_USAGE, "--cluster %s: cannot read %s: %s (start a cluster with "
                                "scenarios/env/kafka/kafka.sh cluster DIR)", path, file, strerror(errno));
        free(file);
        return e;
    }
    sd_cluster_t *c = sd_util_xcalloc(1, sizeof(*c));
    c->path = file;
    char line[4096];
    int ln = 0;
    sd_err_t e = SD_OK;
    while (!e && fgets(line, sizeof(line), f)) {
        ln++;
        line[strcspn(line, "\r\n")] = 0;
        char *p = line + strspn(line, " \t");
        if (!*p || *p == '#') continue;
        int n;
        char **w = sd_cluster_words(p, &n);
        if (!strcmp(w[0], "bootstrap") && n == 2) {
            free(c->bootstrap);
            c->bootstrap = sd_util_strdup(w[1]);
        } else if (!strcmp(w[0], "broker") && n == 4) {
            char *end;
            long id = strtol(w[1], &end, 10);
            if (*end || id < 0 || id > 1000000) e = sd_err_set(err, errlen, SD_ERR_USAGE, "%s:%d: expected a broker id, found \"%s\"", file, ln, w[1]);
            else if (c->n >= SD_CLUSTER_MAX) e = sd_err_set(err, errlen, SD_ERR_USAGE, "%s:%d: more than %d brokers", file, ln, SD_CLUSTER_MAX);
            else if (sd_cluster_find(c, (int)id)) e = sd_err_set(err, errlen, SD_ERR_USAGE, "%s:%d: broker %ld is listed twice", file, ln, id);
            else {
                sd_cluster_broker_t *b = &c->b[c->n++];
                b->id = (int)id;
                b->addr = sd_util_strdup(w[2]);
                b->pidfile = sd_util_strdup(w[3]);
            }
        } else if (!strcmp(w[0], "isolate") && n == 2) {
            free(c->cut_path);
            c->cut_path = sd_util_strdup(w[1]);
        } else if (!strcmp(w[0], "start") && n >= 2) {
            sd_cluster_words_free(c->start_argv);
            c->start_argv = sd_util_xcalloc((size_t)n, sizeof(char *));
            for (int i = 1; i < n; i++) c->start_argv[i - 1] = sd_util_strdup(w[i]);
        } else {
            e = sd_err_set(err, errlen, SD_ERR_USAGE, "%s:%d: expected `bootstrap LIST`, `broker ID ADDRESS PIDFILE`, `start PROGRAM ARG...` or `isolate FILE`, "
                           "found \"%.80s\"", file, ln, p);
        }
        sd_cluster_words_free(w);
    }
    fclose(f);
    if (!e && (!c->bootstrap || c->n == 0))
        e = sd_err_set(err, errlen, SD_ERR_USAGE, "%s: %s", file, !c->bootstrap ? "no `bootstrap` line" : "no `broker` line");
    if (e) { sd_cluster_free(c); return e; }
    *out = c;
    return SD_OK;
}

sd_cluster_t *sd_cluster_embedded(int n, const char *bootstrap) {
    sd_cluster_t *c = sd_util_xcalloc(1, sizeof(*c));
    c->path = sd_util_strdup("the embedded cluster");
    c->bootstrap = sd_util_strdup(bootstrap);
    c->embedded = 1;
    for (int i = 0; i < n && i < SD_CLUSTER_MAX; i++) {
        c->b[i].id = i + 1;
        c->b[i].addr = sd_util_strdup(bootstrap);
    }
    c->n = n < SD_CLUSTER_MAX ? n : SD_CLUSTER_MAX;
    return c;
}

void sd_cluster_free(sd_cluster_t *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        if (c->b[i].starting > 0) {
            kill(c->b[i].starting, SIGKILL);
            waitpid(c->b[i].starting, NULL, 0);
        }
        free(c->b[i].addr);
        free(c->b[i].pidfile);
    }
    sd_cluster_words_free(c->start_argv);
    free(c->bootstrap);
    free(c->path);
    free(c->log_dir);
    free(c->cut_path);
    free(c);
}

sd_cluster_broker_t *sd_cluster_find(sd_cluster_t *c, int id) {
    for (int i = 0; c && i < c->n; i++)
        if (c->b[i].id == id) return &c->b[i];
    return NULL;
}

pid_t sd_cluster_pid(const sd_cluster_broker_t *b) {
    if (!b->pidfile) return -1;
    FILE *f = fopen(b->pidfile, "r");
    if (!f) return -1;
    long pid = -1;
    if (fscanf(f, "%ld", &pid) != 1) pid = -1;
    fclose(f);
    if (pid <= 1 || kill((pid_t)pid, 0) != 0) return -1;
    /* a zombie is not running */
    return sd_util_proc_state(pid) == 'Z' ? -1 : (pid_t)pid;
}

sd_err_t sd_cluster_signal(sd_cluster_broker_t *b, int sig, char *err, size_t errlen) {
    pid_t pid = sd_cluster_pid(b);
    if (pid < 0) return sd_err_set(err, errlen, SD_ERR_BROKER, "broker %d: not running (no live pid in %s)", b->id, b->pidfile);
    if (kill(pid, sig) != 0) return sd_err_set(err, errlen, SD_ERR_BROKER, "broker %d: signal %d to pid %ld: %s", b->id, sig, (long)pid, strerror(errno));
    return SD_OK;
}

int sd_cluster_wait_gone(sd_cluster_broker_t *b, pid_t pid, int64_t timeout_ms) {
    (void)b;
    int64_t deadline = sd_util_mono_ms() + timeout_ms;
    for (;;) {
        char state = kill(pid, 0) == 0 ? sd_util_proc_state(pid) : 0;
        if (!state || state == 'Z') return 1;
        if (sd_util_mono_ms() >= deadline) return 0;
        sd_util_sleep_ms(20);
    }
}

sd_err_t sd_cluster_start_begin(sd_cluster_t *c, sd_cluster_broker_t *b, char *err, size_t errlen) {
    if (!c->start_argv || !c->start_argv[0])
        return sd_err_set(err, errlen, SD_ERR_USAGE, "%s: no `start` line: the harness cannot start broker %d again", c->path, b->id);
    if (b->starting > 0) return SD_OK;
    int n = 0;
    while (c->start_argv[n]) n++;
    char **argv = sd_util_xcalloc((size_t)n + 1, sizeof(char *));
    char id[16];
    snprintf(id, sizeof(id), "%d", b->id);
    for (int i = 0; i < n; i++) {
        const char *a = c->start_argv[i], *at = strstr(a, "{id}");
        argv[i] = at ? sd_util_fmt("%.*s%s%s", (int)(at - a), a, id, at + 4) : sd_util_strdup(a);
    }
    char *log = c->log_dir ? sd_util_fmt("%s/broker-%d-start.log", c->log_dir, b->id) : sd_util_strdup("/dev/null");
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* the broker it starts belongs to the cluster, not to the run */
        unsetenv("STREAMDRILL_RUN_TOKEN");
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) dup2(nul, 0);
        if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); }
        execvp(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    sd_err_t e = SD_OK;
    if (pid < 0) e = sd_err_set(err, errlen, SD_ERR_INTERNAL, "broker %d: fork: %s", b->id, strerror(errno));
    else {
        b->starting = pid;
        b->start_began = sd_util_mono_ms();
    }
    for (int i = 0; i < n; i++) free(argv[i]);
    free(argv);
    free(log);
    return e;
}

int sd_cluster_start_poll(sd_cluster_broker_t *b, char *why, size_t wlen) {
    if (b->starting <= 0) return 1;
    int status;
    pid_t w = waitpid(b->starting, &status, WNOHANG);
    if (w == 0) return 0;
    /* the run's supervisor reaps every child of the harness (a subreaper):
     * when it took the status, the command has ended if its pid is gone */
    if (w < 0 && errno == ECHILD && kill(b->starting, 0) == 0) return 0;
    b->starting = 0;
    /* it returns once the broker has started, or kills it: a live pid in
     * the broker's file says which */
    if (sd_cluster_pid(b) > 0 && (w < 0 || (WIFEXITED(status) && WEXITSTATUS(status) == 0))) {
        b->down = 0;
        return 1;
    }
    if (w > 0 && WIFEXITED(status)) snprintf(why, wlen, "its start command exited with %d", WEXITSTATUS(status));
    else if (w > 0) snprintf(why, wlen, "its start command was killed by signal %d", WTERMSIG(status));
    else snprintf(why, wlen, "its start command ended and the broker is not running");
    return -1;
}

sd_err_t sd_cluster_cut(sd_cluster_t *c, int64_t timeout_ms, char *err, size_t errlen) {
    uint32_t mask = 0;
    for (int i = 0; i < c->n; i++)
        if (c->b[i].isolated && c->b[i].id > 0 && c->b[i].id < 32) mask |= 1u << c->b[i].id;
    if (!c->cut_path)
        return sd_err_set(err, errlen, SD_ERR_USAGE, "%s: no `isolate FILE` line: the brokers do not reach each other through links "
                          "the harness can cut (start the cluster with scenarios/env/kafka/kafka.sh cluster)", c->path);
    char ids[128], tmp[4200], done[4200];
    sd_links_ids(mask, ids, sizeof(ids));
    snprintf(tmp, sizeof(tmp), "%s.tmp-%d", c->cut_path, (int)getpid());
    snprintf(done, sizeof(done), "%s.done", c->cut_path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%s\n", ids) < 0 || fclose(f) || rename(tmp, c->cut_path)) {
        sd_err_t e = sd_err_set(err, errlen, SD_ERR_IO, "write %s: %s", c->cut_path, strerror(errno));
        unlink(tmp);
        return e;
    }
    /* the link proxies apply it within 50 ms and say so in FILE.done */
    int64_t until = sd_util_mono_ms() + timeout_ms;
    for (;;) {
        int64_t got = sd_links_read_cut(done);
        if (got == (int64_t)mask) return SD_OK;
        if (sd_util_mono_ms() > until)
            return sd_err_set(err, errlen, SD_ERR_BROKER, "%s: the cluster's link proxies did not apply the cut within %.1f s (%s says "
                              "\"%s\" was asked; is `streamdrill _links` running? its pid is in links.pid beside it)", c->path,
                              (double)timeout_ms / 1000.0, c->cut_path, ids);
        usleep(20 * 1000);
    }
}
