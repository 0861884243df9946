/* run_operator.c - `operator "TEXT" [timeout=D] [command=PROGRAM ...]`: a
 * step a person does on a game day.
 *
 * On a terminal (or with --operator ask) the harness shows the instruction
 * and keeps recording while it waits for the operator to confirm: Enter on
 * the terminal, or `streamdrill ack DIR` from another shell (which writes
 * DIR/operator.ack; the harness takes it and removes it). How long the
 * person took is the step's duration in run.db, and the recovery figures
 * count it (operator_s). Without a terminal, or with --operator auto, the
 * step runs its command instead (exec'd without a shell, its output in
 * logs/operator-LINE.log); with neither a person nor a command, or no
 * confirmation within the timeout, the drill did not do what it says and
 * the run is inconclusive. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command.h"
#include "run_int.h"

/* Whether a person can answer: --operator ask, or stdin a terminal. */
static int sd_operator_person(const sd_run_t *r) {
    if (r->opts->operator_mode == SD_OPERATOR_AUTO) return 0;
    return r->opts->operator_mode == SD_OPERATOR_ASK || isatty(0);
}

/* Enter on stdin (a whole line), 1; 0 nothing yet; -1 stdin closed. */
static int sd_operator_enter(void) {
    struct pollfd p = {.fd = 0, .events = POLLIN};
    if (poll(&p, 1, 0) <= 0) return 0;
    char buf[256];
    ssize_t n = read(0, buf, sizeof(buf));
    if (n <= 0) return -1;
    return memchr(buf, '\n', (size_t)n) || memchr(buf, '\r', (size_t)n) ? 1 : 0;
}

static sd_err_t sd_operator_wait(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    char *ack = sd_util_fmt("%s/operator.ack", r->run_dir);
    unlink(ack); /* one left from before is no answer to this step */
    sd_run_live_clear(r);
    fprintf(stderr, "\n\033[1m>>> operator, line %d: %s\033[0m\n    press Enter when it is done (or run: streamdrill ack %s)%s%s\n",
            st->line, st->oper.text, r->run_dir, st->oper.argc ? "; --operator auto would run: " : "",
            st->oper.argc ? st->oper.argv[0] : "");
    fflush(stderr);
    int64_t t0 = sd_util_mono_ms(), deadline = t0 + st->timeout_ms;
    int stdin_open = 1, how = 0; /* 1 Enter, 2 ack */
    sd_err_t e = SD_OK;
    while (!how && sd_util_mono_ms() < deadline) {
        if ((e = sd_run_tick(r, 100, err, errlen))) break;
        if (stdin_open) {
            int k = sd_operator_enter();
            if (k < 0) stdin_open = 0;
            if (k > 0) how = 1;
        }
        if (!how && sd_util_exists(ack)) {
            unlink(ack);
            how = 2;
        }
    }
    free(ack);
    if (e) return e;
    double took = (double)(sd_util_mono_ms() - t0) / 1000.0;
    if (!how) {
        char why[512];
        snprintf(why, sizeof(why), "no operator confirmed \"%s\" within %.0fs", st->oper.text, (double)st->timeout_ms / 1000.0);
        snprintf(detail, dlen, "%s", why);
        sd_run_fault_missed(r, st, why);
        return SD_OK;
    }
    snprintf(detail, dlen, "confirmed by the operator after %.2fs (%s): %s", took, how == 1 ? "Enter" : "streamdrill ack", st->oper.text);
    sd_run_say(r, "  operator confirmed after %.2fs", took);
    return SD_OK;
}

static sd_err_t sd_operator_command(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    char cerr[512];
    char **argv = sd_run_expand_argv(r, st->oper.argv, st->oper.argc, cerr, sizeof(cerr));
    if (!argv) return sd_err_set(err, errlen, SD_ERR_SCENARIO, "line %d: operator command: %s", st->line, cerr);
    char *log = sd_util_fmt("%s/logs/operator-%d.log", r->run_dir, st->line);
    sd_cmd_status_t cs;
    int64_t t0 = sd_util_mono_ms();
    char how[600];
    int ok;
    sd_err_t e = sd_cmd_run_logged(argv, st->timeout_ms, 1 << 20, log, &cs, &ok, how, sizeof(how), cerr, sizeof(cerr));
    if (e) snprintf(how, sizeof(how), "could not run: %s", cerr);
    double took = (double)(sd_util_mono_ms() - t0) / 1000.0;
    if (!e && cs.interrupted) {
        e = sd_err_set(err, errlen, SD_ERR_INTERRUPTED, "interrupted while the operator step's command ran");
    } else {
        char why[1400];
        snprintf(why, sizeof(why), "the operator step's command `%s` %s (logs/operator-%d.log)", argv[0], how, st->line);
        if (ok) {
            snprintf(detail, dlen, "--operator auto: ran `%s` (exit 0) in %.2fs, for: %s", argv[0], took, st->oper.text);
        } else {
            snprintf(detail, dlen, "%s", why);
            sd_run_fault_missed(r, st, why);
        }
        e = SD_OK;
    }
    free(log);
    sd_run_free_argv(argv);
    return e;
}

sd_err_t sd_run_operator(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    if (sd_operator_person(r)) return sd_operator_wait(r, st, detail, dlen, err, errlen);
    if (st->oper.argc) return sd_operator_command(r, st, detail, dlen, err, errlen);
    char why[512];
    snprintf(why, sizeof(why), "no person can confirm \"%s\" (no terminal%s) and the step has no command= to run instead", st->oper.text,
             r->opts->operator_mode == SD_OPERATOR_AUTO ? ", --operator auto" : "");
    snprintf(detail, dlen, "%s", why);
    sd_run_fault_missed(r, st, why);
    return SD_OK;
}
