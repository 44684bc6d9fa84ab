"""Which brokers answer: one WARNING when a broker stops answering, a reminder at most every
``repeat_s`` while the outage lasts, and one INFO when it answers again.

Shared by every connection of one client (bootstrap connections included), so an outage is
reported once per broker address however many sockets retry it, the way the Java client's
NetworkClient logs a broker "may not be available" once per disconnect rather than per poll.
An established connection that closes is an INFO line (Java's "Node N disconnected"), at most
one per broker every ``repeat_s``: a broker that closes connection after connection (one that
drops a request it cannot serve, a flapping listener) does not fill the log; the reconnect that
fails, if any, is the outage's WARNING.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import attrs

__all__ = ["Reachability"]

log = logging.getLogger(__name__)


@attrs.define(eq=False)
class _Outage:
    since: float
    logged_at: float
    attempts: int
    error: str


@attrs.define(eq=False)
class Reachability:
    """Connect failures and successes per broker address, turned into log lines an operator
    can act on; also answers whether any broker has answered yet (``answered``)."""

    repeat_s: float = 30.0
    clock: Callable[[], float] = time.monotonic
    _outages: dict[str, _Outage] = attrs.field(factory=dict, init=False)
    #: When a closed connection to each address was last logged at INFO.
    _closed_logged: dict[str, float] = attrs.field(factory=dict, init=False)
    _answered: bool = attrs.field(default=False, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    @property
    def answered(self) -> bool:
        """Whether a connection to some broker has completed its handshake."""
        return self._answered

    def failures(self) -> dict[str, str]:
        """Each unreachable broker address and the last reason it failed."""
        with self._lock:
            return {address: o.error for address, o in self._outages.items()}

    def failed(self, address: str, error: str) -> None:
        """A connect attempt to ``address`` failed with ``error``."""
        now = self.clock()
        with self._lock:
            outage = self._outages.get(address)
            if outage is None:
                self._outages[address] = _Outage(now, now, 1, error)
                first = True
            else:
                outage.attempts += 1
                outage.error = error
                first = False
                if now - outage.logged_at < self.repeat_s:
                    return
                outage.logged_at = now
                attempts, since = outage.attempts, outage.since
        if first:
            log.warning("broker %s is unreachable: %s; retrying with back-off (reported again"
                        " every %.0f s while this lasts)", address, error, self.repeat_s)
        else:
            log.warning("broker %s is still unreachable after %d attempts over %.0f s: %s",
                        address, attempts, now - since, error)

    def closed(self, address: str, error: str) -> None:
        """An established connection to ``address`` closed (the broker, the network or a
        failed request closed it)."""
        now = self.clock()
        with self._lock:
            last = self._closed_logged.get(address)
            quiet = last is not None and now - last < self.repeat_s
            if not quiet:
                self._closed_logged[address] = now
        log.log(logging.DEBUG if quiet else logging.INFO, "connection to %s closed: %s",
                address, error)

    def connected(self, address: str) -> None:
        """A connection to ``address`` completed its handshake."""
        with self._lock:
            self._answered = True
            outage = self._outages.pop(address, None)
        if outage is not None:
            log.info("broker %s is reachable again after %d failed attempt(s) over %.1f s",
                     address, outage.attempts, self.clock() - outage.since)
