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

#include <simdjson.h>

#include <cerrno>
#include <cmath>
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

/* Is n[0..k) a number by JSON's grammar? */
static bool number_valid(const char *n, size_t k) {
    size_t i = 0;
    if (i < k && n[i] == '-') i++;
    if (i >= k) return false;
    if (n[i] == '0') i++;
    else if (n[i] >= '1' && n[i] <= '9') while (i < k && n[i] >= '0' && n[i] <= '9') i++;
    else return false;
    if (i < k && n[i] == '.') {
        size_t f = ++i;
        while (i < k && n[i] >= '0' && n[i] <= '9') i++;
        if (i == f) return false;
    }
    if (i < k && (n[i] == 'e' || n[i] == 'E')) {
        i++;
        if (i < k && (n[i] == '+' || n[i] == '-')) i++;
        size_t e = i;
        while (i < k && n[i] >= '0' && n[i] <= '9') i++;
        if (i == e) return false;
    }
    return i == k;
}

/* Does the number text n[0..k) fit the parsers (an int64, or a finite double)? */
static bool number_fits(const char *n, size_t k) {
    bool integer = true;
    for (size_t i = 0; i < k; i++)
        if (n[i] == '.' || n[i] == 'e' || n[i] == 'E') integer = false;
    if (integer && k <= 18) return true;
    char b[512];
    if (k >= sizeof(b)) return false;
    std::memcpy(b, n, k);
    b[k] = 0;
    errno = 0;
    if (integer) {
        (void)std::strtoll(b, nullptr, 10);
        return errno != ERANGE;
    }
    double d = std::strtod(b, nullptr);
    return std::isfinite(d);
}

extern "C" int sd_json_quote_wide_numbers(const char *in, size_t len, char **out, size_t *outlen) {
    *out = nullptr;
    *outlen = 0;
    char *o = nullptr;
    size_t on = 0, done = 0;
    bool str = false;
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        if (str) {
            if (c == '\\') i++;
            else if (c == '"') str = false;
            continue;
        }
        if (c == '"') { str = true; continue; }
        if (c != '-' && (c < '0' || c > '9')) continue;
        size_t j = i + 1;
        while (j < len && ((in[j] >= '0' && in[j] <= '9') || in[j] == '.' || in[j] == 'e' || in[j] == 'E' || in[j] == '+' ||
                           in[j] == '-'))
            j++;
        if (number_valid(in + i, j - i) && !number_fits(in + i, j - i)) {
            if (!o) {
                o = static_cast<char *>(std::malloc(len * 3 + 2));
                if (!o) return 0;
            }
            std::memcpy(o + on, in + done, i - done);
            on += i - done;
            o[on++] = '"';
            std::memcpy(o + on, in + i, j - i);
            on += j - i;
            o[on++] = '"';
            done = j;
        }
        i = j - 1;
    }
    if (!o) return 0;
    std::memcpy(o + on, in + done, len - done);
    on += len - done;
    *out = o;
    *outlen = on;
    return 1;
}

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
