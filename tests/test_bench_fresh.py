"""The fresh-process rows' children (bench/produce_fresh.py, bench/first_fresh.py) time a
client's import: so at module level they import the standard library alone, and start their
clock before anything else."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("script", ["produce_fresh.py", "first_fresh.py"])
def test_a_fresh_child_imports_no_client_before_its_clock(script: str) -> None:
    tree = ast.parse((ROOT / "bench" / script).read_text())
    body = [node for node in tree.body
            if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    imported = []
    for node in body:
        if isinstance(node, ast.Import):
            imported += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            imported.append(node.module or "")
    assert {name.partition(".")[0] for name in imported} <= sys.stdlib_module_names
    clock = next(i for i, node in enumerate(body) if isinstance(node, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "STARTED" for t in node.targets))
    before = [n for n in body[:clock] if isinstance(n, ast.Import | ast.ImportFrom)]
    assert [a.name for n in before for a in n.names] in (["annotations", "time"], ["time"])
