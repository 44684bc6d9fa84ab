"""``Consumer.subscribe(pattern=...)``: the consumer group protocol (KIP-848) sends a pattern to
the broker, the classic protocol matches it in the client (as Java's subscribe(Pattern)); bad
combinations fail before any request goes out."""

from __future__ import annotations

import pytest

from assignors import RebalanceProtocol
from groupkit import Consumer
from groupkit.errors import ConfigError

NOWHERE = "127.0.0.1:9"  # nothing is sent: every case fails (or is set up) before any I/O


def test_a_classic_pattern_that_is_no_regular_expression_fails_at_subscribe() -> None:
    with Consumer(bootstrap_servers=NOWHERE, group_id="g") as consumer, \
            pytest.raises(ConfigError, match="not a regular expression"):
        consumer.subscribe(pattern="orders-(")


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
@pytest.mark.parametrize(("topics", "pattern"), [(["t"], "t.*"), ((), "")])
def test_names_and_a_pattern_do_not_mix_and_a_pattern_is_not_empty(
        topics: list[str], pattern: str, protocol: str) -> None:
    with Consumer(bootstrap_servers=NOWHERE, group_id="g",
                  group_protocol=protocol) as consumer, \
            pytest.raises(ConfigError, match="one non-empty pattern"):
        consumer.subscribe(topics, pattern=pattern)


def test_a_consumer_protocol_member_rebalances_incrementally() -> None:
    consumer = Consumer(bootstrap_servers=NOWHERE, group_id="g", group_protocol="consumer",
                        default_api_timeout_ms=1_000)
    try:
        consumer.subscribe(pattern="orders-.*")
        assert consumer.rebalance_protocol is RebalanceProtocol.COOPERATIVE
    finally:
        consumer.close(1)
