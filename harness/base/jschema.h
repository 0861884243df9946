/* jschema.h - JSON Schema (draft 7, and draft 4's boolean exclusive bounds)
 * validation of JSON values: the check a producer's JSON Schema serializer
 * makes before it sends an event (`events ... format=json-schema`), and
 * the one a consumer makes before it trusts one.
 *
 * The keywords it checks: type, enum, const, the numeric bounds
 * (minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf), the
 * string ones (minLength, maxLength in code points, pattern as a POSIX
 * extended expression with \d read as [0-9]), properties, required,
 * additionalProperties, patternProperties, propertyNames, dependencies,
 * minProperties, maxProperties, items, additionalItems, contains,
 * minItems, maxItems, uniqueItems, allOf, anyOf, oneOf, not, if/then/else,
 * definitions and $ref to a place in the same schema ("#", "#/..."); the
 * annotations ($schema, $id, $comment, title, description, default,
 * examples, readOnly, writeOnly, format) are read and not checked. A
 * schema with any other keyword, or a $ref elsewhere, is refused at
 * compile time, by name: a keyword it does not check is never passed over
 * quietly. Proven against the JSON Schema Test Suite's draft-7 files
 * (tests/unit/test_events.c). */
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

/* 1 when v is valid; 0 with why naming the first place and keyword that
 * fails ("/weight_g: type: expected integer, found string"). */
int sd_jschema_valid(const sd_jschema_t *s, json_t *v, char *why, size_t whylen);

#endif
