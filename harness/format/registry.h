/* registry.h - a schema registry's Confluent-compatible REST API (Apicurio
 * Registry serves it under /apis/ccompat/v7, Confluent's Schema Registry at
 * its root), spoken over HTTP or HTTPS with libcurl: registering a schema
 * under a subject, setting a subject's compatibility, reading a schema back
 * by id or a subject's newest one. A URL is "http[s]://HOST[:PORT][/PATH]",
 * without user:password@ (credentials come from auth=, never the URL).
 *
 * HTTPS verifies the registry's certificate and host name, always (ca=
 * names the CA file when the system's is not the one); a client
 * certificate and key give mutual TLS. Credentials are read from the
 * environment or a file when the handle is opened, held only inside it,
 * and never written into an error: a message names the URL, what was
 * asked, the HTTP status and the registry's own message (any echo of the
 * secret in it is blanked).
 *
 * Errors are SD_ERR_REGISTRY naming the URL and the cause: refused, timed
 * out, a certificate not verified, an HTTP status with the registry's own
 * message. A handle is used by one thread at a time. */
#ifndef SD_REGISTRY_H
#define SD_REGISTRY_H

#include <stdint.h>

#include "err.h"
#include "util.h"

/* What the subject's schema is written in, as the API names it. */
typedef enum { SD_SCHEMA_AVRO = 0, SD_SCHEMA_PROTOBUF, SD_SCHEMA_JSON } sd_schema_type_t;

/* How to reach the registry; every field may be left zero. */
typedef struct sd_registry_opts_s {
    /* the credentials: "basic:env:NAME" (NAME's value is KEY:SECRET, as
     * Confluent Cloud's API keys are), "basic:file:PATH" (the file's first
     * line is KEY:SECRET), "bearer:env:NAME" or "bearer:file:PATH" (an
     * OAuth/OIDC access token, as Apicurio with Keycloak takes); NULL: none */
    const char *auth;
    const char *ca;   /* PEM file of the CA(s) that vouch for an https registry (NULL: the system's) */
    const char *cert; /* client certificate (PEM) for mutual TLS, with key */
    const char *key;  /* its private key (PEM, unencrypted) */
    int64_t connect_ms; /* connecting, TLS included (0: 5 s, scaled by STREAMDRILL_TIMEOUT_MULTIPLIER) */
    int64_t timeout_ms; /* a whole request, redirects included (0: 10 s, scaled) */
    size_t max_answer;  /* the largest answer body read (0: 16 MiB); a larger one is an error */
    int once;           /* 1: a refused connection is not asked again (the caller has a loop of its own) */
} sd_registry_opts_t;

typedef struct sd_registry_s sd_registry_t;

/* A handle on the registry at url: the URL checked, the credentials read
 * (an environment variable not set, a file not readable, a basic secret
 * without its ':' are errors naming the variable or the file, never its
 * content). Nothing is sent yet. Close it with sd_registry_close. */
sd_err_t sd_registry_open(const char *url, const sd_registry_opts_t *opts, sd_registry_t **out, char *err, size_t errlen);
void sd_registry_close(sd_registry_t *reg);
/* The HTTP status of the last answer; 0 when the last call got none (not
 * reached, timed out, TLS refused). */
int sd_registry_last_status(const sd_registry_t *reg);

/* Whether spec is an auth= the handle takes (its form only: nothing is
 * read); the error says what was expected. */
sd_err_t sd_registry_auth_check(const char *spec, char *err, size_t errlen);
/* Whether url is one the handle takes: http:// or https://, a host, no
 * user:password@ (the message does not repeat what stands before '@'). */
sd_err_t sd_registry_url_check(const char *url, char *err, size_t errlen);

/* Register schema (its text) under subject; *id is the id the registry
 * gives it (the same id again for a schema it already holds). A schema the
 * subject's compatibility rule refuses (HTTP 409) is SD_OK with *refused
 * set and the registry's reason in err; *refused is 0 otherwise. */
sd_err_t sd_registry_register(sd_registry_t *reg, const char *subject, sd_schema_type_t type, const char *schema, int *id,
                              int *refused, char *err, size_t errlen);
/* Set the subject's compatibility rule (BACKWARD, NONE, ...). */
sd_err_t sd_registry_compatibility(sd_registry_t *reg, const char *subject, const char *level, char *err, size_t errlen);
/* The schemas a schema's `references` name: the files its imports name
 * (a Protobuf schema's `import "other.proto"`), each registered under a
 * subject and version of its own. names[i], as the import writes it,
 * holds texts[i]. */
typedef struct sd_registry_refs_s {
    char **names, **texts;
    size_t n;
} sd_registry_refs_t;
#define SD_REGISTRY_MAX_REFS 64
void sd_registry_refs_free(sd_registry_refs_t *refs);

/* The schema text registered with id, into out (reset first); *found 0
 * (and SD_OK) when the registry answers that it has no such id. With refs
 * (else NULL), the schemas its references name, and theirs in turn, each
 * fetched once by its subject and version (GET /subjects/S/versions/V), at
 * most SD_REGISTRY_MAX_REFS: a reference the registry does not hold, or a
 * malformed one, is an error naming it. */
sd_err_t sd_registry_schema(sd_registry_t *reg, int id, sd_buf_t *out, sd_registry_refs_t *refs, int *found, char *err, size_t errlen);
/* The subject's newest schema text, into out; *found 0 (and SD_OK) when
 * the registry has no such subject. */
sd_err_t sd_registry_latest(sd_registry_t *reg, const char *subject, sd_buf_t *out, int *found, char *err, size_t errlen);

/* What an answer of the API should carry. */
typedef enum { SD_REGISTRY_WANT_NOTHING = 0, SD_REGISTRY_WANT_ID, SD_REGISTRY_WANT_SCHEMA } sd_registry_want_t;
/* An answer (status, n bytes of body) read as a call that wants `want`:
 * 200 gives *id or the schema text in text (reset first); the status
 * `also` (404, 409, or 0: none) is SD_OK too, with the registry's words
 * in why; any other status, or a 200 without what was wanted, is
 * SD_ERR_REGISTRY with why "HTTP 401 (...): the registry's message". The
 * body is anything the network gave. */
sd_err_t sd_registry_answer(int status, const char *body, size_t n, sd_registry_want_t want, int also, int *id, sd_buf_t *text,
                            char *why, size_t whylen);

#endif
