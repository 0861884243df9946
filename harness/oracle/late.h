/* late.h - which late events are late by the engine's own clock.
 *
 * The harness sends a late event behind the watermark it computes itself,
 * the newest event time sent minus the contract's delay, and the contract
 * says such an event is dropped (or quarantined). A micro-batch engine
 * holds late rows to a watermark that trails that one. Spark computes a
 * batch's watermark from the event times the batches before it read, and
 * (3.4 and later) filters a batch's late rows with the watermark of the
 * batch before: batch N's late rows are held to the newest event time read
 * by batches 0..N-2, minus the delay. A late event read by batch N while
 * that watermark had not passed its event time is not late yet to any
 * engine that keeps the contract: keeping it and dropping it are both
 * right (maybe-late). One at or behind it is certainly late.
 *
 * The rule rests on what the harness observed, not on what the pipeline
 * claims: the event times are the ledger's, the delay the contract's; the
 * engine tells only where each batch ended in the source (Spark's
 * offsets/N). A pipeline whose own watermark lags further, or that has
 * none, still leaks what this rule calls certainly late.
 *
 * Use: sd_late_rule_new with the batches' end offsets, sd_late_rule_see for
 * every message the source holds (any order), then sd_late_rule_judge for
 * each late one. */
#ifndef SD_LATE_H
#define SD_LATE_H

#include <stdint.h>

typedef struct sd_late_rule_s sd_late_rule_t;

/* n batches, oldest first: ids[i], and ends[i * partitions + p] the offset
 * batch ids[i] read partition p up to (exclusive; -1 when unknown). Batch N
 * read from batch N-1's ends (0 for batch 0). The arrays stay the caller's. */
sd_late_rule_t *sd_late_rule_new(int n, int partitions, const int64_t *ids, const int64_t *ends, int64_t delay_ms);
void sd_late_rule_free(sd_late_rule_t *lr);

/* The batch that read the message at (partition, offset): its index in
 * ids (>= 0); -1 when no batch read that far; -2 when it cannot be told
 * (an unknown end before it, or a batch missing between the ones listed). */
int sd_late_rule_batch_of(const sd_late_rule_t *lr, int partition, int64_t offset);

/* A message the source holds, with its event time (INT64_MIN: none). */
void sd_late_rule_see(sd_late_rule_t *lr, int partition, int64_t offset, int64_t t_ms);

/* A late message: 1 certainly late, 0 maybe-late, -1 cannot be told (the
 * harness's own rule judges it), -2 read by no batch. *batch: the batch
 * that read it; *wm_ms: the watermark its late rows were held to
 * (INT64_MIN: none yet). */
int sd_late_rule_judge(const sd_late_rule_t *lr, int partition, int64_t offset, int64_t t_ms, int64_t *batch, int64_t *wm_ms);

#endif
