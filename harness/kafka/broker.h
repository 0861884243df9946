/* broker.h - the Kafka cluster a run talks to: the embedded default
 * (librdkafka's mock cluster, in-process, listening on 127.0.0.1) or
 * external brokers given with --brokers. Also the admin work the harness
 * does itself: reachability, topic creation, partition counts, watermarks. */
#ifndef SD_BROKER_H
#define SD_BROKER_H

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdint.h>

#include "err.h"
#include "scenario.h"

typedef struct sd_broker_s sd_broker_t;

/* Start the embedded cluster with nbrokers brokers. */
sd_err_t sd_broker_embedded(int nbrokers, sd_broker_t **out, char *err, size_t errlen);
/* Use external brokers; checks they answer within timeout_ms (scaled). */
sd_err_t sd_broker_external(const char *bootstrap, const sd_kvlist_t *props, int64_t timeout_ms,
                            sd_broker_t **out, char *err, size_t errlen);
/* An embedded cluster is destroyed by a thread of its own, which nobody
 * waits for (broker.c says why). */
void sd_broker_close(sd_broker_t *b);
/* Wait up to timeout_ms for those threads to finish; the number still at
 * it. For a process that must end with nothing of them allocated (a test
 * under LeakSanitizer). */
int sd_broker_reaped_wait(int64_t timeout_ms);

const char *sd_broker_bootstrap(const sd_broker_t *b);
int sd_broker_is_embedded(const sd_broker_t *b);
/* The mock cluster (fault injection), NULL for external brokers. */
rd_kafka_mock_cluster_t *sd_broker_mock(sd_broker_t *b);

/* Create topic (an existing one with the same partition count is fine).
 * When the broker refuses the admin API but creates topics on first use
 * (librdkafka's mock cluster served by `streamdrill broker`), the topic is
 * created that way and *actual tells how many partitions it got. */
sd_err_t sd_broker_create_topic(sd_broker_t *b, const char *topic, int partitions, int replication, int *actual,
                                char *err, size_t errlen);
/* Number of partitions of topic. */
sd_err_t sd_broker_partitions(sd_broker_t *b, const char *topic, int *out, char *err, size_t errlen);
/* Low and high watermark of one partition. */
/* A partition's low and high watermarks through any handle (the high one
 * the last stable offset for a read_committed consumer), within timeout_ms.
 * librdkafka 2.0's rd_kafka_query_watermark_offsets waits forever for an
 * answer that never comes (fixed in 2.3, librdkafka #4460): this asks by
 * rd_kafka_offsets_for_times, which keeps its timeout (one partition's two
 * offsets one after the other: slower than librdkafka's two at once). */
rd_kafka_resp_err_t sd_kafka_watermarks(rd_kafka_t *rk, const char *topic, int32_t partition, int64_t *lo, int64_t *hi, int timeout_ms);
sd_err_t sd_broker_watermarks(sd_broker_t *b, const char *topic, int32_t partition, int64_t *lo, int64_t *hi,
                              char *err, size_t errlen);

/* Topic settings (min.insync.replicas, ...) every topic the harness
 * creates gets from now on; config must outlive b (NULL: none). */
void sd_broker_set_topic_config(sd_broker_t *b, const sd_kvlist_t *config);
/* Each partition's leader (-1: none) and in-sync replica count, from a
 * fresh metadata request (up to 2 s: a broker that is frozen may be the
 * one asked, so a caller that needs an answer asks again); n entries.
 * via (NULL: the admin client) asks through a client of its own that
 * bootstraps from those brokers only: the ones known to answer. */
sd_err_t sd_broker_leaders(sd_broker_t *b, const char *via, const char *topic, int32_t *leader, int32_t *isr, int n, char *err,
                           size_t errlen);

/* The replicas of one partition (broker ids, at most max); -1 on error. */
int sd_broker_replicas(sd_broker_t *b, const char *via, const char *topic, int32_t partition, int32_t *ids, int max);

/* Apply -X style properties to a librdkafka configuration; an error names
 * the property and shows a secret's value as *** (sd_broker_prop_secret). */
sd_err_t sd_broker_conf_apply(rd_kafka_conf_t *conf, const sd_kvlist_t *props, const char *who, char *err,
                              size_t errlen);

/* 1 when the value of client property name is a secret: its name holds
 * "password" or "secret", whatever the case (sasl.password,
 * ssl.key.password, sasl.oauthbearer.client.secret, ...). Whatever the
 * harness prints or records of such a property shows *** for its value. */
int sd_broker_prop_secret(const char *name);
/* Each copy of secret in text (size bytes, NUL-terminated, changed in
 * place) replaced by ***, cut to size; an empty secret changes nothing. */
void sd_broker_redact(char *text, size_t size, const char *secret);

#endif
