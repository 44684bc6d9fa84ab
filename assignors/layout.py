"""Numbering of every assignable partition, so the algorithms work on ints instead of tuples."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence

from assignors._types import TopicPartition


class PartitionLayout:
    """Topics in name order laid end to end: partition ``p`` of topic ``t`` is ``offset[t] + p``."""

    __slots__ = ("topics", "counts", "offsets", "total", "_starts", "_tps")

    def __init__(self, counts: Mapping[str, int]) -> None:
        self.topics = sorted(topic for topic, count in counts.items() if count > 0)
        self.counts = {topic: counts[topic] for topic in self.topics}
        self.offsets: dict[str, int] = {}
        start = 0
        for topic in self.topics:
            self.offsets[topic] = start
            start += self.counts[topic]
        self.total = start
        self._starts = [self.offsets[topic] for topic in self.topics]
        self._tps: list[TopicPartition] | None = None

    def indices(self, by_topic: Iterable[tuple[str, Sequence[int]]]) -> list[int]:
        """Numbers of ``[(topic, partition ids)]`` that are in the layout; the others are dropped."""
        offsets, counts = self.offsets, self.counts
        out: list[int] = []
        append = out.append
        for topic, numbers in by_topic:
            offset = offsets.get(topic)
            if offset is None:
                continue
            count = counts[topic]
            # Members of large groups own one partition of many topics: spare them a list each.
            if len(numbers) == 1:
                p = numbers[0]
                if 0 <= p < count:
                    append(offset + p)
            else:
                out.extend([offset + p for p in numbers if 0 <= p < count])
        return out

    def topic_number(self, index: int) -> int:
        """Position in ``topics`` of the topic of partition number ``index``."""
        return bisect_right(self._starts, index) - 1

    def range_of(self, topic: str) -> range:
        """The numbers of every partition of ``topic``."""
        start = self.offsets[topic]
        return range(start, start + self.counts[topic])

    def partitions(self, indices: Iterable[int]) -> list[TopicPartition]:
        """TopicPartitions for ``indices``, in the order given."""
        tps = self._tps
        if tps is None:
            make = tuple.__new__
            tps = []
            for topic in self.topics:
                tps.extend([make(TopicPartition, (topic, p)) for p in range(self.counts[topic])])
            self._tps = tps
        return [tps[i] for i in indices]
