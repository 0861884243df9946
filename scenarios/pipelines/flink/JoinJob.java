/* JoinJob.java - the reference Flink interval join: parcel scans from Kafka
 * joined with the deliveries of their parcel (streamdrill's second source)
 * delivered from the scan's event time to --within-ms after it, each pair
 * written once to a Kafka topic.
 *
 * Both sources keep Flink's bounded out-of-orderness watermark per Kafka
 * partition (--watermark-ms); a partition with no records holds it back. The
 * scans are deduplicated by event id (DedupJob's keyed operator), the
 * deliveries by delivery id, then joined by parcel with Flink's interval
 * join: an inner join whose state for a record is dropped once the
 * watermark (the older of the two inputs') has passed the last time a
 * record of the other side could match it; a record behind that watermark
 * is late and joins nothing. Malformed records are dropped.
 *
 *   --deliveries TOPIC         the deliveries' topic (required)
 *   --within-ms N              the join range (default 300000)
 *   --watermark-ms N           out-of-orderness allowed (default 300000)
 *   --idle-ms N                a partition without records this long does
 *                              not hold the watermark back (default 0: no
 *                              idleness; with it, while one side is idle
 *                              the other side's watermark alone moves the
 *                              join's)
 *   --guarantee exactly-once   (default) the transactional Kafka sink
 *   --guarantee at-least-once  the sink without transactions: the pairs
 *                              joined since the last checkpoint are written
 *                              again after a failure (a wrong variant)
 *   --bound exclusive-upper    a delivery exactly --within-ms after its scan
 *                              does not match (a wrong variant: Flink's
 *                              upperBoundExclusive)
 *   --dedup no                 no deduplication of the scans: a replayed scan
 *                              is joined again (a wrong variant)
 *   --row-delay-ms N           sleep N ms a scan
 *
 * Rows: {"event_id", "delivery_id", "parcel_id", "sd_writer"}, with the
 * header sd-writer = "job J attempt A" (DedupJob.java). Compiled with
 * DedupJob.java beside it by scenarios/deployed/flink-job.sh. */
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.co.ProcessJoinFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;
import org.apache.kafka.clients.consumer.ConsumerRecord;

public final class JoinJob {
    /* one side's record: the scan's event id or the delivery's id, its parcel */
    public static final class Side {
        public String id, parcel;
        public long timeMs;
        public boolean valid;
        public Side() {}
    }

    /* a joined pair as written */
    public static final class Pair {
        public String eventId, deliveryId, parcel, writer;
        public Pair() {}
    }

    static Side scan(DedupJob.Rec r) {
        Side s = new Side();
        s.id = r.eventId;
        s.timeMs = r.timeMs;
        try {
            s.parcel = DedupJob.JSON.readTree(r.raw).path("parcel_id").asText(null);
        } catch (Exception e) {
            s.parcel = null;
        }
        s.valid = s.parcel != null;
        return s;
    }

    static Side delivery(ConsumerRecord<byte[], byte[]> m) {
        Side s = new Side();
        try {
            JsonNode j = DedupJob.JSON.readTree(m.value() == null ? "" : new String(m.value(), StandardCharsets.UTF_8));
            if (j != null && j.isObject() && j.path("delivery_id").isTextual() && j.path("parcel_id").isTextual()
                && j.path("delivered_at").isTextual()) {
                s.id = j.get("delivery_id").asText();
                s.parcel = j.get("parcel_id").asText();
                s.timeMs = OffsetDateTime.parse(j.get("delivered_at").asText()).toInstant().toEpochMilli();
                s.valid = true;
            }
        } catch (Exception e) {
            s.valid = false;
        }
        return s;
    }

    /* the first delivery of each id goes on */
    static final class Once extends KeyedProcessFunction<String, Side, Side> {
        transient ValueState<Boolean> seen;

        @Override
        public void open(OpenContext ctx) { seen = getRuntimeContext().getState(new ValueStateDescriptor<>("seen", Types.BOOLEAN)); }

        @Override
        public void processElement(Side s, Context ctx, Collector<Side> out) throws Exception {
            if (seen.value() != null) return;
            seen.update(Boolean.TRUE);
            out.collect(s);
        }
    }

    static final class Joined extends ProcessJoinFunction<Side, Side, Pair> {
        transient String writer;

        @Override
        public void open(OpenContext ctx) {
            writer = DedupJob.writer(getRuntimeContext());
        }

        @Override
        public void processElement(Side scan, Side delivery, Context ctx, Collector<Pair> out) {
            Pair p = new Pair();
            p.eventId = scan.id;
            p.deliveryId = delivery.id;
            p.parcel = scan.parcel;
            p.writer = writer;
            out.collect(p);
        }
    }

    static KafkaRecordSerializationSchema<Pair> serializer(String topic) {
        return (p, ctx, ts) -> {
            ObjectNode o = DedupJob.JSON.createObjectNode();
            o.put("event_id", p.eventId);
            o.put("delivery_id", p.deliveryId);
            o.put("parcel_id", p.parcel);
            o.put("sd_writer", p.writer);
            return DedupJob.record(topic, p.parcel, o, p.writer);
        };
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = DedupJob.arguments("JoinJob", args, new String[] {"--brokers", "--topic", "--deliveries"},
                                                   "--row-delay-ms", "0", "--guarantee", "exactly-once", "--checkpoint-ms", "2000",
                                                   "--within-ms", "300000", "--watermark-ms", "300000", "--idle-ms", "0",
                                                   "--dedup", "yes", "--bound", "inclusive");
        String topic = a.get("--topic");
        String out = a.getOrDefault("--out-topic", topic + "-out");
        boolean exactly = a.get("--guarantee").equals("exactly-once");

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.enableCheckpointing(Long.parseLong(a.get("--checkpoint-ms")), CheckpointingMode.EXACTLY_ONCE);
        env.setParallelism(1);

        Duration bound = Duration.ofMillis(Long.parseLong(a.get("--watermark-ms")));
        Duration idle = Duration.ofMillis(Long.parseLong(a.get("--idle-ms")));
        WatermarkStrategy<DedupJob.Rec> scanWm = WatermarkStrategy.<DedupJob.Rec>forBoundedOutOfOrderness(bound)
            .withTimestampAssigner((r, ts) -> r.valid ? r.timeMs : Long.MIN_VALUE);
        WatermarkStrategy<Side> deliveryWm = WatermarkStrategy.<Side>forBoundedOutOfOrderness(bound)
            .withTimestampAssigner((s, ts) -> s.valid ? s.timeMs : Long.MIN_VALUE);
        if (!idle.isZero()) {
            scanWm = scanWm.withIdleness(idle);
            deliveryWm = deliveryWm.withIdleness(idle);
        }

        DataStream<DedupJob.Rec> raw = env.fromSource(DedupJob.source(a, topic), scanWm, "scans").uid("scans")
            .filter(r -> r.valid).name("valid").uid("valid");
        OutputTag<DedupJob.Rec> bad = new OutputTag<DedupJob.Rec>("malformed") {};
        KeyedStream<Side, String> scans = raw.keyBy(r -> r.eventId)
            .process(new DedupJob.Dedup(bad, Long.parseLong(a.get("--row-delay-ms")), a.get("--dedup").equals("no")))
            .name("dedup").uid("dedup")
            .map(JoinJob::scan).returns(Side.class).name("scan").uid("scan")
            .filter(s -> s.valid).name("scan-valid").uid("scan-valid")
            .keyBy(s -> s.parcel);

        KafkaSource<Side> dsource = KafkaSource.<Side>builder()
            .setBootstrapServers(a.get("--brokers"))
            .setTopics(a.get("--deliveries"))
            .setGroupId("streamdrill-flink-" + topic)
            .setStartingOffsets(OffsetsInitializer.earliest())
            .setDeserializer(new KafkaRecordDeserializationSchema<Side>() {
                @Override
                public void deserialize(ConsumerRecord<byte[], byte[]> m, Collector<Side> c) { c.collect(delivery(m)); }

                @Override
                public TypeInformation<Side> getProducedType() { return TypeInformation.of(Side.class); }
            })
            .build();
        KeyedStream<Side, String> deliveries = env.fromSource(dsource, deliveryWm, "deliveries").uid("deliveries")
            .filter(s -> s.valid).name("delivery-valid").uid("delivery-valid")
            .keyBy(s -> s.id)
            .process(new Once()).name("delivery-dedup").uid("delivery-dedup")
            .keyBy(s -> s.parcel);

        var join = scans.intervalJoin(deliveries).between(Duration.ZERO, Duration.ofMillis(Long.parseLong(a.get("--within-ms"))));
        if (a.get("--bound").equals("exclusive-upper")) join = join.upperBoundExclusive();
        DataStream<Pair> pairs = join.process(new Joined()).name("join").uid("join");

        pairs.sinkTo(DedupJob.kafka(a, serializer(out), exactly, "j")).name("target").uid("target");
        env.execute("streamdrill-join-" + topic);
    }
}
