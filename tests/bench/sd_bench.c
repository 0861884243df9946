/* sd_bench.c - the harness's own code paths, timed, for `make bench`
 * (tests/bench/bench.py drives it and the baselines).
 *
 *   sd_bench event-sizes SEED N
 *       mean key, value and id length of the first N parcel-scan events
 *   sd_bench gen-ids N TAG LOSS_PER_MILLE DUP_PER_MILLE IDS EXPECTED
 *       the observed ids of a sink (one per line, shuffled): every id of
 *       TAG-0..N-1 except LOSS per mille, DUP per mille of them twice, plus
 *       a few ids of no ledger event; and the expected ids (one per line)
 *   sd_bench gen-jsonl N TAG FILE        N sink rows as JSON lines
 *   sd_bench gen-sqlite N TAG DB         N sink rows in DB table bronze
 *   sd_bench reconcile N TAG IDS OUTDIR
 *       read IDS as a sink (jsonl of bare ids is not a format, so the ids
 *       file is read line by line like the sinks do), classify against a
 *       ledger of N events, write the duplicated and the lost ids to
 *       OUTDIR/duplicated.txt and OUTDIR/lost.txt
 *   sd_bench read KIND N TAG PARAM=VALUE...
 *       read a sink through its reader and the observation (exactly what a
 *       run does after quiescence)
 *
 * Each prints one line "seconds=S rows=R ..." on stdout. */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "events.h"
#include "observe.h"
#include "recon.h"
#include "scenario.h"
#include "sink.h"
#include "util.h"

static void die(const char *fmt, const char *a) {
    fprintf(stderr, "sd_bench: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    exit(1);
}

static double now_s(void) { return (double)sd_util_mono_us() / 1e6; }

static int cmd_event_sizes(int argc, char **argv) {
    if (argc < 2) die("%s", "event-sizes SEED N");
    sd_events_conf_t ec = {.kind = SD_EVENTS_PARCEL, .seed = strtoull(argv[0], NULL, 10), .tag = "0123abcd",
                           .start_ms = 1767254400000LL, .step_ms = 1000, .parcels = 10000, .locations = 40,
                           .id_field = "event_id", .time_field = "event_time"};
    sd_events_t *ev;
    char err[512];
    if (sd_events_open(&ec, &ev, err, sizeof(err))) die("%s", err);
    int64_t n = strtoll(argv[1], NULL, 10);
    sd_buf_t p, k;
    sd_buf_init(&p);
    sd_buf_init(&k);
    double kl = 0, vl = 0, il = 0;
    char id[64];
    for (int64_t s = 0; s < n; s++) {
        int64_t t;
        if (sd_events_render(ev, s, INT64_MIN, &p, &k, &t, err, sizeof(err))) die("%s", err);
        kl += (double)k.len;
        vl += (double)p.len;
        il += (double)sd_events_id(ev, s, id);
    }
    printf("key=%.1f value=%.1f id=%.1f\n", kl / (double)n, vl / (double)n, il / (double)n);
    sd_buf_free(&p);
    sd_buf_free(&k);
    sd_events_close(ev);
    return 0;
}

static int cmd_gen_ids(int argc, char **argv) {
    if (argc < 6) die("%s", "gen-ids N TAG LOSS DUP IDS EXPECTED");
    int64_t n = strtoll(argv[0], NULL, 10);
    const char *tag = argv[1];
    int loss = atoi(argv[2]), dup = atoi(argv[3]);
    /* rows: each kept id once, the duplicated ones twice, then shuffled */
    int64_t cap = n + n / 1000 * dup + 16, m = 0;
    int64_t *rows = sd_util_xmalloc(sizeof(int64_t) * (size_t)cap);
    uint64_t x = 42;
    for (int64_t s = 0; s < n; s++) {
        x = sd_util_mix64(x + (uint64_t)s);
        if ((int)(x % 1000) < loss) continue;
        rows[m++] = s;
        if ((int)((x >> 20) % 1000) < dup) rows[m++] = s;
    }
    for (int i = 0; i < 10; i++) rows[m++] = -1 - i; /* ids of no ledger event */
    for (int64_t i = m - 1; i > 0; i--) {
        x = sd_util_mix64(x + (uint64_t)i);
        int64_t j = (int64_t)(x % (uint64_t)(i + 1));
        int64_t t = rows[i];
        rows[i] = rows[j];
        rows[j] = t;
    }
    FILE *f = fopen(argv[4], "w");
    if (!f) die("cannot write %s", argv[4]);
    for (int64_t i = 0; i < m; i++) {
        if (rows[i] < 0) fprintf(f, "stranger-%" PRId64 "\n", -rows[i]);
        else fprintf(f, "%s-%" PRId64 "\n", tag, rows[i]);
    }
    fclose(f);
    f = fopen(argv[5], "w");
    if (!f) die("cannot write %s", argv[5]);
    for (int64_t s = 0; s < n; s++) fprintf(f, "%s-%" PRId64 "\n", tag, s);
    fclose(f);
    printf("rows=%" PRId64 "\n", m);
    free(rows);
    return 0;
}

/* A sink row as a Spark file sink or a consumer would write it. */
static int sink_row(char *out, size_t cap, const char *tag, int64_t s) {
    return snprintf(out, cap,
                    "{\"event_id\":\"%s-%" PRId64 "\",\"event_time\":\"2026-01-01T08:%02d:%02d.000Z\",\"parcel_id\":\"P%08" PRId64
                    "\",\"location\":\"HUB-%02d\",\"status\":\"scanned\",\"sd_batch\":%" PRId64 "}",
                    tag, s, (int)(s / 60 % 60), (int)(s % 60), (s * 7919) % 100000000, (int)(s % 40), s / 20000);
}

static int cmd_gen_jsonl(int argc, char **argv) {
    if (argc < 3) die("%s", "gen-jsonl N TAG FILE");
    int64_t n = strtoll(argv[0], NULL, 10);
    FILE *f = fopen(argv[2], "w");
    if (!f) die("cannot write %s", argv[2]);
    char row[512];
    for (int64_t s = 0; s < n; s++) {
        sink_row(row, sizeof(row), argv[1], s);
        fputs(row, f);
        fputc('\n', f);
    }
    fclose(f);
    printf("rows=%" PRId64 "\n", n);
    return 0;
}

static int cmd_gen_sqlite(int argc, char **argv) {
    if (argc < 3) die("%s", "gen-sqlite N TAG DB");
    int64_t n = strtoll(argv[0], NULL, 10);
    unlink(argv[2]);
    sqlite3 *db;
    if (sqlite3_open(argv[2], &db) != SQLITE_OK) die("cannot open %s", argv[2]);
    sqlite3_exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                     "CREATE TABLE bronze(event_id TEXT, event_time TEXT, payload TEXT, sd_incarnation INTEGER, sd_batch INTEGER, sd_written_ms INTEGER);"
                     "BEGIN",
                 NULL, NULL, NULL);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "INSERT INTO bronze VALUES(?,?,?,?,?,?)", -1, &st, NULL);
    char id[64], row[512];
    for (int64_t s = 0; s < n; s++) {
        int il = snprintf(id, sizeof(id), "%s-%" PRId64, argv[1], s);
        int rl = sink_row(row, sizeof(row), argv[1], s);
        sqlite3_bind_text(st, 1, id, il, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, "2026-01-01T08:00:00.000Z", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, row, rl, SQLITE_STATIC);
        sqlite3_bind_int(st, 4, 1 + (int)(s * 3 / n));
        sqlite3_bind_int64(st, 5, s / 20000);
        sqlite3_bind_int64(st, 6, 1767254400000LL + s / 100);
        if (sqlite3_step(st) != SQLITE_DONE) die("insert: %s", sqlite3_errmsg(db));
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(db);
    printf("rows=%" PRId64 "\n", n);
    return 0;
}

/* Write the ids of a bucket list, one per line. */
static void write_list(const char *path, const char *tag, const sd_recon_list_t *l) {
    FILE *f = fopen(path, "w");
    if (!f) die("cannot write %s", path);
    for (int64_t i = 0; i < l->n; i++) fprintf(f, "%s-%" PRId64 "\n", tag, l->seq[i]);
    fclose(f);
}

static int cmd_reconcile(int argc, char **argv) {
    if (argc < 4) die("%s", "reconcile N TAG IDS OUTDIR");
    int64_t n = strtoll(argv[0], NULL, 10);
    const char *tag = argv[1];
    size_t taglen = strlen(tag);
    double t0 = now_s();
    /* the ledger side: every event expected once in the target */
    sd_seqs_t seqs = {0};
    sd_seqs_reserve(&seqs, n);
    for (int64_t s = 0; s < n; s++) sd_seqs_set(&seqs, s, SD_KIND_VALID, SD_DISP_TARGET);
    /* the sink side: the ids file, line by line, through the observation */
    int fd = open(argv[2], O_RDONLY);
    if (fd < 0) die("cannot read %s", argv[2]);
    struct stat stt;
    fstat(fd, &stt);
    const char *map = stt.st_size ? mmap(NULL, (size_t)stt.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : "";
    if (map == MAP_FAILED) die("cannot map %s", argv[2]);
    madvise((void *)map, (size_t)stt.st_size, MADV_SEQUENTIAL);
    sd_observe_t o;
    memset(&o, 0, sizeof(o));
    o.nseq = n;
    sd_counts_init(&o.copies, n);
    const char *p = map, *end = map + stt.st_size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        sd_observe_row(&o, tag, taglen, p, (size_t)(nl - p), NULL, 0);
        p = nl + 1;
    }
    sd_observe_flush(&o);
    sd_recon_ledger_t l = {.nseq = n, .seqs = &seqs};
    sd_recon_result_t res;
    memset(&res, 0, sizeof(res));
    sd_recon_classify(&l, &o.copies, NULL, o.rows, o.unexpected_rows, o.unexpected_unique, &res);
    char *dp = sd_util_fmt("%s/duplicated.txt", argv[3]), *lp = sd_util_fmt("%s/lost.txt", argv[3]);
    write_list(dp, tag, &res.lists[SD_B_DUPLICATED]);
    write_list(lp, tag, &res.lists[SD_B_LOST]);
    double secs = now_s() - t0;
    printf("seconds=%.4f rows=%" PRId64 " duplicated=%" PRId64 " lost=%" PRId64 " unexpected=%" PRId64 "\n", secs, o.rows,
           res.counts.duplicated, res.counts.lost, res.counts.unexpected);
    free(dp);
    free(lp);
    sd_recon_result_free(&res);
    if (stt.st_size) munmap((void *)map, (size_t)stt.st_size);
    close(fd);
    sd_observe_free(&o);
    sd_seqs_free(&seqs);
    return 0;
}

static int cmd_read(int argc, char **argv) {
    if (argc < 3) die("%s", "read KIND N TAG PARAM=VALUE...");
    sd_sink_decl_t decl = {.name = "target", .kind = argv[0]};
    int64_t n = strtoll(argv[1], NULL, 10);
    const char *tag = argv[2];
    const char *brokers = NULL;
    for (int i = 3; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) die("expected PARAM=VALUE, got %s", argv[i]);
        *eq = 0;
        if (!strcmp(argv[i], "brokers")) brokers = eq + 1;
        else sd_kvlist_add(&decl.params, argv[i], eq + 1);
    }
    sd_kvlist_t vars = {0}, props = {0};
    sd_sink_ctx_t ctx = {.brokers = brokers, .props = &props, .id_field = "event_id"};
    char err[2048];
    double t0 = now_s();
    sd_sink_t *s;
    if (sd_sink_open(&decl, &vars, &ctx, &s, err, sizeof(err))) die("%s", err);
    sd_observe_t o;
    if (sd_observe_sink(s, tag, n, 0, NULL, &o, err, sizeof(err))) die("%s", err);
    double secs = now_s() - t0;
    int64_t once = 0;
    for (int64_t i = 0; i < n; i++) once += sd_counts_get(&o.copies, i) == 1;
    printf("seconds=%.4f rows=%" PRId64 " once=%" PRId64 " unexpected=%" PRId64 "\n", secs, o.rows, once, o.unexpected_rows);
    sd_observe_free(&o);
    sd_sink_close(s);
    sd_kvlist_free(&decl.params);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) die("%s", "usage: sd_bench event-sizes|gen-ids|gen-jsonl|gen-sqlite|reconcile|read ...");
    const char *c = argv[1];
    if (!strcmp(c, "event-sizes")) return cmd_event_sizes(argc - 2, argv + 2);
    if (!strcmp(c, "gen-ids")) return cmd_gen_ids(argc - 2, argv + 2);
    if (!strcmp(c, "gen-jsonl")) return cmd_gen_jsonl(argc - 2, argv + 2);
    if (!strcmp(c, "gen-sqlite")) return cmd_gen_sqlite(argc - 2, argv + 2);
    if (!strcmp(c, "reconcile")) return cmd_reconcile(argc - 2, argv + 2);
    if (!strcmp(c, "read")) return cmd_read(argc - 2, argv + 2);
    die("unknown command %s", c);
    return 2;
}
