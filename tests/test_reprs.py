"""groupkit.reprs: the structs' and the hook events' repr, made at call time, is attrs' text.

Each class is compared with a twin attrs builds with its own compiled repr, over every API
message struct (defaults) and every hook event, and on values nested in lists.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import attrs
import pytest

import groupkit.hooks
import groupkit.protocol.messages
from groupkit.protocol.messages.group import JoinGroupRequest, JoinGroupRequestProtocol
from groupkit.protocol.schema import Struct
from groupkit.reprs import AttrsRepr


def _classes() -> list[type]:
    found: list[type] = []
    for info in pkgutil.iter_modules(groupkit.protocol.messages.__path__):
        module = importlib.import_module(f"groupkit.protocol.messages.{info.name}")
        found += [v for v in vars(module).values() if isinstance(v, type)
                  and issubclass(v, Struct) and v.__module__ == module.__name__]
    found += [v for v in vars(groupkit.hooks).values() if isinstance(v, type) and attrs.has(v)]
    return found


def _sample(cls: type) -> Any:
    fields = attrs.fields(cls)
    return cls(**{a.name: i if a.default is attrs.NOTHING else getattr(a.default, "factory",
                                                                       lambda d=a.default: d)()
                  for i, a in enumerate(fields) if a.init})


def _attrs_own(obj: Any) -> str:
    """``obj``'s repr by a twin class with attrs' compiled ``__repr__``."""
    fields = attrs.fields(type(obj))
    twin = attrs.make_class(type(obj).__name__, {
        a.name: attrs.field(repr=a.repr) for a in fields}, repr=True, slots=True)
    return repr(twin(**{a.name: getattr(obj, a.name) for a in fields}))


CLASSES = _classes()


def test_the_families_carry_no_compiled_repr_of_their_own() -> None:
    assert len(CLASSES) > 150
    assert [c.__name__ for c in CLASSES if "__repr__" in c.__dict__] == []
    assert all(issubclass(c, AttrsRepr) for c in CLASSES)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_repr_is_attrs_own_text(cls: type) -> None:
    obj = _sample(cls)
    assert repr(obj) == _attrs_own(obj)


def test_nested_values_and_a_field_left_out() -> None:
    request = JoinGroupRequest(group_id="g", protocols=[
        JoinGroupRequestProtocol(name="range", metadata=b"x\x00")], unknown_tags={3: b"a"})
    assert repr(request) == _attrs_own(request)
    assert "unknown_tags" not in repr(request)  # repr=False, as attrs leaves it out
    assert "protocols=[JoinGroupRequestProtocol(name='range', metadata=b'x\\x00')]" in repr(
        request)


def test_a_repr_callable_and_a_class_made_in_a_function() -> None:
    @attrs.frozen(repr=False)
    class Local(AttrsRepr):
        secret: str = attrs.field(repr=lambda value: "***")
        shown: int = 1

    assert repr(Local("pw")) == "Local(secret=***, shown=1)" == _attrs_own(Local("pw"))
