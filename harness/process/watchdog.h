/* watchdog.h - makes sure no pipeline process outlives the harness.
 *
 * At start-up the harness forks a small watchdog process in its own
 * session. The harness tells it, over a pipe, the process group of every
 * pipeline incarnation it starts. When that pipe closes - because the
 * harness finished, crashed, or was SIGKILLed - the watchdog kills every
 * group it was told about and then sweeps /proc for any process still
 * carrying the run's token (STREAMDRILL_RUN_TOKEN in its environment),
 * which catches children that left their process group. Then it exits.
 *
 * Fork it before any thread starts (librdkafka, the supervisor). */
#ifndef SD_WATCHDOG_H
#define SD_WATCHDOG_H

#include <sys/types.h>

#include "err.h"

typedef struct sd_watchdog_s sd_watchdog_t;

sd_err_t sd_watchdog_start(const char *token, sd_watchdog_t **out, char *err, size_t errlen);
/* Tell the watchdog about a process group to kill if the harness dies. */
void sd_watchdog_track(sd_watchdog_t *wd, pid_t pgid);
/* Close the pipe (the watchdog then kills what is left and exits) and
 * wait for it. NULL is accepted. */
void sd_watchdog_stop(sd_watchdog_t *wd);

/* Kill (SIGKILL) every process whose environment has
 * STREAMDRILL_RUN_TOKEN=token, except the caller. Returns how many. */
int sd_watchdog_sweep(const char *token);

/* Processes (other than the caller) carrying the token. */
int sd_watchdog_count(const char *token);

#endif
