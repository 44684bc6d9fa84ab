"""What /proc (Linux) says about a process's threads: the benchmarks' CPU figures."""

from __future__ import annotations

from pathlib import Path


def thread_stats(pid: int) -> dict[int, tuple[float, int]]:
    """Per live thread id of ``pid``: CPU seconds run (schedstat, nanoseconds) and context
    switches so far (a thread blocked on a lock or a socket switches once per wakeup)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            cpu_ns = int((task / "schedstat").read_text().split()[0])
            status = (task / "status").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread ended while we looked
        switches = 0
        for line in status.splitlines():
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                switches += int(line.split()[1])
        out[int(task.name)] = (cpu_ns / 1e9, switches)
    return out


def run_seconds(pid: int) -> float:
    """CPU seconds the live threads of ``pid`` have run."""
    return sum(cpu for cpu, _ in thread_stats(pid).values())
