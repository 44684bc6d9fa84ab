"""The consumer embedded protocol (protocol_type "consumer"): Subscription and Assignment.

These are the opaque bytes members put in JoinGroup metadata and the leader puts in SyncGroup
assignments. Each starts with an int16 version; versions are not flexible.

Subscription: v0 topics and user_data; v1 adds owned_partitions (cooperative rebalancing);
v2 adds generation_id; v3 adds rack_id. Assignment has the same layout (partitions, user_data)
at v0-v3. A reader meeting a version newer than 3 reads the v3 prefix and ignores the rest, and
trailing bytes are ignored at every version, as Kafka's own reader does, so that members of
newer clients can share a group with this one.
"""

from __future__ import annotations

import attrs

from groupkit.errors import UnsupportedVersionError
from groupkit.protocol.primitives import Reader, Writer

#: The newest version of Subscription and Assignment that groupkit writes and fully reads.
LATEST_VERSION = 3

TopicPartitions = list[tuple[str, list[int]]]

def _check_encode_version(kind: str, version: int) -> None:
    if not 0 <= version <= LATEST_VERSION:
        raise UnsupportedVersionError(
            f"consumer protocol {kind} has versions 0-{LATEST_VERSION}, not {version}")


def _write_partitions(w: Writer, entries: TopicPartitions) -> None:
    w.int32(len(entries))
    for topic, partitions in entries:
        w.string(topic)
        w.int32(len(partitions))
        for partition in partitions:
            w.int32(partition)


def _read_partitions(r: Reader) -> TopicPartitions:
    entries: TopicPartitions = []
    for _ in range(r.array_length(compact=False)):
        topic = r.string()
        entries.append((topic, [r.int32() for _ in range(r.array_length(compact=False))]))
    return entries


def _start(data: bytes | bytearray | memoryview, kind: str) -> tuple[Reader, int]:
    r = Reader(data, context=f"consumer protocol {kind}")
    if r.remaining() < 2:
        raise r.fail(f"{kind} needs at least a 2-byte version, got {r.remaining()} bytes")
    version = r.int16()
    if version < 0:
        raise r.fail(f"{kind} has negative version {version}")
    return r, version


@attrs.frozen
class Subscription:
    """What a member asks for: its topics, plus what it owns for cooperative rebalancing.

    ``version`` is the version a decoded value was read from (None when built locally); it is
    not part of equality.
    """

    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = attrs.field(factory=list)
    generation_id: int = -1
    rack_id: str | None = None
    version: int | None = attrs.field(default=None, eq=False, kw_only=True)

    def encode(self, version: int = LATEST_VERSION) -> bytes:
        """Encode with the int16 version prefix; fields newer than ``version`` are dropped."""
        _check_encode_version("Subscription", version)
        w = Writer()
        w.int16(version)
        w.int32(len(self.topics))
        for topic in self.topics:
            w.string(topic)
        w.nullable_bytes(self.user_data)
        if version >= 1:
            _write_partitions(w, self.owned_partitions)
        if version >= 2:
            w.int32(self.generation_id)
        if version >= 3:
            w.nullable_string(self.rack_id)
        return w.getvalue()

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> Subscription:
        """Decode any version >= 0; raises CorruptFrame on short or malformed data."""
        r, version = _start(data, "Subscription")
        topics = [r.string() for _ in range(r.array_length(compact=False))]
        user_data = r.nullable_bytes()
        owned = _read_partitions(r) if version >= 1 else []
        generation_id = r.int32() if version >= 2 else -1
        rack_id = r.nullable_string() if version >= 3 else None
        return cls(topics, user_data, owned, generation_id, rack_id, version=version)


@attrs.frozen
class Assignment:
    """What the leader gives a member: topic partitions and optional assignor user data.

    ``version`` is the version a decoded value was read from (None when built locally); it is
    not part of equality.
    """

    partitions: TopicPartitions
    user_data: bytes | None = None
    version: int | None = attrs.field(default=None, eq=False, kw_only=True)

    def encode(self, version: int = LATEST_VERSION) -> bytes:
        """Encode with the int16 version prefix (the layout is the same at every version)."""
        _check_encode_version("Assignment", version)
        w = Writer()
        w.int16(version)
        _write_partitions(w, self.partitions)
        w.nullable_bytes(self.user_data)
        return w.getvalue()

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> Assignment:
        """Decode any version >= 0; raises CorruptFrame on short or malformed data."""
        r, version = _start(data, "Assignment")
        partitions = _read_partitions(r)
        return cls(partitions, r.nullable_bytes(), version=version)
