"""A TLS terminator in front of the local broker (which speaks plaintext only), so the client's
TLS settings are tested against a real handshake with certificates the test made."""

from __future__ import annotations

import contextlib
import select
import socket
import ssl

from tests.support.fake_broker import accept_forever, shut


class TlsTerminator:
    """Accepts TLS on a loopback port and forwards the plaintext to the broker."""

    def __init__(self, context: ssl.SSLContext, target: tuple[str, int]) -> None:
        self.context = context
        self.target = target
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        accept_forever(self.server, self._serve)

    def _serve(self, raw: socket.socket) -> None:
        # One thread per connection does all TLS calls: OpenSSL forbids concurrent use.
        try:
            tls = self.context.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        upstream = socket.create_connection(self.target)
        tls.setblocking(False)
        with tls, upstream, contextlib.suppress(OSError):
            while True:
                readable, _, _ = select.select([tls, upstream], [], [], 1.0)
                if tls in readable or tls.pending():
                    try:
                        data = tls.recv(65536)
                    except ssl.SSLWantReadError:
                        data = None
                    if data == b"":
                        return
                    if data:
                        upstream.sendall(data)
                if upstream in readable:
                    data = upstream.recv(65536)
                    if not data:
                        return
                    self._send_tls(tls, data)

    @staticmethod
    def _send_tls(tls: ssl.SSLSocket, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[tls.send(view):]
            except (ssl.SSLWantWriteError, ssl.SSLWantReadError):
                select.select([], [tls], [], 1.0)

    def close(self) -> None:
        shut(self.server)
