"""A sans-IO stand-in for Kafka's consumer group coordinator (KIP-848), for whole-group tests.

It follows Apache Kafka's GroupMetadataManager and CurrentAssignmentBuilder for one group in
the shape a member meets them: a group epoch that moves when members or subscriptions change,
a target assignment computed at that epoch (a sticky, balanced one, like the "uniform"
assignor), and each member brought to its target one step at a time: a member that still
owns partitions the target takes away keeps its epoch and is told to revoke them
(UNREVOKED_PARTITIONS); only once its heartbeat no longer lists them does it move to the new
epoch and are those partitions released; a partition another member has not released yet is
withheld (UNRELEASED_PARTITIONS) and handed over on a later heartbeat. Epochs are checked as
Kafka checks them (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID), sessions and rebalance timeouts
expire, static members leave with epoch -2 and come back to the same assignment.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable

import attrs

from groupkit.errors import ErrorCode
from groupkit.protocol.messages.consumer_group import (
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatTopicPartitions,
)
from groupkit.protocol.messages.metadata import MetadataResponse, MetadataResponseTopic

Partition = tuple[uuid.UUID, int]


class MemberPhase(enum.Enum):
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


@attrs.define
class _Member:
    member_id: str
    instance_id: str | None
    topics: frozenset[str]
    regex: str | None
    rebalance_timeout: float
    last_seen: float
    epoch: int = 0
    previous_epoch: int = -1
    phase: MemberPhase = MemberPhase.STABLE
    assigned: set[Partition] = attrs.field(factory=set)
    revoking: set[Partition] = attrs.field(factory=set)
    revoke_deadline: float | None = None
    last_sent: frozenset[Partition] | None = None
    left_static: bool = False


@attrs.define
class FakeConsumerCoordinator:
    """One consumer-protocol group: ``heartbeat`` answers a member at once."""

    topics: dict[str, tuple[uuid.UUID, int]] = attrs.field(factory=dict)
    session_timeout: float = 10.0
    heartbeat_interval_ms: int = 1_000
    group_epoch: int = 0
    target_epoch: int = 0
    members: dict[str, _Member] = attrs.field(factory=dict)
    target: dict[str, set[Partition]] = attrs.field(factory=dict)
    epoch_bumps: int = 0
    static_returns: int = 0
    seen: list[ConsumerGroupHeartbeatRequest] = attrs.field(factory=list)
    #: (member id, error code) to answer the next heartbeat of that member with, once.
    inject: dict[str, int] = attrs.field(factory=dict)

    def add_topic(self, name: str, partitions: int) -> uuid.UUID:
        topic_id = uuid.uuid5(uuid.NAMESPACE_OID, name)
        self.topics[name] = (topic_id, partitions)
        return topic_id

    def name_of(self, topic_id: uuid.UUID) -> str:
        return next(n for n, (i, _) in self.topics.items() if i == topic_id)

    def metadata(self, names: Iterable[str] | None) -> MetadataResponse:
        wanted = self.topics if names is None else [n for n in names if n in self.topics]
        return MetadataResponse(topics=[
            MetadataResponseTopic(name=n, topic_id=self.topics[n][0]) for n in wanted])

    # --- ConsumerGroupHeartbeat ------------------------------------------------------------

    def heartbeat(self, req: ConsumerGroupHeartbeatRequest,
                  now: float) -> ConsumerGroupHeartbeatResponse:
        self.seen.append(req)
        self.tick(now)
        code = self.inject.pop(req.member_id, 0)
        if code:
            return self._error(code)
        if req.member_epoch in (-1, -2):
            return self._leave(req, now)
        member = self.members.get(req.member_id)
        if req.member_epoch == 0:
            member = self._join(req, now)
        elif member is None:
            return self._error(ErrorCode.UNKNOWN_MEMBER_ID)
        else:
            owned = self._owned_of(req)
            # Kafka's throwIfMemberEpochIsInvalid: a newer epoch than the coordinator's is
            # fenced; an older one only if it is the previous epoch and the member owns
            # nothing beyond what that epoch gave it.
            if req.member_epoch > member.epoch or (
                    req.member_epoch < member.epoch and not (
                        req.member_epoch == member.previous_epoch and owned is not None
                        and owned <= member.assigned | member.revoking)):
                return self._error(ErrorCode.FENCED_MEMBER_EPOCH)
            member.last_seen = now
            if req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None:
                topics = frozenset(req.subscribed_topic_names or ())
                if (topics, req.subscribed_topic_regex) != (member.topics, member.regex):
                    member.topics, member.regex = topics, req.subscribed_topic_regex
                    self._bump()
            if owned is not None and member.phase is MemberPhase.UNREVOKED_PARTITIONS \
                    and not owned & member.revoking:
                member.revoking = set()
                member.revoke_deadline = None
                member.phase = MemberPhase.STABLE
        self._compute_target()
        self._advance(member, now)
        full = req.member_epoch == 0 or req.topic_partitions is not None
        return self._answer(member, full)

    def _owned_of(self, req: ConsumerGroupHeartbeatRequest) -> set[Partition] | None:
        if req.topic_partitions is None:
            return None
        return {(tp.topic_id, p) for tp in req.topic_partitions for p in tp.partitions}

    def _join(self, req: ConsumerGroupHeartbeatRequest, now: float) -> _Member:
        assert req.member_id, "KIP-1082: a v1 member sends the member id it chose"
        if req.instance_id is not None:
            old = next((m for m in self.members.values() if m.instance_id == req.instance_id),
                       None)
            if old is not None:
                # The static member is back (under its old id or a new one): it takes its old
                # place, assignment and epoch, without a new group epoch (KIP-848).
                del self.members[old.member_id]
                self.target[req.member_id] = self.target.pop(old.member_id, set())
                old.member_id, old.left_static, old.last_seen = req.member_id, False, now
                old.last_sent = None
                self.members[req.member_id] = old
                self.static_returns += 1
                return old
        old_member = self.members.pop(req.member_id, None)
        if old_member is not None:
            # A known member rejoining with epoch 0 starts over: what it held is released.
            self.target.pop(req.member_id, None)
        member = _Member(req.member_id, req.instance_id,
                         frozenset(req.subscribed_topic_names or ()), req.subscribed_topic_regex,
                         req.rebalance_timeout_ms / 1000, now)
        self.members[req.member_id] = member
        self._bump()
        return member

    def _leave(self, req: ConsumerGroupHeartbeatRequest,
               now: float) -> ConsumerGroupHeartbeatResponse:
        member = self.members.get(req.member_id)
        if member is None:
            return self._error(ErrorCode.UNKNOWN_MEMBER_ID)
        if req.member_epoch == -2 and member.instance_id is not None:
            member.left_static = True  # keeps its assignment until its session expires
            member.revoking = set()
        else:
            self._remove(member.member_id)
        return ConsumerGroupHeartbeatResponse(member_id=req.member_id,
                                              member_epoch=req.member_epoch,
                                              heartbeat_interval_ms=self.heartbeat_interval_ms)

    def _remove(self, member_id: str) -> None:
        self.members.pop(member_id, None)
        self.target.pop(member_id, None)
        self._bump()

    def tick(self, now: float) -> None:
        """Expire sessions and rebalance timeouts due at ``now``."""
        for member in list(self.members.values()):
            expired = now - member.last_seen > self.session_timeout
            stuck = member.revoke_deadline is not None and now > member.revoke_deadline
            if expired or stuck:
                self._remove(member.member_id)

    def _bump(self) -> None:
        self.group_epoch += 1
        self.epoch_bumps += 1

    # --- assignment ------------------------------------------------------------------------

    def _subscribed(self, member: _Member) -> list[str]:
        if member.regex:  # Kafka keeps "" as "no pattern"
            import re
            return sorted(n for n in self.topics if re.fullmatch(member.regex, n))
        return sorted(n for n in member.topics if n in self.topics)

    def _compute_target(self) -> None:
        """Sticky and balanced per topic: keep what each member has where it can."""
        if self.target_epoch == self.group_epoch:
            return
        self.target_epoch = self.group_epoch
        new: dict[str, set[Partition]] = {m: set() for m in self.members}
        for name, (topic_id, count) in sorted(self.topics.items()):
            subscribers = sorted(m for m, member in self.members.items()
                                 if name in self._subscribed(member))
            if not subscribers:
                continue
            quota = {m: count // len(subscribers) + (1 if i < count % len(subscribers) else 0)
                     for i, m in enumerate(subscribers)}
            free = []
            for p in range(count):
                keeper = next((m for m in subscribers
                               if (topic_id, p) in self.target.get(m, set())
                               and quota[m] > 0), None)
                if keeper is None:
                    free.append(p)
                else:
                    new[keeper].add((topic_id, p))
                    quota[keeper] -= 1
            for p in free:
                taker = max(subscribers, key=lambda m: (quota[m], m))
                new[taker].add((topic_id, p))
                quota[taker] -= 1
        self.target = new

    def _held_by_others(self, member: _Member) -> set[Partition]:
        return {p for m in self.members.values() if m is not member
                for p in m.assigned | m.revoking}

    def _advance(self, member: _Member, now: float) -> None:
        """CurrentAssignmentBuilder: the member whose heartbeat this is, one step closer to its
        target (Kafka moves a member only in its own heartbeat)."""
        target = self.target.get(member.member_id, set())
        if member.left_static:
            return
        if member.phase is MemberPhase.UNREVOKED_PARTITIONS:
            return
        if member.epoch < self.target_epoch or member.phase is MemberPhase.UNRELEASED_PARTITIONS:
            to_revoke = member.assigned - target
            if to_revoke:
                member.assigned -= to_revoke
                member.revoking = to_revoke
                member.phase = MemberPhase.UNREVOKED_PARTITIONS
                member.revoke_deadline = now + member.rebalance_timeout
                return
            if member.epoch < self.target_epoch:
                member.previous_epoch, member.epoch = member.epoch, self.target_epoch
            free = (target - member.assigned) - self._held_by_others(member)
            member.assigned |= free
            member.phase = (MemberPhase.STABLE if member.assigned == target
                            else MemberPhase.UNRELEASED_PARTITIONS)

    def _answer(self, member: _Member, full: bool) -> ConsumerGroupHeartbeatResponse:
        given = frozenset(member.assigned)
        assignment = None
        if full or given != member.last_sent:
            member.last_sent = given
            topics: dict[uuid.UUID, list[int]] = {}
            for topic_id, p in sorted(given):
                topics.setdefault(topic_id, []).append(p)
            assignment = ConsumerGroupHeartbeatAssignment(topic_partitions=[
                ConsumerGroupHeartbeatTopicPartitions(topic_id=t, partitions=ps)
                for t, ps in topics.items()])
        return ConsumerGroupHeartbeatResponse(
            member_id=member.member_id, member_epoch=member.epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms, assignment=assignment)

    def _error(self, code: int) -> ConsumerGroupHeartbeatResponse:
        return ConsumerGroupHeartbeatResponse(error_code=code, member_epoch=-1,
                                              heartbeat_interval_ms=self.heartbeat_interval_ms)

    def owners(self) -> dict[Partition, list[str]]:
        """Who the coordinator counts as owning each partition (assigned or being revoked)."""
        out: dict[Partition, list[str]] = {}
        for m in self.members.values():
            for p in m.assigned | m.revoking:
                out.setdefault(p, []).append(m.member_id)
        return out

