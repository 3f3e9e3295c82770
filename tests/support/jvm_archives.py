"""Class-data-sharing archives for the JVMs the tests start, through the product's archive handling
(streaming.localmode.jvm_class_cache): for brokers, Kafka's tools and the client harness one
archive per Java, class path and main class in `.cache/jvm-classes`; for Spark's JVMs other than
the local driver (a standalone cluster's, a test's own driver session) the local driver's.

A tool's JVM spends about half of its CPU loading and verifying classes: ConsumerGroupCommand
took 1.2-1.4 CPU-s plain and 0.64-0.68 mapping its archive, a broker's start 3.1-3.3 against
1.7-1.9 CPU-s (measured on 2 cores). The suite starts about 130 such JVMs on 2 cores whose
time it is bound by.

Only a JVM whose exit the caller sees (a tool run to completion, a broker stopped) writes an
archive, and the caller moves it into place at once. A JVM left to run and then killed (a
backgrounded client) only maps one: its own class's when there is one, else that of Kafka's
consumer-group command on the same class path, which holds the client classes most tools load.
"""
from __future__ import annotations

import glob
import hashlib
import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path

from streaming.localmode.jvm_class_cache import adopt_dump, archive_options, archive_stem, dump_of, mapped

ARCHIVES = Path(__file__).resolve().parents[2] / ".cache" / "jvm-classes"
SHARED_CLASS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
# Dumps begun by this process and not yet adopted: the part file is named for the process, so two
# of its threads must not start the same one.
_dumping: set[str] = set()
_lock = threading.Lock()


def _jars(classpath: str) -> list[str]:
    out = []
    for entry in classpath.split(os.pathsep):
        out += sorted(glob.glob(entry[:-1] + "*.jar")) if entry.endswith("*") else [entry]
    return out


def _stem(classpath: str, main_class: str) -> str:
    digest = hashlib.sha256(f"{os.path.realpath(shutil.which('java') or 'java')}\n{main_class}".encode())
    for jar in _jars(classpath):
        try:
            stat = os.stat(jar)
        except OSError:
            continue
        digest.update(f"\n{jar} {stat.st_size} {stat.st_mtime_ns}".encode())
    return str(ARCHIVES / f"{main_class.rsplit('.', 1)[-1]}-{digest.hexdigest()[:16]}")


def dumping(classpath: str, main_class: str) -> list[str]:
    """Options for a JVM whose end the caller waits for: it maps the archive, or writes it (then
    `adopted(options)` once the JVM has ended, or `discarded(options)` if it was killed)."""
    stem = _stem(classpath, main_class)
    with _lock:
        options = [] if stem in _dumping else archive_options(stem)
        if dump_of(options):
            _dumping.add(stem)
    return options or mapping(classpath, main_class)


def adopted(options: list[str]) -> None:
    """After the JVM given `options` (of `dumping`) exited: its archive, if it wrote one, in place."""
    _finished(options, adopt_dump)


def discarded(options: list[str]) -> None:
    """After the JVM given `options` was killed: what it may have begun to write, removed."""
    _finished(options, lambda part: os.path.exists(part) and os.remove(part))


def ended(process: subprocess.Popen | subprocess.CompletedProcess | None, options: list[str]) -> None:
    """After a JVM given `options` (of `dumping`) ended: one that exited by itself or on SIGTERM
    wrote its archive at exit, which goes in place; a killed or timed-out one (None) may have
    left part of one, which goes."""
    if process is not None and process.returncode not in (None, -signal.SIGKILL):
        adopted(options)
    else:
        discarded(options)


def _finished(options: list[str], settle) -> None:
    part = dump_of(options)
    if part is None:
        return
    with _lock:
        settle(part)
        _dumping.discard(part.rsplit(".", 2)[0])


def mapping(classpath: str, main_class: str) -> list[str]:
    """Options for a JVM that may be killed: map an archive if there is one, never write one."""
    return next((mapped(final) for final in candidates(classpath, main_class)
                 if os.path.exists(final)), [])


def candidates(classpath: str, main_class: str) -> list[str]:
    """The archives `mapping` looks for, best first (for a script to look for when it runs)."""
    return [_stem(classpath, cls) + ".jsa" for cls in dict.fromkeys((main_class, SHARED_CLASS))]


def spark_classes() -> list[str]:
    """Options that map the local driver's archive (streaming/localmode/jvm_class_cache.py) into
    another JVM on PySpark's jars (a standalone master, worker or executor, a submitted driver),
    when it has been written: their class path is the driver's."""
    final = archive_stem({}) + ".jsa"
    return mapped(final) if os.path.exists(final) else []


def user_class_sharing() -> str:
    """A user's own driver JVM option for class sharing, which the job's tuning leaves as it is:
    map the local driver's archive, or, without one, leave class sharing out (-Xshare:auto), so
    that a test's driver never spends its exit writing an archive of its own."""
    return " ".join(spark_classes()) or "-Xshare:auto"
