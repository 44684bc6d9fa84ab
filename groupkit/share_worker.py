"""ShareWorker: a member of a share group (KIP-932) that processes records one by one.

Subclass it, name ``topics`` and ``group_id``, write ``process(record)``, call ``run()`` (or
``groupkit run MODULE:CLASS --processes N``, with N as large as the work needs: a share group's
members share partitions, so a pool may be larger than the partition count). Each record's
outcome is its acknowledgement:

- ``process`` returns: ACCEPT (done; never delivered again);
- ``process`` raises ``groupkit.RejectRecord``: REJECT (it cannot be processed; never again);
- ``process`` raises anything else: RELEASE (delivered again, to any member, with its delivery
  count one higher; the broker archives it at its delivery limit,
  group.share.delivery.count.limit, 5 by default).

``process_batch(records)`` instead handles one poll's records at once and the outcome is the
batch's. Each poll's acknowledgements go to the brokers with the next poll; on stop they are
committed before the member leaves.

Why a class of its own and not a flag on GroupConsumer: a consumer group's worker commits
offsets and follows rebalances (on_assigned/on_revoked, exactly-once transactions), a share
worker does neither: it acknowledges each record, and its outcomes (accept, release, reject)
have no place in GroupConsumer's on_error policies. The two share their shape (class
attributes, ``process``/``process_batch``, ``run``, ``stop``, metrics, the pool).
"""

from __future__ import annotations

import difflib
import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import attrs

from groupkit.config import ShareConsumerConfig
from groupkit.errors import ConfigError, IllegalStateError, RejectRecord, WakeupError
from groupkit.group_consumer import StopOnSignals, _check_grace, _check_port, _check_topics
from groupkit.hooks import Hook, Processed, emit
from groupkit.share import AcknowledgeType
from groupkit.share_consumer import ShareConsumer, ShareConsumerRecord

__all__ = ["ShareRunSummary", "ShareWorker"]

log = logging.getLogger(__name__)

_OWN_SETTINGS = ("topics", "hooks", "metrics_port", "stop_grace_ms")
#: The share consumer's settings a ShareWorker takes (the acknowledgement mode is its own).
SHARE_SETTINGS = tuple(a.name for a in attrs.fields(ShareConsumerConfig)
                       if a.name != "share_acknowledgement_mode")
#: Every setting name a ShareWorker takes, for the pool.
SETTINGS = SHARE_SETTINGS + _OWN_SETTINGS
#: Settings a consumer group member has and a share group keeps on the broker
#: (ShareConsumerConfig says so).
_BROKER_SIDE = ("session_timeout_ms", "heartbeat_interval_ms", "auto_offset_reset",
                "isolation_level")
#: The longest one poll of the loop waits (as GroupConsumer's).
_MAX_POLL_WAIT_S = 5.0


@attrs.frozen
class ShareRunSummary:
    """What one ``run()`` did: records processed, and how each was acknowledged."""

    records_processed: int
    records_accepted: int
    records_released: int
    records_rejected: int


class ShareWorker(StopOnSignals):
    """Base class of a share-group worker; see the module docstring for the outcomes.

    Configure with class attributes (``topics``, ``group_id`` and any
    :class:`~groupkit.config.ShareConsumerConfig` name such as ``max_poll_records``);
    constructor keyword arguments override them; ``hooks`` go to the ShareConsumer.
    ``metrics_port`` serves Prometheus ``/metrics`` and ``/healthz`` while ``run()`` runs.
    """

    topics: ClassVar[Sequence[str]] = ()
    group_id: ClassVar[str | None] = None
    hooks: ClassVar[Sequence[Hook]] = ()
    metrics_port: ClassVar[int | None] = None
    stop_grace_ms: ClassVar[int] = 10_000

    _STOPPING = "acknowledging and leaving the share group"

    def __init__(self, **settings: Any) -> None:
        cls = type(self)
        merged = {name: getattr(cls, name) for name in SHARE_SETTINGS if hasattr(cls, name)}
        merged.update({name: getattr(cls, name) for name in _OWN_SETTINGS})
        for name in settings:
            if name not in SETTINGS and name not in _BROKER_SIDE:
                close = difflib.get_close_matches(name, SETTINGS, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"unknown setting {name!r} for {cls.__name__}{hint}")
        merged.update(settings)
        self._topics = _check_topics(merged.pop("topics"))
        self._hooks: list[Hook] = list(merged.pop("hooks"))
        self._metrics_port = _check_port(merged.pop("metrics_port"))
        self._grace = _check_grace(merged.pop("stop_grace_ms")) / 1000
        if merged.get("group_id") is None:
            raise ConfigError(f"{cls.__name__} needs a group_id (class attribute or keyword)")
        self._batch = cls.process_batch is not ShareWorker.process_batch
        if self._batch == (cls.process is not ShareWorker.process):
            raise ConfigError(f"{cls.__name__} must define exactly one of process(record) or"
                              " process_batch(records)")
        self._settings = {**merged, "share_acknowledgement_mode": "explicit"}
        self.config = ShareConsumerConfig.from_kwargs(self._settings)
        self._stop_requested = False
        self._stop_deadline: float | None = None
        self._started = False
        self._counts = {kind: 0 for kind in AcknowledgeType}
        self._consumer: ShareConsumer | None = None
        self._metrics_server: Any = None
        #: The worker's PrometheusMetrics when metrics_port is set (its registry is served).
        self.metrics: Any = None
        self._health: Any = None
        if self._metrics_port is not None:
            from groupkit.metrics import HealthCheck, PrometheusMetrics

            self.metrics = PrometheusMetrics()
            self._health = HealthCheck.for_config(self.config)
            self._hooks.extend([self.metrics, self._health])

    # --- what subclasses write -------------------------------------------------------------

    def process(self, record: ShareConsumerRecord) -> None:
        """Handle one record: return to accept it, raise RejectRecord to reject it, raise
        anything else to release it for another try."""
        raise NotImplementedError

    def process_batch(self, records: list[ShareConsumerRecord]) -> None:
        """Handle one poll's records at once (define this instead of ``process``); the outcome
        is the whole batch's."""
        raise NotImplementedError

    # --- running -----------------------------------------------------------------------------

    @property
    def topic_names(self) -> tuple[str, ...]:
        return self._topics

    @property
    def summary(self) -> ShareRunSummary:
        """The counts so far (also after ``run()`` raised)."""
        c = self._counts
        accepted, released, rejected = (c[AcknowledgeType.ACCEPT], c[AcknowledgeType.RELEASE],
                                        c[AcknowledgeType.REJECT])
        return ShareRunSummary(accepted + released + rejected, accepted, released, rejected)

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        """``(host, port)`` of the /metrics and /healthz server while ``run()`` serves them."""
        server = self._metrics_server
        return server.address if server is not None else None

    def _wake(self) -> None:
        consumer = self._consumer
        if consumer is not None:
            consumer.wakeup()

    def run(self) -> ShareRunSummary:
        """Process until ``stop()``, SIGTERM or SIGINT; then commit the acknowledgements, leave
        the share group and return a summary."""
        if self._started:
            raise IllegalStateError("run() can be called once per ShareWorker; make a new one")
        self._started = True
        if self._metrics_port is not None:
            from groupkit.metrics import serve

            self._metrics_server = serve(self.metrics.registry, self._metrics_port,
                                         health=self._health)
        try:
            with self._signals_call_stop():
                consumer = ShareConsumer(hooks=self._hooks, **self._settings)
                self._consumer = consumer
                try:
                    consumer.subscribe(list(self._topics))
                    self._loop(consumer)
                    consumer.commit_sync(self._grace_left())
                finally:
                    consumer.close(self._grace_left())
        finally:
            if self._metrics_server is not None:
                self._metrics_server.close()
                self._metrics_server = None
        return self.summary

    def _loop(self, consumer: ShareConsumer) -> None:
        wait = min(_MAX_POLL_WAIT_S, self.config.max_poll_interval_ms / 2000)
        while not self._stop_requested:
            try:
                records = consumer.poll(wait)
            except WakeupError:
                continue  # stop() woke it: the loop's condition ends the loop
            if records:
                self._handle(consumer, records)

    def _handle(self, consumer: ShareConsumer, records: list[ShareConsumerRecord]) -> None:
        started = time.perf_counter()
        before = self._counts[AcknowledgeType.ACCEPT]
        for record, outcome in self._outcomes(records):
            consumer.acknowledge(record, outcome)
            self._counts[outcome] += 1
        if self._hooks:
            emit(self._hooks, Processed(self.config.group_id, len(records),
                                        len(records) - (self._counts[AcknowledgeType.ACCEPT]
                                                        - before),
                                        time.perf_counter() - started))

    def _outcomes(self, records: list[ShareConsumerRecord]
                  ) -> Iterator[tuple[ShareConsumerRecord, AcknowledgeType]]:
        """Each record and how it is acknowledged, as ``process`` (or the batch) ended."""
        if self._batch:
            outcome = self._run_one(records, records[0])
            for record in records:
                yield record, outcome
            return
        for record in records:
            # A stop during a long poll's records releases the rest at once (not processed).
            yield record, (AcknowledgeType.RELEASE if self._stop_requested
                           else self._run_one(record, record))

    def _run_one(self, what: Any, first: ShareConsumerRecord) -> AcknowledgeType:
        try:
            if self._batch:
                self.process_batch(what)
            else:
                self.process(what)
        except RejectRecord as exc:
            log.warning("%s rejected %s: %s (it will not be delivered again)",
                        type(self).__name__, _where(what), exc)
            return AcknowledgeType.REJECT
        except Exception as exc:
            log.warning("%s released %s after %r (delivery %d; it will be delivered again, to"
                        " any member)", type(self).__name__, _where(what), exc,
                        first.delivery_count, exc_info=exc)
            return AcknowledgeType.RELEASE
        return AcknowledgeType.ACCEPT


def _where(what: Any) -> str:
    records = what if isinstance(what, list) else [what]
    first = records[0]
    more = f" and {len(records) - 1} more" if len(records) > 1 else ""
    return f"{first.topic}[{first.partition}]@{first.offset}{more}"
