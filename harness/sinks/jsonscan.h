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

/* JSON allows numbers of any size; simdjson and jansson refuse an integer
 * past 64 bits and a float past a double's range. Such a number (outside
 * strings) is rewritten as a string of its own text into a new buffer
 * (*out, malloc'd, *outlen bytes): every reader then sees the same valid
 * document, and an integer id of any size is its decimal text. 1 when
 * something was rewritten, 0 when there was nothing to (*out NULL). */
int sd_json_quote_wide_numbers(const char *in, size_t len, char **out, size_t *outlen);

/* jansson's json_loadb (flags as its), reading numbers too wide for it as
 * sd_json_quote_wide_numbers says: the one way the harness parses a row or
 * an event with jansson (sink.c). */
struct json_t;
struct json_t *sd_json_loadb(const char *text, size_t len, size_t flags);

#ifdef __cplusplus
}
#endif

#endif
