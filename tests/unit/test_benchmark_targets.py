"""The many-groups targets table (benchmarks/_targets.py) reads other benchmarks' output: these
lines are as benchmarks.exporter, benchmarks.state_stage and benchmarks.memory print them."""
from benchmarks._targets import (at_most, full_render_seconds, gzip_scrape_seconds,
                                 state_stage_medians, table, total_pss_mb)

EXPORTER = """groups=20000 committed partitions=1000000 topic partitions=500000
refresh (full: state and lag of every group; runs in the poller thread): 6.50 s wall, 6.12 s CPU
refresh (after a poll: the lag part; runs in the poller thread): 3.40 s wall, 3.30 s CPU
"""
STATE_STAGE = """CPU probe (benchmarks.cluster.CPU_PROBE): 0.78 s; layout bucket-map
   2000 groups held: creating them 3.30 s; a batch of 1000 touched groups: median 0.78 s (0.88, 0.67)
 100000 groups held: creating them 17.40 s; a batch of 1000 touched groups: median 1.06 s (0.92, 1.19)
"""
MEMORY = """   12345    1200     900  python -m streaming.cli.main run
total: RSS 2,345 MB, PSS 1,590 MB, 14 processes
"""


def test_the_other_benchmarks_figures_are_read_back():
    assert full_render_seconds(EXPORTER) == 6.50
    assert state_stage_medians(STATE_STAGE) == {2000: 0.78, 100000: 1.06}
    assert total_pss_mb(MEMORY) == 1590.0
    assert full_render_seconds("") is None and total_pss_mb("") is None
    assert state_stage_medians("") == {}


def test_each_target_says_met_missed_or_not_measured():
    rows = table([at_most("scrape, s", 0.22, 2.0, "under 2 s"),
                  at_most("served, s", 31.2, 21.9, "at most Burrow's", 21.9),
                  at_most("render, s", None, 1.0, "under 1 s")]).splitlines()
    assert rows[1].endswith(" met") and "0.22" in rows[1]
    assert rows[2].endswith(" missed") and "21.90" in rows[2]
    assert rows[3].endswith(" not measured")


def test_the_exporter_benchmarks_gzip_scrape_is_read_back():
    out = EXPORTER + (
        "HTTP scrape (plain): 1.10 s wall, 0.90 s CPU (client included), 250.0 MB on the wire\n"
        "HTTP scrape (gzip): 0.22 s wall, 0.05 s CPU (client included), 34.2 MB on the wire\n")
    assert gzip_scrape_seconds(out) == 0.22
    assert gzip_scrape_seconds(EXPORTER) is None
