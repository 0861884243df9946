/* model.c - loads a run folder's run.db into the model report writers use. */
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"
#include "util.h"
#include "report.h"

/* Every text the reports show comes through here: what a pipeline, a
 * version program, a sink or a log put in run.db reaches no terminal,
 * Markdown page or JSON document with a control character of its own, and
 * bytes that are not UTF-8 cannot make summary.json drop an entry. */
static char *sd_col(sqlite3_stmt *st, int i) {
    return sd_util_safe_text((const char *)sqlite3_column_text(st, i), 1);
}

static int64_t sd_coli(sqlite3_stmt *st, int i, int64_t dflt) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, i);
}

static char *sd_meta(sqlite3 *db, const char *key) {
    sqlite3_stmt *st;
    char *v = NULL;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key=?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) v = sd_col(st, 0);
        sqlite3_finalize(st);
    }
    return v ? v : sd_util_strdup("");
}

#define SD_GROW(arr, n) ((arr) = sd_util_xrealloc((arr), sizeof(*(arr)) * (size_t)((n) + 1)), &(arr)[(n)++])

static void sd_missing(sd_report_model_t *m, const char *what) {
    char **slot = SD_GROW(m->missing, m->nmissing);
    *slot = sd_util_strdup(what);
}

static void sd_load_ids(sd_report_model_t *m, sqlite3 *db, sd_rbucket_t *b) {
    sqlite3_stmt *st, *led, *flt;
    if (sqlite3_prepare_v2(db, "SELECT seq, copies, writers FROM anomaly WHERE sink=? AND bucket=? ORDER BY seq LIMIT ?", -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_prepare_v2(db, "SELECT kind, queued_ms, partition, offset, (SELECT count(*) FROM ledger l2 WHERE l2.seq=ledger.seq)"
                           " FROM ledger WHERE seq=? ORDER BY n LIMIT 1", -1, &led, NULL);
    sqlite3_prepare_v2(db, "SELECT id, kind, detail, t_ms FROM fault WHERE t_ms<=? ORDER BY t_ms DESC, id DESC LIMIT 1", -1, &flt, NULL);
    sqlite3_bind_text(st, 1, b->sink, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, b->bucket, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, SD_REPORT_SAMPLE_IDS);
    while (sqlite3_step(st) == SQLITE_ROW) {
        sd_rid_t *id = SD_GROW(b->ids, b->nids);
        memset(id, 0, sizeof(*id));
        int64_t seq = sqlite3_column_int64(st, 0);
        id->id = sd_util_fmt("%s-%lld", m->tag, (long long)seq);
        id->bucket = sd_util_strdup(b->bucket);
        id->copies = sd_coli(st, 1, 0);
        id->writers = sd_col(st, 2);
        id->partition = -1;
        id->offset = -1;
        id->kind = sd_util_strdup("");
        id->sent_at = sd_util_strdup("");
        id->after_fault = sd_util_strdup("");
        if (led) {
            sqlite3_bind_int64(led, 1, seq);
            if (sqlite3_step(led) == SQLITE_ROW) {
                free(id->kind);
                id->kind = sd_col(led, 0);
                int64_t q = sd_coli(led, 1, 0);
                char iso[32];
                free(id->sent_at);
                id->sent_at = sd_util_strdup(q ? sd_util_iso8601(q, iso, sizeof(iso)) : "");
                id->t_ms = q ? q - m->started_ms : -1;
                id->partition = (int)sd_coli(led, 2, -1);
                id->offset = sd_coli(led, 3, -1);
                id->sends = sd_coli(led, 4, 1);
                if (flt && q) {
                    sqlite3_bind_int64(flt, 1, q);
                    if (sqlite3_step(flt) == SQLITE_ROW) {
                        free(id->after_fault);
                        char *kind = sd_col(flt, 1), *detail = sd_col(flt, 2);
                        id->after_fault = sd_util_fmt("%s #%lld (%s), %.2fs before", kind, (long long)sqlite3_column_int64(flt, 0), detail,
                                                      (double)(q - sqlite3_column_int64(flt, 3)) / 1000.0);
                        free(kind);
                        free(detail);
                    }
                    sqlite3_reset(flt);
                }
            }
            sqlite3_reset(led);
        }
    }
    sqlite3_finalize(st);
    if (led) sqlite3_finalize(led);
    if (flt) sqlite3_finalize(flt);
}

/* One commit of the batch table as the runbook says it: a Spark batch is
 * its checkpoint's offsets/N and commits/N. */
static char *sd_runbook_commit(sqlite3_stmt *st, const char *progress) {
    long long inc = (long long)sd_coli(st, 0, 0), id = (long long)sd_coli(st, 1, -1);
    char *off = sd_col(st, 2), spark[96] = "";
    if (!strcmp(progress, "spark")) snprintf(spark, sizeof(spark), " (offsets/%lld and commits/%lld)", id, id);
    char *v = sd_util_fmt("incarnation %lld, batch %lld%s, offsets %s", inc, id, spark, *off ? off : "not reported");
    free(off);
    return v;
}

/* The commit one query over the batch table finds for v ("" none, or v is
 * INT64_MIN: unknown). */
static char *sd_runbook_commit_at(sqlite3 *db, const char *sql, int64_t v, const char *progress) {
    sqlite3_stmt *st = NULL;
    char *c = NULL;
    if (v != INT64_MIN && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, v);
        if (sqlite3_step(st) == SQLITE_ROW) c = sd_runbook_commit(st, progress);
    }
    sqlite3_finalize(st);
    return c ? c : sd_util_strdup("");
}

/* The runbook: the checkpoint, each incarnation's version, and the
 * committed progress around each fault (the newest commit before it, the
 * first after it), from run.db's batch table. Old run folders without a
 * version column still load. */
static void sd_runbook_load(sd_report_model_t *m, sqlite3 *db) {
    char *spark = sd_meta(db, "spark_checkpoint"), *group = sd_meta(db, "progress_group"), *flink = sd_meta(db, "flink_checkpoints");
    if (spark[0]) {
        m->checkpoint = spark;
        m->progress_kind = sd_util_strdup("spark");
        free(flink);
    } else if (flink[0]) {
        free(spark);
        m->checkpoint = flink;
        m->progress_kind = sd_util_strdup("flink");
    } else {
        free(spark);
        free(flink);
        m->checkpoint = sd_meta(db, "checkpoint");
        m->progress_kind = sd_util_strdup(group[0] ? "group" : "");
    }
    free(group);
    sqlite3_stmt *st = NULL;
    for (int i = 0; i < m->nincs; i++) m->incs[i].version = sd_util_strdup("");
    if (sqlite3_prepare_v2(db, "SELECT n, version FROM incarnation", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW)
            for (int i = 0; i < m->nincs; i++)
                if (m->incs[i].n == sqlite3_column_int(st, 0) && sqlite3_column_text(st, 1)) {
                    free(m->incs[i].version);
                    m->incs[i].version = sd_col(st, 1);
                }
    }
    sqlite3_finalize(st);
    /* each incarnation: where it started from and where it got to (the
     * launches of a scheduled AvailableNow job, a restart's resume point);
     * each fault: the newest commit before it, the first after it */
    static const char *const newest_until = "SELECT incarnation, id, offsets FROM batch WHERE commit_ms IS NOT NULL AND commit_ms<=?"
                                            " ORDER BY commit_ms DESC, id DESC LIMIT 1";
    for (int i = 0; i < m->nincs; i++) {
        sd_rinc_t *c = &m->incs[i];
        c->resumed = sd_runbook_commit_at(db, newest_until, c->started_ms >= 0 ? c->started_ms + m->started_ms : INT64_MIN, m->progress_kind);
        c->reached = sd_runbook_commit_at(db, "SELECT incarnation, id, offsets FROM batch WHERE commit_ms IS NOT NULL AND incarnation=?"
                                              " ORDER BY commit_ms DESC, id DESC LIMIT 1", c->n, m->progress_kind);
    }
    /* what the pipeline's own records said at each fault (run folders from
     * before the column have none) */
    for (int i = 0; i < m->nfaults; i++) m->faults[i].context = sd_util_strdup("");
    if (sqlite3_prepare_v2(db, "SELECT id, context FROM fault WHERE context IS NOT NULL", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW)
            for (int i = 0; i < m->nfaults; i++)
                if (m->faults[i].id == sqlite3_column_int64(st, 0)) {
                    free(m->faults[i].context);
                    m->faults[i].context = sd_col(st, 1);
                }
    }
    sqlite3_finalize(st);
    for (int i = 0; i < m->nfaults; i++) {
        sd_rfault_t *f = &m->faults[i];
        f->before = sd_runbook_commit_at(db, newest_until, f->t_wall, m->progress_kind);
        f->after = sd_runbook_commit_at(db, "SELECT incarnation, id, offsets FROM batch WHERE commit_ms IS NOT NULL AND commit_ms>?"
                                            " ORDER BY commit_ms, id LIMIT 1", f->t_wall, m->progress_kind);
    }
}

/* Each incarnation's own account from its log (run.db engine; older run
 * folders have no such table): when it first ran, its rebalances (a
 * REBALANCING after it ran), what it restored and when, its states. */
static void sd_engine_load(sd_report_model_t *m, sqlite3 *db) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT incarnation, t_ms, what, from_state, to_state, records FROM engine ORDER BY t_ms, rowid", -1, &st,
                           NULL) != SQLITE_OK)
        return;
    sd_buf_t *states = sd_util_xcalloc((size_t)m->nincs + 1, sizeof(sd_buf_t));
    while (sqlite3_step(st) == SQLITE_ROW) {
        int n = (int)sd_coli(st, 0, 0), k = -1;
        for (int i = 0; i < m->nincs && k < 0; i++)
            if (m->incs[i].n == n) k = i;
        if (k < 0) continue;
        sd_rinc_t *c = &m->incs[k];
        int64_t since = c->started_ms >= 0 ? sd_coli(st, 1, 0) - m->started_ms - c->started_ms : -1;
        const char *what = (const char *)sqlite3_column_text(st, 2), *to = (const char *)sqlite3_column_text(st, 4);
        c->has_engine = 1;
        if (what && !strcmp(what, "restored")) {
            c->restores++;
            c->restored += sd_coli(st, 5, 0);
            c->restored_ms = since;
        } else if (what && to) {
            if (!strcmp(to, "RUNNING") && c->running_ms < 0) c->running_ms = since;
            else if (!strcmp(to, "REBALANCING") && c->running_ms >= 0) c->rebalances++;
            free(c->last_state);
            c->last_state = sd_util_strdup(to);
            if (states[k].len < 600) sd_buf_printf(&states[k], "%s%s %.1fs", states[k].len ? ", " : "", to, (double)since / 1000.0);
            else if (states[k].data[states[k].len - 1] != '.') sd_buf_puts(&states[k], ", ...");
        }
    }
    sqlite3_finalize(st);
    for (int i = 0; i < m->nincs; i++)
        if (states[i].len) {
            free(m->incs[i].states);
            m->incs[i].states = sd_buf_steal(&states[i]);
        }
    free(states);
}

/* Each fault's recovery figures (run.db recovery, figures a JSON object:
 * a number, null where it does not apply, "not measured" or "never").
 * Older run folders have no such table. */
static void sd_recovery_load(sd_report_model_t *m, sqlite3 *db) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT fault, line, caught_ms, basis, figures, why FROM recovery", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            sd_rfault_t *f = NULL;
            for (int i = 0; i < m->nfaults && !f; i++)
                if (m->faults[i].id == sqlite3_column_int64(st, 0)) f = &m->faults[i];
            if (!f) continue;
            f->has_recovery = 1;
            f->line = (int)sd_coli(st, 1, 0);
            f->caught_ms = sd_coli(st, 2, INT64_MIN) == INT64_MIN ? -1 : sd_coli(st, 2, 0) - m->started_ms;
            f->basis = sd_col(st, 3);
            f->why = sd_col(st, 5);
            json_t *o = json_loads(sqlite3_column_text(st, 4) ? (const char *)sqlite3_column_text(st, 4) : "{}", 0, NULL);
            for (int k = 0; k < SD_FIG__COUNT; k++) {
                json_t *v = json_object_get(o, sd_figure_name(k));
                const char *t = json_string_value(v);
                f->fig[k] = json_is_integer(v) ? (int64_t)json_integer_value(v) : t && !strcmp(t, "never") ? SD_FIG_NEVER
                            : t ? SD_FIG_UNMEASURED : SD_FIG_NA;
            }
            json_decref(o);
        }
    }
    sqlite3_finalize(st);
    for (int i = 0; i < m->nfaults; i++) {
        if (!m->faults[i].basis) m->faults[i].basis = sd_util_strdup("");
        if (!m->faults[i].why) m->faults[i].why = sd_util_strdup("");
    }
}

/* Long because it reads run.db table by table into the model, in the
 * order the reports use them; each part is a query and its loop. */
sd_err_t sd_report_model_load(const char *run_dir, sd_report_model_t **out, char *err, size_t errlen) {
    char *path = sd_util_fmt("%s/run.db", run_dir);
    if (!sd_util_exists(path)) {
        sd_err_t e = sd_err_set(err, errlen, SD_ERR_IO, "report: %s: no run.db in this folder", run_dir);
        free(path);
        return e;
    }
    sqlite3 *db = NULL;
    /* a killed run's messages can still be packed: rows first, for every report */
    char uerr[512];
    if (sd_ledger_unpack_file(path, uerr, sizeof(uerr)) != SD_OK) {
        sd_err_t e = sd_err_set(err, errlen, SD_ERR_IO, "report: %s", uerr);
        free(path);
        return e;
    }
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sd_err_t e = sd_err_set(err, errlen, SD_ERR_IO, "report: open %s: %s", path, db ? sqlite3_errmsg(db) : "?");
        sqlite3_close(db);
        free(path);
        return e;
    }
    sqlite3_busy_timeout(db, 5000);
    {
        /* a streamdrill ledger, or nothing is written */
        sqlite3_stmt *st = NULL;
        int ok = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='harness_version'", -1, &st, NULL) == SQLITE_OK &&
                 sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
        if (!ok) {
            sd_err_t e = sd_err_set(err, errlen, SD_ERR_USAGE, "report: %s is not the run.db of a streamdrill run (%s): nothing written",
                                    path, sqlite3_errmsg(db));
            sqlite3_close(db);
            free(path);
            return e;
        }
    }
    free(path);
    sd_report_model_t *m = sd_util_xcalloc(1, sizeof(*m));
    m->run_dir = sd_util_strdup(run_dir);
    struct { char **dst; const char *key; } metas[] = {
        {&m->scenario, "scenario"}, {&m->file, "file"}, {&m->description, "description"}, {&m->seed, "seed"},
        {&m->tag, "tag"}, {&m->topic, "topic"}, {&m->brokers, "brokers"}, {&m->broker_kind, "broker_kind"},
        {&m->profile, "profile"}, {&m->verdict, "verdict"}, {&m->reason, "reason"}, {&m->message, "message"},
        {&m->version, "harness_version"}, {&m->started_at, "started_at"}, {&m->status, "status"}, {&m->vars, "vars"},
        {&m->reproduce, "reproduce"}, {&m->producer, "producer"}, {&m->topic_config, "topic_config"}, {&m->progress, "progress"}};
    for (size_t i = 0; i < sizeof(metas) / sizeof(metas[0]); i++) *metas[i].dst = sd_meta(db, metas[i].key);
    char *s = sd_meta(db, "started_ms");
    m->started_ms = strtoll(s, NULL, 10);
    free(s);
    s = sd_meta(db, "ended_ms");
    m->ended_ms = s[0] ? strtoll(s, NULL, 10) : -1;
    free(s);
    struct { int64_t *dst; const char *key; } ints[] = {
        {&m->harness_cpu_ms, "harness_cpu_ms"}, {&m->harness_peak_rss_kb, "harness_peak_rss_kb"}, {&m->reconcile_ms, "reconcile_ms"},
        {&m->harness_idle_ms, "harness_idle_ms"}, {&m->series_ms, "series_bucket_ms"}};
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        s = sd_meta(db, ints[i].key);
        *ints[i].dst = s[0] ? strtoll(s, NULL, 10) : -1;
        free(s);
    }
    m->complete = !strcmp(m->status, "finished");
    if (!m->reproduce[0]) { /* run.db of an older version */
        free(m->reproduce);
        m->reproduce = sd_util_fmt("streamdrill run %s --seed %s --tag %s", m->file, m->seed, m->tag);
    }
    if (!m->verdict[0]) {
        free(m->verdict);
        m->verdict = sd_util_strdup("inconclusive");
        free(m->reason);
        m->reason = sd_util_strdup("incomplete");
        free(m->message);
        m->message = sd_util_strdup("the run did not finish: this report is rebuilt from what run.db holds");
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT name, value FROM count ORDER BY rowid", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            sd_rcount_t *c = SD_GROW(m->counts, m->ncounts);
            c->name = sd_col(st, 0);
            c->value = sd_coli(st, 1, 0);
        }
        sqlite3_finalize(st);
    }
    if (sqlite3_prepare_v2(db, "SELECT name, pass, expected, actual, detail FROM \"check\" ORDER BY idx", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            sd_rcheck_t *c = SD_GROW(m->checks, m->nchecks);
            c->name = sd_col(st, 0);
            c->pass = (int)sd_coli(st, 1, 0);
            c->expected = sd_col(st, 2);
            c->actual = sd_col(st, 3);
            c->detail = sd_col(st, 4);
        }
        sqlite3_finalize(st);
    }
    if (sqlite3_prepare_v2(db, "SELECT t_ms, kind, detail, incarnation, batch, landed, rows_visible, batch_rows, landing, id FROM fault ORDER BY t_ms, id", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            sd_rfault_t *f = SD_GROW(m->faults, m->nfaults);
            f->t_ms = sd_coli(st, 0, 0) - m->started_ms;
            f->kind = sd_col(st, 1);
            f->detail = sd_col(st, 2);
            f->incarnation = (int)sd_coli(st, 3, 0);
            f->batch = sd_coli(st, 4, -1);
            f->landed = (int)sd_coli(st, 5, -1);
            f->rows_visible = sd_coli(st, 6, -1);
            f->batch_rows = sd_coli(st, 7, -1);
            f->landing = sd_col(st, 8);
            f->t_wall = sd_coli(st, 0, 0);
            f->before = f->after = f->context = NULL;
            f->id = sd_coli(st, 9, 0);
            f->has_recovery = 0;
            f->line = 0;
            f->caught_ms = -1;
            f->basis = f->why = NULL;
            for (int k = 0; k < SD_FIG__COUNT; k++) f->fig[k] = SD_FIG_NA;
        }
        sqlite3_finalize(st);
    }
    if (sqlite3_prepare_v2(db, "SELECT t_ms, kind, detail FROM warning ORDER BY t_ms, rowid", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            sd_rnote_t *w = SD_GROW(m->warnings, m->nwarnings);
            w->t_ms = sd_coli(st, 0, 0) - m->started_ms;
            w->kind = sd_col(st, 1);
            w->detail = sd_col(st, 2);
        }
        sqlite3_finalize(st);
    }
    if (sqlite3_prepare_v2(db, "SELECT idx, line, text, status, detail, started_ms, ended_ms FROM step ORDER BY idx", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            sd_rstep_t *p = SD_GROW(m->steps, m->nsteps);
            p->idx = (int)sd_coli(st, 0, 0);
            p->line = (int)sd_coli(st, 1, 0);
            p->text = sd_col(st, 2);
            p->status = sd_col(st, 3);
            p->detail = sd_col(st, 4);
            int64_t a = sd_coli(st, 5, 0), b = sd_coli(st, 6, 0);
            p->t_ms = a ? a - m->started_ms : -1;
            p->dur_ms = a && b && b >= a && strcmp(p->status, "planned") && strcmp(p->status, "skipped") ? b - a : -1;
        }
        sqlite3_finalize(st);
    }
    if (sqlite3_prepare_v2(db, "SELECT n, pid, argv, started_ms, ended_ms, exit_code, exit_signal, ended_by, log_out, log_err FROM incarnation ORDER BY n", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            sd_rinc_t *c = SD_GROW(m->incs, m->nincs);
            c->n = (int)sd_coli(st, 0, 0);
            c->pid = (int)sd_coli(st, 1, 0);
            c->argv = sd_col(st, 2);
            int64_t a = sd_coli(st, 3, -1), b = sd_coli(st, 4, -1);
            c->started_ms = a >= 0 ? a - m->started_ms : -1;
            c->ended_ms = b >= 0 ? b - m->started_ms : -1;
            c->exit_code = (int)sd_coli(st, 5, -1);
            c->exit_signal = (int)sd_coli(st, 6, -1);
            c->ended_by = sd_col(st, 7);
            c->log_out = sd_col(st, 8);
            c->log_err = sd_col(st, 9);
            c->version = c->resumed = c->reached = NULL;
            c->instance = 1;
            c->has_engine = c->rebalances = c->restores = 0;
            c->running_ms = c->restored_ms = -1;
            c->restored = 0;
            c->states = sd_util_strdup("");
            c->last_state = sd_util_strdup("");
        }
        sqlite3_finalize(st);
    }
    /* a run folder from before instances has no such column: instance 1 */
    if (sqlite3_prepare_v2(db, "SELECT n, instance FROM incarnation WHERE instance IS NOT NULL", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW)
            for (int i = 0; i < m->nincs; i++)
                if (m->incs[i].n == (int)sd_coli(st, 0, 0)) m->incs[i].instance = (int)sd_coli(st, 1, 1);
        sqlite3_finalize(st);
    }
    sd_engine_load(m, db);
    if (sqlite3_prepare_v2(db, "SELECT sink, bucket, count(*) FROM anomaly GROUP BY sink, bucket ORDER BY sink, bucket", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            sd_rbucket_t *b = SD_GROW(m->buckets, m->nbuckets);
            memset(b, 0, sizeof(*b));
            b->sink = sd_col(st, 0);
            b->bucket = sd_col(st, 1);
            b->total = sd_coli(st, 2, 0);
        }
        sqlite3_finalize(st);
    }
    for (int i = 0; i < m->nbuckets; i++) sd_load_ids(m, db, &m->buckets[i]);
    if (sqlite3_prepare_v2(db, "SELECT sink, count(*), sum(copies) FROM unexpected GROUP BY sink", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            sd_rbucket_t *b = SD_GROW(m->unexpected, m->nunexpected);
            memset(b, 0, sizeof(*b));
            b->sink = sd_col(st, 0);
            b->bucket = sd_util_strdup("unexpected");
            b->total = sd_coli(st, 1, 0);
        }
        sqlite3_finalize(st);
    }
    /* a result model's groups (the table exists only when a model judged) */
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM group_anomaly", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW) m->groups_total = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    if (sqlite3_prepare_v2(db, "SELECT sink, window_start_ms, keys, buckets, detail FROM group_anomaly ORDER BY rowid LIMIT ?", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, SD_REPORT_SAMPLE_GROUPS);
        while (sqlite3_step(st) == SQLITE_ROW) {
            sd_rgroup_t *g = SD_GROW(m->groups, m->ngroups);
            char iso[40];
            g->sink = sd_col(st, 0);
            g->window_start = sd_util_strdup(sqlite3_column_type(st, 1) == SQLITE_NULL ? "" : sd_util_iso8601(sqlite3_column_int64(st, 1), iso, sizeof(iso)));
            g->keys = sd_col(st, 2);
            g->buckets = sd_col(st, 3);
            g->detail = sd_col(st, 4);
        }
        sqlite3_finalize(st);
    }
    for (int i = 0; i < m->nunexpected; i++) {
        sd_rbucket_t *b = &m->unexpected[i];
        if (sqlite3_prepare_v2(db, "SELECT raw_id, copies, writers FROM unexpected WHERE sink=? ORDER BY rowid LIMIT ?", -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_text(st, 1, b->sink, -1, SQLITE_STATIC);
            sqlite3_bind_int(st, 2, SD_REPORT_SAMPLE_IDS);
            while (sqlite3_step(st) == SQLITE_ROW) {
                sd_rid_t *id = SD_GROW(b->ids, b->nids);
                memset(id, 0, sizeof(*id));
                id->id = sd_col(st, 0);
                id->bucket = sd_util_strdup("unexpected");
                id->copies = sd_coli(st, 1, 0);
                id->writers = sd_col(st, 2);
                id->kind = sd_util_strdup("");
                id->sent_at = sd_util_strdup("");
                id->after_fault = sd_util_strdup("");
                id->partition = -1;
                id->offset = -1;
            }
            sqlite3_finalize(st);
        }
    }
    if (sqlite3_prepare_v2(db, "SELECT query, count(*), sum(spark_rows), sum(ledger_rows), sum(agree=0), sum(spark_dropped),"
                               " sum(ledger_late) FROM account GROUP BY query ORDER BY query", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            sd_raccount_t *a = SD_GROW(m->accounts, m->naccounts);
            a->query = sd_col(st, 0);
            a->batches = sd_coli(st, 1, 0);
            a->spark_rows = sd_coli(st, 2, 0);
            a->ledger_rows = sd_coli(st, 3, 0);
            a->disagree = sd_coli(st, 4, 0);
            a->spark_dropped = sd_coli(st, 5, 0);
            a->ledger_late = sd_coli(st, 6, 0);
        }
        sqlite3_finalize(st);
    }
    if (!m->complete) {
        sd_missing(m, "the run did not finish (the harness stopped or was killed before writing its verdict)");
        if (!m->nchecks) sd_missing(m, "no reconciliation: the sinks were not read, so no check was made");
        for (int i = 0; i < m->nsteps; i++)
            if (!strcmp(m->steps[i].status, "planned") || !strcmp(m->steps[i].status, "running")) {
                char *w = sd_util_fmt("step %d (line %d) `%s` did not complete", m->steps[i].idx + 1, m->steps[i].line, m->steps[i].text);
                sd_missing(m, w);
                free(w);
            }
    }
    if (!m->complete && sd_report_count(m, "produced") < 0 &&
        sqlite3_prepare_v2(db, "SELECT count(*), count(offset), sum(error IS NOT NULL) FROM ledger", -1, &st, NULL) == SQLITE_OK) {
        /* what the ledger knows of the messages even so: every one handed to
         * Kafka, and where each acknowledged one was written */
        if (sqlite3_step(st) == SQLITE_ROW) {
            int64_t sent = sd_coli(st, 0, 0), acked = sd_coli(st, 1, 0), failed = sd_coli(st, 2, 0);
            const char *names[] = {"produced", "send_failed"};
            int64_t values[] = {acked, sent - acked};
            for (int i = 0; i < 2; i++) {
                sd_rcount_t *c = SD_GROW(m->counts, m->ncounts);
                c->name = sd_util_strdup(names[i]);
                c->value = values[i];
            }
            char *w = sd_util_fmt("%lld messages were handed to Kafka (all in run.db): %lld acknowledged with their partition and "
                                  "offset, %lld failed, %lld without a delivery report when the harness stopped",
                                  (long long)sent, (long long)acked, (long long)failed, (long long)(sent - acked - failed));
            sd_missing(m, w);
            free(w);
        }
        sqlite3_finalize(st);
    }
    sd_runbook_load(m, db);
    sd_recovery_load(m, db);
    sqlite3_close(db);
    *out = m;
    return SD_OK;
}

static void sd_free_bucket(sd_rbucket_t *b) {
    for (int k = 0; k < b->nids; k++) {
        sd_rid_t *id = &b->ids[k];
        free(id->id); free(id->bucket); free(id->writers); free(id->kind); free(id->sent_at); free(id->after_fault);
    }
    free(b->ids);
    free(b->sink);
    free(b->bucket);
}

void sd_report_model_free(sd_report_model_t *m) {
    if (!m) return;
    char **strs[] = {&m->run_dir, &m->scenario, &m->file, &m->description, &m->seed, &m->tag, &m->topic, &m->brokers,
                     &m->broker_kind, &m->profile, &m->verdict, &m->reason, &m->message, &m->version, &m->started_at,
                     &m->status, &m->vars, &m->reproduce, &m->producer, &m->topic_config, &m->progress};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) free(*strs[i]);
    for (int i = 0; i < m->ncounts; i++) free(m->counts[i].name);
    free(m->counts);
    for (int i = 0; i < m->nchecks; i++) {
        free(m->checks[i].name); free(m->checks[i].expected); free(m->checks[i].actual); free(m->checks[i].detail);
    }
    free(m->checks);
    for (int i = 0; i < m->nfaults; i++) {
        free(m->faults[i].kind); free(m->faults[i].detail); free(m->faults[i].landing); free(m->faults[i].before); free(m->faults[i].after); free(m->faults[i].context);
        free(m->faults[i].basis); free(m->faults[i].why);
    }
    free(m->checkpoint);
    free(m->progress_kind);
    free(m->faults);
    for (int i = 0; i < m->nwarnings; i++) { free(m->warnings[i].kind); free(m->warnings[i].detail); }
    free(m->warnings);
    for (int i = 0; i < m->nsteps; i++) { free(m->steps[i].text); free(m->steps[i].status); free(m->steps[i].detail); }
    free(m->steps);
    for (int i = 0; i < m->nincs; i++) {
        free(m->incs[i].argv); free(m->incs[i].ended_by); free(m->incs[i].log_out); free(m->incs[i].log_err); free(m->incs[i].version);
        free(m->incs[i].resumed); free(m->incs[i].reached); free(m->incs[i].states); free(m->incs[i].last_state);
    }
    free(m->incs);
    for (int i = 0; i < m->nbuckets; i++) sd_free_bucket(&m->buckets[i]);
    free(m->buckets);
    for (int i = 0; i < m->nunexpected; i++) sd_free_bucket(&m->unexpected[i]);
    free(m->unexpected);
    for (int i = 0; i < m->ngroups; i++) {
        free(m->groups[i].sink); free(m->groups[i].window_start); free(m->groups[i].keys); free(m->groups[i].buckets);
        free(m->groups[i].detail);
    }
    free(m->groups);
    for (int i = 0; i < m->nmissing; i++) free(m->missing[i]);
    free(m->missing);
    for (int i = 0; i < m->naccounts; i++) free(m->accounts[i].query);
    free(m->accounts);
    free(m);
}

int64_t sd_report_count(const sd_report_model_t *m, const char *name) {
    for (int i = 0; i < m->ncounts; i++)
        if (!strcmp(m->counts[i].name, name)) return m->counts[i].value;
    return -1;
}

static const char *sd_report_css =
    "body{font-family:'DejaVu Sans',Arial,sans-serif;margin:24px auto;max-width:1100px;color:#222;line-height:1.45}"
    "h1{font-size:22px;margin:0}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:28px}"
    "h3{font-size:15px;margin:18px 0 4px}table{border-collapse:collapse;margin:8px 0;font-size:13px}"
    "th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f4f4f4}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}code{font-size:12px}"
    ".verdict{padding:14px 18px;border-radius:6px;color:#fff;margin-bottom:14px}"
    ".pass{background:#1e8449}.fail{background:#b03a2e}.inconclusive{background:#b9770e}.error{background:#566573}"
    "td.v{color:#fff;font-weight:bold}"
    ".ok{color:#1e8449;font-weight:bold}.bad{color:#b03a2e;font-weight:bold}.note{color:#666;font-size:13px}"
    "figure.chart{margin:10px 0}figure.chart svg{max-width:100%;height:auto}"
    ".counts td:first-child{font-family:monospace}pre{background:#f7f7f7;padding:8px;border:1px solid #ddd}";

void sd_report_html_head(sd_buf_t *b, const char *title, const char *title2, const char *title3) {
    sd_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    sd_report_xml_escape(b, title ? title : "");
    sd_report_xml_escape(b, title2 ? title2 : "");
    sd_report_xml_escape(b, title3 ? title3 : "");
    sd_buf_printf(b, "</title><style>%s</style></head><body>\n", sd_report_css);
}

static const char *const sd_verdicts[][2] = {{"pass", "PASS"}, {"fail", "FAIL"}, {"inconclusive", "INCONCLUSIVE"}, {"error", "ERROR"}};

static int sd_verdict_index(const char *verdict) {
    for (int i = 0; i < 3; i++)
        if (verdict && !strcmp(verdict, sd_verdicts[i][0])) return i;
    return 3;
}

const char *sd_report_verdict_class(const char *verdict) { return sd_verdicts[sd_verdict_index(verdict)][0]; }
const char *sd_report_verdict_word(const char *verdict) { return sd_verdicts[sd_verdict_index(verdict)][1]; }

void sd_report_xml_escape(sd_buf_t *b, const char *text) {
    char *s = sd_util_safe_text(text, 1); /* valid UTF-8, no control character */
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        switch (*p) {
        case '<': sd_buf_puts(b, "&lt;"); break;
        case '>': sd_buf_puts(b, "&gt;"); break;
        case '&': sd_buf_puts(b, "&amp;"); break;
        case '"': sd_buf_puts(b, "&quot;"); break;
        case '\'': sd_buf_puts(b, "&apos;"); break;
        default:
            /* XML 1.0 forbids most control characters */
            if (*p < 0x20 && *p != '\n' && *p != '\t' && *p != '\r') sd_buf_printf(b, "\\x%02x", *p);
            else sd_buf_putc(b, (char)*p);
        }
    }
    free(s);
}

void sd_report_md_escape(sd_buf_t *b, const char *text) {
    char *s = sd_util_safe_text(text, 1);
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        if (*p == '\n' || *p == '\r') { sd_buf_puts(b, " "); continue; }
        if (*p == '&') { sd_buf_puts(b, "&amp;"); continue; }
        if (*p == '<') { sd_buf_puts(b, "&lt;"); continue; }
        if (*p == '>') { sd_buf_puts(b, "&gt;"); continue; }
        if (strchr("\\`*_[]|", *p)) sd_buf_putc(b, '\\');
        sd_buf_putc(b, (char)*p);
    }
    free(s);
}

int sd_report_step_bad(const char *status) {
    return !strcmp(status, "missed") || !strcmp(status, "restart failed") || !strcmp(status, "timeout") || !strcmp(status, "failed");
}

static void sd_report_md_code_safe(sd_buf_t *b, const char *s);

void sd_report_md_code(sd_buf_t *b, const char *text) {
    char *s = sd_util_safe_text(text, 1);
    sd_report_md_code_safe(b, s);
    free(s);
}

static void sd_report_md_code_safe(sd_buf_t *b, const char *s) {
    if (!s || !*s) return; /* an empty code span would print as two backticks */
    /* a fence one backtick longer than the longest run inside */
    int run = 0, longest = 0;
    for (const char *p = s; *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        if (run > longest) longest = run;
    }
    int pad = *s == '`' || (*s && s[strlen(s) - 1] == '`') || *s == ' ';
    for (int i = 0; i <= longest; i++) sd_buf_putc(b, '`');
    if (pad) sd_buf_putc(b, ' ');
    for (const char *p = s; *p; p++) {
        if (*p == '\n' || *p == '\r') sd_buf_putc(b, ' ');
        else if (*p == '|') sd_buf_puts(b, "\\|"); /* a table cell ends at a bare pipe, even in code */
        else sd_buf_putc(b, *p);
    }
    if (pad) sd_buf_putc(b, ' ');
    for (int i = 0; i <= longest; i++) sd_buf_putc(b, '`');
}
