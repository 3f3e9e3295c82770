"""A new session of the job never runs Spark's search for data sources installed as `pyspark_*`
packages (streaming/localmode/static_source_lookup.py), and its own sources still load."""
from __future__ import annotations

from tests.support.driver_session import REPLAY_SESSION, run_new_session
from streaming.kafka.records import KAFKA_SCHEMA
from streaming.pipeline.stage_schema import STAGE_SCHEMA

_SESSION = REPLAY_SESSION + """
STEP
jvm = spark.sparkContext._jvm
manager = getattr(getattr(jvm.org.apache.spark.sql.execution.datasources, "DataSourceManager$"),
                  "MODULE$")
searches = list(jvm_children(spark, "lookup_data_sources").values())
print(json.dumps({"columns": COLUMNS, "searches": searches,
                  "found": manager.dataSourceBuilders().get().size()}))
"""

_JOB_SOURCE = """
from streaming.sources import build_source
frame = build_source(spark, config, decoded=True)
"""

_SPARK_ALONE = """
from streaming.sources.replay import ReplayDataSource
spark.dataSource.register(ReplayDataSource)
frame = spark.readStream.format("groupscope-replay").option("path", CAPTURE).load()
"""


def _session(step: str, capture: str, cache, tuning: str = "auto") -> dict:
    script = _SESSION.replace("STEP", step).replace("COLUMNS", "frame.columns")
    return run_new_session(script.replace("CAPTURE", repr(capture)), cache, LOCAL_TUNING=tuning)


def test_the_jobs_source_loads_without_the_search(tmp_path):
    capture = tmp_path / "empty.jsonl"
    capture.write_text("")
    job = _session(_JOB_SOURCE, str(capture), tmp_path)
    assert job["searches"] == []
    assert job["found"] == 0
    assert job["columns"] == STAGE_SCHEMA.names
    # What the check above would see without local-mode tuning: Spark's search, still running.
    plain = _session(_SPARK_ALONE, str(capture), tmp_path, tuning="off")
    assert len(plain["searches"]) >= 1
    assert plain["columns"] == KAFKA_SCHEMA.fieldNames()
