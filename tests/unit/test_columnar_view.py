"""The view holds committed partitions and end offsets as columns and evaluates them a column at
a time; after any sequence of commits, polls, offset deletions and time passing, the series it
serves equal a scalar evaluation of the same history with coordinator's own functions (one
OffsetTimeline per partition, one CommitWindow per group-partition: what the view held before it
held columns). Per member too: the lag of the partitions each owns, summed and maximised as
the group's are."""
from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.lag import messages_lost, partition_lag, roll_up
from coordinator.status import Commit, CommitWindow, Status, StatusSettings, evaluate_partition, \
    group_status
from coordinator.timelag import OffsetTimeline, time_lag
from streaming.exporter.metrics_cache import MetricsCache
from streaming.exporter.view import MonitorView, ViewSettings
from tests.support.scrape_support import parse
from tests.unit.test_exporter import Clock, member, snapshot

TOPICS = ("orders", "audit")
STATUS = StatusSettings(window_size=4, min_complete=0.5, allowed_lag=1, min_distance_s=1.0,
                        recent_catch_up_s=30.0)
TABLE = 5  # time-lag samples per partition: small, so that tables fill and drop samples

PARTITIONS = (("orders", 0), ("orders", 1), ("audit", 0), ("audit", 1))
HELD = {0: PARTITIONS[:2], 1: PARTITIONS[1:3], 2: PARTITIONS[2:]}  # each group's partitions

_POLL = st.tuples(st.just("poll"), st.lists(st.integers(-2, 25), min_size=4, max_size=4),
                 st.booleans())
_COMMIT = st.tuples(st.just("commit"), st.integers(0, 2),
                    st.lists(st.sampled_from([-4, 0, 0, 1, 5, 20]), min_size=2, max_size=2))
_WAIT = st.tuples(st.just("wait"), st.sampled_from([0.3, 1.5, 5.0, 20.0, 45.0]))
# Every partition's log end moves (a negative move: a re-created or truncated log), and the log
# starts are polled too, or not; a group commits each of its partitions, each moved by its own
# step (backwards: a rewind; none: a stall); an offset is deleted; time passes; a scrape.
_OPS = st.one_of(_POLL, _COMMIT, _WAIT, _POLL, _COMMIT, _WAIT, _COMMIT,
                 st.tuples(st.just("drop"), st.integers(0, 2), st.integers(0, 1)),
                 st.tuples(st.just("scrape")))


class Scalar:
    """The history applied with coordinator's scalar functions."""

    def __init__(self) -> None:
        self.timelines: dict[tuple[str, int], OffsetTimeline] = {}
        self.starts: dict[tuple[str, int], int] = {}
        # group -> (topic, partition) -> [offset, commit_s, window]
        self.groups: dict[str, dict[tuple[str, int], list]] = {}
        self.members: dict[str, dict[str, set[tuple[str, int]]]] = {}  # group -> member -> owned

    def commit(self, group: str, key: tuple[str, int], offset: int, commit_s: float) -> None:
        held = self.groups.setdefault(group, {})
        entry = held.get(key)
        if entry is None:
            entry = held[key] = [-1, 0.0, CommitWindow(STATUS)]
        if commit_s < entry[1]:
            return
        timeline = self.timelines.get(key)
        end = timeline.offset_at(commit_s) if timeline is not None else None
        entry[0], entry[1] = offset, commit_s
        entry[2].add(Commit(offset, commit_s, None if end is None else max(0, end - offset)))

    def poll(self, key: tuple[str, int], end: int, when: float) -> None:
        timeline = self.timelines.setdefault(key, OffsetTimeline(TABLE))
        if not timeline.add(end, when):
            latest = timeline.latest
            if latest is not None and end < latest[0]:
                timeline.reset()
                timeline.add(end, when)

    def forget_unheld(self) -> None:
        """A poll keeps the end offsets of the partitions some group holds, no others."""
        held = {key for partitions in self.groups.values() for key in partitions}
        for key in [key for key in self.timelines if key not in held]:
            del self.timelines[key]
            self.starts.pop(key, None)

    def expected(self, now: float) -> dict[str, dict[tuple, float]]:
        out: dict[str, dict[tuple, float]] = {}

        def put(name, labels, v):
            out.setdefault(name, {})[labels] = v

        for group, held in self.groups.items():
            rows, statuses, known = [], [], []
            for (topic, p), (offset, commit_s, window) in held.items():
                labels = (group, topic, str(p))
                put("kafka_consumergroup_committed_offset", labels, offset)
                timeline = self.timelines.get((topic, p))
                if timeline is None or not len(timeline):
                    statuses.append(Status.NOTFOUND)
                    put("kafka_consumergroup_partition_status", labels, 0)
                    continue
                lag = partition_lag(timeline.latest[0], offset).lag
                seconds, method = time_lag(timeline, offset, now)
                put("kafka_consumergroup_lag", labels, lag)
                put("kafka_consumergroup_lag_seconds", labels, seconds)
                put("kafka_consumergroup_lag_seconds_method", labels, int(method))
                put("kafka_consumergroup_messages_lost", labels,
                    messages_lost(self.starts.get((topic, p)), offset))

                def recently(timeline=timeline, offset=offset):
                    then = timeline.offset_at(max(now - STATUS.recent_catch_up_s,
                                                  timeline.times[0]))
                    return then is not None and then <= offset

                status = evaluate_partition(window, lag, now, recently, STATUS)
                statuses.append(status)
                put("kafka_consumergroup_partition_status", labels, int(status))
                rows.append((topic, lag, seconds))
                known.append((topic, p))
            put("kafka_consumergroup_status", (group,), int(group_status(statuses))
                if statuses else 0)
            put("kafka_consumergroup_lag_unknown_partitions", (group,),
                sum(1 for s in statuses if s is Status.NOTFOUND))
            for member_id, owned in self.members.get(group, {}).items():
                mine = [row for row, key in zip(rows, known) if key in owned]
                if mine:
                    rollup = roll_up(mine)
                    put("member_lag", (group, member_id), rollup.total)
                    put("member_max_lag", (group, member_id), rollup.max_lag)
                    put("member_max_lag_seconds", (group, member_id), rollup.max_lag_seconds)
            if rows:
                rollup = roll_up(rows)
                put("kafka_consumergroup_group_lag", (group,), rollup.total)
                put("kafka_consumergroup_group_max_lag", (group,), rollup.max_lag)
                put("kafka_consumergroup_group_max_lag_seconds", (group,), rollup.max_lag_seconds)
                for topic, total in rollup.by_topic.items():
                    put("kafka_consumergroup_topic_lag", (group, topic), total)
        return out


def served(samples, name: str) -> dict[tuple, float]:
    found = {}
    for labels, v in samples.get(name, {}).items():
        labels = dict(labels)
        key = tuple(labels[k] for k in ("group", "topic", "partition") if k in labels)
        found[key] = v
    return found


@settings(max_examples=200, deadline=None)
@given(st.lists(_OPS, min_size=10, max_size=60))
def test_the_columns_serve_what_a_scalar_evaluation_of_the_same_history_gives(ops):
    clock = Clock()
    view = MonitorView(ViewSettings(cluster="test", status=STATUS, time_table_size=TABLE,
                                    member_lag=True), clock=clock)
    cache = MetricsCache(view)
    scalar = Scalar()
    committed: dict[str, dict[tuple[str, int], tuple[int, float]]] = {}
    ends = {key: 100 for key in PARTITIONS}
    for op in ops:
        if op[0] in ("commit", "drop"):
            group = f"g{op[1]}"
            held = committed.setdefault(group, {})
            if op[0] == "commit":
                for key, step in zip(HELD[op[1]], op[2]):
                    held[key] = (max(0, held.get(key, (95, 0.0))[0] + step), clock.now)
            else:
                held.pop(HELD[op[1]][op[2]], None)
            # Two members share the partitions held, split where the op count says: now one
            # owns them all, now each owns some.
            owned = sorted(held)
            split = len(committed[group]) and sum(map(ord, repr(op))) % (len(owned) + 1)
            members = [member("m0", owned[:split], topics=TOPICS),
                       member("m1", owned[split:], topics=TOPICS)]
            scalar.members[group] = {"m0": set(owned[:split]), "m1": set(owned[split:])}
            view.update_groups([snapshot(group, members, [(t, p, o, ts) for (t, p), (o, ts)
                                                          in sorted(held.items())],
                                         subscribed=list(TOPICS), updated_s=clock.now)])
            scalar.groups.setdefault(group, {})
            for key in [key for key in scalar.groups[group] if key not in held]:
                del scalar.groups[group][key]
            for key, (offset, when) in sorted(held.items()):
                scalar.commit(group, key, offset, int(when * 1000) / 1000.0)
        elif op[0] == "poll":
            clock.now += 0.5
            for key, move in zip(PARTITIONS, op[1]):
                ends[key] = max(0, ends[key] + move)
            starts = {key: end // 2 for key, end in ends.items()} if op[2] else {}
            view.update_end_offsets(dict(ends), starts, clock.now, 0.01)
            for key in PARTITIONS:
                scalar.poll(key, ends[key], clock.now)
            for key, start in starts.items():
                scalar.starts[key] = start
            scalar.forget_unheld()
        elif op[0] == "wait":
            clock.now += op[1]
        else:
            cache.text()
    cache.refresh()  # time lags as of now (between refreshes a scrape serves the last ones)
    samples = parse(cache.text())
    for name, expected in scalar.expected(clock.now).items():
        if name.startswith("member_"):
            name = f"kafka_consumergroup_{name}"
            got = {(dict(labels)["group"], dict(labels)["member_id"]): v
                   for labels, v in samples.get(name, {}).items()}
        else:
            got = served(samples, name)
        assert set(got) == set(expected), name
        for key, v in expected.items():
            if isinstance(v, float) and math.isnan(v):
                assert math.isnan(got[key]), (name, key)
            else:
                assert got[key] == v, (name, key, got[key], v)
