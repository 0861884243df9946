/* ledger_series.c - the ledger's drawn series, kept while messages are sent
 * and acknowledged, so that a report never scans the ledger.
 *
 * The timeline chart draws, over time, the messages sent, those
 * acknowledged, and the ids the target should hold that Kafka had
 * acknowledged (the first acknowledged copy of each). Counted from the
 * ledger's rows, that is one scan of every message: 4 s for ten million,
 * 35 s for a hundred million. Counted here as each message goes by, it is
 * a few increments, and run.db keeps at most SD_SERIES_MAX buckets of it
 * (table series: t_ms, sent, acked, expected_acked), the bucket doubling
 * whenever the run outgrows them; meta says the bucket's width
 * (series_bucket_ms). The ledger's totals the export's manifest names
 * (messages, distinct ids, messages of each kind) are kept beside them
 * (meta ledger_messages, ledger_distinct_ids, ledger_kinds).
 *
 * A delivery report names the message by its number only: the sequence
 * number and the disposition of the messages in flight are kept in a ring
 * indexed by that number. A report whose message the ring no longer holds
 * (more in flight than it has room for: a producer told to queue more
 * than its default 100,000) makes the series inexact: it is then not
 * stored, and the charts count from the ledger as before. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger_int.h"
#include "util.h"

#define SD_SERIES_MAX 4096
#define SD_SERIES_RING (1 << 18)
#define SD_SERIES_TARGET (1ull << 62)
#define SD_SERIES_SIDE (1ull << 61)
#define SD_SERIES_SEQ (SD_SERIES_SIDE - 1)

static void sd_bit_set(uint8_t **bits, int64_t *cap, int64_t i) {
    if (i < 0) return;
    if (i / 8 >= *cap) {
        int64_t c = *cap ? *cap : 4096;
        while (i / 8 >= c) c *= 2;
        *bits = sd_util_xrealloc(*bits, (size_t)c);
        memset(*bits + *cap, 0, (size_t)(c - *cap));
        *cap = c;
    }
    (*bits)[i / 8] |= (uint8_t)(1u << (i % 8));
}

static int sd_bit_get(const uint8_t *bits, int64_t cap, int64_t i) {
    return i >= 0 && i / 8 < cap && (bits[i / 8] >> (i % 8)) & 1;
}

/* The bucket of time t (epoch ms), the series widened until it fits. */
static int64_t *sd_series_bucket(sd_lseries_t *s, int64_t t) {
    if (!s->width) {
        s->t0 = t;
        s->width = 10;
        s->v = sd_util_xcalloc(SD_SERIES_MAX * 3, sizeof(int64_t));
    }
    int64_t k = t < s->t0 ? 0 : (t - s->t0) / s->width;
    while (k >= SD_SERIES_MAX) {
        for (int64_t j = 0; j < SD_SERIES_MAX / 2; j++)
            for (int c = 0; c < 3; c++) s->v[3 * j + c] = s->v[3 * (2 * j) + c] + s->v[3 * (2 * j + 1) + c];
        memset(s->v + 3 * (SD_SERIES_MAX / 2), 0, sizeof(int64_t) * 3 * (SD_SERIES_MAX / 2));
        s->width *= 2;
        k = (t - s->t0) / s->width;
    }
    if (k + 1 > s->nb) s->nb = k + 1;
    return s->v + 3 * k;
}

void sd_lseries_sent(sd_ledger_t *l, int64_t n, int64_t seq, const char *kind, int target, int side, int64_t queued_ms) {
    sd_lseries_t *s = &l->series;
    if (!s->ring) s->ring = sd_util_xcalloc(SD_SERIES_RING, sizeof(*s->ring));
    sd_lring_t *x = &s->ring[n & (SD_SERIES_RING - 1)];
    x->n = n;
    x->seq = (uint64_t)(seq < 0 ? 0 : seq) & SD_SERIES_SEQ;
    if (seq < 0) x->seq |= SD_SERIES_SEQ; /* no id: never expected */
    if (target) x->seq |= SD_SERIES_TARGET;
    if (side) {
        x->seq |= SD_SERIES_SIDE;
        return;
    }
    sd_series_bucket(s, queued_ms)[0]++;
    s->messages++;
    if (seq >= 0 && !sd_bit_get(s->sent_bits, s->sent_cap, seq)) {
        sd_bit_set(&s->sent_bits, &s->sent_cap, seq);
        s->distinct++;
    }
    int k = 0;
    while (k < s->nkinds && strcmp(s->kinds[k].kind, kind)) k++;
    if (k == s->nkinds && k < (int)(sizeof(s->kinds) / sizeof(s->kinds[0]))) s->kinds[s->nkinds++].kind = kind;
    if (k < s->nkinds) s->kinds[k].n++;
    else s->inexact = 1;
}

void sd_lseries_acked(sd_ledger_t *l, int64_t n, int ok, int64_t acked_ms) {
    sd_lseries_t *s = &l->series;
    sd_lring_t *x = s->ring ? &s->ring[n & (SD_SERIES_RING - 1)] : NULL;
    if (!x || x->n != n) {
        s->inexact = 1;
        return;
    }
    x->n = -1; /* answered: a second report of it would be no one's */
    if (x->seq & SD_SERIES_SIDE || !ok) return;
    int64_t *b = sd_series_bucket(s, acked_ms);
    b[1]++;
    int64_t seq = (int64_t)(x->seq & SD_SERIES_SEQ);
    if (x->seq & SD_SERIES_TARGET && seq != (int64_t)SD_SERIES_SEQ && !sd_bit_get(s->acked_bits, s->acked_cap, seq)) {
        sd_bit_set(&s->acked_bits, &s->acked_cap, seq);
        b[2]++;
    }
}

sd_err_t sd_lseries_store(sd_ledger_t *l, char *err, size_t errlen) {
    sd_lseries_t *s = &l->series;
    if (!s->width || s->inexact) return SD_OK;
    sd_buf_t b;
    sd_buf_init(&b);
    sd_buf_putc(&b, '[');
    for (int64_t k = 0; k < s->nb; k++)
        sd_buf_printf(&b, "%s[%lld,%lld,%lld,%lld]", k ? "," : "", (long long)(s->t0 + k * s->width), (long long)s->v[3 * k],
                      (long long)s->v[3 * k + 1], (long long)s->v[3 * k + 2]);
    sd_buf_putc(&b, ']');
    for (int i = 1; i < s->nkinds; i++) /* by name, as the ledger's GROUP BY gives them */
        for (int j = i; j > 0 && strcmp(s->kinds[j - 1].kind, s->kinds[j].kind) > 0; j--) {
            __typeof__(s->kinds[0]) t = s->kinds[j];
            s->kinds[j] = s->kinds[j - 1];
            s->kinds[j - 1] = t;
        }
    sd_buf_t kinds;
    sd_buf_init(&kinds);
    sd_buf_putc(&kinds, '{');
    for (int k = 0; k < s->nkinds; k++) sd_buf_printf(&kinds, "%s\"%s\":%lld", k ? "," : "", s->kinds[k].kind, (long long)s->kinds[k].n);
    sd_buf_putc(&kinds, '}');
    char width[32], msgs[32], ids[32];
    snprintf(width, sizeof(width), "%lld", (long long)s->width);
    snprintf(msgs, sizeof(msgs), "%lld", (long long)s->messages);
    snprintf(ids, sizeof(ids), "%lld", (long long)s->distinct);
    sd_err_t e = sd_ledger_run(l, "DELETE FROM series", "clear the drawn series", err, errlen, NULL, "");
    if (!e)
        e = sd_ledger_run(l, "INSERT INTO series(t_ms, sent, acked, expected_acked) SELECT json_extract(value, '$[0]'),"
                             " json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]') FROM json_each(?)",
                          "record the drawn series", err, errlen, NULL, "s", b.data);
    const char *meta[][2] = {{"series_bucket_ms", width}, {"ledger_messages", msgs}, {"ledger_distinct_ids", ids}, {"ledger_kinds", kinds.data}};
    for (size_t i = 0; !e && i < sizeof(meta) / sizeof(meta[0]); i++)
        e = sd_ledger_run(l, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", "record the ledger's totals", err, errlen, NULL, "ss",
                          meta[i][0], meta[i][1]);
    sd_buf_free(&b);
    sd_buf_free(&kinds);
    return e;
}

void sd_lseries_free(sd_ledger_t *l) {
    sd_lseries_t *s = &l->series;
    free(s->v);
    free(s->ring);
    free(s->sent_bits);
    free(s->acked_bits);
    memset(s, 0, sizeof(*s));
}
