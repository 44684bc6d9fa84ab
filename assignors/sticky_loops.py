"""The sticky assignors' loops over every partition, in pure Python, and the choice between them
and their C twins (``assignors._native``, built from csrc/assignors/ at install).

A leader of 2,000 members owning a million partitions reads, resolves and writes a million
entries per rebalance however little changes; these loops are that work, with the general
path's loops over every (member, topic) pair of the subscriptions (the eligible lists, the
placement of a topic's free partitions). Each exists twice with
one contract and the same results (tests/assignors/test_assignor_native.py runs both on the
same inputs). Partitions are numbered as ``PartitionLayout`` numbers them; members by their
place in the Java member order. ``GROUPKIT_NO_NATIVE=1`` selects the Python loops, as it does
for the record loops; ``active`` is read at every assignment, so a test can swap it.
"""

from __future__ import annotations

import os
import struct
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from types import ModuleType
from typing import Protocol

import attrs

from assignors._types import TopicPartition

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_ARRAYS: dict[int, struct.Struct] = {}


class NumberingLike(Protocol):
    """Between topic-partitions and partition numbers, for one assignment's topics."""

    def owned(self, owned: Sequence[tuple[str, int]]) -> list[int]:
        """Numbers of the partitions in ``owned`` that are in the layout, in the order given."""

    def mark(self, partitions: Sequence[tuple[str, int]], taken: bytearray) -> int:
        """Sets ``taken[n]`` to 1 for the number n of each partition in the layout (a leader's
        checks); how many of them were 0 before."""

    def sticky(self, data: bytes, start: int, with_generation: bool) -> tuple[list[int], int] | None:
        """Numbers and generation read from StickyAssignorUserData starting at ``start``, or
        None when the bytes do not fit that layout exactly (see ``sticky_data``)."""

    def partitions(self, numbers: Sequence[int]) -> tuple[TopicPartition, ...]:
        """The TopicPartitions of ``numbers``, in the order given."""


class Numbering:
    """``NumberingLike`` in Python: topics in name order laid end to end."""

    def __init__(self, topics: Sequence[str], counts: Sequence[int], tp_type: type) -> None:
        self._spans: dict[str, tuple[int, int]] = {}
        self._topics = list(topics)
        start = 0
        for topic, count in zip(topics, counts, strict=True):
            self._spans[topic] = (start, count)
            start += count
        self._total = start
        self._tp_type = tp_type
        self._tps: list[TopicPartition] | None = None

    def owned(self, owned: Sequence[tuple[str, int]]) -> list[int]:
        spans = self._spans
        out: list[int] = []
        append = out.append
        last, span = None, None
        for topic, p in owned:
            if topic is not last:
                last, span = topic, spans.get(topic)
            if span is not None and 0 <= p < span[1]:
                append(span[0] + p)
        return out

    def mark(self, partitions: Sequence[tuple[str, int]], taken: bytearray) -> int:
        if len(taken) < self._total:
            raise ValueError("mark(): taken is shorter than the layout")
        distinct = set(self.owned(partitions))
        before = sum(map(taken.__getitem__, distinct))
        deque(map(taken.__setitem__, distinct, repeat(1)), 0)  # taken[n] = 1 for each, in C
        return len(distinct) - before

    def sticky(self, data: bytes, start: int, with_generation: bool) -> tuple[list[int], int] | None:
        end = len(data)
        if start + 4 > end:
            return None
        (topics,) = _INT32.unpack_from(data, start)
        pos = start + 4
        if not 0 <= topics <= (end - pos) // 6:
            return None
        spans = self._spans
        names: dict[bytes, tuple[int, int] | None] = {}
        out: list[int] = []
        for _ in range(topics):
            if pos + 2 > end:
                return None
            (size,) = _INT16.unpack_from(data, pos)
            pos += 2
            if size < 0 or pos + size + 4 > end:
                return None
            raw = data[pos : pos + size]
            if raw in names:
                span = names[raw]
            else:
                try:
                    span = names[raw] = spans.get(raw.decode())
                except UnicodeDecodeError:
                    return None
            pos += size
            (count,) = _INT32.unpack_from(data, pos)
            pos += 4
            if count < 0 or pos + 4 * count > end:
                return None
            if span is not None:
                offset, limit = span
                array = _ARRAYS.get(count) or _ARRAYS.setdefault(count, struct.Struct(f">{count}i"))
                numbers = array.unpack_from(data, pos)
                out.extend([offset + p for p in numbers if 0 <= p < limit])
            pos += 4 * count
        generation = -1
        if with_generation:
            if pos + 4 > end:
                return None
            (generation,) = _INT32.unpack_from(data, pos)
            pos += 4
        if pos != end:
            return None
        return out, generation

    def partitions(self, numbers: Sequence[int]) -> tuple[TopicPartition, ...]:
        tps = self._tps
        if tps is None:
            make = tuple.__new__
            tps = []
            for topic in self._topics:
                tps.extend([make(self._tp_type, (topic, p)) for p in range(self._spans[topic][1])])
            self._tps = tps
        return tuple([tps[i] for i in numbers])


def resolve(
    claims: Sequence[list[int]], generations: Sequence[int], total: int
) -> tuple[list[int], list[list[int]]]:
    """Each partition's owner, and each member's claims that it owns.

    A partition claimed twice goes to the claim of the higher generation; on a tie, to the
    member earlier in the order. A member's list is its own ``claims`` list (the same object)
    when it owns everything it claimed, else its owned claims in order, each once.
    """
    owner = [-1] * total
    # Members in rising generation, later members first within one: each claim overwrites
    # the ones before it, so the highest generation, then the earliest member, ends up owner.
    # (owner[index] = member for every claim, as a C-level loop.)
    for member in sorted(range(len(claims)), key=lambda m: (generations[m], -m)):
        claimed = claims[member]
        deque(map(owner.__setitem__, claimed, repeat(member, len(claimed))), 0)
    if total - owner.count(-1) == sum(map(len, claims)):
        # No partition claimed twice: everyone owns exactly what it claimed.
        return owner, list(claims)
    owned = []
    for member, claimed in enumerate(claims):
        mine = [index for index in claimed if owner[index] == member]
        if len(mine) != len(claimed) or len(set(mine)) != len(mine):
            mine = list(dict.fromkeys(mine))
            owned.append(mine)
        else:
            owned.append(claimed)
    return owner, owned


def fill_uniform(owned: Sequence[list[int]], total: int) -> list[list[int]]:
    """The balanced, sticky assignment of ``total`` partitions when every member may take any.

    ``n % m`` members may hold one more than ``n // m``: members owning more than the plain
    quota get those places first, in member order, then members still short of one. A member
    keeps what it owns, in order, up to its target; the partitions nobody keeps are dealt in
    number order, one at a time, to the members still short, in member order. No assignment
    moves fewer partitions. A member's list is its ``owned`` list (the same object) when it
    neither gives up nor receives a partition.
    """
    members = len(owned)
    quota, extra = divmod(total, members)
    targets = []
    for mine in owned:
        if len(mine) > quota and extra:
            extra -= 1
            targets.append(quota + 1)
        else:
            targets.append(quota)
    for member in range(members):
        if not extra:
            break
        if targets[member] == quota:
            targets[member] += 1
            extra -= 1
    kept = [
        mine if len(mine) <= target else mine[:target]
        for mine, target in zip(owned, targets, strict=True)
    ]
    free = bytearray(b"\x01") * total
    for mine in kept:
        # A C-level loop: free[index] = 0 for every index kept.
        deque(map(free.__setitem__, mine, repeat(0, len(mine))), maxlen=0)
    pool = list(compress(range(total), free))
    need = [target - len(mine) for mine, target in zip(kept, targets, strict=True)]
    received = _deal(pool, [m for m in range(members) if need[m] > 0], need)
    return [kept[m] + received[m] if m in received else kept[m] for m in range(members)]


def _deal(pool: Sequence[int], members: Sequence[int], need: Sequence[int]) -> dict[int, list[int]]:
    """``pool`` dealt one at a time to ``members`` in turn, each until it has ``need[m]``."""
    if all(need[m] == 1 for m in members):
        return {m: [index] for m, index in zip(members, pool, strict=False)}
    left = {m: need[m] for m in members}
    received: dict[int, list[int]] = {m: [] for m in members}
    active = list(members)
    position = 0
    while active:
        chunk = pool[position : position + len(active)]
        position += len(active)
        for member, index in zip(active, chunk, strict=True):
            received[member].append(index)
            left[member] -= 1
        active = [m for m in active if left[m]]
    return received


def eligible(subscribed: Sequence[list[int]], topics: int) -> list[list[int]]:
    """For each topic number below ``topics``, the members subscribed to it, in member order;
    ``subscribed[m]`` is member m's topic numbers."""
    out: list[list[int]] = [[] for _ in range(topics)]
    for member, ks in enumerate(subscribed):
        # out[k].append(member) for each k, as a C-level loop.
        deque(map(list.append, map(out.__getitem__, ks), repeat(member)), 0)
    return out


def place(
    eligible: list[int], count: list[int], free: list[int], holding: dict[int, list[int]]
) -> None:
    """Give ``free`` (partitions of one topic) out as giving each in turn to the least loaded
    of ``eligible`` would, ties to the earlier member: updates ``count`` and ``holding``
    (member -> its partitions of the topic, new ones appended).

    One at a time is water-filling: the members at the lowest count rise together until the
    next member's count, and so on, so the final counts are computed from the members sorted
    once; each taker then gets its share as one run of ``free``, in member order.
    """
    ranked = sorted(eligible, key=count.__getitem__)  # stable: ties by member
    levels = list(map(count.__getitem__, ranked))
    remaining, level = len(free), levels[0]
    while True:
        pooled = bisect_right(levels, level)
        if pooled < len(ranked) and pooled * (levels[pooled] - level) <= remaining:
            remaining -= pooled * (levels[pooled] - level)
            level = levels[pooled]
            continue
        rise, remaining = divmod(remaining, pooled)
        level += rise
        break
    # Every pooled member rises to `level`; the first `remaining` of them one more.
    pool = sorted(ranked[:pooled])
    gets = list(map(level.__sub__, map(count.__getitem__, pool)))
    gets[:remaining] = map((1).__add__, gets[:remaining])
    position = 0
    for member, share in zip(compress(pool, gets), filter(None, gets), strict=True):
        part = free[position : position + share]
        position += share
        count[member] += share
        mine = holding.get(member)
        if mine is None:
            holding[member] = part
        else:
            mine.extend(part)


@attrs.frozen
class Loops:
    """One implementation of every loop: ``PYTHON``, or ``NATIVE`` when the extension is built."""

    name: str
    numbering: Callable[[Sequence[str], Sequence[int], type], NumberingLike]
    resolve: Callable[
        [Sequence[list[int]], Sequence[int], int], tuple[list[int], list[list[int]]]
    ]
    fill_uniform: Callable[[Sequence[list[int]], int], list[list[int]]]
    eligible: Callable[[Sequence[list[int]], int], list[list[int]]]
    place: Callable[[list[int], list[int], list[int], dict[int, list[int]]], None]


def _load() -> ModuleType | None:
    if os.environ.get("GROUPKIT_NO_NATIVE"):
        return None
    try:
        from assignors import _native
    except ImportError:
        return None
    return _native


PYTHON = Loops("python", Numbering, resolve, fill_uniform, eligible, place)
#: The extension when built (and not switched off); ``assignors.wire`` takes its codec from it.
MODULE = _load()
NATIVE = (
    None
    if MODULE is None
    else Loops(
        "c",
        MODULE.Numbering,
        MODULE.resolve,
        MODULE.fill_uniform,
        MODULE.eligible,
        MODULE.place,
    )
)
#: The loops every assignment uses: the C ones when built (and not switched off), else Python.
active: Loops = NATIVE or PYTHON
