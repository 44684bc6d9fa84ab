"""groupkit: Kafka consumer groups for Python, on a wire client of its own.

The names here are the public API; everything else is internal unless its module says so.
They load on first use (PEP 562), so ``import groupkit.errors`` from a small module such as
an assignor does not pull in the runtime, and the assignors package can use groupkit's
errors without an import cycle.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assignors import TopicPartition
    from groupkit.admin import Admin
    from groupkit.config import ConsumerConfig, ProducerConfig
    from groupkit.consumer import Consumer, ConsumerRebalanceListener, ConsumerRecord
    from groupkit.errors import (
        AuthenticationError,
        BrokerError,
        CommitFailedError,
        ConfigError,
        CorruptFrame,
        CorruptRecordError,
        GroupkitError,
        KafkaConnectionError,
        NoBrokersAvailable,
        NoOffsetForPartitionError,
        OffsetCommitError,
        RequestTimeoutError,
    )
    from groupkit.group_consumer import GroupConsumer, RunSummary
    from groupkit.hooks import (
        BrokerRecovered,
        BrokerUnreachable,
        CommitDone,
        CommitFailed,
        Event,
        FetchCompleted,
        GroupRequestDone,
        HeartbeatAnswered,
        HeartbeatSent,
        Hook,
        Joined,
        MemberStateChanged,
        PartitionProgress,
        PartitionsAssigned,
        PartitionsLost,
        PartitionsRevoked,
        Polled,
        Processed,
        RebalanceFinished,
        RebalanceStarted,
        Synced,
    )
    from groupkit.producer import Producer, RecordMetadata
    from groupkit.protocol.records import Record

__version__ = "0.1.0"

_HOMES = {
    "Admin": "groupkit.admin",
    "AuthenticationError": "groupkit.errors",
    "BrokerError": "groupkit.errors",
    "CommitFailedError": "groupkit.errors",
    "ConfigError": "groupkit.errors",
    "Consumer": "groupkit.consumer",
    "ConsumerConfig": "groupkit.config",
    "ConsumerRebalanceListener": "groupkit.consumer",
    "ConsumerRecord": "groupkit.consumer",
    "CorruptFrame": "groupkit.errors",
    "CorruptRecordError": "groupkit.errors",
    "GroupConsumer": "groupkit.group_consumer",
    "GroupkitError": "groupkit.errors",
    "KafkaConnectionError": "groupkit.errors",
    "NoBrokersAvailable": "groupkit.errors",
    "NoOffsetForPartitionError": "groupkit.errors",
    "OffsetCommitError": "groupkit.errors",
    "Producer": "groupkit.producer",
    "ProducerConfig": "groupkit.config",
    "Record": "groupkit.protocol.records",
    "RecordMetadata": "groupkit.producer",
    "RequestTimeoutError": "groupkit.errors",
    "RunSummary": "groupkit.group_consumer",
    "TopicPartition": "assignors",
}

__all__ = [
    "Admin",
    "AuthenticationError",
    "BrokerError",
    "CommitFailedError",
    "ConfigError",
    "Consumer",
    "ConsumerConfig",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "CorruptFrame",
    "CorruptRecordError",
    "GroupConsumer",
    "GroupkitError",
    "KafkaConnectionError",
    "NoBrokersAvailable",
    "NoOffsetForPartitionError",
    "OffsetCommitError",
    "Producer",
    "ProducerConfig",
    "Record",
    "RecordMetadata",
    "RequestTimeoutError",
    "RunSummary",
    "TopicPartition",
    "__version__",
]


#: Hook event types (``groupkit.hooks``), for hooks that match on them.
__all__ += [
    "BrokerRecovered", "BrokerUnreachable", "CommitDone", "CommitFailed", "Event",
    "FetchCompleted", "GroupRequestDone", "HeartbeatAnswered", "HeartbeatSent", "Hook",
    "Joined", "MemberStateChanged", "PartitionProgress", "PartitionsAssigned", "PartitionsLost",
    "PartitionsRevoked", "Polled", "Processed", "RebalanceFinished", "RebalanceStarted",
    "Synced",
]
_HOMES.update(dict.fromkeys(__all__[__all__.index("BrokerRecovered"):], "groupkit.hooks"))


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'groupkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
