/* init.h - `streamdrill init`: a commented starter drill for a pipeline
 * command and a sink kind. Without a pipeline command the drill drives the
 * reference pipeline ({libexec}/refpipe) and runs green as written. */
#ifndef SD_INIT_H
#define SD_INIT_H

#include "err.h"
#include "util.h"

typedef struct {
    const char *pipeline;  /* the pipeline's command line as the drill's `pipeline` line; NULL: refpipe */
    const char *sink;      /* sqlite (default), postgres, kafka, jsonl, spark-files, delta, command */
    const char *progress;  /* markers, group, spark or sink; NULL: markers for refpipe, else group */
    const char *name;      /* the scenario's name; NULL: first-drill */
} sd_init_opts_t;

/* Append the drill's text to out. SD_ERR_USAGE (err filled) for an
 * unknown sink kind or progress source, or a pipeline line that is empty
 * or spans lines. *placeholder: the name of a {placeholder} left for the
 * user to fill in (a sink path the command line does not show), or NULL. */
sd_err_t sd_init_drill(const sd_init_opts_t *o, sd_buf_t *out, const char **placeholder, char *err, size_t errlen);
/* The sink kinds init knows, for messages and --help. */
const char *sd_init_sink_kinds(void);

#endif
