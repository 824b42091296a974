"""The audit result, ``rigaudit.audit/1``: what ``--json`` writes and ``--plan`` reads."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rigaudit.tools.schema.dropped import DroppedFinding
from rigaudit.tools.schema.evidence import Evidence
from rigaudit.tools.schema.finding import RENAMED_AREAS, Area, Finding, current_area
from rigaudit.tools.schema.plan import Plan

AUDIT_SCHEMA = "rigaudit.audit/1"
InvestigatorStatus = Literal["done", "failed", "timeout", "cancelled"]
AuditStatus = Literal["complete", "incomplete", "interrupted"]
"""``complete``: every investigator finished; ``incomplete``: one or more crashed or timed out (their
checks were not judged, so the audit is not a clean one); ``interrupted``: stopped early (Ctrl-C)."""


LlmStatus = Literal["ok", "degraded", "failed"]
"""``ok``: every agent answered and the model saw what it was sent; ``degraded``: some agents failed or
the endpoint cut prompts; ``failed``: no agent answered (the rule findings stand either way)."""


class InvestigatorRun(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    area: Area
    status: InvestigatorStatus
    duration_s: float
    error: str | None = None
    findings: int = 0
    llm: Literal["answered", "failed"] | None = None
    """With ``--llm``: whether this investigator's agent answered (its rule findings stand either way)."""
    llm_error: str | None = None


class AgentUsage(BaseModel):
    """What one LLM agent spent, and on which model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = ""
    usage: dict[str, int] = Field(default_factory=dict)
    cost_usd: float | None = None
    """What its tokens cost at the price given (``--llm-price``); ``None`` without one (never guessed)."""


class LlmRun(BaseModel):
    """What LLM mode did in one audit (``--llm``): the endpoint, the problems, each distinct once, and the usage."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    endpoint: str
    status: LlmStatus
    agents: int = 0
    failed: tuple[str, ...] = ()
    """The areas whose agent gave no answer."""
    problems: tuple[str, ...] = ()
    """What degraded the audit, one line per distinct problem."""
    notes: tuple[str, ...] = ()
    """What was handled (a format fallback, tool calls parsed from text), one line each."""
    usage: dict[str, int] = Field(default_factory=dict)
    cost_usd: float | None = None
    """What the priced agents' tokens cost together (``--llm-price``); ``None`` without a price."""
    by_agent: dict[str, AgentUsage] = Field(default_factory=dict)
    """Each agent's usage and model (``--llm-model AREA=NAME``), by agent (an area, ``preflight``)."""


class HostSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    source: str
    """``local``, ``snapshot:DIR`` or ``ssh:HOST``."""
    facts: dict[str, str] = Field(default_factory=dict)
    """Baseline facts for the report: kernel, driver, GPUs, CPU, platform..."""


class AuditResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_: str = Field(default=AUDIT_SCHEMA, alias="schema")
    status: AuditStatus = "complete"
    host: HostSummary
    started_at: str
    duration_s: float
    investigators: tuple[InvestigatorRun, ...] = ()
    findings: tuple[Finding, ...] = ()
    """The rules' findings: the only ones counted, planned, and judged by ``--fail-on``."""
    suggestions: tuple[Finding, ...] = ()
    """What a model (``--llm``) suggested and the audit accepted (``source: "llm"``): shown apart, never counted as
    a problem, never planned or applied."""
    plan: Plan = Plan()
    evidence: tuple[Evidence, ...] = ()
    warnings: tuple[str, ...] = ()
    dropped: tuple[DroppedFinding, ...] = ()
    """What a model (``--llm``) proposed and the audit refused, each with why (absent from older audits)."""
    llm: LlmRun | None = None
    """With ``--llm``: what the model part did; ``None`` for the rules alone."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _this_schema(cls, data: Any) -> Any:
        """An audit of another schema (a later release's, or a crafted one) is not read as this one."""
        if isinstance(data, dict) and data.get("schema", AUDIT_SCHEMA) != AUDIT_SCHEMA:
            raise ValueError(f"schema {str(data.get('schema'))[:60]!r} is not {AUDIT_SCHEMA!r}")
        return data

    @model_validator(mode="before")
    @classmethod
    def _suggestions_apart(cls, data: Any) -> Any:
        """A model's finding is a suggestion wherever it was put (an audit of an older release kept them among the
        rules' findings, and their steps in the plan): it moves apart, its step goes."""
        if not isinstance(data, dict) or not isinstance(data.get("findings"), list | tuple):
            return data
        model = [f for f in data["findings"] if _by_model(f)]
        plan = data.get("plan")
        steps = plan.get("steps") if isinstance(plan, dict) else getattr(plan, "steps", None)
        kept_steps = [s for s in steps or () if not _by_model(s)]
        if not model and len(kept_steps) == len(steps or ()):
            return data
        out = {**data, "findings": [f for f in data["findings"] if not _by_model(f)]}
        out["suggestions"] = [*(data.get("suggestions") or ()), *model]
        if len(kept_steps) != len(steps or ()):
            out["plan"] = {**plan, "steps": kept_steps} if isinstance(plan, dict) else Plan(steps=tuple(kept_steps))
        return out

    @model_validator(mode="before")
    @classmethod
    def _renamed_areas(cls, data: Any) -> Any:
        """An audit of an older release ran investigators under names since renamed: one run per current area."""
        if not isinstance(data, dict) or not isinstance(data.get("investigators"), list | tuple):
            return data
        runs = data["investigators"]
        if not any(isinstance(r, dict) and isinstance(r.get("area"), str) and r["area"] in RENAMED_AREAS for r in runs):
            return data
        return {**data, "investigators": _current_runs(runs, data.get("findings"))}


def _by_model(item: Any) -> bool:
    """A finding or a plan step a model wrote (as JSON or as an object)."""
    return (item.get("source") if isinstance(item, dict) else getattr(item, "source", None)) == "llm"


_STATUS_RANK = {"done": 0, "cancelled": 1, "timeout": 2, "failed": 3}


def _current_runs(runs: list[Any] | tuple[Any, ...], findings: Any) -> list[Any]:
    """Runs under renamed areas become runs of today's areas: merged (``kernel_params`` and ``kernel_version`` are
    ``kernel``) or split (``nccl_p2p`` is ``p2p`` and ``nccl``), each counting the findings of its own checks."""
    counts: dict[str, int] = {}
    for f in findings if isinstance(findings, list | tuple) else ():
        if isinstance(f, dict) and isinstance(f.get("area"), str):
            area = current_area(f["area"], str(f.get("check", "")))
            counts[area] = counts.get(area, 0) + 1
    out: list[Any] = []
    at: dict[str, int] = {}
    for run in runs:
        if not isinstance(run, dict) or not isinstance(run.get("area"), str) or run["area"] not in RENAMED_AREAS:
            out.append(run)
            continue
        for area in RENAMED_AREAS[str(run["area"])]:
            if area not in at:
                at[area] = len(out)
                out.append({**run, "area": area, "findings": counts.get(area, 0)})
                continue
            merged = out[at[area]]
            worse = max(merged.get("status"), run.get("status"), key=lambda s: _STATUS_RANK.get(str(s), 0))
            errors = [e for e in (merged.get("error"), run.get("error")) if e]
            durations = [d for d in (merged.get("duration_s"), run.get("duration_s")) if isinstance(d, int | float)]
            out[at[area]] = {
                **merged,
                "status": worse,
                "duration_s": sum(durations),
                "error": "; ".join(str(e) for e in errors) or None,
            }
    return out
