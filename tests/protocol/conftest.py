"""The ``record_loops`` fixture: record tests run once with the C record loops, once without."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from groupkit.protocol import native
from groupkit.protocol.records import batch_read, batch_write


@pytest.fixture(params=["c", "python"])
def record_loops(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Swap the v2 record reading and writing loops for the test: C's, or pure Python's."""
    if request.param == "c":
        if not native.available:
            pytest.skip("the C record loops are not built (test_native_extension_is_built fails)")
        monkeypatch.setattr(batch_read, "_reader", batch_read._read_records_native)
        monkeypatch.setattr(batch_write, "_writer", batch_write._records_native)
    else:
        monkeypatch.setattr(batch_read, "_reader", batch_read._read_records)
        monkeypatch.setattr(batch_write, "_writer", batch_write._records)
    yield request.param
