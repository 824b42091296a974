"""``--llm-model [AREA=]NAME``: the default model and a model per area (or the ``chat`` coordinator);
``--llm-price [MODEL:]in=X,out=Y``: what their tokens cost. Both repeatable."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rigaudit.agents.llm.cost import Price
from rigaudit.agents.registry import area_names, resolve_areas
from rigaudit.tools.core.errors import UsageError

CHAT = "chat"
"""The chat coordinator's agent name: ``--llm-model chat=NAME`` gives the chat its own model."""


def area_models(values: Sequence[str], what: str = "--llm-model") -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """The default model (``None``: not given) and ``(area, model)`` pairs, later ones winning; ``what`` names
    where they were given in an error (the flag, or the config file's ``models``)."""
    default: str | None = None
    chosen: dict[str, str] = {}
    unknown: list[str] = []
    for value in values:
        area, sep, name = value.partition("=")
        area, name = area.strip(), name.strip()
        if not sep:
            if not area:
                raise UsageError(f"{what} names no model")
            default = area
            continue
        if not area:
            raise UsageError(f"{what} {value} names no area (AREA=NAME)")
        if not name:
            raise UsageError(f"{what} {value} names no model (AREA=NAME)")
        if area == CHAT:
            chosen[CHAT] = name
            continue
        areas, _, missing = resolve_areas(area)
        unknown += missing
        chosen.update(dict.fromkeys(areas, name))
    if unknown:
        raise UsageError(f"{what}: unknown area(s) {', '.join(unknown)}; choose from {', '.join(area_names())}, {CHAT}")
    return default, tuple(sorted(chosen.items()))


def model_settings(model: str | None, values: Sequence[str]) -> dict[str, object]:
    """The settings ``--model`` and ``--llm-model`` give: ``model`` (when named) and ``area_models``."""
    default, per_area = area_models(values)
    settings: dict[str, object] = {"area_models": per_area}
    if default is not None:
        if model not in (None, default):
            raise UsageError(f"--model {model} and --llm-model {default} name two default models: give one")
        settings["model"] = default
    return settings


def parse_price(text: str, what: str = "--llm-price") -> Price:
    """``in=X,out=Y`` or ``MODEL:in=X,out=Y`` (a model name may hold ``:``); one line otherwise."""
    bad = UsageError(
        f"{what} {text!r}: expected in=X,out=Y (dollars per million prompt and completion tokens), "
        "or MODEL:in=X,out=Y for one model"
    )
    model, _, terms = text.rpartition(":")
    values: dict[str, float] = {}
    for term in terms.split(","):
        key, sep, number = term.partition("=")
        if not sep or key.strip() not in ("in", "out") or key.strip() in values:
            raise bad
        try:
            value = float(number)
        except ValueError:
            raise bad from None
        if not math.isfinite(value) or value < 0:
            raise bad
        values[key.strip()] = value
    if set(values) != {"in", "out"} or (text.count(":") and not model.strip()):
        raise bad
    return Price(model.strip(), values["in"], values["out"])


def prices(values: Sequence[str], what: str = "--llm-price") -> tuple[Price, ...]:
    """The prices ``--llm-price`` gives, in order (a later one for the same model wins)."""
    return tuple(parse_price(value, what) for value in values)


__all__ = ["CHAT", "area_models", "model_settings", "parse_price", "prices"]
