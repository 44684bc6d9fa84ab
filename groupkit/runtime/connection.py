"""One TCP connection to one broker: pipelined requests, futures, timeouts and reconnects.

``BrokerConnection.send(request)`` writes the frame and returns a ``concurrent.futures.Future``
at once. A reader thread per socket matches responses to requests by correlation id, in order,
and completes their futures, so a long-poll Fetch never delays a Heartbeat sent after it. A
watchdog thread per socket fails requests that outlive their timeout and then closes the
socket (later responses would be out of order), like the Java client. Any socket failure fails
every waiter at once with KafkaConnectionError; the next ``send`` reconnects after the
reconnect back-off (``groupkit.group.backoff``: exponential with jitter, as Java's). ``hooks`` hear of failed connects and broken connections
(``BrokerUnreachable``) and of the first connect after failures (``BrokerRecovered``). A
socket idle for ``connections_max_idle_ms`` is closed quietly; the next send reconnects (``idle``).

Future callbacks run on the reader thread (a timed standing request's, maybe on the thread
that sent it again or ended it: ``standing``): keep them short and never block in them.

Over 600 lines because the send path, the reader loop (with its inline path for an idle
member's unchanged answers and the standing requests' repeats), the watchdog and the
reconnects all work on one ``_Link`` under one lock: split apart, each part would reach into
the others' state. What a standing request does on its own is in ``standing``; when a socket
counts as idle, in ``idle``.
"""

from __future__ import annotations

import collections
import functools
import logging
import math
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

import attrs

from groupkit.errors import (
    ApiKey,
    AuthenticationError,
    ConfigError,
    CorruptFrame,
    ErrorCode,
    FeatureUnsupportedError,
    GroupkitError,
    KafkaConnectionError,
    NegotiationError,
    RequestDroppedError,
    RequestTimeoutError,
    UnsupportedVersionError,
    check_error,
)
from groupkit.group.backoff import Backoff, random_jitter
from groupkit.protocol import releases
from groupkit.protocol.framing import DEFAULT_MAX_FRAME_SIZE, Frame, FrameDecoder
from groupkit.protocol.headers import (
    decode_response_frame,
    encode_request_frame,
    peek_correlation_id,
    set_request_correlation_id,
)
from groupkit.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupkit.protocol.registry import request_class
from groupkit.protocol.schema import Request, Response
from groupkit.protocol.versions import CLIENT_VERSIONS, negotiate
from groupkit.runtime.idle import closed_idle, max_idle_s, quiet_until, shut
from groupkit.runtime.reachability import Reachability
from groupkit.runtime.reply import Reply
from groupkit.runtime.standing import InFlight, Standing, ride_all
from groupkit.runtime.tls import TlsConfig

if TYPE_CHECKING:
    import ssl

    from groupkit.hooks import Hook
    from groupkit.runtime.sasl import SaslCredentials
    from groupkit.runtime.tls_socket import SerialTlsSocket

__all__ = ["BrokerConnection"]

log = logging.getLogger(__name__)

_RECV_BYTES = 256 * 1024
#: Frames up to this size are kept for a repeat of the same request (see ``_send_on``), and
#: answers up to it for a repeat of the same answer (``_decode_repeat``).
_REPEAT_FRAME_BYTES = 16 * 1024
_PRODUCE = int(ApiKey.PRODUCE)
#: A response's correlation id where the frame is known to be long enough (``_read_loop``).
_correlation_id = struct.Struct(">i").unpack_from
#: How many times in a row a broker may close the connection right after the same request at
#: the same version before that version is taken as one it cannot serve (``_dropped``).
_DROPS_TO_GIVE_UP = 3
#: "Right after": the close comes within this many seconds of the request (a broker that
#: cannot read a request closes at once; one that dies while holding a request is an outage).
_DROP_WINDOW_S = 1.0


@attrs.define(eq=False)
class _Link:
    """One socket's lifetime: its in-flight requests and its reader and watchdog threads."""

    sock: socket.socket | SerialTlsSocket
    decoder: FrameDecoder
    #: Guards ``pending`` and ``closed``. The hot paths (``_send_on``, ``_complete``) hold it
    #: directly, a C-level context manager, instead of entering ``cond`` (a Python-level
    #: ``Condition.__enter__``/``__exit__`` pair per use); it is the same lock either way.
    lock: threading.Lock = attrs.field(factory=threading.Lock)
    #: The watchdog's wait and wakeups, on ``lock``.
    cond: threading.Condition = attrs.field(
        default=attrs.Factory(lambda link: threading.Condition(link.lock), takes_self=True))
    pending: collections.deque[InFlight] = attrs.field(factory=collections.deque)
    versions: dict[int, int] = attrs.field(factory=dict)
    closed: bool = False
    #: When the watchdog looks at ``pending`` next by itself (inf: only when woken).
    watch_until: float = math.inf
    #: The last answer to a repeated request: (api key, version, frame after the correlation
    #: id, decoded response).
    last_answer: tuple[int, int, bytes, Response] | None = None
    #: Whether any request after the handshake was answered on this socket (see ``_dropped``).
    answered: bool = False
    #: API key -> the (lowest, highest) version the broker listed in ApiVersions.
    advertised: dict[int, tuple[int, int]] = attrs.field(factory=dict)
    #: The timed standing requests on this socket (a failure fails the one waiting for its
    #: time), the one the reader parked last, and the reader's poll of the socket while one
    #: waits (``Standing.backstop``; made at a timed standing's first send).
    timed: list[Standing] = attrs.field(factory=list)
    parked: Standing | None = None
    poller: select.poll | None = None
    #: When the last answer was taken off ``pending`` (or it opened); closed as idle (``idle``).
    heard: float = attrs.field(factory=time.monotonic)
    expired: bool = False


@attrs.define(eq=False)
class BrokerConnection:
    """A pipelined connection to ``host:port``; ``send`` connects (and reconnects) on demand.

    Versions are negotiated with ApiVersions on every connect; ``send(request)`` uses the
    highest version both sides speak unless told otherwise. ``close()`` fails what is in flight.
    """

    host: str
    port: int
    client_id: str = "groupkit"
    request_timeout_ms: int = 30_000
    connect_timeout_ms: int = 10_000
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1_000
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    tls: TlsConfig | None = None
    sasl: SaslCredentials | None = None
    hooks: Sequence[Hook] = attrs.field(default=(), repr=False)
    #: Logs outages once per broker for all connections of a client (see reachability.py).
    reachability: Reachability | None = attrs.field(default=None, repr=False)
    #: "auto", or a Kafka release whose API versions cap the negotiated ones (releases.py).
    api_version: str = releases.AUTO
    jitter: Callable[[], float] = attrs.field(default=random_jitter, repr=False)
    #: A socket with nothing in flight for this long is closed (negative: never; see idle.py).
    connections_max_idle_ms: int = 540_000
    _link: _Link | None = attrs.field(default=None, init=False, repr=False)
    _state_lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False)
    _connect_lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False)
    _write_lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False)
    _ssl_context: ssl.SSLContext | None = attrs.field(default=None, init=False, repr=False)
    _backoff: Backoff = attrs.field(init=False, repr=False)
    _next_correlation_id: int = attrs.field(default=0, init=False, repr=False)
    #: The last request written, its version and its frame, for ``_send_on`` (None when
    #: that frame was too large to keep).
    _last_sent: tuple[Request, int, bytearray] | None = attrs.field(
        default=None, init=False, repr=False)
    _failures: int = attrs.field(default=0, init=False, repr=False)
    _retry_at: float = attrs.field(default=0.0, init=False, repr=False)
    _down_since: float = attrs.field(default=0.0, init=False, repr=False)
    _last_error: str = attrs.field(default="", init=False, repr=False)
    _closed: bool = attrs.field(default=False, init=False, repr=False)
    _cap: dict[int, int] | None = attrs.field(default=None, init=False, repr=False)
    #: The (api key, version) the broker last closed the connection right after, and how many
    #: times in a row (``_dropped``).
    _drops: tuple[tuple[int, int], int] | None = attrs.field(default=None, init=False,
                                                             repr=False)
    _max_idle: float | None = attrs.field(default=None, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.api_version != releases.AUTO:
            self._cap = releases.caps(releases.check(self.api_version))
        for name in ("request_timeout_ms", "connect_timeout_ms", "reconnect_backoff_ms",
                     "reconnect_backoff_max_ms", "max_frame_size"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be > 0, not {getattr(self, name)}")
        if self.tls is not None:
            self._ssl_context = self.tls.context()
        self._backoff = Backoff(self.reconnect_backoff_ms, self.reconnect_backoff_max_ms,
                                self.jitter)
        self._max_idle = max_idle_s(self.connections_max_idle_ms)

    @property
    def address(self) -> str:
        """``host:port`` of the broker."""
        return f"{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        """Whether a socket is open and its handshake (versions, SASL) is done."""
        link = self._link
        return link is not None and not link.closed and bool(link.versions)

    @property
    def versions(self) -> dict[int, int]:
        """API key -> the version negotiated on the current socket (empty when disconnected;
        the last socket's when it was closed as idle)."""
        link = self._link
        return dict(link.versions) if link is not None else {}

    def missing(self, api_key: int) -> UnsupportedVersionError:
        """Why no version of ``api_key`` can be sent on this connection (it is connected): the
        broker lacks the API (FeatureUnsupportedError naming the release that has it), the
        ``api_version`` pin names a release without it (the same), or the broker's versions
        and groupkit's do not meet."""
        link = self._link
        advertised = link.advertised if link is not None else {}
        api = _api_name(api_key)
        release = releases.first_release(api_key)
        since = f"Kafka {release} and newer have it" if release else \
            "no Kafka release groupkit knows has it"
        if self._cap is not None and api_key not in self._cap:
            return FeatureUnsupportedError(
                f"api_version={self.api_version!r} pins a Kafka release without {api} (API key"
                f" {api_key}); {since}.", feature=api, release=release)
        theirs = advertised.get(api_key)
        if theirs is None:
            return FeatureUnsupportedError(
                f"the broker at {self.address} does not offer {api} (API key {api_key});"
                f" {since}.",
                feature=api, release=release)
        ours = CLIENT_VERSIONS.get(api_key, (0, -1))
        if self._cap is not None:
            ours = (ours[0], min(ours[1], self._cap[api_key]))
        return UnsupportedVersionError(
            f"{api} (API key {api_key}): the broker at {self.address} speaks versions"
            f" {theirs[0]}-{theirs[1]}, groupkit {ours[0]}-{ours[1]}"
            + (f" (capped by api_version={self.api_version!r})" if self._cap is not None else "")
            + ", and they share none: upgrade the side that is older.")

    def in_flight(self) -> int:
        """How many requests are waiting for their response."""
        link = self._link
        if link is None:
            return 0
        with link.lock:
            return len(link.pending)

    # --- connecting ----------------------------------------------------------------------------

    def connect(self, timeout: float | None = None) -> None:
        """Connect and handshake now unless already connected; raises what went wrong.

        Waits out the reconnect backoff left by an earlier failure first. ``timeout`` (seconds)
        bounds all of it, the wait for another thread's connect attempt included: like the Java
        client's ``NetworkClient.poll(timer)``, a caller's deadline is never stretched by a
        backoff or a connection setup timeout longer than what it has left.
        """
        if self.connected:
            return  # every send asks: the common case takes no lock
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        while True:
            delay = self._retry_at - time.monotonic()
            if delay > 0:
                # Sleep the backoff without the lock, so callers with less time left can see
                # at once that the broker is unreachable instead of queueing behind a sleeper.
                if deadline is not None and time.monotonic() + delay >= deadline:
                    raise KafkaConnectionError(
                        f"{self.address} is unreachable ({self._last_error}; {self._failures}"
                        f" failed attempt(s)); the next attempt is {delay:.3g} s away, past"
                        " the caller's deadline")
                time.sleep(delay)
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self._connect_lock.acquire(timeout=-1 if left is None else left):
                raise RequestTimeoutError(
                    f"connecting to {self.address} did not finish in the {timeout:.3g} s left"
                    + (f" (last error: {self._last_error})" if self._failures else ""))
            try:
                if self._retry_at > time.monotonic():
                    continue  # another thread failed meanwhile: back off again
                self._connect_locked(deadline)
                return
            finally:
                self._connect_lock.release()

    def _connect_locked(self, deadline: float | None) -> None:
        if self._closed:
            raise KafkaConnectionError(f"the connection to {self.address} was closed by "
                                       "close(); create a new BrokerConnection")
        if self.connected:
            return
        try:
            self._open(None if deadline is None else deadline - time.monotonic())
        except BaseException as exc:
            if self._closed:
                raise  # close() ended the attempt: the broker is not to blame
            self._failures += 1
            self._last_error = str(exc)
            now = time.monotonic()
            if self._failures == 1:
                self._down_since = now
            self._retry_at = now + self._backoff.delay(self._failures)
            if self.hooks:
                from groupkit.hooks import BrokerUnreachable, emit

                emit(self.hooks, BrokerUnreachable(self.address, str(exc), self._failures))
            if self.reachability is not None:
                self.reachability.failed(self.address, str(exc))
            raise
        if self.reachability is not None:
            self.reachability.connected(self.address)
        if self._failures and self.hooks:
            from groupkit.hooks import BrokerRecovered, emit

            emit(self.hooks, BrokerRecovered(self.address, self._failures,
                                             time.monotonic() - self._down_since))
        self._failures = 0
        self._retry_at = 0.0

    def _open(self, left: float | None) -> None:
        timeout = self.connect_timeout_ms / 1000
        if left is not None:
            timeout = max(0.001, min(timeout, left))
        try:
            sock = socket.create_connection((self.host, self.port), timeout=timeout)
        except OSError as exc:
            raise KafkaConnectionError(
                f"cannot connect to {self.address}: {exc}; check that the broker runs and "
                "bootstrap_servers is right") from None
        stream: socket.socket | SerialTlsSocket = sock
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._ssl_context is not None:
                from groupkit.runtime.tls_socket import start_tls

                stream = start_tls(self._ssl_context, sock, self.host, self.address)
            else:
                sock.settimeout(None)
        except OSError as exc:
            sock.close()
            raise KafkaConnectionError(f"connection to {self.address} failed during setup: "
                                       f"{exc}") from None
        link = _Link(stream, FrameDecoder(self.max_frame_size))
        with self._state_lock:
            if self._closed:
                stream.close()
                raise KafkaConnectionError(f"the connection to {self.address} was closed by "
                                           "close() while connecting")
            self._link = link
        threading.Thread(target=self._read_loop, args=(link,), daemon=True,
                         name=f"groupkit-reader-{self.address}").start()
        threading.Thread(target=self._watch_loop, args=(link,), daemon=True,
                         name=f"groupkit-watchdog-{self.address}").start()
        try:
            versions = self._negotiate(link, timeout)
            if self.sasl is not None:
                auth_version = versions.get(ApiKey.SASL_AUTHENTICATE)
                if auth_version is None:
                    raise AuthenticationError(f"{self.address} does not support SaslAuthenticate;"
                                              " it cannot be used with SASL settings")
                from groupkit.runtime.sasl import authenticate

                authenticate(lambda req, v: self._call(link, req, v, timeout), self.sasl,
                             auth_version)
        except BaseException as exc:
            self._fail_link(link, KafkaConnectionError(
                f"handshake with {self.address} failed: {exc}"))
            raise
        link.versions = versions

    def _negotiate(self, link: _Link, timeout: float) -> dict[int, int]:
        """ApiVersions at our highest version, stepping down while the broker refuses it.

        Follows the Java client (NetworkClient.handleApiVersionsResponse, KIP-511): an
        UNSUPPORTED_VERSION answer lists the broker's own ApiVersions range when it can; the
        retry uses its highest version, or v0 when the list is empty, lacks ApiVersions or could
        not be read. Unlike Java, a listed version that is not lower than the refused one is
        lowered to refused - 1, so the retries always end.
        """
        version = ApiVersionsRequest.MAX_VERSION
        if self._cap is not None:
            version = min(version, self._cap.get(ApiKey.API_VERSIONS, 0))
        while True:
            response = self._call(link, ApiVersionsRequest(), version, timeout)
            assert isinstance(response, ApiVersionsResponse)
            if response.error_code != ErrorCode.UNSUPPORTED_VERSION:
                break
            if version == 0:
                raise UnsupportedVersionError(
                    f"{self.address} refused ApiVersions v0 with UNSUPPORTED_VERSION; it does not"
                    " speak the Kafka protocol versions groupkit knows, check bootstrap_servers")
            theirs = {k.api_key: k.max_version for k in response.api_keys}
            lower = max(0, min(theirs.get(ApiKey.API_VERSIONS, 0), version - 1))
            log.debug("%s refused ApiVersions v%d; retrying with v%d", self.address, version,
                      lower)
            version = lower
        check_error(response.error_code)
        link.advertised = {a.api_key: (a.min_version, a.max_version) for a in response.api_keys}
        return negotiate(response, self._cap)

    def _call(self, link: _Link, request: Request, version: int, timeout: float) -> Response:
        """Send one handshake request and wait for its answer (a decoding failure raises a
        NegotiationError naming the API and version)."""
        future = self._send_on(link, request, version, timeout, handshake=True)
        try:
            # The watchdog fails the future at ``timeout``; the margin only guards against a hang.
            result: Response = future.result(timeout + 5)
        except FutureTimeout:
            raise RequestTimeoutError(f"{type(request).__name__} to {self.address} got no "
                                      f"response within {timeout} s") from None
        return result

    # --- sending -------------------------------------------------------------------------------

    def send(self, request: Request, version: int | None = None, *,
             timeout_ms: int | None = None, deadline: float | None = None,
             callback: Callable[[Future[Any]], object] | None = None,
             standing: Standing | None = None) -> Future[Any]:
        """Send ``request`` and return a Future of its response; never waits for other replies.

        Connects first if needed. The Future fails with KafkaConnectionError (socket trouble),
        RequestTimeoutError (no answer within ``timeout_ms``, default ``request_timeout_ms``),
        CorruptFrame, UnsupportedVersionError or AuthenticationError. A Produce with
        ``acks=0`` gets no response: its Future holds None once the frame is written.
        ``callback``, if given, is added to the Future before it can complete, as
        ``add_done_callback`` would (in one call: the group runner sends every heartbeat so).
        ``standing``: as for ``send_connected``.
        """
        link = None
        try:
            started, asked, fresh = time.monotonic(), version, False
            # An explicit timeout covers connecting too; a caller's ``deadline`` bounds only
            # the connecting (the one part that blocks), while the request keeps its own
            # timeout: like ConsumerNetworkClient.poll(future, timer), a caller out of time
            # stops waiting without failing the request and closing the connection.
            link = self._link
            # ``connected``, read here once: a connected link needs no ``connect`` call.
            if link is None or link.closed or not link.versions:
                if timeout_ms is not None:
                    self.connect(timeout_ms / 1000)
                else:
                    self.connect(None if deadline is None else deadline - started)
                link, fresh = self._link, True
                if link is None or link.closed:
                    raise KafkaConnectionError(f"the connection to {self.address} closed while"
                                               " connecting; send again to reconnect")
            if version is None:  # read here, not in a method: every heartbeat asks
                version = link.versions.get(request.API_KEY)
                if version is None:
                    raise self.missing(request.API_KEY)
            if timeout_ms is None:
                timeout = self.request_timeout_ms / 1000
            else:
                timeout = max(0.001, timeout_ms / 1000 - (time.monotonic() - started))
            return self._send_on(link, request, version, timeout, callback=callback,
                                 standing=standing)
        except GroupkitError as exc:
            if link is not None and link.expired and not fresh:  # closed as idle since the
                # look above, nothing sent: on a new socket, as a first send (``idle``)
                return self.send(request, asked, timeout_ms=timeout_ms, deadline=deadline,
                                 callback=callback, standing=standing)
            failed: Future[Any] = Future()
            failed.set_exception(exc)
            if callback is not None:
                failed.add_done_callback(callback)
            return failed

    def send_connected(self, request: Request, version: int, timeout_ms: int,
                       callback: Callable[[Future[Any]], object], *,
                       standing: Standing | None = None) -> bool:
        """Send ``request`` only if the connection is up, ``callback`` added to its Future
        before it can complete; False, and nothing sent, when it is not (or closed meanwhile,
        or the send failed before writing).

        For a future's callback on a reader thread, which must never connect: an idle fetcher
        sends its Fetch again this way, in one call instead of ``connected``, ``send`` and
        ``add_done_callback``. Nothing connects here, so all of ``timeout_ms`` is the
        request's, as ``send`` gives it when already connected.

        With ``standing``, a request equal to the last one sent on the connection is sent
        again by the connection while its answer repeats (see ``Standing``); any other is
        sent once, as without.
        """
        link = self._link
        if link is None or link.closed or not link.versions:
            return False
        try:
            self._send_on(link, request, version, timeout_ms / 1000, callback=callback,
                          standing=standing)
        except GroupkitError:
            return False  # raised before writing (closed since the look above)
        return True

    def _send_on(self, link: _Link, request: Request, version: int, timeout: float, *,
                 handshake: bool = False,
                 callback: Callable[[Future[Any]], object] | None = None,
                 standing: Standing | None = None) -> Future[Any]:
        # A running Future (it cannot be cancelled: the request is out).
        future = Reply(callback)
        expects_response = request.API_KEY != _PRODUCE or getattr(request, "acks", 1) != 0
        with self._write_lock:
            correlation_id = self._next_correlation_id
            self._next_correlation_id = (correlation_id + 1) & 0x7FFFFFFF
            # A request equal to the last one sent (an idle member's heartbeat, an idle
            # fetch) is sent as the last frame with its new correlation id written into it
            # (the frame is sent before this lock is let go, so it can be reused) instead of
            # a new encoding. Requests are frozen values, so equal ones encode alike.
            last = self._last_sent
            if last is not None and last[1] == version \
                    and (last[0] is request or last[0] == request):
                repeat = True
                frame: bytes | bytearray = last[2]
                set_request_correlation_id(last[2], correlation_id)
                if last[0] is not request:
                    self._last_sent = (request, version, last[2])  # compared by identity next
                if standing is not None:
                    known = link.last_answer
                    # A timed one only on a plain socket, which its reader can wait on with a
                    # timeout (``Standing.backstop``).
                    if (standing.answer is None or (known is not None
                                                    and known[3] is standing.answer)) \
                            and (not standing.every or isinstance(link.sock, socket.socket)):
                        standing.frame = last[2]
                        standing.timeout = timeout
                    else:  # the answer kept is not the one the caller saw: sent once
                        standing.live = False
                        standing = None
            else:
                repeat = False
                if standing is not None:  # only a repeat's answer can be seen to repeat
                    standing.live = False
                    standing = None
                frame = encode_request_frame(request, version, correlation_id, self.client_id)
                self._last_sent = ((request, version, bytearray(frame))
                                   if len(frame) <= _REPEAT_FRAME_BYTES else None)
            now = time.monotonic()
            if not expects_response:
                link.heard = now  # nothing in flight: the send is the traffic (``idle``)
                error = self._fly(link, frame, None)
                if error is not None:
                    future.set_exception(KafkaConnectionError(
                        f"writing to {self.address} failed: {error}"))
                    return future
                future.set_result(None)
                return future
            self._fly(link, frame, InFlight(correlation_id, request.API_KEY, version,
                                            type(request).Response, future, now, now + timeout,
                                            handshake, repeat, standing))
        return future

    def _fly(self, link: _Link, frame: bytes | bytearray,
             pending: InFlight | None) -> OSError | ValueError | None:
        """Put ``pending`` in flight on ``link`` (None: a request that gets no answer) and write
        ``frame``, which carries its correlation id: how every request goes out, a first send
        or a standing one's repeat. The caller holds the write lock. Raises
        KafkaConnectionError, nothing written, when the link is closed; a failed write fails
        the link (and ``pending`` with it) and is returned."""
        with link.lock:
            if link.closed:
                raise KafkaConnectionError(f"the connection to {self.address} is closed; "
                                           "send again to reconnect")
            if pending is not None:
                link.pending.append(pending)
                standing = pending.standing
                if standing is not None and standing.every:
                    standing.sent_at = pending.sent_at
                    if standing.lock is None:  # its first send
                        if link.poller is None:  # the reader's wait while one is parked
                            assert isinstance(link.sock, socket.socket)  # (``_send_on``)
                            link.poller = select.poll()
                            link.poller.register(link.sock, select.POLLIN)
                        standing.start(link.lock, functools.partial(self._repeat, link,
                                                                    standing=standing),
                                       link.poller)
                        link.timed.append(standing)
                # Wake the watchdog only if it would look too late: an idle member's
                # heartbeats and fetches then cost it no wakeup each.
                if pending.deadline < link.watch_until:
                    link.cond.notify_all()
        try:
            link.sock.sendall(frame)
        except (OSError, ValueError) as exc:
            self._fail_link(link, KafkaConnectionError(
                f"writing to {self.address} failed: {exc}; the next send reconnects"))
            return exc
        return None

    # --- receiving -----------------------------------------------------------------------------

    def _read_loop(self, link: _Link) -> None:
        try:
            decoder = link.decoder
            recv = link.sock.recv
            pending = link.pending
            while True:
                parked = link.parked
                if parked is not None:  # a heartbeat waits for its time (``Standing.backstop``)
                    link.parked = None
                    parked.backstop()
                # A large frame (a Fetch answer) is received straight into its own buffer.
                room = decoder.room()
                if room is not None:
                    n = link.sock.recv_into(room)
                    room.release()
                    if not n:
                        self._dropped(link, f"{self.address} closed the connection")
                        return
                    frames = decoder.received(n)
                else:
                    data = recv(_RECV_BYTES)
                    if not data:
                        self._dropped(link, f"{self.address} closed the connection")
                        return
                    frames = decoder.feed(data)
                for frame in frames:
                    # The answer to a repeated request (an idle fetch, a heartbeat) whose bytes
                    # after the correlation id are the last answer's is that answer's decoded
                    # response, done here within one lock hold: an idle member's every answer
                    # takes this path on a cold wakeup, where each bytecode run counts, so it
                    # is inline, without ``_complete``'s calls and second lock hold. Responses
                    # are frozen and the callers of repeated requests only read them, so one
                    # object may serve twice. The bytes are compared in place (``endswith``);
                    # ``_complete`` does every other answer.
                    with link.lock:
                        head = pending[0] if pending else None
                        last = link.last_answer
                        if head is not None and head.repeat and last is not None \
                                and last[0] == head.api_key and last[1] == head.version \
                                and len(last[2]) == len(frame) - 4 and frame.endswith(last[2]) \
                                and _correlation_id(frame)[0] == head.correlation_id:
                            pending.popleft()
                            link.heard = time.monotonic()
                            response: Response | None = last[3]
                        else:
                            response = None
                    if response is None:
                        done = self._complete(link, frame)
                        if done is None:
                            continue
                        head, response = done
                    else:
                        assert head is not None
                        standing = head.standing
                        if standing is not None \
                                and self._stand_again(link, head, standing, response):
                            continue
                    if head.standing is not None:
                        head.standing.done()  # its Future completes: it stands no more
                    # Outside the lock: the future's callbacks may send (an idle fetch sends
                    # again).
                    head.future.set_result(response)
                    if not head.handshake:
                        link.answered = True
        except GroupkitError as exc:
            self._fail_link(link, exc)
        except OSError as exc:
            self._dropped(link, f"the connection to {self.address} broke: {exc}")
        except ValueError as exc:
            self._fail_link(link, KafkaConnectionError(
                f"the connection to {self.address} broke: {exc}; the next send reconnects"))

    def _stand_again(self, link: _Link, head: InFlight, standing: Standing,
                     response: Response) -> bool:
        """A standing request's answer (``head``'s) repeated: send it again now (``_repeat``),
        or, for a timed standing whose next send is not due yet, park ``head`` until a thread
        awake anyway or this reader (``Standing.backstop``) sends it at its time (``Standing.park``).
        False, and nothing sent, when the standing ended or the link closed meanwhile: the
        answer is delivered."""
        if standing.every:
            parked = standing.park(head, response)
            if parked:
                link.parked = standing
            if parked is not None:
                return parked
        elif not standing.live:
            return False
        return self._repeat(link, head, standing)  # a timed one answered late: at once

    def _repeat(self, link: _Link, head: InFlight, standing: Standing) -> bool:
        """Send a standing request again: its kept frame with a new correlation id, in flight
        as ``head`` (answered, so off ``pending``) with that id and new times; then ``tick``.
        False, and nothing sent, when the link closed meanwhile."""
        frame = standing.frame
        assert frame is not None
        before = head.sent_at
        with self._write_lock:
            correlation_id = self._next_correlation_id
            self._next_correlation_id = (correlation_id + 1) & 0x7FFFFFFF
            set_request_correlation_id(frame, correlation_id)
            head.correlation_id = correlation_id
            head.sent_at = now = time.monotonic()
            head.deadline = now + standing.timeout
            try:
                # A failed write fails the repeat just put in flight, and with it the Future.
                self._fly(link, frame, head)
            except KafkaConnectionError:
                return False
        tick = standing.tick
        if tick is not None:
            tick(before, now)
        if not standing.every:
            ride_all()  # a thread awake anyway: a heartbeat whose time has come goes too
        return True

    def _dropped(self, link: _Link, reason: str) -> None:
        """The broker closed ``link`` (or reset it). When it did so right after a request (within
        ``_DROP_WINDOW_S``), before answering anything on the link, its API and version are
        counted: the same one dropped ``_DROPS_TO_GIVE_UP`` times in a row is a version the
        broker advertises but cannot serve, and fails with RequestDroppedError naming the
        ``api_version`` pin that avoids it (the caller raises it; a group member stops with
        it) instead of a reconnect loop that would try it forever."""
        with link.lock:
            head = link.pending[0] if link.pending else None
        if head is None or head.handshake or link.answered \
                or time.monotonic() - head.sent_at > _DROP_WINDOW_S:
            self._drops = None
            self._fail_link(link, KafkaConnectionError(f"{reason}; the next send reconnects"))
            return
        api = head.response_cls.__name__.removesuffix("Response")
        key = (head.api_key, head.version)
        count = self._drops[1] + 1 if self._drops is not None and self._drops[0] == key else 1
        self._drops = (key, count)
        if count < _DROPS_TO_GIVE_UP:
            self._fail_link(link, KafkaConnectionError(
                f"{reason} right after {api} v{head.version}; the next send reconnects"))
            return
        pin = releases.newest_below(head.api_key, head.version)
        example = f"api_version={pin!r}" if pin else "an api_version pin"
        error = RequestDroppedError(
            f"{self.address} closed the connection right after {api} v{head.version}, {count}"
            f" times in a row, though it lists that version in ApiVersions: it cannot serve"
            f" {api} v{head.version} (or refuses to read the request); try {example}"
            + (f" (the newest release whose {api} stops below v{head.version})." if pin else "."))
        self._fail_link(link, error, head)

    def _complete(self, link: _Link, frame: Frame) -> tuple[InFlight, Response] | None:
        """The oldest request in flight and its response decoded from ``frame``, taken off
        ``pending``: every answer but an unchanged one to a repeated request (``_read_loop``).
        None when there is nothing to complete: the link failed (a handshake answer that
        cannot be read) or was closed meanwhile."""
        correlation_id = peek_correlation_id(frame)
        with link.lock:
            head = link.pending[0] if link.pending else None
        if head is None or head.correlation_id != correlation_id:
            expected = "none" if head is None else str(head.correlation_id)
            raise CorruptFrame(
                f"{self.address} sent a response with correlation id {correlation_id} but "
                f"the oldest request in flight has {expected}; the stream is out of step, "
                "so the connection is closed")
        try:
            response = self._decode_repeat(link, frame, head) if head.repeat \
                else _decode(frame, head)
        except CorruptFrame as exc:
            api = head.response_cls.__name__.removesuffix("Response")
            if not head.handshake:
                # The frame was whole, so the answer itself is bad: the request fails with
                # what was wrong at once (a retry would get the same answer; Java's parse
                # raises too), the others on the link as a lost connection.
                self._fail_link(link, CorruptFrame(
                    f"the {api} v{head.version} answer from {self.address} could not be read"
                    f" ({exc}); the connection is closed"), head)
                return None
            self._fail_link(link, NegotiationError(
                f"the {api} v{head.version} reply from {self.address} could not be read"
                f" during the connection handshake ({exc}); check that this address is a"
                " Kafka listener and that security_protocol matches it"), head)
            return None
        with link.lock:
            if link.closed:
                return None
            link.pending.popleft()
            link.heard = time.monotonic()
        return head, response

    @staticmethod
    def _decode_repeat(link: _Link, frame: Frame, head: InFlight) -> Response:
        """A new answer to a repeated request (see ``_complete``), kept for the next repeat.
        An answer over ``_REPEAT_FRAME_BYTES`` (a repeated fetch's records at last) is not
        kept: it would hold a copy of the frame, and through the response's record views the
        frame itself, until the next repeat."""
        if len(frame) > _REPEAT_FRAME_BYTES:
            link.last_answer = None
            return _decode(frame, head)
        response = _decode(frame, head)
        link.last_answer = (head.api_key, head.version, bytes(frame[4:]), response)
        return response

    def _watch_loop(self, link: _Link) -> None:
        """Fail the first request past its deadline. It sleeps until the earliest deadline it
        knows of and is woken only for an earlier one (see ``_fly``); an answered request is
        not taken off its schedule, so it may look once in vain, which costs one wakeup per
        request timeout instead of one per request. It also closes the socket once idle for
        ``connections_max_idle_ms`` (``idle``), deciding under the lock every send takes."""
        max_idle = self._max_idle
        with link.cond:
            while not link.closed:
                now = time.monotonic()
                expired = next((p for p in link.pending if p.deadline <= now), None)
                if expired is not None:
                    break
                until = min((p.deadline for p in link.pending), default=math.inf)
                if max_idle is not None:
                    quiet = quiet_until(link, max_idle, now)
                    if quiet <= now:
                        link.closed = link.expired = True  # in the hold every send takes
                        break
                    until = min(until, quiet)
                link.watch_until = until
                link.cond.wait(None if until == math.inf else until - now)
            else:
                return
        if expired is None:  # idle; kept as ``_link``: ``versions`` reads it till a connect
            shut(link.sock)
            closed_idle(self.address, link.heard)
            return
        timeout_ms = round((expired.deadline - expired.sent_at) * 1000)
        api = expired.response_cls.__name__.removesuffix("Response")
        self._fail_link(link, RequestTimeoutError(
            f"{api} v{expired.version} to {self.address} got no response within {timeout_ms} ms;"
            " the connection is closed and the next send reconnects"), expired)

    # --- failing and closing -------------------------------------------------------------------

    def _fail_link(self, link: _Link, error: GroupkitError,
                   culprit: InFlight | None = None) -> None:
        """Close ``link`` and fail all its waiters: ``culprit`` with ``error``, the rest with
        a KafkaConnectionError that says why."""
        with link.cond:
            if link.closed:
                return
            link.closed = True
            waiters = list(link.pending)
            link.pending.clear()
            for standing in link.timed:
                parked = standing.stop()
                if parked is not None:  # fails as if in flight
                    waiters.append(parked)
            link.cond.notify_all()
        shut(link.sock)
        with self._state_lock:
            if self._link is link:
                self._link = None
        if not self._closed:
            if self.reachability is not None:
                # Once per broker while it lasts; a reconnect that fails is the outage WARNING.
                self.reachability.closed(self.address, str(error))
            else:
                # An idle connection closed by the broker (connections.max.idle.ms) is routine.
                log.log(logging.WARNING if waiters else logging.INFO,
                        "connection to %s closed: %s", self.address, error)
            if link.versions and self.hooks:
                # An established connection broke (a failed handshake is reported by connect).
                from groupkit.hooks import BrokerUnreachable, emit

                emit(self.hooks, BrokerUnreachable(self.address, str(error), 0))
        for pending in waiters:
            if pending is culprit or (culprit is None and isinstance(error, KafkaConnectionError)):
                exc: GroupkitError = error
            else:
                exc = KafkaConnectionError(f"the connection to {self.address} was closed: {error}")
                exc.__cause__ = error
            pending.future.set_exception(exc)

    def close(self) -> None:
        """Close the socket for good; requests in flight fail with KafkaConnectionError."""
        with self._state_lock:
            self._closed = True
            link = self._link
        if link is not None:
            self._fail_link(link, KafkaConnectionError(
                f"the connection to {self.address} was closed by close()"))

    def __enter__(self) -> BrokerConnection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _api_name(api_key: int) -> str:
    """``OffsetDelete`` for key 47: the request class's name, else the ApiKey member's."""
    try:
        return request_class(api_key).__name__.removesuffix("Request")
    except KeyError:
        pass
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"API {api_key}"


def _decode(frame: Frame, pending: InFlight) -> Response:
    if pending.api_key == ApiKey.API_VERSIONS:
        return _decode_api_versions(frame, pending.version)
    return decode_response_frame(frame, pending.response_cls, pending.version)[1]


def _decode_api_versions(frame: Frame, version: int) -> ApiVersionsResponse:
    """An ApiVersions reply, which a broker that refuses ``version`` may write in v0 form.

    Java parses at the version sent and, failing that, at v0 (ApiVersionsResponse.parse). A
    parse that uses every byte is tried first in both forms, so a v0 reply is never misread as
    a longer one; then each form with trailing bytes ignored. When no form parses but the error
    code (the first field in every version) is UNSUPPORTED_VERSION, the answer counts as that
    error with an unreadable version list, so negotiation retries at v0 rather than giving up.
    """
    forms = [(version, True), (0, True), (version, False), (0, False)]
    first_error: CorruptFrame | None = None
    for form, strict in dict.fromkeys(forms):
        try:
            return decode_response_frame(frame, ApiVersionsResponse, form, strict=strict)[1]
        except CorruptFrame as exc:
            first_error = first_error or exc
    if len(frame) >= 6 and int.from_bytes(frame[4:6], "big", signed=True) == ErrorCode.UNSUPPORTED_VERSION:
        return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=[])
    assert first_error is not None
    raise first_error
