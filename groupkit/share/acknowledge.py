"""How a share consumer acknowledges records (KIP-932), and the acknowledgement batches sent.

``AcknowledgeType`` is the Java client's (ids as on the wire). ``ack_batches`` turns one
partition's acknowledgements (offset -> type, 0 for a gap) into the protocol's batches the way
Java's ``Acknowledgements.getAcknowledgementBatches`` does: contiguous offsets share a batch;
a run of one type is sent as a range with that single type, and only offsets whose types vary
are spelled one type per offset, so the usual "accept all of these" costs one batch.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from groupkit.protocol.messages.share_fetch import ACK_GAP, AcknowledgementBatch
from groupkit.share.offsets import OffsetRuns

#: A run of at least this many offsets of one type gets a batch of its own (Java:
#: ``Acknowledgements.MAX_RECORDS_WITH_SAME_ACKNOWLEDGE_TYPE``).
SAME_TYPE_RUN = 10


class AcknowledgeType(enum.IntEnum):
    """How a record delivered by a share group is acknowledged (Java's AcknowledgeType).

    ACCEPT: processed; never delivered again. RELEASE: not processed; delivered again (to any
    member) with its delivery count one higher. REJECT: unprocessable; never delivered again.
    RENEW (Kafka 4.2+, KIP-1222): still working on it; extend its acquisition lock.
    """

    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


#: The type an acquired offset without a record (a control record, a compacted one) gets.
GAP = ACK_GAP


def ack_batches(acks: Mapping[int, int]) -> list[AcknowledgementBatch]:
    """The acknowledgement batches of one partition's ``acks`` (offset -> type id; an
    ``OffsetRuns`` of runs alone gives a batch per run, adjacent runs of one type joined)."""
    if not acks:
        return []
    if isinstance(acks, OffsetRuns) and not acks.singles:
        out: list[AcknowledgementBatch] = []
        for first, last, kind in sorted(acks.runs):
            if out and out[-1].last_offset + 1 == first and out[-1].acknowledge_types == [kind]:
                out[-1] = AcknowledgementBatch(first_offset=out[-1].first_offset,
                                               last_offset=last, acknowledge_types=[kind])
            else:
                out.append(AcknowledgementBatch(first_offset=first, last_offset=last,
                                                acknowledge_types=[kind]))
        return out
    low, high = min(acks), max(acks)
    if high - low + 1 == len(acks) and len(kinds := set(acks.values())) == 1:
        # The usual case: a contiguous run all of one type (a poll's records accepted).
        return [AcknowledgementBatch(first_offset=low, last_offset=high,
                                     acknowledge_types=[kinds.pop()])]
    batches: list[AcknowledgementBatch] = []
    run: list[tuple[int, int]] = []
    for offset in sorted(acks):
        if run and offset != run[-1][0] + 1:
            _split(run, batches)
            run = []
        run.append((offset, acks[offset]))
    if run:
        _split(run, batches)
    return batches


def _split(run: list[tuple[int, int]], out: list[AcknowledgementBatch]) -> None:
    """Add the batches of one contiguous run: long same-type stretches alone, the rest mixed."""
    types = [t for _, t in run]
    if len(set(types)) == 1:
        out.append(AcknowledgementBatch(first_offset=run[0][0], last_offset=run[-1][0],
                                        acknowledge_types=[types[0]]))
        return
    mixed: list[tuple[int, int]] = []
    i = 0
    while i < len(run):
        j = i
        while j + 1 < len(run) and types[j + 1] == types[i]:
            j += 1
        if j - i + 1 >= SAME_TYPE_RUN:
            _flush(mixed, out)
            out.append(AcknowledgementBatch(first_offset=run[i][0], last_offset=run[j][0],
                                            acknowledge_types=[types[i]]))
        else:
            mixed.extend(run[i:j + 1])
        i = j + 1
    _flush(mixed, out)


def _flush(mixed: list[tuple[int, int]], out: list[AcknowledgementBatch]) -> None:
    if not mixed:
        return
    types = [t for _, t in mixed]
    out.append(AcknowledgementBatch(
        first_offset=mixed[0][0], last_offset=mixed[-1][0],
        acknowledge_types=types if len(set(types)) > 1 else types[:1]))
    mixed.clear()
