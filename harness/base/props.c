/* props.c - a client properties file (props.h), read by the harness
 * (run --kafka-config) and by the reference pipelines alike. */
#include "props.h"

#include <stdlib.h>
#include <string.h>

/* value with each ${ENV:NAME} replaced; NULL (err names NAME) when one is unset or not closed */
static char *sd_props_expand(const char *value, const char *path, int line, char *err, size_t errlen) {
    sd_buf_t b;
    sd_buf_init(&b);
    sd_buf_puts(&b, "");
    for (const char *s = value; *s;) {
        const char *at = strstr(s, "${ENV:");
        if (!at) { sd_buf_puts(&b, s); break; }
        sd_buf_append(&b, s, (size_t)(at - s));
        const char *end = strchr(at + 6, '}');
        if (!end) {
            sd_err_set(err, errlen, SD_ERR_USAGE, "%s:%d: ${ENV: without its closing }", path, line);
            sd_buf_free(&b);
            return NULL;
        }
        char *name = sd_util_strndup(at + 6, (size_t)(end - at - 6));
        const char *v = getenv(name);
        if (!v) sd_err_set(err, errlen, SD_ERR_USAGE, "%s:%d: ${ENV:%s}: the environment has no %s", path, line, name, name);
        free(name);
        if (!v) { sd_buf_free(&b); return NULL; }
        sd_buf_puts(&b, v);
        s = end + 1;
    }
    return sd_buf_steal(&b);
}

sd_err_t sd_props_read(const char *path, sd_kvlist_t *into, char *err, size_t errlen) {
    char *text;
    size_t len;
    sd_err_t e = sd_util_read_file(path, &text, &len, err, errlen);
    if (e) return e;
    int line = 0;
    for (char *s = text, *next; !e && s && *s; s = next) {
        line++;
        next = strchr(s, '\n');
        if (next) *next++ = 0;
        size_t n = strlen(s);
        if (n && s[n - 1] == '\r') s[--n] = 0;
        s += strspn(s, " \t");
        if (!*s || *s == '#' || *s == '!') continue;
        char *eq = strchr(s, '=');
        if (!eq || eq == s) { e = sd_err_set(err, errlen, SD_ERR_USAGE, "%s:%d: expected KEY=VALUE", path, line); break; }
        char *k_end = eq;
        while (k_end > s && (k_end[-1] == ' ' || k_end[-1] == '\t')) k_end--;
        char *key = sd_util_strndup(s, (size_t)(k_end - s));
        char *v = eq + 1;
        v += strspn(v, " \t");
        n = strlen(v);
        while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) v[--n] = 0;
        char *value = sd_props_expand(v, path, line, err, errlen);
        if (value) sd_kvlist_add(into, key, value);
        else e = SD_ERR_USAGE;
        free(key);
        free(value);
    }
    free(text);
    return e;
}
