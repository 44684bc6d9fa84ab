"""Hook events: what the consumer runtime reports, for metrics and logs to observe.

A hook is any ``Callable[[Event], None]``. Hooks run on the thread where the fact happened (the
group runner, the fetcher, a connection's reader for an idle Fetch's round trip, or the
application thread for commits), so they must be quick. A hook
that raises is logged and skipped; it never stops the thread that called it.

The events take their repr from ``groupkit.reprs`` (attrs' text, not compiled per class).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import attrs

from groupkit.reprs import AttrsRepr

log = logging.getLogger(__name__)


@attrs.frozen(repr=False)
class Joined(AttrsRepr):
    """JoinGroup answered: this member is in ``generation_id`` (as leader or follower)."""

    group_id: str
    member_id: str
    generation_id: int
    protocol_name: str
    leader: bool


@attrs.frozen(repr=False)
class Synced(AttrsRepr):
    """SyncGroup answered: the member holds ``partitions`` for ``generation_id``."""

    group_id: str
    generation_id: int
    partitions: int


@attrs.frozen(repr=False)
class RebalanceStarted(AttrsRepr):
    """The member began (re)joining its group; ``reason`` says why."""

    group_id: str
    reason: str


@attrs.frozen(repr=False)
class RebalanceFinished(AttrsRepr):
    """The member holds an assignment again, ``duration_s`` after the rebalance started."""

    group_id: str
    generation_id: int
    duration_s: float


@attrs.frozen(repr=False)
class HeartbeatSent(AttrsRepr):
    """A Heartbeat went to the coordinator."""

    group_id: str
    generation_id: int


@attrs.frozen(repr=False)
class HeartbeatAnswered(AttrsRepr):
    """A Heartbeat came back (``error_code`` 0 when accepted) after ``latency_s``."""

    group_id: str
    error_code: int
    latency_s: float


@attrs.frozen(repr=False)
class CommitDone(AttrsRepr):
    """An OffsetCommit of ``partitions`` partitions succeeded after ``latency_s``.

    ``offsets`` holds what was stored: (topic, partition, next offset to read) triples.
    """

    group_id: str
    partitions: int
    latency_s: float
    offsets: tuple[tuple[str, int, int], ...] = ()


@attrs.frozen(repr=False)
class CommitFailed(AttrsRepr):
    """An OffsetCommit failed; ``error`` says why, ``error_type`` is the exception's class
    name (a short, fixed vocabulary, e.g. for a metric label)."""

    group_id: str
    partitions: int
    error: str
    error_type: str = "GroupkitError"


@attrs.frozen(repr=False)
class FetchCompleted(AttrsRepr):
    """A Fetch came back from ``node_id`` with ``records`` records in ``size`` bytes."""

    node_id: int
    partitions: int
    records: int
    size: int
    latency_s: float


# --- membership, polling and connection facts (the metrics package is built on them) ---------


@attrs.frozen(repr=False)
class GroupRequestDone(AttrsRepr):
    """A request of the membership protocol (``api``: FindCoordinator, JoinGroup, SyncGroup,
    Heartbeat or LeaveGroup) finished after ``latency_s``.

    ``error`` is "" when the coordinator accepted it, the broker's error name when it answered
    with one (``REBALANCE_IN_PROGRESS``), or the exception's class name when no answer came
    (``RequestTimeoutError``).
    """

    group_id: str
    api: str
    error: str
    latency_s: float


@attrs.frozen(repr=False)
class MemberStateChanged(AttrsRepr):
    """The member moved from state ``previous`` to ``state`` (``MemberState`` names)."""

    group_id: str
    previous: str
    state: str


@attrs.frozen(repr=False)
class PartitionsAssigned(AttrsRepr):
    """``on_partitions_assigned`` ran for ``partitions`` (newly held) and took ``callback_s``."""

    group_id: str
    partitions: frozenset[tuple[str, int]]
    callback_s: float


@attrs.frozen(repr=False)
class PartitionsRevoked(AttrsRepr):
    """``partitions`` were given up in order; ``on_partitions_revoked`` took ``callback_s``."""

    group_id: str
    partitions: frozenset[tuple[str, int]]
    callback_s: float


@attrs.frozen(repr=False)
class PartitionsLost(AttrsRepr):
    """``partitions`` were taken without a hand-over; ``on_partitions_lost`` took ``callback_s``."""

    group_id: str
    partitions: frozenset[tuple[str, int]]
    callback_s: float


@attrs.frozen(repr=False)
class PartitionProgress(AttrsRepr):
    """Where one assigned partition stands.

    ``records``/``size``: in a ``Polled`` event, what that poll handed over from it (``size``
    in wire bytes, the share of the fetched batches); 0 in a ``PartitionsProgressed`` event.
    ``position``: the next offset the application gets. ``log_end``: the high watermark of the
    last Fetch answer (the last stable offset under read_committed), -1 before one.
    ``last_timestamp_ms``: the timestamp of the last record handed over from it, -1 when none.
    """

    topic: str
    partition: int
    records: int
    size: int
    position: int
    log_end: int
    last_timestamp_ms: int


@attrs.frozen(repr=False)
class Polled(AttrsRepr):
    """``poll`` returned ``records`` records. One event per poll, never one per record.

    ``partitions`` has each partition this poll handed records from, with how many: the
    counts of every poll, however fast they come, so counters built on them are exact. Where
    partitions stand (positions and log ends, for lag) comes in ``PartitionsProgressed``.
    """

    group_id: str | None
    records: int
    partitions: tuple[PartitionProgress, ...]


@attrs.frozen(repr=False)
class PartitionsProgressed(AttrsRepr):
    """The position or log end of ``partitions`` changed (records handed over, a Fetch
    answered, a seek); told from the fetcher thread within 0.1 s of the change, at most ten
    times a second, also while the application does not poll."""

    group_id: str | None
    partitions: tuple[PartitionProgress, ...]


@attrs.frozen(repr=False)
class Processed(AttrsRepr):
    """A GroupConsumer handed one poll's ``records`` to ``process`` or ``process_batch``;
    ``failed`` of them raised; it took ``duration_s``."""

    group_id: str
    records: int
    failed: int
    duration_s: float


@attrs.frozen(repr=False)
class TransactionEnded(AttrsRepr):
    """An exactly-once GroupConsumer ended one poll's transaction: ``committed`` (its output
    and offsets count) or aborted; it was open ``duration_s``."""

    group_id: str
    committed: bool
    duration_s: float


@attrs.frozen(repr=False)
class BrokerUnreachable(AttrsRepr):
    """A connection to ``broker`` (``host:port``) failed: a connect attempt (``failures``
    attempts in a row so far, 1 at the start of an outage) or an open connection that broke
    (``failures`` 0)."""

    broker: str
    error: str
    failures: int


@attrs.frozen(repr=False)
class BrokerRecovered(AttrsRepr):
    """A connection to ``broker`` was made after ``failures`` failed attempts over ``down_s``."""

    broker: str
    failures: int
    down_s: float


@attrs.frozen(repr=False)
class TopicMissing(AttrsRepr):
    """A metadata answer says the tracked ``topic`` does not exist (``error``: the broker's
    error name, e.g. UNKNOWN_TOPIC_OR_PARTITION); reported at every refresh while it lasts."""

    topic: str
    error: str


# --- share groups (KIP-932) --------------------------------------------------------------------


@attrs.frozen(repr=False)
class ShareRecordsAcquired(AttrsRepr):
    """A ShareFetch answer gave this member ``records`` records of one partition.

    ``delivery_counts`` pairs each delivery count with how many of them had it (a count above
    1 is a redelivery); ``gaps``: acquired offsets without a record (acknowledged as gaps).
    """

    group_id: str
    topic: str
    partition: int
    records: int
    delivery_counts: tuple[tuple[int, int], ...]
    gaps: int = 0


@attrs.frozen(repr=False)
class ShareRecordsAcknowledged(AttrsRepr):
    """The broker answered acknowledgements of one partition: ``counts`` pairs each type name
    (ACCEPT, RELEASE, REJECT, RENEW, GAP) with its records; ``error`` is "" when they were
    applied, else the error's name (INVALID_RECORD_STATE: the records were no longer this
    member's, their lock had run out)."""

    group_id: str
    topic: str
    partition: int
    counts: tuple[tuple[str, int], ...]
    error: str
    latency_s: float


@attrs.frozen(repr=False)
class ShareLocksExpired(AttrsRepr):
    """The acquisition locks of ``records`` records of one partition ran out before the
    application acknowledged them: the broker may deliver them to another member."""

    group_id: str
    topic: str
    partition: int
    records: int


Event = (Joined | Synced | RebalanceStarted | RebalanceFinished | HeartbeatSent
         | HeartbeatAnswered | CommitDone | CommitFailed | FetchCompleted | GroupRequestDone
         | MemberStateChanged | PartitionsAssigned | PartitionsRevoked | PartitionsLost | Polled
         | PartitionsProgressed | Processed | BrokerUnreachable | BrokerRecovered | TopicMissing
         | TransactionEnded | ShareRecordsAcquired | ShareRecordsAcknowledged | ShareLocksExpired)
Hook = Callable[[Event], None]


def emit(hooks: Sequence[Hook], event: Event) -> None:
    """Give ``event`` to every hook; a hook that raises is logged and the rest still run."""
    for hook in hooks:
        try:
            hook(event)
        except Exception:
            log.exception("hook %r failed on %s", hook, type(event).__name__)
