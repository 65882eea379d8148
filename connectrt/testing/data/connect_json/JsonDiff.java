/*
 * The Java side of connectrt's JSON converter differential (tests/unit/test_json_converter_vs_kafka.py).
 *
 * Usage: java -cp 'LIBS/*:.' JsonDiff CASES_FILE OUT_FILE
 *
 * Reads one case per line (JSON) and writes one result per line, all in this one JVM run:
 *   write case {"id", "config", "schema", "value", "py"}: builds the Java value the tagged "value"
 *     describes (structs are filled without validation, as a Python caller may), writes it with
 *     Kafka's JsonConverter ("bytes", base64, or "werr"), reads those bytes back ("own") and reads
 *     Python's bytes "py" ("py").
 *   read case {"id", "config", "raw"}: reads the raw bytes ("read").
 * Read values are written tagged ({"int": "5"}, {"f": "<double bits>"}, {"ms": "..."}, ...), an
 * exception as {"err": "Class: message"}.
 */
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class JsonDiff {
    /** Results are written with every non-ASCII character escaped (strings may hold unpaired
     *  surrogates, which no UTF-8 writer takes). */
    private static final ObjectMapper MAPPER = new ObjectMapper()
        .enable(com.fasterxml.jackson.core.json.JsonWriteFeature.ESCAPE_NON_ASCII.mappedFeature());
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static final Map<String, JsonConverter> CONVERTERS = new HashMap<>();
    private static java.lang.reflect.Field structValues;

    public static void main(String[] args) throws Exception {
        structValues = Struct.class.getDeclaredField("values");
        structValues.setAccessible(true);
        try (BufferedReader in = Files.newBufferedReader(Paths.get(args[0]), StandardCharsets.UTF_8);
             BufferedWriter out = Files.newBufferedWriter(Paths.get(args[1]), StandardCharsets.UTF_8)) {
            String line;
            while ((line = in.readLine()) != null) {
                JsonNode c = MAPPER.readTree(line);
                out.write(MAPPER.writeValueAsString(run(c)));
                out.write('\n');
            }
        }
    }

    private static JsonConverter converter(JsonNode config) {
        String key = config.toString();
        return CONVERTERS.computeIfAbsent(key, k -> {
            Map<String, Object> props = new HashMap<>();
            Iterator<Map.Entry<String, JsonNode>> it = config.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                props.put(e.getKey(), e.getValue().asText());
            }
            JsonConverter conv = new JsonConverter();
            conv.configure(props, false);
            return conv;
        });
    }

    private static ObjectNode run(JsonNode c) {
        JsonConverter conv = converter(c.get("config"));
        ObjectNode r = F.objectNode();
        r.set("id", c.get("id"));
        if (c.has("raw")) {
            r.set("read", read(conv, bytesOf(c.get("raw"))));
            return r;
        }
        byte[] written = null;
        try {
            JsonNode schemaJson = c.get("schema");
            Schema schema = schemaJson == null || schemaJson.isNull() ? null : conv.asConnectSchema(schemaJson);
            Object value = build(c.get("value"), schema);
            written = conv.fromConnectData("t", schema, value);
            r.put("bytes", written == null ? null : Base64.getEncoder().encodeToString(written));
        } catch (Throwable e) {
            r.put("werr", describe(e));
        }
        if (!r.has("werr")) {
            r.set("own", read(conv, written));
        }
        JsonNode py = c.get("py");
        if (py != null) {
            r.set("py", read(conv, py.isNull() ? null : bytesOf(py)));
        }
        return r;
    }

    private static byte[] bytesOf(JsonNode b64) {
        return Base64.getDecoder().decode(b64.asText());
    }

    private static JsonNode read(JsonConverter conv, byte[] data) {
        try {
            SchemaAndValue sv = conv.toConnectData("t", data);
            return canon(sv.value());
        } catch (Throwable e) {
            ObjectNode err = F.objectNode();
            err.put("err", describe(e));
            return err;
        }
    }

    private static String describe(Throwable e) {
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    /** The Java value a tagged JSON value describes; ctx is the schema at this position, if any. */
    private static Object build(JsonNode tag, Schema ctx) throws Exception {
        if (tag == null || tag.isNull()) {
            return null;
        }
        String kind = tag.fieldNames().next();
        JsonNode v = tag.get(kind);
        switch (kind) {
            case "i8": return (byte) v.asInt();
            case "i16": return (short) v.asInt();
            case "i32": return v.asInt();
            case "i64": return Long.parseLong(v.asText());
            case "big": return new BigInteger(v.asText());
            case "f32": return Float.intBitsToFloat((int) Long.parseLong(v.asText()));
            case "f64": return Double.longBitsToDouble(Long.parseLong(v.asText()));
            case "b": return v.asBoolean();
            case "s": return v.asText();
            case "bytes": return Base64.getDecoder().decode(v.asText());
            case "dec": return new BigDecimal(new BigInteger(v.get(0).asText()), v.get(1).asInt());
            case "date": return new java.util.Date(Long.parseLong(v.asText()) * 86400000L);
            case "time":
            case "ts":
            case "dt": return new java.util.Date(Long.parseLong(v.asText()));
            case "arr": {
                Schema item = ctx != null && ctx.type() == Schema.Type.ARRAY ? ctx.valueSchema() : null;
                List<Object> list = new ArrayList<>();
                for (JsonNode x : v) {
                    list.add(build(x, item));
                }
                return list;
            }
            case "map": {
                boolean isMap = ctx != null && ctx.type() == Schema.Type.MAP;
                Map<Object, Object> map = new LinkedHashMap<>();
                for (JsonNode pair : v) {
                    map.put(build(pair.get(0), isMap ? ctx.keySchema() : null),
                            build(pair.get(1), isMap ? ctx.valueSchema() : null));
                }
                return map;
            }
            case "struct": {
                Schema schema = ctx;
                if (tag.has("schema")) {
                    schema = converter(F.objectNode()).asConnectSchema(tag.get("schema"));
                }
                Struct struct = new Struct(schema);
                Object[] values = (Object[]) structValues.get(struct);
                List<Field> fields = schema.fields();
                for (int i = 0; i < fields.size(); i++) {
                    values[i] = build(v.get(i), fields.get(i).schema());
                }
                return struct;
            }
            default: throw new IllegalArgumentException("unknown tag " + kind);
        }
    }

    /** A read value, tagged (maps as [key, value] pairs in iteration order). */
    private static JsonNode canon(Object v) {
        ObjectNode o = F.objectNode();
        if (v == null) {
            return F.nullNode();
        } else if (v instanceof Boolean) {
            o.put("bool", (Boolean) v);
        } else if (v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long) {
            o.put("int", v.toString());
        } else if (v instanceof Float || v instanceof Double) {
            o.put("f", Long.toString(Double.doubleToLongBits(((Number) v).doubleValue())));
        } else if (v instanceof String) {
            o.put("s", (String) v);
        } else if (v instanceof byte[]) {
            o.put("bytes", Base64.getEncoder().encodeToString((byte[]) v));
        } else if (v instanceof ByteBuffer) {
            ByteBuffer b = ((ByteBuffer) v).duplicate();
            byte[] a = new byte[b.remaining()];
            b.get(a);
            o.put("bytes", Base64.getEncoder().encodeToString(a));
        } else if (v instanceof BigDecimal) {
            ArrayNode d = o.putArray("dec");
            d.add(((BigDecimal) v).unscaledValue().toString());
            d.add(((BigDecimal) v).scale());
        } else if (v instanceof java.util.Date) {
            o.put("ms", Long.toString(((java.util.Date) v).getTime()));
        } else if (v instanceof List) {
            ArrayNode a = o.putArray("arr");
            for (Object x : (List<?>) v) {
                a.add(canon(x));
            }
        } else if (v instanceof Map) {
            ArrayNode a = o.putArray("map");
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                a.add(F.arrayNode().add(canon(e.getKey())).add(canon(e.getValue())));
            }
        } else if (v instanceof Struct) {
            Struct s = (Struct) v;
            ArrayNode a = o.putArray("struct");
            for (Field f : s.schema().fields()) {
                a.add(canon(s.getWithoutDefault(f.name())));
            }
        } else {
            o.put("unknown", v.getClass().getName());
        }
        return o;
    }
}
