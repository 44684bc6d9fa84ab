"""Numbering of every assignable partition, so the algorithms work on ints instead of tuples."""

from __future__ import annotations

from collections.abc import Mapping


class PartitionLayout:
    """Topics in name order laid end to end: partition ``p`` of topic ``t`` is ``offset[t] + p``."""

    __slots__ = ("topics", "counts", "offsets", "total", "starts")

    def __init__(self, counts: Mapping[str, int]) -> None:
        self.topics = sorted(topic for topic, count in counts.items() if count > 0)
        self.counts = {topic: counts[topic] for topic in self.topics}
        self.offsets: dict[str, int] = {}
        start = 0
        for topic in self.topics:
            self.offsets[topic] = start
            start += self.counts[topic]
        self.total = start
        #: The first number of each topic, in ``topics`` order.
        self.starts = [self.offsets[topic] for topic in self.topics]

    def range_of(self, topic: str) -> range:
        """The numbers of every partition of ``topic``."""
        start = self.offsets[topic]
        return range(start, start + self.counts[topic])
