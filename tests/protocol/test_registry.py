"""The registry names every message module's API keys, and loads a schema only when asked."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import groupkit.protocol.messages as messages
from groupkit.protocol import registry

ROOT = Path(__file__).resolve().parent.parent.parent


def test_modules_names_the_module_of_every_api_a_message_module_declares() -> None:
    declared = {}
    for info in pkgutil.iter_modules(messages.__path__):
        module = importlib.import_module(f"{messages.__name__}.{info.name}")
        declared.update({key: info.name for key in registry.requests_of(module)})
    assert declared == registry.MODULES


def test_request_class_answers_each_key_with_its_class() -> None:
    for key in registry.MODULES:
        cls = registry.request_class(key)
        assert key == cls.API_KEY
        assert cls.__module__ == f"{messages.__name__}.{registry.MODULES[key]}"
    assert set(registry.load_all()) == set(registry.MODULES)


def test_an_unknown_key_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        registry.request_class(31997)


def test_asking_for_one_api_loads_its_module_alone() -> None:
    probe = ("import sys, json\n"
             "from groupkit.protocol.registry import request_class\n"
             "from groupkit.protocol.versions import negotiate\n"
             "request_class(0)\n"
             "print(json.dumps(sorted(m.rpartition('.')[2] for m in sys.modules"
             " if m.startswith('groupkit.protocol.messages.'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=60, env={**os.environ})
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["api_versions", "produce"]
