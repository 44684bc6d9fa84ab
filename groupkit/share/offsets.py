"""``OffsetRuns``: offset -> value for one partition, kept as runs of offsets sharing a value.

A share consumer's answers and polls move hundreds of consecutive offsets at a time, mostly
with one value (a delivery count, an acknowledgement type): held as (first, last, value) runs,
with single offsets beside them for what does not come in runs, they cost a few steps instead
of a dictionary entry per record. Read as a Mapping (iteration in offset order).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping


class OffsetRuns(Mapping[int, int]):
    """``runs`` of (first, last, value), disjoint, and ``singles`` (offset -> value) apart
    from them."""

    __slots__ = ("_runs", "_singles", "_size")

    def __init__(self, runs: list[tuple[int, int, int]], singles: dict[int, int]) -> None:
        self._runs = runs
        self._singles = singles
        self._size = len(singles) + sum(b - a + 1 for a, b, _ in runs)

    @property
    def runs(self) -> list[tuple[int, int, int]]:
        return self._runs

    @property
    def singles(self) -> dict[int, int]:
        return self._singles

    def __len__(self) -> int:
        return self._size

    def __contains__(self, offset: object) -> bool:
        if offset in self._singles:
            return True
        return isinstance(offset, int) and any(a <= offset <= b for a, b, _ in self._runs)

    def __getitem__(self, offset: int) -> int:
        value = self._singles.get(offset)
        if value is not None:
            return value
        for a, b, value in self._runs:
            if a <= offset <= b:
                return value
        raise KeyError(offset)

    def __iter__(self) -> Iterator[int]:
        if not self._singles and len(self._runs) == 1:
            a, b, _ = self._runs[0]
            return iter(range(a, b + 1))
        every = list(self._singles)
        for a, b, _ in self._runs:
            every.extend(range(a, b + 1))
        return iter(sorted(every))

    def overlaps(self, first: int, last: int) -> bool:
        """Whether any offset ``first``..``last`` is here."""
        return any(a <= last and first <= b for a, b, _ in self._runs) or bool(
            self._singles and not self._singles.keys().isdisjoint(range(first, last + 1)))

    def distinct(self) -> set[int]:
        """The values among the offsets."""
        return {v for _, _, v in self._runs} | set(self._singles.values())

    def tally(self) -> Counter[int]:
        """How many offsets have each value."""
        counts = Counter(self._singles.values())
        for a, b, v in self._runs:
            counts[v] += b - a + 1
        return counts

    def __repr__(self) -> str:
        return f"OffsetRuns({self._runs!r}, {self._singles!r})"
