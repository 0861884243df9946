/* events.h - the events a run sends: the seeded parcel-scan generator, the
 * replay of a user's JSONL log, and the ledger id scheme.
 *
 * Event seq of seed s is a pure function of (s, tag, seq): the generator is
 * counter-based, so a replay regenerates the exact bytes of any event
 * without storing payloads, and the same seed and tag give the same events
 * byte for byte.
 *
 * Ledger ids are "<tag>-<seq>" (tag: lowercase hex, seq: decimal without
 * leading zeros). sd_events_id_parse() maps an id back to seq in O(length)
 * with no table lookup, which is what makes reconciliation linear. */
#ifndef SD_EVENTS_H
#define SD_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "util.h"

/* Where events come from: the parcel-scan generator or a JSONL log. */
typedef enum { SD_EVENTS_PARCEL = 0, SD_EVENTS_LOG } sd_events_kind_t;

typedef struct sd_events_s sd_events_t;

typedef struct sd_events_conf_s {
    sd_events_kind_t kind;
    uint64_t seed;
    const char *tag;       /* run tag, [0-9a-z]+ */
    int64_t start_ms;      /* event time of seq 0 */
    int64_t step_ms;       /* event time distance between consecutive events */
    int parcels, locations;
    const char *log_path;  /* SD_EVENTS_LOG */
    const char *id_field;  /* the payload field that carries the id */
    const char *id_infix;  /* ids are "<tag>-<infix><seq>" (NULL: none; "d" for a deliveries log) */
    const char *time_field;
    /* `deliveries`: a delivery for share percent of the scans, min_ms to
     * max_ms after the scan's event time (0 share: none) */
    int delivery_share;
    int64_t delivery_min_ms, delivery_max_ms;
    int delivery_orphans;         /* percent of the deliveries for a parcel never scanned */
    /* edges (`events ... edges=PCT`; 0: none): events put exactly on an
     * edge the drill declares, or 1 ms to either side of it. Scans: the
     * three before each window boundary (a multiple of edge_slide_ms; 0:
     * no windows) move to it, 1 ms before and 1 ms after; deliveries
     * (edge_join): edge_share percent have a delay from their scan at a
     * bound of the join range [edge_lower_ms, edge_upper_ms]; ties: a scan
     * takes the parcel, location and event time of the scan before it
     * (one key, two events, equal event times). */
    int edge_share;
    int edge_ties;                /* latest by event time: edge_share percent of the scans tie with the one before */
    int64_t edge_slide_ms;
    int edge_join;
    int64_t edge_lower_ms, edge_upper_ms;
} sd_events_conf_t;

/* The edge an event probes. */
typedef enum { SD_EDGE_NONE = 0, SD_EDGE_WINDOW, SD_EDGE_JOIN_LOWER, SD_EDGE_JOIN_UPPER, SD_EDGE_TIE, SD_EDGE_WATERMARK } sd_edge_kind_t;

typedef struct sd_edge_s {
    sd_edge_kind_t kind;
    int offset_ms;     /* -1, 0 (exactly on it) or +1 */
    int64_t at_ms;     /* the edge: a window boundary or a tie's event time, or a join bound (a delay) */
} sd_edge_t;

/* "window boundary", "join lower bound", "join upper bound", "equal event time" */
const char *sd_edge_name(sd_edge_kind_t kind);

sd_err_t sd_events_open(const sd_events_conf_t *conf, sd_events_t **out, char *err, size_t errlen);
void sd_events_close(sd_events_t *ev);

/* Number of events available (INT64_MAX for the generator). */
int64_t sd_events_available(const sd_events_t *ev);

/* Write the ledger id of seq into out (at least 48 bytes). Returns its length. */
size_t sd_events_id(const sd_events_t *ev, int64_t seq, char *out);
/* Parse an id of this run's tag. Returns 0 and sets *seq, -1 if it is not one. */
int sd_events_id_parse(const char *tag, size_t taglen, const char *s, size_t len, int64_t *seq);

/* Render event seq. If time_ms != INT64_MIN the event time is replaced by
 * it (late and out-of-order events). payload and key are reset first; key
 * is left empty when the event has none. *event_time_ms gets the event time. */
sd_err_t sd_events_render(const sd_events_t *ev, int64_t seq, int64_t time_ms, sd_buf_t *payload, sd_buf_t *key,
                          int64_t *event_time_ms, char *err, size_t errlen);
/* The same, appended to payload and key (two buffers): what the sending
 * loop uses to write an event where it is staged, with no copy. */
sd_err_t sd_events_render_append(const sd_events_t *ev, int64_t seq, int64_t time_ms, sd_buf_t *payload, sd_buf_t *key,
                                 int64_t *event_time_ms, char *err, size_t errlen);

/* The second, correlated generator (`deliveries`): scan seq of the
 * parcel-scan generator has a delivery when a hash of (seed, seq) falls in
 * the share; it is {"delivery_id":"<tag>-d<seq>","parcel_id":<the scan's>,
 * "delivered_at":<the scan's event time + a seeded delay>,"courier":"C<nn>"}
 * keyed by the parcel. Returns 1 and renders it, 0 when the scan has none. */
int sd_events_delivery(const sd_events_t *ev, int64_t seq, int64_t scan_time_ms, sd_buf_t *payload, sd_buf_t *key,
                       int64_t *event_time_ms);
/* The delivery of scan seq at event time t, whatever the share says, keyed
 * by the scan's parcel (`inject edges=`: a delivery placed on a bound). */
void sd_events_delivery_at(const sd_events_t *ev, int64_t seq, int64_t t, sd_buf_t *payload, sd_buf_t *key);
/* The delivery id of scan seq into out (at least 48 bytes); its length. */
size_t sd_events_delivery_id(const sd_events_t *ev, int64_t seq, char *out);
/* Parse a delivery id of this run's tag: 0 and *seq (the scan's), -1 if it is not one. */
int sd_events_delivery_id_parse(const char *tag, size_t taglen, const char *s, size_t len, int64_t *seq);

/* What a log's time strings said beyond their instant: how many had no
 * offset from UTC (taken as UTC) and how many could not be read as a time
 * at all (such an event has none), each with its first line. */
typedef struct sd_events_times_s {
    int64_t naive, naive_line;
    int64_t unread, unread_line;
} sd_events_times_t;
sd_events_times_t sd_events_time_notes(const sd_events_t *ev);

/* Natural event time of seq (no rendering): an edge's, when it probes one. */
int64_t sd_events_time(const sd_events_t *ev, int64_t seq);

/* The edge scan seq probes (1, *out set) or none (0). */
int sd_events_edge(const sd_events_t *ev, int64_t seq, sd_edge_t *out);
/* The edge the delivery of scan seq probes (1) or none (0: no delivery,
 * or not on an edge). */
int sd_events_delivery_edge(const sd_events_t *ev, int64_t seq, sd_edge_t *out);
/* Does scan seq have a delivery of the generator's (share=)? */
int sd_events_has_delivery(const sd_events_t *ev, int64_t seq);

/* Malformed kinds `inject malformed=N` cycles through. */
typedef enum {
    SD_MAL_TRUNCATED = 0, SD_MAL_NOT_JSON, SD_MAL_MISSING_ID, SD_MAL_WRONG_TYPE, SD_MAL_EMPTY,
    SD_MAL_INVALID_UTF8, SD_MAL_OVERSIZED, SD_MAL_NULL_VALUE, SD_MAL_DUPLICATE_KEYS,
    /* the registry wire format's (events format=avro): the record encoded, then broken */
    SD_MAL_BAD_MAGIC, SD_MAL_UNKNOWN_SCHEMA, SD_MAL_TRUNCATED_RECORD, SD_MAL_FOREIGN_SCHEMA,
    /* format=json-schema's own: framed and JSON, but not valid by the schema */
    SD_MAL_SCHEMA_VIOLATION,
    SD_MAL__COUNT
} sd_malformed_t;
/* The kinds that break JSON text, before the wire format's. */
#define SD_MAL_JSON_COUNT SD_MAL_BAD_MAGIC

#endif
