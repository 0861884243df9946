/* err.h - the one error enum of streamdrill and its mapping to exit codes.
 *
 * Every module returns an sd_err_t and fills a caller's buffer with a
 * message that names the operation, the object and the cause (the shape of
 * rd_kafka_new(..., errstr, errstr_size)). Only the CLI turns a code into
 * an exit status, through sd_err_exit_code(). The numbers are fixed: they
 * appear in run.db and summary.json ("reason") and must not be reused. */
#ifndef SD_ERR_H
#define SD_ERR_H

#include <stddef.h>

typedef enum {
    SD_OK = 0,
    SD_ERR_CHECK_FAILED = 1,  /* a check failed: the pipeline broke its contract */
    SD_ERR_USAGE = 2,         /* bad command line */
    SD_ERR_SCENARIO = 3,      /* bad scenario file */
    SD_ERR_BROKER = 4,        /* broker unreachable or refusing the harness */
    SD_ERR_PIPELINE = 5,      /* the pipeline never started */
    SD_ERR_QUIESCENCE = 6,    /* the pipeline never became quiescent */
    SD_ERR_SINK = 7,          /* a sink could not be read */
    SD_ERR_TRIMMED = 8,       /* a conclusion would depend on trimmed data */
    SD_ERR_IO = 9,            /* the harness's own files (run folder, run.db) */
    SD_ERR_INTERNAL = 10,     /* a bug or an unexpected library failure */
    SD_ERR_INTERRUPTED = 11,  /* SIGINT/SIGTERM: the run was stopped */
    SD_ERR_TIMEOUT = 12,      /* a wait ran out (an await step) */
    SD_ERR_NOTHING_JUDGED = 13, /* the scenario declares no sink: events were sent, nothing was checked */
    SD_ERR_NOT_LANDED = 14,   /* a fault step did not do what it says: the drill did not happen */
    SD_ERR_NOT_CAUGHT_UP = 15, /* ids are missing that the pipeline has not consumed yet */
    SD_ERR_NOT_MEASURED = 16, /* an expectation names a figure the run could not measure (state bounds) */
    SD_ERR_CHECKPOINT = 17,   /* the pipeline's checkpoint cannot be read safely: a file that is not a regular one, too large, a number out of range */
    SD_ERR_REGISTRY = 18,     /* the schema registry unreachable or refusing the harness */
    SD_ERR_NOT_JUDGED = 19,   /* the harness's JSON Schema check of an event ran out of a bound: neither valid nor invalid */
    SD_ERR__COUNT
} sd_err_t;

/* Exit codes documented in README.md. */
enum {
    SD_EXIT_PASS = 0,
    SD_EXIT_FAIL = 1,
    SD_EXIT_USAGE = 2,
    SD_EXIT_INCONCLUSIVE = 3,
    SD_EXIT_INTERNAL = 4,
    SD_EXIT_INTERRUPTED = 130
};

/* Short stable name of a code ("broker-unreachable"), never NULL. */
const char *sd_strerror(sd_err_t err);

/* The process exit status the CLI uses for a run that ended with err. */
int sd_err_exit_code(sd_err_t err);

/* True when err means "could not judge" (exit 3) rather than a bug found. */
int sd_err_is_inconclusive(sd_err_t err);

/* snprintf into err/errlen, tolerating err == NULL. Returns code. */
sd_err_t sd_err_set(char *err, size_t errlen, sd_err_t code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
