/* jschema.h - JSON Schema (draft 7, and draft 4's boolean exclusive bounds)
 * validation of JSON values: the check a producer's JSON Schema serializer
 * makes before it sends an event (`events ... format=json-schema`), and
 * the one a consumer makes before it trusts one.
 *
 * The keywords it checks: type, enum, const, the numeric bounds
 * (minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf
 * exactly, on the number's decimal digits), the string ones (minLength,
 * maxLength in code points, pattern as an ECMA-262 expression matched by
 * PCRE2 under bounds: ecmare.h; format "regex" alike), properties, required,
 * additionalProperties, patternProperties, propertyNames, dependencies,
 * minProperties, maxProperties, items, additionalItems, contains,
 * minItems, maxItems, uniqueItems, allOf, anyOf, oneOf, not, if/then/else,
 * definitions ($defs) and $ref to a place in the same schema ("#", "#/...");
 * under the 2019-09 and 2020-12 dialects (the root's $schema) a $ref's
 * siblings too, dependentRequired and dependentSchemas; the
 * annotations ($schema, $id, $comment, title, description, default,
 * examples, readOnly, writeOnly, format but "regex") are read and not checked. A
 * schema with any other keyword, or a $ref elsewhere, is refused at
 * compile time, by name: a keyword it does not check is never passed over
 * quietly. A pattern ECMA-262 does not have (or that the harness does not
 * follow) is refused the same way. Proven against the JSON Schema Test
 * Suite's draft-7 files (tests/unit/test_jschema.c). */
#ifndef SD_JSCHEMA_H
#define SD_JSCHEMA_H

#include <jansson.h>
#include <stddef.h>

typedef struct sd_jschema_s sd_jschema_t;

/* The schema text (len bytes) compiled; NULL with err naming what is
 * wrong (not JSON, a keyword it does not check and where, a $ref it cannot
 * follow, a pattern that does not compile). */
sd_jschema_t *sd_jschema_compile(const char *text, size_t len, char *err, size_t errlen);
/* The same from a parsed schema (a reference is taken). */
sd_jschema_t *sd_jschema_compile_json(json_t *schema, char *err, size_t errlen);
void sd_jschema_free(sd_jschema_t *s);

/* What sd_jschema_valid answers. UNJUDGED is neither: a bound ran out
 * (1,000,000 checks of one value, $refs 256 deep, a pattern's match
 * limits), and no branch's outcome under not, anyOf, oneOf or if was
 * trusted after it. It is non-zero: test for each value, never with `!`. */
enum { SD_JSCHEMA_UNJUDGED = -1, SD_JSCHEMA_INVALID = 0, SD_JSCHEMA_VALID = 1 };

/* SD_JSCHEMA_VALID when v is valid; SD_JSCHEMA_INVALID with why naming the
 * first place and keyword that fails ("/weight_g: type: expected integer,
 * found string"); SD_JSCHEMA_UNJUDGED with why naming the place and the
 * bound ("/: could not judge: pattern \"^(a+)+$\": the match took more than
 * 1000000 steps"). */
int sd_jschema_valid(const sd_jschema_t *s, json_t *v, char *why, size_t whylen);

#endif
