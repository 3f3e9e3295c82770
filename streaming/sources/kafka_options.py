"""Options of the `groupscope-kafka` source, read from Spark's (case-insensitive) option map.

Options named `kafka.<name>` go to the Kafka client untouched in meaning: for confluent-kafka
verbatim (librdkafka names, e.g. `kafka.sasl.mechanisms`), for kafka-python with dots turned into
underscores (`kafka.security.protocol` -> `security_protocol`, `kafka.ssl.cafile` -> `ssl_cafile`).
"""
from __future__ import annotations

import json

from dataclasses import dataclass, field
from typing import Mapping

from streaming.kafka.client_settings import (java_settings, kafka_python_settings,
                                             librdkafka_settings, resolve_secrets)
from streaming.kafka.offset_ranges import parse_starting_offsets
from streaming.kafka.range_reader import ReadSettings

CLIENTS = ("kafka-python", "confluent")
DEFAULT_TOPIC = "__consumer_offsets"

# Options the source itself understands (lower-cased, as Spark hands them over).
_OWN = {"topic", "subscribe", "assign", "startingoffsets", "maxrecordspertrigger", "maxoffsetspertrigger",
        "client", "recordspersplit", "recordspertask", "failondataloss", "fetchtimeoutms"}


@dataclass(frozen=True)
class KafkaSourceOptions:
    bootstrap_servers: str
    topic: str = DEFAULT_TOPIC
    starting_offsets: str = "earliest"
    max_records_per_trigger: int | None = None
    client: str = "kafka-python"
    records_per_split: int = 100_000  # a partition's range is cut into pieces of at most this
    # Pieces are packed into even Spark tasks of about this many records. Each task pays for a
    # Python worker round trip and a Kafka connection: a 1M-record catch-up in 2 tasks instead
    # of 12 took 3.24 s against 3.48 s (mean of 4 A/B pairs, later queries of a session).
    records_per_task: int = 500_000
    read: ReadSettings = ReadSettings()
    client_options: Mapping[str, str] = field(default_factory=dict)  # the `kafka.*` options, prefix cut
    partitions: tuple[int, ...] | None = None  # `assign`: these partitions only (None: all)

    @property
    def isolation_level(self) -> str:
        return self.client_options.get("isolation.level", "read_committed")

    def kafka_python_config(self) -> dict:
        """Keyword arguments for kafka-python's KafkaConsumer (streaming/kafka/client_settings.py
        reads Kafka's Java setting names as well as kafka-python's)."""
        from kafka import KafkaConsumer

        config = {"bootstrap_servers": self.bootstrap_servers.split(","),
                  "isolation_level": self.isolation_level,
                  # Fail fast on an unreachable broker: the callers retry with their own backoff.
                  "bootstrap_timeout_ms": 10_000}
        given = {name: value for name, value in self.client_options.items()
                 if name not in ("bootstrap.servers", "isolation.level")}
        config.update(kafka_python_settings(resolve_secrets(given), KafkaConsumer.DEFAULT_CONFIG))
        return config

    def confluent_config(self) -> dict:
        """librdkafka settings for confluent-kafka's Consumer / AdminClient."""
        config = librdkafka_settings(resolve_secrets(self.client_options))
        config["bootstrap.servers"] = self.bootstrap_servers
        config["isolation.level"] = self.isolation_level
        return config


def parse_options(options: Mapping[str, str]) -> KafkaSourceOptions:
    """Validate the source's options; raises ValueError naming the bad option."""
    opts = {k.lower(): v for k, v in options.items()}
    client_options = {k[len("kafka."):]: v for k, v in opts.items() if k.startswith("kafka.")}
    unknown = sorted(k for k in opts if k not in _OWN and not k.startswith("kafka."))
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)} for the groupscope-kafka source")
    bootstrap = client_options.get("bootstrap.servers") or ""
    if not bootstrap:
        raise ValueError("option kafka.bootstrap.servers is required")
    topic, partitions = _assigned(opts["assign"]) if "assign" in opts else (None, None)
    topic = topic or opts.get("topic") or opts.get("subscribe") or DEFAULT_TOPIC
    starting = opts.get("startingoffsets", "earliest")
    parse_starting_offsets(starting, topic)
    client = opts.get("client", "kafka-python")
    if client not in CLIENTS:
        raise ValueError(f"option client must be one of {', '.join(CLIENTS)}, got {client!r}")
    limit = opts.get("maxrecordspertrigger") or opts.get("maxoffsetspertrigger")
    return KafkaSourceOptions(
        bootstrap_servers=bootstrap,
        topic=topic,
        starting_offsets=starting,
        max_records_per_trigger=_positive("maxRecordsPerTrigger", limit) if limit else None,
        client=client,
        records_per_split=_positive("recordsPerSplit", opts.get("recordspersplit", "100000")),
        records_per_task=_positive("recordsPerTask", opts.get("recordspertask", "500000")),
        read=ReadSettings(
            timeout_s=_positive("fetchTimeoutMs", opts.get("fetchtimeoutms", "300000")) / 1000,
            fail_on_data_loss=str(opts.get("failondataloss", "false")).lower() == "true"),
        client_options=client_options,
        partitions=partitions,
    )


def _assigned(text: str) -> tuple[str, tuple[int, ...]]:
    """Spark's `assign` option, `{"<topic>": [0, 1]}`: one topic here."""
    try:
        parsed = json.loads(text)
        ((topic, partitions),) = parsed.items()
        if not partitions or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0
                                     for p in partitions):
            raise ValueError
    except (ValueError, AttributeError, TypeError):
        raise ValueError(f'option assign must be JSON {{"<topic>": [0, 1, ...]}} with one topic, '
                         f"got {text!r}") from None
    return topic, tuple(sorted(set(partitions)))


def _positive(name: str, text: str) -> int:
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise ValueError(f"option {name} must be a positive integer, got {text!r}") from None
    if value <= 0:
        raise ValueError(f"option {name} must be a positive integer, got {text!r}")
    return value


def spark_kafka_options(source, java: bool = False) -> dict[str, str]:
    """Options for a streaming.config.SourceConfig, named as Spark's own Kafka source names them;
    `groupscope-kafka` accepts the same names, so both sources are fed from here. Secrets named
    by reference are read here; with `java` (Spark's own source) the client settings are
    Kafka's Java ones (streaming/kafka/client_settings.py `java_settings`)."""
    options = {
        "kafka.bootstrap.servers": source.bootstrap_servers,
        **({"assign": json.dumps({source.topic: sorted(source.partitions)})} if source.partitions
           else {"subscribe": source.topic}),
        "startingOffsets": source.starting_offsets,
        "failOnDataLoss": "false",
        "kafka.isolation.level": "read_committed",
    }
    if source.max_records_per_trigger:
        options["maxOffsetsPerTrigger"] = str(source.max_records_per_trigger)
    settings = resolve_secrets(source.kafka)
    if java:
        settings = java_settings(settings)
    options.update({f"kafka.{name}": value for name, value in settings.items()})
    return options
