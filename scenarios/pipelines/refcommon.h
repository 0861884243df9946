/* refcommon.h - what the reference pipelines (refpipe.c, refjoin.c,
 * reftxn.c) share: dying with a message, clocks, a sleep that a stop
 * request cuts short, a partition's offsets asked within a timeout,
 * the two text formats of their command lines and records (durations,
 * ISO-8601 UTC times), and their SQLite: one connection (db) in WAL mode,
 * statements that die naming the SQL on failure. Each program includes it
 * once; it defines ref_name (its name in messages) and ref_stop (set by
 * its signal handler) before including it. */
#ifndef REF_COMMON_H
#define REF_COMMON_H

#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "props.h"

__attribute__((unused)) static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", ref_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

__attribute__((unused)) static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

__attribute__((unused)) static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

__attribute__((unused)) static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR && !ref_stop)
        ;
}

/* 2026-01-01T00:00:00[.fff][Z] -> epoch ms; -1 when it is not one. */
__attribute__((unused)) static int parse_iso(const char *s, int64_t *out) {
    int Y, M, D, h, m, sec, ms = 0, n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec, &n) != 6) return -1;
    const char *p = s + n;
    if (*p == '.') {
        p++;
        int digits = 0, frac = 0;
        while (*p >= '0' && *p <= '9') { if (digits < 3) frac = frac * 10 + (*p - '0'); digits++; p++; }
        while (digits < 3) { frac *= 10; digits++; }
        ms = frac;
    }
    if (*p == 'Z') p++;
    if (*p) return -1;
    struct tm tm = {.tm_year = Y - 1900, .tm_mon = M - 1, .tm_mday = D, .tm_hour = h, .tm_min = m, .tm_sec = sec};
    *out = (int64_t)timegm(&tm) * 1000 + ms;
    return 0;
}

/* 250ms, 3s, 10m, 2h, 1d (a bare number is seconds); dies on anything else. */
__attribute__((unused)) static int64_t parse_duration(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0) die("bad duration %s", s);
    if (!*end || !strcmp(end, "s")) return (int64_t)(v * 1000);
    if (!strcmp(end, "ms")) return (int64_t)v;
    if (!strcmp(end, "m")) return (int64_t)(v * 60000);
    if (!strcmp(end, "h")) return (int64_t)(v * 3600000);
    if (!strcmp(end, "d")) return (int64_t)(v * 86400000);
    die("bad duration %s", s);
    return 0;
}

__attribute__((unused)) static sqlite3 *db;

__attribute__((unused)) static void sql(const char *q) {
    char *msg = NULL;
    if (sqlite3_exec(db, q, NULL, NULL, &msg) != SQLITE_OK) die("sqlite: %s: %s", q, msg ? msg : "?");
}

__attribute__((unused)) static sqlite3_stmt *prep(const char *q) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) die("sqlite: prepare %s: %s", q, sqlite3_errmsg(db));
    return st;
}

/* Stop on SIGTERM and SIGINT (handler sets ref_stop), markers line by
 * line, and the database opened in WAL mode. */
__attribute__((unused)) static void ref_start(void (*handler)(int), const char *path) {
    signal(SIGTERM, handler);
    signal(SIGINT, handler);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (sqlite3_open(path, &db) != SQLITE_OK) die("open %s: %s", path, sqlite3_errmsg(db));
    sqlite3_busy_timeout(db, 10000);
    sql("PRAGMA journal_mode=WAL");
}

/* A partition's first and end offsets, within timeout_ms. librdkafka
 * 2.0's rd_kafka_query_watermark_offsets can wait without end for a
 * broker that went away (fixed in 2.3, librdkafka #4460); this asks by
 * rd_kafka_offsets_for_times, which keeps its timeout. */
__attribute__((unused)) static rd_kafka_resp_err_t ref_watermarks(rd_kafka_t *rk, const char *topic, int32_t partition, int64_t *lo,
                                                                  int64_t *hi, int timeout_ms) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_t *t = rd_kafka_topic_partition_list_add(l, topic, partition);
    t->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(rk, l, timeout_ms);
    if (!e) e = l->elems[0].err;
    if (!e) {
        *lo = l->elems[0].offset;
        l->elems[0].offset = RD_KAFKA_OFFSET_END;
        e = rd_kafka_offsets_for_times(rk, l, timeout_ms);
        if (!e) e = l->elems[0].err;
        if (!e) *hi = l->elems[0].offset;
    }
    rd_kafka_topic_partition_list_destroy(l);
    return e;
}

/* The client properties file the harness was given (--kafka-config; path
 * NULL: $STREAMDRILL_KAFKA_CONFIG, unset or empty: none) applied to c, read
 * as streamdrill reads it (sd_props_read, props.c). A message names the
 * file, the line and the key, never a value: the file holds secrets. */
__attribute__((unused)) static void ref_kafka_config(rd_kafka_conf_t *c, const char *path) {
    if (!path) path = getenv("STREAMDRILL_KAFKA_CONFIG");
    if (!path || !*path) return;
    sd_kvlist_t l = {0};
    char err[1024], errstr[512];
    if (sd_props_read(path, &l, err, sizeof(err))) die("client properties %s", err);
    for (int i = 0; i < l.n; i++)
        if (rd_kafka_conf_set(c, l.v[i].key, l.v[i].value, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
            die("client properties %s: %s: not taken by librdkafka", path, l.v[i].key);
    sd_kvlist_free(&l);
}

#endif
