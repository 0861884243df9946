/* test_recon.c - the oracle on hand-made ledgers and observations where
 * the answer is known: clean, loss, duplicate, unexpected, late leaked,
 * malformed leaked/vanished, and a loss plus a duplicate that cancel out
 * in the row count (which must fail). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "observe.h"
#include "late.h"
#include "recon.h"

#define N 8

typedef struct {
    uint8_t disp[N], kind[N], sends[N], trimmed[N];
    uint32_t t[N], q[N];
    sd_recon_ledger_t l;
} hist_t;

/* n valid events expected in the target */
static void hist_init(hist_t *h, int n) {
    memset(h, 0, sizeof(*h));
    for (int i = 0; i < N; i++) {
        h->disp[i] = i < n ? SD_DISP_TARGET : SD_RECON_UNSENT;
        h->kind[i] = SD_KIND_VALID;
    }
    h->l.nseq = N;
    h->l.trimmed = h->trimmed;
}

/* The ledger as the runner keeps it: the test's arrays packed a byte a
 * seq, each send counted one at a time (kept until the next test's). */
static sd_seqs_t ks;
static const sd_recon_ledger_t *L(hist_t *h) {
    sd_seqs_free(&ks);
    sd_seqs_reserve(&ks, N);
    for (int i = 0; i < N; i++) {
        sd_seqs_set(&ks, i, h->kind[i], h->disp[i]);
        for (int c = 0; c < h->sends[i]; c++) sd_seqs_add_send(&ks, i, 1);
    }
    h->l.seqs = &ks;
    return &h->l;
}

/* The copy counts as the observation keeps them (one byte, exact beyond
 * through a map): each test's array, counted up one copy at a time. */
static sd_counts_t kt, kq;
static const sd_counts_t *counts_of(sd_counts_t *k, const uint32_t *a) {
    sd_counts_free(k);
    sd_counts_init(k, N);
    for (int i = 0; i < N; i++)
        for (uint32_t c = 0; c < a[i]; c++) sd_counts_inc(k, i);
    return k;
}
#define T(h) counts_of(&kt, (h)->t)
#define Q(h) counts_of(&kq, (h)->q)

static int64_t rows_of(const hist_t *h) {
    int64_t r = 0;
    for (int i = 0; i < N; i++) r += h->t[i];
    return r;
}

static void fmt_id(void *o, int64_t seq, char *out, size_t n) { (void)o; snprintf(out, n, "t-%lld", (long long)seq); }

static sd_checks_t run_checks(const sd_recon_result_t *r, sd_profile_t p, int has_q, const sd_step_t *const *ex, int nex) {
    sd_recon_ctx_t ctx = {.profile = p, .has_quarantine_sink = has_q, .malformed_to_quarantine = 1, .expects = ex,
                          .nexpects = nex, .fmt_id = fmt_id};
    sd_checks_t c;
    sd_recon_checks(&ctx, r, &c);
    return c;
}

static const sd_check_t *find_check(const sd_checks_t *c, const char *name) {
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->v[i].name, name)) return &c->v[i];
    return NULL;
}

Test(recon, clean_history_passes) {
    hist_t h;
    hist_init(&h, 5);
    for (int i = 0; i < 5; i++) h.t[i] = 1;
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    cr_assert_eq(r.counts.expected_in_target, 5, "expected 5 expected ids, got %lld", (long long)r.counts.expected_in_target);
    cr_assert_eq(r.counts.delivered_once, 5);
    cr_assert_eq(r.counts.lost, 0);
    cr_assert_eq(r.counts.duplicated, 0);
    cr_assert_eq(r.counts.observed_unique, 5);
    sd_checks_t c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 0, NULL, 0);
    cr_assert_eq(sd_checks_failed(&c), 0, "a clean history failed %d checks", sd_checks_failed(&c));
    cr_assert(c.n >= 5, "expected the profile's implicit checks, got %d", c.n);
    sd_checks_free(&c);
    sd_recon_result_free(&r);
}

Test(recon, a_drill_that_sent_nothing_judged_nothing) {
    hist_t h;
    hist_init(&h, 0);
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), NULL, 0, 0, 0, &r);
    sd_checks_t c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 0, NULL, 0);
    cr_assert_eq(sd_checks_failed(&c), 0);
    cr_assert(c.unmeasured && strstr(c.unmeasured_why, "nothing was sent"), "an empty sink after no event is no pass: \"%s\"",
              c.unmeasured ? c.unmeasured_why : "");
    sd_checks_free(&c);
    /* one malformed event sent and dropped (the run sets the sent counts, run_judge.c): something was judged */
    h.disp[0] = SD_DISP_DROPPED;
    h.kind[0] = SD_KIND_MALFORMED;
    sd_recon_result_free(&r);
    memset(&r, 0, sizeof(r));
    sd_recon_classify(L(&h), T(&h), NULL, 0, 0, 0, &r);
    r.counts.malformed_sent = 1;
    c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 0, NULL, 0);
    cr_assert_not(c.unmeasured, "%s", c.unmeasured_why);
    sd_checks_free(&c);
    sd_recon_result_free(&r);
}

Test(recon, a_write_time_belongs_to_the_batch_that_began_last_around_it) {
    /* batch 1 [1000, 2000], batch 2 [2000, 3000] (begins as 1 ends), batch 3 [5000, 6000] */
    const sd_batch_span_t v[] = {{1, 2, 2000, 3000}, {1, 1, 1000, 2000}, {2, 3, 5000, 6000}};
    const struct { int64_t t; int64_t batch; } cases[] = {
        {994, -1},   /* 6 ms before batch 1: no batch */
        {995, 1},    /* 5 ms before: another process's clock, batch 1 */
        {1500, 1},
        {2000, 2},   /* on the seam: the batch that began last */
        {3004, 2},   /* 4 ms past batch 2's end: still its write */
        {3005, 2},   /* 5 ms past: still */
        {3006, -1},  /* 6 ms past: none */
        {4995, 3},   /* 5 ms before batch 3 */
        {6005, 3},
        {6006, -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const sd_batch_span_t *b = sd_observe_batch_at(v, 3, cases[i].t);
        cr_assert_eq(b ? b->batch : -1, cases[i].batch, "a write at %lld: expected batch %lld, got %lld", (long long)cases[i].t,
                     (long long)cases[i].batch, (long long)(b ? b->batch : -1));
    }
    cr_assert_null(sd_observe_batch_at(v, 0, 1500), "no batch at all: none");
}

Test(recon, loss_is_caught_with_its_id) {
    hist_t h;
    hist_init(&h, 5);
    for (int i = 0; i < 5; i++) h.t[i] = 1;
    h.t[3] = 0;
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    cr_assert_eq(r.counts.lost, 1);
    cr_assert_eq(r.lists[SD_B_LOST].n, 1);
    cr_assert_eq(r.lists[SD_B_LOST].seq[0], 3, "expected seq 3 lost, got %lld", (long long)r.lists[SD_B_LOST].seq[0]);
    sd_checks_t c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 0, NULL, 0);
    const sd_check_t *k = find_check(&c, "lost");
    cr_assert(k && !k->pass, "the lost check must fail");
    cr_assert(strstr(k->detail, "t-3"), "expected the lost id in the detail, got \"%s\"", k->detail);
    sd_checks_free(&c);
    /* at-most-once allows loss */
    c = run_checks(&r, SD_PROFILE_AT_MOST_ONCE, 0, NULL, 0);
    cr_assert_null(find_check(&c, "lost"), "at-most-once must not check loss");
    cr_assert_eq(sd_checks_failed(&c), 0);
    sd_checks_free(&c);
    sd_recon_result_free(&r);
}

Test(recon, duplicate_is_caught_with_copies) {
    hist_t h;
    hist_init(&h, 5);
    for (int i = 0; i < 5; i++) h.t[i] = 1;
    h.t[2] = 3;
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    cr_assert_eq(r.counts.duplicated, 1);
    cr_assert_eq(r.counts.duplicate_rows, 2);
    cr_assert_eq(r.lists[SD_B_DUPLICATED].copies[0], 3u);
    sd_checks_t c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 0, NULL, 0);
    const sd_check_t *k = find_check(&c, "duplicated");
    cr_assert(k && !k->pass);
    cr_assert(strstr(k->detail, "t-2 x3"), "expected \"t-2 x3\" in \"%s\"", k->detail);
    sd_checks_free(&c);
    /* an expectation on the extra rows names the same ids */
    sd_expect_t x[1] = {{.count = "duplicate_rows", .op = SD_OP_EQ, .value = 0}};
    sd_step_t st = {.kind = SD_STEP_EXPECT, .expect = {.v = x, .n = 1}};
    const sd_step_t *ex[1] = {&st};
    c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 0, ex, 1);
    k = find_check(&c, "duplicate_rows");
    cr_assert(k && !k->pass && k->detail && strstr(k->detail, "t-2 x3"), "%s", k && k->detail ? k->detail : "(none)");
    sd_checks_free(&c);
    /* at-least-once tolerates duplicates, not loss */
    c = run_checks(&r, SD_PROFILE_AT_LEAST_ONCE, 0, NULL, 0);
    cr_assert_eq(sd_checks_failed(&c), 0, "at-least-once must accept duplicates");
    cr_assert_not_null(find_check(&c, "lost"));
    sd_checks_free(&c);
    sd_recon_result_free(&r);
}

Test(recon, unexpected_rows_fail) {
    hist_t h;
    hist_init(&h, 3);
    for (int i = 0; i < 3; i++) h.t[i] = 1;
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h) + 2, 2, 1, &r);
    cr_assert_eq(r.counts.unexpected, 2);
    cr_assert_eq(r.counts.observed_rows, 5);
    cr_assert_eq(r.counts.observed_unique, 4, "3 ledger ids + 1 distinct unexpected id, got %lld", (long long)r.counts.observed_unique);
    sd_checks_t c = run_checks(&r, SD_PROFILE_AT_LEAST_ONCE, 0, NULL, 0);
    const sd_check_t *k = find_check(&c, "unexpected");
    cr_assert(k && !k->pass, "unexpected rows must fail every profile");
    sd_checks_free(&c);
    sd_recon_result_free(&r);
}

Test(recon, late_leaked_and_dropped) {
    hist_t h;
    hist_init(&h, 2);
    h.t[0] = h.t[1] = 1;
    h.disp[2] = h.disp[3] = SD_DISP_DROPPED;
    h.kind[2] = h.kind[3] = SD_KIND_LATE;
    h.t[3] = 1; /* leaked */
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    cr_assert_eq(r.counts.late_leaked, 1);
    cr_assert_eq(r.counts.late_dropped, 1);
    cr_assert_eq(r.lists[SD_B_LATE_LEAKED].seq[0], 3);
    cr_assert_eq(r.counts.expected_in_target, 2);
    sd_checks_t c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 0, NULL, 0);
    cr_assert(!find_check(&c, "late_leaked")->pass);
    cr_assert_eq(sd_checks_failed(&c), 1, "only late_leaked should fail, %d failed", sd_checks_failed(&c));
    sd_checks_free(&c);
    sd_recon_result_free(&r);
}

Test(recon, maybe_late_in_the_target_is_no_leak) {
    /* 2 and 3 late (dropped), 4 and 5 late (quarantined); 3 and 5 reached
     * the target. By the engine's rule 3 was maybe-late (its batch's
     * watermark had not passed it), 5 certainly late */
    hist_t h;
    hist_init(&h, 2);
    h.t[0] = h.t[1] = 1;
    h.disp[2] = h.disp[3] = SD_DISP_DROPPED;
    h.disp[4] = h.disp[5] = SD_DISP_QUARANTINE;
    for (int i = 2; i < 6; i++) h.kind[i] = SD_KIND_LATE;
    h.t[3] = h.t[5] = 1;
    h.q[4] = 1;
    uint8_t maybe[N] = {0};
    maybe[2] = maybe[3] = 1;
    h.l.maybe_late = maybe;
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), Q(&h), rows_of(&h), 0, 0, &r);
    cr_assert_eq(r.counts.late_maybe_kept, 1, "3 is maybe-late and kept");
    cr_assert_eq(r.counts.late_leaked, 1, "5 is certainly late, and leaked");
    cr_assert_eq(r.lists[SD_B_LATE_LEAKED].n, 1);
    cr_assert_eq(r.lists[SD_B_LATE_LEAKED].seq[0], 5);
    cr_assert_eq(r.counts.late_dropped, 1, "2: maybe-late and dropped is right too");
    /* the same with 5 maybe-late: in the target and not quarantined, right */
    maybe[5] = 1;
    sd_recon_result_t r2 = {0};
    sd_recon_classify(L(&h), T(&h), Q(&h), rows_of(&h), 0, 0, &r2);
    cr_assert_eq(r2.counts.late_leaked, 0);
    cr_assert_eq(r2.counts.late_maybe_kept, 2);
    sd_checks_t c = run_checks(&r2, SD_PROFILE_EXACTLY_ONCE, 1, NULL, 0);
    cr_assert(find_check(&c, "late_leaked")->pass);
    sd_checks_free(&c);
    sd_recon_result_free(&r);
    sd_recon_result_free(&r2);
}

Test(recon, malformed_quarantined_leaked_vanished) {
    hist_t h;
    hist_init(&h, 2);
    h.t[0] = h.t[1] = 1;
    for (int i = 2; i < 5; i++) { h.disp[i] = SD_DISP_QUARANTINE; h.kind[i] = SD_KIND_MALFORMED; }
    h.q[2] = 1;  /* quarantined */
    h.t[3] = 1;  /* leaked into the target */
    /* 4: vanished */
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), Q(&h), rows_of(&h), 0, 0, &r);
    cr_assert_eq(r.counts.quarantined, 1);
    cr_assert_eq(r.counts.malformed_leaked, 1);
    cr_assert_eq(r.counts.malformed_vanished, 1);
    cr_assert_eq(r.lists[SD_B_MALFORMED_VANISHED].seq[0], 4);
    sd_checks_t c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 1, NULL, 0);
    cr_assert(!find_check(&c, "malformed_leaked")->pass);
    cr_assert(!find_check(&c, "malformed_vanished")->pass);
    sd_checks_free(&c);
    /* without a quarantine sink, vanishing cannot be judged: no check, a note */
    sd_recon_result_t r2 = {0};
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r2);
    r2.counts.malformed_sent = 3;
    c = run_checks(&r2, SD_PROFILE_EXACTLY_ONCE, 0, NULL, 0);
    cr_assert_null(find_check(&c, "malformed_vanished"));
    cr_assert_eq(c.n_not_judged, 1, "expected a not-judged note, got %d", c.n_not_judged);
    sd_checks_free(&c);
    sd_recon_result_free(&r);
    sd_recon_result_free(&r2);
}

Test(recon, loss_and_duplicate_cancel_out_in_counts_but_fail) {
    hist_t h;
    hist_init(&h, 5);
    for (int i = 0; i < 5; i++) h.t[i] = 1;
    h.t[4] = 0;  /* lost */
    h.t[1] = 2;  /* duplicated */
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    cr_assert_eq(r.counts.observed_rows, r.counts.expected_in_target,
                 "the row count alone looks right: %lld rows for %lld expected", (long long)r.counts.observed_rows,
                 (long long)r.counts.expected_in_target);
    cr_assert_eq(r.counts.lost, 1);
    cr_assert_eq(r.counts.duplicated, 1);
    sd_checks_t c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 0, NULL, 0);
    cr_assert_eq(sd_checks_failed(&c), 2, "loss and duplicate must both fail, %d failed", sd_checks_failed(&c));
    sd_checks_free(&c);
    sd_recon_result_free(&r);
}

Test(recon, trimmed_loss_is_unjudgeable_not_lost) {
    hist_t h;
    hist_init(&h, 4);
    h.t[0] = h.t[1] = 1;
    h.trimmed[2] = 1;  /* missing, but the broker deleted it */
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    cr_assert_eq(r.counts.unjudgeable, 1);
    cr_assert_eq(r.counts.lost, 1, "seq 3 is lost for real, got %lld", (long long)r.counts.lost);
    sd_checks_t c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 0, NULL, 0);
    cr_assert_eq(c.n_not_judged, 1);
    sd_checks_free(&c);
    sd_recon_result_free(&r);
}

Test(recon, explicit_expect_replaces_the_implicit_check) {
    hist_t h;
    hist_init(&h, 3);
    h.t[0] = 2; h.t[1] = 2; h.t[2] = 1;
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    sd_expect_t x[2] = {{.count = "duplicated", .op = SD_OP_GT, .value = 0},
                        {.count = "observed_unique", .op = SD_OP_EQ, .value_count = "expected_in_target"}};
    sd_step_t st = {.kind = SD_STEP_EXPECT, .expect = {.v = x, .n = 2}};
    const sd_step_t *ex[1] = {&st};
    sd_checks_t c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 0, ex, 1);
    int dup_checks = 0;
    for (int i = 0; i < c.n; i++) dup_checks += !strcmp(c.v[i].name, "duplicated");
    cr_assert_eq(dup_checks, 1, "expected one duplicated check (the explicit one), got %d", dup_checks);
    cr_assert(find_check(&c, "duplicated")->pass, "duplicated>0 must pass with 2 duplicated ids");
    cr_assert(find_check(&c, "observed_unique")->pass);
    cr_assert_eq(sd_checks_failed(&c), 0);
    sd_checks_free(&c);
    sd_recon_result_free(&r);
}

Test(recon, unsent_ids_are_not_expected) {
    hist_t h;
    hist_init(&h, 3);
    h.t[0] = h.t[1] = 1;
    h.disp[2] = SD_RECON_UNSENT;
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    cr_assert_eq(r.counts.lost, 0);
    cr_assert_eq(r.counts.expected_in_target, 2);
    sd_recon_result_free(&r);
}

/* observe: a row's count is made a few rows later (its counter fetched
 * meanwhile); every one is counted once flushed, past 254 copies too */
Test(recon, observe_counts_every_row_once_flushed) {
    sd_observe_t o = {0};
    o.nseq = 100;
    sd_counts_init(&o.copies, 100);
    char id[32];
    for (int i = 0; i < 30000; i++) {
        int seq = i < 1000 ? i % 100 : 7; /* 10 copies each, and 29,000 more of seq 7 */
        int n = snprintf(id, sizeof(id), "abc-%d", seq);
        cr_assert_eq(sd_observe_row(&o, "abc", 3, id, (size_t)n, "w", 1), seq);
    }
    int64_t before = 0;
    for (int s = 0; s < 100; s++) before += sd_counts_get(&o.copies, s);
    cr_assert_eq(before, 30000 - SD_OBSERVE_PENDING, "counted before the flush: %lld", (long long)before);
    sd_observe_flush(&o);
    sd_observe_flush(&o); /* a second flush counts nothing again */
    for (int s = 0; s < 100; s++) cr_assert_eq(sd_counts_get(&o.copies, s), s == 7 ? 29010u : 10u, "seq %d", s);
    sd_observe_free(&o);
}

/* observe: ids parse to seq without a lookup; anything else is unexpected */
Test(recon, observe_maps_ids_and_collects_unexpected) {
    sd_observe_t o = {0};
    o.nseq = 5;
    sd_counts_init(&o.copies, 5);
    const char *rows[] = {"abc-0", "abc-1", "abc-1", "abc-4", "abc-01", "abc-5", "xyz-2", "abc-", "abc-2x", NULL};
    for (int i = 0; rows[i]; i++) sd_observe_row(&o, "abc", 3, rows[i], strlen(rows[i]), "w", 1);
    sd_observe_row(&o, "abc", 3, NULL, 0, NULL, 0);
    sd_observe_flush(&o);
    cr_assert_eq(sd_counts_get(&o.copies, 0), 1u);
    cr_assert_eq(sd_counts_get(&o.copies, 1), 2u);
    cr_assert_eq(sd_counts_get(&o.copies, 4), 1u);
    cr_assert_eq(o.rows, 10);
    cr_assert_eq(o.unexpected_rows, 6, "leading zero, out of range, other tag, empty, junk, null: got %lld", (long long)o.unexpected_rows);
    cr_assert_eq(o.unexpected_unique, 6);
    /* one unexpected id in a thousand rows: its writers are kept to the first
     * few, a row without a writer adds none */
    for (int i = 0; i < 1000; i++) sd_observe_row(&o, "abc", 3, "xyz-2", 5, i % 2 ? "incarnation 7 batch 1234" : NULL, i % 2 ? 24 : 0);
    const sd_unexpected_t *u = NULL;
    for (int64_t i = 0; i < o.n_unexpected; i++)
        if (!strcmp(o.unexpected[i].id, "xyz-2")) u = &o.unexpected[i];
    cr_assert_not_null(u);
    cr_assert_eq(u->copies, 1001);
    cr_assert(strlen(u->writers) < 260, "writers capped: %zu bytes", strlen(u->writers));
    cr_assert(strstr(u->writers, "incarnation 7 batch 1234"), "%s", u->writers);
    cr_assert_null(strstr(u->writers, "; ; "), "no empty writer: %s", u->writers);
    sd_observe_free(&o);
}

/* The quarantine's delivery ids the contract sends there are claimed out
 * of its unexpected ids with their rows; the rest stay unexpected. */
static int claim_deliveries(void *opaque, const sd_unexpected_t *u) {
    int *claimed = opaque;
    int64_t seq;
    if (sd_events_delivery_id_parse("abc", 3, u->raw, u->rawlen, &seq) || seq > 5) return 0;
    (*claimed)++;
    return 1;
}

Test(recon, claimed_unexpected_ids_leave_with_their_rows) {
    sd_observe_t o = {0};
    o.nseq = 5;
    sd_counts_init(&o.copies, 5);
    const char *rows[] = {"abc-d1", "abc-d1", "abc-1", "abc-d3", "abc-d9", "xyz-d2", NULL};
    for (int i = 0; rows[i]; i++) sd_observe_row(&o, "abc", 3, rows[i], strlen(rows[i]), "w", 1);
    sd_observe_flush(&o);
    cr_assert_eq(o.unexpected_rows, 5);
    cr_assert_eq(o.unexpected_unique, 4);
    int claimed = 0;
    sd_observe_claim_unexpected(&o, claim_deliveries, &claimed);
    cr_assert_eq(claimed, 2, "abc-d1 and abc-d3: %d", claimed);
    cr_assert_eq(o.unexpected_rows, 2, "the rows of abc-d9 and xyz-d2 stay: %lld", (long long)o.unexpected_rows);
    cr_assert_eq(o.unexpected_unique, 2);
    cr_assert_eq(o.n_unexpected, 2);
    cr_assert_str_eq(o.unexpected[0].id, "abc-d9");
    cr_assert_str_eq(o.unexpected[1].id, "xyz-d2");
    cr_assert_eq(sd_counts_get(&o.copies, 1), 1u);
    sd_observe_free(&o);
}

/* past the cap on kept unexpected ids, distinct ones are still counted
 * exactly: 200,000 distinct unexpected ids, each in 3 rows (R-04: they
 * were 5,100,000 "unique" in a 10-million-row sink) */
Test(recon, unexpected_ids_past_the_cap_are_counted_exactly) {
    sd_observe_t o = {0};
    o.nseq = 5;
    sd_counts_init(&o.copies, 5);
    char id[32];
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 200000; i++) {
            int n = snprintf(id, sizeof(id), "other-%d", i);
            sd_observe_row(&o, "abc", 3, id, (size_t)n, "w", 1);
        }
    sd_observe_flush(&o);
    cr_assert_eq(o.rows, 600000);
    cr_assert_eq(o.unexpected_rows, 600000);
    cr_assert_eq(o.unexpected_unique, 200000, "got %lld", (long long)o.unexpected_unique);
    cr_assert_leq(o.n_unexpected, 100000, "only the first ones are kept for the reports");
    sd_observe_free(&o);
}

/* contract duplicates=keep: an id sent n times must be there n times */
Test(recon, keep_duplicates_expects_one_copy_per_send) {
    hist_t h;
    hist_init(&h, 4);
    uint8_t sends[N] = {1, 2, 2, 3, 0, 0, 0, 0};
    memcpy(h.sends, sends, sizeof(sends));
    h.l.expect_sends = 1;
    h.t[0] = 1; /* as sent */
    h.t[1] = 2; /* replayed once, both copies there */
    h.t[2] = 1; /* replayed once, one copy missing: fewer copies than sent */
    h.t[3] = 4; /* sent 3 times, 4 copies: one extra */
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    cr_assert_eq(r.counts.delivered_once, 2);
    cr_assert_eq(r.counts.lost, 0, "an id that is there is not lost");
    cr_assert_eq(r.counts.missing_copies, 1);
    cr_assert_eq(r.lists[SD_B_MISSING_COPIES].seq[0], 2);
    cr_assert_eq(r.lists[SD_B_MISSING_COPIES].copies[0], 1u, "the list says how many copies did arrive");
    cr_assert_eq(r.counts.duplicated, 1);
    cr_assert_eq(r.counts.duplicate_rows, 1, "one copy beyond the three sent");
    /* and the check fails like a loss would */
    sd_recon_ctx_t ctx = {.profile = SD_PROFILE_EXACTLY_ONCE, .keep_duplicates = 1};
    sd_checks_t c;
    sd_recon_checks(&ctx, &r, &c);
    int found = 0;
    for (int i = 0; i < c.n; i++)
        if (!strcmp(c.v[i].name, "missing_copies")) { found = 1; cr_assert_not(c.v[i].pass); }
    cr_assert(found, "missing_copies is checked");
    sd_checks_free(&c);
    sd_recon_result_free(&r);
}

/* The not-caught-up rule on a hand-made case: ids past the offsets the
 * pipeline committed are not_yet_consumed, never lost; ids below them are
 * lost; a check on lost passes and nothing is blamed for the pending ones. */
Test(recon, missing_but_not_consumed_is_not_lost) {
    hist_t h;
    hist_init(&h, 6);
    uint8_t pending[N] = {0, 0, 0, 1, 1, 1, 0, 0};
    h.l.pending = pending;
    h.t[0] = 1;
    h.t[1] = 0; /* below the committed offsets and missing: lost */
    h.t[2] = 1;
    h.t[3] = 0; /* past them: not consumed yet */
    h.t[4] = 0;
    h.t[5] = 1; /* past them but already there: delivered */
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    cr_assert_eq(r.counts.lost, 1);
    cr_assert_eq(r.lists[SD_B_LOST].seq[0], 1);
    cr_assert_eq(r.counts.not_yet_consumed, 2);
    cr_assert_eq(r.lists[SD_B_NOT_YET_CONSUMED].seq[0], 3);
    cr_assert_eq(r.lists[SD_B_NOT_YET_CONSUMED].seq[1], 4);
    cr_assert_eq(r.counts.delivered_once, 3);
    cr_assert_eq(r.counts.expected_in_target,
                 r.counts.delivered_once + r.counts.lost + r.counts.not_yet_consumed + r.counts.duplicated, "every id in one bucket");
    sd_recon_ctx_t ctx = {.profile = SD_PROFILE_EXACTLY_ONCE};
    sd_checks_t c;
    sd_recon_checks(&ctx, &r, &c);
    cr_assert_eq(c.n_not_judged, 1, "the report says some loss could not be judged");
    cr_assert(strstr(c.not_judged[0], "caught up") != NULL);
    sd_checks_free(&c);
    sd_recon_result_free(&r);
    /* without the pending mask the same ids are lost */
    h.l.pending = NULL;
    memset(&r, 0, sizeof(r));
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    cr_assert_eq(r.counts.lost, 3);
    cr_assert_eq(r.counts.not_yet_consumed, 0);
    sd_recon_result_free(&r);
}

/* Events of aborted transactions: never in the target. One that is (a
 * reader that is not read_committed) is aborted_leaked, an implicit check
 * only once aborted events were sent; absent ones are no loss. */
Test(recon, aborted_transaction_events_must_not_reach_the_target) {
    hist_t h;
    hist_init(&h, 6);
    for (int i = 0; i < 4; i++) h.t[i] = 1;
    h.kind[4] = h.kind[5] = SD_KIND_ABORTED;
    h.disp[4] = h.disp[5] = SD_DISP_DROPPED;
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    cr_assert_eq(r.counts.aborted_sent, 2);
    cr_assert_eq(r.counts.aborted_leaked, 0);
    cr_assert_eq(r.counts.lost, 0, "an aborted event absent is no loss");
    sd_checks_t c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 0, NULL, 0);
    cr_assert(find_check(&c, "aborted_leaked") && find_check(&c, "aborted_leaked")->pass);
    cr_assert_eq(sd_checks_failed(&c), 0);
    sd_checks_free(&c);
    sd_recon_result_free(&r);
    h.t[5] = 1; /* read_uncommitted: one of them written */
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    cr_assert_eq(r.counts.aborted_leaked, 1);
    cr_assert_eq(r.lists[SD_B_ABORTED_LEAKED].n, 1);
    cr_assert_eq(r.lists[SD_B_ABORTED_LEAKED].seq[0], 5);
    c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 0, NULL, 0);
    cr_assert(find_check(&c, "aborted_leaked") && !find_check(&c, "aborted_leaked")->pass);
    cr_assert_eq(sd_checks_failed(&c), 1);
    sd_checks_free(&c);
    sd_recon_result_free(&r);
    /* no transactions: no aborted_leaked check at all */
    hist_init(&h, 3);
    for (int i = 0; i < 3; i++) h.t[i] = 1;
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 0, NULL, 0);
    cr_assert_null(find_check(&c, "aborted_leaked"));
    sd_checks_free(&c);
    sd_recon_result_free(&r);
}

/* one byte a counter, and still exact: past 254 the count lives in the map */
Test(recon, counts_are_exact_beyond_a_byte) {
    sd_counts_t k;
    sd_counts_init(&k, 3);
    for (int i = 0; i < 100000; i++) sd_counts_inc(&k, 1);
    for (int i = 0; i < 254; i++) sd_counts_inc(&k, 2);
    cr_assert_eq(sd_counts_get(&k, 0), 0u);
    cr_assert_eq(sd_counts_get(&k, 1), 100000u);
    cr_assert_eq(sd_counts_get(&k, 2), 254u);
    sd_counts_inc(&k, 2);
    cr_assert_eq(sd_counts_get(&k, 2), 255u);
    sd_counts_free(&k);
}

/* One byte a seq: the disposition, the kind and the sends are each read
 * back as set, past seven sends (the map) and past 255 (where the old
 * per-seq byte saturated), down again, and when a seq becomes unsent. */
Test(recon, seqs_keep_disposition_kind_and_exact_sends) {
    sd_seqs_t s = {0};
    sd_seqs_reserve(&s, 5000);
    cr_assert_geq(s.cap, 5000);
    for (int i = 0; i < 5000; i++) sd_seqs_set(&s, i, i % SD_KIND__COUNT, i % SD_DISP__COUNT);
    for (int i = 0; i < 5000; i++) {
        cr_assert_eq(sd_seqs_disp(&s, i), i % SD_DISP__COUNT, "seq %d", i);
        cr_assert_eq(sd_seqs_kind(&s, i), i % SD_KIND__COUNT, "seq %d", i);
        cr_assert_eq(sd_seqs_sends(&s, i), 0u);
    }
    for (int c = 0; c < 300; c++) sd_seqs_add_send(&s, 42, 1);
    for (int c = 0; c < 7; c++) sd_seqs_add_send(&s, 43, 1);
    sd_seqs_add_send(&s, 44, 1);
    cr_assert_eq(sd_seqs_sends(&s, 42), 300u, "exact past 255: %u", sd_seqs_sends(&s, 42));
    cr_assert_eq(sd_seqs_sends(&s, 43), 7u);
    cr_assert_eq(sd_seqs_sends(&s, 44), 1u);
    cr_assert_eq(sd_seqs_sends(&s, 45), 0u);
    for (int c = 0; c < 295; c++) sd_seqs_add_send(&s, 42, -1);
    cr_assert_eq(sd_seqs_sends(&s, 42), 5u, "back under the map: %u", sd_seqs_sends(&s, 42));
    sd_seqs_add_send(&s, 42, 1), sd_seqs_add_send(&s, 42, 1);
    cr_assert_eq(sd_seqs_sends(&s, 42), 7u, "into the map again, from the byte's count");
    sd_seqs_add_send(&s, 45, -1);
    cr_assert_eq(sd_seqs_sends(&s, 45), 0u, "no count below zero");
    cr_assert_eq(sd_seqs_kind(&s, 42), 42 % SD_KIND__COUNT, "the sends leave the kind alone");
    cr_assert_eq(sd_seqs_disp(&s, 42), 42 % SD_DISP__COUNT, "and the disposition");
    sd_seqs_unsend(&s, 42);
    cr_assert_eq(sd_seqs_disp(&s, 42), SD_RECON_UNSENT);
    cr_assert_eq(sd_seqs_kind(&s, 42), 42 % SD_KIND__COUNT, "unsent keeps the kind");
    cr_assert_eq(sd_seqs_sends(&s, 42), 7u, "and the sends");
    sd_seqs_set(&s, 46, SD_KIND_LATE, SD_RECON_UNSENT);
    cr_assert_eq(sd_seqs_disp(&s, 46), SD_RECON_UNSENT);
    sd_seqs_free(&s);
}

/* a latency of 0 ms is a figure (the row was there at the send's
 * millisecond), not "not measured"; -1 is none */
Test(recon, a_latency_of_zero_is_measured) {
    hist_t h;
    hist_init(&h, 3);
    h.t[0] = h.t[1] = h.t[2] = 1;
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    r.counts.latency_p50_ms = 0;
    sd_expect_t x[1] = {{.count = "latency_p50_ms", .op = SD_OP_LE, .value = 100}};
    sd_step_t st = {.kind = SD_STEP_EXPECT, .expect = {.v = x, .n = 1}};
    const sd_step_t *ex[1] = {&st};
    sd_checks_t c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 0, ex, 1);
    cr_assert_not(c.unmeasured, "%s", c.unmeasured_why);
    cr_assert(find_check(&c, "latency_p50_ms") && find_check(&c, "latency_p50_ms")->pass);
    sd_checks_free(&c);
    r.counts.latency_p50_ms = -1;
    c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 0, ex, 1);
    cr_assert(c.unmeasured, "no write time: not measured");
    sd_checks_free(&c);
    sd_recon_result_free(&r);
}

/* ---- the engine's late-event rule (late.h): batches 0, 1, 2, 3 of two
 * partitions; event times in seconds, a 10 s delay */

static const int64_t late_ids[4] = {0, 1, 2, 3};
static const int64_t late_ends[8] = {5, 3, /* batch 0 */ 9, 7, /* 1 */ 12, 7, /* 2 */ 15, 9 /* 3 */};

static sd_late_rule_t *late_rule(void) {
    sd_late_rule_t *lr = sd_late_rule_new(4, 2, late_ids, late_ends, 10000);
    /* batch 0 read event times up to 100 s, batch 1 up to 120 s, batch 2 up to 130 s */
    sd_late_rule_see(lr, 0, 0, 90000);
    sd_late_rule_see(lr, 1, 2, 100000);
    sd_late_rule_see(lr, 0, 5, 120000);
    sd_late_rule_see(lr, 1, 6, INT64_MIN); /* a malformed message: no time */
    sd_late_rule_see(lr, 0, 10, 130000);
    return lr;
}

Test(late, the_batch_that_read_a_message) {
    sd_late_rule_t *lr = late_rule();
    cr_assert_eq(sd_late_rule_batch_of(lr, 0, 4), 0);
    cr_assert_eq(sd_late_rule_batch_of(lr, 0, 5), 1);
    cr_assert_eq(sd_late_rule_batch_of(lr, 1, 7), 3, "batch 2 read nothing of partition 1");
    cr_assert_eq(sd_late_rule_batch_of(lr, 1, 9), -1, "no batch read that far");
    cr_assert_eq(sd_late_rule_batch_of(lr, 2, 0), -2, "no such partition");
    sd_late_rule_free(lr);
}

Test(late, held_to_the_watermark_of_two_batches_before) {
    sd_late_rule_t *lr = late_rule();
    int64_t batch = -9, wm = 0;
    /* read by batch 1: its late rows are held to batch 0's watermark, and
     * batch 0 ran with none: maybe-late however old */
    cr_assert_eq(sd_late_rule_judge(lr, 0, 6, 1000, &batch, &wm), 0);
    cr_assert_eq(batch, 1);
    cr_assert_eq(wm, INT64_MIN);
    /* batch 2: batch 0's newest (100 s) minus 10 s = 90 s */
    cr_assert_eq(sd_late_rule_judge(lr, 0, 10, 90000, &batch, &wm), 1, "at the watermark: late");
    cr_assert_eq(batch, 2);
    cr_assert_eq(wm, 90000);
    cr_assert_eq(sd_late_rule_judge(lr, 0, 10, 90001, &batch, &wm), 0, "past it: maybe-late");
    /* batch 3: batches 0 and 1 up to 120 s: 110 s */
    cr_assert_eq(sd_late_rule_judge(lr, 1, 8, 100000, &batch, &wm), 1);
    cr_assert_eq(wm, 110000);
    cr_assert_eq(sd_late_rule_judge(lr, 1, 8, 115000, &batch, &wm), 0);
    cr_assert_eq(sd_late_rule_judge(lr, 1, 8, INT64_MIN, &batch, &wm), -1, "no event time: the harness's rule");
    cr_assert_eq(sd_late_rule_judge(lr, 1, 9, 1000, &batch, &wm), -2, "read by no batch");
    sd_late_rule_free(lr);
}

Test(late, a_gap_or_an_unknown_end_cannot_be_told) {
    /* batch 1 cleaned away, batch 3's ends unknown */
    static const int64_t ids[3] = {0, 2, 3};
    static const int64_t ends[6] = {5, 3, 12, 7, -1, -1};
    sd_late_rule_t *lr = sd_late_rule_new(3, 2, ids, ends, 10000);
    int64_t batch, wm;
    cr_assert_eq(sd_late_rule_batch_of(lr, 0, 2), 0);
    cr_assert_eq(sd_late_rule_batch_of(lr, 0, 6), -2, "read by 1 or 2: 1 is gone");
    cr_assert_eq(sd_late_rule_judge(lr, 0, 6, 1000, &batch, &wm), -1);
    cr_assert_eq(sd_late_rule_batch_of(lr, 0, 13), -2, "an unknown end");
    /* a list that starts past batch 0: its first batch's start is unknown */
    static const int64_t ids2[2] = {7, 8};
    static const int64_t ends2[4] = {5, 3, 9, 7};
    sd_late_rule_t *lr2 = sd_late_rule_new(2, 2, ids2, ends2, 10000);
    cr_assert_eq(sd_late_rule_batch_of(lr2, 0, 2), -2);
    cr_assert_eq(sd_late_rule_batch_of(lr2, 0, 6), 1);
    sd_late_rule_free(lr2);
    sd_late_rule_free(lr);
}

Test(late, the_search_agrees_with_a_scan) {
    /* 300 batches of three partitions, ends growing by 0 to 4 each batch:
     * every offset's batch, by the binary search, is the first batch whose
     * end is past it */
    enum { NB = 300, NP = 3 };
    int64_t *ids = calloc(NB, sizeof(int64_t)), *ends = calloc(NB * NP, sizeof(int64_t));
    uint64_t x = 7;
    for (int i = 0; i < NB; i++) {
        ids[i] = i;
        for (int p = 0; p < NP; p++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            ends[i * NP + p] = (i ? ends[(i - 1) * NP + p] : 0) + (int64_t)(x >> 61) % 5;
        }
    }
    sd_late_rule_t *lr = sd_late_rule_new(NB, NP, ids, ends, 1000);
    for (int p = 0; p < NP; p++)
        for (int64_t o = 0; o <= ends[(NB - 1) * NP + p]; o++) {
            int want = -1;
            for (int i = 0; i < NB && want < 0; i++)
                if (ends[i * NP + p] > o) want = i;
            cr_assert_eq(sd_late_rule_batch_of(lr, p, o), want, "partition %d offset %lld", p, (long long)o);
        }
    sd_late_rule_free(lr);
    free(ids);
    free(ends);
}

/* ---- each a mutant the suite once let live */

Test(recon, a_count_name_that_is_none_is_not_found) {
    sd_recon_counts_t c;
    memset(&c, 0, sizeof(c));
    int found = 7;
    cr_expect_eq(sd_recon_count_get(&c, "no_such_count", &found), -1);
    cr_expect_eq(found, 0);
    c.lost = 3;
    cr_expect_eq(sd_recon_count_get(&c, "lost", &found), 3);
    cr_expect_eq(found, 1);
}

Test(recon, update_mode_and_latest_may_write_a_group_before_it_is_final) {
    /* emitted_early is the append and join models' rule only: a window
     * rewritten in update mode, a latest row rewritten, is no fault */
    sd_recon_result_t r;
    memset(&r, 0, sizeof(r));
    r.counts.emitted_early = 3;
    sd_judged_t models[] = {SD_JUDGE_WINDOWS_UPDATE, SD_JUDGE_LATEST, SD_JUDGE_WINDOWS_APPEND, SD_JUDGE_JOIN};
    for (int m = 0; m < 4; m++) {
        sd_recon_ctx_t ctx = {.profile = SD_PROFILE_EXACTLY_ONCE, .model = models[m], .fmt_id = fmt_id};
        sd_checks_t c;
        sd_recon_checks(&ctx, &r, &c);
        const sd_check_t *k = find_check(&c, "emitted_early");
        if (m < 2) cr_expect(k == NULL, "model %d: no emitted_early check", m);
        else cr_expect(k != NULL && !k->pass, "model %d: emitted_early fails", m);
        sd_checks_free(&c);
    }
}

Test(recon, unjudgeable_ids_have_no_copy_and_leaked_copies_are_counted) {
    hist_t h;
    hist_init(&h, 4);
    h.t[0] = h.t[1] = 1;
    h.trimmed[2] = 1; /* missing, deleted by the broker: no copy */
    h.t[3] = 1;
    h.disp[4] = SD_DISP_DROPPED;
    h.kind[4] = SD_KIND_LATE;
    h.t[4] = 2; /* a late event leaked twice */
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    cr_assert_eq(r.lists[SD_B_UNJUDGEABLE].n, 1);
    cr_expect_eq(r.lists[SD_B_UNJUDGEABLE].copies[0], 0, "an unjudgeable id has no copy in the target");
    sd_checks_t c = run_checks(&r, SD_PROFILE_EXACTLY_ONCE, 0, NULL, 0);
    const sd_check_t *k = find_check(&c, "late_leaked");
    cr_assert(k && !k->pass);
    cr_expect(strstr(k->detail, "t-4 x2") != NULL, "a leak's copies are named: %s", k->detail);
    sd_checks_free(&c);
    sd_recon_result_free(&r);
}

Test(recon, a_group_written_twice_is_a_fault_of_the_written_once_models_and_latest) {
    /* emitted_twice: append windows, joins and latest hold each group once
     * (unless at-least-once); update mode rewrites a window by design */
    sd_recon_result_t r;
    memset(&r, 0, sizeof(r));
    r.counts.emitted_twice = 2;
    sd_judged_t models[] = {SD_JUDGE_WINDOWS_UPDATE, SD_JUDGE_LATEST, SD_JUDGE_WINDOWS_APPEND, SD_JUDGE_JOIN};
    for (int m = 0; m < 4; m++) {
        for (int alo = 0; alo < 2; alo++) {
            sd_recon_ctx_t ctx = {.profile = alo ? SD_PROFILE_AT_LEAST_ONCE : SD_PROFILE_EXACTLY_ONCE, .model = models[m], .fmt_id = fmt_id};
            sd_checks_t c;
            sd_recon_checks(&ctx, &r, &c);
            const sd_check_t *k = find_check(&c, "emitted_twice");
            if (m == 0 || alo) cr_expect(k == NULL, "model %d, at-least-once %d: no emitted_twice check", m, alo);
            else cr_expect(k != NULL && !k->pass, "model %d: emitted_twice fails", m);
            sd_checks_free(&c);
        }
    }
}

Test(recon, events_kafka_lost_after_acknowledging_them_are_counted_apart) {
    /* 5 events; Kafka lost 1 and 3 after acknowledging them (their partition
     * cut back): acked_lost, never lost, whatever the target holds */
    hist_t h;
    hist_init(&h, 5);
    h.t[0] = h.t[2] = h.t[4] = 1;
    uint8_t vanished[N] = {0};
    vanished[1] = vanished[3] = 1;
    h.l.vanished = vanished;
    sd_recon_result_t r = {0};
    sd_recon_classify(L(&h), T(&h), NULL, rows_of(&h), 0, 0, &r);
    cr_expect_eq(r.counts.acked_lost, 2);
    cr_expect_eq(r.counts.lost, 0);
    cr_expect_eq(r.lists[SD_B_ACKED_LOST].n, 2);
    sd_recon_result_free(&r);
}
