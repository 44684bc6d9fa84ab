"""The sticky assignors' general path: members subscribed to different topics.

Balanced as the Java client's general path defines it (AbstractStickyAssignor's
GeneralAssignmentBuilder): no partition could move to a member subscribed to its topic that
holds two or more fewer partitions than its holder. Sticky: a partition stays with its previous
owner unless moving it is needed for that balance. The shape follows Java (keep what owners may
keep, place the free partitions rarest topic first on the least loaded eligible member, move
partitions from more to less loaded members until balanced); the means are our own, so the cost
follows the subscriptions and what moves rather than members times partitions:

* free partitions of a topic are placed in one step: giving each in turn to the least loaded
  eligible member (ties to the earlier member) is water-filling, so the counts it ends at are
  computed from the eligible members' counts sorted once, and each member given its share
  (``sticky_loops.place``, in C when built, as is building the eligible lists);
* a topic is balanced when its most loaded holder has at most one more partition than its least
  loaded eligible member; topics are balanced one at a time with heaps over that topic's
  members only, and rechecked only when a member eligible for them changed count;
* a partition the balancing moved away from its previous owner goes back when that keeps the
  balance, checked against each topic's least and most loaded member, kept up to date.

Members are numbered in the Java member order, partitions by ``PartitionLayout``.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Sequence

from assignors.layout import PartitionLayout
from assignors.sticky_loops import Loops


def general_assignment(
    layout: PartitionLayout,
    subscriptions: Sequence[frozenset[str]],
    owner: Sequence[int],
    loops: Loops,
) -> list[list[int]]:
    """Partition numbers for each member, balanced and as sticky as balance allows.

    ``owner`` gives each partition's previous owner (-1: none); a previous owner no longer
    subscribed to the partition's topic does not count. ``loops`` places the free partitions.
    """
    return _General(layout, subscriptions, owner, loops).run()


class _General:
    """State of one general assignment."""

    def __init__(
        self,
        layout: PartitionLayout,
        subscriptions: Sequence[frozenset[str]],
        owner: Sequence[int],
        loops: Loops,
    ) -> None:
        self.layout = layout
        self.loops = loops
        self.owner = owner
        topics = layout.topics
        number = {topic: k for k, topic in enumerate(topics)}
        #: Each member's subscription (topic names), and its topics' numbers in order; members
        #: with the same subscription share the numbers.
        self.subscriptions = subscriptions
        self.subscribed: list[list[int]] = []
        numbered: dict[frozenset[str], list[int]] = {}
        everything = frozenset(topics)
        for subscription in subscriptions:
            ks = numbered.get(subscription)
            if ks is None:
                # Topics absent from the cluster are not numbered.
                known = subscription if subscription <= everything else subscription & everything
                ks = numbered[subscription] = sorted(map(number.__getitem__, known))
            self.subscribed.append(ks)
        self.eligible = loops.eligible(self.subscribed, len(topics))
        #: holding[k][m]: member m's partitions of topic k, those it kept first.
        self.holding: list[dict[int, list[int]]] = [{} for _ in topics]
        self.count = [0] * len(subscriptions)
        #: Partitions the balancing moved, and where they are now.
        self.moved: dict[int, int] = {}
        # Rarest topics first, then by name (Java's TopicComparator).
        self.order = sorted(range(len(topics)), key=lambda k: (len(self.eligible[k]), topics[k]))

    def run(self) -> list[list[int]]:
        free = self._keep_owned()
        place = self.loops.place
        for k in self.order:
            if free[k]:
                place(self.eligible[k], self.count, free[k], self.holding[k])
        self._balance()
        self._return_needless_moves()
        assigned: list[list[int]] = [[] for _ in self.count]
        for holding in self.holding:
            for member, part in holding.items():
                assigned[member].extend(part)
        return assigned

    def _keep_owned(self) -> list[list[int]]:
        """Owners keep what they still subscribe to; the rest, per topic, is free."""
        owner, count, subscriptions = self.owner, self.count, self.subscriptions
        if max(owner, default=-1) < 0:
            return [list(self.layout.range_of(topic)) for topic in self.layout.topics]
        free_by_topic: list[list[int]] = []
        for k, topic in enumerate(self.layout.topics):
            holding = self.holding[k]
            free: list[int] = []
            for index in self.layout.range_of(topic):
                previous = owner[index]
                if previous >= 0 and topic in subscriptions[previous]:
                    part = holding.get(previous)
                    if part is None:
                        holding[previous] = [index]
                    else:
                        part.append(index)
                    count[previous] += 1
                else:
                    free.append(index)
            free_by_topic.append(free)
        return free_by_topic

    def _balance(self) -> None:
        """Balance topic by topic until no member changes count; a topic is checked again only
        when a member eligible for it changed count since."""
        pending = self.order
        while pending:
            changed: set[int] = set()
            for k in pending:
                self._balance_topic(k, changed)
            if not changed:
                return
            touched = frozenset().union(*[self.subscribed[m] for m in changed])
            pending = [k for k in self.order if k in touched]

    def _balance_topic(self, k: int, changed: set[int]) -> None:
        """Move partitions of topic ``k`` from its most to its least loaded eligible members
        until they differ by at most one. Every move lowers the sum of squared counts, so the
        balancing ends."""
        count, holding, eligible = self.count, self.holding[k], self.eligible[k]
        if not holding:
            return
        if max(map(count.__getitem__, holding)) - min(map(count.__getitem__, eligible)) < 2:
            return
        low = [(count[m], m) for m in eligible]
        heapq.heapify(low)
        high = [(-count[m], m) for m in holding]
        heapq.heapify(high)
        while True:
            # Entries go stale as counts change; each change pushes a fresh one.
            while -high[0][0] != count[high[0][1]] or high[0][1] not in holding:
                heapq.heappop(high)
            while low[0][0] != count[low[0][1]]:
                heapq.heappop(low)
            top, bottom = high[0][1], low[0][1]
            if count[top] - count[bottom] < 2:
                return
            part = holding[top]
            index = part.pop()  # received before kept: kept partitions come first
            if not part:
                del holding[top]
            mine = holding.get(bottom)
            if mine is None:
                holding[bottom] = [index]
            else:
                mine.append(index)
            count[top] -= 1
            count[bottom] += 1
            self.moved[index] = bottom
            changed.add(top)
            changed.add(bottom)
            heapq.heappush(low, (count[top], top))
            heapq.heappush(low, (count[bottom], bottom))
            heapq.heappush(high, (-count[bottom], bottom))
            if top in holding:
                heapq.heappush(high, (-count[top], top))

    def _return_needless_moves(self) -> None:
        """Give a moved partition back to its previous owner when the result stays balanced.

        Moving one partition of topic ``k`` from ``h`` (``c + 1`` partitions) back to ``p``
        (``c``) swaps their counts; it breaks the balance only if ``p`` then holds a topic some
        member eligible for it has fewer than ``c`` of, or ``h`` subscribes to a topic whose
        holder has more than ``c + 1``. Those are the only pairs whose difference grows.
        """
        owner, count, topics = self.owner, self.count, self.layout.topics
        candidates = sorted(
            index
            for index, holder in self.moved.items()
            if owner[index] >= 0
            and owner[index] != holder
            and topics[self._topic(index)] in self.subscriptions[owner[index]]
        )
        least: dict[int, int] = {}
        most: dict[int, int] = {}

        def lo(t: int) -> int:
            value = least.get(t)
            if value is None:
                value = least[t] = min(map(count.__getitem__, self.eligible[t]))
            return value

        def hi(t: int) -> int:
            value = most.get(t)
            if value is None:
                holding = self.holding[t]
                value = most[t] = max(map(count.__getitem__, holding)) if holding else -1
            return value

        changed = True
        while changed:
            changed = False
            for index in candidates:
                holder, previous = self.moved[index], owner[index]
                c = count[previous]
                if holder == previous or count[holder] != c + 1:
                    continue
                k = self._topic(index)
                if lo(k) < c:
                    continue
                if any(lo(t) < c for t in self.subscribed[previous] if previous in self.holding[t]):
                    continue
                if any(hi(t) > c + 1 for t in self.subscribed[holder]):
                    continue
                holding = self.holding[k]
                part = holding[holder]
                part.remove(index)
                if not part:
                    del holding[holder]
                holding.setdefault(previous, []).append(index)
                count[holder] -= 1
                count[previous] += 1
                self.moved[index] = previous
                for t in self.subscribed[holder]:
                    least.pop(t, None)
                    most.pop(t, None)
                for t in self.subscribed[previous]:
                    least.pop(t, None)
                    most.pop(t, None)
                changed = True

    def _topic(self, index: int) -> int:
        return bisect_right(self.layout.starts, index) - 1
