/* run.h - one run of one scenario, as the rest of the harness sees it: run
 * a scenario, the run's handle (opaque: its insides are run_int.h's), what
 * the run is (its scenario, ledger, broker, topics), the two parts of it
 * that are other rooms' types (the faults' state, the progress source's),
 * and the services injectors and progress sources call (send a message,
 * serve the event loop, start the pipeline, say where a fault landed).
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

typedef struct sd_run_opts_s {
    const char *brokers;          /* NULL: start the embedded cluster */
    const char *out_dir;
    int has_seed;
    uint64_t seed;
    const char *tag;              /* NULL: random */
    const sd_kvlist_t *xprops;    /* --kafka-config's properties, then -X's */
    const char *kafka_config;     /* --kafka-config FILE (absolute), or NULL */
    int kafka_config_n;           /* how many of xprops, first, came from that file */
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

/* The faults' state: the injectors write it (sd_run_faults), the run reads
 * it to set up and to heal. Faults end by a timer (for=), by `heal`, and
 * before the reconciliation. */
typedef struct sd_faults_s {
    sd_proxy_t *proxy;
    char *proxy_listen;
    struct sd_cluster_s *cluster; /* --cluster: the brokers `broker` steps break (injectors/broker.c) */
    char *faketime_file;      /* the file libfaketime reads ({run}/faketime.rc) */
    int64_t clock_offset_ms;
    double clock_rate;
    int clock_moved_line;     /* the first clock step that moved the pipeline's clock off real time (0: never) */
    /* registry ... proxy: the pipeline's way to the schema registry */
    sd_proxy_t *registry_proxy;
    /* the network faults on: bit 0 the broker's connections, bit 1 the registry's (a step's on=) */
    int net_latency, net_down, net_bandwidth, net_errors, net_idle;
    /* the embedded cluster's round-trip time is one knob for both: a
     * latency's, and a blackhole's hold over it (injectors/network.c) */
    int mock_latency_ms, mock_hold_ms;
} sd_faults_t;

/* One run (run_int.h holds its insides). */
typedef struct sd_run_s sd_run_t;

/* Run one scenario. Writes DIR/<name>/ and fills res. */
void sd_run_scenario(const sd_scenario_t *sc, const sd_run_opts_t *opts, sd_run_result_t *res);

/* ---- what the run is, for injectors and progress sources (run_base.c) ---- */
const sd_scenario_t *sd_run_sc(const sd_run_t *r);
const sd_run_opts_t *sd_run_opts(const sd_run_t *r);
const char *sd_run_dir(const sd_run_t *r);
const char *sd_run_tag(const sd_run_t *r);
const sd_kvlist_t *sd_run_vars(const sd_run_t *r);   /* run-time placeholders and the user's variables */
int sd_run_step_index(const sd_run_t *r);            /* the running step */
int sd_run_incarnations(const sd_run_t *r);          /* the pipeline's incarnations started so far */
sd_ledger_t *sd_run_ledger(const sd_run_t *r);
sd_broker_t *sd_run_broker(const sd_run_t *r);
sd_sup_t *sd_run_sup(const sd_run_t *r);
sd_events_t *sd_run_events(const sd_run_t *r);       /* the source's generator (or its log) */
sd_sink_t *sd_run_target(const sd_run_t *r);         /* the target sink, NULL when none is declared */
/* The source topic and its partitions; the second source's (`deliveries`),
 * NULL and 0 when there is none. */
const char *sd_run_topic(const sd_run_t *r);
int sd_run_partitions(const sd_run_t *r);
const char *sd_run_side_topic(const sd_run_t *r, int *partitions);
/* The injectors' state and the progress source's, each written by its
 * owner only (the structure test holds to it). */
sd_faults_t *sd_run_faults(sd_run_t *r);
/* How long the embedded cluster now holds each response to the harness's
 * own requests (a network latency or blackhole reaches every client of
 * it): a question to the broker costs a few of these. 0 on a real broker
 * (the proxy stands in the pipeline's way only). */
int sd_run_broker_rtt_ms(const sd_run_t *r);
sd_progress_run_t *sd_run_progress(const sd_run_t *r);
/* What was sent: distinct events (seqs) so far, each one's kind,
 * disposition and sends, the newest valid event time (INT64_MIN: none),
 * the messages of the source topic. */
int64_t sd_run_nseq(const sd_run_t *r);
const sd_seqs_t *sd_run_seqs(const sd_run_t *r);
int64_t sd_run_max_event_time(const sd_run_t *r);
int64_t sd_run_messages(const sd_run_t *r);
/* Where the source's data ends in partition p, below the transaction
 * markers that follow it: the newest offset the harness had acknowledged
 * + 1, or INT64_MAX when no transactional producer wrote (the high
 * watermark is the end). */
int64_t sd_run_data_end(const sd_run_t *r, int p);
/* Has the pipeline input it has not committed, by the harness's own
 * account of what it sent against the offsets the progress source's
 * commits name? 1 yes, 0 no (everything sent is committed), -1 it cannot
 * tell (no offsets seen, or a second source the commits do not name). */
int sd_run_input_unread(const sd_run_t *r);
/* How long the newest count of the sinks took (ms): a fault may count the
 * target at each step of its wait only when that is cheap. */
int64_t sd_run_sample_cost_ms(const sd_run_t *r);

/* ---- the services injectors and progress sources may call (the run's
 * own rooms share more through run_int.h) ---- */

/* Serve the loop for up to wait_ms (0: once, without blocking). Returns
 * SD_ERR_INTERRUPTED when a stop was requested, or a fatal error. */
sd_err_t sd_run_tick(sd_run_t *r, int64_t wait_ms, char *err, size_t errlen);
/* Serve the event loop until the monotonic time `until` (ms). */
sd_err_t sd_run_tick_until(sd_run_t *r, int64_t until, char *err, size_t errlen);
/* Allocate the next seq with its kind and disposition. */
int64_t sd_run_new_seq(sd_run_t *r, int kind, int disp);
/* Stage one message (value NULL: null value); flushed by sd_run_flush().
 * Its value is an event as rendered (JSON), encoded on its way out when
 * the source has a wire format; sd_run_stage_as_read stages bytes read
 * back from the topic, sent again as they are. */
void sd_run_stage_as_read(sd_run_t *r, int64_t seq, const char *kind, const char *disp, const char *detail, const void *key,
                          size_t keylen, const void *value, size_t vlen);
void sd_run_stage(sd_run_t *r, int64_t seq, const char *kind, const char *disp, const char *detail,
                  int64_t event_time, const void *key, size_t keylen, const void *value, size_t vlen, int null_value);
/* The buffers the next message is rendered into, its value and its key:
 * sd_run_stage_delivery and sd_run_stage_side stage them as they are
 * (sd_run_stage copies what it is handed). */
sd_buf_t *sd_run_draft_value(sd_run_t *r);
sd_buf_t *sd_run_draft_key(sd_run_t *r);
/* sd_run_stage of the draft's bytes: its value, and its key unless keyed
 * is 0. */
void sd_run_stage_draft(sd_run_t *r, int64_t seq, const char *kind, const char *disp, const char *detail, int64_t event_time,
                        int keyed, int null_value);
/* A delivery numbered dseq, its event time t, its bytes in the draft,
 * staged for the second source (no copy of a scan). */
void sd_run_stage_delivery(sd_run_t *r, int64_t dseq, int64_t t);
/* Send what is staged once there is enough of it (SD_RUN_STAGE_FULL): a
 * step staging many messages calls it after each. */
#define SD_RUN_STAGE_FULL 1000
sd_err_t sd_run_flush_if_full(sd_run_t *r, char *err, size_t errlen);
/* events format=avro, before the events of a drift: the schema's next
 * version registered (type_change: `location` a long, forced past the
 * subject's BACKWARD rule; else a field added), the drift's events encoded
 * under it; what the registry said in note. A no-op for JSON events. */
sd_err_t sd_run_wire_drift(sd_run_t *r, int type_change, char *note, size_t notelen, char *err, size_t errlen);
/* The second source's deliveries: the user's log (NULL: the generator's),
 * *next its next line; 1 when lag= still holds delivery dseq back. */
sd_events_t *sd_run_side_log(const sd_run_t *r, int64_t *next);
int sd_run_delivery_held(const sd_run_t *r, int64_t dseq);
/* The event time valid event seq was first sent with when a step chose it
 * (a watermark edge), INT64_MIN when it is the generator's own: what a
 * replay renders it with, so that it is sent again byte for byte. */
int64_t sd_run_sent_at(const sd_run_t *r, int64_t seq);
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
 * in focus; the progress source's batch state follows the focused instance's
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

/* Nothing left for the pipeline to read, for a second now: nothing sent in
 * the background nor held back, no batch in flight, and the progress
 * source proves every partition committed to its end. No batch with rows
 * can begin then, nor a commit come, until something is sent: an optional
 * fault waiting for one gives up (sd_process_wait_point) instead of
 * waiting out its timeout. w keeps its state between calls (zeroed
 * first); the proof is asked at most every 100 ms. */
typedef struct {
    int64_t since, next;
} sd_run_unfed_t;
int sd_run_unfed(sd_run_t *r, sd_run_unfed_t *w);
#define SD_RUN_UNFED_MS 1000

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
    int64_t pending;       /* the target's records written and not yet visible (an open transaction) when it struck, -1 unknown */
    /* Set by the caller, or NULL: work the strike needs that takes a
     * round trip (a broker fault asks who leads now), done once the aim is
     * reached and before the last look at the batch, so that nothing slow
     * falls between that look and the strike; a batch that commits
     * meanwhile is missed and the next one taken. */
    sd_err_t (*prepare)(sd_run_t *r, void *arg, char *err, size_t errlen);
    void *prepare_arg;
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
