/* data.c - data faults: replays of events already sent (exact duplicates),
 * late events behind the watermark, malformed events.
 *
 * Each injected message is in the ledger with its kind and the disposition
 * the contract expects: a replay is a new message carrying the seq (and the
 * exact bytes) of an event already sent; a late event is a new event whose
 * event time is `by` behind the watermark the pipeline must have reached
 * (the newest event time sent minus the contract's watermark delay); a
 * malformed event is a new event whose payload is broken in one of five
 * ways, its ledger id still in the sd-id header. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "../harness/recon.h"
#include "../harness/run.h"

static int sd_data_handles(sd_step_kind_t k) { return k == SD_STEP_REPLAY || k == SD_STEP_INJECT; }

static sd_err_t sd_data_replay(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    int64_t have = 0;
    for (int64_t s = 0; s < r->nseq; s++)
        if (r->kind[s] == SD_KIND_VALID && r->disp[s] == SD_DISP_TARGET) have++;
    if (have < st->count)
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: replay %lld: only %lld valid events were sent before it",
                          r->sc->path, st->line, (long long)st->count, (long long)have);
    int64_t t0 = sd_util_mono_ms();
    int64_t n = 0, first = -1, last = -1;
    sd_err_t e;
    int64_t s = st->replay_from_last ? r->nseq - 1 : 0;
    int64_t dir = st->replay_from_last ? -1 : 1;
    char id[64], det[96];
    for (; n < st->count && s >= 0 && s < r->nseq; s += dir) {
        if (r->kind[s] != SD_KIND_VALID || r->disp[s] != SD_DISP_TARGET) continue;
        if (st->rate > 0) {
            int64_t due = t0 + (int64_t)((double)n * 1000.0 / st->rate);
            if ((e = sd_run_flush(r, err, errlen))) return e;
            while (sd_util_mono_ms() < due)
                if ((e = sd_run_tick(r, due - sd_util_mono_ms(), err, errlen))) return e;
        }
        int64_t t;
        if ((e = sd_events_render(r->events, s, INT64_MIN, &r->payload, &r->key, &t, err, errlen))) return e;
        sd_events_id(r->events, s, id);
        snprintf(det, sizeof(det), "replay of %s", id);
        sd_run_stage(r, s, "duplicate", "target", det, t, r->key.data, r->key.len, r->payload.data, r->payload.len, 0);
        if (first < 0) first = s;
        last = s;
        n++;
        r->replayed++;
    }
    if ((e = sd_run_drain(r, sd_util_scaled_ms(st->timeout_ms), err, errlen))) return e;
    char a[64], b[64];
    sd_events_id(r->events, first, a);
    sd_events_id(r->events, last, b);
    snprintf(detail, dlen, "replayed %lld events already sent (%s .. %s), byte for byte", (long long)n, a, b);
    r->last_data_step_mono = sd_util_mono_ms();
    return SD_OK;
}

/* Break a rendered event the way `kind` says. */
static void sd_data_mangle(sd_run_t *r, sd_malformed_t kind, sd_buf_t *p, int *null_value) {
    *null_value = 0;
    char id[64];
    switch (kind) {
    case SD_MAL_TRUNCATED: {
        size_t keep = p->len / 2;
        p->len = keep;
        p->data[keep] = 0;
        break;
    }
    case SD_MAL_NOT_JSON: {
        /* take the id from the payload so the text names the event */
        int n = sd_sink_json_field(p->data, p->len, r->sc->id_field, id, sizeof(id));
        sd_buf_reset(p);
        sd_buf_printf(p, "parcel scan %s at hub 7, status=received (this line is not JSON)", n > 0 ? id : "?");
        break;
    }
    case SD_MAL_MISSING_ID:
    case SD_MAL_WRONG_TYPE: {
        json_t *o = json_loadb(p->data, p->len, 0, NULL);
        if (!o) break;
        if (kind == SD_MAL_MISSING_ID) json_object_del(o, r->sc->id_field);
        else json_object_set_new(o, r->sc->time_field, json_integer(1767254400)); /* a number where a timestamp string belongs */
        char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(o);
        if (s) { sd_buf_reset(p); sd_buf_puts(p, s); free(s); }
        break;
    }
    case SD_MAL_EMPTY:
        sd_buf_reset(p);
        break;
    default:
        break;
    }
}

static sd_err_t sd_data_inject(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_err_t e;
    int64_t late_time = 0;
    if (st->late) {
        int64_t newest = r->max_event_time != INT64_MIN ? r->max_event_time : r->sc->start_ms;
        late_time = newest - r->sc->watermark_ms - st->late_by_ms;
        const char *disp = sd_disp_name(r->sc->late_disp);
        char det[128];
        snprintf(det, sizeof(det), "event time %.1fs behind the watermark", (double)st->late_by_ms / 1000.0);
        for (int64_t i = 0; i < st->late; i++) {
            int64_t seq = sd_run_new_seq(r, SD_KIND_LATE, r->sc->late_disp);
            int64_t t;
            /* consecutive late events 1 ms apart, all behind the watermark */
            if ((e = sd_events_render(r->events, seq, late_time - i, &r->payload, &r->key, &t, err, errlen))) return e;
            sd_run_stage(r, seq, "late", disp, det, t, r->key.data, r->key.len, r->payload.data, r->payload.len, 0);
            r->late_sent++;
        }
    }
    int mask = st->malformed_kinds ? st->malformed_kinds : (1 << SD_MAL__COUNT) - 1;
    int k = 0;
    int used[SD_MAL__COUNT] = {0};
    for (int64_t i = 0; i < st->malformed; i++) {
        while (!(mask & (1 << k))) k = (k + 1) % SD_MAL__COUNT;
        sd_malformed_t kind = (sd_malformed_t)k;
        k = (k + 1) % SD_MAL__COUNT;
        int64_t seq = sd_run_new_seq(r, SD_KIND_MALFORMED, r->sc->malformed_disp);
        int64_t t;
        if ((e = sd_events_render(r->events, seq, INT64_MIN, &r->payload, &r->key, &t, err, errlen))) return e;
        int null_value = 0;
        sd_data_mangle(r, kind, &r->payload, &null_value);
        sd_run_stage(r, seq, "malformed", sd_disp_name(r->sc->malformed_disp), sd_malformed_name(kind), INT64_MIN,
                     r->key.data, r->key.len, r->payload.data, r->payload.len, null_value);
        r->malformed_sent++;
        used[kind]++;
    }
    if ((e = sd_run_drain(r, sd_util_scaled_ms(st->timeout_ms), err, errlen))) return e;
    sd_buf_t d;
    sd_buf_init(&d);
    if (st->late) {
        char iso[32];
        sd_buf_printf(&d, "%lld late (event time %s, %.1fs behind the watermark; expected: %s)", (long long)st->late,
                      sd_util_iso8601(late_time, iso, sizeof(iso)), (double)st->late_by_ms / 1000.0,
                      sd_disp_name(r->sc->late_disp));
    }
    if (st->malformed) {
        sd_buf_printf(&d, "%s%lld malformed (", d.len ? ", " : "", (long long)st->malformed);
        int first = 1;
        for (int m = 0; m < SD_MAL__COUNT; m++)
            if (used[m]) { sd_buf_printf(&d, "%s%s x%d", first ? "" : ", ", sd_malformed_name((sd_malformed_t)m), used[m]); first = 0; }
        sd_buf_printf(&d, "; expected: %s)", sd_disp_name(r->sc->malformed_disp));
    }
    snprintf(detail, dlen, "%s", d.data ? d.data : "");
    sd_buf_free(&d);
    r->last_data_step_mono = sd_util_mono_ms();
    return SD_OK;
}

static sd_err_t sd_data_run(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    if (st->kind == SD_STEP_REPLAY) return sd_data_replay(r, st, detail, dlen, err, errlen);
    return sd_data_inject(r, st, detail, dlen, err, errlen);
}

const sd_injector_t sd_injector_data = {"data", sd_data_handles, sd_data_run};
