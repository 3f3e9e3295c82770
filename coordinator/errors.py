"""Errors raised by the record codec and the embedded-protocol decoders.

They live in their own module so that `coordinator.records` and `coordinator.protocol` can both
raise them without importing each other.
"""
from __future__ import annotations


class DecodeError(ValueError):
    """Bytes that cannot be decoded. `reason` is a short, stable, countable label."""

    def __init__(self, message: str, *, reason: str = "malformed", record_type: int | None = None,
                 value_version: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.record_type = record_type
        self.value_version = value_version


class UnknownRecordType(DecodeError):
    def __init__(self, record_type: int) -> None:
        super().__init__(f"unknown record type {record_type}", reason="unknown_type",
                         record_type=record_type)


class UnsupportedVersion(DecodeError):
    def __init__(self, record_type: int, value_version: int) -> None:
        super().__init__(f"unsupported value version {value_version} for record type {record_type}",
                         reason="unsupported_version", record_type=record_type,
                         value_version=value_version)
