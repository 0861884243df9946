/* scenario.h - the .drill language: parse a scenario file into a plan.
 *
 * A scenario is line-oriented: a header (source, events, contract, sinks,
 * pipeline, ...) then steps that run in order. The parser checks
 * everything it can before anything starts: unknown directives and keys,
 * malformed numbers and durations, references to undeclared sinks,
 * undefined {variables}, steps that need a pipeline or a source that is not
 * declared. Every error names file:line:column, what was expected and what
 * was found. The grammar is documented in docs/language.md.
 *
 * User variables ({mode}, set by `set` lines or --set) are substituted at
 * parse time, so `produce {n}` is checked like `produce 100`. Run-time
 * placeholders ({run}, {brokers}, {topic}, ...) stay in the text and are
 * expanded by sd_scenario_expand() when the run knows them. */
#ifndef SD_SCENARIO_H
#define SD_SCENARIO_H

/* Bytes kept of each pipeline log unless `logs max=` says otherwise. */
#define SD_LOG_MAX_DEFAULT 64000000

#include <stdint.h>

#include "counts.h"
#include "err.h"
#include "events.h"
#include "util.h"

#define SD_MAX_SINKS 8

typedef enum { SD_DISP_TARGET = 0, SD_DISP_DROPPED, SD_DISP_QUARANTINE, SD_DISP__COUNT } sd_disp_t;
typedef enum { SD_PROFILE_EXACTLY_ONCE = 0, SD_PROFILE_AT_LEAST_ONCE, SD_PROFILE_AT_MOST_ONCE } sd_profile_t;
typedef enum { SD_PROGRESS_MARKERS = 0, SD_PROGRESS_SPARK, SD_PROGRESS_SINK, SD_PROGRESS_NONE, SD_PROGRESS_GROUP, SD_PROGRESS_FLINK } sd_progress_t;

const char *sd_disp_name(sd_disp_t d);
const char *sd_profile_name(sd_profile_t p);


/* A declared sink: where the pipeline's output is read from. */
typedef struct sd_sink_decl_s {
    char *name;          /* "target", "quarantine", or the user's name */
    char *kind;          /* reader name: sqlite, kafka, jsonl */
    int is_quarantine;   /* declared with `quarantine` */
    sd_kvlist_t params;  /* reader parameters, placeholders unexpanded */
    int line;
} sd_sink_decl_t;

/* the commands of a deployed pipeline, in the order of sd_deploy_words */
enum { SD_DEPLOY_START, SD_DEPLOY_STATUS, SD_DEPLOY_STOP, SD_DEPLOY_KILL, SD_DEPLOY_LOGS, SD_DEPLOY__COUNT };
extern const char *const sd_deploy_words[]; /* "start", "status", "stop", "kill", "logs", NULL */

/* pipeline instances=N: at most this many copies of the command */
#define SD_MAX_INSTANCES 8

typedef enum {
    SD_STEP_START, SD_STEP_STOP, SD_STEP_KILL, SD_STEP_RESTART, SD_STEP_PAUSE, SD_STEP_RESUME,
    SD_STEP_PRODUCE, SD_STEP_REPLAY, SD_STEP_INJECT, SD_STEP_AWAIT_SINK, SD_STEP_AWAIT_QUIESCENT, SD_STEP_AWAIT_BATCHES,
    SD_STEP_SLEEP, SD_STEP_EXPECT, SD_STEP_CLOCK, SD_STEP_DAMAGE, SD_STEP_NETWORK, SD_STEP_HEAL, SD_STEP_NOTE, SD_STEP_RESOLVE,
    SD_STEP_OPERATOR, SD_STEP_BROKER, SD_STEP_FAULT, SD_STEP_SCALE, SD_STEP_AWAIT_EXIT,
    SD_STEP__COUNT
} sd_step_kind_t;

/* A `model` line's kind. */
typedef enum {
    SD_MODEL_NONE = 0,
    SD_MODEL_WINDOWS = 1,
    SD_MODEL_LATEST = 2,
    SD_MODEL_ROWS = 3,   /* the ids, and the fields= of each row */
    SD_MODEL_JOIN = 4
} sd_model_kind_t;

/* A windows model's `clock=`: whose event time closes a window. */
typedef enum {
    SD_CLOCK_PROGRESS = 0,  /* the progress source's (partition under progress flink, else global) */
    SD_CLOCK_GLOBAL = 1,    /* one watermark: the newest event time minus the delay */
    SD_CLOCK_PARTITION = 2, /* the oldest source partition's (Flink's Kafka source) */
    SD_CLOCK_TASK = 3       /* the newest event time its task has read (Kafka Streams' stream time) */
} sd_model_clock_t;

/* A join model's `type=` (lang.c's sd_join_words, in this order). */
typedef enum {
    SD_JOIN_INNER = 0, /* a row per matching pair */
    SD_JOIN_LEFT = 1,  /* and a null row for each scan no delivery matched */
    SD_JOIN_FULL = 2,  /* and a null row for each unmatched delivery too */
    SD_JOIN_ASOF = 3   /* each scan with the newest delivery at or before its event time (result.h) */
} sd_join_type_t;

/* Where a kill, stop or pause step lands (the step's `mid_batch`). */
typedef enum {
    SD_LAND_NOW = 0,           /* at once (the default) */
    SD_LAND_MID_BATCH = 1,     /* inside a batch: after its begin, before its commit */
    SD_LAND_AT_BOUNDARY = 2,   /* right after a batch's commit, before the next begins */
    SD_LAND_AFTER_SINK_COMMIT = 3 /* after the sink's commit of a batch, before the checkpoint's */
} sd_landing_point_t;

typedef enum { SD_OP_EQ, SD_OP_NE, SD_OP_GE, SD_OP_LE, SD_OP_GT, SD_OP_LT } sd_op_t;

const char *sd_op_text(sd_op_t op);
int sd_op_eval(sd_op_t op, int64_t actual, int64_t expected);

/* One `expect` clause: count OP value, the value a number or another count. */
typedef struct sd_expect_s {
    char *count;      /* canonical count name (summary.json key), or a recovery figure's name */
    sd_op_t op;
    int64_t value;    /* a figure in seconds is kept in ms */
    char *value_count; /* when the right side names a count, else NULL */
    int per_fault;    /* count names a fault's recovery figure (figures.h), judged fault by fault */
    int figure;       /* then its SD_FIG_x */
    int step_line;    /* a figure: the fault step's line (`step=N`), 0 for every fault */
} sd_expect_t;

/* The malformed kinds (sd_malformed_t) are events.h's: the wire format
 * breaks records of them too. */

const char *sd_malformed_name(sd_malformed_t m);
/* The kind of that name, -1 for none. */
int sd_malformed_parse(const char *name);

/* What `inject` can send besides malformed events (injectors/data.c). */
typedef enum {
    SD_INJ_LATE = 0,      /* event time `by` behind the watermark */
    SD_INJ_OUT_OF_ORDER,  /* event time behind the newest, within the watermark */
    SD_INJ_FUTURE,        /* event time `ahead` of the newest: can pin a watermark */
    SD_INJ_AT_MAX,        /* event time equal to the newest sent */
    SD_INJ_AT_WATERMARK,  /* event time equal to newest - watermark delay */
    SD_INJ_BURST,         /* a device's backlog: event times spread over `offline`, sent at once */
    SD_INJ_SKEW,          /* every event with one key */
    SD_INJ_DRIFT,         /* schema drift: an extra field, or a field of another type */
    SD_INJ_NO_KEY,        /* a valid event without a message key */
    SD_INJ_RETRY_DUP,     /* a new event sent twice in a row, as a producer retry would */
    SD_INJ_DELETE,        /* a tombstone (null value) for the key of a newest event */
    SD_INJ_EDGE,          /* on the next edge the model declares (a window boundary, a join bound) */
    SD_INJ__COUNT
} sd_inject_kind_t;

const char *sd_inject_name(sd_inject_kind_t k);
/* Can `inject ... source=deliveries` send kind k (late, out-of-order,
 * future, retry-dup; malformed= is counted apart)? */
int sd_inject_on_deliveries(sd_inject_kind_t k);

/* transactions a `produce ... transactional open=K` may leave open at once
 * (each holds a producer of its own) */
#define SD_MAX_OPEN_TXN 8

/* What a clock step does, a network step does, a damage step breaks. */
typedef enum { SD_CLOCK_OFFSET = 0, SD_CLOCK_JUMP, SD_CLOCK_RATE, SD_CLOCK_RESET } sd_clock_op_t;
typedef enum { SD_NET_LATENCY = 0, SD_NET_RESET, SD_NET_BLACKHOLE, SD_NET_BANDWIDTH, SD_NET_ERRORS, SD_NET_IDLE } sd_net_op_t;
typedef enum {
    SD_DAMAGE_COMMIT_MARKER = 0, SD_DAMAGE_OFFSETS, SD_DAMAGE_STATE, /* a Spark checkpoint's */
    SD_DAMAGE_FILE_DELETE, SD_DAMAGE_FILE_TRUNCATE                   /* file=PATH */
} sd_damage_t;
/* What a `broker` step does to a broker of the cluster (--cluster). */
typedef enum { SD_BROKER_KILL = 0, SD_BROKER_STOP, SD_BROKER_START, SD_BROKER_RESTART, SD_BROKER_PAUSE, SD_BROKER_RESUME,
               SD_BROKER_ISOLATE, SD_BROKER_REJOIN } sd_broker_op_t;
typedef enum { SD_DRIFT_EXTRA_FIELD = 0, SD_DRIFT_TYPE_CHANGE } sd_drift_t;

/* Which member of a step's union its kind's arguments are in. */
typedef enum {
    SD_ARGS_NONE = 0, SD_ARGS_SEND, SD_ARGS_PROC, SD_ARGS_AWAIT, SD_ARGS_CLOCK, SD_ARGS_DAMAGE, SD_ARGS_NET, SD_ARGS_NOTE, SD_ARGS_EXPECT, SD_ARGS_OPER
} sd_step_args_t;
sd_step_args_t sd_step_args(sd_step_kind_t kind);

/* One step: its kind, what every step has, and a union of per-kind
 * arguments (the member named for the kind's family; the language's table
 * writes them by offset, sd_scenario_free frees them by kind). */
typedef struct sd_step_s {
    sd_step_kind_t kind;
    int line;
    char *text;            /* the step as written (for run.db and reports) */
    int64_t timeout_ms;    /* every wait has one */
    int timeout_given;     /* timeout= was written (not the step's default) */
    int optional;          /* a fault step that may be skipped: a miss is a warning, not an inconclusive run */
    union {
        /* produce, replay, inject */
        struct {
            int64_t count;
            double rate;           /* events per second, 0 = as fast as possible */
            int background;        /* produce ... background: the next steps run while it sends */
            int transactional;     /* produce ... transactional: through a transactional producer */
            int64_t txn_size, txn_abort, txn_open; /* events per transaction, transactions aborted, left open */
            int64_t malformed, late_by_ms;
            int malformed_kinds;   /* bit set of sd_malformed_t, 0 = the original five */
            int64_t inject[SD_INJ__COUNT];  /* counts per kind */
            int64_t within_ms, ahead_ms, offline_ms;
            char *skew_key;
            sd_drift_t drift_type; /* inject drift: an extra field, or a field of another type */
            int replay_from_last;  /* replay the newest events instead of the oldest */
            int side;              /* source=deliveries: on the second source (replay: deliveries already sent; inject: late,
                                    * out-of-order, future, retry-dup and malformed deliveries) */
            int range_partition;   /* replay range=P:A-B: the records at offsets [A, B) of partition P; -1 if not */
            int64_t range_from, range_to;
        } send;
        /* start, stop, kill, restart, pause, resume */
        struct {
            int signal;
            sd_landing_point_t mid_batch; /* where a kill, stop or pause lands */
            int64_t after_ms;      /* kill mid-batch: extra delay after batch start, -1 = auto */
            int64_t visible;       /* kill/pause mid-batch: land once this many of the batch's rows are in the target, 0 = aim */
            int64_t delay_ms;      /* restart delay; pause: resumed by the step after this long */
            char *variant;         /* start/restart as=NAME, or NULL for the pipeline line; fault NAME: the fault command */
            int bop;               /* broker: an sd_broker_op_t */
            int broker_id;         /* broker id=N, -1: not given */
            int leader_of;         /* broker leader-of=P: the leader of source partition P, -1: not given */
            int follower_of;       /* broker follower-of=P: a replica of P that is not its leader (and not down or paused), -1: not given */
            int instance;          /* start ... kill ... instance=K: that instance only; 0: every running instance */
            int scale_to;          /* scale to=N: the instances wanted running */
        } proc;
        /* await sink, await quiescent, await batches */
        struct {
            char *sink;            /* await sink: the sink's name */
            sd_op_t op;
            int64_t rows;          /* rows (await sink), committed batches (await batches) */
            int64_t quiet_ms;      /* await quiescent: how long nothing may change */
        } await;
        struct {
            sd_clock_op_t op;
            int64_t ms;            /* offset=, jump= */
            double rate;           /* rate= */
        } clock;
        struct {
            sd_damage_t what;
            char *path;            /* checkpoint= or file=, placeholders unexpanded; NULL: the scenario's checkpoint */
        } damage;
        struct {
            sd_net_op_t op;
            int64_t value;         /* latency ms, bandwidth bytes/s, error count */
            char *errors;          /* errors=API:ERROR[,API:ERROR...] */
            int64_t for_ms;        /* the fault lasts this long, then heals itself (0: until heal) */
            int on;                /* on=: 0 the broker's connections, 1 the registry's (`registry ... proxy`) */
        } net;
        struct {
            char *text;
        } note;
        struct {
            char *text;            /* the instruction shown to the person on call */
            char **argv;           /* command=PROGRAM ARG...: what --operator auto runs (NULL none) */
            int argc;
        } oper;
        struct {
            sd_expect_t *v;
            int n;
        } expect;
    };
} sd_step_t;

typedef struct sd_scenario_s {
    char *path;            /* as given */
    char *dir;             /* absolute folder of the file ({here}) */
    char *name;
    char *description;     /* the leading comment block, or "" */

    /* source */
    int has_source;
    char *topic;
    int partitions;
    int replication;
    int exact_topic;       /* use the name as is, no per-run suffix */
    int min_insync;        /* the topics' min.insync.replicas (0: the broker's default) */
    int unclean_election;  /* the topics' unclean.leader.election.enable=true */
    int source_line;

    /* events */
    int has_events;
    sd_events_kind_t events_kind;
    uint64_t seed;
    int has_seed;
    int64_t start_ms;
    int start_now;         /* events ... start=now: event times from the run's start (not reproducible) */
    int64_t step_ms;
    int parcels, locations;
    int edge_share;        /* events edges=PCT: of the candidates, the share put on an edge the models declare */
    char *log_path;        /* events log=... (placeholders unexpanded) */
    char *log_id_field;
    int events_line;
    int events_format;     /* events format=: 0 JSON text; the registry wire format (harness/format/wire.h) with 1 Avro, 2 Protobuf, 3 JSON Schema */
    char *schema_path;     /* events schema=PATH: the user's Avro schema or JSON Schema (default: the parcel scans', wire.c) */

    /* registry url=URL: the schema registry a wire format registers its schemas in */
    char *registry_url;
    int registry_line;
    int registry_proxy;    /* registry ... proxy: the pipeline reaches it through the harness's proxy ({registry-url}) */
    char *registry_auth;   /* auth=basic:env:NAME and the like: where the secret is, never the secret */
    char *registry_ca, *registry_cert, *registry_key; /* ca=, cert=, key= (placeholders unexpanded) */
    int64_t registry_timeout_ms; /* timeout=: a whole request (0: the client's 10 s, scaled) */

    /* deliveries: a second source topic, fed by a generator correlated with
     * the scans (a delivery for share% of them, min..max after the scan) */
    int has_deliveries;
    char *deliveries_topic;
    int deliveries_partitions;
    int delivery_share;
    int64_t delivery_min_ms, delivery_max_ms;
    int delivery_orphans;    /* orphans=PCT: deliveries for a parcel never scanned */
    int64_t delivery_lag_ms; /* lag=: each delivery sent this long (wall clock) after its scan (0: right behind it) */
    char *deliveries_log;  /* deliveries log=PATH: a user's JSON lines instead of the generator */
    char *deliveries_id, *deliveries_key, *deliveries_time; /* its id, key and event-time fields */
    int deliveries_line;

    /* contract */
    char *id_field;
    char *time_field;
    int64_t watermark_ms;
    sd_disp_t late_disp;
    sd_disp_t malformed_disp;
    sd_profile_t profile;
    int keep_duplicates;   /* contract duplicates=keep: input duplicates must reach the target */
    sd_disp_t future_disp; /* contract future=quarantine|accept */
    sd_disp_t drift_disp;  /* contract schema=lenient (target) | strict (quarantine) for type changes */

    /* sinks */
    sd_sink_decl_t sinks[SD_MAX_SINKS];
    int nsinks;

    /* `model windows ...`: a sink judged by the result it must hold (see
     * model.h), not by the ids in it */
    struct sd_model_decl_s {
        int kind;            /* sd_model_kind_t */
        char *sink;          /* the sink it judges (NULL: target) */
        int64_t size_ms, slide_ms;
        char *keys;          /* key fields, comma-separated (may be NULL: one group per window) */
        char *value;         /* the numeric field sum/min/max/avg add up */
        char *aggs;          /* count,sum,min,max,avg (default count) */
        int output;          /* 0 append, 1 update */
        char *start_col;     /* the column (field) that holds a window's start (default window_start) */
        char *agg_cols[5];   /* count=, sum=, min=, max=, avg=: the column holding each aggregate (default its name) */
        char *fields;        /* latest: the fields compared, comma-separated */
        int by_arrival;      /* latest order=arrival: the newest is the last sent, not the newest event time */
        int clock;           /* windows: sd_model_clock_t, whose event time closes a window */
        int join_type;       /* join: sd_join_type_t */
        int64_t within_ms;   /* join: a delivery matches a scan from its event time to within after it */
        int64_t grace_ms;    /* join type=as-of: the engine holds each scan back until its task's stream time passes
                                its time plus this (Kafka Streams' Joined.withGracePeriod) */
        char *left_col, *right_col; /* join: the columns of the scan's and the delivery's ids */
        int line;
    } model;

    /* pipeline */
    char **argv;           /* NULL-terminated, placeholders unexpanded */
    int argc;
    int pipeline_line;
    int instances;         /* pipeline instances=N: copies of the command started side by side (1 without it) */
    /* `variant NAME CMD...`: other command lines of the same pipeline (same
     * checkpoint), chosen by `start as=NAME` / `restart as=NAME`; with
     * `deploy` lines, other `deploy start` command lines */
    struct sd_variant_s {
        char *name;
        char **argv;
        int argc;
        int line;
    } *variants;
    int nvariants;
    /* `fault-command NAME PROGRAM ARG...`: what a `fault NAME` step runs (a
     * pod deleted, a container or an executor killed), placeholders unexpanded */
    struct sd_variant_s *fault_cmds;
    int nfault_cmds;
    /* `deploy start|status|stop|kill|logs PROGRAM ARG...`: a pipeline the
     * harness does not fork (process/deployed.h); argv NULL when not given */
    struct {
        char **argv;
        int argc;
        int line;
    } deploy[SD_DEPLOY__COUNT];
    sd_kvlist_t env;       /* extra environment, placeholders unexpanded */
    /* `version [files=PATH,...] [PROGRAM ARG...]`: the application version
     * each incarnation records for the runbook (placeholders unexpanded) */
    char **version_argv;   /* NULL-terminated, or NULL */
    int version_argc;
    char *version_files;   /* comma-separated paths, or NULL */
    int version_line;
    sd_progress_t progress;
    char *checkpoint;      /* progress spark checkpoint=..., or NULL */
    char *progress_group;  /* progress group group=..., or NULL ({group}) */
    int spark_realtime;    /* progress spark batches=real-time: a batch runs from the previous commit */
    int engine_streams;    /* progress ... engine=kafka-streams: the pipeline is a Kafka Streams application, whose
                            * log lines (in its logging's layout) give its states and restores */
    sd_kvlist_t producer_props;
    int faketime;          /* `clock faketime`: run the pipeline under libfaketime */
    int64_t log_max;       /* logs max=: bytes kept of each pipeline log (0: SD_LOG_MAX_DEFAULT) */
    char *faketime_lib;
    int faketime_children; /* preload=children: the pipeline preloads it into what it starts */

    /* variables after --set (for run.db) */
    sd_kvlist_t vars;

    sd_step_t *steps;
    int nsteps;
} sd_scenario_t;

/* Parse path with the given --set overrides. On error returns
 * SD_ERR_SCENARIO (or SD_ERR_IO if the file cannot be read) with
 * "file:line:col: message" in err. *out is owned by the caller
 * (sd_scenario_free). */
sd_err_t sd_scenario_parse(const char *path, const sd_kvlist_t *overrides, sd_scenario_t **out,
                           char *err, size_t errlen);
/* Parse from a string; path is used in messages and for {here}. */
sd_err_t sd_scenario_parse_text(const char *path, const char *text, const sd_kvlist_t *overrides,
                                sd_scenario_t **out, char *err, size_t errlen);
void sd_scenario_free(sd_scenario_t *sc);

/* Expand run-time placeholders ({run}, {brokers}, ...) in text using vars.
 * {{ and }} stand for literal braces. Returns a new string or NULL with err
 * set when a placeholder is unknown. */
char *sd_scenario_expand(const char *text, const sd_kvlist_t *vars, char *err, size_t errlen);

/* The run-time placeholders the runner provides (for validation). */
extern const char *const sd_scenario_runtime_vars[];

/* Canonical count names accepted by `expect` (NULL-terminated). */
extern const char *const sd_scenario_count_names[];
/* A result model's group count (groups_expected, wrong_value, ...): stored only with a `model`. */
int sd_scenario_is_group_count(const char *name);
/* state_*: a bounds figure, -1 when the run could not measure it */
int sd_scenario_is_state_count(const char *name);
/* A count from the pipeline's own account (counts.h SD_CK_BOUNDS): -1 when it gave none. */
int sd_scenario_is_bounds_count(const char *name);
/* Map an expect name or alias (unique, rows, ...) to its canonical name, or NULL. */
const char *sd_scenario_count_canonical(const char *name);
/* The alias `expect` also takes for a canonical count name, or NULL. */
const char *sd_scenario_count_alias(const char *name);

#endif
