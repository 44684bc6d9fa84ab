"""A group as ``describe`` and ``lag`` show it: description, members and per-partition offsets.

Lag is the log end minus the committed offset, as kafka-consumer-groups.sh computes it (not
clamped at 0). The log end comes from ``Admin.log_end_offsets``, which is the high watermark on
every broker; a committed partition whose topic is gone has neither. Partitions are those with
a commit plus those assigned to a member.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from assignors import TopicPartition
from groupkit.admin_values import GroupDescription, MemberDescription

if TYPE_CHECKING:
    from groupkit.admin import Admin

OFFSET_HEADERS = ("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                  "CONSUMER-ID", "HOST", "CLIENT-ID")
MEMBER_HEADERS = ("CONSUMER-ID", "GROUP-INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNMENT")


@attrs.frozen
class OffsetRow:
    """One partition of a group: committed offset, log end, lag and owner (None: unknown)."""

    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int | None
    lag: int | None
    member: MemberDescription | None

    def cells(self) -> tuple[Any, ...]:
        m = self.member
        return (self.topic, self.partition, self.current_offset, self.log_end_offset,
                self.lag, m.member_id if m else None, m.client_host if m else None,
                m.client_id if m else None)

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition,
                "current_offset": self.current_offset, "log_end_offset": self.log_end_offset,
                "lag": self.lag, "member_id": self.member.member_id if self.member else None}


@attrs.frozen
class GroupView:
    """A described group and its offset rows, sorted by topic and partition."""

    description: GroupDescription
    offsets: tuple[OffsetRow, ...]

    @property
    def total_lag(self) -> int:
        return sum(r.lag for r in self.offsets if r.lag is not None)

    @property
    def exists(self) -> bool:
        """False for a group the coordinator does not know (Kafka describes it as Dead)."""
        return not (self.description.state == "Dead" and not self.offsets)

    def to_json(self) -> dict[str, Any]:
        d = self.description
        c = d.coordinator
        return {
            "group": d.group_id, "state": d.state or None,
            "protocol_type": d.protocol_type or None, "protocol": d.protocol or None,
            "group_epoch": d.group_epoch,
            "coordinator": {"id": c.node_id, "host": c.host, "port": c.port} if c else None,
            "members": [_member_json(m) for m in d.members],
            "offsets": [r.to_json() for r in self.offsets],
        }


def _member_json(m: MemberDescription) -> dict[str, Any]:
    out: dict[str, Any] = {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                           "client_id": m.client_id or None, "host": m.client_host or None,
                           "assignment": _partitions_json(m.assignment)}
    if m.member_epoch is not None:  # a consumer-protocol (KIP-848) member
        out.update(member_epoch=m.member_epoch,
                   target_assignment=_partitions_json(m.target_assignment),
                   subscribed_pattern=m.subscribed_pattern)
    return out


def _partitions_json(partitions: Iterable[TopicPartition] | None) -> list[dict[str, Any]] | None:
    return None if partitions is None else [{"topic": tp.topic, "partition": tp.partition}
                                            for tp in partitions]


def assignment_text(m: MemberDescription) -> str | None:
    """``orders: 0,1; audit: 0`` for a decoded assignment; the raw size otherwise."""
    if m.assignment is not None:
        by_topic: dict[str, list[int]] = {}
        for tp in m.assignment:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        return "; ".join(f"{t}: {','.join(map(str, sorted(p)))}"
                         for t, p in sorted(by_topic.items())) or "(none)"
    if m.assignment_bytes:
        return f"({len(m.assignment_bytes)} bytes)"
    return None


def member_cells(m: MemberDescription) -> tuple[Any, ...]:
    return (m.member_id, m.group_instance_id, m.client_id or None, m.client_host or None,
            assignment_text(m))


def gather(admin: Admin, group_ids: Iterable[str]) -> list[GroupView]:
    """Describe ``group_ids`` and compute their offsets and lag, in the order given."""
    ids = list(dict.fromkeys(group_ids))
    described = admin.describe_groups(ids)
    committed = {g: admin.list_group_offsets(g) for g in ids}
    owners: dict[str, dict[TopicPartition, MemberDescription]] = {}
    for g in ids:
        owners[g] = {tp: m for m in described[g].members for tp in (m.assignment or ())}
    partitions = {tp for g in ids for tp in (*committed[g], *owners[g])}
    # Commits outlive their topic: a partition that no longer exists has no log end (and no
    # lag), and must not fail the rest.
    counts = admin.list_topics() if partitions else {}
    live = sorted(tp for tp in partitions if tp.partition < counts.get(tp.topic, 0))
    ends = admin.log_end_offsets(live) if live else {}
    views = []
    for g in ids:
        rows = []
        for tp in sorted({*committed[g], *owners[g]}):
            current = committed[g][tp].offset if tp in committed[g] else None
            end = ends.get(tp)
            lag = end - current if end is not None and current is not None else None
            rows.append(OffsetRow(tp.topic, tp.partition, current, end, lag,
                                  owners[g].get(tp)))
        views.append(GroupView(described[g], tuple(rows)))
    return views
