"""Running a script in a new Python process, so that it launches a driver JVM of its own."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.support import paths

ROOT = str(paths.ROOT)


def run_new_session(script: str, cache_home, python: str = sys.executable, **extra_env: str) -> Any:
    """Runs `script` with `python`, groupscope's cache under `cache_home` and PySpark left to
    pick its worker Python (as `groupscope run` does); returns the JSON of its last output
    line."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home), **extra_env}
    env.pop("PYSPARK_PYTHON", None)
    out = subprocess.run([python, "-c", script], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


# The start of a script for `run_new_session`: a job session (`build_spark`) over a replay
# source at CAPTURE (replace it), local[1], local-mode tuning as $LOCAL_TUNING says (auto). -Xshare:auto leaves out the class-data archive,
# which a JVM would otherwise spend seconds writing into the test's cache directory on its way
# out.
REPLAY_SESSION = """
import json, os, sys
from tests.support.jvm_children import children_of, jvm_children
from streaming.config import Config, SourceConfig, SparkConfig
from streaming.job.session import build_spark

config = Config(spark=SparkConfig(master="local[1]",
                                  conf={"spark.driver.extraJavaOptions": "-Xshare:auto"},
                                  local_tuning=os.environ.get("LOCAL_TUNING", "auto")),
                source=SourceConfig(type="replay", replay_path=CAPTURE))
spark = build_spark(config)
"""
