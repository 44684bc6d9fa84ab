"""Between the consumer embedded protocol (Subscription/Assignment bytes) and assignor values.

A group leader decodes every member's Subscription and encodes every member's Assignment in each
rebalance: for 2,000 members on a million partitions, 2,000 lists of every topic name, a million
owned partitions and a million assigned ones. Where the assignors' C loops are active
(``sticky_loops.active``; ``GROUPKIT_NO_NATIVE=1`` switches both off) both run in C
(``assignors._native``, csrc/assignors/wire.c), with the Python path here as their twin: the
same values from the same bytes and the same bytes from the same values
(tests/assignors/test_assignor_wire_native.py runs both). Malformed bytes, and values only the
Python path handles, go to the Python path, so the errors are its own. Without C the
Subscriptions are still read by ``SubscriptionReader`` here, which shares topic lists and names
as the C reader does, and the generic reader (``read_subscription``) only says what is wrong.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from types import ModuleType

from assignors import sticky_loops
from assignors._types import MemberAssignment, MemberSubscription, TopicPartition, group_by_topic
from groupkit.protocol.consumer import Assignment, Subscription

#: A Subscription as (topics, user_data, owned partitions, generation, rack).
SubscriptionParts = tuple[tuple[str, ...], bytes | None, tuple[TopicPartition, ...], int, str | None]


def _codec() -> ModuleType | None:
    """The C codec when the C loops are the active ones."""
    return sticky_loops.MODULE if sticky_loops.active is sticky_loops.NATIVE else None


def encode_subscription(
    topics: Iterable[str],
    owned_partitions: Iterable[TopicPartition],
    generation: int,
    rack: str | None,
    user_data: bytes | None,
) -> bytes:
    """Consumer Subscription v3 bytes (readers of older versions read the prefix they know)."""
    return Subscription(
        topics=sorted(set(topics)),
        user_data=user_data,
        owned_partitions=group_by_topic(owned_partitions),
        generation_id=generation,
        rack_id=rack,
    ).encode(version=3)


def read_subscription(data: bytes) -> SubscriptionParts:
    """Subscription bytes as ``SubscriptionParts``, in Python (the twin of the C reader's
    ``read``); raises CorruptFrame on malformed bytes."""
    sub = Subscription.decode(data)
    owned = tuple([TopicPartition(t, p) for t, partitions in sub.owned_partitions for p in partitions])
    return tuple(sub.topics), sub.user_data, owned, sub.generation_id, sub.rack_id


_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_ARRAYS: dict[int, struct.Struct] = {}


class SubscriptionReader:
    """The C reader (``assignors._native.SubscriptionReader``) in Python, for one rebalance.

    ``read(data)`` gives ``SubscriptionParts``, or None when the bytes are malformed (then
    ``read_subscription`` raises the error); it reads what ``read_subscription`` reads, but
    members sending the same topic list (the same bytes) share one tuple of it, each topic
    name is made once, and partition ids are read a topic's array at a time.
    """

    def __init__(self, tp_type: type) -> None:
        self._tp_type = tp_type
        self._lists: dict[bytes, tuple[str, ...]] = {}
        self._last: tuple[bytes, tuple[str, ...]] = (b"", ())
        self._names: dict[bytes, str] = {}

    def read(self, data: bytes) -> SubscriptionParts | None:
        try:
            return self._read(data if type(data) is bytes else bytes(data))
        except (struct.error, UnicodeDecodeError):  # past the end, or a name not UTF-8
            return None

    def _name(self, raw: bytes) -> str:
        name = self._names.get(raw)
        if name is None:
            name = self._names[raw] = raw.decode()
        return name

    def _topics(self, data: bytes, pos: int) -> tuple[tuple[str, ...], int] | None:
        last, topics = self._last
        if last and data.startswith(last, pos):
            # The same bytes as the last list read: they read as that list, and end with it.
            return topics, pos + len(last)
        end, start = len(data), pos
        (count,) = _INT32.unpack_from(data, pos)
        pos += 4
        if not 0 <= count <= end - pos:
            return None
        spans = []
        for _ in range(count):
            (size,) = _INT16.unpack_from(data, pos)
            pos += 2
            if not 0 <= size <= end - pos:
                return None
            spans.append((pos, pos + size))
            pos += size
        key = data[start:pos]
        found = self._lists.get(key)
        if found is None:
            found = self._lists[key] = tuple([self._name(data[a:b]) for a, b in spans])
        self._last = (key, found)
        return found, pos

    def _read(self, data: bytes) -> SubscriptionParts | None:
        end = len(data)
        (version,) = _INT16.unpack_from(data, 0)
        if version < 0:
            return None
        read = self._topics(data, 2)
        if read is None:
            return None
        topics, pos = read
        (size,) = _INT32.unpack_from(data, pos)
        pos += 4
        user_data = None
        if size != -1:
            if not 0 <= size <= end - pos:
                return None
            user_data = data[pos : pos + size]
            pos += size
        owned: tuple[TopicPartition, ...] = ()
        if version >= 1:
            (entries,) = _INT32.unpack_from(data, pos)
            pos += 4
            if not 0 <= entries <= end - pos:
                return None
            partitions: list[TopicPartition] = []
            make, tp_type = tuple.__new__, self._tp_type
            for _ in range(entries):
                (size,) = _INT16.unpack_from(data, pos)
                pos += 2
                if not 0 <= size <= end - pos:
                    return None
                name = self._name(data[pos : pos + size])
                pos += size
                (count,) = _INT32.unpack_from(data, pos)
                pos += 4
                if not 0 <= count <= (end - pos) // 4:
                    return None
                array = _ARRAYS.get(count) or _ARRAYS.setdefault(count, struct.Struct(f">{count}i"))
                partitions += [make(tp_type, (name, p)) for p in array.unpack_from(data, pos)]
                pos += 4 * count
            owned = tuple(partitions)
        generation = -1
        if version >= 2:
            (generation,) = _INT32.unpack_from(data, pos)
            pos += 4
        rack = None
        if version >= 3:
            (size,) = _INT16.unpack_from(data, pos)
            pos += 2
            if size != -1:
                if not 0 <= size <= end - pos:
                    return None
                rack = data[pos : pos + size].decode()
        return topics, user_data, owned, generation, rack


class SubscriptionDecoder:
    """Decodes the Subscriptions of one rebalance's members with one reader: the C one when
    active, else ``SubscriptionReader``; ``native`` False asks for the Python one whatever is
    active. Bytes the reader refuses are read by ``read_subscription``, for its error."""

    def __init__(self, native: bool = True) -> None:
        codec = _codec() if native else None
        self._reader = (SubscriptionReader if codec is None else codec.SubscriptionReader)(
            TopicPartition)

    def decode(self, data: bytes, group_instance_id: str | None = None) -> MemberSubscription:
        """A member's JoinGroup metadata bytes as the assignor input."""
        parts = self._reader.read(data)
        topics, user_data, owned, generation, rack = read_subscription(data) if parts is None else parts
        return MemberSubscription(
            topics=topics,
            owned_partitions=owned,
            generation=generation,
            rack=rack,
            user_data=user_data or b"",
            group_instance_id=group_instance_id,
        )


def decode_subscription(data: bytes, group_instance_id: str | None = None) -> MemberSubscription:
    """A member's JoinGroup metadata bytes as the assignor input."""
    return SubscriptionDecoder().decode(data, group_instance_id)


def encode_assignment(assignment: MemberAssignment, version: int = 3) -> bytes:
    """Consumer Assignment bytes for SyncGroup; always a real assignment, even when empty.

    Partitions go grouped by topic, topics in name order, ids in order, as ``group_by_topic``
    lays them out.
    """
    codec = _codec()
    if codec is not None:
        data = codec.encode_assignment(assignment.partitions, assignment.user_data, version)
        if data is not None:
            return data
    return Assignment(
        partitions=group_by_topic(assignment.partitions),
        user_data=assignment.user_data or None,
    ).encode(version=version)


def decode_assignment(data: bytes) -> MemberAssignment:
    """The assignment a member received in SyncGroup."""
    received = Assignment.decode(data)
    return MemberAssignment(
        [TopicPartition(topic, p) for topic, partitions in received.partitions for p in partitions],
        received.user_data or b"",
    )
