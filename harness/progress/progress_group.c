/* progress_group.c - progress from the pipeline's consumer group
 * (`progress group [group=NAME]`), for pipelines that print nothing but
 * commit their offsets to Kafka: Kafka Connect sink connectors, vendor
 * consumers, any plain consumer.
 *
 * Everything comes from a client of the harness's own that carries the
 * group's id and never joins it:
 *
 *   committed  the group's committed offsets of the source partitions, every
 *              100 ms while the pipeline runs and once after it ends. A
 *              move of the committed offsets is a batch's commit (its
 *              offsets feed caught-up and the rows-pending estimate, as a
 *              commit marker's offsets= do).
 *   in flight  the target sink grew past what it held when the newest
 *              commit was seen, or holds records of an open transaction
 *              (a transactional writer commits its offsets with its
 *              output, so its rows show with the commit): records were
 *              consumed and written that the group has not committed
 *              yet. That is a batch's begin, unless the group has
 *              committed all the harness sent and the target's open
 *              transaction holds no record of this run's ledger ids
 *              (sd_group_foreign_txn): another producer's, no batch;
 *              a kill between it and the next commit leaves work the
 *              restarted pipeline will do again.
 *   open txn   a transactional application writes more than its output
 *              inside each transaction: Kafka Streams its repartition and
 *              changelog topics (`<application id>-...-repartition`,
 *              `-changelog`; the application id is the group), Quix
 *              Streams its own (`repartition__<group>--...`,
 *              `changelog__<group>--...`). Records those topics hold past
 *              their last stable offset are its open transaction as much
 *              as the target's are: a windowed count writes its output
 *              only when a window closes, and every record to its
 *              repartition topic. sd_progress_open_records adds them (its
 *              open_records).
 *   ready      DescribeConsumerGroups: a member that was not in the group
 *              before this incarnation started holds an assignment (the
 *              killed incarnation's member stays listed, with its
 *              partitions, until its session expires), and an engine
 *              that logs its state (Kafka Streams) says RUNNING. A broker that
 *              cannot describe groups (the embedded cluster), or a group
 *              that never has members (a pipeline that assigns partitions
 *              itself and only commits), falls back to the markers' rule:
 *              a TCP connection to the broker.
 *
 * What it cannot see: records consumed and not yet written (a consumer's
 * position is not in the group), nor anything of a pipeline that commits
 * elsewhere (a database, a checkpoint). */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progress_batch.h"
#include "run.h"

#define SD_GROUP_POLL_MS 100
#define SD_GROUP_MAX_MEMBERS 64
#define SD_GROUP_HELD_PARTS 256

struct sd_group_s {
    char *name;
    char *needle;                /* "<tag>-": the start of this run's ledger ids (sd_group_foreign_txn) */
    rd_kafka_t *rk;              /* a consumer handle of the group, never subscribed */
    rd_kafka_queue_t *q;
    int64_t *committed;          /* per source partition, -1 none */
    int baseline;                /* the first answer was taken as the starting point */
    int64_t next_poll_mono;
    int64_t rows_at_commit;      /* target rows when the newest commit was seen, -1 unknown */
    int64_t batch;               /* batch numbers, counted over the whole run */
    int open;                    /* a batch began and has not committed */
    int inc;                     /* the incarnation the state below is for */
    int polled_dead;             /* the committed offsets were read once after the process ended */
    int describe;                /* 1 the broker describes groups, -1 it cannot, 0 not known yet */
    int64_t next_describe_mono;
    int members_now;             /* members in the last description */
    char *old[SD_GROUP_MAX_MEMBERS]; /* member ids of earlier incarnations */
    int nold;
    char *seen[SD_GROUP_MAX_MEMBERS]; /* member ids seen during this incarnation */
    int nseen;
    int ready;                   /* a new member holds an assignment */
    int evidence;                /* the group had a member or a commit during the run: until then, nothing it shows
                                  * (rows past a commit, the connection rule's readiness) is a sign of the pipeline */
    int warned_ready;            /* the incarnation whose readiness was taken without evidence was said */
    int old_listed;              /* members of earlier incarnations still in the last description */
    int warned_session;          /* the incarnation whose wait for a dead member's session was said */
    rd_kafka_t *lso;             /* a read_committed handle: its end offsets are the last stable ones */
    char **own;                  /* the application's own topics (see the top), with their partitions */
    int *own_parts, nown;
    int64_t next_own_mono;       /* when to look for them again */
    int own_txn;                 /* an open transaction was seen in them: they are written transactionally */
    int64_t own_open, own_open_us; /* their open records at the last look, and when (monotonic us; 0 none) */
    /* a transaction a kill left open in the target (sd_progress_group_kill_left): the
     * high watermark of each partition it held (-1 none), until the last
     * stable offsets pass them */
    int64_t held_at[SD_GROUP_HELD_PARTS];
    int held_n, held_inc;
    int held_commits;            /* a later incarnation's commits seen before a look that still found it held */
    int commits_since_look;      /* a later incarnation's commits since the last look */
    int64_t held_mono, held_left, next_held_mono;
    /* the target's high watermarks when the newest commit was seen (-1
     * none): records below them were written before it, the committed
     * transaction's own while its markers are still on their way */
    int64_t commit_hw[SD_GROUP_HELD_PARTS];
    int commit_hw_n;
};

/* Wait for the answer to the request just sent (any stale answer of an
 * earlier request that timed out is dropped). */
static rd_kafka_event_t *sd_group_wait(sd_group_t *g, rd_kafka_event_type_t type) {
    int64_t deadline = sd_util_mono_ms() + 3000;
    while (sd_util_mono_ms() < deadline) {
        rd_kafka_event_t *ev = rd_kafka_queue_poll(g->q, 100);
        if (!ev) continue;
        if (rd_kafka_event_type(ev) == type) return ev;
        rd_kafka_event_destroy(ev);
    }
    return NULL;
}

/* The group's committed offsets of the source partitions: out[p], -1 when
 * none. Returns 0, or -1 when they could not be read (tried again at the
 * next poll). Read with the consumer
 * API's committed() on the source's own handle (a member of no group):
 * librdkafka's ListConsumerGroupOffsets, on a handle without a consumer
 * group, dereferences a NULL group when the broker answers NOT_COORDINATOR
 * (librdkafka issue #5040), which a new group on a fresh broker does. */
static int sd_group_fetch(sd_run_t *r, sd_group_t *g, int64_t *out) {
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(sd_run_partitions(r));
    for (int p = 0; p < sd_run_partitions(r); p++) rd_kafka_topic_partition_list_add(tp, sd_run_topic(r), p);
    int rc = -1;
    if (!rd_kafka_committed(g->rk, tp, 3000)) {
        for (int p = 0; p < sd_run_partitions(r); p++) out[p] = -1;
        for (int i = 0; i < tp->cnt; i++) {
            const rd_kafka_topic_partition_t *t = &tp->elems[i];
            if (!t->err && t->partition >= 0 && t->partition < sd_run_partitions(r)) out[t->partition] = t->offset >= 0 ? t->offset : -1;
        }
        rc = 0;
    }
    rd_kafka_topic_partition_list_destroy(tp);
    return rc;
}

static int sd_group_known(char *const *list, int n, const char *id) {
    for (int i = 0; i < n; i++)
        if (!strcmp(list[i], id)) return 1;
    return 0;
}

/* Describe the group: is a member of this incarnation holding partitions? */
static void sd_group_describe(sd_group_t *g) {
    const char *names[1] = {g->name};
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(g->rk, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
    rd_kafka_AdminOptions_set_request_timeout(o, 5000, NULL, 0);
    rd_kafka_DescribeConsumerGroups(g->rk, names, 1, o, g->q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_event_t *ev = sd_group_wait(g, RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT);
    const rd_kafka_DescribeConsumerGroups_result_t *res = ev ? rd_kafka_event_DescribeConsumerGroups_result(ev) : NULL;
    size_t n = 0;
    const rd_kafka_ConsumerGroupDescription_t **gd = res && !rd_kafka_event_error(ev) ? rd_kafka_DescribeConsumerGroups_result_groups(res, &n) : NULL;
    if (!gd || n < 1 || rd_kafka_ConsumerGroupDescription_error(gd[0])) {
        /* a broker that cannot describe groups: the connection rule stands
         * in (no second try: librdkafka's admin requests stall after one
         * DescribeGroups the broker does not support); any other error (a
         * coordinator still loading, a timeout) is tried again later */
        rd_kafka_resp_err_t code = !ev ? RD_KAFKA_RESP_ERR__TIMED_OUT
                                   : rd_kafka_event_error(ev) ? rd_kafka_event_error(ev)
                                   : gd && n >= 1 ? rd_kafka_error_code(rd_kafka_ConsumerGroupDescription_error(gd[0]))
                                                  : RD_KAFKA_RESP_ERR__FAIL;
        if (code == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE || code == RD_KAFKA_RESP_ERR_UNSUPPORTED_VERSION) g->describe = -1;
        if (ev) rd_kafka_event_destroy(ev);
        return;
    }
    g->describe = 1;
    size_t m = rd_kafka_ConsumerGroupDescription_member_count(gd[0]);
    g->members_now = (int)m;
    g->old_listed = 0;
    for (size_t i = 0; i < m; i++) {
        const rd_kafka_MemberDescription_t *md = rd_kafka_ConsumerGroupDescription_member(gd[0], i);
        const char *id = rd_kafka_MemberDescription_consumer_id(md);
        if (id && sd_group_known(g->old, g->nold, id)) g->old_listed++;
        if (!id || sd_group_known(g->old, g->nold, id)) continue;
        if (!sd_group_known(g->seen, g->nseen, id) && g->nseen < SD_GROUP_MAX_MEMBERS) g->seen[g->nseen++] = sd_util_strdup(id);
        g->evidence = 1;
        const rd_kafka_MemberAssignment_t *a = rd_kafka_MemberDescription_assignment(md);
        const rd_kafka_topic_partition_list_t *tp = a ? rd_kafka_MemberAssignment_partitions(a) : NULL;
        if (tp && tp->cnt > 0 && rd_kafka_ConsumerGroupDescription_state(gd[0]) == RD_KAFKA_CONSUMER_GROUP_STATE_STABLE)
            g->ready = 1;
    }
    rd_kafka_event_destroy(ev);
}

/* A new incarnation: the members seen so far belong to earlier ones. */
static void sd_group_new_incarnation(sd_run_t *r, sd_group_t *g) {
    sd_progress_run_t *P = sd_run_progress(r);
    for (int i = 0; i < g->nseen; i++) {
        if (g->nold < SD_GROUP_MAX_MEMBERS) g->old[g->nold++] = g->seen[i];
        else free(g->seen[i]);
    }
    g->nseen = 0;
    g->ready = 0;
    g->open = 0;
    g->inc = P->bs.incarnation;
    g->polled_dead = 0;
    g->rows_at_commit = P->inc_rows0; /* counted as the incarnation started */
}

/* Is the transaction open in the target another writer's? Only when the
 * group has committed everything the harness sent (no input unread: no
 * work of the pipeline can be in flight but the output of what it has
 * already committed, a pipeline that commits its offsets before its
 * output) and no record the open transactions hold carries this run's
 * ledger ids ("<tag>-<seq>", in the value, key or sd-id header): a second
 * transactional producer of the application, a heartbeat. Read within a
 * few hundred ms; a reader that cannot tell in time leaves it the
 * pipeline's batch. */
static int sd_group_foreign_txn(sd_run_t *r, sd_group_t *g) {
    if (!sd_run_target(r) || sd_run_input_unread(r) != 0) return 0;
    if (!g->needle) {
        size_t n = strlen(sd_run_tag(r)) + 2;
        g->needle = sd_util_xmalloc(n);
        snprintf(g->needle, n, "%s-", sd_run_tag(r));
    }
    /* open records all written before the newest commit was seen are that
     * commit's own, readable once its markers land: only those written
     * since (past its high watermarks) can be a new batch's */
    return sd_sink_open_holds(sd_run_target(r), g->needle, g->commit_hw, g->commit_hw_n, sd_util_scaled_ms(300)) == 0;
}

/* A batch begins when a transaction of the pipeline holds records (in
 * the target or its own topics), or, for a writer that shows no
 * transaction, when the target's rows grew past the last commit (not
 * looked at between two turns: only_txn). */
static sd_err_t sd_group_begin(sd_run_t *r, sd_group_t *g, int only_txn, char *err, size_t errlen) {
    sd_progress_run_t *P = sd_run_progress(r);
    if (!g->evidence && g->describe >= 0) return SD_OK;
    int64_t rows = only_txn ? -1 : sd_progress_target_rows(r);
    /* a transactional writer's rows show at its commit, with the offsets:
     * its batch is the transaction open in the target or its own topics,
     * and rows that grew are a commit, not a begin */
    int in_own = 0;
    int64_t pend = sd_progress_open_records(r, &in_own);
    if (pend > 0 && !in_own && sd_group_foreign_txn(r, g)) pend = 0;
    if ((pend < 0 && rows >= 0 && g->rows_at_commit >= 0 && rows > g->rows_at_commit) || pend > 0) {
        g->open = 1;
        /* its size: what the harness had sent past the group's newest
         * commit (docs/pipelines.md) */
        sd_err_t e = sd_progress_batch_event(r, SD_SUP_EV_BEGIN, g->inc, ++g->batch, sd_progress_rows_pending(r), NULL,
                                             sd_util_wall_ms(), err, errlen);
        P->bs.begun_sink_rows = g->rows_at_commit;
        return e;
    }
    if (!only_txn && g->rows_at_commit < 0) g->rows_at_commit = rows;
    return SD_OK;
}

static void sd_group_held(sd_run_t *r, sd_group_t *g, int moved);

static sd_err_t sd_group_poll(sd_run_t *r, char *err, size_t errlen) {
    sd_progress_run_t *P = sd_run_progress(r);
    sd_group_t *g = P->source;
    if (!g || !P->bs.incarnation || !sd_run_sup(r)) return SD_OK;
    sd_sup_state_t st;
    sd_sup_state(sd_run_sup(r), &st);
    int64_t now = sd_util_mono_ms();
    if (g->inc != P->bs.incarnation) sd_group_new_incarnation(r, g);
    /* after the process ended, read the offsets once more: a graceful
     * exit commits on its way out */
    if (!st.running && g->polled_dead) return SD_OK;
    if (st.running && now < g->next_poll_mono) {
        /* between two turns, while a fault waits for a batch: an open
         * transaction (that of a writer committing every 100 ms may open
         * and commit between two turns) */
        return P->aiming && !g->open ? sd_group_begin(r, g, 1, err, errlen) : SD_OK;
    }
    g->next_poll_mono = now + SD_GROUP_POLL_MS;
    if (!st.running) g->polled_dead = 1;
    int64_t *cur = sd_util_xmalloc(sizeof(int64_t) * (size_t)sd_run_partitions(r));
    sd_err_t e = SD_OK;
    if (sd_group_fetch(r, g, cur) == 0) {
        int moved = 0;
        for (int p = 0; p < sd_run_partitions(r); p++) {
            if (cur[p] > g->committed[p]) moved = 1;
            g->committed[p] = cur[p];
        }
        if (!g->baseline) {
            /* offsets the group held before the run are where it starts, not
             * a batch; from now on the harness knows how far the group has
             * committed, none included (caught up, not yet consumed) */
            g->baseline = 1;
            if (P->consumed) {
                for (int p = 0; p < sd_run_partitions(r); p++) P->consumed[p] = cur[p];
                P->last_offsets_mono = now;
            }
            moved = 0;
        }
        if (moved) {
            g->evidence = 1;
            if (!g->open) g->batch++; /* committed without the sink showing it first */
            g->open = 0;
            /* the offsets as a commit marker's offsets= says them */
            sd_buf_t off;
            sd_buf_init(&off);
            for (int p = 0, any = 0; p < sd_run_partitions(r); p++)
                if (cur[p] >= 0) sd_buf_printf(&off, "%s%d:%lld", any++ ? "," : "", p, (long long)cur[p]);
            e = sd_progress_batch_event(r, SD_SUP_EV_COMMIT, g->inc, g->batch, -1, off.len ? off.data : NULL,
                                        sd_util_wall_ms(), err, errlen);
            sd_buf_free(&off);
            /* counted as the commit was recorded (one instance), else now */
            g->rows_at_commit = P->bs.committed_sink_rows >= 0 ? P->bs.committed_sink_rows : sd_progress_target_rows(r);
            int64_t stable[SD_GROUP_HELD_PARTS];
            g->commit_hw_n = sd_run_target(r) ? sd_sink_ends(sd_run_target(r), SD_GROUP_HELD_PARTS, stable, g->commit_hw) : -1;
        }
        /* a batch begins: also right after a commit, as a transactional
         * writer opens its next transaction at once (one commit interval
         * may be shorter than this poll's) */
        if (!e && !g->open && st.running) e = sd_group_begin(r, g, 0, err, errlen);
        if (st.running) sd_group_held(r, g, moved);
    }
    free(cur);
    if (!e && st.running && !g->ready && g->describe >= 0 && now >= g->next_describe_mono) {
        g->next_describe_mono = now + 250;
        sd_group_describe(g);
    }
    return e;
}

/* The transaction a kill left open, followed after the restart: once the
 * target's last stable offsets pass where it ended, how long it held them
 * back, said when a later incarnation had committed while it still held
 * them (a look found it held after that commit): its output unreadable the
 * while, nothing fenced the killed producer. A restart that fences it
 * (init_transactions with the same transactional.id) aborts it before its
 * first commit, so no look can find it held after one. */
static void sd_group_held_look(sd_run_t *r, sd_group_t *g, int moved, int last) {
    sd_progress_run_t *P = sd_run_progress(r);
    if (!g->held_n || !sd_run_target(r)) return;
    if (moved && P->bs.incarnation != g->held_inc) g->commits_since_look++;
    int64_t now = sd_util_mono_ms();
    if (now < g->next_held_mono && !last) return;
    g->next_held_mono = now + 250;
    int64_t stable[SD_GROUP_HELD_PARTS], end[SD_GROUP_HELD_PARTS];
    int n = sd_sink_ends(sd_run_target(r), SD_GROUP_HELD_PARTS, stable, end), p = 0;
    if (n <= 0) return;
    while (p < g->held_n && (p >= n || g->held_at[p] < 0 || stable[p] >= g->held_at[p])) p++;
    int held = p < g->held_n;
    if (held) { /* still held: the commits before this look were made while it held */
        g->held_commits += g->commits_since_look;
        g->commits_since_look = 0;
        if (!last) return;
    }
    g->held_n = 0;
    if (!g->held_commits) return;
    char w[900];
    snprintf(w, sizeof(w), "the transaction incarnation %d left open in the target at the kill (%lld records) held the target's "
             "last stable offset back %s%.1fs: a later incarnation committed %d batch%s meanwhile, unreadable to a read_committed "
             "reader until the transaction ended (the broker aborts it at its transaction.timeout.ms). The restarted pipeline "
             "did not fence the killed one's producer: one restarted with the same transactional.id aborts it at once",
             g->held_inc, (long long)g->held_left, held ? "still at the harness's last look, " : "", (double)(now - g->held_mono) / 1000.0,
             g->held_commits, g->held_commits == 1 ? "" : "es");
    sd_ledger_warning(sd_run_ledger(r), "txn-unfenced", w, NULL, 0);
    sd_run_say(r, "  %s", w);
}

static void sd_group_held(sd_run_t *r, sd_group_t *g, int moved) { sd_group_held_look(r, g, moved, 0); }

void sd_progress_group_last_look(sd_run_t *r) {
    sd_group_t *g = sd_run_progress(r)->ops == &sd_progress_group ? sd_run_progress(r)->source : NULL;
    if (g) sd_group_held_look(r, g, 0, 1);
}

void sd_progress_group_kill_left(sd_run_t *r, int inc, int64_t left) {
    sd_group_t *g = sd_run_progress(r)->ops == &sd_progress_group ? sd_run_progress(r)->source : NULL;
    if (!g || !sd_run_target(r)) return;
    int64_t stable[SD_GROUP_HELD_PARTS], end[SD_GROUP_HELD_PARTS];
    int n = sd_sink_ends(sd_run_target(r), SD_GROUP_HELD_PARTS, stable, end), any = 0;
    for (int p = 0; p < n; p++) any |= (g->held_at[p] = stable[p] < end[p] ? end[p] : -1) >= 0;
    if (!any) return;
    g->held_n = n;
    g->held_inc = inc;
    g->held_commits = g->commits_since_look = 0;
    g->held_left = left;
    g->held_mono = sd_util_mono_ms();
}

/* The committed offsets read now, not at the next 100 ms turn. */
static sd_err_t sd_group_refresh(sd_run_t *r, char *err, size_t errlen) {
    sd_group_t *g = sd_run_progress(r)->source;
    if (g) g->next_poll_mono = 0;
    return sd_group_poll(r, err, errlen);
}

static int sd_group_ready(sd_run_t *r, const sd_sup_state_t *st, int64_t up_ms) {
    sd_progress_run_t *P = sd_run_progress(r);
    sd_group_t *g = P->source;
    if (st->ready) return 1;
    sd_group_poll(r, NULL, 0);
    /* an engine that tells its state (Kafka Streams) is ready once it says
     * RUNNING too: with its partitions it first restores its stores, and
     * what is sent meanwhile reaches its tasks as a backlog */
    if (g->ready) return P->engine_inc != P->bs.incarnation || P->engine_running;
    /* a killed member stays in the group until its session expires, and
     * the group gives the new one nothing until then: say why the wait is
     * long, once per incarnation */
    if (g->describe > 0 && g->old_listed > 0 && up_ms >= sd_util_scaled_ms(5000) && g->warned_session != P->bs.incarnation) {
        g->warned_session = P->bs.incarnation;
        char w[640];
        snprintf(w, sizeof(w), "incarnation %d waits for consumer group %s: %d member%s of an earlier incarnation %s still listed, and "
                 "the group assigns nothing to the new one until %s session expires (the consumer's session.timeout.ms: 45 s by "
                 "default in librdkafka and the Java client; a pipeline that sets it lower, or leaves the group on SIGTERM, "
                 "restarts sooner)", P->bs.incarnation, g->name, g->old_listed, g->old_listed == 1 ? "" : "s",
                 g->old_listed == 1 ? "is" : "are", g->old_listed == 1 ? "its" : "their");
        sd_ledger_warning(sd_run_ledger(r), "group-session-wait", w, NULL, 0);
        sd_run_say(r, "  %s", w);
    }
    /* a broker that cannot describe groups, or a group without members (a
     * pipeline that assigns its partitions itself) after 5 s up: the
     * connection to the broker */
    if (g->describe < 0 || (g->describe > 0 && g->members_now == 0 && up_ms >= sd_util_scaled_ms(5000))) {
        int ok = sd_progress_connected_ready(r, st, up_ms);
        if (ok && !g->evidence && g->describe > 0 && g->warned_ready != P->bs.incarnation) {
            g->warned_ready = P->bs.incarnation;
            char w[512];
            snprintf(w, sizeof(w), "incarnation %d taken as ready by its connection to the broker: consumer group %s has had "
                     "neither a member nor a commit (does the pipeline use that group? `progress group group=NAME`)",
                     P->bs.incarnation, g->name);
            sd_ledger_warning(sd_run_ledger(r), "group-unseen", w, NULL, 0);
            sd_run_say(r, "  %s", w);
        }
        return ok;
    }
    return 0;
}

static void sd_group_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    (void)rk; (void)level; (void)fac; (void)buf; /* failures reach the caller as error codes */
}

/* Is topic one the application of this group writes in its transactions
 * (see the top)? */
static int sd_group_owns(const char *group, const char *topic) {
    size_t n = strlen(group), t = strlen(topic);
    if (!strncmp(topic, group, n) && topic[n] == '-' &&
        ((t > n + 12 && !strcmp(topic + t - 12, "-repartition")) || (t > n + 10 && !strcmp(topic + t - 10, "-changelog"))))
        return 1;
    static const char *const quix[] = {"repartition__", "changelog__"};
    for (int i = 0; i < 2; i++) {
        size_t k = strlen(quix[i]);
        if (!strncmp(topic, quix[i], k) && !strncmp(topic + k, group, n) && !strncmp(topic + k + n, "--", 2)) return 1;
    }
    return 0;
}

/* Look the application's own topics up in the cluster's metadata: every
 * second until there are some (an application creates them as it starts),
 * every ten after. */
static void sd_group_find_own(sd_group_t *g) {
    int64_t now = sd_util_mono_ms();
    if (now < g->next_own_mono) return;
    g->next_own_mono = now + (g->nown ? 10000 : 1000);
    const struct rd_kafka_metadata *md = NULL;
    if (rd_kafka_metadata(g->rk, 1, NULL, &md, 3000) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
    for (int i = 0; i < md->topic_cnt; i++) {
        const struct rd_kafka_metadata_topic *t = &md->topics[i];
        if (t->err || t->partition_cnt < 1 || !sd_group_owns(g->name, t->topic)) continue;
        int k = 0;
        while (k < g->nown && strcmp(g->own[k], t->topic)) k++;
        if (k == g->nown) {
            g->own = sd_util_xrealloc(g->own, sizeof(char *) * (size_t)(g->nown + 1));
            g->own_parts = sd_util_xrealloc(g->own_parts, sizeof(int) * (size_t)(g->nown + 1));
            g->own[g->nown++] = sd_util_strdup(t->topic);
        }
        g->own_parts[k] = t->partition_cnt;
    }
    rd_kafka_metadata_destroy(md);
}

/* The end of every partition of the application's own topics, in order,
 * as h's isolation level gives it: the high watermark (read_uncommitted)
 * or the last stable offset (read_committed). Both ends of all of them in
 * two requests a leader (24 partitions for a windowed count's repartition
 * and changelog topics), within a timeout: librdkafka 2.0's watermark
 * query, two requests a partition, can wait without end on a broker that
 * went away mid-aim. 0, or -1 when they cannot be read. */
static int sd_group_own_ends(sd_group_t *g, rd_kafka_t *h, int64_t *ends) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);
    for (int i = 0; i < g->nown; i++)
        for (int p = 0; p < g->own_parts[i]; p++) rd_kafka_topic_partition_list_add(l, g->own[i], p)->offset = RD_KAFKA_OFFSET_END;
    int rc = rd_kafka_offsets_for_times(h, l, 3000) ? -1 : 0;
    for (int i = 0, k = 0; !rc && i < g->nown; i++)
        for (int p = 0; p < g->own_parts[i] && !rc; p++, k++) {
            const rd_kafka_topic_partition_t *t = rd_kafka_topic_partition_list_find(l, g->own[i], p);
            if (!t || t->err || t->offset < 0) rc = -1;
            else ends[k] = t->offset;
        }
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

/* Records of open transactions in the application's own topics: high
 * watermark past last stable offset, summed; -1 when it has none, none
 * was ever seen in a transaction (an at-least-once application's), or
 * they cannot be read. */
static int64_t sd_group_own_open(sd_run_t *r, sd_group_t *g) {
    sd_group_find_own(g);
    if (!g->nown) return -1;
    if (!g->lso) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        char errstr[512];
        rd_kafka_conf_set(conf, "bootstrap.servers", sd_broker_bootstrap(sd_run_broker(r)), NULL, 0);
        rd_kafka_conf_set(conf, "client.id", "streamdrill-group-watch", NULL, 0);
        rd_kafka_conf_set(conf, "isolation.level", "read_committed", NULL, 0);
        rd_kafka_conf_set_log_cb(conf, sd_group_log_cb);
        if (sd_broker_conf_apply(conf, sd_run_opts(r)->xprops, "-X", errstr, sizeof(errstr)) != SD_OK ||
            !(g->lso = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr)))) {
            rd_kafka_conf_destroy(conf);
            return -1;
        }
    }
    /* a kill's aim, looking every 2 ms, takes the answer of the last 10
     * ms, shorter than any transaction it aims at */
    int64_t now = sd_util_mono_us();
    if (g->own_open_us && now - g->own_open_us < 10000) return g->own_open;
    int n = 0;
    for (int i = 0; i < g->nown; i++) n += g->own_parts[i];
    int64_t *hw = sd_util_xcalloc((size_t)n, sizeof(int64_t)), *lso = sd_util_xcalloc((size_t)n, sizeof(int64_t));
    int ok = !sd_group_own_ends(g, g->rk, hw) && !sd_group_own_ends(g, g->lso, lso);
    int64_t sum = 0;
    for (int k = 0; ok && k < n; k++)
        if (hw[k] > lso[k]) sum += hw[k] - lso[k];
    free(hw);
    free(lso);
    if (!ok) return -1;
    if (sum > 0) g->own_txn = 1;
    g->own_open_us = now;
    return g->own_open = g->own_txn ? sum : -1;
}

static int64_t sd_group_open_records(sd_run_t *r) {
    return sd_group_own_open(r, sd_run_progress(r)->source);
}

static sd_err_t sd_group_open(sd_run_t *r, void **state, char *err, size_t errlen) {
    char *name = sd_scenario_expand(sd_run_sc(r)->progress_group ? sd_run_sc(r)->progress_group : "{group}", sd_run_vars(r), err, errlen);
    if (!name) return SD_ERR_SCENARIO;
    /* a consumer handle of the group that never subscribes: it reads the
     * group's commits and describes it, and is never a member */
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[512];
    rd_kafka_conf_set(conf, "bootstrap.servers", sd_broker_bootstrap(sd_run_broker(r)), NULL, 0);
    rd_kafka_conf_set(conf, "client.id", "streamdrill-group-watch", NULL, 0);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", NULL, 0);
    /* the offsets committed now: a read_committed handle asks for stable
     * offsets (KIP-447), which a transactional pipeline, its offsets
     * pending in a transaction most of the time, makes the broker refuse
     * until the transaction ends, and committed() retries for its whole
     * timeout; without it a pending transaction's offsets are simply not
     * there yet */
    rd_kafka_conf_set(conf, "isolation.level", "read_uncommitted", NULL, 0);
    rd_kafka_conf_set_log_cb(conf, sd_group_log_cb);
    sd_err_t e = sd_broker_conf_apply(conf, sd_run_opts(r)->xprops, "-X", err, errlen);
    if (!e && rd_kafka_conf_set(conf, "group.id", name, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
        e = sd_err_set(err, errlen, SD_ERR_SCENARIO, "progress group: group %s: %s", name, errstr);
    rd_kafka_t *rk = e ? NULL : rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!rk) {
        if (!e) e = sd_err_set(err, errlen, SD_ERR_BROKER, "progress group %s: create a client: %s", name, errstr);
        else rd_kafka_conf_destroy(conf);
        free(name);
        return e;
    }
    sd_group_t *g = sd_util_xcalloc(1, sizeof(*g));
    g->name = name;
    g->rk = rk;
    g->q = rd_kafka_queue_new(g->rk);
    g->committed = sd_util_xmalloc(sizeof(int64_t) * (size_t)(sd_run_partitions(r) + 1));
    for (int p = 0; p < sd_run_partitions(r); p++) g->committed[p] = -1;
    g->rows_at_commit = -1;
    /* the embedded cluster has no DescribeGroups */
    if (sd_broker_is_embedded(sd_run_broker(r))) g->describe = -1;
    *state = g;
    sd_run_say(r, "progress group: following consumer group %s (its commits and members)", name);
    return sd_ledger_meta_set(sd_run_ledger(r), "progress_group", name, err, errlen);
}

static void sd_group_close(void *state) {
    sd_group_t *g = state;
    for (int i = 0; i < g->nold; i++) free(g->old[i]);
    for (int i = 0; i < g->nseen; i++) free(g->seen[i]);
    for (int i = 0; i < g->nown; i++) free(g->own[i]);
    free(g->own);
    free(g->own_parts);
    if (g->lso) rd_kafka_destroy(g->lso);
    rd_kafka_queue_destroy(g->q);
    rd_kafka_destroy(g->rk);
    free(g->committed);
    free(g->needle);
    free(g->name);
    free(g);
}

/* The group watched, when the run's source is this one. */
static const sd_group_t *sd_group_of(const sd_run_t *r) {
    return sd_run_progress(r)->ops == &sd_progress_group ? sd_run_progress(r)->source : NULL;
}

const char *sd_progress_group_name(const sd_run_t *r) {
    const sd_group_t *g = sd_group_of(r);
    return g ? g->name : NULL;
}

int sd_progress_group_unseen(const sd_run_t *r) {
    const sd_group_t *g = sd_group_of(r);
    return g && !g->evidence && g->describe > 0;
}

const sd_progress_ops_t sd_progress_group = {.name = "group", .batches = 1, .open = sd_group_open, .close = sd_group_close,
                                             .poll = sd_group_poll, .refresh = sd_group_refresh, .ready = sd_group_ready,
                                             .open_records = sd_group_open_records,
                                             .not_ready = "no new member of its consumer group held an assignment"};
