/* counts.h - every count a run has, listed once.
 *
 * A count is a figure of the reconciliation: the buckets' sizes, what the
 * harness sent, a result model's groups, the bounds the pipeline reported,
 * the latency. This one list gives the fields of sd_recon_counts_t (recon.h),
 * the names `expect` takes and summary.json's "counts" keys, in this order
 * (scenario.c: sd_scenario_count_names), and each count's kind, which says
 * when a run stores it:
 *
 *   SD_CK_RUN      every run
 *   SD_CK_MODEL    a result model's groups: only with a `model`
 *   SD_CK_BOUNDS   the pipeline's own account of batches and state (-1 when
 *                  it gave none)
 *
 * and whether it only grows while the pipeline writes (copies, leaks,
 * unexpected rows or groups, crashes): past its bound, no catching up
 * takes it back, so such a check fails a run that also ended inconclusive.
 *
 * X(name, kind, grows) */
#ifndef SD_COUNTS_H
#define SD_COUNTS_H

enum { SD_CK_RUN, SD_CK_MODEL, SD_CK_BOUNDS };

#define SD_COUNTS(X)                                                                                          \
    /* the canonical ones first */                                                                            \
    X(produced, SD_CK_RUN, 0) X(expected_in_target, SD_CK_RUN, 0) X(observed_rows, SD_CK_RUN, 0)              \
    X(observed_unique, SD_CK_RUN, 0) X(duplicated, SD_CK_RUN, 1) X(lost, SD_CK_RUN, 0)                        \
    X(unexpected, SD_CK_RUN, 1) X(late_leaked, SD_CK_RUN, 1) X(malformed_leaked, SD_CK_RUN, 1)                \
    X(quarantined, SD_CK_RUN, 0) X(delivered_once, SD_CK_RUN, 0) X(duplicate_rows, SD_CK_RUN, 1)              \
    X(late_sent, SD_CK_RUN, 0) X(late_dropped, SD_CK_RUN, 0) X(malformed_sent, SD_CK_RUN, 0)                  \
    X(malformed_vanished, SD_CK_RUN, 0) X(replayed, SD_CK_RUN, 0) X(unjudgeable, SD_CK_RUN, 0)                \
    X(quarantine_unexpected, SD_CK_RUN, 0) X(send_failed, SD_CK_RUN, 0) X(valid_quarantined, SD_CK_RUN, 1)    \
    X(late_vanished, SD_CK_RUN, 0) X(crashes, SD_CK_RUN, 1)                                                   \
    /* end-to-end latency, when the sink gives write times (-1 otherwise) */                                  \
    X(latency_p50_ms, SD_CK_RUN, 0) X(latency_p95_ms, SD_CK_RUN, 0) X(latency_p99_ms, SD_CK_RUN, 0)           \
    X(latency_max_ms, SD_CK_RUN, 0) X(latency_samples, SD_CK_RUN, 0) X(missing_copies, SD_CK_RUN, 0)          \
    X(not_yet_consumed, SD_CK_RUN, 0)                                                                         \
    /* events of aborted transactions: sent, and seen in the target */                                        \
    X(aborted_sent, SD_CK_RUN, 0) X(aborted_leaked, SD_CK_RUN, 1)                                             \
    /* a result model's groups (result.h) */                                                                  \
    X(groups_expected, SD_CK_MODEL, 0) X(groups_observed, SD_CK_MODEL, 0) X(groups_correct, SD_CK_MODEL, 0)   \
    X(wrong_value, SD_CK_MODEL, 0) X(missing_group, SD_CK_MODEL, 0) X(unexpected_group, SD_CK_MODEL, 1)       \
    X(emitted_twice, SD_CK_MODEL, 1) X(emitted_early, SD_CK_MODEL, 1) X(groups_pending, SD_CK_MODEL, 0)       \
    X(changed, SD_CK_MODEL, 0) X(null_for_matched, SD_CK_MODEL, 1)                                            \
    /* the pipeline's bounds (run_bounds.c) */                                                                \
    X(batches, SD_CK_BOUNDS, 0) X(batch_rows_max, SD_CK_BOUNDS, 0) X(state_rows_peak, SD_CK_BOUNDS, 0)        \
    X(state_rows_final, SD_CK_BOUNDS, 0) X(state_rows_half, SD_CK_BOUNDS, 0) X(state_growth, SD_CK_BOUNDS, 0) \
    X(state_unbounded, SD_CK_BOUNDS, 0)

#endif
