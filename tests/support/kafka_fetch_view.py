"""read_committed Fetch answers as Apache Kafka's broker fills them, on the local broker.

Neither test broker lists aborted transactions in a read_committed Fetch answer (Tansu writes
the ABORT markers and holds readers at the last stable offset, but its ``aborted_transactions``
is always empty; the mock cluster's too, see docs/test-brokers.md), so no reader can filter
aborted records there. ``AbortedTransactionIndex.rewrite`` is a RecordingProxy rewriter that
adds the list Kafka's broker sends, from the markers in the log: for each partition of a
read_committed answer, every aborted transaction (producer id, first offset) whose ABORT marker
is at or past the fetch offset and whose first offset is below the end of the answer's records
(Kafka's ``LocalLog.collectAbortedTransactions`` over its transaction index). Everything else in
the answer is the broker's. A real transactional producer writes the records and markers; real
readers (groupkit's and the peers') then filter with the list they would get from Kafka.

Records of a transaction in an answer lie below the last stable offset, so the transaction had
ended when the answer was made: reading the log afterwards finds its marker.
"""

from __future__ import annotations

import threading
import uuid

import attrs

from groupkit.config import ClientConfig
from groupkit.protocol.headers import (
    decode_request_frame,
    decode_response_frame,
    encode_response_frame,
)
from groupkit.protocol.messages.fetch import (
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponse,
    FetchResponseAbortedTransaction,
)
from groupkit.protocol.records import CONTROL_ABORT, control_type, decode_batches
from groupkit.runtime.cluster import Cluster

_READ_COMMITTED = 1
_WAIT = 20.0

#: An aborted transaction: producer id, first offset, offset of its ABORT marker.
Aborted = tuple[int, int, int]


def aborted_in_log(batches: list) -> list[Aborted]:
    """The aborted transactions of one partition's log (its batches from offset 0, in order),
    as Kafka's transaction index holds them."""
    open_at: dict[int, int] = {}
    out: list[Aborted] = []
    for batch in batches:
        if not batch.is_transactional:
            continue
        pid = batch.producer_id
        if batch.is_control:
            first = open_at.pop(pid, None)
            if first is not None and control_type(batch.records[0]) == CONTROL_ABORT:
                out.append((pid, first, batch.base_offset))
        else:
            open_at.setdefault(pid, batch.base_offset)
    return out


def kafka_aborted_list(aborted: list[Aborted], fetch_offset: int,
                       upper: int) -> list[tuple[int, int]]:
    """What Kafka lists for an answer from ``fetch_offset`` whose records end before
    ``upper``: the transactions ending at or past the fetch offset that began below ``upper``."""
    return [(pid, first) for pid, first, last in aborted
            if last >= fetch_offset and first < upper]


@attrs.define
class AbortedTransactionIndex:
    """Reads the broker's log (at ``bootstrap``, the broker itself, not the proxy) to fill
    read_committed Fetch answers passing a RecordingProxy (``rewriters={1: index.rewrite}``)."""

    bootstrap: str
    _cluster: Cluster | None = attrs.field(default=None, init=False)
    #: Per proxy connection, the last fetch offset asked for each (topic or id, partition):
    #: an incremental fetch session leaves a partition out while its offset is unchanged.
    _asked: dict[int, dict[tuple[object, int], int]] = attrs.field(factory=dict, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    #: How many answers were given a non-empty list (a test can check the rewrite mattered).
    filled: int = attrs.field(default=0, init=False)

    def rewrite(self, connection: int, version: int, request_frame: bytes,
                response_frame: bytes) -> bytes:
        _, request = decode_request_frame(request_frame)
        assert isinstance(request, FetchRequest)
        with self._lock:
            asked = self._asked.setdefault(connection, {})
            for t in request.topics:
                for p in t.partitions:
                    asked[(t.topic_id if version >= 13 else t.topic, p.partition)] = \
                        p.fetch_offset
            if version < 4 or request.isolation_level != _READ_COMMITTED:
                return response_frame
            correlation_id, response = decode_response_frame(response_frame, FetchResponse,
                                                             version)
            topics = []
            for t in response.responses:
                key = t.topic_id if version >= 13 else t.topic
                name = self._name(t.topic_id) if version >= 13 else t.topic
                parts = []
                for p in t.partitions:
                    batches = decode_batches(p.records or b"")
                    offset = asked.get((key, p.partition_index))
                    if batches and offset is not None and not p.error_code:
                        listed = kafka_aborted_list(
                            aborted_in_log(self._log(name, p.partition_index)), offset,
                            batches[-1].last_offset + 1)
                        self.filled += bool(listed)
                        p = attrs.evolve(p, aborted_transactions=[
                            FetchResponseAbortedTransaction(producer_id=pid, first_offset=first)
                            for pid, first in listed])
                    parts.append(p)
                topics.append(attrs.evolve(t, partitions=parts))
            return encode_response_frame(attrs.evolve(response, responses=topics), version,
                                         correlation_id)[4:]

    def close(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def _broker(self) -> Cluster:
        if self._cluster is None:
            self._cluster = Cluster(ClientConfig(bootstrap_servers=self.bootstrap))
        return self._cluster

    def _name(self, topic_id: uuid.UUID) -> str:
        cluster = self._broker()
        for name, topic in cluster.refresh(all_topics=True).topics.items():
            if topic.topic_id == topic_id:
                return name
        raise KeyError(f"no topic has id {topic_id}")

    def _log(self, topic: str, partition: int) -> list:
        """Every batch of the partition, read uncommitted from offset 0."""
        cluster = self._broker()
        topic_id = cluster.refresh([topic]).topics[topic].topic_id
        batches: list = []
        offset = 0
        while True:
            request = FetchRequest(max_wait_ms=100, min_bytes=1, topics=[FetchRequestTopic(
                topic=topic, topic_id=topic_id, partitions=[FetchRequestPartition(
                    partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20)])])
            answer = cluster.send_to_leader(topic, partition, request).result(_WAIT)
            part = answer.responses[0].partitions[0]
            more = decode_batches(part.records or b"")
            if not more:
                return batches
            batches.extend(b for b in more if b.last_offset >= offset)
            offset = more[-1].last_offset + 1
            if offset >= part.high_watermark:
                return batches
