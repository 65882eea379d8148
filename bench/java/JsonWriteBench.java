/*
 * The Java side of bench/bench_json_vs_kafka_connect.py: Kafka Connect's own JsonConverter
 * (connect-json from Maven) writing the bench's generated records, timed in this one JVM.
 *
 * Usage: java -cp 'LIBS/*:.' JsonWriteBench RECORDS_FILE
 *
 * RECORDS_FILE holds one record per line, a JSON object with the fields id (int64), name
 * (string), score (float64), active (boolean) and count (optional int32, may be null). Each is
 * held twice: as a Struct of that schema and as a LinkedHashMap (a schemaless value).
 *
 * Commands on stdin, one per line, each answered with one line on stdout:
 *   run CASE PASSES   convert every record PASSES times; answers "WALL_NS CPU_NS BYTES"
 *                     (wall clock, this thread's CPU time, the bytes written: keeps the JIT
 *                     from dropping the work)
 *   dump CASE FILE    write each record's bytes, base64, one per line, to FILE; answers "ok"
 *   quit
 * CASE: schemaless_map (schemas.enable=false, no schema, a Map), schemaless_struct
 * (schemas.enable=false, a Struct with its schema), schema_struct (schemas.enable=true).
 */
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class JsonWriteBench {
    static final Schema SCHEMA = SchemaBuilder.struct().name("bench.Record")
        .field("id", Schema.INT64_SCHEMA)
        .field("name", Schema.STRING_SCHEMA)
        .field("score", Schema.FLOAT64_SCHEMA)
        .field("active", Schema.BOOLEAN_SCHEMA)
        .field("count", Schema.OPTIONAL_INT32_SCHEMA)
        .build();

    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        List<Struct> structs = new ArrayList<>();
        List<Map<String, Object>> maps = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8)) {
            JsonNode n = mapper.readTree(line);
            Integer count = n.get("count").isNull() ? null : n.get("count").asInt();
            Struct s = new Struct(SCHEMA)
                .put("id", n.get("id").asLong())
                .put("name", n.get("name").asText())
                .put("score", n.get("score").asDouble())
                .put("active", n.get("active").asBoolean())
                .put("count", count);
            structs.add(s);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", n.get("id").asLong());
            m.put("name", n.get("name").asText());
            m.put("score", n.get("score").asDouble());
            m.put("active", n.get("active").asBoolean());
            m.put("count", count);
            maps.add(m);
        }
        JsonConverter plain = converter("false");
        JsonConverter envelope = converter("true");
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split(" ");
            if (cmd[0].equals("quit")) {
                break;
            }
            String c = cmd[1];
            JsonConverter conv = c.equals("schema_struct") ? envelope : plain;
            Schema schema = c.equals("schemaless_map") ? null : SCHEMA;
            List<?> values = c.equals("schemaless_map") ? maps : structs;
            if (cmd[0].equals("dump")) {
                try (BufferedWriter out = Files.newBufferedWriter(Paths.get(cmd[2]), StandardCharsets.UTF_8)) {
                    for (Object v : values) {
                        out.write(Base64.getEncoder().encodeToString(conv.fromConnectData("t", schema, v)));
                        out.write('\n');
                    }
                }
                System.out.println("ok");
            } else {
                int passes = Integer.parseInt(cmd[2]);
                long bytes = 0;
                long cpu0 = threads.getCurrentThreadCpuTime();
                long t0 = System.nanoTime();
                for (int p = 0; p < passes; p++) {
                    for (Object v : values) {
                        bytes += conv.fromConnectData("t", schema, v).length;
                    }
                }
                long wall = System.nanoTime() - t0;
                long cpu = threads.getCurrentThreadCpuTime() - cpu0;
                System.out.println(wall + " " + cpu + " " + bytes);
            }
            System.out.flush();
        }
    }

    static JsonConverter converter(String schemasEnable) {
        Map<String, Object> props = new HashMap<>();
        props.put("schemas.enable", schemasEnable);
        JsonConverter conv = new JsonConverter();
        conv.configure(props, false);
        return conv;
    }
}
