"""Stage 2 of the job: one state key per group, kept in Spark's state store
(`transformWithStateInPandas`, RocksDB provider).

For each group touched by a micro-batch the processor loads the group's `GroupState`, applies
the batch's records in `__consumer_offsets` order (partition, offset), stores the state back and
emits the group's snapshot and events as JSON rows. The monitor key (`MONITOR_KEY`) keeps the
job's own counters the same way, so they survive restarts without counting a replay twice.

Input is delivered read_committed by the sources, so records are applied in log order without
transaction markers (see coordinator.state).
"""
from __future__ import annotations

import json
from typing import Any, Iterator

import pandas as pd
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

from coordinator.batch_decode import row_to_record_dict
from coordinator.state import Context, GroupState
from coordinator.state.reducer import apply_parts
from streaming.decode_stage import COUNT_RECORDS, COUNT_SKIPPED, MONITOR_KEY, PROGRESS

OUTPUT_SCHEMA = StructType([
    StructField("group", StringType()),
    StructField("kind", StringType()),      # snapshot | snapshot_point | event | monitor
    StructField("payload", StringType()),   # JSON
    StructField("ts_ms", LongType()),
])
_STATE_SCHEMA = StructType([StructField("blob", BinaryType())])
_COLUMNS = [f.name for f in OUTPUT_SCHEMA.fields]
_CHANGE_EVENTS = frozenset({"rebalance", "member_joined", "member_left", "group_emptied",
                            "group_deleted"})
_INT_COLUMNS = ("type", "partition", "value_version", "offset", "leader_epoch", "commit_timestamp",
                "expire_timestamp")
_OTHER_COLUMNS = ("group", "type_name", "topic", "metadata", "topic_id", "is_tombstone", "record_json")


def _records(batch: pd.DataFrame) -> list[dict[str, Any]]:
    """The decode stage's rows as dicts of Python values. Spark hands integer columns with nulls
    to pandas as floats, so integers are restored here."""
    columns: dict[str, list[Any]] = {}
    for name in _INT_COLUMNS:
        series = batch[name]
        columns[name] = [None if v != v else int(v) for v in series.tolist()]
    for name in _OTHER_COLUMNS:
        columns[name] = [None if (v is None or v != v) else v for v in batch[name].tolist()]
    columns["error"] = [None] * len(batch)
    names = list(columns)
    return [dict(zip(names, values)) for values in zip(*columns.values())]


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class GroupProcessor(StatefulProcessor):
    """Keeps one `GroupState` per group, plus the monitor's counters under MONITOR_KEY."""

    def __init__(self, context: Context | None = None) -> None:
        self.context = context or Context(emit_offset_events=False)

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.state = handle.getValueState("group_state", _STATE_SCHEMA)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues) -> Iterator[pd.DataFrame]:
        group = key[0]
        frames = [frame for frame in rows if len(frame)]
        if not frames:
            return
        batch = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        if group == MONITOR_KEY:
            yield self._monitor(batch)
            return
        batch = batch.sort_values(["o_partition", "o_offset"], kind="stable")
        state = GroupState.from_bytes(self.state.get()[0]) if self.state.exists() else None
        events = []
        points = []  # the group as it was right after each change of membership or generation
        ctx = self.context
        positions = zip(batch["o_partition"].tolist(), batch["o_offset"].tolist(), batch["ts_ms"].tolist())
        for (part, off, ts), row in zip(positions, _records(batch)):
            record = row_to_record_dict(row)
            state, produced = apply_parts(state, record["type"], record["key"], record["value"], group,
                                          part, off, ts, ctx, None, False)
            if produced:
                events.extend(produced)
                if state is not None and any(e.event in _CHANGE_EVENTS for e in produced):
                    points.append((ts, _dumps(state.to_dict())))
        if state is None:
            return
        self.state.update((state.to_bytes(),))
        ts = state.updated_ms
        out_group = [group]
        out_kind = ["snapshot"]
        out_payload = [_dumps(state.to_dict())]
        out_ts = [ts]
        for point_ts, payload in points[:-1] if points and points[-1][0] == ts else points:
            out_group.append(group)
            out_kind.append("snapshot_point")
            out_payload.append(payload)
            out_ts.append(point_ts)
        for event in events:
            out_group.append(group)
            out_kind.append("event")
            out_payload.append(_dumps(event.to_dict()))
            out_ts.append(event.timestamp_ms)
        yield pd.DataFrame({"group": out_group, "kind": out_kind, "payload": out_payload, "ts_ms": out_ts},
                           columns=_COLUMNS)

    def _monitor(self, batch: pd.DataFrame) -> pd.DataFrame:
        counters = json.loads(self.state.get()[0]) if self.state.exists() else {
            "records": {}, "skipped": {}, "progress": {}}
        for label, count, part, off in zip(batch["type_name"], batch["offset"], batch["o_partition"],
                                           batch["o_offset"]):
            if label == PROGRESS:
                p = str(int(part))
                counters["progress"][p] = max(int(off), counters["progress"].get(p, -1))
            elif label.startswith(COUNT_RECORDS):
                name = label[len(COUNT_RECORDS):]
                counters["records"][name] = counters["records"].get(name, 0) + int(count)
            elif label.startswith(COUNT_SKIPPED):
                reason = label[len(COUNT_SKIPPED):]
                counters["skipped"][reason] = counters["skipped"].get(reason, 0) + int(count)
        payload = _dumps(counters)
        self.state.update((payload.encode(),))
        return pd.DataFrame({"group": [MONITOR_KEY], "kind": ["monitor"], "payload": [payload],
                             "ts_ms": [0]}, columns=_COLUMNS)

    def close(self) -> None:
        pass
