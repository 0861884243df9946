/* jsonscan.h - the id and write time of one JSON sink row (simdjson
 * behind a C interface; see jsonscan.cpp for why and for the semantics). */
#ifndef SD_JSONSCAN_H
#define SD_JSONSCAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The top-level field `field` of the JSON object text json (len bytes, no
 * padding needed) into out as text; its length, or -1 when the text is not
 * a valid JSON object or has no string or integer field of that name. With
 * time_field, *t_ms gets that field as epoch ms (a number, a string of
 * digits, or a string parse_time accepts), INT64_MIN otherwise. */
int sd_jsonscan_id_time(const char *json, size_t len, const char *field, char *out, size_t outlen, const char *time_field,
                        int64_t *t_ms, int (*parse_time)(const char *, int64_t *));

#ifdef __cplusplus
}
#endif

#endif
