/* progress.c - the progress interface (see progress.h): which source a
 * drill names, and the questions the runner and the injectors ask of it
 * (in flight, caught up, how long a batch takes). The batch state every
 * source feeds is progress_batch.c's. */
#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

int64_t sd_progress_expected_batch_ms(const sd_run_t *r, int64_t rows) {
    const sd_run_batches_t *b = &sd_run_progress(r)->bs;
    if (!b->nhist) return 0;
    if (rows <= 0) { /* size unknown (real-time intervals): the mean duration */
        int64_t sum = 0;
        for (int i = 0; i < b->nhist; i++) sum += b->hist_ms[i];
        return sum / b->nhist;
    }
    /* least squares of ms = a + b*rows; proportional when the rows never varied */
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < b->nhist; i++) {
        if (b->hist_rows[i] <= 0) continue; /* batches of unknown size */
        double x = (double)b->hist_rows[i], y = (double)b->hist_ms[i];
        n++; sx += x; sy += y; sxx += x * x; sxy += x * y;
    }
    if (n == 0) return sd_progress_expected_batch_ms(r, -1);
    double den = n * sxx - sx * sx;
    double slope, icpt;
    if (n >= 2 && den > 1e-9) {
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

int sd_progress_intervals(const sd_run_t *r) {
    sd_progress_run_t *P = sd_run_progress(r);
    return sd_run_sc(r)->spark_realtime || (P->ops && P->ops->intervals);
}

int sd_progress_in_flight(sd_run_t *r) {
    sd_progress_run_t *P = sd_run_progress(r);
    sd_progress_poll(r, NULL, 0);
    return P->bs.begun > P->bs.committed;
}

int sd_progress_caught_up(sd_run_t *r, char *why, size_t wlen) {
    sd_progress_run_t *P = sd_run_progress(r);
    if (!P->last_offsets_mono || !P->consumed) return -1;
    /* a Flink checkpoint's offsets prove nothing either way: its sink
     * commits after the checkpoint that holds them, its windows and joins
     * write when the watermark or an idle partition's timeout moves with no
     * new input, and a checkpoint behind the end is only the newest one (the
     * next comes on its interval) */
    if (sd_run_sc(r)->progress == SD_PROGRESS_FLINK) return -1;
    sd_sup_state_t st;
    sd_sup_state(sd_run_sup(r), &st);
    if (!st.running) return -1;
    /* the embedded cluster holds the harness's own requests in a blackhole
     * too: asking for the partitions' ends would stall the run (and the
     * blackhole's own end) until it lifts */
    if ((sd_run_faults(r)->net_down & 1) && sd_run_broker_rtt_ms(r)) {
        snprintf(why, wlen, "the embedded cluster holds every response in a network blackhole: the partitions' ends cannot be asked");
        return -1;
    }
    /* the deliveries too, when the pipeline reports them (a commit that
     * names none of their partitions reads another way: not judged here) */
    int side_reported = 0, side_parts;
    const char *side = sd_run_side_topic(r, &side_parts);
    for (int p = 0; P->side_consumed && p < side_parts; p++) side_reported |= P->side_consumed[p] >= 0;
    for (int p = 0; side_reported && p < side_parts; p++) {
        int64_t lo, hi;
        if (sd_broker_watermarks(sd_run_broker(r), side, p, &lo, &hi, NULL, 0)) return -1;
        if ((P->side_consumed[p] < 0 ? 0 : P->side_consumed[p]) < hi) {
            snprintf(why, wlen, "the pipeline's last committed batch ends at offset %lld of %s partition %d, which holds %lld",
                     (long long)(P->side_consumed[p] < 0 ? 0 : P->side_consumed[p]), side, p, (long long)hi);
            return 0;
        }
    }
    for (int p = 0; p < sd_run_partitions(r); p++) {
        int64_t lo, hi;
        if (sd_broker_watermarks(sd_run_broker(r), sd_run_topic(r), p, &lo, &hi, NULL, 0)) return -1;
        /* after transactions the partition ends in control records (a
         * commit or abort marker) and aborted records that no
         * read_committed reader is handed */
        int64_t end = sd_run_data_end(r, p);
        if (end < hi) hi = end;
        /* a partition that holds no record a read_committed reader is
         * given (only an aborted transaction's) needs no commit */
        if (hi > 0 && P->consumed[p] < hi) {
            const char *group = sd_progress_group_name(r);
            if (group && P->consumed[p] < 0)
                snprintf(why, wlen, "consumer group %s has committed nothing for partition %d, which holds %lld (does the "
                         "pipeline commit its offsets to that group?%s)", group, p, (long long)hi,
                         sd_broker_is_embedded(sd_run_broker(r)) ? " The embedded cluster drops offsets sent to a transaction: a "
                         "transactional pipeline needs a real broker, --brokers" : "");
            else if (group)
                snprintf(why, wlen, "consumer group %s has committed offset %lld of partition %d, which holds %lld", group,
                         (long long)P->consumed[p], p, (long long)hi);
            else
                snprintf(why, wlen, "the pipeline's last committed batch ends at offset %lld of partition %d, which holds %lld",
                         (long long)(P->consumed[p] < 0 ? 0 : P->consumed[p]), p, (long long)hi);
            return 0;
        }
    }
    return 1;
}

int64_t sd_progress_shortest_batch_ms(const sd_run_t *r) {
    sd_progress_run_t *P = sd_run_progress(r);
    int64_t m = 0;
    for (int i = 0; i < P->bs.nhist; i++)
        if (!m || P->bs.hist_ms[i] < m) m = P->bs.hist_ms[i];
    return m;
}

int64_t sd_progress_aim_ms(const sd_run_t *r, int64_t batch_rows, int misses) {
    int64_t aim;
    /* real-time intervals last as long as the trigger says, whatever they
     * hold: the middle of the intervals seen */
    if (sd_progress_intervals(r)) return (sd_progress_expected_batch_ms(r, -1) / 2) >> (misses >= 30 ? 30 : misses);
    /* a marker without rows=: what was sent past the newest commit */
    if (batch_rows <= 0) batch_rows = sd_progress_rows_pending(r);
    if (batch_rows > 0) {
        aim = sd_progress_expected_batch_ms(r, batch_rows) / 2;
    } else {
        aim = sd_progress_expected_batch_ms(r, -1) / 8;
        int64_t shortest = sd_progress_shortest_batch_ms(r);
        if (shortest > 0 && shortest / 8 < aim) aim = shortest / 8;
    }
    return misses >= 30 ? 0 : aim >> misses;
}

int sd_progress_landed_inside(const sd_run_t *r, int64_t batch, int graceful_signal, int64_t signal_mono, int *finished) {
    sd_progress_run_t *P = sd_run_progress(r);
    int committed = P->bs.committed >= batch;
    /* a graceful stop may finish the batch it interrupted: it was inside
     * when the signal came if the commit came after the signal */
    int graceful = committed && graceful_signal && signal_mono && P->bs.committed_mono >= signal_mono;
    if (finished) *finished = graceful;
    return !committed || graceful;
}

int sd_progress_landed_between(const sd_run_t *r, int64_t batch) {
    return sd_run_progress(r)->bs.begun <= batch;
}

/* The batch state of incarnation inc, from scratch. */
static void sd_progress_restart(sd_run_batches_t *b, int inc) {
    b->incarnation = inc;
    b->begun = b->committed = -1;
    b->begun_rows = -1;
    b->committed_sink_rows = -1;
    b->commits = 0;
}

void sd_progress_new_incarnation(sd_run_t *r, int inc, int64_t started_wall) {
    sd_progress_run_t *P = sd_run_progress(r);
    P->inc_started_wall = started_wall;
    /* what it found, to tell later whether it did anything */
    P->inc_events0 = P->bs.events;
    P->inc_rows0 = -1;
    if (sd_run_target(r) && sd_sink_count(sd_run_target(r), 1, &P->inc_rows0, NULL, 0) != SD_OK) P->inc_rows0 = -1;
    /* a sample at every start, even unchanged: the rows after it were
     * written by this incarnation (writers by growth, run_judge.c) */
    if (P->inc_rows0 >= 0) sd_ledger_sample(sd_run_ledger(r), P->inc_started_wall, sd_run_target(r)->name, P->inc_rows0, -1, NULL, 0);
    sd_progress_restart(&P->bs, inc);
    P->bs.committed_sink_rows = P->inc_rows0;
}

void sd_progress_follow(sd_run_t *r, int inc) {
    sd_run_batches_t *b = &sd_run_progress(r)->bs;
    if (b->incarnation != inc) sd_progress_restart(b, inc);
}

const sd_progress_ops_t *sd_progress_get(sd_progress_t kind) {
    switch (kind) {
    case SD_PROGRESS_MARKERS: return &sd_progress_markers;
    case SD_PROGRESS_SPARK: return &sd_progress_spark;
    case SD_PROGRESS_SINK: return &sd_progress_sink;
    case SD_PROGRESS_NONE: return &sd_progress_none;
    case SD_PROGRESS_GROUP: return &sd_progress_group;
    case SD_PROGRESS_FLINK: return &sd_progress_flink;
    }
    return &sd_progress_none;
}

/* The ports of a host:port list, for the readiness of pipelines that
 * print no SD-READY (sd_progress_connected_ready). */
static void sd_progress_note_ports(sd_progress_run_t *P, const char *list) {
    char *copy = sd_util_strdup(list), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t && P->nbroker_ports < 8; t = strtok_r(NULL, ",", &save)) {
        const char *colon = strrchr(t, ':');
        int port = colon ? atoi(colon + 1) : 0;
        if (port > 0 && port < 65536) P->broker_ports[P->nbroker_ports++] = port;
    }
    free(copy);
}

/* n offsets, each unknown yet */
static int64_t *sd_progress_unknown(int n) {
    int64_t *v = sd_util_xmalloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    for (int p = 0; p < n; p++) v[p] = -1;
    return v;
}

sd_err_t sd_progress_open(sd_run_t *r, char *err, size_t errlen) {
    sd_progress_run_t *P = sd_run_progress(r);
    if (sd_run_broker(r)) sd_progress_note_ports(P, sd_broker_bootstrap(sd_run_broker(r)));
    if (sd_run_faults(r)->proxy_listen) sd_progress_note_ports(P, sd_run_faults(r)->proxy_listen);
    int side_parts;
    if (sd_run_sc(r)->has_source) P->consumed = sd_progress_unknown(sd_run_partitions(r));
    if (sd_run_side_topic(r, &side_parts)) P->side_consumed = sd_progress_unknown(side_parts);
    P->ops = sd_progress_get(sd_run_sc(r)->progress);
    return P->ops->open ? P->ops->open(r, &P->source, err, errlen) : SD_OK;
}

void sd_progress_close(sd_run_t *r) {
    sd_progress_run_t *P = sd_run_progress(r);
    if (P->ops && P->ops->close && P->source) P->ops->close(P->source);
    P->source = NULL;
    free(P->consumed);
    free(P->side_consumed);
    P->consumed = P->side_consumed = NULL;
}

sd_err_t sd_progress_poll(sd_run_t *r, char *err, size_t errlen) {
    sd_progress_run_t *P = sd_run_progress(r);
    /* nothing is polled once run.db is closed (the run's close stops the pipeline after its judgement) */
    return sd_run_ledger(r) && P->ops && P->ops->poll ? P->ops->poll(r, err, errlen) : SD_OK;
}

sd_err_t sd_progress_refresh(sd_run_t *r, char *err, size_t errlen) {
    sd_progress_run_t *P = sd_run_progress(r);
    if (P->ops && P->ops->refresh) return P->ops->refresh(r, err, errlen);
    return sd_progress_poll(r, err, errlen);
}

int sd_progress_batch_ends(sd_run_t *r, const int64_t **ids, const int64_t **ends) {
    sd_progress_run_t *P = sd_run_progress(r);
    if (!P->ops || !P->ops->batch_ends || !P->source) return -1;
    return P->ops->batch_ends(r, ids, ends);
}

void sd_progress_context(sd_run_t *r, sd_buf_t *out) {
    sd_progress_run_t *P = sd_run_progress(r);
    if (P->ops && P->ops->context && P->source) P->ops->context(r, out);
}

int sd_progress_ready(sd_run_t *r, const sd_sup_state_t *st, int64_t up_ms) {
    return sd_run_progress(r)->ops->ready(r, st, up_ms);
}

void sd_progress_aiming(sd_run_t *r, int on) { sd_run_progress(r)->aiming = on; }

void sd_progress_engine_state(sd_run_t *r, int inc, const char *text) {
    const char *to = strncmp(text, "state ", 6) ? NULL : strchr(text + 6, ' ');
    if (!to || inc < sd_run_progress(r)->engine_inc) return;
    sd_run_progress(r)->engine_inc = inc;
    sd_run_progress(r)->engine_running = !strcmp(to + 1, "RUNNING");
}
