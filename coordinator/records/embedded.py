"""Adds the decoded consumer protocol to classic group-metadata members (docs/contracts.md).

`coordinator.protocol` is imported lazily: it is an optional refinement of the record, and a
member whose bytes do not decode simply goes without the `*_decoded` keys.
"""
from __future__ import annotations

from typing import Any, Callable

_decoders: tuple[Callable[[bytes], Any], Callable[[bytes], Any]] | None = None
_import_failed = False


def _load() -> tuple[Callable[[bytes], Any], Callable[[bytes], Any]] | None:
    global _decoders, _import_failed
    if _decoders is None and not _import_failed:
        try:
            from coordinator.protocol import decode_assignment, decode_subscription
        except Exception:  # noqa: BLE001 - a broken optional module must not break record decoding
            _import_failed = True
            return None
        _decoders = (decode_subscription, decode_assignment)
    return _decoders


def add_consumer_protocol(value: dict) -> None:
    """Decode `subscription`/`assignment` of every member in place when protocol_type is consumer."""
    if value.get("protocol_type") != "consumer":
        return
    decoders = _load()
    if decoders is None:
        return
    for member in value["members"]:
        for name, fn in zip(("subscription", "assignment"), decoders):
            try:
                member[f"{name}_decoded"] = fn(bytes.fromhex(member[name])).to_dict()
            except Exception:  # noqa: BLE001 - undecodable embedded data must not fail the record
                pass
