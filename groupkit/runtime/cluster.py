"""The cluster as a client sees it: bootstrap, metadata refresh, routing and coordinators.

``Cluster`` holds one pooled ``BrokerConnection`` per (node id, purpose), so a consumer can keep
its fetch long-polls and its group coordinator traffic on separate sockets. It keeps the
metadata value (:class:`~groupkit.runtime.metadata.ClusterMetadata`) fresh: on NOT_LEADER,
UNKNOWN_TOPIC, a broken connection (see ``observe``) or after ``metadata_max_age_ms``.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

import attrs

from groupkit.config import ClientConfig
from groupkit.errors import (
    ApiKey,
    BrokerError,
    ConfigError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    ErrorCode,
    GroupkitError,
    IllegalStateError,
    KafkaConnectionError,
    LeaderNotAvailableError,
    NoBrokersAvailable,
    NotCoordinatorError,
    NotLeaderOrFollowerError,
    RequestTimeoutError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    check_error,
    error_for_code,
)
from groupkit.protocol.messages.find_coordinator import (
    KEY_TYPE_GROUP,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupkit.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from groupkit.protocol.schema import Request
from groupkit.runtime.connection import BrokerConnection
from groupkit.runtime.metadata import BrokerInfo, ClusterMetadata
from groupkit.runtime.reachability import Reachability
from groupkit.runtime.tls import TlsConfig

if TYPE_CHECKING:
    from groupkit.hooks import Hook

__all__ = ["Cluster", "DEFAULT", "COORDINATOR", "FETCH"]

log = logging.getLogger(__name__)

#: Connection purposes: ordinary requests, the group coordinator, fetch long-polls.
DEFAULT = "default"
COORDINATOR = "coordinator"
FETCH = "fetch"

_BATCHED_FIND_COORDINATOR = 4

#: Errors after which the metadata is out of date.
_STALE_METADATA = (NotLeaderOrFollowerError, UnknownTopicOrPartitionError,
                   LeaderNotAvailableError, KafkaConnectionError, RequestTimeoutError)
#: Metadata topic errors that mean the topic is not there.
_MISSING_TOPIC = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})
#: FindCoordinator answers worth asking again after a backoff.
_COORDINATOR_RETRY = (CoordinatorNotAvailableError, CoordinatorLoadInProgressError,
                      NotCoordinatorError)


@attrs.define(eq=False)
class Cluster:
    """Connections to every broker of one cluster, and what the cluster looks like.

    Safe to share between threads. ``allow_auto_topic_creation`` is sent with topic metadata
    requests (producers want it; admin tools do not).
    """

    config: ClientConfig
    allow_auto_topic_creation: bool = False
    #: Given to every connection (failed connects, broken connections, recoveries).
    hooks: Sequence[Hook] = ()
    metadata: ClusterMetadata = attrs.field(factory=ClusterMetadata, init=False)
    #: Which brokers answer, shared by every connection this cluster makes.
    reachability: Reachability = attrs.field(factory=Reachability, init=False)
    _topics: set[str] = attrs.field(factory=set, init=False, repr=False)
    _conns: dict[tuple[int, str], BrokerConnection] = attrs.field(factory=dict, init=False,
                                                                  repr=False)
    _coordinator_brokers: dict[int, BrokerInfo] = attrs.field(factory=dict, init=False,
                                                              repr=False)
    _coordinator_cache: dict[tuple[int, str], int] = attrs.field(factory=dict, init=False,
                                                                 repr=False)
    _lock: threading.RLock = attrs.field(factory=threading.RLock, init=False, repr=False)
    _refresh_lock: threading.RLock = attrs.field(factory=threading.RLock, init=False,
                                                 repr=False)
    _fetched_at: float = attrs.field(default=0.0, init=False, repr=False)
    _stale: bool = attrs.field(default=True, init=False, repr=False)
    _refresh_failures: int = attrs.field(default=0, init=False, repr=False)
    _next_refresh_at: float = attrs.field(default=0.0, init=False, repr=False)
    _closed: bool = attrs.field(default=False, init=False, repr=False)
    #: Called (no lock held) each time the metadata goes stale (``when_stale``).
    _stale_listeners: list[Callable[[], object]] = attrs.field(factory=list, init=False,
                                                              repr=False)

    def __attrs_post_init__(self) -> None:
        _check_resolvable(self.config.bootstrap_servers)

    # --- connections ---------------------------------------------------------------------------

    def _new_connection(self, host: str, port: int) -> BrokerConnection:
        c = self.config
        tls = (TlsConfig(c.ssl_cafile, c.ssl_certfile, c.ssl_keyfile, c.ssl_password,
                         c.ssl_check_hostname) if c.uses_tls else None)
        sasl = None
        if c.uses_sasl:
            from groupkit.runtime.sasl import SaslCredentials

            sasl = SaslCredentials(c.sasl_mechanism, c.sasl_plain_username or "",
                                   c.sasl_plain_password or "")
        return BrokerConnection(
            host, port, client_id=c.client_id, request_timeout_ms=c.request_timeout_ms,
            connect_timeout_ms=c.socket_connection_setup_timeout_ms,
            reconnect_backoff_ms=max(1, c.reconnect_backoff_ms),
            reconnect_backoff_max_ms=max(1, c.reconnect_backoff_max_ms),
            max_frame_size=c.max_frame_size, tls=tls, sasl=sasl, hooks=self.hooks,
            reachability=self.reachability, api_version=c.api_version,
            connections_max_idle_ms=c.connections_max_idle_ms)

    def connection(self, node_id: int, purpose: str = DEFAULT) -> BrokerConnection:
        """The pooled connection to ``node_id`` for ``purpose`` (made on first use)."""
        key = (node_id, purpose)
        with self._lock:
            if self._closed:
                raise IllegalStateError("this client is closed; create a new one")
            conn = self._conns.get(key)
            if conn is not None and conn.connected:
                return conn
            broker = self.metadata.broker(node_id) or self._coordinator_brokers.get(node_id)
            if conn is not None:
                if broker is None or (broker.host, broker.port) == (conn.host, conn.port):
                    return conn
                # The node is down at the address the pool knows and metadata gives another
                # (a broker that came back elsewhere). Java reconnects to the address metadata
                # gives now (NetworkClient.initiateConnect; ClusterConnectionStates.connecting
                # starts afresh when a node's host changed); an established connection is kept
                # until it breaks, as Java keeps it. The old one is closed, so whoever still
                # holds it fails and routes again.
                log.info("node %d moved from %s to %s:%d; connecting there", node_id,
                         conn.address, broker.host, broker.port)
                conn.close()
            if broker is None:
                raise KafkaConnectionError(
                    f"node {node_id} is not in the cluster metadata; refresh metadata and route"
                    " the request again")
            conn = self._conns[key] = self._new_connection(broker.host, broker.port)
            return conn

    def send(self, node_id: int, request: Request, purpose: str = DEFAULT,
             version: int | None = None, timeout_ms: int | None = None,
             deadline: float | None = None) -> Future[Any]:
        """Send ``request`` to ``node_id``; a connection failure marks the metadata stale.

        ``deadline`` (``time.monotonic()``) bounds connecting, not the request's timeout."""
        try:
            conn = self.connection(node_id, purpose)
        except GroupkitError as exc:
            self.observe(exc)
            failed: Future[Any] = Future()
            failed.set_exception(exc)
            return failed
        future = conn.send(request, version, timeout_ms=timeout_ms, deadline=deadline)
        future.add_done_callback(self._observe_future)
        return future

    def call(self, node_id: int, request: Request, purpose: str = DEFAULT,
             version: int | None = None, deadline: float | None = None) -> Any:
        """Send and wait for the response, bounded by the request timeout and ``deadline``
        (a ``time.monotonic()`` value: the caller's, connecting included)."""
        return self.answer(self.send(node_id, request, purpose, version, deadline=deadline),
                           deadline, f"{type(request).__name__} to node {node_id}")

    def answer(self, future: Future[Any], deadline: float | None, what: str) -> Any:
        """The answer of a sent request, waited for within the request timeout and ``deadline``;
        a RequestTimeoutError naming ``what`` when it is not there in time."""
        return wait_for(future, self._wait_s(deadline), what)

    def _wait_s(self, deadline: float | None) -> float:
        """How long to wait for an answer: the request timeout (and a margin, the connection's
        watchdog fails the request first), cut to what is left before ``deadline``."""
        wait = self.config.request_timeout_ms / 1000 + 1
        return wait if deadline is None else max(0.0, min(wait, deadline - time.monotonic()))

    def least_loaded_node(self, deadline: float | None = None) -> int:
        """A known broker, preferring one with a connection and few requests in flight."""
        brokers = list(self.metadata.brokers)
        if not brokers:
            self.bootstrap(deadline=deadline)
            brokers = list(self.metadata.brokers)

        def load(node: int) -> tuple[int, int]:
            conn = self._conns.get((node, DEFAULT))
            if conn is None or not conn.connected:
                return (1, 0)
            return (0, conn.in_flight())
        return min(brokers, key=load)

    def api_version(self, node_id: int, api_key: int,
                    deadline: float | None = None) -> int | None:
        """The negotiated version of ``api_key`` with ``node_id`` (connecting if needed,
        within ``deadline``)."""
        conn = self.connection(node_id)
        try:
            conn.connect(None if deadline is None else deadline - time.monotonic())
        except GroupkitError as exc:
            self.observe(exc)
            raise
        return conn.versions.get(api_key)

    def require_version(self, node_id: int, api_key: int, deadline: float | None = None) -> int:
        """``api_version`` for an API the caller cannot do without: FeatureUnsupportedError
        (naming the Kafka release that has the API) when the broker or the pin lacks it."""
        version = self.api_version(node_id, api_key, deadline)
        if version is None:
            raise self.connection(node_id).missing(api_key)
        return version

    # --- metadata ------------------------------------------------------------------------------

    def bootstrap(self, timeout_ms: int | None = None,
                  deadline: float | None = None) -> ClusterMetadata:
        """Ask each bootstrap server in turn for metadata until one answers.

        Raises NoBrokersAvailable, naming every server and why it failed, when none answers
        within ``timeout_ms`` (default: the request timeout) or by ``deadline``.
        """
        timeout = (timeout_ms if timeout_ms is not None else self.config.request_timeout_ms)
        deadline = min(time.monotonic() + timeout / 1000,
                       deadline if deadline is not None else float("inf"))
        failures: list[str] = []
        for host, port in self.config.bootstrap_servers:
            left = deadline - time.monotonic()
            if left <= 0:
                failures.append(f"{host}:{port}: not tried, out of time")
                continue
            conn = self._new_connection(host, port)
            try:
                response = conn.send(self._metadata_request(sorted(self._topics)),
                                     timeout_ms=max(1, int(left * 1000))).result(left + 1)
            except UnsupportedVersionError:
                raise  # the same request fails alike on every server: say why, not "none"
            except (GroupkitError, TimeoutError) as exc:
                failures.append(f"{host}:{port}: {exc}")
                continue
            finally:
                conn.close()
            self._install(response, sorted(self._topics))
            return self.metadata
        raise NoBrokersAvailable(
            "no bootstrap server answered (" + "; ".join(failures) + "); check"
            " bootstrap_servers, that the brokers run and that this host can reach them")

    def _metadata_request(self, topics: list[str] | None) -> MetadataRequest:
        # A request for all topics or none names no topic to create, so it keeps the flag's
        # default, as Java's MetadataRequest.Builder.allTopics() does: it encodes below v4 too.
        return MetadataRequest(
            topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=not topics or self.allow_auto_topic_creation)

    def _install(self, response: MetadataResponse, asked: list[str] | None) -> None:
        fresh = ClusterMetadata.from_response(response)
        with self._lock:
            self.metadata = self.metadata.updated(fresh, asked)
            self._fetched_at = time.monotonic()
            self._stale = False
        for topic in sorted(set(asked or ()) & self._topics):
            code = fresh.topic_errors.get(topic)
            if code in _MISSING_TOPIC:
                # Java's NetworkClient warns "Error while fetching metadata ...
                # {topic=UNKNOWN_TOPIC_OR_PARTITION}" at every refresh while it lasts.
                name = error_for_code(code).name
                log.warning("topic %r does not exist (%s)%s", topic, name,
                            "" if self.allow_auto_topic_creation else
                            "; create it, or allow auto-creation on the broker and the client")
                if self.hooks:
                    from groupkit.hooks import TopicMissing, emit

                    emit(self.hooks, TopicMissing(topic, name))

    def add_topics(self, topics: Iterable[str]) -> None:
        """Track ``topics`` in every later refresh (and mark the metadata stale if new)."""
        with self._lock:
            new = set(topics) - self._topics
            if new:
                self._topics |= new
        if new:
            self._went_stale()

    def refresh(self, topics: Iterable[str] | None = (), all_topics: bool = False,
                deadline: float | None = None) -> ClusterMetadata:
        """Fetch metadata now for the tracked topics plus ``topics`` (or every topic), within
        ``deadline`` when given (a ``time.monotonic()`` value).

        After a failure, ``refresh_due_in`` backs off (the retry back-off, growing with each
        consecutive failure) so a background refresher does not spin on a dead cluster.
        """
        if topics:
            self.add_topics(topics)
        asked = None if all_topics else sorted(self._topics)
        wait = -1.0 if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._refresh_lock.acquire(timeout=wait):
            raise RequestTimeoutError("the metadata refresh another thread runs did not end"
                                      " within the time left")
        try:
            try:
                metadata = self._refresh(asked, deadline)
            except GroupkitError:
                self._refresh_failures += 1
                self._next_refresh_at = time.monotonic() \
                    + self.config.retry_backoff().delay(self._refresh_failures)
                raise
            self._refresh_failures = 0
            return metadata
        finally:
            self._refresh_lock.release()

    def _refresh(self, asked: list[str] | None, deadline: float | None) -> ClusterMetadata:
        if self.metadata.brokers:
            for _ in range(2):
                node = self.least_loaded_node(deadline)
                try:
                    self._install(self.call(node, self._metadata_request(asked),
                                            deadline=deadline), asked)
                    return self.metadata
                except (GroupkitError, TimeoutError) as exc:
                    error = exc
                if deadline is not None and time.monotonic() >= deadline:
                    raise RequestTimeoutError(
                        f"metadata refresh did not finish in time (last error: {error})")
            log.debug("metadata refresh from known brokers failed (%s); bootstrapping again",
                     error)
        self.bootstrap(deadline=deadline)
        if asked is None:
            self._install(self.call(self.least_loaded_node(deadline),
                                    self._metadata_request(None), deadline=deadline), None)
        return self.metadata

    def maybe_refresh(self, deadline: float | None = None) -> ClusterMetadata:
        """Refresh if marked stale or older than ``metadata_max_age_ms``; else return the cache."""
        if self.refresh_due_in() <= 0:
            return self.refresh(deadline=deadline)
        return self.metadata

    def refresh_due_in(self) -> float:
        """Seconds until the metadata needs a refresh: 0 when stale or too old, unless the last
        attempt failed and its backoff has not run out."""
        now = time.monotonic()
        if self._stale:
            return max(0.0, self._next_refresh_at - now)
        return max(0.0, self.config.metadata_max_age_ms / 1000 - (now - self._fetched_at))

    def request_refresh(self) -> None:
        """Mark the metadata stale: the next ``maybe_refresh`` fetches it."""
        self._went_stale()

    @property
    def stale(self) -> bool:
        return self._stale

    def when_stale(self, listener: Callable[[], object]) -> None:
        """Call ``listener`` each time the metadata goes stale, on the thread that found it
        so, after ``stale`` is true and with no lock of the cluster's held (the fetcher ends
        the idle Fetches its connections repeat, so its thread refreshes the metadata)."""
        self._stale_listeners.append(listener)

    def _went_stale(self) -> None:
        # Told every time, not only when it was fresh: a listener that looked at ``stale``
        # between another thread's look and its write would otherwise hear nothing.
        self._stale = True
        for listener in self._stale_listeners:
            listener()

    def observe(self, exc: BaseException | None) -> None:
        """Note a failure: stale-metadata errors and broken connections trigger a refresh."""
        if isinstance(exc, _STALE_METADATA):
            self._went_stale()

    def observe_code(self, code: int) -> None:
        """As ``observe`` for an error code found inside a response."""
        if code:
            self.observe(error_for_code(code)())

    def _observe_future(self, future: Future[Any]) -> None:
        self.observe(future.exception())

    # --- coordinators --------------------------------------------------------------------------

    def coordinator(self, key: str, key_type: int = KEY_TYPE_GROUP,
                    deadline: float | None = None) -> int:
        """The node id of the coordinator of ``key`` (a group id by default)."""
        return self.coordinators([key], key_type, deadline=deadline)[key]

    def coordinators(self, keys: Iterable[str], key_type: int = KEY_TYPE_GROUP,
                     timeout_ms: int | None = None,
                     deadline: float | None = None) -> dict[str, int]:
        """Coordinator node ids of ``keys``: cached, or found with FindCoordinator.

        One batched request (v4+) when the broker supports it, else one request per key, all
        pipelined. COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS and NOT_COORDINATOR
        are retried after the retry back-off until ``timeout_ms`` (default: request timeout)
        or the caller's ``deadline``, whichever comes first: the lookup inside a commit or a
        committed() spends that call's time, as ``ensureCoordinatorReady(timer)`` does in the
        Java client, never a request timeout of its own.
        """
        keys = list(dict.fromkeys(keys))
        found: dict[str, int] = {}
        with self._lock:
            for k in keys:
                node = self._coordinator_cache.get((key_type, k))
                if node is not None:
                    found[k] = node
        missing = [k for k in keys if k not in found]
        if not missing:
            # The common case (every transaction call, every commit): all cached.
            return found
        timeout = timeout_ms if timeout_ms is not None else self.config.request_timeout_ms
        started = time.monotonic()
        deadline = min(started + timeout / 1000,
                       deadline if deadline is not None else float("inf"))
        retries = self.config.retry_backoff()
        attempt = 0
        last: BaseException | None = None
        while missing:
            try:
                answers = self._find_coordinators(missing, key_type, deadline)
            except (KafkaConnectionError, RequestTimeoutError, NoBrokersAvailable) as exc:
                answers, last = {}, exc
                self.observe(exc)
            for k, result in answers.items():
                if isinstance(result, BrokerInfo):
                    found[k] = result.node_id
                    with self._lock:
                        self._coordinator_brokers[result.node_id] = result
                        self._coordinator_cache[(key_type, k)] = result.node_id
                elif isinstance(result, _COORDINATOR_RETRY):
                    last = result
                else:
                    raise result
            missing = [k for k in missing if k not in found]
            if not missing:
                break
            attempt += 1
            backoff = retries.delay(attempt)
            if time.monotonic() + backoff >= deadline:
                raise RequestTimeoutError(
                    f"no coordinator found for {', '.join(missing)} after {attempt} attempt(s)"
                    f" in {time.monotonic() - started:.1f} s (last error: {last}); check that"
                    " the brokers are healthy")
            time.sleep(backoff)
        return {k: found[k] for k in keys}

    def _find_coordinators(self, keys: list[str], key_type: int,
                           deadline: float) -> dict[str, BrokerInfo | BaseException]:
        node = self.least_loaded_node(deadline)
        version = self.api_version(node, ApiKey.FIND_COORDINATOR, deadline)
        if version is None:
            raise KafkaConnectionError(f"node {node} does not offer FindCoordinator")
        if version >= _BATCHED_FIND_COORDINATOR:
            response = self.call(node, FindCoordinatorRequest(
                key_type=key_type, coordinator_keys=keys), version=version, deadline=deadline)
            return {c.key: _coordinator_answer(c.error_code, c.error_message, c.node_id,
                                               c.host, c.port) for c in response.coordinators}
        futures = {k: self.send(node, FindCoordinatorRequest(key=k, key_type=key_type),
                                version=version, deadline=deadline) for k in keys}
        answers: dict[str, BrokerInfo | BaseException] = {}
        for k, future in futures.items():
            r: FindCoordinatorResponse = self.answer(future, deadline, "FindCoordinator")
            answers[k] = _coordinator_answer(r.error_code, r.error_message, r.node_id, r.host,
                                             r.port)
        return answers

    def remember_coordinator(self, key: str, node_id: int, host: str, port: int,
                             key_type: int = KEY_TYPE_GROUP) -> None:
        """Cache the coordinator of ``key`` found elsewhere (the group runner's own lookup), so
        commits find it without a FindCoordinator of their own."""
        with self._lock:
            self._coordinator_brokers[node_id] = BrokerInfo(node_id, host, port)
            self._coordinator_cache[(key_type, key)] = node_id

    def invalidate_coordinator(self, key: str, key_type: int = KEY_TYPE_GROUP) -> None:
        """Forget the cached coordinator of ``key`` (after NOT_COORDINATOR or a broken link)."""
        with self._lock:
            self._coordinator_cache.pop((key_type, key), None)

    def send_to_coordinator(self, key: str, request: Request, purpose: str = COORDINATOR,
                            key_type: int = KEY_TYPE_GROUP,
                            deadline: float | None = None) -> Future[Any]:
        """Send ``request`` to the coordinator of ``key``; forget it if the link breaks."""
        node = self.coordinator(key, key_type, deadline)
        future = self.send(node, request, purpose, deadline=deadline)

        def forget_on_failure(f: Future[Any]) -> None:
            if isinstance(f.exception(), (KafkaConnectionError, RequestTimeoutError)):
                self.invalidate_coordinator(key, key_type)
        future.add_done_callback(forget_on_failure)
        return future

    def send_to_leader(self, topic: str, partition: int, request: Request,
                       purpose: str = DEFAULT) -> Future[Any]:
        """Send ``request`` to the leader of ``topic``/``partition`` (refreshing once if unknown)."""
        leader = self.metadata.leader_for(topic, partition)
        if leader is None:
            self.refresh([topic])
            leader = self.metadata.leader_for(topic, partition)
        if leader is None:
            code = self.metadata.topic_errors.get(topic)
            failed: Future[Any] = Future()
            failed.set_exception(
                error_for_code(code)() if code else LeaderNotAvailableError(
                    f"no leader known for {topic}-{partition}"))
            return failed
        return self.send(leader, request, purpose)

    # --- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Close every connection; later calls raise IllegalStateError."""
        with self._lock:
            self._closed = True
            conns = list(self._conns.values())
            self._conns.clear()
        for conn in conns:
            with contextlib.suppress(Exception):
                conn.close()


def wait_for(future: Future[Any], timeout: float, what: str) -> Any:
    """``future.result(timeout)``, a RequestTimeoutError naming ``what`` when it is not done:
    the caller stops waiting; the request stays in flight under its own timeout."""
    try:
        return future.result(timeout)
    except FutureTimeout:
        raise RequestTimeoutError(f"{what} got no answer within the {timeout:.3g} s left"
                                  ) from None


def _check_resolvable(servers: Sequence[tuple[str, int]]) -> None:
    """Java's ClientUtils.parseAndValidateAddresses: a bootstrap host that does not resolve is
    warned about and skipped; when none resolves the client cannot start (ConfigError)."""
    failures = []
    for host, port in servers:
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            log.warning("bootstrap server %s:%d does not resolve (%s); it is skipped", host,
                        port, exc)
            failures.append(f"{host}:{port} ({exc})")
    if len(failures) == len(servers):
        raise ConfigError(
            "no resolvable bootstrap urls given in bootstrap_servers: " + ", ".join(failures)
            + "; check the host names and this machine's DNS")


def _coordinator_answer(code: int, message: str | None, node_id: int, host: str,
                        port: int) -> BrokerInfo | BrokerError:
    if code:
        try:
            check_error(code, message if message not in ("", "NONE") else None)
        except BrokerError as exc:
            return exc
    return BrokerInfo(node_id, host, port)
