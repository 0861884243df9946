/* run_int.h - what the run's own rooms (the files of harness/run/) share and no
 * other file may call, in the manner of SQLite's whereInt.h beside where.c:
 * run.h is the run's face (run a scenario; the handle, opaque; the
 * services injectors and progress sources call), this is its inside: the
 * run itself and the calls between its rooms. The structure test holds
 * every file outside harness/run/ to never including it. */
#ifndef SD_RUN_INT_H
#define SD_RUN_INT_H

#include "run.h"
#include "registry.h"
#include "wire.h"

/* Batches of up to 1,000 messages that may be in the ledger's writer at
 * once while the runner renders the next ones. */
#define SD_RUN_INFLIGHT 4
/* await quiescent, once the source is proven consumed to its end: how long
 * a sample must show the sinks unchanged after the newest change or batch
 * event (instead of the whole quiet window) */
#define SD_RUN_SETTLE_MS 150

/* The run (run.h names it sd_run_t): its members each say which room
 * writes them. */
struct sd_run_s {
    /* who the run is: the whole run shares these */
    const sd_scenario_t *sc;
    const sd_run_opts_t *opts;
    char *run_dir;
    char *tag;
    uint64_t seed;
    sd_kvlist_t vars;             /* run-time placeholders + user variables */
    sd_kvlist_t topic_config;     /* settings of the topics the run creates (source min-insync=, unclean-election=) */
    int lock_fd;                  /* run.db, flock'd while the run goes: `report` leaves a running run alone (-1: none) */
    int step;                     /* index of the running step */
    int64_t t0_wall, t0_mono;

    sd_ledger_t *ledger;
    sd_broker_t *broker;
    sd_sup_t *sup;
    /* the source: its topic, its producer and the events it is sent (runner.c, run_send.c) */
    struct sd_run_source_s {
        char *topic;
        int partitions;
        sd_producer_t *producer;
        sd_events_t *events;
        /* events format=avro (run_wire.c): the schema's text, its codec once registered, the encoded value */
        char *schema;
        sd_wire_t *wire;
        char *registry;
        sd_registry_t *reg;       /* the harness's client of it (the registry line's auth=, ca=, cert=, key=) */
        char *reg_auth, *reg_ca, *reg_cert, *reg_key; /* those, expanded: the pipeline's STREAMDRILL_REGISTRY_* too */
        char *subject;
        sd_wire_t *evolved[2];    /* the schema's later versions (inject drift=): a field added, a type changed */
        sd_buf_t encoded;
    } src;
    struct sd_run_sinks_s {       /* the sinks read (runner.c opens them) */
        sd_sink_t *v[SD_MAX_SINKS];
        int n;
        sd_sink_t *target, *quarantine;
    } sink;

    /* `deliveries`: the second source topic and its producer (runner.c, run_send.c) */
    struct sd_run_side_s {
        char *topic;
        int partitions;
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
        int64_t open_seq[SD_MAX_OPEN_TXN];   /* the first event (seq) of each: its events are open_n from there */
        int64_t open_timeout_ms;             /* the transaction.timeout.ms they were given, 0: the drill's own */
        int nopen, open_slots;
        int64_t data_end[SD_PRODUCER_MAX_PARTITIONS]; /* per partition: where the transactional producers' data ends */
    } txn;

    /* what was sent, per distinct event (seq): expected disposition, kind and sends (run_send.c, run_base.c; the injectors through sd_run_new_seq and sd_run_count_sent) */
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
        int64_t *wm_edge_t;           /* the event time each was sent with, beside it */
        const uint8_t *acked_lost; /* while the run is judged: per seq, Kafka lost it after acknowledging it (NULL: none) */
        const uint8_t *maybe_late; /* while the run is judged: per seq, a late event the engine's watermark had not passed (NULL: none) */
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

    /* the pipeline's instances, as the supervisor runs them (run_wait.c, run_instances.c, run_loop.c) */
    struct sd_run_pipeline_s {
        int incarnations;
        int crashes;
        int wanted;               /* the plan expects it running */
        int live;                 /* instances the plan wants running (`start`: the pipeline line's instances=, `scale to=`) */
        int64_t *trim_warned;     /* per source partition: low watermark already warned about (run_send.c) */
    } pipe;
    sd_progress_run_t prog;       /* what its progress source says of it (progress/; sd_run_progress) */

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

    sd_faults_t faults;           /* the injectors' (run.h) */
    /* faults to undo by a timer (for=): sd_run_schedule_undo (run_base.c) */
    struct sd_run_undo_s {
        struct sd_run_undo_one_s {
            int64_t due_mono;
            void (*fn)(struct sd_run_s *r, int arg);
            int arg;
        } q[16];
        int n;
    } undo;

    /* what keeps the run from passing, besides failed checks (run_base.c, runner.c, run_judge.c) */
    struct sd_run_verdict_s {
        int missed;               /* fault steps that did not do what they say (sd_run_fault_missed) */
        uint8_t *missed_step;     /* per step: sd_step_miss_t (a step is counted once) */
        char missed_msg[1536];
        int unmeasured;           /* expectations on figures the run could not measure */
        char unmeasured_why[512];
        int await_timeout_line;   /* the last wait that timed out, until a fault step follows it */
        /* each `await exit`: whether the pipeline ended by itself, judged as a check (run_judge.c) */
        struct sd_run_end_s {
            int line, ok;
            char expected[64], actual[256];
        } *ends;
        int nends;
        sd_err_t fatal;           /* first fatal error; the run stops stepping */
        char fatal_msg[2048];
    } verdict;
};

/* run_base.c, run_send.c */
/* Record the staged messages in the ledger and hand the previously
 * submitted batch to Kafka (the produce loop pipelines with this). */
sd_err_t sd_run_submit(sd_run_t *r, char *err, size_t errlen);
/* Milliseconds since the run started. */
int64_t sd_run_elapsed_ms(const sd_run_t *r);

/* End every fault that is on (`heal`); returns how many; done lists them. */
int sd_run_heal(sd_run_t *r, sd_buf_t *done);

/* ---- between the runner's own files (runner.c, run_send.c, run_wait.c,
 * run_judge.c): one module split by concern ---- */

/* Keep the first fatal error; the run stops stepping. Returns e. */
sd_err_t sd_run_set_fatal(sd_run_t *r, sd_err_t e, const char *msg);
void sd_run_live(sd_run_t *r);
void sd_run_live_clear(sd_run_t *r);
/* Undo the timed faults that are due (all: every one). */
void sd_run_undo_due(sd_run_t *r, int all);
/* run_wire.c: events format=avro. Check the registry line and the schema,
 * with the event 0 encoded (a bad scenario, before anything is written);
 * register the schemas once the ledger is open; the value a staged
 * message is sent as (value itself for JSON events; NULL with *e the
 * code and err the reason when it cannot be encoded). */
sd_err_t sd_run_wire_check(sd_run_t *r, const char *url, const char *schema_path, char *err, size_t errlen);
sd_err_t sd_run_wire_register(sd_run_t *r, char *err, size_t errlen);
const void *sd_run_wire_value(sd_run_t *r, const char *kind, const char *detail, const void *value, size_t *vlen, sd_err_t *e,
                              char *err, size_t errlen);
void sd_run_wire_close(sd_run_t *r);
/* run_send.c */
sd_err_t sd_run_background(sd_run_t *r, char *err, size_t errlen);
sd_err_t sd_run_background_wait(sd_run_t *r, char *err, size_t errlen);
sd_err_t sd_run_produce(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen);
/* Commit the transactions `produce ... open=K` left open (the resolve step,
 * and before the reconciliation). */
sd_err_t sd_run_resolve(sd_run_t *r, int64_t timeout_ms, char *detail, size_t dlen, char *err, size_t errlen);
/* run_wait.c */
sd_err_t sd_run_sup_events(sd_run_t *r, char *err, size_t errlen);
sd_err_t sd_run_sample(sd_run_t *r, int force, char *err, size_t errlen);
sd_err_t sd_run_await_sink(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen);
sd_err_t sd_run_await_quiescent(sd_run_t *r, int64_t quiet_ms, int64_t timeout_ms, char *detail, size_t dlen,
                                char *err, size_t errlen);
sd_err_t sd_run_await_batches(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen);
sd_err_t sd_run_sleep(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen);
/* run_instances.c, `await exit`: until the pipeline ends by itself; how it ended (or that
 * it did not) is kept for the judgement's check, never an error. */
sd_err_t sd_run_await_exit(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen);
/* run_model.c: the result models, an ops struct each, chosen by the word
 * of the scenario's `model` line, as sink readers are by kind. A model's
 * judge fills c's group counts (changed, for rows), stores the anomalous
 * groups in run.db and sets detail[b] to the first groups of each
 * sd_gbucket_t (caller frees). */
struct sd_recon_counts_s;
typedef struct sd_model_ops_s {
    const char *name;
    /* 1: the sink holds derived rows, judged group by group, its ids not at
     * all; 0: its ids are judged as without a model, and each row too */
    int groups;
    sd_err_t (*judge)(sd_run_t *r, sd_sink_t *sink, struct sd_recon_counts_s *c, char **detail, char *err, size_t errlen);
} sd_model_ops_t;
/* The ledger id of seq (opaque: the run), for the models' and checks' details. */
void sd_run_fmt_id(void *opaque, int64_t seq, char *out, size_t outlen);
/* The sent events that probe an edge into run.db edge, and a line saying so. */
void sd_run_record_edges(sd_run_t *r);
/* The model that judges sink, or NULL. */
const sd_model_ops_t *sd_run_model_for(const sd_run_t *r, const sd_sink_t *sink);
/* run_join.c: `model join`. */
sd_err_t sd_run_judge_join(sd_run_t *r, sd_sink_t *sink, struct sd_recon_counts_s *c, char **detail, char *err, size_t errlen);
/* Store a model's flagged groups in run.db, the first ones of each bucket
 * in detail[b]; keys_list names the '\x1f'-separated parts of a group's keys. */
struct sd_result_s;
sd_err_t sd_model_store_groups(sd_run_t *r, const char *sink, const char *keys_list, int latest, const struct sd_result_s *res,
                               char **detail, char *err, size_t errlen);
/* The expected ids the pipeline had not consumed yet, as a byte per seq
 * (NULL: none, or no way to tell), why saying from what; asked while the
 * pipeline still runs, before it is stopped for the final read. */
uint8_t *sd_run_pending(sd_run_t *r, char *why, size_t wlen);
/* The messages of the source (side: of the second source, by their scan's
 * seq) Kafka acknowledged and no longer holds, every acknowledged copy of
 * them, as a byte per seq (1: lost), their number in *count; NULL when
 * none, and on the embedded cluster, which never cuts a partition back.
 * ends[p]: each partition's end now. */
uint8_t *sd_run_acked_lost_seqs(sd_run_t *r, int side, const int64_t *ends, int nparts, int64_t *count);
/* Reconcile every sink (read after the pipeline stopped); pending is
 * sd_run_pending's answer, taken over. *failed counts the failed checks,
 * *settled those of them no further writing could undo (sd_check_t). */
sd_err_t sd_run_reconcile(sd_run_t *r, uint8_t *pending, int *failed, int *settled, int *unjudgeable, int *unconsumed, char *err,
                          size_t errlen);

#include "health.h"
/* run_bounds.c: the batches' sizes and the state the pipeline kept, from
 * its own account (the rule is in run_bounds.c and docs/oracle.md). */
typedef struct sd_bounds_s {
    int64_t batches, batch_rows_max;          /* -1: no batch said its size */
    int has_state;
    int64_t state_rows_peak, state_rows_final, state_rows_half, state_growth, rows_after_half;
    int64_t state_unbounded;                  /* 1, 0, or -1 when the rule cannot judge (why) */
    char query[128];                          /* the query the state figures are of ("" for markers) */
    char why[512];
    char detail[1024];                         /* what the figures rest on, for the checks' details */
    struct sd_health_s health;                 /* operational health (health.c) */
} sd_bounds_t;
void sd_run_bounds(sd_run_t *r, sd_bounds_t *b);
/* The NAME=VALUE words of a pipeline's ready line but query= (the
 * versions streamdrill.spark names), into out with " (the pipeline's
 * ready line)"; 0 when there are none. */
int sd_run_ready_versions(const char *text, char *out, size_t len);
/* The late events the engine's own watermark had not passed when it read
 * them (run_late.c): per seq 1, or NULL when there are none or the
 * progress source cannot tell; *nmaybe their number. */
uint8_t *sd_run_late_rule(sd_run_t *r, int64_t *nmaybe);

/* run_operator.c: an `operator` step (a person's confirmation, or its command) */
sd_err_t sd_run_operator(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen);

struct sd_observe_s;
/* run_recovery.c: each fault's recovery figures (recovery.c), stored in
 * run.db and judged against the `expect` clauses on figures; obs is the
 * target as read (NULL for a model-judged one), sink its name. */
sd_err_t sd_run_recovery(sd_run_t *r, const struct sd_observe_s *obs, const char *sink, const sd_step_t *const *expects, int nexp,
                         int *check_idx, int *failed, char *err, size_t errlen);

#endif
