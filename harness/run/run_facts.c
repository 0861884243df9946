/* run_facts.c - the judgement's facts, read from the ledger once and
 * shared by the judge (run_judge.c) and each model (run_model.c,
 * run_join.c): an event's ledger id, its event time and arrival rank as
 * sent, the events Kafka lost after acknowledging them, and the store of
 * a model's flagged groups. The models sit above this file and the judge
 * above them: nothing here calls up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result.h"
#include "run_int.h"

void sd_run_fmt_id(void *opaque, int64_t seq, char *out, size_t outlen) {
    sd_run_t *r = opaque;
    char id[64];
    sd_events_id(r->src.events, seq, id);
    snprintf(out, outlen, "%s", id);
}

typedef struct {
    uint8_t *marks;
    int64_t nseq;
} sd_acked_ctx_t;

/* per seq: bit 1 an acknowledgement Kafka still holds, bit 2 one it lost */
static void sd_run_mark_acked(void *opaque, int64_t s, int lost) {
    sd_acked_ctx_t *c = opaque;
    if (s >= 0 && s < c->nseq) c->marks[s] |= lost ? 2 : 1;
}

uint8_t *sd_run_acked_lost_seqs(sd_run_t *r, int side, const int64_t *ends, int nparts, int64_t *count) {
    *count = 0;
    if (sd_broker_is_embedded(r->broker) || !r->sends.nseq) return NULL;
    sd_acked_ctx_t c = {.marks = sd_util_xcalloc((size_t)r->sends.nseq, 1), .nseq = r->sends.nseq};
    sd_ledger_each_acked_lost(r->ledger, side, ends, nparts, sd_run_mark_acked, &c);
    for (int64_t s = 0; s < c.nseq; s++) {
        c.marks[s] = c.marks[s] == 2; /* every acknowledged copy lost */
        *count += c.marks[s];
    }
    if (!*count) {
        free(c.marks);
        return NULL;
    }
    return c.marks;
}

typedef struct {
    int64_t *t, *arrival, n, next;
} sd_model_times_t;

/* in the order the messages were sent: a seq's arrival rank is its last send */
static void sd_model_time(void *opaque, int64_t seq, int64_t t_ms) {
    sd_model_times_t *mt = opaque;
    if (seq < 0 || seq >= mt->n) return;
    mt->t[seq] = t_ms;
    mt->arrival[seq] = mt->next++;
}

int64_t sd_run_sent_at(const sd_run_t *r, int64_t seq) {
    /* the edges are appended in seq order */
    int64_t lo = 0, hi = r->sends.nwm_edges;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (r->sends.wm_edges[mid] / 2 < seq) lo = mid + 1;
        else hi = mid;
    }
    return lo < r->sends.nwm_edges && r->sends.wm_edges[lo] / 2 == seq ? r->sends.wm_edge_t[lo] : INT64_MIN;
}

int64_t *sd_run_event_times(sd_run_t *r) {
    int64_t n = r->sends.nseq ? r->sends.nseq : 1;
    int64_t *t = sd_util_xmalloc(sizeof(int64_t) * (size_t)n * 2);
    for (int64_t s = 0; s < r->sends.nseq; s++) t[s] = INT64_MIN;
    sd_model_times_t mt = {.t = t, .arrival = t + n, .n = r->sends.nseq};
    sd_ledger_each_event_time(r->ledger, sd_model_time, &mt);
    return t;
}

/* Store the flagged groups in run.db and the first ones of each bucket in detail[b]. */
sd_err_t sd_model_store_groups(sd_run_t *r, const char *sink, const char *keys_list, int latest, const sd_result_t *res, char **detail,
                               char *err, size_t errlen) {
    sd_err_t e;
    sd_ledger_group_t *rows = sd_util_xmalloc(sizeof(*rows) * (size_t)(res->nanomalies ? res->nanomalies : 1));
    char **texts = sd_util_xcalloc((size_t)(res->nanomalies ? res->nanomalies : 1) * 2, sizeof(char *));
    sd_buf_t per[SD_G__COUNT];
    int shown[SD_G__COUNT] = {0};
    for (int b = 0; b < SD_G__COUNT; b++) sd_buf_init(&per[b]);
    for (int64_t i = 0; i < res->nanomalies; i++) {
        const sd_result_group_t *g = &res->anomalies[i];
        sd_buf_t kb, bb;
        sd_buf_init(&kb);
        sd_buf_init(&bb);
        const char *kn = keys_list ? keys_list : "", *kv = g->keys;
        while (*kn) {
            size_t a = strcspn(kn, ","), b = strcspn(kv, "\x1f");
            sd_buf_printf(&kb, "%s%.*s=%.*s", kb.len ? " " : "", (int)a, kn, (int)b, kv);
            kn += a + (kn[a] == ',');
            kv += b + (kv[b] == '\x1f');
        }
        for (int b = 0; b < SD_G__COUNT; b++)
            if (g->flags & (1u << b)) {
                sd_buf_printf(&bb, "%s%s", bb.len ? "," : "", sd_gbucket_name((sd_gbucket_t)b));
                if (shown[b]++ < 3) sd_buf_printf(&per[b], "%s%s", per[b].len ? " | " : "", g->detail);
            }
        texts[2 * i] = sd_buf_steal(&kb);
        texts[2 * i + 1] = sd_buf_steal(&bb);
        rows[i] = (sd_ledger_group_t){.start_ms = latest ? INT64_MIN : g->start_ms, .keys = texts[2 * i] ? texts[2 * i] : "",
                                      .buckets = texts[2 * i + 1], .detail = g->detail};
    }
    for (int b = 0; b < SD_G__COUNT; b++) {
        if (shown[b] > 3) sd_buf_printf(&per[b], " | ... %d more", shown[b] - 3);
        detail[b] = sd_buf_steal(&per[b]);
    }
    e = sd_ledger_groups(r->ledger, sink, rows, res->nanomalies, err, errlen);
    for (int64_t i = 0; i < res->nanomalies * 2; i++) free(texts[i]);
    free(texts);
    free(rows);
    return e;
}
