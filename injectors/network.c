/* network.c - broker and network faults.
 *
 *   network latency=200ms [for=D]     every request and response delayed
 *   network blackhole [for=D]         nothing gets through (connections stay up)
 *   network reset                     every connection closed at once
 *   network bandwidth=100KB/s [for=D] a slow link (the proxy only)
 *   network idle-timeout=4m [for=D]   connections idle that long are dropped
 *                                     without a word, as the load balancer in
 *                                     front of Azure Event Hubs does (the
 *                                     proxy only); a client that reuses one
 *                                     waits for its request timeout
 *   network latency=300ms on=registry  the same faults on the pipeline's way to the
 *                                     schema registry (`registry ... proxy`)
 *   network errors=Produce:NOT_LEADER_FOR_PARTITION[,...] [count=N]
 *                                     the broker answers requests with errors
 *                                     (the embedded cluster only)
 *
 * On the embedded cluster they go through librdkafka's mock API and reach
 * every client of the cluster, the harness's own producer included: latency
 * is the broker's round-trip time, a blackhole holds every response for its
 * duration (the round-trip time set to it), errors are pushed request
 * errors. librdkafka 2.0's mock cluster cannot bring a broker back up once
 * it is set down, so `reset` needs the proxy. With a real broker and
 * --proxy LISTEN=UPSTREAM they go through the harness's TCP proxy, which
 * only the pipeline uses (it bootstraps from {proxy}). `heal`, for=, and the
 * end of the run undo them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

static int sd_network_handles(sd_step_kind_t k) { return k == SD_STEP_NETWORK; }

/* The embedded cluster's round-trip time from the faults in force
 * (sd_run_broker_rtt_ms: a blackhole's hold while it lasts, else the
 * latency), so the end of one does not lift the other. */
static void sd_network_mock_rtt(sd_run_t *r, rd_kafka_mock_cluster_t *mock) {
    if (mock) rd_kafka_mock_broker_set_rtt(mock, 1, sd_run_broker_rtt_ms(r));
}

/* arg: an sd_net_op_t, and whose connections (a step's on=) in its bits 8
 * and up (the undo callback's int) */
static void sd_network_undo(sd_run_t *r, int arg) {
    sd_faults_t *F = sd_run_faults(r);
    int op = arg & 0xff, on = arg >> 8, bit = 1 << on;
    sd_proxy_t *px = on ? F->registry_proxy : F->proxy;
    rd_kafka_mock_cluster_t *mock = !on && sd_run_broker(r) ? sd_broker_mock(sd_run_broker(r)) : NULL;
    const char *what = NULL, *like = "%";
    switch (op) {
    case SD_NET_LATENCY:
        if (!(F->net_latency & bit)) return;
        F->net_latency &= ~bit;
        if (px) sd_proxy_latency(px, 0);
        else sd_network_mock_rtt(r, mock);
        what = "latency removed";
        like = on ? "registry latency%" : "latency%";
        break;
    case SD_NET_BLACKHOLE:
        if (!(F->net_down & bit)) return;
        F->net_down &= ~bit;
        if (px) sd_proxy_blackhole(px, 0);
        else sd_network_mock_rtt(r, mock);
        what = "blackhole lifted";
        like = on ? "registry blackhole%" : "blackhole%";
        break;
    case SD_NET_BANDWIDTH:
        if (!(F->net_bandwidth & bit)) return;
        if (px) sd_proxy_bandwidth(px, 0);
        F->net_bandwidth &= ~bit;
        what = "bandwidth limit lifted";
        like = on ? "registry bandwidth%" : "bandwidth%";
        break;
    case SD_NET_IDLE:
        if (!(F->net_idle & bit)) return;
        sd_proxy_idle_timeout(px, 0, 0);
        F->net_idle &= ~bit;
        what = "idle timeout lifted";
        like = on ? "registry idle timeout%" : "idle timeout%";
        break;
    case SD_NET_ERRORS:
        if (!(F->net_errors & bit)) return;
        if (mock)
            for (int16_t api = 0; api < 70; api++) rd_kafka_mock_clear_request_errors(mock, api);
        F->net_errors &= ~bit;
        what = "pending request errors cleared";
        like = "the next%";
        break;
    default:
        return;
    }
    sd_ledger_fault_undo(sd_run_ledger(r), sd_run_step_index(r), "network", like, "network", what, 0, NULL, 0);
}

static const struct { const char *name; int16_t key; } sd_apis[] = {
    {"Produce", 0}, {"Fetch", 1}, {"ListOffsets", 2}, {"Metadata", 3}, {"OffsetCommit", 8}, {"OffsetFetch", 9},
    {"FindCoordinator", 10}, {"JoinGroup", 11}, {"Heartbeat", 12}, {"LeaveGroup", 13}, {"SyncGroup", 14},
    {"InitProducerId", 22}, {"AddPartitionsToTxn", 24}, {"EndTxn", 26}, {NULL, 0}};

static sd_err_t sd_network_errors(sd_run_t *r, const sd_step_t *st, char *err, size_t errlen) {
    rd_kafka_mock_cluster_t *mock = sd_broker_mock(sd_run_broker(r));
    const struct rd_kafka_err_desc *descs;
    size_t ndescs;
    rd_kafka_get_err_descs(&descs, &ndescs);
    char *list = sd_util_strdup(st->net.errors), *save = NULL;
    sd_err_t e = SD_OK;
    for (char *t = strtok_r(list, ",", &save); t && !e; t = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(t, ':');
        if (!colon) { e = sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: network errors: expected API:ERROR, found \"%s\"", sd_run_sc(r)->path, st->line, t); break; }
        *colon = 0;
        int api = -1;
        for (int i = 0; sd_apis[i].name; i++)
            if (!strcmp(sd_apis[i].name, t)) api = sd_apis[i].key;
        int code = -1;
        for (size_t i = 0; i < ndescs; i++)
            if (descs[i].name && !strcmp(descs[i].name, colon + 1)) code = descs[i].code;
        if (api < 0 || code < 0) {
            e = sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: network errors: unknown %s \"%s\" (APIs: Produce, Fetch, Metadata, "
                           "OffsetCommit, ...; errors: librdkafka's names such as NOT_LEADER_FOR_PARTITION)",
                           sd_run_sc(r)->path, st->line, api < 0 ? "API" : "error", api < 0 ? t : colon + 1);
            break;
        }
        rd_kafka_resp_err_t *codes = sd_util_xcalloc((size_t)st->net.value, sizeof(*codes));
        for (int64_t i = 0; i < st->net.value; i++) codes[i] = (rd_kafka_resp_err_t)code;
        rd_kafka_mock_push_request_errors_array(mock, (int16_t)api, (size_t)st->net.value, codes);
        free(codes);
    }
    free(list);
    return e;
}

/* network ... on=registry: the proxy between the pipeline and the schema
 * registry (`registry ... proxy`); the harness's own calls go around it. */
static sd_err_t sd_network_registry(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    sd_faults_t *F = sd_run_faults(r);
    sd_proxy_t *px = F->registry_proxy;
    char det[256];
    switch (st->net.op) {
    case SD_NET_LATENCY:
        sd_proxy_latency(px, st->net.value);
        F->net_latency |= 2;
        snprintf(det, sizeof(det), "registry latency %lld ms each way (registry proxy)", (long long)st->net.value);
        break;
    case SD_NET_RESET:
        sd_proxy_reset(px);
        snprintf(det, sizeof(det), "registry connections reset (registry proxy)");
        break;
    case SD_NET_BLACKHOLE:
        sd_proxy_blackhole(px, 1);
        F->net_down |= 2;
        snprintf(det, sizeof(det), "registry blackhole (registry proxy: bytes held)");
        break;
    case SD_NET_BANDWIDTH:
        sd_proxy_bandwidth(px, st->net.value);
        F->net_bandwidth |= 2;
        snprintf(det, sizeof(det), "registry bandwidth %lld bytes/s per direction (registry proxy)", (long long)st->net.value);
        break;
    case SD_NET_IDLE:
        F->net_idle |= 2;
        snprintf(det, sizeof(det), "registry idle timeout %.1fs: connections idle longer are dropped silently (registry proxy)",
                 (double)st->net.value / 1000.0);
        break;
    default: /* errors= is refused with on=registry when the drill is read (parse.c) */
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: network on=registry: no such fault", sd_run_sc(r)->path, st->line);
    }
    if (st->net.for_ms > 0 && st->net.op != SD_NET_RESET) {
        sd_run_schedule_undo(r, sd_util_mono_ms() + st->net.for_ms, sd_network_undo, st->net.op | 1 << 8);
        size_t l = strlen(det);
        snprintf(det + l, sizeof(det) - l, " for %.1fs", (double)st->net.for_ms / 1000.0);
    }
    sd_sup_state_t s = {0};
    if (sd_run_sup(r)) sd_sup_state(sd_run_sup(r), &s);
    int64_t id = 0;
    sd_err_t e = sd_ledger_fault(sd_run_ledger(r), sd_run_step_index(r), "network", det, s.incarnation, &id, err, errlen);
    if (e) return e;
    if (st->net.op == SD_NET_IDLE) sd_proxy_idle_timeout(px, st->net.value, id);
    snprintf(detail, dlen, "%s", det);
    sd_run_data_step_done(r);
    return SD_OK;
}

static sd_err_t sd_network_run(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    if (st->net.on) return sd_network_registry(r, st, detail, dlen, err, errlen);
    sd_faults_t *F = sd_run_faults(r);
    rd_kafka_mock_cluster_t *mock = sd_run_broker(r) ? sd_broker_mock(sd_run_broker(r)) : NULL;
    if (!mock && !F->proxy)
        return sd_err_set(err, errlen, SD_ERR_USAGE,
                          "%s:%d: network faults need the embedded cluster, or --proxy LISTEN=UPSTREAM in front of a real broker",
                          sd_run_sc(r)->path, st->line);
    if (st->net.op == SD_NET_BANDWIDTH && !F->proxy)
        return sd_err_set(err, errlen, SD_ERR_USAGE, "%s:%d: network bandwidth needs --proxy (the embedded cluster has no bandwidth control)",
                          sd_run_sc(r)->path, st->line);
    if (st->net.op == SD_NET_IDLE && !F->proxy)
        return sd_err_set(err, errlen, SD_ERR_USAGE,
                          "%s:%d: network idle-timeout needs --proxy (the embedded cluster's connections cannot be dropped one by one)",
                          sd_run_sc(r)->path, st->line);
    if (st->net.op == SD_NET_ERRORS && !mock)
        return sd_err_set(err, errlen, SD_ERR_USAGE, "%s:%d: network errors needs the embedded cluster", sd_run_sc(r)->path, st->line);
    if (st->net.op == SD_NET_RESET && !F->proxy)
        return sd_err_set(err, errlen, SD_ERR_USAGE,
                          "%s:%d: network reset needs --proxy (librdkafka 2.0's mock cluster cannot bring a broker back up)",
                          sd_run_sc(r)->path, st->line);
    char det[256];
    sd_err_t e = SD_OK;
    const char *via = F->proxy ? "proxy" : "embedded cluster";
    switch (st->net.op) {
    case SD_NET_LATENCY:
        F->net_latency |= 1;
        F->mock_latency_ms = (int)st->net.value;
        if (F->proxy) sd_proxy_latency(F->proxy, st->net.value);
        else sd_network_mock_rtt(r, mock);
        snprintf(det, sizeof(det), "latency %lld ms (%s)", (long long)st->net.value, via);
        break;
    case SD_NET_RESET:
        sd_proxy_reset(F->proxy);
        snprintf(det, sizeof(det), "every connection reset (%s)", via);
        break;
    case SD_NET_BLACKHOLE: {
        int64_t hold = st->net.for_ms > 0 ? st->net.for_ms : 30000;
        F->net_down |= 1;
        F->mock_hold_ms = (int)hold;
        if (F->proxy) sd_proxy_blackhole(F->proxy, 1);
        else sd_network_mock_rtt(r, mock);
        if (F->proxy) snprintf(det, sizeof(det), "blackhole (proxy: bytes held)");
        else snprintf(det, sizeof(det), "blackhole (embedded cluster: every response held %.1fs)", (double)hold / 1000.0);
        break;
    }
    case SD_NET_BANDWIDTH:
        sd_proxy_bandwidth(F->proxy, st->net.value);
        F->net_bandwidth |= 1;
        snprintf(det, sizeof(det), "bandwidth %lld bytes/s per direction (proxy)", (long long)st->net.value);
        break;
    case SD_NET_IDLE:
        F->net_idle |= 1;
        snprintf(det, sizeof(det), "idle timeout %.1fs: connections idle longer are dropped silently (proxy)", (double)st->net.value / 1000.0);
        break;
    case SD_NET_ERRORS:
        if ((e = sd_network_errors(r, st, err, errlen))) return e;
        F->net_errors |= 1;
        snprintf(det, sizeof(det), "the next %lld requests answered with %s (embedded cluster)", (long long)st->net.value, st->net.errors);
        break;
    }
    if (st->net.for_ms > 0 && st->net.op != SD_NET_RESET) {
        sd_run_schedule_undo(r, sd_util_mono_ms() + st->net.for_ms, sd_network_undo, st->net.op);
        size_t l = strlen(det);
        snprintf(det + l, sizeof(det) - l, " for %.1fs", (double)st->net.for_ms / 1000.0);
    }
    sd_sup_state_t s = {0};
    if (sd_run_sup(r)) sd_sup_state(sd_run_sup(r), &s);
    int64_t id = 0;
    if ((e = sd_ledger_fault(sd_run_ledger(r), sd_run_step_index(r), "network", det, s.incarnation, &id, err, errlen))) return e;
    /* the drops are recorded under the fault, so it starts once it has an id */
    if (st->net.op == SD_NET_IDLE) sd_proxy_idle_timeout(F->proxy, st->net.value, id);
    snprintf(detail, dlen, "%s", det);
    sd_run_data_step_done(r);
    return SD_OK;
}

static void sd_network_heal(sd_run_t *r, sd_buf_t *done) {
    sd_faults_t *F = sd_run_faults(r);
    int had = __builtin_popcount((unsigned)F->net_latency) + __builtin_popcount((unsigned)F->net_down) +
              __builtin_popcount((unsigned)F->net_bandwidth) + __builtin_popcount((unsigned)F->net_errors) +
              __builtin_popcount((unsigned)F->net_idle);
    for (int on = 0; on < 2; on++)
        for (int op = SD_NET_LATENCY; op <= SD_NET_IDLE; op++) sd_network_undo(r, op | on << 8);
    if (had) sd_buf_printf(done, "%sended %d network fault%s", done->len ? "; " : "", had, had == 1 ? "" : "s");
}

/* The connections dropped under an idle timeout, once the pipeline has
 * stopped: a client still waiting on one gave up when it exited, which the
 * proxy sees at once (half a second at most is allowed for it); and what
 * each timeout saw while it was on. */
static void sd_network_finish(sd_run_t *r) {
    sd_faults_t *F = sd_run_faults(r);
    if (!F->proxy) return;
    sd_proxy_drop_t *d = NULL;
    int n = 0;
    for (int64_t until = sd_util_mono_ms() + 500;;) {
        free(d);
        n = sd_proxy_drops(F->proxy, &d);
        int open = 0;
        for (int i = 0; i < n; i++) open += d[i].closed_ms < 0;
        if (!open || sd_util_mono_ms() >= until) break;
        sd_util_sleep_ms(20);
    }
    for (int i = 0; i < n; i++) sd_ledger_idle_drop(sd_run_ledger(r), d[i].tag, d[i].dropped_ms, d[i].used_ms, d[i].closed_ms, NULL, 0);
    free(d);
    sd_proxy_idle_seen_t *w = NULL;
    n = sd_proxy_idle_seen(F->proxy, &w);
    for (int i = 0; i < n; i++)
        sd_ledger_idle_watch(sd_run_ledger(r), w[i].tag, w[i].timeout_ms, w[i].connections, w[i].quiet_closed, w[i].max_quiet_ms, NULL, 0);
    free(w);
}

const sd_injector_t sd_injector_network = {
    .name = "network", .handles = sd_network_handles, .run = sd_network_run, .heal = sd_network_heal, .finish = sd_network_finish
};
