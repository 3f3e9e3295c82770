"""The record tables: one layout per (record type, value version), after Kafka's message schemas
(the group coordinator's `*Key.json` / `*Value.json`, and the hand-written schemas of older
releases). Field names are the canonical snake_case names.

`VALUES[type][version]` is a tuple of candidate layouts, newest first. Several candidates exist
only where Kafka changed a layout without changing the version number (3.7 early-access KIP-848
records, 4.0 share records); the decoder takes the first one that fits the bytes exactly.
"""
from __future__ import annotations

from coordinator.records.schema import (
    BYTES, INT8, INT16, INT32, INT64, NSTRING, STRING, UINT16, UUID,
    Array, Layout, Nullable, Struct, Tag, struct,
)

# --- keys (never flexible) ---------------------------------------------------------------------

_OFFSET_KEY = struct(("group", STRING), ("topic", STRING), ("partition", INT32))
_GROUP_KEY = struct(("group", STRING))
_GROUP_ID_KEY = struct(("group_id", STRING))
_MEMBER_KEY = struct(("group_id", STRING), ("member_id", STRING))
_REGEX_KEY = struct(("group_id", STRING), ("regular_expression", STRING))

_KEY_STRUCTS = {0: _OFFSET_KEY, 1: _OFFSET_KEY, 2: _GROUP_KEY, 16: _REGEX_KEY}
for _t in (3, 4, 6, 9, 11, 12, 15, 17, 18, 20, 23, 24):
    _KEY_STRUCTS[_t] = _GROUP_ID_KEY
for _t in (5, 7, 8, 10, 13, 14, 19, 21, 22):
    _KEY_STRUCTS[_t] = _MEMBER_KEY

KEYS: dict[int, Layout] = {t: Layout(s, flexible=False) for t, s in _KEY_STRUCTS.items()}

TYPE_NAMES: dict[int, str] = {
    0: "offset_commit",
    1: "offset_commit",
    2: "group_metadata",
    3: "consumer_group_metadata",
    4: "consumer_group_partition_metadata",
    5: "consumer_group_member_metadata",
    6: "consumer_group_target_assignment_metadata",
    7: "consumer_group_target_assignment_member",
    8: "consumer_group_current_member_assignment",
    9: "share_group_partition_metadata",
    10: "share_group_member_metadata",
    11: "share_group_metadata",
    12: "share_group_target_assignment_metadata",
    13: "share_group_target_assignment_member",
    14: "share_group_current_member_assignment",
    15: "share_group_state_partition_metadata",
    16: "consumer_group_regular_expression",
    17: "streams_group_metadata",
    18: "streams_group_partition_metadata",
    19: "streams_group_member_metadata",
    20: "streams_group_target_assignment_metadata",
    21: "streams_group_target_assignment_member",
    22: "streams_group_current_member_assignment",
    23: "streams_group_topology",
    24: "streams_group_target_assignment_resolved_topic_ids",
}

# --- classic records (types 0, 1, 2) -----------------------------------------------------------

_OFFSET_V0 = struct(("offset", INT64), ("metadata", STRING), ("commit_timestamp", INT64))
_OFFSET_V1 = struct(("offset", INT64), ("metadata", STRING), ("commit_timestamp", INT64),
                    ("expire_timestamp", INT64))
_OFFSET_V3 = struct(("offset", INT64), ("leader_epoch", INT32), ("metadata", STRING),
                    ("commit_timestamp", INT64))
_OFFSET_V4 = struct(("offset", INT64), ("leader_epoch", INT32), ("metadata", STRING),
                    ("commit_timestamp", INT64), tags=(Tag(0, "topic_id", UUID),))

_OFFSET_VALUES = {0: _OFFSET_V0, 1: _OFFSET_V1, 2: _OFFSET_V0, 3: _OFFSET_V3, 4: _OFFSET_V4}

# derived keys added by the decoder from the embedded consumer protocol (never encoded)
EMBEDDED_KEYS = ("subscription_decoded", "assignment_decoded")


def _member(version: int) -> Struct:
    fields = [("member_id", STRING)]
    if version >= 3:
        fields.append(("group_instance_id", NSTRING))
    fields += [("client_id", STRING), ("client_host", STRING)]
    if version >= 1:
        fields.append(("rebalance_timeout", INT32))
    fields += [("session_timeout", INT32), ("subscription", BYTES), ("assignment", BYTES)]
    return struct(*fields, derived=EMBEDDED_KEYS)


def _group_value(version: int) -> Struct:
    # protocol/leader: nullable in every version (0.9/0.10.0 declared them non-null, but -1 is
    # accepted everywhere)
    fields = [("protocol_type", STRING), ("generation", INT32), ("protocol", NSTRING),
              ("leader", NSTRING)]
    if version >= 2:
        fields.append(("current_state_timestamp", INT64))
    fields.append(("members", Array(_member(version))))
    return struct(*fields)


# --- KIP-848 consumer groups (types 3-8, 16) ---------------------------------------------------

_PARTITIONS = Array(INT32)
_STRINGS = Array(STRING)

_TOPIC_METADATA = struct(
    ("topic_id", UUID), ("topic_name", STRING), ("num_partitions", INT32),
    ("partition_metadata", Array(struct(("partition", INT32), ("racks", _STRINGS)))))
_PARTITION_METADATA = struct(("topics", Array(_TOPIC_METADATA)))
_PARTITION_METADATA_37 = struct(("epoch", INT32), ("topics", Array(_TOPIC_METADATA)))

_MEMBER_COMMON = (
    ("instance_id", NSTRING), ("rack_id", NSTRING), ("client_id", STRING), ("client_host", STRING),
    ("subscribed_topic_names", _STRINGS), ("subscribed_topic_regex", NSTRING),
    ("rebalance_timeout_ms", INT32), ("server_assignor", NSTRING))
_CLASSIC_MEMBER = Nullable(struct(
    ("session_timeout_ms", INT32),
    ("supported_protocols", Array(struct(("name", STRING), ("metadata", BYTES))))))
_MEMBER_METADATA = struct(*_MEMBER_COMMON, tags=(Tag(0, "classic_member_metadata", _CLASSIC_MEMBER),))
_MEMBER_METADATA_37 = struct(*_MEMBER_COMMON, ("assignors", Array(struct(
    ("name", STRING), ("minimum_version", INT16), ("maximum_version", INT16), ("reason", INT8),
    ("version", INT16), ("metadata", BYTES)))))

_TOPIC_PARTITIONS = struct(("topic_id", UUID), ("partitions", _PARTITIONS))
_TOPIC_PARTITIONS_EPOCHS = struct(("topic_id", UUID), ("partitions", _PARTITIONS),
                                  tags=(Tag(0, "assignment_epochs", Array(INT32, nullable=True)),))

_TARGET_MEMBER = struct(("topic_partitions", Array(_TOPIC_PARTITIONS)))
_TARGET_MEMBER_37 = struct(("error", INT8), ("topic_partitions", Array(_TOPIC_PARTITIONS)),
                           ("metadata_version", INT16), ("metadata_bytes", BYTES))

_CURRENT_ASSIGNMENT = struct(
    ("member_epoch", INT32), ("previous_member_epoch", INT32), ("state", INT8),
    ("assigned_partitions", Array(_TOPIC_PARTITIONS_EPOCHS)),
    ("partitions_pending_revocation", Array(_TOPIC_PARTITIONS_EPOCHS)))
_CURRENT_ASSIGNMENT_37 = struct(
    ("member_epoch", INT32), ("previous_member_epoch", INT32), ("target_member_epoch", INT32),
    ("assigned_partitions", Array(_TOPIC_PARTITIONS)),
    ("partitions_pending_revocation", Array(_TOPIC_PARTITIONS)),
    ("partitions_pending_assignment", Array(_TOPIC_PARTITIONS)),
    ("error", INT8), ("metadata_version", INT16), ("metadata_bytes", BYTES))

_ASSIGNMENT_METADATA = struct(("assignment_epoch", INT32),
                              tags=(Tag(0, "assignment_timestamp", INT64),))

# --- KIP-932 share groups (types 9-15) ---------------------------------------------------------

_TOPIC_PARTITIONS_INFO = struct(("topic_id", UUID), ("topic_name", STRING), ("partitions", _PARTITIONS))
_TOPIC_INFO = struct(("topic_id", UUID), ("topic_name", STRING))

# --- KIP-1071 streams groups (types 17-24) -----------------------------------------------------

_KEY_VALUE = struct(("key", STRING), ("value", STRING))
_TASK_IDS = struct(("subtopology_id", STRING), ("partitions", _PARTITIONS))
_TASK_IDS_EPOCHS = struct(("subtopology_id", STRING), ("partitions", _PARTITIONS),
                          tags=(Tag(0, "assignment_epochs", Array(INT32, nullable=True)),))
_TOPIC_CONFIG_INFO = struct(("name", STRING), ("partitions", INT32), ("replication_factor", INT16),
                            ("topic_configs", Array(_KEY_VALUE)))
_SUBTOPOLOGY = struct(
    ("subtopology_id", STRING), ("source_topics", _STRINGS), ("source_topic_regex", _STRINGS),
    ("state_changelog_topics", Array(_TOPIC_CONFIG_INFO)), ("repartition_sink_topics", _STRINGS),
    ("repartition_source_topics", Array(_TOPIC_CONFIG_INFO)),
    ("copartition_groups", Array(struct(("source_topics", Array(INT16)),
                                        ("source_topic_regex", Array(INT16)),
                                        ("repartition_source_topics", Array(INT16))))))

_TASK_LISTS = ("active_tasks", "standby_tasks", "warmup_tasks")


def _flex(*structs: Struct, labels: tuple[str, ...] = ()) -> tuple[Layout, ...]:
    labels = labels or ("",) * len(structs)
    return tuple(Layout(s, flexible=True, label=lb) for s, lb in zip(structs, labels))


VALUES: dict[int, dict[int, tuple[Layout, ...]]] = {
    0: {v: (Layout(s, flexible=v >= 4),) for v, s in _OFFSET_VALUES.items()},
    2: {v: (Layout(_group_value(v), flexible=v >= 4),) for v in range(5)},
    3: {0: _flex(struct(("epoch", INT32), tags=(Tag(0, "metadata_hash", INT64),
                                                Tag(1, "creation_time_ms", INT64))))},
    4: {0: _flex(_PARTITION_METADATA, _PARTITION_METADATA_37, labels=("3.8+", "3.7"))},
    5: {0: _flex(_MEMBER_METADATA, _MEMBER_METADATA_37, labels=("3.8+", "3.7"))},
    6: {0: _flex(_ASSIGNMENT_METADATA)},
    7: {0: _flex(_TARGET_MEMBER, _TARGET_MEMBER_37, labels=("3.8+", "3.7"))},
    8: {0: _flex(_CURRENT_ASSIGNMENT, _CURRENT_ASSIGNMENT_37, labels=("3.8+", "3.7"))},
    9: {0: _flex(_PARTITION_METADATA)},
    10: {0: _flex(struct(("rack_id", NSTRING), ("client_id", STRING), ("client_host", STRING),
                         ("subscribed_topic_names", _STRINGS)))},
    11: {0: _flex(struct(("epoch", INT32), ("metadata_hash", INT64)), struct(("epoch", INT32)),
                  labels=("4.1+", "4.0"))},
    12: {0: _flex(_ASSIGNMENT_METADATA)},
    13: {0: _flex(_TARGET_MEMBER)},
    14: {0: _flex(struct(("member_epoch", INT32), ("previous_member_epoch", INT32), ("state", INT8),
                         ("assigned_partitions", Array(_TOPIC_PARTITIONS))))},
    15: {0: _flex(struct(("initializing_topics", Array(_TOPIC_PARTITIONS_INFO)),
                         ("initialized_topics", Array(_TOPIC_PARTITIONS_INFO)),
                         ("deleting_topics", Array(_TOPIC_INFO))),
                  struct(("initialized_topics", Array(_TOPIC_PARTITIONS_INFO)),
                         ("deleting_topics", Array(_TOPIC_INFO))),
                  labels=("4.1+", "4.0"))},
    16: {0: _flex(struct(("topics", _STRINGS), ("metadata_version", INT64), ("timestamp", INT64)))},
    17: {0: _flex(struct(("epoch", INT32), ("metadata_hash", INT64), tags=(
        Tag(0, "validated_topology_epoch", INT32),
        Tag(1, "last_assignment_configs", Array(_KEY_VALUE, nullable=True)),
        Tag(2, "stored_description_topology_epoch", INT32),
        Tag(3, "failed_description_topology_epoch", INT32))))},
    18: {0: _flex(_PARTITION_METADATA)},
    19: {0: _flex(struct(
        ("instance_id", NSTRING), ("rack_id", NSTRING), ("client_id", STRING), ("client_host", STRING),
        ("rebalance_timeout_ms", INT32), ("topology_epoch", INT32), ("process_id", STRING),
        ("user_endpoint", Nullable(struct(("host", STRING), ("port", UINT16)))),
        ("client_tags", Array(_KEY_VALUE))))},
    20: {0: _flex(_ASSIGNMENT_METADATA)},
    21: {0: _flex(struct(*((name, Array(_TASK_IDS)) for name in _TASK_LISTS)))},
    22: {0: _flex(struct(
        ("member_epoch", INT32), ("previous_member_epoch", INT32), ("state", INT8),
        *((name, Array(_TASK_IDS_EPOCHS)) for name in _TASK_LISTS),
        *((f"{name}_pending_revocation", Array(_TASK_IDS_EPOCHS)) for name in _TASK_LISTS)))},
    23: {0: _flex(struct(("epoch", INT32), ("subtopologies", Array(_SUBTOPOLOGY))))},
    24: {0: _flex(struct(("assignment_epoch", INT32), ("resolved_topic_ids_by_subtopology", Array(
        struct(("subtopology_id", STRING), ("topic_ids", Array(UUID)))))))},
}
VALUES[1] = VALUES[0]

# --- `__share_group_state` (the share coordinator's topic: its own key types) ------------------
# ShareSnapshot (0) holds a share-partition's whole state; ShareUpdate (1) the batches that
# changed since. A null value under a snapshot key is the partition's tombstone. The delivery
# complete count is a tagged field (4.2+, KIP-1226), -1 when absent.

_SHARE_KEY = struct(("group_id", STRING), ("topic_id", UUID), ("partition", INT32))
SHARE_STATE_KEYS: dict[int, Layout] = {t: Layout(_SHARE_KEY, flexible=False) for t in (0, 1)}
SHARE_STATE_TYPE_NAMES: dict[int, str] = {0: "share_snapshot", 1: "share_update"}

_STATE_BATCH = struct(("first_offset", INT64), ("last_offset", INT64), ("delivery_state", INT8),
                      ("delivery_count", INT16))
_DELIVERY_COMPLETE = (Tag(0, "delivery_complete_count", INT32),)
SHARE_STATE_VALUES: dict[int, dict[int, tuple[Layout, ...]]] = {
    0: {0: _flex(struct(("snapshot_epoch", INT32), ("state_epoch", INT32), ("leader_epoch", INT32),
                        ("start_offset", INT64), ("create_timestamp", INT64),
                        ("write_timestamp", INT64), ("state_batches", Array(_STATE_BATCH)),
                        tags=_DELIVERY_COMPLETE))},
    1: {0: _flex(struct(("snapshot_epoch", INT32), ("leader_epoch", INT32), ("start_offset", INT64),
                        ("state_batches", Array(_STATE_BATCH)), tags=_DELIVERY_COMPLETE))},
}
