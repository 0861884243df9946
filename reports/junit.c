/* junit.c - junit.xml: one testsuite per scenario, one testcase per check.
 *
 * A failed check is a <failure> whose message says what was expected and
 * what was found, with sample ids (and, for duplicates, copies and
 * writers) in its text. An inconclusive run adds a testcase
 * "reconciliation" with an <error> naming the reason, so CI never shows an
 * unjudged run as green. Everything taken from the pipeline or the sink is
 * escaped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "report.h"

static void sd_junit_attr(sd_buf_t *b, const char *name, const char *value) {
    sd_buf_printf(b, " %s=\"", name);
    sd_report_xml_escape(b, value);
    sd_buf_putc(b, '"');
}

/* Sample ids of the bucket a check is about. */
static void sd_junit_samples(sd_buf_t *b, const sd_report_model_t *m, const char *check) {
    const char *dot = strrchr(check, '.');
    const char *count = dot ? dot + 1 : check;
    char sink[128];
    snprintf(sink, sizeof(sink), "%.*s", dot ? (int)(dot - check) : 6, dot ? check : "target");
    for (int i = 0; i < m->nbuckets; i++) {
        const sd_rbucket_t *bk = &m->buckets[i];
        if (strcmp(bk->sink, sink) || strncmp(bk->bucket, count, strlen(bk->bucket))) continue;
        sd_buf_printf(b, "\n%s ids (%lld in all, first %d):", bk->bucket, (long long)bk->total, bk->nids);
        for (int k = 0; k < bk->nids; k++) {
            const sd_rid_t *id = &bk->ids[k];
            sd_buf_puts(b, "\n  ");
            sd_report_xml_escape(b, id->id);
            if (id->copies > 1) sd_buf_printf(b, " x%lld", (long long)id->copies);
            if (id->writers[0]) { sd_buf_puts(b, " written by "); sd_report_xml_escape(b, id->writers); }
            if (id->partition >= 0) sd_buf_printf(b, " (sent to partition %d offset %lld)", id->partition, (long long)id->offset);
        }
    }
    if (!strcmp(count, "unexpected"))
        for (int i = 0; i < m->nunexpected; i++) {
            const sd_rbucket_t *bk = &m->unexpected[i];
            sd_buf_printf(b, "\nunexpected rows in %s (%lld distinct ids):", bk->sink, (long long)bk->total);
            for (int k = 0; k < bk->nids; k++) {
                sd_buf_puts(b, "\n  ");
                sd_report_xml_escape(b, bk->ids[k].id);
                sd_buf_printf(b, " x%lld", (long long)bk->ids[k].copies);
            }
        }
}

/* Tests, failures and errors of one scenario's suite. */
static void sd_junit_tally(const sd_report_model_t *m, int *tests, int *failures, int *errors, double *secs) {
    *failures = 0;
    for (int i = 0; i < m->nchecks; i++)
        if (!m->checks[i].pass) (*failures)++;
    *errors = strcmp(m->verdict, "pass") && strcmp(m->verdict, "fail") ? 1 : 0;
    *tests = m->nchecks + *errors;
    *secs = m->ended_ms >= 0 ? (double)(m->ended_ms - m->started_ms) / 1000.0 : 0;
}

/* Append the <testsuite> of one scenario. */
static void sd_junit_suite(sd_buf_t *b, const sd_report_model_t *m) {
    int tests, failures, errors;
    double secs;
    sd_junit_tally(m, &tests, &failures, &errors, &secs);
    int inconclusive = errors;
    char *suite = sd_util_fmt("streamdrill.%s", m->scenario);
    sd_buf_puts(b, "  <testsuite");
    sd_junit_attr(b, "name", suite);
    sd_buf_printf(b, " tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"0\" time=\"%.3f\"", tests, failures, errors, secs);
    char ts[32];
    snprintf(ts, sizeof(ts), "%.19s", m->started_at);
    sd_junit_attr(b, "timestamp", ts);
    sd_buf_puts(b, ">\n    <properties>\n");
    struct { const char *k, *v; } props[] = {{"verdict", m->verdict}, {"reason", m->reason}, {"seed", m->seed}, {"tag", m->tag},
                                             {"profile", m->profile}, {"topic", m->topic}, {"brokers", m->brokers},
                                             {"scenario_file", m->file}, {"harness_version", m->version}};
    for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++) {
        sd_buf_puts(b, "      <property");
        sd_junit_attr(b, "name", props[i].k);
        sd_junit_attr(b, "value", props[i].v);
        sd_buf_puts(b, "/>\n");
    }
    sd_buf_puts(b, "    </properties>\n");
    if (inconclusive) {
        sd_buf_puts(b, "    <testcase");
        sd_junit_attr(b, "classname", suite);
        sd_junit_attr(b, "name", "reconciliation");
        sd_buf_puts(b, " time=\"0\">\n      <error");
        char *msg = sd_util_fmt("%s: %s: %s", m->verdict, m->reason, m->message);
        sd_junit_attr(b, "message", msg);
        free(msg);
        sd_junit_attr(b, "type", m->reason);
        sd_buf_puts(b, ">");
        sd_report_xml_escape(b, m->message);
        for (int i = 0; i < m->nmissing; i++) { sd_buf_puts(b, "\nmissing: "); sd_report_xml_escape(b, m->missing[i]); }
        sd_buf_puts(b, "</error>\n    </testcase>\n");
    }
    for (int i = 0; i < m->nchecks; i++) {
        const sd_rcheck_t *c = &m->checks[i];
        sd_buf_puts(b, "    <testcase");
        sd_junit_attr(b, "classname", suite);
        sd_junit_attr(b, "name", c->name);
        sd_buf_puts(b, " time=\"0\"");
        if (c->pass) { sd_buf_puts(b, "/>\n"); continue; }
        sd_buf_puts(b, ">\n      <failure");
        char *msg = sd_util_fmt("%s: expected %s, got %s", c->name, c->expected, c->actual);
        sd_junit_attr(b, "message", msg);
        free(msg);
        sd_junit_attr(b, "type", "check");
        sd_buf_puts(b, ">");
        sd_report_xml_escape(b, c->detail);
        sd_junit_samples(b, m, c->name);
        sd_buf_puts(b, "</failure>\n    </testcase>\n");
    }
    sd_buf_puts(b, "    <system-out>");
    for (int i = 0; i < m->nsteps; i++) {
        const sd_rstep_t *p = &m->steps[i];
        sd_buf_printf(b, "line %d: ", p->line);
        sd_report_xml_escape(b, p->text);
        sd_buf_puts(b, " -> ");
        sd_report_xml_escape(b, p->status);
        if (p->detail[0]) { sd_buf_puts(b, ": "); sd_report_xml_escape(b, p->detail); }
        sd_buf_putc(b, '\n');
    }
    sd_buf_puts(b, "</system-out>\n  </testsuite>\n");
    free(suite);
}

/* <testsuites> over the given runs. */
static void sd_junit_doc(sd_buf_t *b, const sd_report_model_t *const *ms, int n) {
    int tests = 0, failures = 0, errors = 0;
    double secs = 0;
    for (int i = 0; i < n; i++) {
        int t, f, e;
        double s;
        sd_junit_tally(ms[i], &t, &f, &e, &s);
        tests += t, failures += f, errors += e, secs += s;
    }
    sd_buf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites");
    sd_junit_attr(b, "name", "streamdrill");
    sd_buf_printf(b, " tests=\"%d\" failures=\"%d\" errors=\"%d\" time=\"%.3f\">\n", tests, failures, errors, secs);
    for (int i = 0; i < n; i++) sd_junit_suite(b, ms[i]);
    sd_buf_puts(b, "</testsuites>\n");
}

sd_err_t sd_report_junit_many(const sd_report_model_t *const *ms, int n, const char *path, char *err, size_t errlen) {
    sd_buf_t b;
    sd_buf_init(&b);
    sd_junit_doc(&b, ms, n);
    sd_err_t e = sd_util_write_file(path, b.data, b.len, err, errlen);
    sd_buf_free(&b);
    return e;
}

static sd_err_t sd_junit_write(const sd_report_model_t *m, const char *path, char *err, size_t errlen) {
    return sd_report_junit_many(&m, 1, path, err, errlen);
}

const sd_report_writer_t sd_report_junit = {"junit", "junit.xml", sd_junit_write};
