"""Hook events: what the consumer runtime reports, for metrics and logs to observe.

A hook is any ``Callable[[Event], None]``. Hooks run on the thread where the fact happened (the
group runner, the fetcher, or the application thread for commits), so they must be quick. A hook
that raises is logged and skipped; it never stops the thread that called it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import attrs

log = logging.getLogger(__name__)


@attrs.frozen
class Joined:
    """JoinGroup answered: this member is in ``generation_id`` (as leader or follower)."""

    group_id: str
    member_id: str
    generation_id: int
    protocol_name: str
    leader: bool


@attrs.frozen
class Synced:
    """SyncGroup answered: the member holds ``partitions`` for ``generation_id``."""

    group_id: str
    generation_id: int
    partitions: int


@attrs.frozen
class RebalanceStarted:
    """The member began (re)joining its group; ``reason`` says why."""

    group_id: str
    reason: str


@attrs.frozen
class RebalanceFinished:
    """The member holds an assignment again, ``duration_s`` after the rebalance started."""

    group_id: str
    generation_id: int
    duration_s: float


@attrs.frozen
class HeartbeatSent:
    """A Heartbeat went to the coordinator."""

    group_id: str
    generation_id: int


@attrs.frozen
class HeartbeatAnswered:
    """A Heartbeat came back (``error_code`` 0 when accepted) after ``latency_s``."""

    group_id: str
    error_code: int
    latency_s: float


@attrs.frozen
class CommitDone:
    """An OffsetCommit of ``partitions`` partitions succeeded after ``latency_s``."""

    group_id: str
    partitions: int
    latency_s: float


@attrs.frozen
class CommitFailed:
    """An OffsetCommit failed; ``error`` says why."""

    group_id: str
    partitions: int
    error: str


@attrs.frozen
class FetchCompleted:
    """A Fetch came back from ``node_id`` with ``records`` records in ``size`` bytes."""

    node_id: int
    partitions: int
    records: int
    size: int
    latency_s: float


Event = (Joined | Synced | RebalanceStarted | RebalanceFinished | HeartbeatSent
         | HeartbeatAnswered | CommitDone | CommitFailed | FetchCompleted)
Hook = Callable[[Event], None]


def emit(hooks: Sequence[Hook], event: Event) -> None:
    """Give ``event`` to every hook; a hook that raises is logged and the rest still run."""
    for hook in hooks:
        try:
            hook(event)
        except Exception:
            log.exception("hook %r failed on %s", hook, type(event).__name__)
