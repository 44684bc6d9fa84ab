"""Settings of the Producer (``ProducerConfig``), with the Java producer's defaults but one."""

from __future__ import annotations

import attrs

from groupkit.config.client import ClientConfig, _at_least, _flag, _one_of, _optional_text
from groupkit.errors import ConfigError

COMPRESSION_TYPES = (None, "gzip", "snappy", "lz4", "zstd")


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
