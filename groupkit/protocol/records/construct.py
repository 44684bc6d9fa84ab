"""Building decoded records fast: slot setters instead of attrs' ``__init__``.

The readers build millions of records a second; setting slots directly skips the generated
``__init__``'s validation and keyword handling, which the decoder has already done.
"""

from __future__ import annotations

from typing import Any

import attrs

from groupkit.errors import ConfigError
from groupkit.protocol.records.values import Record

_new = object.__new__
_set_offset = Record.__dict__["offset"].__set__
_set_timestamp = Record.__dict__["timestamp"].__set__
_set_key = Record.__dict__["key"].__set__
_set_value = Record.__dict__["value"].__set__
_set_headers = Record.__dict__["headers"].__set__
_set_ts_type = Record.__dict__["timestamp_type"].__set__

#: The class to build and the (setter, value) pairs of its fields beyond Record's: topic and
#: partition, then the ``SET_AFTER_DECODE`` fields given values (``_make``'s ``after``).
_Make = tuple[type[Record], tuple[tuple[Any, Any], ...]]
_PLAIN: _Make = (Record, ())
_SOURCE_FIELDS = {"topic", "partition"}


def _make(record_type: type[Record], topic: str | None, partition: int | None,
          after: tuple[Any, ...] = ()) -> _Make:
    """How to build records of ``record_type``: Record, or a slotted subclass that adds the
    fields ``topic`` and ``partition`` (set from the arguments of the same name) and, beyond
    them, only fields it lists in ``SET_AFTER_DECODE``: the decoder sets those to the values in
    ``after``, one for each, or leaves them unset when ``after`` is empty, and the caller then
    sets every one on every record it keeps (a share record's delivery count)."""
    if record_type is Record:
        if after:
            raise ConfigError("Record has no SET_AFTER_DECODE fields to give values to")
        return _PLAIN
    setters = _setters.get(record_type)
    if setters is None:
        setters = _setters[record_type] = _source_setters(record_type)
    source = ((setters[0], topic), (setters[1], partition))
    if not after:
        return record_type, source
    if len(after) != len(setters) - 2:
        raise ConfigError(f"{record_type.__name__} names {len(setters) - 2} SET_AFTER_DECODE"
                          f" field(s); {len(after)} value(s) were given")
    return record_type, source + tuple(zip(setters[2:], after, strict=True))


#: The topic, partition and SET_AFTER_DECODE slot setters of each record type ``_make`` has
#: checked: the check reads the attrs fields of both classes (tens of microseconds a call, once
#: per answer), and a class's fields and slots do not change once it is made.
_setters: dict[type[Record], tuple[Any, ...]] = {}


def _source_setters(record_type: type[Record]) -> tuple[Any, ...]:
    """The slot setters of ``record_type``'s ``topic``, ``partition`` and SET_AFTER_DECODE
    fields, once it is checked to be a record type ``_make`` can build."""
    if not (isinstance(record_type, type) and issubclass(record_type, Record)):
        raise ConfigError(f"record_type must be Record or an attrs subclass of it, not "
                          f"{record_type!r}")
    extra = {a.name for a in attrs.fields(record_type)} - {a.name for a in attrs.fields(Record)}
    after = tuple(getattr(record_type, "SET_AFTER_DECODE", ()))
    extra -= set(after)
    if extra != _SOURCE_FIELDS or "__slots__" not in record_type.__dict__:
        raise ConfigError(f"record_type {record_type.__name__} must be slotted and add exactly"
                          f" the fields 'topic' and 'partition' to Record, not {sorted(extra)}")
    return tuple(_slot(record_type, name).__set__ for name in ("topic", "partition", *after))


def _slot(cls: type, name: str) -> Any:
    """The slot descriptor of field ``name`` from the class in ``cls``'s MRO that defines it."""
    return next(vars(c)[name] for c in cls.__mro__ if name in vars(c))
