/* shrink.h - delta debugging of a failing fault schedule.
 *
 * Given a schedule that shows a failure's signature (the set of checks that
 * failed), find a smaller one that still shows it: remove actions (ddmin:
 * halves, then quarters, ... then one at a time), merge neighbours of the
 * same kind, then simplify what is left one move at a time (smaller counts,
 * milder faults, see sd_xsched_simpler) until no move keeps the signature.
 *
 * A pipeline's failure can be flaky, so the caller's attempt() runs a
 * candidate up to `tries` times and says whether any run showed the
 * signature: a candidate is kept on one run that shows it and dropped only
 * after `tries` that do not. The same candidate is never run twice. The
 * shrinker itself runs nothing; the tests drive it with a fake runner. */
#ifndef SD_SHRINK_H
#define SD_SHRINK_H

#include "xsched.h"

typedef struct {
    /* Run cand up to tries times. Returns 1 when a run showed the
     * signature (with all: when every one of the tries did), 0 when not,
     * -1 to stop shrinking (interrupted, out of runs). *runs = how many
     * runs were made. all is set for the move that makes a fault strict:
     * a fault that must land may not make the drill land less often. */
    int (*attempt)(void *ctx, const sd_xsched_t *cand, int tries, int all, int *runs);
    /* Called once per candidate tried (may be NULL): the move ("remove
     * actions 3-4", "action 2: TERM instead of KILL"), kept or dropped,
     * how many runs it took. */
    void (*log)(void *ctx, const sd_xsched_t *cand, const char *move, int kept, int runs);
    void *ctx;
    int tries;          /* runs per candidate before it is dropped (>= 1) */
    int max_candidates; /* stop after this many candidates (0: no limit) */
} sd_shrink_cfg_t;

typedef struct {
    int candidates;     /* candidates tried */
    int kept;           /* of which kept */
    int runs;           /* runs made */
    int stopped;        /* attempt() said stop, or max_candidates was reached */
} sd_shrink_stats_t;

/* Shrink `failing` (which showed the signature) into *out (the smallest
 * schedule found that still shows it; a copy of failing at worst). */
void sd_shrink(const sd_shrink_cfg_t *cfg, const sd_xsched_t *failing, sd_xsched_t *out, sd_shrink_stats_t *st);

#endif
