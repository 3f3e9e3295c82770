"""Running a script in a new Python process, so that it launches a driver JVM of its own."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from streaming.localmode.python_zygote import ENV_KEY as ZYGOTE_VARIABLE
from tests.support import paths
from tests.support.jvm_archives import user_class_sharing

ROOT = str(paths.ROOT)


def run_new_session(script: str, cache_home, python: str = sys.executable, **extra_env: str) -> Any:
    """Runs `script` with `python`, groupscope's cache under `cache_home` and PySpark left to
    pick its worker Python (as `groupscope run` does); returns the JSON of its last output
    line."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home),
           "GS_TEST_JVM_CLASSES": user_class_sharing(), **extra_env}
    # What this test process's own session set in its environment must not reach the new one:
    # it would pass for what the new session's tuning is meant to set itself.
    for inherited in ("PYSPARK_PYTHON", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_",
                      ZYGOTE_VARIABLE):
        if inherited not in extra_env:
            env.pop(inherited, None)
    out = subprocess.run([python, "-c", script], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


# The start of a script for `run_new_session`: a job session (`build_spark`) over a replay
# source at CAPTURE (replace it), local[1], local-mode tuning as $LOCAL_TUNING says (auto), the
# user's JVM options "-Xss4m" and $GS_TEST_JVM_CLASSES (-Xss4m is an option of the user's that
# tuning must keep; the other maps the class archive of the machine's own cache, or with
# -Xshare:auto leaves class sharing out, as a user's own choice either way: the job would
# otherwise spend seconds writing an archive into the test's cache directory on its way out).
REPLAY_SESSION = """
import json, os, sys
from tests.support.jvm_children import children_of, jvm_children
from streaming.config import Config, SourceConfig, SparkConfig
from streaming.job.session import build_spark

config = Config(spark=SparkConfig(master="local[1]",
                                  conf={"spark.driver.extraJavaOptions":
                                        "-Xss4m " + os.environ["GS_TEST_JVM_CLASSES"]},
                                  local_tuning=os.environ.get("LOCAL_TUNING", "auto")),
                source=SourceConfig(type="replay", replay_path=CAPTURE))
spark = build_spark(config)
"""

# A job session that creates the job's source and reports what local-mode tuning decides at
# start-up: the processes Spark's Python runs in (zygote, clients, plain), Spark's search for
# installed data sources, the driver JVM's arguments, worker reuse and glibc's malloc settings. With
# LOCAL_TUNING=off it also loads the replay format by name as Spark alone would.
STARTUP_REPORT = REPLAY_SESSION + """
from streaming.sources import build_source

frame = build_source(spark, config, decoded=True)  # Spark's Python process creates the source
out = {"zygotes": list(children_of(os.getpid(), "streaming.localmode.python_zygote").values()),
       "clients": list(jvm_children(spark, "zygote_client.py").values()),
       "python": list(jvm_children(spark, "create_data_source").values()),
       "columns": frame.columns}
if os.environ.get("LOCAL_TUNING") == "off":
    from streaming.sources.replay import ReplayDataSource
    spark.dataSource.register(ReplayDataSource)
    out["columns"] = spark.readStream.format("groupscope-replay").option("path", CAPTURE).load().columns
jvm = spark.sparkContext._jvm
manager = getattr(getattr(jvm.org.apache.spark.sql.execution.datasources, "DataSourceManager$"),
                  "MODULE$")
out.update(searches=list(jvm_children(spark, "lookup_data_sources").values()),
           found=manager.dataSourceBuilders().get().size(),
           args=list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                     .getInputArguments()),
           reuse=spark.conf.get("spark.python.worker.reuse", None),
           jvm_arenas=jvm.java.lang.System.getenv("MALLOC_ARENA_MAX"),
           arenas=os.environ.get("MALLOC_ARENA_MAX"),
           jvm_mmap_threshold=jvm.java.lang.System.getenv("MALLOC_MMAP_THRESHOLD_"),
           mmap_threshold=os.environ.get("MALLOC_MMAP_THRESHOLD_"))
print(json.dumps(out))
"""


def startup_reports(cache_home, capture: str) -> dict[str, list[dict]]:
    """STARTUP_REPORT of new job sessions: "auto" (local-mode tuning on; run again, up to three
    times, while the source's creator started before the zygote was up and so the usual way)
    and "off" (one run)."""
    script = STARTUP_REPORT.replace("CAPTURE", repr(capture))
    auto = []
    for _ in range(3):
        auto.append(run_new_session(script, cache_home))
        if auto[-1]["clients"]:
            break
    return {"auto": auto, "off": [run_new_session(script, cache_home, LOCAL_TUNING="off")]}
