"""A classic-protocol subscription to a topic pattern: the topics that match, kept up to date.

Under the classic group protocol the client matches the pattern itself, as Java's
``KafkaConsumer.subscribe(Pattern)`` does: it fetches metadata for every topic, subscribes to
the names the pattern matches as a whole (``Pattern.matcher(topic).matches()``; here
``re.fullmatch``), leaving out Kafka's internal topics (Java's default
``exclude.internal.topics=true``), and looks again every ``metadata_max_age_ms``; when the set
changes, the member rejoins with it (Java's ``ConsumerCoordinator.updatePatternSubscription``).
``PatternWatch`` does that on a thread of its own and hands each new set to ``on_match``: the
first one starts the membership. (The consumer group protocol, KIP-848, sends the pattern to
the broker instead, which resolves it.)
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable

import attrs

from groupkit.errors import ConfigError, GroupkitError
from groupkit.runtime.cluster import Cluster
from groupkit.runtime.metadata import ClusterMetadata

__all__ = ["INTERNAL_TOPICS", "PatternWatch", "compile_pattern", "matching"]

log = logging.getLogger(__name__)


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled for client-side matching, or ConfigError saying why it is not one."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"the topic pattern {pattern!r} is not a regular expression: {exc}"
                          ) from None


#: Kafka's internal topics by name (Java's ``Topic.INTERNAL_TOPICS``), left out also where a
#: broker's metadata does not flag them internal.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def matching(pattern: re.Pattern[str], metadata: ClusterMetadata) -> list[str]:
    """The names of the topics in ``metadata`` that ``pattern`` matches as a whole, sorted,
    without Kafka's internal topics."""
    return sorted(name for name, info in metadata.topics.items()
                  if not info.is_internal and name not in INTERNAL_TOPICS
                  and pattern.fullmatch(name))


@attrs.define(eq=False)
class PatternWatch:
    """Matches ``pattern`` against every topic of ``cluster`` at once and then every
    ``interval_s``, and calls ``on_match(names)`` (on its own thread) whenever the matching
    set is new. After ``stop()`` returns, ``on_match`` is never called again."""

    cluster: Cluster
    pattern: re.Pattern[str]
    interval_s: float
    on_match: Callable[[list[str]], None]

    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _wake: threading.Event = attrs.field(init=False, factory=threading.Event)
    _stopped: bool = attrs.field(init=False, default=False)
    _thread: threading.Thread | None = attrs.field(init=False, default=None)
    _matched: list[str] | None = attrs.field(init=False, default=None)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="groupkit-pattern")
        self._thread.start()

    def stop(self, timeout: float = 1.0) -> None:
        """No more matching; waits up to ``timeout`` seconds for the thread (a daemon)."""
        with self._lock:
            self._stopped = True
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        failures = 0
        while not self._stopped:
            config = self.cluster.config
            try:
                metadata = self.cluster.refresh(
                    all_topics=True,
                    deadline=time.monotonic() + config.request_timeout_ms / 1000)
            except GroupkitError as exc:
                failures += 1
                wait = config.retry_backoff().delay(failures)
                if failures == 1:
                    log.info("could not list the topics to match pattern %r (%s); trying again",
                             self.pattern.pattern, exc)
            else:
                failures = 0
                wait = self.interval_s
                self._matched_now(matching(self.pattern, metadata))
            self._wake.wait(wait)

    def _matched_now(self, names: list[str]) -> None:
        with self._lock:
            if self._stopped or names == self._matched:
                return
            log.info("pattern %r matches %d topic(s): %s", self.pattern.pattern, len(names),
                     ", ".join(names[:20]) + (", ..." if len(names) > 20 else ""))
            self._matched = names
            try:
                self.on_match(names)
            except Exception:
                log.exception("the consumer could not take the topics pattern %r matches",
                              self.pattern.pattern)
