/* reftxn.c - the reference transactional pipeline: Kafka in, Kafka out,
 * exactly-once through Kafka's transactions, the way Kafka Streams runs
 * under processing.guarantee=exactly_once_v2 (and any consume-transform-
 * produce loop on a Kafka client does).
 *
 *   reftxn --brokers B --topic T --out TOPIC --group G
 *          [--dead TOPIC] [--changelog TOPIC] [--txn-id ID]
 *          [--guarantee exactly-once|at-least-once] [--max-batch 100]
 *          [--trigger-ms 200] [--row-delay-ms 2] [--txn-timeout-ms 60000]
 *          [--loop batch|stream] [--weak LIST]
 *          [--format avro|protobuf|json-schema --registry URL [--registry-auth KIND:FROM:WHERE]
 *           [--registry-ca PATH] [--registry-cert PATH --registry-key PATH]]
 *
 * A batch is a transaction: up to --max-batch records (closed --trigger-ms
 * after the first), each valid one with an id not seen before written to
 * --out and its id to the --changelog topic (the de-duplication store's
 * changelog, as a Streams state store keeps one), each malformed one to
 * --dead as {"sd_id": ..., "reason": ...}; then the consumed offsets are
 * sent to the transaction (the group's offsets commit with it) and the
 * transaction commits. On start the store is restored by reading the
 * changelog (read_committed) to its end, and the group's committed
 * offsets are where reading resumes. The transactional id fences a killed
 * incarnation's producer: its open transaction is aborted, never half
 * seen. Each record costs --row-delay-ms (standing in for real work, so
 * that a transaction is open long enough for a kill to land inside it).
 *
 * It prints no markers: a drill follows it with `progress group`, which
 * sees each commit in the group's offsets and each batch as the open
 * transaction in the output.
 *
 * --guarantee at-least-once writes without transactions: records, the
 * changelog and the dead letters flushed, then the offsets committed.
 *
 * --weak LIST, deliberate bugs:
 *   no-changelog         the store lives in memory only: a restarted
 *                        incarnation has forgotten what it wrote, and a
 *                        replayed record is written again
 *   offsets-outside-txn  the batch's offsets are committed to the group
 *                        before its transaction: a kill inside the
 *                        transaction aborts the output the offsets claim
 *   abort-txn            every batch's transaction is aborted instead of
 *                        committed (its output and offsets with it); the
 *                        consumer reads on: nothing is ever committed, and
 *                        only a read_uncommitted reader sees the records
 *   idle-open-txn        a second transactional producer (its own id,
 *                        <txn-id>-idle) that, whenever the input has been
 *                        idle for half a second, writes one record to --out
 *                        in a transaction it keeps open 2 s and then
 *                        aborts: an open transaction in the output that
 *                        holds no consumed input (a side writer, a
 *                        heartbeat), so no batch is in flight
 *   unfenced             the transactional id changes per process
 *                        (<txn-id>-<pid>): a restarted incarnation does not
 *                        fence the killed one, whose open transaction holds
 *                        the output's last stable offset back (hiding all
 *                        later output from read_committed readers) until the
 *                        broker's transaction timeout (--txn-timeout-ms)
 *                        aborts it
 *   half-plain           every second row of --out is written by a plain
 *                        producer outside the transaction (idempotent,
 *                        visible at once): a kill late in a transaction
 *                        leaves those rows in the output, the batch's
 *                        transaction is aborted, and the restart writes
 *                        them again; a kill that lands before the first
 *                        of them does not show it
 *
 * --format avro (or protobuf, or json-schema) reads values in a schema registry's wire format (each
 * schema fetched once by its id, refwire.h) and writes the valid ones to
 * --out as they came, in the same wire format.
 *
 * --loop stream runs the loop the way librdkafka's transactions example
 * does: the next transaction begins as soon as one commits, each record is
 * processed as it is consumed (inside the open transaction), and the
 * transaction commits after --max-batch records or --trigger-ms after its
 * first. (The default, --loop batch, reads a batch first and then writes
 * it in one transaction.)
 *
 * SIGTERM finishes the current batch and exits 0. */
#include <getopt.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>

static const char *ref_name = "reftxn";
static volatile sig_atomic_t ref_stop;

#include "refcommon.h"
#include "refwire.h"

static struct {
    const char *brokers, *topic, *out, *dead, *changelog, *group, *txn_id, *id_field, *time_field;
    int exactly_once, max_batch, trigger_ms, row_delay_ms, stream;
    int no_changelog, offsets_outside_txn, abort_txn, idle_open_txn, unfenced, half_plain;
    int txn_timeout_ms;
    const char *registry; /* --format avro|protobuf|json-schema: the schema registry's URL */
    int format; /* with a registry: 1 Avro, 2 Protobuf, 3 JSON Schema (refwire_decode) */
} o = {.id_field = "event_id", .time_field = "event_time", .exactly_once = 1, .max_batch = 100, .trigger_ms = 200, .row_delay_ms = 2,
     .txn_timeout_ms = 60000};

static void on_signal(int sig) { (void)sig; ref_stop = 1; }

/* ---- the de-duplication store: ids seen, an open-addressing set ---- */

static char **set_v;
static size_t set_cap, set_n;

static uint64_t hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/* 1 when the id was new (and is now in the set) */
static int set_add(const char *id, size_t n) {
    if ((set_n + 1) * 2 > set_cap) {
        size_t cap = set_cap ? set_cap * 2 : 1024;
        char **v = calloc(cap, sizeof(char *));
        if (!v) die("out of memory");
        for (size_t i = 0; i < set_cap; i++)
            if (set_v[i]) {
                size_t k = hash(set_v[i], strlen(set_v[i])) & (cap - 1);
                while (v[k]) k = (k + 1) & (cap - 1);
                v[k] = set_v[i];
            }
        free(set_v);
        set_v = v;
        set_cap = cap;
    }
    size_t k = hash(id, n) & (set_cap - 1);
    for (; set_v[k]; k = (k + 1) & (set_cap - 1))
        if (strlen(set_v[k]) == n && !memcmp(set_v[k], id, n)) return 0;
    set_v[k] = strndup(id, n);
    set_n++;
    return 1;
}

/* ---- Kafka ---- */

static rd_kafka_t *consumer, *producer;
static rd_kafka_t *idler; /* --weak idle-open-txn: the second transactional producer */
static rd_kafka_t *plain; /* --weak half-plain: the producer outside the transactions */
static int nparts;

static const char *kafka_config; /* --kafka-config FILE (default $STREAMDRILL_KAFKA_CONFIG) */

static rd_kafka_conf_t *conf_base(void) {
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    char errstr[256];
    if (rd_kafka_conf_set(c, "bootstrap.servers", o.brokers, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) die("%s", errstr);
    ref_kafka_config(c, kafka_config); /* TLS, SASL: what the harness's own clients carry */
    return c;
}

static void set(rd_kafka_conf_t *c, const char *k, const char *v) {
    char errstr[256];
    if (rd_kafka_conf_set(c, k, v, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) die("%s=%s: %s", k, v, errstr);
}

static void check(rd_kafka_error_t *e, const char *what) {
    if (!e) return;
    fprintf(stderr, "reftxn: %s: %s\n", what, rd_kafka_error_string(e));
    int fatal = rd_kafka_error_is_fatal(e) || rd_kafka_error_txn_requires_abort(e);
    rd_kafka_error_destroy(e);
    if (fatal) exit(3);
}

static void produce_by(rd_kafka_t *rk, const char *topic, const void *key, size_t klen, const void *val, size_t vlen) {
    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key, klen),
                                                  RD_KAFKA_V_VALUE((void *)val, vlen), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                                  RD_KAFKA_V_END);
        if (!e) return;
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) die("produce to %s: %s", topic, rd_kafka_err2str(e));
        rd_kafka_poll(rk, 50);
    }
}

static void produce(const char *topic, const void *key, size_t klen, const void *val, size_t vlen) {
    produce_by(producer, topic, key, klen, val, vlen);
}

static void delivery_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk, (void)opaque;
    if (m->err) fprintf(stderr, "reftxn: delivery to %s: %s\n", rd_kafka_topic_name(m->rkt), rd_kafka_err2str(m->err));
}

/* The store as its changelog holds it: read_committed, to the end. */
static void restore(void) {
    rd_kafka_conf_t *c = conf_base();
    set(c, "group.id", "reftxn-restore");
    set(c, "enable.auto.commit", "false");
    set(c, "enable.partition.eof", "true");
    set(c, "isolation.level", "read_committed");
    char errstr[256];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, errstr, sizeof(errstr));
    if (!rk) die("%s", errstr);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, o.changelog, NULL);
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
    rd_kafka_topic_destroy(rkt);
    if (err) die("changelog %s: %s", o.changelog, rd_kafka_err2str(err));
    int parts = md->topic_cnt == 1 && !md->topics[0].err ? md->topics[0].partition_cnt : 0;
    rd_kafka_metadata_destroy(md);
    /* the partitions that hold something: each ends with an EOF */
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(parts > 0 ? parts : 1);
    for (int p = 0; p < parts; p++) {
        int64_t lo, hi;
        if ((err = ref_watermarks(rk, o.changelog, p, &lo, &hi, 10000))) die("changelog %s [%d]: %s", o.changelog, p, rd_kafka_err2str(err));
        if (hi > lo) rd_kafka_topic_partition_list_add(l, o.changelog, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    int left = l->cnt;
    if (left) rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    size_t n = 0;
    int64_t t0 = mono_ms();
    while (left > 0) {
        if (mono_ms() - t0 > 60000) die("changelog %s: not restored within 60 s", o.changelog);
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m) continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) left--;
        else if (m->err) die("changelog %s: %s", o.changelog, rd_kafka_message_errstr(m));
        else if (m->key) n += set_add(m->key, m->key_len);
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    fprintf(stderr, "reftxn: restored %zu ids from %s\n", n, o.changelog);
}

static void start(void) {
    char errstr[256];
    rd_kafka_conf_t *c = conf_base();
    set(c, "group.id", o.group);
    set(c, "enable.auto.commit", "false");
    set(c, "auto.offset.reset", "earliest");
    set(c, "isolation.level", "read_committed");
    set(c, "fetch.wait.max.ms", "100");
    consumer = rd_kafka_new(RD_KAFKA_CONSUMER, c, errstr, sizeof(errstr));
    if (!consumer) die("%s", errstr);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(consumer, o.topic, NULL);
    for (int tries = 0; !nparts && tries < 100 && !ref_stop; tries++) {
        if (rd_kafka_metadata(consumer, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (md->topic_cnt == 1 && !md->topics[0].err) nparts = md->topics[0].partition_cnt;
            rd_kafka_metadata_destroy(md);
        }
        if (!nparts) sleep_ms(100);
    }
    rd_kafka_topic_destroy(rkt);
    if (!nparts) die("topic %s: no metadata", o.topic);
    /* where the group stands (its stable offsets: a transaction's offsets
     * count once it committed), else the beginning */
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(nparts);
    for (int p = 0; p < nparts; p++) rd_kafka_topic_partition_list_add(l, o.topic, p);
    /* a group coordinator that is still being chosen or loaded answers
     * NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS: asked again, up to
     * 20 times half a second apart */
    rd_kafka_resp_err_t err;
    for (int tries = 0;; tries++) {
        err = rd_kafka_committed(consumer, l, 10000);
        if (!err || tries >= 20 || (err != RD_KAFKA_RESP_ERR_NOT_COORDINATOR && err != RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS &&
                                    err != RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE))
            break;
        sleep_ms(500);
    }
    if (err) die("committed offsets of group %s: %s", o.group, rd_kafka_err2str(err));
    for (int p = 0; p < nparts; p++)
        if (l->elems[p].offset < 0) l->elems[p].offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(consumer, l);
    rd_kafka_topic_partition_list_destroy(l);

    c = conf_base();
    set(c, "linger.ms", "5");
    if (o.exactly_once) {
        set(c, "transactional.id", o.txn_id);
        char tmo[32];
        snprintf(tmo, sizeof(tmo), "%d", o.txn_timeout_ms);
        set(c, "transaction.timeout.ms", tmo);
    } else {
        set(c, "enable.idempotence", "true");
    }
    rd_kafka_conf_set_dr_msg_cb(c, delivery_cb);
    producer = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof(errstr));
    if (!producer) die("%s", errstr);
    /* fences the producer of an earlier incarnation and aborts its open
     * transaction */
    if (o.exactly_once) check(rd_kafka_init_transactions(producer, 30000), "init transactions");
    if (o.idle_open_txn) {
        char id[600];
        snprintf(id, sizeof(id), "%s-idle", o.txn_id);
        c = conf_base();
        set(c, "transactional.id", id);
        set(c, "linger.ms", "5");
        if (!(idler = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof(errstr)))) die("%s", errstr);
        check(rd_kafka_init_transactions(idler, 30000), "init transactions of the idle producer");
    }
    if (o.half_plain) {
        c = conf_base();
        set(c, "enable.idempotence", "true");
        set(c, "linger.ms", "0");
        if (!(plain = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof(errstr)))) die("%s", errstr);
    }
}

/* --weak idle-open-txn: idle input for half a second opens a transaction
 * of the second producer holding one record of --out (flushed, so it is
 * in the log); 2 s later it is aborted. Called at every turn of the loop. */
static void idle_txn(int got) {
    static int64_t idle_since = -1, opened = -1;
    int64_t now = mono_ms();
    if (!idler) return;
    if (opened >= 0 && now - opened >= 2000) {
        check(rd_kafka_abort_transaction(idler, 30000), "abort the idle transaction");
        opened = -1;
    }
    if (got) { idle_since = -1; return; }
    if (idle_since < 0) idle_since = now;
    if (opened < 0 && now - idle_since >= 500) {
        static const char v[] = "{\"event_id\":\"reftxn-idle\",\"event_time\":\"2024-01-01T00:00:00Z\"}";
        check(rd_kafka_begin_transaction(idler), "begin the idle transaction");
        for (;;) {
            rd_kafka_resp_err_t e = rd_kafka_producev(idler, RD_KAFKA_V_TOPIC(o.out), RD_KAFKA_V_VALUE((void *)v, sizeof(v) - 1),
                                                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
            if (!e) break;
            if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) die("produce to %s: %s", o.out, rd_kafka_err2str(e));
            rd_kafka_poll(idler, 50);
        }
        rd_kafka_flush(idler, 10000);
        opened = mono_ms();
    }
}

/* The offsets after each partition's last record of the batch. */
static rd_kafka_topic_partition_list_t *batch_offsets(rd_kafka_message_t **ms, int n) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(nparts);
    for (int i = 0; i < n; i++) {
        rd_kafka_topic_partition_t *t = rd_kafka_topic_partition_list_find(l, o.topic, ms[i]->partition);
        if (!t) t = rd_kafka_topic_partition_list_add(l, o.topic, ms[i]->partition);
        if (ms[i]->offset + 1 > t->offset) t->offset = ms[i]->offset + 1;
    }
    return l;
}

/* The consumed offsets sent to the open transaction: the group's offsets
 * commit with it. */
static void send_offsets(const rd_kafka_topic_partition_list_t *offs) {
    rd_kafka_consumer_group_metadata_t *gm = rd_kafka_consumer_group_metadata(consumer);
    check(rd_kafka_send_offsets_to_transaction(producer, offs, gm, 30000), "send offsets to the transaction");
    rd_kafka_consumer_group_metadata_destroy(gm);
}

/* One record: a row, a replay skipped, or a dead letter. */
static void process(rd_kafka_message_t *m) {
    const char *sdid = "";
    size_t sdlen = 0;
    rd_kafka_headers_t *hdrs = NULL;
    const void *hv = NULL;
    if (!rd_kafka_message_headers(m, &hdrs) && !rd_kafka_header_get_last(hdrs, "sd-id", &hv, &sdlen) && hv) sdid = hv;
    const char *reason = NULL;
    int64_t et;
    char *decoded = NULL;
    if (o.registry && m->payload && m->len)
        reason = refwire_decode(o.format, o.registry, m->payload, m->len, &decoded);
    json_t *j = reason ? NULL
              : decoded ? json_loads(decoded, 0, NULL)
              : m->payload && m->len ? json_loadb(m->payload, m->len, JSON_REJECT_DUPLICATES, NULL) : NULL;
    free(decoded);
    if (reason) (void)0;
    else if (!m->payload || !m->len) reason = "empty or null value";
    else if (m->len > 65536) reason = "value larger than 64 KiB";
    else if (!j || !json_is_object(j)) reason = "not a JSON object (or invalid UTF-8, or a key twice)";
    else if (!json_is_string(json_object_get(j, o.id_field))) reason = "id missing or not a string";
    else if (!json_is_string(json_object_get(j, o.time_field))) reason = "event time missing or not a string";
    else if (parse_iso(json_string_value(json_object_get(j, o.time_field)), &et)) reason = "event time not ISO-8601";
    else if (et > now_ms() + 3600000) reason = "event time too far in the future";
    if (reason) {
        json_t *d = json_pack("{s:s%, s:s}", "sd_id", sdid, sdlen, "reason", reason);
        char *text = json_dumps(d, JSON_COMPACT);
        produce(o.dead, NULL, 0, text, strlen(text));
        free(text);
        json_decref(d);
    } else {
        const char *id = json_string_value(json_object_get(j, o.id_field));
        size_t idlen = json_string_length(json_object_get(j, o.id_field));
        if (set_add(id, idlen)) {
            static unsigned long rows;
            if (plain && rows++ % 2) produce_by(plain, o.out, id, idlen, m->payload, m->len), rd_kafka_flush(plain, 10000);
            else produce(o.out, id, idlen, m->payload, m->len);
            if (!o.no_changelog) produce(o.changelog, id, idlen, "1", 1);
        }
    }
    json_decref(j);
    if (o.row_delay_ms) sleep_ms(o.row_delay_ms);
    rd_kafka_poll(producer, 0);
}

static void run(void) {
    rd_kafka_message_t *ms[10000];
    int max = o.max_batch < 10000 ? o.max_batch : 10000;
    while (!ref_stop) {
        int n = 0;
        int64_t first = -1;
        while (n < max && !ref_stop) {
            int wait = first < 0 ? 100 : (int)(first + o.trigger_ms - mono_ms());
            if (first >= 0 && wait <= 0) break;
            rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, wait);
            if (!m) { if (first < 0) idle_txn(0); continue; }
            if (m->err) {
                if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) fprintf(stderr, "reftxn: consume: %s\n", rd_kafka_message_errstr(m));
                rd_kafka_message_destroy(m);
                continue;
            }
            if (first < 0) first = mono_ms();
            ms[n++] = m;
        }
        idle_txn(n);
        if (!n) continue;
        rd_kafka_topic_partition_list_t *offs = batch_offsets(ms, n);
        if (o.offsets_outside_txn) {
            rd_kafka_resp_err_t e = rd_kafka_commit(consumer, offs, 0);
            if (e) die("commit offsets: %s", rd_kafka_err2str(e));
        }
        if (o.exactly_once) check(rd_kafka_begin_transaction(producer), "begin transaction");
        /* a stop request finishes the batch: its records are consumed */
        for (int i = 0; i < n; i++) process(ms[i]);
        if (o.exactly_once) {
            if (!o.offsets_outside_txn) send_offsets(offs);
            /* flushed first: an abort purges what is not yet sent, and the
             * records are meant to be in the log, only never committed */
            if (o.abort_txn) rd_kafka_flush(producer, 30000), check(rd_kafka_abort_transaction(producer, 60000), "abort transaction");
            else check(rd_kafka_commit_transaction(producer, 60000), "commit transaction");
        } else {
            rd_kafka_resp_err_t e = rd_kafka_flush(producer, 30000);
            if (e) die("flush: %s", rd_kafka_err2str(e));
            if (!o.offsets_outside_txn && (e = rd_kafka_commit(consumer, offs, 0))) die("commit offsets: %s", rd_kafka_err2str(e));
        }
        rd_kafka_topic_partition_list_destroy(offs);
        for (int i = 0; i < n; i++) rd_kafka_message_destroy(ms[i]);
    }
}

/* The send-offsets-and-commit of a transaction of n records (ms), and its
 * records released. */
static void commit_txn(rd_kafka_message_t **ms, int n) {
    rd_kafka_topic_partition_list_t *offs = batch_offsets(ms, n);
    send_offsets(offs);
    check(rd_kafka_commit_transaction(producer, 60000), "commit transaction");
    rd_kafka_topic_partition_list_destroy(offs);
    for (int i = 0; i < n; i++) rd_kafka_message_destroy(ms[i]);
}

/* --loop stream: a transaction always open, each record written as it is
 * consumed, committed by count or by time (exactly-once only). */
static void run_stream(void) {
    static rd_kafka_message_t *ms[10000];
    int max = o.max_batch < 10000 ? o.max_batch : 10000, n = 0;
    int64_t first = -1;
    check(rd_kafka_begin_transaction(producer), "begin transaction");
    while (!ref_stop) {
        int wait = first < 0 ? 100 : (int)(first + o.trigger_ms - mono_ms());
        rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, wait > 0 ? wait : 0);
        if (m && m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) fprintf(stderr, "reftxn: consume: %s\n", rd_kafka_message_errstr(m));
            rd_kafka_message_destroy(m);
            m = NULL;
        }
        if (m) {
            process(m);
            ms[n++] = m;
            if (first < 0) first = mono_ms();
        }
        if (n && (n >= max || mono_ms() >= first + o.trigger_ms)) {
            commit_txn(ms, n);
            n = 0;
            first = -1;
            check(rd_kafka_begin_transaction(producer), "begin transaction");
        }
    }
    /* a stop request commits what this transaction holds */
    if (n) commit_txn(ms, n);
    else check(rd_kafka_abort_transaction(producer, 60000), "abort the empty transaction");
}

static void usage(void) {
    fprintf(stderr, "usage: reftxn --brokers B --topic T --out TOPIC --group G [--dead TOPIC] [--changelog TOPIC] [--txn-id ID]\n"
                    "              [--guarantee exactly-once|at-least-once] [--max-batch 100] [--trigger-ms 200]\n"
                    "              [--row-delay-ms 2] [--txn-timeout-ms 60000] [--kafka-config FILE] [--loop batch|stream]\n"
                    "              [--weak no-changelog,offsets-outside-txn,abort-txn,idle-open-txn,unfenced,\n"
                    "                      half-plain]\n");
    exit(2);
}

int main(int argc, char **argv) {
    static const struct option opts[] = {
        {"brokers", 1, 0, 'b'}, {"topic", 1, 0, 't'}, {"out", 1, 0, 'o'}, {"dead", 1, 0, 'd'}, {"changelog", 1, 0, 'c'},
        {"group", 1, 0, 'g'}, {"txn-id", 1, 0, 'x'}, {"guarantee", 1, 0, 'G'}, {"max-batch", 1, 0, 'm'},
        {"trigger-ms", 1, 0, 'T'}, {"row-delay-ms", 1, 0, 'r'}, {"weak", 1, 0, 'w'}, {"format", 1, 0, 'f'}, {"registry", 1, 0, 'R'},
        {"txn-timeout-ms", 1, 0, 'X'}, {"kafka-config", 1, 0, 'k'}, {"loop", 1, 0, 'L'}, REFWIRE_LONGOPTS, {0, 0, 0, 0}};
    const char *format = "json";
    static char dead[512], changelog[512], txn[512];
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'b': o.brokers = optarg; break;
        case 't': o.topic = optarg; break;
        case 'o': o.out = optarg; break;
        case 'd': o.dead = optarg; break;
        case 'c': o.changelog = optarg; break;
        case 'g': o.group = optarg; break;
        case 'x': o.txn_id = optarg; break;
        case 'G':
            if (!strcmp(optarg, "exactly-once")) o.exactly_once = 1;
            else if (!strcmp(optarg, "at-least-once")) o.exactly_once = 0;
            else die("--guarantee %s: exactly-once or at-least-once", optarg);
            break;
        case 'm': o.max_batch = atoi(optarg); break;
        case 'T': o.trigger_ms = atoi(optarg); break;
        case 'r': o.row_delay_ms = atoi(optarg); break;
        case 'X': o.txn_timeout_ms = atoi(optarg); break;
        case 'f': format = optarg; break;
        case 'k': kafka_config = optarg; break;
        case 'L':
            if (!strcmp(optarg, "stream")) o.stream = 1;
            else if (strcmp(optarg, "batch")) die("--loop %s: batch or stream", optarg);
            break;
        case 'R': o.registry = optarg; break;
        case 'w': {
            char *copy = strdup(optarg), *save = NULL;
            for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                if (!strcmp(w, "no-changelog")) o.no_changelog = 1;
                else if (!strcmp(w, "offsets-outside-txn")) o.offsets_outside_txn = 1;
                else if (!strcmp(w, "abort-txn")) o.abort_txn = 1;
                else if (!strcmp(w, "idle-open-txn")) o.idle_open_txn = 1;
                else if (!strcmp(w, "unfenced")) o.unfenced = 1;
                else if (!strcmp(w, "half-plain")) o.half_plain = 1;
                else if (strcmp(w, "none"))
                    die("--weak %s: no-changelog, offsets-outside-txn, abort-txn, idle-open-txn, unfenced or half-plain", w);
            }
            free(copy);
            break;
        }
        default:
            if (!refwire_option(c, optarg)) usage();
        }
    }
    if (!o.brokers || !o.topic || !o.out || !o.group || o.max_batch <= 0) usage();
    if (strcmp(format, "json") && strcmp(format, "avro") && strcmp(format, "protobuf") && strcmp(format, "json-schema"))
        die("--format %s: json, avro, protobuf or json-schema", format);
    if (strcmp(format, "json") && !o.registry) die("--format %s: --registry URL is required", format);
    if (!strcmp(format, "json")) o.registry = NULL;
    o.format = !strcmp(format, "json-schema") ? 3 : !strcmp(format, "protobuf") ? 2 : 1;
    if (!o.dead) snprintf(dead, sizeof(dead), "%s-dead", o.out), o.dead = dead;
    if (!o.changelog) snprintf(changelog, sizeof(changelog), "%s-changelog", o.out), o.changelog = changelog;
    if (!o.txn_id) snprintf(txn, sizeof(txn), "%s-0", o.group), o.txn_id = txn;
    if (o.unfenced) {
        static char own[600];
        snprintf(own, sizeof(own), "%s-%ld", o.txn_id, (long)getpid());
        o.txn_id = own;
    }
    if (o.idle_open_txn && !o.exactly_once) die("--weak idle-open-txn: needs --guarantee exactly-once");
    if (o.half_plain && !o.exactly_once) die("--weak half-plain: needs --guarantee exactly-once");
    if (o.stream && (!o.exactly_once || o.offsets_outside_txn || o.abort_txn || o.idle_open_txn))
        die("--loop stream: exactly-once, without --weak offsets-outside-txn, abort-txn or idle-open-txn");
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!o.no_changelog) restore();
    start();
    if (o.stream) run_stream();
    else run();
    rd_kafka_consumer_close(consumer);
    rd_kafka_destroy(consumer);
    if (rd_kafka_flush(producer, 10000)) fprintf(stderr, "reftxn: records still unsent at exit\n");
    rd_kafka_destroy(producer);
    if (idler) rd_kafka_destroy(idler);
    if (plain) rd_kafka_flush(plain, 10000), rd_kafka_destroy(plain);
    return 0;
}
