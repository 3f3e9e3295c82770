"""The three ways through the v2 batch parser (streaming/kafka/v2_record_columns.py), for tests
that want each of them whatever the size of their input."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from streaming.kafka import v2_record_columns

# (records from which numpy reads the fields, batches from which numpy finds where records
# start): numpy for both; numpy fields with record starts walked in Python; everything record by
# record in Python.
PATHS = {"numpy": (0, 1), "walked": (0, 10**9), "record-by-record": (10**9, 1)}


@contextmanager
def path(name: str) -> Iterator[None]:
    saved = v2_record_columns._VECTORISED_FROM, v2_record_columns._PYTHON_WALK_BELOW
    v2_record_columns._VECTORISED_FROM, v2_record_columns._PYTHON_WALK_BELOW = PATHS[name]
    try:
        yield
    finally:
        v2_record_columns._VECTORISED_FROM, v2_record_columns._PYTHON_WALK_BELOW = saved
