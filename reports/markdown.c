/* markdown.c - report.md: what a person reads in ten seconds (a CI job
 * summary), then the evidence: counts, checks, each failed check with up
 * to 20 sample ids (for duplicates the copy count and which writer wrote
 * each copy), faults with where each kill landed, the steps, warnings and
 * what could not be judged, and how to reproduce the run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "report.h"

static void sd_md_ids(sd_buf_t *b, const sd_rbucket_t *bk) {
    sd_buf_printf(b, "\n**%s** in sink ", bk->bucket);
    sd_report_md_code(b, bk->sink);
    sd_buf_printf(b, ": %lld ids", (long long)bk->total);
    if (bk->total > bk->nids) sd_buf_printf(b, " (the first %d below)", bk->nids);
    sd_buf_puts(b, "; all of them in `export/");
    sd_report_md_escape(b, bk->sink);
    sd_buf_printf(b, "-%s.csv`\n\n", bk->bucket);
    sd_buf_puts(b, "| id | copies | times sent | written by | first sent at | partition@offset | after |\n|---|---:|---:|---|---|---|---|\n");
    for (int k = 0; k < bk->nids; k++) {
        const sd_rid_t *id = &bk->ids[k];
        sd_buf_puts(b, "| ");
        sd_report_md_code(b, id->id);
        sd_buf_printf(b, " | %lld | %lld | ", (long long)id->copies, (long long)id->sends);
        sd_report_md_escape(b, id->writers);
        sd_buf_puts(b, " | ");
        sd_buf_puts(b, id->sent_at);
        sd_buf_puts(b, " | ");
        if (id->partition >= 0) sd_buf_printf(b, "%d@%lld", id->partition, (long long)id->offset);
        sd_buf_puts(b, " | ");
        sd_report_md_escape(b, id->after_fault);
        sd_buf_puts(b, " |\n");
    }
}

/* A result model's flagged groups, as a table. */
static void sd_md_groups(sd_buf_t *bp, const sd_report_model_t *m) {
    if (m->ngroups) {
        sd_buf_printf(bp, "\n## Result groups\n\n%lld groups flagged (pending ones included)%s.\n\n| sink | window start | keys | flags | detail |\n|---|---|---|---|---|\n",
                      (long long)m->groups_total, m->groups_total > m->ngroups ? " (the first listed)" : "");
        for (int i = 0; i < m->ngroups; i++) {
            const sd_rgroup_t *g = &m->groups[i];
            sd_buf_puts(bp, "| ");
            sd_report_md_escape(bp, g->sink);
            sd_buf_printf(bp, " | %s | ", g->window_start);
            sd_report_md_escape(bp, g->keys ? g->keys : "");
            sd_buf_printf(bp, " | %s | ", g->buckets ? g->buckets : "");
            sd_report_md_escape(bp, g->detail ? g->detail : "");
            sd_buf_puts(bp, " |\n");
        }
    }
}

/* The engine's own account (Kafka Streams' log): what it says of itself,
 * beside what the harness saw. */
static void sd_report_engine_md(sd_buf_t *b, const sd_report_model_t *m) {
    int any = 0;
    for (int i = 0; i < m->nincs; i++) any |= m->incs[i].has_engine;
    if (!any) return;
    sd_buf_puts(b, "\n## Kafka Streams' own account\n\nWhat each incarnation's log says of it (Kafka Streams' INFO lines: its state changes, "
                   "its changelogs restored); the application's word, not the harness's observation. Times are since the incarnation "
                   "started.\n\n| # | RUNNING after | rebalances | restored | restores done after | last state | states |\n"
                   "|---:|---:|---:|---:|---:|---|---|\n");
    for (int i = 0; i < m->nincs; i++) {
        const sd_rinc_t *c = &m->incs[i];
        if (!c->has_engine) continue;
        sd_buf_printf(b, "| %d | ", c->n);
        if (c->running_ms >= 0) sd_buf_printf(b, "%.1fs", (double)c->running_ms / 1000.0);
        else sd_buf_puts(b, "never");
        sd_buf_printf(b, " | %d | %lld records (%d changelogs) | ", c->rebalances, (long long)c->restored, c->restores);
        if (c->restored_ms >= 0) sd_buf_printf(b, "%.1fs", (double)c->restored_ms / 1000.0);
        sd_buf_puts(b, " | ");
        sd_report_md_escape(b, c->last_state);
        sd_buf_puts(b, " | ");
        sd_report_md_escape(b, c->states);
        sd_buf_puts(b, " |\n");
    }
}

/* The timeline and state charts under the verdict, with the resolution
 * of the series the timeline's counts come from. */
static void sd_markdown_charts(sd_buf_t *b, const sd_report_model_t *m) {
    char *png = sd_util_fmt("%s/charts/timeline.png", m->run_dir);
    if (sd_util_exists(png)) {
        sd_buf_puts(b, "![events sent and seen in the target over time, with the faults](charts/timeline.png)\n\n");
        if (m->series_ms > 0)
            sd_buf_printf(b, "Messages sent and acknowledged counted as the run went, in buckets of %lld ms (run.db `series`).\n\n",
                          (long long)m->series_ms);
    }
    free(png);
    png = sd_util_fmt("%s/charts/state.png", m->run_dir);
    if (sd_util_exists(png)) sd_buf_puts(b, "![state rows kept after each batch, and the watermark](charts/state.png)\n\n");
    free(png);
}

static sd_err_t sd_markdown_write(const sd_report_model_t *m, const char *path, char *err, size_t errlen) {
    sd_buf_t b;
    sd_buf_init(&b);
    const char *V = sd_report_verdict_word(m->verdict);
    sd_buf_puts(&b, "# streamdrill: ");
    sd_report_md_escape(&b, m->scenario);
    sd_buf_printf(&b, ": %s\n\n", V);
    if (m->message[0]) {
        sd_buf_puts(&b, "> ");
        sd_report_md_escape(&b, m->message);
        sd_buf_printf(&b, " (reason: `%s`)\n\n", m->reason[0] ? m->reason : "none");
    }
    int64_t uniq = sd_report_count(m, "observed_unique"), exp = sd_report_count(m, "expected_in_target");
    int64_t dup = sd_report_count(m, "duplicated"), lost = sd_report_count(m, "lost"), unx = sd_report_count(m, "unexpected");
    int64_t gexp = sd_report_count(m, "groups_expected");
    if (gexp >= 0)
        sd_buf_printf(&b, "Result model: **%lld** of **%lld** expected groups correct; %lld wrong value, %lld missing, %lld unexpected, "
                      "%lld written twice, %lld written early, %lld pending; %lld quarantined. Profile `%s`.\n\n",
                      (long long)sd_report_count(m, "groups_correct"), (long long)gexp, (long long)sd_report_count(m, "wrong_value"),
                      (long long)sd_report_count(m, "missing_group"), (long long)sd_report_count(m, "unexpected_group"),
                      (long long)sd_report_count(m, "emitted_twice"), (long long)sd_report_count(m, "emitted_early"),
                      (long long)sd_report_count(m, "groups_pending"), (long long)sd_report_count(m, "quarantined"), m->profile);
    else if (exp >= 0)
        sd_buf_printf(&b, "**%lld** unique ids in the target for **%lld** expected: %lld duplicated, %lld lost, %lld unexpected; %lld quarantined. Profile `%s`.\n\n",
                      (long long)uniq, (long long)exp, (long long)dup, (long long)lost, (long long)unx,
                      (long long)sd_report_count(m, "quarantined"), m->profile);
    int64_t p50 = sd_report_count(m, "latency_p50_ms");
    if (p50 >= 0)
        sd_buf_printf(&b, "End-to-end latency (sent to first written in the target): p50 %lld ms, p95 %lld ms, p99 %lld ms, max %lld ms over %lld ids.\n\n",
                      (long long)p50, (long long)sd_report_count(m, "latency_p95_ms"), (long long)sd_report_count(m, "latency_p99_ms"),
                      (long long)sd_report_count(m, "latency_max_ms"), (long long)sd_report_count(m, "latency_samples"));
    sd_markdown_charts(&b, m);
    if (m->description[0]) {
        sd_buf_puts(&b, "<details><summary>Scenario</summary>\n\n");
        sd_report_md_escape(&b, m->description);
        sd_buf_puts(&b, "\n\n</details>\n\n");
    }
    sd_buf_puts(&b, "| run | |\n|---|---|\n| scenario file | ");
    sd_report_md_code(&b, m->file);
    sd_buf_puts(&b, " |\n| seed / tag | ");
    sd_report_md_escape(&b, m->seed);
    sd_buf_puts(&b, " / ");
    sd_report_md_code(&b, m->tag);
    sd_buf_puts(&b, " |\n| broker | ");
    sd_report_md_escape(&b, m->broker_kind);
    sd_buf_puts(&b, " ");
    sd_report_md_code(&b, m->brokers);
    sd_buf_puts(&b, " |\n| topic | ");
    sd_report_md_code(&b, m->topic);
    if (m->topic_config[0]) { sd_buf_puts(&b, " "); sd_report_md_code(&b, m->topic_config); }
    if (m->producer[0]) { sd_buf_puts(&b, " |\n| producer | "); sd_report_md_code(&b, m->producer); }
    sd_buf_printf(&b, " |\n| started | %s |\n", m->started_at);
    if (m->ended_ms >= 0) sd_buf_printf(&b, "| duration | %.1fs |\n", (double)(m->ended_ms - m->started_ms) / 1000.0);
    if (m->vars[0]) { sd_buf_puts(&b, "| variables | "); sd_report_md_escape(&b, m->vars); sd_buf_puts(&b, " |\n"); }
    if (m->nmissing) {
        sd_buf_puts(&b, "\n## Missing (the run did not finish)\n\n");
        for (int i = 0; i < m->nmissing; i++) { sd_buf_puts(&b, "- "); sd_report_md_escape(&b, m->missing[i]); sd_buf_putc(&b, '\n'); }
    }
    sd_buf_puts(&b, "\n## Checks\n\n| check | expected | actual | result |\n|---|---|---|---|\n");
    for (int i = 0; i < m->nchecks; i++) {
        const sd_rcheck_t *c = &m->checks[i];
        sd_buf_printf(&b, "| %s | %s | %s | %s |\n", c->name, c->expected, c->actual, c->pass ? "pass" : "**FAIL**");
    }
    if (!m->nchecks) sd_buf_puts(&b, "| (none: the run ended before reconciliation) | | | |\n");
    int any_failed = 0;
    for (int i = 0; i < m->nchecks; i++) any_failed |= !m->checks[i].pass;
    if (any_failed || m->nbuckets || m->nunexpected) {
        sd_buf_puts(&b, "\n## Anomalies\n");
        for (int i = 0; i < m->nchecks; i++)
            if (!m->checks[i].pass) {
                sd_buf_printf(&b, "\n- **%s** expected %s, got %s", m->checks[i].name, m->checks[i].expected, m->checks[i].actual);
                if (m->checks[i].detail[0]) { sd_buf_puts(&b, ": "); sd_report_md_escape(&b, m->checks[i].detail); }
            }
        sd_buf_putc(&b, '\n');
        for (int i = 0; i < m->nbuckets; i++) sd_md_ids(&b, &m->buckets[i]);
        for (int i = 0; i < m->nunexpected; i++) sd_md_ids(&b, &m->unexpected[i]);
    }
    sd_md_groups(&b, m);
    sd_buf_puts(&b, "\n## Counts\n\n| count | value |\n|---|---:|\n");
    for (int i = 0; i < m->ncounts; i++) sd_buf_printf(&b, "| %s | %lld |\n", m->counts[i].name, (long long)m->counts[i].value);
    if (m->naccounts) {
        sd_buf_puts(&b, "\n## The pipeline's own account\n\nWhat the pipeline reported about each batch (Spark's progress), beside what the ledger "
                        "holds at the same source offsets.\n\n| query | batches reported | input rows | ledger messages | batches disagreeing | "
                        "dropped by watermark | late events sent there |\n|---|---:|---:|---:|---:|---:|---:|\n");
        for (int i = 0; i < m->naccounts; i++) {
            const sd_raccount_t *a = &m->accounts[i];
            sd_buf_puts(&b, "| ");
            sd_report_md_escape(&b, a->query);
            sd_buf_printf(&b, " | %lld | %lld | %lld | %s%lld%s | %lld | %lld |\n", (long long)a->batches, (long long)a->spark_rows,
                          (long long)a->ledger_rows, a->disagree ? "**" : "", (long long)a->disagree, a->disagree ? "**" : "",
                          (long long)a->spark_dropped, (long long)a->ledger_late);
        }
    }
    sd_buf_puts(&b, "\n## Faults\n\n");
    if (!m->nfaults) sd_buf_puts(&b, "None.\n");
    else {
        sd_buf_puts(&b, "| t | fault | detail | incarnation | where it landed |\n|---:|---|---|---:|---|\n");
        for (int i = 0; i < m->nfaults; i++) {
            const sd_rfault_t *f = &m->faults[i];
            sd_buf_printf(&b, "| %.2fs | %s | ", (double)f->t_ms / 1000.0, f->kind);
            sd_report_md_escape(&b, f->detail);
            sd_buf_printf(&b, " | %d | ", f->incarnation);
            sd_report_md_escape(&b, f->landing);
            sd_buf_puts(&b, " |\n");
        }
    }
    sd_buf_puts(&b, "\n## Steps\n\n| line | step | status | detail |\n|---:|---|---|---|\n");
    for (int i = 0; i < m->nsteps; i++) {
        const sd_rstep_t *p = &m->steps[i];
        sd_buf_printf(&b, "| %d | ", p->line);
        sd_report_md_code(&b, p->text);
        sd_buf_printf(&b, sd_report_step_bad(p->status) ? " | **%s** | " : " | %s | ", p->status);
        sd_report_md_escape(&b, p->detail);
        sd_buf_puts(&b, " |\n");
    }
    if (m->nincs) {
        sd_buf_puts(&b, "\n## Pipeline incarnations\n\n| # | pid | ended by | exit | logs |\n|---:|---:|---|---|---|\n");
        for (int i = 0; i < m->nincs; i++) {
            const sd_rinc_t *c = &m->incs[i];
            char ex[32] = "";
            if (c->exit_signal > 0) snprintf(ex, sizeof(ex), "signal %d", c->exit_signal);
            else if (c->exit_code >= 0) snprintf(ex, sizeof(ex), "code %d", c->exit_code);
            const char *lo = strrchr(c->log_out, '/'), *le = strrchr(c->log_err, '/');
            sd_buf_printf(&b, "| %d | %d | %s | %s | logs/%s, logs/%s |\n", c->n, c->pid, c->ended_by, ex, lo ? lo + 1 : c->log_out, le ? le + 1 : c->log_err);
        }
    }
    sd_report_engine_md(&b, m);
    if (m->nwarnings) {
        sd_buf_puts(&b, "\n## Warnings and what was not judged\n\n");
        for (int i = 0; i < m->nwarnings; i++) {
            sd_buf_printf(&b, "- %.2fs `%s`: ", (double)m->warnings[i].t_ms / 1000.0, m->warnings[i].kind);
            sd_report_md_escape(&b, m->warnings[i].detail);
            sd_buf_putc(&b, '\n');
        }
    }
    sd_report_runbook_md(&b, m);
    sd_buf_printf(&b, "\n## Reproduce\n\n```\n%s\n```\n", m->reproduce);
    sd_buf_printf(&b, "\n<sub>streamdrill %s; every figure above is rebuilt from run.db by `streamdrill report %s`.</sub>\n", m->version, m->run_dir);
    sd_err_t e = sd_util_write_file(path, b.data, b.len, err, errlen);
    sd_buf_free(&b);
    return e;
}

/* A figure in a table cell: seconds with their unit, n/a, never, ... */
void sd_report_figure_cell(sd_buf_t *b, const sd_rfault_t *f, int k) {
    char t[48];
    sd_figure_text(k, f->fig[k], t, sizeof(t));
    int num = f->fig[k] != SD_FIG_NA && f->fig[k] != SD_FIG_UNMEASURED && f->fig[k] != SD_FIG_NEVER;
    sd_buf_printf(b, "%s%s", t, num && sd_figure_unit(k) == 's' ? " s" : num && sd_figure_unit(k) == 'm' ? " ms" : "");
    /* the reconnect wait says how many connections the idle timeout dropped */
    int64_t d = f->fig[SD_FIG_dropped_connections];
    if (k == SD_FIG_reconnect_s && d != SD_FIG_NA && d != SD_FIG_UNMEASURED && d != SD_FIG_NEVER)
        sd_buf_printf(b, " (%lld dropped)", (long long)d);
}

/* What the recovery figures rest on (summary.json's
 * faults[].recovery.evidence), as one sentence of plain text. */
void sd_report_evidence_text(sd_buf_t *b, const sd_report_model_t *m) {
    const char *p = m->progress;
    sd_buf_printf(b, "What the figures rest on: recovery by the target or its samples, rewritten rows, reconnect and operator are "
                     "observed by the harness; recovery by the commits, detect, replayed input and batches re-run are %s (the %s "
                     "progress source); latency is pipeline-claimed (the write times the pipeline stamps), and so are restore_s and "
                     "restored_records in summary.json (its own log lines).",
                  sd_figure_evidence(SD_FIG_detect_s, "", p), p && *p ? p : "drill's");
}

/* The recovery figures of every fault (recovery.c), and what could not be
 * measured. */
static void sd_report_recovery_md(sd_buf_t *b, const sd_report_model_t *m) {
    int n = 0;
    for (int i = 0; i < m->nfaults; i++) n += m->faults[i].has_recovery;
    if (!n) return;
    sd_buf_puts(b, "\n### Recovery from each fault\n\n`recovery` runs from the fault until everything sent before it was in the target (by "
                   "its write times) or covered by the pipeline's commits; `detect` from a stall's end to the first "
                   "sign of work; `reconnect` the longest a client waited on a connection an idle timeout had dropped (and how many were dropped); "
                   "`operator` the time people took in `operator` steps during the recovery. Latency is p50 / p99 of the events sent before the fault, "
                   "during the fault and its recovery, and after.\n\n"
                   "| line | fault | recovery | by | detect | reconnect | replayed input | rewritten rows | batches re-run | operator | latency before | during | after |\n"
                   "|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < m->nfaults; i++) {
        const sd_rfault_t *f = &m->faults[i];
        if (!f->has_recovery) continue;
        sd_buf_printf(b, "| %d | %s | ", f->line, f->kind);
        sd_report_figure_cell(b, f, SD_FIG_recovery_s);
        sd_buf_printf(b, " | %s | ", f->basis[0] ? f->basis : "");
        static const int cols[] = {SD_FIG_detect_s, SD_FIG_reconnect_s, SD_FIG_replayed_input, SD_FIG_rewritten_rows, SD_FIG_batches_rerun,
                                   SD_FIG_operator_s};
        for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
            sd_report_figure_cell(b, f, cols[c]);
            sd_buf_puts(b, " | ");
        }
        for (int w = 0; w < 3; w++) {
            sd_report_figure_cell(b, f, SD_FIG_latency_p50_before_ms + 2 * w);
            sd_buf_puts(b, " / ");
            sd_report_figure_cell(b, f, SD_FIG_latency_p99_before_ms + 2 * w);
            sd_buf_puts(b, w < 2 ? " | " : " |\n");
        }
    }
    sd_buf_putc(b, '\n');
    sd_report_evidence_text(b, m);
    sd_buf_putc(b, '\n');
    for (int i = 0, said = 0; i < m->nfaults; i++) {
        const sd_rfault_t *f = &m->faults[i];
        if (!f->has_recovery || !f->why[0]) continue;
        sd_buf_printf(b, "%s- line %d, %s: ", said++ ? "" : "\n", f->line, f->kind);
        sd_report_md_escape(b, f->why);
        sd_buf_putc(b, '\n');
    }
}

void sd_report_runbook_md(sd_buf_t *b, const sd_report_model_t *m) {
    static const char *const from[][2] = {{"spark", "the Spark checkpoint (offsets/N, commits/N)"},
                                          {"group", "the consumer group's committed offsets"},
                                          {"flink", "the Flink job's completed checkpoints (chk-N/_metadata, with its Kafka source's offsets)"}};
    const char *src = "the pipeline's batch markers";
    for (size_t i = 0; i < sizeof(from) / sizeof(from[0]); i++)
        if (!strcmp(m->progress_kind, from[i][0])) src = from[i][1];
    sd_buf_puts(b, "\n## Runbook\n\nWhat to attach to the change ticket: where the pipeline keeps its progress, what ran, and the "
                   "committed progress around each fault.\n\n| | |\n|---|---|\n| checkpoint | ");
    if (m->checkpoint[0]) sd_report_md_code(b, m->checkpoint);
    else sd_buf_puts(b, "not recorded");
    sd_buf_printf(b, " |\n| committed progress from | %s |\n", src);
    if (m->nincs) {
        sd_buf_puts(b, "\n| incarnation | started | command | version | resumed from | last commit |\n|---:|---:|---|---|---|---|\n");
        for (int i = 0; i < m->nincs; i++) {
            const sd_rinc_t *c = &m->incs[i];
            sd_buf_printf(b, "| %d | %.2fs | ", c->n, (double)c->started_ms / 1000.0);
            sd_report_md_code(b, c->argv);
            sd_buf_puts(b, " | ");
            if (c->version && c->version[0]) sd_report_md_escape(b, c->version);
            else sd_buf_puts(b, "not declared (`version` in the header)");
            sd_buf_puts(b, " | ");
            sd_report_md_escape(b, c->resumed && c->resumed[0] ? c->resumed : "no commit yet");
            sd_buf_puts(b, " | ");
            sd_report_md_escape(b, c->reached && c->reached[0] ? c->reached : "none");
            sd_buf_puts(b, " |\n");
        }
    }
    if (m->nfaults) {
        /* the pipeline's own records at each fault, when it keeps any the
         * harness reads (a Spark checkpoint, a Delta log) */
        int ctx = 0;
        for (int i = 0; i < m->nfaults; i++) ctx |= m->faults[i].context && m->faults[i].context[0];
        sd_buf_printf(b, "\n| t | fault | incarnation | committed before | committed after |%s\n|---:|---|---:|---|---|%s\n",
                      ctx ? " at the fault, by the pipeline's own records |" : "", ctx ? "---|" : "");
        for (int i = 0; i < m->nfaults; i++) {
            const sd_rfault_t *f = &m->faults[i];
            sd_buf_printf(b, "| %.2fs | %s | %d | ", (double)f->t_ms / 1000.0, f->kind, f->incarnation);
            sd_report_md_escape(b, f->before[0] ? f->before : "no commit yet");
            sd_buf_puts(b, " | ");
            sd_report_md_escape(b, f->after[0] ? f->after : "no commit after it");
            if (ctx) {
                sd_buf_puts(b, " | ");
                sd_report_md_escape(b, f->context && f->context[0] ? f->context : "");
            }
            sd_buf_puts(b, " |\n");
        }
    }
    sd_report_recovery_md(b, m);
}

const sd_report_writer_t sd_report_markdown = {"markdown", "report.md", sd_markdown_write};
