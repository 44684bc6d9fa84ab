"""The fetcher's shared state: the assigned partitions' table under one lock, and what every
part of the fetcher does with it.

``FetcherState`` holds the partition table (``runtime.fetched.FetchedPartition`` each), the
lock and condition that guard it, the answers waiting for the fetcher thread and the counters
``take`` reads; beside it the moves the application's side (``fetcher``), the answer handling
(``fetch_answers``) and the fetcher thread (``fetch_loop``) share: owe a partition's error to
the application, report trouble once, wake a blocked poll. ``Fetcher`` builds on all three.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import attrs

from assignors import TopicPartition
from groupkit.config import ConsumerConfig
from groupkit.errors import GroupkitError
from groupkit.hooks import Hook
from groupkit.protocol.messages.fetch import FetchRequest
from groupkit.runtime.cluster import Cluster
from groupkit.runtime.connection import BrokerConnection
from groupkit.runtime.fetched import FetchedPartition
from groupkit.runtime.offsets import OffsetStore
from groupkit.runtime.partition_state import PartitionEvent
from groupkit.runtime.standing import Standing

#: One logger for every part of the fetcher: the name operators filter on.
log = logging.getLogger("groupkit.runtime.fetcher")

#: The first Fetch version that names topics by id.
TOPIC_IDS = 13


@attrs.define(eq=False)
class SentFetch:
    """A Fetch in flight. A slotted attrs class that is not frozen: on CPython 3.11 it is
    made and read faster than a frozen one or a NamedTuple, and an idle consumer's repeat of
    the same Fetch on a reader thread (see ``_answered``) reuses it with a new ``started``."""

    node: int
    version: int
    offsets: dict[TopicPartition, tuple[int, int]]
    names: dict[Any, str]
    started: float
    request: FetchRequest
    #: The pooled connection it went out on: ``cluster.connection(node, FETCH)``. The pool
    #: replaces it only once it is down and its node moved, and closes it then, so a repeat
    #: on it is refused and the fetcher thread routes again.
    conn: BrokerConnection


@attrs.define(eq=False)
class FetcherState:
    """The fetcher's partition table, lock and counters (see the module docstring).

    ``wakeup`` is called on the fetcher thread when new records (or errors) are ready, so a
    blocked ``poll`` can return at once.
    """

    cluster: Cluster
    config: ConsumerConfig
    offsets: OffsetStore | None
    hooks: Sequence[Hook] = ()
    wakeup: Callable[[], None] = lambda: None

    #: ``_cond``'s lock. ``_answered`` holds it directly, entered in C, instead of entering
    #: ``_cond`` (a Python-level ``Condition.__enter__``/``__exit__``); it is the same lock.
    _lock: threading.RLock = attrs.field(init=False, factory=threading.RLock)
    _cond: threading.Condition = attrs.field(init=False, default=attrs.Factory(
        lambda fetcher: threading.Condition(fetcher._lock), takes_self=True))
    _parts: dict[TopicPartition, FetchedPartition] = attrs.field(init=False, factory=dict)
    _busy_nodes: set[int] = attrs.field(init=False, factory=set)
    _answers: collections.deque[tuple[SentFetch, Future[Any]]] = attrs.field(
        init=False, factory=collections.deque)
    _buffered: int = attrs.field(init=False, default=0)
    #: Partitions whose position or log end changed since the fetcher thread last told the
    #: hooks (``PartitionsProgressed``).
    _changed: set[TopicPartition] = attrs.field(init=False, factory=set)
    #: The partitions ``take`` handed records from since the last ``handed()``, each once
    #: (it is added as its ``taken`` count leaves 0). The application thread's alone.
    _handed: list[FetchedPartition] = attrs.field(init=False, factory=list)
    #: When the fetcher thread may next tell the hooks of changed partitions.
    _report_at: float = attrs.field(init=False, default=0.0)
    _closed: bool = attrs.field(init=False, default=False)
    #: What keeps fetching from working, while it lasts (logged once per change).
    _trouble: str | None = attrs.field(init=False, default=None)
    _thread: threading.Thread | None = attrs.field(init=False, default=None)
    #: Per node, a Fetch and the answer to it that changed nothing (no records, no errors):
    #: the same answer to an equal request again may be answered by sending it again (see
    #: ``_idle_again``) without waking the fetcher thread.
    _quiet: dict[int, tuple[FetchRequest | None, Any]] = attrs.field(init=False, factory=dict)
    #: Per node, the idle Fetch its connection sends again by itself (``_answered``), ended
    #: by ``_end_repeats`` at every change.
    _standing: dict[int, Standing] = attrs.field(init=False, factory=dict)
    #: False once a ``take`` found no partition holding an answer or an error; set again
    #: (under the lock) as one is stored (``_store``, ``_owe``). An idle consumer's ``take``
    #: reads it without the lock and returns at once: whatever sets it then rings the poll's
    #: bell, or (an answer with no data records) is taken by the next poll, as before.
    _takeable: bool = attrs.field(init=False, default=True)
    #: The partition whose answer ``take`` is draining.
    _in_line: FetchedPartition | None = attrs.field(init=False, default=None)
    #: How many answers were buffered so far (numbers them in arrival order).
    _arrived: int = attrs.field(init=False, default=0)
    #: A Fetch's timeout: the request timeout on top of the broker's long-poll wait.
    _fetch_timeout_ms: int = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._fetch_timeout_ms = self.config.request_timeout_ms + self.config.fetch_max_wait_ms
        # Stale metadata ends them too: the fetcher thread refreshes it before it fetches
        # again, as it does after any answer.
        self.cluster.when_stale(self._end_repeats)

    def _end_repeats(self) -> None:
        """End the idle Fetches the connections send again by themselves: the partitions,
        their offsets, the metadata or the fetcher's health changed, so the fetcher thread
        decides what to send next. Every change to what ``_idle_again`` looks at calls it,
        after making the change; any thread, under the lock (an RLock: the caller may hold
        it), so it cannot pass between ``_idle_again``'s look and a new repeat."""
        with self._lock:
            if self._standing:
                for standing in self._standing.values():
                    standing.end()
                self._standing.clear()

    def _owe(self, part: FetchedPartition, error: GroupkitError, event: PartitionEvent) -> None:
        """Store the error ``take`` raises for ``part`` and move it to a failed state."""
        part.error = error
        self._takeable = True
        part.go(event)
        self._end_repeats()

    def _troubled(self, why: str) -> None:
        """One WARNING when fetching stops working, not one per retry (the broker outage itself
        is reported per broker by the cluster); each retry backs off and the fetcher recovers
        by itself (see ``_recovered``)."""
        if self._trouble is None:
            self._trouble = why
            self._end_repeats()
            log.warning("fetching is held up: %s; retrying with back-off until it works",
                        why)
        else:
            log.debug("fetching still held up: %s", why)

    def _recovered(self) -> None:
        if self._trouble is not None:
            log.info("fetching works again (after: %s)", self._trouble)
            self._trouble = None

    def _wake(self) -> None:
        try:
            self.wakeup()
        except Exception:
            log.exception("the wakeup callback failed")
