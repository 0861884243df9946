/* spark_checkpoint.h - reads a Spark Structured Streaming checkpoint while the query
 * runs, to find batches without the query's help.
 *
 * Spark writes offsets/N when it plans micro-batch N (the source offsets
 * the batch will read up to) and commits/N when the batch is done. Batch N
 * is in flight while offsets/N exists and commits/N does not; a query that
 * restarts on the same checkpoint re-runs that batch with the same offsets.
 * This reader lists the two folders (only file names that are numbers:
 * Spark's temporary and .crc files are ignored) and parses the Kafka source
 * offsets of the run's topic from offsets/N.
 *
 * The checkpoint is the pipeline's, not the harness's: a file in it is read
 * only when it is a regular file (not through a link, never blocking on a
 * FIFO) of at most SD_SPARK_FILE_MAX bytes, and a batch id must be below
 * SD_CHECKPOINT_ID_MAX. A checkpoint that breaks these is damaged: the
 * reader says so (sd_spark_damaged) and the run cannot be judged, rather
 * than hang, crash or step through a billion batch ids. A file that is
 * absent or does not parse (Spark writing it, a drill's `damage`) is no
 * damage: its batch's offsets are unknown. */
#ifndef SD_SPARK_H
#define SD_SPARK_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* The largest batch or checkpoint id a checkpoint may name (a batch a
 * microsecond for thirty years), so that id + 1 never overflows. */
#define SD_CHECKPOINT_ID_MAX 1000000000000000LL
/* The most bytes of one offsets/N or commits/N file. */
#define SD_SPARK_FILE_MAX (4u << 20)

typedef struct sd_spark_s sd_spark_t;

typedef struct sd_spark_state_s {
    int64_t planned;        /* newest offsets/N, -1 if none */
    int64_t committed;      /* newest commits/N, -1 if none */
    int64_t planned_mtime;  /* epoch ms of offsets/<planned>, 0 if unknown */
    int64_t committed_mtime;
} sd_spark_state_t;

sd_err_t sd_spark_open(const char *checkpoint, const char *topic, int partitions, sd_spark_t **out, char *err,
                       size_t errlen);
void sd_spark_close(sd_spark_t *s);
/* A second topic the query reads (`deliveries`): its offsets join the
 * commit's as TOPIC:P:O. */
void sd_spark_set_side(sd_spark_t *s, const char *topic, int partitions);

/* Look at the checkpoint now. SD_ERR_CHECKPOINT (err names the file and
 * why) once it is damaged. */
sd_err_t sd_spark_poll(sd_spark_t *s, sd_spark_state_t *out, char *err, size_t errlen);
/* The batch ids of offsets/ (planned, which 0) or commits/ (1) that the
 * last poll found, in (after, upto], into ids oldest first: the newest max
 * of them, and how many. A gap in the ids is crossed in one step. */
int sd_spark_ids(const sd_spark_t *s, int which, int64_t after, int64_t upto, int64_t *ids, int max);
/* Why the checkpoint is damaged ("offsets/7: a FIFO, not a regular
 * file"), or NULL while it is not. */
const char *sd_spark_damaged(const sd_spark_t *s);

/* End offsets of batch n for the run's topic: offsets[p] = next offset to
 * read in partition p after the batch. Returns 0, or -1 if offsets/n cannot
 * be read or does not name the topic. */
int sd_spark_offsets(sd_spark_t *s, int64_t n, int64_t *offsets);
/* Records batch n reads: its end offsets minus the previous batch's (or
 * minus zero for the first batch). -1 if unknown. */
int64_t sd_spark_batch_rows(sd_spark_t *s, int64_t n);
/* "P:O,P:O,..." for batch n (caller frees), or NULL. */
char *sd_spark_offsets_text(sd_spark_t *s, int64_t n);

/* The offsets of topic's partitions in the text of an offsets/N file
 * ("v1", the batch's metadata, then a line of JSON per source): 0 with
 * offsets[p] set (0 for a partition it does not name), -1 when the text
 * names no such topic or does not parse. */
int sd_spark_parse_offsets(const char *text, size_t len, const char *topic, int partitions, int64_t *offsets);
/* The watermark batch n runs with, as Spark recorded it (batchWatermarkMs
 * in the metadata line of offsets/n; 0 before any): 0 and *wm_ms, or -1
 * when it cannot be read. The runbook shows it; no verdict rests on it. */
int sd_spark_watermark(sd_spark_t *s, int64_t n, int64_t *wm_ms);
int sd_spark_parse_watermark(const char *text, size_t len, int64_t *wm_ms);
/* Every planned batch's end offsets in the run's topic, read once at the
 * first call (the newest 4096 batches): *ids oldest first, *ends the
 * partitions' ends of batch i at i * partitions (a row of -1 when its
 * offsets/N cannot be read). Returns the number of batches. */
int sd_spark_batch_ends(sd_spark_t *s, const int64_t **ids, const int64_t **ends);
/* A checkpoint's numbered name: the id of "N" (prefix "") or "chk-N"
 * (prefix "chk-"); -1 when the name is not one (Spark's temporary and .crc
 * files), -2 when its number is past SD_CHECKPOINT_ID_MAX. */
int64_t sd_checkpoint_id(const char *name, const char *prefix);

#endif
