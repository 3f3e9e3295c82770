"""The decoded record: a frozen dataclass whose dicts are the canonical form (docs/contracts.md)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coordinator.records.layouts import TYPE_NAMES


@dataclass(frozen=True, slots=True)
class Record:
    type: int
    type_name: str
    key: dict
    value: dict | None
    # Bytes found after the last known field of a NON-flexible value (types 0-2, v0-v3).
    # Readers accept them with a warning (forward compatibility); we keep them so that
    # encode(rec) still reproduces the input. They are not part of the canonical dict.
    trailing: bytes = field(default=b"", compare=False, repr=False)

    @property
    def warnings(self) -> tuple[str, ...]:
        return (f"trailing_bytes:{len(self.trailing)}",) if self.trailing else ()

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "type_name": self.type_name, "key": self.key, "value": self.value}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Record":
        """Build a Record from a canonical dict (no byte-level validation: encode() does that)."""
        if not isinstance(d, dict):
            raise TypeError(f"expected a canonical record dict, got {type(d).__name__}")
        t = d.get("type")
        if type(t) is not int:
            raise ValueError(f"canonical record needs an int 'type', got {t!r}")
        key, value = d.get("key"), d.get("value")
        if not isinstance(key, dict) or not (value is None or isinstance(value, dict)):
            raise ValueError("canonical record needs a dict 'key' and a dict-or-None 'value'")
        return cls(t, d.get("type_name") or TYPE_NAMES.get(t, f"unknown_{t}"), key, value)


_new = object.__new__
_SET = tuple(Record.__dict__[name].__set__ for name in ("type", "type_name", "key", "value", "trailing"))


def make_record(t: int, type_name: str, key: dict, value: dict | None, trailing: bytes = b"") -> Record:
    """Record(...) through the slot descriptors, skipping the frozen-dataclass __init__ (which
    goes through object.__setattr__ per field): record construction was a third of the
    offset-commit decode time."""
    rec = _new(Record)
    set_type, set_name, set_key, set_value, set_trailing = _SET
    set_type(rec, t)
    set_name(rec, type_name)
    set_key(rec, key)
    set_value(rec, value)
    set_trailing(rec, trailing)
    return rec
