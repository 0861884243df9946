/* explore.c - the outputs of `streamdrill explore`: explore.json (what
 * scripts read, and the marker that this folder is explore's to replace),
 * explore.md and explore.html (runs, distinct failures with their minimal
 * drills, where the faults landed, the time spent). Paths are written
 * relative to the explore folder, so it can be moved or attached as one. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explore.h"
#include "util.h"
#include "report.h"

static const char *sd_xr_rel(const sd_xreport_t *x, const char *path) {
    size_t n = strlen(x->dir);
    if (path && !strncmp(path, x->dir, n) && path[n] == '/') return path + n + 1;
    return path ? path : "";
}

static int sd_xr_json(const sd_xreport_t *x, char *err, size_t errlen) {
    json_t *root = json_object(), *runs = json_array(), *fails = json_array(), *cover = json_array();
    json_object_set_new(root, "file", json_string(x->file));
    json_object_set_new(root, "dir", json_string(x->dir));
    json_object_set_new(root, "seed", json_integer((json_int_t)x->seed));
    json_object_set_new(root, "jobs", json_integer(x->jobs));
    json_object_set_new(root, "tries", json_integer(x->tries));
    json_object_set_new(root, "broker_kind", json_string(x->broker_kind));
    json_object_set_new(root, "ended", json_string(x->ended ? x->ended : ""));
    json_object_set_new(root, "exit_code", json_integer(x->exit_code));
    json_object_set_new(root, "counts", json_pack("{s:i, s:i, s:i, s:i, s:i}", "runs", x->nruns, "passed", x->passed, "failed",
                                                  x->failed, "inconclusive", x->inconclusive, "distinct_failures", x->nfails));
    json_object_set_new(root, "seconds", json_pack("{s:f, s:f, s:f}", "exploring", x->explore_secs, "shrinking", x->shrink_secs,
                                                   "total", x->total_secs));
    for (int i = 0; i < x->nruns; i++) {
        const sd_xrun_t *r = &x->runs[i];
        json_array_append_new(runs, json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:f, s:i}", "run", r->run, "drill",
                                              sd_xr_rel(x, r->drill), "run_dir", sd_xr_rel(x, r->run_dir), "verdict",
                                              r->verdict[0] ? r->verdict : "not finished", "signature",
                                              r->signature ? r->signature : "", "reason", r->reason, "seconds", r->secs,
                                              "faults", r->faults));
    }
    for (int i = 0; i < x->nfails; i++) {
        const sd_xfail_t *f = &x->fails[i];
        json_array_append_new(
            fails, json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:b, s:i, s:i, s:f}", "signature",
                             f->signature, "first_run", f->first_run, "seen", f->seen, "actions_before", f->actions0,
                             "faults_before", f->faults0, "actions", f->actions, "faults", f->faults, "minimal",
                             sd_xr_rel(x, f->minimal), "steps", f->steps ? f->steps : "", "shrink_log", sd_xr_rel(x, f->log),
                             "report", sd_xr_rel(x, f->report), "candidates", f->candidates, "kept", f->kept, "runs", f->runs,
                             "stopped", f->stopped, "confirm_runs", f->confirm_runs, "confirm_failed", f->confirm_failed,
                             "seconds", f->secs));
        json_t *fo = json_array_get(fails, json_array_size(fails) - 1);
        json_object_set_new(fo, "walked_back", json_integer(f->walked_back));
        json_object_set_new(fo, "flaky_minimal", f->flaky ? json_pack("{s:s, s:i, s:i, s:i}", "drill", sd_xr_rel(x, f->flaky), "faults",
                                                                      f->flaky_faults, "confirm_failed", f->flaky_failed,
                                                                      "confirm_runs", f->flaky_runs)
                                                            : json_null());
    }
    for (int i = 0; i < x->ncover; i++)
        json_array_append_new(cover, json_pack("{s:s, s:s, s:i}", "kind", x->cover[i].kind, "where", x->cover[i].where, "count",
                                               x->cover[i].count));
    json_object_set_new(root, "runs", runs);
    json_object_set_new(root, "failures", fails);
    json_object_set_new(root, "coverage", cover);
    char *path = sd_util_fmt("%s/explore.json", x->dir);
    int rc = json_dump_file(root, path, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (rc) snprintf(err, errlen, "cannot write %s", path);
    free(path);
    json_decref(root);
    return rc ? -1 : 0;
}

static void sd_xr_md(const sd_xreport_t *x, sd_buf_t *b) {
    sd_buf_printf(b, "# streamdrill explore: %s\n\n", x->name);
    sd_buf_printf(b, "**%s**: %d runs (%d passed, %d failed, %d inconclusive), %d distinct failure%s. Seed %llu, %d at a time, "
                     "each shrink candidate run up to %d times, %s broker. Exploring stopped: %s. Time: %.0f s exploring, "
                     "%.0f s shrinking, %.0f s in all.\n\n",
                  x->nfails ? "FAILURE FOUND" : x->exit_code == 3 ? "INCONCLUSIVE" : x->exit_code ? "STOPPED" : "NO FAILURE FOUND",
                  x->nruns, x->passed, x->failed, x->inconclusive, x->nfails, x->nfails == 1 ? "" : "s", (unsigned long long)x->seed,
                  x->jobs, x->tries, x->broker_kind, x->ended ? x->ended : "", x->explore_secs, x->shrink_secs, x->total_secs);
    for (int i = 0; i < x->nfails; i++) {
        const sd_xfail_t *f = &x->fails[i];
        sd_buf_printf(b, "## Failure %d: ", i + 1);
        sd_report_md_code(b, f->signature);
        sd_buf_printf(b, "\n\nFirst seen in run %d, shown by %d run%s. Shrunk from %d actions (%d fault%s) to %d (%d fault%s) in %d "
                         "candidates and %d runs (%.0f s)%s. ",
                      f->first_run, f->seen, f->seen == 1 ? "" : "s", f->actions0, f->faults0, f->faults0 == 1 ? "" : "s",
                      f->actions, f->faults, f->faults == 1 ? "" : "s", f->candidates, f->runs, f->secs,
                      f->stopped ? ", stopped before the end (out of runs, or interrupted)" : "");
        if (f->confirm_runs)
            sd_buf_printf(b, "The minimal drill failed %d of %d reruns with this signature.\n\n", f->confirm_failed, f->confirm_runs);
        else
            sd_buf_puts(b, "The minimal drill was not rerun to confirm it (exploring was interrupted, or confirmation is off).\n\n");
        sd_buf_printf(b, "- minimal drill: `%s` (rerun: `streamdrill run %s`)\n- shrink log: `%s`\n", sd_xr_rel(x, f->minimal),
                      sd_xr_rel(x, f->minimal), sd_xr_rel(x, f->log));
        if (f->report && *f->report) sd_buf_printf(b, "- report of a failing rerun: `%s`\n", sd_xr_rel(x, f->report));
        if (f->flaky)
            sd_buf_printf(b, "- a smaller drill, `%s` (%d fault%s), failed only %d of %d reruns: the minimal drill is the shrink's "
                             "candidate %d steps back, the smallest that failed every rerun\n",
                          sd_xr_rel(x, f->flaky), f->flaky_faults, f->flaky_faults == 1 ? "" : "s", f->flaky_failed, f->flaky_runs,
                          f->walked_back);
        sd_buf_printf(b, "\nIts steps:\n\n```\n%s```\n\n", f->steps ? f->steps : "");
    }
    sd_buf_puts(b, "## Where the faults landed\n\n| fault | where | count |\n|---|---|---:|\n");
    for (int i = 0; i < x->ncover; i++)
        sd_buf_printf(b, "| %s | %s | %d |\n", x->cover[i].kind, x->cover[i].where, x->cover[i].count);
    if (!x->ncover) sd_buf_puts(b, "| (none) | | 0 |\n");
    sd_buf_puts(b, "\n## Runs\n\n| run | verdict | failed checks | reason | faults | seconds | drill |\n|---:|---|---|---|---:|---:|---|\n");
    for (int i = 0; i < x->nruns; i++) {
        const sd_xrun_t *r = &x->runs[i];
        sd_buf_printf(b, "| %d | %s | ", r->run, r->verdict[0] ? r->verdict : "not finished");
        sd_report_md_escape(b, r->signature ? r->signature : "");
        sd_buf_puts(b, " | ");
        sd_report_md_escape(b, r->reason);
        sd_buf_printf(b, " | %d | %.1f | `%s` |\n", r->faults, r->secs, sd_xr_rel(x, r->drill));
    }
}


static void sd_xr_html(const sd_xreport_t *x, sd_buf_t *b) {
    const char *cls = x->nfails ? "fail" : x->exit_code ? "inconclusive" : "pass";
    sd_report_html_head(b, "streamdrill explore: ", x->name, NULL);
    sd_buf_printf(b, "<div class=\"verdict %s\" id=\"verdict\"><h1>", cls);
    sd_h(b, x->name);
    sd_buf_printf(b, ": %d runs, %d passed, %d failed, %d inconclusive; %d distinct failure%s</h1></div>\n", x->nruns, x->passed,
                  x->failed, x->inconclusive, x->nfails, x->nfails == 1 ? "" : "s");
    sd_buf_printf(b, "<p>Seed %llu, %d at a time, shrink candidates run up to %d times, %s broker; exploring stopped: ",
                  (unsigned long long)x->seed, x->jobs, x->tries, x->broker_kind);
    sd_h(b, x->ended);
    sd_buf_printf(b, ". %.0f s exploring, %.0f s shrinking, %.0f s in all.</p>\n", x->explore_secs, x->shrink_secs, x->total_secs);
    for (int i = 0; i < x->nfails; i++) {
        const sd_xfail_t *f = &x->fails[i];
        sd_buf_printf(b, "<h2 id=\"failure-%d\">Failure %d: <code>", i + 1, i + 1);
        sd_h(b, f->signature);
        sd_buf_printf(b, "</code></h2>\n<p>First seen in run %d, shown by %d run%s. Shrunk from %d actions (%d faults) to %d (%d faults) "
                         "in %d candidates and %d runs. ",
                      f->first_run, f->seen, f->seen == 1 ? "" : "s", f->actions0, f->faults0, f->actions, f->faults, f->candidates,
                      f->runs);
        if (f->confirm_runs)
            sd_buf_printf(b, "The minimal drill failed <b>%d of %d</b> reruns with this signature.</p>\n", f->confirm_failed,
                          f->confirm_runs);
        else
            sd_buf_puts(b, "The minimal drill was not rerun to confirm it (exploring was interrupted, or confirmation is off).</p>\n");
        sd_buf_puts(b, "<p><a href=\"");
        sd_h(b, sd_xr_rel(x, f->minimal));
        sd_buf_puts(b, "\">minimal.drill</a> · <a href=\"");
        sd_h(b, sd_xr_rel(x, f->log));
        sd_buf_puts(b, "\">shrink log</a>");
        if (f->report && *f->report) {
            sd_buf_puts(b, " · <a href=\"");
            sd_h(b, sd_xr_rel(x, f->report));
            sd_buf_puts(b, "\">report of a failing rerun</a>");
        }
        if (f->flaky) {
            sd_buf_puts(b, " · <a href=\"");
            sd_h(b, sd_xr_rel(x, f->flaky));
            sd_buf_printf(b, "\">a smaller drill</a> that failed only %d of %d reruns", f->flaky_failed, f->flaky_runs);
        }
        sd_buf_puts(b, "</p>\n<pre>");
        sd_h(b, f->steps);
        sd_buf_puts(b, "</pre>\n");
    }
    sd_buf_puts(b, "<h2>Where the faults landed</h2>\n<table id=\"coverage\"><tr><th>fault</th><th>where</th><th>count</th></tr>\n");
    for (int i = 0; i < x->ncover; i++) {
        sd_buf_puts(b, "<tr><td>");
        sd_h(b, x->cover[i].kind);
        sd_buf_puts(b, "</td><td>");
        sd_h(b, x->cover[i].where);
        sd_buf_printf(b, "</td><td class=\"n\">%d</td></tr>\n", x->cover[i].count);
    }
    sd_buf_puts(b, "</table>\n<h2>Runs</h2>\n<table id=\"runs\"><tr><th>run</th><th>verdict</th><th>failed checks</th><th>reason</th>"
                   "<th>faults</th><th>seconds</th><th>drill</th><th>report</th></tr>\n");
    for (int i = 0; i < x->nruns; i++) {
        const sd_xrun_t *r = &x->runs[i];
        sd_buf_printf(b, "<tr><td class=\"n\">%d</td><td>", r->run);
        sd_h(b, r->verdict[0] ? r->verdict : "not finished");
        sd_buf_puts(b, "</td><td>");
        sd_h(b, r->signature);
        sd_buf_puts(b, "</td><td>");
        sd_h(b, r->reason);
        sd_buf_printf(b, "</td><td class=\"n\">%d</td><td class=\"n\">%.1f</td><td><a href=\"", r->faults, r->secs);
        sd_h(b, sd_xr_rel(x, r->drill));
        sd_buf_puts(b, "\">drill</a></td><td>");
        /* a run that passed wrote no report.html (explore's runs take
         * --reports failed): `streamdrill report DIR` writes it */
        char *page = r->run_dir ? sd_util_fmt("%s/report.html", r->run_dir) : NULL;
        if (page && sd_util_exists(page)) {
            sd_buf_puts(b, "<a href=\"");
            sd_h(b, sd_xr_rel(x, r->run_dir));
            sd_buf_puts(b, "/report.html\">report</a>");
        }
        free(page);
        sd_buf_puts(b, "</td></tr>\n");
    }
    sd_buf_puts(b, "</table>\n</body></html>\n");
}

int sd_report_explore(const struct sd_xreport_s *x, char *err, size_t errlen) {
    if (sd_xr_json(x, err, errlen)) return -1;
    sd_buf_t md, html;
    sd_buf_init(&md);
    sd_buf_init(&html);
    sd_xr_md(x, &md);
    sd_xr_html(x, &html);
    char *pm = sd_util_fmt("%s/explore.md", x->dir), *ph = sd_util_fmt("%s/explore.html", x->dir);
    int rc = sd_util_write_file(pm, md.data, md.len, err, errlen) || sd_util_write_file(ph, html.data, html.len, err, errlen) ? -1 : 0;
    free(pm);
    free(ph);
    sd_buf_free(&md);
    sd_buf_free(&html);
    return rc;
}
