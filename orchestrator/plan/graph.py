"""The plan's graph: the rules' edges resolved to steps, steps that one action fixes merged, and a topological order.

An edge names its other step by check id or by a fact the other step provides (``Fix.provides``; a reboot step
provides ``reboot``). An edge whose other step is not in the plan is satisfied: the other check found nothing to
fix. A cycle of blocking edges has no safe order: its steps are refused (``PlanStep.blocked``), never run in an
order that breaks one of them.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence

from rigaudit.tools.core.record import Record, field
from rigaudit.tools.schema.finding import Edge, Finding
from rigaudit.tools.schema.plan import BLOCKING, PlanStep, StepEdge

SYMPTOM_CAUSES: dict[str, tuple[str, ...]] = {
    "p2p.bandwidth": ("pcie.acs", "kernel.iommu", "pcie.link", "pcie.mrrs", "pcie.mps"),
    "pcie.aer": ("pcie.link",),
    "gpu.clocks": ("gpu.thermals", "power.gpu_power_limit"),
}
"""A symptom whose cause is also a problem joins the cause's step instead of getting its own (the first cause
found). ``p2p.status`` is not here: its rule says which steps resolve it, from the cause of each refused pair."""
NO_P2P_SYMPTOMS = ("p2p.bandwidth",)
"""Symptoms that no PCIe fix resolves on GPUs without peer-to-peer (p2p.status not applicable)."""


class Node(Record, frozen=False):
    """A step being built: its finding, the checks it resolves, its declared edges and the facts it provides."""

    finding: Finding
    step: PlanStep
    edges: list[Edge] = field(default_factory=list)
    provides: set[str] = field(default_factory=set)
    folded: list[str] = field(default_factory=list)

    @property
    def checks(self) -> set[str]:
        return {self.finding.check, *self.folded}


def node_for(finding: Finding, step: PlanStep) -> Node:
    """A node of a finding's fix; a model's finding brings no edges and provides nothing (rule steps never wait
    for, or are reordered by, what a model claims)."""
    fix = finding.fix
    assert fix is not None
    if finding.source != "rules":
        return Node(finding, step)
    provides = set(fix.provides) | ({"reboot"} if fix.kind == "reboot" else set())
    return Node(finding, step, list(fix.edges), provides)


def targets(edge: Edge, nodes: Iterable[Node], me: Node) -> list[Node]:
    """The steps an edge names: by check (the step's own check or one it resolves) or by a fact it provides."""
    return [n for n in nodes if n is not me and (edge.check in n.checks if edge.check else edge.fact in n.provides)]


def fold(nodes: list[Node], findings: Sequence[Finding]) -> list[Node]:
    """Merge each step that other steps make moot into the first of them (its checks join, "also resolves")."""
    problem_checks = {n.finding.check for n in nodes}
    no_p2p = any(f.check == "p2p.status" and f.status == "not_applicable" for f in findings)
    kept = list(nodes)
    for node in nodes:
        into = _moot_into(node, kept, problem_checks, no_p2p)
        if into is None:
            continue
        kept.remove(node)
        into.folded += sorted(node.checks)
        into.provides |= node.provides
        into.edges += [e for e in node.edges if e.kind != "moot_after" and not targets(e, [into], node)]
    return kept


def _moot_into(node: Node, nodes: list[Node], problem_checks: set[str], no_p2p: bool) -> Node | None:
    declared = [e for e in node.edges if e.kind == "moot_after"]
    if declared:
        found = [targets(e, nodes, node) for e in declared]
        return found[0][0] if all(found) else None  # moot only once every step it names is planned
    if no_p2p and node.finding.check in NO_P2P_SYMPTOMS:
        return None
    cause = next((c for c in SYMPTOM_CAUSES.get(node.finding.check, ()) if c in problem_checks), None)
    return next((n for n in nodes if n is not node and cause in n.checks), None) if cause else None


def resolve(nodes: Sequence[Node], better: Callable[[Node, Node], bool]) -> dict[str, tuple[StepEdge, ...]]:
    """Each step's edges to other steps of the plan; a conflict is kept on the worse-ranked of the two."""
    out: dict[str, list[StepEdge]] = {n.step.id: [] for n in nodes}
    for node in nodes:
        for edge in node.edges:
            for other in targets(edge, nodes, node):
                if edge.kind in ("requires", "not_before"):
                    out[node.step.id].append(StepEdge(kind=edge.kind, step=other.step.id, why=edge.why))
                elif edge.kind == "conflicts":
                    worse, best = (other, node) if better(node, other) else (node, other)
                    out[worse.step.id].append(StepEdge(kind="conflicts", step=best.step.id, why=edge.why))
    return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}


def order(steps: Mapping[str, PlanStep], key: Callable[[PlanStep], tuple[object, ...]]) -> tuple[list[PlanStep], list[str]]:
    """A topological order of the steps (every edge's other step first), the best ``key`` first among those
    ready; the steps of a cycle are refused (``blocked``) and placed last, with a warning each."""
    after: dict[str, set[str]] = {i: {e.step for e in s.edges if e.step in steps and e.step != i} for i, s in steps.items()}
    ready = [(key(s), i) for i, s in steps.items() if not after[i]]
    heapq.heapify(ready)
    done: list[PlanStep] = []
    placed: set[str] = set()
    while ready:
        _, step_id = heapq.heappop(ready)
        done.append(steps[step_id])
        placed.add(step_id)
        for other, needs in after.items():
            if other not in placed and step_id in needs:
                needs.discard(step_id)
                if not needs:
                    heapq.heappush(ready, (key(steps[other]), other))
    warnings: list[str] = []
    stuck = sorted((s for i, s in steps.items() if i not in placed), key=key)
    for step in stuck:
        chain = ", ".join(e.text() for e in step.edges if e.step in steps and e.step not in placed)
        why = f"refused: no order satisfies its edges ({chain}): they form a cycle, or wait on one"
        warnings.append(f"plan: {step.id} {why}")
        done.append(step.model_copy(update={"blocked": why}))
    return done, warnings


def blocking_closure(steps: Mapping[str, PlanStep], step_id: str) -> set[str]:
    """Every step ``step_id`` waits for, directly or through others."""
    seen: set[str] = set()
    todo = [step_id]
    while todo:
        for edge in steps[todo.pop()].edges:
            if edge.kind in BLOCKING and edge.step in steps and edge.step not in seen:
                seen.add(edge.step)
                todo.append(edge.step)
    return seen
