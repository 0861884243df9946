/* result.h - result models: the oracle for sinks that hold derived rows
 * (aggregates per event-time window) instead of the ids the harness sent.
 *
 * From the ledger (every event's event time, key fields, value, how many
 * copies the contract says must count, whether it was dropped as late or
 * sent more than once) the model computes the table a correct pipeline
 * must hold, and compares the sink's rows with it group by group. Every
 * group gets flags, each counted on its own:
 *
 *   correct           the value is the expected one (and, in append mode,
 *                     written once, after it was final)
 *   wrong_value       the last row's value differs from the expected one
 *   missing_group     no row for a group that must be there
 *   unexpected_group  a row for a group no counted event belongs to
 *   emitted_twice     append mode: more than one row for the group
 *   emitted_early     append mode: a row for a window the final watermark
 *                     has not closed (it could not be final yet)
 *   pending           append mode: an open window with no row yet, or a
 *                     window ending exactly at the final watermark (engines
 *                     differ on that boundary): not judged
 *
 * Windows: [start, start + size), a new one every slide (slide = size:
 * tumbling). Starts are aligned to the epoch, as Spark's window() does.
 * The final watermark is the newest event time among the counted events
 * minus the contract's delay; a window is closed when its end is at or
 * before it.
 *
 * Latest (upsert / MERGE / compacted-topic sinks): see sd_result_latest.
 *
 * sd_result_windows() and sd_result_latest() are pure functions of arrays (unit-tested on hand-made
 * ledgers in tests/unit/test_result.c). */
#ifndef SD_RESULT_H
#define SD_RESULT_H

#include <stddef.h>
#include <stdint.h>

#include "scenario.h" /* sd_join_type_t */

enum { SD_AGG_COUNT = 1, SD_AGG_SUM = 2, SD_AGG_MIN = 4, SD_AGG_MAX = 8, SD_AGG_AVG = 16 };
enum { SD_OUT_APPEND = 0, SD_OUT_UPDATE = 1, SD_OUT_COMPLETE = 2 };

typedef enum {
    SD_G_CORRECT = 0, SD_G_WRONG_VALUE, SD_G_MISSING, SD_G_UNEXPECTED, SD_G_TWICE, SD_G_EARLY, SD_G_PENDING,
    SD_G_CHANGED, /* model rows fields=: a row whose id is right and whose values are not what was sent */
    SD_G_NULL_MATCHED, /* model join (outer): a null-padded row for a row that did match */
    SD_G__COUNT
} sd_gbucket_t;
const char *sd_gbucket_name(sd_gbucket_t b);

typedef struct sd_result_event_s {
    int64_t seq;
    int64_t t_ms;        /* event time as sent */
    const char *keys;    /* key values joined by '\x1f' ("" without key fields) */
    double value;        /* value= field (0 when absent) */
    int has_value;       /* 0: the field is absent, null or not a number: left out of sum, min, max and avg (as SQL and
                          * Spark aggregate), still counted by count */
    int64_t ivalue;      /* the value, exactly, when it is written as an integer (is_int) */
    uint8_t is_int;
    uint32_t copies;     /* how many times it must count (0: dropped or quarantined) */
    uint32_t sent;       /* how many times the harness sent it */
    uint8_t late;        /* dropped by the contract as late */
    uint8_t wm_edge;     /* sent on the watermark's cut-off (1) or 1 ms inside it (2), when the newest event time sent was
                          * already that far ahead: an engine that takes an event at the watermark as late drops the first */
    const char *fields;  /* latest: the compared field values joined by '\x1f' */
    int64_t rank;        /* latest: the order that decides which event is the newest (event time or arrival) */
    int64_t arrival;     /* latest: the order it was sent in */
    uint8_t del;         /* latest: a tombstone for the key (keys is the message key) */
} sd_result_event_t;

typedef struct sd_result_row_s {
    int64_t start_ms;
    const char *keys;    /* as in sd_result_event_t */
    double v[5];         /* count, sum, min, max, avg (the ones in aggs) */
    uint8_t has[5];      /* 0: the column is null, absent or not a number */
    int64_t iv[5];       /* the value, exactly, where is_int[a] */
    uint8_t is_int[5];
    const char *writer;  /* a label for the row (may be NULL) */
    const char *fields;  /* latest: the compared columns joined by '\x1f' */
} sd_result_row_t;

typedef struct sd_result_conf_s {
    int64_t size_ms, slide_ms;
    int aggs;            /* SD_AGG_* bits */
    int output;          /* SD_OUT_* */
    int64_t final_wm;    /* INT64_MIN: nothing is closed */
    int64_t final_wm_gap; /* how far behind final_wm the final watermark of an engine that keeps one per partition
                           * (Flink) is (0: none): a window ending in that gap may be unwritten (pending) */
    int task_clock;      /* the engine's clock is per task (Kafka Streams' stream time: the newest event time the task
                          * read, its tasks splitting the keys in a way the harness does not see): a window closes when
                          * its task's newest event passes it, at least its own key's newest counted event, at most
                          * the newest of all; a window ending between the two is pending when unwritten */
    const char *key_names; /* "location,scan" for messages */
    const char *field_names; /* latest: "location,scan" */
    /* formats a seq as its id (may be NULL) */
    void (*fmt_id)(void *opaque, int64_t seq, char *out, size_t outlen);
    void *fmt_opaque;
} sd_result_conf_t;

typedef struct sd_result_group_s {
    int64_t start_ms;
    char *keys;
    unsigned flags;      /* 1 << sd_gbucket_t */
    char *detail;        /* expected vs actual, and the events that explain it */
} sd_result_group_t;

typedef struct sd_result_s {
    int64_t groups_expected, groups_observed, rows;
    int64_t n[SD_G__COUNT];        /* groups per flag */
    sd_result_group_t *anomalies;  /* every group with a flag other than correct */
    int64_t nanomalies;
} sd_result_t;

/* A value as a sink or an event writes it: 1 and *d for a JSON number
 * (*i and *is_int too when it is an integer that fits 64 bits), 0 for
 * anything else (null, text, nan). Integers are compared exactly; only
 * values written with a fraction or an exponent are floating point. */
int sd_result_num(const char *s, size_t len, double *d, int64_t *i, uint8_t *is_int);
/* Two written values the same? The same bytes, or the same number: two
 * integers exactly (of any size), an integer and a float only when the
 * float is exactly that integer, two floats when they are equal. */
int sd_result_same_value(const char *a, size_t al, const char *b, size_t bl);

/* Parse "count,sum" into SD_AGG_* bits; -1 on an unknown word. */
int sd_result_aggs(const char *list);
/* A window start as written by a sink: epoch ms, or ISO-8601. 0 on success. */
int sd_result_parse_start(const char *s, size_t len, int64_t *out);

/* latest: the final row per key. The expected row is the counted event
 * with the highest rank (event time, or arrival order) for that key (on
 * equal event times, the one sent last); the
 * sink must hold exactly one row per key whose fields equal that event's
 * (numbers compared as numbers). A key with no counted event is
 * unexpected; two rows for a key are emitted_twice. */
void sd_result_latest(const sd_result_conf_t *conf, const sd_result_event_t *ev, int64_t nev, const sd_result_row_t *rows,
                      int64_t nrows, sd_result_t *out);
void sd_result_windows(const sd_result_conf_t *conf, const sd_result_event_t *ev, int64_t nev, const sd_result_row_t *rows,
                       int64_t nrows, sd_result_t *out);
void sd_result_free(sd_result_t *r);

/* join: the rows a stream-stream join must write (see result_join.c).
 * Left events are the scans the contract counts (each once), right events
 * the deliveries sent; a pair matches when the keys are equal and
 * right.t - left.t lies in [lower_ms, upper_ms]. */
/* SD_JOIN_ASOF: a stream-table join, each left event joined with the
 * newest right event of its key at or before its event time (a table with
 * history, Kafka Streams' versioned store), or a null row when there is
 * none; one row per left event, final when it is read */
typedef struct sd_join_event_s {
    int64_t seq;
    int64_t t_ms;
    const char *key;
    int maybe_late;        /* it reached Kafka after events that put a watermark past its time: an engine may
                              have dropped it as late or joined it (the arrival's race); its rows are pending */
    int64_t arrival;       /* as-of: its place in the hand-over order of both sources (first copy) */
} sd_join_event_t;
typedef struct sd_join_row_s {
    int64_t left, right;   /* seqs; -1 null, -2 a value that is no id of the run */
    const char *writer;
} sd_join_row_t;
typedef struct sd_join_conf_s {
    int type;              /* SD_JOIN_* */
    int64_t lower_ms, upper_ms;
    int64_t grace_ms;      /* as-of: a scan no newer scan of its key passed by this much may be held back (absent: pending) */
    int64_t final_wm;      /* the final watermark of an engine that keeps one per source (Spark); INT64_MIN: nothing is final */
    int64_t final_wm_low;  /* of one that keeps one per partition (Flink): at most final_wm; between the two, pending */
    void (*fmt_left)(void *opaque, int64_t seq, char *out, size_t outlen);
    void (*fmt_right)(void *opaque, int64_t seq, char *out, size_t outlen);
    void *fmt_opaque;
} sd_join_conf_t;
/* A join's final watermark: the older of the two sources' newest event
 * times (a global watermark is the minimum over its inputs) less the
 * delay; INT64_MIN when either source holds no event yet. */
int64_t sd_join_final_wm(int64_t left_newest, int64_t right_newest, int64_t delay_ms);
/* Groups are keyed "<left id>\x1f<right id>" ("null" for a null side). */
void sd_result_join(const sd_join_conf_t *conf, const sd_join_event_t *left, int64_t nl, const sd_join_event_t *right, int64_t nr,
                    const sd_join_row_t *rows, int64_t nrows, sd_result_t *out);

/* The bounded-state rule on one query's batches in order: read[i] the rows
 * read up to and including batch i (cumulative), state[i] the state rows
 * after it. The half-way batch h is the first with read[h] >= read[n-1]/2;
 * growth = state[n-1] - state[h]; unbounded when growth exceeds 10% of the
 * rows read after h. Judged only with at least 4 batches and 100 rows, 3
 * batches after h, and a quarter of the rows read after h (a second half
 * that is one batch's jump says nothing about eviction). */
typedef struct sd_state_rule_s {
    int judged, unbounded;
    int64_t peak, half, final, growth, read_after;
} sd_state_rule_t;
void sd_result_state_rule(const int64_t *read, const int64_t *state, int64_t n, sd_state_rule_t *out);

#endif
