"""One event of each query command (diff, checks, policy, schema, transcripts, replay --rediagnose), for round trips
and drawing."""

from __future__ import annotations

from rigaudit.tools.schema.audit import AuditResult, HostSummary
from rigaudit.tools.schema.events.catalog import CheckEntry, ChecksListed, PolicyListed, PolicyRule, PolicyVerdict, SchemaShown
from rigaudit.tools.schema.events.diff import (
    DiffFindingChange,
    DiffFindings,
    DiffReported,
    DiffSide,
    DiffValueChange,
    DiffValues,
    DiffVerdict,
    RediagnoseFinished,
)
from rigaudit.tools.schema.events.transcripts import (
    EventLine,
    TranscriptEntry,
    TranscriptsFolder,
    TranscriptShown,
    TranscriptsListed,
)
from rigaudit.tools.schema.events.union import Event

CHANGE = DiffFindingChange(
    kind="appeared",
    check="numa.balancing",
    area="numa",
    detail="ok -> problem (medium)",
    a=DiffVerdict(status="ok", title="NUMA"),
    b=DiffVerdict(status="problem", severity="medium", title="NUMA", observed="1", subjects=["cpu0"]),
)


def query_events(t: float, result: AuditResult | None = None) -> list[Event]:
    """One event of each query command (diff, checks, policy, schema, transcripts, replay --rediagnose), at ``t``;
    ``result`` is the re-diagnosis' audit (a host with no findings by default)."""
    result = result or AuditResult(
        host=HostSummary(name="h", source="snapshot:/kept"), started_at="2026-01-01T00:00:00Z", duration_s=0.5
    )
    return [
        DiffReported(
            t=t,
            a=DiffSide(path="/a", kind="snapshot", host="h1"),
            b=DiffSide(path="/b.json", kind="audit"),
            different=True,
            headline=["driver 1 -> 2"],
            facts_compared=True,
            findings=DiffFindings(changes=[CHANGE], counts={"appeared": 1}, unchanged=4),
            values=DiffValues(
                compared=True,
                compared_count=9,
                counts={"changed": 1, "only_a": 0, "only_b": 0, "volatile": 0},
                changes=[DiffValueChange(kind="file", ref="file:/x", change="changed", detail="1 -> 0", diff="-1\n+0")],
            ),
            warnings=["w"],
            rows=3,
        ),
        ChecksListed(
            t=t,
            checks=[
                CheckEntry(check="numa.balancing", area="numa", title="T", reads="r", problem="p", fix="f", fix_kinds=["runtime"])
            ],
            form="markdown",
        ),
        PolicyVerdict(t=t, line="nvidia-smi -pm 1", decision="deny", reason="changes GPU state", rule="nvidia-smi-state"),
        PolicyListed(t=t, rules=[PolicyRule(name="empty", decision="deny", description="empty command")]),
        SchemaShown(t=t, name="rigaudit.audit/1", document={"title": "AuditResult", "type": "object"}),
        TranscriptsListed(
            t=t,
            folder="/state",
            entries=[
                TranscriptEntry(file="a.jsonl", started="2026-01-01 00:00", command="audit", host="h", events=3),
                TranscriptEntry(file="b.jsonl", error="not a rigaudit transcript"),
            ],
        ),
        TranscriptsFolder(t=t, path="/state/rigaudit/transcripts"),
        TranscriptShown(
            t=t,
            path="/a.jsonl",
            format="rigaudit.transcript/2",
            command="audit",
            host="h",
            options={"areas": ["numa"]},
            exit_code=3,
            counts=[("finding", 2)],
            investigators=[("numa", "done")],
            findings=2,
            problems=[("numa.balancing", "medium")],
            plan_steps=1,
            llm_usage={"prompt_tokens": 3},
            listing=[EventLine(after_s=0.5, type="finding", text="numa.balancing: problem")],
        ),
        RediagnoseFinished(
            t=t,
            transcript="/a.jsonl",
            what="audit of h",
            recorded_at=t - 60,
            audit=2,
            rebuild="3 files",
            warnings=["w"],
            mismatches=["m"],
            saved="/kept",
            recorded=2,
            changes=[CHANGE],
            result=result,
        ),
    ]
