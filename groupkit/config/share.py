"""Settings of a ShareConsumer (KIP-932)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from groupkit.config.client import (
    C,
    ClientConfig,
    _at_least,
    _flag,
    _one_of,
    _optional_text,
    _required_text,
)
from groupkit.errors import ConfigError


@attrs.frozen(kw_only=True)
class ShareConsumerConfig(ClientConfig):
    """Settings of a ShareConsumer (KIP-932), with the Java share consumer's names and defaults.

    ``share_acknowledgement_mode``: "implicit" accepts a poll's records at the next poll or
    commit; "explicit" wants ``acknowledge`` for every record. ``share_acquire_mode``:
    "batch_optimized" fetches from every leader at once and lets the broker round
    ``max_poll_records`` up to whole batches; "record_limit" fetches from one leader at a time
    and, on Kafka 4.2+ (ShareFetch v2), has the broker stop at ``max_poll_records``, so the
    member holds no more locks than one poll's records. The share group's session timeout,
    heartbeat interval, acquisition lock and delivery limit are the broker's (group configs).
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
