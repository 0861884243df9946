/* recon.h - the oracle: puts every ledger event into exactly one bucket per
 * sink and turns the counts into checks and a verdict.
 *
 * Buckets, for the target sink, by the event's expected disposition:
 *   target      delivered once | duplicated (n copies) | lost |
 *               missing_copies (fewer copies than sent, under
 *               `duplicates=keep`) | not_yet_consumed (missing, but the
 *               pipeline has not consumed that far: not its fault yet)
 *   dropped     late_dropped | late_leaked (or malformed_leaked; aborted_leaked
 *               for an event of an aborted transaction) | late_maybe_kept (a
 *               late event the engine had not seen as late, in the target)
 *   quarantine  quarantined | leaked into the target | vanished
 * and every target row whose id maps to no ledger event is unexpected.
 * The comparison is by id set, never by counts alone: a loss and a
 * duplicate that cancel out in the row count are both reported.
 *
 * sd_recon_classify() is a pure function of arrays (unit-tested on
 * hand-made ledgers); sd_recon_checks() derives the checks from the
 * contract's profile and the scenario's `expect` lines. */
#ifndef SD_RECON_H
#define SD_RECON_H

#include <stdint.h>

#include "err.h"
#include "scenario.h"
#include "util.h"

/* Per-seq expected disposition; SD_RECON_UNSENT for ids never acknowledged. */
#define SD_RECON_UNSENT 255

typedef enum { SD_KIND_VALID = 0, SD_KIND_LATE, SD_KIND_MALFORMED, SD_KIND_OUT_OF_ORDER, SD_KIND_DELETE, SD_KIND_ABORTED, SD_KIND__COUNT } sd_kind_t;

/* What the harness knows of each seq, in one byte: its expected
 * disposition (bits 0-1, 3 for SD_RECON_UNSENT), its kind (bits 2-4) and
 * how many messages were sent with its id (bits 5-7, saturating at 7: from
 * there the exact number is kept in a map beside it). Ten million events
 * cost 10 MB, held for the whole run. Room for seqs is made with
 * sd_seqs_reserve; seqs are added in order from 0. */
#define SD_SEQS_MANY 7
typedef struct sd_seqs_s {
    uint8_t *b;
    int64_t cap;
    sd_i64map_t many;        /* the sends of seqs sent SD_SEQS_MANY times or more */
} sd_seqs_t;
void sd_seqs_reserve(sd_seqs_t *s, int64_t n);
static inline void sd_seqs_set(sd_seqs_t *s, int64_t seq, int kind, int disp) {
    s->b[seq] = (uint8_t)((disp == SD_RECON_UNSENT ? 3 : disp) | kind << 2);
}
/* A new kind and disposition for a seq already sent, its sends kept. */
static inline void sd_seqs_recast(sd_seqs_t *s, int64_t seq, int kind, int disp) {
    s->b[seq] = (uint8_t)((s->b[seq] & 0xE0) | (disp == SD_RECON_UNSENT ? 3 : disp) | kind << 2);
}
static inline int sd_seqs_disp(const sd_seqs_t *s, int64_t seq) {
    int d = s->b[seq] & 3;
    return d == 3 ? SD_RECON_UNSENT : d;
}
static inline int sd_seqs_kind(const sd_seqs_t *s, int64_t seq) { return s->b[seq] >> 2 & 7; }
static inline uint32_t sd_seqs_sends(const sd_seqs_t *s, int64_t seq) {
    unsigned c = s->b[seq] >> 5;
    return c < SD_SEQS_MANY ? c : sd_i64map_get(&s->many, seq);
}
/* The copies of seq the target must hold: one, or with `contract
 * duplicates=keep` (keep) one for each message sent with its id, at least
 * one. */
static inline uint32_t sd_seqs_copies(const sd_seqs_t *s, int64_t seq, int keep) {
    uint32_t n = keep ? sd_seqs_sends(s, seq) : 1;
    return n ? n : 1;
}
void sd_seqs_unsend(sd_seqs_t *s, int64_t seq);  /* the seq's disposition becomes SD_RECON_UNSENT */
void sd_seqs_add_send(sd_seqs_t *s, int64_t seq, int delta); /* delta +1 or -1; the count stays >= 0 */
void sd_seqs_free(sd_seqs_t *s);

typedef struct sd_recon_ledger_s {
    int64_t nseq;
    const sd_seqs_t *seqs;   /* disposition, kind and sends per seq */
    const uint8_t *trimmed;  /* per seq: cannot be re-read from the broker (may be NULL) */
    const uint8_t *pending;  /* per seq: a message of it lies past what the pipeline says it
                              * has consumed (may be NULL): a missing id is not_yet_consumed */
    int expect_sends;        /* the target must hold as many copies of an id as the harness sent
                              * messages with it (`contract duplicates=keep`: the pipeline must
                              * pass input duplicates on); 0: one each */
    const uint8_t *vanished; /* per seq: Kafka acknowledged it and no longer holds it (acked_lost; may be NULL) */
    const uint8_t *maybe_late; /* per seq: a late event the engine's own watermark had not passed when it read it
                                * (run_late.c; may be NULL): in the target it is no leak (late_maybe_kept) */
    int by_model;            /* the target holds derived rows judged by a result model
                              * (result.h): its ids are not judged, target may be NULL */
} sd_recon_ledger_t;

typedef enum {
    SD_B_DELIVERED = 0, SD_B_DUPLICATED, SD_B_LOST, SD_B_UNJUDGEABLE, SD_B_LATE_DROPPED, SD_B_LATE_LEAKED,
    SD_B_MALFORMED_LEAKED, SD_B_QUARANTINED, SD_B_MALFORMED_VANISHED, SD_B_LATE_VANISHED, SD_B_VALID_QUARANTINED,
    SD_B_MISSING_COPIES, SD_B_NOT_YET_CONSUMED, SD_B_ABORTED_LEAKED, SD_B_ACKED_LOST,
    SD_B__COUNT
} sd_bucket_t;
const char *sd_bucket_name(sd_bucket_t b);

/* Every count of counts.h, a field each. */
typedef struct sd_recon_counts_s {
#define SD_COUNT_FIELD(name, kind, grows, meaning) int64_t name;
    SD_COUNTS(SD_COUNT_FIELD)
#undef SD_COUNT_FIELD
} sd_recon_counts_t;

/* Count by canonical name (see sd_scenario_count_names), -1 if unknown. */
int64_t sd_recon_count_get(const sd_recon_counts_t *c, const char *name, int *found);

/* An id list per bucket (only anomalies are listed; delivered ids are not). */
typedef struct sd_recon_list_s {
    int64_t *seq;
    uint32_t *copies;
    int64_t n, cap;
} sd_recon_list_t;

typedef struct sd_recon_result_s {
    sd_recon_counts_t counts;
    sd_recon_list_t lists[SD_B__COUNT];
} sd_recon_result_t;

/* Classify. target[seq] and quarantine[seq] are copy counts (quarantine may
 * be NULL when no quarantine sink is declared). unexpected_rows and
 * unexpected_unique describe target rows whose id mapped to nothing.
 * Fills every count that the sinks decide; produced, late_sent, ... are the
 * caller's (ledger totals). */
void sd_recon_classify(const sd_recon_ledger_t *l, const sd_counts_t *target, const sd_counts_t *quarantine,
                       int64_t target_rows, int64_t unexpected_rows, int64_t unexpected_unique,
                       sd_recon_result_t *out);
void sd_recon_result_free(sd_recon_result_t *r);

typedef struct sd_check_s {
    char *name;
    int pass;
    char *expected;
    char *actual;
    char *detail;
    int settled;    /* failed on what no further writing can undo: a count that only grows (copies, leaks, unexpected
                     * rows, crashes) already past its bound; such a check fails the run even when the run also ended
                     * inconclusive (a pipeline that had not caught up may still write what is missing, never unwrite) */
} sd_check_t;

typedef struct sd_checks_s {
    sd_check_t *v;
    int n;
    /* what could not be judged, for the report */
    char **not_judged;
    int n_not_judged;
    /* expectations on figures the run could not measure (state bounds of a
     * pipeline that reported no state, or a drill too short for the rule):
     * neither passed nor failed, they make the run inconclusive */
    int unmeasured;
    char unmeasured_why[512];
} sd_checks_t;

/* What a sink is judged by: its ids, or a result model's groups. */
typedef enum {
    SD_JUDGE_IDS = 0,            /* the ids the ledger sent */
    SD_JUDGE_WINDOWS_APPEND,     /* windows written once, when final */
    SD_JUDGE_WINDOWS_UPDATE,     /* windows rewritten (update or complete output): the last row counts */
    SD_JUDGE_LATEST,             /* one row per key, its newest event's */
    SD_JUDGE_ROWS,               /* the ids, and each row's fields (model rows fields=) */
    SD_JUDGE_JOIN                /* a join's rows */
} sd_judged_t;
/* Judged by groups (a result model other than rows), not by ids. */
#define SD_JUDGE_BY_GROUPS(m) ((m) != SD_JUDGE_IDS && (m) != SD_JUDGE_ROWS)

/* Context the checks need beyond the counts. */
typedef struct sd_recon_ctx_s {
    sd_profile_t profile;
    int has_quarantine_sink;
    int malformed_to_quarantine;  /* contract malformed=quarantine */
    int keep_duplicates;          /* contract duplicates=keep: copies are counted (missing_copies) */
    sd_judged_t model;            /* what the sink is judged by */
    const char *group_detail[9];  /* per sd_gbucket_t: the first groups of that bucket, for details */
    const char *bounds_why;       /* why the state counts are -1 (run_bounds.c), or NULL */
    const char *health_why;      /* why an operational health figure is missing (health.c) */
    const char *bounds_detail;
    const char *latency_why;      /* why latency was not measured (its counts are -1), or NULL */
    const char *uncommitted_why;  /* the sink's rows are all of aborted or open transactions (read read_uncommitted): what it read, or NULL */    /* what the state figures rest on, for a failed state check, or NULL */
    const sd_step_t *const *expects;  /* the scenario's expect steps */
    int nexpects;
    /* sample ids per bucket for check details: fmt_id(seq) */
    void (*fmt_id)(void *opaque, int64_t seq, char *out, size_t outlen);
    void *fmt_opaque;
} sd_recon_ctx_t;

void sd_recon_checks(const sd_recon_ctx_t *ctx, const sd_recon_result_t *r, sd_checks_t *out);
void sd_checks_free(sd_checks_t *c);
/* Number of failed checks. */
int sd_checks_failed(const sd_checks_t *c);
/* The failed checks that are settled (see sd_check_t). */
int sd_checks_settled(const sd_checks_t *c);

#endif
