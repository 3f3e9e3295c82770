"""`groupscope capture` against the test broker, and replay of what it wrote."""
from __future__ import annotations

import uuid

import pytest

from tests.support.kafka_broker import create_topic, produce_raw
from streaming.sources.capture_file import CapturedRecord, decode_line, encode_line
from streaming.cli.main import main
from streaming.sources.replay import ReplayStreamReader

BASE = 1_700_000_000_000


@pytest.fixture(scope="module")
def captured_topic(broker):
    topic = f"cap-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    records = [(i % 2, f"k{i}".encode(), None if i == 5 else f"v{i}".encode(), BASE + i * 1000)
               for i in range(12)]
    positions = produce_raw(broker.bootstrap, topic, records)
    expected = [CapturedRecord(p, o, ts, k, v) for (_, k, v, ts), (p, o) in zip(records, positions)]
    return topic, sorted(expected, key=lambda r: (r.partition, r.offset))


def _read(path) -> list[CapturedRecord]:
    with open(path, encoding="utf-8") as fh:
        return [decode_line(line, f"line {n}") for n, line in enumerate(fh, 1)]


def test_capture_everything_then_replay_it(broker, captured_topic, tmp_path, capsys):
    topic, expected = captured_topic
    out = tmp_path / "all.jsonl"
    assert main(["capture", str(out), "--bootstrap-servers", broker.bootstrap, "--topic", topic]) == 0
    assert f"captured 12 records of {topic}" in capsys.readouterr().out
    assert _read(out) == expected

    # The replay source's driver planning and executor reads, outside Spark.
    reader = ReplayStreamReader(str(out), max_records=None, lines_per_split=5)
    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    assert end == {"line": 12}
    rows = []
    for split in reader.partitions(start, end):
        for batch in reader.read(split):
            columns = batch.to_pydict()
            rows += list(zip(columns["partition"], columns["offset"], columns["key"], columns["value"]))
    assert rows == [(r.partition, r.offset, r.key, r.value) for r in expected]


def test_capture_a_time_range_and_an_offset_range(broker, captured_topic, tmp_path):
    topic, expected = captured_topic
    by_time = tmp_path / "time.jsonl"
    assert main(["capture", str(by_time), "--bootstrap-servers", broker.bootstrap, "--topic", topic,
                 "--since", str(BASE + 3000), "--until", "2023-11-14T22:13:29Z"]) == 0  # BASE + 9s
    assert _read(by_time) == [r for r in expected if BASE + 3000 <= r.timestamp_ms < BASE + 9000]

    by_offset = tmp_path / "offsets.jsonl"
    assert main(["capture", str(by_offset), "--bootstrap-servers", broker.bootstrap, "--topic",
                 topic, "--partitions", "1", "--from-offset", "2", "--to-offset", "4"]) == 0
    assert _read(by_offset) == [r for r in expected if r.partition == 1 and 2 <= r.offset < 4]


def test_capture_errors_are_one_line(broker, tmp_path, capsys):
    out = str(tmp_path / "x.jsonl")
    assert main(["capture", out, "--bootstrap-servers", broker.bootstrap, "--topic", "no-such"]) == 2
    assert capsys.readouterr().err == "groupscope: error: topic no-such not found\n"
    assert main(["capture", out, "--bootstrap-servers", broker.bootstrap, "--since", "monday"]) == 2
    assert "--since: expected ISO-8601 time or epoch milliseconds" in capsys.readouterr().err


def test_capture_lines_round_trip_and_reject_bad_input():
    record = CapturedRecord(3, 99, BASE, b"\x00\x01key", None, 1)
    assert decode_line(encode_line(record)) == record
    with pytest.raises(ValueError, match="line 7: field key is not valid base64"):
        decode_line('{"partition":0,"offset":1,"timestamp":2,"key":"%%%","value":null}', "line 7")
    with pytest.raises(ValueError, match="line 8: field offset must be an integer"):
        decode_line('{"partition":0,"offset":"1","timestamp":2,"key":null,"value":null}', "line 8")
