#!/bin/bash
# Steady producers on every topic, plus a burst on `orders` every ten minutes (lag that drains).
source "$(dirname "$0")/common.sh"
wait_for_kafka

produce() {  # topic, messages per second
  while true; do
    "$KAFKA_BIN/kafka-producer-perf-test.sh" --topic "$1" --num-records $(( $2 * 300 )) \
      --record-size 200 --throughput "$2" \
      --producer-props bootstrap.servers="$BOOTSTRAP" linger.ms=20 >/dev/null
  done
}

produce orders 300 &
produce payments 50 &
produce clicks 400 &
while true; do
  sleep 600
  log "burst: 120000 messages on orders"
  "$KAFKA_BIN/kafka-producer-perf-test.sh" --topic orders --num-records 120000 --record-size 200 \
    --throughput 4000 --producer-props bootstrap.servers="$BOOTSTRAP" >/dev/null
done
