"""Value types of the public API that several layers share."""

from __future__ import annotations

from typing import Any

import attrs

from groupkit.errors import ConfigError

#: What the protocol carries for "no leader epoch known" (Java's NO_PARTITION_LEADER_EPOCH).
NO_LEADER_EPOCH = -1


def _metadata(value: str | None) -> str:
    # Java's OffsetAndMetadata stores a null metadata as "" (the broker does the same).
    return "" if value is None else value


def _offset(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(
            f"an OffsetAndMetadata's offset is the next offset to read, a whole number >= 0;"
            f" got {value!r}")


def _str(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, str):
        raise ConfigError(f"an OffsetAndMetadata's metadata must be a string, got {value!r}")


def _leader_epoch(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < 0):
        raise ConfigError(
            f"an OffsetAndMetadata's leader_epoch must be a whole number >= 0, or None when it"
            f" is not known; got {value!r}")


@attrs.frozen
class OffsetAndMetadata:
    """A committed position, as Java's OffsetAndMetadata: the next offset to read, the commit's
    metadata string ("" when none, as Java stores a null one) and the leader epoch of the last
    record read (None when not known, Java's empty ``leaderEpoch()``).

    ``Consumer.committed`` and ``Admin.list_group_offsets`` return these; ``commit`` and
    ``Admin.alter_consumer_group_offsets`` take them. A negative offset or leader epoch raises
    ``ConfigError``, as Java's constructor refuses them.
    """

    offset: int = attrs.field(validator=_offset)
    metadata: str = attrs.field(default="", converter=_metadata, validator=_str)
    leader_epoch: int | None = attrs.field(default=None, validator=_leader_epoch)

    @classmethod
    def from_wire(cls, offset: int, metadata: str | None,
                  leader_epoch: int) -> OffsetAndMetadata | None:
        """What an OffsetFetch answer's partition says, or None where the group has no
        committed offset (offset -1); a leader epoch of -1 is not known (None)."""
        if offset < 0:
            return None
        return cls(offset, metadata, None if leader_epoch < 0 else leader_epoch)

    @property
    def wire_leader_epoch(self) -> int:
        """The leader epoch as an OffsetCommit carries it (-1 when not known)."""
        return NO_LEADER_EPOCH if self.leader_epoch is None else self.leader_epoch


@attrs.frozen
class ConsumerGroupMetadata:
    """A consumer's group membership, for ``Producer.send_offsets_to_transaction`` (KIP-447).

    TxnOffsetCommit v3 carries it, so the group coordinator refuses offsets from a member the
    group has fenced out (a generation or member id that is no longer current). A consumer
    not in the group (yet) gives generation -1 and an empty member id, as Java's does.
    """

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
