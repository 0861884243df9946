/* cluster.h - a Kafka cluster whose brokers the harness may break: the
 * description `kafka.sh cluster DIR` writes (DIR/cluster) and `streamdrill
 * run --cluster DIR` reads, and the work on its brokers.
 *
 *   # a comment
 *   bootstrap HOST:PORT,HOST:PORT,...
 *   broker ID HOST:PORT PIDFILE       one per broker: its node.id, its client
 *                                     address, the file holding its pid
 *   isolate FILE                      the file that cuts brokers off from the
 *                                     others (links.h; kafka.sh cluster's
 *                                     brokers reach each other through
 *                                     `streamdrill _links`)
 *   start PROGRAM ARG... {id}         how to start a broker again on its own
 *                                     data ("a word" in double quotes is one
 *                                     argument; exec'd without a shell; it
 *                                     returns once the broker has started)
 *
 * A broker is killed, stopped, paused and resumed by signals to the pid in
 * its file; it is started again by the start command. A broker started
 * again belongs to the cluster, not to the run: the run ends with every
 * broker it took down started again (`heal`). */
#ifndef SD_CLUSTER_H
#define SD_CLUSTER_H

#include <stdint.h>
#include <sys/types.h>

#include "err.h"

#define SD_CLUSTER_MAX 16

typedef struct sd_cluster_broker_s {
    int id;
    char *addr;
    char *pidfile;
    int down;              /* killed or stopped by the run, not started again yet */
    int paused;            /* SIGSTOP by the run */
    int isolated;          /* cut off from the other brokers by the run */
    pid_t starting;        /* a start command running (0: none) */
    int64_t start_began;   /* its monotonic start */
} sd_cluster_broker_t;

typedef struct sd_cluster_s {
    char *path;            /* the description's file */
    char *bootstrap;
    sd_cluster_broker_t b[SD_CLUSTER_MAX];
    int n;
    char **start_argv;     /* NULL-terminated, {id} unexpanded */
    char *log_dir;         /* where start commands' output goes (the run's logs/), or NULL */
    int embedded;          /* librdkafka's mock brokers 1..n: no processes, set down and up through its API */
    char *cut_path;        /* `isolate FILE`: the link proxies' cut (links.h), or NULL */
} sd_cluster_t;

/* Read DIR/cluster (or the file itself when path names a file). Errors
 * name the file:line and the cause (SD_ERR_USAGE). */
sd_err_t sd_cluster_load(const char *path, sd_cluster_t **out, char *err, size_t errlen);
/* The embedded cluster's n mock brokers (ids 1..n). */
sd_cluster_t *sd_cluster_embedded(int n, const char *bootstrap);
void sd_cluster_free(sd_cluster_t *c);
sd_cluster_broker_t *sd_cluster_find(sd_cluster_t *c, int id);
/* The broker's pid from its file; -1 when it has none or it is not running. */
pid_t sd_cluster_pid(const sd_cluster_broker_t *b);
/* Send sig to the broker; an error names the broker when it is not running. */
sd_err_t sd_cluster_signal(sd_cluster_broker_t *b, int sig, char *err, size_t errlen);
/* Wait until the broker's process has exited (up to timeout_ms); 1 when it has. */
int sd_cluster_wait_gone(sd_cluster_broker_t *b, pid_t pid, int64_t timeout_ms);
/* Cut every broker marked isolated off from the others, and no other (the
 * link proxies applied it when this returns SD_OK). */
sd_err_t sd_cluster_cut(sd_cluster_t *c, int64_t timeout_ms, char *err, size_t errlen);
/* Start the broker's start command (it runs on; poll it with
 * sd_cluster_start_poll). */
sd_err_t sd_cluster_start_begin(sd_cluster_t *c, sd_cluster_broker_t *b, char *err, size_t errlen);
/* 0: still running; 1: it ended well; -1: it failed (why says how). */
int sd_cluster_start_poll(sd_cluster_broker_t *b, char *why, size_t wlen);

#endif
