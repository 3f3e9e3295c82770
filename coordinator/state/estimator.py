"""When did a classic rebalance start, and how long did each moved partition stand still?

Nothing is written to `__consumer_offsets` when a classic rebalance starts; the first record is
the group metadata of generation N, stored when the leader's SyncGroup completes (`end`). Its
`current_state_timestamp` is when the group entered CompletingRebalance, i.e. when the join phase
ended and the sync phase began. What happens before that is visible only through commits: a
member that learns of a rebalance (REBALANCE_IN_PROGRESS on its next heartbeat) commits every
partition it owns synchronously before it rejoins (ConsumerCoordinator.onJoinPrepare with
auto-commit), and a member that leaves cleanly commits before its LeaveGroup. The coordinator
rejects (non-transactional) commits during CompletingRebalance, so each owned partition's last
commit before the join ended is its owner's reaction to the rebalance. Periodic auto-commits of the old generation are
superseded by those and drop out; the Java client restarts its heartbeat and auto-commit timers
when a join completes, so the members' periodic commits come in step and would otherwise look
like a burst themselves.

Start estimator, in order of preference:

1. ``commit_burst``: take every partition's last commit of generation N-1 (after the previous
   group-metadata record) up to the anchor (`current_state_timestamp` when known, else `end`) and
   no older than one rebalance timeout before it (the join phase cannot last longer). Walk back
   from the newest of these times while consecutive ones are at most `REACTION_GAP_MS` apart; the
   earliest reached is `start`. Members hear of a rebalance within one heartbeat interval of each
   other, so their reactions chain up, while a crashed member's partitions (last committed well
   before its session expired) fall off. It needs two partitions in the chain.
2. ``last_commit``: a single partition in the chain: `start` is its commit.
3. ``state_timestamp``: no commit in the window: `start` = `current_state_timestamp` (so the
   estimate covers the sync phase only).
4. ``last_commit`` again when `current_state_timestamp` is unknown (value v0/v1) and the group
   committed at all during generation N-1, whatever its age; else `start` = `end` labelled
   ``state_timestamp`` (nothing is known, the duration is 0).

What `start` cannot see: a rebalance caused by a new member's JoinGroup, or by a member that owned
no partitions, leaves no trace until the other members react at their next heartbeat, up to one
heartbeat interval later; `start` is then that first reaction. The clients date such a rebalance
from the newcomer's JoinGroup, so on a busy machine (slow heartbeats, slow poll loops) the classic
duration comes out shorter than theirs by up to that interval; nothing in the log tells by how much.

KIP-848 rebalances are exact: they start at the record that bumps the group epoch, except when a
member leaves gracefully. Its consumer commits what it consumed, runs its revocation callback and
only then sends the leave heartbeat (AsyncKafkaConsumer.prepareShutdown), whose records (the
member's tombstones, then the epoch bump) come after that commit. The member stopped consuming at
its closing commit, so that commit starts the rebalance (`leave_start`): the newest commit of the
partitions it held, if no older than `LEAVE_COMMIT_WINDOW_MS` before its tombstones. A member that
leaves without committing (a crash fenced when its session expires) last committed long before.

Downtime of a moved partition (one handed to a different member than its last owner, possibly
over two rebalances with cooperative assignors) = the record that hands it to the new owner minus
the old owner's last commit of it before that record. An eager classic rebalance (range,
roundrobin, sticky: every member rejoins with no owned partitions in its subscription, having
revoked them all) stalls every partition, kept ones included, from its owner's rejoin commit to the
generation's record: those get a downtime too. The hand-over record is the generation's
group metadata (classic: the new owner receives its assignment in the SyncGroup response stored
with it) or the new owner's current-assignment record that adds the partition (KIP-848). The old
owner's last commit is the commit it made when it gave the partition up (before rejoining, leaving
or acknowledging the revocation); after a crash it is its last periodic commit, the point from
which the new owner resumes. Timings use commit timestamps and record timestamps, both the
coordinator's clock. The clients resume later than the hand-over record: the new owner first
fetches the committed offset, then the data, then its poll returns (a few hundred ms on an idle
machine, more on a busy one); no record marks that, so downtime is a lower bound of the longest
time a message of the partition waited.
"""
from __future__ import annotations

from typing import Iterable

# One heartbeat interval (3 s by default; it is not in the log) plus a second for the member's
# poll loop to act on the heartbeat response: the most that two members' reactions lie apart.
REACTION_GAP_MS = 4_000
DEFAULT_REBALANCE_TIMEOUT_MS = 300_000   # the Java consumer's default max.poll.interval.ms
# A leaving KIP-848 member's closing commit and its leave heartbeat are apart by its revocation
# callback and one request: 0.2-0.5 s on a loaded test machine. Periodic auto-commits (5 s by
# default) of a member that did not commit on its way out mostly fall outside.
LEAVE_COMMIT_WINDOW_MS = 2_000


def estimate_start(last_commits: Iterable[int], end_ms: int, state_ts: int | None, prev_end_ms: int | None,
                   rebalance_timeout_ms: int | None) -> tuple[int, str]:
    """(start_ms, method) for a classic rebalance that ended at `end_ms`, from each committed
    partition's latest commit timestamp (`last_commits`); see the module docstring."""
    known_state_ts = state_ts is not None and 0 <= state_ts <= end_ms
    anchor = state_ts if known_state_ts else end_ms
    timeout = rebalance_timeout_ms if rebalance_timeout_ms and rebalance_timeout_ms > 0 \
        else DEFAULT_REBALANCE_TIMEOUT_MS
    generation = sorted((ts for ts in last_commits if ts <= anchor and (prev_end_ms is None or ts > prev_end_ms)),
                        reverse=True)
    window = [ts for ts in generation if ts >= anchor - timeout]
    if window:
        start, partitions = window[0], 1
        for ts in window[1:]:
            if start - ts > REACTION_GAP_MS:
                break
            start, partitions = ts, partitions + 1
        return start, "commit_burst" if partitions >= 2 else "last_commit"
    if known_state_ts:
        return state_ts, "state_timestamp"
    if generation:
        return generation[0], "last_commit"
    return end_ms, "state_timestamp"


def downtime_seconds(last_commit_ms: int | None, handed_over_ms: int) -> float | None:
    """A moved partition's downtime (module docstring); None without a commit before the hand-over."""
    if last_commit_ms is None or last_commit_ms > handed_over_ms:
        return None
    return (handed_over_ms - last_commit_ms) / 1000.0


def leave_start(last_commits: Iterable[int], left_ms: int) -> int | None:
    """A gracefully leaving KIP-848 member's closing commit (module docstring) from the latest
    commit timestamps of the partitions it held, its tombstones written at `left_ms`; None when it
    did not commit within `LEAVE_COMMIT_WINDOW_MS` before."""
    newest = max((ts for ts in last_commits if ts <= left_ms), default=None)
    if newest is None or left_ms - newest > LEAVE_COMMIT_WINDOW_MS:
        return None
    return newest
