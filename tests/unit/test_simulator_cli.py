"""`groupscope simulate` and `groupscope whatif`."""
from __future__ import annotations

import json

from coordinator.records import decode
from coordinator.simulator import from_capture
from streaming.cli.main import main


def test_simulate_writes_capture_truth_and_table(tmp_path, capsys):
    assert main(["simulate", "join-one", "--strategy", "sticky", "--out", str(tmp_path), "--seed", "2"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("sticky"))
    assert row.split()[1:3] == ["classic", "1"]      # protocol, rebalances after the warm-up
    lines = (tmp_path / "join-one-sticky.capture.jsonl").read_text().splitlines()
    records = [decode(*from_capture(json.loads(line))[3:]) for line in lines]
    assert records[0].type_name == "group_metadata" and records[0].value["protocol"] == "sticky"
    truth = json.loads((tmp_path / "join-one-sticky.truth.json").read_text())
    assert truth["strategy"] == "sticky" and len(truth["rebalances"]) == 2
    assert truth["rebalances"][1]["end_ms"] >= truth["rebalances"][1]["start_ms"]
    ends = [json.loads(line) for line in (tmp_path / "join-one-sticky.end-offsets.jsonl").read_text().splitlines()]
    assert ends[-1]["end_offsets"][0] == {"topic": "events", "partition": 0, "offset": 1200}


def test_simulate_rejects_unknown_scenario(tmp_path, capsys):
    assert main(["simulate", "no-such", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("groupscope: error: no scenario named 'no-such'") and "\n" not in err


def test_whatif_compares_assignors_on_a_capture(tmp_path, capsys):
    main(["simulate", "join-one", "--strategy", "range", "--out", str(tmp_path), "--seed", "2"])
    capsys.readouterr()
    assert main(["whatif", str(tmp_path / "join-one-range.capture.jsonl")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("group join-one-app: 5 members, generation 2, assignor now range")
    # range keeps the range assignment it produced; roundrobin would move partitions
    assert "\nrange: 0 partitions would move" in out
    assert "\nroundrobin: 8 partitions would move" in out
    assert "server-uniform:" in out and "cooperative-sticky:" in out


def test_whatif_names_kip848_topics_from_commits(tmp_path, capsys):
    main(["simulate", "join-one", "--strategy", "server-uniform", "--out", str(tmp_path)])
    capsys.readouterr()
    assert main(["whatif", str(tmp_path / "join-one-server-uniform.capture.jsonl"),
                 "--strategy", "server-uniform", "--partitions", "events=12"]) == 0
    out = capsys.readouterr().out
    assert "partitions {'events': 12}" in out and "assignor now uniform" in out


def test_whatif_bad_input(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"partition": 1}\n')
    assert main(["whatif", str(bad)]) == 2
    assert "bad.jsonl:1: not a capture record" in capsys.readouterr().err
    assert main(["whatif", str(tmp_path / "missing.jsonl")]) == 2


def test_whatif_replays_the_groups_history_under_every_strategy(tmp_path, capsys):
    main(["simulate", "join-one", "--strategy", "sticky", "--out", str(tmp_path), "--seed", "2"])
    simulated = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("sticky"))
    assert main(["whatif", str(tmp_path / "join-one-sticky.capture.jsonl"), "--processing-rate", "40"]) == 0
    out = capsys.readouterr().out
    assert "replay: this group's 1 membership changes (4 -> 5 members)" in out
    assert "topics at events 100.0/s, latency budget 5 s" in out
    rows = {line.split()[0]: line.split() for line in out.split("replay:")[1].splitlines()[2:8]}
    assert set(rows) == {"range", "roundrobin", "sticky", "cooperative-sticky", "server-uniform", "server-range"}
    # The replay of sticky's own history gives what the simulation of it gave: rebalances, moved.
    assert rows["sticky"][2:4] == simulated.split()[2:4]
    assert "least harm: " in out


def test_whatif_replay_flags(tmp_path, capsys):
    main(["simulate", "join-one", "--strategy", "range", "--out", str(tmp_path)])
    capture = str(tmp_path / "join-one-range.capture.jsonl")
    capsys.readouterr()
    assert main(["whatif", capture, "--rate", "events=fast"]) == 2
    assert "--rate expects TOPIC=N" in capsys.readouterr().err
    assert main(["whatif", capture, "--rate", "events=400", "--budget", "2"]) == 0
    assert "topics at events 400.0/s, latency budget 2 s" in capsys.readouterr().out
    assert main(["whatif", capture, "--no-replay"]) == 0
    assert "replay:" not in capsys.readouterr().out
