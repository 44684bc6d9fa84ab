"""One member of a chaos test, run as its own process so the test can SIGKILL or SIGSTOP it.

``python -m tests.support.chaos_worker LOG BOOTSTRAP GROUP TOPIC CLIENT_ID SETTINGS_JSON`` runs a
LoggedWorker (tests/support/worker_log.py) appending JSON lines to LOG: what it holds after
every change, tagged with the generation it holds it in, and every record it processed. SIGTERM
stops it in order (commit, leave).
"""

from __future__ import annotations

import json
import sys

from tests.support.worker_log import LoggedWorker


def main(argv: list[str]) -> None:
    log_path, bootstrap, group, topic, client_id, settings_json = argv
    settings = json.loads(settings_json)
    delay_s = settings.pop("delay_s", 0.0)
    with open(log_path, "a") as log:
        worker = LoggedWorker(log, delay_s, bootstrap_servers=bootstrap, group_id=group,
                              topics=[topic], client_id=client_id, **settings)
        worker.run()


if __name__ == "__main__":
    main(sys.argv[1:])
