/* sink_kafka.c - reads a Kafka sink: topic=NAME [id=FIELD] [header=NAME]
 * [isolation=read_committed|read_uncommitted].
 *
 * A scan assigns every partition from the beginning, without a consumer
 * group (nothing is committed, the pipeline's groups are untouched), and
 * reads up to the end offsets seen when the scan began. read_committed is
 * the default, so aborted transactions are not counted as output. The id
 * is the payload's id field, or a header when header= is given. The writer
 * label is the header sd-writer when the pipeline sets one, else the
 * record's position "p<partition>@<offset>". For a result model each
 * record's value is a JSON object whose fields are the row's columns. */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "sink.h"
#include "util.h"

typedef struct {
    char *topic;
    char *id_field;
    char *header;
    char *isolation;
    char *brokers;
    sd_kvlist_t props;
    rd_kafka_t *meta;  /* for counts */
    char *open_note;   /* the last scan's partitions that end in an open transaction, or NULL */
} sd_kafka_sink_t;

static void sd_kafka_sink_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    (void)rk; (void)level; (void)fac; (void)buf;
}

static rd_kafka_t *sd_kafka_sink_client(sd_kafka_sink_t *s, rd_kafka_type_t type, char *err, size_t errlen) {
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[512];
    rd_kafka_conf_set(conf, "bootstrap.servers", s->brokers, NULL, 0);
    rd_kafka_conf_set(conf, "client.id", "streamdrill-sink-reader", NULL, 0);
    rd_kafka_conf_set_log_cb(conf, sd_kafka_sink_log);
    if (type == RD_KAFKA_CONSUMER) {
        rd_kafka_conf_set(conf, "group.id", "streamdrill-sink-reader", NULL, 0);
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", NULL, 0);
        rd_kafka_conf_set(conf, "enable.partition.eof", "true", NULL, 0);
        rd_kafka_conf_set(conf, "isolation.level", s->isolation, NULL, 0);
        rd_kafka_conf_set(conf, "fetch.max.bytes", "52428800", NULL, 0);
        rd_kafka_conf_set(conf, "queued.min.messages", "200000", NULL, 0);
    }
    if (sd_broker_conf_apply(conf, &s->props, "-X", err, errlen)) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof(errstr));
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        sd_err_set(err, errlen, SD_ERR_SINK, "client for %s: %s", s->brokers, errstr);
    }
    return rk;
}

static sd_err_t sd_kafka_sink_open(const sd_kvlist_t *params, const sd_sink_ctx_t *ctx, void **state, char *err,
                                   size_t errlen) {
    sd_kafka_sink_t *s = sd_util_xcalloc(1, sizeof(*s));
    s->topic = sd_util_strdup(sd_kvlist_get(params, "topic"));
    const char *id = sd_kvlist_get(params, "id");
    s->id_field = sd_util_strdup(id ? id : ctx->id_field ? ctx->id_field : "event_id");
    const char *h = sd_kvlist_get(params, "header");
    s->header = h ? sd_util_strdup(h) : NULL;
    const char *iso = sd_kvlist_get(params, "isolation");
    s->isolation = sd_util_strdup(iso ? iso : "read_committed");
    s->brokers = sd_util_strdup(ctx->brokers ? ctx->brokers : "");
    for (int i = 0; ctx->props && i < ctx->props->n; i++) sd_kvlist_add(&s->props, ctx->props->v[i].key, ctx->props->v[i].value);
    s->meta = sd_kafka_sink_client(s, RD_KAFKA_PRODUCER, err, errlen);
    if (!s->meta) {
        free(s->topic); free(s->id_field); free(s->header); free(s->isolation); free(s->brokers);
        sd_kvlist_free(&s->props);
        free(s);
        return SD_ERR_SINK;
    }
    *state = s;
    return SD_OK;
}

/* Partition count; 0 with *missing when the topic does not exist. */
static sd_err_t sd_kafka_sink_partitions(sd_kafka_sink_t *s, int *n, int *missing, char *err, size_t errlen) {
    *missing = 0;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(s->meta, s->topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t rerr = rd_kafka_metadata(s->meta, 0, rkt, &md, (int)sd_util_scaled_ms(10000));
    rd_kafka_topic_destroy(rkt);
    if (rerr) return sd_err_set(err, errlen, SD_ERR_SINK, "metadata of topic %s: %s", s->topic, rd_kafka_err2str(rerr));
    sd_err_t e = SD_OK;
    if (md->topic_cnt != 1 || md->topics[0].err || md->topics[0].partition_cnt == 0) {
        *missing = 1;
        e = sd_err_set(err, errlen, SD_ERR_SINK, "topic %s: %s", s->topic,
                       md->topic_cnt && md->topics[0].err ? rd_kafka_err2str(md->topics[0].err) : "does not exist");
    } else {
        *n = md->topics[0].partition_cnt;
    }
    rd_kafka_metadata_destroy(md);
    return e;
}

static sd_err_t sd_kafka_sink_count(void *state, int missing_ok, int64_t *rows, char *err, size_t errlen) {
    sd_kafka_sink_t *s = state;
    int n = 0, missing = 0;
    sd_err_t e = sd_kafka_sink_partitions(s, &n, &missing, err, errlen);
    if (e) {
        if (missing && missing_ok) { *rows = 0; return SD_OK; }
        return e;
    }
    int64_t total = 0;
    for (int p = 0; p < n; p++) {
        int64_t lo, hi;
        rd_kafka_resp_err_t rerr = rd_kafka_query_watermark_offsets(s->meta, s->topic, p, &lo, &hi, (int)sd_util_scaled_ms(10000));
        if (rerr) return sd_err_set(err, errlen, SD_ERR_SINK, "watermarks of %s [%d]: %s", s->topic, p, rd_kafka_err2str(rerr));
        total += hi - lo;
    }
    *rows = total;
    return SD_OK;
}

/* "p<partition>@<offset>", the label of a record the pipeline did not label. */
static size_t sd_kafka_position(char *out, int p, int64_t off) {
    char tmp[48];
    size_t n = 0, k = 0;
    out[n++] = 'p';
    uint64_t v = (uint64_t)(p < 0 ? 0 : p);
    do { tmp[k++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (k) out[n++] = tmp[--k];
    out[n++] = '@';
    v = (uint64_t)(off < 0 ? 0 : off);
    do { tmp[k++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (k) out[n++] = tmp[--k];
    out[n] = 0;
    return n;
}

/* One record read by sd_kafka_sink_each: its payload, partition, offset,
 * timestamp and writer label. Returns 1 to stop, -1 with err set for a
 * record that cannot be read as a row, else 0. */
typedef int (*sd_kafka_rec_cb)(void *ctx, const rd_kafka_message_t *m, const char *writer, size_t wlen, int64_t ts, char *err,
                               size_t errlen);

/* Every record of the topic up to the end offsets seen when the read
 * began, read_committed unless isolation= says otherwise; an open
 * transaction at the end is kept for the notes. */
static sd_err_t sd_kafka_sink_each(sd_kafka_sink_t *s, sd_kafka_rec_cb on_rec, void *ctx, char *err, size_t errlen) {
    int n = 0, missing = 0;
    sd_err_t e = sd_kafka_sink_partitions(s, &n, &missing, err, errlen);
    if (e) return e;
    int64_t *hi = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    int64_t *lo = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    for (int p = 0; p < n; p++) {
        rd_kafka_resp_err_t rerr = rd_kafka_query_watermark_offsets(s->meta, s->topic, p, &lo[p], &hi[p], (int)sd_util_scaled_ms(10000));
        if (rerr) {
            free(hi); free(lo);
            return sd_err_set(err, errlen, SD_ERR_SINK, "watermarks of %s [%d]: %s", s->topic, p, rd_kafka_err2str(rerr));
        }
    }
    for (int p = 0; p < n; p++)
        if (lo[p] > 0) {
            e = sd_err_set(err, errlen, SD_ERR_TRIMMED,
                           "topic %s [%d] starts at offset %lld: the broker deleted %lld records before the harness could read them",
                           s->topic, p, (long long)lo[p], (long long)lo[p]);
            free(hi); free(lo);
            return e;
        }
    rd_kafka_t *rk = sd_kafka_sink_client(s, RD_KAFKA_CONSUMER, err, errlen);
    if (!rk) { free(hi); free(lo); return SD_ERR_SINK; }
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(n);
    int remaining = 0;
    char *done = sd_util_xcalloc((size_t)n, 1);
    for (int p = 0; p < n; p++) {
        rd_kafka_topic_partition_list_add(parts, s->topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
        if (hi[p] > lo[p]) remaining++;
        else done[p] = 1;
    }
    rd_kafka_assign(rk, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    char wbuf[64];
    int64_t idle_deadline = sd_util_mono_ms() + sd_util_scaled_ms(30000);
    int stop = 0;
    /* whether the pipeline labels its records (header sd-writer): looked
     * for in the first records; a pipeline that does not label its first
     * thousand records is not asked again (each lookup parses the headers) */
    int64_t seen = 0, labelled = 0;
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
    enum { SD_KAFKA_BATCH = 10000 };
    rd_kafka_message_t **ms = sd_util_xmalloc(sizeof(*ms) * SD_KAFKA_BATCH);
    sd_buf_t open;
    sd_buf_init(&open);
    while (remaining > 0 && !stop) {
        ssize_t got = rd_kafka_consume_batch_queue(q, 200, ms, SD_KAFKA_BATCH);
        if (got <= 0) {
            if (sd_util_mono_ms() > idle_deadline) {
                e = sd_err_set(err, errlen, SD_ERR_SINK, "topic %s: no data for 30s with %d partitions unread", s->topic, remaining);
                break;
            }
            continue;
        }
        idle_deadline = sd_util_mono_ms() + sd_util_scaled_ms(30000);
        for (ssize_t k = 0; k < got; k++) {
            rd_kafka_message_t *m = ms[k];
            int p = m->partition;
            if (stop || e) {
                rd_kafka_message_destroy(m);
                continue;
            }
            if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                /* read_committed ends at the last stable offset: records
                 * past it belong to a transaction still open */
                if (p >= 0 && p < n && !done[p] && m->offset >= 0 && m->offset < hi[p] && !strcmp(s->isolation, "read_committed"))
                    sd_buf_printf(&open, "%spartition %d offsets %lld-%lld", open.len ? ", " : "", p, (long long)m->offset,
                                  (long long)hi[p] - 1);
                if (p >= 0 && p < n && !done[p]) { done[p] = 1; remaining--; }
                rd_kafka_message_destroy(m);
                continue;
            }
            if (m->err) {
                e = sd_err_set(err, errlen, SD_ERR_SINK, "consume %s [%d]: %s", s->topic, p, rd_kafka_message_errstr(m));
                rd_kafka_message_destroy(m);
                continue;
            }
            if (p >= 0 && p < n && !done[p] && m->offset < hi[p]) {
                rd_kafka_headers_t *hdrs = NULL;
                size_t wlen = 0;
                const void *wv;
                size_t wl;
                if ((labelled || seen < 1000) && !rd_kafka_message_headers(m, &hdrs) &&
                    !rd_kafka_header_get_last(hdrs, "sd-writer", &wv, &wl) && wv && wl < sizeof(wbuf)) {
                    memcpy(wbuf, wv, wl);
                    wbuf[wl] = 0;
                    wlen = wl;
                    labelled = 1;
                } else {
                    wlen = sd_kafka_position(wbuf, p, m->offset);
                }
                seen++;
                rd_kafka_timestamp_type_t tt;
                int64_t ts = rd_kafka_message_timestamp(m, &tt);
                int rc = on_rec(ctx, m, wbuf, wlen, ts >= 0 ? ts : INT64_MIN, err, errlen);
                if (rc < 0) e = SD_ERR_SINK;
                if (rc) stop = 1;
            }
            if (p >= 0 && p < n && !done[p] && m->offset + 1 >= hi[p]) { done[p] = 1; remaining--; }
            rd_kafka_message_destroy(m);
        }
    }
    free(ms);
    free(s->open_note);
    s->open_note = open.len ? sd_util_fmt("an output transaction was left open at the end: %s of %s are not committed (a read_committed "
                                          "reader does not see them)", open.data, s->topic) : NULL;
    sd_buf_free(&open);
    rd_kafka_queue_destroy(q);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    free(done); free(hi); free(lo);
    return e;
}

typedef struct {
    sd_kafka_sink_t *s;
    sd_sink_row_cb cb;
    void *opaque;
} sd_kafka_ids_t;

/* the id: the payload's id field, or the header= header */
static int sd_kafka_row_id(void *ctx, const rd_kafka_message_t *m, const char *writer, size_t wlen, int64_t ts, char *err,
                           size_t errlen) {
    (void)err, (void)errlen;
    sd_kafka_ids_t *x = ctx;
    char idbuf[512];
    int idlen = -1;
    if (x->s->header) {
        rd_kafka_headers_t *hdrs = NULL;
        const void *hv;
        size_t hl;
        if (!rd_kafka_message_headers((rd_kafka_message_t *)m, &hdrs) && !rd_kafka_header_get_last(hdrs, x->s->header, &hv, &hl) && hv &&
            hl < sizeof(idbuf)) {
            memcpy(idbuf, hv, hl);
            idbuf[hl] = 0;
            idlen = (int)hl;
        }
    } else {
        idlen = sd_sink_json_field(m->payload, m->len, x->s->id_field, idbuf, sizeof(idbuf));
    }
    return x->cb(x->opaque, idlen >= 0 ? idbuf : NULL, idlen >= 0 ? (size_t)idlen : 0, writer, wlen, ts) ? 1 : 0;
}

static sd_err_t sd_kafka_sink_scan(void *state, sd_sink_row_cb cb, void *opaque, char *err, size_t errlen) {
    sd_kafka_ids_t x = {state, cb, opaque};
    return sd_kafka_sink_each(state, sd_kafka_row_id, &x, err, errlen);
}

typedef struct {
    sd_kafka_sink_t *s;
    const char *const *names;
    int n;
    sd_sink_cols_cb cb;
    void *opaque;
} sd_kafka_cols_t;

/* a row of named columns: the payload is a JSON object (a result model's
 * rows: windows, latest state, joined pairs); the writer label stands in
 * for a missing sd_writer field */
static int sd_kafka_row_cols(void *ctx, const rd_kafka_message_t *m, const char *writer, size_t wlen, int64_t ts, char *err,
                             size_t errlen) {
    (void)wlen, (void)ts;
    sd_kafka_cols_t *x = ctx;
    int rc = m->payload ? sd_sink_json_cols(m->payload, m->len, x->names, x->n, writer, x->cb, x->opaque) : -1;
    if (rc < 0) {
        sd_buf_t b;
        sd_buf_init(&b);
        if (m->payload) sd_buf_put_printable(&b, m->payload, m->len, 80);
        if (m->payload)
            sd_err_set(err, errlen, SD_ERR_SINK, "topic %s [%d] offset %lld: expected a JSON object, found \"%s\"", x->s->topic,
                       m->partition, (long long)m->offset, b.data ? b.data : "");
        else
            sd_err_set(err, errlen, SD_ERR_SINK, "topic %s [%d] offset %lld: the record has no value (a tombstone), not a row",
                       x->s->topic, m->partition, (long long)m->offset);
        sd_buf_free(&b);
        return -1;
    }
    return rc;
}

static sd_err_t sd_kafka_sink_scan_cols(void *state, const char *const *names, int n, sd_sink_cols_cb cb, void *opaque, char *err,
                                        size_t errlen) {
    sd_kafka_cols_t x = {state, names, n, cb, opaque};
    return sd_kafka_sink_each(state, sd_kafka_row_cols, &x, err, errlen);
}

static char *sd_kafka_sink_notes(void *state) {
    sd_kafka_sink_t *s = state;
    return s->open_note ? sd_util_strdup(s->open_note) : NULL;
}

static void sd_kafka_sink_close(void *state) {
    sd_kafka_sink_t *s = state;
    free(s->open_note);
    if (s->meta) rd_kafka_destroy(s->meta);
    free(s->topic); free(s->id_field); free(s->header); free(s->isolation); free(s->brokers);
    sd_kvlist_free(&s->props);
    free(s);
}

const sd_sink_ops_t sd_sink_kafka = {
    .name = "kafka", .open = sd_kafka_sink_open, .count = sd_kafka_sink_count, .scan = sd_kafka_sink_scan,
    .close = sd_kafka_sink_close, .notes = sd_kafka_sink_notes, .scan_cols = sd_kafka_sink_scan_cols
};
