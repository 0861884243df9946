/* JoinApp.java - a Kafka Streams stream-table join as a team would write one
 * with the DSL: parcel scans de-duplicated by event id (DedupApp's store),
 * re-keyed by parcel, each joined with the delivery its parcel had at the
 * scan's event time (a left join on a table of the deliveries topic); one
 * row per scan; malformed scans to a dead-letter topic.
 *
 *   streams-app [--version V] JoinApp --brokers B --topic T --deliveries D
 *             --out OUT --dead DEAD --app-id ID --state-dir DIR
 *             [--guarantee exactly_once_v2|at_least_once]
 *             [--store persistent|no-changelog] [--table versioned|latest]
 *             [--history-ms 3600000] [--grace-ms 0] [--row-delay-ms 0] [--commit-ms MS]
 *             [--session-timeout-ms 6000] [--linger-ms 5]
 *
 * Event time is the scan's event_time and the delivery's delivered_at. The
 * table keeps each parcel's deliveries in a versioned store (KIP-889,
 * Kafka Streams 3.5 and later) with --history-ms of history: a scan is
 * joined with the newest delivery at or before its event time, whenever
 * the delivery was read (a drill judges it with `model join type=as-of`).
 * Whenever it was read, that is, if it was read before the scan: a task
 * catching up on a backlog reads its partitions by their heads' times, and
 * a delivery behind a later one in its partition is read after scans newer
 * than it. --grace-ms holds each scan back until the task has read a scan
 * that much newer (Joined.withGracePeriod, KIP-923, Kafka Streams 3.6 and
 * later; a versioned table only), and the join sees every delivery older
 * than the scan that was that close behind.
 *
 * Rows: {"event_id", "parcel_id", "delivery_id" (null when the parcel had
 * no delivery yet)}, keyed by parcel.
 *
 * --table latest is the mistake the versioned store exists to prevent: a
 * plain table holds the last delivery read, and a scan read after a
 * delivery made later than it is joined with that one. --store
 * no-changelog forgets the ids seen on a restart (replays joined again). */
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

public class JoinApp {
    static byte[] row(byte[] scan, byte[] delivery) {
        ObjectNode o = DedupApp.JSON.createObjectNode();
        try {
            JsonNode s = DedupApp.JSON.readTree(scan);
            o.put("event_id", s.get("event_id").asText());
            o.put("parcel_id", s.path("parcel_id").asText());
            JsonNode d = delivery == null ? null : DedupApp.JSON.readTree(delivery);
            if (d != null && d.path("delivery_id").isTextual()) o.put("delivery_id", d.get("delivery_id").asText());
            else o.putNull("delivery_id");
        } catch (Exception e) {
            throw new IllegalStateException("join-app: a scan checked before is no longer JSON", e);
        }
        return o.toString().getBytes(StandardCharsets.UTF_8);
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = DedupApp.args("join-app", argv);
        if (!a.containsKey("deliveries")) throw new IllegalArgumentException("join-app: --deliveries is required");
        StreamsBuilder b = new StreamsBuilder();
        KStream<byte[], byte[]> scans = DedupApp.newScans(b, a, "parcel_id");

        Materialized<String, byte[], KeyValueStore<Bytes, byte[]>> store;
        switch (a.getOrDefault("table", "versioned")) {
            case "versioned":
                store = Materialized.as(Stores.persistentVersionedKeyValueStore(
                    "deliveries", Duration.ofMillis(Long.parseLong(a.getOrDefault("history-ms", "3600000")))));
                break;
            case "latest": store = Materialized.as("deliveries"); break;
            default: throw new IllegalArgumentException("join-app: --table versioned or latest");
        }
        KTable<String, byte[]> deliveries =
            b.table(a.get("deliveries"), Consumed.with(Serdes.String(), Serdes.ByteArray()).withTimestampExtractor(new DedupApp.FieldTime("delivered_at")),
                    store.withKeySerde(Serdes.String()).withValueSerde(Serdes.ByteArray()));
        Joined<String, byte[], byte[]> joined = Joined.with(Serdes.String(), Serdes.ByteArray(), Serdes.ByteArray());
        long grace = Long.parseLong(a.getOrDefault("grace-ms", "0"));
        if (grace > 0 && "latest".equals(a.get("table")))
            System.err.println("join-app: --grace-ms ignored: a table without history takes no grace period");
        else if (grace > 0) joined = joined.withGracePeriod(Duration.ofMillis(grace));
        scans.map((k, v) -> KeyValue.pair(new String(k, StandardCharsets.UTF_8), v))
            .leftJoin(deliveries, JoinApp::row, joined)
            .map((k, v) -> KeyValue.pair(k.getBytes(StandardCharsets.UTF_8), v))
            .to(a.get("out"), Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));

        Properties p = DedupApp.config(a);
        DedupApp.run(b.build(), p);
    }
}
