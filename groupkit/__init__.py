"""groupkit: Kafka consumer groups for Python, on a wire client of its own.

The names in ``__all__`` are the public API; everything else is internal unless its module says
so. They load on first use (PEP 562), so ``import groupkit.errors`` from a small module such as
an assignor does not pull in the runtime, the assignors package can use groupkit's errors
without an import cycle, and ``import groupkit`` stays light. ``_EXPORTS`` is the one list of
them; the ``TYPE_CHECKING`` imports repeat it for type checkers (a test keeps the two equal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from groupkit._lazy import lazy_exports

if TYPE_CHECKING:
    from assignors import TopicPartition as TopicPartition
    from groupkit.admin import Admin as Admin
    from groupkit.config import (
        ConsumerConfig as ConsumerConfig,
        ProducerConfig as ProducerConfig,
        ShareConsumerConfig as ShareConsumerConfig,
    )
    from groupkit.consumer import (
        Consumer as Consumer,
        ConsumerRebalanceListener as ConsumerRebalanceListener,
        ConsumerRecord as ConsumerRecord,
    )
    from groupkit.errors import (
        AbortableTransactionError as AbortableTransactionError,
        ApiKey as ApiKey,
        AuthenticationError as AuthenticationError,
        BrokerError as BrokerError,
        CommitFailedError as CommitFailedError,
        ConfigError as ConfigError,
        CorruptFrame as CorruptFrame,
        CorruptRecordError as CorruptRecordError,
        ErrorCode as ErrorCode,
        FatalTransactionError as FatalTransactionError,
        GroupkitError as GroupkitError,
        IllegalStateError as IllegalStateError,
        KafkaConnectionError as KafkaConnectionError,
        NegotiationError as NegotiationError,
        NoBrokersAvailable as NoBrokersAvailable,
        NoOffsetForPartitionError as NoOffsetForPartitionError,
        OffsetCommitError as OffsetCommitError,
        ProducerFencedError as ProducerFencedError,
        RejectRecord as RejectRecord,
        RequestTimeoutError as RequestTimeoutError,
        TransactionAbortedError as TransactionAbortedError,
        WakeupError as WakeupError,
    )
    from groupkit.group_consumer import (
        GroupConsumer as GroupConsumer,
        RunSummary as RunSummary,
    )
    from groupkit.hooks import (
        BrokerRecovered as BrokerRecovered,
        BrokerUnreachable as BrokerUnreachable,
        CommitDone as CommitDone,
        CommitFailed as CommitFailed,
        Event as Event,
        FetchCompleted as FetchCompleted,
        GroupRequestDone as GroupRequestDone,
        HeartbeatAnswered as HeartbeatAnswered,
        HeartbeatSent as HeartbeatSent,
        Hook as Hook,
        Joined as Joined,
        MemberStateChanged as MemberStateChanged,
        PartitionProgress as PartitionProgress,
        PartitionsAssigned as PartitionsAssigned,
        PartitionsLost as PartitionsLost,
        PartitionsProgressed as PartitionsProgressed,
        PartitionsRevoked as PartitionsRevoked,
        Polled as Polled,
        Processed as Processed,
        RebalanceFinished as RebalanceFinished,
        RebalanceStarted as RebalanceStarted,
        ShareLocksExpired as ShareLocksExpired,
        ShareRecordsAcknowledged as ShareRecordsAcknowledged,
        ShareRecordsAcquired as ShareRecordsAcquired,
        Synced as Synced,
        TopicMissing as TopicMissing,
    )
    from groupkit.producer import (
        Producer as Producer,
        RecordMetadata as RecordMetadata,
    )
    from groupkit.protocol.records import Record as Record
    from groupkit.share import AcknowledgeType as AcknowledgeType
    from groupkit.share_consumer import (
        ShareConsumer as ShareConsumer,
        ShareConsumerRecord as ShareConsumerRecord,
    )
    from groupkit.share_worker import (
        ShareRunSummary as ShareRunSummary,
        ShareWorker as ShareWorker,
    )
    from groupkit.values import (
        ConsumerGroupMetadata as ConsumerGroupMetadata,
        OffsetAndMetadata as OffsetAndMetadata,
    )

#: The version of the installed distribution (pyproject.toml is its one source), read on first
#: use: importlib.metadata costs a process about 4.5 MB of resident memory.
__version__: str

#: Home module -> the public names it provides.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "assignors": ("TopicPartition",),
    "groupkit.admin": ("Admin",),
    "groupkit.config": ("ConsumerConfig", "ProducerConfig", "ShareConsumerConfig"),
    "groupkit.consumer": ("Consumer", "ConsumerRebalanceListener", "ConsumerRecord"),
    "groupkit.errors": (
        "ApiKey", "AuthenticationError", "BrokerError", "CommitFailedError", "ConfigError",
        "CorruptFrame", "CorruptRecordError", "ErrorCode", "GroupkitError", "IllegalStateError",
        "KafkaConnectionError", "NegotiationError", "NoBrokersAvailable",
        "NoOffsetForPartitionError", "OffsetCommitError", "RequestTimeoutError", "WakeupError",
        # Transactions (issue 28).
        "AbortableTransactionError", "FatalTransactionError", "ProducerFencedError",
        "TransactionAbortedError",
        # Share groups (issue 30).
        "RejectRecord",
    ),
    "groupkit.group_consumer": ("GroupConsumer", "RunSummary"),
    "groupkit.hooks": (
        "BrokerRecovered", "BrokerUnreachable", "CommitDone", "CommitFailed", "Event",
        "FetchCompleted", "GroupRequestDone", "HeartbeatAnswered", "HeartbeatSent", "Hook",
        "Joined", "MemberStateChanged", "PartitionProgress", "PartitionsAssigned", "PartitionsLost",
        "PartitionsRevoked", "Polled", "Processed", "RebalanceFinished", "RebalanceStarted",
        "Synced", "TopicMissing", "PartitionsProgressed", "ShareLocksExpired",
        "ShareRecordsAcknowledged", "ShareRecordsAcquired",
    ),
    "groupkit.producer": ("Producer", "RecordMetadata"),
    "groupkit.protocol.records": ("Record",),
    "groupkit.share": ("AcknowledgeType",),
    "groupkit.share_consumer": ("ShareConsumer", "ShareConsumerRecord"),
    "groupkit.share_worker": ("ShareRunSummary", "ShareWorker"),
    "groupkit.values": ("ConsumerGroupMetadata", "OffsetAndMetadata"),
}
_HOMES = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = ["__version__", *sorted(_HOMES)]

_load, __dir__ = lazy_exports(globals(), _HOMES)


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib import metadata

        version = globals()["__version__"] = metadata.version("groupkit")
        return version
    return _load(name)
