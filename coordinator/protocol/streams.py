"""Recognising Kafka Streams data inside consumer-protocol `UserData`.

Streams groups use protocol type `consumer` with protocol `stream`; their SubscriptionInfo and
AssignmentInfo start with a big-endian int32 version (1-11 in Kafka 4.x). groupscope only needs to
know that the bytes are Streams data: the partitions are already in the consumer-protocol fields,
so the user data is left as bytes.
"""
from __future__ import annotations

import struct

STREAMS_PROTOCOL = "stream"
LOWEST_STREAMS_VERSION = 1
LATEST_STREAMS_VERSION = 11


def streams_user_data_version(user_data: bytes | None) -> int | None:
    """The leading int32 version of Streams user data, or None when there are fewer than 4 bytes."""
    if user_data is None or len(user_data) < 4:
        return None
    return struct.unpack_from(">i", user_data)[0]


def is_streams_user_data(protocol: str | None, user_data: bytes | None) -> bool:
    version = streams_user_data_version(user_data)
    return (protocol == STREAMS_PROTOCOL and version is not None
            and LOWEST_STREAMS_VERSION <= version <= LATEST_STREAMS_VERSION)
