"""Session-wide fixtures: one Kafka broker and one local SparkSession for the whole test run.

Both are slow to start, so tests share them; each test uses its own topic names and checkpoint
directories so that they do not see each other's data.

Tests are grouped by what they need, one folder each, and marked after it: `unit` (pure Python,
no Spark, no broker: `pytest -m unit`), `spark`, `broker`, `prometheus` (promtool and a real
Prometheus) and `deploy` (the compose stack's and service files' checks).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.kafka_broker import KafkaBroker, start_kafka
from tests.support.secured_kafka import SecuredBroker, secured_settings

GROUPS = ("unit", "spark", "broker", "prometheus", "deploy")

# Tests never assert on wall-clock time: Hypothesis' per-example deadline (200 ms) failed
# property tests whenever the machine's two cores were busy with a broker or Spark.
settings.register_profile("groupscope", deadline=None)
settings.load_profile("groupscope")
_HERE = Path(__file__).parent


def pytest_configure(config) -> None:
    for name in GROUPS:
        config.addinivalue_line("markers", f"{name}: tests in tests/{name}/")


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        group = Path(str(item.path)).relative_to(_HERE).parts[0]
        if group in GROUPS:
            item.add_marker(getattr(pytest.mark, group))


@pytest.fixture(scope="session")
def broker(tmp_path_factory) -> KafkaBroker:
    """Apache Kafka 4.4 (KRaft, one node on 127.0.0.1), for the whole session. Its PLAINTEXT
    listener (`bootstrap`) lets tests do anything; its secured listeners (`secured_broker`)
    grant only what ACLs allow."""
    props, listeners, format_args, password, tls = secured_settings(tmp_path_factory.mktemp("tls"))
    # Retention checked every second, not every 5 min: only topics with a retention of their own
    # lose records (log.retention.ms is -1 here), and tests/broker/test_retention_risk.py waits
    # for one to.
    props = {**props, "log.retention.check.interval.ms": "1000"}
    running = start_kafka("4.4.0", extra_props=props, listeners=listeners, format_args=format_args)
    running.scram_password, running.tls = password, tls  # for secured_broker
    yield running
    running.stop()


@pytest.fixture(scope="session")
def secured_broker(broker) -> SecuredBroker:
    """The session broker's SASL_SSL (SCRAM-SHA-512, OAUTHBEARER) and mutual-TLS listeners
    (tests/support/secured_kafka.py)."""
    return SecuredBroker(plaintext=broker.bootstrap,
                         sasl_ssl=f"127.0.0.1:{broker.listeners['SASL_SSL']}",
                         ssl=f"127.0.0.1:{broker.listeners['SSL']}",
                         scram_password=broker.scram_password, tls=broker.tls)


@pytest.fixture(scope="session")
def broker39() -> KafkaBroker:
    """Apache Kafka 3.9, started on first use: the older record versions a 3.x coordinator
    writes (group metadata v3, offset commit v3)."""
    running = start_kafka("3.9.2")
    yield running
    running.stop()


def build_test_spark():
    """The job's own session (local[2], the job's settings and local-mode tuning as
    `spark.local_tuning` says, GROUPSCOPE_SPARK__LOCAL_TUNING=off turning it off), plus a quiet,
    loopback-only driver."""
    import dataclasses

    from streaming.config import load_config
    from streaming.job.session import build_spark

    config = load_config(path=None)
    if config.spark.local_tuning == "auto":
        # Spark's Python through the local-mode wrapper, but no zygote in the test process: the
        # tests that count Spark's Python processes name them by their command lines, and
        # tests/spark/test_python_zygote.py starts zygotes of its own.
        from streaming.localmode.worker_python import worker_python

        os.environ.setdefault("PYSPARK_PYTHON", worker_python())
    conf = {"spark.default.parallelism": "2", "spark.ui.enabled": "false",
            "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    if config.spark.local_tuning == "off":
        # Untuned, the driver maps the machine's class archive only as a user's own JVM option
        # would (tests/support/jvm_archives.py): its start, not what the job does, is quicker.
        from tests.support.jvm_archives import user_class_sharing

        conf["spark.driver.extraJavaOptions"] = user_class_sharing()
    spark_config = dataclasses.replace(config.spark, master="local[2]", app_name="groupscope-tests",
                                       conf=conf)
    spark = build_spark(dataclasses.replace(config, spark=spark_config))
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@pytest.fixture(scope="session")
def spark():
    session = build_test_spark()
    yield session
    session.stop()
