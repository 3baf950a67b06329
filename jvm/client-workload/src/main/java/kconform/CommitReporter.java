package kconform;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;

import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * Reports every commit the consumer completes, auto-commits included, which kafka-clients hands no application
 * callback: KafkaConsumer calls an interceptor's onCommit for each commit that succeeded, whoever asked for it.
 * The consumer is built on its client's own thread, which names the queue its commits go to (CONSTRUCTING).
 */
public final class CommitReporter implements ConsumerInterceptor<byte[], byte[]> {
    static final ThreadLocal<Queue<Map<String, Object>>> CONSTRUCTING = new ThreadLocal<>();
    private Queue<Map<String, Object>> served;

    @Override
    public void configure(Map<String, ?> configs) {
        served = CONSTRUCTING.get();
    }

    @Override
    public ConsumerRecords<byte[], byte[]> onConsume(ConsumerRecords<byte[], byte[]> records) {
        return records;
    }

    @Override
    public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
        if (served == null)
            return;
        List<Object> found = new ArrayList<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet())
            found.add(List.of(e.getKey().topic(), (long) e.getKey().partition(), e.getValue().offset()));
        Map<String, Object> event = new LinkedHashMap<>();
        event.put("kind", "committed");
        event.put("offsets", found);
        event.put("error", null);
        served.add(event);
    }

    @Override
    public void close() {
    }
}
