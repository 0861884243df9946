/* run_instances.c - several instances of one pipeline (`pipeline
 * instances=N`): which one the supervisor's calls act on (the focus), the
 * batch state that follows it, starting the ones the plan wants, and the
 * instance of each incarnation (the supervisor's, read by writer labels
 * and landings), and `await exit`: until none runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_int.h"

int sd_run_instances(const sd_run_t *r) { return r->sc->instances > 0 ? r->sc->instances : 1; }

void sd_run_set_live(sd_run_t *r, int n) { r->pipe.live = n; }

int sd_run_instance_of(const sd_run_t *r, int incarnation) { return r->sup ? sd_sup_instance_of(r->sup, incarnation) : 0; }

void sd_run_focus(sd_run_t *r, int instance) {
    if (!r->sup) return;
    sd_sup_focus(r->sup, instance);
    sd_sup_state_t st;
    sd_sup_state(r->sup, &st);
    if (st.incarnation) sd_progress_follow(r, st.incarnation); /* the batch state is the focused incarnation's */
}

int sd_run_running_instances(sd_run_t *r, int *out) {
    int n = 0;
    for (int k = 1; r->sup && k <= SD_MAX_INSTANCES; k++) {
        sd_sup_state_t st;
        sd_sup_instance_state(r->sup, k, &st);
        if (st.running) out[n++] = k;
    }
    return n;
}

void sd_run_refocus(sd_run_t *r) {
    int run[SD_MAX_INSTANCES];
    int n = sd_run_running_instances(r, run);
    sd_run_focus(r, n ? run[0] : 1);
}

sd_err_t sd_run_start_pipeline(sd_run_t *r, const char *variant, int instance, int64_t timeout_ms, char *detail, size_t dlen,
                               char *err, size_t errlen) {
    if (!instance && r->pipe.live <= 0) r->pipe.live = sd_run_instances(r);
    int from = instance ? instance : 1, to = instance ? instance : r->pipe.live;
    sd_buf_t b;
    sd_buf_init(&b);
    sd_err_t e = SD_OK;
    int started = 0;
    for (int k = from; k <= to && !e; k++) {
        sd_sup_state_t st;
        sd_sup_instance_state(r->sup, k, &st);
        if (st.running) continue;
        char d[1024] = "";
        e = sd_run_start_instance(r, variant, k, timeout_ms, d, sizeof(d), err, errlen);
        if (!d[0]) continue;
        if (sd_run_instances(r) > 1) sd_buf_printf(&b, "%sinstance %d: %s", b.len ? "; " : "", k, d);
        else sd_buf_printf(&b, "%s", d);
        started++;
    }
    if (!e && !started) sd_buf_printf(&b, "%s", instance ? "the instance runs already" : "every instance runs already");
    if (instance && instance > r->pipe.live) r->pipe.live = instance;
    snprintf(detail, dlen, "%s", b.data ? b.data : "");
    sd_buf_free(&b);
    if (!e) sd_run_refocus(r);
    return e;
}

/* Whether the harness ended this incarnation (a stop, a kill, a scale
 * down, the run's end): no exit by itself, whatever its code. */
static int sd_run_end_caused(const sd_sup_state_t *st) {
    return !strcmp(st->ended_by, "kill") || !strcmp(st->ended_by, "stop") || !strcmp(st->ended_by, "end-of-run");
}

/* How the pipeline ended once none of its instances runs: among the
 * instances that ran when the await began (mask; every instance that ever
 * ran when none did), the first whose end the harness caused, else the
 * first that ended badly, else any. An exit the harness caused (a stop, a
 * kill, a scale down) is no exit by itself, whatever its code. */
static void sd_run_how_ended(sd_run_t *r, const int *mask, sd_sup_state_t *how) {
    memset(how, 0, sizeof(*how));
    for (int pass = 0; pass < 2 && !how->incarnation; pass++) {
        for (int k = 1; r->sup && k <= SD_MAX_INSTANCES; k++) {
            if (mask && !mask[k - 1]) continue;
            sd_sup_state_t ks;
            sd_sup_instance_state(r->sup, k, &ks);
            if (!ks.incarnation) continue;
            int caused = sd_run_end_caused(&ks), bad = ks.exit_code || ks.exit_signal;
            /* first pass: a caused end; second: a bad one, else the first */
            if (pass == 0 && caused) { *how = ks; break; }
            if (pass == 1 && (bad || !how->incarnation)) {
                *how = ks;
                if (bad) break;
            }
        }
    }
}

sd_err_t sd_run_await_exit(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    int64_t t0 = sd_util_mono_ms(), limit = sd_util_scaled_ms(st->timeout_ms), deadline = t0 + limit;
    int running[SD_MAX_INSTANCES];
    sd_err_t e;
    /* the plan expects it to end now: its exit is no warning */
    r->pipe.wanted = 0;
    r->verdict.ends = sd_util_xrealloc(r->verdict.ends, sizeof(*r->verdict.ends) * (size_t)(r->verdict.nends + 1));
    struct sd_run_end_s *end = &r->verdict.ends[r->verdict.nends++];
    memset(end, 0, sizeof(*end));
    end->line = st->line;
    snprintf(end->expected, sizeof(end->expected), "it ends by itself within %.0fs", (double)limit / 1000.0);
    /* the instances running now are the ones that must end by themselves;
     * with none running, every instance's end is judged (a drill's stop or
     * kill before the await is no end by itself) */
    int at_start[SD_MAX_INSTANCES] = {0};
    int nat = sd_run_running_instances(r, running);
    for (int i = 0; i < nat; i++) at_start[running[i] - 1] = 1;
    for (;;) { /* each tick reads the pipeline's exits */
        if (!sd_run_running_instances(r, running)) {
            sd_sup_state_t s;
            sd_run_how_ended(r, nat ? at_start : NULL, &s);
            double took = (double)(sd_util_mono_ms() - t0) / 1000.0;
            const char *cause = !strcmp(s.ended_by, "stop") ? "the drill's stop (or a scale down)" :
                                !strcmp(s.ended_by, "kill") ? "the drill's kill" : "the harness";
            int caused = sd_run_end_caused(&s);
            end->ok = !caused && s.exit_code == 0 && !s.exit_signal;
            if (caused && !nat)
                snprintf(end->actual, sizeof(end->actual), "it was not running when the await began: %s ended it (incarnation %d), "
                         "an end the harness caused, not one by itself", cause, s.incarnation);
            else if (caused)
                snprintf(end->actual, sizeof(end->actual), "it ended after %.2fs by %s (incarnation %d), an end the harness "
                         "caused, not one by itself", took, cause, s.incarnation);
            else if (end->ok) snprintf(end->actual, sizeof(end->actual), "it ended by itself after %.2fs", took);
            else if (s.exit_signal) snprintf(end->actual, sizeof(end->actual), "it ended after %.2fs, killed by signal %d", took, s.exit_signal);
            else snprintf(end->actual, sizeof(end->actual), "it ended after %.2fs with exit code %d", took, s.exit_code);
            snprintf(detail, dlen, "%s", end->actual);
            return SD_OK;
        }
        if (sd_util_mono_ms() > deadline) {
            snprintf(end->actual, sizeof(end->actual), "it was still running after %.0fs", (double)limit / 1000.0);
            snprintf(detail, dlen, "the pipeline did not end: %s (a check the run fails)", end->actual);
            return SD_OK;
        }
        if ((e = sd_run_tick(r, 50, err, errlen))) return e;
    }
}
