"""The default ``batch_size`` leaves room for the records' real framing.

A batch closes when the bytes the producer counts for it (16 a record, plus its key, value
and headers) would pass ``batch_size``. At the default (1,000,000, librdkafka's) such a full
batch must still encode under ``max_request_size`` and the broker's ``message.max.bytes``
(1,048,588 by default), or the broker refuses it whole: so the count may never undercount a
record's framing by more than the room left, whatever the records look like.
"""

from __future__ import annotations

import pytest

from groupkit.config import ProducerConfig
from groupkit.producer import _RECORD_OVERHEAD, _headers_size
from groupkit.protocol.records import encode_rows

#: Apache Kafka's default message.max.bytes: the largest record batch a broker takes.
BROKER_MESSAGE_MAX_BYTES = 1_048_588
NOW_MS = 1_800_000_000_000
#: Timestamps 68 years apart: the widest spread whose deltas take 6 bytes.
TIMESTAMPS = (NOW_MS, NOW_MS - 68 * 365 * 86_400_000)


def _full_batch(value_size: int, key: bytes | None,
                headers: list[tuple[str, bytes | None]] | None,
                batch_size: int) -> list[tuple[bytes | None, bytes, object, int]]:
    """Rows appended the way the producer does, until the next would pass ``batch_size``."""
    value = b"v" * value_size
    size = _RECORD_OVERHEAD + value_size + (len(key) if key else 0) \
        + (_headers_size(headers) if headers else 0)
    rows = []
    counted = 0
    while not rows or counted + size <= batch_size:
        rows.append((key, value, headers, TIMESTAMPS[len(rows) % 2]))
        counted += size
    return rows


@pytest.mark.parametrize("value_size", [0, 1, 40, 63, 64, 100, 1000, 8191, 8192, 100_000])
@pytest.mark.parametrize("key", [None, b"k" * 16])
@pytest.mark.parametrize("headers", [None, [("trace", b"t" * 8)], [("h", None)] * 3])
def test_a_full_default_batch_fits_a_request_and_the_broker(
        value_size: int, key: bytes | None,
        headers: list[tuple[str, bytes | None]] | None) -> None:
    config = ProducerConfig(bootstrap_servers="localhost:9092")
    rows = _full_batch(value_size, key, headers, config.batch_size)
    encoded = encode_rows(rows)
    # The Produce request around the batch (header, topic and partition) takes under 1 KiB.
    assert len(encoded) + 1024 <= config.max_request_size
    assert len(encoded) <= BROKER_MESSAGE_MAX_BYTES


def test_the_default_batch_size_is_librdkafkas() -> None:
    assert ProducerConfig(bootstrap_servers="localhost:9092").batch_size == 1_000_000
