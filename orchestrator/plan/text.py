"""What a whole plan can buy, in one paragraph: the report's opening, the terminal's, the roofline's note."""

from __future__ import annotations

from rigaudit.tools.core.record import Record
from rigaudit.tools.schema.plan import Plan, PlanStep


class PlanGain(Record):
    low: float
    high: float
    """Percent of throughput, the steps' ranges compounded."""
    counted: tuple[str, ...]
    """The steps counted: rule steps that may run, not the loser of a conflict, not a measurement."""
    stability: tuple[str, ...]
    """Steps that fix failures or wrong results: no percentage holds for them."""
    waiting: tuple[str, ...]
    """Steps whose gain a measurement decides."""


def _counts(step: PlanStep) -> bool:
    return (
        step.kind != "measure"
        and step.source == "rules"
        and not step.blocked
        and step.gain is not None
        and not any(e.kind == "conflicts" for e in step.edges)
    )


def plan_gain(plan: Plan) -> PlanGain:
    """The plan's steps' gains compounded (each multiplies what the others leave)."""
    low = high = 1.0
    counted, stability = [], []
    for step in plan.steps:
        if not _counts(step) or step.gain is None:
            continue
        if step.gain.of == "stability":
            stability.append(step.id)
            continue
        counted.append(step.id)
        low *= 1 + step.gain.low / 100
        high *= 1 + step.gain.high / 100
    waiting = tuple(s.id for s in plan.steps if s.kind != "measure" and any(e.kind == "measured_by" for e in s.edges))
    return PlanGain(round((low - 1) * 100, 1), round((high - 1) * 100, 1), tuple(counted), tuple(stability), waiting)


def plan_opening(plan: Plan, *, markdown: bool = True, measured_gap: str = "") -> str:
    """What the plan can buy against the measured gap (``measured_gap``: one phrase, "" when none was measured)."""
    code = (lambda t: f"`{t}`") if markdown else (lambda t: t)
    gain = plan_gain(plan)
    parts: list[str] = []
    if gain.stability:
        parts.append(
            f"{', '.join(code(s) for s in gain.stability)} fix failures, hangs or wrong results: no throughput figure "
            "holds until they are done, so they come first"
        )
    if gain.counted:
        parts.append(
            f"{len(gain.counted)} step(s) together {gain.low:g}-{gain.high:g}% of throughput (each step's estimate and its "
            "reasoning below)"
        )
    elif not gain.stability:
        parts.append("nothing on this host's side that buys throughput")
    text = "the plan can buy: " + "; ".join(parts) + "."
    measurements = [s.id for s in plan.measurements]
    if measurements:
        text += (
            f" Measure first ({', '.join(code(m) for m in measurements)}): they decide checks the audit could not see"
            + (f", and what {len(gain.waiting)} step(s) buy" if gain.waiting else "")
            + "."
        )
    if measured_gap:
        text += f" Against the measured gap: {measured_gap}."
    else:
        text += (
            f" The gap itself was not measured here: {code('rigaudit bench inference')} gives the throughput and "
            f"{code('rigaudit roofline')} the bound; a gap far above this range lies in the serving software."
        )
    return text
