"""`groupscope capture`: copy part of a real `__consumer_offsets` into a capture file.

The file (docs/capture-format.md) can then be replayed with `source.type: replay`, shared in a bug
report, or used as a test fixture. Records are read with kafka-python under read_committed, in
offset order per partition, between a start and an end given as times or offsets.
"""
from __future__ import annotations

import argparse
import os
from datetime import datetime, timezone

from streaming.errors import UserError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "capture", help="copy a range of __consumer_offsets into a capture file",
        description="Copy a time or offset range of __consumer_offsets into a capture file "
                    "(JSON lines, see docs/capture-format.md) for replay.")
    parser.add_argument("output", help="capture file to write (replaced if it exists)")
    parser.add_argument("--config", help="config file: bootstrap servers and client settings "
                        "come from its source section")
    parser.add_argument("--bootstrap-servers", help="overrides source.bootstrap_servers")
    parser.add_argument("--topic", help="overrides source.topic (default __consumer_offsets)")
    parser.add_argument("--partitions", help="comma-separated partitions (default: all)")
    start = parser.add_mutually_exclusive_group()
    start.add_argument("--since", help="first record time: ISO-8601 (2024-05-01T12:00:00Z) or "
                       "epoch milliseconds")
    start.add_argument("--from-offset", type=int, help="first offset, in every partition")
    end = parser.add_mutually_exclusive_group()
    end.add_argument("--until", help="stop before this time (ISO-8601 or epoch milliseconds)")
    end.add_argument("--to-offset", type=int, help="stop before this offset, in every partition")
    parser.set_defaults(func=run)


def parse_time_ms(text: str, flag: str) -> int:
    if text.strip().isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UserError(f"{flag}: expected ISO-8601 time or epoch milliseconds, got {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def run(args: argparse.Namespace) -> int:
    from streaming.config import load_config

    source = load_config(args.config).source
    bootstrap = args.bootstrap_servers or source.bootstrap_servers
    topic = args.topic or source.topic
    written = capture(bootstrap, topic, args.output, client_options=source.kafka,
                      partitions=_partitions(args.partitions),
                      since_ms=parse_time_ms(args.since, "--since") if args.since else None,
                      until_ms=parse_time_ms(args.until, "--until") if args.until else None,
                      from_offset=args.from_offset, to_offset=args.to_offset)
    print(f"captured {written} records of {topic} into {args.output}")
    return 0


def _partitions(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        return sorted({int(p) for p in text.split(",") if p.strip()})
    except ValueError:
        raise UserError(f"--partitions: expected comma-separated numbers, got {text!r}") from None


def capture(bootstrap: str, topic: str, output: str, *, client_options: dict | None = None,
            partitions: list[int] | None = None, since_ms: int | None = None,
            until_ms: int | None = None, from_offset: int | None = None,
            to_offset: int | None = None) -> int:
    """Write the chosen records to `output`; returns how many were written."""
    from streaming.sources.kafka_options import KafkaSourceOptions

    options = KafkaSourceOptions(bootstrap_servers=bootstrap, topic=topic,
                                 client_options=dict(client_options or {}))
    try:
        config = options.kafka_python_config()
    except ValueError as exc:
        raise UserError(f"source.kafka: {exc}") from None
    ranges = _plan(config, topic, partitions, since_ms, until_ms, from_offset, to_offset)
    temporary = f"{output}.partial"
    count = 0
    try:
        with open(temporary, "w", encoding="utf-8") as out:
            for rng in ranges:
                count += _copy_range(config, options, rng, out, since_ms, until_ms)
        os.replace(temporary, output)
    except OSError as exc:
        raise UserError(f"cannot write {output}: {exc.strerror}") from None
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return count


def _plan(config: dict, topic: str, wanted: list[int] | None, since_ms, until_ms, from_offset,
          to_offset):
    from kafka.errors import KafkaError

    from streaming.kafka.client import KafkaPythonOffsets
    from streaming.kafka.offset_ranges import OffsetRange

    try:
        lookup = KafkaPythonOffsets(config)
    except KafkaError as exc:
        raise UserError(f"cannot reach Kafka at {','.join(config['bootstrap_servers'])}: {exc}") from None
    try:
        existing = lookup.partitions(topic)
        if not existing:
            raise UserError(f"topic {topic} not found")
        chosen = wanted if wanted is not None else existing
        missing = sorted(set(chosen) - set(existing))
        if missing:
            raise UserError(f"topic {topic} has no partition {missing[0]}")
        earliest = lookup.earliest(topic, chosen)
        latest = lookup.latest(topic, chosen)
        first = dict(earliest)
        last = dict(latest)
        if since_ms is not None:
            first = _offsets_at(lookup, topic, chosen, since_ms, latest)
        elif from_offset is not None:
            first = {p: max(earliest[p], from_offset) for p in chosen}
        if to_offset is not None:
            last = {p: min(latest[p], to_offset) for p in chosen}
    except KafkaError as exc:
        raise UserError(f"reading offsets of {topic}: {exc}") from None
    finally:
        lookup.close()
    return [OffsetRange(p, first[p], last[p]) for p in chosen if last[p] > first[p]]


def _offsets_at(lookup, topic: str, partitions: list[int], when_ms: int, latest: dict) -> dict:
    """First offset at or after `when_ms` per partition (the end when nothing is that recent)."""
    found = lookup.at_time(topic, partitions, when_ms)
    return {p: (latest[p] if found[p] is None else found[p]) for p in partitions}


def _copy_range(config: dict, options, rng, out, since_ms: int | None, until_ms: int | None) -> int:
    """Copy one partition's range. Time bounds are applied record by record too (Kafka's rule:
    from the first record at or after `since` to before the first at or after `until`), because
    some brokers answer time look-ups only roughly."""
    from streaming.sources.capture_file import CapturedRecord, encode_line
    from streaming.kafka.client import KafkaPythonPartition
    from streaming.kafka.range_reader import SourceReadError, read_range

    count = 0
    started = since_ms is None
    batches = read_range(lambda: KafkaPythonPartition(config, options.topic, rng.partition),
                         options.topic, rng, options.read)
    try:
        for batch in batches:
            millis = _millis(batch)
            columns = batch.to_pydict()
            for i, offset in enumerate(columns["offset"]):
                if until_ms is not None and millis[i] >= until_ms:
                    return count
                started = started or millis[i] >= since_ms
                if not started:
                    continue
                out.write(encode_line(CapturedRecord(
                    rng.partition, offset, millis[i], columns["key"][i], columns["value"][i],
                    columns["timestampType"][i])) + "\n")
                count += 1
    except SourceReadError as exc:
        raise UserError(str(exc)) from None
    finally:
        batches.close()
    return count


def _millis(batch) -> list[int]:
    import pyarrow as pa

    return [micros // 1000 for micros in batch.column("timestamp").cast(pa.int64()).to_pylist()]
