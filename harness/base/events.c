/* events.c - parcel-scan generator, JSONL log replay, ledger ids.
 *
 * The generator writes its fixed template in place: every field is ASCII
 * the generator itself chose (hex tag, digits, ISO time, names from a fixed
 * list), so no escaping can be needed; tests/unit/test_events.c parses
 * generated events with jansson to prove they are valid JSON, and holds
 * them byte for byte to the template written with snprintf. User logs are
 * read and rewritten with jansson. */
#include "events.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

struct sd_events_s {
    sd_events_conf_t conf;
    char *tag;
    size_t taglen;
    char infix[8];        /* between "<tag>-" and the seq ("d" for deliveries) */
    size_t infixlen;
    char *id_field, *time_field;
    /* the generator's template: the constant bytes before the seq, and
     * between the parcel id and the event time, measured once */
    char *head;           /* {"<id_field>":"<tag>-<infix> */
    size_t headlen;
    char *timekey;        /* ","<time_field>":" */
    size_t timekeylen;
    /* log mode */
    char *log;            /* whole file */
    size_t *line_off;     /* start of each event line */
    size_t *line_len;
    int64_t *times;       /* event time of each line (ms), INT64_MIN if none */
    int64_t nlines;
    sd_events_times_t tnotes; /* the log's times taken as UTC, or not read */
};

static const char *const sd_scan_types[] = {"received", "sorted", "loaded", "in-transit", "out-for-delivery", "delivered"};
static const unsigned char sd_scan_lens[] = {8, 6, 6, 10, 16, 9};
static const char *const sd_hubs[] = {"AMS", "BER", "CDG", "DUB", "FRA", "HAM", "LHR", "LYS", "MAD", "MIL", "MUC", "OSL",
                                       "PRG", "RIX", "ROM", "STO", "TLL", "VIE", "WAW", "ZRH", "BCN", "BRU", "CPH", "HEL"};

static sd_err_t sd_events_load_log(sd_events_t *ev, char *err, size_t errlen) {
    size_t len = 0;
    char ioerr[512];
    if (sd_util_read_file(ev->conf.log_path, &ev->log, &len, ioerr, sizeof(ioerr)))
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "events log: %s", ioerr);
    size_t cap = 1024;
    ev->line_off = sd_util_xmalloc(cap * sizeof(size_t));
    ev->line_len = sd_util_xmalloc(cap * sizeof(size_t));
    ev->times = sd_util_xmalloc(cap * sizeof(int64_t));
    int lineno = 0;
    for (size_t pos = 0; pos < len;) {
        char *nl = memchr(ev->log + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (ev->log + pos)) : len - pos;
        lineno++;
        size_t s = pos, m = n;
        while (m && (ev->log[s + m - 1] == '\r' || ev->log[s + m - 1] == ' ')) m--;
        while (m && ev->log[s] == ' ') { s++; m--; }
        if (m) {
            json_error_t je = {0};
            json_t *o = sd_json_loadb(ev->log + s, m, 0);
            if (!o) json_decref(json_loadb(ev->log + s, m, 0, &je)); /* the cause, for the message */
            if (!o || !json_is_object(o)) {
                sd_err_t e = sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d:%d: expected a JSON object per line, found %s",
                                        ev->conf.log_path, lineno, o ? 1 : je.column, o ? "another JSON value" : je.text);
                json_decref(o);
                return e;
            }
            if (ev->nlines == (int64_t)cap) {
                cap *= 2;
                ev->line_off = sd_util_xrealloc(ev->line_off, cap * sizeof(size_t));
                ev->line_len = sd_util_xrealloc(ev->line_len, cap * sizeof(size_t));
                ev->times = sd_util_xrealloc(ev->times, cap * sizeof(int64_t));
            }
            int64_t t = INT64_MIN;
            json_t *tv = json_object_get(o, ev->time_field);
            if (json_is_string(tv)) {
                int zoned = 1;
                if (sd_util_parse_iso8601_zone(json_string_value(tv), &t, &zoned)) {
                    t = INT64_MIN;
                    if (!ev->tnotes.unread++) ev->tnotes.unread_line = lineno;
                } else if (!zoned && !ev->tnotes.naive++) {
                    ev->tnotes.naive_line = lineno;
                }
            } else if (json_is_integer(tv)) {
                t = json_integer_value(tv);
            }
            ev->line_off[ev->nlines] = s;
            ev->line_len[ev->nlines] = m;
            ev->times[ev->nlines] = t;
            ev->nlines++;
            json_decref(o);
        }
        pos += n + 1;
    }
    if (ev->nlines == 0)
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:1:1: expected JSON lines (one event per line), found none",
                          ev->conf.log_path);
    return SD_OK;
}

sd_err_t sd_events_open(const sd_events_conf_t *conf, sd_events_t **out, char *err, size_t errlen) {
    sd_events_t *ev = sd_util_xcalloc(1, sizeof(*ev));
    ev->conf = *conf;
    ev->tag = sd_util_strdup(conf->tag);
    ev->taglen = strlen(ev->tag);
    snprintf(ev->infix, sizeof(ev->infix), "%s", conf->id_infix ? conf->id_infix : "");
    ev->infixlen = strlen(ev->infix);
    ev->id_field = sd_util_strdup(conf->id_field ? conf->id_field : "event_id");
    ev->time_field = sd_util_strdup(conf->time_field ? conf->time_field : "event_time");
    ev->conf.tag = ev->tag;
    ev->conf.id_field = ev->id_field;
    ev->conf.time_field = ev->time_field;
    ev->head = sd_util_fmt("{\"%s\":\"%s-%s", ev->id_field, ev->tag, ev->infix);
    ev->headlen = strlen(ev->head);
    ev->timekey = sd_util_fmt("\",\"%s\":\"", ev->time_field);
    ev->timekeylen = strlen(ev->timekey);
    if (ev->conf.parcels < 1) ev->conf.parcels = 5000;
    if (ev->conf.locations < 1) ev->conf.locations = 24;
    if (conf->kind == SD_EVENTS_LOG) {
        sd_err_t e = sd_events_load_log(ev, err, errlen);
        if (e) { sd_events_close(ev); return e; }
    }
    *out = ev;
    return SD_OK;
}

void sd_events_close(sd_events_t *ev) {
    if (!ev) return;
    free(ev->tag); free(ev->id_field); free(ev->time_field); free(ev->head); free(ev->timekey);
    free(ev->log); free(ev->line_off); free(ev->line_len); free(ev->times);
    free(ev);
}

int64_t sd_events_available(const sd_events_t *ev) {
    return ev->conf.kind == SD_EVENTS_LOG ? ev->nlines : INT64_MAX;
}

size_t sd_events_id(const sd_events_t *ev, int64_t seq, char *out) {
    /* hand-rolled: this runs once per event sent and per id reconciled */
    memcpy(out, ev->tag, ev->taglen);
    size_t n = ev->taglen;
    out[n++] = '-';
    if (ev->infixlen) memcpy(out + n, ev->infix, ev->infixlen), n += ev->infixlen;
    char *end = sd_util_put_u64(out + n, (uint64_t)seq);
    *end = 0;
    return (size_t)(end - out);
}

/* Eight ASCII bytes (the first in the lowest byte) as a number, when each
 * is a digit: each byte's high nibble must be 3 and its low one at most 9
 * (adding 6 must not carry into the high nibble). */
static inline int sd_events_digits8(uint64_t x, uint64_t *v) {
    const uint64_t hi = 0xF0F0F0F0F0F0F0F0ULL, threes = 0x3030303030303030ULL;
    if ((x & hi) != threes || ((x + 0x0606060606060606ULL) & hi) != threes) return -1;
    x -= threes;
    x = x * 10 + (x >> 8); /* pairs of digits */
    x = ((x & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32)) + ((x >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32))) >> 32;
    *v = x;
    return 0;
}

/* The decimal seq [p, end) of an id: no sign, no leading zeros (one
 * spelling per id), at most INT64_MAX / 2. 0 and *seq, or -1. With head8,
 * the 8 bytes before end are readable (the id's tag is there), so a run
 * under 8 digits is read as those 8 bytes, the ones before p taken as
 * leading zeros. */
static int sd_events_seq_digits(const char *p, const char *end, int head8, int64_t *seq) {
    size_t n = (size_t)(end - p);
    if (!n || (*p == '0' && n != 1)) return -1;
    uint64_t v = 0, part;
    if (n < 8 && head8) {
        uint64_t x, pad = ((uint64_t)1 << (8 * (8 - n))) - 1;
        memcpy(&x, end - 8, 8);
        if (sd_events_digits8((x & ~pad) | (0x3030303030303030ULL & pad), &v)) return -1;
        *seq = (int64_t)v;
        return 0;
    }
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        if (sd_events_digits8(x, &part)) return -1;
        v = v * 100000000u + part;
    }
    for (; p < end; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (d > 9) return -1;
        v = v * 10 + d;
    }
    if (v > (uint64_t)INT64_MAX / 2) return -1;
    *seq = (int64_t)v;
    return 0;
}

int sd_events_id_parse(const char *tag, size_t taglen, const char *s, size_t len, int64_t *seq) {
    if (len < taglen + 2 || len > taglen + 20 || s[taglen] != '-') return -1;
    if (taglen == 8) { /* a generated run's tag: one compare, not a call (this runs per row read) */
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, tag, 8);
        if (a != b) return -1;
    } else if (memcmp(s, tag, taglen)) {
        return -1;
    }
    return sd_events_seq_digits(s + taglen + 1, s + len, taglen + 1 >= 8, seq);
}

const char *sd_edge_name(sd_edge_kind_t kind) {
    switch (kind) {
    case SD_EDGE_WINDOW: return "window boundary";
    case SD_EDGE_JOIN_LOWER: return "join lower bound";
    case SD_EDGE_JOIN_UPPER: return "join upper bound";
    case SD_EDGE_TIE: return "equal event time";
    case SD_EDGE_WATERMARK: return "watermark cut-off";
    default: return "none";
    }
}

static int64_t sd_floor_div(int64_t a, int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* The generator's event time of seq, and the window edge it probes. Every
 * window boundary b (a multiple of the slide) is probed by the three scans
 * at or before it, moved to b - 1, b and b + 1 (when three steps fit in a
 * slide; else the last one alone, to one of the three by a hash): each
 * moves forward or by 1 ms, the next scan is at b + 1 or later, so the
 * order of event times is kept and no scan becomes late. Pure in
 * (seed, seq). */
/* Does scan seq tie with the one before it (latest: one key, equal event
 * times)? Never two in a row, so the one before keeps its own. */
static int sd_events_ties(const sd_events_t *ev, int64_t seq) {
    if (!ev->conf.edge_ties || ev->conf.edge_share <= 0 || seq < 1) return 0;
    uint64_t salt = ev->conf.seed * 0x9E3779B97F4A7C15ULL ^ 0x71E5EDC0DE5ULL;
    return (int)(sd_util_mix64(salt ^ (uint64_t)seq) % 100u) < ev->conf.edge_share &&
           (int)(sd_util_mix64(salt ^ (uint64_t)(seq - 1)) % 100u) >= ev->conf.edge_share;
}

static int64_t sd_events_gen_time(const sd_events_t *ev, int64_t seq, sd_edge_t *edge) {
    int64_t t = ev->conf.start_ms + seq * ev->conf.step_ms, s = ev->conf.edge_slide_ms, step = ev->conf.step_ms;
    if (edge) edge->kind = SD_EDGE_NONE;
    if (sd_events_ties(ev, seq)) {
        t -= step;
        if (edge) *edge = (sd_edge_t){.kind = SD_EDGE_TIE, .offset_ms = 0, .at_ms = t};
        return t;
    }
    if (ev->conf.edge_share <= 0 || s <= 0 || step < 3) return t;
    int64_t b = sd_floor_div(t + s - 1, s) * s, k = (b - t) / step; /* k: scans between it and b */
    int off;
    if (3 * step <= s) {
        if (k > 2) return t;
        off = 1 - (int)k;
    } else {
        if (k > 0) return t;
        off = (int)(sd_util_mix64(ev->conf.seed * 0x9E3779B97F4A7C15ULL ^ (uint64_t)seq ^ 0x5EDC0DE5EDC0DE5ULL) % 3u) - 1;
    }
    if (edge) *edge = (sd_edge_t){.kind = SD_EDGE_WINDOW, .offset_ms = off, .at_ms = b};
    return b + off;
}

sd_events_times_t sd_events_time_notes(const sd_events_t *ev) { return ev->tnotes; }

int64_t sd_events_time(const sd_events_t *ev, int64_t seq) {
    if (ev->conf.kind == SD_EVENTS_LOG) return seq >= 0 && seq < ev->nlines ? ev->times[seq] : INT64_MIN;
    return sd_events_gen_time(ev, seq, NULL);
}

int sd_events_edge(const sd_events_t *ev, int64_t seq, sd_edge_t *out) {
    if (ev->conf.kind == SD_EVENTS_LOG) return 0;
    sd_events_gen_time(ev, seq, out);
    return out->kind != SD_EDGE_NONE;
}

/* The pieces of an event, one after another: room made once, each piece's
 * length taken once (this runs once per event sent). */
static void sd_events_cat(sd_buf_t *b, const char *const *parts, size_t n) {
    size_t lens[24], total = 0;
    for (size_t i = 0; i < n; i++) total += lens[i] = strlen(parts[i]);
    sd_buf_reserve(b, total + 1);
    char *o = b->data + b->len;
    for (size_t i = 0; i < n; i++) memcpy(o, parts[i], lens[i]), o += lens[i];
    b->len += total;
    b->data[b->len] = 0;
}

/* Parcel number parcel's id, "P%08u"; its length. */
static size_t sd_events_parcel_id(unsigned parcel, char pid[16]) {
    if (parcel < 100000000u) {
        pid[0] = 'P';
        *sd_util_put_digits(pid + 1, parcel, 8) = 0;
        return 9;
    }
    return (size_t)snprintf(pid, 16, "P%08u", parcel);
}

/* The parcel id of the event whose first hash is h; its length. */
static size_t sd_events_parcel(const sd_events_t *ev, uint64_t h, char pid[16]) {
    return sd_events_parcel_id((unsigned)(h % (uint64_t)ev->conf.parcels), pid);
}

size_t sd_events_delivery_id(const sd_events_t *ev, int64_t seq, char *out) {
    memcpy(out, ev->tag, ev->taglen);
    int n = snprintf(out + ev->taglen, 40, "-d%lld", (long long)seq);
    return ev->taglen + (size_t)n;
}

int sd_events_delivery_id_parse(const char *tag, size_t taglen, const char *s, size_t len, int64_t *seq) {
    if (len < taglen + 3 || len > taglen + 21 || memcmp(s, tag, taglen) || s[taglen] != '-' || s[taglen + 1] != 'd') return -1;
    return sd_events_seq_digits(s + taglen + 2, s + len, taglen + 2 >= 8, seq);
}

/* Is the delivery whose own hash is d for a parcel never scanned (orphans=)? */
static int sd_events_orphan(const sd_events_t *ev, uint64_t d) {
    return ev->conf.delivery_orphans > 0 && (int)(sd_util_mix64(d ^ 0x0F0F0F0F0F0F0F0FULL) % 100u) < ev->conf.delivery_orphans;
}

/* Whether scan seq has a delivery (its hashes in *h and *d), and the
 * join edge its delay probes. Edges take the exact bounds twice as often
 * as 1 ms to either side: an exclusive bound is the commoner bug. */
static int sd_events_delivery_draw(const sd_events_t *ev, int64_t seq, uint64_t *h, uint64_t *d, sd_edge_t *edge) {
    edge->kind = SD_EDGE_NONE;
    if (ev->conf.kind == SD_EVENTS_LOG || ev->conf.delivery_share <= 0) return 0;
    *h = sd_util_mix64(ev->conf.seed * 0x9E3779B97F4A7C15ULL ^ (uint64_t)seq);
    /* a third hash, for the delivery's own draws */
    *d = sd_util_mix64(*h ^ 0xD1B54A32D192ED03ULL);
    if ((int)(*d % 100u) >= ev->conf.delivery_share) return 0;
    if (sd_events_orphan(ev, *d)) return 1; /* no scan to lie on an edge of */
    if (ev->conf.edge_join && ev->conf.edge_share > 0) {
        uint64_t e = sd_util_mix64(*d ^ 0x5EDC0DE5EDC0DE5ULL);
        if ((int)(e % 100u) < ev->conf.edge_share) {
            static const signed char upper[8] = {1, 1, 0, 0, 1, 1, 0, 0}, off[8] = {0, 0, 0, 0, 1, -1, -1, 1};
            unsigned k = (unsigned)((e >> 8) % 8u);
            edge->kind = upper[k] ? SD_EDGE_JOIN_UPPER : SD_EDGE_JOIN_LOWER;
            edge->offset_ms = off[k];
            edge->at_ms = upper[k] ? ev->conf.edge_upper_ms : ev->conf.edge_lower_ms;
        }
    }
    return 1;
}

int sd_events_delivery_edge(const sd_events_t *ev, int64_t seq, sd_edge_t *out) {
    uint64_t h, d;
    return sd_events_delivery_draw(ev, seq, &h, &d, out) && out->kind != SD_EDGE_NONE;
}

int sd_events_has_delivery(const sd_events_t *ev, int64_t seq) {
    uint64_t h, d;
    sd_edge_t e;
    return sd_events_delivery_draw(ev, seq, &h, &d, &e);
}

/* Delivery seq's bytes at event time t, its hashes h and d (orphan: for
 * a parcel never scanned). */
static void sd_events_delivery_bytes(const sd_events_t *ev, int64_t seq, uint64_t h, uint64_t d, int orphan, int64_t t,
                                     sd_buf_t *payload, sd_buf_t *key) {
    char id[64], pid[16], iso[32], courier[8];
    sd_events_delivery_id(ev, seq, id);
    /* an orphan's parcel lies past the ones the generator scans */
    if (orphan) sd_events_parcel_id((unsigned)ev->conf.parcels + (unsigned)((d >> 20) % (uint64_t)ev->conf.parcels), pid);
    else sd_events_parcel(ev, h, pid);
    sd_util_iso8601(t, iso, sizeof(iso));
    snprintf(courier, sizeof(courier), "C%02u", (unsigned)((d >> 40) % 40u));
    sd_buf_reset(payload);
    sd_buf_reset(key);
    sd_buf_puts(key, pid);
    const char *parts[] = {"{\"delivery_id\":\"", id, "\",\"parcel_id\":\"", pid, "\",\"delivered_at\":\"", iso,
                           "\",\"courier\":\"", courier, "\"}"};
    sd_events_cat(payload, parts, sizeof(parts) / sizeof(parts[0]));
}

int sd_events_delivery(const sd_events_t *ev, int64_t seq, int64_t scan_time_ms, sd_buf_t *payload, sd_buf_t *key,
                       int64_t *event_time_ms) {
    uint64_t h, d;
    sd_edge_t edge;
    if (!sd_events_delivery_draw(ev, seq, &h, &d, &edge)) return 0;
    int64_t span = ev->conf.delivery_max_ms - ev->conf.delivery_min_ms, t;
    if (edge.kind != SD_EDGE_NONE) t = scan_time_ms + edge.at_ms + edge.offset_ms;
    else t = scan_time_ms + ev->conf.delivery_min_ms + (span > 0 ? (int64_t)((d >> 8) % (uint64_t)(span + 1)) : 0);
    sd_events_delivery_bytes(ev, seq, h, d, sd_events_orphan(ev, d), t, payload, key);
    if (event_time_ms) *event_time_ms = t;
    return 1;
}

void sd_events_delivery_at(const sd_events_t *ev, int64_t seq, int64_t t, sd_buf_t *payload, sd_buf_t *key) {
    uint64_t h = sd_util_mix64(ev->conf.seed * 0x9E3779B97F4A7C15ULL ^ (uint64_t)seq);
    sd_events_delivery_bytes(ev, seq, h, sd_util_mix64(h ^ 0xD1B54A32D192ED03ULL), 0, t, payload, key);
}

sd_err_t sd_events_render(const sd_events_t *ev, int64_t seq, int64_t time_ms, sd_buf_t *payload, sd_buf_t *key,
                          int64_t *event_time_ms, char *err, size_t errlen) {
    sd_buf_reset(payload);
    sd_buf_reset(key);
    return sd_events_render_append(ev, seq, time_ms, payload, key, event_time_ms, err, errlen);
}

sd_err_t sd_events_render_append(const sd_events_t *ev, int64_t seq, int64_t time_ms, sd_buf_t *payload, sd_buf_t *key,
                                 int64_t *event_time_ms, char *err, size_t errlen) {
    if (ev->conf.kind == SD_EVENTS_LOG) {
        char id[48];
        sd_events_id(ev, seq, id);
        if (seq < 0 || seq >= ev->nlines)
            return sd_err_set(err, errlen, SD_ERR_SCENARIO, "events log %s: has %lld events, the drill needs event %lld",
                              ev->conf.log_path, (long long)ev->nlines, (long long)seq + 1);
        json_t *o = sd_json_loadb(ev->log + ev->line_off[seq], ev->line_len[seq], 0);
        if (!o) return sd_err_set(err, errlen, SD_ERR_INTERNAL, "events log: line of event %lld no longer parses", (long long)seq);
        json_object_set_new(o, ev->id_field, json_string(id));
        int64_t t = ev->times[seq];
        if (time_ms != INT64_MIN) {
            char iso[32];
            json_t *old = json_object_get(o, ev->time_field);
            if (json_is_integer(old)) json_object_set_new(o, ev->time_field, json_integer(time_ms));
            else json_object_set_new(o, ev->time_field, json_string(sd_util_iso8601(time_ms, iso, sizeof(iso))));
            t = time_ms;
        }
        char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(o);
        if (!s) return sd_err_set(err, errlen, SD_ERR_INTERNAL, "events log: cannot serialise event %lld", (long long)seq);
        sd_buf_puts(payload, s);
        free(s);
        if (event_time_ms) *event_time_ms = t;
        return SD_OK;
    }
    uint64_t h = sd_util_mix64(ev->conf.seed * 0x9E3779B97F4A7C15ULL ^ (uint64_t)seq);
    uint64_t h2 = sd_util_mix64(h);
    int64_t t = time_ms != INT64_MIN ? time_ms : sd_events_gen_time(ev, seq, NULL);
    /* a tie: the key (parcel, location) of the scan before it */
    if (ev->conf.edge_ties && sd_events_ties(ev, seq)) h = sd_util_mix64(ev->conf.seed * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(seq - 1));
    unsigned loc = (unsigned)((h >> 32) % (uint64_t)ev->conf.locations);
    unsigned scan = (unsigned)(h2 % (sizeof(sd_scan_types) / sizeof(sd_scan_types[0])));
    /* {"<id>":"<tag-seq>","parcel_id":"P%08u","<time>":"<iso>","location":"<hub>-%02u","scan":"<scan>","weight_g":N},
     * written in place into room made once, every piece's length known
     * (this runs once per event sent) */
    char pid[16];
    size_t pidlen = sd_events_parcel(ev, h, pid);
    sd_buf_append(key, pid, pidlen);
    sd_buf_reserve(payload, ev->headlen + ev->timekeylen + 200); /* the rest: at most 170 bytes */
    char *o = payload->data + payload->len;
    memcpy(o, ev->head, ev->headlen), o += ev->headlen;
    o = sd_util_put_u64(o, (uint64_t)seq);
    memcpy(o, "\",\"parcel_id\":\"", 15), o += 15;
    memcpy(o, pid, pidlen), o += pidlen;
    memcpy(o, ev->timekey, ev->timekeylen), o += ev->timekeylen;
    o += sd_util_iso8601_n(t, o, 40);
    memcpy(o, "\",\"location\":\"", 14), o += 14;
    memcpy(o, sd_hubs[loc % (sizeof(sd_hubs) / sizeof(sd_hubs[0]))], 3), o += 3;
    *o++ = '-';
    o = loc < 100 ? sd_util_put_digits(o, loc, 2) : sd_util_put_u64(o, loc);
    memcpy(o, "\",\"scan\":\"", 10), o += 10;
    memcpy(o, sd_scan_types[scan], sd_scan_lens[scan]), o += sd_scan_lens[scan];
    memcpy(o, "\",\"weight_g\":", 13), o += 13;
    /* weight_g: 50 to 30,000 grams, from bits the other fields do not use */
    o = sd_util_put_u64(o, 50u + (unsigned)((h2 >> 24) % 29951u));
    *o++ = '}';
    *o = 0;
    payload->len = (size_t)(o - payload->data);
    if (event_time_ms) *event_time_ms = t;
    return SD_OK;
}
