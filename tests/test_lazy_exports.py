"""The packages whose names load on first use (groupkit/_lazy.py): each name is imported at its
first use and kept, dir() is ``__all__``, an unknown name is Python's own AttributeError."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

#: Each package, with one name of it and the module that name is read from; lowest layer first,
#: as a home module may import a lower package's names (groupkit.admin loads the Fetch schema).
PACKAGES = [
    ("groupkit.protocol.records", "decode_records", "groupkit.protocol.records.reader"),
    ("groupkit.protocol", "FetchRequest", "groupkit.protocol.messages.fetch"),
    ("groupkit.group", "GroupMachine", "groupkit.group.machine"),
    ("groupkit.config", "ProducerConfig", "groupkit.config.producer"),
    ("groupkit", "Admin", "groupkit.admin"),
]


@pytest.mark.parametrize("package", [p for p, _, _ in PACKAGES])
def test_dir_is_the_sorted_public_names(package: str) -> None:
    module = importlib.import_module(package)
    assert dir(module) == sorted(module.__all__)


@pytest.mark.parametrize("package", [p for p, _, _ in PACKAGES])
def test_an_unknown_name_is_an_attribute_error_naming_the_package(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(AttributeError) as raised:
        module.Nope  # noqa: B018
    assert str(raised.value) == f"module {package!r} has no attribute 'Nope'"
    assert not hasattr(module, "Nope")


def test_a_name_loads_its_module_at_first_use_and_is_kept() -> None:
    # In a fresh process: this one has imported most of groupkit already.
    probe = "import importlib, sys\n" + "".join(
        f"p = importlib.import_module({package!r})\n"
        f"assert {home!r} not in sys.modules, {home!r}\n"
        f"value = getattr(p, {name!r})\n"
        f"assert {home!r} in sys.modules, {home!r}\n"
        f"assert vars(p)[{name!r}] is value is getattr(sys.modules[{home!r}], {name!r})\n"
        for package, name, home in PACKAGES)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
