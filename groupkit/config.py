"""Client settings, named as the Java client names them (in snake_case), with its defaults.

Every setting is checked when the client is built: a bad value, an unknown name or a
contradiction between two settings raises :class:`~groupkit.errors.ConfigError` naming it.

Importing this module loads neither the assignors nor the group machine (only the back-off,
which ``groupkit.group`` gives without loading the rest): only a ConsumerConfig's checks need
them, and they import them when one is built, so a Producer or an Admin does not pay for them
(tests/runtime/test_import_footprint.py holds it).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from groupkit.errors import ConfigError
from groupkit.group.backoff import Backoff

C = TypeVar("C", bound="ClientConfig")

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
COMPRESSION_TYPES = (None, "gzip", "snappy", "lz4", "zstd")


def _at_least(low: int) -> Callable[[Any, attrs.Attribute, Any], None]:
    def check(_: Any, a: attrs.Attribute, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{a.name} must be an integer, not {value!r}")
        if value < low:
            raise ConfigError(f"{a.name} must be at least {low}, not {value}")
    return check


def _one_of(*choices: Any) -> Callable[[Any, attrs.Attribute, Any], None]:
    def check(_: Any, a: attrs.Attribute, value: Any) -> None:
        if value not in choices:
            shown = ", ".join(repr(c) for c in choices)
            raise ConfigError(f"{a.name} must be one of {shown}, not {value!r}")
    return check


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def _flag(_: Any, a: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, bool):
        raise ConfigError(f"{a.name} must be True or False, not {value!r}")


def _optional_text(_: Any, a: attrs.Attribute, value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(f"{a.name} must be a non-empty string or None, not {value!r}")


def _required_text(_: Any, a: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{a.name} is required: a non-empty string, not {value!r}")


def _api_version(_: Any, a: attrs.Attribute, value: Any) -> None:
    if value != "auto":  # a pin: the release table is loaded only for one
        from groupkit.protocol.releases import check

        check(value, a.name)


def parse_bootstrap(value: Any) -> tuple[tuple[str, int], ...]:
    """Turn "h1:9092,h2:9092" or ["h1:9092", ("h2", 9092)] into ((host, port), ...)."""
    items = value.split(",") if isinstance(value, str) else list(value or ())
    servers = []
    for item in items:
        if isinstance(item, tuple) and len(item) == 2:
            host, port = item
        else:
            text = str(item).strip()
            host, sep, port_text = text.rpartition(":")
            if not sep or not host or not port_text.isdigit():
                raise ConfigError(
                    f"bootstrap_servers entry {text!r} is not host:port (e.g. 'localhost:9092')")
            port = int(port_text)
        host = host.strip("[]")
        if not 0 < int(port) < 65536:
            raise ConfigError(f"bootstrap_servers port {port} is out of range")
        servers.append((host, int(port)))
    if not servers:
        raise ConfigError("bootstrap_servers is empty: give at least one 'host:port'")
    return tuple(servers)


@attrs.frozen(kw_only=True)
class ClientConfig:
    """Settings shared by every client: where the brokers are and how to talk to them."""

    bootstrap_servers: tuple[tuple[str, int], ...] = attrs.field(converter=parse_bootstrap)
    client_id: str = attrs.field(default="groupkit", validator=_optional_text)
    request_timeout_ms: int = attrs.field(default=30000, validator=_at_least(1))
    socket_connection_setup_timeout_ms: int = attrs.field(default=10000, validator=_at_least(1))
    reconnect_backoff_ms: int = attrs.field(default=50, validator=_at_least(0))
    reconnect_backoff_max_ms: int = attrs.field(default=1000, validator=_at_least(0))
    retry_backoff_ms: int = attrs.field(default=100, validator=_at_least(0))
    retry_backoff_max_ms: int = attrs.field(default=1000, validator=_at_least(0))
    metadata_max_age_ms: int = attrs.field(default=300000, validator=_at_least(0))
    connections_max_idle_ms: int = attrs.field(default=540000, validator=_at_least(-1))
    max_frame_size: int = attrs.field(default=100 * 1024 * 1024, validator=_at_least(1024))
    security_protocol: str = attrs.field(default="PLAINTEXT",
                                         validator=_one_of(*SECURITY_PROTOCOLS))
    sasl_mechanism: str = attrs.field(default="PLAIN", validator=_one_of(*SASL_MECHANISMS))
    sasl_plain_username: str | None = attrs.field(default=None, validator=_optional_text)
    sasl_plain_password: str | None = attrs.field(default=None, repr=False,
                                                  validator=_optional_text)
    ssl_cafile: str | None = attrs.field(default=None, validator=_optional_text)
    ssl_certfile: str | None = attrs.field(default=None, validator=_optional_text)
    ssl_keyfile: str | None = attrs.field(default=None, validator=_optional_text)
    ssl_password: str | None = attrs.field(default=None, repr=False, validator=_optional_text)
    ssl_check_hostname: bool = attrs.field(default=True, validator=_flag)
    #: "auto" negotiates each connection's API versions with ApiVersions; a Kafka release
    #: ("2.3", "3.9") also caps each API at the versions that release speaks (kafka-python's
    #: and aiokafka's setting; Java has none). See groupkit/protocol/releases.py.
    api_version: str = attrs.field(default="auto", validator=_api_version)

    def __attrs_post_init__(self) -> None:
        if self.reconnect_backoff_max_ms < self.reconnect_backoff_ms:
            raise ConfigError("reconnect_backoff_max_ms must be >= reconnect_backoff_ms")
        if self.retry_backoff_max_ms < self.retry_backoff_ms:
            raise ConfigError("retry_backoff_max_ms must be >= retry_backoff_ms")
        if self.security_protocol.startswith("SASL") and (
                self.sasl_plain_username is None or self.sasl_plain_password is None):
            raise ConfigError(
                f"security_protocol={self.security_protocol} needs sasl_plain_username and"
                " sasl_plain_password")

    def retry_backoff(self) -> Backoff:
        """The delays between retries of a failed request: ``retry_backoff_ms`` growing to
        ``retry_backoff_max_ms``, jittered (the Java client's retry back-off)."""
        return Backoff(self.retry_backoff_ms, self.retry_backoff_max_ms)

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL")

    @classmethod
    def from_kwargs(cls: type[C], settings: Mapping[str, Any]) -> C:
        """Build from keyword settings; an unknown name raises ConfigError with a suggestion."""
        known = {a.name for a in attrs.fields(cls)}
        for name in settings:
            if name not in known:
                close = difflib.get_close_matches(name, sorted(known), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"unknown setting {name!r} for {cls.__name__}{hint}")
        if "bootstrap_servers" not in settings:
            raise ConfigError("bootstrap_servers is required: give at least one 'host:port'")
        return cls(**settings)


@attrs.frozen(kw_only=True)
class AdminConfig(ClientConfig):
    """Settings of an Admin client: Java's AdminClient bounds each call by
    ``default.api.timeout.ms`` unless the call is given its own timeout."""

    default_api_timeout_ms: int = attrs.field(default=60000, validator=_at_least(1))


@attrs.frozen(kw_only=True)
class ConsumerConfig(ClientConfig):
    """Settings of a Consumer, with the Java consumer's defaults."""

    group_id: str | None = attrs.field(default=None, validator=_optional_text)
    group_instance_id: str | None = attrs.field(default=None, validator=_optional_text)
    session_timeout_ms: int = attrs.field(default=45000, validator=_at_least(1))
    heartbeat_interval_ms: int = attrs.field(default=3000, validator=_at_least(1))
    max_poll_interval_ms: int = attrs.field(default=300000, validator=_at_least(1))
    rebalance_timeout_ms: int | None = attrs.field(default=None)
    max_poll_records: int = attrs.field(default=500, validator=_at_least(1))
    auto_offset_reset: str = attrs.field(default="latest",
                                         validator=_one_of("earliest", "latest", "none"))
    enable_auto_commit: bool = attrs.field(default=True, validator=_flag)
    auto_commit_interval_ms: int = attrs.field(default=5000, validator=_at_least(0))
    #: Cooperative-sticky first, so a group of groupkit members rebalances incrementally;
    #: range second, so a member still joins a group of Java (range first) or kafka-python
    #: (range, roundrobin) members by the protocol they share.
    assignors: tuple[Any, ...] = attrs.field(default=("cooperative-sticky", "range"),
                                             converter=tuple)
    client_rack: str | None = attrs.field(default=None, validator=_optional_text)
    fetch_min_bytes: int = attrs.field(default=1, validator=_at_least(1))
    fetch_max_bytes: int = attrs.field(default=52428800, validator=_at_least(1))
    fetch_max_wait_ms: int = attrs.field(default=500, validator=_at_least(0))
    max_partition_fetch_bytes: int = attrs.field(default=1048576, validator=_at_least(1))
    isolation_level: str = attrs.field(default="read_uncommitted",
                                       validator=_one_of("read_uncommitted", "read_committed"))
    check_crcs: bool = attrs.field(default=True, validator=_flag)
    allow_auto_create_topics: bool = attrs.field(default=True, validator=_flag)
    default_api_timeout_ms: int = attrs.field(default=60000, validator=_at_least(1))
    leave_group_on_close: bool | None = attrs.field(default=None)
    #: "classic" (JoinGroup/SyncGroup; the group's leader runs ``assignors``) or "consumer"
    #: (KIP-848, Kafka 4.0+: the coordinator assigns, members heartbeat with
    #: ConsumerGroupHeartbeat). Java 4's default is classic; its values are case-insensitive.
    group_protocol: str = attrs.field(default="classic", converter=_lower,
                                      validator=_one_of("classic", "consumer"))
    #: The server-side assignor a "consumer" member asks for (e.g. "uniform", "range");
    #: None lets the broker use its default.
    group_remote_assignor: str | None = attrs.field(default=None, validator=_optional_text)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigError(
                f"heartbeat_interval_ms ({self.heartbeat_interval_ms}) must be lower than"
                f" session_timeout_ms ({self.session_timeout_ms}); a third of it is usual")
        if self.rebalance_timeout_ms is not None:
            _at_least(1)(self, attrs.fields(ConsumerConfig).rebalance_timeout_ms,
                         self.rebalance_timeout_ms)
        if not self.assignors:
            raise ConfigError("assignors is empty: name at least one, e.g. ['range']")
        _check_assignors(self.assignors)
        if self.group_instance_id is not None and self.group_id is None:
            raise ConfigError("group_instance_id needs a group_id")
        if self.leave_group_on_close is not None:
            _flag(self, attrs.fields(ConsumerConfig).leave_group_on_close,
                  self.leave_group_on_close)

    @classmethod
    def from_kwargs(cls: type[C], settings: Mapping[str, Any]) -> C:
        """As ClientConfig's, then refuse settings the chosen group protocol does not use
        (Java's ``ConsumerConfig.checkUnsupportedConfigs``: any of them given at all, with a
        group id, is a ConfigException naming them)."""
        config = super().from_kwargs(settings)
        assert isinstance(config, ConsumerConfig)
        if config.group_id is not None:
            _check_protocol_settings(config.group_protocol, settings)
        return config

    @property
    def effective_rebalance_timeout_ms(self) -> int:
        return self.rebalance_timeout_ms or self.max_poll_interval_ms

    @property
    def sends_leave_on_close(self) -> bool:
        """Dynamic members leave on close; static ones only when asked (their id comes back)."""
        if self.leave_group_on_close is not None:
            return self.leave_group_on_close
        return self.group_instance_id is None


#: Settings each group protocol leaves to something else (Java's
#: ``CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS`` and ``CLASSIC_PROTOCOL_UNSUPPORTED_CONFIGS``).
_NOT_FOR_PROTOCOL = {
    "consumer": (("assignors", "session_timeout_ms", "heartbeat_interval_ms"),
                 "the group coordinator assigns the partitions (ask for its assignor with"
                 " group_remote_assignor) and owns the session timeout and heartbeat interval"
                 " (the broker's group.consumer.session.timeout.ms and"
                 " group.consumer.heartbeat.interval.ms)"),
    "classic": (("group_remote_assignor",),
                "the classic protocol's assignors run in the group's leader (set assignors), so"
                " there is no server-side assignor to choose; use group_protocol='consumer'"
                " for that"),
}


def _check_protocol_settings(protocol: str, settings: Mapping[str, Any]) -> None:
    names, why = _NOT_FOR_PROTOCOL[protocol]
    given = [name for name in names
             if settings.get(name) is not None and str(settings[name]).strip()]
    if given:
        raise ConfigError(f"{', '.join(given)} cannot be set when group_protocol="
                          f"{protocol!r}: {why}")


@attrs.frozen(kw_only=True)
class ShareConsumerConfig(ClientConfig):
    """Settings of a ShareConsumer (KIP-932), with the Java share consumer's names and defaults.

    ``share_acknowledgement_mode``: "implicit" accepts a poll's records at the next poll or
    commit; "explicit" wants ``acknowledge`` for every record. ``share_acquire_mode`` (Kafka
    4.2+, ShareFetch v2): "batch_optimized" lets the broker round ``max_poll_records`` up to
    whole batches, "record_limit" does not. The share group's session timeout, heartbeat
    interval, acquisition lock and delivery limit are the broker's (group configs).
    """

    group_id: str = attrs.field(default=None, validator=_required_text)
    share_acknowledgement_mode: str = attrs.field(default="implicit",
                                                  validator=_one_of("implicit", "explicit"))
    share_acquire_mode: str = attrs.field(default="batch_optimized",
                                          validator=_one_of("batch_optimized", "record_limit"))
    max_poll_records: int = attrs.field(default=500, validator=_at_least(1))
    max_poll_interval_ms: int = attrs.field(default=300000, validator=_at_least(1))
    fetch_min_bytes: int = attrs.field(default=1, validator=_at_least(1))
    fetch_max_bytes: int = attrs.field(default=52428800, validator=_at_least(1))
    fetch_max_wait_ms: int = attrs.field(default=500, validator=_at_least(0))
    max_partition_fetch_bytes: int = attrs.field(default=1048576, validator=_at_least(1))
    client_rack: str | None = attrs.field(default=None, validator=_optional_text)
    check_crcs: bool = attrs.field(default=True, validator=_flag)
    default_api_timeout_ms: int = attrs.field(default=60000, validator=_at_least(1))

    @classmethod
    def from_kwargs(cls: type[C], settings: Mapping[str, Any]) -> C:
        broker_side = [n for n in ("session_timeout_ms", "heartbeat_interval_ms",
                                   "auto_offset_reset", "isolation_level") if n in settings]
        if broker_side:
            raise ConfigError(
                f"{', '.join(broker_side)} cannot be set on a share consumer: a share group's"
                " session timeout, heartbeat interval, start offset and isolation level are the"
                " broker's group configs (group.share.session.timeout.ms,"
                " group.share.heartbeat.interval.ms, share.auto.offset.reset,"
                " share.isolation.level)")
        return super().from_kwargs(settings)

    @property
    def explicit(self) -> bool:
        return self.share_acknowledgement_mode == "explicit"

    @property
    def effective_rebalance_timeout_ms(self) -> int:
        """A share member has no rebalance timeout; for the health check, a join may take as
        long as a poll interval."""
        return self.max_poll_interval_ms


def _check_assignors(specs: tuple[Any, ...]) -> None:
    """Unknown names, duplicates and assignors sharing no rebalance protocol fail when the
    client is built (Java: ConfigException from the consumer's constructor), not at join.
    ``known`` answers built-in names without the plugin scan, which loads importlib.metadata
    and reads every installed distribution (about 1.5 MiB resident and 25 ms of CPU in a
    consumer's constructor). The assignors and the group machine are imported here, not by the
    module, so that building a Producer or an Admin loads neither."""
    from assignors import Assignor, available, known, resolve
    from groupkit.group.consumer_protocol import choose_rebalance_protocol

    for spec in specs:
        if isinstance(spec, str) and not known(spec):
            choices = available()
            close = difflib.get_close_matches(spec, choices, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigError(f"unknown partition assignor {spec!r}; {hint}known: "
                              f"{', '.join(choices)} (plugins register more under the"
                              " 'groupkit.assignors' entry point)")
        if not isinstance(spec, str | Assignor):
            raise ConfigError(f"assignors takes names or Assignor instances, not {spec!r}")
    resolved = [resolve(spec) for spec in specs]
    names = [a.name for a in resolved]
    if len(set(names)) != len(names):
        raise ConfigError(f"assignor names must be unique, got {names}")
    choose_rebalance_protocol(resolved)


def _acks(value: int | str) -> int | str:
    """Java spells "all leaders and replicas" as "all" or -1."""
    return -1 if value == "all" else value


@attrs.frozen(kw_only=True)
class ProducerConfig(ClientConfig):
    """Settings of the Producer, with the Java producer's defaults but one: ``batch_size``.

    ``acks`` "all" and ``linger_ms`` 5 are Java's (since 4.0) and librdkafka's. ``batch_size``
    is librdkafka's 1,000,000 bytes, not Java's 16,384: Java gives every batch a buffer of
    ``batch_size`` bytes from ``buffer_memory`` up front, so a small size keeps a producer of
    many partitions from taking the whole buffer; groupkit's batch holds only the records
    sent, so a large limit costs nothing where records trickle (a batch still leaves after
    ``linger_ms``) and lets a busy partition fill one request per batch, which makes fewer,
    larger Produce requests: sending 300,000 records of 100 bytes spends about a tenth of the
    time flushing at 1,000,000 that it does at 16,384 (docs/benchmarks.md, "Produce at the
    defaults"). It stays under ``max_request_size`` (1 MiB) and the broker's
    ``message.max.bytes`` (1 MiB + 12 bytes) with room for the records' real framing, which
    the 16 bytes a record counts for never undercount by more.
    """

    acks: int = attrs.field(default=-1, converter=_acks, validator=_one_of(-1, 0, 1))
    compression: str | None = attrs.field(default=None, validator=_one_of(*COMPRESSION_TYPES))
    linger_ms: int = attrs.field(default=5, validator=_at_least(0))
    batch_size: int = attrs.field(default=1_000_000, validator=_at_least(1))
    max_request_size: int = attrs.field(default=1048576, validator=_at_least(1))
    buffer_memory: int = attrs.field(default=33554432, validator=_at_least(1))
    delivery_timeout_ms: int = attrs.field(default=120000, validator=_at_least(1))
    retries: int = attrs.field(default=2147483647, validator=_at_least(0))
    max_in_flight_requests_per_connection: int = attrs.field(default=5, validator=_at_least(1))
    max_block_ms: int = attrs.field(default=60000, validator=_at_least(0))

    # --- idempotence and transactions (issue 28) ---------------------------------------------
    #: None: not set, which means on (Java's default since 3.0) unless another setting rules it
    #: out; see ``idempotent``.
    enable_idempotence: bool | None = attrs.field(default=None)
    transactional_id: str | None = attrs.field(default=None, validator=_optional_text)
    transaction_timeout_ms: int = attrs.field(default=60000, validator=_at_least(1))

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        if self.enable_idempotence is not None:
            _flag(self, attrs.fields(ProducerConfig).enable_idempotence, self.enable_idempotence)
        _check_idempotence(self)

    @property
    def idempotent(self) -> bool:
        """Whether the producer is idempotent, as Java's ProducerConfig decides it
        (postProcessAndValidateIdempotenceConfigs): on by default, and silently off when the
        user left it unset but set retries=0 or acks other than all."""
        if self.enable_idempotence is not None:
            return self.enable_idempotence
        return self.retries != 0 and self.acks == -1


def _check_idempotence(config: ProducerConfig) -> None:
    """Java 3.x/4.x's rules: idempotence asked for explicitly with retries=0 or acks other than
    all is a ConfigError; with idempotence on (explicitly or by default) more than 5 requests in
    flight per connection is a ConfigError; a transactional id needs idempotence."""
    explicit = config.enable_idempotence is True
    if explicit and config.retries == 0:
        raise ConfigError("enable_idempotence=True needs retries > 0 (the idempotent producer"
                          " retries to keep its sequence); raise retries or disable idempotence")
    if explicit and config.acks != -1:
        raise ConfigError(f"enable_idempotence=True needs acks='all', not {config.acks}: a"
                          " write acknowledged by the leader alone could be lost and then"
                          " re-sent; set acks='all' or disable idempotence")
    if config.idempotent and config.max_in_flight_requests_per_connection > 5:
        raise ConfigError(
            "the idempotent producer (on by default) keeps order across retries with at most 5"
            " requests in flight per connection, not"
            f" {config.max_in_flight_requests_per_connection}; set"
            " max_in_flight_requests_per_connection <= 5 or enable_idempotence=False")
    if config.transactional_id is not None and not config.idempotent:
        raise ConfigError("a transactional_id needs the idempotent producer: leave"
                          " enable_idempotence unset or True, with acks='all' and retries > 0")
