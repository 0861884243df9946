/* explore.h - `streamdrill explore`: run random fault schedules over a
 * drill's header, and shrink each distinct failure to a minimal drill.
 *
 * Each schedule is a .drill file of its own (the header as written, then
 * generated steps, see xsched.h), run by a child `streamdrill run` in its
 * own process group, so each run has its own topic, consumer group,
 * checkpoint and (on the embedded default) its own cluster, and `--jobs J`
 * runs J of them at once. A failure's signature is the sorted set of the
 * checks that failed; the shrinker (shrink.h) looks for the smallest
 * schedule that still shows it, and the result is written as
 * minimal.drill, run again `--confirm` times. explore.json, explore.md and
 * explore.html say what was run, what failed, the minimal drills, which
 * faults landed where, and the time spent. */
#ifndef SD_EXPLORE_H
#define SD_EXPLORE_H

#include <stdint.h>

#include "scenario.h"

typedef struct {
    const char *file;
    const char *out;            /* parent folder; the explore folder is OUT/<name>-explore */
    const char *brokers;        /* NULL: the embedded cluster */
    const char *cluster;        /* --cluster DIR: brokers the runs may break, one run at a time */
    int nbrokers;               /* --broker-count: the embedded cluster's brokers (0, 1: one) */
    const sd_kvlist_t *sets;    /* --set, written into every schedule as a `set` line */
    const sd_kvlist_t *xprops;  /* -X, passed to every run */
    const char *kafka_config;   /* --kafka-config FILE, passed to every run (its secrets stay off their command lines) */
    uint64_t seed;
    int runs;                   /* schedules to run (0: until the budget) */
    int64_t budget_ms;          /* 0: no budget */
    int jobs, tries, confirm;
    int shrink_runs;            /* runs one shrink may make */
    int keep_steps;             /* the file's steps run first, its expects judge every schedule */
    int keep_going;             /* explore to the end of the runs or budget, not to the first failure */
    int print_only;             /* print the schedules of runs 1..runs, run nothing */
    int quiet;
    const char *exe;            /* the streamdrill binary the runs use */
} sd_explore_opts_t;

/* One schedule run while exploring. */
typedef struct {
    int run;
    char *drill;                /* path of its .drill */
    char *run_dir;              /* its run folder */
    char verdict[16];           /* pass, fail, inconclusive, error */
    char *signature;            /* failed checks, comma-separated; "" */
    char reason[48];
    double secs;
    int faults;                 /* fault actions in the schedule */
} sd_xrun_t;

/* A distinct failure and its shrink. */
typedef struct {
    char *signature;
    int first_run, seen;        /* the run that found it, how many runs showed it */
    int actions0, faults0;      /* the failing schedule's size */
    int actions, faults;        /* the minimal drill's */
    char *minimal;              /* path of minimal.drill */
    char *steps;                /* its steps */
    char *log;                  /* path of the shrink log */
    char *report;               /* the report of a confirming run that showed it, or "" */
    int candidates, kept, runs; /* shrink effort */
    int stopped;                /* the shrink ran out of runs or was interrupted */
    int confirm_runs, confirm_failed;
    int walked_back;            /* kept candidates walked back to find one that fails every rerun */
    char *flaky;                /* then: the smaller drill that did not (minimal-flaky.drill), else NULL */
    int flaky_failed, flaky_runs, flaky_faults;
    double secs;
} sd_xfail_t;

/* Where the faults landed, by kind and place. */
typedef struct {
    char kind[16];              /* kill, stop, pause, network, clock, restart */
    char where[32];             /* mid-batch, at a boundary, now, while paused, skipped */
    int count;
} sd_xcover_t;

typedef struct sd_xreport_s {
    char *file, *dir, *name;
    uint64_t seed;
    int jobs, tries;
    const char *broker_kind;
    sd_xrun_t *runs;
    int nruns, passed, failed, inconclusive;
    sd_xfail_t *fails;
    int nfails;
    sd_xcover_t *cover;
    int ncover;
    double explore_secs, shrink_secs, total_secs;
    const char *ended;          /* why exploring stopped */
    int exit_code;
    int explored;               /* runs were made: a report is due */
} sd_xreport_t;

/* Run the command. Prints progress (unless quiet) and errors; fills *x
 * (x->explored once runs were made: the caller writes the report and tells
 * it, then frees *x with sd_xreport_free) and returns the exit code: 0 no
 * failure found, 1 a failure found, 2 bad usage or scenario, 3 too many
 * inconclusive runs to say, 4 harness error, 130 interrupted. */
int sd_explore(const sd_explore_opts_t *o, sd_xreport_t *x);

/* The summary lines on stderr: runs, distinct failures, each one's minimal drill. */
void sd_explore_tell(const sd_xreport_t *x);
void sd_xreport_free(sd_xreport_t *x);


#endif
