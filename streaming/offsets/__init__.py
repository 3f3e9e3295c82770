"""The offsets lane: committed offsets kept apart from groups, as Kafka keeps them.

Offset commits leave the state stage as columns and land here, in the driver: `table.py` holds
them, `store.py` keeps them on disk with the checkpoint, `lookup.py` lets the group lane read the
few groups it applies records of (coordinator/state/lanes.py).
"""
