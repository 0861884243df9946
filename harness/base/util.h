/* util.h - small helpers every module needs: clocks, durations, growable
 * buffers, files and folders, a counter-based PRNG.
 *
 * Nothing here prints; functions that can fail return sd_err_t and fill
 * the caller's err buffer. */
#ifndef SD_UTIL_H
#define SD_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"

/* ---- clocks ---- */

/* Wall clock, milliseconds since the Unix epoch (what run.db records). */
int64_t sd_util_wall_ms(void);
/* Monotonic clock in milliseconds (what every wait and timeout uses). */
int64_t sd_util_mono_ms(void);
/* fd is a terminal that draws (TERM set and not "dumb"): live lines, colour. */
int sd_util_is_terminal(int fd);
/* Monotonic clock in microseconds (benchmarks). */
int64_t sd_util_mono_us(void);
/* Sleep for ms milliseconds, restarting after signals. */
void sd_util_sleep_ms(int64_t ms);

/* v in decimal at p (no NUL); the byte after it. */
char *sd_util_put_u64(char *p, uint64_t v);
/* The last n digits of v at p, zero-padded (no NUL); p + n. */
char *sd_util_put_digits(char *p, uint64_t v, int n);

/* Format epoch ms as ISO-8601 UTC with milliseconds: 2026-01-01T08:00:00.000Z.
 * out must hold at least 25 bytes. Returns out. */
char *sd_util_iso8601(int64_t epoch_ms, char *out, size_t outlen);
/* The same; the length written (without the NUL). */
size_t sd_util_iso8601_n(int64_t epoch_ms, char *out, size_t outlen);
/* Parse an ISO-8601 / RFC 3339 timestamp (YYYY-MM-DDTHH:MM:SS[.fff][Z|+HH:MM]).
 * Returns 0 and sets *out on success, -1 if s is not such a timestamp or
 * names a day its month does not have. A time without an offset is taken
 * as UTC; the _zone form sets *zoned (when not NULL) to whether it had one,
 * for callers that must say so or refuse it. */
int sd_util_parse_iso8601(const char *s, int64_t *out);
int sd_util_parse_iso8601_zone(const char *s, int64_t *out, int *zoned);

/* The k-th smallest (0-based) of a multiset held as a histogram of the
 * values below nh (hist[v]: how many are v) and the sorted values of nh and
 * above (big); -1 past the end. Exact quantiles of ten million small
 * numbers in a few hundred kilobytes. */
int64_t sd_util_hist_rank(const uint32_t *hist, int64_t nh, const uint32_t *big, int64_t nbig, int64_t k);
/* The ks[q]-th smallest (0-based) of the values get(ctx, i), i < n, that
 * are below 2^24 - 2 (larger ones, 2^24 - 1 meaning "none", are skipped),
 * and the sorted values of big (each 2^24 - 2 or more), into out[q], -1
 * past the end: one counting pass by the top twelve bits, then one per rank
 * by the low twelve of the bucket that holds it, in two 16 KB tables. */
void sd_util_ranks_u24(uint32_t (*get)(const void *ctx, int64_t i), const void *ctx, int64_t n, const uint32_t *big, int64_t nbig,
                       const int64_t *ks, int64_t *out, int nk);

/* Parse a duration: 250ms, 3s, 1.5s, 10m, 2h, 1d; a bare number is seconds.
 * Returns 0 and sets *out_ms, -1 if malformed or negative. */
int sd_util_parse_duration(const char *s, int64_t *out_ms);
/* Parse a non-negative integer with an optional k/M suffix (1000, 10k, 2M). */
int sd_util_parse_count(const char *s, int64_t *out);

/* In a child between fork and exec: every descriptor from fd up is made
 * close-on-exec, so a program the harness starts (the pipeline, a sink
 * command, gnuplot) holds none of the harness's own (broker sockets, the
 * ledger, other incarnations' logs). Async-signal-safe. */
void sd_util_child_cloexec(int fd);

/* The timeout multiplier (STREAMDRILL_TIMEOUT_MULTIPLIER, default 1), the
 * way librdkafka's tests scale timeouts on slow machines. */
double sd_util_timeout_multiplier(void);
/* ms scaled by the timeout multiplier. */
int64_t sd_util_scaled_ms(int64_t ms);

/* ---- growable buffer ---- */

typedef struct sd_buf_s {
    char *data;   /* always NUL-terminated when len > 0 or after any append */
    size_t len;
    size_t cap;
} sd_buf_t;

void sd_buf_init(sd_buf_t *b);
void sd_buf_free(sd_buf_t *b);
void sd_buf_reset(sd_buf_t *b);
/* Room for extra more bytes (and the NUL) without moving the data. */
void sd_buf_reserve(sd_buf_t *b, size_t extra);
void sd_buf_append(sd_buf_t *b, const void *p, size_t n);
void sd_buf_puts(sd_buf_t *b, const char *s);
void sd_buf_putc(sd_buf_t *b, char c);
void sd_buf_printf(sd_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Detach the string; the caller frees it. Never NULL. */
char *sd_buf_steal(sd_buf_t *b);

/* ---- strings ---- */

/* strdup that aborts on OOM. */
char *sd_util_strdup(const char *s);
/* The n bytes at p in base64 (RFC 4648, padded), a new string. */
char *sd_util_base64(const void *p, size_t n);
char *sd_util_strndup(const char *s, size_t n);
void *sd_util_xmalloc(size_t n);
void *sd_util_xcalloc(size_t n, size_t m);
void *sd_util_xrealloc(void *p, size_t n);
/* asprintf that aborts on OOM. */
char *sd_util_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- files ---- */

/* mkdir -p. */
sd_err_t sd_util_mkdirs(const char *path, char *err, size_t errlen);
/* rm -rf (does not follow symlinks). */
sd_err_t sd_util_rmtree(const char *path, char *err, size_t errlen);
/* An output folder a command is about to fill: when it exists, it is
 * replaced if ours says the command wrote it, used if it is empty, and
 * otherwise refused and left as it is (SD_ERR_USAGE: "output DIR exists
 * and is not a folder <whose>: refusing to replace it"). Then created. */
sd_err_t sd_util_replace_dir(const char *dir, int ours, const char *whose, char *err, size_t errlen);
int sd_util_exists(const char *path);
/* A process's state letter from /proc/PID/stat (R, S, T, Z, ...); 0 when
 * there is no such process. */
char sd_util_proc_state(long pid);
int sd_util_is_dir(const char *path);
/* Read a whole file into *out (NUL-terminated, caller frees). */
sd_err_t sd_util_read_file(const char *path, char **out, size_t *outlen, char *err, size_t errlen);
/* Files the harness did not write (a checkpoint's, a `version files=`
 * path): opened without blocking (a FIFO is refused, not waited on), a
 * regular file only (a device, a folder or a socket is refused), through a
 * symbolic link only with SD_FOREIGN_FOLLOW. An open descriptor, or -1
 * with errno ENOENT when the file is absent (it may vanish at any time),
 * or -2 with why saying what the file is instead ("a FIFO, not a regular
 * file"; the caller names the path). */
#define SD_FOREIGN_FOLLOW 1
/* What a file of this st_mode is, in words: "a FIFO", "a symbolic link",
 * "a folder", ... ("not a regular file" for any other). */
const char *sd_util_file_kind(unsigned mode);
int sd_util_open_foreign(const char *path, int flags, char *why, size_t wlen);
/* The same (links followed) as a stdio stream for reading; NULL when it
 * cannot be had, why unchanged when the file is absent. */
FILE *sd_util_fopen_foreign(const char *path, char *why, size_t wlen);
/* The same file read whole into *out (NUL-terminated, caller frees): 0;
 * -1 absent; -2 refused, or larger than cap bytes, or unreadable (why). */
int sd_util_read_foreign(const char *path, int flags, size_t cap, char **out, size_t *outlen, char *why, size_t wlen);
/* Write a whole file atomically (write to path.tmp, rename). */
sd_err_t sd_util_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen);
/* Absolute, normalised form of path (need not exist). Caller frees. */
char *sd_util_abspath(const char *path);
/* Directory part of path ("." if none). Caller frees. */
char *sd_util_dirname(const char *path);
/* File name without directory and without extension. Caller frees. */
char *sd_util_stem(const char *path);
/* Folder that holds the running executable. Caller frees. */
/* This program's path into out (0), for a child to exec it again:
 * "/proc/self/exe" when the file was replaced while it runs. -1: unknown. */
int sd_util_self_exe(char *out, size_t len);
char *sd_util_exe_dir(void);
/* The folder of streamdrill's own helper programs (refpipe, refjoin, the
 * Parquet reader), the run-time placeholder {libexec}: $STREAMDRILL_LIBEXEC
 * when set; installed, EXE/../libexec/streamdrill; in the build tree,
 * EXE/../scenarios/pipelines. Caller frees. */
char *sd_util_libexec_dir(void);
/* The path of helper NAME: in sd_util_libexec_dir(), else (the build tree)
 * in EXE/../harness/. Caller frees; the file need not exist. */
char *sd_util_libexec_path(const char *name);

/* Append s to b quoted for a POSIX shell when it needs it (for the
 * "reproduce" line people copy; streamdrill itself never uses a shell). */
void sd_buf_put_shell_word(sd_buf_t *b, const char *s);
/* Append n bytes a sink handed over (an id, a writer label) as printable
 * text every report can carry: valid UTF-8 is kept, a backslash is
 * doubled, control bytes (NUL included, and C1 controls and bidirectional
 * overrides in UTF-8) and bytes that are not UTF-8 become \xHH. Past `cap`
 * input bytes the rest is left out and said: "...[+N bytes]". */
void sd_buf_put_printable(sd_buf_t *b, const void *p, size_t n, size_t cap);
/* The UTF-8 character at s (n bytes left): its length (1 to 4) and its
 * code point in *cp; 0 when it is none (cut short, overlong, a surrogate,
 * past U+10FFFF). */
size_t sd_util_utf8_decode(const void *s, size_t n, uint32_t *cp);
/* Append n bytes of text from outside the harness (a pipeline's stderr, a
 * version program's output, a sink's error, a log line) as a terminal or a
 * report may show it: valid UTF-8 and tabs are kept, newlines when
 * keep_newlines; C0 and C1 control characters (ESC, BEL, CR, U+009B),
 * DEL, bidirectional overrides and bytes that are not UTF-8 become \xHH,
 * so no escape sequence reaches a terminal or a Markdown page. Unlike
 * sd_buf_put_printable a backslash stays one: text already shown this way
 * reads the same when shown again. */
void sd_buf_put_safe(sd_buf_t *b, const void *p, size_t n, int keep_newlines);
/* The same as a new string (caller frees; s NULL: ""). */
char *sd_util_safe_text(const char *s, int keep_newlines);

/* ---- per-event numbers, compact ----
 *
 * One small number per ledger event (a sink's copies of it, its latency)
 * for runs of a hundred million events: a narrow cell each, the rare value
 * too large for its cell kept exactly in a map beside it. */

/* int64 -> uint32, open addressing (for the rare large values). */
typedef struct sd_i64map_s {
    int64_t *keys;      /* -1: empty */
    uint32_t *vals;
    int64_t n, cap;
} sd_i64map_t;
void sd_i64map_put(sd_i64map_t *m, int64_t key, uint32_t val);
/* 0 when absent. */
uint32_t sd_i64map_get(const sd_i64map_t *m, int64_t key);
void sd_i64map_free(sd_i64map_t *m);

/* n counters of one byte each, exact to UINT32_MAX (saturating there). */
typedef struct sd_counts_s {
    uint8_t *c;
    int64_t n;
    sd_i64map_t big;    /* the counts of 255 and more */
} sd_counts_t;
void sd_counts_init(sd_counts_t *k, int64_t n);
void sd_counts_inc(sd_counts_t *k, int64_t i);
static inline uint32_t sd_counts_get(const sd_counts_t *k, int64_t i) {
    return k->c[i] < 255 ? k->c[i] : sd_i64map_get(&k->big, i);
}
void sd_counts_free(sd_counts_t *k);

/* A time in ms per seq, set once (when a seq's first message was handed to
 * Kafka): two bytes a seq, the offset from the first time set in its block
 * of 256 seqs (seqs are made in the order they are sent, so a block's times
 * lie close together); the rare time that does not fit (before the block's
 * first, or 65,534 ms or more after it) exact in a map. UINT32_MAX: unset. */
#define SD_STAMPS_BLOCK 256
typedef struct sd_stamps_s {
    uint16_t *off;      /* 0xFFFF unset, 0xFFFE in big */
    uint32_t *base;     /* per block: its first time set (UINT32_MAX: none yet) */
    int64_t cap;        /* seqs room is made for */
    sd_i64map_t big;
} sd_stamps_t;
/* Room for seqs below n; nothing is written (memory a run never reaches
 * is never touched). */
void sd_stamps_reserve(sd_stamps_t *s, int64_t n);
/* Seq is new and unset (seqs are added in order from 0, within the room
 * reserved). */
static inline void sd_stamps_add(sd_stamps_t *s, int64_t seq) {
    s->off[seq] = 0xFFFF;
    if (seq % SD_STAMPS_BLOCK == 0) s->base[seq / SD_STAMPS_BLOCK] = UINT32_MAX;
}
/* Set seq's time v (< UINT32_MAX) unless it is set; 1 when it was set now. */
int sd_stamps_set_once(sd_stamps_t *s, int64_t seq, uint32_t v);
static inline uint32_t sd_stamps_get(const sd_stamps_t *s, int64_t seq) {
    uint16_t o = s->off[seq];
    if (o == 0xFFFF) return UINT32_MAX;
    return o == 0xFFFE ? sd_i64map_get(&s->big, seq) : s->base[seq / SD_STAMPS_BLOCK] + o;
}
void sd_stamps_free(sd_stamps_t *s);

/* ---- PRNG ---- */

/* splitmix64: a counter-based generator, so event n of seed s is computed
 * without generating events 0..n-1 (replays regenerate by sequence). */
uint64_t sd_util_mix64(uint64_t x);

/* Random bytes from the kernel, as lowercase hex (2*n chars + NUL). */
void sd_util_random_hex(char *out, size_t nbytes);

/* A key=value pair: a drill's variables and reader parameters, --set and -X lists. */
typedef struct sd_kv_s {
    char *key;
    char *value;
} sd_kv_t;

typedef struct sd_kvlist_s {
    sd_kv_t *v;
    int n;
} sd_kvlist_t;

void sd_kvlist_add(sd_kvlist_t *l, const char *key, const char *value);
/* Last value for key, or NULL. */
const char *sd_kvlist_get(const sd_kvlist_t *l, const char *key);
void sd_kvlist_free(sd_kvlist_t *l);

/* The SHA-256 of a regular file's bytes as 64 hex digits (opened as
 * sd_util_open_foreign does, links followed); -1 (err says why) when it
 * cannot be read or is not a regular file. */
int sd_util_sha256_file(const char *path, char hex[65], char *err, size_t errlen);

/* The source topic's entries of an offsets list as commits name them
 * ("P:O,P:O,TOPIC:P:O": those without a topic), each handed to cb; how
 * many there were. */
int sd_util_each_offset(const char *s, void (*cb)(void *opaque, int partition, int64_t offset), void *opaque);

#endif
