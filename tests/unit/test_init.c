/* test_init.c - `streamdrill init`'s drill: the refpipe drill and the one
 * of every sink kind parse, with the sink, progress source and pipeline
 * asked for; bad options are refused with the reason. (That the refpipe
 * drill passes when run is tests/run_scenarios.py's init case.) */
#include <criterion/criterion.h>
#include <string.h>

#include "init.h"
#include "scenario.h"

static sd_scenario_t *init_parse(const sd_init_opts_t *o, sd_buf_t *b) {
    char err[1024] = "";
    sd_buf_init(b);
    const char *hole = NULL;
    cr_assert_eq(sd_init_drill(o, b, &hole, err, sizeof(err)), SD_OK, "expected a drill, got: %s", err);
    sd_kvlist_t sets = {0};
    if (hole) sd_kvlist_add(&sets, hole, "/tmp/x");
    sd_scenario_t *sc = NULL;
    cr_assert_eq(sd_scenario_parse_text("first.drill", b->data, &sets, &sc, err, sizeof(err)), SD_OK,
                 "expected the drill to parse, got: %s\n%s", err, b->data);
    sd_kvlist_free(&sets);
    return sc;
}

Test(init, refpipe_drill) {
    sd_init_opts_t o = {0};
    sd_buf_t b;
    sd_scenario_t *sc = init_parse(&o, &b);
    cr_assert_str_eq(sc->name, "first-drill");
    cr_assert_eq(sc->nsinks, 2, "expected the target and the quarantine, got %d sinks", sc->nsinks);
    cr_assert_str_eq(sc->sinks[0].kind, "sqlite");
    cr_assert(sc->sinks[1].is_quarantine);
    cr_assert_str_eq(sc->argv[0], "{libexec}/refpipe", "got %s", sc->argv[0]);
    cr_assert_eq(sc->progress, SD_PROGRESS_MARKERS);
    cr_assert_eq(sc->nsteps, 10, "got %d steps", sc->nsteps);
    cr_assert(strstr(b.data, "kill       mid-batch signal=KILL"), "no mid-batch kill in:\n%s", b.data);
    cr_assert(b.data[0] == '#', "the drill opens with its description");
    sd_scenario_free(sc);
    sd_buf_free(&b);
}

Test(init, every_sink_kind_with_a_pipeline) {
    static const char *kinds[] = {"sqlite", "postgres", "kafka", "jsonl", "spark-files", "flink-files", "delta", "command"};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        sd_init_opts_t o = {.pipeline = "spark-submit job.py --brokers {brokers} --checkpoint {checkpoint}", .sink = kinds[i],
                            .progress = i % 2 ? "spark" : NULL, .name = "orders"};
        sd_buf_t b;
        sd_scenario_t *sc = init_parse(&o, &b);
        cr_assert_str_eq(sc->name, "orders");
        cr_assert_eq(sc->nsinks, 1, "%s: expected the target only, got %d sinks", kinds[i], sc->nsinks);
        cr_assert_str_eq(sc->sinks[0].kind, kinds[i]);
        cr_assert_str_eq(sc->argv[0], "spark-submit");
        cr_assert_eq(sc->progress, i % 2 ? SD_PROGRESS_SPARK : SD_PROGRESS_GROUP, "%s: progress %d", kinds[i], sc->progress);
        cr_assert_eq(sc->malformed_disp, SD_DISP_DROPPED, "%s: without a quarantine sink malformed events are dropped", kinds[i]);
        /* a writer in transactions is gated on its recovery: an unfenced restart shows only there */
        int gate = strstr(b.data, "\nexpect     recovery_s<=55\n") != NULL;
        cr_assert_eq(gate, !strcmp(kinds[i], "kafka"), "%s: a recovery gate %s", kinds[i], gate ? "where none belongs" : "missing");
        sd_scenario_free(sc);
        sd_buf_free(&b);
    }
}

/* The sink reads what the pipeline's command line writes, or keeps a
 * placeholder the parser refuses until it is filled in. */
Test(init, the_sink_follows_the_pipelines_path) {
    static const struct { const char *kind, *cmd, *want; } cases[] = {
        {"sqlite", "python3 job.py --brokers {brokers} --db {run}/sink.db", "sink       sqlite db={run}/sink.db query="},
        {"sqlite", "python3 job.py --out={run}/orders.sqlite3", "sink       sqlite db={run}/orders.sqlite3 query="},
        {"jsonl", "java -jar job.jar {run}/out/part.jsonl", "sink       jsonl path={run}/out/part.jsonl\n"},
        {"delta", "spark-submit job.py {checkpoint} {run}/tables/orders", "sink       delta path={run}/tables/orders\n"},
        {"sqlite", "python3 job.py --brokers {brokers}", "sink       sqlite db={sink_path} query="},
        {"spark-files", "spark-submit job.py {checkpoint}", "sink       spark-files path={sink_path}\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sd_init_opts_t o = {.pipeline = cases[i].cmd, .sink = cases[i].kind};
        sd_buf_t b;
        sd_buf_init(&b);
        char err[1024] = "";
        const char *hole = NULL;
        cr_assert_eq(sd_init_drill(&o, &b, &hole, err, sizeof(err)), SD_OK, "%s", err);
        cr_assert(strstr(b.data, cases[i].want), "%s: expected \"%s\" in:\n%s", cases[i].cmd, cases[i].want, b.data);
        int placeholder = strstr(cases[i].want, "{sink_path}") != NULL;
        cr_assert_eq(hole != NULL, placeholder, "%s", cases[i].cmd);
        sd_scenario_t *sc = NULL;
        sd_err_t e = sd_scenario_parse_text("first.drill", b.data, NULL, &sc, err, sizeof(err));
        if (placeholder) cr_assert(e == SD_ERR_SCENARIO && strstr(err, "undefined variable {sink_path}"), "%s", err);
        else cr_assert_eq(e, SD_OK, "%s", err);
        if (sc) sd_scenario_free(sc);
        sd_buf_free(&b);
    }
}

/* The instructions to check and run it are not the drill's description. */
Test(init, the_description_is_the_drills_not_the_instructions) {
    sd_init_opts_t o = {0};
    sd_buf_t b;
    sd_scenario_t *sc = init_parse(&o, &b);
    cr_assert(strstr(sc->description, "An exactly-once pipeline ends with 120"), "%s", sc->description);
    cr_assert(!strstr(sc->description, "Check it"), "%s", sc->description);
    sd_scenario_free(sc);
    sd_buf_free(&b);
}

static void init_err(const sd_init_opts_t *o, const char *what) {
    char err[1024] = "";
    sd_buf_t b;
    sd_buf_init(&b);
    const char *hole;
    cr_assert_eq(sd_init_drill(o, &b, &hole, err, sizeof(err)), SD_ERR_USAGE, "expected a usage error for \"%s\"", what);
    cr_assert(strstr(err, what), "expected \"%s\" in: %s", what, err);
    sd_buf_free(&b);
}

Test(init, bad_options) {
    init_err(&(sd_init_opts_t){.sink = "parquet"}, "--sink parquet: expected one of");
    init_err(&(sd_init_opts_t){.sink = "kafka"}, "needs --pipeline");
    init_err(&(sd_init_opts_t){.progress = "psychic"}, "--progress psychic");
    init_err(&(sd_init_opts_t){.pipeline = "job\nstart"}, "a line break");
    init_err(&(sd_init_opts_t){.pipeline = ""}, "found nothing");
}
