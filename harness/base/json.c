/* json.c - JSON the harness reads (sink rows, event logs) with numbers too
 * wide for its parsers (see json.h). */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t sd_json_number_span(const char *s, size_t len, int *integer, int leading_zeros) {
    size_t i = 0;
    *integer = 1;
    if (i < len && s[i] == '-') i++;
    size_t d0 = i;
    if (!leading_zeros && i < len && s[i] == '0') i++;
    else while (i < len && s[i] >= '0' && s[i] <= '9') i++;
    if (i == d0) return 0;
    if (i < len && s[i] == '.') {
        size_t f0 = ++i;
        while (i < len && s[i] >= '0' && s[i] <= '9') i++;
        if (i == f0) return 0;
        *integer = 0;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-')) i++;
        size_t e0 = i;
        while (i < len && s[i] >= '0' && s[i] <= '9') i++;
        if (i == e0) return 0;
        *integer = 0;
    }
    return i;
}

/* Does the number text n[0..k) (an integer or not) fit the parsers: an
 * int64, or a finite double? */
static int sd_json_number_fits(const char *n, size_t k, int integer) {
    if (integer && k <= 18) return 1;
    char b[512];
    if (k >= sizeof(b)) return 0;
    memcpy(b, n, k);
    b[k] = 0;
    errno = 0;
    if (integer) {
        (void)strtoll(b, NULL, 10);
        return errno != ERANGE;
    }
    double d = strtod(b, NULL);
    return isfinite(d);
}

int sd_json_quote_wide_numbers(const char *in, size_t len, char **out, size_t *outlen) {
    *out = NULL;
    *outlen = 0;
    char *o = NULL;
    size_t on = 0, done = 0;
    int str = 0;
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        if (str) {
            if (c == '\\') i++;
            else if (c == '"') str = 0;
            continue;
        }
        if (c == '"') { str = 1; continue; }
        if (c != '-' && (c < '0' || c > '9')) continue;
        size_t j = i + 1;
        while (j < len && ((in[j] >= '0' && in[j] <= '9') || in[j] == '.' || in[j] == 'e' || in[j] == 'E' || in[j] == '+' ||
                           in[j] == '-'))
            j++;
        int integer;
        if (sd_json_number_span(in + i, j - i, &integer, 0) == j - i && !sd_json_number_fits(in + i, j - i, integer)) {
            if (!o) {
                o = malloc(len * 3 + 2);
                if (!o) return 0;
            }
            memcpy(o + on, in + done, i - done);
            on += i - done;
            o[on++] = '"';
            memcpy(o + on, in + i, j - i);
            on += j - i;
            o[on++] = '"';
            done = j;
        }
        i = j - 1;
    }
    if (!o) return 0;
    memcpy(o + on, in + done, len - done);
    on += len - done;
    *out = o;
    *outlen = on;
    return 1;
}

json_t *sd_json_loadb(const char *text, size_t len, size_t flags) {
    json_error_t je;
    json_t *o = json_loadb(text, len, flags, &je);
    if (o || (!strstr(je.text, "too big") && !strstr(je.text, "overflow"))) return o;
    char *wide;
    size_t wlen;
    if (!sd_json_quote_wide_numbers(text, len, &wide, &wlen)) return NULL;
    o = json_loadb(wide, wlen, flags, NULL);
    free(wide);
    return o;
}
