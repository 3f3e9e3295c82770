"""A new session of the job never runs Spark's search for data sources installed as `pyspark_*`
packages (streaming/localmode/static_source_lookup.py), and its own sources still load."""
from __future__ import annotations

from streaming.kafka.records import KAFKA_SCHEMA
from streaming.pipeline.stage_schema import STAGE_SCHEMA


def test_the_jobs_source_loads_without_the_search(startup):
    for job in startup["auto"]:
        assert job["searches"] == []
        assert job["found"] == 0
        assert job["columns"] == STAGE_SCHEMA.names
    # What the check above would see without local-mode tuning: Spark's search, still running.
    plain = startup["off"][0]
    assert len(plain["searches"]) >= 1
    assert plain["columns"] == KAFKA_SCHEMA.fieldNames()
