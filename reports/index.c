/* index.c - the index over a multi-scenario run: OUT/index.html (one row
 * per scenario, its verdict, the counts that decide it, a link to its
 * report) and OUT/junit.xml (every scenario's testsuite in one document,
 * for CI systems that read one file). Built from each run folder's run.db,
 * like every other report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "report.h"


static void sd_index_count(sd_buf_t *b, const sd_report_model_t *m, const char *name, int bad_if_positive) {
    int64_t v = sd_report_count(m, name);
    if (v < 0) sd_buf_puts(b, "<td class=\"n\">n/a</td>");
    else sd_buf_printf(b, "<td class=\"n%s\">%lld</td>", bad_if_positive && v > 0 ? " bad" : "", (long long)v);
}

static sd_err_t sd_index_html(const sd_report_model_t *const *ms, int n, const char *out_dir, const char *path, char *err, size_t errlen) {
    int pass = 0, fail = 0, other = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(ms[i]->verdict, "pass")) pass++;
        else if (!strcmp(ms[i]->verdict, "fail")) fail++;
        else other++;
    }
    const char *cls = fail ? "fail" : other ? "inconclusive" : "pass";
    sd_buf_t b;
    sd_buf_init(&b);
    char title[64];
    snprintf(title, sizeof(title), "streamdrill: %d scenarios", n);
    sd_report_html_head(&b, title, NULL, NULL);
    sd_buf_printf(&b, "<div class=\"verdict %s\" id=\"verdict\"><h1>%d scenarios: %d passed, %d failed, %d inconclusive or in error</h1></div>\n",
                  cls, n, pass, fail, other);
    sd_buf_puts(&b, "<table id=\"runs\"><tr><th>scenario</th><th>verdict</th><th>reason</th><th>expected</th><th>unique in target</th>"
                    "<th>duplicated</th><th>lost</th><th>unexpected</th><th>seconds</th><th>report</th></tr>\n");
    size_t olen = strlen(out_dir);
    for (int i = 0; i < n; i++) {
        const sd_report_model_t *m = ms[i];
        const char *v = sd_report_verdict_class(m->verdict);
        /* links relative to the index, so the folder can be moved as one */
        const char *rel = m->run_dir;
        if (!strncmp(rel, out_dir, olen) && rel[olen] == '/') rel += olen + 1;
        sd_buf_puts(&b, "<tr><td>");
        sd_h(&b, m->scenario);
        sd_buf_printf(&b, "</td><td class=\"v %s\">%s</td><td>", v, m->verdict);
        sd_h(&b, m->reason);
        sd_buf_puts(&b, "</td>");
        sd_index_count(&b, m, "expected_in_target", 0);
        sd_index_count(&b, m, "observed_unique", 0);
        sd_index_count(&b, m, "duplicated", 1);
        sd_index_count(&b, m, "lost", 1);
        sd_index_count(&b, m, "unexpected", 1);
        if (m->ended_ms >= 0) sd_buf_printf(&b, "<td class=\"n\">%.1f</td>", (double)(m->ended_ms - m->started_ms) / 1000.0);
        else sd_buf_puts(&b, "<td class=\"n\">unfinished</td>");
        sd_buf_puts(&b, "<td><a href=\"");
        sd_h(&b, rel);
        sd_buf_puts(&b, "/report.html\">report.html</a> <a href=\"");
        sd_h(&b, rel);
        sd_buf_puts(&b, "/report.md\">report.md</a></td></tr>\n");
    }
    sd_buf_puts(&b, "</table>\n<p>All checks of all scenarios in one JUnit document: <a href=\"junit.xml\">junit.xml</a>.</p>\n</body></html>\n");
    sd_err_t e = sd_util_write_file(path, b.data, b.len, err, errlen);
    sd_buf_free(&b);
    return e;
}

sd_err_t sd_report_index(const char *out_dir, char *const *run_dirs, int n, char *err, size_t errlen) {
    sd_report_model_t **ms = sd_util_xcalloc((size_t)(n ? n : 1), sizeof(*ms));
    int k = 0;
    sd_err_t e = SD_OK;
    for (int i = 0; i < n; i++) {
        char lerr[1024];
        if (sd_report_model_load(run_dirs[i], &ms[k], lerr, sizeof(lerr)) == SD_OK) k++;
        else if (!e) e = sd_err_set(err, errlen, SD_ERR_IO, "index: %s", lerr);
    }
    char *abs = sd_util_abspath(out_dir);
    char *html = sd_util_fmt("%s/index.html", abs), *junit = sd_util_fmt("%s/junit.xml", abs);
    char werr[1024];
    sd_err_t we = sd_index_html((const sd_report_model_t *const *)ms, k, abs, html, werr, sizeof(werr));
    if (!we) we = sd_report_junit_many((const sd_report_model_t *const *)ms, k, junit, werr, sizeof(werr));
    if (we && !e) e = sd_err_set(err, errlen, we, "%s", werr);
    for (int i = 0; i < k; i++) sd_report_model_free(ms[i]);
    free(ms);
    free(abs);
    free(html);
    free(junit);
    return e;
}
