"""The `__consumer_offsets` record codec (its shapes: docs/contracts.md, "Record").

    decode(key, value) -> Record        encode(record_or_dict) -> (key, value)
"""
from coordinator.errors import DecodeError, UnknownRecordType, UnsupportedVersion
from coordinator.records.codec import decode, encode
from coordinator.records.record import Record
from coordinator.records.schema import EncodeError

__all__ = ["decode", "encode", "Record", "DecodeError", "EncodeError", "UnknownRecordType",
           "UnsupportedVersion"]
