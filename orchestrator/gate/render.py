"""What ``rigaudit check`` prints: the reason line first, then the checks that matter, then a summary."""

from __future__ import annotations

from collections.abc import Sequence

from rigaudit.tools.schema.check import CheckResult, GateCheck
from rigaudit.tools.schema.events.gate import GateReported

_LABEL = {"problem": "problem", "unknown": "unknown", "not_checked": "not checked", "ok": "ok", "not_applicable": "n/a"}
_ORDER = {"problem": 0, "not_checked": 1, "unknown": 2, "ok": 3, "not_applicable": 4}


def _line(name: str, label: str, text: str) -> str:
    return f"  {name:<28} {label:<18} {text}"


def _check_line(check: GateCheck, fail_on: str) -> str:
    label = _LABEL[check.status]
    if check.status == "problem":
        label = f"{check.severity}" + ("" if check.counts else " (workload's)" if check.workload else f" (below {fail_on})")
    return _line(check.check, label, check.title + (f": {check.observed}" if check.observed else ""))


def _not_checked(checks: Sequence[GateCheck]) -> list[str]:
    """One line per area whose checks all went unchecked for one reason; else one per check."""
    by_area: dict[str, list[GateCheck]] = {}
    for check in checks:
        by_area.setdefault(check.area, []).append(check)
    out: list[str] = []
    for area, group in by_area.items():
        if len(group) > 1 and len({c.observed for c in group}) == 1:
            out.append(_line(f"{area} ({len(group)} checks)", "not checked", group[0].observed))
        else:
            out.extend(_line(c.check, "not checked", c.observed) for c in group)
    return out


def _shown(check: GateCheck, verbose: bool) -> bool:
    return verbose or check.counts or check.status == "problem"


def lines(result: CheckResult, *, verbose: bool = False) -> list[str]:
    """The reason, the checks that decided or are problems (every check with ``verbose``), the summary."""
    shown = sorted((c for c in result.checks if _shown(c, verbose)), key=lambda c: (not c.counts, _ORDER[c.status]))
    first = [_check_line(c, result.fail_on) for c in shown if c.counts and c.status == "problem"]
    rest = [
        _check_line(c, result.fail_on) for c in shown if c.status != "not_checked" and not (c.counts and c.status == "problem")
    ]
    body = [*first, *_not_checked([c for c in shown if c.status == "not_checked"]), *rest]
    counts = ", ".join(
        f"{n} {_LABEL[s]}" for s in ("ok", "problem", "unknown", "not_applicable", "not_checked") if (n := result.counted(s))
    )
    summary = (
        f"rigaudit check: {len(result.checks)} checks on {result.host} in {result.duration_s:.2f} s ({counts}); "
        f"fail on {result.fail_on} and above; exit {result.exit_code}"
    )
    return [result.reason, *body, summary]


def report_lines(report: GateReported) -> list[str]:
    """What a run showed: the reason alone when quiet, else :func:`lines` (live and in a replay)."""
    return [report.result.reason] if report.quiet else lines(report.result, verbose=report.verbose)


__all__ = ["lines", "report_lines"]
