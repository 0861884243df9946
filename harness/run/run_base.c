/* run_base.c - the services every file of the run calls, below all of
 * them: the console (a line, the live status line), the run's fatal error,
 * a fault step that did not land, faults to undo when they are due, and
 * the stop request SIGINT and SIGTERM set, and what the run is for the
 * injectors and progress sources (run.h). It calls nothing of the run's
 * other files. */
#include "run_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

volatile sig_atomic_t sd_run_stop_requested = 0;

int64_t sd_run_elapsed_ms(const sd_run_t *r) { return sd_util_mono_ms() - r->t0_mono; }

/* Take the live progress line off the screen, so a message prints clean. */
void sd_run_live_clear(sd_run_t *r) {
    if (!r->console.live_shown) return;
    fputs("\r\033[K", stderr);
    r->console.live_shown = 0;
}

/* A step that counts toward a number (produce N, await sink rows>=N) and
 * has run for over a second: a bar, the rate and the time left, from what
 * it did since it began. Nothing for the other steps. */
static void sd_run_estimate(sd_run_t *r, int64_t now, int64_t sent, int64_t rows, char *out, size_t len) {
    const sd_step_t *st = &r->sc->steps[r->step];
    out[0] = 0;
    if (r->console.est_step != r->step + 1) {
        r->console.est_step = r->step + 1;
        r->console.est_t0_mono = now, r->console.est_sent0 = sent, r->console.est_rows0 = rows;
        return;
    }
    int64_t ms = now - r->console.est_t0_mono, goal, done, base;
    if (ms < 1000) return;
    if (st->kind == SD_STEP_PRODUCE && !st->send.background && st->send.count > 0) {
        goal = st->send.count, done = sent - r->console.est_sent0, base = 0;
    } else if (st->kind == SD_STEP_AWAIT_SINK && rows >= 0 && st->await.rows > 0) {
        goal = st->await.rows, done = rows, base = r->console.est_rows0 > 0 ? r->console.est_rows0 : 0;
    } else {
        return;
    }
    if (done < 0) done = 0;
    if (done > goal) done = goal;
    double rate = (double)(done - base) * 1000.0 / (double)ms;
    char bar[11];
    int fill = (int)(done * 10 / goal);
    for (int i = 0; i < 10; i++) bar[i] = i < fill ? '#' : '.';
    bar[10] = 0;
    int n = snprintf(out, len, " [%s] %d%% %.0f/s", bar, (int)(done * 100 / goal), rate);
    if (n > 0 && (size_t)n < len && rate > 0 && done < goal)
        snprintf(out + n, len - (size_t)n, ", ~%.0fs left", (double)(goal - done) / rate);
}

/* The live progress line: step, events sent and acknowledged, rows in the
 * target, elapsed time, and for a step that counts toward a number its
 * bar and estimate; redrawn at most five times a second. */
void sd_run_live(sd_run_t *r) {
    int64_t now = sd_util_mono_ms();
    if (!r->console.live || now < r->console.live_next_mono) return;
    r->console.live_next_mono = now + 200;
    sd_producer_stats_t st = {0};
    if (r->src.producer) sd_producer_stats(r->src.producer, &st);
    int64_t rows = -1;
    for (int i = 0; i < r->sink.n; i++)
        if (r->sink.v[i] == r->sink.target && r->sampling.sampled) rows = r->sampling.counts[i];
    char line[384], est[96];
    sd_run_estimate(r, now, st.sent, rows, est, sizeof(est));
    /* the estimate before the counts: a narrow terminal cuts the end */
    int n = snprintf(line, sizeof(line), "[%s %.1fs] step %d/%d: %s%s | sent %lld, acked %lld | target ", r->sc->name,
                     (double)sd_run_elapsed_ms(r) / 1000.0, r->step + 1, r->sc->nsteps, r->sc->steps[r->step].text, est,
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
    r->console.live_shown = 1;
}

void sd_run_say(sd_run_t *r, const char *fmt, ...) {
    if (r->opts->quiet) return;
    sd_run_live_clear(r);
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    if (vasprintf(&text, fmt, ap) < 0) text = NULL;
    va_end(ap);
    /* a progress line carries what pipelines, sinks and logs said: no
     * escape sequence of theirs reaches the terminal */
    sd_buf_t b;
    sd_buf_init(&b);
    if (text) sd_buf_put_safe(&b, text, strlen(text), 1);
    fprintf(stderr, "[%s %7.2fs] %s\n", r->sc->name, (double)sd_run_elapsed_ms(r) / 1000.0, b.data ? b.data : "");
    sd_buf_free(&b);
    free(text);
}

sd_err_t sd_run_set_fatal(sd_run_t *r, sd_err_t e, const char *msg) {
    if (!r->verdict.fatal) {
        r->verdict.fatal = e;
        snprintf(r->verdict.fatal_msg, sizeof(r->verdict.fatal_msg), "%s", msg && *msg ? msg : sd_strerror(e));
    }
    return e;
}

void sd_run_fault_missed(sd_run_t *r, const sd_step_t *st, const char *why) {
    int idx = (int)(st - r->sc->steps);
    /* in the faults too, not only the warnings; a second reason for a step
     * that already missed is added to its landing, the step counted once */
    char kind[32];
    snprintf(kind, sizeof(kind), "%.*s", (int)strcspn(st->text, " "), st->text);
    sd_sup_state_t s = {0};
    if (r->sup) sd_sup_state(r->sup, &s);
    sd_ledger_fault_missed(r->ledger, idx, kind, s.incarnation, why, NULL, 0);
    if (!r->verdict.missed_step) r->verdict.missed_step = sd_util_xcalloc((size_t)r->sc->nsteps + 1, 1);
    if (r->verdict.missed_step[idx]) return;
    r->verdict.missed_step[idx] = SD_STEP_MISSED;
    char w[1536];
    snprintf(w, sizeof(w), "line %d `%s`: %s", st->line, st->text, why);
    sd_ledger_warning(r->ledger, st->optional ? "fault-skipped" : "fault-missed", w, NULL, 0);
    sd_run_say(r, "  %s: %s", st->optional ? "skipped (optional)" : "did not land", w);
    if (st->optional) return;
    if (!r->verdict.missed++) snprintf(r->verdict.missed_msg, sizeof(r->verdict.missed_msg), "%s", w);
}

void sd_run_restart_failed(sd_run_t *r) {
    if (!r->verdict.missed_step) r->verdict.missed_step = sd_util_xcalloc((size_t)r->sc->nsteps + 1, 1);
    if (!r->verdict.missed_step[r->step]) r->verdict.missed_step[r->step] = SD_STEP_RESTART_FAILED;
}

void sd_run_schedule_undo(sd_run_t *r, int64_t due_mono, void (*fn)(sd_run_t *r, int arg), int arg) {
    if (r->undo.n >= (int)(sizeof(r->undo.q) / sizeof(r->undo.q[0]))) {
        fn(r, arg); /* no room: undo now rather than never */
        return;
    }
    r->undo.q[r->undo.n].due_mono = due_mono;
    r->undo.q[r->undo.n].fn = fn;
    r->undo.q[r->undo.n].arg = arg;
    r->undo.n++;
}

/* Undo the faults whose time is up (for=). */
void sd_run_undo_due(sd_run_t *r, int all) {
    int64_t now = sd_util_mono_ms();
    for (int i = 0; i < r->undo.n;) {
        if (all || r->undo.q[i].due_mono <= now) {
            struct sd_run_undo_one_s u = r->undo.q[i];
            r->undo.q[i] = r->undo.q[--r->undo.n];
            u.fn(r, u.arg);
        } else {
            i++;
        }
    }
}

void sd_run_data_step_done(sd_run_t *r) { r->quiet.last_data_step_mono = sd_util_mono_ms(); }

void sd_run_count_sent(sd_run_t *r, int64_t replayed, int64_t late, int64_t malformed) {
    r->sends.replayed += replayed;
    r->sends.late_sent += late;
    r->sends.malformed_sent += malformed;
}

void sd_run_want_pipeline(sd_run_t *r, int wanted) { r->pipe.wanted = wanted; }

const sd_scenario_t *sd_run_sc(const sd_run_t *r) { return r->sc; }
const sd_run_opts_t *sd_run_opts(const sd_run_t *r) { return r->opts; }
const char *sd_run_dir(const sd_run_t *r) { return r->run_dir; }
const char *sd_run_tag(const sd_run_t *r) { return r->tag; }
const sd_kvlist_t *sd_run_vars(const sd_run_t *r) { return &r->vars; }
int sd_run_step_index(const sd_run_t *r) { return r->step; }
int sd_run_incarnations(const sd_run_t *r) { return r->pipe.incarnations; }
sd_ledger_t *sd_run_ledger(const sd_run_t *r) { return r->ledger; }
sd_broker_t *sd_run_broker(const sd_run_t *r) { return r->broker; }
sd_sup_t *sd_run_sup(const sd_run_t *r) { return r->sup; }
sd_events_t *sd_run_events(const sd_run_t *r) { return r->src.events; }
sd_sink_t *sd_run_target(const sd_run_t *r) { return r->sink.target; }
const char *sd_run_topic(const sd_run_t *r) { return r->src.topic; }
int sd_run_partitions(const sd_run_t *r) { return r->src.partitions; }
sd_faults_t *sd_run_faults(sd_run_t *r) { return &r->faults; }
int sd_run_broker_rtt_ms(const sd_run_t *r) {
    const sd_faults_t *F = &r->faults;
    if (!r->broker || !sd_broker_is_embedded(r->broker) || F->proxy) return 0;
    return (F->net_down & 1) ? F->mock_hold_ms : (F->net_latency & 1) ? F->mock_latency_ms : 0;
}
/* the progress source writes its part through a run it was handed const */
sd_progress_run_t *sd_run_progress(const sd_run_t *r) { return (sd_progress_run_t *)&r->prog; }
int64_t sd_run_nseq(const sd_run_t *r) { return r->sends.nseq; }
const sd_seqs_t *sd_run_seqs(const sd_run_t *r) { return &r->sends.seqs; }
int64_t sd_run_max_event_time(const sd_run_t *r) { return r->sends.max_event_time; }
int64_t sd_run_messages(const sd_run_t *r) { return r->sends.messages; }
int64_t sd_run_sample_cost_ms(const sd_run_t *r) { return r->sampling.sample_cost_ms; }

const char *sd_run_side_topic(const sd_run_t *r, int *partitions) {
    if (partitions) *partitions = r->side.topic ? r->side.partitions : 0;
    return r->side.topic;
}

int sd_run_input_unread(const sd_run_t *r) {
    const sd_progress_run_t *P = &r->prog;
    if (!P->consumed || !P->last_offsets_mono) return -1;
    /* a second source whose offsets the commits do not name: its records
     * may be what the pipeline works on */
    int side_parts, side_reported = 0;
    if (sd_run_side_topic(r, &side_parts) && r->side.messages > 0) {
        for (int p = 0; P->side_consumed && p < side_parts; p++) side_reported |= P->side_consumed[p] >= 0;
        if (!side_reported) return -1;
        for (int p = 0; p < side_parts && p < SD_PRODUCER_MAX_PARTITIONS; p++)
            if (sd_producer_partition_end(r->side.producer, p) > (P->side_consumed[p] < 0 ? 0 : P->side_consumed[p])) return 1;
    }
    for (int p = 0; p < r->src.partitions && p < SD_PRODUCER_MAX_PARTITIONS; p++) {
        /* acknowledged records, plain or in a transaction that committed
         * (an open one is not for a read_committed reader yet) */
        int64_t end = sd_producer_partition_end(r->src.producer, p), from = P->consumed[p] < 0 ? 0 : P->consumed[p];
        if (r->txn.producer && r->txn.data_end[p] > end) end = r->txn.data_end[p];
        if (end > from) return 1;
    }
    /* sent and not acknowledged yet: the message count runs ahead (past
     * what transactions left open hold) */
    int64_t read = 0, held = 0;
    for (int p = 0; p < r->src.partitions; p++) read += P->consumed[p] < 0 ? 0 : P->consumed[p];
    for (int i = 0; i < r->txn.nopen; i++) held += r->txn.open_n[i];
    return r->sends.messages - held > read ? 1 : 0;
}

int64_t sd_run_data_end(const sd_run_t *r, int p) {
    if (!r->txn.producer || p < 0 || p >= SD_PRODUCER_MAX_PARTITIONS) return INT64_MAX;
    int64_t end = r->txn.data_end[p], plain = sd_producer_partition_end(r->src.producer, p);
    /* a transaction still open: its records are bound for the reader once
     * committed (one the broker aborts never counts) */
    for (int i = 0; i < r->txn.nopen; i++) {
        int64_t o = sd_producer_partition_end(r->txn.open[i], p);
        if (o > end) end = o;
    }
    return plain > end ? plain : end;
}
