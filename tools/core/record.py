"""Records: small classes of typed fields, immutable by default, made without generating code.

``dataclasses.dataclass`` compiles the source of every method it writes (``__init__``, ``__eq__``,
``__setattr__``... one ``exec`` each) and ``typing.NamedTuple`` compiles every string annotation (a
``ForwardRef``) and its ``__new__``: 1 to 4 M instructions a class, at import. With 128 of them on its path that
was a sixth of ``rigaudit check``'s start (docs/decisions/0001-records.md). A :class:`Record` gets its
methods from one shared implementation instead, and costs about what a plain class costs to define.

A subclass declares its fields as a frozen dataclass does (the type checker reads it as one, through
``dataclass_transform``)::

    class Gpu(Record):
        index: int
        name: str = ""

It gets ``__init__`` (positional or keyword arguments, in field order, defaults from the class body),
``__repr__``, ``__eq__`` (same class, equal fields) and ``__hash__``, and refuses attribute assignment
(``dataclasses.FrozenInstanceError``, as a frozen dataclass does).
A record does not order (no code sorts records; a NamedTuple did, as a tuple); ``frozen=False`` makes a
mutable record (no hash). A default must be immutable (a tuple, a frozenset, ``None``...): a list would be
shared by every record; ``field(default_factory=list)`` gives each its own. ``__post_init__`` runs after
``__init__``, as a dataclass's does. :func:`replace` copies a record with some fields changed, :func:`as_dict`
gives its fields, nested records as dicts too (``dataclasses.asdict``).
The standard library only, and Python 3.9 (it travels in a node's payload, ``tools/remote/payload.py``).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from operator import itemgetter
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, overload

_T = TypeVar("_T")
if sys.version_info >= (3, 11):
    from typing import dataclass_transform
elif TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:  # pragma: no cover - Python 3.9 and 3.10 (a node's payload runs there): it only informs type checkers

    def dataclass_transform(**_: object) -> Callable[[_T], _T]:
        return lambda cls: cls


_R = TypeVar("_R", bound="Record")
_SHARED = (list, dict, set, bytearray)
"""Defaults that one record could change under every other's feet (a mutable record too)."""
_CLASS_LEVEL = ("ClassVar", "typing.ClassVar", "Final", "typing.Final")
_INIT_ONLY = ("InitVar", "dataclasses.InitVar")
"""Annotations of arguments ``__init__`` takes and gives to ``__post_init__`` without storing them."""


class _Field:
    """A field given by :func:`field`: a default made at each ``__init__``, or one left out of ``repr``."""

    __slots__ = ("default", "default_factory", "repr")

    def __init__(self, default_factory: Callable[[], object] | None, default: object = None, *, repr: bool = True) -> None:
        self.default_factory = default_factory
        self.default = default
        self.repr = repr


@overload
def field(*, default: _T, repr: bool = True) -> _T: ...
@overload
def field(*, default_factory: Callable[[], _T], repr: bool = True) -> _T: ...
def field(*, default: object = _Field, default_factory: Callable[[], object] | None = None, repr: bool = True) -> Any:
    """A field's default: ``default``, or ``default_factory()`` called for each record (a list of its own);
    ``repr=False`` leaves the field out of the record's ``repr`` (a lock, a cache, a secret), as a dataclass's."""
    if default_factory is not None:
        return _Field(default_factory, repr=repr)
    if default is _Field:
        raise TypeError("field() takes a default or a default_factory")
    return default if repr else _Field(None, default, repr=False)


def _declared(cls: type) -> dict[str, str]:
    """The fields ``cls``'s own body annotates (not class-level names), in order, with their annotations' text."""
    annotations = cls.__dict__.get("__annotations__")  # noqa: RUF063 - inspect's would import inspect
    if annotations is None:  # made on demand (3.14), or none of its own (3.9 would show its base's: the same fields)
        annotations = getattr(cls, "__annotations__", {})
    found: dict[str, str] = {}
    for name, annotation in annotations.items():
        text = _text(annotation)
        if _head(text) not in _CLASS_LEVEL:
            found[name] = text
    return found


def _text(annotation: object) -> str:
    """An annotation as written, without the quotes a string annotation keeps under postponed annotations."""
    if isinstance(annotation, str):
        text = annotation.strip()
        while len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
            text = text[1:-1].strip()
        return text
    if isinstance(annotation, dataclasses.InitVar):
        return "InitVar"
    origin = getattr(annotation, "__origin__", None)
    if origin is ClassVar or annotation is ClassVar:
        return "ClassVar"
    return getattr(annotation, "__name__", repr(annotation))


def _head(text: str) -> str:
    """``"ClassVar"`` of ``"typing.ClassVar[int]"``: the name an annotation's subscript follows."""
    return text.split("[", 1)[0].strip()


class _Signature:
    """``inspect.signature`` of a record class: its fields, made on first use (inspect is not imported before)."""

    def __get__(self, instance: object, owner: type[Record]) -> Any:
        import inspect
        import typing

        try:
            hints = typing.get_type_hints(owner)
        except Exception:  # a name only a type checker sees: the annotation as written
            hints = {}
        params = []
        for name in owner.__record_init__:
            default = owner.__record_defaults__.get(name, inspect.Parameter.empty)
            if isinstance(default, _Field):
                default = inspect.Parameter.empty if default.default_factory is not None else default.default
            annotation = hints.get(name, owner.__record_types__.get(name, inspect.Parameter.empty))
            if isinstance(annotation, dataclasses.InitVar):
                annotation = annotation.type
            params.append(
                inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=annotation)
            )
        return inspect.Signature(params, return_annotation=None)


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
class Record:
    """The base of a record; see the module's docstring."""

    __record_fields__: ClassVar[tuple[str, ...]] = ()
    """The fields a record holds, in order (what ``==``, hash, ``repr``, :func:`replace` and :func:`as_dict` see)."""
    __record_init__: ClassVar[tuple[str, ...]] = ()
    """The arguments of ``__init__``, in order: the fields and the ``InitVar`` ones given to ``__post_init__``."""
    __record_init_only__: ClassVar[tuple[str, ...]] = ()
    __signature__: ClassVar[Any] = _Signature()
    __record_shown__: ClassVar[tuple[str, ...]] = ()
    """The fields ``repr`` shows: all but those declared with ``field(repr=False)``."""
    __record_defaults__: ClassVar[dict[str, object]] = {}
    __record_types__: ClassVar[dict[str, str]] = {}
    __record_names__: ClassVar[frozenset[str]] = frozenset()
    __record_frozen__: ClassVar[bool] = True
    __record_post_init__: ClassVar[bool] = False
    __record_key__: ClassVar[Callable[[dict[str, object]], tuple[object, ...]]] = staticmethod(lambda held: ())
    """The fields' values as a tuple, from an instance's ``__dict__`` (one C call: what ``==`` and hash compare)."""

    def __init_subclass__(cls, *, frozen: bool = True, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        types: dict[str, str] = {}
        hidden: set[str] = set()
        for base in reversed(cls.__mro__):
            if issubclass(base, Record) and base is not Record:
                types.update(_declared(base))
                if base is not cls:
                    hidden.update(set(base.__record_fields__) - set(base.__record_shown__))
        names = list(types)
        defaults: dict[str, object] = {}
        for name in names:
            if name in cls.__dict__ or name in getattr(cls, "__record_defaults__", {}):
                value = cls.__dict__.get(name, cls.__record_defaults__.get(name))
                if isinstance(value, dataclasses.Field):
                    raise TypeError(
                        f"{cls.__qualname__}.{name}: dataclasses.field() in a record (use rigaudit.tools.core.record.field)"
                    )
                if isinstance(value, _Field):
                    if not value.repr:
                        hidden.add(name)
                    if value.default_factory is None:  # field(default=..., repr=False): a plain default
                        value = value.default
                        setattr(cls, name, value)
                if isinstance(value, _SHARED) or (isinstance(value, Record) and not value.__record_frozen__):
                    raise TypeError(f"{cls.__qualname__}.{name}: a mutable default ({type(value).__name__}) is shared")
                defaults[name] = value
            elif defaults:
                raise TypeError(f"{cls.__qualname__}.{name}: a field without a default follows one with a default")
        for name, value in defaults.items():  # a plain default stays a class attribute, as a dataclass's does
            if isinstance(value, _Field) and name in cls.__dict__:
                delattr(cls, name)
        init_only = tuple(name for name in names if _head(types[name]) in _INIT_ONLY)
        if init_only and not hasattr(cls, "__post_init__"):
            raise TypeError(f"{cls.__qualname__}.{init_only[0]}: an InitVar without a __post_init__ to take it")
        cls.__record_init__ = tuple(names)
        cls.__record_init_only__ = init_only
        names = [name for name in names if name not in init_only]
        cls.__record_fields__ = tuple(names)
        cls.__record_shown__ = tuple(name for name in names if name not in hidden)
        cls.__record_types__ = types
        cls.__record_names__ = frozenset(cls.__record_init__)
        cls.__record_defaults__ = defaults
        cls.__record_frozen__ = frozen
        cls.__record_post_init__ = hasattr(cls, "__post_init__")
        cls.__record_key__ = staticmethod(_key_of(cls.__record_fields__))
        methods: dict[str, object] = {"__match_args__": tuple(names)}
        if not frozen:
            methods.update(__setattr__=object.__setattr__, __delattr__=object.__delattr__)
            if "__hash__" not in cls.__dict__:
                methods["__hash__"] = None
        for name, method in methods.items():
            setattr(cls, name, method)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        cls = self.__class__
        names = cls.__record_init__
        held = self.__dict__
        if kwargs or len(args) != len(names):
            _fill(held, cls, args, kwargs)
        else:  # every field given positionally: the common case, kept short (records are made in hot loops)
            held.update(zip(names, args))  # noqa: B905 - the lengths are equal (and 3.9 has no strict)
        if cls.__record_post_init__:
            self.__post_init__(*[held.pop(name) for name in cls.__record_init_only__])  # type: ignore[attr-defined]

    def __setattr__(self, name: str, value: object) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign {name!r}: a {type(self).__qualname__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete {name!r}: a {type(self).__qualname__} is immutable")

    def __repr__(self) -> str:
        inside = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__record_shown__)
        return f"{type(self).__qualname__}({inside})"

    def __eq__(self, other: object) -> bool:
        cls = self.__class__
        if other.__class__ is not cls:
            return NotImplemented
        key = cls.__record_key__
        return key(self.__dict__) == key(other.__dict__)

    def __hash__(self) -> int:
        return hash(self.__class__.__record_key__(self.__dict__))


def _fill(held: dict[str, object], cls: type[Record], args: tuple[object, ...], kwargs: dict[str, object]) -> None:
    """Set ``held`` from arguments that are not every field in order: keywords, defaults, or a wrong call."""
    names = cls.__record_init__
    if len(args) > len(names):
        raise TypeError(f"{cls.__qualname__}() takes {len(names)} arguments, {len(args)} given")
    if args:
        held.update(zip(names, args))  # noqa: B905 - the lengths are checked above (and 3.9 has no strict)
    if kwargs:
        if not cls.__record_names__.issuperset(kwargs):
            unknown = sorted(set(kwargs) - cls.__record_names__)
            raise TypeError(f"{cls.__qualname__}() got an unexpected argument {unknown[0]!r}")
        if args and not held.keys().isdisjoint(kwargs):
            raise TypeError(f"{cls.__qualname__}() got two values for {sorted(held.keys() & kwargs)[0]!r}")
        held.update(kwargs)
    if len(held) < len(names):
        defaults = cls.__record_defaults__
        for name in names:
            if name not in held:
                if name not in defaults:
                    raise TypeError(f"{cls.__qualname__}() missing the argument {name!r}")
                default = defaults[name]
                factory = default.default_factory if isinstance(default, _Field) else None  # a _Field left has one
                held[name] = default if factory is None else factory()


def _key_of(names: tuple[str, ...]) -> Callable[[dict[str, object]], tuple[object, ...]]:
    """A function giving the values of ``names`` from a ``__dict__``, as a tuple even for one field (or none)."""
    if len(names) > 1:
        return itemgetter(*names)
    if names:
        only = names[0]
        return lambda held: (held[only],)
    return lambda held: ()


def _fields_of(record: Record) -> tuple[object, ...]:
    return record.__class__.__record_key__(record.__dict__)


def replace(record: _R, **changes: Any) -> _R:
    """A copy of ``record`` with ``changes`` (field names) applied, made through its ``__init__``."""
    return type(record)(**{**_values(record), **changes})


def _values(record: Record) -> dict[str, Any]:
    """``record``'s fields by name, in order (a shallow copy)."""
    held = record.__dict__
    return {name: held[name] for name in record.__record_fields__}


def field_types(cls: type[Record]) -> dict[str, str]:
    """The fields of ``cls`` and their annotations as written (``"int | None"``), in order."""
    return dict(cls.__record_types__)


def as_dict(record: Record) -> dict[str, Any]:
    """``record``'s fields by name, records in them (in lists, tuples and dicts too) as dicts: for JSON."""
    return {name: _plain(value) for name, value in _values(record).items()}


def _plain(value: object) -> object:
    if isinstance(value, Record):
        return as_dict(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


__all__ = ["Record", "as_dict", "field", "field_types", "replace"]
