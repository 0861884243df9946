/* process.c - process faults: start, stop, kill (now or mid-batch),
 * restart on the same checkpoint, pause and resume.
 *
 * "Mid-batch" is found, not guessed. With batch markers, the kill waits
 * for a batch to begin (SD-BATCH begin) and lands before its commit: once
 * half of the batch's rows are visible in the target sink, or after half
 * the batch's expected duration (rows x the mean time per row of earlier
 * batches), whichever comes first, or `after=` when given. If the commit
 * wins the race the harness waits for the next batch. After the kill the
 * harness reads the incarnation's output to the end and records whether
 * the batch's commit marker had been printed: that, the batch number and
 * how many of its rows were visible are stored with the fault. Without
 * markers (progress sink), the kill lands as soon as the sink starts to
 * grow after the step began. `kill at-boundary` lands right after a
 * batch's commit, before the next batch begins. `visible=N` drops the
 * time aim: the fault lands once N of the batch's rows are in the target
 * (all of them when the batch is smaller), for a drill that needs part of
 * a batch written before the kill. `pause` takes the same landing words,
 * and for=D to resume by itself. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

static int sd_process_handles(sd_step_kind_t k) {
    return k == SD_STEP_START || k == SD_STEP_STOP || k == SD_STEP_KILL || k == SD_STEP_RESTART || k == SD_STEP_PAUSE ||
           k == SD_STEP_RESUME || k == SD_STEP_SCALE;
}

static const char *sd_sig_name(int sig) {
    switch (sig) {
    case SIGKILL: return "KILL";
    case SIGTERM: return "TERM";
    case SIGINT: return "INT";
    case SIGQUIT: return "QUIT";
    case SIGHUP: return "HUP";
    case SIGSTOP: return "STOP";
    case SIGCONT: return "CONT";
    }
    return "?";
}

static int64_t sd_target_rows(sd_run_t *r) {
    int64_t rows = -1;
    if (sd_run_target(r) && sd_sink_count(sd_run_target(r), 1, &rows, NULL, 0) != SD_OK) rows = -1;
    return rows;
}

/* Records written and not yet visible: an open transaction of a
 * transactional writer, in the target or the application's own topics
 * (-1: no sign of one, or a reader that cannot tell). */
static int64_t sd_target_pending(sd_run_t *r) {
    return sd_progress_open_records(r, NULL);
}

/* The instances a step acts on: instance=K when it runs, else every
 * running instance. Their count; out holds SD_MAX_INSTANCES. */
static int sd_process_targets(sd_run_t *r, const sd_step_t *st, int *out) {
    if (!st->proc.instance) return sd_run_running_instances(r, out);
    sd_sup_state_t s;
    sd_sup_instance_state(sd_run_sup(r), st->proc.instance, &s);
    if (!s.running) return 0;
    out[0] = st->proc.instance;
    return 1;
}

/* Send sig to each target instance (SIGSTOP, SIGCONT: no wait). */
static sd_err_t sd_process_signal_each(sd_run_t *r, const int *t, int n, int sig, const char *by, char *err, size_t errlen) {
    sd_err_t e = SD_OK;
    for (int i = 0; i < n && !e; i++) {
        sd_sup_focus(sd_run_sup(r), t[i]);
        e = sd_sup_signal(sd_run_sup(r), sig, by, err, errlen);
    }
    if (n) sd_sup_focus(sd_run_sup(r), t[0]);
    return e;
}

/* Send sig to the target instances, wait for their exits (escalating to
 * SIGKILL after timeout_ms). The focus is left on the first target, so
 * sd_sup_state() tells its exit. The plan still wants the pipeline running
 * when instances other than the targets run. A deployed pipeline is
 * signalled through its `deploy kill` or `deploy stop` command, run once:
 * there is no SIGKILL to escalate to, and one still running timeout_ms
 * later was not struck (SD_ERR_NOT_LANDED, saying so). */
static sd_err_t sd_process_signal_wait(sd_run_t *r, const int *t, int n, int sig, const char *by, int64_t timeout_ms, int *escalated,
                                       char *err, size_t errlen) {
    int run[SD_MAX_INSTANCES];
    sd_run_want_pipeline(r, sd_run_running_instances(r, run) > n);
    sd_err_t e = sd_process_signal_each(r, t, n, sig, by, err, errlen);
    if (e) return e;
    *escalated = 0;
    int deployed = sd_run_sc(r)->deploy[SD_DEPLOY_START].argv != NULL;
    int64_t t0 = sd_util_mono_ms(), deadline = t0 + timeout_ms;
    for (;;) {
        int drained = 1;
        for (int i = 0; i < n; i++) {
            sd_sup_state_t st;
            sd_sup_instance_state(sd_run_sup(r), t[i], &st);
            if (!st.drained) drained = 0;
        }
        if (drained) return SD_OK;
        if (sd_util_mono_ms() > deadline && deployed) {
            const char *cmd = sig == SIGKILL || !sd_run_sc(r)->deploy[SD_DEPLOY_STOP].argv ? "kill" : "stop";
            return sd_err_set(err, errlen, SD_ERR_NOT_LANDED, "`deploy %s` ran, and `deploy status` still said the deployment runs %.0fs "
                              "later: the %s did not strike (the follower's stderr in the pipeline's log shows the command's end)", cmd,
                              (double)(sd_util_mono_ms() - t0) / 1000.0, by ? by : "signal");
        }
        if (sd_util_mono_ms() > deadline && !*escalated) {
            *escalated = 1;
            sd_process_signal_each(r, t, n, SIGKILL, by, NULL, 0);
            deadline = sd_util_mono_ms() + sd_util_scaled_ms(10000);
        } else if (sd_util_mono_ms() > deadline) {
            return sd_err_set(err, errlen, SD_ERR_INTERNAL, "pipeline: still alive %.0fs after the %s, 10s after SIGKILL",
                              (double)(sd_util_mono_ms() - t0) / 1000.0, sd_sig_name(sig));
        }
        if ((e = sd_run_tick(r, 10, err, errlen))) return e;
    }
}

/* "instance K: " for a pipeline of several instances, else "" */
static const char *sd_process_who(sd_run_t *r, int instance, char *buf, size_t len) {
    if (sd_run_instances(r) > 1 && instance) snprintf(buf, len, "instance %d: ", instance);
    else buf[0] = 0;
    return buf;
}

const char *const sd_placed_words[] = {"now", "mid-batch", "at a batch boundary", "when the sink grew", "after the sink's commit"};

/* kill after-sink-commit: the batch in flight (offsets written, no commit
 * yet) is watched through the target sink's mark (sink.h: a Delta table's
 * newest version, else its row count), polled every millisecond. When the
 * mark moves, the pipeline's group is frozen at once (SIGSTOP) and the
 * checkpoint read again: if the batch is still uncommitted, the sink holds
 * the batch and the checkpoint does not, and the kill lands on the frozen
 * group. If the checkpoint's commit won the race the group is thawed and
 * the next batch is taken. */
static sd_err_t sd_process_wait_sink_commit(sd_run_t *r, const sd_step_t *st, sd_landing_t *L, int *gone, char *err, size_t errlen) {
    sd_progress_run_t *P = sd_run_progress(r);
    L->how = SD_PLACED_AFTER_SINK_COMMIT;
    if (!P->ops->batches)
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "kill after-sink-commit: the progress source does not tell batches apart (use "
                          "`progress spark checkpoint=...` or batch markers)");
    if (!sd_run_target(r)) return sd_err_set(err, errlen, SD_ERR_SCENARIO, "kill after-sink-commit: the scenario declares no target sink");
    int64_t deadline = sd_util_mono_ms() + sd_util_scaled_ms(st->timeout_ms);
    const sd_run_batches_t *b = &P->bs;
    int misses = 0;
    sd_err_t e;
    for (;;) {
        if ((e = sd_run_pump(r, err, errlen))) return e;
        sd_sup_state_t s;
        sd_sup_state(sd_run_sup(r), &s);
        if (!s.running) { *gone = 1; return SD_OK; }
        if (sd_util_mono_ms() > deadline)
            return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "kill after-sink-commit: no batch showed in the sink before its checkpoint commit "
                              "within %.0fs (%d batches committed first)", (double)sd_util_scaled_ms(st->timeout_ms) / 1000.0, misses);
        if (b->begun <= b->committed) {
            if ((e = sd_run_tick(r, 2, err, errlen))) return e;
            continue;
        }
        int64_t batch = b->begun, mark0 = sd_sink_mark(sd_run_target(r)), next_pump = sd_util_mono_ms() + 20;
        for (;;) {
            int64_t m = sd_sink_mark(sd_run_target(r));
            if (m >= 0 && m != mark0) {
                sd_sup_signal(sd_run_sup(r), SIGSTOP, NULL, NULL, 0);
                sd_run_pump(r, NULL, 0);
                if (b->begun == batch && b->committed < batch) {
                    L->batch = batch;
                    L->mark0 = mark0;
                    L->mark1 = m;
                    L->rows0 = -1;
                    return SD_OK;
                }
                sd_sup_signal(sd_run_sup(r), SIGCONT, NULL, NULL, 0);
                break;
            }
            if (sd_util_mono_ms() >= next_pump) {
                if ((e = sd_run_pump(r, err, errlen))) return e;
                sd_sup_state(sd_run_sup(r), &s);
                if (b->committed >= batch || b->begun != batch || !s.running || sd_util_mono_ms() > deadline) break;
                next_pump = sd_util_mono_ms() + 20;
            }
            sd_util_sleep_ms(1);
        }
        misses++;
    }
}

/* How long a frozen pipeline's requests in flight are given to settle
 * before the harness looks (a local broker answers in a few ms; a
 * transaction's markers are written after its EndTxn is answered). */
#define SD_FREEZE_SETTLE_MS 100

/* What would make a mid-batch fault land, for its message: batches that
 * outlast the fault's way in; after= set: a shorter one, else after=1ms;
 * a batch of unknown size (batch_rows < 0): markers with rows=. */
static void sd_fault_land_hint(const sd_step_t *st, int64_t batch_rows, char *out, size_t len) {
    snprintf(out, len, "to land inside a batch: batches that last longer than the fault takes to arrive (more rows per batch, "
             "a slower sink or trigger), %s%s", st->proc.after_ms >= 0 ? "a shorter after= (it waits past the batch's end)"
                                                                      : "`after=1ms` to act as soon as one begins",
             batch_rows >= 0 ? "" : ", or batch markers with rows= so the harness aims by the batch's size");
}

/* Without batches (progress sink, none), mid-batch is the target growing
 * by grow rows after the step began; for a transactional target (one
 * that has shown an open transaction or a marker), an open transaction
 * holding that many records: its rows become visible at its commit, when
 * the batch is already past. */
static sd_err_t sd_process_wait_growth(sd_run_t *r, const sd_step_t *st, sd_landing_t *L, int64_t deadline, char *err,
                                       size_t errlen) {
    sd_err_t e;
    L->how = SD_PLACED_SINK_GREW;
    L->rows0 = sd_target_rows(r);
    int64_t grow = st->proc.visible > 0 ? st->proc.visible : 1;
    int txn = 0;
    int64_t grew_mono = -1;
    for (;;) {
        int64_t now_rows = sd_target_rows(r);
        int64_t pend = sd_target_pending(r);
        txn |= pend >= 0;
        int hit = pend >= 0 ? pend >= grow : L->rows0 >= 0 && now_rows - L->rows0 >= grow;
        /* after=D: that long after the growth began (a transaction
         * that commits sooner is missed: the next one is waited for) */
        if (!hit) grew_mono = -1;
        else if (grew_mono < 0) grew_mono = sd_util_mono_ms();
        if (hit && (st->proc.after_ms < 0 || sd_util_mono_ms() - grew_mono >= st->proc.after_ms)) {
            L->pending = pend;
            return SD_OK;
        }
        if (sd_util_mono_ms() > deadline)
            return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "%s mid-batch: %s%s within %.0fs", st->kind == SD_STEP_PAUSE ? "pause" : "kill",
                              txn ? "no transaction of the target held records written and not committed" : "the sink did not grow",
                              st->proc.visible > 0 ? " by visible= rows" : "", (double)sd_util_scaled_ms(st->timeout_ms) / 1000.0);
        if ((e = sd_run_tick(r, 5, err, errlen))) return e;
    }
}

/* The last look before a mid-batch signal at the batch it waited for:
 * *missed set when the batch turns out done (or, on a transactional
 * target, no transaction holds records), *pend the records an open
 * transaction of the target holds (-1 unknown). A source read every 100
 * ms (a consumer group's commits) may not have seen the commit yet: it is
 * asked now. The target is asked last: a transaction that committed
 * meanwhile is not one to land in (the next is waited for). A SIGKILL on
 * a transactional target freezes the pipeline first (SIGSTOP, as
 * after-sink-commit does) and asks once what it had in flight has settled
 * (a commit it sent just before: the broker writes its markers after): no
 * commit can fall between this look and the kill; a batch found committed
 * thaws it (SIGCONT). */
static sd_err_t sd_process_last_look(sd_run_t *r, const sd_step_t *st, int64_t batch, int *missed, int64_t *pend, char *err,
                                     size_t errlen) {
    const sd_run_batches_t *b = &sd_run_progress(r)->bs;
    sd_err_t e;
    if ((e = sd_progress_refresh(r, err, errlen))) return e;
    if (b->committed >= batch || b->begun != batch) *missed = 1;
    int frozen = !*missed && st->kind == SD_STEP_KILL && st->proc.signal == SIGKILL && sd_target_pending(r) >= 0 &&
                 sd_sup_signal(sd_run_sup(r), SIGSTOP, NULL, NULL, 0) == SD_OK;
    if (frozen) {
        sd_util_sleep_ms(SD_FREEZE_SETTLE_MS);
        if ((e = sd_progress_refresh(r, err, errlen))) return e;
        if (b->committed >= batch || b->begun != batch) *missed = 1;
    }
    *pend = *missed ? -1 : sd_target_pending(r);
    if (*pend == 0 && st->proc.visible <= 0) *missed = 1;
    if (frozen && *missed) sd_sup_signal(sd_run_sup(r), SIGCONT, NULL, NULL, 0);
    return SD_OK;
}

/* The caller's work before the strike (sd_landing_t.prepare), once the
 * aim is reached: before the last look inside a batch, else after the
 * wait. */
static sd_err_t sd_process_prepare(sd_run_t *r, const sd_landing_t *L, char *err, size_t errlen) {
    return L->prepare ? L->prepare(r, L->prepare_arg, err, errlen) : SD_OK;
}

/* An optional fault that waited for a batch or a commit with nothing left
 * for the pipeline to read (sd_run_unfed): skipped now, as at its timeout. */
static sd_err_t sd_process_unfed(const sd_step_t *st, const char *where, char *err, size_t errlen) {
    return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "%s %s: nothing left for the pipeline to read for %.1fs (every partition "
                      "committed to its end, nothing being sent): no batch can begin", st->kind == SD_STEP_PAUSE ? "pause" : "kill",
                      where, SD_RUN_UNFED_MS / 1000.0);
}

/* Inside a batch the progress source tracks: the moment its rows or its
 * open transaction say the batch is in flight (sd_process_wait_point). */
static sd_err_t sd_process_wait_mid_batch(sd_run_t *r, const sd_step_t *st, sd_landing_t *L, int64_t deadline, int *gone, char *err,
                                          size_t errlen) {
    sd_progress_run_t *P = sd_run_progress(r);
    sd_sup_state_t s;
    /* tries: every miss, each one aiming earlier in the batch (with no
     * after=, the aim halves, and a batch seen late is tried again);
     * misses: the batches missed, each counted once; passed: with after=,
     * a batch already past its aim, never to be tried again (the next one
     * is waited for) */
    int tries = 0, misses = 0;
    int64_t last_missed = -1, passed = -1;
    sd_err_t e;
    sd_run_unfed_t unfed = {0};
    for (;;) {
        if ((e = sd_run_pump(r, err, errlen))) return e;
        sd_sup_state(sd_run_sup(r), &s);
        if (!s.running) { *gone = 1; return SD_OK; }
        if (st->optional && st->proc.visible <= 0 && sd_run_unfed(r, &unfed)) return sd_process_unfed(st, "mid-batch", err, errlen);
        if (sd_util_mono_ms() > deadline && misses && st->proc.visible <= 0) {
            /* batches came and went: say so, and what would make it land */
            char hint[512];
            sd_fault_land_hint(st, -1, hint, sizeof(hint));
            return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "%s mid-batch: each of the %d batches that began within %.0fs committed "
                              "before the harness could act; %s", st->kind == SD_STEP_PAUSE ? "pause" : "kill", misses,
                              (double)sd_util_scaled_ms(st->timeout_ms) / 1000.0, hint);
        }
        if (sd_util_mono_ms() > deadline)
            return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "%s mid-batch%s: no batch %s within %.0fs (%d batches committed before the harness could act)",
                              st->kind == SD_STEP_PAUSE ? "pause" : "kill", st->proc.visible > 0 ? " visible=" : "",
                              st->proc.visible > 0 ? "showed those rows in the target before its commit" : "began",
                              (double)sd_util_scaled_ms(st->timeout_ms) / 1000.0, misses);
        const sd_run_batches_t *b = &P->bs;
        if (b->begun > b->committed && b->begun != passed && b->begun_rows != 0 && (!sd_run_sc(r)->spark_realtime || s.ready)) {
            int64_t batch = b->begun, batch_rows = b->begun_rows;
            /* a sink that takes long to count (a command, a table read
             * by Spark) is not counted here unless visible= needs it:
             * the count would outlast the moment the kill aims at */
            int64_t rows0 = b->begun_sink_rows >= 0 ? b->begun_sink_rows
                            : st->proc.visible > 0        ? sd_target_rows(r)
                                                     : sd_progress_target_rows(r);
            int64_t began = b->begun_mono;
            int64_t delay = st->proc.after_ms >= 0 ? st->proc.after_ms : sd_progress_aim_ms(r, batch_rows, tries);
            int64_t grow = batch_rows > 0 ? (batch_rows + 1) / 2 : 1;
            /* the target's growth tells this batch's rows only when one
             * instance writes it */
            int run[SD_MAX_INSTANCES];
            int use_growth = st->proc.after_ms < 0 && sd_run_sample_cost_ms(r) <= 20 && rows0 >= 0 && batch_rows > 0 &&
                             sd_run_running_instances(r, run) <= 1;
            if (st->proc.visible > 0) {
                /* visible=N: no time aim, only the target's rows (a
                 * batch smaller than N lands once all of it is there) */
                if (rows0 < 0)
                    return sd_err_set(err, errlen, SD_ERR_SINK, "%s mid-batch visible=: the target sink cannot be counted",
                                      st->kind == SD_STEP_PAUSE ? "pause" : "kill");
                grow = batch_rows > 0 && batch_rows < st->proc.visible ? batch_rows : st->proc.visible;
                delay = INT64_MAX;
                use_growth = 1;
            }
            int missed = 0;
            /* seen too late to land where it should (a long real-time
             * interval already past the point): take the next batch */
            if (delay > 0 && delay != INT64_MAX && sd_util_mono_ms() - began > delay + 50) missed = 1;
            for (; !missed;) {
                if ((e = sd_run_pump(r, err, errlen))) return e;
                sd_sup_state(sd_run_sup(r), &s);
                if (b->committed >= batch || b->begun != batch || !s.running) { missed = 1; break; }
                int64_t el = sd_util_mono_ms() - began;
                /* a transactional target (pend >= 0): inside the batch
                 * is inside its open transaction, records written and
                 * not committed; with no after= or visible= to aim by,
                 * the first moment one holds records */
                int64_t pend = sd_target_pending(r);
                int aimed;
                if (pend >= 0 && st->proc.after_ms < 0 && st->proc.visible <= 0) {
                    aimed = pend > 0;
                } else {
                    aimed = el >= delay;
                    if (!aimed && use_growth) {
                        int64_t now_rows = sd_target_rows(r);
                        aimed = now_rows >= 0 && now_rows - rows0 >= grow;
                    }
                    if (pend == 0) aimed = 0; /* between its transactions: the next one */
                }
                if (aimed) break;
                /* the pump does not look at the stop flag: the tick does */
                if (sd_run_stop_requested && (e = sd_run_tick(r, 0, err, errlen))) return e;
                if (sd_util_mono_ms() > deadline) {
                    if (pend == 0)
                        return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "%s mid-batch: batch %lld was in flight and the target "
                                          "held no open transaction (no record written and not committed) within %.0fs "
                                          "(a transaction holds records only once its producer sends them: one that lingers "
                                          "as long as its commit interval, as Kafka Streams' does by default, sends them at "
                                          "the commit; a producer linger.ms of 5 ms lets a kill find them)",
                                          st->kind == SD_STEP_PAUSE ? "pause" : "kill", (long long)batch,
                                          (double)sd_util_scaled_ms(st->timeout_ms) / 1000.0);
                    missed = 1;
                    break;
                }
                sd_util_sleep_ms(2);
            }
            int64_t pend = -1;
            if (!missed && (e = sd_process_prepare(r, L, err, errlen))) return e;
            if (!missed && (e = sd_process_last_look(r, st, batch, &missed, &pend, err, errlen))) return e;
            if (!missed) {
                L->batch = batch;
                L->batch_rows = batch_rows;
                L->rows0 = rows0;
                L->pending = pend;
                return SD_OK;
            }
            tries++;
            if (batch != last_missed) misses++, last_missed = batch;
            if (st->proc.after_ms >= 0) passed = batch;
        }
        if ((e = sd_run_tick(r, 5, err, errlen))) return e;
    }
}

/* Wait for the moment the step asks for (st->proc.mid_batch): inside a batch
 * (see the top of this file), right after a batch's commit before the next
 * one begins, after the sink's commit, or now. Returns SD_OK when it is time, SD_ERR_TIMEOUT
 * when no batch came, or sets *gone when the pipeline exited meanwhile. */
static sd_err_t sd_process_wait_point(sd_run_t *r, const sd_step_t *st, sd_landing_t *L, int *gone, char *err, size_t errlen) {
    sd_progress_run_t *P = sd_run_progress(r);
    L->how = SD_PLACED_NOW;
    L->batch = L->batch_rows = L->rows0 = L->mark0 = L->mark1 = L->pending = -1;
    *gone = 0;
    if (st->proc.mid_batch == SD_LAND_AFTER_SINK_COMMIT) return sd_process_wait_sink_commit(r, st, L, gone, err, errlen);
    sd_sup_state_t s;
    int64_t deadline = sd_util_mono_ms() + sd_util_scaled_ms(st->timeout_ms);
    sd_err_t e;
    int tracked = P->ops->batches;
    if (st->proc.mid_batch == SD_LAND_AT_BOUNDARY && tracked) {
        /* at a boundary: the moment a commit is seen */
        L->how = SD_PLACED_AT_BOUNDARY;
        if ((e = sd_run_pump(r, err, errlen))) return e;
        int64_t seen = P->bs.commits;
        sd_run_unfed_t unfed = {0};
        for (;;) {
            if ((e = sd_run_pump(r, err, errlen))) return e;
            sd_sup_state(sd_run_sup(r), &s);
            if (!s.running) { *gone = 1; return SD_OK; }
            if (P->bs.commits > seen && P->bs.begun <= P->bs.committed) {
                L->batch = P->bs.committed;
                L->rows0 = sd_target_rows(r);
                return SD_OK;
            }
            if (st->optional && sd_run_unfed(r, &unfed)) return sd_process_unfed(st, "at-boundary", err, errlen);
            if (sd_util_mono_ms() > deadline)
                return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "%s at-boundary: no batch committed within %.0fs", st->kind == SD_STEP_PAUSE ? "pause" : "kill",
                                  (double)sd_util_scaled_ms(st->timeout_ms) / 1000.0);
            sd_util_sleep_ms(1);
        }
    }
    if (st->proc.mid_batch == SD_LAND_MID_BATCH && tracked) {
        L->how = SD_PLACED_MID_BATCH;
        sd_progress_aiming(r, 1);
        e = sd_process_wait_mid_batch(r, st, L, deadline, gone, err, errlen);
        sd_progress_aiming(r, 0);
        return e;
    }
    if (st->proc.mid_batch != SD_LAND_NOW && sd_run_target(r)) return sd_process_wait_growth(r, st, L, deadline, err, errlen);
    return SD_OK;
}

/* Record where a fault landed: inside the batch it waited for, or not.
 * signal_mono is when the signal was sent (0: no signal). A commit of the
 * batch seen after a SIGTERM means the pipeline finished the batch before
 * it exited: the signal still landed inside it. */
int sd_fault_landing(sd_run_t *r, int64_t fid, const sd_landing_t *L, int inc, int escalated, int sig,
                               int64_t signal_mono, char *out, size_t olen) {
    sd_run_pump(r, NULL, 0); /* the dead incarnation's last markers, or the checkpoint as it was left */
    int64_t rows1 = sd_target_rows(r);
    int64_t visible = L->rows0 >= 0 && rows1 >= 0 ? rows1 - L->rows0 : -1;
    char land[768], incs[48];
    int ok = 1, k = sd_run_instances(r) > 1 ? sd_run_instance_of(r, inc) : 0;
    if (k) snprintf(incs, sizeof(incs), "incarnation %d (instance %d)", inc, k);
    else snprintf(incs, sizeof(incs), "incarnation %d", inc);
    if (L->batch >= 0 && L->mark1 >= 0) {
        /* after-sink-commit: the group was frozen before the kill, so the
         * checkpoint cannot have moved; read it again all the same */
        int inside = sd_run_progress(r)->bs.committed < L->batch;
        snprintf(land, sizeof(land), "%s batch %lld of %s: the sink's commit seen (mark %lld -> %lld), %s",
                 inside ? "after the sink's commit of" : "too late for", (long long)L->batch, incs, (long long)L->mark0, (long long)L->mark1,
                 inside ? "the checkpoint's commit not written" : "the checkpoint had recorded the batch");
        sd_ledger_fault_landing(sd_run_ledger(r), fid, L->batch, inside, -1, INT64_MIN, land, NULL, 0);
        if (!inside) sd_run_fault_missed(r, &sd_run_sc(r)->steps[sd_run_step_index(r)], land), ok = 0;
    } else if (L->batch >= 0 && L->how == SD_PLACED_MID_BATCH) {
        int graceful = 0;
        int inside = sd_progress_landed_inside(r, L->batch, sig != SIGKILL, signal_mono, &graceful);
        /* A transactional target asked again once a SIGKILL has taken its
         * only writer (nothing of its can commit or abort any more): what
         * the kill left open, said beside the verdict, which stays the
         * batch's (an open transaction is no proof by itself: one an earlier
         * incarnation left to its timeout looks the same). Several
         * instances write the target: not told apart. */
        int in_own = 0;
        int64_t left = sig == SIGKILL && !k && L->pending >= 0 ? sd_progress_open_records(r, &in_own) : -1;
        if (left > 0 && !in_own) sd_progress_group_kill_left(r, inc, left);
        char size[48] = "size unknown";
        if (L->batch_rows >= 0) snprintf(size, sizeof(size), "%lld rows", (long long)L->batch_rows);
        char seen[360];
        /* before the sink's commit a writer that is not idempotent is still
         * right: say which aim catches it */
        if (visible == 0)
            snprintf(seen, sizeof(seen), "none of its rows visible in the target yet%s (as expected of a pipeline that makes a "
                     "batch's rows visible at its commit; a sink that is not idempotent is still right here: `kill "
                     "after-sink-commit` is the aim that catches it)", k ? " (of any instance)" : "");
        else if (visible > 0)
            snprintf(seen, sizeof(seen), "%lld rows%s reached the target between its start and the fault", (long long)visible,
                     k ? " (of every instance)" : "");
        else snprintf(seen, sizeof(seen), "the target not counted at its start (a count takes %lld ms)", (long long)sd_run_sample_cost_ms(r));
        char txn[260] = "";
        /* where the open transaction's records are: the target, or only the
         * application's own topics (a windowed count between two windows) */
        const char *of = !in_own ? "the target" : "the application (in its repartition and changelog topics)";
        if (left > 0 && inside)
            snprintf(txn, sizeof(txn), "; inside an open transaction of %s, left open by the kill (%lld records written, not "
                     "committed)", of, (long long)left);
        else if (left > 0)
            snprintf(txn, sizeof(txn), "; an open transaction of %s after the kill (%lld records written, not committed), "
                     "not the batch's", of, (long long)left);
        else if (left == 0)
            snprintf(txn, sizeof(txn), "; the kill left no transaction of the target open");
        else if (L->pending > 0)
            snprintf(txn, sizeof(txn), "; inside an open transaction (%lld records written, not committed)", (long long)L->pending);
        else if (L->pending == 0)
            snprintf(txn, sizeof(txn), "; no transaction of the target open");
        snprintf(land, sizeof(land), "%s batch %lld of %s (%s); %s%s%s%s",
                 inside ? "inside" : "after the commit of", (long long)L->batch, incs, size, seen, txn,
                 !graceful ? "" : sig == 0 ? "; the pipeline went on and committed the batch after the fault" : "; the pipeline finished and committed the batch before it exited",
                 escalated ? "; escalated to SIGKILL" : "");
        sd_ledger_fault_landing(sd_run_ledger(r), fid, L->batch, inside, visible, L->batch_rows, land, NULL, 0);
        if (!inside) {
            /* what would make it land, said where the miss is */
            char why[1200], hint[400]; /* the hint is under 300 characters */
            sd_fault_land_hint(&sd_run_sc(r)->steps[sd_run_step_index(r)], L->batch_rows, hint, sizeof(hint));
            snprintf(why, sizeof(why), "%s; %s", land, hint);
            sd_run_fault_missed(r, &sd_run_sc(r)->steps[sd_run_step_index(r)], why), ok = 0;
        }
    } else if (L->batch >= 0) {
        int clean = sd_progress_landed_between(r, L->batch);
        snprintf(land, sizeof(land), "%s after the commit of batch %lld of %s%s", clean ? "between batches," : "late: a new batch had begun",
                 (long long)L->batch, incs, escalated ? "; escalated to SIGKILL" : "");
        sd_ledger_fault_landing(sd_run_ledger(r), fid, L->batch, clean ? 0 : 1, visible, INT64_MIN, land, NULL, 0);
        if (!clean) sd_run_fault_missed(r, &sd_run_sc(r)->steps[sd_run_step_index(r)], land), ok = 0;
    } else {
        /* without batches (progress sink), "mid-batch" is the sink growing
         * during the step: the kill landed while rows were being written */
        int grew = L->how == SD_PLACED_SINK_GREW;
        if (grew && L->pending > 0)
            snprintf(land, sizeof(land), "inside an open transaction of the target: %lld records written, not committed%s",
                     (long long)L->pending, escalated ? "; escalated to SIGKILL" : "");
        else if (visible >= 0)
            snprintf(land, sizeof(land), "%s; %lld rows appeared in the target during the step",
                     L->how == SD_PLACED_NOW ? "immediate" : sd_placed_words[L->how], (long long)visible);
        else /* the target could not be counted at the step's start */
            snprintf(land, sizeof(land), "%s", L->how == SD_PLACED_NOW ? "immediate" : sd_placed_words[L->how]);
        sd_ledger_fault_landing(sd_run_ledger(r), fid, INT64_MIN, grew ? 1 : -1, visible, INT64_MIN, land, NULL, 0);
    }
    snprintf(out, olen, "%s", land);
    return ok;
}

/* The common start of kill and pause: a running pipeline, then the point
 * the step asked for (mid-batch, at a boundary, now). *skip is 1, with
 * detail saying why, when there is nothing to act on: the pipeline was not
 * running or exited while the harness waited. s is the state before. */
sd_err_t sd_fault_reach_point(sd_run_t *r, const sd_step_t *st, const char *verb, sd_sup_state_t *s, sd_landing_t *L,
                                       int *skip, char *detail, size_t dlen, char *err, size_t errlen) {
    *skip = 1;
    /* instance=K: its batches; else the lowest running instance's (broker
     * and fault steps name no instance) */
    if (st->proc.instance) sd_run_focus(r, st->proc.instance);
    else sd_run_refocus(r);
    sd_sup_state(sd_run_sup(r), s);
    if (!s->running) {
        if (st->proc.instance) snprintf(detail, dlen, "nothing to %s: instance %d is not running", verb, st->proc.instance);
        else snprintf(detail, dlen, "nothing to %s: the pipeline is not running", verb);
        sd_run_fault_missed(r, st, detail);
        return SD_OK;
    }
    int gone;
    sd_err_t e = sd_process_wait_point(r, st, L, &gone, err, errlen);
    /* a batch landed in (SD_PLACED_MID_BATCH) had it before its last look */
    if (!e && !gone && L->how != SD_PLACED_MID_BATCH) e = sd_process_prepare(r, L, err, errlen);
    if (e) return e;
    if (gone) {
        snprintf(detail, dlen, "the pipeline exited while the harness waited for a batch");
        sd_run_fault_missed(r, st, detail);
        return SD_OK;
    }
    *skip = 0;
    return SD_OK;
}

/* What a deployed pipeline's follower said of its kill or stop: the
 * command it ran and its answer, and how the job ended (its last lines
 * that begin "streamdrill: deploy kill|stop|status"), joined by "; ". */
static void sd_process_deploy_said(sd_run_t *r, char *out, size_t olen) {
    char *tail = sd_sup_tail(sd_run_sup(r));
    sd_buf_t b;
    sd_buf_init(&b);
    for (char *save = NULL, *l = strtok_r(tail ? tail : (char[]){0}, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        const char *m = strstr(l, "streamdrill: deploy ");
        if (!m || (strncmp(m + 20, "kill", 4) && strncmp(m + 20, "stop", 4) && strncmp(m + 20, "status says", 11))) continue;
        sd_buf_printf(&b, "%s%s", b.len ? "; " : "", m + 13);
    }
    snprintf(out, olen, "%s", b.len ? b.data : "the follower said nothing of it: see the incarnation's stderr");
    sd_buf_free(&b);
    free(tail);
}

static sd_err_t sd_process_kill(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_sup_state_t s;
    sd_landing_t L = {0};
    int skip;
    sd_err_t e = sd_fault_reach_point(r, st, "kill", &s, &L, &skip, detail, dlen, err, errlen);
    if (e || skip) return e;
    int64_t fid = 0;
    char fdet[256], which[32] = "";
    int t[SD_MAX_INSTANCES], n = sd_process_targets(r, st, t);
    sd_sup_state(sd_run_sup(r), &s);
    int focus = sd_run_instance_of(r, s.incarnation);
    if (sd_run_instances(r) > 1 && st->proc.instance) snprintf(which, sizeof(which), ", instance %d", st->proc.instance);
    else if (sd_run_instances(r) > 1) snprintf(which, sizeof(which), ", every instance");
    int deployed = sd_run_sc(r)->deploy[SD_DEPLOY_START].argv != NULL;
    /* a deployed pipeline is killed by its deployment's kill command (the
     * follower runs it): no signal reaches the job, so none is named */
    const char *cmd = st->proc.signal == SIGKILL ? "kill" : "stop"; /* what the follower runs for it */
    if (deployed) snprintf(fdet, sizeof(fdet), "deploy %s (the deployment's %s command, no signal) %s%s", cmd, cmd, sd_placed_words[L.how], which);
    else snprintf(fdet, sizeof(fdet), "signal=%s %s%s", sd_sig_name(st->proc.signal), sd_placed_words[L.how], which);
    if ((e = sd_ledger_fault(sd_run_ledger(r), sd_run_step_index(r), "kill", fdet, s.incarnation, &fid, err, errlen))) return e;
    int inc = s.incarnation;
    int escalated = 0;
    int64_t signal_mono = sd_util_mono_ms();
    /* the instance whose batch the kill waited for first: its exit is told */
    for (int i = 1; i < n; i++)
        if (t[i] == focus) { t[i] = t[0]; t[0] = focus; }
    int64_t wait = st->proc.signal == SIGKILL && !deployed ? sd_util_scaled_ms(10000) : sd_util_scaled_ms(st->timeout_ms);
    if ((e = sd_process_signal_wait(r, t, n, st->proc.signal, "kill", wait, &escalated, err, errlen))) {
        /* a kill that left the pipeline running struck nothing: no recovery from it */
        sd_ledger_fault_unstruck(sd_run_ledger(r), fid, err, NULL, 0);
        sd_run_fault_missed(r, st, err);
        return e;
    }
    sd_sup_state(sd_run_sup(r), &s);
    sd_run_fault_context(r, fid); /* the pipeline's records as the kill left them */
    char land[768];
    sd_fault_landing(r, fid, &L, inc, escalated, st->proc.signal, signal_mono, land, sizeof(land));
    if (deployed) {
        char said[320];
        sd_process_deploy_said(r, said, sizeof(said));
        snprintf(detail, dlen, "%s (%s): landed %s", fdet, said, land);
    } else {
        snprintf(detail, dlen, "%s (exit %s %d): landed %s", fdet, s.exit_signal ? "signal" : "code", s.exit_signal ? s.exit_signal : s.exit_code, land);
    }
    sd_run_refocus(r);
    return SD_OK;
}

/* pause [mid-batch|at-boundary|now] [for=D]: SIGSTOP to the group; with
 * for= the step resumes it itself after D (long enough, and the pipeline
 * loses its consumer-group membership). */
static sd_err_t sd_process_pause(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_sup_state_t s;
    sd_landing_t L = {0};
    int skip;
    sd_err_t e = sd_fault_reach_point(r, st, "pause", &s, &L, &skip, detail, dlen, err, errlen);
    if (e || skip) return e;
    int t[SD_MAX_INSTANCES], n = sd_process_targets(r, st, t);
    if ((e = sd_process_signal_each(r, t, n, SIGSTOP, NULL, err, errlen))) return e;
    sd_sup_state(sd_run_sup(r), &s);
    int64_t fid = 0;
    char fdet[160], who[32];
    sd_process_who(r, st->proc.instance, who, sizeof(who));
    snprintf(fdet, sizeof(fdet), "%sSIGSTOP to the process group%s %s%s", who, n > 1 ? "s" : "", sd_placed_words[L.how],
             st->proc.delay_ms > 0 ? ", resumed by the step" : "");
    if ((e = sd_ledger_fault(sd_run_ledger(r), sd_run_step_index(r), "pause", fdet, s.incarnation, &fid, err, errlen))) return e;
    sd_run_fault_context(r, fid); /* the pipeline is frozen: its records stay as they are */
    char land[768] = "";
    if (L.how != SD_PLACED_NOW) {
        /* what the target held when it froze (the process is stopped, so
         * the landing stays true until it resumes) */
        sd_fault_landing(r, fid, &L, s.incarnation, 0, SIGSTOP, 0, land, sizeof(land));
    }
    if (st->proc.delay_ms > 0) {
        if ((e = sd_run_tick_until(r, sd_util_mono_ms() + st->proc.delay_ms, err, errlen))) return e;
        if ((e = sd_process_signal_each(r, t, n, SIGCONT, NULL, err, errlen))) return e;
        sd_ledger_fault_undo(sd_run_ledger(r), sd_run_step_index(r), "pause", "%", "resume", "SIGCONT to the process group", s.incarnation, NULL, 0);
        sd_run_data_step_done(r);
        snprintf(detail, dlen, "%spaused incarnation %d %s for %.1fs%s%s", who, s.incarnation, sd_placed_words[L.how], (double)st->proc.delay_ms / 1000.0,
                 land[0] ? "; landed " : "", land);
    } else {
        snprintf(detail, dlen, "%spaused incarnation %d %s%s%s", who, s.incarnation, sd_placed_words[L.how], land[0] ? "; landed " : "", land);
    }
    sd_run_refocus(r);
    return SD_OK;
}

/* scale to=N: start the missing instances of 1..N, each waited for; stop
 * (SIGTERM, a graceful leave) the running ones above N, highest first. */
static sd_err_t sd_process_scale(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    int want = st->proc.scale_to, run[SD_MAX_INSTANCES], n = sd_run_running_instances(r, run);
    int t[SD_MAX_INSTANCES], nt = 0;
    for (int i = n - 1; i >= 0; i--)
        if (run[i] > want) t[nt++] = run[i];
    sd_buf_t b;
    sd_buf_init(&b);
    sd_err_t e = SD_OK;
    char fdet[96];
    snprintf(fdet, sizeof(fdet), "from %d running instance%s to %d", n, n == 1 ? "" : "s", want);
    sd_sup_state_t s;
    sd_sup_state(sd_run_sup(r), &s);
    if ((e = sd_ledger_fault(sd_run_ledger(r), sd_run_step_index(r), "scale", fdet, s.incarnation, NULL, err, errlen))) return e;
    if (nt) {
        int escalated = 0;
        if ((e = sd_process_signal_wait(r, t, nt, SIGTERM, "stop", sd_util_scaled_ms(st->timeout_ms), &escalated, err, errlen))) goto out;
        for (int i = 0; i < nt; i++) {
            sd_sup_instance_state(sd_run_sup(r), t[i], &s);
            sd_buf_printf(&b, "%sinstance %d stopped (incarnation %d)%s", b.len ? "; " : "", t[i], s.incarnation,
                          escalated ? " after escalating to SIGKILL" : "");
        }
    }
    sd_run_set_live(r, want);
    if (want > 0) {
        char d[2048] = "";
        e = sd_run_start_pipeline(r, NULL, 0, sd_util_scaled_ms(st->timeout_ms), d, sizeof(d), err, errlen);
        if (!e && strncmp(d, "every instance", 14)) sd_buf_printf(&b, "%s%s", b.len ? "; " : "", d);
    }
    sd_run_refocus(r);
    sd_run_data_step_done(r);
out:
    snprintf(detail, dlen, "%s: %s", fdet, b.len ? b.data : "nothing to do");
    sd_buf_free(&b);
    return e;
}

static sd_err_t sd_process_stop(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    int t[SD_MAX_INSTANCES], n = sd_process_targets(r, st, t), escalated = 0;
    char who[32];
    sd_process_who(r, st->proc.instance, who, sizeof(who));
    if (!n) {
        if (st->proc.instance) snprintf(detail, dlen, "nothing to stop: instance %d is not running", st->proc.instance);
        else snprintf(detail, dlen, "nothing to stop: the pipeline is not running");
        sd_run_fault_missed(r, st, detail);
        return SD_OK;
    }
    sd_sup_state_t s;
    sd_sup_focus(sd_run_sup(r), t[0]);
    sd_sup_state(sd_run_sup(r), &s);
    char fdet[96];
    snprintf(fdet, sizeof(fdet), "%sSIGTERM, then SIGKILL after the timeout", who);
    sd_err_t e = sd_ledger_fault(sd_run_ledger(r), sd_run_step_index(r), "stop", fdet, s.incarnation, NULL, err, errlen);
    if (!e) e = sd_process_signal_wait(r, t, n, SIGTERM, "stop", sd_util_scaled_ms(st->timeout_ms), &escalated, err, errlen);
    if (e) return e;
    sd_sup_state(sd_run_sup(r), &s);
    if (n > 1) snprintf(detail, dlen, "%d instances stopped%s", n, escalated ? " after escalating to SIGKILL" : "");
    else snprintf(detail, dlen, "%sincarnation %d stopped (exit %s %d)%s", who, s.incarnation, s.exit_signal ? "signal" : "code",
                  s.exit_signal ? s.exit_signal : s.exit_code, escalated ? " after escalating to SIGKILL" : "");
    sd_run_refocus(r);
    return SD_OK;
}

static sd_err_t sd_process_restart(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    int t[SD_MAX_INSTANCES], n = sd_process_targets(r, st, t), escalated = 0;
    sd_err_t e;
    char pre[256] = "";
    if (n) {
        sd_sup_state_t s;
        sd_sup_instance_state(sd_run_sup(r), t[0], &s);
        if ((e = sd_process_signal_wait(r, t, n, SIGTERM, "stop", sd_util_scaled_ms(st->timeout_ms), &escalated, err, errlen))) return e;
        if (n > 1) snprintf(pre, sizeof(pre), "stopped %d instances; ", n);
        else snprintf(pre, sizeof(pre), "stopped incarnation %d; ", s.incarnation);
    }
    if (st->proc.delay_ms > 0) {
        if ((e = sd_run_tick_until(r, sd_util_mono_ms() + st->proc.delay_ms, err, errlen))) return e;
    }
    char fdet[128], who[32];
    sd_process_who(r, st->proc.instance, who, sizeof(who));
    if (st->proc.variant) snprintf(fdet, sizeof(fdet), "%svariant %s on the same checkpoint%s", who, st->proc.variant, st->proc.delay_ms > 0 ? ", after a delay" : "");
    else snprintf(fdet, sizeof(fdet), "%ssame command and checkpoint%s", who, st->proc.delay_ms > 0 ? ", after a delay" : "");
    if ((e = sd_ledger_fault(sd_run_ledger(r), sd_run_step_index(r), "restart", fdet, sd_run_incarnations(r) + 1, NULL, err, errlen))) return e;
    char d2[1024];
    /* timeout= bounds the readiness wait too; without it a restart
     * waits up to 30 s for the new incarnation to be ready */
    int64_t ready_ms = st->timeout_given ? st->timeout_ms : st->timeout_ms < 30000 ? 30000 : st->timeout_ms;
    e = sd_run_start_pipeline(r, st->proc.variant, st->proc.instance, sd_util_scaled_ms(ready_ms), d2, sizeof(d2), err, errlen);
    if (e == SD_ERR_PIPELINE) {
        /* a pipeline that cannot come back on its own checkpoint is a
         * finding, not an inconclusive run: the crash is counted */
        snprintf(detail, dlen, "%srestart failed: %.900s", pre, err);
        sd_ledger_warning(sd_run_ledger(r), "restart-failed", err, NULL, 0);
        sd_run_restart_failed(r); /* not "ok" in the step's status */
        return SD_OK;
    }
    if (e) return e;
    snprintf(detail, dlen, "%s%s", pre, d2);
    sd_run_data_step_done(r);
    return SD_OK;
}

static sd_err_t sd_process_resume(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    int t[SD_MAX_INSTANCES], n = sd_process_targets(r, st, t);
    if (!n) {
        snprintf(detail, dlen, "nothing to resume: %s", st->proc.instance ? "the instance is not running" : "the pipeline is not running");
        return SD_OK;
    }
    sd_err_t e = sd_process_signal_each(r, t, n, SIGCONT, NULL, err, errlen);
    if (e) return e;
    sd_sup_state_t s;
    sd_sup_state(sd_run_sup(r), &s);
    char who[32];
    sd_process_who(r, st->proc.instance, who, sizeof(who));
    if ((e = sd_ledger_fault_undo(sd_run_ledger(r), sd_run_step_index(r), "pause", "%", "resume", "SIGCONT to the process group",
                                  s.incarnation, err, errlen)))
        return e;
    if (n > 1) snprintf(detail, dlen, "resumed %d instances", n);
    else snprintf(detail, dlen, "%sresumed incarnation %d", who, s.incarnation);
    sd_run_data_step_done(r);
    sd_run_refocus(r);
    return SD_OK;
}

static sd_err_t sd_process_run(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    switch (st->kind) {
    case SD_STEP_START:
        return sd_run_start_pipeline(r, st->proc.variant, st->proc.instance, sd_util_scaled_ms(st->timeout_ms), detail, dlen, err, errlen);
    case SD_STEP_KILL:
        return sd_process_kill(r, st, detail, dlen, err, errlen);
    case SD_STEP_STOP:
        return sd_process_stop(r, st, detail, dlen, err, errlen);
    case SD_STEP_RESTART:
        return sd_process_restart(r, st, detail, dlen, err, errlen);
    case SD_STEP_PAUSE:
        return sd_process_pause(r, st, detail, dlen, err, errlen);
    case SD_STEP_RESUME:
        return sd_process_resume(r, st, detail, dlen, err, errlen);
    case SD_STEP_SCALE:
        return sd_process_scale(r, st, detail, dlen, err, errlen);
    default:
        return sd_err_set(err, errlen, SD_ERR_INTERNAL, "process injector: step kind %d", (int)st->kind);
    }
}

/* heal: every paused instance is resumed */
static void sd_process_heal(sd_run_t *r, sd_buf_t *done) {
    if (!sd_run_sup(r)) return;
    int t[SD_MAX_INSTANCES], n = sd_run_running_instances(r, t);
    for (int i = 0; i < n; i++) {
        sd_sup_state_t s;
        sd_sup_instance_state(sd_run_sup(r), t[i], &s);
        /* SIGCONT is harmless to a process that is not stopped */
        char state = sd_util_proc_state(s.pid);
        if (state != 'T' && state != 't') continue;
        sd_sup_focus(sd_run_sup(r), t[i]);
        sd_sup_signal(sd_run_sup(r), SIGCONT, NULL, NULL, 0);
        sd_ledger_fault_undo(sd_run_ledger(r), sd_run_step_index(r), "pause", "%", "resume", "SIGCONT by heal", s.incarnation, NULL, 0);
        if (n > 1) sd_buf_printf(done, "%sresumed paused instance %d", done->len ? "; " : "", t[i]);
        else sd_buf_printf(done, "%sresumed the paused pipeline", done->len ? "; " : "");
    }
    sd_run_refocus(r);
}

const sd_injector_t sd_injector_process = {
    .name = "process", .handles = sd_process_handles, .run = sd_process_run, .heal = sd_process_heal
};
