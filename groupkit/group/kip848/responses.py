"""How a consumer-protocol member handles its answers: FindCoordinator (adopt the coordinator),
ConsumerGroupHeartbeat (member id, epoch, interval, a new target assignment to reconcile) and
Metadata (the topic names of the target's ids); an error code goes to the reactions
(``reactions``).
"""

from __future__ import annotations

from groupkit.errors import error_for_code
from groupkit.group import error_actions as classic_actions, requests
from groupkit.group.kip848.heartbeat import from_wire
from groupkit.group.kip848.reactions import ReactingMember
from groupkit.group.kip848.states import IN_GROUP, TAKES_ASSIGNMENT, MemberState
from groupkit.group.outputs import Coordinator, CoordinatorChanged, GenerationJoined
from groupkit.protocol.messages.consumer_group import ConsumerGroupHeartbeatResponse
from groupkit.protocol.messages.find_coordinator import FindCoordinatorResponse
from groupkit.protocol.messages.metadata import MetadataResponse

S = MemberState


class AnsweringMember(ReactingMember):
    """A member that handles its answers (``ConsumerGroupMachine`` builds on it)."""

    __slots__ = ()

    def _on_find(self, resp: FindCoordinatorResponse, now: float) -> None:
        code, message, (node_id, host, port) = requests.coordinator_answer(
            resp, self.config.group_id)
        if code:
            action = classic_actions.action_for(classic_actions.Api.FIND_COORDINATOR, code)
            if action is classic_actions.Action.FATAL:
                self._fail(error_for_code(code)(message))
                return
            self._find_failures += 1
            self._find_at = now + self._backoff.delay(self._find_failures)
            return
        self._find_failures = 0
        self._coordinator = Coordinator(node_id, host, port)
        self._outputs.append(CoordinatorChanged(node_id, host, port))

    def _on_heartbeat(self, resp: ConsumerGroupHeartbeatResponse, now: float) -> None:
        code = resp.error_code
        if code:
            self._on_heartbeat_error(code, resp.error_message, now)
            return
        self._beat_failures = 0
        interval = max(0, resp.heartbeat_interval_ms) / 1000
        if interval != self._interval_s:
            # Java's updateHeartbeatIntervalMs: a new interval restarts the timer from now.
            self._interval_s = interval
            self._beat_at = now + interval
        if self._state not in IN_GROUP:
            return  # an answer that crossed a leave, a fence or a failure
        if resp.member_id:
            self._member_id = resp.member_id
        if resp.member_epoch != self._epoch and resp.member_epoch > 0:
            self._outputs.append(GenerationJoined(
                self._member_id, resp.member_epoch, self._assignor_name, False, 0,
                f"member epoch {resp.member_epoch} (the coordinator assigns, with"
                f" {self.remote_assignor or 'its default assignor'})"))
        self._epoch = resp.member_epoch
        if resp.assignment is not None and self._state in TAKES_ASSIGNMENT:
            self._assignment_received(from_wire(resp.assignment.topic_partitions))

    def _on_metadata(self, resp: MetadataResponse, now: float) -> None:
        self._rec.learn(resp)
        if self._rec.unresolved():
            # Asked by name and still missing: the next ask is for every topic.
            self._metadata_all = True
            self._metadata_failures += 1
            self._metadata_at = now + self._backoff.delay(self._metadata_failures)
        else:
            self._metadata_failures = 0
        if self._state is S.RECONCILING:
            self._reconcile()
