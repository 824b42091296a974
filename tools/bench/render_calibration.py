"""Tables of between-session calibrations: what one calibration measured, and the calibrations stored."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from rigaudit.tools.bench.calibration import METRICS, Calibration, Component
from rigaudit.tools.bench.compare import Settings
from rigaudit.tools.bench.like import host_text
from rigaudit.tools.bench.sessions import quantile
from rigaudit.tools.bench.stats import growth

Table = tuple[list[str], list[list[str]]]


def one_a_side(component: Component, confidence: float) -> float:
    """The half-width (relative) of a compare of one session against one, at the calibration's repeats."""
    tau2 = component.ms_between / component.n0
    return growth(quantile(0.5 + confidence / 2.0, component.df_between) * math.sqrt(2.0 * tau2))


def sessions_for(component: Component, settings: Settings, limit: int = 1000) -> int | None:
    """Sessions a side whose compare (pooled with this calibration) has an interval within ±resolution."""
    tau2 = component.ms_between / component.n0
    target = math.log1p(settings.resolution)
    for k in range(1, limit + 1):
        df = component.df_between + 2.0 * (k - 1)
        if quantile(0.5 + settings.confidence / 2.0, df) * math.sqrt(2.0 * tau2 / k) <= target:
            return k
    return None


def calibration_table(calibration: Calibration, settings: Settings) -> Table:
    confidence = f"{settings.confidence:.0%}"
    headers = [
        "concurrency",
        "sessions × repeats",
        "tok/s by session",
        "session CV",
        "repeat CV",
        "session effect p",
        f"one session a side: {confidence} CI ±",
        f"sessions a side for ±{settings.resolution:.0%}",
        "TTFT / ITL session CV",
    ]
    rows = []
    levels = sorted({c.concurrency for c in calibration.components})
    repeats = "/".join(str(n) for n in sorted(set(calibration.repeats))) or "?"
    for concurrency in levels:
        head = calibration.component(concurrency, METRICS[0])
        others = [calibration.component(concurrency, m) for m in METRICS[1:]]
        secondary = " / ".join("—" if o is None else f"{o.between_sd:.1%}" for o in others)
        if head is None:
            rows.append([str(concurrency), f"{calibration.sessions} × {repeats}", "—", "—", "—", "—", "—", "—", secondary])
            continue
        means = head.session_means
        needed = sessions_for(head, settings)
        rows.append(
            [
                str(concurrency),
                f"{calibration.sessions} × {repeats}",
                f"{min(means):,.1f}–{max(means):,.1f}" if means else "—",
                f"{head.between_sd:.1%}",
                f"{head.within_sd:.1%}",
                f"{head.squares.f_p:.3f}",
                f"{one_a_side(head, settings.confidence):.0%}",
                str(needed) if needed else "> 1000",
                secondary,
            ]
        )
    return headers, rows


def stored_table(found: Sequence[tuple[Path, Calibration | str]]) -> Table:
    headers = ["created", "host", "model", "URL", "levels", "sessions", "session CV (output tok/s)", "file"]
    rows = []
    for path, item in found:
        if isinstance(item, str):
            rows.append(["—", "—", "—", "—", "—", "—", f"unreadable: {item}", str(path)])
            continue
        cvs = ", ".join(f"c={c}: {cv:.1%}" for c, cv in sorted(item.headline_cv().items()))
        workload = item.workload
        rows.append(
            [
                item.created_at,
                host_text(item.host, item.host_id or None, item.container),
                workload.get("model", "?"),
                workload.get("URL", "?"),
                workload.get("concurrency levels", "?"),
                str(item.sessions),
                cvs,
                str(path),
            ]
        )
    return headers, rows
