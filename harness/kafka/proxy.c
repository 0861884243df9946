/* proxy.c - the fault-injecting TCP proxy (see proxy.h).
 *
 * One thread, poll(2) over the listening socket and every connection pair.
 * Bytes read from one side are queued with the time they may leave
 * (now + latency) and written when due, within the bandwidth budget; in a
 * blackhole nothing is read or written, so the sender's buffers fill and
 * the peer sees a silent connection. Under an idle timeout a pair silent for
 * longer is cut from its upstream and becomes a zombie: the client's bytes
 * are read and thrown away until it closes its side. The upstream address is
 * resolved once, at the start, and each connection to it is made without
 * blocking (the pair waits for it in the poll), so an upstream slow to
 * answer stalls only the connection that asked for it, never the others or
 * the runner's control calls, which take the same lock. */
#include "proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

#define SD_PROXY_MAX 256

typedef struct sd_chunk_s {
    int64_t due;
    size_t len, off;
    struct sd_chunk_s *next;
    char data[];
} sd_chunk_t;

typedef struct {
    int fd[2];                 /* 0 client, 1 upstream */
    sd_chunk_t *q[2], *qt[2];  /* q[d]: bytes waiting to be written to fd[d] */
    size_t queued[2];
    double tokens[2];
    int64_t last_refill;
    int64_t last_byte;         /* monotonic ms of the last byte either way */
    int zombie;                /* dropped for being idle: drops[drop] */
    int drop;
    int tag;                   /* who connected (the tagger's answer; 0: unknown) */
    /* a side that closed: eof[d] once fd[d] read its end (1 + the order it
     * came in); shut[d] once fd[d] was given the end, after the bytes
     * queued for it (an HTTP/1.0 answer ends with the server's close) */
    int eof[2], shut[2];
    int connecting;            /* the upstream connection is still being made: the client's bytes wait */
} sd_pair_t;

struct sd_proxy_s {
    int lfd;
    char *upstream_host, *upstream_port;
    struct sockaddr_storage up_addr; /* resolved once, at the start */
    socklen_t up_len;
    pthread_t thread;
    int wake[2];
    pthread_mutex_t lock;
    int stopping;
    int64_t latency_ms, bandwidth;
    int blackhole, reset;
    int64_t idle_ms, idle_tag;
    sd_proxy_drop_t *drops;
    int ndrops, capdrops;
    /* what each idle timeout saw (the newest is the one on while idle_ms > 0) */
    sd_proxy_idle_seen_t *seen;
    int nseen, capseen;
    int64_t pend[SD_PROXY_MAX];  /* when client-closed connections last carried a byte, until the next connection */
    int npend;
    sd_pair_t pairs[SD_PROXY_MAX];
    int npairs;
    int64_t conns, bytes;
    int (*tagger)(int fd, void *opaque);
    void *tag_opaque;
    int self_tag;
    uint32_t cut;              /* tags cut off: bit t for tag t */
};

/* A pair in a cut: the proxy's own side is cut off, or whoever connected. */
static int sd_pair_cut(const sd_proxy_t *px, const sd_pair_t *p) {
    if (!px->cut) return 0;
    if (px->self_tag > 0 && px->self_tag < 32 && (px->cut >> px->self_tag) & 1u) return 1;
    return p->tag > 0 && p->tag < 32 && (px->cut >> p->tag) & 1u;
}

static int sd_proxy_split(const char *addr, char **host, char **port) {
    const char *c = strrchr(addr, ':');
    if (!c || c == addr || !c[1]) return -1;
    *host = sd_util_strndup(addr, (size_t)(c - addr));
    *port = sd_util_strdup(c + 1);
    return 0;
}

/* A connection to the upstream, begun without blocking: the socket, with
 * *pending set while the connect is still in progress; -1 when it failed
 * at once. */
static int sd_proxy_connect(const sd_proxy_t *px, int *pending) {
    int fd = socket(px->up_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    *pending = 0;
    if (connect(fd, (const struct sockaddr *)&px->up_addr, px->up_len)) {
        if (errno != EINPROGRESS) {
            close(fd);
            return -1;
        }
        *pending = 1;
    }
    return fd;
}

static void sd_pair_free_queue(sd_pair_t *p, int d) {
    while (p->q[d]) {
        sd_chunk_t *c = p->q[d];
        p->q[d] = c->next;
        free(c);
    }
    p->qt[d] = NULL;
    p->queued[d] = 0;
}

static void sd_pair_close(sd_pair_t *p, int rst) {
    for (int d = 0; d < 2; d++) {
        if (p->fd[d] < 0) continue;
        if (rst) {
            struct linger lg = {1, 0}; /* close with RST */
            setsockopt(p->fd[d], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        }
        close(p->fd[d]);
        sd_pair_free_queue(p, d);
    }
}

/* The idle timeout on now: its record (NULL when none is on). */
static sd_proxy_idle_seen_t *sd_proxy_watch(sd_proxy_t *px) { return px->idle_ms > 0 && px->nseen ? &px->seen[px->nseen - 1] : NULL; }

/* A silence of ms on a connection while the timeout is on. */
static void sd_proxy_quiet(sd_proxy_t *px, int64_t ms) {
    sd_proxy_idle_seen_t *w = sd_proxy_watch(px);
    if (w && ms > w->max_quiet_ms) w->max_quiet_ms = ms;
}

/* Connections the client closed itself, settled at `now` (its next
 * connection, or the timeout's end): one quiet for longer than the
 * timeout by then would have been dropped had the client kept it, so its
 * own closing met the timeout. */
static void sd_proxy_settle_closes(sd_proxy_t *px, int64_t now) {
    sd_proxy_idle_seen_t *w = sd_proxy_watch(px);
    for (int i = 0; w && i < px->npend; i++)
        if (now - px->pend[i] > px->idle_ms) {
            w->quiet_closed++;
            sd_proxy_quiet(px, now - px->pend[i]);
        }
    px->npend = 0;
}

/* An idle pair is forgotten: the broker's side closed, the client's kept
 * open and unanswered. */
static void sd_proxy_forget(sd_proxy_t *px, sd_pair_t *p) {
    sd_proxy_quiet(px, px->idle_ms);
    close(p->fd[1]);
    p->fd[1] = -1;
    sd_pair_free_queue(p, 0);
    sd_pair_free_queue(p, 1);
    if (px->ndrops == px->capdrops) {
        px->capdrops = px->capdrops ? px->capdrops * 2 : 16;
        px->drops = sd_util_xrealloc(px->drops, sizeof(*px->drops) * (size_t)px->capdrops);
    }
    px->drops[px->ndrops] = (sd_proxy_drop_t){.tag = px->idle_tag, .dropped_ms = sd_util_wall_ms(), .used_ms = -1, .closed_ms = -1};
    p->zombie = 1;
    p->drop = px->ndrops++;
}

static void sd_proxy_drop(sd_proxy_t *px, int i, int rst) {
    sd_pair_close(&px->pairs[i], rst);
    px->pairs[i] = px->pairs[--px->npairs];
}

/* Accepts one connection and pairs it with a new one upstream; called
 * with px->lock held. */
static void sd_proxy_accept(sd_proxy_t *px) {
    int cfd = accept4(px->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (cfd < 0) return;
    int pending = 0;
    int ufd = px->npairs < SD_PROXY_MAX ? sd_proxy_connect(px, &pending) : -1;
    if (ufd < 0) {
        close(cfd);
        return;
    }
    int one = 1;
    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sd_pair_t *p = &px->pairs[px->npairs++];
    memset(p, 0, sizeof(*p));
    p->fd[0] = cfd;
    p->fd[1] = ufd;
    p->connecting = pending;
    p->last_refill = p->last_byte = sd_util_mono_ms();
    p->tag = px->tagger ? px->tagger(cfd, px->tag_opaque) : 0;
    px->conns++;
    if (sd_proxy_watch(px)) {
        sd_proxy_watch(px)->connections++;
        sd_proxy_settle_closes(px, p->last_byte);
    }
    /* a new connection across a cut is refused, as a peer cut off is
     * unreachable: the ones open before it wait */
    if (sd_pair_cut(px, p)) sd_proxy_drop(px, px->npairs - 1, 1);
}

/* A zombie pair's client side (re: its poll events): what it sends is
 * thrown away, when it first reused and when it closed recorded. */
static void sd_proxy_zombie(sd_proxy_t *px, int i, short re, char *buf, size_t blen) {
    sd_pair_t *p = &px->pairs[i];
    if (!re) return;
    ssize_t got = re & POLLIN ? read(p->fd[0], buf, blen) : 0;
    sd_proxy_drop_t *dr = &px->drops[p->drop];
    if (got > 0 && dr->used_ms < 0) dr->used_ms = sd_util_wall_ms();
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
        dr->closed_ms = sd_util_wall_ms();
        sd_proxy_drop(px, i, 0);
    }
}

/* The upstream connect of pair i ended: the pair is open, or, refused,
 * dropped with the client reset (as when a connect failed at once). */
static void sd_proxy_connected(sd_proxy_t *px, int i, int64_t now) {
    sd_pair_t *p = &px->pairs[i];
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    if (getsockopt(p->fd[1], SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr) {
        sd_proxy_drop(px, i, 1);
        return;
    }
    p->connecting = 0;
    p->last_byte = now;
}

static void *sd_proxy_thread(void *arg) {
    sd_proxy_t *px = arg;
    char buf[65536];
    for (;;) {
        pthread_mutex_lock(&px->lock);
        if (px->stopping) { pthread_mutex_unlock(&px->lock); break; }
        if (px->reset) {
            while (px->npairs) sd_proxy_drop(px, px->npairs - 1, 1);
            px->reset = 0;
        }
        int64_t lat = px->latency_ms, bw = px->bandwidth;
        int hole = px->blackhole;
        int64_t now = sd_util_mono_ms();
        if (px->idle_ms > 0)
            for (int i = 0; i < px->npairs; i++)
                if (!px->pairs[i].zombie && !px->pairs[i].connecting && now - px->pairs[i].last_byte > px->idle_ms)
                    sd_proxy_forget(px, &px->pairs[i]);
        struct pollfd pf[2 + 2 * SD_PROXY_MAX];
        int n = 0;
        pf[n].fd = px->wake[0]; pf[n++].events = POLLIN;
        pf[n].fd = px->lfd; pf[n++].events = POLLIN;
        int64_t next_due = now + 50;
        for (int i = 0; i < px->npairs; i++) {
            sd_pair_t *p = &px->pairs[i];
            if (p->zombie) {
                pf[n].fd = p->fd[0];
                pf[n++].events = POLLIN;
                pf[n].fd = -1;
                pf[n++].events = 0;
                continue;
            }
            if (p->connecting) { /* only the connect's end is awaited */
                pf[n].fd = -1;
                pf[n++].events = 0;
                pf[n].fd = p->fd[1];
                pf[n++].events = POLLOUT;
                continue;
            }
            if (px->idle_ms > 0 && p->last_byte + px->idle_ms + 1 < next_due) next_due = p->last_byte + px->idle_ms + 1;
            int ph = hole || sd_pair_cut(px, p);
            for (int d = 0; d < 2; d++) {
                short ev = 0;
                /* read from fd[d] into q[1-d] unless backed up or in a blackhole */
                if (!ph && !p->eof[d] && p->queued[1 - d] < (4u << 20)) ev |= POLLIN;
                if (!ph && p->q[d] && p->q[d]->due <= now) ev |= POLLOUT;
                if (p->q[d] && p->q[d]->due > now && p->q[d]->due < next_due) next_due = p->q[d]->due;
                /* a cut pair is not polled: its bytes, and a close, wait
                 * in the kernel until the cut is cleared */
                pf[n].fd = (ph && !hole) || (p->eof[d] && p->shut[d]) ? -1 : p->fd[d]; /* ended both ways: nothing to poll */
                pf[n++].events = ev;
            }
        }
        pthread_mutex_unlock(&px->lock);
        int timeout = (int)(next_due - now);
        if (timeout < 1) timeout = 1;
        if (bw) timeout = timeout > 10 ? 10 : timeout;
        if (poll(pf, (nfds_t)n, timeout) < 0 && errno != EINTR) break;
        pthread_mutex_lock(&px->lock);
        if (pf[0].revents) {
            char t[64];
            while (read(px->wake[0], t, sizeof(t)) > 0)
                ;
        }
        if (pf[1].revents & POLLIN) sd_proxy_accept(px);
        /* pairs may have been added: only the ones polled (index < polled) have revents */
        int polled = (n - 2) / 2;
        now = sd_util_mono_ms();
        for (int i = polled - 1; i >= 0; i--) {
            if (i >= px->npairs) continue;
            sd_pair_t *p = &px->pairs[i];
            int dead = 0;
            if (p->zombie) {
                sd_proxy_zombie(px, i, pf[2 + 2 * i].revents, buf, sizeof(buf));
                continue;
            }
            if (p->connecting) {
                if (pf[2 + 2 * i + 1].revents) sd_proxy_connected(px, i, now);
                continue;
            }
            if (bw) {
                double add = (double)(now - p->last_refill) * (double)bw / 1000.0;
                for (int d = 0; d < 2; d++) {
                    p->tokens[d] += add;
                    if (p->tokens[d] > (double)bw) p->tokens[d] = (double)bw;
                }
                p->last_refill = now;
            }
            int client_closed = 0;
            for (int d = 0; d < 2 && !dead; d++) {
                short re = pf[2 + 2 * i + d].revents;
                if (re & (POLLERR | POLLNVAL) || (re & POLLHUP && !(re & POLLIN) && !p->shut[d])) { dead = 1; client_closed = !d; break; }
                if (re & POLLIN) {
                    ssize_t got = read(p->fd[d], buf, sizeof(buf));
                    if (got == 0) {
                        /* the side's end: passed on once what is queued for the other side is written */
                        p->eof[d] = 1 + p->eof[0] + p->eof[1];
                    } else if (got < 0) {
                        if (errno != EAGAIN && errno != EINTR) dead = 1, client_closed = !d;
                    } else {
                        sd_proxy_quiet(px, now - p->last_byte);
                        p->last_byte = now;
                        sd_chunk_t *c = malloc(sizeof(*c) + (size_t)got);
                        c->due = now + lat;
                        c->len = (size_t)got;
                        c->off = 0;
                        c->next = NULL;
                        memcpy(c->data, buf, (size_t)got);
                        int o = 1 - d;
                        if (p->qt[o]) p->qt[o]->next = c; else p->q[o] = c;
                        p->qt[o] = c;
                        p->queued[o] += (size_t)got;
                    }
                }
            }
            int ph = hole || sd_pair_cut(px, p);
            for (int d = 0; d < 2 && !dead && !ph; d++) {
                while (p->q[d] && p->q[d]->due <= now) {
                    sd_chunk_t *c = p->q[d];
                    size_t want = c->len - c->off;
                    if (bw) {
                        if (p->tokens[d] < 1) break;
                        if ((double)want > p->tokens[d]) want = (size_t)p->tokens[d];
                    }
                    ssize_t w = write(p->fd[d], c->data + c->off, want);
                    if (w < 0) { if (errno != EAGAIN && errno != EINTR) dead = 1; break; }
                    c->off += (size_t)w;
                    p->queued[d] -= (size_t)w;
                    sd_proxy_quiet(px, now - p->last_byte);
                    p->last_byte = now;
                    px->bytes += w;
                    if (bw) p->tokens[d] -= (double)w;
                    if (c->off < c->len) break;
                    p->q[d] = c->next;
                    if (!p->q[d]) p->qt[d] = NULL;
                    free(c);
                }
            }
            for (int d = 0; d < 2 && !dead; d++)
                if (p->eof[1 - d] && !p->q[d] && !p->shut[d]) shutdown(p->fd[d], SHUT_WR), p->shut[d] = 1;
            if (!dead && p->shut[0] && p->shut[1]) dead = 1, client_closed = p->eof[0] == 1; /* both ended: the pair is done */
            if (dead && client_closed && sd_proxy_watch(px) && px->npend < SD_PROXY_MAX) px->pend[px->npend++] = p->last_byte;
            if (dead) sd_proxy_drop(px, i, 0);
        }
        pthread_mutex_unlock(&px->lock);
    }
    return NULL;
}

sd_err_t sd_proxy_start(const char *laddr, const char *upstream, sd_proxy_t **out, char *err, size_t errlen) {
    sd_proxy_t *px = sd_util_xcalloc(1, sizeof(*px));
    char *lhost = NULL, *lport = NULL;
    if (sd_proxy_split(laddr, &lhost, &lport) || sd_proxy_split(upstream, &px->upstream_host, &px->upstream_port)) {
        free(lhost); free(lport); free(px->upstream_host); free(px->upstream_port); free(px);
        return sd_err_set(err, errlen, SD_ERR_USAGE, "--proxy %s=%s: expected HOST:PORT=HOST:PORT", laddr, upstream);
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res = NULL;
    sd_err_t e = SD_OK;
    px->lfd = -1;
    if (getaddrinfo(lhost, lport, &hints, &res) || !res) {
        e = sd_err_set(err, errlen, SD_ERR_USAGE, "proxy: cannot resolve %s", laddr);
    } else {
        px->lfd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        int one = 1;
        setsockopt(px->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (px->lfd < 0 || bind(px->lfd, res->ai_addr, res->ai_addrlen) || listen(px->lfd, 64))
            e = sd_err_set(err, errlen, SD_ERR_USAGE, "--proxy: listen on %s: %s", laddr, strerror(errno));
        freeaddrinfo(res);
    }
    free(lhost);
    free(lport);
    struct addrinfo uhints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ures = NULL;
    if (!e && (getaddrinfo(px->upstream_host, px->upstream_port, &uhints, &ures) || !ures || ures->ai_addrlen > sizeof(px->up_addr))) {
        e = sd_err_set(err, errlen, SD_ERR_USAGE, "proxy: cannot resolve the upstream %s", upstream);
    } else if (!e) {
        memcpy(&px->up_addr, ures->ai_addr, ures->ai_addrlen);
        px->up_len = ures->ai_addrlen;
    }
    if (ures) freeaddrinfo(ures);
    if (!e && pipe2(px->wake, O_CLOEXEC | O_NONBLOCK)) e = sd_err_set(err, errlen, SD_ERR_INTERNAL, "proxy: pipe: %s", strerror(errno));
    pthread_mutex_init(&px->lock, NULL);
    if (!e && pthread_create(&px->thread, NULL, sd_proxy_thread, px)) e = sd_err_set(err, errlen, SD_ERR_INTERNAL, "proxy: thread");
    if (e) {
        if (px->lfd >= 0) close(px->lfd);
        free(px->upstream_host); free(px->upstream_port); free(px);
        return e;
    }
    *out = px;
    return SD_OK;
}

int sd_proxy_port(sd_proxy_t *px) {
    struct sockaddr_storage ss;
    socklen_t n = sizeof(ss);
    if (getsockname(px->lfd, (struct sockaddr *)&ss, &n)) return -1;
    return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
}

static void sd_proxy_poke(sd_proxy_t *px) {
    ssize_t w = write(px->wake[1], "x", 1);
    (void)w;
}

void sd_proxy_stop(sd_proxy_t *px) {
    if (!px) return;
    pthread_mutex_lock(&px->lock);
    px->stopping = 1;
    pthread_mutex_unlock(&px->lock);
    sd_proxy_poke(px);
    pthread_join(px->thread, NULL);
    while (px->npairs) sd_proxy_drop(px, px->npairs - 1, 0);
    close(px->lfd);
    close(px->wake[0]);
    close(px->wake[1]);
    pthread_mutex_destroy(&px->lock);
    free(px->drops);
    free(px->seen);
    free(px->upstream_host);
    free(px->upstream_port);
    free(px);
}

#define SD_PROXY_SET(field, value) do { pthread_mutex_lock(&px->lock); px->field = (value); pthread_mutex_unlock(&px->lock); sd_proxy_poke(px); } while (0)

void sd_proxy_latency(sd_proxy_t *px, int64_t ms) { SD_PROXY_SET(latency_ms, ms); }
void sd_proxy_reset(sd_proxy_t *px) { SD_PROXY_SET(reset, 1); }
void sd_proxy_blackhole(sd_proxy_t *px, int on) { SD_PROXY_SET(blackhole, on); }
void sd_proxy_bandwidth(sd_proxy_t *px, int64_t bps) { SD_PROXY_SET(bandwidth, bps); }

/* The timeout's end: what the client closed itself is settled, and the
 * silence of the connections still open counted. */
static void sd_proxy_idle_end(sd_proxy_t *px, int64_t now) {
    sd_proxy_settle_closes(px, now);
    for (int i = 0; i < px->npairs; i++)
        if (!px->pairs[i].zombie) sd_proxy_quiet(px, now - px->pairs[i].last_byte);
}

void sd_proxy_idle_timeout(sd_proxy_t *px, int64_t ms, int64_t tag) {
    pthread_mutex_lock(&px->lock);
    int64_t now = sd_util_mono_ms();
    if (px->idle_ms > 0) sd_proxy_idle_end(px, now);
    px->idle_ms = ms;
    if (ms > 0) {
        px->idle_tag = tag;
        if (px->nseen == px->capseen) {
            px->capseen = px->capseen ? px->capseen * 2 : 4;
            px->seen = sd_util_xrealloc(px->seen, sizeof(*px->seen) * (size_t)px->capseen);
        }
        sd_proxy_idle_seen_t *w = &px->seen[px->nseen++];
        *w = (sd_proxy_idle_seen_t){.tag = tag, .timeout_ms = ms};
        px->npend = 0;
        /* every open pair is timed from now, however long it was quiet before */
        for (int i = 0; i < px->npairs; i++) {
            px->pairs[i].last_byte = now;
            w->connections += !px->pairs[i].zombie;
        }
    }
    pthread_mutex_unlock(&px->lock);
    sd_proxy_poke(px);
}

int sd_proxy_idle_seen(sd_proxy_t *px, sd_proxy_idle_seen_t **out) {
    pthread_mutex_lock(&px->lock);
    if (px->idle_ms > 0) { /* still on: what it saw so far */
        sd_proxy_idle_end(px, sd_util_mono_ms());
        px->npend = 0;
    }
    int n = px->nseen;
    *out = sd_util_xmalloc(sizeof(**out) * (size_t)(n + 1));
    if (n) memcpy(*out, px->seen, sizeof(**out) * (size_t)n);
    pthread_mutex_unlock(&px->lock);
    return n;
}

void sd_proxy_tagger(sd_proxy_t *px, int self_tag, int (*fn)(int fd, void *opaque), void *opaque) {
    pthread_mutex_lock(&px->lock);
    px->self_tag = self_tag;
    px->tagger = fn;
    px->tag_opaque = opaque;
    pthread_mutex_unlock(&px->lock);
}

void sd_proxy_cut(sd_proxy_t *px, uint32_t tags) { SD_PROXY_SET(cut, tags); }

int sd_proxy_pairs_tagged(sd_proxy_t *px, int tag) {
    pthread_mutex_lock(&px->lock);
    int n = 0;
    for (int i = 0; i < px->npairs; i++) n += !px->pairs[i].zombie && px->pairs[i].tag == tag;
    pthread_mutex_unlock(&px->lock);
    return n;
}

int sd_proxy_drops(sd_proxy_t *px, sd_proxy_drop_t **out) {
    pthread_mutex_lock(&px->lock);
    int n = px->ndrops;
    *out = sd_util_xmalloc(sizeof(**out) * (size_t)(n + 1));
    if (n) memcpy(*out, px->drops, sizeof(**out) * (size_t)n);
    pthread_mutex_unlock(&px->lock);
    return n;
}
