#!/bin/bash
# Demo consumer groups, one per assignor, all on `orders` so the Rebalances dashboard compares
# them on the same workload: range, roundrobin, cooperative-sticky (classic protocol) and the
# KIP-848 consumer protocol (server-side assignor). Every few minutes a member is added to each
# group, then one is stopped (alternately cleanly and with kill -9, which waits for the session
# timeout), so every group keeps rebalancing. Plus a static member and a slow group.
source "$(dirname "$0")/common.sh"
wait_for_kafka
STEP_SECONDS="${STEP_SECONDS:-120}"
SLOW_PAUSE_SECONDS="${SLOW_PAUSE_SECONDS:-90}"   # demo-slow's time away between visits
declare -A MEMBERS   # group -> space-separated pids, oldest first

start_member() {  # group, topic, extra kafka-console-consumer arguments...
  local group=$1 topic=$2
  shift 2
  "$KAFKA_BIN/kafka-console-consumer.sh" --bootstrap-server "$BOOTSTRAP" --topic "$topic" \
    --group "$group" "$@" >/dev/null 2>&1 &
  MEMBERS[$group]="${MEMBERS[$group]:-} $!"
  log "$group: member $! joined"
}

classic_member() {  # group, assignor class (org.apache.kafka.clients.consumer.*)
  start_member "$1" orders --consumer-property \
    "partition.assignment.strategy=org.apache.kafka.clients.consumer.$2"
}

kip848_member() {
  start_member "$1" orders --consumer-property group.protocol=consumer
}

add_member() {
  case "$1" in
    demo-range) classic_member demo-range RangeAssignor ;;
    demo-roundrobin) classic_member demo-roundrobin RoundRobinAssignor ;;
    demo-cooperative-sticky) classic_member demo-cooperative-sticky CooperativeStickyAssignor ;;
    demo-consumer-protocol) kip848_member demo-consumer-protocol ;;
  esac
}

stop_oldest() {  # group, signal
  local pids=(${MEMBERS[$1]})
  [ "${#pids[@]}" -gt 1 ] || return 0
  kill "-$2" "${pids[0]}" 2>/dev/null || true
  MEMBERS[$1]="${pids[*]:1}"
  log "$1: member ${pids[0]} stopped with SIG$2"
}

slow_group() {  # reads 500 messages, leaves, comes back later: lag, rebalances, retention loss
  while true; do
    "$KAFKA_BIN/kafka-console-consumer.sh" --bootstrap-server "$BOOTSTRAP" --topic clicks \
      --group demo-slow --max-messages 500 >/dev/null 2>&1 || true
    sleep "$SLOW_PAUSE_SECONDS"
  done
}

GROUPS_ON_ORDERS=(demo-range demo-roundrobin demo-cooperative-sticky demo-consumer-protocol)
for group in "${GROUPS_ON_ORDERS[@]}"; do
  add_member "$group"
  add_member "$group"
done
start_member demo-static payments --consumer-property group.instance.id=demo-static-1
slow_group &

round=0
while true; do
  sleep "$STEP_SECONDS"
  round=$((round + 1))
  for group in "${GROUPS_ON_ORDERS[@]}"; do add_member "$group"; done
  sleep "$STEP_SECONDS"
  signal=$([ $((round % 2)) -eq 0 ] && echo TERM || echo KILL)
  for group in "${GROUPS_ON_ORDERS[@]}"; do stop_oldest "$group" "$signal"; done
done
