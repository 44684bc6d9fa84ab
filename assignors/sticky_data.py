"""Java's StickyAssignorUserData: a member's previous assignment, carried in its subscription.

Layout (no version prefix on the wire): ``[topic: string, partitions: [int32]]`` then, in v1,
``generation: int32``. Java tries v1 then v0 on the bare bytes; kafka-python 3 writes an int16
version first, which is accepted too so such members still keep their partitions.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from assignors._types import TopicPartition, group_by_topic
from groupkit.errors import CorruptFrame
from groupkit.protocol.primitives import Writer

NO_GENERATION = -1
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_ARRAYS: dict[int, struct.Struct] = {}


def encode_sticky_user_data(
    partitions: Iterable[TopicPartition], generation: int = NO_GENERATION, version: int = 1
) -> bytes:
    """Encode a previous assignment as Java's StickyAssignor does (version 1 unless asked)."""
    writer = Writer()
    grouped = group_by_topic(partitions)
    writer.array_length(len(grouped), compact=False)
    for topic, numbers in grouped:
        writer.string(topic)
        writer.array_length(len(numbers), compact=False)
        writer.raw(struct.pack(f">{len(numbers)}i", *numbers))
    if version >= 1:
        writer.int32(generation)
    return writer.getvalue()


def decode_sticky_user_data(data: bytes) -> tuple[tuple[TopicPartition, ...], int]:
    """Previous partitions and generation (-1 when absent) from sticky user data.

    Raises CorruptFrame when the bytes match no known layout; the assignor then ignores them.
    """
    by_topic, generation = decode_sticky_user_data_by_topic(data)
    make = tuple.__new__
    partitions = [make(TopicPartition, (topic, p)) for topic, numbers in by_topic for p in numbers]
    return tuple(partitions), generation


def layouts(data: bytes) -> list[tuple[int, bool]]:
    """Where the user data may start and whether it ends in a generation, in the order tried:
    Java's v1 then v0 on the bare bytes, then behind kafka-python 3's int16 version prefix."""
    tried = [(0, True), (0, False)]
    if len(data) >= 2 and data[:2] in (b"\x00\x00", b"\x00\x01"):
        tried.append((2, data[1] == 1))
    return tried


def undecodable(data: bytes) -> CorruptFrame:
    """The error for user data that matches none of ``layouts``."""
    return CorruptFrame(
        f"sticky assignor user data ({len(data)} bytes) matches no known StickyAssignorUserData "
        "layout; the member's previous assignment is ignored"
    )


def decode_sticky_user_data_by_topic(data: bytes) -> tuple[list[tuple[str, tuple[int, ...]]], int]:
    """Like ``decode_sticky_user_data``, as ``[(topic, partition ids)]`` in wire order."""
    for start, with_generation in layouts(data):
        try:
            return _decode(data, start, with_generation)
        except CorruptFrame:
            continue
    raise undecodable(data)


def _decode(
    data: bytes, start: int, with_generation: bool
) -> tuple[list[tuple[str, tuple[int, ...]]], int]:
    # Hand-rolled rather than through Reader: a member of a large group sends one entry per
    # topic it owns, and a leader of 2,000 such members decodes a million of them.
    end = len(data)

    def corrupt(what: str, pos: int) -> CorruptFrame:
        return CorruptFrame(f"StickyAssignorUserData: {what} at byte {pos} of {end}")

    if start + 4 > end:
        raise corrupt("no topic count", start)
    (topics,) = _INT32.unpack_from(data, start)
    pos = start + 4
    if not 0 <= topics <= (end - pos) // 6:
        raise corrupt(f"topic count {topics} does not fit", pos)
    by_topic: list[tuple[str, tuple[int, ...]]] = []
    names: dict[bytes, str] = {}
    arrays = _ARRAYS
    for _ in range(topics):
        if pos + 2 > end:
            raise corrupt("topic name length cut short", pos)
        (size,) = _INT16.unpack_from(data, pos)
        pos += 2
        if size < 0 or pos + size + 4 > end:
            raise corrupt(f"topic name of {size} bytes does not fit", pos)
        raw = data[pos : pos + size]
        topic = names.get(raw)
        if topic is None:
            try:
                topic = names[raw] = raw.decode()
            except UnicodeDecodeError as exc:
                raise corrupt("topic name is not UTF-8", pos) from exc
        pos += size
        (count,) = _INT32.unpack_from(data, pos)
        pos += 4
        if count < 0 or pos + 4 * count > end:
            raise corrupt(f"{count} partition ids do not fit", pos)
        array = arrays.get(count) or arrays.setdefault(count, struct.Struct(f">{count}i"))
        by_topic.append((topic, array.unpack_from(data, pos)))
        pos += 4 * count
    generation = NO_GENERATION
    if with_generation:
        if pos + 4 > end:
            raise corrupt("generation cut short", pos)
        (generation,) = _INT32.unpack_from(data, pos)
        pos += 4
    if pos != end:
        raise corrupt(f"{end - pos} bytes left over", pos)
    return by_topic, generation
