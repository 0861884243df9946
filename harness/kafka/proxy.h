/* proxy.h - a TCP proxy between the pipeline and a real broker, for
 * network faults: latency, connection reset, blackhole, bandwidth limit.
 *
 * Kafka clients connect to the addresses brokers advertise, so the broker
 * must advertise the proxy's address on the listener the pipeline uses
 * (scenarios/env/kafka/kafka.sh PROXY_PORT does). The proxy runs in its own
 * thread; every fault can be set and cleared at any time.
 *
 * An idle timeout behaves like the load balancer in front of Azure Event
 * Hubs: a connection with no byte in either direction for longer than the
 * timeout is forgotten without a word. The broker's side is closed; the
 * client's side stays open and swallows what the client sends, so a client
 * that reuses it waits for its own request timeout before it reconnects.
 * Each such drop is kept (when, when the client next sent on it, when it
 * gave up), for the recovery figures. */
#ifndef SD_PROXY_H
#define SD_PROXY_H

#include <stdint.h>

#include "err.h"

typedef struct sd_proxy_s sd_proxy_t;

/* listen and upstream are "host:port". */
sd_err_t sd_proxy_start(const char *listen, const char *upstream, sd_proxy_t **out, char *err, size_t errlen);
void sd_proxy_stop(sd_proxy_t *p);

/* Delay every chunk by ms in both directions (0: none). */
void sd_proxy_latency(sd_proxy_t *p, int64_t ms);
/* Close every open connection with a TCP reset. */
void sd_proxy_reset(sd_proxy_t *p);
/* Stop forwarding (connections stay open, bytes wait) until cleared. */
void sd_proxy_blackhole(sd_proxy_t *p, int on);
/* Limit each direction of each connection to bytes_per_s (0: none). */
void sd_proxy_bandwidth(sd_proxy_t *p, int64_t bytes_per_s);
/* Drop connections idle longer than ms silently (0: none); tag names the
 * fault each drop is recorded under. */
void sd_proxy_idle_timeout(sd_proxy_t *p, int64_t ms, int64_t tag);

/* One connection dropped for being idle (wall-clock ms; -1: not yet). */
typedef struct {
    int64_t tag, dropped_ms, used_ms, closed_ms;
} sd_proxy_drop_t;
/* The drops so far, oldest first; *out is the caller's to free. */
int sd_proxy_drops(sd_proxy_t *p, sd_proxy_drop_t **out);

#endif
