"""Local mode's Python processes run this interpreter without PySpark's zip on their path, so
they import the installed (compiled) PySpark; everything else on PYTHONPATH stays."""
from __future__ import annotations

import os
import subprocess
import sys

import pyspark

from streaming.worker_python import pyspark_zip, worker_python

SHOW = "import os, pyspark; print(os.environ.get('PYTHONPATH')); print(pyspark.__file__)"


def test_the_wrapper_drops_only_pysparks_zip(tmp_path):
    zip_path = pyspark_zip()
    assert zip_path is not None and zip_path.startswith(os.path.dirname(pyspark.__file__))
    other = str(tmp_path / "elsewhere")
    env = dict(os.environ, PYTHONPATH=f"{zip_path}:{other}:/has space/x.zip")
    out = subprocess.run([worker_python(), "-c", SHOW], env=env, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out[0] == f"{other}:/has space/x.zip"
    assert out[1] == pyspark.__file__

    # Without the wrapper the zip's copy wins: what every Spark worker used to import.
    out = subprocess.run([sys.executable, "-c", SHOW], env=env, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[1].startswith(zip_path)


def test_an_empty_path_stays_unset():
    env = dict(os.environ, PYTHONPATH=pyspark_zip())
    out = subprocess.run([worker_python(), "-c", SHOW], env=env, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0] == "None"


def test_arguments_reach_the_interpreter_unchanged():
    out = subprocess.run([worker_python(), "-c", "import sys; print(sys.argv[1:])", "a b", "*"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['a b', '*']"


def test_spark_workers_import_the_installed_pyspark(spark):
    def origin(_rows):
        import pyspark as worker_pyspark
        yield worker_pyspark.__file__

    files = spark.sparkContext.parallelize(range(2), 2).mapPartitions(origin).collect()
    assert files == [pyspark.__file__] * 2
