"""pytest fixtures for groupkit users: a local broker per test session and unique names.

Registered through the ``pytest11`` entry point, so installing groupkit makes ``kafka_broker``
and ``unique_name`` available. Under pytest-xdist every worker starts its own broker.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator

import pytest

from groupkit.testing import LocalBroker


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[LocalBroker]:
    """A started LocalBroker shared by the tests of this session (or xdist worker)."""
    with LocalBroker() as broker:
        yield broker


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """A function that makes topic/group names unique to this test and call: ``name("orders")``."""
    test = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:80]

    def make(prefix: str = "t") -> str:
        return f"{prefix}-{test}-{uuid.uuid4().hex[:10]}"

    return make
