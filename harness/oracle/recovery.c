/* recovery.c - the figures of each fault's recovery, from run.db (see
 * recovery.h; docs/oracle.md "Recovery figures" for the definitions).
 *
 * Everything here is a query over what the run recorded: the fault and its
 * step, the delivery reports (what Kafka had acknowledged when it struck),
 * the batches with the offsets their commits name, the anomalies with the
 * incarnation that wrote each copy, the latency samples. Nothing is
 * estimated that the tables cannot say; such a figure is "not measured"
 * with the reason, and an `expect` on it makes the run inconclusive. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recovery.h"
#include "util.h"


/* ---- what run.db holds, loaded once ---- */

typedef struct {
    int n, cap;
    int *p;
    int64_t *o;
} sd_offs_t;

typedef struct {
    int inc;
    int64_t id, begin_ms, commit_ms, rows; /* -1 where NULL */
    int has_offsets;
    sd_offs_t offs;                        /* the source topic's P:O, next offsets to read */
    int64_t sum;                           /* their sum */
} sd_rbatch_t;

typedef struct {
    int n;
    int64_t ended_ms;
    char ended_by[16];
} sd_rinc_t;

typedef struct {
    sqlite3 *db;
    const sd_recovery_in_t *in;
    sd_rbatch_t *b;
    int nb;
    sd_rinc_t *inc;
    int ninc;
    int64_t *lat_sent, *lat_seen;
    int64_t nlat;
    int has_begins; /* some batch has a begin */
} sd_rdb_t;

static void sd_offs_put(sd_offs_t *x, int p, int64_t o) {
    for (int i = 0; i < x->n; i++)
        if (x->p[i] == p) {
            if (o > x->o[i]) x->o[i] = o;
            return;
        }
    if (x->n == x->cap) {
        x->cap = x->cap ? x->cap * 2 : 8;
        x->p = sd_util_xrealloc(x->p, sizeof(int) * (size_t)x->cap);
        x->o = sd_util_xrealloc(x->o, sizeof(int64_t) * (size_t)x->cap);
    }
    x->p[x->n] = p;
    x->o[x->n++] = o;
}

static int64_t sd_offs_get(const sd_offs_t *x, int p) {
    for (int i = 0; i < x->n; i++)
        if (x->p[i] == p) return x->o[i];
    return -1;
}

typedef struct {
    sd_offs_t *x;
    int64_t *sum;
} sd_offs_acc_t;

static void sd_offs_one(void *opaque, int p, int64_t o) {
    sd_offs_acc_t *a = opaque;
    sd_offs_put(a->x, p, o);
    *a->sum += o;
}

/* An offsets list's source entries into x, their sum into *sum. */
static void sd_offs_parse(const char *s, sd_offs_t *x, int64_t *sum) {
    sd_offs_acc_t a = {x, sum};
    *sum = 0;
    sd_util_each_offset(s, sd_offs_one, &a);
}

static int64_t sd_col64(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

static int sd_rdb_load(sd_rdb_t *d, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(d->db, "SELECT incarnation, id, begin_ms, commit_ms, rows, offsets FROM batch ORDER BY coalesce(commit_ms, begin_ms), incarnation, id",
                           -1, &st, NULL) != SQLITE_OK)
        goto fail;
    while (sqlite3_step(st) == SQLITE_ROW) {
        d->b = sd_util_xrealloc(d->b, sizeof(*d->b) * (size_t)(d->nb + 1));
        sd_rbatch_t *b = &d->b[d->nb++];
        memset(b, 0, sizeof(*b));
        b->inc = sqlite3_column_int(st, 0);
        b->id = sd_col64(st, 1);
        b->begin_ms = sd_col64(st, 2);
        b->commit_ms = sd_col64(st, 3);
        b->rows = sd_col64(st, 4);
        const char *off = (const char *)sqlite3_column_text(st, 5);
        if (off && *off) {
            sd_offs_parse(off, &b->offs, &b->sum);
            b->has_offsets = b->offs.n > 0;
        }
        if (b->begin_ms >= 0) d->has_begins = 1;
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(d->db, "SELECT n, ended_ms, ended_by FROM incarnation ORDER BY n", -1, &st, NULL) != SQLITE_OK) goto fail;
    while (sqlite3_step(st) == SQLITE_ROW) {
        d->inc = sd_util_xrealloc(d->inc, sizeof(*d->inc) * (size_t)(d->ninc + 1));
        sd_rinc_t *c = &d->inc[d->ninc++];
        c->n = sqlite3_column_int(st, 0);
        c->ended_ms = sd_col64(st, 1);
        const char *by = (const char *)sqlite3_column_text(st, 2);
        snprintf(c->ended_by, sizeof(c->ended_by), "%s", by ? by : "");
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(d->db, "SELECT sent_ms, seen_ms FROM latency WHERE sink=? ORDER BY sent_ms", -1, &st, NULL) != SQLITE_OK) goto fail;
    sqlite3_bind_text(st, 1, d->in && d->in->sink ? d->in->sink : "", -1, SQLITE_STATIC);
    int64_t cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (d->nlat == cap) {
            cap = cap ? cap * 2 : 1024;
            d->lat_sent = sd_util_xrealloc(d->lat_sent, sizeof(int64_t) * (size_t)cap);
            d->lat_seen = sd_util_xrealloc(d->lat_seen, sizeof(int64_t) * (size_t)cap);
        }
        d->lat_sent[d->nlat] = sqlite3_column_int64(st, 0);
        d->lat_seen[d->nlat++] = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return 0;
fail:
    sd_err_set(err, errlen, SD_ERR_IO, "recovery: reading run.db: %s", sqlite3_errmsg(d->db));
    sqlite3_finalize(st);
    return -1;
}

static void sd_rdb_free(sd_rdb_t *d) {
    for (int i = 0; i < d->nb; i++) {
        free(d->b[i].offs.p);
        free(d->b[i].offs.o);
    }
    free(d->b);
    free(d->inc);
    free(d->lat_sent);
    free(d->lat_seen);
}

static const sd_rinc_t *sd_rdb_inc(const sd_rdb_t *d, int n) {
    for (int i = 0; i < d->ninc; i++)
        if (d->inc[i].n == n) return &d->inc[i];
    return NULL;
}

static void sd_why(sd_recovery_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sd_why(sd_recovery_t *r, const char *fmt, ...) {
    size_t l = strlen(r->why);
    if (l && l + 2 < sizeof(r->why)) {
        memcpy(r->why + l, "; ", 3);
        l += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    if (l < sizeof(r->why)) vsnprintf(r->why + l, sizeof(r->why) - l, fmt, ap);
    va_end(ap);
}

/* ---- caught up ---- */

/* The samples' bound: the n events sent before the fault are n rows at
 * least, so they were not all readable at a look of the harness that
 * counted fewer; when the first sample that counted n rows came after a
 * look later than caught_ms, the fault was caught up no earlier than that
 * sample (a commit ahead of the sink's writes, rows stamped when inserted
 * and visible at a later commit). */
static void sd_caught_by_samples(sd_rdb_t *d, sd_recovery_t *r, int64_t n) {
    sqlite3_stmt *st = NULL;
    /* the look before the sample: its own, else the sample before it, else none (0: no look contradicts anything) */
    if (sqlite3_prepare_v2(d->db, "SELECT t_ms, coalesce(looked_ms, (SELECT max(p.t_ms) FROM sample p WHERE p.sink=?1 AND p.t_ms<s.t_ms), 0)"
                                  " FROM sample s WHERE sink=?1 AND rows>=?2 ORDER BY t_ms LIMIT 1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, d->in && d->in->sink ? d->in->sink : "", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, n);
        if (sqlite3_step(st) == SQLITE_ROW) {
            int64_t t = sqlite3_column_int64(st, 0), looked = sqlite3_column_int64(st, 1);
            if (looked > r->caught_ms && t > r->caught_ms) {
                r->caught_ms = t;
                r->v[SD_FIG_recovery_s] = t - r->t_ms;
                snprintf(r->basis, sizeof(r->basis), "samples");
            }
        }
    }
    sqlite3_finalize(st);
}

static void sd_caught_by_commits(sd_rdb_t *d, sd_recovery_t *r);

/* When everything sent before the fault was in the target again: by its
 * rows' write times (the newest first write of an event sent before t),
 * else by the commits; never earlier than the harness's own looks at the
 * target allow; never when an event sent before t is not there at all. */
static void sd_caught(sd_rdb_t *d, sd_recovery_t *r) {
    int64_t n = 0, missing = 0, untimed = 0, newest = INT64_MIN;
    int rows = d->in && d->in->newest_seen;
    if (rows) newest = d->in->newest_seen(d->in->opaque, r->t_ms, &n, &missing, &untimed);
    if (missing) {
        snprintf(r->basis, sizeof(r->basis), "target");
        r->v[SD_FIG_recovery_s] = SD_FIG_NEVER;
        sd_why(r, "%lld of the %lld events sent before the fault never reached the target", (long long)missing, (long long)n);
        return;
    }
    if (rows && !untimed) {
        snprintf(r->basis, sizeof(r->basis), "target");
        if (newest < r->t_ms) newest = r->t_ms;
        r->caught_ms = newest;
        r->v[SD_FIG_recovery_s] = newest - r->t_ms;
    } else {
        sd_caught_by_commits(d, r); /* some rows without a write time: the target cannot say */
    }
    if (rows && n && r->caught_ms >= 0) sd_caught_by_samples(d, r, n);
}

/* By the commits: the first commit whose offsets reach, on every partition,
 * past the last message Kafka had acknowledged when the fault struck. */
static void sd_caught_by_commits(sd_rdb_t *d, sd_recovery_t *r) {
    int any = 0;
    for (int i = 0; i < d->nb; i++) any |= d->b[i].has_offsets && d->b[i].commit_ms >= 0;
    if (!any) {
        r->v[SD_FIG_recovery_s] = SD_FIG_UNMEASURED;
        sd_why(r, "recovery_s: the target gives no write times and no commit names its offsets");
        return;
    }
    /* what Kafka had acknowledged when it struck: recorded with the fault
     * (fault.acked); a run.db without it is asked (a scan of ack) */
    sd_offs_t acked = {0};
    int64_t sum = 0;
    if (r->acked[0]) {
        sd_offs_parse(r->acked, &acked, &sum);
    } else {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(d->db, "SELECT partition, max(offset) + 1 FROM ledger WHERE error IS NULL AND offset IS NOT NULL AND acked_ms<=?"
                                      " GROUP BY partition", -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, r->t_ms);
            while (sqlite3_step(st) == SQLITE_ROW) sd_offs_put(&acked, sqlite3_column_int(st, 0), sqlite3_column_int64(st, 1));
        }
        sqlite3_finalize(st);
    }
    snprintf(r->basis, sizeof(r->basis), "commits");
    /* nothing acknowledged before it: nothing to catch up with; else the
     * first commit whose offsets reach every partition's (a batch without
     * offsets, one that only began, reaches none: -1 below any) */
    int64_t caught = acked.n ? -1 : r->t_ms;
    for (int i = 0; i < d->nb && caught < 0; i++) {
        const sd_rbatch_t *b = &d->b[i];
        int covers = 1;
        for (int k = 0; k < acked.n && covers; k++) covers = sd_offs_get(&b->offs, acked.p[k]) >= acked.o[k];
        if (covers) caught = b->commit_ms > r->t_ms ? b->commit_ms : r->t_ms;
    }
    if (caught < 0) {
        r->v[SD_FIG_recovery_s] = SD_FIG_NEVER;
        sd_why(r, "no commit reached the offsets Kafka had acknowledged when the fault struck");
    } else {
        r->caught_ms = caught;
        r->v[SD_FIG_recovery_s] = caught - r->t_ms;
    }
    free(acked.p);
    free(acked.o);
}

/* A stall's end to the first batch begun or committed after it, or the
 * target growing (its samples), whichever comes first. */
static void sd_detect(sd_rdb_t *d, sd_recovery_t *r) {
    if (r->end_ms < 0) {
        r->v[SD_FIG_detect_s] = SD_FIG_UNMEASURED;
        sd_why(r, "detect_s: the stall did not end before the run did");
        return;
    }
    int64_t first = -1;
    for (int i = 0; i < d->nb; i++) {
        int64_t t[2] = {d->b[i].begin_ms, d->b[i].commit_ms};
        for (int k = 0; k < 2; k++)
            if (t[k] >= r->end_ms && (first < 0 || t[k] < first)) first = t[k];
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(d->db, "SELECT min(t_ms) FROM sample WHERE sink=?1 AND t_ms>=?2 AND rows>"
                                  " coalesce((SELECT rows FROM sample WHERE sink=?1 AND t_ms<?2 ORDER BY t_ms DESC LIMIT 1), 0)",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, d->in && d->in->sink ? d->in->sink : "", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, r->end_ms);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
            int64_t g = sqlite3_column_int64(st, 0);
            if (first < 0 || g < first) first = g;
        }
    }
    sqlite3_finalize(st);
    if (first < 0) {
        r->v[SD_FIG_detect_s] = SD_FIG_UNMEASURED;
        sd_why(r, "detect_s: no batch began or committed and the target did not grow after the stall ended");
    } else {
        r->v[SD_FIG_detect_s] = first - r->end_ms;
    }
}

/* ---- an idle timeout: the connections it dropped ---- */

static int sd_idle(const char *kind, const char *detail) { return !strcmp(kind, "network") && detail && !strncmp(detail, "idle timeout", 12); }

/* dropped_connections, and reconnect_s: the longest wait on a dropped
 * connection, from the client's first bytes on it to its close. Measured
 * only when the timeout tested something: a pipeline connection dropped,
 * or closed by its client after a silence the timeout would have dropped
 * it for (idle_watch); a pipeline that never went quiet, or that reached
 * the broker without the proxy, tested nothing, and a figure on it would
 * pass for nothing. */
static void sd_reconnect(sd_rdb_t *d, sd_recovery_t *r) {
    sqlite3_stmt *st = NULL;
    int64_t n = 0, longest = 0, open = 0;
    if (sqlite3_prepare_v2(d->db, "SELECT used_ms, closed_ms FROM idle_drop WHERE fault=?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, r->fault);
        while (sqlite3_step(st) == SQLITE_ROW) {
            n++;
            if (sqlite3_column_type(st, 0) == SQLITE_NULL) continue; /* never used again: nobody waited */
            if (sqlite3_column_type(st, 1) == SQLITE_NULL) { open++; continue; }
            int64_t w = sqlite3_column_int64(st, 1) - sqlite3_column_int64(st, 0);
            if (w > longest) longest = w;
        }
    }
    sqlite3_finalize(st);
    int64_t watched = 0, conns = 0, closed = 0, quiet = 0, timeout = 0;
    if (sqlite3_prepare_v2(d->db, "SELECT count(*), sum(connections), sum(quiet_closed), max(max_quiet_ms), max(timeout_ms) FROM idle_watch"
                                  " WHERE fault=?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, r->fault);
        if (sqlite3_step(st) == SQLITE_ROW) {
            watched = sqlite3_column_int64(st, 0), conns = sqlite3_column_int64(st, 1), closed = sqlite3_column_int64(st, 2);
            quiet = sqlite3_column_int64(st, 3), timeout = sqlite3_column_int64(st, 4);
        }
    }
    sqlite3_finalize(st);
    r->v[SD_FIG_dropped_connections] = n;
    r->v[SD_FIG_reconnect_s] = longest;
    if (!n && !closed) {
        r->v[SD_FIG_dropped_connections] = r->v[SD_FIG_reconnect_s] = SD_FIG_UNMEASURED;
        if (!watched)
            sd_why(r, "dropped_connections, reconnect_s: nothing was dropped, and run.db does not say what the timeout saw");
        else if (!conns)
            sd_why(r, "dropped_connections, reconnect_s: no pipeline connection went through the proxy while the idle timeout was "
                      "on (does the pipeline reach the broker through {proxy}?): nothing was tested");
        else
            sd_why(r, "dropped_connections, reconnect_s: none of the %lld pipeline connections through the proxy was quiet for the "
                      "timeout's %.1f s while it was on (the longest silence %.1f s): nothing was tested",
                   (long long)conns, (double)timeout / 1000.0, (double)quiet / 1000.0);
    } else if (open) {
        r->v[SD_FIG_reconnect_s] = SD_FIG_UNMEASURED;
        sd_why(r, "reconnect_s: %lld dropped connection%s still waited when the pipeline stopped", (long long)open, open == 1 ? "" : "s");
    }
}

/* An application that logs its state (Kafka Streams: run.db engine): from
 * its first rebalance after the fault until every incarnation alive was
 * RUNNING again, and the changelog records restored meanwhile. The times
 * are the harness's, when it read each line. Not an engine that logs its
 * state (or an older run.db): n/a. */
static void sd_restore(sd_rdb_t *d, sd_recovery_t *r) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(d->db, "SELECT incarnation, t_ms, what, to_state, records FROM engine ORDER BY t_ms, rowid", -1, &st, NULL) !=
        SQLITE_OK)
        return;
    int *running = sd_util_xcalloc((size_t)d->ninc + 1, sizeof(int)), *seen = sd_util_xcalloc((size_t)d->ninc + 1, sizeof(int));
    int any = 0;
    int64_t from = -1, until = -1, records = 0;
    while (until < 0 && sqlite3_step(st) == SQLITE_ROW) {
        const sd_rinc_t *inc = sd_rdb_inc(d, sqlite3_column_int(st, 0));
        int k = inc ? (int)(inc - d->inc) : d->ninc;
        int64_t t = sqlite3_column_int64(st, 1);
        const char *what = (const char *)sqlite3_column_text(st, 2), *to = (const char *)sqlite3_column_text(st, 3);
        if (what && !strcmp(what, "restored")) {
            if (from >= 0) records += sqlite3_column_int64(st, 4);
            continue;
        }
        if (!to) continue;
        any = 1;
        seen[k] = 1;
        running[k] = !strcmp(to, "RUNNING");
        if (from < 0 && t >= r->t_ms && !strcmp(to, "REBALANCING")) from = t;
        if (from < 0 || k == d->ninc) continue;
        int all = 1;
        for (int i = 0; i < d->ninc && all; i++)
            if (seen[i] && !running[i] && (d->inc[i].ended_ms < 0 || d->inc[i].ended_ms > t)) all = 0;
        if (all) until = t;
    }
    sqlite3_finalize(st);
    free(running);
    free(seen);
    if (!any) return;
    if (from < 0 && !r->ends) {
        r->v[SD_FIG_restore_s] = r->v[SD_FIG_restored_records] = 0; /* it went on without a rebalance */
        return;
    }
    r->v[SD_FIG_restored_records] = records;
    if (from >= 0 && until >= 0) r->v[SD_FIG_restore_s] = until - from;
    else if (from >= 0) r->v[SD_FIG_restore_s] = SD_FIG_NEVER;
    else {
        r->v[SD_FIG_restore_s] = r->v[SD_FIG_restored_records] = SD_FIG_UNMEASURED;
        sd_why(r, "restore_s: the application logged no rebalance after the fault");
    }
}

/* A broker fault: how long the partitions it led had no usable leader
 * (run.db leader_move; NULL: none within the step's timeout). */
static void sd_leaderless(sd_rdb_t *d, sd_recovery_t *r) {
    sqlite3_stmt *st = NULL;
    int64_t longest = 0, never = 0;
    if (sqlite3_prepare_v2(d->db, "SELECT leaderless_ms FROM leader_move WHERE fault=?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, r->fault);
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (sqlite3_column_type(st, 0) == SQLITE_NULL) never++;
            else if (sqlite3_column_int64(st, 0) > longest) longest = sqlite3_column_int64(st, 0);
        }
    }
    sqlite3_finalize(st);
    r->v[SD_FIG_leaderless_s] = never ? SD_FIG_NEVER : longest;
}

/* ---- the recovery point (faults that end an incarnation) ---- */

static void sd_recovery_point(sd_rdb_t *d, sd_recovery_t *r, const int64_t *rows_visible) {
    int k = r->incarnation;
    /* reached: the last commit before the fault plus the batches in flight
     * (begun in k before it, not committed there) */
    int64_t inflight = 0, unknown_rows = 0;
    const sd_rbatch_t *before = NULL, *after = NULL;
    for (int i = 0; i < d->nb; i++) {
        const sd_rbatch_t *b = &d->b[i];
        if (b->has_offsets && b->commit_ms >= 0 && b->commit_ms <= r->t_ms && b->inc <= k) before = b;
        if (b->has_offsets && b->commit_ms > r->t_ms && b->inc > k && !after) after = b;
        if (b->inc != k || b->begin_ms < 0 || b->begin_ms > r->t_ms || (b->commit_ms >= 0 && b->commit_ms <= r->t_ms)) continue;
        if (b->rows >= 0) inflight += b->rows;
        else unknown_rows++;
    }
    int64_t reached = (before ? before->sum : 0) + inflight;
    if (!d->has_begins) {
        r->v[SD_FIG_batches_rerun] = r->v[SD_FIG_replayed_input] = SD_FIG_UNMEASURED;
        sd_why(r, "replayed_input, batches_rerun: the progress source reports no batch's begin, so what was read past the last "
                  "commit is unknown");
    } else {
        /* batches_rerun: a batch in flight begun again by a later
         * incarnation under its id, over input it had read (where the later
         * batch says where it started: its offsets less its rows) */
        int64_t rerun = 0;
        for (int i = 0; i < d->nb; i++) {
            const sd_rbatch_t *b = &d->b[i];
            if (b->inc != k || b->begin_ms < 0 || b->begin_ms > r->t_ms || (b->commit_ms >= 0 && b->commit_ms <= r->t_ms)) continue;
            for (int j = 0; j < d->nb; j++) {
                const sd_rbatch_t *c = &d->b[j];
                if (c->inc <= k || c->id != b->id) continue;
                if (c->has_offsets && c->rows >= 0 && !unknown_rows && c->sum - c->rows >= reached) continue; /* new input under an old id */
                rerun++;
                break;
            }
        }
        r->v[SD_FIG_batches_rerun] = rerun;
        /* replayed_input: reached against where the next incarnation began
         * reading (its first commit's offsets less the rows it read) */
        if (unknown_rows) {
            r->v[SD_FIG_replayed_input] = SD_FIG_UNMEASURED;
            sd_why(r, "replayed_input: the size of the batch in flight is unknown");
        } else if (!after) {
            r->v[SD_FIG_replayed_input] = SD_FIG_UNMEASURED;
            sd_why(r, "replayed_input: no later incarnation committed a batch with offsets");
        } else {
            int64_t start = after->rows >= 0 ? after->sum - after->rows : (before ? before->sum : 0);
            r->v[SD_FIG_replayed_input] = reached > start ? reached - start : 0;
        }
    }
    /* rewritten_rows: the interrupted batch's rows already visible, or the
     * extra copies by later incarnations of ids first written by this one
     * (ids the harness itself sent more than once are left out) */
    int64_t traced = 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(d->db, "SELECT writers FROM anomaly WHERE sink=? AND bucket='duplicated' AND writers IS NOT NULL"
                                  " AND (SELECT count(*) FROM sent s WHERE s.seq = anomaly.seq) = 1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, d->in && d->in->sink ? d->in->sink : "", -1, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *w = (const char *)sqlite3_column_text(st, 0);
            int first = 0, later = 0, ambiguous = 0;
            int incs[64], n = 0;
            for (const char *s = w; s && *s && n < 64;) {
                const char *end = strstr(s, "; ");
                size_t len = end ? (size_t)(end - s) : strlen(s);
                const char *at = memmem(s, len, "incarnation ", 12);
                int v = 0;
                if (at && sscanf(at + 12, "%d", &v) == 1 && v > 0) {
                    const char *after_n = at + 12;
                    while (*after_n >= '0' && *after_n <= '9') after_n++;
                    if (!strncmp(after_n, " or ", 4)) ambiguous = 1;
                    incs[n++] = v;
                } else {
                    ambiguous = 1;
                }
                s = end ? end + 2 : NULL;
            }
            if (ambiguous || !n) continue;
            first = incs[0];
            for (int i = 1; i < n; i++)
                if (incs[i] < first) first = incs[i];
            for (int i = 0; i < n; i++) later += incs[i] > first;
            if (first == k) traced += later;
        }
    }
    sqlite3_finalize(st);
    /* the visible rows are written again only if their input is read again */
    int64_t vis = *rows_visible >= 0 ? *rows_visible : 0, replayed = r->v[SD_FIG_replayed_input];
    if (replayed >= 0 && replayed != SD_FIG_NEVER && vis > replayed) vis = replayed;
    r->v[SD_FIG_rewritten_rows] = vis > traced ? vis : traced;
}

/* ---- latency around the fault ---- */

static int sd_cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void sd_window(const sd_rdb_t *d, int64_t from, int64_t to, int64_t *p50, int64_t *p99) {
    if (d->in && d->in->window_latency) { /* exact: every event, not the charts' sample */
        if (!d->in->window_latency(d->in->opaque, from, to, p50, p99)) *p50 = *p99 = SD_FIG_UNMEASURED;
        return;
    }
    int64_t *v = sd_util_xmalloc(sizeof(int64_t) * (size_t)(d->nlat + 1)), n = 0;
    for (int64_t i = 0; i < d->nlat; i++)
        if (d->lat_sent[i] >= from && d->lat_sent[i] < to) v[n++] = d->lat_seen[i] - d->lat_sent[i];
    if (!n) {
        *p50 = *p99 = SD_FIG_UNMEASURED;
    } else {
        qsort(v, (size_t)n, sizeof(int64_t), sd_cmp64);
        *p50 = v[(n - 1) * 50 / 100];
        *p99 = v[(n - 1) * 99 / 100];
    }
    free(v);
}

/* ---- the faults ---- */

static int sd_ends(const char *kind) { return !strcmp(kind, "kill") || !strcmp(kind, "stop") || !strcmp(kind, "crash"); }
static int sd_stall(const char *kind) { return !strcmp(kind, "pause") || !strcmp(kind, "network"); }

int sd_recovery_compute(sqlite3 *db, const sd_recovery_in_t *in, sd_recovery_t **out, char *err, size_t errlen) {
    *out = NULL;
    sd_rdb_t d = {.db = db, .in = in};
    if (sd_rdb_load(&d, err, errlen)) {
        sd_rdb_free(&d);
        return -1;
    }
    /* whether the target gave any write time at all: over every event when
     * the observations are at hand, else the charts' sample */
    int64_t q50, q99;
    int timed = in && in->window_latency ? in->window_latency(in->opaque, INT64_MIN, INT64_MAX, &q50, &q99) > 0 : d.nlat > 0;
    /* faults: what interrupts the pipeline; records that undo one (a
     * resume, a lifted blackhole), restarts of a stopped pipeline, clock
     * steps and faults that did not land are not */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT f.id, f.t_ms, f.kind, f.incarnation, f.rows_visible, f.end_ms, s.line, s.started_ms, f.detail, f.acked"
                               " FROM fault f LEFT JOIN step s ON s.idx = f.step"
                               " WHERE f.undoes IS NULL AND f.kind IN ('kill','stop','crash','restart','pause','network','damage','broker','command')"
                               " AND f.detail <> 'did not land' AND coalesce(f.struck, 1) = 1 ORDER BY f.t_ms, f.id", -1, &st, NULL) != SQLITE_OK) {
        sd_err_set(err, errlen, SD_ERR_IO, "recovery: reading run.db's faults: %s", sqlite3_errmsg(db));
        sd_rdb_free(&d);
        return -1;
    }
    sd_recovery_t *v = NULL;
    int64_t *vis = NULL;
    int *idle = NULL;
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *kind = (const char *)sqlite3_column_text(st, 2);
        const char *detail = (const char *)sqlite3_column_text(st, 8);
        if (!kind) continue;
        int inc = sqlite3_column_int(st, 3);
        int64_t t = sqlite3_column_int64(st, 1);
        if (!strcmp(kind, "restart")) {
            /* a restart is a fault when it stopped a running incarnation:
             * from the step's start, when the stop began */
            const sd_rinc_t *prev = sd_rdb_inc(&d, inc - 1);
            int64_t began = sd_col64(st, 7);
            if (!prev || strcmp(prev->ended_by, "stop") || began < 0 || prev->ended_ms < began) continue;
            inc = inc - 1;
            t = began;
        }
        v = sd_util_xrealloc(v, sizeof(*v) * (size_t)(n + 1));
        vis = sd_util_xrealloc(vis, sizeof(*vis) * (size_t)(n + 1));
        idle = sd_util_xrealloc(idle, sizeof(*idle) * (size_t)(n + 1));
        idle[n] = sd_idle(kind, detail);
        sd_recovery_t *r = &v[n];
        memset(r, 0, sizeof(*r));
        r->fault = sqlite3_column_int64(st, 0);
        r->line = (int)(sd_col64(st, 6) > 0 ? sd_col64(st, 6) : 0);
        snprintf(r->kind, sizeof(r->kind), "%s", kind);
        r->incarnation = inc;
        r->ends = sd_ends(kind) || !strcmp(kind, "restart");
        r->t_ms = t;
        r->end_ms = sd_col64(st, 5);
        if (!strcmp(kind, "network") && detail && !strncmp(detail, "every connection reset", 22)) r->end_ms = t; /* an instant */
        r->caught_ms = -1;
        const char *acked = (const char *)sqlite3_column_text(st, 9);
        snprintf(r->acked, sizeof(r->acked), "%s", acked ? acked : "");
        for (int f = 0; f < SD_FIG__COUNT; f++) r->v[f] = SD_FIG_NA;
        vis[n] = sd_col64(st, 4);
        n++;
    }
    sqlite3_finalize(st);
    for (int i = 0; i < n; i++) {
        sd_recovery_t *r = &v[i];
        sd_caught(&d, r);
        if (!strcmp(r->kind, "broker")) sd_leaderless(&d, r);
        sd_restore(&d, r);
        if (idle[i]) sd_reconnect(&d, r); /* not a stall: nothing stops until a client reuses a dropped connection */
        else if (sd_stall(r->kind)) sd_detect(&d, r);
        if (r->ends && r->incarnation > 0) sd_recovery_point(&d, r, &vis[i]);
        else if (r->ends) {
            r->v[SD_FIG_replayed_input] = r->v[SD_FIG_rewritten_rows] = r->v[SD_FIG_batches_rerun] = SD_FIG_UNMEASURED;
            sd_why(r, "the fault names no incarnation");
        }
    }
    /* operator_s: the operator steps' time inside each recovery (until it
     * caught up, else until the next fault) */
    sqlite3_stmt *os = NULL;
    if (sqlite3_prepare_v2(db, "SELECT started_ms, ended_ms FROM step WHERE text LIKE 'operator %' AND status='ok' AND ended_ms IS NOT NULL",
                           -1, &os, NULL) == SQLITE_OK) {
        for (int i = 0; i < n; i++) v[i].v[SD_FIG_operator_s] = 0;
        while (sqlite3_step(os) == SQLITE_ROW) {
            int64_t a0 = sqlite3_column_int64(os, 0), a1 = sqlite3_column_int64(os, 1);
            for (int i = 0; i < n; i++) {
                int64_t b0 = v[i].t_ms, b1 = v[i].caught_ms >= 0 ? v[i].caught_ms : i + 1 < n ? v[i + 1].t_ms : INT64_MAX;
                int64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
                if (hi > lo) v[i].v[SD_FIG_operator_s] += hi - lo;
            }
        }
    }
    sqlite3_finalize(os);
    /* latency: before (since the previous recovery ended), during, after
     * (until the next fault) */
    for (int i = 0; i < n; i++) {
        sd_recovery_t *r = &v[i];
        int64_t prev_end = INT64_MIN, next = INT64_MAX;
        if (i) {
            prev_end = v[i - 1].caught_ms >= 0 ? v[i - 1].caught_ms : v[i - 1].t_ms;
            if (v[i - 1].end_ms > prev_end) prev_end = v[i - 1].end_ms;
        }
        if (i + 1 < n) next = v[i + 1].t_ms;
        /* during: until it was caught up, or the fault ended if later (a
         * stall or an idle timeout lasts beyond the events before it) */
        int64_t caught = r->caught_ms >= 0 ? r->caught_ms : next;
        int64_t settled = r->caught_ms >= 0 && r->end_ms > r->caught_ms ? r->end_ms : r->caught_ms;
        if (r->caught_ms >= 0 && caught < settled) caught = settled;
        sd_window(&d, prev_end, r->t_ms, &r->v[SD_FIG_latency_p50_before_ms], &r->v[SD_FIG_latency_p99_before_ms]);
        sd_window(&d, r->t_ms, caught > r->t_ms ? caught : r->t_ms, &r->v[SD_FIG_latency_p50_during_ms], &r->v[SD_FIG_latency_p99_during_ms]);
        if (r->caught_ms >= 0)
            sd_window(&d, settled, next, &r->v[SD_FIG_latency_p50_after_ms], &r->v[SD_FIG_latency_p99_after_ms]);
        else
            r->v[SD_FIG_latency_p50_after_ms] = r->v[SD_FIG_latency_p99_after_ms] = SD_FIG_UNMEASURED;
        static const char *const part[3] = {"before", "during", "after"};
        for (int w = 0; w < 3 && timed; w++)
            if (r->v[SD_FIG_latency_p50_before_ms + 2 * w] == SD_FIG_UNMEASURED)
                sd_why(r, "latency %s: %s", part[w], w == 2 && r->caught_ms < 0 ? "it did not catch up" : "no event with a write time was sent then");
        if (!timed) {
            for (int f = SD_FIG_latency_p50_before_ms; f <= SD_FIG_latency_p99_after_ms; f++) r->v[f] = SD_FIG_UNMEASURED;
            sd_why(r, "latency: the target gives no write times");
        }
    }
    free(vis);
    free(idle);
    sd_rdb_free(&d);
    *out = v;
    return n;
}

sd_err_t sd_recovery_store(sqlite3 *db, const sd_recovery_t *v, int n, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO recovery(fault, line, kind, incarnation, t_ms, end_ms, caught_ms, basis, figures, why)"
                               " VALUES(?,?,?,?,?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
        return sd_err_set(err, errlen, SD_ERR_IO, "recovery: cannot record the recovery figures in run.db: %s", sqlite3_errmsg(db));
    sd_err_t e = SD_OK;
    for (int i = 0; i < n && !e; i++) {
        const sd_recovery_t *r = &v[i];
        sd_buf_t b = {0};
        sd_buf_putc(&b, '{');
        for (int f = 0; f < SD_FIG__COUNT; f++) {
            int64_t x = r->v[f];
            sd_buf_printf(&b, "%s\"%s\":", f ? "," : "", sd_figure_name(f));
            /* null: does not apply */
            if (x == SD_FIG_NA) sd_buf_puts(&b, "null");
            else if (x == SD_FIG_UNMEASURED) sd_buf_puts(&b, "\"not measured\"");
            else if (x == SD_FIG_NEVER) sd_buf_puts(&b, "\"never\"");
            else sd_buf_printf(&b, "%lld", (long long)x);
        }
        sd_buf_putc(&b, '}');
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, r->fault);
        sqlite3_bind_int(st, 2, r->line);
        sqlite3_bind_text(st, 3, r->kind, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 4, r->incarnation);
        sqlite3_bind_int64(st, 5, r->t_ms);
        if (r->end_ms >= 0) sqlite3_bind_int64(st, 6, r->end_ms);
        else sqlite3_bind_null(st, 6);
        if (r->caught_ms >= 0) sqlite3_bind_int64(st, 7, r->caught_ms);
        else sqlite3_bind_null(st, 7);
        sqlite3_bind_text(st, 8, r->basis, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 9, b.data, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 10, r->why, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) e = sd_err_set(err, errlen, SD_ERR_IO, "recovery: cannot record fault %lld's figures: %s", (long long)r->fault, sqlite3_errmsg(db));
        sd_buf_free(&b);
    }
    sqlite3_finalize(st);
    return e;
}
