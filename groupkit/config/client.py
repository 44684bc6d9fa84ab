"""The settings every client shares (``ClientConfig``), and the checks the clients' settings use.

Every setting is checked when the client is built: a bad value, an unknown name or a
contradiction between two settings raises :class:`~groupkit.errors.ConfigError` naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from groupkit.errors import ConfigError
from groupkit.group.backoff import Backoff

C = TypeVar("C", bound="ClientConfig")

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


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
    #: A connection with nothing in flight this long is closed; -1: never (runtime/idle.py).
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
                import difflib  # only for the hint: most processes never load it

                close = difflib.get_close_matches(name, sorted(known), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"unknown setting {name!r} for {cls.__name__}{hint}")
        if "bootstrap_servers" not in settings:
            raise ConfigError("bootstrap_servers is required: give at least one 'host:port'")
        return cls(**settings)
