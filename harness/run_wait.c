/* run_wait.c - the runner's waiting: the event loop every wait serves
 * (sd_run_tick: delivery reports, background production, the pipeline's
 * events, sink samples, periodic commits), readiness of a new incarnation,
 * and the steps that wait: await sink, await quiescent, await batches,
 * sleep. What "ready", "in flight" and "caught up" mean comes from the
 * progress source (progress.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progress.h"
#include "run.h"

sd_err_t sd_run_pump(sd_run_t *r, char *err, size_t errlen) {
    char local[1024] = "";
    if (!err) {
        err = local;
        errlen = sizeof(local);
    }
    sd_err_t e = sd_run_background(r, err, errlen);
    if (!e && r->producer) e = sd_producer_poll(r->producer, 0, err, errlen);
    if (!e && r->side_producer) e = sd_producer_poll(r->side_producer, 0, err, errlen);
    if (!e) e = sd_run_sup_events(r, err, errlen);
    if (e) sd_run_set_fatal(r, e, err);
    return e;
}

/* Spark's own account of a batch (StreamingQueryProgress JSON), and the
 * state each stateful operator kept after it. */
static sd_err_t sd_run_progress(sd_run_t *r, int inc, int64_t t_ms, const char *text, char *err, size_t errlen) {
    json_t *o = json_loads(text, 0, NULL);
    if (!o) return SD_OK;
    int64_t batch = json_integer_value(json_object_get(o, "batchId"));
    int64_t rows = json_integer_value(json_object_get(o, "numInputRows"));
    const char *name = json_string_value(json_object_get(o, "name"));
    int64_t dur = json_integer_value(json_object_get(json_object_get(o, "durationMs"), "triggerExecution"));
    int64_t dropped = 0, wm = INT64_MIN;
    const char *wms = json_string_value(json_object_get(json_object_get(o, "eventTime"), "watermark"));
    /* before any event Spark reports the epoch: no watermark yet */
    if (wms && (sd_util_parse_iso8601(wms, &wm) || wm <= 0)) wm = INT64_MIN;
    json_t *ops = json_object_get(o, "stateOperators");
    size_t i;
    json_t *op;
    json_array_foreach(ops, i, op) dropped += json_integer_value(json_object_get(op, "numRowsDroppedByWatermark"));
    if (batch >= 0 && batch + 1 > r->account_next) r->account_next = batch + 1;
    if (json_array_size(ops)) r->account_stateful = 1;
    sd_err_t e = sd_ledger_progress(r->ledger, inc, t_ms, name ? name : "", batch, rows, dropped, dur, text, err, errlen);
    json_array_foreach(ops, i, op) {
        if (e) break;
        char opname[96];
        const char *on = json_string_value(json_object_get(op, "operatorName"));
        snprintf(opname, sizeof(opname), "%s#%zu", on ? on : "operator", i);
        json_t *cm = json_object_get(op, "customMetrics");
        char *custom = json_object_size(cm) ? json_dumps(cm, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
#define SD_FIG(k) (json_is_integer(json_object_get(op, k)) ? json_integer_value(json_object_get(op, k)) : INT64_MIN)
        sd_state_row_t s = {.incarnation = inc, .t_ms = t_ms, .query = name, .batch = batch, .op = opname,
                            .rows_total = SD_FIG("numRowsTotal"), .rows_updated = SD_FIG("numRowsUpdated"),
                            .rows_removed = SD_FIG("numRowsRemoved"), .memory_bytes = SD_FIG("memoryUsedBytes"),
                            .watermark_ms = wm, .input_rows = rows, .custom = custom};
#undef SD_FIG
        e = sd_ledger_state(r->ledger, &s, err, errlen);
        free(custom);
    }
    json_decref(o);
    return e;
}

/* Record what the supervisor saw. */
sd_err_t sd_run_sup_events(sd_run_t *r, char *err, size_t errlen) {
    if (!r->sup) return SD_OK;
    sd_sup_event_t ev;
    sd_err_t e = sd_progress_poll(r, err, errlen);
    while (!e && sd_sup_next_event(r->sup, &ev) == 0) {
        switch (ev.type) {
        case SD_SUP_EV_BEGIN:
        case SD_SUP_EV_COMMIT:
            e = sd_progress_batch_event(r, ev.type, ev.incarnation, ev.batch, ev.rows, ev.text, ev.t_ms, err, errlen);
            if (!e && ev.type == SD_SUP_EV_COMMIT && ev.state >= 0) {
                sd_state_row_t s = {.incarnation = ev.incarnation, .t_ms = ev.t_ms, .query = "", .batch = ev.batch, .op = "markers",
                                    .rows_total = ev.state, .rows_updated = INT64_MIN, .rows_removed = INT64_MIN,
                                    .memory_bytes = INT64_MIN, .watermark_ms = INT64_MIN, .input_rows = ev.rows < 0 ? INT64_MIN : ev.rows};
                e = sd_ledger_state(r->ledger, &s, err, errlen);
            }
            break;
        case SD_SUP_EV_PROGRESS:
            e = sd_run_progress(r, ev.incarnation, ev.t_ms, ev.text, err, errlen);
            break;
        case SD_SUP_EV_EXIT: {
            e = sd_ledger_incarnation_end(r->ledger, ev.incarnation, ev.t_ms, ev.exit_code, ev.exit_signal, ev.ended_by, err, errlen);
            if (!e && !strcmp(ev.ended_by, "crash")) {
                r->crashes++;
                char *tail = sd_sup_tail(r->sup);
                char detail[1536];
                /* the most telling line: the last one naming an exception or
                 * an error, else the end of stderr */
                const char *t = NULL, *last = "";
                for (char *line = tail; line && *line;) {
                    char *nl = strchr(line, '\n');
                    if (nl) *nl = 0;
                    if (*line) last = line;
                    if (strstr(line, "Exception") || strstr(line, "Error:") || strstr(line, "error:") || strstr(line, "refpipe:"))
                        t = line;
                    line = nl ? nl + 1 : NULL;
                }
                if (!t) t = last;
                if (strlen(t) > 600) t += strlen(t) - 600;
                if (ev.exit_signal)
                    snprintf(detail, sizeof(detail), "incarnation %d died of signal %d; last stderr: %s", ev.incarnation, ev.exit_signal, t);
                else
                    snprintf(detail, sizeof(detail), "incarnation %d exited with code %d; last stderr: %s", ev.incarnation, ev.exit_code, t);
                free(tail);
                e = sd_ledger_fault(r->ledger, r->step, "crash", detail, ev.incarnation, NULL, err, errlen);
                sd_run_say(r, "pipeline crashed: %.300s", detail);
            } else if (!e && !strcmp(ev.ended_by, "exit") && r->pipeline_wanted) {
                char detail[128];
                snprintf(detail, sizeof(detail), "incarnation %d exited on its own with code 0", ev.incarnation);
                e = sd_ledger_warning(r->ledger, "pipeline-exit", detail, err, errlen);
            }
            break;
        }
        case SD_SUP_EV_READY:
            break;
        }
        free(ev.text);
    }
    return e;
}

sd_err_t sd_run_sample(sd_run_t *r, int force, char *err, size_t errlen) {
    int64_t now = sd_util_mono_ms();
    if (!force && now < r->next_sample_mono) return SD_OK;
    int64_t t0 = now;
    for (int i = 0; i < r->nsinks; i++) {
        int64_t rows = 0;
        char serr[1024];
        if (sd_sink_count(r->sinks[i], 1, &rows, serr, sizeof(serr))) {
            /* a sink may be briefly unreadable while it is being created; the
             * final read decides whether it can be read at all */
            continue;
        }
        if (!r->sampled || rows != r->counts[i]) {
            r->last_change_mono = sd_util_mono_ms();
            sd_err_t e = sd_ledger_sample(r->ledger, sd_util_wall_ms(), r->sinks[i]->name, rows, err, errlen);
            if (e) return e;
        }
        r->counts[i] = rows;
    }
    r->sampled = 1;
    r->last_sample_mono = t0;
    int64_t cost = sd_util_mono_ms() - t0;
    r->sample_cost_ms = cost;
    int64_t interval = 200;
    if (cost * 10 > interval) interval = cost * 10;
    r->next_sample_mono = sd_util_mono_ms() + interval;
    return SD_OK;
}

sd_err_t sd_run_tick(sd_run_t *r, int64_t wait_ms, char *err, size_t errlen) {
    char local[1024] = "";
    if (!err) { /* callers that only wait still get the cause kept with the fatal error */
        err = local;
        errlen = sizeof(local);
    }
    int64_t deadline = sd_util_mono_ms() + wait_ms;
    for (;;) {
        if (sd_run_stop_requested) return sd_run_set_fatal(r, sd_err_set(err, errlen, SD_ERR_INTERRUPTED, "interrupted by a signal"), "interrupted by a signal");
        sd_err_t e = SD_OK;
        if (r->nundo) sd_run_undo_due(r, 0);
        if (r->producer) e = sd_producer_poll(r->producer, 0, err, errlen);
        if (!e) e = sd_run_background(r, err, errlen);
        if (!e) e = sd_run_sup_events(r, err, errlen);
        if (!e) e = sd_run_sample(r, 0, err, errlen);
        if (!e && sd_ledger_dirty_ms(r->ledger) >= 100) e = sd_ledger_checkpoint(r->ledger, err, errlen);
        if (e) return sd_run_set_fatal(r, e, err);
        sd_run_live(r);
        int64_t left = deadline - sd_util_mono_ms();
        if (left <= 0) return SD_OK;
        int64_t w = left < 20 ? left : 20;
        if (r->sup) sd_sup_wait_change(r->sup, w);
        else if (r->producer) sd_producer_poll(r->producer, (int)w, NULL, 0);
        else sd_util_sleep_ms(w);
    }
}

sd_err_t sd_run_start_pipeline(sd_run_t *r, const char *variant, int64_t timeout_ms, char *detail, size_t dlen,
                               char *err, size_t errlen) {
    int inc = 0;
    char **src = r->sc->argv;
    int argc = r->sc->argc, line = r->sc->pipeline_line;
    for (int v = 0; variant && v < r->sc->nvariants; v++)
        if (!strcmp(r->sc->variants[v].name, variant)) {
            src = r->sc->variants[v].argv;
            argc = r->sc->variants[v].argc;
            line = r->sc->variants[v].line;
        }
    char **argv = sd_util_xcalloc((size_t)argc + 1, sizeof(char *));
    sd_buf_t b;
    sd_buf_init(&b);
    sd_err_t e = SD_OK;
    for (int i = 0; i < argc && !e; i++) {
        argv[i] = sd_scenario_expand(src[i], &r->vars, err, errlen);
        if (!argv[i]) e = SD_ERR_SCENARIO;
        else sd_buf_printf(&b, "%s%s", i ? " " : "", argv[i]);
    }
    if (!e) e = sd_sup_start(r->sup, argv, &inc, err, errlen);
    for (int i = 0; i < argc; i++) free(argv[i]);
    free(argv);
    if (e == SD_ERR_PIPELINE) {
        char tmp[1024];
        snprintf(tmp, sizeof(tmp), "%s", err);
        sd_err_set(err, errlen, e, "%s:%d: %s", r->sc->path, line, tmp);
    }
    if (e == SD_ERR_SCENARIO) {
        sd_buf_free(&b);
        return e;
    }
    r->incarnations = inc;
    r->inc_started_wall = sd_util_wall_ms();
    sd_progress_new_incarnation(r, inc);
    char *lo = sd_sup_log_path(r->sup, inc, 0), *le = sd_sup_log_path(r->sup, inc, 1);
    sd_sup_state_t st;
    sd_sup_state(r->sup, &st);
    char *cmd = sd_buf_steal(&b);
    /* started when its first sample was taken (sd_progress_new_incarnation):
     * the rows after that sample are this incarnation's, to the ms */
    sd_ledger_incarnation_begin(r->ledger, inc, (int)st.pid, cmd, lo, le, r->inc_started_wall, NULL, 0);
    free(cmd);
    free(lo);
    free(le);
    if (e) return e;
    r->pipeline_wanted = 1;
    int64_t start = sd_util_mono_ms();
    int64_t deadline = start + timeout_ms;
    /* the progress source says when it is ready (progress.h): a marker or
     * SD-READY, the query's SD-READY, or still up after 2 s */
    int markers = r->progress->batches;
    int64_t grace = sd_util_scaled_ms(2000);
    for (;;) {
        sd_sup_state(r->sup, &st);
        if (!st.running) {
            /* let the exit event be recorded, then explain */
            sd_run_tick(r, 50, NULL, 0);
            char *tail = sd_sup_tail(r->sup);
            size_t tl = strlen(tail);
            const char *t = tl > 800 ? tail + tl - 800 : tail;
            if (st.exit_signal)
                e = sd_err_set(err, errlen, SD_ERR_PIPELINE, "%s:%d: pipeline (incarnation %d) died of signal %d before it was ready; last stderr:\n%s",
                               r->sc->path, line, inc, st.exit_signal, t[0] ? t : "(empty)");
            else
                e = sd_err_set(err, errlen, SD_ERR_PIPELINE, "%s:%d: pipeline (incarnation %d) exited with code %d before it was ready; last stderr:\n%s",
                               r->sc->path, line, inc, st.exit_code, t[0] ? t : "(empty)");
            free(tail);
            r->pipeline_wanted = 0;
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
                     r->progress->not_ready ? r->progress->not_ready : "was not found ready", (double)timeout_ms / 1000.0);
            sd_ledger_warning(r->ledger, "no-ready-marker", detail, NULL, 0);
            return SD_OK;
        }
        if ((e = sd_run_tick(r, 20, err, errlen))) return e;
    }
}

sd_err_t sd_run_await_sink(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_sink_t *s = NULL;
    for (int i = 0; i < r->nsinks; i++)
        if (!strcmp(r->sinks[i]->name, st->sink)) s = r->sinks[i];
    int64_t t0 = sd_util_mono_ms();
    int64_t deadline = t0 + sd_util_scaled_ms(st->timeout_ms);
    int64_t rows = 0;
    sd_err_t e;
    for (;;) {
        char serr[1024];
        if (sd_sink_count(s, 1, &rows, serr, sizeof(serr)) == SD_OK && sd_op_eval(st->op, rows, st->rows)) {
            snprintf(detail, dlen, "sink %s has %lld rows after %.2fs", s->name, (long long)rows,
                     (double)(sd_util_mono_ms() - t0) / 1000.0);
            return SD_OK;
        }
        if (sd_util_mono_ms() > deadline) {
            snprintf(detail, dlen, "sink %s has %lld rows after %.1fs, expected rows%s%lld", s->name, (long long)rows,
                     (double)(sd_util_mono_ms() - t0) / 1000.0, sd_op_text(st->op), (long long)st->rows);
            return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "%s", detail);
        }
        if ((e = sd_run_tick(r, 50, err, errlen))) return e;
    }
}

sd_err_t sd_run_await_quiescent(sd_run_t *r, int64_t quiet_ms, int64_t timeout_ms, char *detail, size_t dlen,
                                       char *err, size_t errlen) {
    sd_err_t e;
    if ((e = sd_run_background_wait(r, err, errlen))) return e;
    int64_t t0 = sd_util_mono_ms();
    int64_t deadline = t0 + sd_util_scaled_ms(timeout_ms);
    if ((e = sd_run_drain(r, sd_util_scaled_ms(timeout_ms), err, errlen))) return e;
    if ((e = sd_run_sample(r, 1, err, errlen))) return sd_run_set_fatal(r, e, err);
    char why[512] = "";
    int64_t next_cu = 0;
    int cu = -1;
    /* a Spark checkpoint proves one query caught up; a second sink (the
     * quarantine) is another query's, which may not have written yet: then
     * only the stillness window judges */
    int proof_covers_sinks = r->sc->progress != SD_PROGRESS_SPARK || r->nsinks <= 1;
    for (;;) {
        int64_t now = sd_util_mono_ms();
        sd_sup_state_t st = {0};
        if (r->sup) sd_sup_state(r->sup, &st);
        int64_t since = r->last_change_mono;
        if (r->bs.last_event_mono > since) since = r->bs.last_event_mono;
        if (t0 > since) since = t0;
        /* caught up (every partition committed to its end, proven by the
         * source's offsets) needs no stillness window: only a short settle,
         * for a sink written just after the commit that proved it */
        int64_t still = now - since, settle = quiet_ms < SD_RUN_SETTLE_MS ? quiet_ms : SD_RUN_SETTLE_MS;
        int quiet = still >= quiet_ms, settled = r->last_sample_mono - since >= settle;
        /* a batch that began and has not committed is work under way, however
         * still the sinks look (an aggregation writes nothing until a window
         * closes). Real-time intervals are always open, and a consumer
         * group's "batch" is rows past its commit, which the caught-up test
         * below already weighs with the committed offsets: neither counts */
        int flying = settled && st.running && !r->sc->spark_realtime && r->sc->progress != SD_PROGRESS_GROUP &&
                     sd_progress_in_flight(r);
        if (flying) {
            quiet = settled = 0;
            snprintf(why, sizeof(why), "batch %lld of incarnation %d began %.1fs ago and has not committed", (long long)r->bs.begun,
                     r->bs.incarnation, (double)(now - r->bs.begun_mono) / 1000.0);
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
            if (cu == 1 && (r->account_next || r->sc->progress == SD_PROGRESS_SPARK) && r->bs.committed >= r->account_next) {
                snprintf(why, sizeof(why), "the pipeline's own account has reported batch %lld, batch %lld is committed",
                         (long long)r->account_next - 1, (long long)r->bs.committed);
                cu = -1;
            }
            /* nor does consuming every offset prove a stateful query done:
             * Spark runs a batch without new data when the watermark moves,
             * and that batch emits what it evicts (a left join's null rows,
             * closed windows, expired duplicates) */
            if (cu == 1 && r->account_stateful) {
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
            r->last_quiescent_mono = sd_util_mono_ms();
            r->idle_ms += r->last_quiescent_mono - since; /* waited after the pipeline's last sign of work */
            return SD_OK;
        }
        if (now > deadline) {
            if (!quiet && !flying)
                snprintf(why, sizeof(why), "the sinks or batch markers kept changing (last change %.1fs ago)",
                         (double)(now - since) / 1000.0);
            snprintf(detail, dlen, "no quiescence within %.0fs: %s", (double)(now - t0) / 1000.0, why);
            r->quiescence_failed = 1;
            return sd_err_set(err, errlen, SD_ERR_QUIESCENCE, "%s", detail);
        }
        /* sample at least four times per quiet window */
        int64_t step = settle / 4 < 50 ? settle / 4 : 50;
        if (step < 10) step = 10;
        if (r->next_sample_mono > now + quiet_ms / 4) r->next_sample_mono = now + quiet_ms / 4;
        /* and, while sampling is cheap, twice per settle window */
        if (r->sample_cost_ms * 20 <= SD_RUN_SETTLE_MS && r->next_sample_mono > now + settle / 2) r->next_sample_mono = now + settle / 2;
        if ((e = sd_run_tick(r, step, err, errlen))) return e;
    }
}

sd_err_t sd_run_await_batches(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    int64_t t0 = sd_util_mono_ms(), deadline = t0 + sd_util_scaled_ms(st->timeout_ms);
    sd_err_t e;
    for (;;) { /* each tick polls Kafka, production and the pipeline's progress */
        if (r->bs.commits >= st->rows) {
            snprintf(detail, dlen, "incarnation %d committed %lld batches (newest %lld) after %.2fs", r->bs.incarnation,
                     (long long)r->bs.commits, (long long)r->bs.committed, (double)(sd_util_mono_ms() - t0) / 1000.0);
            return SD_OK;
        }
        if (sd_util_mono_ms() > deadline)
            return sd_err_set(err, errlen, SD_ERR_TIMEOUT, "incarnation %d committed %lld batches in %.0fs, expected %lld",
                              r->bs.incarnation, (long long)r->bs.commits, (double)sd_util_scaled_ms(st->timeout_ms) / 1000.0,
                              (long long)st->rows);
        if ((e = sd_run_tick(r, 20, err, errlen))) return e;
    }
}

sd_err_t sd_run_sleep(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    int64_t until = sd_util_mono_ms() + st->timeout_ms;
    sd_err_t e;
    while (sd_util_mono_ms() < until)
        if ((e = sd_run_tick(r, until - sd_util_mono_ms(), err, errlen))) return e;
    snprintf(detail, dlen, "slept %.2fs", (double)st->timeout_ms / 1000.0);
    return SD_OK;
}
