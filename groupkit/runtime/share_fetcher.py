"""The share fetcher: the thread that talks to the partition leaders for a share consumer.

After the Java client's ShareConsumeRequestManager. It keeps one share session per leader
(``groupkit.share.ShareSession``) and at most one request in flight per leader: a ShareFetch
when the application wants records and has none buffered (carrying the acknowledgements of
earlier records as it goes, Java's piggy-backing), a ShareAcknowledge when a commit wants
acknowledgements sent now, and on close a final ShareAcknowledge (epoch -1) that closes the
session. In the record_limit mode the ShareFetch goes to one leader at a time, the others
getting their acknowledgements on a ShareAcknowledge; so do RENEWs (KIP-1222), which acquire
nothing new, and which a leader below ShareAcknowledge v2 cannot take. An answer is handled on
the connection's reader thread as it arrives, as Java's network thread handles its responses:
records are decoded (``share_records``) and recorded in the ledger (acquired offsets, delivery
counts, lock deadlines), acknowledgement results are queued for the application's callback and
for the commits waiting on them, and the fetcher thread is woken only when the answer leaves it
something to send. A failed request goes to the fetcher thread. The fetcher thread's rounds and
the answers take turns under one lock (``_round``). The application's side only touches the
buffer, the ledger and the queues, under another (``_lock``); it never sends, so nothing it
calls blocks on a broker.

The module is over 600 lines because the three sides (the fetcher thread, the answers, the
application) share one set of state (sessions, requests in flight, buffer, ledger, commit
tickets) under these two locks, which is easier to check in one place.
"""

from __future__ import annotations

import collections
import enum
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import Future
from functools import partial
from typing import Any

import attrs

from groupkit.errors import (
    ErrorCode,
    FeatureUnsupportedError,
    GroupkitError,
    IllegalStateError,
    ShareSessionNotFoundError,
    UnsupportedVersionError,
    error_for_code,
)
from groupkit.group.backoff import Backoff
from groupkit.hooks import (
    Hook,
    ShareLocksExpired,
    ShareRecordsAcknowledged,
    ShareRecordsAcquired,
    emit,
)
from groupkit.protocol.messages.share_fetch import (
    ACQUIRE_RECORD_LIMIT,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareFetchResponse,
)
from groupkit.protocol.schema import Request
from groupkit.runtime.bell import Bell
from groupkit.runtime.cluster import Cluster
from groupkit.runtime.share_records import (
    ShareBatch,
    ShareConsumerRecord,
    read_share_answer,
)
from groupkit.share import (
    AcknowledgeType,
    FetchSettings,
    ShareLedger,
    SharePartition,
    ShareSession,
    ack_batches,
)
from groupkit.share.offsets import OffsetRuns

log = logging.getLogger(__name__)

#: The connection purpose of share requests (a share consumer runs no classic fetcher).
SHARE = "share"
#: The acquisition lock assumed until an answer names one (Kafka's default,
#: group.share.record.lock.duration.ms; a v0 answer does not carry it).
DEFAULT_LOCK_S = 30.0
#: Errors of a whole answer after which the partition leaders may have moved.
_REFRESH = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                      ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.LEADER_NOT_AVAILABLE,
                      ErrorCode.FENCED_LEADER_EPOCH})
#: Answers that stop the consumer: retrying cannot help.
_FATAL = frozenset({ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.UNSUPPORTED_VERSION,
                    ErrorCode.INVALID_REQUEST})
_TYPE_NAMES = {0: "GAP", **{int(t): t.name for t in AcknowledgeType}}


@attrs.frozen
class AckResult:
    """The broker's word on one partition's acknowledgements: ``acks`` (offset -> type id)
    applied when ``error`` is None, else none of them."""

    partition: SharePartition
    acks: OffsetRuns
    error: GroupkitError | None


@attrs.define(eq=False)
class CommitTicket:
    """One commit's wait: done when every leader that held acknowledgements at the commit has
    answered them (``results``)."""

    nodes: set[int]
    #: The partitions whose acknowledgements each node was to answer.
    partitions: dict[int, list[SharePartition]] = attrs.field(factory=dict)
    results: list[AckResult] = attrs.field(factory=list)
    done: threading.Event = attrs.field(factory=threading.Event)

    def _answered(self, node: int, results: Iterable[AckResult]) -> None:
        self.results.extend(results)
        self.nodes.discard(node)
        if not self.nodes:
            self.done.set()


class _Kind(enum.Enum):
    FETCH = "ShareFetch"
    ACK = "ShareAcknowledge"
    CLOSE = "ShareAcknowledge (close)"


@attrs.define(eq=False)
class _InFlight:
    kind: _Kind
    node: int
    token: int
    acks: dict[SharePartition, OffsetRuns]
    partitions: dict[tuple[Any, int], SharePartition]
    sent_at: float
    tickets: list[CommitTicket]


@attrs.define(eq=False)
class ShareFetcher:
    """Fetches and acknowledges for one share consumer on a daemon thread.

    ``ready`` is called (on the fetcher thread) whenever records, acknowledgement results or
    an error arrive, so a waiting ``poll`` can look again; an empty answer does not call it.
    """

    cluster: Cluster
    group_id: str
    member_id: str
    settings: FetchSettings
    check_crcs: bool = True
    hooks: Sequence[Hook] = ()
    ready: Callable[[], None] = lambda: None
    clock: Callable[[], float] = time.monotonic

    ledger: ShareLedger = attrs.field(init=False, factory=ShareLedger)
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    #: Held by the fetcher thread's rounds and by an answer's handling, so that the two take
    #: turns with the sessions, the requests in flight and the back-offs (re-entered when a
    #: send completes at once, on the fetcher thread); taken before ``_lock``, never after.
    _round: threading.RLock = attrs.field(init=False, factory=threading.RLock)
    #: When the fetcher thread next wakes by itself (set before it waits).
    _sleep_until: float = attrs.field(init=False, default=0.0)
    _bell: Bell = attrs.field(init=False, factory=Bell)
    _thread: threading.Thread | None = attrs.field(init=False, default=None)
    _assigned: frozenset[SharePartition] = attrs.field(init=False, default=frozenset())
    _sessions: dict[int, ShareSession] = attrs.field(init=False, factory=dict)
    _in_flight: dict[int, _InFlight] = attrs.field(init=False, factory=dict)
    _retry_at: dict[int, float] = attrs.field(init=False, factory=dict)
    _failures: dict[int, int] = attrs.field(init=False, factory=dict)
    _buffer: collections.deque[ShareBatch] = attrs.field(init=False, factory=collections.deque)
    #: How many times the application asked for records and found none buffered, and that
    #: count when the last answer brought records: while the application has come up empty
    #: since (Java's ShareConsumeRequestManager.fetchMoreRecords), every leader with none of
    #: its partitions' records buffered and no request in flight is fetched from, again as
    #: soon as an empty answer comes back, with no word from the application; an answer that
    #: brings records stops that until the application comes up empty again, so nothing is
    #: acquired while it works on records it has, and every fetch carries the
    #: acknowledgements of the poll before it.
    _polls: int = attrs.field(init=False, default=0)
    _served: int = attrs.field(init=False, default=0)
    _waiting: dict[int, list[CommitTicket]] = attrs.field(init=False, factory=dict)
    #: record_limit mode: where in the sorted assignment the next leader to fetch from is
    #: looked for (``_limited_fetch_node``).
    _pick: int = attrs.field(init=False, default=0)
    #: The leaders already named in the log for speaking ShareFetch below v2, where the
    #: record_limit mode cannot be asked for.
    _soft_limit_logged: set[int] = attrs.field(init=False, factory=set)
    #: The assignment and metadata ``_by_leader`` last read, and its answer.
    _routes: tuple[frozenset[SharePartition], Any, dict[int, list[SharePartition]]] | None = \
        attrs.field(init=False, default=None)
    _results: collections.deque[AckResult] = attrs.field(init=False, factory=collections.deque)
    _inbox: collections.deque[Callable[[float], None]] = attrs.field(
        init=False, factory=collections.deque)
    _lock_s: float = attrs.field(init=False, default=DEFAULT_LOCK_S)
    #: The acquisition lock the last answer that named one gave, in ms (None: none yet).
    _lock_ms: int | None = attrs.field(init=False, default=None)
    _error: GroupkitError | None = attrs.field(init=False, default=None)
    _closing: bool = attrs.field(init=False, default=False)
    _closed: threading.Event = attrs.field(init=False, factory=threading.Event)
    _stopping: bool = attrs.field(init=False, default=False)
    _backoff: Backoff = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._backoff = self.cluster.config.retry_backoff()

    # --- the application's side (any thread) ---------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            raise IllegalStateError("ShareFetcher.start() was called twice; call it once")
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"groupkit-share-{self.group_id}")
        self._thread.start()

    def assign(self, partitions: frozenset[SharePartition]) -> None:
        """Fetch from ``partitions`` from now on (the share group's assignment)."""
        with self._lock:
            self._assigned = partitions
        self._bell.ring()

    @property
    def assigned(self) -> frozenset[SharePartition]:
        return self._assigned

    def take(self, max_records: int, delivered: dict[SharePartition, list[range]]
             ) -> list[ShareConsumerRecord]:
        """Up to ``max_records`` buffered records (their offsets added to ``delivered``, by
        partition, as runs); when there are none, asks the leaders with nothing buffered for
        more.
        Raises a corrupt batch's error once the records before it are handed over."""
        out: list[ShareConsumerRecord] = []
        with self._lock:
            while self._buffer and len(out) < max_records:
                batch = self._buffer[0]
                piece = batch.take(max_records - len(out))
                if piece:
                    out.extend(piece)
                    offsets = delivered.get(batch.partition)
                    if offsets is None:
                        offsets = delivered[batch.partition] = []
                    offsets.extend(batch.offsets(piece))
                if batch.index >= len(batch.records):
                    self._buffer.popleft()
                    if batch.error is not None:
                        if out:
                            self._buffer.appendleft(attrs.evolve(batch, records=[], index=0))
                            break
                        raise batch.error
            if not out:
                self._polls += 1
        self._bell.ring()
        return out

    def acknowledge(self, partition: SharePartition, offset: int, ack_type: int,
                    delivery_count: int | None = None) -> None:
        with self._lock:
            self.ledger.acknowledge(partition, offset, ack_type, delivery_count)

    def check_renewal(self, partition: SharePartition) -> None:
        """Raise FeatureUnsupportedError when the leader of ``partition`` is known to speak
        ShareAcknowledge below v2, which cannot carry a RENEW (KIP-1222, Kafka 4.2)."""
        node = self._leader(partition)
        if node < 0:
            return  # not known yet: the send says so if it is too old
        conn = self.cluster.connection(node, SHARE)
        version = conn.versions.get(ShareAcknowledgeRequest.API_KEY)
        if version is not None and version < 2:
            raise _renew_unsupported(conn.address, node, version)

    def wake(self) -> None:
        """Have the fetcher thread look now (acknowledgements wait to be sent)."""
        self._bell.ring()

    def acknowledge_all(self, delivered: dict[SharePartition, list[range]],
                        ack_type: int) -> None:
        """Acknowledge whatever of ``delivered`` (runs of offsets, by partition, as ``take``
        gives them) is still unacknowledged (implicit mode; and close)."""
        with self._lock:
            for partition, runs in delivered.items():
                for offsets in runs:
                    self.ledger.acknowledge_all(partition, offsets, ack_type)

    def unacknowledged(self, delivered: dict[SharePartition, list[range]],
                       skip: Collection[tuple[SharePartition, int]] = ()) -> int:
        """How many of ``delivered`` are still acquired and unacknowledged (but ``skip``)."""
        with self._lock:
            return sum(1 for p, runs in delivered.items() for offsets in runs for o in offsets
                       if self.ledger.is_held(p, o) and (p, o) not in skip)

    def commit(self) -> CommitTicket:
        """Send every acknowledgement not yet sent, now; the ticket completes when each leader
        holding some has answered them."""
        with self._lock:
            partitions: dict[int, list[SharePartition]] = {}
            for p in self.ledger.pending_partitions():
                partitions.setdefault(self._leader(p), []).append(p)
            unrouted = partitions.pop(-1, [])
            nodes = set(partitions)
            ticket = CommitTicket(nodes, partitions)
            for node in nodes:
                self._waiting.setdefault(node, []).append(ticket)
            if unrouted:  # no leader known: they wait for the next request after a refresh
                log.info("share fetcher of group %s: no leader known for %d partition(s) with"
                         " acknowledgements; they go once metadata names one", self.group_id,
                         len(unrouted))
            if not nodes:
                ticket.done.set()
        self._bell.ring()
        return ticket

    def results(self) -> list[AckResult]:
        """Acknowledgement results since the last call, oldest first (for the callback)."""
        if not self._results:
            return []
        with self._lock:
            out = list(self._results)
            self._results.clear()
        return out

    @property
    def lock_timeout_ms(self) -> int | None:
        """The acquisition lock the brokers last named (ShareFetch v1+, ShareAcknowledge
        v2+), in ms; None before any did."""
        return self._lock_ms

    @property
    def error(self) -> GroupkitError | None:
        """What stopped the fetcher (a broker without the share APIs, no authorization)."""
        return self._error

    def release_buffered(self) -> None:
        """Release every buffered record the application never saw (Java does so on close)."""
        with self._lock:
            for batch in self._buffer:
                for record in batch.records[batch.index:]:
                    if self.ledger.is_held(batch.partition, record.offset):
                        self.ledger.acknowledge(batch.partition, record.offset,
                                                AcknowledgeType.RELEASE)
            self._buffer.clear()

    def close(self, timeout: float) -> bool:
        """Send the acknowledgements left and close every share session (epoch -1), then stop;
        True when every session closed within ``timeout`` seconds."""
        if self._thread is None:
            return True
        deadline = time.monotonic() + timeout
        with self._lock:
            self._closing = True
        self._bell.ring()
        closed = self._closed.wait(timeout)
        self.stop(max(0.0, deadline - time.monotonic()))
        return closed

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            self._stopping = True
        self._bell.ring()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    # --- the fetcher thread --------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while True:
                with self._lock:
                    stopping = self._stopping
                    items = list(self._inbox)
                    self._inbox.clear()
                if stopping:
                    break
                with self._round:
                    now = self.clock()
                    for item in items:
                        item(now)
                    self._maybe_refresh()
                    self._send_due(self.clock())
                    self._expire(self.clock())
                    now = self.clock()
                    wait = self._wait_s(now)
                    self._sleep_until = now + wait
                if not self._inbox:
                    self._bell.wait(wait)  # a ring since the round ended returns at once
        except Exception as exc:
            self._broke(exc)

    def _broke(self, exc: Exception) -> None:
        log.exception("the share fetcher of group %s stopped on an internal error",
                      self.group_id)
        self._error = exc if isinstance(exc, GroupkitError) else IllegalStateError(
            f"the share fetcher stopped on an internal error: {exc!r}")
        self._closed.set()
        self.ready()

    def _wait_s(self, now: float) -> float:
        due = [at for node, at in self._retry_at.items() if at > now]
        with self._lock:
            expiry = self.ledger.next_expiry()
        if expiry is not None:
            due.append(expiry)
        if self.cluster.stale:
            due.append(now + max(0.01, self.cluster.refresh_due_in()))
        return max(0.0, min(due) - now) if due else 5.0

    def _maybe_refresh(self) -> None:
        if not self.cluster.stale or self.cluster.refresh_due_in() > 0:
            return
        try:
            self.cluster.maybe_refresh(time.monotonic() + self.cluster.config.request_timeout_ms
                                       / 1000)
        except GroupkitError as exc:
            log.info("share fetcher of group %s: metadata refresh failed: %s", self.group_id,
                     exc)

    def _leader(self, partition: SharePartition) -> int:
        node = self.cluster.metadata.leader_for(partition.topic, partition.partition)
        if node is None:
            self.cluster.request_refresh()
            return -1
        return node

    def _send_due(self, now: float) -> None:
        plans: list[tuple[_InFlight, Request]] = []
        failed: list[tuple[int, dict[SharePartition, OffsetRuns], GroupkitError,
                           list[CommitTicket]]] = []
        with self._lock:
            by_node = self._by_leader()
            acks_by_node: dict[int, list[SharePartition]] = {}
            for p in self.ledger.pending_partitions():
                acks_by_node.setdefault(self._leader(p), []).append(p)
            nodes = set(by_node) | set(acks_by_node) | set(self._waiting)
            if self._closing:
                nodes |= {n for n, s in self._sessions.items() if not s.is_new}
            nodes.discard(-1)
            only = (self._limited_fetch_node(now)
                    if self.settings.acquire_mode == ACQUIRE_RECORD_LIMIT else None)
            for node in sorted(nodes):
                if node in self._in_flight or self._retry_at.get(node, 0.0) > now:
                    continue
                # In record_limit mode every other leader gets its acknowledgements alone.
                fetchable = by_node.get(node, []) if only is None or node == only else []
                plan = self._plan(node, fetchable, acks_by_node.get(node, []), now, failed)
                if plan is not None:
                    plans.append(plan)
                    self._in_flight[node] = plan[0]
            if self._closing and not self._in_flight and not any(
                    not s.is_new and not s.closing for s in self._sessions.values()):
                self._closed.set()
        for node, acks, error, tickets in failed:
            self._acks_answered(node, acks, error, tickets, now)
        for flight, request in plans:
            self._send(flight, request)

    def _limited_fetch_node(self, now: float) -> int:
        """record_limit mode: the one leader a ShareFetch may go to now (-1: none), so that the
        member acquires at most ``max_records`` records at a time. As Java's
        ShareConsumeRequestManager in that mode (one node gets the fetch, the partition that
        chose it moves to the end) and librdkafka's share consumer (one selected broker): the
        leaders are taken in turn by partition, skipping one with a request in flight or in
        back-off; none while a ShareFetch is in flight or the application has records (under
        the lock)."""
        if self._polls <= self._served or any(
                flight.kind is _Kind.FETCH for flight in self._in_flight.values()):
            return -1
        order = sorted(self._assigned)
        for step in range(len(order)):
            index = (self._pick + step) % len(order)
            node = self._leader(order[index])
            if node == -1 or node in self._in_flight or self._retry_at.get(node, 0.0) > now:
                continue
            self._pick = index + 1
            return node
        return -1

    def _by_leader(self) -> dict[int, list[SharePartition]]:
        """The assigned partitions by leader (-1: none known), worked out again only when the
        assignment or the metadata changed (under the lock)."""
        metadata = self.cluster.metadata
        routes = self._routes
        if routes is not None and routes[0] is self._assigned and routes[1] is metadata:
            return routes[2]
        by_node: dict[int, list[SharePartition]] = {}
        for p in self._assigned:
            by_node.setdefault(self._leader(p), []).append(p)
        # With a leader unknown, each round asks again (and for a refresh, in _leader).
        self._routes = None if -1 in by_node else (self._assigned, metadata, by_node)
        return by_node

    def _plan(self, node: int, partitions: list[SharePartition], ack_parts: list[SharePartition],
              now: float, failed: list[Any]) -> tuple[_InFlight, Request] | None:
        """What to send to ``node`` now, if anything (under the lock)."""
        session = self._sessions.get(node)
        if session is None:
            session = self._sessions[node] = ShareSession(self.group_id, self.member_id, node)
        tickets = self._waiting.get(node, [])
        if self._closing:
            if session.is_new or session.closing:
                for ticket in self._waiting.pop(node, []):
                    ticket._answered(node, [])
                return None
            session.close()
            sent = self.ledger.take(ack_parts)
            request = session.acknowledge(_batches(sent.acks))
            assert request is not None
            return self._flight(_Kind.CLOSE, node, sent.token, sent.acks, {}, now,
                                self._waiting.pop(node, []), request)
        if tickets:
            del self._waiting[node]
            if session.is_new:
                self._lost(node, ack_parts, failed, tickets)
                return None
            sent = self.ledger.take(ack_parts)
            if not sent.acks:
                for ticket in tickets:
                    ticket._answered(node, [])
                return None
            request = session.acknowledge(_batches(sent.acks))
            assert request is not None
            return self._flight(_Kind.ACK, node, sent.token, sent.acks, {}, now, tickets,
                                request)
        if session.is_new and ack_parts and self.ledger.renews(ack_parts):
            # Renewals cannot wait for a fetch to open a session: the application asks for
            # nothing else until they are answered.
            self._lost(node, ack_parts, failed, [])
            ack_parts = []
        # A RENEW goes on a ShareAcknowledge of its own, as Java sends it on a ShareFetch that
        # asks for no records: a renewal acquires nothing new.
        renewing = bool(ack_parts) and self.ledger.renews(ack_parts)
        if partitions and self._polls > self._served and not renewing \
                and not self._buffered_from(partitions):
            sent = self.ledger.take([] if session.is_new else ack_parts)
            return self._flight(_Kind.FETCH, node, sent.token, sent.acks,
                                {(p.topic_id, p.partition): p for p in partitions}, now, [],
                                session.fetch(partitions, _batches(sent.acks), self.settings))
        if ack_parts and not session.is_new:
            # No fetch is going there now: the acknowledgements go on their own, so the
            # records' locks are not held longer than the application took.
            sent = self.ledger.take(ack_parts)
            request = session.acknowledge(_batches(sent.acks))
            assert request is not None
            return self._flight(_Kind.ACK, node, sent.token, sent.acks, {}, now, [], request)
        return None

    def _lost(self, node: int, ack_parts: list[SharePartition], failed: list[Any],
              tickets: list[CommitTicket]) -> None:
        """Fail the acknowledgements waiting for ``node``, whose share session is lost (under
        the lock): only a ShareFetch opens a session, and the one their records came from is
        gone, the broker having released them when it lost it."""
        sent = self.ledger.take(ack_parts)
        failed.append((node, sent.acks, ShareSessionNotFoundError(
            f"no share session is open with broker node {node} (the one these records came"
            " from was lost, and the broker released them: they are delivered again)"),
            tickets))
        self.ledger.answered(sent.token)

    def _buffered_from(self, partitions: list[SharePartition]) -> bool:
        """Whether records of any of ``partitions`` wait in the buffer."""
        if not self._buffer:
            return False
        mine = set(partitions)
        return any(batch.partition in mine for batch in self._buffer)

    def _flight(self, kind: _Kind, node: int, token: int,
                acks: dict[SharePartition, OffsetRuns],
                partitions: dict[tuple[Any, int], SharePartition], now: float,
                tickets: list[CommitTicket], request: Request) -> tuple[_InFlight, Request]:
        for p in acks:
            partitions.setdefault((p.topic_id, p.partition), p)
        return _InFlight(kind, node, token, acks, partitions, now, tickets), request

    def _send(self, flight: _InFlight, request: Request) -> None:
        node = flight.node
        try:
            conn = self.cluster.connection(node, SHARE)
            if not conn.connected:
                conn.connect(self.cluster.config.socket_connection_setup_timeout_ms / 1000)
            version = conn.versions.get(request.API_KEY)
            if version is None or version < 1:
                raise self._unsupported(conn.address, node, request, version)
            if version < 2 and isinstance(request, ShareAcknowledgeRequest) \
                    and request.is_renew_ack:
                # Nothing is sent, so the session is as it was; the acknowledgements fail
                # (as Java fails every one of such a request), the consumer goes on.
                self._refused(flight, _renew_unsupported(conn.address, node, version))
                return
            if (version < 2 and isinstance(request, ShareFetchRequest)
                    and request.share_acquire_mode == ACQUIRE_RECORD_LIMIT
                    and node not in self._soft_limit_logged):
                self._soft_limit_logged.add(node)
                log.warning(
                    "share consumer of group %s: share_acquire_mode='record_limit' needs"
                    " ShareFetch v2 (Apache Kafka 4.2+), and the broker %s (node %d) speaks"
                    " v%d: it takes max_poll_records (%d) as a soft limit and may hand out"
                    " whole record batches past it. groupkit still fetches from one leader at"
                    " a time; upgrade the broker for the strict limit", self.group_id,
                    conn.address, node, version, request.max_records)
            future = conn.send(request, version)
        except GroupkitError as exc:
            future = Future()
            future.set_exception(exc)
        future.add_done_callback(partial(self._answered, flight))

    def _refused(self, flight: _InFlight, error: GroupkitError) -> None:
        """A request that cannot be sent to its broker, whose acknowledgements fail with
        ``error`` (on the fetcher thread, in its round)."""
        self._in_flight.pop(flight.node, None)
        if flight.kind is _Kind.CLOSE:
            self._sessions.pop(flight.node, None)  # the broker times the session out
        log.warning("share consumer of group %s: %s", self.group_id, error)
        self._acks_answered(flight.node, flight.acks, error, flight.tickets, self.clock(),
                            token=flight.token, sent_at=flight.sent_at)

    def _unsupported(self, address: str, node: int, request: Request,
                     version: int | None) -> UnsupportedVersionError:
        name = type(request).__name__.removesuffix("Request")
        error: UnsupportedVersionError
        if version is None:
            error = FeatureUnsupportedError(
                f"the broker {address} (node {node}) does not offer {name} (API"
                f" {request.API_KEY}), which share groups need (Apache Kafka 4.1+ with share"
                " groups enabled: share.version=1); use a consumer group with this cluster",
                feature="share groups (KIP-932)", release="4.1")
        else:
            error = UnsupportedVersionError(
                f"the broker {address} (node {node}) speaks only {name} v0, the early access"
                " of share groups in Apache Kafka 4.0, which Kafka 4.1 replaced; groupkit"
                " speaks v1+ (Kafka 4.1+)")
        self._error = error
        return error

    def _answered(self, flight: _InFlight, future: Future[Any]) -> None:
        """On the thread that completed the request (a connection's reader, or the fetcher
        thread when it completed at once): an answer is handled here and now, the fetcher
        thread woken only if it has something to do about it; a failure goes to it."""
        try:
            response = future.result()
        except BaseException as exc:
            with self._lock:
                self._inbox.append(partial(self._failed, flight, exc))
            self._bell.ring()
            return
        try:
            with self._round:
                self._respond(flight, response, self.clock())
                due = self._round_due(flight.node)
        except Exception as exc:  # as on the fetcher thread: the consumer fails, not hangs
            self._broke(exc)
            return
        if due:
            self._bell.ring()

    def _round_due(self, node: int) -> bool:
        """Whether the fetcher thread has something to do after an answer from ``node``: the
        application waits for records (an empty answer is fetched again), a commit or the
        close waits, acknowledgements wait for that leader, a back-off or an error came, or a
        lock now runs out before the fetcher thread next wakes (under ``_round``)."""
        if self._retry_at or self._error is not None:
            return True
        with self._lock:
            if self._polls > self._served or self._closing or self._waiting:
                return True
            if any(self._leader(p) == node for p in self.ledger.pending_partitions()):
                return True
            expiry = self.ledger.next_expiry()
        return expiry is not None and expiry < self._sleep_until

    def _failed(self, flight: _InFlight, error: BaseException, now: float) -> None:
        node = flight.node
        self._in_flight.pop(node, None)
        session = self._sessions.get(node)
        if session is not None:
            session.failed()
            if flight.kind is _Kind.CLOSE:
                self._sessions.pop(node, None)
        self.cluster.observe(error)
        self._back_off(node, now)
        wrapped = error if isinstance(error, GroupkitError) else IllegalStateError(repr(error))
        if isinstance(error, UnsupportedVersionError):
            self._error = wrapped
        log.info("share fetcher of group %s: %s to node %d failed: %s", self.group_id,
                 flight.kind.value, node, error)
        self._acks_answered(node, flight.acks, wrapped, flight.tickets, now,
                            token=flight.token, sent_at=flight.sent_at)
        if flight.kind is _Kind.FETCH:
            self.ready()

    def _respond(self, flight: _InFlight, response: Any, now: float) -> None:
        node = flight.node
        self._in_flight.pop(node, None)
        session = self._sessions[node]
        code = response.error_code
        session.answered(code)
        if flight.kind is _Kind.CLOSE:
            self._sessions.pop(node, None)
        if code:
            error = error_for_code(code)(response.error_message or None)
            if code in _FATAL:
                self._error = error
            self._back_off(node, now)
            log.info("share fetcher of group %s: %s to node %d answered %s", self.group_id,
                     flight.kind.value, node, error)
            self._acks_answered(node, flight.acks, error, flight.tickets, now,
                                token=flight.token, sent_at=flight.sent_at)
            if flight.kind is _Kind.FETCH:
                self.ready()
            return
        self._failures.pop(node, None)
        self._retry_at.pop(node, None)
        lock_ms = response.acquisition_lock_timeout_ms
        if lock_ms > 0:
            self._lock_s, self._lock_ms = lock_ms / 1000, lock_ms
        errors: dict[SharePartition, GroupkitError] = {}
        delivered = False
        for topic in response.responses:
            for part in topic.partitions:
                p = flight.partitions.get((topic.topic_id, part.partition_index))
                if p is None:
                    continue
                ack_code = part.acknowledge_error_code if isinstance(
                    response, ShareFetchResponse) else part.error_code
                if ack_code:
                    errors[p] = error_for_code(ack_code)(
                        getattr(part, "acknowledge_error_message", None) or part.error_message
                        or None)
                if isinstance(response, ShareFetchResponse):
                    delivered |= self._records(p, part, now)
        self._acks_answered(node, flight.acks, None, flight.tickets, now, errors,
                            token=flight.token, sent_at=flight.sent_at, wake=False)
        if delivered or flight.acks:
            # One wakeup for the whole answer: a waiting poll takes the records, the callback
            # sees the acknowledgement results. An empty answer wakes nobody: this thread
            # fetches again by itself while the application wants records (``_polls``).
            self.ready()

    def _records(self, p: SharePartition, part: Any, now: float) -> bool:
        if part.error_code:
            if part.error_code in _REFRESH:
                self.cluster.request_refresh()
            log.info("share fetcher of group %s: %s-%d answered %s", self.group_id, p.topic,
                     p.partition, error_for_code(part.error_code).name)
            return False
        if not part.acquired_records:
            return False
        with self._lock:
            got = read_share_answer(p, part.records, part.acquired_records, self.ledger, now,
                                    self._lock_s, check_crcs=self.check_crcs)
            if got.batch.records or got.batch.error is not None:
                self._buffer.append(got.batch)
                self._served = self._polls
        if self.hooks and (got.batch.records or got.gaps):
            emit(self.hooks, ShareRecordsAcquired(
                self.group_id, p.topic, p.partition, len(got.batch.records),
                tuple(sorted(got.counts.items())), got.gaps))
        if got.duplicates:
            log.debug("share fetcher of group %s: %s-%d: %d offsets acquired again while held",
                      self.group_id, p.topic, p.partition, got.duplicates)
        return bool(got.batch.records) or got.batch.error is not None

    def _acks_answered(self, node: int, acks: dict[SharePartition, OffsetRuns],
                       error: GroupkitError | None, tickets: list[CommitTicket], now: float,
                       errors: dict[SharePartition, GroupkitError] | None = None, *,
                       token: int | None = None, sent_at: float | None = None,
                       wake: bool = True) -> None:
        """Report the answer (or ``error``) to every partition's acknowledgements; ``wake``
        False when the caller calls ``ready`` itself."""
        results = [AckResult(p, a, error or (errors or {}).get(p)) for p, a in acks.items()]
        with self._lock:
            if token is not None:
                self.ledger.answered(token, now + self._lock_s,
                                     [r.partition for r in results if r.error is not None])
            self._results.extend(results)
        for ticket in tickets:
            ticket._answered(node, results)
        if self.hooks:
            for r in results:
                counts = {_TYPE_NAMES.get(kind, str(kind)): n
                          for kind, n in r.acks.tally().items()}
                emit(self.hooks, ShareRecordsAcknowledged(
                    self.group_id, r.partition.topic, r.partition.partition,
                    tuple(sorted(counts.items())), "" if r.error is None else _name(r.error),
                    now - (sent_at if sent_at is not None else now)))
        if results and wake:
            self.ready()

    def _back_off(self, node: int, now: float) -> None:
        failures = self._failures[node] = self._failures.get(node, 0) + 1
        self._retry_at[node] = now + self._backoff.delay(failures)

    def _expire(self, now: float) -> None:
        with self._lock:
            expired = self.ledger.expire(now)
        for p, offsets in expired.items():
            log.info("share consumer of group %s: the acquisition lock of %d record(s) of"
                     " %s-%d ran out before they were acknowledged; the broker may deliver"
                     " them again", self.group_id, len(offsets), p.topic, p.partition)
            emit(self.hooks, ShareLocksExpired(self.group_id, p.topic, p.partition,
                                               len(offsets)))


def _renew_unsupported(address: str, node: int, version: int) -> FeatureUnsupportedError:
    return FeatureUnsupportedError(
        f"the broker {address} (node {node}) speaks ShareAcknowledge v{version}, and a RENEW"
        " acknowledgement needs v2 (Apache Kafka 4.2+); acknowledge the record in time"
        " instead (ACCEPT, RELEASE or REJECT), or upgrade the broker",
        feature="RENEW acknowledgements (KIP-1222)", release="4.2")


def _batches(acks: dict[SharePartition, OffsetRuns]) -> dict[SharePartition, list[Any]]:
    return {p: ack_batches(a) for p, a in acks.items() if a}


def _name(error: GroupkitError) -> str:
    return getattr(error, "name", None) or type(error).__name__

