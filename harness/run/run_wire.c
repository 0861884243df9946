/* run_wire.c - a source whose events go to Kafka in the registry wire
 * format (`events ... format=avro`): the schema checked and its first
 * event encoded before anything is written, the schemas registered once
 * the ledger is open, and each staged value encoded on its way to the
 * producer. Everything before that point (the ledger, the models) sees the
 * event as the JSON it was rendered as. */
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "run_int.h"

sd_err_t sd_run_wire_check(sd_run_t *r, const char *url, const char *schema_path, char *err, size_t errlen) {
    const sd_scenario_t *sc = r->sc;
    /* the registry line and its URL were checked with the drill (parse.c, lang_hooks.c) */
    char why[512];
    if (schema_path) {
        size_t n;
        if (sd_util_read_file(schema_path, &r->src.schema, &n, why, sizeof(why)))
            return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: events schema=%s: %s", sc->path, sc->events_line, schema_path, why);
    } else if (sc->events_kind == SD_EVENTS_LOG) {
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: events log= format=avro: expected schema=PATH (the log's events "
                          "have fields of their own), found none", sc->path, sc->events_line);
    } else {
        r->src.schema = sd_wire_parcel_schema(sc->id_field ? sc->id_field : "event_id", sc->time_field ? sc->time_field : "event_time");
    }
    r->src.registry = sd_util_strdup(url);
    /* the schema compiles, and event 0 fits it: found now, not mid-drill */
    sd_wire_t *w = NULL;
    sd_err_t e = sd_wire_open(r->src.schema, 0, -1, &w, why, sizeof(why));
    if (!e) {
        sd_buf_t p, k;
        sd_buf_init(&p), sd_buf_init(&k);
        if (!(e = sd_events_render(r->src.events, 0, INT64_MIN, &p, &k, NULL, why, sizeof(why))))
            e = sd_wire_encode(w, p.data, p.len, &r->src.encoded, why, sizeof(why));
        sd_buf_free(&p), sd_buf_free(&k);
        sd_wire_close(w);
    }
    if (e)
        return sd_err_set(err, errlen, e, "%s:%d: events format=avro%s%s: %s", sc->path, sc->events_line, schema_path ? " schema=" : "",
                          schema_path ? schema_path : "", why);
    return SD_OK;
}

sd_err_t sd_run_wire_register(sd_run_t *r, char *err, size_t errlen) {
    if (!r->src.schema) return SD_OK;
    /* the topic's subject, as Confluent's and Apicurio's serializers name it;
     * the foreign schema under one of its own, which this topic's never accepted */
    char *subject = sd_util_fmt("%s-value", r->src.topic), *foreign = sd_util_fmt("%s-foreign-value", r->src.topic);
    int id = -1, fid = -1;
    sd_err_t e = sd_registry_register(r->src.registry, subject, SD_SCHEMA_AVRO, r->src.schema, &id, err, errlen);
    if (!e) e = sd_registry_register(r->src.registry, foreign, SD_SCHEMA_AVRO, sd_wire_foreign_schema(), &fid, err, errlen);
    if (!e) e = sd_wire_open(r->src.schema, id, fid, &r->src.wire, err, errlen);
    if (!e) {
        sd_ledger_meta_set(r->ledger, "registry", r->src.registry, NULL, 0);
        sd_ledger_meta_set(r->ledger, "format", "avro", NULL, 0);
        sd_ledger_meta_set(r->ledger, "schema_subject", subject, NULL, 0);
        sd_ledger_meta_set_int(r->ledger, "schema_id", id, NULL, 0);
        sd_run_say(r, "schema registry at %s: subject %s, schema id %d (foreign-schema records: id %d)", r->src.registry, subject, id, fid);
    }
    free(subject), free(foreign);
    return e;
}

const void *sd_run_wire_value(sd_run_t *r, const char *kind, const char *detail, const void *value, size_t *vlen, char *err,
                              size_t errlen) {
    if (!r->src.wire || !value) return value;
    int mal = -1;
    for (int m = 0; detail && !strcmp(kind, "malformed") && m < SD_MAL__COUNT && mal < 0; m++)
        if (!strcmp(detail, sd_malformed_name((sd_malformed_t)m))) mal = m;
    if (mal >= 0) {
        sd_wire_malformed(r->src.wire, (sd_malformed_t)mal, value, *vlen, &r->src.encoded);
    } else if (sd_wire_encode(r->src.wire, value, *vlen, &r->src.encoded, err, errlen)) {
        return NULL;
    }
    *vlen = r->src.encoded.len;
    return r->src.encoded.data;
}

void sd_run_wire_close(sd_run_t *r) {
    sd_wire_close(r->src.wire);
    r->src.wire = NULL;
    free(r->src.schema), free(r->src.registry);
    r->src.schema = r->src.registry = NULL;
    sd_buf_free(&r->src.encoded);
}
