/* WindowApp.java - a Kafka Streams windowed count as a team would write one
 * with the DSL: parcel scans de-duplicated by event id (DedupApp's store),
 * re-keyed by location, counted and weighed in tumbling event-time windows
 * with a grace period, and each window written once, when it closes
 * (suppress until the window closes); malformed records to a dead-letter
 * topic.
 *
 *   streams-app [--version V] WindowApp --brokers B --topic T --out OUT
 *             --dead DEAD --app-id ID --state-dir DIR
 *             [--guarantee exactly_once_v2|at_least_once]
 *             [--store persistent|no-changelog] [--emit final|early]
 *             [--window-ms 60000] [--grace-ms 60000] [--row-delay-ms 0]
 *             [--commit-ms MS] [--session-timeout-ms 6000] [--linger-ms 5]
 *
 * Event time is the scan's event_time. Kafka Streams keeps it per task
 * (stream time: the newest event time the task has read), not per
 * application: the count runs behind a repartition topic keyed by
 * location, so a window closes when the newest scan of the locations its
 * task owns is past its end plus the grace period (a drill judges it with
 * `model windows ... clock=task`). A scan for a window that has closed is
 * dropped as late.
 *
 * Rows: {"window_start": epoch ms, "location", "count", "sum" (of weight_g,
 * null when no scan had one)}, keyed by location.
 *
 * --emit early is the mistake of a team that leaves suppress out: every
 * update of an open window is written at each commit. --store no-changelog
 * keeps the de-duplication store in memory and the windows' store without
 * its changelog: a restarted instance forgets both. */
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
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.state.WindowStore;

public class WindowApp {
    /* "count,sum,scans with a weight" plus one scan */
    static String add(byte[] scan, String agg) {
        String[] p = agg.split(",");
        long count = Long.parseLong(p[0]) + 1, sum = Long.parseLong(p[1]), weighed = Long.parseLong(p[2]);
        try {
            JsonNode w = DedupApp.JSON.readTree(scan).get("weight_g");
            if (w != null && w.isIntegralNumber()) {
                sum += w.asLong();
                weighed++;
            }
        } catch (Exception e) {
            /* checked before: a scan here is a JSON object */
        }
        return count + "," + sum + "," + weighed;
    }

    static byte[] row(Windowed<String> w, String agg) {
        String[] p = agg.split(",");
        ObjectNode o = DedupApp.JSON.createObjectNode();
        o.put("window_start", w.window().start());
        o.put("location", w.key());
        o.put("count", Long.parseLong(p[0]));
        if (Long.parseLong(p[2]) > 0) o.put("sum", Long.parseLong(p[1]));
        else o.putNull("sum");
        return o.toString().getBytes(StandardCharsets.UTF_8);
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = DedupApp.args("window-app", argv);
        a.putIfAbsent("emit", "final");
        boolean logged = DedupApp.logged(a.get("store"));
        StreamsBuilder b = new StreamsBuilder();
        KStream<byte[], byte[]> scans = DedupApp.newScans(b, a, "location");

        Materialized<String, String, WindowStore<Bytes, byte[]>> counts =
            Materialized.<String, String, WindowStore<Bytes, byte[]>>as("counts")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String());
        if (!logged) counts = counts.withLoggingDisabled();
        KTable<Windowed<String>, String> windows =
            scans.map((k, v) -> KeyValue.pair(new String(k, StandardCharsets.UTF_8), v))
                .groupByKey(Grouped.with("by-location", Serdes.String(), Serdes.ByteArray()))
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(Long.parseLong(a.getOrDefault("window-ms", "60000"))),
                                                       Duration.ofMillis(Long.parseLong(a.getOrDefault("grace-ms", "60000")))))
                .aggregate(() -> "0,0,0", (k, v, agg) -> add(v, agg), counts);
        switch (a.get("emit")) {
            case "final": windows = windows.suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())); break;
            case "early": break;
            default: throw new IllegalArgumentException("window-app: --emit final or early");
        }
        windows.toStream()
            .map((w, agg) -> KeyValue.pair(w.key().getBytes(StandardCharsets.UTF_8), row(w, agg)))
            .to(a.get("out"), Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));

        Properties p = DedupApp.config(a);
        /* without suppress, every update of a window goes out at each commit */
        p.put("statestore.cache.max.bytes", "0");
        DedupApp.run(b.build(), p);
    }
}
