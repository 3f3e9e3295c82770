"""The average record size of each size-limited partition the view polls, from its size on disk
(`streaming.kafka.log_sizes`) over the records it holds (log end - log start at the read): what
size-based retention risk multiplies the lag and the rates by. The whole log's average, not the
last minutes' growth: deletions take whole segments off the size, so a window of size samples
would see the log shrink as often as grow, while the average of what is kept changes only as
the records' size does. Callers hold the view's lock.
"""
from __future__ import annotations

from typing import Mapping

from coordinator.retention import RetentionConfig
from streaming.exporter.ends_table import tp_key, tp_parts


def size_limited_partitions(view, configs: Mapping[str, RetentionConfig]) -> dict[str, list[int]]:
    """topic -> the partitions the view polls of each topic whose retention.bytes deletes."""
    limited = {view.topics.ids[name] for name, config in configs.items()
               if config.size_limited and name in view.topics.ids}
    out: dict[str, list[int]] = {}
    for key in view.ends.index:
        topic_id, partition = tp_parts(key)
        if topic_id in limited:
            out.setdefault(view.topics.names[topic_id], []).append(partition)
    return {topic: sorted(ids) for topic, ids in out.items()}


def record_bytes(view, sizes: Mapping[tuple[str, int], int]) -> dict[int, float]:
    """tp key -> bytes a record, for partitions with records (a size over none says nothing)."""
    ends, out = view.ends, {}
    for (topic, partition), size in sizes.items():
        topic_id = view.topics.ids.get(topic)
        row = None if topic_id is None else ends.index.get(tp_key(topic_id, partition))
        if row is None or not ends.counts[row] or ends.starts[row] < 0:
            continue  # no end offset or no log start read yet
        held = ends.latest(tp_key(topic_id, partition))[0] - int(ends.starts[row])
        if held > 0 and size > 0:
            out[tp_key(topic_id, partition)] = size / held
    return out
