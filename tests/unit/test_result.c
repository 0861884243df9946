/* test_result.c - the windows result model on hand-made events and sink
 * rows where the answer is known: a correct table, a lost event, a late
 * event counted, a replay counted twice, a window written twice or before
 * it was final, open windows pending, the watermark boundary, sliding
 * windows, update mode, and the sink's start column in ISO-8601. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "result.h"

#define MIN 60000

static sd_result_event_t ev(int64_t seq, int64_t t, const char *key, double v) {
    return (sd_result_event_t){.seq = seq, .t_ms = t, .keys = key, .value = v, .has_value = 1, .copies = 1, .sent = 1};
}

static sd_result_row_t row(int64_t start, const char *key, double count, double sum) {
    sd_result_row_t r = {.start_ms = start, .keys = key};
    r.v[0] = count;
    r.v[1] = sum;
    r.has[0] = r.has[1] = 1;
    return r;
}

static sd_result_conf_t conf(int output, int64_t final_wm) {
    return (sd_result_conf_t){.size_ms = MIN, .slide_ms = MIN, .aggs = SD_AGG_COUNT | SD_AGG_SUM, .output = output,
                              .final_wm = final_wm, .key_names = "location"};
}

/* events in windows 0 and 1 of A, window 0 of B; window 3 of A open at the end */
static int base(sd_result_event_t *e) {
    int n = 0;
    e[n] = ev(n, 1000, "A", 10), n++;
    e[n] = ev(n, 2000, "A", 20), n++;
    e[n] = ev(n, 3000, "B", 5), n++;
    e[n] = ev(n, MIN + 1, "A", 7), n++;
    e[n] = ev(n, 3 * MIN + 5, "A", 1), n++;
    return n;
}

Test(result, correct_append_table_passes_with_the_open_window_pending) {
    sd_result_event_t e[8];
    int n = base(e);
    sd_result_row_t rows[] = {row(0, "A", 2, 30), row(0, "B", 1, 5), row(MIN, "A", 1, 7)};
    sd_result_t r;
    sd_result_conf_t c = conf(SD_OUT_APPEND, 2 * MIN + 5);
    sd_result_windows(&c, e, n, rows, 3, &r);
    cr_expect_eq(r.groups_expected, 3, "the open window is not held yet: pending, as a join's null rows");
    cr_expect_eq(r.n[SD_G_CORRECT], 3);
    cr_expect_eq(r.n[SD_G_PENDING], 1, "window 3 is open: pending, not missing");
    cr_expect_eq(r.n[SD_G_MISSING], 0);
    cr_expect_eq(r.n[SD_G_WRONG_VALUE] + r.n[SD_G_UNEXPECTED] + r.n[SD_G_TWICE] + r.n[SD_G_EARLY], 0);
    sd_result_free(&r);
}

Test(result, lost_event_is_a_wrong_value_naming_the_window_events) {
    sd_result_event_t e[8];
    int n = base(e);
    sd_result_row_t rows[] = {row(0, "A", 1, 10), row(0, "B", 1, 5), row(MIN, "A", 1, 7)};
    rows[0].writer = "incarnation 2 batch 4";
    sd_result_t r;
    sd_result_conf_t c = conf(SD_OUT_APPEND, 2 * MIN + 5);
    sd_result_windows(&c, e, n, rows, 3, &r);
    cr_expect_eq(r.n[SD_G_WRONG_VALUE], 1);
    cr_assert_eq(r.nanomalies, 2); /* the wrong one and the pending one */
    const char *d = r.anomalies[0].detail;
    cr_expect(strstr(d, "(row by incarnation 2 batch 4)") != NULL, "the wrong row's writer named: %s", d);
    cr_expect(strstr(d, "count 1, expected 2") != NULL, "%s", d);
    cr_expect(strstr(d, "sum 10, expected 30") != NULL, "%s", d);
    cr_expect(strstr(d, "location=A") != NULL, "%s", d);
    cr_expect(strstr(d, "#1") != NULL, "the window's events are listed: %s", d);
    sd_result_free(&r);
}

/* An event sent exactly on the watermark's cut-off may be taken as late
 * (Spark) or counted (refpipe, Flink's windows): its window is right with
 * it or without it, and wrong with anything else; one 1 ms inside the
 * cut-off must count. A window whose only event lies on the cut-off may
 * have no row. */
Test(result, an_event_on_the_watermarks_cut_off_may_count_or_not) {
    sd_result_event_t e[8];
    int n = base(e);
    e[1].wm_edge = 1; /* A's second event in window 0, on the cut-off */
    e[2].wm_edge = 1; /* B's only event */
    e[3].wm_edge = 2; /* A's event in window 1, 1 ms inside */
    sd_result_conf_t c = conf(SD_OUT_APPEND, 2 * MIN + 5);
    sd_result_t r;
    sd_result_row_t with[] = {row(0, "A", 2, 30), row(0, "B", 1, 5), row(MIN, "A", 1, 7)};
    sd_result_windows(&c, e, n, with, 3, &r);
    cr_expect_eq(r.n[SD_G_CORRECT], 3, "counted: right");
    cr_expect_eq(r.n[SD_G_WRONG_VALUE] + r.n[SD_G_MISSING], 0);
    sd_result_free(&r);
    sd_result_row_t without[] = {row(0, "A", 1, 10), row(MIN, "A", 1, 7)};
    sd_result_windows(&c, e, n, without, 2, &r);
    cr_expect_eq(r.n[SD_G_CORRECT], 2, "taken as late: right too");
    cr_expect_eq(r.n[SD_G_WRONG_VALUE] + r.n[SD_G_MISSING], 0, "B's window with its only event on the cut-off may be absent");
    sd_result_free(&r);
    sd_result_row_t wrong[] = {row(0, "A", 3, 40), row(0, "B", 1, 5), row(MIN, "A", 1, 7)};
    sd_result_windows(&c, e, n, wrong, 3, &r);
    cr_expect_eq(r.n[SD_G_WRONG_VALUE], 1, "neither with it nor without it: wrong");
    cr_assert(r.nanomalies >= 1);
    cr_expect(strstr(r.anomalies[0].detail, "1 of its events were sent exactly on the watermark's cut-off") != NULL, "%s",
              r.anomalies[0].detail);
    sd_result_free(&r);
    sd_result_row_t inside_dropped[] = {row(0, "A", 2, 30), row(0, "B", 1, 5)};
    sd_result_windows(&c, e, n, inside_dropped, 2, &r);
    cr_expect_eq(r.n[SD_G_MISSING], 1, "the event 1 ms inside must count: its window is missing");
    sd_result_free(&r);
}

Test(result, late_event_counted_is_traced_to_it) {
    sd_result_event_t e[8];
    int n = base(e);
    e[n] = ev(n, 4000, "A", 100), e[n].copies = 0, e[n].late = 1, n++;
    sd_result_row_t rows[] = {row(0, "A", 3, 130), row(0, "B", 1, 5), row(MIN, "A", 1, 7)};
    sd_result_t r;
    sd_result_conf_t c = conf(SD_OUT_APPEND, 2 * MIN + 5);
    sd_result_windows(&c, e, n, rows, 3, &r);
    cr_expect_eq(r.n[SD_G_WRONG_VALUE], 1);
    cr_expect(strstr(r.anomalies[0].detail, "late events in it") != NULL, "%s", r.anomalies[0].detail);
    cr_expect(strstr(r.anomalies[0].detail, "#5") != NULL, "%s", r.anomalies[0].detail);
    sd_result_free(&r);
}

Test(result, late_event_alone_in_a_window_is_an_unexpected_group) {
    sd_result_event_t e[8];
    int n = base(e);
    e[n] = ev(n, -MIN + 4, "C", 1), e[n].copies = 0, e[n].late = 1, n++;
    sd_result_row_t rows[] = {row(0, "A", 2, 30), row(0, "B", 1, 5), row(MIN, "A", 1, 7), row(-MIN, "C", 1, 1)};
    sd_result_t r;
    sd_result_conf_t c = conf(SD_OUT_APPEND, 2 * MIN + 5);
    sd_result_windows(&c, e, n, rows, 4, &r);
    cr_expect_eq(r.n[SD_G_UNEXPECTED], 1);
    cr_expect_eq(r.n[SD_G_CORRECT], 3);
    const char *said = NULL;
    for (int64_t i = 0; i < r.nanomalies; i++)
        if (r.anomalies[i].flags & 1u << SD_G_UNEXPECTED) said = r.anomalies[i].detail;
    cr_assert_not_null(said);
    cr_expect(strstr(said, "1 row for a group no counted event belongs to; late events in it, dropped by the contract (1): "),
              "the late event is named: %s", said);
    sd_result_free(&r);
}

Test(result, replay_counted_twice_is_wrong_unless_duplicates_keep) {
    sd_result_event_t e[8];
    int n = base(e);
    e[0].sent = 2; /* replayed; the contract drops duplicates: it counts once */
    sd_result_row_t rows[] = {row(0, "A", 3, 40), row(0, "B", 1, 5), row(MIN, "A", 1, 7)};
    sd_result_t r;
    sd_result_conf_t c = conf(SD_OUT_APPEND, 2 * MIN + 5);
    sd_result_windows(&c, e, n, rows, 3, &r);
    cr_expect_eq(r.n[SD_G_WRONG_VALUE], 1);
    cr_expect(strstr(r.anomalies[0].detail, "sent more than once") != NULL, "%s", r.anomalies[0].detail);
    sd_result_free(&r);
    e[0].copies = 2; /* duplicates=keep: both copies count */
    sd_result_windows(&c, e, n, rows, 3, &r);
    cr_expect_eq(r.n[SD_G_WRONG_VALUE], 0);
    cr_expect_eq(r.n[SD_G_CORRECT], 3);
    sd_result_free(&r);
}

Test(result, append_written_twice_and_early) {
    sd_result_event_t e[8];
    int n = base(e);
    /* window 0 of A first written with a partial value, then the final one;
     * window 3 of A written though the watermark has not closed it */
    sd_result_row_t rows[] = {row(0, "A", 1, 10), row(0, "B", 1, 5), row(MIN, "A", 1, 7), row(0, "A", 2, 30),
                              row(3 * MIN, "A", 1, 1)};
    sd_result_t r;
    sd_result_conf_t c = conf(SD_OUT_APPEND, 2 * MIN + 5);
    sd_result_windows(&c, e, n, rows, 5, &r);
    cr_expect_eq(r.n[SD_G_TWICE], 1);
    cr_expect_eq(r.n[SD_G_WRONG_VALUE], 0, "the last row is the final value");
    cr_expect_eq(r.n[SD_G_EARLY], 1);
    cr_expect_eq(r.n[SD_G_CORRECT], 2);
    sd_result_free(&r);
    /* update mode: rewrites are how it works; the open window is judged too */
    c.output = SD_OUT_UPDATE;
    sd_result_windows(&c, e, n, rows, 5, &r);
    cr_expect_eq(r.n[SD_G_TWICE] + r.n[SD_G_EARLY] + r.n[SD_G_PENDING], 0);
    cr_expect_eq(r.n[SD_G_CORRECT], 4);
    sd_result_free(&r);
}

Test(result, missing_closed_window_and_the_boundary) {
    sd_result_event_t e[8];
    int n = base(e);
    sd_result_row_t rows[] = {row(0, "A", 2, 30), row(0, "B", 1, 5)};
    sd_result_t r;
    /* window 1 of A ends at 2 min; the final watermark exactly there: pending */
    sd_result_conf_t c = conf(SD_OUT_APPEND, 2 * MIN);
    sd_result_windows(&c, e, n, rows, 2, &r);
    cr_expect_eq(r.n[SD_G_MISSING], 0);
    cr_expect_eq(r.n[SD_G_PENDING], 2);
    sd_result_free(&r);
    /* one millisecond later it is closed, and missing */
    c.final_wm = 2 * MIN + 1;
    sd_result_windows(&c, e, n, rows, 2, &r);
    cr_expect_eq(r.n[SD_G_MISSING], 1);
    cr_expect_eq(r.n[SD_G_PENDING], 1);
    sd_result_free(&r);
    /* update mode has no pending: every group must be there */
    c.output = SD_OUT_UPDATE;
    sd_result_windows(&c, e, n, rows, 2, &r);
    cr_expect_eq(r.n[SD_G_MISSING], 2);
    sd_result_free(&r);
}

/* An engine that keeps a watermark per partition (Flink) closes windows at
 * the oldest partition's newest event time: a window ending in the gap
 * between that watermark and the final one may be unwritten (pending), and
 * when written it is judged like any closed window. */
Test(result, a_per_partition_watermark_leaves_the_windows_in_its_gap_pending) {
    sd_result_event_t e[8];
    int n = base(e);
    sd_result_row_t rows[] = {row(0, "A", 2, 30), row(0, "B", 1, 5)};
    sd_result_t r;
    /* window 1 of A ends at 2 min, closed under the final watermark */
    sd_result_conf_t c = conf(SD_OUT_APPEND, 2 * MIN + 30000);
    sd_result_windows(&c, e, n, rows, 2, &r);
    cr_expect_eq(r.n[SD_G_MISSING], 1, "one watermark per source: window 1 of A is owed");
    sd_result_free(&r);
    /* the oldest partition 40 s behind: its watermark has not reached 2 min */
    c.final_wm_gap = 40000;
    sd_result_windows(&c, e, n, rows, 2, &r);
    cr_expect_eq(r.n[SD_G_MISSING], 0);
    cr_expect_eq(r.n[SD_G_PENDING], 2, "window 1 of A in the gap, window 3 open");
    cr_expect_eq(r.groups_expected, 2);
    cr_assert(r.nanomalies >= 1);
    int said = 0;
    for (int64_t i = 0; i < r.nanomalies; i++) said |= strstr(r.anomalies[i].detail, "one per partition") != NULL;
    cr_expect(said, "the pending window says why");
    sd_result_free(&r);
    /* written in the gap: judged, a wrong value is still wrong */
    sd_result_row_t wrong[] = {row(0, "A", 2, 30), row(0, "B", 1, 5), row(MIN, "A", 2, 14)};
    sd_result_windows(&c, e, n, wrong, 3, &r);
    cr_expect_eq(r.n[SD_G_WRONG_VALUE], 1);
    cr_expect_eq(r.n[SD_G_EARLY], 0, "the final watermark had closed it");
    sd_result_free(&r);
    /* 20 s behind: its watermark passed 2 min too, the window is owed */
    c.final_wm_gap = 20000;
    sd_result_windows(&c, e, n, rows, 2, &r);
    cr_expect_eq(r.n[SD_G_MISSING], 1);
    sd_result_free(&r);
}

/* The rows judged under c: how many fell in bucket. */
static int64_t judged(const sd_result_conf_t *c, const sd_result_event_t *e, int n, const sd_result_row_t *rows, int nrows, int bucket) {
    sd_result_t r;
    sd_result_windows(c, e, n, rows, nrows, &r);
    int64_t k = r.n[bucket];
    sd_result_free(&r);
    return k;
}

Test(result, a_task_clock_leaves_a_key_behind_the_newest_pending_and_judges_the_others) {
    sd_result_event_t e[8];
    int n = base(e);
    /* B's window written nowhere, A's first window missing too */
    sd_result_row_t rows[] = {row(MIN, "A", 1, 7)};
    sd_result_t r;
    sd_result_conf_t c = conf(SD_OUT_APPEND, 2 * MIN + 30005);
    cr_expect_eq(judged(&c, e, n, rows, 1, SD_G_MISSING), 2, "one clock for all: both windows at 0 are owed");
    /* Kafka Streams: B's newest scan is at 3 s, so B's task may not have
     * passed 1 min + the delay yet; A's newest is the newest of all, so its
     * task has, whatever else it owns */
    c.task_clock = 1;
    sd_result_windows(&c, e, n, rows, 1, &r);
    cr_expect_eq(r.n[SD_G_MISSING], 1, "A's window at 0 is still owed");
    cr_expect_eq(r.n[SD_G_PENDING], 2, "B's window behind its task's clock, A's at 3 min open");
    int said = 0;
    for (int64_t i = 0; i < r.nanomalies; i++) said |= strstr(r.anomalies[i].detail, "one per task") != NULL;
    cr_expect(said, "the pending window says which rule left it open");
    sd_result_free(&r);
    /* written: judged like any closed window, a wrong value is wrong */
    sd_result_row_t wrong[] = {row(0, "A", 2, 30), row(0, "B", 2, 5), row(MIN, "A", 1, 7)};
    cr_expect_eq(judged(&c, e, n, wrong, 3, SD_G_WRONG_VALUE), 1);
    cr_expect_eq(judged(&c, e, n, wrong, 3, SD_G_CORRECT), 2);
    /* a count too low: the detail names the rule that loses records */
    sd_result_row_t low[] = {row(0, "A", 1, 10), row(0, "B", 1, 5), row(MIN, "A", 1, 7)};
    sd_result_windows(&c, e, n, low, 3, &r);
    cr_assert_eq(r.n[SD_G_WRONG_VALUE], 1);
    cr_expect(strstr(r.anomalies[0].detail, "grace period covers the lag") != NULL, "%s", r.anomalies[0].detail);
    sd_result_free(&r);
}

Test(result, under_a_task_clock_an_event_sent_just_inside_the_cut_off_may_be_dropped) {
    sd_result_event_t e[8];
    int n = base(e);
    e[1].wm_edge = 2; /* A at 2 s, sent 1 ms inside the watermark's cut-off */
    /* A's window at 0 written without it */
    sd_result_row_t rows[] = {row(0, "A", 1, 10), row(0, "B", 1, 5), row(MIN, "A", 1, 7)};
    sd_result_conf_t c = conf(SD_OUT_APPEND, 2 * MIN + 5);
    cr_expect_eq(judged(&c, e, n, rows, 3, SD_G_WRONG_VALUE), 1, "one clock for all: an event inside the cut-off must count");
    c.task_clock = 1;
    cr_expect_eq(judged(&c, e, n, rows, 3, SD_G_WRONG_VALUE), 0, "a task may have read newer scans first and closed the window");
    cr_expect_eq(judged(&c, e, n, rows, 3, SD_G_CORRECT), 3);
    /* with it, right too; and an event that is no edge still must count */
    sd_result_row_t with[] = {row(0, "A", 2, 30), row(0, "B", 1, 5), row(MIN, "A", 1, 7)};
    cr_expect_eq(judged(&c, e, n, with, 3, SD_G_CORRECT), 3);
    /* two of them in one window, one dropped (read at different moments) */
    e[0].wm_edge = 1;
    sd_result_row_t one[] = {row(0, "A", 1, 10), row(0, "B", 1, 5), row(MIN, "A", 1, 7)};
    cr_expect_eq(judged(&c, e, n, one, 3, SD_G_CORRECT), 3, "either of the two may be the one dropped");
    sd_result_row_t other[] = {row(0, "A", 1, 20), row(0, "B", 1, 5), row(MIN, "A", 1, 7)};
    cr_expect_eq(judged(&c, e, n, other, 3, SD_G_CORRECT), 3);
    sd_result_row_t neither[] = {row(0, "A", 1, 25), row(0, "B", 1, 5), row(MIN, "A", 1, 7)};
    cr_expect_eq(judged(&c, e, n, neither, 3, SD_G_WRONG_VALUE), 1, "a sum no subset gives");
    sd_result_row_t short_b[] = {row(0, "A", 2, 30), row(0, "B", 0, 0), row(MIN, "A", 1, 7)};
    cr_expect_eq(judged(&c, e, n, short_b, 3, SD_G_WRONG_VALUE), 1);
}

Test(result, sliding_windows_count_an_event_in_each_window) {
    sd_result_event_t e[2] = {ev(0, 90000, "", 1), ev(1, 150000, "", 1)};
    sd_result_conf_t c = {.size_ms = 2 * MIN, .slide_ms = MIN, .aggs = SD_AGG_COUNT, .output = SD_OUT_UPDATE, .final_wm = INT64_MIN};
    /* windows [0,2m) holds 90 s; [1m,3m) holds both; [2m,4m) holds 150 s */
    sd_result_row_t rows[] = {row(0, "", 1, 0), row(MIN, "", 2, 0), row(2 * MIN, "", 1, 0)};
    sd_result_t r;
    sd_result_windows(&c, e, 2, rows, 3, &r);
    cr_expect_eq(r.groups_expected, 3);
    cr_expect_eq(r.n[SD_G_CORRECT], 3);
    sd_result_free(&r);
}

Test(result, aggregates_and_start_parsing) {
    cr_expect_eq(sd_result_aggs("count,sum,avg"), SD_AGG_COUNT | SD_AGG_SUM | SD_AGG_AVG);
    cr_expect_eq(sd_result_aggs("count,median"), -1);
    int64_t t = 0;
    cr_expect_eq(sd_result_parse_start("60000", 5, &t), 0);
    cr_expect_eq(t, 60000);
    cr_expect_eq(sd_result_parse_start("2026-01-01T08:01:00.000Z", 24, &t), 0);
    cr_expect_eq(t, 1767254460000LL);
    cr_expect_eq(sd_result_parse_start("2026-01-01 08:01:00+00:00", 25, &t), 0);
    cr_expect_eq(t, 1767254460000LL);
    cr_expect_neq(sd_result_parse_start("soon", 4, &t), 0);
    cr_expect_neq(sd_result_parse_start(NULL, 0, &t), 0);
    /* min, max, avg */
    sd_result_event_t e[3] = {ev(0, 1, "", 4), ev(1, 2, "", 1), ev(2, 3, "", 10)}; /* neither the first nor the last is the min */
    sd_result_row_t rw = {.start_ms = 0, .keys = ""};
    rw.v[2] = 1, rw.v[3] = 10, rw.v[4] = 5, rw.has[2] = rw.has[3] = rw.has[4] = 1;
    sd_result_conf_t c = {.size_ms = MIN, .slide_ms = MIN, .aggs = SD_AGG_MIN | SD_AGG_MAX | SD_AGG_AVG, .output = SD_OUT_UPDATE,
                          .final_wm = INT64_MIN};
    sd_result_t r;
    sd_result_windows(&c, e, 3, &rw, 1, &r);
    cr_expect_eq(r.n[SD_G_CORRECT], 1);
    sd_result_free(&r);
    rw.v[4] = 5.5;
    sd_result_windows(&c, e, 3, &rw, 1, &r);
    cr_expect_eq(r.n[SD_G_WRONG_VALUE], 1);
    cr_assert_eq(r.nanomalies, 1);
    cr_expect_null(strstr(r.anomalies[0].detail, "on its edges"), "no event on the window's edges: %s", r.anomalies[0].detail);
    sd_result_free(&r);
}

/* latest: events of two keys, fields "loc\x1fscan" */
static sd_result_event_t lev(int64_t seq, int64_t rank, const char *key, const char *fields) {
    sd_result_event_t e = ev(seq, rank, key, 0);
    e.rank = rank;
    e.fields = fields;
    return e;
}

static sd_result_row_t lrow(const char *key, const char *fields) {
    return (sd_result_row_t){.keys = key, .fields = fields};
}

Test(result, latest_holds_the_newest_event_of_each_key) {
    sd_result_event_t e[] = {lev(0, 10, "P1", "AMS\x1f" "sorted"), lev(1, 30, "P1", "BER\x1f" "loaded"), lev(2, 20, "P1", "CDG\x1f" "in"),
                             lev(3, 5, "P2", "DUB\x1f" "12345")};
    sd_result_conf_t c = {.key_names = "parcel_id", .field_names = "location,scan"};
    sd_result_row_t ok[] = {lrow("P1", "BER\x1f" "loaded"), lrow("P2", "DUB\x1f" "12345.0")};
    sd_result_t r;
    sd_result_latest(&c, e, 4, ok, 2, &r);
    cr_expect_eq(r.groups_expected, 2);
    cr_expect_eq(r.n[SD_G_CORRECT], 2, "numbers compare as numbers");
    sd_result_free(&r);
    /* the row holds an older event's values: wrong, and that event named */
    sd_result_row_t stale[] = {lrow("P1", "CDG\x1f" "in"), lrow("P2", "DUB\x1f" "12345")};
    sd_result_latest(&c, e, 4, stale, 2, &r);
    cr_expect_eq(r.n[SD_G_WRONG_VALUE], 1);
    cr_assert_eq(r.nanomalies, 1);
    cr_expect(strstr(r.anomalies[0].detail, "expected location=BER scan=loaded (from #1") != NULL, "%s", r.anomalies[0].detail);
    cr_expect(strstr(r.anomalies[0].detail, "the values of #2, an older event") != NULL, "%s", r.anomalies[0].detail);
    sd_result_free(&r);
    /* a missing key, an unexpected key, two rows for one key */
    sd_result_row_t odd[] = {lrow("P1", "BER\x1f" "loaded"), lrow("P1", "BER\x1f" "loaded"), lrow("P9", "x\x1fy")};
    sd_result_latest(&c, e, 4, odd, 3, &r);
    cr_expect_eq(r.n[SD_G_MISSING], 1);
    cr_expect_eq(r.n[SD_G_UNEXPECTED], 1);
    cr_expect_eq(r.n[SD_G_TWICE], 1);
    sd_result_free(&r);
}

Test(result, latest_ignores_events_the_contract_does_not_count) {
    /* the newest event of P1 is late (dropped): the one before it is expected */
    sd_result_event_t e[] = {lev(0, 10, "P1", "AMS\x1fok"), lev(1, 30, "P1", "BER\x1flate")};
    e[1].copies = 0;
    e[1].late = 1;
    sd_result_conf_t c = {.key_names = "parcel_id", .field_names = "location,scan"};
    sd_result_row_t good = lrow("P1", "AMS\x1fok"), leaked = lrow("P1", "BER\x1flate");
    sd_result_t r;
    sd_result_latest(&c, e, 2, &good, 1, &r);
    cr_expect_eq(r.n[SD_G_CORRECT], 1);
    sd_result_free(&r);
    sd_result_latest(&c, e, 2, &leaked, 1, &r);
    cr_expect_eq(r.n[SD_G_WRONG_VALUE], 1);
    cr_expect(strstr(r.anomalies[0].detail, "a late event the contract drops") != NULL, "%s", r.anomalies[0].detail);
    sd_result_free(&r);
}

/* ---- the bounded-state rule ---- */

static void state_series(int64_t n, int64_t per_batch, int64_t (*level)(int64_t i, int64_t read), int64_t *read, int64_t *state) {
    for (int64_t i = 0; i < n; i++) {
        read[i] = (i + 1) * per_batch;
        state[i] = level(i, read[i]);
    }
}
static int64_t level_flat(int64_t i, int64_t read) { (void)read; return i < 3 ? 20 * (i + 1) : 60; }
static int64_t level_all(int64_t i, int64_t read) { (void)i; return read; }
static int64_t level_sawtooth(int64_t i, int64_t read) { (void)read; return 40 + (i % 5) * 10; }
static int64_t level_slow(int64_t i, int64_t read) { (void)i; return 60 + read / 20; }   /* 5% of what is read */
static int64_t level_leak(int64_t i, int64_t read) { (void)i; return 60 + read / 5; }    /* 20% */

Test(result, state_rule_level_state_is_bounded) {
    int64_t read[20], state[20];
    sd_state_rule_t r;
    state_series(20, 50, level_flat, read, state);
    sd_result_state_rule(read, state, 20, &r);
    cr_assert(r.judged && !r.unbounded);
    cr_assert_eq(r.peak, 60);
    cr_assert_eq(r.growth, 0);
    state_series(20, 50, level_sawtooth, read, state);   /* evicting as it goes */
    sd_result_state_rule(read, state, 20, &r);
    cr_assert(r.judged && !r.unbounded);
    state_series(20, 50, level_slow, read, state);       /* 5% of the reads: under the 10% line */
    sd_result_state_rule(read, state, 20, &r);
    cr_assert(r.judged && !r.unbounded, "growth %lld over %lld", (long long)r.growth, (long long)r.read_after);
}

Test(result, state_rule_state_that_keeps_every_row_or_a_share_is_unbounded) {
    int64_t read[20], state[20];
    sd_state_rule_t r;
    state_series(20, 50, level_all, read, state);
    sd_result_state_rule(read, state, 20, &r);
    cr_assert(r.judged && r.unbounded);
    cr_assert_eq(r.half, 500);    /* the first batch with half of 1,000 read */
    cr_assert_eq(r.final, 1000);
    cr_assert_eq(r.growth, 500);
    cr_assert_eq(r.read_after, 500);
    state_series(20, 50, level_leak, read, state);
    sd_result_state_rule(read, state, 20, &r);
    cr_assert(r.judged && r.unbounded);
}

Test(result, state_rule_needs_four_batches_and_a_hundred_rows) {
    int64_t read[20], state[20];
    sd_state_rule_t r;
    state_series(3, 100, level_all, read, state);
    sd_result_state_rule(read, state, 3, &r);
    cr_assert(!r.judged);
    cr_assert_eq(r.peak, 300);    /* the peak is known all the same */
    state_series(10, 9, level_all, read, state);
    sd_result_state_rule(read, state, 10, &r);
    cr_assert(!r.judged);
    state_series(8, 25, level_all, read, state);
    sd_result_state_rule(read, state, 8, &r);
    cr_assert(r.judged && r.unbounded);
    sd_result_state_rule(read, state, 0, &r);
    cr_assert(!r.judged && r.peak == 0);
    /* the second half read by one batch: nothing to say about eviction */
    int64_t jr[5] = {326, 373, 492, 992, 1026}, js[5] = {191, 200, 196, 170, 191};
    sd_result_state_rule(jr, js, 5, &r);
    cr_assert(!r.judged);
    cr_assert_eq(r.peak, 200);
}

/* ---- the join model ---- */

static void jfmt(void *o, int64_t seq, char *out, size_t len) { (void)o; snprintf(out, len, "s-%lld", (long long)seq); }
static void jfmt_r(void *o, int64_t seq, char *out, size_t len) { (void)o; snprintf(out, len, "s-d%lld", (long long)seq); }

#define MIN_ 60000
static const sd_join_event_t JL[] = {
    {0, 0 * MIN_, "P1"},     /* matched by d0 (2 min later) and d3 (exactly 5 min later) */
    {1, 1 * MIN_, "P2"},     /* d1 comes 6 min later: out of range, so a null row */
    {2, 2 * MIN_, "P3"},     /* no delivery at all: a null row */
    {3, 30 * MIN_, "P4"},    /* too recent: its null row is not final */
};
static const sd_join_event_t JR[] = {
    {0, 2 * MIN_, "P1"}, {3, 5 * MIN_, "P1"}, {1, 7 * MIN_, "P2"}, {9, 40 * MIN_, "P9"},
};

static sd_join_conf_t jconf(int type) {
    return (sd_join_conf_t){.type = type, .lower_ms = 0, .upper_ms = 5 * MIN_, .final_wm = 30 * MIN_, .final_wm_low = INT64_MIN,
                            .fmt_left = jfmt, .fmt_right = jfmt_r};
}

static int jflagged(const sd_result_t *r, const char *keys, sd_gbucket_t b) {
    for (int64_t i = 0; i < r->nanomalies; i++)
        if (!strcmp(r->anomalies[i].keys, keys) && (r->anomalies[i].flags & (1u << b))) return 1;
    return 0;
}

/* as-of: scans and deliveries with their hand-over order (arrival) */
static const sd_join_event_t AL[] = {
    {.seq = 0, .t_ms = 10 * MIN_, .key = "P1", .arrival = 10}, /* d0 at 2 min, d3 at 5, d7 at 5.5, d5 at 12: d7 */
    {.seq = 1, .t_ms = 3 * MIN_, .key = "P2", .arrival = 4},   /* d1 at 7 min only, after it: null */
    {.seq = 2, .t_ms = 6 * MIN_, .key = "P1", .arrival = 7},   /* d3 at 5, or d7 at 5.5 handed over after it: either */
};
static const sd_join_event_t AR[] = {
    {.seq = 0, .t_ms = 2 * MIN_, .key = "P1", .arrival = 3},  {.seq = 3, .t_ms = 5 * MIN_, .key = "P1", .arrival = 5},
    {.seq = 5, .t_ms = 12 * MIN_, .key = "P1", .arrival = 6}, {.seq = 1, .t_ms = 7 * MIN_, .key = "P2", .arrival = 2},
    {.seq = 7, .t_ms = 5 * MIN_ + 30000, .key = "P1", .arrival = 8},
};

Test(result, join_as_of_takes_the_newest_delivery_at_or_before_each_scan) {
    sd_join_conf_t c = jconf(SD_JOIN_ASOF);
    c.lower_ms = INT64_MIN / 4, c.upper_ms = 0, c.final_wm = INT64_MIN; /* as-of rows are final when written */
    sd_join_row_t rows[] = {{0, 7, "b1"}, {1, -1, "b1"}, {2, 3, "b2"}};
    sd_result_t r;
    sd_result_join(&c, AL, 3, AR, 5, rows, 3, &r);
    cr_expect_eq(r.n[SD_G_CORRECT], 2);
    cr_expect_eq(r.n[SD_G_PENDING], 2, "s-2's two possible answers, one written: both pending");
    cr_expect_eq(r.nanomalies, 0);
    sd_result_free(&r);
    /* the other answer for s-2 is as good */
    sd_join_row_t other[] = {{0, 7, "b1"}, {1, -1, "b1"}, {2, 7, "b2"}};
    sd_result_join(&c, AL, 3, AR, 5, other, 3, &r);
    cr_expect_eq(r.nanomalies, 0);
    sd_result_free(&r);
    /* a table without history: whatever delivery it held when the scan was read */
    sd_join_row_t latest[] = {{0, 5, "b1"}, {1, 1, "b1"}, {2, 3, "b2"}};
    sd_result_join(&c, AL, 3, AR, 5, latest, 3, &r);
    cr_expect_eq(r.n[SD_G_UNEXPECTED], 2);
    cr_expect_eq(r.n[SD_G_MISSING], 2);
    cr_expect(jflagged(&r, "s-0\x1fs-d5", SD_G_UNEXPECTED));
    cr_expect(jflagged(&r, "s-1\x1fnull", SD_G_MISSING));
    int said = 0;
    for (int64_t i = 0; i < r.nanomalies; i++) said |= strstr(r.anomalies[i].detail, "after the scan's event time") != NULL;
    cr_expect(said, "the detail says the delivery came after the scan");
    sd_result_free(&r);
    /* a null row beside a pair for a scan that matched, and a scan written twice */
    sd_join_row_t bad[] = {{0, 7, "b1"}, {0, -1, "b1"}, {1, -1, "b1"}, {1, -1, "b2"}, {2, 3, "b2"}};
    sd_result_join(&c, AL, 3, AR, 5, bad, 5, &r);
    cr_expect_eq(r.n[SD_G_NULL_MATCHED], 1);
    cr_expect_eq(r.n[SD_G_TWICE], 1);
    sd_result_free(&r);
}

/* Kafka Streams' grace period on a stream-table join: a scan is joined once
 * its task has read a scan newer by the grace; until then its row may be
 * absent (pending), and a row written for it is judged as any. */
Test(result, join_as_of_with_a_grace_period_leaves_held_back_scans_pending) {
    sd_join_conf_t c = jconf(SD_JOIN_ASOF);
    c.lower_ms = INT64_MIN / 4, c.upper_ms = 0, c.final_wm = INT64_MIN;
    sd_join_row_t only[] = {{2, 3, "b2"}};
    sd_result_t r;
    sd_result_join(&c, AL, 3, AR, 5, only, 1, &r);
    cr_expect_eq(r.n[SD_G_MISSING], 2, "no grace: s-0 and s-1 owe their rows");
    sd_result_free(&r);
    c.grace_ms = 2 * MIN_;
    sd_result_join(&c, AL, 3, AR, 5, only, 1, &r);
    cr_expect_eq(r.n[SD_G_MISSING], 0, "s-0 is its key's newest scan, s-1 its key's only one: both may be held back");
    cr_expect_eq(r.n[SD_G_PENDING], 4);
    sd_result_free(&r);
    /* a scan at 1 min, its key's newest at 5: released at a grace of 4 min
     * (exactly on it), held at 4 min and 1 ms */
    static const sd_join_event_t gl[] = {{.seq = 0, .t_ms = MIN_, .key = "K", .arrival = 1}, {.seq = 1, .t_ms = 5 * MIN_, .key = "K", .arrival = 2}};
    static const sd_join_event_t gr[] = {{.seq = 2, .t_ms = 0, .key = "K", .arrival = 0}};
    c.grace_ms = 4 * MIN_;
    sd_result_join(&c, gl, 2, gr, 1, NULL, 0, &r);
    cr_expect_eq(r.n[SD_G_MISSING], 1, "the scan at 1 min owes its row");
    cr_expect_eq(r.n[SD_G_PENDING], 1, "the newest may be held back");
    sd_result_free(&r);
    c.grace_ms = 4 * MIN_ + 1;
    sd_result_join(&c, gl, 2, gr, 1, NULL, 0, &r);
    cr_expect_eq(r.n[SD_G_MISSING], 0);
    sd_result_free(&r);
    /* a wrong row for a held-back scan is still wrong */
    sd_join_row_t latest[] = {{0, 5, "b1"}};
    sd_result_join(&c, AL, 3, AR, 5, latest, 1, &r);
    cr_expect_eq(r.n[SD_G_UNEXPECTED], 1);
    sd_result_free(&r);
}

Test(result, join_inner_pairs_and_the_range_boundary) {
    sd_join_conf_t c = jconf(SD_JOIN_INNER);
    sd_join_row_t rows[] = {{0, 0, "b1"}, {0, 3, "b1"}};
    sd_result_t r;
    sd_result_join(&c, JL, 4, JR, 4, rows, 2, &r);
    cr_assert_eq(r.groups_expected, 2);          /* d3 at exactly +5 min matches; d1 at +6 min does not */
    cr_assert_eq(r.n[SD_G_CORRECT], 2);
    cr_assert_eq(r.nanomalies, 0);
    sd_result_free(&r);
    /* the out-of-range pair written, the boundary pair missing */
    sd_join_row_t bad[] = {{0, 0, "b1"}, {1, 1, "b2"}};
    sd_result_join(&c, JL, 4, JR, 4, bad, 2, &r);
    cr_assert_eq(r.n[SD_G_MISSING], 1);
    cr_assert(jflagged(&r, "s-0\x1fs-d3", SD_G_MISSING));
    cr_assert_eq(r.n[SD_G_UNEXPECTED], 1);
    cr_assert(jflagged(&r, "s-1\x1fs-d1", SD_G_UNEXPECTED));
    sd_result_free(&r);
    /* a pair written by two restarts: each copy names its writer */
    sd_join_row_t twice[] = {{0, 3, "job a attempt 1"}, {0, 0, "b1"}, {0, 3, "job a attempt 0"}};
    sd_result_join(&c, JL, 4, JR, 4, twice, 3, &r);
    cr_assert_eq(r.n[SD_G_TWICE], 1);
    cr_assert_eq(r.n[SD_G_CORRECT], 1);
    cr_assert_eq(r.nanomalies, 1);
    cr_assert_str_eq(r.anomalies[0].detail, "s-0 + s-d3: 2 rows: by job a attempt 0, by job a attempt 1");
    sd_result_free(&r);
    /* written six times: four writers named, the rest counted */
    sd_join_row_t six[] = {{0, 0, "b1"}, {0, 3, "w1"}, {0, 3, "w2"}, {0, 3, "w3"}, {0, 3, "w4"}, {0, 3, "w5"}, {0, 3, "w6"}};
    sd_result_join(&c, JL, 4, JR, 4, six, 7, &r);
    cr_assert_str_eq(r.anomalies[0].detail, "s-0 + s-d3: 6 rows: by w1, by w2, by w3, by w4 and 2 more");
    sd_result_free(&r);
}

Test(result, join_left_outer_null_rows_final_early_and_for_a_matched_row) {
    sd_join_conf_t c = jconf(SD_JOIN_LEFT);
    sd_join_row_t ok[] = {{0, 0, "b1"}, {0, 3, "b1"}, {1, -1, "b3"}, {2, -1, "b3"}};
    sd_result_t r;
    sd_result_join(&c, JL, 4, JR, 4, ok, 4, &r);
    cr_assert_eq(r.n[SD_G_CORRECT], 4);
    cr_assert_eq(r.n[SD_G_PENDING], 1);          /* s-3's null row: its horizon (35 min) is after the watermark */
    cr_assert_eq(r.nanomalies, 0);
    sd_result_free(&r);
    sd_join_row_t bad[] = {{0, 0, "b1"}, {0, 3, "b1"}, {0, -1, "b1"}, {1, -1, "b3"}, {3, -1, "b4"}, {3, -1, "b5"}};
    sd_result_join(&c, JL, 4, JR, 4, bad, 6, &r);
    cr_assert_eq(r.n[SD_G_NULL_MATCHED], 1);     /* s-0 matched, yet a null row */
    cr_assert(jflagged(&r, "s-0\x1fnull", SD_G_NULL_MATCHED));
    cr_assert_eq(r.n[SD_G_MISSING], 1);          /* s-2's null row is owed */
    cr_assert(jflagged(&r, "s-2\x1fnull", SD_G_MISSING));
    cr_assert_eq(r.n[SD_G_EARLY], 1);            /* s-3's null row before the watermark allowed it, twice */
    cr_assert_eq(r.n[SD_G_TWICE], 1);
    sd_result_free(&r);
}

Test(result, join_full_outer_right_nulls_and_the_boundaries) {
    sd_join_conf_t c = jconf(SD_JOIN_FULL);
    sd_join_row_t rows[] = {{0, 0, "b1"}, {0, 3, "b1"}, {1, -1, "b3"}, {2, -1, "b3"}, {-1, 1, "b3"}, {-2, -1, "b9"}};
    sd_result_t r;
    sd_result_join(&c, JL, 4, JR, 4, rows, 6, &r);
    cr_assert_eq(r.n[SD_G_CORRECT], 5);          /* d1 matched nothing: its null row is final (7 min < 30) */
    cr_assert_eq(r.n[SD_G_PENDING], 2);          /* s-3 and d9 are not final */
    cr_assert_eq(r.n[SD_G_UNEXPECTED], 1);       /* a row whose id is not this run's */
    sd_result_free(&r);
    /* a horizon between the per-partition and the per-source watermark is pending either way */
    c.final_wm_low = 2 * MIN_;
    sd_join_row_t few[] = {{0, 0, "b1"}, {0, 3, "b1"}};
    sd_result_join(&c, JL, 4, JR, 4, few, 2, &r);
    cr_assert_eq(r.n[SD_G_MISSING], 0, "horizons 6, 7 and 7 min lie between 2 and 30 min");
    cr_assert_eq(r.n[SD_G_PENDING], 5);
    sd_result_free(&r);
}

Test(result, join_a_maybe_late_delivery_leaves_its_rows_pending) {
    /* d0 (s-0's only certain partner besides d3) reached Kafka after a
     * faster message moved the watermark: dropped or joined, both right */
    sd_join_event_t r4[4];
    memcpy(r4, JR, sizeof r4);
    r4[0].maybe_late = 1;
    sd_join_conf_t c = jconf(SD_JOIN_LEFT);
    sd_result_t r;
    /* the pair left out: pending, not missing */
    sd_join_row_t without[] = {{0, 3, "b1"}, {1, -1, "b3"}, {2, -1, "b3"}};
    sd_result_join(&c, JL, 4, r4, 4, without, 3, &r);
    cr_assert_eq(r.n[SD_G_MISSING], 0);
    cr_assert_eq(r.nanomalies, 0);
    sd_result_free(&r);
    /* d3 late too: s-0 is matched only through maybe-late pairs, so its
     * null row is pending whether it was written or not */
    r4[1].maybe_late = 1;
    sd_join_row_t nulled[] = {{0, -1, "b2"}, {1, -1, "b3"}, {2, -1, "b3"}};
    sd_result_join(&c, JL, 4, r4, 4, nulled, 3, &r);
    cr_assert_eq(r.nanomalies, 0);
    cr_assert_eq(r.n[SD_G_CORRECT], 2);
    sd_result_free(&r);
    sd_result_join(&c, JL, 4, r4, 4, nulled + 1, 2, &r);
    cr_assert_eq(r.nanomalies, 0);
    sd_result_free(&r);
    /* its null row and one of its pairs both written: one of them is wrong */
    sd_join_row_t both[] = {{0, -1, "b1"}, {0, 0, "b2"}, {1, -1, "b3"}, {2, -1, "b3"}};
    sd_result_join(&c, JL, 4, r4, 4, both, 4, &r);
    cr_assert_eq(r.n[SD_G_NULL_MATCHED], 1);
    cr_assert(jflagged(&r, "s-0\x1fnull", SD_G_NULL_MATCHED));
    sd_result_free(&r);
    /* an uncertain pair written twice is still written twice */
    sd_join_row_t twice[] = {{0, 0, "b1"}, {0, 0, "b2"}, {1, -1, "b3"}, {2, -1, "b3"}};
    sd_result_join(&c, JL, 4, r4, 4, twice, 4, &r);
    cr_assert_eq(r.n[SD_G_TWICE], 1);
    cr_assert(jflagged(&r, "s-0\x1fs-d0", SD_G_TWICE));
    sd_result_free(&r);
}

/* a maybe-late delivery that matches a scan that was not late: dropped,
 * no row; joined, the pair; a null row for it is wrong either way */
Test(result, join_a_null_row_for_a_maybe_late_event_with_a_certain_partner) {
    sd_join_event_t r4[4];
    memcpy(r4, JR, sizeof r4);
    r4[0].maybe_late = 1; /* d0 matches s-0, which was not late */
    sd_join_conf_t c = jconf(SD_JOIN_FULL);
    sd_result_t r;
    /* the wrong pipeline's rows: the late delivery written at once as unmatched */
    sd_join_row_t late_null[] = {{0, 3, "b1"}, {-1, 0, "b1"}, {1, -1, "b3"}, {2, -1, "b3"}, {-1, 1, "b3"}};
    sd_result_join(&c, JL, 4, r4, 4, late_null, 5, &r);
    cr_assert_eq(r.n[SD_G_NULL_MATCHED], 1, "not pending: no outcome of the race owes (null, d0)");
    cr_assert(jflagged(&r, "null\x1fs-d0", SD_G_NULL_MATCHED));
    cr_assert_eq(r.n[SD_G_PENDING], 3, "s-0 + d0 itself is still open, and the null rows of s-3 and d9");
    sd_result_free(&r);
    /* the correct pipeline, either way the race went */
    sd_join_row_t dropped[] = {{0, 3, "b1"}, {1, -1, "b3"}, {2, -1, "b3"}, {-1, 1, "b3"}};
    sd_result_join(&c, JL, 4, r4, 4, dropped, 4, &r);
    cr_assert_eq(r.nanomalies, 0);
    sd_result_free(&r);
    sd_join_row_t joined[] = {{0, 0, "b1"}, {0, 3, "b1"}, {1, -1, "b3"}, {2, -1, "b3"}, {-1, 1, "b3"}};
    sd_result_join(&c, JL, 4, r4, 4, joined, 5, &r);
    cr_assert_eq(r.nanomalies, 0);
    cr_assert_eq(r.n[SD_G_CORRECT], 4);
    sd_result_free(&r);
    /* a maybe-late scan with a certain delivery, in a left outer join */
    sd_join_event_t l4[4];
    memcpy(l4, JL, sizeof l4);
    l4[0].maybe_late = 1;
    c = jconf(SD_JOIN_LEFT);
    sd_join_row_t scan_null[] = {{0, -1, "b1"}, {1, -1, "b3"}, {2, -1, "b3"}};
    sd_result_join(&c, l4, 4, JR, 4, scan_null, 3, &r);
    cr_assert_eq(r.n[SD_G_NULL_MATCHED], 1);
    cr_assert(jflagged(&r, "s-0\x1fnull", SD_G_NULL_MATCHED));
    sd_result_free(&r);
}

/* the flags and the time of an anomaly hold for every event, not just the
 * first of the arrays: a null row for a matched scan at any position, a
 * right null row for a matched delivery, each dated by its event */
Test(result, join_null_rows_for_matched_events_anywhere) {
    static const sd_join_event_t l3[] = {{10, 1 * MIN_, "Q0"}, {11, 3 * MIN_, "Q1"}, {12, 5 * MIN_, "Q2"}};
    static const sd_join_event_t r3[] = {{20, 2 * MIN_, "Q0"}, {21, 6 * MIN_, "Q2"}};
    sd_join_conf_t c = jconf(SD_JOIN_FULL);
    sd_join_row_t rows[] = {{10, 20, "b"}, {12, 21, "b"}, {11, -1, "b"}, {12, -1, "b"}, {-1, 21, "b"}};
    sd_result_t r;
    sd_result_join(&c, l3, 3, r3, 2, rows, 5, &r);
    cr_assert_eq(r.n[SD_G_CORRECT], 3);
    cr_assert_eq(r.n[SD_G_NULL_MATCHED], 2, "s-12 and d21 matched, yet null rows");
    cr_assert(jflagged(&r, "s-12\x1fnull", SD_G_NULL_MATCHED));
    cr_assert(jflagged(&r, "null\x1fs-d21", SD_G_NULL_MATCHED));
    for (int64_t i = 0; i < r.nanomalies; i++) {
        const char *k = r.anomalies[i].keys;
        int64_t want = !strncmp(k, "s-12", 4) ? 5 * MIN_ : 6 * MIN_;
        cr_assert_eq(r.anomalies[i].start_ms, want, "%s dated %lld", k, (long long)r.anomalies[i].start_ms);
    }
    sd_result_free(&r);
}

Test(result, latest_a_tombstone_removes_the_key_until_a_later_event) {
    /* P1: events at arrival 0 and 1, a tombstone at 2: no row; P2: a tombstone at 1, an event at 3: its row */
    sd_result_event_t e[] = {lev(0, 10, "P1", "AMS\x1f" "a"), lev(1, 30, "P1", "BER\x1f" "b"), lev(2, 0, "P1", ""),
                             lev(3, 0, "P2", ""), lev(4, 5, "P2", "DUB\x1f" "c")};
    for (int i = 0; i < 5; i++) e[i].arrival = i;
    e[2].del = 1, e[2].copies = 0;
    e[3].del = 1, e[3].copies = 0, e[3].arrival = 1;
    sd_result_conf_t c = {.key_names = "parcel_id", .field_names = "location,scan"};
    sd_result_row_t ok[] = {lrow("P2", "DUB\x1f" "c")};
    sd_result_t r;
    sd_result_latest(&c, e, 5, ok, 1, &r);
    cr_expect_eq(r.groups_expected, 1);
    cr_expect_eq(r.n[SD_G_CORRECT], 1);
    cr_expect_eq(r.nanomalies, 0);
    sd_result_free(&r);
    /* the deleted key's row kept: unexpected, naming the tombstone */
    sd_result_row_t kept[] = {lrow("P1", "BER\x1f" "b"), lrow("P2", "DUB\x1f" "c")};
    sd_result_latest(&c, e, 5, kept, 2, &r);
    cr_expect_eq(r.n[SD_G_UNEXPECTED], 1);
    cr_assert_eq(r.nanomalies, 1);
    cr_expect(strstr(r.anomalies[0].detail, "deleted by tombstone #2") != NULL, "%s", r.anomalies[0].detail);
    sd_result_free(&r);
    /* P2's row deleted although an event came after the tombstone: missing */
    sd_result_latest(&c, e, 5, kept, 1, &r);
    cr_expect_eq(r.n[SD_G_UNEXPECTED], 1);
    sd_result_row_t none[] = {lrow("P9", "x\x1fy")};
    sd_result_free(&r);
    sd_result_latest(&c, e, 5, none, 0, &r);
    cr_expect_eq(r.n[SD_G_MISSING], 1);
    sd_result_free(&r);
}

/* ---- values as written: nulls, text, integers past 2^53 ---- */

static sd_result_event_t iev(int64_t seq, int64_t t, const char *key, const char *text) {
    sd_result_event_t e = {.seq = seq, .t_ms = t, .keys = key, .copies = 1, .sent = 1};
    e.has_value = sd_result_num(text, strlen(text), &e.value, &e.ivalue, &e.is_int);
    return e;
}

static sd_result_row_t irow(int64_t start, const char *key, const char *count, const char *sum) {
    sd_result_row_t r = {.start_ms = start, .keys = key};
    r.has[0] = (uint8_t)sd_result_num(count, strlen(count), &r.v[0], &r.iv[0], &r.is_int[0]);
    r.has[1] = (uint8_t)sd_result_num(sum, strlen(sum), &r.v[1], &r.iv[1], &r.is_int[1]);
    return r;
}

static int64_t judge_one(const sd_result_event_t *e, int n, sd_result_row_t rw, int bucket) {
    sd_result_t r;
    sd_result_conf_t c = conf(SD_OUT_UPDATE, 5 * MIN);
    sd_result_windows(&c, e, n, &rw, 1, &r);
    int64_t v = r.n[bucket];
    sd_result_free(&r);
    return v;
}

Test(result, a_null_or_text_value_is_left_out_of_the_sum_and_never_switches_the_check_off) {
    sd_result_event_t e[3] = {iev(0, 1000, "A", "5"), iev(1, 2000, "A", "null"), iev(2, 3000, "A", "7")};
    cr_expect_eq(judge_one(e, 3, irow(0, "A", "3", "12"), SD_G_CORRECT), 1, "sum over the numeric values, count over all");
    cr_expect_eq(judge_one(e, 3, irow(0, "A", "3", "100012"), SD_G_WRONG_VALUE), 1, "a null must not hide a wrong sum");
    e[1] = iev(1, 2000, "A", "heavy");
    cr_expect_eq(judge_one(e, 3, irow(0, "A", "3", "100012"), SD_G_WRONG_VALUE), 1, "nor must a text value");
    cr_expect_eq(judge_one(e, 3, irow(0, "A", "3", "12"), SD_G_CORRECT), 1);
    /* no numeric value at all: the sum is SQL's NULL */
    sd_result_event_t n2[2] = {iev(0, 1000, "A", "null"), iev(1, 2000, "A", "\"x\"")};
    cr_expect_eq(judge_one(n2, 2, irow(0, "A", "2", "null"), SD_G_CORRECT), 1);
    cr_expect_eq(judge_one(n2, 2, irow(0, "A", "2", "0"), SD_G_WRONG_VALUE), 1, "0 is not NULL");
}

Test(result, integer_sums_and_counts_are_compared_exactly) {
    sd_result_event_t e[2] = {iev(0, 1000, "A", "30000000000000"), iev(1, 2000, "A", "435")};
    cr_expect_eq(judge_one(e, 2, irow(0, "A", "2", "30000000000435"), SD_G_CORRECT), 1);
    cr_expect_eq(judge_one(e, 2, irow(0, "A", "2", "30000000020435"), SD_G_WRONG_VALUE), 1, "off by 20,000 of 3e13");
    cr_expect_eq(judge_one(e, 2, irow(0, "A", "2", "30000000000436"), SD_G_WRONG_VALUE), 1, "off by 1");
    cr_expect_eq(judge_one(e, 2, irow(0, "A", "2", "30000000000435.0"), SD_G_CORRECT), 1, "a float that is exactly the sum");
    sd_result_event_t big[2] = {iev(0, 1000, "A", "4611686018427387904"), iev(1, 2000, "A", "1")};
    cr_expect_eq(judge_one(big, 2, irow(0, "A", "2", "4611686018427387905"), SD_G_CORRECT), 1);
    cr_expect_eq(judge_one(big, 2, irow(0, "A", "2", "4611686018427387904"), SD_G_WRONG_VALUE), 1, "off by 1 past 2^53");
    cr_expect_eq(judge_one(big, 2, irow(0, "A", "2", "4.611686018427387905e18"), SD_G_WRONG_VALUE), 1,
                 "a double cannot hold that sum: not the same value");
    /* floats keep their tolerance */
    sd_result_event_t f[2] = {iev(0, 1000, "A", "0.1"), iev(1, 2000, "A", "0.2")};
    cr_expect_eq(judge_one(f, 2, irow(0, "A", "2", "0.30000000000000004"), SD_G_CORRECT), 1);
    cr_expect_eq(judge_one(f, 2, irow(0, "A", "2", "0.3"), SD_G_CORRECT), 1);
    cr_expect_eq(judge_one(f, 2, irow(0, "A", "2", "0.31"), SD_G_WRONG_VALUE), 1);
}

Test(result, same_value_compares_integers_exactly_at_any_size) {
#define SAME(a, b) sd_result_same_value(a, strlen(a), b, strlen(b))
    cr_expect(!SAME("1200000000000000001", "1200000000000000000"), "1.2e18 off by 1");
    cr_expect(!SAME("1200000000000000100", "1200000000000000000"));
    cr_expect(!SAME("1200000000000000001", "1.2e18"), "a float is the integer only when exactly it");
    cr_expect(SAME("1200000000000000000", "1.2e18"));
    cr_expect(SAME("12345", "12345.0"));
    cr_expect(SAME("31111111111111111111", "31111111111111111111"));
    cr_expect(!SAME("31111111111111111111", "31111111111111111112"), "past 2^64, still exact");
    cr_expect(SAME("007", "7"));
    cr_expect(SAME("-0", "0"));
    cr_expect(!SAME("-5", "5"));
    cr_expect(SAME("nan", "nan"), "the same bytes are the same value");
    cr_expect(!SAME("heavy", "0"));
    cr_expect(SAME("0.1", "1e-1"));
#undef SAME
    double d;
    int64_t i;
    uint8_t is_int;
    cr_expect_eq(sd_result_num("null", 4, &d, &i, &is_int), 0);
    cr_expect_eq(sd_result_num("inf", 3, &d, &i, &is_int), 0);
    cr_expect_eq(sd_result_num("0x10", 4, &d, &i, &is_int), 0);
    cr_expect_eq(sd_result_num(" 42 ", 4, &d, &i, &is_int), 1);
    cr_expect(is_int && i == 42);
    cr_expect_eq(sd_result_num("9223372036854775808", 19, &d, &i, &is_int), 1);
    cr_expect(!is_int, "past int64: a float");
}

/* ---- orders the models rest on (each a mutant the suite once let live) */

Test(result, latest_equal_event_times_the_one_sent_last_wins_whatever_its_number) {
    /* seq 0 and 1 at the same event time; 0 was sent after 1 (a re-sent
     * event keeps its number): 0 is the newest */
    sd_result_event_t e[] = {lev(0, 10, "P1", "AMS\x1f" "late-sent"), lev(1, 10, "P1", "BER\x1f" "first-sent")};
    e[0].arrival = 2;
    e[1].arrival = 1;
    sd_result_conf_t c = {.key_names = "parcel_id", .field_names = "location,scan"};
    sd_result_row_t want = lrow("P1", "AMS\x1f" "late-sent");
    sd_result_t r;
    sd_result_latest(&c, e, 2, &want, 1, &r);
    cr_expect_eq(r.n[SD_G_CORRECT], 1, "the event sent last is the newest of equal event times");
    sd_result_free(&r);
}

Test(result, windows_before_1970_floor_their_start) {
    /* -60000 ms lies on a window start: its window is [-60000, 0), not the one before */
    sd_result_event_t e[] = {ev(0, -MIN, "A", 4), ev(1, -MIN - 1, "A", 6)};
    sd_result_row_t rows[] = {row(-MIN, "A", 1, 4), row(-2 * MIN, "A", 1, 6)};
    sd_result_t r;
    sd_result_conf_t c = conf(SD_OUT_APPEND, MIN);
    sd_result_windows(&c, e, 2, rows, 2, &r);
    cr_expect_eq(r.n[SD_G_CORRECT], 2);
    cr_expect_eq(r.n[SD_G_WRONG_VALUE] + r.n[SD_G_MISSING] + r.n[SD_G_UNEXPECTED], 0);
    sd_result_free(&r);
}

Test(result, a_wrong_window_of_numbers_says_nothing_of_values_that_are_not) {
    sd_result_event_t e[8];
    int n = base(e);
    sd_result_row_t rows[] = {row(0, "A", 1, 10), row(0, "B", 1, 5), row(MIN, "A", 1, 7)};
    sd_result_t r;
    sd_result_conf_t c = conf(SD_OUT_APPEND, 2 * MIN + 5);
    sd_result_windows(&c, e, n, rows, 3, &r);
    cr_assert_eq(r.n[SD_G_WRONG_VALUE], 1);
    cr_expect(strstr(r.anomalies[0].detail, "no numeric value") == NULL, "%s", r.anomalies[0].detail);
    sd_result_free(&r);
}

Test(result, join_events_in_any_order_pair_the_same) {
    /* one key's scans and deliveries given newest first: the pairs are those
     * of the events in time order */
    static const sd_join_event_t L[] = {{2, 20 * MIN_, "K"}, {1, 10 * MIN_, "K"}, {0, 0, "K"}};
    static const sd_join_event_t R[] = {{5, 22 * MIN_, "K"}, {4, 12 * MIN_, "K"}, {3, 1 * MIN_, "K"}};
    sd_join_conf_t c = jconf(SD_JOIN_INNER);
    c.final_wm = 60 * MIN_;
    sd_join_row_t rows[] = {{0, 3, "w"}, {1, 4, "w"}, {2, 5, "w"}};
    sd_result_t r;
    sd_result_join(&c, L, 3, R, 3, rows, 3, &r);
    cr_expect_eq(r.groups_expected, 3);
    cr_expect_eq(r.n[SD_G_CORRECT], 3);
    cr_expect_eq(r.nanomalies, 0);
    sd_result_free(&r);
}

Test(result, integer_min_and_max_are_those_of_the_values_in_any_order) {
    /* neither the first nor the last event holds the min or the max, and
     * the values are integers past a double's 2^53 */
    sd_result_event_t e[4] = {iev(0, 1000, "A", "9007199254740995"), iev(1, 2000, "A", "9007199254740993"),
                              iev(2, 3000, "A", "9007199254740999"), iev(3, 4000, "A", "9007199254740997")};
    sd_result_conf_t c = conf(SD_OUT_UPDATE, 5 * MIN);
    c.aggs = SD_AGG_MIN | SD_AGG_MAX;
    sd_result_row_t rw = {.start_ms = 0, .keys = "A"};
    const char *mn = "9007199254740993", *mx = "9007199254740999";
    rw.has[2] = (uint8_t)sd_result_num(mn, strlen(mn), &rw.v[2], &rw.iv[2], &rw.is_int[2]);
    rw.has[3] = (uint8_t)sd_result_num(mx, strlen(mx), &rw.v[3], &rw.iv[3], &rw.is_int[3]);
    sd_result_t r;
    sd_result_windows(&c, e, 4, &rw, 1, &r);
    cr_expect_eq(r.n[SD_G_CORRECT], 1, "min 9007199254740993, max 9007199254740999");
    sd_result_free(&r);
    rw.iv[2] += 2; /* the first event's value: the min of none */
    sd_result_windows(&c, e, 4, &rw, 1, &r);
    cr_expect_eq(r.n[SD_G_WRONG_VALUE], 1, "a min of 9007199254740995 is wrong");
    sd_result_free(&r);
    rw.iv[2] -= 2, rw.iv[3] -= 2; /* the last event's value: the max of none */
    sd_result_windows(&c, e, 4, &rw, 1, &r);
    cr_expect_eq(r.n[SD_G_WRONG_VALUE], 1, "a max of 9007199254740997 is wrong");
    sd_result_free(&r);
}

Test(result, same_value_strips_leading_zeros_of_either_side_and_nothing_else) {
#define SAME(a, b) sd_result_same_value(a, strlen(a), b, strlen(b))
    cr_expect(SAME("7", "007"), "the second's zeros too");
    cr_expect(!SAME("7", "117"), "a leading 1 is a digit");
    cr_expect(!SAME("117", "7"));
    cr_expect(!SAME("12", "123"), "a prefix is not the value");
    cr_expect(!SAME("123", "12"));
    cr_expect(!SAME("1", "10"));
#undef SAME
}

Test(result, a_group_no_counted_event_belongs_to_says_how_many_rows) {
    sd_result_event_t e[1] = {ev(0, 1000, "A", 10)};
    sd_result_row_t rows[] = {row(0, "A", 1, 10), row(5 * MIN, "Z", 1, 3)};
    sd_result_t r;
    sd_result_conf_t c = conf(SD_OUT_UPDATE, 10 * MIN);
    sd_result_windows(&c, e, 1, rows, 2, &r);
    cr_assert_eq(r.n[SD_G_UNEXPECTED], 1);
    cr_assert_eq(r.nanomalies, 1);
    cr_expect(strstr(r.anomalies[0].detail, ": 1 row for a group no counted event belongs to"), "%s", r.anomalies[0].detail);
    sd_result_free(&r);
}

Test(result, a_joins_final_watermark_is_the_older_sources_less_the_delay) {
    cr_expect_eq(sd_join_final_wm(100 * MIN, 40 * MIN, 10 * MIN), 30 * MIN, "the deliveries lag: theirs");
    cr_expect_eq(sd_join_final_wm(40 * MIN, 100 * MIN, 10 * MIN), 30 * MIN, "the scans lag: theirs");
    cr_expect_eq(sd_join_final_wm(INT64_MIN, 100 * MIN, 10 * MIN), INT64_MIN, "a source with no event yet: nothing is final");
    cr_expect_eq(sd_join_final_wm(100 * MIN, INT64_MIN, 0), INT64_MIN);
}
