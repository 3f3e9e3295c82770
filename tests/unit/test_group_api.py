"""`/groups/<group>`: one group's state and offsets as JSON, read from the same view as /metrics:
committed offsets as the offsets lane left them, the lag against the log end last polled (log end
minus committed, as kafka-consumer-groups.sh computes it), nothing for a group the job does not
serve."""
from __future__ import annotations

import json

from coordinator.state.lanes import offsets_only_view
from streaming.exporter.metrics_cache import MetricsCache
from streaming.exporter.selection import Selection
from streaming.exporter.server import ExporterSettings, metrics_app
from streaming.exporter.view import MonitorView, ViewSettings
from streaming.offsets.lane import OffsetsLane
from tests.unit.test_view_offsets_lane import T0, _batch


def _get(view: MonitorView, path: str) -> tuple[str, str, bytes]:
    answer = {}
    body = b"".join(metrics_app(MetricsCache(view), ExporterSettings())(
        {"PATH_INFO": path}, lambda status, headers: answer.update(status=status, headers=headers)))
    return answer["status"], dict(answer["headers"])["Content-Type"], body


def test_a_group_is_served_with_its_offsets_and_lag():
    view = MonitorView(ViewSettings(cluster="prod"))
    lane = OffsetsLane()
    _batch(lane, view, [("billing app", 0, "orders", 0, 10), ("billing app", 1, "orders", 1, 20),
                        ("billing app", 2, "orders", 0, 11)])
    view.update_end_offsets({("orders", 0): 15}, {("orders", 0): 0}, T0 / 1000, 0.01)
    status, kind, body = _get(view, "/groups/billing%20app")
    assert (status, kind) == ("200 OK", "application/json")
    (doc,) = json.loads(body)
    assert {k: doc[k] for k in ("cluster", "group", "state", "group_type", "generation", "members")} \
        == {"cluster": "prod", "group": "billing app", "state": "Empty", "group_type": "classic",
            "generation": 0, "members": 0}
    assert doc["offsets"] == [
        {"topic": "orders", "partition": 0, "committed_offset": 11, "log_end_offset": 15, "lag": 4},
        {"topic": "orders", "partition": 1, "committed_offset": 20, "log_end_offset": None,
         "lag": None}]


def test_unknown_deleted_and_excluded_groups_are_not_found():
    view = MonitorView(ViewSettings(cluster="prod", groups=Selection(exclude=("internal-.*",))))
    lane = OffsetsLane()
    _batch(lane, view, [("g", 0, "orders", 0, 10), ("internal-x", 1, "orders", 0, 3)])
    assert _get(view, "/groups/g")[0] == "200 OK"
    dead = dict(offsets_only_view("g", 4, T0 + 2), state="Dead")
    deleted = {"event": "group_deleted", "group": "g", "timestamp_ms": T0 + 2, "partition": 4,
               "offset": 2, "group_type": "classic", "generation": 0}
    _batch(lane, view, [], snapshots=[dead], events=[deleted])
    for path in ("/groups/g", "/groups/internal-x", "/groups/nobody", "/groups/"):
        status, kind, body = _get(view, path)
        assert status == "404 Not Found" and kind == "text/plain", (path, body)
    assert b"/groups/<group>" in _get(view, "/nowhere")[2]
