"""The package's shape: no import cycles, dependencies point down the layers, a light import.

docs/architecture.md explains the layers; LAYERS below is the same table, checked against every
import statement in groupkit/ and assignors/ (including imports inside functions).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("groupkit", "assignors")

#: Lowest first. A module may import modules of its own area or of a lower layer, never higher.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("groupkit.errors", "groupkit.reprs", "groupkit._lazy"),
    ("groupkit.protocol", "groupkit.hooks", "groupkit.partitioner", "groupkit.values"),
    ("assignors",),
    ("groupkit.group", "groupkit.txn", "groupkit.share"),
    ("groupkit.config",),
    ("groupkit.runtime", "groupkit.testing", "groupkit.admin_values"),
    ("groupkit.consumer", "groupkit.producer", "groupkit.admin", "groupkit.metrics",
     "groupkit.share_consumer"),
    ("groupkit.group_consumer",),
    ("groupkit.share_worker",),
    ("groupkit.workers", "groupkit.spark"),
    ("groupkit.demo",),
    ("groupkit.demo_pool",),
    ("groupkit.cli",),
    ("groupkit",),
)
LAYER_OF = {area: rank for rank, areas in enumerate(LAYERS) for area in areas}


def _modules() -> dict[str, Path]:
    """Every module by name; a compiled module (groupkit.protocol._native) by its .pyi stub."""
    found = {}
    for package in PACKAGES:
        for pattern in ("*.pyi", "*.py"):
            for path in (ROOT / package).rglob(pattern):
                name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
                found[name.removesuffix(".__init__")] = path
    return found


def _imported(module: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """Every project module ``module`` imports, resolved to the deepest module that exists."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                yield name


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {m: set(_imported(m, p, known)) for m, p in known.items()}


def _area(module: str) -> str:
    parts = module.split(".")
    return parts[0] if parts[0] != "groupkit" else ".".join(parts[:2])


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_a_module_that_imports_it_back() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_every_area_has_a_layer() -> None:
    areas = {_area(m) for m in _modules()}
    assert sorted(areas - LAYER_OF.keys()) == [], "add the new area to LAYERS (and the doc)"


def test_dependencies_point_down_the_layers() -> None:
    upward = sorted(
        f"{m} -> {dep}"
        for m, deps in _graph().items()
        for dep in deps
        if _area(m) != _area(dep) and LAYER_OF[_area(dep)] >= LAYER_OF[_area(m)]
    )
    assert upward == []


def test_import_groupkit_loads_neither_the_cli_nor_spark() -> None:
    probe = (
        "import sys, groupkit; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pyspark', 'pyarrow', 'rich', 'argparse') or m.startswith(('groupkit.cli', "
        "'groupkit.spark', 'groupkit.workers', 'groupkit.demo'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=60)
    assert out.stdout.strip() == "[]"


def _layout_paths() -> set[str]:
    """Every path the README's layout table names (``groupkit/x.py``, ``y.py`` or ``dir/``)."""
    text = (ROOT / "README.md").read_text()
    table = text[text.index("## Layout"):].split("\n\n")[2]
    paths: set[str] = set()
    for row in table.splitlines()[2:]:
        first = row.split("|")[1]
        names = [part.strip().strip("`") for part in first.split(",")]
        base = names[0].rpartition("/")[0]
        for name in names:
            paths.add(name if "/" in name else f"{base}/{name}")
    return paths


def test_the_readme_layout_table_matches_the_tree() -> None:
    named = _layout_paths()
    missing = sorted(p for p in named if not (ROOT / p.rstrip("/")).exists())
    assert missing == [], "the README's layout table names paths that do not exist"
    pkg = ROOT / "groupkit"
    present = {f"groupkit/{p.name}/" for p in pkg.iterdir()
               if p.is_dir() and (p / "__init__.py").exists()}
    present |= {f"groupkit/{p.name}" for p in pkg.glob("*.py") if p.name != "__init__.py"}
    assert sorted(present - named) == [], "add these to the README's layout table"
