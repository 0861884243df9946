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

typedef struct sd_observe_s {
    int64_t nseq;
    uint32_t *copies;           /* per seq, saturating */
    int64_t rows;
    int64_t unexpected_rows;
    sd_unexpected_t *unexpected; /* distinct unexpected ids (up to a cap) */
    int64_t n_unexpected;
    int64_t unexpected_unique;  /* distinct, including those past the cap */
    void *index;                /* private: hash of unexpected ids */
    /* first write time per seq, in ms after base_ms (UINT32_MAX: none); only
     * when the sink gives write times, NULL otherwise */
    uint32_t *first_t;
    int64_t base_ms;
    int64_t timed_rows;
} sd_observe_t;

/* Scan sink; ids of tag map to seq < nseq. Write times are kept relative
 * to base_ms (the run's start). */
sd_err_t sd_observe_sink(sd_sink_t *sink, const char *tag, int64_t nseq, int64_t base_ms, sd_observe_t *out,
                         char *err, size_t errlen);
void sd_observe_free(sd_observe_t *o);

/* Classify one id into o (used by sd_observe_sink and by benchmarks): its
 * ledger sequence number, or -1 when it is not one of this run's ids. */
int64_t sd_observe_row(sd_observe_t *o, const char *tag, size_t taglen, const char *id, size_t idlen,
                       const char *writer, size_t wlen);

/* Formats one copy's writer into out: the sink's label and, when the sink
 * knows it, the time the row was written (INT64_MIN otherwise). */
typedef void (*sd_observe_fmt_cb)(void *opaque, const char *label, size_t len, int64_t t_ms, sd_buf_t *out);

/* Second pass: writers of the n seqs in want (sorted ascending). out[i]
 * gets a malloc'd list separated by "; ", in sink order. fmt may be NULL
 * (the label as is). */
sd_err_t sd_observe_writers(sd_sink_t *sink, const char *tag, const int64_t *want, int64_t n, char **out,
                            sd_observe_fmt_cb fmt, void *fmt_opaque, char *err, size_t errlen);

#endif
