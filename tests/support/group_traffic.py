"""JoinGroup and SyncGroup exchanges from a RecordingProxy, decoded with groupkit's classes.

What the capture script stores and the live test checks: the subscription bytes members put in
JoinGroup, the assignments a leader puts in SyncGroup, and what each member gets back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import attrs

from groupkit.protocol.consumer import Assignment
from groupkit.protocol.headers import decode_request_frame, decode_response_frame
from groupkit.protocol.messages.group import (
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from tests.support.recording_proxy import Exchange, RecordingProxy

if TYPE_CHECKING:
    from tests.support.peers import Member

JOIN_GROUP_KEY = 11
SYNC_GROUP_KEY = 14


@attrs.frozen
class JoinSeen:
    """One JoinGroup request and, when it came, its response (``error_code`` None if not)."""

    seq: int
    client_id: str | None
    api_version: int
    group_id: str
    member_id: str
    protocols: tuple[tuple[str, bytes], ...]
    error_code: int | None = None
    generation_id: int = -1
    assigned_member_id: str = ""
    leader: str = ""
    protocol_name: str | None = None
    members: tuple[tuple[str, bytes], ...] = ()


@attrs.frozen
class SyncSeen:
    """One SyncGroup request (a leader's carries ``assignments``) and its response, which
    passed the proxy at ``answered_seq`` (see Exchange.response_seq)."""

    seq: int
    client_id: str | None
    api_version: int
    group_id: str
    generation_id: int
    member_id: str
    protocol_name: str | None
    assignments: tuple[tuple[str, bytes], ...]
    error_code: int | None = None
    assignment: bytes | None = None
    answered_seq: int | None = None


def _join(exchange: Exchange) -> JoinSeen:
    _, request = decode_request_frame(exchange.request)
    assert isinstance(request, JoinGroupRequest)
    seen = JoinSeen(exchange.seq, exchange.client_id, exchange.api_version, request.group_id,
                    request.member_id, tuple((p.name, p.metadata) for p in request.protocols))
    if exchange.response is None:
        return seen
    _, response = decode_response_frame(exchange.response, JoinGroupResponse,
                                        exchange.api_version)
    assert isinstance(response, JoinGroupResponse)
    return attrs.evolve(
        seen, error_code=response.error_code, generation_id=response.generation_id,
        assigned_member_id=response.member_id, leader=response.leader,
        protocol_name=response.protocol_name,
        members=tuple((m.member_id, m.metadata) for m in response.members))


def _sync(exchange: Exchange) -> SyncSeen:
    _, request = decode_request_frame(exchange.request)
    assert isinstance(request, SyncGroupRequest)
    seen = SyncSeen(exchange.seq, exchange.client_id, exchange.api_version, request.group_id,
                    request.generation_id, request.member_id, request.protocol_name,
                    tuple((a.member_id, a.assignment) for a in request.assignments))
    if exchange.response is None:
        return seen
    _, response = decode_response_frame(exchange.response, SyncGroupResponse,
                                        exchange.api_version)
    assert isinstance(response, SyncGroupResponse)
    return attrs.evolve(seen, error_code=response.error_code, assignment=response.assignment,
                        answered_seq=exchange.response_seq)


def group_traffic(exchanges: Iterable[Exchange],
                  group_id: str) -> tuple[list[JoinSeen], list[SyncSeen]]:
    """Every JoinGroup and SyncGroup of ``group_id``, decoded, in the order they were sent."""
    joins: list[JoinSeen] = []
    syncs: list[SyncSeen] = []
    for exchange in exchanges:
        if exchange.api_key == JOIN_GROUP_KEY:
            join = _join(exchange)
            if join.group_id == group_id:
                joins.append(join)
        elif exchange.api_key == SYNC_GROUP_KEY:
            sync = _sync(exchange)
            if sync.group_id == group_id:
                syncs.append(sync)
    return joins, syncs


def settled_generation(syncs: list[SyncSeen], client_ids: set[str],
                       partitions: set[tuple[str, int]]) -> int | None:
    """The newest generation in which every client in ``client_ids`` got a successful SyncGroup
    answer and those answers hold every partition in ``partitions`` exactly once, else None."""
    answered: dict[int, dict[str, bytes]] = {}
    for sync in syncs:
        if sync.error_code == 0 and sync.assignment is not None and sync.client_id is not None:
            answered.setdefault(sync.generation_id, {})[sync.client_id] = sync.assignment
    for generation in sorted(answered, reverse=True):
        by_client = answered[generation]
        if set(by_client) != client_ids:
            continue
        held = [(topic, p) for data in by_client.values()
                for topic, numbers in Assignment.decode(data).partitions for p in numbers]
        if len(held) == len(set(held)) and set(held) == partitions:
            return generation
    return None


def join_in_turn(proxy: RecordingProxy, group: str, members: Sequence[Member],
                 partitions: set[tuple[str, int]], timeout: float) -> tuple[list[Exchange], int]:
    """Start ``members`` one at a time, each once ``group`` has settled with the ones before it
    (``settled_generation`` as seen through ``proxy``), so later JoinGroups carry what a member
    already owns. Returns the exchanges seen when the last one settled, and that generation;
    the caller stops the members."""
    seen: list[Exchange] = []
    generation: int | None = None
    for count, member in enumerate(members, start=1):
        member.start()
        ids = {m.client_id for m in members[:count]}
        seen = proxy.wait_until(
            lambda exchanges, ids=ids: settled_generation(
                group_traffic(exchanges, group)[1], ids, partitions) is not None,
            timeout, f"{group} to settle with {sorted(ids)}")
        generation = settled_generation(group_traffic(seen, group)[1], ids, partitions)
    assert generation is not None, "no members to start"
    return seen, generation
