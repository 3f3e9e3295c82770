#!/bin/bash
# Shared by the workload scripts; they run in the apache/kafka image (CLI tools in /opt/kafka/bin).
set -euo pipefail
BOOTSTRAP="${BOOTSTRAP:-kafka:9092}"
KAFKA_BIN="${KAFKA_BIN:-/opt/kafka/bin}"

log() { echo "$(date -u +%H:%M:%S) $*"; }

wait_for_kafka() {
  until "$KAFKA_BIN/kafka-broker-api-versions.sh" --bootstrap-server "$BOOTSTRAP" >/dev/null 2>&1; do
    log "waiting for Kafka at $BOOTSTRAP"
    sleep 3
  done
}
