/* refjoin.c - the reference stream-stream join: scans joined with
 * deliveries of the same parcel delivered within --within of the scan,
 * inner, left outer or full outer, under a watermark on both sides.
 *
 *   refjoin --brokers B --scans TOPIC --deliveries TOPIC --db PATH
 *           --within 10m [--watermark 1m] [--type inner|left|full]
 *           [--max-batch 500] [--trigger-ms 200] [--row-delay-ms 2] [--weak LIST]
 *
 * Exactly-once the way refpipe is: each batch's join state, output rows
 * and the offsets of both topics commit in one SQLite transaction, and a
 * restarted incarnation resumes from the offsets in the database. Each
 * record costs --row-delay-ms (standing in for real work, so that a batch
 * lasts long enough for a kill to land inside it).
 *
 * State: left_state (scans) and right_state (deliveries), each row with a
 * matched flag; an id already in state is a replay and is ignored. A new
 * scan is matched against the deliveries in state and vice versa; each
 * match is a row of table joined(event_id, delivery_id, parcel_id,
 * sd_writer). The watermark is the oldest of the partitions' newest event
 * times (over both topics, partitions that have had a record) minus
 * --watermark, as Flink keeps it per Kafka partition: a backlog read one
 * partition after another does not make the others late. It is computed
 * at the end of each batch and used from the next; a record older than it
 * is late and dropped.
 * At the end of a batch, a scan whose scan time + within has fallen behind
 * the watermark can match no delivery still to come: left and full outer
 * write its (scan, NULL) row if it never matched, and it leaves the state;
 * a delivery behind the watermark likewise ((NULL, delivery) in full
 * outer). Malformed records go to table rejected with their sd-id.
 *
 * Markers: SD-READY; SD-BATCH begin/commit with rows=, offsets= (the
 * scans' partitions as P:O, the deliveries' as TOPIC:P:O) and state= (rows
 * in both states).
 *
 * --weak LIST, deliberate bugs:
 *   null-early    left/full outer: write (scan, NULL) as soon as a scan
 *                 finds no delivery yet, instead of when the watermark says
 *                 none can come (the pair is written too when it does)
 *   keep-state    never evict: right output, state that grows with every
 *                 record
 *   no-dedup      a replayed scan is joined again (its pairs written twice)
 *   no-dedup-deliveries  a replayed delivery is joined again
 *   exclusive-upper  a delivery exactly --within after its scan does not
 *                 match (the range's upper bound taken as exclusive)
 *   exclusive-lower  a delivery at its scan's very event time does not
 *                 match (the lower bound taken as exclusive)
 *   join-late     a record behind the watermark is joined instead of
 *                 dropped as late (a late delivery finds its scan still
 *                 in state)
 *   drop-bad-deliveries  a malformed delivery is dropped, not written to
 *                 table rejected
 *   late-as-null  left/full outer: a record behind the watermark is
 *                 written at once as an unmatched row ((scan, NULL), or
 *                 (NULL, delivery) in full outer) instead of dropped: wrong
 *                 whether it was late (no row) or not (its pairs)
 *
 * SIGTERM finishes the current batch and exits 0. */
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

static struct {
    const char *brokers, *scans, *deliveries, *db;
    int64_t within_ms, watermark_ms;
    int type;   /* 0 inner, 1 left, 2 full */
    int max_batch, trigger_ms, incarnation, row_delay_ms;
} o = {.watermark_ms = 60000, .max_batch = 500, .trigger_ms = 200, .row_delay_ms = 2};
static struct { int null_early, keep_state, no_dedup, no_dedup_deliveries, exclusive_upper, exclusive_lower, join_late, drop_bad_deliveries, late_as_null; } weak;
static volatile sig_atomic_t stop_flag;

static void on_signal(int s) { (void)s; stop_flag = 1; }

static const char *const ref_name = "refjoin";
#define ref_stop stop_flag
#include "refcommon.h"


static void done(sqlite3_stmt *st) {
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) die("write: %s", sqlite3_errmsg(db));
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

static int64_t state_get(const char *k, int64_t def) {
    sqlite3_stmt *st = prep("SELECT value FROM sd_state WHERE key=?");
    sqlite3_bind_text(st, 1, k, -1, SQLITE_STATIC);
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : def;
    sqlite3_finalize(st);
    return v;
}

static void state_set(const char *k, int64_t v) {
    sqlite3_stmt *st = prep("INSERT OR REPLACE INTO sd_state(key, value) VALUES(?,?)");
    sqlite3_bind_text(st, 1, k, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, v);
    done(st);
    sqlite3_finalize(st);
}

static int64_t count(const char *q) {
    sqlite3_stmt *st = prep(q);
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return v;
}

typedef struct {
    const char *name;
    int nparts;
    int64_t *next;     /* next offset per partition after the last committed batch */
} topic_t;
static topic_t T[2];   /* 0 scans, 1 deliveries */
static rd_kafka_t *rk;

static void open_topic(topic_t *t, const char *name) {
    t->name = name;
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, name, NULL);
    for (int tries = 0; tries < 50 && !t->nparts; tries++) {
        if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (md->topic_cnt == 1 && !md->topics[0].err) t->nparts = md->topics[0].partition_cnt;
            rd_kafka_metadata_destroy(md);
        }
        if (!t->nparts) sleep_ms(200);
    }
    rd_kafka_topic_destroy(rkt);
    if (!t->nparts) die("topic %s: no metadata from %s", name, o.brokers);
    t->next = calloc((size_t)t->nparts, sizeof(int64_t));
    sqlite3_stmt *st = prep("SELECT partition, next_offset FROM sd_offsets WHERE topic=?");
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    for (int p = 0; p < t->nparts; p++) t->next[p] = -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int p = sqlite3_column_int(st, 0);
        if (p >= 0 && p < t->nparts) t->next[p] = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    for (int p = 0; p < t->nparts; p++)
        if (t->next[p] < 0) {
            int64_t lo = 0, hi = 0;
            ref_watermarks(rk, name, p, &lo, &hi, 10000);
            t->next[p] = lo;
        }
}

/* the newest event time per partition of each topic (INT64_MIN: none yet) */
static int64_t pmax[2][256];

static int64_t watermark(void) {
    int64_t m = INT64_MAX;
    for (int s = 0; s < 2; s++) {
        int any = 0;
        for (int p = 0; p < T[s].nparts && p < 256; p++)
            if (pmax[s][p] != INT64_MIN) { any = 1; if (pmax[s][p] < m) m = pmax[s][p]; }
        if (!any) return INT64_MIN; /* a side with no record yet holds the watermark back */
    }
    return m - o.watermark_ms;
}

static sqlite3_stmt *ins_left, *ins_right, *match_left, *match_right, *ins_joined, *ins_rej, *mark_left, *mark_right, *setoff;
static char writer[64];

static void write_pair(const char *scan, const char *delivery, const char *parcel) {
    sqlite3_bind_text(ins_joined, 1, scan, -1, SQLITE_TRANSIENT);
    if (delivery) sqlite3_bind_text(ins_joined, 2, delivery, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins_joined, 3, parcel, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins_joined, 4, writer, -1, SQLITE_STATIC);
    done(ins_joined);
}

static void mark(sqlite3_stmt *st, const char *id) {
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    done(st);
}

/* A new scan (side 0) or delivery (side 1): into its state, joined with the other's. */
static void join_one(int side, const char *id, const char *parcel, int64_t t) {
    sqlite3_stmt *ins = side ? ins_right : ins_left;
    sqlite3_bind_text(ins, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, 2, parcel, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(ins, 3, t);
    done(ins);
    if (!sqlite3_changes(db) && !(side == 0 && weak.no_dedup) && !(side == 1 && weak.no_dedup_deliveries))
        return; /* a replay: already joined */
    /* scans: deliveries in [t, t + within]; deliveries: scans in [t - within, t] */
    sqlite3_stmt *m = side ? match_right : match_left;
    sqlite3_bind_text(m, 1, parcel, -1, SQLITE_TRANSIENT);
    int64_t lo = weak.exclusive_lower, hi = weak.exclusive_upper; /* ms taken off each end by the weak modes */
    sqlite3_bind_int64(m, 2, side ? t - o.within_ms + hi : t + lo);
    sqlite3_bind_int64(m, 3, side ? t - lo : t + o.within_ms - hi);
    int matched = 0;
    char **other = NULL;
    int nother = 0;
    while (sqlite3_step(m) == SQLITE_ROW) {
        other = realloc(other, sizeof(char *) * (size_t)(nother + 1));
        if (!other) die("out of memory");
        other[nother++] = strdup((const char *)sqlite3_column_text(m, 0));
    }
    sqlite3_reset(m);
    sqlite3_clear_bindings(m);
    for (int k = 0; k < nother; k++) {
        if (side) write_pair(other[k], id, parcel);
        else write_pair(id, other[k], parcel);
        mark(side ? mark_left : mark_right, other[k]);
        matched = 1;
        free(other[k]);
    }
    free(other);
    if (matched) mark(side ? mark_right : mark_left, id);
    else if (!side && weak.null_early && o.type >= 1) write_pair(id, NULL, parcel);
}

/* End of a batch: write the null rows the watermark has made final, evict. */
static void evict(int64_t wm) {
    if (wm == INT64_MIN) return;
    char q[512];
    if (o.type >= 1 && !weak.null_early) {
        snprintf(q, sizeof(q), "INSERT INTO joined(event_id, delivery_id, parcel_id, sd_writer) SELECT id, NULL, parcel_id, '%s'"
                 " FROM left_state WHERE matched = 0 AND done = 0 AND t + %lld < %lld", writer, (long long)o.within_ms, (long long)wm);
        sql(q);
    }
    if (o.type == 2) {
        snprintf(q, sizeof(q), "INSERT INTO joined(event_id, delivery_id, parcel_id, sd_writer) SELECT NULL, id, parcel_id, '%s'"
                 " FROM right_state WHERE matched = 0 AND done = 0 AND t < %lld", writer, (long long)wm);
        sql(q);
    }
    if (weak.keep_state) {
        /* the bug: nothing leaves the state (what is final is only marked) */
        snprintf(q, sizeof(q), "UPDATE left_state SET done = 1 WHERE t + %lld < %lld", (long long)o.within_ms, (long long)wm);
        sql(q);
        snprintf(q, sizeof(q), "UPDATE right_state SET done = 1 WHERE t < %lld", (long long)wm);
        sql(q);
        return;
    }
    snprintf(q, sizeof(q), "DELETE FROM left_state WHERE t + %lld < %lld", (long long)o.within_ms, (long long)wm);
    sql(q);
    snprintf(q, sizeof(q), "DELETE FROM right_state WHERE t < %lld", (long long)wm);
    sql(q);
}

static const char *header_id(rd_kafka_message_t *m, char *buf, size_t len) {
    rd_kafka_headers_t *h = NULL;
    const void *v;
    size_t n;
    if (rd_kafka_message_headers(m, &h) || rd_kafka_header_get_last(h, "sd-id", &v, &n)) return NULL;
    snprintf(buf, len, "%.*s", (int)n, (const char *)v);
    return buf;
}

/* One record: its fields, or a reason it is malformed. */
static void one_record(rd_kafka_message_t *m, int side, int64_t wm, int *late, int *bad) {
    static const char *const f[2][3] = {{"event_id", "parcel_id", "event_time"}, {"delivery_id", "parcel_id", "delivered_at"}};
    json_t *j = m->payload ? json_loadb(m->payload, m->len, JSON_REJECT_DUPLICATES, NULL) : NULL;
    const char *id = j ? json_string_value(json_object_get(j, f[side][0])) : NULL;
    const char *parcel = j ? json_string_value(json_object_get(j, f[side][1])) : NULL;
    int64_t t;
    if (!id || !parcel || parse_iso(json_string_value(json_object_get(j, f[side][2])), &t)) {
        char buf[128];
        if (!(side == 1 && weak.drop_bad_deliveries)) {
            sqlite3_bind_text(ins_rej, 1, header_id(m, buf, sizeof(buf)), -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(ins_rej, 2, !j ? "not JSON" : "a field missing or of the wrong type", -1, SQLITE_STATIC);
            done(ins_rej);
        }
        (*bad)++;
    } else if (wm != INT64_MIN && t < wm && !weak.join_late) {
        (*late)++;
        if (weak.late_as_null && o.type > side) {
            if (side) write_pair(NULL, id, parcel);
            else write_pair(id, NULL, parcel);
        }
    } else {
        join_one(side, id, parcel, t);
        if (m->partition >= 0 && m->partition < 256 && t > pmax[side][m->partition]) pmax[side][m->partition] = t;
    }
    json_decref(j);
}

int main(int argc, char **argv) {
    static const struct option lo[] = {{"brokers", 1, 0, 'b'}, {"scans", 1, 0, 's'}, {"deliveries", 1, 0, 'd'}, {"db", 1, 0, 'D'},
                                       {"within", 1, 0, 'w'}, {"watermark", 1, 0, 'W'}, {"type", 1, 0, 't'}, {"max-batch", 1, 0, 'm'},
                                       {"trigger-ms", 1, 0, 'T'}, {"weak", 1, 0, 'k'}, {"row-delay-ms", 1, 0, 'r'},
                                       {0, 0, 0, 0}};
    for (int c; (c = getopt_long(argc, argv, "", lo, NULL)) != -1;) {
        switch (c) {
        case 'b': o.brokers = optarg; break;
        case 's': o.scans = optarg; break;
        case 'd': o.deliveries = optarg; break;
        case 'D': o.db = optarg; break;
        case 'w': o.within_ms = parse_duration(optarg); break;
        case 'W': o.watermark_ms = parse_duration(optarg); break;
        case 't': o.type = !strcmp(optarg, "inner") ? 0 : !strcmp(optarg, "left") ? 1 : !strcmp(optarg, "full") ? 2 : -1; break;
        case 'm': o.max_batch = atoi(optarg); break;
        case 'T': o.trigger_ms = atoi(optarg); break;
        case 'r': o.row_delay_ms = atoi(optarg); break;
        case 'k':
            for (char *save = NULL, *w = strtok_r(optarg, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                if (!strcmp(w, "null-early")) weak.null_early = 1;
                else if (!strcmp(w, "keep-state")) weak.keep_state = 1;
                else if (!strcmp(w, "no-dedup")) weak.no_dedup = 1;
                else if (!strcmp(w, "no-dedup-deliveries")) weak.no_dedup_deliveries = 1;
                else if (!strcmp(w, "exclusive-upper")) weak.exclusive_upper = 1;
                else if (!strcmp(w, "exclusive-lower")) weak.exclusive_lower = 1;
                else if (!strcmp(w, "join-late")) weak.join_late = 1;
                else if (!strcmp(w, "drop-bad-deliveries")) weak.drop_bad_deliveries = 1;
                else if (!strcmp(w, "late-as-null")) weak.late_as_null = 1;
                else if (strcmp(w, "none"))
                    die("--weak %s: unknown (null-early, keep-state, no-dedup, no-dedup-deliveries, exclusive-upper, exclusive-lower, "
                        "join-late, drop-bad-deliveries, late-as-null)", w);
            }
            break;
        default: die("usage: refjoin --brokers B --scans T --deliveries T --db PATH --within D [--watermark D] [--type inner|left|full]");
        }
    }
    if (!o.brokers || !o.scans || !o.deliveries || !o.db || o.within_ms <= 0 || o.watermark_ms < 0 || o.type < 0 || o.max_batch < 1)
        die("usage: refjoin --brokers B --scans T --deliveries T --db PATH --within D [--watermark D] [--type inner|left|full]");
    const char *inc = getenv("STREAMDRILL_INCARNATION");
    o.incarnation = inc ? atoi(inc) : 1;
    ref_start(on_signal, o.db);
    sql("CREATE TABLE IF NOT EXISTS left_state(id TEXT PRIMARY KEY, parcel_id TEXT, t INTEGER, matched INTEGER DEFAULT 0, done INTEGER DEFAULT 0)");
    sql("CREATE TABLE IF NOT EXISTS right_state(id TEXT PRIMARY KEY, parcel_id TEXT, t INTEGER, matched INTEGER DEFAULT 0, done INTEGER DEFAULT 0)");
    sql("CREATE INDEX IF NOT EXISTS left_parcel ON left_state(parcel_id, t)");
    sql("CREATE INDEX IF NOT EXISTS right_parcel ON right_state(parcel_id, t)");
    sql("CREATE TABLE IF NOT EXISTS joined(event_id TEXT, delivery_id TEXT, parcel_id TEXT, sd_writer TEXT)");
    sql("CREATE TABLE IF NOT EXISTS rejected(sd_id TEXT, reason TEXT)");
    sql("CREATE TABLE IF NOT EXISTS sd_offsets(topic TEXT, partition INTEGER, next_offset INTEGER, PRIMARY KEY(topic, partition))");
    sql("CREATE TABLE IF NOT EXISTS sd_state(key TEXT PRIMARY KEY, value INTEGER)");
    ins_left = prep(weak.no_dedup ? "INSERT OR REPLACE INTO left_state(id, parcel_id, t) VALUES(?,?,?)"
                                  : "INSERT OR IGNORE INTO left_state(id, parcel_id, t) VALUES(?,?,?)");
    ins_right = prep("INSERT OR IGNORE INTO right_state(id, parcel_id, t) VALUES(?,?,?)");
    match_left = prep("SELECT id FROM right_state WHERE parcel_id = ? AND t >= ? AND t <= ?");
    match_right = prep("SELECT id FROM left_state WHERE parcel_id = ? AND t >= ? AND t <= ?");
    mark_left = prep("UPDATE left_state SET matched = 1 WHERE id = ?");
    mark_right = prep("UPDATE right_state SET matched = 1 WHERE id = ?");
    ins_joined = prep("INSERT INTO joined(event_id, delivery_id, parcel_id, sd_writer) VALUES(?,?,?,?)");
    ins_rej = prep("INSERT INTO rejected(sd_id, reason) VALUES(?,?)");
    setoff = prep("INSERT OR REPLACE INTO sd_offsets(topic, partition, next_offset) VALUES(?,?,?)");

    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *props[][2] = {{"bootstrap.servers", o.brokers}, {"group.id", "refjoin"}, {"enable.auto.commit", "false"},
                              {"isolation.level", "read_committed"}, {"client.id", "refjoin"}};
    for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
        if (rd_kafka_conf_set(conf, props[i][0], props[i][1], errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) die("%s", errstr);
    ref_kafka_config(conf, NULL); /* $STREAMDRILL_KAFKA_CONFIG: TLS, SASL */
    rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!rk) die("consumer: %s", errstr);
    open_topic(&T[0], o.scans);
    open_topic(&T[1], o.deliveries);
    rd_kafka_topic_partition_list_t *as = rd_kafka_topic_partition_list_new(T[0].nparts + T[1].nparts);
    for (int s = 0; s < 2; s++)
        for (int p = 0; p < T[s].nparts; p++) rd_kafka_topic_partition_list_add(as, T[s].name, p)->offset = T[s].next[p];
    if (rd_kafka_assign(rk, as)) die("assign failed");
    rd_kafka_topic_partition_list_destroy(as);

    int64_t batch = state_get("batch", 0);
    for (int sd = 0; sd < 2; sd++)
        for (int p = 0; p < 256; p++) {
            char k[32];
            snprintf(k, sizeof(k), "max:%d:%d", sd, p);
            pmax[sd][p] = p < T[sd].nparts ? state_get(k, INT64_MIN) : INT64_MIN;
        }
    printf("SD-READY\n");
    rd_kafka_message_t **b = calloc((size_t)o.max_batch, sizeof(*b));
    while (!stop_flag) {
        int n = 0;
        int64_t close_at = 0;
        while (!stop_flag && n < o.max_batch && (!close_at || mono_ms() < close_at)) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 0);
            if (!m) { sleep_ms(5); continue; }
            if (m->err) { rd_kafka_message_destroy(m); continue; }
            b[n++] = m;
            if (!close_at) close_at = mono_ms() + o.trigger_ms;
        }
        if (!n) continue;
        batch++;
        printf("SD-BATCH begin id=%lld rows=%d\n", (long long)batch, n);
        snprintf(writer, sizeof(writer), "incarnation %d batch %lld", o.incarnation, (long long)batch);
        /* the watermark of the batch: from the batches before it */
        int64_t wm = watermark();
        sql("BEGIN IMMEDIATE");
        int late = 0, bad = 0;
        for (int i = 0; i < n; i++) {
            int side = !strcmp(rd_kafka_topic_name(b[i]->rkt), o.deliveries);
            one_record(b[i], side, wm, &late, &bad);
            if (o.row_delay_ms > 0) sleep_ms(o.row_delay_ms);
            topic_t *t = &T[side];
            if (b[i]->partition >= 0 && b[i]->partition < t->nparts && b[i]->offset + 1 > t->next[b[i]->partition])
                t->next[b[i]->partition] = b[i]->offset + 1;
        }
        evict(watermark());
        for (int s = 0; s < 2; s++)
            for (int p = 0; p < T[s].nparts; p++) {
                sqlite3_bind_text(setoff, 1, T[s].name, -1, SQLITE_STATIC);
                sqlite3_bind_int(setoff, 2, p);
                sqlite3_bind_int64(setoff, 3, T[s].next[p]);
                done(setoff);
            }
        state_set("batch", batch);
        for (int sd = 0; sd < 2; sd++)
            for (int p = 0; p < T[sd].nparts && p < 256; p++)
                if (pmax[sd][p] != INT64_MIN) {
                    char k[32];
                    snprintf(k, sizeof(k), "max:%d:%d", sd, p);
                    state_set(k, pmax[sd][p]);
                }
        sql("COMMIT");
        int64_t state = count("SELECT (SELECT count(*) FROM left_state) + (SELECT count(*) FROM right_state)");
        printf("SD-BATCH commit id=%lld rows=%d offsets=", (long long)batch, n);
        for (int p = 0; p < T[0].nparts; p++) printf("%s%d:%lld", p ? "," : "", p, (long long)T[0].next[p]);
        for (int p = 0; p < T[1].nparts; p++) printf(",%s:%d:%lld", T[1].name, p, (long long)T[1].next[p]);
        printf(" state=%lld late=%d rejected=%d\n", (long long)state, late, bad);
        for (int i = 0; i < n; i++) rd_kafka_message_destroy(b[i]);
    }
    fprintf(stderr, "refjoin: stopping after batch %lld\n", (long long)batch);
    free(b);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    sqlite3_close(db);
    return 0;
}
