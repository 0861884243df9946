/* DedupJob.java - the reference Flink job: parcel scans from Kafka,
 * deduplicated by event id in keyed state, written to a Kafka topic; the
 * malformed records, with their sd-id header, to a quarantine topic.
 *
 *   --guarantee exactly-once   (default) Flink's transactional Kafka sink:
 *                              records go out in a transaction that commits
 *                              when the checkpoint completes (two-phase
 *                              commit), so a read_committed reader sees each
 *                              once however the job fails
 *   --guarantee at-least-once  the same job with the non-transactional sink:
 *                              after a restart from a checkpoint the records
 *                              written since it are written again (a wrong
 *                              variant the drills must catch)
 *   --out DIR --quarantine DIR Flink's FileSink instead of Kafka: JSON lines in
 *                              part files, rolled at every checkpoint and
 *                              made visible (renamed from a hidden in-progress
 *                              file) when the checkpoint completes
 *   --value-format avro --registry URL
 *                              values in a schema registry's Avro wire format,
 *                              decoded with flink-avro by the schema each id
 *                              names (WireAvro.java); --avro-weak
 *                              newest-schema skips the header (caught)
 *   --row-delay-ms N           sleep N ms a record (longer checkpoint intervals
 *                              with records in flight)
 *   --version 2                changed code: event ids trimmed in a new operator
 *                              before the deduplication (an upgrade restored
 *                              from a savepoint of version 1)
 *   --uids no                  no operator uids: Flink derives each operator's
 *                              id from the graph, so version 2 cannot map the
 *                              state of version 1's savepoint (Flink refuses
 *                              it, or, allowed to drop it, starts without its
 *                              offsets and deduplication state)
 *
 * Every output record carries header sd-writer = "job J attempt A": the
 * submission (the first 8 digits of its job id) and the restart of it
 * (Flink's attempt number) that wrote it, so a duplicate names the restart
 * that wrote each copy. Checkpoints every --checkpoint-ms (default 2000).
 * Compiled against the runtime's jars by scenarios/deployed/flink-job.sh. */
import java.nio.charset.StandardCharsets;
import java.time.OffsetDateTime;
import java.util.HashMap;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringEncoder;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.OnCheckpointRollingPolicy;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;

public final class DedupJob {
    /* a record as read: its payload, sd-id header, partition and offset */
    public static final class Rec {
        public String raw, sdId, eventId, writer, location;
        public int partition;
        public long offset, timeMs, weight;
        public boolean valid, hasWeight;
        public Rec() {}
    }

    static final ObjectMapper JSON = new ObjectMapper();

    static Rec read(ConsumerRecord<byte[], byte[]> m) { return read(m, m.value() == null ? "" : new String(m.value(), StandardCharsets.UTF_8), true); }

    /* text: the value as JSON (a wire format's record decoded), or, not
     * decoded, what the quarantine keeps of it */
    static Rec read(ConsumerRecord<byte[], byte[]> m, String text, boolean decoded) {
        Rec r = new Rec();
        r.raw = text;
        Header h = m.headers().lastHeader("sd-id");
        r.sdId = h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
        r.partition = m.partition();
        r.offset = m.offset();
        if (!decoded) return r;
        try {
            JsonNode j = JSON.readTree(r.raw);
            if (j != null && j.isObject() && j.path("event_id").isTextual() && j.path("event_time").isTextual()) {
                r.timeMs = OffsetDateTime.parse(j.get("event_time").asText()).toInstant().toEpochMilli();
                r.eventId = j.get("event_id").asText();
                r.location = j.path("location").asText("");
                r.hasWeight = j.path("weight_g").isIntegralNumber();
                r.weight = r.hasWeight ? j.get("weight_g").asLong() : 0;
                r.valid = true;
            }
        } catch (Exception e) {
            r.valid = false;
        }
        return r;
    }

    /* the first record of each event id goes on; malformed ones to the side */
    static final class Dedup extends KeyedProcessFunction<String, Rec, Rec> {
        final OutputTag<Rec> bad;
        final long delay;
        final boolean keep;   /* pass every record on: no deduplication (a wrong variant) */
        transient ValueState<Boolean> seen;
        transient String writer;

        Dedup(OutputTag<Rec> bad, long delay) { this(bad, delay, false); }

        Dedup(OutputTag<Rec> bad, long delay, boolean keep) { this.bad = bad; this.delay = delay; this.keep = keep; }

        @Override
        public void open(OpenContext ctx) {
            seen = getRuntimeContext().getState(new ValueStateDescriptor<>("seen", Types.BOOLEAN));
            writer = writer(getRuntimeContext());
        }

        @Override
        public void processElement(Rec r, Context ctx, Collector<Rec> out) throws Exception {
            if (delay > 0) Thread.sleep(delay);
            r.writer = writer;
            if (!r.valid) { ctx.output(bad, r); return; }
            if (seen.value() != null && !keep) return;
            seen.update(Boolean.TRUE);
            out.collect(r);
        }
    }

    /* the output row: the event (or, quarantined, its sd-id and raw text)
     * with where it was read and who wrote it */
    static ObjectNode row(Rec r, boolean quarantine) {
        try {
            ObjectNode o;
            if (quarantine) {
                o = JSON.createObjectNode();
                o.put("sd_id", r.sdId != null ? r.sdId : r.eventId);
                o.put("raw", r.raw);
            } else {
                o = (ObjectNode) JSON.readTree(r.raw);
            }
            o.put("sd_partition", r.partition);
            o.put("sd_offset", r.offset);
            o.put("sd_processed_ms", System.currentTimeMillis());
            o.put("sd_writer", r.writer != null ? r.writer : "?");
            return o;
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    static KafkaRecordSerializationSchema<Rec> serializer(String topic, boolean quarantine) {
        return (r, ctx, ts) -> record(topic, null, row(r, quarantine), r.writer != null ? r.writer : "?");
    }

    /* who writes: the submission (the first 8 digits of its job id) and
     * the restart of it (Flink's attempt number) */
    static String writer(RuntimeContext c) {
        return "job " + c.getJobInfo().getJobId().toString().substring(0, 8) + " attempt " + c.getTaskInfo().getAttemptNumber();
    }

    /* a row for topic (keyed by key, or not), its writer in the sd-writer header */
    static ProducerRecord<byte[], byte[]> record(String topic, String key, ObjectNode row, String writer) {
        RecordHeaders hs = new RecordHeaders();
        hs.add("sd-writer", writer.getBytes(StandardCharsets.UTF_8));
        return new ProducerRecord<>(topic, null, null, key == null ? null : key.getBytes(StandardCharsets.UTF_8),
                                    row.toString().getBytes(StandardCharsets.UTF_8), hs);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = arguments("DedupJob", args, new String[] {"--brokers", "--topic"},
                                          "--row-delay-ms", "0", "--guarantee", "exactly-once", "--checkpoint-ms", "2000");
        String topic = a.get("--topic");
        String out = a.getOrDefault("--out-topic", topic + "-out");
        String quarantine = a.getOrDefault("--quarantine-topic", topic + "-quarantine");
        boolean exactly = a.get("--guarantee").equals("exactly-once");

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.enableCheckpointing(Long.parseLong(a.get("--checkpoint-ms")), CheckpointingMode.EXACTLY_ONCE);
        env.setParallelism(1);

        KafkaSource<Rec> source = source(a, topic);
        boolean uids = !a.getOrDefault("--uids", "yes").equals("no");
        OutputTag<Rec> bad = new OutputTag<Rec>("malformed") {};
        SingleOutputStreamOperator<Rec> scans = uid(env.fromSource(source, WatermarkStrategy.noWatermarks(), "scans"), "scans", uids);
        /* version 2 of the job: event ids trimmed before the deduplication,
         * a new operator in the graph (stateless) */
        if (a.getOrDefault("--version", "1").equals("2"))
            scans = uid(scans.map(r -> { if (r.eventId != null) r.eventId = r.eventId.trim(); return r; }).returns(Rec.class).name("trim"), "trim", uids);
        SingleOutputStreamOperator<Rec> kept = uid(scans
            .keyBy(r -> r.valid ? "e:" + r.eventId : "m:" + r.partition + ":" + r.offset)
            .process(new Dedup(bad, Long.parseLong(a.get("--row-delay-ms"))))
            .name("dedup"), "dedup", uids);
        if (a.containsKey("--out")) {
            uid(kept.getSideOutput(bad).map(r -> row(r, true).toString()).returns(Types.STRING).sinkTo(files(a.get("--quarantine"))).name("quarantine"), "quarantine", uids);
            uid(kept.map(r -> row(r, false).toString()).returns(Types.STRING).sinkTo(files(a.get("--out"))).name("target"), "target", uids);
        } else {
            DeliveryGuarantee g = exactly ? DeliveryGuarantee.EXACTLY_ONCE : DeliveryGuarantee.AT_LEAST_ONCE;
            uid(kept.getSideOutput(bad).sinkTo(sink(a, quarantine, true, g, "q")).name("quarantine"), "quarantine", uids);
            uid(kept.sinkTo(sink(a, out, false, g, "t")).name("target"), "target", uids);
        }
        env.execute("streamdrill-dedup-" + topic);
    }

    /* the options: "--name value" pairs over the defaults given as
     * name, value, ...; a required one missing ends the job (exit 2) */
    static Map<String, String> arguments(String job, String[] args, String[] required, String... defaults) {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < defaults.length; i += 2) a.put(defaults[i], defaults[i + 1]);
        for (int i = 0; i + 1 < args.length; i += 2) a.put(args[i], args[i + 1]);
        for (String need : required)
            if (!a.containsKey(need)) {
                System.err.println(job + ": " + need + " is required");
                System.exit(2);
            }
        return a;
    }

    /* the scans' topic read from its first offset, each record as a Rec */
    static KafkaSource<Rec> source(Map<String, String> a, String topic) {
        return KafkaSource.<Rec>builder()
            .setBootstrapServers(a.get("--brokers"))
            .setTopics(topic)
            .setGroupId("streamdrill-flink-" + topic)
            .setStartingOffsets(OffsetsInitializer.earliest())
            .setDeserializer(new KafkaRecordDeserializationSchema<Rec>() {
                /* --value-format avro: the registry's wire format (WireAvro.java) */
                final WireAvro avro = WireAvro.of(a);

                @Override
                public void deserialize(ConsumerRecord<byte[], byte[]> m, Collector<Rec> c) {
                    if (avro == null) {
                        c.collect(read(m));
                        return;
                    }
                    String j = avro.json(m.value());
                    c.collect(read(m, j != null ? j : "undecodable: " + (m.value() == null ? 0 : m.value().length) + " bytes", j != null));
                }

                @Override
                public TypeInformation<Rec> getProducedType() { return TypeInformation.of(Rec.class); }
            })
            .build();
    }

    /* an operator's uid, which maps its state in a savepoint to the
     * operator of the job restored from it; without (--uids no) Flink
     * derives one from the graph's shape, which changed code changes */
    static <T> SingleOutputStreamOperator<T> uid(SingleOutputStreamOperator<T> op, String id, boolean on) { return on ? op.uid(id) : op; }

    static <T> DataStreamSink<T> uid(DataStreamSink<T> sink, String id, boolean on) { return on ? sink.uid(id) : sink; }

    static FileSink<String> files(String dir) {
        return FileSink.forRowFormat(new Path(dir), new SimpleStringEncoder<String>("UTF-8"))
            .withRollingPolicy(OnCheckpointRollingPolicy.build())
            .build();
    }

    static KafkaSink<Rec> sink(Map<String, String> a, String topic, boolean quarantine, DeliveryGuarantee g, String tag) {
        return kafka(a, serializer(topic, quarantine), g == DeliveryGuarantee.EXACTLY_ONCE, tag);
    }

    /* Flink's Kafka sink: transactional (ids "sd-TOPIC-TAG-...", a
     * transaction per checkpoint interval) or, exactly false, without
     * transactions */
    static <T> KafkaSink<T> kafka(Map<String, String> a, KafkaRecordSerializationSchema<T> s, boolean exactly, String tag) {
        var b = KafkaSink.<T>builder()
            .setBootstrapServers(a.get("--brokers"))
            .setRecordSerializer(s)
            .setDeliveryGuarantee(exactly ? DeliveryGuarantee.EXACTLY_ONCE : DeliveryGuarantee.AT_LEAST_ONCE)
            .setProperty("transaction.timeout.ms", "60000");
        if (exactly) b.setTransactionalIdPrefix("sd-" + a.get("--topic") + "-" + tag);
        return b.build();
    }
}
