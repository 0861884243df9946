/* fuzz_avro_ocf.c - libFuzzer target: the reader of Avro object container
 * files (sd_wire_ocf_lines, harness/format/wire.c: a Spark file sink's
 * `.avro` part files, read through avro-c) on any bytes, written as a
 * file. The file is either refused, with a reason naming it, or read as
 * JSON lines, each line one record's JSON object. Nothing may crash, leak
 * or hang. `make fuzz` runs it. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_dir.h"
#include "util.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *path = sd_util_fmt("%s/part-00000.avro", sd_fuzz_dir());
    if (sd_util_write_file(path, data, size, NULL, 0)) abort();
    char err[1024] = "";
    FILE *f = sd_wire_ocf_lines(path, err, sizeof(err));
    if (!f) {
        if (!strstr(err, path)) abort();
    } else {
        char *line = NULL;
        size_t cap = 0;
        ssize_t got;
        while ((got = getline(&line, &cap, f)) > 0) {
            if (line[got - 1] != '\n') abort();
            json_t *o = json_loadb(line, (size_t)got - 1, JSON_ALLOW_NUL, NULL);
            if (!json_is_object(o)) abort();
            json_decref(o);
        }
        free(line);
        fclose(f);
    }
    free(path);
    return 0;
}
