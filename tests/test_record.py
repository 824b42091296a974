"""``rigaudit.tools.core.record.Record``: what a frozen dataclass gives, made without compiling code."""

from __future__ import annotations

import builtins
import copy
import dataclasses
import pickle
import types
from typing import ClassVar

import pytest

from rigaudit.tools.core.record import Record, as_dict, field, field_types, replace


class Point(Record):
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()
    SCALE: ClassVar[int] = 10


class Labelled(Point):
    label: str = ""


class Row(Record):
    a: int
    b: str = ""


class Box(Record, frozen=False):
    items: list[int] = field(default_factory=list)
    name: str = "box"


class Checked(Record):
    low: int
    high: int

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError("low above high")


class Nest(Record):
    point: Point
    points: tuple[Point, ...] = ()
    by_name: dict[str, Point] = field(default_factory=dict)


def test_fields_come_positional_or_by_name_with_the_body_s_defaults() -> None:
    assert Point(1) == Point(x=1, y=0, tags=())
    p = Point(1, 2, tags=("a",))
    assert (p.x, p.y, p.tags) == (1, 2, ("a",))
    assert Point.__record_fields__ == ("x", "y", "tags")  # the ClassVar is not a field
    assert Point.SCALE == 10
    assert Point.y == 0 and "items" not in Box.__dict__  # a default is a class attribute, a factory is not


@pytest.mark.parametrize(
    ("args", "kwargs", "says"),
    [
        ((), {}, "missing the argument 'x'"),
        ((1, 2, (), 4), {}, "takes 3 arguments, 4 given"),
        ((1,), {"x": 2}, "two values for 'x'"),
        ((1,), {"z": 2}, "unexpected argument 'z'"),
    ],
)
def test_wrong_arguments_are_refused_as_a_call_would_be(args: tuple[object, ...], kwargs: dict[str, object], says: str) -> None:
    with pytest.raises(TypeError, match=says):
        Point(*args, **kwargs)  # type: ignore[arg-type,call-arg,misc]


def test_a_record_is_immutable_as_a_frozen_dataclass_is() -> None:
    p = Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError):  # what callers of a frozen dataclass catch
        p.x = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.y
    assert p.x == 1


def test_equal_fields_of_one_class_are_equal_and_hash_alike() -> None:
    assert Point(1, 2) == Point(1, 2)
    assert Point(1, 2) != Point(2, 1)
    assert Point(1) != Labelled(1)  # another class, the same fields' values
    assert Point(1) != (1, 0, ())
    assert len({Point(1, 2), Point(1, 2), Point(3)}) == 2
    assert hash(Point(1, 2)) == hash(Point(1, 2))


def test_subclasses_add_fields_after_their_bases() -> None:
    record = Labelled(1, 2, ("t",), "L")
    assert Labelled.__record_fields__ == ("x", "y", "tags", "label")
    assert record.label == "L" and Labelled(5).y == 0


def test_repr_names_the_class_and_every_field() -> None:
    assert repr(Labelled(1, label="a")) == "Labelled(x=1, y=0, tags=(), label='a')"


def test_a_record_does_not_order() -> None:
    """A NamedTuple ordered as a tuple; nothing sorts records, and a sort that tried would be a mistake."""
    with pytest.raises(TypeError):
        _ = Point(1) < Point(2)  # type: ignore[operator]
    with pytest.raises(TypeError):
        sorted([Row(2), Row(1)])  # type: ignore[type-var]


def test_a_mutable_record_takes_assignment_has_no_hash_and_its_own_defaults() -> None:
    a, b = Box(), Box()
    a.items.append(1)
    a.name = "a"
    assert b.items == [] and a.items == [1] and a.name == "a"
    with pytest.raises(TypeError):
        hash(a)


def test_defaults_that_one_record_could_change_for_all_are_refused() -> None:
    with pytest.raises(TypeError, match="mutable default"):
        types.new_class("Bad", (Record,), exec_body=lambda ns: ns.update(__annotations__={"x": "list[int]"}, x=[]))
    with pytest.raises(TypeError, match=r"dataclasses\.field"):
        types.new_class(
            "Bad", (Record,), exec_body=lambda ns: ns.update(__annotations__={"x": "int"}, x=dataclasses.field(default=1))
        )
    with pytest.raises(TypeError, match="without a default follows"):
        types.new_class("Bad", (Record,), exec_body=lambda ns: ns.update(__annotations__={"x": "int", "y": "int"}, x=1))
    with pytest.raises(TypeError):
        field()  # type: ignore[call-overload]


def test_post_init_runs_after_the_fields_are_set() -> None:
    assert Checked(1, 2).high == 2
    with pytest.raises(ValueError, match="low above high"):
        Checked(3, 2)


def test_replace_and_as_dict() -> None:
    p = Point(1, 2, ("a",))
    moved = replace(p, y=5)
    assert moved == Point(1, 5, ("a",)) and p.y == 2
    with pytest.raises(TypeError):
        replace(p, z=1)
    assert as_dict(p) == {"x": 1, "y": 2, "tags": ("a",)}
    nest = Nest(p, (Point(3),), {"k": Point(4)})
    assert as_dict(nest) == {
        "point": {"x": 1, "y": 2, "tags": ("a",)},
        "points": ({"x": 3, "y": 0, "tags": ()},),
        "by_name": {"k": {"x": 4, "y": 0, "tags": ()}},
    }
    assert field_types(Labelled) == {"x": "int", "y": "int", "tags": "tuple[str, ...]", "label": "str"}


def test_match_copy_and_pickle_keep_a_record_whole() -> None:
    match Point(1, 2):
        case Point(x, y):
            assert (x, y) == (1, 2)
        case _:  # pragma: no cover
            pytest.fail("no match")
    p = Labelled(1, label="a")
    assert copy.copy(p) == p and copy.deepcopy(p) == p
    assert pickle.loads(pickle.dumps(p)) == p


def test_a_record_class_is_made_without_compiling_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """What makes a dataclass or a NamedTuple cost 1-4 M instructions at import is compiling their methods."""

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("code compiled while a class was made")

    for name in ("exec", "eval", "compile"):
        monkeypatch.setattr(builtins, name, refused)
    made = types.new_class(
        "Made", (Record,), {"frozen": False}, lambda ns: ns.update(__annotations__={"a": "int", "b": "str"}, b="")
    )
    assert made(1) == made(1, "") and made(1) != made(2)
    plain = types.new_class("Data", (), exec_body=lambda ns: ns.update(__annotations__={"a": "int"}))
    with pytest.raises(AssertionError, match="compiled"):  # the guard would catch a dataclass
        dataclasses.dataclass(frozen=True)(plain)


class Guarded(Record, frozen=False):
    name: str
    secret: str | None = field(default=None, repr=False)
    cache: dict[str, int] = field(default_factory=dict, repr=False)


class Single(Record):
    value: float


class Empty(Record):
    pass


def test_a_field_declared_without_repr_stays_out_of_it_and_keeps_its_default() -> None:
    """``field(repr=False)`` as a dataclass's: a lock, a cache or a key never shows where a record is printed."""
    g = Guarded("a", secret="sk-123")
    assert repr(g) == "Guarded(name='a')" and "sk-123" not in repr(g)
    assert Guarded("a").secret is None and Guarded.secret is None and Guarded("a").cache == {}
    assert g == Guarded("a", "sk-123") and g != Guarded("a")  # still a field: compared, copied, replaced
    assert replace(g, name="b").secret == "sk-123" and as_dict(g)["secret"] == "sk-123"

    class More(Guarded, frozen=False):
        extra: int = 0

    assert repr(More("a", "sk-123", extra=1)).endswith(".More(name='a', extra=1)")  # a subclass keeps it out too


def test_a_mutable_record_is_refused_as_a_default() -> None:
    """A dataclass refuses one (it has no hash); shared by every record, one change would show in all."""
    with pytest.raises(TypeError, match="mutable default"):
        types.new_class("Bad", (Record,), exec_body=lambda ns: ns.update(__annotations__={"box": "Box"}, box=Box()))
    kept = types.new_class("Good", (Record,), exec_body=lambda ns: ns.update(__annotations__={"p": "Point"}, p=Point(1)))
    assert kept().p == Point(1)  # a frozen one is a value


def test_one_field_and_no_field_compare_and_hash_as_their_tuples() -> None:
    nan = float("nan")
    one = Single(nan)
    assert one == one and Single(1.0) == Single(1.0) and Single(1.0) != Single(2.0)  # identity first, as a tuple's
    assert hash(Single(2.0)) == hash(Single(2.0)) and len({Single(1.0), Single(1.0), Single(3.0)}) == 2
    assert Empty() == Empty() and hash(Empty()) == hash(Empty()) and repr(Empty()) == "Empty()"


def test_the_records_holding_a_key_a_lock_or_a_cache_keep_them_out_of_repr() -> None:
    """What their dataclasses left out of ``repr`` (and the two API keys, which no ``repr`` should show)."""
    from rigaudit.agents.llm.config import LlmConfig
    from rigaudit.agents.llm.problems import Problems
    from rigaudit.agents.llm.usage import UsageBook
    from rigaudit.tools.bench.loadgen import LoadSpec
    from rigaudit.tools.policy import LEXICAL
    from rigaudit.tools.policy.checks import Subject

    assert "sk-secret" not in repr(LlmConfig(api_key="sk-secret")) and LlmConfig(api_key="k").api_key == "k"
    assert "sk-secret" not in repr(LoadSpec("http://127.0.0.1:1/v1", "m", api_key="sk-secret"))
    assert "lock" not in repr(Problems()) and "lock" not in repr(UsageBook())
    subject = Subject(("cat", "/etc/hostname"), LEXICAL)
    subject.path_problems()
    assert repr(subject) == f"Subject(argv=('cat', '/etc/hostname'), fs={LEXICAL!r})"


class _Scaled(Record):
    """A record of every kind of annotation postponed annotations leave as text."""

    value: int
    label: str = "x"
    limit: ClassVar[int] = 3
    quoted: "ClassVar[int]" = 5  # noqa: UP037 - the text 'ClassVar[int]', quoted again under postponed annotations
    bare: ClassVar = 6
    scale: dataclasses.InitVar[int] = 1

    def __post_init__(self, scale: int) -> None:
        object.__setattr__(self, "value", self.value * scale)


def test_class_vars_are_no_fields_and_an_init_var_goes_to_post_init_only() -> None:
    assert _Scaled.__record_fields__ == ("value", "label")
    scaled = _Scaled(2, scale=3)
    assert scaled.value == 6
    assert "scale" not in vars(scaled)
    assert as_dict(scaled) == {"value": 6, "label": "x"}
    assert scaled == _Scaled(6) and repr(scaled) == "_Scaled(value=6, label='x')"
    assert (_Scaled.limit, _Scaled.quoted, _Scaled.bare) == (3, 5, 6)


def test_an_init_var_needs_a_post_init_to_take_it() -> None:
    with pytest.raises(TypeError, match="InitVar without a __post_init__"):

        class _Lost(Record):
            scale: dataclasses.InitVar[int] = 1


def test_help_ides_and_hypothesis_see_a_record_s_fields() -> None:
    import inspect
    import pydoc

    from hypothesis import given
    from hypothesis import strategies as st

    signature = inspect.signature(_Scaled)
    assert list(signature.parameters) == ["value", "label", "scale"]
    assert signature.parameters["value"].annotation is int
    assert signature.parameters["label"].default == "x"
    assert signature.parameters["scale"].annotation is int
    assert "_Scaled(value: int, label: str = 'x', scale: int = 1)" in pydoc.render_doc(_Scaled, renderer=pydoc.plaintext)

    @given(st.builds(_Scaled))
    def made_by_hypothesis(made: _Scaled) -> None:
        assert isinstance(made, _Scaled) and isinstance(made.value, int)

    made_by_hypothesis()
