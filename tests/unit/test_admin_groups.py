"""The admin source's pure part (coordinator/admin_groups.py) and its job
(streaming/job/admin_job.py) on polls made up here: snapshots in the log path's shape, commit
times that stay put while an offset does, rebalances from assignment changes (classic) or a
risen epoch (KIP-848), and groups that go away."""
from __future__ import annotations

from coordinator.admin_groups import PolledGroup, PolledMember, gone, observe
from streaming.config import load_config
from streaming.exporter.evaluation import build_families
from streaming.job.admin_job import AdminJob


def _member(mid: str, *partitions: int, epoch: int | None = None) -> PolledMember:
    return PolledMember(mid, None, f"client-{mid}", "/10.0.0.1", None, ("orders",),
                        tuple(("orders", p) for p in partitions), epoch,
                        None if epoch is None else tuple(("orders", p) for p in partitions))


def _classic(*members: PolledMember, offsets=((("orders", 0, 7, -1, ""),)),
             state: str | None = None) -> PolledGroup:
    return PolledGroup("app", "classic", "consumer", "range",
                       state or ("Stable" if members else "Empty"), None, None, members, offsets)


def test_a_classic_groups_assignment_change_is_one_rebalance_with_its_moved_partitions():
    first, events = observe(_classic(_member("a", 0, 1), _member("b", 2, 3)), None, 1_000, None, 1)
    assert events == [] and first.snapshot["generation"] == 0
    assert first.snapshot["state"] == "Stable"
    assert first.snapshot["offsets"] == [{"topic": "orders", "partition": 0, "offset": 7,
                                          "leader_epoch": -1, "metadata": "",
                                          "commit_timestamp_ms": 1_000, "topic_id": None}]
    same, events = observe(_classic(_member("a", 0, 1), _member("b", 2, 3)), first, 2_000, 1_000, 2)
    assert events == [] and same.snapshot["generation"] == 0
    assert same.snapshot["offsets"][0]["commit_timestamp_ms"] == 1_000  # committed by then
    # A poll in the middle of the rebalance: members without partitions, no rebalance yet.
    during, events = observe(_classic(_member("a"), state="PreparingRebalance"), same, 2_500,
                             2_000, 3)
    assert [e["event"] for e in events] == ["member_left"] and during.snapshot["generation"] == 0
    after, events = observe(_classic(_member("a", 0, 1, 2, 3),
                                     offsets=(("orders", 0, 9, -1, ""),)), during, 3_000, 2_500, 4)
    [rebalance] = events
    assert rebalance["event"] == "rebalance" and rebalance["partitions_moved"] == [
        ["orders", 2], ["orders", 3]]
    assert rebalance["members_left"] == ["b"]
    assert (rebalance["from_generation"], rebalance["to_generation"]) == (0, 1)
    assert rebalance["start_ms"] == 2_500 and rebalance["duration_seconds"] is None
    assert rebalance["offset"] == 4 and rebalance["partition"] == -1
    assert after.snapshot["generation"] == 1 and after.snapshot["last_rebalance"] == rebalance
    assert after.snapshot["offsets"][0]["commit_timestamp_ms"] == 3_000  # moved: at this poll


def test_a_kip848_group_rebalances_when_its_epoch_rises():
    def modern(epoch: int, *members: PolledMember) -> PolledGroup:
        return PolledGroup("m", "consumer", "consumer", "uniform", "Stable", epoch, epoch,
                           members, ())

    first, _ = observe(modern(3, _member("a", 0, 1, epoch=3)), None, 1_000, None, 1)
    assert first.snapshot["generation"] == 3
    assert first.snapshot["members"][0]["member_epoch"] == 3
    _, events = observe(modern(3, _member("a", 0, 1, epoch=3)), first, 2_000, 1_000, 2)
    assert events == []
    _, events = observe(modern(5, _member("a", 0, epoch=5), _member("b", 1, epoch=5)), first,
                        3_000, 2_000, 3)
    assert [e["event"] for e in events] == ["member_joined", "rebalance"]
    assert events[1]["partitions_moved"] == [["orders", 1]]
    snapshot, events = gone("m", first, 4_000, 4)
    assert snapshot["state"] == "Dead" and events[0]["event"] == "group_deleted"


def test_a_kip848_rebalance_counts_the_partitions_handed_over_across_polls():
    """The epoch rises at one poll, the members revoke and take partitions over the next ones:
    the rebalance is counted once every member holds its target at the new epoch, with every
    partition whose owner differs from the owner at the last convergence (the poll at the
    rise saw none of them moved). A member's leave seen before the epoch bump still counts."""
    def member(mid: str, epoch: int, held: tuple[int, ...], target: tuple[int, ...]):
        return PolledMember(mid, None, f"client-{mid}", "/10.0.0.1", None, ("orders",),
                            tuple(("orders", p) for p in held), epoch,
                            tuple(("orders", p) for p in target))

    def modern(epoch: int, target_epoch: int, *members: PolledMember) -> PolledGroup:
        return PolledGroup("m", "consumer", "consumer", "uniform", "Stable", epoch, target_epoch,
                           members, ())

    everything = tuple(range(6))
    seen, _ = observe(modern(4, 4, member("a", 4, (0, 1, 2), (0, 1, 2)),
                             member("b", 4, (3, 4, 5), (3, 4, 5))), None, 1_000, None, 1)
    # b leaves: its tombstone comes before the epoch bump, a converged at epoch 4 still
    seen, events = observe(modern(4, 4, member("a", 4, (0, 1, 2), (0, 1, 2))), seen, 2_000,
                           1_000, 2)
    assert [e["event"] for e in events] == ["member_left"]
    # c joins, epoch 6: a must give up nothing and take 3-5, c waits for what b had...
    polls = [modern(6, 6, member("a", 4, (0, 1, 2), (0, 1, 2, 3)), member("c", 5, (), (4, 5))),
             modern(6, 6, member("a", 6, (0, 1, 2, 3), (0, 1, 2, 3)), member("c", 5, (), (4, 5))),
             modern(6, 6, member("a", 6, (0, 1, 2, 3), (0, 1, 2, 3)),
                    member("c", 6, (4, 5), (4, 5)))]
    found = []
    for i, polled in enumerate(polls):
        seen, events = observe(polled, seen, 3_000 + 1_000 * i, 2_000 + 1_000 * i, 3 + i)
        found.append([e for e in events if e["event"] == "rebalance"])
    assert found[0] == found[1] == []
    [rebalance] = found[2]
    assert (rebalance["from_generation"], rebalance["to_generation"]) == (4, 6)
    assert rebalance["partitions_moved"] == [["orders", p] for p in (3, 4, 5)]
    assert rebalance["members_left"] == ["b"] and rebalance["members_joined"] == ["c"]
    assert rebalance["start_ms"] == 2_000  # the poll before the one that saw the rise
    assert seen.baseline == {"epoch": 6, "owners": {"a": {("orders", p) for p in everything[:4]},
                                                    "c": {("orders", 4), ("orders", 5)}}}
    assert seen.snapshot["generation"] == 6 and seen.snapshot["last_rebalance"] == rebalance


class _Client:
    def __init__(self, polls):
        self.polls = list(polls)
        self.requests = 0

    def poll(self):
        return self.polls.pop(0)

    def close(self):
        pass


def test_the_admin_job_feeds_the_view_the_exporter_reads():
    config = load_config(None, env={"GROUPSCOPE_SOURCE__TYPE": "admin"})
    client = _Client([[_classic(_member("a", 0, 1), _member("b", 2, 3))],
                      [_classic(_member("a", 0, 1, 2, 3))], []])
    job = AdminJob(config, start_exporter=False, start_poller=False,
                   client_factory=lambda: client)
    assert job.poll_once() and job.view.ready
    assert job.poll_once()
    record = job.view.groups["app"]
    assert record.rebalances == 1 and record.partitions_moved == 2
    series = {(f.name, values): v for f in build_families(job.view) for values, v in f.samples}
    assert series[("kafka_consumergroup_committed_offset", ("default", "app", "orders", "0"))] == 7
    assert series[("kafka_consumergroup_members", ("default", "app"))] == 1
    assert job.poll_once()  # the group is no longer listed: deleted
    assert job.view.groups["app"].snapshot["state"] == "Dead"


def test_the_admin_job_writes_the_history_and_a_restart_continues_it(tmp_path, capsys):
    """The admin source writes the history the log path writes: `groupscope history` shows
    the rebalance it saw (start admin-poll, no duration known) and the member that left; a
    restart restores the counters and continues the group's generation and the polls'
    numbering, so no event of the first run is taken for one of the second."""
    from streaming.cli.main import main
    from streaming.job.history import read_history, unique_events

    path = str(tmp_path / "history")
    config = load_config(None, env={"GROUPSCOPE_SOURCE__TYPE": "admin",
                                    "GROUPSCOPE_HISTORY__PATH": path})
    client = _Client([[_classic(_member("a", 0, 1), _member("b", 2, 3))],
                      [_classic(_member("a", 0, 1, 2, 3))]])
    job = AdminJob(config, start_exporter=False, start_poller=False, client_factory=lambda: client)
    job.open_history()
    assert job.poll_once() and job.poll_once()
    assert main(["history", "--group", "app", "--path", path]) == 0
    out = capsys.readouterr().out
    assert "rebalance gen 0 -> 1 (range): -, start admin-poll; joined 0, left 1, moved 2 " \
           "partitions" in out
    assert "member left b" in out and "state Stable, classic group" in out

    client = _Client([[_classic(_member("a", 0, 1, 2, 3))],
                      [_classic(_member("a", 0, 1), _member("c", 2, 3))]])
    again = AdminJob(config, start_exporter=False, start_poller=False,
                     client_factory=lambda: client)
    again.open_history()
    record = again.view.groups["app"]
    assert (record.rebalances, record.partitions_moved) == (1, 2)
    assert again.poll_once()
    assert record.rebalances == 1 and record.snapshot["generation"] == 1  # nothing new
    assert again.poll_once()
    assert record.rebalances == 2 and record.snapshot["generation"] == 2
    events = unique_events(read_history(path, "events", group="app"))
    assert [e["event"] for e in events] == ["member_left", "rebalance", "member_joined",
                                            "rebalance"]
    assert len({e["offset"] for e in events if e["event"] == "rebalance"}) == 2


def test_share_and_streams_groups_are_served_as_the_log_path_serves_them():
    """A share group (no target assignment: its members take what they are given) rebalances
    when its epoch rises and its members reach it; its polled share-partitions carry Kafka's
    lag and no delivery state, and go when the group no longer lists them. A streams group's
    members hold tasks (subtopology, partition), their standby tasks in `extra`."""
    from coordinator.state.share_partition import records_by_state, share_lag

    def sharer(mid: str, epoch: int, *partitions: int) -> PolledMember:
        return PolledMember(mid, None, "console-share-consumer", "/10.0.0.2", None, ("orders",),
                            tuple(("orders", p) for p in partitions), epoch)

    def share(epoch: int, *members: PolledMember, offsets=()) -> PolledGroup:
        return PolledGroup("s", "share", "share", "simple", "Stable", epoch, epoch, members, (),
                           offsets)

    first, _ = observe(share(2, sharer("a", 2, 0, 1)), None, 1_000, None, 1)
    assert first.baseline == {"epoch": 2, "owners": {"a": {("orders", 0), ("orders", 1)}}}
    assert first.snapshot["members"][0]["target"] is None
    _, events = observe(share(4, sharer("a", 4, 0), sharer("b", 4, 1)), first, 2_000, 1_000, 2)
    assert [e["event"] for e in events] == ["member_joined", "rebalance"]
    assert events[1]["partitions_moved"] == [["orders", 1]]

    streams = PolledGroup("app", "streams", "streams", None, "Stable", 3, 3, (PolledMember(
        "x", None, "app-client", "/10.0.0.3", None, ("in",), (("0", 0), ("0", 1)), 3,
        (("0", 0), ("0", 1)), (("standby_tasks", [["1", 0]]),)),), (("in", 0, 5, -1, ""),))
    seen, _ = observe(streams, None, 1_000, None, 1)
    member = seen.snapshot["members"][0]
    assert member["assigned"] == [["0", 0], ["0", 1]] and member["extra"] == {
        "standby_tasks": [["1", 0]]}
    assert seen.snapshot["offsets"][0]["offset"] == 5

    topic_id = "AAAAAAAAAAAAAAAAAAAAAQ"
    config = load_config(None, env={"GROUPSCOPE_SOURCE__TYPE": "admin"})
    client = _Client([[share(2, sharer("a", 2, 0, 1), offsets=(("orders", topic_id, 0, 7, 3),
                                                                ("orders", topic_id, 1, -1, -1)))],
                      [share(2, sharer("a", 2, 0, 1), offsets=(("orders", topic_id, 0, 9, 0),))]])
    job = AdminJob(config, start_exporter=False, start_poller=False, client_factory=lambda: client)
    assert job.poll_once()
    polled = job.view.share_partitions[("s", topic_id, 0)]
    assert (polled.start_offset, share_lag(polled, 100)) == (7, 3)  # Kafka's, whatever the end
    assert records_by_state(polled) == {}
    assert share_lag(job.view.share_partitions[("s", topic_id, 1)], 100) is None
    job.view.update_topic_metadata({topic_id: "orders"}, {"orders": 2})
    series = {(f.name, values): v for f in build_families(job.view) for values, v in f.samples}
    labels = ("default", "s", "orders", "0")
    assert series[("kafka_sharegroup_partition_start_offset", labels)] == 7
    assert series[("kafka_sharegroup_partition_lag", labels)] == 3
    assert series[("kafka_sharegroup_lag", ("default", "s"))] == 3
    unknown = ("kafka_sharegroup_partition_records", "kafka_sharegroup_archived_records",
               "kafka_sharegroup_partition_archived_records")
    assert not [key for key in series if key[0] in unknown]  # not known: absent, not 0
    assert job.poll_once()
    assert list(job.view.share_partitions) == [("s", topic_id, 0)]
