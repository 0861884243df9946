/* figures.h - the recovery figures of a fault, listed once.
 *
 * A figure belongs to one fault (recovery.c computes them from run.db), not
 * to the run as a count does (counts.h): `expect recovery_s<=60` holds for
 * every fault, `expect step=21 recovery_s<=30` for the fault step at line 21.
 * This list gives the names `expect` takes, summary.json's per-fault
 * "recovery" keys, the reports' columns and docs/language.md's table.
 *
 */
#ifndef SD_FIGURES_H
#define SD_FIGURES_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* X(name, unit, meaning): unit 's' a duration (kept in ms, written in
 * seconds), 'n' a count, 'm' milliseconds. One list: the expect names,
 * summary.json's keys, the reports' columns and docs/language.md. */
#define SD_FIGURES(X)                                                                                                        \
    X(recovery_s, 's', "from the fault until every event sent before it was in the target (or the pipeline's commits "  \
                       "covered what Kafka had acknowledged)")                                                                                \
    X(detect_s, 's', "a stall (pause, network): from its end to the pipeline's first sign of work")                        \
    X(replayed_input, 'n', "a fault that ended an incarnation: records read before it that the next incarnation read "     \
                           "again")                                                                                          \
    X(rewritten_rows, 'n', "a fault that ended an incarnation: rows written again, at least (the interrupted batch's "     \
                           "rows visible at the fault, or the extra copies traced to it, the larger)")                       \
    X(batches_rerun, 'n', "a fault that ended an incarnation: batches begun and not committed before it, begun again "     \
                          "after it")                                                                                        \
    X(reconnect_s, 's', "an idle timeout (`network idle-timeout=D`): the longest a client waited on a connection dropped " \
                        "silently, from its first request on it until it gave up and reconnected")                          \
    X(dropped_connections, 'n', "an idle timeout: connections dropped silently for being idle")                          \
    X(leaderless_s, 's', "a broker fault (`broker kill|stop|pause`): the longest a source partition the broker led had no "  \
                         "leader the clients could use, from the strike until the cluster's metadata named another")       \
    X(restore_s, 's', "an application that logs its state (Kafka Streams): from its first rebalance after the fault "    \
                      "until every instance was RUNNING again, its stores restored (by its own log lines, read only from a pipeline "   \
                      "declared with `engine=kafka-streams`)")         \
    X(restored_records, 'n', "the same application: changelog records it restored meanwhile, by its log")                  \
    X(operator_s, 's', "the human part of the recovery: time spent in `operator` steps between the fault and when it "   \
                       "caught up")                                                                                          \
    X(latency_p50_before_ms, 'm', "median latency of events sent before the fault (since the previous recovery)")         \
    X(latency_p99_before_ms, 'm', "99th percentile of the same")                                                           \
    X(latency_p50_during_ms, 'm', "median latency of events sent during the fault (until it ended) and the recovery")                                 \
    X(latency_p99_during_ms, 'm', "99th percentile of the same")                                                           \
    X(latency_p50_after_ms, 'm', "median latency of events sent after the recovery (until the next fault)")               \
    X(latency_p99_after_ms, 'm', "99th percentile of the same")

typedef enum {
#define SD_FIG_ENUM(name, unit, meaning) SD_FIG_##name,
    SD_FIGURES(SD_FIG_ENUM)
#undef SD_FIG_ENUM
    SD_FIG__COUNT
} sd_figure_t;

/* A figure's value, or why there is none. */
#define SD_FIG_NA INT64_MIN             /* does not apply to this fault (detect_s of a kill) */
#define SD_FIG_UNMEASURED (INT64_MIN + 1) /* applies, and run.db cannot say (why tells) */
#define SD_FIG_NEVER INT64_MAX          /* it never happened (never caught up) */

static const struct { const char *name; char unit; const char *meaning; } sd_figure_table[SD_FIG__COUNT] = {
#define SD_FIG_ROW(name, unit, meaning) {#name, unit, meaning},
    SD_FIGURES(SD_FIG_ROW)
#undef SD_FIG_ROW
};

static inline const char *sd_figure_name(int f) { return f >= 0 && f < SD_FIG__COUNT ? sd_figure_table[f].name : "?"; }
static inline char sd_figure_unit(int f) { return f >= 0 && f < SD_FIG__COUNT ? sd_figure_table[f].unit : 'n'; }
static inline const char *sd_figure_meaning(int f) { return f >= 0 && f < SD_FIG__COUNT ? sd_figure_table[f].meaning : ""; }
/* SD_FIG_x for a name, -1 if none */
static inline int sd_figure_by_name(const char *name) {
    for (int f = 0; f < SD_FIG__COUNT; f++)
        if (!strcmp(sd_figure_table[f].name, name)) return f;
    return -1;
}

/* What a figure of a fault rests on (docs/oracle.md, "What counts as
 * evidence"): "observed" (the harness's own looks: the target as a reader
 * sees it, the broker's metadata, its proxy, its clock), "engine-recorded"
 * (the engine's checkpoints, commit logs, group offsets), or
 * "pipeline-claimed" (what the pipeline says of itself: its batch markers,
 * its log lines, the write times it stamps). basis is the fault's recovery
 * basis ("target", "samples", "commits"), progress the drill's progress
 * source word ("markers", "spark", "flink", "group", "sink", "none"). */
static inline const char *sd_figure_evidence(int f, const char *basis, const char *progress) {
    static const char obs[] = "observed", eng[] = "engine-recorded", claim[] = "pipeline-claimed";
    const char *by_progress = !progress || !strcmp(progress, "markers") || !*progress ? claim : !strcmp(progress, "sink") ? obs : eng;
    if (f == SD_FIG_recovery_s) return basis && !strcmp(basis, "commits") ? by_progress : obs;
    if (f == SD_FIG_detect_s || f == SD_FIG_replayed_input || f == SD_FIG_batches_rerun) return by_progress;
    if (f == SD_FIG_restore_s || f == SD_FIG_restored_records) return claim;
    if (f >= SD_FIG_latency_p50_before_ms && f <= SD_FIG_latency_p99_after_ms) return claim;
    return obs;
}

/* A figure as text: "12.345" (seconds), "20", "n/a", "not measured", "never". */
static inline void sd_figure_text(int f, int64_t v, char *out, size_t outlen) {
    if (v == SD_FIG_NA) snprintf(out, outlen, "n/a");
    else if (v == SD_FIG_UNMEASURED) snprintf(out, outlen, "not measured");
    else if (v == SD_FIG_NEVER) snprintf(out, outlen, "never");
    else if (sd_figure_unit(f) == 's') snprintf(out, outlen, "%.3f", (double)v / 1000.0);
    else snprintf(out, outlen, "%lld", (long long)v);
}

#endif
