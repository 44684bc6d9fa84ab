"""What a worker process did, as JSON lines a test reads after (or while) it runs.

``LoggedWorker`` writes, with its pid, what it holds after every change (``kind: held``: the
partitions and the generation it holds them in, also when a new generation begins, since a
cooperative member keeps its partitions into it) and every record it processed (``kind:
record``). The readers below take those lines back; ``held_twice`` is the check that no
partition was held by two workers in one generation.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from assignors import TopicPartition
from groupkit.consumer import ConsumerRecord
from groupkit.group_consumer import GroupConsumer
from groupkit.hooks import Synced

Line = dict[str, Any]


class LoggedWorker(GroupConsumer):
    """Logs what it holds per generation and what it processes to ``log``; sleeps ``delay_s``
    per record. Lines are written under a lock: hooks come from the group thread."""

    def __init__(self, log: TextIO, delay_s: float = 0.0, hooks: Any = (),
                 **settings: Any) -> None:
        super().__init__(hooks=[*hooks, self._event], **settings)
        self._log = log
        self._lock = threading.Lock()
        self._delay_s = delay_s
        self._generation = -1
        self._held: set[int] = set()

    def note(self, kind: str, **fields: Any) -> None:
        """Write one line of ``kind``."""
        with self._lock:
            self._log.write(json.dumps({"kind": kind, "pid": os.getpid(), **fields}) + "\n")
            self._log.flush()

    def _change(self, generation: int | None = None,
                add: Iterable[TopicPartition] = (), drop: Iterable[TopicPartition] = ()) -> None:
        with self._lock:
            if generation is not None:
                self._generation = generation
            self._held |= {tp.partition for tp in add}
            self._held -= {tp.partition for tp in drop}
            generation, held = self._generation, sorted(self._held)
        self.note("held", gen=generation, held=held)

    def _event(self, event: object) -> None:
        if isinstance(event, Synced):
            self._change(generation=event.generation_id)

    def on_assigned(self, partitions: set[TopicPartition]) -> None:
        self._change(add=partitions)

    def on_revoked(self, partitions: set[TopicPartition]) -> None:
        self._change(drop=partitions)

    on_lost = on_revoked

    def process(self, record: ConsumerRecord) -> None:
        if self._delay_s:
            time.sleep(self._delay_s)
        self.note("record", p=record.partition, o=record.offset)


def read_lines(path: Path) -> list[Line]:
    """The lines written to ``path`` so far ([] before the file exists); a line being written
    when its process was killed may be cut short and is left out."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def processed(lines: Iterable[Line]) -> list[tuple[int, int]]:
    """(partition, offset) of every record processed."""
    return [(line["p"], line["o"]) for line in lines if line["kind"] == "record"]


def holding(lines: Iterable[Line]) -> dict[int, Line]:
    """Each worker pid's latest ``held`` line."""
    return {line["pid"]: line for line in lines if line["kind"] == "held"}


def held_twice(lines: Iterable[Line]) -> list[tuple[int, set[int]]]:
    """(generation, partitions) held by more than one worker in that generation: everything a
    worker held at some point in a generation counts (an eager member revokes all at the start
    of the next rebalance, still in the old generation)."""
    during: dict[tuple[int, int], set[int]] = defaultdict(set)
    for line in lines:
        if line["kind"] == "held" and line["gen"] >= 0:
            during[(line["pid"], line["gen"])] |= set(line["held"])
    by_gen: dict[int, list[set[int]]] = defaultdict(list)
    for (_, gen), held in during.items():
        by_gen[gen].append(held)
    found = []
    for gen, sets in sorted(by_gen.items()):
        seen: set[int] = set()
        for held in sets:
            if seen & held:
                found.append((gen, seen & held))
            seen |= held
    return found


def generations(lines: Iterable[Line]) -> int:
    """How many generations the workers held partitions in."""
    return len({line["gen"] for line in lines if line["kind"] == "held" and line["gen"] >= 0})
