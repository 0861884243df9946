/* fuzz_dir.h - for the fuzz targets whose readers take a folder of files
 * (fuzz_delta_log.c, fuzz_spark_log.c) or a file (fuzz_avro_ocf.c): a
 * folder of the target's own under TMPDIR, made at the first input and
 * removed at exit, and an input cut at its NUL bytes into the pieces a
 * target writes as files (JSON text holds no raw NUL, so a NUL is free to
 * end a piece). */
#ifndef SD_FUZZ_DIR_H
#define SD_FUZZ_DIR_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static char *sd_fuzz_root;

static inline void sd_fuzz_root_remove(void) {
    if (sd_fuzz_root) sd_util_rmtree(sd_fuzz_root, NULL, 0);
}

/* The target's folder (made once, removed at exit). */
static inline const char *sd_fuzz_dir(void) {
    if (!sd_fuzz_root) {
        const char *t = getenv("TMPDIR");
        char *tmpl = sd_util_fmt("%s/sd-fuzz-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(tmpl)) abort();
        sd_fuzz_root = tmpl;
        atexit(sd_fuzz_root_remove);
    }
    return sd_fuzz_root;
}

typedef struct {
    const uint8_t *p;
    size_t n;
} sd_fuzz_piece_t;

/* data cut at its NUL bytes into at most max pieces (the last one keeps
 * any NULs past them); how many. */
static inline int sd_fuzz_pieces(const uint8_t *data, size_t size, sd_fuzz_piece_t *out, int max) {
    int n = 0;
    while (n < max) {
        const uint8_t *nul = n + 1 < max ? memchr(data, 0, size) : NULL;
        size_t len = nul ? (size_t)(nul - data) : size;
        out[n].p = data, out[n].n = len;
        n++;
        if (!nul) break;
        data += len + 1, size -= len + 1;
    }
    return n;
}

/* The k-th name of the names piece (names apart by spaces or newlines),
 * copied into out when it can name a file in a folder (no slash, not .
 * or .., under 200 bytes); 0 when there is no such name. */
static inline int sd_fuzz_name(const sd_fuzz_piece_t *names, int k, char *out, size_t outlen) {
    size_t at = 0;
    for (int i = 0;; i++) {
        while (at < names->n && (names->p[at] == ' ' || names->p[at] == '\n')) at++;
        if (at >= names->n) return 0;
        size_t start = at;
        while (at < names->n && names->p[at] != ' ' && names->p[at] != '\n') at++;
        if (i < k) continue;
        size_t len = at - start;
        if (len >= outlen || len >= 200 || memchr(names->p + start, '/', len)) return 0;
        memcpy(out, names->p + start, len);
        out[len] = 0;
        return strcmp(out, ".") && strcmp(out, "..");
    }
}

#endif
