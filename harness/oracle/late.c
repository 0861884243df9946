/* late.c - the engine's late-event rule (late.h), a pure function of the
 * batches' offsets and the event times the ledger holds. */
#include <stdlib.h>

#include "late.h"
#include "util.h"

struct sd_late_rule_s {
    int n, partitions;
    const int64_t *ids, *ends;
    int64_t delay_ms;
    int64_t *newest; /* per batch: the newest event time it read (INT64_MIN: none) */
    int all_known;   /* every end known, and each partition's ends never fall: a binary search finds a batch */
};

sd_late_rule_t *sd_late_rule_new(int n, int partitions, const int64_t *ids, const int64_t *ends, int64_t delay_ms) {
    sd_late_rule_t *lr = sd_util_xcalloc(1, sizeof(*lr));
    *lr = (sd_late_rule_t){.n = n > 0 ? n : 0, .partitions = partitions, .ids = ids, .ends = ends, .delay_ms = delay_ms};
    lr->newest = sd_util_xcalloc((size_t)lr->n + 1, sizeof(int64_t));
    for (int i = 0; i < lr->n; i++) lr->newest[i] = INT64_MIN;
    lr->all_known = 1;
    for (int i = 0; i < lr->n; i++)
        for (int p = 0; p < partitions; p++) {
            int64_t e = ends[(size_t)i * (size_t)partitions + (size_t)p];
            if (e < 0 || (i && e < ends[(size_t)(i - 1) * (size_t)partitions + (size_t)p])) lr->all_known = 0;
        }
    return lr;
}

void sd_late_rule_free(sd_late_rule_t *lr) {
    if (!lr) return;
    free(lr->newest);
    free(lr);
}

int sd_late_rule_batch_of(const sd_late_rule_t *lr, int partition, int64_t offset) {
    if (partition < 0 || partition >= lr->partitions || offset < 0) return -2;
    size_t np = (size_t)lr->partitions;
    int i = 0;
    if (lr->all_known) {
        /* the ends only grow: the first batch whose end is past offset */
        int lo = 0, hi = lr->n;
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (lr->ends[(size_t)mid * np + (size_t)partition] > offset) hi = mid;
            else lo = mid + 1;
        }
        i = lo;
    } else {
        for (; i < lr->n; i++) {
            int64_t end = lr->ends[(size_t)i * np + (size_t)partition];
            if (end < 0) return -2;
            if (end > offset) break;
        }
    }
    if (i == lr->n) return -1;
    /* it lies past the batch before's end: that batch must be the one
     * listed just before (or this one the first of all) */
    if (i ? lr->ids[i - 1] != lr->ids[i] - 1 : lr->ids[i] != 0) return -2;
    return i;
}

void sd_late_rule_see(sd_late_rule_t *lr, int partition, int64_t offset, int64_t t_ms) {
    int i = sd_late_rule_batch_of(lr, partition, offset);
    if (i >= 0 && t_ms != INT64_MIN && t_ms > lr->newest[i]) lr->newest[i] = t_ms;
}

int sd_late_rule_judge(const sd_late_rule_t *lr, int partition, int64_t offset, int64_t t_ms, int64_t *batch, int64_t *wm_ms) {
    int i = sd_late_rule_batch_of(lr, partition, offset);
    *wm_ms = INT64_MIN;
    if (i == -1) return -2;
    if (i < 0 || t_ms == INT64_MIN) return -1;
    *batch = lr->ids[i];
    /* the newest event time read by the batches up to two before it (of
     * those listed: one cleaned from the checkpoint only lowers it, and a
     * lower watermark only calls more events maybe-late) */
    int64_t newest = INT64_MIN;
    for (int k = 0; k <= i - 2; k++)
        if (lr->newest[k] > newest) newest = lr->newest[k];
    if (newest == INT64_MIN) return 0;
    *wm_ms = newest - lr->delay_ms;
    return t_ms <= *wm_ms ? 1 : 0;
}
