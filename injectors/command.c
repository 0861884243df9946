/* command.c - faults through commands: what the harness cannot do itself.
 *
 *   fault-command delete-pod kubectl delete pod {pod} --grace-period=0   (header)
 *   fault delete-pod mid-batch                                         (step)
 *
 * The step waits for the point it asks for in the pipeline's batches (as a
 * pipeline kill does, process.c), records the fault, then runs the command
 * (exec'd without a shell, placeholders expanded, its output in
 * logs/fault-LINE.log) to its end. Where it landed is taken as the
 * command starts; the pipeline is not signalled, so a batch that commits
 * after that counts as landed inside it. A command that cannot be run, fails or outlasts the step's timeout
 * did not do what the step says (sd_run_fault_missed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "run.h"

static int sd_command_handles(sd_step_kind_t k) { return k == SD_STEP_FAULT; }

static const struct sd_variant_s *sd_command_find(const sd_scenario_t *sc, const char *name) {
    for (int i = 0; i < sc->nfault_cmds; i++)
        if (!strcmp(sc->fault_cmds[i].name, name)) return &sc->fault_cmds[i];
    return NULL;
}

static sd_err_t sd_command_run(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    const struct sd_variant_s *fc = sd_command_find(sd_run_sc(r), st->proc.variant);
    if (!fc) return sd_err_set(err, errlen, SD_ERR_INTERNAL, "%s:%d: fault %s: not declared", sd_run_sc(r)->path, st->line, st->proc.variant);
    char cerr[512];
    char **argv = sd_run_expand_argv(r, fc->argv, fc->argc, cerr, sizeof(cerr));
    if (!argv) return sd_err_set(err, errlen, SD_ERR_SCENARIO, "%s:%d: fault-command %s: %s", sd_run_sc(r)->path, fc->line, fc->name, cerr);
    sd_landing_t L = {.how = SD_PLACED_NOW, .batch = -1, .batch_rows = -1, .rows0 = -1, .mark0 = -1, .mark1 = -1};
    sd_err_t e = SD_OK;
    if (st->proc.mid_batch != SD_LAND_NOW) {
        sd_sup_state_t s;
        int skip;
        if ((e = sd_fault_reach_point(r, st, "strike", &s, &L, &skip, detail, dlen, err, errlen)) || skip) {
            sd_run_free_argv(argv);
            return e;
        }
    }
    sd_sup_state_t s = {0};
    if (sd_run_sup(r)) sd_sup_state(sd_run_sup(r), &s);
    char fdet[320];
    snprintf(fdet, sizeof(fdet), "%s: %.200s%s %s", fc->name, argv[0], fc->argc > 1 ? " ..." : "", sd_placed_words[L.how]);
    int64_t fid = 0;
    if ((e = sd_ledger_fault(sd_run_ledger(r), sd_run_step_index(r), "command", fdet, s.incarnation, &fid, err, errlen))) {
        sd_run_free_argv(argv);
        return e;
    }
    sd_run_pump(r, NULL, 0); /* a commit seen from now on came after the strike */
    int64_t t0 = sd_util_mono_ms();
    /* where it struck: the moment the command starts, not when it ends */
    char land[768] = "";
    if (L.how != SD_PLACED_NOW) sd_fault_landing(r, fid, &L, s.incarnation, 0, 0, t0, land, sizeof(land));
    char *log = sd_util_fmt("%s/logs/fault-%d.log", sd_run_dir(r), st->line);
    sd_cmd_status_t cs;
    char how[600];
    int ok;
    e = sd_cmd_run_logged(argv, sd_util_scaled_ms(st->timeout_ms), 1 << 20, log, &cs, &ok, how, sizeof(how), cerr, sizeof(cerr));
    if (e) snprintf(how, sizeof(how), "could not be run: %s", cerr);
    if (!e && cs.interrupted) {
        e = sd_err_set(err, errlen, SD_ERR_INTERRUPTED, "interrupted while the fault command %s ran", fc->name);
    } else {
        e = SD_OK;
        char ran[700];
        snprintf(ran, sizeof(ran), "the command %s in %.2f s (logs/fault-%d.log)", ok ? "ended well" : how,
                 (double)(sd_util_mono_ms() - t0) / 1000.0, st->line);
        sd_ledger_fault_note(sd_run_ledger(r), fid, ran, NULL, 0);
        snprintf(detail, dlen, "%s; %s%s%s", fdet, ran, land[0] ? "; landed " : "", land);
        if (!ok) {
            char why[900];
            snprintf(why, sizeof(why), "fault %s: the command `%s` %s (logs/fault-%d.log)", fc->name, argv[0], how, st->line);
            sd_run_fault_missed(r, st, why);
        }
    }
    sd_run_data_step_done(r);
    free(log);
    sd_run_free_argv(argv);
    return e;
}

const sd_injector_t sd_injector_command = {.name = "command", .handles = sd_command_handles, .run = sd_command_run};
