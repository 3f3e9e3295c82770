"""A local-mode job holds less memory between micro-batches: Python workers are not reused, the
driver JVM gives unused heap back, and processes keep few malloc arenas and give large blocks
back; the user's own choices
win."""
from __future__ import annotations


from streaming.localmode.lean_memory import (ARENAS, HEAP_OPTIONS, MMAP_THRESHOLD, WORKER_REUSE,
                                             with_lean_memory)


def test_workers_are_not_reused_and_the_heap_is_given_back():
    conf = with_lean_memory({"spark.driver.extraJavaOptions": "-Xss4m"})
    assert conf == {WORKER_REUSE: "false", "spark.driver.extraJavaOptions": f"{HEAP_OPTIONS} -Xss4m"}


def test_the_users_own_choices_win():
    conf = {WORKER_REUSE: "true", "spark.driver.extraJavaOptions": "-XX:+UseSerialGC"}
    assert with_lean_memory(conf) == conf
    conf = {"spark.driver.extraJavaOptions": "-XX:MaxHeapFreeRatio=70"}
    assert with_lean_memory(conf)["spark.driver.extraJavaOptions"] == "-XX:MaxHeapFreeRatio=70"


def test_the_driver_runs_lean(startup):
    for run in startup["auto"]:  # started without glibc's settings: the tuning sets them
        assert set(HEAP_OPTIONS.split()) <= set(run["args"])
        assert run["reuse"] == "false"
        assert run["jvm_arenas"] == run["arenas"] == ARENAS
        assert run["jvm_mmap_threshold"] == run["mmap_threshold"] == MMAP_THRESHOLD
