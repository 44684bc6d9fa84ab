"""Settings of a Consumer (``ConsumerConfig``), with the Java consumer's defaults.

Importing this module loads neither the assignors nor the group machine: only a
ConsumerConfig's checks need them, and they import them when one is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from groupkit.config.client import (
    C,
    ClientConfig,
    _at_least,
    _flag,
    _lower,
    _one_of,
    _optional_text,
)
from groupkit.errors import ConfigError


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
            import difflib  # only for the hint

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
