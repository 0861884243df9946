/* summary.c - summary.json, the interface CI scripts read.
 *
 * Stable keys (DESIGN.md): scenario, seed, verdict, counts (produced,
 * expected_in_target, observed_rows, observed_unique, duplicated, lost,
 * unexpected, late_leaked, malformed_leaked, quarantined), checks
 * [{name, pass, expected, actual, detail}], faults [{t_ms, kind, detail}].
 * Further keys are additions and may grow; none of the stable ones change. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "report.h"

static json_t *sd_ids_json(const sd_rbucket_t *b) {
    json_t *a = json_array();
    for (int k = 0; k < b->nids; k++) {
        const sd_rid_t *id = &b->ids[k];
        json_t *o = json_pack("{s:s, s:I}", "id", id->id, "copies", (json_int_t)id->copies);
        if (id->writers && id->writers[0]) json_object_set_new(o, "writers", json_string(id->writers));
        if (id->sends > 0) json_object_set_new(o, "times_sent", json_integer(id->sends));
        if (id->partition >= 0) {
            json_object_set_new(o, "partition", json_integer(id->partition));
            json_object_set_new(o, "offset", json_integer(id->offset));
        }
        if (id->sent_at[0]) json_object_set_new(o, "sent_at", json_string(id->sent_at));
        if (id->after_fault[0]) json_object_set_new(o, "after_fault", json_string(id->after_fault));
        json_array_append_new(a, o);
    }
    return a;
}

/* A fault's recovery: each figure a number (seconds for *_s) or null,
 * what each rests on (observed, engine-recorded, pipeline-claimed), with
 * the names of those that apply and could not be measured, whether it
 * caught up, and why; null for a record that is no fault of its own. */
static json_t *sd_summary_recovery(const sd_rfault_t *f, const char *progress) {
    if (!f->has_recovery) return json_null();
    json_t *o = json_object(), *unmeasured = json_array(), *evidence = json_object();
    json_object_set_new(o, "line", json_integer(f->line));
    for (int k = 0; k < SD_FIG__COUNT; k++) {
        int64_t v = f->fig[k];
        json_t *j = v == SD_FIG_NA || v == SD_FIG_UNMEASURED || v == SD_FIG_NEVER ? json_null()
                    : sd_figure_unit(k) == 's' ? json_real((double)v / 1000.0) : json_integer(v);
        json_object_set_new(o, sd_figure_name(k), j);
        if (v == SD_FIG_UNMEASURED) json_array_append_new(unmeasured, json_string(sd_figure_name(k)));
        json_object_set_new(evidence, sd_figure_name(k), json_string(sd_figure_evidence(k, f->basis, progress)));
    }
    int64_t rec = f->fig[SD_FIG_recovery_s];
    json_object_set_new(o, "caught_up", rec == SD_FIG_NEVER ? json_false() : rec == SD_FIG_UNMEASURED || rec == SD_FIG_NA ? json_null() : json_true());
    json_object_set_new(o, "caught_up_t_ms", f->caught_ms >= 0 ? json_integer(f->caught_ms) : json_null());
    json_object_set_new(o, "basis", f->basis[0] ? json_string(f->basis) : json_null());
    json_object_set_new(o, "evidence", evidence);
    json_object_set_new(o, "not_measured", unmeasured);
    json_object_set_new(o, "why", json_string(f->why));
    return o;
}

/* Each incarnation: its process, how it ended, its logs, and the engine's
 * own account of it where its log gave one. */
static json_t *sd_summary_incarnations(const sd_report_model_t *m) {
    json_t *incs = json_array();
    for (int i = 0; i < m->nincs; i++) {
        const sd_rinc_t *c = &m->incs[i];
        json_t *o = json_pack("{s:i, s:i, s:i, s:s, s:s, s:s}", "n", c->n, "instance", c->instance, "pid", c->pid, "ended_by", c->ended_by,
                              "stdout", c->log_out, "stderr", c->log_err);
        json_object_set_new(o, "exit_code", c->exit_code >= 0 ? json_integer(c->exit_code) : json_null());
        json_object_set_new(o, "exit_signal", c->exit_signal > 0 ? json_integer(c->exit_signal) : json_null());
        if (c->has_engine) {
            json_t *g = json_pack("{s:i, s:I, s:i, s:s, s:s}", "rebalances", c->rebalances, "restored_records", (json_int_t)c->restored,
                                  "changelogs_restored", c->restores, "last_state", c->last_state, "states", c->states);
            json_object_set_new(g, "running_after_ms", c->running_ms >= 0 ? json_integer(c->running_ms) : json_null());
            json_object_set_new(g, "restored_after_ms", c->restored_ms >= 0 ? json_integer(c->restored_ms) : json_null());
            json_object_set_new(o, "engine", g);
        }
        json_array_append_new(incs, o);
    }
    return incs;
}

static sd_err_t sd_summary_write(const sd_report_model_t *m, const char *path, char *err, size_t errlen) {
    json_t *root = json_object();
    json_object_set_new(root, "scenario", json_string(m->scenario));
    char *end;
    unsigned long long seed = strtoull(m->seed, &end, 10);
    json_object_set_new(root, "seed", m->seed[0] && !*end ? json_integer((json_int_t)seed) : json_null());
    json_object_set_new(root, "verdict", json_string(m->verdict));
    json_t *counts = json_object();
    static const char *const stable[] = {"produced", "expected_in_target", "observed_rows", "observed_unique", "duplicated",
                                         "lost", "unexpected", "late_leaked", "malformed_leaked", "quarantined", NULL};
    for (int i = 0; stable[i]; i++) {
        int64_t v = sd_report_count(m, stable[i]);
        json_object_set_new(counts, stable[i], v >= 0 ? json_integer(v) : json_null());
    }
    json_t *more = json_object();
    for (int i = 0; i < m->ncounts; i++) {
        int is_stable = 0;
        for (int k = 0; stable[k]; k++)
            if (!strcmp(stable[k], m->counts[i].name)) is_stable = 1;
        if (!is_stable) json_object_set_new(strchr(m->counts[i].name, '.') ? more : counts, m->counts[i].name, json_integer(m->counts[i].value));
    }
    json_object_set_new(root, "counts", counts);
    json_t *checks = json_array();
    for (int i = 0; i < m->nchecks; i++) {
        const sd_rcheck_t *c = &m->checks[i];
        json_array_append_new(checks, json_pack("{s:s, s:b, s:s, s:s, s:s}", "name", c->name, "pass", c->pass,
                                                "expected", c->expected, "actual", c->actual, "detail", c->detail));
    }
    json_object_set_new(root, "checks", checks);
    json_t *faults = json_array();
    for (int i = 0; i < m->nfaults; i++) {
        const sd_rfault_t *f = &m->faults[i];
        json_t *o = json_pack("{s:I, s:s, s:s}", "t_ms", (json_int_t)f->t_ms, "kind", f->kind, "detail", f->detail);
        /* one shape for every fault and every progress source: null where
         * the fault has no such thing (no batch to land in, no pipeline) */
        json_object_set_new(o, "incarnation", f->incarnation ? json_integer(f->incarnation) : json_null());
        json_object_set_new(o, "batch", f->batch >= 0 ? json_integer(f->batch) : json_null());
        json_object_set_new(o, "landed_mid_batch", f->landed >= 0 ? json_boolean(f->landed) : json_null());
        json_object_set_new(o, "rows_visible", f->rows_visible >= 0 ? json_integer(f->rows_visible) : json_null());
        json_object_set_new(o, "landing", json_string(f->landing));
        json_object_set_new(o, "recovery", sd_summary_recovery(f, m->progress));
        json_array_append_new(faults, o);
    }
    json_object_set_new(root, "faults", faults);
    /* additions */
    const struct { const char *key, *value; } strs[] = {
        {"reason", m->reason}, {"message", m->message}, {"profile", m->profile}, {"tag", m->tag}, {"topic", m->topic},
        {"brokers", m->brokers}, {"broker_kind", m->broker_kind}, {"producer", m->producer}, {"topic_config", m->topic_config},
        {"file", m->file}, {"started_at", m->started_at}};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) json_object_set_new(root, strs[i].key, json_string(strs[i].value));
    json_object_set_new(root, "duration_ms", m->ended_ms >= 0 ? json_integer(m->ended_ms - m->started_ms) : json_null());
    json_object_set_new(root, "harness_version", json_string(m->version));
    /* the version of reports/schemas/summary.schema.json this file follows */
    json_object_set_new(root, "schema_version", json_integer(SD_SUMMARY_SCHEMA_VERSION));
    /* what the harness itself cost (null when the run did not finish) */
    json_t *h = json_object();
    json_object_set_new(h, "cpu_ms", m->harness_cpu_ms >= 0 ? json_integer(m->harness_cpu_ms) : json_null());
    json_object_set_new(h, "peak_rss_kb", m->harness_peak_rss_kb >= 0 ? json_integer(m->harness_peak_rss_kb) : json_null());
    json_object_set_new(h, "reconcile_ms", m->reconcile_ms >= 0 ? json_integer(m->reconcile_ms) : json_null());
    /* the time await quiescent waited after the pipeline's last sign of work
     * (a change in a sink, a batch event): the harness's idle share */
    json_object_set_new(h, "idle_ms", m->harness_idle_ms >= 0 ? json_integer(m->harness_idle_ms) : json_null());
    json_object_set_new(h, "idle_share", m->harness_idle_ms >= 0 && m->ended_ms > m->started_ms
                                             ? json_real((double)m->harness_idle_ms / (double)(m->ended_ms - m->started_ms))
                                             : json_null());
    json_object_set_new(root, "harness", h);
    json_object_set_new(root, "complete", json_boolean(m->complete));
    if (json_object_size(more)) json_object_set_new(root, "other_sinks", more);
    else json_decref(more);
    json_t *anom = json_object();
    for (int i = 0; i < m->nbuckets; i++) {
        const sd_rbucket_t *b = &m->buckets[i];
        json_t *sink = json_object_get(anom, b->sink);
        if (!sink) { sink = json_object(); json_object_set_new(anom, b->sink, sink); }
        json_object_set_new(sink, b->bucket, json_pack("{s:I, s:o}", "total", (json_int_t)b->total, "sample", sd_ids_json(b)));
    }
    for (int i = 0; i < m->nunexpected; i++) {
        const sd_rbucket_t *b = &m->unexpected[i];
        json_t *sink = json_object_get(anom, b->sink);
        if (!sink) { sink = json_object(); json_object_set_new(anom, b->sink, sink); }
        json_object_set_new(sink, "unexpected", json_pack("{s:I, s:o}", "total", (json_int_t)b->total, "sample", sd_ids_json(b)));
    }
    /* a result model's groups: anomalies.<sink>.groups */
    for (int i = 0; i < m->ngroups; i++) {
        const sd_rgroup_t *g = &m->groups[i];
        json_t *sink = json_object_get(anom, g->sink);
        if (!sink) { sink = json_object(); json_object_set_new(anom, g->sink, sink); }
        json_t *gr = json_object_get(sink, "groups");
        if (!gr) {
            gr = json_pack("{s:I, s:[]}", "total", (json_int_t)m->groups_total, "sample");
            json_object_set_new(sink, "groups", gr);
        }
        json_array_append_new(json_object_get(gr, "sample"),
                              json_pack("{s:s, s:s, s:s, s:s}", "window_start", g->window_start, "keys", g->keys ? g->keys : "",
                                        "buckets", g->buckets ? g->buckets : "", "detail", g->detail ? g->detail : ""));
    }
    json_object_set_new(root, "anomalies", anom);
    json_t *nj = json_array(), *warn = json_array();
    for (int i = 0; i < m->nwarnings; i++) {
        if (!strcmp(m->warnings[i].kind, "not-judged")) json_array_append_new(nj, json_string(m->warnings[i].detail));
        else json_array_append_new(warn, json_pack("{s:I, s:s, s:s}", "t_ms", (json_int_t)m->warnings[i].t_ms, "kind",
                                                   m->warnings[i].kind, "detail", m->warnings[i].detail));
    }
    json_object_set_new(root, "not_judged", nj);
    json_object_set_new(root, "warnings", warn);
    json_t *missing = json_array();
    for (int i = 0; i < m->nmissing; i++) json_array_append_new(missing, json_string(m->missing[i]));
    json_object_set_new(root, "missing", missing);
    json_object_set_new(root, "incarnations", sd_summary_incarnations(m));
    json_t *acc = json_array();
    for (int i = 0; i < m->naccounts; i++) {
        const sd_raccount_t *a = &m->accounts[i];
        json_array_append_new(acc, json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:b}", "query", a->query, "batches",
                                             (json_int_t)a->batches, "input_rows", (json_int_t)a->spark_rows, "ledger_rows",
                                             (json_int_t)a->ledger_rows, "batches_disagreeing", (json_int_t)a->disagree,
                                             "dropped_by_watermark", (json_int_t)a->spark_dropped, "late_sent_in_those_offsets",
                                             (json_int_t)a->ledger_late, "agrees", a->disagree == 0));
    }
    json_object_set_new(root, "pipeline_account", acc);
    json_t *steps = json_array();
    for (int i = 0; i < m->nsteps; i++) {
        const sd_rstep_t *p = &m->steps[i];
        json_array_append_new(steps, json_pack("{s:i, s:s, s:s, s:s}", "line", p->line, "step", p->text, "status", p->status, "detail", p->detail));
    }
    json_object_set_new(root, "steps", steps);
    json_object_set_new(root, "reproduce", json_string(m->reproduce));
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!text) return sd_err_set(err, errlen, SD_ERR_INTERNAL, "summary.json: cannot serialise");
    sd_buf_t b;
    sd_buf_init(&b);
    sd_buf_puts(&b, text);
    sd_buf_putc(&b, '\n');
    free(text);
    sd_err_t e = sd_util_write_file(path, b.data, b.len, err, errlen);
    sd_buf_free(&b);
    return e;
}

const sd_report_writer_t sd_report_summary = {"summary", "summary.json", sd_summary_write};
