"""Byte layouts shared by every record format, and the error a malformed entry raises."""

from __future__ import annotations

import struct

from groupkit.errors import CorruptRecordError

# Entry prefix shared by all formats: offset int64, length int32; magic sits at byte 16.
_PREFIX = struct.Struct(">qi")
_LOG_OVERHEAD = 12
_MAGIC_AT = 16
# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordCount
_V2 = struct.Struct(">qiibIhiqqqhii")
_V2_CRC_FROM = 21
_V2_MIN_LENGTH = _V2.size - _LOG_OVERHEAD
_V2_MIN_RECORD = 7
# offset, size, crc, magic, attributes (+ timestamp for magic 1)
_V0 = struct.Struct(">qiIbb")
_V1 = struct.Struct(">qiIbbq")
_LEGACY_MIN_LENGTH = 14
_I32 = struct.Struct(">i")
_H2 = struct.Struct(">hh")


def _corrupt(what: str, topic: str | None, partition: int | None,
             offset: int | None) -> CorruptRecordError:
    where = []
    if topic is not None or partition is not None:
        where.append(f"{topic}-{partition}")
    if offset is not None:
        where.append(f"offset {offset}")
    prefix = f"{' at '.join(where)}: " if where else ""
    return CorruptRecordError(
        f"{prefix}{what}; the fetched bytes are corrupt, fetch again or skip past this offset")
