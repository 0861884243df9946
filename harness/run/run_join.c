/* run_join.c - the runner's side of `model join` (result_join.c): the
 * scans the contract counts (each once, its key read from its own bytes),
 * the deliveries the ledger says were acknowledged (both without those
 * Kafka lost after acknowledging them: acked_lost), the judged sink's two
 * id columns, and the final watermark over both sources. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon.h"
#include "result.h"
#include "run_int.h"

typedef struct {
    sd_join_event_t *ev;
    int64_t n, cap;
    sd_buf_t keys;      /* NUL-separated; ev[i].key holds an offset until the end */
    int64_t newest;
} sd_join_side_t;

static void sd_join_push(sd_join_side_t *s, int64_t seq, int64_t t, const char *key, size_t keylen) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->ev = sd_util_xrealloc(s->ev, sizeof(*s->ev) * (size_t)s->cap);
    }
    s->ev[s->n++] = (sd_join_event_t){.seq = seq, .t_ms = t, .key = (const char *)(intptr_t)s->keys.len};
    sd_buf_append(&s->keys, key, keylen);
    sd_buf_putc(&s->keys, 0);
    if (t > s->newest) s->newest = t;
}

static void sd_join_fix(sd_join_side_t *s) {
    for (int64_t i = 0; i < s->n; i++) s->ev[i].key = s->keys.data + (intptr_t)s->ev[i].key;
}

typedef struct {
    sd_join_side_t *side;
    const uint8_t *lost;  /* by scan seq: every acknowledged copy of its delivery lost by Kafka (NULL: none) */
    int64_t nseq;
    uint8_t *seen;        /* by delivery seq: already on the side (a replayed delivery is one event) */
    int64_t nseen;
} sd_join_deliveries_t;

/* A delivery the contract does not send to the target (late, future or
 * malformed: `inject ... source=deliveries`) joins nothing: a row with it
 * is unexpected. */
static void sd_join_delivery(void *opaque, int64_t seq, int64_t t_ms, const char *key, const char *disp) {
    sd_join_deliveries_t *d = opaque;
    if (strcmp(disp, "target") || t_ms == INT64_MIN || seq < 0 || (d->lost && seq < d->nseq && d->lost[seq])) return;
    if (seq >= d->nseen) {
        int64_t n = seq * 2 + 64;
        d->seen = sd_util_xrealloc(d->seen, (size_t)n);
        memset(d->seen + d->nseen, 0, (size_t)(n - d->nseen));
        d->nseen = n;
    }
    if (d->seen[seq]) return;
    d->seen[seq] = 1;
    sd_join_push(d->side, seq, t_ms, key ? key : "", key ? strlen(key) : 0);
}

/* Deliveries Kafka acknowledged and no longer holds (the second source's
 * acked_lost, run_judge.c's rule): left out of the join's expected rows and
 * said in a warning. NULL when none, or on the embedded cluster. */
static uint8_t *sd_join_lost_deliveries(sd_run_t *r) {
    if (sd_broker_is_embedded(r->broker) || !r->side.topic || !r->sends.nseq || r->side.partitions <= 0) return NULL;
    int64_t *highs = sd_util_xcalloc((size_t)r->side.partitions, sizeof(int64_t));
    for (int p = 0; p < r->side.partitions; p++) {
        int64_t lo = 0, hi = 0;
        highs[p] = sd_broker_watermarks(r->broker, r->side.topic, p, &lo, &hi, NULL, 0) == SD_OK ? hi : INT64_MAX;
    }
    int64_t n;
    uint8_t *lost = sd_run_acked_lost_seqs(r, 1, highs, r->side.partitions, &n);
    free(highs);
    if (!lost) return NULL;
    char w[512];
    snprintf(w, sizeof(w), "Kafka lost %lld deliveries of topic %s after acknowledging them (the producer: %s); the join expects "
             "no row from them", (long long)n, r->side.topic, r->side.producer ? sd_producer_settings(r->side.producer) : "?");
    sd_ledger_warning(r->ledger, "acked-lost", w, NULL, 0);
    sd_run_say(r, "warning: %s", w);
    return lost;
}

typedef struct {
    sd_run_t *r;
    sd_join_row_t *rows;
    int64_t n, cap;
    sd_buf_t writers;
} sd_join_rows_t;

static int64_t sd_join_id(sd_run_t *r, const char *v, size_t len, int right) {
    int64_t seq;
    if (!v || !len || (len == 4 && !memcmp(v, "null", 4))) return -1;
    size_t tl = strlen(r->tag);
    if (right ? sd_events_delivery_id_parse(r->tag, tl, v, len, &seq) : sd_events_id_parse(r->tag, tl, v, len, &seq)) return -2;
    return seq;
}

static int sd_join_row(void *opaque, const char *const *vals, const size_t *lens) {
    sd_join_rows_t *m = opaque;
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 256;
        m->rows = sd_util_xrealloc(m->rows, sizeof(*m->rows) * (size_t)m->cap);
    }
    sd_join_row_t *row = &m->rows[m->n++];
    row->left = sd_join_id(m->r, vals[0], lens[0], 0);
    row->right = sd_join_id(m->r, vals[1], lens[1], 1);
    row->writer = NULL;
    if (vals[2]) {
        row->writer = (const char *)(intptr_t)m->writers.len;
        sd_buf_append(&m->writers, vals[2], strnlen(vals[2], lens[2] < 200 ? lens[2] : 200));
        sd_buf_putc(&m->writers, 0);
    }
    return 0;
}


static void sd_join_fmt_right(void *opaque, int64_t seq, char *out, size_t outlen) {
    char id[64];
    sd_events_delivery_id(((sd_run_t *)opaque)->src.events, seq, id);
    snprintf(out, outlen, "%s", id);
}

/* The counted scans: valid, to the target, acknowledged; each once. */
static sd_err_t sd_join_scans(sd_run_t *r, const char *key_field, sd_join_side_t *L, char *err, size_t errlen) {
    int64_t n = r->sends.nseq, *t = sd_run_event_times(r);
    sd_buf_t payload, key;
    sd_buf_init(&payload);
    sd_buf_init(&key);
    sd_err_t e = SD_OK;
    char kv[256];
    for (int64_t s = 0; s < n && !e; s++) {
        /* a late event the engine's own watermark had not passed when it
         * read it (run_late.c) may be joined or dropped: its rows pending */
        int late_maybe = r->sends.maybe_late && r->sends.maybe_late[s] && sd_seqs_kind(&r->sends.seqs, s) == SD_KIND_LATE;
        if ((sd_seqs_disp(&r->sends.seqs, s) != SD_DISP_TARGET && !late_maybe) || t[s] == INT64_MIN) continue;
        if (r->sends.acked_lost && r->sends.acked_lost[s]) continue; /* Kafka lost it: no pipeline could join it */
        int64_t natural = sd_events_time(r->src.events, s), et;
        if ((e = sd_events_render(r->src.events, s, t[s] == natural ? INT64_MIN : t[s], &payload, &key, &et, err, errlen))) break;
        int got = sd_sink_json_field(payload.data ? payload.data : "", payload.len, key_field, kv, sizeof(kv));
        sd_join_push(L, s, t[s], kv, got > 0 ? (size_t)got : 0);
        L->ev[L->n - 1].maybe_late = late_maybe;
    }
    sd_buf_free(&payload);
    sd_buf_free(&key);
    free(t);
    return e;
}

/* The maybe-late events (result_join.c): those whose event time lies
 * behind the watermark the messages handed to Kafka before them could set
 * (each source's newest event time, the older of the two, minus the
 * contract's watermark): an engine that read those first dropped them as
 * late. A copy's replay comes later, under a watermark no lower: the
 * first copy decides. */
typedef struct {
    int64_t top[2];    /* each source's newest event time so far */
    int64_t wm_ms;
    uint8_t *late[2];  /* by seq: 0 unseen, 1 maybe late, 2 on time */
    int64_t *at[2];    /* by seq: the first copy's place in the hand-over order of both */
    int64_t nseq[2], handed;
} sd_join_arrivals_t;

static void sd_join_arrival(void *opaque, int side, int64_t seq, int64_t t) {
    sd_join_arrivals_t *v = opaque;
    if (seq < 0) return;
    if (seq >= v->nseq[side]) {
        int64_t n = seq * 2 + 256;
        v->late[side] = sd_util_xrealloc(v->late[side], (size_t)n);
        memset(v->late[side] + v->nseq[side], 0, (size_t)(n - v->nseq[side]));
        v->at[side] = sd_util_xrealloc(v->at[side], sizeof(int64_t) * (size_t)n);
        v->nseq[side] = n;
    }
    v->handed++;
    int64_t wm = v->top[0] < v->top[1] ? v->top[0] : v->top[1];
    uint8_t *l = &v->late[side][seq];
    /* at the cut-off itself engines differ: Spark takes an event there as
     * late once its watermark is there, Flink and refjoin do not */
    if (!*l) {
        *l = wm != INT64_MIN && t <= wm - v->wm_ms ? 1 : 2;
        v->at[side][seq] = v->handed;
    }
    if (t > v->top[side]) v->top[side] = t;
}

static void sd_join_maybe_late(sd_run_t *r, sd_join_side_t *sides[2], int64_t nlate[2]) {
    sd_join_arrivals_t v = {.top = {INT64_MIN, INT64_MIN}, .wm_ms = r->sc->watermark_ms};
    sd_ledger_each_arrival(r->ledger, sd_join_arrival, &v);
    /* a stream-table join drops nothing as late: it looks the table up */
    int asof = r->sc->model.join_type == SD_JOIN_ASOF;
    for (int s = 0; s < 2; s++) {
        for (int64_t i = 0; i < sides[s]->n; i++) {
            int64_t q = sides[s]->ev[i].seq;
            int seen = q >= 0 && q < v.nseq[s] && v.late[s][q];
            sides[s]->ev[i].arrival = seen ? v.at[s][q] : INT64_MAX;
            if (sides[s]->ev[i].maybe_late) continue; /* a late event maybe kept (sd_join_scans): so it stays */
            sides[s]->ev[i].maybe_late = !asof && seen && v.late[s][q] == 1;
            nlate[s] += sides[s]->ev[i].maybe_late;
        }
        free(v.late[s]);
        free(v.at[s]);
    }
}

sd_err_t sd_run_judge_join(sd_run_t *r, sd_sink_t *sink, sd_recon_counts_t *c, char **detail, char *err, size_t errlen) {
    const struct sd_model_decl_s *md = &r->sc->model;
    sd_join_side_t L = {.newest = INT64_MIN}, R = {.newest = INT64_MIN};
    sd_buf_init(&L.keys);
    sd_buf_init(&R.keys);
    sd_err_t e = sd_join_scans(r, md->keys ? md->keys : "parcel_id", &L, err, errlen);
    uint8_t *lost = sd_join_lost_deliveries(r);
    sd_join_deliveries_t dd = {.side = &R, .lost = lost, .nseq = r->sends.nseq};
    sd_ledger_each_side(r->ledger, sd_join_delivery, &dd);
    free(lost);
    free(dd.seen);
    sd_join_fix(&L);
    sd_join_fix(&R);
    sd_join_side_t *sides[2] = {&L, &R};
    int64_t nlate[2] = {0, 0};
    sd_join_maybe_late(r, sides, nlate);
    if (nlate[0] || nlate[1]) {
        char w[512];
        snprintf(w, sizeof(w), "%lld scans and %lld deliveries reached Kafka after messages whose event times could put the "
                 "watermark past theirs: an engine that read those first drops them as late, one that did not joins them; the join "
                 "rows that rest on them are pending", (long long)nlate[0], (long long)nlate[1]);
        sd_ledger_warning(r->ledger, "maybe-late", w, NULL, 0);
        sd_run_say(r, "note: %s", w);
    }
    const char *names[3];
    char lc[130], rc[130];
    snprintf(lc, sizeof(lc), "?%s", md->left_col ? md->left_col : "event_id");
    snprintf(rc, sizeof(rc), "?%s", md->right_col ? md->right_col : "delivery_id");
    names[0] = lc;
    names[1] = rc;
    names[2] = "?sd_writer";
    sd_join_rows_t m = {.r = r};
    sd_buf_init(&m.writers);
    sd_buf_putc(&m.writers, 0);
    if (!e) e = sd_sink_scan_cols(sink, names, 3, sd_join_row, &m, err, errlen);
    if (!e) {
        for (int64_t i = 0; i < m.n; i++)
            if (m.rows[i].writer) m.rows[i].writer = m.writers.data + (intptr_t)m.rows[i].writer;
        /* the watermark over both sources: the older of the two */
        int64_t oldest = sd_ledger_oldest_partition_max(r->ledger);
        /* as-of: a delivery at or before the scan, however long before */
        int asof = md->join_type == SD_JOIN_ASOF;
        sd_join_conf_t conf = {.type = md->join_type, .lower_ms = asof ? INT64_MIN / 4 : 0, .upper_ms = asof ? 0 : md->within_ms, .grace_ms = md->grace_ms,
                               .final_wm = sd_join_final_wm(L.newest, R.newest, r->sc->watermark_ms),
                               .final_wm_low = oldest == INT64_MIN ? INT64_MIN : oldest - r->sc->watermark_ms,
                               .fmt_left = sd_run_fmt_id, .fmt_right = sd_join_fmt_right, .fmt_opaque = r};
        sd_result_t res;
        sd_result_join(&conf, L.ev, L.n, R.ev, R.n, m.rows, m.n, &res);
        c->observed_rows = m.n;
        c->groups_expected = res.groups_expected;
        c->groups_observed = res.groups_observed;
        c->groups_correct = res.n[SD_G_CORRECT];
        c->missing_group = res.n[SD_G_MISSING];
        c->unexpected_group = res.n[SD_G_UNEXPECTED];
        c->emitted_twice = res.n[SD_G_TWICE];
        c->emitted_early = res.n[SD_G_EARLY];
        c->groups_pending = res.n[SD_G_PENDING];
        c->null_for_matched = res.n[SD_G_NULL_MATCHED];
        e = sd_model_store_groups(r, sink->name, "scan,delivery", 1, &res, detail, err, errlen);
        static const char *const types[] = {"inner", "left outer", "full outer", "as-of"};
        sd_run_say(r, "model join (%s) on sink %s: %lld rows, %lld scans, %lld deliveries, %lld groups expected, %lld correct, "
                   "%lld missing, %lld unexpected, %lld null for a matched row, %lld written twice, %lld early, %lld pending",
                   types[md->join_type], sink->name, (long long)m.n, (long long)L.n, (long long)R.n, (long long)res.groups_expected,
                   (long long)res.n[SD_G_CORRECT], (long long)res.n[SD_G_MISSING], (long long)res.n[SD_G_UNEXPECTED],
                   (long long)res.n[SD_G_NULL_MATCHED], (long long)res.n[SD_G_TWICE], (long long)res.n[SD_G_EARLY],
                   (long long)res.n[SD_G_PENDING]);
        sd_result_free(&res);
    }
    free(m.rows);
    sd_buf_free(&m.writers);
    free(L.ev);
    free(R.ev);
    sd_buf_free(&L.keys);
    sd_buf_free(&R.keys);
    return e;
}
