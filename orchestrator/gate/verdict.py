"""The gate's judgement: each selected check's status, the verdict, the exit status and the reason line.

- a problem at or above ``fail_on`` makes the verdict ``problem`` (exit 1), whatever else happened:
  a node with a known fault is drained even when another check could not run;
- otherwise a selected check that was not made (its investigator failed, or the deadline stopped it),
  an ``unknown`` expectation (it was asked for) or promised GPU count (it hides the GPUs), or with
  ``strict`` any ``unknown``, makes it ``could_not_check`` (exit 3): a scheduler must never drain on that;
- otherwise ``healthy`` (exit 0). Problems below ``fail_on`` and the rules' ``unknown`` verdicts are
  reported, and counted in the metrics, but do not decide.

A workload's problem never decides, at any severity: it is the workload's fault, not the node's, and draining the
node fixes nothing (every node on that driver would be drained by the same image). It is listed, and a healthy
reason line names it as the workload's. Whose fault it is, the finding says where its rule knows from where the cause
lives (``Finding.layer``: a node file such as ``/etc/nccl.conf``, the device plugin's MPS daemon, GPU memory no job
owns are the node's); else its check's layer (:data:`~rigaudit.agents.check.CheckLayer`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from rigaudit.orchestrator.gate import HEALTHY, NOT_CHECKED, PROBLEM
from rigaudit.orchestrator.gate.selection import Selection
from rigaudit.tools.schema.audit import InvestigatorRun
from rigaudit.tools.schema.check import GateCheck, Verdict
from rigaudit.tools.schema.finding import SEVERITY_ORDER, Finding, Severity

MAX_REASON = 160
"""Characters of the reason line (``sinfo -R`` shows its first 20, ``scontrol show node`` all)."""
SHOWN_IDS = 4
ASKED = ("expect", "promised")
"""Areas whose ``unknown`` is "could not check": an expected value asked for, the GPUs the node should have."""
_SPACE = r"\s+"


def _one_line(text: str) -> str:
    return re.sub(_SPACE, " ", "".join(ch if ch.isprintable() else " " for ch in text)).strip()


def _why_not(run: InvestigatorRun | None, deadline_s: float, stopped: bool) -> str:
    if run is None:
        return "not run"
    if run.status == "failed":
        return f"failed: {run.error or 'error'}"
    if run.status == "timeout" or (run.status == "cancelled" and stopped):
        return f"no answer within the {deadline_s:g} s deadline"
    return run.error or run.status


def judge_checks(
    selection: Selection,
    findings: Sequence[Finding],
    runs: Sequence[InvestigatorRun],
    *,
    fail_on: Severity,
    deadline_s: float,
    stopped: bool = False,
    strict: bool = False,
) -> tuple[GateCheck, ...]:
    """Every selected check, in selection order; ``stopped`` says the deadline cancelled what was still running."""
    by_check: Mapping[str, Finding] = {f.check: f for f in findings}
    by_area = {r.area: r for r in runs}
    limit = SEVERITY_ORDER[fail_on]
    judged: list[GateCheck] = []
    for check in selection.checks:
        finding = by_check.get(check.id)
        if finding is None:
            why = _one_line(_why_not(by_area.get(check.area), deadline_s, stopped))
            judged.append(
                GateCheck(check=check.id, area=check.area, status="not_checked", title=check.title, observed=why, counts=True)
            )
            continue
        severity = finding.severity if finding.status == "problem" else None
        workload = (finding.layer or check.layer) == "workload"
        counts = (finding.status == "problem" and not workload and SEVERITY_ORDER.get(severity or "low", 9) <= limit) or (
            finding.status == "unknown" and (strict or check.area in ASKED)
        )
        judged.append(
            GateCheck(
                check=check.id,
                area=check.area,
                status=finding.status,
                severity=severity,
                title=finding.title,
                observed=_one_line(finding.observed),
                counts=counts,
                workload=workload,
            )
        )
    return tuple(judged)


def verdict_of(checks: Sequence[GateCheck]) -> tuple[Verdict, int]:
    if any(c.counts and c.status == "problem" for c in checks):
        return "problem", PROBLEM
    if any(c.counts for c in checks):
        return "could_not_check", NOT_CHECKED
    return "healthy", HEALTHY


PROMISES = ("promised.slurm", "promised.kubernetes")
"""The checks that read what a scheduler says the node holds."""


def _cut(text: str) -> str:
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1].rstrip() + "…"


def _ids(items: Sequence[str]) -> str:
    shown = list(items[:SHOWN_IDS])
    if len(items) > SHOWN_IDS:
        shown.append(f"+{len(items) - SHOWN_IDS} more")
    return ", ".join(shown)


def _no_gpu(checks: Sequence[GateCheck]) -> str:
    """What a healthy line says first on a node with no NVIDIA GPU: that it judged none, and what it read of promises."""
    read = [c.check for c in checks if c.check in PROMISES]
    if not read:
        return "no NVIDIA GPU on this node (what the scheduler promises was not read: promised.* not selected)"
    return f"no NVIDIA GPU on this node and none promised ({', '.join(read)} read)"


def reason_line(
    checks: Sequence[GateCheck], verdict: Verdict, fail_on: Severity, gpus: int | None = None, judged: str = ""
) -> str:
    """One short line naming the check ids that decided: what ``sinfo -R`` and a node condition show.

    ``gpus``: the NVIDIA GPUs the promised checks found (``None``: not read); a healthy line on a node with none
    says so first, so that "healthy" is never read as "its GPUs are fine". ``judged``: ``judged 2 of 8 GPUs (the
    job step's)`` where only some of the node's GPUs were seen, said first on a healthy line."""
    if verdict == "problem":
        bad = sorted(
            (c for c in checks if c.counts and c.status == "problem"), key=lambda c: SEVERITY_ORDER.get(c.severity or "low", 9)
        )
        head = _ids([f"{c.check} {c.severity}" for c in bad])
        return _cut(f"{head}: {bad[0].observed}" if bad[0].observed else head)
    if verdict == "could_not_check":
        by_why: dict[str, dict[str, None]] = {}
        for c in checks:
            if c.counts:
                by_why.setdefault(c.observed, {})[c.area if c.status == "not_checked" else c.check] = None
        parts = [f"{_ids(list(names))} ({why})" if why else _ids(list(names)) for why, names in by_why.items()]
        return _cut("could not check: " + "; ".join(parts))
    limit = SEVERITY_ORDER[fail_on]
    theirs = [c for c in checks if c.status == "problem" and c.workload and SEVERITY_ORDER.get(c.severity or "low", 9) <= limit]
    below = sum(1 for c in checks if c.status == "problem") - len(theirs)
    unknown = sum(1 for c in checks if c.status == "unknown")
    extra = ", ".join(t for t in (f"{below} below {fail_on}" if below else "", f"{unknown} unknown" if unknown else "") if t)
    lead = f"{_no_gpu(checks)}; " if gpus == 0 else (f"{judged}; " if judged else "")
    node = ""
    if theirs:
        theirs.sort(key=lambda c: SEVERITY_ORDER.get(c.severity or "low", 9))
        lead += f"the workload's, not the node's: {_ids([f'{c.check} {c.severity}' for c in theirs])}; "
        node = "node "
    tail = f" ({extra})" if extra else ""
    return _cut(f"healthy: {lead}no {node}problem at or above {fail_on} in {len(checks)} checks{tail}")


__all__ = ["judge_checks", "reason_line", "verdict_of"]
