/* props.h - a client properties file, as kcat's -F and the Java client's
 * --command-config take one (props.c). */
#ifndef SD_PROPS_H
#define SD_PROPS_H

#include "err.h"
#include "util.h"

/* Read the file at path: KEY=VALUE lines (spaces around '=' dropped),
 * blank lines and lines starting with '#' or '!' skipped. ${ENV:NAME} in a
 * value is the environment variable NAME, so that the file need not hold
 * the secret; one that is unset is an error naming it. The properties are
 * appended to into in the file's order. An error (SD_ERR_USAGE, or the
 * file's own) names the file and line, never a value. */
sd_err_t sd_props_read(const char *path, sd_kvlist_t *into, char *err, size_t errlen);

#endif
