/* ledger_int.h - the inside of run.db's ledger, shared by its files and
 * nothing else (as SQLite's whereInt.h is by where*.c): the handle, the
 * batches the runner thread hands to the writer thread, and the helpers
 * every ledger file calls. ledger.h is the face.
 *
 *   ledger.c         the schema, opening, preparing and closing, meta
 *   ledger_sql.c     the statements every other ledger file runs
 *   ledger_writer.c  the writer thread, its ticket queue, the packed form
 *   ledger_events.c  the run's writes, one call per thing that happened
 *   ledger_read.c    the judge's readers, the reconciliation's bulk writes,
 *                    the pipeline's own account beside the ledger's
 *   ledger_series.c  the drawn series and totals kept while messages go */
#ifndef SD_LEDGER_INT_H
#define SD_LEDGER_INT_H

#include <pthread.h>
#include <sqlite3.h>

#include "ledger.h"
#include "util.h"

/* Rows per multi-row INSERT of messages and delivery reports: one
 * statement step per 16 rows costs about two thirds of 16 single steps. */
#define SD_LEDGER_ROWS 16
/* Delivery reports gathered before they are handed to the writer. */
#define SD_LEDGER_ACKS_PER_BATCH 2048

/* A message as recorded: text fields live in the batch's arena. */
typedef struct {
    int64_t n, seq, event_time_ms, queued_ms;
    int step;
    int side;                       /* a message to the second source (table side) */
    const char *kind, *disp;        /* static strings */
    size_t detail_off, key_off;     /* into text, (size_t)-1 = NULL */
} sd_lsend_t;
typedef struct {
    int64_t n, offset, acked_ms;
    int32_t partition;
    size_t err_off;                 /* into text, (size_t)-1 = delivered */
} sd_lack_t;

/* What the runner thread gathers between two hand-overs to the writer. */
typedef struct sd_lbatch_s {
    sd_lsend_t *sends;
    int64_t nsends, capsends;
    sd_lack_t *acks;
    int64_t nacks, capacks;
    sd_buf_t text;
    int64_t ticket;
    int64_t first_ms;               /* when its first record came, for sd_ledger_dirty_ms */
    struct sd_lbatch_s *next;
} sd_lbatch_t;

/* ledger_series.c: a message in flight (n, its sequence number with the
 * target and side flags in the top bits), and the drawn series */
typedef struct {
    int64_t n;
    uint64_t seq;
} sd_lring_t;
typedef struct {
    int64_t t0, width, nb;          /* first bucket's start (epoch ms), width (ms), buckets used */
    int64_t *v;                     /* SD_SERIES_MAX buckets of sent, acked, expected_acked */
    sd_lring_t *ring;               /* the messages in flight, by number */
    uint8_t *sent_bits, *acked_bits; /* sequence numbers sent, and acknowledged as expected in the target */
    int64_t sent_cap, acked_cap;    /* their bytes */
    int64_t messages, distinct;     /* the ledger's rows and distinct ids */
    struct { const char *kind; int64_t n; } kinds[16];
    int nkinds;
    int inexact;                    /* a report of a message the ring no longer held: not stored */
} sd_lseries_t;

struct sd_ledger_s {
    sqlite3 *db;
    char *path;
    int in_txn;                     /* under mu */
    int64_t txn_started_ms;
    sqlite3_stmt *ins_side;          /* prepared on first use: run.db files of older versions lack the table */
    sqlite3_stmt *ins_send, *ins_send_n, *ins_ack, *ins_ack_n, *ins_sample, *ins_batch_begin, *upd_batch_commit;
    sqlite3_stmt *ins_pack, *sel_pack, *del_pack;
    sd_buf_t packbuf;               /* the writer's pack being built */
    int64_t packs;                  /* packs not unpacked yet (atomic) */
    pthread_mutex_t mu;             /* the connection: held around every use of db */

    /* messages and delivery reports go to a writer thread in batches, so
     * the runner thread renders and produces while SQLite works */
    int64_t next_n;                 /* message number of the next send */
    sd_lbatch_t *open;              /* being filled by the runner thread (no lock) */
    pthread_mutex_t qmu;            /* the queue below */
    pthread_cond_t qcv, donecv;
    sd_lbatch_t *qhead, *qtail, *pool;
    int64_t submitted, done;        /* tickets */
    int64_t last_submit_ms;         /* the newest hand-over: the writer unpacks only after SD_LEDGER_IDLE_MS */
    sd_lbatch_t *scratch;           /* a pack being unpacked (under mu, by the writer or a reader) */
    sd_err_t async_err;             /* the writer's first failure */
    char async_errstr[512];
    int stop, writer_started;
    pthread_t writer;
    /* what Kafka had acknowledged of the source, asked when a fault is recorded */
    void (*frontier)(void *opaque, char *out, size_t outlen);
    void *frontier_opaque;
    sd_lseries_t series;            /* the runner thread's (ledger_series.c) */
};

/* a batch and its arena */
void sd_lbatch_free(sd_lbatch_t *b);
/* under mu: a transaction, unless one is open */
sd_err_t sd_ledger_begin(sd_ledger_t *l, char *err, size_t errlen);
/* under mu: the open transaction committed */
sd_err_t sd_ledger_commit_locked(sd_ledger_t *l, char *err, size_t errlen);
/* a reader of messages or delivery reports: every one in its rows, then
 * mu held (on a failure too: the caller unlocks and reports why) */
sd_err_t sd_ledger_lock_read(sd_ledger_t *l, char *why, size_t wlen);
/* the batch the runner thread fills */
sd_lbatch_t *sd_ledger_open_batch(sd_ledger_t *l);
/* a reader's failure kept as the run's error (called without mu) */
sd_err_t sd_ledger_read_failed(sd_ledger_t *l, sd_err_t e, const char *why);
/* a one-off statement with text/int parameters described by types (see
 * ledger.c) */
sd_err_t sd_ledger_run(sd_ledger_t *l, const char *sql, const char *op, char *err, size_t errlen, int64_t *last_rowid, const char *types, ...);
/* a one-value query, INT64_MIN where NULL; 0 on a failure (kept: the
 * run's error) */
int64_t sd_ledger_scalar(sd_ledger_t *l, const char *sql);
/* every message and delivery report committed and in its rows */
sd_err_t sd_ledger_settle(sd_ledger_t *l, char *err, size_t errlen);
/* ledger_sql.c: an SQLite error of op, naming run.db */
sd_err_t sd_ledger_sqlerr(sd_ledger_t *l, const char *op, char *err, size_t errlen);
/* the writer thread */
void *sd_ledger_writer(void *arg);

/* ledger_series.c: a message sent, its delivery report, the series
 * stored (at close), its memory freed */
void sd_lseries_sent(sd_ledger_t *l, int64_t n, int64_t seq, const char *kind, int target, int side, int64_t queued_ms);
void sd_lseries_acked(sd_ledger_t *l, int64_t n, int ok, int64_t acked_ms);
sd_err_t sd_lseries_store(sd_ledger_t *l, char *err, size_t errlen);
void sd_lseries_free(sd_ledger_t *l);

/* a statement without arguments, its error naming op */
sd_err_t sd_ledger_exec(sd_ledger_t *l, const char *sql, const char *op, char *err, size_t errlen);

#endif
