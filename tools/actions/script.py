"""``apply --emit-script``: the steps apply did not run here, as a reviewed bash script for a person.

Steps come in the plan's order (its graph: each after what it waits for). Runtime steps meant for another machine
(the hypervisor of a container) are live commands once what they wait for is done; everything else (deferred
reboot/firmware work, declined or failed steps, a live step whose prerequisite is not done) is commented out.
Each step carries its before-check, verify and revert as comments; a command written as
``# $ command`` is one to run by hand once its window (reboot, firmware) comes.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from rigaudit.tools.actions.text import comment, compress_paths, quoted, setpci_register, shell_lines
from rigaudit.tools.core.record import Record
from rigaudit.tools.schema import names
from rigaudit.tools.schema.finding import (
    Action,
    CommandAction,
    ModuleLoadAction,
    PciRegisterAction,
    ServiceStartAction,
    SysctlAction,
    SysfsWriteAction,
)
from rigaudit.tools.schema.plan import PlanStep


class ScriptStep(Record):
    step: PlanStep
    reason: str
    """Why apply did not run it here: ``runs on the hypervisor``, ``deferred (reboot)``, ``declined``..."""
    live: bool
    """Write its commands as commands (else commented out)."""


def before_checks(action: Action) -> list[str]:
    """Read-only commands that show the value before the change (names checked and quoted)."""
    try:
        return _before_checks(action)
    except ValueError as exc:
        return [f"not shown: {names.one_line(str(exc))}"]


def _before_checks(action: Action) -> list[str]:
    if isinstance(action, SysctlAction):
        return [f"sysctl {quoted(names.sysctl_key, action.key)}"]
    if isinstance(action, SysfsWriteAction):
        return [f"grep . {compress_paths(tuple(names.sysfs_path(p) for p in action.paths))}"]
    if isinstance(action, PciRegisterAction):
        register = setpci_register(names.pci_capability(action.capability))
        where = f"{register}+{action.offset:#x}" if register else f"{action.offset:#x}"
        suffix = {1: "b", 2: "w", 4: "l"}[action.width]
        return [f"setpci -s {quoted(names.bdf, device)} {where}.{suffix}" for device in action.devices]
    if isinstance(action, ModuleLoadAction):
        module = names.module_name(action.module).replace("-", "_")
        return [f"grep -w ^{shlex.quote(module)} /proc/modules || echo 'not loaded'"]
    if isinstance(action, ServiceStartAction):
        return [f"systemctl is-active {quoted(names.unit_name, action.unit)}"]
    assert isinstance(action, CommandAction)
    return []


def _comment(text: str, prefix: str = "# ") -> list[str]:
    """Each line of ``text`` as a comment; control characters within a line become spaces."""
    return [f"{prefix}{names.one_line(line)}".rstrip() for line in text.splitlines() if line.strip()] or []


def _step_lines(item: ScriptStep) -> list[str]:
    step = item.step
    lines = [
        "",
        comment(f"---- [{step.priority}] {step.id}: {step.title}"),
        comment(f"kind {step.kind}, on the {step.where}, risk {step.risk}; not applied by rigaudit here: {item.reason}"),
    ]
    if step.rationale:
        lines += _comment(f"Why: {step.rationale}")
    if step.gain is not None:
        lines += _comment(f"Buys: {step.gain.text()}")
    for edge in step.edges:
        lines += _comment(f"Order: {edge.text()}")
    checks = [c for action in step.actions for c in before_checks(action)]
    for check in checks:
        lines.append(comment(f"Before: {check}"))
    if not step.actions:
        lines.append("# (no command: see the step's title and verify line)")
    for action in step.actions:
        if isinstance(action, CommandAction) and action.argv:
            lines += _comment(action.description)
        for command in shell_lines(action):
            if command.startswith("#") or item.live:
                lines.append(command)
            else:
                lines.append(comment(f"$ {command}"))
    for label, text in (("Verify", step.verify), ("Revert", step.revert), ("Persist", step.persist)):
        if text:
            lines += _comment(f"{label}: {text}")
    return lines


def render_script(items: Sequence[ScriptStep], *, host: str, plan_hash: str, generated_at: str) -> str:
    """The whole script; stable for the same input."""
    live = sum(1 for i in items if i.live)
    out = [
        "#!/usr/bin/env bash",
        comment(f"Written by `rigaudit apply` for {host} at {generated_at} (plan {plan_hash})."),
        "# Review every step before running it, as root, on the machine each step names.",
        f"# {live} step(s) run as written; {len(items) - live} are commented out (deferred, declined or failed here).",
        "set -euo pipefail",
    ]
    for item in items:
        out += _step_lines(item)
    if not items:
        out += ["", "# Nothing left to do elsewhere: every step was applied or is already in place."]
    return "\n".join(out) + "\n"
