"""TLS settings for broker connections, turned into an ``ssl.SSLContext``."""

from __future__ import annotations

import os
import select
import socket
import ssl
import threading

import attrs

from groupkit.errors import ConfigError

# A bounded wait, so a waiter notices a socket closed under it even if select misses it.
_POLL_S = 1.0


@attrs.frozen
class TlsConfig:
    """Where the CA and the client certificate live. The key password never appears in repr.

    ``cafile=None`` trusts the system's CAs. ``check_hostname`` is on by default, as it must be
    unless the broker's certificate does not name the address clients use.
    """

    cafile: str | os.PathLike[str] | None = None
    certfile: str | os.PathLike[str] | None = None
    keyfile: str | os.PathLike[str] | None = None
    password: str | None = attrs.field(default=None, repr=False)
    check_hostname: bool = True

    def context(self) -> ssl.SSLContext:
        """A client SSLContext for these settings; ConfigError if a file cannot be used."""
        try:
            ctx = ssl.create_default_context(cafile=self.cafile)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"tls cafile {self.cafile!s} cannot be loaded ({exc}); "
                              "give a PEM file of CA certificates") from None
        ctx.check_hostname = self.check_hostname
        if self.certfile is not None:
            try:
                ctx.load_cert_chain(self.certfile, self.keyfile, password=self.password)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigError(
                    f"tls certfile {self.certfile!s} / keyfile {self.keyfile!s} cannot be loaded "
                    f"({type(exc).__name__}: {exc.args[-1] if exc.args else ''}); check the "
                    "files and the key password") from None
        elif self.keyfile is not None:
            raise ConfigError("tls keyfile is set without certfile; give both or neither")
        return ctx


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
        while True:
            with self._lock:
                try:
                    return self._sock.recv(size)
                except ssl.SSLWantReadError:
                    want_write = False
                except ssl.SSLWantWriteError:
                    want_write = True
            self._wait(want_write)

    def sendall(self, data: bytes) -> None:
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
