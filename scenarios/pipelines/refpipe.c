/* refpipe.c - the reference pipeline: Kafka in, SQLite out, three delivery
 * modes. It is the embedded default pipeline of streamdrill and the
 * harness's own proving ground: a correct exactly-once mode that must
 * pass every drill, and at-least-once / at-most-once modes whose
 * duplicates and losses the harness must catch.
 *
 *   exactly-once   rows and consumed offsets committed in one SQLite
 *                  transaction; duplicate ids ignored (event_id is the key)
 *   at-least-once  rows written (each visible at once), then offsets
 *                  committed to Kafka: a crash in between re-delivers
 *   at-most-once   offsets committed to Kafka, then rows written: a crash
 *                  in between loses
 *
 * Like a Spark micro-batch query it reads in batches (up to --max-batch
 * records, closed --trigger-ms after the first one), keeps an event-time
 * watermark (newest event time of earlier batches minus --watermark) and
 * drops, or quarantines, records older than it; malformed records go to
 * the quarantine table with the ledger id from their sd-id header. It
 * prints streamdrill's batch markers on stdout:
 *
 *   SD-READY
 *   SD-BATCH begin id=N rows=K
 *   SD-BATCH commit id=N rows=K offsets=P:O,...
 *
 * It reads every partition by assignment (no group membership, so a
 * restarted incarnation does not wait for the dead one's session to
 * expire); at-least-once and at-most-once still commit offsets to the
 * consumer group. SIGTERM finishes the current batch and exits 0. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MODE_EO, MODE_ALO, MODE_AMO };

static struct {
    const char *brokers, *topic, *db, *group, *id_field, *time_field, *table, *qtable;
    int mode;
    int64_t watermark_ms;
    int late_quarantine;
    int max_batch;
    int trigger_ms;
    int row_delay_ms;
    int incarnation;
} o = {.id_field = "event_id", .time_field = "event_time", .table = "bronze", .qtable = "rejected", .mode = MODE_EO,
       .watermark_ms = 600000, .max_batch = 500, .trigger_ms = 200, .row_delay_ms = 2};

static volatile sig_atomic_t stop_flag = 0;
static void on_signal(int s) { (void)s; stop_flag = 1; }

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "refpipe: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR && !stop_flag)
        ;
}

static int parse_iso(const char *s, int64_t *out) {
    int Y, M, D, h, m, sec, ms = 0, n = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec, &n) != 6) return -1;
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

static int64_t parse_duration(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0) die("bad duration %s", s);
    if (!*end || !strcmp(end, "s")) return (int64_t)(v * 1000);
    if (!strcmp(end, "ms")) return (int64_t)v;
    if (!strcmp(end, "m")) return (int64_t)(v * 60000);
    if (!strcmp(end, "h")) return (int64_t)(v * 3600000);
    die("bad duration %s", s);
    return 0;
}

static sqlite3 *db;

static void sql(const char *q) {
    char *msg = NULL;
    if (sqlite3_exec(db, q, NULL, NULL, &msg) != SQLITE_OK) die("sqlite: %s: %s", q, msg ? msg : "?");
}

static sqlite3_stmt *prep(const char *q) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) die("sqlite: prepare %s: %s", q, sqlite3_errmsg(db));
    return st;
}

static void step_done(sqlite3_stmt *st, const char *what) {
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) die("sqlite: %s: %s", what, sqlite3_errmsg(db));
    sqlite3_reset(st);
}

static void usage(void) {
    fputs("usage: refpipe --brokers LIST --topic NAME --db PATH [--mode exactly-once|at-least-once|at-most-once]\n"
          "               [--group ID] [--watermark 10m] [--late drop|quarantine] [--max-batch 500]\n"
          "               [--trigger-ms 200] [--row-delay-ms 2] [--id-field event_id] [--time-field event_time]\n"
          "Brokers, topic and group default to $STREAMDRILL_BROKERS, $STREAMDRILL_TOPIC, $STREAMDRILL_GROUP.\n",
          stderr);
}

typedef struct {
    rd_kafka_message_t **m;
    int n;
} batch_t;

int main(int argc, char **argv) {
    o.brokers = getenv("STREAMDRILL_BROKERS");
    o.topic = getenv("STREAMDRILL_TOPIC");
    o.group = getenv("STREAMDRILL_GROUP");
    o.incarnation = getenv("STREAMDRILL_INCARNATION") ? atoi(getenv("STREAMDRILL_INCARNATION")) : 0;
    static const struct option lo[] = {
        {"brokers", 1, 0, 'b'}, {"topic", 1, 0, 't'}, {"db", 1, 0, 'd'}, {"mode", 1, 0, 'm'}, {"group", 1, 0, 'g'},
        {"watermark", 1, 0, 'w'}, {"late", 1, 0, 'l'}, {"max-batch", 1, 0, 'n'}, {"trigger-ms", 1, 0, 'T'},
        {"row-delay-ms", 1, 0, 'r'}, {"id-field", 1, 0, 'i'}, {"time-field", 1, 0, 'e'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'b': o.brokers = optarg; break;
        case 't': o.topic = optarg; break;
        case 'd': o.db = optarg; break;
        case 'g': o.group = optarg; break;
        case 'm':
            if (!strcmp(optarg, "exactly-once")) o.mode = MODE_EO;
            else if (!strcmp(optarg, "at-least-once")) o.mode = MODE_ALO;
            else if (!strcmp(optarg, "at-most-once")) o.mode = MODE_AMO;
            else die("--mode %s: expected exactly-once, at-least-once or at-most-once", optarg);
            break;
        case 'w': o.watermark_ms = parse_duration(optarg); break;
        case 'l':
            if (!strcmp(optarg, "quarantine")) o.late_quarantine = 1;
            else if (strcmp(optarg, "drop")) die("--late %s: expected drop or quarantine", optarg);
            break;
        case 'n': o.max_batch = atoi(optarg); break;
        case 'T': o.trigger_ms = atoi(optarg); break;
        case 'r': o.row_delay_ms = atoi(optarg); break;
        case 'i': o.id_field = optarg; break;
        case 'e': o.time_field = optarg; break;
        case 'h': usage(); return 0;
        default: usage(); return 2;
        }
    }
    if (optind < argc) die("unexpected argument %s", argv[optind]);
    if (!o.brokers || !o.topic || !o.db) { usage(); die("--brokers, --topic and --db are required"); }
    if (o.max_batch < 1) die("--max-batch must be at least 1");
    if (!o.group) o.group = "refpipe";
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    setvbuf(stdout, NULL, _IOLBF, 0);

    if (sqlite3_open(o.db, &db) != SQLITE_OK) die("open %s: %s", o.db, sqlite3_errmsg(db));
    sqlite3_busy_timeout(db, 10000);
    sql("PRAGMA journal_mode=WAL");
    sql("PRAGMA synchronous=NORMAL");
    char q[1024];
    snprintf(q, sizeof(q),
             "CREATE TABLE IF NOT EXISTS %s(event_id TEXT%s, event_time TEXT, payload TEXT, sd_incarnation INTEGER,"
             " sd_batch INTEGER, sd_written_ms INTEGER)",
             o.table, o.mode == MODE_EO ? " PRIMARY KEY" : "");
    sql(q);
    snprintf(q, sizeof(q),
             "CREATE TABLE IF NOT EXISTS %s(sd_id TEXT, reason TEXT, raw BLOB, partition INTEGER, offset INTEGER,"
             " sd_incarnation INTEGER, sd_written_ms INTEGER)", o.qtable);
    sql(q);
    sql("CREATE TABLE IF NOT EXISTS sd_offsets(topic TEXT, partition INTEGER, next_offset INTEGER, PRIMARY KEY(topic, partition))");
    sql("CREATE TABLE IF NOT EXISTS sd_state(key TEXT PRIMARY KEY, value INTEGER)");

    int64_t batch_id = 0, max_event = INT64_MIN;
    {
        sqlite3_stmt *st = prep("SELECT key, value FROM sd_state");
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *k = (const char *)sqlite3_column_text(st, 0);
            if (!strcmp(k, "batch")) batch_id = sqlite3_column_int64(st, 1);
            if (!strcmp(k, "max_event_ms")) max_event = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
    }

    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    struct { const char *k, *v; } props[] = {
        {"bootstrap.servers", o.brokers}, {"group.id", o.group}, {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"}, {"auto.offset.reset", "earliest"}, {"isolation.level", "read_committed"},
        {"client.id", "refpipe"}};
    for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
        if (rd_kafka_conf_set(conf, props[i].k, props[i].v, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) die("%s", errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!rk) die("consumer: %s", errstr);

    /* partitions */
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, o.topic, NULL);
    int nparts = 0;
    for (int tries = 0; tries < 50 && !nparts; tries++) {
        if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (md->topic_cnt == 1 && !md->topics[0].err) nparts = md->topics[0].partition_cnt;
            rd_kafka_metadata_destroy(md);
        }
        if (!nparts) sleep_ms(200);
    }
    rd_kafka_topic_destroy(rkt);
    if (!nparts) die("topic %s: no metadata from %s", o.topic, o.brokers);

    int64_t *next = calloc((size_t)nparts, sizeof(int64_t));
    rd_kafka_topic_partition_list_t *assign = rd_kafka_topic_partition_list_new(nparts);
    for (int p = 0; p < nparts; p++) rd_kafka_topic_partition_list_add(assign, o.topic, p)->offset = RD_KAFKA_OFFSET_INVALID;
    if (o.mode == MODE_EO) {
        sqlite3_stmt *st = prep("SELECT partition, next_offset FROM sd_offsets WHERE topic=?");
        sqlite3_bind_text(st, 1, o.topic, -1, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
            int p = sqlite3_column_int(st, 0);
            if (p >= 0 && p < nparts) assign->elems[p].offset = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
    } else {
        rd_kafka_topic_partition_list_t *com = rd_kafka_topic_partition_list_copy(assign);
        rd_kafka_resp_err_t e = rd_kafka_committed(rk, com, 10000);
        if (e) die("committed offsets of group %s: %s", o.group, rd_kafka_err2str(e));
        for (int p = 0; p < nparts; p++)
            if (com->elems[p].offset >= 0) assign->elems[p].offset = com->elems[p].offset;
        rd_kafka_topic_partition_list_destroy(com);
    }
    for (int p = 0; p < nparts; p++) {
        if (assign->elems[p].offset < 0) {
            int64_t lo = 0, hi = 0;
            rd_kafka_query_watermark_offsets(rk, o.topic, p, &lo, &hi, 10000);
            assign->elems[p].offset = lo;
        }
        next[p] = assign->elems[p].offset;
    }
    rd_kafka_resp_err_t aerr = rd_kafka_assign(rk, assign);
    if (aerr) die("assign: %s", rd_kafka_err2str(aerr));
    fprintf(stderr, "refpipe: incarnation %d, mode %s, starting at", o.incarnation,
            o.mode == MODE_EO ? "exactly-once" : o.mode == MODE_ALO ? "at-least-once" : "at-most-once");
    for (int p = 0; p < nparts; p++) fprintf(stderr, " %d:%lld", p, (long long)next[p]);
    fprintf(stderr, ", batch %lld\n", (long long)batch_id);

    snprintf(q, sizeof(q), "INSERT %sINTO %s(event_id, event_time, payload, sd_incarnation, sd_batch, sd_written_ms) VALUES(?,?,?,?,?,?)",
             o.mode == MODE_EO ? "OR IGNORE " : "", o.table);
    sqlite3_stmt *ins = prep(q);
    snprintf(q, sizeof(q), "INSERT INTO %s(sd_id, reason, raw, partition, offset, sd_incarnation, sd_written_ms) VALUES(?,?,?,?,?,?,?)", o.qtable);
    sqlite3_stmt *rej = prep(q);
    sqlite3_stmt *setoff = prep("INSERT OR REPLACE INTO sd_offsets(topic, partition, next_offset) VALUES(?,?,?)");
    sqlite3_stmt *setstate = prep("INSERT OR REPLACE INTO sd_state(key, value) VALUES(?,?)");

    printf("SD-READY\n");
    batch_t b = {calloc((size_t)o.max_batch, sizeof(rd_kafka_message_t *)), 0};
    while (!stop_flag) {
        /* collect a batch */
        b.n = 0;
        int64_t close_at = 0;
        while (!stop_flag && b.n < o.max_batch) {
            int wait = close_at ? (int)(close_at - mono_ms()) : 100;
            if (close_at && wait <= 0) break;
            rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, wait > 100 ? 100 : wait);
            if (!m) { if (!close_at) continue; else continue; }
            if (m->err) {
                if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) fprintf(stderr, "refpipe: consume: %s\n", rd_kafka_message_errstr(m));
                rd_kafka_message_destroy(m);
                continue;
            }
            b.m[b.n++] = m;
            if (!close_at) close_at = mono_ms() + o.trigger_ms;
        }
        if (!b.n) continue;
        batch_id++;
        int64_t watermark = max_event == INT64_MIN ? INT64_MIN : max_event - o.watermark_ms;
        int64_t batch_max = max_event;
        printf("SD-BATCH begin id=%lld rows=%d\n", (long long)batch_id, b.n);
        if (o.mode == MODE_EO) sql("BEGIN IMMEDIATE");
        int64_t *bnext = calloc((size_t)nparts, sizeof(int64_t));
        memcpy(bnext, next, sizeof(int64_t) * (size_t)nparts);
        for (int i = 0; i < b.n; i++)
            if (b.m[i]->partition >= 0 && b.m[i]->partition < nparts && b.m[i]->offset + 1 > bnext[b.m[i]->partition])
                bnext[b.m[i]->partition] = b.m[i]->offset + 1;
        if (o.mode == MODE_AMO || o.mode == MODE_ALO) {
            /* the offsets this batch will commit */
        }
        if (o.mode == MODE_AMO) {
            rd_kafka_topic_partition_list_t *cl = rd_kafka_topic_partition_list_new(nparts);
            for (int p = 0; p < nparts; p++) rd_kafka_topic_partition_list_add(cl, o.topic, p)->offset = bnext[p];
            rd_kafka_resp_err_t e = rd_kafka_commit(rk, cl, 0);
            rd_kafka_topic_partition_list_destroy(cl);
            if (e) die("commit offsets: %s", rd_kafka_err2str(e));
        }
        int written = 0, rejected = 0, late = 0;
        for (int i = 0; i < b.n; i++) {
            rd_kafka_message_t *m = b.m[i];
            const char *sdid = NULL;
            size_t sdlen = 0;
            rd_kafka_headers_t *hdrs = NULL;
            const void *hv = NULL;
            if (!rd_kafka_message_headers(m, &hdrs) && !rd_kafka_header_get_last(hdrs, "sd-id", &hv, &sdlen) && hv) sdid = hv;
            const char *reason = NULL;
            json_t *j = NULL;
            const char *id = NULL, *ts = NULL;
            int64_t et = 0;
            if (!m->payload || !m->len) reason = "empty value";
            else if (!(j = json_loadb(m->payload, m->len, 0, NULL)) || !json_is_object(j)) reason = "not a JSON object";
            else if (!json_is_string(json_object_get(j, o.id_field))) reason = "id missing or not a string";
            else if (!json_is_string(json_object_get(j, o.time_field))) reason = "event time missing or not a string";
            else if (parse_iso(json_string_value(json_object_get(j, o.time_field)), &et)) reason = "event time not ISO-8601";
            else {
                id = json_string_value(json_object_get(j, o.id_field));
                ts = json_string_value(json_object_get(j, o.time_field));
                if (watermark != INT64_MIN && et < watermark) {
                    late++;
                    if (o.late_quarantine) reason = "late: event time behind the watermark";
                    else { json_decref(j); goto next_row; }
                }
            }
            if (reason) {
                if (sdid) sqlite3_bind_text(rej, 1, sdid, (int)sdlen, SQLITE_TRANSIENT);
                else if (id) sqlite3_bind_text(rej, 1, id, -1, SQLITE_TRANSIENT);
                else sqlite3_bind_null(rej, 1);
                sqlite3_bind_text(rej, 2, reason, -1, SQLITE_STATIC);
                sqlite3_bind_blob(rej, 3, m->payload ? m->payload : "", (int)m->len, SQLITE_TRANSIENT);
                sqlite3_bind_int(rej, 4, m->partition);
                sqlite3_bind_int64(rej, 5, m->offset);
                sqlite3_bind_int(rej, 6, o.incarnation);
                sqlite3_bind_int64(rej, 7, now_ms());
                step_done(rej, "quarantine a record");
                rejected++;
            } else {
                sqlite3_bind_text(ins, 1, id, -1, SQLITE_TRANSIENT);
                sqlite3_bind_text(ins, 2, ts, -1, SQLITE_TRANSIENT);
                sqlite3_bind_text(ins, 3, m->payload, (int)m->len, SQLITE_TRANSIENT);
                sqlite3_bind_int(ins, 4, o.incarnation);
                sqlite3_bind_int64(ins, 5, batch_id);
                sqlite3_bind_int64(ins, 6, now_ms());
                step_done(ins, "write a row");
                written++;
                if (et > batch_max) batch_max = et;
            }
            json_decref(j);
        next_row:
            if (o.row_delay_ms > 0) sleep_ms(o.row_delay_ms);
        }
        if (o.mode == MODE_EO) {
            for (int p = 0; p < nparts; p++) {
                sqlite3_bind_text(setoff, 1, o.topic, -1, SQLITE_STATIC);
                sqlite3_bind_int(setoff, 2, p);
                sqlite3_bind_int64(setoff, 3, bnext[p]);
                step_done(setoff, "store offsets");
            }
        }
        sqlite3_bind_text(setstate, 1, "batch", -1, SQLITE_STATIC);
        sqlite3_bind_int64(setstate, 2, batch_id);
        step_done(setstate, "store the batch id");
        if (batch_max != INT64_MIN) {
            sqlite3_bind_text(setstate, 1, "max_event_ms", -1, SQLITE_STATIC);
            sqlite3_bind_int64(setstate, 2, batch_max);
            step_done(setstate, "store the watermark");
        }
        if (o.mode == MODE_EO) sql("COMMIT");
        if (o.mode == MODE_ALO) {
            rd_kafka_topic_partition_list_t *cl = rd_kafka_topic_partition_list_new(nparts);
            for (int p = 0; p < nparts; p++) rd_kafka_topic_partition_list_add(cl, o.topic, p)->offset = bnext[p];
            rd_kafka_resp_err_t e = rd_kafka_commit(rk, cl, 0);
            rd_kafka_topic_partition_list_destroy(cl);
            if (e) die("commit offsets: %s", rd_kafka_err2str(e));
        }
        memcpy(next, bnext, sizeof(int64_t) * (size_t)nparts);
        free(bnext);
        max_event = batch_max;
        printf("SD-BATCH commit id=%lld rows=%d offsets=", (long long)batch_id, b.n);
        for (int p = 0; p < nparts; p++) printf("%s%d:%lld", p ? "," : "", p, (long long)next[p]);
        printf(" written=%d quarantined=%d late=%d\n", written, rejected, late);
        for (int i = 0; i < b.n; i++) rd_kafka_message_destroy(b.m[i]);
    }
    fprintf(stderr, "refpipe: stopping after batch %lld\n", (long long)batch_id);
    sqlite3_finalize(ins);
    sqlite3_finalize(rej);
    sqlite3_finalize(setoff);
    sqlite3_finalize(setstate);
    sqlite3_close(db);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    rd_kafka_topic_partition_list_destroy(assign);
    free(next);
    free(b.m);
    return 0;
}
