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

    from streaming.job.lifecycle import job_spark_conf
    from streaming.localmode.worker_python import worker_python

    os.environ.setdefault("PYSPARK_PYTHON", worker_python())
    # The job's own settings, so the tests run what users run; plus a quiet, local-only UI.
    builder = SparkSession.builder.master("local[2]").appName("groupscope-tests")
    for key, value in {**job_spark_conf("local[2]"), "spark.default.parallelism": "2",
                       "spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1",
                       "spark.driver.bindAddress": "127.0.0.1"}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@pytest.fixture(scope="session")
def spark():
    session = build_test_spark()
    yield session
    session.stop()
