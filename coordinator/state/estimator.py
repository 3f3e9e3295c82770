"""When did a classic rebalance start? An estimate from the offset commits around it.

Nothing is written to `__consumer_offsets` when a classic rebalance starts; the first record is
the group metadata of generation N, stored when the leader's SyncGroup completes (`end`). Its
`current_state_timestamp` is when the group entered CompletingRebalance, i.e. when the join phase
ended and the sync phase began. What happens before that is visible only through commits: a
consumer that learns of a rebalance (REBALANCE_IN_PROGRESS on its heartbeat) commits its offsets
synchronously before it rejoins (onJoinPrepare), so a rebalance is preceded by a burst of commits
from the members.

Estimator (monitor-semantics.md, "Rebalances"), in order of preference:

1. ``commit_burst``: take the commits of generation N-1 (after the previous group-metadata record)
   up to the anchor (`current_state_timestamp` when known, else `end`) and no older than one
   rebalance timeout before the anchor (the join phase cannot last longer). Walk back from the
   newest of them while consecutive commit timestamps are at most `BURST_GAP_MS` apart; the burst
   is that run, and `start` is its first commit. It needs at least two commit records (one
   OffsetCommit request of several partitions counts as several records).
2. ``last_commit``: a single such commit: `start` is that commit.
3. ``state_timestamp``: no commit in the window: `start` = `current_state_timestamp` (so the
   estimate covers the sync phase only).
4. ``last_commit`` again when `current_state_timestamp` is unknown (value v0/v1) and the group
   committed at all during generation N-1, whatever its age; else `start` = `end` labelled
   ``state_timestamp`` (nothing is known, the duration is 0).

The history is a bounded list of [record timestamp, commit records at that timestamp], newest
last, kept per group by the reducer. Timings use record timestamps (the coordinator's clock, as
`end` and `current_state_timestamp` do).

Per-partition downtime (completion.py) is measured from the partition's last commit before `end`
(its old owner's final commit, normally inside the burst) to its first commit after `end`: with
`start` defined as the burst's first commit, "the last commit before start" would otherwise skip
the old owner's own burst commit for every partition but the first.
"""
from __future__ import annotations

BURST_GAP_MS = 3_000          # the default heartbeat interval: members learn of a rebalance within it
DEFAULT_REBALANCE_TIMEOUT_MS = 300_000   # the Java consumer's default max.poll.interval.ms
COMMIT_HISTORY = 64           # distinct commit timestamps kept per group


def estimate_start(history: list[list[int]], end_ms: int, state_ts: int | None, prev_end_ms: int | None,
                   rebalance_timeout_ms: int | None) -> tuple[int, str]:
    """(start_ms, method) for a classic rebalance that ended at `end_ms`; see the module docstring."""
    known_state_ts = state_ts is not None and 0 <= state_ts <= end_ms
    anchor = state_ts if known_state_ts else end_ms
    timeout = rebalance_timeout_ms if rebalance_timeout_ms and rebalance_timeout_ms > 0 \
        else DEFAULT_REBALANCE_TIMEOUT_MS
    generation = [(ts, n) for ts, n in history
                  if ts <= anchor and (prev_end_ms is None or ts > prev_end_ms)]
    window = [(ts, n) for ts, n in generation if ts >= anchor - timeout]
    if window:
        first, records = window[-1][0], window[-1][1]
        for ts, n in reversed(window[:-1]):
            if first - ts > BURST_GAP_MS:
                break
            first, records = ts, records + n
        return first, "commit_burst" if records >= 2 else "last_commit"
    if known_state_ts:
        return state_ts, "state_timestamp"
    if generation:
        return generation[-1][0], "last_commit"
    return end_ms, "state_timestamp"


def record_commit(history: list[list[int]], ts: int) -> None:
    """Adds one commit record at record timestamp `ts` to a bounded history."""
    if history and history[-1][0] == ts:
        history[-1][1] += 1
        return
    history.append([ts, 1])
    if len(history) > COMMIT_HISTORY:
        del history[0]
