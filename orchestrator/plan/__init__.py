"""Merge problem findings into one plan: a graph of steps in an order that honours its edges, best gain first.

- one step per distinct fix (identical actions, or the same commands, merge; a symptom joins its cause's step;
  a step that another makes moot joins it; fixes that each write rigaudit's tuned child profile write it once,
  with every option, :mod:`.profiles`);
- each step's edges (``requires``, ``not_before``, ``conflicts``) resolved to the other steps (:mod:`.graph`);
- each step's gain and priority (:mod:`.gains`): P0 is the biggest expected gain for its risk, not "runtime";
  a step another waits for ranks at least as high as it;
- a model's finding (``source: "llm"``) is a suggestion: it gets no step, no priority and no gain;
- the measurements that would decide unknown checks first, the steps they decide waiting on them (:mod:`.measure`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from rigaudit.orchestrator.plan import gains, measure
from rigaudit.orchestrator.plan.graph import Node, blocking_closure, fold, node_for, order, resolve
from rigaudit.orchestrator.plan.profiles import merge_profiles
from rigaudit.tools.schema.finding import SEVERITY_ORDER, Action, Finding
from rigaudit.tools.schema.plan import Plan, PlanStep, Priority, StepEdge

_PRIORITY_ORDER: dict[str, int] = {"P0": 0, "P1": 1, "P2": 2}


def _action_key(actions: Iterable[Action]) -> str:
    """Equal for fixes that do the same: the same typed changes, or the same commands (whatever their wording)."""
    parts = []
    for action in actions:
        data = action.model_dump()
        parts.append(" ".join(data["argv"]) if data["type"] == "command" and data["argv"] else action.model_dump_json())
    return "|".join(sorted(parts))


def _write_targets(action: Action) -> dict[str, str]:
    """target -> value written, for conflict detection."""
    data = action.model_dump()
    if data["type"] == "sysctl":
        return {f"sysctl:{data['key']}": str(data["value"])}
    if data["type"] == "sysfs_write":
        return {f"sysfs:{p}": str(data["value"]) for p in data["paths"]}
    if data["type"] == "pci_register":
        return {f"pci:{d}:{data['capability']}+{data['offset']}": f"{data['value']}/{data['mask']}" for d in data["devices"]}
    return {}


def _draft(finding: Finding) -> PlanStep:
    fix = finding.fix
    assert fix is not None
    return PlanStep(
        id=finding.check,
        check=finding.check,
        priority="P2",
        kind=fix.kind,
        where=fix.where,
        title=fix.summary or finding.title,
        severity=finding.severity,
        subjects=finding.subjects,
        actions=fix.actions,
        risk=fix.risk,
        verify=fix.verify,
        revert=fix.revert,
        persist=fix.persist,
        gain=gains.gain_of(finding),
        source=finding.source,
    )


def _nodes(problems: list[Finding], warnings: list[str]) -> list[Node]:
    """One node per distinct fix: identical actions merge; a write that contradicts a more severe one is dropped."""
    nodes: list[Node] = []
    by_actions: dict[str, Node] = {}
    written: dict[str, tuple[str, str]] = {}
    for finding in problems:
        fix = finding.fix
        assert fix is not None
        key = _action_key(fix.actions) if fix.actions else ""
        if key and key in by_actions:
            into = by_actions[key]
            into.folded.append(finding.check)
            if finding.source == "rules":
                into.edges += list(fix.edges)
                into.provides |= set(fix.provides)
            continue
        clashes = [
            (target, value, previous)
            for action in fix.actions
            for target, value in _write_targets(action).items()
            if (previous := written.get(target)) and previous[1] != value
        ]
        for target, value, previous in clashes:
            warnings.append(
                f"{finding.check} wants {target}={value} but {previous[0]} (more severe) wants {previous[1]}: kept {previous[0]}"
            )
        if clashes:
            continue
        for action in fix.actions:
            for target, value in _write_targets(action).items():
                written.setdefault(target, (finding.check, value))
        node = node_for(finding, _draft(finding))
        nodes.append(node)
        if key:
            by_actions[key] = node
    return nodes


def rank(finding: Finding) -> tuple[Priority, str]:
    """The priority of one problem's fix on its own (a plan of one step) and one line on why."""
    plan, _ = build_plan([finding])
    step = plan.steps[0]
    return step.priority, step.rationale


def build_plan(findings: Sequence[Finding], facts: Mapping[str, str] | None = None) -> tuple[Plan, list[str]]:
    """The plan of these findings (``facts``: the host's baseline facts, which name its containers) and warnings
    (conflicting writes dropped, steps refused for an order their edges cannot have)."""
    facts = facts or {}
    warnings: list[str] = []
    findings = [f for f in findings if f.source == "rules"]
    problems = [f for f in findings if f.status == "problem" and f.fix is not None]
    problems.sort(key=lambda f: (SEVERITY_ORDER.get(f.severity or "low", 9), f.check))
    problems = merge_profiles(problems)
    nodes = fold(_nodes(problems, warnings), findings)
    for node in nodes:
        if node.folded:
            note = f"also resolves {', '.join(node.folded)}"
            node.step = node.step.model_copy(update={"also_checks": tuple(node.folded), "rationale": note})
    edges = resolve(nodes, lambda a, b: gains.sort_key(a.step) < gains.sort_key(b.step))
    steps = {
        n.step.id: n.step.model_copy(update={"edges": edges[n.step.id], "provides": tuple(sorted(n.provides))}) for n in nodes
    }
    measurements = measure.steps(measure.needed(findings, facts), facts)
    for step_id, step in steps.items():
        waits = [
            StepEdge(kind="measured_by", step=m.id, why=m.title[0].lower() + m.title[1:])
            for m in measure.decided_by(step, measurements)
        ]
        if waits:
            steps[step_id] = step.model_copy(update={"edges": (*step.edges, *waits)})
    steps.update({m.id: m for m in measurements})
    steps = _ranked(steps)
    ordered, order_warnings = order(steps, gains.sort_key)
    warnings += order_warnings
    return Plan(steps=tuple(ordered)), warnings


def _ranked(steps: dict[str, PlanStep]) -> dict[str, PlanStep]:
    """Priorities from gain and risk; a step that another waits for is raised to that step's priority."""
    ranked = gains.priorities(steps)
    for step_id in steps:
        for needed in blocking_closure(steps, step_id):
            mine, theirs = ranked[step_id], ranked[needed]
            if _PRIORITY_ORDER[mine[0]] < _PRIORITY_ORDER[theirs[0]] and steps[needed].source == "rules":
                ranked[needed] = (mine[0], f"{theirs[1]}; raised to {mine[0]}: {step_id} waits for it")
    out = {}
    for step_id, step in steps.items():
        priority, why = ranked[step_id]
        rationale = f"{why}; {step.rationale}" if step.rationale else why
        out[step_id] = step.model_copy(update={"priority": priority, "rationale": rationale})
    return out


__all__ = ["build_plan", "rank"]
