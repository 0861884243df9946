/* run_late.c - the late events judged by the engine's own clock (late.h):
 * the batches' ends from the progress source, every message's offset and
 * event time from the ledger. Under a source that cannot tell batches'
 * ends (every one but progress spark), and for an event whose batch cannot
 * be told, the harness's own rule judges: the newest event time sent,
 * minus the contract's delay, when it was sent. The warning `late-rule`
 * says which rule judged how many. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "late.h"
#include "progress.h"
#include "run_int.h"

typedef struct {
    int64_t seq, offset, t;
    int partition;
} sd_late_msg_t;

typedef struct {
    sd_run_t *r;
    sd_late_rule_t *lr;
    sd_late_msg_t *late;
    int64_t n, cap;
} sd_late_ctx_t;

static void sd_late_see(void *opaque, int64_t seq, int partition, int64_t offset, int64_t t_ms) {
    sd_late_ctx_t *c = opaque;
    sd_late_rule_see(c->lr, partition, offset, t_ms);
    if (seq < 0 || seq >= c->r->sends.nseq || sd_seqs_kind(&c->r->sends.seqs, seq) != SD_KIND_LATE) return;
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->late = sd_util_xrealloc(c->late, sizeof(*c->late) * (size_t)c->cap);
    }
    c->late[c->n++] = (sd_late_msg_t){.seq = seq, .offset = offset, .t = t_ms, .partition = partition};
}

uint8_t *sd_run_late_rule(sd_run_t *r, int64_t *nmaybe) {
    *nmaybe = 0;
    const int64_t *ids = NULL, *ends = NULL;
    int n = r->sends.late_sent ? sd_progress_batch_ends(r, &ids, &ends) : -1;
    if (n < 0) return NULL;
    sd_late_ctx_t c = {.r = r, .lr = sd_late_rule_new(n, r->src.partitions, ids, ends, r->sc->watermark_ms)};
    sd_ledger_each_placed(r->ledger, sd_late_see, &c);
    uint8_t *maybe = sd_util_xcalloc((size_t)(r->sends.nseq ? r->sends.nseq : 1), 1);
    int64_t certain = 0, unknown = 0, unread = 0, first_batch = -1, first_wm = INT64_MIN, first_t = 0;
    for (int64_t i = 0; i < c.n; i++) {
        const sd_late_msg_t *m = &c.late[i];
        int64_t batch = -1, wm;
        int v = sd_late_rule_judge(c.lr, m->partition, m->offset, m->t, &batch, &wm);
        if (v == 1) certain++;
        else if (v == -1) unknown++;
        else if (v == -2) unread++;
        else if (!maybe[m->seq]) {
            maybe[m->seq] = 1;
            if (!(*nmaybe)++) first_batch = batch, first_wm = wm, first_t = m->t;
        }
    }
    char w[1200], ts[40], wms[40];
    int k = snprintf(w, sizeof(w), "late events judged by the batches that read them (%s: offsets/N), each held to the watermark "
                     "a pipeline keeping the contract had for that batch's late rows, the newest event time sent in the batches "
                     "up to two before it minus the %.0fs delay: %lld certainly late, judged as the contract says; %lld maybe-late, "
                     "right kept or dropped", r->prog.ops->name, (double)r->sc->watermark_ms / 1000.0, (long long)certain,
                     (long long)*nmaybe);
    if (*nmaybe && k > 0 && (size_t)k < sizeof(w))
        k += snprintf(w + k, sizeof(w) - (size_t)k, " (the first, of event time %s, read by batch %lld, whose late rows were held "
                      "to %s)", sd_util_iso8601(first_t, ts, sizeof(ts)), (long long)first_batch,
                      first_wm == INT64_MIN ? "no watermark yet" : sd_util_iso8601(first_wm, wms, sizeof(wms)));
    if (unknown && k > 0 && (size_t)k < sizeof(w))
        k += snprintf(w + k, sizeof(w) - (size_t)k, "; %lld judged by the harness's own rule (the newest event time sent minus the "
                      "delay, at its send): the batch that read them could not be told", (long long)unknown);
    if (unread && k > 0 && (size_t)k < sizeof(w))
        snprintf(w + k, sizeof(w) - (size_t)k, "; %lld read by no batch the checkpoint records", (long long)unread);
    sd_ledger_warning(r->ledger, "late-rule", w, NULL, 0);
    if (*nmaybe) sd_run_say(r, "note: %s", w);
    sd_late_rule_free(c.lr);
    free(c.late);
    if (!*nmaybe) {
        free(maybe);
        return NULL;
    }
    return maybe;
}
