/* supervisor.c - process groups, output capture, batch markers (see supervisor.h). */
#include "supervisor.h"

#include <dirent.h>
#include <ctype.h>
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

#include "command.h"
#include "util.h"

extern char **environ;

#define SD_SUP_MAX_STREAMS 64
#define SD_SUP_TAIL 4096
#define SD_SUP_LINE_MAX (1u << 20)

typedef struct {
    int fd;
    int inc;
    int inst;      /* its instance, 0-based */
    int is_err;
    FILE *log;
    sd_buf_t partial;
    /* the log keeps its first max/2 bytes, then a line saying how much was
     * cut (written at head_end, rewritten at the close), then the tail: when
     * the part after the line passes max, its last max/2 bytes (from a line's
     * start) are moved up and the rest dropped */
    int64_t logged, head_end, tail_start, cut;
    int cutting;
} sd_stream_t;

#define SD_SUP_CUT_LINE "streamdrill: %20lld bytes of this log were cut here (logs max=%lld keeps its first and last half)\n"

typedef struct sd_sup_evnode_s {
    sd_sup_event_t ev;
    struct sd_sup_evnode_s *next;
} sd_sup_evnode_t;

typedef struct {
    pid_t pid;
    int n;
    int inst;      /* 0-based */
    int exited;
    int64_t exited_mono;
    int status;
    int open_streams;
    char by[16];
    int reported;
} sd_inc_t;

struct sd_sup_s {
    char **argv;
    char **envp;
    char *run_dir;
    char *logdir;
    char *token;
    sd_watchdog_t *wd;
    int64_t log_max;
    int deployed;
    int streams_log; /* conf.streams */

    pthread_t thread;
    int thread_running;
    int wake[2];
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stopping;

    sd_stream_t streams[SD_SUP_MAX_STREAMS];
    int nstreams;
    sd_inc_t *incs;
    int nincs;

    /* each instance's state (its newest incarnation); sd_sup_state() reads
     * the one in focus, with the counters of every instance (`all`:
     * markers, last marker, last output, ms_per_row) filled in */
    struct sd_sup_inst_s {
        sd_sup_state_t st;
        char tail[SD_SUP_TAIL];
        size_t tail_len;
        char telling[1024];  /* sd_sup_telling */
        int telling_inc;
        /* the query's own exception (Spark's StreamingQueryException), the
         * first of the incarnation, and the first cause after it: what a
         * crash is about, whatever shutdown noise follows */
        char query_exc[1024], query_cause[1024];
        int query_inc;
    } inst[SD_SUP_MAX_INSTANCES];
    int focus;           /* 0-based */
    sd_sup_state_t all;  /* only the counters above */
    double row_ms_sum;
    int64_t row_sum;

    sd_sup_evnode_t *head, *tailq;
};

static void sd_sup_push(sd_sup_t *s, const sd_sup_event_t *ev) {
    sd_sup_evnode_t *n = sd_util_xcalloc(1, sizeof(*n));
    n->ev = *ev;
    if (s->tailq) s->tailq->next = n;
    else s->head = n;
    s->tailq = n;
}

static sd_inc_t *sd_sup_inc(sd_sup_t *s, int n) {
    return n >= 1 && n <= s->nincs ? &s->incs[n - 1] : NULL;
}

/* "key=value" lookup inside a marker line. */
static int sd_sup_field(const char *line, const char *key, int64_t *out) {
    size_t kl = strlen(key);
    for (const char *p = line; (p = strstr(p, key)); p++) {
        if ((p == line || p[-1] == ' ') && p[kl] == '=') {
            char *end;
            long long v = strtoll(p + kl + 1, &end, 10);
            if (end != p + kl + 1) { *out = v; return 0; }
        }
    }
    return -1;
}

/* The tail grew past the cap: keep its last half, from a line's start. */
static void sd_sup_log_trim(sd_sup_t *s, sd_stream_t *str) {
    int fd = fileno(str->log);
    int64_t tail_start = str->tail_start;
    int64_t keep = s->log_max / 2, from = str->logged - keep;
    char *buf = malloc((size_t)keep);
    if (!buf) return;
    ssize_t got = pread(fd, buf, (size_t)keep, from);
    if (got <= 0) { free(buf); return; }
    char *nl = memchr(buf, '\n', (size_t)got);
    size_t skip = nl ? (size_t)(nl - buf) + 1 : 0;
    ssize_t w = pwrite(fd, buf + skip, (size_t)got - skip, tail_start);
    free(buf);
    if (w < 0) return;
    str->cut += from + (int64_t)skip - tail_start;
    str->logged = tail_start + w;
    if (ftruncate(fd, str->logged) == 0) fseek(str->log, 0, SEEK_END);
}

/* A line into the stream's log, within the cap. */
static void sd_sup_log_line(sd_sup_t *s, sd_stream_t *str, const char *line, size_t len, int64_t now) {
    char iso[32];
    int64_t n = (int64_t)strlen(sd_util_iso8601(now, iso, sizeof(iso))) + 2 + (int64_t)len;
    if (!str->cutting && str->logged + n > s->log_max / 2) {
        str->cutting = 1;
        str->head_end = str->logged;
        str->logged += fprintf(str->log, SD_SUP_CUT_LINE, 0LL, (long long)s->log_max);
        str->tail_start = str->logged;
    }
    if (fprintf(str->log, "%s %.*s\n", iso, (int)len, line) > 0) str->logged += n;
    fflush(str->log);
    if (str->cutting && str->logged - str->head_end > s->log_max) sd_sup_log_trim(s, str);
}

/* At the close: the cut line says how much was cut. */
static void sd_sup_log_close(sd_sup_t *s, sd_stream_t *str) {
    fflush(str->log);
    if (str->cutting && str->logged - str->head_end > s->log_max / 2 + 200) sd_sup_log_trim(s, str);
    if (str->cutting && str->cut) {
        char line[256];
        int n = snprintf(line, sizeof(line), SD_SUP_CUT_LINE, (long long)str->cut, (long long)s->log_max);
        fflush(str->log);
        ssize_t w = pwrite(fileno(str->log), line, (size_t)n, str->head_end);
        (void)w;
    }
    fclose(str->log);
}

/* A line that states an error: an exception with its message, an "Error:",
 * a "Caused by:"; not a stack frame ("at ..."), which may name an exception
 * class too. */
static int sd_sup_states_error(const char *line, size_t len) {
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
    if (len - i >= 3 && !memcmp(line + i, "at ", 3)) return 0;
    static const char *const says[] = {"Exception: ", "Exception:[", "Error: ", "error: ", "Caused by: ", NULL};
    for (int k = 0; says[k]; k++)
        if (memmem(line + i, len - i, says[k], strlen(says[k]))) return 1;
    return 0;
}

/* One word of a Streams log line: letters, digits, . _ - (at most 127). */
static size_t sd_sup_word(const char *p, const char *end) {
    size_t n = 0;
    while (p + n < end && n < 128 && (isalnum((unsigned char)p[n]) || p[n] == '.' || p[n] == '_' || p[n] == '-')) n++;
    return n < 128 ? n : 0;
}

/* Whether the message holding m was logged by logger, in one of the
 * layouts Kafka Streams' logging uses: "... LOGGER - MSG" (the logger a
 * word of its own before m) or "MSG (LOGGER)" at the line's end. */
static int sd_sup_streams_layout(const char *line, size_t len, const char *m, const char *logger) {
    size_t ln = strlen(logger);
    for (const char *p = line; (p = memmem(p, (size_t)(m - p), logger, ln)) && p + ln + 3 <= m; p++)
        if (!memcmp(p + ln, " - ", 3) && (p == line || p[-1] == ' ' || p[-1] == ']')) return 1;
    while (len && (line[len - 1] == '\r' || line[len - 1] == ' ')) len--;
    return len > ln + 3 && line[len - 1] == ')' && line[len - 2 - ln] == '(' && line[len - 3 - ln] == ' ' &&
           !memcmp(line + len - 1 - ln, logger, ln);
}

int sd_sup_streams_line(const char *line, size_t len, char *out, size_t outlen) {
    const char *end = line + len, *m, *msg;
    static const char from[] = "State transition from ", rest[] = "Finished restoring changelog ";
    if ((msg = memmem(line, len, "stream-client [", 15)) && (m = memmem(line, len, from, sizeof(from) - 1)) && msg < m &&
        sd_sup_streams_layout(line, len, msg, "org.apache.kafka.streams.KafkaStreams")) {
        const char *a = m + sizeof(from) - 1;
        size_t an = sd_sup_word(a, end);
        if (!an || end - (a + an) < 5 || memcmp(a + an, " to ", 4)) return 0;
        const char *b = a + an + 4;
        size_t bn = sd_sup_word(b, end);
        if (!bn) return 0;
        snprintf(out, outlen, "state %.*s %.*s", (int)an, a, (int)bn, b);
        return 1;
    }
    if ((m = memmem(line, len, rest, sizeof(rest) - 1)) &&
        sd_sup_streams_layout(line, len, m, "org.apache.kafka.streams.processor.internals.StoreChangelogReader")) {
        static const char store[] = " to store ", total[] = " with a total number of ";
        const char *t = m + sizeof(rest) - 1;
        t += sd_sup_word(t, end);
        if (end - t < (long)sizeof(store) - 1 || memcmp(t, store, sizeof(store) - 1)) return 0;
        const char *s = t + sizeof(store) - 1;
        size_t sn = sd_sup_word(s, end);
        const char *k = s + sn;
        if (!sn || end - k < (long)sizeof(total) - 1 || memcmp(k, total, sizeof(total) - 1)) return 0;
        k += sizeof(total) - 1;
        size_t kn = 0;
        while (k + kn < end && kn < 18 && isdigit((unsigned char)k[kn])) kn++;
        if (!kn || kn == 18) return 0;
        snprintf(out, outlen, "restored %.*s %.*s", (int)kn, k, (int)sn, s);
        return 1;
    }
    return 0;
}

/* Called with the lock held. */
static void sd_sup_line(sd_sup_t *s, sd_stream_t *str, const char *line, size_t len) {
    int64_t now = sd_util_wall_ms();
    if (str->log) sd_sup_log_line(s, str, line, len, now);
    struct sd_sup_inst_s *in = &s->inst[str->inst];
    sd_sup_state_t *cur = &in->st;
    if (str->is_err && str->inc == cur->incarnation) {
        /* keep the last few KB of stderr for messages */
        if (len + 1 > SD_SUP_TAIL) { line += len - (SD_SUP_TAIL - 1); len = SD_SUP_TAIL - 1; }
        if (in->tail_len + len + 1 > SD_SUP_TAIL) {
            size_t drop = in->tail_len + len + 1 - SD_SUP_TAIL;
            memmove(in->tail, in->tail + drop, in->tail_len - drop);
            in->tail_len -= drop;
        }
        memcpy(in->tail + in->tail_len, line, len);
        in->tail_len += len;
        in->tail[in->tail_len++] = '\n';
        if (sd_sup_states_error(line, len)) {
            snprintf(in->telling, sizeof(in->telling), "%.*s", (int)(len < sizeof(in->telling) ? len : sizeof(in->telling) - 1), line);
            in->telling_inc = str->inc;
        }
        int fresh = in->query_inc != str->inc;
        if (memmem(line, len, "StreamingQueryException", 23) && (fresh || !in->query_exc[0])) {
            snprintf(in->query_exc, sizeof(in->query_exc), "%.*s", (int)(len < sizeof(in->query_exc) ? len : sizeof(in->query_exc) - 1), line);
            in->query_cause[0] = 0;
            in->query_inc = str->inc;
        } else if (!fresh && in->query_exc[0] && !in->query_cause[0] && memmem(line, len, "Caused by: ", 11)) {
            const char *c = memmem(line, len, "Caused by: ", 11) + 11;
            size_t cl = len - (size_t)(c - line);
            snprintf(in->query_cause, sizeof(in->query_cause), "%.*s", (int)(cl < sizeof(in->query_cause) ? cl : sizeof(in->query_cause) - 1), c);
        }
    }
    int64_t mono = sd_util_mono_ms();
    s->all.last_output_mono_ms = mono;
    char *z = sd_util_strndup(line, len), word[300];
    sd_sup_event_t ev = {.incarnation = str->inc, .t_ms = now, .batch = -1, .rows = -1, .state = -1};
    const char *m;
    int current = str->inc == cur->incarnation;
    if ((m = strstr(z, "SD-BATCH "))) {
        const char *rest = m + 9;
        int is_begin = !strncmp(rest, "begin", 5), is_commit = !strncmp(rest, "commit", 6);
        int64_t id;
        if ((is_begin || is_commit) && !sd_sup_field(rest, "id", &id)) {
            int64_t rows = -1;
            sd_sup_field(rest, "rows", &rows);
            ev.batch = id;
            ev.rows = rows;
            s->all.markers++;
            s->all.last_marker_mono_ms = mono;
            if (is_begin) {
                ev.type = SD_SUP_EV_BEGIN;
                if (current) {
                    cur->begin_batch = id;
                    cur->begin_rows = rows;
                    cur->begin_mono_ms = mono;
                }
            } else {
                ev.type = SD_SUP_EV_COMMIT;
                sd_sup_field(rest, "state", &ev.state);
                const char *o = strstr(rest, "offsets=");
                if (o) {
                    o += 8;
                    size_t n = strcspn(o, " \t");
                    ev.text = sd_util_strndup(o, n);
                }
                if (current) {
                    if (cur->begin_batch == id && cur->begin_rows > 0) {
                        s->row_ms_sum += (double)(mono - cur->begin_mono_ms);
                        s->row_sum += cur->begin_rows;
                        s->all.ms_per_row = s->row_ms_sum / (double)s->row_sum;
                    }
                    cur->commit_batch = id;
                    cur->commit_mono_ms = mono;
                }
            }
            sd_sup_push(s, &ev);
        }
    } else if ((m = strstr(z, "SD-PROGRESS "))) {
        ev.type = SD_SUP_EV_PROGRESS;
        ev.text = sd_util_strdup(m + 12);
        sd_sup_push(s, &ev);
    } else if (s->streams_log && sd_sup_streams_line(z, strlen(z), word, sizeof(word))) {
        ev.type = SD_SUP_EV_ENGINE;
        ev.text = sd_util_strdup(word);
        sd_sup_push(s, &ev);
    } else if ((m = strstr(z, "SD-READY"))) {
        ev.type = SD_SUP_EV_READY;
        /* the words after it (query=NAME spark=4.2.0 ...) */
        m += 8;
        while (*m == ' ') m++;
        if (*m) ev.text = sd_util_strdup(m);
        if (current) cur->ready = 1;
        sd_sup_push(s, &ev);
    }
    free(z);
    pthread_cond_broadcast(&s->cond);
}

static void sd_sup_close_stream(sd_sup_t *s, int i) {
    sd_stream_t *str = &s->streams[i];
    if (str->partial.len) sd_sup_line(s, str, str->partial.data, str->partial.len);
    sd_buf_free(&str->partial);
    if (str->log) sd_sup_log_close(s, str);
    close(str->fd);
    sd_inc_t *inc = sd_sup_inc(s, str->inc);
    if (inc) inc->open_streams--;
    s->streams[i] = s->streams[--s->nstreams];
}

/* Push EXIT for incarnations that exited and were drained (lock held). */
static void sd_sup_check_exits(sd_sup_t *s) {
    int64_t now = sd_util_mono_ms();
    for (int i = 0; i < s->nincs; i++) {
        sd_inc_t *inc = &s->incs[i];
        if (!inc->exited || inc->reported) continue;
        if (inc->open_streams > 0 && now - inc->exited_mono < 2000) continue;
        /* a grandchild may hold the pipes open: give up on them after 2s */
        for (int k = s->nstreams - 1; k >= 0; k--)
            if (s->streams[k].inc == inc->n) sd_sup_close_stream(s, k);
        inc->reported = 1;
        sd_sup_event_t ev = {.type = SD_SUP_EV_EXIT, .incarnation = inc->n, .t_ms = sd_util_wall_ms(), .batch = -1, .rows = -1};
        if (WIFEXITED(inc->status)) {
            ev.exit_code = WEXITSTATUS(inc->status);
        } else {
            ev.exit_code = -1;
            ev.exit_signal = WIFSIGNALED(inc->status) ? WTERMSIG(inc->status) : 0;
        }
        snprintf(ev.ended_by, sizeof(ev.ended_by), "%s", inc->by[0] ? inc->by : (WIFEXITED(inc->status) && ev.exit_code == 0) ? "exit" : "crash");
        sd_sup_state_t *cur = &s->inst[inc->inst].st;
        if (inc->n == cur->incarnation) {
            cur->running = 0;
            cur->drained = 1;
            cur->exit_code = ev.exit_code;
            cur->exit_signal = ev.exit_signal;
        }
        sd_sup_push(s, &ev);
        pthread_cond_broadcast(&s->cond);
    }
}

static void *sd_sup_thread(void *arg) {
    sd_sup_t *s = arg;
    char buf[65536];
    for (;;) {
        struct pollfd pfd[SD_SUP_MAX_STREAMS + 1];
        int idx[SD_SUP_MAX_STREAMS + 1];
        pthread_mutex_lock(&s->lock);
        if (s->stopping && s->nstreams == 0) { pthread_mutex_unlock(&s->lock); break; }
        int n = 0;
        pfd[n].fd = s->wake[0];
        pfd[n].events = POLLIN;
        idx[n++] = -1;
        for (int i = 0; i < s->nstreams; i++) {
            pfd[n].fd = s->streams[i].fd;
            pfd[n].events = POLLIN;
            idx[n++] = s->streams[i].fd;
        }
        int stopping = s->stopping;
        pthread_mutex_unlock(&s->lock);
        int r = poll(pfd, (nfds_t)n, 50);
        pthread_mutex_lock(&s->lock);
        if (r > 0) {
            if (pfd[0].revents) {
                char tmp[64];
                while (read(s->wake[0], tmp, sizeof(tmp)) > 0)
                    ;
            }
            for (int k = 1; k < n; k++) {
                if (!pfd[k].revents) continue;
                int si = -1;
                for (int i = 0; i < s->nstreams; i++)
                    if (s->streams[i].fd == idx[k]) si = i;
                if (si < 0) continue;
                sd_stream_t *str = &s->streams[si];
                ssize_t got = read(str->fd, buf, sizeof(buf));
                if (got > 0) {
                    size_t start = 0;
                    for (size_t i = 0; i < (size_t)got; i++) {
                        if (buf[i] != '\n') continue;
                        if (str->partial.len) {
                            sd_buf_append(&str->partial, buf + start, i - start);
                            size_t l = str->partial.len;
                            if (l && str->partial.data[l - 1] == '\r') l--;
                            sd_sup_line(s, str, str->partial.data, l);
                            sd_buf_reset(&str->partial);
                        } else {
                            size_t l = i - start;
                            if (l && buf[start + l - 1] == '\r') l--;
                            sd_sup_line(s, str, buf + start, l);
                        }
                        start = i + 1;
                    }
                    if (start < (size_t)got) sd_buf_append(&str->partial, buf + start, (size_t)got - start);
                    /* a line without end is taken a megabyte at a time */
                    if (str->partial.len > SD_SUP_LINE_MAX) {
                        sd_sup_line(s, str, str->partial.data, str->partial.len);
                        sd_buf_reset(&str->partial);
                    }
                } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                    sd_sup_close_stream(s, si);
                }
            }
        }
        /* reap: our incarnations, and orphans we inherited as subreaper */
        for (;;) {
            int status;
            pid_t pid = waitpid(-1, &status, WNOHANG);
            if (pid <= 0) break;
            int ours = 0;
            for (int i = 0; i < s->nincs; i++)
                if (s->incs[i].pid == pid && !s->incs[i].exited) {
                    s->incs[i].exited = 1;
                    s->incs[i].status = status;
                    s->incs[i].exited_mono = sd_util_mono_ms();
                    ours = 1;
                }
            /* a helper command's: its waiter takes the status from there */
            if (!ours) sd_cmd_reaped(pid, status);
        }
        sd_sup_check_exits(s);
        if (stopping && s->nstreams == 0) { pthread_mutex_unlock(&s->lock); break; }
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

sd_err_t sd_sup_new(const sd_sup_conf_t *conf, sd_sup_t **out, char *err, size_t errlen) {
    sd_sup_t *s = sd_util_xcalloc(1, sizeof(*s));
    int argc = 0;
    while (conf->argv[argc]) argc++;
    s->argv = sd_util_xcalloc((size_t)argc + 1, sizeof(char *));
    for (int i = 0; i < argc; i++) s->argv[i] = sd_util_strdup(conf->argv[i]);
    s->run_dir = sd_util_strdup(conf->run_dir);
    s->logdir = sd_util_fmt("%s/logs", conf->run_dir);
    s->token = sd_util_strdup(conf->token);
    s->wd = conf->watchdog;
    s->log_max = conf->log_max > 0 ? conf->log_max : SD_LOG_MAX_DEFAULT;
    s->deployed = conf->deployed;
    s->streams_log = conf->streams;
    /* environment: ours, then the scenario's, then STREAMDRILL_RUN_TOKEN */
    int ne = 0;
    while (environ[ne]) ne++;
    int extra = conf->env ? conf->env->n : 0;
    s->envp = sd_util_xcalloc((size_t)(ne + extra + 5), sizeof(char *));
    int k = 0;
    for (int i = 0; i < ne; i++) {
        if (!strncmp(environ[i], "STREAMDRILL_RUN_TOKEN=", 22) || !strncmp(environ[i], "STREAMDRILL_INCARNATION=", 24) ||
            !strncmp(environ[i], "STREAMDRILL_INSTANCE=", 21))
            continue;
        int overridden = 0;
        for (int j = 0; j < extra; j++) {
            size_t kl = strlen(conf->env->v[j].key);
            if (!strncmp(environ[i], conf->env->v[j].key, kl) && environ[i][kl] == '=') overridden = 1;
        }
        if (!overridden) s->envp[k++] = sd_util_strdup(environ[i]);
    }
    for (int j = 0; j < extra; j++) s->envp[k++] = sd_util_fmt("%s=%s", conf->env->v[j].key, conf->env->v[j].value);
    s->envp[k++] = sd_util_fmt("STREAMDRILL_RUN_TOKEN=%s", conf->token);
    s->envp[k++] = sd_util_strdup("STREAMDRILL_INCARNATION=0"); /* replaced per start */
    s->envp[k++] = sd_util_strdup("STREAMDRILL_INSTANCE=1");
    s->envp[k] = NULL;

    for (int i = 0; i < SD_SUP_MAX_INSTANCES; i++) s->inst[i].st.begin_batch = s->inst[i].st.commit_batch = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    sd_err_t e = sd_util_mkdirs(s->logdir, err, errlen);
    if (e) { sd_sup_free(s); return e; }
    if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) == -1) {
        e = sd_err_set(err, errlen, SD_ERR_INTERNAL, "supervisor: pipe: %s", strerror(errno));
        sd_sup_free(s);
        return e;
    }
    /* orphans of a killed pipeline tree become ours, so we can reap them */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (pthread_create(&s->thread, NULL, sd_sup_thread, s)) {
        sd_sup_free(s);
        return sd_err_set(err, errlen, SD_ERR_INTERNAL, "supervisor: cannot start the reader thread");
    }
    s->thread_running = 1;
    *out = s;
    return SD_OK;
}

static void sd_sup_wake(sd_sup_t *s) {
    ssize_t w = write(s->wake[1], "x", 1);
    (void)w;
}

char *sd_sup_log_path(sd_sup_t *s, int n, int is_err) {
    return sd_util_fmt("%s/pipeline-%d.%s.log", s->logdir, n, is_err ? "stderr" : "stdout");
}

/* The environment slot that starts with prefix gets prefix followed by n. */
static void sd_sup_env_int(sd_sup_t *s, const char *prefix, int n) {
    size_t pl = strlen(prefix);
    int ei = 0;
    while (s->envp[ei] && strncmp(s->envp[ei], prefix, pl)) ei++;
    if (!s->envp[ei]) return;
    free(s->envp[ei]);
    s->envp[ei] = sd_util_fmt("%s%d", prefix, n);
}

sd_err_t sd_sup_start(sd_sup_t *s, char **argv_in, int instance, int *incarnation, char *err, size_t errlen) {
    char **argv = argv_in ? argv_in : s->argv;
    if (instance < 1 || instance > SD_SUP_MAX_INSTANCES)
        return sd_err_set(err, errlen, SD_ERR_INTERNAL, "supervisor: instance %d out of 1..%d", instance, SD_SUP_MAX_INSTANCES);
    int outp[2], errp[2], execp[2];
    if (pipe2(outp, O_CLOEXEC) == -1 || pipe2(errp, O_CLOEXEC) == -1 || pipe2(execp, O_CLOEXEC) == -1)
        return sd_err_set(err, errlen, SD_ERR_INTERNAL, "supervisor: pipe: %s", strerror(errno));
    pthread_mutex_lock(&s->lock);
    int n = s->nincs + 1;
    pthread_mutex_unlock(&s->lock);
    sd_sup_env_int(s, "STREAMDRILL_INCARNATION=", n);
    sd_sup_env_int(s, "STREAMDRILL_INSTANCE=", instance);

    char *outlog = sd_sup_log_path(s, n, 0), *errlog = sd_sup_log_path(s, n, 1);
    FILE *lo = fopen(outlog, "w+e"), *le = fopen(errlog, "w+e");
    if (!lo || !le) {
        sd_err_t e = sd_err_set(err, errlen, SD_ERR_IO, "supervisor: create %s: %s", !lo ? outlog : errlog, strerror(errno));
        if (lo) fclose(lo);
        if (le) fclose(le);
        free(outlog); free(errlog);
        close(outp[0]); close(outp[1]); close(errp[0]); close(errp[1]); close(execp[0]); close(execp[1]);
        return e;
    }
    free(outlog);
    free(errlog);
    pid_t parent = getpid();
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pid_t pid = fork();
    if (pid == 0) {
        /* child: own process group, die with the harness, plain signals */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
        for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        dup2(outp[1], 1);
        dup2(errp[1], 2);
        sd_util_child_cloexec(3);
        execvpe(argv[0], argv, s->envp);
        int e = errno;
        ssize_t w = write(execp[1], &e, sizeof(e));
        (void)w;
        _exit(127);
    }
    int fork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(outp[1]);
    close(errp[1]);
    close(execp[1]);
    if (pid == -1) {
        close(outp[0]); close(errp[0]); close(execp[0]);
        fclose(lo); fclose(le);
        return sd_err_set(err, errlen, SD_ERR_PIPELINE, "pipeline: fork: %s", strerror(fork_errno));
    }
    setpgid(pid, pid); /* also here: no window where a signal misses the group */
    sd_watchdog_track(s->wd, pid);
    int exec_errno = 0;
    ssize_t r;
    while ((r = read(execp[0], &exec_errno, sizeof(exec_errno))) == -1 && errno == EINTR)
        ;
    close(execp[0]);

    pthread_mutex_lock(&s->lock);
    s->incs = sd_util_xrealloc(s->incs, sizeof(*s->incs) * (size_t)(s->nincs + 1));
    sd_inc_t *inc = &s->incs[s->nincs++];
    memset(inc, 0, sizeof(*inc));
    inc->pid = pid;
    inc->n = n;
    inc->inst = instance - 1;
    inc->open_streams = 2;
    if (r == sizeof(exec_errno)) snprintf(inc->by, sizeof(inc->by), "exec-failed");
    sd_stream_t *so = &s->streams[s->nstreams++];
    memset(so, 0, sizeof(*so));
    so->fd = outp[0]; so->inc = n; so->inst = instance - 1; so->is_err = 0; so->log = lo;
    sd_stream_t *se = &s->streams[s->nstreams++];
    memset(se, 0, sizeof(*se));
    se->fd = errp[0]; se->inc = n; se->inst = instance - 1; se->is_err = 1; se->log = le;
    fcntl(outp[0], F_SETFL, O_NONBLOCK);
    fcntl(errp[0], F_SETFL, O_NONBLOCK);
    struct sd_sup_inst_s *in = &s->inst[instance - 1];
    in->st.incarnation = n;
    in->st.running = 1;
    in->st.drained = 0;
    in->st.ready = 0;
    in->st.pid = pid;
    in->st.begin_batch = in->st.commit_batch = -1;
    in->st.begin_rows = -1;
    in->st.exit_code = in->st.exit_signal = 0;
    in->tail_len = 0;
    pthread_mutex_unlock(&s->lock);
    sd_sup_wake(s);
    *incarnation = n;
    if (r == sizeof(exec_errno))
        return sd_err_set(err, errlen, SD_ERR_PIPELINE, "pipeline: exec %s: %s", argv[0], strerror(exec_errno));
    return SD_OK;
}

sd_err_t sd_sup_signal(sd_sup_t *s, int sig, const char *by, char *err, size_t errlen) {
    pthread_mutex_lock(&s->lock);
    sd_inc_t *inc = sd_sup_inc(s, s->inst[s->focus].st.incarnation);
    if (!inc || inc->exited) {
        pthread_mutex_unlock(&s->lock);
        return sd_err_set(err, errlen, SD_ERR_PIPELINE, "pipeline: signal %s: no incarnation is running", strsignal(sig));
    }
    if (s->deployed && (sig == SIGSTOP || sig == SIGCONT)) {
        pthread_mutex_unlock(&s->lock);
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "pipeline: a deployed pipeline cannot be %s by the harness",
                          sig == SIGSTOP ? "frozen" : "thawed");
    }
    if (by && !inc->by[0]) snprintf(inc->by, sizeof(inc->by), "%s", by);
    pid_t pg = inc->pid;
    pthread_mutex_unlock(&s->lock);
    if (s->deployed) {
        /* to the follower alone (its logs command keeps reading): it runs
         * the deployment's kill or stop command */
        if (kill(pg, sig == SIGKILL ? SIGUSR1 : SIGTERM) == -1 && errno != ESRCH)
            return sd_err_set(err, errlen, SD_ERR_INTERNAL, "pipeline: signal the follower %d: %s", (int)pg, strerror(errno));
        return SD_OK;
    }
    if (kill(-pg, sig) == -1 && errno != ESRCH)
        return sd_err_set(err, errlen, SD_ERR_INTERNAL, "pipeline: signal %s to group %d: %s", strsignal(sig), (int)pg, strerror(errno));
    return SD_OK;
}

sd_err_t sd_sup_wait_exit(sd_sup_t *s, int64_t timeout_ms, char *err, size_t errlen) {
    int64_t deadline = sd_util_mono_ms() + timeout_ms;
    pthread_mutex_lock(&s->lock);
    while (s->inst[s->focus].st.incarnation && !s->inst[s->focus].st.drained) {
        int64_t left = deadline - sd_util_mono_ms();
        if (left <= 0) {
            pthread_mutex_unlock(&s->lock);
            return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "pipeline: still running after %.1fs", (double)timeout_ms / 1000.0);
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t w = left < 50 ? left : 50;
        ts.tv_nsec += (long)(w * 1000000);
        if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
        pthread_cond_timedwait(&s->cond, &s->lock, &ts);
    }
    pthread_mutex_unlock(&s->lock);
    return SD_OK;
}

sd_err_t sd_sup_stop(sd_sup_t *s, int64_t grace_ms, char *err, size_t errlen) {
    sd_sup_state_t st;
    sd_sup_state(s, &st);
    if (!st.running) return SD_OK;
    sd_err_t e = sd_sup_signal(s, SIGTERM, "stop", err, errlen);
    if (e) return e;
    if (sd_sup_wait_exit(s, grace_ms, NULL, 0) == SD_OK) return SD_OK;
    sd_sup_signal(s, SIGKILL, "stop", NULL, 0);
    e = sd_sup_wait_exit(s, sd_util_scaled_ms(10000), err, errlen);
    if (e) return e;
    return SD_OK;
}

void sd_sup_kill_all(sd_sup_t *s) {
    if (!s) return;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->nincs; i++) {
        if (!s->incs[i].exited && !s->incs[i].by[0]) snprintf(s->incs[i].by, sizeof(s->incs[i].by), "end-of-run");
        kill(-s->incs[i].pid, SIGKILL);
    }
    pthread_mutex_unlock(&s->lock);
    sd_watchdog_sweep(s->token);
    int64_t deadline = sd_util_mono_ms() + 3000;
    for (;;) {
        int pending = 0;
        pthread_mutex_lock(&s->lock);
        for (int i = 0; i < s->nincs; i++)
            if (!s->incs[i].reported) pending = 1;
        pthread_mutex_unlock(&s->lock);
        if (!pending || sd_util_mono_ms() > deadline) break;
        sd_util_sleep_ms(10);
    }
}

void sd_sup_free(sd_sup_t *s) {
    if (!s) return;
    if (s->thread_running) {
        sd_sup_kill_all(s);
        pthread_mutex_lock(&s->lock);
        s->stopping = 1;
        for (int i = s->nstreams - 1; i >= 0; i--) sd_sup_close_stream(s, i);
        pthread_mutex_unlock(&s->lock);
        sd_sup_wake(s);
        pthread_join(s->thread, NULL);
    }
    for (int i = s->nstreams - 1; i >= 0; i--) sd_sup_close_stream(s, i);
    sd_sup_event_t ev;
    while (sd_sup_next_event(s, &ev) == 0) free(ev.text);
    if (s->wake[0] > 0) { close(s->wake[0]); close(s->wake[1]); }
    for (int i = 0; s->argv && s->argv[i]; i++) free(s->argv[i]);
    free(s->argv);
    for (int i = 0; s->envp && s->envp[i]; i++) free(s->envp[i]);
    free(s->envp);
    free(s->run_dir); free(s->logdir); free(s->token); free(s->incs);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
}

/* Instance i's state with every instance's counters (lock held). */
static void sd_sup_fill(sd_sup_t *s, int i, sd_sup_state_t *out) {
    *out = s->inst[i].st;
    out->markers = s->all.markers;
    out->last_marker_mono_ms = s->all.last_marker_mono_ms;
    out->last_output_mono_ms = s->all.last_output_mono_ms;
    out->ms_per_row = s->all.ms_per_row;
    sd_inc_t *inc = out->incarnation ? sd_sup_inc(s, out->incarnation) : NULL;
    snprintf(out->ended_by, sizeof(out->ended_by), "%s", inc && inc->exited ? inc->by : "");
}

void sd_sup_state(sd_sup_t *s, sd_sup_state_t *out) {
    pthread_mutex_lock(&s->lock);
    sd_sup_fill(s, s->focus, out);
    pthread_mutex_unlock(&s->lock);
}

void sd_sup_instance_state(sd_sup_t *s, int instance, sd_sup_state_t *out) {
    pthread_mutex_lock(&s->lock);
    sd_sup_fill(s, instance >= 1 && instance <= SD_SUP_MAX_INSTANCES ? instance - 1 : s->focus, out);
    pthread_mutex_unlock(&s->lock);
}

int sd_sup_instance_of(sd_sup_t *s, int n) {
    pthread_mutex_lock(&s->lock);
    sd_inc_t *inc = sd_sup_inc(s, n);
    int k = inc ? inc->inst + 1 : 0;
    pthread_mutex_unlock(&s->lock);
    return k;
}

int sd_sup_focus(sd_sup_t *s, int instance) {
    pthread_mutex_lock(&s->lock);
    int was = s->focus + 1;
    if (instance >= 1 && instance <= SD_SUP_MAX_INSTANCES) s->focus = instance - 1;
    pthread_mutex_unlock(&s->lock);
    return was;
}

int sd_sup_next_event(sd_sup_t *s, sd_sup_event_t *ev) {
    pthread_mutex_lock(&s->lock);
    sd_sup_evnode_t *n = s->head;
    if (n) {
        s->head = n->next;
        if (!s->head) s->tailq = NULL;
    }
    pthread_mutex_unlock(&s->lock);
    if (!n) return -1;
    *ev = n->ev;
    free(n);
    return 0;
}

void sd_sup_wait_change(sd_sup_t *s, int64_t timeout_ms) {
    if (timeout_ms <= 0) return;
    pthread_mutex_lock(&s->lock);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)((timeout_ms % 1000) * 1000000);
    if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
    pthread_cond_timedwait(&s->cond, &s->lock, &ts);
    pthread_mutex_unlock(&s->lock);
}

char *sd_sup_telling(sd_sup_t *s) {
    pthread_mutex_lock(&s->lock);
    struct sd_sup_inst_s *in = &s->inst[s->focus];
    char *t = NULL;
    if (in->query_exc[0] && in->query_inc == in->st.incarnation) {
        /* the query's own exception and its cause, trimmed of leading blanks */
        const char *x = in->query_exc, *c = in->query_cause;
        while (*x == ' ' || *x == '\t') x++;
        t = *c && !strstr(x, c) ? sd_util_fmt("%s (caused by: %s)", x, c) : sd_util_strdup(x);
    } else if (in->telling[0] && in->telling_inc == in->st.incarnation) {
        t = sd_util_strdup(in->telling);
    }
    pthread_mutex_unlock(&s->lock);
    return t;
}

int sd_sup_query_failed(sd_sup_t *s) {
    pthread_mutex_lock(&s->lock);
    struct sd_sup_inst_s *in = &s->inst[s->focus];
    int q = in->query_exc[0] && in->query_inc == in->st.incarnation;
    pthread_mutex_unlock(&s->lock);
    return q;
}

char *sd_sup_tail(sd_sup_t *s) {
    pthread_mutex_lock(&s->lock);
    char *t = sd_util_strndup(s->inst[s->focus].tail, s->inst[s->focus].tail_len);
    pthread_mutex_unlock(&s->lock);
    return t;
}

/* Inodes of established TCP sockets whose remote port is one of ports. */
static int sd_sup_tcp_inodes(const int *ports, int nports, unsigned long *out, int cap) {
    static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6", NULL};
    int n = 0;
    for (int f = 0; files[f]; f++) {
        FILE *fp = fopen(files[f], "r");
        if (!fp) continue;
        char line[512];
        if (!fgets(line, sizeof(line), fp)) { fclose(fp); continue; } /* the header */
        while (fgets(line, sizeof(line), fp) && n < cap) {
            char rem[128];
            unsigned st;
            unsigned long inode;
            /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
            if (sscanf(line, " %*s %*s %127s %x %*s %*s %*s %*s %*s %lu", rem, &st, &inode) != 3 || st != 1) continue;
            char *colon = strrchr(rem, ':');
            if (!colon) continue;
            int port = (int)strtol(colon + 1, NULL, 16);
            for (int i = 0; i < nports; i++)
                if (port == ports[i]) { out[n++] = inode; break; }
        }
        fclose(fp);
    }
    return n;
}

int sd_sup_connected(sd_sup_t *s, const int *ports, int nports) {
    sd_sup_state_t st;
    sd_sup_state(s, &st);
    if (!st.running || st.pid <= 0) return -1;
    unsigned long inodes[256];
    int ni = sd_sup_tcp_inodes(ports, nports, inodes, 256);
    if (ni <= 0) return 0;
    DIR *proc = opendir("/proc");
    if (!proc) return -1;
    int found = 0;
    struct dirent *de;
    while (!found && (de = readdir(proc))) {
        if (!isdigit((unsigned char)de->d_name[0])) continue;
        char path[300], buf[512];
        snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
        FILE *fp = fopen(path, "r");
        if (!fp) continue;
        size_t len = fread(buf, 1, sizeof(buf) - 1, fp);
        fclose(fp);
        buf[len] = 0;
        /* pid (comm) state ppid pgrp ...: comm may hold spaces, so from the last ')' */
        char *c = strrchr(buf, ')');
        int pgrp = -1;
        if (!c || sscanf(c + 1, " %*c %*d %d", &pgrp) != 1 || pgrp != (int)st.pid) continue;
        snprintf(path, sizeof(path), "/proc/%s/fd", de->d_name);
        DIR *fds = opendir(path);
        if (!fds) continue;
        struct dirent *fe;
        while (!found && (fe = readdir(fds))) {
            char fp2[600], link[64];
            snprintf(fp2, sizeof(fp2), "%s/%s", path, fe->d_name);
            ssize_t l = readlink(fp2, link, sizeof(link) - 1);
            if (l <= 0) continue;
            link[l] = 0;
            unsigned long inode;
            if (sscanf(link, "socket:[%lu]", &inode) != 1) continue;
            for (int i = 0; i < ni; i++)
                if (inodes[i] == inode) { found = 1; break; }
        }
        closedir(fds);
    }
    closedir(proc);
    return found;
}
