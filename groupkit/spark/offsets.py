"""Offsets as the source's driver sees them: partitions, earliest, log ends, the group's.

Offsets travel through Spark as JSON in the layout of Spark's Kafka source,
``{"events": {"0": 23, "1": 40}}``; a stream that commits to a group adds the key ``@groupkit``
(no Kafka topic name can hold ``@``) with the group id and bootstrap servers, so the listener
that commits completed batches (``groupkit.spark.commits``) knows where they go. Pure Python.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from assignors import TopicPartition
from groupkit.admin import Admin
from groupkit.errors import ConfigError, GroupkitError
from groupkit.spark.options import EARLIEST, LATEST, SourceOptions

__all__ = ["COMMIT_KEY", "DataLossError", "Positions", "commit_forward", "decode", "encode"]

log = logging.getLogger(__name__)

COMMIT_KEY = "@groupkit"

Positions = dict[TopicPartition, int]

#: Kafka's internal topics, which a pattern never matches (the Java consumer's default,
#: exclude.internal.topics=true).
_INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


class DataLossError(GroupkitError):
    """Records the query needs are gone from the log (deleted, truncated, or a partition
    vanished). Set failOnDataLoss=false to go on from the earliest offset with a warning."""


def encode(positions: Mapping[TopicPartition, int], target: Mapping[str, str] | None = None
           ) -> dict[str, Any]:
    """Spark's offset JSON (as a dict) of ``positions``; ``target`` names the commit group."""
    out: dict[str, Any] = {}
    for tp in sorted(positions):
        out.setdefault(tp.topic, {})[str(tp.partition)] = positions[tp]
    if target is not None:
        out[COMMIT_KEY] = dict(target)
    return out


def decode(offset: Mapping[str, Any]) -> Positions:
    """The positions in an offset dict (the ``@groupkit`` entry left out)."""
    return {TopicPartition(topic, int(p)): int(o)
            for topic, parts in offset.items() if topic != COMMIT_KEY
            for p, o in parts.items()}


@attrs.define(eq=False)
class SourceCluster:
    """The driver's view of the source's topics, through one Admin (opened on first use)."""

    options: SourceOptions
    _admin: Admin | None = attrs.field(init=False, default=None)
    #: What this process last committed (or found committed), so an idle trigger sends nothing.
    _committed: Positions = attrs.field(init=False, factory=dict)

    @property
    def admin(self) -> Admin:
        if self._admin is None:
            self._admin = Admin(**self.options.client_settings)
        return self._admin

    def partitions(self) -> set[TopicPartition]:
        """The partitions the options name now (a topic's new partitions included)."""
        o = self.options
        if o.assigned:
            return set(o.assigned)
        counts = self.admin.list_topics()
        if o.pattern is not None:
            pattern = re.compile(o.pattern)
            names = [t for t in counts if pattern.fullmatch(t) and t not in _INTERNAL_TOPICS]
        else:
            names = [t for t in o.topics if t in counts]
        return {TopicPartition(t, p) for t in names for p in range(counts[t])}

    def earliest(self, partitions: Iterable[TopicPartition]) -> Positions:
        wanted = dict.fromkeys(partitions, "earliest")
        if not wanted:
            return {}
        return {tp: o.offset for tp, o in self.admin.list_offsets(wanted).items()}

    def latest(self, partitions: Iterable[TopicPartition]) -> Positions:
        """True log ends (see ``Admin.log_end_offsets``)."""
        wanted = set(partitions)
        return self.admin.log_end_offsets(wanted) if wanted else {}

    def committed(self, partitions: Iterable[TopicPartition]) -> Positions:
        """The group's committed offsets of ``partitions`` (where it has one)."""
        assert self.options.group_id is not None
        found = self.admin.list_group_offsets(self.options.group_id, partitions)
        return {tp: c.offset for tp, c in found.items()}

    def resolve(self, spec: str | dict[TopicPartition, int],
                partitions: set[TopicPartition]) -> Positions:
        """Positions for ``partitions`` from a startingOffsets/endingOffsets value."""
        if spec == "group":
            found = self.committed(partitions)
            rest = partitions - set(found)
            if rest:
                fallback = self.options.fallback
                log.info("group %s has no committed offset for %d partition(s); starting them"
                         " at %s", self.options.group_id, len(rest), fallback)
                found.update(self.earliest(rest) if fallback == "earliest"
                             else self.latest(rest))
            return found
        if spec == "earliest":
            return self.earliest(partitions)
        if spec == "latest":
            return self.latest(partitions)
        assert isinstance(spec, dict)
        unknown = set(spec) - partitions
        if unknown:
            shown = ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(unknown))
            raise ConfigError(f"the offsets JSON names partitions the source does not read:"
                              f" {shown}")
        missing = partitions - set(spec)
        if missing:
            shown = ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(missing))
            raise ConfigError(f"the offsets JSON must name every partition; missing: {shown}")
        early = self.earliest(tp for tp, o in spec.items() if o == EARLIEST)
        late = self.latest(tp for tp, o in spec.items() if o == LATEST)
        return {tp: early.get(tp, late.get(tp, o)) for tp, o in spec.items()}

    def commit_completed(self, positions: Positions) -> None:
        """Commit the end of a completed batch to the group (forward only); a failure logs a
        warning and never reaches the query."""
        group = self.options.group_id
        if group is None or not positions or positions == self._committed:
            return
        try:
            commit_forward(self.admin, group, positions)
        except GroupkitError as exc:
            log.warning("commit of %d partition(s) to group %s failed (%s); the next batch"
                        " commits again", len(positions), group, exc)
            return
        self._committed = dict(positions)

    @property
    def commit_target(self) -> dict[str, str] | None:
        """What a completed batch's commit needs to know: the group and where its brokers are."""
        if self.options.group_id is None:
            return None
        return {"group": self.options.group_id,
                "servers": self.options.settings["bootstrap_servers"]}

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None


def commit_forward(admin: Admin, group_id: str, positions: Mapping[TopicPartition, int]
                   ) -> Positions:
    """Commit ``positions`` to ``group_id`` outside group membership, only where they move the
    group forward; returns what was committed.

    The commit carries generation -1 and an empty member id, as the Java client's commitSync
    of a consumer that only assign()s. The read-then-write is not atomic: two committers of
    one group can race, as with the Java client.
    """
    committed = {tp: c.offset for tp, c in admin.list_group_offsets(group_id, positions).items()}
    forward = {tp: o for tp, o in positions.items()
               if (known := committed.get(tp)) is None or o > known}
    if forward:
        admin.alter_consumer_group_offsets(group_id, forward)
    return forward
