/* run_wire.c - a source whose events go to Kafka in the registry wire
 * format (`events ... format=avro`, `protobuf`, `json-schema`): the schema checked and its first
 * event encoded before anything is written, the schemas registered once
 * the ledger is open, and each staged value encoded on its way to the
 * producer. Everything before that point (the ledger, the models) sees the
 * event as the JSON it was rendered as. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "run_int.h"

static const char *sd_run_wire_name(const sd_scenario_t *sc) {
    return sc->events_format == SD_WIRE_PROTOBUF ? "protobuf" : sc->events_format == SD_WIRE_JSON ? "json-schema" : "avro";
}

static sd_schema_type_t sd_run_wire_type(const sd_scenario_t *sc) {
    return sc->events_format == SD_WIRE_PROTOBUF ? SD_SCHEMA_PROTOBUF : sc->events_format == SD_WIRE_JSON ? SD_SCHEMA_JSON : SD_SCHEMA_AVRO;
}

static const char *sd_run_wire_id_field(const sd_scenario_t *sc) {
    return sc->events_kind == SD_EVENTS_LOG ? sc->log_id_field : sc->id_field ? sc->id_field : "event_id";
}

/* The first inject step that may send schema-violation (0: none). */
static int sd_run_wire_violation_line(const sd_scenario_t *sc) {
    for (int i = 0; i < sc->nsteps; i++) {
        const sd_step_t *st = &sc->steps[i];
        int mask = st->send.malformed_kinds;
        if (st->kind == SD_STEP_INJECT && st->send.malformed > 0 && !st->send.side &&
            (!mask || (mask & (1 << SD_MAL_SCHEMA_VIOLATION))))
            return st->line;
    }
    return 0;
}

sd_err_t sd_run_wire_check(sd_run_t *r, const char *url, const char *schema_path, char *err, size_t errlen) {
    const sd_scenario_t *sc = r->sc;
    /* the registry line and its URL were checked with the drill (parse.c, lang_hooks.c) */
    char why[512];
    if (sc->events_format == SD_WIRE_PROTOBUF && !schema_path &&
        ((sc->id_field && strcmp(sc->id_field, "event_id")) || (sc->time_field && strcmp(sc->time_field, "event_time"))))
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: events format=protobuf: without schema= the parcel scans' own "
                          "message is sent (harness/format/parcel_scan.proto: id event_id, time event_time); expected the "
                          "contract's id=event_id time=event_time, or schema=PATH (a .proto of your own)", sc->path, sc->events_line);
    if (schema_path) {
        size_t n;
        if (sd_util_read_file(schema_path, &r->src.schema, &n, why, sizeof(why)))
            return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: events schema=%s: %s", sc->path, sc->events_line, schema_path, why);
    } else if (sc->events_kind == SD_EVENTS_LOG) {
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: events log= format=%s: expected schema=PATH (the log's events "
                          "have fields of their own), found none", sc->path, sc->events_line, sd_run_wire_name(sc));
    } else {
        r->src.schema = sd_wire_parcel_schema(sc->events_format, sc->id_field ? sc->id_field : "event_id",
                                              sc->time_field ? sc->time_field : "event_time");
    }
    r->src.registry = sd_util_strdup(url);
    /* the credentials are read now: one missing is found before anything is sent */
    sd_registry_opts_t ro = {.auth = r->src.reg_auth, .ca = r->src.reg_ca, .cert = r->src.reg_cert, .key = r->src.reg_key,
                             .timeout_ms = sc->registry_timeout_ms};
    if (sd_registry_open(url, &ro, &r->src.reg, why, sizeof(why)))
        return sd_err_set(err, errlen, SD_ERR_REGISTRY, "%s:%d: %s", sc->path, sc->registry_line, why);
    /* the schema compiles, and event 0 fits it: found now, not mid-drill */
    sd_wire_t *w = NULL;
    sd_err_t e = sd_wire_open(sc->events_format, r->src.schema, 0, -1, &w, why, sizeof(why));
    if (!e) {
        sd_buf_t p, k;
        sd_buf_init(&p), sd_buf_init(&k);
        if (!(e = sd_events_render(r->src.events, 0, INT64_MIN, &p, &k, NULL, why, sizeof(why))))
            e = sd_wire_encode(w, p.data, p.len, &r->src.encoded, why, sizeof(why));
        sd_buf_free(&p), sd_buf_free(&k);
        int line = sc->events_format == SD_WIRE_JSON ? sd_run_wire_violation_line(sc) : 0;
        if (!e && line && !sd_wire_pick_violation(w, r->src.schema, sd_run_wire_id_field(sc), sc->time_field ? sc->time_field : "event_time")) {
            sd_wire_close(w);
            return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: inject malformed= sends schema-violation (a number field as "
                              "text), and the JSON Schema has no property typed integer or number beside the id and the event "
                              "time; expected kinds= without it", sc->path, line);
        }
        sd_wire_close(w);
    }
    if (e)
        return sd_err_set(err, errlen, e, "%s:%d: events format=%s%s%s: %s", sc->path, sc->events_line, sd_run_wire_name(sc),
                          schema_path ? " schema=" : "", schema_path ? schema_path : "", why);
    return SD_OK;
}

/* Register text under subject, with SD_ERR_REGISTRY for a refusal too. */
static sd_err_t sd_run_wire_put(sd_run_t *r, const char *subject, const char *text, int *id, char *err, size_t errlen) {
    int refused = 0;
    sd_err_t e = sd_registry_register(r->src.reg, subject, sd_run_wire_type(r->sc), text, id, &refused, err, errlen);
    return refused ? SD_ERR_REGISTRY : e;
}

sd_err_t sd_run_wire_register(sd_run_t *r, char *err, size_t errlen) {
    if (!r->src.schema) return SD_OK;
    /* the topic's subject, as Confluent's and Apicurio's serializers name
     * it, under Confluent's default rule (BACKWARD: a new version must read
     * what the old one wrote); the foreign schema under one of its own,
     * which this topic's never accepted */
    r->src.subject = sd_util_fmt("%s-value", r->src.topic);
    char *foreign = sd_util_fmt("%s-foreign-value", r->src.topic);
    int id = -1, fid = -1;
    sd_err_t e = sd_registry_compatibility(r->src.reg, r->src.subject, "BACKWARD", err, errlen);
    if (!e) e = sd_run_wire_put(r, r->src.subject, r->src.schema, &id, err, errlen);
    if (!e) e = sd_run_wire_put(r, foreign, sd_wire_foreign_schema(r->sc->events_format), &fid, err, errlen);
    if (!e) e = sd_wire_open(r->sc->events_format, r->src.schema, id, fid, &r->src.wire, err, errlen);
    if (!e && r->sc->events_format == SD_WIRE_JSON)
        sd_wire_pick_violation(r->src.wire, r->src.schema, sd_run_wire_id_field(r->sc), r->sc->time_field ? r->sc->time_field : "event_time");
    if (!e) {
        sd_ledger_meta_set(r->ledger, "registry", r->src.registry, NULL, 0);
        sd_ledger_meta_set(r->ledger, "format", sd_run_wire_name(r->sc), NULL, 0);
        sd_ledger_meta_set(r->ledger, "schema_subject", r->src.subject, NULL, 0);
        sd_ledger_meta_set_int(r->ledger, "schema_id", id, NULL, 0);
        sd_run_say(r, "schema registry at %s: subject %s (compatibility BACKWARD), schema id %d (foreign-schema records: id %d)",
                   r->src.registry, r->src.subject, id, fid);
    }
    free(foreign);
    return e;
}

/* The schema's next version for a drift: the record with a field
 * `sd_extra` added (optional, default null: BACKWARD-compatible), or with
 * `location` a long where it was a string (incompatible). NULL (why set)
 * when the schema has no such field to change. */
static char *sd_run_wire_evolve(const char *schema, int type_change, char *why, size_t whylen) {
    json_t *o = json_loads(schema, 0, NULL), *fields = o ? json_object_get(o, "fields") : NULL;
    char *text = NULL;
    if (!json_is_array(fields)) {
        snprintf(why, whylen, "the schema is no Avro record");
    } else if (!type_change) {
        json_array_append_new(fields, json_pack("{s:s, s:[s, {s:s, s:s, s:[{s:s, s:s}, {s:s, s:s}]}], s:n}", "name", "sd_extra", "type",
                                                "null", "type", "record", "name", "SdExtra", "fields", "name", "note", "type",
                                                "string", "name", "v", "type", "long", "default"));
        text = json_dumps(o, JSON_COMPACT);
    } else {
        size_t i;
        json_t *f;
        json_array_foreach(fields, i, f) if (!strcmp(json_string_value(json_object_get(f, "name")) ?: "", "location")) {
            json_object_set_new(f, "type", json_string("long"));
            text = json_dumps(o, JSON_COMPACT);
        }
        if (!text) snprintf(why, whylen, "the schema has no field location to change");
    }
    json_decref(o);
    return text;
}

sd_err_t sd_run_wire_drift(sd_run_t *r, int type_change, char *note, size_t notelen, char *err, size_t errlen) {
    note[0] = 0;
    if (!r->src.wire || r->src.evolved[type_change]) return SD_OK;
    char why[512] = "";
    char *text = sd_run_wire_evolve(r->src.schema, type_change, why, sizeof(why));
    if (!text) return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: inject drift= in Avro: %s", r->sc->path, r->sc->steps[r->step].line, why);
    int id = -1, refused = 0;
    sd_err_t e = sd_registry_register(r->src.reg, r->src.subject, SD_SCHEMA_AVRO, text, &id, &refused, why, sizeof(why));
    if (!e && refused) {
        /* what the rule refuses goes in with the rule off, as a producer
         * forcing an incompatible change does, and the rule is put back;
         * the note keeps the registry's reason, without the URL and a Java
         * exception's name before it */
        const char *r409 = strstr(why, "HTTP 409: "), *ex = r409 ? strstr(r409, "Exception: ") : NULL;
        const char *reason = ex ? ex + 11 : r409 ? r409 + 10 : why;
        snprintf(note, notelen, "the registry refused the new version under BACKWARD: \"%.240s\"; registered with compatibility NONE",
                 reason);
        e = sd_registry_compatibility(r->src.reg, r->src.subject, "NONE", err, errlen);
        if (!e) e = sd_registry_register(r->src.reg, r->src.subject, SD_SCHEMA_AVRO, text, &id, &refused, err, errlen);
        if (!e && refused) e = sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: %s refused a schema with compatibility NONE",
                                          r->src.registry, r->src.subject);
        if (!e) e = sd_registry_compatibility(r->src.reg, r->src.subject, "BACKWARD", err, errlen);
    } else if (e) {
        snprintf(err, errlen, "%s", why);
    }
    if (!e) e = sd_wire_open(SD_WIRE_AVRO, text, id, -1, &r->src.evolved[type_change], err, errlen);
    if (!e) {
        size_t n = strlen(note);
        snprintf(note + n, notelen - n, "%sschema version with %s: id %d", n ? "; " : "",
                 type_change ? "location a long" : "a field sd_extra added", id);
    }
    free(text);
    return e;
}

const void *sd_run_wire_value(sd_run_t *r, const char *kind, const char *detail, const void *value, size_t *vlen, sd_err_t *e,
                              char *err, size_t errlen) {
    if (!r->src.wire || !value) return value;
    int mal = detail && !strcmp(kind, "malformed") ? sd_malformed_parse(detail) : -1;
    /* a drift's events go under the version made for it (sd_run_wire_drift;
     * the detail is the one injectors/data.c stages a type change with) */
    sd_wire_t *w = r->src.wire;
    if (!strcmp(kind, "drift")) w = r->src.evolved[detail && !strcmp(detail, "location is a number")] ?: w;
    if (mal >= 0) {
        sd_wire_malformed(w, (sd_malformed_t)mal, value, *vlen, &r->src.encoded);
    } else if ((*e = sd_wire_encode(w, value, *vlen, &r->src.encoded, err, errlen))) {
        return NULL;
    }
    *vlen = r->src.encoded.len;
    return r->src.encoded.data;
}

void sd_run_wire_close(sd_run_t *r) {
    sd_wire_close(r->src.wire);
    sd_wire_close(r->src.evolved[0]), sd_wire_close(r->src.evolved[1]);
    r->src.wire = r->src.evolved[0] = r->src.evolved[1] = NULL;
    free(r->src.schema), free(r->src.registry), free(r->src.subject);
    r->src.schema = r->src.registry = r->src.subject = NULL;
    sd_registry_close(r->src.reg);
    r->src.reg = NULL;
    free(r->src.reg_auth), free(r->src.reg_ca), free(r->src.reg_cert), free(r->src.reg_key);
    r->src.reg_auth = r->src.reg_ca = r->src.reg_cert = r->src.reg_key = NULL;
    sd_buf_free(&r->src.encoded);
}
