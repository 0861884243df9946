/* lang_int.h - the inside of the scenario language, shared by its files
 * and nothing else (lang.h is the face):
 *
 *   lang_words.c  the machinery: a word into key, operator and value, a
 *                 value parsed by its type with its range, an entry's keys
 *   lang_line.c   a line found in the table and parsed by its entry
 *   lang_hooks.c  the hooks of header directives and steps: the
 *                 combinations a key list cannot say
 *   lang.c        the table itself: every directive and step, its keys
 *   lang_help.c   help, docs/language.md's reference and the man page,
 *                 printed from the table */
#ifndef SD_LANG_INT_H
#define SD_LANG_INT_H

#include "lang.h"

typedef struct {
    char key[64];
    sd_op_t op;
    const char *value;  /* points into the token */
    int has_op;
} sd_kvtok_t;

/* lang_words.c */
int sd_end_col(const sd_toks_t *ts);
int sd_has_key(const sd_pctx_t *c, uint64_t present, const char *key);
void sd_split_kv(const sd_tok_t *t, sd_kvtok_t *kv);
int sd_valid_name(const char *s);
int sd_value_col(const sd_tok_t *t, const sd_kvtok_t *kv);
void sd_fmt_duration(int64_t ms, char *out, size_t n);
void sd_join_choices(const char *const *ch, const char *sep, sd_buf_t *b);

void sd_apply_defaults(const sd_lang_entry_t *e, void *obj);
sd_err_t sd_parse_keys(sd_pctx_t *c, const sd_lang_entry_t *e, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t *present_out);

/* lang_hooks.c: each hook the table names */
sd_err_t sd_hook_name(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_hook_set(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_hook_env(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_hook_producer(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_hook_pipeline(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_hook_variant(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_hook_deploy(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_hook_fault_command(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_hook_version(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_parse_operator(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_hook_sink(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_source(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_events(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_registry(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_deliveries(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_progress(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_model(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_faketime(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_produce(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_instance(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_landing(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_broker(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_fault(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_replay(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_inject(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_await_sink(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_await_batches(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_damage_spark(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_fin_network(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);
sd_err_t sd_parse_expect(sd_pctx_t *c, sd_scenario_t *sc, void *obj, const sd_toks_t *ts, uint64_t present);

/* lang_hooks.c: the words of `damage spark` (the table's key, its hook's check) */
extern const char *const sd_spark_what[];

#endif
