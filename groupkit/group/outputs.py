"""What the membership machine asks of the runtime and tells the application, and the values
the runtime reads from it (the coordinator, a commit's fence, a failed request's decision).

Requests are unversioned message objects: the runtime picks the version its connection
negotiated. Everything else is a fact that has happened.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable

import attrs

from groupkit.errors import GroupkitError
from groupkit.protocol.schema import Request, Response


@attrs.frozen
class Coordinator:
    """The broker coordinating the group."""

    node_id: int
    host: str
    port: int


@attrs.frozen
class CommitFence:
    """The identity an OffsetCommit must carry so the coordinator can fence stale members."""

    generation_id: int
    member_id: str
    group_instance_id: str | None
    #: ``generation_id`` is a member epoch of the consumer group protocol (KIP-848): an
    #: OffsetFetch (v9+) carries it with the member id too, as Java's CommitRequestManager
    #: sends them; a classic generation goes only on OffsetCommit.
    member_epoch: bool = False


@attrs.frozen
class RequestDecision:
    """What to do with a failed OffsetCommit/OffsetFetch: retry after ``retry_after`` seconds,
    or give up with ``error``. Exactly one of the two is set."""

    #: The action the member's error table named (each protocol has its own table).
    action: enum.Enum
    retry_after: float | None
    error: GroupkitError | None


class Destination(enum.Enum):
    """Where a request must go."""

    ANY_BROKER = "any broker"
    COORDINATOR = "coordinator"


@attrs.frozen
class Send:
    """Send ``request``; report its answer with ``on_response(token, ...)`` or its failure with
    ``on_request_failed(token, ...)``. ``timeout_ms`` overrides the runtime's request timeout
    (JoinGroup and SyncGroup are held by the coordinator for up to the rebalance timeout)."""

    token: int
    request: Request
    destination: Destination
    timeout_ms: int | None = None
    #: A heartbeat: it goes on a connection of its own, so it never waits behind a request the
    #: coordinator holds (a JoinGroup), and the runtime reports it as one.
    heartbeat: bool = False
    #: A successful answer may wait for the runtime's next wakeup (at the latest when the next
    #: heartbeat is due), because it changes nothing but the session: a classic Heartbeat's.
    answer_may_wait: bool = False
    #: With ``answer_may_wait``, what a successful answer must also pass to wait: a pure test
    #: of the answer alone (it runs on the connection's thread), e.g. that a consumer-protocol
    #: heartbeat answer brings no assignment, epoch or interval the member does not hold
    #: already. None: every successful answer may wait.
    quiet_if: Callable[[Response], bool] | None = None
    #: With ``answer_may_wait``, a settled (STABLE) member's heartbeat interval in seconds:
    #: while this heartbeat's answer stays byte for byte the last one (which changed nothing),
    #: the runtime may send it again by itself that long after each send, telling the machine
    #: only now and then (``heartbeat_stood``), until an answer differs or anything the member
    #: does changes. 0: it may not (the heartbeat does not stand).
    stands_every: float = 0.0


@attrs.frozen
class CoordinatorChanged:
    """The group coordinator is this broker; coordinator-bound requests go there from now on."""

    node_id: int
    host: str
    port: int


@attrs.frozen
class CoordinatorLost:
    """The coordinator stopped answering or moved; requests in flight to it are abandoned."""

    reason: str


@attrs.frozen
class Assigned:
    """SyncGroup gave this member its assignment for ``generation_id``.

    ``added`` and ``revoked`` compare the new units with what the member held before: for a
    cooperative protocol a non-empty ``revoked`` means "give these up, then ``request_rejoin``".
    """

    generation_id: int
    member_id: str
    protocol_name: str
    assignment: bytes
    units: frozenset[Hashable]
    added: frozenset[Hashable]
    revoked: frozenset[Hashable]


@attrs.frozen
class Revoked:
    """Before an eager rejoin: stop work on ``units`` (commit while the generation is still
    valid), then call ``revocation_done``; JoinGroup waits for it."""

    generation_id: int
    units: frozenset[Hashable]


@attrs.frozen
class Lost:
    """The member no longer owns ``units`` and must not commit them: its generation ended
    without an orderly revoke (commits for it will fail), or an eager assignor gave them away."""

    units: frozenset[Hashable]
    reason: str


@attrs.frozen
class Left:
    """The member is out of the group: closed, or its poll interval expired.

    After a poll interval expiry the member rejoins on the application's next poll.
    """

    reason: str


@attrs.frozen
class Fatal:
    """The member stopped for good; the application must see ``error``."""

    error: GroupkitError


@attrs.frozen
class Rebalancing:
    """For the runtime, not the application: a rebalance began (a JoinGroup went out, or a new
    target assignment arrived); ``reason`` says why."""

    reason: str


@attrs.frozen
class GenerationJoined:
    """For the runtime, not the application: the member is in ``generation_id`` (a classic
    generation, or a consumer-protocol member epoch)."""

    member_id: str
    generation_id: int
    protocol_name: str
    leader: bool
    members: int
    #: What the log line says after "joined " (the machine words it for its protocol).
    description: str = ""

    def __attrs_post_init__(self) -> None:
        if not self.description:
            role = "leader" if self.leader else "follower"
            more = f" ({self.members} members)" if self.leader else ""
            object.__setattr__(self, "description", (
                f"generation {self.generation_id} as {role} with protocol"
                f" {self.protocol_name or '?'}{more}"))


@attrs.frozen
class Leaving:
    """For the runtime, not the application: the member is leaving its group (``reason``)."""

    reason: str


@attrs.frozen
class Reported:
    """An error the application must see (raised from its next poll) that does not stop the
    member: it carries on (e.g. a share heartbeat's TOPIC_AUTHORIZATION_FAILED)."""

    error: GroupkitError


#: The outputs the runtime carries out itself; the rest are facts for the application.
RUNTIME_OUTPUTS = (CoordinatorChanged, CoordinatorLost, Rebalancing, GenerationJoined, Leaving)

Output = (Send | CoordinatorChanged | CoordinatorLost | Rebalancing | GenerationJoined | Leaving
          | Assigned | Revoked | Lost | Left | Fatal | Reported)
