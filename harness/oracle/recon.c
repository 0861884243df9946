/* recon.c - classification into buckets, and checks (see recon.h). */
#include "recon.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *sd_bucket_name(sd_bucket_t b) {
    static const char *const n[SD_B__COUNT] = {
        "delivered", "duplicated", "lost", "unjudgeable", "late_dropped", "late_leaked", "malformed_leaked",
        "quarantined", "malformed_vanished", "late_vanished", "valid_quarantined", "missing_copies", "not_yet_consumed",
        "aborted_leaked", "acked_lost"};
    return (int)b >= 0 && b < SD_B__COUNT ? n[b] : "?";
}

static const struct { const char *name; size_t off; } sd_count_fields[] = {
#define SD_COUNT_OFF(x, kind, grows, meaning) {#x, offsetof(sd_recon_counts_t, x)},
    SD_COUNTS(SD_COUNT_OFF)
#undef SD_COUNT_OFF
    {NULL, 0}};

int64_t sd_recon_count_get(const sd_recon_counts_t *c, const char *name, int *found) {
    for (int i = 0; sd_count_fields[i].name; i++)
        if (!strcmp(sd_count_fields[i].name, name)) {
            if (found) *found = 1;
            return *(const int64_t *)((const char *)c + sd_count_fields[i].off);
        }
    if (found) *found = 0;
    return -1;
}

_Static_assert(SD_DISP__COUNT <= 3 && SD_KIND__COUNT <= 8, "a seq's disposition and kind fit bits 0-4 of its byte");

void sd_seqs_reserve(sd_seqs_t *s, int64_t n) {
    if (n <= s->cap) return;
    int64_t cap = s->cap ? s->cap : 4096;
    while (cap < n) cap *= 2;
    s->b = sd_util_xrealloc(s->b, (size_t)cap);
    s->cap = cap;
}

void sd_seqs_unsend(sd_seqs_t *s, int64_t seq) { s->b[seq] |= 3; }

void sd_seqs_add_send(sd_seqs_t *s, int64_t seq, int delta) {
    uint32_t c = sd_seqs_sends(s, seq);
    if (delta < 0 ? c == 0 : c == UINT32_MAX) return;
    c = delta < 0 ? c - 1 : c + 1;
    if (c >= SD_SEQS_MANY) sd_i64map_put(&s->many, seq, c);
    s->b[seq] = (uint8_t)((s->b[seq] & 31) | (c < SD_SEQS_MANY ? c : SD_SEQS_MANY) << 5);
}

void sd_seqs_free(sd_seqs_t *s) {
    free(s->b);
    sd_i64map_free(&s->many);
    memset(s, 0, sizeof(*s));
}

static void sd_list_add(sd_recon_list_t *l, int64_t seq, uint32_t copies) {
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->seq = sd_util_xrealloc(l->seq, sizeof(int64_t) * (size_t)l->cap);
        l->copies = sd_util_xrealloc(l->copies, sizeof(uint32_t) * (size_t)l->cap);
    }
    l->seq[l->n] = seq;
    l->copies[l->n] = copies;
    l->n++;
}

void sd_recon_classify(const sd_recon_ledger_t *l, const sd_counts_t *target, const sd_counts_t *quarantine,
                       int64_t target_rows, int64_t unexpected_rows, int64_t unexpected_unique,
                       sd_recon_result_t *out) {
    sd_recon_counts_t *c = &out->counts;
    int64_t seen = 0;
    for (int64_t s = 0; s < l->nseq; s++) {
        uint32_t t = target ? sd_counts_get(target, s) : 0;
        uint32_t q = quarantine ? sd_counts_get(quarantine, s) : 0;
        int d = sd_seqs_disp(l->seqs, s);
        int k = sd_seqs_kind(l->seqs, s);
        if (t) seen++;
        if (d == SD_RECON_UNSENT) continue;
        if (l->vanished && l->vanished[s]) {
            /* Kafka lost it after acknowledging it: no pipeline could read it */
            c->acked_lost++;
            sd_list_add(&out->lists[SD_B_ACKED_LOST], s, t);
            continue;
        }
        switch (d) {
        case SD_DISP_TARGET:
        {
            uint32_t e = sd_seqs_copies(l->seqs, s, l->expect_sends);
            c->expected_in_target++;
            if (l->by_model) {
                /* the result model judges what became of it */
            } else if (t < e && l->pending && l->pending[s]) {
                /* the pipeline has not read that far: not a loss yet */
                c->not_yet_consumed++;
                sd_list_add(&out->lists[SD_B_NOT_YET_CONSUMED], s, t);
            } else if (t == 0) {
                if (l->trimmed && l->trimmed[s]) {
                    c->unjudgeable++;
                    sd_list_add(&out->lists[SD_B_UNJUDGEABLE], s, 0);
                } else {
                    c->lost++;
                    sd_list_add(&out->lists[SD_B_LOST], s, 0);
                }
            } else if (t == e) {
                c->delivered_once++;
            } else if (t < e) {
                /* some of the copies it had to pass on are missing */
                c->missing_copies++;
                sd_list_add(&out->lists[SD_B_MISSING_COPIES], s, t);
            } else {
                c->duplicated++;
                c->duplicate_rows += t - e;
                sd_list_add(&out->lists[SD_B_DUPLICATED], s, t);
            }
        }
            if (q) {
                c->valid_quarantined++;
                sd_list_add(&out->lists[SD_B_VALID_QUARANTINED], s, q);
            }
            break;
        case SD_DISP_DROPPED:
            if (k == SD_KIND_DELETE) break; /* a tombstone: judged by the latest model, never an id in a sink */
            if (k == SD_KIND_ABORTED) {
                /* a read_committed reader never sees an aborted transaction */
                c->aborted_sent++;
                if (t) {
                    c->aborted_leaked++;
                    sd_list_add(&out->lists[SD_B_ABORTED_LEAKED], s, t);
                }
                break;
            }
            if (t) {
                if (k == SD_KIND_MALFORMED) {
                    c->malformed_leaked++;
                    sd_list_add(&out->lists[SD_B_MALFORMED_LEAKED], s, t);
                } else if (k == SD_KIND_LATE && l->maybe_late && l->maybe_late[s]) {
                    c->late_maybe_kept++;
                } else {
                    c->late_leaked++;
                    sd_list_add(&out->lists[SD_B_LATE_LEAKED], s, t);
                }
            } else if (k == SD_KIND_LATE) {
                c->late_dropped++;
            }
            break;
        case SD_DISP_QUARANTINE:
            if (q) {
                c->quarantined++;
                sd_list_add(&out->lists[SD_B_QUARANTINED], s, q);
            }
            if (t) {
                if (k == SD_KIND_LATE && l->maybe_late && l->maybe_late[s]) {
                    c->late_maybe_kept++;
                } else if (k == SD_KIND_LATE) {
                    c->late_leaked++;
                    sd_list_add(&out->lists[SD_B_LATE_LEAKED], s, t);
                } else {
                    c->malformed_leaked++;
                    sd_list_add(&out->lists[SD_B_MALFORMED_LEAKED], s, t);
                }
            }
            if (!q && !t) {
                if (k == SD_KIND_LATE) {
                    c->late_vanished++;
                    sd_list_add(&out->lists[SD_B_LATE_VANISHED], s, 0);
                } else {
                    c->malformed_vanished++;
                    sd_list_add(&out->lists[SD_B_MALFORMED_VANISHED], s, 0);
                }
            }
            break;
        }
    }
    c->observed_rows = target_rows;
    c->observed_unique = l->by_model ? 0 : seen + unexpected_unique;
    c->unexpected = l->by_model ? 0 : unexpected_rows;
}

void sd_recon_result_free(sd_recon_result_t *r) {
    for (int b = 0; b < SD_B__COUNT; b++) {
        free(r->lists[b].seq);
        free(r->lists[b].copies);
    }
    memset(r, 0, sizeof(*r));
}

/* ---- checks ---- */

static void sd_checks_add(sd_checks_t *c, const char *name, int pass, const char *expected, const char *actual,
                          const char *detail) {
    c->v = sd_util_xrealloc(c->v, sizeof(*c->v) * (size_t)(c->n + 1));
    sd_check_t *k = &c->v[c->n++];
    k->name = sd_util_strdup(name);
    k->pass = pass;
    k->expected = sd_util_strdup(expected);
    k->actual = sd_util_strdup(actual);
    k->detail = sd_util_strdup(detail ? detail : "");
    k->settled = 0;
}

/* Counts that only grow while the pipeline writes (counts.h): once past a
 * bound, no catching up brings them back. */
static int sd_count_only_grows(const char *count) {
#define SD_COUNT_GROWS(n, kind, grows, meaning) if (grows && !strcmp(count, #n)) return 1;
    SD_COUNTS(SD_COUNT_GROWS)
#undef SD_COUNT_GROWS
    return 0;
}

static void sd_checks_not_judged(sd_checks_t *c, const char *why) {
    c->not_judged = sd_util_xrealloc(c->not_judged, sizeof(char *) * (size_t)(c->n_not_judged + 1));
    c->not_judged[c->n_not_judged++] = sd_util_strdup(why);
}

/* An expectation the run could not measure: listed as not judged, and it
 * makes the run inconclusive (the first one's reason is the run's). */
static void sd_checks_unmeasured(sd_checks_t *c, const char *why) {
    sd_checks_not_judged(c, why);
    if (!c->unmeasured++) snprintf(c->unmeasured_why, sizeof(c->unmeasured_why), "%s", why);
}

/* The bucket whose ids illustrate a count, for check details. */
static int sd_count_bucket(const char *count) {
    static const struct { const char *c; sd_bucket_t b; } m[] = {
        {"lost", SD_B_LOST}, {"duplicated", SD_B_DUPLICATED}, {"duplicate_rows", SD_B_DUPLICATED},
        {"late_leaked", SD_B_LATE_LEAKED}, {"malformed_leaked", SD_B_MALFORMED_LEAKED},
        {"malformed_vanished", SD_B_MALFORMED_VANISHED}, {"late_vanished", SD_B_LATE_VANISHED},
        {"valid_quarantined", SD_B_VALID_QUARANTINED}, {"unjudgeable", SD_B_UNJUDGEABLE},
        {"quarantined", SD_B_QUARANTINED}, {"missing_copies", SD_B_MISSING_COPIES},
        {"not_yet_consumed", SD_B_NOT_YET_CONSUMED}, {"aborted_leaked", SD_B_ABORTED_LEAKED},
        {"acked_lost", SD_B_ACKED_LOST}, {NULL, 0}};
    for (int i = 0; m[i].c; i++)
        if (!strcmp(m[i].c, count)) return (int)m[i].b;
    return -1;
}

static char *sd_check_detail(const sd_recon_ctx_t *ctx, const sd_recon_result_t *r, const char *count) {
    static const char *const groups[] = {"groups_correct", "wrong_value", "missing_group", "unexpected_group", "emitted_twice",
                                         "emitted_early", "groups_pending", "changed", "null_for_matched"};
    for (int g = 0; g < 9; g++)
        if (!strcmp(count, groups[g])) return ctx->group_detail[g] ? sd_util_strdup(ctx->group_detail[g]) : NULL;
    if (sd_scenario_is_state_count(count) || !strcmp(count, "batch_rows_max") || !strcmp(count, "batches"))
        return ctx->bounds_detail ? sd_util_strdup(ctx->bounds_detail) : NULL;
    int b = sd_count_bucket(count);
    if (b < 0 || !ctx->fmt_id) return NULL;
    const sd_recon_list_t *l = &r->lists[b];
    if (!l->n) return NULL;
    sd_buf_t d;
    sd_buf_init(&d);
    int64_t show = l->n < 20 ? l->n : 20;
    if (b == SD_B_ACKED_LOST)
        sd_buf_puts(&d, "Kafka acknowledged these events and no longer holds them (their offsets are past the partition's end, or "
                        "another acknowledged event has them now): a broker or configuration fault (acks, min.insync.replicas, "
                        "unclean leader election), not the pipeline's; ");
    sd_buf_printf(&d, "%s ids%s: ", sd_bucket_name((sd_bucket_t)b), l->n > show ? " (first 20)" : "");
    for (int64_t i = 0; i < show; i++) {
        char id[64];
        ctx->fmt_id(ctx->fmt_opaque, l->seq[i], id, sizeof(id));
        sd_buf_printf(&d, "%s%s", i ? ", " : "", id);
        if (b == SD_B_DUPLICATED || l->copies[i] > 1) sd_buf_printf(&d, " x%u", l->copies[i]);
    }
    if (l->n > show) sd_buf_printf(&d, ", ... %lld more", (long long)(l->n - show));
    return sd_buf_steal(&d);
}

static void sd_add_count_check(sd_checks_t *out, const sd_recon_ctx_t *ctx, const sd_recon_result_t *r,
                               const char *count, sd_op_t op, int64_t value, const char *value_count) {
    int found = 0;
    int64_t actual = sd_recon_count_get(&r->counts, count, &found);
    if (found && actual < 0 && !strncmp(count, "latency_", 8) && strcmp(count, "latency_samples")) {
        char why[480];
        snprintf(why, sizeof(why), "%s: not measured: %s", count, ctx->latency_why ? ctx->latency_why : "no write time was read");
        sd_checks_unmeasured(out, why);
        return;
    }
    if (found && actual < 0 && sd_scenario_is_state_count(count)) {
        char why[400];
        snprintf(why, sizeof(why), "%s: not measured: %s", count, ctx->bounds_why ? ctx->bounds_why : "no state figures");
        sd_checks_unmeasured(out, why);
        return;
    }
    if (found && actual < 0 && sd_scenario_is_bounds_count(count)) {
        char why[400];
        snprintf(why, sizeof(why), "%s: not measured: %s", count, ctx->health_why ? ctx->health_why : "the pipeline's own account gave no such figure");
        sd_checks_unmeasured(out, why);
        return;
    }
    int64_t expected = value;
    char exp[160], act[64], name[128];
    if (value_count) {
        expected = sd_recon_count_get(&r->counts, value_count, NULL);
        snprintf(exp, sizeof(exp), "%s %s (%lld)", sd_op_text(op), value_count, (long long)expected);
    } else {
        snprintf(exp, sizeof(exp), "%s %lld", sd_op_text(op), (long long)expected);
    }
    snprintf(act, sizeof(act), "%lld", (long long)actual);
    snprintf(name, sizeof(name), "%s", count);
    int pass = found && sd_op_eval(op, actual, expected);
    char *detail = pass ? NULL : sd_check_detail(ctx, r, count);
    sd_checks_add(out, name, pass, exp, act, detail);
    /* failed above its bound (=, <= or <: a failed >, >= or != with actual
     * above expected cannot be) on a count no further writing takes back */
    out->v[out->n - 1].settled = !pass && found && sd_count_only_grows(count) && actual > expected;
    free(detail);
}

void sd_recon_checks(const sd_recon_ctx_t *ctx, const sd_recon_result_t *r, sd_checks_t *out) {
    memset(out, 0, sizeof(*out));
    /* implicit checks from the profile, unless an expect line names the count */
    const char *implicit[16];
    int ni = 0;
    if (SD_JUDGE_BY_GROUPS(ctx->model)) {
        /* a result model: groups instead of ids. A value off by a lost,
         * late or doubled event is wrong under every profile; a window
         * written again is what at-least-once allows in append mode */
        implicit[ni++] = "wrong_value";
        implicit[ni++] = "missing_group";
        implicit[ni++] = "unexpected_group";
        int written_once = ctx->model == SD_JUDGE_WINDOWS_APPEND || ctx->model == SD_JUDGE_JOIN;
        if (written_once) implicit[ni++] = "emitted_early";
        if (ctx->model == SD_JUDGE_JOIN) implicit[ni++] = "null_for_matched";
        if ((written_once || ctx->model == SD_JUDGE_LATEST) && ctx->profile != SD_PROFILE_AT_LEAST_ONCE)
            implicit[ni++] = "emitted_twice";
    } else {
        implicit[ni++] = "unexpected";
        if (ctx->profile != SD_PROFILE_AT_MOST_ONCE) {
            implicit[ni++] = "lost";
            if (ctx->keep_duplicates) implicit[ni++] = "missing_copies";
        }
        if (ctx->profile != SD_PROFILE_AT_LEAST_ONCE) implicit[ni++] = "duplicated";
        implicit[ni++] = "late_leaked";
        implicit[ni++] = "malformed_leaked";
        if (r->counts.aborted_sent) implicit[ni++] = "aborted_leaked";
        if (ctx->model == SD_JUDGE_ROWS) implicit[ni++] = "changed";
    }
    implicit[ni++] = "valid_quarantined";
    implicit[ni++] = "crashes";
    /* only when Kafka lost something: the check blames the cluster, and
     * every other count leaves those events out */
    if (r->counts.acked_lost) implicit[ni++] = "acked_lost";
    if (ctx->has_quarantine_sink) {
        implicit[ni++] = "malformed_vanished";
        implicit[ni++] = "late_vanished";
        if (r->counts.deliveries_quarantined + r->counts.deliveries_vanished) implicit[ni++] = "deliveries_vanished";
    }
    for (int i = 0; i < ni; i++) {
        int overridden = 0;
        for (int s = 0; s < ctx->nexpects; s++)
            for (int k = 0; k < ctx->expects[s]->expect.n; k++)
                if (!strcmp(ctx->expects[s]->expect.v[k].count, implicit[i])) overridden = 1;
        if (!overridden) sd_add_count_check(out, ctx, r, implicit[i], SD_OP_EQ, 0, NULL);
    }
    for (int s = 0; s < ctx->nexpects; s++)
        for (int k = 0; k < ctx->expects[s]->expect.n; k++) {
            const sd_expect_t *x = &ctx->expects[s]->expect.v[k];
            if (x->per_fault) continue; /* a fault's figure: judged fault by fault (run_recovery.c) */
            sd_add_count_check(out, ctx, r, x->count, x->op, x->value, x->value_count);
        }
    /* a Kafka target read read_uncommitted whose every record is of an
     * aborted or open transaction holds nothing a read_committed consumer
     * is given: whatever its ids say, that is not the pipeline's output */
    if (ctx->uncommitted_why)
        sd_checks_add(out, "committed_output", 0, "records a read_committed consumer sees", "none", ctx->uncommitted_why);
    /* a drill that sent nothing judged nothing: no pass (an empty sink is
     * exactly what a pipeline that lost everything would show too) */
    const sd_recon_counts_t *k = &r->counts;
    if (!k->produced && !k->expected_in_target && !k->malformed_sent && !k->late_sent && !k->aborted_sent && !k->acked_lost)
        sd_checks_unmeasured(out, "nothing was sent: the broker acknowledged no event of the drill, so there was nothing to "
                                  "judge (does the drill have a `produce` step before it is judged?)");
    /* a result model that judged no group judged nothing: no pass */
    else if (SD_JUDGE_BY_GROUPS(ctx->model)) {
        int64_t judged = k->groups_correct + k->wrong_value + k->missing_group + k->unexpected_group + k->emitted_twice +
                         k->emitted_early + k->null_for_matched;
        char why[400] = "";
        if (!judged && k->groups_expected + k->groups_pending > 0)
            snprintf(why, sizeof(why), "result model: it judged none of the %lld groups it expected (%lld pending: the final "
                     "watermark closed none of them); a drill must send events past the windows it judges",
                     (long long)(k->groups_expected + k->groups_pending), (long long)k->groups_pending);
        else if (!judged && k->produced > 0)
            snprintf(why, sizeof(why), "result model: no counted event belongs to any group and the sink holds none (are the "
                     "events' times and the model's fields readable?)");
        if (why[0]) sd_checks_unmeasured(out, why);
    }
    if (!ctx->has_quarantine_sink && (r->counts.malformed_sent || r->counts.late_sent) && ctx->malformed_to_quarantine)
        sd_checks_not_judged(out, "quarantine: no `quarantine` sink is declared, so whether malformed events reached "
                                  "quarantine (or vanished) was not checked; leaks into the target were");
    if (SD_JUDGE_BY_GROUPS(ctx->model))
        sd_checks_not_judged(out, "ids in the target: it holds derived rows, judged by the result model group by group "
                                  "instead");
    if (r->counts.groups_pending && ctx->model == SD_JUDGE_JOIN)
        sd_checks_not_judged(out, "pending null rows: the final watermark has not passed (or is exactly at) the time after which "
                                  "no event could match them, so whether the join owes a null row is not known yet; see the "
                                  "groups_pending count");
    else if (r->counts.groups_pending)
        sd_checks_not_judged(out, "pending windows: the final watermark has not closed them (or ends exactly at their end), so "
                                  "their final value does not exist yet; see the groups_pending count");
    if (r->counts.not_yet_consumed)
        sd_checks_not_judged(out, "loss: some expected ids are missing from the sink but lie past the offsets the pipeline "
                                  "has committed (or its restarted incarnation consumed and wrote nothing): it had not "
                                  "caught up when the harness judged, so their loss cannot be blamed on it yet");
    if (r->counts.unjudgeable)
        sd_checks_not_judged(out, "loss: some expected ids are missing from the sink but lie in offsets the broker "
                                  "already deleted (retention or the embedded broker's trimming): their loss cannot be "
                                  "attributed to the pipeline");
}

void sd_checks_free(sd_checks_t *c) {
    for (int i = 0; i < c->n; i++) {
        free(c->v[i].name); free(c->v[i].expected); free(c->v[i].actual); free(c->v[i].detail);
    }
    free(c->v);
    for (int i = 0; i < c->n_not_judged; i++) free(c->not_judged[i]);
    free(c->not_judged);
    memset(c, 0, sizeof(*c));
}

int sd_checks_settled(const sd_checks_t *c) {
    int n = 0;
    for (int i = 0; i < c->n; i++)
        if (!c->v[i].pass && c->v[i].settled) n++;
    return n;
}

int sd_checks_failed(const sd_checks_t *c) {
    int n = 0;
    for (int i = 0; i < c->n; i++)
        if (!c->v[i].pass) n++;
    return n;
}
