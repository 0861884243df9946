/* json.h - JSON allows numbers of any size; simdjson and jansson, the
 * harness's parsers, do not. What every reader of sink rows and event logs
 * shares so that valid JSON has one answer whichever parser reads it. */
#ifndef SD_JSON_H
#define SD_JSON_H

#include <jansson.h>
#include <stddef.h>

/* The length of the number at the start of s[0..len) by JSON's grammar (0:
 * none), *integer 1 when it has no fraction and no exponent; with
 * leading_zeros, digits such as 007 are taken too (a value as a sink may
 * write it, not JSON). */
size_t sd_json_number_span(const char *s, size_t len, int *integer, int leading_zeros);

/* JSON allows numbers of any size; simdjson and jansson refuse an integer
 * past 64 bits and a float past a double's range. Such a number (outside
 * strings) is rewritten as a string of its own text into a new buffer
 * (*out, malloc'd, *outlen bytes): every reader then sees the same valid
 * document, and an integer id of any size is its decimal text. 1 when
 * something was rewritten, 0 when there was nothing to (*out NULL). */
int sd_json_quote_wide_numbers(const char *in, size_t len, char **out, size_t *outlen);

/* jansson's json_loadb (flags as its), reading numbers too wide for it as
 * sd_json_quote_wide_numbers says: the one way the harness parses a row or
 * an event with jansson. */
json_t *sd_json_loadb(const char *text, size_t len, size_t flags);

#endif
