/* progress_spark.c - progress from a Spark checkpoint (`progress spark`).
 *
 * Batch N is in flight while offsets/N exists and commits/N does not. A
 * new incarnation re-runs the batch its predecessor planned and did not
 * commit: that batch begins again when the incarnation starts. In
 * real-time mode (`batches=real-time`) Spark writes offsets/N when
 * interval N ends, so interval N runs from the commit of N-1 to its own
 * commit. The query itself says it is up (SD-READY): the checkpoint shows
 * batches of earlier incarnations too. */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "progress_batch.h"
#include "run.h"
#include "spark_checkpoint.h"

/* The checkpoint watched, and what was reported of it for the newest incarnation. */
typedef struct {
    sd_spark_t *spark;
    char *chk;                 /* the checkpoint's path */
    int64_t planned, committed;
    int inc;
} sd_spark_source_t;

/* Batch ids looked at in one poll: of more new ones at once (ids that
 * jump past a gap, a checkpoint of another query) the newest are taken,
 * the rest crossed in one step. */
#define SD_SPARK_STEP_IDS 64

/* Spark: a commit event for each batch committed since the last poll
 * (each commits/N file, not each number below the newest). */
static sd_err_t sd_spark_progress_commits(sd_run_t *r, sd_spark_source_t *S, const sd_spark_state_t *st, char *err, size_t errlen) {
    sd_err_t e = SD_OK;
    if (st->committed <= S->committed) return SD_OK;
    int64_t ids[SD_SPARK_STEP_IDS];
    int k = sd_spark_ids(S->spark, 1, S->committed, st->committed, ids, SD_SPARK_STEP_IDS);
    for (int i = 0; !e && i < k; i++) {
        int64_t n = ids[i];
        char *off = sd_spark_offsets_text(S->spark, n);
        e = sd_progress_batch_event(r, SD_SUP_EV_COMMIT, sd_run_progress(r)->bs.incarnation, n, sd_spark_batch_rows(S->spark, n), off,
                                    n == st->committed && st->committed_mtime ? st->committed_mtime : sd_util_wall_ms(), err, errlen);
        free(off);
    }
    S->committed = st->committed;
    return e;
}

static sd_err_t sd_spark_damaged_err(sd_spark_source_t *S, sd_err_t e, char *err, size_t errlen) {
    const char *d = sd_spark_damaged(S->spark);
    return e || !d ? e : sd_err_set(err, errlen, SD_ERR_CHECKPOINT, "%s", d);
}

/* Spark: turn checkpoint changes into batch events for the newest incarnation. */
static sd_err_t sd_spark_progress_poll(sd_run_t *r, char *err, size_t errlen) {
    sd_progress_run_t *P = sd_run_progress(r);
    sd_spark_source_t *S = P->source;
    if (!S || !P->bs.incarnation) return SD_OK;
    sd_spark_state_t st;
    sd_err_t e = sd_spark_poll(S->spark, &st, err, errlen);
    if (e) return e;
    if (S->inc != P->bs.incarnation) {
        /* a new incarnation re-runs the uncommitted batch, if any */
        S->inc = P->bs.incarnation;
        S->planned = st.committed;
        S->committed = st.committed;
    }
    if (sd_run_sc(r)->spark_realtime) {
        /* Real-time mode writes offsets/N when interval N ends, just before
         * commits/N: batch N runs from the commit of N-1 (or the start of the
         * incarnation) to its own commit. */
        e = sd_spark_progress_commits(r, S, &st, err, errlen);
        if (!e && S->planned < st.committed + 1) {
            int64_t t = st.committed_mtime > P->inc_started_wall ? st.committed_mtime : P->inc_started_wall;
            S->planned = st.committed + 1;
            e = sd_progress_batch_event(r, SD_SUP_EV_BEGIN, P->bs.incarnation, S->planned, -1, NULL, t, err, errlen);
            P->bs.begun_with_incarnation = t == P->inc_started_wall;
        }
        return sd_spark_damaged_err(S, e, err, errlen);
    }
    if (st.planned > S->planned) {
        /* each offsets/N planned since the last poll and not committed
         * begins; one planned by an earlier incarnation begins again now */
        int64_t from = S->planned > st.committed ? S->planned : st.committed, ids[SD_SPARK_STEP_IDS];
        int k = sd_spark_ids(S->spark, 0, from, st.planned, ids, SD_SPARK_STEP_IDS);
        for (int i = 0; !e && i < k; i++) {
            int64_t n = ids[i];
            int64_t t = n == st.planned && st.planned_mtime ? st.planned_mtime : sd_util_wall_ms();
            int rerun = t < P->inc_started_wall;
            if (rerun) t = P->inc_started_wall;
            e = sd_progress_batch_event(r, SD_SUP_EV_BEGIN, P->bs.incarnation, n, sd_spark_batch_rows(S->spark, n), NULL, t, err, errlen);
            P->bs.begun_with_incarnation = rerun;
        }
        S->planned = st.planned;
    }
    if (!e) e = sd_spark_progress_commits(r, S, &st, err, errlen);
    return sd_spark_damaged_err(S, e, err, errlen);
}

static sd_err_t sd_spark_progress_open(sd_run_t *r, void **state, char *err, size_t errlen) {
    char *chk = sd_scenario_expand(sd_run_sc(r)->checkpoint ? sd_run_sc(r)->checkpoint : "{checkpoint}", sd_run_vars(r), err, errlen);
    if (!chk) return SD_ERR_SCENARIO;
    sd_spark_source_t *S = sd_util_xcalloc(1, sizeof(*S));
    *state = S;
    sd_err_t e = sd_spark_open(chk, sd_run_topic(r), sd_run_partitions(r), &S->spark, err, errlen);
    int side_parts;
    const char *side = sd_run_side_topic(r, &side_parts);
    if (!e && side) sd_spark_set_side(S->spark, side, side_parts);
    sd_ledger_meta_set(sd_run_ledger(r), "spark_checkpoint", chk, NULL, 0);
    S->chk = chk;
    return e;
}

static int sd_spark_progress_batch_ends(sd_run_t *r, const int64_t **ids, const int64_t **ends) {
    sd_spark_source_t *S = sd_run_progress(r)->source;
    return sd_spark_batch_ends(S->spark, ids, ends);
}

/* One checkpoint's newest offsets/N and commits/N, the batch in flight and
 * the watermark it runs with. */
static void sd_spark_context_one(sd_spark_t *sp, const char *name, sd_buf_t *out) {
    sd_spark_state_t st;
    if (sd_spark_poll(sp, &st, NULL, 0)) {
        sd_buf_printf(out, "%scheckpoint %s: %s", out->len ? "; " : "", name, sd_spark_damaged(sp) ? sd_spark_damaged(sp) : "unreadable");
        return;
    }
    sd_buf_printf(out, "%scheckpoint %s: ", out->len ? "; " : "", name);
    if (st.planned < 0) {
        sd_buf_puts(out, "no batch planned yet");
        return;
    }
    sd_buf_printf(out, "offsets/%lld, ", (long long)st.planned);
    if (st.committed >= 0) sd_buf_printf(out, "commits/%lld", (long long)st.committed);
    else sd_buf_puts(out, "no commit");
    if (st.planned > st.committed) sd_buf_printf(out, " (batch %lld in flight)", (long long)st.planned);
    int64_t wm;
    char iso[40];
    if (!sd_spark_watermark(sp, st.planned, &wm))
        sd_buf_printf(out, ", watermark %s", wm > 0 ? sd_util_iso8601(wm, iso, sizeof(iso)) : "none yet");
}

static int sd_spark_cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The most other queries' checkpoints the runbook names. */
#define SD_SPARK_SIBLINGS 16

/* This checkpoint, and every other query's beside it (the folders of its
 * parent that hold an offsets/ folder: a job of several queries keeps one
 * checkpoint each, the quarantine query's among them). */
static void sd_spark_progress_context(sd_run_t *r, sd_buf_t *out) {
    sd_spark_source_t *S = sd_run_progress(r)->source;
    char *parent = sd_util_dirname(S->chk);
    const char *slash = strrchr(S->chk, '/'), *base = slash ? slash + 1 : S->chk;
    sd_spark_context_one(S->spark, base, out);
    DIR *d = opendir(parent);
    struct dirent *de;
    char *names[SD_SPARK_SIBLINGS];
    int n = 0;
    while (d && n < SD_SPARK_SIBLINGS && (de = readdir(d))) {
        if (de->d_name[0] == '.' || !strcmp(de->d_name, base)) continue;
        char *off = sd_util_fmt("%s/%s/offsets", parent, de->d_name);
        struct stat sb;
        if (!lstat(off, &sb) && S_ISDIR(sb.st_mode)) names[n++] = sd_util_strdup(de->d_name);
        free(off);
    }
    if (d) closedir(d);
    qsort(names, (size_t)n, sizeof(char *), sd_spark_cmp_name);
    for (int i = 0; i < n; i++) {
        char *path = sd_util_fmt("%s/%s", parent, names[i]);
        sd_spark_t *sp;
        if (!sd_spark_open(path, sd_run_topic(r), sd_run_partitions(r), &sp, NULL, 0)) {
            sd_spark_context_one(sp, names[i], out);
            sd_spark_close(sp);
        }
        free(path);
        free(names[i]);
    }
    free(parent);
}

static void sd_spark_progress_close(void *state) {
    sd_spark_source_t *S = state;
    free(S->chk);
    sd_spark_close(S->spark);
    free(S);
}

static int sd_spark_progress_ready(sd_run_t *r, const sd_sup_state_t *st, int64_t up_ms) {
    (void)r; (void)up_ms;
    return st->ready;
}

const sd_progress_ops_t sd_progress_spark = {.name = "spark", .batches = 1, .open = sd_spark_progress_open,
                                             .close = sd_spark_progress_close, .poll = sd_spark_progress_poll,
                                             .batch_ends = sd_spark_progress_batch_ends, .context = sd_spark_progress_context,
                                             .ready = sd_spark_progress_ready};

/* Spark's own account of a batch (StreamingQueryProgress JSON), and the
 * state each stateful operator kept after it. */
sd_err_t sd_progress_spark_account(sd_run_t *r, int inc, int64_t t_ms, const char *text, char *err, size_t errlen) {
    json_t *o = json_loads(text, 0, NULL);
    if (!o) return SD_OK;
    sd_progress_run_t *P = sd_run_progress(r);
    int64_t batch = json_integer_value(json_object_get(o, "batchId"));
    int64_t rows = json_integer_value(json_object_get(o, "numInputRows"));
    const char *name = json_string_value(json_object_get(o, "name"));
    int64_t dur = json_integer_value(json_object_get(json_object_get(o, "durationMs"), "triggerExecution"));
    int64_t dropped = 0, wm = INT64_MIN;
    const char *wms = json_string_value(json_object_get(json_object_get(o, "eventTime"), "watermark"));
    /* before any event Spark reports the epoch: no watermark yet */
    if (wms && (sd_util_parse_iso8601(wms, &wm) || wm <= 0)) wm = INT64_MIN;
    json_t *ops = json_object_get(o, "stateOperators");
    size_t i;
    json_t *op;
    json_array_foreach(ops, i, op) dropped += json_integer_value(json_object_get(op, "numRowsDroppedByWatermark"));
    if (batch >= 0 && batch + 1 > P->account_next) P->account_next = batch + 1;
    if (json_array_size(ops)) P->account_stateful = 1;
    sd_err_t e = sd_ledger_progress(sd_run_ledger(r), inc, t_ms, name ? name : "", batch, rows, dropped, dur, text, err, errlen);
    json_array_foreach(ops, i, op) {
        if (e) break;
        char opname[96];
        const char *on = json_string_value(json_object_get(op, "operatorName"));
        snprintf(opname, sizeof(opname), "%s#%zu", on ? on : "operator", i);
        json_t *cm = json_object_get(op, "customMetrics");
        char *custom = json_object_size(cm) ? json_dumps(cm, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
#define SD_FIG(k) (json_is_integer(json_object_get(op, k)) ? json_integer_value(json_object_get(op, k)) : INT64_MIN)
        sd_state_row_t s = {.incarnation = inc, .t_ms = t_ms, .query = name, .batch = batch, .op = opname,
                            .rows_total = SD_FIG("numRowsTotal"), .rows_updated = SD_FIG("numRowsUpdated"),
                            .rows_removed = SD_FIG("numRowsRemoved"), .memory_bytes = SD_FIG("memoryUsedBytes"),
                            .watermark_ms = wm, .input_rows = rows, .custom = custom};
#undef SD_FIG
        e = sd_ledger_state(sd_run_ledger(r), &s, err, errlen);
        free(custom);
    }
    json_decref(o);
    return e;
}

int sd_progress_spark_ranges(void *run, const char *json, sd_offset_range_t **out) {
    const char *topic = sd_run_topic(run);
    json_t *o = json_loads(json, 0, NULL);
    int n = 0, cap = 0, known = 0;
    size_t i;
    json_t *src;
    *out = NULL;
    json_array_foreach(json_object_get(o, "sources"), i, src) {
        /* Spark writes each source's offsets as a JSON object, or as its text */
        json_t *so = json_object_get(src, "startOffset"), *eo = json_object_get(src, "endOffset");
        if (json_is_string(so)) so = json_loads(json_string_value(so), 0, NULL); else json_incref(so);
        if (json_is_string(eo)) eo = json_loads(json_string_value(eo), 0, NULL); else json_incref(eo);
        json_t *sp = json_object_get(so, topic), *ep = json_object_get(eo, topic);
        if (json_is_object(ep)) {
            known = 1;
            const char *k;
            json_t *v;
            json_object_foreach(ep, k, v) {
                if (n == cap) *out = sd_util_xrealloc(*out, sizeof(**out) * (size_t)(cap = cap ? cap * 2 : 8));
                (*out)[n].partition = atoi(k);
                (*out)[n].end = json_integer_value(v);
                (*out)[n].begin = json_is_object(sp) && json_object_get(sp, k) ? json_integer_value(json_object_get(sp, k)) : 0;
                n++;
            }
        }
        json_decref(so);
        json_decref(eo);
    }
    json_decref(o);
    return known ? n : -1;
}
