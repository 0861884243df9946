/* wire.c - JSON events encoded in the registry wire format with avro-c
 * (see wire.h). */
#include "wire.h"

#include "jschema.h"
#include "parcel_scan.pb-c.h"
#include "protodyn.h"
#include "registry.h"

#include <avro.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct sd_wire_s {
    sd_wire_format_t fmt;
    avro_schema_t schema;
    avro_value_iface_t *iface;
    avro_value_t value;
    sd_jschema_t *js; /* JSON Schema */
    sd_protodyn_t *pd; /* Protobuf: a user's .proto (NULL: the parcel scans' compiled message) */
    char *violate;    /* the number field schema-violation sends as text */
    int id, foreign_id;
};

static const char sd_wire_parcel_proto[] =
#include "parcel_scan.proto.inc"
    ;

char *sd_wire_parcel_schema(sd_wire_format_t fmt, const char *id_field, const char *time_field) {
    if (fmt == SD_WIRE_PROTOBUF) return sd_util_strdup(sd_wire_parcel_proto);
    if (fmt == SD_WIRE_JSON)
        return sd_util_fmt("{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"title\":\"ParcelScan\",\"type\":\"object\","
                           "\"required\":[\"%s\",\"parcel_id\",\"%s\",\"location\",\"scan\",\"weight_g\"],\"properties\":{"
                           "\"%s\":{\"type\":\"string\",\"minLength\":1},\"parcel_id\":{\"type\":\"string\"},"
                           "\"%s\":{\"type\":\"string\",\"format\":\"date-time\"},\"location\":{\"type\":\"string\"},"
                           "\"scan\":{\"type\":\"string\"},\"weight_g\":{\"type\":\"integer\",\"minimum\":0}}}",
                           id_field, time_field, id_field, time_field);
    return sd_util_fmt("{\"type\":\"record\",\"name\":\"ParcelScan\",\"namespace\":\"streamdrill\",\"fields\":["
                       "{\"name\":\"%s\",\"type\":\"string\"},{\"name\":\"parcel_id\",\"type\":\"string\"},"
                       "{\"name\":\"%s\",\"type\":\"string\"},{\"name\":\"location\",\"type\":\"string\"},"
                       "{\"name\":\"scan\",\"type\":\"string\"},{\"name\":\"weight_g\",\"type\":\"long\"}]}",
                       id_field, time_field);
}

const char *sd_wire_foreign_schema(sd_wire_format_t fmt) {
    if (fmt == SD_WIRE_PROTOBUF)
        return "syntax = \"proto3\";\npackage streamdrill.foreign;\nmessage Note {\n  string event_id = 1;\n  string note = 2;\n}\n";
    if (fmt == SD_WIRE_JSON)
        return "{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"title\":\"Note\",\"type\":\"object\","
               "\"required\":[\"event_id\",\"note\"],\"properties\":{\"event_id\":{\"type\":\"string\"},\"note\":{\"type\":\"string\"}},"
               "\"additionalProperties\":false}";
    return "{\"type\":\"record\",\"name\":\"Note\",\"namespace\":\"streamdrill.foreign\",\"fields\":["
           "{\"name\":\"event_id\",\"type\":\"string\"},{\"name\":\"note\",\"type\":\"string\"}]}";
}

/* avro-c's allocator, bounded: a length a damaged file or record gives (a
 * string's, a block's once decompressed) past SD_WIRE_AVRO_MAX is refused
 * as avro-c takes any failed allocation (ENOMEM: the value does not read),
 * never asked of the system. No value a pipeline writes comes near it.
 * Set once, before wire.c's first call into avro-c in any thread (every
 * path into avro-c is one of wire.c's). */
#define SD_WIRE_AVRO_MAX ((size_t)1 << 30)
static void *sd_wire_avro_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    (void)ud, (void)osize;
    if (!nsize) {
        free(ptr);
        return NULL;
    }
    return nsize > SD_WIRE_AVRO_MAX ? NULL : realloc(ptr, nsize);
}
static pthread_once_t sd_wire_avro_once = PTHREAD_ONCE_INIT;
static void sd_wire_avro_bound(void) { avro_set_allocator(sd_wire_avro_alloc, NULL); }

sd_err_t sd_wire_open(sd_wire_format_t fmt, const char *schema, int id, int foreign_id, sd_wire_t **out, char *err, size_t errlen) {
    pthread_once(&sd_wire_avro_once, sd_wire_avro_bound);
    sd_wire_t *w = sd_util_xcalloc(1, sizeof(*w));
    w->fmt = fmt;
    w->id = id;
    w->foreign_id = foreign_id;
    if (fmt == SD_WIRE_PROTOBUF) { /* the compiled message, or a user's text read by protodyn.cpp (libprotobuf) */
        char why[512];
        if (schema && schema[0] && strcmp(schema, sd_wire_parcel_proto) && !(w->pd = sd_protodyn_parse(schema, why, sizeof(why)))) {
            free(w);
            return sd_err_set(err, errlen, SD_ERR_SCENARIO, "a Protobuf schema the harness cannot read: %s", why);
        }
        *out = w;
        return SD_OK;
    }
    if (fmt == SD_WIRE_JSON) {
        char why[512];
        if (!(w->js = sd_jschema_compile(schema, strlen(schema), why, sizeof(why)))) {
            free(w);
            return sd_err_set(err, errlen, SD_ERR_SCENARIO, "a JSON Schema the harness cannot check: %s", why);
        }
        *out = w;
        return SD_OK;
    }
    if (avro_schema_from_json_length(schema, strlen(schema), &w->schema)) {
        free(w);
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "an Avro schema avro-c refuses: %s", avro_strerror());
    }
    if (!(w->iface = avro_generic_class_from_schema(w->schema)) || avro_generic_value_new(w->iface, &w->value)) {
        sd_err_set(err, errlen, SD_ERR_SCENARIO, "an Avro schema avro-c cannot make values of: %s", avro_strerror());
        if (w->iface) avro_value_iface_decref(w->iface);
        avro_schema_decref(w->schema);
        free(w);
        return SD_ERR_SCENARIO;
    }
    *out = w;
    return SD_OK;
}

void sd_wire_close(sd_wire_t *w) {
    if (!w) return;
    if (w->fmt != SD_WIRE_AVRO) {
        sd_jschema_free(w->js);
        sd_protodyn_free(w->pd);
        free(w->violate);
        free(w);
        return;
    }
    avro_value_decref(&w->value);
    avro_value_iface_decref(w->iface);
    avro_schema_decref(w->schema);
    free(w);
}

/* j into the Avro value v (of schema s); path names the field in errors. */
static int sd_wire_set(avro_value_t *v, avro_schema_t s, json_t *j, const char *path, char *err, size_t errlen) {
    int rc = 0;
    switch (avro_typeof(s)) {
    case AVRO_NULL:
        if (!json_is_null(j)) goto mismatch;
        return avro_value_set_null(v);
    case AVRO_BOOLEAN:
        if (!json_is_boolean(j)) goto mismatch;
        return avro_value_set_boolean(v, json_is_true(j));
    case AVRO_INT32:
        if (!json_is_integer(j)) goto mismatch;
        return avro_value_set_int(v, (int32_t)json_integer_value(j));
    case AVRO_INT64: {
        /* a timestamp-millis field takes the ISO-8601 event time */
        int64_t ms;
        if (json_is_string(j) && !sd_util_parse_iso8601(json_string_value(j), &ms)) return avro_value_set_long(v, ms);
        if (!json_is_integer(j)) goto mismatch;
        return avro_value_set_long(v, json_integer_value(j));
    }
    case AVRO_FLOAT:
    case AVRO_DOUBLE:
        if (!json_is_number(j)) goto mismatch;
        return avro_typeof(s) == AVRO_FLOAT ? avro_value_set_float(v, (float)json_number_value(j))
                                             : avro_value_set_double(v, json_number_value(j));
    case AVRO_STRING:
    case AVRO_BYTES:
        if (!json_is_string(j)) goto mismatch;
        return avro_typeof(s) == AVRO_STRING ? avro_value_set_string_len(v, json_string_value(j), json_string_length(j) + 1)
                                              : avro_value_set_bytes(v, (void *)json_string_value(j), json_string_length(j));
    case AVRO_ENUM: {
        int sym = json_is_string(j) ? avro_schema_enum_get_by_name(s, json_string_value(j)) : -1;
        if (sym < 0) goto mismatch;
        return avro_value_set_enum(v, sym);
    }
    case AVRO_UNION: {
        /* the first branch the value fits: null for null, else the others in turn */
        size_t n = avro_schema_union_size(s);
        for (size_t i = 0; i < n; i++) {
            avro_schema_t b = avro_schema_union_branch(s, (int)i);
            if (json_is_null(j) != (avro_typeof(b) == AVRO_NULL)) continue;
            avro_value_t branch;
            char quiet[8];
            if (!avro_value_set_branch(v, (int)i, &branch) && !sd_wire_set(&branch, b, j, path, quiet, sizeof(quiet))) return 0;
        }
        goto mismatch;
    }
    case AVRO_RECORD: {
        if (!json_is_object(j)) goto mismatch;
        size_t n = 0;
        avro_value_get_size(v, &n);
        for (size_t i = 0; i < n && !rc; i++) {
            avro_value_t f;
            const char *name;
            avro_value_get_by_index(v, i, &f, &name);
            avro_schema_t fs = avro_schema_record_field_get_by_index(s, (int)i);
            json_t *fj = json_object_get(j, name);
            char *sub = path[0] ? sd_util_fmt("%s.%s", path, name) : sd_util_strdup(name);
            if (!fj && avro_typeof(fs) == AVRO_UNION) fj = json_null(); /* an optional field left out */
            if (!fj) rc = sd_err_set(err, errlen, SD_ERR_SCENARIO, "field %s: the schema has it, the event does not", sub);
            else rc = sd_wire_set(&f, fs, fj, sub, err, errlen);
            free(sub);
        }
        return rc;
    }
    case AVRO_ARRAY: {
        if (!json_is_array(j)) goto mismatch;
        for (size_t i = 0; i < json_array_size(j) && !rc; i++) {
            avro_value_t el;
            avro_value_append(v, &el, NULL);
            rc = sd_wire_set(&el, avro_schema_array_items(s), json_array_get(j, i), path, err, errlen);
        }
        return rc;
    }
    default:
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "field %s: an Avro type the harness does not write (maps, fixed)", path);
    }
mismatch:
    return sd_err_set(err, errlen, SD_ERR_SCENARIO, "field %s: the event's value does not fit its Avro type %s", path[0] ? path : "(the record)",
                      avro_schema_type_name(s));
}

/* The header: magic 0, id big-endian; for Protobuf the message index
 * list of the first message, a single 0. */
static void sd_wire_header(const sd_wire_t *w, sd_buf_t *out, int id) {
    unsigned char h[6] = {0, (unsigned char)(id >> 24), (unsigned char)(id >> 16), (unsigned char)(id >> 8), (unsigned char)id, 0};
    sd_buf_append(out, h, w->fmt == SD_WIRE_PROTOBUF ? 6 : 5);
}

/* The event as it was rendered, after the header, once the schema finds it
 * valid: a JSON Schema serializer's check before it sends. A check that
 * ran out of a bound sends nothing either: SD_ERR_NOT_JUDGED, the drill
 * inconclusive. */
static sd_err_t sd_wire_encode_json(sd_wire_t *w, json_t *j, const char *json, size_t len, sd_buf_t *out, char *err, size_t errlen) {
    char why[256];
    int valid = sd_jschema_valid(w->js, j, why, sizeof(why));
    if (valid == SD_JSCHEMA_UNJUDGED)
        return sd_err_set(err, errlen, SD_ERR_NOT_JUDGED, "the harness cannot tell whether the event is valid by its JSON Schema: %s", why);
    if (valid != SD_JSCHEMA_VALID)
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "the event is not valid by its JSON Schema: %s", why);
    sd_buf_reset(out);
    sd_wire_header(w, out, w->id);
    sd_buf_append(out, json, len);
    return SD_OK;
}

/* An event as the first message of the user's .proto (protodyn.cpp). */
static sd_err_t sd_wire_encode_protodyn(sd_wire_t *w, json_t *j, sd_buf_t *out, char *err, size_t errlen) {
    uint8_t *b = NULL;
    size_t n = 0;
    char why[256];
    int rc = sd_protodyn_encode(w->pd, j, &b, &n, why, sizeof(why));
    if (!rc) {
        sd_buf_reset(out);
        sd_wire_header(w, out, w->id);
        sd_buf_append(out, b, n);
    }
    free(b);
    return rc ? sd_err_set(err, errlen, SD_ERR_SCENARIO, "encoding an event in Protobuf: %s", why) : SD_OK;
}

/* A scan as the compiled ParcelScan message. */
static sd_err_t sd_wire_encode_protobuf(sd_wire_t *w, json_t *j, sd_buf_t *out, char *err, size_t errlen) {
    if (w->pd) return sd_wire_encode_protodyn(w, j, out, err, errlen);
    Streamdrill__ParcelScan m = STREAMDRILL__PARCEL_SCAN__INIT;
    static const char *const names[] = {"event_id", "parcel_id", "event_time", "location", "scan"};
    char **slots[] = {&m.event_id, &m.parcel_id, &m.event_time, &m.location, &m.scan};
    for (int i = 0; i < 5; i++) {
        json_t *v = json_object_get(j, names[i]);
        if (!json_is_string(v))
            return sd_err_set(err, errlen, SD_ERR_SCENARIO, "encoding an event in Protobuf: field %s: %s", names[i],
                              v ? "the event's value is no string" : "the message has it, the event does not");
        *slots[i] = (char *)json_string_value(v);
    }
    json_t *wg = json_object_get(j, "weight_g");
    if (!json_is_integer(wg))
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "encoding an event in Protobuf: field weight_g: %s",
                          wg ? "the event's value is no integer" : "the message has it, the event does not");
    m.weight_g = json_integer_value(wg);
    size_t size = streamdrill__parcel_scan__get_packed_size(&m);
    sd_buf_reset(out);
    sd_wire_header(w, out, w->id);
    sd_buf_reserve(out, size + 1);
    out->len += streamdrill__parcel_scan__pack(&m, (uint8_t *)out->data + out->len);
    return SD_OK;
}

sd_err_t sd_wire_encode(sd_wire_t *w, const char *json, size_t len, sd_buf_t *out, char *err, size_t errlen) {
    json_t *j = json_loadb(json, len, 0, NULL);
    if (!j)
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "an event that is not JSON cannot be encoded in %s",
                          w->fmt == SD_WIRE_PROTOBUF ? "Protobuf" : w->fmt == SD_WIRE_JSON ? "the JSON Schema wire format" : "Avro");
    if (w->fmt != SD_WIRE_AVRO) {
        sd_err_t e = w->fmt == SD_WIRE_JSON ? sd_wire_encode_json(w, j, json, len, out, err, errlen)
                                            : sd_wire_encode_protobuf(w, j, out, err, errlen);
        json_decref(j);
        return e;
    }
    avro_value_reset(&w->value);
    char why[256] = "";
    int rc = sd_wire_set(&w->value, w->schema, j, "", why, sizeof(why));
    json_decref(j);
    if (rc) return sd_err_set(err, errlen, SD_ERR_SCENARIO, "encoding an event in Avro: %s", why[0] ? why : avro_strerror());
    size_t size = 0;
    avro_value_sizeof(&w->value, &size);
    sd_buf_reset(out);
    sd_wire_header(w, out, w->id);
    sd_buf_reserve(out, size + 1);
    avro_writer_t wr = avro_writer_memory(out->data + out->len, (int64_t)size);
    rc = avro_value_write(wr, &w->value);
    avro_writer_free(wr);
    if (rc) return sd_err_set(err, errlen, SD_ERR_INTERNAL, "writing an Avro record: %s", avro_strerror());
    out->len += size;
    return SD_OK;
}

int sd_wire_kind(sd_malformed_t m) { return m >= SD_MAL_BAD_MAGIC && m < SD_MAL__COUNT; }

int sd_wire_pick_violation(sd_wire_t *w, const char *schema, const char *id_field, const char *time_field) {
    free(w->violate);
    w->violate = NULL;
    json_t *o = json_loads(schema, 0, NULL), *props = json_object_get(o, "properties"), *p;
    const char *name;
    json_object_foreach(props, name, p) {
        const char *t = json_string_value(json_object_get(p, "type"));
        if (!w->violate && t && (!strcmp(t, "integer") || !strcmp(t, "number")) && strcmp(name, id_field) && strcmp(name, time_field))
            w->violate = sd_util_strdup(name);
    }
    json_decref(o);
    return w->violate != NULL;
}

/* schema-violation: the chosen number field as text, framed. */
static void sd_wire_violation(sd_wire_t *w, const char *json, size_t len, sd_buf_t *out) {
    json_t *j = json_loadb(json, len, 0, NULL), *v = w->violate ? json_object_get(j, w->violate) : NULL;
    if (json_is_number(v)) {
        char num[64];
        if (json_is_integer(v)) snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
        else snprintf(num, sizeof(num), "%g", json_real_value(v));
        json_object_set_new(j, w->violate, json_string(num));
    } else if (j && w->violate) {
        json_object_set_new(j, w->violate, json_string("0"));
    }
    char *text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    sd_wire_header(w, out, w->id);
    if (text) sd_buf_puts(out, text);
    else sd_buf_append(out, json, len);
    free(text);
    json_decref(j);
}

/* A varint: 7 bits a byte, low first, the top bit set on all but the last. */
static void sd_wire_put_varint(sd_buf_t *out, uint64_t z) {
    do {
        unsigned char c = (unsigned char)(z & 0x7f);
        z >>= 7;
        sd_buf_putc(out, (char)(z ? c | 0x80 : c));
    } while (z);
}

/* A string field of a record: in Avro its length zigzag-encoded, then its
 * bytes; in Protobuf field number's tag (length-delimited), its length,
 * its bytes. */
static void sd_wire_put_field(const sd_wire_t *w, sd_buf_t *out, int number, const char *s, size_t n) {
    if (w->fmt == SD_WIRE_PROTOBUF) sd_buf_putc(out, (char)(number << 3 | 2)), sd_wire_put_varint(out, n);
    else sd_wire_put_varint(out, (uint64_t)n << 1);
    sd_buf_append(out, s, n);
}

void sd_wire_malformed(sd_wire_t *w, sd_malformed_t m, const char *json, size_t len, sd_buf_t *out) {
    char why[8];
    sd_buf_reset(out);
    if (m == SD_MAL_SCHEMA_VIOLATION && w->fmt == SD_WIRE_JSON) {
        sd_wire_violation(w, json, len, out);
        return;
    }
    if (!sd_wire_kind(m) || (m != SD_MAL_FOREIGN_SCHEMA && sd_wire_encode(w, json, len, out, why, sizeof(why)))) {
        sd_buf_reset(out);
        sd_buf_append(out, json, len);
        return;
    }
    switch (m) {
    case SD_MAL_BAD_MAGIC:
        out->data[0] = 1; /* what a reader takes for the start of the header */
        break;
    case SD_MAL_UNKNOWN_SCHEMA: /* an id no registry gives out soon: 2^31 - 17 */
        out->data[1] = 0x7f, out->data[2] = out->data[3] = (char)0xff, out->data[4] = (char)0xef;
        break;
    case SD_MAL_SCHEMA_VIOLATION: /* Avro and Protobuf encode what fits: the record unbroken (refused at check time) */
        break;
    case SD_MAL_TRUNCATED_RECORD: { /* the header and the first half of the record */
        size_t head = w->fmt == SD_WIRE_PROTOBUF ? 6 : 5;
        out->len = head + (out->len - head) / 2;
        break;
    }
    case SD_MAL_FOREIGN_SCHEMA: { /* a Note: its event id and a line of text */
        json_t *j = json_loadb(json, len, 0, NULL);
        json_t *idv = j ? json_object_get(j, "event_id") : NULL;
        const char *id = json_is_string(idv) ? json_string_value(idv) : "?";
        static const char note[] = "a record of a schema this topic's subject never accepted";
        sd_wire_header(w, out, w->foreign_id);
        if (w->fmt == SD_WIRE_JSON) {
            json_t *n = json_pack("{s:s, s:s}", "event_id", id, "note", note);
            char *text = json_dumps(n, JSON_COMPACT | JSON_PRESERVE_ORDER);
            sd_buf_puts(out, text);
            free(text);
            json_decref(n);
        } else {
            sd_wire_put_field(w, out, 1, id, strlen(id));
            sd_wire_put_field(w, out, 2, note, sizeof(note) - 1);
        }
        json_decref(j);
        break;
    }
    default:
        break;
    }
}

/* ---- reading ---- */

#define SD_WIRE_SCHEMAS 64

struct sd_wire_reader_s {
    sd_registry_t *reg;
    sd_wire_format_t fmt;
    int n;
    struct {
        int id;
        avro_schema_t schema;
        avro_value_iface_t *iface;
        sd_protodyn_t *proto; /* Protobuf: the schema's text, read */
    } s[SD_WIRE_SCHEMAS];
};

sd_wire_reader_t *sd_wire_reader_new(sd_registry_t *reg, sd_wire_format_t fmt) {
    pthread_once(&sd_wire_avro_once, sd_wire_avro_bound);
    sd_wire_reader_t *rd = sd_util_xcalloc(1, sizeof(*rd));
    rd->reg = reg;
    rd->fmt = fmt;
    return rd;
}

void sd_wire_reader_free(sd_wire_reader_t *rd) {
    if (!rd) return;
    for (int i = 0; i < rd->n; i++)
        if (rd->s[i].iface) avro_value_iface_decref(rd->s[i].iface), avro_schema_decref(rd->s[i].schema);
    for (int i = 0; i < rd->n; i++) sd_protodyn_free(rd->s[i].proto);
    sd_registry_close(rd->reg);
    free(rd);
}

/* An Avro value as JSON: records as objects, a union as its branch. */
static json_t *sd_wire_json(avro_value_t *v) {
    switch (avro_value_get_type(v)) {
    case AVRO_NULL: return json_null();
    case AVRO_BOOLEAN: { int b = 0; avro_value_get_boolean(v, &b); return json_boolean(b); }
    case AVRO_INT32: { int32_t i = 0; avro_value_get_int(v, &i); return json_integer(i); }
    case AVRO_INT64: { int64_t l = 0; avro_value_get_long(v, &l); return json_integer(l); }
    case AVRO_FLOAT: { float f = 0; avro_value_get_float(v, &f); return json_real(f); }
    case AVRO_DOUBLE: { double d = 0; avro_value_get_double(v, &d); return json_real(d); }
    case AVRO_STRING: {
        const char *str = NULL;
        size_t size = 0;
        avro_value_get_string(v, &str, &size);
        return json_stringn(str ? str : "", size ? size - 1 : 0);
    }
    case AVRO_BYTES:
    case AVRO_FIXED: {
        const void *b = NULL;
        size_t size = 0;
        if (avro_value_get_type(v) == AVRO_BYTES) avro_value_get_bytes(v, &b, &size);
        else avro_value_get_fixed(v, &b, &size);
        /* text as it is; bytes that are no UTF-8 as base64, never dropped */
        json_t *j = json_stringn(b ? b : "", size);
        if (!j) {
            char *b64 = sd_util_base64(b, size);
            j = json_string(b64);
            free(b64);
        }
        return j;
    }
    case AVRO_ENUM: {
        int sym = 0;
        avro_value_get_enum(v, &sym);
        const char *name = avro_schema_enum_get(avro_value_get_schema(v), sym);
        return json_string(name ? name : "");
    }
    case AVRO_UNION: {
        avro_value_t b;
        return avro_value_get_current_branch(v, &b) ? json_null() : sd_wire_json(&b);
    }
    case AVRO_RECORD:
    case AVRO_MAP:
    case AVRO_ARRAY: { /* an object of the named children, or an array of them */
        int array = avro_value_get_type(v) == AVRO_ARRAY;
        json_t *c = array ? json_array() : json_object();
        size_t n = 0;
        avro_value_get_size(v, &n);
        for (size_t i = 0; i < n; i++) {
            avro_value_t f;
            const char *name = NULL;
            avro_value_get_by_index(v, i, &f, array ? NULL : &name);
            if (array) json_array_append_new(c, sd_wire_json(&f));
            else if (name) json_object_set_new(c, name, sd_wire_json(&f));
        }
        return c;
    }
    default: return json_null();
    }
}

sd_err_t sd_wire_decode(sd_wire_reader_t *rd, const void *p, size_t n, sd_buf_t *out, char *err, size_t errlen) {
    const unsigned char *b = p;
    if (!b || n < 5 || b[0] != 0) return sd_err_set(err, errlen, SD_ERR_SINK, "not in the registry wire format (no magic byte 0)");
    int id = (int)((uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 | b[4]);
    int at = -1;
    for (int i = 0; i < rd->n && at < 0; i++)
        if (rd->s[i].id == id) at = i;
    if (at < 0) {
        if (rd->n == SD_WIRE_SCHEMAS)
            return sd_err_set(err, errlen, SD_ERR_SINK, "schema id %d: more than %d schemas in one sink", id, SD_WIRE_SCHEMAS);
        sd_buf_t text;
        sd_buf_init(&text);
        int found = 0;
        sd_registry_refs_t refs = {0}; /* a Protobuf schema's imports */
        sd_err_t e = sd_registry_schema(rd->reg, id, &text, rd->fmt == SD_WIRE_PROTOBUF ? &refs : NULL, &found, err, errlen);
        avro_schema_t s = NULL;
        sd_protodyn_t *proto = NULL;
        char why[256];
        if (!e && !found) e = sd_err_set(err, errlen, SD_ERR_SINK, "schema id %d: unknown to the registry", id);
        else if (!e && rd->fmt == SD_WIRE_PROTOBUF &&
                 !(proto = sd_protodyn_parse_files(text.data, (const char *const *)refs.names, (const char *const *)refs.texts, refs.n,
                                                   why, sizeof(why))))
            e = sd_err_set(err, errlen, SD_ERR_SINK, "schema id %d: a Protobuf schema the reader cannot follow: %s", id, why);
        else if (!e && rd->fmt == SD_WIRE_AVRO && avro_schema_from_json_length(text.data, text.len, &s))
            e = sd_err_set(err, errlen, SD_ERR_SINK, "schema id %d: no Avro schema avro-c reads: %s", id, avro_strerror());
        sd_buf_free(&text);
        sd_registry_refs_free(&refs);
        if (e) return e;
        at = rd->n++;
        rd->s[at].id = id;
        rd->s[at].schema = s;
        rd->s[at].iface = s ? avro_generic_class_from_schema(s) : NULL;
        rd->s[at].proto = proto;
    }
    if (rd->fmt == SD_WIRE_PROTOBUF) { /* the message indexes, then the message, by the schema's text */
        json_t *j = NULL;
        char why[256];
        if (sd_protodyn_decode(rd->s[at].proto, b + 5, n - 5, &j, why, sizeof(why)))
            return sd_err_set(err, errlen, SD_ERR_SINK, "a record that does not decode with schema %d: %s", id, why);
        char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
        sd_buf_reset(out);
        sd_buf_puts(out, text ? text : "{}");
        free(text);
        json_decref(j);
        return SD_OK;
    }
    if (rd->fmt == SD_WIRE_JSON) { /* the record is its JSON text */
        sd_buf_reset(out);
        sd_buf_append(out, b + 5, n - 5);
        return SD_OK;
    }
    avro_value_t v;
    avro_generic_value_new(rd->s[at].iface, &v);
    avro_reader_t r = avro_reader_memory((const char *)b + 5, (int64_t)(n - 5));
    int rc = avro_value_read(r, &v);
    avro_reader_free(r);
    size_t size = 0;
    if (!rc && (avro_value_sizeof(&v, &size) || size != n - 5)) rc = -1; /* a record uses every byte */
    sd_err_t e = SD_OK;
    if (rc) {
        e = sd_err_set(err, errlen, SD_ERR_SINK, "a record that does not decode with schema %d", id);
    } else {
        json_t *j = sd_wire_json(&v);
        char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
        sd_buf_reset(out);
        sd_buf_puts(out, text ? text : "{}");
        free(text);
        json_decref(j);
    }
    avro_value_decref(&v);
    return e;
}

/* Avro's long (a zigzag varint) from in; -1 at the file's end or past
 * 10 bytes. */
static int sd_wire_ocf_long(FILE *in, int64_t *v) {
    uint64_t u = 0;
    for (int i = 0; i < 10; i++) {
        int c = getc(in);
        if (c == EOF) return -1;
        u |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80)) {
            *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
            return 0;
        }
    }
    return -1;
}

/* A length read from in that fits in the size bytes of the file past
 * where it is read (less keep), or -1. */
static int64_t sd_wire_ocf_len(FILE *in, int64_t size, int64_t keep) {
    int64_t n;
    if (sd_wire_ocf_long(in, &n) || n < 0 || n > size - (int64_t)ftello(in) - keep) return -1;
    return n;
}

/* The container's frame, checked (from the magic's end) before avro-c
 * reads it: avro-c's reader leaks what it allocated when it cannot read
 * the header, and allocates a block's length, as the file gives it,
 * before it reads the block. The header's metadata (a map of bytes, every length
 * within the file) with a schema avro-c reads and a codec of Spark's
 * that avro-c has (null, deflate, snappy; none is null), the sync marker, then blocks of at
 * least one record, each within the file and followed by the marker.
 * NULL when the frame holds, else what is wrong. */
static const char *sd_wire_ocf_frame(FILE *in) {
    struct stat st;
    if (fstat(fileno(in), &st)) return "it cannot be measured";
    int64_t size = (int64_t)st.st_size, n = 1, len;
    int schema = 0;
    while (!sd_wire_ocf_long(in, &n) && n) {
        if (n < 0 && (n == INT64_MIN || sd_wire_ocf_long(in, &len))) return "its header is cut short";
        for (int64_t i = 0; i < (n < 0 ? -n : n); i++) {
            char key[16] = "", val[16] = "";
            int64_t k = sd_wire_ocf_len(in, size, 0);
            if (k < 0 || (k < (int64_t)sizeof(key) ? fread(key, 1, (size_t)k, in) != (size_t)k : fseeko(in, k, SEEK_CUR)))
                return "a key of its header runs past the file's end";
            if ((len = sd_wire_ocf_len(in, size, 0)) < 0) return "a value of its header runs past the file's end";
            if (!strcmp(key, "avro.schema")) {
                char *text = sd_util_xmalloc((size_t)len + 1);
                avro_schema_t sch;
                int bad = fread(text, 1, (size_t)len, in) != (size_t)len || avro_schema_from_json_length(text, (size_t)len, &sch);
                free(text);
                if (bad) return "its header's schema is not one avro-c reads";
                avro_schema_decref(sch);
                schema = 1;
            } else if (!strcmp(key, "avro.codec")) {
                if (len >= (int64_t)sizeof(val) || fread(val, 1, (size_t)len, in) != (size_t)len || (size_t)len != strlen(val) ||
                    (strcmp(val, "null") && strcmp(val, "deflate") && strcmp(val, "snappy")))
                    return "its header names a codec the reader does not take (null, deflate or snappy)";
            } else if (fseeko(in, len, SEEK_CUR)) {
                return "its header cannot be read";
            }
        }
    }
    char sync[16], mark[16];
    if (n || fread(sync, 1, sizeof(sync), in) != sizeof(sync)) return "its header is cut short";
    if (!schema) return "its header holds no schema";
    for (;;) {
        int c = getc(in);
        if (c == EOF) return NULL;
        ungetc(c, in);
        if (sd_wire_ocf_long(in, &n) || n < 1) return "a block holds no records, or its count is cut short";
        if ((len = sd_wire_ocf_len(in, size, (int64_t)sizeof(mark))) < 0) return "a block runs past the file's end";
        if (fseeko(in, len, SEEK_CUR) || fread(mark, 1, sizeof(mark), in) != sizeof(mark) || memcmp(mark, sync, sizeof(sync)))
            return "a block is not followed by the file's sync marker";
    }
}

FILE *sd_wire_ocf_lines(const char *path, char *err, size_t errlen) {
    /* a file a pipeline wrote: a regular one only, opened without blocking
     * (sd_util_open_foreign); the magic and the frame first (above) */
    pthread_once(&sd_wire_avro_once, sd_wire_avro_bound);
    char magic[4] = {0}, why[128] = "cannot be opened";
    FILE *in = sd_util_fopen_foreign(path, why, sizeof(why));
    size_t got = in ? fread(magic, 1, sizeof(magic), in) : 0;
    if (got != sizeof(magic) || memcmp(magic, "Obj\x01", 4)) {
        sd_err_set(err, errlen, SD_ERR_SINK, "%s: not an Avro object container file (%s)", path,
                   in ? "no magic Obj\\x01 at its start" : why);
        if (in) fclose(in);
        return NULL;
    }
    const char *broken = sd_wire_ocf_frame(in);
    if (broken) {
        sd_err_set(err, errlen, SD_ERR_SINK, "%s: not an Avro object container file avro-c reads: %s", path, broken);
        fclose(in);
        return NULL;
    }
    rewind(in);
    avro_file_reader_t r;
    if (avro_file_reader_fp(in, path, 1, &r)) { /* it closes in from now on */
        sd_err_set(err, errlen, SD_ERR_SINK, "%s: not an Avro object container file avro-c reads: %s", path, avro_strerror());
        return NULL;
    }
    FILE *out = tmpfile();
    avro_schema_t schema = avro_file_reader_get_writer_schema(r);
    avro_value_iface_t *iface = schema ? avro_generic_class_from_schema(schema) : NULL;
    avro_value_t v;
    int rc = !out || !iface || avro_generic_value_new(iface, &v);
    while (!rc && (rc = avro_file_reader_read_value(r, &v)) == 0) {
        json_t *j = sd_wire_json(&v);
        char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
        fprintf(out, "%s\n", text ? text : "{}");
        free(text);
        json_decref(j);
        avro_value_reset(&v);
    }
    /* the reader's end is EOF; anything else is a block it could not read */
    int bad = rc && rc != EOF;
    if (iface && out) avro_value_decref(&v);
    if (iface) avro_value_iface_decref(iface);
    if (schema) avro_schema_decref(schema); /* the reader hands out a reference of its own */
    avro_file_reader_close(r);
    if (bad || !out) {
        sd_err_set(err, errlen, SD_ERR_SINK, "%s: %s", path, !out ? "no temporary file for its records" : "a block of records avro-c cannot read");
        if (out) fclose(out);
        return NULL;
    }
    rewind(out);
    return out;
}
