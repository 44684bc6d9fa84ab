"""Reply: the Future a connection returns per request. It behaves as a running
``concurrent.futures.Future`` in every use (results, errors, callbacks, blocking waits,
``concurrent.futures.wait``/``as_completed``, asyncio), and a request answered before anyone
waits on it never makes a Condition."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from concurrent.futures import Future, InvalidStateError

import pytest

from groupkit.errors import KafkaConnectionError
from groupkit.protocol.messages.group import HeartbeatRequest, HeartbeatResponse
from groupkit.runtime.connection import BrokerConnection
from groupkit.runtime.reply import Reply
from tests.support.fake_broker import FakeBroker, reply

HEARTBEAT = HeartbeatRequest(group_id="g", generation_id=1, member_id="m",
                             group_instance_id=None)


def test_a_reply_is_a_running_future_that_cannot_be_cancelled() -> None:
    r = Reply()
    assert isinstance(r, Future)
    assert r.running() and not r.done() and not r.cancelled()
    assert r.cancel() is False
    assert r.running() and not r.done()
    with pytest.raises(RuntimeError):
        r.set_running_or_notify_cancel()  # as a Future already running


def test_a_result_reaches_callbacks_added_before_and_after() -> None:
    r = Reply()
    seen: list[tuple[str, object]] = []
    r.add_done_callback(lambda f: seen.append(("before", f.result())))
    r.set_result("answer")
    assert seen == [("before", "answer")]
    r.add_done_callback(lambda f: seen.append(("after", f.result())))
    assert seen == [("before", "answer"), ("after", "answer")]
    assert r.done() and not r.running() and r.result() == "answer" and r.exception() is None
    assert r._cond is None  # nothing waited: no Condition was made


def test_a_callback_given_when_made_runs_first_and_once() -> None:
    seen: list[tuple[str, object]] = []
    r = Reply(lambda f: seen.append(("made", f.result())))
    r.add_done_callback(lambda f: seen.append(("added", f.result())))
    r.set_result("answer")
    assert seen == [("made", "answer"), ("added", "answer")]


def test_an_error_is_raised_by_result_and_returned_by_exception() -> None:
    r = Reply()
    seen: list[BaseException | None] = []
    r.add_done_callback(lambda f: seen.append(f.exception()))
    error = KafkaConnectionError("gone")
    r.set_exception(error)
    assert seen == [error] and r.exception() is error
    with pytest.raises(KafkaConnectionError, match="gone"):
        r.result()


def test_a_reply_completes_once() -> None:
    r = Reply()
    r.set_result(1)
    with pytest.raises(InvalidStateError):
        r.set_result(2)
    with pytest.raises(InvalidStateError):
        r.set_exception(KafkaConnectionError("late"))
    assert r.result() == 1 and "finished" in repr(r)


def test_a_failing_callback_is_logged_and_the_others_still_run(
        caplog: pytest.LogCaptureFixture) -> None:
    r = Reply()
    seen: list[int] = []

    def boom(_: Future[object]) -> None:
        raise ValueError("callback bug")

    r.add_done_callback(boom)
    r.add_done_callback(lambda f: seen.append(f.result()))
    with caplog.at_level(logging.ERROR, logger="concurrent.futures"):
        r.set_result(7)
        r.add_done_callback(boom)
    assert seen == [7]
    assert sum("exception calling callback" in rec.getMessage() for rec in caplog.records) == 2


def _complete_when_waited_on(r: Reply, outcome: object) -> threading.Thread:
    """Complete ``r`` from another thread once something waits on it (a blocked
    ``result``/``exception`` made its Condition, or ``wait``/``as_completed`` its waiter)."""
    def run() -> None:
        deadline = time.monotonic() + 5
        while r._cond is None and not r._waiters and time.monotonic() < deadline:
            time.sleep(0.001)
        if isinstance(outcome, BaseException):
            r.set_exception(outcome)
        else:
            r.set_result(outcome)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_result_and_exception_wait_for_another_thread() -> None:
    r = Reply()
    thread = _complete_when_waited_on(r, "late answer")
    assert r.result(5) == "late answer"
    thread.join(5)
    failed = Reply()
    error = KafkaConnectionError("broke")
    thread = _complete_when_waited_on(failed, error)
    assert failed.exception(5) is error
    thread.join(5)


def test_result_times_out_while_no_answer_comes() -> None:
    r = Reply()
    with pytest.raises(concurrent.futures.TimeoutError):
        r.result(0.01)
    with pytest.raises(concurrent.futures.TimeoutError):
        r.exception(0.01)
    r.set_result("then")
    assert r.result(0) == "then"


def test_concurrent_futures_wait_and_as_completed_see_a_reply_finish() -> None:
    first, second = Reply(), Reply()
    thread = _complete_when_waited_on(second, "second")
    done, not_done = concurrent.futures.wait([first, second], timeout=5,
                                             return_when=concurrent.futures.FIRST_COMPLETED)
    thread.join(5)
    assert done == {second} and not_done == {first}
    third = Reply()
    thread = _complete_when_waited_on(third, KafkaConnectionError("failed"))
    finished = []
    for future in concurrent.futures.as_completed([third, second], timeout=5):
        finished.append(future)
    thread.join(5)
    assert finished == [second, third]
    done, _ = concurrent.futures.wait([third, first], timeout=5,
                                      return_when=concurrent.futures.FIRST_EXCEPTION)
    assert done == {third}


def test_asyncio_can_await_a_reply() -> None:
    async def main() -> object:
        r = Reply()
        waiting = asyncio.wrap_future(r)
        thread = threading.Thread(target=r.set_result, args=("from a thread",))
        thread.start()
        try:
            return await asyncio.wait_for(waiting, 5)
        finally:
            thread.join(5)

    assert asyncio.run(main()) == "from a thread"


def test_an_answered_request_made_no_condition() -> None:
    broker = FakeBroker(lambda sock, header, request: reply(sock, header,
                                                            HeartbeatResponse(error_code=0)))
    try:
        with BrokerConnection("127.0.0.1", broker.port) as conn:
            conn.send(HEARTBEAT).result(5)  # connected, versions negotiated
            answered = threading.Event()
            future = conn.send(HEARTBEAT)
            future.add_done_callback(lambda f: answered.set())
            assert answered.wait(5)
            assert isinstance(future, Reply) and future._cond is None
            assert future.result().error_code == 0
    finally:
        broker.close()
