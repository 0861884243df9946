/* storage.c - checkpoint damage: what a careful pipeline must survive or
 * refuse loudly, never paper over.
 *
 *   damage spark commit-marker   delete the newest commits/N (Spark re-runs batch N)
 *   damage spark offsets truncate  cut the newest offsets/N in half
 *   damage spark state           remove the state folder
 *   damage file=PATH delete|truncate   the same for any file of a pipeline;
 *                                      delete removes a folder too, inside the
 *                                      run folder only (a Streams state dir)
 *
 * The checkpoint is the scenario's (`progress spark checkpoint=`) unless
 * checkpoint= says otherwise. Damage is done while the pipeline is down
 * (after a kill or stop); doing it to a running pipeline is recorded with a
 * warning, since the pipeline may hold the files open. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"

static int sd_storage_handles(sd_step_kind_t k) { return k == SD_STEP_DAMAGE; }

static int64_t sd_storage_newest(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int64_t best = -1;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        if (!isdigit((unsigned char)de->d_name[0])) continue;
        long long v = strtoll(de->d_name, &end, 10);
        if (!*end && v > best) best = v;
    }
    closedir(d);
    return best;
}

static sd_err_t sd_storage_truncate(const char *path, char *err, size_t errlen) {
    struct stat st;
    if (stat(path, &st)) return sd_err_set(err, errlen, SD_ERR_SCENARIO, "damage: %s: %s", path, strerror(errno));
    if (truncate(path, st.st_size / 2)) return sd_err_set(err, errlen, SD_ERR_IO, "damage: truncate %s: %s", path, strerror(errno));
    return SD_OK;
}

static void sd_storage_count(const char *dir, int64_t *files) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char *p = sd_util_fmt("%s/%s", dir, de->d_name);
        struct stat st;
        /* a link is counted, never followed (a link back up would loop) */
        if (!lstat(p, &st) && S_ISDIR(st.st_mode)) sd_storage_count(p, files);
        else (*files)++;
        free(p);
    }
    closedir(d);
}

/* A folder of the pipeline's state (a Kafka Streams state directory),
 * removed with everything in it: only inside the run folder, which the
 * harness made, so that a drill never removes what it did not write. */
static sd_err_t sd_storage_rm_folder(sd_run_t *r, const char *path, char *det, size_t dlen, char *err, size_t errlen) {
    char *real = realpath(path, NULL), *run = realpath(sd_run_dir(r), NULL);
    size_t n = run ? strlen(run) : 0;
    int inside = real && run && !strncmp(real, run, n) && real[n] == '/';
    sd_err_t e = SD_OK;
    if (!inside) {
        e = sd_err_set(err, errlen, SD_ERR_SCENARIO, "damage: %s is a folder outside the run folder %s: a folder is removed only "
                       "inside it", path, sd_run_dir(r));
    } else {
        int64_t files = 0;
        sd_storage_count(real, &files);
        e = sd_util_rmtree(real, err, errlen);
        snprintf(det, dlen, "removed the folder %s and the %lld file%s in it", path, (long long)files, files == 1 ? "" : "s");
    }
    free(real);
    free(run);
    return e;
}

static sd_err_t sd_storage_run(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    const char *base = st->damage.path ? st->damage.path : sd_run_sc(r)->checkpoint ? sd_run_sc(r)->checkpoint : "{checkpoint}";
    char *path = sd_scenario_expand(base, sd_run_vars(r), err, errlen);
    if (!path) return SD_ERR_SCENARIO;
    sd_err_t e = SD_OK;
    char det[600];
    if (st->damage.what <= SD_DAMAGE_STATE) {
        if (st->damage.what == SD_DAMAGE_STATE) {
            char *state = sd_util_fmt("%s/state", path);
            int had = sd_util_is_dir(state);
            e = sd_util_rmtree(state, err, errlen);
            snprintf(det, sizeof(det), had ? "removed %s" : "%s: no state folder to remove", state);
            free(state);
        } else {
            const char *sub = st->damage.what == SD_DAMAGE_COMMIT_MARKER ? "commits" : "offsets";
            char *dir = sd_util_fmt("%s/%s", path, sub);
            int64_t n = sd_storage_newest(dir);
            if (n < 0) {
                e = sd_err_set(err, errlen, SD_ERR_SCENARIO, "damage spark: no %s file in %s", sub, dir);
            } else {
                char *f = sd_util_fmt("%s/%lld", dir, (long long)n), *crc = sd_util_fmt("%s/.%lld.crc", dir, (long long)n);
                if (st->damage.what == SD_DAMAGE_COMMIT_MARKER) {
                    if (unlink(f)) e = sd_err_set(err, errlen, SD_ERR_IO, "damage: delete %s: %s", f, strerror(errno));
                    unlink(crc);
                    snprintf(det, sizeof(det), "deleted %s/%lld (batch %lld's commit marker)", sub, (long long)n, (long long)n);
                } else {
                    e = sd_storage_truncate(f, err, errlen);
                    unlink(crc); /* the checksum would name the damage */
                    snprintf(det, sizeof(det), "truncated %s/%lld to half its size", sub, (long long)n);
                }
                free(f);
                free(crc);
            }
            free(dir);
        }
    } else if (st->damage.what == SD_DAMAGE_FILE_DELETE && sd_util_is_dir(path)) {
        e = sd_storage_rm_folder(r, path, det, sizeof(det), err, errlen);
    } else if (st->damage.what == SD_DAMAGE_FILE_DELETE) {
        if (unlink(path) && errno != ENOENT) e = sd_err_set(err, errlen, SD_ERR_IO, "damage: delete %s: %s", path, strerror(errno));
        snprintf(det, sizeof(det), "deleted %s", path);
    } else {
        e = sd_storage_truncate(path, err, errlen);
        snprintf(det, sizeof(det), "truncated %s to half its size", path);
    }
    free(path);
    if (e) return e;
    sd_sup_state_t s = {0};
    if (sd_run_sup(r)) sd_sup_state(sd_run_sup(r), &s);
    if (s.running)
        sd_ledger_warning(sd_run_ledger(r), "damage", "checkpoint damaged while the pipeline was running: it may hold the files open", NULL, 0);
    if ((e = sd_ledger_fault(sd_run_ledger(r), sd_run_step_index(r), "damage", det, s.incarnation, NULL, err, errlen))) return e;
    snprintf(detail, dlen, "%s", det);
    return SD_OK;
}

const sd_injector_t sd_injector_storage = {.name = "storage", .handles = sd_storage_handles, .run = sd_storage_run};
