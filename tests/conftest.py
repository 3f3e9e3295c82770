"""Session-wide fixtures: one tansu broker and one local SparkSession for the whole test run.

Both are slow to start, so tests share them; each test uses its own topic names and checkpoint
directories so that they do not see each other's data.
"""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # lets tests `import broker`

from broker import Broker, start_broker  # noqa: E402


@pytest.fixture(scope="session")
def broker() -> Broker:
    running = start_broker()
    yield running
    running.stop()


def build_test_spark():
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("groupscope-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.streaming.stateStore.providerClass",
                "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
        # The test machine is shared and busy: give Python workers time to connect back.
        .config("spark.python.authenticate.socketTimeout", "120s")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@pytest.fixture(scope="session")
def spark():
    session = build_test_spark()
    yield session
    session.stop()
