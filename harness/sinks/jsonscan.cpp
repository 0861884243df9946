/* jsonscan.cpp - the id (and write time) of one sink row, through simdjson.
 *
 * Reading a sink of ten million JSON rows is mostly JSON parsing: with
 * jansson (which builds every object) it costs about 1.9 us a row, with
 * simdjson's DOM parser (which validates the whole document, as jansson
 * does) about 0.07 us. This is the one C++ file of streamdrill: simdjson
 * has no C interface, so this shim gives it one (jsonscan.h). Everything
 * else that reads or writes JSON uses jansson.
 *
 * Semantics follow jansson's defaults, which the reconciler was built on:
 * the document must be valid JSON (UTF-8 checked) with an object at the top;
 * only a top-level field counts; with duplicate keys the last one wins; a
 * string value is the id as is, an integer value its decimal text, anything
 * else is no id; a string holding U+0000 is refused (jansson refuses the
 * whole document). */
#include "jsonscan.h"

extern "C" {
#include "json.h"
}

#include <simdjson.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

using namespace simdjson;

namespace {

/* One parser and one padded copy of the input per thread: the input (a
 * Kafka payload, a line buffer) has no readable padding of its own. */
struct scanner {
    dom::parser parser;
    char *buf = nullptr;
    size_t cap = 0;
    ~scanner() { std::free(buf); }
    const char *pad(const char *json, size_t len) {
        if (len + SIMDJSON_PADDING > cap) {
            size_t ncap = (len + SIMDJSON_PADDING) * 2;
            char *nb = static_cast<char *>(std::realloc(buf, ncap));
            if (!nb) return nullptr;
            buf = nb;
            cap = ncap;
        }
        std::memcpy(buf, json, len);
        std::memset(buf + len, 0, SIMDJSON_PADDING);
        return buf;
    }
};

thread_local scanner sc;

/* The last top-level field named key, or an error. */
simdjson_result<dom::element> last_field(dom::object obj, std::string_view key) {
    dom::element found;
    bool have = false;
    for (dom::key_value_pair kv : obj)
        if (kv.key == key) {
            found = kv.value;
            have = true;
        }
    if (!have) return NO_SUCH_FIELD;
    return found;
}

}  // namespace

extern "C" int sd_jsonscan_id_time(const char *json, size_t len, const char *field, char *out, size_t outlen,
                                   const char *time_field, int64_t *t_ms, int (*parse_time)(const char *, int64_t *)) {
    if (t_ms) *t_ms = INT64_MIN;
    if (!json || !len || !outlen) return -1;
    const char *p = sc.pad(json, len);
    if (!p) return -1;
    dom::element doc;
    error_code pe = sc.parser.parse(p, len, false).get(doc);
    if (pe == NUMBER_ERROR) {
        /* a valid number too wide for simdjson: read the document with it as text */
        char *wide;
        size_t wlen;
        if (!sd_json_quote_wide_numbers(json, len, &wide, &wlen)) return -1;
        p = sc.pad(wide, wlen);
        std::free(wide);
        if (!p) return -1;
        len = wlen;
        pe = sc.parser.parse(p, len, false).get(doc);
    }
    if (pe) return -1;
    dom::object obj;
    if (doc.get_object().get(obj)) return -1;
    int n = -1;
    dom::element v;
    if (!last_field(obj, field).get(v)) {
        if (v.is_string()) {
            std::string_view s = v.get_string().value_unsafe();
            if (s.find('\0') != std::string_view::npos) return -1;
            size_t k = s.size() < outlen - 1 ? s.size() : outlen - 1;
            std::memcpy(out, s.data(), k);
            out[k] = 0;
            n = (int)k;
        } else if (v.is_int64()) {
            long long i = (long long)v.get_int64().value_unsafe();
            n = std::snprintf(out, outlen, "%lld", i);
            if (n >= (int)outlen) n = (int)outlen - 1;
        }
    }
    if (time_field && t_ms) {
        dom::element t;
        if (!last_field(obj, time_field).get(t)) {
            if (t.is_int64()) {
                *t_ms = t.get_int64().value_unsafe();
            } else if (t.is_string()) {
                std::string_view s = t.get_string().value_unsafe();
                char tb[64];
                if (s.size() < sizeof(tb) && s.find('\0') == std::string_view::npos) {
                    std::memcpy(tb, s.data(), s.size());
                    tb[s.size()] = 0;
                    char *end;
                    long long v2 = std::strtoll(tb, &end, 10);
                    if (end != tb && !*end) *t_ms = v2;
                    else if (parse_time) {
                        int64_t parsed;
                        if (!parse_time(tb, &parsed)) *t_ms = parsed;
                    }
                }
            }
        }
    }
    return n;
}
