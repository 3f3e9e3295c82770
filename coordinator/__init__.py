"""groupscope's pure-Python core (no Spark): codecs, protocols, state, assignors, simulator."""
from coordinator.partitioning import partition_for

__all__ = ["partition_for"]
