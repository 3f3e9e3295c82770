"""Offset planning of the Kafka sources: starting offsets, per-trigger limits, range splits."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from streaming.sources.kafka_options import parse_options
from streaming.kafka.offset_ranges import (OffsetRange, from_offset_dict, limit_end,
                                             parse_starting_offsets, plan_ranges, to_offset_dict)

T = "__consumer_offsets"


def test_starting_offsets_forms():
    assert parse_starting_offsets("earliest", T) == "earliest"
    assert parse_starting_offsets(" LATEST ", T) == "latest"
    assert parse_starting_offsets('{"__consumer_offsets": {"0": 5, "3": -2, "4": -1}}', T) == {
        0: 5, 3: -2, 4: -1}


@pytest.mark.parametrize("text, problem", [
    ("yesterday", "earliest, latest or JSON"),
    ('{"other": {"0": 1}}', 'exactly one key, the topic "__consumer_offsets"'),
    ('{"__consumer_offsets": {"x": 1}}', "partition 'x'"),
    ('{"__consumer_offsets": {"0": -3}}', "partition '0' -> -3"),
])
def test_bad_starting_offsets_name_the_problem(text, problem):
    with pytest.raises(ValueError, match=problem.replace("(", r"\(")):
        parse_starting_offsets(text, T)


def test_offset_dicts_round_trip_in_spark_kafka_layout():
    as_dict = to_offset_dict(T, {10: 3, 2: 7})
    assert as_dict == {T: {"2": 7, "10": 3}}
    assert from_offset_dict(T, as_dict) == {2: 7, 10: 3}


def test_limit_shares_the_budget_by_backlog():
    assert limit_end({0: 0, 1: 0}, {0: 300, 1: 100}, 40) == {0: 30, 1: 10}
    # a budget smaller than the number of partitions still moves forward
    assert sum(limit_end({0: 0, 1: 0, 2: 0}, {0: 5, 1: 5, 2: 5}, 2).values()) == 2


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.integers(0, 20), st.tuples(st.integers(0, 1000), st.integers(0, 1000)),
                       min_size=1), st.integers(1, 3000))
def test_limit_never_exceeds_budget_nor_goes_back(ranges, budget):
    start = {p: min(a, b) for p, (a, b) in ranges.items()}
    end = {p: max(a, b) for p, (a, b) in ranges.items()}
    limited = limit_end(start, end, budget)
    moved = sum(limited[p] - start[p] for p in end)
    backlog = sum(end[p] - start[p] for p in end)
    assert moved == min(budget, backlog)
    assert all(start[p] <= limited[p] <= end[p] for p in end)


def test_ranges_cover_every_offset_once_in_bounded_pieces():
    ranges = plan_ranges({0: 10, 1: 4}, {0: 35, 1: 4, 2: 3}, 10)
    assert ranges == [OffsetRange(0, 10, 19), OffsetRange(0, 19, 28), OffsetRange(0, 28, 35),
                      OffsetRange(2, 0, 3)]


def test_source_options_are_checked_with_the_option_name():
    parsed = parse_options({"kafka.bootstrap.servers": "h:1", "maxRecordsPerTrigger": "50",
                            "kafka.security.protocol": "SSL", "client": "confluent"})
    assert parsed.max_records_per_trigger == 50 and parsed.topic == T
    assert parsed.confluent_config()["security.protocol"] == "SSL"
    assert parsed.confluent_config()["isolation.level"] == "read_committed"
    config = parse_options({"kafka.bootstrap.servers": "h:1,g:2", "kafka.ssl.check.hostname": "false"}
                           ).kafka_python_config()
    assert config["bootstrap_servers"] == ["h:1", "g:2"] and config["ssl_check_hostname"] is False
    assert config["isolation_level"] == "read_committed"
    with pytest.raises(ValueError, match="kafka.bootstrap.servers is required"):
        parse_options({})
    with pytest.raises(ValueError, match="maxRecordsPerTrigger must be a positive integer"):
        parse_options({"kafka.bootstrap.servers": "h:1", "maxRecordsPerTrigger": "0"})
    with pytest.raises(ValueError, match="unknown option"):
        parse_options({"kafka.bootstrap.servers": "h:1", "startingOffset": "earliest"})
    with pytest.raises(ValueError, match="kafka.no.such.setting: neither a Kafka client setting"):
        parse_options({"kafka.bootstrap.servers": "h:1", "kafka.no.such.setting": "x"}
                      ).kafka_python_config()


def test_a_shard_is_spark_kafkas_assign_option_for_both_sources():
    from streaming.config import load_config
    from streaming.sources.kafka_options import spark_kafka_options

    source = load_config(None, env={"GROUPSCOPE_SOURCE__PARTITIONS": "4,0,2"}).source
    options = spark_kafka_options(source)
    assert "subscribe" not in options and options["assign"] == '{"__consumer_offsets": [0, 2, 4]}'
    parsed = parse_options(options)
    assert (parsed.topic, parsed.partitions) == ("__consumer_offsets", (0, 2, 4))
    assert parse_options(spark_kafka_options(load_config(None, env={}).source)).partitions is None
    with pytest.raises(ValueError, match="option assign must be JSON"):
        parse_options({"kafka.bootstrap.servers": "h:1", "assign": '{"a": [0], "b": [1]}'})
