package kconform;

import java.io.BufferedWriter;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.KafkaSourceBuilder;
import org.apache.flink.connector.kafka.source.KafkaSourceOptions;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializerValidator;
import org.apache.flink.connector.kafka.source.enumerator.subscriber.KafkaSubscriber;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.CheckpointException;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;
import org.apache.flink.util.ExceptionUtils;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.TopicPartition;

/**
 * Runs one real Flink streaming job in the local MiniCluster, so that kconform's pipeline checkers judge Flink's own
 * Kafka connector: {@code KafkaSource} -> a map that records what each subtask read -> {@code KafkaSink} (and each
 * of {@code more_sinks}: the same records into further sinks, uids {@code kafka-sink-1}, ...). Built
 * against every connector release line kconform knows (Flink 1.18 to 2.x): the only API that differs, the subtask
 * index and attempt number, is looked up by reflection ({@link Recorder#identity}).
 *
 * <p>{@code java kconform.FlinkHarness RUN.json}: the run description (kconform.conformance.flink.job writes it):
 *
 * <pre>
 * {"bootstrap_servers": s, "topics": [t, ...] | null, "topic_pattern": regex | null,
 *  "starting_offsets": "earliest" | "latest" | {"group": g, "fallback": "earliest" | "latest" | null},
 *  "bounded": b, "stopping_offsets": [[t, p, offset], ...] | absent, "parallelism": n, "checkpoint_interval_ms": ms, "restart_attempts": k,
 *  "sink": {"topic": t, "exactly_once": b, "transactional_id_prefix": s | null, "properties": {k: v},
 *  "naming": "INCREMENTING" | "POOLING" | null}, "more_sinks": [sink, ...] | absent,
 *  "source_properties": {k: v}, "history": path, "savepoint_dir": path, "restore_from": path | null,
 *  "failure": {"subtask": i, "after_records": n, "at": "record" | "checkpoint"} | null,
 *  "stop": {"after_records": n | null, "at_offsets": [[t, p, end], ...] | null, "listed": b | absent,
 *  "within_ms": ms} | null, "record_listings": b | absent, "pace_ms": ms, "timeout_ms": ms,
 *  "runtime_mode": "STREAMING" | "BATCH" | absent}
 * </pre>
 *
 * <p>A sink's {@code "delivery_guarantee": "NONE" | "AT_LEAST_ONCE" | "EXACTLY_ONCE"}, when given, is its guarantee
 * ({@code exactly_once} otherwise). {@code runtime_mode} BATCH ({@code execution.runtime-mode}) runs a bounded,
 * fresh job with no checkpoint interval set: BATCH takes no checkpoint, and a sink's writer hands its committables to
 * its committer at the end of its input.
 *
 * <p>Each subtask appends to {@code history}, one JSON object a line: {@code {"e": "init", restored}} when it starts
 * (restored: the checkpoint or savepoint id it restored from, or null), {@code {"e": "read", topic, partition,
 * offset, value}} (value in hex) for each record it read, {@code {"e": "snapshot", checkpoint}} when its state
 * enters a checkpoint (records read before it are in that checkpoint), {@code {"e": "complete", checkpoint}} when
 * told a checkpoint completed; every line carries {@code subtask} and {@code attempt}. With {@code record_listings},
 * the source's enumerator lists its subscription through {@link Listing}, which appends {@code {"e": "listed",
 * "partitions": [[t, p], ...]}} (the partitions it found; {@code subtask} -1) each time; a stop with {@code listed}
 * waits for the first such listing (and records them); and the source's starting offsets initializer answers the
 * enumerator through {@link Resolving}, which appends {@code {"e": "resolved", "offsets": [[t, p, offset], ...]}}
 * (what it handed each partition it started, markers included) each time. A bounded job runs to its
 * end, or is cancelled once {@code timeout_ms} passed without it ("unfinished", with {@code idle_ms}: how long since
 * its last read, or since the job was built when it read nothing); an unbounded one is stopped with a savepoint
 * once {@code stop} holds (or once {@code within_ms} passed): {@code at_offsets} holds once the state of a completed
 * checkpoint holds every partition read to its end, so reads a failover rolled back (those of a failed attempt after
 * its last completed checkpoint) never count, and the savepoint holds them; {@code after_records} counts every read,
 * replays too. The answer is one JSON line on stdout: {@code
 * {"job_id", "ended": "finished" | "unfinished" | "savepoint", "savepoint", "stop_met", "idle_ms"?, "wall_ms",
 * "discovery_interval_ms", "discovery_default_ms"}}: the source's partition.discovery.interval.ms as its enumerator
 * reads it (the built source's properties, else the option's default: KafkaSourceOptions.getOption) and the release's
 * own default for it (null where the release has none, or where the harness could not read them); a failed job is
 * exit 1 with its stack trace on stderr. A bounded job stops at the latest offsets at its start
 * ({@code setBounded(OffsetsInitializer.latest())}), or at {@code stopping_offsets} when given
 * ({@code OffsetsInitializer.offsets}).
 */
public final class FlinkHarness {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long POLL_MS = 50;

    private FlinkHarness() {}

    public static void main(String[] args) throws Exception {
        long started = System.nanoTime();
        JsonNode run = JSON.readTree(Files.readAllBytes(Paths.get(args[0])));
        Recorder.openHistory(Paths.get(run.get("history").asText()));
        int code = 0;
        try {
            ObjectNode answer = runJob(run);
            answer.put("wall_ms", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
            System.out.println(JSON.writeValueAsString(answer));
        } catch (Exception failed) {
            failed.printStackTrace();
            code = 1;
        } finally {
            Recorder.closeHistory();
        }
        System.exit(code); // the MiniCluster's non-daemon threads would keep the JVM alive
    }

    static ObjectNode runJob(JsonNode run) throws Exception {
        Map<String, String> settings = new HashMap<>();
        settings.put("parallelism.default", run.get("parallelism").asText());
        settings.put("pipeline.max-parallelism", "128");
        JsonNode mode = run.get("runtime_mode");
        boolean batch = mode != null && "BATCH".equals(mode.asText());
        if (batch) {
            // a backfill: every source bounded, no checkpoint (BATCH takes none), region failover on a failure
            settings.put("execution.runtime-mode", "BATCH");
        } else {
            settings.put("execution.checkpointing.interval", run.get("checkpoint_interval_ms").asText() + " ms");
            settings.put("execution.checkpointing.tolerable-failed-checkpoints", "0");
        }
        settings.put("restart-strategy.type", "fixed-delay");
        settings.put("restart-strategy.fixed-delay.attempts", run.get("restart_attempts").asText());
        settings.put("restart-strategy.fixed-delay.delay", "100 ms");
        settings.put("taskmanager.memory.managed.size", "16m");
        if (!run.get("restore_from").isNull()) {
            String path = run.get("restore_from").asText();
            settings.put("execution.savepoint.path", path); // Flink 1.x's key
            settings.put("execution.state-recovery.path", path); // Flink 2.x's
        }
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.getExecutionEnvironment(Configuration.fromMap(settings));

        KafkaSource<Read> source = source(run);
        DataStream<Read> reads =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "kafka-source")
                        .uid("kafka-source")
                        .map(new Recorder(run.get("failure"), run.get("pace_ms").asLong()))
                        .uid("recorder");
        reads.sinkTo(sink(run.get("bootstrap_servers").asText(), run.get("sink"))).uid("kafka-sink");
        JsonNode more = run.get("more_sinks"); // further sinks of the same records, each its own KafkaSink
        if (more != null && !more.isNull()) {
            int index = 0;
            for (JsonNode other : more) {
                index++;
                reads.sinkTo(sink(run.get("bootstrap_servers").asText(), other)).uid("kafka-sink-" + index);
            }
        }

        JobClient job = env.executeAsync("kconform-flink-harness");
        ObjectNode answer = JSON.createObjectNode();
        answer.put("job_id", job.getJobID().toString());
        discoveryInterval(source, answer);
        long timeoutMs = run.get("timeout_ms").asLong();
        if (run.get("bounded").asBoolean()) {
            answer.putNull("savepoint");
            answer.putNull("stop_met");
            try {
                job.getJobExecutionResult().get(timeoutMs, TimeUnit.MILLISECONDS);
                answer.put("ended", "finished");
            } catch (TimeoutException running) {
                // a bounded source that never ends is the connector's fault to judge, not the harness's
                answer.put("ended", "unfinished");
                answer.put("idle_ms", Recorder.idleMs());
                job.cancel().get(timeoutMs, TimeUnit.MILLISECONDS);
            }
            return answer;
        }
        boolean met = Recorder.awaitStop(run.get("stop"), job);
        String savepoint = stopWithSavepoint(job, run.get("savepoint_dir").asText(), timeoutMs);
        job.getJobExecutionResult().get(timeoutMs, TimeUnit.MILLISECONDS);
        answer.put("ended", "savepoint");
        answer.put("savepoint", savepoint);
        answer.put("stop_met", met);
        return answer;
    }

    /**
     * Stop the job with a savepoint; Flink refuses one while a subtask restarts after a failure ("not all required
     * tasks are currently running"), so a refused savepoint is asked for again until {@code timeoutMs} passed.
     */
    static String stopWithSavepoint(JobClient job, String directory, long timeoutMs) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (true) {
            try {
                return job.stopWithSavepoint(false, directory, SavepointFormatType.CANONICAL)
                        .get(timeoutMs, TimeUnit.MILLISECONDS);
            } catch (ExecutionException refused) {
                JobStatus status = statusOrNull(job);
                if (status == null || status.isGloballyTerminalState()) {
                    // the job failed (or is gone) while it was to be stopped: its own failure, not the savepoint's
                    throw new IllegalStateException(
                            "the job ended (" + status + ") before it was stopped", Recorder.failureOf(job));
                }
                boolean restarting = ExceptionUtils.findThrowable(refused, CheckpointException.class).isPresent();
                if (!restarting || System.nanoTime() > deadline) {
                    throw refused;
                }
                TimeUnit.MILLISECONDS.sleep(POLL_MS); // poll interval of a bounded retry, not a synchronisation
            }
        }
    }

    /** The job's status, or null once its MiniCluster is gone (it ended); a status not told in time fails. */
    static JobStatus statusOrNull(JobClient job) throws InterruptedException, TimeoutException {
        try {
            return job.getJobStatus().get(POLL_MS * 20, TimeUnit.MILLISECONDS);
        } catch (ExecutionException | IllegalStateException gone) {
            return null;
        }
    }

    static KafkaSource<Read> source(JsonNode run) {
        KafkaSourceBuilder<Read> builder =
                KafkaSource.<Read>builder()
                        .setBootstrapServers(run.get("bootstrap_servers").asText())
                        .setDeserializer(new ReadDeserializer());
        KafkaSubscriber subscriber;
        if (!run.get("topic_pattern").isNull()) {
            subscriber = KafkaSubscriber.getTopicPatternSubscriber(Pattern.compile(run.get("topic_pattern").asText()));
        } else {
            List<String> topics = new ArrayList<>();
            run.get("topics").forEach(t -> topics.add(t.asText()));
            subscriber = KafkaSubscriber.getTopicListSubscriber(topics);
        }
        // the subscriber setTopicPattern / setTopics would set, recorded at each listing when asked
        JsonNode listings = run.get("record_listings");
        boolean record = listings != null && listings.asBoolean();
        builder.setKafkaSubscriber(record ? new Listing(subscriber) : subscriber);
        JsonNode start = run.get("starting_offsets");
        OffsetsInitializer starting;
        if (start.isObject()) {
            builder.setGroupId(start.get("group").asText()); // committedOffsets requires one (sanityCheck)
            starting = committedOffsets(start.get("fallback"));
        } else {
            starting = switch (start.asText()) {
                case "earliest" -> OffsetsInitializer.earliest();
                case "latest" -> OffsetsInitializer.latest();
                default -> throw new IllegalArgumentException("unknown starting_offsets " + start);
            };
        }
        // the same initializer, its every answer to the enumerator recorded when asked (Resolving)
        builder.setStartingOffsets(record ? new Resolving(starting) : starting);
        if (run.get("bounded").asBoolean()) {
            JsonNode stopping = run.get("stopping_offsets");
            if (stopping != null && !stopping.isNull()) {
                Map<TopicPartition, Long> offsets = new HashMap<>();
                stopping.forEach(o -> offsets.put(new TopicPartition(o.get(0).asText(), o.get(1).asInt()), o.get(2).asLong()));
                builder.setBounded(OffsetsInitializer.offsets(offsets));
            } else {
                builder.setBounded(OffsetsInitializer.latest());
            }
        }
        run.get("source_properties").fields().forEachRemaining(e -> builder.setProperty(e.getKey(), e.getValue().asText()));
        return builder.build();
    }

    /**
     * The source's effective {@code partition.discovery.interval.ms} into {@code answer}, as its enumerator reads it
     * (KafkaSourceEnumerator's constructor: {@code KafkaSourceOptions.getOption(properties,
     * PARTITION_DISCOVERY_INTERVAL_MS, Long::parseLong)}, the properties the builder left in KafkaSource's
     * {@code props}), and the release's own default for it (the option's {@code defaultValue()}: none up to 3.0.x,
     * five minutes from 3.1.0, FLIP-288). Both null when the field cannot be read (a release that renamed it).
     */
    static void discoveryInterval(KafkaSource<Read> source, ObjectNode answer) {
        Object fallback = KafkaSourceOptions.PARTITION_DISCOVERY_INTERVAL_MS.defaultValue();
        Long effective;
        try {
            Field field = KafkaSource.class.getDeclaredField("props");
            field.setAccessible(true);
            Properties props = (Properties) field.get(source);
            effective = KafkaSourceOptions.getOption(
                    props, KafkaSourceOptions.PARTITION_DISCOVERY_INTERVAL_MS, Long::parseLong);
        } catch (ReflectiveOperationException | RuntimeException unread) {
            answer.putNull("discovery_interval_ms");
            answer.putNull("discovery_default_ms");
            return;
        }
        if (effective == null) {
            answer.putNull("discovery_interval_ms");
        } else {
            answer.put("discovery_interval_ms", effective.longValue());
        }
        if (fallback == null) {
            answer.putNull("discovery_default_ms");
        } else {
            answer.put("discovery_default_ms", ((Number) fallback).longValue());
        }
    }

    /**
     * The start from the group's committed offsets (RESTORE-018): {@code committedOffsets()} without a fallback (a
     * partition the group has no offset for fails the start), else {@code committedOffsets(strategy)}. Every
     * connector tag from v3.0.0 to v5.0.0 takes Kafka's {@code org.apache.kafka.clients.consumer.OffsetResetStrategy}
     * there, which kafka-clients 4.0 deprecated (KIP-1106, KAFKA-18013) and still ships in 4.2.0 (connector 5.0.0's).
     */
    @SuppressWarnings("deprecation")
    static OffsetsInitializer committedOffsets(JsonNode fallback) {
        if (fallback.isNull()) {
            return OffsetsInitializer.committedOffsets();
        }
        return OffsetsInitializer.committedOffsets(
                OffsetResetStrategy.valueOf(fallback.asText().toUpperCase(Locale.ROOT)));
    }

    /** The sink's {@code delivery_guarantee} (NONE, AT_LEAST_ONCE, EXACTLY_ONCE), else by {@code exactly_once}. */
    static DeliveryGuarantee guarantee(JsonNode sink) {
        JsonNode named = sink.get("delivery_guarantee");
        if (named != null && !named.isNull()) {
            return DeliveryGuarantee.valueOf(named.asText());
        }
        return sink.get("exactly_once").asBoolean() ? DeliveryGuarantee.EXACTLY_ONCE : DeliveryGuarantee.AT_LEAST_ONCE;
    }

    static KafkaSink<Read> sink(String bootstrapServers, JsonNode sink) {
        String topic = sink.get("topic").asText();
        var builder =
                KafkaSink.<Read>builder()
                        .setBootstrapServers(bootstrapServers)
                        .setRecordSerializer(serializer(topic))
                        .setDeliveryGuarantee(guarantee(sink));
        JsonNode prefix = sink.get("transactional_id_prefix");
        if (!prefix.isNull()) { // null: the job sets none, to see what the release does without one (COMMIT-022)
            builder.setTransactionalIdPrefix(prefix.asText());
        }
        sink.get("properties").fields().forEachRemaining(e -> builder.setProperty(e.getKey(), e.getValue().asText()));
        JsonNode naming = sink.get("naming");
        if (naming != null && !naming.isNull()) {
            setNaming(builder, naming.asText());
        }
        return builder.build();
    }

    /**
     * The sink's {@code TransactionNamingStrategy} (connector 4.0 on, FLINK-34554), set by reflection so that one
     * source builds against every release line; a line without it cannot run the job asked.
     */
    static void setNaming(Object builder, String name) {
        try {
            Class<?> strategy = Class.forName("org.apache.flink.connector.kafka.sink.TransactionNamingStrategy");
            Object value = strategy.getMethod("valueOf", String.class).invoke(null, name);
            builder.getClass().getMethod("setTransactionNamingStrategy", strategy).invoke(builder, value);
        } catch (ClassNotFoundException | NoSuchMethodException missing) {
            throw new IllegalArgumentException("this connector release has no TransactionNamingStrategy", missing);
        } catch (ReflectiveOperationException failed) {
            throw new IllegalStateException("setting TransactionNamingStrategy " + name, failed);
        }
    }

    /**
     * The source's own subscriber, unchanged, whose every listing (the enumerator's discovery of the subscribed
     * partitions) the history records with the number of partitions found: so a run is known to have done its first
     * discovery, even one that found nothing. The enumerator runs in this JVM (the MiniCluster's JobManager).
     */
    static final class Listing implements KafkaSubscriber {
        private static final long serialVersionUID = 1L;
        private final KafkaSubscriber inner;

        Listing(KafkaSubscriber inner) {
            this.inner = inner;
        }

        @Override
        public Set<TopicPartition> getSubscribedTopicPartitions(AdminClient adminClient) {
            Set<TopicPartition> found = inner.getSubscribedTopicPartitions(adminClient);
            Recorder.listed(found);
            return found;
        }
    }

    /**
     * The source's own starting offsets initializer, unchanged, whose every answer to the enumerator (the offset it
     * hands each partition it starts: a concrete offset, or a marker the reader resolves: {@code -1} latest, {@code
     * -2} earliest, {@code -3} the group's committed offset) the history records: so the run that started a
     * partition, and what it started it at, are known. The enumerator runs in this JVM (the MiniCluster's
     * JobManager). Every release line's {@code OffsetsInitializer} has these two methods; its builder validates a
     * starting initializer only through {@code OffsetsInitializerValidator}, passed on.
     */
    static final class Resolving implements OffsetsInitializer, OffsetsInitializerValidator {
        private static final long serialVersionUID = 1L;
        private final OffsetsInitializer inner;

        Resolving(OffsetsInitializer inner) {
            this.inner = inner;
        }

        @Override
        public Map<TopicPartition, Long> getPartitionOffsets(
                Collection<TopicPartition> partitions, PartitionOffsetsRetriever retriever) {
            Map<TopicPartition, Long> offsets = inner.getPartitionOffsets(partitions, retriever);
            if (!offsets.isEmpty()) {
                Recorder.resolved(offsets);
            }
            return offsets;
        }

        @Override
        public OffsetResetStrategy getAutoOffsetResetStrategy() {
            return inner.getAutoOffsetResetStrategy();
        }

        @Override
        public void validate(Properties kafkaSourceProperties) {
            if (inner instanceof OffsetsInitializerValidator validator) {
                validator.validate(kafkaSourceProperties);
            }
        }
    }

    /** One source record as the job carries it: where it was read and its key and value. */
    public static final class Read {
        public String topic;
        public int partition;
        public long offset;
        public byte[] key;
        public byte[] value;

        public Read() {}
    }

    /** The source's deserializer: keeps the record's position, which the map records. */
    static final class ReadDeserializer implements KafkaRecordDeserializationSchema<Read> {
        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<Read> out) {
            Read read = new Read();
            read.topic = record.topic();
            read.partition = record.partition();
            read.offset = record.offset();
            read.key = record.key();
            read.value = record.value();
            out.collect(read);
        }

        @Override
        public TypeInformation<Read> getProducedType() {
            return TypeInformation.of(Read.class);
        }
    }

    /** The sink's serializer: the record's key and value to the output topic, partitioned by Kafka's producer. */
    /**
     * Each record to {@code topic}, its key and value as read. Built by the connector's own builder: its schema names
     * the topic it writes (KafkaDatasetFacetProvider, from connector 4.0), which the POOLING naming strategy needs.
     */
    static KafkaRecordSerializationSchema<Read> serializer(String topic) {
        return KafkaRecordSerializationSchema.<Read>builder()
                .setTopic(topic)
                .setKeySerializationSchema(new KeyOf())
                .setValueSerializationSchema(new ValueOf())
                .build();
    }

    /** A record's key as read (classes, not lambdas: the lineage facet of 4.0 on infers their element type). */
    static final class KeyOf implements SerializationSchema<Read> {
        @Override
        public byte[] serialize(Read read) {
            return read.key;
        }
    }

    /** A record's value as read. */
    static final class ValueOf implements SerializationSchema<Read> {
        @Override
        public byte[] serialize(Read read) {
            return read.value;
        }
    }

    /**
     * The map between source and sink (chained to both: the same subtask reads, records and writes): appends what
     * its subtask read, and where its state entered a checkpoint, to the history; injects the planned failure.
     * The history file and the stop condition's counters are static: the MiniCluster runs every subtask in this JVM.
     */
    static final class Recorder extends RichMapFunction<Read, Read> implements CheckpointedFunction, CheckpointListener {
        private static final Object LOCK = new Object();
        private static BufferedWriter history;
        private static long readsThisRun;
        /** Per partition, the next offset the state of a completed checkpoint holds (the stop's {@code at_offsets}). */
        private static final Map<String, Long> covered = new HashMap<>();
        /** Per checkpoint id, the next offsets its snapshots hold so far, merged over the subtasks. */
        private static final Map<Long, Map<String, Long>> snapshotted = new HashMap<>();
        private static long lastReadNanos = System.nanoTime();
        private static long listings;

        private final int failSubtask;
        private final long failAfter;
        private final boolean failAtCheckpoint;
        private final long paceMs;
        private transient int subtask;
        private transient int attempt;
        private transient long read;
        /** The next offset this subtask's attempt read to, per partition: what its next snapshot holds. */
        private transient Map<String, Long> progress;

        Recorder(JsonNode failure, long paceMs) {
            boolean planned = failure != null && !failure.isNull();
            this.failSubtask = planned ? failure.get("subtask").asInt() : -1;
            this.failAfter = planned ? failure.get("after_records").asLong() : Long.MAX_VALUE;
            this.failAtCheckpoint = planned && "checkpoint".equals(failure.get("at").asText());
            this.paceMs = paceMs;
        }

        static void openHistory(Path path) throws IOException {
            history = Files.newBufferedWriter(
                    path, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        }

        static void closeHistory() throws IOException {
            synchronized (LOCK) {
                history.close();
            }
        }

        /** (subtask index, attempt number): RuntimeContext's own getters up to Flink 1.x, getTaskInfo()'s since. */
        static int[] identity(RuntimeContext context) throws ReflectiveOperationException {
            Object holder = context;
            Class<?> type = RuntimeContext.class;
            try {
                holder = RuntimeContext.class.getMethod("getTaskInfo").invoke(context);
                type = Class.forName("org.apache.flink.api.common.TaskInfo");
            } catch (NoSuchMethodException flink1) {
                // Flink 1.18: the getters are on RuntimeContext itself
            }
            Method index = type.getMethod("getIndexOfThisSubtask");
            Method attempt = type.getMethod("getAttemptNumber");
            return new int[] {(int) index.invoke(holder), (int) attempt.invoke(holder)};
        }

        private void write(String event, ObjectNode fields) throws IOException {
            fields.put("e", event);
            fields.put("subtask", subtask);
            fields.put("attempt", attempt);
            synchronized (LOCK) {
                history.write(JSON.writeValueAsString(fields));
                history.newLine();
                if (!event.equals("read")) {
                    history.flush();
                }
            }
        }

        /** The enumerator's starting offsets initializer handed out {@code offsets} ({@link Resolving}). */
        static void resolved(Map<TopicPartition, Long> offsets) {
            ObjectNode fields = JSON.createObjectNode();
            fields.put("e", "resolved");
            fields.put("subtask", -1);
            fields.put("attempt", 0);
            var found = fields.putArray("offsets");
            offsets.forEach((tp, offset) -> found.addArray().add(tp.topic()).add(tp.partition()).add(offset));
            synchronized (LOCK) {
                writeLine(fields);
            }
        }

        /** One line of the history, written through at once; the caller holds {@code LOCK}. */
        private static void writeLine(ObjectNode fields) {
            try {
                history.write(JSON.writeValueAsString(fields));
                history.newLine();
                history.flush();
            } catch (IOException failed) {
                throw new IllegalStateException("kconform: the history could not be written", failed);
            }
        }

        /** The enumerator listed its subscription and found {@code partitions} ({@link Listing}). */
        static void listed(Set<TopicPartition> partitions) {
            ObjectNode fields = JSON.createObjectNode();
            fields.put("e", "listed");
            fields.put("subtask", -1);
            fields.put("attempt", 0);
            var found = fields.putArray("partitions");
            partitions.forEach(tp -> found.addArray().add(tp.topic()).add(tp.partition()));
            synchronized (LOCK) {
                writeLine(fields);
                listings++;
                LOCK.notifyAll();
            }
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            int[] who = identity(getRuntimeContext());
            subtask = who[0];
            attempt = who[1];
            progress = new HashMap<>();
            ObjectNode fields = JSON.createObjectNode();
            if (context.isRestored() && context.getRestoredCheckpointId().isPresent()) {
                fields.put("restored", context.getRestoredCheckpointId().getAsLong());
            } else {
                fields.putNull("restored");
            }
            write("init", fields);
        }

        @Override
        public Read map(Read in) throws Exception {
            read++;
            if (!failAtCheckpoint && subtask == failSubtask && attempt == 0 && read > failAfter) {
                throw new IllegalStateException(
                        "kconform: injected failure of subtask " + subtask + " after " + failAfter + " records");
            }
            ObjectNode fields = JSON.createObjectNode();
            fields.put("topic", in.topic);
            fields.put("partition", in.partition);
            fields.put("offset", in.offset);
            if (in.value == null) {
                fields.putNull("value");
            } else {
                fields.put("value", HexFormat.of().formatHex(in.value));
            }
            write("read", fields);
            // what this attempt read: it counts for the stop once a completed checkpoint holds it (snapshotState)
            progress.merge(in.topic + "\u0000" + in.partition, in.offset + 1, Math::max);
            synchronized (LOCK) {
                readsThisRun++;
                lastReadNanos = System.nanoTime();
                LOCK.notifyAll();
            }
            if (paceMs > 0) {
                Thread.sleep(paceMs); // spreads the reads over checkpoints; no outcome depends on it
            }
            return in;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            if (failAtCheckpoint && subtask == failSubtask && attempt == 0 && read > failAfter) {
                throw new IllegalStateException(
                        "kconform: injected failure of subtask " + subtask + " in checkpoint "
                                + context.getCheckpointId() + " after " + read + " records");
            }
            ObjectNode fields = JSON.createObjectNode();
            fields.put("checkpoint", context.getCheckpointId());
            write("snapshot", fields);
            synchronized (LOCK) {
                Map<String, Long> held = snapshotted.computeIfAbsent(context.getCheckpointId(), id -> new HashMap<>());
                progress.forEach((tp, next) -> held.merge(tp, next, Math::max));
            }
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) throws Exception {
            ObjectNode fields = JSON.createObjectNode();
            fields.put("checkpoint", checkpointId);
            write("complete", fields);
            synchronized (LOCK) {
                Map<String, Long> held = snapshotted.remove(checkpointId);
                if (held != null) {
                    held.forEach((tp, next) -> covered.merge(tp, next, Math::max));
                }
                LOCK.notifyAll();
            }
        }

        /** Milliseconds since the last record read in this JVM, or since the job was built when none was. */
        static long idleMs() {
            synchronized (LOCK) {
                return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - lastReadNanos);
            }
        }

        /** Whether {@code stop} held before its deadline: wait, bounded, for it, or for the job to end. */
        static boolean awaitStop(JsonNode stop, JobClient job) throws Exception {
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(stop.get("within_ms").asLong());
            while (true) {
                synchronized (LOCK) {
                    if (stopHolds(stop)) {
                        return true;
                    }
                    long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                    if (left <= 0) {
                        return false;
                    }
                    LOCK.wait(Math.min(left, POLL_MS));
                }
                JobStatus status;
                try {
                    status = job.getJobStatus().get(POLL_MS * 20, TimeUnit.MILLISECONDS);
                } catch (ExecutionException | IllegalStateException gone) {
                    // the job's own MiniCluster shuts down once the job ended: only its result still says why
                    Throwable why = failureOf(job);
                    throw new IllegalStateException("the job ended before it was stopped", why == null ? gone : why);
                }
                if (status.isGloballyTerminalState()) {
                    throw new IllegalStateException(
                            "the job ended (" + status + ") before it was stopped", failureOf(job));
                }
            }
        }

        /** Why a job that ended failed (its stack trace names the connector's own error), or null. */
        static Throwable failureOf(JobClient job) throws InterruptedException {
            try {
                job.getJobExecutionResult().get(POLL_MS * 20, TimeUnit.MILLISECONDS);
                return null;
            } catch (ExecutionException | TimeoutException failed) {
                return failed;
            }
        }

        private static boolean stopHolds(JsonNode stop) {
            JsonNode listed = stop.get("listed");
            if (listed != null && listed.asBoolean() && listings == 0) {
                return false;
            }
            JsonNode after = stop.get("after_records");
            if (after != null && !after.isNull() && readsThisRun < after.asLong()) {
                return false;
            }
            JsonNode ends = stop.get("at_offsets");
            if (ends != null && !ends.isNull()) {
                for (JsonNode end : ends) {
                    long next = covered.getOrDefault(end.get(0).asText() + "\u0000" + end.get(1).asInt(), 0L);
                    if (next < end.get(2).asLong()) {
                        return false;
                    }
                }
            }
            return true;
        }
    }

}
