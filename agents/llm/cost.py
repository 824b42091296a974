"""What the tokens cost, at the prices the user gives (``--llm-price [MODEL:]in=X,out=Y``); never a guessed price.

A price is dollars per million prompt (``in``) and completion (``out``) tokens, for one model or, with no
model named, for every model without its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rigaudit.tools.core.record import Record

PER = 1_000_000
"""Prices are per this many tokens."""
SIGNIFICANT = 4
"""Digits of a cost shown (under $1,000)."""


class Price(Record):
    model: str
    """The model it prices; empty: every model without its own price."""
    prompt: float
    """Dollars per million prompt tokens."""
    completion: float
    """Dollars per million completion tokens."""

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / PER


def price_for(prices: Sequence[Price], model: str) -> Price | None:
    """``model``'s own price, else the price for every model, else ``None`` (no cost is shown)."""
    own = [p for p in prices if p.model and p.model == model]
    every = [p for p in prices if not p.model]
    chosen = own or every
    return chosen[-1] if chosen else None


def usd(amount: float) -> str:
    """``$0.000075``, ``$0.00052``, ``$0.4``, ``$12.35``, ``$1,234.50``: four significant digits, cents from $1,000;
    never an exponent (a request of a cheap model costs a few millionths)."""
    if amount >= 1000:
        return f"${amount:,.2f}"
    if amount <= 0:
        return "$0"
    places = max(0, SIGNIFICANT - 1 - math.floor(math.log10(amount)))
    return "$" + f"{amount:.{places}f}".rstrip("0").rstrip(".")


__all__ = ["Price", "price_for", "usd"]
