"""The job's SparkSession: the settings it runs with, and how it is built.

Under spark-submit the session already exists and its master wins; `spark.master` only applies
to `groupscope run`. Local-mode speed-ups are applied here and nowhere else, through
`streaming.localmode.tuning.tuned_session` (config key `spark.local_tuning`).
"""
from __future__ import annotations

import os
import re
import sys
from typing import Mapping

from streaming.config import Config


def job_spark_conf(master: str | None) -> dict[str, str]:
    """The Spark settings the job runs with in any mode (`spark.conf` in the config overrides
    any)."""
    return {
        "spark.sql.shuffle.partitions": str(state_partitions(master)),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # After Spark's own Kafka source the decode stage (a mapInArrow) drops superseded commits
        # within each Arrow batch it gets, so bigger batches leave fewer rows to shuffle (1M
        # commits: 60,000 records/s against 54,000 with Spark's 10,000). Our own sources decode
        # whole read tasks and are not affected.
        "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        # Each commit writes the batch's changes instead of uploading new SST files; snapshots
        # are taken in the background. Latency at 5,000 commits/s: p50 3.3 s against 4.7 s.
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.ui.showConsoleProgress": "false",
        # Spark turns adaptive execution off for every streaming query anyway, and says so in
        # two warnings at each start.
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        # Python workers connect back to the JVM; on a busy machine the default 15 s is not
        # always enough.
        "spark.python.authenticate.socketTimeout": "120s",
    }


def state_partitions(master: str | None) -> int:
    """Partitions of the group state (`spark.sql.shuffle.partitions`) unless `spark.conf` says.

    Each partition costs a state-store commit and a Python task per micro-batch whatever its
    size, so in local mode there is one per core (local[2]: 2 measured 52,000 records/s against
    44,000 with 4, and half the latency). A checkpoint keeps the number it was started with.
    """
    match = re.fullmatch(r"local\[(\d+|\*)(?:,\s*\d+)?\]", master or "")
    if match:
        return (os.cpu_count() or 2) if match.group(1) == "*" else max(1, int(match.group(1)))
    return 1 if master == "local" else 4


LOG_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")


def with_log_config(spark_conf: Mapping[str, str]) -> dict[str, str]:
    """`spark_conf` with groupscope's log settings for the driver JVM, unless the user's JVM
    options already name a log4j2 configuration."""
    user = spark_conf.get("spark.driver.extraJavaOptions", "")
    if "log4j2.configurationFile" in user:
        return dict(spark_conf)
    option = f"-Dlog4j2.configurationFile=file:{LOG_CONFIG}"
    return {**spark_conf, "spark.driver.extraJavaOptions": f"{option} {user}".strip()}


def _submitted() -> bool:
    return bool(os.environ.get("SPARK_ENV_LOADED"))  # set by spark-submit's scripts


def local_tuning_applies(config: Config) -> bool:
    """Whether the job launches Spark itself with a `local[...]` master and `spark.local_tuning`
    is `auto`: the one switch of every local-mode speed-up (streaming/localmode/README.md)."""
    return (bool(config.spark.master) and not _submitted()
            and config.spark.master.startswith("local") and config.spark.local_tuning == "auto")


def submitted_master() -> str | None:
    """The master spark-submit was given (its JVM, already running, holds it)."""
    from pyspark import SparkConf

    return SparkConf().get("spark.master", None)


def build_spark(config: Config, extra_conf: dict[str, str] | None = None):
    """A SparkSession for the job; `extra_conf` goes after the job's settings and before the
    user's `spark.conf`."""
    from pyspark.sql import SparkSession

    submitted = _submitted()
    own_master = bool(config.spark.master) and not submitted
    local = own_master and config.spark.master.startswith("local")
    # The settings follow the master the job runs on: under spark-submit, its --master.
    master = submitted_master() if submitted else config.spark.master
    if local:
        # Everything of a local-mode job runs on this host: Spark binds to loopback instead of
        # searching the interfaces (and warning when the host name resolves to loopback).
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(config.spark.app_name)
    for key, value in {**job_spark_conf(master), **(extra_conf or {})}.items():
        builder = builder.config(key, value)
    if own_master:
        builder = builder.master(config.spark.master)
    # This process launches the driver JVM unless spark-submit did: its log settings are ours.
    user_conf = with_log_config(config.spark.conf) if own_master else dict(config.spark.conf)
    if local_tuning_applies(config):
        from streaming.localmode.tuning import tuned_session

        spark = tuned_session(builder, user_conf, config.checkpoint.path)
    else:
        # Python workers must run this interpreter, the one with groupscope installed.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        for key, value in user_conf.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
