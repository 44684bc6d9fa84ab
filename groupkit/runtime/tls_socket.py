"""The TLS socket of a broker connection, and the handshake that makes it.

Loaded only by connections that use TLS (see tls.py).
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
from collections.abc import Callable
from typing import TypeVar

from groupkit.errors import KafkaConnectionError

_A = TypeVar("_A")
_R = TypeVar("_R")

# A bounded wait, so a waiter notices a socket closed under it even if select misses it.
_POLL_S = 1.0


def start_tls(context: ssl.SSLContext, sock: socket.socket, host: str,
              address: str) -> SerialTlsSocket:
    """Run the TLS handshake on ``sock``; KafkaConnectionError (socket closed) if it fails."""
    try:
        return SerialTlsSocket(context.wrap_socket(sock, server_hostname=host))
    except ssl.SSLError as exc:
        sock.close()
        detail = exc.reason or str(exc)
        if isinstance(exc, ssl.SSLCertVerificationError):
            detail = f"{detail} ({exc.verify_message})"
        raise KafkaConnectionError(
            f"TLS handshake with {address} failed: {detail}; check the CA file and "
            "that the broker's certificate names this host") from None


class SerialTlsSocket:
    """An ``ssl.SSLSocket`` whose reads and writes never overlap.

    OpenSSL does not allow one TLS connection to be used by two threads at once, but the
    connection reads on its reader thread while callers write. The socket is made non-blocking
    and every TLS call runs under one lock; waiting for the network happens outside it.
    """

    def __init__(self, sock: ssl.SSLSocket) -> None:
        sock.setblocking(False)
        self._sock = sock
        self._lock = threading.Lock()

    def recv(self, size: int) -> bytes:
        """Bytes of plaintext (b"" at end of stream), blocking until some arrive."""
        return self._reading(self._sock.recv, size)

    def recv_into(self, buffer: memoryview) -> int:
        """Plaintext read into ``buffer``; its count (0 at end of stream), blocking as recv."""
        return self._reading(self._sock.recv_into, buffer)

    def _reading(self, read: Callable[[_A], _R], arg: _A) -> _R:
        """``read(arg)`` under the lock, waiting outside it until the TLS layer can go on."""
        while True:
            with self._lock:
                try:
                    return read(arg)
                except ssl.SSLWantReadError:
                    want_write = False
                except ssl.SSLWantWriteError:
                    want_write = True
            self._wait(want_write)

    def sendall(self, data: bytes | bytearray) -> None:
        """Write all of ``data``; raises OSError if the socket fails or is closed."""
        view = memoryview(data)
        while view:
            with self._lock:
                try:
                    sent = self._sock.send(view)
                    want_write = True
                except ssl.SSLWantWriteError:
                    sent, want_write = 0, True
                except ssl.SSLWantReadError:
                    sent, want_write = 0, False
            view = view[sent:]
            if view and not sent:
                self._wait(want_write)

    def _wait(self, for_write: bool) -> None:
        try:
            if for_write:
                select.select([], [self._sock], [], _POLL_S)
            else:
                select.select([self._sock], [], [], _POLL_S)
        except ValueError:
            raise OSError("the TLS socket is closed") from None

    def version(self) -> str | None:
        """The negotiated TLS version, e.g. ``"TLSv1.3"``."""
        return self._sock.version()

    def shutdown(self, how: int) -> None:
        """Shut the underlying TCP socket down, waking a blocked reader."""
        socket.socket.shutdown(self._sock, how)

    def close(self) -> None:
        """Close the socket."""
        self._sock.close()
