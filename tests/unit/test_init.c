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
    cr_assert_eq(sd_init_drill(o, b, err, sizeof(err)), SD_OK, "expected a drill, got: %s", err);
    sd_scenario_t *sc = NULL;
    cr_assert_eq(sd_scenario_parse_text("first.drill", b->data, NULL, &sc, err, sizeof(err)), SD_OK,
                 "expected the drill to parse, got: %s\n%s", err, b->data);
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
    static const char *kinds[] = {"sqlite", "postgres", "kafka", "jsonl", "spark-files", "delta", "command"};
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
        sd_scenario_free(sc);
        sd_buf_free(&b);
    }
}

static void init_err(const sd_init_opts_t *o, const char *what) {
    char err[1024] = "";
    sd_buf_t b;
    sd_buf_init(&b);
    cr_assert_eq(sd_init_drill(o, &b, err, sizeof(err)), SD_ERR_USAGE, "expected a usage error for \"%s\"", what);
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
