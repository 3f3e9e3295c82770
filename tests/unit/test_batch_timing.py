"""groupscope_batch_duration_seconds from the query's progress: each micro-batch with input
counted once, whether the poll sees it as the last report or finds it among the recent ones."""
from __future__ import annotations

from dataclasses import dataclass

from streaming.job.batch_timing import BatchDurations
from streaming.exporter.view import MonitorView


@dataclass
class Progress:
    batchId: int
    numInputRows: int
    batchDuration: int  # ms
    timestamp: str


class FakeQuery:
    """What the poller reads of a StreamingQuery: `lastProgress` and `recentProgress`."""

    def __init__(self) -> None:
        self.reports: list[Progress] = []
        self.recent_reads = 0

    def finish(self, batch_id: int, rows: int, duration_ms: int) -> None:
        self.reports.append(Progress(batch_id, rows, duration_ms, f"t{len(self.reports)}"))

    @property
    def lastProgress(self) -> Progress | None:
        return self.reports[-1] if self.reports else None

    @property
    def recentProgress(self) -> list[Progress]:
        self.recent_reads += 1
        return list(self.reports)


def observed(view: MonitorView) -> tuple[int, float]:
    return view.batch_duration.count, round(view.batch_duration.sum, 6)


def test_each_batch_with_input_is_observed_once():
    view, query = MonitorView(), FakeQuery()
    timing = BatchDurations(view, query)
    timing.poll()                                  # nothing has run yet
    query.finish(0, 100, 1500)
    timing.poll()
    timing.poll()                                  # the same report again
    assert observed(view) == (1, 1.5)
    reads = query.recent_reads
    query.finish(1, 40, 700)
    timing.poll()
    assert observed(view) == (2, 2.2)
    assert query.recent_reads == reads             # the next batch alone: its report is enough


def test_batches_finished_between_polls_are_found_in_the_recent_reports():
    view, query = MonitorView(), FakeQuery()
    timing = BatchDurations(view, query)
    query.finish(0, 10, 1000)
    timing.poll()
    query.finish(1, 10, 2000)
    query.finish(2, 10, 3000)
    query.finish(3, 10, 4000)
    reads = query.recent_reads
    timing.poll()
    assert observed(view) == (4, 10.0)
    assert query.recent_reads == reads + 1


def test_idle_checks_are_not_batches_and_do_not_hide_the_batch_before_them():
    view, query = MonitorView(), FakeQuery()
    timing = BatchDurations(view, query)
    query.finish(0, 10, 1000)
    query.finish(1, 0, 5)     # Spark checking for data: repeated for the next batch id
    timing.poll()
    query.finish(1, 0, 5)
    timing.poll()
    assert observed(view) == (1, 1.0)
    query.finish(1, 20, 800)  # then batch 1 runs with data
    timing.poll()
    assert observed(view) == (2, 1.8)


def test_a_restarted_query_continues_from_its_checkpointed_batch_id():
    view, query = MonitorView(), FakeQuery()
    timing = BatchDurations(view, query)
    query.finish(41, 5, 900)
    timing.poll()
    query.finish(42, 5, 100)
    timing.poll()
    assert observed(view) == (2, 1.0)


def test_stop_polls_once_more():
    view, query = MonitorView(), FakeQuery()
    timing = BatchDurations(view, query, interval_s=60).start()
    query.finish(0, 3, 250)
    timing.stop()
    assert observed(view) == (1, 0.25)
