/* refwire.h - how a reference pipeline reads values in a schema registry's
 * wire format (a zero byte, a 4-byte big-endian schema id, an Avro record;
 * or the message indexes and a Protobuf message), as a consumer with a
 * registry client does: each schema fetched once from the registry's
 * Confluent-compatible API (GET URL/schemas/ids/ID) and kept, the record
 * decoded with avro-c (Protobuf: by the schema's .proto text, with the
 * harness's reader; JSON Schema: the record's JSON checked against its
 * schema) into the JSON the rest of the pipeline reads.
 *
 * A registry that cannot be reached is asked again every half second until
 * it answers: records wait, none is judged by an outage. An id the registry
 * does not know, or a value that is not in the wire format or does not
 * decode, gives the reason the record is quarantined for. The weak modes
 * no-schema-cache and newest-schema are below, beside what they change.
 *
 * Included by refpipe.c and reftxn.c after refcommon.h (die, ref_stop). */
#include <avro.h>
#include <netdb.h>
#include <sys/socket.h>

#include "jschema.h"
#include "protodyn.h"

#define REFAVRO_CACHE 64

static struct {
    int id;
    avro_schema_t schema;
    avro_value_iface_t *iface;
} refavro_cache[REFAVRO_CACHE];
static int refavro_n;
/* the bug of --weak no-schema-cache: every record's schema asked of the
 * registry, and a record whose schema it cannot get given up on */
static int refavro_no_cache;

/* GET url + path over HTTP/1.0: the status (-1: no connection or no
 * answer), the body into *body (malloc'd, NUL-terminated). */
static int refavro_get(const char *url, const char *path, char **body) {
    char host[256], port[16] = "80";
    const char *h = url + 7, *slash = strchr(h, '/');
    size_t hl = slash ? (size_t)(slash - h) : strlen(h);
    if (strncmp(url, "http://", 7) || hl >= sizeof(host)) die("--registry %s: expected http://HOST:PORT[/PATH]", url);
    memcpy(host, h, hl);
    host[hl] = 0;
    char *colon = strchr(host, ':');
    if (colon) { *colon = 0; snprintf(port, sizeof(port), "%s", colon + 1); }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(host, port, &hints, &ai)) return -1;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    struct timeval tv = {.tv_sec = 5};
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int ok = fd >= 0 && !connect(fd, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    char req[1024];
    int rl = snprintf(req, sizeof(req), "GET %s%s HTTP/1.0\r\nHost: %s:%s\r\nAccept: application/json\r\n\r\n", slash ? slash : "", path, host,
                      port);
    ok = ok && send(fd, req, (size_t)rl, MSG_NOSIGNAL) == rl;
    size_t len = 0, cap = 8192;
    char *buf = malloc(cap);
    for (ssize_t n; ok && (n = recv(fd, buf + len, cap - len - 1, 0)) != 0;) {
        if (n < 0) { ok = 0; break; }
        if ((len += (size_t)n) + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    if (fd >= 0) close(fd);
    buf[len] = 0;
    int status = -1;
    char *sep = strstr(buf, "\r\n\r\n");
    if (!ok || !sep || sscanf(buf, "HTTP/%*d.%*d %d", &status) != 1) { free(buf); return -1; }
    *body = strdup(sep + 4);
    free(buf);
    return status;
}

/* GET /schemas/ids/ID: the registry's answer as JSON (NULL: it does not
 * know the id), asked again every half second while it cannot be reached;
 * *gave_up set when the run stops meanwhile, or at once under
 * no-schema-cache. */
static json_t *refwire_schema_by_id(const char *url, int id, int *gave_up) {
    char path[64], *body = NULL;
    snprintf(path, sizeof(path), "/schemas/ids/%d", id);
    int status;
    *gave_up = 0;
    while ((status = refavro_get(url, path, &body)) < 0 || status >= 500) {
        free(body), body = NULL;
        if (ref_stop || refavro_no_cache) {
            *gave_up = 1;
            return NULL;
        }
        fprintf(stderr, "refwire: registry %s unreachable or failing; asking again for schema %d\n", url, id);
        usleep(500 * 1000);
    }
    json_t *o = status == 200 ? json_loads(body, 0, NULL) : NULL;
    free(body);
    return o;
}

/* The cache entry of schema id, fetched on first use; -1 when the registry
 * does not know the id (or its schema is not Avro avro-c reads), -2 when
 * the consumer gave up on the registry (no-schema-cache). */
static int refavro_schema(const char *url, int id) {
    int at = -1;
    for (int i = 0; i < refavro_n && at < 0; i++)
        if (refavro_cache[i].id == id) at = i;
    if (at >= 0 && !refavro_no_cache) return at;
    int gave_up;
    json_t *o = refwire_schema_by_id(url, id, &gave_up);
    if (gave_up) return ref_stop ? -1 : -2;
    const char *text = o ? json_string_value(json_object_get(o, "schema")) : NULL;
    avro_schema_t s = NULL;
    if (text && !avro_schema_from_json_length(text, strlen(text), &s) && (at >= 0 || refavro_n < REFAVRO_CACHE)) {
        if (at >= 0) avro_value_iface_decref(refavro_cache[at].iface), avro_schema_decref(refavro_cache[at].schema);
        else at = refavro_n++;
        refavro_cache[at].id = id;
        refavro_cache[at].schema = s;
        refavro_cache[at].iface = avro_generic_class_from_schema(s);
    } else {
        if (s) avro_schema_decref(s);
        at = -1;
    }
    json_decref(o);
    return at;
}

/* the bug of --weak newest-schema: the id in each record is read only to
 * notice a new one, which refreshes the subject's newest schema; every
 * record is decoded with that (refavro_subject: the topic's subject) */
static const char *refavro_subject;
static int refavro_ids_seen[REFAVRO_CACHE], refavro_nseen;
static avro_schema_t refavro_latest;
static avro_value_iface_t *refavro_latest_iface;

static void refavro_refresh_latest(const char *url) {
    char path[512], *body = NULL;
    snprintf(path, sizeof(path), "/subjects/%s/versions/latest", refavro_subject);
    int status;
    while ((status = refavro_get(url, path, &body)) != 200 && !ref_stop) {
        free(body), body = NULL;
        usleep(500 * 1000);
    }
    json_t *o = body ? json_loads(body, 0, NULL) : NULL;
    free(body);
    const char *text = o ? json_string_value(json_object_get(o, "schema")) : NULL;
    avro_schema_t s;
    if (text && !avro_schema_from_json_length(text, strlen(text), &s)) {
        if (refavro_latest) avro_value_iface_decref(refavro_latest_iface), avro_schema_decref(refavro_latest);
        refavro_latest = s;
        refavro_latest_iface = avro_generic_class_from_schema(s);
    }
    json_decref(o);
}

/* The value p (n bytes) in the wire format, decoded into JSON text
 * (*json, malloc'd); NULL, or the reason it cannot be read. */
static const char *refavro_decode(const char *url, const void *p, size_t n, char **json) {
    const unsigned char *b = p;
    if (n < 5 || b[0] != 0) return "not in the registry wire format (no magic byte 0)";
    int id = (int)((uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 | b[4]);
    avro_value_iface_t *iface;
    if (refavro_subject) {
        int known = 0;
        for (int i = 0; i < refavro_nseen; i++) known |= refavro_ids_seen[i] == id;
        if (!known && refavro_nseen < REFAVRO_CACHE) refavro_ids_seen[refavro_nseen++] = id, refavro_refresh_latest(url);
        if (!refavro_latest) return "schema id unknown to the registry";
        iface = refavro_latest_iface;
    } else {
        int at = refavro_schema(url, id);
        if (at == -2) return "schema registry unreachable";
        if (at < 0) return "schema id unknown to the registry";
        iface = refavro_cache[at].iface;
    }
    avro_value_t v;
    avro_generic_value_new(iface, &v);
    avro_reader_t r = avro_reader_memory((const char *)b + 5, (int64_t)(n - 5));
    int rc = avro_value_read(r, &v);
    avro_reader_free(r);
    /* a record must use every byte: one that stops short of the end is no record of this schema */
    size_t size = 0;
    int rest = rc == 0 && (avro_value_sizeof(&v, &size) || size != n - 5);
    if (!rc && !rest) rc = avro_value_to_json(&v, 1, json);
    avro_value_decref(&v);
    if (rc || rest) return "an Avro record that does not decode with its schema";
    return NULL;
}

/* A schema kept per id, read from the registry's text by its format's
 * reader (Protobuf, JSON Schema): looked up first (not under
 * no-schema-cache), else fetched, read and kept; a full cache gives its
 * last slot to the newcomer. NULL with *why the reason it cannot be had. */
typedef struct {
    int id;
    void *s;
} refwire_slot_t;

static void *refwire_schema_kept(refwire_slot_t *c, int *n, const char *url, int id, void *(*read)(const char *text),
                                 void (*release)(void *), const char *unreadable, const char **why) {
    for (int i = 0; i < *n; i++)
        if (c[i].id == id && !refavro_no_cache) return c[i].s;
    int gave_up;
    json_t *o = refwire_schema_by_id(url, id, &gave_up);
    if (gave_up) {
        *why = ref_stop ? "schema id unknown to the registry" : "schema registry unreachable";
        return NULL;
    }
    const char *text = o ? json_string_value(json_object_get(o, "schema")) : NULL;
    void *s = text ? read(text) : NULL;
    json_decref(o);
    if (!s) {
        *why = text ? unreadable : "schema id unknown to the registry";
        return NULL;
    }
    int at = -1;
    for (int i = 0; i < *n && at < 0; i++)
        if (c[i].id == id) at = i;
    if (at < 0 && *n == REFAVRO_CACHE) at = REFAVRO_CACHE - 1;
    if (at < 0) at = (*n)++;
    else release(c[at].s);
    c[at].id = id;
    c[at].s = s;
    return s;
}

/* --format protobuf: each schema's .proto text fetched once by its id and
 * read with the harness's Protobuf reader (harness/kafka/protodyn.cpp, built
 * into the pipeline as a consumer builds in its deserializer), the record
 * decoded by the message its indexes name. */
static refwire_slot_t refwire_pb_cache[REFAVRO_CACHE];
static int refwire_pb_n;

static void *refwire_pb_read(const char *text) {
    char err[256];
    return sd_protodyn_parse(text, err, sizeof(err));
}

static void refwire_pb_free(void *p) { sd_protodyn_free(p); }

/* The read schema of id; NULL with *why the reason it cannot be had. */
static sd_protodyn_t *refwire_pb_schema(const char *url, int id, const char **why) {
    return refwire_schema_kept(refwire_pb_cache, &refwire_pb_n, url, id, refwire_pb_read, refwire_pb_free,
                               "a Protobuf schema this consumer cannot read", why);
}

/* The value in the Protobuf wire format, decoded into JSON text (*json,
 * malloc'd); NULL, or the reason it cannot be read. */
static const char *refwire_decode_protobuf(const char *url, const void *p, size_t n, char **json) {
    const unsigned char *b = p;
    if (n < 6 || b[0] != 0) return "not in the registry wire format (no magic byte 0)";
    int id = (int)((uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 | b[4]);
    const char *why = NULL;
    sd_protodyn_t *schema = refwire_pb_schema(url, id, &why);
    if (!schema) return why;
    json_t *o = NULL;
    char detail[200];
    if (sd_protodyn_decode(schema, b + 5, n - 5, &o, detail, sizeof(detail))) return "a Protobuf record that does not decode with its schema";
    /* proto3 has no absent strings: an empty one is a field the record lacked */
    const char *keys[] = {"event_id", "event_time"};
    for (int i = 0; i < 2; i++) {
        json_t *v = json_object_get(o, keys[i]);
        if (json_is_string(v) && !json_string_length(v)) json_object_del(o, keys[i]);
    }
    *json = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return *json ? NULL : "a Protobuf record that does not decode with its schema";
}

/* --format json-schema: each schema fetched once by its id and compiled
 * with the harness's JSON Schema validator (harness/base/jschema.c, built
 * into the pipeline as a consumer builds in its validating deserializer);
 * a record must parse and be valid by the schema its id names. */
static refwire_slot_t refjson_cache[REFAVRO_CACHE];
static int refjson_n;
/* the bug of --weak no-validate: the header is read and the record parsed,
 * never checked against its schema */
static int refjson_no_validate;

static void *refjson_read(const char *text) {
    char err[256];
    return sd_jschema_compile(text, strlen(text), err, sizeof(err));
}

static void refjson_free(void *s) { sd_jschema_free(s); }

/* The compiled schema of id; NULL with *why the reason it cannot be had. */
static sd_jschema_t *refjson_schema(const char *url, int id, const char **why) {
    return refwire_schema_kept(refjson_cache, &refjson_n, url, id, refjson_read, refjson_free, "a JSON Schema this consumer cannot check", why);
}

/* The value in the JSON Schema wire format: its JSON text (*json,
 * malloc'd) once it parses and its schema finds it valid; NULL, or the
 * reason it cannot be trusted (a check that ran out of a bound of the
 * validator is no pass: the record is refused with that reason). */
static const char *refwire_decode_json(const char *url, const void *p, size_t n, char **json) {
    const unsigned char *b = p;
    if (n < 5 || b[0] != 0) return "not in the registry wire format (no magic byte 0)";
    int id = (int)((uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 | b[4]);
    const char *why = NULL;
    sd_jschema_t *s = refjson_schema(url, id, &why);
    if (!s) return why;
    json_t *j = json_loadb((const char *)b + 5, n - 5, JSON_REJECT_DUPLICATES, NULL);
    if (!j) return "a JSON Schema record that is not JSON";
    char detail[200];
    int valid = refjson_no_validate ? SD_JSCHEMA_VALID : sd_jschema_valid(s, j, detail, sizeof(detail));
    json_decref(j);
    if (valid != SD_JSCHEMA_VALID) {
        static char reason[256];
        snprintf(reason, sizeof(reason), "%s by its JSON Schema: %s",
                 valid == SD_JSCHEMA_UNJUDGED ? "not known to be valid" : "not valid", detail);
        return reason;
    }
    *json = strndup((const char *)b + 5, n - 5);
    return NULL;
}

/* The value in the wire format of --format (1 Avro, 2 Protobuf, 3 JSON
 * Schema) as JSON text; NULL, or the reason it cannot be read. */
static const char *refwire_decode(int format, const char *url, const void *p, size_t n, char **json) {
    return format == 3 ? refwire_decode_json(url, p, n, json)
           : format == 2 ? refwire_decode_protobuf(url, p, n, json)
                         : refavro_decode(url, p, n, json);
}
