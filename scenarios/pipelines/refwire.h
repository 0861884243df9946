/* refwire.h - how a reference pipeline reads values in a schema registry's
 * wire format (a zero byte, a 4-byte big-endian schema id, an Avro record;
 * or the message indexes and a Protobuf message), as a consumer with a
 * registry client does: each schema fetched once from the registry's
 * Confluent-compatible API (GET URL/schemas/ids/ID, with the harness's
 * client: https, credentials, a client certificate) and kept, the record
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

#include "jschema.h"
#include "protodyn.h"
#include "registry.h"

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

/* The registry client's options: --registry-auth KIND:FROM:WHERE,
 * --registry-ca PATH, --registry-cert PATH, --registry-key PATH (the long
 * options' codes below), each else from STREAMDRILL_REGISTRY_AUTH, _CA,
 * _CERT, _KEY as the harness sets them. The client is the harness's
 * (harness/format/registry.c, libcurl), built into the pipeline. */
enum { REFWIRE_OPT_AUTH = 1001, REFWIRE_OPT_CA, REFWIRE_OPT_CERT, REFWIRE_OPT_KEY };
#define REFWIRE_LONGOPTS                                                                                                 \
    {"registry-auth", 1, 0, REFWIRE_OPT_AUTH}, {"registry-ca", 1, 0, REFWIRE_OPT_CA}, {"registry-cert", 1, 0, REFWIRE_OPT_CERT}, \
        {"registry-key", 1, 0, REFWIRE_OPT_KEY}
#define REFWIRE_USAGE "[--registry-auth basic|bearer:env:NAME|file:PATH] [--registry-ca PATH] [--registry-cert PATH --registry-key PATH]"
static sd_registry_opts_t refwire_opts;
static sd_registry_t *refwire_reg;

/* One of REFWIRE_LONGOPTS taken; 0 when c is none of them. */
static int refwire_option(int c, const char *arg) {
    switch (c) {
    case REFWIRE_OPT_AUTH: refwire_opts.auth = arg; return 1;
    case REFWIRE_OPT_CA: refwire_opts.ca = arg; return 1;
    case REFWIRE_OPT_CERT: refwire_opts.cert = arg; return 1;
    case REFWIRE_OPT_KEY: refwire_opts.key = arg; return 1;
    default: return 0;
    }
}

/* The client of the registry at url, opened on first use: a URL it does
 * not take, or credentials it cannot read, end the pipeline (the message
 * names where they were looked for, never what they are). */
static sd_registry_t *refwire_client(const char *url) {
    if (refwire_reg) return refwire_reg;
    sd_registry_opts_t o = refwire_opts;
    if (!o.auth) o.auth = getenv("STREAMDRILL_REGISTRY_AUTH");
    if (!o.ca) o.ca = getenv("STREAMDRILL_REGISTRY_CA");
    if (!o.cert) o.cert = getenv("STREAMDRILL_REGISTRY_CERT");
    if (!o.key) o.key = getenv("STREAMDRILL_REGISTRY_KEY");
    o.once = 1; /* the loops below ask again themselves, every half second */
    char err[1024];
    if (sd_registry_open(url, &o, &refwire_reg, err, sizeof(err))) die("--registry: %s", err);
    return refwire_reg;
}

/* GET /schemas/ids/ID: the schema's text (malloc'd; NULL: the registry
 * does not know the id, or refuses to say), asked again every half second
 * while it cannot be reached or fails (5xx); *gave_up set when the run
 * stops meanwhile, or at once under no-schema-cache. */
static char *refwire_schema_by_id(const char *url, int id, sd_registry_refs_t *refs, int *gave_up) {
    sd_registry_t *reg = refwire_client(url);
    sd_buf_t text;
    sd_buf_init(&text);
    char err[1024];
    int found = 0;
    sd_err_t e;
    *gave_up = 0;
    while ((e = sd_registry_schema(reg, id, &text, refs, &found, err, sizeof(err))) &&
           (!sd_registry_last_status(reg) || sd_registry_last_status(reg) >= 500)) {
        if (ref_stop || refavro_no_cache) {
            *gave_up = 1;
            sd_buf_free(&text);
            return NULL;
        }
        fprintf(stderr, "refwire: %s; asking again for schema %d\n", err, id);
        usleep(500 * 1000);
    }
    if (e) fprintf(stderr, "refwire: %s\n", err);
    char *s = !e && found ? strdup(text.data ? text.data : "") : NULL;
    sd_buf_free(&text);
    return s;
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
    char *text = refwire_schema_by_id(url, id, NULL, &gave_up);
    if (gave_up) return ref_stop ? -1 : -2;
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
    free(text);
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
    sd_registry_t *reg = refwire_client(url);
    sd_buf_t text;
    sd_buf_init(&text);
    char err[1024];
    int found = 0;
    while ((sd_registry_latest(reg, refavro_subject, &text, &found, err, sizeof(err)) || !found) && !ref_stop) usleep(500 * 1000);
    avro_schema_t s;
    if (found && text.data && !avro_schema_from_json_length(text.data, text.len, &s)) {
        if (refavro_latest) avro_value_iface_decref(refavro_latest_iface), avro_schema_decref(refavro_latest);
        refavro_latest = s;
        refavro_latest_iface = avro_generic_class_from_schema(s);
    }
    sd_buf_free(&text);
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
 * no-schema-cache), else fetched (with imports, the schemas its
 * references name: a Protobuf schema's imports), read and kept; a full cache gives its
 * last slot to the newcomer. NULL with *why the reason it cannot be had. */
typedef struct {
    int id;
    void *s;
} refwire_slot_t;

static void *refwire_schema_kept(refwire_slot_t *c, int *n, const char *url, int id, int imports,
                                 void *(*read)(const char *text, const sd_registry_refs_t *refs),
                                 void (*release)(void *), const char *unreadable, const char **why) {
    for (int i = 0; i < *n; i++)
        if (c[i].id == id && !refavro_no_cache) return c[i].s;
    int gave_up;
    sd_registry_refs_t refs = {0};
    char *text = refwire_schema_by_id(url, id, imports ? &refs : NULL, &gave_up);
    if (gave_up) {
        *why = ref_stop ? "schema id unknown to the registry" : "schema registry unreachable";
        return NULL;
    }
    void *s = text ? read(text, &refs) : NULL;
    sd_registry_refs_free(&refs);
    int had = text != NULL;
    free(text);
    if (!s) {
        *why = had ? unreadable : "schema id unknown to the registry";
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
 * read with the harness's Protobuf reader (harness/format/protodyn.cpp, built
 * into the pipeline as a consumer builds in its deserializer), the record
 * decoded by the message its indexes name. */
static refwire_slot_t refwire_pb_cache[REFAVRO_CACHE];
static int refwire_pb_n;

static void *refwire_pb_read(const char *text, const sd_registry_refs_t *refs) {
    char err[256];
    return sd_protodyn_parse_files(text, (const char *const *)refs->names, (const char *const *)refs->texts, refs->n, err, sizeof(err));
}

static void refwire_pb_free(void *p) { sd_protodyn_free(p); }

/* The read schema of id; NULL with *why the reason it cannot be had. */
static sd_protodyn_t *refwire_pb_schema(const char *url, int id, const char **why) {
    return refwire_schema_kept(refwire_pb_cache, &refwire_pb_n, url, id, 1, refwire_pb_read, refwire_pb_free,
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
 * with the harness's JSON Schema validator (harness/format/jschema.c, built
 * into the pipeline as a consumer builds in its validating deserializer);
 * a record must parse and be valid by the schema its id names. */
static refwire_slot_t refjson_cache[REFAVRO_CACHE];
static int refjson_n;
/* the bug of --weak no-validate: the header is read and the record parsed,
 * never checked against its schema */
static int refjson_no_validate;

static void *refjson_read(const char *text, const sd_registry_refs_t *refs) {
    (void)refs; /* a JSON Schema's $ref stays inside the schema (the validator follows no other) */
    char err[256];
    return sd_jschema_compile(text, strlen(text), err, sizeof(err));
}

static void refjson_free(void *s) { sd_jschema_free(s); }

/* The compiled schema of id; NULL with *why the reason it cannot be had. */
static sd_jschema_t *refjson_schema(const char *url, int id, const char **why) {
    return refwire_schema_kept(refjson_cache, &refjson_n, url, id, 0, refjson_read, refjson_free, "a JSON Schema this consumer cannot check",
                               why);
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
