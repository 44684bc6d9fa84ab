"""Committed offsets: OffsetFetch, ListOffsets resets, and OffsetCommit (sync and async).

Every call here runs on the application thread, except that an async commit's answer arrives
on a connection thread and waits in a queue until the application calls ``run_callbacks``.
A commit that the coordinator refuses for an old generation raises ``CommitFailedError``; one
whose partitions fail differently raises ``OffsetCommitError`` naming each partition.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, TimeoutError as FutureTimeout
from typing import Any

import attrs

from assignors import TopicPartition
from groupkit.config import ConsumerConfig
from groupkit.errors import (
    ApiKey,
    CommitFailedError,
    ErrorCode,
    GroupkitError,
    KafkaConnectionError,
    NoBrokersAvailable,
    NoOffsetForPartitionError,
    OffsetCommitError,
    RequestTimeoutError,
    error_for_code,
)
from groupkit.group import CommitFence
from groupkit.hooks import CommitDone, CommitFailed, Hook, emit
from groupkit.protocol.messages.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ListOffsetsResponse,
)
from groupkit.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from groupkit.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
)
from groupkit.runtime.cluster import Cluster
from groupkit.runtime.group_runner import GroupRunner
from groupkit.values import NO_LEADER_EPOCH, OffsetAndMetadata

log = logging.getLogger(__name__)

#: The connection purpose of OffsetFetch and OffsetCommit (a pool entry of their own, so a
#: commit never queues behind a fetch or a metadata request).
COMMIT_PURPOSE = "commit"
#: Codes that mean "this member's generation is over": the commit is refused for good.
_MEMBERSHIP_CODES = frozenset({
    ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.FENCED_INSTANCE_ID})
#: Codes after which the coordinator must be looked up again.
_COORDINATOR_CODES = frozenset({
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR})

#: The first OffsetFetch version that carries a member id and epoch (KIP-848).
_MEMBER_EPOCH_FETCH = 9
#: Codes by which a coordinator refuses the member id and epoch an OffsetFetch carried: the
#: member's machine decides what follows (``OffsetStore._member_refused``).
_MEMBER_FETCH_CODES = frozenset({ErrorCode.STALE_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})


class _MemberRefused(Exception):
    """An OffsetFetch carrying ``fence`` was answered ``code`` (one of _MEMBER_FETCH_CODES)."""

    def __init__(self, code: int, fence: CommitFence) -> None:
        super().__init__(code)
        self.code = code
        self.fence = fence


#: What a commit stores per partition: the next offset, or it with metadata.
CommitOffset = int | OffsetAndMetadata
CommitCallback = Callable[[Mapping[TopicPartition, CommitOffset], BaseException | None], None]


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = collections.defaultdict(list)
    for tp in sorted(partitions):
        out[tp.topic].append(tp.partition)
    return out


@attrs.define(eq=False)
class OffsetStore:
    """The group's committed offsets as one consumer reads and writes them."""

    cluster: Cluster
    config: ConsumerConfig
    #: The consumer's group runner once it has subscribed (None without group membership).
    group: Callable[[], GroupRunner | None] = lambda: None
    hooks: Sequence[Hook] = ()
    #: Called (on the thread that finished it) when an async commit's outcome waits for
    #: ``run_callbacks``, so a blocked ``poll`` runs its callback at once.
    wakeup: Callable[[], None] = lambda: None
    _done: collections.deque[tuple[CommitCallback | None, Mapping[TopicPartition, CommitOffset],
                                   BaseException | None]] = attrs.field(
        init=False, factory=collections.deque)
    _lock: threading.Condition = attrs.field(init=False, factory=threading.Condition)
    _async_in_flight: int = attrs.field(init=False, default=0)

    @property
    def group_id(self) -> str:
        if self.config.group_id is None:
            raise GroupkitError("offsets need a group_id: pass group_id=... to the Consumer")
        return self.config.group_id

    # --- reading -------------------------------------------------------------------------------

    def committed(self, partitions: Iterable[TopicPartition],
                  timeout: float) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The committed offset, metadata and leader epoch of each partition (None where the
        group has none)."""
        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        deadline = time.monotonic() + timeout
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._fetch_committed(wanted, deadline)
            except _MemberRefused as refused:
                self._member_refused(refused, attempt, deadline)
            except GroupkitError as exc:
                if not getattr(exc, "retriable", False) and not isinstance(
                        exc, KafkaConnectionError | RequestTimeoutError):
                    raise
                self.cluster.invalidate_coordinator(self.group_id)
                self._pause(attempt, deadline, exc, "OffsetFetch")

    def _member_fence(self, version: int) -> CommitFence | None:
        """The member id and epoch an OffsetFetch at ``version`` carries: those of a
        consumer-protocol member in its group, from v9 (Java's CommitRequestManager sends them
        whenever the member has an epoch; its request builder drops them below v9). None for a
        classic member, a consumer outside a group, or an older version."""
        runner = self.group()
        if runner is None or version < _MEMBER_EPOCH_FETCH:
            return None
        try:
            fence = runner.commit_fence()
        except CommitFailedError:
            return None
        return fence if fence.member_epoch else None

    def _member_refused(self, refused: _MemberRefused, attempt: int, deadline: float) -> None:
        """The coordinator refused the member epoch an OffsetFetch carried: the member's
        machine decides (Java's CommitRequestManager: STALE_MEMBER_EPOCH is retried, with the
        epoch the member holds by then, while it holds one; otherwise it, and
        UNKNOWN_MEMBER_ID, fail the fetch). Raises, or waits and returns for the retry."""
        runner = self.group()
        assert runner is not None  # a member epoch went out, so there is a member
        decision = runner.offset_fetch_error(refused.code, attempt,
                                             max(0.1, deadline - time.monotonic()))
        if decision.error is not None:
            raise decision.error
        delay = decision.retry_after or 0.0
        if time.monotonic() + delay >= deadline:
            raise RequestTimeoutError(
                f"OffsetFetch did not succeed within the timeout (last error:"
                f" {error_for_code(refused.code).name} for member {refused.fence.member_id}"
                f" at epoch {refused.fence.generation_id}); pass a longer timeout")
        time.sleep(delay)

    def _fetch_committed(self, wanted: list[TopicPartition],
                         deadline: float) -> dict[TopicPartition, OffsetAndMetadata | None]:
        # The coordinator lookup and the connect spend this call's deadline, as
        # ConsumerCoordinator.fetchCommittedOffsets(partitions, timer) does in the Java client.
        node = self.cluster.coordinator(self.group_id, deadline=deadline)
        version = self.cluster.require_version(node, ApiKey.OFFSET_FETCH, deadline)
        topics = _by_topic(wanted)
        fence = self._member_fence(version)
        if version >= 8:
            request = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(
                group_id=self.group_id,
                member_id=None if fence is None else fence.member_id,
                member_epoch=-1 if fence is None else fence.generation_id,
                topics=[OffsetFetchRequestTopics(name=t, partition_indexes=p)
                        for t, p in topics.items()])], require_stable=True)
        else:
            request = OffsetFetchRequest(
                group_id=self.group_id, require_stable=True,
                topics=[OffsetFetchRequestTopic(name=t, partition_indexes=p)
                        for t, p in topics.items()])
        response: OffsetFetchResponse = _wait(
            self.cluster.send(node, request, COMMIT_PURPOSE, version, deadline=deadline),
            deadline)
        entries: list[tuple[str, OffsetFetchResponsePartition | OffsetFetchResponsePartitions]]
        if version >= 8:
            group = next((g for g in response.groups if g.group_id == self.group_id), None)
            if group is None:
                raise KafkaConnectionError("OffsetFetch answered without the group asked for")
            if fence is not None and group.error_code in _MEMBER_FETCH_CODES:
                raise _MemberRefused(group.error_code, fence)
            _raise_code(group.error_code, "OffsetFetch")
            entries = [(t.name, p) for t in group.topics for p in t.partitions]
        else:
            _raise_code(response.error_code, "OffsetFetch")
            entries = [(t.name, p) for t in response.topics for p in t.partitions]
        result: dict[TopicPartition, OffsetAndMetadata | None] = dict.fromkeys(wanted)
        for topic, part in entries:
            _raise_code(part.error_code, "OffsetFetch")
            tp = TopicPartition(topic, part.partition_index)
            if tp in result:
                # v5+ carries the leader epoch, every version the metadata (Java's
                # ConsumerCoordinator builds its OffsetAndMetadata from the same three).
                result[tp] = OffsetAndMetadata.from_wire(
                    part.committed_offset, part.metadata, part.committed_leader_epoch)
        return result

    def list_offsets(self, partitions: Iterable[TopicPartition], strategy: str,
                     timeout: float) -> dict[TopicPartition, int]:
        """Each partition's earliest or latest offset (``strategy`` "earliest"/"latest")."""
        if strategy not in ("earliest", "latest"):
            raise NoOffsetForPartitionError(
                f"no committed offset for {sorted(partitions)} and auto_offset_reset is"
                f" {strategy!r}; seek() to an offset first or set auto_offset_reset to"
                " 'earliest' or 'latest'")
        spec = EARLIEST_TIMESTAMP if strategy == "earliest" else LATEST_TIMESTAMP
        pending = set(partitions)
        found: dict[TopicPartition, int] = {}
        deadline = time.monotonic() + timeout
        attempt = 0
        while pending:
            attempt += 1
            self.cluster.add_topics({tp.topic for tp in pending})
            try:
                metadata = self.cluster.maybe_refresh(deadline)
            except GroupkitError as exc:
                self._pause(attempt, deadline, exc, "ListOffsets")
                continue
            by_leader: dict[int, list[TopicPartition]] = collections.defaultdict(list)
            last: BaseException | None = None
            for tp in pending:
                leader = metadata.leader_for(tp.topic, tp.partition)
                if leader is None:
                    self.cluster.request_refresh()
                    last = KafkaConnectionError(f"no leader is known for {tp.topic}-{tp.partition}")
                else:
                    by_leader[leader].append(tp)
            futures: dict[int, tuple[int, Future[Any]]] = {}
            for node, tps in by_leader.items():
                try:
                    futures[node] = self._send_list_offsets(node, tps, spec, deadline)
                except GroupkitError as exc:
                    last = exc
            for version, future in futures.values():
                try:
                    response: ListOffsetsResponse = _wait(future, deadline)
                except GroupkitError as exc:
                    last = exc
                    continue
                for topic in response.topics:
                    for part in topic.partitions:
                        tp = TopicPartition(topic.name, part.partition_index)
                        if part.error_code:
                            self.cluster.observe_code(part.error_code)
                            last = error_for_code(part.error_code)()
                            if not last.retriable:
                                raise last
                            continue
                        offset = part.offset if version >= 1 else (
                            part.old_style_offsets[0] if part.old_style_offsets else -1)
                        if tp in pending and offset >= 0:
                            found[tp] = offset
                            pending.discard(tp)
            if pending:
                self._pause(attempt, deadline, last, "ListOffsets")
        return found

    def _send_list_offsets(self, node: int, tps: list[TopicPartition], spec: int,
                           deadline: float) -> tuple[int, Future[Any]]:
        version = self.cluster.api_version(node, ApiKey.LIST_OFFSETS, deadline) or 0
        committed = 1 if self.config.isolation_level == "read_committed" else 0
        request = ListOffsetsRequest(replica_id=-1, isolation_level=committed, topics=[
            ListOffsetsRequestTopic(name=t, partitions=[
                ListOffsetsRequestPartition(partition_index=p, timestamp=spec) for p in ps])
            for t, ps in _by_topic(tps).items()])
        return version, self.cluster.send(node, request, version=version, deadline=deadline)

    # --- committing ----------------------------------------------------------------------------

    def commit(self, offsets: Mapping[TopicPartition, CommitOffset], timeout: float) -> None:
        """Store ``offsets`` (the next offset to read per partition) and wait for the answer."""
        if not offsets:
            return
        try:
            self._commit(offsets, timeout)
        except GroupkitError as exc:
            emit(self.hooks, CommitFailed(self.config.group_id or "", len(offsets), str(exc),
                                          type(exc).__name__))
            raise

    def _commit(self, offsets: Mapping[TopicPartition, CommitOffset], timeout: float) -> None:
        pending = dict(offsets)
        deadline = time.monotonic() + timeout
        attempt = 0
        committed: set[TopicPartition] = set()
        while True:
            attempt += 1
            fence = self._fence()
            started = time.monotonic()
            try:
                response = _wait(self._send_commit(pending, fence, deadline), deadline)
            except (KafkaConnectionError, RequestTimeoutError, NoBrokersAvailable) as exc:
                self.cluster.invalidate_coordinator(self.group_id)
                self._pause(attempt, deadline, exc, "OffsetCommit")
                continue
            errors = _commit_errors(response, pending)
            committed |= set(pending) - set(errors)
            if not errors:
                emit(self.hooks, CommitDone(self.group_id, len(offsets),
                                            time.monotonic() - started, _triples(offsets)))
                return
            retry_after = self._judge(errors, fence, attempt, deadline)
            pending = {tp: pending[tp] for tp in errors}
            if retry_after is None:
                failure = OffsetCommitError(
                    f"{len(errors)} of {len(offsets)} partitions were not committed: "
                    + "; ".join(f"{tp.topic}-{tp.partition}: {error_for_code(code).name}"
                                for tp, code in sorted(errors.items())[:10]),
                    {tp: error_for_code(code)() for tp, code in errors.items()}, committed)
                raise failure
            self._pause_for(retry_after, deadline, "OffsetCommit")

    def commit_async(self, offsets: Mapping[TopicPartition, CommitOffset],
                     callback: CommitCallback | None, deadline: float | None = None) -> None:
        """Send a commit without waiting; ``callback(offsets, error)`` runs in ``run_callbacks``.

        An async commit is not retried (a later commit supersedes it), as in the Java client.
        Finding the coordinator (when not known) and connecting may block until ``deadline``
        (e.g. the end of the poll that commits), never longer.
        """
        offsets = dict(offsets)
        if not offsets:
            if callback is not None:
                self._finish(callback, offsets, None)
            return
        try:
            fence = self._fence()
            future = self._send_commit(offsets, fence, deadline)
        except GroupkitError as exc:
            emit(self.hooks, CommitFailed(self.config.group_id or "", len(offsets), str(exc),
                                          type(exc).__name__))
            self._finish(callback, offsets, exc)
            return
        started = time.monotonic()
        with self._lock:
            self._async_in_flight += 1

        def done(f: Future[Any]) -> None:
            error = f.exception()
            if error is None:
                codes = _commit_errors(f.result(), offsets)
                if codes:
                    tp, code = min(codes.items())
                    error = (CommitFailedError(
                        f"the async commit was refused ({error_for_code(code).name}); the group"
                        " has rebalanced") if code in _MEMBERSHIP_CODES
                        else OffsetCommitError(
                            f"{len(codes)} partitions were not committed",
                            {t: error_for_code(c)() for t, c in codes.items()},
                            set(offsets) - set(codes)))
                    if code in _COORDINATOR_CODES:
                        self.cluster.invalidate_coordinator(self.group_id)
            elif isinstance(error, KafkaConnectionError | RequestTimeoutError):
                self.cluster.invalidate_coordinator(self.group_id)
            if error is None:
                emit(self.hooks, CommitDone(self.group_id, len(offsets),
                                            time.monotonic() - started, _triples(offsets)))
            else:
                emit(self.hooks, CommitFailed(self.group_id, len(offsets), str(error),
                                              type(error).__name__))
            self._finish(callback, offsets, error)
            with self._lock:
                self._async_in_flight -= 1
                self._lock.notify_all()

        future.add_done_callback(done)

    def run_callbacks(self) -> None:
        """Run the callbacks of finished async commits (on the calling, application thread)."""
        if not self._done:
            return  # every poll asks: the common case takes no lock (one finishing meanwhile
            # is run at the next poll, as if it had finished just after a locked look)
        while True:
            with self._lock:
                if not self._done:
                    return
                callback, offsets, error = self._done.popleft()
            if error is not None:
                # As Java's auto-commit: a retriable failure (an outage the connection layer
                # already reports) goes to DEBUG, since the next commit supersedes this one.
                retriable = isinstance(error, KafkaConnectionError | RequestTimeoutError) \
                    or getattr(error, "retriable", False)
                log.log(logging.DEBUG if retriable else logging.WARNING,
                        "async commit of %d partitions failed: %s", len(offsets), error)
            if callback is not None:
                callback(offsets, error)

    def _finish(self, callback: CommitCallback | None, offsets: Mapping[TopicPartition, CommitOffset],
                error: BaseException | None) -> None:
        with self._lock:
            self._done.append((callback, offsets, error))
        self.wakeup()

    def _fence(self) -> CommitFence:
        runner = self.group()
        if runner is None:
            return CommitFence(-1, "", None)
        return runner.commit_fence()

    def _send_commit(self, offsets: Mapping[TopicPartition, CommitOffset], fence: CommitFence,
                     deadline: float | None = None) -> Future[Any]:
        # The coordinator lookup shares the commit's deadline (Java: commitOffsetsSync(timer)
        # runs ensureCoordinatorReady(timer) with the same timer).
        node = self.cluster.coordinator(self.group_id, deadline=deadline)
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = collections.defaultdict(list)
        for tp, offset in sorted(offsets.items()):
            if isinstance(offset, OffsetAndMetadata):
                part = OffsetCommitRequestPartition(
                    partition_index=tp.partition, committed_offset=offset.offset,
                    committed_leader_epoch=offset.wire_leader_epoch,
                    committed_metadata=offset.metadata)
            else:
                part = OffsetCommitRequestPartition(
                    partition_index=tp.partition, committed_offset=offset,
                    committed_leader_epoch=NO_LEADER_EPOCH, committed_metadata="")
            by_topic[tp.topic].append(part)
        request = OffsetCommitRequest(
            group_id=self.group_id, generation_id_or_member_epoch=fence.generation_id,
            member_id=fence.member_id, group_instance_id=fence.group_instance_id,
            topics=[OffsetCommitRequestTopic(name=t, partitions=p) for t, p in by_topic.items()])
        return self.cluster.send(node, request, COMMIT_PURPOSE, deadline=deadline)

    def _judge(self, errors: Mapping[TopicPartition, int], fence: CommitFence, attempt: int,
               deadline: float) -> float | None:
        """Seconds to wait before retrying the failed partitions, or None to give up.

        Raises CommitFailedError when the generation is over.
        """
        retry: float | None = 0.0
        for code in sorted(set(errors.values())):
            if code in _COORDINATOR_CODES:
                self.cluster.invalidate_coordinator(self.group_id)
            runner = self.group()
            if runner is not None:
                decision = runner.commit_error(
                    fence, code, attempt, max(0.1, deadline - time.monotonic()))
                if decision.error is not None:
                    if isinstance(decision.error, CommitFailedError):
                        raise decision.error
                    return None
                retry = max(retry or 0.0, decision.retry_after or 0.0)
            elif code in _MEMBERSHIP_CODES:
                raise CommitFailedError(
                    f"the commit was refused ({error_for_code(code).name}); the group has"
                    " rebalanced")
            elif error_for_code(code).retriable:
                retry = max(retry or 0.0, self.config.retry_backoff().delay(attempt))
            else:
                return None
        return retry

    def _pause(self, attempt: int, deadline: float, error: BaseException | None,
               api: str) -> None:
        delay = self.config.retry_backoff().delay(attempt)
        if time.monotonic() + delay >= deadline:
            raise RequestTimeoutError(
                f"{api} did not succeed within the timeout (last error: {error}); check the"
                " brokers, or pass a longer timeout")
        time.sleep(delay)

    def _pause_for(self, delay: float, deadline: float, api: str) -> None:
        if time.monotonic() + delay >= deadline:
            raise RequestTimeoutError(f"{api} did not succeed within the timeout")
        time.sleep(delay)

    def wait_async(self, timeout: float) -> None:
        """Wait (bounded) until every async commit has been answered."""
        with self._lock:
            self._lock.wait_for(lambda: not self._async_in_flight, timeout)


def _commit_errors(response: OffsetCommitResponse,
                   offsets: Mapping[TopicPartition, CommitOffset]) -> dict[TopicPartition, int]:
    errors: dict[TopicPartition, int] = {}
    answered: set[TopicPartition] = set()
    for topic in response.topics:
        for part in topic.partitions:
            tp = TopicPartition(topic.name, part.partition_index)
            answered.add(tp)
            if part.error_code:
                errors[tp] = part.error_code
    for tp in offsets:
        if tp not in answered:
            errors[tp] = ErrorCode.UNKNOWN_SERVER_ERROR
    return errors


def _triples(offsets: Mapping[TopicPartition, CommitOffset]) -> tuple[tuple[str, int, int], ...]:
    return tuple((tp.topic, tp.partition, _offset(o)) for tp, o in offsets.items())


def _offset(value: CommitOffset) -> int:
    return value.offset if isinstance(value, OffsetAndMetadata) else value


def _raise_code(code: int, api: str) -> None:
    if code:
        raise error_for_code(code)(f"{api} failed")


def _wait(future: Future[Any], deadline: float) -> Any:
    try:
        return future.result(max(0.0, deadline - time.monotonic()))
    except FutureTimeout:
        raise RequestTimeoutError("no answer from the broker within the timeout") from None
