"""``rigaudit.tools.record.Record``: what a frozen dataclass gives, made without compiling code."""

from __future__ import annotations

import builtins
import copy
import dataclasses
import pickle
import types
from typing import ClassVar

import pytest

from rigaudit.tools.record import Record, as_dict, field, field_types, replace, values


class Point(Record):
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()
    SCALE: ClassVar[int] = 10


class Labelled(Point):
    label: str = ""


class Row(Record, order=True):
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


def test_order_is_a_tuple_s_when_asked_and_refused_otherwise() -> None:
    assert sorted([Row(2), Row(1, "b"), Row(1, "a")]) == [Row(1, "a"), Row(1, "b"), Row(2)]
    assert Row(1) <= Row(1) and Row(2) > Row(1) and Row(2) >= Row(2)
    with pytest.raises(TypeError):
        _ = Point(1) < Point(2)  # type: ignore[operator]


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


def test_replace_values_and_as_dict() -> None:
    p = Point(1, 2, ("a",))
    moved = replace(p, y=5)
    assert moved == Point(1, 5, ("a",)) and p.y == 2
    with pytest.raises(TypeError):
        replace(p, z=1)
    assert values(p) == {"x": 1, "y": 2, "tags": ("a",)}
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
        "Made", (Record,), {"order": True}, lambda ns: ns.update(__annotations__={"a": "int", "b": "str"}, b="")
    )
    assert made(1) == made(1, "") and made(1) < made(2)
    plain = types.new_class("Data", (), exec_body=lambda ns: ns.update(__annotations__={"a": "int"}))
    with pytest.raises(AssertionError, match="compiled"):  # the guard would catch a dataclass
        dataclasses.dataclass(frozen=True)(plain)
