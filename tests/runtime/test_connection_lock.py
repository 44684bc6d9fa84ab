"""The request/answer path of a connection holds its link's lock directly: an idle member
pays no Python-level ``Condition.__enter__``/``__exit__`` per heartbeat or fetch for it. The
watchdog waits on a Condition over that same lock (test_connection_watchdog.py)."""

from __future__ import annotations

import threading

import pytest

from groupkit.protocol.messages.group import HeartbeatRequest, HeartbeatResponse
from groupkit.runtime.connection import BrokerConnection
from tests.support.fake_broker import FakeBroker, reply

HEARTBEAT = HeartbeatRequest(group_id="g", generation_id=1, member_id="m",
                             group_instance_id=None)


def test_requests_and_answers_do_not_enter_the_links_condition(
        monkeypatch: pytest.MonkeyPatch) -> None:
    broker = FakeBroker(lambda sock, header, request: reply(sock, header,
                                                            HeartbeatResponse(error_code=0)))
    entered: list[threading.Condition] = []
    enter = threading.Condition.__enter__

    def spy(cond: threading.Condition) -> bool:
        entered.append(cond)
        return enter(cond)

    try:
        with BrokerConnection("127.0.0.1", broker.port) as conn:
            conn.send(HEARTBEAT).result(5)  # connected, versions negotiated
            link = conn._link
            assert link is not None and link.cond._lock is link.lock  # type: ignore[attr-defined]
            monkeypatch.setattr(threading.Condition, "__enter__", spy)
            for _ in range(20):
                assert conn.send(HEARTBEAT).result(5).error_code == 0
            assert conn.in_flight() == 0
            monkeypatch.undo()
    finally:
        broker.close()
    assert not [cond for cond in entered if cond is link.cond]

