"""The declarative schema: one attrs class per API message, fields tagged with version ranges.

A message is written once, franz-go style::

    @message(api_key=12, versions="0-4", flexible="4+")
    class HeartbeatRequest(Request):
        group_id: str = f(STRING)
        generation_id: int = f(INT32, default=-1)
        member_id: str = f(STRING)
        group_instance_id: str | None = f(STRING, versions="3+", nullable="3+", default=None)

and one class serves every version. Per version the schema compiles, once, a plan of bound
reader/writer functions; flexible versions (KIP-482) switch strings, bytes and arrays to their
compact forms and append a tagged-field section to every struct. Unknown tags are kept on
decode and written back on encode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import attrs

from groupkit.errors import (
    CorruptFrame,
    FeatureUnsupportedError,
    FieldVersionError,
    UnsupportedVersionError,
)
from groupkit.protocol.primitives import NULL_UUID, Reader, Writer
from groupkit.protocol.releases import first_release
from groupkit.reprs import AttrsRepr

WriteFn = Callable[[Writer, Any], None]
ReadFn = Callable[[Reader], Any]
_T = TypeVar("_T")
_S = TypeVar("_S", bound="Struct")
_M = TypeVar("_M", bound="Message")

if TYPE_CHECKING:
    from typing_extensions import Self, dataclass_transform
else:
    def dataclass_transform(**_options: object) -> Callable[[_T], _T]:
        """Stand-in at run time (3.10 has no typing.dataclass_transform, and typing_extensions
        is no dependency): the marker only tells type checkers what ``struct`` makes."""
        return lambda decorator: decorator

_NO_MAX = 0x7FFF


def parse_versions(spec: str | None) -> tuple[int, int] | None:
    """Parse "3+", "0-4", "5" (Kafka's notation) into an inclusive (low, high); None means never."""
    if spec is None or spec == "none":
        return None
    spec = spec.strip()
    if spec.endswith("+"):
        return int(spec[:-1]), _NO_MAX
    if "-" in spec:
        low, high = spec.split("-")
        return int(low), int(high)
    return int(spec), int(spec)


def _within(rng: tuple[int, int] | None, version: int) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


# --- types -------------------------------------------------------------------------------------


class Type:
    """A wire type: gives a (write, read) pair for a version, flexibility and nullability."""

    nullable_ok = False

    def codec(self, version: int, flexible: bool, nullable: bool) -> tuple[WriteFn, ReadFn]:
        raise NotImplementedError

    def natural_default(self, nullable: bool) -> Any:
        return None


@attrs.frozen
class _Fixed(Type):
    name: str
    default: Any

    def codec(self, version: int, flexible: bool, nullable: bool) -> tuple[WriteFn, ReadFn]:
        return getattr(Writer, self.name), getattr(Reader, self.name)

    def natural_default(self, nullable: bool) -> Any:
        return self.default


INT8 = _Fixed("int8", 0)
INT16 = _Fixed("int16", 0)
INT32 = _Fixed("int32", 0)
INT64 = _Fixed("int64", 0)
UINT16 = _Fixed("uint16", 0)
UINT32 = _Fixed("uint32", 0)
FLOAT64 = _Fixed("float64", 0.0)
BOOL = _Fixed("boolean", False)
UUID = _Fixed("uuid", NULL_UUID)


@attrs.frozen
class _Text(Type):
    """String or bytes; compact in flexible versions, nullable where the field says so."""

    kind: str  # "string" or "bytes"

    nullable_ok = True

    def codec(self, version: int, flexible: bool, nullable: bool) -> tuple[WriteFn, ReadFn]:
        base = "bytes_" if self.kind == "bytes" else "string"
        if flexible:
            name = ("compact_nullable_" if nullable else "compact_") + self.kind
        else:
            name = ("nullable_" + self.kind) if nullable else base
        return getattr(Writer, name), getattr(Reader, name)

    def natural_default(self, nullable: bool) -> Any:
        if nullable:
            return None
        return "" if self.kind == "string" else b""


STRING = _Text("string")
BYTES = _Text("bytes")
#: A record set inside Produce: nullable bytes, decoded separately by ``records``.
RECORDS = BYTES


@attrs.frozen
class _RecordView(Type):
    """A record set a Fetch answer carries: written as nullable bytes, read as a read-only
    memoryview of the frame, so a multi-megabyte answer is not copied once per partition.
    The view keeps the whole frame alive as long as any partition's records are kept."""

    nullable_ok = True

    def codec(self, version: int, flexible: bool, nullable: bool) -> tuple[WriteFn, ReadFn]:
        if flexible:
            return Writer.compact_nullable_bytes, Reader.compact_nullable_view
        return Writer.nullable_bytes, Reader.nullable_view


#: A record set inside a Fetch answer: nullable bytes, read as a view (see ``_RecordView``).
RECORD_VIEW = _RecordView()


@attrs.frozen
class Array(Type):
    """An array of a type or of a nested struct class; compact in flexible versions."""

    element: Any

    nullable_ok = True

    def codec(self, version: int, flexible: bool, nullable: bool) -> tuple[WriteFn, ReadFn]:
        elem = self.element
        if isinstance(elem, Type):
            ew, er = elem.codec(version, flexible, False)
        else:
            plan = _plan(elem, version, flexible)
            ew, er = plan.write, plan.read

        def write(w: Writer, value: Any) -> None:
            if value is None:
                if not nullable:
                    raise FieldVersionError(
                        f"a non-nullable array cannot be None at version {version}")
                w.array_length(None, flexible)
                return
            w.array_length(len(value), flexible)
            for item in value:
                ew(w, item)

        def read(r: Reader) -> Any:
            n = r.array_length(flexible, nullable)
            if n < 0:
                return None
            return [er(r) for _ in range(n)]

        return write, read

    def natural_default(self, nullable: bool) -> Any:
        return None if nullable else attrs.Factory(list)


# --- fields ------------------------------------------------------------------------------------


@attrs.frozen
class FieldSpec:
    type: Any
    versions: tuple[int, int] | None
    nullable: tuple[int, int] | None
    tag: int | None
    tagged_versions: tuple[int, int] | None
    ignorable: bool
    #: What the field is for ("static membership"), when a version without it means a
    #: broker too old for that feature (see ``Message.encode_into``).
    feature: str | None = None


_SPEC = "groupkit.schema"
_MISSING = object()


def f(type_: Any, *, default: Any = _MISSING, versions: str = "0+", nullable: str | None = None,
      tag: int | None = None, tagged_versions: str | None = None, ignorable: bool = False,
      feature: str | None = None) -> Any:
    """Declare a schema field: its wire type, the versions that carry it and its default.

    ``tag`` makes it a tagged field (flexible versions only), present in ``tagged_versions``.
    ``ignorable`` lets a non-default value be dropped silently at versions without the field.
    ``feature`` names what a non-default value asks of the broker: at a version without the
    field, encoding raises FeatureUnsupportedError naming it and the release that has it.
    """
    if isinstance(type_, type):
        type_ = _StructType(type_)
    nullable_rng = parse_versions(nullable)
    spec = FieldSpec(
        type=type_, versions=parse_versions(versions), nullable=nullable_rng, tag=tag,
        tagged_versions=parse_versions(tagged_versions or (versions if tag is not None else None)),
        ignorable=ignorable, feature=feature,
    )
    if default is _MISSING:
        default = type_.natural_default(nullable_rng is not None)
    elif isinstance(default, list):
        default = attrs.Factory(list)
    return attrs.field(default=default, metadata={_SPEC: spec})


@attrs.frozen
class _StructType(Type):
    """A single nested struct (not an array), e.g. a tagged struct field.

    A nullable one is preceded by an int8 marker, as Kafka's generated code writes it: -1 for
    null, 1 for a struct that follows (ConsumerGroupHeartbeatResponse's ``Assignment``).
    """

    cls: Any

    nullable_ok = True

    def codec(self, version: int, flexible: bool, nullable: bool) -> tuple[WriteFn, ReadFn]:
        plan = _plan(self.cls, version, flexible)
        if not nullable:
            return plan.write, plan.read
        write_struct, read_struct = plan.write, plan.read

        def write(w: Writer, value: Any) -> None:
            if value is None:
                w.int8(-1)
                return
            w.int8(1)
            write_struct(w, value)

        def read(r: Reader) -> Any:
            return None if r.int8() < 0 else read_struct(r)

        return write, read

    def natural_default(self, nullable: bool) -> Any:
        return None


# --- compiled plans ----------------------------------------------------------------------------


class _Plan:
    """The bound readers and writers of one struct at one version."""

    def __init__(self, cls: type, version: int, flexible: bool) -> None:
        self.cls = cls
        self.version = version
        self.flexible = flexible
        self.regular: list[tuple[str, WriteFn, ReadFn]] = []
        self.tagged: dict[int, tuple[str, WriteFn, ReadFn, Any]] = {}
        self.absent: list[tuple[str, Any, bool, FieldSpec]] = []
        for a in attrs.fields(cls):
            spec: FieldSpec | None = a.metadata.get(_SPEC)
            if spec is None:
                continue
            nullable = _within(spec.nullable, version)
            if spec.tag is not None:
                if flexible and _within(spec.tagged_versions, version):
                    w, r = spec.type.codec(version, True, nullable)
                    self.tagged[spec.tag] = (a.name, w, r, _default_of(a))
                else:
                    self.absent.append((a.name, _default_of(a), spec.ignorable, spec))
            elif _within(spec.versions, version):
                w, r = spec.type.codec(version, flexible, nullable)
                if not nullable:
                    w = _refuse_none(w, a.name, version)
                self.regular.append((a.name, w, r))
            else:
                self.absent.append((a.name, _default_of(a), spec.ignorable, spec))

    def write(self, w: Writer, obj: Any) -> None:
        for name, default, ignorable, spec in self.absent:
            if not ignorable and getattr(obj, name) != default:
                carried = spec.tagged_versions if spec.tag is not None else spec.versions
                raise FieldVersionError(
                    f"{type(obj).__name__}.{name} is not carried by version {self.version};"
                    f" leave it at its default ({default!r}) or use a version that has it",
                    feature=spec.feature,
                    since=carried[0] if carried and self.version < carried[0] else None)
        for name, fw, _ in self.regular:
            fw(w, getattr(obj, name))
        if self.flexible:
            if not self.tagged and not obj.unknown_tags:
                w.uvarint(0)  # no tagged fields: the common case, without building a table
                return
            entries: dict[int, bytes] = dict(obj.unknown_tags)
            for tag, (name, fw, _, default) in self.tagged.items():
                value = getattr(obj, name)
                if value != default:
                    sub = Writer()
                    fw(sub, value)
                    entries[tag] = sub.getvalue()
            w.uvarint(len(entries))
            for tag in sorted(entries):
                data = entries[tag]
                w.uvarint(tag)
                w.uvarint(len(data))
                w.raw(data)

    def read(self, r: Reader) -> Any:
        kwargs = {name: fr(r) for name, _, fr in self.regular}
        if self.flexible:
            unknown: dict[int, bytes] = {}
            count = r.uvarint()
            if count > r.remaining():
                raise r.fail(f"{count} tagged fields cannot fit")
            last = -1
            for _ in range(count):
                tag = r.uvarint()
                size = r.uvarint()
                if tag <= last:
                    raise r.fail(f"tagged field {tag} out of order")
                last = tag
                known = self.tagged.get(tag)
                if known is None:
                    unknown[tag] = r.raw(size, f"tagged field {tag}")
                    continue
                start = r.pos
                r.view(size, f"tagged field {tag}")
                sub = Reader(r.buf, start, start + size, r.context)
                kwargs[known[0]] = known[2](sub)
                if sub.pos != sub.end:
                    raise sub.fail(f"tagged field {tag} has {sub.end - sub.pos} extra bytes")
            if unknown:
                kwargs["unknown_tags"] = unknown
        return self.cls(**kwargs)


def _default_of(a: attrs.Attribute) -> Any:
    d = a.default
    # attrs' stubs declare Factory a function (so ``x: T = Factory(T)`` checks), so mypy cannot
    # narrow on it; at run time it is the class of factory defaults.
    return d.factory() if isinstance(d, attrs.Factory) else d  # type: ignore[arg-type, union-attr]


def _refuse_none(fw: WriteFn, name: str, version: int) -> WriteFn:
    def write(w: Writer, value: Any) -> None:
        if value is None:
            raise FieldVersionError(f"{name} cannot be None at version {version}")
        fw(w, value)
    return write


def _plan(cls: type, version: int, flexible: bool) -> _Plan:
    cache = cls.__dict__["_plans"]
    key = (version, flexible)
    plan = cache.get(key)
    if plan is None:
        plan = cache[key] = _Plan(cls, version, flexible)
    return plan


# --- base classes ------------------------------------------------------------------------------


@attrs.frozen(kw_only=True, repr=False)
class Struct(AttrsRepr):
    """Base of every schema struct: keeps tagged fields this version of groupkit does not know.

    Its repr is attrs' text made when asked for (``groupkit.reprs``): every struct class is
    built without one compiled of its own, as ``struct`` makes them.
    """

    unknown_tags: dict[int, bytes] = attrs.field(factory=dict, eq=False, repr=False)

    _plans: ClassVar[dict]


@dataclass_transform(kw_only_default=True, frozen_default=True)
def struct(cls: type[_S]) -> type[_S]:
    """Make a nested struct class (attrs frozen, keyword-only, with Struct's repr)."""
    new = attrs.frozen(kw_only=True, repr=False)(cls)
    new._plans = {}
    return new


class Message(Struct):
    """A top-level request or response body of one API."""

    API_KEY: ClassVar[int]
    MIN_VERSION: ClassVar[int]
    MAX_VERSION: ClassVar[int]
    FLEXIBLE_FROM: ClassVar[int | None]

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        return cls.FLEXIBLE_FROM is not None and version >= cls.FLEXIBLE_FROM

    @classmethod
    def _check_version(cls, version: int) -> None:
        if not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
            raise UnsupportedVersionError(
                f"{cls.__name__} has versions {cls.MIN_VERSION}-{cls.MAX_VERSION}, not {version}")

    def for_version(self, version: int) -> Any:
        """This message in the shape ``version`` carries. Identity, except for APIs whose shape
        changed between versions (one key became a batch), which override it the way Kafka's
        request builders do, so a caller can build one message for every version."""
        return self

    def encode_into(self, w: Writer, version: int) -> None:
        self._check_version(version)
        try:
            _plan(type(self), version, self.is_flexible(version)).write(
                w, self.for_version(version))
        except FieldVersionError as exc:
            if exc.feature is None or exc.since is None:
                raise
            raise too_old(type(self), version, exc.feature, exc.since) from exc

    def encode(self, version: int) -> bytes:
        """Encode the message body (no header) at ``version``."""
        w = Writer()
        self.encode_into(w, version)
        return w.getvalue()

    @classmethod
    def decode_from(cls, r: Reader, version: int) -> Self:
        cls._check_version(version)
        return _plan(cls, version, cls.is_flexible(version)).read(r)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview, version: int) -> Self:
        """Decode a whole message body at ``version``; trailing bytes are a CorruptFrame."""
        r = Reader(data, context=f"{cls.__name__} v{version}")
        msg = cls.decode_from(r, version)
        if r.pos != r.end:
            raise CorruptFrame(
                f"{cls.__name__} v{version}: {r.end - r.pos} unexpected bytes after the body")
        return msg


class Request(Message):
    """A request body; ``Response`` names its response class."""

    Response: ClassVar[type[Response]]


class Response(Message):
    """A response body."""

    Request: ClassVar[type[Request]]


@dataclass_transform(kw_only_default=True, frozen_default=True)
def message(*, api_key: int, versions: str,
            flexible: str | None) -> Callable[[type[_M]], type[_M]]:
    """Make an API message class: attrs frozen, keyword-only, with its API key and versions."""
    low, high = parse_versions(versions)  # type: ignore[misc]
    flex = parse_versions(flexible)

    def wrap(cls: type[_M]) -> type[_M]:
        new = struct(cls)
        new.API_KEY = api_key
        new.MIN_VERSION = low
        new.MAX_VERSION = high
        new.FLEXIBLE_FROM = flex[0] if flex else None
        return new

    return wrap


def too_old(cls: type[Message], version: int, feature: str,
            since: int) -> FeatureUnsupportedError:
    """The error for ``feature`` asked of ``cls`` at ``version``, which lacks it: which
    version and Kafka release have it (whether the broker or an api_version pin is older)."""
    api = cls.__name__.removesuffix("Request").removesuffix("Response")
    release = first_release(cls.API_KEY, since)
    where = f"Kafka {release} or newer" if release else "no Kafka release groupkit knows"
    return FeatureUnsupportedError(
        f"{feature}: {api} v{since} or newer is needed ({where}); the broker (or the"
        f" api_version pin) allows {api} v{version} at most.", feature=feature, release=release)


def pair(request: type[Request], response: type[Response]) -> None:
    """Link a request class and its response class."""
    request.Response = response
    response.Request = request
