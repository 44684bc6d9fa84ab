"""The ``record_reader`` fixture: record tests run once with the C record loop, once without."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from groupkit.protocol import native
from groupkit.protocol.records import batch_read


@pytest.fixture(params=["c", "python"])
def record_reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Swap the v2 record loop for the test: the C extension's, or the pure-Python one."""
    if request.param == "c":
        if not native.available:
            pytest.skip("the C record reader is not built (test_native_extension_is_built fails)")
        monkeypatch.setattr(batch_read, "_reader", batch_read._read_records_native)
    else:
        monkeypatch.setattr(batch_read, "_reader", batch_read._read_records)
    yield request.param
