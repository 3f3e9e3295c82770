"""Decoders/encoders for the protocols embedded in classic GroupMetadataValue members.

The broker stores each member's JoinGroup metadata (`subscription`) and SyncGroup assignment as
opaque bytes; their format depends on the group's protocol type: `consumer` (ConsumerProtocol,
also used by Kafka Streams) or `connect`.
"""
from coordinator.protocol.connect import (
    ConnectAssignment,
    ConnectorTasks,
    ConnectWorkerMetadata,
    decode_connect_assignment,
    decode_connect_metadata,
    encode_connect_assignment,
    encode_connect_metadata,
)
from coordinator.protocol.consumer import (
    Assignment,
    Subscription,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    group_partitions,
)
from coordinator.protocol.sticky import StickyUserData, decode_sticky_user_data, encode_sticky_user_data
from coordinator.protocol.streams import is_streams_user_data, streams_user_data_version

__all__ = [
    "Assignment", "ConnectAssignment", "ConnectWorkerMetadata", "ConnectorTasks", "StickyUserData",
    "Subscription", "TopicPartitions", "decode_assignment", "decode_connect_assignment",
    "decode_connect_metadata", "decode_sticky_user_data", "decode_subscription", "encode_assignment",
    "encode_connect_assignment", "encode_connect_metadata", "encode_sticky_user_data",
    "encode_subscription", "group_partitions", "is_streams_user_data", "streams_user_data_version",
]
