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
 * X(name, kind) */
#ifndef SD_COUNTS_H
#define SD_COUNTS_H

enum { SD_CK_RUN, SD_CK_MODEL, SD_CK_BOUNDS };

#define SD_COUNTS(X)                                                                                                   \
    /* the canonical ones first */                                                                                     \
    X(produced, SD_CK_RUN) X(expected_in_target, SD_CK_RUN) X(observed_rows, SD_CK_RUN) X(observed_unique, SD_CK_RUN) \
    X(duplicated, SD_CK_RUN) X(lost, SD_CK_RUN) X(unexpected, SD_CK_RUN) X(late_leaked, SD_CK_RUN)                     \
    X(malformed_leaked, SD_CK_RUN) X(quarantined, SD_CK_RUN)                                                           \
    X(delivered_once, SD_CK_RUN) X(duplicate_rows, SD_CK_RUN) X(late_sent, SD_CK_RUN) X(late_dropped, SD_CK_RUN)       \
    X(malformed_sent, SD_CK_RUN) X(malformed_vanished, SD_CK_RUN) X(replayed, SD_CK_RUN) X(unjudgeable, SD_CK_RUN)     \
    X(quarantine_unexpected, SD_CK_RUN) X(send_failed, SD_CK_RUN) X(valid_quarantined, SD_CK_RUN)                      \
    X(late_vanished, SD_CK_RUN) X(crashes, SD_CK_RUN)                                                                  \
    /* end-to-end latency, when the sink gives write times (-1 otherwise) */                                           \
    X(latency_p50_ms, SD_CK_RUN) X(latency_p95_ms, SD_CK_RUN) X(latency_p99_ms, SD_CK_RUN)                             \
    X(latency_max_ms, SD_CK_RUN) X(latency_samples, SD_CK_RUN)                                                         \
    X(missing_copies, SD_CK_RUN) X(not_yet_consumed, SD_CK_RUN)                                                        \
    /* events of aborted transactions: sent, and seen in the target */                                                 \
    X(aborted_sent, SD_CK_RUN) X(aborted_leaked, SD_CK_RUN)                                                            \
    /* a result model's groups (result.h) */                                                                           \
    X(groups_expected, SD_CK_MODEL) X(groups_observed, SD_CK_MODEL) X(groups_correct, SD_CK_MODEL)                     \
    X(wrong_value, SD_CK_MODEL) X(missing_group, SD_CK_MODEL) X(unexpected_group, SD_CK_MODEL)                         \
    X(emitted_twice, SD_CK_MODEL) X(emitted_early, SD_CK_MODEL) X(groups_pending, SD_CK_MODEL)                         \
    X(changed, SD_CK_MODEL) X(null_for_matched, SD_CK_MODEL)                                                           \
    /* the pipeline's bounds (run_bounds.c) */                                                                         \
    X(batches, SD_CK_BOUNDS) X(batch_rows_max, SD_CK_BOUNDS) X(state_rows_peak, SD_CK_BOUNDS)                          \
    X(state_rows_final, SD_CK_BOUNDS) X(state_rows_half, SD_CK_BOUNDS) X(state_growth, SD_CK_BOUNDS)                   \
    X(state_unbounded, SD_CK_BOUNDS)

#endif
