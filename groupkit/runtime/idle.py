"""When a connection nobody uses is closed: ``connections_max_idle_ms`` after its last traffic.

The Java client's Selector closes a connection that had no send or receive for
connections.max.idle.ms (Selector.maybeCloseOldestConnection with its IdleExpiryManager;
a negative value, Selector.NO_IDLE_TIMEOUT_MS, closes none), a little before the broker's own
limit (10 minutes) would close it under a request. Here a connection is idle only when
nothing is in flight on it and no standing request (an idle member's long poll or heartbeat,
which the connection sends again by itself) is live: one waiting for its answer or its next
send is traffic to come, not idleness, as its sends and answers keep Java's connection fresh.
A setting below a member's heartbeat interval closes its heartbeat connection between
heartbeats before they can stand (two equal answers on one socket), so each heartbeat
connects anew (Java's Selector closes it between heartbeats too).

The check runs on the connection's watchdog thread (``BrokerConnection._watch_loop``), which
already sleeps until the next request deadline under the lock every send takes: deciding
there, and marking the socket closed in the same hold, no send can slip a request onto a
socket that is being closed (a send that finds it closed reconnects), and no thread is added.
The reader stamps the time of each answer (``heard``) as it takes it off the socket's list.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groupkit.runtime.tls_socket import SerialTlsSocket

__all__ = ["closed_idle", "max_idle_s", "quiet_until", "shut"]

log = logging.getLogger(__name__)

#: How often at most the watchdog looks while requests are in flight, for a tiny setting
#: (0 would make it spin).
_LOOK_FLOOR_S = 0.05
#: Longer than any process lives, and within ``threading.TIMEOUT_MAX``.
_NEVER_S = min(threading.TIMEOUT_MAX / 2, 1e9)


def max_idle_s(connections_max_idle_ms: int) -> float | None:
    """The idle limit in seconds; None (never close) for a negative setting, as Java's, and
    for one past what a thread's timed wait takes (Java's Long.MAX_VALUE, say)."""
    seconds = connections_max_idle_ms / 1000
    return None if seconds < 0 or seconds > _NEVER_S else seconds


def quiet_until(link: Any, max_idle: float, now: float) -> float:
    """When the watchdog is to close ``link`` (a connection's ``_Link``; the caller holds its
    lock) as idle: at or before ``now``, at once; else when to look again.

    Idle is ``max_idle`` after its last answer (``heard``, or its opening) with nothing in
    flight, its handshake done and no timed standing live. A socket in use is looked at again
    an idle period on, so that once it goes quiet it is closed ``max_idle`` after its last
    answer, not at the next request deadline (with the default, that look is later than
    every request deadline, and costs the watchdog no wakeup of its own)."""
    if link.pending or not link.versions or any(s.live for s in link.timed):
        return now + max(max_idle, _LOOK_FLOOR_S)
    return float(link.heard + max_idle)


def shut(sock: socket.socket | SerialTlsSocket) -> None:
    """Shut and close a connection's socket (its reader wakes and ends)."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


def closed_idle(address: str, heard: float) -> None:
    """Say that the connection to ``address`` was closed as idle: routine, an INFO line as
    Java's NetworkClient logs a node disconnected, not a broken connection's warning."""
    log.info("closed the connection to %s, idle for %d ms (connections_max_idle_ms); the next"
             " request reconnects", address, round((time.monotonic() - heard) * 1000))
