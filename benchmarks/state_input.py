"""What the state stage pays per offset commit for decoding the record again, against carrying
the decode stage's decoded fields to it.

The decode stage decodes every record in bulk (to find its group, compact superseded commits and
count what it read) and hands the state stage the record's key and value bytes; the state stage
decodes the rows that survive compaction once more into the objects its reducer applies.
Carrying the decoded fields instead means seven more columns through Spark's shuffle and its
Arrow-to-pandas conversion, and the objects must still be built from them. This prints both
per-record costs of the Python side (the shuffle's JVM side only adds to the carried columns).

    .venv/bin/python -m benchmarks.state_input
"""
from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

from benchmarks._stopping import stop_everything_at_exit
from coordinator.records import decode, encode
from coordinator.records.record import Record
from streaming.pipeline.state_stage import _records
from tests.support.state_timeline import offset_commit

RECORDS = 50_000
ROUNDS = 3


def _best(fn) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    commits = [offset_commit(f"g{i % 2000}", "t", i % 25, i, 1_700_000_000_000 + i)
               for i in range(RECORDS)]
    pairs = [encode(record) for record in commits]
    narrow = pa.table({
        "group": [f"g{i % 2000}" for i in range(RECORDS)],
        "o_partition": np.zeros(RECORDS, np.int32), "o_offset": np.arange(RECORDS),
        "ts_ms": np.arange(RECORDS),
        "key": pa.array([k for k, _ in pairs], pa.binary()),
        "value": pa.array([v for _, v in pairs], pa.binary()),
    })
    wide = narrow
    for name, column in (("topic", pa.array(["t"] * RECORDS)),
                         ("partition", pa.array(np.zeros(RECORDS, np.int32))),
                         ("offset", pa.array(np.arange(RECORDS))),
                         ("commit_ts", pa.array(np.arange(RECORDS))),
                         ("expire_ts", pa.array(np.arange(RECORDS))),
                         ("metadata", pa.array([""] * RECORDS)),
                         ("leader_epoch", pa.array(np.zeros(RECORDS, np.int32)))):
        wide = wide.append_column(name, column)
    narrow_frame, wide_frame = narrow.to_pandas(), wide.to_pandas()

    rows = _records([wide_frame])

    def build_from_fields() -> None:
        for row in rows:
            Record(1, "offset_commit",
                   {"group": row["group"], "topic": row["topic"], "partition": row["partition"]},
                   {"version": 3, "offset": row["offset"], "leader_epoch": row["leader_epoch"],
                    "metadata": row["metadata"], "commit_timestamp": row["commit_ts"]})

    per = 1e6 / RECORDS
    decode_s = _best(lambda: [decode(k, v) for k, v in pairs])
    narrow_s = _best(lambda: _records([narrow_frame]))
    wide_s = _best(lambda: _records([wide_frame]))
    print(f"{RECORDS:,} offset commits, best of {ROUNDS}:")
    print(f"  second decode in the state stage     {decode_s * per:5.2f} us/record")
    print(f"  rows from the frame, key and value   {narrow_s * per:5.2f} us/record")
    print(f"  rows from the frame, decoded fields  {wide_s * per:5.2f} us/record "
          f"(+{(wide_s - narrow_s) * per:.2f})")
    print(f"  records built from decoded fields    {_best(build_from_fields) * per:5.2f} us/record")


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
