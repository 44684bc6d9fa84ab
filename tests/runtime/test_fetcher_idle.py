"""An idle fetcher through a scripted connection (no broker): an unchanged answer to an
unchanged Fetch is sent again on the thread that completed it, without the fetcher thread,
and anything else (records, a seek) still goes through the fetcher thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from groupkit.config import ConsumerConfig
from groupkit.hooks import Event, FetchCompleted, Hook
from groupkit.protocol.messages.fetch import FetchRequest
from groupkit.protocol.records import encode_batch
from groupkit.runtime.fetcher import Fetcher
from tests.runtime.test_fetcher import TP, FakeCluster, ScriptedConnection, answer, fetched
from tests.support.waits import wait_for


class ThreadNoting(ScriptedConnection):
    """Notes which thread sent each Fetch; ``up`` False: ``send_connected`` sends nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.senders: list[threading.Thread] = []
        self.up = True

    def send(self, request: FetchRequest, version: int, timeout_ms: int | None = None
             ) -> Future[Any]:
        self.senders.append(threading.current_thread())
        return super().send(request, version, timeout_ms)

    def send_connected(self, request: FetchRequest, version: int, timeout_ms: int,
                       callback: Callable[[Future[Any]], object], *, standing: Any = None
                       ) -> bool:
        return self.up and super().send_connected(request, version, timeout_ms, callback)


def idle_fetcher(hooks: list[Hook] | None = None
                 ) -> tuple[Fetcher, ThreadNoting, threading.Event, Any]:
    """A fetcher at offset 0 whose last Fetch was answered with nothing new (twice: the
    first answer to a repeated request is the first that can be known to change nothing)."""
    cluster = FakeCluster()
    conn = cluster.conn = ThreadNoting()
    woken = threading.Event()
    config = ConsumerConfig(bootstrap_servers="h:1")
    fetcher = Fetcher(cluster, config, None, hooks or [],  # type: ignore[arg-type]
                      wakeup=woken.set)
    fetcher.assign([TP])
    fetcher.seek(TP, 0)
    fetcher.start()
    nothing = answer(b"", high_watermark=0)
    first, future = conn.next_request(1)
    future.set_result(nothing)
    second, future = conn.next_request(2)
    assert second == first, "an idle fetcher asks for the same again"
    wait_for(lambda: fetcher._quiet.get(0) is not None, 10, "the answer to be handled")
    return fetcher, conn, woken, (second, future, nothing)


def test_an_unchanged_answer_to_an_unchanged_fetch_is_sent_again_without_the_fetcher() -> None:
    fetcher, conn, woken, (request, future, nothing) = idle_fetcher()
    try:
        future.set_result(nothing)
        # Sent again at once, by this thread (the one that completed the answer).
        assert len(conn.sent) == 3 and conn.senders[2] is threading.current_thread()
        assert conn.sent[2][0] is request
        for count in range(3, 6):
            conn.sent[count - 1][1].set_result(nothing)
            assert len(conn.sent) == count + 1
            assert conn.senders[count] is threading.current_thread()
        # Records change something: the fetcher thread takes them and fetches on.
        conn.sent[5][1].set_result(answer(encode_batch([(None, b"new")], base_offset=0),
                                          high_watermark=1))
        assert woken.wait(10)
        assert [r.value for r in fetcher.take(10)] == [b"new"]
        after, _ = conn.next_request(7)
        assert fetched(after) == {0: 1}
        assert conn.senders[6] is not threading.current_thread()
    finally:
        fetcher.close(5)


def test_a_seek_during_an_idle_fetch_goes_through_the_fetcher_thread() -> None:
    fetcher, conn, woken, (request, future, nothing) = idle_fetcher()
    try:
        fetcher.seek(TP, 5)
        future.set_result(nothing)
        # The answer left before the seek: dropped, and the next Fetch asks from offset 5.
        after, _ = conn.next_request(3)
        assert fetched(after) == {0: 5}
        assert conn.senders[2] is not threading.current_thread()
    finally:
        fetcher.close(5)


def test_an_idle_fetch_whose_connection_is_down_goes_through_the_fetcher_thread() -> None:
    # A reader thread never connects: the fetcher thread sends the next Fetch (connecting
    # first, as it does for any Fetch).
    fetcher, conn, woken, (request, future, nothing) = idle_fetcher()
    try:
        conn.up = False
        future.set_result(nothing)
        after, _ = conn.next_request(3)
        assert after == request
        assert conn.senders[2] is not threading.current_thread()
    finally:
        fetcher.close(5)


def test_with_hooks_an_idle_fetch_is_still_sent_again_without_the_fetcher_and_told() -> None:
    # A hook (a worker pool's liveness hook, metrics) must not cost an idle consumer the
    # fetcher thread's wakeup per long poll; each round trip is told from the reader thread.
    told: list[tuple[Event, threading.Thread]] = []
    fetcher, conn, woken, (request, future, nothing) = idle_fetcher(
        [lambda event: told.append((event, threading.current_thread()))])
    try:
        told.clear()
        for count in range(2, 5):
            conn.sent[count - 1][1].set_result(nothing)
            assert len(conn.sent) == count + 1
            assert conn.senders[count] is threading.current_thread()
        fetches = [(e, t) for e, t in told if isinstance(e, FetchCompleted)]
        assert [(e.node_id, e.partitions, e.records, e.size) for e, _ in fetches] == \
            [(0, 1, 0, 0)] * 3
        assert all(t is threading.current_thread() and e.latency_s >= 0 for e, t in fetches)
        assert not woken.is_set()
    finally:
        fetcher.close(5)
