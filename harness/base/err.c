/* err.c - names and exit codes of sd_err_t (see err.h). */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

static const char *const sd_err_names[SD_ERR__COUNT] = {
    [SD_OK] = "ok",
    [SD_ERR_CHECK_FAILED] = "check-failed",
    [SD_ERR_USAGE] = "bad-usage",
    [SD_ERR_SCENARIO] = "bad-scenario",
    [SD_ERR_BROKER] = "broker-unreachable",
    [SD_ERR_PIPELINE] = "pipeline-never-started",
    [SD_ERR_QUIESCENCE] = "no-quiescence",
    [SD_ERR_SINK] = "sink-unreadable",
    [SD_ERR_TRIMMED] = "data-trimmed",
    [SD_ERR_IO] = "harness-io",
    [SD_ERR_INTERNAL] = "internal",
    [SD_ERR_INTERRUPTED] = "interrupted",
    [SD_ERR_TIMEOUT] = "timeout",
    [SD_ERR_NOTHING_JUDGED] = "nothing-judged",
    [SD_ERR_NOT_LANDED] = "fault-not-landed",
    [SD_ERR_NOT_CAUGHT_UP] = "not-caught-up",
    [SD_ERR_NOT_MEASURED] = "not-measured",
    [SD_ERR_CHECKPOINT] = "checkpoint-damaged",
    [SD_ERR_REGISTRY] = "registry-unreachable",
    [SD_ERR_NOT_JUDGED] = "schema-not-judged",
};

const char *sd_strerror(sd_err_t err) {
    if ((int)err < 0 || err >= SD_ERR__COUNT || !sd_err_names[err])
        return "unknown";
    return sd_err_names[err];
}

int sd_err_is_inconclusive(sd_err_t err) {
    switch (err) {
    case SD_ERR_BROKER:
    case SD_ERR_PIPELINE:
    case SD_ERR_QUIESCENCE:
    case SD_ERR_SINK:
    case SD_ERR_TRIMMED:
    case SD_ERR_TIMEOUT:
    case SD_ERR_NOTHING_JUDGED:
    case SD_ERR_NOT_LANDED:
    case SD_ERR_NOT_CAUGHT_UP:
    case SD_ERR_NOT_MEASURED:
    case SD_ERR_CHECKPOINT:
    case SD_ERR_REGISTRY:
    case SD_ERR_NOT_JUDGED:
        return 1;
    default:
        return 0;
    }
}

int sd_err_exit_code(sd_err_t err) {
    switch (err) {
    case SD_OK: return SD_EXIT_PASS;
    case SD_ERR_CHECK_FAILED: return SD_EXIT_FAIL;
    case SD_ERR_USAGE:
    case SD_ERR_SCENARIO: return SD_EXIT_USAGE;
    case SD_ERR_INTERRUPTED: return SD_EXIT_INTERRUPTED;
    case SD_ERR_IO:
    case SD_ERR_INTERNAL: return SD_EXIT_INTERNAL;
    default:
        return sd_err_is_inconclusive(err) ? SD_EXIT_INCONCLUSIVE : SD_EXIT_INTERNAL;
    }
}

sd_err_t sd_err_set(char *err, size_t errlen, sd_err_t code, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}
