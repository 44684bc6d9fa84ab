"""A leader's consumer protocol codec in C (assignors._native: SubscriptionReader,
encode_assignment) and the Python SubscriptionReader against the generic Python path in
assignors.wire, on the same bytes and values: the same results, and malformed bytes or values
only Python handles raising the same error."""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator

import pytest
from hypothesis import given, strategies as st

from assignors import MemberAssignment, TopicPartition, sticky_loops, wire
from assignors.wire import (
    SubscriptionDecoder,
    decode_assignment,
    encode_assignment,
    read_subscription,
)
from groupkit.errors import CorruptFrame
from groupkit.protocol.consumer import Subscription

needs_native = pytest.mark.skipif(
    sticky_loops.NATIVE is None, reason="the assignors C extension is not built"
)
TP = TopicPartition
#: The readers, each made fresh per use: Python's, and C's when built.
READERS = [wire.SubscriptionReader]
if sticky_loops.MODULE is not None:
    READERS.append(sticky_loops.MODULE.SubscriptionReader)
each_reader = pytest.mark.parametrize("kind", READERS, ids=lambda k: k.__module__)
NAMES = st.sampled_from(["a", "b", "topic-0001", "é", "日本", "", "z" * 300])
topics = NAMES | st.text(max_size=8)
int32s = st.integers(-(2**31), 2**31 - 1)
ids = int32s | st.integers(-3, 70_000)
subscriptions = st.builds(
    Subscription,
    topics=st.lists(topics, max_size=6),
    user_data=st.none() | st.binary(max_size=20),
    owned_partitions=st.lists(st.tuples(topics, st.lists(ids, max_size=6)), max_size=5),
    generation_id=int32s,
    rack_id=st.none() | st.text(max_size=10),
)


@contextlib.contextmanager
def python_codec() -> Iterator[None]:
    saved = sticky_loops.active
    sticky_loops.active = sticky_loops.PYTHON
    try:
        yield
    finally:
        sticky_loops.active = saved


def reader(kind=None):  # type: ignore[no-untyped-def]
    return (kind or READERS[-1])(TopicPartition)


def outcome(read, data: bytes):  # type: ignore[no-untyped-def]
    """What reading gives: the parts, or the error's type and message."""
    try:
        return read(data)
    except CorruptFrame as exc:
        return type(exc), str(exc)


def assert_read_alike(data: bytes, kind: type) -> None:
    """The reader refuses (None) exactly what Python refuses, and reads the rest alike; the
    decoders, which fall back to Python on a refusal, give the same values or error."""
    native = reader(kind).read(data)
    python = outcome(read_subscription, data)
    if native is None:
        assert python[0] is CorruptFrame
    else:
        assert native == python
    decoded, decoded_in_python = both_decoders(data)
    assert decoded == decoded_in_python


def both_decoders(data: bytes) -> tuple[object, object]:
    native = outcome(lambda d: SubscriptionDecoder().decode(d, "i-1"), data)
    python = outcome(lambda d: SubscriptionDecoder(native=False).decode(d, "i-1"), data)
    return native, python


@each_reader
@given(sub=subscriptions, version=st.integers(0, 5), extra=st.binary(max_size=6))
def test_reader_gives_the_python_parts_for_every_version(kind, sub, version, extra):
    data = sub.encode(min(version, 3))
    if version > 3:  # a newer member: its v3 prefix, then fields this leader does not know
        data = struct.pack(">h", version) + data[2:] + extra
    parts = reader(kind).read(data)
    assert parts == read_subscription(data)
    owned = [TP(t, p) for t, ps in sub.owned_partitions for p in ps] if version >= 1 else []
    assert parts[2] == tuple(owned) and all(type(tp) is TP for tp in parts[2])
    native, python = both_decoders(data)
    assert native == python


@each_reader
@given(sub=subscriptions, version=st.integers(0, 3))
def test_every_truncation_is_refused_by_both_with_the_python_error(kind, sub, version):
    data = sub.encode(version)
    for cut in range(len(data)):
        assert_read_alike(data[:cut], kind)
    with pytest.raises(CorruptFrame):
        SubscriptionDecoder().decode(data[:-1])


@each_reader
@given(st.binary(max_size=90))
def test_any_bytes_read_alike(kind, data):
    assert_read_alike(data, kind)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        struct.pack(">hi", -1, 0) + b"\xff\xff\xff\xff",  # negative version
        struct.pack(">hi", 0, 2**31 - 1) + b"\x00" * 10,  # a topic count past the end
        struct.pack(">hih", 0, 1, -2) + b"\xff\xff\xff\xff",  # a negative name length
        struct.pack(">hih", 0, 1, 2) + b"\xc3\x28" + b"\xff\xff\xff\xff",  # not UTF-8
        struct.pack(">hii", 0, 0, -2),  # user data of length -2
        # an owned topic not UTF-8 (half a surrogate), then two ids of which one is there
        struct.pack(">hiii", 1, 0, -1, 1) + struct.pack(">h", 2) + b"\xed\xa0" + struct.pack(">i", 0),
        struct.pack(">hiiihii", 1, 0, -1, 1, 0, 2, 7),
        struct.pack(">hiiiih", 3, 0, -1, 0, 5, 2) + b"\xffr",  # rack not UTF-8
    ],
)
@each_reader
def test_malformed_bytes_raise_the_same_named_error(kind, data):
    assert reader(kind).read(data) is None
    native, python = both_decoders(data)
    assert python[0] is CorruptFrame
    assert native == python


@each_reader
def test_members_with_the_same_topics_share_one_tuple_and_names(kind):
    read = reader(kind)
    first = read.read(Subscription(["a", "b"], owned_partitions=[("b", [1, 2])]).encode())
    other = read.read(Subscription(["b"]).encode())
    second = read.read(Subscription(["a", "b"], owned_partitions=[("a", [0])]).encode())
    assert first[0] is second[0] and other[0] == ("b",) and other[0][0] is first[0][1]
    # The same list twice in a row (the usual case), then what follows it, read alike.
    data = Subscription(["a", "b"], b"u", [("a", [0])], 4, "r").encode()
    assert read.read(data) == read.read(data) == read_subscription(data)
    assert first[2][0].topic is first[0][1] and second[2][0].topic is first[0][0]
    # Python's own values, without the sharing.
    assert read_subscription(Subscription(["a", "b"]).encode())[0] is not first[0]


partitions = st.lists(st.tuples(topics, ids).map(lambda pair: TP(*pair)), max_size=40)


def both_encoders(assignment: MemberAssignment, version: int) -> tuple[object, object]:
    def run() -> object:
        try:
            return encode_assignment(assignment, version)
        except Exception as exc:  # the Python path's own error, whatever it is
            return type(exc), str(exc)

    native = run()
    with python_codec():
        python = run()
    return native, python


@needs_native
@given(parts=partitions, user_data=st.binary(max_size=12), version=st.integers(0, 3))
def test_encoded_assignments_are_the_python_bytes(parts, user_data, version):
    assignment = MemberAssignment(parts, user_data)
    native, python = both_encoders(assignment, version)
    assert isinstance(native, bytes)
    assert native == python
    assert sorted(decode_assignment(native).partitions) == sorted(parts)


@needs_native
@pytest.mark.parametrize(
    ("parts", "user_data", "version"),
    [
        ([TP("a", 2**31)], b"", 3),  # an id past int32
        ([TP("a", -(2**31) - 1)], b"", 3),
        ([TP("\ud800", 0)], b"", 3),  # no UTF-8 for a lone surrogate
        ([TP("x" * 40_000, 0)], b"", 3),  # a name too long for the int16 length
        ([TP("a", 0)], b"", 4),  # no such version
        ([TP("a", 0)], b"", -1),
        ([TP("a", "0")], b"", 3),  # not an int id
        ([TP(0, 0)], b"", 3),  # not a str topic
        ([TP("a", 1), TP("a", True)], b"", 3),  # a bool is an int to Python's struct
        ([TP("b", 1), TP("a", 0)], bytearray(b"u"), 2),  # user data not bytes
    ],
)
def test_values_only_python_handles_give_its_result_or_error(parts, user_data, version):
    native, python = both_encoders(MemberAssignment(parts, user_data), version)
    assert native == python


@needs_native
def test_many_topics_in_any_order_come_out_in_name_order():
    # Code point order, as Python sorts str: astral and non-ASCII names, prefixes, a NUL.
    import random

    names = [f"t{i}" for i in range(400)] + ["", "a", "a\x00", "ab", "é", "ÿ", "Ā", "日本",
                                             "\U0001f600", "\uffff", "z" * 3]
    parts = [TP(name, p) for name in names for p in (3, 1)]
    random.Random(5).shuffle(parts)
    native, python = both_encoders(MemberAssignment(parts, b"x"), 3)
    assert native == python
    assert [t for t, _ in decode_assignment(native).partitions[::2]] == sorted(names)


@needs_native
def test_equal_topic_names_of_distinct_str_objects_are_one_topic():
    name = "".join(["to", "pic"])
    parts = [TP("topic", 3), TP("b", 1), TP(name, 1)]
    native, python = both_encoders(MemberAssignment(parts), 3)
    assert native == python
    assert decode_assignment(native).partitions == (TP("b", 1), TP("topic", 1), TP("topic", 3))


@needs_native
def test_the_python_path_is_chosen_with_the_python_loops():
    with python_codec():
        assert type(SubscriptionDecoder()._reader) is wire.SubscriptionReader
    assert type(SubscriptionDecoder()._reader) is not wire.SubscriptionReader
    assert type(SubscriptionDecoder(native=False)._reader) is wire.SubscriptionReader


@each_reader
def test_a_reader_keeps_many_names_apart(kind):
    # Past the name table's first size (64 names): every name is found again, none mixed up.
    read = reader(kind)
    names = [f"topic-{i:04d}-é" if i % 3 else f"t{i}" for i in range(700)]
    for step in (1, 7):
        members = [Subscription(names[k::step], owned_partitions=[(names[(k * 13) % 700], [k, 0])])
                   for k in range(20)]
        for sub in members:
            data = sub.encode()
            assert read.read(data) == read_subscription(data)


@needs_native
def test_reading_and_encoding_keep_nothing_behind():
    # The same bytes read and an assignment encoded 2,000 times: the memory in use stays put
    # (a lost reference per call would leave an object, some 50 bytes or more, behind each time).
    import tracemalloc

    read = reader()
    data = Subscription(["a", "b"], b"u", [("a", [1, 70_000]), ("b", [2])], 3, "r").encode()
    assignment = MemberAssignment([TP("b", 1), TP("a", 2)], b"x")
    bad = data[:-1]
    tracemalloc.start()
    try:
        for _ in range(2):  # the first round fills what the reader keeps (names, small ids)
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(2_000):
                read.read(data)
                read.read(bad)
                encode_assignment(assignment, 3)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 20_000
