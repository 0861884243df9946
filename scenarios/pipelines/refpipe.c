/* refpipe.c - the reference pipeline: Kafka in, SQLite out, three delivery
 * modes. It is the embedded default pipeline of streamdrill and the
 * harness's own proving ground: a correct exactly-once mode that must pass
 * every drill, and weaker modes and flags whose losses, duplicates, leaks
 * and crashes the harness must catch.
 *
 *   exactly-once   rows and consumed offsets committed in one SQLite
 *                  transaction; duplicate ids ignored (event_id is the key)
 *   at-least-once  rows written (each visible at once), then offsets
 *                  committed to Kafka: a crash in between re-delivers
 *   at-most-once   offsets committed to Kafka, then rows written: a crash
 *                  in between loses
 *
 * Like a Spark micro-batch query it reads in batches (up to --max-batch
 * records, closed --trigger-ms after the first one), keeps an event-time
 * watermark (newest event time of earlier batches minus --watermark) and
 * drops, or quarantines, records older than it. Records that cannot be
 * trusted go to the quarantine table with the ledger id from their sd-id
 * header: empty or null values, values over --max-bytes, invalid JSON
 * (invalid UTF-8 and duplicate keys included), no id, no ISO-8601 event
 * time, and event times more than --max-future ahead of the wall clock
 * (they would drag the watermark forward and make good records look late).
 *
 * --weak LIST turns on deliberate bugs, each a mistake real pipelines make,
 * so that a drill can show the harness catching it:
 *   drop-out-of-order   drop records older than the newest seen so far
 *   no-watermark        accept records however late
 *   late-inclusive      a record exactly at the watermark counts as late
 *                       (as Spark's event-time filters take it: a choice
 *                       engines differ on, not judged by a result model)
 *   late-off-by-one     a record 1 ms inside the watermark counts as late
 *                       too (the cut-off moved by a millisecond)
 *   strictly-after-max  keep only records newer than earlier batches' max
 *                       (the "WHERE t > last_max" incremental load)
 *   no-future-guard     let future-dated records move the watermark
 *   late-by-wall        judge lateness against the wall clock, not event time
 *   drop-overflow       keep the first 50 records of a batch, drop the rest
 *   per-key-limit       keep at most 10 records per key and batch
 *   strict-schema       quarantine records with fields it does not know
 *   crash-on-bad-type   abort() when a field has an unexpected type
 *   lenient-json        accept duplicate keys, invalid UTF-8 and any size
 *   crash-on-null       abort() on a null (tombstone) value
 *   need-key            abort() on a record without a key
 *   commit-on-term      on SIGTERM, commit the batch's offsets and exit
 *                       without writing the rest of it
 *   fatal-errors        exit on any consumer error (a broker hiccup: a
 *                       lost connection to a broker included)
 *   exit-when-idle      take a second without records for the end of the
 *                       stream and exit (a slow broker ends the job)
 *   hostile-bytes       also write three rows whose ids are no text: one
 *                       with bytes that are not UTF-8, one that is a real
 *                       id followed by a NUL byte and more, one of 1 MB
 *   early-emit          --window: also write every open window each batch
 *                       (a partial value, written again when it closes)
 *   forget-state        --window: on start, forget the rows of the windows
 *                       not yet written (state not restored on restart)
 *   drop-late           --output complete: drop late records by the
 *                       watermark, as append mode does, though complete
 *                       mode keeps every window
 *   count-late          --window: accept late records and write their
 *                       (already written) windows again with them counted
 *   inclusive-end       --window: a record exactly at a window's end is
 *                       counted in that window instead of the next
 *   round-seconds       --window: event times rounded to the nearest
 *                       second before windowing, so a record in the last
 *                       half second of a window counts in the next (only
 *                       a record off the whole second shows it: the
 *                       edges a drill probes by default)
 *   no-dedup            --window, exactly-once: bronze has no primary key,
 *                       so a replayed record counts again in its window
 *   read-uncommitted    read with isolation.level=read_uncommitted: records of
 *                       aborted (and still open) transactions are processed
 *   rewrite-on-term     on SIGTERM, after its last batch, write every row of
 *                       the table once more into TABLE_again (a job whose
 *                       shutdown hook re-runs its output; a drill reads
 *                       both tables with UNION ALL)
 *   flush-on-term       --window: on SIGTERM, write every open window with
 *                       what it holds so far before exiting (partial values,
 *                       written again when they close after the restart)
 *   ignore-deletes      --latest: a tombstone is quarantined like any
 *                       empty value, and the key's row stays
 *   keep-state          --window: never evict the rows of written windows
 *                       (the output is right; the state grows with every
 *                       record, as a watermark that never reaches the
 *                       state store's eviction does)
 *   latest-by-arrival   --latest: the last record read wins, even when its
 *                       event time is older (a blind upsert)
 *   first-on-tie        --latest: a record whose event time equals the
 *                       row's does not replace it (`>` where `>=` is
 *                       meant): the first of two equal times wins, where
 *                       the one read last is the newest
 *   tz-shift            write event_time an hour later than it was sent
 *                       (a time zone mistake): the id is right, the value
 *                       is not
 *   rewind              every start reads the topic from its beginning,
 *                       ignoring the committed offsets: the rows stay right
 *                       (exactly-once deduplicates by id), the replay after a
 *                       restart is everything read before it
 *   drop-undecodable    --format avro: skip a value it cannot decode (no
 *                       magic byte, an unknown schema id, a record cut
 *                       short) instead of quarantining it
 *   no-schema-cache     --format avro: ask the registry for every record's
 *                       schema, and quarantine the record when the registry
 *                       cannot be reached (an outage becomes lost data)
 *   newest-schema       --format avro: decode every record with the
 *                       subject's newest schema, not the one its id names
 *                       (read again when a new id appears): after the
 *                       schema evolves, the records of the old version no
 *                       longer decode
 *   no-validate         --format json-schema: parse each record and never
 *                       check it against its schema (a consumer without a
 *                       validating deserializer): a record the schema
 *                       refuses is written
 *   hostile-ids         also write one row whose id is markup (HTML,
 *                       Markdown, XML, CSV and shell metacharacters), as a
 *                       buggy upstream would: the reports must show it
 *                       escaped
 *
 * --window DURATION adds a tumbling event-time window aggregation in append
 * mode, as a Spark query with a watermark writes it: table agg
 * (window_start in epoch ms, location, count, sum of weight_g, sd_writer),
 * a window written once, in the batch whose watermark (newest event time
 * minus --watermark) passes its end. Its state is the rows of bronze of
 * the windows not yet written, so in exactly-once mode rows, state, output
 * and offsets commit in one transaction; a replayed id is counted once.
 * The rows of a written window are evicted in the same transaction (a
 * record for it can only be late now), and each commit marker says how
 * many rows of state are left (state=N).
 *
 * --output complete writes the windows as a Spark query in complete mode
 * does: every window, open or closed, rewritten in full each batch (the
 * table emptied and filled again in the batch's transaction), no state
 * evicted and no record late (complete mode keeps every window, so a late
 * record is counted in it).
 *
 * --files DIR also writes each batch's rows as a Spark file sink does: a
 * part file of JSON lines (event_id, event_time, sd_written_ms) in DIR,
 * and DIR/_spark_metadata/N, the log entry that makes batch N's files
 * count, written (to a temporary name, then renamed) once the batch's
 * SQLite transaction has committed. The transaction records the entry
 * first (table sd_files), so one that a kill kept from being written is
 * written on the next start: in exactly-once mode every row is in the
 * log's files exactly once; a part file of a batch killed before its
 * commit is on disk and in no log entry, as a killed Spark batch leaves.
 *
 * --latest keeps the newest scan per parcel in table latest (parcel_id,
 * location, scan, sd_event_ms, sd_writer): an upsert that replaces a row
 * only with a record whose event time is not older, in the batch's
 * transaction; a tombstone (a null value with a key) deletes the key's row.
 *
 * It prints streamdrill's batch markers on stdout:
 *
 *   SD-READY
 *   SD-BATCH begin id=N rows=K
 *   SD-BATCH commit id=N rows=K offsets=P:O,... [state=S]
 *
 * offsets= is what is durably committed (the table in exactly-once mode,
 * the group's accepted commit otherwise): a commit the group refused leaves
 * the previous offsets there.
 *
 * With --bare-markers it prints neither SD-READY nor rows=, as many
 * pipelines do: the harness must find readiness and land mid-batch kills
 * without them (in exactly-once mode a batch's rows become visible only at
 * its commit, so the sink does not help either). --no-offsets leaves the
 * consumed offsets out of the commit markers too. --no-markers prints
 * nothing at all on stdout, like a Kafka Connect sink: the harness must
 * follow it through its consumer group (`progress group`).
 *
 * By default it reads every partition by assignment (no group membership,
 * so a restarted incarnation does not wait for the dead one's session to
 * expire); --subscribe joins the consumer group instead (with
 * --session-timeout-ms), so a long pause loses the membership. SIGTERM
 * finishes the current batch and exits 0. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MODE_EO, MODE_ALO, MODE_AMO };

static struct {
    const char *brokers, *topic, *db, *group, *id_field, *time_field, *table, *qtable;
    int mode;
    int64_t watermark_ms, max_future_ms;
    int late_quarantine;
    int max_batch;
    int trigger_ms;
    int row_delay_ms;
    int commit_delay_ms; /* between the sink's commit and the batch's commit (Kafka offsets, marker) */
    int incarnation;
    int subscribe;
    int bare_markers;
    int no_offsets;
    int no_markers;
    int session_timeout_ms;
    size_t max_bytes;
    int64_t window_ms;   /* --window: the aggregation's window, 0 = none */
    int interval_ms;     /* --interval-ms: a batch at most this often, nothing fetched between (0 = at once) */
    const char *client[16]; /* --client KEY=VALUE: librdkafka settings over refpipe's own */
    int nclient;
    const char *kafka_config; /* --kafka-config FILE (default $STREAMDRILL_KAFKA_CONFIG): TLS and SASL settings */
    int latest;          /* --latest: the newest scan per parcel */
    int complete;        /* --output complete: every window rewritten each batch */
    const char *files;   /* --files DIR: the rows also in a Spark file sink's layout */
    int avro;            /* --format avro (1), protobuf (2) or json-schema (3): values in the registry wire format (refwire.h) */
    const char *registry; /* --registry URL: the schema registry's Confluent-compatible API */
} o = {.id_field = "event_id", .time_field = "event_time", .table = "bronze", .qtable = "rejected", .mode = MODE_EO,
       .watermark_ms = 600000, .max_future_ms = 3600000, .max_batch = 500, .trigger_ms = 200, .row_delay_ms = 2,
       .session_timeout_ms = 6000, .max_bytes = 65536};

static struct {
    int drop_ooo, no_watermark, late_inclusive, late_off_by_one, strictly_after_max, no_future_guard, late_by_wall, drop_overflow,
        per_key_limit, strict_schema, crash_on_bad_type, lenient_json, crash_on_null, need_key, commit_on_term,
        fatal_errors, exit_when_idle, hostile_ids, hostile_bytes, early_emit, forget_state, count_late, drop_late, inclusive_end,
        latest_by_arrival, first_on_tie, tz_shift, round_seconds, keep_state, no_dedup, flush_on_term, ignore_deletes, read_uncommitted, rewrite_on_term,
        rewind, drop_undecodable, newest_schema;
} weak;

static volatile sig_atomic_t stop_flag = 0;
static char first_id[128]; /* the first id written (hostile-bytes repeats it before a NUL) */
static void on_signal(int s) { (void)s; stop_flag = 1; }

static const char *const ref_name = "refpipe";
#define ref_stop stop_flag
#include "refcommon.h"
#include "refwire.h"


static void parse_weak(const char *list) {
    static const struct { const char *name; int *flag; } w[] = {
        {"drop-out-of-order", &weak.drop_ooo}, {"no-watermark", &weak.no_watermark}, {"late-inclusive", &weak.late_inclusive},
        {"late-off-by-one", &weak.late_off_by_one},
        {"strictly-after-max", &weak.strictly_after_max}, {"no-future-guard", &weak.no_future_guard},
        {"late-by-wall", &weak.late_by_wall}, {"drop-overflow", &weak.drop_overflow}, {"per-key-limit", &weak.per_key_limit},
        {"strict-schema", &weak.strict_schema}, {"crash-on-bad-type", &weak.crash_on_bad_type},
        {"lenient-json", &weak.lenient_json}, {"crash-on-null", &weak.crash_on_null}, {"need-key", &weak.need_key},
        {"commit-on-term", &weak.commit_on_term}, {"fatal-errors", &weak.fatal_errors},
        {"exit-when-idle", &weak.exit_when_idle}, {"hostile-ids", &weak.hostile_ids},
        {"hostile-bytes", &weak.hostile_bytes}, {"early-emit", &weak.early_emit}, {"forget-state", &weak.forget_state},
        {"count-late", &weak.count_late}, {"drop-late", &weak.drop_late}, {"inclusive-end", &weak.inclusive_end}, {"round-seconds", &weak.round_seconds}, {"keep-state", &weak.keep_state}, {"no-dedup", &weak.no_dedup}, {"flush-on-term", &weak.flush_on_term}, {"rewrite-on-term", &weak.rewrite_on_term},
        {"ignore-deletes", &weak.ignore_deletes}, {"read-uncommitted", &weak.read_uncommitted},
        {"latest-by-arrival", &weak.latest_by_arrival}, {"first-on-tie", &weak.first_on_tie}, {"tz-shift", &weak.tz_shift}, {"rewind", &weak.rewind},
        {"drop-undecodable", &weak.drop_undecodable}, {"no-schema-cache", &refavro_no_cache},
        {"newest-schema", &weak.newest_schema}, {"no-validate", &refjson_no_validate}, {NULL, NULL}};
    char *copy = strdup(list), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "none")) continue;
        int found = 0;
        for (int i = 0; w[i].name; i++)
            if (!strcmp(t, w[i].name)) { *w[i].flag = 1; found = 1; }
        if (!found) die("--weak %s: unknown (see the comment at the top of refpipe.c)", t);
    }
    free(copy);
}



static void step_done(sqlite3_stmt *st, const char *what) {
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) die("sqlite: %s: %s", what, sqlite3_errmsg(db));
    sqlite3_reset(st);
}

/* --window: write the windows whose start lies in [lo, hi) (each start a
 * multiple of the window), aggregated from bronze, labelled with who wrote
 * them. */
static void emit_windows(int64_t lo, int64_t hi, int64_t batch) {
    char q[1024], wexpr[128];
    if (weak.inclusive_end) snprintf(wexpr, sizeof(wexpr), "((sd_event_ms - 1) / %lld) * %lld", (long long)o.window_ms, (long long)o.window_ms);
    else snprintf(wexpr, sizeof(wexpr), "(sd_event_ms / %lld) * %lld", (long long)o.window_ms, (long long)o.window_ms);
    snprintf(q, sizeof(q),
             "INSERT INTO agg(window_start, location, count, sum, sd_writer)"
             " SELECT %s AS ws, json_extract(payload, '$.location'), count(*), sum(json_extract(payload, '$.weight_g')),"
             " 'incarnation %d batch %lld' FROM %s WHERE sd_event_ms IS NOT NULL AND %s >= ?1 AND %s < ?2 GROUP BY 1, 2",
             wexpr, o.incarnation, (long long)batch, o.table, wexpr, wexpr);
    sqlite3_stmt *st = prep(q);
    sqlite3_bind_int64(st, 1, lo);
    sqlite3_bind_int64(st, 2, hi);
    step_done(st, "write windows");
    sqlite3_finalize(st);
}

/* --files: the log entry of batch, listing its part file (none when path
 * is NULL), written whole under a temporary name and renamed. */
static void files_log(int64_t batch, const char *path, int64_t size) {
    char meta[4096], tmp[4200], fin[4200];
    snprintf(meta, sizeof(meta), "%s/_spark_metadata", o.files);
    snprintf(fin, sizeof(fin), "%s/%lld", meta, (long long)batch);
    if (!access(fin, F_OK)) return;
    snprintf(tmp, sizeof(tmp), "%s/.%lld.tmp", meta, (long long)batch);
    FILE *f = fopen(tmp, "w");
    if (!f) die("--files: cannot write %s: %s", tmp, strerror(errno));
    fputs("v1\n", f);
    if (path) {
        /* JSON-escaped: a run folder's name may hold quotes or backslashes */
        char uri[4300];
        snprintf(uri, sizeof(uri), "file://%s", path);
        json_t *e = json_pack("{s:s, s:I, s:b, s:I, s:i, s:I, s:s}", "path", uri, "size", (json_int_t)size, "isDir", 0,
                              "modificationTime", (json_int_t)now_ms(), "blockReplication", 1, "blockSize", (json_int_t)33554432,
                              "action", "add");
        char *line = e ? json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        if (!line) die("--files: cannot write the log entry of %s (not UTF-8?)", path);
        fprintf(f, "%s\n", line);
        free(line);
        json_decref(e);
    }
    if (fflush(f) || fsync(fileno(f)) || fclose(f)) die("--files: cannot write %s: %s", tmp, strerror(errno));
    if (rename(tmp, fin)) die("--files: cannot rename %s: %s", tmp, strerror(errno));
}

/* --files, inside the batch's transaction: the rows it inserted, as JSON
 * lines in a part file of their own (its absolute path in path, "" when
 * the batch inserted none, and its size in *size), and its log entry
 * recorded in sd_files (written by files_log once committed). */
static void files_batch(int64_t batch, char *path, size_t pathlen, int64_t *size_out) {
    char q[512];
    snprintf(path, pathlen, "%s/part-%05lld-%d-%lld.json", o.files, (long long)batch, o.incarnation, (long long)mono_ms());
    snprintf(q, sizeof(q), "SELECT json_object('event_id', event_id, 'event_time', event_time, 'sd_written_ms', sd_written_ms)"
                           " FROM %s WHERE sd_batch = ?1 AND sd_incarnation = ?2", o.table);
    sqlite3_stmt *st = prep(q);
    sqlite3_bind_int64(st, 1, batch);
    sqlite3_bind_int(st, 2, o.incarnation);
    FILE *f = NULL;
    int64_t size = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (!f && !(f = fopen(path, "w"))) die("--files: cannot write %s: %s", path, strerror(errno));
        const char *line = (const char *)sqlite3_column_text(st, 0);
        size += fprintf(f, "%s\n", line ? line : "{}");
    }
    sqlite3_finalize(st);
    if (f && (fflush(f) || fsync(fileno(f)) || fclose(f))) die("--files: cannot write %s: %s", path, strerror(errno));
    if (!f) path[0] = 0;
    *size_out = size;
    sqlite3_stmt *ins = prep("INSERT OR REPLACE INTO sd_files(batch, path, size) VALUES(?,?,?)");
    sqlite3_bind_int64(ins, 1, batch);
    if (f) sqlite3_bind_text(ins, 2, path, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(ins, 2);
    sqlite3_bind_int64(ins, 3, size);
    step_done(ins, "record the batch's files");
    sqlite3_finalize(ins);
}

/* --files, on start: the log entries every committed batch is owed (a kill
 * between a commit and its entry leaves one to write). */
static void files_recover(void) {
    sqlite3_stmt *st = prep("SELECT batch, path, size FROM sd_files ORDER BY batch");
    while (sqlite3_step(st) == SQLITE_ROW)
        files_log(sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1), sqlite3_column_int64(st, 2));
    sqlite3_finalize(st);
}

static void usage(void) {
    fputs("usage: refpipe --brokers LIST --topic NAME --db PATH [--mode exactly-once|at-least-once|at-most-once]\n"
          "               [--group ID] [--watermark 10m] [--late drop|quarantine] [--max-future 1h] [--max-bytes 65536]\n"
          "               [--max-batch 500] [--trigger-ms 200] [--row-delay-ms 2] [--commit-delay-ms 0] [--id-field event_id] [--bare-markers] [--no-offsets] [--no-markers]\n"
          "               [--time-field event_time] [--table bronze] [--subscribe [--session-timeout-ms 6000]]\n"
          "               [--window 1m [--output append|complete]] [--latest] [--files DIR] [--interval-ms 0] [--client KEY=VALUE]... [--kafka-config FILE] [--weak LIST]\n"
          "               [--format json|avro|protobuf|json-schema --registry URL " REFWIRE_USAGE "]\n"
          "Brokers, topic and group default to $STREAMDRILL_BROKERS, $STREAMDRILL_TOPIC, $STREAMDRILL_GROUP;\n"
          "the client properties file (TLS, SASL; KEY=VALUE lines) to $STREAMDRILL_KAFKA_CONFIG.\n",
          stderr);
}

static int nparts;
static int64_t *next;  /* next offset to read per partition after the last committed batch */
/* what is durably committed per partition (the SQLite table in exactly-once
 * mode, the group's accepted commits otherwise): what a commit marker's
 * offsets= says, so a commit Kafka refused is never reported as done */
static int64_t *durable;
static rd_kafka_t *rk;
static int assigned = 0;
/* the partitions this process reads: all of them by assignment, the
 * group's share with --subscribe (several instances split the topic) */
static char *owned;
static char *touched;  /* the partitions the batch moves (set before it is written) */

/* The offsets to start from: SQLite for exactly-once, the group's commits otherwise. */
static void start_offsets(rd_kafka_topic_partition_list_t *l) {
    for (int i = 0; i < l->cnt; i++) l->elems[i].offset = RD_KAFKA_OFFSET_INVALID;
    if (weak.rewind) {
        /* the weakness: every start reads the topic from its beginning (the
         * rows stay right, deduplicated by id; the replay is the cost) */
    } else if (o.mode == MODE_EO) {
        sqlite3_stmt *st = prep("SELECT partition, next_offset FROM sd_offsets WHERE topic=?");
        sqlite3_bind_text(st, 1, o.topic, -1, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
            int p = sqlite3_column_int(st, 0);
            for (int i = 0; i < l->cnt; i++)
                if (l->elems[i].partition == p) l->elems[i].offset = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
    } else {
        rd_kafka_topic_partition_list_t *com = rd_kafka_topic_partition_list_copy(l);
        rd_kafka_resp_err_t e = rd_kafka_committed(rk, com, 10000);
        if (e) die("committed offsets of group %s: %s", o.group, rd_kafka_err2str(e));
        for (int i = 0; i < l->cnt; i++)
            if (com->elems[i].offset >= 0) l->elems[i].offset = com->elems[i].offset;
        rd_kafka_topic_partition_list_destroy(com);
    }
    for (int i = 0; i < l->cnt; i++) {
        int p = l->elems[i].partition;
        if (l->elems[i].offset < 0) {
            int64_t lo = 0, hi = 0;
            ref_watermarks(rk, o.topic, p, &lo, &hi, 10000);
            l->elems[i].offset = lo;
        }
        if (p >= 0 && p < nparts) {
            next[p] = durable[p] = l->elems[i].offset;
            owned[p] = 1;
        }
    }
}

/* fatal-errors: a lost broker connection is taken for the end of the world */
static void fatal_error_cb(rd_kafka_t *k, int err, const char *reason, void *opaque) {
    (void)k; (void)opaque;
    fprintf(stderr, "refpipe: client error: %s: %s\n", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
    if (err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
        fprintf(stderr, "refpipe: giving up on a consumer error\n");
        exit(3);
    }
}

static void rebalance_cb(rd_kafka_t *k, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts, void *opaque) {
    (void)opaque;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        start_offsets(parts);
        rd_kafka_assign(k, parts);
        assigned = 1;
        fprintf(stderr, "refpipe: group assigned %d partitions\n", parts->cnt);
    } else {
        rd_kafka_assign(k, NULL);
        assigned = 0;
        memset(owned, 0, (size_t)nparts);
        fprintf(stderr, "refpipe: group revoked the partitions (%s)\n", rd_kafka_err2str(err));
    }
}

/* 0 when the group accepted the commit. Only the partitions the batch
 * moved: another member's share is its own to commit. */
static int commit_kafka(const int64_t *offs) {
    rd_kafka_topic_partition_list_t *cl = rd_kafka_topic_partition_list_new(nparts);
    for (int p = 0; p < nparts; p++)
        if (touched[p]) rd_kafka_topic_partition_list_add(cl, o.topic, p)->offset = offs[p];
    rd_kafka_resp_err_t e = cl->cnt ? rd_kafka_commit(rk, cl, 0) : RD_KAFKA_RESP_ERR_NO_ERROR;
    rd_kafka_topic_partition_list_destroy(cl);
    /* at-least-once and at-most-once carry on when a commit fails, as most
     * consumers do; the rows already written stay written */
    if (e) fprintf(stderr, "refpipe: commit offsets failed: %s\n", rd_kafka_err2str(e));
    else memcpy(durable, offs, sizeof(int64_t) * (size_t)nparts);
    return e ? -1 : 0;
}

/* Replace bytes that are not UTF-8 (lenient-json). */
static void sanitize_utf8(char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0xf5 || (unsigned char)s[i] == 0xc0 || (unsigned char)s[i] == 0xc1) s[i] = '?';
}

/* A row no record asked for (the weak modes hostile-ids, hostile-bytes):
 * id of idlen bytes (-1: up to its NUL). */
static void write_planted_row(sqlite3_stmt *ins, const char *id, int idlen, const char *payload, int64_t batch) {
    sqlite3_bind_text(ins, 1, id, idlen, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, 2, "2026-01-01T00:00:00Z", -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 3, payload, -1, SQLITE_STATIC);
    sqlite3_bind_int(ins, 4, o.incarnation);
    sqlite3_bind_int64(ins, 5, batch);
    sqlite3_bind_int64(ins, 6, now_ms());
    step_done(ins, "write a row");
}

int main(int argc, char **argv) {
    o.brokers = getenv("STREAMDRILL_BROKERS");
    o.topic = getenv("STREAMDRILL_TOPIC");
    o.group = getenv("STREAMDRILL_GROUP");
    o.incarnation = getenv("STREAMDRILL_INCARNATION") ? atoi(getenv("STREAMDRILL_INCARNATION")) : 0;
    static const struct option lo[] = {
        {"brokers", 1, 0, 'b'}, {"topic", 1, 0, 't'}, {"db", 1, 0, 'd'}, {"mode", 1, 0, 'm'}, {"group", 1, 0, 'g'},
        {"watermark", 1, 0, 'w'}, {"late", 1, 0, 'l'}, {"max-batch", 1, 0, 'n'}, {"trigger-ms", 1, 0, 'T'},
        {"row-delay-ms", 1, 0, 'r'}, {"commit-delay-ms", 1, 0, 'C'}, {"id-field", 1, 0, 'i'}, {"time-field", 1, 0, 'e'}, {"table", 1, 0, 'B'},
        {"max-future", 1, 0, 'F'}, {"max-bytes", 1, 0, 'S'}, {"subscribe", 0, 0, 'G'}, {"session-timeout-ms", 1, 0, 'O'},
        {"bare-markers", 0, 0, 'M'}, {"no-offsets", 0, 0, 'N'}, {"no-markers", 0, 0, 'Q'},
        {"window", 1, 0, 'A'}, {"latest", 0, 0, 'L'}, {"output", 1, 0, 'U'}, {"files", 1, 0, 'X'}, {"weak", 1, 0, 'W'}, {"help", 0, 0, 'h'},
        {"version", 0, 0, 'V'}, {"interval-ms", 1, 0, 'I'}, {"client", 1, 0, 'K'}, {"kafka-config", 1, 0, 'k'}, {"format", 1, 0, 'f'}, {"registry", 1, 0, 'R'},
        REFWIRE_LONGOPTS, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'b': o.brokers = optarg; break;
        case 't': o.topic = optarg; break;
        case 'd': o.db = optarg; break;
        case 'g': o.group = optarg; break;
        case 'm':
            if (!strcmp(optarg, "exactly-once")) o.mode = MODE_EO;
            else if (!strcmp(optarg, "at-least-once")) o.mode = MODE_ALO;
            else if (!strcmp(optarg, "at-most-once")) o.mode = MODE_AMO;
            else die("--mode %s: expected exactly-once, at-least-once or at-most-once", optarg);
            break;
        case 'w': o.watermark_ms = parse_duration(optarg); break;
        case 'l':
            if (!strcmp(optarg, "quarantine")) o.late_quarantine = 1;
            else if (strcmp(optarg, "drop")) die("--late %s: expected drop or quarantine", optarg);
            break;
        case 'n': o.max_batch = atoi(optarg); break;
        case 'T': o.trigger_ms = atoi(optarg); break;
        case 'r': o.row_delay_ms = atoi(optarg); break;
        case 'C': o.commit_delay_ms = atoi(optarg); break;
        case 'i': o.id_field = optarg; break;
        case 'e': o.time_field = optarg; break;
        case 'B': o.table = optarg; break;
        case 'F': o.max_future_ms = parse_duration(optarg); break;
        case 'S': o.max_bytes = (size_t)atol(optarg); break;
        case 'G': o.subscribe = 1; break;
        case 'M': o.bare_markers = 1; break;
        case 'N': o.no_offsets = 1; break;
        case 'Q': o.no_markers = 1; break;
        case 'O': o.session_timeout_ms = atoi(optarg); break;
        case 'L': o.latest = 1; break;
        case 'X': o.files = optarg; break;
        case 'U':
            if (!strcmp(optarg, "complete")) o.complete = 1;
            else if (strcmp(optarg, "append")) die("--output %s: expected append or complete", optarg);
            break;
        case 'A': o.window_ms = parse_duration(optarg); if (o.window_ms <= 0) die("--window must be above zero"); break;
        case 'W': parse_weak(optarg); break;
        case 'I': o.interval_ms = atoi(optarg); break;
        case 'f':
            if (!strcmp(optarg, "avro")) o.avro = 1;
            else if (!strcmp(optarg, "protobuf")) o.avro = 2;
            else if (!strcmp(optarg, "json-schema")) o.avro = 3;
            else if (strcmp(optarg, "json")) die("--format %s: expected json, avro, protobuf or json-schema", optarg);
            break;
        case 'R': o.registry = optarg; break;
        case 'K':
            if (!strchr(optarg, '=') || o.nclient == 16) die("--client %s: expected KEY=VALUE (16 at most)", optarg);
            o.client[o.nclient++] = optarg;
            break;
        case 'k': o.kafka_config = optarg; break;
        case 'h': usage(); return 0;
        case 'V': printf("refpipe 1 (the reference pipeline of streamdrill)\n"); return 0;
        default:
            if (refwire_option(c, optarg)) break;
            usage();
            return 2;
        }
    }
    if (optind < argc) die("unexpected argument %s", argv[optind]);
    if (!o.brokers || !o.topic || !o.db) { usage(); die("--brokers, --topic and --db are required"); }
    if (o.max_batch < 1) die("--max-batch must be at least 1");
    if (o.avro && !o.registry && !(o.registry = getenv("STREAMDRILL_REGISTRY"))) die("--format %s: --registry URL is required", o.avro == 3 ? "json-schema" : o.avro == 2 ? "protobuf" : "avro");
    static char subject[512];
    snprintf(subject, sizeof(subject), "%s-value", o.topic);
    if (weak.newest_schema) refavro_subject = subject;
    if (!o.group) o.group = "refpipe";
    /* no markers at all: what the harness would read goes nowhere */
    if (o.no_markers && !freopen("/dev/null", "w", stdout)) die("--no-markers: cannot open /dev/null: %s", strerror(errno));
    ref_start(on_signal, o.db);
    sql("PRAGMA synchronous=NORMAL");
    char q[1024];
    snprintf(q, sizeof(q),
             "CREATE TABLE IF NOT EXISTS %s(event_id TEXT%s, event_time TEXT, payload TEXT, sd_incarnation INTEGER,"
             " sd_batch INTEGER, sd_written_ms INTEGER, sd_event_ms INTEGER)",
             o.table, o.mode == MODE_EO && !weak.no_dedup ? " PRIMARY KEY" : "");
    sql(q);
    if (weak.rewrite_on_term) {
        snprintf(q, sizeof(q),
                 "CREATE TABLE IF NOT EXISTS %s_again(event_id TEXT, event_time TEXT, payload TEXT, sd_incarnation INTEGER,"
                 " sd_batch INTEGER, sd_written_ms INTEGER, sd_event_ms INTEGER)", o.table);
        sql(q);
    }
    snprintf(q, sizeof(q),
             "CREATE TABLE IF NOT EXISTS %s(sd_id TEXT, reason TEXT, raw BLOB, partition INTEGER, offset INTEGER,"
             " sd_incarnation INTEGER, sd_written_ms INTEGER)", o.qtable);
    sql(q);
    sql("CREATE TABLE IF NOT EXISTS sd_offsets(topic TEXT, partition INTEGER, next_offset INTEGER, PRIMARY KEY(topic, partition))");
    sql("CREATE TABLE IF NOT EXISTS sd_state(key TEXT PRIMARY KEY, value INTEGER)");
    if (o.latest)
        sql("CREATE TABLE IF NOT EXISTS latest(parcel_id TEXT PRIMARY KEY, location TEXT, scan TEXT, sd_event_ms INTEGER, sd_writer TEXT)");
    if (o.files) {
        if (mkdir(o.files, 0777) && errno != EEXIST) die("--files: cannot create %s: %s", o.files, strerror(errno));
        /* the log names files by absolute path, as Spark's does */
        if (!(o.files = realpath(o.files, NULL))) die("--files: %s", strerror(errno));
        char meta[4096];
        snprintf(meta, sizeof(meta), "%s/_spark_metadata", o.files);
        if (mkdir(meta, 0777) && errno != EEXIST) die("--files: cannot create %s: %s", meta, strerror(errno));
        sql("CREATE TABLE IF NOT EXISTS sd_files(batch INTEGER PRIMARY KEY, path TEXT, size INTEGER)");
        files_recover();
    }
    if (o.window_ms)
        sql("CREATE TABLE IF NOT EXISTS agg(window_start INTEGER, location TEXT, count INTEGER, sum INTEGER, sd_writer TEXT)");

    int64_t batch_id = 0, max_event = INT64_MIN, mode = -1, emitted_upto = INT64_MIN;
    {
        sqlite3_stmt *st = prep("SELECT key, value FROM sd_state");
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *k = (const char *)sqlite3_column_text(st, 0);
            if (!strcmp(k, "batch")) batch_id = sqlite3_column_int64(st, 1);
            if (!strcmp(k, "max_event_ms")) max_event = sqlite3_column_int64(st, 1);
            if (!strcmp(k, "mode")) mode = sqlite3_column_int64(st, 1);
            if (!strcmp(k, "emitted_upto")) emitted_upto = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
    }
    /* a checkpoint written in one mode is not resumed in another: refuse,
     * loudly, rather than guess what the earlier run committed */
    static const char *const modes[] = {"exactly-once", "at-least-once", "at-most-once"};
    if (mode >= 0 && mode != o.mode)
        die("%s holds a checkpoint written in %s mode; refusing to resume it in %s mode", o.db, modes[mode], modes[o.mode]);
    if (mode < 0) {
        char mq[96];
        snprintf(mq, sizeof(mq), "INSERT OR REPLACE INTO sd_state(key, value) VALUES('mode', %d)", o.mode);
        sql(mq);
    }

    if (o.window_ms && weak.forget_state && emitted_upto != INT64_MIN) {
        /* the bug: the open windows' state is not restored */
        char fq[256];
        snprintf(fq, sizeof(fq), "DELETE FROM %s WHERE sd_event_ms >= %lld", o.table, (long long)emitted_upto);
        sql(fq);
        fprintf(stderr, "refpipe: forgot the state of the windows from %lld on\n", (long long)emitted_upto);
    }

    char errstr[512], sto[32];
    snprintf(sto, sizeof(sto), "%d", o.session_timeout_ms);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    struct { const char *k, *v; } props[] = {
        {"bootstrap.servers", o.brokers}, {"group.id", o.group}, {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"}, {"auto.offset.reset", "earliest"}, {"isolation.level", weak.read_uncommitted ? "read_uncommitted" : "read_committed"},
        {"client.id", "refpipe"}, {"session.timeout.ms", sto}, {"heartbeat.interval.ms", "500"},
        /* a fetch returns within 100 ms when little is waiting (librdkafka's default waits 500) */
        {"fetch.wait.max.ms", "100"}};
    for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
        if (rd_kafka_conf_set(conf, props[i].k, props[i].v, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) die("%s", errstr);
    ref_kafka_config(conf, o.kafka_config); /* TLS, SASL: what the harness's own clients carry */
    for (int i = 0; i < o.nclient; i++) {
        char *kv = strdup(o.client[i]), *eq = strchr(kv, '='); /* a copy: a value of any length, never cut */
        *eq = 0;
        if (rd_kafka_conf_set(conf, kv, eq + 1, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) die("--client %s: %s", o.client[i], errstr);
        free(kv);
    }
    if (o.subscribe) rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
    if (weak.fatal_errors) rd_kafka_conf_set_error_cb(conf, fatal_error_cb);
    rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!rk) die("consumer: %s", errstr);

    /* partitions */
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, o.topic, NULL);
    for (int tries = 0; tries < 50 && !nparts; tries++) {
        if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (md->topic_cnt == 1 && !md->topics[0].err) nparts = md->topics[0].partition_cnt;
            rd_kafka_metadata_destroy(md);
        }
        if (!nparts) sleep_ms(200);
    }
    rd_kafka_topic_destroy(rkt);
    if (!nparts) die("topic %s: no metadata from %s", o.topic, o.brokers);

    next = calloc((size_t)nparts, sizeof(int64_t));
    durable = calloc((size_t)nparts, sizeof(int64_t));
    owned = calloc((size_t)nparts, 1);
    touched = calloc((size_t)nparts, 1);
    if (o.subscribe) {
        rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, o.topic, RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t e = rd_kafka_subscribe(rk, sub);
        rd_kafka_topic_partition_list_destroy(sub);
        if (e) die("subscribe: %s", rd_kafka_err2str(e));
    } else {
        rd_kafka_topic_partition_list_t *assign = rd_kafka_topic_partition_list_new(nparts);
        for (int p = 0; p < nparts; p++) rd_kafka_topic_partition_list_add(assign, o.topic, p);
        start_offsets(assign);
        rd_kafka_resp_err_t aerr = rd_kafka_assign(rk, assign);
        rd_kafka_topic_partition_list_destroy(assign);
        if (aerr) die("assign: %s", rd_kafka_err2str(aerr));
        assigned = 1;
    }
    fprintf(stderr, "refpipe: incarnation %d, mode %s%s, starting at", o.incarnation,
            o.mode == MODE_EO ? "exactly-once" : o.mode == MODE_ALO ? "at-least-once" : "at-most-once",
            o.subscribe ? " (group member)" : "");
    for (int p = 0; p < nparts; p++) fprintf(stderr, " %d:%lld", p, (long long)next[p]);
    fprintf(stderr, ", batch %lld\n", (long long)batch_id);

    snprintf(q, sizeof(q), "INSERT %sINTO %s(event_id, event_time, payload, sd_incarnation, sd_batch, sd_written_ms, sd_event_ms) VALUES(?,?,?,?,?,?,?)",
             o.mode == MODE_EO ? "OR IGNORE " : "", o.table);
    sqlite3_stmt *ins = prep(q);
    snprintf(q, sizeof(q), "INSERT INTO %s(sd_id, reason, raw, partition, offset, sd_incarnation, sd_written_ms) VALUES(?,?,?,?,?,?,?)", o.qtable);
    sqlite3_stmt *rej = prep(q);
    sqlite3_stmt *setoff = prep("INSERT INTO sd_offsets(topic, partition, next_offset) VALUES(?,?,?) ON CONFLICT(topic, partition) "
                                "DO UPDATE SET next_offset = max(next_offset, excluded.next_offset)");
    sqlite3_stmt *setstate = prep("INSERT OR REPLACE INTO sd_state(key, value) VALUES(?,?)");
    sqlite3_stmt *upsert = o.latest ? prep(weak.latest_by_arrival
        ? "INSERT INTO latest VALUES(?,?,?,?,?) ON CONFLICT(parcel_id) DO UPDATE SET location=excluded.location, scan=excluded.scan,"
          " sd_event_ms=excluded.sd_event_ms, sd_writer=excluded.sd_writer"
        : "INSERT INTO latest VALUES(?,?,?,?,?) ON CONFLICT(parcel_id) DO UPDATE SET location=excluded.location, scan=excluded.scan,"
          " sd_event_ms=excluded.sd_event_ms, sd_writer=excluded.sd_writer WHERE excluded.sd_event_ms >= latest.sd_event_ms") : NULL;
    if (o.latest && weak.first_on_tie) /* the bug: a newer record of the same event time does not replace the row */
        upsert = prep("INSERT INTO latest VALUES(?,?,?,?,?) ON CONFLICT(parcel_id) DO UPDATE SET location=excluded.location, scan=excluded.scan,"
                      " sd_event_ms=excluded.sd_event_ms, sd_writer=excluded.sd_writer WHERE excluded.sd_event_ms > latest.sd_event_ms");

    if (!o.bare_markers) printf("SD-READY\n");
    rd_kafka_message_t **b = calloc((size_t)o.max_batch, sizeof(*b));
    int term_exit = 0;
    int64_t last_record = 0;
    static const char *const known[] = {"event_id", "parcel_id", "event_time", "location", "scan", "weight_g", NULL};
    int64_t batch_started = 0;
    while (!stop_flag && !term_exit) {
        /* --interval-ms: like a processing-time trigger, the next batch
         * starts an interval after the last one did, and nothing is fetched
         * in between (a Spark executor's consumer only reads inside a task):
         * the broker connections lie idle */
        if (o.interval_ms > 0 && batch_started) {
            rd_kafka_topic_partition_list_t *asg = NULL;
            if (!rd_kafka_assignment(rk, &asg) && asg) {
                rd_kafka_pause_partitions(rk, asg);
                while (!stop_flag && mono_ms() < batch_started + o.interval_ms) sleep_ms(20);
                rd_kafka_resume_partitions(rk, asg);
                rd_kafka_topic_partition_list_destroy(asg);
            }
        }
        /* collect a batch */
        int n = 0;
        int64_t close_at = 0;
        while (!stop_flag && n < o.max_batch) {
            int wait = close_at ? (int)(close_at - mono_ms()) : 100;
            if (close_at && wait <= 0) break;
            /* Poll without a timeout and sleep between polls: a timed
             * rd_kafka_consumer_poll() waits on a CLOCK_REALTIME deadline
             * (glibc's C11 cnd_timedwait, which libfaketime cannot adjust), so
             * under a pipeline clock moved forward it would sleep until real
             * time caught up. */
            (void)wait;
            rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 0);
            if (weak.fatal_errors) rd_kafka_poll(rk, 0); /* serves the error callback */
            if (!m) {
                if (weak.exit_when_idle && last_record && !n && mono_ms() - last_record > 1000) {
                    fprintf(stderr, "refpipe: no record for a second: taking it for the end of the stream\n");
                    term_exit = 1;
                    break;
                }
                sleep_ms(5);
                continue;
            }
            last_record = mono_ms();
            if (m->err) {
                if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                    fprintf(stderr, "refpipe: consume: %s\n", rd_kafka_message_errstr(m));
                    if (weak.fatal_errors) { fprintf(stderr, "refpipe: giving up on a consumer error\n"); exit(3); }
                }
                rd_kafka_message_destroy(m);
                continue;
            }
            b[n++] = m;
            if (!close_at) close_at = mono_ms() + o.trigger_ms;
            if (n == 1) batch_started = mono_ms();
        }
        if (!n) continue;
        batch_id++;
        int64_t watermark = max_event == INT64_MIN ? INT64_MIN : max_event - o.watermark_ms;
        int64_t batch_max = max_event, running_max = max_event;
        if (o.bare_markers) printf("SD-BATCH begin id=%lld\n", (long long)batch_id);
        else printf("SD-BATCH begin id=%lld rows=%d\n", (long long)batch_id, n);
        if (o.mode == MODE_EO) sql("BEGIN IMMEDIATE");
        int64_t *bnext = calloc((size_t)nparts, sizeof(int64_t));
        memcpy(bnext, next, sizeof(int64_t) * (size_t)nparts);
        for (int i = 0; i < n; i++)
            if (b[i]->partition >= 0 && b[i]->partition < nparts && b[i]->offset + 1 > bnext[b[i]->partition])
                bnext[b[i]->partition] = b[i]->offset + 1;
        for (int p = 0; p < nparts; p++) touched[p] = bnext[p] != next[p];
        if (o.mode == MODE_AMO) commit_kafka(bnext);
        int written = 0, rejected = 0, late = 0, dropped = 0;
        struct { char key[64]; int n; } keys[64];
        int nkeys = 0;
        int64_t late_ws[64];  /* count-late: written windows a late record reopened */
        int nlate_ws = 0;
        for (int i = 0; i < n; i++) {
            if (stop_flag && weak.commit_on_term) {
                /* the bug: treat the batch as done on the way out */
                fprintf(stderr, "refpipe: SIGTERM mid-batch: committing and leaving %d rows unwritten\n", n - i);
                term_exit = 1;
                break;
            }
            rd_kafka_message_t *m = b[i];
            const char *sdid = NULL;
            size_t sdlen = 0;
            rd_kafka_headers_t *hdrs = NULL;
            const void *hv = NULL;
            if (!rd_kafka_message_headers(m, &hdrs) && !rd_kafka_header_get_last(hdrs, "sd-id", &hv, &sdlen) && hv) sdid = hv;
            const char *reason = NULL;
            json_t *j = NULL;
            const char *id = NULL, *ts = NULL;
            int64_t et = 0;
            if (!m->payload && weak.crash_on_null) { fprintf(stderr, "refpipe: null value at %d@%lld\n", m->partition, (long long)m->offset); abort(); }
            if (!m->key && weak.need_key) { fprintf(stderr, "refpipe: record without a key at %d@%lld\n", m->partition, (long long)m->offset); abort(); }
            if (o.latest && !m->payload && m->key && m->key_len && !weak.ignore_deletes) {
                /* a tombstone: the key's row goes, in the batch's transaction */
                sqlite3_stmt *del = prep("DELETE FROM latest WHERE parcel_id = ?");
                sqlite3_bind_text(del, 1, m->key, (int)m->key_len, SQLITE_TRANSIENT);
                step_done(del, "delete the key's row");
                sqlite3_finalize(del);
                continue;
            }
            if (!m->payload || !m->len) reason = "empty or null value";
            else if (!weak.lenient_json && m->len > o.max_bytes) reason = "value larger than --max-bytes";
            else {
                char *text = (char *)m->payload;
                char *copy = NULL;
                size_t tlen = m->len;
                if (o.avro) {
                    reason = refwire_decode(o.avro, o.registry, m->payload, m->len, &copy);
                    if (reason && weak.drop_undecodable) { /* the bug: what cannot be decoded is skipped, not kept */
                        dropped++;
                        continue;
                    }
                    if (copy) text = copy, tlen = strlen(copy);
                } else if (weak.lenient_json) {
                    copy = malloc(m->len);
                    memcpy(copy, m->payload, m->len);
                    sanitize_utf8(copy, m->len);
                    text = copy;
                }
                if (!reason) j = json_loadb(text, tlen, weak.lenient_json ? 0 : JSON_REJECT_DUPLICATES, NULL);
                free(copy);
                if (reason) (void)0;
                else if (!j || !json_is_object(j)) reason = "not a JSON object (or invalid UTF-8, or a key twice)";
                else if (!json_is_string(json_object_get(j, o.id_field))) reason = "id missing or not a string";
                else if (!json_is_string(json_object_get(j, o.time_field))) reason = "event time missing or not a string";
                else if (parse_iso(json_string_value(json_object_get(j, o.time_field)), &et)) reason = "event time not ISO-8601";
            }
            if (!reason) {
                id = json_string_value(json_object_get(j, o.id_field));
                ts = json_string_value(json_object_get(j, o.time_field));
                json_t *loc = json_object_get(j, "location");
                if (weak.crash_on_bad_type && loc && !json_is_string(loc)) {
                    fprintf(stderr, "refpipe: location of %s is not a string\n", id);
                    abort();
                }
                if (weak.strict_schema) {
                    const char *k;
                    json_t *v;
                    json_object_foreach(j, k, v) {
                        int ok = 0;
                        for (int x = 0; known[x]; x++) if (!strcmp(k, known[x]) || !strcmp(k, o.id_field) || !strcmp(k, o.time_field)) ok = 1;
                        if (!ok) reason = "unknown field";
                    }
                }
                if (!reason && !weak.no_future_guard && et > now_ms() + o.max_future_ms)
                    reason = "event time too far in the future";
            }
            int drop = 0;
            if (!reason) {
                int is_late;
                if (weak.late_by_wall) is_late = et < now_ms() - o.watermark_ms;
                else if (weak.no_watermark || weak.count_late || (o.complete && !weak.drop_late) || watermark == INT64_MIN) is_late = 0;
                else if (weak.late_off_by_one) is_late = et <= watermark + 1;
                else is_late = weak.late_inclusive ? et <= watermark : et < watermark;
                if (is_late) {
                    late++;
                    if (o.late_quarantine) reason = "late: event time behind the watermark";
                    else drop = 1;
                }
                if (!drop && weak.strictly_after_max && max_event != INT64_MIN && et <= max_event) drop = 1;
                if (!drop && weak.drop_ooo && running_max != INT64_MIN && et < running_max) drop = 1;
                if (!drop && weak.drop_overflow && i >= 50) drop = 1;
                if (!drop && weak.per_key_limit && m->key) {
                    int k = -1;
                    for (int x = 0; x < nkeys; x++)
                        if (strlen(keys[x].key) == m->key_len && !memcmp(keys[x].key, m->key, m->key_len)) k = x;
                    if (k < 0 && nkeys < 64 && m->key_len < sizeof(keys[0].key)) {
                        k = nkeys++;
                        memcpy(keys[k].key, m->key, m->key_len);
                        keys[k].key[m->key_len] = 0;
                        keys[k].n = 0;
                    }
                    if (k >= 0 && ++keys[k].n > 10) drop = 1;
                }
                if (drop) dropped++;
            }
            if (reason) {
                if (sdid) sqlite3_bind_text(rej, 1, sdid, (int)sdlen, SQLITE_TRANSIENT);
                else if (id) sqlite3_bind_text(rej, 1, id, -1, SQLITE_TRANSIENT);
                else sqlite3_bind_null(rej, 1);
                sqlite3_bind_text(rej, 2, reason, -1, SQLITE_STATIC);
                sqlite3_bind_blob(rej, 3, m->payload ? m->payload : "", m->len > 4096 ? 4096 : (int)m->len, SQLITE_TRANSIENT);
                sqlite3_bind_int(rej, 4, m->partition);
                sqlite3_bind_int64(rej, 5, m->offset);
                sqlite3_bind_int(rej, 6, o.incarnation);
                sqlite3_bind_int64(rej, 7, now_ms());
                step_done(rej, "quarantine a record");
                rejected++;
            } else if (!drop) {
                sqlite3_bind_text(ins, 1, id, -1, SQLITE_TRANSIENT);
                char shifted[96];
                if (weak.tz_shift) {
                    time_t secs = (time_t)((et + 3600000) / 1000);
                    struct tm tm;
                    gmtime_r(&secs, &tm);
                    snprintf(shifted, sizeof(shifted), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)((et % 1000 + 1000) % 1000));
                    ts = shifted;
                }
                sqlite3_bind_text(ins, 2, ts, -1, SQLITE_TRANSIENT);
                /* the row keeps the record as JSON (a wire format's record decoded) */
                char *as_json = o.avro ? json_dumps(j, JSON_COMPACT) : NULL;
                if (as_json) sqlite3_bind_text(ins, 3, as_json, -1, free);
                else sqlite3_bind_text(ins, 3, m->payload, (int)m->len, SQLITE_TRANSIENT);
                sqlite3_bind_int(ins, 4, o.incarnation);
                sqlite3_bind_int64(ins, 5, batch_id);
                sqlite3_bind_int64(ins, 6, now_ms());
                sqlite3_bind_int64(ins, 7, weak.round_seconds ? (et + 500) / 1000 * 1000 : et);
                step_done(ins, "write a row");
                if (upsert) {
                    const char *pid = json_string_value(json_object_get(j, "parcel_id"));
                    char wl[64];
                    snprintf(wl, sizeof(wl), "incarnation %d batch %lld", o.incarnation, (long long)batch_id);
                    if (pid) {
                        sqlite3_bind_text(upsert, 1, pid, -1, SQLITE_TRANSIENT);
                        sqlite3_bind_text(upsert, 2, json_string_value(json_object_get(j, "location")), -1, SQLITE_TRANSIENT);
                        sqlite3_bind_text(upsert, 3, json_string_value(json_object_get(j, "scan")), -1, SQLITE_TRANSIENT);
                        sqlite3_bind_int64(upsert, 4, et);
                        sqlite3_bind_text(upsert, 5, wl, -1, SQLITE_TRANSIENT);
                        step_done(upsert, "keep the latest scan");
                    }
                }
                if (o.window_ms && weak.count_late && emitted_upto != INT64_MIN && et < emitted_upto && nlate_ws < 64) {
                    int64_t ws = (et / o.window_ms) * o.window_ms;
                    int seen = 0;
                    for (int x = 0; x < nlate_ws; x++) seen |= late_ws[x] == ws;
                    if (!seen) late_ws[nlate_ws++] = ws;
                }
                if (!first_id[0]) snprintf(first_id, sizeof(first_id), "%s", id);
                written++;
                if (et > batch_max) batch_max = et;
                if (et > running_max) running_max = et;
            }
            json_decref(j);
            if (o.row_delay_ms > 0) sleep_ms(o.row_delay_ms);
        }
        if (weak.hostile_bytes && written) {
            static int once_bytes;
            if (!once_bytes++) {
                size_t big = 1 << 20;
                char *huge = malloc(big);
                memset(huge, 'h', big);
                char nul[128];
                int nl = snprintf(nul, sizeof(nul), "%.100s", first_id[0] ? first_id : "x-0");
                memcpy(nul + nl, "\0evil", 5);
                static const char bad[] = "bad-\xff\xfe-utf8";
                struct { const char *v; int n; } ids[] = {{bad, (int)sizeof(bad) - 1}, {nul, nl + 5}, {huge, (int)big}};
                for (int k = 0; k < 3; k++) write_planted_row(ins, ids[k].v, ids[k].n, "{}", batch_id);
                free(huge);
            }
        }
        if (weak.hostile_ids && written) {
            static int once;
            if (!once++) {
                const char *hostile = "<script>alert(\"sd\")</script>|**x**`y`,\"z\"&amp;$(id)";
                write_planted_row(ins, hostile, -1, "<b>hostile</b>", batch_id);
            }
        }
        if (o.mode == MODE_EO) {
            /* the partitions the batch moved, never backwards: another
             * instance may own the rest, and may have gone further */
            for (int p = 0; p < nparts; p++) {
                if (!touched[p]) continue;
                sqlite3_bind_text(setoff, 1, o.topic, -1, SQLITE_STATIC);
                sqlite3_bind_int(setoff, 2, p);
                sqlite3_bind_int64(setoff, 3, bnext[p]);
                step_done(setoff, "store offsets");
            }
        }
        sqlite3_bind_text(setstate, 1, "batch", -1, SQLITE_STATIC);
        sqlite3_bind_int64(setstate, 2, batch_id);
        step_done(setstate, "store the batch id");
        if (o.window_ms && o.complete && batch_max != INT64_MIN) {
            sql("DELETE FROM agg");
            emit_windows(INT64_MIN, INT64_MAX, batch_id);
        } else if (o.window_ms && batch_max != INT64_MIN) {
            /* append mode: the windows this batch's watermark closed */
            int64_t wm = batch_max - o.watermark_ms;
            int64_t upto = (wm >= 0 ? wm / o.window_ms : (wm - o.window_ms + 1) / o.window_ms) * o.window_ms;
            if (emitted_upto == INT64_MIN || upto > emitted_upto) {
                emit_windows(emitted_upto == INT64_MIN ? INT64_MIN : emitted_upto, upto, batch_id);
                emitted_upto = upto;
                sqlite3_bind_text(setstate, 1, "emitted_upto", -1, SQLITE_STATIC);
                sqlite3_bind_int64(setstate, 2, emitted_upto);
                step_done(setstate, "store the windows written");
            }
            for (int x = 0; x < nlate_ws; x++) emit_windows(late_ws[x], late_ws[x] + 1, batch_id);
            if (weak.early_emit) emit_windows(emitted_upto, INT64_MAX, batch_id);
            /* evict the written windows' rows (count-late recounts them) */
            if (!weak.keep_state && !weak.count_late && emitted_upto != INT64_MIN) {
                char eq[256];
                snprintf(eq, sizeof(eq), "DELETE FROM %s WHERE sd_event_ms < %lld", o.table, (long long)emitted_upto);
                sql(eq);
            }
        }
        int64_t state_rows = -1;
        if (o.window_ms) {
            char cq[128];
            snprintf(cq, sizeof(cq), "SELECT count(*) FROM %s", o.table);
            sqlite3_stmt *cs = prep(cq);
            if (sqlite3_step(cs) == SQLITE_ROW) state_rows = sqlite3_column_int64(cs, 0);
            sqlite3_finalize(cs);
        }
        if (batch_max != INT64_MIN) {
            sqlite3_bind_text(setstate, 1, "max_event_ms", -1, SQLITE_STATIC);
            sqlite3_bind_int64(setstate, 2, batch_max);
            step_done(setstate, "store the watermark");
        }
        char part[4200] = "";
        int64_t part_bytes = 0;
        if (o.files) files_batch(batch_id, part, sizeof(part), &part_bytes);
        if (o.mode == MODE_EO) {
            sql("COMMIT");
            memcpy(durable, bnext, sizeof(int64_t) * (size_t)nparts);
        }
        if (o.files) files_log(batch_id, part[0] ? part : NULL, part_bytes);
        /* the time a checkpoint's write takes after the sink's commit (the
         * window of `kill after-sink-commit`) */
        if (o.commit_delay_ms > 0) sleep_ms(o.commit_delay_ms);
        if (o.mode == MODE_ALO) commit_kafka(bnext);
        memcpy(next, bnext, sizeof(int64_t) * (size_t)nparts);
        free(bnext);
        max_event = batch_max;
        if (o.bare_markers) printf("SD-BATCH commit id=%lld", (long long)batch_id);
        else printf("SD-BATCH commit id=%lld rows=%d", (long long)batch_id, n);
        if (!o.no_offsets) {
            printf(" offsets=");
            int any = 0;
            for (int p = 0; p < nparts; p++)
                if (owned[p] || touched[p]) printf("%s%d:%lld", any++ ? "," : "", p, (long long)durable[p]);
        }
        if (state_rows >= 0 && !o.bare_markers) printf(" state=%lld", (long long)state_rows);
        printf(" written=%d quarantined=%d late=%d dropped=%d\n", written, rejected, late, dropped);
        for (int i = 0; i < n; i++) rd_kafka_message_destroy(b[i]);
    }
    if (o.window_ms && weak.flush_on_term && emitted_upto != INT64_MIN) {
        /* the bug: the open windows go out as they are, on the way out */
        emit_windows(emitted_upto, INT64_MAX, batch_id);
        fprintf(stderr, "refpipe: flushed the open windows on SIGTERM\n");
    }
    if (weak.rewrite_on_term && stop_flag) {
        /* the bug: every row goes out again as the job stops */
        snprintf(q, sizeof(q), "INSERT INTO %s_again SELECT * FROM %s", o.table, o.table);
        sql(q);
        fprintf(stderr, "refpipe: wrote every row again on SIGTERM\n");
    }
    fprintf(stderr, "refpipe: stopping after batch %lld\n", (long long)batch_id);
    sqlite3_finalize(ins);
    sqlite3_finalize(rej);
    sqlite3_finalize(setoff);
    sqlite3_finalize(setstate);
    if (upsert) sqlite3_finalize(upsert);
    sqlite3_close(db);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    free(next);
    free(durable);
    free(owned);
    free(touched);
    free(b);
    return 0;
}
