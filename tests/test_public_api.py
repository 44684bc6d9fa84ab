"""The public names of groupkit resolve, and importing any layer first works (no import cycle)."""

import subprocess
import sys

import pytest

import groupkit


def test_every_public_name_resolves():
    for name in groupkit.__all__:
        assert getattr(groupkit, name) is not None


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        groupkit.Nope  # noqa: B018


def test_topic_partition_is_the_assignors_one():
    import assignors

    assert groupkit.TopicPartition is assignors.TopicPartition


@pytest.mark.parametrize("module", [
    "assignors", "assignors.sticky", "groupkit", "groupkit.errors", "groupkit.protocol",
    "groupkit.group.consumer_protocol", "groupkit.consumer", "groupkit.producer",
])
def test_any_module_imports_first(module):
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
