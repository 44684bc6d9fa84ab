"""The broker's end of a client's TCP connections, read from the kernel (/proc/net/tcp*).

A test that wants to know whether a connection is really closed, not just marked closed in
the client, notes the connection's two ports while it is open (``ends``) and later asks the
kernel whether the broker's end of it is still ESTABLISHED (``broker_end_open``): once the
client closed its socket, the broker's end leaves ESTABLISHED (CLOSE_WAIT, then gone once the
broker closes it too). Loopback only: both ends are in this host's tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["broker_end_open", "ends", "open_ends"]

_ESTABLISHED = "01"


def ends(conn: Any) -> tuple[int, int]:
    """(client port, broker port) of a connected ``BrokerConnection``'s socket."""
    sock = conn._link.sock
    return sock.getsockname()[1], sock.getpeername()[1]


def _states() -> dict[tuple[int, int], str]:
    """(local port, remote port) -> TCP state (hex, as the kernel writes it), IPv4 and IPv6."""
    found: dict[tuple[int, int], str] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, state = fields[1], fields[2], fields[3]
            found[(int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16))] = state
    return found


def broker_end_open(end: tuple[int, int]) -> bool:
    """Whether the broker's end of the connection ``end`` (from ``ends``) is ESTABLISHED."""
    client, broker = end
    return _states().get((broker, client)) == _ESTABLISHED


def open_ends(all_ends: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
    """Those of ``all_ends`` whose broker end is ESTABLISHED (one read of the tables)."""
    states = _states()
    return {(c, b) for c, b in all_ends if states.get((b, c)) == _ESTABLISHED}
