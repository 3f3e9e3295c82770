"""Kafka's command-line scripts (`kafka-topics.sh`, `kafka-console-consumer.sh`, ...) without a
Kafka installation: thin wrappers, generated into a directory, that run the tool class each script
of Kafka 4.4's `bin/` runs, on the test broker's jars (.cache/kafka-<version>/libs). Shell code
written for the Kafka image (deploy/workload/*.sh, `$KAFKA_BIN/<script>`) then runs unchanged.

Each wrapper `exec`s java, so the pid a script gets for a backgrounded tool (`$!`) is the JVM's
own and `kill -9 $!` crashes the client, as it would in the image.
"""
from __future__ import annotations

import shlex
from pathlib import Path

from streaming.localmode.jvm_class_cache import mapped
from tests.support.jvm_archives import candidates
from tests.support.kafka_broker import JVM_FAST, TOOL_HEAP, KafkaBroker

# Script name -> the main class Kafka 4.4's bin/ script runs (bin/<script> -> kafka-run-class.sh).
SCRIPT_CLASSES: dict[str, str] = {
    "kafka-broker-api-versions.sh": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-topics.sh": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer.sh": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer.sh": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-share-consumer.sh": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-consumer-groups.sh": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-share-groups.sh": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-streams-groups.sh": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "kafka-producer-perf-test.sh": "org.apache.kafka.tools.ProducerPerformance",
}


def write_cli_scripts(broker: KafkaBroker, bin_dir: Path, heap: list[str] | None = None) -> Path:
    """Writes one executable wrapper per entry of SCRIPT_CLASSES into `bin_dir` (created) and
    returns it: a `KAFKA_BIN` for the workload scripts, or a directory to put on PATH. `heap`
    replaces the tools' default heap flags (many clients at once want less each)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    jvm = [*JVM_FAST, *(TOOL_HEAP if heap is None else heap), broker._tool_log_config, "-cp", broker.libs]
    for script, main_class in SCRIPT_CLASSES.items():
        path = bin_dir / script
        # A backgrounded client may be killed: it maps a class archive, if one is there by the
        # time it starts, and never writes one (tests/support/jvm_archives.py).
        look = "".join(f'[ -f {shlex.quote(a)} ] && exec java {shlex.join([*mapped(a), *jvm])} '
                       f'{main_class} "$@"\n' for a in candidates(broker.libs, main_class))
        path.write_text(f'#!/bin/bash\n{look}exec java {shlex.join(jvm)} {main_class} "$@"\n')
        path.chmod(0o755)
    return bin_dir
