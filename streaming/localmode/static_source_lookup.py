"""Spark's search for Python data sources installed as packages, skipped in the job's session.

The first time a session resolves a data source name, Spark starts a Python daemon and a worker
forked from it that walks every module on the Python path and imports each `pyspark_*` package,
to register the data sources such packages declare. The job reads only its own sources, which it
registers by class, or Spark's Kafka source, which is JVM code. In a new session the search sat
on the first query's path (about 0.25 s of wall time on the 2-core reference machine, in every
`groupscope run` start), and its two processes stay for the whole session.

Spark keeps the search's result in one field of the driver JVM (`DataSourceManager`'s
`dataSourceBuilders`, open for Spark's own tests) and searches only while it is empty; an empty
result put there first means the search never runs. A Spark without that field, or a session that
has already searched, is left as it is.
"""
from __future__ import annotations

import logging

log = logging.getLogger("groupscope.job")


def skip_static_source_lookup(spark) -> None:
    """Marks the search as done, with nothing found, unless it has run already."""
    jvm = spark.sparkContext._jvm
    try:
        package = jvm.org.apache.spark.sql.execution.datasources
        manager = getattr(getattr(package, "DataSourceManager$"), "MODULE$")
        if manager.dataSourceBuilders().isEmpty():
            empty = getattr(getattr(jvm.scala.collection.immutable, "Map$"), "MODULE$").empty()
            getattr(manager, "dataSourceBuilders_$eq")(jvm.scala.Some(empty))
    except Exception:  # another Spark version: it searches, as it would without groupscope
        log.debug("could not skip Spark's lookup of installed Python data sources", exc_info=True)
