"""One share session: a member's fetch state on one broker (KIP-932), sans-IO.

After the Java client's ``ShareSessionHandler`` and ``ShareRequestMetadata``. A member holds a
session with every broker that leads partitions it fetches. ShareFetch with epoch 0 opens it
and names every partition; each later request (ShareFetch or ShareAcknowledge, one at a time)
carries the next epoch, names only the partitions added since and forgets those removed, and
piggy-backs the acknowledgements of records fetched from that broker. A session the broker
lost (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, or a request that failed in
transit) starts again at epoch 0 with the full partition list; the broker released the records
the old one held. Epoch -1 closes it: its acknowledgements still count, nothing is fetched.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

import attrs

from groupkit.errors import ErrorCode, IllegalStateError
from groupkit.protocol.messages.share_fetch import (
    ACK_RENEW,
    ACQUIRE_BATCH_OPTIMIZED,
    FINAL_SHARE_SESSION_EPOCH,
    INITIAL_SHARE_SESSION_EPOCH,
    AcknowledgementBatch,
    ShareAcknowledgeRequest,
    ShareAcknowledgeRequestPartition,
    ShareAcknowledgeRequestTopic,
    ShareFetchRequest,
    ShareFetchRequestPartition,
    ShareFetchRequestTopic,
    ShareForgottenTopic,
)

_MAX_EPOCH = 0x7FFFFFFF
#: Answers that mean the broker no longer has this session: open a new one.
SESSION_LOST = frozenset({ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH})


@attrs.frozen(order=True, cache_hash=True)
class SharePartition:
    """A partition as share requests name it: topic name (for the application) and id (for the
    wire)."""

    topic: str
    partition: int
    topic_id: uuid.UUID = attrs.field(order=False)


@attrs.frozen
class FetchSettings:
    """What every ShareFetch asks for (the consumer's fetch settings)."""

    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 52428800
    max_records: int = 500
    batch_size: int = 500
    partition_max_bytes: int = 1048576
    acquire_mode: int = ACQUIRE_BATCH_OPTIMIZED


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: -1 stays -1, the largest wraps to 1 (Java's nextEpoch)."""
    if epoch < 0:
        return FINAL_SHARE_SESSION_EPOCH
    return 1 if epoch == _MAX_EPOCH else epoch + 1


Acks = Mapping[SharePartition, list[AcknowledgementBatch]]


@attrs.define
class ShareSession:
    """The member's session with broker ``node_id``. One request at a time: build it, send it,
    report the outcome with ``answered`` or ``failed`` before building the next."""

    group_id: str
    member_id: str
    node_id: int
    epoch: int = INITIAL_SHARE_SESSION_EPOCH
    #: The partitions the broker holds in this session (as last told).
    _partitions: dict[tuple[str, int], SharePartition] = attrs.field(factory=dict)

    @property
    def partitions(self) -> frozenset[SharePartition]:
        return frozenset(self._partitions.values())

    @property
    def is_new(self) -> bool:
        """Whether the next request opens the session (epoch 0)."""
        return self.epoch == INITIAL_SHARE_SESSION_EPOCH

    @property
    def closing(self) -> bool:
        return self.epoch == FINAL_SHARE_SESSION_EPOCH

    def fetch(self, wanted: Iterable[SharePartition], acks: Acks,
              settings: FetchSettings) -> ShareFetchRequest:
        """The ShareFetch for ``wanted`` partitions (every partition of this broker the member
        fetches now) with ``acks`` piggy-backed (partitions not wanted may carry acks too)."""
        if self.closing:
            raise IllegalStateError("this share session is closing; open no fetch on it")
        want = {(p.topic, p.partition): p for p in wanted}
        added: list[SharePartition] = []
        forgotten: list[SharePartition] = []
        if self.is_new:
            self._partitions = dict(want)
            added = list(want.values())
        else:
            for key, old in list(self._partitions.items()):
                new = want.get(key)
                if new is None:
                    del self._partitions[key]
                    forgotten.append(old)
                elif new.topic_id != old.topic_id:  # the topic was deleted and made again
                    self._partitions[key] = new
                    forgotten.append(old)
                    added.append(new)
            for key, new in want.items():
                if key not in self._partitions:
                    self._partitions[key] = new
                    added.append(new)
        topics: dict[uuid.UUID, dict[int, ShareFetchRequestPartition]] = {}
        for p in added:
            topics.setdefault(p.topic_id, {})[p.partition] = ShareFetchRequestPartition(
                partition_index=p.partition, partition_max_bytes=settings.partition_max_bytes)
        for p, batches in acks.items():
            if not batches:
                continue
            parts = topics.setdefault(p.topic_id, {})
            entry = parts.get(p.partition)
            parts[p.partition] = attrs.evolve(
                entry, acknowledgement_batches=batches) if entry is not None else \
                ShareFetchRequestPartition(
                    partition_index=p.partition, acknowledgement_batches=batches,
                    # v0 only: 0 asks for no records (an acknowledgement for a partition the
                    # member no longer fetches); v1+ do not carry it.
                    partition_max_bytes=settings.partition_max_bytes
                    if (p.topic, p.partition) in want else 0)
        forgotten_by_topic: dict[uuid.UUID, list[int]] = {}
        for p in forgotten:
            forgotten_by_topic.setdefault(p.topic_id, []).append(p.partition)
        return ShareFetchRequest(
            group_id=self.group_id, member_id=self.member_id,
            share_session_epoch=self.epoch, max_wait_ms=settings.max_wait_ms,
            min_bytes=settings.min_bytes, max_bytes=settings.max_bytes,
            max_records=settings.max_records, batch_size=settings.batch_size,
            share_acquire_mode=settings.acquire_mode,
            topics=[ShareFetchRequestTopic(topic_id=t, partitions=list(parts.values()))
                    for t, parts in topics.items()],
            forgotten_topics_data=[ShareForgottenTopic(topic_id=t, partitions=ps)
                                   for t, ps in forgotten_by_topic.items()])

    def acknowledge(self, acks: Acks) -> ShareAcknowledgeRequest | None:
        """The ShareAcknowledge carrying ``acks``; None while the session is not open (only a
        ShareFetch opens one: the acknowledgements wait for it, or for the next fetch)."""
        if self.is_new:
            return None
        topics: dict[uuid.UUID, list[ShareAcknowledgeRequestPartition]] = {}
        for p, batches in acks.items():
            if batches:
                topics.setdefault(p.topic_id, []).append(ShareAcknowledgeRequestPartition(
                    partition_index=p.partition, acknowledgement_batches=batches))
        return ShareAcknowledgeRequest(
            group_id=self.group_id, member_id=self.member_id, share_session_epoch=self.epoch,
            is_renew_ack=any(ACK_RENEW in b.acknowledge_types
                             for batches in acks.values() for b in batches),
            topics=[ShareAcknowledgeRequestTopic(topic_id=t, partitions=ps)
                    for t, ps in topics.items()])

    def close(self) -> None:
        """The next request closes the session (epoch -1)."""
        self.epoch = FINAL_SHARE_SESSION_EPOCH

    def answered(self, error_code: int) -> bool:
        """The broker answered the last request with top-level ``error_code``; True when the
        session goes on (its acknowledgements and records count)."""
        if error_code in SESSION_LOST:
            self.epoch = INITIAL_SHARE_SESSION_EPOCH
            return False
        self.epoch = next_epoch(self.epoch)
        return not error_code

    def failed(self) -> None:
        """The last request got no answer: the broker may or may not have seen it, so the
        session starts over (Java's ``handleError``)."""
        if not self.closing:
            self.epoch = INITIAL_SHARE_SESSION_EPOCH
