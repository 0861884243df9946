/* runner.c - runs one scenario: folder, run.db, broker, producer, pipeline,
 * steps, reconciliation, reports (see run.h). The runner is one module
 * around one handle (sd_run_t) in files by concern, each calling only the
 * ones below it: this one (the order of a run, the step loop, healing, the
 * verdict), run_wait.c (readiness and the waiting steps), run_send.c
 * (staging and production), run_judge.c (reconciliation), run_loop.c (the
 * event loop) and run_base.c (the services all of them call).
 *
 * Order of a run:
 *   1. open the events (a missing log is a bad scenario: exit 2, nothing started)
 *   2. create DIR/<name>/ and run.db, record the plan
 *   3. start or reach the broker, create the run's topic
 *   4. open the sinks, prepare the supervisor
 *   5. run the steps in order; every wait serves sd_run_tick()
 *   6. make sure the pipeline was quiescent after the last data step
 *   7. stop the pipeline (whatever it writes on its way out is judged),
 *      kill what is left
 *   8. reconcile every sink against the ledger, store anomalies and checks,
 *      write the reports */
#include "run_int.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cluster.h"
#include "lang.h"
#include "observe.h"
#include "recon.h"

static const sd_injector_t *const sd_run_injectors[] = {&sd_injector_process, &sd_injector_data, &sd_injector_clock,
                                                        &sd_injector_storage, &sd_injector_network, &sd_injector_broker,
                                                        &sd_injector_command, NULL};

int sd_run_heal(sd_run_t *r, sd_buf_t *done) {
    size_t before = done->len;
    if (r->undo.n) {
        int n = r->undo.n;
        sd_run_undo_due(r, 1);
        sd_buf_printf(done, "%sended %d timed fault%s early", done->len ? "; " : "", n, n == 1 ? "" : "s");
    }
    for (int i = 0; sd_run_injectors[i]; i++)
        if (sd_run_injectors[i]->heal) sd_run_injectors[i]->heal(r, done);
    return done->len > before;
}

/* End every fault still on and, if there was one, record the heal as a fault
 * of the current step. 1 when something was healed (said in *done). */
static int sd_run_heal_recorded(sd_run_t *r, sd_buf_t *done) {
    if (!sd_run_heal(r, done)) return 0;
    sd_ledger_fault(r->ledger, r->step, "heal", done->data, 0, NULL, NULL, 0);
    return 1;
}

/* The transactional producers (an open transaction left at this point is
 * aborted by the broker when its producer goes). */
static void sd_run_close_txn(sd_run_t *r) {
    for (int i = 0; i < r->txn.nopen; i++) sd_producer_close(r->txn.open[i]);
    r->txn.nopen = 0;
    if (r->txn.producer) sd_producer_close(r->txn.producer);
    r->txn.producer = NULL;
}

/* What Kafka had acknowledged of the source topic, per partition ("P:O",
 * one past the newest offset), the plain and the transactional producer's
 * together: recorded with every fault (the recovery figures). */
static void sd_run_frontier(void *opaque, char *out, size_t outlen) {
    const sd_run_t *r = opaque;
    size_t len = 0;
    out[0] = 0;
    for (int p = 0; p < r->src.partitions && len + 32 < outlen; p++) {
        int64_t a = sd_producer_partition_end(r->src.producer, p), b = sd_producer_partition_end(r->txn.producer, p);
        int64_t end = a > b ? a : b;
        if (end > 0) len += (size_t)snprintf(out + len, outlen - len, "%s%d:%lld", len ? "," : "", p, (long long)end);
    }
}

static sd_err_t sd_run_step(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    for (int i = 0; sd_run_injectors[i]; i++)
        if (sd_run_injectors[i]->handles(st->kind)) return sd_run_injectors[i]->run(r, st, detail, dlen, err, errlen);
    switch (st->kind) {
    case SD_STEP_PRODUCE:
        return sd_run_produce(r, st, detail, dlen, err, errlen);
    case SD_STEP_AWAIT_SINK:
        return sd_run_await_sink(r, st, detail, dlen, err, errlen);
    case SD_STEP_AWAIT_QUIESCENT:
        return sd_run_await_quiescent(r, st->await.quiet_ms, st->timeout_ms, detail, dlen, err, errlen);
    case SD_STEP_AWAIT_BATCHES:
        return sd_run_await_batches(r, st, detail, dlen, err, errlen);
    case SD_STEP_AWAIT_EXIT:
        return sd_run_await_exit(r, st, detail, dlen, err, errlen);
    case SD_STEP_SLEEP:
        return sd_run_sleep(r, st, detail, dlen, err, errlen);
    case SD_STEP_NOTE:
        snprintf(detail, dlen, "%s", st->note.text);
        return SD_OK;
    case SD_STEP_OPERATOR:
        return sd_run_operator(r, st, detail, dlen, err, errlen);
    case SD_STEP_RESOLVE:
        return sd_run_resolve(r, sd_util_scaled_ms(st->timeout_ms), detail, dlen, err, errlen);
    case SD_STEP_EXPECT:
        snprintf(detail, dlen, "checked at reconciliation");
        return SD_OK;
    case SD_STEP_HEAL: {
        sd_buf_t done;
        sd_buf_init(&done);
        snprintf(detail, dlen, "%s", sd_run_heal_recorded(r, &done) ? done.data : "no fault was on");
        sd_buf_free(&done);
        r->quiet.last_data_step_mono = sd_util_mono_ms();
        return SD_OK;
    }
    default:
        return sd_err_set(err, errlen, SD_ERR_INTERNAL, "step kind %d has no handler", (int)st->kind);
    }
}

/* A folder a previous run wrote: its run.db is a streamdrill ledger that
 * says it was written in this very folder. */
static int sd_run_is_previous_run(const char *dir) {
    char *db = sd_util_fmt("%s/run.db", dir);
    sd_ledger_t *l = NULL;
    int yes = 0;
    if (sd_util_exists(db) && sd_ledger_open(db, 1, &l, NULL, 0) == SD_OK) {
        char *was = sd_ledger_meta_get(l, "run_dir");
        char *version = sd_ledger_meta_get(l, "harness_version");
        yes = was && version && !strcmp(was, dir);
        free(was);
        free(version);
        sd_ledger_close(l);
    }
    free(db);
    return yes;
}

/* The run folder: a previous run of the same scenario is replaced; an empty
 * folder is used; anything else is refused, never deleted. */
static sd_err_t sd_run_prepare_dir(const char *dir, char *err, size_t errlen) {
    return sd_util_replace_dir(dir, sd_run_is_previous_run(dir), "a streamdrill run wrote (no run.db of a run in this folder)", err,
                               errlen);
}

static void sd_run_close(sd_run_t *r) {
    sd_run_live_clear(r);
    /* whatever the pipeline or a sink command left behind, even outside its
     * group: both carry the run's token, which the supervisor's kill sweeps
     * for (the sinks were read before it), else it is swept here */
    if (r->sup) {
        sd_sup_kill_all(r->sup);
        sd_run_sup_events(r, NULL, 0);
        sd_sup_free(r->sup);
        r->sup = NULL;
    } else if (r->opts->token) sd_watchdog_sweep(r->opts->token);
    for (int i = 0; i < r->sink.n; i++) sd_sink_close(r->sink.v[i]);
    r->sink.n = 0;
    if (r->src.producer) sd_producer_close(r->src.producer);
    r->src.producer = NULL;
    if (r->side.producer) sd_producer_close(r->side.producer);
    r->side.producer = NULL;
    sd_run_close_txn(r);
    if (r->faults.proxy) sd_proxy_stop(r->faults.proxy);
    if (r->faults.registry_proxy) sd_proxy_stop(r->faults.registry_proxy);
    r->faults.proxy = r->faults.registry_proxy = NULL;
    free(r->faults.proxy_listen);
    free(r->faults.faketime_file);
    if (r->broker) sd_broker_close(r->broker);
    sd_cluster_free(r->faults.cluster);
    sd_kvlist_free(&r->topic_config);
    r->broker = NULL;
    if (r->ledger) sd_ledger_close(r->ledger);
    r->ledger = NULL;
    sd_events_close(r->src.events);
    r->src.events = NULL;
    sd_run_wire_close(r);
    sd_events_close(r->side.events);
    r->side.events = NULL;
    free(r->side.held);
    r->side.held = NULL;
    free(r->run_dir); free(r->tag); free(r->src.topic); sd_seqs_free(&r->sends.seqs); sd_stamps_free(&r->sends.sent); free(r->sends.wm_edges); free(r->sends.wm_edge_t); sd_progress_close(r); free(r->side.topic); free(r->staging.stage); free(r->pipe.trim_warned);
    for (int i = 0; i < SD_RUN_INFLIGHT; i++) { free(r->staging.sub[i].stage); free(r->staging.sub[i].ns); sd_buf_free(&r->staging.sub[i].arena); }
    sd_buf_free(&r->staging.arena);
    sd_buf_free(&r->staging.payload);
    sd_buf_free(&r->staging.key);
    sd_kvlist_free(&r->vars);
    free(r->verdict.missed_step);
    free(r->verdict.ends);
    if (r->lock_fd >= 0) close(r->lock_fd);
    r->lock_fd = -1;
}

static char *sd_run_expand(sd_run_t *r, const char *text, char *err, size_t errlen) {
    return sd_scenario_expand(text, &r->vars, err, errlen);
}

static void sd_run_finish(sd_run_t *r, sd_run_result_t *res, sd_err_t status, const char *verdict, const char *msg) {
    res->status = status;
    snprintf(res->verdict, sizeof(res->verdict), "%s", verdict);
    /* the message may quote a pipeline's stderr or a sink's error: shown on
     * terminals and in every report, with no control character of theirs */
    char *message = sd_util_safe_text(msg, 1);
    snprintf(res->message, sizeof(res->message), "%s", message);
    /* a folder this run did not write (one it refused to replace) is no report of its */
    if (r->run_dir && r->ledger) snprintf(res->run_dir, sizeof(res->run_dir), "%s", r->run_dir);
    if (r->ledger) {
        sd_ledger_meta_set(r->ledger, "verdict", verdict, NULL, 0);
        sd_ledger_meta_set(r->ledger, "reason", status == SD_OK ? "" : sd_strerror(status), NULL, 0);
        sd_ledger_meta_set(r->ledger, "message", message, NULL, 0);
        sd_ledger_meta_set_int(r->ledger, "ended_ms", sd_util_wall_ms(), NULL, 0);
        /* what the harness itself cost: CPU of all its threads, peak memory */
        struct rusage ru;
        if (getrusage(RUSAGE_SELF, &ru) == 0) {
            int64_t cpu = (int64_t)ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000 + (int64_t)ru.ru_stime.tv_sec * 1000 +
                          ru.ru_stime.tv_usec / 1000;
            sd_ledger_meta_set_int(r->ledger, "harness_cpu_ms", cpu, NULL, 0);
            sd_ledger_meta_set_int(r->ledger, "harness_peak_rss_kb", ru.ru_maxrss, NULL, 0);
        }
        sd_ledger_meta_set_int(r->ledger, "harness_idle_ms", r->sampling.idle_ms, NULL, 0);
        sd_ledger_meta_set(r->ledger, "status", "finished", NULL, 0);
        sd_ledger_commit(r->ledger, NULL, 0);
    }
    free(message);
}

/* Who the run is: tag, seed, topic, folder, and the run-time placeholders. */
static void sd_run_identity(sd_run_t *r) {
    const sd_scenario_t *sc = r->sc;
    const sd_run_opts_t *opts = r->opts;
    if (opts->tag) r->tag = sd_util_strdup(opts->tag);
    else {
        char hex[17];
        sd_util_random_hex(hex, 4);
        r->tag = sd_util_strdup(hex);
    }
    r->seed = opts->has_seed ? opts->seed : sc->seed;
    r->src.topic = sc->exact_topic ? sd_util_strdup(sc->topic) : sd_util_fmt("%s-%s", sc->topic, r->tag);
    if (sc->has_deliveries) {
        if (sc->deliveries_topic) r->side.topic = sc->exact_topic ? sd_util_strdup(sc->deliveries_topic)
                                                                  : sd_util_fmt("%s-%s", sc->deliveries_topic, r->tag);
        else r->side.topic = sd_util_fmt("%s-deliveries%s%s", sc->topic, sc->exact_topic ? "" : "-", sc->exact_topic ? "" : r->tag);
    }
    char *outabs = sd_util_abspath(opts->out_dir);
    r->run_dir = sd_util_fmt("%s/%s", outabs, sc->name);
    free(outabs);
    char seedbuf[32];
    snprintf(seedbuf, sizeof(seedbuf), "%llu", (unsigned long long)r->seed);
    for (int i = 0; i < sc->vars.n; i++) sd_kvlist_add(&r->vars, sc->vars.v[i].key, sc->vars.v[i].value);
    sd_kvlist_add(&r->vars, "run", r->run_dir);
    sd_kvlist_add(&r->vars, "here", sc->dir);
    char *pipes = sd_util_fmt("%s/pipelines", sc->dir);
    sd_kvlist_add(&r->vars, "pipelines", pipes);
    free(pipes);
    char *libexec = sd_util_libexec_dir();
    sd_kvlist_add(&r->vars, "libexec", libexec);
    free(libexec);
    char *chk = sd_util_fmt("%s/checkpoint", r->run_dir);
    sd_kvlist_add(&r->vars, "checkpoint", chk);
    free(chk);
    sd_kvlist_add(&r->vars, "seed", seedbuf);
    /* filled by a deployed pipeline's follower, from `deploy start` */
    sd_kvlist_add(&r->vars, "deployment", "{deployment}");
    sd_kvlist_add(&r->vars, "instance", "1");
    sd_kvlist_add(&r->vars, "tag", r->tag);
    char *group = sd_util_fmt("streamdrill-%s-%s", sc->name, r->tag);
    sd_kvlist_add(&r->vars, "group", group);
    free(group);
    sd_kvlist_add(&r->vars, "name", sc->name);
    sd_kvlist_add(&r->vars, "topic", r->src.topic);
    sd_kvlist_add(&r->vars, "deliveries", r->side.topic ? r->side.topic : "");
    /* the client properties file (--kafka-config): its path, never its values */
    sd_kvlist_add(&r->vars, "kafka-config", r->opts->kafka_config ? r->opts->kafka_config : "");

}

/* A log's path, expanded; a relative one is looked up in the current
 * folder, then next to the scenario. NULL (err set) on a bad placeholder. */
static char *sd_run_log_path(sd_run_t *r, const char *text, char *err, size_t errlen) {
    char *p = sd_run_expand(r, text, err, errlen);
    if (p && p[0] != '/' && !sd_util_exists(p)) {
        char *rel = sd_util_fmt("%s/%s", r->sc->dir, p);
        if (sd_util_exists(rel)) { free(p); p = rel; }
        else free(rel);
    }
    return p;
}

/* The registry line's auth=, ca=, cert= and key=, their placeholders
 * expanded (the files looked up beside the drill too) into r->src. */
static sd_err_t sd_run_registry_opts(sd_run_t *r, char *err, size_t errlen) {
    const sd_scenario_t *sc = r->sc;
    if (sc->registry_auth && !(r->src.reg_auth = sd_run_expand(r, sc->registry_auth, err, errlen))) return SD_ERR_SCENARIO;
    if (sc->registry_ca && !(r->src.reg_ca = sd_run_log_path(r, sc->registry_ca, err, errlen))) return SD_ERR_SCENARIO;
    if (sc->registry_cert && !(r->src.reg_cert = sd_run_log_path(r, sc->registry_cert, err, errlen))) return SD_ERR_SCENARIO;
    if (sc->registry_key && !(r->src.reg_key = sd_run_log_path(r, sc->registry_key, err, errlen))) return SD_ERR_SCENARIO;
    return SD_OK;
}

/* 1. The events: a missing or broken log is a bad scenario, found before
 * anything is written or started. */
static sd_err_t sd_run_open_events(sd_run_t *r, char *err, size_t errlen) {
    const sd_scenario_t *sc = r->sc;
    sd_events_conf_t ec = {.kind = sc->events_kind, .seed = r->seed, .tag = r->tag,
                           .start_ms = sc->start_now ? r->t0_wall / 1000 * 1000 : sc->start_ms,
                           .step_ms = sc->step_ms, .parcels = sc->parcels, .locations = sc->locations,
                           .id_field = sc->events_kind == SD_EVENTS_LOG ? sc->log_id_field : sc->id_field,
                           .time_field = sc->time_field, .delivery_share = sc->has_deliveries ? sc->delivery_share : 0,
                           .delivery_min_ms = sc->delivery_min_ms, .delivery_max_ms = sc->delivery_max_ms,
                           .edge_share = sc->edge_share, .delivery_orphans = sc->delivery_orphans};
    /* the edges the model declares (see events.h) */
    if (sc->model.kind == SD_MODEL_WINDOWS) ec.edge_slide_ms = sc->model.slide_ms ? sc->model.slide_ms : sc->model.size_ms;
    if (sc->model.kind == SD_MODEL_JOIN) ec.edge_join = 1, ec.edge_lower_ms = 0, ec.edge_upper_ms = sc->model.within_ms;
    if (sc->model.kind == SD_MODEL_LATEST && !sc->model.by_arrival) ec.edge_ties = 1;
    if (sc->has_deliveries && sc->events_kind == SD_EVENTS_LOG && !sc->deliveries_log)
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: deliveries: expected log=PATH (a file of deliveries) with events "
                          "log= (the generator's deliveries follow its own scans), found none", sc->path, sc->deliveries_line);
    if (sc->has_deliveries && !sc->has_source)
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: deliveries: expected a `source` line (the scans' topic), found none",
                          sc->path, sc->deliveries_line);
    char *logp = NULL;
    if (sc->log_path && !(logp = sd_run_log_path(r, sc->log_path, err, errlen))) return SD_ERR_SCENARIO;
    ec.log_path = logp;
    if (sc->deliveries_log) ec.delivery_share = 0; /* the log's deliveries instead */
    sd_err_t e = sd_events_open(&ec, &r->src.events, err, errlen);
    free(logp);
    if (!e && sc->registry_url) e = sd_run_registry_opts(r, err, errlen);
    if (!e && sc->events_format) {
        char *url = sc->registry_url ? sd_run_expand(r, sc->registry_url, err, errlen) : NULL;
        char *schema = sc->schema_path ? sd_run_log_path(r, sc->schema_path, err, errlen) : NULL;
        if ((sc->registry_url && !url) || (sc->schema_path && !schema)) e = SD_ERR_SCENARIO;
        else e = sd_run_wire_check(r, url, schema, err, errlen);
        free(url), free(schema);
    }
    if (e || !sc->deliveries_log) return e;
    /* deliveries from a user's log: events of their own, ids "<tag>-d<n>" */
    if (!(logp = sd_run_log_path(r, sc->deliveries_log, err, errlen))) return SD_ERR_SCENARIO;
    sd_events_conf_t dc = {.kind = SD_EVENTS_LOG, .seed = r->seed, .tag = r->tag, .id_infix = "d", .log_path = logp,
                           .id_field = sc->deliveries_id ? sc->deliveries_id : "delivery_id",
                           .time_field = sc->deliveries_time ? sc->deliveries_time : "delivered_at"};
    e = sd_events_open(&dc, &r->side.events, err, errlen);
    free(logp);
    return e;
}

/* What the events log's time strings left open, as warnings: a time with
 * no offset from UTC is taken as UTC (a different instant in every other
 * zone), and one that is no time at all (February 31) leaves its event
 * without one. */
static void sd_run_note_log_times(sd_run_t *r) {
    if (r->sc->events_kind != SD_EVENTS_LOG) return;
    sd_events_times_t n = sd_events_time_notes(r->src.events);
    char w[512];
    if (n.naive) {
        snprintf(w, sizeof(w), "%lld event time%s in %s had no offset from UTC (the first at line %lld) and %s taken as UTC",
                 (long long)n.naive, n.naive == 1 ? "" : "s", r->sc->log_path, (long long)n.naive_line, n.naive == 1 ? "was" : "were");
        sd_ledger_warning(r->ledger, "time-without-offset", w, NULL, 0);
        sd_run_say(r, "warning: %s", w);
    }
    if (n.unread) {
        snprintf(w, sizeof(w), "%lld event time%s in %s could not be read as a time (the first at line %lld: a date its month "
                 "does not have, or no ISO-8601 time): %s no event time", (long long)n.unread, n.unread == 1 ? "" : "s",
                 r->sc->log_path, (long long)n.unread_line, n.unread == 1 ? "its event has" : "those events have");
        sd_ledger_warning(r->ledger, "time-unread", w, NULL, 0);
        sd_run_say(r, "warning: %s", w);
    }
}

/* 2. The run folder and run.db, with the plan: meta, variables, the
 * command that reproduces the run, every step as planned. */
static sd_err_t sd_run_open_ledger(sd_run_t *r, char *err, size_t errlen) {
    const sd_scenario_t *sc = r->sc;
    const sd_run_opts_t *opts = r->opts;
    char seedbuf[32];
    snprintf(seedbuf, sizeof(seedbuf), "%llu", (unsigned long long)r->seed);
    char *dbpath = sd_util_fmt("%s/run.db", r->run_dir);
    sd_err_t e;
    if ((e = sd_run_prepare_dir(r->run_dir, err, errlen)) || (e = sd_ledger_create(dbpath, &r->ledger, err, errlen))) {
        free(dbpath);
        return e;
    }
    sd_ledger_set_frontier(r->ledger, sd_run_frontier, r);
    /* the run holds run.db locked (flock: SQLite's own locks are fcntl's)
     * until it ends, so `report` can tell a running run from a dead one */
    r->lock_fd = open(dbpath, O_RDONLY | O_CLOEXEC);
    if (r->lock_fd >= 0) flock(r->lock_fd, LOCK_EX | LOCK_NB);
    free(dbpath);
    {
        char iso[32];
        struct { const char *k, *v; } meta[] = {
            {"scenario", sc->name}, {"file", sc->path}, {"description", sc->description}, {"seed", seedbuf},
            {"tag", r->tag}, {"topic", r->src.topic}, {"profile", sd_profile_name(sc->profile)},
            {"harness_version", opts->version}, {"status", "running"},
            {"started_at", sd_util_iso8601(r->t0_wall, iso, sizeof(iso))}, {"run_dir", r->run_dir},
            {"events", sc->events_kind == SD_EVENTS_LOG ? "log" : "parcel-scans"},
            {"late", sd_disp_name(sc->late_disp)}, {"malformed", sd_disp_name(sc->malformed_disp)},
            /* the progress source: what figures resting on it are (sd_figure_evidence) */
            {"progress", sd_progress_get(sc->progress)->name}};
        for (size_t i = 0; i < sizeof(meta) / sizeof(meta[0]); i++) sd_ledger_meta_set(r->ledger, meta[i].k, meta[i].v, NULL, 0);
        sd_ledger_meta_set_int(r->ledger, "started_ms", r->t0_wall, NULL, 0);
        /* where the pipeline keeps its progress ({checkpoint}, STREAMDRILL_CHECKPOINT; a Spark
         * source records its own as spark_checkpoint): the runbook's checkpoint location */
        if (sd_kvlist_get(&r->vars, "checkpoint")) sd_ledger_meta_set(r->ledger, "checkpoint", sd_kvlist_get(&r->vars, "checkpoint"), NULL, 0);
        sd_ledger_meta_set_int(r->ledger, "watermark_ms", sc->watermark_ms, NULL, 0);
        sd_buf_t vb;
        sd_buf_init(&vb);
        for (int i = 0; i < sc->vars.n; i++) sd_buf_printf(&vb, "%s%s=%s", i ? " " : "", sc->vars.v[i].key, sc->vars.v[i].value);
        sd_ledger_meta_set(r->ledger, "vars", vb.data ? vb.data : "", NULL, 0);
        /* the command that runs this drill again, same events, same topic */
        sd_buf_reset(&vb);
        sd_buf_puts(&vb, "streamdrill run ");
        sd_buf_put_shell_word(&vb, sc->path);
        sd_buf_printf(&vb, " --seed %s --tag ", seedbuf);
        sd_buf_put_shell_word(&vb, r->tag);
        if (opts->brokers) {
            sd_buf_puts(&vb, " --brokers ");
            sd_buf_put_shell_word(&vb, opts->brokers);
        }
        if (opts->kafka_config) {
            sd_buf_puts(&vb, " --kafka-config ");
            sd_buf_put_shell_word(&vb, opts->kafka_config);
        }
        /* -X alone (the file's properties follow from --kafka-config); a secret as *** */
        for (int i = opts->kafka_config_n; opts->xprops && i < opts->xprops->n; i++) {
            const char *k = opts->xprops->v[i].key;
            char *kv = sd_util_fmt("%s=%s", k, sd_broker_prop_secret(k) ? "***" : opts->xprops->v[i].value);
            sd_buf_puts(&vb, " -X ");
            sd_buf_put_shell_word(&vb, kv);
            free(kv);
        }
        for (int i = 0; i < sc->vars.n; i++) {
            char *kv = sd_util_fmt("%s=%s", sc->vars.v[i].key, sc->vars.v[i].value);
            sd_buf_puts(&vb, " --set ");
            sd_buf_put_shell_word(&vb, kv);
            free(kv);
        }
        sd_ledger_meta_set(r->ledger, "reproduce", vb.data, NULL, 0);
        sd_buf_free(&vb);
        for (int i = 0; i < sc->nsteps; i++) {
            sd_ledger_step_begin(r->ledger, i, sc->steps[i].line, sc->steps[i].text, NULL, 0);
            sd_ledger_step_end(r->ledger, i, "planned", NULL, NULL, 0);
        }
        sd_ledger_commit(r->ledger, NULL, 0);
    }

    sd_run_say(r, "run folder %s (tag %s, seed %s)", r->run_dir, r->tag, seedbuf);
    return SD_OK;
}

/* {registry-url}: the registry line's URL, or with `registry ... proxy`
 * the same path through a TCP proxy of the harness's on a free port of
 * 127.0.0.1, which `network ... on=registry` steps break. */
static sd_err_t sd_run_registry_proxy(sd_run_t *r, char *err, size_t errlen) {
    char *url = sd_run_expand(r, r->sc->registry_url, err, errlen);
    if (!url) return SD_ERR_SCENARIO;
    sd_err_t e = SD_OK;
    if (r->sc->registry_proxy) {
        /* http://HOST:PORT[/PATH] (checked with the drill) */
        const char *hp = url + 7, *slash = strchr(hp, '/');
        char *upstream = slash ? sd_util_strndup(hp, (size_t)(slash - hp)) : sd_util_strdup(hp);
        if (!strchr(upstream, ':')) {
            char *with = sd_util_fmt("%s:80", upstream);
            free(upstream);
            upstream = with;
        }
        e = sd_proxy_start("127.0.0.1:0", upstream, &r->faults.registry_proxy, err, errlen);
        if (!e) {
            char *via = sd_util_fmt("http://127.0.0.1:%d%s", sd_proxy_port(r->faults.registry_proxy), slash ? slash : "");
            sd_run_say(r, "proxy 127.0.0.1:%d -> %s for the pipeline's registry connections", sd_proxy_port(r->faults.registry_proxy),
                       upstream);
            sd_ledger_meta_set(r->ledger, "registry_proxy", via, NULL, 0);
            free(url);
            url = via;
        }
        free(upstream);
    }
    if (!e) sd_kvlist_add(&r->vars, "registry-url", url);
    free(url);
    return e;
}

/* 3. The broker (embedded or external), the proxy, the run's topic and
 * the producer. */
static sd_err_t sd_run_open_broker(sd_run_t *r, char *err, size_t errlen) {
    const sd_scenario_t *sc = r->sc;
    const sd_run_opts_t *opts = r->opts;
    sd_err_t e;
    const char *brokers = opts->brokers;
    if (opts->cluster) {
        if ((e = sd_cluster_load(opts->cluster, &r->faults.cluster, err, errlen))) return e;
        r->faults.cluster->log_dir = sd_util_fmt("%s/logs", r->run_dir);
        brokers = r->faults.cluster->bootstrap;
        sd_ledger_meta_set(r->ledger, "cluster", r->faults.cluster->path, NULL, 0);
    }
    if (brokers) e = sd_broker_external(brokers, opts->xprops, 10000, &r->broker, err, errlen);
    else e = sd_broker_embedded(opts->nbrokers > 0 ? opts->nbrokers : 1, &r->broker, err, errlen);
    if (e) return e;
    /* the embedded cluster's brokers are librdkafka's mock brokers 1..N,
     * which `broker` steps set down and up */
    if (!brokers) r->faults.cluster = sd_cluster_embedded(opts->nbrokers > 0 ? opts->nbrokers : 1, sd_broker_bootstrap(r->broker));
    /* the topics' own settings: a drill that shows what acks=1 and an
     * unclean election cost sets them */
    if (sc->min_insync) {
        char v[16];
        snprintf(v, sizeof(v), "%d", sc->min_insync);
        sd_kvlist_add(&r->topic_config, "min.insync.replicas", v);
    }
    if (sc->unclean_election) sd_kvlist_add(&r->topic_config, "unclean.leader.election.enable", "true");
    sd_broker_set_topic_config(r->broker, &r->topic_config);
    sd_kvlist_add(&r->vars, "brokers", sd_broker_bootstrap(r->broker));
    if (opts->proxy) {
        const char *eq = strchr(opts->proxy, '=');
        if (!eq) { e = sd_err_set(err, errlen, SD_ERR_USAGE, "--proxy %s: expected LISTEN=UPSTREAM", opts->proxy); return e; }
        r->faults.proxy_listen = sd_util_strndup(opts->proxy, (size_t)(eq - opts->proxy));
        if ((e = sd_proxy_start(r->faults.proxy_listen, eq + 1, &r->faults.proxy, err, errlen))) return e;
        sd_kvlist_add(&r->vars, "proxy", r->faults.proxy_listen);
        sd_ledger_meta_set(r->ledger, "proxy", opts->proxy, NULL, 0);
        sd_run_say(r, "proxy %s -> %s for the pipeline's broker connections", r->faults.proxy_listen, eq + 1);
    } else {
        sd_kvlist_add(&r->vars, "proxy", sd_broker_bootstrap(r->broker));
    }
    if (sc->registry_url && (e = sd_run_registry_proxy(r, err, errlen))) return e;
    sd_ledger_meta_set(r->ledger, "brokers", sd_broker_bootstrap(r->broker), NULL, 0);
    sd_ledger_meta_set(r->ledger, "broker_kind", sd_broker_is_embedded(r->broker) ? "embedded" : "external", NULL, 0);
    sd_run_say(r, "%s broker at %s", sd_broker_is_embedded(r->broker) ? "embedded" : "external", sd_broker_bootstrap(r->broker));
    if (sc->has_source) {
        int actual = sc->partitions;
        if ((e = sd_broker_create_topic(r->broker, r->src.topic, sc->partitions, sc->replication, &actual, err, errlen))) return e;
        r->src.partitions = actual;
        if (actual != sc->partitions) {
            char w[256];
            snprintf(w, sizeof(w), "the broker refused to create topic %s with %d partitions and created it on first use with %d",
                     r->src.topic, sc->partitions, actual);
            sd_ledger_warning(r->ledger, "partitions", w, NULL, 0);
            sd_run_say(r, "warning: %s", w);
        }
        if ((e = sd_producer_new(sd_broker_bootstrap(r->broker), r->src.topic, &sc->producer_props, opts->xprops, r->ledger,
                                 &r->src.producer, err, errlen)))
            return e;
        sd_ledger_meta_set(r->ledger, "producer", sd_producer_settings(r->src.producer), NULL, 0);
        if (r->topic_config.n) {
            sd_buf_t tc;
            sd_buf_init(&tc);
            for (int i = 0; i < r->topic_config.n; i++) sd_buf_printf(&tc, "%s%s=%s", i ? " " : "", r->topic_config.v[i].key, r->topic_config.v[i].value);
            sd_ledger_meta_set(r->ledger, "topic_config", tc.data, NULL, 0);
            sd_buf_free(&tc);
        }
    }
    if (r->side.topic) {
        int actual = sc->deliveries_partitions;
        if ((e = sd_broker_create_topic(r->broker, r->side.topic, sc->deliveries_partitions, sc->replication, &actual, err, errlen)))
            return e;
        r->side.partitions = actual;
        sd_ledger_meta_set(r->ledger, "deliveries_topic", r->side.topic, NULL, 0);
        if ((e = sd_producer_new(sd_broker_bootstrap(r->broker), r->side.topic, &sc->producer_props, opts->xprops, r->ledger,
                                 &r->side.producer, err, errlen)))
            return e;
    }

    return SD_OK;
}

/* 4. The sink readers: the first sink is the target, the first quarantine
 * the quarantine. */
static sd_err_t sd_run_open_sinks(sd_run_t *r, char *err, size_t errlen) {
    const sd_scenario_t *sc = r->sc;
    const sd_run_opts_t *opts = r->opts;
    {
        sd_sink_ctx_t ctx = {.brokers = sd_broker_bootstrap(r->broker), .props = opts->xprops, .id_field = sc->id_field,
                             .run_dir = r->run_dir};
        for (int i = 0; i < sc->nsinks; i++) {
            sd_err_t e;
            ctx.name = sc->sinks[i].name;
            if ((e = sd_sink_open(&sc->sinks[i], &r->vars, &ctx, &r->sink.v[r->sink.n], err, errlen))) return e;
            sd_sink_t *s = r->sink.v[r->sink.n++];
            if (s->is_quarantine && !r->sink.quarantine) r->sink.quarantine = s;
            if (!s->is_quarantine && !r->sink.target) r->sink.target = s;
        }
    }
    return SD_OK;
}

/* 4. The supervisor of the pipeline: its command line, its environment
 * (STREAMDRILL_*, libfaketime with `clock faketime`, the scenario's env). */
static sd_err_t sd_run_open_pipeline(sd_run_t *r, char *err, size_t errlen) {
    const sd_scenario_t *sc = r->sc;
    const sd_run_opts_t *opts = r->opts;
    sd_err_t e = SD_OK;
    int deployed = sc->deploy[SD_DEPLOY_START].argv != NULL;
    if (!sc->argv && !deployed) return SD_OK;
    char **argv = sd_util_xcalloc((size_t)sc->argc + 1, sizeof(char *));
    sd_kvlist_t env = {0};
    sd_kvlist_add(&env, "STREAMDRILL_BROKERS", sd_broker_bootstrap(r->broker));
    /* where the client properties are (refpipe and reftxn read them), never their values */
    if (opts->kafka_config) sd_kvlist_add(&env, "STREAMDRILL_KAFKA_CONFIG", opts->kafka_config);
    sd_kvlist_add(&env, "STREAMDRILL_TOPIC", r->src.topic);
    if (r->side.topic) sd_kvlist_add(&env, "STREAMDRILL_DELIVERIES_TOPIC", r->side.topic);
    if (sd_kvlist_get(&r->vars, "registry-url")) sd_kvlist_add(&env, "STREAMDRILL_REGISTRY", sd_kvlist_get(&r->vars, "registry-url"));
    /* where the registry's credentials are, never the credentials: the pipeline reads them itself */
    const char *const reg_env[][2] = {{"STREAMDRILL_REGISTRY_AUTH", r->src.reg_auth}, {"STREAMDRILL_REGISTRY_CA", r->src.reg_ca},
                                      {"STREAMDRILL_REGISTRY_CERT", r->src.reg_cert}, {"STREAMDRILL_REGISTRY_KEY", r->src.reg_key}};
    for (size_t i = 0; i < sizeof(reg_env) / sizeof(reg_env[0]); i++)
        if (reg_env[i][1]) sd_kvlist_add(&env, reg_env[i][0], reg_env[i][1]);
    sd_kvlist_add(&env, "STREAMDRILL_RUN_DIR", r->run_dir);
    sd_kvlist_add(&env, "STREAMDRILL_CHECKPOINT", sd_kvlist_get(&r->vars, "checkpoint"));
    sd_kvlist_add(&env, "STREAMDRILL_GROUP", sd_kvlist_get(&r->vars, "group"));
    sd_kvlist_add(&env, "STREAMDRILL_TAG", r->tag);
    if (sc->faketime) {
        static const char *const libs[] = {"/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                                           "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
                                           "/usr/lib/faketime/libfaketimeMT.so.1", "/usr/local/lib/faketime/libfaketimeMT.so.1", NULL};
        const char *lib = sc->faketime_lib;
        for (int i = 0; !lib && libs[i]; i++)
            if (sd_util_exists(libs[i])) lib = libs[i];
        if (!lib || !sd_util_exists(lib)) {
            e = sd_err_set(err, errlen, SD_ERR_USAGE, "clock faketime: libfaketime not found%s%s (Debian: apt-get install libfaketime)",
                           lib ? " at " : "", lib ? lib : "");
        } else {
            r->faults.faketime_file = sd_util_fmt("%s/faketime.rc", r->run_dir);
            r->faults.clock_rate = 1.0;
            e = sd_util_write_file(r->faults.faketime_file, "+0s\n", 4, err, errlen);
            /* preload=children: the pipeline puts it into LD_PRELOAD for
             * the processes it starts (a Python driver's JVM), itself
             * staying on real time */
            sd_kvlist_add(&env, sc->faketime_children ? "STREAMDRILL_FAKETIME_LIB" : "LD_PRELOAD", lib);
            sd_kvlist_add(&env, "FAKETIME_TIMESTAMP_FILE", r->faults.faketime_file);
            sd_kvlist_add(&env, "FAKETIME_CACHE_DURATION", "1");
            sd_kvlist_add(&env, "DONT_FAKE_MONOTONIC", "1");
            sd_kvlist_add(&env, "FAKETIME_DONT_FAKE_MONOTONIC", "1");
        }
    }
    for (int i = 0; !e && i < sc->env.n; i++) {
        char *v = sd_run_expand(r, sc->env.v[i].value, err, errlen);
        if (!v) e = SD_ERR_SCENARIO;
        else { sd_kvlist_add(&env, sc->env.v[i].key, v); free(v); }
    }
    for (int i = 0; !e && i < sc->argc; i++) {
        argv[i] = sd_run_expand(r, sc->argv[i], err, errlen);
        if (!argv[i]) e = SD_ERR_SCENARIO;
    }
    char **follower = !e && deployed ? sd_run_deploy_argv(r, NULL, err, errlen) : NULL;
    if (deployed && !follower) e = SD_ERR_SCENARIO;
    if (!e) {
        sd_sup_conf_t conf = {.argv = deployed ? follower : argv, .env = &env, .run_dir = r->run_dir, .token = opts->token,
                              .watchdog = opts->watchdog, .log_max = sc->log_max, .deployed = deployed,
                              .streams = sc->engine_streams};
        e = sd_sup_new(&conf, &r->sup, err, errlen);
    }
    for (int i = 0; i < sc->argc; i++) free(argv[i]);
    free(argv);
    sd_run_free_argv(follower);
    sd_kvlist_free(&env);
    return e;
    
}

/* 5. The steps in order. A timeout is a warning and the run goes on;
 * any other failure stops the run (the later steps are marked skipped). */
static sd_err_t sd_run_steps(sd_run_t *r, char *detail, size_t dlen, char *err, size_t errlen) {
    const sd_scenario_t *sc = r->sc;
    const sd_run_opts_t *opts = r->opts;
    sd_err_t e = SD_OK;
    for (int i = 0; i < sc->nsteps; i++) {
        const sd_step_t *st = &sc->steps[i];
        r->step = i;
        sd_ledger_step_begin(r->ledger, i, st->line, st->text, NULL, 0);
        sd_run_say(r, "step %d/%d (line %d): %s", i + 1, sc->nsteps, st->line, st->text);
        detail[0] = 0;
        err[0] = 0;
        int64_t t0 = sd_util_mono_ms();
        e = sd_run_step(r, st, detail, dlen, err, errlen);
        /* a fault that did not do what the step says is not "ok", nor a
         * "timeout" like a wait's: it missed */
        sd_step_miss_t missed = r->verdict.missed_step ? (sd_step_miss_t)r->verdict.missed_step[i] : SD_STEP_DID_LAND;
        int fault = sd_lang_step_entry(st->kind)->fault;
        const char *status = e == SD_OK ? (missed == SD_STEP_RESTART_FAILED ? "restart failed" : missed ? (st->optional ? "skipped" : "missed") : "ok")
                           : e == SD_ERR_TIMEOUT ? (fault ? (st->optional ? "skipped" : "missed") : "timeout")
                           : e == SD_ERR_NOT_LANDED ? "missed" : "failed";
        sd_ledger_step_end(r->ledger, i, status, e ? err : detail, NULL, 0);
        sd_ledger_commit(r->ledger, NULL, 0);
        if (e == SD_ERR_TIMEOUT) {
            sd_ledger_warning(r->ledger, "await-timeout", err, NULL, 0);
            sd_run_say(r, "  timeout (%.2fs): %s", (double)(sd_util_mono_ms() - t0) / 1000.0, err);
            /* a fault that timed out did not happen; a wait that timed out
             * puts the next fault somewhere the drill did not mean */
            if (fault) sd_run_fault_missed(r, st, err);
            else if (!r->verdict.await_timeout_line) r->verdict.await_timeout_line = st->line;
            e = SD_OK;
            continue;
        }
        if (!e && fault && r->verdict.await_timeout_line) {
            char why[160];
            snprintf(why, sizeof(why), "it ran after the wait at line %d timed out, so not where the drill meant it", r->verdict.await_timeout_line);
            sd_run_fault_missed(r, st, why);
            r->verdict.await_timeout_line = 0;
        }
        if (e) {
            sd_run_say(r, "  %s: %s", e == SD_ERR_NOT_LANDED ? "missed" : "failed", err);
            sd_run_set_fatal(r, e, err);
            for (int k = i + 1; k < sc->nsteps; k++) sd_ledger_step_end(r->ledger, k, "skipped", "an earlier step failed", NULL, 0);
            return e;
        }
        if (detail[0] && opts->verbose) sd_run_say(r, "  %s", detail);
        else if (detail[0]) sd_run_say(r, "  %s", detail);
    }

    return SD_OK;
}

/* 6. Before the judgement: every fault still on ends, and the pipeline
 * must have been quiescent after the last data step. */
static sd_err_t sd_run_settle(sd_run_t *r, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_err_t e = SD_OK;
    /* every fault still on ends before the judgement */
    {
        sd_buf_t done;
        sd_buf_init(&done);
        if (sd_run_heal_recorded(r, &done)) {
            sd_run_say(r, "healed before reconciliation: %s", done.data);
            r->quiet.last_data_step_mono = sd_util_mono_ms();
        }
        sd_buf_free(&done);
    }

    /* transactions a `produce ... open=K` left open are committed: their
     * events are bound for the target */
    if (r->txn.nopen) {
        char d[256];
        if ((e = sd_run_resolve(r, sd_util_scaled_ms(30000), d, sizeof(d), err, errlen))) { sd_run_set_fatal(r, e, err); return e; }
        sd_run_say(r, "before reconciliation: %s left open by the steps", d);
        sd_ledger_warning(r->ledger, "open-transactions", d, NULL, 0);
    }

    /* 6. quiescence after the last data step */
    if (r->sink.target && (r->quiet.last_quiescent_mono == 0 || r->quiet.last_quiescent_mono < r->quiet.last_data_step_mono)) {
        sd_run_say(r, "implicit step: await quiescent 3s timeout=60s (needed before reconciliation)");
        e = sd_run_await_quiescent(r, 3000, 60000, detail, dlen, err, errlen);
        sd_ledger_warning(r->ledger, "implicit-quiescence", e ? err : detail, NULL, 0);
        if (e) { sd_run_set_fatal(r, e, err); return e; }
    }

    return e;
}

/* 7. and 8. Stop the pipeline, then reconcile (also after an inconclusive
 * end, to show what was seen), decide the verdict, write the reports. e and
 * err are how the run ended before the judgement. */
static void sd_run_judge(sd_run_t *r, sd_run_result_t *res, sd_err_t e, const char *err) {
    int failed = 0, settled = 0, unjudgeable = 0, unconsumed = 0;
    char unconsumed_why[1024] = "";
    sd_err_t status = r->verdict.fatal ? r->verdict.fatal : e;
    char msg[4096];
    snprintf(msg, sizeof(msg), "%s", r->verdict.fatal ? r->verdict.fatal_msg : err);
    int judge = r->sink.target && r->ledger && status != SD_ERR_SINK && status != SD_ERR_INTERRUPTED && status != SD_ERR_IO &&
                status != SD_ERR_BROKER && status != SD_ERR_SCENARIO && status != SD_ERR_USAGE;
    char rerr[2048] = "";
    sd_err_t re = SD_OK;
    uint8_t *pending = NULL;
    if (judge) {
        if (r->src.producer) re = sd_run_background_wait(r, rerr, sizeof(rerr));
        if (r->src.producer && !re) re = sd_run_drain(r, sd_util_scaled_ms(10000), rerr, sizeof(rerr));
        /* what the pipeline has not consumed yet is asked while it runs */
        if (!re) pending = sd_run_pending(r, unconsumed_why, sizeof(unconsumed_why));
    }
    /* 7. stop the pipeline, before the final read: whatever it writes on
     * its way out (a shutdown hook, a last flush) is in the sinks read */
    if (r->sup) {
        /* every running instance, each given its grace */
        int run[SD_MAX_INSTANCES], n = sd_run_running_instances(r, run);
        if (n) r->pipe.wanted = 0;
        for (int i = 0; n > 1 && i < n; i++) {
            /* together: one instance's leave does not rebalance work onto the next */
            sd_sup_focus(r->sup, run[i]);
            sd_sup_signal(r->sup, SIGTERM, "stop", NULL, 0);
        }
        for (int i = 0; i < n; i++) {
            sd_sup_focus(r->sup, run[i]);
            sd_sup_stop(r->sup, sd_util_scaled_ms(5000), NULL, 0);
        }
        sd_sup_kill_all(r->sup);
        sd_run_sup_events(r, NULL, 0);
    }
    for (int i = 0; r->ledger && sd_run_injectors[i]; i++)
        if (sd_run_injectors[i]->finish) sd_run_injectors[i]->finish(r);
    if (judge) {
        int64_t rt0 = sd_util_mono_ms();
        if (!re) re = sd_run_reconcile(r, pending, &failed, &settled, &unjudgeable, &unconsumed, rerr, sizeof(rerr));
        else free(pending);
        sd_ledger_meta_set_int(r->ledger, "reconcile_ms", sd_util_mono_ms() - rt0, NULL, 0);
        if (re && !status) {
            status = re;
            snprintf(msg, sizeof(msg), "%s", rerr);
        }
    }
    /* a progress source that never saw its group saw nothing of the
     * pipeline: no fault it timed landed where the drill said */
    if (sd_progress_group_unseen(r)) {
        for (int i = 0; i < r->sc->nsteps; i++) {
            const sd_step_t *st = &r->sc->steps[i];
            if (!sd_lang_step_entry(st->kind)->fault || st->proc.mid_batch == SD_LAND_NOW) continue;
            char why[512];
            snprintf(why, sizeof(why), "consumer group %s, which `progress group` follows, had neither a member nor a commit in the "
                     "whole run, so no batch it showed was the pipeline's", sd_progress_group_name(r));
            sd_run_fault_missed(r, st, why);
        }
    }
    const char *verdict;
    if (status == SD_OK && !r->sink.target) {
        /* events went out and nothing read them back: no verdict */
        status = SD_ERR_NOTHING_JUDGED;
        snprintf(msg, sizeof(msg), "the scenario declares no sink: %lld messages were sent, nothing was checked",
                 (long long)r->sends.messages);
    }
    if (status == SD_OK) {
        if (!failed && !unjudgeable && !unconsumed && r->verdict.missed) {
            /* a green verdict must mean the drill happened */
            status = SD_ERR_NOT_LANDED;
            snprintf(msg, sizeof(msg), "%d fault step%s did not do what %s: %s", r->verdict.missed, r->verdict.missed == 1 ? "" : "s",
                     r->verdict.missed == 1 ? "it says" : "they say", r->verdict.missed_msg);
            verdict = "inconclusive";
        } else if (!failed && !unjudgeable && !unconsumed && r->verdict.unmeasured) {
            /* an expectation the run could not measure is no pass */
            status = SD_ERR_NOT_MEASURED;
            snprintf(msg, sizeof(msg), "%d expectation%s could not be measured: %s", r->verdict.unmeasured, r->verdict.unmeasured == 1 ? "" : "s",
                     r->verdict.unmeasured_why);
            verdict = "inconclusive";
        } else if (failed) {
            status = SD_ERR_CHECK_FAILED;
            snprintf(msg, sizeof(msg), "%d check%s failed", failed, failed == 1 ? "" : "s");
            verdict = "fail";
        } else if (unconsumed) {
            /* no loss blamed on a pipeline that has not caught up */
            status = SD_ERR_NOT_CAUGHT_UP;
            snprintf(msg, sizeof(msg), "%d expected ids are missing from the target, but the pipeline had not consumed them when "
                     "the harness judged: %s", unconsumed, unconsumed_why);
            sd_ledger_warning(r->ledger, "not-caught-up", msg, NULL, 0);
            verdict = "inconclusive";
        } else if (unjudgeable) {
            status = SD_ERR_TRIMMED;
            snprintf(msg, sizeof(msg), "%d expected ids are missing but lie in data the broker deleted: cannot judge", unjudgeable);
            verdict = "inconclusive";
        } else {
            verdict = "pass";
            msg[0] = 0;
        }
    } else if (settled && sd_err_is_inconclusive(status)) {
        /* a check failed on what no catching up can undo (copies, leaks,
         * unexpected rows): the run fails, whatever else went wrong too */
        char also[2048];
        snprintf(also, sizeof(also), "%.2000s", msg);
        status = SD_ERR_CHECK_FAILED;
        snprintf(msg, sizeof(msg), "%d check%s failed (also: %s)", failed, failed == 1 ? "" : "s", also);
        verdict = "fail";
    } else if (sd_err_is_inconclusive(status) || status == SD_ERR_INTERRUPTED) {
        verdict = "inconclusive";
    } else {
        verdict = "error";
    }
    sd_run_finish(r, res, status, verdict, msg);
    if (r->ledger) {
        /* the producer's last delivery reports go to the ledger first */
        if (r->src.producer) sd_producer_close(r->src.producer);
        r->src.producer = NULL;
        if (r->side.producer) sd_producer_close(r->side.producer);
        r->side.producer = NULL;
        sd_run_close_txn(r);
        sd_ledger_close(r->ledger);
        r->ledger = NULL;
        res->recorded = 1;
    }
}

void sd_run_scenario(const sd_scenario_t *sc, const sd_run_opts_t *opts, sd_run_result_t *res) {
    sd_run_t R;
    sd_run_t *r = &R;
    memset(r, 0, sizeof(*r));
    memset(res, 0, sizeof(*res));
    r->sc = sc;
    r->opts = opts;
    r->console.live = !opts->quiet && !opts->verbose && sd_util_is_terminal(2);
    r->t0_mono = sd_util_mono_ms();
    r->t0_wall = sd_util_wall_ms();
    r->sends.max_event_time = INT64_MIN;
    r->lock_fd = -1;
    char err[2048] = "";
    char detail[2048];
    sd_err_t e;

    sd_run_identity(r);
    /* nothing is written before the events and the folder are in order */
    if ((e = sd_run_open_events(r, err, sizeof(err))) || (e = sd_run_open_ledger(r, err, sizeof(err)))) {
        sd_run_finish(r, res, e, "error", err);
        sd_run_close(r);
        return;
    }
    sd_run_note_log_times(r);
    if (!(e = sd_run_open_broker(r, err, sizeof(err))) && !(e = sd_run_wire_register(r, err, sizeof(err))) &&
        !(e = sd_run_open_sinks(r, err, sizeof(err))) &&
        !(e = sd_run_open_pipeline(r, err, sizeof(err))) && !(e = sd_progress_open(r, err, sizeof(err))) &&
        !(e = sd_run_steps(r, detail, sizeof(detail), err, sizeof(err))))
        e = sd_run_settle(r, detail, sizeof(detail), err, sizeof(err));
    sd_run_judge(r, res, e, err);
    sd_run_close(r);
}
