/* charts.c - the run's charts, drawn by gnuplot from run.db alone.
 *
 *   timeline  events sent and acknowledged, rows and unique ids in the
 *             target, duplicates and unseen ids over time; each fault a
 *             vertical line with its name, pauses and network faults with a
 *             duration as shaded bands, quiescence marked
 *   latency   end-to-end latency (send to first write in the target) over
 *             time: p50, p95, p99 and max per time window; faults marked
 *   batches   rows per batch, in order, batches re-run by a later
 *             incarnation (replayed) apart from first runs
 *   state     the rows of state the pipeline kept after each batch (per
 *             query, summed over its stateful operators), and the
 *             watermark it reported, over time; faults marked
 *
 * Each is written as SVG (inlined in report.html) and PNG (for report.md)
 * into charts/, with the data files gnuplot read. Everything is
 * down-sampled to a few hundred points per series, so a run of ten million
 * events draws as fast as one of a hundred: the cost is the one scan of the
 * ledger table. Unique ids over time come from the per-id first write times
 * the reconciliation kept (table `latency`, every id up to 20,000, a strided
 * sample above, scaled to the total), so they exist when the target sink
 * gives write times. gnuplot is run without a shell, with the script as its
 * argument. */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"
#include "report.h"

#define SD_CHART_POINTS 400

typedef struct {
    const sd_report_model_t *m;
    sqlite3 *db;
    char *dir;          /* run_dir/charts */
    int64_t t0;         /* run start, epoch ms */
    int64_t t_end;      /* last event of interest, ms after t0 */
    sd_buf_t faults;    /* gnuplot arrows, labels and bands for the faults */
    int64_t series_ms;  /* the width of the series the run kept (0: none, the ledger is scanned) */
    char *scripts[8];   /* the charts' scripts (names inside dir), drawn by one gnuplot at the end */
    int nscripts;
} sd_charts_t;

static int64_t sd_q1(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return v;
}

/* Run one gnuplot on the n scripts (names inside dir), in dir, one after
 * the other (each starts with `reset`), its messages into gnuplot.log
 * there; 0 on success. One process for all: its start-up (the fonts of
 * the PNG terminal) is most of a small chart's time. The scripts name
 * their files relative to dir, so no path of the run folder is ever
 * gnuplot code, whatever it holds. */
static int sd_gnuplot(const char *dir, char *const *scripts, int n, const char *log, char *err, size_t errlen) {
    pid_t pid = fork();
    if (pid < 0) {
        sd_err_set(err, errlen, SD_ERR_IO, "charts: fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, 1);
        int lf = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (lf >= 0) dup2(lf, 2);
        if (chdir(dir) != 0) _exit(126);
        sd_util_child_cloexec(3);
        char *argv[10] = {"gnuplot"};
        for (int i = 0; i < n && i < 8; i++) argv[i + 1] = scripts[i];
        execvp("gnuplot", argv);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 126) {
        sd_err_set(err, errlen, SD_ERR_IO, "charts: cannot enter %s", dir);
        return -1;
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
        sd_err_set(err, errlen, SD_ERR_IO, "charts: gnuplot is not installed (Debian: apt-get install gnuplot-nox)");
        return -1;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        sd_err_set(err, errlen, SD_ERR_IO, "charts: gnuplot failed on %s%s (exit %d; see %s)", scripts[0], n > 1 ? " and the charts after it" : "",
                   WIFEXITED(st) ? WEXITSTATUS(st) : -1, log);
        return -1;
    }
    return 0;
}

/* Only letters, digits, spaces and a few signs reach a gnuplot label. */
static void sd_label(sd_buf_t *b, const char *s) {
    for (; *s; s++)
        if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || strchr(" -_.:=+", *s)) sd_buf_putc(b, *s);
}

/* Fault marks, shared by the timeline and the latency chart. */
static void sd_charts_faults(sd_charts_t *c) {
    const sd_report_model_t *m = c->m;
    double open_band = -1;
    int n = 0;
    for (int i = 0; i < m->nfaults; i++) {
        const sd_rfault_t *f = &m->faults[i];
        double x = (double)f->t_ms / 1000.0;
        if (!strcmp(f->kind, "pause")) { open_band = x; continue; }
        if (!strcmp(f->kind, "resume") && open_band >= 0) {
            sd_buf_printf(&c->faults, "set object %d rect from %.3f, graph 0 to %.3f, graph 1 fc rgb '#f6d7a7' fs solid 0.35 noborder behind\n",
                          ++n, open_band, x);
            sd_buf_printf(&c->faults, "set label 'pause' at %.3f, graph 0.97 font ',8' tc rgb '#a06000'\n", open_band);
            open_band = -1;
            continue;
        }
        const char *color = !strcmp(f->kind, "kill") || !strcmp(f->kind, "crash") ? "#c0392b" : !strcmp(f->kind, "restart") ? "#27ae60" : "#7f8c8d";
        sd_buf_printf(&c->faults, "set arrow from %.3f, graph 0 to %.3f, graph 1 nohead lc rgb '%s' dt 2 lw 1\n", x, x, color);
        sd_buf_puts(&c->faults, "set label '");
        sd_label(&c->faults, f->kind);
        sd_buf_printf(&c->faults, "' at %.3f, graph 0.98 rotate by 90 right offset character %d, 0 font ',8' tc rgb '%s'\n", x, i % 2 ? 1 : -1, color);
    }
    if (open_band >= 0)
        sd_buf_printf(&c->faults, "set object %d rect from %.3f, graph 0 to graph 1, graph 1 fc rgb '#f6d7a7' fs solid 0.35 noborder behind\n",
                      ++n, open_band);
    /* each recovery, from the fault until it caught up (recovery.c) */
    for (int i = 0; i < m->nfaults; i++) {
        const sd_rfault_t *f = &m->faults[i];
        if (!f->has_recovery || f->caught_ms <= f->t_ms) continue;
        sd_buf_printf(&c->faults, "set object %d rect from %.3f, graph 0 to %.3f, graph 0.06 fc rgb '#c0392b' fs solid 0.25 noborder front\n",
                      ++n, (double)f->t_ms / 1000.0, (double)f->caught_ms / 1000.0);
        sd_buf_printf(&c->faults, "set label 'recovery %.1fs' at %.3f, graph 0.03 offset character 0.3, 0 font ',8' tc rgb '#7b241c' front\n",
                      (double)(f->caught_ms - f->t_ms) / 1000.0, (double)f->t_ms / 1000.0);
    }
    /* quiescence: the end of the last `await quiescent`, or the implicit one */
    double q = -1;
    for (int i = 0; i < m->nsteps; i++)
        if (strstr(m->steps[i].text, "await quiescent") && !strcmp(m->steps[i].status, "ok") && m->steps[i].t_ms >= 0)
            q = (double)(m->steps[i].t_ms + m->steps[i].dur_ms) / 1000.0;
    for (int i = 0; i < m->nwarnings; i++)
        if (!strcmp(m->warnings[i].kind, "implicit-quiescence")) q = (double)m->warnings[i].t_ms / 1000.0;
    if (q >= 0) {
        sd_buf_printf(&c->faults, "set arrow from %.3f, graph 0 to %.3f, graph 1 nohead lc rgb '#2c3e50' dt 3 lw 1\n", q, q);
        sd_buf_printf(&c->faults, "set label 'quiescent' at %.3f, graph 0.5 rotate by 90 font ',8' tc rgb '#2c3e50'\n", q);
    }
}

static const char *sd_chart_head =
    "reset\n"
    "set terminal svg size 920,420 dynamic enhanced font 'DejaVu Sans,11' background '#ffffff'\n"
    "set output '%s.svg'\n"
    "set border lc rgb '#555555'\nset grid lc rgb '#e5e5e5'\nset key outside top center horizontal font ',9' maxrows 2\n"
    "set xlabel 'seconds since the run started'\nset title '%s' font ',12'\n";

static const char *sd_chart_png = "set terminal pngcairo size 920,420 enhanced font 'DejaVu Sans,10' background '#ffffff'\nset output '%s.png'\nreplot\n";

static int sd_chart_write(sd_charts_t *c, const char *name, const char *body, char *err, size_t errlen) {
    char *script = sd_util_fmt("%s/%s.gp", c->dir, name);
    FILE *f = fopen(script, "w");
    if (!f) {
        sd_err_set(err, errlen, SD_ERR_IO, "charts: write %s: %s", script, strerror(errno));
        free(script);
        return -1;
    }
    fputs(body, f);
    fclose(f);
    free(script);
    if (c->nscripts < (int)(sizeof(c->scripts) / sizeof(c->scripts[0]))) c->scripts[c->nscripts++] = sd_util_fmt("%s.gp", name);
    return 0;
}

/* A chart's script: the terminal, its output file and its title first... */
static void sd_chart_begin(sd_buf_t *g, const char *name, const char *title) {
    sd_buf_init(g);
    sd_buf_printf(g, sd_chart_head, name, title);
}

/* ...and last the PNG beside the SVG; gnuplot draws both. Frees g. */
static int sd_chart_done(sd_charts_t *c, sd_buf_t *g, const char *name, char *err, size_t errlen) {
    sd_buf_printf(g, sd_chart_png, name);
    int rc = sd_chart_write(c, name, g->data, err, errlen);
    sd_buf_free(g);
    return rc;
}

static void sd_chart_sum_offset(void *opaque, int p, int64_t o) {
    (void)p;
    *(int64_t *)opaque += o;
}

/* What the pipeline committed (the source offsets its commits name,
 * summed) over time, in committed.dat: the gap to "acknowledged" on the
 * timeline is its backlog. 1 when there is any. */
static int sd_chart_committed(sd_charts_t *c) {
    char *cdat = sd_util_fmt("%s/committed.dat", c->dir);
    FILE *f = fopen(cdat, "w");
    int have_committed = 0;
    sqlite3_stmt *st;
    if (f) {
        fprintf(f, "# seconds committed_offsets\n0 0\n");
        if (sqlite3_prepare_v2(c->db, "SELECT commit_ms, offsets FROM batch WHERE commit_ms IS NOT NULL AND offsets IS NOT NULL ORDER BY commit_ms",
                               -1, &st, NULL) == SQLITE_OK) {
            while (sqlite3_step(st) == SQLITE_ROW) {
                int64_t sum = 0;
                int any = sd_util_each_offset((const char *)sqlite3_column_text(st, 1), sd_chart_sum_offset, &sum);
                if (!any) continue;
                fprintf(f, "%.3f %lld\n", (double)(sqlite3_column_int64(st, 0) - c->t0) / 1000.0, (long long)sum);
                have_committed = 1;
            }
            sqlite3_finalize(st);
        }
        fclose(f);
    }
    free(cdat);
    return have_committed;
}

/* An older run.db, or a series the run could not keep exactly: the
 * timeline's counts from one scan of the ledger. The expected ids
 * acknowledged are the first acknowledged copy of each ledger sequence
 * number the target should hold, marked off in a bitmap. */
static void sd_timeline_scan(sd_charts_t *c, int64_t bucket, int nb, int64_t *sent, int64_t *acked, int64_t *expect) {
    sqlite3_stmt *st;
    int64_t maxseq = sd_q1(c->db, "SELECT max(seq) FROM ledger");
    unsigned char *seen = sd_util_xcalloc((size_t)(maxseq < 0 ? 0 : maxseq / 8 + 1), 1);
    if (sqlite3_prepare_v2(c->db, "SELECT queued_ms, acked_ms, offset IS NOT NULL, seq, disposition = 'target' FROM ledger", -1, &st, NULL) ==
        SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            int64_t q = sqlite3_column_int64(st, 0) - c->t0;
            int k = q < 0 ? 0 : q / bucket >= nb ? nb - 1 : (int)(q / bucket);
            sent[k]++;
            if (sqlite3_column_int(st, 2)) {
                int64_t a = sqlite3_column_int64(st, 1) - c->t0;
                int j = a < 0 ? 0 : a / bucket >= nb ? nb - 1 : (int)(a / bucket);
                acked[j]++;
                int64_t seq = sqlite3_column_int64(st, 3);
                if (sqlite3_column_int(st, 4) && seq >= 0 && seq <= maxseq && !(seen[seq / 8] & (1u << (seq % 8)))) {
                    seen[seq / 8] |= (unsigned char)(1u << (seq % 8));
                    expect[j]++;
                }
            }
        }
        sqlite3_finalize(st);
    }
    free(seen);
}

/* Events sent, acknowledged, target rows and unique ids over time. */
static int sd_chart_timeline(sd_charts_t *c, char *err, size_t errlen) {
    int64_t span = c->t_end > 1 ? c->t_end : 1;
    int64_t bucket = span / SD_CHART_POINTS + 1;
    int nb = (int)(span / bucket) + 2;
    int64_t *sent = sd_util_xcalloc((size_t)nb, sizeof(int64_t)), *acked = sd_util_xcalloc((size_t)nb, sizeof(int64_t));
    int64_t *uniq = sd_util_xcalloc((size_t)nb, sizeof(int64_t)), *expect = sd_util_xcalloc((size_t)nb, sizeof(int64_t));
    sqlite3_stmt *st;
    if (c->series_ms > 0 && sqlite3_prepare_v2(c->db, "SELECT t_ms, sent, acked, expected_acked FROM series", -1, &st, NULL) == SQLITE_OK) {
        /* the series the run kept (ledger_series.c): no scan of the ledger */
        while (sqlite3_step(st) == SQLITE_ROW) {
            int64_t q = sqlite3_column_int64(st, 0) - c->t0;
            int k = q < 0 ? 0 : q / bucket >= nb ? nb - 1 : (int)(q / bucket);
            sent[k] += sqlite3_column_int64(st, 1);
            acked[k] += sqlite3_column_int64(st, 2);
            expect[k] += sqlite3_column_int64(st, 3);
        }
        sqlite3_finalize(st);
    } else {
        sd_timeline_scan(c, bucket, nb, sent, acked, expect);
    }
    int64_t lat_rows = sd_q1(c->db, "SELECT count(*) FROM latency WHERE sink='target'");
    int64_t unique_total = sd_report_count(c->m, "observed_unique");
    int have_unique = lat_rows > 0 && unique_total > 0;
    double scale = have_unique ? (double)unique_total / (double)lat_rows : 0;
    if (have_unique && sqlite3_prepare_v2(c->db, "SELECT seen_ms FROM latency WHERE sink='target'", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            int64_t s = sqlite3_column_int64(st, 0) - c->t0;
            int k = s < 0 ? 0 : s / bucket >= nb ? nb - 1 : (int)(s / bucket);
            uniq[k]++;
        }
        sqlite3_finalize(st);
    }
    /* a sink without write times: unique ids from the sampled row counts,
     * capped at the final count of unique ids (exact when the extra copies
     * came after the originals, an upper bound otherwise) */
    int64_t *rows_at = NULL;
    int from_rows = 0;
    if (!have_unique && unique_total > 0 &&
        sqlite3_prepare_v2(c->db, "SELECT t_ms, rows FROM sample WHERE sink='target' ORDER BY t_ms", -1, &st, NULL) == SQLITE_OK) {
        rows_at = sd_util_xmalloc(sizeof(int64_t) * (size_t)nb);
        for (int k = 0; k < nb; k++) rows_at[k] = -1;
        while (sqlite3_step(st) == SQLITE_ROW) {
            int64_t s = sqlite3_column_int64(st, 0) - c->t0;
            int k = s < 0 ? 0 : s / bucket >= nb ? nb - 1 : (int)(s / bucket);
            rows_at[k] = sqlite3_column_int64(st, 1);
            from_rows = 1;
        }
        sqlite3_finalize(st);
        have_unique = from_rows;
    }
    char *dat = sd_util_fmt("%s/timeline.dat", c->dir);
    FILE *f = fopen(dat, "w");
    if (!f) { free(dat); free(sent); free(acked); free(uniq); free(rows_at); return sd_err_set(err, errlen, SD_ERR_IO, "charts: write timeline.dat"), -1; }
    fprintf(f, "# seconds sent acknowledged unique_in_target expected_acknowledged\n");
    int64_t cs = 0, ca = 0, ce = 0;
    double cu = 0;
    int64_t last_rows = 0;
    for (int k = 0; k < nb; k++) {
        cs += sent[k];
        ca += acked[k];
        ce += expect[k];
        if (from_rows) {
            if (rows_at[k] >= 0) last_rows = rows_at[k];
            cu = (double)(last_rows < unique_total ? last_rows : unique_total);
        } else {
            cu += (double)uniq[k] * scale;
        }
        fprintf(f, "%.3f %lld %lld %.0f %lld\n", (double)(k + 1) * (double)bucket / 1000.0, (long long)cs, (long long)ca, cu, (long long)ce);
    }
    free(expect);
    free(rows_at);
    fclose(f);
    free(dat);
    /* rows in the target, as sampled while the run went */
    char *sdat = sd_util_fmt("%s/target-rows.dat", c->dir);
    f = fopen(sdat, "w");
    int have_rows = 0;
    if (f) {
        fprintf(f, "# seconds rows_in_target\n0 0\n");
        if (sqlite3_prepare_v2(c->db, "SELECT t_ms, rows FROM sample WHERE sink='target' ORDER BY t_ms", -1, &st, NULL) == SQLITE_OK) {
            int64_t n = 0, total = sd_q1(c->db, "SELECT count(*) FROM sample WHERE sink='target'");
            int64_t every = total / SD_CHART_POINTS + 1;
            while (sqlite3_step(st) == SQLITE_ROW) {
                if (n++ % every) continue;
                fprintf(f, "%.3f %lld\n", (double)(sqlite3_column_int64(st, 0) - c->t0) / 1000.0, (long long)sqlite3_column_int64(st, 1));
                have_rows = 1;
            }
            sqlite3_finalize(st);
        }
        int64_t final_rows = sd_report_count(c->m, "observed_rows");
        if (final_rows >= 0 && c->m->ended_ms > 0) fprintf(f, "%.3f %lld\n", (double)(c->m->ended_ms - c->t0) / 1000.0, (long long)final_rows);
        fclose(f);
    }
    free(sdat);
    int have_committed = sd_chart_committed(c);
    sd_buf_t g;
    sd_chart_begin(&g, "timeline", "events sent and seen in the target");
    sd_buf_puts(&g, "set ylabel 'events'\nset yrange [0:*]\n");
    sd_buf_puts(&g, c->faults.data ? c->faults.data : "");
    int64_t dup = sd_report_count(c->m, "duplicate_rows");
    if (dup > 0) sd_buf_printf(&g, "set label 'duplicates: %lld extra rows in the target' at graph 0.55, graph 0.08 font ',9' tc rgb '#c0392b'\n", (long long)dup);
    sd_buf_printf(&g, "plot 'timeline.dat' using 1:2 with steps lw 2 lc rgb '#2980b9' title 'sent', \\\n"
                      "     '' using 1:3 with steps lw 2 lc rgb '#8e44ad' title 'acknowledged'");
    if (have_committed)
        sd_buf_printf(&g, ", \\\n     'committed.dat' using 1:2 with steps lw 1 lc rgb '#34495e' title 'committed by the pipeline (offsets)'");
    if (have_rows) sd_buf_printf(&g, ", \\\n     'target-rows.dat' using 1:2 with steps lw 2 lc rgb '#e67e22' title 'rows in the target'");
    if (have_unique)
        sd_buf_printf(&g, ", \\\n     'timeline.dat' using 1:4 with steps lw 2 lc rgb '#27ae60' title 'unique ids in the target%s', \\\n"
                          "     '' using 1:($5-$4 > 0 ? $5-$4 : 0) with steps lw 1 dt 2 lc rgb '#7f8c8d' title 'unseen (expected ids sent, not yet in the target)'",
                      from_rows ? " (at most: from the sampled rows)" : "");
    sd_buf_puts(&g, "\n");
    int rc = sd_chart_done(c, &g, "timeline", err, errlen);
    free(sent);
    free(acked);
    free(uniq);
    return rc;
}

static int sd_cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Latency quantiles per window of send time. 1 when there is no latency. */
static int sd_chart_latency(sd_charts_t *c, char *err, size_t errlen) {
    int64_t n = sd_q1(c->db, "SELECT count(*) FROM latency WHERE sink='target'");
    if (n <= 0) return 1;
    int64_t *sent = sd_util_xmalloc(sizeof(int64_t) * (size_t)n), *lat = sd_util_xmalloc(sizeof(int64_t) * (size_t)n);
    sqlite3_stmt *st;
    int64_t k = 0;
    if (sqlite3_prepare_v2(c->db, "SELECT sent_ms, seen_ms FROM latency WHERE sink='target' ORDER BY sent_ms", -1, &st, NULL) == SQLITE_OK) {
        while (k < n && sqlite3_step(st) == SQLITE_ROW) {
            sent[k] = sqlite3_column_int64(st, 0) - c->t0;
            int64_t l = sqlite3_column_int64(st, 1) - sqlite3_column_int64(st, 0);
            lat[k++] = l < 0 ? 0 : l;
        }
        sqlite3_finalize(st);
    }
    n = k;
    char *dat = sd_util_fmt("%s/latency.dat", c->dir);
    FILE *f = fopen(dat, "w");
    free(dat);
    if (!f) { free(sent); free(lat); return sd_err_set(err, errlen, SD_ERR_IO, "charts: write latency.dat"), -1; }
    fprintf(f, "# seconds p50_ms p95_ms p99_ms max_ms ids\n");
    /* at least 20 ids per window, so p95 and p99 mean something */
    int windows = n / 20 < 60 ? (int)(n / 20) : 60;
    if (windows < 1) windows = 1;
    int64_t *w = sd_util_xmalloc(sizeof(int64_t) * (size_t)n);
    for (int i = 0; i < windows; i++) {
        int64_t a = n * i / windows, b = n * (i + 1) / windows;
        if (b <= a) continue;
        int64_t m = b - a;
        memcpy(w, lat + a, sizeof(int64_t) * (size_t)m);
        qsort(w, (size_t)m, sizeof(int64_t), sd_cmp_i64);
        fprintf(f, "%.3f %lld %lld %lld %lld %lld\n", (double)(sent[a] + sent[b - 1]) / 2000.0, (long long)w[(m - 1) * 50 / 100],
                (long long)w[(m - 1) * 95 / 100], (long long)w[(m - 1) * 99 / 100], (long long)w[m - 1], (long long)m);
    }
    fclose(f);
    free(w);
    free(sent);
    free(lat);
    sd_buf_t g;
    sd_chart_begin(&g, "latency", "end-to-end latency: sent to first written in the target");
    sd_buf_puts(&g, "set ylabel 'milliseconds'\nset logscale y\nset xlabel 'seconds since the run started (when the events were sent)'\n");
    sd_buf_puts(&g, c->faults.data ? c->faults.data : "");
    sd_buf_printf(&g, "plot 'latency.dat' using 1:($2+1) with linespoints pt 7 ps 0.4 lw 2 lc rgb '#27ae60' title 'p50', \\\n"
                      "     '' using 1:($3+1) with lines lw 2 lc rgb '#f39c12' title 'p95', \\\n"
                      "     '' using 1:($4+1) with lines lw 2 lc rgb '#d35400' title 'p99', \\\n"
                      "     '' using 1:($5+1) with lines lw 1 dt 2 lc rgb '#c0392b' title 'max'\n");
    int rc = sd_chart_done(c, &g, "latency", err, errlen);
    return rc;
}

/* Rows per batch, first runs and re-runs. 1 when there are no batches. */
static int sd_chart_batches(sd_charts_t *c, char *err, size_t errlen) {
    int64_t n = sd_q1(c->db, "SELECT count(*) FROM batch WHERE rows IS NOT NULL");
    if (n <= 0) return 1;
    char *dat = sd_util_fmt("%s/batches.dat", c->dir);
    FILE *f = fopen(dat, "w");
    free(dat);
    if (!f) return sd_err_set(err, errlen, SD_ERR_IO, "charts: write batches.dat"), -1;
    fprintf(f, "# index incarnation batch first_run_rows replayed_rows\n");
    sqlite3_stmt *st;
    int64_t every = n / SD_CHART_POINTS + 1, i = 0, shown = 0;
    const char *sql = "SELECT b.incarnation, b.id, b.rows, EXISTS(SELECT 1 FROM batch e WHERE e.id = b.id AND e.incarnation < b.incarnation)"
                      " FROM batch b WHERE b.rows IS NOT NULL ORDER BY coalesce(b.begin_ms, b.commit_ms), b.incarnation";
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (i++ % every) continue;
            int64_t rows = sqlite3_column_int64(st, 2);
            int rerun = sqlite3_column_int(st, 3);
            fprintf(f, "%lld %d %lld %lld %lld\n", (long long)shown++, sqlite3_column_int(st, 0), (long long)sqlite3_column_int64(st, 1),
                    (long long)(rerun ? 0 : rows < 0 ? 0 : rows), (long long)(rerun ? (rows < 0 ? 0 : rows) : 0));
        }
        sqlite3_finalize(st);
    }
    fclose(f);
    sd_buf_t g;
    sd_chart_begin(&g, "batches", "rows per batch, in order (a re-run is a batch a later incarnation ran again)");
    /* a few bars are labelled with their batch ids, the numbers the text
     * uses ("batch 2"); many are counted in the order they began */
    sd_buf_puts(&g, "set ylabel 'rows'\nset yrange [0:*]\nset style fill solid 0.8 noborder\nset boxwidth 0.8\n");
    int labelled = shown <= 30;
    sd_buf_puts(&g, labelled ? "set xlabel 'batch id, in the order the batches began'\n"
                             : "set xlabel 'batches, in the order they began'\nset format x '%.0f'\n");
    sd_buf_printf(&g, "plot 'batches.dat' using 1:4%s with boxes lc rgb '#2980b9' title 'first run', \\\n"
                      "     '' using 1:5 with boxes lc rgb '#c0392b' title 're-run (replayed)'\n", labelled ? ":xticlabels(3)" : "");
    int rc = sd_chart_done(c, &g, "batches", err, errlen);
    return rc;
}

/* State rows after each batch per query, and the watermark. 1 when the
 * pipeline reported no state. */
static int sd_chart_state(sd_charts_t *c, char *err, size_t errlen) {
    if (sd_q1(c->db, "SELECT count(*) FROM state") <= 0) return 1;
    int64_t first_event = sd_q1(c->db, "SELECT min(event_time_ms) FROM sent WHERE kind = 'valid'");
    char *dat = sd_util_fmt("%s/state.dat", c->dir);
    FILE *f = fopen(dat, "w");
    free(dat);
    if (!f) return sd_err_set(err, errlen, SD_ERR_IO, "charts: write state.dat"), -1;
    sqlite3_stmt *st;
    const char *sql = "WITH k AS (SELECT query, batch, max(t_ms) AS t FROM state GROUP BY query, batch)"
                      " SELECT s.query, s.t_ms, sum(coalesce(s.rows_total, 0)), max(s.watermark_ms) FROM state s"
                      " JOIN k ON k.query = s.query AND k.batch = s.batch AND k.t = s.t_ms GROUP BY s.query, s.batch ORDER BY s.query, s.t_ms";
    char queries[8][64];
    int nq = 0, has_wm = 0;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *q = (const char *)sqlite3_column_text(st, 0);
            if (!q) q = "";
            if (!nq || strcmp(queries[nq - 1], q)) {
                if (nq == 8) break;
                if (nq) fprintf(f, "\n\n");
                snprintf(queries[nq++], sizeof(queries[0]), "%s", q);
                char *safe = sd_util_safe_text(q, 0); /* a data file's comment: one line */
                fprintf(f, "# query %s: seconds state_rows watermark_minutes\n", safe);
                free(safe);
            }
            double x = (double)(sqlite3_column_int64(st, 1) - c->t0) / 1000.0;
            int wm = sqlite3_column_type(st, 3) != SQLITE_NULL && first_event >= 0;
            if (wm) has_wm = 1;
            if (wm) fprintf(f, "%.3f %lld %.3f\n", x, (long long)sqlite3_column_int64(st, 2),
                            (double)(sqlite3_column_int64(st, 3) - first_event) / 60000.0);
            else fprintf(f, "%.3f %lld NaN\n", x, (long long)sqlite3_column_int64(st, 2));
        }
        sqlite3_finalize(st);
    }
    fclose(f);
    sd_buf_t g;
    sd_chart_begin(&g, "state", "state rows kept after each batch, and the watermark");
    sd_buf_puts(&g, "set ylabel 'state rows'\nset yrange [0:*]\n");
    if (has_wm) sd_buf_puts(&g, "set y2label 'watermark (event-time minutes after the first event)'\nset y2tics\nset ytics nomirror\n");
    sd_buf_puts(&g, c->faults.data ? c->faults.data : "");
    static const char *const colors[] = {"#8e44ad", "#2980b9", "#16a085", "#d35400", "#2c3e50", "#c0392b", "#7f8c8d", "#27ae60"};
    sd_buf_puts(&g, "plot ");
    for (int i = 0; i < nq; i++) {
        sd_buf_printf(&g, "%s'state.dat' index %d using 1:2 with linespoints pt 7 ps 0.4 lw 2 lc rgb '%s' title 'state rows%s", i ? ", \\\n     " : "",
                      i, colors[i], queries[i][0] ? " of " : "");
        sd_label(&g, queries[i]);
        sd_buf_puts(&g, "'");
        if (has_wm)
            sd_buf_printf(&g, ", \\\n     'state.dat' index %d using 1:3 axes x1y2 with steps lw 1 dt 2 lc rgb '%s' title 'watermark%s", i,
                          colors[i], queries[i][0] ? " of " : ""), sd_label(&g, queries[i]), sd_buf_puts(&g, "'");
    }
    sd_buf_puts(&g, "\n");
    int rc = sd_chart_done(c, &g, "state", err, errlen);
    return rc;
}

static sd_err_t sd_charts_write(const sd_report_model_t *m, const char *path, char *err, size_t errlen) {
    (void)path;
    sd_charts_t c;
    memset(&c, 0, sizeof(c));
    c.m = m;
    c.dir = sd_util_fmt("%s/charts", m->run_dir);
    sd_err_t e = sd_util_mkdirs(c.dir, err, errlen);
    if (e) { free(c.dir); return e; }
    char *dbp = sd_util_fmt("%s/run.db", m->run_dir);
    if (sqlite3_open_v2(dbp, &c.db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        e = sd_err_set(err, errlen, SD_ERR_IO, "charts: open %s", dbp);
        sqlite3_close(c.db);
        free(dbp);
        free(c.dir);
        return e;
    }
    free(dbp);
    sqlite3_busy_timeout(c.db, 5000);
    c.t0 = m->started_ms;
    c.series_ms = sd_q1(c.db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'series_bucket_ms'");
    /* the newest acknowledgement: the end of the series' last bucket that has one, else the ledger's */
    char *acked = c.series_ms > 0 ? sd_util_fmt("SELECT max(t_ms) + %lld - 1 AS x FROM series WHERE acked > 0", (long long)c.series_ms)
                                  : sd_util_fmt("SELECT max(acked_ms) AS x FROM ledger");
    char *q = sd_util_fmt("SELECT max(x) FROM (%s UNION ALL SELECT max(t_ms) FROM sample UNION ALL SELECT max(t_ms) FROM fault)", acked);
    int64_t last = sd_q1(c.db, q);
    free(q);
    free(acked);
    if (m->ended_ms > last) last = m->ended_ms;
    c.t_end = last > c.t0 ? last - c.t0 : 1000;
    char *log = sd_util_fmt("%s/gnuplot.log", c.dir);
    unlink(log);
    free(log);
    sd_buf_init(&c.faults);
    sd_charts_faults(&c);
    int rc = sd_chart_timeline(&c, err, errlen);
    if (rc >= 0) rc = sd_chart_latency(&c, err, errlen) < 0 ? -1 : 0;
    if (rc >= 0) rc = sd_chart_batches(&c, err, errlen) < 0 ? -1 : 0;
    if (rc >= 0) rc = sd_chart_state(&c, err, errlen) < 0 ? -1 : 0;
    if (rc >= 0 && c.nscripts) {
        char *glog = sd_util_fmt("%s/gnuplot.log", c.dir);
        rc = sd_gnuplot(c.dir, c.scripts, c.nscripts, glog, err, errlen);
        free(glog);
    }
    for (int i = 0; i < c.nscripts; i++) free(c.scripts[i]);
    sd_buf_free(&c.faults);
    sqlite3_close(c.db);
    free(c.dir);
    return rc < 0 ? SD_ERR_IO : SD_OK;
}

const sd_report_writer_t sd_report_charts = {"charts", "charts", sd_charts_write};
