"""An idempotent producer's id and epoch, and each partition's sequence numbers.

Like the Java client's ``TxnPartitionMap``/``TxnPartitionEntry``: per partition, the id and epoch
its sequences belong to, the next sequence to hand out, the last one a broker acknowledged, and
the batches in flight by base sequence (sent at least once and not finished: a batch waiting to
be retried is still in flight). Batches are the runtime's; only what ``Sequenced`` names is used.
"""

from __future__ import annotations

from typing import Protocol

import attrs

#: Sequences wrap at 2**31 (Java's DefaultRecordBatch.incrementSequence).
_SEQUENCE_LIMIT = 1 << 31


@attrs.frozen
class ProducerIdAndEpoch:
    """The producer id and epoch a broker gave (InitProducerId); -1, -1 means none yet."""

    producer_id: int = -1
    epoch: int = -1

    @property
    def valid(self) -> bool:
        return self.producer_id >= 0


NO_PRODUCER_ID = ProducerIdAndEpoch()


class Sequenced(Protocol):
    """What the sequence table reads and sets on a runtime's batch."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    base_sequence: int

    @property
    def record_count(self) -> int: ...

    def restamp(self, producer: ProducerIdAndEpoch, base_sequence: int) -> None:
        """Carry this id, epoch and base sequence from now on (its bytes are made again)."""


def increment(sequence: int, by: int) -> int:
    """``sequence + by``, wrapping past Int32.MAX_VALUE to 0 as the broker does."""
    return (sequence + by) % _SEQUENCE_LIMIT


@attrs.define
class PartitionSequences:
    """One partition's sequence state."""

    producer: ProducerIdAndEpoch
    next_sequence: int = 0
    last_acked: int = -1
    #: The highest offset a broker acknowledged (KIP-360 compares it with log start offsets).
    last_acked_offset: int = -1
    in_flight: dict[int, Sequenced] = attrs.field(factory=dict)
    #: A batch of this partition expired or failed after being sent: what the broker holds is
    #: unknown until the batches in flight finish (Java: partitionsWithUnresolvedSequences).
    unresolved: bool = False

    def first_in_flight(self) -> int | None:
        """The lowest base sequence in flight, or None."""
        return min(self.in_flight) if self.in_flight else None

    def restart(self, producer: ProducerIdAndEpoch) -> None:
        """Number this partition's batches in flight from 0 again under ``producer`` (an epoch
        bump or a new id), in their order; the next new batch follows them."""
        sequence = 0
        renumbered: dict[int, Sequenced] = {}
        for base in sorted(self.in_flight):
            batch = self.in_flight[base]
            batch.restamp(producer, sequence)
            renumbered[sequence] = batch
            sequence = increment(sequence, batch.record_count)
        self.in_flight = renumbered
        self.producer = producer
        self.next_sequence = sequence
        self.last_acked = -1
        self.unresolved = False
