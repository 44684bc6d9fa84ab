"""A recording, fault-injecting TCP proxy in front of one Kafka broker.

Clients connect to the proxy, which forwards bytes both ways and keeps every request frame with
its decoded header and the broker's matching response frame. A broker advertises its own
address in Metadata and FindCoordinator answers, so the proxy rewrites that address to its own
there (decoded with groupkit's message classes and re-encoded at the same version); clients
therefore keep every connection, the group coordinator's included, going through it.

Faults for the chaos tests: ``arm(Fault(api_key, action))`` makes the next request with that API
key (from a matching client id) hit its connection with one of
- ``reset``: the request is dropped and the client's socket is reset (TCP RST);
- ``stall``: the request, and those after it on that connection, wait ``seconds`` first;
- ``blackhole``: nothing more passes either way on that connection, which stays open, as in a
  network partition the client can only notice by its own timeouts;
- ``lose_answer``: the request reaches the broker, which acts on it, but its answer is dropped
  and the client's socket is reset when it arrives (a write the client cannot know happened).
Each firing is kept in ``fired``.

``rewriters`` maps an API key to a function that may change the broker's answers of that API
before the client gets them: ``rewrite(connection, version, request_frame, response_frame)``
returns the response frame to send on (the exchange keeps the broker's own bytes); see
``tests/support/kafka_fetch_view.py``.

Plain threads and blocking sockets; everything it starts it stops in ``stop()`` (bounded).
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import struct
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Literal

import attrs

from groupkit.errors import GroupkitError
from groupkit.protocol.framing import FrameDecoder
from groupkit.protocol.headers import decode_response_frame, encode_response_frame
from groupkit.protocol.messages.find_coordinator import FindCoordinatorResponse
from groupkit.protocol.messages.metadata import MetadataResponse
from groupkit.protocol.primitives import Reader
from groupkit.protocol.schema import Response
from tests.support.fake_broker import shut

__all__ = ["Exchange", "Fault", "Fired", "RecordingProxy"]

_METADATA_KEY = 3
_FIND_COORDINATOR_KEY = 10
_REWRITTEN: dict[int, type[Response]] = {
    _METADATA_KEY: MetadataResponse,
    _FIND_COORDINATOR_KEY: FindCoordinatorResponse,
}
_RECV_SIZE = 1 << 16


@attrs.frozen
class Exchange:
    """One request a client sent through the proxy and the broker's answer to it.

    ``request`` and ``response`` are whole frames without their size prefix, exactly as the
    client and the broker sent them (the response before any address rewrite); ``response`` is
    None when the connection closed first. ``seq`` and ``response_seq`` come from one counter
    across all connections, drawn when the request passed and when the response did, so
    ``response_seq < other.seq`` means the client had this answer before it sent ``other``.
    ``sent_at`` and ``answered_at`` are when the request and its response passed the proxy
    (``time.monotonic()``), for timelines.
    """

    seq: int
    connection: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    request: bytes = attrs.field(repr=False)
    response: bytes | None = attrs.field(repr=False)
    response_seq: int | None = None
    sent_at: float = 0.0
    answered_at: float | None = None


@attrs.frozen
class Fault:
    """What to do to the connection that carries the next request with ``api_key``
    (from a client id starting with ``client_id``, when given)."""

    api_key: int
    action: Literal["reset", "stall", "blackhole", "lose_answer"]
    seconds: float = 0.0
    client_id: str | None = None


@attrs.frozen
class Fired:
    """A fault that hit: the connection, the request's client id and seq, and when."""

    fault: Fault
    connection: int
    client_id: str | None
    seq: int
    at: float


@attrs.define
class _Pending:
    seq: int
    connection: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    request: bytes
    response: bytes | None = None
    response_seq: int | None = None
    sent_at: float = attrs.field(factory=time.monotonic)
    answered_at: float | None = None
    lose_answer: bool = False

    def freeze(self) -> Exchange:
        return Exchange(self.seq, self.connection, self.api_key, self.api_version,
                        self.correlation_id, self.client_id, self.request, self.response,
                        self.response_seq, self.sent_at, self.answered_at)


def _read_header(frame: bytes) -> tuple[int, int, int, str | None]:
    """api_key, api_version, correlation_id and client_id: the prefix of every request header."""
    r = Reader(frame, context="request header")
    return r.int16(), r.int16(), r.int32(), r.nullable_string()


def _reset(sock: socket.socket) -> None:
    """Close ``sock`` so that the peer gets a TCP RST rather than an orderly end of stream."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


@attrs.define
class RecordingProxy:
    """Forward ``host:port`` (ephemeral) to ``upstream_host:upstream_port`` and record traffic.

    ``errors`` collects what went wrong inside the proxy (a frame it could not parse, an
    address it could not rewrite); a capture is only trustworthy while it stays empty.
    """

    upstream_host: str
    upstream_port: int
    host: str = "127.0.0.1"
    connect_timeout: float = 5.0
    #: The port to listen on; 0 picks a free one (a fixed one lets a test bring a proxy back).
    listen_port: int = 0
    #: API key -> rewrite(connection, version, request frame, response frame) -> response frame.
    rewriters: dict[int, Callable[[int, int, bytes, bytes], bytes]] = attrs.field(factory=dict)
    port: int = attrs.field(default=0, init=False)
    errors: list[str] = attrs.field(factory=list, init=False)
    _listener: socket.socket | None = attrs.field(default=None, init=False, repr=False)
    _threads: list[threading.Thread] = attrs.field(factory=list, init=False, repr=False)
    _sockets: list[socket.socket] = attrs.field(factory=list, init=False, repr=False)
    _records: list[_Pending] = attrs.field(factory=list, init=False, repr=False)
    _changed: threading.Condition = attrs.field(factory=threading.Condition, init=False,
                                                repr=False)
    _seq: itertools.count[int] = attrs.field(factory=itertools.count, init=False, repr=False)
    _stopping: bool = attrs.field(default=False, init=False, repr=False)
    _armed: list[Fault] = attrs.field(factory=list, init=False, repr=False)
    fired: list[Fired] = attrs.field(factory=list, init=False)
    _blackholed: set[int] = attrs.field(factory=set, init=False, repr=False)
    _lost: dict[int, bool] = attrs.field(factory=dict, init=False, repr=False)
    _stopped: threading.Event = attrs.field(factory=threading.Event, init=False, repr=False)

    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:PORT"`` of the proxy, to give to clients instead of the broker's."""
        return f"{self.host}:{self.port}"

    def start(self) -> RecordingProxy:
        """Listen on a free loopback port and accept clients in a background thread."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self.listen_port))
        listener.listen(64)
        self._listener = listener
        self.port = int(listener.getsockname()[1])
        self._spawn(self._accept_loop, "proxy-accept")
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Close every socket and wait (at most ``timeout`` s in all) for the threads to end."""
        self._stopped.set()
        with self._changed:
            self._stopping = True
            sockets = list(self._sockets)
            self._sockets.clear()
        if self._listener is not None:
            shut(self._listener)
            self._listener = None
        for sock in sockets:
            shut(sock)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            raise RuntimeError(f"proxy threads did not stop within {timeout} s: {alive}")

    def __enter__(self) -> RecordingProxy:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def exchanges(self) -> list[Exchange]:
        """A snapshot of every request so far, in the order they passed the proxy."""
        with self._changed:
            return [p.freeze() for p in self._records]

    def wait_until(self, done: Callable[[list[Exchange]], bool], timeout: float,
                   what: str) -> list[Exchange]:
        """Return the snapshot for which ``done(snapshot)`` first holds; TimeoutError after
        ``timeout`` s. Checked again whenever a request or response passes."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                snapshot = [p.freeze() for p in self._records]
                if done(snapshot):
                    return snapshot
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out after {timeout} s waiting for {what}; "
                                       f"proxy errors: {self.errors}")
                self._changed.wait(min(left, 0.5))

    def arm(self, fault: Fault) -> None:
        """Hit the connection of the next request that matches ``fault`` (once)."""
        with self._changed:
            self._armed.append(fault)

    def wait_fired(self, count: int, timeout: float) -> list[Fired]:
        """Wait until ``count`` faults have fired; TimeoutError after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.fired) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self.fired)} of {count} faults fired within "
                                       f"{timeout} s; still armed: {self._armed}")
                self._changed.wait(min(left, 0.5))
            return list(self.fired)

    def _spawn(self, target: Callable[..., None], name: str, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _track(self, sock: socket.socket) -> bool:
        with self._changed:
            if self._stopping:
                return False
            self._sockets.append(sock)
            return True

    def _accept_loop(self) -> None:
        assert self._listener is not None
        listener = self._listener
        for connection in itertools.count():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection((self.upstream_host, self.upstream_port),
                                                    timeout=self.connect_timeout)
            except OSError as exc:
                self._error(f"connection {connection}: cannot reach the broker: {exc}")
                shut(client)
                continue
            upstream.settimeout(None)
            if not (self._track(client) and self._track(upstream)):
                shut(client)
                shut(upstream)
                return
            pending: dict[int, _Pending] = {}
            self._spawn(self._pump_requests, f"proxy-{connection}-requests",
                        connection, client, upstream, pending)
            self._spawn(self._pump_responses, f"proxy-{connection}-responses",
                        connection, upstream, client, pending)

    def _pump_requests(self, connection: int, client: socket.socket, upstream: socket.socket,
                       pending: dict[int, _Pending]) -> None:
        decoder = FrameDecoder()
        try:
            while data := client.recv(_RECV_SIZE):
                for frame in decoder.feed(data):
                    record = self._record_request(connection, frame, pending)
                    if connection in self._blackholed:
                        continue
                    fault = self._fault_for(connection, record)
                    if fault is not None and fault.action == "reset":
                        _reset(client)
                        return
                    if fault is not None and fault.action == "blackhole":
                        self._blackholed.add(connection)
                        continue
                    if fault is not None and fault.action == "lose_answer":
                        assert record is not None
                        record.lose_answer = True
                        upstream.sendall(len(frame).to_bytes(4, "big") + frame)
                        continue
                    if fault is not None and self._stopped.wait(fault.seconds):
                        return
                    upstream.sendall(len(frame).to_bytes(4, "big") + frame)
        except (OSError, GroupkitError) as exc:
            self._note_failure(connection, "client side", exc)
        finally:
            shut(client)
            shut(upstream)

    def _pump_responses(self, connection: int, upstream: socket.socket, client: socket.socket,
                        pending: dict[int, _Pending]) -> None:
        decoder = FrameDecoder()
        try:
            while data := upstream.recv(_RECV_SIZE):
                for frame in decoder.feed(data):
                    answer, lost = self._answer(connection, frame, pending)
                    if lost:
                        _reset(client)
                        return
                    if connection not in self._blackholed:
                        client.sendall(answer)
        except (OSError, GroupkitError) as exc:
            self._note_failure(connection, "broker side", exc)
        finally:
            shut(upstream)
            shut(client)

    def _record_request(self, connection: int, frame: bytes,
                        pending: dict[int, _Pending]) -> _Pending | None:
        try:
            api_key, version, correlation_id, client_id = _read_header(frame)
        except GroupkitError as exc:
            self._error(f"connection {connection}: unreadable request header: {exc}")
            return None
        with self._changed:
            record = _Pending(next(self._seq), connection, api_key, version, correlation_id,
                              client_id, frame)
            pending[correlation_id] = record
            self._records.append(record)
            self._changed.notify_all()
        return record

    def _fault_for(self, connection: int, record: _Pending | None) -> Fault | None:
        """The armed fault this request sets off (and disarms), if any."""
        if record is None:
            return None
        with self._changed:
            for fault in self._armed:
                if fault.api_key == record.api_key and (
                        fault.client_id is None
                        or (record.client_id or "").startswith(fault.client_id)):
                    self._armed.remove(fault)
                    self.fired.append(Fired(fault, connection, record.client_id, record.seq,
                                            time.monotonic()))
                    self._changed.notify_all()
                    return fault
        return None

    def _answer(self, connection: int, frame: bytes,
                pending: dict[int, _Pending]) -> tuple[bytes, bool]:
        """Record the response; the frame (size prefix included) to send on, and whether a
        ``lose_answer`` fault drops it instead."""
        answer = self._rewritten(connection, frame, pending)
        record_lost = self._lost.pop(connection, False)
        return answer, record_lost

    def _rewritten(self, connection: int, frame: bytes, pending: dict[int, _Pending]) -> bytes:
        prefix = len(frame).to_bytes(4, "big")
        try:
            correlation_id = Reader(frame, context="response header").int32()
        except GroupkitError as exc:
            self._error(f"connection {connection}: unreadable response header: {exc}")
            return prefix + frame
        with self._changed:
            record = pending.pop(correlation_id, None)
            if record is not None and record.lose_answer:
                self._lost[connection] = True
            if record is not None:
                record.response = frame
                record.response_seq = next(self._seq)
                record.answered_at = time.monotonic()
                self._changed.notify_all()
        if record is None:
            self._error(f"connection {connection}: response to unknown request {correlation_id}")
            return prefix + frame
        rewriter = self.rewriters.get(record.api_key)
        if rewriter is not None:
            try:
                answer = rewriter(connection, record.api_version, record.request, frame)
            except Exception as exc:  # a rewriter's bug is the test's finding, not a dead pump
                self._error(f"connection {connection}: cannot rewrite API {record.api_key} "
                            f"v{record.api_version}: {exc}")
                return prefix + frame
            return len(answer).to_bytes(4, "big") + answer
        response_cls = _REWRITTEN.get(record.api_key)
        if response_cls is None:
            return prefix + frame
        try:
            return self._rewrite(response_cls, record.api_version, frame)
        except GroupkitError as exc:
            self._error(f"connection {connection}: cannot rewrite {response_cls.__name__} "
                        f"v{record.api_version}: {exc}")
            return prefix + frame

    def _rewrite(self, response_cls: type[Response], version: int, frame: bytes) -> bytes:
        correlation_id, response = decode_response_frame(frame, response_cls, version)
        if encode_response_frame(response, version, correlation_id)[4:] != frame:
            raise GroupkitError("re-encoding the unchanged response does not give the broker's "
                                "bytes back, so a rewrite would change more than the address")
        if isinstance(response, MetadataResponse):
            brokers = [attrs.evolve(b, host=self.host, port=self.port)
                       if self._is_upstream(b.host, b.port) else b for b in response.brokers]
            rewritten: Response = attrs.evolve(response, brokers=brokers)
        else:
            assert isinstance(response, FindCoordinatorResponse)
            coordinators = [attrs.evolve(c, host=self.host, port=self.port)
                            if self._is_upstream(c.host, c.port) else c
                            for c in response.coordinators]
            rewritten = attrs.evolve(response, coordinators=coordinators)
            if self._is_upstream(response.host, response.port):
                rewritten = attrs.evolve(rewritten, host=self.host, port=self.port)
        return encode_response_frame(rewritten, version, correlation_id)

    def _is_upstream(self, host: str, port: int) -> bool:
        return port == self.upstream_port and host in (self.upstream_host, "localhost")

    def _note_failure(self, connection: int, side: str, exc: Exception) -> None:
        # A closed or reset socket is how connections end; only a protocol error is a finding.
        if isinstance(exc, GroupkitError):
            self._error(f"connection {connection} ({side}): {exc}")

    def _error(self, message: str) -> None:
        with self._changed:
            self.errors.append(message)
            self._changed.notify_all()
