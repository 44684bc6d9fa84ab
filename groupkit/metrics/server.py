"""A small HTTP server for ``/metrics`` (Prometheus text format) and ``/healthz`` (JSON).

It runs on one daemon thread (plus one short-lived thread per request) and never touches the
consumer: ``/metrics`` renders the registry, ``/healthz`` asks a ``HealthCheck``.
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import attrs
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from groupkit.errors import ConfigError
from groupkit.metrics.health import HealthCheck

__all__ = ["MetricsServer", "serve"]

log = logging.getLogger(__name__)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Rebinding a port a stopped worker used (TIME_WAIT) must not fail.
    allow_reuse_address = True


@attrs.define(eq=False)
class MetricsServer:
    """A running server; ``address`` is what it is bound to, ``close()`` stops it."""

    _server: _Server
    _thread: threading.Thread

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` bound; the port is the real one when 0 was asked for."""
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        """``http://host:port`` (127.0.0.1 when bound to every interface)."""
        host, port = self.address
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
        return f"http://{shown}:{port}"

    def close(self, timeout: float = 5.0) -> None:
        """Stop serving and release the port (waits up to ``timeout`` for the thread)."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout)

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def serve(registry: CollectorRegistry, port: int, host: str = "0.0.0.0", *,
          health: HealthCheck | None = None) -> MetricsServer:
    """Serve ``registry`` at ``/metrics`` (and ``health`` at ``/healthz``) on ``host:port``.

    ``port=0`` picks a free port: read it from the returned server's ``address``. Without
    ``health``, ``/healthz`` answers 404 saying so. Returns once the socket is bound.
    """
    handler = type("_Handler", (_Handler,), {"registry": registry, "health": health})
    try:
        server = _Server((host, port), handler)
    except OSError as exc:
        raise ConfigError(
            f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}; choose another port"
            " (0 picks a free one) or stop what uses it") from None
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.5},
                              daemon=True, name=f"groupkit-metrics-{server.server_address[1]}")
    thread.start()
    running = MetricsServer(server, thread)
    host, port = running.address
    log.info("serving metrics on %s:%d: %s/metrics and %s/healthz", host, port, running.url,
             running.url)
    return running


class _Handler(BaseHTTPRequestHandler):
    registry: CollectorRegistry
    health: HealthCheck | None
    server_version = "groupkit-metrics"

    def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
            self._reply(200, content_type, encoder(self.registry))
        elif path == "/healthz":
            if self.health is None:
                self._json(404, {"status": "unknown",
                                 "reason": "no health check is configured for this server"})
                return
            verdict = self.health.check()
            self._json(verdict.http_status, verdict.to_json())
        else:
            self._json(404, {"status": "not found", "paths": ["/metrics", "/healthz"]})

    def _json(self, code: int, body: dict[str, Any]) -> None:
        self._reply(code, "application/json", json.dumps(body).encode() + b"\n")

    def _reply(self, code: int, content_type: str, data: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (base signature)
        log.debug("%s %s", self.address_string(), format % args)
