/* test_proxy.c - the network-fault proxy (proxy.c) between a client and an
 * echo server on 127.0.0.1, on faults whose effect is known: bytes pass
 * unchanged, latency delays each direction, a blackhole holds bytes and
 * hands them on once lifted (nothing lost), a reset closes the client's
 * connection, a bandwidth limit paces a large write, an idle timeout drops
 * a quiet connection without a word (and records when the client reused it
 * and gave up) while a busy one and a new one go through; a cut holds the
 * connections of the side cut off (told by the socket's owning process,
 * links.c) and lets the others through. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "links.h"
#include "proxy.h"
#include "util.h"

static int echo_fd = -1, echo_port;
static pthread_t echo_thread;
static sd_proxy_t *px;
static int px_port;

/* echoes every connection, one at a time, until the listener is closed */
static void *echo_main(void *arg) {
    (void)arg;
    for (;;) {
        int c = accept(echo_fd, NULL, NULL);
        if (c < 0) return NULL;
        char buf[65536];
        ssize_t n;
        while ((n = read(c, buf, sizeof(buf))) > 0)
            for (ssize_t off = 0; off < n;) {
                ssize_t w = write(c, buf + off, (size_t)(n - off));
                if (w <= 0) break;
                off += w;
            }
        close(c);
    }
}

static int listener(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t len = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    *port = ntohs(a.sin_port);
    return fd;
}

static void setup(void) {
    echo_fd = listener(&echo_port);
    cr_assert_eq(listen(echo_fd, 8), 0);
    pthread_create(&echo_thread, NULL, echo_main, NULL);
    int probe = listener(&px_port); /* a free port for the proxy */
    close(probe);
    char listen_at[64], upstream[64], err[256];
    snprintf(listen_at, sizeof(listen_at), "127.0.0.1:%d", px_port);
    snprintf(upstream, sizeof(upstream), "127.0.0.1:%d", echo_port);
    cr_assert_eq(sd_proxy_start(listen_at, upstream, &px, err, sizeof(err)), SD_OK, "%s", err);
}

static void teardown(void) {
    sd_proxy_stop(px);
    shutdown(echo_fd, SHUT_RDWR);
    close(echo_fd);
    pthread_join(echo_thread, NULL);
}

TestSuite(proxy, .init = setup, .fini = teardown, .timeout = 30);

static int client(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)px_port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s", strerror(errno));
    return fd;
}

/* read exactly n bytes within ms; returns what was read, -1 on a closed or reset connection */
static ssize_t read_n(int fd, char *buf, size_t n, int ms) {
    size_t got = 0;
    int64_t deadline = sd_util_mono_ms() + ms;
    while (got < n) {
        int left = (int)(deadline - sd_util_mono_ms());
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, left) <= 0) break;
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* one round trip of `text`; its time in ms, or -1 when it did not come back within ms */
static int64_t round_trip(int fd, const char *text, int ms) {
    char buf[256];
    int64_t t0 = sd_util_mono_ms();
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    ssize_t n = read_n(fd, buf, strlen(text), ms);
    if (n != (ssize_t)strlen(text)) return -1;
    cr_assert_eq(memcmp(buf, text, strlen(text)), 0, "the bytes came back changed");
    return sd_util_mono_ms() - t0;
}

Test(proxy, bytes_pass_unchanged) {
    int fd = client();
    int64_t t = round_trip(fd, "ping", 2000);
    cr_assert(t >= 0 && t < 1500, "round trip %lld ms", (long long)t);
    close(fd);
}

/* An HTTP/1.0 exchange: the client's request and its end of writing, the
 * answer and the server's close. Each end reaches the other side only
 * after the bytes before it, however long they are held. */
Test(proxy, an_end_of_stream_follows_the_bytes_held_before_it) {
    sd_proxy_latency(px, 200);
    int fd = client();
    int64_t t0 = sd_util_mono_ms();
    cr_assert_eq(write(fd, "GET / HTTP/1.0\r\n\r\n", 18), 18);
    shutdown(fd, SHUT_WR); /* the echo server answers, sees the end and closes */
    char buf[64];
    cr_assert_eq(read_n(fd, buf, 18, 5000), 18, "the answer was lost with the close");
    cr_assert_eq(memcmp(buf, "GET / HTTP/1.0\r\n\r\n", 18), 0);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    cr_assert_eq(poll(&p, 1, 5000), 1);
    cr_assert_eq(read(fd, buf, sizeof(buf)), 0, "expected the server's close after its answer");
    int64_t took = sd_util_mono_ms() - t0;
    cr_assert(took >= 390, "the answer came back in %lld ms, under the 2 x 200 ms held", (long long)took);
    close(fd);
}

Test(proxy, latency_delays_each_direction) {
    sd_proxy_latency(px, 150);
    int fd = client();
    int64_t t = round_trip(fd, "slow", 5000);
    cr_assert(t >= 290 && t < 2000, "150 ms each way: round trip %lld ms", (long long)t);
    sd_proxy_latency(px, 0);
    int64_t fast = round_trip(fd, "fast", 2000);
    cr_assert(fast >= 0 && fast < t - 100, "latency cleared: %lld ms, against %lld ms with it", (long long)fast, (long long)t);
    close(fd);
}

Test(proxy, a_blackhole_holds_the_bytes_and_hands_them_on_once_lifted) {
    int fd = client();
    cr_assert(round_trip(fd, "warm", 2000) >= 0);
    sd_proxy_blackhole(px, 1);
    cr_assert_eq(write(fd, "held", 4), 4);
    char buf[8];
    cr_assert_eq(read_n(fd, buf, 4, 400), 0, "nothing passes a blackhole");
    sd_proxy_blackhole(px, 0);
    cr_assert_eq(read_n(fd, buf, 4, 3000), 4, "the held bytes arrive once it is lifted");
    cr_assert_eq(memcmp(buf, "held", 4), 0);
    close(fd);
}

Test(proxy, a_reset_closes_the_clients_connection) {
    int fd = client();
    cr_assert(round_trip(fd, "warm", 2000) >= 0);
    sd_proxy_reset(px);
    char buf[8];
    int64_t deadline = sd_util_mono_ms() + 3000;
    ssize_t r = 0;
    while (sd_util_mono_ms() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) > 0) {
            r = read(fd, buf, sizeof(buf));
            break;
        }
    }
    cr_assert(r <= 0, "the connection is closed (read gave %zd)", r);
    close(fd);
    /* a new connection goes through */
    fd = client();
    cr_assert(round_trip(fd, "again", 2000) >= 0);
    close(fd);
}

Test(proxy, a_bandwidth_limit_paces_a_large_write) {
    sd_proxy_bandwidth(px, 20000); /* 20 kB/s each way */
    int fd = client();
    static char big[16000], back[16000];
    for (size_t i = 0; i < sizeof(big); i++) big[i] = (char)('a' + i % 26);
    int64_t t0 = sd_util_mono_ms();
    for (size_t off = 0; off < sizeof(big);) {
        ssize_t w = write(fd, big + off, sizeof(big) - off);
        cr_assert(w > 0);
        off += (size_t)w;
    }
    cr_assert_eq(read_n(fd, back, sizeof(back), 10000), (ssize_t)sizeof(back));
    int64_t t = sd_util_mono_ms() - t0;
    cr_assert_eq(memcmp(big, back, sizeof(big)), 0);
    cr_assert(t >= 600, "16 kB at 20 kB/s took %lld ms", (long long)t);
    close(fd);
}

Test(proxy, an_idle_timeout_drops_a_quiet_connection_silently) {
    int fd = client(); /* the echo server serves one connection at a time */
    sd_proxy_idle_timeout(px, 300, 7);
    /* while it talks every 100 ms it stays */
    for (int i = 0; i < 8; i++) {
        cr_assert(round_trip(fd, "tick", 2000) >= 0, "a busy connection is not idle");
        sd_util_sleep_ms(100);
    }
    sd_proxy_drop_t *d;
    cr_assert_eq(sd_proxy_drops(px, &d), 0, "nothing dropped while busy");
    free(d);
    sd_util_sleep_ms(700);
    cr_assert_eq(sd_proxy_drops(px, &d), 1, "quiet for longer than the timeout: dropped");
    cr_assert_eq(d[0].tag, 7);
    cr_assert(d[0].dropped_ms > 0 && d[0].used_ms < 0 && d[0].closed_ms < 0);
    free(d);
    /* the client does not know: its request goes nowhere, no answer comes and no close either */
    int64_t used = sd_util_wall_ms();
    cr_assert_eq(write(fd, "lost", 4), 4, "the client's side is still open");
    char buf[8];
    cr_assert_eq(read_n(fd, buf, 4, 500), 0, "no answer, and no close");
    close(fd); /* the client gives up */
    sd_util_sleep_ms(200);
    cr_assert_eq(sd_proxy_drops(px, &d), 1);
    cr_assert(d[0].used_ms >= used - 5 && d[0].used_ms <= used + 200, "used at %lld, written at %lld", (long long)d[0].used_ms, (long long)used);
    cr_assert(d[0].closed_ms - d[0].used_ms >= 450, "the wait: %lld ms", (long long)(d[0].closed_ms - d[0].used_ms));
    free(d);
    /* a new connection goes through; once lifted, a quiet one stays */
    fd = client();
    cr_assert(round_trip(fd, "again", 2000) >= 0);
    sd_proxy_idle_timeout(px, 0, 0);
    sd_util_sleep_ms(500);
    cr_assert(round_trip(fd, "still", 2000) >= 0, "lifted: a quiet connection is kept");
    cr_assert_eq(sd_proxy_drops(px, &d), 1);
    free(d);
    close(fd);
}

/* what a timeout saw: a busy connection (tested nothing), then a client
 * that closes its quiet connection itself and connects again only after
 * the timeout would have dropped it (its own closing met the timeout) */
Test(proxy, an_idle_timeout_says_what_it_saw) {
    int fd = client();
    sd_proxy_idle_timeout(px, 300, 8);
    for (int i = 0; i < 5; i++) {
        cr_assert(round_trip(fd, "tick", 2000) >= 0);
        sd_util_sleep_ms(100);
    }
    sd_proxy_idle_seen_t *w;
    cr_assert_eq(sd_proxy_idle_seen(px, &w), 1);
    cr_assert_eq(w[0].tag, 8);
    cr_assert_eq(w[0].timeout_ms, 300);
    cr_assert_eq(w[0].connections, 1);
    cr_assert_eq(w[0].quiet_closed, 0);
    cr_assert(w[0].max_quiet_ms < 300, "busy: quiet at most %lld ms", (long long)w[0].max_quiet_ms);
    free(w);
    sd_util_sleep_ms(150);
    close(fd); /* quiet for 150 ms, closed by the client */
    sd_util_sleep_ms(400);
    fd = client(); /* 550 ms after its last byte: kept, it would have been dropped */
    cr_assert(round_trip(fd, "back", 2000) >= 0);
    cr_assert_eq(sd_proxy_idle_seen(px, &w), 1);
    cr_assert_eq(w[0].connections, 2);
    cr_assert_eq(w[0].quiet_closed, 1);
    cr_assert(w[0].max_quiet_ms >= 500, "%lld", (long long)w[0].max_quiet_ms);
    free(w);
    /* closed and back at once: its close met no timeout */
    close(fd);
    sd_util_sleep_ms(50);
    fd = client();
    cr_assert(round_trip(fd, "again", 2000) >= 0);
    sd_proxy_idle_timeout(px, 0, 0);
    cr_assert_eq(sd_proxy_idle_seen(px, &w), 1);
    cr_assert_eq(w[0].connections, 3);
    cr_assert_eq(w[0].quiet_closed, 1);
    free(w);
    close(fd);
}

/* the tagger of links.c: this process is broker 4 */
static int tag_me(int fd, void *opaque) {
    (void)opaque;
    int ids[] = {9, 4}, pids[] = {1 << 22 /* no such process */, (int)getpid()};
    return sd_links_who(fd, ids, pids, 2);
}

Test(proxy, a_cut_holds_the_connections_of_the_side_cut_off) {
    sd_proxy_tagger(px, 2, tag_me, NULL);
    int fd = client();
    cr_assert(round_trip(fd, "warm", 2000) >= 0);
    cr_assert_eq(sd_proxy_pairs_tagged(px, 4), 1, "the connection is told to come from this process (broker 4)");
    sd_proxy_cut(px, 1u << 9);
    cr_assert(round_trip(fd, "pass", 2000) >= 0, "cutting another broker off leaves this link alone");
    sd_proxy_cut(px, 1u << 4);
    cr_assert_eq(write(fd, "held", 4), 4);
    char buf[8];
    cr_assert_eq(read_n(fd, buf, 4, 400), 0, "nothing passes from a broker cut off");
    sd_proxy_cut(px, 0);
    cr_assert_eq(read_n(fd, buf, 4, 3000), 4, "the held bytes arrive once the links are back");
    cr_assert_eq(memcmp(buf, "held", 4), 0);
    sd_proxy_cut(px, 1u << 2);
    cr_assert_eq(write(fd, "held", 4), 4);
    cr_assert_eq(read_n(fd, buf, 4, 400), 0, "nothing reaches the broker the proxy stands for when it is cut off");
    int late = client();
    cr_assert_eq(write(late, "new!", 4), 4);
    cr_assert_eq(read_n(late, buf, 4, 1000), -1, "a connection opened across the cut is refused");
    close(late);
    sd_proxy_cut(px, 0);
    cr_assert_eq(read_n(fd, buf, 4, 3000), 4);
    close(fd);
}

Test(proxy, who_connected_is_told_by_the_sockets_owner) {
    int port, l = listener(&port);
    cr_assert_eq(listen(l, 4), 0);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
    int s = accept(l, NULL, NULL);
    int ids[] = {3, 7}, mine[] = {1 << 22, (int)getpid()}, others[] = {1 << 22, 1 << 22};
    cr_assert_eq(sd_links_who(s, ids, mine, 2), 7);
    cr_assert_eq(sd_links_who(s, ids, others, 2), 0, "no listed process holds it");
    close(s);
    close(c);
    close(l);
}

/* An upstream that does not answer a connect (its accept queue full, so its
 * SYNs are dropped) stalls only the connection that asked for it: the
 * proxy's control calls, which take its lock, return at once, and the proxy
 * stops without waiting for the connect. */
Test(proxy, a_slow_upstream_stalls_only_its_own_connection) {
    int sport, stall = listener(&sport);
    cr_assert_eq(listen(stall, 0), 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)sport), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fill[4];
    for (int i = 0; i < 4; i++) { /* the accept queue, full: later SYNs go unanswered */
        fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fill[i], (struct sockaddr *)&sa, sizeof(sa));
    }
    sd_util_sleep_ms(100);
    int p2port, probe = listener(&p2port);
    close(probe);
    char listen_at[64], upstream[64], err[256];
    snprintf(listen_at, sizeof(listen_at), "127.0.0.1:%d", p2port);
    snprintf(upstream, sizeof(upstream), "127.0.0.1:%d", sport);
    sd_proxy_t *slow;
    cr_assert_eq(sd_proxy_start(listen_at, upstream, &slow, err, sizeof(err)), SD_OK, "%s", err);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in pa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p2port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(connect(c, (struct sockaddr *)&pa, sizeof(pa)), 0, "connect: %s", strerror(errno));
    sd_util_sleep_ms(300); /* the proxy has accepted it and is connecting upstream */
    int64_t t0 = sd_util_mono_ms();
    sd_proxy_latency(slow, 5);
    int tagged = sd_proxy_pairs_tagged(slow, 0);
    int64_t took = sd_util_mono_ms() - t0;
    cr_expect_lt(took, 500, "a control call waited %lld ms on a connect upstream", (long long)took);
    cr_expect_geq(tagged, 0);
    /* the main proxy's connections are not held either */
    int fd = client();
    cr_expect_geq(round_trip(fd, "still here", 2000), 0, "another proxy's connection stalled");
    close(fd);
    t0 = sd_util_mono_ms();
    sd_proxy_stop(slow);
    cr_expect_lt(sd_util_mono_ms() - t0, 1000, "the stop waited on the connect");
    close(c);
    for (int i = 0; i < 4; i++) close(fill[i]);
    close(stall);
}
