/* progress_batch.c - the batch state every progress source feeds (a batch
 * began or committed), the helpers they share (the target's row count, the
 * markers' readiness rule), and the sources that need no file of their own
 * (markers, sink, none). Below the sources and the interface: it calls
 * neither. */
#include "progress_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

/* A batch began or committed in incarnation inc: record it, and keep the
 * newest incarnation's batch state. The one path for markers and Spark. */
sd_err_t sd_progress_batch_event(sd_run_t *r, sd_sup_ev_type_t type, int inc, int64_t id, int64_t rows,
                                 const char *offsets, int64_t t_ms, char *err, size_t errlen) {
    int64_t now = sd_util_mono_ms();
    sd_progress_run_t *P = sd_run_progress(r);
    sd_run_batches_t *b = &P->bs;
    /* a commit's offsets say how far the pipeline has read: the rows of a
     * batch that did not say its size are how far the offsets moved */
    int64_t moved = -1;
    if (type == SD_SUP_EV_COMMIT && offsets && P->consumed) {
        char *save = NULL, *list = sd_util_strdup(offsets);
        moved = 0;
        for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            /* P:O for the source topic, TOPIC:P:O for another one (the deliveries) */
            char *c1 = strchr(tok, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            int p;
            long long o;
            if (c2) {
                *c1 = 0;
                int side_parts;
                const char *side = sd_run_side_topic(r, &side_parts);
                if (side && !strcmp(tok, side) && sscanf(c1 + 1, "%d:%lld", &p, &o) == 2 && p >= 0 && p < side_parts)
                    P->side_consumed[p] = o;
                continue;
            }
            if (sscanf(tok, "%d:%lld", &p, &o) == 2 && p >= 0 && p < sd_run_partitions(r)) {
                int64_t before = P->consumed[p] < 0 ? 0 : P->consumed[p];
                if (o > before) moved += o - before;
                P->consumed[p] = o;
            }
        }
        free(list);
        P->last_offsets_mono = now;
    }
    b->last_event_mono = now;
    b->events++;
    if (inc == b->incarnation) {
        if (type == SD_SUP_EV_BEGIN) {
            b->begun = id;
            b->begun_rows = rows;
            b->begun_mono = now;
            b->begun_with_incarnation = 0;
            /* what the target held when the batch began: a kill reports how
             * many of the batch's rows were visible when it landed. A
             * begin marker read late (a loaded host) finds some of them
             * written already; with one instance nothing is written
             * between a commit and the next batch, so the count at the
             * newest commit (or the incarnation's start) is the floor */
            b->begun_sink_rows = sd_progress_target_rows(r);
            if (b->committed_sink_rows >= 0 && b->begun_sink_rows > b->committed_sink_rows && sd_run_sc(r)->instances <= 1)
                b->begun_sink_rows = b->committed_sink_rows;
        } else {
            if (b->begun == id && b->begun_rows != 0 && !b->begun_with_incarnation) {
                int k = b->nhist < 32 ? b->nhist++ : (int)(b->events % 32);
                b->hist_rows[k] = b->begun_rows > 0 ? b->begun_rows : moved > 0 ? moved : -1;
                b->hist_ms[k] = now - b->begun_mono;
            }
            b->committed = id;
            b->committed_mono = now;
            b->commits++;
            b->committed_sink_rows = sd_run_sc(r)->instances <= 1 ? sd_progress_target_rows(r) : -1;
        }
    }
    return sd_ledger_batch(sd_run_ledger(r), inc, id, type == SD_SUP_EV_BEGIN ? "begin" : "commit", t_ms, rows,
                           type == SD_SUP_EV_COMMIT ? offsets : NULL, err, errlen);
}

int64_t sd_progress_rows_pending(const sd_run_t *r) {
    sd_progress_run_t *P = sd_run_progress(r);
    if (!P->consumed || !P->last_offsets_mono) return -1;
    int64_t read = 0;
    for (int p = 0; p < sd_run_partitions(r); p++) read += P->consumed[p] < 0 ? 0 : P->consumed[p];
    return sd_run_messages(r) > read ? sd_run_messages(r) - read : -1;
}

int64_t sd_progress_target_rows(sd_run_t *r) {
    int64_t rows = -1;
    if (sd_run_target(r) && sd_run_sample_cost_ms(r) <= 20 && sd_sink_count(sd_run_target(r), 1, &rows, NULL, 0) != SD_OK) rows = -1;
    return rows;
}

/* ---- the sources without a file of their own ---- */

/* markers: SD-READY, or the first batch marker, or a connection to the
 * broker. A pipeline that prints markers but no SD-READY prints nothing
 * before data flows: it is ready once its process group holds a TCP
 * connection to the broker (or the proxy) and has been up for a second
 * (time to subscribe or assign). Once a pipeline was found ready that way,
 * the harness stops waiting for an SD-READY it does not print: later
 * incarnations are ready as soon as they connect. */
int sd_progress_connected_ready(sd_run_t *r, const sd_sup_state_t *st, int64_t up_ms) {
    sd_progress_run_t *P = sd_run_progress(r);
    if (st->ready || P->bs.begun >= 0 || P->bs.committed >= 0) return 1;
    if (!P->nbroker_ports || up_ms < (P->no_ready_marker ? 0 : sd_util_scaled_ms(1000))) return 0;
    int64_t now = sd_util_mono_ms();
    if (now < P->next_connect_check_mono) return 0;
    P->next_connect_check_mono = now + 100;
    if (sd_sup_connected(sd_run_sup(r), P->broker_ports, P->nbroker_ports) != 1) return 0;
    P->no_ready_marker = 1;
    return 1;
}

/* sink, none: nothing reports readiness; still up after 2 s is ready */
static int sd_grace_ready(sd_run_t *r, const sd_sup_state_t *st, int64_t up_ms) {
    (void)r; (void)st;
    return up_ms >= sd_util_scaled_ms(2000);
}

const sd_progress_ops_t sd_progress_markers = {.name = "markers", .batches = 1, .ready = sd_progress_connected_ready,
                                               .not_ready = "printed no SD-READY"};
const sd_progress_ops_t sd_progress_sink = {.name = "sink", .batches = 0, .ready = sd_grace_ready};
const sd_progress_ops_t sd_progress_none = {.name = "none", .batches = 0, .ready = sd_grace_ready};

int64_t sd_progress_open_records(sd_run_t *r, int *in_own) {
    if (in_own) *in_own = 0;
    int64_t t = sd_run_target(r) ? sd_sink_pending(sd_run_target(r)) : -1;
    if (t > 0) return t;
    const sd_progress_ops_t *ops = sd_run_progress(r)->ops;
    int64_t own = ops && ops->open_records ? ops->open_records(r) : -1;
    if (own > 0 && in_own) *in_own = 1;
    return own > 0 ? own : t == 0 || own == 0 ? 0 : -1;
}
