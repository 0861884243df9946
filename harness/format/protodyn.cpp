/* protodyn.cpp - Protobuf schema text read at run time and records decoded
 * and encoded by it, through libprotobuf (see protodyn.h for the contract).
 *
 * A hand-written reader did this before; a hostile probe (issue 76) found
 * it wrapping out-of-range values, reading field numbers over 2^32 as
 * small ones, crashing on a .proto nested deep and refusing map<>, import
 * and the well-known types. libprotobuf is the reference implementation of
 * all of that, so the text goes through protoc's own parser
 * (compiler::Parser over io::Tokenizer), the files it imports come from a
 * small DescriptorDatabase (the user's files by name, the well-known types
 * from the descriptors compiled into libprotobuf), records through
 * DynamicMessageFactory and the wire parser. What stays here is the JSON
 * shape the callers were built on (protodyn.h), which is not proto3's JSON
 * mapping: field names as written, 64-bit integers as JSON integers, every
 * field without presence present. Only the well-known types use
 * libprotobuf's JSON mapping (util::MessageToJsonString).
 *
 * No C++ exception leaves this file: each entry point catches them (a
 * bad_alloc on a hostile schema is an error, not an abort). */
#include "protodyn.h"
extern "C" {
#include "util.h"
}

#include <google/protobuf/compiler/parser.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/descriptor_database.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/json_util.h>

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace pb = google::protobuf;

namespace {

/* The user's own text, as the pool names it (no import can name it). */
const char kMain[] = "<schema>";
/* Messages nested deeper than this in a record or a JSON value are refused
 * (libprotobuf's own limit for the wire parser is 100 as well). */
const int kDepth = 100;

/* libprotobuf reports some causes (a string that is not UTF-8) only to
 * its log: they are kept for the error message instead of printed. */
thread_local std::string last_log;
void keep_log(pb::LogLevel level, const char *, int, const std::string &msg) {
    if (level >= pb::LOGLEVEL_ERROR) last_log = msg;
}
std::once_flag log_once;

int fail(char *why, size_t whylen, const std::string &msg) {
    if (whylen) std::snprintf(why, whylen, "%s", msg.c_str());
    return -1;
}

std::string where(const std::string &file, int line, int column) {
    std::string s = file == kMain ? "" : file + ": ";
    if (line >= 0) s += "line " + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": ";
    return s;
}

/* A well-known type: a file of google/protobuf/ libprotobuf carries. */
bool wkt_file(const std::string &name) {
    return name.compare(0, 16, "google/protobuf/") == 0 && pb::DescriptorPool::generated_pool()->FindFileByName(name);
}

/* The types whose JSON is libprotobuf's proto3 mapping (a wrapper is its
 * value, read here). */
bool wkt_json(const pb::Descriptor *d) {
    static const char *const files[] = {"google/protobuf/timestamp.proto", "google/protobuf/duration.proto",
                                        "google/protobuf/struct.proto",    "google/protobuf/field_mask.proto",
                                        "google/protobuf/any.proto",       "google/protobuf/empty.proto"};
    for (const char *f : files)
        if (d->file()->name() == f) return true;
    return false;
}

bool wrapper(const pb::Descriptor *d) { return d->file()->name() == "google/protobuf/wrappers.proto"; }

/* One file's text parsed by protoc's parser; its errors as line:column. */
struct TextErrors : pb::io::ErrorCollector {
    std::string file, first;
    int count = 0;
    void AddError(int line, pb::io::ColumnNumber column, const std::string &message) override {
        if (!count++) first = where(file, line, column) + message;
    }
    void AddWarning(int, pb::io::ColumnNumber, const std::string &) override {}
};

/* The files a schema may import: the user's (the schema itself, and the
 * ones given by name) parsed when the pool asks for them, the well-known
 * types copied from libprotobuf's compiled descriptors. */
class Files : public pb::DescriptorDatabase {
  public:
    std::map<std::string, std::string> texts;
    std::map<std::string, pb::compiler::SourceLocationTable> locations;
    std::string parse_error, missing;

    bool FindFileByName(const std::string &name, pb::FileDescriptorProto *out) override {
        if (wkt_file(name)) {
            pb::DescriptorPool::generated_pool()->FindFileByName(name)->CopyTo(out);
            return true;
        }
        auto t = texts.find(name);
        if (t == texts.end()) {
            if (missing.empty()) missing = name;
            return false;
        }
        if (t->second.size() > INT_MAX) return note(name + ": a text over 2 GB");
        if (!shallow(name, t->second)) return false;
        pb::io::ArrayInputStream in(t->second.data(), (int)t->second.size());
        TextErrors errors;
        errors.file = name;
        pb::io::Tokenizer tokens(&in, &errors);
        pb::compiler::Parser parser;
        parser.RecordErrorsTo(&errors);
        parser.RecordSourceLocationsTo(&locations[name]);
        bool ok = parser.Parse(&tokens, out) && !errors.count;
        out->set_name(name);
        return ok || note(errors.first.empty() ? name + ": not read" : errors.first);
    }
    bool FindFileContainingSymbol(const std::string &, pb::FileDescriptorProto *) override { return false; }
    bool FindFileContainingExtension(const std::string &, int, pb::FileDescriptorProto *) override { return false; }

  private:
    /* protoc's parser recurses once a block (a message in a message, an
     * aggregate option value) without a limit of its own, and a text
     * nested deep enough overflows the stack: the nesting is counted
     * first, every bracket a level. */
    bool shallow(const std::string &name, const std::string &text) {
        pb::io::ArrayInputStream in(text.data(), (int)text.size());
        TextErrors quiet; /* the parse proper reports them */
        pb::io::Tokenizer tokens(&in, &quiet);
        int depth = 0;
        while (tokens.Next()) {
            const pb::io::Tokenizer::Token &t = tokens.current();
            if (t.type != pb::io::Tokenizer::TYPE_SYMBOL || t.text.size() != 1) continue;
            if (std::strchr("{[(<", t.text[0]) && ++depth > kDepth)
                return note(where(name, t.line, t.column) + "blocks nested more than " + std::to_string(kDepth) + " deep");
            if (std::strchr("}])>", t.text[0]) && depth) depth--;
        }
        return true;
    }
    bool note(const std::string &e) {
        if (parse_error.empty()) parse_error = e;
        return false;
    }
};

/* What the pool refuses in a parsed file (a type not defined, a number
 * used twice), placed by the parser's record of where each element was. */
struct BuildErrors : pb::DescriptorPool::ErrorCollector {
    Files *files = nullptr;
    std::string first;
    int count = 0;
    void AddError(const std::string &filename, const std::string &element, const pb::Message *descriptor, ErrorLocation location,
                  const std::string &message) override {
        if (count++) return;
        int line = -1, column = 0;
        auto t = files->locations.find(filename);
        if (t != files->locations.end() && descriptor) t->second.Find(descriptor, location, &line, &column);
        first = where(filename, line, column) + (element.empty() ? "" : element + ": ") + message;
    }
    void AddWarning(const std::string &, const std::string &, const pb::Message *, ErrorLocation, const std::string &) override {}
};

std::string shown(json_t *v) {
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));
    std::string s = t ? t : "?";
    std::free(t);
    return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

std::string field_name(const pb::FieldDescriptor *f) { return f->containing_type()->full_name() + "." + f->name(); }

/* ---- base64 (RFC 4648; decoding also takes the URL-safe alphabet and no padding) ---- */

json_t *base64(const std::string &b) {
    char *o = sd_util_base64(b.data(), b.size());
    json_t *j = json_string(o);
    free(o);
    return j;
}

bool unbase64(const char *s, size_t n, std::string *out) {
    uint32_t acc = 0;
    int bits = 0;
    size_t i = 0;
    for (; i < n && s[i] != '='; i++) {
        char c = s[i];
        int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
                : c == '+' || c == '-' ? 62 : c == '/' || c == '_' ? 63 : -1;
        if (v < 0) return false;
        acc = acc << 6 | (uint32_t)v;
        if ((bits += 6) >= 8) *out += (char)(uint8_t)(acc >> (bits -= 8));
    }
    for (; i < n; i++)
        if (s[i] != '=') return false;
    return true;
}

/* ---- records into JSON ---- */

json_t *real(double d) {
    if (std::isnan(d)) return json_string("NaN");
    if (std::isinf(d)) return json_string(d > 0 ? "Infinity" : "-Infinity");
    return json_real(d);
}

json_t *message_json(const pb::Message &m, int depth, std::string *err);

/* Field f of m (element i of a repeated one; -1: the singular value). */
json_t *value_json(const pb::Message &m, const pb::FieldDescriptor *f, int i, int depth, std::string *err) {
    const pb::Reflection *r = m.GetReflection();
    bool rep = i >= 0;
    switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32: return json_integer(rep ? r->GetRepeatedInt32(m, f, i) : r->GetInt32(m, f));
    case pb::FieldDescriptor::CPPTYPE_INT64: return json_integer(rep ? r->GetRepeatedInt64(m, f, i) : r->GetInt64(m, f));
    case pb::FieldDescriptor::CPPTYPE_UINT32: return json_integer(rep ? r->GetRepeatedUInt32(m, f, i) : r->GetUInt32(m, f));
    case pb::FieldDescriptor::CPPTYPE_UINT64: {
        uint64_t v = rep ? r->GetRepeatedUInt64(m, f, i) : r->GetUInt64(m, f);
        return v <= (uint64_t)INT64_MAX ? json_integer((json_int_t)v) : json_string(std::to_string(v).c_str());
    }
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: return real(rep ? r->GetRepeatedDouble(m, f, i) : r->GetDouble(m, f));
    case pb::FieldDescriptor::CPPTYPE_FLOAT: return real(rep ? r->GetRepeatedFloat(m, f, i) : r->GetFloat(m, f));
    case pb::FieldDescriptor::CPPTYPE_BOOL: return json_boolean(rep ? r->GetRepeatedBool(m, f, i) : r->GetBool(m, f));
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
        int v = rep ? r->GetRepeatedEnumValue(m, f, i) : r->GetEnumValue(m, f);
        const pb::EnumValueDescriptor *e = f->enum_type()->FindValueByNumber(v);
        return e ? json_string(e->name().c_str()) : json_integer(v);
    }
    case pb::FieldDescriptor::CPPTYPE_STRING: {
        std::string s = rep ? r->GetRepeatedString(m, f, i) : r->GetString(m, f);
        if (f->type() == pb::FieldDescriptor::TYPE_BYTES) return base64(s);
        json_t *j = json_stringn(s.data(), s.size());
        if (!j) *err = field_name(f) + ": a string that is not UTF-8";
        return j;
    }
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
        if (depth >= kDepth) {
            *err = field_name(f) + ": messages nested more than " + std::to_string(kDepth) + " deep";
            return nullptr;
        }
        return message_json(rep ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f), depth + 1, err);
    }
    *err = field_name(f) + ": a type this reader does not know";
    return nullptr;
}

/* A map field: an object of its entries, each key as text. */
json_t *map_json(const pb::Message &m, const pb::FieldDescriptor *f, int depth, std::string *err) {
    const pb::Reflection *r = m.GetReflection();
    json_t *o = json_object();
    for (int i = 0, n = r->FieldSize(m, f); i < n; i++) {
        const pb::Message &e = r->GetRepeatedMessage(m, f, i);
        const pb::FieldDescriptor *kf = f->message_type()->map_key(), *vf = f->message_type()->map_value();
        json_t *k = value_json(e, kf, -1, depth, err);
        json_t *v = k ? value_json(e, vf, -1, depth, err) : nullptr;
        std::string key = json_is_string(k) ? std::string(json_string_value(k), json_string_length(k)) : shown(k);
        json_decref(k);
        if (!v || key.find('\0') != std::string::npos) {
            if (v) *err = field_name(f) + ": a key holding U+0000";
            json_decref(v), json_decref(o);
            return nullptr;
        }
        json_object_set_new(o, key.c_str(), v);
    }
    return o;
}

/* A well-known type in proto3's JSON mapping, from libprotobuf. */
json_t *wkt_value(const pb::Message &m, std::string *err) {
    std::string s;
    pb::util::JsonPrintOptions opt;
    opt.preserve_proto_field_names = true;
    auto st = pb::util::MessageToJsonString(m, &s, opt);
    json_t *j = st.ok() ? json_loadb(s.data(), s.size(), JSON_DECODE_ANY, nullptr) : nullptr;
    if (!j) *err = m.GetDescriptor()->full_name() + ": no JSON for it: " + (st.ok() ? s : st.ToString());
    return j;
}

/* The wire type a field's type is written with, and the one an unknown
 * field came in. */
int wire_type(const pb::FieldDescriptor *f) {
    switch (f->type()) {
    case pb::FieldDescriptor::TYPE_DOUBLE: case pb::FieldDescriptor::TYPE_FIXED64: case pb::FieldDescriptor::TYPE_SFIXED64: return 1;
    case pb::FieldDescriptor::TYPE_FLOAT: case pb::FieldDescriptor::TYPE_FIXED32: case pb::FieldDescriptor::TYPE_SFIXED32: return 5;
    case pb::FieldDescriptor::TYPE_STRING: case pb::FieldDescriptor::TYPE_BYTES: case pb::FieldDescriptor::TYPE_MESSAGE: return 2;
    case pb::FieldDescriptor::TYPE_GROUP: return 3;
    default: return 0;
    }
}

int wire_type(const pb::UnknownField &u) {
    switch (u.type()) {
    case pb::UnknownField::TYPE_FIXED64: return 1;
    case pb::UnknownField::TYPE_LENGTH_DELIMITED: return 2;
    case pb::UnknownField::TYPE_GROUP: return 3;
    case pb::UnknownField::TYPE_FIXED32: return 5;
    default: return 0;
    }
}

/* libprotobuf keeps a field the schema has, sent in a wire type its type
 * is not written with, aside as an unknown field and reads the record;
 * this reader refuses it (a writer of another schema, or bytes that are
 * not a record), as the hand-written one did. */
bool wire_types_fit(const pb::Message &m, std::string *err) {
    const pb::UnknownFieldSet &u = m.GetReflection()->GetUnknownFields(m);
    for (int i = 0; i < u.field_count(); i++) {
        const pb::FieldDescriptor *f = m.GetDescriptor()->FindFieldByNumber(u.field(i).number());
        if (f && wire_type(u.field(i)) != wire_type(f)) {
            *err = field_name(f) + ": wire type " + std::to_string(wire_type(u.field(i))) + " where its type is written with " +
                   std::to_string(wire_type(f));
            return false;
        }
    }
    return true;
}

json_t *message_json(const pb::Message &m, int depth, std::string *err) {
    const pb::Descriptor *d = m.GetDescriptor();
    if (wkt_json(d)) return wkt_value(m, err);
    if (wrapper(d)) return value_json(m, d->field(0), -1, depth, err);
    if (!wire_types_fit(m, err)) return nullptr;
    const pb::Reflection *r = m.GetReflection();
    json_t *o = json_object();
    for (int i = 0; i < d->field_count(); i++) {
        const pb::FieldDescriptor *f = d->field(i);
        json_t *v = nullptr;
        if (f->is_map()) {
            v = map_json(m, f, depth, err);
        } else if (f->is_repeated()) {
            v = json_array();
            for (int k = 0, n = r->FieldSize(m, f); v && k < n; k++) {
                json_t *e = value_json(m, f, k, depth, err);
                if (!e) json_decref(v), v = nullptr;
                else json_array_append_new(v, e);
            }
        } else if (f->has_presence() && !r->HasField(m, f)) {
            continue;
        } else {
            v = value_json(m, f, -1, depth, err);
        }
        if (!v) {
            json_decref(o);
            return nullptr;
        }
        json_object_set_new(o, f->name().c_str(), v);
    }
    return o;
}

/* ---- JSON into records ---- */

/* An integer member: a JSON integer, or (for the 64-bit types, which
 * proto3's JSON writes as text) a string of decimal digits. */
bool read_int(json_t *v, bool text_ok, __int128 *out) {
    if (json_is_integer(v)) return *out = json_integer_value(v), true;
    if (!text_ok || !json_is_string(v)) return false;
    const char *s = json_string_value(v);
    bool neg = *s == '-';
    s += neg;
    if (!*s || json_string_length(v) > 24) return false;
    __int128 x = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        x = x * 10 + (*s - '0');
    }
    *out = neg ? -x : x;
    return true;
}

bool read_real(json_t *v, double *out) {
    if (json_is_number(v)) return *out = json_number_value(v), true;
    const char *s = json_string_value(v);
    if (!s) return false;
    if (!std::strcmp(s, "NaN")) *out = NAN;
    else if (!std::strcmp(s, "Infinity")) *out = INFINITY;
    else if (!std::strcmp(s, "-Infinity")) *out = -INFINITY;
    else return false;
    return true;
}

int message_from(pb::Message *m, json_t *o, int depth, std::string *err);

/* Set (or add, when rep) field f of m from v; "" or what is wrong. */
int value_from(pb::Message *m, const pb::FieldDescriptor *f, json_t *v, bool rep, int depth, std::string *err) {
    const pb::Reflection *r = m->GetReflection();
    std::string type = f->type() == pb::FieldDescriptor::TYPE_MESSAGE ? f->message_type()->full_name()
                       : f->type() == pb::FieldDescriptor::TYPE_ENUM ? f->enum_type()->full_name()
                                                                     : f->type_name();
    auto wrong = [&]() {
        *err = field_name(f) + ": the value does not fit its type (" + type + "): " + shown(v);
        return -1;
    };
    auto range = [&]() {
        *err = field_name(f) + ": " + shown(v) + " is out of range for " + type;
        return -1;
    };
    __int128 i = 0;
    double d = 0;
    switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32:
        if (!read_int(v, false, &i)) return wrong();
        if (i < INT32_MIN || i > INT32_MAX) return range();
        rep ? r->AddInt32(m, f, (int32_t)i) : r->SetInt32(m, f, (int32_t)i);
        return 0;
    case pb::FieldDescriptor::CPPTYPE_INT64:
        if (!read_int(v, true, &i)) return wrong();
        if (i < INT64_MIN || i > INT64_MAX) return range();
        rep ? r->AddInt64(m, f, (int64_t)i) : r->SetInt64(m, f, (int64_t)i);
        return 0;
    case pb::FieldDescriptor::CPPTYPE_UINT32:
        if (!read_int(v, false, &i)) return wrong();
        if (i < 0 || i > UINT32_MAX) return range();
        rep ? r->AddUInt32(m, f, (uint32_t)i) : r->SetUInt32(m, f, (uint32_t)i);
        return 0;
    case pb::FieldDescriptor::CPPTYPE_UINT64:
        if (!read_int(v, true, &i)) return wrong();
        if (i < 0 || i > (__int128)UINT64_MAX) return range();
        rep ? r->AddUInt64(m, f, (uint64_t)i) : r->SetUInt64(m, f, (uint64_t)i);
        return 0;
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
        if (!read_real(v, &d)) return wrong();
        rep ? r->AddDouble(m, f, d) : r->SetDouble(m, f, d);
        return 0;
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
        if (!read_real(v, &d)) return wrong();
        if (std::isfinite(d) && std::fabs(d) > FLT_MAX) return range();
        rep ? r->AddFloat(m, f, (float)d) : r->SetFloat(m, f, (float)d);
        return 0;
    case pb::FieldDescriptor::CPPTYPE_BOOL:
        if (!json_is_boolean(v)) return wrong();
        rep ? r->AddBool(m, f, json_is_true(v)) : r->SetBool(m, f, json_is_true(v));
        return 0;
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
        const pb::EnumDescriptor *e = f->enum_type();
        const pb::EnumValueDescriptor *s = json_is_string(v) ? e->FindValueByName(json_string_value(v)) : nullptr;
        if (s) i = s->number();
        else if (json_is_string(v)) return *err = field_name(f) + ": " + shown(v) + " is no symbol of " + type, -1;
        else if (!read_int(v, false, &i)) return wrong();
        else if (i < INT32_MIN || i > INT32_MAX) return range();
        /* proto2's enums are closed: a number they do not name cannot be sent */
        else if (e->file()->syntax() != pb::FileDescriptor::SYNTAX_PROTO3 && !e->FindValueByNumber((int)i))
            return *err = field_name(f) + ": " + shown(v) + " is no value of " + type, -1;
        rep ? r->AddEnumValue(m, f, (int)i) : r->SetEnumValue(m, f, (int)i);
        return 0;
    }
    case pb::FieldDescriptor::CPPTYPE_STRING: {
        if (!json_is_string(v)) return wrong();
        std::string s(json_string_value(v), json_string_length(v)), raw;
        if (f->type() == pb::FieldDescriptor::TYPE_BYTES) {
            if (!unbase64(s.data(), s.size(), &raw)) return *err = field_name(f) + ": not base64: " + shown(v), -1;
            s.swap(raw);
        }
        rep ? r->AddString(m, f, s) : r->SetString(m, f, s);
        return 0;
    }
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
        if (depth >= kDepth) return *err = field_name(f) + ": objects nested more than " + std::to_string(kDepth) + " deep", -1;
        return message_from(rep ? r->AddMessage(m, f) : r->MutableMessage(m, f), v, depth + 1, err);
    }
    return wrong();
}

/* A map field from a JSON object: each key read as the key's type. */
int map_from(pb::Message *m, const pb::FieldDescriptor *f, json_t *o, int depth, std::string *err) {
    if (!json_is_object(o)) return *err = field_name(f) + ": expected an object (a map)", -1;
    const pb::FieldDescriptor *kf = f->message_type()->map_key(), *vf = f->message_type()->map_value();
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        pb::Message *e = m->GetReflection()->AddMessage(m, f);
        json_t *k = nullptr;
        if (kf->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
            k = json_string(key);
        } else if (kf->cpp_type() == pb::FieldDescriptor::CPPTYPE_BOOL) {
            k = !std::strcmp(key, "true") ? json_true() : !std::strcmp(key, "false") ? json_false() : nullptr;
        } else { /* an integer key: its text as a number (as text when past int64; value_from checks its range) */
            json_t *text = json_string(key);
            __int128 i;
            if (read_int(text, true, &i)) k = i >= INT64_MIN && i <= INT64_MAX ? json_integer((json_int_t)i) : json_incref(text);
            json_decref(text);
        }
        if (!k) return *err = field_name(f) + ": key \"" + key + "\" is no " + kf->type_name(), -1;
        int rc = value_from(e, kf, k, false, depth, err);
        json_decref(k);
        if (rc || json_is_null(v)) return rc ? rc : (*err = field_name(f) + ": key \"" + key + "\": null", -1);
        if (value_from(e, vf, v, false, depth, err)) { /* named by the map's field and the key, not the entry's */
            std::string entry = field_name(vf);
            if (!err->compare(0, entry.size(), entry)) err->replace(0, entry.size(), field_name(f) + "[\"" + key + "\"]");
            return -1;
        }
    }
    return 0;
}

/* A well-known type from its proto3 JSON form, by libprotobuf. */
int wkt_from(pb::Message *m, json_t *v, std::string *err) {
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    std::string s = t ? t : "";
    std::free(t);
    auto st = pb::util::JsonStringToMessage(s, m);
    if (!st.ok()) return *err = m->GetDescriptor()->full_name() + ": " + shown(v) + " does not read: " + st.ToString(), -1;
    return 0;
}

int message_from(pb::Message *m, json_t *o, int depth, std::string *err) {
    const pb::Descriptor *d = m->GetDescriptor();
    if (wkt_json(d)) return wkt_from(m, o, err);
    if (wrapper(d)) return value_from(m, d->field(0), o, false, depth, err);
    if (!json_is_object(o)) return *err = d->full_name() + ": expected an object", -1;
    const pb::Reflection *r = m->GetReflection();
    for (int i = 0; i < d->field_count(); i++) {
        const pb::FieldDescriptor *f = d->field(i);
        json_t *v = json_object_get(o, f->name().c_str());
        if (!v || json_is_null(v)) continue;
        const pb::OneofDescriptor *one = f->real_containing_oneof();
        if (one && r->HasOneof(*m, one))
            return *err = d->full_name() + ": both " + r->GetOneofFieldDescriptor(*m, one)->name() + " and " + f->name() + " of oneof " +
                          one->name() + " are given",
                   -1;
        if (f->is_map()) {
            if (map_from(m, f, v, depth, err)) return -1;
        } else if (f->is_repeated()) {
            if (!json_is_array(v)) return *err = field_name(f) + ": expected an array (a repeated field)", -1;
            size_t k;
            json_t *e;
            json_array_foreach(v, k, e) {
                if (json_is_null(e)) return *err = field_name(f) + ": null in a repeated field", -1;
                if (value_from(m, f, e, true, depth, err)) return -1;
            }
        } else if (value_from(m, f, v, false, depth, err)) {
            return -1;
        }
    }
    return 0;
}

} // namespace

struct sd_protodyn_s {
    Files files;
    BuildErrors errors;
    std::unique_ptr<pb::DescriptorPool> pool;
    std::unique_ptr<pb::DynamicMessageFactory> factory;
    const pb::FileDescriptor *file = nullptr;
};

extern "C" sd_protodyn_t *sd_protodyn_parse_files(const char *text, const char *const *names, const char *const *texts, size_t n,
                                                  char *err, size_t errlen) {
    std::call_once(log_once, [] { pb::SetLogHandler(keep_log); });
    sd_protodyn_t *p = nullptr;
    try {
        p = new sd_protodyn_t;
        p->files.texts[kMain] = text;
        for (size_t i = 0; i < n; i++) p->files.texts.emplace(names[i], texts[i]);
        p->errors.files = &p->files;
        p->pool.reset(new pb::DescriptorPool(&p->files, &p->errors));
        p->file = p->pool->FindFileByName(kMain);
        std::string e = p->files.parse_error;
        if (!p->file && e.empty() && !p->files.missing.empty())
            e = "import \"" + p->files.missing + "\": not a well-known type (google/protobuf/...) and no file of that name was given";
        if (!p->file && e.empty()) e = p->errors.first.empty() ? "the schema does not build" : p->errors.first;
        if (p->file && !p->file->message_type_count()) e = "no message in the schema";
        if (!e.empty()) {
            fail(err, errlen, e);
            delete p;
            return nullptr;
        }
        p->factory.reset(new pb::DynamicMessageFactory(p->pool.get()));
        return p;
    } catch (const std::exception &x) {
        fail(err, errlen, std::string("reading the schema: ") + x.what());
        delete p;
        return nullptr;
    }
}

extern "C" sd_protodyn_t *sd_protodyn_parse(const char *text, char *err, size_t errlen) {
    return sd_protodyn_parse_files(text, nullptr, nullptr, 0, err, errlen);
}

extern "C" void sd_protodyn_free(sd_protodyn_t *p) { delete p; }

/* The message indexes (zigzag varints: a count, then each index). */
static const pb::Descriptor *sd_protodyn_indexes(const sd_protodyn_t *p, const uint8_t **b, const uint8_t *end, std::string *err) {
    auto varint = [&](int64_t *out) {
        uint64_t v = 0;
        for (int shift = 0; shift < 64 && *b < end; shift += 7) {
            uint8_t c = *(*b)++;
            v |= (uint64_t)(c & 0x7f) << shift;
            if (!(c & 0x80)) return *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1), true;
        }
        return false;
    };
    int64_t count;
    if (!varint(&count)) return *err = "no message indexes", nullptr;
    if (count < 0 || count > 64) return *err = "message indexes: a count of " + std::to_string(count), nullptr;
    const pb::Descriptor *d = p->file->message_type(0);
    for (int64_t i = 0; i < count; i++) {
        int64_t idx;
        if (!varint(&idx)) return *err = "message indexes cut short", nullptr;
        int have = i ? d->nested_type_count() : p->file->message_type_count();
        if (idx < 0 || idx >= have)
            return *err = "message index " + std::to_string(idx) + ": the schema has " + std::to_string(have) + " there", nullptr;
        d = i ? d->nested_type((int)idx) : p->file->message_type((int)idx);
    }
    return d;
}

extern "C" int sd_protodyn_decode(const sd_protodyn_t *p, const uint8_t *b, size_t n, json_t **out, char *why, size_t whylen) {
    try {
        std::string err;
        const uint8_t *at = b, *end = b + n;
        const pb::Descriptor *d = sd_protodyn_indexes(p, &at, end, &err);
        if (!d) return fail(why, whylen, err);
        if (end - at > INT_MAX) return fail(why, whylen, d->full_name() + ": a record over 2 GB");
        std::unique_ptr<pb::Message> m(p->factory->GetPrototype(d)->New());
        last_log.clear();
        if (!m->ParsePartialFromArray(at, (int)(end - at)))
            return fail(why, whylen, d->full_name() + ": a record cut short or not Protobuf (" + std::to_string(end - at) + " bytes" +
                                         (last_log.empty() ? "" : ": " + last_log) + ")");
        if (!m->IsInitialized()) return fail(why, whylen, d->full_name() + ": required fields missing: " + m->InitializationErrorString());
        *out = message_json(*m, 0, &err);
        return *out ? 0 : fail(why, whylen, err);
    } catch (const std::exception &x) {
        return fail(why, whylen, std::string("decoding a record: ") + x.what());
    }
}

extern "C" int sd_protodyn_encode(const sd_protodyn_t *p, json_t *o, uint8_t **out, size_t *len, char *why, size_t whylen) {
    try {
        const pb::Descriptor *d = p->file->message_type(0);
        std::unique_ptr<pb::Message> m(p->factory->GetPrototype(d)->New());
        std::string err, bytes;
        if (message_from(m.get(), o, 0, &err)) return fail(why, whylen, err);
        if (!m->IsInitialized()) return fail(why, whylen, d->full_name() + ": required fields missing: " + m->InitializationErrorString());
        if (!m->SerializePartialToString(&bytes)) return fail(why, whylen, d->full_name() + ": does not serialize (over 2 GB)");
        uint8_t *grown = static_cast<uint8_t *>(std::realloc(*out, *len + bytes.size() + 1));
        if (!grown) return fail(why, whylen, d->full_name() + ": out of memory");
        std::memcpy(grown + *len, bytes.data(), bytes.size());
        *out = grown;
        *len += bytes.size();
        return 0;
    } catch (const std::exception &x) {
        return fail(why, whylen, std::string("encoding a record: ") + x.what());
    }
}
