"""Spark starts fresh Python processes to plan every query: one loads our source to learn its
schema and plan its reads, one loads the state processor only to call its `init` (for the state
schema). What those modules import at load time is paid on every query start, so the heavy
libraries the tasks need stay out of it."""
from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pandas", "numpy", "pyarrow")
# What only the read tasks need: the decoder and the compute kernels it runs on.
DECODING = ("pyarrow.compute", "streaming.pipeline.decode_stage", "coordinator.batch_decode",
            "coordinator.records")


def _loaded_after(module: str, names=HEAVY) -> dict[str, bool]:
    probe = (f"import sys, json, {module}; "
             f"print(json.dumps({{name: name in sys.modules for name in {list(names)!r}}}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_the_state_processor_loads_without_pandas_numpy_or_pyarrow():
    assert _loaded_after("streaming.pipeline.state_stage") == {name: False for name in HEAVY}


def test_the_sources_load_without_pandas_or_the_decoder():
    # Their schemas need pyarrow (which loads numpy); pandas and the decoder only the task
    # workers have.
    for module in ("streaming.sources", "streaming.sources.in_task_decode"):
        assert _loaded_after(module)["pandas"] is False
        assert _loaded_after(module, DECODING) == {name: False for name in DECODING}
