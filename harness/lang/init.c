/* init.c - `streamdrill init`: a commented first drill for a pipeline
 * command and a sink kind. The text is built from one template whose
 * lines vary by sink kind and progress source; without --pipeline it
 * drives the reference pipeline (refpipe, found through {libexec}) and
 * runs green as it is, which tests/run_scenarios.py (init) holds. */
#include "init.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* How a sink of each kind is declared, with what the line needs said. */
static const struct {
    const char *kind;
    const char *line;  /* after "sink       " */
    const char *note;  /* the comment above it */
} sd_init_sinks[] = {
    {"sqlite", "sqlite db={run}/target.db query=\"SELECT event_id FROM events\"",
     "the SQLite file the pipeline writes and a query whose first column is the id\n"
     "# (a second column may label the writer, a third the write time in epoch ms)"},
    {"postgres", "postgres dsn={dsn} query=\"SELECT event_id FROM events\"",
     "a PostgreSQL table through libpq: dsn= is any connection string (the\n"
     "# `set dsn=` line above); the query's first column is the id"},
    {"kafka", "kafka topic={topic}-out",
     "the Kafka topic the pipeline writes, read from its beginning read_committed;\n"
     "# the id is the payload's contract id field (id=FIELD or header=NAME to change it)"},
    {"jsonl", "jsonl path={run}/out/*.jsonl",
     "JSON-lines files (a glob); each line's contract id field is the id"},
    {"spark-files", "spark-files path={run}/out",
     "a Spark file sink (JSON), read through its _spark_metadata log"},
    {"flink-files", "flink-files path={run}/out",
     "a Flink FileSink (JSON lines): its finished part files only, in the folder\n"
     "# and its bucket folders (in-progress and pending ones are not yet output)"},
    {"delta", "delta path={run}/delta",
     "a Delta Lake table, read through its _delta_log (rows decoded with pyarrow)"},
    {"command", "command timeout=30s {here}/read-sink.py {run}",
     "any store, through a program that prints the rows as JSON lines with the\n"
     "# id in field \"id\" (and optionally \"writer\" and \"time\"); no shell is used"},
};

static const char *const sd_init_progress[] = {"markers", "group", "spark", "flink", "sink", NULL};

const char *sd_init_sink_kinds(void) { return "sqlite, postgres, kafka, jsonl, spark-files, flink-files, delta, command"; }

static const char *sd_init_progress_note(const char *p) {
    if (!strcmp(p, "markers"))
        return "# progress: the pipeline prints SD-READY and SD-BATCH begin/commit lines on\n"
               "# stdout (docs/pipelines.md), so a kill lands inside a batch";
    if (!strcmp(p, "group"))
        return "# progress: the pipeline's Kafka consumer group ({group}, which its command\n"
               "# should use: a Kafka Streams application's application.id): a commit when\n"
               "# the group's offsets move, a batch in flight while the target holds rows past\n"
               "# the newest commit, or, for a writer in transactions (Kafka Streams under\n"
               "# exactly_once_v2), while the output holds an open transaction; for any\n"
               "# pipeline that commits to Kafka and prints nothing (Kafka Streams, Connect, a\n"
               "# plain consumer). A Kafka Streams application: its producer's linger.ms\n"
               "# below its commit interval (5 ms; the default, 100, fills a transaction only\n"
               "# at its commit, and a kill finds none open), and a killed member stays in\n"
               "# the group for its session.timeout.ms (45 s by default) before the restarted\n"
               "# one gets its partitions (docs/pipelines.md, Kafka Streams)";
    if (!strcmp(p, "spark"))
        return "# progress: the Spark checkpoint ({checkpoint}, which the query must use as its\n"
               "# checkpointLocation): batch N is in flight while offsets/N exists and commits/N\n"
               "# does not";
    if (!strcmp(p, "flink"))
        return "# progress: the Flink job's checkpoints ({checkpoint}, which the job must use as\n"
               "# its execution.checkpointing.dir): a batch is the interval between two\n"
               "# completed checkpoints";
    return "# progress: the target's growth alone (a kill lands while rows are written;\n"
           "# caught up is the sinks standing still)";
}

/* The path a path-kind sink reads, taken from the pipeline's command
 * line: the first word (or the value of a --opt=VALUE word) that ends in
 * one of exts, or for exts NULL, the first that lies under {run}/ and is
 * not a checkpoint. NULL when none: the drill then keeps a {sink_path}
 * placeholder that check refuses until it is filled in. */
static char *sd_init_guess_path(const char *cmd, const char *const *exts) {
    const char *p = cmd;
    while (*p) {
        while (*p == ' ' || *p == '\t') p++;
        size_t n = strcspn(p, " \t");
        if (!n) break;
        const char *w = p;
        size_t wn = n;
        const char *eq = memchr(w, '=', wn);
        if (w[0] == '-' && eq) wn -= (size_t)(eq + 1 - w), w = eq + 1;
        if (wn && (*w == '\'' || *w == '"') && w[wn - 1] == *w && wn > 1) w++, wn -= 2;
        int hit = 0;
        if (exts) {
            for (int i = 0; exts[i] && !hit; i++) {
                size_t el = strlen(exts[i]);
                hit = wn > el && !memcmp(w + wn - el, exts[i], el);
            }
        } else {
            char word[512];
            snprintf(word, sizeof(word), "%.*s", (int)(wn < 511 ? wn : 511), w);
            hit = strstr(word, "{run}/") && !strstr(word, "checkpoint") && !strchr(word, '*');
        }
        if (hit) {
            char *out = sd_util_xcalloc(wn + 1, 1);
            memcpy(out, w, wn);
            return out;
        }
        p += n;
    }
    return NULL;
}

/* The sink line for a pipeline of the user's: a path-kind sink follows
 * the command's path, or keeps the {sink_path} placeholder. */
static void sd_init_sink_line(sd_buf_t *out, int si, const char *kind, const char *pipeline, const char **placeholder) {
    static const char *const db_exts[] = {".db", ".sqlite", ".sqlite3", NULL}, *const jsonl_exts[] = {".jsonl", NULL};
    const char *const *exts = !strcmp(kind, "sqlite") ? db_exts : !strcmp(kind, "jsonl") ? jsonl_exts : NULL;
    const char *key = !strcmp(kind, "sqlite") ? "db=" : "path=";
    int path_kind = !strcmp(kind, "sqlite") || !strcmp(kind, "jsonl") || !strcmp(kind, "spark-files") || !strcmp(kind, "flink-files") ||
                    !strcmp(kind, "delta");
    if (!path_kind) {
        sd_buf_printf(out, "sink       %s\n", sd_init_sinks[si].line);
        return;
    }
    char *path = sd_init_guess_path(pipeline, exts);
    if (!path) {
        sd_buf_printf(out, "# {sink_path}: the %s your pipeline writes (its command line names none that\n"
                           "# init could see); `streamdrill check` refuses the drill until it is filled in\n",
                      !strcmp(kind, "sqlite") ? "SQLite file" : !strcmp(kind, "jsonl") ? "JSON-lines files (a glob)" : "folder");
        *placeholder = "sink_path";
    }
    const char *line = sd_init_sinks[si].line, *at = strstr(line, key);
    size_t before = (size_t)(at - line) + strlen(key), plen = strcspn(at + strlen(key), " ");
    sd_buf_printf(out, "sink       %.*s%s%s\n", (int)before, line, path ? path : "{sink_path}", at + strlen(key) + plen);
    free(path);
}

sd_err_t sd_init_drill(const sd_init_opts_t *o, sd_buf_t *out, const char **placeholder, char *err, size_t errlen) {
    *placeholder = NULL;
    int si = -1;
    const char *kind = o->sink ? o->sink : "sqlite";
    for (size_t i = 0; i < sizeof(sd_init_sinks) / sizeof(sd_init_sinks[0]); i++)
        if (!strcmp(sd_init_sinks[i].kind, kind)) si = (int)i;
    if (si < 0) return sd_err_set(err, errlen, SD_ERR_USAGE, "--sink %s: expected one of %s", kind, sd_init_sink_kinds());
    int ref = !o->pipeline;
    if (ref && strcmp(kind, "sqlite"))
        return sd_err_set(err, errlen, SD_ERR_USAGE,
                          "--sink %s needs --pipeline: the reference pipeline writes SQLite only", kind);
    const char *progress = o->progress ? o->progress : ref ? "markers" : "group";
    int pi = -1;
    for (int i = 0; sd_init_progress[i]; i++)
        if (!strcmp(sd_init_progress[i], progress)) pi = i;
    if (pi < 0) return sd_err_set(err, errlen, SD_ERR_USAGE, "--progress %s: expected markers, group, spark, flink or sink", progress);
    if (o->pipeline && (!*o->pipeline || strpbrk(o->pipeline, "\n\r")))
        return sd_err_set(err, errlen, SD_ERR_USAGE, "--pipeline: expected one command line, found %s",
                          *o->pipeline ? "a line break" : "nothing");
    const char *name = o->name ? o->name : "first-drill";
    /* a pipeline followed by its consumer group (Kafka Streams, Connect, a
     * plain consumer) has no watermark of its own to drop late events by:
     * they are expected in the sink */
    int no_watermark = !strcmp(progress, "group");

    sd_buf_printf(out,
                  "# %s: a first drill, written by `streamdrill init`.\n"
                  "# 100 events; a SIGKILL in the middle of a batch while 20 more are processed\n"
                  "# and a restart on the same checkpoint; 10 events sent again byte for byte;\n"
                  "%s"
                  "\n"
                  "# Check it:  streamdrill check %s.drill\n"
                  "# Run it:    streamdrill run %s.drill     (exit 0 pass, 1 fail, 3 inconclusive)\n"
                  "# Every line is explained by `streamdrill help NAME` and in streamdrill(1).\n",
                  name,
                  !no_watermark
                      ? "# 3 malformed events and 2 late ones. An exactly-once pipeline ends with 120\n"
                        "# unique ids in its sink: none lost, none twice, no malformed one among them.\n"
                      : "# 3 malformed events and 2 late ones, passed on. An exactly-once pipeline ends\n"
                        "# with 122 unique ids in its sink: none lost, none twice, no malformed one.\n",
                  name, name);
    sd_buf_puts(out, "\nname       ");
    sd_buf_puts(out, name);
    sd_buf_puts(out, "\n");
    if (!strcmp(kind, "postgres")) sd_buf_puts(out, "set        dsn=postgresql://127.0.0.1:5432/postgres\n");
    sd_buf_puts(out,
                "\n# the topic the harness writes to (each run gets its own: NAME-<tag>, in {topic})\n"
                "source     kafka topic=parcel-scans partitions=3\n"
                "# seeded parcel scans: event_id, parcel_id, event_time (ISO-8601), location,\n"
                "# scan, weight_g; or replay your own JSON lines with log=PATH id=FIELD\n"
                "events     parcel-scans seed=42\n"
                "# what the pipeline promises: its id and event-time fields, the watermark, what\n"
                "# it does with late and malformed events, and the delivery guarantee\n");
    if (no_watermark)
        sd_buf_puts(out, "# late=accept: a pipeline with no watermark of its own (Kafka Streams, Connect,\n"
                         "# a plain consumer) passes late events on; late=drop if yours drops them\n");
    sd_buf_printf(out, "contract   id=event_id time=event_time watermark=10m late=%s malformed=%s profile=exactly-once\n",
                  no_watermark ? "accept" : "drop", ref ? "quarantine" : "drop");
    if (ref) {
        sd_buf_puts(out,
                    "# refpipe writes table bronze; the second column names the writer of a row\n"
                    "# (so a duplicate says which incarnation wrote each copy), the third its time\n"
                    "sink       sqlite db={run}/target.db query=\"SELECT event_id, 'incarnation ' || sd_incarnation || "
                    "' batch ' || sd_batch, sd_written_ms FROM bronze\"\n"
                    "# where malformed events must go (contract malformed=quarantine)\n"
                    "quarantine sqlite db={run}/target.db query=\"SELECT sd_id, reason FROM rejected\"\n"
                    "# the reference pipeline, exec'd without a shell; replace it with your own\n"
                    "# (it gets {brokers}, {topic}, {group}, {checkpoint} here and as STREAMDRILL_* variables)\n"
                    "pipeline   {libexec}/refpipe --brokers {brokers} --topic {topic} --db {run}/target.db "
                    "--mode exactly-once --group {group}\n");
    } else {
        sd_buf_printf(out, "# %s\n", sd_init_sinks[si].note);
        sd_init_sink_line(out, si, kind, o->pipeline, placeholder);
        sd_buf_printf(out,
                      "# a pipeline with a dead-letter sink declares it, and the contract says\n"
                      "# malformed=quarantine:\n"
                      "# quarantine %s\n",
                      !strcmp(kind, "kafka") ? "kafka topic={topic}-dead id=sd_id" : "sqlite db={run}/target.db query=\"SELECT sd_id FROM rejected\"");
        sd_buf_puts(out,
                    "# the pipeline's command line, exec'd without a shell: {brokers}, {topic},\n"
                    "# {group} and {checkpoint} are filled in here and set as STREAMDRILL_BROKERS,\n"
                    "# STREAMDRILL_TOPIC, STREAMDRILL_GROUP and STREAMDRILL_CHECKPOINT\n");
        sd_buf_printf(out, "pipeline   %s\n", o->pipeline);
    }
    sd_buf_printf(out, "%s\nprogress   %s\n", sd_init_progress_note(progress), progress);
    /* a first run's waits: long enough for a JVM's first batch, short
     * enough that a drill that cannot work says so in minutes */
    const char *start_to = ref ? "30s" : "2m";
    /* A Delta table shows a batch at its commit: a kill before it finds a
     * naive append still right. After the commit, before the checkpoint's,
     * is where a writer that is not idempotent writes the batch twice; it
     * needs a progress source that tells batches apart. */
    int delta = !strcmp(kind, "delta"), batches = !strcmp(progress, "spark") || !strcmp(progress, "markers");
    const char *kill_note = !delta ? "# a kill that finds no batch in flight makes the run inconclusive, never a pass\n"
                            : batches ? "# killed after Delta's commit of a batch and before the checkpoint's: a writer\n"
                                        "# that is not idempotent (a plain append, a txnAppId that changes per\n"
                                        "# restart) writes the batch twice here; `kill mid-batch` lands before the\n"
                                        "# commit, where even a plain append is right. A kill that finds no batch\n"
                                        "# in flight makes the run inconclusive, never a pass\n"
                                      : "# a kill mid-batch lands before Delta's commit, where even a plain append is\n"
                                        "# right; with `progress spark` (or batch markers) `kill after-sink-commit\n"
                                        "# signal=KILL` lands after it and catches a writer that is not idempotent\n";
    sd_buf_printf(out,
                  "\n# the drill\n"
                  "start      timeout=%s\n"
                  "produce    100\n"
                  "await      sink rows>=100 timeout=%s\n"
                  "%s"
                  "%s"
                  "kill       %s signal=KILL\n"
                  "restart    timeout=%s\n"
                  "replay     10\n"
                  "inject     malformed=3 late=2\n"
                  "await      quiescent 3s timeout=%s\n"
                  "expect     unique=%s lost=0 duplicated=0%s%s\n",
                  start_to, ref ? "30s" : "2m",
                  /* a consumer group's commits are read every 100 ms, and a
                   * transaction of 20 records can open and commit between
                   * two looks: spread over half a second, the kill finds one */
                  !ref && !strcmp(progress, "group") ? "# spread over half a second: a batch that opens and commits between two of the\n"
                                                       "# harness's looks at the group is no batch a kill could land in\n"
                                                       "produce    20 rate=40/s background\n"
                                                     : "produce    20\n",
                  kill_note, delta && batches ? "after-sink-commit" : "mid-batch", ref ? "30s" : "2m",
                  ref ? "60s" : "3m", no_watermark ? "122" : "120",
                  ref ? " quarantined=3" : " malformed_leaked=0", no_watermark ? "" : " late_leaked=0");
    /* a writer in transactions whose restart does not fence the killed
     * instance still ends with every id once: only the recovery shows it */
    if (!strcmp(kind, "kafka"))
        sd_buf_puts(out, "# a writer in transactions whose restart does not fence the killed instance (a\n"
                         "# transactional.id that changes per process, a Flink prefix that changes per\n"
                         "# submission) still ends with every id once: its output waits behind the\n"
                         "# killed instance's open transaction until the broker aborts it\n"
                         "# (transaction.timeout.ms, 60 s by default). Only the recovery time shows it:\n"
                         "# keep this bound below that timeout and above the group's session.timeout.ms\n"
                         "expect     recovery_s<=55\n");
    return SD_OK;
}
