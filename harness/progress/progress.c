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
    const sd_run_batches_t *b = &r->pipe.bs;
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
    return r->sc->spark_realtime || (r->pipe.progress && r->pipe.progress->intervals);
}

int sd_progress_in_flight(sd_run_t *r) {
    sd_progress_poll(r, NULL, 0);
    return r->pipe.bs.begun > r->pipe.bs.committed;
}

int sd_progress_caught_up(sd_run_t *r, char *why, size_t wlen) {
    if (!r->pipe.last_offsets_mono || !r->pipe.consumed) return -1;
    /* a Flink checkpoint's offsets prove nothing either way: its sink
     * commits after the checkpoint that holds them, its windows and joins
     * write when the watermark or an idle partition's timeout moves with no
     * new input, and a checkpoint behind the end is only the newest one (the
     * next comes on its interval) */
    if (r->sc->progress == SD_PROGRESS_FLINK) return -1;
    sd_sup_state_t st;
    sd_sup_state(r->sup, &st);
    if (!st.running) return -1;
    /* the deliveries too, when the pipeline reports them (a commit that
     * names none of their partitions reads another way: not judged here) */
    int side_reported = 0;
    for (int p = 0; r->side.consumed && p < r->side.partitions; p++) side_reported |= r->side.consumed[p] >= 0;
    for (int p = 0; side_reported && p < r->side.partitions; p++) {
        int64_t lo, hi;
        if (sd_broker_watermarks(r->broker, r->side.topic, p, &lo, &hi, NULL, 0)) return -1;
        if ((r->side.consumed[p] < 0 ? 0 : r->side.consumed[p]) < hi) {
            snprintf(why, wlen, "the pipeline's last committed batch ends at offset %lld of %s partition %d, which holds %lld",
                     (long long)(r->side.consumed[p] < 0 ? 0 : r->side.consumed[p]), r->side.topic, p, (long long)hi);
            return 0;
        }
    }
    for (int p = 0; p < r->partitions; p++) {
        int64_t lo, hi;
        if (sd_broker_watermarks(r->broker, r->topic, p, &lo, &hi, NULL, 0)) return -1;
        if (r->txn.producer && p < SD_PRODUCER_MAX_PARTITIONS) {
            /* after transactions the partition ends in control records (a
             * commit or abort marker) that no reader is handed: the data
             * ends after the newest record the harness had acknowledged */
            int64_t end = r->txn.data_end[p], plain = sd_producer_partition_end(r->producer, p);
            if (plain > end) end = plain;
            if (end < hi) hi = end;
        }
        if (r->pipe.consumed[p] < hi) {
            const char *group = sd_progress_group_name(r);
            if (group && r->pipe.consumed[p] < 0)
                snprintf(why, wlen, "consumer group %s has committed nothing for partition %d, which holds %lld (does the "
                         "pipeline commit its offsets to that group?)", group, p, (long long)hi);
            else if (group)
                snprintf(why, wlen, "consumer group %s has committed offset %lld of partition %d, which holds %lld", group,
                         (long long)r->pipe.consumed[p], p, (long long)hi);
            else
                snprintf(why, wlen, "the pipeline's last committed batch ends at offset %lld of partition %d, which holds %lld",
                         (long long)(r->pipe.consumed[p] < 0 ? 0 : r->pipe.consumed[p]), p, (long long)hi);
            return 0;
        }
    }
    return 1;
}

int64_t sd_progress_shortest_batch_ms(const sd_run_t *r) {
    int64_t m = 0;
    for (int i = 0; i < r->pipe.bs.nhist; i++)
        if (!m || r->pipe.bs.hist_ms[i] < m) m = r->pipe.bs.hist_ms[i];
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
    int committed = r->pipe.bs.committed >= batch;
    /* a graceful stop may finish the batch it interrupted: it was inside
     * when the signal came if the commit came after the signal */
    int graceful = committed && graceful_signal && signal_mono && r->pipe.bs.committed_mono >= signal_mono;
    if (finished) *finished = graceful;
    return !committed || graceful;
}

int sd_progress_landed_between(const sd_run_t *r, int64_t batch) {
    return r->pipe.bs.begun <= batch;
}

void sd_progress_new_incarnation(sd_run_t *r, int inc) {
    /* what it found, to tell later whether it did anything */
    r->pipe.inc_events0 = r->pipe.bs.events;
    r->pipe.inc_rows0 = -1;
    if (r->sink.target && sd_sink_count(r->sink.target, 1, &r->pipe.inc_rows0, NULL, 0) != SD_OK) r->pipe.inc_rows0 = -1;
    /* a sample at every start, even unchanged: the rows after it were
     * written by this incarnation (writers by growth, run_judge.c) */
    if (r->pipe.inc_rows0 >= 0) sd_ledger_sample(r->ledger, r->pipe.inc_started_wall, r->sink.target->name, r->pipe.inc_rows0, -1, NULL, 0);
    r->pipe.bs.incarnation = inc;
    r->pipe.bs.begun = r->pipe.bs.committed = -1;
    r->pipe.bs.begun_rows = -1;
    r->pipe.bs.commits = 0;
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

sd_err_t sd_progress_open(sd_run_t *r, char *err, size_t errlen) {
    r->pipe.progress = sd_progress_get(r->sc->progress);
    return r->pipe.progress->open ? r->pipe.progress->open(r, &r->pipe.source, err, errlen) : SD_OK;
}

void sd_progress_close(sd_run_t *r) {
    if (r->pipe.progress && r->pipe.progress->close && r->pipe.source) r->pipe.progress->close(r->pipe.source);
    r->pipe.source = NULL;
}

sd_err_t sd_progress_poll(sd_run_t *r, char *err, size_t errlen) {
    /* nothing is polled once run.db is closed (the run's close stops the pipeline after its judgement) */
    return r->ledger && r->pipe.progress && r->pipe.progress->poll ? r->pipe.progress->poll(r, err, errlen) : SD_OK;
}

sd_err_t sd_progress_refresh(sd_run_t *r, char *err, size_t errlen) {
    if (r->pipe.progress && r->pipe.progress->refresh) return r->pipe.progress->refresh(r, err, errlen);
    return sd_progress_poll(r, err, errlen);
}

int sd_progress_batch_ends(sd_run_t *r, const int64_t **ids, const int64_t **ends) {
    if (!r->pipe.progress || !r->pipe.progress->batch_ends || !r->pipe.source) return -1;
    return r->pipe.progress->batch_ends(r, ids, ends);
}

void sd_progress_context(sd_run_t *r, sd_buf_t *out) {
    if (r->pipe.progress && r->pipe.progress->context && r->pipe.source) r->pipe.progress->context(r, out);
}

int sd_progress_ready(sd_run_t *r, const sd_sup_state_t *st, int64_t up_ms) {
    return r->pipe.progress->ready(r, st, up_ms);
}
