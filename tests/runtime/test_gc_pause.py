"""gc_paused: the collector is off inside, back to its earlier state after the last pause."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from groupkit.runtime.gc_pause import gc_paused


@pytest.fixture(autouse=True)
def _restore_gc() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_overlapping_pauses_resume_the_collector_only_after_the_last() -> None:
    gc.enable()
    outer = gc_paused()
    inner = gc_paused()
    outer.__enter__()
    assert not gc.isenabled()
    inner.__enter__()
    outer.__exit__(None, None, None)
    assert not gc.isenabled()
    inner.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_collector_the_application_disabled_stays_disabled() -> None:
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_the_collector_resumes_when_the_body_raises() -> None:
    gc.enable()
    with pytest.raises(ValueError, match="boom"), gc_paused():
        raise ValueError("boom")
    assert gc.isenabled()
