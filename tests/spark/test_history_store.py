"""The history is readable by the engines users already have: Spark SQL reads the compacted and
the not yet compacted files of `<history>/events` and `/snapshots` (date as a partition column)
and gets the rows `read_history` gives."""
from __future__ import annotations

import json

import pytest

from streaming.job.history import read_history
from streaming.job.history_layout import day_of
from streaming.job.history_maintenance import maintain
from tests.unit.test_history_store import DAY_MS, T0, write_days

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("kind", ["events", "snapshots"])
def test_spark_sql_reads_the_same_rows_as_read_history(spark, tmp_path, kind):
    history = str(tmp_path)
    end = write_days(history, 0, T0, 90, 3_000_000)
    maintain(history, "parquet", bound=80, now_s=(T0 + 2 * DAY_MS + 1000) / 1000.0, retention_s=0)
    write_days(history, end, T0 + 2 * DAY_MS + 5_000, 3, 60_000, seed=5)  # not compacted yet
    spark.read.parquet(f"{history}/{kind}").createOrReplaceTempView("history")
    got = spark.sql("SELECT `group`, ts_ms, kind, payload, CAST(date AS STRING) AS date "
                    "FROM history").collect()
    expected = read_history(history, kind)
    assert len(got) == len(expected) > 100
    assert sorted((r["group"], r["ts_ms"], r["kind"], r["payload"]) for r in got) == sorted(
        (r["group"], r["ts_ms"], r["kind"], json.dumps(r["payload"]))
        for r in expected)
    assert all(r["date"] == day_of(r["ts_ms"]) for r in got)
    assert len({r["date"] for r in got}) == 4
