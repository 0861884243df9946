/* protodyn.h - Protobuf records decoded (and encoded) by the schema a
 * registry holds for them: the `.proto` text read at run time (protobuf-c
 * knows only the messages compiled into a program), each record's fields
 * named as the schema names them.
 *
 * libprotobuf does the work behind this C interface (protodyn.cpp): its
 * own .proto parser, descriptor pool, dynamic messages and wire parser.
 * Everything protoc reads is read: messages (nested ones too), enums,
 * `oneof`, `map<>`, `optional`/`required`/`repeated`, options, `import` of
 * the well-known types (google/protobuf/timestamp.proto and the others
 * libprotobuf carries) and of files given by name (a registry's
 * references), `extend` (its fields are skipped when records are read).
 * A text protoc would refuse is refused with the file, line:column and
 * protoc's message. */
#ifndef SD_PROTODYN_H
#define SD_PROTODYN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sd_protodyn_s sd_protodyn_t;

/* The schema text parsed; NULL with err naming the line:column and what is
 * wrong. An import other than a well-known type is refused by its name. */
sd_protodyn_t *sd_protodyn_parse(const char *text, char *err, size_t errlen);

/* As sd_protodyn_parse, with n more files its imports may name: names[i]
 * (as the import writes it) holds texts[i]. */
sd_protodyn_t *sd_protodyn_parse_files(const char *text, const char *const *names, const char *const *texts, size_t n, char *err,
                                       size_t errlen);
void sd_protodyn_free(sd_protodyn_t *p);

/* The record b (n bytes, after the wire format's magic byte and id: the
 * message indexes, then the message) as a JSON object, *out a new
 * reference. The indexes pick the message (none, or a single 0: the first
 * of the file; then nested ones). The record must be Protobuf to its last
 * byte (field numbers at most 2^29-1, messages nested at most 100 deep),
 * its required fields present, its strings UTF-8, each field the schema
 * has in the wire type its type is written with (libprotobuf alone would
 * keep a mismatch aside as an unknown field). A message field that comes
 * twice is merged, as Protobuf has it.
 *
 * Each field (in the schema's order) is a member of its name. A field
 * without presence (proto3's plain fields, repeated, maps) is always there:
 * absent from the record, it is its default (0, "", false, the enum's
 * first symbol, [], {}); a field with presence (a message, proto2's,
 * proto3 `optional`, a oneof's) only when the record has it. Integers are
 * JSON integers, except a uint64 or fixed64 over 2^63-1, which is its
 * decimal text (JSON integers stop at 2^63-1 here); double and float are
 * numbers, or "NaN", "Infinity", "-Infinity"; bytes are base64; an enum
 * is its symbol's name (a number it does not name: the number); a map is
 * an object (keys as text); a well-known type is its proto3 JSON form
 * (Timestamp "2026-01-02T03:04:05Z", Duration "1.5s", a wrapper its
 * value). A field of a newer schema is skipped. 0, or -1 with why naming
 * what does not decode. */
int sd_protodyn_decode(const sd_protodyn_t *p, const uint8_t *b, size_t n, json_t **out, char *why, size_t whylen);

/* The JSON object o as the first message of the schema (the wire format's
 * message indexes are the caller's: a single 0), appended to *out (*len
 * bytes so far, grown with realloc), the members read as the decoder
 * writes them: each field from the member of its name (absent or null:
 * left out), a string into string, base64 into bytes, an integer (for the
 * 64-bit types also its decimal text) into the integer types, a number (or
 * "NaN", "Infinity", "-Infinity") into double and float, true or false
 * into bool, a symbol (or its number) into an enum, an object into a
 * message or a map, an array into a repeated field (packed when scalar, in
 * proto3); members the message has no field for are not sent. A value
 * outside its type's range (an int32 of 3000000000, a uint32 of -1, a
 * float over 3.4e38) is refused, never wrapped. 0, or -1 with why naming
 * the field and the value that does not fit. */
int sd_protodyn_encode(const sd_protodyn_t *p, json_t *o, uint8_t **out, size_t *len, char *why, size_t whylen);

#ifdef __cplusplus
}
#endif

#endif
