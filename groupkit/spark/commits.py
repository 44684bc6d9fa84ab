"""Committing a stream's completed micro-batches to its ``kafka.group.id``: the listener.

The source commits a completed batch's end when Spark asks it for the next batch's end (see
``groupkit.spark.source``); that covers every batch of an availableNow run, the last included,
before the query ends. A query that runs on a processing-time trigger and is stopped right
after a batch gets no such call, so a StreamingQueryListener, added to the session by
``groupkit.spark.register``, commits too: ``onQueryProgress`` is posted after a micro-batch has
run and its sink and commit log are written, and carries each source's end offsets, into which
the ``groupkit-kafka`` source writes its commit target (group id and bootstrap servers). Both
commit outside group membership (generation -1, empty member id, as the Java client's
standalone commitSync) and only forward, so the second of the two is a no-op. A failed commit
logs a warning and never fails the query; Spark's checkpoint stays the query's own record.

Spark delivers listener events asynchronously: ``await_commits(query, timeout)`` waits until
the listener has handled the query's last batch.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming.listener import StreamingQueryListener
from pyspark.sql.streaming.query import StreamingQuery

from groupkit.admin import Admin
from groupkit.errors import GroupkitError, RequestTimeoutError
from groupkit.spark.offsets import COMMIT_KEY, commit_forward, decode

__all__ = ["GroupCommitListener", "await_commits", "listener_for"]

log = logging.getLogger(__name__)

_LISTENERS: weakref.WeakKeyDictionary[SparkSession, GroupCommitListener] = \
    weakref.WeakKeyDictionary()


class GroupCommitListener(StreamingQueryListener):
    """Commits the end offsets of every completed batch of a ``groupkit-kafka`` stream.

    ``settings`` are client settings for the commit connections (TLS, SASL: what the
    ``kafka.*`` options gave the source; secrets are not written into Spark's offsets).
    """

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        self.settings = dict(settings or {})
        self._cond = threading.Condition()
        #: The last batch id handled, per query id (run id changes on restart; id does not).
        self._handled: dict[str, int] = {}

    def onQueryStarted(self, event: Any) -> None:
        """Nothing to commit yet."""

    def onQueryIdle(self, event: Any) -> None:
        """No batch ran: nothing to commit."""

    def onQueryTerminated(self, event: Any) -> None:
        """The last batch's progress event came before this one."""

    def onQueryProgress(self, event: Any) -> None:
        progress = event.progress
        try:
            for source in progress.sources:
                self._commit(source.endOffset)
        except Exception as exc:  # never let a commit problem reach Spark's listener bus
            log.warning("committing batch %s of query %s to its group failed: %s",
                        progress.batchId, progress.id, exc)
        finally:
            with self._cond:
                key = str(progress.id)
                self._handled[key] = max(self._handled.get(key, -1), progress.batchId)
                self._cond.notify_all()

    def _commit(self, end_offset: str | None) -> None:
        if not end_offset:
            return
        offsets = json.loads(end_offset)
        target = offsets.get(COMMIT_KEY) if isinstance(offsets, dict) else None
        if not target:
            return
        positions = decode(offsets)
        if not positions:
            return
        settings = {**self.settings, "bootstrap_servers": target["servers"]}
        try:
            with Admin(**settings) as admin:
                done = commit_forward(admin, target["group"], positions)
        except GroupkitError as exc:
            log.warning("commit of %d partition(s) to group %s failed (%s); the next completed"
                        " batch commits again", len(positions), target["group"], exc)
            return
        log.debug("committed %d partition(s) to group %s", len(done), target["group"])

    def heard(self, query_id: str) -> bool:
        """Whether a batch of this query has reached the listener."""
        with self._cond:
            return query_id in self._handled

    def wait(self, query: StreamingQuery, timeout: float) -> None:
        """Wait until the query's last reported batch has been committed (or failed to)."""
        last = query.lastProgress
        if last is None:
            return
        wanted = last["batchId"] if isinstance(last, dict) else last.batchId
        key = str(query.id)
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._handled.get(key, -1) < wanted:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RequestTimeoutError(
                        f"batch {wanted} of query {key} was not committed to its group within"
                        f" {timeout} s; is the listener registered (groupkit.spark.register)?")
                self._cond.wait(left)


def listener_for(spark: SparkSession, settings: Mapping[str, Any] | None) -> GroupCommitListener:
    """The session's commit listener, added on first use."""
    listener = _LISTENERS.get(spark)
    if listener is None:
        listener = GroupCommitListener(settings)
        spark.streams.addListener(listener)
        _LISTENERS[spark] = listener
    elif settings:
        listener.settings.update(settings)
    return listener


def await_commits(query: StreamingQuery, timeout: float = 30.0) -> None:
    """Wait (bounded) until the group commit of ``query``'s last completed batch is done.

    Call it after ``awaitTermination()`` of an availableNow run before the driver exits:
    Spark hands progress to listeners asynchronously.
    """
    listeners = list(_LISTENERS.values())
    if not listeners:
        raise GroupkitError("no group commit listener in this process: call"
                            " groupkit.spark.register(spark) before starting the query")
    key = str(query.id)
    heard = [listener for listener in listeners if listener.heard(key)]
    (heard or listeners)[0].wait(query, timeout)
