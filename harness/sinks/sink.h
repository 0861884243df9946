/* sink.h - sink readers: how the harness reads what the pipeline wrote.
 *
 * A reader is a small ops struct chosen by name (like Redis's rio back
 * ends): sqlite (a database file and a query), kafka (a topic, read with
 * read_committed by default), jsonl (files matching a glob). The harness
 * never asks the pipeline what it wrote; it reads the sink itself.
 *
 * A scan yields one call per row with the row's id and, when the sink has
 * them, a writer label (which incarnation or batch wrote the row) and a
 * write time. For sqlite these are the query's first, second and third
 * columns; for kafka the id comes from the payload field (or the header);
 * for jsonl from the payload field. */
#ifndef SD_SINK_H
#define SD_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "scenario.h"
#include "util.h"

/* Called per row. id may be NULL (the row has no id). Return non-zero to stop. */
typedef int (*sd_sink_row_cb)(void *opaque, const char *id, size_t idlen, const char *writer, size_t wlen,
                              int64_t t_ms);

/* Called per row by scan_cols with the values of the named columns, as
 * text (vals[i] NULL: the row has no such column, or it is SQL NULL). */
typedef int (*sd_sink_cols_cb)(void *opaque, const char *const *vals, const size_t *lens);

typedef struct sd_sink_ctx_s {
    const char *brokers;        /* for kafka sinks */
    const sd_kvlist_t *props;   /* -X properties for kafka sinks */
    const char *id_field;       /* contract id field (default for kafka/jsonl id=) */
    const char *run_dir;        /* the run folder (a command's stderr goes there), or NULL */
    const char *name;           /* the sink's declared name */
} sd_sink_ctx_t;

typedef struct sd_sink_ops_s {
    const char *name;
    /* params are expanded. On failure err names the sink and the cause. */
    sd_err_t (*open)(const sd_kvlist_t *params, const sd_sink_ctx_t *ctx, void **state, char *err, size_t errlen);
    /* Rows visible now. missing_ok: a sink that does not exist yet counts 0. */
    sd_err_t (*count)(void *state, int missing_ok, int64_t *rows, char *err, size_t errlen);
    /* Every row, in sink order. */
    sd_err_t (*scan)(void *state, sd_sink_row_cb cb, void *opaque, char *err, size_t errlen);
    void (*close)(void *state);
    /* Optional: what the reader noticed that is not a row (caller frees), or NULL. */
    char *(*notes)(void *state);
    /* Optional: every row's named columns (fields), for the result models.
     * A name that begins with '?' may be absent from the sink; any other
     * missing name is an error that lists what the sink has. */
    sd_err_t (*scan_cols)(void *state, const char *const *names, int n, sd_sink_cols_cb cb, void *opaque, char *err,
                          size_t errlen);
    /* Optional: a cheap number that changes with each commit of the sink
     * (Delta: the newest version), for `kill after-sink-commit`; readers
     * without it are counted instead. *mark is -1 while the sink is absent. */
    sd_err_t (*mark)(void *state, int64_t *mark, char *err, size_t errlen);
    /* Optional: every output file each commit of the sink added (Delta: a
     * version's add actions; a Spark file sink: a batch's log entry), with
     * its size in bytes (-1 unknown), for the operational health. */
    sd_err_t (*files)(void *state, void (*cb)(void *opaque, int64_t commit, int64_t bytes), void *opaque, char *err, size_t errlen);
    /* Optional: the sink's own record of its newest commit, for the
     * runbook at a fault (Delta: "version 4 (WRITE, txn q1=3)"); caller
     * frees; NULL when there is none yet or it cannot be read. */
    char *(*newest_commit)(void *state);
    /* Optional: records written and not yet visible to the reader, the
     * sign of a batch in flight in a transactional writer (Kafka: the
     * offsets past the last stable offset, an open transaction). */
    sd_err_t (*pending)(void *state, int64_t *rows, char *err, size_t errlen);
    /* Optional: records of transactions the writer aborted that the last
     * scan passed over (a kill inside a transaction leaves them; a
     * read_committed reader never sees them), -1 when it cannot tell. */
    int64_t (*aborted)(void *state);
    /* Optional: of the rows the last scan read, those a read_committed
     * reader sees (Kafka read with isolation=read_uncommitted: neither
     * aborted nor open), -1 when every row read is (or it cannot tell). */
    int64_t (*committed)(void *state);
    /* Optional: per partition (up to nmax), the end a read_committed reader
     * may read to (the last stable offset) and the end of the log (the high
     * watermark); returns how many partitions, -1 when it cannot tell. */
    int (*ends)(void *state, int nmax, int64_t *stable, int64_t *end);
    /* Optional: does a record that open transactions hold (past the last
     * stable offset), at or past from[p] in its partition (nfrom of them;
     * from NULL: any), carry needle in its key, value or sd-id header? 1
     * yes, 0 no (or none is open there), -1 it cannot tell within
     * budget_ms. */
    int (*open_holds)(void *state, const char *needle, const int64_t *from, int nfrom, int64_t budget_ms);
} sd_sink_ops_t;

extern const sd_sink_ops_t sd_sink_sqlite;
extern const sd_sink_ops_t sd_sink_kafka;
extern const sd_sink_ops_t sd_sink_jsonl;
extern const sd_sink_ops_t sd_sink_spark_files;
extern const sd_sink_ops_t sd_sink_flink_files;
extern const sd_sink_ops_t sd_sink_command;
extern const sd_sink_ops_t sd_sink_delta;
extern const sd_sink_ops_t sd_sink_postgres;

/* A Flink FileSink's part files under DIR (and its bucket folders) that
 * are in progress or pending: hidden ".part-....inprogress.UUID" files,
 * not output until the checkpoint after them completes (sink_jsonl.c). */
int64_t sd_flink_files_in_progress(const char *dir);

/* Reader by name, or NULL. */
const sd_sink_ops_t *sd_sink_find(const char *name);

/* An open sink: the declaration's name and its reader. */
typedef struct sd_sink_s {
    char *name;
    int is_quarantine;
    const sd_sink_ops_t *ops;
    void *state;
    char *describe;   /* "sqlite db=... query=..." for messages */
} sd_sink_t;

sd_err_t sd_sink_open(const sd_sink_decl_t *decl, const sd_kvlist_t *vars, const sd_sink_ctx_t *ctx, sd_sink_t **out,
                      char *err, size_t errlen);
void sd_sink_close(sd_sink_t *s);
sd_err_t sd_sink_count(sd_sink_t *s, int missing_ok, int64_t *rows, char *err, size_t errlen);
sd_err_t sd_sink_scan(sd_sink_t *s, sd_sink_row_cb cb, void *opaque, char *err, size_t errlen);
/* Named columns of every row (see scan_cols); SD_ERR_SINK when the reader
 * has no such scan. */
sd_err_t sd_sink_scan_cols(sd_sink_t *s, const char *const *names, int n, sd_sink_cols_cb cb, void *opaque, char *err,
                           size_t errlen);
/* One JSON object line's named fields (dotted paths allowed; strings as
 * they are, numbers and booleans as text) passed to cb; writer stands in
 * for a missing sd_writer field (may be NULL). Returns cb's verdict (1:
 * stop), or -1 when the line is not a JSON object. */
int sd_sink_json_cols(const char *line, size_t len, const char *const *names, int n, const char *writer, sd_sink_cols_cb cb,
                      void *opaque);
/* The sink's newest commit as its own log names it (see newest_commit
 * above), or NULL. */
char *sd_sink_newest_commit(sd_sink_t *s);
/* The sink's commit mark (see mark above; the row count for readers
 * without one), or -1 when it cannot be read now. */
int64_t sd_sink_mark(sd_sink_t *s);
/* Records written and not yet visible (see pending above), or -1 when the
 * reader cannot tell or the sink cannot be read now. */
int64_t sd_sink_pending(sd_sink_t *s);
/* Records of aborted transactions the last scan passed over (see aborted
 * above), or -1 when the reader cannot tell. */
int64_t sd_sink_aborted(sd_sink_t *s);
/* Rows of the last scan a read_committed reader sees (see committed
 * above), or -1. */
int64_t sd_sink_committed(sd_sink_t *s);
/* Each partition's last stable offset and high watermark (see ends
 * above): how many, or -1. */
int sd_sink_ends(sd_sink_t *s, int nmax, int64_t *stable, int64_t *end);
/* Do the records open transactions hold carry needle (see open_holds
 * above)? 1, 0, or -1 when the reader cannot tell. */
int sd_sink_open_holds(sd_sink_t *s, const char *needle, const int64_t *from, int nfrom, int64_t budget_ms);

/* JSON-lines rows as a command prints them (sink_command.c; the Delta
 * reader's helper prints the same): what names the text in errors, a line
 * that is not a JSON object is SD_ERR_SINK naming its number. */
sd_err_t sd_sink_lines_scan(const char *text, size_t len, const char *what, const char *id_field, const char *writer_field,
                            const char *time_field, sd_sink_row_cb cb, void *opaque, char *err, size_t errlen);
sd_err_t sd_sink_lines_scan_cols(const char *text, size_t len, const char *what, const char *writer_field, const char *const *names,
                                 int n, sd_sink_cols_cb cb, void *opaque, char *err, size_t errlen);
sd_err_t sd_sink_lines_count(const char *text, size_t len, const char *what, int64_t *rows, char *err, size_t errlen);
/* Run a reader's command (command.h); its stdout in out. A non-zero exit,
 * a signal or the timeout is SD_ERR_SINK naming argv[0], how it ended and
 * its last stderr line. */
sd_err_t sd_sink_command_output(char *const *argv, const char *in, size_t inlen, int64_t timeout_ms, size_t max_out,
                                const char *stderr_path, sd_buf_t *out, char *err, size_t errlen);

/* The reader's notes (caller frees), or NULL. */
char *sd_sink_notes(sd_sink_t *s);
/* The files each commit added (see files); SD_ERR_SINK when the reader
 * keeps no such log. */
sd_err_t sd_sink_files(sd_sink_t *s, void (*cb)(void *opaque, int64_t commit, int64_t bytes), void *opaque, char *err, size_t errlen);

/* Extract a top-level string or integer field from a JSON object text
 * (simdjson, jsonscan.h: the whole text is validated). Writes into out (NUL-terminated) and returns its length, or -1
 * when the text is not an object or has no such field. */
int sd_sink_json_field(const char *json, size_t len, const char *field, char *out, size_t outlen);
/* The same, plus a time field (epoch ms as a number or a string of digits,
 * or an ISO-8601 string) into *t_ms (INT64_MIN when absent). */
int sd_sink_json_id_time(const char *json, size_t len, const char *field, char *out, size_t outlen,
                         const char *time_field, int64_t *t_ms);

#endif
