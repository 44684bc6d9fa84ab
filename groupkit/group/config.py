"""Settings of one group member, validated when built (defaults are the Java client's)."""

from __future__ import annotations

from typing import Any

import attrs

from groupkit.errors import ConfigError


def _positive_ms(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(
            f"{attribute.name} must be a positive whole number of milliseconds, got {value!r}")
    if value > 0x7FFFFFFF:
        raise ConfigError(
            f"{attribute.name} must fit the protocol's 32-bit field (at most 2147483647 ms),"
            f" got {value!r}")


def _optional_name(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(f"{attribute.name} must be a non-empty string or None, got {value!r}")


def _group_id(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"group_id must be a non-empty string, got {value!r}")


def _flag(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, bool):
        raise ConfigError(f"{attribute.name} must be True or False, got {value!r}")


@attrs.frozen(kw_only=True)
class GroupConfig:
    """How one member joins and stays in its group.

    ``rebalance_timeout_ms`` defaults to ``max_poll_interval_ms``, as in the Java client: the
    coordinator waits that long for every member to rejoin. ``client_rack`` is carried for the
    group protocol (the consumer protocol puts it in its subscription). ``leave_group_on_close``
    matters only to static members (``group_instance_id`` set): dynamic members always leave.
    """

    group_id: str = attrs.field(validator=_group_id)
    session_timeout_ms: int = attrs.field(default=45_000, validator=_positive_ms)
    heartbeat_interval_ms: int = attrs.field(default=3_000, validator=_positive_ms)
    max_poll_interval_ms: int = attrs.field(default=300_000, validator=_positive_ms)
    rebalance_timeout_ms: int = attrs.field(
        default=attrs.Factory(lambda self: self.max_poll_interval_ms, takes_self=True),
        validator=_positive_ms)
    retry_backoff_ms: int = attrs.field(default=100, validator=_positive_ms)
    retry_backoff_max_ms: int = attrs.field(default=1_000, validator=_positive_ms)
    group_instance_id: str | None = attrs.field(default=None, validator=_optional_name)
    client_rack: str | None = attrs.field(default=None, validator=_optional_name)
    leave_group_on_close: bool = attrs.field(default=False, validator=_flag)

    def __attrs_post_init__(self) -> None:
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigError(
                f"heartbeat_interval_ms ({self.heartbeat_interval_ms}) must be lower than"
                f" session_timeout_ms ({self.session_timeout_ms}); a third of it is usual")
        if self.retry_backoff_max_ms < self.retry_backoff_ms:
            raise ConfigError(
                f"retry_backoff_max_ms ({self.retry_backoff_max_ms}) must be at least"
                f" retry_backoff_ms ({self.retry_backoff_ms})")

    @property
    def is_static(self) -> bool:
        """Whether this member keeps its place across restarts (KIP-345 static membership)."""
        return self.group_instance_id is not None
