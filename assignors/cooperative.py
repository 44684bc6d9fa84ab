"""The COOPERATIVE rule a leader checks before SyncGroup: nothing moves in one round."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from assignors._types import MemberAssignment, TopicPartition
from groupkit.errors import GroupkitError


class CooperativeAssignmentError(GroupkitError):
    """An assignor gave a partition to one member while another still owns it (KIP-429).

    The assignor is at fault: fix it to withhold such partitions for one rebalance.
    """


def transferred_partitions(
    owned: Mapping[str, Iterable[TopicPartition]],
    assignment: Mapping[str, MemberAssignment | Iterable[TopicPartition]],
) -> set[TopicPartition]:
    """Partitions revoked from one member and added to another in the same round."""
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    for member_id in set(owned) | set(assignment):
        before = set(owned.get(member_id, ()))
        given = assignment.get(member_id, ())
        after = set(given.partitions if isinstance(given, MemberAssignment) else given)
        added |= after - before
        revoked |= before - after
    return added & revoked


def validate_cooperative(
    owned: Mapping[str, Iterable[TopicPartition]],
    assignment: Mapping[str, MemberAssignment | Iterable[TopicPartition]],
) -> None:
    """Raise CooperativeAssignmentError when ``assignment`` moves a partition in one round."""
    moved = transferred_partitions(owned, assignment)
    if moved:
        shown = ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(moved)[:10])
        raise CooperativeAssignmentError(
            f"{len(moved)} partition(s) would change owner within one cooperative rebalance "
            f"({shown}); the assignor must leave them unassigned until the owner revokes them"
        )
