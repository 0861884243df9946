/* PassJob.java - records from one Kafka topic to another as they are,
 * through Flink's Kafka sink at least once: the job of the drills of bugs
 * in released Flink Kafka connectors (scenarios/bugs/, docs/bugs.md). It
 * uses only API that Flink 1.19 and 2.x share, and is built against the
 * release of the cluster it runs on with the connector release a drill
 * names (scenarios/deployed/flink-job.sh start --connector VERSION).
 *
 *   --brokers B          the source's bootstrap servers
 *   --sink-brokers B     the sink's (default: --brokers): the harness's
 *                        proxy, so a network fault reaches the sink alone
 *   --topic T            read T, write T-out
 *   --checkpoint-ms N    checkpoint interval (default 10000)
 *   --delivery-timeout-ms N
 *                        the sink producer's delivery.timeout.ms (default
 *                        3000; request.timeout.ms is a third of it): how
 *                        long a record may wait for the broker before its
 *                        send fails
 *   --bounded yes        read the topic up to its end when the job starts,
 *                        then finish (a bounded source: a backfill)
 *   --row-delay-ms N     sleep N ms a record (a job that takes a while)
 *
 * A send that fails must fail the job, which restarts from its last
 * checkpoint and reads again what it had not delivered; a connector that
 * lets the failure pass loses those records while the checkpoint after
 * them completes (FLINK-35749). A bounded job must finish once it has read
 * up to the end it saw when it started, also when a partition ends in a
 * transaction's commit marker, which no reader is handed (FLINK-34470). */
import java.util.Properties;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.KafkaSourceBuilder;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

public final class PassJob {
    /* each record passed on after ms milliseconds */
    public static final class Delay implements MapFunction<String, String> {
        private final long ms;

        public Delay(long ms) { this.ms = ms; }

        @Override
        public String map(String value) throws Exception {
            if (ms > 0) Thread.sleep(ms);
            return value;
        }
    }

    private static String arg(String[] args, String name, String dflt) {
        for (int i = 0; i + 1 < args.length; i++)
            if (args[i].equals(name)) return args[i + 1];
        if (dflt == null) throw new IllegalArgumentException("PassJob: " + name + " is required");
        return dflt;
    }

    public static void main(String[] args) throws Exception {
        String brokers = arg(args, "--brokers", null), topic = arg(args, "--topic", null);
        String sinkBrokers = arg(args, "--sink-brokers", brokers);
        long checkpointMs = Long.parseLong(arg(args, "--checkpoint-ms", "10000"));
        int deliveryMs = Integer.parseInt(arg(args, "--delivery-timeout-ms", "3000"));
        boolean bounded = arg(args, "--bounded", "no").equals("yes");
        long rowDelayMs = Long.parseLong(arg(args, "--row-delay-ms", "0"));

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.enableCheckpointing(checkpointMs);
        KafkaSourceBuilder<String> sb = KafkaSource.<String>builder()
                .setBootstrapServers(brokers)
                .setTopics(topic)
                .setGroupId("streamdrill-pass-" + topic)
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setValueOnlyDeserializer(new SimpleStringSchema());
        if (bounded) sb.setBounded(OffsetsInitializer.latest());
        KafkaSource<String> source = sb.build();
        Properties producer = new Properties();
        producer.setProperty("delivery.timeout.ms", Integer.toString(deliveryMs));
        producer.setProperty("request.timeout.ms", Integer.toString(Math.max(deliveryMs / 3, 500)));
        producer.setProperty("linger.ms", "0");
        KafkaSink<String> sink = KafkaSink.<String>builder()
                .setBootstrapServers(sinkBrokers)
                .setKafkaProducerConfig(producer)
                .setRecordSerializer(KafkaRecordSerializationSchema.builder()
                        .setTopic(topic + "-out")
                        .setValueSerializationSchema(new SimpleStringSchema())
                        .build())
                .setDeliveryGuarantee(DeliveryGuarantee.AT_LEAST_ONCE)
                .build();
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "scans").uid("scans")
                .map(new Delay(rowDelayMs)).uid("delay")
                .sinkTo(sink).uid("out");
        env.execute("pass " + topic);
    }
}
