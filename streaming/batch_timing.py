"""groupscope_batch_duration_seconds: Spark's own duration of each micro-batch of the job's
query (source, decode, state, sink and commit), taken from the progress Spark reports when a
micro-batch ends."""
from __future__ import annotations

from pyspark.sql.streaming import StreamingQueryListener

from streaming.view import MonitorView


class BatchDurations(StreamingQueryListener):
    """Observes every finished micro-batch of one query into the view. Spark's listeners see
    every query of the session, so `query_id` (known once the query has started) picks ours."""

    def __init__(self, view: MonitorView) -> None:
        self.view = view
        self.query_id: str | None = None
        self._last_batch: int | None = None

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        progress = event.progress
        if self.query_id is None or str(progress.id) != self.query_id:
            return
        # While no data arrives Spark repeats a progress report for the next batch id every
        # few seconds; that is a check for data, not a micro-batch.
        if progress.numInputRows == 0 or progress.batchId == self._last_batch:
            return
        self._last_batch = progress.batchId
        self.view.observe_batch(progress.batchDuration / 1000)

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass
