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
 * and what it means (summary.json's schema and docs/language.md's count
 * table are generated from it).
 *
 * X(name, kind, grows, meaning) */
#ifndef SD_COUNTS_H
#define SD_COUNTS_H

enum { SD_CK_RUN, SD_CK_MODEL, SD_CK_BOUNDS };

#define SD_COUNTS(X)                                                                                                         \
    /* the canonical ones first */                                                                                           \
    X(produced, SD_CK_RUN, 0, "messages the broker acknowledged")        \
    X(expected_in_target, SD_CK_RUN, 0, "ids the contract says must be in the target")                                       \
    X(observed_rows, SD_CK_RUN, 0, "rows read from the target")                                                              \
    X(observed_unique, SD_CK_RUN, 0, "distinct ids among them")                                                              \
    X(duplicated, SD_CK_RUN, 1, "ids with more copies in the target than the contract allows")                                     \
    X(lost, SD_CK_RUN, 0, "expected ids missing from the target")                                                            \
    X(unexpected, SD_CK_RUN, 1, "target rows whose id maps to no ledger event")                          \
    X(late_leaked, SD_CK_RUN, 1, "late events in the target that the contract says are dropped or quarantined")              \
    X(malformed_leaked, SD_CK_RUN, 1, "malformed events in the target")                                                      \
    X(quarantined, SD_CK_RUN, 0, "ids in the quarantine sink")                                                               \
    X(delivered_once, SD_CK_RUN, 0, "expected ids in the target exactly as often as allowed")                                \
    X(duplicate_rows, SD_CK_RUN, 1, "extra copies: rows beyond the allowed ones") \
    X(late_sent, SD_CK_RUN, 0, "late events the harness sent")                                                               \
    X(late_dropped, SD_CK_RUN, 0, "late events in neither the target nor the quarantine, as a drop contract says")           \
    X(malformed_sent, SD_CK_RUN, 0, "malformed events the harness sent")                                                     \
    X(malformed_vanished, SD_CK_RUN, 0, "malformed events in neither sink though the contract quarantines them")             \
    X(replayed, SD_CK_RUN, 0, "already-sent events sent again (replay, retry-dup)")                                          \
    X(unjudgeable, SD_CK_RUN, 0, "missing ids that lie in offsets the broker deleted: neither lost nor delivered")           \
    X(quarantine_unexpected, SD_CK_RUN, 0, "ids in the quarantine the harness never sent")                                   \
    X(send_failed, SD_CK_RUN, 0, "messages the broker never acknowledged")                                                   \
    X(valid_quarantined, SD_CK_RUN, 1, "valid, on-time events found in the quarantine")                                      \
    X(late_vanished, SD_CK_RUN, 0, "late events in neither sink though the contract quarantines them")                       \
    X(late_maybe, SD_CK_RUN, 0, "late events the engine's own watermark had not passed when it read them (progress spark: the watermark in force for the batch that read each): right kept or dropped") \
    X(late_maybe_kept, SD_CK_RUN, 0, "maybe-late events found in the target: no leak")                                    \
    X(crashes, SD_CK_RUN, 1, "pipeline exits the drill did not cause")                                                       \
    X(acked_lost, SD_CK_RUN, 0, "events Kafka acknowledged that are no longer in the source topic (a broker or configuration fault, such as acks=1 or an unclean election, not the pipeline's): left out of every other count") \
    /* end-to-end latency, when the sink gives write times (-1 otherwise) */                                                 \
    X(latency_p50_ms, SD_CK_RUN, 0, "from the harness handing an event to Kafka to its first appearance in the sink: median, ms (-1 without write times)")                \
    X(latency_p95_ms, SD_CK_RUN, 0, "end-to-end latency, 95th percentile (ms)")                                              \
    X(latency_p99_ms, SD_CK_RUN, 0, "end-to-end latency, 99th percentile (ms)")                                              \
    X(latency_max_ms, SD_CK_RUN, 0, "end-to-end latency, largest (ms)")                                                      \
    X(latency_samples, SD_CK_RUN, 0, "ids the latency figures were measured on")                                             \
    X(missing_copies, SD_CK_RUN, 0, "under duplicates=keep: ids present with fewer copies than were sent (lost is only for ids with no copy)")                     \
    X(not_yet_consumed, SD_CK_RUN, 0, "missing ids the pipeline had not consumed when judged")        \
    /* events of aborted transactions: sent, and seen in the target */                                                       \
    X(aborted_sent, SD_CK_RUN, 0, "events the harness sent in aborted transactions")                                         \
    X(aborted_leaked, SD_CK_RUN, 1, "events of aborted transactions found in the target")                                    \
    X(aborted_in_target, SD_CK_RUN, 0, "records of the pipeline's own aborted transactions in a Kafka sink, which a read_committed reader passes over (a kill inside an open transaction leaves them): not output (read isolation=read_uncommitted: those the reader read as rows); -1 for a sink that cannot tell") \
    /* the second source's deliveries the contract quarantines (inject ... source=deliveries) */                            \
    X(deliveries_quarantined, SD_CK_RUN, 0, "deliveries the contract quarantines (late, future or malformed ones) found in the quarantine sink") \
    X(deliveries_vanished, SD_CK_RUN, 0, "deliveries the contract quarantines found in no quarantine row")                    \
    /* a result model's groups (result.h) */                                                                                 \
    X(groups_expected, SD_CK_MODEL, 0, "result groups a correct pipeline holds at the end, pending ones not counted (model)")                                     \
    X(groups_observed, SD_CK_MODEL, 0, "result groups read from the sink")                                                   \
    X(groups_correct, SD_CK_MODEL, 0, "groups whose values match")                                                           \
    X(wrong_value, SD_CK_MODEL, 0, "groups present with a wrong value")                                                      \
    X(missing_group, SD_CK_MODEL, 0, "expected groups absent")                                                               \
    X(unexpected_group, SD_CK_MODEL, 1, "groups no event explains")                                                          \
    X(emitted_twice, SD_CK_MODEL, 1, "groups written more than once where the output mode allows one")                       \
    X(emitted_early, SD_CK_MODEL, 1, "groups written before the watermark could close them")                                 \
    X(groups_pending, SD_CK_MODEL, 0, "groups the watermark had not closed yet: not judged")                                 \
    X(groups_judged_pct, SD_CK_MODEL, 0, "the share of the groups a correct pipeline may owe that were judged, percent: groups_expected over groups_expected plus groups_pending") \
    X(changed, SD_CK_MODEL, 0, "model rows fields=: rows whose id is right and whose fields are not")               \
    X(null_for_matched, SD_CK_MODEL, 1, "outer-join null rows for a key that did find a match")                              \
    /* the pipeline's bounds (run_bounds.c) */                                                                               \
    X(batches, SD_CK_BOUNDS, 0, "batches the pipeline's own account reported")                                               \
    X(batch_rows_max, SD_CK_BOUNDS, 0, "rows of its largest batch")                                                          \
    X(state_rows_peak, SD_CK_BOUNDS, 0, "the most state rows it kept after a batch")                                         \
    X(state_rows_final, SD_CK_BOUNDS, 0, "state rows after its last batch")                                                  \
    X(state_rows_half, SD_CK_BOUNDS, 0, "state rows after the batch at half the run")                                        \
    X(state_growth, SD_CK_BOUNDS, 0, "state rows after the last batch minus those at half the run")                          \
    X(state_unbounded, SD_CK_BOUNDS, 0, "1 when the state grew past 10% of its peak in the second half")                    \
    /* operational health (run_bounds.c): the batches' durations, the throughput and the backlog from the commits, */     \
    /* the pipeline's restarts and what its logs say */                                                                      \
    X(batch_p50_ms, SD_CK_BOUNDS, 0, "median time from a batch's begin to its commit (ms)")                                 \
    X(batch_p95_ms, SD_CK_BOUNDS, 0, "95th percentile of the same (ms)")                                                     \
    X(batch_max_ms, SD_CK_BOUNDS, 0, "the longest batch (ms)")                                                               \
    X(throughput_rps, SD_CK_BOUNDS, 0, "records the pipeline committed per second, from its first batch's begin to its last commit") \
    X(backlog_max, SD_CK_BOUNDS, 0, "the most records Kafka had acknowledged that the pipeline had not committed, at a commit or a fault") \
    X(restarts, SD_CK_RUN, 0, "incarnations of the pipeline after the first")                                               \
    X(log_errors, SD_CK_RUN, 0, "lines of the pipeline's logs that say ERROR, FATAL, Exception or Traceback")               \
    X(log_warnings, SD_CK_RUN, 0, "lines of the pipeline's logs that say WARN")                                              \
    /* a Spark pipeline's own account of its cluster, from its logs: what the ledger cannot see */                          \
    X(executors_lost, SD_CK_RUN, 0, "Spark executors the driver lost (its log's \"Lost executor\" lines)")                 \
    X(tasks_lost, SD_CK_RUN, 0, "Spark tasks that failed and were retried (its log's \"Lost task\" lines)")                \
    /* a Flink job's own account, from its JobManager's lines about it */                                                 \
    X(job_restarts, SD_CK_RUN, 0, "restarts of a Flink job under its restart strategy (\"switched from state RUNNING to RESTARTING\")") \
    X(checkpoints_completed, SD_CK_RUN, 0, "a Flink job's completed checkpoints (\"Completed checkpoint\" lines)")           \
    X(checkpoints_failed, SD_CK_RUN, 0, "a Flink job's checkpoints that failed, expired or were declined")                  \
    X(checkpoint_max_ms, SD_CK_RUN, 0, "the longest completed checkpoint of a Flink job (its checkpointDuration, ms)")       \
    X(checkpoint_bytes_max, SD_CK_RUN, 0, "the largest completed checkpoint of a Flink job (bytes)")                        \
    /* the small-file problem: a file or Delta sink's log of the files each commit added */                               \
    X(files_written, SD_CK_BOUNDS, 0, "output files the target's commits added (Delta versions, a Spark file sink's batches)") \
    X(files_per_batch_max, SD_CK_BOUNDS, 0, "the most files one commit of the target added")                                \
    X(file_bytes_p50, SD_CK_BOUNDS, 0, "the median size of those files (bytes)")

#endif
