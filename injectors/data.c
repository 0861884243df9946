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
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang.h"
#include "recon.h"
#include "run.h"
#include "wire.h"

static int sd_data_handles(sd_step_kind_t k) { return k == SD_STEP_REPLAY || k == SD_STEP_INJECT; }

/* Seq s is a valid event bound for the target: what a replay copies and
 * a tombstone deletes. */
static int sd_data_valid_target(const sd_run_t *r, int64_t s) {
    return sd_seqs_kind(sd_run_seqs(r), s) == SD_KIND_VALID && sd_seqs_disp(sd_run_seqs(r), s) == SD_DISP_TARGET;
}

/* replay range=P:A-B: read the records at those offsets back from Kafka
 * and send them again as they are (key, value, sd-id), the way an upstream
 * replay of an offset range would. */
static sd_err_t sd_data_replay_range(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", sd_broker_bootstrap(sd_run_broker(r)), NULL, 0);
    rd_kafka_conf_set(conf, "group.id", "streamdrill-replay", NULL, 0);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", NULL, 0);
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", NULL, 0);
    sd_err_t e = sd_broker_conf_apply(conf, sd_run_opts(r)->xprops, "-X", err, errlen);
    if (e) { rd_kafka_conf_destroy(conf); return e; }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        return sd_err_set(err, errlen, SD_ERR_BROKER, "replay range: consumer: %s", errstr);
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, sd_run_topic(r), st->send.range_partition)->offset = st->send.range_from;
    rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    int64_t deadline = sd_util_mono_ms() + sd_util_scaled_ms(st->timeout_ms), n = 0, skipped = 0;
    size_t taglen = strlen(sd_run_tag(r));
    while (!e) {
        if (sd_util_mono_ms() > deadline) {
            e = sd_err_set(err, errlen, SD_ERR_BROKER, "replay range: %s [%d] offsets %lld-%lld not read within the step's timeout",
                           sd_run_topic(r), st->send.range_partition, (long long)st->send.range_from, (long long)st->send.range_to - 1);
            break;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m) { sd_run_tick(r, 0, NULL, 0); continue; }
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) { rd_kafka_message_destroy(m); break; }
        if (m->err) {
            e = sd_err_set(err, errlen, SD_ERR_BROKER, "replay range: read %s [%d]: %s", sd_run_topic(r), st->send.range_partition, rd_kafka_message_errstr(m));
            rd_kafka_message_destroy(m);
            break;
        }
        int stop = m->offset + 1 >= st->send.range_to;
        if (m->offset < st->send.range_to) {
            rd_kafka_headers_t *h = NULL;
            const void *v = NULL;
            size_t vl = 0;
            int64_t seq;
            if (!rd_kafka_message_headers(m, &h) && !rd_kafka_header_get_last(h, "sd-id", &v, &vl) && v &&
                !sd_events_id_parse(sd_run_tag(r), taglen, v, vl, &seq) && seq < sd_run_nseq(r) && sd_seqs_kind(sd_run_seqs(r), seq) != SD_KIND_ABORTED) {
                /* (a record of an aborted transaction is never replayed: sent
                 * again outside it, it would have to arrive) */
                char det[96];
                snprintf(det, sizeof(det), "replay of offset %d@%lld", m->partition, (long long)m->offset);
                int disp = sd_seqs_disp(sd_run_seqs(r), seq);
                sd_run_stage_as_read(r, seq, "duplicate", sd_disp_name((sd_disp_t)(disp == SD_RECON_UNSENT ? SD_DISP_TARGET : disp)),
                                     det, m->key, m->key_len, m->payload, m->len);
                sd_run_count_sent(r, 1, 0, 0);
                n++;
            } else {
                skipped++;
            }
        }
        rd_kafka_message_destroy(m);
        if (!e) e = sd_run_flush_if_full(r, err, errlen);
        if (stop) break;
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    if (!e) e = sd_run_drain(r, sd_util_scaled_ms(st->timeout_ms), err, errlen);
    if (e) return e;
    snprintf(detail, dlen, "replayed %lld records of %s [%d] offsets %lld-%lld, read back from Kafka and sent as they were%s",
             (long long)n, sd_run_topic(r), st->send.range_partition, (long long)st->send.range_from, (long long)st->send.range_to - 1,
             skipped ? " (records without a ledger id, or of aborted transactions, were skipped)" : "");
    sd_run_data_step_done(r);
    return SD_OK;
}

/* Was the delivery numbered dseq sent (not held back by lag=, not a log
 * line still to come)? Its rendering into the run's draft then, and 1. */
static int sd_data_delivery_sent(sd_run_t *r, int64_t dseq, int64_t *t, char *err, size_t errlen) {
    int64_t next;
    sd_events_t *log = sd_run_side_log(r, &next);
    if (log) /* a log's: line dseq, sent once its scan was */
        return dseq < next &&
               sd_events_render(log, dseq, INT64_MIN, sd_run_draft_value(r), sd_run_draft_key(r), t, err, errlen) == SD_OK;
    if (!sd_data_valid_target(r, dseq) || sd_run_delivery_held(r, dseq)) return 0;
    int64_t scan_t;
    sd_buf_t p, k;
    sd_buf_init(&p);
    sd_buf_init(&k);
    int ok = sd_events_render(sd_run_events(r), dseq, sd_run_sent_at(r, dseq), &p, &k, &scan_t, err, errlen) == SD_OK &&
             sd_events_delivery(sd_run_events(r), dseq, scan_t, sd_run_draft_value(r), sd_run_draft_key(r), t);
    sd_buf_free(&p);
    sd_buf_free(&k);
    return ok;
}

/* replay N source=deliveries: deliveries already sent, sent again byte for
 * byte on the second source (a correct join joins each once). */
static sd_err_t sd_data_replay_deliveries(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    int64_t next;
    sd_events_t *log = sd_run_side_log(r, &next);
    int64_t end = log ? next : sd_run_nseq(r), n = 0, first = -1, last = -1, t0 = sd_util_mono_ms();
    int64_t s = st->send.replay_from_last ? end - 1 : 0, dir = st->send.replay_from_last ? -1 : 1;
    sd_err_t e;
    for (; n < st->send.count && s >= 0 && s < end; s += dir) {
        int64_t t;
        if (!sd_data_delivery_sent(r, s, &t, err, errlen)) continue;
        if ((e = sd_run_pace(r, t0, n, st->send.rate, err, errlen))) return e;
        /* the pace may have flushed: render it again into the staging buffers */
        if (!sd_data_delivery_sent(r, s, &t, err, errlen)) continue;
        if (log) { /* keyed by the log's key field, as when first sent */
            char kv[256];
            const char *kf = sd_run_sc(r)->deliveries_key ? sd_run_sc(r)->deliveries_key : "parcel_id";
            int kn = sd_sink_json_field(sd_run_draft_value(r)->data, sd_run_draft_value(r)->len, kf, kv, sizeof(kv));
            sd_buf_reset(sd_run_draft_key(r));
            if (kn > 0) sd_buf_append(sd_run_draft_key(r), kv, (size_t)kn);
        }
        sd_run_stage_delivery(r, s, t);
        if (first < 0) first = s;
        last = s;
        n++;
    }
    if (n < st->send.count)
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: replay %lld source=deliveries: only %lld deliveries were sent before it",
                          sd_run_sc(r)->path, st->line, (long long)st->send.count, (long long)n);
    if ((e = sd_run_drain(r, sd_util_scaled_ms(st->timeout_ms), err, errlen))) return e;
    char a[64], b[64];
    sd_events_delivery_id(sd_run_events(r), first, a);
    sd_events_delivery_id(sd_run_events(r), last, b);
    snprintf(detail, dlen, "replayed %lld deliveries already sent (%s .. %s), byte for byte", (long long)n, a, b);
    sd_run_data_step_done(r);
    return SD_OK;
}

static sd_err_t sd_data_replay(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    if (st->send.range_partition >= 0) return sd_data_replay_range(r, st, detail, dlen, err, errlen);
    if (st->send.side) return sd_data_replay_deliveries(r, st, detail, dlen, err, errlen);
    int64_t have = 0;
    for (int64_t s = 0; s < sd_run_nseq(r); s++)
        if (sd_data_valid_target(r, s)) have++;
    if (have < st->send.count)
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: replay %lld: only %lld valid events were sent before it",
                          sd_run_sc(r)->path, st->line, (long long)st->send.count, (long long)have);
    int64_t t0 = sd_util_mono_ms();
    int64_t n = 0, first = -1, last = -1;
    sd_err_t e;
    int64_t s = st->send.replay_from_last ? sd_run_nseq(r) - 1 : 0;
    int64_t dir = st->send.replay_from_last ? -1 : 1;
    char id[64], det[96];
    for (; n < st->send.count && s >= 0 && s < sd_run_nseq(r); s += dir) {
        if (!sd_data_valid_target(r, s)) continue;
        if ((e = sd_run_pace(r, t0, n, st->send.rate, err, errlen))) return e;
        int64_t t;
        if ((e = sd_events_render(sd_run_events(r), s, sd_run_sent_at(r, s), sd_run_draft_value(r), sd_run_draft_key(r), &t, err, errlen)))
            return e;
        sd_events_id(sd_run_events(r), s, id);
        snprintf(det, sizeof(det), "replay of %s", id);
        sd_run_stage_draft(r, s, "duplicate", "target", det, t, 1, 0);
        if (first < 0) first = s;
        last = s;
        n++;
        sd_run_count_sent(r, 1, 0, 0);
    }
    if ((e = sd_run_drain(r, sd_util_scaled_ms(st->timeout_ms), err, errlen))) return e;
    char a[64], b[64];
    sd_events_id(sd_run_events(r), first, a);
    sd_events_id(sd_run_events(r), last, b);
    snprintf(detail, dlen, "replayed %lld events already sent (%s .. %s), byte for byte", (long long)n, a, b);
    sd_run_data_step_done(r);
    return SD_OK;
}

/* p becomes o, serialised compactly in its own key order; o is released. */
static void sd_data_set_json(sd_buf_t *p, json_t *o) {
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (s) { sd_buf_reset(p); sd_buf_puts(p, s); free(s); }
}

/* Break a rendered event (whose id and time are in the fields id_field and
 * time_field) the way `kind` says. */
static void sd_data_mangle(const char *id_field, const char *time_field, sd_malformed_t kind, sd_buf_t *p, int *null_value) {
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
        int n = sd_sink_json_field(p->data, p->len, id_field, id, sizeof(id));
        sd_buf_reset(p);
        sd_buf_printf(p, "parcel scan %s at hub 7, status=received (this line is not JSON)", n > 0 ? id : "?");
        break;
    }
    case SD_MAL_MISSING_ID:
    case SD_MAL_WRONG_TYPE: {
        json_t *o = json_loadb(p->data, p->len, 0, NULL);
        if (!o) break;
        if (kind == SD_MAL_MISSING_ID) json_object_del(o, id_field);
        else json_object_set_new(o, time_field, json_integer(1767254400)); /* a number where a timestamp string belongs */
        sd_data_set_json(p, o);
        break;
    }
    case SD_MAL_EMPTY:
        sd_buf_reset(p);
        break;
    case SD_MAL_INVALID_UTF8: {
        /* two bytes that are never UTF-8, inside the payload's last string
         * (a value or a key): before its closing quote */
        char *q = p->len > 3 ? memrchr(p->data, '"', p->len) : NULL;
        if (q) {
            sd_buf_t b;
            sd_buf_init(&b);
            sd_buf_append(&b, p->data, (size_t)(q - p->data));
            sd_buf_append(&b, "\xff\xfe", 2);
            sd_buf_puts(&b, q);
            sd_buf_reset(p);
            sd_buf_append(p, b.data, b.len);
            sd_buf_free(&b);
        }
        break;
    }
    case SD_MAL_OVERSIZED: {
        /* a valid event padded to 900 KB: under the broker's 1 MB limit,
         * far over what a parcel scan can be */
        json_t *o = json_loadb(p->data, p->len, 0, NULL);
        if (!o) break;
        char *pad = sd_util_xmalloc(900 * 1024 + 1);
        memset(pad, 'x', 900 * 1024);
        pad[900 * 1024] = 0;
        json_object_set_new(o, "padding", json_string(pad));
        free(pad);
        sd_data_set_json(p, o);
        break;
    }
    case SD_MAL_NULL_VALUE:
        sd_buf_reset(p);
        *null_value = 1;
        break;
    case SD_MAL_DUPLICATE_KEYS: {
        /* the event time twice, with two values: which one a reader keeps is anyone's guess */
        if (p->len > 1 && p->data[p->len - 1] == '}') {
            p->len--;
            p->data[p->len] = 0;
            sd_buf_printf(p, ",\"%s\":\"1999-12-31T23:59:59.000Z\"}", time_field);
        }
        break;
    }
    default:
        break;
    }
}

/* One new event of seq at event time t (INT64_MIN: its own), with the
 * payload and key changed as asked; staged with kind and disposition. */
static sd_err_t sd_data_event(sd_run_t *r, int recon_kind, sd_disp_t disp, const char *kind, const char *detail, int64_t t,
                              int drop_key, const char *key, int drift, int64_t *seq_out, char *err, size_t errlen) {
    int64_t seq = sd_run_new_seq(r, recon_kind, disp);
    int64_t et;
    sd_err_t e = sd_events_render(sd_run_events(r), seq, t, sd_run_draft_value(r), sd_run_draft_key(r), &et, err, errlen);
    if (e) return e;
    if (key) {
        sd_buf_reset(sd_run_draft_key(r));
        sd_buf_puts(sd_run_draft_key(r), key);
    }
    if (drift) {
        json_t *o = json_loadb(sd_run_draft_value(r)->data, sd_run_draft_value(r)->len, 0, NULL);
        if (o) {
            if (drift == 1) json_object_set_new(o, "sd_extra", json_pack("{s:s, s:i}", "note", "a field added by a newer producer", "v", 2));
            else json_object_set_new(o, "location", json_integer(42)); /* a number where a string was */
            sd_data_set_json(sd_run_draft_value(r), o);
        }
    }
    sd_run_stage_draft(r, seq, kind, sd_disp_name(disp), detail, et, !drop_key, 0);
    if (seq_out) *seq_out = seq;
    return SD_OK;
}

/* inject edges=: the i-th event on the next edge the model declares, after
 * newest (the newest event time sent). Windows: a scan 1 ms before, on
 * or 1 ms after the next window boundary; join: a new scan at newest and
 * its delivery on a bound of the range or 1 ms beside one. Each is in
 * run.db edge. */
static sd_err_t sd_data_edge(sd_run_t *r, int64_t i, int64_t newest, char *err, size_t errlen) {
    const struct sd_model_decl_s *md = &sd_run_sc(r)->model;
    char det[160], iso[32], id[64];
    int64_t seq;
    sd_err_t e;
    if (md->kind == SD_MODEL_WINDOWS) {
        int64_t s = md->slide_ms ? md->slide_ms : md->size_ms;
        int64_t b = (newest >= 0 ? newest / s + 1 : -((-newest) / s)) * s; /* the first boundary after newest */
        int off = (int)(i % 3) - 1;
        snprintf(det, sizeof(det), "edge: %s the window boundary %s", off < 0 ? "1 ms before" : off ? "1 ms after" : "exactly on",
                 sd_util_iso8601(b, iso, sizeof(iso)));
        if ((e = sd_data_event(r, SD_KIND_VALID, SD_DISP_TARGET, "edge", det, b + off, 0, NULL, 0, &seq, err, errlen))) return e;
        sd_events_id(sd_run_events(r), seq, id);
        return sd_ledger_edge(sd_run_ledger(r), id, "source", sd_edge_name(SD_EDGE_WINDOW), b, off, err, errlen);
    }
    static const struct { int upper, off; } at[6] = {{1, 0}, {0, 0}, {1, 1}, {1, -1}, {0, -1}, {0, 1}};
    int upper = at[i % 6].upper, off = at[i % 6].off;
    int64_t bound = upper ? md->within_ms : 0;
    snprintf(det, sizeof(det), "edge: its delivery %s the join range's %s bound", off < 0 ? "1 ms before" : off ? "1 ms after" : "exactly on",
             upper ? "upper" : "lower");
    if ((e = sd_data_event(r, SD_KIND_VALID, SD_DISP_TARGET, "edge", det, newest, 0, NULL, 0, &seq, err, errlen))) return e;
    if (!sd_run_side_topic(r, NULL)) return SD_OK;
    int64_t td = newest + bound + off;
    sd_events_delivery_at(sd_run_events(r), seq, td, sd_run_draft_value(r), sd_run_draft_key(r));
    sd_run_stage_delivery(r, seq, td);
    sd_events_delivery_id(sd_run_events(r), seq, id);
    return sd_ledger_edge(sd_run_ledger(r), id, "deliveries", sd_edge_name(upper ? SD_EDGE_JOIN_UPPER : SD_EDGE_JOIN_LOWER), bound, off, err,
                          errlen);
}

/* inject delete=: the i-th of n tombstones, for the key of the newest
 * valid event whose key this step has not deleted yet (deleted holds
 * them, each between two \x1e); said in d. */
static sd_err_t sd_data_delete(sd_run_t *r, int64_t i, int64_t n, sd_buf_t *deleted, sd_buf_t *d, char *err, size_t errlen) {
    char key[128] = "", det[160];
    sd_err_t e = SD_OK;
    for (int64_t s = sd_run_nseq(r) - 1; s >= 0 && !key[0] && !e; s--) {
        if (!sd_data_valid_target(r, s) || !sd_seqs_sends(sd_run_seqs(r), s)) continue;
        int64_t et;
        if ((e = sd_events_render(sd_run_events(r), s, sd_run_sent_at(r, s), sd_run_draft_value(r), sd_run_draft_key(r), &et, err, errlen)))
            break;
        if (!sd_run_draft_key(r)->len || sd_run_draft_key(r)->len >= sizeof(key)) continue;
        char k2[130];
        snprintf(k2, sizeof(k2), "\x1e%.*s\x1e", (int)sd_run_draft_key(r)->len, sd_run_draft_key(r)->data);
        if (deleted->data && strstr(deleted->data, k2)) continue;
        snprintf(key, sizeof(key), "%.*s", (int)sd_run_draft_key(r)->len, sd_run_draft_key(r)->data);
        sd_buf_puts(deleted, k2);
    }
    if (e || !key[0]) return e;
    int64_t seq = sd_run_new_seq(r, SD_KIND_DELETE, SD_DISP_DROPPED);
    snprintf(det, sizeof(det), "tombstone for key %s", key);
    sd_run_stage(r, seq, "delete", "dropped", det, INT64_MIN, key, strlen(key), NULL, 0, 1);
    if (i == 0) sd_buf_printf(d, " (keys %s", key);
    else sd_buf_printf(d, ", %s", key);
    if (i == n - 1) sd_buf_puts(d, ")");
    return SD_OK;
}

/* inject ... source=deliveries. Each delivery is for a scan already sent
 * that has no delivery of its own (the generator gave it none, no step
 * sent one): its parcel, its seq (the delivery's id), so that a pipeline
 * that took it would join it with that scan. */
typedef struct {
    uint8_t *has;      /* by scan seq: a delivery of it reached Kafka */
    int64_t n;
    int64_t newest;    /* the newest event time of a delivery the contract sends to the target */
} sd_data_side_seen_t;

static void sd_data_side_seen(void *opaque, int64_t seq, int64_t t, const char *key, const char *disp) {
    sd_data_side_seen_t *v = opaque;
    (void)key;
    if (seq >= 0 && seq < v->n) v->has[seq] = 1;
    if (!strcmp(disp, "target") && t != INT64_MIN && t > v->newest) v->newest = t;
}

typedef struct {
    int64_t *seq;      /* the scans without a delivery, newest first */
    int64_t n;
    uint8_t *taken;    /* by index into seq */
    const int64_t *t;  /* each scan's event time as sent */
} sd_data_bare_t;

/* The newest scan not taken yet whose join range [t, t + within] holds td
 * (a pipeline that took the delivery would join them), else the newest
 * not taken; -1 when every one is taken. */
static int64_t sd_data_bare_pick(sd_data_bare_t *b, int64_t td, int64_t within) {
    int64_t any = -1;
    for (int64_t i = 0; i < b->n; i++) {
        if (b->taken[i]) continue;
        if (any < 0) any = i;
        if (td != INT64_MIN && b->t[b->seq[i]] <= td && td <= b->t[b->seq[i]] + within) { any = i; break; }
    }
    if (any < 0) return -1;
    b->taken[any] = 1;
    return b->seq[any];
}

/* The malformed kind after k (in mask, default the first five, or with
 * a wire format its four, and with format=json-schema schema-violation). */
static sd_malformed_t sd_data_next_malformed(int *k, int mask, int wire) {
    if (!mask && wire) mask = ((1 << SD_MAL__COUNT) - 1) & ~((1 << SD_MAL_BAD_MAGIC) - 1) & ~(wire == 3 ? 0 : 1 << SD_MAL_SCHEMA_VIOLATION);
    if (!mask) mask = (1 << 5) - 1;
    while (!(mask & (1 << *k))) *k = (*k + 1) % SD_MAL__COUNT;
    sd_malformed_t kind = (sd_malformed_t)*k;
    *k = (*k + 1) % SD_MAL__COUNT;
    return kind;
}

/* "N malformed[ what] (kind xK, ...; expected: disp)" into d, for a step
 * that sent n, used[k] of kind k. */
static void sd_data_say_malformed(sd_buf_t *d, int64_t n, const char *what, const int used[SD_MAL__COUNT], sd_disp_t disp) {
    if (!n) return;
    sd_buf_printf(d, "%s%lld malformed%s (", d->len ? ", " : "", (long long)n, what);
    for (int m = 0, first = 1; m < SD_MAL__COUNT; m++)
        if (used[m]) { sd_buf_printf(d, "%s%s x%d", first ? "" : ", ", sd_malformed_name((sd_malformed_t)m), used[m]); first = 0; }
    sd_buf_printf(d, "; expected: %s)", sd_disp_name(disp));
}

static sd_err_t sd_data_inject_deliveries(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    const sd_scenario_t *sc = sd_run_sc(r);
    int64_t want = st->send.malformed;
    for (int k = 0; k < SD_INJ__COUNT; k++) want += st->send.inject[k];
    sd_data_side_seen_t seen = {.has = sd_util_xcalloc((size_t)(sd_run_nseq(r) ? sd_run_nseq(r) : 1), 1), .n = sd_run_nseq(r),
                                .newest = INT64_MIN};
    sd_ledger_each_side(sd_run_ledger(r), sd_data_side_seen, &seen);
    int64_t *t = sd_run_event_times(r);
    sd_data_bare_t bare = {.seq = sd_util_xmalloc(sizeof(int64_t) * (size_t)(sd_run_nseq(r) ? sd_run_nseq(r) : 1)), .t = t};
    for (int64_t s = sd_run_nseq(r) - 1; s >= 0; s--)
        if (sd_data_valid_target(r, s) && t[s] != INT64_MIN && !seen.has[s] && !sd_events_has_delivery(sd_run_events(r), s))
            bare.seq[bare.n++] = s;
    bare.taken = sd_util_xcalloc((size_t)(bare.n ? bare.n : 1), 1);
    free(seen.has);
    sd_err_t e = SD_OK;
    if (bare.n < want)
        e = sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: inject source=deliveries: each of its %lld deliveries is for a scan "
                       "already sent without a delivery of its own, and %lld such scans were sent (send more scans before it, or "
                       "lower `deliveries share=`)", sc->path, st->line, (long long)want, (long long)bare.n);
    int64_t J = sc->model.kind == SD_MODEL_JOIN ? sc->model.within_ms : 0, W = sc->watermark_ms;
    int64_t newest_scan = sd_run_max_event_time(r), newest_del = seen.newest != INT64_MIN ? seen.newest : newest_scan;
    int64_t wm = (newest_scan < newest_del ? newest_scan : newest_del) - W, top = newest_scan > newest_del ? newest_scan : newest_del;
    sd_buf_t d;
    sd_buf_init(&d);
    char det[200], iso[32], sid[64];
    for (int ik = 0; ik < SD_INJ__COUNT && !e; ik++) {
        sd_inject_kind_t kd = (sd_inject_kind_t)ik;
        int64_t n = sd_inject_on_deliveries(kd) ? st->send.inject[kd] : 0;
        if (n) sd_buf_printf(&d, "%s%lld %s deliveries", d.len ? ", " : "", (long long)n, sd_inject_name(kd));
        for (int64_t i = 0; i < n && !e; i++) {
            int64_t td = INT64_MIN, seq;
            const char *kind = "delivery";
            sd_disp_t disp = SD_DISP_TARGET;
            switch (kd) {
            case SD_INJ_LATE: /* behind the watermark over both sources, by `by` */
                td = wm - st->send.late_by_ms - i;
                kind = "late", disp = sc->late_disp;
                break;
            case SD_INJ_OUT_OF_ORDER: { /* behind the newest delivery, within the watermark */
                int64_t within = st->send.within_ms > 0 ? st->send.within_ms : W / 2;
                td = newest_del - within * (i + 1) / (n + 1);
                kind = "out-of-order";
                break;
            }
            case SD_INJ_FUTURE:
                td = top + st->send.ahead_ms + i;
                kind = "future", disp = sc->future_disp;
                break;
            default: /* retry-dup: on time, inside its scan's range */
                break;
            }
            seq = sd_data_bare_pick(&bare, kd == SD_INJ_FUTURE ? INT64_MIN : td, J);
            if (td == INT64_MIN) td = t[seq] + J / 2;
            if (kd == SD_INJ_OUT_OF_ORDER && (td < t[seq] || td > t[seq] + J)) td = td < t[seq] ? t[seq] : t[seq] + J;
            sd_events_delivery_at(sd_run_events(r), seq, td, sd_run_draft_value(r), sd_run_draft_key(r));
            sd_events_id(sd_run_events(r), seq, sid);
            int joins = J > 0 && t[seq] <= td && td <= t[seq] + J;
            snprintf(det, sizeof(det), "delivery at %s for the parcel of scan %s%s", sd_util_iso8601(td, iso, sizeof(iso)), sid,
                     joins ? " (inside its join range)" : "");
            sd_run_stage_side(r, seq, kind, sd_disp_name(disp), det, td, 0);
            if (kd == SD_INJ_RETRY_DUP) sd_run_stage_side(r, seq, "duplicate", "target", "producer retry", td, 0);
            if (i == 0 && kd != SD_INJ_RETRY_DUP)
                sd_buf_printf(&d, " (%s%s; expected: %s)", kd == SD_INJ_OUT_OF_ORDER ? "from " : "event time ",
                              sd_util_iso8601(td, iso, sizeof(iso)), disp == SD_DISP_TARGET ? "accepted" : sd_disp_name(disp));
            if (!e) e = sd_run_flush_if_full(r, err, errlen);
        }
    }
    int mk = 0, used[SD_MAL__COUNT] = {0};
    for (int64_t i = 0; i < st->send.malformed && !e; i++) {
        sd_malformed_t kind = sd_data_next_malformed(&mk, st->send.malformed_kinds, 0);
        int64_t seq = sd_data_bare_pick(&bare, INT64_MIN, J), td = t[seq] + J / 2;
        int null_value = 0;
        sd_events_delivery_at(sd_run_events(r), seq, td, sd_run_draft_value(r), sd_run_draft_key(r));
        sd_data_mangle("delivery_id", "delivered_at", kind, sd_run_draft_value(r), &null_value);
        sd_run_stage_side(r, seq, "malformed", sd_disp_name(sc->malformed_disp), sd_malformed_name(kind), INT64_MIN, null_value);
        used[kind]++;
        if (!e) e = sd_run_flush_if_full(r, err, errlen);
    }
    if (!e) sd_data_say_malformed(&d, st->send.malformed, " deliveries", used, sc->malformed_disp);
    free(t);
    free(bare.seq);
    free(bare.taken);
    if (!e) e = sd_run_drain(r, sd_util_scaled_ms(st->timeout_ms), err, errlen);
    if (!e) {
        snprintf(detail, dlen, "%s, each for a scan without a delivery of its own", d.data ? d.data : "");
        sd_run_data_step_done(r);
    }
    sd_buf_free(&d);
    return e;
}

static sd_err_t sd_data_inject(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_err_t e = SD_OK;
    if (st->send.side) return sd_data_inject_deliveries(r, st, detail, dlen, err, errlen);
    const sd_scenario_t *sc = sd_run_sc(r);
    int64_t newest = sd_run_max_event_time(r) != INT64_MIN ? sd_run_max_event_time(r) : sd_events_time(sd_run_events(r), 0);
    int64_t W = sc->watermark_ms;
    sd_buf_t d;
    sd_buf_init(&d);
    char iso[32], det[160];
    int recon_late = SD_KIND_LATE;
    sd_buf_t deleted; /* the keys this step deleted, each between two \x1e */
    sd_buf_init(&deleted);
    for (int k = 0; k < SD_INJ__COUNT && !e; k++) {
        int64_t n = st->send.inject[k];
        if (!n) continue;
        sd_buf_printf(&d, "%s%lld %s", d.len ? ", " : "", (long long)n, sd_inject_name((sd_inject_kind_t)k));
        for (int64_t i = 0; i < n && !e; i++) {
            switch ((sd_inject_kind_t)k) {
            case SD_INJ_LATE: {
                int64_t t = newest - W - st->send.late_by_ms - i; /* 1 ms apart, all behind the watermark */
                snprintf(det, sizeof(det), "event time %.1fs behind the watermark", (double)st->send.late_by_ms / 1000.0);
                e = sd_data_event(r, recon_late, sc->late_disp, "late", det, t, 0, NULL, 0, NULL, err, errlen);
                if (!e && i == 0) sd_buf_printf(&d, " (event time %s; expected: %s)", sd_util_iso8601(t, iso, sizeof(iso)), sd_disp_name(sc->late_disp));
                sd_run_count_sent(r, 0, 1, 0);
                break;
            }
            case SD_INJ_OUT_OF_ORDER: {
                int64_t within = st->send.within_ms > 0 ? st->send.within_ms : W / 2;
                int64_t t = newest - within * (i + 1) / (n + 1);
                snprintf(det, sizeof(det), "event time %.1fs behind the newest, within the watermark", (double)(newest - t) / 1000.0);
                e = sd_data_event(r, SD_KIND_OUT_OF_ORDER, SD_DISP_TARGET, "out-of-order", det, t, 0, NULL, 0, NULL, err, errlen);
                break;
            }
            case SD_INJ_FUTURE: {
                int64_t t = newest + st->send.ahead_ms + i;
                snprintf(det, sizeof(det), "event time %.0fs ahead of the newest", (double)st->send.ahead_ms / 1000.0);
                e = sd_data_event(r, sc->future_disp == SD_DISP_TARGET ? SD_KIND_VALID : SD_KIND_MALFORMED, sc->future_disp,
                                  "future", det, t, 0, NULL, 0, NULL, err, errlen);
                if (!e && i == 0) sd_buf_printf(&d, " (event time %s; expected: %s)", sd_util_iso8601(t, iso, sizeof(iso)), sd_disp_name(sc->future_disp));
                break;
            }
            case SD_INJ_AT_MAX:
                e = sd_data_event(r, SD_KIND_VALID, SD_DISP_TARGET, "boundary", "event time equal to the newest sent", newest, 0, NULL,
                                  0, NULL, err, errlen);
                break;
            case SD_INJ_AT_WATERMARK:
                e = sd_data_event(r, SD_KIND_VALID, SD_DISP_TARGET, "boundary", "event time equal to the watermark (newest - delay)",
                                  newest - W, 0, NULL, 0, NULL, err, errlen);
                break;
            case SD_INJ_BURST: {
                /* the backlog of a device offline for `offline`: oldest first */
                int64_t t = newest - st->send.offline_ms + (n > 1 ? st->send.offline_ms * i / (n - 1) : st->send.offline_ms);
                int late = t < newest - W;
                snprintf(det, sizeof(det), "backlog: event time %.0fs before the newest", (double)(newest - t) / 1000.0);
                e = sd_data_event(r, late ? recon_late : SD_KIND_VALID, late ? sc->late_disp : SD_DISP_TARGET, late ? "late" : "burst",
                                  det, t, 0, NULL, 0, NULL, err, errlen);
                if (late) sd_run_count_sent(r, 0, 1, 0);
                break;
            }
            case SD_INJ_SKEW:
                e = sd_data_event(r, SD_KIND_VALID, SD_DISP_TARGET, "skew", "every event on one key", INT64_MIN, 0,
                                  st->send.skew_key ? st->send.skew_key : "P-HOT-KEY", 0, NULL, err, errlen);
                break;
            case SD_INJ_DRIFT: {
                sd_disp_t disp = st->send.drift_type == SD_DRIFT_TYPE_CHANGE ? sc->drift_disp : SD_DISP_TARGET;
                if (i == 0) { /* in Avro: the schema's next version, registered first */
                    char note[512];
                    e = sd_run_wire_drift(r, st->send.drift_type == SD_DRIFT_TYPE_CHANGE, note, sizeof(note), err, errlen);
                    if (!e && note[0]) sd_buf_printf(&d, " (%s)", note);
                    if (e) break;
                }
                e = sd_data_event(r, disp == SD_DISP_QUARANTINE ? SD_KIND_MALFORMED : SD_KIND_VALID, disp, "drift",
                                  st->send.drift_type == SD_DRIFT_TYPE_CHANGE ? "location is a number" : "an extra field", INT64_MIN, 0, NULL, st->send.drift_type == SD_DRIFT_TYPE_CHANGE ? 2 : 1,
                                  NULL, err, errlen);
                break;
            }
            case SD_INJ_NO_KEY:
                e = sd_data_event(r, SD_KIND_VALID, SD_DISP_TARGET, "no-key", "no message key", INT64_MIN, 1, NULL, 0, NULL, err, errlen);
                break;
            case SD_INJ_DELETE:
                e = sd_data_delete(r, i, n, &deleted, &d, err, errlen);
                break;
            case SD_INJ_EDGE:
                e = sd_data_edge(r, i, newest, err, errlen);
                break;
            case SD_INJ_RETRY_DUP: {
                int64_t seq;
                e = sd_data_event(r, SD_KIND_VALID, SD_DISP_TARGET, "valid", NULL, INT64_MIN, 0, NULL, 0, &seq, err, errlen);
                if (!e) {
                    /* the same bytes again, right behind: what a producer without idempotence sends on a retry */
                    sd_run_stage_draft(r, seq, "duplicate", "target", "producer retry", INT64_MIN, 1, 0);
                    sd_run_count_sent(r, 1, 0, 0);
                }
                break;
            }
            default:
                break;
            }
            if (!e) e = sd_run_flush_if_full(r, err, errlen);
        }
    }
    int k = 0;
    int used[SD_MAL__COUNT] = {0};
    for (int64_t i = 0; i < st->send.malformed && !e; i++) {
        sd_malformed_t kind = sd_data_next_malformed(&k, st->send.malformed_kinds, sc->events_format);
        int64_t seq = sd_run_new_seq(r, SD_KIND_MALFORMED, sc->malformed_disp);
        int64_t t;
        if ((e = sd_events_render(sd_run_events(r), seq, INT64_MIN, sd_run_draft_value(r), sd_run_draft_key(r), &t, err, errlen))) break;
        int null_value = 0;
        sd_data_mangle(sd_run_sc(r)->id_field, sd_run_sc(r)->time_field, kind, sd_run_draft_value(r), &null_value);
        sd_run_stage_draft(r, seq, "malformed", sd_disp_name(sc->malformed_disp), sd_malformed_name(kind), INT64_MIN, 1, null_value);
        sd_run_count_sent(r, 0, 0, 1);
        used[kind]++;
        if (!e) e = sd_run_flush_if_full(r, err, errlen);
    }
    sd_buf_free(&deleted);
    if (!e) e = sd_run_drain(r, sd_util_scaled_ms(st->timeout_ms), err, errlen);
    if (e) {
        sd_buf_free(&d);
        return e;
    }
    sd_data_say_malformed(&d, st->send.malformed, "", used, sc->malformed_disp);
    snprintf(detail, dlen, "%s", d.data ? d.data : "");
    sd_buf_free(&d);
    sd_run_data_step_done(r);
    return SD_OK;
}

static sd_err_t sd_data_run(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    if (st->kind == SD_STEP_REPLAY) return sd_data_replay(r, st, detail, dlen, err, errlen);
    return sd_data_inject(r, st, detail, dlen, err, errlen);
}

const sd_injector_t sd_injector_data = {.name = "data", .handles = sd_data_handles, .run = sd_data_run};

/* ---- the event shapes, as docs/language.md shows them ---------------- */

/* What each generated field is, for the fields the generators write. */
static const struct {
    const char *field, *format;
} sd_shape_fields[] = {
    {"event_id", "`<tag>-<n>`: the run's tag (lowercase hex) and the event's number; the id every count is of"},
    {"parcel_id", "`P` and 8 digits; also the message key"},
    {"event_time", "ISO-8601 in UTC with milliseconds and `Z` (`2026-01-01T08:00:00.000Z`); `start + n*step`"},
    {"location", "a hub code, `-` and 2 digits (`locations=` of them)"},
    {"scan", "one of `received`, `sorted`, `loaded`, `in-transit`, `out-for-delivery`, `delivered`"},
    {"weight_g", "50 to 30,000"},
    {"delivery_id", "`<tag>-d<n>`: the delivery of scan *n*"},
    {"delivered_at", "ISO-8601 as `event_time`: the scan's event time plus `min-delay` to `max-delay`"},
    {"courier", "`C` and 2 digits"},
};

/* What a reader finds in each malformed kind, in sd_malformed_t order. */
static const char *const sd_shape_malformed[SD_MAL__COUNT] = {
    [SD_MAL_TRUNCATED] = "the first half of the event's bytes: JSON that ends inside a string or a number",
    [SD_MAL_NOT_JSON] = "a line of text naming the event's id; no JSON at all",
    [SD_MAL_MISSING_ID] = "the event without its id field",
    [SD_MAL_WRONG_TYPE] = "the event time as an epoch number (seconds) where an ISO-8601 string belongs",
    [SD_MAL_EMPTY] = "an empty value (zero bytes), not a tombstone",
    [SD_MAL_INVALID_UTF8] = "the bytes `\\xff\\xfe`, never UTF-8, before the closing quote of the payload's last string",
    [SD_MAL_OVERSIZED] = "a valid event with a `padding` field of 900 KB (under the broker's 1 MB limit)",
    [SD_MAL_NULL_VALUE] = "no value at all: a tombstone (a compacted topic deletes the key)",
    [SD_MAL_DUPLICATE_KEYS] = "the event time field twice, with two values (`1999-12-31T23:59:59.000Z` second)",
    [SD_MAL_BAD_MAGIC] = "with a wire format (`events format=`): the event encoded, its first byte 1 where the wire format's magic 0 belongs",
    [SD_MAL_UNKNOWN_SCHEMA] = "with a wire format (`events format=`): the event encoded under schema id 2147483631, which the registry never gave",
    [SD_MAL_TRUNCATED_RECORD] = "with a wire format (`events format=`): the 5-byte header and the first half of the encoded record",
    [SD_MAL_FOREIGN_SCHEMA] = "with a wire format (`events format=`): a record of another schema (`Note`: the event id and a line of text), registered under the subject `<topic>-foreign-value` and never under the topic's own",
    [SD_MAL_SCHEMA_VIOLATION] = "with `events format=json-schema`: the event framed as the wire format frames it and JSON, one field of another type than the schema says (a number field as text, `weight_g` in the scans)",
};

/* bytes as a markdown code span inside a table: anything not printable
 * ASCII as \xHH, `|` escaped, cut at max bytes */
static void sd_shape_code(FILE *f, const char *p, size_t n, size_t max) {
    if (!n) {
        fputs("(nothing)", f);
        return;
    }
    fputc('`', f);
    for (size_t i = 0; i < n && i < max; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '|') fputs("\\|", f);
        else if (c < 0x20 || c >= 0x7f || c == '`') fprintf(f, "\\x%02x", c);
        else fputc(c, f);
    }
    fputc('`', f);
    if (n > max) fprintf(f, " ... (%zu bytes)", n);
}

/* One generated event's fields: name, JSON type, format. Returns the
 * number of fields with no format known (a generator's new field). */
static int sd_shape_table(FILE *f, const char *json) {
    json_t *o = json_loads(json, JSON_DECODE_ANY, NULL);
    int missing = 0;
    fputs("| field | JSON type | format |\n|---|---|---|\n", f);
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        const char *fmt = NULL;
        for (size_t i = 0; i < sizeof(sd_shape_fields) / sizeof(sd_shape_fields[0]); i++)
            if (!strcmp(sd_shape_fields[i].field, k)) fmt = sd_shape_fields[i].format;
        if (!fmt) missing++;
        fprintf(f, "| `%s` | %s | %s |\n", k, json_is_integer(v) ? "integer" : json_is_string(v) ? "string" : "other",
                fmt ? fmt : "(not described)");
    }
    json_decref(o);
    return missing;
}

int sd_data_shapes(FILE *f) {
    sd_scenario_t sc;
    memset(&sc, 0, sizeof(sc));
    sd_lang_header_defaults(&sc);
    sd_events_conf_t ec = {.kind = SD_EVENTS_PARCEL, .seed = 42, .tag = "5eed", .start_ms = 1767254400000LL, .step_ms = sc.step_ms,
                           .parcels = sc.parcels, .locations = sc.locations, .id_field = "event_id", .time_field = "event_time",
                           .delivery_share = 100, .delivery_min_ms = sc.delivery_min_ms, .delivery_max_ms = sc.delivery_max_ms};
    sd_events_t *ev;
    char err[256], id[48];
    if (sd_events_open(&ec, &ev, err, sizeof(err))) {
        fprintf(f, "%s\n", err);
        return 1;
    }
    sd_buf_t payload, key;
    sd_buf_init(&payload);
    sd_buf_init(&key);
    int64_t t;
    sd_events_render(ev, 0, INT64_MIN, &payload, &key, &t, err, sizeof(err));
    sd_events_id(ev, 0, id);
    fprintf(f, "A scan (`events parcel-scans`, the default), as the run of tag `%s` sends its event 0: key ", ec.tag);
    sd_shape_code(f, key.data, key.len, 200);
    fprintf(f, ", header `sd-id: %s`, value\n\n```json\n%s\n```\n\n", id, payload.data);
    int missing = sd_shape_table(f, payload.data);
    char *scan = sd_util_strdup(payload.data);
    sd_events_delivery(ev, 0, t, &payload, &key, NULL);
    char did[48];
    sd_events_delivery_id(ev, 0, did);
    fprintf(f, "\nA delivery (`deliveries`), the one of scan 0: key its parcel, header `sd-id: %s`, value\n\n", did);
    fprintf(f, "```json\n%s\n```\n\n", payload.data);
    missing += sd_shape_table(f, payload.data);
    fputs("\nA malformed event (`inject malformed=N`: the first five kinds in turn, with a wire format (`events format=`) its own four, with `json-schema` five, or those `kinds=` names) is a new event, "
          "broken after it is rendered; its `sd-id` header still carries its ledger id, whatever the value holds. Event 0 "
          "broken each way:\n\n| kind | on the wire | what a reader finds |\n|---|---|---|\n", f);
    /* the wire format's kinds as they go out under the default schema, registered as id 1 (the foreign one as 2) */
    char *schema = sd_wire_parcel_schema(SD_WIRE_AVRO, "event_id", "event_time");
    sd_wire_t *wire = NULL;
    sd_wire_open(SD_WIRE_AVRO, schema, 1, 2, &wire, err, sizeof(err));
    free(schema);
    for (int m = 0; m < SD_MAL__COUNT; m++) {
        int null_value;
        sd_buf_reset(&payload);
        sd_buf_puts(&payload, scan);
        sd_data_mangle("event_id", "event_time", (sd_malformed_t)m, &payload, &null_value);
        if (sd_wire_kind((sd_malformed_t)m) && wire) {
            sd_buf_t enc;
            sd_buf_init(&enc);
            sd_wire_malformed(wire, (sd_malformed_t)m, payload.data, payload.len, &enc);
            sd_buf_reset(&payload);
            sd_buf_append(&payload, enc.data, enc.len);
            sd_buf_free(&enc);
        }
        fprintf(f, "| `%s` | ", sd_malformed_name((sd_malformed_t)m));
        if (null_value) fputs("(no value)", f);
        else sd_shape_code(f, payload.data, payload.len, 160);
        fprintf(f, " | %s |\n", sd_shape_malformed[m] ? sd_shape_malformed[m] : "(not described)");
        if (!sd_shape_malformed[m]) missing++;
    }
    sd_wire_close(wire);
    fputs("\nA quarantine that keeps the `sd-id` header of what it rejects lets every malformed event be counted by its id: "
          "an empty, not-JSON, missing-id or tombstone value has no id of its own to keep.\n", f);
    free(scan);
    sd_buf_free(&payload);
    sd_buf_free(&key);
    sd_events_close(ev);
    return missing ? 1 : 0;
}
