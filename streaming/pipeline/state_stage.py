"""Stage 2 of the job: every group's state in Spark's state store (`transformWithStateInPandas`,
RocksDB provider), the groups spread over the checkpoint's number of state keys
(streaming.pipeline.shard_state).

The stage's rows are of two lanes (streaming.pipeline.stage_schema). Offset commits and their
tombstones pass through as the columns they came in, all of a shard's at once, to the driver's
offsets lane (streaming/offsets/): no group state is read or written for them. For each group
with other records in the micro-batch (the group lane), the processor loads its `GroupState`,
joins it with the group's offsets as the offsets lane held them before the batch (asked of the
driver once per shard: `OffsetsLookup`), applies the group's records, its commits in the batch
included, in `__consumer_offsets` order (partition, offset), emits its snapshot and events as
JSON rows and stores it back without its offsets (coordinator.state.lanes).

Groups not in the batch are carried as bytes, never decoded. Keys are shards rather than groups
because Spark's cost per state key (a pandas frame and state-server round trips, about 3 ms of
CPU here) is larger than a group's own work and is paid for every key a micro-batch touches. Rows
leave in frames of many groups (see FLUSH_ROWS and `stateful_stage`). The monitor's counters
(`MONITOR_KEY`) have a shard of their own, so they survive restarts without counting a replay
twice.

Input is delivered read_committed by the sources, so records are applied in log order without
transaction markers (see coordinator.state).
"""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Iterator, Protocol

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.functions import pandas_udf
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.streaming.stateful_processor_util import (TransformWithStateInPandasFuncMode,
                                                           TransformWithStateInPandasUdfUtils)
from pyspark.sql.types import (BinaryType, IntegerType, LongType, StringType, StructField,
                               StructType)
from pyspark.util import PythonEvalType

from coordinator import compact_json
from coordinator.records import decode
from coordinator.state import Context, GroupState
from coordinator.state.lanes import Activity, LaneEntry, joined, stripped
from coordinator.state.reducer import apply_parts
from streaming.pipeline.monitor_rows import COUNT_RECORDS, COUNT_SKIPPED, MONITOR_KEY, PROGRESS
from streaming.pipeline.commit_columns import COMMIT_COLUMNS, COMMIT_FIELDS, COMMIT_KIND
from streaming.pipeline.shard_state import (BUCKET_MAP, GROUP_MAP, SHARD_VALUE, STATE_LAYOUTS,
                                            STATE_SHARDS, bucket_of, pack_entries, shard_column,
                                            unpack_entries)

if TYPE_CHECKING:
    import pandas as pd

_SPARK_TYPES = {"string": StringType(), "int": IntegerType(), "bigint": LongType()}
OUTPUT_SCHEMA = StructType([
    StructField("group", StringType()),
    StructField("kind", StringType()),      # snapshot | snapshot_point | event | monitor | commit
    StructField("payload", StringType()),   # JSON; null for a commit
    StructField("ts_ms", LongType()),
    # A commit's position in __consumer_offsets and its typed columns; null for the other kinds
    StructField("o_partition", IntegerType()), StructField("o_offset", LongType()),
    *[StructField(name, _SPARK_TYPES[ddl]) for name, ddl in COMMIT_FIELDS],
])
_STATE_SCHEMA = StructType([StructField("blob", BinaryType())])
_GROUP_KEY_SCHEMA = StructType([StructField("group", StringType())])
_BUCKET_KEY_SCHEMA = StructType([StructField("bucket", IntegerType())])
_COLUMNS = [f.name for f in OUTPUT_SCHEMA.fields]
_ROW_COLUMNS = _COLUMNS[:4]  # what the group lane's rows fill
_GROUP_INPUT = ["group", "o_partition", "o_offset", "ts_ms", "key", "value"]
_CHANGE_EVENTS = frozenset({"rebalance", "member_joined", "member_left", "group_emptied",
                            "group_deleted"})
_INT_COLUMNS = frozenset({"o_partition", "o_offset", "ts_ms", "c_partition", "c_offset", "c_epoch",
                          "c_commit_ts"})
# In GROUP_MAP and BUCKET_MAP layouts, a shard keeps its groups in its value until they are more
# than this many, then in its map for good. Rewriting a value costs about 11 us per group it
# holds, a map entry about 180 us per entry touched (a read and a write, each a state-server round
# trip; benchmarks/state_stage.py): a small shard is cheaper whole, a large one entry by entry.
MAP_AFTER_GROUPS = 1_000
# Output rows are held back and handed to Spark in frames of up to this many rows: Spark turns
# every frame a processor yields into its own Arrow batch, which costs about 1.5 ms of CPU here,
# more than the rest of a small group's work.
FLUSH_ROWS = 5_000
# Commits pass through in frames of up to about this many rows.
FLUSH_COMMITS = 50_000


def _records(frames: list[pd.DataFrame]) -> list[dict[str, Any]]:
    """The decode stage's rows as dicts of Python values.

    Spark hands integer columns with nulls to pandas as floats, so integers are restored here.
    Rows are read through one object array per frame: per-column pandas access would cost more
    than the rows themselves.
    """
    records: list[dict[str, Any]] = []
    for frame in frames:
        names = list(frame.columns)
        ints = [i for i, name in enumerate(names) if name in _INT_COLUMNS]
        for values in frame.to_numpy(dtype=object).tolist():
            for i in ints:
                v = values[i]
                values[i] = None if v is None or v != v else int(v)
            records.append(dict(zip(names, values)))
    return records


def _position(row: dict[str, Any]) -> tuple[int, int]:
    return row["o_partition"], row["o_offset"]


def _frame(rows: list[tuple[str, str, str, int]]) -> pd.DataFrame:
    """The group lane's output rows as a DataFrame: one object block, the cheapest frame pandas
    builds (Spark converts it to Arrow against OUTPUT_SCHEMA), the commit columns null."""
    # Imported here, not with the module: Spark starts a Python process for every query that
    # loads this module only to call `init` (for the state schema), and importing pandas and
    # numpy there cost 0.7 s of every query's planning. Task workers have them preloaded.
    import numpy as np
    import pandas as pd

    block = np.full((len(rows), len(_COLUMNS)), None, dtype=object)
    block[:, :len(_ROW_COLUMNS)] = rows
    return pd.DataFrame(block, columns=_COLUMNS, copy=False)


def _commit_frame(commits: pd.DataFrame) -> pd.DataFrame:
    """A shard's commits as output rows, column for column (the offsets lane)."""
    out = commits[["group", "ts_ms", "o_partition", "o_offset", *COMMIT_COLUMNS]].copy()
    out.insert(1, "kind", COMMIT_KIND)
    out.insert(2, "payload", None)
    return out[_COLUMNS]


def _commit_parts(row: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The reducer's key and value of a commit row (the offsets lane's columns)."""
    key = {"group": row["group"], "topic": row["c_topic"], "partition": row["c_partition"]}
    if row["c_offset"] is None:
        return key, None
    epoch = row["c_epoch"]
    return key, {"offset": row["c_offset"], "leader_epoch": -1 if epoch is None else epoch,
                 "metadata": row["c_metadata"], "commit_timestamp": row["c_commit_ts"],
                 "topic_id": row["c_topic_id"]}


def _bytes(value: Any) -> bytes | None:
    """A binary cell as bytes (pandas may hold bytearray; a null may arrive as NaN)."""
    if value is None or isinstance(value, bytes):
        return value
    return None if isinstance(value, float) else bytes(value)


class OffsetsLookup(Protocol):
    """How the group lane asks for groups' offsets as the offsets lane held them before the
    micro-batch (streaming.offsets.lookup serves and asks it)."""

    def lookup(self, groups: list[str]) -> tuple[dict[str, list[LaneEntry]], dict[str, Activity]]:
        ...


class GroupProcessor(StatefulProcessor):
    """Keeps one `GroupState` per group inside its shard's value (or map), without its offsets,
    and the monitor's counters; passes the offsets lane's rows through."""

    def __init__(self, lane: OffsetsLookup, context: Context | None = None,
                 layout: str = BUCKET_MAP) -> None:
        if layout not in STATE_LAYOUTS:
            raise ValueError(f"unknown state layout {layout!r}")
        self.lane = lane
        self.context = context or Context(emit_offset_events=False)
        self.layout = layout
        self.map_after = MAP_AFTER_GROUPS  # read here: the processor travels to the workers

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.state = handle.getValueState("shard", _STATE_SCHEMA)
        if self.layout == GROUP_MAP:
            self.groups = handle.getMapState("groups", _GROUP_KEY_SCHEMA, _STATE_SCHEMA)
        elif self.layout == BUCKET_MAP:
            self.groups = handle.getMapState("buckets", _BUCKET_KEY_SCHEMA, _STATE_SCHEMA)
        self._pending: list[tuple[str, str, str, int]] = []
        self._pending_commits: list[pd.DataFrame] = []
        self._pending_commit_rows = 0

    def flush(self) -> Iterator[pd.DataFrame]:
        """The output rows held back so far, as one frame of commits and one of the rest.
        `stateful_stage` calls it once more after a task's last key, so nothing stays behind."""
        if self._pending_commits:
            import pandas as pd

            frames, self._pending_commits, self._pending_commit_rows = self._pending_commits, [], 0
            yield frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        if self._pending:
            rows, self._pending = self._pending, []
            yield _frame(rows)

    def _emit(self, rows: list[tuple[str, str, str, int]],
              commits: pd.DataFrame | None = None) -> Iterator[pd.DataFrame]:
        self._pending.extend(rows)
        if commits is not None and len(commits):
            self._pending_commits.append(_commit_frame(commits))
            self._pending_commit_rows += len(commits)
        if len(self._pending) >= FLUSH_ROWS or self._pending_commit_rows >= FLUSH_COMMITS:
            yield from self.flush()

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues) -> Iterator[pd.DataFrame]:
        frames = [frame for frame in rows if len(frame)]
        if not frames:
            return
        if len(frames) > 1:
            import pandas as pd

            frames = [pd.concat(frames, ignore_index=True)]
        frame = frames[0]
        is_commit = frame["c_topic"].notna().to_numpy()
        commits = frame[is_commit]
        others = frame[~is_commit]
        if not len(others):
            yield from self._emit([], commits)
            return
        by_group: dict[str, list[dict[str, Any]]] = {}
        for row in _records([others[_GROUP_INPUT]]):
            by_group.setdefault(row["group"], []).append(row)
        touched = [group for group in by_group if group != MONITOR_KEY]
        if touched and len(commits):
            # The batch's commits of the groups the group lane applies records of: the reducer
            # sees them in log order among the group's other records.
            mine = commits[commits["group"].isin(touched).to_numpy()]
            if len(mine):
                for row in _records([mine[["group", "o_partition", "o_offset", "ts_ms",
                                           *COMMIT_COLUMNS]]]):
                    by_group[row["group"]].append(row)
        lane_entries, activity = self.lane.lookup(touched) if touched else ({}, {})
        stored = self.state.get()  # None when the shard has no value: one call, not two
        entries: dict[str, bytes] | _GroupEntries | _BucketEntries
        if stored is not None or self.layout == SHARD_VALUE or not self.groups.exists():
            entries = unpack_entries(stored[0]) if stored is not None else {}
        else:  # the shard outgrew its value (see GROUP_MAP and BUCKET_MAP)
            entries = self._map_entries(fresh=False)
        out: list[tuple[str, str, str, int]] = []
        for group, records in by_group.items():
            if group == MONITOR_KEY:
                payload = self._monitor(records, entries.get(group))
                entries[group] = payload.encode()
                out.append((MONITOR_KEY, "monitor", payload, 0))
                continue
            blob = entries.get(group)
            state = joined(GroupState.from_bytes(blob) if blob is not None else None, group,
                           lane_entries.get(group, ()), activity.get(group), self.context)
            state = self._apply_group(group, records, state, out)
            if state is not None:
                entries[group] = stripped(state).to_bytes()
        if isinstance(entries, dict):
            if self.layout != SHARD_VALUE and len(entries) > self.map_after:
                in_map = self._map_entries(fresh=True)
                for group, blob in entries.items():
                    in_map[group] = blob
                in_map.store()
                self.state.clear()
            else:
                self.state.update((pack_entries(entries),))
        else:
            entries.store()
        yield from self._emit(out, commits)

    def _map_entries(self, fresh: bool) -> _GroupEntries | _BucketEntries:
        """The shard's map state as entries; `fresh`: known empty, so nothing is read."""
        if self.layout == GROUP_MAP:
            return _GroupEntries(self.groups)
        return _BucketEntries(self.groups, fresh)

    def _apply_group(self, group: str, records: list[dict[str, Any]], state: GroupState | None,
                     out: list[tuple[str, str, str, int]]) -> GroupState | None:
        """Applies one group's records to its state (joined with its offsets); its output rows
        go to `out`."""
        records.sort(key=_position)  # the order the reducer expects
        events = []
        points = []  # the group as it was right after each change of membership or generation
        ctx = self.context
        for row in records:
            if row.get("key") is None:  # a commit of the batch (the offsets lane's columns)
                rtype = 1
                key, value = _commit_parts(row)
            else:
                # The decode stage passed only records that decode; the group lane's few
                # records come as bytes and are decoded here, once.
                record = decode(_bytes(row["key"]), _bytes(row["value"]))
                rtype, key, value = record.type, record.key, record.value
            state, produced = apply_parts(state, rtype, key, value, group, row["o_partition"],
                                          row["o_offset"], row["ts_ms"], ctx, None, False)
            if produced:
                events.extend(produced)
                if state is not None and any(e.event in _CHANGE_EVENTS for e in produced):
                    points.append((row["ts_ms"], compact_json.dumps(state.to_dict())))
        if state is None:
            return None
        ts = state.updated_ms
        out.append((group, "snapshot", compact_json.dumps(state.to_dict()), ts))
        for point_ts, payload in points[:-1] if points and points[-1][0] == ts else points:
            out.append((group, "snapshot_point", payload, point_ts))
        for event in events:
            out.append((group, "event", compact_json.dumps(event.to_dict()), event.timestamp_ms))
        return state

    def _monitor(self, records: list[dict[str, Any]], stored: bytes | None) -> str:
        """The monitor's counters with this batch's rows added, as JSON."""
        counters = compact_json.loads(stored) if stored is not None else {
            "records": {}, "skipped": {}, "progress": {}}
        for row in records:
            label, count = _bytes(row["key"]).decode(), int(_bytes(row["value"]))
            part, off = row["o_partition"], row["o_offset"]
            if label == PROGRESS:
                p = str(part)
                counters["progress"][p] = max(off, counters["progress"].get(p, -1))
            elif label.startswith(COUNT_RECORDS):
                name = label[len(COUNT_RECORDS):]
                counters["records"][name] = counters["records"].get(name, 0) + count
            elif label.startswith(COUNT_SKIPPED):
                reason = label[len(COUNT_SKIPPED):]
                counters["skipped"][reason] = counters["skipped"].get(reason, 0) + count
        return compact_json.dumps(counters)

    def close(self) -> None:
        pass


class _GroupEntries:
    """The groups of one shard key in GROUP_MAP layout, read and written one group at a time
    (a state-server round trip each), with the dict interface the shard value's entries have."""

    __slots__ = ("_map",)

    def __init__(self, groups) -> None:
        self._map = groups

    def get(self, group: str) -> bytes | None:
        stored = self._map.getValue((group,))
        return None if stored is None else _bytes(stored[0])

    def __setitem__(self, group: str, blob: bytes) -> None:
        self._map.updateValue((group,), (blob,))

    def store(self) -> None:
        pass  # each entry was written as it was set


class _BucketEntries:
    """The groups of one shard key in BUCKET_MAP layout: a bucket is read on the first use of
    one of its groups, and each changed bucket written once, by `store()`."""

    __slots__ = ("_map", "_fresh", "_buckets", "_changed")

    def __init__(self, buckets, fresh: bool) -> None:
        self._map = buckets
        self._fresh = fresh
        self._buckets: dict[int, dict[str, bytes]] = {}
        self._changed: set[int] = set()

    def _bucket(self, bucket: int) -> dict[str, bytes]:
        entries = self._buckets.get(bucket)
        if entries is None:
            stored = None if self._fresh else self._map.getValue((bucket,))
            entries = {} if stored is None else unpack_entries(_bytes(stored[0]))
            self._buckets[bucket] = entries
        return entries

    def get(self, group: str) -> bytes | None:
        return self._bucket(bucket_of(group)).get(group)

    def __setitem__(self, group: str, blob: bytes) -> None:
        bucket = bucket_of(group)
        self._bucket(bucket)[group] = blob
        self._changed.add(bucket)

    def store(self) -> None:
        for bucket in self._changed:
            self._map.updateValue((bucket,), (pack_entries(self._buckets[bucket]),))
        self._changed.clear()


class _FlushingUdf(TransformWithStateInPandasUdfUtils):
    """Spark's driver of a processor inside its Python worker, plus the processor's last flush.

    The worker calls the UDF once per key, then once in timer mode after the task's last key
    (with no timers in this job it yields nothing there); that call is where the rows held back
    by `GroupProcessor` leave.
    """

    def transformWithStateUDF(self, api_client, mode, key, input_rows):
        result = super().transformWithStateUDF(api_client, mode, key, input_rows)
        if mode == TransformWithStateInPandasFuncMode.PROCESS_TIMER:
            return itertools.chain(result, self._stateful_processor.flush())
        return result


def stateful_stage(decoded: DataFrame, processor: GroupProcessor,
                   shards: int = STATE_SHARDS) -> DataFrame:
    """`decoded.groupBy(shard).transformWithStateInPandas(processor, OUTPUT_SCHEMA, "Update",
    "None")`, with the processor's held-back rows flushed at the end of each task.

    PySpark builds the same operator from a UDF that cannot flush; this builds it from
    `_FlushingUdf` (pyspark is pinned, and the end-to-end tests see every row arrive).
    """
    session = decoded.sparkSession
    decoded = decoded.withColumn("shard", shard_column(F.col("group"), MONITOR_KEY, shards))
    udf = pandas_udf(_FlushingUdf(processor, "None").transformWithStateUDF,  # type: ignore[call-overload]
                     returnType=OUTPUT_SCHEMA,
                     functionType=PythonEvalType.SQL_TRANSFORM_WITH_STATE_PANDAS_UDF)
    column = udf(*[decoded[name] for name in decoded.columns])
    grouped = decoded.groupBy("shard")
    jdf = grouped._jgd.transformWithStateInPandas(
        column._jc, session._jsparkSession.parseDataType(OUTPUT_SCHEMA.json()), "Update", "None",
        None, "")
    return DataFrame(jdf, session)
