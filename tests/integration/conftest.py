"""Fixtures for the broker tests beyond groupkit.testing's shared ``kafka_broker``."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from groupkit.testing import LocalBroker


@pytest.fixture
def broker() -> Iterator[LocalBroker]:
    """A broker of the test's own, for tests that kill it or freeze it with SIGSTOP (a broker
    that stops answering without closing its sockets); resumed before it is shut down."""
    with LocalBroker() as b:
        yield b
        if b.pid is not None:
            os.kill(b.pid, signal.SIGCONT)
