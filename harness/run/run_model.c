/* run_model.c - the runner's side of the result models (result.h), one
 * ops struct each (sd_models): gather every event a model needs from the
 * ledger (event time as sent, key fields and value read from the event's
 * own bytes, how many times it must count under the contract, the
 * tombstones), read the judged sink's named columns, run the model, and
 * store its counts and anomalous groups. Windows and latest are judged
 * here, rows' fields further down, joins in run_join.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon.h"
#include "result.h"
#include "run_int.h"

static sd_err_t sd_run_judge_table(sd_run_t *r, sd_sink_t *sink, sd_recon_counts_t *c, char **detail, char *err, size_t errlen);
static sd_err_t sd_run_judge_fields(sd_run_t *r, sd_sink_t *sink, sd_recon_counts_t *c, char **detail, char *err, size_t errlen);

/* By model.kind (sd_model_kind_t): SD_MODEL_WINDOWS first. */
static const sd_model_ops_t sd_models[] = {
    {.name = "windows", .groups = 1, .judge = sd_run_judge_table},
    {.name = "latest", .groups = 1, .judge = sd_run_judge_table},
    {.name = "rows", .groups = 0, .judge = sd_run_judge_fields},
    {.name = "join", .groups = 1, .judge = sd_run_judge_join},
};

const sd_model_ops_t *sd_run_model_for(const sd_run_t *r, const sd_sink_t *sink) {
    int k = r->sc->model.kind;
    if (k < SD_MODEL_WINDOWS || k > SD_MODEL_JOIN) return NULL;
    return strcmp(sink->name, r->sc->model.sink ? r->sc->model.sink : "target") ? NULL : &sd_models[k - SD_MODEL_WINDOWS];
}


/* The sent events that probe an edge (events.h) into run.db edge, and a
 * line saying how many of each kind: the drill's edges were probed. */
void sd_run_record_edges(sd_run_t *r) {
    int64_t n[SD_EDGE_TIE + 1][3] = {{0}};
    char id[64];
    sd_edge_t e;
    int k = r->sc->model.kind;
    if (r->sc->edge_share <= 0 || (k != SD_MODEL_WINDOWS && k != SD_MODEL_JOIN && k != SD_MODEL_LATEST)) return;
    /* an event sent at another time than its own (injected: late, out of
     * order, on an edge by `inject edges=`) probes no generated edge */
    int64_t *t = sd_run_event_times(r);
    for (int64_t s = 0; s < r->sends.nseq; s++) {
        if (sd_seqs_disp(&r->sends.seqs, s) == SD_RECON_UNSENT || t[s] != sd_events_time(r->src.events, s)) continue;
        if (sd_events_edge(r->src.events, s, &e)) {
            sd_events_id(r->src.events, s, id);
            sd_ledger_edge(r->ledger, id, "source", sd_edge_name(e.kind), e.at_ms, e.offset_ms, NULL, 0);
            n[e.kind][e.offset_ms + 1]++;
        }
        int held = sd_run_delivery_held(r, s); /* lag=: not sent */
        if (r->side.producer && !r->side.events && !held && sd_events_delivery_edge(r->src.events, s, &e)) {
            sd_events_delivery_id(r->src.events, s, id);
            sd_ledger_edge(r->ledger, id, "deliveries", sd_edge_name(e.kind), e.at_ms, e.offset_ms, NULL, 0);
            n[e.kind][e.offset_ms + 1]++;
        }
    }
    sd_buf_t b;
    sd_buf_init(&b);
    for (int k = SD_EDGE_WINDOW; k <= SD_EDGE_JOIN_UPPER; k++)
        if (n[k][0] + n[k][1] + n[k][2])
            sd_buf_printf(&b, "%s%lld on a %s, %lld 1 ms before, %lld 1 ms after", b.len ? "; " : "", (long long)n[k][1],
                          sd_edge_name((sd_edge_kind_t)k), (long long)n[k][0], (long long)n[k][2]);
    if (n[SD_EDGE_TIE][1])
        sd_buf_printf(&b, "%s%lld scans with the key and event time of the scan before them", b.len ? "; " : "", (long long)n[SD_EDGE_TIE][1]);
    int64_t wm[2] = {0, 0};
    for (int64_t i = 0; i < r->sends.nwm_edges; i++) wm[r->sends.wm_edges[i] % 2]++;
    if (wm[0] + wm[1])
        sd_buf_printf(&b, "%s%lld on the watermark's cut-off, %lld 1 ms inside it", b.len ? "; " : "", (long long)wm[0], (long long)wm[1]);
    if (b.len) sd_run_say(r, "edges probed (run.db edge): %s", b.data);
    sd_buf_free(&b);
    free(t);
}

/* Comma list -> its fields joined by '\x1f' from a payload. */
static void sd_model_join(const char *payload, size_t len, const char *list, sd_buf_t *out) {
    char buf[256];
    int first = 1;
    for (const char *k = list ? list : ""; *k;) {
        size_t n = strcspn(k, ",");
        char name[128];
        snprintf(name, sizeof(name), "%.*s", (int)(n < sizeof(name) ? n : sizeof(name) - 1), k);
        int got = sd_sink_json_field(payload, len, name, buf, sizeof(buf));
        if (!first) sd_buf_putc(out, '\x1f');
        first = 0;
        if (got >= 0) sd_buf_append(out, buf, (size_t)got);
        k += n + (k[n] == ',');
    }
}

/* The key fields (comma list) of a payload joined by '\x1f', and the value. */
static void sd_model_fields(const char *payload, size_t len, const char *keys, const char *value, sd_buf_t *out,
                            sd_result_event_t *x) {
    char buf[256];
    sd_model_join(payload, len, keys, out);
    x->has_value = 0;
    x->value = 0;
    x->ivalue = 0;
    x->is_int = 0;
    int got;
    if (value && (got = sd_sink_json_field(payload, len, value, buf, sizeof(buf))) >= 0)
        x->has_value = sd_result_num(buf, (size_t)got, &x->value, &x->ivalue, &x->is_int);
}

typedef struct {
    sd_result_row_t *rows;
    int64_t n, cap, unreadable;
    sd_buf_t keys;        /* joined keys, NUL-separated; rows[i].keys holds an offset until the scan ends */
    sd_buf_t writers;
    sd_buf_t fields;      /* latest: joined fields, NUL-separated, offsets like keys */
    int nkeys, nfields;   /* nfields > 0: latest (keys, fields, writer) instead of windows */
} sd_model_rows_t;

static void sd_model_join_vals(sd_buf_t *b, const char *const *vals, const size_t *lens, int n) {
    for (int k = 0; k < n; k++) {
        if (k) sd_buf_putc(b, '\x1f');
        /* a value with a NUL or the separator in it stays unequal to every event's */
        if (vals[k]) sd_buf_append(b, vals[k], strnlen(vals[k], lens[k]));
    }
    sd_buf_putc(b, 0);
}

static void sd_model_writer(sd_model_rows_t *m, sd_result_row_t *row, const char *w, size_t len) {
    row->writer = w ? (const char *)(intptr_t)m->writers.len : NULL; /* an offset, never 0 (the buffer starts with a NUL) */
    if (w) {
        sd_buf_append(&m->writers, w, strnlen(w, len < 200 ? len : 200));
        sd_buf_putc(&m->writers, 0);
    }
}

static sd_result_row_t *sd_model_new_row(sd_model_rows_t *m) {
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 256;
        m->rows = sd_util_xrealloc(m->rows, sizeof(*m->rows) * (size_t)m->cap);
    }
    sd_result_row_t *row = &m->rows[m->n++];
    memset(row, 0, sizeof(*row));
    return row;
}

static int sd_model_row(void *opaque, const char *const *vals, const size_t *lens) {
    sd_model_rows_t *m = opaque;
    if (m->nfields) {
        sd_result_row_t *row = sd_model_new_row(m);
        row->keys = (const char *)(intptr_t)m->keys.len;
        sd_model_join_vals(&m->keys, vals, lens, m->nkeys);
        row->fields = (const char *)(intptr_t)m->fields.len;
        sd_model_join_vals(&m->fields, vals + m->nkeys, lens + m->nkeys, m->nfields);
        sd_model_writer(m, row, vals[m->nkeys + m->nfields], lens[m->nkeys + m->nfields]);
        return 0;
    }
    int64_t start;
    if (sd_result_parse_start(vals[0], lens[0], &start)) {
        m->unreadable++;
        return 0;
    }
    sd_result_row_t *row = sd_model_new_row(m);
    row->start_ms = start;
    row->keys = (const char *)(intptr_t)m->keys.len;
    sd_model_join_vals(&m->keys, vals + 1, lens + 1, m->nkeys);
    for (int a = 0; a < 5; a++) {
        const char *v = vals[1 + m->nkeys + a];
        if (!v) continue;
        row->has[a] = (uint8_t)sd_result_num(v, strnlen(v, lens[1 + m->nkeys + a]), &row->v[a], &row->iv[a], &row->is_int[a]);
    }
    sd_model_writer(m, row, vals[1 + m->nkeys + 5], lens[1 + m->nkeys + 5]);
    return 0;
}

typedef struct {
    sd_result_event_t *ev;
    int64_t *nev, cap, *keyoff, *fieldoff;
    const int64_t *arrival;
    sd_buf_t *keys, *fields;
} sd_model_dels_t;

static void sd_model_delete(void *opaque, int64_t seq, const char *key) {
    sd_model_dels_t *dc = opaque;
    if (seq < 0 || seq >= dc->cap || *dc->nev >= dc->cap) return;
    int64_t i = (*dc->nev)++;
    sd_result_event_t *x = &dc->ev[i];
    memset(x, 0, sizeof(*x));
    x->seq = seq;
    x->del = 1;
    x->arrival = x->rank = dc->arrival[seq];
    dc->keyoff[i] = (int64_t)dc->keys->len;
    if (key) sd_buf_puts(dc->keys, key);
    sd_buf_putc(dc->keys, 0);
    dc->fieldoff[i] = (int64_t)dc->fields->len;
    sd_buf_putc(dc->fields, 0);
}

/* which clock closed the windows (sd_model_clock_t), as the drill asked or
 * its progress source implies, for the console */
static const char *const sd_clock_said[] = {"", " (one watermark)", " (the oldest partition's watermark)", " (each task's stream time)"};

/* Judge sink by the scenario's model; fills the group counts of c, stores
 * the anomalous groups, and sets detail[b] (caller frees) to the first
 * groups of each bucket. */
static sd_err_t sd_run_judge_table(sd_run_t *r, sd_sink_t *sink, sd_recon_counts_t *c, char **detail, char *err, size_t errlen) {
    const struct sd_model_decl_s *md = &r->sc->model;
    int64_t n = r->sends.nseq;
    int64_t *t = sd_run_event_times(r), *arrival = t + (n ? n : 1);
    int latest = md->kind == 2;
    /* the events, with their key fields read from their own bytes */
    sd_result_event_t *ev = sd_util_xcalloc((size_t)(n ? n : 1), sizeof(*ev));
    int64_t nev = 0, *keyoff = sd_util_xmalloc(sizeof(int64_t) * (size_t)(n ? n : 1) * 2), *fieldoff = keyoff + (n ? n : 1);
    sd_buf_t keys, payload, key, one, evfields;
    sd_buf_init(&keys);
    sd_buf_init(&evfields);
    sd_buf_init(&payload);
    sd_buf_init(&key);
    sd_buf_init(&one);
    int64_t newest = INT64_MIN;
    uint8_t *wm_edge = sd_util_xcalloc((size_t)(n ? n : 1), 1);
    for (int64_t i = 0; i < r->sends.nwm_edges; i++)
        if (r->sends.wm_edges[i] / 2 < n) wm_edge[r->sends.wm_edges[i] / 2] = (uint8_t)(1 + r->sends.wm_edges[i] % 2);
    sd_err_t e = SD_OK;
    for (int64_t s = 0; s < n && !e; s++) {
        int disp = sd_seqs_disp(&r->sends.seqs, s);
        if (disp == SD_RECON_UNSENT || t[s] == INT64_MIN) continue;
        uint32_t copies = disp == SD_DISP_TARGET ? sd_seqs_copies(&r->sends.seqs, s, r->sc->keep_duplicates) : 0;
        int late = sd_seqs_kind(&r->sends.seqs, s) == SD_KIND_LATE && disp != SD_DISP_TARGET;
        /* complete mode keeps every window's state: a late event counts */
        if (late && md->output == SD_OUT_COMPLETE && !latest) copies = 1, late = 0;
        if (!copies && !late) continue;
        int64_t natural = sd_events_time(r->src.events, s);
        int64_t et = 0;
        if ((e = sd_events_render(r->src.events, s, t[s] == natural ? INT64_MIN : t[s], &payload, &key, &et, err, errlen))) break;
        sd_buf_reset(&one);
        sd_result_event_t *x = &ev[nev];
        sd_model_fields(payload.data ? payload.data : "", payload.len, md->keys, md->value, &one, x);
        keyoff[nev] = (int64_t)keys.len;
        if (one.len) sd_buf_append(&keys, one.data, one.len);
        sd_buf_putc(&keys, 0);
        fieldoff[nev] = (int64_t)evfields.len;
        if (latest) sd_model_join(payload.data ? payload.data : "", payload.len, md->fields, &evfields);
        sd_buf_putc(&evfields, 0);
        x->rank = md->by_arrival ? arrival[s] : t[s];
        x->arrival = arrival[s];
        x->seq = s;
        x->t_ms = t[s];
        x->copies = copies;
        x->sent = sd_seqs_sends(&r->sends.seqs, s);
        x->late = (uint8_t)late;
        x->wm_edge = wm_edge[s];
        if (copies && t[s] > newest) newest = t[s];
        nev++;
    }
    if (latest) {
        /* the tombstones: their key is the message key */
        sd_model_dels_t dc = {.ev = ev, .nev = &nev, .cap = n, .keyoff = keyoff, .fieldoff = fieldoff, .keys = &keys,
                              .fields = &evfields, .arrival = arrival};
        sd_ledger_each_delete(r->ledger, sd_model_delete, &dc);
    }
    for (int64_t i = 0; i < nev; i++) {
        ev[i].keys = keys.data + keyoff[i];
        ev[i].fields = evfields.data + fieldoff[i];
    }
    /* the sink's rows */
    const char *names[32];
    int nn = 0;
    if (!latest) names[nn++] = md->start_col ? md->start_col : "window_start";
    char *kcopy = sd_util_strdup(md->keys ? md->keys : ""), *fcopy = sd_util_strdup(md->fields ? md->fields : ""), *save = NULL;
    int nkeys = 0, nfields = 0;
    for (char *k = strtok_r(kcopy, ",", &save); k && nn < 9; k = strtok_r(NULL, ",", &save)) names[nn++] = k, nkeys++;
    int aggs = sd_result_aggs(md->aggs ? md->aggs : "count");
    static const char *const an[] = {"count", "sum", "min", "max", "avg"}, *const opt[] = {"?count", "?sum", "?min", "?max", "?avg"};
    if (latest)
        for (char *k = strtok_r(fcopy, ",", &save); k && nn < 24; k = strtok_r(NULL, ",", &save)) names[nn++] = k, nfields++;
    char *mapped[5] = {NULL};
    if (!latest)
        for (int a = 0; a < 5; a++) {
            const char *col = md->agg_cols[a];
            if (col) names[nn++] = mapped[a] = (aggs & (1 << a)) ? sd_util_strdup(col) : sd_util_fmt("?%s", col);
            else names[nn++] = (aggs & (1 << a)) ? an[a] : opt[a];
        }
    names[nn++] = "?sd_writer";
    sd_model_rows_t m = {.nkeys = nkeys, .nfields = nfields};
    sd_buf_init(&m.keys);
    sd_buf_init(&m.fields);
    sd_buf_init(&m.writers);
    sd_buf_putc(&m.writers, 0);
    if (!e) e = sd_sink_scan_cols(sink, names, nn, sd_model_row, &m, err, errlen);
    free(kcopy);
    free(fcopy);
    for (int a = 0; a < 5; a++) free(mapped[a]);
    if (!e) {
        for (int64_t i = 0; i < m.n; i++) {
            m.rows[i].keys = m.keys.data + (intptr_t)m.rows[i].keys;
            if (latest) m.rows[i].fields = m.fields.data + (intptr_t)m.rows[i].fields;
            if (m.rows[i].writer) m.rows[i].writer = m.writers.data + (intptr_t)m.rows[i].writer;
        }
        /* an engine that keeps a watermark per partition closes windows
         * at the oldest partition's newest event time */
        int clock = md->clock != SD_CLOCK_PROGRESS                              ? md->clock
                    : r->prog.ops && r->prog.ops->partition_watermark ? SD_CLOCK_PARTITION
                                                                      : SD_CLOCK_GLOBAL;
        int64_t oldest = clock == SD_CLOCK_PARTITION ? sd_ledger_oldest_partition_max(r->ledger) : INT64_MIN;
        sd_result_conf_t conf = {.size_ms = md->size_ms, .slide_ms = md->slide_ms, .aggs = aggs, .output = md->output,
                                 .final_wm = newest == INT64_MIN ? INT64_MIN : newest - r->sc->watermark_ms,
                                 .final_wm_gap = oldest == INT64_MIN || newest == INT64_MIN ? 0 : newest - oldest,
                                 .task_clock = clock == SD_CLOCK_TASK,
                                 .key_names = md->keys, .field_names = md->fields, .fmt_id = sd_run_fmt_id, .fmt_opaque = r};
        sd_result_t res;
        if (latest) sd_result_latest(&conf, ev, nev, m.rows, m.n, &res);
        else sd_result_windows(&conf, ev, nev, m.rows, m.n, &res);
        c->observed_rows = m.n + m.unreadable;
        c->groups_expected = res.groups_expected;
        c->groups_observed = res.groups_observed;
        c->groups_correct = res.n[SD_G_CORRECT];
        c->wrong_value = res.n[SD_G_WRONG_VALUE];
        c->missing_group = res.n[SD_G_MISSING];
        c->unexpected_group = res.n[SD_G_UNEXPECTED] + m.unreadable;
        c->emitted_twice = res.n[SD_G_TWICE];
        c->emitted_early = res.n[SD_G_EARLY];
        c->groups_pending = res.n[SD_G_PENDING];
        if (m.unreadable) {
            char *w = sd_util_fmt("sink %s: %lld rows have no readable window start in column %s (epoch ms or ISO-8601): "
                                  "counted as unexpected groups", sink->name, (long long)m.unreadable, names[0]);
            sd_ledger_warning(r->ledger, "model-unreadable", w, NULL, 0);
            sd_run_say(r, "warning: %s", w);
            free(w);
        }
        e = sd_model_store_groups(r, sink->name, md->keys, latest, &res, detail, err, errlen);
        sd_run_say(r, "model %s%s on sink %s: %lld rows, %lld groups expected, %lld correct, %lld wrong value, %lld missing, "
                   "%lld unexpected, %lld written twice, %lld early, %lld pending", latest ? "latest" : "windows",
                   latest ? "" : sd_clock_said[clock], sink->name, (long long)m.n,
                   (long long)res.groups_expected, (long long)res.n[SD_G_CORRECT], (long long)res.n[SD_G_WRONG_VALUE],
                   (long long)res.n[SD_G_MISSING], (long long)c->unexpected_group, (long long)res.n[SD_G_TWICE],
                   (long long)res.n[SD_G_EARLY], (long long)res.n[SD_G_PENDING]);
        sd_result_free(&res);
    }
    free(m.rows);
    sd_buf_free(&m.keys);
    sd_buf_free(&m.fields);
    sd_buf_free(&m.writers);
    sd_buf_free(&evfields);
    sd_buf_free(&keys);
    sd_buf_free(&payload);
    sd_buf_free(&key);
    sd_buf_free(&one);
    free(keyoff);
    free(wm_edge);
    free(ev);
    free(t);
    return e;
}

/* ---- model rows fields=: the values of each row against what was sent ---- */


typedef struct {
    sd_run_t *r;
    const int64_t *t;        /* event time as sent, per seq */
    int nfields;
    const char *field_names;
    int64_t changed, rows;
    sd_result_t res;         /* anomalies only (keys "event_id=<id>") */
    sd_buf_t payload, key, want;
    sd_err_t e;
    char *err;
    size_t errlen;
} sd_fields_ctx_t;

static int sd_fields_row(void *opaque, const char *const *vals, const size_t *lens) {
    sd_fields_ctx_t *f = opaque;
    sd_run_t *r = f->r;
    int64_t seq;
    f->rows++;
    /* rows whose id maps to nothing are the id reconciliation's (unexpected) */
    if (!vals[0] || sd_events_id_parse(r->tag, strlen(r->tag), vals[0], lens[0], &seq) || seq >= r->sends.nseq ||
        sd_seqs_disp(&r->sends.seqs, seq) == SD_RECON_UNSENT || f->t[seq] == INT64_MIN)
        return 0;
    int64_t natural = sd_events_time(r->src.events, seq), et;
    char err[256];
    if (sd_events_render(r->src.events, seq, f->t[seq] == natural ? INT64_MIN : f->t[seq], &f->payload, &f->key, &et, err, sizeof(err)))
        return 0;
    sd_buf_reset(&f->want);
    sd_model_join(f->payload.data ? f->payload.data : "", f->payload.len, f->field_names, &f->want);
    sd_buf_putc(&f->want, 0);
    /* compare field by field: text, or numbers as numbers */
    const char *w = f->want.data ? f->want.data : "";
    sd_buf_t d;
    sd_buf_init(&d);
    const char *n = f->field_names;
    for (int k = 0; k < f->nfields; k++) {
        size_t wl = strcspn(w, "\x1f"), nl = strcspn(n, ",");
        const char *got = vals[1 + k];
        size_t gl = got ? strnlen(got, lens[1 + k]) : 0;
        int same = got && sd_result_same_value(got, gl, w, wl);
        if (!same) {
            sd_buf_printf(&d, "%s%.*s=", d.len ? "; " : "", (int)nl, n);
            if (got) sd_buf_printf(&d, "\"%.*s\"", (int)(gl < 80 ? gl : 80), got);
            else sd_buf_puts(&d, "(none)");
            sd_buf_printf(&d, ", sent \"%.*s\"", (int)(wl < 80 ? wl : 80), w);
        }
        w += wl + (w[wl] == '\x1f');
        n += nl + (n[nl] == ',');
    }
    if (d.len) {
        f->changed++;
        char id[64], keys[96];
        sd_events_id(r->src.events, seq, id);
        snprintf(keys, sizeof(keys), "%s", id);
        sd_buf_t full;
        sd_buf_init(&full);
        sd_buf_printf(&full, "id %s", id);
        const char *wr = vals[1 + f->nfields];
        if (wr) sd_buf_printf(&full, " (row by %.*s)", (int)strnlen(wr, lens[1 + f->nfields] < 120 ? lens[1 + f->nfields] : 120), wr);
        sd_buf_printf(&full, ": %s", d.data);
        sd_result_t *res = &f->res;
        res->anomalies = sd_util_xrealloc(res->anomalies, sizeof(*res->anomalies) * (size_t)(res->nanomalies + 1));
        res->anomalies[res->nanomalies++] = (sd_result_group_t){.start_ms = 0, .keys = sd_util_strdup(keys),
                                                                .flags = 1u << SD_G_CHANGED, .detail = sd_buf_steal(&full)};
    }
    sd_buf_free(&d);
    return 0;
}

static sd_err_t sd_run_judge_fields(sd_run_t *r, sd_sink_t *sink, sd_recon_counts_t *c, char **detail, char *err, size_t errlen) {
    const struct sd_model_decl_s *md = &r->sc->model;
    int64_t *t = sd_run_event_times(r);
    const char *names[32];
    int nn = 0;
    names[nn++] = r->sc->id_field ? r->sc->id_field : "event_id";
    char *fcopy = sd_util_strdup(md->fields), *save = NULL;
    for (char *k = strtok_r(fcopy, ",", &save); k && nn < 30; k = strtok_r(NULL, ",", &save)) names[nn++] = k;
    int nfields = nn - 1;
    names[nn++] = "?sd_writer";
    sd_fields_ctx_t f = {.r = r, .t = t, .nfields = nfields, .field_names = md->fields};
    sd_buf_init(&f.payload);
    sd_buf_init(&f.key);
    sd_buf_init(&f.want);
    sd_err_t e = sd_sink_scan_cols(sink, names, nn, sd_fields_row, &f, err, errlen);
    if (!e) {
        c->changed = f.changed;
        f.res.n[SD_G_CHANGED] = f.changed;
        /* the keys column holds the id: shown as event_id=<id> */
        e = sd_model_store_groups(r, sink->name, names[0], 1, &f.res, detail, err, errlen);
        sd_run_say(r, "model rows on sink %s: %lld rows checked on %d field%s, %lld changed", sink->name, (long long)f.rows, nfields,
                   nfields == 1 ? "" : "s", (long long)f.changed);
    }
    sd_result_free(&f.res);
    sd_buf_free(&f.payload);
    sd_buf_free(&f.key);
    sd_buf_free(&f.want);
    free(fcopy);
    free(t);
    return e;
}
