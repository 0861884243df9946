/* bare_produce.c - the baseline of `make bench`'s produce figure: a bare
 * librdkafka producer loop, nothing but producev and a delivery-report
 * counter, with the harness producer's configuration (idempotent, acks=all,
 * linger.ms=5, murmur2_random, 100,000 queued messages) and messages of the
 * same key, value and header sizes as the harness's events.
 *
 *   bare_produce --brokers LIST|--embedded --topic T [--partitions P]
 *                --count N --key K --value V --id I [--json TAG]
 *
 * --embedded hosts librdkafka's mock cluster in this process, as the harness
 * does for its embedded default, and produces to it over loopback. --json
 * TAG sends sink-shaped JSON rows with ids TAG-0.. instead of filler bytes
 * (to fill a topic for the sink read figure). Prints
 * "seconds=S messages=N acked=A". */
#include <getopt.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t acked, failed;

static void dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk; (void)opaque;
    if (m->err) failed++;
    else acked++;
}

static void quiet_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    (void)rk; (void)level; (void)fac; (void)buf;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *why) {
    fprintf(stderr, "bare_produce: %s: %s\n", what, why);
    exit(1);
}

int main(int argc, char **argv) {
    const char *brokers = NULL, *topic = "bench", *json_tag = NULL;
    int embedded = 0, partitions = 3;
    long long count = 100000;
    int keylen = 9, vlen = 200, idlen = 14, poll_every = 1024;
    static struct option opts[] = {{"brokers", 1, 0, 'b'}, {"embedded", 0, 0, 'E'}, {"topic", 1, 0, 't'},
                                   {"partitions", 1, 0, 'p'}, {"count", 1, 0, 'n'}, {"key", 1, 0, 'k'},
                                   {"value", 1, 0, 'v'}, {"id", 1, 0, 'i'}, {"json", 1, 0, 'j'},
                                   {"poll-every", 1, 0, 'P'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'b': brokers = optarg; break;
        case 'E': embedded = 1; break;
        case 't': topic = optarg; break;
        case 'p': partitions = atoi(optarg); break;
        case 'n': count = atoll(optarg); break;
        case 'k': keylen = atoi(optarg); break;
        case 'v': vlen = atoi(optarg); break;
        case 'i': idlen = atoi(optarg); break;
        case 'j': json_tag = optarg; break;
        case 'P': poll_every = atoi(optarg) > 0 ? atoi(optarg) : 1024; break;
        default: return 2;
        }
    }
    char errstr[512];
    rd_kafka_t *host = NULL;
    rd_kafka_mock_cluster_t *mc = NULL;
    if (embedded) {
        rd_kafka_conf_t *hc = rd_kafka_conf_new();
        rd_kafka_conf_set_log_cb(hc, quiet_log);
        host = rd_kafka_new(RD_KAFKA_PRODUCER, hc, errstr, sizeof(errstr));
        if (!host) die("mock host", errstr);
        mc = rd_kafka_mock_cluster_new(host, 1);
        if (!mc) die("mock cluster", "cannot create");
        rd_kafka_mock_topic_create(mc, topic, partitions, 1);
        brokers = rd_kafka_mock_cluster_bootstraps(mc);
    }
    if (!brokers) die("usage", "--brokers LIST or --embedded");
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *props[][2] = {{"bootstrap.servers", brokers}, {"enable.idempotence", "true"}, {"acks", "all"},
                              {"linger.ms", "5"}, {"partitioner", "murmur2_random"}, {"message.timeout.ms", "60000"},
                              {"queue.buffering.max.messages", "100000"}};
    for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
        if (rd_kafka_conf_set(conf, props[i][0], props[i][1], errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) die(props[i][0], errstr);
    rd_kafka_conf_set_dr_msg_cb(conf, dr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk) die("producer", errstr);
    if (!embedded) { /* the topic with the harness's partition count, as the harness creates it */
        rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, 1, errstr, sizeof(errstr));
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
        if (ev) rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
        rd_kafka_NewTopic_destroy(nt);
    }
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    char *key = malloc((size_t)keylen + 1), *value = malloc((size_t)vlen + 512), *id = malloc((size_t)idlen + 64);
    memset(key, 'k', (size_t)keylen);
    memset(value, 'v', (size_t)vlen);
    memset(id, 'i', (size_t)idlen);
    /* warm: connected, metadata known, producer id assigned (the harness
     * times its produce step after the same) */
    rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_VALUE("warm", 4), RD_KAFKA_V_END);
    rd_kafka_flush(rk, 30000);
    acked = failed = 0;
    double t0 = now_s();
    for (long long n = 0; n < count; n++) {
        size_t vl = (size_t)vlen;
        snprintf(key, (size_t)keylen + 1, "%0*lld", keylen, n % 100000);
        if (json_tag)
            vl = (size_t)snprintf(value, (size_t)vlen + 512,
                                  "{\"event_id\":\"%s-%lld\",\"event_time\":\"2026-01-01T08:%02d:%02d.000Z\",\"parcel_id\":\"P%08lld\","
                                  "\"location\":\"HUB-%02d\",\"status\":\"scanned\",\"sd_batch\":%lld}",
                                  json_tag, n, (int)(n / 60 % 60), (int)(n % 60), (n * 7919) % 100000000, (int)(n % 40), n / 20000);
        for (;;) {
            rd_kafka_resp_err_t e = rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                                      RD_KAFKA_V_KEY(key, (size_t)keylen), RD_KAFKA_V_VALUE(value, vl),
                                                      RD_KAFKA_V_HEADER("sd-id", id, idlen), RD_KAFKA_V_END);
            if (!e) break;
            if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) die("produce", rd_kafka_err2str(e));
            rd_kafka_poll(rk, 10);
        }
        if (n % poll_every == 0) rd_kafka_poll(rk, 0);
    }
    while (acked + failed < count) rd_kafka_poll(rk, 50);
    double secs = now_s() - t0;
    printf("seconds=%.4f messages=%lld acked=%" PRId64 " failed=%" PRId64 "\n", secs, count, acked, failed);
    fflush(stdout);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    if (mc) rd_kafka_mock_cluster_destroy(mc);
    if (host) rd_kafka_destroy(host);
    free(key);
    free(value);
    free(id);
    return failed ? 1 : 0;
}
