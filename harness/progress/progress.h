/* progress.h - where a pipeline's progress comes from, behind one interface.
 *
 * A progress source answers the questions every wait and every landing
 * asks, whatever the pipeline: is the new incarnation ready, which batch
 * is in flight and since when, what has it committed, has it caught up
 * with the source. The sources (`progress` in the scenario) are small ops
 * structs chosen by name, like the sink readers:
 *
 *   markers  SD-READY and SD-BATCH begin/commit lines on the pipeline's
 *            stdout (pushed here by the supervisor's events)  progress_batch.c
 *   spark    a Spark checkpoint: offsets/N without commits/N   progress_spark.c
 *   sink     no batches: readiness by staying up, a mid-batch kill lands
 *            when the sink grows                               progress_batch.c
 *   flink    a Flink job's checkpoints: a batch is the interval between two
 *            completed ones                                    progress_flink.c
 *   group    the consumer group's committed offsets (a client of the
 *            group's id that never joins it): a commit when they move, a batch in flight while the sink
 *            holds rows past the newest commit      progress_group.c
 *   none     no batches                                        progress_batch.c
 *
 * Whatever reports them, batch events go through sd_progress_batch_event()
 * (progress_batch.h: what a source is and what it may call), which keeps
 * the newest incarnation's batch state and records them in run.db. A new
 * source is one new file with its ops and a name in sd_progress_get(). */
#ifndef SD_PROGRESS_H
#define SD_PROGRESS_H

#include <stdint.h>

#include "err.h"
#include "progress_batch.h"
#include "scenario.h"
#include "supervisor.h"

typedef struct sd_group_s sd_group_t;

extern const sd_progress_ops_t sd_progress_spark;
/* Spark's own account of a batch (a StreamingQueryProgress the listener
 * printed, progress_spark.c): recorded in run.db with the state each
 * stateful operator kept after it. */
/* An engine's own account of its state ("state FROM TO", Kafka Streams'):
 * readiness under progress group waits for RUNNING as well. */
void sd_progress_engine_state(struct sd_run_s *r, int inc, const char *text);
/* A fault waits (1) or no longer waits (0) for a batch to begin inside:
 * a source read every 100 ms looks for a begin at each pump meanwhile (a
 * transaction that opens and commits between two of its turns is no
 * batch it could see). */
void sd_progress_aiming(struct sd_run_s *r, int on);
sd_err_t sd_progress_spark_account(struct sd_run_s *r, int inc, int64_t t_ms, const char *text, char *err, size_t errlen);
/* The source offsets such an account says its batch read (run: the run;
 * see sd_account_ranges_fn in ledger.h). */
struct sd_offset_range_s;
int sd_progress_spark_ranges(void *run, const char *json, struct sd_offset_range_s **out);
extern const sd_progress_ops_t sd_progress_group;
extern const sd_progress_ops_t sd_progress_flink;

/* progress flink: the newest completed checkpoint under a job's checkpoint
 * storage DIR (DIR/JOB/chk-N holding _metadata), its _metadata's mtime in
 * epoch ms and, when meta_path is not NULL, its _metadata's path (to free),
 * and the newest triggered one (chk-N made); -1 when none. Returns -1 (why
 * names the file) when the storage is damaged: a _metadata that is not a
 * regular file, a checkpoint id past SD_CHECKPOINT_ID_MAX. */
int sd_flink_scan(const char *dir, int64_t *completed, int64_t *completed_ms, int64_t *triggered, char **meta_path, char *why,
                  size_t wlen);
/* The most bytes of a _metadata file the harness reads. */
#define SD_FLINK_METADATA_MAX (64u << 20)
/* The source offsets a checkpoint's _metadata holds: "P:O,..." for topic
 * (the offset each partition reads next), then ",SIDE:P:O..." for the
 * second source when side is not NULL and its splits are there. NULL
 * (to free otherwise) when not every partition of topic has a split there:
 * state kept in files of its own, another source, or no checkpoint yet;
 * why (may be NULL) is left empty, or names the file and the cause when it
 * cannot be read safely (not a regular file, over SD_FLINK_METADATA_MAX). */
char *sd_flink_offsets(const char *meta, const char *topic, int partitions, const char *side, int side_partitions, char *why,
                       size_t wlen);
/* The same over a _metadata's bytes (any bytes: the fuzz target's). */
char *sd_flink_offsets_in(const void *buf, size_t n, const char *topic, int partitions, const char *side, int side_partitions);
/* Do the batches run from commit to commit, always open (Spark's real-time
 * intervals, Flink's checkpoint intervals)? */
int sd_progress_intervals(const struct sd_run_s *r);

/* progress group: the group watched (NULL for the other sources). */
const char *sd_progress_group_name(const struct sd_run_s *r);
/* Records written inside the pipeline's open transactions, as a kill aimed
 * at one finds them: the target's, else those of its own topics its
 * progress source knows (ops->open_records: a Kafka Streams application's
 * repartition and changelog topics); 0 between transactions, -1 no sign
 * of a transactional writer (progress_batch.c). in_own (may be NULL) is
 * set to 1 when the records counted are in its own topics, not the target. */
int64_t sd_progress_open_records(struct sd_run_s *r, int *in_own);
/* progress group on a broker that describes groups: 1 when the group had
 * neither a member nor a commit in the whole run (it never saw the pipeline). */
int sd_progress_group_unseen(const struct sd_run_s *r);
/* A SIGKILL of incarnation inc left left records open in a transaction of
 * the target: follow it, and warn (txn-unfenced) when it holds the target's
 * last stable offset back while a later incarnation commits. */
void sd_progress_group_kill_left(struct sd_run_s *r, int inc, int64_t left);
/* The last look at such a transaction, before the run is judged: one still
 * holding the last stable offset back after a later incarnation committed
 * is said then (txn-unfenced), as one that was released is at once. */
void sd_progress_group_last_look(struct sd_run_s *r);

/* The source a scenario names. */
const sd_progress_ops_t *sd_progress_get(sd_progress_t kind);

/* Open r's source: its progress state (sd_run_progress) set up for the
 * run's topics and broker ports; close frees it. */
sd_err_t sd_progress_open(struct sd_run_s *r, char *err, size_t errlen);
void sd_progress_close(struct sd_run_s *r);
/* The questions, asked of r's source. */
sd_err_t sd_progress_poll(struct sd_run_s *r, char *err, size_t errlen);
/* Poll the progress source now, not at its next turn (before a fault
 * acts on the batch it believes open: a commit polled 100 ms ago is old). */
sd_err_t sd_progress_refresh(struct sd_run_s *r, char *err, size_t errlen);
int sd_progress_ready(struct sd_run_s *r, const sd_sup_state_t *st, int64_t up_ms);
/* Is a batch of the newest incarnation in flight? Polls first. */
int sd_progress_in_flight(struct sd_run_s *r);
/* Has the pipeline committed every source partition to its end (from the
 * offsets its commits report)? 1 yes, 0 no (why says where it stands), -1 unknown
 * (always for progress flink: its checkpoints' offsets prove nothing either way). */
int sd_progress_caught_up(struct sd_run_s *r, char *why, size_t wlen);
/* Expected duration (ms) of a batch of `rows` rows, from the batches seen
 * so far (a + b*rows fitted on them); 0 when there is no history. */
int64_t sd_progress_expected_batch_ms(const struct sd_run_s *r, int64_t rows);
/* The shortest batch seen so far (ms), 0 when none. */
int64_t sd_progress_shortest_batch_ms(const struct sd_run_s *r);
/* How long (ms) after a batch's begin a mid-batch fault aims to land, from the
 * batches seen so far. With the batch's size known (rows= on its marker,
 * or, when the commit markers name their offsets, the messages sent past
 * the newest commit): half of what a batch that size took, fitted on the
 * earlier batches' sizes and durations. With the size unknown the batch
 * may be far shorter than the ones seen: an eighth of the shortest batch
 * (and of the mean), at once when there is no history. After each batch
 * whose commit won the race, the aim moves halfway earlier. Spark's
 * real-time intervals last as long as their trigger whatever they hold:
 * there the aim is half of the mean interval. */
int64_t sd_progress_aim_ms(const struct sd_run_s *r, int64_t batch_rows, int misses);
/* Where a fault aimed at batch `batch` of the newest incarnation landed,
 * asked once the pipeline is gone. Inside: the batch had not committed, or
 * a graceful signal (sent at signal_mono) let the pipeline finish and
 * commit it on the way out (*finished then 1). Between: no later batch had
 * begun after the commit it waited for. */
int sd_progress_landed_inside(const struct sd_run_s *r, int64_t batch, int graceful_signal, int64_t signal_mono, int *finished);
int sd_progress_landed_between(const struct sd_run_s *r, int64_t batch);
/* The batches the engine planned, asked once the run is over, oldest
 * first: *ids, and the run's topic's partitions' end offsets of batch i at
 * *ends + i * partitions (-1 when unknown). Batch N read from the ends of
 * batch N-1 to its own. Returns their number, -1 when the progress source
 * cannot tell (only progress spark can: offsets/N). */
int sd_progress_batch_ends(struct sd_run_s *r, const int64_t **ids, const int64_t **ends);
/* What the engine's own records say now, appended to out for the runbook
 * at a fault: progress spark names the newest offsets/N and commits/N of
 * its checkpoint and of every other query's beside it, the batch in
 * flight and the watermark it runs with. Nothing for the other sources. */
void sd_progress_context(struct sd_run_s *r, sd_buf_t *out);
/* A new incarnation started (wall ms): its batches start from scratch. */
void sd_progress_new_incarnation(struct sd_run_s *r, int inc, int64_t started_wall);
/* The batch state follows incarnation inc from now (its markers from now;
 * nothing when it already does): a start, or a change of the instance in
 * focus. */
void sd_progress_follow(struct sd_run_s *r, int inc);
#endif
