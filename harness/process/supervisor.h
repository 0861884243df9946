/* supervisor.h - runs the pipeline under test: one incarnation at a time
 * of each of its instances (several instances of one command, side by
 * side in one consumer group, when the drill declares `instances=N`).
 *
 * Each incarnation is exec'd directly (no shell) in its own process group,
 * so a signal reaches the whole tree, a JVM included. Its stdout and stderr
 * go through pipes to a reader thread that writes them, line by line with a
 * timestamp, to logs/pipeline-N.stdout.log and .stderr.log in the run
 * folder, and that recognises batch markers:
 *
 *     SD-READY
 *     SD-BATCH begin id=N [rows=K]
 *     SD-BATCH commit id=N [rows=K] [offsets=P:O,P:O,...] [state=S]
 *     SD-PROGRESS {json}          (a Spark StreamingQueryProgress, for instance)
 *
 * anywhere in a line of either stream (so a logger's prefix is fine).
 * `offsets` are the next offsets to consume per source partition after the
 * batch, the way Kafka commits them; `state` the rows of state the
 * pipeline keeps after the batch (windows open, ids remembered, ...). Markers and exits are queued as events
 * for the runner's thread, which owns run.db; the current state can be read
 * at any time with sd_sup_state().
 *
 * Incarnations are numbered across instances (pipeline-N.*.log); each gets
 * STREAMDRILL_INCARNATION and STREAMDRILL_INSTANCE. The calls that act on
 * "the" pipeline (state, signal, wait, stop, tail) act on the instance in
 * focus (sd_sup_focus, instance 1 unless moved).
 *
 * Every incarnation's process group is registered with the watchdog, and
 * the child has PR_SET_PDEATHSIG=SIGKILL, so nothing outlives the harness. */
#ifndef SD_SUPERVISOR_H
#define SD_SUPERVISOR_H

#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "scenario.h"
#include "watchdog.h"

typedef struct sd_sup_s sd_sup_t;

#define SD_SUP_MAX_INSTANCES SD_MAX_INSTANCES

typedef struct sd_sup_conf_s {
    char **argv;                 /* expanded, NULL-terminated */
    const sd_kvlist_t *env;      /* extra environment (expanded) */
    const char *run_dir;         /* logs go to run_dir/logs */
    const char *token;           /* STREAMDRILL_RUN_TOKEN */
    sd_watchdog_t *watchdog;
    int64_t log_max;             /* bytes kept of each log: the first half and the last (0: SD_LOG_MAX_DEFAULT) */
    int deployed;                /* each incarnation is a deployed pipeline's follower (deployed.h): SIGTERM and
                                  * SIGKILL become its stop and kill commands, SIGSTOP and SIGCONT are refused */
    int streams;                 /* a Kafka Streams application (progress ... engine=kafka-streams): its log lines
                                  * are read for its account (sd_sup_streams_line); no other pipeline's are */
} sd_sup_conf_t;

typedef enum { SD_SUP_EV_READY, SD_SUP_EV_BEGIN, SD_SUP_EV_COMMIT, SD_SUP_EV_EXIT, SD_SUP_EV_PROGRESS, SD_SUP_EV_ENGINE } sd_sup_ev_type_t;

typedef struct sd_sup_event_s {
    sd_sup_ev_type_t type;
    int incarnation;
    int64_t t_ms;          /* wall clock when read */
    int64_t batch, rows;   /* markers; rows -1 if not given */
    int64_t state;         /* COMMIT: state=, -1 if not given */
    char *text;            /* COMMIT: its offsets, PROGRESS: the JSON, ENGINE: sd_sup_streams_line's words,
                            * else NULL; owned by the event */
    int exit_code;         /* EXIT: code, or -1 when killed by a signal */
    int exit_signal;       /* EXIT: signal, or 0 */
    char ended_by[16];     /* EXIT: "kill", "stop", "crash", "exit" */
} sd_sup_event_t;

typedef struct sd_sup_state_s {
    int incarnation;       /* newest incarnation, 0 before the first start */
    int running;           /* it has not exited */
    int drained;           /* it exited and its output was read to the end */
    int ready;             /* it printed SD-READY */
    pid_t pid;
    int64_t begin_batch;   /* last begin marker of the newest incarnation, -1 if none */
    int64_t begin_rows;
    int64_t begin_mono_ms;
    int64_t commit_batch;  /* last commit marker of the newest incarnation, -1 if none */
    int64_t commit_mono_ms;
    int64_t markers;       /* batch markers seen, all incarnations */
    int64_t last_marker_mono_ms;
    double ms_per_row;     /* mean batch duration per row seen so far, 0 if unknown */
    int64_t last_output_mono_ms;
    int exit_code, exit_signal;
    char ended_by[16];     /* what ended the newest incarnation, once it exited: "kill", "stop",
                            * "end-of-run" (the harness did), "exec-failed"; "" when it ended by itself */
} sd_sup_state_t;

sd_err_t sd_sup_new(const sd_sup_conf_t *conf, sd_sup_t **out, char *err, size_t errlen);
/* Kill whatever runs, stop the reader thread, free. */
void sd_sup_free(sd_sup_t *s);

/* Start a new incarnation of instance (1..SD_SUP_MAX_INSTANCES), with argv
 * (NULL: the configured command line). Fails with SD_ERR_PIPELINE if exec
 * fails. The focus does not move. */
sd_err_t sd_sup_start(sd_sup_t *s, char **argv, int instance, int *incarnation, char *err, size_t errlen);
/* Move the focus to instance (1-based); returns the instance in focus before. */
int sd_sup_focus(sd_sup_t *s, int instance);
/* The state of one instance, wherever the focus is. */
void sd_sup_instance_state(sd_sup_t *s, int instance, sd_sup_state_t *out);
/* The instance (1-based) incarnation n was started as; 0 if none was. */
int sd_sup_instance_of(sd_sup_t *s, int n);
/* Send sig to the focused instance's newest incarnation's process group
 * (a deployed pipeline: SIGKILL asks its follower for the kill command,
 * SIGTERM, SIGINT, SIGQUIT, SIGHUP for the stop command); by names the cause
 * recorded at its exit ("kill", "stop"). */
sd_err_t sd_sup_signal(sd_sup_t *s, int sig, const char *by, char *err, size_t errlen);
/* Wait until the focused instance's newest incarnation exited and was drained. Returns
 * SD_ERR_TIMEOUT if it is still running after timeout_ms. */
sd_err_t sd_sup_wait_exit(sd_sup_t *s, int64_t timeout_ms, char *err, size_t errlen);
/* Graceful stop: SIGTERM, wait up to grace_ms, then SIGKILL. */
sd_err_t sd_sup_stop(sd_sup_t *s, int64_t grace_ms, char *err, size_t errlen);
/* SIGKILL every incarnation's group and sweep the token (end of run). */
void sd_sup_kill_all(sd_sup_t *s);

void sd_sup_state(sd_sup_t *s, sd_sup_state_t *out);
/* Does a process of the running incarnation's group hold an established
 * TCP connection to one of ports (the broker's, the proxy's)? Read from
 * /proc: the sockets of every process whose group is the incarnation's,
 * against /proc/net/tcp and tcp6. 1 yes, 0 no, -1 cannot tell. */
int sd_sup_connected(sd_sup_t *s, const int *ports, int nports);
/* A line of a Kafka Streams application's log that gives its own account
 * (the INFO lines its logging prints, on either stream):
 *   ... stream-client [ID] State transition from A to B
 *   ... stream-thread [T] Finished restoring changelog TOPIC-P to store S with a total number of N records
 * in its logging's layout: the logger (org.apache.kafka.streams.KafkaStreams,
 * ...internals.StoreChangelogReader) right before the message as
 * "LOGGER - " (slf4j's simple logger, logback), or at the line's end as
 * "(LOGGER)" (Kafka's log4j layout). Written to out as "state A B" or
 * "restored N S" (names of letters, digits and . _ - only; anything else
 * is not such a line). 1 when LINE is one. */
int sd_sup_streams_line(const char *line, size_t len, char *out, size_t outlen);
/* Pop the next event (0) or return -1 when none is queued. Free ev->text. */
int sd_sup_next_event(sd_sup_t *s, sd_sup_event_t *ev);
/* Block up to timeout_ms until something changes (marker, exit, output). */
void sd_sup_wait_change(sd_sup_t *s, int64_t timeout_ms);
/* The last lines of the newest incarnation's stderr (for error messages). */
char *sd_sup_tail(sd_sup_t *s);
/* What the newest incarnation's stderr says went wrong, or NULL (caller
 * frees): a streaming query's own exception (Spark's
 * StreamingQueryException, the first of the incarnation) with the first
 * cause after it, wherever it lies in the log; else the newest line that
 * states an error (an exception or an "Error:", not a stack frame). What a
 * JVM's crash was about, though a long plan dump or shutdown noise
 * (RejectedExecutionException ... Terminated) follows it past the tail. */
char *sd_sup_telling(sd_sup_t *s);
/* 1 when the newest incarnation printed its query's own exception. */
int sd_sup_query_failed(sd_sup_t *s);
/* Log file paths of incarnation n (caller frees). */
char *sd_sup_log_path(sd_sup_t *s, int n, int is_err);

#endif
