"""One line of figures per simulated run, for comparing strategies on the same scenario."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from coordinator.simulator.truth import GroundTruth


@dataclass(frozen=True)
class Summary:
    strategy: str
    protocol: str
    rebalances: int              # completed rebalances after the warm-up that left members
    partitions_moved: int        # summed over those rebalances
    stopped_partition_seconds: float  # time partitions sat unprocessed because of rebalances
    max_rebalance_seconds: float
    peak_backlog: int            # most messages waiting over all partitions at once, after the warm-up
    over_budget: int             # messages processed later than the latency budget, after the warm-up
    records: int                 # records written to __consumer_offsets

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(*, strategy: str, protocol: str, truth: GroundTruth, warmup_end_ms: int,
              peak_backlog: float, late: float, late_before_warmup: float, records: int) -> Summary:
    """The figures of a finished run, from its figures rather than the `Simulation` itself (which
    imports this module). `warmup_end_ms` is wall-clock; `late` counts every late message of the
    run, `late_before_warmup` those before the warm-up ended."""
    rebalances = [r for r in truth.rebalances if r.members_after and r.start_ms >= warmup_end_ms]
    return Summary(
        strategy=strategy, protocol=protocol, rebalances=len(rebalances),
        partitions_moved=sum(len(r.partitions_moved) for r in rebalances),
        stopped_partition_seconds=round(sum(d["seconds"] for r in rebalances for d in r.downtime), 3),
        max_rebalance_seconds=max(((r.end_ms - r.start_ms) / 1000.0 for r in rebalances
                                   if r.end_ms is not None), default=0.0),
        peak_backlog=int(round(peak_backlog)),
        over_budget=int(round(late - late_before_warmup)),
        records=records)


def format_table(summaries: list[Summary]) -> str:
    header = ("strategy", "protocol", "rebalances", "moved", "stopped p·s", "max reb s",
              "peak lag", "over budget", "records")
    rows = [(s.strategy, s.protocol, str(s.rebalances), str(s.partitions_moved),
             f"{s.stopped_partition_seconds:.1f}", f"{s.max_rebalance_seconds:.2f}",
             str(s.peak_backlog), str(s.over_budget), str(s.records)) for s in summaries]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in
                       enumerate(zip(row, widths))) for row in [header, *rows]]
    return "\n".join(lines)
