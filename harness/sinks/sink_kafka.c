/* sink_kafka.c - reads a Kafka sink: topic=NAME [id=FIELD] [header=NAME]
 * [isolation=read_committed|read_uncommitted] [format=avro|protobuf|json-schema registry=URL
 * [registry-auth=KIND:FROM:WHERE] [registry-ca=PATH] [registry-cert=PATH registry-key=PATH]].
 *
 * A scan assigns every partition from the beginning, without a consumer
 * group (nothing is committed, the pipeline's groups are untouched), and
 * reads up to the end offsets seen when the scan began. read_committed is
 * the default, so aborted transactions are not counted as output. The id
 * is the payload's id field, or a header when header= is given. The writer
 * label is the header sd-writer when the pipeline sets one, else the
 * record's position "p<partition>@<offset>". For a result model each
 * record's value is a JSON object whose fields are the row's columns. With
 * format=avro each value is in a schema registry's wire format and read as
 * the JSON object of its record (harness/format/wire.h; protobuf: decoded
 * by the schema's text, harness/format/protodyn.h; json-schema: the JSON
 * after the header, its id known to the registry): a value that does
 * not decode is a row without an id, a registry that cannot be reached
 * ends the read. The registry-* parameters are the registry client's
 * (harness/format/registry.h): credentials from the environment or a file,
 * the CA of an https registry, a client certificate. */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "sink.h"
#include "util.h"
#include "wire.h"

typedef struct {
    char *topic;
    char *id_field;
    char *header;
    char *isolation;
    char *brokers;
    sd_kvlist_t props;
    rd_kafka_t *meta;  /* metadata, and end offsets as the reader sees them (LSO under read_committed) */
    rd_kafka_t *hw;    /* read_uncommitted: the high watermarks, open transactions included */
    /* the record count, kept up incrementally by a consumer of the
     * reader's isolation that never joins a group: offsets are not
     * records (a transaction's marker takes one, an aborted record is no
     * output), so the count is of records read */
    rd_kafka_t *counter;
    rd_kafka_queue_t *cq;
    int cn;            /* partitions it reads */
    int64_t *cpos;     /* per partition: the offset read up to */
    int64_t *ccnt;     /* per partition: records counted */
    int64_t *clo;      /* per partition: the low watermark when the count began */
    int txn_seen;      /* an open transaction, or a marker between the records counted, was seen */
    int64_t aborted;   /* records of aborted transactions the last scan passed over (or, read_uncommitted, read), -1 not known */
    int64_t committed; /* read_uncommitted: of the records the last scan read, those a read_committed reader sees, -1 not known */
    char *open_note;   /* the last scan's partitions that end in an open transaction, or NULL */
    /* sd_kafka_sink_open_holds: a read_uncommitted reader of the open
     * ranges, and per partition the range last read ([hold_lso, hold_hw))
     * with its answer (1 held the needle, 0 not, -1 none read yet) */
    rd_kafka_t *holder;
    char *hold_needle;
    int hold_n;
    int64_t *hold_lso, *hold_hw;
    int *hold_ans;
    sd_wire_reader_t *wire; /* format=avro: the registry's schemas, fetched once each */
    sd_buf_t decoded;  /* the record's value as JSON */
    sd_err_t fail;     /* why a record callback stopped the read */
} sd_kafka_sink_t;

static void sd_kafka_sink_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    (void)rk; (void)level; (void)fac; (void)buf;
}

/* A consumer of the reader, never in a group's rebalances. One that reads
 * (fetch_wait given) comes back from a fetch with nothing new after
 * fetch_wait: the end of a partition (its EOF) is known only then, and a
 * count that follows a transactional topic waits for it each time the
 * partition ends in a marker. fetch_wait NULL: a handle that only asks
 * metadata and offsets as its isolation sees them (meta, hw), with no
 * group machinery to tear down. */
static rd_kafka_t *sd_kafka_sink_client(sd_kafka_sink_t *s, const char *isolation, const char *fetch_wait, char *err, size_t errlen) {
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[512];
    rd_kafka_conf_set(conf, "bootstrap.servers", s->brokers, NULL, 0);
    rd_kafka_conf_set(conf, "client.id", "streamdrill-sink-reader", NULL, 0);
    rd_kafka_conf_set_log_cb(conf, sd_kafka_sink_log);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", NULL, 0);
    rd_kafka_conf_set(conf, "isolation.level", isolation, NULL, 0);
    if (fetch_wait) {
        rd_kafka_conf_set(conf, "group.id", "streamdrill-sink-reader", NULL, 0);
        rd_kafka_conf_set(conf, "enable.partition.eof", "true", NULL, 0);
        rd_kafka_conf_set(conf, "fetch.max.bytes", "52428800", NULL, 0);
        rd_kafka_conf_set(conf, "fetch.wait.max.ms", fetch_wait, NULL, 0);
        rd_kafka_conf_set(conf, "queued.min.messages", "200000", NULL, 0);
    }
    if (sd_broker_conf_apply(conf, &s->props, "-X", err, errlen)) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
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
    s->aborted = -1;
    s->committed = -1;
    const char *reg = sd_kvlist_get(params, "registry");
    const char *fmt = sd_kvlist_get(params, "format");
    sd_registry_opts_t ro = {.auth = sd_kvlist_get(params, "registry-auth"), .ca = sd_kvlist_get(params, "registry-ca"),
                             .cert = sd_kvlist_get(params, "registry-cert"), .key = sd_kvlist_get(params, "registry-key")};
    sd_registry_t *client = NULL;
    if (reg && sd_registry_open(reg, &ro, &client, err, errlen)) {
        free(s->topic); free(s->id_field); free(s->header); free(s->isolation); free(s->brokers);
        free(s);
        return SD_ERR_REGISTRY;
    }
    if (reg)
        s->wire = sd_wire_reader_new(client, !fmt || !strcmp(fmt, "avro") ? SD_WIRE_AVRO : !strcmp(fmt, "protobuf") ? SD_WIRE_PROTOBUF : SD_WIRE_JSON);
    for (int i = 0; ctx->props && i < ctx->props->n; i++) sd_kvlist_add(&s->props, ctx->props->v[i].key, ctx->props->v[i].value);
    s->meta = sd_kafka_sink_client(s, s->isolation, NULL, err, errlen);
    s->hw = s->meta ? sd_kafka_sink_client(s, "read_uncommitted", NULL, err, errlen) : NULL;
    if (!s->hw) {
        if (s->meta) rd_kafka_destroy(s->meta);
        sd_wire_reader_free(s->wire);
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

/* What the queue holds now, up to max, or, when it holds nothing, the first
 * record to arrive within wait_ms: rd_kafka_consume_batch_queue waits its
 * whole timeout unless the batch fills, a wait a count cannot afford. */
static ssize_t sd_kafka_take(rd_kafka_queue_t *q, rd_kafka_message_t **ms, size_t max, int wait_ms) {
    ssize_t got = rd_kafka_consume_batch_queue(q, 0, ms, max);
    if (got != 0) return got;
    ms[0] = rd_kafka_consume_queue(q, wait_ms);
    return ms[0] ? 1 : 0;
}

/* Every partition of the topic assigned to rk from its beginning (no
 * group: nothing is committed, the pipeline's groups are untouched). */
static void sd_kafka_assign_all(sd_kafka_sink_t *s, rd_kafka_t *rk, int n) {
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(n);
    for (int p = 0; p < n; p++) rd_kafka_topic_partition_list_add(parts, s->topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(rk, parts);
    rd_kafka_topic_partition_list_destroy(parts);
}

/* The counter reads from the beginning of every partition; a topic that
 * gained partitions is read again from the start. */
static void sd_kafka_counter_reset(sd_kafka_sink_t *s, int n) {
    if (s->cq) rd_kafka_queue_destroy(s->cq);
    if (s->counter) { rd_kafka_consumer_close(s->counter); rd_kafka_destroy(s->counter); }
    s->cq = NULL;
    s->counter = NULL;
    free(s->cpos); free(s->ccnt); free(s->clo);
    s->cpos = s->ccnt = s->clo = NULL;
    s->cn = 0;
    if (n <= 0) return;
    s->counter = sd_kafka_sink_client(s, s->isolation, "5", NULL, 0);
    if (!s->counter) return;
    s->cpos = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    s->ccnt = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    s->clo = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    for (int p = 0; p < n; p++) s->clo[p] = -1;
    sd_kafka_assign_all(s, s->counter, n);
    s->cq = rd_kafka_queue_get_consumer(s->counter);
    s->cn = n;
}

/* The end offsets of the n partitions through handle rk: the last stable
 * offset for a read_committed handle, the high watermark otherwise. */
static sd_err_t sd_kafka_ends(sd_kafka_sink_t *s, rd_kafka_t *rk, int n, int64_t *lo, int64_t *end, char *err, size_t errlen) {
    for (int p = 0; p < n; p++) {
        rd_kafka_resp_err_t rerr = sd_kafka_watermarks(rk, s->topic, p, &lo[p], &end[p], (int)sd_util_scaled_ms(10000));
        if (rerr) return sd_err_set(err, errlen, SD_ERR_SINK, "watermarks of %s [%d]: %s", s->topic, p, rd_kafka_err2str(rerr));
    }
    return SD_OK;
}

/* Reads q on until every partition's position pos[p] reaches ends[p] or
 * the deadline passes, counting records into cnt[p]: a record at or past
 * pos counts (and, with bounded, only one before ends[p]); an EOF moves
 * pos past what no reader is handed (a transaction's marker, under
 * read_committed an aborted record). Returns SD_OK caught up,
 * SD_ERR_TIMEOUT at the deadline, or the error of a failed fetch. */
static sd_err_t sd_kafka_read_on(sd_kafka_sink_t *s, rd_kafka_queue_t *q, int n, const int64_t *ends, int bounded, int64_t *pos,
                                 int64_t *cnt, int64_t deadline, char *err, size_t errlen) {
    enum { SD_KAFKA_READ_BATCH = 4096 };
    rd_kafka_message_t *ms[SD_KAFKA_READ_BATCH];
    sd_err_t e = SD_OK;
    for (;;) {
        int behind = 0;
        for (int p = 0; p < n && !behind; p++) behind = pos[p] < ends[p];
        if (e || !behind) return e;
        if (sd_util_mono_ms() > deadline) return SD_ERR_TIMEOUT;
        ssize_t got = sd_kafka_take(q, ms, SD_KAFKA_READ_BATCH, 100);
        for (ssize_t k = 0; k < got; k++) {
            rd_kafka_message_t *m = ms[k];
            int p = m->partition;
            if (p >= 0 && p < n) {
                if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                    if (m->offset > pos[p]) pos[p] = m->offset;
                } else if (m->err) {
                    if (!e) e = sd_err_set(err, errlen, SD_ERR_SINK, "read %s [%d]: %s", s->topic, p, rd_kafka_message_errstr(m));
                } else if (m->offset >= pos[p]) {
                    if (!bounded || m->offset < ends[p]) cnt[p]++;
                    pos[p] = m->offset + 1;
                }
            }
            rd_kafka_message_destroy(m);
        }
    }
}

/* What open transactions hold now, per partition: the high watermark hi[p]
 * past the last stable offset lso[p]. The high watermarks are asked first:
 * records appended between the two asks then raise only the last stable
 * offset, so a topic written on without transactions never looks as if
 * it held an open one. */
static sd_err_t sd_kafka_open_now(sd_kafka_sink_t *s, int n, int64_t *lso, int64_t *hi, char *err, size_t errlen) {
    int64_t *lo = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    sd_err_t e = sd_kafka_ends(s, s->hw, n, lo, hi, err, errlen);
    if (!e) e = sd_kafka_ends(s, s->meta, n, lo, lso, err, errlen);
    free(lo);
    return e;
}

/* Records a reader of the sink's isolation sees, up to the end offsets of
 * now: the counter reads on from where the last count stopped. */
static sd_err_t sd_kafka_sink_count(void *state, int missing_ok, int64_t *rows, char *err, size_t errlen) {
    sd_kafka_sink_t *s = state;
    int n = 0, missing = 0;
    sd_err_t e = sd_kafka_sink_partitions(s, &n, &missing, err, errlen);
    if (e) {
        if (missing && missing_ok) { *rows = 0; return SD_OK; }
        return e;
    }
    if (n != s->cn) sd_kafka_counter_reset(s, n);
    if (!s->counter) return sd_err_set(err, errlen, SD_ERR_SINK, "topic %s: no client to count it with", s->topic);
    int64_t *lo = sd_util_xcalloc((size_t)n, sizeof(int64_t)), *end = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    /* asked of meta, of the same isolation: a request on the counter's
     * connection would queue behind its long-polling fetch */
    e = sd_kafka_ends(s, s->meta, n, lo, end, err, errlen);
    for (int p = 0; !e && p < n; p++) {
        if (s->clo[p] < 0) s->clo[p] = lo[p];
        if (s->cpos[p] < lo[p] && s->ccnt[p] == 0) s->cpos[p] = lo[p]; /* the first record of a trimmed partition */
    }
    /* a count is asked for often: each takes at most half a second, and
     * one that has not caught up (a large topic's first count) takes the
     * offsets it has not read yet for records, an over-estimate that the
     * next counts make exact */
    int64_t unread = 0;
    if (!e) e = sd_kafka_read_on(s, s->cq, n, end, 0, s->cpos, s->ccnt, sd_util_mono_ms() + sd_util_scaled_ms(500), err, errlen);
    if (e == SD_ERR_TIMEOUT) {
        e = SD_OK;
        for (int p = 0; p < n; p++)
            if (s->cpos[p] < end[p]) unread += end[p] - s->cpos[p];
    }
    int64_t total = unread;
    for (int p = 0; p < n; p++) total += s->ccnt[p];
    free(lo); free(end);
    if (!e) *rows = total;
    return e;
}

/* The reader of open ranges, made ready the first time a transaction is
 * seen in the topic (sd_kafka_sink_pending): a new client takes longer
 * than the budget of a look to learn the partitions' leaders and connect
 * to them, so a first look at an idle pipeline would always run out of
 * time. Its metadata of the topic is asked at once, for that. */
static rd_kafka_t *sd_kafka_holder(sd_kafka_sink_t *s) {
    if (s->holder) return s->holder;
    if (!(s->holder = sd_kafka_sink_client(s, "read_uncommitted", "10", NULL, 0))) return NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(s->holder, s->topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    if (!rd_kafka_metadata(s->holder, 0, rkt, &md, (int)sd_util_scaled_ms(2000))) rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    return s->holder;
}

/* Records written to open transactions: the high watermark past the last
 * stable offset, summed over the partitions; -1 while the topic shows no
 * sign of a transactional writer (no open transaction, no marker between
 * the records counted so far) and for a read_uncommitted reader, which
 * sees every record at once. */
static sd_err_t sd_kafka_sink_pending(void *state, int64_t *rows, char *err, size_t errlen) {
    sd_kafka_sink_t *s = state;
    int n = s->cn, missing = 0;
    *rows = -1;
    if (strcmp(s->isolation, "read_committed")) return SD_OK;
    /* asked while a kill waits for its moment: the partitions the last
     * count found (each sample counts), metadata only before the first */
    sd_err_t e = n > 0 ? SD_OK : sd_kafka_sink_partitions(s, &n, &missing, err, errlen);
    if (e) return missing ? SD_OK : e;
    int64_t *lso = sd_util_xcalloc((size_t)n, sizeof(int64_t)), *hi = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    e = sd_kafka_open_now(s, n, lso, hi, err, errlen);
    int64_t sum = 0;
    for (int p = 0; !e && p < n; p++)
        if (hi[p] > lso[p]) sum += hi[p] - lso[p];
    if (sum > 0) s->txn_seen = 1;
    if (s->txn_seen) sd_kafka_holder(s);
    for (int p = 0; !s->txn_seen && p < s->cn && p < n; p++)
        if (s->clo[p] >= 0 && s->cpos[p] - s->clo[p] > s->ccnt[p]) s->txn_seen = 1;
    if (!e && s->txn_seen) *rows = sum;
    free(lso); free(hi);
    return e;
}

/* Each partition's last stable offset and high watermark, for a
 * read_committed reader: the partitions the last count found. */
static int sd_kafka_sink_ends(void *state, int nmax, int64_t *stable, int64_t *end) {
    sd_kafka_sink_t *s = state;
    int n = s->cn < nmax ? s->cn : nmax;
    if (strcmp(s->isolation, "read_committed") || n <= 0) return -1;
    return sd_kafka_open_now(s, n, stable, end, NULL, 0) == SD_OK ? n : -1;
}

/* Does record m hold the needle in its key, its value or its sd-id
 * header? Raw bytes: a ledger id is a plain string in JSON, Avro and
 * Protobuf alike. */
static int sd_kafka_rec_holds(const rd_kafka_message_t *m, const char *needle) {
    size_t nl = strlen(needle);
    if (m->payload && memmem(m->payload, m->len, needle, nl)) return 1;
    if (m->key && memmem(m->key, m->key_len, needle, nl)) return 1;
    rd_kafka_headers_t *h = NULL;
    const void *v = NULL;
    size_t vl = 0;
    return !rd_kafka_message_headers(m, &h) && !rd_kafka_header_get_last(h, "sd-id", &v, &vl) && v && memmem(v, vl, needle, nl);
}

/* Read the open ranges [lso[p], hi[p]) not answered yet (ans[p] < 0) with
 * the holder, until each is read to its end or holds the needle, or the
 * deadline passes (those partitions stay -1). */
static void sd_kafka_read_holds(sd_kafka_sink_t *s, int n, const int64_t *lso, const int64_t *hi, int *ans, const char *needle,
                                int64_t deadline) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n);
    int64_t *pos = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    for (int p = 0; p < n; p++)
        if (ans[p] < 0) rd_kafka_topic_partition_list_add(l, s->topic, p)->offset = pos[p] = lso[p];
    rd_kafka_assign(s->holder, l);
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(s->holder);
    for (;;) {
        int left = 0;
        for (int p = 0; p < n; p++) {
            if (ans[p] < 0 && pos[p] >= hi[p]) ans[p] = 0;
            left |= ans[p] < 0;
        }
        if (!left || sd_util_mono_ms() > deadline) break;
        rd_kafka_message_t *m = rd_kafka_consume_queue(q, 20);
        if (!m) continue;
        int p = m->partition;
        if (p >= 0 && p < n && ans[p] < 0 && m->offset >= pos[p]) {
            if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) pos[p] = m->offset; /* past a marker, or the end */
            else if (!m->err && m->offset < hi[p] && sd_kafka_rec_holds(m, needle)) ans[p] = 1;
            else if (!m->err) pos[p] = m->offset + 1;
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_queue_destroy(q);
    rd_kafka_assign(s->holder, NULL);
    rd_kafka_topic_partition_list_destroy(l);
    free(pos);
}

/* Do the records open transactions hold (each partition's high watermark
 * past its last stable offset, and past from[p] when given) carry the
 * needle? Read once per range: the answer is kept while a partition's two
 * ends stay where they were, so a kill's aim, asking every few ms, reads
 * each range once. 1 yes, 0 no (or nothing is open), -1 the ranges could
 * not be read within budget_ms. */
static int sd_kafka_sink_open_holds(void *state, const char *needle, const int64_t *from, int nfrom, int64_t budget_ms) {
    sd_kafka_sink_t *s = state;
    int n = s->cn;
    if (strcmp(s->isolation, "read_committed") || n <= 0) return -1;
    int64_t deadline = sd_util_mono_ms() + budget_ms;
    if (!sd_kafka_holder(s)) return -1;
    if (n != s->hold_n || !s->hold_needle || strcmp(s->hold_needle, needle)) {
        free(s->hold_needle); free(s->hold_lso); free(s->hold_hw); free(s->hold_ans);
        s->hold_needle = sd_util_strdup(needle);
        s->hold_n = n;
        s->hold_lso = sd_util_xcalloc((size_t)n, sizeof(int64_t));
        s->hold_hw = sd_util_xcalloc((size_t)n, sizeof(int64_t));
        s->hold_ans = sd_util_xcalloc((size_t)n, sizeof(int));
        for (int p = 0; p < n; p++) s->hold_ans[p] = -1;
    }
    int64_t *lso = sd_util_xcalloc((size_t)n, sizeof(int64_t)), *hi = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    int *ans = sd_util_xcalloc((size_t)n, sizeof(int)), held = 0, unknown = 0;
    if (sd_kafka_open_now(s, n, lso, hi, NULL, 0) != SD_OK) {
        free(lso); free(hi); free(ans);
        return -1;
    }
    for (int p = 0; p < n; p++) {
        if (from && p < nfrom && from[p] > lso[p]) lso[p] = from[p]; /* only what was written since from[p] */
        int same = s->hold_ans[p] >= 0 && s->hold_lso[p] == lso[p] && s->hold_hw[p] == hi[p];
        ans[p] = hi[p] <= lso[p] ? 0 : same ? s->hold_ans[p] : -1;
        held |= ans[p] == 1;
    }
    if (!held) sd_kafka_read_holds(s, n, lso, hi, ans, needle, deadline);
    for (int p = 0; p < n; p++) {
        s->hold_lso[p] = lso[p], s->hold_hw[p] = hi[p], s->hold_ans[p] = ans[p];
        held |= ans[p] == 1;
        unknown |= ans[p] < 0;
    }
    free(lso); free(hi); free(ans);
    return held ? 1 : unknown ? -1 : 0;
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

/* Records from the beginning up to ends[p] read by a fresh client of the
 * given isolation, counted per partition into got[] (the split of a
 * read_committed reader's gaps into aborted records and markers). */
static sd_err_t sd_kafka_count_upto(sd_kafka_sink_t *s, const char *isolation, int n, const int64_t *ends, int64_t *got, char *err,
                                    size_t errlen) {
    rd_kafka_t *rk = sd_kafka_sink_client(s, isolation, "50", err, errlen);
    if (!rk) return SD_ERR_SINK;
    int64_t *pos = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    sd_kafka_assign_all(s, rk, n);
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
    sd_err_t e = sd_kafka_read_on(s, q, n, ends, 1, pos, got, sd_util_mono_ms() + sd_util_scaled_ms(30000), err, errlen);
    if (e == SD_ERR_TIMEOUT) e = sd_err_set(err, errlen, SD_ERR_SINK, "topic %s: read %s too slowly", s->topic, isolation);
    rd_kafka_queue_destroy(q);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    free(pos);
    return e;
}

/* What a read_uncommitted scan read that a read_committed consumer would
 * not be given, for the notes and the verdict: records of aborted
 * transactions and of transactions still open. A topic whose offsets hold
 * no gap (no transaction marker) and no open transaction has none, and is
 * not read again; otherwise fresh read_committed and read_uncommitted
 * counts up to the last stable offsets tell the committed records from the
 * aborted ones, and what the scan read past them is open. */
static void sd_kafka_uncommitted_notes(sd_kafka_sink_t *s, int n, const int64_t *lo, const int64_t *end, const int64_t *read) {
    int64_t *hi = sd_util_xcalloc((size_t)n, sizeof(int64_t)), *lso = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    int64_t *all = sd_util_xcalloc((size_t)n, sizeof(int64_t)), *got = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    int64_t total = 0, gaps = 0, open_now = 0;
    for (int p = 0; p < n; p++) {
        total += read[p];
        gaps += end[p] - lo[p] - read[p];
    }
    sd_err_t e = sd_kafka_open_now(s, n, lso, hi, NULL, 0);
    for (int p = 0; !e && p < n; p++) open_now += hi[p] > lso[p];
    if (!e && !gaps && !open_now) {
        s->aborted = 0;
        s->committed = total;
    } else if (!e) {
        /* the scan's ends, not later ones: what it read is what is judged */
        for (int p = 0; p < n; p++)
            if (lso[p] > end[p]) lso[p] = end[p];
        if (!(e = sd_kafka_count_upto(s, "read_committed", n, lso, got, NULL, 0)))
            e = sd_kafka_count_upto(s, "read_uncommitted", n, lso, all, NULL, 0);
        int64_t committed = 0, upto = 0;
        for (int p = 0; !e && p < n; p++) {
            committed += got[p];
            upto += all[p];
        }
        if (!e) {
            s->committed = committed;
            s->aborted = upto - committed;
            int64_t open = total > upto ? total - upto : 0;
            s->open_note = sd_util_fmt("read with isolation=read_uncommitted: of the %lld records read, %lld are committed (what a "
                                       "read_committed consumer sees), %lld are of aborted transactions and %lld of transactions "
                                       "still open%s", (long long)total, (long long)committed, (long long)s->aborted, (long long)open,
                                       total && !committed ? ": none of the target is the pipeline's committed output" : "");
        }
    }
    free(hi); free(lso); free(all); free(got);
}

/* What a read_committed scan found between its records, for the notes:
 * transactions left open at the end (the high watermark past the last
 * stable offset), and the offsets it skipped (read[p] records in
 * [lo, end)), split into aborted records and transaction markers by a
 * read_uncommitted count. */
static void sd_kafka_txn_notes(sd_kafka_sink_t *s, int n, const int64_t *lo, const int64_t *end, const int64_t *read) {
    free(s->open_note);
    s->open_note = NULL;
    s->aborted = -1;
    s->committed = -1;
    if (strcmp(s->isolation, "read_committed")) {
        sd_kafka_uncommitted_notes(s, n, lo, end, read);
        return;
    }
    sd_buf_t b, open;
    sd_buf_init(&b);
    sd_buf_init(&open);
    /* open now, asked afresh: the scan's own end offsets are older, and a
     * topic written on since has grown past them without any transaction */
    int64_t *hi = sd_util_xcalloc((size_t)n, sizeof(int64_t)), *lso = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    if (!sd_kafka_open_now(s, n, lso, hi, NULL, 0))
        for (int p = 0; p < n; p++)
            if (hi[p] > lso[p])
                sd_buf_printf(&open, "%spartition %d offsets %lld-%lld", open.len ? ", " : "", p, (long long)lso[p], (long long)hi[p] - 1);
    if (open.len)
        sd_buf_printf(&b, "an output transaction was left open at the end: %s of %s are not committed (a read_committed reader does "
                      "not see them)", open.data, s->topic);
    int64_t skipped = 0;
    for (int p = 0; p < n; p++) skipped += end[p] - lo[p] - read[p];
    int64_t *all = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    if (skipped == 0) s->aborted = 0;
    if (skipped > 0 && !sd_kafka_count_upto(s, "read_uncommitted", n, end, all, NULL, 0)) {
        int64_t aborted = 0;
        for (int p = 0; p < n; p++) { aborted += all[p] - read[p]; }
        s->aborted = aborted;
        sd_buf_printf(&b, "%s%s holds %lld record%s of aborted transactions (not output: a read_committed reader skips them) and "
                      "%lld transaction marker%s", b.len ? "; " : "", s->topic, (long long)aborted, aborted == 1 ? "" : "s",
                      (long long)(skipped - aborted), skipped - aborted == 1 ? "" : "s");
    }
    s->open_note = b.len ? sd_util_strdup(b.data) : NULL;
    free(all); free(hi); free(lso);
    sd_buf_free(&b);
    sd_buf_free(&open);
}

/* Every record of the topic up to the end offsets seen when the read
 * began (the last stable offsets under read_committed, the default;
 * isolation= says otherwise); open transactions, aborted records and
 * markers are kept for the notes. */
static sd_err_t sd_kafka_sink_each(sd_kafka_sink_t *s, sd_kafka_rec_cb on_rec, void *ctx, char *err, size_t errlen) {
    int n = 0, missing = 0;
    sd_err_t e = sd_kafka_sink_partitions(s, &n, &missing, err, errlen);
    if (e) return e;
    int64_t *hi = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    int64_t *lo = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    if ((e = sd_kafka_ends(s, s->meta, n, lo, hi, err, errlen))) {
        free(hi); free(lo);
        return e;
    }
    for (int p = 0; p < n; p++)
        if (lo[p] > 0) {
            e = sd_err_set(err, errlen, SD_ERR_TRIMMED,
                           "topic %s [%d] starts at offset %lld: the broker deleted %lld records before the harness could read them "
                           "(the topic's retention: retention.ms deletes by record timestamp, so a pipeline that stamps its output "
                           "with old event times sees it deleted at once; retention.bytes by size)",
                           s->topic, p, (long long)lo[p], (long long)lo[p]);
            free(hi); free(lo);
            return e;
        }
    rd_kafka_t *rk = sd_kafka_sink_client(s, s->isolation, "50", err, errlen);
    if (!rk) { free(hi); free(lo); return SD_ERR_SINK; }
    int remaining = 0;
    char *done = sd_util_xcalloc((size_t)n, 1);
    for (int p = 0; p < n; p++) {
        if (hi[p] > lo[p]) remaining++;
        else done[p] = 1;
    }
    sd_kafka_assign_all(s, rk, n);
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
    int64_t *read = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    while (remaining > 0 && !stop) {
        ssize_t got = sd_kafka_take(q, ms, SD_KAFKA_BATCH, 200);
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
                read[p]++;
                rd_kafka_timestamp_type_t tt;
                int64_t ts = rd_kafka_message_timestamp(m, &tt);
                s->fail = SD_OK;
                int rc = on_rec(ctx, m, wbuf, wlen, ts >= 0 ? ts : INT64_MIN, err, errlen);
                if (rc < 0) e = s->fail ? s->fail : SD_ERR_SINK;
                if (rc) stop = 1;
            }
            if (p >= 0 && p < n && !done[p] && m->offset + 1 >= hi[p]) { done[p] = 1; remaining--; }
            rd_kafka_message_destroy(m);
        }
    }
    free(ms);
    if (!e && !stop) sd_kafka_txn_notes(s, n, lo, hi, read);
    free(read);
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

/* The record's value as JSON: the payload, or with format=avro its record
 * decoded into s->decoded. NULL with *why set when it does not decode; NULL
 * with s->fail set (SD_ERR_REGISTRY) when the registry cannot be asked. */
static const char *sd_kafka_value(sd_kafka_sink_t *s, const rd_kafka_message_t *m, size_t *len, char *why, size_t whylen) {
    *len = m->len;
    if (!s->wire || !m->payload) return m->payload;
    sd_err_t e = sd_wire_decode(s->wire, m->payload, m->len, &s->decoded, why, whylen);
    if (e == SD_ERR_REGISTRY) s->fail = e;
    if (e) return NULL;
    *len = s->decoded.len;
    return s->decoded.data;
}

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
        size_t vlen;
        char why[512];
        const char *v = sd_kafka_value(x->s, m, &vlen, why, sizeof(why));
        if (x->s->fail) {
            sd_err_set(err, errlen, x->s->fail, "topic %s [%d] offset %lld: %s", x->s->topic, m->partition, (long long)m->offset, why);
            return -1;
        }
        if (v) idlen = sd_sink_json_field(v, vlen, x->s->id_field, idbuf, sizeof(idbuf));
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
    size_t vlen;
    char why[512];
    const char *v = sd_kafka_value(x->s, m, &vlen, why, sizeof(why));
    if (!v && m->payload) {
        sd_err_set(err, errlen, x->s->fail ? x->s->fail : SD_ERR_SINK, "topic %s [%d] offset %lld: %s", x->s->topic, m->partition,
                   (long long)m->offset, why);
        return -1;
    }
    int rc = v ? sd_sink_json_cols(v, vlen, x->names, x->n, writer, x->cb, x->opaque) : -1;
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

static int64_t sd_kafka_sink_aborted(void *state) { return ((sd_kafka_sink_t *)state)->aborted; }
static int64_t sd_kafka_sink_committed(void *state) { return ((sd_kafka_sink_t *)state)->committed; }

static void sd_kafka_sink_close(void *state) {
    sd_kafka_sink_t *s = state;
    free(s->open_note);
    sd_wire_reader_free(s->wire);
    sd_buf_free(&s->decoded);
    sd_kafka_counter_reset(s, 0);
    if (s->holder) { rd_kafka_consumer_close(s->holder); rd_kafka_destroy(s->holder); }
    free(s->hold_needle); free(s->hold_lso); free(s->hold_hw); free(s->hold_ans);
    if (s->hw) rd_kafka_destroy(s->hw);
    if (s->meta) rd_kafka_destroy(s->meta);
    free(s->topic); free(s->id_field); free(s->header); free(s->isolation); free(s->brokers);
    sd_kvlist_free(&s->props);
    free(s);
}

const sd_sink_ops_t sd_sink_kafka = {
    .name = "kafka", .open = sd_kafka_sink_open, .count = sd_kafka_sink_count, .scan = sd_kafka_sink_scan,
    .close = sd_kafka_sink_close, .notes = sd_kafka_sink_notes, .scan_cols = sd_kafka_sink_scan_cols,
    .pending = sd_kafka_sink_pending, .aborted = sd_kafka_sink_aborted, .committed = sd_kafka_sink_committed,
    .ends = sd_kafka_sink_ends, .open_holds = sd_kafka_sink_open_holds,
};
