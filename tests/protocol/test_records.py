"""Record batches and message sets: round trips, batch metadata, control batches, aborts."""

from __future__ import annotations

import pytest
from crc32c import crc32c
from hypothesis import given, strategies as st

from groupkit.errors import ConfigError, CorruptRecordError
from groupkit.protocol.records import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    NO_TIMESTAMP,
    TIMESTAMP_CREATE,
    TIMESTAMP_LOG_APPEND,
    Record,
    control_type,
    decode_batches,
    decode_records,
    encode_batch,
    encode_control_batch,
    encode_message_set,
    encode_rows,
    filter_aborted,
)

pytestmark = pytest.mark.usefixtures("record_loops")

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]
LEGACY_CODECS = [None, "gzip", "snappy", "lz4"]


def sample_rows(n: int = 40) -> list[tuple]:
    """Keys, null keys, null values, empty values, long values, headers with null values."""
    rows = []
    for i in range(n):
        key = None if i % 4 == 0 else f"key-{i}".encode()
        value = None if i % 7 == 3 else (b"" if i % 7 == 4 else b"v%d-" % i * (i * 9))
        headers = [] if i % 3 else [("trace", b"t%d" % i), ("empty", b""), ("nil", None)]
        rows.append((key, value, headers, 1_700_000_000_000 + i * 37))
    return rows


def as_tuples(records: list[Record]) -> list[tuple]:
    return [(r.key, r.value, r.headers, r.timestamp) for r in records]


@pytest.mark.parametrize("compression", CODECS)
def test_batch_round_trip_every_codec(compression: str | None) -> None:
    rows = sample_rows()
    data = encode_batch(rows, compression=compression, base_offset=500)
    records = decode_records(data)
    assert as_tuples(records) == rows
    assert [r.offset for r in records] == list(range(500, 500 + len(rows)))
    assert {r.timestamp_type for r in records} == {TIMESTAMP_CREATE}
    (batch,) = decode_batches(data)
    assert batch.compression == compression
    assert batch.magic == 2


@pytest.mark.parametrize("compression", CODECS)
def test_many_batches_back_to_back_mixed_codecs(compression: str | None) -> None:
    rows = sample_rows(12)
    parts = [encode_batch(rows, compression=c, base_offset=i * 100) for i, c in enumerate(CODECS)]
    parts.append(encode_batch(rows, compression=compression, base_offset=900))
    records = decode_records(b"".join(parts))
    assert len(records) == 12 * 6
    assert [r.offset for r in records[-12:]] == list(range(900, 912))
    assert as_tuples(records[:12]) == rows


def test_decoding_accepts_memoryview_and_bytearray() -> None:
    data = encode_batch(sample_rows(5))
    assert decode_records(memoryview(data)) == decode_records(bytearray(data)) == \
        decode_records(data)


def test_record_inputs_keep_their_offsets_and_timestamps() -> None:
    records = [Record(offset=10 + 3 * i, timestamp=5000 - i, key=b"k", value=b"%d" % i,
                      headers=[("h", None)]) for i in range(5)]
    data = encode_batch(records, base_offset=10)
    assert decode_records(data) == records
    (batch,) = decode_batches(data)
    assert batch.last_offset_delta == 12
    assert batch.first_timestamp == 5000
    assert batch.max_timestamp == 5000
    assert batch.next_offset == 23


def test_two_tuples_take_the_timestamp_keyword() -> None:
    records = decode_records(encode_batch([(b"a", b"1"), (None, b"2")], timestamp=77))
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records] == [
        (0, 77, b"a", b"1", []), (1, 77, None, b"2", [])]


def test_large_varints_and_negative_timestamp_deltas() -> None:
    rows = [(b"k" * 20000, b"v" * 300000, [("h" * 200, b"x" * 70000)], 10**12),
            (None, b"", [], 10**12 - 10**9), (b"", None, [], -1)]
    assert as_tuples(decode_records(encode_batch(rows))) == rows


def test_log_append_time_batch_gives_every_record_the_max_timestamp() -> None:
    rows = [(None, b"a", [], 100), (None, b"b", [], 300), (None, b"c", [], 200)]
    records = decode_records(encode_batch(rows, timestamp_type=TIMESTAMP_LOG_APPEND))
    assert [(r.timestamp, r.timestamp_type) for r in records] == [(300, 1)] * 3


def test_batch_metadata_for_transactional_producer() -> None:
    data = encode_batch(sample_rows(3), base_offset=42, producer_id=9001, producer_epoch=3,
                        base_sequence=17, transactional=True, partition_leader_epoch=5,
                        compression="lz4")
    (batch,) = decode_batches(data)
    assert (batch.base_offset, batch.last_offset, batch.producer_id, batch.producer_epoch,
            batch.base_sequence, batch.partition_leader_epoch) == (42, 44, 9001, 3, 17, 5)
    assert batch.is_transactional and not batch.is_control
    assert batch.timestamp_type == TIMESTAMP_CREATE
    assert len(batch.records) == 3


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("compression", LEGACY_CODECS)
def test_message_set_round_trip(magic: int, compression: str | None) -> None:
    rows = [(k, v, [], ts) for k, v, _, ts in sample_rows(25)]
    data = encode_message_set(rows, magic=magic, compression=compression, base_offset=1000)
    records = decode_records(data)
    assert [(r.key, r.value) for r in records] == [(k, v) for k, v, _, _ in rows]
    assert [r.offset for r in records] == list(range(1000, 1025))
    expected_ts = [ts for *_, ts in rows] if magic == 1 else [NO_TIMESTAMP] * 25
    assert [r.timestamp for r in records] == expected_ts
    batches = decode_batches(data)
    assert len(batches) == (1 if compression else 25)
    assert {(b.magic, b.compression, b.producer_id) for b in batches} == {
        (magic, compression, -1)}


def test_v1_wrapper_relative_offsets_are_made_absolute() -> None:
    inner_rows = [(b"k", b"%d" % i, [], 10 + i) for i in range(4)]
    data = bytearray(encode_message_set(inner_rows, magic=1, compression="gzip"))
    # A broker rewrites only the wrapper's offset (outside the CRC) to the last absolute offset.
    data[0:8] = (703).to_bytes(8, "big")
    assert [r.offset for r in decode_records(bytes(data))] == [700, 701, 702, 703]


@pytest.mark.parametrize("wrapper_offset", [0, 50])
def test_v1_wrapper_below_the_last_inner_offset_keeps_the_inner_offsets(
        wrapper_offset: int) -> None:
    # A producer writes the wrapper at offset 0 (Java keeps the inner offsets then): 120 records
    # read as 0..119, not -119..0. A non-zero wrapper below the last inner offset is kept the same.
    rows = [(None, b"%d" % i, [], 10) for i in range(120)]
    data = bytearray(encode_message_set(rows, magic=1, compression="gzip"))
    data[0:8] = wrapper_offset.to_bytes(8, "big")
    records = decode_records(bytes(data))
    assert [r.offset for r in records] == list(range(120))
    assert [r.value for r in records] == [b"%d" % i for i in range(120)]
    assert decode_batches(bytes(data))[0].last_offset == 119


def test_v1_wrapper_log_append_time_overrides_inner_timestamps() -> None:
    rows = [(None, b"a", [], 5), (None, b"b", [], 9)]
    data = encode_message_set(rows, magic=1, compression="snappy",
                              timestamp_type=TIMESTAMP_LOG_APPEND)
    assert [(r.timestamp, r.timestamp_type) for r in decode_records(data)] == [(9, 1), (9, 1)]


def test_mixed_magics_in_one_record_set() -> None:
    data = (encode_message_set([(b"a", b"0")], magic=0, base_offset=0)
            + encode_message_set([(b"b", b"1"), (b"c", b"2")], magic=1, compression="gzip",
                                 base_offset=1, timestamp=50)
            + encode_batch([(b"d", b"3")], base_offset=3, compression="zstd"))
    assert [(r.offset, r.key) for r in decode_records(data)] == [
        (0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]
    assert [b.magic for b in decode_batches(data)] == [0, 1, 2]


def test_legacy_encoder_refuses_headers_and_zstd() -> None:
    with pytest.raises(ConfigError, match="headers"):
        encode_message_set([(b"k", b"v", [("h", b"x")])])
    with pytest.raises(ConfigError, match="zstd"):
        encode_message_set([(b"k", b"v")], compression="zstd")
    with pytest.raises(ConfigError, match="magic"):
        encode_message_set([(b"k", b"v")], magic=2)


def test_encoder_rejects_bad_input_with_config_errors() -> None:
    with pytest.raises(ConfigError, match="at least one record"):
        encode_batch([])
    with pytest.raises(ConfigError, match="compression"):
        encode_batch([(b"k", b"v")], compression="brotli")
    with pytest.raises(ConfigError, match="tuple"):
        encode_batch([(b"only-key",)])
    with pytest.raises(ConfigError, match="base_offset"):
        encode_batch([Record(offset=3, timestamp=0, key=None, value=None)], base_offset=4)
    with pytest.raises(ConfigError, match="at least one record"):
        encode_rows([])
    with pytest.raises(ConfigError, match="compression"):
        encode_rows([(None, b"v", None, 0)], compression="brotli")


def test_control_batches_are_skipped_by_decode_records() -> None:
    data = (encode_batch([(None, b"a")], base_offset=0, producer_id=1, transactional=True)
            + encode_control_batch(CONTROL_COMMIT, producer_id=1, producer_epoch=0,
                                   base_offset=1)
            + encode_batch([(None, b"b")], base_offset=2))
    assert [(r.offset, r.value) for r in decode_records(data)] == [(0, b"a"), (2, b"b")]
    batches = decode_batches(data)
    assert [b.is_control for b in batches] == [False, True, False]
    assert control_type(batches[1].records[0]) == CONTROL_COMMIT


def test_control_type_rejects_short_key() -> None:
    with pytest.raises(CorruptRecordError, match="offset 7"):
        control_type(Record(offset=7, timestamp=0, key=b"\x00", value=None))


def _txn(pid: int, base: int, values: list[bytes]) -> bytes:
    return encode_batch([(None, v) for v in values], base_offset=base, producer_id=pid,
                        producer_epoch=0, transactional=True)


def test_filter_aborted_drops_aborted_transactions_and_markers() -> None:
    data = (_txn(1, 0, [b"p1-a", b"p1-b"])
            + _txn(2, 2, [b"p2-a"])
            + encode_control_batch(CONTROL_ABORT, producer_id=1, producer_epoch=0, base_offset=3)
            + encode_control_batch(CONTROL_COMMIT, producer_id=2, producer_epoch=0,
                                   base_offset=4)
            + _txn(1, 5, [b"p1-c"])
            + encode_batch([(None, b"plain")], base_offset=6))
    batches = decode_batches(data)
    visible = filter_aborted(batches, [(1, 0)])
    assert [r.value for r in visible] == [b"p2-a", b"p1-c", b"plain"]
    assert [r.value for r in filter_aborted(batches, [])] == [
        b"p1-a", b"p1-b", b"p2-a", b"p1-c", b"plain"]
    assert [r.value for r in filter_aborted(batches, None)] == [
        b"p1-a", b"p1-b", b"p2-a", b"p1-c", b"plain"]


def test_filter_aborted_starts_at_the_listed_first_offset() -> None:
    data = (_txn(1, 0, [b"committed"])
            + encode_control_batch(CONTROL_COMMIT, producer_id=1, producer_epoch=0,
                                   base_offset=1)
            + _txn(1, 2, [b"aborted"])
            + encode_control_batch(CONTROL_ABORT, producer_id=1, producer_epoch=0,
                                   base_offset=3))
    assert [r.value for r in filter_aborted(decode_batches(data), [(1, 2)])] == [b"committed"]


headers_st = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)),
                      max_size=3)
row_st = st.tuples(st.none() | st.binary(max_size=40), st.none() | st.binary(max_size=300),
                   headers_st, st.integers(min_value=0, max_value=2**41))


@given(rows=st.lists(row_st, min_size=1, max_size=30), compression=st.sampled_from(CODECS),
       base_offset=st.integers(min_value=0, max_value=2**62))
def test_round_trip_property(rows: list[tuple], compression: str | None, base_offset: int) -> None:
    records = decode_records(encode_batch(rows, compression=compression, base_offset=base_offset))
    assert as_tuples(records) == rows
    assert [r.offset for r in records] == list(range(base_offset, base_offset + len(rows)))


def test_empty_batch_left_by_compaction_has_metadata_and_no_records() -> None:
    # Compaction may keep a batch whose records are all gone, for its producer state.
    batch = bytearray(encode_batch([(None, b"gone")], base_offset=20, producer_id=5,
                                   producer_epoch=1)[:61])
    batch[8:12] = (61 - 12).to_bytes(4, "big")
    batch[57:61] = (0).to_bytes(4, "big")
    batch[17:21] = crc32c(bytes(batch[21:])).to_bytes(4, "big")
    data = bytes(batch) + encode_batch([(None, b"next")], base_offset=21)
    assert [r.value for r in decode_records(data)] == [b"next"]
    first = decode_batches(data)[0]
    assert (first.base_offset, first.producer_id, first.records) == (20, 5, [])


@given(rows=st.lists(st.tuples(st.none() | st.binary(max_size=40),
                               st.none() | st.binary(max_size=300), st.none() | headers_st,
                               st.integers(min_value=0, max_value=2**41)),
                     min_size=1, max_size=30))
def test_producer_rows_encode_as_encode_batch_does(rows: list[tuple]) -> None:
    """encode_rows takes the producer's rows as they are (headers may be None)."""
    as_batch = [(k, v, h or [], ts) for k, v, h, ts in rows]
    assert encode_rows(rows) == encode_batch(as_batch, timestamp=rows[0][3])


def test_producer_rows_with_long_fields_far_apart_in_time() -> None:
    """Lengths, offset and timestamp deltas past the varint table (8,191) and negative deltas."""
    long = b"x" * 10_000
    rows = [(long if i % 1000 == 1 else None, long if i % 999 == 0 else b"v",
             [("h" * 9000, long)] if i == 8500 else None, 5 + i * 3 - (i == 7) * 100)
            for i in range(9000)]
    data = encode_rows(rows)
    assert data == encode_batch([(k, v, h or [], ts) for k, v, h, ts in rows], timestamp=5)
    records = decode_records(data)
    assert [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in records] == [
        (i, k, v, h or [], ts) for i, (k, v, h, ts) in enumerate(rows)]
    (batch,) = decode_batches(data)
    assert (batch.first_timestamp, batch.max_timestamp) == (5, 5 + 8999 * 3)


@pytest.mark.parametrize("compression", CODECS)
def test_producer_rows_decode_under_every_codec(compression: str | None) -> None:
    rows = [(b"key%d" % i, b"value-%d" % i * 5, [("n", b"%d" % i)], 1000 + i) for i in range(50)]
    data = encode_rows(rows, compression=compression)
    assert [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in decode_records(data)] == [
        (i, k, v, h, ts) for i, (k, v, h, ts) in enumerate(rows)]
    (batch,) = decode_batches(data)
    assert (batch.compression, batch.base_offset, batch.last_offset) == (compression, 0, 49)
    assert (batch.producer_id, batch.partition_leader_epoch, batch.is_transactional) == (
        -1, -1, False)


def test_encode_rows_stamps_the_producer_state() -> None:
    """An idempotent or transactional producer's batch: its id, epoch, first sequence and the
    transactional bit, the bytes encode_batch writes for the same records."""
    rows = [(None, b"a", None, 1000), (b"k", b"b", None, 1001)]
    stamped = encode_rows(rows, producer_id=7, producer_epoch=3, base_sequence=42,
                          transactional=True)
    batch = decode_batches(stamped)[0]
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 3, 42)
    assert batch.is_transactional and not batch.is_control
    assert stamped == encode_batch([r[:2] + (None, r[3]) for r in rows], producer_id=7,
                                   producer_epoch=3, base_sequence=42, transactional=True)
    plain = decode_batches(encode_rows(rows))[0]
    assert (plain.producer_id, plain.base_sequence, plain.is_transactional) == (-1, -1, False)
