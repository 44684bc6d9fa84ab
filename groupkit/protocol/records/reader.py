"""Walking a Fetch response's record set: any mix of magic 0, 1 and 2, back to back.

The broker cuts the set at its byte limit, so a partial entry at the end is dropped; every other
defect raises a CorruptFrame-family error.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from groupkit.protocol.compression import CODEC_NAMES, DEFAULT_MAX_DECOMPRESSED_SIZE
from groupkit.protocol.records import batch_read
from groupkit.protocol.records.batch_read import _decode_v2, _read_records_native, _read_set_native
from groupkit.protocol.records.construct import _PLAIN, _Make, _make
from groupkit.protocol.records.layout import (
    _LEGACY_MIN_LENGTH,
    _LOG_OVERHEAD,
    _MAGIC_AT,
    _PREFIX,
    _V2_MIN_LENGTH,
    _corrupt,
)
from groupkit.protocol.records.legacy import _decode_legacy
from groupkit.protocol.records.values import Record, RecordBatch

_Entry = tuple[int, int, tuple[int, ...] | None, int]


def _entries(data: bytes | bytearray | memoryview, topic: str | None, partition: int | None,
             check_crc: bool, max_size: int, out: list[Record], batches: bool,
             make: _Make = _PLAIN, up_to: int | None = None,
             from_offset: int | None = None) -> Iterator[_Entry]:
    """Walk the entries of a record set, decoding each into ``out``.

    Yields (magic, start index in ``out``, v2 header tuple or None, compression id) per entry;
    stops quietly at a partial trailing entry. Unless ``batches``, control records are dropped.
    """
    # The C record loop reads any buffer, so a frame's view is read in place; the Python loops
    # and the legacy decoder slice keys and values out of it, which must then be bytes.
    buf: bytes | memoryview = data if isinstance(data, bytes) else (
        memoryview(data) if batch_read._reader is _read_records_native else bytes(data))
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
        if magic == 2 and up_to is not None and base_offset > up_to:
            # A v2 batch starts at its first offset and offsets only grow: nothing from here
            # on is wanted, so it is not checked or decoded (as Java's ShareCompletedFetch
            # stops once past the last acquired offset).
            return
        start = len(out)
        if magic == 2:
            if length < _V2_MIN_LENGTH:
                raise _corrupt(f"record batch length {length} is below the "
                               f"{_V2_MIN_LENGTH}-byte header", topic, partition, base_offset)
            header = _decode_v2(buf, view, pos, end, topic, partition, check_crc, max_size, out,
                                make, up_to, from_offset)
            if header[5] & 0x20 and not batches:
                del out[start:]
            yield 2, start, header, header[5] & 0x07
        elif magic < 2:
            if not isinstance(buf, bytes):
                buf = bytes(data)
                view = memoryview(buf)
            codec = _decode_legacy(buf, view, pos, end, topic, partition, check_crc, max_size,
                                   out, make)
            yield magic, start, None, codec
        else:
            raise _corrupt(f"entry has unknown magic {magic}", topic, partition, base_offset)
        pos = end


def decode_records(data: bytes | bytearray | memoryview, *, topic: str | None = None,
                   partition: int | None = None, check_crc: bool = True,
                   max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
                   record_type: type[Record] = Record, up_to: int | None = None,
                   from_offset: int | None = None, after: tuple[Any, ...] = ()) -> list[Record]:
    """Every data record in a Fetch response's record set, in order, control batches skipped.

    Reads any mix of magic 0, 1 and 2; a partial entry at the end is dropped. With the C record
    loop in use, a set of uncompressed v2 batches is read in one call
    (``batch_read._read_set_native``), any other walked entry by entry. ``topic`` and
    ``partition`` name the source in error messages. ``record_type`` is the class built: Record,
    or a slotted subclass adding ``topic`` and ``partition`` fields, which get those arguments
    (a consumer's record, built here so it is not copied record by record afterwards). This
    does not filter aborted transactions: read_committed readers use :func:`decode_batches` and
    :func:`filter_aborted`.

    ``up_to``: the caller wants no record past this offset (a share consumer, none past the
    last it acquired), so a v2 batch's records past it may be left undecoded (some may still
    be returned), and the v2 batches that start past it are not read at all. ``from_offset``:
    likewise, a v2 batch's records below this offset are passed over without being built.
    ``after``: a value for each field ``record_type`` lists in ``SET_AFTER_DECODE``, set on
    every record (otherwise the caller sets them).
    """
    out: list[Record] = []
    make = _make(record_type, topic, partition, after)
    if batch_read._reader is _read_records_native \
            and _read_set_native(data, check_crc, out, make, up_to, from_offset):
        return out
    for _ in _entries(data, topic, partition, check_crc, max_decompressed_size, out, False,
                      make, up_to, from_offset):
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
