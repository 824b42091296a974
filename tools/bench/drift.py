"""Drift within one session, and other reasons not to trust one result on its own.

A trend over the session's runs (warm-up, clocks ramping, thermals, another tenant arriving) is
fitted as a straight line in log(output tok/s) against each run's position in the session, every
level (or A/B arm and level) around its own mean, and reported when it is both significant and
larger than the noise floor. Also reported: repeats that disagree widely, a slow first repeat
(warm-up), and first requests that waited far longer for their first token than the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

from rigaudit.tools.bench.results import BenchResult, Run
from rigaudit.tools.bench.stats import median, relative_spread, trend
from rigaudit.tools.core.record import Record


class Drift(Record):
    label: str
    total: float
    """Relative change of output tok/s from the session's first run to its last, on the fitted line."""
    per_run: float
    p: float
    runs: int

    @property
    def text(self) -> str:
        way = "rose" if self.total > 0 else "fell"
        return (
            f"{self.label} drifted: output tok/s {way} {abs(self.total):.0%} from its first run to its last "
            f"({self.per_run:+.1%} a run over {self.runs} runs, p = {self.p:.3f}); something changed during the session "
            "(warm-up, clocks or thermals, another tenant): balanced ordering keeps it off the levels, but it widens "
            "every interval; find it before trusting small changes"
        )


def run_position(runs: Sequence[Run]) -> list[float]:
    """Each run's position in its session: ``order`` when recorded, else its place in the file."""
    return [float(r.order) if r.order is not None else float(i) for i, r in enumerate(runs)]


def session_drift(
    label: str, runs: Sequence[tuple[str, Run]], *, alpha: float = 0.05, floor: float = 0.05
) -> tuple[Drift | None, Drift | None]:
    """(the fitted trend, or None when too few runs; the same when it is worth reporting, else None).

    ``runs`` are ``(group, run)``: runs of one group (a level, an arm at a level) share a mean.
    """
    positions = run_position([run for _, run in runs])
    fitted = trend([(group, x, run.output_tokens_per_s) for (group, run), x in zip(runs, positions, strict=True)])
    if fitted is None:
        return None, None
    drift = Drift(label, fitted.total, fitted.per_step, fitted.p, len(runs))
    return drift, drift if fitted.p < alpha and abs(fitted.total) >= floor else None


def by_level(result: BenchResult) -> dict[int, list[Run]]:
    levels: dict[int, list[Run]] = {}
    for run in result.runs:
        levels.setdefault(run.concurrency, []).append(run)
    return levels


def stability_warnings(result: BenchResult, label: str, *, unstable_spread: float = 0.10, warmup_drop: float = 0.15) -> list[str]:
    """Warnings about one result on its own: repeats that disagree, a slow first repeat or first requests."""
    warnings: list[str] = []
    for concurrency, runs in sorted(by_level(result).items()):
        timed = sorted(runs, key=lambda r: (r.order if r.order is not None else r.repeat, r.repeat))
        rates = [r.output_tokens_per_s for r in timed]
        spread = relative_spread(rates)
        if spread is not None and spread > unstable_spread:
            warnings.append(
                f"{label} unstable at concurrency {concurrency}: output tok/s ranged {min(rates):.1f}–{max(rates):.1f} "
                f"over {len(rates)} repeats (spread {spread:.0%}, above {unstable_spread:.0%}); a change smaller than "
                "that spread is noise: find the cause (warm-up, other load, clocks) before trusting a comparison"
            )
        rest = median(rates[1:]) if len(rates) >= 2 else None
        if rest and rates[0] < (1.0 - warmup_drop) * rest:
            warnings.append(
                f"{label}: the first repeat at concurrency {concurrency} ran {1 - rates[0] / rest:.0%} slower than the "
                f"others ({rates[0]:.1f} vs {rest:.1f} tok/s): the server was warming up; use --warmup"
            )
    if result.runs:
        first = min(result.runs, key=lambda r: r.order if r.order is not None else 0)
        ttfts = [s.ttft_ms for s in first.samples if s.ok and s.ttft_ms is not None]
        head = max(1, min(first.concurrency, len(ttfts) // 4))
        early, later = median(ttfts[:head]), median(ttfts[head:])
        if len(ttfts) - head >= 3 and early is not None and later and early > 2.0 * later:
            warnings.append(
                f"{label}: the first {head} request(s) waited {early:.0f} ms for their first token against {later:.0f} ms "
                f"for the rest of the level (concurrency {first.concurrency}): warm-up (CUDA graphs, caches, JIT); "
                f"use --warmup {max(head, 2)}"
            )
    return warnings
