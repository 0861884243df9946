/* producer.c - librdkafka producer with ledger-backed delivery reports. */
#include "producer.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "util.h"

#define SD_PRODUCER_SERVE_EVERY 128

struct sd_producer_s {
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt;
    sd_ledger_t *ledger;
    char *topic;
    sd_producer_stats_t st;
    sd_err_t ledger_err;
    char ledger_errstr[512];
    char last_error[512];
    int64_t ends[SD_PRODUCER_MAX_PARTITIONS]; /* per partition: one past the newest offset acknowledged */
    int64_t served_ms;                        /* when this poll served its first delivery report, 0 before */
    int txn_aborted;                          /* the last transaction's end failed because the broker had aborted it */
    char settings[160];                       /* "acks=all enable.idempotence=true" as configured */
};

/* Serve delivery reports: those one call serves arrived together and are
 * recorded with one time (a clock read per call, not per message). */
static void sd_producer_serve(sd_producer_t *p, int timeout_ms) {
    p->served_ms = 0;
    rd_kafka_poll(p->rk, timeout_ms);
}

static void sd_producer_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    sd_producer_t *p = opaque;
    int64_t n = (int64_t)(intptr_t)m->_private;
    p->st.inflight--;
    const char *error = NULL;
    if (m->err) {
        error = rd_kafka_err2str(m->err);
        p->st.failed++;
        snprintf(p->last_error, sizeof(p->last_error), "%s", error);
    } else {
        p->st.acked++;
        if (m->partition >= 0 && m->partition < SD_PRODUCER_MAX_PARTITIONS && m->offset + 1 > p->ends[m->partition])
            p->ends[m->partition] = m->offset + 1;
    }
    if (!p->ledger_err) {
        if (!p->served_ms) p->served_ms = sd_util_wall_ms();
        p->ledger_err = sd_ledger_ack(p->ledger, n, m->partition, m->offset, p->served_ms, error,
                                      p->ledger_errstr, sizeof(p->ledger_errstr));
    }
}

static void sd_producer_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    (void)rk; (void)level; (void)fac; (void)buf;
}

sd_err_t sd_producer_new(const char *bootstrap, const char *topic, const sd_kvlist_t *props1,
                         const sd_kvlist_t *props2, sd_ledger_t *ledger, sd_producer_t **out, char *err,
                         size_t errlen) {
    sd_producer_t *p = sd_util_xcalloc(1, sizeof(*p));
    p->ledger = ledger;
    p->topic = sd_util_strdup(topic);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[512];
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, NULL, 0);
    rd_kafka_conf_set(conf, "client.id", "streamdrill-producer", NULL, 0);
    rd_kafka_conf_set(conf, "enable.idempotence", "true", NULL, 0);
    rd_kafka_conf_set(conf, "acks", "all", NULL, 0);
    rd_kafka_conf_set(conf, "linger.ms", "5", NULL, 0);
    rd_kafka_conf_set(conf, "partitioner", "murmur2_random", NULL, 0); /* the Java client's choice */
    rd_kafka_conf_set(conf, "message.timeout.ms", "60000", NULL, 0);
    rd_kafka_conf_set(conf, "queue.buffering.max.messages", "100000", NULL, 0);
    rd_kafka_conf_set_dr_msg_cb(conf, sd_producer_dr);
    rd_kafka_conf_set_log_cb(conf, sd_producer_log_cb);
    rd_kafka_conf_set_opaque(conf, p);
    sd_err_t e = sd_broker_conf_apply(conf, props1, "scenario producer", err, errlen);
    if (!e) e = sd_broker_conf_apply(conf, props2, "-X", err, errlen);
    if (e) {
        rd_kafka_conf_destroy(conf);
        free(p->topic);
        free(p);
        return e;
    }
    /* what a loss by Kafka depends on, for the report */
    char acks[32] = "?", idem[16] = "?";
    size_t al = sizeof(acks), il = sizeof(idem);
    rd_kafka_conf_get(conf, "acks", acks, &al);
    rd_kafka_conf_get(conf, "enable.idempotence", idem, &il);
    snprintf(p->settings, sizeof(p->settings), "acks=%s enable.idempotence=%s", !strcmp(acks, "-1") ? "all" : acks, idem);
    p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!p->rk) {
        rd_kafka_conf_destroy(conf);
        free(p->topic);
        free(p);
        return sd_err_set(err, errlen, SD_ERR_BROKER, "producer: %s", errstr);
    }
    p->rkt = rd_kafka_topic_new(p->rk, topic, NULL);
    *out = p;
    return SD_OK;
}

const char *sd_producer_settings(const sd_producer_t *p) { return p->settings; }

void sd_producer_close(sd_producer_t *p) {
    if (!p) return;
    p->served_ms = 0;
    rd_kafka_flush(p->rk, (int)sd_util_scaled_ms(5000));
    sd_producer_serve(p, 0);
    rd_kafka_topic_destroy(p->rkt);
    rd_kafka_destroy(p->rk);
    free(p->topic);
    free(p);
}

sd_err_t sd_producer_send(sd_producer_t *p, const void *key, size_t keylen, const void *value, size_t vlen,
                          const char *sd_id, int64_t n, char *err, size_t errlen) {
    for (;;) {
        rd_kafka_resp_err_t rerr = rd_kafka_producev(
            p->rk, RD_KAFKA_V_RKT(p->rkt), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY(keylen ? key : NULL, keylen), RD_KAFKA_V_VALUE((void *)value, value ? vlen : 0),
            RD_KAFKA_V_HEADER("sd-id", sd_id, -1), RD_KAFKA_V_OPAQUE((void *)(intptr_t)n), RD_KAFKA_V_END);
        if (!rerr) break;
        if (rerr == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            sd_producer_serve(p, 10);
            continue;
        }
        return sd_err_set(err, errlen, SD_ERR_BROKER, "producer: send %s to %s: %s", sd_id, p->topic, rd_kafka_err2str(rerr));
    }
    p->st.sent++;
    p->st.inflight++;
    /* delivery reports served every SD_PRODUCER_SERVE_EVERY sends: freed in
     * small runs, their memory is what the next sends are given */
    if (p->st.sent % SD_PRODUCER_SERVE_EVERY == 0) sd_producer_serve(p, 0);
    if (p->ledger_err) return sd_err_set(err, errlen, p->ledger_err, "%s", p->ledger_errstr);
    return SD_OK;
}

sd_err_t sd_producer_poll(sd_producer_t *p, int timeout_ms, char *err, size_t errlen) {
    sd_producer_serve(p, timeout_ms);
    if (p->ledger_err) return sd_err_set(err, errlen, p->ledger_err, "%s", p->ledger_errstr);
    return SD_OK;
}

void sd_producer_stats(const sd_producer_t *p, sd_producer_stats_t *out) { *out = p->st; }
const char *sd_producer_last_error(const sd_producer_t *p) { return p->last_error; }

int sd_producer_txn_aborted(const sd_producer_t *p) { return p->txn_aborted; }

int64_t sd_producer_partition_end(const sd_producer_t *p, int partition) {
    return p && partition >= 0 && partition < SD_PRODUCER_MAX_PARTITIONS ? p->ends[partition] : 0;
}

/* ---- transactions (produce ... transactional) ---- */

static sd_err_t sd_producer_txn_err(rd_kafka_error_t *e, const char *what, char *err, size_t errlen) {
    if (!e) return SD_OK;
    sd_err_t r = sd_err_set(err, errlen, SD_ERR_BROKER, "transactional producer: %s: %s", what, rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    return r;
}

sd_err_t sd_producer_txn_init(sd_producer_t *p, int64_t timeout_ms, char *err, size_t errlen) {
    return sd_producer_txn_err(rd_kafka_init_transactions(p->rk, (int)timeout_ms), "init_transactions", err, errlen);
}

sd_err_t sd_producer_txn_begin(sd_producer_t *p, char *err, size_t errlen) {
    return sd_producer_txn_err(rd_kafka_begin_transaction(p->rk), "begin_transaction", err, errlen);
}

sd_err_t sd_producer_txn_end(sd_producer_t *p, int commit, int64_t timeout_ms, char *err, size_t errlen) {
    p->served_ms = 0; /* committing serves delivery reports too */
    p->txn_aborted = 0;
    rd_kafka_error_t *e = commit ? rd_kafka_commit_transaction(p->rk, (int)timeout_ms) : rd_kafka_abort_transaction(p->rk, (int)timeout_ms);
    /* a commit the broker refused because it had aborted the transaction
     * (its timeout passed: the producer is fenced, or told to abort) ends
     * it for certain, unlike a timeout or a broker out of reach, after
     * which the outcome is unknown */
    if (e && commit && !rd_kafka_error_is_retriable(e) && (rd_kafka_error_is_fatal(e) || rd_kafka_error_txn_requires_abort(e))) {
        p->txn_aborted = 1;
        if (!rd_kafka_error_is_fatal(e)) {
            rd_kafka_error_t *a = rd_kafka_abort_transaction(p->rk, (int)timeout_ms);
            if (a) rd_kafka_error_destroy(a);
        }
    }
    return sd_producer_txn_err(e, commit ? "commit_transaction" : "abort_transaction", err, errlen);
}
