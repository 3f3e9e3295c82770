"""groupscope's own sources with the decode stage run inside their read tasks.

The job's first stage (streaming.pipeline.decode_stage.decode_partition) turns raw `__consumer_offsets`
rows into rows keyed by group and drops the offset commits a later one overrides. After Spark's
own Kafka source it runs as a mapInArrow; after one of ours it runs in the task that read the
records, on the Arrow batches the reader has just built. The JVM then receives only what
survives decoding: while the job catches up, about one row in twenty (each partition is committed
many times within a task's range). With a separate stage the JVM would turn every raw record from
Arrow into a row, back into Arrow for the decode worker, and the output into rows again. Same
function, same rows out (tests/broker/test_in_task_decode.py); only where it runs differs.

`groupscope-kafka` and `groupscope-replay` keep Spark's Kafka source schema for any other use;
the formats here are what the job reads.
"""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from streaming.gc_pause import collector_paused
from streaming.pipeline.stage_schema import STAGE_DDL
from streaming.sources.kafka_stream import FORMAT as KAFKA_FORMAT, KafkaDataSource, KafkaStreamReader
from streaming.sources.replay import FORMAT as REPLAY_FORMAT, ReplayDataSource, ReplayStreamReader

SUFFIX = "-decoded"


class _DecodesInTask:
    """Mixed into a stream reader: `read` yields the decode stage's rows of what it read."""

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        # Imported here: the read tasks' workers have it preloaded (streaming.localmode.spark_daemon),
        # while Spark's planning processes, which import this module too, never decode.
        from streaming.pipeline.decode_stage import decode_partition

        with collector_paused():  # a few objects per record read, none in cycles
            yield from decode_partition(super().read(partition))


class DecodedKafkaStreamReader(_DecodesInTask, KafkaStreamReader):
    pass


class DecodedReplayStreamReader(_DecodesInTask, ReplayStreamReader):
    pass


class DecodedKafkaDataSource(KafkaDataSource):
    format_name = KAFKA_FORMAT + SUFFIX
    reader_class = DecodedKafkaStreamReader

    def schema(self) -> str:
        return STAGE_DDL


class DecodedReplayDataSource(ReplayDataSource):
    format_name = REPLAY_FORMAT + SUFFIX
    reader_class = DecodedReplayStreamReader

    def schema(self) -> str:
        return STAGE_DDL


DECODED_FORMATS = {KAFKA_FORMAT: DecodedKafkaDataSource, REPLAY_FORMAT: DecodedReplayDataSource}
