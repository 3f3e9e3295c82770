package groupscope.harness;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.MemberAssignment;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

/**
 * Kafka's own view of consumer groups through its AdminClient, as one JSON object: for the
 * `describe` command of ClientHarness (tests/support/parity_clients.py compares it with
 * groupscope's). Compiled against kafka-clients 4.x but also run on 3.9's jar: what only 4.x
 * exposes (GroupState, group / target assignment / member epochs) is read by reflection and is
 * null where the running client lacks it.
 */
final class AdminView implements AutoCloseable {
    private static final long TIMEOUT_S = 30;
    private final Admin admin;

    AdminView(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        admin = Admin.create(p);
    }

    /** {"GROUP": {...} or {"error": "..."}}: a group whose description failed says why. */
    String describe(Collection<String> groups) throws InterruptedException {
        Map<String, KafkaFuture<ConsumerGroupDescription>> described =
                admin.describeConsumerGroups(groups).describedGroups();
        Map<String, KafkaFuture<Map<TopicPartition, OffsetAndMetadata>>> offsets = new HashMap<>();
        for (String g : groups) offsets.put(g, admin.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata());
        StringBuilder b = new StringBuilder("{");
        String sep = "";
        for (String g : groups) {
            b.append(sep).append(ClientHarness.quote(g)).append(':');
            sep = ",";
            try {
                ConsumerGroupDescription d = described.get(g).get(TIMEOUT_S, TimeUnit.SECONDS);
                b.append(group(d, offsets.get(g).get(TIMEOUT_S, TimeUnit.SECONDS)));
            } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                Throwable cause = e.getCause() == null ? e : e.getCause();
                b.append("{\"error\":").append(ClientHarness.quote(cause.toString())).append('}');
            }
        }
        return b.append('}').toString();
    }

    private String group(ConsumerGroupDescription d, Map<TopicPartition, OffsetAndMetadata> committed)
            throws InterruptedException {
        Object state = optional(call(d, "groupState"));  // 4.x; 3.9 has only state()
        StringBuilder b = new StringBuilder("{\"state\":")
                .append(ClientHarness.quote(String.valueOf(state != null ? state : d.state())))
                .append(",\"type\":").append(ClientHarness.quote(String.valueOf(d.type()).toLowerCase()))
                .append(",\"assignor\":").append(ClientHarness.quote(d.partitionAssignor()))
                .append(",\"coordinator\":").append(d.coordinator() == null ? -1 : d.coordinator().id())
                .append(",\"group_epoch\":").append(optional(call(d, "groupEpoch")))
                .append(",\"target_epoch\":").append(optional(call(d, "targetAssignmentEpoch")))
                .append(",\"members\":[");
        String sep = "";
        for (MemberDescription m : d.members()) {
            Optional<MemberAssignment> target = m.targetAssignment();
            b.append(sep).append("{\"id\":").append(ClientHarness.quote(m.consumerId()))
                    .append(",\"client\":").append(ClientHarness.quote(m.clientId()))
                    .append(",\"host\":").append(ClientHarness.quote(m.host()))
                    .append(",\"instance\":").append(m.groupInstanceId().map(ClientHarness::quote).orElse("null"))
                    .append(",\"epoch\":").append(optional(call(m, "memberEpoch")))
                    .append(",\"assigned\":").append(partitions(m.assignment().topicPartitions()))
                    .append(",\"target\":").append(target.map(t -> partitions(t.topicPartitions())).orElse("null"))
                    .append('}');
            sep = ",";
        }
        b.append("],\"committed\":[");
        List<TopicPartition> withOffset = new ArrayList<>();
        sep = "";
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : committed.entrySet()) {
            if (e.getValue() == null) continue;  // listed without an offset
            withOffset.add(e.getKey());
            b.append(sep).append(triple(e.getKey(), e.getValue().offset()));
            sep = ",";
        }
        // Log end offsets of the committed partitions only (docs/kafka-parity.md, rule 5); a
        // partition whose topic is gone has none.
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        withOffset.forEach(tp -> latest.put(tp, OffsetSpec.latest()));
        ListOffsetsResult ends = admin.listOffsets(latest);
        b.append("],\"log_end\":[");
        sep = "";
        for (TopicPartition tp : withOffset) {
            try {
                b.append(sep).append(triple(tp, ends.partitionResult(tp).get(TIMEOUT_S, TimeUnit.SECONDS).offset()));
                sep = ",";
            } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                // no log end: left out
            }
        }
        return b.append("]}").toString();
    }

    private static String partitions(Collection<TopicPartition> tps) {
        StringBuilder b = new StringBuilder("[");
        String sep = "";
        for (TopicPartition tp : tps) {
            b.append(sep).append('[').append(ClientHarness.quote(tp.topic())).append(',').append(tp.partition()).append(']');
            sep = ",";
        }
        return b.append(']').toString();
    }

    private static String triple(TopicPartition tp, long value) {
        return "[" + ClientHarness.quote(tp.topic()) + "," + tp.partition() + "," + value + "]";
    }

    /** `target.name()` where the running kafka-clients has it, else null. */
    private static Object call(Object target, String name) {
        try {
            Method m = target.getClass().getMethod(name);
            return m.invoke(target);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    private static Object optional(Object value) {
        return value instanceof Optional<?> o ? o.orElse(null) : value;
    }

    @Override public void close() {
        admin.close();
    }
}
