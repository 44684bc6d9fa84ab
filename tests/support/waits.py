"""Bounded waits for the broker tests: poll a condition until it holds or time runs out."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], bool], timeout: float, what: str,
             step: Callable[[], Any] | None = None) -> None:
    """Run ``step`` (or wait briefly) until ``condition()`` holds; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    event = threading.Event()
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        if step is not None:
            step()
        else:
            event.wait(0.05)


def eventually(check: Callable[[], T], timeout: float, what: str, step: float = 0.1) -> T:
    """Run ``check`` until it stops raising AssertionError (bounded); return what it returned."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError as error:
            if time.monotonic() >= deadline:
                raise AssertionError(f"after {timeout} s, {what}: {error}") from error
        time.sleep(step)
