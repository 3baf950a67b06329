package kconform;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.regex.Pattern;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * kafka-clients' own KafkaProducer and KafkaConsumer, driven by the client workload's driver through JSON lines
 * (kconform.conformance.workloads.clients.jvm_clients). One request per stdin line, one answer per stdout line:
 *
 * <pre>
 * {"id": n, "op": "...", "client": "c0#0", ...}
 *   -> {"id": n, "result": ..., "callbacks": [event, ...]}
 *   -> {"id": n, "error": {"class": "...", "message": "...", "retriable": bool}, "callbacks": [...]}
 *      (a producer's error, and a delivery's, also carries "fatal": true | false | null, see producerError)
 * event = {"kind": "assigned" | "revoked" | "lost", "partitions": [[topic, p], ...]}
 *       | {"kind": "committed", "offsets": [[topic, p, offset], ...], "error": null | {...}}
 *       | {"kind": "delivered", "ref": r, "topic": t, "partition": p, "offset": o, "error": null | {...}}
 * </pre>
 *
 * Every call into a client runs on that client's own thread (a KafkaConsumer is not thread-safe), in the order
 * the requests for it arrived: a request for a client busy in a call waits for it. A callback a client serves
 * (a rebalance listener's, a commit's, a send's) is kept and handed back with the answer of the next request
 * for that client that serves callbacks (for a consumer every request; for a producer poll, flush, the
 * transaction calls and close), as confluent-kafka serves them from its poll. Values and keys travel as hex.
 * {"op": "configdef"} answers the producer's and the consumer's ConfigDef: each setting's name, type, default,
 * validator and importance.
 */
public final class ClientWorkload {
    private static final HexFormat HEX = HexFormat.of();
    private static PrintStream out;
    private static final Map<String, Client> CLIENTS = new HashMap<>();

    private ClientWorkload() {
    }

    /** One client, its thread and the callbacks it served that no answer carried yet. */
    private static final class Client {
        final ExecutorService thread;
        final ConcurrentLinkedQueue<Map<String, Object>> served = new ConcurrentLinkedQueue<>();
        KafkaProducer<byte[], byte[]> producer;
        KafkaConsumer<byte[], byte[]> consumer;

        Client(String name) {
            thread = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "kconform-client-" + name);
                t.setDaemon(true);
                return t;
            });
        }
    }

    public static void main(String[] args) throws IOException {
        out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        System.setOut(new PrintStream(System.err, true, StandardCharsets.UTF_8)); // nothing else may write answers
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            Map<String, Object> request;
            try {
                request = Json.object(Json.parse(line));
            } catch (RuntimeException e) {
                answer(Map.of("id", -1L, "error", error(e)));
                continue;
            }
            Object id = request.get("id");
            String op = (String) request.get("op");
            if ("configdef".equals(op)) {
                answer(Map.of("id", id, "result", Map.of(
                    "consumer", describe(ConsumerConfig.configDef()), "producer", describe(ProducerConfig.configDef()))));
                continue;
            }
            String name = (String) request.get("client");
            Client client = CLIENTS.get(name);
            if (client == null && ("producer".equals(op) || "consumer".equals(op))) {
                client = new Client(name);
                CLIENTS.put(name, client);
            }
            if (client == null) {
                answer(Map.of("id", id, "error", error(new IllegalStateException("no client " + name))));
                continue;
            }
            Client c = client;
            c.thread.submit(() -> serve(c, id, op, request));
            if ("close".equals(op))
                CLIENTS.remove(name);
        }
        for (Client client : CLIENTS.values())
            client.thread.shutdownNow();
    }

    private static synchronized void answer(Map<String, Object> answer) {
        out.println(Json.write(answer));
        out.flush();
    }

    private static void serve(Client c, Object id, String op, Map<String, Object> request) {
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("id", id);
        try {
            answer.put("result", call(c, op, request));
        } catch (Exception e) {
            answer.put("error", c.producer == null ? error(e) : producerError(c.producer, e));
        }
        boolean serves = c.consumer != null || !"send".equals(op);
        List<Object> callbacks = new ArrayList<>();
        while (serves && !c.served.isEmpty())
            callbacks.add(c.served.poll());
        answer.put("callbacks", callbacks);
        answer(answer);
        if ("close".equals(op))
            c.thread.shutdown();
    }

    private static Object call(Client c, String op, Map<String, Object> r) {
        switch (op) {
            case "producer": {
                Properties config = properties(r);
                c.producer = new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
                return null;
            }
            case "consumer": {
                Properties config = properties(r);
                if (autoCommits(config)) // reported as they complete, as librdkafka's commit callback reports them
                    config.put(ConsumerConfig.INTERCEPTOR_CLASSES_CONFIG, CommitReporter.class.getName());
                CommitReporter.CONSTRUCTING.set(c.served);
                try {
                    c.consumer = new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
                } finally {
                    CommitReporter.CONSTRUCTING.remove();
                }
                return null;
            }
            case "send": {
                Object ref = r.get("ref");
                Long partition = (Long) r.get("partition");
                ProducerRecord<byte[], byte[]> record = new ProducerRecord<>((String) r.get("topic"),
                    partition == null ? null : partition.intValue(), bytes(r.get("key")), bytes(r.get("value")));
                c.producer.send(record, (meta, e) -> {
                    Map<String, Object> event = new LinkedHashMap<>();
                    event.put("kind", "delivered");
                    event.put("ref", ref);
                    event.put("topic", meta == null ? record.topic() : meta.topic());
                    event.put("partition", meta == null ? -1 : meta.partition());
                    event.put("offset", meta == null || !meta.hasOffset() ? -1 : meta.offset());
                    event.put("error", e == null ? null : producerError(c.producer, e));
                    c.served.add(event);
                });
                return null;
            }
            case "poll":
                return null; // a producer's: the answer carries the deliveries served since
            case "flush":
                c.producer.flush();
                return 0L;
            case "init_transactions":
                c.producer.initTransactions();
                return null;
            case "begin_transaction":
                c.producer.beginTransaction();
                return null;
            case "commit_transaction":
                c.producer.commitTransaction();
                return null;
            case "abort_transaction":
                c.producer.abortTransaction();
                return null;
            case "close": {
                Duration timeout = Duration.ofMillis(r.get("timeout_ms") == null ? 30_000L : (Long) r.get("timeout_ms"));
                if (c.producer != null)
                    c.producer.close(timeout);
                if (c.consumer != null)
                    c.consumer.close(timeout);
                return null;
            }
            case "subscribe": {
                ConsumerRebalanceListener listener = listener(c);
                if (r.get("pattern") != null)
                    c.consumer.subscribe(Pattern.compile((String) r.get("pattern")), listener);
                else
                    c.consumer.subscribe(strings(r.get("topics")), listener);
                return null;
            }
            case "assign":
                c.consumer.assign(partitions(r));
                return null;
            case "fetch": {
                List<Object> records = new ArrayList<>();
                for (ConsumerRecord<byte[], byte[]> record : c.consumer.poll(Duration.ofMillis((Long) r.get("timeout_ms"))))
                    records.add(Arrays.asList(record.topic(), (long) record.partition(), record.offset(),
                        hex(record.key()), hex(record.value())));
                return records;
            }
            case "commit_sync": {
                if (r.get("offsets") != null) {
                    Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
                    for (Object o : Json.list(r.get("offsets"))) {
                        List<Object> t = Json.list(o);
                        offsets.put(new TopicPartition((String) t.get(0), ((Long) t.get(1)).intValue()),
                            new OffsetAndMetadata((Long) t.get(2)));
                    }
                    c.consumer.commitSync(offsets);
                    return offsetList(offsets);
                }
                // commitSync() commits the position of every assigned partition that has one (what the last
                // poll returned): read here, on the consumer's thread, just before it
                List<Object> positions = positions(c, c.consumer.assignment());
                c.consumer.commitSync();
                List<Object> committed = new ArrayList<>();
                for (Object p : positions)
                    if ((Long) Json.list(p).get(2) >= 0)
                        committed.add(p);
                return committed;
            }
            case "commit_async":
                c.consumer.commitAsync((offsets, e) -> {
                    Map<String, Object> event = new LinkedHashMap<>();
                    event.put("kind", "committed");
                    event.put("offsets", offsets == null ? List.of() : offsetList(offsets));
                    event.put("error", e == null ? null : error(e));
                    c.served.add(event);
                });
                return null;
            case "pause":
                c.consumer.pause(partitions(r));
                return null;
            case "resume":
                c.consumer.resume(partitions(r));
                return null;
            case "seek": {
                TopicPartition tp = new TopicPartition((String) r.get("topic"), ((Long) r.get("partition")).intValue());
                String to = (String) r.get("to");
                if ("beginning".equals(to))
                    c.consumer.seekToBeginning(List.of(tp));
                else if ("end".equals(to))
                    c.consumer.seekToEnd(List.of(tp));
                else
                    c.consumer.seek(tp, (Long) r.get("offset"));
                return null;
            }
            case "committed": {
                // KafkaConsumer.committed(Set, Duration): null for a partition the group has no offset of, given as
                // -1001 (confluent-kafka's OFFSET_INVALID); a failure (TimeoutException at the bound) is the answer's
                Set<TopicPartition> asked = new LinkedHashSet<>(partitions(r));
                Map<TopicPartition, OffsetAndMetadata> got = r.get("timeout_ms") == null
                    ? c.consumer.committed(asked)
                    : c.consumer.committed(asked, Duration.ofMillis((Long) r.get("timeout_ms")));
                List<Object> rows = new ArrayList<>();
                for (TopicPartition tp : asked) {
                    OffsetAndMetadata offset = got == null ? null : got.get(tp);
                    rows.add(List.of(tp.topic(), (long) tp.partition(), offset == null ? -1001L : offset.offset()));
                }
                return rows;
            }
            case "position":
                return positions(c, partitions(r));
            case "lag": {
                List<Object> lags = new ArrayList<>();
                Set<TopicPartition> owned = c.consumer.assignment();
                for (TopicPartition tp : partitions(r)) {
                    // not (or no longer) assigned: nothing known, as librdkafka's cached watermarks answer
                    OptionalLong lag = owned.contains(tp) ? c.consumer.currentLag(tp) : OptionalLong.empty();
                    lags.add(List.of(tp.topic(), (long) tp.partition(), lag.isPresent() ? lag.getAsLong() : -1L));
                }
                return lags;
            }
            case "assignment":
                return tpList(c.consumer.assignment());
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    /** The position of each partition, -1001 (confluent-kafka's OFFSET_INVALID) where it has none yet or is not
     *  (or no longer) assigned: asked without waiting, as librdkafka's position() answers from what it knows. */
    private static List<Object> positions(Client c, Collection<TopicPartition> tps) {
        List<Object> found = new ArrayList<>();
        Set<TopicPartition> owned = c.consumer.assignment();
        for (TopicPartition tp : tps) {
            long offset;
            try {
                offset = owned.contains(tp) ? c.consumer.position(tp, Duration.ZERO) : -1001L;
            } catch (TimeoutException e) {
                offset = -1001L;
            }
            found.add(List.of(tp.topic(), (long) tp.partition(), offset));
        }
        return found;
    }

    private static ConsumerRebalanceListener listener(Client c) {
        return new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                c.served.add(Map.of("kind", "revoked", "partitions", tpList(partitions)));
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                c.served.add(Map.of("kind", "assigned", "partitions", tpList(partitions)));
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                c.served.add(Map.of("kind", "lost", "partitions", tpList(partitions)));
            }
        };
    }

    /** Whether the consumer auto-commits: kafka-clients does unless told not to, for a member of a group. */
    private static boolean autoCommits(Properties config) {
        return config.getProperty(ConsumerConfig.GROUP_ID_CONFIG) != null
            && !"false".equalsIgnoreCase(config.getProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true"));
    }

    private static Properties properties(Map<String, Object> r) {
        Properties config = new Properties();
        for (Map.Entry<String, Object> e : Json.object(r.get("config")).entrySet())
            config.put(e.getKey(), String.valueOf(e.getValue()));
        return config;
    }

    private static List<TopicPartition> partitions(Map<String, Object> r) {
        List<TopicPartition> tps = new ArrayList<>();
        for (Object o : Json.list(r.get("partitions"))) {
            List<Object> t = Json.list(o);
            tps.add(new TopicPartition((String) t.get(0), ((Long) t.get(1)).intValue()));
        }
        return tps;
    }

    private static List<Object> tpList(Collection<TopicPartition> tps) {
        List<Object> found = new ArrayList<>();
        for (TopicPartition tp : tps)
            found.add(List.of(tp.topic(), (long) tp.partition()));
        return found;
    }

    private static List<Object> offsetList(Map<TopicPartition, OffsetAndMetadata> offsets) {
        List<Object> found = new ArrayList<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet())
            found.add(List.of(e.getKey().topic(), (long) e.getKey().partition(), e.getValue().offset()));
        return found;
    }

    private static List<String> strings(Object value) {
        List<String> found = new ArrayList<>();
        for (Object o : Json.list(value))
            found.add((String) o);
        return found;
    }

    private static byte[] bytes(Object hex) {
        return hex == null ? null : HEX.parseHex((String) hex);
    }

    private static String hex(byte[] bytes) {
        return bytes == null ? null : HEX.formatHex(bytes);
    }

    private static Map<String, Object> error(Throwable e) {
        Map<String, Object> found = new LinkedHashMap<>();
        found.put("class", e.getClass().getName());
        StringBuilder message = new StringBuilder(String.valueOf(e.getMessage()));
        for (Throwable cause = e.getCause(); cause != null && cause != cause.getCause(); cause = cause.getCause())
            message.append(" (caused by ").append(cause.getClass().getName()).append(": ").append(cause.getMessage()).append(')');
        found.put("message", message.toString());
        found.put("retriable", e instanceof RetriableException);
        found.put("kafka", e instanceof KafkaException);
        return found;
    }

    /**
     * A producer's failure, with "fatal": whether its TransactionManager was in its fatal error state right after
     * (KafkaProducer's javadoc: the only option is then to close the producer), or null where that cannot be read
     * (a producer with no TransactionManager, neither idempotent nor transactional, is never in it: false). Read
     * through reflection (KafkaProducer.transactionManager, TransactionManager.hasFatalError, both package-private
     * and unchanged from 2.x to 4.x), as kafka-clients has no public way to ask.
     */
    private static Map<String, Object> producerError(KafkaProducer<byte[], byte[]> producer, Throwable e) {
        Map<String, Object> found = error(e);
        Boolean fatal = null;
        try {
            java.lang.reflect.Field field = KafkaProducer.class.getDeclaredField("transactionManager");
            field.setAccessible(true);
            Object manager = field.get(producer);
            if (manager == null) {
                fatal = false;
            } else {
                java.lang.reflect.Method method = manager.getClass().getDeclaredMethod("hasFatalError");
                method.setAccessible(true);
                fatal = (Boolean) method.invoke(manager);
            }
        } catch (ReflectiveOperationException | RuntimeException unreadable) {
            fatal = null;
        }
        found.put("fatal", fatal);
        return found;
    }

    private static List<Object> describe(ConfigDef def) {
        List<Object> found = new ArrayList<>();
        for (ConfigDef.ConfigKey key : def.configKeys().values()) {
            Map<String, Object> setting = new LinkedHashMap<>();
            setting.put("name", key.name);
            setting.put("type", key.type.name());
            setting.put("default", key.hasDefault() && key.defaultValue != null
                ? ConfigDef.convertToString(key.defaultValue, key.type) : null);
            setting.put("validator", key.validator == null ? null : key.validator.toString());
            setting.put("importance", key.importance.name());
            found.add(setting);
        }
        return found;
    }
}
