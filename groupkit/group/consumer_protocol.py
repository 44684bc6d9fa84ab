"""The "consumer" group protocol: topic subscriptions in, partition assignments out.

It plugs the assignors into the membership machine. It is pure: the runtime hands it the
cluster's partition counts through ``cluster_view`` and the machine passes what the member owns
and its generation into each call, so a leader's assignment can be computed and tested without
a network.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from itertools import compress
from typing import cast

import attrs

from assignors import (
    Assignor,
    ClusterView,
    MemberAssignment,
    MemberSubscription,
    RebalanceProtocol,
    TopicPartition,
    resolve,
    sticky_loops,
    validate_cooperative,
)
from assignors.sticky_loops import NumberingLike
from assignors.wire import SubscriptionDecoder, decode_assignment, encode_assignment
from groupkit.errors import ConfigError, CorruptFrame, InvalidAssignmentError
from groupkit.group.protocol import GroupMember
from groupkit.protocol.consumer import LATEST_VERSION

PROTOCOL_TYPE = "consumer"

ClusterViewSource = Callable[[frozenset[str]], ClusterView]
"""Gives the leader the partition counts (and racks) of the topics the group subscribes to."""

def choose_rebalance_protocol(assignors: Sequence[Assignor]) -> RebalanceProtocol:
    """The highest rebalance protocol every assignor supports (KIP-429's rule).

    COOPERATIVE only when all support it; a set of assignors sharing none is refused.
    """
    shared = set(RebalanceProtocol)
    for assignor in assignors:
        shared &= set(assignor.supported_protocols)
    if not shared:
        names = ", ".join(
            f"{a.name} ({'/'.join(p.name for p in a.supported_protocols)})" for a in assignors)
        raise ConfigError(
            f"the assignors share no rebalance protocol: {names}; configure assignors that"
            " all support EAGER or all support COOPERATIVE")
    return max(shared)


def _resolve_all(specs: Iterable[str | Assignor]) -> tuple[Assignor, ...]:
    return tuple(resolve(spec) for spec in specs)


@attrs.define
class ConsumerProtocol:
    """The ``GroupProtocol`` of Kafka consumers, built from assignors in preference order.

    ``assignors`` are names or ``Assignor`` instances. ``cluster_view`` is called only on the
    leader, on the thread that drives the machine.
    """

    assignors: tuple[Assignor, ...] = attrs.field(converter=_resolve_all)
    cluster_view: ClusterViewSource = attrs.field(kw_only=True)
    rack: str | None = attrs.field(default=None, kw_only=True)
    _topics: frozenset[str] = attrs.field(init=False, factory=frozenset)
    _selected: str | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        if not self.assignors:
            raise ConfigError("a consumer needs at least one assignor, e.g. ['range']")
        names = [a.name for a in self.assignors]
        if len(set(names)) != len(names):
            raise ConfigError(f"assignor names must be unique, got {names}")
        choose_rebalance_protocol(self.assignors)

    @property
    def protocol_type(self) -> str:
        return PROTOCOL_TYPE

    @property
    def rebalance_protocol(self) -> RebalanceProtocol:
        """COOPERATIVE when the assignor the group selected (before the first assignment: the
        preferred one) supports it, else EAGER; see ``is_cooperative``."""
        name = self._selected if self._selected is not None else self.assignors[0].name
        return RebalanceProtocol.COOPERATIVE if self.is_cooperative(name) \
            else RebalanceProtocol.EAGER

    @property
    def topics(self) -> frozenset[str]:
        """The topics this member subscribes to."""
        return self._topics

    def subscribe(self, topics: Iterable[str]) -> None:
        """Set the topics sent in the next JoinGroup."""
        self._topics = frozenset(topics)

    def join_protocols(self, owned: frozenset[Hashable],
                       generation_id: int) -> list[tuple[str, bytes]]:
        held = sorted(TopicPartition(*cast("tuple[str, int]", unit)) for unit in owned)
        generation = generation_id if held else -1
        return [(a.name, a.metadata(self._topics, held, generation, self.rack))
                for a in self.assignors]

    def assign(self, protocol_name: str, members: Sequence[GroupMember]) -> dict[str, bytes]:
        assignor = self._assignor(protocol_name)
        decoder = SubscriptionDecoder()
        subscriptions: dict[str, MemberSubscription] = {}
        versions: dict[str, int] = {}
        for member in members:
            subscriptions[member.member_id] = decoder.decode(
                member.metadata, member.group_instance_id)
            # Answer in the member's own Subscription version (decoding checked its prefix).
            versions[member.member_id] = min(
                LATEST_VERSION, int.from_bytes(member.metadata[:2], "big", signed=True))
        # Members sending the same topic list mostly share one tuple of it (see the decoder).
        lists = {id(sub.topics): sub.topics for sub in subscriptions.values()}
        cluster = self.cluster_view(frozenset().union(*lists.values()))
        result = assignor.assign(cluster, subscriptions)
        strangers = sorted(set(result) - set(subscriptions))
        if strangers:
            raise InvalidAssignmentError(
                f"assignor {assignor.name!r} assigned to {strangers}, who are not members")
        full = {m: result.get(m, MemberAssignment(())) for m in subscriptions}
        cooperative = self.is_cooperative(protocol_name)
        if not _checked_by_number(cluster, subscriptions, full, cooperative):
            _check_exclusive(assignor.name, full)
            if cooperative:
                validate_cooperative(_current_owners(subscriptions), full)
        return {m: encode_assignment(a, versions[m]) for m, a in full.items()}

    def on_assignment(self, protocol_name: str, assignment: bytes,
                      generation_id: int) -> frozenset[TopicPartition]:
        assignor = self._assignor(protocol_name)
        self._selected = protocol_name
        decoded = decode_assignment(assignment)
        assignor.on_assignment(decoded, generation_id)
        return frozenset(decoded.partitions)

    def is_cooperative(self, protocol_name: str) -> bool:
        """Whether partitions assigned under ``protocol_name`` are kept through a rejoin.

        Decided by the assignor the group selected, not (as the Java client does) by the lowest
        protocol of every configured assignor: with ``["cooperative-sticky", "range"]`` a group
        that agreed on cooperative-sticky rebalances incrementally, and one that fell back to
        range (a member without cooperative-sticky) eagerly. That is safe with members of
        either kind, since cooperative-sticky never gives a partition to a new owner in the
        generation that takes it from its old one (KIP-429), whatever each member does.
        """
        try:
            assignor = self._assignor(protocol_name)
        except CorruptFrame:
            return False
        return RebalanceProtocol.COOPERATIVE in assignor.supported_protocols

    def _assignor(self, name: str) -> Assignor:
        for assignor in self.assignors:
            if assignor.name == name:
                return assignor
        raise CorruptFrame(
            f"the group chose assignor {name!r}, which this member did not offer"
            f" ({[a.name for a in self.assignors]}); the coordinator answered out of protocol")


def _checked_by_number(cluster: ClusterView, subs: Mapping[str, MemberSubscription],
                       full: Mapping[str, MemberAssignment], cooperative: bool) -> bool:
    """True when ``_check_exclusive`` (and with ``cooperative`` ``validate_cooperative`` over
    ``_current_owners``) would pass, found with partition numbers and the assignors' loops
    (``sticky_loops.active``), per member rather than per partition where a member keeps what
    it owned. False when they might not: those checks then run and raise their own errors.

    Every assigned partition must be in ``cluster``; with no partition given twice, one moves
    in one round exactly when it goes to a member other than its current owner (the claim of
    the highest generation, the earliest member on a tie, as ``_current_owners`` picks it).
    """
    loops = sticky_loops.active
    topics = sorted(cluster.partitions)
    counts = [cluster.partitions[t] for t in topics]
    numbering = loops.numbering(topics, counts, TopicPartition)
    total = sum(counts)
    try:
        taken = bytearray(total)
        for assignment in full.values():
            # Fewer newly marked than given: one given twice, or outside the cluster.
            if numbering.mark(assignment.partitions, taken) != len(assignment.partitions):
                return False
        if not cooperative:
            return True
        claimed = bytearray(total)
        if all(numbering.mark(sub.owned_partitions, claimed) == len(sub.owned_partitions)
               for sub in subs.values()):
            return _moves_none_claimed_once(numbering, claimed, subs, full)
        return _moves_none(loops, numbering, total, subs, full)
    except (TypeError, ValueError):
        return False  # not (str, int) pairs: the checks say what is wrong


def _moves_none_claimed_once(numbering: NumberingLike, claimed: bytearray,
                             subs: Mapping[str, MemberSubscription],
                             full: Mapping[str, MemberAssignment]) -> bool:
    """``_checked_by_number``'s cooperative rule when every claimed partition has one claim,
    in the cluster (marked in ``claimed``): its claimer owns it."""
    for member_id, assignment in full.items():
        owned, partitions = subs[member_id].owned_partitions, assignment.partitions
        if partitions is owned:
            continue  # exactly what it sent
        if partitions[:len(owned)] == owned:
            # What it owns, then more: none of the more may be anyone's.
            if any(map(claimed.__getitem__, numbering.owned(partitions[len(owned):]))):
                return False
            continue
        numbers = numbering.owned(partitions)
        theirs = set(compress(numbers, map(claimed.__getitem__, numbers)))
        if not theirs.issubset(numbering.owned(owned)):
            return False
    return True


def _moves_none(loops: sticky_loops.Loops, numbering: NumberingLike, total: int,
                subs: Mapping[str, MemberSubscription],
                full: Mapping[str, MemberAssignment]) -> bool:
    """``_checked_by_number``'s cooperative rule in general: current owners resolved."""
    claims = [numbering.owned(sub.owned_partitions) for sub in subs.values()]
    owner, owned = loops.resolve(claims, [sub.generation for sub in subs.values()], total)
    for member, assignment in enumerate(full.values()):
        numbers = numbering.owned(assignment.partitions)
        mine = owned[member]
        # A member given what it owns, then more, needs only the more looked at.
        rest = numbers[len(mine):] if numbers[:len(mine)] == mine else numbers
        if rest and not {-1, member}.issuperset(map(owner.__getitem__, rest)):
            return False
    return True


def _check_exclusive(name: str, assignment: Mapping[str, MemberAssignment]) -> None:
    seen: dict[TopicPartition, str] = {}
    for member_id, given in assignment.items():
        for tp in given.partitions:
            if tp in seen:
                raise InvalidAssignmentError(
                    f"assignor {name!r} gave {tp.topic}-{tp.partition} to both {seen[tp]} and"
                    f" {member_id}; every partition must have one owner")
            seen[tp] = member_id


def _current_owners(subs: Mapping[str, MemberSubscription]) -> dict[str, list[TopicPartition]]:
    """Who owns each partition now: the claim of the highest generation wins (stale claims of a
    member that missed a rebalance do not count)."""
    best: dict[TopicPartition, tuple[int, str]] = {}
    for member_id, sub in subs.items():
        for tp in sub.owned_partitions:
            if tp not in best or sub.generation > best[tp][0]:
                best[tp] = (sub.generation, member_id)
    owners: dict[str, list[TopicPartition]] = {m: [] for m in subs}
    for tp, (_, member_id) in best.items():
        owners[member_id].append(tp)
    return owners
