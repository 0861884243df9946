/* protodyn_legacy.h - the hand-written Protobuf reader the harness used
 * before libprotobuf (protodyn_legacy.c), for test_protodyn.c only. Its
 * calls are those of harness/format/protodyn.h; what it reads is narrower:
 * `syntax`, `package`, `option` and `reserved` lines, messages (nested
 * ones too), enums, `oneof`, fields of the scalar types, `string`,
 * `bytes`, enums and messages of the same text; `map<...>`, `import`,
 * `extend`, `service` and groups are refused by name. */
#ifndef SD_PROTODYN_LEGACY_H
#define SD_PROTODYN_LEGACY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sd_protodyn_legacy_s sd_protodyn_legacy_t;

sd_protodyn_legacy_t *sd_protodyn_legacy_parse(const char *text, char *err, size_t errlen);
void sd_protodyn_legacy_free(sd_protodyn_legacy_t *p);
int sd_protodyn_legacy_decode(const sd_protodyn_legacy_t *p, const uint8_t *b, size_t n, json_t **out, char *why, size_t whylen);
int sd_protodyn_legacy_encode(const sd_protodyn_legacy_t *p, json_t *o, uint8_t **out, size_t *len, char *why, size_t whylen);

#endif
