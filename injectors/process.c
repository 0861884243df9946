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
#include <string.h>

#include "run.h"

static int sd_process_handles(sd_step_kind_t k) {
    return k == SD_STEP_START || k == SD_STEP_STOP || k == SD_STEP_KILL || k == SD_STEP_RESTART || k == SD_STEP_PAUSE ||
           k == SD_STEP_RESUME;
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
    if (r->sink.target && sd_sink_count(r->sink.target, 1, &rows, NULL, 0) != SD_OK) rows = -1;
    return rows;
}

/* Send sig, wait for the exit (escalating to SIGKILL after timeout_ms). */
static sd_err_t sd_process_signal_wait(sd_run_t *r, int sig, const char *by, int64_t timeout_ms, int *escalated,
                                       char *err, size_t errlen) {
    sd_run_want_pipeline(r, 0);
    sd_err_t e = sd_sup_signal(r->sup, sig, by, err, errlen);
    if (e) return e;
    *escalated = 0;
    int64_t deadline = sd_util_mono_ms() + timeout_ms;
    for (;;) {
        sd_sup_state_t st;
        sd_sup_state(r->sup, &st);
        if (st.drained) return SD_OK;
        if (sd_util_mono_ms() > deadline && !*escalated) {
            *escalated = 1;
            sd_sup_signal(r->sup, SIGKILL, by, NULL, 0);
            deadline = sd_util_mono_ms() + sd_util_scaled_ms(10000);
        } else if (sd_util_mono_ms() > deadline) {
            return sd_err_set(err, errlen, SD_ERR_INTERNAL, "pipeline: still alive 10s after SIGKILL");
        }
        if ((e = sd_run_tick(r, 10, err, errlen))) return e;
    }
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
    L->how = SD_PLACED_AFTER_SINK_COMMIT;
    if (!r->pipe.progress->batches)
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "kill after-sink-commit: the progress source does not tell batches apart (use "
                          "`progress spark checkpoint=...` or batch markers)");
    if (!r->sink.target) return sd_err_set(err, errlen, SD_ERR_SCENARIO, "kill after-sink-commit: the scenario declares no target sink");
    int64_t deadline = sd_util_mono_ms() + sd_util_scaled_ms(st->timeout_ms);
    const sd_run_batches_t *b = &r->pipe.bs;
    int misses = 0;
    sd_err_t e;
    for (;;) {
        if ((e = sd_run_pump(r, err, errlen))) return e;
        sd_sup_state_t s;
        sd_sup_state(r->sup, &s);
        if (!s.running) { *gone = 1; return SD_OK; }
        if (sd_util_mono_ms() > deadline)
            return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "kill after-sink-commit: no batch showed in the sink before its checkpoint commit "
                              "within %.0fs (%d batches committed first)", (double)sd_util_scaled_ms(st->timeout_ms) / 1000.0, misses);
        if (b->begun <= b->committed) {
            if ((e = sd_run_tick(r, 2, err, errlen))) return e;
            continue;
        }
        int64_t batch = b->begun, mark0 = sd_sink_mark(r->sink.target), next_pump = sd_util_mono_ms() + 20;
        for (;;) {
            int64_t m = sd_sink_mark(r->sink.target);
            if (m >= 0 && m != mark0) {
                sd_sup_signal(r->sup, SIGSTOP, NULL, NULL, 0);
                sd_run_pump(r, NULL, 0);
                if (b->begun == batch && b->committed < batch) {
                    L->batch = batch;
                    L->mark0 = mark0;
                    L->mark1 = m;
                    L->rows0 = -1;
                    return SD_OK;
                }
                sd_sup_signal(r->sup, SIGCONT, NULL, NULL, 0);
                break;
            }
            if (sd_util_mono_ms() >= next_pump) {
                if ((e = sd_run_pump(r, err, errlen))) return e;
                sd_sup_state(r->sup, &s);
                if (b->committed >= batch || b->begun != batch || !s.running || sd_util_mono_ms() > deadline) break;
                next_pump = sd_util_mono_ms() + 20;
            }
            sd_util_sleep_ms(1);
        }
        misses++;
    }
}

/* Wait for the moment the step asks for (st->proc.mid_batch): inside a batch
 * (see the top of this file), right after a batch's commit before the next
 * one begins, after the sink's commit, or now. Returns SD_OK when it is time, SD_ERR_TIMEOUT
 * when no batch came, or sets *gone when the pipeline exited meanwhile. */
static sd_err_t sd_process_wait_point(sd_run_t *r, const sd_step_t *st, sd_landing_t *L, int *gone, char *err, size_t errlen) {
    L->how = SD_PLACED_NOW;
    L->batch = L->batch_rows = L->rows0 = L->mark0 = L->mark1 = -1;
    *gone = 0;
    if (st->proc.mid_batch == SD_LAND_AFTER_SINK_COMMIT) return sd_process_wait_sink_commit(r, st, L, gone, err, errlen);
    sd_sup_state_t s;
    int64_t deadline = sd_util_mono_ms() + sd_util_scaled_ms(st->timeout_ms);
    int misses = 0;
    sd_err_t e;
    int tracked = r->pipe.progress->batches;
    if (st->proc.mid_batch == SD_LAND_AT_BOUNDARY && tracked) {
        /* at a boundary: the moment a commit is seen */
        L->how = SD_PLACED_AT_BOUNDARY;
        if ((e = sd_run_pump(r, err, errlen))) return e;
        int64_t seen = r->pipe.bs.commits;
        for (;;) {
            if ((e = sd_run_pump(r, err, errlen))) return e;
            sd_sup_state(r->sup, &s);
            if (!s.running) { *gone = 1; return SD_OK; }
            if (r->pipe.bs.commits > seen && r->pipe.bs.begun <= r->pipe.bs.committed) {
                L->batch = r->pipe.bs.committed;
                L->rows0 = sd_target_rows(r);
                return SD_OK;
            }
            if (sd_util_mono_ms() > deadline)
                return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "%s at-boundary: no batch committed within %.0fs", st->kind == SD_STEP_PAUSE ? "pause" : "kill",
                                  (double)sd_util_scaled_ms(st->timeout_ms) / 1000.0);
            sd_util_sleep_ms(1);
        }
    }
    if (st->proc.mid_batch == SD_LAND_MID_BATCH && tracked) {
        L->how = SD_PLACED_MID_BATCH;
        for (;;) {
            if ((e = sd_run_pump(r, err, errlen))) return e;
            sd_sup_state(r->sup, &s);
            if (!s.running) { *gone = 1; return SD_OK; }
            if (sd_util_mono_ms() > deadline)
                return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "%s mid-batch%s: no batch %s within %.0fs (%d batches committed before the harness could act)",
                                  st->kind == SD_STEP_PAUSE ? "pause" : "kill", st->proc.visible > 0 ? " visible=" : "",
                                  st->proc.visible > 0 ? "showed those rows in the target before its commit" : "began",
                                  (double)sd_util_scaled_ms(st->timeout_ms) / 1000.0, misses);
            const sd_run_batches_t *b = &r->pipe.bs;
            if (b->begun > b->committed && b->begun_rows != 0 && (!r->sc->spark_realtime || s.ready)) {
                int64_t batch = b->begun, batch_rows = b->begun_rows;
                /* a sink that takes long to count (a command, a table read
                 * by Spark) is not counted here unless visible= needs it:
                 * the count would outlast the moment the kill aims at */
                int64_t rows0 = b->begun_sink_rows >= 0 ? b->begun_sink_rows
                                : st->proc.visible > 0        ? sd_target_rows(r)
                                                         : sd_progress_target_rows(r);
                int64_t began = b->begun_mono;
                int64_t delay = st->proc.after_ms >= 0 ? st->proc.after_ms : sd_progress_aim_ms(r, batch_rows, misses);
                int64_t grow = batch_rows > 0 ? (batch_rows + 1) / 2 : 1;
                int use_growth = st->proc.after_ms < 0 && r->sampling.sample_cost_ms <= 20 && rows0 >= 0 && batch_rows > 0;
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
                    sd_sup_state(r->sup, &s);
                    if (b->committed >= batch || b->begun != batch || !s.running) { missed = 1; break; }
                    int64_t el = sd_util_mono_ms() - began;
                    if (el >= delay) break;
                    if (use_growth) {
                        int64_t now_rows = sd_target_rows(r);
                        if (now_rows >= 0 && now_rows - rows0 >= grow) break;
                    }
                    sd_util_sleep_ms(2);
                }
                if (!missed) {
                    L->batch = batch;
                    L->batch_rows = batch_rows;
                    L->rows0 = rows0;
                    return SD_OK;
                }
                misses++;
            }
            if ((e = sd_run_tick(r, 5, err, errlen))) return e;
        }
    }
    if (st->proc.mid_batch != SD_LAND_NOW && r->sink.target) {
        L->how = SD_PLACED_SINK_GREW;
        L->rows0 = sd_target_rows(r);
        int64_t grow = st->proc.visible > 0 ? st->proc.visible : 1;
        for (;;) {
            int64_t now_rows = sd_target_rows(r);
            if (L->rows0 >= 0 && now_rows - L->rows0 >= grow) return SD_OK;
            if (sd_util_mono_ms() > deadline)
                return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "%s mid-batch: the sink did not grow%s within %.0fs", st->kind == SD_STEP_PAUSE ? "pause" : "kill",
                                  st->proc.visible > 0 ? " by visible= rows" : "", (double)sd_util_scaled_ms(st->timeout_ms) / 1000.0);
            if ((e = sd_run_tick(r, 5, err, errlen))) return e;
        }
    }
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
    char land[320];
    int ok = 1;
    if (L->batch >= 0 && L->mark1 >= 0) {
        /* after-sink-commit: the group was frozen before the kill, so the
         * checkpoint cannot have moved; read it again all the same */
        int inside = r->pipe.bs.committed < L->batch;
        snprintf(land, sizeof(land), "%s batch %lld of incarnation %d: the sink's commit seen (mark %lld -> %lld), %s",
                 inside ? "after the sink's commit of" : "too late for", (long long)L->batch, inc, (long long)L->mark0, (long long)L->mark1,
                 inside ? "the checkpoint's commit not written" : "the checkpoint had recorded the batch");
        sd_ledger_fault_landing(r->ledger, fid, L->batch, inside, -1, INT64_MIN, land, NULL, 0);
        if (!inside) sd_run_fault_missed(r, &r->sc->steps[r->step], land), ok = 0;
    } else if (L->batch >= 0 && L->how == SD_PLACED_MID_BATCH) {
        int graceful = 0;
        int inside = sd_progress_landed_inside(r, L->batch, sig != SIGKILL, signal_mono, &graceful);
        char size[48] = "size unknown";
        if (L->batch_rows >= 0) snprintf(size, sizeof(size), "%lld rows", (long long)L->batch_rows);
        char seen[96];
        if (visible >= 0) snprintf(seen, sizeof(seen), "%lld rows reached the target between its start and the fault", (long long)visible);
        else snprintf(seen, sizeof(seen), "the target not counted at its start (a count takes %lld ms)", (long long)r->sampling.sample_cost_ms);
        snprintf(land, sizeof(land), "%s batch %lld of incarnation %d (%s); %s%s%s",
                 inside ? "inside" : "after the commit of", (long long)L->batch, inc, size, seen,
                 !graceful ? "" : sig == 0 ? "; the pipeline went on and committed the batch after the fault" : "; the pipeline finished and committed the batch before it exited",
                 escalated ? "; escalated to SIGKILL" : "");
        sd_ledger_fault_landing(r->ledger, fid, L->batch, inside, visible, L->batch_rows, land, NULL, 0);
        if (!inside) sd_run_fault_missed(r, &r->sc->steps[r->step], land), ok = 0;
    } else if (L->batch >= 0) {
        int clean = sd_progress_landed_between(r, L->batch);
        snprintf(land, sizeof(land), "%s after the commit of batch %lld of incarnation %d%s", clean ? "between batches," : "late: a new batch had begun",
                 (long long)L->batch, inc, escalated ? "; escalated to SIGKILL" : "");
        sd_ledger_fault_landing(r->ledger, fid, L->batch, clean ? 0 : 1, visible, INT64_MIN, land, NULL, 0);
        if (!clean) sd_run_fault_missed(r, &r->sc->steps[r->step], land), ok = 0;
    } else {
        /* without batches (progress sink), "mid-batch" is the sink growing
         * during the step: the kill landed while rows were being written */
        int grew = L->how == SD_PLACED_SINK_GREW;
        if (visible >= 0)
            snprintf(land, sizeof(land), "%s; %lld rows appeared in the target during the step",
                     L->how == SD_PLACED_NOW ? "immediate" : sd_placed_words[L->how], (long long)visible);
        else /* the target could not be counted at the step's start */
            snprintf(land, sizeof(land), "%s", L->how == SD_PLACED_NOW ? "immediate" : sd_placed_words[L->how]);
        sd_ledger_fault_landing(r->ledger, fid, INT64_MIN, grew ? 1 : -1, visible, INT64_MIN, land, NULL, 0);
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
    sd_sup_state(r->sup, s);
    if (!s->running) {
        snprintf(detail, dlen, "nothing to %s: the pipeline is not running", verb);
        sd_run_fault_missed(r, st, detail);
        return SD_OK;
    }
    int gone;
    sd_err_t e = sd_process_wait_point(r, st, L, &gone, err, errlen);
    if (e) return e;
    if (gone) {
        snprintf(detail, dlen, "the pipeline exited while the harness waited for a batch");
        sd_run_fault_missed(r, st, detail);
        return SD_OK;
    }
    *skip = 0;
    return SD_OK;
}

static sd_err_t sd_process_kill(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_sup_state_t s;
    sd_landing_t L;
    int skip;
    sd_err_t e = sd_fault_reach_point(r, st, "kill", &s, &L, &skip, detail, dlen, err, errlen);
    if (e || skip) return e;
    int64_t fid = 0;
    char fdet[256];
    snprintf(fdet, sizeof(fdet), "signal=%s %s", sd_sig_name(st->proc.signal), sd_placed_words[L.how]);
    sd_sup_state(r->sup, &s);
    if ((e = sd_ledger_fault(r->ledger, r->step, "kill", fdet, s.incarnation, &fid, err, errlen))) return e;
    int inc = s.incarnation;
    int escalated = 0;
    int64_t signal_mono = sd_util_mono_ms();
    if ((e = sd_process_signal_wait(r, st->proc.signal, "kill", st->proc.signal == SIGKILL ? sd_util_scaled_ms(10000) : sd_util_scaled_ms(st->timeout_ms), &escalated, err, errlen))) return e;
    sd_sup_state(r->sup, &s);
    char land[320];
    sd_fault_landing(r, fid, &L, inc, escalated, st->proc.signal, signal_mono, land, sizeof(land));
    snprintf(detail, dlen, "%s (exit %s %d): landed %s", fdet, s.exit_signal ? "signal" : "code", s.exit_signal ? s.exit_signal : s.exit_code, land);
    return SD_OK;
}

/* pause [mid-batch|at-boundary|now] [for=D]: SIGSTOP to the group; with
 * for= the step resumes it itself after D (long enough, and the pipeline
 * loses its consumer-group membership). */
static sd_err_t sd_process_pause(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_sup_state_t s;
    sd_landing_t L;
    int skip;
    sd_err_t e = sd_fault_reach_point(r, st, "pause", &s, &L, &skip, detail, dlen, err, errlen);
    if (e || skip) return e;
    if ((e = sd_sup_signal(r->sup, SIGSTOP, NULL, err, errlen))) return e;
    int64_t fid = 0;
    char fdet[160];
    snprintf(fdet, sizeof(fdet), "SIGSTOP to the process group %s%s", sd_placed_words[L.how], st->proc.delay_ms > 0 ? ", resumed by the step" : "");
    if ((e = sd_ledger_fault(r->ledger, r->step, "pause", fdet, s.incarnation, &fid, err, errlen))) return e;
    char land[320] = "";
    if (L.how != SD_PLACED_NOW) {
        /* what the target held when it froze (the process is stopped, so
         * the landing stays true until it resumes) */
        sd_fault_landing(r, fid, &L, s.incarnation, 0, SIGSTOP, 0, land, sizeof(land));
    }
    if (st->proc.delay_ms > 0) {
        if ((e = sd_run_tick_until(r, sd_util_mono_ms() + st->proc.delay_ms, err, errlen))) return e;
        if ((e = sd_sup_signal(r->sup, SIGCONT, NULL, err, errlen))) return e;
        sd_ledger_fault_undo(r->ledger, r->step, "pause", "%", "resume", "SIGCONT to the process group", s.incarnation, NULL, 0);
        sd_run_data_step_done(r);
        snprintf(detail, dlen, "paused incarnation %d %s for %.1fs%s%s", s.incarnation, sd_placed_words[L.how], (double)st->proc.delay_ms / 1000.0,
                 land[0] ? "; landed " : "", land);
    } else {
        snprintf(detail, dlen, "paused incarnation %d %s%s%s", s.incarnation, sd_placed_words[L.how], land[0] ? "; landed " : "", land);
    }
    return SD_OK;
}

static sd_err_t sd_process_run(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_sup_state_t s;
    sd_err_t e;
    int escalated = 0;
    switch (st->kind) {
    case SD_STEP_START:
        return sd_run_start_pipeline(r, st->proc.variant, sd_util_scaled_ms(st->timeout_ms), detail, dlen, err, errlen);
    case SD_STEP_KILL:
        return sd_process_kill(r, st, detail, dlen, err, errlen);
    case SD_STEP_STOP:
        sd_sup_state(r->sup, &s);
        if (!s.running) {
            snprintf(detail, dlen, "nothing to stop: the pipeline is not running");
            sd_run_fault_missed(r, st, detail);
            return SD_OK;
        }
        if ((e = sd_ledger_fault(r->ledger, r->step, "stop", "SIGTERM, then SIGKILL after the timeout", s.incarnation, NULL, err, errlen))) return e;
        if ((e = sd_process_signal_wait(r, SIGTERM, "stop", sd_util_scaled_ms(st->timeout_ms), &escalated, err, errlen))) return e;
        sd_sup_state(r->sup, &s);
        snprintf(detail, dlen, "incarnation %d stopped (exit %s %d)%s", s.incarnation, s.exit_signal ? "signal" : "code",
                 s.exit_signal ? s.exit_signal : s.exit_code, escalated ? " after escalating to SIGKILL" : "");
        return SD_OK;
    case SD_STEP_RESTART: {
        sd_sup_state(r->sup, &s);
        char pre[256] = "";
        if (s.running) {
            if ((e = sd_process_signal_wait(r, SIGTERM, "stop", sd_util_scaled_ms(st->timeout_ms), &escalated, err, errlen))) return e;
            snprintf(pre, sizeof(pre), "stopped incarnation %d; ", s.incarnation);
        }
        if (st->proc.delay_ms > 0) {
            if ((e = sd_run_tick_until(r, sd_util_mono_ms() + st->proc.delay_ms, err, errlen))) return e;
        }
        char fdet[128];
        if (st->proc.variant) snprintf(fdet, sizeof(fdet), "variant %s on the same checkpoint%s", st->proc.variant, st->proc.delay_ms > 0 ? ", after a delay" : "");
        else snprintf(fdet, sizeof(fdet), "same command and checkpoint%s", st->proc.delay_ms > 0 ? ", after a delay" : "");
        if ((e = sd_ledger_fault(r->ledger, r->step, "restart", fdet, s.incarnation + 1, NULL, err, errlen))) return e;
        char d2[1024];
        /* timeout= bounds the readiness wait too; without it a restart
         * waits up to 30 s for the new incarnation to be ready */
        int64_t ready_ms = st->timeout_given ? st->timeout_ms : st->timeout_ms < 30000 ? 30000 : st->timeout_ms;
        e = sd_run_start_pipeline(r, st->proc.variant, sd_util_scaled_ms(ready_ms), d2, sizeof(d2), err, errlen);
        if (e == SD_ERR_PIPELINE) {
            /* a pipeline that cannot come back on its own checkpoint is a
             * finding, not an inconclusive run: the crash is counted */
            snprintf(detail, dlen, "%srestart failed: %.900s", pre, err);
            sd_ledger_warning(r->ledger, "restart-failed", err, NULL, 0);
            return SD_OK;
        }
        if (e) return e;
        snprintf(detail, dlen, "%s%s", pre, d2);
        sd_run_data_step_done(r);
        return SD_OK;
    }
    case SD_STEP_PAUSE:
        return sd_process_pause(r, st, detail, dlen, err, errlen);
    case SD_STEP_RESUME: {
        sd_sup_state(r->sup, &s);
        int pause = st->kind == SD_STEP_PAUSE;
        if (!s.running) {
            snprintf(detail, dlen, "nothing to %s: the pipeline is not running", pause ? "pause" : "resume");
            return SD_OK;
        }
        if ((e = sd_sup_signal(r->sup, pause ? SIGSTOP : SIGCONT, NULL, err, errlen))) return e;
        e = pause ? sd_ledger_fault(r->ledger, r->step, "pause", "SIGSTOP to the process group", s.incarnation, NULL, err, errlen)
                  : sd_ledger_fault_undo(r->ledger, r->step, "pause", "%", "resume", "SIGCONT to the process group", s.incarnation, err, errlen);
        if (e) return e;
        snprintf(detail, dlen, "%s incarnation %d", pause ? "paused" : "resumed", s.incarnation);
        if (!pause) sd_run_data_step_done(r);
        return SD_OK;
    }
    default:
        return sd_err_set(err, errlen, SD_ERR_INTERNAL, "process injector: step kind %d", (int)st->kind);
    }
}

/* heal: a paused pipeline is resumed */
static void sd_process_heal(sd_run_t *r, sd_buf_t *done) {
    if (!r->sup) return;
    sd_sup_state_t s;
    sd_sup_state(r->sup, &s);
    if (!s.running) return;
    /* SIGCONT is harmless to a process that is not stopped */
    char state = sd_util_proc_state(s.pid);
    if (state == 'T' || state == 't') {
        sd_sup_signal(r->sup, SIGCONT, NULL, NULL, 0);
        sd_ledger_fault_undo(r->ledger, r->step, "pause", "%", "resume", "SIGCONT by heal", s.incarnation, NULL, 0);
        sd_buf_printf(done, "%sresumed the paused pipeline", done->len ? "; " : "");
    }
}

const sd_injector_t sd_injector_process = {"process", sd_process_handles, sd_process_run, sd_process_heal, NULL};
