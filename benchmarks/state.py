"""State-reducer benchmark: 1,000,000 mixed records over 2,000 groups.

2,000 groups (1,600 classic, 400 KIP-848), each committing 50 partitions of its own topic, for 10
rounds of one commit per partition (1,000,000 offset commits). Every round a tenth of the groups
rebalance: classic groups write a new generation (5 members), KIP-848 groups a member-epoch
sequence (epoch, targets, target epoch, current assignments). Records are canonical dicts, i.e.
already decoded: this measures the reducer, not the codec.

The input records are moved out of the cyclic GC's reach (gc.freeze) before timing.

Prints: records per second (wall clock, and per CPU second, which a busy machine distorts less)
with and without offset_committed events, and the memory of committed-
offset state per 10,000 partitions (tracemalloc over a store holding only offsets, and the whole
benchmark's peak RSS).

Usage (from the repository root): python -m benchmarks.state
"""
from __future__ import annotations

import gc
import resource
import time
import tracemalloc

from benchmarks._stopping import stop_everything_at_exit
from coordinator import partition_for
from coordinator.state import GroupStore

GROUPS = 2_000
MODERN_EVERY = 5            # every fifth group uses the KIP-848 protocol
PARTITIONS = 50
MEMBERS = 5
ROUNDS = 10
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def group_name(g: int) -> str:
    return f"group-{g:04d}"


def commit_records() -> list[list[dict]]:
    """Per group, one commit record per partition (reused every round; the reducer keeps no reference)."""
    out = []
    for g in range(GROUPS):
        out.append([{"type": 1, "key": {"group": group_name(g), "topic": f"topic-{g}", "partition": p},
                     "value": {"version": 3, "offset": 1000 + p, "leader_epoch": 3, "metadata": "",
                               "commit_timestamp": 1_700_000_000_000}} for p in range(PARTITIONS)])
    return out


def assignment(g: int, generation: int) -> list[list[int]]:
    shift = generation % MEMBERS
    return [[p for p in range(PARTITIONS) if (p + shift) % MEMBERS == m] for m in range(MEMBERS)]


def classic_rebalance(g: int, generation: int) -> dict:
    members = []
    for m, parts in enumerate(assignment(g, generation)):
        members.append({
            "member_id": f"m{m}", "group_instance_id": None, "client_id": "c", "client_host": "/h",
            "rebalance_timeout": 300_000, "session_timeout": 45_000, "subscription": "", "assignment": "",
            "subscription_decoded": {"version": 3, "topics": [f"topic-{g}"], "user_data": None},
            "assignment_decoded": {"version": 3, "assigned_partitions": [{"topic": f"topic-{g}", "partitions": parts}],
                                   "user_data": None}})
    return {"type": 2, "key": {"group": group_name(g)}, "value": {
        "version": 3, "protocol_type": "consumer", "generation": generation, "protocol": "range", "leader": "m0",
        "current_state_timestamp": 0, "members": members}}


def modern_rebalance(g: int, epoch: int) -> list[dict]:
    group = group_name(g)
    recs = []
    if epoch == 1:
        recs += [{"type": 5, "key": {"group_id": group, "member_id": f"m{m}"}, "value": {
            "version": 0, "instance_id": None, "rack_id": None, "client_id": "c", "client_host": "/h",
            "subscribed_topic_names": [f"topic-{g}"], "subscribed_topic_regex": None,
            "rebalance_timeout_ms": 300_000, "server_assignor": "uniform"}} for m in range(MEMBERS)]
    recs.append({"type": 3, "key": {"group_id": group}, "value": {"version": 0, "epoch": epoch}})
    parts = assignment(g, epoch)
    for m in range(MEMBERS):
        recs.append({"type": 7, "key": {"group_id": group, "member_id": f"m{m}"}, "value": {
            "version": 0, "topic_partitions": [{"topic_id": TOPIC_ID, "partitions": parts[m]}]}})
    recs.append({"type": 6, "key": {"group_id": group}, "value": {"version": 0, "assignment_epoch": epoch}})
    for m in range(MEMBERS):
        recs.append({"type": 8, "key": {"group_id": group, "member_id": f"m{m}"}, "value": {
            "version": 0, "member_epoch": epoch, "previous_member_epoch": epoch - 1, "state": 0,
            "assigned_partitions": [{"topic_id": TOPIC_ID, "partitions": parts[m]}],
            "partitions_pending_revocation": []}})
    return recs


def workload() -> list[tuple[dict, int]]:
    """(record, offsets-topic partition) in log order."""
    commits = commit_records()
    partition_of = [partition_for(group_name(g)) for g in range(GROUPS)]
    out: list[tuple[dict, int]] = []
    for r in range(ROUNDS):
        for g in range(GROUPS):
            if (g + r) % 10 == 0 or r == 0:
                recs = modern_rebalance(g, r + 1) if g % MODERN_EVERY == 0 else [classic_rebalance(g, r + 1)]
                out.extend((rec, partition_of[g]) for rec in recs)
            out.extend((rec, partition_of[g]) for rec in commits[g])
    return out


def run(records: list[tuple[dict, int]], emit: bool) -> tuple[float, float, GroupStore, int]:
    store = GroupStore(topic_names={TOPIC_ID: "t"}, emit_offset_events=emit)
    apply = store.apply
    next_offset = [0] * 50
    events = 0
    gc.collect()
    start, cpu_start = time.perf_counter(), time.process_time()
    ts = 1_700_000_000_000
    for rec, partition in records:
        offset = next_offset[partition]
        next_offset[partition] = offset + 1
        ts += 1
        events += len(apply(rec, partition, offset, ts))
    return time.perf_counter() - start, time.process_time() - cpu_start, store, events


def offsets_memory_per_10k() -> float:
    """tracemalloc bytes of a store that holds only committed offsets, per 10,000 partitions."""
    commits = commit_records()
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    store = GroupStore(emit_offset_events=False)
    offset = 0
    for g, recs in enumerate(commits):
        partition = partition_for(group_name(g))
        for rec in recs:
            offset += 1
            store.apply(rec, partition, offset, 1_700_000_000_000 + offset)
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return used / (GROUPS * PARTITIONS / 10_000)


def main() -> None:
    records = workload()
    # The million input dicts are the benchmark's, not the reducer's: keep the cyclic GC from
    # rescanning them (a streaming job only holds one micro-batch of records at a time).
    gc.collect()
    gc.freeze()
    commits = sum(1 for rec, _ in records if rec["type"] == 1)
    print(f"records: {len(records):,} ({commits:,} offset commits, {len(records) - commits:,} group records), "
          f"groups: {GROUPS:,}, committed partitions: {GROUPS * PARTITIONS:,}")
    for emit in (True, False):
        seconds, cpu, store, events = run(records, emit)
        rebalances = sum(1 for s in store.groups().values() if s.last_rebalance)
        print(f"emit_offset_events={emit!s:5}: {len(records) / seconds:,.0f} records/s wall, "
              f"{len(records) / cpu:,.0f} records per CPU second ({seconds:.2f} s wall, {cpu:.2f} s CPU, "
              f"{events:,} events, {rebalances:,} groups with a rebalance)")
        del store
    per_10k = offsets_memory_per_10k()
    print(f"committed-offset state: {per_10k / 1e6:.2f} MB per 10,000 partitions (tracemalloc)")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of the whole benchmark (records held in memory included): {peak_mb:,.0f} MB")


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
