"""The agent's final answer (``report_findings``): its JSON schema, parsing, validation, and the findings it yields.

What a model may add is deliberately narrower than a rule's finding: a fix it proposes is a
description (kind, where, summary, risk, verify, revert) with no typed actions, so nothing a model
writes can ever be executed by ``apply``; a person reads it and decides.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rigaudit.tools.files.bounded import loads
from rigaudit.tools.schema.finding import Finding, Fix

CHECK_ID = r"^[a-z][a-z0-9_]*\.[a-z0-9_.]+$"
MAX_FINDINGS = 8


class ProposedFix(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["runtime", "restart", "reboot", "firmware", "hardware"]
    where: Literal["host", "hypervisor", "container"]
    summary: str = Field(min_length=1, max_length=400)
    risk: Literal["low", "medium", "high"] = "medium"
    verify: str = Field(default="", max_length=400)
    revert: str = Field(default="", max_length=400)


class ProposedFinding(BaseModel):
    """One finding as a model reports it: a rule's check (to add an explanation) or a new check."""

    model_config = ConfigDict(extra="forbid")

    check: str = Field(pattern=CHECK_ID, max_length=80)
    status: Literal["ok", "problem", "unknown", "not_applicable"]
    severity: Literal["critical", "high", "medium", "low"] | None = None
    title: str = Field(default="", max_length=200)
    subjects: list[str] = Field(default_factory=list, max_length=32)
    observed: str = Field(default="", max_length=1200)
    expected: str = Field(default="", max_length=600)
    explanation: str = Field(default="", max_length=1500)
    evidence: list[str] = Field(default_factory=list, max_length=24)
    fix: ProposedFix | None = None

    @model_validator(mode="after")
    def _severity_for_problems(self) -> ProposedFinding:
        if self.status == "problem" and self.severity is None:
            raise ValueError(f"{self.check}: a problem needs a severity (critical, high, medium or low)")
        if self.status != "problem" and self.severity is not None:
            raise ValueError(f"{self.check}: only a problem has a severity (status is {self.status})")
        return self


class FindingsReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    findings: list[ProposedFinding] = Field(max_length=MAX_FINDINGS)


_STR = {"type": "string"}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "findings": {
            "type": "array",
            "maxItems": MAX_FINDINGS,
            "items": {
                "type": "object",
                "properties": {
                    "check": _STR,
                    "status": {"enum": ["ok", "problem", "unknown", "not_applicable"]},
                    "severity": {"enum": ["critical", "high", "medium", "low", None]},
                    "title": _STR,
                    "subjects": {"type": "array", "items": _STR},
                    "observed": _STR,
                    "expected": _STR,
                    "explanation": _STR,
                    "evidence": {"type": "array", "items": _STR},
                    "fix": {
                        "type": ["object", "null"],
                        "properties": {
                            "kind": {"enum": ["runtime", "restart", "reboot", "firmware", "hardware"]},
                            "where": {"enum": ["host", "hypervisor", "container"]},
                            "summary": _STR,
                            "risk": {"enum": ["low", "medium", "high"]},
                            "verify": _STR,
                            "revert": _STR,
                        },
                        "required": ["kind", "where", "summary"],
                        "additionalProperties": False,
                    },
                },
                "required": ["check", "status", "evidence"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["findings"],
    "additionalProperties": False,
}
"""The compact schema sent to the model (as ``response_format`` and as the ``report_findings`` tool)."""

RESPONSE_FORMAT: dict[str, Any] = {"name": "report_findings", "schema": SCHEMA}

_UNSAFE = re.compile(r"[^\w-]")
"""What a key named in an error may not hold (markup, links, spaces: a model's key is its own text)."""
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """The JSON object in a model's answer: bare, in a ```json fence, or between the first ``{`` and the last ``}``."""
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    error: json.JSONDecodeError | None = None
    for candidate in candidates:
        try:
            return loads(candidate)
        except json.JSONDecodeError as exc:
            error = error or exc
    raise ValueError(f"not JSON ({error.msg} at char {error.pos})" if error else "no JSON object in the answer")


def parse_report(payload: str | Any) -> FindingsReport:
    """Validate an answer (text or decoded JSON); raises ``ValueError`` with a message for the model."""
    data = extract_json(payload) if isinstance(payload, str) else payload
    if isinstance(data, list):
        data = {"findings": data}
    try:
        return FindingsReport.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{_where(e['loc'])}: {e['msg']}" for e in exc.errors()[:6])
        raise ValueError(f"{exc.error_count()} validation error(s): {problems}") from None


def _where(loc: tuple[int | str, ...]) -> str:
    """Where in the answer an error is (``findings.0.confidence``). A key the schema does not have is the model's
    own text and goes on to warnings, the board and the report: only its word characters are kept, at most 40."""
    return ".".join(_UNSAFE.sub("", str(part))[:40] or "?" for part in loc) or "answer"


def to_findings(report: FindingsReport, area: str, rule_findings: list[Finding]) -> list[Finding]:
    """The report as :class:`Finding` objects of ``area``, as the model stated them (``source: "llm"``);
    the audit then weighs them against the rules' (:func:`rigaudit.agents.brain.merge_refinement`), which
    keeps every rule finding as the rules judged it, keeps what it accepts apart as suggestions, and says
    what it refused."""
    titles = {f.check: f.title for f in rule_findings}
    out: list[Finding] = []
    for item in report.findings:
        fix = None
        if item.fix is not None:
            fix = Fix(
                kind=item.fix.kind,
                where=item.fix.where,
                summary=item.fix.summary,
                risk=item.fix.risk,
                verify=item.fix.verify,
                revert=item.fix.revert,
            )
        out.append(
            Finding(
                check=item.check,
                area=area,
                status=item.status,
                severity=item.severity,
                title=item.title or titles.get(item.check, item.check),
                subjects=tuple(item.subjects),
                observed=item.observed,
                expected=item.expected,
                explanation=item.explanation,
                evidence=tuple(item.evidence),
                fix=fix,
                source="llm",
            )
        )
    return out
