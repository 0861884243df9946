/* test_scenario.c - the .drill parser: the canonical drill, variables,
 * quoting, continuation, and errors that name line and column. (The
 * broken files under tests/broken/ are checked end to end by
 * tests/run_scenarios.py.) */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "figures.h"
#include "scenario.h"

static sd_scenario_t *parse_ok(const char *text, const sd_kvlist_t *over) {
    sd_scenario_t *sc = NULL;
    char err[1024];
    sd_err_t e = sd_scenario_parse_text("t.drill", text, over, &sc, err, sizeof(err));
    cr_assert_eq(e, SD_OK, "expected the scenario to parse, got: %s", err);
    return sc;
}

static void parse_err(const char *text, const char *where, const char *what) {
    sd_scenario_t *sc = NULL;
    char err[1024] = "";
    sd_err_t e = sd_scenario_parse_text("t.drill", text, NULL, &sc, err, sizeof(err));
    cr_assert_eq(e, SD_ERR_SCENARIO, "expected an error, the scenario parsed");
    cr_assert(!strncmp(err, where, strlen(where)), "expected the error to start with %s, got: %s", where, err);
    cr_assert(strstr(err, what), "expected \"%s\" in: %s", what, err);
    cr_assert_null(sc);
}

static const char *canon =
    "# A drill\n# over two lines\n"
    "set mode=exactly-once\n"
    "source     kafka topic=parcel-scans partitions=3\n"
    "events     parcel-scans seed=42\n"
    "contract   id=event_id watermark=10m late=drop malformed=quarantine\n"
    "sink       sqlite db={run}/target.db query=\"SELECT event_id FROM bronze\"\n"
    "quarantine sqlite db={run}/target.db query=\"SELECT sd_id FROM rejected\"\n"
    "pipeline   {pipelines}/refpipe --brokers {brokers} --topic {topic} --db {run}/target.db --mode {mode}\n"
    "\n"
    "start\n"
    "produce    100\n"
    "await      sink rows>=100 timeout=30s\n"
    "produce    20 rate=500/s\n"
    "kill       mid-batch signal=KILL\n"
    "restart\n"
    "replay     10\n"
    "inject     malformed=3 late=2\n"
    "await      quiescent 3s timeout=60s\n"
    "expect     unique=120 duplicated=0 lost=0\n";

Test(scenario, canonical_drill) {
    sd_scenario_t *sc = parse_ok(canon, NULL);
    cr_assert_str_eq(sc->description, "A drill\nover two lines");
    cr_assert_str_eq(sc->topic, "parcel-scans");
    cr_assert_eq(sc->partitions, 3);
    cr_assert_eq(sc->seed, 42u);
    cr_assert_eq(sc->watermark_ms, 600000);
    cr_assert_eq(sc->nsinks, 2);
    cr_assert_str_eq(sc->sinks[0].name, "target");
    cr_assert_str_eq(sc->sinks[1].name, "quarantine");
    cr_assert(sc->sinks[1].is_quarantine);
    cr_assert_str_eq(sd_kvlist_get(&sc->sinks[0].params, "query"), "SELECT event_id FROM bronze");
    cr_assert_eq(sc->argc, 9);
    cr_assert_str_eq(sc->argv[8], "exactly-once", "user variables are substituted at parse time");
    cr_assert_str_eq(sc->argv[0], "{pipelines}/refpipe", "run-time placeholders stay");
    cr_assert_eq(sc->nsteps, 10);
    cr_assert_eq(sc->steps[1].kind, SD_STEP_PRODUCE);
    cr_assert_eq(sc->steps[1].send.count, 100);
    cr_assert_eq(sc->steps[2].kind, SD_STEP_AWAIT_SINK);
    cr_assert_eq(sc->steps[2].await.op, SD_OP_GE);
    cr_assert_eq(sc->steps[2].await.rows, 100);
    cr_assert_eq(sc->steps[2].timeout_ms, 30000);
    cr_assert_eq(sc->steps[3].send.rate, 500.0);
    cr_assert(sc->steps[4].proc.mid_batch);
    cr_assert_eq(sc->steps[7].send.malformed, 3);
    cr_assert_eq(sc->steps[7].send.inject[SD_INJ_LATE], 2);
    cr_assert_eq(sc->steps[8].await.quiet_ms, 3000);
    cr_assert_eq(sc->steps[9].expect.n, 3);
    cr_assert_str_eq(sc->steps[9].expect.v[0].count, "observed_unique", "unique is an alias");
    cr_assert_eq(sc->steps[1].line, 12);
    cr_assert_str_eq(sc->steps[2].text, "await sink rows>=100 timeout=30s");
    sd_scenario_free(sc);
}

Test(scenario, set_overrides_win) {
    sd_kvlist_t over = {0};
    sd_kvlist_add(&over, "mode", "at-least-once");
    sd_scenario_t *sc = parse_ok(canon, &over);
    cr_assert_str_eq(sc->argv[8], "at-least-once");
    sd_scenario_free(sc);
    sd_kvlist_free(&over);
}

Test(scenario, variables_in_numbers_are_checked_after_substitution) {
    sd_kvlist_t over = {0};
    sd_kvlist_add(&over, "n", "25");
    const char *t = "source kafka topic=t\nproduce {n}\n";
    sd_scenario_t *sc = parse_ok(t, &over);
    cr_assert_eq(sc->steps[0].send.count, 25);
    sd_scenario_free(sc);
    sd_kvlist_free(&over);
    sd_kvlist_add(&over, "n", "lots");
    sd_scenario_t *bad = NULL;
    char err[512];
    cr_assert_eq(sd_scenario_parse_text("t.drill", t, &over, &bad, err, sizeof(err)), SD_ERR_SCENARIO);
    cr_assert(strstr(err, "t.drill:2:9: produce: expected a count"), "got: %s", err);
    sd_kvlist_free(&over);
}

/* {name:unit}: one duration written once, rendered in the pipeline's unit;
 * a unit it does not divide, a value that is no duration and an unknown
 * unit are each refused at their column. */
Test(scenario, duration_variables_render_in_a_unit) {
    const char *t = "set within=5m\nsource kafka topic=t\ndeliveries share=70\nsink sqlite db=x query=\"SELECT a, b FROM j\"\n"
                    "model join within={within}\npipeline /bin/prog --ms {within:ms} --s={within:s} {within:m}\nstart\n";
    sd_scenario_t *sc = parse_ok(t, NULL);
    cr_assert_eq(sc->model.within_ms, 300000);
    cr_assert_str_eq(sc->argv[2], "300000");
    cr_assert_str_eq(sc->argv[3], "--s=300");
    cr_assert_str_eq(sc->argv[4], "5");
    sd_scenario_free(sc);
    static const struct { const char *set, *want; } bad[] = {
        {"90s", "t.drill:6:52: {within:m}: within=90s is not a whole number of m (write {within:ms})"},
        {"soon", "t.drill:5:19: model within: expected a duration"},
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        sd_kvlist_t over = {0};
        sd_kvlist_add(&over, "within", bad[k].set);
        sd_scenario_t *no = NULL;
        char err[512];
        cr_assert_eq(sd_scenario_parse_text("t.drill", t, &over, &no, err, sizeof(err)), SD_ERR_SCENARIO);
        cr_assert(strstr(err, bad[k].want), "within=%s: got %s", bad[k].set, err);
        sd_kvlist_free(&over);
    }
    sd_scenario_t *no = NULL;
    char err[512];
    cr_assert_eq(sd_scenario_parse_text("t.drill", "set w=1s\nsource kafka topic=t\npipeline /bin/prog {w:days}\nstart\n", NULL, &no, err,
                                        sizeof(err)), SD_ERR_SCENARIO);
    cr_assert(strstr(err, "t.drill:3:20: {w:days}: expected a unit of ms, s, m or h"), "got %s", err);
}

/* --set of a name the drill neither sets nor uses is a typo: refused with
 * the names it has and the near one; a name it only uses is accepted. */
Test(scenario, set_of_an_unknown_name_is_refused) {
    const char *t = "set mode=exactly-once weak=none\nsource kafka topic=t\npipeline /bin/prog {mode} {weak} {extra}\nstart\n";
    sd_kvlist_t over = {0};
    sd_kvlist_add(&over, "moed", "at-least-once");
    sd_scenario_t *no = NULL;
    char err[512];
    cr_assert_eq(sd_scenario_parse_text("t.drill", t, &over, &no, err, sizeof(err)), SD_ERR_SCENARIO);
    cr_assert(strstr(err, "t.drill: --set moed=...: the drill has no variable moed (its `set` variables: mode, weak); did you mean mode?"),
              "got %s", err);
    sd_kvlist_free(&over);
    sd_kvlist_add(&over, "extra", "x");
    sd_scenario_t *sc = parse_ok(t, &over);
    cr_assert_str_eq(sc->argv[3], "x", "a name the drill uses but does not set is accepted");
    sd_scenario_free(sc);
    sd_kvlist_free(&over);
}

/* Every refused line is named in one parse, each misspelling with the
 * word it is near; a word near nothing gets no guess. */
Test(scenario, every_wrong_line_is_named_with_did_you_mean) {
    const char *t = "source kafka topic=t partitions=1\n"
                    "sink sqlite db={run}/x.db qurey=\"SELECT a FROM b\"\n"
                    "pipeline /bin/true {brokres}\n"
                    "strat\n"
                    "produce 10 rat=5\n"
                    "await quiescnt 1s\n"
                    "kill mid-bacth\n"
                    "zzzzzz\n"
                    "produce \"open\n"
                    "start\n";
    sd_scenario_t *no = NULL;
    char err[16384];
    cr_assert_eq(sd_scenario_parse_text("t.drill", t, NULL, &no, err, sizeof(err)), SD_ERR_SCENARIO);
    cr_assert_null(no);
    static const char *const want[] = {
        "t.drill:2:27: sink sqlite: expected one of db=, query=, found \"qurey=SELECT a FROM b\"; did you mean query=?\n",
        "t.drill:3:20: undefined variable {brokres}:", "; did you mean brokers?\n",
        "t.drill:4:1: expected a directive", "found \"strat\"; did you mean start?\n",
        "t.drill:5:12: produce: expected one of", "found \"rat=5\"; did you mean rate=?\n",
        "t.drill:6:7: await: expected `sink`, `quiescent`, `batches`, `exit`, found \"quiescnt\"; did you mean quiescent?\n",
        "t.drill:7:6: kill: expected one of", "found \"mid-bacth\"; did you mean mid-batch?\n",
        "found \"zzzzzz\"\n",
        "t.drill:9:9: unterminated double quote",
    };
    const char *at = err;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const char *p = strstr(at, want[i]);
        cr_assert(p, "expected \"%s\" (in order) in:\n%s", want[i], err);
        at = p + strlen(want[i]);
    }
    /* at most 10 named, the rest counted */
    sd_buf_t many;
    sd_buf_init(&many);
    sd_buf_puts(&many, "source kafka topic=t\n");
    for (int i = 0; i < 14; i++) sd_buf_puts(&many, "strat\n");
    cr_assert_eq(sd_scenario_parse_text("m.drill", many.data, NULL, &no, err, sizeof(err)), SD_ERR_SCENARIO);
    cr_assert(strstr(err, "m.drill:11:1:") && !strstr(err, "m.drill:12:1:"), "%s", err);
    cr_assert(strstr(err, "\nm.drill: 4 more errors not shown"), "%s", err);
    sd_buf_free(&many);
}

Test(scenario, continuation_and_quotes) {
    const char *t = "source kafka topic=t\n"
                    "pipeline /bin/prog --a \"two words\" 'single \"q\"' \\\n"
                    "         --b x\\\"y\n"
                    "start\n";
    sd_scenario_t *sc = parse_ok(t, NULL);
    cr_assert_eq(sc->argc, 6);
    cr_assert_str_eq(sc->argv[2], "two words");
    cr_assert_str_eq(sc->argv[3], "single \"q\"");
    cr_assert_str_eq(sc->argv[5], "x\"y", "a backslash outside quotes escapes the next character");
    cr_assert_eq(sc->steps[0].line, 4);
    sd_scenario_free(sc);
}

Test(scenario, expand_runtime_placeholders) {
    sd_kvlist_t v = {0};
    sd_kvlist_add(&v, "run", "/tmp/r");
    char err[256];
    char *s = sd_scenario_expand("{run}/t.db {{literal}}", &v, err, sizeof(err));
    cr_assert_str_eq(s, "/tmp/r/t.db {literal}");
    free(s);
    cr_assert_null(sd_scenario_expand("{brokers}", &v, err, sizeof(err)));
    cr_assert(strstr(err, "{brokers}"));
    sd_kvlist_free(&v);
}

Test(scenario, errors_name_line_and_column) {
    parse_err("source kafka topic=t\nproduce abc\n", "t.drill:2:9:", "expected a count");
    parse_err("source kafka topic=t\nprodcue 10\n", "t.drill:2:1:", "found \"prodcue\"");
    parse_err("source kafka topic=t\nawait sink rows>=10 timeout=soon\n", "t.drill:2:29:", "expected a duration");
    parse_err("sink sqlite db=x\nstart\n", "t.drill:1:6:", "expected query=");
    parse_err("source kafka topic=t\nsink sqlite db=x query=\"SELECT 1\n", "t.drill:2:24:", "unterminated double quote");
    parse_err("start\n", "t.drill:1:1:", "expected a `pipeline` line");
    parse_err("source kafka topic=t\nproduce 1\nsource kafka topic=u\n", "t.drill:3:1:", "after the first step");
    parse_err("source kafka topic=t\nsource kafka topic=u\n", "t.drill:2:1:", "the first is at line 1");
    parse_err("pipeline x --mode {mood}\nstart\n", "t.drill:1:19:", "undefined variable {mood}");
    parse_err("source kafka topic=t\ncontract late=maybe\n", "t.drill:2:15:", "expected late=drop|quarantine|accept");
    parse_err("sink sqlite db=x query=y\nawait sink other rows>=1\n", "t.drill:2:1:", "declared sink named \"other\"");
    parse_err("source kafka topic=t\nexpect unique=lots\n", "t.drill:2:15:", "expected a whole number");
    parse_err("source kafka topic=t\nexpect uniq=1\n", "t.drill:2:8:", "expected a count name");
    parse_err("pipeline x\nstart\nkill signal=NINE\n", "t.drill:3:13:", "expected signal=KILL");
    parse_err("# only comments\n", "t.drill:1:1:", "expected at least one step");
}

Test(scenario, numbers_are_range_checked_never_wrapped) {
    parse_err("source kafka topic=t\nproduce 18446744073709552k\n", "t.drill:2:9:", "expected a count");
    parse_err("source kafka topic=t\nproduce 9223372036854775807k\n", "t.drill:2:9:", "expected a count");
    parse_err("events parcels=4294967296\nsource kafka topic=t\nproduce 1\n", "t.drill:1:16:", "expected 1 to 2147483647 parcels");
    parse_err("events locations=3000000000\nsource kafka topic=t\nproduce 1\n", "t.drill:1:18:", "locations");
    parse_err("events seed=99999999999999999999\nsource kafka topic=t\nproduce 1\n", "t.drill:1:13:", "expected seed=NUMBER");
    parse_err("source kafka topic=t\nproduce 0\n", "t.drill:2:9:", "expected a count of at least 1");
}

#include "lang.h"

Test(scenario, every_step_kind_has_one_table_entry_with_help) {
    for (int k = 0; k < SD_STEP__COUNT; k++) {
        const sd_lang_entry_t *e = sd_lang_step_entry((sd_step_kind_t)k);
        cr_assert_not_null(e, "step kind %d has no entry in the language table", k);
        cr_assert(e->meaning && e->meaning[0], "entry %s has no meaning for the reference", e->name);
    }
    for (const sd_lang_entry_t *e = sd_lang_entries; e->name; e++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        cr_assert_eq(sd_lang_help(f, e->name), 0, "help %s", e->name);
        fclose(f);
        cr_assert(strstr(buf, e->name), "help for %s names it: %s", e->name, buf);
        free(buf);
    }
}

Test(scenario, exclusive_and_required_keys_come_from_the_table) {
    parse_err("source kafka topic=t\npipeline x\nstart\nnetwork reset blackhole\n", "t.drill:4:15:", "found both");
    parse_err("source kafka topic=t\npipeline x\nstart\nnetwork count=3\n", "t.drill:4:1:", "network: expected one of latency=");
    parse_err("clock faketime\nsource kafka topic=t\npipeline x\nstart\nclock reset offset=1h\n", "t.drill:5:13:", "found both");
    parse_err("source kafka topic=t\nproduce 10 background\n", "t.drill:2:1:", "expected rate=R/s with background");
    parse_err("source kafka topic=t\nreplay 5 range=0:1-3\n", "t.drill:2:1:", "found both");
    parse_err("source kafka\nproduce 1\n", "t.drill:1:1:", "source: expected topic=");
    parse_err("sink sqlite db=x query=y\npipeline x\nstart\nkill mid-batch now\n", "t.drill:4:16:", "found both");
}

Test(scenario, what_check_accepts_run_can_do) {
    sd_kvlist_t over = {0};
    sd_kvlist_add(&over, "mode", "{nosuch}");
    sd_scenario_t *sc = NULL;
    char err[1024];
    cr_assert_eq(sd_scenario_parse_text("t.drill", canon, &over, &sc, err, sizeof(err)), SD_ERR_SCENARIO,
                 "a variable holding an unknown placeholder is refused at parse time");
    cr_assert(strstr(err, "{nosuch} is no run-time placeholder"), "got: %s", err);
    sd_kvlist_free(&over);
    sd_kvlist_add(&over, "mode", "{run}/x {{literal}}");
    sd_scenario_t *ok = parse_ok(canon, &over);
    sd_scenario_free(ok);
    sd_kvlist_free(&over);
    parse_err("source kafka topic=t\nsink sqlite db=x query=\"SELECT id FROM t; DELETE FROM t\"\nproduce 1\n", "t.drill:2:1:",
              "one SQL statement");
}

Test(scenario, a_16_megabyte_line_is_an_error_not_a_crash) {
    size_t n = 16u << 20;
    char *text = malloc(n + 64);
    strcpy(text, "source kafka topic=t\nstop timeout=");
    size_t k = strlen(text);
    memset(text + k, '0', n);
    text[k + n] = 0;
    sd_scenario_t *sc = NULL;
    char err[1024];
    cr_assert_eq(sd_scenario_parse_text("t.drill", text, NULL, &sc, err, sizeof(err)), SD_ERR_SCENARIO);
    cr_assert(strstr(err, "t.drill:2:14: stop timeout: expected a duration above zero"), "got: %.200s", err);
    free(text);
}

/* single quotes are literal, braces included; double quotes substitute */
Test(scenario, single_quotes_keep_braces_literal) {
    sd_scenario_t *sc = parse_ok("set v=1\nsource kafka topic=t\npipeline prog '{v}' \"{v}\" '{{x}}'\nproduce 1\n", NULL);
    cr_assert_eq(sc->argc, 4);
    char err[256];
    sd_kvlist_t vars = {0};
    char *a = sd_scenario_expand(sc->argv[1], &vars, err, sizeof(err));
    char *b = sd_scenario_expand(sc->argv[2], &vars, err, sizeof(err));
    char *c = sd_scenario_expand(sc->argv[3], &vars, err, sizeof(err));
    cr_expect_str_eq(a, "{v}");
    cr_expect_str_eq(b, "1");
    cr_expect_str_eq(c, "{{x}}");
    free(a); free(b); free(c);
    sd_scenario_free(sc);
}

/* a byte-order mark before the first line is no character of the drill;
 * a NUL byte is reported where it is */
Test(scenario, byte_order_mark_skipped_and_nul_located) {
    char path[] = "/tmp/sd_bom_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    const char bom[] = "\xef\xbb\xbfsource kafka topic=t\nproduce 1\n";
    cr_assert_eq(write(fd, bom, sizeof(bom) - 1), (ssize_t)sizeof(bom) - 1);
    close(fd);
    sd_scenario_t *sc = NULL;
    char err[512] = "";
    cr_expect_eq(sd_scenario_parse(path, NULL, &sc, err, sizeof(err)), SD_OK, "%s", err);
    sd_scenario_free(sc);
    fd = open(path, O_WRONLY | O_TRUNC);
    const char nul[] = "source kafka topic=t\nproduce 1\n# a\0b\n";
    cr_assert_eq(write(fd, nul, sizeof(nul) - 1), (ssize_t)sizeof(nul) - 1);
    close(fd);
    sc = NULL;
    cr_expect_eq(sd_scenario_parse(path, NULL, &sc, err, sizeof(err)), SD_ERR_SCENARIO);
    cr_expect(strstr(err, ":3:4: expected a text file, found a NUL byte") != NULL, "%s", err);
    unlink(path);
}

/* a step's text, as the console and the reports show it, has its user
 * variables filled in (run-time placeholders and single quotes kept) */
Test(scenario, step_text_shows_user_variables_filled_in) {
    sd_scenario_t *sc = parse_ok("set off=+1h n=5 d=2s\nclock faketime\nsource kafka topic=t\nproduce {n}\nclock offset={off}\n", NULL);
    cr_expect_str_eq(sc->steps[0].text, "produce 5");
    cr_expect_str_eq(sc->steps[1].text, "clock offset=+1h");
    sd_scenario_free(sc);
}

Test(scenario, version_line) {
    char *text = sd_util_fmt("%s", canon);
    char *with = sd_util_fmt("version files={run}/a.py,b.py git describe --always\n%s", text);
    sd_scenario_t *sc = parse_ok(with, NULL);
    cr_assert_str_eq(sc->version_files, "{run}/a.py,b.py");
    cr_assert_eq(sc->version_argc, 3);
    cr_assert_str_eq(sc->version_argv[0], "git");
    cr_assert_str_eq(sc->version_argv[2], "--always");
    cr_assert_null(sc->version_argv[3]);
    cr_assert_eq(sc->version_line, 1);
    sd_scenario_free(sc);
    free(with);
    /* a command alone, files alone */
    with = sd_util_fmt("version spark-submit --version\n%s", text);
    sc = parse_ok(with, NULL);
    cr_assert_null(sc->version_files);
    cr_assert_eq(sc->version_argc, 2);
    sd_scenario_free(sc);
    free(with);
    with = sd_util_fmt("version files=job.py\n%s", text);
    sc = parse_ok(with, NULL);
    cr_assert_eq(sc->version_argc, 0);
    cr_assert_str_eq(sc->version_files, "job.py");
    sd_scenario_free(sc);
    free(with);
    with = sd_util_fmt("version\n%s", text);
    parse_err(with, "t.drill:1:9:", "version: expected files=PATH");
    free(with);
    with = sd_util_fmt("version files=a files=b\n%s", text);
    parse_err(with, "t.drill:1:17:", "files= once");
    free(with);
    with = sd_util_fmt("version a\nversion b\n%s", text);
    parse_err(with, "t.drill:2:", "version");
    free(with);
    free(text);
}

/* expect on a fault's recovery figures: for every fault, or with step=LINE
 * for the fault step at that line; seconds take a fraction; step= must name
 * a fault step above, and no count of the whole run may share its line. */
Test(scenario, expect_recovery_figures) {
    char *with = sd_util_fmt("%sexpect     recovery_s<=2.5 rewritten_rows<=500\nexpect     step=15 replayed_input<=20 detect_s<1\n", canon);
    sd_scenario_t *sc = parse_ok(with, NULL);
    const sd_step_t *a = &sc->steps[sc->nsteps - 2], *b = &sc->steps[sc->nsteps - 1];
    cr_assert_eq(a->expect.n, 2);
    cr_assert(a->expect.v[0].per_fault);
    cr_assert_eq(a->expect.v[0].figure, SD_FIG_recovery_s);
    cr_assert_eq(a->expect.v[0].value, 2500, "seconds kept in ms: %lld", (long long)a->expect.v[0].value);
    cr_assert_eq(a->expect.v[0].step_line, 0);
    cr_assert_eq(a->expect.v[1].figure, SD_FIG_rewritten_rows);
    cr_assert_eq(a->expect.v[1].value, 500);
    cr_assert_eq(b->expect.v[0].step_line, 15);
    cr_assert_eq(b->expect.v[1].value, 1000);
    cr_assert_eq(b->expect.v[1].op, SD_OP_LT);
    cr_assert(!sc->steps[sc->nsteps - 3].expect.v[0].per_fault, "unique is a count of the run");
    sd_scenario_free(sc);
    free(with);
    with = sd_util_fmt("%sexpect step=12 recovery_s<=30\n", canon);
    parse_err(with, "t.drill:21:13:", "expected a fault step at line 12 (kill, stop, restart, pause, network, damage, broker, fault), found `produce 100`");
    free(with);
    with = sd_util_fmt("%sexpect step=10 recovery_s<=30\n", canon);
    parse_err(with, "t.drill:21:13:", "found no step there");
    free(with);
    with = sd_util_fmt("%sexpect step=15 recovery_s<=30 lost=0\n", canon);
    parse_err(with, "t.drill:21:31:", "lost is a count of the whole run");
    free(with);
    with = sd_util_fmt("%sexpect step=15\n", canon);
    parse_err(with, "t.drill:21:", "expected a fault's figure");
    free(with);
    with = sd_util_fmt("%sexpect recovery_s<=soon\n", canon);
    parse_err(with, "t.drill:21:20:", "expected seconds (a number like 30 or 2.5), found \"soon\"");
    free(with);
    with = sd_util_fmt("%sexpect recovery_time<=3\n", canon);
    parse_err(with, "t.drill:21:8:", "or a fault's figure (recovery_s");
    free(with);
}

/* broker steps: which broker, what it does, where it lands */
static const char *cluster_head =
    "source     kafka topic=s partitions=3 replication=3 min-insync=2 unclean-election=yes\n"
    "events     parcel-scans seed=1\n"
    "contract   id=event_id\n"
    "sink       sqlite db={run}/t.db query=\"SELECT event_id FROM t\"\n"
    "pipeline   prog {brokers}\n"
    "start\n";

static char *with_head(const char *steps) { return sd_util_fmt("%s%s", cluster_head, steps); }

Test(scenario, broker_steps) {
    char *t = with_head("broker kill leader-of=2 mid-batch\nbroker start\nbroker pause follower-of=0 for=5s\nbroker resume id=3\n"
                        "broker restart id=1 timeout=2m\nbroker stop id=2 for=30s optional\nexpect step=7 leaderless_s<=20\n");
    sd_scenario_t *sc = parse_ok(t, NULL);
    cr_assert_eq(sc->min_insync, 2);
    cr_assert_eq(sc->unclean_election, 1);
    const sd_step_t *k = &sc->steps[1];
    cr_assert_eq(k->kind, SD_STEP_BROKER);
    cr_assert_eq(k->proc.bop, SD_BROKER_KILL);
    cr_assert_eq(k->proc.leader_of, 2);
    cr_assert_eq(k->proc.broker_id, -1);
    cr_assert_eq(k->proc.follower_of, -1);
    cr_assert_eq(k->proc.mid_batch, SD_LAND_MID_BATCH);
    cr_assert_eq(sc->steps[2].proc.bop, SD_BROKER_START);
    cr_assert_eq(sc->steps[2].proc.broker_id, -1, "start without id=: every broker the run took down");
    cr_assert_eq(sc->steps[3].proc.follower_of, 0);
    cr_assert_eq(sc->steps[3].proc.delay_ms, 5000);
    cr_assert_eq(sc->steps[4].proc.bop, SD_BROKER_RESUME);
    cr_assert_eq(sc->steps[4].proc.broker_id, 3);
    cr_assert_eq(sc->steps[5].timeout_ms, 120000);
    cr_assert_eq(sc->steps[6].optional, 1);
    cr_assert_eq(sc->steps[7].expect.v[0].figure, SD_FIG_leaderless_s);
    sd_scenario_free(sc);
    free(t);
    t = with_head("broker isolate leader-of=1 mid-batch for=20s\nbroker rejoin id=2\n");
    sc = parse_ok(t, NULL);
    cr_assert_eq(sc->steps[1].proc.bop, SD_BROKER_ISOLATE);
    cr_assert_eq(sc->steps[1].proc.leader_of, 1);
    cr_assert_eq(sc->steps[1].proc.mid_batch, SD_LAND_MID_BATCH);
    cr_assert_eq(sc->steps[1].proc.delay_ms, 20000);
    cr_assert_eq(sc->steps[2].proc.bop, SD_BROKER_REJOIN);
    cr_assert_eq(sc->steps[2].proc.broker_id, 2);
    sd_scenario_free(sc);
    free(t);
}

Test(scenario, broker_step_errors) {
    static const struct { const char *step, *where, *what; } bad[] = {
        {"broker kill\n", "t.drill:7:", "expected id=N, leader-of=P or follower-of=P"},
        {"broker kill id=1 leader-of=0\n", "t.drill:7:", "leader-of"},
        {"broker stop leader-of=3\n", "t.drill:7:", "leader-of=3, but the source has 3 partitions"},
        {"broker start leader-of=0\n", "t.drill:7:", "expected id=N or nothing"},
        {"broker resume mid-batch\n", "t.drill:7:", "only kill, stop, pause, isolate and restart strike"},
        {"broker start id=1 for=3s\n", "t.drill:7:", "for= only with kill, stop, pause or isolate"},
        {"broker rejoin id=1 for=3s\n", "t.drill:7:", "for= only with kill, stop, pause or isolate"},
        {"broker rejoin leader-of=0\n", "t.drill:7:", "expected id=N or nothing"},
        {"broker isolate\n", "t.drill:7:", "expected id=N, leader-of=P or follower-of=P"},
        {"broker crash id=1\n", "t.drill:7:", "crash"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *t = with_head(bad[i].step);
        parse_err(t, bad[i].where, bad[i].what);
        free(t);
    }
}

Test(scenario, fault_commands) {
    char *t = with_head("fault outside mid-batch timeout=20s optional\n");
    char *full = sd_util_fmt("fault-command outside kubectl delete pod {run}\n%s", t);
    sd_scenario_t *sc = parse_ok(full, NULL);
    cr_assert_eq(sc->nfault_cmds, 1);
    cr_assert_str_eq(sc->fault_cmds[0].name, "outside");
    cr_assert_eq(sc->fault_cmds[0].argc, 4);
    cr_assert_str_eq(sc->fault_cmds[0].argv[3], "{run}");
    const sd_step_t *f = &sc->steps[1];
    cr_assert_eq(f->kind, SD_STEP_FAULT);
    cr_assert_str_eq(f->proc.variant, "outside");
    cr_assert_eq(f->proc.mid_batch, SD_LAND_MID_BATCH);
    cr_assert_eq(f->optional, 1);
    sd_scenario_free(sc);
    free(full);
    free(t);
    t = with_head("fault inside\n");
    full = sd_util_fmt("fault-command outside /bin/true\n%s", t);
    parse_err(full, "t.drill:8:7:", "expected a name a `fault-command` line declares (outside), found \"inside\"");
    free(full);
    free(t);
    parse_err("fault-command outside\n", "t.drill:1:", "fault-command: expected a name and a command line");
    parse_err("fault-command a /bin/true\nfault-command a /bin/false\n", "t.drill:2:", "expected a new name, found \"a\" again (line 1)");
}

static const char inst_head[] = "source kafka topic=t partitions=4\nsink sqlite db=x.db query=\"SELECT id FROM t\"\n"
                                "pipeline instances=3 prog --member {instance}\n";

Test(scenario, instances_and_their_steps) {
    char *t = sd_util_fmt("%s%s", inst_head,
                          "start\nproduce 10\nkill instance=2 mid-batch\nstart instance=2\nscale to=1 timeout=20s\n"
                          "pause instance=1 for=2s\nstop\nstart\nrestart instance=3\nscale to=0\n");
    sd_scenario_t *sc = parse_ok(t, NULL);
    cr_assert_eq(sc->instances, 3);
    cr_assert_eq(sc->argc, 3, "instances= is not part of the command line");
    cr_assert_str_eq(sc->argv[0], "prog");
    cr_assert_str_eq(sc->argv[2], "{instance}");
    cr_assert_eq(sc->steps[0].proc.instance, 0, "start without instance=: every instance");
    cr_assert_eq(sc->steps[2].proc.instance, 2);
    cr_assert_eq(sc->steps[2].proc.mid_batch, SD_LAND_MID_BATCH);
    cr_assert_eq(sc->steps[3].kind, SD_STEP_START);
    cr_assert_eq(sc->steps[3].proc.instance, 2, "start instance=K while others run");
    cr_assert_eq(sc->steps[4].kind, SD_STEP_SCALE);
    cr_assert_eq(sc->steps[4].proc.scale_to, 1);
    cr_assert_eq(sc->steps[4].timeout_ms, 20000);
    cr_assert_eq(sc->steps[5].proc.instance, 1);
    cr_assert_eq(sc->steps[7].kind, SD_STEP_START, "start after stop is accepted");
    cr_assert_eq(sc->steps[9].proc.scale_to, 0);
    sd_scenario_free(sc);
    free(t);
    /* without instances=: one instance, the command as written */
    sd_scenario_t *one = parse_ok("source kafka topic=t\nsink sqlite db=x.db query=\"SELECT id FROM t\"\npipeline prog a=b\nstart\n", NULL);
    cr_assert_eq(one->instances, 1);
    cr_assert_eq(one->argc, 2);
    sd_scenario_free(one);
}

Test(scenario, instance_errors) {
    static const struct { const char *steps, *where, *what; } bad[] = {
        {"start\nkill instance=4\n", "t.drill:5:", "expected an instance from 1 to 3"},
        {"start\nkill instance=0\n", "t.drill:5:", "instance"},
        {"start\nscale\n", "t.drill:5:", "to="},
        {"start\nscale to=9\n", "t.drill:5:", "to"},
        {"start\nstart\n", "t.drill:5:", "found it started already"},
        {"scale to=2\n", "t.drill:4:", "expected a `start` step before it"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *t = sd_util_fmt("%s%s", inst_head, bad[i].steps);
        parse_err(t, bad[i].where, bad[i].what);
        free(t);
    }
}

/* deploy lines, and the steps of a deployed pipeline: a send step's
 * arguments share the step's union with a process step's, so an `inject
 * late=` must not read as an instance= */
Test(scenario, deployed_pipeline_and_its_steps) {
    const char *t = "source kafka topic=t\nevents parcel-scans seed=1\ncontract id=event_id\n"
                    "sink sqlite db=x.db query=\"SELECT id FROM t\"\n"
                    "deploy start svc start {run}\ndeploy status svc status {deployment}\ndeploy kill svc kill {deployment}\n"
                    "start\nproduce 10\ninject late=2 malformed=1\nkill mid-batch\nrestart\nstop\n";
    sd_scenario_t *sc = parse_ok(t, NULL);
    cr_assert_not_null(sc->deploy[SD_DEPLOY_START].argv);
    cr_assert_eq(sc->deploy[SD_DEPLOY_START].argc, 3);
    cr_assert_str_eq(sc->deploy[SD_DEPLOY_STATUS].argv[2], "{deployment}");
    cr_assert_null(sc->deploy[SD_DEPLOY_STOP].argv, "stop is optional");
    cr_assert_null(sc->argv, "no pipeline line");
    cr_assert_eq(sc->steps[2].kind, SD_STEP_INJECT);
    sd_scenario_free(sc);
}
