"""Legacy message sets (magic 0 and 1), read and written.

Brokers before 0.11 and old producers write them; a Fetch response may mix them with record
batches. Compressed sets are one wrapper message holding the inner set.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable

from groupkit.errors import ConfigError, CorruptRecordError
from groupkit.protocol.compression import CODEC_NAMES, codec_id, compress, decompress
from groupkit.protocol.records.batch_write import _normalise
from groupkit.protocol.records.construct import (
    _Make,
    _new,
    _set_headers,
    _set_key,
    _set_offset,
    _set_timestamp,
    _set_ts_type,
    _set_value,
)
from groupkit.protocol.records.layout import (
    _I32,
    _LEGACY_MIN_LENGTH,
    _LOG_OVERHEAD,
    _MAGIC_AT,
    _PREFIX,
    _V0,
    _V1,
    _corrupt,
)
from groupkit.protocol.records.values import (
    NO_TIMESTAMP,
    TIMESTAMP_CREATE,
    TIMESTAMP_LOG_APPEND,
    Record,
    RecordInput,
)


def _decode_legacy(buf: bytes, view: memoryview, pos: int, end: int, topic: str | None,
                   partition: int | None, check_crc: bool, max_size: int,
                   out: list[Record], make: _Make, inner: bool = False) -> int:
    """Decode the magic 0/1 message at ``buf[pos:end]`` (and, if compressed, its inner set).

    Appends the message's record(s) to ``out`` and returns its compression id.
    """
    magic = buf[pos + _MAGIC_AT]
    st = _V1 if magic == 1 else _V0
    offset = _PREFIX.unpack_from(buf, pos)[0]
    if end - pos < st.size + 8:
        raise _corrupt(f"magic {magic} message is shorter than its header", topic, partition,
                       offset)
    if magic == 1:
        offset, _size, crc, _m, attributes, timestamp = _V1.unpack_from(buf, pos)
    else:
        offset, _size, crc, _m, attributes = _V0.unpack_from(buf, pos)
        timestamp = NO_TIMESTAMP
    if check_crc and zlib.crc32(view[pos + _MAGIC_AT:end]) != crc:
        raise _corrupt(f"magic {magic} message CRC-32 does not match its contents",
                       topic, partition, offset)
    p = pos + st.size
    fields: list[bytes | None] = []
    for what in ("key", "value"):
        if end - p < 4:
            raise _corrupt(f"message {what} length runs past the message", topic, partition,
                           offset)
        (n,) = _I32.unpack_from(buf, p)
        p += 4
        if n == -1:
            fields.append(None)
            continue
        if n < 0 or n > end - p:
            raise _corrupt(f"message {what} claims {n} bytes but {end - p} remain",
                           topic, partition, offset)
        fields.append(buf[p:p + n])
        p += n
    if p != end:
        raise _corrupt(f"message has {end - p} bytes after its value", topic, partition, offset)
    key, value = fields
    codec = attributes & 0x07
    ts_type = (attributes >> 3) & 1 if magic == 1 else TIMESTAMP_CREATE
    if not codec:
        r = _new(make[0])
        for set_field, field_value in make[1]:
            set_field(r, field_value)
        _set_offset(r, offset)
        _set_timestamp(r, timestamp)
        _set_key(r, key)
        _set_value(r, value)
        _set_headers(r, [])
        _set_ts_type(r, ts_type)
        out.append(r)
        return 0
    if inner:
        raise _corrupt("compressed message nested inside a compressed message",
                       topic, partition, offset)
    if codec not in CODEC_NAMES or codec == 4:
        raise _corrupt(f"magic {magic} message uses unknown compression id {codec}",
                       topic, partition, offset)
    if value is None:
        raise _corrupt("compressed message has a null value", topic, partition, offset)
    try:
        data = decompress(codec, value, max_size=max_size, legacy_lz4=magic == 0)
    except CorruptRecordError as exc:
        raise _corrupt(str(exc), topic, partition, offset) from None
    inner_records: list[Record] = []
    dview = memoryview(data)
    ipos, iend = 0, len(data)
    while ipos < iend:
        if iend - ipos < _LOG_OVERHEAD + 5:
            raise _corrupt("compressed message set ends inside a message header",
                           topic, partition, offset)
        n = _PREFIX.unpack_from(data, ipos)[1]
        if n < _LEGACY_MIN_LENGTH or n > iend - ipos - _LOG_OVERHEAD:
            raise _corrupt(f"inner message claims {n} bytes", topic, partition, offset)
        if data[ipos + _MAGIC_AT] != magic:
            raise _corrupt(f"inner message magic {data[ipos + _MAGIC_AT]} differs from its "
                           f"wrapper's {magic}", topic, partition, offset)
        nxt = ipos + _LOG_OVERHEAD + n
        _decode_legacy(data, dview, ipos, nxt, topic, partition, check_crc, max_size,
                       inner_records, make, inner=True)
        ipos = nxt
    if not inner_records:
        raise _corrupt("compressed message holds no messages", topic, partition, offset)
    if magic == 1:
        # Inner offsets are relative; the wrapper carries the absolute offset of the last one.
        # A producer writes the wrapper at offset 0 (the broker assigns offsets), so, as the
        # Java client does (AbstractLegacyRecordBatch), the shift applies only when it is >= 0;
        # otherwise the inner offsets stand as written. (Java raises for a non-zero wrapper
        # below the last inner offset; groupkit keeps the inner offsets there too.)
        shift = max(0, offset - inner_records[-1].offset)
        for r in inner_records:
            _set_offset(r, r.offset + shift)
            if ts_type == TIMESTAMP_LOG_APPEND:
                _set_timestamp(r, timestamp)
                _set_ts_type(r, TIMESTAMP_LOG_APPEND)
    out.extend(inner_records)
    return codec


def _legacy_message(offset: int, magic: int, attributes: int, timestamp: int,
                    key: bytes | None, value: bytes | None) -> bytes:
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for field in (key, value):
        if field is None:
            body += _I32.pack(-1)
        else:
            body += _I32.pack(len(field))
            body += field
    crc = zlib.crc32(body)
    return _PREFIX.pack(offset, len(body) + 4) + struct.pack(">I", crc) + bytes(body)


def encode_message_set(records: Iterable[RecordInput], *, magic: int = 1,
                       compression: str | None = None, base_offset: int = 0,
                       timestamp: int = NO_TIMESTAMP,
                       timestamp_type: int = TIMESTAMP_CREATE) -> bytes:
    """A legacy message set (magic 0 or 1), for tests and brokers older than 0.11.

    Items are as for :func:`encode_batch`, without headers. Compressed sets are one wrapper
    message; magic 1 inner offsets are relative to it, as Kafka 0.10 writes them.
    """
    if magic not in (0, 1):
        raise ConfigError(f"legacy magic must be 0 or 1, not {magic}")
    codec = codec_id(compression)
    if codec == 4:
        raise ConfigError("zstd needs record batches (magic 2); use encode_batch")
    offsets, rows = _normalise(records, base_offset, timestamp)
    if any(r[2] for r in rows):
        raise ConfigError("magic 0/1 messages cannot carry headers; use encode_batch")
    ts_bit = (timestamp_type & 1) << 3 if magic == 1 else 0
    entries = list(zip(offsets, rows, strict=True))
    if not codec:
        return b"".join(_legacy_message(o, magic, ts_bit, ts, k, v)
                        for o, (k, v, _, ts) in entries)
    first = offsets[0]
    inner = b"".join(
        _legacy_message(o - first if magic == 1 else o, magic, 0, ts, k, v)
        for o, (k, v, _, ts) in entries)
    wrapped = compress(codec, inner, legacy_lz4=magic == 0)
    wrapper_ts = max(r[3] for r in rows)
    return _legacy_message(offsets[-1], magic, codec | ts_bit, wrapper_ts, None, wrapped)
