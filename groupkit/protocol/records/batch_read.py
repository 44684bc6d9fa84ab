"""Reading record batches (magic 2): the consumer's hot path.

The record loop runs in C (csrc/read.c) when the extension is built; the pure
Python loop here is the reference and the fallback, and both give the same records. In Python,
varints are decoded inline with a one- and two-byte fast path, and records are built without
attrs' ``__init__`` (see construct.py).
"""

from __future__ import annotations

from typing import cast

from groupkit.errors import CorruptRecordError
from groupkit.protocol import native
from groupkit.protocol.compression import CODEC_NAMES, decompress
from groupkit.protocol.native import crc32c
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
from groupkit.protocol.records.layout import _V2, _V2_CRC_FROM, _V2_MIN_RECORD, _corrupt
from groupkit.protocol.records.values import TIMESTAMP_LOG_APPEND, Header, Record

# Zigzag decoding of one- and two-byte varints by table. Index b < 0x80 is a one-byte varint;
# index (c << 7) + b with b >= 0x80 is the two-byte varint b, c, whose raw value is that - 0x80.
_ZIGZAG = [(u >> 1) ^ -(u & 1) for u in range(0x80)] + [
    (u >> 1) ^ -(u & 1) for u in range(0x4000)]


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Unsigned varint at ``pos`` (slow path, any length up to 10 bytes) and the next position.

    Bits past the 64th are dropped, as the Java client's ByteUtils.readVarlong drops them.
    """
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & 0xFFFF_FFFF_FFFF_FFFF, pos
        shift += 7
        if shift > 63:
            raise IndexError("varint longer than 10 bytes")


def _read_records(buf: bytes, pos: int, end: int, count: int, base_offset: int, base_ts: int,
                  ts_type: int, max_ts: int, out: list[Record], make: _Make,
                  from_offset: int | None = None) -> int:
    """Decode ``count`` v2 records from ``buf[pos:end]`` into ``out``; returns the end position.
    Records whose offset is below ``from_offset`` are passed over by their length, not built.

    Timestamps are ``base_ts`` plus each record's delta, or ``max_ts`` for a log-append-time
    batch. Raises IndexError or ValueError on malformed input; the caller turns them into
    CorruptRecordError with the batch's coordinates.
    """
    start = len(out)
    new, push = _new, out.append
    record_cls, extra = make
    sourced = bool(extra)
    if sourced:
        (s_topic, topic), (s_partition, partition), *after = extra
    s_off, s_ts, s_key, s_val, s_hdr, s_tt = (
        _set_offset, _set_timestamp, _set_key, _set_value, _set_headers, _set_ts_type)
    uvarint, zz = _uvarint, _ZIGZAG
    # Each zigzag varint: one byte b < 0x80 is zz[b]; two bytes b, c (c < 0x80) are
    # zz[(c << 7) + b]; longer ones take the slow path.
    for _ in range(count):
        b = buf[pos]
        if b < 0x80:
            n = zz[b]
            pos += 1
        else:
            c = buf[pos + 1]
            if c < 0x80:
                n = zz[(c << 7) + b]
                pos += 2
            else:
                b, pos = uvarint(buf, pos)
                n = (b >> 1) ^ -(b & 1)
        if n < 0:
            raise ValueError(f"record length {n}")
        rec_end = pos + n
        # The attributes byte at pos is unused; the timestamp delta follows it.
        b = buf[pos + 1]
        if b < 0x80:
            ts_delta = zz[b]
            pos += 2
        else:
            c = buf[pos + 2]
            if c < 0x80:
                ts_delta = zz[(c << 7) + b]
                pos += 3
            else:
                b, pos = uvarint(buf, pos + 1)
                ts_delta = (b >> 1) ^ -(b & 1)
        b = buf[pos]
        if b < 0x80:
            offset_delta = zz[b]
            pos += 1
        else:
            c = buf[pos + 1]
            if c < 0x80:
                offset_delta = zz[(c << 7) + b]
                pos += 2
            else:
                b, pos = uvarint(buf, pos)
                offset_delta = (b >> 1) ^ -(b & 1)
        if from_offset is not None and base_offset + offset_delta < from_offset:
            if rec_end > end:
                raise ValueError("record length runs past the end of the records")
            pos = rec_end  # not wanted: passed over unread
            continue
        b = buf[pos]
        if b == 1:
            key = None
            pos += 1
        else:
            if b < 0x80:
                n = zz[b]
                pos += 1
            else:
                b, pos = uvarint(buf, pos)
                n = (b >> 1) ^ -(b & 1)
            if n < 0:
                if n != -1:
                    raise ValueError(f"key length {n}")
                key = None
            else:
                key = buf[pos:pos + n]
                pos += n
        b = buf[pos]
        if b < 0x80:
            n = zz[b]
            pos += 1
        else:
            c = buf[pos + 1]
            if c < 0x80:
                n = zz[(c << 7) + b]
                pos += 2
            else:
                b, pos = uvarint(buf, pos)
                n = (b >> 1) ^ -(b & 1)
        if n < 0:
            if n != -1:
                raise ValueError(f"value length {n}")
            value = None
        else:
            value = buf[pos:pos + n]
            pos += n
        if buf[pos] == 0:
            headers: list[Header] = []
            pos += 1
        else:
            headers, pos = _read_headers(buf, pos, rec_end)
        if pos != rec_end:
            raise ValueError(f"record length says it ends at byte {rec_end}, fields end at {pos}")
        r = new(record_cls)
        s_off(r, base_offset + offset_delta)
        s_ts(r, base_ts + ts_delta)
        s_key(r, key)
        s_val(r, value)
        s_hdr(r, headers)
        s_tt(r, ts_type)
        if sourced:
            s_topic(r, topic)
            s_partition(r, partition)
            for s_after, value in after:
                s_after(r, value)
        push(r)
    if ts_type == TIMESTAMP_LOG_APPEND:
        # The broker stamped the batch; its max timestamp is every record's timestamp.
        for i in range(start, len(out)):
            _set_timestamp(out[i], max_ts)
    return pos


def _read_records_native(buf: bytes, pos: int, end: int, count: int, base_offset: int,
                         base_ts: int, ts_type: int, max_ts: int, out: list[Record],
                         make: _Make, from_offset: int | None = None) -> int:
    """:func:`_read_records` in C (csrc/read.c); raises ValueError likewise."""
    assert native.module is not None
    record_cls, extra = make
    topic = partition = None
    if extra:
        (_, topic), (_, partition), *after = extra
        if after:
            return native.module.read_records(
                buf, pos, end, count, base_offset, base_ts, ts_type, max_ts, out, record_cls,
                topic, partition, True, _NO_OFFSET if from_offset is None else from_offset,
                tuple(value for _, value in after))
    if from_offset is None:
        return native.module.read_records(buf, pos, end, count, base_offset, base_ts, ts_type,
                                          max_ts, out, record_cls, topic, partition,
                                          bool(extra))
    return native.module.read_records(buf, pos, end, count, base_offset, base_ts, ts_type,
                                      max_ts, out, record_cls, topic, partition, bool(extra),
                                      from_offset)


#: read_records' from_offset for "none" (nothing is below it).
_NO_OFFSET = -2 ** 63
_INT64_MAX = 2 ** 63 - 1


def _read_set_native(data: bytes | bytearray | memoryview, check_crc: bool, out: list[Record],
                     make: _Make, up_to: int | None, from_offset: int | None) -> bool:
    """Read a whole record set of uncompressed v2 batches into ``out`` in C (csrc/record_set.c)
    as the entry-by-entry walk would; False, ``out`` untouched, for any other set (the walk
    reads it then)."""
    assert native.module is not None
    if not _NO_OFFSET <= (from_offset or 0) <= _INT64_MAX \
            or not _NO_OFFSET <= (up_to or 0) <= _INT64_MAX:
        return False
    record_cls, extra = make
    topic = partition = None
    after = None
    if extra:
        (_, topic), (_, partition), *pairs = extra
        after = tuple(value for _, value in pairs) if pairs else None
    return bool(native.module.read_v2_set(
        data, check_crc, out, record_cls, topic, partition, bool(extra),
        _NO_OFFSET if from_offset is None else from_offset, up_to, after))


#: The record loop in use: C when the extension is built (tests swap it to compare the two).
_reader = _read_records_native if native.available else _read_records


def _read_headers(buf: bytes, pos: int, rec_end: int) -> tuple[list[Header], int]:
    """The header list of a record starting at its count varint; raises like _read_records."""
    zz, uvarint = _ZIGZAG, _uvarint
    b = buf[pos]
    if b < 0x80:
        count = zz[b]
        pos += 1
    else:
        b, pos = uvarint(buf, pos)
        count = (b >> 1) ^ -(b & 1)
    if count < 0 or count > rec_end - pos:
        raise ValueError(f"header count {count}")
    headers: list[Header] = []
    push = headers.append
    for _ in range(count):
        b = buf[pos]
        if b < 0x80:
            n = zz[b]
            pos += 1
        else:
            b, pos = uvarint(buf, pos)
            n = (b >> 1) ^ -(b & 1)
        if n < 0:
            raise ValueError(f"header key length {n}")
        name = buf[pos:pos + n].decode()
        pos += n
        b = buf[pos]
        if b < 0x80:
            n = zz[b]
            pos += 1
        else:
            b, pos = uvarint(buf, pos)
            n = (b >> 1) ^ -(b & 1)
        if n < 0:
            if n != -1:
                raise ValueError(f"header value length {n}")
            push((name, None))
        else:
            push((name, buf[pos:pos + n]))
            pos += n
    return headers, pos


def _decode_v2(buf: bytes | memoryview, view: memoryview, pos: int, end: int, topic: str | None,
               partition: int | None, check_crc: bool, max_size: int,
               out: list[Record], make: _Make, up_to: int | None = None,
               from_offset: int | None = None) -> tuple[int, ...]:
    """Decode the v2 batch at ``buf[pos:end]``, appending its records to ``out``. ``buf`` is a
    view only when the C record loop reads (``reader._entries``); it is bytes otherwise.

    With ``up_to``, the records after the first ``up_to - base offset + 1`` are left undecoded
    (they hold every record up to offset ``up_to``: offsets only grow by at least one a record)
    and the end of the last one read is not checked against the batch's; the CRC still covers
    the whole batch. With ``from_offset``, records below it are passed over unbuilt. Returns
    the batch header fields (the ``_V2`` tuple).
    """
    header = _V2.unpack_from(buf, pos)
    base_offset, _length, _epoch, _magic, crc, attrs_, _lod, base_ts, max_ts = header[:9]
    count = header[12]
    if check_crc and crc32c(view[pos + _V2_CRC_FROM:end]) != crc:
        raise _corrupt("record batch CRC-32C does not match its contents",
                       topic, partition, base_offset)
    codec = attrs_ & 0x07
    if codec:
        if codec not in CODEC_NAMES:
            raise _corrupt(f"record batch uses unknown compression id {codec}",
                           topic, partition, base_offset)
        try:
            rbuf = decompress(codec, view[pos + _V2.size:end], max_size=max_size)
        except CorruptRecordError as exc:
            raise _corrupt(str(exc), topic, partition, base_offset) from None
        rpos, rend = 0, len(rbuf)
    else:
        rbuf, rpos, rend = cast(bytes, buf), pos + _V2.size, end
    if count < 0 or count > (rend - rpos) // _V2_MIN_RECORD:
        raise _corrupt(f"record batch claims {count} records in {rend - rpos} bytes",
                       topic, partition, base_offset)
    whole = True
    if up_to is not None and up_to - base_offset + 1 < count:
        count = max(0, up_to - base_offset + 1)
        whole = False
    try:
        last = _reader(rbuf, rpos, rend, count, base_offset, base_ts, (attrs_ >> 3) & 1, max_ts,
                       out, make) if from_offset is None or from_offset <= base_offset else \
            _reader(rbuf, rpos, rend, count, base_offset, base_ts, (attrs_ >> 3) & 1, max_ts,
                    out, make, from_offset)
    except (IndexError, ValueError) as exc:
        raise _corrupt(f"record batch holds a malformed record ({exc})",
                       topic, partition, base_offset) from None
    if whole and last != rend:
        raise _corrupt(f"record batch records end at byte {last - rpos} of {rend - rpos}",
                       topic, partition, base_offset)
    return header
