"""Partition assignors for Kafka consumer groups: pure functions from subscriptions to assignments.

The value types come first and import nothing from groupkit, so ``groupkit`` can re-export
``TopicPartition`` from here while it is itself being imported.
"""

from assignors._types import (
    ClusterView,
    MemberAssignment,
    MemberSubscription,
    RebalanceProtocol,
    TopicPartition,
)
from assignors.base import Assignor, member_order
from assignors.cooperative import (
    CooperativeAssignmentError,
    transferred_partitions,
    validate_cooperative,
)
from assignors.range import RangeAssignor
from assignors.registry import ENTRY_POINT_GROUP, available, known, lookup, resolve
from assignors.roundrobin import RoundRobinAssignor
from assignors.sticky import CooperativeStickyAssignor, StickyAssignor

__all__ = [
    "ENTRY_POINT_GROUP",
    "Assignor",
    "ClusterView",
    "CooperativeAssignmentError",
    "CooperativeStickyAssignor",
    "MemberAssignment",
    "MemberSubscription",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "StickyAssignor",
    "TopicPartition",
    "available",
    "known",
    "lookup",
    "member_order",
    "resolve",
    "transferred_partitions",
    "validate_cooperative",
]
