/* clock.c - the pipeline's clock, through libfaketime.
 *
 * With `clock faketime` in the header the pipeline runs with libfaketime
 * preloaded (the multi-threaded build, so JVMs work too) and reads its
 * offset from a file in the run folder that this injector rewrites:
 *
 *   clock offset=+2h    the pipeline's wall clock runs 2 hours ahead
 *   clock jump=-10m     moves it 10 minutes back from where it is
 *   clock rate=2x       makes it run twice as fast from now on
 *   clock reset         real time again (also what `heal` does)
 *
 * libfaketime re-reads the file at most once a second
 * (FAKETIME_CACHE_DURATION=1, in whole seconds); the step waits two so the
 * next step runs against the new time. Monotonic clocks are left alone
 * (DONT_FAKE_MONOTONIC), or a JVM's timers would misbehave. */
#include <stdio.h>
#include <string.h>

#include "run.h"

static int sd_clock_handles(sd_step_kind_t k) { return k == SD_STEP_CLOCK; }

static sd_err_t sd_clock_write(sd_run_t *r, char *err, size_t errlen) {
    sd_faults_t *F = sd_run_faults(r);
    char text[64];
    long long secs = (long long)(F->clock_offset_ms / 1000);
    if (F->clock_rate != 1.0) snprintf(text, sizeof(text), "%+llds x%g\n", secs, F->clock_rate);
    else snprintf(text, sizeof(text), "%+llds\n", secs);
    return sd_util_write_file(F->faketime_file, text, strlen(text), err, errlen);
}

static sd_err_t sd_clock_run(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_faults_t *F = sd_run_faults(r);
    if (!F->faketime_file) return sd_err_set(err, errlen, SD_ERR_INTERNAL, "clock: the pipeline does not run under libfaketime");
    switch (st->clock.op) {
    case SD_CLOCK_OFFSET: F->clock_offset_ms = st->clock.ms; break;
    case SD_CLOCK_JUMP: F->clock_offset_ms += st->clock.ms; break;
    case SD_CLOCK_RATE: F->clock_rate = st->clock.rate; break;
    case SD_CLOCK_RESET: F->clock_offset_ms = 0; F->clock_rate = 1.0; break;
    }
    sd_err_t e = sd_clock_write(r, err, errlen);
    if (e) return e;
    if (!F->clock_moved_line && (F->clock_offset_ms != 0 || F->clock_rate != 1.0)) F->clock_moved_line = st->line;
    char det[160];
    snprintf(det, sizeof(det), "pipeline clock: %+.0fs from real time, rate %gx", (double)F->clock_offset_ms / 1000.0, F->clock_rate);
    sd_sup_state_t s = {0};
    if (sd_run_sup(r)) sd_sup_state(sd_run_sup(r), &s);
    if ((e = sd_ledger_fault(sd_run_ledger(r), sd_run_step_index(r), "clock", det, s.incarnation, NULL, err, errlen))) return e;
    /* libfaketime caches the file for FAKETIME_CACHE_DURATION=1 second,
     * counted in whole seconds of its own: a process can keep the old
     * offset for up to two */
    if ((e = sd_run_tick_until(r, sd_util_mono_ms() + 2100, err, errlen))) return e;
    snprintf(detail, dlen, "%s", det);
    return SD_OK;
}

static void sd_clock_heal(sd_run_t *r, sd_buf_t *done) {
    sd_faults_t *F = sd_run_faults(r);
    if (!F->faketime_file || (F->clock_offset_ms == 0 && F->clock_rate == 1.0)) return;
    F->clock_offset_ms = 0;
    F->clock_rate = 1.0;
    if (sd_clock_write(r, NULL, 0) == SD_OK) {
        sd_ledger_fault_undo(sd_run_ledger(r), sd_run_step_index(r), "clock", "%", "clock", "pipeline clock: real time again (heal)", 0, NULL, 0);
        sd_buf_printf(done, "%sreset the pipeline's clock", done->len ? "; " : "");
    }
}

const sd_injector_t sd_injector_clock = {
    .name = "clock", .handles = sd_clock_handles, .run = sd_clock_run, .heal = sd_clock_heal
};
