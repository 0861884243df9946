/* lang.c - the .drill language as one table (see lang.h): every header
 * directive and every step, in the order of the reference, with its keys,
 * types, defaults, ranges and help. The machinery that reads a line by it
 * is lang_words.c, the hooks lang_hooks.c, what prints it lang_help.c
 * (lang_int.h). */
#include "figures.h"
#include "lang_int.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sqlite3.h>
#include <string.h>

/* ======================================================================
 * The table
 * ====================================================================== */

#define S(f) offsetof(sd_step_t, f)
#define H(f) offsetof(sd_scenario_t, f)
#define TIMEOUT {.name = "timeout", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(timeout_ms), .min = 1, \
                 .tag_off = S(timeout_given), .tag = 1, \
                 .help = "how long the step may wait (scaled by STREAMDRILL_TIMEOUT_MULTIPLIER)"}
#define OPTIONAL {.name = "optional", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(optional), .set = 1, \
                  .help = "the fault may be skipped: if it does not land, a warning instead of an inconclusive run"}
#define LANDING(fld)                                                                                                     \
    {.name = "mid-batch", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(fld), .set = SD_LAND_MID_BATCH, .group = 2,  \
     .help = "inside a batch: after its begin, before its commit"},                                                   \
    {.name = "at-boundary", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(fld), .set = SD_LAND_AT_BOUNDARY, .group = 2, \
     .help = "right after a batch's commit, before the next batch begins"},                                           \
    {.name = "now", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(fld), .set = SD_LAND_NOW, .group = 2, .help = "at once (the default)"}
#define END {.name = NULL}

static const char *const sd_yes_no[] = {"no", "yes", NULL};
static const char *const sd_profiles[] = {"exactly-once", "at-least-once", "at-most-once", NULL};
static const char *const sd_late_words[] = {"drop", "quarantine", "accept", NULL};
static const int sd_late_values[] = {SD_DISP_DROPPED, SD_DISP_QUARANTINE, SD_DISP_TARGET};
static const char *const sd_malformed_words[] = {"quarantine", "drop", NULL};
static const int sd_malformed_values[] = {SD_DISP_QUARANTINE, SD_DISP_DROPPED};
static const char *const sd_future_words[] = {"quarantine", "accept", NULL};
static const int sd_future_values[] = {SD_DISP_QUARANTINE, SD_DISP_TARGET};
static const char *const sd_schema_words[] = {"lenient", "strict", NULL};
static const int sd_schema_values[] = {SD_DISP_TARGET, SD_DISP_QUARANTINE};
static const char *const sd_dup_words[] = {"drop", "keep", NULL};
static const char *const sd_progress_words[] = {"markers", "spark", "flink", "group", "sink", "none", NULL};
static const int sd_progress_values[] = {SD_PROGRESS_MARKERS, SD_PROGRESS_SPARK, SD_PROGRESS_FLINK, SD_PROGRESS_GROUP, SD_PROGRESS_SINK, SD_PROGRESS_NONE};
static const char *const sd_batch_words[] = {"micro", "real-time", NULL};
static const char *const sd_engine_words[] = {"none", "kafka-streams", NULL};
static const char *const sd_preload_words[] = {"all", "children", NULL};
static const char *const sd_from_words[] = {"first", "last", NULL};
static const char *const sd_source_words[] = {"scans", "deliveries", NULL};
static const char *const sd_drift_words[] = {"extra-field", "type-change", NULL};
static const char *const sd_kafka_word[] = {"kafka", NULL};
static const char *const sd_parcel_word[] = {"parcel-scans", NULL};
static const char *const sd_model_words[] = {"windows", "latest", "rows", "join", NULL};
static const int sd_model_values[] = {SD_MODEL_WINDOWS, SD_MODEL_LATEST, SD_MODEL_ROWS, SD_MODEL_JOIN};
static const char *const sd_join_words[] = {"inner", "left", "full", "as-of", NULL};
static const char *const sd_order_words[] = {"event-time", "arrival", NULL};
static const char *const sd_clock_words[] = {"progress", "global", "partition", "task", NULL};
static const char *const sd_output_words[] = {"append", "update", "complete", NULL};
static const char *const sd_net_on_words[] = {"broker", "registry", NULL};
static const char *const sd_format_words[] = {"json", "avro", "protobuf", "json-schema", NULL};

/* ---- keys ---- */

static const sd_lang_key_t sd_keys_source[] = {
    {.name = "kafka", .form = SD_K_POS, .type = SD_V_CHOICE, .off = SD_NOWHERE, .choices = sd_kafka_word, .required = 1,
     .help = "`kafka` (the only source kind)"},
    {.name = "topic", .form = SD_K_KEY, .type = SD_V_TOPIC, .off = H(topic), .required = 1, .help = "the topic's name"},
    {.name = "partitions", .form = SD_K_KEY, .type = SD_V_INT, .off = H(partitions), .min = 1, .max = 1000, .def = 3, .has_def = 1,
     .help = "partitions of the topic the run creates"},
    {.name = "replication", .form = SD_K_KEY, .type = SD_V_INT, .off = H(replication), .min = 1, .max = 10, .def = 1, .has_def = 1,
     .help = "its replication factor"},
    {.name = "exact", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(exact_topic), .choices = sd_yes_no, .def = 0, .has_def = 1,
     .help = "yes: the topic's name as is, no per-run suffix"},
    {.name = "min-insync", .form = SD_K_KEY, .type = SD_V_INT, .off = H(min_insync), .min = 1, .max = 10,
     .help = "the topic's min.insync.replicas (default: the broker's)"},
    {.name = "unclean-election", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(unclean_election), .choices = sd_yes_no, .def = 0, .has_def = 1,
     .help = "yes: a replica out of sync may become leader (unclean.leader.election.enable), and acknowledged events may be lost"},
    END};

static const sd_lang_key_t sd_keys_events[] = {
    {.name = "parcel-scans", .form = SD_K_POS, .type = SD_V_CHOICE, .off = SD_NOWHERE, .choices = sd_parcel_word,
     .help = "the seeded generator (the default)"},
    {.name = "seed", .form = SD_K_KEY, .type = SD_V_SEED, .off = H(seed), .def = 42, .has_def = 1, .help = "the generator's seed"},
    {.name = "start", .form = SD_K_KEY, .type = SD_V_START, .off = H(start_ms), .help = "event time of the first event, or now"},
    {.name = "step", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(step_ms), .def = 1000, .has_def = 1,
     .help = "event time between two events"},
    {.name = "parcels", .form = SD_K_KEY, .type = SD_V_INT, .off = H(parcels), .min = 1, .def = 5000, .has_def = 1,
     .help = "distinct parcel ids"},
    {.name = "locations", .form = SD_K_KEY, .type = SD_V_INT, .off = H(locations), .min = 1, .def = 24, .has_def = 1,
     .help = "distinct locations"},
    {.name = "edges", .form = SD_K_KEY, .type = SD_V_INT, .off = H(edge_share), .min = 0, .max = 100, .def = 25, .has_def = 1,
     .help = "events on the edges the model declares (0: none): the three scans before each window boundary moved to 1 ms before "
             "it, onto it and 1 ms after; this percent of the deliveries at a join bound or 1 ms beside it; this percent of the "
             "scans tied (key and event time) with the one before, for latest"},
    {.name = "log", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "PATH", .off = H(log_path), .tag_off = H(events_kind), .tag = SD_EVENTS_LOG,
     .help = "a JSON-lines file to replay instead"},
    {.name = "id", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(log_id_field), .help = "the log's id field"},
    {.name = "format", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(events_format), .choices = sd_format_words, .def = 0, .has_def = 1,
     .help = "the value each event is sent as: JSON text, or the registry wire format (a zero byte, the schema's id in 4 "
             "bytes, then for `avro` the record in Avro's binary encoding, for `protobuf` the message index 0 and the message "
             "of harness/format/parcel_scan.proto, for `json-schema` the event's JSON text, checked against the schema before it is "
             "sent), its schema registered under the subject `<topic>-value` of the `registry`"},
    {.name = "schema", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "PATH", .off = H(schema_path),
     .help = "an Avro schema (`.avsc`) for format=avro, a `.proto` (its first message is sent) for format=protobuf, a JSON "
             "Schema (draft 7; the keywords docs/formats.md lists) for format=json-schema (default: the parcel scans' record, its id and event-time fields named as the contract names "
             "them, `weight_g` a long (an integer of at least 0), the rest strings)"},
    END};

static const sd_lang_key_t sd_keys_registry[] = {
    {.name = "url", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "URL", .off = H(registry_url), .required = 1,
     .help = "its Confluent-compatible API, http[s]://HOST[:PORT][/PATH] (Apicurio Registry: `.../apis/ccompat/v7`), without "
             "user:password@ (credentials come from `auth=`)"},
    {.name = "auth", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "KIND:FROM:WHERE", .off = H(registry_auth),
     .help = "the registry's credentials, read from the environment or a file when the run starts (never written in the drill, "
             "nor in any output): `basic:env:NAME` (NAME holds KEY:SECRET, as Confluent Cloud's API keys), `basic:file:PATH` "
             "(its first line is KEY:SECRET), `bearer:env:NAME` or `bearer:file:PATH` (an OAuth/OIDC access token, as Apicurio "
             "with Keycloak takes); the pipeline gets it as `STREAMDRILL_REGISTRY_AUTH` (the same words: it reads the same "
             "variable or file)"},
    {.name = "ca", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "PATH", .off = H(registry_ca),
     .help = "with https: the PEM file of the CA that signed the registry's certificate (default: the system's); the "
             "certificate and its host name are always verified (`STREAMDRILL_REGISTRY_CA` for the pipeline)"},
    {.name = "cert", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "PATH", .off = H(registry_cert),
     .help = "with https: a client certificate (PEM) for mutual TLS, with `key=` (`STREAMDRILL_REGISTRY_CERT`)"},
    {.name = "key", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "PATH", .off = H(registry_key),
     .help = "its private key (PEM, unencrypted; `STREAMDRILL_REGISTRY_KEY`)"},
    {.name = "timeout", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(registry_timeout_ms), .min = 1,
     .help = "how long one of the harness's requests may take, redirects included (default 10s, connecting 5s; scaled by "
             "STREAMDRILL_TIMEOUT_MULTIPLIER)"},
    {.name = "proxy", .form = SD_K_WORD, .type = SD_V_FLAG, .off = H(registry_proxy), .set = 1,
     .help = "put the harness's TCP proxy between the pipeline and the registry: `{registry-url}` and `STREAMDRILL_REGISTRY` "
             "lead through it, and `network ... on=registry` steps slow it, cut it or reset it (the harness's own calls go "
             "straight to the registry); an http URL only (the proxy's address is not the name a certificate carries)"},
    END};

static const sd_lang_key_t sd_keys_deliveries[] = {
    {.name = "topic", .form = SD_K_KEY, .type = SD_V_TOPIC, .off = H(deliveries_topic),
     .help = "its topic (default: the source's name and `-deliveries`, with the run's suffix)"},
    {.name = "partitions", .form = SD_K_KEY, .type = SD_V_INT, .off = H(deliveries_partitions), .min = 1, .max = 1000, .def = 3,
     .has_def = 1, .help = "partitions of the topic the run creates"},
    {.name = "share", .form = SD_K_KEY, .type = SD_V_INT, .off = H(delivery_share), .min = 1, .max = 100, .def = 70, .has_def = 1,
     .help = "percent of the scans that get a delivery"},
    {.name = "min-delay", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(delivery_min_ms), .def = 60000, .has_def = 1,
     .help = "a delivery's event time is at least this after its scan's"},
    {.name = "max-delay", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(delivery_max_ms), .def = 1200000, .has_def = 1,
     .help = "and at most this"},
    {.name = "orphans", .form = SD_K_KEY, .type = SD_V_INT, .off = H(delivery_orphans), .min = 0, .max = 100, .def = 0, .has_def = 1,
     .help = "percent of the deliveries for a parcel no scan has (a full outer join owes each a null row; the others, nothing)"},
    {.name = "lag", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(delivery_lag_ms),
     .help = "each delivery sent this long after its scan (wall clock: it reaches the pipeline later, in another batch, whatever "
             "its event time); those still held when the run ends are never sent (default: right behind its scan)"},
    {.name = "log", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "PATH", .off = H(deliveries_log),
     .help = "a JSON-lines file of deliveries instead (one sent behind each new scan, in order)"},
    {.name = "id", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(deliveries_id), .help = "log: its id field (default delivery_id)"},
    {.name = "key", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(deliveries_key), .help = "log: the field that keys it (default parcel_id)"},
    {.name = "time", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(deliveries_time),
     .help = "log: its event-time field (default delivered_at)"},
    END};

static const sd_lang_key_t sd_keys_contract[] = {
    {.name = "id", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(id_field), .help = "the id field (default event_id)"},
    {.name = "time", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(time_field), .help = "the event-time field (default event_time)"},
    {.name = "watermark", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(watermark_ms), .def = 600000, .has_def = 1,
     .help = "the watermark delay"},
    {.name = "late", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(late_disp), .choices = sd_late_words, .values = sd_late_values,
     .def = SD_DISP_DROPPED, .has_def = 1, .help = "where late events go"},
    {.name = "malformed", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(malformed_disp), .choices = sd_malformed_words,
     .values = sd_malformed_values, .def = SD_DISP_QUARANTINE, .has_def = 1, .help = "where malformed events go"},
    {.name = "future", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(future_disp), .choices = sd_future_words,
     .values = sd_future_values, .def = SD_DISP_QUARANTINE, .has_def = 1, .help = "where events from the future go"},
    {.name = "schema", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(drift_disp), .choices = sd_schema_words,
     .values = sd_schema_values, .def = SD_DISP_TARGET, .has_def = 1, .help = "strict: a field of another type is quarantined"},
    {.name = "duplicates", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(keep_duplicates), .choices = sd_dup_words,
     .has_def = 1, .help = "keep: an id sent n times must be in the target n times"},
    {.name = "profile", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(profile), .choices = sd_profiles, .has_def = 1,
     .help = "which buckets may be non-empty"},
    END};

static const sd_lang_key_t sd_keys_progress[] = {
    {.name = "markers|spark|flink|group|sink|none", .form = SD_K_POS, .type = SD_V_CHOICE, .off = H(progress), .choices = sd_progress_words,
     .values = sd_progress_values, .required = 1, .help = "markers, spark, flink, group, sink or none"},
    {.name = "checkpoint", .form = SD_K_KEY, .type = SD_V_TEXT, .off = H(checkpoint), .meta = "PATH",
     .help = "progress spark: the checkpoint; progress flink: the job's checkpoint storage, DIR/JOB/chk-N (default {checkpoint})"},
    {.name = "batches", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(spark_realtime), .choices = sd_batch_words, .has_def = 1,
     .help = "progress spark: micro-batches or real-time intervals"},
    {.name = "group", .form = SD_K_KEY, .type = SD_V_TEXT, .off = H(progress_group), .meta = "NAME",
     .help = "progress group: the pipeline's consumer group (default {group})"},
    {.name = "engine", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(engine_streams), .choices = sd_engine_words, .has_def = 1,
     .help = "kafka-streams: the pipeline is a Kafka Streams application, whose own log lines (State transition, Finished "
             "restoring, in its logging's layout) give restore_s and restored_records, the pipeline's own claim; no other "
             "pipeline's lines are read as such"},
    END};

static const sd_lang_key_t sd_keys_model[] = {
    {.name = "windows|latest|rows|join", .form = SD_K_POS, .type = SD_V_CHOICE, .off = H(model.kind), .choices = sd_model_words,
     .values = sd_model_values, .required = 1,
     .help = "event-time windows aggregated per key, the latest row per key, the ids (the default) with their fields, or the "
             "rows of a join of the scans with the deliveries"},
    {.name = "size", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(model.size_ms), .min = 1,
     .help = "windows: the window length"},
    {.name = "slide", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(model.slide_ms), .min = 1,
     .help = "sliding windows: a new one every slide (default: size, tumbling)"},
    {.name = "key", .form = SD_K_KEY, .type = SD_V_TEXT, .off = H(model.keys), .meta = "FIELD[,FIELD...]",
     .help = "the group key fields besides the window (default: none)"},
    {.name = "value", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.value), .help = "the numeric field sum, min, max and avg read"},
    {.name = "agg", .form = SD_K_KEY, .type = SD_V_TEXT, .off = H(model.aggs), .meta = "count,sum,min,max,avg",
     .help = "the aggregates, each a column of the sink (default count)"},
    {.name = "output", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(model.output), .choices = sd_output_words, .has_def = 1,
     .help = "append: each closed window once, final; update: the last row per window is its value; complete: the sink holds "
             "the whole table, late events counted"},
    {.name = "sink", .form = SD_K_KEY, .type = SD_V_NAME, .off = H(model.sink), .help = "the sink it judges (default target)"},
    {.name = "start", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.start_col), .meta = "COLUMN",
     .help = "the column holding a window's start (default window_start)"},
    {.name = "count", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.agg_cols[0]), .meta = "COLUMN",
     .help = "windows: the column holding the count (default count); sum=, min=, max=, avg= the same for theirs"},
    {.name = "sum", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.agg_cols[1]), .meta = "COLUMN", .help = "windows: the sum's column"},
    {.name = "min", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.agg_cols[2]), .meta = "COLUMN", .help = "windows: the min's column"},
    {.name = "max", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.agg_cols[3]), .meta = "COLUMN", .help = "windows: the max's column"},
    {.name = "avg", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.agg_cols[4]), .meta = "COLUMN", .help = "windows: the avg's column"},
    {.name = "fields", .form = SD_K_KEY, .type = SD_V_TEXT, .off = H(model.fields), .meta = "FIELD[,FIELD...]",
     .help = "latest, rows: the fields whose values a row must hold"},
    {.name = "order", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(model.by_arrival), .choices = sd_order_words, .has_def = 1,
     .help = "latest: the newest event is the one with the newest event time, or the last one sent"},
    {.name = "clock", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(model.clock), .choices = sd_clock_words, .has_def = 1,
     .help = "windows: whose event time closes a window: one watermark (global), the oldest source partition's (partition, "
             "Flink), the task's newest event (task, Kafka Streams' stream time); progress (default): partition under "
             "progress flink, else global"},
    {.name = "type", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(model.join_type), .choices = sd_join_words, .has_def = 1,
     .help = "join: inner, left outer or full outer (within=); as-of: each scan with the newest delivery of its key at or "
             "before its event time, or null (a stream-table join on a table with history)"},
    {.name = "within", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(model.within_ms),
     .help = "join: a delivery matches a scan of its parcel from the scan's event time to this much after it"},
    {.name = "grace", .form = SD_K_KEY, .type = SD_V_DURATION, .off = H(model.grace_ms),
     .help = "join type=as-of: the engine holds each scan back until the newest scan its task read is this much newer "
             "(Kafka Streams' Joined.withGracePeriod); a scan no newer scan of its key has passed by this much may not "
             "be joined yet: pending"},
    {.name = "left", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.left_col), .meta = "COLUMN",
     .help = "join: the column holding the scan's id (default event_id)"},
    {.name = "right", .form = SD_K_KEY, .type = SD_V_FIELD, .off = H(model.right_col), .meta = "COLUMN",
     .help = "join: the column holding the delivery's id (default delivery_id)"},
    END};

static const sd_lang_key_t sd_keys_faketime[] = {
    {.name = "lib", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "PATH", .off = H(faketime_lib), .help = "libfaketimeMT.so.1 (default: found in Debian's paths)"},
    {.name = "preload", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = H(faketime_children), .choices = sd_preload_words, .has_def = 1,
     .help = "children: the pipeline preloads it into what it starts"},
    END};

static const sd_lang_key_t sd_keys_logs[] = {
    {.name = "max", .form = SD_K_KEY, .type = SD_V_COUNT, .off = H(log_max), .min = 4096, .def = SD_LOG_MAX_DEFAULT, .has_def = 1,
     .meta = "BYTES", .help = "bytes kept of each of the pipeline's logs (default 64M)"},
    END};

#define INSTANCE {.name = "instance", .form = SD_K_KEY, .type = SD_V_INT, .off = S(proc.instance), .min = 1, .max = SD_MAX_INSTANCES, \
                  .meta = "K", .help = "that instance of a pipeline with instances=N only (default: every instance)"}

static const sd_lang_key_t sd_keys_start[] = {
    {.name = "as", .form = SD_K_KEY, .type = SD_V_VARIANT, .off = S(proc.variant), .help = "a variant's command line instead of the pipeline's"},
    INSTANCE, TIMEOUT, END};

static const sd_lang_key_t sd_keys_timeout[] = {TIMEOUT, END};
static const sd_lang_key_t sd_keys_resume[] = {INSTANCE, TIMEOUT, END};
static const sd_lang_key_t sd_keys_stop[] = {INSTANCE, TIMEOUT, OPTIONAL, END};

static const sd_lang_key_t sd_keys_restart[] = {
    {.name = "as", .form = SD_K_KEY, .type = SD_V_VARIANT, .off = S(proc.variant), .help = "a variant's command line instead of the pipeline's"},
    {.name = "delay", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(proc.delay_ms), .help = "how long the pipeline stays down"},
    INSTANCE, TIMEOUT, OPTIONAL, END};

static const sd_lang_key_t sd_keys_scale[] = {
    {.name = "to", .form = SD_K_KEY, .type = SD_V_INT, .off = S(proc.scale_to), .min = 0, .max = SD_MAX_INSTANCES, .required = 1,
     .meta = "N", .help = "the instances wanted running: the missing ones are started (each waited for), the ones above N stopped (SIGTERM)"},
    TIMEOUT, END};

static const char *const sd_broker_ops[] = {"kill", "stop", "start", "restart", "pause", "resume", "isolate", "rejoin", NULL};

static const sd_lang_key_t sd_keys_broker[] = {
    {.name = "kill|stop|start|restart|pause|resume|isolate|rejoin", .form = SD_K_POS, .type = SD_V_CHOICE, .off = S(proc.bop), .choices = sd_broker_ops, .required = 1,
     .help = "kill (SIGKILL), stop (SIGTERM: a controlled shutdown), start (again, on its own data), restart (stop, then start), "
             "pause (SIGSTOP), resume (SIGCONT), isolate (cut off from the other brokers while clients still reach it), "
             "rejoin (the links back)"},
    {.name = "id", .form = SD_K_KEY, .type = SD_V_INT, .off = S(proc.broker_id), .min = 0, .max = 1000000, .def = -1, .has_def = 1,
     .group = 3, .meta = "N", .help = "the broker's node id"},
    {.name = "leader-of", .form = SD_K_KEY, .type = SD_V_INT, .off = S(proc.leader_of), .min = 0, .max = 999, .def = -1, .has_def = 1,
     .group = 3, .meta = "P", .help = "the broker leading source partition P when the step strikes"},
    {.name = "follower-of", .form = SD_K_KEY, .type = SD_V_INT, .off = S(proc.follower_of), .min = 0, .max = 999, .def = -1, .has_def = 1,
     .group = 3, .meta = "P", .help = "a replica of source partition P that is not its leader and that the run has not taken down or paused"},
    LANDING(proc.mid_batch),
    {.name = "for", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(proc.delay_ms),
     .help = "kill, stop, pause: start (or resume) it again after this long"},
    TIMEOUT, OPTIONAL, END};

static const sd_lang_key_t sd_keys_fault[] = {
    {.name = "NAME", .form = SD_K_POS, .type = SD_V_NAME, .off = S(proc.variant), .required = 1, .help = "a name declared by a `fault-command` line"},
    LANDING(proc.mid_batch),
    TIMEOUT, OPTIONAL, END};

static const sd_lang_key_t sd_keys_kill[] = {
    LANDING(proc.mid_batch),
    {.name = "after-sink-commit", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(proc.mid_batch), .set = SD_LAND_AFTER_SINK_COMMIT, .group = 2,
     .help = "after the target sink committed a batch (a new Delta version, its rows visible), before the checkpoint recorded it"},
    {.name = "signal", .form = SD_K_KEY, .type = SD_V_SIGNAL, .off = S(proc.signal), .def = SIGKILL, .has_def = 1,
     .help = "KILL, TERM, INT, QUIT or HUP"},
    {.name = "after", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(proc.after_ms), .help = "mid-batch: this long after the batch began"},
    {.name = "visible", .form = SD_K_KEY, .type = SD_V_COUNT, .off = S(proc.visible), .min = 1, .meta = "N",
     .help = "mid-batch: once N of the batch's rows are in the target (at most the batch's size)"},
    INSTANCE, TIMEOUT, OPTIONAL, END};

static const sd_lang_key_t sd_keys_pause[] = {
    LANDING(proc.mid_batch),
    {.name = "for", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(proc.delay_ms), .help = "resume by itself after this long"},
    {.name = "after", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(proc.after_ms), .help = "mid-batch: this long after the batch began"},
    {.name = "visible", .form = SD_K_KEY, .type = SD_V_COUNT, .off = S(proc.visible), .min = 1, .meta = "N",
     .help = "mid-batch: once N of the batch's rows are in the target (at most the batch's size)"},
    INSTANCE, TIMEOUT, OPTIONAL, END};

static const sd_lang_key_t sd_keys_produce[] = {
    {.name = "N", .form = SD_K_POS, .type = SD_V_COUNT, .off = S(send.count), .min = 1, .required = 1, .help = "a count (e.g. produce 100)"},
    {.name = "rate", .form = SD_K_KEY, .type = SD_V_RATE, .off = S(send.rate), .help = "events per second (default: as fast as possible)"},
    {.name = "background", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(send.background), .set = 1,
     .help = "send while the next steps run (needs rate=)"},
    {.name = "transactional", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(send.transactional), .set = 1,
     .help = "through a transactional producer, in transactions of size= events (a real broker only)"},
    {.name = "size", .form = SD_K_KEY, .type = SD_V_COUNT, .off = S(send.txn_size), .min = 1, .def = 10, .has_def = 1,
     .help = "transactional: events per transaction"},
    {.name = "abort", .form = SD_K_KEY, .type = SD_V_COUNT, .off = S(send.txn_abort),
     .help = "transactional: this many of the transactions are aborted (spread over the step)"},
    {.name = "open", .form = SD_K_KEY, .type = SD_V_COUNT, .off = S(send.txn_open),
     .help = "transactional: the last this many transactions are left open until a `resolve` step"},
    TIMEOUT, END};

static const sd_lang_key_t sd_keys_replay[] = {
    {.name = "N", .form = SD_K_POS, .type = SD_V_COUNT, .off = S(send.count), .min = 1, .help = "how many events already sent"},
    {.name = "range", .form = SD_K_KEY, .type = SD_V_RANGE, .off = SD_NOWHERE, .help = "P:FROM-TO, offsets FROM to TO-1 of partition P"},
    {.name = "from", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = S(send.replay_from_last), .choices = sd_from_words, .has_def = 1,
     .help = "the oldest or the newest events"},
    {.name = "source", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = S(send.side), .choices = sd_source_words, .has_def = 1,
     .help = "scans (the source) or deliveries (the second source: deliveries already sent, sent again byte for byte)"},
    {.name = "rate", .form = SD_K_KEY, .type = SD_V_RATE, .off = S(send.rate), .help = "events per second"},
    TIMEOUT, END};

#define INJ(k, word, what) {.name = word, .form = SD_K_KEY, .type = SD_V_COUNT, .off = S(send.inject[k]), .help = what}
#define INJ_D(fld, word, d, what) \
    {.name = word, .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(fld), .min = 1, .def = d, .has_def = 1, .help = what}
static const sd_lang_key_t sd_keys_inject[] = {
    {.name = "malformed", .form = SD_K_KEY, .type = SD_V_COUNT, .off = S(send.malformed), .help = "events broken in turn (see kinds=)"},
    INJ(SD_INJ_LATE, "late", "event time `by` behind the watermark"),
    INJ(SD_INJ_OUT_OF_ORDER, "out-of-order", "behind the newest, `within` the watermark"),
    INJ(SD_INJ_FUTURE, "future", "`ahead` of the newest"),
    INJ(SD_INJ_AT_MAX, "at-max", "event time equal to the newest"),
    INJ(SD_INJ_AT_WATERMARK, "at-watermark", "event time equal to the watermark"),
    INJ(SD_INJ_BURST, "burst", "`offline` worth of backlog at once"),
    INJ(SD_INJ_SKEW, "skew", "every event with one `key`"),
    INJ(SD_INJ_DRIFT, "drift", "an extra field or a field of another type (`as=`)"),
    INJ(SD_INJ_NO_KEY, "no-key", "valid events without a message key"),
    INJ(SD_INJ_RETRY_DUP, "retry-dup", "each new event sent twice in a row"),
    INJ(SD_INJ_DELETE, "delete", "tombstones for the keys of the newest events"),
    INJ(SD_INJ_EDGE, "edges", "events on the next edge the model declares: scans 1 ms before, on and 1 ms after the next window "
                              "boundary; or new scans with a delivery on a join bound or 1 ms beside one"),
    INJ_D(send.late_by_ms, "by", 3600000, "late: how far behind the watermark"),
    {.name = "within", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(send.within_ms), .min = 1, .def = -1, .has_def = 1,
     .help = "out-of-order: how far behind the newest (default half the watermark)"},
    INJ_D(send.ahead_ms, "ahead", 7200000, "future: how far ahead"),
    INJ_D(send.offline_ms, "offline", 1800000, "burst: how long the device was offline"),
    {.name = "key", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "K", .off = S(send.skew_key), .help = "skew: the one key"},
    {.name = "as", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = S(send.drift_type), .choices = sd_drift_words, .has_def = 1,
     .help = "drift: extra-field or type-change"},
    {.name = "kinds", .form = SD_K_KEY, .type = SD_V_KINDS, .off = S(send.malformed_kinds),
     .help = "malformed kinds to cycle through (default: the first five; with events format=avro the wire format's four)"},
    {.name = "source", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = S(send.side), .choices = sd_source_words, .has_def = 1,
     .help = "scans (the source) or deliveries (the second source: late=, out-of-order=, future=, retry-dup= and malformed= "
             "deliveries, each for a scan already sent that has no delivery of its own)"},
    TIMEOUT, END};

static const sd_lang_key_t sd_keys_await_sink[] = {
    {.name = "NAME", .form = SD_K_POS, .type = SD_V_NAME, .off = S(await.sink), .help = "the sink (default: the target)"},
    {.name = "rows", .form = SD_K_KEY, .type = SD_V_ROWS, .off = S(await.rows), .off2 = S(await.op), .required = 1,
     .help = "rows>=N (or =, >, <=, <, !=)"},
    TIMEOUT, END};

static const sd_lang_key_t sd_keys_await_quiescent[] = {
    {.name = "D", .form = SD_K_POS, .type = SD_V_DURATION, .off = S(await.quiet_ms), .min = 1, .def = 3000, .has_def = 1,
     .help = "how long nothing may change"},
    {.name = "for", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(await.quiet_ms), .min = 1, .help = "the same as D"},
    TIMEOUT, END};

static const sd_lang_key_t sd_keys_await_batches[] = {
    {.name = "N", .form = SD_K_POS, .type = SD_V_COUNT, .off = S(await.rows), .required = 1, .help = "a count of committed batches"},
    TIMEOUT, END};

static const sd_lang_key_t sd_keys_sleep[] = {
    {.name = "D", .form = SD_K_POS, .type = SD_V_DURATION, .off = S(timeout_ms), .required = 1, .help = "one duration"}, END};

static const sd_lang_key_t sd_keys_clock[] = {
    {.name = "offset", .form = SD_K_KEY, .type = SD_V_SDURATION, .off = S(clock.ms), .group = 1, .tag_off = S(clock.op), .tag = SD_CLOCK_OFFSET,
     .help = "the clock this far from real time (+2h)"},
    {.name = "jump", .form = SD_K_KEY, .type = SD_V_SDURATION, .off = S(clock.ms), .group = 1, .tag_off = S(clock.op), .tag = SD_CLOCK_JUMP,
     .help = "move the clock by this much (-10m)"},
    {.name = "rate", .form = SD_K_KEY, .type = SD_V_FACTOR, .off = S(clock.rate), .group = 1, .tag_off = S(clock.op), .tag = SD_CLOCK_RATE,
     .help = "the clock runs this many times as fast (2x)"},
    {.name = "reset", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(clock.op), .set = SD_CLOCK_RESET, .group = 1, .help = "back to real time"},
    OPTIONAL, END};

static const sd_lang_key_t sd_keys_damage_spark[] = {
    {.name = "commit-marker|offsets|state", .form = SD_K_POS, .type = SD_V_CHOICE, .off = S(damage.what), .choices = sd_spark_what,
     .required = 1, .help = "commit-marker, offsets or state"},
    {.name = "truncate", .form = SD_K_WORD, .type = SD_V_FLAG, .off = SD_NOWHERE, .help = "offsets: cut the newest offsets file short"},
    {.name = "checkpoint", .form = SD_K_KEY, .type = SD_V_TEXT, .off = S(damage.path), .meta = "PATH", .help = "the checkpoint (default: the scenario's)"},
    OPTIONAL, END};

static const sd_lang_key_t sd_keys_damage[] = {
    {.name = "file", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "PATH", .off = S(damage.path), .required = 1, .help = "the file to damage"},
    {.name = "delete", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(damage.what), .set = SD_DAMAGE_FILE_DELETE, .group = 1, .help = "remove it (a folder: with everything in it; a link: the link itself)"},
    {.name = "truncate", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(damage.what), .set = SD_DAMAGE_FILE_TRUNCATE, .group = 1, .help = "cut it short"},
    OPTIONAL, END};

static const sd_lang_key_t sd_keys_network[] = {
    {.name = "latency", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(net.value), .group = 1, .tag_off = S(net.op), .tag = SD_NET_LATENCY,
     .help = "added to every broker request"},
    {.name = "reset", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(net.op), .set = SD_NET_RESET, .group = 1, .help = "close every connection"},
    {.name = "blackhole", .form = SD_K_WORD, .type = SD_V_FLAG, .off = S(net.op), .set = SD_NET_BLACKHOLE, .group = 1, .help = "drop every packet"},
    {.name = "bandwidth", .form = SD_K_KEY, .type = SD_V_BANDWIDTH, .off = S(net.value), .group = 1, .tag_off = S(net.op), .tag = SD_NET_BANDWIDTH,
     .help = "a rate limit (200KB/s)"},
    {.name = "errors", .form = SD_K_KEY, .type = SD_V_TEXT, .meta = "API:ERR[,..]", .off = S(net.errors), .group = 1, .tag_off = S(net.op), .tag = SD_NET_ERRORS,
     .help = "API:ERROR[,API:ERROR...] returned by the broker"},
    {.name = "idle-timeout", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(net.value), .group = 1, .tag_off = S(net.op), .tag = SD_NET_IDLE,
     .help = "connections idle longer than this are dropped silently, as Azure Event Hubs' load balancer does (--proxy)"},
    {.name = "count", .form = SD_K_KEY, .type = SD_V_COUNT, .off = S(net.value), .help = "errors: how many times each (default 1)"},
    {.name = "on", .form = SD_K_KEY, .type = SD_V_CHOICE, .off = S(net.on), .choices = sd_net_on_words, .def = 0, .has_def = 1,
     .help = "whose connections: the broker's (the embedded cluster, or --proxy's), or the schema registry's (through the "
             "proxy of `registry ... proxy`: latency, reset, blackhole, bandwidth, idle-timeout)"},
    {.name = "for", .form = SD_K_KEY, .type = SD_V_DURATION, .off = S(net.for_ms), .help = "heal by itself after this long"},
    OPTIONAL, END};

static const sd_lang_key_t sd_keys_none[] = {END};

static const sd_lang_key_t sd_keys_note[] = {
    {.name = "TEXT", .form = SD_K_POS, .type = SD_V_TEXT, .off = S(note.text), .required = 1, .help = "the note (quote it)"}, END};

/* ---- entries ---- */

const sd_lang_entry_t sd_lang_entries[] = {
    /* header */
    {.name = "name", .role = SD_LANG_HEADER, .once = 1, .parse = sd_hook_name, .usage = "name NAME",
     .meaning = "the scenario's name (default: the file name without `.drill`); names the run folder"},
    {.name = "set", .role = SD_LANG_HEADER, .parse = sd_hook_set, .usage = "set NAME=VALUE ...",
     .meaning = "default values of user variables; `--set` wins"},
    {.name = "source", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_source, .finish = sd_fin_source,
     .meaning = "the topic the harness produces to. Each run uses `NAME-<tag>` so reruns on a shared broker never read stale data; "
                "`exact=yes` uses NAME as is."},
    {.name = "events", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_events, .finish = sd_fin_events,
     .meaning = "the seeded generator (the default): event *n* has event time `start + n*step` (but for the events put on the edges the model declares, see docs/oracle.md, \"Edges\"; `edges=0`: none), a `parcel_id`, a `location` (one of `locations=`), a `scan` type and a `weight_g` of 50 to 30,000 (integers), each a function of the seed and *n*; `start=now` starts at the run's "
                "start instead (for pipelines that compare event time with the wall clock; not reproducible). `log=PATH id=FIELD` "
                "replays a JSON-lines file instead, one event per line, in order: each event's FIELD is rewritten to its ledger id, "
                "the rest of the line is kept; a relative PATH is looked up in the current folder, then next to the scenario. Its "
                "event times are ISO-8601 with an offset from UTC: one without is read as UTC and one that is no real date "
                "(February 31) leaves its event without a time, each said by a warning naming its first line."},
    {.name = "registry", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_registry, .finish = sd_fin_registry,
     .meaning = "the schema registry a wire format (`events format=avro`, `protobuf`, `json-schema`) registers its schema in "
                "(scenarios/env/registry/registry.sh starts one: Apicurio Registry); `STREAMDRILL_REGISTRY` in the pipeline's "
                "environment and `{registry-url}` are its URL (with `proxy`: through the harness's proxy). A registry that cannot be reached or refuses the schema ends the run inconclusive "
                "(`registry-unreachable`) before anything is sent"},
    {.name = "deliveries", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_deliveries, .finish = sd_fin_deliveries,
     .meaning = "a second source topic for joins, fed by a generator correlated with the scans: scan *n* has a delivery when a hash "
                "of the seed and *n* falls in `share=` percent, `{\"delivery_id\":\"<tag>-d<n>\",\"parcel_id\":<the scan's>,"
                "\"delivered_at\":<the scan's event time + min-delay..max-delay>,\"courier\":\"C<nn>\"}`, keyed by the parcel, "
                "sent with the scan's first copy (replays, late and malformed events have none). Its topic is `{deliveries}` in the "
                "pipeline's command, `STREAMDRILL_DELIVERIES_TOPIC` in its environment. With the parcel-scan generator; or "
                "`log=PATH`: a JSON-lines file of deliveries, line *n* sent behind the *n*-th new scan (its `id=` field rewritten to "
                "`<tag>-d<n>`, keyed by its `key=` field, its event time in `time=`), with any events."},
    {.name = "contract", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_contract,
     .meaning = "what the pipeline promises: the id and event-time fields, the watermark delay, what happens to late and malformed "
                "events, whether it removes duplicate input (`drop`: each id once in the target) or passes every input record on "
                "(`keep`: an id sent *n* times must be there *n* times, the guarantee of Spark's file sink), and which buckets may "
                "be non-empty (defaults shown first)"},
    {.name = "sink", .role = SD_LANG_HEADER, .parse = sd_hook_sink,
     .usage = "sink [NAME] sqlite db=PATH query=SQL | postgres dsn=DSN query=SQL | kafka topic=NAME [id=FIELD] [header=NAME] [isolation=read_committed] [format=avro|protobuf|json-schema registry=URL [registry-auth=KIND:FROM:WHERE] [registry-ca=PATH] [registry-cert=PATH registry-key=PATH]] | "
              "jsonl path=GLOB [id=FIELD] [time=FIELD] | spark-files path=DIR [id=FIELD] [time=FIELD] [format=avro] | flink-files path=DIR [id=FIELD] [time=FIELD] | "
              "delta path=DIR [id=FIELD] [time=FIELD] [python=PATH] | command [id=FIELD] [writer=FIELD] [time=FIELD] [timeout=D] [max-output=N] PROGRAM ARG...",
     .meaning = "where the pipeline's output is read from (see [sink readers](#sink-readers)). The first `sink` is the target the "
                "contract is about (named `target` unless named); further sinks are reconciled too, their checks prefixed with "
                "their name."},
    {.name = "quarantine", .role = SD_LANG_HEADER, .parse = sd_hook_sink, .usage = "quarantine [NAME] KIND ...",
     .meaning = "where malformed (and, with `late=quarantine`, late) events must go; same readers as `sink`"},
    {.name = "pipeline", .role = SD_LANG_HEADER, .once = 1, .parse = sd_hook_pipeline, .usage = "pipeline [instances=N] PROGRAM ARG...",
     .meaning = "the pipeline's command line, exec'd without a shell. With `instances=N` (at most 8) `start` runs N copies side by "
                "side, each its own incarnation with its own logs, `{instance}` and `$STREAMDRILL_INSTANCE` (1 to N), for "
                "consumers that share a consumer group; `kill`, `pause`, `stop`, `restart`, `resume` and `start` act on every "
                "running instance, or on one with `instance=K`"},
    {.name = "variant", .role = SD_LANG_HEADER, .parse = sd_hook_variant, .usage = "variant NAME PROGRAM ARG...",
     .meaning = "another command line of the same pipeline (same checkpoint, same placeholders), started by `start as=NAME` or "
                "`restart as=NAME`: changed code, or the same query with `Trigger.AvailableNow`; with `deploy` lines, another "
                "`deploy start` command line (a job upgraded from its savepoint)"},
    {.name = "deploy", .role = SD_LANG_HEADER, .parse = sd_hook_deploy, .usage = "deploy start|status|stop|kill|logs PROGRAM ARG...",
     .meaning = "a pipeline the harness does not fork, instead of a `pipeline` line (see [deployed pipelines](pipelines.md#pipelines-the-harness-does-not-fork)): "
                "`start` deploys it (the last line it prints is `{deployment}` in the others), `status` exits 0 while it runs, `kill` "
                "ends it at once, `stop` gracefully (default: `kill`), `logs` prints its output as it comes (batch markers are read from "
                "it). start, status and kill are needed; each is exec'd without a shell, placeholders expanded"},
    {.name = "fault-command", .role = SD_LANG_HEADER, .parse = sd_hook_fault_command, .usage = "fault-command NAME PROGRAM ARG...",
     .meaning = "a fault the harness cannot make itself, as a command a `fault NAME` step runs (exec'd without a shell, "
                "placeholders expanded): a pod deleted, a YARN container or a Spark executor killed, a broker of a managed "
                "cluster restarted"},
    {.name = "version", .role = SD_LANG_HEADER, .once = 1, .parse = sd_hook_version, .usage = "version [files=PATH[,PATH...]] [PROGRAM ARG...]",
     .meaning = "the application version each incarnation records in the runbook: what PROGRAM prints (run without a shell when "
                "the incarnation starts, e.g. `git describe --always` or `spark-submit --version`, its first line, 30 s at most) and "
                "the SHA-256 of the named files (the pipeline's code), placeholders expanded"},
    {.name = "env", .role = SD_LANG_HEADER, .parse = sd_hook_env, .usage = "env NAME=VALUE ...",
     .meaning = "extra environment for the pipeline"},
    {.name = "logs", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_logs,
     .meaning = "how much of the pipeline's output the run folder keeps: each log (`logs/pipeline-N.stdout.log`, "
                "`.stderr.log`) keeps its first and its last `max/2` bytes, and a line between them says how many bytes were cut "
                "(a pipeline that prints a gigabyte makes no gigabyte run folder); markers are read from every line all the same"},
    {.name = "clock faketime", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_faketime, .finish = sd_fin_faketime,
     .meaning = "run the pipeline under libfaketime so `clock` steps move its clock; `preload=children` leaves the pipeline itself "
                "on real time and lets it preload the library into what it starts (a PySpark driver does this for its JVM, since "
                "Python's `time.sleep` fails under libfaketime)"},
    {.name = "model", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_model, .finish = sd_fin_model,
     .meaning = "judge a sink by the result it must hold instead of by ids (see [result models](oracle.md#result-models)): `windows`, "
                "event-time windows (`size=`, `slide=` for sliding ones) per `key=` field, with the aggregates of `agg=` over "
                "`value=`; or `latest`, one row per `key=` holding the `fields=` of its newest event (by event time, or "
                "`order=arrival`); or `rows`, the ids as without a model, and each row's `fields=` equal to what was sent (else "
                "`changed`). Computed from the ledger under the contract (watermark, late and duplicate policies). The "
                "sink's rows name their columns: a window's start (`start=`, epoch ms or ISO-8601), each key field, and "
                "`count`, `sum`, `min`, `max`, `avg`, or the `fields=`."},
    {.name = "progress", .role = SD_LANG_HEADER, .once = 1, .keys = sd_keys_progress, .finish = sd_fin_progress,
     .usage = "progress markers|sink|none / progress spark [checkpoint={checkpoint}] [batches=micro|real-time] / progress flink "
              "[checkpoint={checkpoint}] / progress group [group={group}]",
     .meaning = "how readiness, \"mid-batch\" and \"caught up\" are found (see [progress sources](#progress-sources)): batch markers "
                "(default), sink growth, not at all, a Spark checkpoint (batch N is in flight while `offsets/N` exists and "
                "`commits/N` does not; with `batches=real-time`, interval N runs from the commit of N-1 to its own commit), a Flink job's "
                "checkpoints (batch N runs from the completion of checkpoint N-1 to that of N: `DIR/JOB/chk-N` holding `_metadata`, "
                "whose Kafka source offsets are the commit's; its watermark is the oldest source partition's, which the result "
                "models allow for), "
                "or the pipeline's consumer group (a commit when its committed offsets move, a batch in flight while the target holds rows "
                "past the newest commit or an open transaction, ready when a new member holds an assignment)"},
    {.name = "producer", .role = SD_LANG_HEADER, .parse = sd_hook_producer, .usage = "producer PROP=VALUE ...",
     .meaning = "librdkafka properties of the harness's producer (before `-X`)"},

    /* steps */
    {.name = "start", .role = SD_LANG_STEP, .kind = SD_STEP_START, .keys = sd_keys_start, .timeout_ms = 30000,
     .needs = SD_NEEDS_PIPELINE, .finish = sd_fin_instance,
     .meaning = "start the pipeline. With markers, waits for `SD-READY`, a first batch marker, or (a pipeline that prints no "
                "`SD-READY`) a connection to the broker; otherwise the process must still run after 2 s. A pipeline that cannot be exec'd or exits before it is ready makes the run inconclusive (exit 3)."},
    {.name = "produce", .role = SD_LANG_STEP, .kind = SD_STEP_PRODUCE, .keys = sd_keys_produce, .timeout_ms = 120000,
     .needs = SD_NEEDS_SOURCE, .finish = sd_fin_produce,
     .meaning = "send N new events, then wait until all are acknowledged. With `background` (and a rate) they are sent at that pace "
                "while the next steps run (a kill during a steady flow); a later `produce`, `await quiescent` and the "
                "reconciliation wait for it to finish. With `transactional` they go through a transactional producer in "
                "transactions of `size=` events: `abort=M` aborts M of them (their events must never reach the target: "
                "`aborted_leaked`), `open=K` leaves the last K open until a `resolve` step (a hanging transaction). Needs a real "
                "broker: the embedded cluster does not hide aborted transactions from `read_committed` readers."},
    {.name = "replay", .role = SD_LANG_STEP, .kind = SD_STEP_REPLAY, .keys = sd_keys_replay, .timeout_ms = 120000,
     .needs = SD_NEEDS_SOURCE, .finish = sd_fin_replay,
     .meaning = "send again N events already sent, byte for byte (same id, same payload): exact duplicates. `range=P:FROM-TO` reads "
                "the records at offsets FROM to TO-1 of partition P back from Kafka and sends them again as they are: an upstream "
                "replay of an offset range."},
    {.name = "inject", .role = SD_LANG_STEP, .kind = SD_STEP_INJECT, .keys = sd_keys_inject, .timeout_ms = 60000,
     .needs = SD_NEEDS_SOURCE, .finish = sd_fin_inject,
     .usage = "inject KIND=N ... [by=1h] [within=D] [ahead=2h] [offline=30m] [key=K] [as=extra-field|type-change] [kinds=LIST]",
     .meaning = "the data faults of the [catalogue](faults.md#fault-catalogue): `late=N` (event time `by` behind the watermark: newest event "
                "time sent minus the contract's delay), `out-of-order=N` (behind the newest, `within` the watermark, default half "
                "of it), `future=N` (`ahead` of the newest), `at-watermark=N`, `at-max=N`, `burst=N` (`offline` worth of backlog), "
                "`skew=N` (one `key`), `drift=N` (`as=extra-field` or `type-change`), `no-key=N`, `retry-dup=N` (each new event "
                "sent twice in a row), `malformed=N` broken in turn as `truncated`, `not-json`, `missing-id`, `wrong-type`, "
                "`empty` (the default five) or, with `kinds=`, also `invalid-utf8`, `oversized` (900 KB), `null-value` (a "
                "tombstone), `duplicate-keys`; with a wire format (`events format=`) its four by default: `bad-magic`, "
                "`unknown-schema-id`, `truncated-record`, `foreign-schema` (a record of a schema the topic's subject never "
                "accepted), and in JSON Schema a fifth, `schema-violation` (a number field as text). Every message carries its ledger id in the `sd-id` header."},
    {.name = "kill", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_KILL, .keys = sd_keys_kill, .timeout_ms = 60000,
     .needs = SD_NEEDS_STARTED, .finish = sd_fin_landing,
     .meaning = "signal the pipeline's process group. `mid-batch` lands between a batch's begin and commit; `at-boundary` right "
                "after a commit, before the next batch; `now` (default) at once. Inside the batch, the harness aims (see [progress "
                "sources](#progress-sources)) unless `after=D` (that long after the batch began) or `visible=N` (once N of the "
                "batch's rows are in the target, all of them when it is smaller: a drill that needs part of a batch written) "
                "says where. A `TERM` that is not obeyed within the timeout is "
                "escalated to `KILL`; a pipeline that finishes its batch on `TERM` is reported as such. A kill that finds no "
                "batch, lands after the batch's commit, or finds no pipeline makes the run inconclusive (see [no pass without "
                "the drill](pipelines.md#no-pass-without-the-drill)), unless the step says `optional`: then it is skipped, "
                "and one aimed at a batch or a commit gives up a second after nothing is left for the pipeline to read (every "
                "partition committed to its end, nothing being sent) instead of waiting out its timeout."},
    {.name = "stop", .role = SD_LANG_STEP, .kind = SD_STEP_STOP, .keys = sd_keys_stop, .fault = 1, .timeout_ms = 10000,
     .needs = SD_NEEDS_STARTED, .finish = sd_fin_instance, .meaning = "graceful stop: SIGTERM, SIGKILL after the timeout"},
    {.name = "restart", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_RESTART, .keys = sd_keys_restart, .timeout_ms = 10000,
     .needs = SD_NEEDS_PIPELINE, .finish = sd_fin_instance,
     .meaning = "stop the pipeline if it runs, wait `delay`, start it again with the same command and checkpoint. `timeout=` "
                "bounds the stop and the wait for the new incarnation to be ready (without it, that wait is up to 30 s). A restart "
                "that does not come up is a finding (a crash), not an inconclusive run."},
    {.name = "pause", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_PAUSE, .keys = sd_keys_pause, .timeout_ms = 60000,
     .needs = SD_NEEDS_STARTED, .finish = sd_fin_landing,
     .meaning = "SIGSTOP to the process group, landing like `kill`; with `for=` the step resumes it after that long (long enough, "
                "and a consumer-group member loses its membership)"},
    {.name = "resume", .role = SD_LANG_STEP, .kind = SD_STEP_RESUME, .keys = sd_keys_resume, .timeout_ms = 30000,
     .needs = SD_NEEDS_STARTED, .finish = sd_fin_instance, .meaning = "SIGCONT to the process group"},
    {.name = "scale", .role = SD_LANG_STEP, .kind = SD_STEP_SCALE, .keys = sd_keys_scale, .timeout_ms = 60000,
     .needs = SD_NEEDS_STARTED,
     .meaning = "run N instances of the pipeline while data flows: the missing ones are started one after the other, each "
                "waited for until it is ready, with its own `{instance}`; the ones above N get SIGTERM (a graceful leave of the "
                "consumer group). `scale to=0` stops them all"},
    {.name = "await sink", .role = SD_LANG_STEP, .kind = SD_STEP_AWAIT_SINK, .keys = sd_keys_await_sink, .timeout_ms = 60000,
     .needs = SD_NEEDS_SINK, .finish = sd_fin_await_sink,
     .meaning = "wait until the sink has N rows. A timeout is recorded as a warning; the run goes on and the reconciliation judges. A sink that cannot be read (no such file, table or topic) is named on the live line and in the warnings (`sink-unreadable`) after 3 s; once every pipeline instance has exited with it still unreadable, the step ends 2 s later and the run is inconclusive (exit 3), naming the sink and the exit; readable but short of N with every instance gone and no step to start one, it ends 2 s later as a timeout naming how the pipeline ended. When a fault aimed at a batch comes next (`kill`, `stop` or `pause` with `mid-batch`, `at-boundary` or `after-sink-commit`, past any `produce`, `replay` and `inject`), the step then waits, within its timeout, for the commit of the batch in flight when the rows appeared: a sink may show a batch before the pipeline commits it (Delta's commit, then Spark's `commits/N`), and a kill must not find that batch still open. The step says when it committed, or warns (`await-uncommitted`) that it did not."},
    {.name = "await quiescent", .role = SD_LANG_STEP, .kind = SD_STEP_AWAIT_QUIESCENT, .keys = sd_keys_await_quiescent,
     .timeout_ms = 60000, .needs = SD_NEEDS_SINK,
     .meaning = "wait until every sink's row count and the batch markers have been still for D and, when the pipeline reports "
                "consumed offsets, it has consumed every source partition to its end. When those offsets prove it "
                "caught up, D is not waited for: the sinks need only stay still for 150 ms after the commit that "
                "proved it (D stays the rule for pipelines that report no offsets, and for a Spark checkpoint when "
                "another sink, another query's, is judged too, for a Spark query whose progress names state operators, since a "
                "batch without new data may still emit what its watermark evicts, and until a pipeline that gives its own "
                "account, Spark's progress, has given it for the newest committed batch). A batch that began and has not "
                "committed is not still, however still the sinks look (an aggregation writes nothing until a window "
                "closes), nor is anything while a `network blackhole` holds the pipeline's way to the brokers: stillness "
                "counts from its end. If that never happens the run is inconclusive (exit 3)."},
    {.name = "await batches", .role = SD_LANG_STEP, .kind = SD_STEP_AWAIT_BATCHES, .keys = sd_keys_await_batches, .timeout_ms = 60000,
     .finish = sd_fin_await_batches,
     .needs = SD_NEEDS_STARTED | SD_NEEDS_BATCHES,
     .meaning = "wait until the running incarnation has committed N batches (markers or a Spark checkpoint)"},
    {.name = "await exit", .role = SD_LANG_STEP, .kind = SD_STEP_AWAIT_EXIT, .keys = sd_keys_timeout, .timeout_ms = 60000,
     .needs = SD_NEEDS_STARTED,
     .meaning = "wait until the pipeline has ended by itself: every instance exited with code 0, or a deployed one's `deploy "
                "status` said it finished (exit 10). A bounded pipeline (a backfill, `Trigger.AvailableNow`, a Flink job on a "
                "bounded source) must end once its input is read; the step is a check of it (`ended (line N)`), and the run "
                "fails when the pipeline is still running at the timeout, ended with an error (a crash, a non-zero exit), or was "
                "ended by the drill itself (a `stop`, a `kill`, a `scale` down: the instances running when the await began "
                "are judged, and with none running, how each last ended), which is no end by itself."},
    {.name = "sleep", .role = SD_LANG_STEP, .kind = SD_STEP_SLEEP, .keys = sd_keys_sleep,
     .meaning = "wait (the harness keeps recording)"},
    {.name = "clock", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_CLOCK, .keys = sd_keys_clock, .one_of = 1, .needs = SD_NEEDS_FAKETIME,
     .usage = "clock offset=+2h | jump=-10m | rate=2x | reset [optional]", .meaning = "move the pipeline's clock (needs `clock faketime`)"},
    {.name = "damage spark", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_DAMAGE, .keys = sd_keys_damage_spark,
     .finish = sd_fin_damage_spark, .usage = "damage spark commit-marker | offsets [truncate] | state [checkpoint=PATH] [optional]",
     .meaning = "damage the Spark checkpoint while the pipeline is down (a checkpoint inside the run folder only)"},
    {.name = "damage", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_DAMAGE, .keys = sd_keys_damage, .one_of = 1,
     .usage = "damage file=PATH delete|truncate [optional]", .meaning = "delete or cut short a file of the pipeline's state, or delete a folder of it (a Kafka Streams state directory: the stores are rebuilt from their changelogs); only inside the run folder, never through a link"},
    {.name = "network", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_NETWORK, .keys = sd_keys_network, .one_of = 1,
     .finish = sd_fin_network,
     .usage = "network latency=D | reset | blackhole | bandwidth=R | idle-timeout=D | errors=API:ERR[,..] [count=N], each [for=D] [on=registry] [optional]",
     .meaning = "broker and network faults (see the [catalogue](faults.md#fault-catalogue))"},
    {.name = "broker", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_BROKER, .keys = sd_keys_broker, .timeout_ms = 60000,
     .finish = sd_fin_broker,
     .meaning = "break a broker of the cluster `--cluster DIR` describes (`kafka.sh cluster` starts one): `kill`, `stop`, `pause` "
                "it, `start` or `resume` it again, or `restart` it; `isolate` cuts it off from the other brokers (its inter-broker and "
                "controller links) while clients still reach it, and `rejoin` gives the links back; chosen by `id=N`, or as the leader (`leader-of=P`) or a follower "
                "(`follower-of=P`) of a source partition when the step strikes. `mid-batch` and `at-boundary` land as `kill`'s do, in the pipeline's batches. A kill, "
                "stop or pause waits (up to the timeout) until every source partition has a leader again and records which leaders "
                "moved and how long a partition had none (`leaderless_s`); `for=D` starts it again after D. The run ends with "
                "every broker it took down started again and every broker it cut off rejoined. On the embedded cluster (`--broker-count N`) kill and stop set a mock "
                "broker down and the harness moves its leaderships at once; pause needs a real cluster."},
    {.name = "fault", .role = SD_LANG_STEP, .fault = 1, .kind = SD_STEP_FAULT, .keys = sd_keys_fault, .timeout_ms = 60000,
     .finish = sd_fin_fault,
     .meaning = "run the `fault-command` NAME: `mid-batch` and `at-boundary` land as `kill`'s do, in the pipeline's batches (the "
                "pipeline is not signalled, so a batch that commits after the command started counts as landed inside it). "
                "The command's output is in logs/fault-LINE.log; one that fails, is not found or outlasts the timeout did not do "
                "what the step says: inconclusive unless `optional`. The pipeline's own process is `kill`'s: a fault command that "
                "ends it is counted as a crash."},
    {.name = "resolve", .role = SD_LANG_STEP, .kind = SD_STEP_RESOLVE, .keys = sd_keys_timeout, .timeout_ms = 60000,
     .meaning = "commit the transactions a `produce ... transactional open=K` left open (until then a `read_committed` reader "
                "cannot read past them); the harness commits any still open before it reconciles, and says so"},
    {.name = "heal", .role = SD_LANG_STEP, .kind = SD_STEP_HEAL, .keys = sd_keys_none,
     .meaning = "end every fault that is still on (a pause, the clock, network faults, brokers the run took down or froze); the "
                "harness also does it before it reconciles"},
    {.name = "note", .role = SD_LANG_STEP, .kind = SD_STEP_NOTE, .keys = sd_keys_note,
     .meaning = "a line of the runbook, recorded in run.db and shown in the report's steps: `note \"the on-call pages the owner\"`"},
    {.name = "operator", .role = SD_LANG_STEP, .kind = SD_STEP_OPERATOR, .parse = sd_parse_operator, .timeout_ms = 600000,
     .usage = "operator \"TEXT\" [timeout=10m] [command=PROGRAM ARG...]",
     .meaning = "a step a person does on a game day: on a terminal the harness shows TEXT and waits until the operator presses "
                "Enter (or runs `streamdrill ack DIR` from another shell), recording how long it took (the human part of each "
                "recovery, `operator_s`). Without a terminal, or with `--operator auto`, it runs the command instead (exec'd without a "
                "shell, placeholders expanded, its output in logs/); with neither a person nor a command, or no confirmation within "
                "the timeout, the drill did not do what it says: inconclusive."},
    {.name = "expect", .role = SD_LANG_STEP, .kind = SD_STEP_EXPECT, .parse = sd_parse_expect, .needs = SD_NEEDS_SINK,
     .usage = "expect COUNT OP VALUE ... | expect [step=LINE] FIGURE OP VALUE ...",
     .meaning = "checks made at reconciliation: `unique=120 lost=0 duplicated>0 quarantined=3`. VALUE is a number or another count "
                "(`unique=expected`). An `expect` on a count replaces the profile's implicit check of it. A [recovery "
                "figure](#recovery-figures) holds for every fault (`expect recovery_s<=60 rewritten_rows<=500`), or with `step=LINE` "
                "for the fault step at that line (`expect step=21 recovery_s<=2.5`; seconds take a fraction); a figure the run could "
                "not measure makes it inconclusive."},
    {.name = NULL}};

/* ======================================================================
 * Help and reference
 * ====================================================================== */
