/* DedupApp.java - a Kafka Streams application as a team would write one:
 * parcel scans de-duplicated by event id in a persistent state store,
 * written to an output topic, malformed records to a dead-letter topic.
 *
 *   dedup-app [--version V] --brokers B --topic T --out OUT --dead DEAD
 *             --app-id ID --state-dir DIR
 *             [--guarantee exactly_once_v2|at_least_once]
 *             [--store persistent|no-changelog] [--standbys N]
 *             [--row-delay-ms 0] [--commit-ms MS] [--session-timeout-ms 6000]
 *             [--linger-ms 5] [--punctuate-ms MS]
 *
 * The store is RocksDB with its changelog (the default): under
 * exactly_once_v2 the output, the store's changelog and the consumed
 * offsets commit in one Kafka transaction every commit interval (100 ms by
 * default), so a kill leaves an open transaction that the restarted
 * instance's producer aborts. --store no-changelog is the mistake: an
 * in-memory store with logging disabled, forgotten by a restarted
 * instance (the replays it saw are written again). A value that is not a
 * JSON object with a string event_id and event_time goes to DEAD as
 * {"sd_id": <the record's sd-id header>, "reason": ...}. Each record costs
 * --row-delay-ms (standing in for real work). Kafka Streams' own INFO lines
 * for its state changes (REBALANCING, RUNNING, ...) and its restores are
 * on stderr (dedup-app sets those two loggers to INFO, the rest to WARN):
 * the harness reads them as the application's own account. SIGTERM closes
 * it cleanly.
 *
 * With --punctuate-ms the new scans are not written at once: they wait in a
 * second persistent store (with its changelog) and a wall-clock
 * punctuator writes and removes them every MS (a team's way to batch
 * output). After a restart with no new input, the punctuator's writes are
 * the only work of the transaction: Streams 3.1.0 to 3.3.2 never commit
 * such a transaction (KAFKA-14294, fixed in 3.4.0), and the buffered scans
 * never reach a read_committed reader (scenarios/bugs/kafka-14294.drill).
 *
 * Its producer lingers 5 ms (--linger-ms; Streams' default is 100, its
 * commit interval under exactly_once_v2): a transaction's records reach
 * the broker as they are written, so a kill from outside can find them in
 * an open transaction. With 100 they reach it at the commit, and an open
 * transaction holds records only for the moment of the commit. */
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.TimestampExtractor;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

public class DedupApp {
    static final ObjectMapper JSON = new ObjectMapper();
    static final String STORE = "seen-ids";
    static final String BUFFER = "to-write";

    /* New scans forwarded, replays skipped, what cannot be read turned into
     * a dead letter. Without keyBy, to the children "out" and "dead" (a
     * Topology); with it (a DSL stream), every record to the next step: a
     * scan keyed by its field keyBy, a dead letter keyed null. */
    static final class Dedup implements Processor<byte[], byte[], byte[], byte[]> {
        private final long rowDelayMs, punctuateMs;
        private final String keyBy;
        private ProcessorContext<byte[], byte[]> ctx;
        private KeyValueStore<String, Long> seen;
        private KeyValueStore<String, byte[]> buffer;

        Dedup(long rowDelayMs, long punctuateMs, String keyBy) {
            this.rowDelayMs = rowDelayMs;
            this.punctuateMs = punctuateMs;
            this.keyBy = keyBy;
        }

        @Override
        public void init(ProcessorContext<byte[], byte[]> context) {
            ctx = context;
            seen = context.getStateStore(STORE);
            if (punctuateMs > 0) {
                buffer = context.getStateStore(BUFFER);
                context.schedule(Duration.ofMillis(punctuateMs), PunctuationType.WALL_CLOCK_TIME, this::flush);
            }
        }

        /* every buffered scan written and removed */
        private void flush(long now) {
            List<KeyValue<String, byte[]>> all = new ArrayList<>();
            try (KeyValueIterator<String, byte[]> it = buffer.all()) {
                while (it.hasNext()) all.add(it.next());
            }
            for (KeyValue<String, byte[]> kv : all) {
                ctx.forward(new Record<>(kv.key.getBytes(StandardCharsets.UTF_8), kv.value, now), "out");
                buffer.delete(kv.key);
            }
        }

        private String reason(JsonNode j) {
            if (j == null || !j.isObject()) return "not a JSON object";
            if (!j.path("event_id").isTextual()) return "id missing or not a string";
            if (!j.path("event_time").isTextual()) return "event time missing or not a string";
            if (keyBy != null && !j.path(keyBy).isTextual()) return keyBy + " missing or not a string";
            return null;
        }

        @Override
        public void process(Record<byte[], byte[]> rec) {
            byte[] v = rec.value();
            JsonNode j = null;
            String why;
            if (v == null || v.length == 0) {
                why = "empty or null value";
            } else {
                try {
                    j = JSON.readTree(v);
                    why = reason(j);
                } catch (Exception e) {
                    why = "not JSON";
                }
            }
            if (why != null) {
                Header h = rec.headers().lastHeader("sd-id");
                ObjectNode d = JSON.createObjectNode();
                d.put("sd_id", h == null ? "" : new String(h.value(), StandardCharsets.UTF_8));
                d.put("reason", why);
                Record<byte[], byte[]> dead = rec.withValue(d.toString().getBytes(StandardCharsets.UTF_8));
                if (keyBy == null) ctx.forward(dead, "dead");
                else ctx.forward(dead.withKey(null));
            } else {
                String id = j.get("event_id").asText();
                if (seen.get(id) == null) {
                    seen.put(id, rec.timestamp());
                    if (buffer != null) buffer.put(id, v);
                    else if (keyBy == null) ctx.forward(rec.withKey(id.getBytes(StandardCharsets.UTF_8)), "out");
                    else ctx.forward(rec.withKey(j.get(keyBy).asText().getBytes(StandardCharsets.UTF_8)));
                }
            }
            if (rowDelayMs > 0) {
                try {
                    Thread.sleep(rowDelayMs);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    /* A record's time from its JSON field (ISO-8601: event_time,
     * delivered_at); a record without one keeps its partition's time. */
    static final class FieldTime implements TimestampExtractor {
        private final String field;

        FieldTime(String field) {
            this.field = field;
        }

        @Override
        public long extract(ConsumerRecord<Object, Object> rec, long partitionTime) {
            try {
                return Instant.parse(JSON.readTree((byte[]) rec.value()).get(field).asText()).toEpochMilli();
            } catch (Exception | Error e) {
                return Math.max(partitionTime, 0);
            }
        }
    }

    /* --name value pairs over the defaults; the common ones required */
    static Map<String, String> args(String app, String[] argv) {
        Map<String, String> a = new HashMap<>();
        a.put("guarantee", "exactly_once_v2");
        a.put("store", "persistent");
        a.put("standbys", "0");
        a.put("row-delay-ms", "0");
        a.put("session-timeout-ms", "6000");
        for (int i = 0; i + 1 < argv.length; i += 2) {
            if (!argv[i].startsWith("--")) throw new IllegalArgumentException(app + ": unexpected argument " + argv[i]);
            a.put(argv[i].substring(2), argv[i + 1]);
        }
        for (String k : new String[] {"brokers", "topic", "out", "dead", "app-id", "state-dir"})
            if (!a.containsKey(k)) throw new IllegalArgumentException(app + ": --" + k + " is required");
        return a;
    }

    /* --store: persistent (with its changelog) or no-changelog */
    static boolean logged(String store) {
        switch (store) {
            case "persistent": return true;
            case "no-changelog": return false;
            default: throw new IllegalArgumentException("--store persistent or no-changelog");
        }
    }

    /* the ids seen: RocksDB with its changelog, or in memory without one */
    static StoreBuilder<KeyValueStore<String, Long>> seenStore(boolean logged) {
        KeyValueBytesStoreSupplier supplier = logged ? Stores.persistentKeyValueStore(STORE) : Stores.inMemoryKeyValueStore(STORE);
        StoreBuilder<KeyValueStore<String, Long>> store = Stores.keyValueStoreBuilder(supplier, Serdes.String(), Serdes.Long());
        return logged ? store : store.withLoggingDisabled();
    }

    static Properties config(Map<String, String> a) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, a.get("app-id"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("brokers"));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, a.get("guarantee"));
        p.put(StreamsConfig.STATE_DIR_CONFIG, a.get("state-dir"));
        p.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, a.get("standbys"));
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        if (a.containsKey("commit-ms")) p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, a.get("commit-ms"));
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), a.get("session-timeout-ms"));
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), "1000");
        /* records reach the broker as they are written, not at the commit
         * (Streams' producer lingers 100 ms by default, the commit interval
         * under exactly_once_v2): an open transaction holds records */
        p.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), a.getOrDefault("linger-ms", "5"));
        return p;
    }

    /* A DSL application's first steps: the scans of --topic by their event
     * time, de-duplicated by id in the store of --store, the ones that
     * cannot be read written to --dead; the new ones come out keyed by
     * their field keyBy. */
    static KStream<byte[], byte[]> newScans(StreamsBuilder b, Map<String, String> a, String keyBy) {
        long rowDelay = Long.parseLong(a.get("row-delay-ms"));
        b.addStateStore(seenStore(logged(a.get("store"))));
        KStream<byte[], byte[]> checked =
            b.stream(a.get("topic"), Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()).withTimestampExtractor(new FieldTime("event_time")))
                .process(() -> new Dedup(rowDelay, 0, keyBy), STORE);
        checked.filter((k, v) -> k == null).to(a.get("dead"), Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));
        return checked.filter((k, v) -> k != null);
    }

    /* runs until closed (SIGTERM closes it cleanly); exits 1 on ERROR */
    static void run(Topology t, Properties p) throws InterruptedException {
        KafkaStreams streams = new KafkaStreams(t, p);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) done.countDown();
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(30));
            done.countDown();
        }));
        streams.start();
        done.await();
        if (streams.state() == KafkaStreams.State.ERROR) System.exit(1);
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = args("dedup-app", argv);
        long rowDelay = Long.parseLong(a.get("row-delay-ms"));
        long punctuate = Long.parseLong(a.getOrDefault("punctuate-ms", "0"));
        Topology t = new Topology();
        t.addSource("in", Serdes.ByteArray().deserializer(), Serdes.ByteArray().deserializer(), a.get("topic"));
        t.addProcessor("dedup", () -> new Dedup(rowDelay, punctuate, null), "in");
        t.addStateStore(seenStore(logged(a.get("store"))), "dedup");
        if (punctuate > 0)
            t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(BUFFER), Serdes.String(), Serdes.ByteArray()),
                            "dedup");
        t.addSink("out", a.get("out"), Serdes.ByteArray().serializer(), Serdes.ByteArray().serializer(), "dedup");
        t.addSink("dead", a.get("dead"), Serdes.ByteArray().serializer(), Serdes.ByteArray().serializer(), "dedup");
        run(t, config(a));
    }
}
