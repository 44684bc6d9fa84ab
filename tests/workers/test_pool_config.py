"""Pool settings are checked when the Pool is made, before any process starts."""

from __future__ import annotations

import pytest

from groupkit.errors import ConfigError
from groupkit.workers import Pool
from groupkit.workers.worker import class_path, load_class
from tests.support.pool_workers import RecordingWorker


def test_settings_are_split_between_the_pool_and_the_worker() -> None:
    pool = Pool(RecordingWorker, processes=2, graceful_timeout_s=5, group_id="g",
                group_instance_id="inst", max_poll_interval_ms=9000)
    assert pool.options["graceful_timeout_s"] == 5
    assert pool.worker_settings == {"group_id": "g", "group_instance_id": "inst",
                                    "max_poll_interval_ms": 9000}
    assert pool.max_poll_s == 9.0


def test_a_class_metrics_port_is_served_by_the_pool() -> None:
    class Served(RecordingWorker):
        metrics_port = 9123

    assert Pool(Served).options["metrics_port"] == 9123
    assert "metrics_port" not in Pool(Served).worker_settings


@pytest.mark.parametrize(("args", "settings", "message"), [
    ((RecordingWorker,), {"procesess": 2}, "did you mean 'processes'"),
    ((RecordingWorker,), {"graceful_timeout": 2}, "did you mean 'graceful_timeout_s'"),
    ((RecordingWorker, 0), {}, "at least 1"),
    ((object,), {}, "GroupConsumer subclass"),
    ((RecordingWorker,), {"graceful_timeout_s": 0}, "positive"),
    ((RecordingWorker,), {"crash_loop_count": 0}, "crash_loop_count"),
    ((RecordingWorker,), {"max_records_per_worker": 0}, "max_records_per_worker"),
])
def test_bad_settings_are_named(args: tuple[object, ...], settings: dict[str, object],
                                message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Pool(*args, **settings)  # type: ignore[arg-type]


def test_a_class_is_named_for_the_worker_to_import_it_again() -> None:
    assert load_class(class_path(RecordingWorker)) is RecordingWorker
