"""Finding an assignor by name: the built-ins, then the ``groupkit.assignors`` entry points."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from assignors.base import Assignor
from assignors.range import RangeAssignor
from assignors.roundrobin import RoundRobinAssignor
from assignors.sticky import CooperativeStickyAssignor, StickyAssignor
from groupkit.errors import ConfigError

ENTRY_POINT_GROUP = "groupkit.assignors"

BUILTINS: dict[str, Callable[[], Assignor]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}


def _plugins() -> list[Any]:
    """The installed ``groupkit.assignors`` entry points. importlib.metadata loads only here,
    when a name is not a built-in: it costs a process about 4.5 MB of resident memory."""
    from importlib.metadata import entry_points

    return list(entry_points(group=ENTRY_POINT_GROUP))


def available() -> list[str]:
    """Names ``lookup`` accepts: the built-ins, then installed plugins in name order."""
    plugins = sorted({ep.name for ep in _plugins()} - set(BUILTINS))
    return [*BUILTINS, *plugins]


def known(name: str) -> bool:
    """Whether ``lookup`` accepts ``name``. A built-in name is answered without the plugin
    scan (plugins cannot shadow one: ``lookup`` takes the built-in first)."""
    return name in BUILTINS or any(ep.name == name for ep in _plugins())


def lookup(name: str) -> Assignor:
    """A new instance of the assignor called ``name``.

    An entry point may name an Assignor subclass or any callable returning an Assignor.
    """
    factory = BUILTINS.get(name)
    if factory is None:
        found = [ep for ep in _plugins() if ep.name == name]
        if not found:
            raise ConfigError(
                f"unknown partition assignor {name!r}; known: {', '.join(available())}. "
                f"Install a plugin that registers it under the {ENTRY_POINT_GROUP!r} entry point "
                "group, or pick a known name."
            )
        factory = found[0].load()
    assignor = factory()
    if not isinstance(assignor, Assignor):
        raise ConfigError(
            f"partition assignor {name!r} built a {type(assignor).__name__}, not an Assignor; "
            "its plugin must register an Assignor subclass or a factory returning one"
        )
    if not assignor.name:
        assignor.name = name
    return assignor


def resolve(spec: str | Assignor) -> Assignor:
    """An assignor from a name (looked up) or an Assignor instance (used as is)."""
    if isinstance(spec, Assignor):
        return spec
    if isinstance(spec, str):
        return lookup(spec)
    raise ConfigError(
        f"partition assignor must be a name or an Assignor instance, not {type(spec).__name__}"
    )
