import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;

/**
 * The smallest Kafka Streams application on the KIP-1071 streams rebalance protocol
 * (group.protocol=streams), for tests/broker/test_share_streams_groups.py: copies `in` to `out`
 * upper-cased. Arguments: bootstrap, application id, input topic, output topic. It prints
 * "state RUNNING" (and every other state change) on stdout and stops cleanly on SIGTERM.
 * Compiled at test time against the broker's own jars (tests/support/streams_app.py).
 */
public final class StreamsApp {
    public static void main(String[] args) throws InterruptedException {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "500");
        props.put(StreamsConfig.STATE_DIR_CONFIG, args.length > 4 ? args[4] : System.getProperty("java.io.tmpdir"));
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(args[2]).mapValues(v -> v == null ? null : v.toUpperCase()).to(args[3]);
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("state " + now);
            System.out.flush();
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            stopped.countDown();
        }));
        streams.start();
        stopped.await();
    }
}
