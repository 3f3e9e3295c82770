"""A local-mode job holds less memory between micro-batches: Python workers are not reused, the
driver JVM gives unused heap back, and processes keep few malloc arenas; the user's own choices
win."""
from __future__ import annotations


from streaming.localmode.lean_memory import HEAP_OPTIONS, WORKER_REUSE, with_lean_memory
from tests.support.driver_session import run_new_session


def test_workers_are_not_reused_and_the_heap_is_given_back():
    conf = with_lean_memory({"spark.driver.extraJavaOptions": "-Xss4m"})
    assert conf == {WORKER_REUSE: "false", "spark.driver.extraJavaOptions": f"{HEAP_OPTIONS} -Xss4m"}


def test_the_users_own_choices_win():
    conf = {WORKER_REUSE: "true", "spark.driver.extraJavaOptions": "-XX:+UseSerialGC"}
    assert with_lean_memory(conf) == conf
    conf = {"spark.driver.extraJavaOptions": "-XX:MaxHeapFreeRatio=70"}
    assert with_lean_memory(conf)["spark.driver.extraJavaOptions"] == "-XX:MaxHeapFreeRatio=70"


_RUN = """
import json, os
from streaming.config import Config, SparkConfig
from streaming.job.session import build_spark
spark = build_spark(Config(spark=SparkConfig(master="local[1]", conf=CONF)))
jvm = spark.sparkContext._jvm
args = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
print(json.dumps({"args": args, "reuse": spark.conf.get("spark.python.worker.reuse"),
                  "jvm_arenas": jvm.java.lang.System.getenv("MALLOC_ARENA_MAX"),
                  "arenas": os.environ.get("MALLOC_ARENA_MAX")}))
"""


def test_the_driver_runs_lean(tmp_path):
    # -Xshare:auto leaves out the class-data archive (see test_jvm_jit.py).
    conf = {"spark.driver.extraJavaOptions": "-Xshare:auto"}
    seen = run_new_session(_RUN.replace("CONF", repr(conf)), tmp_path)
    assert set(HEAP_OPTIONS.split()) <= set(seen["args"])
    assert seen["reuse"] == "false"
    assert seen["jvm_arenas"] == seen["arenas"] == "2"
