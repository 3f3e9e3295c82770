"""Spark's own Kafka source (`format("kafka")`), fed the same settings as groupscope's source.

It lives in the separate spark-sql-kafka package; without it Spark fails with a long
AnalysisException, translated here into one line that says what to add.
"""
from __future__ import annotations

import pyspark
from pyspark.sql import DataFrame, SparkSession

from streaming.errors import UserError
from streaming.sources.kafka_options import spark_kafka_options
from streaming.kafka.records import KAFKA_SCHEMA

SCALA_VERSION = "2.13"
# Spark's default offset lookup for its Kafka source (through Kafka's admin client) finds no
# partition of `__consumer_offsets`: on a real Kafka 4.4 broker a query over it read 0 records
# in every micro-batch (Spark 4.2's connector; tests/broker/test_spark_kafka_source.py). The
# consumer-based lookup this setting selects finds all 50.
CONSUMER_OFFSET_LOOKUP = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"


def kafka_package() -> str:
    return f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_VERSION}:{pyspark.__version__}"


def missing_package_message() -> str:
    return (f"source.type kafka needs Spark's Kafka connector, which is not on the classpath: "
            f"put its jars in spark.jars in spark.conf (scripts/fetch-jvm-deps.sh fetches them "
            f"into .cache/spark-kafka-{pyspark.__version__}/jars), or start Spark with "
            f"--packages {kafka_package()} (or spark.jars.packages in spark.conf), or use "
            f"source.type kafka-python")


def _is_missing_kafka(exc: Exception) -> bool:
    text = str(exc)
    condition = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    name = condition() if callable(condition) else None
    return name == "DATA_SOURCE_NOT_FOUND" or "Failed to find data source: kafka" in text


def builtin_kafka_stream(spark: SparkSession, source) -> DataFrame:
    """`source` is a streaming.config.SourceConfig."""
    try:
        options = spark_kafka_options(source, java=True)
    except ValueError as exc:  # a client setting that cannot be used, named
        raise UserError(f"source: {exc}") from None
    if spark.conf.get(CONSUMER_OFFSET_LOOKUP, None) is None:  # unless the user chose
        spark.conf.set(CONSUMER_OFFSET_LOOKUP, "true")
    try:
        frame = spark.readStream.format("kafka").options(**options).load()
    except Exception as exc:
        if _is_missing_kafka(exc):
            raise UserError(missing_package_message()) from None
        raise
    return frame.select(*KAFKA_SCHEMA.fieldNames())
