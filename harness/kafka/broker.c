/* broker.c - embedded mock cluster and admin operations (see broker.h). */
#include "broker.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct sd_broker_s {
    rd_kafka_t *host;               /* hosts the mock cluster (embedded only) */
    rd_kafka_mock_cluster_t *mock;
    rd_kafka_t *admin;
    char *bootstrap;
    pthread_mutex_t lock;
    char last_error[512];           /* from error_cb: names the broker and the cause */
    int refused;                    /* error_cb saw the broker refuse us (credentials, TLS): no use waiting */
    const sd_kvlist_t *props;       /* the client properties (--kafka-config, -X) every client of ours carries */
    const sd_kvlist_t *topic_config; /* given to every topic the harness creates */
};

static void sd_broker_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf);

/* The client that asks for metadata: the admin client, or (via) a client
 * of its own that knows only those brokers, so that its first request goes
 * to one of them and not to a frozen one. */
static rd_kafka_t *sd_broker_asker(sd_broker_t *b, const char *via) {
    if (!via) return b->admin;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", via, NULL, 0);
    rd_kafka_conf_set(conf, "client.id", "streamdrill-leaders", NULL, 0);
    rd_kafka_conf_set_log_cb(conf, sd_broker_log_cb);
    if (sd_broker_conf_apply(conf, b->props, "-X", NULL, 0)) {
        rd_kafka_conf_destroy(conf);
        return b->admin;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, NULL, 0);
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        return b->admin;
    }
    return rk;
}

static void sd_broker_asked(sd_broker_t *b, rd_kafka_t *rk) {
    if (rk != b->admin) rd_kafka_destroy(rk);
}

void sd_broker_set_topic_config(sd_broker_t *b, const sd_kvlist_t *config) { b->topic_config = config; }

/* A fresh metadata request for one topic (up to 2 s), through the asker
 * (*rk, given back with sd_broker_asked). */
static rd_kafka_resp_err_t sd_broker_topic_md(sd_broker_t *b, const char *via, const char *topic, rd_kafka_t **rk,
                                              const struct rd_kafka_metadata **md) {
    *rk = sd_broker_asker(b, via);
    *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(*rk, topic, NULL);
    rd_kafka_resp_err_t rerr = rd_kafka_metadata(*rk, 0, rkt, md, (int)sd_util_scaled_ms(2000));
    rd_kafka_topic_destroy(rkt);
    return rerr;
}

int sd_broker_replicas(sd_broker_t *b, const char *via, const char *topic, int32_t partition, int32_t *ids, int max) {
    rd_kafka_t *rk;
    const struct rd_kafka_metadata *md;
    if (sd_broker_topic_md(b, via, topic, &rk, &md)) {
        sd_broker_asked(b, rk);
        return -1;
    }
    int n = 0;
    for (int t = 0; t < md->topic_cnt; t++)
        for (int i = 0; i < md->topics[t].partition_cnt; i++) {
            const rd_kafka_metadata_partition_t *mp = &md->topics[t].partitions[i];
            if (mp->id != partition) continue;
            for (int k = 0; k < mp->replica_cnt && n < max; k++) ids[n++] = mp->replicas[k];
        }
    rd_kafka_metadata_destroy(md);
    sd_broker_asked(b, rk);
    return n;
}

sd_err_t sd_broker_leaders(sd_broker_t *b, const char *via, const char *topic, int32_t *leader, int32_t *isr, int n, char *err,
                           size_t errlen) {
    for (int i = 0; i < n; i++) leader[i] = -1, isr[i] = 0;
    rd_kafka_t *rk;
    const struct rd_kafka_metadata *md;
    rd_kafka_resp_err_t rerr = sd_broker_topic_md(b, via, topic, &rk, &md);
    if (rerr) {
        sd_broker_asked(b, rk);
        return sd_err_set(err, errlen, SD_ERR_BROKER, "broker %s: metadata of topic %s: %s", b->bootstrap, topic, rd_kafka_err2str(rerr));
    }
    for (int t = 0; t < md->topic_cnt; t++)
        for (int i = 0; i < md->topics[t].partition_cnt; i++) {
            const rd_kafka_metadata_partition_t *mp = &md->topics[t].partitions[i];
            if (mp->id < 0 || mp->id >= n) continue;
            leader[mp->id] = mp->err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE ? -1 : mp->leader;
            isr[mp->id] = mp->isr_cnt;
        }
    rd_kafka_metadata_destroy(md);
    sd_broker_asked(b, rk);
    return SD_OK;
}

static void sd_broker_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    (void)rk;
    sd_broker_t *b = opaque;
    pthread_mutex_lock(&b->lock);
    snprintf(b->last_error, sizeof(b->last_error), "%s", reason);
    /* a wrong credential or a certificate not trusted fails the same way at
     * every try: SASL's answer, or a TLS handshake that failed (librdkafka
     * reports some of those as transport errors, its reason says SSL) */
    if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION || err == RD_KAFKA_RESP_ERR__SSL ||
        (err == RD_KAFKA_RESP_ERR__TRANSPORT && strstr(reason, "SSL handshake failed")))
        b->refused = 1;
    pthread_mutex_unlock(&b->lock);
}

static void sd_broker_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    (void)rk; (void)level; (void)fac; (void)buf; /* errors arrive through error_cb */
}

sd_err_t sd_broker_conf_apply(rd_kafka_conf_t *conf, const sd_kvlist_t *props, const char *who, char *err,
                              size_t errlen) {
    char errstr[512];
    for (int i = 0; props && i < props->n; i++)
        if (rd_kafka_conf_set(conf, props->v[i].key, props->v[i].value, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
            int secret = sd_broker_prop_secret(props->v[i].key);
            if (secret) sd_broker_redact(errstr, sizeof(errstr), props->v[i].value); /* librdkafka's message may repeat the value */
            return sd_err_set(err, errlen, SD_ERR_USAGE, "%s: property %s=%s: %s", who, props->v[i].key,
                              secret ? "***" : props->v[i].value, errstr);
        }
    return SD_OK;
}

void sd_broker_redact(char *text, size_t size, const char *secret) {
    size_t n = secret ? strlen(secret) : 0;
    if (!n || !size) return;
    sd_buf_t b;
    sd_buf_init(&b);
    sd_buf_puts(&b, "");
    for (const char *s = text, *at; *s; s = at + n) {
        if (!(at = strstr(s, secret))) { sd_buf_puts(&b, s); break; }
        sd_buf_append(&b, s, (size_t)(at - s));
        sd_buf_puts(&b, "***");
    }
    snprintf(text, size, "%s", b.data);
    sd_buf_free(&b);
}

int sd_broker_prop_secret(const char *name) {
    return name && (strcasestr(name, "password") || strcasestr(name, "secret"));
}

static sd_err_t sd_broker_make_admin(sd_broker_t *b, const sd_kvlist_t *props, char *err, size_t errlen) {
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[512];
    rd_kafka_conf_set(conf, "bootstrap.servers", b->bootstrap, NULL, 0);
    rd_kafka_conf_set(conf, "client.id", "streamdrill-admin", NULL, 0);
    rd_kafka_conf_set_error_cb(conf, sd_broker_error_cb);
    rd_kafka_conf_set_log_cb(conf, sd_broker_log_cb);
    rd_kafka_conf_set_opaque(conf, b);
    sd_err_t e = sd_broker_conf_apply(conf, props, "-X", err, errlen);
    if (e) { rd_kafka_conf_destroy(conf); return e; }
    b->admin = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!b->admin) {
        rd_kafka_conf_destroy(conf);
        return sd_err_set(err, errlen, SD_ERR_BROKER, "broker %s: create admin client: %s", b->bootstrap, errstr);
    }
    return SD_OK;
}

/* Wait until the cluster answers a metadata request. */
static sd_err_t sd_broker_ping(sd_broker_t *b, int64_t timeout_ms, char *err, size_t errlen) {
    int64_t deadline = sd_util_mono_ms() + timeout_ms;
    rd_kafka_resp_err_t rerr = RD_KAFKA_RESP_ERR_NO_ERROR;
    while (sd_util_mono_ms() < deadline) {
        const struct rd_kafka_metadata *md = NULL;
        int64_t left = deadline - sd_util_mono_ms();
        rerr = rd_kafka_metadata(b->admin, 0, NULL, &md, (int)(left > 2000 ? 2000 : left > 0 ? left : 1));
        if (!rerr && md && md->broker_cnt > 0) {
            rd_kafka_metadata_destroy(md);
            return SD_OK;
        }
        if (md) rd_kafka_metadata_destroy(md);
        rd_kafka_poll(b->admin, 0); /* serves error_cb: it names the broker and the cause */
        pthread_mutex_lock(&b->lock);
        int refused = b->refused;
        pthread_mutex_unlock(&b->lock);
        if (refused) {
            /* the listener and the cause, as librdkafka gives them (sasl_ssl://HOST:PORT/bootstrap: SASL
             * authentication error: ..., ssl://...: SSL handshake failed: ... certificate verify failed) */
            pthread_mutex_lock(&b->lock);
            /* librdkafka before 2.6.1 sends a SCRAM proof with the client's nonce twice, which Kafka 4.x,
             * strict as RFC 5802 asks, refuses as invalid credentials (librdkafka#4895) */
            int old_scram = strstr(b->last_error, "SCRAM") && rd_kafka_version() < 0x020601ff;
            sd_err_t e = sd_err_set(err, errlen, SD_ERR_BROKER, "broker %s: refused the harness's client (check the credentials and "
                                    "the CA of --kafka-config / -X): %s%s%s%s", b->bootstrap, b->last_error,
                                    old_scram ? " (this librdkafka, " : "", old_scram ? rd_kafka_version_str() : "",
                                    old_scram ? ", is older than 2.6.1, whose SCRAM a Kafka 4.x broker refuses even with the "
                                                "right password: librdkafka#4895)" : "");
            pthread_mutex_unlock(&b->lock);
            return e;
        }
    }
    pthread_mutex_lock(&b->lock);
    sd_err_t e = sd_err_set(err, errlen, SD_ERR_BROKER, "broker %s: unreachable after %.1fs: %s", b->bootstrap,
                            (double)timeout_ms / 1000.0, b->last_error[0] ? b->last_error : rd_kafka_err2str(rerr));
    pthread_mutex_unlock(&b->lock);
    return e;
}

sd_err_t sd_broker_embedded(int nbrokers, sd_broker_t **out, char *err, size_t errlen) {
    sd_broker_t *b = sd_util_xcalloc(1, sizeof(*b));
    pthread_mutex_init(&b->lock, NULL);
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "client.id", "streamdrill-embedded", NULL, 0);
    rd_kafka_conf_set_log_cb(conf, sd_broker_log_cb);
    b->host = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!b->host) {
        rd_kafka_conf_destroy(conf);
        sd_broker_close(b);
        return sd_err_set(err, errlen, SD_ERR_BROKER, "embedded broker: create host client: %s", errstr);
    }
    b->mock = rd_kafka_mock_cluster_new(b->host, nbrokers > 0 ? nbrokers : 1);
    if (!b->mock) {
        sd_broker_close(b);
        return sd_err_set(err, errlen, SD_ERR_BROKER, "embedded broker: librdkafka could not start the mock cluster");
    }
    b->bootstrap = sd_util_strdup(rd_kafka_mock_cluster_bootstraps(b->mock));
    sd_err_t e = sd_broker_make_admin(b, NULL, err, errlen);
    if (!e) e = sd_broker_ping(b, sd_util_scaled_ms(10000), err, errlen);
    if (e) { sd_broker_close(b); return e; }
    *out = b;
    return SD_OK;
}

sd_err_t sd_broker_external(const char *bootstrap, const sd_kvlist_t *props, int64_t timeout_ms, sd_broker_t **out,
                            char *err, size_t errlen) {
    sd_broker_t *b = sd_util_xcalloc(1, sizeof(*b));
    pthread_mutex_init(&b->lock, NULL);
    b->bootstrap = sd_util_strdup(bootstrap);
    b->props = props;
    sd_err_t e = sd_broker_make_admin(b, props, err, errlen);
    if (!e) e = sd_broker_ping(b, sd_util_scaled_ms(timeout_ms), err, errlen);
    if (e) { sd_broker_close(b); return e; }
    *out = b;
    return SD_OK;
}

/* librdkafka 2.0's mock cluster takes a second to destroy about half the
 * time: it stops its internal broker thread by waking it and dropping its
 * reference after, and when the thread sees the wake-up while a closed
 * connection still holds a reference, it sleeps out its one-second poll
 * before it looks again (its debug log: "Received TERMINATE op in state
 * INIT: 3 refcnts", then "terminating (after 1000ms in state INIT)").
 * Nothing of the cluster outlives the run (its topics are the run's), so
 * it is destroyed by a thread of its own that nobody waits for: a run ends
 * when its reports are written, and a run after it in the same process
 * starts while the last one's cluster goes; at exit, what is left of it
 * goes with the process. */
static void sd_broker_free(sd_broker_t *b) {
    if (b->mock) rd_kafka_mock_cluster_destroy(b->mock);
    if (b->host) rd_kafka_destroy(b->host);
    free(b->bootstrap);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

/* the clusters still being destroyed by their threads */
static pthread_mutex_t sd_broker_reap_lock = PTHREAD_MUTEX_INITIALIZER;
static int sd_broker_reaping;

static void *sd_broker_reap(void *arg) {
    sd_broker_free(arg);
    pthread_mutex_lock(&sd_broker_reap_lock);
    sd_broker_reaping--;
    pthread_mutex_unlock(&sd_broker_reap_lock);
    return NULL;
}

int sd_broker_reaped_wait(int64_t timeout_ms) {
    int64_t deadline = sd_util_mono_ms() + timeout_ms;
    pthread_mutex_lock(&sd_broker_reap_lock);
    while (sd_broker_reaping > 0 && sd_util_mono_ms() < deadline) {
        pthread_mutex_unlock(&sd_broker_reap_lock);
        sd_util_sleep_ms(10);
        pthread_mutex_lock(&sd_broker_reap_lock);
    }
    int left = sd_broker_reaping;
    pthread_mutex_unlock(&sd_broker_reap_lock);
    return left;
}

void sd_broker_close(sd_broker_t *b) {
    if (!b) return;
    if (b->admin) rd_kafka_destroy(b->admin);
    b->admin = NULL;
    if (b->mock && b->host) {
        pthread_attr_t at;
        pthread_t th;
        sigset_t all, old;
        sigfillset(&all); /* the runner's signals stay the runner's */
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_mutex_lock(&sd_broker_reap_lock);
        sd_broker_reaping++;
        pthread_mutex_unlock(&sd_broker_reap_lock);
        int started = pthread_create(&th, &at, sd_broker_reap, b) == 0;
        if (!started) {
            pthread_mutex_lock(&sd_broker_reap_lock);
            sd_broker_reaping--;
            pthread_mutex_unlock(&sd_broker_reap_lock);
        }
        pthread_attr_destroy(&at);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (started) return;
    }
    sd_broker_free(b);
}

const char *sd_broker_bootstrap(const sd_broker_t *b) { return b->bootstrap; }
int sd_broker_is_embedded(const sd_broker_t *b) { return b->mock != NULL; }
rd_kafka_mock_cluster_t *sd_broker_mock(sd_broker_t *b) { return b->mock; }

sd_err_t sd_broker_partitions(sd_broker_t *b, const char *topic, int *out, char *err, size_t errlen) {
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(b->admin, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t rerr = rd_kafka_metadata(b->admin, 0, rkt, &md, (int)sd_util_scaled_ms(10000));
    rd_kafka_topic_destroy(rkt);
    if (rerr) return sd_err_set(err, errlen, SD_ERR_BROKER, "broker %s: metadata of topic %s: %s", b->bootstrap, topic, rd_kafka_err2str(rerr));
    sd_err_t e = SD_OK;
    if (md->topic_cnt != 1 || md->topics[0].err)
        e = sd_err_set(err, errlen, SD_ERR_BROKER, "broker %s: topic %s: %s", b->bootstrap, topic,
                       md->topic_cnt ? rd_kafka_err2str(md->topics[0].err) : "not in metadata");
    else
        *out = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    return e;
}

sd_err_t sd_broker_create_topic(sd_broker_t *b, const char *topic, int partitions, int replication, int *actual,
                                char *err, size_t errlen) {
    *actual = partitions;
    if (b->mock) {
        rd_kafka_resp_err_t rerr = rd_kafka_mock_topic_create(b->mock, topic, partitions, replication);
        if (rerr && rerr != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
            return sd_err_set(err, errlen, SD_ERR_BROKER, "embedded broker: create topic %s: %s", topic, rd_kafka_err2str(rerr));
    } else {
        char errstr[512];
        rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, replication, errstr, sizeof(errstr));
        if (!nt) return sd_err_set(err, errlen, SD_ERR_USAGE, "create topic %s: %s", topic, errstr);
        for (int i = 0; b->topic_config && i < b->topic_config->n; i++)
            rd_kafka_NewTopic_set_config(nt, b->topic_config->v[i].key, b->topic_config->v[i].value);
        rd_kafka_queue_t *q = rd_kafka_queue_new(b->admin);
        rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(b->admin, RD_KAFKA_ADMIN_OP_CREATETOPICS);
        rd_kafka_AdminOptions_set_request_timeout(opt, (int)sd_util_scaled_ms(15000), NULL, 0);
        rd_kafka_CreateTopics(b->admin, &nt, 1, opt, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, (int)sd_util_scaled_ms(20000));
        sd_err_t e = SD_OK;
        if (!ev) {
            e = sd_err_set(err, errlen, SD_ERR_BROKER, "broker %s: create topic %s: no answer", b->bootstrap, topic);
        } else if (rd_kafka_event_error(ev)) {
            e = sd_err_set(err, errlen, SD_ERR_BROKER, "broker %s: create topic %s: %s", b->bootstrap, topic,
                           rd_kafka_event_error_string(ev));
        } else {
            const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
            size_t n = 0;
            const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(res, &n);
            if (n == 1 && rd_kafka_topic_result_error(tr[0]) &&
                rd_kafka_topic_result_error(tr[0]) != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
                e = sd_err_set(err, errlen, SD_ERR_BROKER, "broker %s: create topic %s: %s", b->bootstrap, topic,
                               rd_kafka_topic_result_error_string(tr[0]));
        }
        if (ev) rd_kafka_event_destroy(ev);
        rd_kafka_AdminOptions_destroy(opt);
        rd_kafka_queue_destroy(q);
        rd_kafka_NewTopic_destroy(nt);
        if (e) {
            /* Some brokers (librdkafka's mock cluster served by `streamdrill
             * broker`, or a cluster that forbids the admin API to this
             * client) refuse CreateTopics but create topics on first use. */
            int n = 0;
            char tmp[256];
            rd_kafka_topic_t *rkt = rd_kafka_topic_new(b->admin, topic, NULL);
            const struct rd_kafka_metadata *md = NULL;
            for (int i = 0; i < 20 && !n; i++) {
                if (!rd_kafka_metadata(b->admin, 0, rkt, &md, 2000)) {
                    if (md->topic_cnt == 1 && !md->topics[0].err) n = md->topics[0].partition_cnt;
                    rd_kafka_metadata_destroy(md);
                }
                if (!n) sd_util_sleep_ms(100);
            }
            rd_kafka_topic_destroy(rkt);
            if (!n || sd_broker_partitions(b, topic, &n, tmp, sizeof(tmp))) return e;
            *actual = n; /* the caller warns when n differs from what was asked */
            return SD_OK;
        }
    }
    /* wait until every partition has a leader in metadata */
    int64_t deadline = sd_util_mono_ms() + sd_util_scaled_ms(20000);
    for (;;) {
        int n = 0;
        char tmp[256];
        if (!sd_broker_partitions(b, topic, &n, tmp, sizeof(tmp))) {
            if (n != partitions)
                return sd_err_set(err, errlen, SD_ERR_BROKER, "broker %s: topic %s exists with %d partitions, the scenario needs %d",
                                  b->bootstrap, topic, n, partitions);
            return SD_OK;
        }
        if (sd_util_mono_ms() > deadline)
            return sd_err_set(err, errlen, SD_ERR_BROKER, "broker %s: topic %s created but not ready: %s", b->bootstrap, topic, tmp);
        sd_util_sleep_ms(100);
    }
}

rd_kafka_resp_err_t sd_kafka_watermarks(rd_kafka_t *rk, const char *topic, int32_t partition, int64_t *lo, int64_t *hi, int timeout_ms) {
    /* ListOffsets at "timestamps" -2 and -1: the earliest and the latest
     * offset, as the broker's isolation level for the handle gives them */
    static const int64_t ask[2] = {RD_KAFKA_OFFSET_BEGINNING, RD_KAFKA_OFFSET_END};
    int64_t got[2] = {-1, -1}, deadline = sd_util_mono_ms() + timeout_ms;
    for (int i = 0; i < 2; i++) {
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_t *t = rd_kafka_topic_partition_list_add(l, topic, partition);
        t->offset = ask[i];
        int64_t left = deadline - sd_util_mono_ms();
        rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(rk, l, (int)(left > 1 ? left : 1));
        if (!e) e = l->elems[0].err;
        got[i] = l->elems[0].offset;
        rd_kafka_topic_partition_list_destroy(l);
        if (e) return e;
    }
    *lo = got[0] < 0 && got[1] >= 0 ? got[1] : got[0];
    *hi = got[1];
    return RD_KAFKA_RESP_ERR_NO_ERROR;
}

sd_err_t sd_broker_watermarks(sd_broker_t *b, const char *topic, int32_t partition, int64_t *lo, int64_t *hi,
                              char *err, size_t errlen) {
    rd_kafka_resp_err_t rerr = sd_kafka_watermarks(b->admin, topic, partition, lo, hi, (int)sd_util_scaled_ms(10000));
    if (rerr)
        return sd_err_set(err, errlen, SD_ERR_BROKER, "broker %s: watermarks of %s [%d]: %s", b->bootstrap, topic,
                          (int)partition, rd_kafka_err2str(rerr));
    return SD_OK;
}
