/* html.c - report.html: one self-contained file (charts inlined as SVG,
 * no script, no outside resource), readable offline and printable.
 *
 * Order: the verdict and what it rests on, the counts, the charts, every
 * check, the faults in order with where each landed, then each anomaly
 * bucket with its ids (up to 50 shown; all of them in export/ beside it),
 * each traced to what the ledger knows: when it was sent, to which partition
 * and offset, which fault it followed, how many times the harness sent it,
 * which writer wrote each copy. Then the steps, the pipeline incarnations
 * with their logs, warnings and what was not judged, the pipeline's own
 * account, and how to reproduce the run. Everything that comes from the
 * pipeline, a sink or the scenario is escaped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counts.h"
#include "util.h"
#include "report.h"

#define SD_HTML_IDS 50


static void sd_html_svg(sd_buf_t *b, const char *run_dir, const char *name, const char *alt) {
    char *path = sd_util_fmt("%s/charts/%s.svg", run_dir, name);
    char *svg = NULL;
    size_t len = 0;
    if (sd_util_read_file(path, &svg, &len, NULL, 0) == SD_OK) {
        /* drop the XML prolog and doctype: inline SVG starts at <svg */
        char *start = strstr(svg, "<svg");
        sd_buf_puts(b, "<figure class=\"chart\" id=\"chart-");
        sd_h(b, name);
        sd_buf_puts(b, "\" role=\"img\" aria-label=\"");
        sd_h(b, alt);
        sd_buf_puts(b, "\">");
        if (start) sd_buf_puts(b, start);
        sd_buf_puts(b, "</figure>\n");
    }
    free(svg);
    free(path);
}

static void sd_html_ids(sd_buf_t *b, const sd_rbucket_t *bk, int raw) {
    sd_buf_puts(b, "<h3>");
    sd_h(b, bk->bucket);
    sd_buf_puts(b, " in sink <code>");
    sd_h(b, bk->sink);
    sd_buf_printf(b, "</code>: %lld ids</h3>\n", (long long)bk->total);
    sd_buf_puts(b, "<p class=\"note\">");
    if (bk->total > bk->nids) sd_buf_printf(b, "The first %d are shown. ", bk->nids);
    sd_buf_puts(b, "All of them: <a href=\"export/");
    sd_h(b, bk->sink);
    sd_buf_puts(b, "-");
    sd_h(b, bk->bucket);
    sd_buf_puts(b, ".csv\">export/");
    sd_h(b, bk->sink);
    sd_buf_puts(b, "-");
    sd_h(b, bk->bucket);
    sd_buf_puts(b, ".csv</a>.</p>\n<table><tr><th>id</th><th>copies</th>");
    if (!raw) sd_buf_puts(b, "<th>times sent</th>");
    sd_buf_puts(b, "<th>written by (one entry per copy)</th>");
    if (!raw) sd_buf_puts(b, "<th>kind</th><th>first sent at</th><th>partition@offset</th><th>after</th>");
    sd_buf_puts(b, "</tr>\n");
    for (int k = 0; k < bk->nids; k++) {
        const sd_rid_t *id = &bk->ids[k];
        sd_buf_puts(b, "<tr><td><code>");
        sd_h(b, id->id);
        sd_buf_printf(b, "</code></td><td class=\"n\">%lld</td>", (long long)id->copies);
        if (!raw) sd_buf_printf(b, "<td class=\"n\">%lld</td>", (long long)id->sends);
        sd_buf_puts(b, "<td>");
        sd_h(b, id->writers);
        sd_buf_puts(b, "</td>");
        if (!raw) {
            sd_buf_puts(b, "<td>");
            sd_h(b, id->kind);
            sd_buf_puts(b, "</td><td>");
            sd_h(b, id->sent_at);
            sd_buf_puts(b, "</td><td>");
            if (id->partition >= 0) sd_buf_printf(b, "%d@%lld", id->partition, (long long)id->offset);
            sd_buf_puts(b, "</td><td>");
            sd_h(b, id->after_fault);
            sd_buf_puts(b, "</td>");
        }
        sd_buf_puts(b, "</tr>\n");
    }
    sd_buf_puts(b, "</table>\n");
}

/* One table row of n escaped text cells. */
static void sd_html_row(sd_buf_t *b, const char *const *cells, int n) {
    sd_buf_puts(b, "<tr>");
    for (int i = 0; i < n; i++) {
        sd_buf_puts(b, "<td>");
        sd_h(b, cells[i]);
        sd_buf_puts(b, "</td>");
    }
    sd_buf_puts(b, "</tr>\n");
}

/* The page's top: the verdict, the one-line summary, latency, what the
 * run did not finish, and the run's identity. */
static void sd_html_top(sd_buf_t *b, const sd_report_model_t *m) {
    const char *cls = sd_report_verdict_class(m->verdict), *V = sd_report_verdict_word(m->verdict);
    char vt[32];
    snprintf(vt, sizeof(vt), ": %s", V);
    sd_report_html_head(b, "streamdrill: ", m->scenario, vt);
    sd_buf_printf(b, "<div class=\"verdict %s\" id=\"verdict\"><h1>", cls);
    sd_h(b, m->scenario);
    sd_buf_printf(b, ": %s</h1>", V);
    if (m->message[0]) {
        sd_buf_puts(b, "<div>");
        sd_h(b, m->message);
        sd_buf_puts(b, " (reason: <code>");
        sd_h(b, m->reason);
        sd_buf_puts(b, "</code>)</div>");
    }
    sd_buf_puts(b, "</div>\n");
    int64_t exp = sd_report_count(m, "expected_in_target"), gexp = sd_report_count(m, "groups_expected");
    if (gexp >= 0)
        sd_buf_printf(b, "<p id=\"summary\">Result model: <b>%lld</b> of <b>%lld</b> expected groups correct; <b>%lld</b> wrong value, "
                          "<b>%lld</b> missing, <b>%lld</b> unexpected, <b>%lld</b> written twice, <b>%lld</b> written early, %lld pending; "
                          "%lld quarantined. Profile <code>",
                      (long long)sd_report_count(m, "groups_correct"), (long long)gexp, (long long)sd_report_count(m, "wrong_value"),
                      (long long)sd_report_count(m, "missing_group"), (long long)sd_report_count(m, "unexpected_group"),
                      (long long)sd_report_count(m, "emitted_twice"), (long long)sd_report_count(m, "emitted_early"),
                      (long long)sd_report_count(m, "groups_pending"), (long long)sd_report_count(m, "quarantined"));
    else if (exp >= 0)
        sd_buf_printf(b, "<p id=\"summary\"><b>%lld</b> unique ids in the target for <b>%lld</b> expected: <b>%lld</b> duplicated, <b>%lld</b> lost, "
                          "<b>%lld</b> unexpected; %lld quarantined. Profile <code>",
                      (long long)sd_report_count(m, "observed_unique"), (long long)exp, (long long)sd_report_count(m, "duplicated"),
                      (long long)sd_report_count(m, "lost"), (long long)sd_report_count(m, "unexpected"), (long long)sd_report_count(m, "quarantined"));
    if (exp >= 0 || gexp >= 0) { sd_h(b, m->profile); sd_buf_puts(b, "</code>.</p>\n"); }
    int64_t p50 = sd_report_count(m, "latency_p50_ms");
    if (p50 >= 0)
        sd_buf_printf(b, "<p>End-to-end latency: p50 %lld ms, p95 %lld ms, p99 %lld ms, max %lld ms (%lld ids).</p>\n", (long long)p50,
                      (long long)sd_report_count(m, "latency_p95_ms"), (long long)sd_report_count(m, "latency_p99_ms"),
                      (long long)sd_report_count(m, "latency_max_ms"), (long long)sd_report_count(m, "latency_samples"));
    if (m->nmissing) {
        sd_buf_puts(b, "<h2>Missing: the run did not finish</h2><ul>");
        for (int i = 0; i < m->nmissing; i++) { sd_buf_puts(b, "<li>"); sd_h(b, m->missing[i]); sd_buf_puts(b, "</li>"); }
        sd_buf_puts(b, "</ul>\n");
    }
    if (m->description[0]) {
        sd_buf_puts(b, "<p class=\"note\">");
        sd_h(b, m->description);
        sd_buf_puts(b, "</p>\n");
    }
    sd_buf_puts(b, "<table><tr><th>scenario file</th><td><code>");
    sd_h(b, m->file);
    sd_buf_puts(b, "</code></td></tr><tr><th>seed / tag</th><td>");
    sd_h(b, m->seed);
    sd_buf_puts(b, " / <code>");
    sd_h(b, m->tag);
    sd_buf_puts(b, "</code></td></tr><tr><th>broker</th><td>");
    sd_h(b, m->broker_kind);
    sd_buf_puts(b, " <code>");
    sd_h(b, m->brokers);
    sd_buf_puts(b, "</code></td></tr><tr><th>topic</th><td><code>");
    sd_h(b, m->topic);
    if (m->topic_config[0]) { sd_buf_puts(b, "</code> <code>"); sd_h(b, m->topic_config); }
    if (m->producer[0]) { sd_buf_puts(b, "</code></td></tr><tr><th>producer</th><td><code>"); sd_h(b, m->producer); }
    sd_buf_puts(b, "</code></td></tr><tr><th>started</th><td>");
    sd_h(b, m->started_at);
    if (m->ended_ms >= 0) sd_buf_printf(b, " (%.1f s)", (double)(m->ended_ms - m->started_ms) / 1000.0);
    sd_buf_puts(b, "</td></tr>");
    if (m->vars[0]) { sd_buf_puts(b, "<tr><th>variables</th><td><code>"); sd_h(b, m->vars); sd_buf_puts(b, "</code></td></tr>"); }
    sd_buf_puts(b, "</table>\n");
}

/* What was judged, verdict first: the checks (failed ones first), the
 * anomalies with their ids, the faults and where they landed, the
 * pipeline's own account, the charts, then every count. */
static void sd_html_checks(sd_buf_t *b, const sd_report_model_t *m) {
    sd_buf_puts(b, "<h2>Checks</h2>\n<table id=\"checks\"><tr><th>check</th><th>expected</th><th>actual</th><th>result</th><th>detail</th></tr>\n");
    /* the failed ones first */
    for (int k = 0; k < 2 * m->nchecks; k++) {
        const sd_rcheck_t *c = &m->checks[k % m->nchecks];
        if ((k < m->nchecks) == c->pass) continue;
        sd_buf_puts(b, "<tr><td>");
        sd_h(b, c->name);
        sd_buf_puts(b, "</td><td>");
        sd_h(b, c->expected);
        sd_buf_puts(b, "</td><td class=\"n\">");
        sd_h(b, c->actual);
        sd_buf_printf(b, "</td><td class=\"%s\">%s</td><td>", c->pass ? "ok" : "bad", c->pass ? "pass" : "FAIL");
        sd_h(b, c->detail);
        sd_buf_puts(b, "</td></tr>\n");
    }
    if (!m->nchecks) sd_buf_puts(b, "<tr><td colspan=\"5\">none: the run ended before the reconciliation</td></tr>\n");
    sd_buf_puts(b, "</table>\n");
}

static void sd_html_faults(sd_buf_t *b, const sd_report_model_t *m) {
    sd_buf_puts(b, "<h2>Faults</h2>\n");
    if (!m->nfaults) sd_buf_puts(b, "<p>None.</p>\n");
    else {
        sd_buf_puts(b, "<table id=\"faults\"><tr><th>t (s)</th><th>fault</th><th>detail</th><th>incarnation</th><th>where it landed</th></tr>\n");
        for (int i = 0; i < m->nfaults; i++) {
            const sd_rfault_t *f = &m->faults[i];
            sd_buf_printf(b, "<tr><td class=\"n\">%.2f</td><td>", (double)f->t_ms / 1000.0);
            sd_h(b, f->kind);
            sd_buf_puts(b, "</td><td>");
            sd_h(b, f->detail);
            sd_buf_printf(b, "</td><td class=\"n\">%d</td><td>", f->incarnation);
            sd_h(b, f->landing);
            sd_buf_puts(b, "</td></tr>\n");
        }
        sd_buf_puts(b, "</table>\n");
    }
}

static void sd_html_anomalies(sd_buf_t *b, const sd_report_model_t *m) {
    sd_buf_puts(b, "<h2>Anomalies</h2>\n");
    if (!m->nbuckets && !m->nunexpected && !m->ngroups) sd_buf_puts(b, "<p>None: every id is where the contract says.</p>\n");
    for (int i = 0; i < m->nbuckets; i++) sd_html_ids(b, &m->buckets[i], 0);
    for (int i = 0; i < m->nunexpected; i++) sd_html_ids(b, &m->unexpected[i], 1);
    if (m->ngroups) {
        sd_buf_printf(b, "<h3>Result groups: %lld flagged (pending ones included)%s</h3>\n<table id=\"groups\"><tr><th>sink</th>"
                          "<th>window start</th><th>keys</th><th>flags</th><th>detail</th></tr>\n",
                      (long long)m->groups_total, m->groups_total > m->ngroups ? ", the first listed" : "");
        for (int i = 0; i < m->ngroups; i++) {
            const sd_rgroup_t *g = &m->groups[i];
            sd_html_row(b, (const char *const[]){g->sink, g->window_start, g->keys, g->buckets, g->detail}, 5);
        }
        sd_buf_puts(b, "</table>\n");
    }
}

static void sd_html_account(sd_buf_t *b, const sd_report_model_t *m) {
    if (m->naccounts) {
        sd_buf_puts(b, "<h2>The pipeline's own account</h2>\n<table><tr><th>query</th><th>batches reported</th><th>input rows</th>"
                        "<th>ledger messages at those offsets</th><th>batches disagreeing</th><th>dropped by watermark</th><th>late events sent there</th></tr>\n");
        for (int i = 0; i < m->naccounts; i++) {
            const sd_raccount_t *a = &m->accounts[i];
            sd_buf_puts(b, "<tr><td>");
            sd_h(b, a->query);
            sd_buf_printf(b, "</td><td class=\"n\">%lld</td><td class=\"n\">%lld</td><td class=\"n\">%lld</td><td class=\"n %s\">%lld</td>"
                              "<td class=\"n\">%lld</td><td class=\"n\">%lld</td></tr>\n",
                          (long long)a->batches, (long long)a->spark_rows, (long long)a->ledger_rows, a->disagree ? "bad" : "",
                          (long long)a->disagree, (long long)a->spark_dropped, (long long)a->ledger_late);
        }
        sd_buf_puts(b, "</table>\n");
    }
}

static void sd_html_charts(sd_buf_t *b, const sd_report_model_t *m) {
    sd_buf_puts(b, "<h2>Charts</h2>\n");
    sd_html_svg(b, m->run_dir, "timeline", "events sent, acknowledged and seen in the target over time, with the faults");
    if (m->series_ms > 0)
        sd_buf_printf(b, "<p>Messages sent and acknowledged counted as the run went, in buckets of %lld ms (run.db <code>series</code>).</p>\n",
                      (long long)m->series_ms);
    sd_html_svg(b, m->run_dir, "latency", "end-to-end latency quantiles over time");
    sd_html_svg(b, m->run_dir, "batches", "rows per batch, first runs and re-runs");
    sd_html_svg(b, m->run_dir, "state", "state rows kept after each batch, and the watermark");

}

/* Every count, grouped as counts.h groups them (the run, a result model,
 * the pipeline's own account) and each with its meaning. */
static const struct {
    const char *name, *meaning;
    int kind;
} sd_html_count_info[] = {
#define SD_HTML_COUNT(name, kind, grows, meaning) {#name, meaning, kind},
    SD_COUNTS(SD_HTML_COUNT)
#undef SD_HTML_COUNT
};

static void sd_html_counts(sd_buf_t *b, const sd_report_model_t *m) {
    static const char *const groups[] = {"the run", "the result model", "the pipeline's own account of batches and state"};
    sd_buf_puts(b, "<h2>Every count</h2>\n<table class=\"counts\" id=\"counts\"><tr><th>count</th><th>value</th><th>meaning</th></tr>\n");
    const size_t ninfo = sizeof(sd_html_count_info) / sizeof(sd_html_count_info[0]);
    for (int g = 0; g < 3; g++) {
        int said = 0;
        for (int i = 0; i < m->ncounts; i++) {
            const char *meaning = "";
            int kind = SD_CK_RUN;
            for (size_t k = 0; k < ninfo; k++)
                if (!strcmp(sd_html_count_info[k].name, m->counts[i].name)) meaning = sd_html_count_info[k].meaning, kind = sd_html_count_info[k].kind;
            if (kind != g) continue;
            if (!said++) sd_buf_printf(b, "<tr><th colspan=\"3\">%s</th></tr>\n", groups[g]);
            sd_buf_puts(b, "<tr><td>");
            sd_h(b, m->counts[i].name);
            if (m->counts[i].value < 0) sd_buf_puts(b, "</td><td class=\"n\">n/a</td><td class=\"note\">");
            else sd_buf_printf(b, "</td><td class=\"n\">%lld</td><td class=\"note\">", (long long)m->counts[i].value);
            sd_h(b, meaning);
            sd_buf_puts(b, "</td></tr>\n");
        }
    }
    sd_buf_puts(b, "</table>\n");
}

static void sd_html_results(sd_buf_t *b, const sd_report_model_t *m) {
    sd_html_checks(b, m);
    sd_html_anomalies(b, m);
    sd_html_faults(b, m);
    sd_html_account(b, m);
    sd_html_charts(b, m);
}

/* The runbook: the checkpoint, each incarnation's command and version, the
 * committed progress around each fault (report.md's section, as HTML). */
static void sd_html_runbook(sd_buf_t *b, const sd_report_model_t *m) {
    sd_buf_puts(b, "<h2>Runbook</h2>\n<table id=\"runbook\"><tr><th>checkpoint</th><td><code>");
    sd_h(b, m->checkpoint[0] ? m->checkpoint : "not recorded");
    sd_buf_puts(b, "</code></td></tr></table>\n");
    if (m->nincs) {
        sd_buf_puts(b, "<table id=\"runbook-versions\"><tr><th>incarnation</th><th>command</th><th>version</th><th>resumed from</th>"
                       "<th>last commit</th></tr>\n");
        for (int i = 0; i < m->nincs; i++) {
            const sd_rinc_t *c = &m->incs[i];
            char n[16];
            snprintf(n, sizeof(n), "%d", c->n);
            sd_html_row(b, (const char *const[]){n, c->argv, c->version && c->version[0] ? c->version : "not declared",
                                                 c->resumed && c->resumed[0] ? c->resumed : "no commit yet",
                                                 c->reached && c->reached[0] ? c->reached : "none"}, 5);
        }
        sd_buf_puts(b, "</table>\n");
    }
    if (m->nfaults) {
        int ctx = 0;
        for (int i = 0; i < m->nfaults; i++) ctx |= m->faults[i].context && m->faults[i].context[0];
        sd_buf_printf(b, "<table id=\"runbook-progress\"><tr><th>t (s)</th><th>fault</th><th>committed before</th><th>committed after</th>%s</tr>\n",
                      ctx ? "<th>at the fault, by the pipeline's own records</th>" : "");
        for (int i = 0; i < m->nfaults; i++) {
            const sd_rfault_t *f = &m->faults[i];
            char t[32];
            snprintf(t, sizeof(t), "%.2f", (double)f->t_ms / 1000.0);
            sd_html_row(b, (const char *const[]){t, f->kind, f->before[0] ? f->before : "no commit yet", f->after[0] ? f->after : "no commit after it",
                                                 f->context ? f->context : ""}, ctx ? 5 : 4);
        }
        sd_buf_puts(b, "</table>\n");
    }
    /* each fault's recovery figures (report.md's table) */
    int header = 0;
    for (int i = 0; i < m->nfaults; i++) {
        const sd_rfault_t *f = &m->faults[i];
        if (!f->has_recovery) continue;
        if (!header++)
            sd_buf_puts(b, "<h3>Recovery from each fault</h3>\n<table id=\"recovery\"><tr><th>line</th><th>fault</th><th>recovery</th><th>by</th>"
                           "<th>detect</th><th>reconnect</th><th>replayed input</th><th>rewritten rows</th><th>batches re-run</th><th>operator</th><th>latency p50 / p99 before</th>"
                           "<th>during</th><th>after</th><th>not measured</th></tr>\n");
        static const int cols[] = {SD_FIG_recovery_s, -1, SD_FIG_detect_s, SD_FIG_reconnect_s, SD_FIG_replayed_input, SD_FIG_rewritten_rows, SD_FIG_batches_rerun,
                                   SD_FIG_operator_s, SD_FIG_latency_p50_before_ms, SD_FIG_latency_p50_during_ms, SD_FIG_latency_p50_after_ms};
        enum { NC = 2 + (int)(sizeof(cols) / sizeof(cols[0])) + 1 };
        sd_buf_t cell[NC];
        for (int c = 0; c < NC; c++) sd_buf_init(&cell[c]);
        sd_buf_printf(&cell[0], "%d", f->line);
        sd_buf_puts(&cell[1], f->kind);
        for (int c = 0; c < NC - 3; c++) {
            if (cols[c] < 0) sd_buf_puts(&cell[2 + c], f->basis);
            else sd_report_figure_cell(&cell[2 + c], f, cols[c]);
            if (cols[c] >= SD_FIG_latency_p50_before_ms) {
                sd_buf_puts(&cell[2 + c], " / ");
                sd_report_figure_cell(&cell[2 + c], f, cols[c] + 1);
            }
        }
        sd_buf_puts(&cell[NC - 1], f->why);
        const char *cells[NC];
        for (int c = 0; c < NC; c++) cells[c] = cell[c].data ? cell[c].data : "";
        sd_html_row(b, cells, NC);
        for (int c = 0; c < NC; c++) sd_buf_free(&cell[c]);
    }
    if (header) {
        sd_buf_t t;
        sd_buf_init(&t);
        sd_report_evidence_text(&t, m);
        sd_buf_puts(b, "</table>\n<p class=\"evidence\">");
        sd_h(b, t.data ? t.data : "");
        sd_buf_puts(b, "</p>\n");
        sd_buf_free(&t);
    }
}

/* What the run did: its steps, the pipeline's incarnations, the warnings. */
static void sd_html_run(sd_buf_t *b, const sd_report_model_t *m) {
    sd_buf_puts(b, "<h2>Steps</h2>\n<table id=\"steps\"><tr><th>line</th><th>step</th><th>status</th><th>detail</th></tr>\n");
    for (int i = 0; i < m->nsteps; i++) {
        const sd_rstep_t *p = &m->steps[i];
        sd_buf_printf(b, "<tr><td class=\"n\">%d</td><td><code>", p->line);
        sd_h(b, p->text);
        /* a step that did not do what it says stands out: never a plain "ok"-like cell */
        sd_buf_puts(b, sd_report_step_bad(p->status) ? "</code></td><td class=\"bad\">" : "</code></td><td>");
        sd_h(b, p->status);
        sd_buf_puts(b, "</td><td>");
        sd_h(b, p->detail);
        sd_buf_puts(b, "</td></tr>\n");
    }
    sd_buf_puts(b, "</table>\n");
    if (m->nincs) {
        sd_buf_puts(b, "<h2>Pipeline incarnations</h2>\n<table><tr><th>#</th><th>pid</th><th>command</th><th>ended by</th><th>exit</th><th>logs</th></tr>\n");
        for (int i = 0; i < m->nincs; i++) {
            const sd_rinc_t *c = &m->incs[i];
            sd_buf_printf(b, "<tr><td class=\"n\">%d</td><td class=\"n\">%d</td><td><code>", c->n, c->pid);
            sd_h(b, c->argv);
            sd_buf_puts(b, "</code></td><td>");
            sd_h(b, c->ended_by);
            sd_buf_puts(b, "</td><td>");
            if (c->exit_signal > 0) sd_buf_printf(b, "signal %d", c->exit_signal);
            else if (c->exit_code >= 0) sd_buf_printf(b, "code %d", c->exit_code);
            const char *lo = strrchr(c->log_out, '/'), *le = strrchr(c->log_err, '/');
            sd_buf_puts(b, "</td><td><a href=\"logs/");
            sd_h(b, lo ? lo + 1 : c->log_out);
            sd_buf_puts(b, "\">stdout</a> <a href=\"logs/");
            sd_h(b, le ? le + 1 : c->log_err);
            sd_buf_puts(b, "\">stderr</a></td></tr>\n");
        }
        sd_buf_puts(b, "</table>\n");
    }
    int engine = 0;
    for (int i = 0; i < m->nincs; i++) engine |= m->incs[i].has_engine;
    if (engine) {
        sd_buf_puts(b, "<h2>Kafka Streams' own account</h2>\n<p>What each incarnation's log says of it (Kafka Streams' INFO lines: its state "
                       "changes, its changelogs restored); the application's word, not the harness's observation. Times are since the "
                       "incarnation started.</p>\n<table><tr><th>#</th><th>RUNNING after</th><th>rebalances</th><th>restored</th>"
                       "<th>restores done after</th><th>last state</th><th>states</th></tr>\n");
        for (int i = 0; i < m->nincs; i++) {
            const sd_rinc_t *c = &m->incs[i];
            if (!c->has_engine) continue;
            sd_buf_printf(b, "<tr><td class=\"n\">%d</td><td class=\"n\">", c->n);
            if (c->running_ms >= 0) sd_buf_printf(b, "%.1f s", (double)c->running_ms / 1000.0);
            else sd_buf_puts(b, "never");
            sd_buf_printf(b, "</td><td class=\"n\">%d</td><td class=\"n\">%lld records (%d changelogs)</td><td class=\"n\">", c->rebalances,
                          (long long)c->restored, c->restores);
            if (c->restored_ms >= 0) sd_buf_printf(b, "%.1f s", (double)c->restored_ms / 1000.0);
            sd_buf_puts(b, "</td><td>");
            sd_h(b, c->last_state);
            sd_buf_puts(b, "</td><td>");
            sd_h(b, c->states);
            sd_buf_puts(b, "</td></tr>\n");
        }
        sd_buf_puts(b, "</table>\n");
    }
    if (m->nwarnings) {
        sd_buf_puts(b, "<h2>Warnings and what was not judged</h2>\n<ul>\n");
        for (int i = 0; i < m->nwarnings; i++) {
            sd_buf_printf(b, "<li>%.2f s <code>", (double)m->warnings[i].t_ms / 1000.0);
            sd_h(b, m->warnings[i].kind);
            sd_buf_puts(b, "</code>: ");
            sd_h(b, m->warnings[i].detail);
            sd_buf_puts(b, "</li>\n");
        }
        sd_buf_puts(b, "</ul>\n");
    }
}

/* The page top to bottom, the way report.md is written in markdown.c. */
static sd_err_t sd_html_write(const sd_report_model_t *m, const char *path, char *err, size_t errlen) {
    sd_buf_t b;
    sd_buf_init(&b);
    sd_html_top(&b, m);
    sd_html_results(&b, m);
    sd_html_run(&b, m);
    sd_html_runbook(&b, m);
    sd_html_counts(&b, m);
    sd_buf_puts(&b, "<h2>Reproduce</h2>\n<pre id=\"reproduce\">");
    sd_h(&b, m->reproduce);
    sd_buf_puts(&b, "</pre>\n<p class=\"note\">streamdrill ");
    sd_h(&b, m->version);
    sd_buf_puts(&b, ". Every figure on this page is rebuilt from run.db by <code>streamdrill report</code>; the reconciliation export "
                    "for auditors is in <a href=\"export/manifest.json\">export/</a>.</p>\n</body></html>\n");
    sd_err_t e = sd_util_write_file(path, b.data, b.len, err, errlen);
    sd_buf_free(&b);
    return e;
}

const sd_report_writer_t sd_report_html = {"html", "report.html", sd_html_write};
