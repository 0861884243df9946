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
/* The port it listens on (a listen port of 0 takes a free one). */
int sd_proxy_port(sd_proxy_t *p);

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

/* Name who connects: fn(fd, opaque) is asked once per accepted connection
 * (on the proxy's thread) and answers a tag from 1 to 31, or 0 when it
 * cannot tell; self_tag is the tag of the side the proxy stands in front
 * of. Set it before the first connection. */
void sd_proxy_tagger(sd_proxy_t *p, int self_tag, int (*fn)(int fd, void *opaque), void *opaque);
/* Cut tags off (bit t for tag t; 0: none): a connection whose tag is cut,
 * or every connection when self_tag is cut, forwards nothing either way
 * until it is cleared; the bytes wait, as on a network that drops packets
 * and a TCP stack that resends them. */
void sd_proxy_cut(sd_proxy_t *p, uint32_t tags);
/* Open connections with this tag (for tests). */
int sd_proxy_pairs_tagged(sd_proxy_t *p, int tag);

/* One connection dropped for being idle (wall-clock ms; -1: not yet). */
typedef struct {
    int64_t tag, dropped_ms, used_ms, closed_ms;
} sd_proxy_drop_t;
/* The drops so far, oldest first; *out is the caller's to free. */
int sd_proxy_drops(sd_proxy_t *p, sd_proxy_drop_t **out);

/* What one idle timeout saw while it was on: the connections through the
 * proxy (open when it began and opened since), how many the client closed
 * itself after a silence longer than the timeout by the time it next
 * connected (kept, it would have been dropped), and the longest silence of
 * any connection. Unless one connection was dropped or closed that way,
 * the timeout tested nothing. */
typedef struct {
    int64_t tag, timeout_ms, connections, quiet_closed, max_quiet_ms;
} sd_proxy_idle_seen_t;
/* Each idle timeout's record, oldest first (the one still on: so far);
 * *out is the caller's to free. */
int sd_proxy_idle_seen(sd_proxy_t *p, sd_proxy_idle_seen_t **out);

#endif
