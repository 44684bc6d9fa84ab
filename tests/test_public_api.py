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


def test_the_type_checking_imports_list_exactly_the_exports():
    import ast
    from pathlib import Path

    tree = ast.parse(Path(groupkit.__file__).read_text())
    guarded = next(node for node in tree.body if isinstance(node, ast.If))
    imported = {(node.module, alias.name) for node in guarded.body
                for alias in node.names if isinstance(node, ast.ImportFrom)}
    assert imported == {(home, name) for name, home in groupkit._HOMES.items()}


def test_version_comes_from_the_package_metadata():
    import re
    from pathlib import Path

    pyproject = (Path(groupkit.__file__).parent.parent / "pyproject.toml").read_text()
    assert groupkit.__version__ == re.search(r'^version = "([^"]+)"', pyproject, re.M)[1]


@pytest.mark.parametrize("name", [
    "IllegalStateError", "OffsetAndMetadata", "TopicPartition", "ErrorCode", "ApiKey",
    "PartitionsAssigned", "CommitDone", "BrokerUnreachable", "Hook", "Event",
])
def test_names_users_reach_for_are_exported(name):
    assert name in groupkit.__all__
