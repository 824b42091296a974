"""What the terminal shows when an audit ends: what a person must read first, then the rest in one line.

In order: a headline (the host, its GPUs, the counts); a machine with no NVIDIA GPU says so here,
and its checks that need one are folded into one line instead of a row each; an incomplete audit
is shouted, never shown as a pass; then the problems and unknowns, one line counting the rest
(``--all`` lists them), what fixing can buy, the plan; after all of the rules', a model's suggestions
(``--llm``) in their own section; the warnings; what of the model's was dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rich.console import RenderableType
from rich.text import Text

from rigaudit.orchestrator.audit.suggestions import rules_plan
from rigaudit.orchestrator.report.document import expectation
from rigaudit.orchestrator.ui.pictures import pcie_tree
from rigaudit.orchestrator.ui.suggestions import suggestions_section
from rigaudit.orchestrator.ui.tables import findings_table, ordered, plan_table
from rigaudit.tools.core.printable import printable
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.dropped import drop_counts
from rigaudit.tools.schema.events.audit import PcieDevice
from rigaudit.tools.schema.finding import Finding

_NEEDS_GPU = re.compile(
    r"NVML unavailable|no NVIDIA GPU|no NVIDIA driver and no NVIDIA GPU|\b0 GPU\(s\)|fewer than two GPUs|for 0 GPUs"
)
"""What a check observes when it could not run for want of a GPU."""


def no_gpu(result: AuditResult) -> str | None:
    """``None`` when the host has an NVIDIA GPU (or it could not be told); else why it has none, in a few words."""
    facts = result.host.facts
    if "gpus" in facts or not facts or any(w.startswith("baseline facts incomplete") for w in result.warnings):
        return None
    nvml = facts.get("nvml", "")
    return "none on the PCI bus" + (f", NVML {nvml}" if nvml else "")


def needs_gpu(finding: Finding) -> bool:
    """A verdict that only says "there is no GPU to look at" (folded on a machine without one)."""
    return finding.status in ("unknown", "not_applicable") and bool(_NEEDS_GPU.search(finding.observed))


def _counts(findings: Sequence[Finding]) -> str:
    names = {"ok": "ok", "not_applicable": "not applicable", "unknown": "unknown", "problem": "problem(s)"}
    by: dict[str, int] = {}
    for f in findings:
        by[f.status] = by.get(f.status, 0) + 1
    return ", ".join(f"{by[s]} {names[s]}" for s in ("problem", "unknown", "ok", "not_applicable") if by.get(s))


def headline(result: AuditResult) -> Text:
    """``pve-gpu01 (8 x RTX PRO 6000, driver 580.95.05, kernel 6.8.12): 4 problems, 11 unknown``."""
    facts = result.host.facts
    about = [facts[k] if k == "gpus" else f"{k} {facts[k]}" for k in ("gpus", "driver", "kernel") if facts.get(k)]
    rules = result.findings
    problems = sum(1 for f in rules if f.status == "problem")
    unknown = sum(1 for f in rules if f.status == "unknown")
    text = Text(result.host.name or "?", style="bold")
    if about:
        text.append(f" ({', '.join(about)})")
    text.append(": ")
    text.append(f"{problems} problem(s)", style="bold red" if problems else "bold green")
    text.append(f", {unknown} unknown of {len(rules)} checks")
    if result.suggestions:
        text.append(f"; {len(result.suggestions)} suggestion(s) by the model (LLM), not counted: below", style="magenta")
    return text


def incomplete_banner(result: AuditResult) -> Text | None:
    """A loud line for an audit that is not a pass: investigators that crashed, timed out or were stopped."""
    lost = [r for r in result.investigators if r.status != "done"]
    if result.status == "complete" and not lost:
        return None
    word = "INTERRUPTED" if result.status == "interrupted" else "INCOMPLETE"
    what = "; ".join(f"{r.area} {r.status}" + (f" ({r.error})" if r.error and r.error != r.status else "") for r in lost)
    text = Text(f" AUDIT {word} ", style="bold white on red")
    text.append(
        f" {len(lost)} of {len(result.investigators)} investigator(s) did not finish, their checks were not judged: "
        f"this is not a pass. {what}",
        style="bold red",
    )
    return text


def audit_view(
    result: AuditResult, *, width: int, show_all: bool = False, topology: Sequence[PcieDevice] = ()
) -> list[RenderableType]:
    """The renderables, in order, for a terminal of ``width`` columns; ``topology`` draws the PCIe tree
    (where there are GPUs to place)."""
    out: list[RenderableType] = []
    findings = ordered(result.findings)
    folded: list[Finding] = []
    missing = no_gpu(result)
    if missing is not None:  # said first: it explains every GPU verdict below
        folded = [f for f in findings if needs_gpu(f)]
        out.append(
            Text(
                f"No NVIDIA GPU on {result.host.name or 'this machine'} ({missing}): {len(folded)} GPU check(s) "
                "had nothing to look at" + (" and are counted in one line below." if folded and not show_all else "."),
                style="bold yellow",
            )
        )
    out.append(headline(result))
    banner = incomplete_banner(result)
    if banner is not None:
        out.append(banner)
    if show_all:
        shown, rest = findings, []
    else:
        shown = [f for f in findings if f.status in ("problem", "unknown") and f not in folded]
        rest = [f for f in findings if f not in shown]
    if shown:
        title = "Findings" if show_all else "Problems and unknowns"
        out.append(findings_table(shown, width=width, title=title))
    elif not show_all and banner is not None:
        out.append(Text("No problem among the checks that finished; the rest were not checked.", style="bold yellow"))
    elif not show_all:
        out.append(Text("No problem and nothing unknown.", style="bold green"))
    if rest:
        gpu = sum(1 for f in rest if f in folded)
        line = f"{len(rest)} more check(s): {_counts(rest)}"
        line += f" ({gpu} of them for want of a GPU)" if gpu else ""
        out.append(Text(line + "; --all lists them.", style="dim"))
    problems = [f for f in result.findings if f.status == "problem"]
    if banner is None:  # the rules' judgement of the host: only of a whole audit
        out.append(Text(expectation(problems, markdown=False, plan=rules_plan(result.plan))))
    idle = "Plan: nothing to change." if banner is None else "Plan: nothing to change for the checks that finished."
    out.append(plan_table(result.plan) if result.plan.steps else Text(idle))
    if sum(1 for d in topology if d.kind == "gpu") >= 2 and (tree := pcie_tree(topology)) is not None:
        out.append(tree)
    out += suggestions_section(result.suggestions, frozenset(f.check for f in result.findings))
    out += [Text(printable(f"warning: {w}"), style="yellow") for w in result.warnings]
    if result.dropped:
        out.append(dropped_line(result, show_all=show_all))
    return out


def dropped_line(result: AuditResult, *, show_all: bool = False, shown: int = 5) -> Text:
    """``LLM: 3 model suggestion(s) dropped (2 contradicts a rule finding, 1 ...): pcie.acs (numa): ...``."""
    dropped = result.dropped
    listed = dropped if show_all else dropped[:shown]
    text = Text(f"LLM: {len(dropped)} model suggestion(s) dropped ({drop_counts(dropped)}): ", style="magenta")
    text.append(printable("; ".join(f"{d.check} ({d.area}): {d.reason}" for d in listed)))
    if len(listed) < len(dropped):
        text.append(f"; +{len(dropped) - len(listed)} more (--all lists them, --json has each)")
    return text


__all__ = ["audit_view", "dropped_line", "headline", "incomplete_banner", "needs_gpu", "no_gpu"]
