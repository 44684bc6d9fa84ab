"""One member of a chaos test, run as its own process so the test can SIGKILL or SIGSTOP it.

``python -m tests.support.chaos_worker LOG BOOTSTRAP GROUP TOPIC CLIENT_ID SETTINGS_JSON`` runs a
LoggedWorker (tests/support/worker_log.py) appending JSON lines to LOG: what it holds after
every change, tagged with the generation it holds it in, and every record it processed. SIGTERM
stops it in order (commit, leave).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from groupkit.consumer import ConsumerRecord
from tests.support.worker_log import LoggedWorker


class OutputWorker(LoggedWorker):
    """A LoggedWorker that also writes "partition:offset" of each record to ``out_topic``
    (same partition): with processing_guarantee="exactly_once_v2", the chaos cases of the
    transaction APIs."""

    def __init__(self, *args: Any, out_topic: str, **settings: Any) -> None:
        super().__init__(*args, **settings)
        self.out_topic = out_topic

    def process(self, record: ConsumerRecord) -> None:
        super().process(record)
        self.send(self.out_topic, b"%d:%d" % (record.partition, record.offset),
                  partition=record.partition)


def main(argv: list[str]) -> None:
    log_path, bootstrap, group, topic, client_id, settings_json = argv
    settings = json.loads(settings_json)
    delay_s = settings.pop("delay_s", 0.0)
    out_topic = settings.pop("out_topic", None)
    with open(log_path, "a") as log:
        if out_topic is not None:
            settings["out_topic"] = out_topic
        cls = OutputWorker if out_topic is not None else LoggedWorker
        worker = cls(log, delay_s, bootstrap_servers=bootstrap, group_id=group,
                     topics=[topic], client_id=client_id, **settings)
        worker.run()


if __name__ == "__main__":
    main(sys.argv[1:])
