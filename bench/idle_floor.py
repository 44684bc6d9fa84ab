"""The CPU floor of an idle member's design on this machine, with no client code at all.

An idle groupkit member (bench/group.py's ``idle`` row: heartbeat 500 ms, ``poll(0.5)``, an
empty topic) wakes eight times a second and sends four requests. This runs that pattern and
nothing else: a "poll" thread waking on a 0.5 s lock timeout; a "runner" thread that wakes every
0.5 s and sends a 60-byte "heartbeat"; a reader of those answers; a reader of long-poll "fetch"
answers that sends the next 100-byte request on each. A second process plays the broker
(answers heartbeats at once, each fetch after 0.5 s) over loopback TCP with TCP_NODELAY, as the
broker does. The figure is what any client with this design pays on this machine before it
runs a line of its own: compare it with ``bench.group --rows idle`` and ``bench.idle``.

    .venv/bin/python -m bench.idle_floor [--seconds 30]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time

from bench.idle import ROOT
from bench.proc import thread_stats

_INTERVAL_S = 0.5


def _nodelay(sock: socket.socket) -> socket.socket:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _broker(port: int) -> None:
    heartbeats = _nodelay(socket.create_connection(("127.0.0.1", port)))
    fetches = _nodelay(socket.create_connection(("127.0.0.1", port)))

    def answer_heartbeats() -> None:
        while heartbeats.recv(65536):
            heartbeats.sendall(b"h" * 40)

    threading.Thread(target=answer_heartbeats, daemon=True).start()
    while fetches.recv(65536):
        time.sleep(_INTERVAL_S)
        fetches.sendall(b"f" * 80)


def _member() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    print(server.getsockname()[1], flush=True)
    heartbeats = _nodelay(server.accept()[0])
    fetches = _nodelay(server.accept()[0])

    def wake_every_interval(send: bool) -> None:
        bell = threading.Lock()
        bell.acquire()
        while True:
            bell.acquire(True, _INTERVAL_S)
            if send:
                heartbeats.sendall(b"H" * 60)

    def read_heartbeat_answers() -> None:
        while True:
            heartbeats.recv(65536)

    def read_fetch_answers() -> None:
        fetches.sendall(b"F" * 100)
        while True:
            fetches.recv(65536)
            fetches.sendall(b"F" * 100)

    for target, args, name in ((wake_every_interval, (True,), "runner"),
                               (read_heartbeat_answers, (), "heartbeat reader"),
                               (read_fetch_answers, (), "fetch reader")):
        threading.Thread(target=target, args=args, daemon=True, name=name).start()
    print(";".join(f"{t.native_id}={t.name}" for t in threading.enumerate()), flush=True)
    wake_every_interval(False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args(argv)
    member = subprocess.Popen([sys.executable, "-m", "bench.idle_floor", "member"],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    broker = None
    try:
        assert member.stdout is not None
        port = member.stdout.readline().strip()
        broker = subprocess.Popen([sys.executable, "-m", "bench.idle_floor", "broker", port],
                                  cwd=ROOT)
        names = dict(item.split("=", 1) for item in member.stdout.readline().strip().split(";"))
        time.sleep(2 * _INTERVAL_S)  # the first fetch round trip
        before = thread_stats(member.pid)
        start = time.monotonic()
        time.sleep(args.seconds)
        wall = time.monotonic() - start
        after = thread_stats(member.pid)
    finally:
        member.kill()
        if broker is not None:
            broker.kill()
    total = 0.0
    print(f"idle design floor, {args.seconds:g} s, load average {os.getloadavg()[0]:.2f}:")
    for tid in sorted(after):
        cpu = after[tid][0] - before.get(tid, (0.0, 0))[0]
        switches = (after[tid][1] - before.get(tid, (0.0, 0))[1]) / wall
        total += cpu
        name = "poll" if names.get(str(tid)) == "MainThread" else names.get(str(tid), "?")
        print(f"  {name:16s} {1e6 * cpu / wall:6.0f} us/s  {switches:5.2f} switches/s")
    print(f"  total            {100 * total / wall:.3f} % of a core")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["member"]:
        _member()
    elif sys.argv[1:2] == ["broker"]:
        _broker(int(sys.argv[2]))
    else:
        sys.exit(main())
