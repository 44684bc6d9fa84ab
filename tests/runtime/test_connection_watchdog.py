"""The per-connection watchdog against a scripted fake broker: it fails each request at its own
deadline, and it is not woken by requests whose deadline is later than the one it waits for
(an idle member's heartbeats and fetches must not cost a thread wakeup each)."""

from __future__ import annotations

import pytest

from groupkit.errors import RequestTimeoutError
from groupkit.protocol.messages.metadata import MetadataRequest, MetadataResponse
from groupkit.runtime.connection import BrokerConnection
from tests.support import wakeups
from tests.support.fake_broker import FakeBroker, reply


@pytest.fixture
def broker():
    """Answers a Metadata request unless its topic list is empty (None: all topics)."""
    def answer_unless_empty(sock, header, request) -> None:
        if request.topics is None:
            reply(sock, header, MetadataResponse())

    fake = FakeBroker(answer_unless_empty)
    yield fake
    fake.close()


SILENT = MetadataRequest(topics=[])
ANSWERED = MetadataRequest(topics=None)


def test_a_shorter_timeout_sent_behind_a_longer_one_fails_at_its_own_deadline(broker) -> None:
    with BrokerConnection("127.0.0.1", broker.port, request_timeout_ms=60_000) as conn:
        conn.connect()
        long = conn.send(SILENT)
        short = conn.send(SILENT, timeout_ms=300)
        # The watchdog slept until the long request's deadline, a minute away: the short one
        # must wake it, or this waits in vain.
        with pytest.raises(RequestTimeoutError, match="within 300 ms"):
            short.result(10)
        assert long.exception(1) is not None


def test_a_request_sent_after_an_answered_one_still_times_out(broker) -> None:
    with BrokerConnection("127.0.0.1", broker.port, request_timeout_ms=60_000) as conn:
        conn.connect()
        assert isinstance(conn.send(ANSWERED, timeout_ms=300).result(5), MetadataResponse)
        # The watchdog still waits for the answered request's deadline; when it finds nothing
        # expired there, it must wait on for this one.
        late = conn.send(SILENT, timeout_ms=800)
        with pytest.raises(RequestTimeoutError, match="within 800 ms"):
            late.result(10)


@pytest.mark.skipif(not wakeups.available, reason="counts context switches in /proc (Linux)")
def test_requests_with_later_deadlines_do_not_wake_the_watchdog(broker) -> None:
    with BrokerConnection("127.0.0.1", broker.port, request_timeout_ms=60_000) as conn:
        conn.connect()
        assert isinstance(conn.send(ANSWERED).result(5), MetadataResponse)
        watchdog = wakeups.thread_named(f"groupkit-watchdog-127.0.0.1:{broker.port}")
        before = wakeups.switches(watchdog)
        for _ in range(50):
            assert isinstance(conn.send(ANSWERED).result(5), MetadataResponse)
        # Each deadline is an instant later than the last: woken for each, the watchdog would
        # switch at least 50 times. It waits for the earliest deadline it has seen (the
        # handshake's, then the first request's), which all of these are later than.
        assert wakeups.switches(watchdog) - before < 5
