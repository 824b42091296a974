"""What each step can buy on this workload, and its priority: the biggest expected gain for its risk first.

A rule may say what its fix buys (``Fix.gain``, from its facts); otherwise the estimate comes from the check
(``ESTIMATES``: an inference server's decode loop, with the reasoning) capped by the severity the rule judged on
this host, or from the severity alone. The score is the middle of the range discounted by the risk; ``P0`` is
the steps near the best score that buy something worth a window, ``P2`` what buys at most a couple of percent.
"""

from __future__ import annotations

from collections.abc import Mapping

from rigaudit.orchestrator.plan.measure import ALL as MEASUREMENTS
from rigaudit.tools.schema.finding import Finding, Gain
from rigaudit.tools.schema.plan import PlanStep, Priority

ESTIMATES: dict[str, Gain] = {
    "pcie.mrrs": Gain(
        low=0,
        high=2,
        why="MaxReadReq sizes only the GPUs' reads of host memory (host-to-device copies, host-staged peer "
        "traffic); decode streams weights from HBM: 0-2% of decode time at batch 1, a little on model loading",
    ),
    "pcie.mps": Gain(
        low=0, high=2, why="payload size changes PCIe efficiency by a few percent of link bandwidth; decode streams HBM"
    ),
    "power.cstates": Gain(
        low=2,
        high=10,
        why="a CPU waking from a deep C-state delays the kernel launches of every decode step: 2-10% of decode "
        "time at batch 1, less when a batching server keeps the CPUs busy",
    ),
    "power.governor": Gain(
        low=2, high=8, why="a low CPU clock lengthens the host side of each decode step (scheduling, launches)"
    ),
    "power.scaling_driver": Gain(
        low=1,
        high=5,
        why="a better frequency driver ramps the CPUs faster between decode steps: 1-5% of decode time at batch 1",
    ),
    "numa.balancing": Gain(
        low=1,
        high=5,
        why="automatic NUMA balancing unmaps the server's pages to sample them: page-fault stalls and latency "
        "jitter, 1-5% of throughput",
    ),
    "pcie.acs": Gain(
        low=5,
        high=40,
        why="P2P goes from host-staged to direct: tensor-parallel all-reduce bandwidth x2, worth 5-40% of decode "
        "time by the share all-reduces take",
    ),
    "kernel.iommu": Gain(
        low=5,
        high=40,
        why="P2P goes from refused (host-staged) to direct once GPU DMA is passthrough: tensor-parallel "
        "all-reduce bandwidth x2, worth 5-40% of decode time by the share all-reduces take",
    ),
    "p2p.status": Gain(
        low=5,
        high=40,
        why="P2P goes from host-staged to direct: tensor-parallel all-reduce bandwidth x2, worth 5-40% of decode "
        "time by the share all-reduces take",
    ),
    "pcie.link": Gain(
        low=2,
        high=50,
        why="a link trained below its width or speed caps host transfers and host-staged all-reduces on that GPU",
    ),
    "driver.persistence": Gain(low=0, high=1, why="start-up time of each CUDA process, not steady-state throughput"),
    "kernel.swappiness": Gain(low=0, high=1, why="only matters when memory runs short"),
    "kernel.thp": Gain(low=0, high=2, why="huge-page compaction stalls on the host side, rarely on the GPU path"),
}
"""Estimates by check, for the severity the check's rule gives on a typical serving host."""

BY_SEVERITY: dict[str, Gain] = {
    "critical": Gain(low=0, high=0, why="the server fails, hangs or computes wrong results until it is fixed", of="stability"),
    "high": Gain(low=10, high=50, why="a high-impact problem: large fractions of throughput (no estimate for this check)"),
    "medium": Gain(low=2, high=10, why="a medium problem: a few percent of throughput (no estimate for this check)"),
    "low": Gain(low=0, high=2, why="hygiene: at most a couple of percent (no estimate for this check)"),
}
CEILING: dict[str, float] = {"low": 3, "medium": 15}
"""The most a step can be estimated to buy at the severity its rule judged here."""
MEASURE_ORDER = {m.id: i for i, m in enumerate(MEASUREMENTS)}
RISK_FACTOR: dict[str, float] = {"low": 1.0, "medium": 0.5, "high": 0.25}
"""How much of the expected gain is counted for a step's risk (a live register write on running GPUs: medium)."""
P0_FLOOR = 4.0
"""The least score (percent, risk-weighted) a P0 step has: below it no step is urgent."""
P2_CEILING = 3.0
"""A step that buys at most this much (percent, at best) is hygiene: P2."""


def gain_of(finding: Finding) -> Gain:
    """What fixing ``finding`` can buy here: the rule's own estimate, else the check's capped by its severity."""
    assert finding.fix is not None
    if finding.fix.gain is not None:
        return finding.fix.gain
    severity = finding.severity or "low"
    if severity == "critical":
        return BY_SEVERITY["critical"]
    estimate = ESTIMATES.get(finding.check, BY_SEVERITY[severity])
    ceiling = CEILING.get(severity)
    if ceiling is not None and estimate.high > ceiling:
        return Gain(
            low=min(estimate.low, ceiling / 2),
            high=ceiling,
            why=f"{estimate.why}; judged {severity} on this host, so at most {ceiling:g}%",
        )
    return estimate


def score(step: PlanStep) -> float:
    """The expected gain counted for the step's risk; stability fixes score above any percentage."""
    gain = step.gain
    if gain is None:
        return 0.0
    if gain.of == "stability":
        return 1_000_000.0 * RISK_FACTOR[step.risk]
    return (gain.low + gain.high) / 2 * RISK_FACTOR[step.risk]


def priorities(steps: Mapping[str, PlanStep]) -> dict[str, tuple[Priority, str]]:
    """Each step's priority and one line on why, against the best of the plan's steps."""
    rules = [s for s in steps.values() if s.source == "rules" and s.kind != "measure"]
    best = max((score(s) for s in rules), default=0.0)
    out: dict[str, tuple[Priority, str]] = {}
    for step in steps.values():
        out[step.id] = _priority(step, best)
    return out


def _priority(step: PlanStep, best: float) -> tuple[Priority, str]:
    gain, value = step.gain, score(step)
    risk = f"{step.risk} risk"
    if step.kind == "measure":
        return "P0", "measure first: it decides what the audit could not see"
    if gain is None:
        return "P2", "no estimate of what it buys"
    if gain.of == "stability":
        return "P0", f"fixes failures or wrong results ({gain.why}); {risk}"
    bought = f"buys {gain.low:g}-{gain.high:g}% for {risk}"
    if value >= P0_FLOOR and value >= best / 2:
        return "P0", f"{bought}: among the biggest expected gains of this plan for their risk"
    if gain.high <= P2_CEILING:
        return "P2", f"{bought}: little for a change; do it when convenient"
    return "P1", f"{bought}: less than the P0 steps for its risk"


def sort_key(step: PlanStep) -> tuple[int, int, float, str]:
    """Measurements first (in :data:`measure.ALL`'s order), rules before a model's suggestions, then the best score
    for the risk."""
    if step.kind == "measure":
        return (0, 0, float(MEASURE_ORDER.get(step.id, len(MEASURE_ORDER))), step.id)
    return (1, 0 if step.source == "rules" else 1, -score(step), step.id)
