"""What rigaudit shows of itself: its check catalog, its command policy (the rules, a verdict on a line), a schema."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.schema.events.base import BaseEvent
from rigaudit.tools.schema.finding import FixKind


class PremiseEntry(BaseModel):
    """A premise of a check: a fact its verdict rests on, and what reads it."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    reads: str


class CheckEntry(BaseModel):
    """One check of the catalog, as ``rigaudit checks --json`` writes it."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    check: str = Field(pattern=r"^[a-z][a-z0-9]*\.[a-z0-9_]+$")
    area: str
    title: str
    reads: str
    problem: str
    fix: str
    fix_kinds: list[FixKind] = Field(default_factory=list)
    premises: list[PremiseEntry] = Field(default_factory=list)
    layer: Literal["node", "workload"] = "node"
    """Whose fault a problem of it is: the node's, or the workload's (``rigaudit check`` never drains on those)."""


class ChecksListed(BaseEvent):
    """The check catalog (``rigaudit checks``), shown as a table, as JSON (``--json``) or as docs/checks.md."""

    verbatim: ClassVar[bool] = True
    type: Literal["checks_listed"] = "checks_listed"
    checks: list[CheckEntry] = Field(default_factory=list)
    form: Literal["table", "json", "markdown"] = "table"


class PolicyVerdict(BaseEvent):
    """A command line vetted by the command policy (``rigaudit policy check``); nothing was run."""

    type: Literal["policy_verdict"] = "policy_verdict"
    line: str
    decision: Literal["allow", "ask", "deny"]
    reason: str
    rule: str = ""
    """The rule that decided."""


class PolicyRule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    decision: Literal["allow", "ask", "deny"]
    description: str


class PolicyListed(BaseEvent):
    """The command policy's rules, then its fallbacks (``rigaudit policy list``)."""

    verbatim: ClassVar[bool] = True
    type: Literal["policy_listed"] = "policy_listed"
    rules: list[PolicyRule] = Field(default_factory=list)


class SchemaShown(BaseEvent):
    """A JSON schema (``rigaudit schema``: the audit result's)."""

    verbatim: ClassVar[bool] = True
    type: Literal["schema_shown"] = "schema_shown"
    name: str
    """``rigaudit.audit/1``."""
    document: dict[str, Any] = Field(default_factory=dict)
