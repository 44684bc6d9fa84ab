"""A standing request (an idle consumer's long poll) against a scripted fake broker: the
connection's reader thread sends it again by itself while its answer repeats, each repeat a
request in flight of its own, and the request's Future completes only with an answer that
differs, with the first answer after ``end()``, or with the connection's failure."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

import pytest

from groupkit.errors import ApiKey, KafkaConnectionError, RequestTimeoutError
from groupkit.protocol.messages.group import HeartbeatRequest, HeartbeatResponse
from groupkit.runtime.connection import BrokerConnection
from groupkit.runtime.standing import Standing
from tests.support.fake_broker import FakeBroker, reply
from tests.support.waits import wait_for

HEARTBEAT = HeartbeatRequest(group_id="g", generation_id=1, member_id="m",
                             group_instance_id=None)
OTHER = HeartbeatRequest(group_id="g", generation_id=2, member_id="m", group_instance_id=None)


class Gated:
    """Answers each Heartbeat with the next scripted error code once the test lets it go
    (``release``); with no codes left, 0."""

    def __init__(self, codes: list[int] | None = None, silent_after: int | None = None) -> None:
        self.codes = list(codes or [])
        self.gate = threading.Semaphore(0)
        self.silent_after = silent_after
        self.count = 0
        self.times: list[float] = []  # when each Heartbeat came
        self.cond = threading.Condition()
        self.broker = FakeBroker(self._answer)

    def _answer(self, sock: Any, header: Any, request: Any) -> None:
        with self.cond:
            self.count += 1
            self.times.append(time.monotonic())
            self.cond.notify_all()
            if self.silent_after is not None and self.count > self.silent_after:
                return  # never answered
        if not self.gate.acquire(timeout=30):
            return
        reply(sock, header, HeartbeatResponse(error_code=self.codes.pop(0) if self.codes else 0))

    def release(self, n: int = 1) -> None:
        for _ in range(n):
            self.gate.release()

    def wait_count(self, n: int) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: self.count >= n, 10), \
                f"the broker got {self.count} heartbeats, not {n}"

    def heartbeats(self) -> list[Any]:
        return [h for h in self.broker.received if h.api_key == ApiKey.HEARTBEAT]


def primed(gated: Gated, conn: BrokerConnection) -> int:
    """Send HEARTBEAT twice (the second answer is the first known to repeat); its version."""
    gated.release(2)
    conn.send(HEARTBEAT).result(5)
    conn.send(HEARTBEAT).result(5)
    return conn.versions[ApiKey.HEARTBEAT]


def test_a_standing_request_is_sent_again_while_its_answer_repeats() -> None:
    gated = Gated(codes=[0, 0, 0, 0, 0, 27])
    done: list[Future[Any]] = []
    ticks: list[tuple[float, float, threading.Thread]] = []
    standing = Standing(lambda before, now: ticks.append(
        (before, now, threading.current_thread())))
    try:
        with BrokerConnection("127.0.0.1", gated.broker.port) as conn:
            version = primed(gated, conn)
            assert conn.send_connected(HEARTBEAT, version, 5000, done.append, standing=standing)
            # Answers 3 and 4 repeat answer 2: each is sent again at once by the reader
            # thread, the Future not completed and the callback not called.
            for count in (4, 5):
                gated.release()
                gated.wait_count(count)
                assert not done and conn.in_flight() == 1
            gated.release(2)  # answer 5 repeats too; answer 6 (error 27) differs
            fut = _wait_done(done)
            assert fut.result().error_code == 27
            assert conn.in_flight() == 0
    finally:
        gated.broker.close()
    heartbeats = gated.heartbeats()
    assert len(heartbeats) == 6 and len({h.correlation_id for h in heartbeats}) == 6
    # One tick per repeat (3: after answers 3, 4 and 5), on the reader thread, in order.
    assert len(ticks) == 3
    assert all(t.name.startswith("groupkit-reader-") for _, _, t in ticks)
    assert all(before <= now for before, now, _ in ticks)
    assert [now for _, now, _ in ticks[:-1]] == [before for before, _, _ in ticks[1:]]


def test_an_ended_standing_request_delivers_the_next_answer() -> None:
    gated = Gated()
    done: list[Future[Any]] = []
    standing = Standing()
    try:
        with BrokerConnection("127.0.0.1", gated.broker.port) as conn:
            version = primed(gated, conn)
            assert conn.send_connected(HEARTBEAT, version, 5000, done.append, standing=standing)
            gated.release()
            gated.wait_count(4)  # sent again: the answer repeated
            assert not done
            standing.end()
            gated.release()
            fut = _wait_done(done)
            # The unchanged answer is delivered, and nothing more is sent.
            assert fut.result().error_code == 0
            assert conn.in_flight() == 0 and gated.count == 4
    finally:
        gated.broker.close()


def test_a_standing_request_that_is_not_a_repeat_is_sent_once() -> None:
    gated = Gated()
    done: list[Future[Any]] = []
    try:
        with BrokerConnection("127.0.0.1", gated.broker.port) as conn:
            version = primed(gated, conn)
            # Another request than the last one sent: its answer cannot be known to repeat.
            assert conn.send_connected(OTHER, version, 5000, done.append, standing=Standing())
            gated.release()
            assert _wait_done(done).result().error_code == 0
            assert conn.in_flight() == 0 and gated.count == 3
    finally:
        gated.broker.close()


def test_a_standing_repeat_left_unanswered_times_out() -> None:
    # The watchdog sees every repeat in flight: the one the broker never answers fails the
    # request with RequestTimeoutError at its own deadline.
    gated = Gated(silent_after=4)
    done: list[Future[Any]] = []
    try:
        with BrokerConnection("127.0.0.1", gated.broker.port) as conn:
            version = primed(gated, conn)
            assert conn.send_connected(HEARTBEAT, version, 300, done.append,
                                       standing=Standing())
            gated.release(5)
            gated.wait_count(5)
            with pytest.raises(RequestTimeoutError):
                _wait_done(done).result()
    finally:
        gated.broker.close()


def test_closing_the_connection_fails_a_standing_request() -> None:
    gated = Gated()
    done: list[Future[Any]] = []
    try:
        conn = BrokerConnection("127.0.0.1", gated.broker.port)
        version = primed(gated, conn)
        assert conn.send_connected(HEARTBEAT, version, 5000, done.append, standing=Standing())
        gated.release()
        gated.wait_count(4)
        conn.close()
        with pytest.raises(KafkaConnectionError):
            _wait_done(done).result()
    finally:
        gated.release(5)
        gated.broker.close()


def _wait_done(done: list[Future[Any]]) -> Future[Any]:
    """The one Future the callback got (bounded wait)."""
    wait_for(lambda: bool(done), 10, "the request's Future to complete")
    assert len(done) == 1, f"the callback ran {len(done)} times"
    return done[0]



# --- timed standings (a settled member's heartbeat) -----------------------------------------


def timed(gated: Gated, conn: BrokerConnection, every: float, done: list[Future[Any]]
          ) -> Standing:
    """HEARTBEAT primed and sent a third time (its answer, the one the connection keeps, is
    the one the caller saw), then standing every ``every`` seconds on that answer."""
    version = primed(gated, conn)
    gated.release()
    seen = conn.send(HEARTBEAT).result(5)
    standing = Standing(every=every, answer=seen)
    assert conn.send_connected(HEARTBEAT, version, 5000, done.append, standing=standing)
    return standing


def test_a_timed_standing_request_goes_again_an_interval_after_the_one_before() -> None:
    # Every answer is let go at once: each waits, and the reader sends the next one once an
    # interval has passed since the one before went out, not as the answer comes.
    gated = Gated(codes=[0, 0, 0, 0, 0, 0, 0, 27])
    done: list[Future[Any]] = []
    try:
        with BrokerConnection("127.0.0.1", gated.broker.port) as conn:
            standing = timed(gated, conn, 0.2, done)
            gated.release(10)
            assert _wait_done(done).result().error_code == 27
            assert not standing.live
    finally:
        gated.broker.close()
    times = gated.times[3:]
    assert len(times) == 5, gated.times  # the standing's first send and its four repeats
    assert all(b - a >= 0.19 for a, b in zip(times, times[1:], strict=False)), times


def test_a_timed_standing_answered_late_goes_again_at_once() -> None:
    gated = Gated()
    done: list[Future[Any]] = []
    try:
        with BrokerConnection("127.0.0.1", gated.broker.port) as conn:
            standing = timed(gated, conn, 0.05, done)
            gated.wait_count(4)
            time.sleep(0.2)  # the answer held past the next send's time
            gated.release()
            gated.wait_count(5)  # sent again by the reader as the late answer came
            assert not done and standing.live
            standing.end()
            gated.release()
            assert _wait_done(done).result().error_code == 0
    finally:
        gated.broker.close()


def test_ending_a_timed_standing_delivers_the_answer_waiting_for_its_time() -> None:
    gated = Gated()
    done: list[Future[Any]] = []
    try:
        with BrokerConnection("127.0.0.1", gated.broker.port) as conn:
            standing = timed(gated, conn, 30.0, done)  # the next send is far off
            gated.release()
            wait_for(lambda: standing.answered_at > 0, 5, "the unchanged answer")
            assert not done
            standing.end()
            # At once, on this thread, without waiting for the next send's time.
            assert len(done) == 1 and done[0].result().error_code == 0
            assert gated.count == 4 and conn.in_flight() == 0
    finally:
        gated.broker.close()


def test_closing_the_connection_fails_a_timed_standing_waiting_for_its_time() -> None:
    gated = Gated()
    done: list[Future[Any]] = []
    try:
        conn = BrokerConnection("127.0.0.1", gated.broker.port)
        standing = timed(gated, conn, 30.0, done)
        gated.release()
        wait_for(lambda: standing.answered_at > 0, 5, "the unchanged answer")
        conn.close()
        with pytest.raises(KafkaConnectionError):
            _wait_done(done).result()
        assert not standing.live
    finally:
        gated.broker.close()


def test_a_request_stands_only_on_the_answer_its_caller_saw() -> None:
    # The connection keeps the last answer; a standing on another answer object (one the
    # caller did not see last) is sent once, as without it.
    gated = Gated()
    done: list[Future[Any]] = []
    try:
        with BrokerConnection("127.0.0.1", gated.broker.port) as conn:
            version = primed(gated, conn)
            standing = Standing(every=0.05, answer=HeartbeatResponse(error_code=0))
            assert conn.send_connected(HEARTBEAT, version, 5000, done.append,
                                       standing=standing)
            assert not standing.live
            gated.release()
            assert _wait_done(done).result().error_code == 0
            assert gated.count == 3
    finally:
        gated.broker.close()


def test_a_waiting_timed_standing_goes_with_a_thread_awake_anyway_once_its_time_came() -> None:
    gated = Gated()
    done: list[Future[Any]] = []
    ticks: list[str] = []
    try:
        with BrokerConnection("127.0.0.1", gated.broker.port) as conn:
            standing = timed(gated, conn, 0.3, done)
            standing.tick = lambda before, now: ticks.append(threading.current_thread().name)
            gated.release()
            wait_for(lambda: standing.answered_at > 0, 5, "the unchanged answer")
            standing.ride()  # too early: nothing goes
            assert gated.count == 4 and not ticks
            # Pacing to the send's time (within the reader's slack after it, 30 ms).
            time.sleep(max(0.0, standing.sent_at + 0.3 - time.monotonic()))
            standing.ride()
            gated.wait_count(5)
            assert ticks == [threading.current_thread().name]  # sent from here
            standing.end()
            gated.release()
            assert _wait_done(done).result().error_code == 0
    finally:
        gated.broker.close()


def test_another_standing_requests_repeat_takes_a_timed_one_whose_time_came() -> None:
    # A heartbeat waits on one connection while a long poll stands on another, answered at
    # once: the long poll's reader thread, awake for its own answers, sends the heartbeat.
    def long_poll(sock: Any, header: Any, request: Any) -> None:
        time.sleep(0.02)  # held a little, as an empty long poll is
        reply(sock, header, HeartbeatResponse(error_code=0))

    gated = Gated()
    polls = FakeBroker(long_poll)
    done: list[Future[Any]] = []
    ticks: list[str] = []
    try:
        with BrokerConnection("127.0.0.1", gated.broker.port) as conn, \
                BrokerConnection("127.0.0.1", polls.port) as other:
            standing = timed(gated, conn, 0.2, done)
            standing.tick = lambda before, now: ticks.append(threading.current_thread().name)
            gated.release(100)
            for _ in range(2):
                other.send(HEARTBEAT).result(5)
            assert other.send_connected(HEARTBEAT, other.versions[ApiKey.HEARTBEAT], 5000,
                                        lambda f: None, standing=Standing())
            wait_for(lambda: len(ticks) >= 3, 10, "three heartbeats")
            standing.end()
    finally:
        gated.broker.close()
        polls.close()
    assert f"groupkit-reader-127.0.0.1:{polls.port}" in ticks, ticks
