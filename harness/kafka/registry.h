/* registry.h - a schema registry's Confluent-compatible REST API (Apicurio
 * Registry serves it under /apis/ccompat/v7, Confluent's Schema Registry at
 * its root), spoken over plain HTTP: registering a schema under a subject
 * and reading one back by id. A URL is "http://HOST:PORT[/PATH]"; https is
 * refused by name (put a TLS terminator's plain side in front of it).
 *
 * Errors are SD_ERR_REGISTRY naming the URL and the cause: refused, timed
 * out, an HTTP status with the registry's own message. */
#ifndef SD_REGISTRY_H
#define SD_REGISTRY_H

#include "err.h"
#include "util.h"

/* What the subject's schema is written in, as the API names it. */
typedef enum { SD_SCHEMA_AVRO = 0, SD_SCHEMA_PROTOBUF, SD_SCHEMA_JSON } sd_schema_type_t;

/* Register schema (its text) under subject; *id is the id the registry
 * gives it (the same id again for a schema it already holds). A schema the
 * subject's compatibility rule refuses (HTTP 409) is SD_OK with *refused
 * set and the registry's reason in err; *refused is 0 otherwise. */
sd_err_t sd_registry_register(const char *url, const char *subject, sd_schema_type_t type, const char *schema, int *id,
                              int *refused, char *err, size_t errlen);
/* Set the subject's compatibility rule (BACKWARD, NONE, ...). */
sd_err_t sd_registry_compatibility(const char *url, const char *subject, const char *level, char *err, size_t errlen);
/* The schema text registered with id, into out (reset first); *found 0
 * (and SD_OK) when the registry answers that it has no such id. */
sd_err_t sd_registry_schema(const char *url, int id, sd_buf_t *out, int *found, char *err, size_t errlen);

#endif
