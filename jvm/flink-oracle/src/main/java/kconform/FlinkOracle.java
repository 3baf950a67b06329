package kconform;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.ReaderInfo;
import org.apache.flink.api.connector.source.SplitsAssignment;
import org.apache.flink.api.connector.source.mocks.MockSplitEnumeratorContext;
import org.apache.flink.connector.kafka.sink.internal.CheckpointTransaction;
import org.apache.flink.connector.kafka.sink.internal.FlinkKafkaInternalProducer;
import org.apache.flink.connector.kafka.sink.internal.ProducerPool;
import org.apache.flink.connector.kafka.sink.internal.TransactionNamingStrategyContextImpl;
import org.apache.flink.connector.kafka.sink.internal.TransactionNamingStrategyImpl;
import org.apache.flink.connector.kafka.sink.internal.TransactionalIdFactory;
import org.apache.flink.connector.kafka.source.KafkaSourceOptions;
import org.apache.flink.connector.kafka.source.enumerator.KafkaSourceEnumState;
import org.apache.flink.connector.kafka.source.enumerator.KafkaSourceEnumerator;
import org.apache.flink.connector.kafka.source.enumerator.initializer.NoStoppingOffsetsInitializer;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.enumerator.subscriber.KafkaSubscriber;
import org.apache.flink.connector.kafka.source.split.KafkaPartitionSplit;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
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
 * {"op": "enumerator", "parallelism": n, "start": o,
 *  "restore": null | {"assigned": [[t, p, starting offset], ...], "unassigned": [[t, p, starting offset], ...],
 *                     "initial_discovery_finished": b},
 *  "steps": [{"readers": [i, ...], "metadata": {t: [p, ...], ...}, "offsets": [[t, p, earliest, end], ...]}, ...]}
 *   -> {"steps": [{"assigned": [[reader, t, p, starting offset], ...], "pending": [[reader, t, p, starting offset], ...],
 *                  "state": {"assigned": [[t, p, starting offset], ...], "unassigned": [[t, p, starting offset], ...],
 *                            "initial_discovery_finished": b},
 *                  "end_offsets_asked": [[t, p], ...], "beginning_offsets_asked": [[t, p], ...]}]}
 * </pre>
 *
 * The one argument is the folder of the 3.x connector's jars (.jvm/flink-legacy/): its legacy
 * classes are loaded by a class loader of their own, whose parent is the platform loader, so the
 * two connector lines never share a class. The rest runs on the connector jvm/pom.xml pins (5.x):
 * its {@code KafkaSourceEnumState} holds splits, each with its starting offset, assigned or not
 * (FLINK-38453, connector 5.0), where 3.1 to 4.x held bare partitions, the unassigned ones of the
 * first discovery only. The naming strategies run through Flink's own
 * {@code TransactionNamingStrategyContextImpl}, over a producer pool that records each id it is
 * asked for and hands out no producer. A request it cannot answer gets {"error": "..."}.
 *
 * <p>{@code enumerator} runs FLIP-27's {@code KafkaSourceEnumerator} in Flink's own test context,
 * {@code MockSplitEnumeratorContext} (flink-core's test jar), as the connector's
 * {@code KafkaEnumeratorTest} does, restored from the given state if there is one. Each step first
 * makes the registered readers those listed (a reader newly listed is registered and added, as a
 * reader that starts is; one no longer listed is unregistered, as a failed one is), then runs one
 * periodic discovery, which lists the step's metadata, and the split initialisation it schedules.
 * It answers, per step, the splits the context was asked to assign during the step, the splits
 * pending for readers not registered, and {@code snapshotState}. The subscriber lists the
 * metadata itself (Flink's own ask an admin client); partitions found by the initial discovery (in
 * 5.x the first that finds a partition, in 3.1 to 4.x the first run) start at {@code o} ({@code OffsetsInitializer.offsets}, or {@code earliest()} for -2, or {@code latest()}
 * for -1), later ones where Flink starts them ({@code OffsetsInitializer.earliest()}). The starting
 * offsets initializer is Flink's own, handed an offsets retriever that answers from the step's
 * {@code offsets} (each partition's earliest and end offset, as the admin client's ListOffsets
 * would, read_uncommitted) instead of the enumerator's, whose admin client has no broker behind it;
 * the enumerator still decides when it is asked and for which partitions. Each step answers which
 * partitions' end and beginning offsets were asked for; a partition asked for but not given is an
 * error, as an unknown partition is to ListOffsets.
 */
public final class FlinkOracle {
    private static final JsonMapper JSON = JsonMapper.builder().enable(JsonWriteFeature.ESCAPE_NON_ASCII).build();
    private static final String LEGACY_ASSIGNER =
            "org.apache.flink.streaming.connectors.kafka.internals.KafkaTopicPartitionAssigner";
    private static final String LEGACY_ID_FACTORY = "org.apache.flink.connector.kafka.sink.TransactionalIdFactory";
    /** {@code KafkaPartitionSplit.LATEST_OFFSET}, deprecated in the 4.x connector. */
    private static final long LATEST_OFFSET = -1;

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
            case "enumerator": return enumerator(request);
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

    /** Flink's enumerator through a sequence of discoveries: see the class comment. */
    private static ObjectNode enumerator(JsonNode request) throws ReflectiveOperationException {
        int parallelism = request.path("parallelism").intValue();
        long start = request.path("start").longValue();
        JsonNode steps = list(request, "steps");
        Listed subscriber = new Listed();
        JsonNode restore = request.path("restore");
        KafkaSourceEnumState state = restore.isObject()
                ? new KafkaSourceEnumState(splitsOf(restore.path("assigned")), splitsOf(restore.path("unassigned")),
                        restore.path("initial_discovery_finished").booleanValue())
                : new KafkaSourceEnumState(List.of(), List.of(), false);
        // The starting offsets initializer may be asked for any partition a step lists or the
        // restored state holds (a restored split is not initialised again unless it was migrated).
        Map<TopicPartition, Long> startingOffsets = new HashMap<>();
        for (JsonNode step : steps)
            partitions(step.path("metadata")).forEach(tp -> startingOffsets.put(tp, start));
        state.unassignedSplits().forEach(split -> startingOffsets.put(split.getTopicPartition(), start));
        Retriever retriever = new Retriever();
        OffsetsInitializer starting = new Fed(start == KafkaPartitionSplit.EARLIEST_OFFSET ? OffsetsInitializer.earliest()
                : start == LATEST_OFFSET ? OffsetsInitializer.latest() : OffsetsInitializer.offsets(startingOffsets),
                retriever);
        Properties properties = new Properties();
        properties.setProperty(KafkaSourceOptions.PARTITION_DISCOVERY_INTERVAL_MS.key(), "1");
        // start() creates an admin client; nothing answers here, and it is closed before it is asked.
        properties.setProperty(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1");
        ObjectNode answer = JSON.createObjectNode();
        ArrayNode out = answer.putArray("steps");
        try (MockSplitEnumeratorContext<KafkaPartitionSplit> context = new MockSplitEnumeratorContext<>(parallelism);
                KafkaSourceEnumerator enumerator = new KafkaSourceEnumerator(subscriber, starting,
                        new NoStoppingOffsetsInitializer(), properties, context, Boundedness.CONTINUOUS_UNBOUNDED, state)) {
            enumerator.start();
            Field admin = KafkaSourceEnumerator.class.getDeclaredField("adminClient");
            admin.setAccessible(true);
            ((AdminClient) admin.get(enumerator)).close(Duration.ZERO);
            Field pendingField = KafkaSourceEnumerator.class.getDeclaredField("pendingPartitionSplitAssignment");
            pendingField.setAccessible(true);
            long checkpoint = 0;
            for (JsonNode step : steps) {
                int before = context.getSplitsAssignmentSequence().size();
                Set<Integer> readers = new TreeSet<>();
                list(step, "readers").forEach(r -> readers.add(r.intValue()));
                for (int reader : new ArrayList<>(context.registeredReaders().keySet()))
                    if (!readers.contains(reader))
                        context.unregisterReader(reader);
                for (int reader : readers)
                    if (!context.registeredReaders().containsKey(reader)) {
                        context.registerReader(new ReaderInfo(reader, "kconform"));
                        enumerator.addReader(reader);
                    }
                subscriber.listed = partitions(step.path("metadata"));
                retriever.step(step.path("offsets"));
                context.runPeriodicCallable(0);
                while (!context.getOneTimeCallables().isEmpty())
                    context.runNextOneTimeCallable();
                ObjectNode result = out.addObject();
                List<Object[]> assigned = new ArrayList<>();
                for (SplitsAssignment<KafkaPartitionSplit> made :
                        context.getSplitsAssignmentSequence().subList(before, context.getSplitsAssignmentSequence().size()))
                    made.assignment().forEach((reader, splits) -> splits.forEach(s -> assigned.add(new Object[] {reader, s})));
                List<Object[]> pending = new ArrayList<>();
                @SuppressWarnings("unchecked")
                Map<Integer, Set<KafkaPartitionSplit>> waiting =
                        (Map<Integer, Set<KafkaPartitionSplit>>) pendingField.get(enumerator);
                waiting.forEach((reader, splits) -> splits.forEach(s -> pending.add(new Object[] {reader, s})));
                splits(result.putArray("assigned"), assigned);
                splits(result.putArray("pending"), pending);
                KafkaSourceEnumState snapshot = enumerator.snapshotState(++checkpoint);
                ObjectNode stateOut = result.putObject("state");
                starts(stateOut.putArray("assigned"), snapshot.assignedSplits());
                starts(stateOut.putArray("unassigned"), snapshot.unassignedSplits());
                stateOut.put("initial_discovery_finished", snapshot.initialDiscoveryFinished());
                pairs(result.putArray("end_offsets_asked"), retriever.endAsked);
                pairs(result.putArray("beginning_offsets_asked"), retriever.beginningAsked);
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException(String.valueOf(e), e);
        }
        return answer;
    }

    private static final Comparator<TopicPartition> BY_TOPIC_PARTITION =
            Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);

    /** {t: [p, ...]} as partitions. */
    private static Set<TopicPartition> partitions(JsonNode metadata) {
        Set<TopicPartition> found = new HashSet<>();
        metadata.fields().forEachRemaining(e -> e.getValue().forEach(p -> found.add(new TopicPartition(e.getKey(), p.intValue()))));
        return found;
    }

    /** [[t, p, starting offset], ...] as splits (no stopping offset: the source is unbounded). */
    private static List<KafkaPartitionSplit> splitsOf(JsonNode rows) {
        List<KafkaPartitionSplit> found = new ArrayList<>();
        rows.forEach(r -> found.add(new KafkaPartitionSplit(
                new TopicPartition(r.get(0).textValue(), r.get(1).intValue()), r.get(2).longValue())));
        return found;
    }

    /** Splits as [t, p, starting offset], sorted. */
    private static void starts(ArrayNode out, Collection<KafkaPartitionSplit> splits) {
        splits.stream().sorted(Comparator.comparing(KafkaPartitionSplit::getTopicPartition, BY_TOPIC_PARTITION))
                .forEach(s -> out.addArray().add(s.getTopic()).add(s.getPartition()).add(s.getStartingOffset()));
    }

    private static void pairs(ArrayNode out, Set<TopicPartition> partitions) {
        partitions.stream().sorted(BY_TOPIC_PARTITION).forEach(tp -> out.addArray().add(tp.topic()).add(tp.partition()));
    }

    /** (reader, split) as [reader, t, p, starting offset], sorted. */
    private static void splits(ArrayNode out, List<Object[]> splits) {
        splits.sort(Comparator.comparing((Object[] r) -> (Integer) r[0])
                .thenComparing(r -> ((KafkaPartitionSplit) r[1]).getTopicPartition(), BY_TOPIC_PARTITION));
        for (Object[] r : splits) {
            KafkaPartitionSplit split = (KafkaPartitionSplit) r[1];
            out.addArray().add((Integer) r[0]).add(split.getTopic()).add(split.getPartition()).add(split.getStartingOffset());
        }
    }

    /** A subscriber that lists what the current step's metadata holds: no admin client asked. */
    private static final class Listed implements KafkaSubscriber {
        private static final long serialVersionUID = 1L;
        Set<TopicPartition> listed = Set.of();

        @Override
        public Set<TopicPartition> getSubscribedTopicPartitions(AdminClient adminClient) {
            return new HashSet<>(listed); // the enumerator removes the known ones from what it gets
        }
    }

    /**
     * Flink's starting offsets initializer, handed {@link Retriever} instead of the retriever the
     * enumerator passes (whose admin client has no broker to ask): which partitions it resolves, and
     * when, is still the enumerator's choice, and how it resolves them the initializer's own.
     */
    private static final class Fed implements OffsetsInitializer {
        private static final long serialVersionUID = 1L;
        private final OffsetsInitializer initializer;
        private final transient Retriever retriever;

        Fed(OffsetsInitializer initializer, Retriever retriever) {
            this.initializer = initializer;
            this.retriever = retriever;
        }

        @Override
        public Map<TopicPartition, Long> getPartitionOffsets(
                Collection<TopicPartition> partitions, PartitionOffsetsRetriever ignored) {
            return initializer.getPartitionOffsets(partitions, retriever);
        }

        @Override
        public OffsetResetStrategy getAutoOffsetResetStrategy() {
            return initializer.getAutoOffsetResetStrategy();
        }
    }

    /**
     * Answers offset lookups from the current step's offsets, as ListOffsets would (earliest, and
     * end: the high watermark, read_uncommitted), and records what it was asked during the step. No
     * consumer group has committed offsets; timestamps are not drawn.
     */
    private static final class Retriever implements OffsetsInitializer.PartitionOffsetsRetriever {
        private Map<TopicPartition, long[]> offsets = Map.of();
        final Set<TopicPartition> endAsked = new HashSet<>();
        final Set<TopicPartition> beginningAsked = new HashSet<>();

        /** [[t, p, earliest, end], ...] of the next step (none if absent), and nothing asked yet. */
        void step(JsonNode rows) {
            Map<TopicPartition, long[]> next = new HashMap<>();
            rows.forEach(r -> next.put(new TopicPartition(r.get(0).textValue(), r.get(1).intValue()),
                    new long[] {r.get(2).longValue(), r.get(3).longValue()}));
            offsets = next;
            endAsked.clear();
            beginningAsked.clear();
        }

        private Map<TopicPartition, Long> lookUp(Collection<TopicPartition> partitions, Set<TopicPartition> asked, int which) {
            Map<TopicPartition, Long> found = new HashMap<>();
            for (TopicPartition tp : partitions) {
                long[] known = offsets.get(tp);
                if (known == null)
                    throw new IllegalArgumentException("no offsets given for " + tp);
                asked.add(tp);
                found.put(tp, known[which]);
            }
            return found;
        }

        @Override
        public Map<TopicPartition, Long> committedOffsets(Collection<TopicPartition> partitions) {
            return Map.of();
        }

        @Override
        public Map<TopicPartition, Long> endOffsets(Collection<TopicPartition> partitions) {
            return lookUp(partitions, endAsked, 1);
        }

        @Override
        public Map<TopicPartition, Long> beginningOffsets(Collection<TopicPartition> partitions) {
            return lookUp(partitions, beginningAsked, 0);
        }

        @Override
        public Map<TopicPartition, OffsetAndTimestamp> offsetsForTimes(Map<TopicPartition, Long> timestampsToSearch) {
            throw new UnsupportedOperationException("no timestamps are drawn: " + timestampsToSearch);
        }
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
