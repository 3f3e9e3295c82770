"""Every local-mode speed-up, applied to a session being built by one call: `tuned_session`.

Each piece lives in a module of its own, which says what it buys and how it was measured
(README.md beside this file has one line for each). The job calls this only when it launches
the driver itself with a `local[...]` master and `spark.local_tuning` is `auto`; under a cluster
master or spark-submit nothing here runs.
"""
from __future__ import annotations

import os
import sys
from typing import Mapping

from streaming.localmode.checkpoint_renames import use_plain_renames
from streaming.localmode.daemon_prestart import start_worker_daemon
from streaming.localmode.jvm_class_cache import with_class_cache
from streaming.localmode.jvm_jit import with_quick_jit
from streaming.localmode.lean_memory import lean_malloc, with_lean_memory
from streaming.localmode.python_zygote import ENV_KEY as ZYGOTE_ENV, start_zygote
from streaming.localmode.static_source_lookup import skip_static_source_lookup
from streaming.localmode.worker_python import worker_python

DAEMON_SETTINGS = {
    # Python workers fork from a daemon that has already imported what they run (PySpark's
    # worker, pyarrow, pandas, the job's stages; spark_daemon.py): each new worker would
    # otherwise import it all again, about 1 s of CPU.
    "spark.python.daemon.module": "streaming.localmode.spark_daemon",
    # With simplified tracebacks the state stage's workers get an environment variable the read
    # tasks' workers do not, and Spark starts a daemon per worker environment: a second daemon,
    # another 1.2 s of imports in the first query and a 180 MB process kept after it
    # (daemon_prestart.py).
    "spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled": "false",
}


def tuned_session(builder, user_conf: Mapping[str, str], checkpoint_path: str):
    """The session `builder` would create, with every local-mode speed-up: Spark's Python
    processes started through the wrapper and forked from the zygote, the driver JVM's class
    cache and quick JIT, the worker daemon's settings, plain checkpoint renames, no search for
    installed Python data sources, and the worker daemon started early. The user's `spark.conf`
    (`user_conf`) still wins over every setting made here. Memory between micro-batches is kept
    lean too: workers not reused, the driver's heap given back, few malloc arenas and
    large blocks given back as soon as they are freed."""
    lean_malloc()  # before the zygote and the JVM start, so that they inherit it
    if "PYSPARK_PYTHON" not in os.environ:
        os.environ["PYSPARK_PYTHON"] = worker_python()
        if os.environ["PYSPARK_PYTHON"] != sys.executable and ZYGOTE_ENV not in os.environ:
            zygote = start_zygote()
            if zygote:
                os.environ[ZYGOTE_ENV] = zygote[0]
    for key, value in DAEMON_SETTINGS.items():
        builder = builder.config(key, value)
    # This process launches the driver JVM: it can map the classes an earlier run loaded and
    # keep to the quick JIT, both through the driver's JVM options.
    for key, value in with_class_cache(with_quick_jit(with_lean_memory(user_conf))).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    use_plain_renames(spark, checkpoint_path)
    skip_static_source_lookup(spark)
    start_worker_daemon(spark)  # in the background, while the first query is planned
    return spark
