"""Cross-checks against record code we did not write: kafka-python and aiokafka.

Batches their builders write must decode to the same records through ours, and batches we
write must read back through their readers, for every codec and all three magics. Uncompressed,
our v2 encoder must write the very bytes kafka-python's builder writes.
"""

from __future__ import annotations

from itertools import accumulate

import pytest
from aiokafka.record.default_records import (
    DefaultRecordBatchBuilder as AioDefaultBuilder,
)
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder as AioLegacyBuilder
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from hypothesis import given, strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaDefaultBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder as KafkaLegacyBuilder
from kafka.record.memory_records import MemoryRecords as KafkaMemoryRecords

from groupkit.protocol.records import (
    CONTROL_ABORT,
    Record,
    decode_batches,
    decode_records,
    encode_batch,
    encode_control_batch,
    encode_message_set,
    encode_rows,
)

pytestmark = pytest.mark.usefixtures("record_loops")

CODEC_IDS = {None: 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CODECS = list(CODEC_IDS)
LEGACY_CODECS = [None, "gzip", "snappy", "lz4"]
BASE_TS = 1_700_000_000_000


def rows_with_headers(n: int = 30) -> list[tuple]:
    """Compressible rows (so builders that skip useless compression still compress)."""
    rows = []
    for i in range(n):
        key = None if i % 5 == 0 else b"user-%d" % (i % 4)
        value = None if i % 9 == 8 else b"payload-%d;" % i * 20
        headers = [("source", b"svc"), ("nil", None)] if i % 2 else []
        rows.append((key, value, headers, BASE_TS + i * 11))
    return rows


def legacy_cases() -> list[tuple[str, int, str | None]]:
    """(library, magic, codec) pairs; aiokafka refuses magic-0 lz4 (no KIP-57 framing)."""
    return [(name, magic, codec) for name in ("kafka-python", "aiokafka") for magic in (0, 1)
            for codec in LEGACY_CODECS
            if not (name == "aiokafka" and magic == 0 and codec == "lz4")]


def theirs(reader_cls: type, data: bytes) -> list[tuple]:
    out = []
    records = reader_cls(data)
    while records.has_next():
        for r in records.next_batch():
            headers = [(k, None if v is None else bytes(v)) for k, v in r.headers]
            out.append((r.offset, r.timestamp, r.key, r.value, headers))
    return out


def ours(data: bytes) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decode_records(data)]


@pytest.mark.parametrize("compression", CODECS)
@pytest.mark.parametrize("builder_cls", [KafkaDefaultBuilder, AioDefaultBuilder],
                         ids=["kafka-python", "aiokafka"])
def test_their_v2_batches_decode_through_ours(builder_cls: type, compression: str | None) -> None:
    rows = rows_with_headers()
    builder = builder_cls(magic=2, compression_type=CODEC_IDS[compression],
                          is_transactional=0, producer_id=-1, producer_epoch=-1,
                          base_sequence=-1, batch_size=1 << 20)
    for i, (key, value, headers, ts) in enumerate(rows):
        builder.append(i, timestamp=ts, key=key, value=value, headers=headers)
    data = bytes(builder.build())
    (batch,) = decode_batches(data)
    assert batch.compression == compression
    assert ours(data) == [(i, ts, k, v, h) for i, (k, v, h, ts) in enumerate(rows)]


@pytest.mark.parametrize(("name", "magic", "compression"), legacy_cases())
def test_their_message_sets_decode_through_ours(name: str, magic: int,
                                                compression: str | None) -> None:
    builder_cls = KafkaLegacyBuilder if name == "kafka-python" else AioLegacyBuilder
    rows = [(k, v, ts) for k, v, _, ts in rows_with_headers()]
    builder = builder_cls(magic=magic, compression_type=CODEC_IDS[compression],
                          batch_size=1 << 20)
    for i, (key, value, ts) in enumerate(rows):
        builder.append(i, timestamp=ts, key=key, value=value)
    data = bytearray(builder.build())
    if compression and magic == 1:
        # Producers write wrapper offset 0; a broker stores the last absolute offset there.
        data[0:8] = (len(rows) - 1).to_bytes(8, "big")
    expected_ts = [ts for *_, ts in rows] if magic == 1 else [-1] * len(rows)
    got = ours(bytes(data))
    assert [(o, t, k, v) for o, t, k, v, _ in got] == [
        (i, expected_ts[i], k, v) for i, (k, v, _) in enumerate(rows)]
    batches = decode_batches(bytes(data))
    assert len(batches) == (1 if compression else len(rows))
    assert {b.compression for b in batches} == {compression}


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4"])
def test_a_producers_v1_wrapper_at_offset_0_reads_as_its_inner_offsets(
        compression: str) -> None:
    # As a producer sends it, before a broker rewrites the wrapper offset: Java (and groupkit)
    # keep the inner offsets, 0..119, instead of shifting them to -119..0.
    builder = KafkaLegacyBuilder(magic=1, compression_type=CODEC_IDS[compression],
                                 batch_size=1 << 20)
    for i in range(120):
        builder.append(i, timestamp=BASE_TS, key=None, value=b"v%d" % i)
    data = bytes(builder.build())
    assert int.from_bytes(data[:8], "big") == 0
    assert [(r.offset, r.value) for r in decode_records(data)] == [
        (i, b"v%d" % i) for i in range(120)]


@pytest.mark.parametrize("compression", CODECS)
@pytest.mark.parametrize("reader_cls", [KafkaMemoryRecords, AioMemoryRecords],
                         ids=["kafka-python", "aiokafka"])
def test_our_v2_batches_read_through_theirs(reader_cls: type, compression: str | None) -> None:
    rows = rows_with_headers()
    data = (encode_batch(rows, compression=compression, base_offset=100)
            + encode_batch(rows[:3], compression=compression, base_offset=130))
    expected = [(100 + i, ts, k, v, h) for i, (k, v, h, ts) in enumerate(rows)]
    expected += [(130 + i, ts, k, v, h) for i, (k, v, h, ts) in enumerate(rows[:3])]
    assert theirs(reader_cls, data) == expected
    records = reader_cls(data)
    while records.has_next():
        assert records.next_batch().validate_crc()


@pytest.mark.parametrize(("name", "magic", "compression"), legacy_cases())
def test_our_message_sets_read_through_theirs(name: str, magic: int,
                                              compression: str | None) -> None:
    reader_cls = KafkaMemoryRecords if name == "kafka-python" else AioMemoryRecords
    rows = [(k, v, [], ts) for k, v, _, ts in rows_with_headers()]
    data = encode_message_set(rows, magic=magic, compression=compression, base_offset=50)
    expected_ts = [ts for *_, ts in rows] if magic == 1 else [None] * len(rows)
    got = [(o, t, k, v) for o, t, k, v, _ in theirs(reader_cls, data)]
    if magic == 0:
        got = [(o, None, k, v) for o, _, k, v in got]
    assert got == [(50 + i, expected_ts[i], k, v) for i, (k, v, _, _) in enumerate(rows)]


@pytest.mark.parametrize("reader_cls", [KafkaMemoryRecords, AioMemoryRecords],
                         ids=["kafka-python", "aiokafka"])
def test_our_transactional_and_control_batches_read_through_theirs(reader_cls: type) -> None:
    data = (encode_batch([(None, b"x")], producer_id=77, producer_epoch=2, base_sequence=0,
                         transactional=True)
            + encode_control_batch(CONTROL_ABORT, producer_id=77, producer_epoch=2,
                                   base_offset=1))
    records = reader_cls(data)
    first, second = records.next_batch(), records.next_batch()
    assert (first.producer_id, first.producer_epoch, first.is_transactional) == (77, 2, True)
    assert second.is_control_batch and second.base_offset == 1


maybe_bytes = st.none() | st.binary(max_size=200)
row_st = st.tuples(maybe_bytes, maybe_bytes | st.binary(min_size=8192, max_size=9000),
                   st.lists(st.tuples(st.text(max_size=8), maybe_bytes), max_size=3),
                   st.integers(min_value=0, max_value=2**45))
#: Where a v2 batch holds its partition leader epoch: a broker's field, before the CRC'd part.
EPOCH = slice(12, 16)


def kafka_python_batch(rows: list[tuple], offsets: list[int], producer_id: int = -1,
                       producer_epoch: int = -1, base_sequence: int = -1,
                       transactional: bool = False) -> bytes:
    builder = KafkaDefaultBuilder(magic=2, compression_type=0,
                                  is_transactional=int(transactional), producer_id=producer_id,
                                  producer_epoch=producer_epoch, base_sequence=base_sequence,
                                  batch_size=1 << 24)
    for offset, (key, value, headers, ts) in zip(offsets, rows, strict=True):
        builder.append(offset, timestamp=ts, key=key, value=value, headers=headers)
    return bytes(builder.build())


@given(st.lists(row_st, min_size=1, max_size=20), st.booleans())
def test_producer_rows_are_the_bytes_kafka_python_writes(rows: list[tuple],
                                                         null_headers: bool) -> None:
    theirs_ = kafka_python_batch(rows, list(range(len(rows))))
    ours_ = encode_rows([(k, v, None if null_headers and not h else h, ts)
                         for k, v, h, ts in rows])
    # kafka-python leaves the leader epoch 0; a producer writes -1 (no epoch), as Java does.
    assert ours_[EPOCH] == b"\xff" * 4 and theirs_[EPOCH] == bytes(4)
    assert ours_[:12] + ours_[16:] == theirs_[:12] + theirs_[16:]


@given(st.lists(st.tuples(row_st, st.integers(min_value=1, max_value=5000)), min_size=1,
                max_size=20),
       st.integers(min_value=0, max_value=2**40), st.integers(min_value=0, max_value=100),
       st.integers(min_value=0, max_value=2**20), st.booleans())
def test_records_at_offset_gaps_are_the_bytes_kafka_python_writes(
        items: list[tuple], producer_id: int, producer_epoch: int, base_sequence: int,
        transactional: bool) -> None:
    offsets = list(accumulate((gap for _, gap in items[1:]), initial=0))
    rows = [row for row, _ in items]
    records = [Record(offset=o, timestamp=ts, key=k, value=v, headers=h)
               for o, (k, v, h, ts) in zip(offsets, rows, strict=True)]
    state = {"producer_id": producer_id, "producer_epoch": producer_epoch,
             "base_sequence": base_sequence, "transactional": transactional}
    assert encode_batch(records, partition_leader_epoch=0, **state) == kafka_python_batch(
        rows, offsets, **state)
