"""Streaming sources of `__consumer_offsets` records, all with Spark's Kafka source schema
(`records.KAFKA_SCHEMA`). `build_source` picks one by `source.type` in the configuration, and
with `decoded` gives the job's first stage instead: groupscope's own sources decode inside their
read tasks (streaming.sources.in_task_decode), Spark's Kafka source is followed by a mapInArrow.

Rows of one micro-batch come from several Spark tasks (a partition's backlog may even be split
into several ranges), so consumers that need log order must order by (partition, offset).
"""
from __future__ import annotations

from typing import Callable

from pyspark.sql import DataFrame, SparkSession

from streaming.errors import UserError
from streaming.sources.builtin_kafka import builtin_kafka_stream
from streaming.sources.in_task_decode import DECODED_FORMATS
from streaming.sources.kafka_options import parse_options, spark_kafka_options
from streaming.sources.kafka_stream import FORMAT as KAFKA_FORMAT, KafkaDataSource
from streaming.kafka.records import KAFKA_SCHEMA
from streaming.sources.replay import FORMAT as REPLAY_FORMAT, ReplayDataSource

__all__ = ["KAFKA_SCHEMA", "build_source", "register_sources"]


def register_sources(spark: SparkSession) -> None:
    """Make `groupscope-kafka` and `groupscope-replay`, raw and decoded, known to this session."""
    for source in (KafkaDataSource, ReplayDataSource, *DECODED_FORMATS.values()):
        spark.dataSource.register(source)


def _format(raw_format: str, decoded: bool) -> str:
    return DECODED_FORMATS[raw_format].format_name if decoded else raw_format


def _groupscope_kafka(spark: SparkSession, source, decoded: bool = False) -> DataFrame:
    if source.client == "confluent":
        try:
            import confluent_kafka  # noqa: F401
        except ImportError:
            raise UserError("source.client confluent needs confluent-kafka: "
                            "pip install 'groupscope[fast]'") from None
    try:  # fail here, in one line, rather than inside Spark's Python planner
        options = {**spark_kafka_options(source), "client": source.client}
        parsed = parse_options(options)
        if parsed.client == "kafka-python":
            parsed.kafka_python_config()
    except ValueError as exc:
        raise UserError(f"source: {exc}") from None
    register_sources(spark)
    return spark.readStream.format(_format(KAFKA_FORMAT, decoded)).options(**options).load()


def _replay(spark: SparkSession, source, decoded: bool = False) -> DataFrame:
    import os

    if not source.replay_path or not os.path.isfile(source.replay_path):
        raise UserError(f"source.replay_path: capture file {source.replay_path!r} not found")
    register_sources(spark)
    reader = spark.readStream.format(_format(REPLAY_FORMAT, decoded)).option("path",
                                                                              source.replay_path)
    if source.max_records_per_trigger:
        reader = reader.option("maxRecordsPerTrigger", str(source.max_records_per_trigger))
    return reader.load()


BUILDERS: dict[str, Callable[..., DataFrame]] = {
    "kafka-python": _groupscope_kafka,
    "kafka": builtin_kafka_stream,
    "replay": _replay,
}
# The builders whose sources can decode in their read tasks (`decoded=True`).
DECODING_BUILDERS = frozenset({_groupscope_kafka, _replay})


def build_source(spark: SparkSession, config, decoded: bool = False) -> DataFrame:
    """The streaming DataFrame of `config.source` (a streaming.config.Config): Spark's Kafka
    schema, or with `decoded` the decode stage's rows (streaming.pipeline.decode_stage.STAGE_DDL)."""
    builder = BUILDERS.get(config.source.type)
    if builder is None:
        raise UserError(f"config key source.type: {config.source.type!r} is not one of "
                        f"{', '.join(BUILDERS)}")
    if decoded and builder in DECODING_BUILDERS:
        return builder(spark, config.source, decoded=True)
    frame = builder(spark, config.source)
    if not decoded:
        return frame
    from streaming.pipeline.decode_stage import decoded_stream  # numpy and the decoder: only here

    return decoded_stream(frame)
