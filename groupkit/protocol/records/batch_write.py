"""Writing record batches (magic 2): the producer's hot path.

One encoder serves :func:`encode_batch` (any input, every option) and :func:`encode_rows` (the
producer's rows as they are). The record loop runs in C (csrc/write.c) when the
extension is built; the Python loop here is the reference and fallback, writing the same bytes.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Sequence

from groupkit.errors import ConfigError
from groupkit.protocol import native
from groupkit.protocol.compression import codec_id, compress
from groupkit.protocol.native import crc32c
from groupkit.protocol.records.layout import _LOG_OVERHEAD, _V2, _V2_CRC_FROM
from groupkit.protocol.records.values import (
    NO_TIMESTAMP,
    TIMESTAMP_CREATE,
    Header,
    Record,
    RecordInput,
    Row,
)

# Zigzag varints of 0..8191 come from a table (``_varints``): nearly every length and delta a
# record holds.
_SMALL = 1 << 13

#: A record timestamp's range (the batch header's fields are int64).
_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)


def _zigzag(v: int) -> bytes:
    """The zigzag varint of the int64 ``v``."""
    u = ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


@functools.cache
def _varints() -> list[bytes]:
    """The zigzag varints of 0..8191, made on first use: only the pure-Python record loop reads
    them, and making them costs an import several milliseconds."""
    return [_zigzag(v) for v in range(_SMALL)]


_NULL = _zigzag(-1)
_NO_HEADERS = _zigzag(0)
_RECORD_ATTRIBUTES = b"\x00"


def _headers(headers: Sequence[Header]) -> bytes:
    """A record's header count and headers."""
    zz, small, zigzag = _varints(), _SMALL, _zigzag
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


def _records(rows: Sequence[Row], deltas: Sequence[int] | None,
             base_ts: int) -> tuple[bytes, int]:
    """The uncompressed records of a batch at these offset deltas (None: 0, 1, 2, ...), and
    their largest timestamp.

    The producer's hot path, so it looks small varints up in a table, writes the common record
    (null key, no headers) without calls, and joins every part once at the end.
    """
    zz, small, zigzag = _varints(), _SMALL, _zigzag
    null, no_headers, attributes = _NULL, _NO_HEADERS, _RECORD_ATTRIBUTES
    max_ts = min_ts = base_ts
    if deltas is None:
        deltas = range(len(rows))
    parts: list[bytes] = []
    extend = parts.extend
    for delta, (key, value, headers, ts) in zip(deltas, rows, strict=True):
        if ts > max_ts:
            max_ts = ts
        elif ts < min_ts:
            min_ts = ts
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
    if max_ts > _INT64_MAX or min_ts < _INT64_MIN:
        # As the C writer does: the field is an int64, and a varint of a wider delta would
        # make a batch no reader can parse.
        raise ValueError("a timestamp must be an int64 (milliseconds since the epoch)")
    return b"".join(parts), max_ts


def _records_native(rows: Sequence[Row], deltas: Sequence[int] | None,
                    base_ts: int) -> tuple[bytes, int]:
    """:func:`_records` in C (csrc/write.c)."""
    assert native.module is not None
    return native.module.write_records(rows, deltas, base_ts)


#: The record loop in use: C when the extension is built (tests swap it to compare the two).
_writer = _records_native if native.available else _records


def _batch(rows: Sequence[Row], deltas: Sequence[int] | None, last_delta: int, codec: int,
           attributes: int, base_offset: int = 0, producer_id: int = -1,
           producer_epoch: int = -1, base_sequence: int = -1,
           partition_leader_epoch: int = -1) -> bytes:
    """A whole v2 batch: header, records (compressed with ``codec``) and its CRC-32C."""
    base_ts = rows[0][3]
    body, max_ts = _writer(rows, deltas, base_ts)
    if codec:
        body = compress(codec, body)
    batch = bytearray(_V2.pack(
        base_offset, _V2.size - _LOG_OVERHEAD + len(body), partition_leader_epoch, 2, 0,
        attributes, last_delta, base_ts, max_ts, producer_id, producer_epoch, base_sequence,
        len(rows)))
    batch += body
    struct.pack_into(">I", batch, _V2_CRC_FROM - 4, crc32c(memoryview(batch)[_V2_CRC_FROM:]))
    return bytes(batch)


def encode_rows(rows: Sequence[Row], *, compression: str | None = None, producer_id: int = -1,
                producer_epoch: int = -1, base_sequence: int = -1,
                transactional: bool = False) -> bytes:
    """A v2 batch of producer rows ``(key, value, headers or None, timestamp)`` at offset 0.

    The producer's entry: rows go in as they are, without :func:`encode_batch`'s per-item
    normalising, and come out as the bytes ``encode_batch`` writes for the same records. An
    idempotent producer stamps its id, epoch and the batch's first sequence number; a
    transactional one also sets the transactional bit.
    """
    if not rows:
        raise ConfigError("a record batch needs at least one record; pass a non-empty list")
    codec = codec_id(compression)
    return _batch(rows, None, len(rows) - 1, codec, codec | (0x10 if transactional else 0),
                  0, producer_id, producer_epoch, base_sequence)


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
