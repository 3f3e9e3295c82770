"""The interpreter Spark starts its Python processes with when the job runs in local mode.

Spark puts the `pyspark.zip` shipped inside the pyspark package first on the path of every Python
process it starts: task workers, the streaming source's runner, and the runners that plan a
query (data source creation, the state processor's `init`). Python keeps no compiled code for
modules imported from a zip, so each of those processes compiled PySpark again: `import
pyspark.worker` costs 1.5 s of CPU from the zip against 0.25 s from the installed package, and
a query start runs several such processes one after the other.

In local mode they all run this interpreter, whose PySpark is the very package that zip came
from, so they are started through a small wrapper that drops that zip from PYTHONPATH and
execs the interpreter: they import the installed, compiled PySpark. 1M commits from an empty
checkpoint: 10.4 s against 14.3 s with a warm JVM, 28 s against 38–42 s for a new session's
first query. On a cluster, executors use their own interpreter and nothing changes.

When the job has started a zygote (streaming/localmode/python_zygote.py, named by `GROUPSCOPE_ZYGOTE`),
the wrapper hands each start to streaming/localmode/zygote_client.py instead, which has the zygote fork
the process; without one it execs the interpreter as before.

Two more entries Spark puts there go the same way (`spark_path_entries`):
* its copy of py4j, a zip, when this interpreter has the same py4j version installed;
* the spark-core jar, which holds no Python. Every new task worker's first task calls
  `importlib.invalidate_caches()`, which makes Python read the jar's directory of some 6,000
  entries again: 93 ms of CPU per worker, and about 45 ms in every other Python process Spark
  starts, for the first import that looks there.
"""
from __future__ import annotations

import glob
import hashlib
import os
import shlex
import sys
import tempfile

_WRAPPER = """#!/bin/sh
# groupscope: run {python} without Spark's own copies of PySpark and py4j, or its jar, on
# PYTHONPATH (streaming/localmode/worker_python.py).
set -f
kept=
old_ifs=$IFS
IFS=:
for entry in $PYTHONPATH; do
  case $entry in
    {dropped}) ;;
    *) kept="${{kept:+$kept:}}$entry" ;;
  esac
done
IFS=$old_ifs
if [ -n "$kept" ]; then export PYTHONPATH="$kept"; else unset PYTHONPATH; fi
if [ -n "$GROUPSCOPE_ZYGOTE" ] && [ -S "$GROUPSCOPE_ZYGOTE" ]; then
  exec {python} -I -S {client} {python} "$@"
fi
exec {python} "$@"
"""


def pyspark_zip() -> str | None:
    """The zip Spark adds to its Python processes' path, when this interpreter's PySpark is an
    installed package that ships one."""
    import pyspark

    package = os.path.dirname(os.path.abspath(pyspark.__file__))
    if not os.path.isdir(package):  # PySpark itself imported from a zip: keep Spark's path
        return None
    found = os.path.join(package, "python", "lib", "pyspark.zip")
    return found if os.path.isfile(found) else None


def spark_path_entries() -> list[str]:
    """What Spark puts on its Python processes' path that this interpreter has no use for:
    PySpark's zip (`pyspark_zip`), then Spark's py4j zip when the same py4j version is
    installed, and the spark-core jar. Empty when PySpark is not an installed package."""
    zip_path = pyspark_zip()
    if zip_path is None:
        return []
    entries = [zip_path]
    lib = os.path.dirname(zip_path)
    try:
        from py4j.version import __version__ as py4j_version
    except ImportError:
        py4j_version = None
    py4j_zip = os.path.join(lib, f"py4j-{py4j_version}-src.zip")
    if py4j_version and os.path.isfile(py4j_zip):
        entries.append(py4j_zip)
    jars = os.path.join(os.path.dirname(os.path.dirname(lib)), "jars")
    entries += sorted(glob.glob(os.path.join(jars, "spark-core_*.jar")))
    return entries


def worker_python(executable: str = sys.executable) -> str:
    """An executable that runs `executable` without `spark_path_entries` on PYTHONPATH (or
    `executable` itself when there are none)."""
    found = spark_path_entries()
    if not found:
        return executable
    # Spark names these entries by their resolved paths; a virtualenv reached through a symlink
    # (a release folder behind a `current` link) gives this interpreter the unresolved ones.
    # Both spellings are dropped, or the entries stay and the zygote declines every process.
    dropped = list(dict.fromkeys(path for entry in found
                                 for path in (entry, os.path.realpath(entry))))
    client = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zygote_client.py")
    script = _WRAPPER.format(python=shlex.quote(executable), client=shlex.quote(client),
                             dropped="|".join(shlex.quote(entry) for entry in dropped))
    digest = hashlib.sha256(script.encode()).hexdigest()[:16]
    folder = os.path.join(tempfile.gettempdir(), f"groupscope-{os.getuid()}")
    path = os.path.join(folder, f"python-{digest}")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    if os.stat(folder).st_uid != os.getuid():  # someone else's folder: do not run from it
        return executable
    if not os.access(path, os.X_OK):
        # Written aside and renamed: a concurrent start never sees half a script.
        fd, partial = tempfile.mkstemp(dir=folder)
        with os.fdopen(fd, "w") as fh:
            fh.write(script)
        os.chmod(partial, 0o755)
        os.replace(partial, path)
    return path
