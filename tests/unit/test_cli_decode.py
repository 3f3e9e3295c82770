"""`groupscope decode`: text/JSON-lines input to canonical JSON records."""
from __future__ import annotations

import base64
import io
import json

from coordinator.records import decode, encode
from streaming.cli.main import main

COMMIT = encode({"type": 1, "key": {"group": "orders-app", "topic": "orders", "partition": 7},
                 "value": {"version": 3, "offset": 1042, "leader_epoch": 5, "metadata": "",
                           "commit_timestamp": 1700000000000}})
KEY, VALUE = COMMIT
EXPECTED = decode(KEY, VALUE).to_dict()
TOMBSTONE = {**EXPECTED, "value": None}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def run(capsys, tmp_path, text: str, *args: str) -> tuple[int, list[dict], list[str]]:
    path = tmp_path / "records.txt"
    path.write_text(text)
    code = main(["decode", str(path), *args])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err.splitlines()


def test_hex_and_base64_pairs_and_tombstones(capsys, tmp_path):
    text = f"# a comment\n{KEY.hex()} {VALUE.hex()}\n\n{b64(KEY)} {b64(VALUE)}\n{KEY.hex()} -\n"
    code, records, errors = run(capsys, tmp_path, text)
    assert (code, errors) == (0, [])
    assert records == [EXPECTED, EXPECTED, TOMBSTONE]


def test_forced_formats(capsys, tmp_path):
    code, records, _ = run(capsys, tmp_path, f"{b64(KEY)} {b64(VALUE)}\n", "--format", "base64")
    assert (code, records) == (0, [EXPECTED])
    code, records, errors = run(capsys, tmp_path, f"{b64(KEY)} {b64(VALUE)}\n", "--format", "hex")
    assert code == 1 and records == [] and errors == ["line 1: key is not valid hex"]


def test_json_lines_and_capture_format(capsys, tmp_path):
    lines = [json.dumps({"key": KEY.hex(), "value": VALUE.hex()}),
             json.dumps({"key": b64(KEY), "value": None}),
             json.dumps({"partition": 3, "offset": 10, "timestamp": 1700000000000,
                         "key": b64(KEY), "value": b64(VALUE)})]
    for fmt in ("auto", "jsonl"):
        code, records, errors = run(capsys, tmp_path, "\n".join(lines) + "\n", "--format", fmt)
        assert (code, errors) == (0, [])
        assert records == [EXPECTED, TOMBSTONE, EXPECTED]


def test_bad_lines_are_reported_and_skipped(capsys, tmp_path):
    text = "\n".join([
        f"{KEY.hex()} {VALUE.hex()}",
        "justonefield",
        f"{KEY.hex()} {VALUE.hex()[:-6]}",          # truncated value
        "00ff0001 -",                               # unknown record type 255
        "{not json",
        json.dumps({"value": VALUE.hex()}),
        f"{KEY.hex()} !!!",
        f"{KEY.hex()} -",
    ]) + "\n"
    code, records, errors = run(capsys, tmp_path, text)
    assert code == 1
    assert records == [EXPECTED, TOMBSTONE]
    assert [e.split(":")[0] for e in errors] == ["line 2", "line 3", "line 4", "line 5", "line 6", "line 7"]
    assert "expected 'KEY VALUE'" in errors[0]
    assert "cannot decode (unknown_type)" in errors[2]
    assert "invalid JSON" in errors[3]
    assert "neither hex nor base64" in errors[5]
    assert not any("Traceback" in e for e in errors)


def test_stdin_and_group_metadata(capsys, monkeypatch):
    key, value = encode({"type": 2, "key": {"group": "g"},
                         "value": {"version": 0, "protocol_type": "consumer", "generation": 1,
                                   "protocol": "range", "leader": None, "members": []}})
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{key.hex()} {value.hex()}\n"))
    assert main(["decode"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line) == decode(key, value).to_dict()


def test_missing_file_is_a_user_error(capsys, tmp_path):
    assert main(["decode", str(tmp_path / "nope.txt")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("groupscope: error: cannot read") and "Traceback" not in err
