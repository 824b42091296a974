"""The order in which a benchmark visits its conditions, so that time is not confounded with level or arm.

A session drifts (warm-up, clocks, thermals, another tenant): if every repeat ran the levels in the
same order, or the arms of an A/B ran A first and B second, a trend would look like an effect.
Each repeat (or A/B cycle) follows one row of a Williams Latin square instead: every condition
appears in every position equally often over a full square, and (for an even number of conditions)
every condition follows every other one exactly once, which also balances first-order carry-over.
With two conditions the rows are ``A B`` and ``B A``: A B B A A B B A ..., which cancels a linear drift.
"""

from __future__ import annotations

from typing import Literal, TypeVar

T = TypeVar("T")
Order = Literal["balanced", "sequential"]
ORDERS: tuple[Order, ...] = ("balanced", "sequential")


def williams_rows(count: int) -> list[list[int]]:
    """The rows of a Williams design for ``count`` conditions: ``count`` rows when even, ``2 * count`` when odd."""
    if count <= 0:
        return []
    first: list[int] = []
    low, high = 0, count - 1
    for position in range(count):
        if position % 2 == 0:
            first.append(low)
            low += 1
        else:
            first.append(high)
            high -= 1
    # the zig-zag 0, n-1, 1, n-2, ...: its successive differences are all distinct, so the shifted rows balance
    rows = [[(value + shift) % count for value in first] for shift in range(count)]
    if count % 2 == 1 and count > 1:
        rows += [list(reversed(row)) for row in rows]
    return rows


def visit_order(conditions: list[T], rounds: int, order: Order = "balanced") -> list[tuple[int, T]]:
    """``(round, condition)`` in the order they run: ``rounds`` rounds, each condition once per round."""
    rows = williams_rows(len(conditions)) if order == "balanced" else [list(range(len(conditions)))]
    visits: list[tuple[int, T]] = []
    for round_ in range(rounds):
        visits += [(round_, conditions[index]) for index in rows[round_ % len(rows)]] if rows else []
    return visits
