"""A stop drains the sink: the micro-batch in flight ends and is committed, and one that begins
after the stop does nothing and ends as interrupted by the stop. A batch that outlasts the grace
period is cancelled, and the sink turns the cancelled collect into a short error worded for
Spark: Spark's own classifier (StreamExecution.isInterruptionException) overflowed its stack on
the long error before, and the stream thread died with a StackOverflowError on stderr."""
from __future__ import annotations

import logging
import threading
import traceback

import pytest
from py4j.protocol import Py4JJavaError

from tests.support.job_support import replay_config
from streaming.job.lifecycle import BatchSink, Job, OffsetsTopicProgress, QueryStopping, collect_output
from streaming.exporter.view import MonitorView

# What a cancelled collect raises in the sink: py4j's error with the Java stack trace.
CANCELLED = ("An error occurred while calling o416.getResult.\n"
             ": org.apache.spark.SparkException: Exception thrown in awaitResult: \n"
             + "\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:70)\n"
             * 400 + "Caused by: java.lang.InterruptedException\n")


class _CancelledCollect:
    def __init__(self, stopping: threading.Event | None = None) -> None:
        self.stopping = stopping

    def toArrow(self):
        if self.stopping is not None:  # the stop came while the batch ran
            self.stopping.set()
        raise RuntimeError(CANCELLED)


class _HeldBatch:
    """A micro-batch that ends when the test says so."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()

    def toArrow(self):
        from pyspark.sql.pandas.types import to_arrow_schema

        from streaming.pipeline.state_stage import OUTPUT_SCHEMA

        self.started.set()
        assert self.release.wait(30)
        return to_arrow_schema(OUTPUT_SCHEMA).empty_table()  # the state stage's whole schema


def _in_thread(call) -> tuple[threading.Thread, list]:
    outcome: list = []

    def run():
        try:
            outcome.append(call())
        except BaseException as exc:  # the test reads it
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def _seen_by_spark(exc: BaseException) -> str:
    """The text Spark receives from py4j when foreachBatch's function raises `exc`."""
    try:
        raise exc
    except BaseException:
        return traceback.format_exc()


def _is_interruption(spark, text: str) -> bool:
    execution = spark._jvm.org.apache.spark.sql.execution.streaming.runtime.StreamExecution
    return execution.isInterruptionException(spark._jvm.py4j.Py4JException(text),
                                             spark.sparkContext._jsc.sc())


def test_a_collect_cancelled_by_the_stop_reads_as_a_stop_to_spark(spark):
    sink = BatchSink(MonitorView(), None, OffsetsTopicProgress(None), 300.0)
    with pytest.raises(QueryStopping) as stopped:
        sink(_CancelledCollect(sink.stopping), 7)
    text = _seen_by_spark(stopped.value)
    assert "RuntimeError" not in text and len(text) < 2_000
    assert _is_interruption(spark, text)
    assert sink.batches == 0
    # The error it replaces: Spark's classifier fails on it.
    with pytest.raises(Py4JJavaError):
        _is_interruption(spark, "Traceback (most recent call last):\n"
                                "py4j.protocol.Py4JJavaError: " + CANCELLED)


def test_a_stop_waits_for_the_batch_in_flight():
    sink = BatchSink(MonitorView(), None, OffsetsTopicProgress(None), 300.0)
    batch = _HeldBatch()
    thread, outcome = _in_thread(lambda: sink(batch, 3))
    assert batch.started.wait(10)
    assert sink.drain(0.2) is False  # still running
    assert sink.stopping.is_set()
    batch.release.set()
    assert sink.drain(10) is True
    thread.join(10)
    assert outcome == [None] and sink.batches == 1


def test_a_batch_that_begins_after_the_stop_does_nothing_and_reads_as_a_stop(spark):
    sink = BatchSink(MonitorView(), None, OffsetsTopicProgress(None), 300.0)
    active = threading.Event()
    active.set()
    sink.query_active = active.is_set
    assert sink.drain(1) is True  # nothing in flight
    batch = _HeldBatch()
    thread, outcome = _in_thread(lambda: sink(batch, 4))
    # Until the query is stopped the batch waits: failing earlier would fail the query.
    thread.join(0.5)
    assert thread.is_alive() and not outcome
    active.clear()
    thread.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], QueryStopping)
    assert not batch.started.is_set() and sink.batches == 0
    assert _is_interruption(spark, _seen_by_spark(outcome[0]))


def test_a_failure_before_the_stop_stays_what_it_is():
    with pytest.raises(RuntimeError) as failed:
        collect_output(_CancelledCollect(), threading.Event())
    assert str(failed.value) == CANCELLED


def _job_with_sink(tmp_path) -> Job:
    """A job as `start` leaves it, without Spark: its sink and no query."""
    job = Job(replay_config(tmp_path, str(tmp_path / "none.jsonl")), start_exporter=False,
              start_poller=False)
    job.sink = BatchSink(job.view, None, OffsetsTopicProgress(None), 300.0)
    return job


def test_the_job_marks_its_sink_stopping_before_it_stops_the_query(tmp_path):
    job = _job_with_sink(tmp_path)
    seen = []

    class Query:
        def stop(self):
            seen.append(job.sink.stopping.is_set())

    job.query = Query()
    job.stop()
    assert seen == [True]


def test_py4j_reports_no_error_for_the_stops_interruption(tmp_path, caplog):
    """py4j logs each error a Python callback raises, with its traceback, as an ERROR."""
    job = _job_with_sink(tmp_path)
    job.stop()
    py4j_log = logging.getLogger("py4j.clientserver")
    for error in (QueryStopping("stop"), RuntimeError("a real failure")):
        try:
            raise error
        except Exception:
            with caplog.at_level(logging.ERROR, logger="py4j.clientserver"):
                py4j_log.exception("There was an exception while executing the Python Proxy")
    assert [r.exc_info[0] for r in caplog.records if r.name == "py4j.clientserver"] == [
        RuntimeError]
