"""The interleaved A/B result, ``rigaudit.ab/1``, and what each fix bought.

``bench ab`` measures the baseline (arm A: none of the steps) and each arm with steps applied, in
cycles: every cycle visits every arm once, in the order of a row of a Williams Latin square (for
two arms: A B, B A, A B, ...), and each visit runs every level once. Cycle ``c`` of an arm is its
run with ``repeat == c``, so arm X's run at cycle ``c`` is paired with the baseline's: both ran
minutes apart, and a drift over the session hits both alike. Each arm is judged against the
baseline with a paired t interval on the log ratios of its cycles, all arms, levels and metrics in
one Holm family (see :mod:`rigaudit.tools.bench.compare`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.bench.compare import (
    Contrast,
    LevelComparison,
    MetricChange,
    Settings,
    level_tests,
    method,
    metric_changes,
)
from rigaudit.tools.bench.drift import Drift, by_level, session_drift, stability_warnings
from rigaudit.tools.bench.power import detectable, headline_share
from rigaudit.tools.bench.results import BenchResult, Run
from rigaudit.tools.bench.stats import growth, stdev
from rigaudit.tools.core.record import Record, as_dict, field

AB_SCHEMA = "rigaudit.ab/1"
AB_COMPARE_SCHEMA = "rigaudit.ab-compare/1"
BASELINE = "baseline"
ALL_STEPS = "all steps"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True, allow_inf_nan=False)


class ArmResult(_Model):
    name: str
    steps: list[str] = Field(default_factory=list)
    """The plan steps applied during this arm's visits (none for the baseline)."""
    command: str | None = None
    """The command that started the server as this arm (arms that restart it), else None."""
    result: BenchResult


class Visit(_Model):
    cycle: int
    arm: str
    started_s: float
    """Seconds after the first timed run of the session."""
    switched: bool
    """The host's state was changed (rolled back and/or applied, or the server restarted) just before this visit."""
    ready_s: float | None = None
    """Arms that restart: seconds from the command's start until the server streamed its first token."""


class AbResult(_Model):
    schema_: str = Field(default=AB_SCHEMA, alias="schema")
    host: str
    source: str
    plan_hash: str
    steps: list[str]
    journal: str
    cycles: int
    complete: bool
    """Every planned visit ran (False after a failed switch or an interrupt: what ran is kept)."""
    error: str | None = None
    arms: list[ArmResult]
    visits: list[Visit] = Field(default_factory=list)
    baseline: str = BASELINE
    """The arm every other is judged against (arms that restart: the first ``--arm``)."""
    restarts: bool = False
    """The arms are commands that restart the server before every visit (each visit a new server session)."""
    restored: str | None = None
    """Arms that restart: the arm the server was left as at the end (None: not restored, see ``error``)."""

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)


class ArmComparison(Record):
    arm: str
    steps: list[str]
    levels: list[LevelComparison]

    def regressions(self) -> list[LevelComparison]:
        return [level for level in self.levels if level.verdict == "regressed"]


class AbComparison(Record):
    arms: list[ArmComparison]
    warnings: list[str] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)
    bought: list[str] = field(default_factory=list)
    """One line per fix: what it bought at each level, with its interval."""
    method: str = ""
    confidence: float = 0.95
    noise_floor: float = 0.05
    resolution: float = 0.10
    schema: str = AB_COMPARE_SCHEMA

    def to_dict(self) -> dict[str, object]:
        return as_dict(self)

    def regressions(self) -> list[str]:
        return [f"{arm.arm} at concurrency {level.concurrency}" for arm in self.arms for level in arm.regressions()]


def _paired_runs(base: Sequence[Run], new: Sequence[Run]) -> tuple[list[Run], list[Run]]:
    """The runs of the cycles both arms completed, in cycle order (a cut-short session pairs what it has)."""
    by_cycle_base = {r.repeat: r for r in base}
    by_cycle_new = {r.repeat: r for r in new}
    cycles = sorted(set(by_cycle_base) & set(by_cycle_new))
    return [by_cycle_base[c] for c in cycles], [by_cycle_new[c] for c in cycles]


def _bought(arm: ArmComparison) -> str:
    parts = []
    for level in arm.levels:
        head = level.headline
        if head.change is None:
            parts.append(f"c={level.concurrency}: not measured")
            continue
        ci = f" [{head.ci_low:+.1%}, {head.ci_high:+.1%}]" if head.ci_low is not None and head.ci_high is not None else ""
        parts.append(f"c={level.concurrency}: {head.change:+.1%}{ci} {head.label}")
    return f"{arm.arm} bought in output tok/s: " + "; ".join(parts)


def _interaction(arms: Sequence[ArmComparison]) -> list[str]:
    """With every step alone and all together: does the whole equal the sum of its parts?"""
    together = next((a for a in arms if a.arm == ALL_STEPS), None)
    alone = [a for a in arms if a.arm != ALL_STEPS]
    if together is None or len(alone) < 2:
        return []
    lines = []
    for level in together.levels:
        parts = [next((lv.headline for lv in a.levels if lv.concurrency == level.concurrency), None) for a in alone]
        changes = [p.change for p in parts if p is not None and p.change is not None]
        if len(changes) != len(alone) or level.headline.change is None:
            continue
        expected = growth(math.fsum(math.log1p(c) for c in changes))
        lines.append(
            f"concurrency {level.concurrency}: all steps together {level.headline.change:+.1%}, the steps alone "
            f"compound to {expected:+.1%} (a large gap means the steps interact)"
        )
    return lines


def resolution_lines(ab: AbResult, settings: Settings) -> list[str]:
    """What these cycles could detect, from the spread of the log ratios they observed (output tok/s, 80% power)."""
    arms = {a.name: a for a in ab.arms}
    base = arms.get(ab.baseline)
    if base is None:
        return []
    others = [a for a in ab.arms if a.name != ab.baseline]
    levels = by_level(base.result)
    share = headline_share(settings.alpha, len(levels), len(others))
    lines = []
    for arm in others:
        parts = []
        for concurrency, runs in sorted(by_level(arm.result).items()):
            b, n = _paired_runs(levels.get(concurrency, []), runs)
            logs = [
                math.log(y.output_tokens_per_s / x.output_tokens_per_s)
                for x, y in zip(b, n, strict=True)
                if x.output_tokens_per_s > 0 and y.output_tokens_per_s > 0
            ]
            sd = stdev(logs)
            found = detectable(sd, len(logs), alpha=share, paired=True) if sd is not None else None
            if found is not None:
                parts.append(f"about {found:.0%} at c={concurrency}")
        if parts:
            lines.append(
                f"{arm.name}: at {ab.cycles} cycles the observed spread resolves changes of "
                + ", ".join(parts)
                + " (found 80% of the time)"
            )
    return lines


def analyze(ab: AbResult, settings: Settings | None = None) -> AbComparison:
    """Every arm against the baseline, paired by cycle, in one Holm family."""
    settings = settings or Settings()
    arms = {a.name: a for a in ab.arms}
    base = arms.get(ab.baseline)
    if base is None:
        return AbComparison([], ["no baseline runs: nothing to compare"], method=method(settings, paired_design=True))
    base_levels = by_level(base.result)
    plan: list[tuple[ArmResult, list[tuple[int, int, list[Contrast]]]]] = []
    for arm in ab.arms:
        if arm.name == ab.baseline:
            continue
        levels = []
        for concurrency, runs in sorted(by_level(arm.result).items()):
            b, n = _paired_runs(base_levels.get(concurrency, []), runs)
            levels.append((concurrency, len(b), level_tests(b, n, is_paired=True)))
        plan.append((arm, levels))
    verdicts = iter(metric_changes([t for _, levels in plan for _, _, tests in levels for t in tests], settings))
    compared: list[ArmComparison] = []
    for arm, levels in plan:
        done = []
        for concurrency, pairs, tests in levels:
            metrics: list[MetricChange] = [next(verdicts) for _ in tests]
            done.append(LevelComparison(concurrency, pairs, pairs, metrics, metrics[0].verdict))
        compared.append(ArmComparison(arm.name, list(arm.steps), done))
    warnings = [w for a in ab.arms for w in stability_warnings(a.result, a.name)]
    if not ab.complete:
        warnings.insert(0, f"the session stopped early ({ab.error or 'interrupted'}): the cycles that completed are compared")
    timed = [(f"{a.name} c={r.concurrency}", r) for a in ab.arms for r in a.result.runs]
    fitted, shown = session_drift("the session", timed, alpha=settings.alpha, floor=settings.noise_floor)
    if shown is not None:
        warnings.append(shown.text.replace("balanced ordering keeps it off the levels", "interleaving keeps it off the arms"))
    bought = [_bought(a) for a in compared] + _interaction(compared) + resolution_lines(ab, settings)
    return AbComparison(
        compared,
        warnings,
        [fitted] if fitted is not None else [],
        bought,
        method(settings, paired_design=True),
        settings.confidence,
        settings.noise_floor,
        settings.resolution,
    )
