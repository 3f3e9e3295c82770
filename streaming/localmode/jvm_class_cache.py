"""A class-data-sharing archive (AppCDS) for the driver JVM the job launches in local mode.

A new JVM loads, parses and verifies about 20,000 of Spark's classes before and during its first
query, and on two cores that is a good part of a cold start. Java 13 and later can write the
classes a JVM loaded into an archive when it exits (`-XX:ArchiveClassesAtExit`), and a later JVM
maps that archive instead of loading them again (`-XX:SharedArchiveFile`). Measured on the 1M
commit benchmark: session start-up 6–10 s against 15 s, the first query's JVM CPU 27–28 s
against 35 s.

So the first `groupscope run` in local mode writes the archive when its JVM exits (about 180 MB,
in `$XDG_CACHE_HOME/groupscope`, default `~/.cache/groupscope`), and later runs map it. The
archive belongs to one Java, PySpark version and set of extra jars; another combination gets an
archive of its own. The JVM checks the archive when it maps it and runs without it, silently,
if it does not match.

Each JVM writes to a file of its own, named for its driver process; a later start adopts that
file once the driver is gone and the file has not changed for a while (the JVM writes it after
the driver exits). A file that does not start with the archive's magic number is removed rather
than adopted: a JVM given a broken archive gives up class sharing altogether.
"""
from __future__ import annotations

import glob
import hashlib
import os
import shutil
import sys
import time
from typing import Mapping

# Dynamic (top-layer) CDS archives start with 0xf00baba8, in the machine's byte order.
_MAGIC = (0xF00BABA8).to_bytes(4, sys.byteorder)
# The JVM writes the archive after its driver exits; a file untouched this long is finished.
SETTLED_S = 30.0
QUIET = "-Xlog:cds*=off"  # the dump warns about every class it skips; nothing a user can act on
# Settings the user may have given that already decide class sharing.
_USER_CDS_FLAGS = ("SharedArchiveFile", "ArchiveClassesAtExit", "-Xshare")
# Settings that change the driver's class path, so the archive it can use.
_CLASSPATH_KEYS = ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath")


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "groupscope")


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java") or "java"
    return os.path.realpath(java)


def archive_key(spark_conf: Mapping[str, str]) -> str:
    import pyspark

    parts = [pyspark.__version__, _java(), *(f"{k}={spark_conf.get(k, '')}" for k in _CLASSPATH_KEYS)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _is_archive(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == _MAGIC
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _adopt_finished_dumps(stem: str, now: float) -> None:
    """Moves a finished dump into place (`stem`.jsa); drops broken ones. Leaves dumps still
    being written."""
    for part in sorted(glob.glob(stem + ".*.part")):
        try:
            pid = int(part.rsplit(".", 2)[1])
            settled = now - os.stat(part).st_mtime >= SETTLED_S
        except (ValueError, OSError):
            continue
        if not _alive(pid) and settled:
            adopt_dump(part)


def class_cache_options(spark_conf: Mapping[str, str], directory: str | None = None,
                        now: float | None = None) -> list[str]:
    """JVM options for the driver: map the archive when there is one, else write it at exit.
    Nothing when the user's own options already decide class sharing, or when the cache
    directory cannot be written."""
    if any(flag in spark_conf.get("spark.driver.extraJavaOptions", "") for flag in _USER_CDS_FLAGS):
        return []
    directory = directory or cache_dir()
    if any(c.isspace() for c in directory):
        return []  # Spark splits extraJavaOptions at whitespace
    return archive_options(archive_stem(spark_conf, directory), now=now)


def archive_stem(spark_conf: Mapping[str, str], directory: str | None = None) -> str:
    """The archive of a driver with `spark_conf`, less its suffix: `.jsa` once written, its
    dumps `.<pid>.part`."""
    return os.path.join(directory or cache_dir(), f"spark-classes-{archive_key(spark_conf)}")


def archive_options(stem: str, writer_pid: int | None = None, now: float | None = None) -> list[str]:
    """Options for any JVM whose classes `stem`.jsa keeps: map it when it is there and sound,
    else write it when this JVM exits, to a part named for `writer_pid` (default: this process,
    which outlives the JVM); nothing while another dump is under way or the directory cannot be
    written."""
    final = stem + ".jsa"
    _adopt_finished_dumps(stem, time.time() if now is None else now)
    if os.path.exists(final):
        if _is_archive(final):
            return mapped(final)
        try:
            os.remove(final)
        except OSError:
            return []
    if glob.glob(stem + ".*.part"):
        return []  # another JVM is writing it (or just did): one dump at a time is enough
    directory = os.path.dirname(stem)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError:
        return []
    if not os.access(directory, os.W_OK):
        return []
    part = f"{stem}.{os.getpid() if writer_pid is None else writer_pid}.part"
    return [f"-XX:ArchiveClassesAtExit={part}", QUIET]


def mapped(final: str) -> list[str]:
    """Options that map the archive `final` into a JVM."""
    return [f"-XX:SharedArchiveFile={final}", QUIET]


def dump_of(options: list[str]) -> str | None:
    """The part file `options` have a JVM write at exit, if they do."""
    prefix = "-XX:ArchiveClassesAtExit="
    return next((o[len(prefix):] for o in options if o.startswith(prefix)), None)


def adopt_dump(part: str) -> None:
    """Moves the dump a JVM wrote at exit into place, once the caller has seen that JVM end (no
    waiting for the part to settle); a broken or second one is removed."""
    final = part.rsplit(".", 2)[0] + ".jsa"
    try:
        if not os.path.exists(final) and _is_archive(part):
            os.replace(part, final)
        else:
            os.remove(part)
    except OSError:
        pass


def with_class_cache(spark_conf: Mapping[str, str], directory: str | None = None) -> dict[str, str]:
    """`spark_conf` with the archive's options ahead of the user's own driver JVM options."""
    options = class_cache_options(spark_conf, directory)
    if not options:
        return dict(spark_conf)
    user = spark_conf.get("spark.driver.extraJavaOptions", "")
    return {**spark_conf, "spark.driver.extraJavaOptions": " ".join([*options, user]).strip()}
