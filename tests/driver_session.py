"""Running a script in a new Python process, so that it launches a driver JVM of its own."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_new_session(script: str, cache_home, **extra_env: str) -> Any:
    """Runs `script` with groupscope's cache under `cache_home` and PySpark left to pick its
    worker Python (as `groupscope run` does); returns the JSON of its last output line."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home), **extra_env}
    env.pop("PYSPARK_PYTHON", None)
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])
