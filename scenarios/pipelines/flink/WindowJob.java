/* WindowJob.java - the reference Flink windowed count: parcel scans from
 * Kafka, deduplicated by event id, counted and weighed per location in
 * tumbling event-time windows, each window written once to a Kafka topic
 * when the watermark passes its end.
 *
 * Event time is the scan's event_time; the watermark is Flink's bounded
 * out-of-orderness one, kept per Kafka partition by the source (the job's
 * watermark is the oldest partition's), with idle partitions left out after
 * --idle-ms. A record whose window the watermark has passed is late and
 * dropped; malformed records are dropped.
 *
 *   --window-ms N             window size (default 60000)
 *   --watermark-ms N          out-of-orderness allowed (default 60000)
 *   --idle-ms N               a partition without records this long does not
 *                             hold the watermark back (default 5000)
 *   --guarantee exactly-once  (default) the transactional Kafka sink: a
 *                             window fired after the last checkpoint is
 *                             written in a transaction that a failure aborts,
 *                             and fired again after the restart
 *   --guarantee at-least-once the sink without transactions: those windows are
 *                             written twice (a wrong variant)
 *   --dedup no                no deduplication: a scan sent twice is counted
 *                             twice (a wrong variant)
 *   --row-delay-ms N          sleep N ms a record
 *
 * Rows: {"window_start": epoch ms, "location", "count", "sum" (of weight_g,
 * null when no scan had one), "sd_writer"}, with the header sd-writer =
 * "job J attempt A" (DedupJob.java). Compiled with DedupJob.java beside it
 * by scenarios/deployed/flink-job.sh. */
import java.time.Duration;
import java.util.Map;

import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

public final class WindowJob {
    /* a window's result as written */
    public static final class Win {
        public long start, count, sum;
        public boolean hasSum;
        public String location, writer;
        public Win() {}
    }

    /* count and sum of one window and location: {count, sum, scans with a weight} */
    static final class CountSum implements AggregateFunction<DedupJob.Rec, long[], long[]> {
        public long[] createAccumulator() { return new long[3]; }

        public long[] add(DedupJob.Rec r, long[] acc) {
            acc[0]++;
            if (r.hasWeight) { acc[1] += r.weight; acc[2]++; }
            return acc;
        }

        public long[] getResult(long[] acc) { return acc; }

        public long[] merge(long[] a, long[] b) { return new long[] {a[0] + b[0], a[1] + b[1], a[2] + b[2]}; }
    }

    static final class Emit extends ProcessWindowFunction<long[], Win, String, TimeWindow> {
        transient String writer;

        @Override
        public void open(OpenContext ctx) {
            writer = DedupJob.writer(getRuntimeContext());
        }

        @Override
        public void process(String location, Context ctx, Iterable<long[]> in, Collector<Win> out) {
            for (long[] acc : in) {
                Win w = new Win();
                w.start = ctx.window().getStart();
                w.location = location;
                w.count = acc[0];
                w.sum = acc[1];
                w.hasSum = acc[2] > 0;
                w.writer = writer;
                out.collect(w);
            }
        }
    }

    static KafkaRecordSerializationSchema<Win> serializer(String topic) {
        return (w, ctx, ts) -> {
            ObjectNode o = DedupJob.JSON.createObjectNode();
            o.put("window_start", w.start);
            o.put("location", w.location);
            o.put("count", w.count);
            if (w.hasSum) o.put("sum", w.sum);
            else o.putNull("sum");
            o.put("sd_writer", w.writer);
            return DedupJob.record(topic, w.location, o, w.writer);
        };
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = DedupJob.arguments("WindowJob", args, new String[] {"--brokers", "--topic"},
                                                    "--row-delay-ms", "0", "--guarantee", "exactly-once", "--checkpoint-ms", "2000",
                                                    "--window-ms", "60000", "--watermark-ms", "60000", "--idle-ms", "5000",
                                                    "--dedup", "yes");
        String topic = a.get("--topic");
        String out = a.getOrDefault("--out-topic", topic + "-out");
        boolean exactly = a.get("--guarantee").equals("exactly-once");

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.enableCheckpointing(Long.parseLong(a.get("--checkpoint-ms")), CheckpointingMode.EXACTLY_ONCE);
        env.setParallelism(1);

        /* the source keeps a watermark per partition and forwards the oldest */
        WatermarkStrategy<DedupJob.Rec> wm = WatermarkStrategy
            .<DedupJob.Rec>forBoundedOutOfOrderness(Duration.ofMillis(Long.parseLong(a.get("--watermark-ms"))))
            .withTimestampAssigner((r, ts) -> r.valid ? r.timeMs : Long.MIN_VALUE)
            .withIdleness(Duration.ofMillis(Long.parseLong(a.get("--idle-ms"))));
        DataStream<DedupJob.Rec> scans = env.fromSource(DedupJob.source(a, topic), wm, "scans").uid("scans")
            .filter(r -> r.valid).name("valid").uid("valid");
        /* the same graph either way: --dedup no passes duplicates on */
        OutputTag<DedupJob.Rec> bad = new OutputTag<DedupJob.Rec>("malformed") {};
        scans = scans.keyBy(r -> r.eventId)
            .process(new DedupJob.Dedup(bad, Long.parseLong(a.get("--row-delay-ms")), a.get("--dedup").equals("no")))
            .name("dedup").uid("dedup");
        DataStream<Win> windows = scans
            .keyBy(r -> r.location)
            .window(TumblingEventTimeWindows.of(Duration.ofMillis(Long.parseLong(a.get("--window-ms")))))
            .aggregate(new CountSum(), new Emit())
            .name("windows").uid("windows");
        windows.sinkTo(DedupJob.kafka(a, serializer(out), exactly, "w")).name("target").uid("target");
        env.execute("streamdrill-windows-" + topic);
    }
}
