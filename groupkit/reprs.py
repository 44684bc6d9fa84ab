"""attrs' repr, made at call time, for the large families of attrs classes.

attrs compiles a ``__repr__`` of its own for every class it builds, at import: a sixth of what
a fresh process paid to import a consumer (~16 of ~95 ms, its ~110 classes). The protocol's
structs and the hook events, most of those classes, are built with ``repr=False`` and inherit
this one instead: the same text (``Name(field=value, ...)``, each field by ``repr`` or by its
own ``repr=`` callable, ``repr=False`` fields left out), read from the fields when it is asked
for, which is rare (logs, errors, debugging).
"""

from __future__ import annotations

from typing import Any

import attrs


def attrs_repr(self: Any) -> str:
    """``type(self).__name__(field=value, ...)`` as attrs would write it."""
    shown = []
    for field in attrs.fields(type(self)):
        how = field.repr
        if how is False:
            continue
        value = getattr(self, field.name)
        shown.append(f"{field.name}={repr(value) if how is True else how(value)}")
    # attrs' own: a class defined in a function is named without its "<locals>." path.
    return f"{type(self).__qualname__.rsplit('>.', 1)[-1]}({', '.join(shown)})"


class AttrsRepr:
    """A base whose subclasses, built with ``attrs.frozen(repr=False)``, get ``attrs_repr``."""

    __slots__ = ()

    __repr__ = attrs_repr
