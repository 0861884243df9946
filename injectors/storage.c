/* storage.c - checkpoint damage: what a careful pipeline must survive or
 * refuse loudly, never paper over.
 *
 *   damage spark commit-marker   delete the newest commits/N (Spark re-runs batch N)
 *   damage spark offsets truncate  cut the newest offsets/N in half
 *   damage spark state           remove the state folder
 *   damage file=PATH delete|truncate   the same for any file of a pipeline;
 *                                      delete removes a folder too (a Streams
 *                                      state dir)
 *
 * Every form acts inside the run folder only, which the harness made, so a
 * drill never removes or cuts what it did not write: the folder that holds
 * the target is opened and held, where it really is checked against the run
 * folder, and the last step is done relative to it without following a link
 * (unlinkat, O_NOFOLLOW), so a link the pipeline left, or `{run}/../..`,
 * cannot lead outside.
 *
 * The checkpoint is the scenario's (`progress spark checkpoint=`) unless
 * checkpoint= says otherwise. Damage is done while the pipeline is down
 * (after a kill or stop); doing it to a running pipeline is recorded with a
 * warning, since the pipeline may hold the files open. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
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

/* A target of damage, held: its folder open (dfd), where that folder really
 * is (dir, links resolved) and the last step's name, never followed. */
typedef struct sd_storage_target_s {
    int dfd;
    char *dir;
    char *name;
    char *shown;  /* the path as the drill wrote it, for messages */
} sd_storage_target_t;

static void sd_storage_release(sd_storage_target_t *t) {
    if (t->dfd >= 0) close(t->dfd);
    free(t->dir);
    free(t->name);
    free(t->shown);
    memset(t, 0, sizeof(*t));
    t->dfd = -1;
}

/* Hold path's folder and check that it lies inside the run folder. A name of
 * ".", ".." or none (a path ending in "/") is refused: the last step must be
 * a thing in a folder, not a way out of it. */
static sd_err_t sd_storage_hold(sd_run_t *r, const char *path, sd_storage_target_t *t, char *err, size_t errlen) {
    memset(t, 0, sizeof(*t));
    t->dfd = -1;
    t->shown = sd_util_strdup(path);
    /* a last step of "." or ".." names a folder by a way up, not a link: the
     * folder it names is the target (`{run}/..` is the run folder's parent) */
    const char *slash = strrchr(path, '/'), *last = slash ? slash + 1 : path;
    char *named = (!strcmp(last, ".") || !strcmp(last, "..")) ? realpath(path, NULL) : NULL;
    if (named) path = named;
    char *c1 = sd_util_strdup(path), *c2 = sd_util_strdup(path);
    const char *base = basename(c1), *parent = dirname(c2);
    sd_err_t e = SD_OK;
    char *run = realpath(sd_run_dir(r), NULL);
    if (!*base || !strcmp(base, ".") || !strcmp(base, "..") || path[strlen(path) - 1] == '/') {
        e = sd_err_set(err, errlen, SD_ERR_SCENARIO, "damage: %s: the path must end in the name of a file or folder, not `%s`",
                       path, *base ? base : "/");
    } else if ((t->dfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        e = sd_err_set(err, errlen, SD_ERR_SCENARIO, "damage: %s: its folder %s: %s", path, parent, strerror(errno));
    } else {
        char fdlink[64], where[PATH_MAX];
        snprintf(fdlink, sizeof(fdlink), "/proc/self/fd/%d", t->dfd);
        ssize_t n = readlink(fdlink, where, sizeof(where) - 1);
        if (n < 0) {
            e = sd_err_set(err, errlen, SD_ERR_IO, "damage: %s: where its folder is: %s", path, strerror(errno));
        } else {
            where[n] = 0;
            size_t rn = run ? strlen(run) : 0;
            int inside = run && !strncmp(where, run, rn) && (where[rn] == '/' || where[rn] == 0);
            if (!inside)
                e = sd_err_set(err, errlen, SD_ERR_SCENARIO, "damage: %s is outside the run folder %s (its folder is %s): damage "
                               "acts only inside the run folder, on what the drill's pipeline wrote there", path, sd_run_dir(r), where);
            t->dir = sd_util_strdup(where);
            t->name = sd_util_strdup(base);
        }
    }
    free(run);
    free(c1);
    free(c2);
    free(named);
    if (e) sd_storage_release(t);
    return e;
}

/* Cut a held file to half its size; a link in its place is refused. */
static sd_err_t sd_storage_truncate(const sd_storage_target_t *t, char *err, size_t errlen) {
    int fd = openat(t->dfd, t->name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ELOOP)
        return sd_err_set(err, errlen, SD_ERR_SCENARIO, "damage: %s is a symbolic link: refused (a link is never followed)", t->shown);
    if (fd < 0) return sd_err_set(err, errlen, SD_ERR_SCENARIO, "damage: %s: %s", t->shown, strerror(errno));
    struct stat st;
    sd_err_t e = SD_OK;
    if (fstat(fd, &st)) e = sd_err_set(err, errlen, SD_ERR_IO, "damage: %s: %s", t->shown, strerror(errno));
    else if (!S_ISREG(st.st_mode)) e = sd_err_set(err, errlen, SD_ERR_SCENARIO, "damage: %s is not a regular file: refused", t->shown);
    else if (ftruncate(fd, st.st_size / 2)) e = sd_err_set(err, errlen, SD_ERR_IO, "damage: truncate %s: %s", t->shown, strerror(errno));
    close(fd);
    return e;
}

/* Remove a held name: a folder with everything in it (its links removed,
 * never followed), else the file or link itself; nothing there is said in
 * det, not an error. */
static sd_err_t sd_storage_remove(const sd_storage_target_t *t, char *det, size_t dlen, char *err, size_t errlen) {
    struct stat st;
    if (fstatat(t->dfd, t->name, &st, AT_SYMLINK_NOFOLLOW)) {
        if (errno != ENOENT) return sd_err_set(err, errlen, SD_ERR_IO, "damage: %s: %s", t->shown, strerror(errno));
        snprintf(det, dlen, "%s: nothing there to delete", t->shown);
        return SD_OK;
    }
    if (S_ISDIR(st.st_mode)) {
        char *real = sd_util_fmt("%s/%s", t->dir, t->name);
        int64_t files = 0;
        sd_storage_count(real, &files);
        sd_err_t e = sd_util_rmtree(real, err, errlen);
        free(real);
        snprintf(det, dlen, "removed the folder %s and the %lld file%s in it", t->shown, (long long)files, files == 1 ? "" : "s");
        return e;
    }
    if (unlinkat(t->dfd, t->name, 0)) return sd_err_set(err, errlen, SD_ERR_IO, "damage: delete %s: %s", t->shown, strerror(errno));
    snprintf(det, dlen, "deleted %s%s", t->shown, S_ISLNK(st.st_mode) ? " (a symbolic link: the link, not what it names)" : "");
    return SD_OK;
}

/* Hold path and do one damage to it. */
static sd_err_t sd_storage_damage(sd_run_t *r, const char *path, int truncate_it, char *det, size_t dlen, char *err, size_t errlen) {
    sd_storage_target_t t;
    sd_err_t e = sd_storage_hold(r, path, &t, err, errlen);
    if (e) return e;
    if (truncate_it) {
        e = sd_storage_truncate(&t, err, errlen);
        snprintf(det, dlen, "truncated %s to half its size", path);
    } else {
        e = sd_storage_remove(&t, det, dlen, err, errlen);
    }
    sd_storage_release(&t);
    return e;
}

static sd_err_t sd_storage_run(sd_run_t *r, const sd_step_t *st, char *detail, size_t dlen, char *err, size_t errlen) {
    const char *base = st->damage.path ? st->damage.path : sd_run_sc(r)->checkpoint ? sd_run_sc(r)->checkpoint : "{checkpoint}";
    char *path = sd_scenario_expand(base, sd_run_vars(r), err, errlen);
    if (!path) return SD_ERR_SCENARIO;
    sd_err_t e = SD_OK;
    char det[600];
    if (st->damage.what == SD_DAMAGE_STATE) {
        char *state = sd_util_fmt("%s/state", path);
        e = sd_storage_damage(r, state, 0, det, sizeof(det), err, errlen);
        free(state);
    } else if (st->damage.what <= SD_DAMAGE_STATE) {
        const char *sub = st->damage.what == SD_DAMAGE_COMMIT_MARKER ? "commits" : "offsets";
        char *dir = sd_util_fmt("%s/%s", path, sub);
        int64_t n = sd_storage_newest(dir);
        if (n < 0) {
            e = sd_err_set(err, errlen, SD_ERR_SCENARIO, "damage spark: no %s file in %s", sub, dir);
        } else {
            char *f = sd_util_fmt("%s/%lld", dir, (long long)n), *crc = sd_util_fmt("%s/.%lld.crc", dir, (long long)n);
            char ign[600];
            e = sd_storage_damage(r, f, st->damage.what != SD_DAMAGE_COMMIT_MARKER, ign, sizeof(ign), err, errlen);
            /* the checksum would name the damage */
            if (!e) e = sd_storage_damage(r, crc, 0, ign, sizeof(ign), err, errlen);
            if (st->damage.what == SD_DAMAGE_COMMIT_MARKER)
                snprintf(det, sizeof(det), "deleted %s/%lld (batch %lld's commit marker)", sub, (long long)n, (long long)n);
            else
                snprintf(det, sizeof(det), "truncated %s/%lld to half its size", sub, (long long)n);
            free(f);
            free(crc);
        }
        free(dir);
    } else {
        e = sd_storage_damage(r, path, st->damage.what == SD_DAMAGE_FILE_TRUNCATE, det, sizeof(det), err, errlen);
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
