"""The producer's calls to the transaction coordinator (and the group coordinator's
TxnOffsetCommit), each bounded by the caller's deadline.

InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn are sent here,
blocking the calling thread (the application's, or the sender's for AddPartitionsToTxn), and
their answers go through the sans-IO ``TransactionManager`` (groupkit/txn), whose error table
says whether to retry, look the coordinator up again, or stop with an abortable or fatal
error. The manager is shared with the producer's sender, so it is read and changed under the
producer's lock; no lock is held while waiting for an answer.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from groupkit.config import ProducerConfig
from groupkit.errors import (
    ApiKey,
    CommitFailedError,
    ErrorCode,
    GroupkitError,
    KafkaConnectionError,
    RequestTimeoutError,
    error_for_code,
)
from groupkit.protocol.messages.find_coordinator import KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION
from groupkit.protocol.messages.init_producer_id import InitProducerIdRequest
from groupkit.protocol.schema import Request
from groupkit.runtime.cluster import Cluster
from groupkit.txn.error_actions import TxnAction
from groupkit.txn.manager import TransactionManager
from groupkit.txn.sequences import ProducerIdAndEpoch
from groupkit.values import ConsumerGroupMetadata, OffsetAndMetadata

log = logging.getLogger("groupkit.producer")

_PURPOSE = "transactions"
#: InitProducerId v3 (KIP-360) carries the current id and epoch: the epoch bump.
_EPOCH_BUMP_VERSION = 3
#: TxnOffsetCommit v3 (KIP-447) carries the group generation and member.
_FENCED_OFFSETS_VERSION = 3
#: An idempotent producer's InitProducerId: no transaction, so no timeout (Java sends MAX).
_NO_TRANSACTION_TIMEOUT = 2**31 - 1
_RETRY_CODES = frozenset({TxnAction.RETRY, TxnAction.FIND_COORDINATOR})


class TransactionClient:
    """The coordinator calls of one producer; see the module docstring."""

    def __init__(self, cluster: Cluster, config: ProducerConfig, manager: TransactionManager,
                 lock: threading.Lock) -> None:
        self._cluster = cluster
        self._config = config
        self.manager = manager
        self._lock = lock
        self._txn_id = config.transactional_id

    # --- one call, retried as the error table says -----------------------------------------

    def _call(self, what: str, key: str | None, key_type: int,
              build: Callable[[int], Request], codes: Callable[[Any], list[tuple[int, str | None]]],
              deadline: float, api_key: int, max_version: int | None = None) -> Any:
        """Send ``build(version)`` to the coordinator of ``key`` (any broker when None) until
        every code ``codes`` reads from its answer is 0, or the table says stop, or ``deadline``
        passes (RequestTimeoutError; the state is unchanged, so the call may be made again)."""
        backoff = None  # made on the first retry: most calls need none
        attempt = 0
        last: BaseException | None = None
        while True:
            refused_with = 0  # this attempt's error code, when the coordinator answered one
            left = deadline - time.monotonic()
            if left <= 0:
                raise RequestTimeoutError(
                    f"{what} did not complete within its timeout (last: {last}); call it again"
                    " to keep waiting, or raise the timeout") from last
            try:
                if key is None:
                    node = self._cluster.least_loaded_node(deadline)
                else:
                    node = self._cluster.coordinator(key, key_type, deadline)
                version = self._cluster.api_version(node, api_key, deadline)
                if version is not None and max_version is not None:
                    version = min(version, max_version)
                if version is None:
                    # FeatureUnsupportedError naming the release that has the API (0.11,
                    # KIP-98), or why the versions do not meet.
                    raise self._cluster.connection(node).missing(api_key)
                request = build(version)
                # api_version connected within the deadline; the answer is waited for within it.
                response = self._cluster.answer(
                    self._cluster.send(node, request, _PURPOSE, version=version),
                    deadline, what)
            except (KafkaConnectionError, RequestTimeoutError) as exc:
                last = exc
                if key is not None:
                    self._cluster.invalidate_coordinator(key, key_type)
            else:
                failures = [(c, m) for c, m in codes(response) if c]
                if not failures:
                    return response
                code, message = failures[0]
                with self._lock:
                    action = self.manager.apply(api_key, code, message)
                refused_with = code
                last = error_for_code(code)(message)
                if action not in _RETRY_CODES:
                    log.warning("%s failed: %s", what, last)
                    if action is TxnAction.COMMIT_FAILED:
                        raise CommitFailedError(
                            f"{what}: the group fenced this member ({last}); the transaction"
                            " must be aborted and the records processed again by the member"
                            " that owns them now") from last
                    raise self._state_error(what)
                if action is TxnAction.FIND_COORDINATOR and key is not None:
                    self._cluster.invalidate_coordinator(key, key_type)
            attempt += 1
            if backoff is None:
                backoff = self._config.retry_backoff()
            delay = backoff.delay(attempt)
            if refused_with:
                with self._lock:
                    delay = self.manager.retry_delay(api_key, refused_with, delay)
            time.sleep(max(0.0, min(delay, deadline - time.monotonic())))

    def _state_error(self, what: str) -> GroupkitError:
        with self._lock:
            manager = self.manager
            if manager.state.name == "FATAL_ERROR":
                return manager.fatal_error()
            try:
                manager.raise_if_error(what)
            except GroupkitError as exc:
                return exc
        return GroupkitError(f"{what} failed")

    # --- the calls -----------------------------------------------------------------------------

    def init_producer_id(self, deadline: float) -> None:
        """InitProducerId: a new producer id, or (after an abort that must bump) the next epoch
        of the current one (v3+, KIP-360). For a transactional id this also fences its earlier
        producers and aborts their open transaction."""
        with self._lock:
            current = self.manager.producer
            bump = self.manager.epoch_bump_required and current.valid
        transactional = self._txn_id is not None
        timeout = self._config.transaction_timeout_ms if transactional \
            else _NO_TRANSACTION_TIMEOUT

        def build(version: int) -> Request:
            with self._lock:
                self.manager.supports_epoch_bump = version >= _EPOCH_BUMP_VERSION
            if bump and version >= _EPOCH_BUMP_VERSION:
                return InitProducerIdRequest(
                    transactional_id=self._txn_id, transaction_timeout_ms=timeout,
                    producer_id=current.producer_id, producer_epoch=current.epoch)
            return InitProducerIdRequest(transactional_id=self._txn_id,
                                         transaction_timeout_ms=timeout)

        response = self._call(
            "InitProducerId", self._txn_id, KEY_TYPE_TRANSACTION, build,
            lambda r: [(r.error_code, None)], deadline, ApiKey.INIT_PRODUCER_ID)
        with self._lock:
            self.manager.initialized(ProducerIdAndEpoch(response.producer_id,
                                                        response.producer_epoch))
        log.info("producer %s has producer id %d, epoch %d", self._txn_id or "(idempotent)",
                 response.producer_id, response.producer_epoch)

    def add_partitions(self, deadline: float) -> None:
        """AddPartitionsToTxn for the partitions the open transaction sent to first (v0-v3,
        the client's form; v4+ is for brokers); nothing when none wait or one is in flight."""
        # The transaction APIs' schemas load when a transaction first needs one: an idempotent
        # producer (the default) never sends them.
        from groupkit.protocol.messages.txn import (
            CLIENT_MAX_ADD_PARTITIONS_VERSION,
            AddPartitionsToTxnRequest,
            AddPartitionsToTxnTopic,
        )

        assert self._txn_id is not None
        with self._lock:
            pending = self.manager.take_pending()
            producer = self.manager.producer
        if not pending:
            return
        topics: dict[str, list[int]] = {}
        for topic, partition in sorted(pending):
            topics.setdefault(topic, []).append(partition)
        txn_id = self._txn_id

        def build(version: int) -> Request:
            return AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=txn_id,
                v3_and_below_producer_id=producer.producer_id,
                v3_and_below_producer_epoch=producer.epoch,
                v3_and_below_topics=[AddPartitionsToTxnTopic(name=t, partitions=p)
                                     for t, p in topics.items()])

        def codes(response: Any) -> list[tuple[int, str | None]]:
            found: list[tuple[int, str | None]] = [
                (p.partition_error_code, f"{t.name}-{p.partition_index}")
                     for t in response.results_by_topic_v3_and_below
                     for p in t.results_by_partition]
            # Java reports the real error, not OPERATION_NOT_ATTEMPTED, when there is one.
            found.sort(key=lambda item: item[0] == ErrorCode.OPERATION_NOT_ATTEMPTED)
            return found

        try:
            self._call("AddPartitionsToTxn", txn_id, KEY_TYPE_TRANSACTION, build, codes,
                       deadline, ApiKey.ADD_PARTITIONS_TO_TXN, CLIENT_MAX_ADD_PARTITIONS_VERSION)
        except BaseException:
            with self._lock:
                self.manager.partitions_not_added(pending)
            raise
        with self._lock:
            self.manager.partitions_added(pending)

    def send_offsets(self, offsets: Mapping[Any, OffsetAndMetadata | int],
                     group: ConsumerGroupMetadata, deadline: float) -> None:
        """AddOffsetsToTxn to the transaction coordinator, then TxnOffsetCommit (v3: fenced by
        the group generation and member, KIP-447) to the group coordinator."""
        from groupkit.protocol.messages.txn import (
            AddOffsetsToTxnRequest,
            TxnOffsetCommitRequest,
            TxnOffsetCommitRequestPartition,
            TxnOffsetCommitRequestTopic,
        )

        assert self._txn_id is not None
        txn_id = self._txn_id
        with self._lock:
            producer = self.manager.producer
        self._call("AddOffsetsToTxn", txn_id, KEY_TYPE_TRANSACTION,
                   lambda v: AddOffsetsToTxnRequest(
                       transactional_id=txn_id, producer_id=producer.producer_id,
                       producer_epoch=producer.epoch, group_id=group.group_id),
                   lambda r: [(r.error_code, None)], deadline, ApiKey.ADD_OFFSETS_TO_TXN)
        with self._lock:
            self.manager.offsets_added()
        topics: dict[str, list[TxnOffsetCommitRequestPartition]] = {}
        for tp, value in sorted(offsets.items(), key=lambda item: (item[0][0], item[0][1])):
            committed = value if isinstance(value, OffsetAndMetadata) \
                else OffsetAndMetadata(value)
            topics.setdefault(tp[0], []).append(TxnOffsetCommitRequestPartition(
                partition_index=tp[1], committed_offset=committed.offset,
                committed_leader_epoch=committed.wire_leader_epoch,
                committed_metadata=committed.metadata))

        def build(version: int) -> Request:
            fenced = version >= _FENCED_OFFSETS_VERSION
            if not fenced and group.generation_id >= 0:
                log.warning("TxnOffsetCommit v%d cannot carry the group generation (v3+, Kafka"
                            " 2.5): a fenced member's offsets are not refused", version)
            return TxnOffsetCommitRequest(
                transactional_id=txn_id, group_id=group.group_id,
                producer_id=producer.producer_id, producer_epoch=producer.epoch,
                generation_id=group.generation_id if fenced else -1,
                member_id=group.member_id if fenced else "",
                group_instance_id=group.group_instance_id if fenced else None,
                topics=[TxnOffsetCommitRequestTopic(name=t, partitions=p)
                        for t, p in topics.items()])

        self._call("TxnOffsetCommit", group.group_id, KEY_TYPE_GROUP, build,
                   lambda r: [(p.error_code, f"{t.name}-{p.partition_index}")
                              for t in r.topics for p in t.partitions],
                   deadline, ApiKey.TXN_OFFSET_COMMIT)

    def end_txn(self, commit: bool, deadline: float) -> None:
        """EndTxn: the coordinator writes the commit or abort markers."""
        from groupkit.protocol.messages.txn import EndTxnRequest

        assert self._txn_id is not None
        txn_id = self._txn_id
        with self._lock:
            producer = self.manager.producer
        self._call("EndTxn", txn_id, KEY_TYPE_TRANSACTION,
                   lambda v: EndTxnRequest(transactional_id=txn_id,
                                           producer_id=producer.producer_id,
                                           producer_epoch=producer.epoch, committed=commit),
                   lambda r: [(r.error_code, None)], deadline, ApiKey.END_TXN)
