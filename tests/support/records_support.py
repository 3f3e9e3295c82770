"""Shared helpers for the record-codec tests: vector loading and Kafka JSON -> canonical names."""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from tests.support.paths import DATA

EMBEDDED_KEYS = ("subscription_decoded", "assignment_decoded")


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def snake_tree(obj):
    if isinstance(obj, dict):
        return {snake(k): snake_tree(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [snake_tree(v) for v in obj]
    return obj


@lru_cache(maxsize=None)
def serializer_vectors() -> tuple[dict, ...]:
    with open(DATA / "kafka-serializer.jsonl", encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f)


@lru_cache(maxsize=None)
def real_vectors() -> tuple[dict, ...]:
    with open(DATA / "real-vectors.jsonl", encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f)


def expected_value(vec: dict) -> dict | None:
    """The canonical value dict a serializer vector must decode to."""
    fields = vec["fields"]["value"]
    if fields is None:
        return None
    value = {"version": vec["value_version"]}
    for k, v in snake_tree(fields).items():
        # type 16's `Version` would collide with the value version: canonically `metadata_version`
        value["metadata_version" if k == "version" and vec["type"] == 16 else k] = v
    if vec.get("unknown_tagged_fields"):
        value["unknown_tagged_fields"] = [{"tag": u["tag"], "data": u["data_hex"]}
                                          for u in vec["unknown_tagged_fields"]]
    return value


def without_embedded(value: dict | None) -> dict | None:
    if value is None or "members" not in value:
        return value
    members = [{k: v for k, v in m.items() if k not in EMBEDDED_KEYS} for m in value["members"]]
    return {**value, "members": members}
