"""A plan file handed to rigaudit is data, not instructions: what it may change on this machine is rigaudit's own.

Before a plan from a file (``apply --plan``, ``bench ab --plan``) changes this machine:

- the machine it was audited on must be this one, proven by an id (machine-id or DMI product uuid digest,
  :func:`~rigaudit.orchestrator.hosts.identity.change_refusal`); a name alone never is;
- every step that would change something is derived again: this machine is audited with rigaudit's own
  rules, and the file's step must be the step those rules give here (its kind, its layer and each action,
  value for value), or a step whose change is already in place (nothing is written then).

Anything else refuses the whole plan with one line naming the step, before anything is changed. A new copy of
a snapshot (``--into``) is a rehearsal that writes only inside the copy: a plan is applied to it as given
(names and ids may still refuse it, :func:`~rigaudit.orchestrator.hosts.identity.mismatch`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rigaudit.orchestrator.hosts.identity import FACT as IDENTITY_FACT
from rigaudit.orchestrator.hosts.identity import REAUDIT, HostIdentity, change_refusal, identify, mismatch
from rigaudit.tools.actions.preview import preview
from rigaudit.tools.actions.targets import expand
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.schema.audit import HostSummary
from rigaudit.tools.schema.plan import Plan, PlanStep


class PlanRefused(UsageError):
    """A plan file that rigaudit will not let change this machine; the message is one line."""


def plan_identity(plan_host: HostSummary | None) -> HostIdentity | None:
    """The machine an ``audit --json`` file was made on (``None``: a bare plan names none)."""
    if plan_host is None:
        return None
    return HostIdentity.parse(plan_host.name, plan_host.facts.get(IDENTITY_FACT, ""))


async def check_machine(plan_host: HostSummary | None, host: Host, *, live: bool) -> HostIdentity:
    """This host's identity, once the plan is known to be of it (:class:`PlanRefused` otherwise). ``live``: ``host``
    is the one the plan changes (an id must prove it); else a new snapshot copy is (only a named mismatch refuses)."""
    here = await identify(host)
    recorded = plan_identity(plan_host)
    if live:
        why = change_refusal("the plan", recorded, here)
    else:
        why = mismatch("the plan", recorded, here) if recorded is not None else None
    if why is not None:
        raise PlanRefused(f"{why} (its PCI addresses, paths and values are that machine's)" if live else why)
    return here


def _difference(given: PlanStep, derived: PlanStep) -> str:
    """What of ``given`` differs from the step rigaudit derived ("" when nothing that is changed does)."""
    if (given.kind, given.where) != (derived.kind, derived.where):
        return f"it is a {given.kind} step on the {given.where}, the rule's is a {derived.kind} step on the {derived.where}"
    ours = {t for a in derived.actions for t in expand(a)}
    extra = next((t for a in given.actions for t in expand(a) if t not in ours), None)
    if extra is not None:
        value = getattr(extra, "value", "")
        what = f"{extra.describe()} = {str(value)[:40]}" if value != "" else extra.describe()
        return f"it changes {what}, which the rule does not"
    if given.actions != derived.actions:
        return "its actions are not the rule's"
    return ""


async def rederive(steps: Sequence[PlanStep], host: Host) -> Plan:
    """Audit ``host`` with rigaudit's own rules and check that each of ``steps`` (those a plan file would run) is
    the step they give there, or already in place; :class:`PlanRefused` naming the first that is not. Returns the
    plan derived."""
    from rigaudit.orchestrator.audit.run import run_audit

    derived = (await run_audit(host)).plan
    for step in steps:
        ours = derived.step(step.id)
        if ours is None:
            if step.actions and (await preview(host, step))[1]:
                continue  # already in place: nothing will be written
            raise PlanRefused(
                f"step {step.id}: rigaudit's rule for {step.check} asks for no such change on {host.name} now; "
                f"refusing the plan ({REAUDIT})"
            )
        why = _difference(step, ours)
        if why:
            raise PlanRefused(f"step {step.id}: {why} on {host.name}; refusing the plan ({REAUDIT})")
    return derived


__all__ = ["PlanRefused", "check_machine", "plan_identity", "rederive"]
