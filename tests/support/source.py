"""Reading the product's source for the tests that hold its shape (layers, imports, function lengths)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator


def _never(_node: ast.stmt) -> bool:
    return False


def statements(
    body: list[ast.stmt], marked: bool = False, *, marks: Callable[[ast.stmt], bool] = _never
) -> Iterator[tuple[ast.stmt, bool]]:
    """Every statement in ``body`` and in each block below it (bodies, ``else``, ``finally``, handlers, match cases),
    with whether it sits in the body of a statement ``marks`` picks. Imports and function definitions are
    statements, so this finds them all without visiting the expressions, most of a tree's nodes."""
    for node in body:
        yield node, marked
        yield from statements(getattr(node, "body", []), marked or marks(node), marks=marks)
        for field in ("orelse", "finalbody"):
            yield from statements(getattr(node, field, []), marked, marks=marks)
        for block in (*getattr(node, "handlers", []), *getattr(node, "cases", [])):
            yield from statements(block.body, marked, marks=marks)
