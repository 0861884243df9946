/* run_wait.c - the runner's waiting: readiness of a new incarnation, and
 * the steps that wait: await sink, await quiescent, await batches, sleep,
 * each serving the event loop (run_loop.c) while it waits. What "ready",
 * "in flight" and "caught up" mean comes from the progress source
 * (progress.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command.h"
#include "deployed.h"
#include "progress.h"
#include "run_int.h"

/* await sink: how long a sink may stay unreadable before the live line
 * names it, and how long after the pipeline exited before the step ends */
#define SD_SINK_UNREADABLE_SAY_MS 3000
#define SD_SINK_GONE_GRACE_MS 2000

void sd_run_free_argv(char **argv) {
    for (int i = 0; argv && argv[i]; i++) free(argv[i]);
    free(argv);
}

char **sd_run_expand_argv(sd_run_t *r, char *const *src, int argc, char *err, size_t errlen) {
    char **argv = sd_util_xcalloc((size_t)argc + 1, sizeof(char *));
    for (int i = 0; i < argc; i++)
        if (!(argv[i] = sd_scenario_expand(src[i], &r->vars, err, errlen))) {
            sd_run_free_argv(argv);
            return NULL;
        }
    return argv;
}

char **sd_run_deploy_argv(sd_run_t *r, const struct sd_variant_s *start_as, char *err, size_t errlen) {
    char **ex[SD_DEPLOY__COUNT] = {0};
    int n[SD_DEPLOY__COUNT] = {0};
    char **out = NULL;
    int ok = 1;
    for (int k = 0; ok && k < SD_DEPLOY__COUNT; k++) {
        if (!r->sc->deploy[k].argv) continue;
        /* a variant is another `deploy start` command line */
        char *const *src = k == SD_DEPLOY_START && start_as ? start_as->argv : r->sc->deploy[k].argv;
        n[k] = k == SD_DEPLOY_START && start_as ? start_as->argc : r->sc->deploy[k].argc;
        if (!(ex[k] = sd_run_expand_argv(r, src, n[k], err, errlen))) ok = 0;
    }
    if (ok) {
        /* the follower is this very program (`streamdrill _deployed`) */
        char exe[4096];
        if (!sd_util_self_exe(exe, sizeof(exe))) {
            out = sd_deployed_argv(exe, (char **const *)ex, n);
        } else {
            sd_err_set(err, errlen, SD_ERR_INTERNAL, "deploy: cannot find streamdrill's own program (/proc/self/exe)");
        }
    }
    for (int k = 0; k < SD_DEPLOY__COUNT; k++) sd_run_free_argv(ex[k]);
    return out;
}

/* The application version for the runbook, from the header's `version`
 * line, taken before an incarnation starts: the first line its command
 * prints (exec'd without a shell, 30 s at most) and the SHA-256 of each
 * named file. NULL without a `version` line; what could not be had is said
 * in the text, never an error of the run. */
static char *sd_run_version(sd_run_t *r) {
    const sd_scenario_t *sc = r->sc;
    if (!sc->version_argc && !sc->version_files) return NULL;
    sd_buf_t b;
    sd_buf_init(&b);
    char err[512];
    if (sc->version_argc) {
        char **argv = sd_run_expand_argv(r, sc->version_argv, sc->version_argc, err, sizeof(err));
        int ok = argv != NULL;
        sd_buf_t out;
        sd_buf_init(&out);
        sd_cmd_status_t st;
        if (ok && sd_cmd_run(argv, NULL, 0, sd_util_scaled_ms(30000), 4096, NULL, &out, &st, err, sizeof(err)) == SD_OK &&
            st.code == 0) {
            const char *s = out.data ? out.data : "";
            while (*s == '\n' || *s == '\r' || *s == ' ') s++;
            size_t n = strcspn(s, "\r\n");
            sd_buf_printf(&b, "%.*s", (int)(n > 200 ? 200 : n), s);
        } else if (ok) {
            sd_buf_printf(&b, "(%s: %s)", argv[0],
                          st.timed_out ? "timed out" : st.signal ? "killed by a signal" : st.code > 0 ? "failed" : err);
        } else {
            sd_buf_printf(&b, "(%s)", err);
        }
        sd_run_free_argv(argv);
        sd_buf_free(&out);
    }
    char *files = sc->version_files ? sd_scenario_expand(sc->version_files, &r->vars, err, sizeof(err)) : NULL;
    char *save = NULL;
    for (char *p = files ? strtok_r(files, ",", &save) : NULL; p; p = strtok_r(NULL, ",", &save)) {
        char hex[65];
        if (sd_util_sha256_file(p, hex, err, sizeof(err))) sd_buf_printf(&b, "%s%s: cannot read (%s)", b.len ? "; " : "", p, err);
        else sd_buf_printf(&b, "%s%s sha256:%s", b.len ? "; " : "", p, hex);
    }
    free(files);
    return sd_buf_steal(&b);
}

/* {instance} for the next expansion (the run's variables hold it from the
 * start, runner.c) */
static void sd_run_set_instance_var(sd_run_t *r, int instance) {
    for (int i = r->vars.n - 1; i >= 0; i--)
        if (!strcmp(r->vars.v[i].key, "instance")) {
            free(r->vars.v[i].value);
            r->vars.v[i].value = sd_util_fmt("%d", instance);
            return;
        }
}

sd_err_t sd_run_start_instance(sd_run_t *r, const char *variant, int instance, int64_t timeout_ms, char *detail, size_t dlen,
                               char *err, size_t errlen) {
    int inc = 0;
    sd_run_set_instance_var(r, instance);
    sd_sup_focus(r->sup, instance);
    char **src = r->sc->argv;
    int argc = r->sc->argc, line = r->sc->pipeline_line;
    const struct sd_variant_s *as = NULL;
    for (int v = 0; variant && v < r->sc->nvariants; v++)
        if (!strcmp(r->sc->variants[v].name, variant)) as = &r->sc->variants[v];
    if (as) src = as->argv, argc = as->argc, line = as->line;
    int deployed = r->sc->deploy[SD_DEPLOY_START].argv != NULL;
    char **argv = deployed ? sd_run_deploy_argv(r, as, err, errlen) : sd_run_expand_argv(r, src, argc, err, errlen);
    if (argv && deployed) {
        for (argc = 0; argv[argc]; argc++)
            ;
        if (!as) line = r->sc->deploy[SD_DEPLOY_START].line;
    }
    sd_buf_t b;
    sd_buf_init(&b);
    sd_err_t e = argv ? SD_OK : SD_ERR_SCENARIO;
    for (int i = 0; argv && i < argc; i++) sd_buf_printf(&b, "%s%s", i ? " " : "", argv[i]);
    char *version = e ? NULL : sd_run_version(r);
    if (!e) e = sd_sup_start(r->sup, argv, instance, &inc, err, errlen);
    sd_run_free_argv(argv);
    if (e == SD_ERR_PIPELINE) {
        char tmp[1024];
        snprintf(tmp, sizeof(tmp), "%s", err);
        sd_err_set(err, errlen, e, "%s:%d: %s", r->sc->path, line, tmp);
    }
    if (e == SD_ERR_SCENARIO) {
        sd_buf_free(&b);
        free(version);
        return e;
    }
    r->pipe.incarnations = inc;
    int64_t started_wall = sd_util_wall_ms();
    sd_progress_new_incarnation(r, inc, started_wall);
    char *lo = sd_sup_log_path(r->sup, inc, 0), *le = sd_sup_log_path(r->sup, inc, 1);
    sd_sup_state_t st;
    sd_sup_state(r->sup, &st);
    char *cmd = sd_buf_steal(&b);
    /* started when its first sample was taken (sd_progress_new_incarnation):
     * the rows after that sample are this incarnation's, to the ms */
    sd_ledger_incarnation_begin(r->ledger, inc, instance, (int)st.pid, cmd, lo, le, started_wall, version, NULL, 0);
    if (version) sd_run_say(r, "incarnation %d: version %s", inc, version);
    free(version);
    free(cmd);
    free(lo);
    free(le);
    if (e) return e;
    r->pipe.wanted = 1;
    int64_t start = sd_util_mono_ms();
    int64_t deadline = start + timeout_ms;
    /* the progress source says when it is ready (progress.h): a marker or
     * SD-READY, the query's SD-READY, or still up after 2 s */
    int markers = r->prog.ops->batches;
    int64_t grace = sd_util_scaled_ms(2000);
    for (;;) {
        sd_sup_state(r->sup, &st);
        if (!st.running) {
            /* let the exit event be recorded, then explain */
            sd_run_tick(r, 50, NULL, 0);
            char *tail = sd_sup_tail(r->sup), *telling = sd_sup_telling(r->sup);
            size_t tl = strlen(tail);
            const char *t = tl > 800 ? tail + tl - 800 : tail;
            /* the error itself first, when a long dump pushed it out of the tail */
            char said[1200] = "";
            if (telling && !strstr(t, telling)) snprintf(said, sizeof(said), "the error: %.1000s\n", telling);
            if (st.exit_signal)
                e = sd_err_set(err, errlen, SD_ERR_PIPELINE, "%s:%d: pipeline (incarnation %d) died of signal %d before it was ready; %slast stderr:\n%s",
                               r->sc->path, line, inc, st.exit_signal, said, t[0] ? t : "(empty)");
            else
                e = sd_err_set(err, errlen, SD_ERR_PIPELINE, "%s:%d: pipeline (incarnation %d) exited with code %d before it was ready; %slast stderr:\n%s",
                               r->sc->path, line, inc, st.exit_code, said, t[0] ? t : "(empty)");
            free(tail);
            free(telling);
            r->pipe.wanted = 0;
            return e;
        }
        int ready = sd_progress_ready(r, &st, sd_util_mono_ms() - start);
        if (markers && ready) {
            snprintf(detail, dlen, "incarnation %d (pid %d) ready after %.2fs", inc, (int)st.pid,
                     (double)(sd_util_mono_ms() - start) / 1000.0);
            return SD_OK;
        }
        if (!markers && ready) {
            snprintf(detail, dlen, "incarnation %d (pid %d) running after %.1fs", inc, (int)st.pid, (double)grace / 1000.0);
            return SD_OK;
        }
        if (sd_util_mono_ms() >= deadline) {
            snprintf(detail, dlen, "incarnation %d (pid %d) running, but %s within %.0fs", inc, (int)st.pid,
                     r->prog.ops->not_ready ? r->prog.ops->not_ready : "was not found ready", (double)timeout_ms / 1000.0);
            sd_ledger_warning(r->ledger, "no-ready-marker", detail, NULL, 0);
            return SD_OK;
        }
        if ((e = sd_run_tick(r, 20, err, errlen))) return e;
    }
}

/* Whether every instance of a pipeline the harness forked has exited
 * (after a first start): nothing left that could still create a sink. */
static int sd_run_pipeline_gone(sd_run_t *r, sd_sup_state_t *last) {
    if (!r->sup || r->sc->deploy[SD_DEPLOY_START].argv) return 0;
    for (int k = 1; k <= SD_MAX_INSTANCES; k++) {
        sd_sup_instance_state(r->sup, k, last);
        if (last->running) return 0;
    }
    sd_sup_state(r->sup, last);
    return last->incarnation > 0;
}

/* How the last incarnation ended, for a wait that ends because nothing
 * will write any more: its exit, and for a crash the line that told why. */
static void sd_run_gone_how(sd_run_t *r, const sd_sup_state_t *last, char *how, size_t len) {
    if (last->exit_signal) snprintf(how, len, "was killed by signal %d", last->exit_signal);
    else snprintf(how, len, "exited with status %d", last->exit_code);
    char *telling = last->exit_code || last->exit_signal ? sd_sup_telling(r->sup) : NULL;
    if (telling) {
        size_t n = strlen(how);
        snprintf(how + n, len - n, " (%.300s)", telling);
    }
    free(telling);
}

/* Does the next step but data steps aim a fault at a batch (kill, stop or
 * pause mid-batch, at-boundary, after-sink-commit)? */
static int sd_run_fault_aims_next(const sd_run_t *r) {
    for (int i = r->step + 1; i < r->sc->nsteps; i++) {
        const sd_step_t *st = &r->sc->steps[i];
        if (st->kind == SD_STEP_PRODUCE || st->kind == SD_STEP_REPLAY || st->kind == SD_STEP_INJECT) continue;
        return (st->kind == SD_STEP_KILL || st->kind == SD_STEP_STOP || st->kind == SD_STEP_PAUSE) && st->proc.mid_batch != SD_LAND_NOW;
    }
    return 0;
}

/* The rows an await waited for are visible; a sink may show a batch
 * before the pipeline's checkpoint commits it (Delta's commit, then
 * Spark's commits/N). A fault aimed next must not find that batch still
 * in flight and land in it: wait, within the step's deadline, for the
 * commit of the batch in flight when the rows appeared, and say so. */
static void sd_run_await_commit(sd_run_t *r, int64_t deadline, char *detail, size_t dlen) {
    if (!r->prog.ops || !r->prog.ops->batches || sd_progress_intervals(r) || !sd_run_fault_aims_next(r)) return;
    sd_progress_refresh(r, NULL, 0);
    int64_t b = r->prog.bs.begun, t0 = sd_util_mono_ms();
    int inc = r->prog.bs.incarnation;
    if (b < 0 || r->prog.bs.committed >= b) return;
    sd_sup_state_t last;
    while (r->prog.bs.committed < b && r->prog.bs.incarnation == inc && sd_util_mono_ms() <= deadline && !sd_run_pipeline_gone(r, &last))
        if (sd_run_tick(r, 20, NULL, 0)) break;
    size_t n = strlen(detail);
    if (r->prog.bs.committed >= b && r->prog.bs.incarnation == inc) {
        snprintf(detail + n, dlen - n, "; batch %lld, in flight when they appeared, committed %.2fs later", (long long)b,
                 (double)(sd_util_mono_ms() - t0) / 1000.0);
        return;
    }
    char w[400];
    snprintf(w, sizeof(w), "line %d: batch %lld, in flight when the awaited rows appeared, was not committed within the step's "
             "timeout: the fault aimed next may land in it", r->sc->steps[r->step].line, (long long)b);
    snprintf(detail + n, dlen - n, "; %s", w + strcspn(w, ":") + 2);
    sd_ledger_warning(r->ledger, "await-uncommitted", w, NULL, 0);
}

/* await sink: the sink is read as it would be judged (a missing file or
 * table is an error here), so a sink the pipeline never creates is named
 * within a few seconds rather than after the timeout as "0 rows"; and
 * once the pipeline has exited with it still unreadable, nothing can
 * change that: the step ends at once (SD_ERR_SINK: inconclusive, exit 3).
 * Readable but short of the rows, with every instance of the pipeline
 * gone (a crash nothing restarts: no step runs beside this one), the wait
 * ends as well, naming how the pipeline ended, instead of waiting out its
 * timeout. */
sd_err_t sd_run_await_sink(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_sink_t *s = NULL;
    for (int i = 0; i < r->sink.n; i++)
        if (!strcmp(r->sink.v[i]->name, st->await.sink)) s = r->sink.v[i];
    int64_t t0 = sd_util_mono_ms();
    int64_t deadline = t0 + sd_util_scaled_ms(st->timeout_ms);
    int64_t rows = 0, bad_since = -1, gone_since = -1;
    int said = 0;
    char cause[1024] = "";
    sd_err_t e;
    for (;;) {
        char serr[1024];
        int64_t now = sd_util_mono_ms();
        if (sd_sink_count(s, 0, &rows, serr, sizeof(serr)) == SD_OK) {
            bad_since = -1;
            if (sd_op_eval(st->await.op, rows, st->await.rows)) {
                snprintf(detail, dlen, "sink %s has %lld rows after %.2fs", s->name, (long long)rows, (double)(now - t0) / 1000.0);
                sd_run_await_commit(r, deadline, detail, dlen);
                return SD_OK;
            }
            sd_sup_state_t last;
            if (!sd_run_pipeline_gone(r, &last)) gone_since = -1;
            else if (gone_since < 0) gone_since = now;
            else if (now - gone_since >= SD_SINK_GONE_GRACE_MS) {
                char how[480];
                sd_run_gone_how(r, &last, how, sizeof(how));
                snprintf(detail, dlen, "sink %s has %lld rows after %.1fs, expected rows%s%lld; the pipeline (incarnation %d) %s and no "
                         "step starts it again during this wait: nothing else will write it", s->name, (long long)rows,
                         (double)(now - t0) / 1000.0, sd_op_text(st->await.op), (long long)st->await.rows, last.incarnation, how);
                return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "%s", detail);
            }
        } else {
            rows = 0;
            snprintf(cause, sizeof(cause), "%s", serr);
            if (bad_since < 0) bad_since = now;
            if (!said && now - bad_since >= SD_SINK_UNREADABLE_SAY_MS) {
                said = 1;
                char w[1280];
                snprintf(w, sizeof(w), "line %d: the sink still cannot be read after %.1fs (right if the pipeline has not written yet; "
                         "otherwise check the sink line's path): %s", st->line, (double)(now - bad_since) / 1000.0, cause);
                sd_ledger_warning(r->ledger, "sink-unreadable", w, NULL, 0);
                sd_run_say(r, "  waiting: %s", w);
            }
            sd_sup_state_t last;
            if (!sd_run_pipeline_gone(r, &last)) gone_since = -1;
            else if (gone_since < 0) gone_since = now;
            else if (now - gone_since >= SD_SINK_GONE_GRACE_MS) {
                char how[480];
                sd_run_gone_how(r, &last, how, sizeof(how));
                return sd_err_set(err, errlen, SD_ERR_SINK,
                                  "%s; the pipeline (incarnation %d) %s and nothing else will write it: does the sink line name "
                                  "what the pipeline writes?", cause, last.incarnation, how);
            }
        }
        if (now > deadline) {
            if (bad_since >= 0)
                snprintf(detail, dlen, "sink %s could not be read for %.1fs, expected rows%s%lld: %s", s->name,
                         (double)(now - bad_since) / 1000.0, sd_op_text(st->await.op), (long long)st->await.rows, cause);
            else
                snprintf(detail, dlen, "sink %s has %lld rows after %.1fs, expected rows%s%lld", s->name, (long long)rows,
                         (double)(now - t0) / 1000.0, sd_op_text(st->await.op), (long long)st->await.rows);
            return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "%s", detail);
        }
        if ((e = sd_run_tick(r, 50, err, errlen))) return e;
    }
}

int sd_run_unfed(sd_run_t *r, sd_run_unfed_t *w) {
    int64_t now = sd_util_mono_ms();
    const sd_run_batches_t *b = &r->prog.bs;
    if (r->bg.active || r->side.held_n || b->begun > b->committed) {
        w->since = 0;
        return 0;
    }
    if (now < w->next) return w->since && now - w->since >= SD_RUN_UNFED_MS;
    w->next = now + 100;
    char why[512];
    if (sd_progress_caught_up(r, why, sizeof(why)) != 1) {
        w->since = 0;
        return 0;
    }
    if (!w->since) w->since = now;
    return now - w->since >= SD_RUN_UNFED_MS;
}

sd_err_t sd_run_await_quiescent(sd_run_t *r, int64_t quiet_ms, int64_t timeout_ms, char *detail, size_t dlen,
                                       char *err, size_t errlen) {
    sd_err_t e;
    if ((e = sd_run_background_wait(r, err, errlen))) return e;
    /* deliveries lag=: quiescence is everything sent consumed, and the
     * held deliveries are still to be sent (each within the lag) */
    while (r->side.held_n)
        if ((e = sd_run_tick(r, 20, err, errlen))) return e;
    int64_t t0 = sd_util_mono_ms();
    int64_t deadline = t0 + sd_util_scaled_ms(timeout_ms);
    if ((e = sd_run_drain(r, sd_util_scaled_ms(timeout_ms), err, errlen))) return e;
    if ((e = sd_run_sample(r, 1, err, errlen))) return sd_run_set_fatal(r, e, err);
    char why[512] = "";
    int64_t next_cu = 0, lifted = 0;
    int cu = -1;
    /* a Spark checkpoint proves one query caught up; a second sink (the
     * quarantine) is another query's, which may not have written yet: then
     * only the stillness window judges */
    int proof_covers_sinks = r->sc->progress != SD_PROGRESS_SPARK || r->sink.n <= 1;
    for (;;) {
        int64_t now = sd_util_mono_ms();
        sd_sup_state_t st = {0};
        if (r->sup) sd_sup_state(r->sup, &st);
        int64_t since = r->sampling.last_change_mono;
        /* a batch event is a change, but for intervals that commit whether or
         * not they held data (Flink's checkpoints): those go on while nothing
         * changes */
        if (!sd_progress_intervals(r) && r->prog.bs.last_event_mono > since) since = r->prog.bs.last_event_mono;
        if (t0 > since) since = t0;
        /* a network blackhole on the way to the brokers stills the sinks
         * without the pipeline being done: stillness counts from its end */
        int holed = r->faults.net_down & 1;
        if (holed) lifted = now;
        if (lifted > since) since = lifted;
        /* caught up (every partition committed to its end, proven by the
         * source's offsets) needs no stillness window: only a short settle,
         * for a sink written just after the commit that proved it */
        int64_t still = now - since, settle = quiet_ms < SD_RUN_SETTLE_MS ? quiet_ms : SD_RUN_SETTLE_MS;
        int quiet = still >= quiet_ms, settled = r->sampling.last_sample_mono - since >= settle;
        /* a batch that began and has not committed is work under way, however
         * still the sinks look (an aggregation writes nothing until a window
         * closes). Real-time intervals are always open, and a consumer
         * group's "batch" is rows past its commit, which the caught-up test
         * below already weighs with the committed offsets: neither counts */
        int flying = settled && st.running && !sd_progress_intervals(r) && r->sc->progress != SD_PROGRESS_GROUP &&
                     sd_progress_in_flight(r);
        if (flying) {
            quiet = settled = 0;
            snprintf(why, sizeof(why), "batch %lld of incarnation %d began %.1fs ago and has not committed", (long long)r->prog.bs.begun,
                     r->prog.bs.incarnation, (double)(now - r->prog.bs.begun_mono) / 1000.0);
        }
        /* a transaction open in a sink hides its records, and every record
         * committed after it began, from a read_committed reader: not
         * still until it ends, committed or aborted (a killed writer's at
         * the fencing by its successor, or at its transaction.timeout.ms) */
        int held = 0;
        for (int si = 0; (quiet || settled) && si < r->sink.n && !held; si++) {
            int64_t pend = sd_sink_pending(r->sink.v[si]);
            if (pend > 0) {
                held = 1;
                quiet = settled = 0;
                snprintf(why, sizeof(why), "sink %s holds an open transaction (%lld records written past its last stable offset, "
                         "not committed), which hides what was committed after it began", r->sink.v[si]->name, (long long)pend);
            }
        }
        if (holed) {
            quiet = settled = 0;
            cu = -1;
            snprintf(why, sizeof(why), "a network blackhole holds the pipeline's way to the brokers (it can neither read nor be seen "
                     "to be done until it lifts: `heal`, or its for=)");
        }
        if (settled && now >= next_cu) {
            cu = sd_progress_caught_up(r, why, sizeof(why));
            next_cu = now + 100;
            /* a pipeline that gives its own account (Spark's progress, read
             * into pipeline_account) gives it after the commit: the proof
             * waits for the account of the newest committed batch, and
             * without it only the stillness window judges. A Spark query is
             * taken to give one (a query that never does loses only the
             * shortcut): until its first account, what it is (stateful,
             * below) is not known */
            if (cu == 1 && (r->prog.account_next || r->sc->progress == SD_PROGRESS_SPARK) && r->prog.bs.committed >= r->prog.account_next) {
                snprintf(why, sizeof(why), "the pipeline's own account has reported batch %lld, batch %lld is committed",
                         (long long)r->prog.account_next - 1, (long long)r->prog.bs.committed);
                cu = -1;
            }
            /* nor does consuming every offset prove a stateful query done:
             * Spark runs a batch without new data when the watermark moves,
             * and that batch emits what it evicts (a left join's null rows,
             * closed windows, expired duplicates) */
            if (cu == 1 && r->prog.account_stateful) {
                snprintf(why, sizeof(why), "the query keeps state (its progress names state operators): a batch without new "
                         "data may still emit what the watermark evicts");
                cu = -1;
            }
        }
        if ((quiet && cu != 0) || (settled && cu == 1 && proof_covers_sinks)) {
            if (quiet)
                snprintf(detail, dlen, "quiescent after %.2fs: sinks unchanged for %.1fs%s", (double)(now - t0) / 1000.0,
                         (double)quiet_ms / 1000.0, cu == 1 ? ", source fully consumed" : "");
            else
                snprintf(detail, dlen, "quiescent after %.2fs: source fully consumed (every partition committed to its end), "
                         "sinks unchanged for %.2fs", (double)(now - t0) / 1000.0, (double)still / 1000.0);
            r->quiet.last_quiescent_mono = sd_util_mono_ms();
            r->sampling.idle_ms += r->quiet.last_quiescent_mono - since; /* waited after the pipeline's last sign of work */
            return SD_OK;
        }
        if (now > deadline) {
            if (!quiet && !flying && !held)
                snprintf(why, sizeof(why), "the sinks or batch markers kept changing (last change %.1fs ago)",
                         (double)(now - since) / 1000.0);
            snprintf(detail, dlen, "no quiescence within %.0fs: %s", (double)(now - t0) / 1000.0, why);
            r->quiet.failed = 1;
            return sd_err_set(err, errlen, SD_ERR_QUIESCENCE, "%s", detail);
        }
        /* sample at least four times per quiet window */
        int64_t step = settle / 4 < 50 ? settle / 4 : 50;
        if (step < 10) step = 10;
        if (r->sampling.next_sample_mono > now + quiet_ms / 4) r->sampling.next_sample_mono = now + quiet_ms / 4;
        /* and, while sampling is cheap, twice per settle window, at once
         * after a batch event (so a sink's change is dated by it, not by
         * the next look), and when the settle would end: the wait after
         * the pipeline's last change is the settle, not the settle and
         * the cadence of looking */
        if (r->sampling.sample_cost_ms * 20 <= SD_RUN_SETTLE_MS) {
            int64_t due = now + settle / 2;
            if (r->prog.bs.last_event_mono > r->sampling.last_sample_mono) due = now;
            else if (!settled && since + settle > now && since + settle < due) due = since + settle;
            if (r->sampling.next_sample_mono > due) r->sampling.next_sample_mono = due;
            if (due - now < step) step = due - now < 5 ? 5 : due - now;
        }
        if ((e = sd_run_tick(r, step, err, errlen))) return e;
    }
}

sd_err_t sd_run_await_batches(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    int64_t t0 = sd_util_mono_ms(), deadline = t0 + sd_util_scaled_ms(st->timeout_ms);
    sd_err_t e;
    for (;;) { /* each tick polls Kafka, production and the pipeline's progress */
        if (r->prog.bs.commits >= st->await.rows) {
            snprintf(detail, dlen, "incarnation %d committed %lld batches (newest %lld) after %.2fs", r->prog.bs.incarnation,
                     (long long)r->prog.bs.commits, (long long)r->prog.bs.committed, (double)(sd_util_mono_ms() - t0) / 1000.0);
            return SD_OK;
        }
        if (sd_util_mono_ms() > deadline)
            return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "incarnation %d committed %lld batches in %.0fs, expected %lld",
                              r->prog.bs.incarnation, (long long)r->prog.bs.commits, (double)sd_util_scaled_ms(st->timeout_ms) / 1000.0,
                              (long long)st->await.rows);
        if ((e = sd_run_tick(r, 20, err, errlen))) return e;
    }
}

sd_err_t sd_run_sleep(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_err_t e = sd_run_tick_until(r, sd_util_mono_ms() + st->timeout_ms, err, errlen);
    if (e) return e;
    snprintf(detail, dlen, "slept %.2fs", (double)st->timeout_ms / 1000.0);
    return SD_OK;
}
