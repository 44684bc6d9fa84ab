"""``groupkit`` re-exports ``assignors.TopicPartition`` while it is itself being imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_assignors_imports_from_a_half_initialised_groupkit():
    # Runs groupkit/__init__.py with `from assignors import TopicPartition` as its first line,
    # the way the package re-exports it, in a fresh interpreter.
    script = textwrap.dedent(
        """
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location(
            "groupkit", "groupkit/__init__.py", submodule_search_locations=["groupkit"]
        )
        groupkit = importlib.util.module_from_spec(spec)
        sys.modules["groupkit"] = groupkit
        exec("from assignors import TopicPartition", groupkit.__dict__)
        spec.loader.exec_module(groupkit)
        import assignors
        assert groupkit.TopicPartition is assignors.TopicPartition
        assert assignors.lookup("sticky").metadata(["t"])
        """
    )
    subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, check=True, timeout=60, capture_output=True
    )
