/* protodyn.h - Protobuf records decoded (and encoded) by the schema a
 * registry holds for them: the `.proto` text read at run time (protobuf-c
 * knows only the messages compiled into a program), each record's fields
 * named as the schema names them.
 *
 * The text it reads: `syntax`, `package`, `option` and `reserved` lines
 * (read, not used), messages (nested ones too), enums, `oneof` groups,
 * fields `[optional|repeated|required] TYPE NAME = N [options];` of the
 * scalar types, `string`, `bytes`, enums and messages of the same text.
 * `map<...>`, `import`, `extend`, `service` and groups are refused by name:
 * a schema it cannot follow is never read half. */
#ifndef SD_PROTODYN_H
#define SD_PROTODYN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sd_protodyn_s sd_protodyn_t;

/* The schema text parsed; NULL with err naming the line and what is
 * wrong. */
sd_protodyn_t *sd_protodyn_parse(const char *text, char *err, size_t errlen);
void sd_protodyn_free(sd_protodyn_t *p);

/* The record b (n bytes, after the wire format's magic byte and id: the
 * message indexes, then the message) as a JSON object, *out a new
 * reference. The indexes pick the message (none, or a single 0: the first
 * of the file; then nested ones); a proto3 field absent from the record is
 * its default (0, "", false, the enum's first symbol, []), bytes are
 * base64, an enum its symbol's name. 0, or -1 with why naming what does
 * not decode. */
int sd_protodyn_decode(const sd_protodyn_t *p, const uint8_t *b, size_t n, json_t **out, char *why, size_t whylen);

/* The JSON object o as the first message of the schema (the wire format's
 * message indexes are the caller's: a single 0), appended to *out (*len
 * bytes so far, grown with realloc): each field from the member of its name (absent or null:
 * left out), a string into string, base64 into bytes, an integer into the
 * integer types, a number into double and float, true or false into bool,
 * a symbol (or its number) into an enum, an object into a message, an
 * array into a repeated field (packed when scalar, in proto3); members the
 * message has no field for are not sent. 0, or -1 with why naming the
 * field whose value does not fit. */
int sd_protodyn_encode(const sd_protodyn_t *p, json_t *o, uint8_t **out, size_t *len, char *why, size_t whylen);

#endif
