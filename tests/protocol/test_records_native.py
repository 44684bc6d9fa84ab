"""The C record loops against the pure-Python ones: same records, same bytes, same errors.

The other record tests run once per implementation (the ``record_loops`` fixture); these
compare the two directly: reading a corpus of batches (every codec, headers, nulls, long
varints, log-append time, control batches, offsets past int64) and the mutation fuzz of
test_records_corrupt, and writing random rows.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import weakref
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import attrs
import pytest
from crc32c import crc32c as packaged_crc32c
from hypothesis import given, strategies as st

import groupkit.protocol
from groupkit.errors import ConfigError, CorruptFrame, CorruptRecordError
from groupkit.protocol import native
from groupkit.protocol.records import (
    TIMESTAMP_LOG_APPEND,
    Record,
    batch_read,
    batch_write,
    decode_batches,
    decode_records,
    encode_batch,
    encode_control_batch,
)
from groupkit.protocol.records.construct import _make
from groupkit.protocol.records.reader import _entries
from groupkit.runtime.fetcher import ConsumerRecord
from tests.protocol.corrupt_records import SEEDS, mutate, mutation, recrc_v2

needs_native = pytest.mark.skipif(not native.available,
                                  reason="the C record reader is not built")
CODECS = [None, "gzip", "snappy", "lz4", "zstd"]
#: Both record readers; the C one only where it is built.
READERS = [pytest.param("c", marks=needs_native), "python"]
INT64_MAX = 2**63 - 1


def test_native_extension_is_built() -> None:
    """``make venv`` builds the extension; only GROUPKIT_NO_NATIVE turns it off."""
    wanted = not os.environ.get("GROUPKIT_NO_NATIVE")
    assert groupkit.protocol.native_available is wanted
    assert native.available is wanted


@contextlib.contextmanager
def reader(which: str) -> Iterator[None]:
    """Read with the C loop or the Python one (writing stays as it is)."""
    chosen = batch_read._read_records_native if which == "c" else batch_read._read_records
    saved = batch_read._reader
    batch_read._reader = chosen
    try:
        yield
    finally:
        batch_read._reader = saved


def outcome(fn: Callable[[], Any]) -> Any:
    """What ``fn`` returns, or the CorruptFrame class it raises (messages may differ)."""
    try:
        return fn()
    except CorruptFrame as exc:
        return type(exc)


def both(fn: Callable[[], Any]) -> tuple[Any, Any]:
    with reader("c"):
        c = outcome(fn)
    with reader("python"):
        py = outcome(fn)
    return c, py


def rows(n: int, seed: int) -> list[tuple]:
    out = []
    for i in range(n):
        key = None if (i + seed) % 4 == 0 else b"key-%d" % i * (1 + (i % 3) * 30)
        value = None if (i + seed) % 7 == 6 else bytes([i % 256]) * ((i * 37 + seed) % 300)
        headers = [(f"h{j}", None if j == 1 else b"v" * j * 50) for j in range((i + seed) % 4)]
        if i % 5 == 3:
            headers.append(("ünïcode", b""))
        out.append((key, value, headers, 1_700_000_000_000 + (i * 7919) % 100_000 - 50_000))
    return out


def corpus() -> list[tuple[str, bytes]]:
    cases = [(f"seed {i}", seed) for i, seed in enumerate(SEEDS)]
    for codec in CODECS:
        cases.append((f"rows {codec}", b"".join(
            encode_batch(rows(60, s), compression=codec, base_offset=s * 100) for s in range(3))))
    cases += [
        ("log append", encode_batch(rows(20, 1), timestamp_type=TIMESTAMP_LOG_APPEND)),
        ("control", encode_control_batch(1, producer_id=9, producer_epoch=0, base_offset=5)
         + encode_batch(rows(5, 2), base_offset=6, transactional=True, producer_id=9)),
        ("offsets past int64", encode_batch(
            [Record(INT64_MAX - 1 + i, 0, None, b"x") for i in range(4)],
            base_offset=INT64_MAX - 1)),
        ("timestamps past int64", encode_batch(
            [(None, b"a", None, INT64_MAX), (None, b"b", None, -1)])),
        ("same timestamps", encode_batch([(None, b"v%d" % i, None, 5) for i in range(50)])),
        ("large fields", encode_batch([(b"k" * 70_000, b"v" * 200_000, [("h" * 300, b"x" * 20_000)],
                                        0)], compression="lz4")),
    ]
    return cases


CORPUS = corpus()


def as_data(batches: list[Any]) -> list[Any]:
    """Batches with their records as (class, fields) so record classes are compared too."""
    return [(attrs.evolve(b, records=[]), [(type(r), attrs.astuple(r, recurse=False))
                                         for r in b.records]) for b in batches]


@needs_native
@pytest.mark.parametrize(("name", "data"), CORPUS, ids=[name for name, _ in CORPUS])
def test_both_readers_decode_the_corpus_alike(name: str, data: bytes) -> None:
    c, py = both(lambda: as_data(decode_batches(data)))
    assert c == py
    assert isinstance(c, list)
    c, py = both(lambda: as_data([attrs.evolve(decode_batches(data)[0], records=decode_records(
        data, topic="t", partition=3, record_type=ConsumerRecord))]))
    assert c == py


@needs_native
def test_large_offsets_and_timestamps_are_exact() -> None:
    with reader("c"):
        got = decode_records(dict(CORPUS)["offsets past int64"])
        stamps = decode_records(dict(CORPUS)["timestamps past int64"])
    assert [r.offset for r in got] == [INT64_MAX - 1 + i for i in range(4)]
    assert [r.timestamp for r in stamps] == [INT64_MAX, -1]


@needs_native
@given(seed=st.sampled_from(range(len(SEEDS))), edits=st.lists(mutation, min_size=1, max_size=4),
       fix_crc=st.booleans())
def test_fuzzed_record_sets_give_the_same_outcome_from_both(seed: int, edits: list[tuple],
                                                           fix_crc: bool) -> None:
    data = mutate(SEEDS[seed], edits)
    if fix_crc and len(data) >= 61 and data[16] == 2:
        data = bytearray(recrc_v2(data))
    payload = bytes(data)
    c, py = both(lambda: as_data(decode_batches(payload, max_decompressed_size=1 << 20)))
    assert c == py


@needs_native
def test_native_records_are_freed_by_reference_counting_without_the_collector() -> None:
    with reader("c"):
        records = decode_records(dict(CORPUS)["rows None"], topic="t", partition=0,
                                 record_type=ConsumerRecord)
    # A record read with headers holds an untracked list of them; one without has none made
    # until its headers are asked for (test_a_record_read_without_headers_...).
    headed = [i for i, r in enumerate(records) if "headers" not in _unset(r)]
    assert headed and all(records[i].headers for i in headed)
    assert not any(gc.is_tracked(r) for r in records)
    assert not any(gc.is_tracked(records[i].headers) for i in headed)
    watch = weakref.ref(records[7])
    assert watch() is not None
    was = gc.isenabled()
    gc.disable()
    try:
        del records
        assert watch() is None
    finally:
        if was:
            gc.enable()


def _unset(record: Record) -> set[str]:
    """The record's fields whose slots hold nothing (read by the slots' member descriptors,
    which raise on an empty slot; the headers' ListSlot would fill it)."""
    out = set()
    for field in attrs.fields(type(record)):
        slot = next(vars(c)[field.name] for c in type(record).__mro__ if field.name in vars(c))
        slot = getattr(slot, "member", slot)
        try:
            slot.__get__(record, type(record))
        except AttributeError:
            out.add(field.name)
    return out


@needs_native
@pytest.mark.parametrize("record_type", [Record, ConsumerRecord])
def test_a_record_read_without_headers_has_its_list_made_at_first_use(
        record_type: type[Record]) -> None:
    data = encode_batch([(None, b"a", None, 5), (b"k", b"b", [("h", b"v")], 6)])
    source = {} if record_type is Record else {"topic": "t", "partition": 0}
    with reader("c"):
        bare, headed = decode_records(data, record_type=record_type, **source)
    assert _unset(bare) == {"headers"} and _unset(headed) == set()
    # Read, compared, copied and shown as if the list had been there all along.
    made = record_type(0, 5, None, b"a", [], **source)
    assert bare == made and repr(bare) == repr(made)
    assert pickle.loads(pickle.dumps(bare)) == made
    assert attrs.evolve(bare, value=b"z").headers == []
    assert attrs.asdict(bare) == attrs.asdict(made)
    # Made once: the same list every time, so a change to it stays.
    bare.headers.append(("added", b"1"))
    assert bare.headers == [("added", b"1")] and _unset(bare) == set()
    assert bare != made
    # The descriptor checks the object as the slot's own does.
    with pytest.raises(TypeError):
        type(bare).headers.__get__(object(), object)


@needs_native
def test_a_record_type_without_slots_for_its_fields_is_a_type_error() -> None:
    # decode_records refuses such classes before the reader sees them (ConfigError); the C
    # reader checks again rather than write into memory that is not a slot.
    assert native.module is not None
    with pytest.raises(TypeError, match="slot"):
        native.module.read_records(b"", 0, 0, 0, 0, 0, 0, 0, [], dict, None, None, False)


field = st.none() | st.binary(max_size=40) | st.binary(min_size=100, max_size=300)
header = st.tuples(st.text(max_size=12), st.none() | st.binary(max_size=200))
row = st.tuples(field, field, st.none() | st.lists(header, max_size=3),
                st.integers(min_value=-2**40, max_value=2**45))


@needs_native
@given(rows=st.lists(row, min_size=1, max_size=25),
       gaps=st.lists(st.integers(min_value=0, max_value=70_000), min_size=25, max_size=25),
       numbered=st.booleans())
def test_both_writers_write_the_same_bytes(rows: list[tuple], gaps: list[int],
                                           numbered: bool) -> None:
    deltas = [sum(gaps[:i + 1]) for i in range(len(rows))] if numbered else None
    base_ts = rows[0][3]
    assert (batch_write._records_native(rows, deltas, base_ts)
            == batch_write._records(rows, deltas, base_ts))


@needs_native
def test_rows_sharing_timestamp_ints_write_as_rows_with_their_own() -> None:
    """The producer's accumulator gives the records of one millisecond the same int object;
    the C writer converts it once and must still see each change."""
    stamps = [1_795_548_515_492, 1_795_548_515_492, 1_795_548_515_493, 7, 1_795_548_515_492]
    shared = {ts: ts for ts in stamps}
    rows = [(None, b"v%d" % i, None, shared[ts]) for i, ts in enumerate(stamps)]
    own = [(None, b"v%d" % i, None, int(str(ts))) for i, ts in enumerate(stamps)]
    assert batch_write._records_native(rows, None, 7) == batch_write._records(own, None, 7)
    for past in (2**63, -2**63 - 1):
        with pytest.raises(ValueError, match="timestamp must be an int64"):
            batch_write._records_native([rows[0], (None, b"v", None, past)], None, 7)


@pytest.mark.parametrize("past", [2**63, -2**63 - 1])
@pytest.mark.parametrize("first", [False, True])
def test_python_writer_rejects_timestamps_past_int64_as_the_c_one_does(past: int,
                                                                       first: bool) -> None:
    """A timestamp outside int64 is a ValueError from both writers, never a batch of a varint
    wider than 64 bits (the Python writer used to write one)."""
    rows = [(None, b"v", None, past), (None, b"w", None, 7)]
    if not first:
        rows.reverse()
    writers = [batch_write._records] + ([batch_write._records_native] if native.available
                                        else [])
    for writer in writers:
        with pytest.raises(ValueError, match="timestamp must be an int64"):
            writer(rows, None, rows[0][3])


plain_row = st.tuples(st.none() | st.binary(max_size=30),
                      st.none() | st.binary(max_size=40) | st.binary(min_size=2000, max_size=9000),
                      st.none(), st.integers(min_value=-2**40, max_value=2**45))


@needs_native
@given(rows=st.lists(plain_row, min_size=1, max_size=40), as_tuple=st.booleans())
def test_producer_rows_write_as_python_writes_them(rows: list[tuple], as_tuple: bool) -> None:
    """Rows of bytes or None without headers take the C writer's measured path, past 64 KiB
    with the GIL released."""
    base_ts = rows[0][3]
    given_rows = tuple(rows) if as_tuple else rows
    assert (batch_write._records_native(given_rows, None, base_ts)
            == batch_write._records(rows, None, base_ts))


@needs_native
def test_rows_that_are_not_plain_take_the_general_c_writer() -> None:
    long = [(None, b"x" * 1000, None, 5)] * 100
    # 200 kB of plain rows: written with the GIL released.
    assert (batch_write._records_native([*long, *long], None, 5)
            == batch_write._records([*long, *long], None, 5))
    for odd in [(b"k", bytearray(b"v"), None, 5), (memoryview(b"k"), b"v", None, 5),
                (None, b"v", [], 5), (None, b"v", [("h", b"x")], 6),
                (type("B", (bytes,), {})(b"k"), None, None, 5)]:
        rows = [*long, odd, *long]
        assert (batch_write._records_native(rows, None, 5)
                == batch_write._records(rows, None, 5))


@needs_native
def test_the_c_writer_refuses_what_is_not_bytes_like_python() -> None:
    for bad in [("k", b"v", None, 0), (None, 5, None, 0), (None, b"v", [("h", "s")], 0)]:
        with pytest.raises(TypeError):
            batch_write._records_native([bad], None, 0)
        with pytest.raises(TypeError):
            batch_write._records([bad], None, 0)


@needs_native
@given(data=st.binary(max_size=3000), start=st.integers(min_value=0, max_value=7))
def test_the_extensions_crc32c_matches_the_crc32c_package(data: bytes, start: int) -> None:
    assert native.module is not None
    view = memoryview(data)[start:]
    expected = packaged_crc32c(view)
    assert native.module.crc32c(view) == expected
    assert native.module.crc32c_table(view) == expected


@needs_native
@pytest.mark.parametrize("size", [4095, 4096, 12287, 12288, 12289, 12296, 24583, 36864, 100_003])
def test_crc32c_across_the_interleaved_block_boundaries(size: int) -> None:
    """Inputs of 3 x 4096 bytes and more run as three interleaved streams, then joined."""
    assert native.module is not None
    data = bytes((i * 7919 + size) % 251 for i in range(size + 3))
    for start in (0, 3):
        view = memoryview(data)[start:start + size]
        assert native.module.crc32c(view) == packaged_crc32c(view)


@needs_native
def test_crc32c_of_a_large_buffer_and_the_check_value() -> None:
    assert native.module is not None
    assert native.module.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    data = bytes(range(256)) * 4096
    assert native.module.crc32c(data) == packaged_crc32c(data)


@pytest.mark.parametrize("which", READERS)
@pytest.mark.parametrize("compression", [None, "zstd"])
def test_up_to_leaves_a_batchs_later_records_undecoded(which: str,
                                                       compression: str | None) -> None:
    data = encode_batch([(None, b"v%d" % i) for i in range(10)], base_offset=100,
                        compression=compression)
    with reader(which):
        assert [r.offset for r in decode_records(data, up_to=103)] == [100, 101, 102, 103]
        assert decode_records(data, up_to=99) == []
        assert len(decode_records(data, up_to=109)) == 10 == len(decode_records(data))


@pytest.mark.parametrize("which", READERS)
def test_up_to_keeps_every_record_at_or_before_it_when_offsets_have_holes(which: str) -> None:
    # A compacted batch: offsets 100, 103, 104, 108 (deltas with holes).
    kept = [Record(offset=o, timestamp=0, key=None, value=b"x") for o in (100, 103, 104, 108)]
    data = encode_batch(kept, base_offset=100)
    with reader(which):
        got = [r.offset for r in decode_records(data, up_to=104)]
    assert got[:3] == [100, 103, 104] and all(o in (100, 103, 104, 108) for o in got)


def test_up_to_still_checks_the_whole_batchs_crc() -> None:
    data = bytearray(encode_batch([(None, b"v%d" % i) for i in range(10)], base_offset=0))
    data[-1] ^= 0xFF  # in the last record, past the ones wanted
    with pytest.raises(CorruptRecordError, match="CRC"):
        decode_records(bytes(data), up_to=2)
    assert [r.offset for r in decode_records(bytes(data), up_to=2, check_crc=False)] == [0, 1, 2]


@pytest.mark.parametrize("which", READERS)
@pytest.mark.parametrize("compression", [None, "zstd"])
def test_from_offset_passes_over_a_batchs_earlier_records(which: str,
                                                          compression: str | None) -> None:
    data = encode_batch([(None, b"v%d" % i, [("h", b"x")]) for i in range(10)],
                        base_offset=100, compression=compression)
    with reader(which):
        got = decode_records(data, from_offset=103, up_to=105, record_type=ConsumerRecord,
                             topic="t", partition=1)
        assert [(r.offset, r.value, r.headers) for r in got] == [
            (o, b"v%d" % (o - 100), [("h", b"x")]) for o in (103, 104, 105)]
        assert decode_records(data, from_offset=110) == []
        assert len(decode_records(data, from_offset=100)) == 10


@pytest.mark.parametrize("which", READERS)
def test_from_offset_with_holes_keeps_every_record_at_or_after_it(which: str) -> None:
    kept = [Record(offset=o, timestamp=0, key=None, value=b"x") for o in (100, 103, 104, 108)]
    data = encode_batch(kept, base_offset=100)
    with reader(which):
        assert [r.offset for r in decode_records(data, from_offset=101)] == [103, 104, 108]


@pytest.mark.parametrize("which", READERS)
def test_a_record_passed_over_still_may_not_run_past_the_batch(which: str) -> None:
    data = bytearray(encode_batch([(None, b"v%d" % i) for i in range(3)], base_offset=0))
    data[61] = 0x7E  # the first record's length (a zigzag varint, 63): past the records' end
    with reader(which), pytest.raises(CorruptRecordError):
        decode_records(bytes(data), from_offset=2, check_crc=False)


def test_a_v2_batch_that_starts_past_up_to_is_not_read() -> None:
    # Offsets only grow, so nothing from such a batch on is wanted: it is neither checked nor
    # decoded (a share answer's batches past the last acquired offset).
    wanted = encode_batch([(None, b"v%d" % i) for i in range(3)], base_offset=0)
    later = bytearray(encode_batch([(None, b"w%d" % i) for i in range(3)], base_offset=3))
    later[-1] ^= 0xFF  # its CRC no longer matches
    data = wanted + bytes(later)
    assert [r.offset for r in decode_records(data, up_to=2)] == [0, 1, 2]
    with pytest.raises(CorruptRecordError, match="CRC"):
        decode_records(data, up_to=3)  # it holds offset 3: read, and found corrupt
    with pytest.raises(CorruptRecordError, match="CRC"):
        decode_records(data)


@attrs.frozen
class _Counted(ConsumerRecord):
    """A sourced record with a field the decoder sets only when given a value for it."""

    SET_AFTER_DECODE: ClassVar[tuple[str, ...]] = ("count",)

    count: int = attrs.field(kw_only=True, default=1)


@pytest.mark.parametrize("which", READERS)
@pytest.mark.parametrize("compression", [None, "zstd"])
def test_after_gives_every_record_its_set_after_decode_fields(which: str,
                                                              compression: str | None) -> None:
    data = encode_batch([(None, b"v%d" % i) for i in range(4)], base_offset=10,
                        compression=compression)
    with reader(which):
        got = decode_records(data, record_type=_Counted, topic="t", partition=2, after=(7,),
                             from_offset=11)
        assert [(r.offset, r.count, r.topic, r.partition) for r in got] == [
            (o, 7, "t", 2) for o in (11, 12, 13)]
        # Without a value the field stays unset, for the caller to set.
        bare = decode_records(data, record_type=_Counted, topic="t", partition=2)
        assert all(_unset(r) >= {"count"} for r in bare)
        with pytest.raises(ConfigError, match="1 SET_AFTER_DECODE"):
            decode_records(data, record_type=_Counted, topic="t", partition=2, after=(7, 8))
        with pytest.raises(ConfigError, match="no SET_AFTER_DECODE"):
            decode_records(data, after=(7,))


@needs_native
def test_the_c_reader_checks_the_after_values_against_the_class() -> None:
    assert native.module is not None
    data = encode_batch([(None, b"v")], base_offset=0)
    with pytest.raises(TypeError, match="after holds 2 values"):
        native.module.read_records(data, 61, len(data), 1, 0, 0, 0, 0, [], _Counted, "t", 0,
                                   True, -2**63, (1, 2))


@pytest.mark.parametrize("which", READERS)
@pytest.mark.parametrize(("name", "data"), CORPUS, ids=[name for name, _ in CORPUS])
def test_a_view_of_a_frame_reads_as_its_bytes(which: str, name: str, data: bytes) -> None:
    # The C loop reads an answer's view in place; the Python loops and legacy entries copy it
    # first. Either way the records are the same, their keys and values bytes of their own.
    with reader(which):
        from_bytes = outcome(lambda: as_data([attrs.evolve(
            decode_batches(data)[0], records=decode_records(data))]) if data else [])
        frame = bytearray(b"head" + data)
        view = memoryview(frame)[4:]
        from_view = outcome(lambda: as_data([attrs.evolve(
            decode_batches(view)[0], records=decode_records(view))]) if data else [])
        got = outcome(lambda: decode_records(view))
    assert from_view == from_bytes
    if isinstance(got, list):
        frame[4:] = bytes(len(data))  # the frame reused: the records keep what they read
        assert all(isinstance(v, (bytes, type(None))) for r in got for v in (r.key, r.value))
        assert as_data([attrs.evolve(decode_batches(data)[0], records=got)]) == from_bytes


# --- a whole record set in one call (csrc/record_set.c) ------------------------------------------


def _set_read(data: bytes | bytearray | memoryview, **kwargs: Any) -> tuple[bool, list[Record]]:
    """What read_v2_set makes of ``data`` (whether it read it, and the records), the list
    starting with one record in it, which it must leave alone when it gives up."""
    out: list[Record] = [Record(0, 0, None, b"before")]
    make = _make(kwargs.pop("record_type", Record), kwargs.pop("topic", None),
                            kwargs.pop("partition", None), kwargs.pop("after", ()))
    read = batch_read._read_set_native(data, kwargs.pop("check_crc", True), out, make,
                                       kwargs.pop("up_to", None), kwargs.pop("from_offset", None))
    assert not kwargs
    assert out[0].value == b"before"
    return read, out[1:]


def _walked(data: bytes | bytearray | memoryview, **kwargs: Any) -> list[Any]:
    """The records the entry-by-entry walk reads (the C loop per batch), as data."""
    with reader("c"):
        out: list[Record] = []
        make = _make(kwargs.get("record_type", Record), kwargs.get("topic"),
                                kwargs.get("partition"), kwargs.get("after", ()))
        for _ in _entries(data, kwargs.get("topic"), kwargs.get("partition"), True, 2**30, out,
                          False, make, kwargs.get("up_to"), kwargs.get("from_offset")):
            pass
    return [attrs.astuple(r, recurse=False) for r in out]


@needs_native
@pytest.mark.parametrize("kwargs", [
    {}, {"up_to": 130}, {"from_offset": 105}, {"from_offset": 140, "up_to": 140},
    {"up_to": 99}, {"record_type": _Counted, "topic": "t", "partition": 4, "after": (2,)},
    {"record_type": ConsumerRecord, "topic": "t", "partition": 4, "from_offset": 70},
])
def test_a_set_of_uncompressed_v2_batches_is_read_in_one_call_as_the_walk_reads_it(
        kwargs: dict[str, Any]) -> None:
    data = b"".join(encode_batch(rows(40, s), base_offset=100 + 40 * s) for s in range(3))
    frame = bytearray(b"xx" + data + b"\x00\x00\x00")  # a view into a frame, a cut entry after
    view = memoryview(frame)[2:]
    read, got = _set_read(view, **dict(kwargs))
    assert read
    assert [attrs.astuple(r, recurse=False) for r in got] == _walked(view, **kwargs)
    if "after" in kwargs:
        assert {r.count for r in got} == {2}  # type: ignore[attr-defined]


@needs_native
def test_a_set_it_does_not_read_is_left_to_the_walk_untouched() -> None:
    plain = encode_batch(rows(5, 1), base_offset=0)
    bad_crc = bytearray(plain)
    bad_crc[plain.index(b"\x01" * 38) + 5] ^= 0xFF  # inside a value: the records still read
    bad_record = recrc_v2(bytearray(plain[:61]) + b"\x7e" + plain[62:])  # a length past the end
    cases = {
        "compressed": plain + encode_batch(rows(5, 2), base_offset=5, compression="gzip"),
        "control": encode_control_batch(1, producer_id=9, producer_epoch=0, base_offset=5),
        "legacy": SEEDS[0] if SEEDS[0][16] < 2 else next(s for s in SEEDS if s[16] < 2),
        "bad CRC": bytes(bad_crc),
        "malformed record": bad_record,
        "short length": plain[:8] + b"\x00\x00\x00\x05" + plain[12:],
    }
    for name, data in cases.items():
        assert _set_read(data) == (False, []), name
    # Without the CRC check the set with the bad one is read, as the walk reads it.
    read, got = _set_read(bytes(bad_crc), check_crc=False)
    assert read and len(got) == 5
