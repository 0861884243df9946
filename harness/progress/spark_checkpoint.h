/* spark_checkpoint.h - reads a Spark Structured Streaming checkpoint while the query
 * runs, to find batches without the query's help.
 *
 * Spark writes offsets/N when it plans micro-batch N (the source offsets
 * the batch will read up to) and commits/N when the batch is done. Batch N
 * is in flight while offsets/N exists and commits/N does not; a query that
 * restarts on the same checkpoint re-runs that batch with the same offsets.
 * This reader lists the two folders (only file names that are numbers:
 * Spark's temporary and .crc files are ignored) and parses the Kafka source
 * offsets of the run's topic from offsets/N. */
#ifndef SD_SPARK_H
#define SD_SPARK_H

#include <stdint.h>

#include "err.h"

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

/* Look at the checkpoint now. */
void sd_spark_poll(sd_spark_t *s, sd_spark_state_t *out);

/* End offsets of batch n for the run's topic: offsets[p] = next offset to
 * read in partition p after the batch. Returns 0, or -1 if offsets/n cannot
 * be read or does not name the topic. */
int sd_spark_offsets(sd_spark_t *s, int64_t n, int64_t *offsets);
/* Records batch n reads: its end offsets minus the previous batch's (or
 * minus zero for the first batch). -1 if unknown. */
int64_t sd_spark_batch_rows(sd_spark_t *s, int64_t n);
/* "P:O,P:O,..." for batch n (caller frees), or NULL. */
char *sd_spark_offsets_text(sd_spark_t *s, int64_t n);

#endif
