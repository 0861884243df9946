/* run_loop.c - the event loop every wait of a run serves (sd_run_tick):
 * the producer's delivery reports, production registered to go on in the
 * background (r->bg.serve), the pipeline's events (markers, exits, Spark's
 * account, parsed by progress_spark.c, Kafka Streams' states and restores),
 * sink samples, faults to undo, periodic commits of run.db. It
 * calls no file of the run above it: what it serves is registered with it
 * or lies below (run_base.c, progress, the supervisor). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progress.h"
#include "run_int.h"

sd_err_t sd_run_pump(sd_run_t *r, char *err, size_t errlen) {
    char local[1024] = "";
    if (!err) {
        err = local;
        errlen = sizeof(local);
    }
    sd_err_t e = r->bg.serve ? r->bg.serve(r, err, errlen) : SD_OK;
    if (!e && r->src.producer) e = sd_producer_poll(r->src.producer, 0, err, errlen);
    if (!e && r->side.producer) e = sd_producer_poll(r->side.producer, 0, err, errlen);
    if (!e) e = sd_run_sup_events(r, err, errlen);
    if (e) sd_run_set_fatal(r, e, err);
    return e;
}

/* Record what the supervisor saw. */
sd_err_t sd_run_sup_events(sd_run_t *r, char *err, size_t errlen) {
    if (!r->sup) return SD_OK;
    sd_sup_event_t ev;
    if (!r->ledger) { /* judged and closed: what still comes is let go, never recorded */
        while (sd_sup_next_event(r->sup, &ev) == 0) free(ev.text);
        return SD_OK;
    }
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
            e = sd_progress_spark_account(r, ev.incarnation, ev.t_ms, ev.text, err, errlen);
            break;
        case SD_SUP_EV_ENGINE:
            sd_progress_engine_state(r, ev.incarnation, ev.text);
            e = sd_ledger_engine(r->ledger, ev.incarnation, ev.t_ms, ev.text, err, errlen);
            break;
        case SD_SUP_EV_EXIT: {
            e = sd_ledger_incarnation_end(r->ledger, ev.incarnation, ev.t_ms, ev.exit_code, ev.exit_signal, ev.ended_by, err, errlen);
            if (!e && !strcmp(ev.ended_by, "crash")) {
                r->pipe.crashes++;
                /* the crashed incarnation's own stderr, whichever instance is in focus */
                int k = sd_sup_instance_of(r->sup, ev.incarnation);
                int was = k ? sd_sup_focus(r->sup, k) : 0;
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
                /* the query's own exception wherever it lies (shutdown noise
                 * follows it); none in the tail: the newest line of the
                 * whole stderr that states an error (a long plan dump can
                 * follow a JVM's) */
                char *telling = !t || sd_sup_query_failed(r->sup) ? sd_sup_telling(r->sup) : NULL;
                if (was) sd_sup_focus(r->sup, was);
                if (telling) t = telling;
                if (!t) t = last;
                if (strlen(t) > 600) t += strlen(t) - 600;
                if (ev.exit_signal)
                    snprintf(detail, sizeof(detail), "incarnation %d died of signal %d; last stderr: %s", ev.incarnation, ev.exit_signal, t);
                else
                    snprintf(detail, sizeof(detail), "incarnation %d exited with code %d; last stderr: %s", ev.incarnation, ev.exit_code, t);
                free(tail);
                free(telling);
                e = sd_ledger_fault(r->ledger, r->step, "crash", detail, ev.incarnation, NULL, err, errlen);
                sd_run_say(r, "pipeline crashed: %.300s", detail);
            } else if (!e && !strcmp(ev.ended_by, "exit") && r->pipe.wanted) {
                char detail[128];
                snprintf(detail, sizeof(detail), "incarnation %d exited on its own with code 0", ev.incarnation);
                e = sd_ledger_warning(r->ledger, "pipeline-exit", detail, err, errlen);
            }
            break;
        }
        case SD_SUP_EV_READY:
            /* the versions a pipeline names on its ready line (streamdrill.spark:
             * spark=4.2.0 delta-spark=4.0.0) stand for a `version` line the drill has not */
            if (ev.text && !r->sc->version_argc && !r->sc->version_files) {
                char v[512];
                if (sd_run_ready_versions(ev.text, v, sizeof(v)))
                    e = sd_ledger_incarnation_version(r->ledger, ev.incarnation, v, err, errlen);
            }
            break;
        }
        free(ev.text);
    }
    return e;
}

int sd_run_ready_versions(const char *text, char *out, size_t len) {
    /* NAME=VALUE words but query=: what a version names */
    size_t n = 0;
    out[0] = 0;
    for (const char *p = text; *p;) {
        while (*p == ' ') p++;
        size_t w = strcspn(p, " ");
        const char *eq = memchr(p, '=', w);
        if (w && eq && eq > p && eq < p + w - 1 && !(eq - p == 5 && !memcmp(p, "query", 5)) && n + w + 2 < len) {
            if (n) out[n++] = ' ';
            memcpy(out + n, p, w);
            n += w;
            out[n] = 0;
        }
        p += w;
    }
    if (n && n + 30 < len) snprintf(out + n, len - n, " (the pipeline's ready line)");
    return n > 0;
}

sd_err_t sd_run_sample(sd_run_t *r, int force, char *err, size_t errlen) {
    int64_t now = sd_util_mono_ms();
    if (!force && now < r->sampling.next_sample_mono) return SD_OK;
    int64_t t0 = now;
    for (int i = 0; i < r->sink.n; i++) {
        int64_t rows = 0;
        char serr[1024];
        if (sd_sink_count(r->sink.v[i], 1, &rows, serr, sizeof(serr))) {
            /* a sink may be briefly unreadable while it is being created; the
             * final read decides whether it can be read at all */
            continue;
        }
        int64_t wall = sd_util_wall_ms();
        if (!r->sampling.sampled || rows != r->sampling.counts[i]) {
            r->sampling.last_change_mono = sd_util_mono_ms();
            sd_err_t e = sd_ledger_sample(r->ledger, wall, r->sink.v[i]->name, rows, r->sampling.sampled ? r->sampling.looked_wall[i] : -1,
                                          err, errlen);
            if (e) return e;
        }
        r->sampling.counts[i] = rows;
        r->sampling.looked_wall[i] = wall;
    }
    r->sampling.sampled = 1;
    r->sampling.last_sample_mono = t0;
    int64_t cost = sd_util_mono_ms() - t0;
    r->sampling.sample_cost_ms = cost;
    int64_t interval = 200;
    if (cost * 10 > interval) interval = cost * 10;
    r->sampling.next_sample_mono = sd_util_mono_ms() + interval;
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
        if (r->undo.n) sd_run_undo_due(r, 0);
        if (r->src.producer) e = sd_producer_poll(r->src.producer, 0, err, errlen);
        if (!e && r->bg.serve) e = r->bg.serve(r, err, errlen);
        if (!e) e = sd_run_sup_events(r, err, errlen);
        if (!e) e = sd_run_sample(r, 0, err, errlen);
        if (!e && sd_ledger_dirty_ms(r->ledger) >= 100) e = sd_ledger_checkpoint(r->ledger, err, errlen);
        if (e) return sd_run_set_fatal(r, e, err);
        sd_run_live(r);
        int64_t left = deadline - sd_util_mono_ms();
        if (left <= 0) return SD_OK;
        int64_t w = left < 20 ? left : 20;
        if (r->sup) sd_sup_wait_change(r->sup, w);
        else if (r->src.producer) sd_producer_poll(r->src.producer, (int)w, NULL, 0);
        else sd_util_sleep_ms(w);
    }
}

sd_err_t sd_run_tick_until(sd_run_t *r, int64_t until, char *err, size_t errlen) {
    sd_err_t e = SD_OK;
    while (!e && sd_util_mono_ms() < until) e = sd_run_tick(r, until - sd_util_mono_ms(), err, errlen);
    return e;
}

/* The pipeline's records as a fault left them (its progress source's account
 * and each sink's newest commit), into run.db fault_context. */
void sd_run_fault_context(sd_run_t *r, int64_t fid) {
    sd_buf_t b;
    sd_buf_init(&b);
    sd_progress_context(r, &b);
    for (int i = 0; i < r->sink.n; i++) {
        char *c = sd_sink_newest_commit(r->sink.v[i]);
        if (c) sd_buf_printf(&b, "%ssink %s: %s", b.len ? "; " : "", r->sink.v[i]->name, c);
        free(c);
    }
    if (b.len) sd_ledger_fault_context(r->ledger, fid, b.data, NULL, 0);
    sd_buf_free(&b);
}

