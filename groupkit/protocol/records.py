"""Kafka record batches (magic 2) and legacy message sets (magic 0 and 1), read and written.

A Fetch response carries any mix of the three formats back to back, usually with a partial
entry at the end (the broker cuts at the byte limit); :func:`decode_records` reads them all and
drops that partial tail. Every other defect raises a CorruptFrame-family error.

The record loop is the consumer's hot path, so it is written for speed: varints are decoded
inline with a one- and two-byte fast path, and records are built without attrs' ``__init__``.
Encoding is the producer's hot path: one encoder serves :func:`encode_batch` (any input, every
option) and :func:`encode_rows` (the producer's rows as they are).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import attrs
from crc32c import crc32c

from groupkit.errors import ConfigError, CorruptRecordError
from groupkit.protocol.compression import (
    CODEC_NAMES,
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    codec_id,
    compress,
    decompress,
)

TIMESTAMP_CREATE = 0
TIMESTAMP_LOG_APPEND = 1
NO_TIMESTAMP = -1
"""Timestamp of magic-0 messages and of records written without one."""

CONTROL_ABORT = 0
CONTROL_COMMIT = 1
"""Types of the marker a control batch holds (the second int16 of its record key)."""

Header = tuple[str, bytes | None]


@attrs.frozen
class Record:
    """One consumed record. ``timestamp_type`` is 0 (create time) or 1 (log-append time)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header] = attrs.field(factory=list)
    timestamp_type: int = TIMESTAMP_CREATE


@attrs.frozen
class RecordBatch:
    """One batch with its metadata, as a read_committed reader needs it.

    A legacy message-set entry (magic 0/1) appears as a batch of its message(s) with no
    producer state (id/epoch/sequence -1).
    """

    base_offset: int
    last_offset_delta: int
    magic: int
    compression: str | None
    timestamp_type: int
    is_transactional: bool
    is_control: bool
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    partition_leader_epoch: int
    records: list[Record]

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


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

# Zigzag decoding of one- and two-byte varints by table. Index b < 0x80 is a one-byte varint;
# index (c << 7) + b with b >= 0x80 is the two-byte varint b, c, whose raw value is that - 0x80.
_ZIGZAG = [(u >> 1) ^ -(u & 1) for u in range(0x80)] + [
    (u >> 1) ^ -(u & 1) for u in range(0x4000)]
_new = object.__new__
_set_offset = Record.__dict__["offset"].__set__
_set_timestamp = Record.__dict__["timestamp"].__set__
_set_key = Record.__dict__["key"].__set__
_set_value = Record.__dict__["value"].__set__
_set_headers = Record.__dict__["headers"].__set__
_set_ts_type = Record.__dict__["timestamp_type"].__set__

#: The class to build and the (setter, value) pairs of its fields beyond Record's.
_Make = tuple[type[Record], tuple[tuple[Any, Any], ...]]
_PLAIN: _Make = (Record, ())
_SOURCE_FIELDS = {"topic", "partition"}


def _make(record_type: type[Record], topic: str | None, partition: int | None) -> _Make:
    """How to build records of ``record_type``: Record, or a subclass that adds exactly the
    fields ``topic`` and ``partition`` (set from the arguments of the same name)."""
    if record_type is Record:
        return _PLAIN
    if not (isinstance(record_type, type) and issubclass(record_type, Record)):
        raise ConfigError(f"record_type must be Record or an attrs subclass of it, not "
                          f"{record_type!r}")
    extra = {a.name for a in attrs.fields(record_type)} - {a.name for a in attrs.fields(Record)}
    if extra != _SOURCE_FIELDS or "__slots__" not in record_type.__dict__:
        raise ConfigError(f"record_type {record_type.__name__} must be slotted and add exactly"
                          f" the fields 'topic' and 'partition' to Record, not {sorted(extra)}")
    return record_type, ((_slot(record_type, "topic").__set__, topic),
                         (_slot(record_type, "partition").__set__, partition))


def _slot(cls: type, name: str) -> Any:
    """The slot descriptor of field ``name`` from the class in ``cls``'s MRO that defines it."""
    return next(vars(c)[name] for c in cls.__mro__ if name in vars(c))


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


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Unsigned varint at ``pos`` (slow path, any length up to 10 bytes) and the next position."""
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise IndexError("varint longer than 10 bytes")


def _read_records(buf: bytes, pos: int, end: int, count: int, base_offset: int, base_ts: int,
                  ts_type: int, out: list[Record], make: _Make) -> int:
    """Decode ``count`` v2 records from ``buf[pos:end]`` into ``out``; returns the end position.

    Timestamps are ``base_ts`` plus each record's delta. Raises IndexError or ValueError on
    malformed input; the caller turns them into CorruptRecordError with the batch's coordinates.
    """
    new, push = _new, out.append
    record_cls, extra = make
    sourced = bool(extra)
    if sourced:
        (s_topic, topic), (s_partition, partition) = extra
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
                raise ValueError(f"key length {n}")
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
        push(r)
    return pos


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


def _decode_v2(buf: bytes, view: memoryview, pos: int, end: int, topic: str | None,
               partition: int | None, check_crc: bool, max_size: int,
               out: list[Record], make: _Make) -> tuple[int, ...]:
    """Decode the v2 batch at ``buf[pos:end]``, appending its records to ``out``.

    Returns the batch header fields (the ``_V2`` tuple).
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
        rbuf, rpos, rend = buf, pos + _V2.size, end
    if count < 0 or count > (rend - rpos) // _V2_MIN_RECORD:
        raise _corrupt(f"record batch claims {count} records in {rend - rpos} bytes",
                       topic, partition, base_offset)
    ts_type = (attrs_ >> 3) & 1
    start = len(out)
    try:
        last = _read_records(rbuf, rpos, rend, count, base_offset, base_ts, ts_type, out,
                             make)
    except (IndexError, ValueError) as exc:
        raise _corrupt(f"record batch holds a malformed record ({exc})",
                       topic, partition, base_offset) from None
    if ts_type == TIMESTAMP_LOG_APPEND:
        # The broker stamped the batch; its max timestamp is every record's timestamp.
        for i in range(start, len(out)):
            _set_timestamp(out[i], max_ts)
    if last != rend:
        raise _corrupt(f"record batch records end at byte {last - rpos} of {rend - rpos}",
                       topic, partition, base_offset)
    return header


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
        shift = offset - inner_records[-1].offset
        for r in inner_records:
            _set_offset(r, r.offset + shift)
            if ts_type == TIMESTAMP_LOG_APPEND:
                _set_timestamp(r, timestamp)
                _set_ts_type(r, TIMESTAMP_LOG_APPEND)
    out.extend(inner_records)
    return codec


_Entry = tuple[int, int, tuple[int, ...] | None, int]


def _entries(data: bytes | bytearray | memoryview, topic: str | None, partition: int | None,
             check_crc: bool, max_size: int, out: list[Record], batches: bool,
             make: _Make = _PLAIN) -> Iterator[_Entry]:
    """Walk the entries of a record set, decoding each into ``out``.

    Yields (magic, start index in ``out``, v2 header tuple or None, compression id) per entry;
    stops quietly at a partial trailing entry. Unless ``batches``, control records are dropped.
    """
    buf = data if isinstance(data, bytes) else bytes(data)
    view = memoryview(buf)
    n = len(buf)
    pos = 0
    while n - pos >= _LOG_OVERHEAD:
        base_offset, length = _PREFIX.unpack_from(buf, pos)
        if length < _LEGACY_MIN_LENGTH:
            raise _corrupt(f"entry length {length} is below the smallest message",
                           topic, partition, base_offset)
        end = pos + _LOG_OVERHEAD + length
        if end > n:
            return
        magic = buf[pos + _MAGIC_AT]
        start = len(out)
        if magic == 2:
            if length < _V2_MIN_LENGTH:
                raise _corrupt(f"record batch length {length} is below the "
                               f"{_V2_MIN_LENGTH}-byte header", topic, partition, base_offset)
            header = _decode_v2(buf, view, pos, end, topic, partition, check_crc, max_size, out,
                                make)
            if header[5] & 0x20 and not batches:
                del out[start:]
            yield 2, start, header, header[5] & 0x07
        elif magic < 2:
            codec = _decode_legacy(buf, view, pos, end, topic, partition, check_crc, max_size,
                                   out, make)
            yield magic, start, None, codec
        else:
            raise _corrupt(f"entry has unknown magic {magic}", topic, partition, base_offset)
        pos = end


def decode_records(data: bytes | bytearray | memoryview, *, topic: str | None = None,
                   partition: int | None = None, check_crc: bool = True,
                   max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
                   record_type: type[Record] = Record) -> list[Record]:
    """Every data record in a Fetch response's record set, in order, control batches skipped.

    Reads any mix of magic 0, 1 and 2; a partial entry at the end is dropped. ``topic`` and
    ``partition`` name the source in error messages. ``record_type`` is the class built: Record,
    or a slotted subclass adding ``topic`` and ``partition`` fields, which get those arguments
    (a consumer's record, built here so it is not copied record by record afterwards). This
    does not filter aborted transactions: read_committed readers use :func:`decode_batches` and
    :func:`filter_aborted`.
    """
    out: list[Record] = []
    make = _make(record_type, topic, partition)
    for _ in _entries(data, topic, partition, check_crc, max_decompressed_size, out, False,
                      make):
        pass
    return out


def decode_batches(data: bytes | bytearray | memoryview, *, topic: str | None = None,
                   partition: int | None = None, check_crc: bool = True,
                   max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
                   record_type: type[Record] = Record) -> list[RecordBatch]:
    """Every batch (control batches included) with its metadata and records, in order.

    ``record_type`` is as for :func:`decode_records`.
    """
    out: list[Record] = []
    result: list[RecordBatch] = []
    starts = list(_entries(data, topic, partition, check_crc, max_decompressed_size, out, True,
                           _make(record_type, topic, partition)))
    if not starts:
        return result
    ends = [entry[1] for entry in starts[1:]] + [len(out)]
    for (magic, start, header, codec), stop in zip(starts, ends, strict=True):
        records = out[start:stop]
        if header is not None:
            (base_offset, _len, epoch, _m, _crc, a, lod, base_ts, max_ts, pid, pepoch, seq,
             _count) = header
            result.append(RecordBatch(
                base_offset=base_offset, last_offset_delta=lod, magic=2,
                compression=CODEC_NAMES[a & 0x07], timestamp_type=(a >> 3) & 1,
                is_transactional=bool(a & 0x10), is_control=bool(a & 0x20),
                first_timestamp=base_ts, max_timestamp=max_ts, producer_id=pid,
                producer_epoch=pepoch, base_sequence=seq, partition_leader_epoch=epoch,
                records=records))
        else:
            result.append(_legacy_batch(magic, codec, records))
    return result


def _legacy_batch(magic: int, codec: int, records: list[Record]) -> RecordBatch:
    first, last = records[0], records[-1]
    return RecordBatch(
        base_offset=first.offset, last_offset_delta=last.offset - first.offset, magic=magic,
        compression=CODEC_NAMES[codec],
        timestamp_type=last.timestamp_type, is_transactional=False, is_control=False,
        first_timestamp=first.timestamp, max_timestamp=max(r.timestamp for r in records),
        producer_id=-1, producer_epoch=-1, base_sequence=-1, partition_leader_epoch=-1,
        records=records)


def control_type(record: Record) -> int:
    """The marker type of a control batch's record: CONTROL_ABORT (0) or CONTROL_COMMIT (1)."""
    key = record.key
    if key is None or len(key) < 4:
        raise CorruptRecordError(
            f"control record at offset {record.offset} has no 4-byte key; the batch is corrupt")
    return _H2.unpack_from(key)[1]


def filter_aborted(batches: Iterable[RecordBatch],
                   aborted_transactions: Iterable[tuple[int, int]] | None) -> list[Record]:
    """The records a read_committed consumer may see: aborted transactions and markers removed.

    ``aborted_transactions`` is the Fetch response's list of (producer_id, first_offset) for the
    partition. A producer's records count as aborted from its listed first offset until its
    ABORT marker, the rule Kafka's own consumer applies.
    """
    pending = sorted(aborted_transactions or (), key=lambda t: t[1], reverse=True)
    aborting: set[int] = set()
    out: list[Record] = []
    for batch in batches:
        while pending and pending[-1][1] <= batch.last_offset:
            aborting.add(pending.pop()[0])
        if batch.is_control:
            if (batch.records and batch.producer_id in aborting
                    and control_type(batch.records[0]) == CONTROL_ABORT):
                aborting.discard(batch.producer_id)
            continue
        if batch.is_transactional and batch.producer_id in aborting:
            continue
        out.extend(batch.records)
    return out


# ---------------------------------------------------------------- encoding

RecordInput = Record | Sequence[Any]
"""A Record, or a tuple (key, value), (key, value, headers) or (key, value, headers, timestamp)."""

Row = tuple[bytes | None, bytes | None, Sequence[Header] | None, int]
"""A record as :func:`encode_rows` takes it: (key, value, headers or None, timestamp in ms)."""

# Zigzag varints of 0..8191 come from a table: nearly every length and delta a record holds.
_SMALL = 1 << 13


def _zigzag(v: int) -> bytes:
    """The zigzag varint of the int64 ``v``."""
    u = ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


_VARINT = [_zigzag(v) for v in range(_SMALL)]
_NULL = _zigzag(-1)
_NO_HEADERS = _VARINT[0]
_RECORD_ATTRIBUTES = b"\x00"


def _headers(headers: Sequence[Header]) -> bytes:
    """A record's header count and headers."""
    zz, small, zigzag = _VARINT, _SMALL, _zigzag
    n = len(headers)
    parts = [zz[n] if n < small else zigzag(n)]
    append = parts.append
    for name, value in headers:
        encoded = name.encode()
        n = len(encoded)
        append(zz[n] if n < small else zigzag(n))
        append(encoded)
        if value is None:
            append(_NULL)
        else:
            n = len(value)
            append(zz[n] if n < small else zigzag(n))
            append(value)
    return b"".join(parts)


def _records(rows: Iterable[Row], deltas: Iterable[int], base_ts: int) -> tuple[bytes, int]:
    """The uncompressed records of a batch at these offset deltas, and their largest timestamp.

    The producer's hot path, so it looks small varints up in a table, writes the common record
    (null key, no headers) without calls, and joins every part once at the end.
    """
    zz, small, zigzag = _VARINT, _SMALL, _zigzag
    null, no_headers, attributes = _NULL, _NO_HEADERS, _RECORD_ATTRIBUTES
    max_ts = base_ts
    parts: list[bytes] = []
    extend = parts.extend
    for delta, (key, value, headers, ts) in zip(deltas, rows, strict=True):
        if ts > max_ts:
            max_ts = ts
        ts_delta = ts - base_ts
        ts_part = zz[ts_delta] if 0 <= ts_delta < small else zigzag(ts_delta)
        delta_part = zz[delta] if delta < small else zigzag(delta)
        if key is None and value is not None and not headers:
            n = len(value)
            value_length = zz[n] if n < small else zigzag(n)
            size = len(ts_part) + len(delta_part) + len(value_length) + n + 3
            extend((zz[size] if size < small else zigzag(size), attributes, ts_part,
                    delta_part, null, value_length, value, no_headers))
            continue
        if key is None:
            key_length, key = null, b""
        else:
            n = len(key)
            key_length = zz[n] if n < small else zigzag(n)
        if value is None:
            value_length, value = null, b""
        else:
            n = len(value)
            value_length = zz[n] if n < small else zigzag(n)
        tail = _headers(headers) if headers else no_headers
        size = (1 + len(ts_part) + len(delta_part) + len(key_length) + len(key)
                + len(value_length) + len(value) + len(tail))
        extend((zz[size] if size < small else zigzag(size), attributes, ts_part, delta_part,
                key_length, key, value_length, value, tail))
    return b"".join(parts), max_ts


def _batch(rows: Sequence[Row], deltas: Iterable[int], last_delta: int, codec: int,
           attributes: int, base_offset: int = 0, producer_id: int = -1,
           producer_epoch: int = -1, base_sequence: int = -1,
           partition_leader_epoch: int = -1) -> bytes:
    """A whole v2 batch: header, records (compressed with ``codec``) and its CRC-32C."""
    base_ts = rows[0][3]
    body, max_ts = _records(rows, deltas, base_ts)
    if codec:
        body = compress(codec, body)
    batch = bytearray(_V2.pack(
        base_offset, _V2.size - _LOG_OVERHEAD + len(body), partition_leader_epoch, 2, 0,
        attributes, last_delta, base_ts, max_ts, producer_id, producer_epoch, base_sequence,
        len(rows)))
    batch += body
    struct.pack_into(">I", batch, _V2_CRC_FROM - 4, crc32c(memoryview(batch)[_V2_CRC_FROM:]))
    return bytes(batch)


def encode_rows(rows: Sequence[Row], *, compression: str | None = None) -> bytes:
    """A v2 batch of producer rows ``(key, value, headers or None, timestamp)`` at offset 0.

    The producer's entry: rows go in as they are, without :func:`encode_batch`'s per-item
    normalising, and come out as the bytes ``encode_batch`` writes for the same records.
    """
    if not rows:
        raise ConfigError("a record batch needs at least one record; pass a non-empty list")
    codec = codec_id(compression)
    return _batch(rows, range(len(rows)), len(rows) - 1, codec, codec)


def _normalise(records: Iterable[RecordInput], base_offset: int,
               timestamp: int) -> tuple[list[int], list[Row]]:
    """The offsets and rows of the input items; see :func:`encode_batch`."""
    offsets: list[int] = []
    rows: list[Row] = []
    for i, item in enumerate(records):
        if isinstance(item, Record):
            offsets.append(item.offset)
            rows.append((item.key, item.value, item.headers, item.timestamp))
            continue
        if not 2 <= len(item) <= 4:
            raise ConfigError(
                f"record {i} is a {len(item)}-tuple; pass (key, value), (key, value, headers) "
                "or (key, value, headers, timestamp), or a Record")
        headers = list(item[2]) if len(item) > 2 and item[2] is not None else None
        offsets.append(base_offset + i)
        rows.append((item[0], item[1], headers, item[3] if len(item) > 3 else timestamp))
    if not rows:
        raise ConfigError("a record batch needs at least one record; pass a non-empty iterable")
    return offsets, rows


def encode_batch(records: Iterable[RecordInput], *, compression: str | None = None,
                 base_offset: int = 0, timestamp: int = NO_TIMESTAMP,
                 timestamp_type: int = TIMESTAMP_CREATE, producer_id: int = -1,
                 producer_epoch: int = -1, base_sequence: int = -1, transactional: bool = False,
                 control: bool = False, partition_leader_epoch: int = -1) -> bytes:
    """One v2 record batch holding ``records``.

    Items are :class:`Record` objects, which keep their own offset and timestamp, or tuples
    ``(key, value[, headers[, timestamp]])``, which take offset ``base_offset + index`` and
    ``timestamp`` (ms; a producer passes its ``now``) when they carry none. ``compression`` is
    None, "gzip", "snappy" (xerial-framed, as Java writes it), "lz4" or "zstd".
    """
    codec = codec_id(compression)
    offsets, rows = _normalise(records, base_offset, timestamp)
    deltas = [offset - base_offset for offset in offsets]
    if min(deltas) < 0 or max(deltas) > 0x7FFFFFFF:
        offset = next(o for o, d in zip(offsets, deltas, strict=True)
                      if not 0 <= d <= 0x7FFFFFFF)
        raise ConfigError(f"record offset {offset} does not fit a batch based at "
                          f"{base_offset}; pass base_offset <= the smallest offset")
    attributes = (codec | (timestamp_type & 1) << 3 | (0x10 if transactional else 0)
                  | (0x20 if control else 0))
    return _batch(rows, deltas, max(deltas), codec, attributes, base_offset, producer_id,
                  producer_epoch, base_sequence, partition_leader_epoch)


def encode_control_batch(marker: int, *, producer_id: int, producer_epoch: int,
                         base_offset: int = 0, timestamp: int = NO_TIMESTAMP,
                         coordinator_epoch: int = 0) -> bytes:
    """A transaction marker batch (CONTROL_COMMIT or CONTROL_ABORT), as a broker writes it."""
    key = _H2.pack(0, marker)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return encode_batch([(key, value, [], timestamp)], base_offset=base_offset,
                        producer_id=producer_id, producer_epoch=producer_epoch,
                        transactional=True, control=True)


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


__all__ = [
    "CONTROL_ABORT", "CONTROL_COMMIT", "NO_TIMESTAMP", "TIMESTAMP_CREATE", "TIMESTAMP_LOG_APPEND",
    "Record", "RecordBatch", "Row", "control_type", "decode_batches", "decode_records",
    "encode_batch", "encode_control_batch", "encode_message_set", "encode_rows", "filter_aborted",
]
