package kconform;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.stream.Stream;

import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.flink.connector.kafka.sink.internal.CheckpointTransaction;
import org.apache.flink.connector.kafka.sink.internal.FlinkKafkaInternalProducer;
import org.apache.flink.connector.kafka.sink.internal.ProducerPool;
import org.apache.flink.connector.kafka.sink.internal.TransactionNamingStrategyContextImpl;
import org.apache.flink.connector.kafka.sink.internal.TransactionNamingStrategyImpl;
import org.apache.flink.connector.kafka.sink.internal.TransactionalIdFactory;
import org.apache.flink.connector.kafka.source.enumerator.KafkaSourceEnumerator;
import org.apache.kafka.common.TopicPartition;

/**
 * Answers, from Flink's Kafka connector's own classes, which subtask owns a partition and how the
 * sink names its transactions, so that kconform's reference implementation can be checked against
 * them (spec/assignment.md, spec/commit.md). One JSON request per stdin line, one JSON answer per
 * stdout line (non-ASCII characters escaped):
 *
 * <pre>
 * {"op": "owners", "topics": [t, ...], "partitions": [p, ...], "parallelisms": [n, ...]}
 *   -> {"hash_code": [t.hashCode()], "split_owner": [KafkaSourceEnumerator.getSplitOwner(tp, n)],
 *       "legacy_owner": [KafkaTopicPartitionAssigner.assign(t, p, n)]}
 * {"op": "transactional_ids", "prefixes": [s, ...], "subtasks": [i, ...], "offsets": [o, ...]}
 *   -> {"ids": [4.x TransactionalIdFactory.buildTransactionalId(s, i, o)], "legacy_ids": [the 3.x one]}
 * {"op": "incrementing", "prefix": s, "subtask": i, "last_checkpoint": c, "next_checkpoint": d}
 *   -> {"requested": [every id TransactionNamingStrategyImpl.INCREMENTING asks the pool for, in order]}
 * {"op": "pooling", "prefix": s, "subtask": i, "ongoing": [id, ...]}
 *   -> {"requested": [the ids TransactionNamingStrategyImpl.POOLING asks the pool for]}
 * </pre>
 *
 * The one argument is the folder of the 3.x connector's jars (.jvm/flink-legacy/): its legacy
 * classes are loaded by a class loader of their own, whose parent is the platform loader, so the
 * two connector lines never share a class. The naming strategies run through Flink's own
 * {@code TransactionNamingStrategyContextImpl}, over a producer pool that records each id it is
 * asked for and hands out no producer. A request it cannot answer gets {"error": "..."}.
 */
public final class FlinkOracle {
    private static final JsonMapper JSON = JsonMapper.builder().enable(JsonWriteFeature.ESCAPE_NON_ASCII).build();
    private static final String LEGACY_ASSIGNER =
            "org.apache.flink.streaming.connectors.kafka.internals.KafkaTopicPartitionAssigner";
    private static final String LEGACY_ID_FACTORY = "org.apache.flink.connector.kafka.sink.TransactionalIdFactory";

    private final Method splitOwner;
    private final Method legacyAssign;
    private final Method legacyTransactionalId;

    private FlinkOracle(Path legacyJars) throws IOException, ReflectiveOperationException {
        // Package-private and @VisibleForTesting in the 4.x connector: called as its own tests call it.
        splitOwner = KafkaSourceEnumerator.class.getDeclaredMethod("getSplitOwner", TopicPartition.class, int.class);
        splitOwner.setAccessible(true);
        ClassLoader legacy = new URLClassLoader(jarsIn(legacyJars), ClassLoader.getPlatformClassLoader());
        legacyAssign = Class.forName(LEGACY_ASSIGNER, true, legacy).getMethod("assign", String.class, int.class, int.class);
        // A package-private class in the 3.x line.
        legacyTransactionalId = Class.forName(LEGACY_ID_FACTORY, true, legacy)
                .getDeclaredMethod("buildTransactionalId", String.class, int.class, long.class);
        legacyTransactionalId.setAccessible(true);
    }

    public static void main(String[] args) throws IOException, ReflectiveOperationException {
        if (args.length != 1)
            throw new IllegalArgumentException("usage: FlinkOracle <folder of the legacy connector's jars>");
        FlinkOracle oracle = new FlinkOracle(Paths.get(args[0]));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String answer;
            try {
                answer = JSON.writeValueAsString(oracle.answer(JSON.readTree(line)));
            } catch (IOException | RuntimeException | ReflectiveOperationException e) {
                Throwable cause = e instanceof InvocationTargetException ? e.getCause() : e;
                answer = JSON.writeValueAsString(JSON.createObjectNode().put("error", String.valueOf(cause)));
            }
            out.write(answer);
            out.newLine();
            out.flush();
        }
    }

    private ObjectNode answer(JsonNode request) throws ReflectiveOperationException {
        String op = request.path("op").asText();
        switch (op) {
            case "owners": return owners(request);
            case "transactional_ids": return transactionalIds(request);
            case "incrementing": return named(TransactionNamingStrategyImpl.INCREMENTING, request);
            case "pooling": return named(TransactionNamingStrategyImpl.POOLING, request);
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private ObjectNode owners(JsonNode request) throws ReflectiveOperationException {
        JsonNode topics = list(request, "topics");
        JsonNode partitions = list(request, "partitions");
        JsonNode parallelisms = list(request, "parallelisms");
        ObjectNode answer = JSON.createObjectNode();
        ArrayNode hashes = answer.putArray("hash_code");
        ArrayNode owners = answer.putArray("split_owner");
        ArrayNode legacyOwners = answer.putArray("legacy_owner");
        for (int i = 0; i < topics.size(); i++) {
            String topic = topics.get(i).textValue();
            int partition = partitions.get(i).intValue();
            int n = parallelisms.get(i).intValue();
            hashes.add(topic.hashCode());
            owners.add((int) splitOwner.invoke(null, new TopicPartition(topic, partition), n));
            legacyOwners.add((int) legacyAssign.invoke(null, topic, partition, n));
        }
        return answer;
    }

    private ObjectNode transactionalIds(JsonNode request) throws ReflectiveOperationException {
        JsonNode prefixes = list(request, "prefixes");
        JsonNode subtasks = list(request, "subtasks");
        JsonNode offsets = list(request, "offsets");
        ObjectNode answer = JSON.createObjectNode();
        ArrayNode ids = answer.putArray("ids");
        ArrayNode legacyIds = answer.putArray("legacy_ids");
        for (int i = 0; i < prefixes.size(); i++) {
            String prefix = prefixes.get(i).textValue();
            int subtask = subtasks.get(i).intValue();
            long offset = offsets.get(i).longValue();
            ids.add(TransactionalIdFactory.buildTransactionalId(prefix, subtask, offset));
            legacyIds.add((String) legacyTransactionalId.invoke(null, prefix, subtask, offset));
        }
        return answer;
    }

    /** The ids a naming strategy asks the producer pool for when its writer needs the next transaction. */
    private static ObjectNode named(TransactionNamingStrategyImpl strategy, JsonNode request) {
        RecordingPool pool = new RecordingPool();
        TransactionNamingStrategyContextImpl context = new TransactionNamingStrategyContextImpl(
                request.path("prefix").textValue(), request.path("subtask").intValue(),
                request.path("last_checkpoint").longValue(), pool);
        context.setNextCheckpointId(request.path("next_checkpoint").longValue());
        List<String> ongoing = new ArrayList<>();
        request.path("ongoing").forEach(id -> ongoing.add(id.textValue()));
        context.setOngoingTransactions(ongoing);
        strategy.getTransactionalProducer(context);
        ObjectNode answer = JSON.createObjectNode();
        ArrayNode requested = answer.putArray("requested");
        pool.requested.forEach(requested::add);
        return answer;
    }

    private static JsonNode list(JsonNode request, String field) {
        JsonNode value = request.path(field);
        if (!value.isArray())
            throw new IllegalArgumentException("missing list " + field);
        return value;
    }

    private static URL[] jarsIn(Path folder) throws IOException {
        List<URL> urls = new ArrayList<>();
        try (Stream<Path> files = Files.list(folder)) {
            for (Path jar : (Iterable<Path>) files.filter(f -> f.toString().endsWith(".jar")).sorted()::iterator)
                urls.add(jar.toUri().toURL());
        }
        if (urls.isEmpty())
            throw new IllegalArgumentException("no jars in " + folder);
        return urls.toArray(new URL[0]);
    }

    /** Records the transactional ids asked for; there is no broker behind it, so no producer either. */
    private static final class RecordingPool implements ProducerPool {
        final List<String> requested = new ArrayList<>();

        @Override
        public FlinkKafkaInternalProducer<byte[], byte[]> getTransactionalProducer(String transactionalId, long checkpointId) {
            requested.add(transactionalId);
            return null;
        }

        @Override
        public void recycle(FlinkKafkaInternalProducer<byte[], byte[]> producer) {
        }

        @Override
        public void recycleByTransactionId(String transactionalId, boolean success) {
        }

        @Override
        public Collection<CheckpointTransaction> getOngoingTransactions() {
            return List.of();
        }

        @Override
        public void close() {
        }
    }
}
