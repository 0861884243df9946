/* FileSinkJob.java - file_sink.py's query for the JVM: Kafka -> JSON file
 * sink (the sink Spark documents as exactly-once), for Spark's cluster
 * deploy mode, where a standalone master runs the driver on a worker and
 * takes no Python application (scenarios/deployed/spark-cluster.drill).
 *
 * Valid parcel scans go to --out, malformed records with their sd-id to
 * --quarantine; each is its own streaming query with its own checkpoint
 * (CHECKPOINT/target, CHECKPOINT/quarantine). It prints SD-READY once both
 * have started, and runs until the driver is killed. Compiled by
 * scenarios/deployed/spark-cluster.sh against the PySpark installation's
 * jars. */
import java.util.HashMap;
import java.util.Map;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;

public final class FileSinkJob {
    private static final String SCHEMA = "event_id STRING, parcel_id STRING, event_time STRING, location STRING, scan STRING, weight_g BIGINT";

    public static void main(String[] args) throws Exception {
        Map<String, String> a = new HashMap<>();
        a.put("--row-delay-ms", "0");
        for (int i = 0; i + 1 < args.length; i += 2) a.put(args[i], args[i + 1]);
        for (String need : new String[] {"--brokers", "--topic", "--checkpoint", "--out", "--quarantine"})
            if (!a.containsKey(need)) {
                System.err.println("FileSinkJob: " + need + " is required");
                System.exit(2);
            }
        long delay = Long.parseLong(a.get("--row-delay-ms"));
        SparkSession spark = SparkSession.builder().appName("streamdrill-file-sink-jvm").config("spark.ui.enabled", "false").getOrCreate();
        spark.sparkContext().setLogLevel("WARN");
        Dataset<Row> parsed = spark.readStream().format("kafka")
            .option("kafka.bootstrap.servers", a.get("--brokers"))
            .option("subscribe", a.get("--topic"))
            .option("startingOffsets", "earliest")
            .option("failOnDataLoss", "true")
            .option("includeHeaders", "true")
            .load()
            .selectExpr("CAST(value AS STRING) AS raw", "partition", "offset",
                        "CAST(filter(headers, h -> h.key = 'sd-id')[0].value AS STRING) AS sd_id")
            .selectExpr("*", "from_json(raw, '" + SCHEMA + "') AS j")
            .selectExpr("*", "to_timestamp(j.event_time) AS ts",
                        // sleeps, then gives the time the row was processed (epoch ms)
                        delay > 0 ? "coalesce(nullif(reflect('java.lang.Thread', 'sleep', CAST(" + delay + " AS BIGINT)), 'null'), "
                                    + "reflect('java.lang.System', 'currentTimeMillis')) AS sd_processed_ms"
                                  : "reflect('java.lang.System', 'currentTimeMillis') AS sd_processed_ms")
            .selectExpr("*", "j.event_id IS NOT NULL AND ts IS NOT NULL AS valid");
        StreamingQuery target = parsed.where("valid")
            .selectExpr("j.event_id AS event_id", "j.parcel_id AS parcel_id", "j.event_time AS event_time", "j.location AS location",
                        "partition AS sd_partition", "offset AS sd_offset", "sd_processed_ms")
            .writeStream().format("json").queryName("target")
            .option("path", a.get("--out")).option("checkpointLocation", a.get("--checkpoint") + "/target")
            .trigger(Trigger.ProcessingTime(0)).start();
        StreamingQuery quarantine = parsed.where("NOT valid")
            .selectExpr("coalesce(sd_id, j.event_id) AS sd_id", "raw", "partition AS sd_partition", "offset AS sd_offset")
            .writeStream().format("json").queryName("quarantine")
            .option("path", a.get("--quarantine")).option("checkpointLocation", a.get("--checkpoint") + "/quarantine")
            .trigger(Trigger.ProcessingTime(0)).start();
        System.out.println("SD-READY");
        System.out.flush();
        spark.streams().awaitAnyTermination();
        target.stop();
        quarantine.stop();
    }
}
