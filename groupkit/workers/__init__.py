"""Worker pools: one supervisor process runs N members of a group as processes of their own.

``Pool(MyWorker, processes=4, **settings).run()`` (or ``groupkit run module:MyWorker
--processes 4``) starts four worker processes, each one GroupConsumer member built from
``MyWorker`` and the settings, and supervises them until SIGTERM or SIGINT:

- a worker that exits unexpectedly is started again after an exponential back-off
  (``backoff_initial_s`` doubling up to ``backoff_max_s``, jittered by up to 20% like every
  back-off in groupkit); ``crash_loop_count`` failures within
  ``crash_loop_window_s`` stop the pool with exit status 1 and the last traceback logged; a
  worker whose class cannot be built stops the pool at once (status 3);
- a worker that has not polled for ``max_poll_interval_ms`` plus ``liveness_grace_s`` is killed
  and replaced (it may be stuck in a call that holds the GIL);
- ``max_records_per_worker`` replaces a worker after that many records;
- with ``group_instance_id`` set, slot i is the static member ``"<group_instance_id>-<i>"``;
  under the consumer group protocol a replacement refused its instance id (the killed worker's
  session has not ended) is started again after the back-off, no crash within
  ``crash_loop_window_s``;
- SIGTERM / SIGINT stop the workers gracefully (``graceful_timeout_s``, then kill); a second
  SIGINT kills them at once; SIGTTIN / SIGTTOU add / remove one worker; SIGHUP restarts them
  one at a time;
- ``metrics_port`` serves every worker's metrics plus the pool's on one ``/metrics``.
"""

from __future__ import annotations

from groupkit.workers.pool import POOL_SETTINGS, Pool, PoolSummary
from groupkit.workers.slots import SlotSummary

__all__ = ["POOL_SETTINGS", "Pool", "PoolSummary", "SlotSummary"]
