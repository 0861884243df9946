/* export.c - the reconciliation export for auditors, in export/:
 *
 *   manifest.json   scenario, seed, tag, harness version, verdict, totals,
 *                   and the tie-out: every id expected in the target is in
 *                   exactly one bucket, and the buckets add up to the ledger
 *   ledger.csv      every message the harness sent (up to 2,000,000 rows;
 *                   beyond that the manifest says how to get it)
 *   SINK-BUCKET.csv every anomalous id of a bucket, with what the ledger knows
 *   SINK-unexpected.csv  rows whose id maps to no ledger event
 *   deliveries.csv  every message of the second source (`deliveries`), when
 *                   there is one
 *   SINK-groups.csv every group a result model flagged (window start, keys,
 *                   flags, the expected and actual values and the events
 *                   that explain them)
 *   counts.csv      every count
 *   runbook.md      the runbook: checkpoint, each incarnation's command and
 *                   version, the committed progress around each fault
 *
 * CSV is RFC 4180 (fields with a comma, a quote or a newline are quoted). */
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "report.h"

#define SD_EXPORT_LEDGER_MAX 2000000

/* One CSV cell: quoted when it must be, and what a pipeline or a sink put
 * in it without a control character of theirs (sd_buf_put_safe). */
static void sd_csv(FILE *f, const char *text) {
    if (!text) return;
    char *safe = sd_util_safe_text(text, 1);
    const char *s = safe;
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
    } else {
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"') fputc('"', f);
            fputc(*s, f);
        }
        fputc('"', f);
    }
    free(safe);
}

static const char *sd_col_text(sqlite3_stmt *st, int i) {
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

static void sd_iso_col(FILE *f, sqlite3_stmt *st, int i) {
    if (sqlite3_column_type(st, i) == SQLITE_NULL) return;
    char iso[32];
    fputs(sd_util_iso8601(sqlite3_column_int64(st, i), iso, sizeof(iso)), f);
}

static int64_t sd_export_ledger(sqlite3 *db, const char *dir, const char *tag, char *err, size_t errlen) {
    char *path = sd_util_fmt("%s/ledger.csv", dir);
    FILE *f = fopen(path, "w");
    free(path);
    if (!f) return sd_err_set(err, errlen, SD_ERR_IO, "export: write ledger.csv"), -1;
    fputs("n,id,seq,kind,disposition,detail,event_time,key,partition,offset,queued_at,acked_at,error\n", f);
    sqlite3_stmt *st;
    int64_t n = 0;
    if (sqlite3_prepare_v2(db, "SELECT n, seq, kind, disposition, detail, event_time_ms, msg_key, partition, offset, queued_ms, acked_ms, error"
                               " FROM ledger ORDER BY n", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            fprintf(f, "%lld,%s-%lld,%lld,", (long long)sqlite3_column_int64(st, 0), tag, (long long)sqlite3_column_int64(st, 1),
                    (long long)sqlite3_column_int64(st, 1));
            sd_csv(f, sd_col_text(st, 2)); fputc(',', f);
            sd_csv(f, sd_col_text(st, 3)); fputc(',', f);
            sd_csv(f, sd_col_text(st, 4)); fputc(',', f);
            sd_iso_col(f, st, 5); fputc(',', f);
            sd_csv(f, sd_col_text(st, 6)); fputc(',', f);
            fputs(sd_col_text(st, 7), f); fputc(',', f);
            fputs(sd_col_text(st, 8), f); fputc(',', f);
            sd_iso_col(f, st, 9); fputc(',', f);
            sd_iso_col(f, st, 10); fputc(',', f);
            sd_csv(f, sd_col_text(st, 11));
            fputc('\n', f);
            n++;
        }
        sqlite3_finalize(st);
    }
    fclose(f);
    return n;
}

static void sd_export_bucket(sqlite3 *db, const char *dir, const char *tag, const char *sink, const char *bucket) {
    char *path = sd_util_fmt("%s/%s-%s.csv", dir, sink, bucket);
    FILE *f = fopen(path, "w");
    free(path);
    if (!f) return;
    fputs("id,seq,bucket,copies,writers,kind,first_sent_at,partition,offset,times_sent\n", f);
    sqlite3_stmt *st, *led;
    sqlite3_prepare_v2(db, "SELECT kind, queued_ms, partition, offset, (SELECT count(*) FROM ledger l2 WHERE l2.seq=ledger.seq)"
                           " FROM ledger WHERE seq=? ORDER BY n LIMIT 1", -1, &led, NULL);
    if (sqlite3_prepare_v2(db, "SELECT seq, copies, writers FROM anomaly WHERE sink=? AND bucket=? ORDER BY seq", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, sink, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, bucket, -1, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
            int64_t seq = sqlite3_column_int64(st, 0);
            fprintf(f, "%s-%lld,%lld,%s,%lld,", tag, (long long)seq, (long long)seq, bucket, (long long)sqlite3_column_int64(st, 1));
            sd_csv(f, sd_col_text(st, 2));
            fputc(',', f);
            if (led) {
                sqlite3_bind_int64(led, 1, seq);
                if (sqlite3_step(led) == SQLITE_ROW) {
                    sd_csv(f, sd_col_text(led, 0)); fputc(',', f);
                    sd_iso_col(f, led, 1); fputc(',', f);
                    fputs(sd_col_text(led, 2), f); fputc(',', f);
                    fputs(sd_col_text(led, 3), f); fputc(',', f);
                    fprintf(f, "%lld", (long long)sqlite3_column_int64(led, 4));
                } else {
                    fputs(",,,,", f);
                }
                sqlite3_reset(led);
            }
            fputc('\n', f);
        }
        sqlite3_finalize(st);
    }
    if (led) sqlite3_finalize(led);
    fclose(f);
}

static void sd_export_unexpected(sqlite3 *db, const char *dir, const char *sink) {
    char *path = sd_util_fmt("%s/%s-unexpected.csv", dir, sink);
    FILE *f = fopen(path, "w");
    free(path);
    if (!f) return;
    fputs("id,copies,writers\n", f); /* the id as the sink holds it */
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT raw_id, copies, writers FROM unexpected WHERE sink=? ORDER BY rowid", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, sink, -1, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
            sd_csv(f, sd_col_text(st, 0));
            fprintf(f, ",%lld,", (long long)sqlite3_column_int64(st, 1));
            sd_csv(f, sd_col_text(st, 2));
            fputc('\n', f);
        }
        sqlite3_finalize(st);
    }
    fclose(f);
}

/* The second source's messages (table side), when the run had one. */
static int sd_export_side(sqlite3 *db, const char *dir, const char *tag) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT n, seq, event_time_ms, msg_key, partition, offset, queued_ms, acked_ms, error FROM side_ledger"
                               " ORDER BY n", -1, &st, NULL) != SQLITE_OK)
        return 0;
    char *path = sd_util_fmt("%s/deliveries.csv", dir);
    FILE *f = NULL;
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (!f && !(f = fopen(path, "w"))) break;
        if (!n++) fputs("n,id,scan_seq,event_time,key,partition,offset,queued_at,acked_at,error\n", f);
        fprintf(f, "%lld,%s-d%lld,%lld,", (long long)sqlite3_column_int64(st, 0), tag, (long long)sqlite3_column_int64(st, 1),
                (long long)sqlite3_column_int64(st, 1));
        sd_iso_col(f, st, 2); fputc(',', f);
        sd_csv(f, sd_col_text(st, 3)); fputc(',', f);
        fprintf(f, "%s,%s,", sd_col_text(st, 4), sd_col_text(st, 5));
        sd_iso_col(f, st, 6); fputc(',', f);
        sd_iso_col(f, st, 7); fputc(',', f);
        sd_csv(f, sd_col_text(st, 8));
        fputc('\n', f);
    }
    sqlite3_finalize(st);
    if (f) fclose(f);
    free(path);
    return n;
}

/* Every flagged group of each sink a result model judged; the file names. */
static void sd_export_groups(sqlite3 *db, const char *dir, json_t *files) {
    sqlite3_stmt *sinks, *st;
    if (sqlite3_prepare_v2(db, "SELECT DISTINCT sink FROM group_anomaly ORDER BY sink", -1, &sinks, NULL) != SQLITE_OK) return;
    while (sqlite3_step(sinks) == SQLITE_ROW) {
        const char *sink = sd_col_text(sinks, 0);
        char *path = sd_util_fmt("%s/%s-groups.csv", dir, sink);
        FILE *f = fopen(path, "w");
        free(path);
        if (!f) continue;
        fputs("window_start,keys,flags,detail\n", f);
        if (sqlite3_prepare_v2(db, "SELECT window_start_ms, keys, buckets, detail FROM group_anomaly WHERE sink=? ORDER BY rowid", -1, &st,
                               NULL) == SQLITE_OK) {
            sqlite3_bind_text(st, 1, sink, -1, SQLITE_STATIC);
            while (sqlite3_step(st) == SQLITE_ROW) {
                sd_iso_col(f, st, 0);
                for (int c = 1; c <= 3; c++) {
                    fputc(',', f);
                    sd_csv(f, sd_col_text(st, c));
                }
                fputc('\n', f);
            }
            sqlite3_finalize(st);
        }
        fclose(f);
        json_array_append_new(files, json_sprintf("%s-groups.csv", sink));
    }
    sqlite3_finalize(sinks);
}

static sd_err_t sd_export_write(const sd_report_model_t *m, const char *path, char *err, size_t errlen) {
    (void)path;
    char *dir = sd_util_fmt("%s/export", m->run_dir);
    sd_err_t e = sd_util_mkdirs(dir, err, errlen);
    if (e) { free(dir); return e; }
    char *dbp = sd_util_fmt("%s/run.db", m->run_dir);
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(dbp, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        e = sd_err_set(err, errlen, SD_ERR_IO, "export: open %s", dbp);
        sqlite3_close(db);
        free(dbp);
        free(dir);
        return e;
    }
    free(dbp);
    sqlite3_busy_timeout(db, 5000);
    json_t *man = json_object();
    json_object_set_new(man, "scenario", json_string(m->scenario));
    json_object_set_new(man, "file", json_string(m->file));
    json_object_set_new(man, "seed", json_string(m->seed));
    json_object_set_new(man, "tag", json_string(m->tag));
    json_object_set_new(man, "harness_version", json_string(m->version));
    json_object_set_new(man, "schema_version", json_integer(SD_MANIFEST_SCHEMA_VERSION));
    json_object_set_new(man, "started_at", json_string(m->started_at));
    json_object_set_new(man, "verdict", json_string(m->verdict));
    char iso[32];
    json_object_set_new(man, "exported_at", json_string(sd_util_iso8601(sd_util_wall_ms(), iso, sizeof(iso))));
    /* ledger totals: kept by the run (meta, ledger_series.c), else counted */
    sqlite3_stmt *st;
    int64_t messages = 0, distinct = 0;
    json_t *kinds = NULL;
    if (sqlite3_prepare_v2(db, "SELECT (SELECT value FROM meta WHERE key='ledger_messages'), (SELECT value FROM meta WHERE key="
                               "'ledger_distinct_ids'), (SELECT value FROM meta WHERE key='ledger_kinds')", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 2) != SQLITE_NULL) {
            messages = sqlite3_column_int64(st, 0);
            distinct = sqlite3_column_int64(st, 1);
            kinds = json_loads(sd_col_text(st, 2), 0, NULL);
        }
        sqlite3_finalize(st);
    }
    if (!json_is_object(kinds)) {
        json_decref(kinds);
        kinds = json_object();
        if (sqlite3_prepare_v2(db, "SELECT count(*), count(DISTINCT seq) FROM ledger", -1, &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW) { messages = sqlite3_column_int64(st, 0); distinct = sqlite3_column_int64(st, 1); }
            sqlite3_finalize(st);
        }
        if (sqlite3_prepare_v2(db, "SELECT kind, count(*) FROM ledger GROUP BY kind ORDER BY kind", -1, &st, NULL) == SQLITE_OK) {
            while (sqlite3_step(st) == SQLITE_ROW) json_object_set_new(kinds, sd_col_text(st, 0), json_integer(sqlite3_column_int64(st, 1)));
            sqlite3_finalize(st);
        }
    }
    json_object_set_new(man, "ledger", json_pack("{s:I, s:I, s:o}", "messages", (json_int_t)messages, "distinct_ids", (json_int_t)distinct,
                                                 "messages_by_kind", kinds));
    if (messages <= SD_EXPORT_LEDGER_MAX) {
        int64_t n = sd_export_ledger(db, dir, m->tag, err, errlen);
        json_object_set_new(man, "ledger_csv", n >= 0 ? json_string("ledger.csv") : json_null());
    } else {
        json_object_set_new(man, "ledger_csv", json_null());
        json_object_set_new(man, "ledger_csv_note",
                            json_sprintf("%lld messages: too many for a CSV here; the same rows are the table `ledger` of run.db "
                                         "(sqlite3 -csv run.db 'SELECT * FROM ledger_ids')", (long long)messages));
    }
    if (sd_export_side(db, dir, m->tag)) json_object_set_new(man, "deliveries_csv", json_string("deliveries.csv"));
    /* buckets */
    json_t *files = json_array();
    for (int i = 0; i < m->nbuckets; i++) {
        sd_export_bucket(db, dir, m->tag, m->buckets[i].sink, m->buckets[i].bucket);
        json_array_append_new(files, json_sprintf("%s-%s.csv", m->buckets[i].sink, m->buckets[i].bucket));
    }
    for (int i = 0; i < m->nunexpected; i++) {
        sd_export_unexpected(db, dir, m->unexpected[i].sink);
        json_array_append_new(files, json_sprintf("%s-unexpected.csv", m->unexpected[i].sink));
    }
    sd_export_groups(db, dir, files);
    json_object_set_new(man, "bucket_csvs", files);
    json_t *counts = json_object();
    char *cpath = sd_util_fmt("%s/counts.csv", dir);
    FILE *cf = fopen(cpath, "w");
    free(cpath);
    if (cf) fputs("count,value\n", cf);
    for (int i = 0; i < m->ncounts; i++) {
        json_object_set_new(counts, m->counts[i].name, json_integer(m->counts[i].value));
        if (cf) fprintf(cf, "%s,%lld\n", m->counts[i].name, (long long)m->counts[i].value);
    }
    if (cf) fclose(cf);
    json_object_set_new(man, "counts", counts);
    /* the tie-out: every id expected in the target in exactly one bucket */
    int64_t exp = sd_report_count(m, "expected_in_target");
    if (exp >= 0) {
        int64_t once = sd_report_count(m, "delivered_once"), dup = sd_report_count(m, "duplicated"), lost = sd_report_count(m, "lost"),
                unj = sd_report_count(m, "unjudgeable");
        /* counts of runs recorded before these buckets existed read -1 */
        int64_t mc = sd_report_count(m, "missing_copies"), nyc = sd_report_count(m, "not_yet_consumed");
        int64_t sum = once + dup + lost + unj + (mc > 0 ? mc : 0) + (nyc > 0 ? nyc : 0);
        json_object_set_new(man, "tie_out",
                            json_pack("{s:s, s:I, s:I, s:b}", "rule", "expected_in_target = delivered_once + duplicated + lost + missing_copies + not_yet_consumed + unjudgeable",
                                      "expected_in_target", (json_int_t)exp, "sum_of_buckets", (json_int_t)sum, "ties", sum == exp));
    }
    char *text = json_dumps(man, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(man);
    char *mpath = sd_util_fmt("%s/manifest.json", dir);
    e = text ? sd_util_write_file(mpath, text, strlen(text), err, errlen) : SD_ERR_INTERNAL;
    free(text);
    free(mpath);
    if (!e) {
        sd_buf_t rb;
        sd_buf_init(&rb);
        sd_buf_printf(&rb, "# %s: %s (%s)\n", m->scenario, m->verdict, m->started_at);
        sd_report_runbook_md(&rb, m);
        char *rpath = sd_util_fmt("%s/runbook.md", dir);
        e = sd_util_write_file(rpath, rb.data, rb.len, err, errlen);
        free(rpath);
        sd_buf_free(&rb);
    }
    sqlite3_close(db);
    free(dir);
    return e;
}

const sd_report_writer_t sd_report_export = {"export", "export", sd_export_write};
