"""`python -m tests.support.warm_class_cache`: writes the driver JVM's class archive
(streaming/localmode/jvm_class_cache.py) before the test lanes start, when there is none yet.

On a machine that has never run groupscope, every Spark JVM the lanes start before a first
archive is in place loads Spark's classes itself: a session's start took about 26 s there
against 5 s mapping the archive (measured on 2 cores), and about twenty such JVMs start in a
run. A JVM writes the archive only when it exits, and the product adopts a dump only once it has
settled, so this one session is started, stopped, its JVM waited for, and its dump put in place.
"""
from __future__ import annotations

import glob
import os
import sys


def main() -> int:
    from pyspark import SparkContext

    from streaming.localmode.jvm_class_cache import adopt_dump, archive_stem, cache_dir
    from tests.conftest import build_test_spark

    stem = archive_stem({})
    final = stem + ".jsa"
    if os.path.exists(final):
        print(f"driver JVM class archive: in {cache_dir()}")
        return 0
    spark = build_test_spark()
    spark.range(1000).selectExpr("sum(id)").collect()
    jvm = SparkContext._gateway.proc
    spark.stop()
    jvm.stdin.close()  # the gateway exits at the end of its input, and writes the archive then
    jvm.wait(timeout=180)
    for part in glob.glob(f"{stem}.{os.getpid()}.part"):
        adopt_dump(part)
    written = os.path.exists(final)
    print(f"driver JVM class archive: {'written' if written else 'not written'} in {cache_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
