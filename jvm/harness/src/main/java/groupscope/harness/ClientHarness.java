package groupscope.harness;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.utils.Timer;

/**
 * Many KafkaConsumers in one JVM, one thread each, reporting what they saw with this machine's
 * clock as JSON lines on stdout. A Python driver (tests/support/client_harness.py) adds and removes
 * consumers by writing commands on stdin, one per line:
 *
 *   add NAME       start a consumer with client.id NAME (and group.instance.id NAME with --static)
 *   add NAME k=v.. the same, with this consumer's own settings in place of the command line's:
 *                  group, topic, protocol, assignor, instance (its group.instance.id), session-ms,
 *                  heartbeat-ms; so one JVM can hold members of many groups (the parity tests);
 *                  and regex (KIP-848 only: the topics the broker matches to this RE2J pattern,
 *                  in place of topic)
 *   stop NAME      graceful close: commit, revoke, leave the group
 *   kill NAME      close without leaving (REMAIN_IN_GROUP): the coordinator notices only when the
 *                  session expires, as after a crash (the close still commits, a crash would not)
 *   describe ID G.. answer one line {"ev":"described","id":ID,"groups":{...}}: Kafka's view of
 *                  groups G.. through its AdminClient (AdminView)
 *   quit           stop every consumer gracefully, then exit
 *
 * Every line has "t" (epoch ms), "c" (consumer name) and "ev". Events: subscribed, joined (the first
 * poll that sees a generation or member epoch), revoked,
 * assigned, lost (with "gen", the generation or KIP-848 member epoch the consumer had, "member",
 * and "parts"), reconciled (the first poll after the consumer's rebalance-total grew: "count" the
 * rebalances completed since the previous poll, "latency_ms" the rebalance-latency-total they
 * added), heartbeat (the first poll after heartbeat-total grew: "count" the responses since the
 * previous poll, "max_ms" heartbeat-response-time-max then, at least the time any of them took
 * from request to response), rejoining (classic: the first poll after the consumer began to rejoin,
 * "sent_by_ms" no later than the offset commit it sends first, "exact" whether that is the very
 * moment it began; see Member.rejoining), closing, closed, and every --sample-ms a "sample" with
 * the coordinator metrics and per-partition processing figures since the previous sample (reset
 * after each).
 */
public final class ClientHarness {
    private static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    // The consumer's own view of its rebalances, as exposed in consumer.metrics().
    private static final String COORDINATOR_GROUP = "consumer-coordinator-metrics";
    private static final List<String> COORDINATOR_METRICS = List.of(
            "rebalance-latency-avg", "rebalance-latency-max", "rebalance-latency-total",
            "rebalance-total", "last-rebalance-seconds-ago", "assigned-partitions",
            "failed-rebalance-total");

    private final Map<String, String> options;
    private final Map<String, Member> members = new ConcurrentHashMap<>();
    private AdminView adminView;  // made at the first describe

    private ClientHarness(Map<String, String> options) {
        this.options = options;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            options.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        // topic and group may instead come with each `add` (see the class comment).
        for (String required : List.of("bootstrap")) {
            if (!options.containsKey(required)) {
                System.err.println("usage: ClientHarness --bootstrap H:P [--topic T --group G] [--protocol classic|consumer]"
                        + " [--assignor A] [--static true] [--session-ms N] [--heartbeat-ms N]"
                        + " [--auto-commit-ms N] [--max-poll-records N] [--max-poll-interval-ms N]"
                        + " [--sample-ms N] [--slow-ms N]");
                System.exit(2);
            }
        }
        new ClientHarness(options).readCommands();
    }

    private void readCommands() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        emit("harness", "ready", "");
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split("\\s+");
            if (words.length == 0 || words[0].isEmpty()) continue;
            if (words[0].equals("quit")) break;
            if (words.length < 2) continue;
            String name = words[1];
            switch (words[0]) {
                case "add" -> members.computeIfAbsent(name, n -> new Member(n, withOverrides(words))).start();
                case "describe" -> describe(name, List.of(words).subList(2, words.length));
                case "stop" -> retire(name, false);
                case "kill" -> retire(name, true);
                default -> emit("harness", "unknown-command", ",\"line\":" + quote(line));
            }
        }
        // End of input or quit: every consumer leaves, so the JVM exits on its own.
        List<Member> left = new ArrayList<>(members.values());
        left.forEach(m -> m.stop(false));
        for (Member m : left) m.thread.join(60_000);
        if (adminView != null) adminView.close();
        emit("harness", "exit", "");
        OUT.flush();
        System.exit(0);
    }

    /** The command line's options, with `add NAME k=v ...`'s settings for this consumer on top. */
    private Map<String, String> withOverrides(String[] words) {
        Map<String, String> own = new HashMap<>(options);
        for (int i = 2; i < words.length; i++) {
            String[] kv = words[i].split("=", 2);
            if (kv.length == 2) own.put(kv[0], kv[1]);
        }
        if (own.containsKey("instance")) {
            own.put("static", "false");  // the named instance id wins over --static's
        }
        return own;
    }

    private void describe(String id, List<String> groups) {
        try {
            if (adminView == null) adminView = new AdminView(options.get("bootstrap"));
            String view = adminView.describe(groups);
            emit("harness", "described", ",\"id\":" + quote(id) + ",\"groups\":" + view);
        } catch (Exception e) {  // the driver sees the error and asks again
            emit("harness", "described", ",\"id\":" + quote(id) + ",\"error\":" + quote(e.toString()));
        }
    }

    private void retire(String name, boolean abrupt) {
        Member m = members.remove(name);
        // No join: a command to stop fifty consumers stops them together, as a scale-down does.
        // Each reports "closed" when done; the driver waits for that before reusing the name.
        if (m != null) m.stop(abrupt);
    }

    /** One consumer and the thread that polls it. */
    private static final class Member implements ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final Thread thread;
        final String topic;
        final String regex;
        final long sampleMs;
        final long slowMs;
        volatile boolean abrupt;
        volatile boolean stopping;
        boolean joined;
        int lastGeneration = -1;   // the generation / member epoch last seen by poll()
        // rebalance-total and rebalance-latency-total as last read (the "reconciled" events)
        Metric rebalances, rebalanceLatency;
        double lastRebalances, lastRebalanceLatency;
        // heartbeat-total and heartbeat-response-time-max (the "heartbeat" events)
        Metric heartbeats, heartbeatMax;
        double lastHeartbeats;
        // Classic only: the consumer's ConsumerCoordinator and the two fields that tell it is
        // rejoining (the "rejoining" events); unreadable (KIP-848, another kafka-clients) = none.
        Object coordinator;
        Field joinPrepareTimer, lastRebalanceStartMs;
        boolean rejoinUnreadable, wasRejoining;
        // partition -> {messages, waited > slowMs, max wait ms, first and last processing ms}
        final Map<Integer, long[]> window = new TreeMap<>();

        Member(String name, Map<String, String> options) {
            this.name = name;
            this.topic = options.get("topic");
            this.regex = options.get("regex");
            this.sampleMs = Long.parseLong(options.getOrDefault("sample-ms", "1000"));
            this.slowMs = Long.parseLong(options.getOrDefault("slow-ms", "3000"));
            this.consumer = new KafkaConsumer<>(config(name, options));
            this.thread = new Thread(this::run, "consumer-" + name);
        }

        static Properties config(String name, Map<String, String> o) {
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, o.get("bootstrap"));
            p.put(ConsumerConfig.GROUP_ID_CONFIG, o.get("group"));
            // client.id is how groupscope's member list (client_id) is matched to our names.
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true");
            p.put(ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, o.getOrDefault("auto-commit-ms", "5000"));
            p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, o.getOrDefault("max-poll-records", "500"));
            p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, o.getOrDefault("max-poll-interval-ms", "300000"));
            String protocol = o.getOrDefault("protocol", "classic");
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
            String assignor = o.get("assignor");
            if (protocol.equals("classic")) {
                // The consumer protocol takes these from the broker; the client rejects them there.
                p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, o.getOrDefault("session-ms", "45000"));
                p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, o.getOrDefault("heartbeat-ms", "3000"));
                if (assignor != null) p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, classicAssignor(assignor));
            } else if (assignor != null) {
                p.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignor);
            }
            if (Boolean.parseBoolean(o.getOrDefault("static", "false"))) {
                p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, name);
            } else if (o.containsKey("instance")) {
                p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, o.get("instance"));
            }
            return p;
        }

        static String classicAssignor(String shortName) {
            return switch (shortName) {
                case "range" -> "org.apache.kafka.clients.consumer.RangeAssignor";
                case "roundrobin" -> "org.apache.kafka.clients.consumer.RoundRobinAssignor";
                case "sticky" -> "org.apache.kafka.clients.consumer.StickyAssignor";
                case "cooperative-sticky" -> "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
                default -> shortName;  // a class name
            };
        }

        /** A broker-side regular expression (KIP-848): the coordinator resolves it and keeps it
         *  as a record of its own. Its own method, so that Kafka 3.9's clients (which lack
         *  SubscriptionPattern) never load the class. */
        void subscribeToPattern() {
            consumer.subscribe(new org.apache.kafka.clients.consumer.SubscriptionPattern(regex), this);
        }

        void start() {
            if (!thread.isAlive() && !stopping) thread.start();
        }

        void stop(boolean abrupt) {
            this.abrupt = abrupt;
            stopping = true;
            consumer.wakeup();  // the one consumer method that is safe from another thread
        }

        void run() {
            if (regex != null) {
                subscribeToPattern();
            } else {
                consumer.subscribe(List.of(topic), this);
            }
            emit(name, "subscribed", "");
            long nextSample = System.currentTimeMillis() + sampleMs;
            try {
                while (!stopping) {
                    long pollStart = System.currentTimeMillis();  // a rejoin begun in this poll began after it
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                        process(r);
                    }
                    // The first poll that sees a generation / member epoch: the join as this
                    // consumer saw it (KIP-848 has no join phase that a callback would mark).
                    int gen = generation();
                    if (!joined && gen > 0) {
                        joined = true;
                        emit(name, "joined", ",\"gen\":" + gen);
                    } else if (joined && gen > 0 && gen != lastGeneration) {
                        // A KIP-848 member moves to a new epoch without a callback when its
                        // partitions stay the same: this is how it sees that step.
                        emit(name, "epoch", ",\"gen\":" + gen);
                    }
                    if (gen > 0) lastGeneration = gen;
                    rejoining(pollStart);  // before reconciled(), which takes in rebalance-total's growth
                    reconciled(gen);
                    long now = System.currentTimeMillis();
                    if (now >= nextSample) {
                        sample();
                        nextSample = now + sampleMs;
                    }
                }
            } catch (WakeupException e) {
                // stop() woke the poll: fall through to close
            } catch (RuntimeException e) {
                emit(name, "error", ",\"error\":" + quote(e.toString()));
            }
            sample();
            emit(name, "closing", ",\"abrupt\":" + abrupt);
            try {
                if (abrupt) {
                    closeRemainingInGroup();
                } else {
                    // close(Duration), not CloseOptions (4.1+): the same harness also runs on
                    // Kafka 3.9's kafka-clients (tests/support/parity_clients.py).
                    consumer.close(Duration.ofSeconds(30));
                }
            } catch (RuntimeException e) {
                emit(name, "error", ",\"error\":" + quote(e.toString()));
            }
            emit(name, "closed", "");
        }

        /** Only on kafka-clients 4.1+, where CloseOptions exists. */
        void closeRemainingInGroup() {
            consumer.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP)
                    .withTimeout(Duration.ofSeconds(30)));
        }

        void process(ConsumerRecord<byte[], byte[]> r) {
            long now = System.currentTimeMillis();
            long wait = now - r.timestamp();  // produced on this machine: same clock
            long[] s = window.computeIfAbsent(r.partition(), p -> new long[] {0, 0, 0, now, now});
            s[0]++;
            if (wait > slowMs) s[1]++;
            s[2] = Math.max(s[2], wait);
            s[4] = now;
        }

        /** A "reconciled" event when rebalance-total grew since the previous poll: a KIP-848
         *  consumer measures each reconciliation from the heartbeat response that carried the
         *  new assignment (RECONCILING) to its callbacks' completion, so the latency it adds
         *  dates that response, which no callback does. */
        void reconciled(int gen) {
            if (rebalances == null || rebalanceLatency == null || heartbeats == null || heartbeatMax == null) {
                for (Map.Entry<MetricName, ? extends Metric> e : consumer.metrics().entrySet()) {
                    if (!e.getKey().group().equals(COORDINATOR_GROUP)) continue;
                    switch (e.getKey().name()) {
                        case "rebalance-total" -> rebalances = e.getValue();
                        case "rebalance-latency-total" -> rebalanceLatency = e.getValue();
                        case "heartbeat-total" -> heartbeats = e.getValue();
                        case "heartbeat-response-time-max" -> heartbeatMax = e.getValue();
                        default -> { }
                    }
                }
                if (rebalances == null || rebalanceLatency == null || heartbeats == null || heartbeatMax == null) return;
            }
            // A heartbeat's span, request to response, holds the moment the coordinator wrote
            // what it answered: the tests bound the coordinator's times with it.
            double beats = ((Number) heartbeats.metricValue()).doubleValue();
            double beatMax = ((Number) heartbeatMax.metricValue()).doubleValue();
            if (beats > lastHeartbeats && !Double.isNaN(beatMax) && !Double.isInfinite(beatMax)) {
                emit(name, "heartbeat", ",\"count\":" + (long) (beats - lastHeartbeats)
                        + ",\"max_ms\":" + (long) Math.ceil(beatMax));
                lastHeartbeats = beats;
            }
            double count = ((Number) rebalances.metricValue()).doubleValue();
            double latency = ((Number) rebalanceLatency.metricValue()).doubleValue();
            if (count > lastRebalances) {
                emit(name, "reconciled", ",\"gen\":" + gen + ",\"count\":" + (long) (count - lastRebalances)
                        + ",\"latency_ms\":" + (long) (latency - lastRebalanceLatency));
            }
            lastRebalances = count;
            lastRebalanceLatency = latency;
        }

        /** A "rejoining" event at the first poll that finds a classic consumer rejoining the group.
         *  ConsumerCoordinator.onJoinPrepare starts its joinPrepareTimer and then, with auto-commit,
         *  sends the commit of everything consumed (the first trace of the rejoin in
         *  __consumer_offsets); only once that commit is answered does the JoinGroup go out, and
         *  the consumer's rebalance latency starts there (AbstractCoordinator.initiateJoinGroup).
         *  So "sent_by_ms" is no later than that commit's request: the timer's start when this poll
         *  finds the commit still unanswered and nothing else of the rejoin happened yet ("exact"),
         *  else the start of this poll call (the previous poll found no rejoin, so it began within
         *  this one; a timer found now may be a later rejoin's: a cooperative member's second one
         *  once its first rebalance completed in this poll, or a retry's after a failed JoinGroup).
         *  Read by reflection, on the consumer's own thread, which is the one that writes
         *  joinPrepareTimer. */
        void rejoining(long pollStart) {
            if (rejoinUnreadable) return;
            try {
                if (coordinator == null) {
                    Object delegate = field(KafkaConsumer.class, "delegate").get(consumer);
                    Object c = field(delegate.getClass(), "coordinator").get(delegate);  // ClassicKafkaConsumer's
                    if (c == null) throw new NoSuchFieldException("coordinator is null: no group");
                    joinPrepareTimer = field(c.getClass(), "joinPrepareTimer");
                    lastRebalanceStartMs = field(c.getClass(), "lastRebalanceStartMs");
                    coordinator = c;
                }
                Timer prepare = (Timer) joinPrepareTimer.get(coordinator);
                // -1 but from the JoinGroup until the rebalance completes
                boolean joining = lastRebalanceStartMs.getLong(coordinator) != -1L;
                // A whole rebalance within this poll leaves neither set: rebalance-total tells.
                boolean completed = rebalances != null
                        && ((Number) rebalances.metricValue()).doubleValue() > lastRebalances;
                boolean inProgress = prepare != null || joining;
                if ((inProgress || completed) && !wasRejoining) {
                    // lastRebalanceStartMs stays set from the first JoinGroup through retries, and
                    // is cleared only when a rebalance completes: either means an earlier step.
                    boolean exact = prepare != null && !joining && !completed;
                    long by = exact ? prepare.currentTimeMs() - prepare.elapsedMs() : pollStart;
                    emit(name, "rejoining", ",\"gen\":" + lastGeneration + ",\"sent_by_ms\":" + by
                            + ",\"exact\":" + exact);
                }
                wasRejoining = inProgress;
            } catch (ReflectiveOperationException | RuntimeException e) {
                // KIP-848's consumer has no ConsumerCoordinator; another kafka-clients may name
                // these fields otherwise: no "rejoining" events then, the tests fall back.
                rejoinUnreadable = true;
            }
        }

        /** A declared field of `type` or of a superclass, made accessible (kafka-clients sits on
         *  the class path, not in a named module, so no --add-opens is needed). */
        static Field field(Class<?> type, String name) throws NoSuchFieldException {
            for (Class<?> t = type; t != null; t = t.getSuperclass()) {
                try {
                    Field f = t.getDeclaredField(name);
                    f.setAccessible(true);
                    return f;
                } catch (NoSuchFieldException e) {
                    // look in the superclass
                }
            }
            throw new NoSuchFieldException(type.getName() + "." + name);
        }

        void sample() {
            StringBuilder b = new StringBuilder(",\"gen\":").append(generation()).append(",\"metrics\":{");
            String sep = "";
            for (Map.Entry<MetricName, ? extends Metric> e : consumer.metrics().entrySet()) {
                MetricName m = e.getKey();
                if (!m.group().equals(COORDINATOR_GROUP) || !COORDINATOR_METRICS.contains(m.name())) continue;
                Object v = e.getValue().metricValue();
                if (!(v instanceof Number n) || Double.isNaN(n.doubleValue()) || Double.isInfinite(n.doubleValue())) continue;
                b.append(sep).append(quote(m.name())).append(':').append(n.doubleValue());
                sep = ",";
            }
            b.append("},\"parts\":{");
            sep = "";
            for (Map.Entry<Integer, long[]> e : window.entrySet()) {
                long[] s = e.getValue();
                b.append(sep).append('"').append(e.getKey()).append("\":[")
                        .append(s[0]).append(',').append(s[1]).append(',').append(s[2]).append(',')
                        .append(s[3]).append(',').append(s[4]).append(']');
                sep = ",";
            }
            window.clear();
            emit(name, "sample", b.append('}').toString());
        }

        int generation() {
            try {
                return consumer.groupMetadata().generationId();
            } catch (RuntimeException e) {  // not in a group (yet, or any more)
                return -1;
            }
        }

        void callback(String event, Collection<TopicPartition> partitions) {
            StringBuilder b = new StringBuilder(",\"gen\":").append(generation())
                    .append(",\"member\":").append(quote(consumer.groupMetadata().memberId()))
                    .append(",\"parts\":[");
            String sep = "";
            for (TopicPartition tp : partitions) {
                b.append(sep).append(tp.partition());
                sep = ",";
            }
            emit(name, event, b.append(']').toString());
        }

        @Override public void onPartitionsRevoked(Collection<TopicPartition> partitions) { callback("revoked", partitions); }
        @Override public void onPartitionsAssigned(Collection<TopicPartition> partitions) { callback("assigned", partitions); }
        @Override public void onPartitionsLost(Collection<TopicPartition> partitions) { callback("lost", partitions); }
    }

    /** One JSON line; `rest` is either empty or starts with a comma. */
    static void emit(String consumer, String event, String rest) {
        String line = "{\"t\":" + System.currentTimeMillis() + ",\"c\":" + quote(consumer) + ",\"ev\":\"" + event + "\"" + rest + "}";
        synchronized (OUT) {
            OUT.println(line);
            OUT.flush();
        }
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') b.append('\\').append(ch);
            else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
            else b.append(ch);
        }
        return b.append('"').toString();
    }
}
