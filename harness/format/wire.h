/* wire.h - events in a schema registry's wire format: a zero byte, the
 * schema's id in 4 bytes (big-endian), then the record in Avro's binary
 * encoding (avro-c), or for Protobuf the message's index in its schema (a
 * single 0: the first message) and the message (protobuf-c), or for JSON
 * Schema the event's JSON text, checked against the schema before it is
 * sent (harness/format/jschema.h). The harness renders every event as JSON, as it always
 * has (the ledger, the models and the checks read those fields); a source
 * with `events ... format=avro` hands each rendering to sd_wire_encode on
 * its way to Kafka.
 *
 * The malformed kinds of the wire format break an encoded record the way a
 * producer or a registry can: the wrong magic byte, a schema id the
 * registry never gave, the record cut short, a record of a schema the
 * subject never accepted (registered under a subject of its own). */
#ifndef SD_WIRE_H
#define SD_WIRE_H

#include <stdio.h>

#include "err.h"
#include "events.h"
#include "registry.h"
#include "util.h"

typedef struct sd_wire_s sd_wire_t;

/* The record encodings, numbered as `events format=` numbers them. */
typedef enum { SD_WIRE_AVRO = 1, SD_WIRE_PROTOBUF = 2, SD_WIRE_JSON = 3 } sd_wire_format_t;

/* The schema of the parcel scans, as text the caller frees. Avro: a record
 * "ParcelScan" of the generator's fields (strings, weight_g a long), its id
 * and event-time fields named as the contract names them; JSON Schema: an
 * object of the same fields, all required, weight_g an integer of at
 * least 0. Protobuf: the
 * message of harness/format/parcel_scan.proto, compiled into the harness
 * with protoc-c (its field names are its own: event_id, event_time). */
char *sd_wire_parcel_schema(sd_wire_format_t fmt, const char *id_field, const char *time_field);
/* The schema of the foreign-schema kind's records: an event id and a note. */
const char *sd_wire_foreign_schema(sd_wire_format_t fmt);

/* A codec for schema (Avro, JSON Schema: its text; Protobuf: the parcel
 * scans' message, whatever the text) registered as id; foreign_id is the
 * foreign schema's id (-1: none registered). SD_ERR_SCENARIO names what in
 * the schema avro-c, or the JSON Schema validator, refused. */
sd_err_t sd_wire_open(sd_wire_format_t fmt, const char *schema, int id, int foreign_id, sd_wire_t **out, char *err, size_t errlen);
void sd_wire_close(sd_wire_t *w);

/* The JSON event json (len bytes) in the wire format, into out (reset
 * first). A field the schema has and the event lacks, or of another type
 * (JSON Schema: any place the event is not valid), is an error naming it
 * (SD_ERR_SCENARIO); a JSON Schema check that could not tell (a bound of
 * the validator ran out) is SD_ERR_NOT_JUDGED. */
sd_err_t sd_wire_encode(sd_wire_t *w, const char *json, size_t len, sd_buf_t *out, char *err, size_t errlen);

/* Whether m is a kind of the wire format (it breaks the encoded record,
 * not the JSON). */
int sd_wire_kind(sd_malformed_t m);
/* The event json broken as the wire kind m says, into out (reset first);
 * schema-violation (JSON Schema) sends the field sd_wire_pick_violation
 * chose as text (its number in quotes), framed as a valid record is.
 * A JSON kind (the event's text already broken) is sent as its bytes, with
 * no header: a producer that forgot its serializer. */
void sd_wire_malformed(sd_wire_t *w, sd_malformed_t m, const char *json, size_t len, sd_buf_t *out);
/* The field schema-violation breaks in w's JSON Schema (its text): the
 * first property typed integer or number that is neither the id nor the
 * event time (a broken record still names its event). 0 when it has none. */
int sd_wire_pick_violation(sd_wire_t *w, const char *schema, const char *id_field, const char *time_field);

#endif

/* ---- reading the wire format (the Kafka sink reader's `format=avro`) ---- */

typedef struct sd_wire_reader_s sd_wire_reader_t;

/* A reader of fmt (Avro, Protobuf or JSON Schema) that fetches each
 * schema once from the registry reg (the reader owns it: freed with it). */
sd_wire_reader_t *sd_wire_reader_new(sd_registry_t *reg, sd_wire_format_t fmt);
void sd_wire_reader_free(sd_wire_reader_t *rd);
/* The value p (n bytes) as a JSON object into out (reset first): a union
 * as its branch's value, an enum as its symbol, bytes as a string (JSON
 * Schema: the text after the header, as it is).
 * SD_ERR_SINK names what is wrong with the value (no magic byte, an id the
 * registry does not know, a record that does not decode); SD_ERR_REGISTRY
 * a registry that cannot be reached. */
sd_err_t sd_wire_decode(sd_wire_reader_t *rd, const void *p, size_t n, sd_buf_t *out, char *err, size_t errlen);

/* An Avro object container file (a file sink's `.avro` part: the schema in
 * its header, then blocks of records) as JSON lines, one record's object a
 * line, in a temporary file rewound to its start (deleted when closed);
 * NULL with err naming the file and what avro-c refused. */
FILE *sd_wire_ocf_lines(const char *path, char *err, size_t errlen);
