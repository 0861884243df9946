/* command.h - run a helper command to completion, as the sink readers do
 * (`sink command`, and the Delta reader's Parquet helper).
 *
 * The command is exec'd without a shell in its own process group, dies
 * with the harness (PR_SET_PDEATHSIG), gets its stdin from memory, its
 * stdout captured, its stderr appended to a file. When the timeout passes
 * the whole group is killed and the run says so. */
#ifndef SD_COMMAND_H
#define SD_COMMAND_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "util.h"

typedef struct {
    int code;        /* exit code, -1 when killed by a signal */
    int signal;      /* the signal that ended it, 0 if none */
    int timed_out;   /* the harness killed it at the timeout */
    int interrupted; /* the harness was asked to stop (SIGINT, SIGTERM) and killed it */
    int too_much;    /* it printed more than max_out bytes and was killed */
} sd_cmd_status_t;

/* What every command of this process gets: the run's token in its
 * environment (STREAMDRILL_RUN_TOKEN: the watchdog and the end-of-run sweep
 * find whatever it leaves behind, even outside its process group), and the
 * flag that asks the harness to stop (a command is killed within 100 ms of
 * it). Either may be NULL. */
void sd_cmd_set_run(const char *token, volatile sig_atomic_t *stop);

/* Run argv (argv[0] looked up in PATH) with in (inlen bytes, may be NULL)
 * on its stdin; its stdout appended to out (at most max_out bytes, 0: no
 * bound), its stderr to stderr_path (NULL: discarded). The timeout bounds
 * the whole run, the wait for its exit after it closed its stdout
 * included. Returns an error only when the command could not be run at
 * all (exec failed: SD_ERR_SINK naming argv[0] and the cause); how it
 * ended is in *st. */
sd_err_t sd_cmd_run(char *const *argv, const char *in, size_t inlen, int64_t timeout_ms, size_t max_out, const char *stderr_path,
                    sd_buf_t *out, sd_cmd_status_t *st, char *err, size_t errlen);

/* sd_cmd_run for a step's command: nothing on its stdin, its stderr and
 * then its stdout (at most max_out bytes) in the file log; *ok when it
 * ended well (exit 0, no signal, in time), and how it ended in how
 * ("exit 1"; left alone when it could not be run: the error says why). */
sd_err_t sd_cmd_run_logged(char *const *argv, int64_t timeout_ms, size_t max_out, const char *log, sd_cmd_status_t *st, int *ok,
                           char *how, size_t hlen, char *err, size_t errlen);

/* The supervisor reaps every child of the harness while a pipeline runs
 * (a subreaper): it hands the status of a child that is none of its
 * incarnations here, where the command waiting for it finds it. */
void sd_cmd_reaped(pid_t pid, int status);

/* "exit 3", "killed by signal 9", "timed out after 60s", "printed more
 * than N bytes (killed)" */
void sd_cmd_status_text(const sd_cmd_status_t *st, int64_t timeout_ms, size_t max_out, char *out, size_t olen);

/* The last non-empty line of a file (a command's stderr), printable, at
 * most cap bytes; "" when there is none. */
void sd_cmd_last_line(const char *path, char *out, size_t cap);

#endif
