/* observe.c - sink rows to copy counts (see observe.h). */
#include "observe.h"

#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "util.h"

#define SD_UNEXPECTED_CAP 100000

typedef struct {
    int64_t *slots;  /* index+1 into o->unexpected, 0 = empty */
    int64_t cap;
    /* the unexpected ids past the cap on kept ones, as two 64-bit hashes
     * each (pairs, {0, 0} empty): counted exactly (up to a collision of
     * both, about 2^-128 a pair), not kept for the reports */
    uint64_t *over;
    int64_t over_cap, over_n;
} sd_uindex_t;

static uint64_t sd_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ULL; }
    return h;
}

/* A second hash, independent of the first (another seed, another mix). */
static uint64_t sd_hash2(const char *s, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (unsigned char)s[i]) * 0xff51afd7ed558ccdULL;
        h ^= h >> 29;
    }
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

/* Is this id past the cap new? Adds it. A slot is empty when its first
 * hash is 0: an id whose first hash is 0 takes 1 (its second tells it apart). */
static int sd_over_add(sd_uindex_t *ix, uint64_t a, uint64_t b) {
    if (!a) a = 1;
    if (ix->over_n * 2 >= ix->over_cap) {
        int64_t ncap = ix->over_cap ? ix->over_cap * 2 : 4096;
        uint64_t *ns = sd_util_xcalloc((size_t)ncap * 2, sizeof(uint64_t));
        for (int64_t k = 0; k < ix->over_cap; k++) {
            uint64_t x = ix->over[2 * k], y = ix->over[2 * k + 1];
            if (!x) continue;
            int64_t j = (int64_t)(x & (uint64_t)(ncap - 1));
            while (ns[2 * j]) j = (j + 1) & (ncap - 1);
            ns[2 * j] = x, ns[2 * j + 1] = y;
        }
        free(ix->over);
        ix->over = ns;
        ix->over_cap = ncap;
    }
    int64_t j = (int64_t)(a & (uint64_t)(ix->over_cap - 1));
    while (ix->over[2 * j]) {
        if (ix->over[2 * j] == a && ix->over[2 * j + 1] == b) return 0;
        j = (j + 1) & (ix->over_cap - 1);
    }
    ix->over[2 * j] = a, ix->over[2 * j + 1] = b;
    ix->over_n++;
    return 1;
}

/* ids and writer labels from a sink are shown up to this many bytes */
#define SD_OBSERVE_TEXT_CAP 256

static void sd_unexpected_add(sd_observe_t *o, const char *id, size_t idlen, const char *w, size_t wlen) {
    o->unexpected_rows++;
    sd_uindex_t *ix = o->index;
    if (!ix) {
        ix = o->index = sd_util_xcalloc(1, sizeof(*ix));
        ix->cap = 1024;
        ix->slots = sd_util_xcalloc((size_t)ix->cap, sizeof(int64_t));
    }
    uint64_t h = sd_hash(id, idlen);
    int64_t i = (int64_t)(h & (uint64_t)(ix->cap - 1));
    while (ix->slots[i]) {
        sd_unexpected_t *u = &o->unexpected[ix->slots[i] - 1];
        if (u->rawlen == idlen && !memcmp(u->raw, id, idlen)) {
            u->copies++;
            if (w && strlen(u->writers) < 200) {
                sd_buf_t b = {u->writers, strlen(u->writers), strlen(u->writers) + 1};
                sd_buf_puts(&b, "; ");
                sd_buf_put_printable(&b, w, wlen, SD_OBSERVE_TEXT_CAP);
                u->writers = b.data;
            }
            return;
        }
        i = (i + 1) & (ix->cap - 1);
    }
    if (o->n_unexpected >= SD_UNEXPECTED_CAP) {
        o->unexpected_unique += sd_over_add(ix, h, sd_hash2(id, idlen));
        return;
    }
    o->unexpected_unique++;
    /* the list doubles when full: 16, then each power of two */
    int64_t n = o->n_unexpected;
    if (n == 0 || (n >= 16 && !(n & (n - 1))))
        o->unexpected = sd_util_xrealloc(o->unexpected, sizeof(*o->unexpected) * (size_t)(n ? 2 * n : 16));
    sd_unexpected_t *u = &o->unexpected[o->n_unexpected++];
    /* what reports show: printable, bounded (the raw bytes stay the key) */
    u->raw = sd_util_xmalloc(idlen + 1);
    memcpy(u->raw, id, idlen);
    u->raw[idlen] = 0;
    u->rawlen = idlen;
    sd_buf_t b;
    sd_buf_init(&b);
    sd_buf_put_printable(&b, id, idlen, SD_OBSERVE_TEXT_CAP);
    u->id = b.data ? sd_buf_steal(&b) : sd_util_strdup("");
    u->copies = 1;
    sd_buf_init(&b);
    if (w) sd_buf_put_printable(&b, w, wlen, SD_OBSERVE_TEXT_CAP);
    u->writers = b.data ? sd_buf_steal(&b) : sd_util_strdup("");
    ix->slots[i] = o->n_unexpected;
    if (o->n_unexpected * 2 > ix->cap) { /* grow and rehash */
        int64_t ncap = ix->cap * 2;
        int64_t *ns = sd_util_xcalloc((size_t)ncap, sizeof(int64_t));
        for (int64_t k = 0; k < o->n_unexpected; k++) {
            int64_t j = (int64_t)(sd_hash(o->unexpected[k].raw, o->unexpected[k].rawlen) & (uint64_t)(ncap - 1));
            while (ns[j]) j = (j + 1) & (ncap - 1);
            ns[j] = k + 1;
        }
        free(ix->slots);
        ix->slots = ns;
        ix->cap = ncap;
    }
}

void sd_observe_flush(sd_observe_t *o) {
    unsigned n = o->npending < SD_OBSERVE_PENDING ? o->npending : SD_OBSERVE_PENDING;
    for (unsigned i = 0; i < n; i++) sd_counts_inc(&o->copies, o->pending[i]);
    o->npending = 0;
}

int64_t sd_observe_row(sd_observe_t *o, const char *tag, size_t taglen, const char *id, size_t idlen,
                       const char *writer, size_t wlen) {
    o->rows++;
    int64_t seq;
    if (id && !sd_events_id_parse(tag, taglen, id, idlen, &seq) && seq < o->nseq) {
        /* counted a few rows later, its counter asked for now: rows come in
         * the sink's order, so each count is a cache miss otherwise */
        __builtin_prefetch(&o->copies.c[seq], 1);
        unsigned slot = o->npending++ % SD_OBSERVE_PENDING;
        if (o->npending > SD_OBSERVE_PENDING) sd_counts_inc(&o->copies, o->pending[slot]);
        o->pending[slot] = seq;
        return seq;
    }
    if (!id) sd_unexpected_add(o, "(null)", 6, writer, wlen);
    else sd_unexpected_add(o, id, idlen, writer, wlen);
    return -1;
}

void sd_observe_claim_unexpected(sd_observe_t *o, int (*known)(void *opaque, const sd_unexpected_t *u), void *opaque) {
    int64_t kept = 0;
    for (int64_t i = 0; i < o->n_unexpected; i++) {
        sd_unexpected_t *u = &o->unexpected[i];
        if (!known(opaque, u)) {
            o->unexpected[kept++] = *u;
            continue;
        }
        o->unexpected_rows -= u->copies;
        o->unexpected_unique--;
        free(u->id);
        free(u->raw);
        free(u->writers);
    }
    o->n_unexpected = kept;
    sd_uindex_t *ix = o->index; /* its slots point into the list as it was */
    if (ix) { free(ix->slots); free(ix->over); free(ix); }
    o->index = NULL;
}

typedef struct {
    sd_observe_t *o;
    const char *tag;
    size_t taglen;
} sd_scan_ctx_t;

static void sd_observe_set_lat(sd_observe_t *o, int64_t seq, int64_t lat);

static int sd_observe_cb(void *opaque, const char *id, size_t idlen, const char *w, size_t wlen, int64_t t) {
    sd_scan_ctx_t *c = opaque;
    sd_observe_t *o = c->o;
    int64_t seq = sd_observe_row(o, c->tag, c->taglen, id, idlen, w, wlen);
    if (t != INT64_MIN && seq >= 0) {
        o->timed_rows++;
        uint32_t sent = o->sent ? sd_stamps_get(o->sent, seq) : UINT32_MAX;
        if (sent == UINT32_MAX) return 0;
        if (!o->lat) {
            o->lat = sd_util_xmalloc(3 * (size_t)(o->nseq ? o->nseq : 1));
            memset(o->lat, 0xff, 3 * (size_t)(o->nseq ? o->nseq : 1));
        }
        int64_t rel = t - o->base_ms;
        if (rel < 0) rel = 0;
        if (rel > (int64_t)UINT32_MAX - 1) rel = (int64_t)UINT32_MAX - 1;
        int64_t lat = rel > sent ? rel - sent : 0, cur = sd_observe_latency(o, seq);
        if (cur >= 0 && cur <= lat) return 0; /* the first write is the earliest */
        sd_observe_set_lat(o, seq, lat);
    }
    return 0;
}

/* Set seq's latency cell to lat (ms). */
static void sd_observe_set_lat(sd_observe_t *o, int64_t seq, int64_t lat) {
    if (lat > (int64_t)UINT32_MAX - 1) lat = (int64_t)UINT32_MAX - 1;
    uint32_t cell = lat < SD_LAT_BIG ? (uint32_t)lat : SD_LAT_BIG;
    if (cell == SD_LAT_BIG) sd_i64map_put(&o->lat_big, seq, (uint32_t)lat);
    uint8_t *p = o->lat + 3 * seq;
    p[0] = (uint8_t)cell, p[1] = (uint8_t)(cell >> 8), p[2] = (uint8_t)(cell >> 16);
}

/* The buckets of write times a bound keeps: ms wide up to this many, wider
 * for longer runs (a 70-minute run at 1 ms). */
#define SD_BOUND_BUCKETS (1 << 22)

void sd_observe_bound(sd_observe_t *o, const int64_t *t, const int64_t *rows, const int64_t *looked, int64_t n, int64_t last_look_ms,
                      int64_t read_ms, sd_observe_bound_t *out) {
    memset(out, 0, sizeof(*out));
    if (!o->lat || !o->sent) return;
    /* each written row's write time (wall ms), over the seqs' first copies */
    int64_t lo = INT64_MAX, hi = INT64_MIN, timed = 0, at_send = 0;
    for (int64_t s = 0; s < o->nseq; s++) {
        int64_t lat = sd_observe_latency(o, s);
        uint32_t sent = sd_stamps_get(o->sent, s);
        if (lat < 0 || sent == UINT32_MAX) continue;
        int64_t w = o->base_ms + sent + lat;
        if (w < lo) lo = w;
        if (w > hi) hi = w;
        timed++;
        at_send += lat <= SD_BOUND_COPIED_MS; /* a stamp before the send was taken as 0 */
    }
    if (!timed) return;
    out->timed = timed;
    int copied = timed >= 10 && at_send * 100 >= timed * SD_BOUND_COPIED_SHARE;
    int64_t width = (hi - lo) / SD_BOUND_BUCKETS + 1, nb = (hi - lo) / width + 1;
    uint32_t *cnt = sd_util_xcalloc((size_t)nb, sizeof(uint32_t));
    for (int64_t s = 0; s < o->nseq; s++) {
        int64_t lat = sd_observe_latency(o, s);
        uint32_t sent = sd_stamps_get(o->sent, s);
        if (lat >= 0 && sent != UINT32_MAX) cnt[(o->base_ms + sent + lat - lo) / width]++;
    }
    /* per bucket, for the least rank of a row in it (rows written in one
     * bucket are in no known order): the first sample that counted that
     * many rows, seen[b], and the look before it, which did not (looked[b];
     * never reached: the final read, and the harness's last look) */
    int64_t *seen = sd_util_xmalloc(sizeof(int64_t) * (size_t)nb * 2), *prev = seen + nb, before = 0, i = 0;
    for (int64_t b = 0; b < nb; b++) {
        int64_t need = before + 1;
        while (i < n && rows[i] < need) i++;
        seen[b] = i < n ? t[i] : read_ms;
        prev[b] = i < n ? (looked && looked[i] >= 0 ? looked[i] : i > 0 ? t[i - 1] : INT64_MIN) : last_look_ms;
        before += cnt[b];
    }
    /* a look after the write time that did not count the row contradicts
     * the time: the row was first readable when a look counted it */
    for (int64_t s = 0; s < o->nseq; s++) {
        int64_t lat = sd_observe_latency(o, s);
        uint32_t sent = sd_stamps_get(o->sent, s);
        if (lat < 0 || sent == UINT32_MAX) continue;
        int64_t w = o->base_ms + sent + lat, b = (w - lo) / width;
        if (copied) {
            /* no write time to hold against the looks: the look that first
             * counted the row is all there is */
            out->copied++;
            sd_observe_set_lat(o, s, seen[b] > w ? seen[b] - o->base_ms - sent : lat);
            continue;
        }
        if (prev[b] <= w || seen[b] <= w) continue;
        out->rows_late++;
        if (seen[b] - w > out->max_gap_ms) out->max_gap_ms = seen[b] - w;
        sd_observe_set_lat(o, s, seen[b] - o->base_ms - sent);
    }
    free(seen);
    free(cnt);
}

int64_t sd_observe_latency(const sd_observe_t *o, int64_t seq) {
    if (!o->lat) return -1;
    uint32_t cell = sd_observe_lat_cell(o, seq);
    if (cell == SD_LAT_NONE) return -1;
    return cell == SD_LAT_BIG ? (int64_t)sd_i64map_get(&o->lat_big, seq) : cell;
}

sd_err_t sd_observe_sink(sd_sink_t *sink, const char *tag, int64_t nseq, int64_t base_ms, const sd_stamps_t *sent,
                         sd_observe_t *out, char *err, size_t errlen) {
    memset(out, 0, sizeof(*out));
    out->nseq = nseq;
    out->base_ms = base_ms;
    out->sent = sent;
    sd_counts_init(&out->copies, nseq);
    sd_scan_ctx_t c = {out, tag, strlen(tag)};
    sd_err_t e = sd_sink_scan(sink, sd_observe_cb, &c, err, errlen);
    sd_observe_flush(out);
    if (e) sd_observe_free(out);
    return e;
}

void sd_observe_free(sd_observe_t *o) {
    sd_counts_free(&o->copies);
    free(o->lat);
    sd_i64map_free(&o->lat_big);
    for (int64_t i = 0; i < o->n_unexpected; i++) {
        free(o->unexpected[i].id);
        free(o->unexpected[i].raw);
        free(o->unexpected[i].writers);
    }
    free(o->unexpected);
    sd_uindex_t *ix = o->index;
    if (ix) { free(ix->slots); free(ix->over); free(ix); }
    memset(o, 0, sizeof(*o));
}

typedef struct {
    const char *tag;
    size_t taglen;
    const int64_t *want;
    int64_t n;
    sd_buf_t *bufs;
    sd_observe_fmt_cb fmt;
    void *fmt_opaque;
} sd_writers_ctx_t;

static int sd_writers_cb(void *opaque, const char *id, size_t idlen, const char *w, size_t wlen, int64_t t) {
    sd_writers_ctx_t *c = opaque;
    int64_t seq;
    if (!id || sd_events_id_parse(c->tag, c->taglen, id, idlen, &seq)) return 0;
    int64_t lo = 0, hi = c->n - 1;
    while (lo <= hi) {
        int64_t mid = (lo + hi) / 2;
        if (c->want[mid] == seq) {
            sd_buf_t *b = &c->bufs[mid];
            if (b->len < 400) {
                if (b->len) sd_buf_puts(b, "; ");
                sd_buf_t label;
                sd_buf_init(&label);
                if (w && wlen) sd_buf_put_printable(&label, w, wlen, SD_OBSERVE_TEXT_CAP);
                if (c->fmt) c->fmt(c->fmt_opaque, label.data ? label.data : "", label.len, t, b);
                else if (label.len) sd_buf_append(b, label.data, label.len);
                else sd_buf_putc(b, '?');
                sd_buf_free(&label);
            }
            return 0;
        }
        if (c->want[mid] < seq) lo = mid + 1;
        else hi = mid - 1;
    }
    return 0;
}

sd_err_t sd_observe_writers(sd_sink_t *sink, const char *tag, const int64_t *want, int64_t n, char **out,
                            sd_observe_fmt_cb fmt, void *fmt_opaque, char *err, size_t errlen) {
    sd_writers_ctx_t c = {tag, strlen(tag), want, n, sd_util_xcalloc((size_t)(n ? n : 1), sizeof(sd_buf_t)), fmt, fmt_opaque};
    sd_err_t e = n ? sd_sink_scan(sink, sd_writers_cb, &c, err, errlen) : SD_OK;
    for (int64_t i = 0; i < n; i++) out[i] = sd_buf_steal(&c.bufs[i]);
    free(c.bufs);
    return e;
}

const sd_batch_span_t *sd_observe_batch_at(const sd_batch_span_t *v, int n, int64_t t_ms) {
    const sd_batch_span_t *best = NULL;
    for (int i = 0; i < n; i++)
        if (v[i].begin_ms - SD_OBSERVE_WRITE_SLACK_MS <= t_ms && t_ms <= v[i].end_ms + SD_OBSERVE_WRITE_SLACK_MS &&
            (!best || v[i].begin_ms >= best->begin_ms))
            best = &v[i];
    return best;
}
