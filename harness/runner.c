/* runner.c - runs one scenario: folder, run.db, broker, producer, pipeline,
 * steps, reconciliation, reports (see run.h).
 *
 * Order of a run:
 *   1. open the events (a missing log is a bad scenario: exit 2, nothing started)
 *   2. create DIR/<name>/ and run.db, record the plan
 *   3. start or reach the broker, create the run's topic
 *   4. open the sinks, prepare the supervisor
 *   5. run the steps in order; every wait serves sd_run_tick()
 *   6. make sure the pipeline was quiescent after the last data step
 *   7. reconcile every sink against the ledger, store anomalies and checks
 *   8. stop the pipeline, kill what is left, write the reports */
#include "run.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../reports/report.h"
#include "observe.h"
#include "recon.h"

volatile sig_atomic_t sd_run_stop_requested = 0;

typedef struct sd_run_staged_s {
    int64_t seq;
    const char *kind, *disp;
    size_t detail_off, key_off, value_off;   /* offsets into the arena, (size_t)-1 = none */
    size_t keylen, vlen;
    int64_t event_time;
    int null_value;
} sd_run_staged_t;

int64_t sd_run_elapsed_ms(const sd_run_t *r) { return sd_util_mono_ms() - r->t0_mono; }

/* Take the live progress line off the screen, so a message prints clean. */
static void sd_run_live_clear(sd_run_t *r) {
    if (!r->live_shown) return;
    fputs("\r\033[K", stderr);
    r->live_shown = 0;
}

/* The live progress line: step, events sent and acknowledged, rows in the
 * target, elapsed time; redrawn at most five times a second. */
static void sd_run_live(sd_run_t *r) {
    int64_t now = sd_util_mono_ms();
    if (!r->live || now < r->live_next_mono) return;
    r->live_next_mono = now + 200;
    sd_producer_stats_t st = {0};
    if (r->producer) sd_producer_stats(r->producer, &st);
    int64_t rows = -1;
    for (int i = 0; i < r->nsinks; i++)
        if (r->sinks[i] == r->target && r->sampled) rows = r->counts[i];
    char line[256];
    int n = snprintf(line, sizeof(line), "[%s %.1fs] step %d/%d: %s | sent %lld, acked %lld | target ", r->sc->name,
                     (double)sd_run_elapsed_ms(r) / 1000.0, r->step + 1, r->sc->nsteps, r->sc->steps[r->step].text,
                     (long long)st.sent, (long long)st.acked);
    if (n > 0 && (size_t)n < sizeof(line)) {
        if (rows >= 0) snprintf(line + n, sizeof(line) - (size_t)n, "%lld rows", (long long)rows);
        else snprintf(line + n, sizeof(line) - (size_t)n, "?");
    }
    /* one screen line: cut at the terminal's width */
    struct winsize ws;
    size_t width = ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10 ? ws.ws_col - 1 : 100;
    if (strlen(line) > width) line[width] = 0;
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
    r->live_shown = 1;
}

void sd_run_say(sd_run_t *r, const char *fmt, ...) {
    if (r->opts->quiet) return;
    sd_run_live_clear(r);
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%s %7.2fs] ", r->sc->name, (double)sd_run_elapsed_ms(r) / 1000.0);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static sd_err_t sd_run_set_fatal(sd_run_t *r, sd_err_t e, const char *msg) {
    if (!r->fatal) {
        r->fatal = e;
        snprintf(r->fatal_msg, sizeof(r->fatal_msg), "%s", msg);
    }
    return e;
}

int64_t sd_run_new_seq(sd_run_t *r, int kind, int disp) {
    if (r->nseq == r->capseq) {
        r->capseq = r->capseq ? r->capseq * 2 : 4096;
        r->disp = sd_util_xrealloc(r->disp, (size_t)r->capseq);
        r->kind = sd_util_xrealloc(r->kind, (size_t)r->capseq);
        r->sends = sd_util_xrealloc(r->sends, (size_t)r->capseq);
        r->sent_rel = sd_util_xrealloc(r->sent_rel, sizeof(uint32_t) * (size_t)r->capseq);
    }
    r->sent_rel[r->nseq] = UINT32_MAX;
    r->disp[r->nseq] = (uint8_t)disp;
    r->kind[r->nseq] = (uint8_t)kind;
    r->sends[r->nseq] = 0;
    return r->nseq++;
}

void sd_run_stage(sd_run_t *r, int64_t seq, const char *kind, const char *disp, const char *detail, int64_t event_time,
                  const void *key, size_t keylen, const void *value, size_t vlen, int null_value) {
    if (r->nstage == r->capstage) {
        r->capstage = r->capstage ? r->capstage * 2 : 1024;
        r->stage = sd_util_xrealloc(r->stage, sizeof(*r->stage) * (size_t)r->capstage);
    }
    sd_run_staged_t *m = &r->stage[r->nstage++];
    if (seq >= 0 && seq < r->nseq && r->sends[seq] < 255) r->sends[seq]++;
    m->seq = seq;
    m->kind = kind;
    m->disp = disp;
    m->event_time = event_time;
    m->null_value = null_value;
    m->detail_off = detail ? r->arena.len : (size_t)-1;
    if (detail) sd_buf_append(&r->arena, detail, strlen(detail) + 1);
    m->key_off = keylen ? r->arena.len : (size_t)-1;
    m->keylen = keylen;
    if (keylen) sd_buf_append(&r->arena, key, keylen);
    m->value_off = r->arena.len;
    m->vlen = vlen;
    if (vlen) sd_buf_append(&r->arena, value, vlen);
}

/* Hand the oldest submitted batch to Kafka once the ledger has committed it. */
static sd_err_t sd_run_produce_oldest(sd_run_t *r, char *err, size_t errlen) {
    struct sd_run_subbatch_s *b = &r->sub[r->sub_head];
    sd_err_t e = sd_ledger_wait(r->ledger, b->ticket, err, errlen);
    int64_t now = sd_util_wall_ms();
    char id[64];
    for (int i = 0; i < b->n && !e; i++) {
        sd_run_staged_t *m = &b->stage[i];
        sd_events_id(r->events, m->seq, id);
        e = sd_producer_send(r->producer, m->keylen ? b->arena.data + m->key_off : NULL, m->keylen,
                             m->null_value ? NULL : b->arena.data + m->value_off, m->vlen, id, b->ns[i], err, errlen);
        r->messages++;
        if (m->seq >= 0 && m->seq < r->nseq && r->sent_rel[m->seq] == UINT32_MAX) {
            int64_t rel = now - r->t0_wall;
            r->sent_rel[m->seq] = rel < 0 ? 0 : (uint32_t)rel;
        }
    }
    b->n = 0;
    sd_buf_reset(&b->arena);
    r->sub_head = (r->sub_head + 1) % SD_RUN_INFLIGHT;
    r->sub_count--;
    if (e) sd_run_set_fatal(r, e, err);
    return e;
}

/* Record the staged messages in the ledger (its writer thread commits
 * them) and hand to Kafka the submitted batches the ledger has committed
 * since: rendering and SQLite overlap, and still no message reaches Kafka
 * before the ledger holds it. */
sd_err_t sd_run_submit(sd_run_t *r, char *err, size_t errlen) {
    sd_err_t e = SD_OK;
    if (r->nstage) {
        if (r->sub_count == SD_RUN_INFLIGHT && (e = sd_run_produce_oldest(r, err, errlen))) return e;
        int64_t now = sd_util_wall_ms();
        struct sd_run_subbatch_s *b = &r->sub[(r->sub_head + r->sub_count) % SD_RUN_INFLIGHT];
        b->ns = sd_util_xrealloc(b->ns, sizeof(int64_t) * (size_t)r->nstage);
        for (int i = 0; i < r->nstage && !e; i++) {
            sd_run_staged_t *m = &r->stage[i];
            sd_send_t s = {
                .seq = m->seq, .kind = m->kind, .disposition = m->disp,
                .detail = m->detail_off != (size_t)-1 ? r->arena.data + m->detail_off : NULL,
                .event_time_ms = m->event_time,
                .key = NULL, .step = r->step};
            char keybuf[256];
            if (m->keylen && m->keylen < sizeof(keybuf)) {
                memcpy(keybuf, r->arena.data + m->key_off, m->keylen);
                keybuf[m->keylen] = 0;
                s.key = keybuf;
            }
            e = sd_ledger_send(r->ledger, &s, now, &b->ns[i], err, errlen);
        }
        b->ticket = sd_ledger_submit(r->ledger);
        if (e) {
            r->nstage = 0;
            sd_buf_reset(&r->arena);
            sd_run_set_fatal(r, e, err);
            return e;
        }
        /* the staged batch moves into the ring; the slot's buffers are reused */
        struct sd_run_staged_s *st = b->stage;
        int cap = b->cap;
        sd_buf_t arena = b->arena;
        b->stage = r->stage;
        b->cap = r->capstage;
        b->n = r->nstage;
        b->arena = r->arena;
        r->stage = st;
        r->capstage = cap;
        r->nstage = 0;
        r->arena = arena;
        sd_buf_reset(&r->arena);
        r->sub_count++;
    }
    /* whatever the ledger has committed meanwhile goes to Kafka now */
    int64_t done = r->sub_count ? sd_ledger_done(r->ledger) : 0;
    while (!e && r->sub_count && r->sub[r->sub_head].ticket <= done) e = sd_run_produce_oldest(r, err, errlen);
    return e;
}

sd_err_t sd_run_flush(sd_run_t *r, char *err, size_t errlen) {
    sd_err_t e = sd_run_submit(r, err, errlen);
    while (!e && r->sub_count) e = sd_run_produce_oldest(r, err, errlen);
    return e;
}

sd_err_t sd_run_sink_rows(sd_run_t *r, sd_sink_t *s, int64_t *rows, char *err, size_t errlen) {
    (void)r;
    return sd_sink_count(s, 1, rows, err, errlen);
}

static sd_err_t sd_run_sup_events(sd_run_t *r, char *err, size_t errlen);
static sd_err_t sd_run_background(sd_run_t *r, char *err, size_t errlen);
static void sd_run_undo_due(sd_run_t *r, int all);

/* A batch began or committed in incarnation inc: record it, and keep the
 * newest incarnation's batch state. The one path for markers and Spark. */
static sd_err_t sd_run_batch_event(sd_run_t *r, sd_sup_ev_type_t type, int inc, int64_t id, int64_t rows,
                                   const char *offsets, int64_t t_ms, char *err, size_t errlen) {
    int64_t now = sd_util_mono_ms();
    sd_run_batches_t *b = &r->bs;
    b->last_event_mono = now;
    b->events++;
    if (inc == b->incarnation) {
        if (type == SD_SUP_EV_BEGIN) {
            b->begun = id;
            b->begun_rows = rows;
            b->begun_mono = now;
            b->begun_with_incarnation = 0;
            /* what the target held when the batch began: a kill reports how
             * many of the batch's rows were visible when it landed */
            b->begun_sink_rows = -1;
            if (r->target && r->sample_cost_ms <= 20 && sd_sink_count(r->target, 1, &b->begun_sink_rows, NULL, 0) != SD_OK)
                b->begun_sink_rows = -1;
        } else {
            if (b->begun == id && b->begun_rows != 0 && !b->begun_with_incarnation) {
                if (b->begun_rows > 0) {
                    b->ms_sum += (double)(now - b->begun_mono);
                    b->rows_sum += b->begun_rows;
                    b->ms_per_row = b->ms_sum / (double)b->rows_sum;
                }
                int k = b->nhist < 32 ? b->nhist++ : (int)(b->events % 32);
                b->hist_rows[k] = b->begun_rows;
                b->hist_ms[k] = now - b->begun_mono;
            }
            b->committed = id;
            b->committed_mono = now;
            b->commits++;
        }
    }
    if (type == SD_SUP_EV_COMMIT && offsets && r->consumed) {
        char *save = NULL, *list = sd_util_strdup(offsets);
        for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            int p;
            long long o;
            if (sscanf(tok, "%d:%lld", &p, &o) == 2 && p >= 0 && p < r->partitions) r->consumed[p] = o;
        }
        free(list);
        r->last_offsets_mono = now;
    }
    return sd_ledger_batch(r->ledger, inc, id, type == SD_SUP_EV_BEGIN ? "begin" : "commit", t_ms, rows,
                           type == SD_SUP_EV_COMMIT ? offsets : NULL, err, errlen);
}

/* Spark: a commit event for each batch committed since the last poll. */
static sd_err_t sd_run_spark_commits(sd_run_t *r, const sd_spark_state_t *st, char *err, size_t errlen) {
    sd_err_t e = SD_OK;
    while (!e && st->committed > r->spark_committed) {
        int64_t n = ++r->spark_committed;
        char *off = sd_spark_offsets_text(r->spark, n);
        e = sd_run_batch_event(r, SD_SUP_EV_COMMIT, r->bs.incarnation, n, sd_spark_batch_rows(r->spark, n), off,
                               n == st->committed && st->committed_mtime ? st->committed_mtime : sd_util_wall_ms(), err, errlen);
        free(off);
    }
    return e;
}

/* Spark: turn checkpoint changes into batch events for the newest incarnation. */
static sd_err_t sd_run_spark_poll(sd_run_t *r, char *err, size_t errlen) {
    if (!r->spark || !r->bs.incarnation) return SD_OK;
    sd_spark_state_t st;
    sd_spark_poll(r->spark, &st);
    sd_err_t e = SD_OK;
    if (r->spark_inc != r->bs.incarnation) {
        /* a new incarnation re-runs the uncommitted batch, if any */
        r->spark_inc = r->bs.incarnation;
        r->spark_planned = st.committed;
        r->spark_committed = st.committed;
    }
    if (r->sc->spark_realtime) {
        /* Real-time mode writes offsets/N when interval N ends, just before
         * commits/N: batch N runs from the commit of N-1 (or the start of the
         * incarnation) to its own commit. */
        e = sd_run_spark_commits(r, &st, err, errlen);
        if (!e && r->spark_planned < st.committed + 1) {
            int64_t t = st.committed_mtime > r->inc_started_wall ? st.committed_mtime : r->inc_started_wall;
            r->spark_planned = st.committed + 1;
            e = sd_run_batch_event(r, SD_SUP_EV_BEGIN, r->bs.incarnation, r->spark_planned, -1, NULL, t, err, errlen);
            r->bs.begun_with_incarnation = t == r->inc_started_wall;
        }
        return e;
    }
    while (!e && st.planned > r->spark_planned) {
        int64_t n = r->spark_planned + 1 > st.committed + 1 ? r->spark_planned + 1 : st.committed + 1;
        if (n > st.planned) n = st.planned;
        /* a batch planned by an earlier incarnation begins again now */
        int64_t t = n == st.planned && st.planned_mtime ? st.planned_mtime : sd_util_wall_ms();
        int rerun = t < r->inc_started_wall;
        if (rerun) t = r->inc_started_wall;
        e = sd_run_batch_event(r, SD_SUP_EV_BEGIN, r->bs.incarnation, n, sd_spark_batch_rows(r->spark, n), NULL, t, err, errlen);
        r->bs.begun_with_incarnation = rerun;
        r->spark_planned = n;
    }
    return e ? e : sd_run_spark_commits(r, &st, err, errlen);
}

int64_t sd_run_expected_batch_ms(const sd_run_t *r, int64_t rows) {
    const sd_run_batches_t *b = &r->bs;
    if (!b->nhist) return 0;
    if (rows <= 0) { /* size unknown (real-time intervals): the mean duration */
        int64_t sum = 0;
        for (int i = 0; i < b->nhist; i++) sum += b->hist_ms[i];
        return sum / b->nhist;
    }
    /* least squares of ms = a + b*rows; proportional when the rows never varied */
    double n = b->nhist, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < b->nhist; i++) {
        double x = (double)b->hist_rows[i], y = (double)b->hist_ms[i];
        sx += x; sy += y; sxx += x * x; sxy += x * y;
    }
    double den = n * sxx - sx * sx;
    double slope, icpt;
    if (b->nhist >= 2 && den > 1e-9) {
        slope = (n * sxy - sx * sy) / den;
        icpt = (sy - slope * sx) / n;
        if (slope < 0) { slope = 0; icpt = sy / n; }
        if (icpt < 0) { icpt = 0; slope = sxy / sxx; }
    } else {
        slope = sy / sx;
        icpt = 0;
    }
    return (int64_t)(icpt + slope * (double)rows);
}

sd_err_t sd_run_pump(sd_run_t *r, char *err, size_t errlen) {
    sd_err_t e = sd_run_background(r, err, errlen);
    if (!e && r->producer) e = sd_producer_poll(r->producer, 0, err, errlen);
    if (!e) e = sd_run_sup_events(r, err, errlen);
    if (e) sd_run_set_fatal(r, e, err);
    return e;
}

int sd_run_in_flight(sd_run_t *r) {
    sd_run_spark_poll(r, NULL, 0);
    return r->bs.begun > r->bs.committed;
}

/* Spark's own account of a batch (StreamingQueryProgress JSON). */
static sd_err_t sd_run_progress(sd_run_t *r, int inc, int64_t t_ms, const char *text, char *err, size_t errlen) {
    json_t *o = json_loads(text, 0, NULL);
    if (!o) return SD_OK;
    int64_t batch = json_integer_value(json_object_get(o, "batchId"));
    int64_t rows = json_integer_value(json_object_get(o, "numInputRows"));
    const char *name = json_string_value(json_object_get(o, "name"));
    int64_t dur = json_integer_value(json_object_get(json_object_get(o, "durationMs"), "triggerExecution"));
    int64_t dropped = 0;
    json_t *ops = json_object_get(o, "stateOperators");
    size_t i;
    json_t *op;
    json_array_foreach(ops, i, op) dropped += json_integer_value(json_object_get(op, "numRowsDroppedByWatermark"));
    sd_err_t e = sd_ledger_progress(r->ledger, inc, t_ms, name ? name : "", batch, rows, dropped, dur, text, err, errlen);
    json_decref(o);
    return e;
}

/* Record what the supervisor saw. */
static sd_err_t sd_run_sup_events(sd_run_t *r, char *err, size_t errlen) {
    if (!r->sup) return SD_OK;
    sd_sup_event_t ev;
    sd_err_t e = sd_run_spark_poll(r, err, errlen);
    while (!e && sd_sup_next_event(r->sup, &ev) == 0) {
        switch (ev.type) {
        case SD_SUP_EV_BEGIN:
        case SD_SUP_EV_COMMIT:
            e = sd_run_batch_event(r, ev.type, ev.incarnation, ev.batch, ev.rows, ev.text, ev.t_ms, err, errlen);
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

static sd_err_t sd_run_sample(sd_run_t *r, int force, char *err, size_t errlen) {
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
    int64_t cost = sd_util_mono_ms() - t0;
    r->sample_cost_ms = cost;
    int64_t interval = 200;
    if (cost * 10 > interval) interval = cost * 10;
    r->next_sample_mono = sd_util_mono_ms() + interval;
    return SD_OK;
}

sd_err_t sd_run_tick(sd_run_t *r, int64_t wait_ms, char *err, size_t errlen) {
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

/* Warn as soon as the broker's low watermark passes data the run sent:
 * those events can no longer be read by a pipeline that is behind or that
 * restarts from an older position. */
static void sd_run_check_trim(sd_run_t *r) {
    if (!r->broker || !r->partitions) return;
    if (!r->trim_warned) r->trim_warned = sd_util_xcalloc((size_t)r->partitions, sizeof(int64_t));
    for (int p = 0; p < r->partitions; p++) {
        int64_t lo = 0, hi = 0;
        if (sd_broker_watermarks(r->broker, r->topic, p, &lo, &hi, NULL, 0) || lo <= 0 || r->trim_warned[p]) continue;
        r->trim_warned[p] = lo;
        char w[512];
        snprintf(w, sizeof(w), "%s broker deleted the first %lld records of %s partition %d (of %lld sent): a pipeline that has not "
                 "read them, or restarts from before offset %lld, cannot; conclusions about them are withheld",
                 sd_broker_is_embedded(r->broker) ? "the embedded" : "the", (long long)lo, r->topic, p, (long long)hi, (long long)lo);
        sd_ledger_warning(r->ledger, "trimming", w, NULL, 0);
        sd_run_say(r, "warning: %s", w);
    }
}

sd_err_t sd_run_drain(sd_run_t *r, int64_t timeout_ms, char *err, size_t errlen) {
    sd_err_t e = sd_run_flush(r, err, errlen);
    if (e) return e;
    int64_t deadline = sd_util_mono_ms() + timeout_ms;
    for (;;) {
        sd_producer_stats_t st;
        sd_producer_stats(r->producer, &st);
        if (st.inflight <= 0) {
            sd_run_check_trim(r);
            return SD_OK;
        }
        if (sd_util_mono_ms() > deadline)
            return sd_err_set(err, errlen, SD_ERR_BROKER, "broker %s: %lld messages not acknowledged after %.1fs%s%s",
                              sd_broker_bootstrap(r->broker), (long long)st.inflight, (double)timeout_ms / 1000.0,
                              sd_producer_last_error(r->producer)[0] ? ": " : "", sd_producer_last_error(r->producer));
        sd_producer_poll(r->producer, 20, NULL, 0);
        if ((e = sd_run_tick(r, 0, err, errlen))) return e;
    }
}

/* ---- pipeline start ---- */

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
    /* a new incarnation: its batches start from scratch */
    r->bs.incarnation = inc;
    r->bs.begun = r->bs.committed = -1;
    r->bs.begun_rows = -1;
    r->bs.commits = 0;
    char *lo = sd_sup_log_path(r->sup, inc, 0), *le = sd_sup_log_path(r->sup, inc, 1);
    sd_sup_state_t st;
    sd_sup_state(r->sup, &st);
    char *cmd = sd_buf_steal(&b);
    sd_ledger_incarnation_begin(r->ledger, inc, (int)st.pid, cmd, lo, le, sd_util_wall_ms(), NULL, 0);
    free(cmd);
    free(lo);
    free(le);
    if (e) return e;
    r->pipeline_wanted = 1;
    int64_t start = sd_util_mono_ms();
    int64_t deadline = start + timeout_ms;
    /* pipelines that report progress (markers, or a Spark query's SD-READY)
     * are ready when they say so; others when they are still up after 2 s */
    int markers = r->sc->progress == SD_PROGRESS_MARKERS || r->sc->progress == SD_PROGRESS_SPARK;
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
        /* a Spark checkpoint shows batches of earlier incarnations: only the
         * query itself (SD-READY) says this one is up */
        int marker_seen = r->sc->progress == SD_PROGRESS_MARKERS && (r->bs.begun >= 0 || r->bs.committed >= 0);
        if (markers && (st.ready || marker_seen)) {
            snprintf(detail, dlen, "incarnation %d (pid %d) ready after %.2fs", inc, (int)st.pid,
                     (double)(sd_util_mono_ms() - start) / 1000.0);
            return SD_OK;
        }
        if (!markers && sd_util_mono_ms() - start >= grace) {
            snprintf(detail, dlen, "incarnation %d (pid %d) running after %.1fs", inc, (int)st.pid, (double)grace / 1000.0);
            return SD_OK;
        }
        if (sd_util_mono_ms() >= deadline) {
            snprintf(detail, dlen, "incarnation %d (pid %d) running, but printed no SD-READY within %.0fs", inc, (int)st.pid,
                     (double)timeout_ms / 1000.0);
            sd_ledger_warning(r->ledger, "no-ready-marker", detail, NULL, 0);
            return SD_OK;
        }
        if ((e = sd_run_tick(r, 20, err, errlen))) return e;
    }
}

/* ---- steps the runner handles itself ---- */

/* Make and stage one new valid event. */
static sd_err_t sd_run_one_event(sd_run_t *r, char *err, size_t errlen) {
    int64_t seq = sd_run_new_seq(r, SD_KIND_VALID, SD_DISP_TARGET);
    int64_t t;
    sd_err_t e = sd_events_render(r->events, seq, INT64_MIN, &r->payload, &r->key, &t, err, errlen);
    if (e) return e;
    sd_run_stage(r, seq, "valid", "target", NULL, t, r->key.data, r->key.len, r->payload.data, r->payload.len, 0);
    if (t != INT64_MIN && t > r->max_event_time) r->max_event_time = t;
    r->valid_sent++;
    return SD_OK;
}

/* Background production (`produce N rate=R/s background`): every tick sends
 * what is due, so the next steps (a kill, a pause) run while events flow. */
static sd_err_t sd_run_background(sd_run_t *r, char *err, size_t errlen) {
    if (!r->bg_active || r->bg_busy) return SD_OK;
    r->bg_busy = 1;
    sd_err_t e = SD_OK;
    int64_t now = sd_util_mono_ms();
    while (!e && r->bg_done < r->bg_total) {
        int64_t due = r->bg_t0 + (int64_t)((double)r->bg_done * 1000.0 / r->bg_rate);
        if (due > now) break;
        e = sd_run_one_event(r, err, errlen);
        r->bg_done++;
        if (!e && r->nstage >= 1000) e = sd_run_flush(r, err, errlen);
    }
    if (!e) e = sd_run_flush(r, err, errlen);
    if (!e && r->bg_done >= r->bg_total) {
        r->bg_active = 0;
        r->last_data_step_mono = sd_util_mono_ms();
        char w[160];
        snprintf(w, sizeof(w), "background production of %lld events finished", (long long)r->bg_total);
        sd_ledger_warning(r->ledger, "background", w, NULL, 0);
    }
    r->bg_busy = 0;
    if (e) sd_run_set_fatal(r, e, err);
    return e;
}

/* Wait until background production is done (before a step that needs all
 * events sent: another produce, quiescence, reconciliation). */
static sd_err_t sd_run_background_wait(sd_run_t *r, char *err, size_t errlen) {
    while (r->bg_active) {
        int64_t left = r->bg_t0 + (int64_t)((double)r->bg_total * 1000.0 / r->bg_rate) - sd_util_mono_ms();
        sd_err_t e = sd_run_tick(r, left > 50 ? 50 : left > 0 ? left : 1, err, errlen);
        if (e) return e;
    }
    return SD_OK;
}

sd_err_t sd_run_pace(sd_run_t *r, int64_t t0, int64_t i, double rate, char *err, size_t errlen) {
    if (rate <= 0) return SD_OK;
    int64_t due = t0 + (int64_t)((double)i * 1000.0 / rate);
    if (sd_util_mono_ms() >= due) return SD_OK;
    sd_err_t e = sd_run_flush(r, err, errlen);
    while (!e && sd_util_mono_ms() < due) e = sd_run_tick(r, due - sd_util_mono_ms(), err, errlen);
    return e;
}

static sd_err_t sd_run_produce(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_err_t e;
    if ((e = sd_run_background_wait(r, err, errlen))) return e;
    int64_t avail = sd_events_available(r->events);
    if (r->nseq + st->count > avail)
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: produce %lld: the events log has %lld events and %lld are used already",
                          r->sc->path, st->line, (long long)st->count, (long long)avail, (long long)r->nseq);
    int64_t t0 = sd_util_mono_ms();
    int64_t first = r->nseq;
    char a[64], b[64];
    if (st->background) {
        r->bg_active = 1;
        r->bg_total = st->count;
        r->bg_done = 0;
        r->bg_rate = st->rate;
        r->bg_t0 = t0;
        sd_events_id(r->events, first, a);
        sd_events_id(r->events, first + st->count - 1, b);
        snprintf(detail, dlen, "sending %lld events %s..%s in the background at %.0f/s (%.1fs)", (long long)st->count, a, b,
                 st->rate, (double)st->count / st->rate);
        return sd_run_background(r, err, errlen);
    }
    for (int64_t i = 0; i < st->count; i++) {
        if ((e = sd_run_pace(r, t0, i, st->rate, err, errlen))) return e;
        if ((e = sd_run_one_event(r, err, errlen))) return e;
        if (r->nstage >= 1000) {
            if ((e = sd_run_submit(r, err, errlen))) return e;
            if ((e = sd_run_tick(r, 0, err, errlen))) return e;
        }
    }
    if ((e = sd_run_drain(r, sd_util_scaled_ms(st->timeout_ms), err, errlen))) return e;
    double secs = (double)(sd_util_mono_ms() - t0) / 1000.0;
    sd_events_id(r->events, first, a);
    sd_events_id(r->events, r->nseq - 1, b);
    snprintf(detail, dlen, "sent %lld events %s..%s in %.2fs (%.0f/s), all acknowledged", (long long)st->count, a, b, secs,
             secs > 0 ? (double)st->count / secs : 0.0);
    r->last_data_step_mono = sd_util_mono_ms();
    return SD_OK;
}

static sd_err_t sd_run_await_sink(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
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

/* Has the pipeline consumed every source partition to its end? -1 unknown. */
static int sd_run_caught_up(sd_run_t *r, char *why, size_t wlen) {
    if (!r->last_offsets_mono || !r->consumed) return -1;
    sd_sup_state_t st;
    sd_sup_state(r->sup, &st);
    if (!st.running) return -1;
    for (int p = 0; p < r->partitions; p++) {
        int64_t lo, hi;
        if (sd_broker_watermarks(r->broker, r->topic, p, &lo, &hi, NULL, 0)) return -1;
        if (r->consumed[p] < hi) {
            snprintf(why, wlen, "the pipeline's last committed batch ends at offset %lld of partition %d, which holds %lld",
                     (long long)(r->consumed[p] < 0 ? 0 : r->consumed[p]), p, (long long)hi);
            return 0;
        }
    }
    return 1;
}

static sd_err_t sd_run_await_quiescent(sd_run_t *r, int64_t quiet_ms, int64_t timeout_ms, char *detail, size_t dlen,
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
    for (;;) {
        int64_t now = sd_util_mono_ms();
        sd_sup_state_t st = {0};
        if (r->sup) sd_sup_state(r->sup, &st);
        int64_t since = r->last_change_mono;
        if (r->bs.last_event_mono > since) since = r->bs.last_event_mono;
        if (t0 > since) since = t0;
        int quiet = now - since >= quiet_ms;
        if (quiet && now >= next_cu) {
            cu = sd_run_caught_up(r, why, sizeof(why));
            next_cu = now + 250;
        }
        if (quiet && cu != 0) {
            snprintf(detail, dlen, "quiescent after %.2fs: sinks unchanged for %.1fs%s", (double)(now - t0) / 1000.0,
                     (double)quiet_ms / 1000.0, cu == 1 ? ", source fully consumed" : "");
            r->last_quiescent_mono = sd_util_mono_ms();
            return SD_OK;
        }
        if (now > deadline) {
            if (!quiet)
                snprintf(why, sizeof(why), "the sinks or batch markers kept changing (last change %.1fs ago)",
                         (double)(now - since) / 1000.0);
            snprintf(detail, dlen, "no quiescence within %.0fs: %s", (double)(now - t0) / 1000.0, why);
            r->quiescence_failed = 1;
            return sd_err_set(err, errlen, SD_ERR_QUIESCENCE, "%s", detail);
        }
        /* sample at least four times per quiet window */
        int64_t step = quiet_ms / 4 < 100 ? quiet_ms / 4 : 100;
        if (step < 10) step = 10;
        if (r->next_sample_mono > now + quiet_ms / 4) r->next_sample_mono = now + quiet_ms / 4;
        if ((e = sd_run_tick(r, step, err, errlen))) return e;
    }
}

static const sd_injector_t *const sd_run_injectors[] = {&sd_injector_process, &sd_injector_data, &sd_injector_clock,
                                                        &sd_injector_storage, &sd_injector_network, NULL};

void sd_run_schedule_undo(sd_run_t *r, int64_t due_mono, void (*fn)(sd_run_t *r, int arg), int arg) {
    if (r->nundo >= (int)(sizeof(r->undo) / sizeof(r->undo[0]))) {
        fn(r, arg); /* no room: undo now rather than never */
        return;
    }
    r->undo[r->nundo].due_mono = due_mono;
    r->undo[r->nundo].fn = fn;
    r->undo[r->nundo].arg = arg;
    r->nundo++;
}

/* Undo the faults whose time is up (for=). */
static void sd_run_undo_due(sd_run_t *r, int all) {
    int64_t now = sd_util_mono_ms();
    for (int i = 0; i < r->nundo;) {
        if (all || r->undo[i].due_mono <= now) {
            struct sd_run_undo_s u = r->undo[i];
            r->undo[i] = r->undo[--r->nundo];
            u.fn(r, u.arg);
        } else {
            i++;
        }
    }
}

int sd_run_heal(sd_run_t *r, sd_buf_t *done) {
    size_t before = done->len;
    if (r->nundo) {
        int n = r->nundo;
        sd_run_undo_due(r, 1);
        sd_buf_printf(done, "%sended %d timed fault%s early", done->len ? "; " : "", n, n == 1 ? "" : "s");
    }
    for (int i = 0; sd_run_injectors[i]; i++)
        if (sd_run_injectors[i]->heal) sd_run_injectors[i]->heal(r, done);
    return done->len > before;
}

/* End every fault still on and, if there was one, record the heal as a fault
 * of the current step. 1 when something was healed (said in *done). */
static int sd_run_heal_recorded(sd_run_t *r, sd_buf_t *done) {
    if (!sd_run_heal(r, done)) return 0;
    sd_ledger_fault(r->ledger, r->step, "heal", done->data, 0, NULL, NULL, 0);
    return 1;
}

static sd_err_t sd_run_step(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    for (int i = 0; sd_run_injectors[i]; i++)
        if (sd_run_injectors[i]->handles(st->kind)) return sd_run_injectors[i]->run(r, st, detail, dlen, err, errlen);
    switch (st->kind) {
    case SD_STEP_PRODUCE:
        return sd_run_produce(r, st, detail, dlen, err, errlen);
    case SD_STEP_AWAIT_SINK:
        return sd_run_await_sink(r, st, detail, dlen, err, errlen);
    case SD_STEP_AWAIT_QUIESCENT:
        return sd_run_await_quiescent(r, st->quiet_ms, st->timeout_ms, detail, dlen, err, errlen);
    case SD_STEP_AWAIT_BATCHES: {
        int64_t t0 = sd_util_mono_ms(), deadline = t0 + sd_util_scaled_ms(st->timeout_ms);
        sd_err_t e;
        for (;;) { /* each tick polls Kafka, production and the pipeline's markers */
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
    case SD_STEP_SLEEP: {
        int64_t until = sd_util_mono_ms() + st->timeout_ms;
        sd_err_t e;
        while (sd_util_mono_ms() < until)
            if ((e = sd_run_tick(r, until - sd_util_mono_ms(), err, errlen))) return e;
        snprintf(detail, dlen, "slept %.2fs", (double)st->timeout_ms / 1000.0);
        return SD_OK;
    }
    case SD_STEP_EXPECT:
        snprintf(detail, dlen, "checked at reconciliation");
        return SD_OK;
    case SD_STEP_HEAL: {
        sd_buf_t done;
        sd_buf_init(&done);
        snprintf(detail, dlen, "%s", sd_run_heal_recorded(r, &done) ? done.data : "no fault was on");
        sd_buf_free(&done);
        r->last_data_step_mono = sd_util_mono_ms();
        return SD_OK;
    }
    default:
        return sd_err_set(err, errlen, SD_ERR_INTERNAL, "step kind %d has no handler", (int)st->kind);
    }
}

/* ---- reconciliation ---- */

static void sd_run_fmt_id(void *opaque, int64_t seq, char *out, size_t outlen) {
    sd_run_t *r = opaque;
    char id[64];
    sd_events_id(r->events, seq, id);
    snprintf(out, outlen, "%s", id);
}

static int sd_cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Mark ids whose every message failed, and ids in trimmed offsets. */
static sd_err_t sd_run_ledger_exceptions(sd_run_t *r, uint8_t **trimmed_out, char *err, size_t errlen) {
    sqlite3 *db = sd_ledger_db(r->ledger);
    sqlite3_stmt *st;
    *trimmed_out = NULL;
    /* failed or never acknowledged originals: rare, found through the error column */
    if (sqlite3_prepare_v2(db, "SELECT seq FROM ledger WHERE kind<>'duplicate' AND (error IS NOT NULL OR acked_ms IS NULL)",
                           -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            int64_t s = sqlite3_column_int64(st, 0);
            if (s >= 0 && s < r->nseq) r->disp[s] = SD_RECON_UNSENT;
        }
        sqlite3_finalize(st);
    }
    /* the broker deleted data below its low watermark: those events cannot
     * be re-read by a pipeline that restarts from an older position */
    int any = 0;
    int64_t *lows = sd_util_xcalloc((size_t)r->partitions, sizeof(int64_t));
    for (int p = 0; p < r->partitions; p++) {
        int64_t lo = 0, hi = 0;
        if (sd_broker_watermarks(r->broker, r->topic, p, &lo, &hi, NULL, 0) == SD_OK) {
            lows[p] = lo;
            sd_ledger_watermark(r->ledger, sd_util_wall_ms(), p, lo, hi, NULL, 0);
            if (lo > 0) any = 1;
        }
    }
    if (any) {
        uint8_t *trimmed = sd_util_xcalloc((size_t)(r->nseq ? r->nseq : 1), 1);
        int64_t n = 0;
        if (sqlite3_prepare_v2(db, "SELECT seq, partition, offset FROM ledger WHERE offset IS NOT NULL", -1, &st, NULL) == SQLITE_OK) {
            while (sqlite3_step(st) == SQLITE_ROW) {
                int64_t s = sqlite3_column_int64(st, 0);
                int p = sqlite3_column_int(st, 1);
                int64_t o = sqlite3_column_int64(st, 2);
                if (p >= 0 && p < r->partitions && o < lows[p] && s >= 0 && s < r->nseq && !trimmed[s]) {
                    trimmed[s] = 1;
                    n++;
                }
            }
            sqlite3_finalize(st);
        }
        char w[512];
        snprintf(w, sizeof(w), "the broker deleted %lld of the run's events from topic %s (low watermarks above the first "
                 "offsets sent%s); a loss among them cannot be attributed to the pipeline",
                 (long long)n, r->topic, sd_broker_is_embedded(r->broker) ? ": the embedded broker keeps about 5 MB per partition" : "");
        sd_ledger_warning(r->ledger, "trimmed", w, NULL, 0);
        sd_run_say(r, "warning: %s", w);
        *trimmed_out = trimmed;
    }
    free(lows);
    (void)err; (void)errlen;
    return SD_OK;
}

static sd_err_t sd_run_store_counts(sd_run_t *r, const char *prefix, const sd_recon_counts_t *c, char *err, size_t errlen) {
    sqlite3 *db = sd_ledger_db(r->ledger);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO count(name,value) VALUES(?,?)", -1, &st, NULL) != SQLITE_OK)
        return sd_err_set(err, errlen, SD_ERR_IO, "ledger: store counts: %s", sqlite3_errmsg(db));
    for (int i = 0; sd_scenario_count_names[i]; i++) {
        char name[128];
        snprintf(name, sizeof(name), "%s%s", prefix, sd_scenario_count_names[i]);
        sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, sd_recon_count_get(c, sd_scenario_count_names[i], NULL));
        sqlite3_step(st);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return SD_OK;
}

/* Batch windows of every incarnation, to say which batch wrote a row whose
 * sink knows its write time (a Kafka record's timestamp, for instance). */
typedef struct {
    int inc;
    int64_t batch, begin_ms, end_ms;
} sd_window_t;

typedef struct {
    sd_window_t *w;
    int n;
} sd_windows_t;

static void sd_run_load_windows(sd_run_t *r, sd_windows_t *ws) {
    memset(ws, 0, sizeof(*ws));
    sqlite3_stmt *st;
    const char *sql = "SELECT b.incarnation, b.id, b.begin_ms, coalesce(b.commit_ms, i.ended_ms, 9223372036854775807)"
                      " FROM batch b LEFT JOIN incarnation i ON i.n = b.incarnation WHERE b.begin_ms IS NOT NULL ORDER BY b.begin_ms";
    if (sqlite3_prepare_v2(sd_ledger_db(r->ledger), sql, -1, &st, NULL) != SQLITE_OK) return;
    while (sqlite3_step(st) == SQLITE_ROW) {
        ws->w = sd_util_xrealloc(ws->w, sizeof(*ws->w) * (size_t)(ws->n + 1));
        sd_window_t *w = &ws->w[ws->n++];
        w->inc = sqlite3_column_int(st, 0);
        w->batch = sqlite3_column_int64(st, 1);
        w->begin_ms = sqlite3_column_int64(st, 2);
        w->end_ms = sqlite3_column_int64(st, 3);
    }
    sqlite3_finalize(st);
}

static void sd_run_fmt_writer(void *opaque, const char *label, size_t len, int64_t t_ms, sd_buf_t *out) {
    const sd_windows_t *ws = opaque;
    if (len) sd_buf_append(out, label, len);
    else sd_buf_putc(out, '?');
    if (t_ms == INT64_MIN || memmem(label, len, "batch", 5)) return;
    const sd_window_t *best = NULL;
    for (int i = 0; i < ws->n; i++)
        if (ws->w[i].begin_ms <= t_ms + 5 && t_ms <= ws->w[i].end_ms + 5 && (!best || ws->w[i].begin_ms >= best->begin_ms)) best = &ws->w[i];
    if (best) sd_buf_printf(out, " (incarnation %d, batch %lld)", best->inc, (long long)best->batch);
}

static sd_err_t sd_run_store_anomalies(sd_run_t *r, sd_sink_t *sink, const sd_recon_result_t *res,
                                       const sd_observe_t *obs, char *err, size_t errlen) {
    sqlite3 *db = sd_ledger_db(r->ledger);
    /* writers of every id that has rows in this sink and is an anomaly */
    int64_t nwant = 0;
    for (int b = 0; b < SD_B__COUNT; b++)
        if (b == SD_B_DUPLICATED || b == SD_B_LATE_LEAKED || b == SD_B_MALFORMED_LEAKED || b == SD_B_VALID_QUARANTINED)
            nwant += res->lists[b].n;
    int64_t *want = sd_util_xmalloc(sizeof(int64_t) * (size_t)(nwant ? nwant : 1));
    int64_t k = 0;
    for (int b = 0; b < SD_B__COUNT; b++)
        if (b == SD_B_DUPLICATED || b == SD_B_LATE_LEAKED || b == SD_B_MALFORMED_LEAKED)
            for (int64_t i = 0; i < res->lists[b].n; i++) want[k++] = res->lists[b].seq[i];
    nwant = k;
    qsort(want, (size_t)nwant, sizeof(int64_t), sd_cmp_i64);
    char **writers = sd_util_xcalloc((size_t)(nwant ? nwant : 1), sizeof(char *));
    sd_windows_t ws;
    sd_run_load_windows(r, &ws);
    sd_err_t e = sd_observe_writers(sink, r->tag, want, nwant, writers, sd_run_fmt_writer, &ws, err, errlen);
    free(ws.w);
    if (e) {
        for (int64_t i = 0; i < nwant; i++) free(writers[i]);
        free(writers);
        free(want);
        return e;
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO anomaly(sink,seq,bucket,copies,writers) VALUES(?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK) {
        e = sd_err_set(err, errlen, SD_ERR_IO, "ledger: store anomalies: %s", sqlite3_errmsg(db));
    } else {
        for (int b = 0; b < SD_B__COUNT; b++) {
            if (b == SD_B_DELIVERED || b == SD_B_QUARANTINED) continue;
            const sd_recon_list_t *l = &res->lists[b];
            for (int64_t i = 0; i < l->n; i++) {
                const char *w = NULL;
                int64_t *hit = bsearch(&l->seq[i], want, (size_t)nwant, sizeof(int64_t), sd_cmp_i64);
                if (hit) w = writers[hit - want];
                sqlite3_bind_text(st, 1, sink->name, -1, SQLITE_TRANSIENT);
                sqlite3_bind_int64(st, 2, l->seq[i]);
                sqlite3_bind_text(st, 3, sd_bucket_name((sd_bucket_t)b), -1, SQLITE_STATIC);
                sqlite3_bind_int64(st, 4, l->copies[i]);
                if (w) sqlite3_bind_text(st, 5, w, -1, SQLITE_TRANSIENT);
                else sqlite3_bind_null(st, 5);
                sqlite3_step(st);
                sqlite3_reset(st);
            }
        }
        sqlite3_finalize(st);
    }
    if (!e && sqlite3_prepare_v2(db, "INSERT INTO unexpected(sink,raw_id,copies,writers) VALUES(?,?,?,?)", -1, &st, NULL) == SQLITE_OK) {
        for (int64_t i = 0; i < obs->n_unexpected; i++) {
            sqlite3_bind_text(st, 1, sink->name, -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(st, 2, obs->unexpected[i].id, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(st, 3, obs->unexpected[i].copies);
            sqlite3_bind_text(st, 4, obs->unexpected[i].writers, -1, SQLITE_TRANSIENT);
            sqlite3_step(st);
            sqlite3_reset(st);
        }
        sqlite3_finalize(st);
    }
    for (int64_t i = 0; i < nwant; i++) free(writers[i]);
    free(writers);
    free(want);
    return e;
}

static int64_t sd_run_ledger_count(sd_run_t *r, const char *sql) {
    sqlite3_stmt *st;
    int64_t v = 0;
    if (sqlite3_prepare_v2(sd_ledger_db(r->ledger), sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return v;
}

/* The pipeline's own account against the ledger. Each progress report
 * (Spark's StreamingQueryProgress) names the source offsets its batch
 * read; the ledger knows which messages the harness put at those offsets.
 * Per reported batch (the last report of each batch id: a batch re-run
 * after a kill reports once), Spark's numInputRows must equal the
 * messages the ledger has in that range, and the rows its watermark
 * dropped are put beside the late events in it. Messages no reported
 * batch covers are counted (a kill can take a batch's report with it).
 * Disagreements are warnings; the verdict rests on the sinks. */
static void sd_run_compare_account(sd_run_t *r, int64_t produced) {
    sqlite3 *db = sd_ledger_db(r->ledger);
    if (sd_run_ledger_count(r, "SELECT count(*) FROM progress") == 0) return;
    /* partition and offset live in table ack (the view ledger cannot be indexed) */
    sqlite3_exec(db, "CREATE INDEX IF NOT EXISTS ack_pos ON ack(partition, offset);"
                     "CREATE TABLE IF NOT EXISTS account(query TEXT, batch INTEGER, incarnation INTEGER, spark_rows INTEGER,"
                     " ledger_rows INTEGER, spark_dropped INTEGER, ledger_late INTEGER, agree INTEGER)", NULL, NULL, NULL);
    sqlite3_stmt *st, *cnt, *ins;
    const char *sql = "SELECT query, batch, incarnation, input_rows, dropped_by_watermark, json FROM ("
                      " SELECT *, row_number() OVER (PARTITION BY query, batch ORDER BY t_ms DESC) AS k FROM progress WHERE batch >= 0)"
                      " WHERE k = 1 ORDER BY query, batch";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return;
    sqlite3_prepare_v2(db, "SELECT count(*), sum(kind='late') FROM ledger WHERE partition=? AND offset>=? AND offset<?", -1, &cnt, NULL);
    sqlite3_prepare_v2(db, "INSERT INTO account VALUES(?,?,?,?,?,?,?,?)", -1, &ins, NULL);
    char cur[128] = "";
    int64_t covered = 0, batches = 0, bad = 0, spark_rows = 0, dropped = 0, late = 0;
    for (int more = 1; more;) {
        more = sqlite3_step(st) == SQLITE_ROW;
        const char *q = more ? (const char *)sqlite3_column_text(st, 0) : "";
        if (!q) q = "";
        if ((!more || strcmp(q, cur)) && batches) {
            char w[768];
            snprintf(w, sizeof(w), "query %s: %lld batches reported, %lld input rows; the ledger has %lld messages in their offsets "
                     "(%lld batches disagree); %lld of the %lld messages sent lie in no reported batch; %lld rows dropped by "
                     "the watermark, %lld late events sent in those offsets",
                     cur[0] ? cur : "(unnamed)", (long long)batches, (long long)spark_rows, (long long)covered, (long long)bad,
                     (long long)(produced - covered), (long long)produced, (long long)dropped, (long long)late);
            sd_ledger_warning(r->ledger, bad ? "account-disagrees" : "account", w, NULL, 0);
            if (bad) sd_run_say(r, "warning: %s", w);
            covered = batches = bad = spark_rows = dropped = late = 0;
        }
        if (!more) break;
        snprintf(cur, sizeof(cur), "%s", q);
        int64_t batch = sqlite3_column_int64(st, 1), srows = sqlite3_column_int64(st, 3), sdrop = sqlite3_column_int64(st, 4);
        int inc = sqlite3_column_int(st, 2);
        json_t *o = json_loads((const char *)sqlite3_column_text(st, 5), 0, NULL);
        int64_t lrows = 0, llate = 0;
        int known = 0;
        size_t i;
        json_t *src;
        json_array_foreach(json_object_get(o, "sources"), i, src) {
            json_t *so = json_object_get(src, "startOffset"), *eo = json_object_get(src, "endOffset");
            if (json_is_string(so)) { json_t *t = json_loads(json_string_value(so), 0, NULL); so = t; } else json_incref(so);
            if (json_is_string(eo)) { json_t *t = json_loads(json_string_value(eo), 0, NULL); eo = t; } else json_incref(eo);
            json_t *sp = json_object_get(so, r->topic), *ep = json_object_get(eo, r->topic);
            if (json_is_object(ep)) {
                known = 1;
                const char *k;
                json_t *v;
                json_object_foreach(ep, k, v) {
                    int64_t end = json_integer_value(v);
                    int64_t begin = json_is_object(sp) && json_object_get(sp, k) ? json_integer_value(json_object_get(sp, k)) : 0;
                    if (cnt) {
                        sqlite3_bind_int(cnt, 1, atoi(k));
                        sqlite3_bind_int64(cnt, 2, begin);
                        sqlite3_bind_int64(cnt, 3, end);
                        if (sqlite3_step(cnt) == SQLITE_ROW) {
                            lrows += sqlite3_column_int64(cnt, 0);
                            llate += sqlite3_column_int64(cnt, 1);
                        }
                        sqlite3_reset(cnt);
                    }
                }
            }
            json_decref(so);
            json_decref(eo);
        }
        json_decref(o);
        if (!known) continue;
        int agree = srows == lrows;
        batches++;
        covered += lrows;
        spark_rows += srows;
        dropped += sdrop;
        late += llate;
        if (!agree) bad++;
        if (ins) {
            sqlite3_bind_text(ins, 1, cur, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(ins, 2, batch);
            sqlite3_bind_int(ins, 3, inc);
            sqlite3_bind_int64(ins, 4, srows);
            sqlite3_bind_int64(ins, 5, lrows);
            sqlite3_bind_int64(ins, 6, sdrop);
            sqlite3_bind_int64(ins, 7, llate);
            sqlite3_bind_int(ins, 8, agree);
            sqlite3_step(ins);
            sqlite3_reset(ins);
        }
    }
    if (cnt) sqlite3_finalize(cnt);
    if (ins) sqlite3_finalize(ins);
    sqlite3_finalize(st);
}

/* End-to-end latency of the ids expected in the target: from the moment the
 * harness handed the message to Kafka to the first write time the sink
 * reports. Quantiles go into the counts; a strided sample of ids (at most
 * 20,000) into the table `latency` for the charts. The latencies are
 * computed in place in obs->first_t (its last use), so a ten-million-event
 * run needs no second array of them. */
static void sd_run_latency(sd_run_t *r, sd_observe_t *obs, const char *sink, sd_recon_counts_t *c) {
    c->latency_p50_ms = c->latency_p95_ms = c->latency_p99_ms = c->latency_max_ms = -1;
    c->latency_samples = 0;
    if (!obs->first_t) return;
    uint32_t *ft = obs->first_t;
    sqlite3 *db = sd_ledger_db(r->ledger);
    sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS latency(sink TEXT, seq INTEGER, sent_ms INTEGER, seen_ms INTEGER)", NULL, NULL, NULL);
    sqlite3_stmt *ins;
    if (sqlite3_prepare_v2(db, "INSERT INTO latency VALUES(?,?,?,?)", -1, &ins, NULL) == SQLITE_OK) {
        int64_t stride = r->nseq / 20000 + 1;
        for (int64_t s = 0; s < r->nseq; s += stride) {
            if (r->disp[s] != SD_DISP_TARGET || ft[s] == UINT32_MAX || r->sent_rel[s] == UINT32_MAX) continue;
            sqlite3_bind_text(ins, 1, sink, -1, SQLITE_STATIC);
            sqlite3_bind_int64(ins, 2, s);
            sqlite3_bind_int64(ins, 3, r->t0_wall + r->sent_rel[s]);
            sqlite3_bind_int64(ins, 4, r->t0_wall + ft[s]);
            sqlite3_step(ins);
            sqlite3_reset(ins);
        }
        sqlite3_finalize(ins);
    }
    int64_t n = 0;
    for (int64_t s = 0; s < r->nseq; s++) { /* n <= s: ft[s] is read before ft[n] is written */
        if (r->disp[s] != SD_DISP_TARGET || ft[s] == UINT32_MAX || r->sent_rel[s] == UINT32_MAX) continue;
        ft[n++] = ft[s] > r->sent_rel[s] ? ft[s] - r->sent_rel[s] : 0;
    }
    if (n) {
        /* each quantile is selected among what lies above the previous one */
        int64_t k50 = (n - 1) * 50 / 100, k95 = (n - 1) * 95 / 100, k99 = (n - 1) * 99 / 100;
        c->latency_p50_ms = sd_util_select_u32(ft, n, k50);
        c->latency_p95_ms = sd_util_select_u32(ft + k50, n - k50, k95 - k50);
        c->latency_p99_ms = sd_util_select_u32(ft + k95, n - k95, k99 - k95);
        uint32_t mx = ft[k99];
        for (int64_t i = k99 + 1; i < n; i++)
            if (ft[i] > mx) mx = ft[i];
        c->latency_max_ms = mx;
        c->latency_samples = n;
    }
    free(obs->first_t);
    obs->first_t = NULL;
}

/* Reconcile every target sink. Sets *failed to the number of failed checks. */
static sd_err_t sd_run_reconcile(sd_run_t *r, int *failed, int *unjudgeable, char *err, size_t errlen) {
    *failed = 0;
    *unjudgeable = 0;
    sd_err_t e = sd_ledger_commit(r->ledger, err, errlen);
    if (e) return e;
    uint8_t *trimmed = NULL;
    sd_run_ledger_exceptions(r, &trimmed, err, errlen);
    sd_recon_ledger_t L = {.nseq = r->nseq, .disp = r->disp, .kind = r->kind, .trimmed = trimmed,
                           .expected = r->sc->keep_duplicates ? r->sends : NULL};
    sd_observe_t qobs;
    memset(&qobs, 0, sizeof(qobs));
    int have_q = 0;
    if (r->quarantine) {
        int64_t t0 = sd_util_mono_ms();
        if ((e = sd_observe_sink(r->quarantine, r->tag, r->nseq, r->t0_wall, &qobs, err, errlen))) goto out;
        have_q = 1;
        sd_run_say(r, "read quarantine sink %s: %lld rows in %.2fs", r->quarantine->name, (long long)qobs.rows,
                   (double)(sd_util_mono_ms() - t0) / 1000.0);
    }
    /* what the readers noticed besides rows (files a killed Spark batch left behind, ...) */
    for (int si = 0; si < r->nsinks; si++) {
        char *note = sd_sink_notes(r->sinks[si]);
        if (note) {
            char *w = sd_util_fmt("sink %s: %s", r->sinks[si]->name, note);
            sd_ledger_warning(r->ledger, "sink-note", w, NULL, 0);
            sd_run_say(r, "note: %s", w);
            free(w);
            free(note);
        }
    }
    /* the same for every sink: what reached Kafka, what did not */
    int64_t produced = sd_run_ledger_count(r, "SELECT count(*) FROM ledger WHERE offset IS NOT NULL");
    int64_t send_failed = sd_run_ledger_count(r, "SELECT count(*) FROM ledger WHERE error IS NOT NULL OR acked_ms IS NULL");
    sd_run_compare_account(r, produced);
    /* expect steps */
    const sd_step_t **expects = sd_util_xcalloc((size_t)r->sc->nsteps + 1, sizeof(*expects));
    int nexp = 0;
    for (int i = 0; i < r->sc->nsteps; i++)
        if (r->sc->steps[i].kind == SD_STEP_EXPECT) expects[nexp++] = &r->sc->steps[i];
    int check_idx = 0;
    for (int si = 0; si < r->nsinks; si++) {
        sd_sink_t *sink = r->sinks[si];
        if (sink->is_quarantine) continue;
        int primary = sink == r->target;
        sd_observe_t obs;
        int64_t t0 = sd_util_mono_ms();
        if ((e = sd_observe_sink(sink, r->tag, r->nseq, r->t0_wall, &obs, err, errlen))) {
            free(expects);
            goto out;
        }
        double read_s = (double)(sd_util_mono_ms() - t0) / 1000.0;
        sd_recon_result_t res;
        memset(&res, 0, sizeof(res));
        sd_recon_classify(&L, obs.copies, have_q ? qobs.copies : NULL, obs.rows, obs.unexpected_rows, obs.unexpected_unique, &res);
        res.counts.quarantine_unexpected = have_q ? qobs.unexpected_rows : 0;
        res.counts.produced = produced;
        res.counts.send_failed = send_failed;
        res.counts.late_sent = r->late_sent;
        res.counts.malformed_sent = r->malformed_sent;
        res.counts.replayed = r->replayed;
        res.counts.crashes = r->crashes;
        sd_run_latency(r, &obs, sink->name, &res.counts);
        *unjudgeable += (int)res.counts.unjudgeable;
        sd_run_say(r, "read sink %s: %lld rows in %.2fs: %lld unique, %lld duplicated, %lld lost, %lld unexpected", sink->name,
                   (long long)obs.rows, read_s, (long long)res.counts.observed_unique, (long long)res.counts.duplicated,
                   (long long)res.counts.lost, (long long)res.counts.unexpected);
        sd_recon_ctx_t ctx = {
            .profile = r->sc->profile,
            .has_quarantine_sink = have_q,
            .malformed_to_quarantine = r->sc->malformed_disp == SD_DISP_QUARANTINE,
            .expects = primary ? expects : NULL,
            .nexpects = primary ? nexp : 0,
            .fmt_id = sd_run_fmt_id,
            .fmt_opaque = r};
        sd_checks_t checks;
        sd_recon_checks(&ctx, &res, &checks);
        *failed += sd_checks_failed(&checks);
        char prefix[128];
        snprintf(prefix, sizeof(prefix), "%s%s", primary ? "" : sink->name, primary ? "" : ".");
        if (!e) e = sd_run_store_counts(r, prefix, &res.counts, err, errlen);
        if (!e) e = sd_run_store_anomalies(r, sink, &res, &obs, err, errlen);
        if (!e && have_q && primary) {
            /* quarantine anomalies: rows that map to nothing */
            sqlite3_stmt *st;
            if (sqlite3_prepare_v2(sd_ledger_db(r->ledger), "INSERT INTO unexpected(sink,raw_id,copies,writers) VALUES(?,?,?,?)", -1, &st, NULL) == SQLITE_OK) {
                for (int64_t i = 0; i < qobs.n_unexpected; i++) {
                    sqlite3_bind_text(st, 1, r->quarantine->name, -1, SQLITE_TRANSIENT);
                    sqlite3_bind_text(st, 2, qobs.unexpected[i].id, -1, SQLITE_TRANSIENT);
                    sqlite3_bind_int64(st, 3, qobs.unexpected[i].copies);
                    sqlite3_bind_text(st, 4, qobs.unexpected[i].writers, -1, SQLITE_TRANSIENT);
                    sqlite3_step(st);
                    sqlite3_reset(st);
                }
                sqlite3_finalize(st);
            }
        }
        if (!e) {
            sqlite3_stmt *st;
            if (sqlite3_prepare_v2(sd_ledger_db(r->ledger), "INSERT INTO \"check\"(idx,name,pass,expected,actual,detail) VALUES(?,?,?,?,?,?)", -1, &st, NULL) == SQLITE_OK) {
                for (int i = 0; i < checks.n; i++) {
                    char name[256];
                    snprintf(name, sizeof(name), "%s%s", prefix, checks.v[i].name);
                    sqlite3_bind_int(st, 1, check_idx++);
                    sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
                    sqlite3_bind_int(st, 3, checks.v[i].pass);
                    sqlite3_bind_text(st, 4, checks.v[i].expected, -1, SQLITE_TRANSIENT);
                    sqlite3_bind_text(st, 5, checks.v[i].actual, -1, SQLITE_TRANSIENT);
                    sqlite3_bind_text(st, 6, checks.v[i].detail, -1, SQLITE_TRANSIENT);
                    sqlite3_step(st);
                    sqlite3_reset(st);
                }
                sqlite3_finalize(st);
            }
            for (int i = 0; i < checks.n_not_judged; i++) sd_ledger_warning(r->ledger, "not-judged", checks.not_judged[i], NULL, 0);
        }
        sd_checks_free(&checks);
        sd_recon_result_free(&res);
        sd_observe_free(&obs);
        if (e) break;
    }
    free(expects);
    /* reports look up each anomalous id in the ledger: index by seq then */
    if (!e && sd_run_ledger_count(r, "SELECT count(*) FROM (SELECT 1 FROM anomaly LIMIT 1)") > 0) {
        char *msg = NULL;
        if (sqlite3_exec(sd_ledger_db(r->ledger), "CREATE INDEX IF NOT EXISTS sent_seq ON sent(seq)", NULL, NULL, &msg) != SQLITE_OK)
            sqlite3_free(msg);
    }
out:
    if (have_q) sd_observe_free(&qobs);
    free(trimmed);
    if (!e) e = sd_ledger_commit(r->ledger, err, errlen);
    return e;
}

/* ---- set-up and tear-down ---- */

static sd_err_t sd_run_prepare_dir(const char *dir, char *err, size_t errlen) {
    if (sd_util_exists(dir)) {
        if (!sd_util_is_dir(dir)) return sd_err_set(err, errlen, SD_ERR_USAGE, "output %s exists and is not a folder", dir);
        char *db = sd_util_fmt("%s/run.db", dir);
        int is_run = sd_util_exists(db);
        free(db);
        if (is_run) {
            /* a previous run of this scenario: replaced */
            sd_err_t e = sd_util_rmtree(dir, err, errlen);
            if (e) return e;
        } else if (rmdir(dir) == -1) {
            /* rmdir only removes an empty folder: anything else is kept */
            return sd_err_set(err, errlen, SD_ERR_USAGE,
                              "output %s exists and is not a streamdrill run folder (no run.db): refusing to replace it", dir);
        }
    }
    return sd_util_mkdirs(dir, err, errlen);
}

static void sd_run_close(sd_run_t *r) {
    sd_run_live_clear(r);
    if (r->sup) {
        sd_sup_kill_all(r->sup);
        sd_run_sup_events(r, NULL, 0);
        sd_sup_free(r->sup);
        r->sup = NULL;
    }
    for (int i = 0; i < r->nsinks; i++) sd_sink_close(r->sinks[i]);
    r->nsinks = 0;
    if (r->producer) sd_producer_close(r->producer);
    r->producer = NULL;
    if (r->proxy) sd_proxy_stop(r->proxy);
    r->proxy = NULL;
    free(r->proxy_listen);
    free(r->faketime_file);
    if (r->broker) sd_broker_close(r->broker);
    r->broker = NULL;
    if (r->ledger) sd_ledger_close(r->ledger);
    r->ledger = NULL;
    sd_events_close(r->events);
    r->events = NULL;
    free(r->run_dir); free(r->tag); free(r->topic); free(r->disp); free(r->kind); free(r->sends); free(r->sent_rel); sd_spark_close(r->spark); free(r->consumed); free(r->stage); free(r->trim_warned);
    for (int i = 0; i < SD_RUN_INFLIGHT; i++) { free(r->sub[i].stage); free(r->sub[i].ns); sd_buf_free(&r->sub[i].arena); }
    sd_buf_free(&r->arena);
    sd_buf_free(&r->payload);
    sd_buf_free(&r->key);
    sd_kvlist_free(&r->vars);
}

static char *sd_run_expand(sd_run_t *r, const char *text, char *err, size_t errlen) {
    return sd_scenario_expand(text, &r->vars, err, errlen);
}

static void sd_run_finish(sd_run_t *r, sd_run_result_t *res, sd_err_t status, const char *verdict, const char *message) {
    res->status = status;
    snprintf(res->verdict, sizeof(res->verdict), "%s", verdict);
    snprintf(res->message, sizeof(res->message), "%s", message ? message : "");
    if (r->run_dir) snprintf(res->run_dir, sizeof(res->run_dir), "%s", r->run_dir);
    if (r->ledger) {
        sd_ledger_meta_set(r->ledger, "verdict", verdict, NULL, 0);
        sd_ledger_meta_set(r->ledger, "reason", status == SD_OK ? "" : sd_strerror(status), NULL, 0);
        sd_ledger_meta_set(r->ledger, "message", message ? message : "", NULL, 0);
        sd_ledger_meta_set_int(r->ledger, "ended_ms", sd_util_wall_ms(), NULL, 0);
        /* what the harness itself cost: CPU of all its threads, peak memory */
        struct rusage ru;
        if (getrusage(RUSAGE_SELF, &ru) == 0) {
            int64_t cpu = (int64_t)ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000 + (int64_t)ru.ru_stime.tv_sec * 1000 +
                          ru.ru_stime.tv_usec / 1000;
            sd_ledger_meta_set_int(r->ledger, "harness_cpu_ms", cpu, NULL, 0);
            sd_ledger_meta_set_int(r->ledger, "harness_peak_rss_kb", ru.ru_maxrss, NULL, 0);
        }
        sd_ledger_meta_set(r->ledger, "status", "finished", NULL, 0);
        sd_ledger_commit(r->ledger, NULL, 0);
    }
}

void sd_run_scenario(const sd_scenario_t *sc, const sd_run_opts_t *opts, sd_run_result_t *res) {
    sd_run_t R;
    sd_run_t *r = &R;
    memset(r, 0, sizeof(*r));
    memset(res, 0, sizeof(*res));
    r->sc = sc;
    r->opts = opts;
    {
        const char *term = getenv("TERM");
        r->live = !opts->quiet && !opts->verbose && isatty(2) && term && strcmp(term, "dumb");
    }
    r->t0_mono = sd_util_mono_ms();
    r->t0_wall = sd_util_wall_ms();
    r->max_event_time = INT64_MIN;
    char err[2048] = "";
    char detail[2048];
    sd_err_t e = SD_OK;

    /* identity of the run */
    if (opts->tag) r->tag = sd_util_strdup(opts->tag);
    else {
        char hex[17];
        sd_util_random_hex(hex, 4);
        r->tag = sd_util_strdup(hex);
    }
    r->seed = opts->has_seed ? opts->seed : sc->seed;
    r->topic = sc->exact_topic ? sd_util_strdup(sc->topic) : sd_util_fmt("%s-%s", sc->topic, r->tag);
    char *outabs = sd_util_abspath(opts->out_dir);
    r->run_dir = sd_util_fmt("%s/%s", outabs, sc->name);
    free(outabs);
    char seedbuf[32];
    snprintf(seedbuf, sizeof(seedbuf), "%llu", (unsigned long long)r->seed);
    for (int i = 0; i < sc->vars.n; i++) sd_kvlist_add(&r->vars, sc->vars.v[i].key, sc->vars.v[i].value);
    sd_kvlist_add(&r->vars, "run", r->run_dir);
    sd_kvlist_add(&r->vars, "here", sc->dir);
    char *pipes = sd_util_fmt("%s/pipelines", sc->dir);
    sd_kvlist_add(&r->vars, "pipelines", pipes);
    free(pipes);
    char *chk = sd_util_fmt("%s/checkpoint", r->run_dir);
    sd_kvlist_add(&r->vars, "checkpoint", chk);
    free(chk);
    sd_kvlist_add(&r->vars, "seed", seedbuf);
    sd_kvlist_add(&r->vars, "tag", r->tag);
    char *group = sd_util_fmt("streamdrill-%s-%s", sc->name, r->tag);
    sd_kvlist_add(&r->vars, "group", group);
    free(group);
    sd_kvlist_add(&r->vars, "name", sc->name);
    sd_kvlist_add(&r->vars, "topic", r->topic);

    /* 1. events: a missing or broken log is a bad scenario */
    {
        sd_events_conf_t ec = {.kind = sc->events_kind, .seed = r->seed, .tag = r->tag,
                               .start_ms = sc->start_now ? r->t0_wall / 1000 * 1000 : sc->start_ms,
                               .step_ms = sc->step_ms, .parcels = sc->parcels, .locations = sc->locations,
                               .id_field = sc->events_kind == SD_EVENTS_LOG ? sc->log_id_field : sc->id_field,
                               .time_field = sc->time_field};
        char *logp = NULL;
        if (sc->log_path) {
            logp = sd_run_expand(r, sc->log_path, err, sizeof(err));
            if (!logp) { sd_run_finish(r, res, SD_ERR_SCENARIO, "error", err); sd_run_close(r); return; }
            if (logp[0] != '/' && !sd_util_exists(logp)) {
                char *rel = sd_util_fmt("%s/%s", sc->dir, logp);
                if (sd_util_exists(rel)) { free(logp); logp = rel; }
                else free(rel);
            }
            ec.log_path = logp;
        }
        e = sd_events_open(&ec, &r->events, err, sizeof(err));
        free(logp);
        if (e) { sd_run_finish(r, res, e, "error", err); sd_run_close(r); return; }
    }

    /* 2. folder and run.db */
    char *dbpath = sd_util_fmt("%s/run.db", r->run_dir);
    if ((e = sd_run_prepare_dir(r->run_dir, err, sizeof(err))) ||
        (e = sd_ledger_create(dbpath, &r->ledger, err, sizeof(err)))) {
        free(dbpath);
        sd_run_finish(r, res, e, "error", err);
        sd_run_close(r);
        return;
    }
    free(dbpath);
    {
        char iso[32];
        struct { const char *k, *v; } meta[] = {
            {"scenario", sc->name}, {"file", sc->path}, {"description", sc->description}, {"seed", seedbuf},
            {"tag", r->tag}, {"topic", r->topic}, {"profile", sd_profile_name(sc->profile)},
            {"harness_version", opts->version}, {"status", "running"},
            {"started_at", sd_util_iso8601(r->t0_wall, iso, sizeof(iso))}, {"run_dir", r->run_dir},
            {"events", sc->events_kind == SD_EVENTS_LOG ? "log" : "parcel-scans"},
            {"late", sd_disp_name(sc->late_disp)}, {"malformed", sd_disp_name(sc->malformed_disp)}};
        for (size_t i = 0; i < sizeof(meta) / sizeof(meta[0]); i++) sd_ledger_meta_set(r->ledger, meta[i].k, meta[i].v, NULL, 0);
        sd_ledger_meta_set_int(r->ledger, "started_ms", r->t0_wall, NULL, 0);
        sd_ledger_meta_set_int(r->ledger, "watermark_ms", sc->watermark_ms, NULL, 0);
        sd_buf_t vb;
        sd_buf_init(&vb);
        for (int i = 0; i < sc->vars.n; i++) sd_buf_printf(&vb, "%s%s=%s", i ? " " : "", sc->vars.v[i].key, sc->vars.v[i].value);
        sd_ledger_meta_set(r->ledger, "vars", vb.data ? vb.data : "", NULL, 0);
        /* the command that runs this drill again, same events, same topic */
        sd_buf_reset(&vb);
        sd_buf_puts(&vb, "streamdrill run ");
        sd_buf_put_shell_word(&vb, sc->path);
        sd_buf_printf(&vb, " --seed %s --tag ", seedbuf);
        sd_buf_put_shell_word(&vb, r->tag);
        for (int i = 0; i < sc->vars.n; i++) {
            char *kv = sd_util_fmt("%s=%s", sc->vars.v[i].key, sc->vars.v[i].value);
            sd_buf_puts(&vb, " --set ");
            sd_buf_put_shell_word(&vb, kv);
            free(kv);
        }
        sd_ledger_meta_set(r->ledger, "reproduce", vb.data, NULL, 0);
        sd_buf_free(&vb);
        for (int i = 0; i < sc->nsteps; i++) {
            sd_ledger_step_begin(r->ledger, i, sc->steps[i].line, sc->steps[i].text, NULL, 0);
            sd_ledger_step_end(r->ledger, i, "planned", NULL, NULL, 0);
        }
        sd_ledger_commit(r->ledger, NULL, 0);
    }
    sd_run_say(r, "run folder %s (tag %s, seed %s)", r->run_dir, r->tag, seedbuf);

    /* 3. broker */
    if (opts->brokers) e = sd_broker_external(opts->brokers, opts->xprops, 10000, &r->broker, err, sizeof(err));
    else e = sd_broker_embedded(1, &r->broker, err, sizeof(err));
    if (e) goto done;
    sd_kvlist_add(&r->vars, "brokers", sd_broker_bootstrap(r->broker));
    if (opts->proxy) {
        const char *eq = strchr(opts->proxy, '=');
        if (!eq) { e = sd_err_set(err, sizeof(err), SD_ERR_USAGE, "--proxy %s: expected LISTEN=UPSTREAM", opts->proxy); goto done; }
        r->proxy_listen = sd_util_strndup(opts->proxy, (size_t)(eq - opts->proxy));
        if ((e = sd_proxy_start(r->proxy_listen, eq + 1, &r->proxy, err, sizeof(err)))) goto done;
        sd_kvlist_add(&r->vars, "proxy", r->proxy_listen);
        sd_ledger_meta_set(r->ledger, "proxy", opts->proxy, NULL, 0);
        sd_run_say(r, "proxy %s -> %s for the pipeline's broker connections", r->proxy_listen, eq + 1);
    } else {
        sd_kvlist_add(&r->vars, "proxy", sd_broker_bootstrap(r->broker));
    }
    sd_ledger_meta_set(r->ledger, "brokers", sd_broker_bootstrap(r->broker), NULL, 0);
    sd_ledger_meta_set(r->ledger, "broker_kind", sd_broker_is_embedded(r->broker) ? "embedded" : "external", NULL, 0);
    sd_run_say(r, "%s broker at %s", sd_broker_is_embedded(r->broker) ? "embedded" : "external", sd_broker_bootstrap(r->broker));
    if (sc->has_source) {
        int actual = sc->partitions;
        if ((e = sd_broker_create_topic(r->broker, r->topic, sc->partitions, sc->replication, &actual, err, sizeof(err)))) goto done;
        r->partitions = actual;
        if (actual != sc->partitions) {
            char w[256];
            snprintf(w, sizeof(w), "the broker refused to create topic %s with %d partitions and created it on first use with %d",
                     r->topic, sc->partitions, actual);
            sd_ledger_warning(r->ledger, "partitions", w, NULL, 0);
            sd_run_say(r, "warning: %s", w);
        }
        r->consumed = sd_util_xmalloc(sizeof(int64_t) * (size_t)r->partitions);
        for (int p = 0; p < r->partitions; p++) r->consumed[p] = -1;
        if ((e = sd_producer_new(sd_broker_bootstrap(r->broker), r->topic, &sc->producer_props, opts->xprops, r->ledger,
                                 &r->producer, err, sizeof(err))))
            goto done;
    }

    /* 4. sinks and supervisor */
    {
        sd_sink_ctx_t ctx = {.brokers = sd_broker_bootstrap(r->broker), .props = opts->xprops, .id_field = sc->id_field};
        for (int i = 0; i < sc->nsinks; i++) {
            if ((e = sd_sink_open(&sc->sinks[i], &r->vars, &ctx, &r->sinks[r->nsinks], err, sizeof(err)))) goto done;
            sd_sink_t *s = r->sinks[r->nsinks++];
            if (s->is_quarantine && !r->quarantine) r->quarantine = s;
            if (!s->is_quarantine && !r->target) r->target = s;
        }
    }
    if (sc->argv) {
        char **argv = sd_util_xcalloc((size_t)sc->argc + 1, sizeof(char *));
        sd_kvlist_t env = {0};
        sd_kvlist_add(&env, "STREAMDRILL_BROKERS", sd_broker_bootstrap(r->broker));
        sd_kvlist_add(&env, "STREAMDRILL_TOPIC", r->topic);
        sd_kvlist_add(&env, "STREAMDRILL_RUN_DIR", r->run_dir);
        sd_kvlist_add(&env, "STREAMDRILL_CHECKPOINT", sd_kvlist_get(&r->vars, "checkpoint"));
        sd_kvlist_add(&env, "STREAMDRILL_GROUP", sd_kvlist_get(&r->vars, "group"));
        sd_kvlist_add(&env, "STREAMDRILL_TAG", r->tag);
        if (sc->faketime) {
            static const char *const libs[] = {"/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                                               "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
                                               "/usr/lib/faketime/libfaketimeMT.so.1", "/usr/local/lib/faketime/libfaketimeMT.so.1", NULL};
            const char *lib = sc->faketime_lib;
            for (int i = 0; !lib && libs[i]; i++)
                if (sd_util_exists(libs[i])) lib = libs[i];
            if (!lib || !sd_util_exists(lib)) {
                e = sd_err_set(err, sizeof(err), SD_ERR_USAGE, "clock faketime: libfaketime not found%s%s (Debian: apt-get install libfaketime)",
                               lib ? " at " : "", lib ? lib : "");
            } else {
                r->faketime_file = sd_util_fmt("%s/faketime.rc", r->run_dir);
                r->clock_rate = 1.0;
                e = sd_util_write_file(r->faketime_file, "+0s\n", 4, err, sizeof(err));
                /* preload=children: the pipeline puts it into LD_PRELOAD for
                 * the processes it starts (a Python driver's JVM), itself
                 * staying on real time */
                sd_kvlist_add(&env, sc->faketime_children ? "STREAMDRILL_FAKETIME_LIB" : "LD_PRELOAD", lib);
                sd_kvlist_add(&env, "FAKETIME_TIMESTAMP_FILE", r->faketime_file);
                sd_kvlist_add(&env, "FAKETIME_CACHE_DURATION", "1");
                sd_kvlist_add(&env, "DONT_FAKE_MONOTONIC", "1");
                sd_kvlist_add(&env, "FAKETIME_DONT_FAKE_MONOTONIC", "1");
            }
        }
        for (int i = 0; !e && i < sc->env.n; i++) {
            char *v = sd_run_expand(r, sc->env.v[i].value, err, sizeof(err));
            if (!v) e = SD_ERR_SCENARIO;
            else { sd_kvlist_add(&env, sc->env.v[i].key, v); free(v); }
        }
        for (int i = 0; !e && i < sc->argc; i++) {
            argv[i] = sd_run_expand(r, sc->argv[i], err, sizeof(err));
            if (!argv[i]) e = SD_ERR_SCENARIO;
        }
        if (!e) {
            sd_sup_conf_t conf = {.argv = argv, .env = &env, .run_dir = r->run_dir, .token = opts->token,
                                  .watchdog = opts->watchdog};
            e = sd_sup_new(&conf, &r->sup, err, sizeof(err));
        }
        for (int i = 0; i < sc->argc; i++) free(argv[i]);
        free(argv);
        sd_kvlist_free(&env);
        if (e) goto done;
    }

    if (sc->progress == SD_PROGRESS_SPARK) {
        char *chk = sd_run_expand(r, sc->checkpoint ? sc->checkpoint : "{checkpoint}", err, sizeof(err));
        if (!chk) { e = SD_ERR_SCENARIO; goto done; }
        e = sd_spark_open(chk, r->topic, r->partitions, &r->spark, err, sizeof(err));
        sd_ledger_meta_set(r->ledger, "spark_checkpoint", chk, NULL, 0);
        free(chk);
        if (e) goto done;
    }

    /* 5. steps */
    for (int i = 0; i < sc->nsteps; i++) {
        const sd_step_t *st = &sc->steps[i];
        r->step = i;
        sd_ledger_step_begin(r->ledger, i, st->line, st->text, NULL, 0);
        sd_run_say(r, "step %d/%d (line %d): %s", i + 1, sc->nsteps, st->line, st->text);
        detail[0] = 0;
        err[0] = 0;
        int64_t t0 = sd_util_mono_ms();
        e = sd_run_step(r, st, detail, sizeof(detail), err, sizeof(err));
        const char *status = e == SD_OK ? "ok" : e == SD_ERR_TIMEOUT ? "timeout" : "failed";
        sd_ledger_step_end(r->ledger, i, status, e ? err : detail, NULL, 0);
        sd_ledger_commit(r->ledger, NULL, 0);
        if (e == SD_ERR_TIMEOUT) {
            sd_ledger_warning(r->ledger, "await-timeout", err, NULL, 0);
            sd_run_say(r, "  timeout (%.2fs): %s", (double)(sd_util_mono_ms() - t0) / 1000.0, err);
            e = SD_OK;
            continue;
        }
        if (e) {
            sd_run_say(r, "  failed: %s", err);
            sd_run_set_fatal(r, e, err);
            for (int k = i + 1; k < sc->nsteps; k++) sd_ledger_step_end(r->ledger, k, "skipped", "an earlier step failed", NULL, 0);
            goto done;
        }
        if (detail[0] && opts->verbose) sd_run_say(r, "  %s", detail);
        else if (detail[0]) sd_run_say(r, "  %s", detail);
    }

    /* every fault still on ends before the judgement */
    {
        sd_buf_t done;
        sd_buf_init(&done);
        if (sd_run_heal_recorded(r, &done)) {
            sd_run_say(r, "healed before reconciliation: %s", done.data);
            r->last_data_step_mono = sd_util_mono_ms();
        }
        sd_buf_free(&done);
    }

    /* 6. quiescence after the last data step */
    if (r->target && (r->last_quiescent_mono == 0 || r->last_quiescent_mono < r->last_data_step_mono)) {
        sd_run_say(r, "implicit step: await quiescent 3s timeout=60s (needed before reconciliation)");
        e = sd_run_await_quiescent(r, 3000, 60000, detail, sizeof(detail), err, sizeof(err));
        sd_ledger_warning(r->ledger, "implicit-quiescence", e ? err : detail, NULL, 0);
        if (e) { sd_run_set_fatal(r, e, err); goto done; }
    }

done:
    /* 7. reconcile (also after an inconclusive end, to show what was seen) */
    {
        int failed = 0, unjudgeable = 0;
        sd_err_t status = r->fatal ? r->fatal : e;
        char msg[4096];
        snprintf(msg, sizeof(msg), "%s", r->fatal ? r->fatal_msg : err);
        if (r->target && r->ledger && status != SD_ERR_SINK && status != SD_ERR_INTERRUPTED && status != SD_ERR_IO &&
            status != SD_ERR_BROKER && status != SD_ERR_SCENARIO && status != SD_ERR_USAGE) {
            char rerr[2048];
            sd_err_t re = SD_OK;
            if (r->producer) re = sd_run_background_wait(r, rerr, sizeof(rerr));
            if (r->producer && !re) re = sd_run_drain(r, sd_util_scaled_ms(10000), rerr, sizeof(rerr));
            int64_t rt0 = sd_util_mono_ms();
            if (!re) re = sd_run_reconcile(r, &failed, &unjudgeable, rerr, sizeof(rerr));
            sd_ledger_meta_set_int(r->ledger, "reconcile_ms", sd_util_mono_ms() - rt0, NULL, 0);
            if (re && !status) {
                status = re;
                snprintf(msg, sizeof(msg), "%s", rerr);
            }
        }
        /* 8. stop the pipeline */
        if (r->sup) {
            sd_sup_state_t st;
            sd_sup_state(r->sup, &st);
            if (st.running) {
                r->pipeline_wanted = 0;
                sd_sup_stop(r->sup, sd_util_scaled_ms(5000), NULL, 0);
            }
            sd_sup_kill_all(r->sup);
            sd_run_sup_events(r, NULL, 0);
        }
        const char *verdict;
        if (status == SD_OK && !r->target) {
            /* events went out and nothing read them back: no verdict */
            status = SD_ERR_NOTHING_JUDGED;
            snprintf(msg, sizeof(msg), "the scenario declares no sink: %lld messages were sent, nothing was checked",
                     (long long)r->messages);
        }
        if (status == SD_OK) {
            if (failed) {
                status = SD_ERR_CHECK_FAILED;
                snprintf(msg, sizeof(msg), "%d check%s failed", failed, failed == 1 ? "" : "s");
                verdict = "fail";
            } else if (unjudgeable) {
                status = SD_ERR_TRIMMED;
                snprintf(msg, sizeof(msg), "%d expected ids are missing but lie in data the broker deleted: cannot judge", unjudgeable);
                verdict = "inconclusive";
            } else {
                verdict = "pass";
                msg[0] = 0;
            }
        } else if (sd_err_is_inconclusive(status) || status == SD_ERR_INTERRUPTED) {
            verdict = "inconclusive";
        } else {
            verdict = "error";
        }
        sd_run_finish(r, res, status, verdict, msg);
        if (r->ledger) {
            /* the producer's last delivery reports go to the ledger first */
            if (r->producer) sd_producer_close(r->producer);
            r->producer = NULL;
            sd_ledger_close(r->ledger);
            r->ledger = NULL;
            char rerr[1024];
            if (sd_report_write_all(r->run_dir, NULL, NULL, NULL, rerr, sizeof(rerr)) != SD_OK)
                fprintf(stderr, "streamdrill: reports for %s: %s\n", r->run_dir, rerr);
        }
    }
    sd_run_close(r);
}
