"""Hypothesis strategies that build valid messages of any schema class, read from the schema itself.

A message is generated for one version: only the fields that version carries get values (the
rest keep their defaults, as a decoder would leave them), nullable only where the field is
nullable at that version, tagged fields only in flexible versions. Sizes stay small.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from functools import cache
from typing import Any

import attrs
from hypothesis import strategies as st

from groupkit.protocol import schema
from groupkit.protocol.registry import load_all
from groupkit.protocol.schema import Array, FieldSpec, Message

_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_UINT_BITS = {"uint16": 16, "uint32": 32}


def all_messages() -> list[type[Message]]:
    """Every request and response class in the registry, requests first, by API key."""
    out: list[type[Message]] = []
    requests = load_all()
    for key in sorted(requests):
        out += [requests[key], requests[key].Response]
    return out


def all_cases() -> list[tuple[type[Message], int]]:
    """Every (message class, version) pair the registry knows."""
    return [(cls, v) for cls in all_messages()
            for v in range(cls.MIN_VERSION, cls.MAX_VERSION + 1)]


def case_id(case: tuple[type[Message], int]) -> str:
    cls, version = case
    return f"{cls.__name__}-v{version}"


def spec_of(a: attrs.Attribute) -> FieldSpec | None:
    return a.metadata.get(schema._SPEC)


def carried(spec: FieldSpec, version: int, flexible: bool) -> bool:
    """Whether a field is on the wire at this version (as a regular or a tagged field)."""
    if spec.tag is not None:
        return flexible and schema._within(spec.tagged_versions, version)
    return schema._within(spec.versions, version)


def schema_fields(cls: type) -> Iterator[tuple[attrs.Attribute, FieldSpec]]:
    for a in attrs.fields(cls):
        spec = spec_of(a)
        if spec is not None:
            yield a, spec


def nested_class(type_: Any) -> type | None:
    """The struct class a field type holds (directly or as array elements), if any."""
    if isinstance(type_, Array):
        return None if isinstance(type_.element, schema.Type) else type_.element
    if isinstance(type_, schema._StructType):
        return type_.cls
    return None


# --- random values -------------------------------------------------------------------------------


def _type_strategy(type_: Any, version: int, flexible: bool, nullable: bool) -> st.SearchStrategy:
    if isinstance(type_, schema._Fixed):
        name = type_.name
        if name in _INT_BITS:
            bits = _INT_BITS[name]
            base: st.SearchStrategy = st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        elif name in _UINT_BITS:
            base = st.integers(0, (1 << _UINT_BITS[name]) - 1)
        elif name == "float64":
            base = st.floats(allow_nan=False)
        elif name == "boolean":
            base = st.booleans()
        elif name == "uuid":
            base = st.builds(uuid.UUID, int=st.integers(0, (1 << 128) - 1))
        else:
            raise TypeError(f"strategies.py does not know the fixed type {name!r}; add it")
    elif isinstance(type_, schema._Text):
        base = (st.text(max_size=6) if type_.kind == "string" else st.binary(max_size=6))
    elif isinstance(type_, schema._RecordView):
        base = st.binary(max_size=6)
    elif isinstance(type_, Array):
        element = type_.element
        if isinstance(element, schema.Type):
            inner = _type_strategy(element, version, flexible, False)
        else:
            inner = struct_strategy(element, version, flexible)
        base = st.lists(inner, max_size=2)
    elif isinstance(type_, schema._StructType):
        base = struct_strategy(type_.cls, version, flexible)
    else:
        raise TypeError(f"strategies.py does not know the schema type {type_!r}; add it")
    return st.none() | base if nullable else base


@cache
def struct_strategy(cls: type, version: int, flexible: bool) -> st.SearchStrategy:
    """Instances of a struct (or message) class holding values only in the fields carried."""
    kwargs = {}
    for a, spec in schema_fields(cls):
        if carried(spec, version, flexible):
            nullable = schema._within(spec.nullable, version)
            kwargs[a.name] = _type_strategy(spec.type, version, flexible, nullable)
    return st.builds(cls, **kwargs)


def messages(cls: type[Message], version: int) -> st.SearchStrategy:
    """Valid messages of ``cls`` for ``version``: decode(encode(m, version), version) == m."""
    return struct_strategy(cls, version, cls.is_flexible(version))


def unknown_tags(cls: type) -> st.SearchStrategy[dict[int, bytes]]:
    """Tagged fields a schema does not declare (tag numbers above every tag it knows)."""
    known = [spec.tag for _, spec in schema_fields(cls) if spec.tag is not None]
    low = max(known, default=-1) + 1
    return st.dictionaries(st.integers(low, low + 1000), st.binary(max_size=5), min_size=1,
                           max_size=3)


# --- deterministic values ------------------------------------------------------------------------


def minimal(cls: type, version: int, flexible: bool,
            overrides: dict[type, dict[str, Any]] | None = None) -> Any:
    """A struct with defaults, one element in each carried struct array, and ``overrides``
    applied to every instance of the classes they name (so a nested field can be set)."""
    overrides = overrides or {}
    kwargs: dict[str, Any] = {}
    for a, spec in schema_fields(cls):
        inner = nested_class(spec.type)
        if inner is not None and carried(spec, version, flexible):
            value = minimal(inner, version, flexible, overrides)
            kwargs[a.name] = [value] if isinstance(spec.type, Array) else value
    kwargs.update(overrides.get(cls, {}))
    return cls(**kwargs)


def non_default(type_: Any, default: Any) -> Any:
    """A value of ``type_`` that differs from ``default``."""
    if isinstance(type_, schema._Fixed):
        if type_.name == "boolean":
            return not default
        if type_.name == "uuid":
            return uuid.UUID(int=1) if default != uuid.UUID(int=1) else uuid.UUID(int=2)
        if type_.name == "float64":
            return default + 1.5
        return 1 if default != 1 else 2
    if isinstance(type_, schema._Text):
        value: Any = "groupkit" if type_.kind == "string" else b"groupkit"
        return value if value != default else value * 2
    if isinstance(type_, Array):
        element = type_.element
        if isinstance(element, schema.Type):
            item = non_default(element, element.natural_default(False))
        else:
            item = element()
        return [item] if default != [item] else [item, item]
    if isinstance(type_, schema._StructType):
        return type_.cls()
    raise TypeError(f"strategies.py does not know the schema type {type_!r}; add it")


def absent_fields(cls: type, version: int, flexible: bool,
                  seen: frozenset[type] = frozenset()) -> Iterator[tuple[type, attrs.Attribute,
                                                                         FieldSpec]]:
    """Every (struct class, field) that ``version`` does not carry, in structs it does carry."""
    for a, spec in schema_fields(cls):
        if not carried(spec, version, flexible):
            yield cls, a, spec
            continue
        inner = nested_class(spec.type)
        if inner is not None and inner not in seen:
            yield from absent_fields(inner, version, flexible, seen | {cls})
