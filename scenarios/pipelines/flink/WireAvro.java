/* WireAvro.java - values in a schema registry's Avro wire format (a zero
 * byte, the schema id in 4 bytes, the record), read the way a Flink job
 * with flink-avro reads them, for the jobs' --value-format avro --registry
 * URL: flink-avro's RegistryAvroDeserializationSchema, given a SchemaCoder
 * of this file's own that reads the magic byte and the id and fetches the
 * writer's schema once per id from the registry's Confluent-compatible API
 * (GET URL/schemas/ids/ID), each record resolved to the job's own reader
 * schema (the parcel scans' record). flink-avro-confluent-registry would
 * do the fetching, but it needs Confluent's client, which Maven Central
 * does not serve.
 *
 * A registry that cannot be reached is asked again every half second: the
 * record waits. A value without the magic byte, an id the registry does
 * not know, a record that does not decode or does not resolve to the
 * reader schema (a foreign record) is undecodable: the job quarantines it.
 *
 * --avro-weak newest-schema: the header skipped and every value decoded
 * with the reader schema, whatever id it names (the shortcut that ignores
 * the registry; a wrong variant the drills must catch). */
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.Serializable;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.formats.avro.AvroDeserializationSchema;
import org.apache.flink.formats.avro.RegistryAvroDeserializationSchema;
import org.apache.flink.formats.avro.SchemaCoder;

public final class WireAvro implements Serializable {
    /* the job's reader schema: the parcel scans as the harness registers them */
    static final String READER = "{\"type\":\"record\",\"name\":\"ParcelScan\",\"namespace\":\"streamdrill\",\"fields\":["
        + "{\"name\":\"event_id\",\"type\":\"string\"},{\"name\":\"parcel_id\",\"type\":\"string\"},"
        + "{\"name\":\"event_time\",\"type\":\"string\"},{\"name\":\"location\",\"type\":\"string\"},"
        + "{\"name\":\"scan\",\"type\":\"string\"},{\"name\":\"weight_g\",\"type\":\"long\"}]}";

    final String url;
    final boolean weak;
    transient DeserializationSchema<GenericRecord> de;

    WireAvro(String url, boolean weak) { this.url = url; this.weak = weak; }

    /* the decoder the options ask for; null for JSON values */
    static WireAvro of(Map<String, String> a) {
        if (!a.getOrDefault("--value-format", "json").equals("avro")) return null;
        String url = a.containsKey("--registry") ? a.get("--registry") : System.getenv("STREAMDRILL_REGISTRY");
        if (url == null) {
            System.err.println("--value-format avro: --registry URL is required");
            System.exit(2);
        }
        return new WireAvro(url, a.getOrDefault("--avro-weak", "none").equals("newest-schema"));
    }

    /* the value as its record's JSON, or null when it cannot be decoded */
    String json(byte[] v) {
        if (v == null) return null;
        try {
            if (de == null) {
                Schema reader = new Schema.Parser().parse(READER);
                de = weak ? AvroDeserializationSchema.forGeneric(reader) : new RegistryAvroDeserializationSchema<>(GenericRecord.class, reader, new Provider(url));
            }
            GenericRecord r = de.deserialize(weak ? Arrays.copyOfRange(v, Math.min(5, v.length), v.length) : v);
            return r == null ? null : GenericData.get().toString(r);
        } catch (Exception e) {
            return null;
        }
    }

    static final class Provider implements SchemaCoder.SchemaCoderProvider {
        final String url;

        Provider(String url) { this.url = url; }

        @Override
        public SchemaCoder get() { return new Coder(url); }
    }

    /* the header read, the writer's schema fetched once per id */
    static final class Coder implements SchemaCoder {
        static final Map<Integer, Schema> CACHE = new ConcurrentHashMap<>();
        static final ObjectMapper JSON = new ObjectMapper();
        final String url;
        final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

        Coder(String url) { this.url = url; }

        @Override
        public Schema readSchema(InputStream in) throws IOException {
            DataInputStream d = new DataInputStream(in);
            if (d.readByte() != 0) throw new IOException("not in the registry wire format (no magic byte 0)");
            int id = d.readInt();
            Schema s = CACHE.get(id);
            if (s != null) return s;
            HttpRequest req = HttpRequest.newBuilder(URI.create(url + "/schemas/ids/" + id)).timeout(Duration.ofSeconds(10)).GET().build();
            for (;;) {
                try {
                    HttpResponse<String> resp = http.send(req, HttpResponse.BodyHandlers.ofString());
                    if (resp.statusCode() == 404) throw new IOException("schema id " + id + " unknown to the registry");
                    if (resp.statusCode() == 200) {
                        JsonNode j = JSON.readTree(resp.body());
                        s = new Schema.Parser().parse(j.get("schema").asText());
                        CACHE.put(id, s);
                        return s;
                    }
                } catch (IOException e) {
                    if (e.getMessage() != null && e.getMessage().contains("unknown to the registry")) throw e;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while the registry was asked for schema " + id);
                }
                System.err.println("WireAvro: registry " + url + " unreachable or failing; asking again for schema " + id);
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while the registry was asked for schema " + id);
                }
            }
        }

        @Override
        public void writeSchema(Schema schema, OutputStream out) {
            throw new UnsupportedOperationException("the jobs write JSON");
        }
    }
}
