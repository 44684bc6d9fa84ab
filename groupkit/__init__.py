"""groupkit: Kafka consumer groups for Python, on a wire client of its own.

The names in ``__all__`` are the public API; everything else is internal unless its module says
so. They load on first use (PEP 562), so ``import groupkit.errors`` from a small module such as
an assignor does not pull in the runtime, the assignors package can use groupkit's errors
without an import cycle, and ``import groupkit`` stays light. ``_EXPORTS`` is the one list of
them; the ``TYPE_CHECKING`` imports repeat it for type checkers (a test keeps the two equal).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assignors import TopicPartition as TopicPartition
    from groupkit.admin import Admin as Admin
    from groupkit.config import (
        ConsumerConfig as ConsumerConfig,
    )
    from groupkit.config import (
        ProducerConfig as ProducerConfig,
    )
    from groupkit.consumer import (
        Consumer as Consumer,
    )
    from groupkit.consumer import (
        ConsumerRebalanceListener as ConsumerRebalanceListener,
    )
    from groupkit.consumer import (
        ConsumerRecord as ConsumerRecord,
    )
    from groupkit.errors import (
        ApiKey as ApiKey,
    )
    from groupkit.errors import (
        AuthenticationError as AuthenticationError,
    )
    from groupkit.errors import (
        BrokerError as BrokerError,
    )
    from groupkit.errors import (
        CommitFailedError as CommitFailedError,
    )
    from groupkit.errors import (
        ConfigError as ConfigError,
    )
    from groupkit.errors import (
        CorruptFrame as CorruptFrame,
    )
    from groupkit.errors import (
        CorruptRecordError as CorruptRecordError,
    )
    from groupkit.errors import (
        ErrorCode as ErrorCode,
    )
    from groupkit.errors import (
        GroupkitError as GroupkitError,
    )
    from groupkit.errors import (
        IllegalStateError as IllegalStateError,
    )
    from groupkit.errors import (
        KafkaConnectionError as KafkaConnectionError,
    )
    from groupkit.errors import (
        NoBrokersAvailable as NoBrokersAvailable,
    )
    from groupkit.errors import (
        NoOffsetForPartitionError as NoOffsetForPartitionError,
    )
    from groupkit.errors import (
        OffsetCommitError as OffsetCommitError,
    )
    from groupkit.errors import (
        RequestTimeoutError as RequestTimeoutError,
    )
    from groupkit.group_consumer import (
        GroupConsumer as GroupConsumer,
    )
    from groupkit.group_consumer import (
        RunSummary as RunSummary,
    )
    from groupkit.hooks import (
        BrokerRecovered as BrokerRecovered,
    )
    from groupkit.hooks import (
        BrokerUnreachable as BrokerUnreachable,
    )
    from groupkit.hooks import (
        CommitDone as CommitDone,
    )
    from groupkit.hooks import (
        CommitFailed as CommitFailed,
    )
    from groupkit.hooks import (
        Event as Event,
    )
    from groupkit.hooks import (
        FetchCompleted as FetchCompleted,
    )
    from groupkit.hooks import (
        GroupRequestDone as GroupRequestDone,
    )
    from groupkit.hooks import (
        HeartbeatAnswered as HeartbeatAnswered,
    )
    from groupkit.hooks import (
        HeartbeatSent as HeartbeatSent,
    )
    from groupkit.hooks import (
        Hook as Hook,
    )
    from groupkit.hooks import (
        Joined as Joined,
    )
    from groupkit.hooks import (
        MemberStateChanged as MemberStateChanged,
    )
    from groupkit.hooks import (
        PartitionProgress as PartitionProgress,
    )
    from groupkit.hooks import (
        PartitionsAssigned as PartitionsAssigned,
    )
    from groupkit.hooks import (
        PartitionsLost as PartitionsLost,
    )
    from groupkit.hooks import (
        PartitionsRevoked as PartitionsRevoked,
    )
    from groupkit.hooks import (
        Polled as Polled,
    )
    from groupkit.hooks import (
        Processed as Processed,
    )
    from groupkit.hooks import (
        RebalanceFinished as RebalanceFinished,
    )
    from groupkit.hooks import (
        RebalanceStarted as RebalanceStarted,
    )
    from groupkit.hooks import (
        Synced as Synced,
    )
    from groupkit.producer import (
        Producer as Producer,
    )
    from groupkit.producer import (
        RecordMetadata as RecordMetadata,
    )
    from groupkit.protocol.records import Record as Record
    from groupkit.values import OffsetAndMetadata as OffsetAndMetadata

#: The version of the installed distribution (pyproject.toml is its one source), read on first
#: use: importlib.metadata costs a process about 4.5 MB of resident memory.
__version__: str

#: Home module -> the public names it provides.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "assignors": ("TopicPartition",),
    "groupkit.admin": ("Admin",),
    "groupkit.config": ("ConsumerConfig", "ProducerConfig",),
    "groupkit.consumer": ("Consumer", "ConsumerRebalanceListener", "ConsumerRecord",),
    "groupkit.errors": (
        "ApiKey", "AuthenticationError", "BrokerError", "CommitFailedError", "ConfigError",
        "CorruptFrame", "CorruptRecordError", "ErrorCode", "GroupkitError", "IllegalStateError",
        "KafkaConnectionError", "NoBrokersAvailable", "NoOffsetForPartitionError",
        "OffsetCommitError", "RequestTimeoutError",
    ),
    "groupkit.group_consumer": ("GroupConsumer", "RunSummary",),
    "groupkit.hooks": (
        "BrokerRecovered", "BrokerUnreachable", "CommitDone", "CommitFailed", "Event",
        "FetchCompleted", "GroupRequestDone", "HeartbeatAnswered", "HeartbeatSent", "Hook",
        "Joined", "MemberStateChanged", "PartitionProgress", "PartitionsAssigned", "PartitionsLost",
        "PartitionsRevoked", "Polled", "Processed", "RebalanceFinished", "RebalanceStarted",
        "Synced",
    ),
    "groupkit.producer": ("Producer", "RecordMetadata",),
    "groupkit.protocol.records": ("Record",),
    "groupkit.values": ("OffsetAndMetadata",),
}
_HOMES = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = ["__version__", *sorted(_HOMES)]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib import metadata

        version = globals()["__version__"] = metadata.version("groupkit")
        return version
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'groupkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
