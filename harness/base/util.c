/* util.c - clocks, durations, buffers, files, PRNG (see util.h). */
#include "util.h"

#include <openssl/evp.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int64_t sd_util_wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t sd_util_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sd_util_is_terminal(int fd) {
    const char *term = getenv("TERM");
    return isatty(fd) && term && strcmp(term, "dumb") != 0;
}

int64_t sd_util_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void sd_util_sleep_ms(int64_t ms) {
    if (ms <= 0) return;
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* Days since 1970-01-01 to a civil date (proleptic Gregorian), after
 * Howard Hinnant's "chrono-compatible low-level date algorithms": no table,
 * no time zone, no locale; it runs once per event rendered. */
static void sd_util_civil(int64_t days, int64_t *y, unsigned *m, unsigned *d) {
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    unsigned doe = (unsigned)(days - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

/* "00" to "99": two digits a lookup (the writers below run per event) */
static const char sd_util_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960"
    "616263646566676869707172737475767778798081828384858687888990919293949596979899";

static char *sd_util_put2(char *p, unsigned v) {
    memcpy(p, sd_util_pairs + 2 * (v % 100), 2);
    return p + 2;
}

char *sd_util_put_u64(char *p, uint64_t v) {
    static const uint64_t pow10[20] = {1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL,
                                       1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL,
                                       100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
                                       1000000000000000000ULL, 10000000000000000000ULL};
    int n = 1;
    while (n < 20 && v >= pow10[n]) n++;
    char *end = p + n, *o = end; /* written from its last digit back, two at a time */
    while (v >= 100) {
        o -= 2;
        memcpy(o, sd_util_pairs + 2 * (v % 100), 2);
        v /= 100;
    }
    if (v >= 10) memcpy(o - 2, sd_util_pairs + 2 * v, 2);
    else o[-1] = (char)('0' + v);
    return end;
}

char *sd_util_put_digits(char *p, uint64_t v, int n) {
    char *o = p + n;
    for (; o - p >= 2; v /= 100) {
        o -= 2;
        memcpy(o, sd_util_pairs + 2 * (v % 100), 2);
    }
    if (o > p) *p = (char)('0' + v % 10);
    return p + n;
}

char *sd_util_iso8601(int64_t epoch_ms, char *out, size_t outlen) {
    sd_util_iso8601_n(epoch_ms, out, outlen);
    return out;
}

size_t sd_util_iso8601_n(int64_t epoch_ms, char *out, size_t outlen) {
    int64_t secs = epoch_ms >= 0 ? epoch_ms / 1000 : (epoch_ms - 999) / 1000;
    unsigned ms = (unsigned)(epoch_ms - secs * 1000);
    int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
    unsigned sod = (unsigned)(secs - days * 86400);
    int64_t y;
    unsigned mo, d;
    sd_util_civil(days, &y, &mo, &d);
    if (y < 0 || y > 9999 || outlen < 25) { /* outside what four digits hold: the slow, general path */
        int n = snprintf(out, outlen, "%04lld-%02u-%02uT%02u:%02u:%02u.%03uZ", (long long)y, mo, d, sod / 3600, sod / 60 % 60,
                         sod % 60, ms);
        return n < 0 ? 0 : (size_t)n < outlen ? (size_t)n : outlen ? outlen - 1 : 0;
    }
    char *p = out;
    p = sd_util_put2(p, (unsigned)(y / 100));
    p = sd_util_put2(p, (unsigned)(y % 100));
    *p++ = '-';
    p = sd_util_put2(p, mo);
    *p++ = '-';
    p = sd_util_put2(p, d);
    *p++ = 'T';
    p = sd_util_put2(p, sod / 3600);
    *p++ = ':';
    p = sd_util_put2(p, sod / 60 % 60);
    *p++ = ':';
    p = sd_util_put2(p, sod % 60);
    *p++ = '.';
    *p++ = (char)('0' + ms / 100);
    p = sd_util_put2(p, ms % 100);
    *p++ = 'Z';
    *p = 0;
    return (size_t)(p - out);
}

static int sd_util_digits(const char **p, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i])) return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

static int sd_util_month_days(int Y, int M) {
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0;
    return days[M - 1] + (M == 2 && leap);
}

int sd_util_parse_iso8601(const char *s, int64_t *out) { return sd_util_parse_iso8601_zone(s, out, NULL); }

int sd_util_parse_iso8601_zone(const char *s, int64_t *out, int *zoned) {
    int Y, M, D, h, m, sec, ms = 0;
    const char *p = s;
    if (sd_util_digits(&p, 4, &Y) || *p++ != '-' || sd_util_digits(&p, 2, &M) || *p++ != '-' ||
        sd_util_digits(&p, 2, &D) || (*p != 'T' && *p != 't' && *p != ' '))
        return -1;
    p++;
    if (sd_util_digits(&p, 2, &h) || *p++ != ':' || sd_util_digits(&p, 2, &m) || *p++ != ':' ||
        sd_util_digits(&p, 2, &sec))
        return -1;
    if (*p == '.') {
        p++;
        int n = 0, frac = 0;
        while (isdigit((unsigned char)*p)) {
            if (n < 3) frac = frac * 10 + (*p - '0');
            n++;
            p++;
        }
        if (n == 0) return -1;
        for (; n < 3; n++) frac *= 10;
        ms = frac;
    }
    /* RFC 3339: Z, or an offset from UTC (+01:00; +0100 also taken) */
    int off_min = 0, has_zone = 1;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om;
        if (sd_util_digits(&p, 2, &oh)) return -1;
        if (*p == ':') p++;
        if (sd_util_digits(&p, 2, &om) || oh > 23 || om > 59) return -1;
        off_min = sign * (oh * 60 + om);
    } else {
        has_zone = 0;
    }
    if (*p) return -1;
    /* a day the month does not have (February 31) is refused, not moved on
     * by timegm into the next month */
    if (M < 1 || M > 12 || D < 1 || D > sd_util_month_days(Y, M) || h > 23 || m > 59 || sec > 60) return -1;
    if (zoned) *zoned = has_zone;
    struct tm tm = {0};
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = sec;
    time_t t = timegm(&tm);
    *out = ((int64_t)t - (int64_t)off_min * 60) * 1000 + ms;
    return 0;
}

int sd_util_parse_duration(const char *s, int64_t *out_ms) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0 || !isfinite(v)) return -1;
    double mult;
    if (!*end || !strcmp(end, "s")) mult = 1000;
    else if (!strcmp(end, "ms")) mult = 1;
    else if (!strcmp(end, "m") || !strcmp(end, "min")) mult = 60000;
    else if (!strcmp(end, "h")) mult = 3600000;
    else if (!strcmp(end, "d")) mult = 86400000;
    else return -1;
    double ms = v * mult;
    if (ms > 1e15) return -1;
    *out_ms = (int64_t)llround(ms);
    return 0;
}

int sd_util_parse_count(const char *s, int64_t *out) {
    if (!s || !isdigit((unsigned char)*s)) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno) return -1;
    long long mult = 1;
    if (*end == 'k' || *end == 'K') { mult = 1000; end++; }
    else if (*end == 'M') { mult = 1000000; end++; }
    if (*end || v > LLONG_MAX / mult) return -1; /* a count that does not fit is malformed, never wrapped */
    v *= mult;
    *out = v;
    return 0;
}

double sd_util_timeout_multiplier(void) {
    const char *s = getenv("STREAMDRILL_TIMEOUT_MULTIPLIER");
    if (!s || !*s) return 1.0;
    double v = strtod(s, NULL);
    return v > 0 ? v : 1.0;
}

int64_t sd_util_scaled_ms(int64_t ms) {
    return (int64_t)((double)ms * sd_util_timeout_multiplier());
}

/* ---- buffers ---- */

void sd_buf_init(sd_buf_t *b) { memset(b, 0, sizeof(*b)); }
void sd_buf_free(sd_buf_t *b) { free(b->data); memset(b, 0, sizeof(*b)); }
void sd_buf_reset(sd_buf_t *b) { b->len = 0; if (b->data) b->data[0] = 0; }

void sd_buf_reserve(sd_buf_t *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) cap *= 2;
    b->data = sd_util_xrealloc(b->data, cap);
    b->cap = cap;
}

void sd_buf_append(sd_buf_t *b, const void *p, size_t n) {
    sd_buf_reserve(b, n);
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
}

void sd_buf_puts(sd_buf_t *b, const char *s) { sd_buf_append(b, s, strlen(s)); }
void sd_buf_putc(sd_buf_t *b, char c) { sd_buf_append(b, &c, 1); }

void sd_buf_printf(sd_buf_t *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) { va_end(ap2); return; }
    sd_buf_reserve(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    b->len += (size_t)n;
}

char *sd_buf_steal(sd_buf_t *b) {
    char *s = b->data ? b->data : sd_util_strdup("");
    memset(b, 0, sizeof(*b));
    return s;
}

/* ---- strings ---- */

static void sd_util_oom(void) {
    fputs("streamdrill: out of memory\n", stderr);
    abort();
}

void *sd_util_xmalloc(size_t n) { void *p = malloc(n ? n : 1); if (!p) sd_util_oom(); return p; }
void *sd_util_xcalloc(size_t n, size_t m) { void *p = calloc(n ? n : 1, m ? m : 1); if (!p) sd_util_oom(); return p; }
void *sd_util_xrealloc(void *p, size_t n) { p = realloc(p, n ? n : 1); if (!p) sd_util_oom(); return p; }
char *sd_util_strdup(const char *s) { char *d = strdup(s ? s : ""); if (!d) sd_util_oom(); return d; }

char *sd_util_base64(const void *p, size_t n) {
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = p;
    size_t o = 0;
    char *out = sd_util_xmalloc(4 * ((n + 2) / 3) + 1);
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0) | (i + 2 < n ? s[i + 2] : 0);
        out[o++] = al[v >> 18 & 63], out[o++] = al[v >> 12 & 63];
        out[o++] = i + 1 < n ? al[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? al[v & 63] : '=';
    }
    out[o] = 0;
    return out;
}
char *sd_util_strndup(const char *s, size_t n) { char *d = strndup(s, n); if (!d) sd_util_oom(); return d; }

char *sd_util_fmt(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) sd_util_oom();
    va_end(ap);
    return s;
}

/* ---- files ---- */

sd_err_t sd_util_mkdirs(const char *path, char *err, size_t errlen) {
    char *p = sd_util_strdup(path);
    size_t n = strlen(p);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] == '/' || p[i] == 0) {
            char c = p[i];
            p[i] = 0;
            if (mkdir(p, 0777) == -1 && errno != EEXIST) {
                sd_err_t e = sd_err_set(err, errlen, SD_ERR_IO, "mkdir %s: %s", p, strerror(errno));
                free(p);
                return e;
            }
            p[i] = c;
        }
    }
    free(p);
    if (!sd_util_is_dir(path))
        return sd_err_set(err, errlen, SD_ERR_IO, "mkdir %s: exists and is not a folder", path);
    return SD_OK;
}

static int sd_util_rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

sd_err_t sd_util_rmtree(const char *path, char *err, size_t errlen) {
    if (!sd_util_exists(path)) return SD_OK;
    if (nftw(path, sd_util_rm_cb, 32, FTW_DEPTH | FTW_PHYS) == -1)
        return sd_err_set(err, errlen, SD_ERR_IO, "remove %s: %s", path, strerror(errno));
    return SD_OK;
}

char sd_util_proc_state(long pid) {
    char p[64], buf[512];
    snprintf(p, sizeof(p), "/proc/%ld/stat", pid);
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    char state = 0;
    if (fgets(buf, sizeof(buf), f)) {
        char *c = strrchr(buf, ')');
        if (c && c[1] && c[2]) state = c[2];
    }
    fclose(f);
    return state;
}

int sd_util_exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

int sd_util_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

sd_err_t sd_util_read_file(const char *path, char **out, size_t *outlen, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) return sd_err_set(err, errlen, SD_ERR_IO, "open %s: %s", path, strerror(errno));
    sd_buf_t b;
    sd_buf_init(&b);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) sd_buf_append(&b, chunk, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        sd_buf_free(&b);
        return sd_err_set(err, errlen, SD_ERR_IO, "read %s: I/O error", path);
    }
    if (outlen) *outlen = b.len;
    *out = sd_buf_steal(&b);
    return SD_OK;
}

const char *sd_util_file_kind(unsigned m) {
    return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : S_ISDIR(m) ? "a folder"
         : S_ISSOCK(m) ? "a socket" : S_ISLNK(m) ? "a symbolic link" : "not a regular file";
}

int sd_util_open_foreign(const char *path, int flags, char *why, size_t wlen) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | ((flags & SD_FOREIGN_FOLLOW) ? 0 : O_NOFOLLOW));
    if (fd < 0) {
        int en = errno;
        if (en == ENOENT || en == ENOTDIR) {
            errno = ENOENT;
            return -1;
        }
        struct stat ls;
        if (why && en == ELOOP && !(flags & SD_FOREIGN_FOLLOW) && !lstat(path, &ls) && S_ISLNK(ls.st_mode))
            snprintf(why, wlen, "a symbolic link, not a regular file");
        else if (why)
            snprintf(why, wlen, "%s", strerror(en));
        return -2;
    }
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        if (why) snprintf(why, wlen, "%s, not a regular file", sd_util_file_kind(st.st_mode));
        close(fd);
        return -2;
    }
    return fd;
}

int sd_util_read_foreign(const char *path, int flags, size_t cap, char **out, size_t *outlen, char *why, size_t wlen) {
    *out = NULL;
    int fd = sd_util_open_foreign(path, flags, why, wlen);
    if (fd < 0) return fd;
    struct stat st;
    if (!fstat(fd, &st) && (uint64_t)st.st_size > cap) {
        if (why) snprintf(why, wlen, "%lld bytes, more than the %zu such a file may have", (long long)st.st_size, cap);
        close(fd);
        return -2;
    }
    sd_buf_t b;
    sd_buf_init(&b);
    sd_buf_reserve(&b, (size_t)st.st_size + 1);
    char chunk[65536];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            if (why) snprintf(why, wlen, "%s", strerror(errno));
            close(fd);
            sd_buf_free(&b);
            return -2;
        }
        if (n == 0) break;
        if (b.len + (size_t)n > cap) { /* it grew while read */
            if (why) snprintf(why, wlen, "more than the %zu bytes such a file may have", cap);
            close(fd);
            sd_buf_free(&b);
            return -2;
        }
        sd_buf_append(&b, chunk, (size_t)n);
    }
    close(fd);
    if (outlen) *outlen = b.len;
    *out = sd_buf_steal(&b);
    return 0;
}

sd_err_t sd_util_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen) {
    char *tmp = sd_util_fmt("%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        sd_err_t e = sd_err_set(err, errlen, SD_ERR_IO, "create %s: %s", tmp, strerror(errno));
        free(tmp);
        return e;
    }
    size_t w = fwrite(data, 1, len, f);
    int bad = (w != len) | (fclose(f) != 0);
    if (bad || rename(tmp, path) == -1) {
        sd_err_t e = sd_err_set(err, errlen, SD_ERR_IO, "write %s: %s", path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return e;
    }
    free(tmp);
    return SD_OK;
}

char *sd_util_abspath(const char *path) {
    sd_buf_t b;
    sd_buf_init(&b);
    if (path[0] != '/') {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof(cwd))) sd_buf_puts(&b, cwd);
        sd_buf_putc(&b, '/');
    }
    sd_buf_puts(&b, path);
    /* normalise: collapse //, /./ and /x/../ */
    char *in = sd_buf_steal(&b);
    char **parts = sd_util_xcalloc(strlen(in) + 1, sizeof(char *));
    size_t np = 0;
    char *save = NULL;
    for (char *tok = strtok_r(in, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
        if (!strcmp(tok, ".")) continue;
        if (!strcmp(tok, "..")) { if (np) np--; continue; }
        parts[np++] = tok;
    }
    sd_buf_init(&b);
    for (size_t i = 0; i < np; i++) { sd_buf_putc(&b, '/'); sd_buf_puts(&b, parts[i]); }
    if (!np) sd_buf_putc(&b, '/');
    free(parts);
    free(in);
    return sd_buf_steal(&b);
}

char *sd_util_dirname(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return sd_util_strdup(".");
    if (slash == path) return sd_util_strdup("/");
    return sd_util_strndup(path, (size_t)(slash - path));
}

char *sd_util_stem(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    return dot && dot != base ? sd_util_strndup(base, (size_t)(dot - base)) : sd_util_strdup(base);
}

int sd_util_self_exe(char *out, size_t len) {
    ssize_t n = readlink("/proc/self/exe", out, len - 1);
    if (n <= 0) return -1;
    out[n] = 0;
    /* the program was replaced while it runs (a package upgraded, a
     * rebuild): its path names the new one, or nothing; the running one
     * is still /proc/self/exe, which a forked child execs as itself */
    if (n > 10 && !strcmp(out + n - 10, " (deleted)")) snprintf(out, len, "/proc/self/exe");
    return 0;
}

char *sd_util_exe_dir(void) {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0) return sd_util_strdup(".");
    buf[n] = 0;
    return sd_util_dirname(buf);
}

char *sd_util_libexec_dir(void) {
    const char *env = getenv("STREAMDRILL_LIBEXEC");
    if (env && *env) return sd_util_strdup(env);
    char *exe = sd_util_exe_dir();
    char *dir = sd_util_fmt("%s/../libexec/streamdrill", exe);
    if (!sd_util_is_dir(dir)) {
        free(dir);
        dir = sd_util_fmt("%s/../scenarios/pipelines", exe);
    }
    free(exe);
    char *abs = sd_util_abspath(dir);
    free(dir);
    return abs;
}

char *sd_util_libexec_path(const char *name) {
    char *dir = sd_util_libexec_dir();
    char *p = sd_util_fmt("%s/%s", dir, name);
    free(dir);
    if (sd_util_exists(p)) return p;
    char *exe = sd_util_exe_dir();
    char *tree = sd_util_fmt("%s/../harness/sinks/%s", exe, name);
    free(exe);
    if (sd_util_exists(tree)) {
        free(p);
        char *abs = sd_util_abspath(tree);
        free(tree);
        return abs;
    }
    free(tree);
    return p;
}

uint64_t sd_util_mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void sd_util_random_hex(char *out, size_t nbytes) {
    unsigned char raw[64];
    if (nbytes > sizeof(raw)) nbytes = sizeof(raw);
    if (getrandom(raw, nbytes, 0) != (ssize_t)nbytes) {
        uint64_t x = sd_util_mix64((uint64_t)sd_util_mono_us() ^ ((uint64_t)getpid() << 32));
        for (size_t i = 0; i < nbytes; i++) { x = sd_util_mix64(x); raw[i] = (unsigned char)x; }
    }
    for (size_t i = 0; i < nbytes; i++) sprintf(out + 2 * i, "%02x", raw[i]);
    out[2 * nbytes] = 0;
}

void sd_buf_put_shell_word(sd_buf_t *b, const char *s) {
    int plain = *s != 0;
    for (const char *p = s; *p && plain; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("-_./=:,@%+", *p))) plain = 0;
    if (plain) { sd_buf_puts(b, s); return; }
    sd_buf_putc(b, '\'');
    for (; *s; s++) {
        if (*s == '\'') sd_buf_puts(b, "'\\''");
        else sd_buf_putc(b, *s);
    }
    sd_buf_putc(b, '\'');
}

int64_t sd_util_hist_rank(const uint32_t *hist, int64_t nh, const uint32_t *big, int64_t nbig, int64_t k) {
    int64_t below = 0;
    for (int64_t v = 0; v < nh; v++) {
        if (below + hist[v] > k) return v;
        below += hist[v];
    }
    return k - below < nbig ? (int64_t)big[k - below] : -1;
}

void sd_util_ranks_u24(uint32_t (*get)(const void *ctx, int64_t i), const void *ctx, int64_t n, const uint32_t *big, int64_t nbig,
                       const int64_t *ks, int64_t *out, int nk) {
    const uint32_t top = (1u << 24) - 2;
    uint32_t h[4096], low[4096];
    memset(h, 0, sizeof(h));
    for (int64_t i = 0; i < n; i++) {
        uint32_t v = get(ctx, i);
        if (v < top) h[v >> 12]++;
    }
    for (int q = 0; q < nk; q++) {
        int64_t below = 0, k = ks[q];
        int b = 0;
        for (; b < 4096 && below + h[b] <= k; b++) below += h[b];
        if (b == 4096) {
            out[q] = sd_util_hist_rank(h, 0, big, nbig, k - below);
            continue;
        }
        memset(low, 0, sizeof(low));
        for (int64_t i = 0; i < n; i++) {
            uint32_t v = get(ctx, i);
            if (v < top && (int)(v >> 12) == b) low[v & 4095]++;
        }
        out[q] = ((int64_t)b << 12) + sd_util_hist_rank(low, 4096, NULL, 0, k - below);
    }
}

size_t sd_util_utf8_decode(const void *s, size_t n, uint32_t *cp) {
    const unsigned char *p = s;
    if (!n) return 0;
    unsigned char c = p[0];
    size_t len;
    uint32_t v;
    if (c < 0x80) { len = 1; v = c; }
    else if (c >= 0xC2 && c <= 0xDF) { len = 2; v = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; v = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; v = c & 0x07; }
    else return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (p[i] & 0x3F);
    }
    /* no overlong forms, no surrogates, nothing past U+10FFFF */
    if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10FFFF)) || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

/* Length of the valid UTF-8 sequence at p (1 to 4) a reader may be shown,
 * 0 when it is not one. */
static size_t sd_utf8_len(const unsigned char *p, size_t n) {
    uint32_t cp = 0;
    size_t len = sd_util_utf8_decode(p, n, &cp);
    if (len <= 1) return len;
    /* no C1 control (a terminal takes U+009B for ESC [), no bidirectional
     * override or isolate (they reorder what a reader sees) */
    if (cp <= 0x9F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069)) return 0;
    return len;
}

void sd_buf_put_safe(sd_buf_t *b, const void *p, size_t n, int keep_newlines) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n;) {
        size_t l = sd_utf8_len(s + i, n - i);
        if (l == 1 && ((s[i] >= 0x20 && s[i] != 0x7F) || s[i] == '\t' || (s[i] == '\n' && keep_newlines))) {
            sd_buf_putc(b, (char)s[i]);
            i++;
        } else if (l > 1) {
            sd_buf_append(b, s + i, l);
            i += l;
        } else {
            sd_buf_printf(b, "\\x%02X", s[i]);
            i++;
        }
    }
}

char *sd_util_safe_text(const char *s, int keep_newlines) {
    sd_buf_t b;
    sd_buf_init(&b);
    if (s) sd_buf_put_safe(&b, s, strlen(s), keep_newlines);
    return sd_buf_steal(&b);
}

void sd_buf_put_printable(sd_buf_t *b, const void *p, size_t n, size_t cap) {
    const unsigned char *s = p;
    size_t lim = n > cap ? cap : n;
    for (size_t i = 0; i < lim;) {
        size_t l = sd_utf8_len(s + i, n - i);
        if (l == 1 && s[i] >= 0x20 && s[i] != 0x7F && s[i] != '\\') {
            sd_buf_putc(b, (char)s[i]);
            i++;
        } else if (l > 1) {
            sd_buf_append(b, s + i, l);
            i += l;
        } else if (s[i] == '\\') {
            sd_buf_puts(b, "\\\\");
            i++;
        } else {
            sd_buf_printf(b, "\\x%02X", s[i]);
            i++;
        }
    }
    if (n > lim) sd_buf_printf(b, "...[+%zu bytes]", n - lim);
}

sd_err_t sd_util_replace_dir(const char *dir, int ours, const char *whose, char *err, size_t errlen) {
    if (sd_util_exists(dir)) {
        if (!sd_util_is_dir(dir)) return sd_err_set(err, errlen, SD_ERR_USAGE, "output %s exists and is not a folder", dir);
        if (ours) {
            sd_err_t e = sd_util_rmtree(dir, err, errlen);
            if (e) return e;
        } else if (rmdir(dir) == -1) {
            /* rmdir only removes an empty folder: anything else is kept */
            return sd_err_set(err, errlen, SD_ERR_USAGE, "output %s exists and is not a folder %s: refusing to replace it", dir, whose);
        }
    }
    return sd_util_mkdirs(dir, err, errlen);
}

/* ---- per-event numbers, compact ---- */

static uint64_t sd_i64map_slot(int64_t key, int64_t cap) { return sd_util_mix64((uint64_t)key) & (uint64_t)(cap - 1); }

void sd_i64map_put(sd_i64map_t *m, int64_t key, uint32_t val) {
    if ((m->n + 1) * 2 > m->cap) {
        int64_t ncap = m->cap ? m->cap * 2 : 64;
        int64_t *nk = sd_util_xmalloc(sizeof(int64_t) * (size_t)ncap);
        uint32_t *nv = sd_util_xmalloc(sizeof(uint32_t) * (size_t)ncap);
        memset(nk, 0xff, sizeof(int64_t) * (size_t)ncap);
        for (int64_t i = 0; i < m->cap; i++) {
            if (m->keys[i] < 0) continue;
            uint64_t j = sd_i64map_slot(m->keys[i], ncap);
            while (nk[j] >= 0) j = (j + 1) & (uint64_t)(ncap - 1);
            nk[j] = m->keys[i];
            nv[j] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = nk, m->vals = nv, m->cap = ncap;
    }
    uint64_t j = sd_i64map_slot(key, m->cap);
    while (m->keys[j] >= 0 && m->keys[j] != key) j = (j + 1) & (uint64_t)(m->cap - 1);
    if (m->keys[j] < 0) m->n++;
    m->keys[j] = key;
    m->vals[j] = val;
}

uint32_t sd_i64map_get(const sd_i64map_t *m, int64_t key) {
    if (!m->cap) return 0;
    uint64_t j = sd_i64map_slot(key, m->cap);
    while (m->keys[j] >= 0) {
        if (m->keys[j] == key) return m->vals[j];
        j = (j + 1) & (uint64_t)(m->cap - 1);
    }
    return 0;
}

void sd_i64map_free(sd_i64map_t *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

void sd_counts_init(sd_counts_t *k, int64_t n) {
    memset(k, 0, sizeof(*k));
    k->n = n;
    k->c = sd_util_xcalloc((size_t)(n ? n : 1), 1);
}

void sd_counts_inc(sd_counts_t *k, int64_t i) {
    if (k->c[i] < 254) {
        k->c[i]++;
        return;
    }
    uint32_t v = k->c[i] == 254 ? 254 : sd_i64map_get(&k->big, i);
    if (v == UINT32_MAX) return;
    k->c[i] = 255;
    sd_i64map_put(&k->big, i, v + 1);
}

void sd_stamps_reserve(sd_stamps_t *s, int64_t n) {
    if (n <= s->cap) return;
    int64_t cap = s->cap ? s->cap : 4096;
    while (cap < n) cap *= 2;
    s->off = sd_util_xrealloc(s->off, sizeof(uint16_t) * (size_t)cap);
    s->base = sd_util_xrealloc(s->base, sizeof(uint32_t) * (size_t)((cap + SD_STAMPS_BLOCK - 1) / SD_STAMPS_BLOCK));
    s->cap = cap;
}

int sd_stamps_set_once(sd_stamps_t *s, int64_t seq, uint32_t v) {
    if (s->off[seq] != 0xFFFF) return 0;
    uint32_t *base = &s->base[seq / SD_STAMPS_BLOCK];
    if (*base == UINT32_MAX) *base = v;
    if (v >= *base && v - *base < 0xFFFE) {
        s->off[seq] = (uint16_t)(v - *base);
    } else {
        s->off[seq] = 0xFFFE;
        sd_i64map_put(&s->big, seq, v);
    }
    return 1;
}

void sd_stamps_free(sd_stamps_t *s) {
    free(s->off);
    free(s->base);
    sd_i64map_free(&s->big);
    memset(s, 0, sizeof(*s));
}

void sd_counts_free(sd_counts_t *k) {
    free(k->c);
    sd_i64map_free(&k->big);
    memset(k, 0, sizeof(*k));
}

void sd_util_child_cloexec(int fd) {
#ifdef CLOSE_RANGE_CLOEXEC
    if (close_range((unsigned)fd, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
#endif
    for (int i = fd; i < 65536; i++) {
        int fl = fcntl(i, F_GETFD);
        if (fl >= 0 && !(fl & FD_CLOEXEC)) fcntl(i, F_SETFD, fl | FD_CLOEXEC);
    }
}

/* ---- key-value lists ---- */

void sd_kvlist_add(sd_kvlist_t *l, const char *key, const char *value) {
    l->v = sd_util_xrealloc(l->v, sizeof(*l->v) * (size_t)(l->n + 1));
    l->v[l->n].key = sd_util_strdup(key);
    l->v[l->n].value = sd_util_strdup(value);
    l->n++;
}

const char *sd_kvlist_get(const sd_kvlist_t *l, const char *key) {
    if (!l) return NULL;
    for (int i = l->n - 1; i >= 0; i--)
        if (!strcmp(l->v[i].key, key)) return l->v[i].value;
    return NULL;
}

void sd_kvlist_free(sd_kvlist_t *l) {
    for (int i = 0; i < l->n; i++) { free(l->v[i].key); free(l->v[i].value); }
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

FILE *sd_util_fopen_foreign(const char *path, char *why, size_t wlen) {
    int fd = sd_util_open_foreign(path, SD_FOREIGN_FOLLOW, why, wlen);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f && fd >= 0) close(fd);
    return f;
}

int sd_util_sha256_file(const char *path, char hex[65], char *err, size_t errlen) {
    char why[512] = "";
    int fd = sd_util_open_foreign(path, SD_FOREIGN_FOLLOW, why, sizeof(why));
    if (fd < 0) {
        if (err) snprintf(err, errlen, "%s", fd == -1 ? strerror(ENOENT) : why);
        return -1;
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    unsigned char buf[65536], md[EVP_MAX_MD_SIZE];
    ssize_t n;
    int bad = 0;
    for (;;) {
        n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) bad = errno;
        if (n <= 0) break;
        EVP_DigestUpdate(ctx, buf, (size_t)n);
    }
    if (bad && err) snprintf(err, errlen, "read error: %s", strerror(bad));
    close(fd);
    unsigned int mdlen = 0;
    EVP_DigestFinal_ex(ctx, md, &mdlen);
    EVP_MD_CTX_free(ctx);
    if (bad) return -1;
    for (unsigned int i = 0; i < mdlen && i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return 0;
}

int sd_util_each_offset(const char *s, void (*cb)(void *opaque, int partition, int64_t offset), void *opaque) {
    int n = 0;
    while (s && *s) {
        size_t len = strcspn(s, ",");
        char part[128], tail;
        int p;
        long long o;
        if (len < sizeof(part)) {
            memcpy(part, s, len);
            part[len] = 0;
            if (sscanf(part, "%d:%lld%c", &p, &o, &tail) == 2 && p >= 0 && o >= 0) {
                cb(opaque, p, (int64_t)o);
                n++;
            }
        }
        s += len + (s[len] == ',');
    }
    return n;
}
