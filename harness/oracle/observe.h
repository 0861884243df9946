/* observe.h - reads a sink in full and turns its rows into per-id copy
 * counts, the input of the reconciler.
 *
 * Row ids of this run parse straight to their seq (events.h), so counting
 * is one array increment per row. Rows whose id does not parse are kept as
 * "unexpected" in a small string table (capped; beyond the cap they are
 * only counted). A second, optional pass collects the writer labels of a
 * chosen set of ids (the anomalies), for forensics. */
#ifndef SD_OBSERVE_H
#define SD_OBSERVE_H

#include <stdint.h>

#include "err.h"
#include "sink.h"
#include "util.h"

typedef struct sd_unexpected_s {
    char *raw;                  /* the id's bytes as the sink gave them */
    size_t rawlen;
    char *id;        /* "(null)" for rows without an id */
    int64_t copies;
    char *writers;   /* first few writer labels, separated by "; " */
} sd_unexpected_t;

#define SD_OBSERVE_PENDING 16

typedef struct sd_observe_s {
    int64_t nseq;
    sd_counts_t copies;         /* per seq: one byte, exact beyond through a map */
    int64_t rows;
    int64_t unexpected_rows;
    sd_unexpected_t *unexpected; /* distinct unexpected ids (up to a cap) */
    int64_t n_unexpected;
    int64_t unexpected_unique;  /* distinct, including those past the cap */
    void *index;                /* private: hash of unexpected ids */
    /* end-to-end latency per seq, in ms: the first write time the sink
     * gives (relative to base_ms, 0 before it) minus when the event was
     * first handed to Kafka (sent, relative to base_ms), 0 when it was
     * written before; only when the sink gives write times and the caller
     * gave sent, NULL otherwise. Three bytes a seq (little-endian), exact
     * to 4.6 hours: SD_LAT_BIG means the value is in lat_big, SD_LAT_NONE
     * not seen with a write time. */
    uint8_t *lat;
    sd_i64map_t lat_big;
    const sd_stamps_t *sent;
    int64_t base_ms;
    int64_t timed_rows;
    /* private: seqs of the last rows, counted in copies once
     * SD_OBSERVE_PENDING more have come (sd_observe_flush counts them) */
    int64_t pending[SD_OBSERVE_PENDING];
    unsigned npending;
} sd_observe_t;

#define SD_LAT_BIG 0xfffffe
#define SD_LAT_NONE 0xffffff
/* A latency cell as stored (SD_LAT_NONE when none). */
static inline uint32_t sd_observe_lat_cell(const sd_observe_t *o, int64_t seq) {
    const uint8_t *p = o->lat + 3 * seq;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
}
/* The latency of seq (see lat), or -1 when it has none. */
int64_t sd_observe_latency(const sd_observe_t *o, int64_t seq);

/* What sd_observe_bound changed. */
typedef struct sd_observe_bound_s {
    int64_t rows_late;    /* rows whose write time a look of the harness contradicts */
    int64_t max_gap_ms;   /* the most by which one did */
    int64_t copied;       /* rows re-timed because the stamps are no write times (below), else 0 */
    int64_t timed;        /* rows with a stamp */
} sd_observe_bound_t;

/* A write time is the pipeline's claim; what the harness saw of the sink
 * is its own looks at the row count: sample i at t[i] (wall ms) counted
 * rows[i], and the look before it (looked[i], -1 unknown: then the sample
 * before) counted other rows; oldest first, n of them. The final read at
 * read_ms saw every row; last_look_ms is the look before it. Rows are
 * taken as readable in the order of their write times (those of one
 * millisecond in no order, the least rank for each), so the k-th was not
 * readable at a look that counted fewer than k rows. A row whose write
 * time lies before such a look was first readable when the next look
 * counted it: its latency is taken from then (a row stamped when inserted
 * and made visible by a commit 20 s later has a latency of 20 s).
 * Stamps that are no write times at all (SD_BOUND_COPIED_SHARE percent of
 * the rows, at least 10, stamped within SD_BOUND_COPIED_MS of their own
 * send or before it: the input record's time copied to the output, as
 * Kafka Streams and Quix Streams do, or an event time) still give the
 * order; every row's time is then the look that first counted it. */
#define SD_BOUND_COPIED_MS 2
#define SD_BOUND_COPIED_SHARE 90
void sd_observe_bound(sd_observe_t *o, const int64_t *t, const int64_t *rows, const int64_t *looked, int64_t n, int64_t last_look_ms,
                      int64_t read_ms, sd_observe_bound_t *out);

/* Scan sink; ids of tag map to seq < nseq. With sent (per seq: when
 * first handed to Kafka, ms after base_ms, UINT32_MAX not yet), the
 * latencies of the rows that give write times. */
sd_err_t sd_observe_sink(sd_sink_t *sink, const char *tag, int64_t nseq, int64_t base_ms, const sd_stamps_t *sent,
                         sd_observe_t *out, char *err, size_t errlen);
void sd_observe_free(sd_observe_t *o);
/* Take out of o's unexpected ids those `known` claims (nonzero), with
 * their rows; after it no more rows may be added to o. */
void sd_observe_claim_unexpected(sd_observe_t *o, int (*known)(void *opaque, const sd_unexpected_t *u), void *opaque);
/* Count the rows sd_observe_row has not counted in copies yet. */
void sd_observe_flush(sd_observe_t *o);

/* Classify one id into o (used by sd_observe_sink and by benchmarks): its
 * ledger sequence number, or -1 when it is not one of this run's ids. Its
 * count reaches o->copies after sd_observe_flush (sd_observe_sink flushes
 * before it returns). */
int64_t sd_observe_row(sd_observe_t *o, const char *tag, size_t taglen, const char *id, size_t idlen,
                       const char *writer, size_t wlen);

/* Formats one copy's writer into out: the sink's label and, when the sink
 * knows it, the time the row was written (INT64_MIN otherwise). */
typedef void (*sd_observe_fmt_cb)(void *opaque, const char *label, size_t len, int64_t t_ms, sd_buf_t *out);

/* A batch as the run recorded it: incarnation, id, and when it began and
 * ended by the harness's clock. */
typedef struct {
    int inc;
    int64_t batch, begin_ms, end_ms;
} sd_batch_span_t;

/* A write time read on another process's clock is matched to a batch with
 * this much slack either side. */
#define SD_OBSERVE_WRITE_SLACK_MS 5

/* The batch a row written at t_ms belongs to: of the n spans (any order)
 * whose [begin_ms, end_ms], widened by SD_OBSERVE_WRITE_SLACK_MS either
 * side, holds t_ms, the one that began last (a batch that began later
 * holds the writes its predecessor's end overlaps); NULL when none does. */
const sd_batch_span_t *sd_observe_batch_at(const sd_batch_span_t *v, int n, int64_t t_ms);

/* Second pass: writers of the n seqs in want (sorted ascending). out[i]
 * gets a malloc'd list separated by "; ", in sink order. fmt may be NULL
 * (the label as is). */
sd_err_t sd_observe_writers(sd_sink_t *sink, const char *tag, const int64_t *want, int64_t n, char **out,
                            sd_observe_fmt_cb fmt, void *fmt_opaque, char *err, size_t errlen);

#endif
