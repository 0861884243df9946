/* shrink.c - delta debugging of a failing fault schedule (see shrink.h).
 *
 * Removal follows Zeller's ddmin over the list of actions: try dropping
 * each of n chunks; on success continue from the smaller schedule with one
 * chunk fewer, else double n until chunks are single actions. Then
 * neighbours of the same kind are merged, and each action is simplified
 * move by move. The three passes repeat until a whole round keeps nothing.
 * A later round does not try again a removal an earlier one dropped when
 * the schedule it leaves differs only in sizes (sd_shrink_shape), which
 * saves most of a shrink's runs; a failure that depends on sizes could then
 * leave a removable action behind, so once the rounds keep nothing, each
 * single removal is tried again at the final sizes, and a kept one starts
 * the rounds again: every action of the result was found needed by a run
 * of exactly the result without it. */
#include "shrink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const sd_shrink_cfg_t *cfg;
    sd_shrink_stats_t *st;
    uint64_t *seen; /* hashes of the candidates already run */
    int nseen, capseen;
    uint64_t *lacking; /* shapes of removal candidates that were dropped */
    int nlacking, caplacking;
} sd_shrink_t;

static void sd_shrink_add(uint64_t **v, int *n, int *cap, uint64_t h) {
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *v = sd_util_xrealloc(*v, sizeof(**v) * (size_t)*cap);
    }
    (*v)[(*n)++] = h;
}

static int sd_shrink_has(const uint64_t *v, int n, uint64_t h) {
    for (int i = 0; i < n; i++)
        if (v[i] == h) return 1;
    return 0;
}

/* A schedule's shape: its actions' kinds and the choices that make them
 * what they are (where, signal, op, variant, strict, background, a delay
 * or not), without their sizes. A removal that was dropped is not tried
 * again once the other actions have only shrunk their sizes: what the
 * failure needs from the removed action a run already showed. */
static uint64_t sd_shrink_shape(const sd_xsched_t *s) {
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < s->n; i++) {
        const sd_xa_t *a = &s->a[i];
        uint64_t w[] = {(uint64_t)a->kind, (uint64_t)a->where, (uint64_t)a->sig, (uint64_t)a->op, (uint64_t)a->variant,
                        (uint64_t)a->strict, (uint64_t)(a->rate != 0), (uint64_t)(a->ms != 0)};
        for (size_t k = 0; k < sizeof(w) / sizeof(w[0]); k++) h = (h ^ w[k]) * 1099511628211ULL;
    }
    return h;
}

static uint64_t sd_shrink_hash(const sd_xsched_t *s) {
    sd_buf_t b;
    sd_buf_init(&b);
    sd_xsched_render(s, &b);
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < b.len; i++) h = (h ^ (unsigned char)b.data[i]) * 1099511628211ULL;
    sd_buf_free(&b);
    return h;
}

/* 1: cand shows the signature (and becomes the current schedule); 0: not,
 * or already tried; -1: stop. A fault the move left aiming at a batch
 * with nothing sent before it lands now, and a restart delay it left with
 * nothing being sent goes (sd_xsched_aim), as in a generated schedule: the
 * one would wait its whole timeout for a batch that never begins, on
 * every try, the other only waits. */
static int sd_shrink_try(sd_shrink_t *S, sd_xsched_t *cand, const char *move_asked, int all, int removal) {
    if (S->st->stopped) return -1;
    char move[192];
    snprintf(move, sizeof(move), "%s%s", move_asked, sd_xsched_aim(cand) ? ", and with nothing sent before them a fault lands now and a restart does not wait" : "");
    uint64_t h = sd_shrink_hash(cand), shape = removal ? sd_shrink_shape(cand) : 0;
    if (sd_shrink_has(S->seen, S->nseen, h)) return 0;
    if (removal && sd_shrink_has(S->lacking, S->nlacking, shape)) return 0;
    if (S->cfg->max_candidates && S->st->candidates >= S->cfg->max_candidates) {
        S->st->stopped = 1;
        return -1;
    }
    sd_shrink_add(&S->seen, &S->nseen, &S->capseen, h);
    int runs = 0;
    int r = S->cfg->attempt(S->cfg->ctx, cand, S->cfg->tries < 1 ? 1 : S->cfg->tries, all, &runs);
    S->st->runs += runs;
    if (r < 0) {
        S->st->stopped = 1;
        return -1;
    }
    S->st->candidates++;
    S->st->kept += r == 1;
    if (removal && r != 1) sd_shrink_add(&S->lacking, &S->nlacking, &S->caplacking, shape);
    if (S->cfg->log) S->cfg->log(S->cfg->ctx, cand, move, r == 1, runs);
    return r == 1;
}

/* cur without actions [from, to) */
static void sd_shrink_without(const sd_xsched_t *cur, int from, int to, sd_xsched_t *out) {
    out->n = 0;
    out->member = cur->member;
    out->a = sd_util_xmalloc(sizeof(*out->a) * (size_t)(cur->n ? cur->n : 1));
    for (int i = 0; i < cur->n; i++)
        if (i < from || i >= to) out->a[out->n++] = cur->a[i];
}

static void sd_shrink_take(sd_xsched_t *cur, sd_xsched_t *cand) {
    sd_xsched_free(cur);
    *cur = *cand;
    memset(cand, 0, sizeof(*cand));
}

/* ddmin over the actions; returns 1 when something was removed, -1 to stop */
static int sd_shrink_remove(sd_shrink_t *S, sd_xsched_t *cur) {
    int any = 0, gran = 2;
    while (cur->n > 0) {
        if (gran > cur->n) gran = cur->n;
        int chunk = (cur->n + gran - 1) / gran, removed = 0;
        for (int from = 0; from < cur->n && !removed; from += chunk) {
            int to = from + chunk > cur->n ? cur->n : from + chunk;
            sd_xsched_t cand;
            sd_shrink_without(cur, from, to, &cand);
            char move[64];
            if (to - from == 1) snprintf(move, sizeof(move), "remove action %d", from + 1);
            else snprintf(move, sizeof(move), "remove actions %d-%d", from + 1, to);
            int r = sd_shrink_try(S, &cand, move, 0, 1);
            if (r == 1) {
                sd_shrink_take(cur, &cand);
                removed = any = 1;
            }
            sd_xsched_free(&cand);
            if (r < 0) return -1;
        }
        if (removed) {
            if (gran > 2) gran--;
            continue;
        }
        if (gran >= cur->n) break;
        gran *= 2;
    }
    return any;
}

/* Two neighbours that can be one action: produce+produce at once,
 * replay+replay of the same end, inject+inject of the same kind. */
/* The last word: each action of cur removed alone, at cur's own sizes,
 * whatever the shape rule says (a candidate already run as it is is still
 * not run twice). 1 when one was removed, 0 none, -1 stop. */
static int sd_shrink_remove_each(sd_shrink_t *S, sd_xsched_t *cur) {
    for (int i = 0; i < cur->n; i++) {
        sd_xsched_t cand;
        sd_shrink_without(cur, i, i + 1, &cand);
        char move[96];
        snprintf(move, sizeof(move), "remove action %d again, at the final sizes", i + 1);
        int r = sd_shrink_try(S, &cand, move, 0, 0);
        if (r == 1) sd_shrink_take(cur, &cand);
        sd_xsched_free(&cand);
        if (r) return r;
    }
    return 0;
}

static int sd_shrink_mergeable(const sd_xa_t *a, const sd_xa_t *b) {
    if (a->kind != b->kind) return 0;
    if (a->kind == SD_XA_PRODUCE) return !a->rate && !b->rate;
    if (a->kind == SD_XA_REPLAY) return a->op == b->op;
    if (a->kind == SD_XA_INJECT) return a->op == b->op && a->variant == b->variant;
    return a->kind == SD_XA_SETTLE;
}

static int sd_shrink_merge(sd_shrink_t *S, sd_xsched_t *cur) {
    int any = 0;
    for (int i = 0; i + 1 < cur->n; i++) {
        if (!sd_shrink_mergeable(&cur->a[i], &cur->a[i + 1])) continue;
        sd_xsched_t cand;
        sd_shrink_without(cur, i + 1, i + 2, &cand);
        cand.a[i].n = cur->a[i].n + cur->a[i + 1].n;
        char move[64];
        snprintf(move, sizeof(move), "merge actions %d and %d", i + 1, i + 2);
        int r = sd_shrink_try(S, &cand, move, 0, 0);
        if (r == 1) {
            sd_shrink_take(cur, &cand);
            any = 1;
            i--;
        }
        sd_xsched_free(&cand);
        if (r < 0) return -1;
    }
    return any;
}

static int sd_shrink_simplify(sd_shrink_t *S, sd_xsched_t *cur) {
    int any = 0;
    for (int i = 0; i < cur->n; i++) {
        for (int again = 1; again;) {
            again = 0;
            sd_xa_t opts[16];
            const char *labels[16];
            int n = sd_xsched_simpler(&cur->a[i], opts, labels, 16);
            for (int k = 0; k < n && !again; k++) {
                sd_xsched_t cand;
                sd_xsched_copy(&cand, cur);
                cand.a[i] = opts[k];
                char move[128];
                snprintf(move, sizeof(move), "action %d: %s", i + 1, labels[k]);
                int r = sd_shrink_try(S, &cand, move, opts[k].strict != cur->a[i].strict, 0);
                if (r == 1) {
                    sd_shrink_take(cur, &cand);
                    any = again = 1;
                }
                sd_xsched_free(&cand);
                if (r < 0) return -1;
            }
        }
    }
    return any;
}

void sd_shrink(const sd_shrink_cfg_t *cfg, const sd_xsched_t *failing, sd_xsched_t *out, sd_shrink_stats_t *st) {
    memset(st, 0, sizeof(*st));
    sd_shrink_t S = {.cfg = cfg, .st = st};
    sd_xsched_copy(out, failing);
    /* the failing schedule itself counts as tried */
    S.seen = sd_util_xmalloc(sizeof(*S.seen) * 64);
    S.capseen = 64;
    S.seen[S.nseen++] = sd_shrink_hash(failing);
    for (int round = 0;; round++) {
        int changed = 0, r;
        if ((r = sd_shrink_remove(&S, out)) < 0) break;
        changed |= r;
        if ((r = sd_shrink_merge(&S, out)) < 0) break;
        changed |= r;
        if ((r = sd_shrink_simplify(&S, out)) < 0) break;
        changed |= r;
        if (!changed && (r = sd_shrink_remove_each(&S, out)) <= 0) break;
    }
    free(S.seen);
    free(S.lacking);
}
