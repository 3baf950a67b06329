package kconform;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Utils;

/**
 * Answers, from kafka-clients' own classes, what Kafka's producer partitioner and consumer-group
 * assignors do, so that kconform's reference implementation can be checked against them
 * (spec/kafka-strategies.md). One JSON request per stdin line, one JSON answer per stdout line:
 *
 * <pre>
 * {"op": "hash", "keys": ["hex", ...], "partitions": [n, ...]}
 *   -> {"murmur2": [Utils.murmur2(key)], "partition": [BuiltInPartitioner.partitionForKey(key, n)]}
 * {"op": "assign", "strategy": "range|roundrobin|sticky|cooperative-sticky", "groups": [group, ...]}
 *   -> {"assignments": [{"member": [["topic", partition], ...]}, ...]}
 * group = {"partitions": {"topic": count}, "members": [{"id": "m", "instance": null | "i",
 *          "topics": ["topic"], "owned": [["topic", partition]], "generation": g}]}
 * </pre>
 *
 * A request it cannot answer gets {"error": "..."}. It builds against any kafka-clients from 2.4 on (the
 * bug bank builds it at the release under test): the newer members it needs are found by reflection. The assignors run as the group leader runs them,
 * through {@code ConsumerPartitionAssignor.assign(Cluster, GroupSubscription)}, with each member's
 * subscription built as its consumer builds it (the sticky assignors' user data comes from a
 * member-side assignor instance told the member's previous assignment and generation).
 */
public final class KafkaOracle {
    private static final String GROUP_ID = "kconform-oracle";

    /** {@code BuiltInPartitioner.partitionForKey} (kafka-clients 3.3+); null before, where DefaultPartitioner
     *  computed the same {@code toPositive(murmur2(key)) % n} inline. */
    private static final Method PARTITION_FOR_KEY = method(
        "org.apache.kafka.clients.producer.internals.BuiltInPartitioner", "partitionForKey", byte[].class, int.class);

    private KafkaOracle() {
    }

    private static Method method(String className, String name, Class<?>... parameters) {
        try {
            return Class.forName(className).getMethod(name, parameters);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    private static int partitionForKey(byte[] key, int partitions) {
        if (PARTITION_FOR_KEY == null)
            return Utils.toPositive(Utils.murmur2(key)) % partitions;
        try {
            return (Integer) PARTITION_FOR_KEY.invoke(null, key, partitions);
        } catch (IllegalAccessException | InvocationTargetException e) {
            throw new IllegalStateException(e);
        }
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String answer;
            try {
                answer = Json.write(answer(Json.object(Json.parse(line))));
            } catch (RuntimeException e) {
                answer = Json.write(Map.of("error", String.valueOf(e)));
            }
            out.write(answer);
            out.newLine();
            out.flush();
        }
    }

    private static Map<String, Object> answer(Map<String, Object> request) {
        String op = (String) request.get("op");
        if ("hash".equals(op))
            return hash(Json.list(request.get("keys")), Json.list(request.get("partitions")));
        if ("assign".equals(op)) {
            List<Object> answers = new ArrayList<>();
            for (Object group : Json.list(request.get("groups")))
                answers.add(assign((String) request.get("strategy"), Json.object(group)));
            return Map.of("assignments", answers);
        }
        throw new IllegalArgumentException("unknown op " + op);
    }

    private static Map<String, Object> hash(List<Object> keys, List<Object> partitions) {
        List<Object> hashes = new ArrayList<>();
        List<Object> placed = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            byte[] key = HexFormat.of().parseHex((String) keys.get(i));
            hashes.add((long) Utils.murmur2(key));
            placed.add((long) partitionForKey(key, ((Number) partitions.get(i)).intValue()));
        }
        return Map.of("murmur2", hashes, "partition", placed);
    }

    private static Map<String, Object> assign(String strategy, Map<String, Object> group) {
        List<PartitionInfo> partitions = new ArrayList<>();
        for (Map.Entry<String, Object> topic : Json.object(group.get("partitions")).entrySet()) {
            int count = ((Number) topic.getValue()).intValue();
            for (int p = 0; p < count; p++)
                partitions.add(new PartitionInfo(topic.getKey(), p, null, new Node[0], new Node[0]));
        }
        Cluster cluster = new Cluster("kconform", List.of(), partitions, new HashSet<>(), new HashSet<>());
        Map<String, Subscription> subscriptions = new LinkedHashMap<>();
        for (Object entry : Json.list(group.get("members"))) {
            Map<String, Object> member = Json.object(entry);
            subscriptions.put((String) member.get("id"), subscription(strategy, member));
        }
        ConsumerPartitionAssignor assignor = assignor(strategy);
        Map<String, Assignment> assigned = assignor.assign(cluster, new GroupSubscription(subscriptions)).groupAssignment();
        Map<String, Object> answer = new TreeMap<>();
        for (Map.Entry<String, Assignment> entry : assigned.entrySet()) {
            List<Object> tps = new ArrayList<>();
            for (TopicPartition tp : entry.getValue().partitions())
                tps.add(List.of(tp.topic(), (long) tp.partition()));
            answer.put(entry.getKey(), tps);
        }
        return answer;
    }

    /** The subscription a member's consumer sends when it (re)joins with the given previous assignment. */
    private static Subscription subscription(String strategy, Map<String, Object> member) {
        List<String> topics = new ArrayList<>();
        for (Object topic : Json.list(member.get("topics")))
            topics.add((String) topic);
        List<TopicPartition> owned = new ArrayList<>();
        for (Object entry : Json.list(member.get("owned"))) {
            List<Object> tp = Json.list(entry);
            owned.add(new TopicPartition((String) tp.get(0), ((Number) tp.get(1)).intValue()));
        }
        int generation = ((Number) member.get("generation")).intValue();
        Optional<String> instance = Optional.ofNullable((String) member.get("instance"));
        ByteBuffer userData = null;
        List<TopicPartition> ownedPartitions = List.of();
        if ("sticky".equals(strategy) || "cooperative-sticky".equals(strategy)) {
            ConsumerPartitionAssignor own = assignor(strategy);
            if (generation >= 0)
                own.onAssignment(new Assignment(owned), new ConsumerGroupMetadata(GROUP_ID, generation, (String) member.get("id"), instance));
            userData = own.subscriptionUserData(new HashSet<>(topics));
        }
        if ("cooperative-sticky".equals(strategy))
            ownedPartitions = owned;  // the eager protocol revokes everything before it rejoins
        Subscription subscription = newSubscription(topics, userData, ownedPartitions, generation);
        subscription.setGroupInstanceId(instance);
        return subscription;
    }

    /** With the generation where the release's Subscription carries one (3.1+, KIP-792), else without. */
    private static Subscription newSubscription(List<String> topics, ByteBuffer userData, List<TopicPartition> owned, int generation) {
        try {
            Constructor<Subscription> withGeneration =
                Subscription.class.getConstructor(List.class, ByteBuffer.class, List.class, int.class, Optional.class);
            return withGeneration.newInstance(topics, userData, owned, generation, Optional.empty());
        } catch (NoSuchMethodException e) {
            return new Subscription(topics, userData, owned);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    private static ConsumerPartitionAssignor assignor(String strategy) {
        switch (strategy) {
            case "range": return new RangeAssignor();
            case "roundrobin": return new RoundRobinAssignor();
            case "sticky": return new StickyAssignor();
            case "cooperative-sticky": return new CooperativeStickyAssignor();
            default: throw new IllegalArgumentException("unknown strategy " + strategy);
        }
    }

    /** The JSON this protocol needs: objects, arrays, strings, integers, booleans and null. */
    static final class Json {
        private final String text;
        private int at;

        private Json(String text) {
            this.text = text;
        }

        static Object parse(String text) {
            Json json = new Json(text);
            Object value = json.value();
            json.skipSpace();
            if (json.at != text.length())
                throw json.error("trailing characters");
            return value;
        }

        @SuppressWarnings("unchecked")
        static Map<String, Object> object(Object value) {
            return (Map<String, Object>) value;
        }

        @SuppressWarnings("unchecked")
        static List<Object> list(Object value) {
            return (List<Object>) value;
        }

        private Object value() {
            skipSpace();
            if (at >= text.length())
                throw error("unexpected end");
            char c = text.charAt(at);
            if (c == '{')
                return parseObject();
            if (c == '[')
                return parseArray();
            if (c == '"')
                return parseString();
            if (text.startsWith("null", at)) {
                at += 4;
                return null;
            }
            if (text.startsWith("true", at)) {
                at += 4;
                return Boolean.TRUE;
            }
            if (text.startsWith("false", at)) {
                at += 5;
                return Boolean.FALSE;
            }
            int start = at;
            if (c == '-')
                at++;
            while (at < text.length() && Character.isDigit(text.charAt(at)))
                at++;
            if (start == at || (c == '-' && at == start + 1))
                throw error("unexpected character");
            return Long.parseLong(text.substring(start, at));
        }

        private Map<String, Object> parseObject() {
            Map<String, Object> map = new LinkedHashMap<>();
            at++;
            skipSpace();
            if (peek() == '}') {
                at++;
                return map;
            }
            while (true) {
                skipSpace();
                String key = parseString();
                skipSpace();
                expect(':');
                map.put(key, value());
                skipSpace();
                if (peek() == ',') {
                    at++;
                    continue;
                }
                expect('}');
                return map;
            }
        }

        private List<Object> parseArray() {
            List<Object> list = new ArrayList<>();
            at++;
            skipSpace();
            if (peek() == ']') {
                at++;
                return list;
            }
            while (true) {
                list.add(value());
                skipSpace();
                if (peek() == ',') {
                    at++;
                    continue;
                }
                expect(']');
                return list;
            }
        }

        private String parseString() {
            expect('"');
            StringBuilder s = new StringBuilder();
            while (true) {
                char c = text.charAt(at++);
                if (c == '"')
                    return s.toString();
                if (c != '\\') {
                    s.append(c);
                    continue;
                }
                char e = text.charAt(at++);
                switch (e) {
                    case 'u':
                        s.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                        at += 4;
                        break;
                    case 'n': s.append('\n'); break;
                    case 't': s.append('\t'); break;
                    case 'r': s.append('\r'); break;
                    case 'b': s.append('\b'); break;
                    case 'f': s.append('\f'); break;
                    default: s.append(e);
                }
            }
        }

        private char peek() {
            if (at >= text.length())
                throw error("unexpected end");
            return text.charAt(at);
        }

        private void expect(char c) {
            if (peek() != c)
                throw error("expected '" + c + "'");
            at++;
        }

        private void skipSpace() {
            while (at < text.length() && Character.isWhitespace(text.charAt(at)))
                at++;
        }

        private IllegalArgumentException error(String what) {
            return new IllegalArgumentException("bad JSON at " + at + ": " + what);
        }

        /** JSON text of maps, lists, strings, numbers and null; every non-ASCII character escaped. */
        static String write(Object value) {
            StringBuilder out = new StringBuilder();
            write(value, out);
            return out.toString();
        }

        private static void write(Object value, StringBuilder out) {
            if (value == null) {
                out.append("null");
            } else if (value instanceof String) {
                quote((String) value, out);
            } else if (value instanceof Number || value instanceof Boolean) {
                out.append(value);
            } else if (value instanceof Map) {
                out.append('{');
                String sep = "";
                for (Map.Entry<String, Object> e : object(value).entrySet()) {
                    out.append(sep);
                    quote(e.getKey(), out);
                    out.append(':');
                    write(e.getValue(), out);
                    sep = ",";
                }
                out.append('}');
            } else {
                out.append('[');
                String sep = "";
                for (Object item : list(value)) {
                    out.append(sep);
                    write(item, out);
                    sep = ",";
                }
                out.append(']');
            }
        }

        private static void quote(String s, StringBuilder out) {
            out.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (c == '"' || c == '\\')
                    out.append('\\').append(c);
                else if (c < 0x20 || c > 0x7e)
                    out.append(String.format("\\u%04x", (int) c));
                else
                    out.append(c);
            }
            out.append('"');
        }
    }
}
