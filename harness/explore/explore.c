/* explore.c - `streamdrill explore` (see explore.h): the header, the pool
 * of child runs, exploring, shrinking, confirming.
 *
 * Like main.c this is the command line's layer: it prints progress and
 * errors itself. Every run is a child `streamdrill run` (the tool users
 * rerun by hand), started without a shell in its own process group; it
 * dies with explore (PR_SET_PDEATHSIG), and its own watchdog then takes
 * its pipeline down with it. */
#include "explore.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster.h"
#include "err.h"
#include "run.h"
#include "shrink.h"
#include "util.h"
#include "xsched.h"

typedef struct {
    pid_t pid;
    int slot;           /* caller's index */
    char *outdir;       /* the child's --out */
    char *run_dir;      /* outdir/<stem> */
    char *log;
    int64_t t0;
    int cut;            /* stopped early: its candidate was decided by another try */
} sd_xjob_t;

typedef struct {
    const sd_explore_opts_t *o;
    sd_xreport_t *x;
    char *header;       /* every schedule's header */
    char *prefix;       /* --keep-steps: the file's steps (no expects) */
    char *expects;      /* --keep-steps: its expect lines */
    int has_start;      /* the prefix starts the pipeline */
    sd_xcaps_t caps;
    sd_xjob_t *jobs;
    int njobs;
    int64_t t0;
    /* shrinking */
    const char *signature;
    char *sdir;
    int cand;
    FILE *slog;
    int runs_left;
    char err[3072];
    int failed_hard;    /* a child could not run at all: stop */
    int invalid;        /* the last shrink candidate was refused by `run` (exit 2) */
    sd_xsched_t *chain; /* the candidates the shrink kept, in order */
    int nchain;
} sd_xctx_t;

/* ---- the schedules' text ---- */

static int sd_x_first_word(const char *line, size_t n, const char *word) {
    while (n && (*line == ' ' || *line == '\t')) { line++; n--; }
    size_t w = strlen(word);
    return n >= w && !strncmp(line, word, w) && (n == w || line[w] == ' ' || line[w] == '\t');
}

/* {here} and {pipelines} (not {{here}}) written out as the file's folder:
 * the schedules live elsewhere. */
static void sd_x_put_line(sd_buf_t *b, const char *line, size_t n, const char *here) {
    for (size_t i = 0; i < n; i++) {
        int at = i == 0 || line[i - 1] != '{';
        if (at && i + 6 <= n && !strncmp(line + i, "{here}", 6)) {
            sd_buf_puts(b, here);
            i += 5;
            continue;
        }
        if (at && i + 11 <= n && !strncmp(line + i, "{pipelines}", 11)) {
            sd_buf_printf(b, "%s/pipelines", here);
            i += 10;
            continue;
        }
        sd_buf_putc(b, line[i]);
    }
    sd_buf_putc(b, '\n');
}

static int sd_x_set_line(sd_buf_t *b, const sd_kvlist_t *sets, char *err, size_t errlen) {
    if (!sets || !sets->n) return 0;
    sd_buf_puts(b, "# the values explore was given with --set\nset");
    for (int i = 0; i < sets->n; i++) {
        const char *v = sets->v[i].value;
        if (strpbrk(v, "\"\\\n\r")) {
            snprintf(err, errlen, "--set %s=%s: a value with a quote, a backslash or a line break cannot be written into a drill",
                     sets->v[i].key, v);
            return -1;
        }
        if (!*v || strpbrk(v, " \t#")) sd_buf_printf(b, " %s=\"%s\"", sets->v[i].key, v);
        else sd_buf_printf(b, " %s=%s", sets->v[i].key, v);
    }
    sd_buf_putc(b, '\n');
    return 0;
}

/* Split the file into the header every schedule shares and (for
 * --keep-steps) its steps and expect lines. */
static int sd_x_prepare_text(sd_xctx_t *X, const char *text, const sd_scenario_t *sc, int no_steps, char *err, size_t errlen) {
    int first = sc->nsteps && !no_steps ? sc->steps[0].line : 1 << 30;
    sd_buf_t h, p, e;
    sd_buf_init(&h);
    sd_buf_init(&p);
    sd_buf_init(&e);
    int lineno = 1;
    for (const char *s = text; *s; lineno++) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        if (lineno < first) {
            if (!sd_x_first_word(s, n, "name")) sd_x_put_line(&h, s, n, sc->dir);
        } else if (X->o->keep_steps) {
            int is_expect = 0;
            for (int k = 0; k < sc->nsteps; k++)
                if (sc->steps[k].line == lineno) {
                    is_expect = sc->steps[k].kind == SD_STEP_EXPECT;
                    if (sc->steps[k].kind == SD_STEP_START) X->has_start = 1;
                }
            sd_x_put_line(is_expect ? &e : &p, s, n, sc->dir);
        }
        s = nl ? nl + 1 : s + n;
    }
    if (sd_x_set_line(&h, X->o->sets, err, errlen)) {
        sd_buf_free(&h); sd_buf_free(&p); sd_buf_free(&e);
        return -1;
    }
    X->header = sd_buf_steal(&h);
    X->prefix = p.data ? sd_buf_steal(&p) : sd_util_strdup("");
    X->expects = e.data ? sd_buf_steal(&e) : sd_util_strdup("");
    return 0;
}

/* The whole drill of a schedule. */
static char *sd_x_drill_text(const sd_xctx_t *X, const sd_xsched_t *s, const char *comment) {
    sd_buf_t b, steps;
    sd_buf_init(&b);
    sd_buf_init(&steps);
    sd_buf_puts(&b, X->header);
    sd_buf_printf(&b, "\n# %s\n", comment);
    sd_buf_puts(&b, X->prefix);
    sd_xsched_render(s, &steps);
    /* the file's own steps started the pipeline: no second start */
    const char *st = steps.data;
    if (X->has_start && !strncmp(st, "start\n", 6)) st += 6;
    sd_buf_puts(&b, st);
    sd_buf_puts(&b, X->expects);
    sd_buf_free(&steps);
    return sd_buf_steal(&b);
}

/* Write a schedule's drill, after checking it parses (a schedule the
 * language refuses is a bug of the generator, said as such). */
static int sd_x_write_drill(sd_xctx_t *X, const char *path, const char *text) {
    sd_scenario_t *sc = NULL;
    char perr[2048];
    if (sd_scenario_parse_text(path, text, NULL, &sc, perr, sizeof(perr))) {
        snprintf(X->err, sizeof(X->err), "a generated schedule does not parse (a bug of explore): %s", perr);
        return -1;
    }
    sd_scenario_free(sc);
    return sd_util_write_file(path, text, strlen(text), X->err, sizeof(X->err)) ? -1 : 0;
}

/* ---- the pool of child runs ---- */

static int sd_x_spawn(sd_xctx_t *X, const char *drill, const char *outdir, int slot) {
    const sd_explore_opts_t *o = X->o;
    char **argv = sd_util_xcalloc((size_t)(16 + 2 * (o->xprops ? o->xprops->n : 0)), sizeof(char *));
    char nb[16];
    int a = 0, rc = -1;
    argv[a++] = (char *)o->exe;
    argv[a++] = "run";
    argv[a++] = (char *)drill;
    argv[a++] = "--out";
    argv[a++] = (char *)outdir;
    /* a run that passes writes summary.json and junit.xml only: explore
     * reads the one, and of the hundreds of passing runs nobody reads the
     * rest (`streamdrill report DIR` writes it from run.db) */
    argv[a++] = "--reports";
    argv[a++] = "failed";
    if (o->brokers) { argv[a++] = "--brokers"; argv[a++] = (char *)o->brokers; }
    if (o->cluster) { argv[a++] = "--cluster"; argv[a++] = (char *)o->cluster; }
    if (o->kafka_config) { argv[a++] = "--kafka-config"; argv[a++] = (char *)o->kafka_config; }
    if (o->nbrokers > 1) {
        snprintf(nb, sizeof(nb), "%d", o->nbrokers);
        argv[a++] = "--broker-count";
        argv[a++] = nb;
    }
    for (int i = 0; o->xprops && i < o->xprops->n; i++) {
        argv[a++] = "-X";
        argv[a++] = sd_util_fmt("%s=%s", o->xprops->v[i].key, o->xprops->v[i].value);
    }
    char *stem = sd_util_stem(drill);
    sd_xjob_t j = {.slot = slot, .outdir = sd_util_strdup(outdir), .run_dir = sd_util_fmt("%s/%s", outdir, stem),
                   .log = sd_util_fmt("%s/%s.log", outdir, stem), .t0 = sd_util_mono_ms()};
    free(stem);
    if (sd_util_mkdirs(outdir, X->err, sizeof(X->err))) goto fail;
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        int fd = open(j.log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), nul = open("/dev/null", O_RDONLY);
        if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); }
        if (nul >= 0) dup2(nul, 0);
        sd_util_child_cloexec(3);
        execv(o->exe, argv);
        fprintf(stderr, "streamdrill explore: cannot run %s: %s\n", o->exe, strerror(errno));
        _exit(127);
    }
    if (pid < 0) {
        snprintf(X->err, sizeof(X->err), "fork: %s", strerror(errno));
        goto fail;
    }
    setpgid(pid, pid);
    j.pid = pid;
    X->jobs = sd_util_xrealloc(X->jobs, sizeof(*X->jobs) * (size_t)(X->njobs + 1));
    X->jobs[X->njobs++] = j;
    memset(&j, 0, sizeof(j)); /* the pool owns its strings now */
    rc = 0;
fail:
    for (int i = 5; i < a; i++)
        if (!strcmp(argv[i - 1], "-X")) free(argv[i]);
    free(argv);
    free(j.outdir); free(j.run_dir); free(j.log);
    return rc;
}

typedef struct {
    int slot;
    int exit_code;
    char verdict[16];
    char reason[48];
    char *signature;
    char *run_dir, *outdir, *log;
    double secs;
    int cut;            /* stopped early (sd_x_cut_tries): no outcome */
} sd_xdone_t;

static void sd_xdone_free(sd_xdone_t *d) {
    free(d->signature);
    free(d->run_dir);
    free(d->outdir);
    free(d->log);
}

static int sd_x_cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Coverage: one more fault of kind landed where. */
static void sd_x_cover(sd_xreport_t *x, const char *kind, const char *where) {
    for (int i = 0; i < x->ncover; i++)
        if (!strcmp(x->cover[i].kind, kind) && !strcmp(x->cover[i].where, where)) {
            x->cover[i].count++;
            return;
        }
    x->cover = sd_util_xrealloc(x->cover, sizeof(*x->cover) * (size_t)(x->ncover + 1));
    sd_xcover_t *c = &x->cover[x->ncover++];
    memset(c, 0, sizeof(*c));
    snprintf(c->kind, sizeof(c->kind), "%s", kind);
    snprintf(c->where, sizeof(c->where), "%s", where);
    c->count = 1;
}

/* Where the faults of one run landed (its summary's faults and the
 * optional ones it skipped). A fault between a pause and its resume
 * landed "while paused"; the records that undo a fault are not counted. */
static void sd_x_read_cover(sd_xreport_t *x, json_t *root) {
    json_t *faults = json_object_get(root, "faults"), *f;
    size_t i;
    int paused = 0;
    json_array_foreach(faults, i, f) {
        const char *kind = json_string_value(json_object_get(f, "kind"));
        const char *detail = json_string_value(json_object_get(f, "detail"));
        if (!kind || !detail || !strcmp(kind, "heal")) continue;
        if (!strcmp(kind, "resume")) { paused = 0; continue; }
        if (strstr(detail, " removed") || strstr(detail, " lifted") || strstr(detail, " cleared") || strstr(detail, "clock reset"))
            continue;
        json_t *mid = json_object_get(f, "landed_mid_batch");
        const char *where = json_is_true(mid) ? "mid-batch"
                            : strstr(detail, "boundary") ? "at a boundary"
                            : strstr(detail, "mid-batch") ? "after its batch"
                            : "now";
        if (paused && strcmp(kind, "pause")) where = "while paused";
        if (!strcmp(kind, "pause")) paused = 1;
        if (!strcmp(kind, "kill") || !strcmp(kind, "stop") || !strcmp(kind, "restart")) paused = 0;
        sd_x_cover(x, kind, where);
    }
    json_t *warn = json_object_get(root, "warnings"), *w;
    json_array_foreach(warn, i, w) {
        const char *kind = json_string_value(json_object_get(w, "kind"));
        const char *detail = json_string_value(json_object_get(w, "detail"));
        if (!kind || strcmp(kind, "fault-skipped") || !detail) continue;
        const char *tick = strchr(detail, '`');
        char word[16] = "fault";
        if (tick) sscanf(tick + 1, "%15[a-z]", word);
        sd_x_cover(x, word, "skipped (did not land)");
    }
}

/* The verdict and signature of a finished child from its summary.json. */
static void sd_x_read_summary(sd_xctx_t *X, sd_xdone_t *d, int cover) {
    char *path = sd_util_fmt("%s/summary.json", d->run_dir);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    free(path);
    if (!root) {
        snprintf(d->verdict, sizeof(d->verdict), "error");
        snprintf(d->reason, sizeof(d->reason), "exit %d, no summary.json", d->exit_code);
        d->signature = sd_util_strdup("");
        return;
    }
    snprintf(d->verdict, sizeof(d->verdict), "%s", json_string_value(json_object_get(root, "verdict")) ?: "error");
    snprintf(d->reason, sizeof(d->reason), "%s", json_string_value(json_object_get(root, "reason")) ?: "");
    char **names = NULL;
    int n = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(root, "checks"), i, c) {
        if (json_is_true(json_object_get(c, "pass"))) continue;
        const char *name = json_string_value(json_object_get(c, "name"));
        if (!name) continue;
        names = sd_util_xrealloc(names, sizeof(*names) * (size_t)(n + 1));
        names[n++] = (char *)name;
    }
    qsort(names, (size_t)n, sizeof(*names), sd_x_cmp_str);
    sd_buf_t b;
    sd_buf_init(&b);
    for (int k = 0; k < n; k++)
        if (!k || strcmp(names[k], names[k - 1])) sd_buf_printf(&b, "%s%s", b.len ? "," : "", names[k]);
    if (!b.len && !strcmp(d->verdict, "fail")) sd_buf_puts(&b, d->reason);
    d->signature = b.data ? sd_buf_steal(&b) : sd_util_strdup("");
    sd_buf_free(&b);
    free(names);
    if (cover) sd_x_read_cover(X->x, root);
    json_decref(root);
}

/* Wait for one child; *d is its result. Returns -1 when there is none. */
static int sd_x_wait_one(sd_xctx_t *X, sd_xdone_t *d, int cover) {
    int64_t limit = sd_util_scaled_ms(15 * 60 * 1000);
    while (X->njobs) {
        int st = 0;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid > 0) {
            for (int i = 0; i < X->njobs; i++) {
                if (X->jobs[i].pid != pid) continue;
                sd_xjob_t j = X->jobs[i];
                X->jobs[i] = X->jobs[--X->njobs];
                memset(d, 0, sizeof(*d));
                d->slot = j.slot;
                d->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                d->run_dir = j.run_dir;
                d->outdir = j.outdir;
                d->log = j.log;
                d->secs = (double)(sd_util_mono_ms() - j.t0) / 1000.0;
                d->cut = j.cut;
                sd_x_read_summary(X, d, cover);
                return 0;
            }
            continue;
        }
        if (pid < 0 && errno == ECHILD) break;
        int64_t now = sd_util_mono_ms();
        for (int i = 0; i < X->njobs; i++) {
            if (sd_run_stop_requested) kill(-X->jobs[i].pid, SIGTERM);
            else if (now - X->jobs[i].t0 > limit) kill(-X->jobs[i].pid, SIGKILL);
        }
        sd_util_sleep_ms(50);
    }
    return -1;
}

/* ---- exploring ---- */

static void sd_x_say(const sd_xctx_t *X, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sd_x_say(const sd_xctx_t *X, const char *fmt, ...) {
    if (X->o->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%6.1fs] ", (double)(sd_util_mono_ms() - X->t0) / 1000.0);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The drill of exploring run `run`: what --print shows and what the run
 * writes, from one place so the two cannot differ. *faults = its fault
 * actions. */
static char *sd_x_run_text(const sd_xctx_t *X, int run, int *faults) {
    sd_xsched_t s;
    sd_xsched_generate(&X->caps, X->o->seed, run, &s);
    *faults = sd_xsched_fault_count(&s);
    char *comment = sd_util_fmt("explore: seed %llu, run %d (%d fault%s)", (unsigned long long)X->o->seed, run, *faults,
                                *faults == 1 ? "" : "s");
    char *text = sd_x_drill_text(X, &s, comment);
    free(comment);
    sd_xsched_free(&s);
    return text;
}

static int sd_x_launch_run(sd_xctx_t *X, int run) {
    int faults;
    char *text = sd_x_run_text(X, run, &faults);
    char *dir = sd_util_fmt("%s/runs", X->x->dir);
    char *drill = sd_util_fmt("%s/run-%04d.drill", dir, run);
    int rc = sd_util_mkdirs(dir, X->err, sizeof(X->err)) ? -1 : sd_x_write_drill(X, drill, text);
    if (!rc) rc = sd_x_spawn(X, drill, dir, X->x->nruns);
    if (!rc) {
        X->x->runs = sd_util_xrealloc(X->x->runs, sizeof(*X->x->runs) * (size_t)(X->x->nruns + 1));
        sd_xrun_t *xr = &X->x->runs[X->x->nruns++];
        memset(xr, 0, sizeof(*xr));
        xr->run = run;
        xr->drill = drill;
        xr->faults = faults;
        drill = NULL;
    }
    free(drill);
    free(dir);
    free(text);
    return rc;
}

/* A run's outcome into the report; a new signature into the failures. */
static void sd_x_record_run(sd_xctx_t *X, sd_xdone_t *d) {
    sd_xreport_t *x = X->x;
    sd_xrun_t *xr = &x->runs[d->slot];
    snprintf(xr->verdict, sizeof(xr->verdict), "%s", d->verdict);
    snprintf(xr->reason, sizeof(xr->reason), "%s", d->reason);
    xr->signature = sd_util_strdup(d->signature);
    xr->run_dir = sd_util_strdup(d->run_dir);
    xr->secs = d->secs;
    if (!strcmp(d->verdict, "pass")) x->passed++;
    else if (!strcmp(d->verdict, "fail")) x->failed++;
    else x->inconclusive++;
    sd_x_say(X, "run %d: %s%s%s%s (%.1fs)", xr->run, d->verdict, *d->signature ? " [" : "", d->signature,
             *d->signature ? "]" : "", d->secs);
    if (strcmp(d->verdict, "fail")) {
        if (strcmp(d->verdict, "pass")) sd_x_say(X, "  %s: %s; its log: %s", d->verdict, d->reason, d->log);
        return;
    }
    for (int i = 0; i < x->nfails; i++)
        if (!strcmp(x->fails[i].signature, d->signature)) {
            x->fails[i].seen++;
            return;
        }
    x->fails = sd_util_xrealloc(x->fails, sizeof(*x->fails) * (size_t)(x->nfails + 1));
    sd_xfail_t *f = &x->fails[x->nfails++];
    memset(f, 0, sizeof(*f));
    f->signature = sd_util_strdup(d->signature);
    f->first_run = xr->run;
    f->seen = 1;
}

/* Child exit codes that mean explore itself is wrong (a usage or scenario
 * error, a harness error): stop rather than count them. */
static int sd_x_hard_error(const sd_xdone_t *d) {
    return d->exit_code == SD_EXIT_USAGE || d->exit_code == 127;
}

static void sd_x_explore(sd_xctx_t *X) {
    const sd_explore_opts_t *o = X->o;
    int next = 1;
    X->x->ended = "runs";
    for (;;) {
        int64_t el = sd_util_mono_ms() - X->t0;
        int more = !sd_run_stop_requested && !X->failed_hard && (!o->runs || next <= o->runs) &&
                   (!o->budget_ms || el < o->budget_ms) && (o->keep_going || !X->x->nfails);
        while (more && X->njobs < o->jobs) {
            if (sd_x_launch_run(X, next++)) { X->failed_hard = 1; break; }
            more = !o->runs || next <= o->runs;
        }
        sd_xdone_t d;
        if (sd_x_wait_one(X, &d, 1) < 0) break;
        sd_x_record_run(X, &d);
        if (sd_x_hard_error(&d)) {
            X->failed_hard = 1;
            snprintf(X->err, sizeof(X->err), "run %d ended with exit %d: see %s", X->x->runs[d.slot].run, d.exit_code, d.log);
        }
        sd_xdone_free(&d);
    }
    if (sd_run_stop_requested) X->x->ended = "interrupted";
    else if (X->failed_hard) X->x->ended = "error";
    else if (X->x->nfails && !o->keep_going) X->x->ended = "first failure";
    else if (o->budget_ms && sd_util_mono_ms() - X->t0 >= o->budget_ms) X->x->ended = "budget";
}

/* ---- shrinking ---- */

/* How sd_x_try_drill stops early. */
enum {
    SD_XT_ALL = 0,      /* run every try (none: a count of how many show it) */
    SD_XT_UNTIL_SHOWN,  /* until a run shows the signature (a shrink candidate) */
    SD_XT_UNTIL_MISSED  /* until a run does not (is this drill reliable?) */
};

/* A candidate decided (a try showed the signature, or one missed it where
 * all must show it): its tries still running are stopped (SIGTERM: the
 * run stops its pipeline and ends), not waited out. */
static void sd_x_cut_tries(sd_xctx_t *X) {
    for (int i = 0; i < X->njobs; i++)
        if (!X->jobs[i].cut) {
            X->jobs[i].cut = 1;
            kill(-X->jobs[i].pid, SIGTERM);
        }
}

/* Run a drill up to `tries` times, up to J at once, stopping as mode says.
 * Returns how many runs showed the signature; *runs = runs made; the
 * report of the first that did in *keep (may be NULL). While shrinking,
 * the folders of passing runs are removed (made here a moment ago, they
 * only fill the disk); confirmations keep every run. */
static int sd_x_try_drill(sd_xctx_t *X, const char *drill, const char *base, int tries, int mode, int *runs, char **keep) {
    int shown = 0, missed = 0, launched = 0;
    *runs = 0;
    while ((launched < tries || X->njobs) && !X->failed_hard) {
        int enough = (mode == SD_XT_UNTIL_SHOWN && shown) || (mode == SD_XT_UNTIL_MISSED && missed);
        while (launched < tries && X->njobs < X->o->jobs && !enough && !sd_run_stop_requested) {
            char *out = sd_util_fmt("%s-t%d", base, launched + 1);
            int rc = sd_x_spawn(X, drill, out, launched);
            free(out);
            if (rc) { X->failed_hard = 1; break; }
            launched++;
        }
        sd_xdone_t d;
        if (sd_x_wait_one(X, &d, 0) < 0) break;
        if (d.cut) {
            /* stopped once its candidate was decided: no outcome, and its
             * folder (made here a moment ago) only fills the disk */
            sd_util_rmtree(d.outdir, NULL, 0);
            sd_xdone_free(&d);
            continue;
        }
        (*runs)++;
        int is = !strcmp(d.verdict, "fail") && !strcmp(d.signature, X->signature);
        if (d.exit_code == SD_EXIT_USAGE && mode == SD_XT_UNTIL_SHOWN) {
            /* a candidate the run refuses (a replay with nothing sent
             * before it, once the shrinker removed the produce): it does
             * not show the signature, and no other try would */
            X->invalid = 1;
            tries = launched;
        } else if (sd_x_hard_error(&d)) {
            X->failed_hard = 1;
            snprintf(X->err, sizeof(X->err), "%s ended with exit %d: see %s", drill, d.exit_code, d.log);
        }
        if (is && keep && !*keep) *keep = sd_util_fmt("%s/report.html", d.run_dir);
        else if (!is && mode == SD_XT_UNTIL_SHOWN && !strcmp(d.verdict, "pass")) sd_util_rmtree(d.outdir, NULL, 0);
        shown += is;
        missed += !is;
        sd_xdone_free(&d);
        if (sd_run_stop_requested) break;
        if ((mode == SD_XT_UNTIL_SHOWN && shown) || (mode == SD_XT_UNTIL_MISSED && missed)) sd_x_cut_tries(X);
    }
    return shown;
}

static int sd_x_attempt(void *ctx, const sd_xsched_t *cand, int tries, int all, int *runs) {
    sd_xctx_t *X = ctx;
    *runs = 0;
    if (sd_run_stop_requested || X->failed_hard || X->runs_left <= 0) return -1;
    X->cand++;
    char *comment = sd_util_fmt("explore: shrinking [%s], candidate %d", X->signature, X->cand);
    char *text = sd_x_drill_text(X, cand, comment);
    char *drill = sd_util_fmt("%s/c%04d.drill", X->sdir, X->cand);
    char *base = sd_util_fmt("%s/c%04d", X->sdir, X->cand);
    int r = -1;
    if (!sd_x_write_drill(X, drill, text)) {
        if (tries > X->runs_left) tries = X->runs_left;
        X->invalid = 0;
        int shown = sd_x_try_drill(X, drill, base, tries, all ? SD_XT_UNTIL_MISSED : SD_XT_UNTIL_SHOWN, runs, NULL);
        r = all ? shown == tries && *runs == tries : shown > 0;
        X->runs_left -= *runs;
        if (sd_run_stop_requested || X->failed_hard) r = -1;
    } else {
        X->failed_hard = 1;
    }
    free(base);
    free(drill);
    free(text);
    free(comment);
    return r;
}

static void sd_x_log(void *ctx, const sd_xsched_t *cand, const char *move, int kept, int runs) {
    sd_xctx_t *X = ctx;
    const char *what = kept ? "kept" : X->invalid ? "refused by run" : "dropped";
    if (kept) {
        X->chain = sd_util_xrealloc(X->chain, sizeof(*X->chain) * (size_t)(X->nchain + 1));
        sd_xsched_copy(&X->chain[X->nchain++], cand);
    }
    sd_x_say(X, "  shrink c%04d: %-40s %s (%d action%s, %d fault%s; %d run%s)", X->cand, move, what, cand->n,
             cand->n == 1 ? "" : "s", sd_xsched_fault_count(cand), sd_xsched_fault_count(cand) == 1 ? "" : "s", runs,
             runs == 1 ? "" : "s");
    if (X->slog) {
        fprintf(X->slog, "| c%04d | %s | %s | %d | %d | %d |\n", X->cand, move, what, cand->n,
                sd_xsched_fault_count(cand), runs);
        fflush(X->slog);
    }
}

/* The minimal drill's file, its steps and size from schedule m. */
static int sd_x_set_minimal(sd_xctx_t *X, sd_xfail_t *f, const sd_xsched_t *m, const char *path, int candidates) {
    char *comment = sd_util_fmt("explore: the minimal drill of [%s] (seed %llu, run %d, %d candidates)", f->signature,
                                (unsigned long long)X->o->seed, f->first_run, candidates);
    char *text = sd_x_drill_text(X, m, comment);
    sd_buf_t steps;
    sd_buf_init(&steps);
    sd_xsched_render(m, &steps);
    free(f->steps);
    f->steps = sd_buf_steal(&steps);
    f->actions = m->n;
    f->faults = sd_xsched_fault_count(m);
    char *keep = sd_util_strdup(path); /* path may be f->minimal itself */
    free(f->minimal);
    f->minimal = keep;
    int rc = sd_x_write_drill(X, f->minimal, text);
    free(text);
    free(comment);
    return rc;
}

/* The smallest drill failed only some of its reruns: walk back along the
 * candidates the shrink kept (then the run that found the failure) to the
 * smallest that fails every rerun, and make it minimal.drill; the flaky one
 * stays as minimal-flaky.drill. A rerun that does not fail ends a step
 * early. */
static void sd_x_walk_back(sd_xctx_t *X, sd_xfail_t *f, const sd_xsched_t *failing, int candidates) {
    f->flaky = sd_util_fmt("%s/minimal-flaky.drill", X->sdir);
    f->flaky_failed = f->confirm_failed;
    f->flaky_runs = f->confirm_runs;
    f->flaky_faults = f->faults;
    if (rename(f->minimal, f->flaky)) return;
    sd_x_say(X, "  the minimal drill failed %d of %d reruns: looking back for the smallest that fails every one", f->confirm_failed,
             f->confirm_runs);
    for (int k = X->nchain - 2; k >= -1 && !sd_run_stop_requested && !X->failed_hard; k--) {
        const sd_xsched_t *s = k >= 0 ? &X->chain[k] : failing;
        char *drill = sd_util_fmt("%s/back-%d.drill", X->sdir, X->nchain - 1 - k);
        char *base = sd_util_fmt("%s/back-%d", X->sdir, X->nchain - 1 - k);
        char *text = sd_x_drill_text(X, s, "explore: looking back for a drill that fails every rerun");
        int runs = 0, shown = 0;
        char *keep = NULL;
        if (!sd_x_write_drill(X, drill, text))
            shown = sd_x_try_drill(X, drill, base, X->o->confirm, SD_XT_UNTIL_MISSED, &runs, &keep);
        sd_x_say(X, "  back %d: %d actions, %d faults: failed %d of %d", X->nchain - 1 - k, s->n, sd_xsched_fault_count(s), shown,
                 runs);
        int reliable = runs == X->o->confirm && shown == runs;
        if (reliable && !sd_x_set_minimal(X, f, s, f->minimal, candidates)) {
            f->walked_back = X->nchain - 1 - k;
            f->confirm_failed = shown;
            f->confirm_runs = runs;
            free(f->report);
            f->report = keep ? keep : sd_util_strdup("");
            keep = NULL;
        }
        free(keep);
        free(text);
        free(base);
        free(drill);
        if (f->walked_back) return;
    }
    /* none fails every rerun: the smallest stays the minimal drill */
    if (rename(f->flaky, f->minimal) == 0) {
        free(f->flaky);
        f->flaky = NULL;
    }
}

static void sd_x_shrink_one(sd_xctx_t *X, sd_xfail_t *f, int index) {
    int64_t t0 = sd_util_mono_ms();
    sd_xsched_t failing, min;
    sd_xsched_generate(&X->caps, X->o->seed, f->first_run, &failing);
    f->actions0 = failing.n;
    f->faults0 = sd_xsched_fault_count(&failing);
    X->signature = f->signature;
    X->sdir = sd_util_fmt("%s/shrink-%d", X->x->dir, index + 1);
    X->cand = 0;
    X->runs_left = X->o->shrink_runs;
    f->log = sd_util_fmt("%s/shrink.md", X->sdir);
    sd_util_mkdirs(X->sdir, NULL, 0);
    X->slog = fopen(f->log, "w");
    if (X->slog)
        fprintf(X->slog, "# Shrinking [%s] from run %d (seed %llu)\n\nEach candidate is run up to %d times; it is kept when one "
                         "run shows the signature.\n\n| candidate | move | | actions | faults | runs |\n|---|---|---|---:|---:|---:|\n",
                f->signature, f->first_run, (unsigned long long)X->o->seed, X->o->tries);
    sd_x_say(X, "shrinking [%s] from run %d: %d actions, %d faults", f->signature, f->first_run, failing.n, f->faults0);
    sd_shrink_cfg_t cfg = {.attempt = sd_x_attempt, .log = sd_x_log, .ctx = X, .tries = X->o->tries};
    sd_shrink_stats_t st;
    sd_shrink(&cfg, &failing, &min, &st);
    if (X->slog) fclose(X->slog);
    X->slog = NULL;
    f->candidates = st.candidates;
    f->kept = st.kept;
    f->runs = st.runs;
    f->stopped = st.stopped;
    char *path = sd_util_fmt("%s/minimal.drill", X->sdir);
    if (!sd_x_set_minimal(X, f, &min, path, st.candidates) && X->o->confirm > 0 && !sd_run_stop_requested) {
        char *base = sd_util_fmt("%s/confirm", X->sdir);
        char *keep = NULL;
        f->confirm_failed = sd_x_try_drill(X, f->minimal, base, X->o->confirm, SD_XT_ALL, &f->confirm_runs, &keep);
        f->report = keep ? keep : sd_util_strdup("");
        free(base);
        if (f->confirm_failed < f->confirm_runs && !sd_run_stop_requested && !X->failed_hard)
            sd_x_walk_back(X, f, &failing, st.candidates);
    }
    free(path);
    if (!f->report) f->report = sd_util_strdup("");
    if (!f->confirm_runs && sd_run_stop_requested)
        sd_x_say(X, "shrinking [%s] interrupted at %d actions, %d fault%s (from %d, %d), not confirmed: %s", f->signature, f->actions,
                 f->faults, f->faults == 1 ? "" : "s", f->actions0, f->faults0, f->minimal ? f->minimal : "(none)");
    else
        sd_x_say(X, "minimal drill of [%s]: %d actions, %d fault%s (from %d, %d), fails %d of %d runs: %s", f->signature, f->actions,
                 f->faults, f->faults == 1 ? "" : "s", f->actions0, f->faults0, f->confirm_failed, f->confirm_runs, f->minimal);
    f->secs = (double)(sd_util_mono_ms() - t0) / 1000.0;
    for (int i = 0; i < X->nchain; i++) sd_xsched_free(&X->chain[i]);
    free(X->chain);
    X->chain = NULL;
    X->nchain = 0;
    free(X->sdir);
    X->sdir = NULL;
    sd_xsched_free(&failing);
    sd_xsched_free(&min);
}

/* ---- the command ---- */

/* The explore folder: a previous explore of the same file is replaced (its
 * explore.json names this folder), an empty folder is used, anything else
 * is refused and kept. */
static int sd_x_prepare_dir(const char *dir, char *err, size_t errlen) {
    char *marker = sd_util_fmt("%s/explore.json", dir);
    json_t *root = json_load_file(marker, 0, NULL);
    free(marker);
    const char *was = root ? json_string_value(json_object_get(root, "dir")) : NULL;
    int ours = was && !strcmp(was, dir);
    json_decref(root);
    return sd_util_replace_dir(dir, ours, "streamdrill explore wrote (no explore.json of this folder)", err, errlen) ? -1 : 0;
}

void sd_xreport_free(sd_xreport_t *x) {
    for (int i = 0; i < x->nruns; i++) {
        free(x->runs[i].drill);
        free(x->runs[i].run_dir);
        free(x->runs[i].signature);
    }
    for (int i = 0; i < x->nfails; i++) {
        sd_xfail_t *f = &x->fails[i];
        free(f->signature); free(f->minimal); free(f->steps); free(f->log); free(f->report); free(f->flaky);
    }
    free(x->runs);
    free(x->fails);
    free(x->cover);
    free(x->file);
    free(x->dir);
    free(x->name);
}

static int sd_x_print(sd_xctx_t *X) {
    int n = X->o->runs ? X->o->runs : 20;
    for (int run = 1; run <= n; run++) {
        int faults;
        char *text = sd_x_run_text(X, run, &faults);
        printf("%s%s", run > 1 ? "\f\n" : "", text);
        free(text);
    }
    return SD_EXIT_PASS;
}

int sd_explore(const sd_explore_opts_t *o, sd_xreport_t *x) {
    *x = (sd_xreport_t){.seed = o->seed, .jobs = o->jobs, .tries = o->tries, .broker_kind = o->cluster ? "cluster" : o->brokers ? "external" : "embedded"};
    sd_xctx_t X = {.o = o, .x = x, .t0 = sd_util_mono_ms()};
    char err[2048];
    char *text = NULL;
    size_t len = 0;
    sd_scenario_t *sc = NULL;
    int rc = SD_EXIT_USAGE, added_start = 0;
    if (sd_util_read_file(o->file, &text, &len, err, sizeof(err))) {
        fprintf(stderr, "streamdrill explore: %s: cannot read the scenario: %s\n", o->file, err);
        return SD_EXIT_USAGE;
    }
    if (sd_scenario_parse_text(o->file, text, o->sets, &sc, err, sizeof(err))) {
        /* a header with no steps is what explore expects: check it with a
         * step that needs nothing after it (the header's line numbers unchanged) */
        char *with = strstr(err, "expected at least one step") ? sd_util_fmt("%s\nnote header\n", text) : NULL;
        int bad = !with || sd_scenario_parse_text(o->file, with, o->sets, &sc, err, sizeof(err));
        free(with);
        if (bad) {
            fprintf(stderr, "%s\n", err);
            goto done;
        }
        added_start = 1; /* the `note` added here is no step of the file */
    }
    if (!sc->argc) {
        fprintf(stderr, "streamdrill explore: %s: no `pipeline` line: explore starts, kills and restarts a pipeline\n", o->file);
        goto done;
    }
    if (!sc->nsinks) {
        fprintf(stderr, "streamdrill explore: %s: no `sink` line: nothing would be judged\n", o->file);
        goto done;
    }
    sd_xsched_caps(sc, !o->brokers && !o->cluster, &X.caps);
    X.caps.brokers = o->cluster || o->nbrokers > 1;
    if (o->cluster) {
        /* a cluster whose brokers reach each other through links the runs can cut */
        sd_cluster_t *cl = NULL;
        if (sd_cluster_load(o->cluster, &cl, err, sizeof(err))) {
            fprintf(stderr, "streamdrill explore: %s\n", err);
            goto done;
        }
        X.caps.isolate = cl->cut_path != NULL;
        sd_cluster_free(cl);
    }
    if (sd_x_prepare_text(&X, text, sc, added_start, err, sizeof(err))) {
        fprintf(stderr, "streamdrill explore: %s\n", err);
        goto done;
    }
    if (o->print_only) {
        rc = sd_x_print(&X);
        goto done;
    }
    x->file = sd_util_abspath(o->file);
    x->name = sd_util_strdup(sc->name);
    {
        char *rel = sd_util_fmt("%s/%s-explore", o->out, sc->name);
        x->dir = sd_util_abspath(rel);
        free(rel);
    }
    if (sd_x_prepare_dir(x->dir, err, sizeof(err))) {
        fprintf(stderr, "streamdrill explore: %s\n", err);
        goto done;
    }
    char plan[96];
    if (o->runs && o->budget_ms) snprintf(plan, sizeof(plan), "%d runs at most, for %llds at most", o->runs, (long long)(o->budget_ms / 1000));
    else if (o->runs) snprintf(plan, sizeof(plan), "%d runs", o->runs);
    else snprintf(plan, sizeof(plan), "for %llds", (long long)(o->budget_ms / 1000));
    sd_x_say(&X, "exploring %s: seed %llu, %s, %d at a time, into %s", o->file, (unsigned long long)o->seed, plan, o->jobs, x->dir);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores > 0 && o->jobs > cores)
        fprintf(stderr, "streamdrill explore: warning: --jobs %d on %ld cores: runs compete for the CPU, so a mid-batch kill or a "
                        "pause lands later than it would alone\n", o->jobs, cores);
    sd_x_explore(&X);
    x->explore_secs = (double)(sd_util_mono_ms() - X.t0) / 1000.0;
    int64_t ts = sd_util_mono_ms();
    for (int i = 0; i < x->nfails && !sd_run_stop_requested && !X.failed_hard; i++) sd_x_shrink_one(&X, &x->fails[i], i);
    x->shrink_secs = (double)(sd_util_mono_ms() - ts) / 1000.0;
    x->total_secs = (double)(sd_util_mono_ms() - X.t0) / 1000.0;
    if (sd_run_stop_requested) x->ended = "interrupted"; /* while shrinking, too */
    if (sd_run_stop_requested) rc = SD_EXIT_INTERRUPTED;
    else if (X.failed_hard) rc = SD_EXIT_INTERNAL;
    else if (x->nfails) rc = SD_EXIT_FAIL;
    else if (!x->nruns || x->inconclusive * 10 > x->nruns) rc = SD_EXIT_INCONCLUSIVE;
    else rc = SD_EXIT_PASS;
    x->exit_code = rc;
    if (X.failed_hard) fprintf(stderr, "streamdrill explore: %s\n", X.err);
    x->explored = 1;
done:
    while (X.njobs) {
        for (int i = 0; i < X.njobs; i++) kill(-X.jobs[i].pid, SIGTERM);
        sd_xdone_t d;
        if (sd_x_wait_one(&X, &d, 0) < 0) break;
        sd_xdone_free(&d);
    }
    free(X.jobs);
    free(X.header);
    free(X.prefix);
    free(X.expects);
    sd_scenario_free(sc);
    free(text);
    return rc;
}

void sd_explore_tell(const sd_xreport_t *x) {
    fprintf(stderr, "%s: %d runs (%d passed, %d failed, %d inconclusive), %d distinct failure%s; %.0fs\n  report: %s/explore.md\n",
            x->name, x->nruns, x->passed, x->failed, x->inconclusive, x->nfails, x->nfails == 1 ? "" : "s", x->total_secs, x->dir);
    for (int i = 0; i < x->nfails; i++) {
        if (!x->fails[i].confirm_runs) {
            fprintf(stderr, "  [%s]: %s (%s)\n", x->fails[i].signature, x->fails[i].minimal ? x->fails[i].minimal : "(not shrunk)",
                    sd_run_stop_requested ? "shrinking interrupted: not confirmed" : "not confirmed");
            continue;
        }
        fprintf(stderr, "  [%s]: %s (%d fault step%s, fails %d of %d reruns)\n", x->fails[i].signature,
                x->fails[i].minimal ? x->fails[i].minimal : "(not shrunk)", x->fails[i].faults, x->fails[i].faults == 1 ? "" : "s",
                x->fails[i].confirm_failed, x->fails[i].confirm_runs);
    }
}
