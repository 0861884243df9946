/* run.h - one run of one scenario: the state the runner and the injectors
 * share, and the services they call (send a message, sample a sink, serve
 * the event loop).
 *
 * A run owns its folder (DIR/<name>/), its run.db, a Kafka cluster or a
 * connection to one, the producer, the pipeline's supervisor and the sink
 * readers. Every wait in a run goes through sd_run_tick(), which serves
 * delivery reports, records batch markers and exits, samples the sinks and
 * commits run.db, so nothing is left unrecorded while a step waits. */
#ifndef SD_RUN_H
#define SD_RUN_H

#include <signal.h>
#include <stdint.h>

#include "broker.h"
#include "err.h"
#include "events.h"
#include "ledger.h"
#include "producer.h"
#include "progress.h"
#include "proxy.h"
#include "recon.h"
#include "scenario.h"
#include "sink.h"
#include "supervisor.h"
#include "util.h"
#include "watchdog.h"

/* Set by the CLI's SIGINT/SIGTERM handler; every wait checks it. */
extern volatile sig_atomic_t sd_run_stop_requested;

/* Batches of up to 1,000 messages that may be in the ledger's writer at
 * once while the runner renders the next ones. */
#define SD_RUN_INFLIGHT 4
/* await quiescent, once the source is proven consumed to its end: how long
 * a sample must show the sinks unchanged after the newest change or batch
 * event (instead of the whole quiet window) */
#define SD_RUN_SETTLE_MS 150

typedef struct sd_run_opts_s {
    const char *brokers;          /* NULL: start the embedded cluster */
    const char *out_dir;
    int has_seed;
    uint64_t seed;
    const char *tag;              /* NULL: random */
    const sd_kvlist_t *xprops;    /* -X */
    int quiet, verbose;
    sd_watchdog_t *watchdog;
    const char *token;            /* STREAMDRILL_RUN_TOKEN of every pipeline process */
    const char *proxy;            /* --proxy LISTEN=UPSTREAM, or NULL */
    const char *cluster;          /* --cluster DIR: a cluster whose brokers `broker` steps may break, or NULL */
    int nbrokers;                 /* --broker-count: brokers of the embedded cluster (0: 1) */
    const char *version;
    int operator_mode;            /* SD_OPERATOR_*: who answers `operator` steps */
} sd_run_opts_t;

/* Who answers an `operator` step: a person when stdin is a terminal (the
 * default), a person always (--operator ask), its command (--operator auto). */
enum { SD_OPERATOR_DEFAULT = 0, SD_OPERATOR_ASK, SD_OPERATOR_AUTO };

typedef struct sd_run_result_s {
    sd_err_t status;              /* SD_OK pass, SD_ERR_CHECK_FAILED, an inconclusive code, ... */
    char verdict[16];             /* pass, fail, inconclusive, error */
    char run_dir[4096];
    char message[2048];
    int recorded;                 /* run.db is written and closed: the reports are due (sd_report_write_all) */
} sd_run_result_t;

/* How a step fell short, per step (sd_run_t.verdict.missed_step). */
typedef enum {
    SD_STEP_DID_LAND = 0,        /* nothing said against it */
    SD_STEP_MISSED = 1,          /* a fault that did not land where the step asked */
    SD_STEP_RESTART_FAILED = 2,  /* the pipeline did not come back */
} sd_step_miss_t;

typedef struct sd_run_s {
    /* who the run is: the whole run shares these */
    const sd_scenario_t *sc;
    const sd_run_opts_t *opts;
    char *run_dir;
    char *tag;
    char *topic;
    uint64_t seed;
    sd_kvlist_t vars;             /* run-time placeholders + user variables */
    sd_kvlist_t topic_config;     /* settings of the topics the run creates (source min-insync=, unclean-election=) */
    int lock_fd;                  /* run.db, flock'd while the run goes: `report` leaves a running run alone (-1: none) */
    int step;                     /* index of the running step */
    int64_t t0_wall, t0_mono;

    sd_ledger_t *ledger;
    sd_broker_t *broker;
    sd_producer_t *producer;
    sd_events_t *events;
    sd_sup_t *sup;
    int partitions;
    struct sd_run_sinks_s {       /* the sinks read (runner.c opens them) */
        sd_sink_t *v[SD_MAX_SINKS];
        int n;
        sd_sink_t *target, *quarantine;
    } sink;

    /* `deliveries`: the second source topic and its producer (run_send.c, injectors/data.c) */
    struct sd_run_side_s {
        char *topic;
        int partitions;
        int64_t *consumed;        /* per partition of the topic, from commits (-1 unknown) */
        sd_producer_t *producer;
        int64_t messages;
        sd_events_t *events;      /* deliveries log=: the user's deliveries (NULL: the generator's) */
        int64_t next;             /* its next line */
        /* deliveries lag=: those held back, in the order they are due */
        struct sd_run_held_s { int64_t seq, scan_t, due; } *held;
        int64_t held_head, held_n, held_cap;
    } side;
    /* `produce ... transactional`: its producer, and the transactions left open (run_send.c) */
    struct sd_run_txn_s {
        sd_producer_t *producer;
        sd_producer_t *open[SD_MAX_OPEN_TXN];
        int64_t open_n[SD_MAX_OPEN_TXN];
        int nopen, open_slots;
        int64_t data_end[SD_PRODUCER_MAX_PARTITIONS]; /* per partition: where the transactional producers' data ends */
    } txn;

    /* what was sent, per distinct event (seq): expected disposition, kind and sends (run_send.c, injectors/data.c) */
    struct sd_run_sends_s {
        int64_t nseq, capseq;
        sd_seqs_t seqs;
        sd_stamps_t sent;         /* per seq: first handed to Kafka, ms after t0_wall (UINT32_MAX: not yet) */
        int64_t max_event_time;   /* newest event time sent among valid events */
        int64_t valid_sent;
        int64_t late_sent, malformed_sent, replayed, messages;
        /* edges on a windows or join model: the first scans of a data step
         * after the first go on the watermark's cut-off (the newest event
         * time sent minus the contract's delay), then 1 ms inside it */
        int wm_edges_due;
        int64_t *wm_edges, nwm_edges; /* those sent: seq * 2 + (1: the one inside) */
        const uint8_t *acked_lost; /* while the run is judged: per seq, Kafka lost it after acknowledging it (NULL: none) */
    } sends;

    /* the console (run_base.c) */
    struct sd_run_console_s {
        int live;                 /* a live progress line on stderr (a terminal) */
        int live_shown;           /* the line is on screen now */
        int64_t live_next_mono;
        /* the step the progress estimate follows, and where it began */
        int est_step;
        int64_t est_t0_mono, est_sent0, est_rows0;
    } console;

    /* sampling of sink row counts (run_loop.c) */
    struct sd_run_sampling_s {
        int64_t counts[SD_MAX_SINKS];
        int64_t looked_wall[SD_MAX_SINKS]; /* when each sink was last counted (wall ms) */
        int64_t last_change_mono;
        int64_t next_sample_mono;
        int64_t last_sample_mono; /* when the newest sample began */
        int64_t idle_ms;          /* waited after the pipeline's last sign of work (await quiescent) */
        int64_t sample_cost_ms;
        int sampled;
    } sampling;

    /* the pipeline and what its progress source says of it (run_wait.c, progress*.c, injectors/process.c) */
    struct sd_run_pipeline_s {
        int incarnations;
        int crashes;
        int wanted;               /* the plan expects it running */
        int live;                 /* instances the plan wants running (`start`: the pipeline line's instances=, `scale to=`) */
        int64_t last_offsets_mono; /* last commit marker with offsets */
        int64_t *consumed;        /* per source partition, from commit markers (-1 unknown) */
        int64_t *trim_warned;     /* per source partition: low watermark already warned about */
        sd_run_batches_t bs;
        const sd_progress_ops_t *progress; /* where batches, readiness and catching up come from */
        int broker_ports[8];      /* the ports a pipeline connects to: the broker's, the proxy's */
        int nbroker_ports;
        int no_ready_marker;      /* the pipeline was found ready by its connection: it prints no SD-READY */
        int64_t next_connect_check_mono;
        void *source;             /* the progress source's own state: what its open returned (a checkpoint, a group) */
        int64_t account_next;     /* 1 + the newest batch the pipeline's own account (Spark's progress) reported; 0 none */
        int account_stateful;     /* that account named state operators (a watermark may still evict and emit) */
        int64_t inc_started_wall; /* when the newest incarnation was started */
        int64_t inc_events0;      /* batch events seen before it started */
        int64_t inc_rows0;        /* target rows when it started (-1 unknown) */
    } pipe;

    /* messages staged for sending, ledger first, then Kafka (run_send.c) */
    struct sd_run_staging_s {
        struct sd_run_staged_s *stage;
        int nstage, capstage;
        sd_buf_t arena;
        sd_buf_t payload, key;
        /* batches handed to the ledger's writer, oldest first, each waiting
         * for its ledger ticket before it goes to Kafka */
        struct sd_run_subbatch_s {
            struct sd_run_staged_s *stage;
            int n, cap;
            sd_buf_t arena;
            int64_t *ns;          /* ledger message numbers */
            int64_t ticket;
        } sub[SD_RUN_INFLIGHT];
        int sub_head, sub_count;
    } staging;

    /* background production, `produce ... background` (run_send.c) */
    struct sd_run_bg_s {
        int active, busy;
        /* what the event loop serves while the run waits (run_send.c registers
         * it with a background `produce`); NULL: none */
        sd_err_t (*serve)(struct sd_run_s *r, char *err, size_t errlen);
        int64_t total, done, t0;
        int64_t side_due;        /* deliveries lag=: when the next held delivery is due (INT64_MAX: none) */
        double rate;
    } bg;

    /* quiescence (run_wait.c) */
    struct sd_run_quiet_s {
        int64_t last_data_step_mono;
        int64_t last_quiescent_mono;
        int failed;
    } quiet;

    /* faults that can be undone: by a timer (for=), by `heal`, before reconciliation (injectors, run_base.c) */
    struct sd_run_faults_s {
        sd_proxy_t *proxy;
        char *proxy_listen;
        struct sd_cluster_s *cluster; /* --cluster: the brokers `broker` steps break (injectors/broker.c) */
        char *faketime_file;      /* the file libfaketime reads ({run}/faketime.rc) */
        int64_t clock_offset_ms;
        double clock_rate;
        int clock_moved_line;     /* the first clock step that moved the pipeline's clock off real time (0: never) */
        int net_latency, net_down, net_bandwidth, net_errors, net_idle;
        struct sd_run_undo_s {
            int64_t due_mono;
            void (*fn)(struct sd_run_s *r, int arg);
            int arg;
        } undo[16];
        int nundo;
    } faults;

    /* what keeps the run from passing, besides failed checks (run_base.c, runner.c, run_judge.c) */
    struct sd_run_verdict_s {
        int missed;               /* fault steps that did not do what they say (sd_run_fault_missed) */
        uint8_t *missed_step;     /* per step: sd_step_miss_t (a step is counted once) */
        char missed_msg[1536];
        int unmeasured;           /* expectations on figures the run could not measure */
        char unmeasured_why[512];
        int await_timeout_line;   /* the last wait that timed out, until a fault step follows it */
        sd_err_t fatal;           /* first fatal error; the run stops stepping */
        char fatal_msg[2048];
    } verdict;
} sd_run_t;

/* Run one scenario. Writes DIR/<name>/ and fills res. */
void sd_run_scenario(const sd_scenario_t *sc, const sd_run_opts_t *opts, sd_run_result_t *res);

/* ---- the services injectors and progress sources may call (the run's
 * own rooms share more through run_int.h) ---- */

/* Serve the loop for up to wait_ms (0: once, without blocking). Returns
 * SD_ERR_INTERRUPTED when a stop was requested, or a fatal error. */
sd_err_t sd_run_tick(sd_run_t *r, int64_t wait_ms, char *err, size_t errlen);
/* Serve the event loop until the monotonic time `until` (ms). */
sd_err_t sd_run_tick_until(sd_run_t *r, int64_t until, char *err, size_t errlen);
/* Allocate the next seq with its kind and disposition. */
int64_t sd_run_new_seq(sd_run_t *r, int kind, int disp);
/* Stage one message (value NULL: null value); flushed by sd_run_flush(). */
void sd_run_stage(sd_run_t *r, int64_t seq, const char *kind, const char *disp, const char *detail,
                  int64_t event_time, const void *key, size_t keylen, const void *value, size_t vlen, int null_value);
/* A delivery numbered dseq, its event time t, its bytes in r->staging's
 * payload and key, staged for the second source (no copy of a scan). */
void sd_run_stage_delivery(sd_run_t *r, int64_t dseq, int64_t t);
/* Each seq's event time as sent (INT64_MIN: never acknowledged), then at
 * [nseq] on its arrival rank (the order of its last send); caller frees. */
int64_t *sd_run_event_times(sd_run_t *r);
/* The same with its kind, disposition and detail in the ledger (a late,
 * future, malformed or duplicate delivery); null_value: a tombstone. */
void sd_run_stage_side(sd_run_t *r, int64_t dseq, const char *kind, const char *disp, const char *detail, int64_t t, int null_value);
/* Record staged messages in run.db, commit, then hand them to Kafka. */
sd_err_t sd_run_flush(sd_run_t *r, char *err, size_t errlen);
/* For a step sending at `rate` per second since t0 (monotonic ms): when
 * message i is not due yet, send what is staged and serve the loop until it
 * is. rate <= 0: no pacing. */
sd_err_t sd_run_pace(sd_run_t *r, int64_t t0, int64_t i, double rate, char *err, size_t errlen);
/* Wait for every message in flight to be acknowledged. */
sd_err_t sd_run_drain(sd_run_t *r, int64_t timeout_ms, char *err, size_t errlen);
/* Print a progress line (not with --quiet). */
void sd_run_say(sd_run_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Start a new incarnation of one instance (variant NULL: the pipeline
 * line) and wait until it is ready; the focus moves to it (run_wait.c). */
sd_err_t sd_run_start_instance(sd_run_t *r, const char *variant, int instance, int64_t timeout_ms, char *detail, size_t dlen,
                               char *err, size_t errlen);
/* Start every instance of the `live` ones that is not running (instance 0)
 * or one (instance K), each waited for, then focus on the lowest running
 * (run_instances.c). */
sd_err_t sd_run_start_pipeline(sd_run_t *r, const char *variant, int instance, int64_t timeout_ms, char *detail, size_t dlen,
                               char *err, size_t errlen);

/* Instances (run_instances.c). The supervisor's calls act on the instance
 * in focus; the batch state (r->pipe.bs) follows the focused instance's
 * incarnation. */
int sd_run_instances(const sd_run_t *r);            /* the pipeline line's instances= (1 without it) */
void sd_run_focus(sd_run_t *r, int instance);       /* focus on it; the batch state follows its incarnation */
void sd_run_refocus(sd_run_t *r);                   /* focus on the lowest running instance (1 when none runs) */
/* The running instances (1-based) into out (at most SD_MAX_INSTANCES), their count. */
int sd_run_running_instances(sd_run_t *r, int *out);
int sd_run_instance_of(const sd_run_t *r, int incarnation); /* 0 unknown */
void sd_run_set_live(sd_run_t *r, int n);           /* `scale to=N`: the instances the plan wants running */
/* Serve background production and delivery reports, record batch markers,
 * Spark checkpoint changes and pipeline exits now (cheaper than
 * sd_run_tick: no sink sampling, no commit). */
sd_err_t sd_run_pump(sd_run_t *r, char *err, size_t errlen);

/* What injectors tell the run, instead of writing its fields: a data step
 * ended (quiescence is judged from now), events they sent of a kind the
 * verdict counts, and whether the plan expects the pipeline running. */
void sd_run_data_step_done(sd_run_t *r);
void sd_run_count_sent(sd_run_t *r, int64_t replayed, int64_t late, int64_t malformed);
void sd_run_want_pipeline(sd_run_t *r, int wanted);

/* A fault step did not do what it says (timed out, found no batch, landed
 * after the commit, found no pipeline to act on): recorded as a warning,
 * and the run cannot pass (inconclusive, fault-not-landed) unless the step
 * is `optional`. */
void sd_run_fault_missed(sd_run_t *r, const sd_step_t *st, const char *why);
/* What the pipeline's own records say at fault fid (its checkpoints: the
 * batch in flight, the watermark; its sinks' newest commit: a Delta
 * version and its transaction id), for the runbook. */
void sd_run_fault_context(sd_run_t *r, int64_t fid);
/* The current step's restart did not bring the pipeline back: its status
 * is "restart failed", not "ok" (a finding, the run goes on). */
void sd_run_restart_failed(sd_run_t *r);
/* Undo fn(r, arg) at due_mono (a fault with for=). */
void sd_run_schedule_undo(sd_run_t *r, int64_t due_mono, void (*fn)(sd_run_t *r, int arg), int arg);

/* A command line of the scenario with its placeholders expanded,
 * NULL-terminated; NULL (err says why) when one does not expand; freed by
 * sd_run_free_argv (run_wait.c). */
char **sd_run_expand_argv(sd_run_t *r, char *const *src, int argc, char *err, size_t errlen);
void sd_run_free_argv(char **argv);
/* A deployed pipeline's follower command line (process/deployed.h): this
 * program with the `deploy` commands expanded, start_as's command line
 * (a `variant`, may be NULL) for `deploy start`; NULL when one does not. */
char **sd_run_deploy_argv(sd_run_t *r, const struct sd_variant_s *start_as, char *err, size_t errlen);

/* How a fault was placed: the wait it took before it struck. */
typedef enum { SD_PLACED_NOW = 0, SD_PLACED_MID_BATCH, SD_PLACED_AT_BOUNDARY, SD_PLACED_SINK_GREW, SD_PLACED_AFTER_SINK_COMMIT } sd_placed_t;
extern const char *const sd_placed_words[];

/* Where a fault lands in the pipeline's batches. */
typedef struct {
    sd_placed_t how;
    int64_t batch;         /* the batch it waited for, -1 if none */
    int64_t batch_rows;
    int64_t rows0;         /* target rows when that batch began */
    int64_t mark0, mark1;  /* after-sink-commit: the sink's mark when the batch was seen begun, and at the freeze */
} sd_landing_t;

/* The common start of a fault that lands in the pipeline's batches (kill,
 * pause, broker faults; injectors/process.c): a running pipeline, then the
 * point st->proc.mid_batch asks for. *skip is 1, with detail saying why,
 * when there is nothing to act on; s is the pipeline's state before. */
sd_err_t sd_fault_reach_point(sd_run_t *r, const sd_step_t *st, const char *verb, sd_sup_state_t *s, sd_landing_t *L,
                              int *skip, char *detail, size_t dlen, char *err, size_t errlen);
/* Record where fault fid landed (signal_mono: when it struck; sig SIGKILL:
 * the batch must not have committed by now; 0: the pipeline was not
 * signalled and runs on, so a commit after signal_mono is inside). Returns 1 when it landed
 * where the step asked (a miss is recorded by sd_run_fault_missed). */
int sd_fault_landing(sd_run_t *r, int64_t fid, const sd_landing_t *L, int inc, int escalated, int sig, int64_t signal_mono,
                     char *out, size_t olen);

/* An injector handles some step kinds (Redis-style ops struct). */
typedef struct sd_injector_s {
    const char *name;
    int (*handles)(sd_step_kind_t kind);
    /* Run the step; detail gets a one-line account for run.db and the log. */
    sd_err_t (*run)(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen);
    /* End every fault of this injector that is still on (may be NULL);
     * appends what it ended to done. */
    void (*heal)(sd_run_t *r, sd_buf_t *done);
    /* After the pipeline stopped, before the judgement: record what the
     * faults saw that only ends with the pipeline (may be NULL). */
    void (*finish)(sd_run_t *r);
} sd_injector_t;

extern const sd_injector_t sd_injector_process;
extern const sd_injector_t sd_injector_data;
extern const sd_injector_t sd_injector_clock;
extern const sd_injector_t sd_injector_storage;
extern const sd_injector_t sd_injector_network;
extern const sd_injector_t sd_injector_broker;
extern const sd_injector_t sd_injector_command;

/* The event shapes (docs/language.md): a scan, a delivery and each
 * malformed kind, rendered by the generators into markdown (injectors/data.c).
 * Returns 1 when a field or kind has no description. */
int sd_data_shapes(FILE *f);

#endif
