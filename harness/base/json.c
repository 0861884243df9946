/* json.c - JSON the harness reads (sink rows, event logs) with numbers too
 * wide for its parsers (see json.h). */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Is n[0..k) a number by JSON's grammar? */
static int sd_json_number_valid(const char *n, size_t k) {
    size_t i = 0;
    if (i < k && n[i] == '-') i++;
    if (i >= k) return 0;
    if (n[i] == '0') i++;
    else if (n[i] >= '1' && n[i] <= '9') while (i < k && n[i] >= '0' && n[i] <= '9') i++;
    else return 0;
    if (i < k && n[i] == '.') {
        size_t f = ++i;
        while (i < k && n[i] >= '0' && n[i] <= '9') i++;
        if (i == f) return 0;
    }
    if (i < k && (n[i] == 'e' || n[i] == 'E')) {
        i++;
        if (i < k && (n[i] == '+' || n[i] == '-')) i++;
        size_t e = i;
        while (i < k && n[i] >= '0' && n[i] <= '9') i++;
        if (i == e) return 0;
    }
    return i == k;
}

/* Does the number text n[0..k) fit the parsers (an int64, or a finite double)? */
static int sd_json_number_fits(const char *n, size_t k) {
    int integer = 1;
    for (size_t i = 0; i < k; i++)
        if (n[i] == '.' || n[i] == 'e' || n[i] == 'E') integer = 0;
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
        if (sd_json_number_valid(in + i, j - i) && !sd_json_number_fits(in + i, j - i)) {
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
