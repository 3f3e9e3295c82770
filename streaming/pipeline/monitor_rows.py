"""How the decode stage's counters travel to the state stage: as extra rows under MONITOR_KEY,
with what is counted in `key` and the count in `value` (UTF-8 text).

A module of its own, without the decode stage's imports, because the state stage needs these
names in a Python process Spark starts for every query (streaming.pipeline.state_stage).
"""
from __future__ import annotations

# Never a Kafka group id: group ids are Java strings written as UTF-8 and a NUL-led id is not
# something any client produces.
MONITOR_KEY = "\u0000groupscope-monitor"

COUNT_RECORDS = "records:"      # + type_name: records decoded
COUNT_SKIPPED = "skipped:"      # + reason: records skipped
PROGRESS = "progress"           # o_partition / o_offset: highest offset read per partition
