"""Frozen records for the classes a quick hook builds, without `dataclasses` (which imports
`inspect`, ~7 ms of a hook's start, and compiles five methods per class it defines).

Must hold: a class deriving from `Record` has the fields its annotations name, in order (a base
record's first); `__init__` takes them by position or keyword, with their defaults (a
`field(default_factory=...)` calls the factory per instance), and refuses a missing or unknown
one with TypeError, as a dataclass does; instances are equal when their classes are the same and
their compared fields are equal (`field(compare=False)` leaves one out), hash alike when equal,
and show their shown fields in `repr` (`field(repr=False)` hides one); assigning or deleting an
attribute raises `FrozenRecordError` (an AttributeError); `replace(**changes)` is a copy with
changes; copies and pickles come back equal. A record has `__slots__` unless its class says
`slots=False`: then its defaults are class attributes, as a dataclass's (code reads
`MemoryConfig.inject_chars`), and a `functools.cached_property` has the instance's `__dict__`. mypy sees a frozen
dataclass (`typing.dataclass_transform`), so a record is type-checked as one; at run time this
module imports nothing.
"""

from __future__ import annotations

TYPE_CHECKING = False  # as typing.TYPE_CHECKING: a hook's process does not import typing for this
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Self, dataclass_transform
else:
    def dataclass_transform(**_options):
        return lambda cls: cls

_MISSING = object()
_FIELDS = "__record_fields__"


class FrozenRecordError(AttributeError):
    """An attribute of a record was assigned or deleted."""


class _Field:
    __slots__ = ("default", "default_factory", "repr", "compare")

    def __init__(self, default: Any, default_factory: Callable[[], Any] | None, repr: bool, compare: bool) -> None:
        self.default, self.default_factory, self.repr, self.compare = default, default_factory, repr, compare


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None, repr: bool = True,
          compare: bool = True) -> Any:
    """A field's options, as `dataclasses.field`'s of the same names."""
    return _Field(default, default_factory, repr, compare)


def field_names(record: type[Record] | Record) -> tuple[str, ...]:
    """The names of a record class's (or a record's) fields, in order."""
    return tuple(getattr(record, _FIELDS))


def _own_fields(namespace: dict[str, Any], slots: bool) -> dict[str, _Field]:
    """The fields the class body declares. With slots their defaults are taken out of the
    namespace (a slot and a class attribute of one name cannot coexist); without, a default
    stays readable on the class (`MemoryConfig.inject_chars`), as on a dataclass."""
    fields = {}
    for attr, annotation in namespace.get("__annotations__", {}).items():
        if str(annotation).startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = namespace.pop(attr, _MISSING)
        spec = fields[attr] = value if isinstance(value, _Field) else _Field(value, None, True, True)
        if not slots and spec.default is not _MISSING:
            namespace[attr] = spec.default
    return fields


def _init_source(fields: dict[str, _Field]) -> tuple[str, dict[str, Any]]:
    """The source of `__init__` for `fields` and the names it refers to (compiled once per class:
    an instance is built as fast as a dataclass's)."""
    params, body, scope = [], [], {"_MISSING": _MISSING, "_set": object.__setattr__}
    defaulted = False
    for attr, spec in fields.items():
        if spec.default_factory is not None or spec.default is not _MISSING:
            defaulted = True
        elif defaulted:
            raise TypeError(f"non-default field {attr!r} follows a field with a default")
        if spec.default_factory is not None:
            scope[f"_factory_{attr}"] = spec.default_factory
            params.append(f"{attr}=_MISSING")
            body.append(f"_set(self, {attr!r}, _factory_{attr}() if {attr} is _MISSING else {attr})")
            continue
        if spec.default is not _MISSING:
            scope[f"_default_{attr}"] = spec.default
            params.append(f"{attr}=_default_{attr}")
        else:
            params.append(attr)
        body.append(f"_set(self, {attr!r}, {attr})")
    source = f"def __init__(self, {', '.join(params)}):\n    " + ("\n    ".join(body) or "pass")
    return source, scope


class _RecordType(type):
    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], slots: bool = True) -> Any:
        if not any(isinstance(base, _RecordType) for base in bases):
            return super().__new__(mcls, name, bases, namespace)  # Record itself
        inherited: dict[str, _Field] = {}
        for base in reversed(bases):
            inherited.update(getattr(base, "__record_specs__", {}))
        own = _own_fields(namespace, slots)
        if slots:
            namespace["__slots__"] = tuple(attr for attr in own if attr not in inherited)
        fields = {**inherited, **own}
        source, scope = _init_source(fields)
        exec(source, scope)
        scope["__init__"].__qualname__ = f"{name}.__init__"
        namespace["__init__"] = scope["__init__"]
        namespace["__record_specs__"] = fields
        namespace[_FIELDS] = tuple(fields)
        namespace["_compared"] = tuple(attr for attr, spec in fields.items() if spec.compare)
        namespace["_shown"] = tuple(attr for attr, spec in fields.items() if spec.repr)
        return super().__new__(mcls, name, bases, namespace)


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
class Record(metaclass=_RecordType):
    """The base of a frozen record (see the module docstring)."""

    __slots__ = ()
    __record_fields__: tuple[str, ...]
    _compared: tuple[str, ...]
    _shown: tuple[str, ...]

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, attr) for attr in self._compared)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.__class__, self._key()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{attr}={getattr(self, attr)!r}" for attr in self._shown)
        return f"{self.__class__.__qualname__}({shown})"

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenRecordError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenRecordError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return self.__class__, tuple(getattr(self, attr) for attr in self.__record_fields__)

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` (field name: new value), as `dataclasses.replace`."""
        values = {attr: getattr(self, attr) for attr in self.__record_fields__}
        values.update(changes)
        return self.__class__(**values)
