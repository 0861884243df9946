/* report.h - report writers: pure functions of run.db.
 *
 * sd_report_model_load() reads a run folder's run.db into a model; each
 * writer (an ops struct chosen by name, like Redis's rio back ends) turns
 * the model into one file of the run folder. `streamdrill report DIR`
 * calls the same code, so a report can be rebuilt at any time, also for a
 * run that died half-way (the model then says what is missing). */
#ifndef SD_REPORT_H
#define SD_REPORT_H

#include <stdint.h>

#include "err.h"
#include "figures.h"
#include "util.h"

#define SD_REPORT_SAMPLE_IDS 20
/* The versions of reports/schemas/summary.schema.json and
 * manifest.schema.json the writers follow: raised only when a key is
 * removed, renamed or changes its type (an added key keeps the version). */
#define SD_SUMMARY_SCHEMA_VERSION 1
#define SD_MANIFEST_SCHEMA_VERSION 1

typedef struct sd_rcount_s { char *name; int64_t value; } sd_rcount_t;
typedef struct sd_rcheck_s { char *name; int pass; char *expected, *actual, *detail; } sd_rcheck_t;
typedef struct sd_rfault_s {
    int64_t t_ms;       /* since the run started */
    char *kind, *detail, *landing;
    int incarnation;    /* 0 if none */
    int64_t batch;      /* -1 if none */
    int landed;         /* 1 inside a batch, 0 after its commit, -1 unknown */
    int64_t rows_visible, batch_rows; /* -1 unknown */
    int64_t t_wall;     /* when it struck (epoch ms) */
    char *before, *after; /* the runbook: the newest commit before it, the first after it ("" none) */
    char *context;      /* the pipeline's records at the fault: checkpoints, batch in flight, watermark, sink commit ("" none) */
    int64_t id;         /* run.db fault.id */
    /* its recovery (run.db recovery; has_recovery 0 for records that are
     * no fault of their own: a resume, a restart of a stopped pipeline) */
    int has_recovery, line;
    int64_t caught_ms;  /* caught up again, since the run started; -1 never or unknown */
    char *basis, *why;
    int64_t fig[SD_FIG__COUNT]; /* figures.h: a value, SD_FIG_NA, SD_FIG_UNMEASURED or SD_FIG_NEVER */
} sd_rfault_t;
typedef struct sd_rnote_s { int64_t t_ms; char *kind, *detail; } sd_rnote_t;
typedef struct sd_rstep_s { int idx, line; char *text, *status, *detail; int64_t t_ms, dur_ms; } sd_rstep_t;
typedef struct sd_rinc_s {
    int n, pid;
    int instance;                  /* which instance of the pipeline (1 without instances=) */
    char *argv, *ended_by, *log_out, *log_err;
    int64_t started_ms, ended_ms;  /* since the run started, -1 if unknown */
    int exit_code, exit_signal;    /* -1 if unknown */
    char *version;                 /* what the header's `version` line found ("" none) */
    char *resumed, *reached;       /* the runbook: the newest commit before it started, its own last ("" none) */
    /* the engine's own account from its log (run.db engine; Kafka Streams'
     * state changes and restores): has_engine 0 without one */
    int has_engine, rebalances, restores;
    int64_t running_ms;            /* from its start to its first RUNNING, -1 never */
    int64_t restored, restored_ms; /* records restored from changelogs, and when the last restore ended (since its start, -1 none) */
    char *states;                  /* its state changes with their times since its start ("" none) */
    char *last_state;              /* the state it was last in ("" none) */
} sd_rinc_t;
/* One anomalous id with what the ledger knows about it. */
typedef struct sd_rid_s {
    char *id;
    char *bucket;
    int64_t copies;
    char *writers;      /* which incarnation/file/position wrote each copy */
    char *kind;         /* ledger kind of its first message */
    char *sent_at;      /* ISO time it was first sent */
    int64_t t_ms;       /* since the run started */
    int partition;
    int64_t offset;
    int64_t sends;      /* messages the harness sent with this id (2+ = replayed) */
    char *after_fault;  /* the last fault before it was sent, or "" */
} sd_rid_t;
typedef struct sd_rbucket_s {
    char *sink, *bucket;
    int64_t total;
    sd_rid_t *ids;      /* the first SD_REPORT_SAMPLE_IDS */
    int nids;
} sd_rbucket_t;

/* A result model's anomalous group (run.db's group_anomaly). */
typedef struct sd_rgroup_s {
    char *sink, *window_start, *keys, *buckets, *detail;
} sd_rgroup_t;

/* The pipeline's own account (Spark's progress reports) against the ledger. */
typedef struct sd_raccount_s {
    char *query;
    int64_t batches, spark_rows, ledger_rows, disagree, spark_dropped, ledger_late;
} sd_raccount_t;

typedef struct sd_report_model_s {
    char *run_dir;
    char *scenario, *file, *description, *seed, *tag, *topic, *brokers, *broker_kind, *profile;
    char *progress;  /* the progress source's word ("" in an older run.db: figures resting on it are called pipeline-claimed) */
    char *verdict, *reason, *message, *version, *started_at, *status, *vars;
    char *reproduce;    /* the command that runs the drill again */
    char *producer;     /* the harness's producer settings a loss by Kafka depends on ("" before they were recorded) */
    char *topic_config; /* the settings the run gave its topics, or "" */
    int64_t started_ms, ended_ms;
    int64_t harness_cpu_ms, harness_peak_rss_kb, reconcile_ms; /* -1 unknown */
    int64_t harness_idle_ms;  /* waited after the pipeline's last sign of work; -1 unknown */
    int64_t series_ms;  /* the width of the drawn series' buckets the run kept (run.db series); -1 none: the ledger is scanned */
    int complete;       /* the run reached its end */
    sd_rcount_t *counts; int ncounts;
    sd_rcheck_t *checks; int nchecks;
    sd_rfault_t *faults; int nfaults;
    sd_rnote_t *warnings; int nwarnings;
    sd_rstep_t *steps; int nsteps;
    sd_rinc_t *incs; int nincs;
    sd_rbucket_t *buckets; int nbuckets;
    sd_rbucket_t *unexpected; int nunexpected;  /* per sink, ids are raw */
    char **missing; int nmissing;               /* what a half-finished run lacks */
    sd_raccount_t *accounts; int naccounts;
    sd_rgroup_t *groups; int ngroups;           /* the first SD_REPORT_SAMPLE_GROUPS */
    int64_t groups_total;                       /* every anomalous group (0 without a model) */
    char *checkpoint;                           /* where the pipeline keeps its progress ("" unknown) */
    char *progress_kind;                        /* spark, group, markers, ... ("" unknown) */
} sd_report_model_t;
#define SD_REPORT_SAMPLE_GROUPS 50

sd_err_t sd_report_model_load(const char *run_dir, sd_report_model_t **out, char *err, size_t errlen);
/* The runbook as Markdown (report.md's section, export/runbook.md, `streamdrill runbook`). */
void sd_report_runbook_md(sd_buf_t *b, const sd_report_model_t *m);
/* A fault's recovery figure k as a table cell ("0.269 s", "n/a", "never", ...). */
void sd_report_figure_cell(sd_buf_t *b, const sd_rfault_t *f, int k);
/* What the recovery figures rest on, one sentence of plain text. */
void sd_report_evidence_text(sd_buf_t *b, const sd_report_model_t *m);
void sd_report_model_free(sd_report_model_t *m);
/* Value of a count, or -1. */
int64_t sd_report_count(const sd_report_model_t *m, const char *name);

typedef struct sd_report_writer_s {
    const char *name;
    const char *file;   /* in the run folder */
    sd_err_t (*write)(const sd_report_model_t *m, const char *path, char *err, size_t errlen);
} sd_report_writer_t;

extern const sd_report_writer_t sd_report_summary;   /* summary.json */
extern const sd_report_writer_t sd_report_junit;     /* junit.xml */
extern const sd_report_writer_t sd_report_markdown;  /* report.md */
extern const sd_report_writer_t sd_report_charts;    /* charts/ (gnuplot: SVG and PNG) */
extern const sd_report_writer_t sd_report_export;    /* export/ (CSV and manifest for auditors) */
extern const sd_report_writer_t sd_report_html;      /* report.html */

/* Write every report into run_dir (machine_only: summary.json and
 * junit.xml, what scripts read, without the reports people read). A
 * writer that fails does not stop the others; the first error is
 * returned. When written is not NULL it gets
 * the names of the outputs written, space-separated, missing what a
 * half-finished run lacks, one per line, and timings each writer's
 * seconds ("charts=1.234s ..."). Each may be NULL. */
sd_err_t sd_report_write_all(const char *run_dir, int machine_only, sd_buf_t *written, sd_buf_t *missing, sd_buf_t *timings, char *err,
                             size_t errlen);

/* junit.xml over several runs: one testsuite each. */
sd_err_t sd_report_junit_many(const sd_report_model_t *const *ms, int n, const char *path, char *err, size_t errlen);

/* out_dir/index.html and out_dir/junit.xml over the given run folders. */
sd_err_t sd_report_index(const char *out_dir, char *const *run_dirs, int n, char *err, size_t errlen);

/* Escaping helpers shared by writers. */
void sd_report_xml_escape(sd_buf_t *b, const char *s);
/* Text into HTML, escaped (NULL as nothing). */
static inline void sd_h(sd_buf_t *b, const char *s) { sd_report_xml_escape(b, s ? s : ""); }
/* The top of every HTML page the reports write (report.html, index.html,
 * explore.html): the doctype, the title (text, escaped; a NULL part is
 * left out) and the one style sheet they share, up to the open body. */
void sd_report_html_head(sd_buf_t *b, const char *title, const char *title2, const char *title3);
/* A verdict ("pass", "fail", "inconclusive", anything else: an error) as
 * the reports say it: its class ("pass", ..., "error") and its word
 * ("PASS", ..., "ERROR"). One table, so no report names a verdict another
 * way than the others. */
const char *sd_report_verdict_class(const char *verdict);
const char *sd_report_verdict_word(const char *verdict);
void sd_report_md_escape(sd_buf_t *b, const char *s);
/* s as a Markdown code span, safe inside a table cell. */
void sd_report_md_code(sd_buf_t *b, const char *s);
/* A step's status that says it did not do what it says (missed, restart
 * failed, timeout, failed): shown so it stands out, never like "ok". */
int sd_report_step_bad(const char *status);

/* explore.json, explore.md and explore.html in x->dir (explore.h). */
struct sd_xreport_s;
int sd_report_explore(const struct sd_xreport_s *x, char *err, size_t errlen);

#endif
