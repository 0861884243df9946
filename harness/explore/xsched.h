/* xsched.h - fault schedules for `streamdrill explore`: generated at random
 * from a seed, rendered as the steps of a .drill file, and simplified one
 * move at a time by the shrinker.
 *
 * A schedule is a list of actions between a fixed `start` and a fixed final
 * `await quiescent`. An action renders as one or more steps that belong
 * together, so every schedule is well formed whatever the shrinker removes:
 * a kill renders with its restart, a pause and a network fault heal
 * themselves (for=), a clock step is reset by the harness before it judges.
 * Generation is a pure function of (capabilities, seed, run): the same
 * header, seed and run number give the same text byte for byte. */
#ifndef SD_XSCHED_H
#define SD_XSCHED_H

#include <stdint.h>

#include "scenario.h"
#include "util.h"

typedef enum {
    SD_XA_PRODUCE = 0, /* produce N, or produce N rate=R/s background */
    SD_XA_REPLAY,      /* replay N [from=last]: exact duplicates */
    SD_XA_INJECT,      /* inject KIND=N (op: sd_inject_kind_t, or SD_XI_MALFORMED) */
    SD_XA_SETTLE,      /* await quiescent 1s: let the pipeline catch up */
    SD_XA_KILL,        /* kill WHERE signal=S, then restart [delay=D] */
    SD_XA_STOP,        /* stop (SIGTERM, the pipeline's own shutdown), then restart */
    SD_XA_RESTART,     /* restart [delay=D]: a graceful stop and a start */
    SD_XA_PAUSE,       /* pause WHERE for=D (SIGSTOP, SIGCONT after D) */
    SD_XA_NETWORK,     /* network latency=|blackhole|errors= (op 0, 2, 4) for=D */
    SD_XA_CLOCK,       /* clock jump=+-D (op 0) or rate=2x (op 1); needs `clock faketime` */
    SD_XA_BROKER,      /* broker kill (op 0) or stop (op 1) leader-of=P (n) WHERE, then broker start; or isolate (op 2), then
                        * broker rejoin; needs brokers to break (and to cut off, for op 2) */
    SD_XA__COUNT
} sd_xa_kind_t;

/* inject op beyond sd_inject_kind_t: malformed events (variant 0 the
 * default five kinds, 1..SD_MAL__COUNT one kind, variant-1, SD_XM_ALL
 * every kind in turn) */
#define SD_XI_MALFORMED SD_INJ__COUNT
#define SD_XM_ALL (SD_MAL__COUNT + 1)

enum { SD_XW_NOW = 0, SD_XW_MID_BATCH, SD_XW_AT_BOUNDARY };
enum { SD_XS_KILL = 0, SD_XS_TERM };

typedef struct {
    sd_xa_kind_t kind;
    int64_t n;      /* events (produce, replay, inject), error count (network errors) */
    int64_t rate;   /* produce: events per second in the background, 0 = at once */
    int where;      /* kill, pause: SD_XW_* */
    int sig;        /* kill: SD_XS_* */
    int64_t ms;     /* pause and network for=, restart delay, clock jump */
    int op;         /* inject kind, network op, clock op, replay: 1 = the newest */
    int variant;    /* inject drift: 0 extra field, 1 type change; malformed: see above */
    int strict;     /* the fault must land (rendered without `optional`) */
} sd_xa_t;

typedef struct {
    sd_xa_t *a;
    int n;
    int member;     /* the header's pipeline is a consumer-group member (sd_xcaps_t): sd_xsched_aim keeps its restart delays */
} sd_xsched_t;

/* What the header allows. */
typedef struct {
    int batches;    /* the progress source sees batches: kill/pause mid-batch and at-boundary */
    int network;    /* network faults land (the embedded cluster) */
    int faketime;   /* `clock faketime` */
    int future;     /* events start=now: a future event is judged against the wall clock */
    int edges;      /* a windows or join model: `inject edges=` places events on its edges */
    int brokers;    /* brokers the runs may break (--cluster, or --broker-count above 1) */
    int isolate;    /* and cut off from each other (a cluster with links, cluster.h `isolate`) */
    int partitions; /* the source's partitions (broker faults pick a leader of one) */
    int member;     /* followed through its consumer group (`progress group`): a member a long pause can cost its membership */
    int64_t watermark_ms;
} sd_xcaps_t;

/* The capabilities of a parsed header, on the embedded cluster or not. */
void sd_xsched_caps(const sd_scenario_t *sc, int embedded, sd_xcaps_t *caps);

/* Generate run `run` of `seed` into *out (freed with sd_xsched_free). */
void sd_xsched_generate(const sd_xcaps_t *caps, uint64_t seed, int run, sd_xsched_t *out);
void sd_xsched_free(sd_xsched_t *s);
void sd_xsched_copy(sd_xsched_t *dst, const sd_xsched_t *src);

/* A fault aimed at a batch (mid-batch, at-boundary) with no event sent
 * since the last settle (a produce, a replay, an inject) lands now
 * instead: the batch or the commit it would wait for never comes, and it
 * waited its whole timeout to be skipped. And a restart's delay while no
 * background produce can still be sending (none since the last settle or
 * produce at once, which wait for it to end) is dropped, unless the
 * pipeline is a consumer-group member: a pipeline that reads by
 * assignment finds its data waiting in Kafka, so the delay only waits.
 * Generated schedules and shrink candidates both pass through it. 1 when
 * it changed an action. */
int sd_xsched_aim(sd_xsched_t *s);

/* Append the steps of s (start, the actions, the final await) to b. */
void sd_xsched_render(const sd_xsched_t *s, sd_buf_t *b);

/* A fault action (not data, not a settle). */
int sd_xsched_is_fault(const sd_xa_t *a);
/* The fault steps the rendered schedule holds (kill+restart counts one). */
int sd_xsched_fault_count(const sd_xsched_t *s);

/* The simplifications of one action, mildest change first: a smaller count,
 * a kill at a boundary instead of mid-batch, TERM instead of KILL, no
 * restart delay, a shorter pause, foreground instead of background.
 * Writes up to max candidates into out with a short label each; returns
 * how many. */
int sd_xsched_simpler(const sd_xa_t *a, sd_xa_t *out, const char **label, int max);

#endif
