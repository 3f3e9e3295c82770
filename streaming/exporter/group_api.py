"""`/groups/<group>`: one group as JSON, what a script or a person asks for one group without
scraping every series (Burrow answers the same question at `/v3/kafka/<cluster>/consumer/<group>`).

It is read from the view under its lock, as `/metrics` is, so it is never older than the series:
the group's state and generation from its latest snapshot (an offsets-only group is Empty, as
Kafka shows it), and per partition the committed offset, the log end offset last polled and the
lag between them, as `kafka-consumer-groups.sh --describe` computes it (log end minus committed).
"""
from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from coordinator.lag import partition_lag
from streaming.exporter.view import MonitorView

PREFIX = "/groups/"

# Kept from the group's snapshot (coordinator.state GroupState.to_dict): what it is now, not
# its members' assignments (those are series and history rows).
_FIELDS = ("group_type", "protocol_type", "protocol", "state", "generation", "assignment_epoch",
           "leader", "updated_ms")


def group_name(path: str) -> str | None:
    """The group a `/groups/<group>` path names (percent-decoded), None for other paths."""
    if not path.startswith(PREFIX) or len(path) == len(PREFIX):
        return None
    return unquote(path[len(PREFIX):])


def group_document(view: MonitorView, group: str) -> dict[str, Any] | None:
    """`group` as this view serves it, None when the view does not serve it (unknown, deleted,
    or outside groups.include / groups.exclude)."""
    if not view.tracks(group):
        return None
    with view.lock:
        record = view.groups.get(group)
        if record is None or record.dead_since_s is not None:
            return None
        snapshot = record.snapshot or {}
        doc: dict[str, Any] = {"cluster": view.settings.cluster, "group": group}
        doc.update({key: snapshot.get(key) for key in _FIELDS})
        if not snapshot:
            doc.update(state="Empty", group_type="classic")
        doc["members"] = len(snapshot.get("members") or ())
        offsets = []
        for (topic, partition), committed in sorted(view.committed(group).items()):
            end = view.log_end((topic, partition))
            offsets.append({"topic": topic, "partition": partition, "committed_offset": committed,
                            "log_end_offset": None if end is None else end[0],
                            "lag": None if end is None else partition_lag(end[0], committed).lag})
        doc["offsets"] = offsets
    return doc
