/* producer.h - sends the run's messages through librdkafka and records
 * every delivery report in the ledger.
 *
 * Idempotent by default (enable.idempotence=true, acks=all); scenario
 * `producer` lines and -X properties are passed through, as kcat does.
 * Each message carries its ledger id in the header `sd-id`. Delivery
 * reports are served by sd_producer_poll() in the caller's thread, which
 * owns the ledger connection. */
#ifndef SD_PRODUCER_H
#define SD_PRODUCER_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "ledger.h"
#include "scenario.h"

typedef struct sd_producer_s sd_producer_t;

#define SD_PRODUCER_MAX_PARTITIONS 256

typedef struct sd_producer_stats_s {
    int64_t sent, acked, failed;
    int64_t inflight;
} sd_producer_stats_t;

/* props are applied in order (scenario `producer` lines, then -X). */
sd_err_t sd_producer_new(const char *bootstrap, const char *topic, const sd_kvlist_t *props1,
                         const sd_kvlist_t *props2, sd_ledger_t *ledger, sd_producer_t **out, char *err,
                         size_t errlen);
/* Flush (bounded) and destroy. */
/* The settings a loss by Kafka depends on: "acks=all enable.idempotence=true". */
const char *sd_producer_settings(const sd_producer_t *p);
void sd_producer_close(sd_producer_t *p);

/* Send one message; value NULL means a null value (tombstone). n is its
 * ledger message number (sd_ledger_send), sd_id its ledger id. Blocks while
 * the local queue is full, serving delivery reports. */
sd_err_t sd_producer_send(sd_producer_t *p, const void *key, size_t keylen, const void *value, size_t vlen,
                          const char *sd_id, int64_t n, char *err, size_t errlen);
/* Serve delivery reports for up to timeout_ms. Returns a ledger error if
 * recording one failed. */
sd_err_t sd_producer_poll(sd_producer_t *p, int timeout_ms, char *err, size_t errlen);
void sd_producer_stats(const sd_producer_t *p, sd_producer_stats_t *out);
/* Transactions, for a producer made with transactional.id among its
 * props: init once, then begin, send, end (commit 1 or abort 0). Errors
 * are SD_ERR_BROKER naming the call and librdkafka's reason. */
sd_err_t sd_producer_txn_init(sd_producer_t *p, int64_t timeout_ms, char *err, size_t errlen);
sd_err_t sd_producer_txn_begin(sd_producer_t *p, char *err, size_t errlen);
sd_err_t sd_producer_txn_end(sd_producer_t *p, int commit, int64_t timeout_ms, char *err, size_t errlen);
/* 1 when the last sd_producer_txn_end failed to commit because the broker
 * had aborted the transaction (fenced, or told to abort: its
 * transaction.timeout.ms passed): its records are aborted for certain. */
int sd_producer_txn_aborted(const sd_producer_t *p);
/* One past the newest offset this producer had acknowledged in a partition
 * (0: none): where its data ends, whatever control records follow. */
int64_t sd_producer_partition_end(const sd_producer_t *p, int partition);
/* Last delivery error text ("" if none). */
const char *sd_producer_last_error(const sd_producer_t *p);

#endif
