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

/* The same for the line at p, whose end is found on the way: the bytes up
 * to the first newline within [p, p + avail) (never read past), *len the
 * row's (a CR before the newline not counted, 0 for an empty line, which
 * gives -1) and *used the line's, its newline included. SD_JSONFAST_UNSURE
 * when the row is not plain, or no newline comes within avail or 1,023
 * bytes: the caller finds the line's end itself and asks the full parser
 * (*len and *used are not to be read then). */
int sd_jsonfast_line(const char *p, size_t avail, size_t *len, size_t *used, const char *field, char *out, size_t outlen,
                     const char *time_field, int64_t *t_ms, int (*parse_time)(const char *, int64_t *));

#endif
