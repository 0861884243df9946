/* broker.c - faults on the brokers of a Kafka cluster (--cluster DIR).
 *
 *   broker kill leader-of=0 mid-batch   SIGKILL to the broker leading source
 *                                       partition 0, inside a pipeline batch
 *   broker stop id=2 [for=D]            SIGTERM: a controlled shutdown (its
 *                                       leaderships move before it exits)
 *   broker pause id=2 [for=D]           SIGSTOP: alive to the network, silent
 *   broker start [id=N]                 start it again on its own data (every
 *                                       broker the run took down, without id=)
 *   broker restart id=N                 stop, then start
 *   broker resume [id=N]                SIGCONT
 *   broker isolate leader-of=0 [for=D]  cut it off from the other brokers (its
 *                                       inter-broker and controller links,
 *                                       through the cluster's link proxies,
 *                                       links.h) while clients still reach it
 *   broker rejoin [id=N]                give the links back
 *
 * The broker is chosen when the step strikes: by id, or as the leader of a
 * source partition in a metadata request made at that moment. A kill, stop
 * or pause records which source partitions the broker led, then follows
 * the cluster's metadata (every 100 ms, the run served meanwhile) until each
 * of them has a leader that is not a broker the run took down; the moves and
 * how long each partition had none go to run.db `leader_move` and the
 * fault's landing (`leaderless_s`, figures.h). `mid-batch` and `at-boundary`
 * land in the pipeline's batches as a pipeline kill does (process.c). The
 * run ends with every broker it took down started again, and every broker
 * it paused resumed (`heal`).
 *
 * On the embedded cluster (`--broker-count N`: librdkafka's mock brokers
 * 1..N) kill and stop set the broker down and the harness, standing in for
 * the controller, gives each partition it led to the next broker that is up
 * at once; start sets it up again (its leaderships stay where they moved).
 * There is no process to freeze, so pause needs a real cluster. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "run.h"

static int sd_broker_handles(sd_step_kind_t k) { return k == SD_STEP_BROKER; }

static const char *const sd_bop_words[] = {"kill", "stop", "start", "restart", "pause", "resume", "isolate", "rejoin"};

/* The incarnation a fault record names (0: no pipeline). */
static int sd_broker_inc(sd_run_t *r) {
    sd_sup_state_t s = {0};
    if (sd_run_sup(r)) sd_sup_state(sd_run_sup(r), &s);
    return s.incarnation;
}

/* Each source partition's leader now (-1: none). While the run has taken
 * a broker of a real cluster down or frozen it, the question goes to the
 * others only: the admin client may be connected to the frozen one and
 * wait on it. */
/* The brokers that answer, "h:p,h:p", while the run has taken one of a
 * real cluster down or frozen it (else "": the admin client will do). */
static void sd_broker_answering(sd_run_t *r, sd_buf_t *via) {
    sd_cluster_t *c = sd_run_faults(r)->cluster;
    int hurt = 0;
    for (int i = 0; c && !c->embedded && i < c->n; i++) {
        if (c->b[i].down || c->b[i].paused || c->b[i].isolated) hurt = 1; /* a cut-off broker's metadata is stale */
        else sd_buf_printf(via, "%s%s", via->len ? "," : "", c->b[i].addr);
    }
    if (!hurt) sd_buf_reset(via);
}

static void sd_broker_leaders_now(sd_run_t *r, int32_t *leader, int32_t *isr) {
    sd_buf_t via;
    sd_buf_init(&via);
    sd_broker_answering(r, &via);
    if (sd_broker_leaders(sd_run_broker(r), via.len ? via.data : NULL, sd_run_topic(r), leader, isr, sd_run_partitions(r), NULL, 0) != SD_OK)
        for (int p = 0; p < sd_run_partitions(r); p++) leader[p] = -1;
    sd_buf_free(&via);
}

/* The leaders, asked again (serving the run) while the partition the step
 * names has none in the answer, until the deadline: the metadata request
 * may have gone to a frozen broker. */
static void sd_broker_leaders_for(sd_run_t *r, int p, int64_t deadline, int32_t *leader, int32_t *isr) {
    for (;;) {
        sd_broker_leaders_now(r, leader, isr);
        if (p < 0 || p >= sd_run_partitions(r) || leader[p] >= 0 || sd_util_mono_ms() > deadline) return;
        if (sd_run_tick(r, 200, NULL, 0) == SD_ERR_INTERRUPTED) return;
    }
}

/* Who leads each source partition when the strike is due, asked as a
 * fault's prepare (sd_landing_t): after the aim, before the last look at
 * the batch, so the round trip does not fall between that look and the
 * strike. */
typedef struct {
    const sd_step_t *st;
    int32_t *leader, *isr;
} sd_broker_asked_t;

static sd_err_t sd_broker_ask_leaders(sd_run_t *r, void *arg, char *err, size_t errlen) {
    (void)err; (void)errlen;
    sd_broker_asked_t *A = arg;
    sd_broker_leaders_for(r, A->st->proc.leader_of >= 0 ? A->st->proc.leader_of : A->st->proc.follower_of,
                          sd_util_mono_ms() + sd_util_scaled_ms(A->st->timeout_ms), A->leader, A->isr);
    return SD_OK;
}

/* A leader the clients can use: a broker of the cluster that the run has not
 * taken down or paused. */
static int sd_broker_usable(sd_run_t *r, int id) {
    if (id < 0) return 0;
    const sd_cluster_broker_t *b = sd_cluster_find(sd_run_faults(r)->cluster, id);
    return !b || (!b->down && !b->paused && !b->isolated);
}

/* The broker the step names, or NULL with why said (a partition with no
 * leader, an id the cluster does not have). */
static sd_cluster_broker_t *sd_broker_pick(sd_run_t *r, const sd_step_t *st, const int32_t *leader, char *why, size_t wlen) {
    sd_cluster_t *c = sd_run_faults(r)->cluster;
    if (st->proc.broker_id >= 0) {
        sd_cluster_broker_t *b = sd_cluster_find(c, st->proc.broker_id);
        if (!b) {
            size_t l = (size_t)snprintf(why, wlen, "the cluster (%s) has no broker %d; its brokers are", c->path, st->proc.broker_id);
            for (int i = 0; i < c->n && l < wlen; i++) l += (size_t)snprintf(why + l, wlen - l, "%s %d", i ? "," : "", c->b[i].id);
        }
        return b;
    }
    int p = st->proc.leader_of >= 0 ? st->proc.leader_of : st->proc.follower_of;
    if (p >= sd_run_partitions(r)) {
        snprintf(why, wlen, "partition %d: the source has %d partitions", p, sd_run_partitions(r));
        return NULL;
    }
    if (st->proc.follower_of >= 0) {
        int32_t ids[SD_CLUSTER_MAX];
        int n = -1;
        sd_buf_t via;
        sd_buf_init(&via);
        sd_broker_answering(r, &via);
        for (int tries = 0; tries < 5 && n <= 0; tries++) n = sd_broker_replicas(sd_run_broker(r), via.len ? via.data : NULL, sd_run_topic(r), p, ids, SD_CLUSTER_MAX);
        sd_buf_free(&via);
        for (int i = 0; i < n; i++)
            if (ids[i] != leader[p] && sd_broker_usable(r, ids[i]) && sd_cluster_find(c, ids[i])) return sd_cluster_find(c, ids[i]);
        snprintf(why, wlen, "source partition %d has no follower the run has not taken down or paused (%d replica%s)", p, n < 0 ? 0 : n,
                 n == 1 ? "" : "s");
        return NULL;
    }
    if (leader[p] < 0) {
        snprintf(why, wlen, "source partition %d has no leader to strike", p);
        return NULL;
    }
    sd_cluster_broker_t *b = sd_cluster_find(c, leader[p]);
    if (!b) snprintf(why, wlen, "source partition %d is led by broker %d, which %s does not list", p, leader[p], c->path);
    return b;
}

/* Follow the metadata until every source partition the victim led has a
 * usable leader again (or the step's timeout passes); record each move. */
static void sd_broker_follow(sd_run_t *r, const sd_step_t *st, int64_t fid, int victim, const int32_t *before, int64_t t0,
                             char *out, size_t olen) {
    int n = sd_run_partitions(r), led = 0;
    int64_t *took = sd_util_xcalloc((size_t)n, sizeof(*took));
    int32_t *now = sd_util_xcalloc((size_t)n, sizeof(*now)), *isr = sd_util_xcalloc((size_t)n, sizeof(*isr));
    int32_t *next = sd_util_xcalloc((size_t)n, sizeof(*next)); /* the leader each partition got, when it got one */
    for (int p = 0; p < n; p++) {
        took[p] = -1;
        if (before[p] == victim) led++;
    }
    int64_t deadline = t0 + sd_util_scaled_ms(st->timeout_ms);
    int left = led;
    while (left > 0 && sd_util_mono_ms() < deadline) {
        if (sd_run_tick(r, 100, NULL, 0) == SD_ERR_INTERRUPTED) break;
        sd_broker_leaders_now(r, now, isr);
        for (int p = 0; p < n; p++)
            if (before[p] == victim && took[p] < 0 && sd_broker_usable(r, now[p])) {
                took[p] = sd_util_mono_ms() - t0;
                next[p] = now[p];
                left--;
            }
    }
    sd_buf_t b;
    sd_buf_init(&b);
    if (!led) sd_buf_printf(&b, "broker %d led no source partition", victim);
    else sd_buf_printf(&b, "broker %d led partition%s", victim, led == 1 ? "" : "s");
    for (int p = 0, k = 0; p < n; p++)
        if (before[p] == victim) sd_buf_printf(&b, "%s %d", k++ ? "," : "", p);
    int64_t worst = 0;
    for (int p = 0, k = 0; p < n; p++) {
        if (before[p] != victim) continue;
        sd_ledger_leader_move(sd_run_ledger(r), fid, p, victim, took[p] >= 0 ? next[p] : -1, took[p], NULL, 0);
        if (took[p] >= 0) sd_buf_printf(&b, "%s%d to broker %d after %.1f s", k++ ? ", " : "; leaders moved: ", p, next[p], (double)took[p] / 1000.0);
        else sd_buf_printf(&b, "%s%d: no other leader within %.0f s", k++ ? ", " : "; leaders moved: ", p, (double)sd_util_scaled_ms(st->timeout_ms) / 1000.0);
        if (took[p] > worst) worst = took[p];
    }
    if (led && !left) sd_buf_printf(&b, "; every source partition had a leader again after %.1f s", (double)worst / 1000.0);
    sd_ledger_fault_note(sd_run_ledger(r), fid, b.data, NULL, 0);
    snprintf(out, olen, "%s", b.data);
    sd_buf_free(&b);
    free(took);
    free(now);
    free(next);
    free(isr);
}

/* The embedded cluster has no controller: the harness elects, giving each
 * source partition the broker led to the next broker that is up. */
static void sd_broker_mock_elect(sd_run_t *r, int victim, const int32_t *before) {
    sd_cluster_t *c = sd_run_faults(r)->cluster;
    rd_kafka_mock_cluster_t *mock = sd_broker_mock(sd_run_broker(r));
    int k = 0;
    for (int i = 0; i < c->n; i++)
        if (c->b[i].id == victim) k = i;
    for (int p = 0; p < sd_run_partitions(r); p++) {
        if (before[p] != victim) continue;
        for (int j = 1; j < c->n; j++) {
            const sd_cluster_broker_t *nb = &c->b[(k + j) % c->n];
            if (nb->down) continue;
            rd_kafka_mock_partition_set_leader(mock, sd_run_topic(r), p, nb->id);
            break;
        }
    }
}

/* Start a broker again and wait (serving the run) until its start command
 * says it has started. */
static sd_err_t sd_broker_start_wait(sd_run_t *r, sd_cluster_broker_t *b, int64_t timeout_ms, char *why, size_t wlen) {
    sd_faults_t *F = sd_run_faults(r);
    if (F->cluster->embedded) {
        rd_kafka_mock_broker_set_up(sd_broker_mock(sd_run_broker(r)), b->id);
        b->down = 0;
        return SD_OK;
    }
    char err[512];
    if (sd_cluster_start_begin(F->cluster, b, err, sizeof(err))) {
        snprintf(why, wlen, "%.250s", err);
        return SD_ERR_BROKER;
    }
    int64_t deadline = sd_util_mono_ms() + timeout_ms;
    for (;;) {
        int done = sd_cluster_start_poll(b, why, wlen);
        if (done > 0) return SD_OK;
        if (done < 0) return SD_ERR_BROKER;
        if (sd_util_mono_ms() > deadline) {
            snprintf(why, wlen, "not started within %.0f s (see logs/broker-%d-start.log)", (double)timeout_ms / 1000.0, b->id);
            return SD_ERR_TIMEOUT;
        }
        if (sd_run_tick(r, 50, NULL, 0) == SD_ERR_INTERRUPTED) {
            snprintf(why, wlen, "interrupted");
            return SD_ERR_INTERRUPTED;
        }
    }
}

/* Record that broker b is back (kind broker-start or broker-resume): the
 * broker fault that took it ends here. */
static void sd_broker_back_record(sd_run_t *r, const sd_cluster_broker_t *b, const char *kind, const char *det) {
    char like[48];
    snprintf(like, sizeof(like), "%% broker %d %%", b->id);
    sd_ledger_fault_undo(sd_run_ledger(r), sd_run_step_index(r), "broker", like, kind, det, 0, NULL, 0);
}

/* SIGCONT to a broker the run froze, recorded with det. */
static void sd_broker_resume(sd_run_t *r, sd_cluster_broker_t *b, const char *det) {
    sd_cluster_signal(b, SIGCONT, NULL, 0);
    b->paused = 0;
    sd_broker_back_record(r, b, "broker-resume", det);
}

/* The links of a broker the run cut off given back, recorded with det. */
static sd_err_t sd_broker_rejoin(sd_run_t *r, sd_cluster_broker_t *b, const char *det, char *err, size_t errlen) {
    b->isolated = 0;
    sd_err_t e = sd_cluster_cut(sd_run_faults(r)->cluster, 5000, err, errlen);
    if (!e) sd_broker_back_record(r, b, "broker-rejoin", det);
    return e;
}

/* for=D: the broker comes back (arg: its id) */
static void sd_broker_undo(sd_run_t *r, int id) {
    sd_faults_t *F = sd_run_faults(r);
    sd_cluster_broker_t *b = sd_cluster_find(F->cluster, id);
    if (!b) return;
    char det[96];
    if (b->isolated) {
        char err[512];
        snprintf(det, sizeof(det), "broker %d rejoined the others (for= elapsed)", id);
        if (sd_broker_rejoin(r, b, det, err, sizeof(err))) sd_ledger_warning(sd_run_ledger(r), "broker-not-rejoined", err, NULL, 0);
    } else if (b->paused) {
        snprintf(det, sizeof(det), "SIGCONT to broker %d (for= elapsed)", id);
        sd_broker_resume(r, b, det);
    } else if (b->down && !b->starting) {
        /* its start runs on while the run goes; heal waits for it (an
         * embedded broker is set up at once) */
        char why[256];
        int embedded = F->cluster->embedded;
        if (embedded ? sd_broker_start_wait(r, b, 0, why, sizeof(why)) : sd_cluster_start_begin(F->cluster, b, NULL, 0)) return;
        snprintf(det, sizeof(det), "broker %d %s again (for= elapsed)", id, embedded ? "set up" : "started");
        sd_broker_back_record(r, b, "broker-start", det);
    }
}

/* kill, stop, pause: strike, then follow the leaderships. */
static sd_err_t sd_broker_strike(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_faults_t *F = sd_run_faults(r);
    int op = st->proc.bop, emb = F->cluster->embedded;
    if (emb && op == SD_BROKER_PAUSE)
        return sd_err_set(err, errlen, SD_ERR_USAGE, "%s:%d: broker pause needs a real cluster (--cluster DIR): the embedded cluster's "
                          "brokers are not processes to freeze", sd_run_sc(r)->path, st->line);
    if (emb && op == SD_BROKER_ISOLATE)
        return sd_err_set(err, errlen, SD_ERR_USAGE, "%s:%d: broker isolate needs a real cluster (--cluster DIR): the embedded cluster's "
                          "brokers share one process and have no links between them to cut", sd_run_sc(r)->path, st->line);
    if (op == SD_BROKER_ISOLATE && !F->cluster->cut_path)
        return sd_err_set(err, errlen, SD_ERR_USAGE, "%s:%d: broker isolate: %s has no `isolate FILE` line, so its brokers do not reach "
                          "each other through links the harness can cut (start the cluster with scenarios/env/kafka/kafka.sh cluster)",
                          sd_run_sc(r)->path, st->line, F->cluster->path);
    int n = sd_run_partitions(r);
    sd_broker_asked_t A = {st, sd_util_xcalloc((size_t)n > 0 ? (size_t)n : 1, sizeof(int32_t)),
                           sd_util_xcalloc((size_t)n > 0 ? (size_t)n : 1, sizeof(int32_t))};
    int32_t *before = A.leader, *isr = A.isr;
    sd_landing_t L = {.how = SD_PLACED_NOW, .batch = -1, .batch_rows = -1, .rows0 = -1, .mark0 = -1, .mark1 = -1,
                      .prepare = sd_broker_ask_leaders, .prepare_arg = &A};
    if (st->proc.mid_batch != SD_LAND_NOW) {
        sd_sup_state_t s;
        int skip;
        sd_err_t e = sd_fault_reach_point(r, st, sd_bop_words[op], &s, &L, &skip, detail, dlen, err, errlen);
        if (e || skip) { free(before); free(isr); return e; }
    } else sd_broker_ask_leaders(r, &A, NULL, 0);
    char why[512] = "";
    sd_cluster_broker_t *b = sd_broker_pick(r, st, before, why, sizeof(why));
    pid_t pid = !b ? -1 : emb ? (b->down ? -1 : 1) : sd_cluster_pid(b);
    if (b && (pid < 0 || b->down)) snprintf(why, sizeof(why), "broker %d is not running", b->id);
    else if (b && b->paused && op != SD_BROKER_KILL) snprintf(why, sizeof(why), "broker %d is paused already", b->id);
    else if (b && b->isolated && op == SD_BROKER_ISOLATE) snprintf(why, sizeof(why), "broker %d is cut off already", b->id);
    if (!b || pid < 0 || b->down || (b->paused && op != SD_BROKER_KILL) || (b->isolated && op == SD_BROKER_ISOLATE)) {
        snprintf(detail, dlen, "nothing to %s: %s", sd_bop_words[op], why);
        free(before);
        free(isr);
        if (st->proc.broker_id >= 0 && !b)
            return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: broker %s id=%d: %s", sd_run_sc(r)->path, st->line, sd_bop_words[op],
                              st->proc.broker_id, why);
        sd_run_fault_missed(r, st, detail);
        return SD_OK;
    }
    char led[160] = "";
    size_t l = 0;
    for (int p = 0; p < n && l < sizeof(led); p++)
        if (before[p] == b->id) l += (size_t)snprintf(led + l, sizeof(led) - l, "%s%d", l ? "," : "", p);
    char fdet[320];
    const char *how = emb ? "the embedded broker set down" : op == SD_BROKER_KILL ? "SIGKILL" : op == SD_BROKER_STOP ? "SIGTERM, a controlled shutdown"
                    : op == SD_BROKER_ISOLATE ? "its links to the other brokers cut, clients still reach it" : "SIGSTOP";
    snprintf(fdet, sizeof(fdet), "%s broker %d (%s; %s%s) %s", sd_bop_words[op], b->id, how,
             !l ? "leader of no source partition" : strchr(led, ',') ? "leader of source partitions " : "leader of source partition ", led,
             sd_placed_words[L.how]);
    int inc = sd_broker_inc(r);
    int64_t fid = 0;
    sd_err_t e = sd_ledger_fault(sd_run_ledger(r), sd_run_step_index(r), "broker", fdet, inc, &fid, err, errlen);
    if (e) { free(before); free(isr); return e; }
    sd_run_pump(r, NULL, 0); /* a commit seen from now on came after the strike */
    int64_t t0 = sd_util_mono_ms();
    int sig = op == SD_BROKER_KILL ? SIGKILL : op == SD_BROKER_STOP ? SIGTERM : SIGSTOP;
    if (op == SD_BROKER_ISOLATE) {
        b->isolated = 1;
        if ((e = sd_cluster_cut(F->cluster, 5000, err, errlen))) { b->isolated = 0; free(before); free(isr); return e; }
    } else if (emb) rd_kafka_mock_broker_set_down(sd_broker_mock(sd_run_broker(r)), b->id);
    else if ((e = sd_cluster_signal(b, sig, err, errlen))) { free(before); free(isr); return e; }
    if (op == SD_BROKER_PAUSE) b->paused = 1;
    else if (op != SD_BROKER_ISOLATE) b->down = 1, b->paused = 0;
    char land[768] = "";
    if (L.how != SD_PLACED_NOW) sd_fault_landing(r, fid, &L, inc, 0, 0, t0, land, sizeof(land));
    char gone[96] = "";
    if (emb) sd_broker_mock_elect(r, b->id, before);
    else if (op != SD_BROKER_PAUSE && op != SD_BROKER_ISOLATE) {
        /* a controlled shutdown takes a while; the leaderships move during it */
        int64_t wait = op == SD_BROKER_KILL ? 10000 : sd_util_scaled_ms(st->timeout_ms);
        int64_t until = sd_util_mono_ms() + wait;
        while (sd_util_mono_ms() < until && !sd_cluster_wait_gone(b, pid, 0))
            if (sd_run_tick(r, 50, NULL, 0) == SD_ERR_INTERRUPTED) break;
        if (!sd_cluster_wait_gone(b, pid, 0)) {
            kill(pid, SIGKILL);
            sd_cluster_wait_gone(b, pid, 10000);
            snprintf(gone, sizeof(gone), "; escalated to SIGKILL after %.0f s", (double)wait / 1000.0);
        } else if (op == SD_BROKER_STOP) {
            snprintf(gone, sizeof(gone), "; it exited after %.1f s", (double)(sd_util_mono_ms() - t0) / 1000.0);
        }
        if (gone[0]) sd_ledger_fault_note(sd_run_ledger(r), fid, gone + 2, NULL, 0);
    }
    char moved[600];
    sd_broker_follow(r, st, fid, b->id, before, t0, moved, sizeof(moved));
    if (st->proc.delay_ms > 0) sd_run_schedule_undo(r, t0 + st->proc.delay_ms, sd_broker_undo, b->id);
    snprintf(detail, dlen, "%s%s%s%s; %s%s", fdet, gone, land[0] ? "; landed " : "", land, moved,
             st->proc.delay_ms > 0 ? (op == SD_BROKER_PAUSE ? "; resumed after for=" : op == SD_BROKER_ISOLATE ? "; rejoins after for="
                                                                                                        : "; started again after for=") : "");
    sd_run_data_step_done(r);
    free(before);
    free(isr);
    return SD_OK;
}

/* start [id=N], resume [id=N]: one broker, or every one the run took down
 * (paused). */
static sd_err_t sd_broker_back(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_cluster_t *c = sd_run_faults(r)->cluster;
    int resume = st->proc.bop == SD_BROKER_RESUME, rejoin = st->proc.bop == SD_BROKER_REJOIN, did = 0;
    sd_buf_t b;
    sd_buf_init(&b);
    if (st->proc.broker_id >= 0 && !sd_cluster_find(c, st->proc.broker_id)) {
        sd_buf_free(&b);
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: broker %s id=%d: the cluster (%s) has no such broker", sd_run_sc(r)->path, st->line,
                          sd_bop_words[st->proc.bop], st->proc.broker_id, c->path);
    }
    for (int i = 0; i < c->n; i++) {
        sd_cluster_broker_t *k = &c->b[i];
        if (st->proc.broker_id >= 0 && k->id != st->proc.broker_id) continue;
        char det[200], why[256] = "";
        if (rejoin) {
            if (!k->isolated) continue;
            snprintf(det, sizeof(det), "broker %d rejoined the others", k->id);
            sd_err_t e = sd_broker_rejoin(r, k, det, err, errlen);
            if (e) { sd_buf_free(&b); return e; }
        } else if (resume) {
            if (!k->paused) continue;
            snprintf(det, sizeof(det), "SIGCONT to broker %d", k->id);
            sd_broker_resume(r, k, det);
        } else {
            if (!k->down && !k->starting && (c->embedded || sd_cluster_pid(k) > 0)) continue;
            int64_t t = sd_util_mono_ms();
            sd_err_t e = sd_broker_start_wait(r, k, sd_util_scaled_ms(st->timeout_ms), why, sizeof(why));
            if (e == SD_ERR_INTERRUPTED) { sd_buf_free(&b); return sd_err_set(err, errlen, e, "interrupted"); }
            if (e) {
                sd_buf_free(&b);
                return sd_err_set(err, errlen, SD_ERR_BROKER, "broker %d: could not start it again: %s", k->id, why);
            }
            if (c->embedded) snprintf(det, sizeof(det), "broker %d set up again", k->id);
            else snprintf(det, sizeof(det), "broker %d started again in %.1f s", k->id, (double)(sd_util_mono_ms() - t) / 1000.0);
            sd_broker_back_record(r, k, "broker-start", det);
        }
        sd_buf_printf(&b, "%s%s", did++ ? "; " : "", det);
    }
    snprintf(detail, dlen, "%s", did ? b.data : rejoin ? "no broker was cut off" : resume ? "no broker was paused" : "every broker was running");
    sd_buf_free(&b);
    sd_run_data_step_done(r);
    return SD_OK;
}

static sd_err_t sd_broker_run(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_faults_t *F = sd_run_faults(r);
    if (!F->cluster)
        return sd_err_set(err, errlen, SD_ERR_USAGE,
                          "%s:%d: broker steps need --cluster DIR: a cluster whose brokers the harness may break (start one with "
                          "scenarios/env/kafka/kafka.sh cluster DIR)", sd_run_sc(r)->path, st->line);
    switch (st->proc.bop) {
    case SD_BROKER_KILL: case SD_BROKER_STOP: case SD_BROKER_PAUSE: case SD_BROKER_ISOLATE:
        return sd_broker_strike(r, st, detail, dlen, err, errlen);
    case SD_BROKER_START: case SD_BROKER_RESUME: case SD_BROKER_REJOIN:
        return sd_broker_back(r, st, detail, dlen, err, errlen);
    case SD_BROKER_RESTART: {
        sd_step_t stop = *st, start = *st;
        stop.proc.bop = SD_BROKER_STOP;
        stop.proc.delay_ms = 0;
        char d1[1024], d2[512];
        sd_err_t e = sd_broker_strike(r, &stop, d1, sizeof(d1), err, errlen);
        if (e) return e;
        /* the broker it stopped (leader-of= may have named it) */
        int id = -1;
        for (int i = 0; i < F->cluster->n; i++)
            if (F->cluster->b[i].down && !F->cluster->b[i].starting) id = F->cluster->b[i].id;
        if (id < 0) { snprintf(detail, dlen, "%s", d1); return SD_OK; }
        start.proc.bop = SD_BROKER_START;
        start.proc.broker_id = id;
        start.proc.leader_of = -1;
        if ((e = sd_broker_back(r, &start, d2, sizeof(d2), err, errlen))) return e;
        snprintf(detail, dlen, "%.700s; %s", d1, d2);
        return SD_OK;
    }
    }
    return sd_err_set(err, errlen, SD_ERR_INTERNAL, "broker: op %d", st->proc.bop);
}

/* heal: every paused broker resumed, every broker the run took down started
 * again (the cluster outlives the run whole). */
static void sd_broker_heal(sd_run_t *r, sd_buf_t *done) {
    sd_cluster_t *c = sd_run_faults(r)->cluster;
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        sd_cluster_broker_t *k = &c->b[i];
        char det[200], why[256] = "";
        if (k->isolated) {
            char err[512];
            snprintf(det, sizeof(det), "broker %d rejoined the others", k->id);
            if (sd_broker_rejoin(r, k, det, err, sizeof(err))) {
                sd_ledger_warning(sd_run_ledger(r), "broker-not-rejoined", err, NULL, 0);
                snprintf(det, sizeof(det), "broker %d could not rejoin the others", k->id);
            }
            sd_buf_printf(done, "%s%s", done->len ? "; " : "", det);
        }
        if (k->paused) {
            snprintf(det, sizeof(det), "resumed broker %d", k->id);
            sd_broker_resume(r, k, det);
            sd_buf_printf(done, "%s%s", done->len ? "; " : "", det);
        }
        if (k->down || k->starting) {
            int was_starting = k->starting > 0;
            sd_err_t e = sd_broker_start_wait(r, k, sd_util_scaled_ms(120000), why, sizeof(why));
            if (e) {
                snprintf(det, sizeof(det), "broker %d could not be started again: %s", k->id, why);
                sd_ledger_warning(sd_run_ledger(r), "broker-not-restarted", det, NULL, 0);
            } else {
                snprintf(det, sizeof(det), "started broker %d again", k->id);
                if (!was_starting) sd_broker_back_record(r, k, "broker-start", det);
            }
            sd_buf_printf(done, "%s%s", done->len ? "; " : "", det);
        }
    }
}

const sd_injector_t sd_injector_broker = {
    .name = "broker", .handles = sd_broker_handles, .run = sd_broker_run, .heal = sd_broker_heal
};
