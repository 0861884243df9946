/* jsonfast.h - a sink row's id (and write time) without a parser, when the
 * row is plain: a flat JSON object of ASCII strings without escapes, plain
 * numbers, true, false and null. Its answer is the full parser's
 * (sd_jsonscan_id_time) on every row it answers for; on any other row it
 * says SD_JSONFAST_UNSURE and the caller asks the full parser. */
#ifndef SD_JSONFAST_H
#define SD_JSONFAST_H

#include <stddef.h>
#include <stdint.h>

#define SD_JSONFAST_UNSURE (-2)

/* As sd_jsonscan_id_time (jsonscan.h), or SD_JSONFAST_UNSURE. */
int sd_jsonfast_id_time(const char *json, size_t len, const char *field, char *out, size_t outlen, const char *time_field,
                        int64_t *t_ms, int (*parse_time)(const char *, int64_t *));

#endif
