/* fuzz_registry.c - libFuzzer target: what a schema registry sends back,
 * read apart from the network (harness/format/registry.c's
 * sd_registry_answer). The first byte picks the status (200, 404, 409,
 * 401, 500 or one from the second byte) and what the call wants (nothing,
 * an id, a schema); the rest is the answer's body. An id read is never
 * negative, an error's words are printable text that ends; a URL and an
 * auth= made of the same bytes are checked too, and an error about them
 * never repeats a URL's user:password@ or an auth= it does not take.
 * Nothing may crash, leak or hang. `make fuzz` runs it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    static const int statuses[] = {200, 404, 409, 401, 500};
    int pick = data[0] % 6;
    int status = pick < 5 ? statuses[pick] : 100 + data[1] % 500;
    sd_registry_want_t want = (sd_registry_want_t)(data[0] / 6 % 3);
    const char *body = (const char *)data + 2;
    size_t n = size - 2;
    char why[512];
    int id = -1;
    sd_buf_t text;
    sd_buf_init(&text);
    sd_err_t e = sd_registry_answer(status, body, n, want, data[1] & 1 ? 404 : 409, &id, &text, why, sizeof(why));
    if (memchr(why, 0, sizeof(why)) == NULL) abort();
    if (!e && status == 200 && want == SD_REGISTRY_WANT_ID && id < 0) abort();
    if (!e && status == 200 && want == SD_REGISTRY_WANT_SCHEMA && !text.data) abort();
    for (const char *p = why; *p; p++)
        if ((unsigned char)*p < 0x20) abort(); /* the registry's words made printable */
    sd_buf_free(&text);
    /* the same bytes as a URL and as auth=: a URL with user:password@ is
     * refused in words that leave out all but its scheme, an auth= that is
     * none of the forms in words that leave it out whole */
    char *s = strndup(body, n);
    char err[512];
    size_t scheme = !strncmp(s, "http://", 7) ? 7 : !strncmp(s, "https://", 8) ? 8 : 0;
    if (scheme && memchr(s + scheme, '@', strcspn(s + scheme, "/?#"))) {
        if (sd_registry_url_check(s, err, sizeof(err)) != SD_ERR_REGISTRY || !strstr(err, "://...: expected no user:password@"))
            abort();
    } else {
        sd_registry_url_check(s, err, sizeof(err));
    }
    if (sd_registry_auth_check(s, err, sizeof(err))) {
        size_t el = strlen(err);
        if (!(el > 18 && !strcmp(err + el - 18, "found another form")) && !(el > 21 && !strcmp(err + el - 21, "found no NAME or PATH")))
            abort();
    }
    free(s);
    return 0;
}
