"""Partition choice for produced records, matching the Java client's default partitioner."""

from __future__ import annotations

import random
from collections.abc import Callable

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Murmur2 as Kafka's Java client computes it, as a signed 32-bit int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length & ~3
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length & 3
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition a Java producer would pick for ``key`` among ``num_partitions``."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class StickyPartitioner:
    """For records without a key: stay on one partition until a batch fills, then move on.

    ``pick`` takes the partitions that currently have a leader; ``next_batch`` is called by the
    producer when the sticky partition's batch is sent, so the next record starts a new one.
    """

    def __init__(self, choose: Callable[[int], int] | None = None) -> None:
        self._choose = choose or random.Random().randrange
        self._current: dict[str, int] = {}

    def pick(self, topic: str, available: list[int]) -> int:
        current = self._current.get(topic)
        if current is None or current not in available:
            current = available[self._choose(len(available))]
            self._current[topic] = current
        return current

    def next_batch(self, topic: str, partition: int) -> None:
        if self._current.get(topic) == partition:
            del self._current[topic]
