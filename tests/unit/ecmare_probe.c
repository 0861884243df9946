/* ecmare_probe.c - the ECMA-262 pattern reader (harness/format/ecmare.c)
 * answering one question a line, for tests/ecmare_diff.py, which asks
 * Node's RegExp the same and compares.
 *
 * Each line of stdin is a JSON array [pattern, subject] (strings, NUL
 * allowed); each gets one line on stdout:
 *   {"r":"refused","kind":"not-ecma"|"unsupported","err":...}  not compiled
 *   {"r":true} / {"r":false}        the pattern matches somewhere in the
 *                                   subject / nowhere (as JSON Schema's
 *                                   `pattern` is read: unanchored)
 *   {"r":"unjudged","why":...}      the match ran out of a bound
 *   {"r":"bad-input","err":...}     the line was no such array
 * A message that is not UTF-8 (which jansson, and so the reports, would
 * refuse) comes with its bytes above 0x7f as \xHH and "not_utf8":true.
 * A pattern the same as the line before's is not compiled again. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ecmare.h"

/* err with each byte above 0x7f as \xHH */
static json_t *escaped(const char *err) {
    char b[4 * 512 + 1];
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)err; *p && n + 5 < sizeof(b); p++)
        n += (size_t)(*p < 0x80 ? snprintf(b + n, sizeof(b) - n, "%c", *p) : snprintf(b + n, sizeof(b) - n, "\\x%02x", *p));
    b[n] = 0;
    return json_string(b);
}

static void answer(json_t *o) {
    char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    puts(s ? s : "{\"r\":\"bad-output\"}");
    free(s);
    json_decref(o);
}

int main(void) {
    char *line = NULL, *last = NULL, err[512];
    size_t cap = 0, lastlen = 0;
    ssize_t n;
    sd_ecmare_t *re = NULL;
    sd_ecmare_refusal_t kind = 0;
    int compiled = 0;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        json_error_t je;
        json_t *in = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, &je);
        json_t *p = json_array_get(in, 0), *s = json_array_get(in, 1);
        if (!json_is_string(p) || !json_is_string(s)) {
            answer(json_pack("{s:s,s:s}", "r", "bad-input", "err", in ? "expected [pattern, subject]" : je.text));
            json_decref(in);
            fflush(stdout);
            continue;
        }
        size_t plen = json_string_length(p);
        if (!compiled || plen != lastlen || memcmp(last, json_string_value(p), plen)) {
            sd_ecmare_free(re);
            free(last);
            last = malloc(plen + 1);
            memcpy(last, json_string_value(p), plen + 1);
            lastlen = plen;
            err[0] = 0;
            re = sd_ecmare_compile(last, plen, &kind, err, sizeof(err));
            compiled = 1;
        }
        if (!re) {
            json_t *o = json_pack("{s:s,s:s}", "r", "refused", "kind", kind == SD_ECMARE_NOT_ECMA ? "not-ecma" : "unsupported");
            json_t *e = json_string(err);
            if (!e) json_object_set_new(o, "not_utf8", json_true());
            json_object_set_new(o, "err", e ? e : escaped(err));
            answer(o);
        } else {
            char why[256] = "";
            int m = sd_ecmare_match(re, json_string_value(s), json_string_length(s), why, sizeof(why));
            answer(m < 0 ? json_pack("{s:s,s:s}", "r", "unjudged", "why", why) : json_pack("{s:b}", "r", m));
        }
        json_decref(in);
        fflush(stdout);
    }
    sd_ecmare_free(re);
    free(last);
    free(line);
    return 0;
}
