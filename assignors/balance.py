"""The sticky balancing algorithm on numbered partitions: balance first, then fewest moves.

Members are numbered in the Java member order and partitions by ``PartitionLayout``. ``owner``
gives each partition's previous owner (or -1). Two paths share one contract:

* every member subscribes to the same topics: a direct quota fill. With ``n`` partitions and
  ``m`` members, ``n % m`` members may hold one more than ``n // m``; members keep what they own
  up to their quota and the rest is dealt out. No assignment moves fewer partitions.
* otherwise: keep what owners may keep, give each free partition (rarest topics first) to the
  least loaded eligible member, move partitions from the most to the least loaded eligible
  member until no such pair differs by two or more, and finally hand back any moved partition
  whose return to its previous owner would leave the result just as balanced.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from itertools import compress

from assignors.layout import PartitionLayout


def balanced_assignment(
    layout: PartitionLayout, subscriptions: Sequence[frozenset[str]], owner: Sequence[int]
) -> list[list[int]]:
    """Partition numbers for each member (unsorted), balanced and as sticky as balance allows."""
    members = len(subscriptions)
    if not members:
        return []
    topics = frozenset(layout.topics)
    first = subscriptions[0] & topics
    if all(sub & topics == first for sub in subscriptions):
        if not first:
            return [[] for _ in range(members)]
        return _uniform(layout.total, members, owner)
    return _General(layout, subscriptions, owner).run()


def _uniform(total: int, members: int, owner: Sequence[int]) -> list[list[int]]:
    held: list[list[int]] = [[] for _ in range(members)]
    for index, previous in enumerate(owner):
        if previous >= 0:
            held[previous].append(index)
    quota, extra = divmod(total, members)
    free = bytearray(b"\x01") * total
    targets = []
    for lst in held:
        if len(lst) > quota and extra:
            extra -= 1
            target = quota + 1
        else:
            target = quota
        if len(lst) > target:
            del lst[target:]
        for index in lst:
            free[index] = 0
        targets.append(target)
    # Members still at the plain quota take the leftover extras, in member order.
    for member in range(members):
        if not extra:
            break
        if targets[member] == quota:
            targets[member] += 1
            extra -= 1
    pool = list(compress(range(total), free))
    need = [targets[m] - len(held[m]) for m in range(members)]
    active = [m for m in range(members) if need[m] > 0]
    position = 0
    while active:
        chunk = pool[position : position + len(active)]
        position += len(active)
        for member, index in zip(active, chunk, strict=True):
            held[member].append(index)
            need[member] -= 1
        active = [m for m in active if need[m] > 0]
    return held


class _General:
    """State of the non-uniform path; one instance per assignment."""

    def __init__(
        self, layout: PartitionLayout, subscriptions: Sequence[frozenset[str]], owner: Sequence[int]
    ) -> None:
        self.layout = layout
        self.owner = owner
        members = len(subscriptions)
        self.eligible: list[list[int]] = [
            [m for m in range(members) if topic in subscriptions[m]] for topic in layout.topics
        ]
        self.subscribed: list[set[int]] = [set() for _ in range(members)]
        for k, group in enumerate(self.eligible):
            for m in group:
                self.subscribed[m].add(k)
        # held[m][k]: member m's partitions of topic k; kept ones first, received ones after,
        # so taking from the end gives away what it received before what it kept.
        self.held: list[dict[int, list[int]]] = [{} for _ in range(members)]
        self.count = [0] * members
        self.heaps: dict[tuple[int, ...], list[tuple[int, int]]] = {}
        self.member_heaps: list[list[list[tuple[int, int]]]] = [[] for _ in range(members)]

    def run(self) -> list[list[int]]:
        free_by_topic = self._keep_owned()
        order = sorted(
            range(len(self.layout.topics)),
            key=lambda k: (len(self.eligible[k]), self.layout.topics[k]),
        )
        for k in order:
            heap = self._heap(k)
            for index in free_by_topic[k]:
                self._give(index, k, self._least(heap))
        while any([self._balance_topic(k) for k in order]):
            pass
        self._return_needless_moves()
        return [[i for part in held.values() for i in part] for held in self.held]

    def _keep_owned(self) -> list[list[int]]:
        free_by_topic: list[list[int]] = []
        for k, topic in enumerate(self.layout.topics):
            free: list[int] = []
            for index in self.layout.range_of(topic):
                previous = self.owner[index]
                if previous >= 0 and k in self.subscribed[previous]:
                    self.held[previous].setdefault(k, []).append(index)
                    self.count[previous] += 1
                else:
                    free.append(index)
            free_by_topic.append(free)
        return free_by_topic

    def _heap(self, k: int) -> list[tuple[int, int]]:
        """Min-heap of (count, member) over the members eligible for topic ``k``.

        Entries go stale when a count changes; every change pushes a fresh entry, and stale
        ones are dropped when they reach the top.
        """
        key = tuple(self.eligible[k])
        heap = self.heaps.get(key)
        if heap is None:
            heap = [(self.count[m], m) for m in key]
            heapq.heapify(heap)
            self.heaps[key] = heap
            for m in key:
                self.member_heaps[m].append(heap)
        return heap

    def _least(self, heap: list[tuple[int, int]]) -> int:
        count = self.count
        while heap[0][0] != count[heap[0][1]]:
            heapq.heappop(heap)
        return heap[0][1]

    def _changed(self, member: int) -> None:
        entry = (self.count[member], member)
        for heap in self.member_heaps[member]:
            heapq.heappush(heap, entry)

    def _give(self, index: int, k: int, member: int) -> None:
        self.held[member].setdefault(k, []).append(index)
        self.count[member] += 1
        self._changed(member)

    def _balance_topic(self, k: int) -> bool:
        count, held = self.count, self.held
        heap = self._heap(k)
        holders = [(-count[m], m) for m in self.eligible[k] if k in held[m]]
        heapq.heapify(holders)
        moved = False
        while holders:
            top_count, top = holders[0]
            if -top_count != count[top] or k not in held[top]:
                heapq.heappop(holders)
                continue
            low = self._least(heap)
            if count[top] - count[low] < 2:
                break
            part = held[top][k]
            index = part.pop()
            if not part:
                del held[top][k]
            count[top] -= 1
            self._changed(top)
            self._give(index, k, low)
            heapq.heappush(holders, (-count[low], low))
            if k in held[top]:
                heapq.heappush(holders, (-count[top], top))
            moved = True
        return moved

    def _return_needless_moves(self) -> None:
        """Give a moved partition back to its previous owner when balance does not need the move."""
        holder: dict[int, int] = {}
        for member, held in enumerate(self.held):
            for k, part in held.items():
                for index in part:
                    previous = self.owner[index]
                    if previous >= 0 and previous != member and k in self.subscribed[previous]:
                        holder[index] = member
        changed = True
        while changed:
            changed = False
            for index in sorted(holder):
                current, previous = holder[index], self.owner[index]
                if current == previous:
                    continue
                if self.count[current] != self.count[previous] + 1:
                    continue
                k = self.layout.topic_number(index)
                if self._may_return(k, previous, current):
                    part = self.held[current][k]
                    part.remove(index)
                    if not part:
                        del self.held[current][k]
                    self.count[current] -= 1
                    self.held[previous].setdefault(k, []).append(index)
                    self.count[previous] += 1
                    holder[index] = previous
                    changed = True

    def _may_return(self, k: int, back_to: int, taken_from: int) -> bool:
        """Whether moving one partition of topic ``k`` back keeps every eligible pair within one.

        After the move ``back_to`` and ``taken_from`` hold ``c + 1`` and ``c`` (``c`` being
        ``back_to``'s count now); only pairs that include one of them can break.
        """
        count, held = self.count, self.held
        c = count[back_to]
        pair = (back_to, taken_from)
        for t in set(held[back_to]) | {k}:
            for m in self.eligible[t]:
                if m not in pair and count[m] < c:
                    return False
        for t in self.subscribed[taken_from]:
            for m in self.eligible[t]:
                if m not in pair and count[m] > c + 1 and t in held[m]:
                    return False
        return True
