"""The sink hands a micro-batch to the view in one piece.

A reader of the view (the metrics cache, a scrape, a test waiting for a committed offset) must not
see a group's new state while the record counters still lack the records behind it: once the
reader takes the view's lock, it sees the batch whole or not at all.
"""
from __future__ import annotations

import gc
import threading

from tests.support.collector_probe import collections_in_fresh_interpreter, garbage_collections
from coordinator import compact_json
from coordinator.state.reducer import apply_to_group
from tests.support.state_timeline import offset_commit
from streaming.pipeline.decode_stage import MONITOR_KEY
from streaming.job.lifecycle import BatchSink, OffsetsTopicProgress
from streaming.exporter.view import MonitorView

T0 = 1_700_000_000_000


class _ReadsInTheMiddle(MonitorView):
    """Starts a reader as soon as the sink has handed over the batch's groups."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[int | None, dict[str, int]]] = []
        self.reader: threading.Thread | None = None

    def update_groups(self, snapshots):
        super().update_groups(snapshots)

        def read() -> None:
            with self.lock:
                offset = self.committed("app").get(("orders", 0))
                self.seen.append((offset, dict(self.records_total)))

        self.reader = threading.Thread(target=read)
        self.reader.start()
        # Time for the reader to get in between, if the sink lets it: it does, without the lock.
        self.reader.join(0.3)


def _rows(offset: int, records: int) -> list[tuple[str, str, str, int]]:
    state, _events = apply_to_group(None, offset_commit("app", "orders", 0, offset, T0), 7, offset, T0)
    counters = {"progress": {"7": offset}, "records": {"offset_commit": records}, "skipped": {}}
    return [("app", "snapshot", compact_json.dumps(state.to_dict()), T0),
            (MONITOR_KEY, "monitor", compact_json.dumps(counters), T0)]


def test_a_reader_never_sees_a_group_ahead_of_the_record_counters():
    view = _ReadsInTheMiddle()
    sink = BatchSink(view, None, OffsetsTopicProgress(None), snapshot_interval_s=60.0)
    for batch_id, (offset, records) in enumerate([(9, 10), (19, 20)]):
        sink.handle_rows(_rows(offset, records), batch_id)
        view.reader.join(10)
    assert view.seen == [(9, {"offset_commit": 10}), (19, {"offset_commit": 20})]
    assert view.offsets_topic_lag == {} and view.ready


class _Frame:
    """What foreachBatch hands the sink: the state stage's whole output schema, the group lane's
    rows with their commit columns null, as Spark converts them."""

    def __init__(self, rows: list[tuple[str, str, str, int]]) -> None:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        from streaming.pipeline.state_stage import OUTPUT_SCHEMA

        schema = to_arrow_schema(OUTPUT_SCHEMA)
        filled = dict(zip(("group", "kind", "payload", "ts_ms"), zip(*rows)))
        self._table = pa.table({f.name: pa.array(filled.get(f.name, [None] * len(rows)), f.type)
                                for f in schema}, schema=schema)

    def toArrow(self):
        return self._table


def sink_scenario() -> list[int]:
    """collector_probe scenario: one batch of 200 new groups through the sink."""
    rows = []
    for g in range(200):
        state = None
        for p in range(25):
            state, _ = apply_to_group(state, offset_commit(f"g{g}", "orders", p, 100 + p, T0), 7,
                                      g * 25 + p, T0)
        rows.append((f"g{g}", "snapshot", compact_json.dumps(state.to_dict()), T0))
    frame = _Frame(rows)
    view = MonitorView()
    sink = BatchSink(view, None, OffsetsTopicProgress(None), snapshot_interval_s=60.0)
    with garbage_collections() as collections:
        sink(frame, 0)
    assert gc.isenabled()
    assert len(view.groups) == 200 and view.committed("g7")[("orders", 24)] == 124
    return collections


def test_a_batch_reaches_the_view_without_a_garbage_collection():
    # Every new partition leaves long-lived objects behind; the collector would otherwise scan
    # the growing older generations again and again within one batch.
    collections = collections_in_fresh_interpreter("tests.unit.test_batch_sink:sink_scenario")
    assert len(collections) <= 1  # at most one, as the collector is turned back on
