/* run_send.c - the runner's sending: events get a seq and are staged,
 * recorded in the ledger (its writer thread commits them) and only then
 * handed to Kafka, in pipelined batches; pacing at a rate, background
 * production, draining delivery reports, and the produce step. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon.h"
#include "run_int.h"

typedef struct sd_run_staged_s {
    int64_t seq;
    const char *kind, *disp;
    size_t detail_off, key_off, value_off;   /* offsets into the arena, (size_t)-1 = none */
    size_t keylen, vlen;
    int64_t event_time;
    int null_value;
    int side;                                /* a delivery, for the second source */
    int as_read;                             /* bytes read back from the topic: never encoded again */
} sd_run_staged_t;

/* Room for the per-seq facts of n seqs in all. */
static void sd_run_reserve_seqs(sd_run_t *r, int64_t n) {
    if (n <= r->sends.capseq) return;
    r->sends.capseq = n;
    sd_seqs_reserve(&r->sends.seqs, r->sends.capseq);
    sd_stamps_reserve(&r->sends.sent, r->sends.capseq);
}

int64_t sd_run_new_seq(sd_run_t *r, int kind, int disp) {
    if (r->sends.nseq == r->sends.capseq) sd_run_reserve_seqs(r, r->sends.capseq ? r->sends.capseq * 2 : 4096);
    sd_stamps_add(&r->sends.sent, r->sends.nseq);
    sd_seqs_set(&r->sends.seqs, r->sends.nseq, kind, disp);
    return r->sends.nseq++;
}

/* A staged message whose value is in the arena already, at value_off. */
static void sd_run_stage_at(sd_run_t *r, int64_t seq, const char *kind, const char *disp, const char *detail, int64_t event_time,
                            const void *key, size_t keylen, size_t value_off, size_t vlen, int null_value) {
    if (r->staging.nstage == r->staging.capstage) {
        r->staging.capstage = r->staging.capstage ? r->staging.capstage * 2 : 1024;
        r->staging.stage = sd_util_xrealloc(r->staging.stage, sizeof(*r->staging.stage) * (size_t)r->staging.capstage);
    }
    sd_run_staged_t *m = &r->staging.stage[r->staging.nstage++];
    if (seq >= 0 && seq < r->sends.nseq) sd_seqs_add_send(&r->sends.seqs, seq, 1);
    m->side = 0;
    m->as_read = 0;
    m->seq = seq;
    m->kind = kind;
    m->disp = disp;
    m->event_time = event_time;
    m->null_value = null_value;
    m->detail_off = detail ? r->staging.arena.len : (size_t)-1;
    if (detail) sd_buf_append(&r->staging.arena, detail, strlen(detail) + 1);
    m->key_off = keylen ? r->staging.arena.len : (size_t)-1;
    m->keylen = keylen;
    if (keylen) sd_buf_append(&r->staging.arena, key, keylen);
    m->value_off = value_off;
    m->vlen = vlen;
}

void sd_run_stage(sd_run_t *r, int64_t seq, const char *kind, const char *disp, const char *detail, int64_t event_time,
                  const void *key, size_t keylen, const void *value, size_t vlen, int null_value) {
    size_t off = r->staging.arena.len;
    if (vlen) sd_buf_append(&r->staging.arena, value, vlen);
    sd_run_stage_at(r, seq, kind, disp, detail, event_time, key, keylen, off, vlen, null_value);
}

void sd_run_stage_as_read(sd_run_t *r, int64_t seq, const char *kind, const char *disp, const char *detail, const void *key,
                          size_t keylen, const void *value, size_t vlen) {
    sd_run_stage(r, seq, kind, disp, detail, INT64_MIN, key, keylen, value, vlen, value == NULL);
    r->staging.stage[r->staging.nstage - 1].as_read = 1;
}

void sd_run_stage_side(sd_run_t *r, int64_t dseq, const char *kind, const char *disp, const char *detail, int64_t t, int null_value) {
    sd_run_stage(r, dseq, kind, disp, detail, t, r->staging.key.data, r->staging.key.len, r->staging.payload.data,
                 r->staging.payload.len, null_value);
    r->staging.stage[r->staging.nstage - 1].side = 1;
    if (dseq < r->sends.nseq) sd_seqs_add_send(&r->sends.seqs, dseq, -1); /* a delivery is no copy of a scan */
}

void sd_run_stage_delivery(sd_run_t *r, int64_t dseq, int64_t t) { sd_run_stage_side(r, dseq, "delivery", "target", NULL, t, 0); }

void sd_run_stage_draft(sd_run_t *r, int64_t seq, const char *kind, const char *disp, const char *detail, int64_t event_time,
                        int keyed, int null_value) {
    const sd_buf_t *k = &r->staging.key, *v = &r->staging.payload;
    sd_run_stage(r, seq, kind, disp, detail, event_time, keyed ? k->data : NULL, keyed ? k->len : 0, v->data, v->len, null_value);
}

sd_buf_t *sd_run_draft_value(sd_run_t *r) { return &r->staging.payload; }
sd_buf_t *sd_run_draft_key(sd_run_t *r) { return &r->staging.key; }

sd_err_t sd_run_flush_if_full(sd_run_t *r, char *err, size_t errlen) {
    return r->staging.nstage >= SD_RUN_STAGE_FULL ? sd_run_flush(r, err, errlen) : SD_OK;
}

sd_events_t *sd_run_side_log(const sd_run_t *r, int64_t *next) {
    if (next) *next = r->side.next;
    return r->side.events;
}

/* the held queue is in seq order: everything from its head on waits */
int sd_run_delivery_held(const sd_run_t *r, int64_t dseq) { return r->side.held_n && dseq >= r->side.held[r->side.held_head].seq; }

/* Hand the oldest submitted batch to Kafka once the ledger has committed it. */
static sd_err_t sd_run_produce_oldest(sd_run_t *r, char *err, size_t errlen) {
    struct sd_run_subbatch_s *b = &r->staging.sub[r->staging.sub_head];
    sd_err_t e = sd_ledger_wait(r->ledger, b->ticket, err, errlen);
    int64_t now = sd_util_wall_ms();
    char id[64];
    for (int i = 0; i < b->n && !e; i++) {
        sd_run_staged_t *m = &b->stage[i];
        if (m->side) {
            sd_events_delivery_id(r->src.events, m->seq, id);
            e = sd_producer_send(r->side.producer, b->arena.data + m->key_off, m->keylen, m->null_value ? NULL : b->arena.data + m->value_off,
                                 m->vlen, id, b->ns[i], err, errlen);
            r->side.messages++;
            continue;
        }
        sd_events_id(r->src.events, m->seq, id);
        size_t vlen = m->vlen;
        const void *v = m->null_value ? NULL : b->arena.data + m->value_off;
        sd_err_t we = SD_OK;
        if (!m->as_read)
            v = sd_run_wire_value(r, m->kind, m->detail_off != (size_t)-1 ? b->arena.data + m->detail_off : NULL, v, &vlen, &we, err, errlen);
        if (!v && !m->null_value) {
            e = we ? we : SD_ERR_SCENARIO; /* SD_ERR_NOT_JUDGED: the JSON Schema check could not tell */
            break;
        }
        e = sd_producer_send(r->src.producer, m->keylen ? b->arena.data + m->key_off : NULL, m->keylen, v, vlen, id, b->ns[i], err,
                             errlen);
        r->sends.messages++;
        if (m->seq >= 0 && m->seq < r->sends.nseq) {
            int64_t rel = now - r->t0_wall;
            sd_stamps_set_once(&r->sends.sent, m->seq, rel < 0 ? 0 : rel >= UINT32_MAX ? UINT32_MAX - 1 : (uint32_t)rel);
        }
    }
    b->n = 0;
    sd_buf_reset(&b->arena);
    r->staging.sub_head = (r->staging.sub_head + 1) % SD_RUN_INFLIGHT;
    r->staging.sub_count--;
    if (e) sd_run_set_fatal(r, e, err);
    return e;
}

/* Record the staged messages in the ledger (its writer thread commits
 * them) and hand to Kafka the submitted batches the ledger has committed
 * since: rendering and SQLite overlap, and still no message reaches Kafka
 * before the ledger holds it. */
sd_err_t sd_run_submit(sd_run_t *r, char *err, size_t errlen) {
    sd_err_t e = SD_OK;
    if (r->staging.nstage) {
        if (r->staging.sub_count == SD_RUN_INFLIGHT && (e = sd_run_produce_oldest(r, err, errlen))) return e;
        int64_t now = sd_util_wall_ms();
        struct sd_run_subbatch_s *b = &r->staging.sub[(r->staging.sub_head + r->staging.sub_count) % SD_RUN_INFLIGHT];
        b->ns = sd_util_xrealloc(b->ns, sizeof(int64_t) * (size_t)r->staging.nstage);
        for (int i = 0; i < r->staging.nstage && !e; i++) {
            sd_run_staged_t *m = &r->staging.stage[i];
            sd_send_t s = {
                .seq = m->seq, .kind = m->kind, .disposition = m->disp,
                .detail = m->detail_off != (size_t)-1 ? r->staging.arena.data + m->detail_off : NULL,
                .event_time_ms = m->event_time,
                .key = NULL, .step = r->step, .side = m->side};
            if (m->keylen) { /* recorded as text: cut at a NUL it may hold */
                s.key = r->staging.arena.data + m->key_off;
                s.keylen = m->keylen;
            }
            e = sd_ledger_send(r->ledger, &s, now, &b->ns[i], err, errlen);
        }
        b->ticket = sd_ledger_submit(r->ledger);
        if (e) {
            r->staging.nstage = 0;
            sd_buf_reset(&r->staging.arena);
            sd_run_set_fatal(r, e, err);
            return e;
        }
        /* the staged batch moves into the ring; the slot's buffers are reused */
        struct sd_run_staged_s *st = b->stage;
        int cap = b->cap;
        sd_buf_t arena = b->arena;
        b->stage = r->staging.stage;
        b->cap = r->staging.capstage;
        b->n = r->staging.nstage;
        b->arena = r->staging.arena;
        r->staging.stage = st;
        r->staging.capstage = cap;
        r->staging.nstage = 0;
        r->staging.arena = arena;
        sd_buf_reset(&r->staging.arena);
        r->staging.sub_count++;
    }
    /* whatever the ledger has committed meanwhile goes to Kafka now */
    int64_t done = r->staging.sub_count ? sd_ledger_done(r->ledger) : 0;
    while (!e && r->staging.sub_count && r->staging.sub[r->staging.sub_head].ticket <= done) e = sd_run_produce_oldest(r, err, errlen);
    return e;
}

sd_err_t sd_run_flush(sd_run_t *r, char *err, size_t errlen) {
    sd_err_t e = sd_run_submit(r, err, errlen);
    while (!e && r->staging.sub_count) e = sd_run_produce_oldest(r, err, errlen);
    return e;
}

/* Warn as soon as the broker's low watermark passes data the run sent:
 * those events can no longer be read by a pipeline that is behind or that
 * restarts from an older position. */
static void sd_run_check_trim(sd_run_t *r) {
    /* not while the embedded cluster holds the harness's own requests:
     * the next drain asks */
    if (!r->broker || !r->src.partitions || sd_run_broker_rtt_ms(r)) return;
    if (!r->pipe.trim_warned) r->pipe.trim_warned = sd_util_xcalloc((size_t)r->src.partitions, sizeof(int64_t));
    for (int p = 0; p < r->src.partitions; p++) {
        int64_t lo = 0, hi = 0;
        if (sd_broker_watermarks(r->broker, r->src.topic, p, &lo, &hi, NULL, 0) || lo <= 0 || r->pipe.trim_warned[p]) continue;
        r->pipe.trim_warned[p] = lo;
        char w[512];
        snprintf(w, sizeof(w), "%s broker deleted the first %lld records of %s partition %d (of %lld sent): a pipeline that has not "
                 "read them, or restarts from before offset %lld, cannot; conclusions about them are withheld",
                 sd_broker_is_embedded(r->broker) ? "the embedded" : "the", (long long)lo, r->src.topic, p, (long long)hi, (long long)lo);
        sd_ledger_warning(r->ledger, "trimming", w, NULL, 0);
        sd_run_say(r, "warning: %s", w);
    }
}

sd_err_t sd_run_drain(sd_run_t *r, int64_t timeout_ms, char *err, size_t errlen) {
    sd_err_t e = sd_run_flush(r, err, errlen);
    if (e) return e;
    int64_t deadline = sd_util_mono_ms() + timeout_ms;
    for (;;) {
        sd_producer_stats_t st, side = {0};
        sd_producer_stats(r->src.producer, &st);
        if (r->side.producer) sd_producer_stats(r->side.producer, &side);
        if (side.inflight > 0 && sd_util_mono_ms() > deadline)
            return sd_err_set(err, errlen, SD_ERR_BROKER, "broker %s: %lld deliveries not acknowledged after %.1fs%s%s",
                              sd_broker_bootstrap(r->broker), (long long)side.inflight, (double)timeout_ms / 1000.0,
                              sd_producer_last_error(r->side.producer)[0] ? ": " : "", sd_producer_last_error(r->side.producer));
        if (side.inflight > 0) sd_producer_poll(r->side.producer, st.inflight > 0 ? 0 : 20, NULL, 0);
        if (st.inflight <= 0 && side.inflight <= 0) {
            sd_run_check_trim(r);
            return SD_OK;
        }
        if (sd_util_mono_ms() > deadline)
            return sd_err_set(err, errlen, SD_ERR_BROKER, "broker %s: %lld messages not acknowledged after %.1fs%s%s",
                              sd_broker_bootstrap(r->broker), (long long)st.inflight, (double)timeout_ms / 1000.0,
                              sd_producer_last_error(r->src.producer)[0] ? ": " : "", sd_producer_last_error(r->src.producer));
        if (st.inflight > 0) sd_producer_poll(r->src.producer, 20, NULL, 0);
        if ((e = sd_run_tick(r, 0, err, errlen))) return e;
    }
}

/* Make and stage one new event: valid (bound for the target), or of an
 * aborted transaction (never to be seen). */
/* deliveries lag=: scan seq's delivery (its scan at scan_t) joins the held
 * queue, due lag after now; the event loop sends it then. */
static void sd_run_side_hold(sd_run_t *r, int64_t seq, int64_t scan_t) {
    struct sd_run_side_s *s = &r->side;
    if (s->held_head + s->held_n == s->held_cap) {
        if (s->held_head) { /* slide the queue down before growing it */
            memmove(s->held, s->held + s->held_head, sizeof(*s->held) * (size_t)s->held_n);
            s->held_head = 0;
        }
        if (s->held_n == s->held_cap) {
            s->held_cap = s->held_cap ? s->held_cap * 2 : 256;
            s->held = sd_util_xrealloc(s->held, sizeof(*s->held) * (size_t)s->held_cap);
        }
    }
    int64_t due = sd_util_mono_ms() + r->sc->delivery_lag_ms;
    s->held[s->held_head + s->held_n++] = (struct sd_run_held_s){.seq = seq, .scan_t = scan_t, .due = due};
    r->bg.side_due = s->held[s->held_head].due; /* one lag for all: the queue's head is due first */
    if (!r->bg.serve) r->bg.serve = sd_run_background;
}

/* Send the held deliveries that are due: staged and flushed as any other
 * message, recorded in the ledger when sent. */
static sd_err_t sd_run_side_release(sd_run_t *r, char *err, size_t errlen) {
    struct sd_run_side_s *s = &r->side;
    int64_t now = sd_util_mono_ms(), n = 0;
    sd_err_t e = SD_OK;
    while (!e && s->held_n && s->held[s->held_head].due <= now) {
        struct sd_run_held_s h = s->held[s->held_head++];
        s->held_n--;
        int64_t dt;
        if (sd_events_delivery(r->src.events, h.seq, h.scan_t, &r->staging.payload, &r->staging.key, &dt)) {
            sd_run_stage_delivery(r, h.seq, dt);
            n++;
        }
        e = sd_run_flush_if_full(r, err, errlen);
    }
    if (!s->held_n) s->held_head = 0;
    r->bg.side_due = s->held_n ? s->held[s->held_head].due : INT64_MAX;
    if (!e && n) e = sd_run_flush(r, err, errlen);
    return e;
}

static sd_err_t sd_run_one_event_as(sd_run_t *r, int aborted, char *err, size_t errlen) {
    int64_t seq = sd_run_new_seq(r, aborted ? SD_KIND_ABORTED : SD_KIND_VALID, aborted ? SD_DISP_DROPPED : SD_DISP_TARGET);
    int64_t t, at = INT64_MIN, cut = 0;
    int off = -1;
    char det[96];
    if (r->sends.wm_edges_due > 0 && !aborted) { /* on the watermark's cut-off, then 1 ms inside it */
        off = 2 - r->sends.wm_edges_due--;
        cut = r->sends.max_event_time - r->sc->watermark_ms;
        at = cut + off;
        snprintf(det, sizeof(det), "edge: %s the watermark's cut-off (the newest event time sent minus %.0fs)",
                 off ? "1 ms inside" : "exactly on", (double)r->sc->watermark_ms / 1000.0);
    }
    /* rendered where it is staged: no copy */
    size_t off_arena = r->staging.arena.len;
    sd_buf_reset(&r->staging.key);
    sd_err_t e = sd_events_render_append(r->src.events, seq, at, &r->staging.arena, &r->staging.key, &t, err, errlen);
    if (e) return e;
    sd_run_stage_at(r, seq, aborted ? "aborted" : off >= 0 ? "edge" : "valid", aborted ? "dropped" : "target", off >= 0 ? det : NULL, t,
                    r->staging.key.data, r->staging.key.len, off_arena, r->staging.arena.len - off_arena, 0);
    if (off >= 0) {
        char id[64];
        sd_events_id(r->src.events, seq, id);
        if ((e = sd_ledger_edge(r->ledger, id, "source", sd_edge_name(SD_EDGE_WATERMARK), cut, off, err, errlen))) return e;
        if (!(r->sends.nwm_edges & 63)) {
            r->sends.wm_edges = sd_util_xrealloc(r->sends.wm_edges, sizeof(int64_t) * (size_t)(r->sends.nwm_edges + 64));
            r->sends.wm_edge_t = sd_util_xrealloc(r->sends.wm_edge_t, sizeof(int64_t) * (size_t)(r->sends.nwm_edges + 64));
        }
        r->sends.wm_edge_t[r->sends.nwm_edges] = t;
        r->sends.wm_edges[r->sends.nwm_edges++] = seq * 2 + off;
    }
    if (t != INT64_MIN && t > r->sends.max_event_time) r->sends.max_event_time = t;
    r->sends.valid_sent++;
    /* its delivery, if it has one, right behind it on the second source:
     * the generator's for this scan, or the log's next line */
    int64_t dt, dseq = seq;
    int have = 0;
    if (r->side.producer && r->side.events) {
        if (r->side.next < sd_events_available(r->side.events)) {
            dseq = r->side.next++;
            sd_err_t e = sd_events_render(r->side.events, dseq, INT64_MIN, &r->staging.payload, &r->staging.key, &dt, err, errlen);
            if (e) return e;
            char kv[256];
            const char *kf = r->sc->deliveries_key ? r->sc->deliveries_key : "parcel_id";
            int kn = sd_sink_json_field(r->staging.payload.data, r->staging.payload.len, kf, kv, sizeof(kv));
            sd_buf_reset(&r->staging.key);
            if (kn > 0) sd_buf_append(&r->staging.key, kv, (size_t)kn);
            have = 1;
        }
    } else if (r->side.producer && r->sc->delivery_lag_ms > 0) {
        /* lag=: held back, sent when due (sd_run_side_release) */
        if (sd_events_delivery(r->src.events, seq, t, &r->staging.payload, &r->staging.key, &dt)) sd_run_side_hold(r, seq, t);
    } else if (r->side.producer) {
        have = sd_events_delivery(r->src.events, seq, t, &r->staging.payload, &r->staging.key, &dt);
    }
    if (have) sd_run_stage_delivery(r, dseq, dt);
    return SD_OK;
}

static sd_err_t sd_run_one_event(sd_run_t *r, char *err, size_t errlen) {
    return sd_run_one_event_as(r, 0, err, errlen);
}

/* transaction.timeout.ms for a transaction `produce ... open=K` leaves
 * open: the broker aborts one open longer, fences its producer, and the
 * harness's commit fails. The longest the steps up to the next `resolve`
 * may take (each step's timeout; a sleep's is its length) or, with none,
 * those to the end and the settling before the judgement (the implicit
 * quiescence), plus a minute for the steps that outlast their timeout (a
 * restart's readiness); at most the broker's default
 * transaction.max.timeout.ms, 15 minutes, above which it refuses the
 * producer. 0 when the drill's `producer` lines or -X set it. */
static int64_t sd_run_open_txn_timeout_ms(const sd_run_t *r) {
    if (sd_kvlist_get(&r->sc->producer_props, "transaction.timeout.ms") ||
        (r->opts->xprops && sd_kvlist_get(r->opts->xprops, "transaction.timeout.ms")))
        return 0;
    int64_t ms = 60000;
    int i = r->step + 1;
    for (; i < r->sc->nsteps && r->sc->steps[i].kind != SD_STEP_RESOLVE; i++) ms += sd_util_scaled_ms(r->sc->steps[i].timeout_ms);
    if (i >= r->sc->nsteps) ms += sd_util_scaled_ms(60000);
    return ms < 900000 ? ms : 900000;
}

/* A transactional producer for the run's topic: transactional.id
 * streamdrill-TAG[-open-K], initialised; one for a transaction left open
 * gets sd_run_open_txn_timeout_ms. */
static sd_err_t sd_run_txn_producer(sd_run_t *r, int open_slot, sd_producer_t **out, char *err, size_t errlen) {
    sd_kvlist_t props = {0};
    const sd_kvlist_t *x = r->opts->xprops;
    for (int i = 0; x && i < x->n; i++) sd_kvlist_add(&props, x->v[i].key, x->v[i].value);
    char *tid = open_slot < 0 ? sd_util_fmt("streamdrill-%s", r->tag) : sd_util_fmt("streamdrill-%s-open-%d", r->tag, open_slot);
    sd_kvlist_add(&props, "transactional.id", tid);
    free(tid);
    if (open_slot >= 0 && (r->txn.open_timeout_ms = sd_run_open_txn_timeout_ms(r))) {
        char v[32];
        snprintf(v, sizeof(v), "%lld", (long long)r->txn.open_timeout_ms);
        sd_kvlist_add(&props, "transaction.timeout.ms", v);
    }
    sd_err_t e = sd_producer_new(sd_broker_bootstrap(r->broker), r->src.topic, &r->sc->producer_props, &props, r->ledger, out, err, errlen);
    sd_kvlist_free(&props);
    if (!e) e = sd_producer_txn_init(*out, sd_util_scaled_ms(30000), err, errlen);
    if (e && *out) {
        sd_producer_close(*out);
        *out = NULL;
    }
    return e;
}

/* A committed transaction of p moves where a read_committed reader's
 * records end, on the partitions it wrote to (past before[q], the ends
 * before it began; NULL: every partition it knows). */
static void sd_run_txn_moved_end(sd_run_t *r, sd_producer_t *p, const int64_t *before) {
    for (int q = 0; q < r->src.partitions && q < SD_PRODUCER_MAX_PARTITIONS; q++) {
        int64_t end = sd_producer_partition_end(p, q);
        if ((!before || end > before[q]) && end > r->txn.data_end[q]) r->txn.data_end[q] = end;
    }
}


/* produce N transactional [size=S] [abort=M] [open=K]: transactions of S
 * events through a transactional producer; M of them (spread over the
 * step) aborted, their events recorded as `aborted` before they are sent;
 * the last K left open, each on a producer of its own, until `resolve`.
 * Each transaction's events are in the ledger and acknowledged before it
 * ends. */
static sd_err_t sd_run_produce_txn(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    if (sd_broker_is_embedded(r->broker))
        return sd_err_set(err, errlen, SD_ERR_BROKER, "%s:%d: produce transactional needs a real broker (--brokers): the embedded cluster "
                          "does not hide aborted transactions from read_committed readers", r->sc->path, st->line);
    if (r->txn.nopen + st->send.txn_open > SD_MAX_OPEN_TXN)
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: produce transactional: at most %d transactions may be open at once (%d "
                          "already are; `resolve` commits them)", r->sc->path, st->line, SD_MAX_OPEN_TXN, r->txn.nopen);
    sd_err_t e = sd_run_drain(r, sd_util_scaled_ms(st->timeout_ms), err, errlen);
    if (!e && !r->txn.producer) e = sd_run_txn_producer(r, -1, &r->txn.producer, err, errlen);
    if (e) return e;
    int64_t txns = (st->send.count + st->send.txn_size - 1) / st->send.txn_size, closed = txns - st->send.txn_open;
    int64_t t0 = sd_util_mono_ms(), aborted = 0, aborted_events = 0, sent = 0;
    sd_producer_t *plain = r->src.producer;
    for (int64_t i = 0; i < txns && !e; i++) {
        int open = i >= closed;
        /* abort= spread evenly over the transactions that end in this step */
        int abort = !open && (i + 1) * st->send.txn_abort / (closed ? closed : 1) > i * st->send.txn_abort / (closed ? closed : 1);
        sd_producer_t *p = r->txn.producer;
        if (open && (e = sd_run_txn_producer(r, r->txn.open_slots++, &p, err, errlen))) break;
        int64_t before[SD_PRODUCER_MAX_PARTITIONS];
        for (int q = 0; q < r->src.partitions && q < SD_PRODUCER_MAX_PARTITIONS; q++) before[q] = sd_producer_partition_end(p, q);
        r->src.producer = p; /* this transaction's messages go through it */
        int64_t seq0 = r->sends.nseq;
        if (!(e = sd_producer_txn_begin(p, err, errlen))) {
            int64_t n = st->send.count - sent < st->send.txn_size ? st->send.count - sent : st->send.txn_size;
            for (int64_t k = 0; k < n && !e; k++) e = sd_run_one_event_as(r, abort, err, errlen);
            if (!e) e = sd_run_drain(r, sd_util_scaled_ms(st->timeout_ms), err, errlen);
            sent += n;
            if (!e && open) {
                r->txn.open[r->txn.nopen] = p;
                r->txn.open_seq[r->txn.nopen] = seq0;
                r->txn.open_n[r->txn.nopen++] = n;
                p = NULL;
            } else if (!e) {
                e = sd_producer_txn_end(p, !abort, sd_util_scaled_ms(30000), err, errlen);
                aborted += abort;
                aborted_events += abort ? n : 0;
            }
        }
        r->src.producer = plain;
        /* where a read_committed reader's records end: an aborted
         * transaction's records are never handed to it (librdkafka's
         * consumer then commits the offset after the last record before
         * them), and only the partitions this transaction wrote to move;
         * one left open counts while it is open and once committed
         * (sd_run_data_end, sd_run_resolve) */
        if (!abort && !open) sd_run_txn_moved_end(r, p, before);
        if (open && p) sd_producer_close(p);
    }
    r->src.producer = plain;
    if (e) {
        sd_run_set_fatal(r, e, err);
        return e;
    }
    char a[64], b[64];
    sd_events_id(r->src.events, r->sends.nseq - st->send.count, a);
    sd_events_id(r->src.events, r->sends.nseq - 1, b);
    snprintf(detail, dlen, "sent %lld events %s..%s in %lld transactions of up to %lld in %.2fs: %lld committed, %lld aborted (%lld "
             "events that must never reach the target), %lld left open", (long long)st->send.count, a, b, (long long)txns,
             (long long)st->send.txn_size, (double)(sd_util_mono_ms() - t0) / 1000.0, (long long)(closed - aborted), (long long)aborted,
             (long long)aborted_events, (long long)st->send.txn_open);
    if (st->send.txn_open && r->txn.open_timeout_ms) {
        size_t l = strlen(detail);
        snprintf(detail + l, dlen - l, " (transaction.timeout.ms=%lld: the steps up to their `resolve` may take that long)",
                 (long long)r->txn.open_timeout_ms);
    }
    r->quiet.last_data_step_mono = sd_util_mono_ms();
    return SD_OK;
}

/* An open transaction the broker aborted (its commit refused: the
 * producer fenced, or told to abort): its events are recorded as those of
 * an `abort=` transaction are, never to reach the target, and the run says
 * why. */
static sd_err_t sd_run_txn_aborted_by_broker(sd_run_t *r, int i, const char *why, char *err, size_t errlen) {
    int64_t lo = r->txn.open_seq[i], hi = lo + r->txn.open_n[i];
    char *d = sd_util_fmt("an open transaction of %lld events was aborted by the broker, not committed: %s (its events are recorded "
                          "as aborted, never to reach the target; the drill kept it open longer than its transaction.timeout.ms%s%s)",
                          (long long)r->txn.open_n[i], why, r->txn.open_timeout_ms ? ", set from the steps to 15 minutes at most" : "",
                          r->txn.open_timeout_ms ? "" : ", as the drill set it");
    sd_err_t e = sd_ledger_mark_aborted(r->ledger, lo, hi, "aborted by the broker: the transaction outlasted its timeout", err, errlen);
    for (int64_t s = lo; !e && s < hi && s < r->sends.nseq; s++) {
        if (sd_seqs_kind(&r->sends.seqs, s) != SD_KIND_VALID) continue;
        sd_seqs_recast(&r->sends.seqs, s, SD_KIND_ABORTED, SD_DISP_DROPPED);
        r->sends.valid_sent--;
    }
    if (!e) {
        sd_run_say(r, "%s", d);
        e = sd_ledger_warning(r->ledger, "open-transaction-aborted", d, err, errlen);
    }
    free(d);
    return e;
}

sd_err_t sd_run_resolve(sd_run_t *r, int64_t timeout_ms, char *detail, size_t dlen, char *err, size_t errlen) {
    int n = r->txn.nopen, lost = 0;
    int64_t events = 0, lost_events = 0;
    sd_err_t e = SD_OK;
    for (int i = 0; i < r->txn.nopen; i++) {
        if (!e) {
            e = sd_producer_txn_end(r->txn.open[i], 1, timeout_ms, err, errlen);
            if (e && sd_producer_txn_aborted(r->txn.open[i])) {
                char why[512];
                snprintf(why, sizeof(why), "%s", err);
                e = sd_run_txn_aborted_by_broker(r, i, why, err, errlen);
                lost++;
                lost_events += r->txn.open_n[i];
            } else {
                events += r->txn.open_n[i];
                if (!e) sd_run_txn_moved_end(r, r->txn.open[i], NULL);
            }
        }
        sd_producer_close(r->txn.open[i]);
        r->txn.open[i] = NULL;
    }
    r->txn.nopen = 0;
    if (e) return e;
    snprintf(detail, dlen, n ? "committed %d open transaction%s (%lld events)" : "no transaction was open", n - lost,
             n - lost == 1 ? "" : "s", (long long)events);
    if (lost) {
        size_t l = strlen(detail);
        snprintf(detail + l, dlen - l, "; %d aborted by the broker (%lld events, recorded as aborted)", lost, (long long)lost_events);
    }
    if (n) r->quiet.last_data_step_mono = sd_util_mono_ms();
    return SD_OK;
}

/* Background production (`produce N rate=R/s background`): every tick sends
 * what is due, so the next steps (a kill, a pause) run while events flow. */
sd_err_t sd_run_background(sd_run_t *r, char *err, size_t errlen) {
    if (r->bg.busy) return SD_OK;
    if (r->side.held_n && r->bg.side_due <= sd_util_mono_ms()) {
        r->bg.busy = 1;
        sd_err_t e = sd_run_side_release(r, err, errlen);
        r->bg.busy = 0;
        if (e) { sd_run_set_fatal(r, e, err); return e; }
    }
    if (!r->bg.active) return SD_OK;
    r->bg.busy = 1;
    sd_err_t e = SD_OK;
    int64_t now = sd_util_mono_ms();
    while (!e && r->bg.done < r->bg.total) {
        int64_t due = r->bg.t0 + (int64_t)((double)r->bg.done * 1000.0 / r->bg.rate);
        if (due > now) break;
        e = sd_run_one_event(r, err, errlen);
        r->bg.done++;
        if (!e) e = sd_run_flush_if_full(r, err, errlen);
    }
    if (!e) e = sd_run_flush(r, err, errlen);
    if (!e && r->bg.done >= r->bg.total) {
        r->bg.active = 0;
        r->quiet.last_data_step_mono = sd_util_mono_ms();
        char w[160];
        snprintf(w, sizeof(w), "background production of %lld events finished", (long long)r->bg.total);
        sd_run_say(r, "  %s", w);
    }
    r->bg.busy = 0;
    if (e) sd_run_set_fatal(r, e, err);
    return e;
}

/* Wait until background production is done (before a step that needs all
 * events sent: another produce, quiescence, reconciliation). */
sd_err_t sd_run_background_wait(sd_run_t *r, char *err, size_t errlen) {
    while (r->bg.active) {
        int64_t left = r->bg.t0 + (int64_t)((double)r->bg.total * 1000.0 / r->bg.rate) - sd_util_mono_ms();
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
    if (!e) e = sd_run_tick_until(r, due, err, errlen);
    return e;
}

sd_err_t sd_run_produce(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_err_t e;
    if ((e = sd_run_background_wait(r, err, errlen))) return e;
    int64_t avail = sd_events_available(r->src.events);
    if (r->sends.nseq + st->send.count > avail)
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: produce %lld: the events log has %lld events and %lld are used already",
                          r->sc->path, st->line, (long long)st->send.count, (long long)avail, (long long)r->sends.nseq);
    if (st->send.transactional) return sd_run_produce_txn(r, st, detail, dlen, err, errlen);
    int k = r->sc->model.kind;
    if (r->sc->edge_share > 0 && (k == SD_MODEL_WINDOWS || k == SD_MODEL_JOIN) && r->sc->events_kind != SD_EVENTS_LOG &&
        r->sends.max_event_time != INT64_MIN && st->send.count >= 2)
        r->sends.wm_edges_due = 2;
    /* room made once, not doubled on the way (up to 2^26 events ahead: more
     * is made as they come, as it always was) */
    sd_run_reserve_seqs(r, r->sends.nseq + (st->send.count < ((int64_t)1 << 26) ? st->send.count : ((int64_t)1 << 26)));
    int64_t t0 = sd_util_mono_ms();
    int64_t first = r->sends.nseq, wm0 = r->sends.nwm_edges;
    char a[64], b[64];
    if (st->send.background) {
        r->bg.active = 1;
        r->bg.total = st->send.count;
        r->bg.done = 0;
        r->bg.rate = st->send.rate;
        r->bg.t0 = t0;
        r->bg.serve = sd_run_background; /* served by the event loop from now on */
        sd_events_id(r->src.events, first, a);
        sd_events_id(r->src.events, first + st->send.count - 1, b);
        snprintf(detail, dlen, "sending %lld events %s..%s in the background at %.0f/s (%.1fs)", (long long)st->send.count, a, b,
                 st->send.rate, (double)st->send.count / st->send.rate);
        return sd_run_background(r, err, errlen);
    }
    for (int64_t i = 0; i < st->send.count; i++) {
        if ((e = sd_run_pace(r, t0, i, st->send.rate, err, errlen))) return e;
        if ((e = sd_run_one_event(r, err, errlen))) return e;
        if (r->staging.nstage >= SD_RUN_STAGE_FULL) {
            if ((e = sd_run_submit(r, err, errlen))) return e;
            if ((e = sd_run_tick(r, 0, err, errlen))) return e;
        }
    }
    if ((e = sd_run_drain(r, sd_util_scaled_ms(st->timeout_ms), err, errlen))) return e;
    double secs = (double)(sd_util_mono_ms() - t0) / 1000.0;
    sd_events_id(r->src.events, first, a);
    sd_events_id(r->src.events, r->sends.nseq - 1, b);
    snprintf(detail, dlen, "sent %lld events %s..%s in %.2fs (%.0f/s), all acknowledged%s", (long long)st->send.count, a, b, secs,
             secs > 0 ? (double)st->send.count / secs : 0.0,
             r->sends.nwm_edges > wm0 ? "; the first 2 on the watermark's cut-off and 1 ms inside it (edges)" : "");
    r->quiet.last_data_step_mono = sd_util_mono_ms();
    return SD_OK;
}
