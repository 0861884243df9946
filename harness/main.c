/* main.c - the streamdrill command line. The only place that prints
 * errors and chooses exit codes (see err.h and README.md "Exit codes"). */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include "report.h"
#include "broker.h"
#include "props.h"
#include "command.h"
#include "deployed.h"
#include "links.h"
#include "err.h"
#include "explore.h"
#include "init.h"
#include "lang.h"
#include "run.h"
#include "scenario.h"
#include "util.h"
#include "watchdog.h"

#define SD_VERSION "0.1.0"

/* The parsed options: the only global besides the stop flag. */
static struct {
    const char *out;
    const char *brokers;
    int has_seed;
    uint64_t seed;
    const char *tag;
    const char *summary;
    const char *proxy;
    const char *cluster;
    sd_kvlist_t sets;
    sd_kvlist_t xprops;       /* the harness's client properties: --kafka-config's, then -X's */
    sd_kvlist_t xcli;         /* -X alone (explore passes them on beside --kafka-config) */
    const char *kafka_config; /* --kafka-config FILE, made absolute */
    int quiet, verbose, json;
    int operator_mode;
    int reports_failed; /* --reports failed: a pass writes summary.json and junit.xml only */
    int nbrokers;
    /* explore */
    int runs, jobs, tries, confirm, shrink_runs, keep_steps, keep_going, print_only;
    int64_t budget_ms;
    /* init */
    const char *pipeline, *sink, *progress, *name;
} sd_opt = {.out = "streamdrill-out", .nbrokers = 1, .jobs = 1, .tries = 3, .confirm = 10, .shrink_runs = 300};

enum { OPT_OUT = 'o', OPT_BROKERS = 'b', OPT_SEED = 1000, OPT_TAG, OPT_SET, OPT_QUIET, OPT_VERBOSE, OPT_HELP, OPT_VERSION,
       OPT_SUMMARY, OPT_NBROKERS, OPT_PROXY, OPT_CLUSTER, OPT_RUNS, OPT_BUDGET, OPT_JOBS, OPT_TRIES, OPT_CONFIRM, OPT_SHRINK_RUNS,
       OPT_KEEP_STEPS, OPT_KEEP_GOING, OPT_PRINT, OPT_PIPELINE, OPT_SINK, OPT_PROGRESS, OPT_NAME, OPT_OPERATOR, OPT_JSON, OPT_REPORTS, OPT_KAFKA_CONFIG };

static const struct option sd_long_opts[] = {
    {"out", required_argument, NULL, OPT_OUT},
    {"brokers", required_argument, NULL, OPT_BROKERS},
    {"seed", required_argument, NULL, OPT_SEED},
    {"tag", required_argument, NULL, OPT_TAG},
    {"set", required_argument, NULL, OPT_SET},
    {"summary", required_argument, NULL, OPT_SUMMARY},
    {"json", no_argument, NULL, OPT_JSON},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"verbose", no_argument, NULL, OPT_VERBOSE},
    {"broker-count", required_argument, NULL, OPT_NBROKERS},
    {"proxy", required_argument, NULL, OPT_PROXY},
    {"kafka-config", required_argument, NULL, OPT_KAFKA_CONFIG},
    {"cluster", required_argument, NULL, OPT_CLUSTER},
    {"operator", required_argument, NULL, OPT_OPERATOR},
    {"reports", required_argument, NULL, OPT_REPORTS},
    {"runs", required_argument, NULL, OPT_RUNS},
    {"budget", required_argument, NULL, OPT_BUDGET},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"tries", required_argument, NULL, OPT_TRIES},
    {"confirm", required_argument, NULL, OPT_CONFIRM},
    {"shrink-runs", required_argument, NULL, OPT_SHRINK_RUNS},
    {"keep-steps", no_argument, NULL, OPT_KEEP_STEPS},
    {"keep-going", no_argument, NULL, OPT_KEEP_GOING},
    {"print", no_argument, NULL, OPT_PRINT},
    {"pipeline", required_argument, NULL, OPT_PIPELINE},
    {"sink", required_argument, NULL, OPT_SINK},
    {"progress", required_argument, NULL, OPT_PROGRESS},
    {"name", required_argument, NULL, OPT_NAME},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0}};

static void sd_usage_commands(FILE *f);

static void sd_usage(FILE *f) {
    sd_usage_commands(f);
    fputs("       streamdrill help [NAME | --markdown]   the scenario language: every directive and step, or one\n"
          "       streamdrill help --events              the events on the wire: fields, formats, each malformed kind\n"
          "       streamdrill --help | --version\n"
          "\n"
          "Run options:\n"
          "  -o, --out DIR          write DIR/<scenario>/ per scenario (default: streamdrill-out)\n"
          "      --seed N           seed of the event generator (overrides the scenario's)\n"
          "      --tag TAG          run tag, the prefix of every ledger id (default: random)\n"
          "      --set NAME=VALUE   set a scenario {variable}; repeatable\n"
          "      --summary FILE     append each verdict, its checks and faults to FILE (e.g. $GITHUB_STEP_SUMMARY)\n"
          "      --json             print each scenario's summary.json on stdout, one line each\n"
          "      --operator MODE    who answers `operator` steps: ask (a person, on this terminal) or auto (their\n"
          "                         command=); default: ask when stdin is a terminal, else auto\n"
          "      --reports WHICH    all (default), or failed: a drill that passes writes summary.json and junit.xml\n"
          "                         only (`streamdrill report DIR` writes the rest from run.db when wanted)\n"
          "\n"
          "Init options:\n"
          "      --pipeline CMD     the pipeline's command line (default: the reference pipeline, refpipe)\n"
          "      --sink KIND        sqlite (default), postgres, kafka, jsonl, spark-files, flink-files, delta, command\n"
          "      --progress SOURCE  markers (refpipe's default), group (default with --pipeline), spark, flink, sink\n"
          "      --name NAME        the scenario's name (default: FILE without .drill)\n"
          "\n"
          "Explore options:\n"
          "      --runs N           schedules to run (default 20 without --budget)\n"
          "      --budget D         explore for this long (30s, 10m, 1h)\n"
          "      --seed N           the schedules' seed (default: random, printed)\n"
          "      --jobs J           schedules run at once (default 1)\n"
          "      --tries K          runs of a shrink candidate before it is dropped (default 3)\n"
          "      --confirm N        reruns of each minimal drill (default 10)\n"
          "      --shrink-runs N    runs one shrink may make (default 300)\n"
          "      --keep-steps       run FILE's own steps first and judge by its expect lines\n"
          "      --keep-going       explore to the end of the runs or budget, not to the first failure\n"
          "      --print            print the schedules of runs 1..N and run nothing\n"
          "\n"
          "Kafka options:\n"
          "  -b, --brokers LIST     bootstrap servers; default $KAFKA_BOOTSTRAP_SERVERS, else the\n"
          "                         embedded cluster (librdkafka's mock cluster, in-process)\n"
          "  -X PROP=VALUE          librdkafka property for the harness's clients; repeatable\n"
          "      --kafka-config FILE  librdkafka properties, one KEY=VALUE a line (kcat -F's file):\n"
          "                         every client of the harness carries them (before -X), the\n"
          "                         pipeline gets FILE as {kafka-config} and $STREAMDRILL_KAFKA_CONFIG;\n"
          "                         ${ENV:NAME} in a value reads the environment; values of\n"
          "                         properties named *password* or *secret* are shown as ***\n"
          "      --proxy L=U        run a fault-injecting TCP proxy on L (host:port) in front of the\n"
          "                         broker listener U; pipelines connect through {proxy}\n"
          "      --cluster DIR      the cluster DIR/cluster describes (scenarios/env/kafka/kafka.sh\n"
          "                         cluster DIR starts one): its brokers are the bootstrap, and\n"
          "                         `broker` steps may kill, stop, pause and start them\n"
          "      --broker-count N   the embedded cluster with N brokers (`broker kill|stop|start`)\n"
          "\n"
          "Output options:\n"
          "  -q, --quiet            no progress lines\n"
          "  -v, --verbose          more detail per step\n"
          "\n"
          "Exit codes: 0 every scenario passed, 1 a check failed, 2 bad usage or bad scenario,\n"
          "3 inconclusive (broker unreachable, pipeline never started, no quiescence, sink unreadable),\n"
          "4 harness error, 130 interrupted.\n",
          f);
}

static void sd_version(void) {
    printf("streamdrill %s\n", SD_VERSION);
    printf("  librdkafka %s (embedded cluster: mock)\n", rd_kafka_version_str());
    printf("  sqlite %s\n", sqlite3_libversion());
    printf("  jansson %s\n", JANSSON_VERSION);
    printf("  report writers: summary.json junit.xml report.md report.html charts/ (gnuplot) export/ (CSV); index.html over several runs\n");
    sd_buf_t kinds;
    sd_buf_init(&kinds);
    sd_lang_sink_kinds(&kinds);
    printf("  sink readers: %s\n", kinds.data);
    sd_buf_free(&kinds);
    printf("  injectors: process (start stop kill restart pause resume), data (replay, late, out-of-order, future,\n"
           "             boundaries, bursts, skew, schema drift, malformed), clock (libfaketime), storage (checkpoint\n"
           "             damage), network (mock cluster faults, TCP proxy), broker (kill, stop, pause, start a broker\n"
           "             of a cluster, or of the embedded cluster)\n");
    printf("  explore: random fault schedules from a seed, delta-debugging shrinker with flaky tries\n");
}

static void sd_on_signal(int sig) {
    (void)sig;
    sd_run_stop_requested = 1;
}

static int sd_parse_kv(const char *arg, sd_kvlist_t *into, const char *what) {
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) {
        fprintf(stderr, "streamdrill: %s %s: expected NAME=VALUE\n", what, arg);
        return -1;
    }
    char *k = sd_util_strndup(arg, (size_t)(eq - arg));
    sd_kvlist_add(into, k, eq + 1);
    free(k);
    return 0;
}

static int sd_verb_check(int nfiles, char **files) {
    int bad = 0;
    for (int i = 0; i < nfiles; i++) {
        sd_scenario_t *sc;
        char err[16384]; /* up to SD_PARSE_MAX_ERRORS lines, each named */
        if (sd_scenario_parse(files[i], &sd_opt.sets, &sc, err, sizeof(err))) {
            fprintf(stderr, "%s\n", err);
            bad = 1;
            continue;
        }
        if (!sd_opt.quiet) printf("%s: ok (%s, %d steps)\n", files[i], sc->name, sc->nsteps);
        sd_scenario_free(sc);
    }
    return bad ? SD_EXIT_USAGE : SD_EXIT_PASS;
}

/* `streamdrill init FILE`: the starter drill, proved by the parser before
 * it is written; an existing FILE is never replaced. */
static int sd_verb_init(int nfiles, char **files) {
    if (nfiles != 1) {
        fprintf(stderr, "streamdrill init: expected one file to write (or - for stdout), found %d\n", nfiles);
        return SD_EXIT_USAGE;
    }
    const char *file = files[0];
    int to_stdout = !strcmp(file, "-");
    char *stem = to_stdout ? sd_util_strdup("first-drill") : sd_util_stem(file);
    sd_init_opts_t o = {.pipeline = sd_opt.pipeline, .sink = sd_opt.sink, .progress = sd_opt.progress,
                        .name = sd_opt.name ? sd_opt.name : stem};
    char err[2048];
    sd_buf_t b;
    sd_buf_init(&b);
    int rc = SD_EXIT_PASS;
    sd_scenario_t *sc = NULL;
    const char *hole = NULL;
    /* the placeholder left for the user is filled in for init's own parse only */
    sd_kvlist_t sets = {0};
    for (int i = 0; i < sd_opt.sets.n; i++) sd_kvlist_add(&sets, sd_opt.sets.v[i].key, sd_opt.sets.v[i].value);
    sd_err_t ie = sd_init_drill(&o, &b, &hole, err, sizeof(err));
    if (!ie && hole) sd_kvlist_add(&sets, hole, "x");
    if (ie) {
        fprintf(stderr, "streamdrill init: %s\n", err);
        rc = SD_EXIT_USAGE;
    } else if (sd_scenario_parse_text(to_stdout ? "<stdout>" : file, b.data, &sets, &sc, err, sizeof(err))) {
        /* a pipeline line the language refuses (an unknown {placeholder}, a quote left open) */
        fprintf(stderr, "streamdrill init: the drill it would write does not parse: %s\n", err);
        rc = SD_EXIT_USAGE;
    } else if (to_stdout) {
        fwrite(b.data, 1, b.len, stdout);
    } else if (sd_util_exists(file)) {
        fprintf(stderr, "streamdrill init: %s exists: refusing to replace it\n", file);
        rc = SD_EXIT_USAGE;
    } else {
        /* its folder made first (`init drills/first.drill` in a new repository);
         * "x": created here or not at all (sd_util_write_file would replace a file made meanwhile) */
        char *dir = sd_util_dirname(file);
        char derr[512] = "";
        int made = !strcmp(dir, ".") || !sd_util_mkdirs(dir, derr, sizeof(derr));
        free(dir);
        FILE *f = made ? fopen(file, "wx") : NULL;
        int bad = !f;
        if (!made) {
            fprintf(stderr, "streamdrill init: %s\n", derr);
            rc = SD_EXIT_INTERNAL;
        } else if (f) {
            bad = fwrite(b.data, 1, b.len, f) != b.len;
            bad |= fclose(f) != 0;
        }
        if (bad && made) {
            fprintf(stderr, "streamdrill init: write %s: %s\n", file, strerror(errno));
            if (f) unlink(file);
            rc = SD_EXIT_INTERNAL;
        } else if (!bad && !sd_opt.quiet) {
            printf("%s: written (%s, %d steps); check it with `streamdrill check %s`, run it with `streamdrill run %s`\n",
                   file, sc->name, sc->nsteps, file, file);
            if (hole)
                printf("%s: fill in {%s} first (the path your pipeline's sink writes; its command line names none), or "
                       "pass --set %s=PATH\n", file, hole, hole);
        }
    }
    if (sc) sd_scenario_free(sc);
    sd_kvlist_free(&sets);
    sd_buf_free(&b);
    free(stem);
    return rc;
}

static int sd_cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Rebuild the reports of one run folder. */
static int sd_report_one(const char *dir) {
    char err[1024];
    /* a run still going holds its run.db locked: its reports are its own */
    char *db = sd_util_fmt("%s/run.db", dir);
    int fd = open(db, O_RDONLY | O_CLOEXEC);
    free(db);
    if (fd >= 0) {
        int busy = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
        close(fd);
        if (busy) {
            fprintf(stderr, "streamdrill: %s: the run is still in progress (its harness holds run.db); nothing written\n", dir);
            return SD_EXIT_USAGE;
        }
    }
    sd_buf_t written, missing, timings;
    sd_buf_init(&written);
    sd_buf_init(&missing);
    sd_buf_init(&timings);
    sd_err_t e = sd_report_write_all(dir, 0, &written, &missing, &timings, err, sizeof(err));
    int rc = SD_EXIT_PASS;
    if (e && !written.len) {
        /* nothing written: not a run folder, or run.db unreadable */
        fprintf(stderr, "streamdrill: %s\n", err);
        rc = SD_EXIT_USAGE;
    } else {
        if (!sd_opt.quiet) printf("%s: rebuilt %s\n", dir, written.data);
        if (sd_opt.verbose) printf("%s: writers took %s\n", dir, timings.data ? timings.data : "");
        if (missing.len) printf("%s: the run did not finish; missing:\n  %.*s\n", dir, (int)missing.len - 1, missing.data);
        if (e) {
            fprintf(stderr, "streamdrill: %s: %s\n", dir, err);
            rc = SD_EXIT_INTERNAL;
        }
    }
    sd_buf_free(&written);
    sd_buf_free(&missing);
    sd_buf_free(&timings);
    return rc;
}

/* `report DIR...`: each DIR a run folder, or an output folder whose
 * sub-folders are run folders (its index is rebuilt too). */
static int sd_verb_report(int ndirs, char **dirs) {
    int rc = SD_EXIT_PASS;
    for (int i = 0; i < ndirs; i++) {
        char *db = sd_util_fmt("%s/run.db", dirs[i]);
        int is_run = sd_util_exists(db);
        free(db);
        if (is_run || !sd_util_is_dir(dirs[i])) {
            int r = sd_report_one(dirs[i]);
            if (r > rc) rc = r;
            continue;
        }
        DIR *d = opendir(dirs[i]);
        char **runs = NULL;
        int nruns = 0;
        struct dirent *de;
        while (d && (de = readdir(d))) {
            if (de->d_name[0] == '.') continue;
            char *sub = sd_util_fmt("%s/%s", dirs[i], de->d_name), *subdb = sd_util_fmt("%s/run.db", sub);
            if (sd_util_exists(subdb)) {
                runs = sd_util_xrealloc(runs, sizeof(*runs) * (size_t)(nruns + 1));
                runs[nruns++] = sub;
            } else {
                free(sub);
            }
            free(subdb);
        }
        if (d) closedir(d);
        if (!nruns) {
            fprintf(stderr, "streamdrill: %s: neither a run folder (no run.db) nor a folder of runs\n", dirs[i]);
            rc = SD_EXIT_USAGE;
        }
        qsort(runs, (size_t)nruns, sizeof(*runs), sd_cmp_str);
        for (int k = 0; k < nruns; k++) {
            int r = sd_report_one(runs[k]);
            if (r > rc) rc = r;
        }
        char err[1024];
        if (nruns && sd_report_index(dirs[i], runs, nruns, err, sizeof(err))) {
            fprintf(stderr, "streamdrill: %s\n", err);
            rc = SD_EXIT_INTERNAL;
        } else if (nruns && !sd_opt.quiet) {
            printf("%s: rebuilt index.html junit.xml (%d runs)\n", dirs[i], nruns);
        }
        for (int k = 0; k < nruns; k++) free(runs[k]);
        free(runs);
    }
    return rc;
}

/* Load each run folder's report model and hand it to row; a folder that is
 * no run is said and makes the exit a usage error. */
static int sd_each_run(int ndirs, char **dirs, void (*row)(const sd_report_model_t *m)) {
    int rc = SD_EXIT_PASS;
    for (int i = 0; i < ndirs; i++) {
        sd_report_model_t *m = NULL;
        char err[1024];
        if (sd_report_model_load(dirs[i], &m, err, sizeof(err))) {
            fprintf(stderr, "streamdrill: %s\n", err);
            rc = SD_EXIT_USAGE;
            continue;
        }
        row(m);
        sd_report_model_free(m);
    }
    return rc;
}

static void sd_runbook_row(const sd_report_model_t *m) {
    sd_buf_t b;
    sd_buf_init(&b);
    sd_buf_printf(&b, "# %s: %s (%s)\n", m->scenario, m->verdict, m->started_at);
    sd_report_runbook_md(&b, m);
    fputs(b.data, stdout);
    sd_buf_free(&b);
}

/* streamdrill ack DIR: confirm the operator step the run writing DIR waits
 * for (DIR/operator.ack, written whole: the run takes it and removes it). */
static int sd_verb_ack(int ndirs, char **dirs) {
    if (ndirs != 1) {
        fprintf(stderr, "streamdrill ack: expected one run folder (the DIR the waiting run names)\n");
        return SD_EXIT_USAGE;
    }
    char *db = sd_util_fmt("%s/run.db", dirs[0]);
    int is_run = sd_util_exists(db);
    free(db);
    if (!is_run) {
        fprintf(stderr, "streamdrill ack: %s: no run.db in this folder, so no run waits there\n", dirs[0]);
        return SD_EXIT_USAGE;
    }
    char *tmp = sd_util_fmt("%s/operator.ack.tmp", dirs[0]), *ack = sd_util_fmt("%s/operator.ack", dirs[0]);
    char err[512];
    sd_err_t e = sd_util_write_file(tmp, "ack\n", 4, err, sizeof(err));
    if (!e && rename(tmp, ack)) e = sd_err_set(err, sizeof(err), SD_ERR_IO, "rename %s: %s", ack, strerror(errno));
    if (e) fprintf(stderr, "streamdrill ack: %s\n", err);
    else printf("confirmed: the run in %s goes on\n", dirs[0]);
    free(tmp);
    free(ack);
    return e ? SD_EXIT_INTERNAL : SD_EXIT_PASS;
}

/* streamdrill runbook DIR...: each run's runbook section, as Markdown on stdout. */
static int sd_verb_runbook(int ndirs, char **dirs) {
    return sd_each_run(ndirs, dirs, sd_runbook_row);
}

static const char *const sd_compare_cols[] = {"produced", "observed_rows", "observed_unique", "duplicated", "duplicate_rows",
                                              "lost", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "latency_max_ms",
                                              "batch_p95_ms", "throughput_rps", "backlog_max", "files_written",
                                              "files_per_batch_max", "file_bytes_p50", NULL};
/* each run's recovery: the slowest fault's, and the input and rows redone over all faults */
static const int sd_compare_figs[] = {SD_FIG_recovery_s, SD_FIG_replayed_input, SD_FIG_rewritten_rows, SD_FIG_batches_rerun};

static void sd_compare_row(const sd_report_model_t *m) {
    printf("| %s | %s | %s |", m->scenario, m->vars, m->verdict);
    for (int c = 0; sd_compare_cols[c]; c++) {
        int64_t v = sd_report_count(m, sd_compare_cols[c]);
        if (v < 0) printf(" n/a |");
        else printf(" %lld |", (long long)v);
    }
    for (size_t k = 0; k < sizeof(sd_compare_figs) / sizeof(sd_compare_figs[0]); k++) {
        int fig = sd_compare_figs[k], any = 0;
        int64_t v = 0;
        for (int f = 0; f < m->nfaults; f++) {
            int64_t x = m->faults[f].has_recovery ? m->faults[f].fig[fig] : SD_FIG_NA;
            if (x == SD_FIG_NA || x == SD_FIG_UNMEASURED) continue;
            if (fig == SD_FIG_recovery_s) v = !any || x > v ? x : v; /* never (INT64_MAX) is the slowest */
            else v += x;
            any = 1;
        }
        char t[48];
        sd_figure_text(fig, any ? v : SD_FIG_UNMEASURED, t, sizeof(t));
        printf(" %s |", any ? t : "n/a");
    }
    const char *kill = "";
    for (int f = 0; f < m->nfaults; f++)
        if (!strcmp(m->faults[f].kind, "kill")) { kill = m->faults[f].landing; break; }
    printf(" %s |\n", kill);
}

/* Side by side: the same counts of several run folders (a matrix of one
 * drill, for instance real-time mode intervals against micro-batches). */
static int sd_verb_compare(int ndirs, char **dirs) {
    printf("| run | variables | verdict |");
    for (int c = 0; sd_compare_cols[c]; c++) printf(" %s |", sd_compare_cols[c]);
    printf(" recovery_s (slowest) | replayed_input | rewritten_rows | batches_rerun | kill |\n|---|---|---|");
    for (int c = 0; sd_compare_cols[c]; c++) printf("---:|");
    printf("---:|---:|---:|---:|---|\n");
    return sd_each_run(ndirs, dirs, sd_compare_row);
}

static int sd_verb_broker(int nargs, char **args) {
    (void)nargs; (void)args;
    sd_broker_t *b;
    char err[1024];
    if (sd_broker_embedded(sd_opt.nbrokers, &b, err, sizeof(err))) {
        fprintf(stderr, "streamdrill: %s\n", err);
        return SD_EXIT_INCONCLUSIVE;
    }
    printf("%s\n", sd_broker_bootstrap(b));
    fflush(stdout);
    if (!sd_opt.quiet) fprintf(stderr, "streamdrill: embedded cluster (%d broker%s) at %s; Ctrl-C to stop\n", sd_opt.nbrokers,
                               sd_opt.nbrokers == 1 ? "" : "s", sd_broker_bootstrap(b));
    while (!sd_run_stop_requested) pause();
    sd_broker_close(b);
    return SD_EXIT_PASS;
}

/* --json: a run's summary.json on stdout as one line (JSON Lines over
 * several scenarios); the live lines stay on stderr. */
static int sd_print_summary_json(const char *run_dir) {
    char *path = sd_util_fmt("%s/summary.json", run_dir);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    int rc = -1;
    if (!j) {
        fprintf(stderr, "streamdrill: --json: %s:%d: %s\n", path, je.line, je.text);
    } else {
        char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (text && printf("%s\n", text) >= 0 && fflush(stdout) == 0) rc = 0;
        else fprintf(stderr, "streamdrill: --json: cannot write to stdout: %s\n", strerror(errno));
        free(text);
        json_decref(j);
    }
    free(path);
    return rc;
}

/* --summary: the part of report.md a job summary needs (the verdict, the
 * checks, the anomalies, the faults), without the charts (a relative path
 * a job summary cannot show) nor the sections a reader opens the full
 * report for; it ends by naming the full report. */
static int sd_append_summary(const char *run_dir, const char *file) {
    static const char *const skip[] = {"## Counts", "## Steps", "## Pipeline incarnations", "## Runbook", "## Reproduce", NULL};
    char *md = sd_util_fmt("%s/report.md", run_dir);
    char *text = NULL;
    size_t len = 0;
    int rc = 0;
    if (!sd_util_read_file(md, &text, &len, NULL, 0)) {
        FILE *f = fopen(file, "a");
        if (f) {
            int keep = 1;
            for (char *line = text; line && *line;) {
                char *nl = strchr(line, '\n');
                size_t n = nl ? (size_t)(nl - line) : strlen(line);
                if (!strncmp(line, "## ", 3)) {
                    keep = 1;
                    for (int i = 0; skip[i]; i++)
                        if (n == strlen(skip[i]) && !strncmp(line, skip[i], n)) keep = 0;
                }
                if (keep && strncmp(line, "![", 2)) fprintf(f, "%.*s\n", (int)n, line);
                line = nl ? nl + 1 : NULL;
            }
            fprintf(f, "\nFull report (counts, steps, runbook, charts): `%s/report.html`\n\n", run_dir);
            if (fclose(f)) rc = -1;
        } else {
            rc = -1;
        }
    }
    free(text);
    free(md);
    return rc;
}

/* The limits a run needs: librdkafka (the embedded cluster's brokers, the
 * producer, the sink readers), SQLite and the pipeline's pipes take file
 * descriptors and address space; below these the embedded cluster aborts
 * the process, or a full descriptor table looks like an unreachable
 * broker. A soft limit below them is raised to the hard one first. */
#define SD_MIN_FILES 64
#define SD_MIN_ADDRESS_SPACE (256ull << 20)

static int sd_check_resources(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < SD_MIN_FILES) {
        rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= SD_MIN_FILES ? SD_MIN_FILES : rl.rlim_max;
        rl.rlim_cur = want;
        if (want < SD_MIN_FILES || setrlimit(RLIMIT_NOFILE, &rl)) {
            fprintf(stderr, "streamdrill: the open-file limit is %llu (ulimit -n): a run needs at least %d; raise it\n",
                    (unsigned long long)rl.rlim_max < SD_MIN_FILES ? (unsigned long long)rl.rlim_max : (unsigned long long)want,
                    SD_MIN_FILES);
            return -1;
        }
    }
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < SD_MIN_ADDRESS_SPACE) {
        rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= SD_MIN_ADDRESS_SPACE ? SD_MIN_ADDRESS_SPACE : rl.rlim_max;
        rl.rlim_cur = want;
        if (want < SD_MIN_ADDRESS_SPACE || setrlimit(RLIMIT_AS, &rl)) {
            fprintf(stderr, "streamdrill: the address-space limit is %llu KiB (ulimit -v): a run needs at least %llu KiB; raise it\n",
                    (unsigned long long)want / 1024, SD_MIN_ADDRESS_SPACE / 1024);
            return -1;
        }
    }
    return 0;
}

static int sd_verb_run(int nfiles, char **files) {
    /* parse everything first: a bad scenario starts nothing */
    sd_scenario_t **scs = sd_util_xcalloc((size_t)nfiles, sizeof(*scs));
    int bad = 0;
    for (int i = 0; i < nfiles; i++) {
        char err[16384];
        if (sd_scenario_parse(files[i], &sd_opt.sets, &scs[i], err, sizeof(err))) {
            fprintf(stderr, "%s\n", err);
            bad = 1;
        }
    }
    for (int i = 0; !bad && i < nfiles; i++)
        for (int k = 0; k < i; k++)
            if (!strcmp(scs[i]->name, scs[k]->name)) {
                fprintf(stderr, "streamdrill: %s and %s are both named \"%s\": their run folders would collide (add a `name` line)\n",
                        files[k], files[i], scs[i]->name);
                bad = 1;
            }
    if (bad) {
        for (int i = 0; i < nfiles; i++) sd_scenario_free(scs[i]);
        free(scs);
        return SD_EXIT_USAGE;
    }
    if (!bad && sd_check_resources()) {
        for (int i = 0; i < nfiles; i++) sd_scenario_free(scs[i]);
        free(scs);
        return SD_EXIT_INTERNAL;
    }
    /* --summary must be writable before anything runs */
    if (sd_opt.summary) {
        FILE *f = fopen(sd_opt.summary, "a");
        if (!f) {
            fprintf(stderr, "streamdrill: --summary %s: cannot open for appending: %s\n", sd_opt.summary, strerror(errno));
            bad = 1;
        } else {
            fclose(f);
        }
    }
    /* -X properties are checked before anything is written: a bad one
     * must not cost the previous run's folder */
    {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        char cerr[512];
        for (int i = 0; i < sd_opt.xprops.n; i++)
            if (rd_kafka_conf_set(conf, sd_opt.xprops.v[i].key, sd_opt.xprops.v[i].value, cerr, sizeof(cerr)) != RD_KAFKA_CONF_OK) {
                int secret = sd_broker_prop_secret(sd_opt.xprops.v[i].key);
                if (secret) sd_broker_redact(cerr, sizeof(cerr), sd_opt.xprops.v[i].value);
                fprintf(stderr, "streamdrill: %s %s=%s: %s\n", i < sd_opt.xprops.n - sd_opt.xcli.n ? "--kafka-config" : "-X",
                        sd_opt.xprops.v[i].key, secret ? "***" : sd_opt.xprops.v[i].value, cerr);
                bad = 1;
            }
        rd_kafka_conf_destroy(conf);
        if (bad) {
            for (int i = 0; i < nfiles; i++) sd_scenario_free(scs[i]);
            free(scs);
            return SD_EXIT_USAGE;
        }
    }
    char token[33];
    sd_util_random_hex(token, 16);
    sd_watchdog_t *wd = NULL;
    char err[1024];
    if (sd_watchdog_start(token, &wd, err, sizeof(err))) {
        fprintf(stderr, "streamdrill: %s\n", err);
        for (int i = 0; i < nfiles; i++) sd_scenario_free(scs[i]);
        free(scs);
        return SD_EXIT_INTERNAL;
    }
    /* sink commands carry the run's token too, and stop with the run */
    sd_cmd_set_run(token, &sd_run_stop_requested);
    const char *brokers = sd_opt.brokers;
    if (sd_opt.nbrokers != 1 && (sd_opt.cluster || brokers)) {
        fprintf(stderr, "streamdrill: --broker-count %d sizes the embedded cluster: expected no --brokers or --cluster beside it\n", sd_opt.nbrokers);
        return SD_EXIT_USAGE;
    }
    if (sd_opt.cluster && brokers) {
        fprintf(stderr, "streamdrill: --cluster %s names the brokers already: expected no --brokers beside it\n", sd_opt.cluster);
        return SD_EXIT_USAGE;
    }
    if (!brokers && !sd_opt.cluster) {
        const char *env = getenv("KAFKA_BOOTSTRAP_SERVERS");
        if (env && *env) brokers = env;
    }
    sd_run_opts_t ro = {.brokers = brokers, .out_dir = sd_opt.out, .has_seed = sd_opt.has_seed, .seed = sd_opt.seed,
                        .tag = sd_opt.tag, .xprops = &sd_opt.xprops, .kafka_config = sd_opt.kafka_config,
                        .kafka_config_n = sd_opt.xprops.n - sd_opt.xcli.n, .quiet = sd_opt.quiet, .verbose = sd_opt.verbose,
                        .watchdog = wd, .token = token, .version = SD_VERSION, .proxy = sd_opt.proxy, .cluster = sd_opt.cluster, .nbrokers = sd_opt.nbrokers,
                        .operator_mode = sd_opt.operator_mode};
    int any_fail = 0, any_inconclusive = 0, any_error = 0, any_usage = 0, interrupted = 0;
    /* the verdict in colour on a terminal, unless NO_COLOR (no-color.org) says not */
    const char *nocolour = getenv("NO_COLOR");
    int colour = sd_util_is_terminal(2) && !(nocolour && *nocolour);
    char **run_dirs = sd_util_xcalloc((size_t)nfiles, sizeof(char *));
    int nrun_dirs = 0;
    for (int i = 0; i < nfiles && !sd_run_stop_requested; i++) {
        sd_run_result_t res;
        sd_run_scenario(scs[i], &ro, &res);
        int code = sd_err_exit_code(res.status);
        if (res.recorded && sd_report_write_all(res.run_dir, sd_opt.reports_failed && code == SD_EXIT_PASS, NULL, NULL, NULL, err,
                                                sizeof(err)) != SD_OK)
            fprintf(stderr, "streamdrill: reports for %s: %s\n", res.run_dir, err);
        if (res.run_dir[0]) run_dirs[nrun_dirs++] = sd_util_strdup(res.run_dir);
        const char *V = sd_report_verdict_word(res.verdict);
        const char *on = !colour ? "" : code == SD_EXIT_PASS ? "\033[1;32m" : code == SD_EXIT_FAIL ? "\033[1;31m" : "\033[1;33m";
        fprintf(stderr, "%s: %s%s%s%s%s%s\n", scs[i]->name, on, V, colour ? "\033[0m" : "", res.message[0] ? " (" : "", res.message,
                res.message[0] ? ")" : "");
        if (res.status != SD_OK && res.status != SD_ERR_CHECK_FAILED && res.message[0] && !sd_opt.quiet)
            fprintf(stderr, "streamdrill: %s: %s: %s\n", scs[i]->name, sd_strerror(res.status), res.message);
        if (res.run_dir[0]) {
            char *md = sd_util_fmt("%s/report.md", res.run_dir);
            if (sd_util_exists(md)) fprintf(stderr, "  report: %s\n", md);
            free(md);
            if (sd_opt.summary && sd_append_summary(res.run_dir, sd_opt.summary))
                fprintf(stderr, "streamdrill: --summary %s: cannot append: %s\n", sd_opt.summary, strerror(errno));
        }
        if (sd_opt.json && res.recorded && sd_print_summary_json(res.run_dir)) any_error = 1;
        if (code == SD_EXIT_FAIL) any_fail = 1;
        else if (code == SD_EXIT_INCONCLUSIVE) any_inconclusive = 1;
        else if (code == SD_EXIT_USAGE) any_usage = 1;
        else if (code == SD_EXIT_INTERRUPTED) interrupted = 1;
        else if (code != SD_EXIT_PASS) any_error = 1;
    }
    if (sd_run_stop_requested) interrupted = 1;
    if (nfiles > 1 && nrun_dirs) {
        /* one page and one JUnit document over all the scenarios */
        if (sd_report_index(sd_opt.out, run_dirs, nrun_dirs, err, sizeof(err))) fprintf(stderr, "streamdrill: %s\n", err);
        else fprintf(stderr, "index: %s/index.html, %s/junit.xml\n", sd_opt.out, sd_opt.out);
    }
    for (int i = 0; i < nrun_dirs; i++) free(run_dirs[i]);
    free(run_dirs);
    sd_watchdog_stop(wd);
    for (int i = 0; i < nfiles; i++) sd_scenario_free(scs[i]);
    free(scs);
    if (interrupted) return SD_EXIT_INTERRUPTED;
    if (any_usage) return SD_EXIT_USAGE;
    if (any_error) return SD_EXIT_INTERNAL;
    if (any_fail) return SD_EXIT_FAIL;
    if (any_inconclusive) return SD_EXIT_INCONCLUSIVE;
    return SD_EXIT_PASS;
}

/* An option of `streamdrill explore`; -1 (said) when its value is bad. */
static int sd_parse_explore_opt(int c, const char *arg) {
    switch (c) {
    case OPT_RUNS: case OPT_JOBS: case OPT_TRIES: case OPT_CONFIRM: case OPT_SHRINK_RUNS: {
        int64_t v;
        int lo = c == OPT_CONFIRM ? 0 : 1, hi = c == OPT_JOBS ? 64 : 1000000;
        if (sd_util_parse_count(arg, &v) || v < lo || v > hi) {
            fprintf(stderr, "streamdrill: --%s %s: expected a whole number from %d to %d\n",
                    c == OPT_RUNS ? "runs" : c == OPT_JOBS ? "jobs" : c == OPT_TRIES ? "tries" : c == OPT_CONFIRM ? "confirm" : "shrink-runs",
                    arg, lo, hi);
            return -1;
        }
        *(c == OPT_RUNS ? &sd_opt.runs : c == OPT_JOBS ? &sd_opt.jobs : c == OPT_TRIES ? &sd_opt.tries
          : c == OPT_CONFIRM ? &sd_opt.confirm : &sd_opt.shrink_runs) = (int)v;
        return 0;
    }
    case OPT_BUDGET:
        if (sd_util_parse_duration(arg, &sd_opt.budget_ms) || sd_opt.budget_ms <= 0) {
            fprintf(stderr, "streamdrill: --budget %s: expected a duration (30s, 10m, 1h)\n", arg);
            return -1;
        }
        return 0;
    case OPT_KEEP_STEPS: sd_opt.keep_steps = 1; return 0;
    case OPT_KEEP_GOING: sd_opt.keep_going = 1; return 0;
    default: sd_opt.print_only = 1; return 0;
    }
}

static int sd_verb_explore(int nfiles, char **files) {
    if (nfiles != 1) {
        fprintf(stderr, "streamdrill explore: expected one scenario file, found %d\n", nfiles);
        return SD_EXIT_USAGE;
    }
    if (sd_opt.summary || sd_opt.proxy || sd_opt.tag || sd_opt.json) {
        fprintf(stderr, "streamdrill explore: --summary, --json, --proxy and --tag apply to `streamdrill run` only (each schedule is a run of its own)\n");
        return SD_EXIT_USAGE;
    }
    if (sd_opt.cluster && sd_opt.jobs > 1) {
        fprintf(stderr, "streamdrill explore: --cluster %s: expected --jobs 1 (the runs share its brokers, and one run's broker fault would "
                        "strike the others; --broker-count N gives each run an embedded cluster of its own)\n", sd_opt.cluster);
        return SD_EXIT_USAGE;
    }
    if (sd_opt.nbrokers != 1 && (sd_opt.cluster || sd_opt.brokers)) {
        fprintf(stderr, "streamdrill explore: --broker-count %d sizes the embedded cluster: expected no --brokers or --cluster beside it\n",
                sd_opt.nbrokers);
        return SD_EXIT_USAGE;
    }
    if (!sd_opt.print_only && sd_check_resources()) return SD_EXIT_INTERNAL;
    char exe[4096];
    if (sd_util_self_exe(exe, sizeof(exe))) {
        fprintf(stderr, "streamdrill explore: cannot find its own binary (/proc/self/exe): %s\n", strerror(errno));
        return SD_EXIT_INTERNAL;
    }
    const char *brokers = sd_opt.brokers;
    if (!brokers) {
        const char *env = getenv("KAFKA_BOOTSTRAP_SERVERS");
        if (env && *env) brokers = env;
    }
    uint64_t seed = sd_opt.seed;
    if (!sd_opt.has_seed) {
        char hex[9];
        sd_util_random_hex(hex, 4);
        seed = strtoull(hex, NULL, 16);
    }
    sd_explore_opts_t o = {.file = files[0], .out = sd_opt.out, .brokers = sd_opt.cluster ? NULL : brokers, .cluster = sd_opt.cluster,
                           .nbrokers = sd_opt.nbrokers, .sets = &sd_opt.sets, .xprops = &sd_opt.xcli, .kafka_config = sd_opt.kafka_config,
                           .seed = seed, .runs = sd_opt.runs, .budget_ms = sd_opt.budget_ms, .jobs = sd_opt.jobs,
                           .tries = sd_opt.tries, .confirm = sd_opt.confirm, .shrink_runs = sd_opt.shrink_runs,
                           .keep_steps = sd_opt.keep_steps, .keep_going = sd_opt.keep_going, .print_only = sd_opt.print_only,
                           .quiet = sd_opt.quiet, .exe = exe};
    if (!o.runs && !o.budget_ms) o.runs = 20;
    sd_xreport_t x;
    int rc = sd_explore(&o, &x);
    if (x.explored) {
        char err[2048];
        if (sd_report_explore(&x, err, sizeof(err))) {
            fprintf(stderr, "streamdrill explore: %s\n", err);
            if (rc == SD_EXIT_PASS) rc = SD_EXIT_INTERNAL;
        }
        sd_explore_tell(&x);
    }
    sd_xreport_free(&x);
    return rc;
}

/* The harness's client properties: --kafka-config's file (its path made
 * absolute: the pipeline runs elsewhere), then -X's, so that -X wins. -1
 * to go on, else the exit code. */
static int sd_kafka_config_load(void) {
    if (sd_opt.kafka_config) {
        static char abs[4096];
        char err[1024];
        if (!realpath(sd_opt.kafka_config, abs)) {
            fprintf(stderr, "streamdrill: --kafka-config %s: %s\n", sd_opt.kafka_config, strerror(errno));
            return SD_EXIT_USAGE;
        }
        sd_opt.kafka_config = abs;
        if (sd_props_read(abs, &sd_opt.xprops, err, sizeof(err))) {
            fprintf(stderr, "streamdrill: --kafka-config %s\n", err);
            return SD_EXIT_USAGE;
        }
    }
    for (int i = 0; i < sd_opt.xcli.n; i++) sd_kvlist_add(&sd_opt.xprops, sd_opt.xcli.v[i].key, sd_opt.xcli.v[i].value);
    return -1;
}

/* The options after the command (argv[2] on): filled into sd_opt. -1 to go
 * on, else the exit code (bad usage, or --help / --version done). */
static int sd_parse_options(int argc, char **argv) {
    int c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "o:b:X:qvh", sd_long_opts, NULL)) != -1) {
        switch (c) {
        case OPT_OUT: sd_opt.out = optarg; break;
        case OPT_BROKERS: sd_opt.brokers = optarg; break;
        case OPT_SEED: {
            char *end;
            errno = 0;
            sd_opt.seed = strtoull(optarg, &end, 10);
            if (!*optarg || *end || optarg[0] == '-' || errno || sd_opt.seed > (unsigned long long)INT64_MAX) {
                fprintf(stderr, "streamdrill: --seed %s: expected a whole number from 0 to 9223372036854775807\n", optarg);
                return SD_EXIT_USAGE;
            }
            sd_opt.has_seed = 1;
            break;
        }
        case OPT_TAG:
            if (!*optarg || strlen(optarg) > 16 || strspn(optarg, "0123456789abcdefghijklmnopqrstuvwxyz") != strlen(optarg)) {
                fprintf(stderr, "streamdrill: --tag %s: expected 1 to 16 lowercase letters or digits\n", optarg);
                return SD_EXIT_USAGE;
            }
            sd_opt.tag = optarg;
            break;
        case OPT_SET:
            if (sd_parse_kv(optarg, &sd_opt.sets, "--set")) return SD_EXIT_USAGE;
            break;
        case 'X':
            if (sd_parse_kv(optarg, &sd_opt.xcli, "-X")) return SD_EXIT_USAGE;
            break;
        case OPT_KAFKA_CONFIG: sd_opt.kafka_config = optarg; break;
        case OPT_SUMMARY: sd_opt.summary = optarg; break;
        case OPT_JSON: sd_opt.json = 1; break;
        case OPT_CLUSTER: sd_opt.cluster = optarg; break;
        case OPT_PROXY:
            if (!strchr(optarg, '=')) {
                fprintf(stderr, "streamdrill: --proxy %s: expected LISTEN=UPSTREAM (host:port=host:port)\n", optarg);
                return SD_EXIT_USAGE;
            }
            sd_opt.proxy = optarg;
            break;
        case OPT_QUIET: case 'q': sd_opt.quiet = 1; break;
        case OPT_VERBOSE: case 'v': sd_opt.verbose = 1; break;
        case OPT_NBROKERS:
            sd_opt.nbrokers = atoi(optarg);
            if (sd_opt.nbrokers < 1 || sd_opt.nbrokers > 16) {
                fprintf(stderr, "streamdrill: --broker-count %s: expected 1 to 16\n", optarg);
                return SD_EXIT_USAGE;
            }
            break;
        case OPT_RUNS: case OPT_JOBS: case OPT_TRIES: case OPT_CONFIRM: case OPT_SHRINK_RUNS: case OPT_BUDGET:
        case OPT_KEEP_STEPS: case OPT_KEEP_GOING: case OPT_PRINT:
            if (sd_parse_explore_opt(c, optarg)) return SD_EXIT_USAGE;
            break;
        case OPT_PIPELINE: sd_opt.pipeline = optarg; break;
        case OPT_SINK: sd_opt.sink = optarg; break;
        case OPT_PROGRESS: sd_opt.progress = optarg; break;
        case OPT_NAME: sd_opt.name = optarg; break;
        case OPT_OPERATOR:
            if (strcmp(optarg, "ask") && strcmp(optarg, "auto")) {
                fprintf(stderr, "streamdrill: --operator %s: expected ask or auto\n", optarg);
                return SD_EXIT_USAGE;
            }
            sd_opt.operator_mode = strcmp(optarg, "ask") ? SD_OPERATOR_AUTO : SD_OPERATOR_ASK;
            break;
        case OPT_REPORTS:
            if (strcmp(optarg, "all") && strcmp(optarg, "failed")) {
                fprintf(stderr, "streamdrill: --reports %s: expected all or failed\n", optarg);
                return SD_EXIT_USAGE;
            }
            sd_opt.reports_failed = !strcmp(optarg, "failed");
            break;
        case OPT_HELP: case 'h': sd_usage(stdout); return SD_EXIT_PASS;
        case OPT_VERSION: sd_version(); return SD_EXIT_PASS;
        default:
            fprintf(stderr, "streamdrill: see --help\n");
            return SD_EXIT_USAGE;
        }
    }
    return sd_kafka_config_load();
}

/* The commands that take options, as Redis keeps its command table: a
 * name, what its arguments are, the option groups it takes beyond the
 * common ones, its handler, and its line of the usage (help and --version
 * are read before options are). The usage, the unknown-command message
 * and each "applies to" refusal are made from it. */
typedef enum { SD_VERB_NONE, SD_VERB_SCENARIOS, SD_VERB_RUN_FOLDERS } sd_verb_args_t;
enum { SD_TAKES_INIT = 1, SD_TAKES_EXPLORE = 2, SD_TAKES_BROKER_COUNT = 4 };
typedef struct {
    const char *name;
    sd_verb_args_t args;
    int takes; /* SD_TAKES_* */
    int (*run)(int nargs, char **args);
    const char *synopsis, *summary; /* the summary's further lines after a '\n' */
} sd_verb_t;

static const sd_verb_t sd_verbs[] = {
    {"run", SD_VERB_SCENARIOS, SD_TAKES_BROKER_COUNT, sd_verb_run, "FILE... [options]", "run drills, write reports, exit with the verdict"},
    {"check", SD_VERB_SCENARIOS, 0, sd_verb_check, "FILE... [--set N=V]", "parse and validate scenarios only"},
    {"init", SD_VERB_SCENARIOS, SD_TAKES_INIT, sd_verb_init, "FILE [options]", "write a commented first drill (FILE - for stdout)"},
    {"explore", SD_VERB_SCENARIOS, SD_TAKES_EXPLORE | SD_TAKES_BROKER_COUNT, sd_verb_explore, "FILE [options]",
     "random fault schedules over FILE's header; each distinct\nfailure shrunk to a minimal drill (exit 1 when one is found)"},
    {"report", SD_VERB_RUN_FOLDERS, 0, sd_verb_report, "DIR...", "rebuild the reports of run folders from run.db"},
    {"compare", SD_VERB_RUN_FOLDERS, 0, sd_verb_compare, "DIR...", "the counts of several run folders side by side (Markdown)"},
    {"runbook", SD_VERB_RUN_FOLDERS, 0, sd_verb_runbook, "DIR...",
     "each run's runbook: checkpoint, versions, committed progress\naround each fault (Markdown)"},
    {"ack", SD_VERB_RUN_FOLDERS, 0, sd_verb_ack, "DIR", "confirm the `operator` step the run in DIR waits for"},
    {"broker", SD_VERB_NONE, SD_TAKES_BROKER_COUNT, sd_verb_broker, "[--broker-count N]", "run the embedded Kafka cluster in the foreground"},
    {NULL, 0, 0, NULL, NULL, NULL}};

static void sd_usage_commands(FILE *f) {
    for (int i = 0; sd_verbs[i].name; i++) {
        char head[64];
        snprintf(head, sizeof(head), "streamdrill %s %s", sd_verbs[i].name, sd_verbs[i].synopsis);
        const char *sum = sd_verbs[i].summary;
        size_t n = strcspn(sum, "\n");
        fprintf(f, "%s%-38s %.*s\n", i ? "       " : "usage: ", head, (int)n, sum);
        for (sum += n; *sum; sum += n) {
            sum++;
            n = strcspn(sum, "\n");
            fprintf(f, "%46s%.*s\n", "", (int)n, sum);
        }
    }
}

/* "`streamdrill a`, `b` and `c`": the commands that take the option group bit */
static void sd_verbs_taking(int bit, char *out, size_t outlen) {
    int n = 0, k = 0, len = 0;
    for (int i = 0; sd_verbs[i].name; i++) n += (sd_verbs[i].takes & bit) != 0;
    out[0] = 0;
    for (int i = 0; sd_verbs[i].name && len >= 0 && (size_t)len < outlen; i++) {
        if (!(sd_verbs[i].takes & bit)) continue;
        len += snprintf(out + len, outlen - (size_t)len, !k ? "`streamdrill %s`" : k == n - 1 ? " and `%s`" : ", `%s`", sd_verbs[i].name);
        k++;
    }
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = sd_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    if (argc < 2) {
        sd_usage(stderr);
        return SD_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    /* the follower of a deployed pipeline, run by the supervisor (deployed.h) */
    if (!strcmp(cmd, "_deployed")) return sd_deployed_main(argc - 2, argv + 2);
    /* the cluster's links between brokers, run by kafka.sh cluster (links.h) */
    if (!strcmp(cmd, "_links")) return sd_links_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        sd_usage(stdout);
        return SD_EXIT_PASS;
    }
    if (!strcmp(cmd, "help")) {
        /* the scenario language's reference, printed from its table (lang.c) */
        if (argc > 2 && !strcmp(argv[2], "--markdown")) {
            sd_lang_markdown(stdout);
            return SD_EXIT_PASS;
        }
        if (argc > 2 && !strcmp(argv[2], "--events")) return sd_data_shapes(stdout) ? SD_EXIT_INTERNAL : SD_EXIT_PASS;
        if (argc > 2 && !strcmp(argv[2], "--man")) {
            sd_lang_man(stdout);
            return SD_EXIT_PASS;
        }
        if (argc > 2 && sd_lang_help(stdout, argv[2])) {
            fprintf(stderr, "streamdrill help: \"%s\" is no directive or step (streamdrill help lists them)\n", argv[2]);
            return SD_EXIT_USAGE;
        }
        if (argc <= 2) {
            sd_usage(stdout);
            fputc('\n', stdout);
            sd_lang_help(stdout, NULL);
        }
        return SD_EXIT_PASS;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        sd_version();
        return SD_EXIT_PASS;
    }
    const sd_verb_t *verb = NULL;
    for (int i = 0; sd_verbs[i].name; i++)
        if (!strcmp(cmd, sd_verbs[i].name)) verb = &sd_verbs[i];
    if (!verb) {
        /* every command the table holds, and the two read before it */
        fprintf(stderr, "streamdrill: unknown command \"%s\": expected ", cmd);
        for (int i = 0; sd_verbs[i].name; i++) fprintf(stderr, "%s, ", sd_verbs[i].name);
        fprintf(stderr, "help or version (see --help)\n");
        return SD_EXIT_USAGE;
    }
    int prc = sd_parse_options(argc, argv);
    if (prc >= 0) return prc;
    int nargs = argc - optind;
    char **args = argv + optind;
    /* conflicting options, checked after parsing */
    if (sd_opt.quiet && sd_opt.verbose) {
        fprintf(stderr, "streamdrill: --quiet and --verbose exclude each other\n");
        return SD_EXIT_USAGE;
    }
    if (verb->args == SD_VERB_NONE && nargs) {
        fprintf(stderr, "streamdrill %s: expected no arguments, found \"%s\"\n", cmd, args[0]);
        return SD_EXIT_USAGE;
    }
    if (verb->args == SD_VERB_NONE) return verb->run(nargs, args);
    char which[128];
    if (!(verb->takes & SD_TAKES_BROKER_COUNT) && sd_opt.nbrokers != 1) {
        sd_verbs_taking(SD_TAKES_BROKER_COUNT, which, sizeof(which));
        fprintf(stderr, "streamdrill %s: --broker-count applies to %s (the embedded cluster) only\n", cmd, which);
        return SD_EXIT_USAGE;
    }
    if (!nargs) {
        fprintf(stderr, "streamdrill %s: expected at least one %s\n", cmd, verb->args == SD_VERB_RUN_FOLDERS ? "run folder" : "scenario file");
        return SD_EXIT_USAGE;
    }
    if (!(verb->takes & SD_TAKES_INIT) && (sd_opt.pipeline || sd_opt.sink || sd_opt.progress || sd_opt.name)) {
        sd_verbs_taking(SD_TAKES_INIT, which, sizeof(which));
        fprintf(stderr, "streamdrill %s: --pipeline, --sink, --progress and --name apply to %s only\n", cmd, which);
        return SD_EXIT_USAGE;
    }
    if (!(verb->takes & SD_TAKES_EXPLORE) && (sd_opt.runs || sd_opt.budget_ms || sd_opt.jobs != 1 || sd_opt.tries != 3 || sd_opt.confirm != 10 ||
                                             sd_opt.shrink_runs != 300 || sd_opt.keep_steps || sd_opt.keep_going || sd_opt.print_only)) {
        sd_verbs_taking(SD_TAKES_EXPLORE, which, sizeof(which));
        fprintf(stderr, "streamdrill %s: --runs, --budget, --jobs, --tries, --confirm, --shrink-runs, --keep-steps, --keep-going "
                        "and --print apply to %s only\n", cmd, which);
        return SD_EXIT_USAGE;
    }
    int rc = verb->run(nargs, args);
    sd_kvlist_free(&sd_opt.sets);
    sd_kvlist_free(&sd_opt.xprops);
    sd_kvlist_free(&sd_opt.xcli);
    return rc;
}
