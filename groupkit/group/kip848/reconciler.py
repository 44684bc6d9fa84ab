"""A consumer-protocol member's assignments and their reconciliation (sans-IO, no states).

The coordinator sends a target assignment by topic id; the member keeps the last target, the
assignment it reconciled last (what its acknowledgements carry), the partitions the
application holds, and the topic names it learnt from Metadata. Reconciling a target follows
Java's AbstractMembershipManager: resolve the names it can, revoke what the application holds
outside the target (``Revoked``; the application commits and runs ``on_partitions_revoked``,
then answers), then hand over the whole target (``Assigned``; the application runs
``on_partitions_assigned`` and answers), then acknowledge. The machine owns the states; this
class says what happened (``Step``) and which output carries it.
"""

from __future__ import annotations

import enum
import uuid

import attrs

from assignors import TopicPartition
from groupkit.group.kip848.heartbeat import NO_ASSIGNMENT, LocalAssignment, TopicIdPartitions
from groupkit.group.outputs import Assigned, Revoked
from groupkit.protocol.messages.metadata import MetadataResponse
from groupkit.protocol.primitives import NULL_UUID


class Step(enum.Enum):
    """What a reconciliation step came to."""

    NONE = "nothing to do now (a step is under way, or no name is known yet)"
    OUTPUT = "an output for the application; its answer moves the reconciliation on"
    RECONCILED = "the target (its resolvable part) is reconciled: acknowledge it"


@attrs.frozen
class _Run:
    """One reconciliation under way: the target it applies (names resolved) and its partitions."""

    target: LocalAssignment
    partitions: frozenset[TopicPartition]


@attrs.define
class Reconciler:
    """Target, reconciled and held assignments of one member, and the topic names it knows."""

    target: LocalAssignment = NO_ASSIGNMENT
    current: LocalAssignment = NO_ASSIGNMENT
    owned: frozenset[TopicPartition] = attrs.field(factory=frozenset)
    names: dict[uuid.UUID, str] = attrs.field(factory=dict)
    _run: _Run | None = None
    #: Revoked and Assigned outputs the application has not answered yet: a step waits for
    #: all of them, those of an abandoned reconciliation included.
    _unanswered: int = 0
    _revoking: bool = False

    @property
    def revoking(self) -> bool:
        """Whether a Revoked of the reconciliation under way waits for the application."""
        return self._revoking

    def receive(self, partitions: TopicIdPartitions) -> bool:
        """Take a target from the coordinator; True when it differs from the reconciled one."""
        replaced = self.target.replaced_by(partitions)
        if replaced is not None:
            self.target = replaced
        return self.target != self.current

    def unresolved(self) -> set[uuid.UUID]:
        """The target's topic ids without a known name."""
        return {t for t in self.target.partitions if t not in self.names}

    def learn(self, response: MetadataResponse) -> None:
        """Remember the names of the topics a Metadata answer (v10+) gave with their ids."""
        for topic in response.topics:
            if not topic.error_code and topic.name and topic.topic_id != NULL_UUID:
                self.names[topic.topic_id] = topic.name

    def reconcile(self, epoch: int, member_id: str, assignor: str) -> tuple[Step, Revoked | Assigned | None]:
        """Start reconciling the target, if none is under way and it differs from the current."""
        if self._run is not None or self._unanswered or self.target == self.current:
            return Step.NONE, None
        resolved = {t: parts for t, parts in self.target.partitions.items() if t in self.names}
        if not resolved and self.target.partitions and not self.owned:
            # Nothing to give up and nothing nameable yet: wait for the names rather than
            # acknowledge an empty assignment first (Java would reconcile the empty part).
            return Step.NONE, None
        if self.current.local_epoch != NO_ASSIGNMENT.local_epoch \
                and resolved == dict(self.current.partitions):
            # Only topics without a name yet differ: acknowledge the resolved part once (Java
            # does, under the target's local epoch), then wait for Metadata to name the rest.
            if self.current.local_epoch == self.target.local_epoch:
                return Step.NONE, None
            self.current = LocalAssignment(self.target.local_epoch, resolved)
            return Step.RECONCILED, None
        partitions = frozenset(TopicPartition(self.names[t], p)
                               for t, parts in resolved.items() for p in parts)
        self._run = _Run(LocalAssignment(self.target.local_epoch, resolved), partitions)
        revoked = self.owned - partitions
        if revoked:
            self.owned -= revoked
            self._revoking = True
            self._unanswered += 1
            return Step.OUTPUT, Revoked(epoch, frozenset(revoked))
        return Step.OUTPUT, self._assign(epoch, member_id, assignor)

    def answered(self, epoch: int, member_id: str, assignor: str) -> tuple[Step, Revoked | Assigned | None]:
        """The application answered a Revoked or an Assigned: the next step, if it is due."""
        if self._unanswered:
            self._unanswered -= 1
        run = self._run
        if self._unanswered or run is None:
            return Step.NONE, None
        if self._revoking:
            return Step.OUTPUT, self._assign(epoch, member_id, assignor)
        self._run = None
        self.current = run.target
        return Step.RECONCILED, None

    def abandon(self) -> None:
        """Stop the reconciliation under way (the member was fenced, left or rejoined); the
        answers still due to its outputs are waited for all the same."""
        self._run = None
        self._revoking = False

    def release(self) -> frozenset[TopicPartition]:
        """Forget every assignment; returns what the application held (now Lost or released)."""
        held = self.owned
        self.owned = frozenset()
        self.current = NO_ASSIGNMENT
        self.target = NO_ASSIGNMENT
        self.abandon()
        return held

    def forget_target(self) -> None:
        """A rejoin: the next target starts afresh (the held partitions stay until revoked)."""
        self.target = NO_ASSIGNMENT
        self.abandon()

    def _assign(self, epoch: int, member_id: str, assignor: str) -> Assigned:
        run = self._run
        assert run is not None
        self._revoking = False
        added = run.partitions - self.owned
        self.owned = run.partitions
        self._unanswered += 1
        return Assigned(generation_id=epoch, member_id=member_id, protocol_name=assignor,
                        assignment=b"", units=frozenset(run.partitions),
                        added=frozenset(added), revoked=frozenset())
