"""Sizing a Fetch answer's entries from their headers alone, without building a record.

A consumer keeps an answer raw and decodes it a few entries at a time as the application
polls, as the Java client's CompletedFetch does. This walk tells it where each complete entry
ends, how many records each holds and the offset after the last one, so the next Fetch can
leave before any record is decoded.
"""

from __future__ import annotations

import struct

import attrs

from groupkit.protocol.records.layout import (
    _LEGACY_MIN_LENGTH,
    _LOG_OVERHEAD,
    _MAGIC_AT,
    _PREFIX,
    _V2_MIN_LENGTH,
)

# attributes int16 at byte 21, lastOffsetDelta int32 at 23, recordCount int32 at 57.
_ATTRIBUTES_AT = 21
_LAST_DELTA_AT = 23
_COUNT_AT = 57
_H = struct.Struct(">h")
_I = struct.Struct(">i")
_CONTROL = 0x20


@attrs.frozen
class Entries:
    """The complete entries of a record set, by header.

    ``ends[i]`` is where entry ``i`` ends in the data, ``counts[i]`` its data records (0 for a
    control batch; 1 for a legacy entry, whose compressed wrapper does not say). When
    ``malformed``, the walk met an entry it cannot size: the last entry then runs to the end of
    the data, so that decoding it raises the error, and ``next_offset`` stops before it.
    """

    ends: tuple[int, ...]
    counts: tuple[int, ...]
    #: The offset after the last complete entry; -1 when there is none.
    next_offset: int
    malformed: bool


def walk_entries(data: bytes | memoryview) -> Entries:
    """Size the entries of ``data``; a partial entry at the end (the broker's cut) is left out."""
    n = len(data)
    pos = 0
    ends: list[int] = []
    counts: list[int] = []
    next_offset = -1
    while n - pos >= _LOG_OVERHEAD:
        base_offset, length = _PREFIX.unpack_from(data, pos)
        end = pos + _LOG_OVERHEAD + length
        if length < _LEGACY_MIN_LENGTH:
            break
        if end > n:
            return Entries(tuple(ends), tuple(counts), next_offset, False)
        magic = data[pos + _MAGIC_AT]
        if magic == 2:
            if length < _V2_MIN_LENGTH:
                break
            control = _H.unpack_from(data, pos + _ATTRIBUTES_AT)[0] & _CONTROL
            counts.append(0 if control else max(0, _I.unpack_from(data, pos + _COUNT_AT)[0]))
            next_offset = base_offset + _I.unpack_from(data, pos + _LAST_DELTA_AT)[0] + 1
        elif magic < 2:
            # A legacy entry's offset is its last message's, compressed wrapper or not.
            counts.append(1)
            next_offset = base_offset + 1
        else:
            break
        ends.append(end)
        pos = end
    else:
        return Entries(tuple(ends), tuple(counts), next_offset, False)
    ends.append(n)
    counts.append(0)
    return Entries(tuple(ends), tuple(counts), next_offset, True)
