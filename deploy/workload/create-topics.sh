#!/bin/bash
# Creates the demo topics. `clicks` keeps only two minutes of data, so the slow group on it loses
# messages to retention (KafkaConsumerGroupMessagesLost).
source "$(dirname "$0")/common.sh"
wait_for_kafka
create() {
  "$KAFKA_BIN/kafka-topics.sh" --bootstrap-server "$BOOTSTRAP" --create --if-not-exists \
    --replication-factor 1 --topic "$@"
}
create orders --partitions 12
create payments --partitions 6
create clicks --partitions 6 --config retention.ms=120000 --config segment.ms=20000
log "topics ready"
