"""Local mode's Python processes run this interpreter without Spark's own copies of PySpark and
py4j, or its spark-core jar, on their path, so they import the installed (compiled) packages and
never read a zip's directory; everything else on PYTHONPATH stays."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import py4j
import py4j.version
import pyspark

from streaming.localmode.worker_python import pyspark_zip, spark_path_entries, worker_python

SHOW = ("import os, pyspark, py4j; print(os.environ.get('PYTHONPATH')); print(pyspark.__file__); "
        "print(py4j.__file__)")


def test_the_wrapper_drops_only_sparks_own_entries(tmp_path):
    zip_path, py4j_zip, jar = spark_path_entries()
    assert zip_path == pyspark_zip() and zip_path.startswith(os.path.dirname(pyspark.__file__))
    assert os.path.basename(py4j_zip) == f"py4j-{py4j.version.__version__}-src.zip"
    assert os.path.basename(jar).startswith("spark-core_") and os.path.isfile(jar)
    other = str(tmp_path / "elsewhere")
    env = dict(os.environ,
               PYTHONPATH=f"{zip_path}:{py4j_zip}:{other}:{jar}:/has space/x.zip:{jar}x")
    out = subprocess.run([worker_python(), "-c", SHOW], env=env, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out[0] == f"{other}:/has space/x.zip:{jar}x"
    assert out[1:] == [pyspark.__file__, py4j.__file__]

    # Without the wrapper the zips' copies win: what every Spark worker used to import.
    out = subprocess.run([sys.executable, "-c", SHOW], env=env, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[1].startswith(zip_path) and out[2].startswith(py4j_zip)


def test_sparks_py4j_stays_unless_the_same_version_is_installed(monkeypatch):
    monkeypatch.setattr(py4j.version, "__version__", "0.0.1")
    entries = spark_path_entries()
    assert len(entries) == 2 and not any("py4j" in entry for entry in entries)


def test_the_dropped_jar_holds_no_python():
    """Dropping the jar from the path can only be right while it has nothing to import."""
    jar = spark_path_entries()[-1]
    with zipfile.ZipFile(jar) as archive:
        names = archive.namelist()
    assert len(names) > 1000
    assert [n for n in names if n.endswith((".py", ".pyc", ".so")) or "__init__" in n] == []


def test_an_empty_path_stays_unset():
    env = dict(os.environ, PYTHONPATH=":".join(spark_path_entries()))
    out = subprocess.run([worker_python(), "-c", SHOW], env=env, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0] == "None"


def test_arguments_reach_the_interpreter_unchanged():
    out = subprocess.run([worker_python(), "-c", "import sys; print(sys.argv[1:])", "a b", "*"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['a b', '*']"


def test_spark_workers_import_the_installed_packages_and_no_zip(spark):
    def origin(_rows):
        import sys

        import py4j as worker_py4j
        import pyspark as worker_pyspark
        zips = sorted(key for key, finder in sys.path_importer_cache.items()
                      if type(finder).__name__ == "zipimporter")
        yield worker_pyspark.__file__, worker_py4j.__file__, zips

    found = spark.sparkContext.parallelize(range(2), 2).mapPartitions(origin).collect()
    assert found == [(pyspark.__file__, py4j.__file__, [])] * 2
