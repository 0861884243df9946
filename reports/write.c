/* write.c - a run folder's reports: its run.db loaded once into the model
 * (model.c), then each writer in turn. The one file of reports/ that calls
 * the writers; they call model.c, never this. */
#include <stdio.h>
#include <stdlib.h>

#include "report.h"
#include "util.h"

/* charts before the reports that show them */
static const sd_report_writer_t *const sd_report_writers[] = {&sd_report_summary, &sd_report_junit, &sd_report_charts, &sd_report_markdown,
                                                              &sd_report_export, &sd_report_html, NULL};

sd_err_t sd_report_write_all(const char *run_dir, int machine_only, sd_buf_t *written, sd_buf_t *missing, sd_buf_t *timings, char *err,
                             size_t errlen) {
    sd_report_model_t *m = NULL;
    sd_err_t e = sd_report_model_load(run_dir, &m, err, errlen);
    if (e) return e;
    for (int i = 0; sd_report_writers[i]; i++) {
        if (machine_only && sd_report_writers[i] != &sd_report_summary && sd_report_writers[i] != &sd_report_junit) continue;
        char *path = sd_util_fmt("%s/%s", run_dir, sd_report_writers[i]->file);
        char werr[1024];
        int64_t t0 = sd_util_mono_us();
        sd_err_t we = sd_report_writers[i]->write(m, path, werr, sizeof(werr));
        if (timings)
            sd_buf_printf(timings, "%s%s=%.3fs", timings->len ? " " : "", sd_report_writers[i]->name,
                          (double)(sd_util_mono_us() - t0) / 1e6);
        if (we && !e) {
            e = we;
            sd_err_set(err, errlen, we, "%s", werr);
        }
        if (!we && written) sd_buf_printf(written, "%s%s", written->len ? " " : "", sd_report_writers[i]->file);
        free(path);
    }
    for (int i = 0; missing && i < m->nmissing; i++) sd_buf_printf(missing, "%s\n", m->missing[i]);
    sd_report_model_free(m);
    return e;
}
