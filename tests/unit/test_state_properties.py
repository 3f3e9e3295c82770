"""Properties of the reducer: batching and replays never change the states or the events."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator import partition_for
from coordinator.state import GroupState, GroupStore, apply_control_to_group, apply_to_group
from coordinator.state.reducer import record_parts

GROUPS = ["g0", "g1", "g2"]
TOPICS = ["a", "b"]
IDS = {"AAAAAAAAAAAAAAAAAAAAAQ": "a", "AAAAAAAAAAAAAAAAAAAAAg": "b"}
MEMBERS = ["m0", "m1", "m2"]

_parts = st.lists(st.tuples(st.sampled_from(TOPICS), st.integers(0, 3)), max_size=4, unique=True)
_id_parts = st.lists(st.tuples(st.sampled_from(sorted(IDS)), st.integers(0, 3)), max_size=4, unique=True)


def _grouped(pairs, field):
    by: dict = {}
    for t, p in sorted(pairs):
        by.setdefault(t, []).append(p)
    return [{field: t, "partitions": ps} for t, ps in by.items()]


@st.composite
def classic_metadata(draw, group):
    members = []
    for mid in draw(st.lists(st.sampled_from(MEMBERS), unique=True, max_size=3)):
        assigned = draw(_parts)
        members.append({"member_id": mid, "group_instance_id": None, "client_id": "c", "client_host": "/h",
                        "rebalance_timeout": 1000, "session_timeout": 1000, "subscription": "", "assignment": "",
                        "subscription_decoded": {"version": 0, "topics": TOPICS, "user_data": None},
                        "assignment_decoded": {"version": 0, "assigned_partitions": _grouped(assigned, "topic"),
                                               "user_data": None}})
    return {"type": 2, "key": {"group": group}, "value": {
        "version": 3, "protocol_type": "consumer", "generation": draw(st.integers(0, 6)),
        "protocol": "range" if members else None, "leader": members[0]["member_id"] if members else None,
        "current_state_timestamp": draw(st.integers(-1, 50)), "members": members}}


@st.composite
def modern_record(draw, group):
    rtype = draw(st.sampled_from([3, 5, 6, 7, 8]))
    mid = draw(st.sampled_from(MEMBERS))
    key = {"group_id": group} if rtype in (3, 6) else {"group_id": group, "member_id": mid}
    if draw(st.integers(0, 5)) == 0:
        return {"type": rtype, "key": key, "value": None}
    epoch = draw(st.integers(0, 5))
    value = {3: lambda: {"version": 0, "epoch": epoch},
             5: lambda: {"version": 0, "instance_id": None, "rack_id": None, "client_id": "c", "client_host": "/h",
                         "subscribed_topic_names": TOPICS, "subscribed_topic_regex": None,
                         "rebalance_timeout_ms": 1000, "server_assignor": "uniform"},
             6: lambda: {"version": 0, "assignment_epoch": epoch},
             7: lambda: {"version": 0, "topic_partitions": _grouped(draw(_id_parts), "topic_id")},
             8: lambda: {"version": 0, "member_epoch": epoch, "previous_member_epoch": epoch - 1,
                         "state": draw(st.sampled_from([0, 0, 1, 2])),
                         "assigned_partitions": _grouped(draw(_id_parts), "topic_id"),
                         "partitions_pending_revocation": []}}[rtype]()
    return {"type": rtype, "key": key, "value": value}


@st.composite
def operation(draw):
    """(record or None, producer_id, is_transactional, control) with a group chosen at random."""
    group = draw(st.sampled_from(GROUPS))
    kind = draw(st.sampled_from(["commit", "commit", "commit", "tombstone", "classic", "group_tombstone",
                                 "modern", "txn", "marker"]))
    if kind in ("commit", "txn"):
        rec = {"type": 1, "key": {"group": group, "topic": draw(st.sampled_from(TOPICS)),
                                  "partition": draw(st.integers(0, 3))},
               "value": {"version": 3, "offset": draw(st.integers(0, 1000)), "leader_epoch": -1, "metadata": "",
                         "commit_timestamp": 0}}
        return (group, rec, 7 if kind == "txn" else -1, kind == "txn", None)
    if kind == "tombstone":
        return (group, {"type": 1, "key": {"group": group, "topic": "a", "partition": draw(st.integers(0, 3))},
                        "value": None}, -1, False, None)
    if kind == "classic":
        return (group, draw(classic_metadata(group)), -1, False, None)
    if kind == "group_tombstone":
        rtype = draw(st.sampled_from([2, 3]))
        key = {"group": group} if rtype == 2 else {"group_id": group}
        return (group, {"type": rtype, "key": key, "value": None}, -1, False, None)
    if kind == "modern":
        return (group, draw(modern_record(group)), -1, False, None)
    return (group, None, 7, False, draw(st.sampled_from(["commit", "abort"])))


@st.composite
def streams(draw):
    ops = draw(st.lists(operation(), min_size=1, max_size=60))
    # Positions: every op goes to its group's coordinator partition (markers too), in order.
    out, next_offset, ts = [], {}, 0
    for group, rec, pid, txn, control in ops:
        partition = partition_for(group)
        offset = next_offset.get(partition, 0)
        next_offset[partition] = offset + 1
        ts += draw(st.integers(0, 5_000))
        out.append((rec, partition, offset, ts, pid, txn, control))
    return out


def run_store(stream, store=None):
    store = store or GroupStore(topic_names=IDS, partition_counts={"a": 4, "b": 4})
    events = []
    for rec, partition, offset, ts, pid, txn, control in stream:
        events.extend(store.apply(rec, partition=partition, offset=offset, timestamp_ms=ts, producer_id=pid,
                                  is_transactional=txn, control=control))
    return store, [e.to_dict() for e in events]


def run_keyed(stream, cuts):
    """The Spark job's way: per-group state as bytes between micro-batches, markers routed to the
    groups that hold pending commits of the producer."""
    store = GroupStore(topic_names=IDS, partition_counts={"a": 4, "b": 4})
    saved: dict[str, bytes] = {}
    events = []
    bounds = [0, *sorted(set(cuts)), len(stream)]
    for lo, hi in zip(bounds, bounds[1:]):
        live = {g: GroupState.from_bytes(b) for g, b in saved.items()}
        for rec, partition, offset, ts, pid, txn, control in stream[lo:hi]:
            if control is not None:
                for g in sorted(live):
                    if pid in live[g].pending_txn:
                        events.extend(apply_control_to_group(live[g], pid, control == "commit", partition,
                                                             offset, ts, store.context))
                continue
            group = record_parts(rec)[3]
            state, evs = apply_to_group(live.get(group), rec, partition, offset, ts, store.context, pid, txn)
            if state is not None:
                live[group] = state
            events.extend(evs)
        saved = {g: s.to_bytes() for g, s in live.items()}
    return {g: GroupState.from_bytes(b).to_state() for g, b in saved.items()}, [e.to_dict() for e in events]


def states_of(store):
    return {g: s.to_state() for g, s in store.groups().items()}


@settings(max_examples=150, deadline=None)
@given(stream=streams(), cuts=st.lists(st.integers(0, 60), max_size=5))
def test_any_batching_gives_the_same_states_and_events(stream, cuts):
    store, events = run_store(stream)
    keyed_states, keyed_events = run_keyed(stream, [c for c in cuts if c < len(stream)])
    assert keyed_states == states_of(store)
    assert keyed_events == events


@settings(max_examples=150, deadline=None)
@given(stream=streams(), data=st.data())
def test_replaying_a_prefix_changes_nothing(stream, data):
    store, events = run_store(stream)
    k = data.draw(st.integers(0, len(stream)))
    j = data.draw(st.integers(0, k))
    replayed, first = run_store(stream[:k])
    _, again = run_store(stream[j:k], replayed)     # a restart re-delivers part of what was applied
    _, rest = run_store(stream[k:], replayed)
    assert again == []
    assert states_of(replayed) == states_of(store)
    assert first + rest == events


@settings(max_examples=100, deadline=None)
@given(stream=streams())
def test_public_views_are_json_and_survive_bytes(stream):
    import json
    store, events = run_store(stream)
    for state in store.groups().values():
        view = state.to_dict()
        assert json.loads(json.dumps(view)) == view
        assert GroupState.from_bytes(state.to_bytes()).to_dict() == view
        assert view["state"] in {"Stable", "Empty", "Dead", "Assigning", "Reconciling", "NotReady"}
    for event in events:
        assert json.loads(json.dumps(event)) == event
