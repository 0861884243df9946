/* fuzz_scenario.c - libFuzzer target: the .drill parser (scenario.c and
 * the language table in lang.c) on any bytes. A scenario must parse or be
 * refused with an error naming file:line:col; nothing may crash, hang or
 * leak. `make fuzz` runs it (seed corpus: the repository's drills). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > (1u << 20)) return 0;
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0; /* a NUL inside ends the text, as the file loader refuses it */
    sd_kvlist_t over = {0};
    sd_kvlist_add(&over, "mode", "exactly-once");
    sd_scenario_t *sc = NULL;
    char err[1024];
    sd_err_t e = sd_scenario_parse_text("fuzz.drill", text, &over, &sc, err, sizeof(err));
    if (e == SD_OK) {
        if (!sc || !sc->nsteps) abort(); /* a parse that succeeds has steps */
        sd_scenario_free(sc);
    } else if (e != SD_ERR_SCENARIO || strncmp(err, "fuzz.drill", 10)) {
        abort(); /* every refusal names the file */
    }
    sd_kvlist_free(&over);
    free(text);
    return 0;
}
