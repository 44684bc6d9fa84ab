"""One member of a chaos test, run as its own process so the test can SIGKILL or SIGSTOP it.

``python -m tests.support.chaos_worker LOG BOOTSTRAP GROUP TOPIC CLIENT_ID SETTINGS_JSON`` runs a
GroupConsumer and appends JSON lines to LOG: what it holds after every change, tagged with the
generation it holds it in (``held``), and every record it processed (``rec``). SIGTERM stops it
in order (commit, leave). Lines are written under a lock: hooks come from the group thread.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any, TextIO

from assignors import TopicPartition
from groupkit.consumer import ConsumerRecord
from groupkit.group_consumer import GroupConsumer
from groupkit.hooks import Synced


class ChaosWorker(GroupConsumer):
    """Records what it holds per generation and what it processes; ``delay_s`` per record."""

    def __init__(self, log: TextIO, delay_s: float, **settings: Any) -> None:
        super().__init__(hooks=[self._event], **settings)
        self._log = log
        self._lock = threading.Lock()
        self._delay_s = delay_s
        self._generation = -1
        self._held: set[int] = set()

    def _write(self, **line: Any) -> None:
        with self._lock:
            self._log.write(json.dumps(line) + "\n")
            self._log.flush()

    def _change(self, generation: int | None = None, add: set[TopicPartition] = frozenset(),
                drop: set[TopicPartition] = frozenset()) -> None:
        with self._lock:
            if generation is not None:
                self._generation = generation
            self._held |= {tp.partition for tp in add}
            self._held -= {tp.partition for tp in drop}
            line = {"k": "held", "gen": self._generation, "held": sorted(self._held)}
        self._write(**line)

    def _event(self, event: object) -> None:
        if isinstance(event, Synced):
            # What it keeps into the new generation (a cooperative member keeps its partitions).
            self._change(generation=event.generation_id)

    def on_assigned(self, partitions: set[TopicPartition]) -> None:
        self._change(add=partitions)

    def on_revoked(self, partitions: set[TopicPartition]) -> None:
        self._change(drop=partitions)

    on_lost = on_revoked

    def process(self, record: ConsumerRecord) -> None:
        if self._delay_s:
            time.sleep(self._delay_s)
        self._write(k="rec", p=record.partition, o=record.offset)


def main(argv: list[str]) -> None:
    log_path, bootstrap, group, topic, client_id, settings_json = argv
    settings = json.loads(settings_json)
    delay_s = settings.pop("delay_s", 0.0)
    with open(log_path, "a") as log:
        worker = ChaosWorker(log, delay_s, bootstrap_servers=bootstrap, group_id=group,
                             topics=[topic], client_id=client_id, **settings)
        worker.run()


if __name__ == "__main__":
    main(sys.argv[1:])
