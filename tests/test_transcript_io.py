"""Transcript writing and reading: round trip, header, crash prefix, garbage, migration, redaction."""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path

import pytest

from rigaudit.tools.redact import REDACTED, redact_text
from rigaudit.tools.schema.audit import AuditResult, HostSummary, InvestigatorRun
from rigaudit.tools.schema.check import CheckResult, GateCheck
from rigaudit.tools.schema.events.apply import (
    AppliedStep,
    ApplyFinished,
    ApprovalDecided,
    ChangeApplied,
    RestoredGroup,
    RollbackFinished,
)
from rigaudit.tools.schema.events.audit import (
    AuditFinished,
    FindingReported,
    InvestigatorActivity,
    InvestigatorFinished,
    InvestigatorStarted,
    PcieDevice,
    PlanReady,
    SnapshotReads,
    SnapshotReferenced,
    ToolCall,
    TopologyReported,
)
from rigaudit.tools.schema.events.bench import BenchResultReported, BenchTable
from rigaudit.tools.schema.events.chat import LlmExchange, Message, ReplyStreamed
from rigaudit.tools.schema.events.fleet import (
    FleetFinished,
    FleetStarted,
    HostAudited,
    HostCollected,
    HostConnecting,
    HostFailed,
    HostFailure,
)
from rigaudit.tools.schema.events.gate import GateReported
from rigaudit.tools.schema.events.session import (
    Output,
    Progress,
    ReportWritten,
    SessionEnded,
    SessionStarted,
    SnapshotWritten,
    Warning_,
)
from rigaudit.tools.schema.events.union import Event
from rigaudit.tools.schema.finding import Finding, Fix, SysctlAction
from rigaudit.tools.schema.plan import Plan, PlanStep
from rigaudit.transcripts.errors import TranscriptError
from rigaudit.transcripts.format import CURRENT_FORMAT, CURRENT_VERSION
from rigaudit.transcripts.reader import KNOWN_TYPES, read_transcript
from rigaudit.transcripts.writer import TranscriptWriter
from tests.support.query_events import query_events

FINDING = Finding(
    check="numa.balancing",
    area="numa",
    status="problem",
    severity="medium",
    title="Automatic NUMA balancing is on",
    subjects=("cpu0-127",),
    observed="kernel.numa_balancing=1",
    expected="kernel.numa_balancing=0",
    fix=Fix(
        kind="runtime", where="hypervisor", summary="turn it off", actions=(SysctlAction(key="kernel.numa_balancing", value="0"),)
    ),
)
PLAN = Plan(steps=(PlanStep(id="S1", check="numa.balancing", priority="P1", kind="runtime", where="host", title="NUMA"),))
RESULT = AuditResult(
    host=HostSummary(name="pve-gpu01", source="snapshot:seed", facts={"kernel": "6.8"}),
    started_at="2026-11-29T18:00:00Z",
    duration_s=0.5,
    investigators=(InvestigatorRun(area="numa", status="done", duration_s=0.1, findings=1),),
    findings=(FINDING,),
    plan=PLAN,
)


def every_event() -> list[Event]:
    """One event of each type, with non-default values."""
    t = 1_780_000_000.125
    return [
        SessionStarted(
            t=t, command="audit", versions={"rigaudit": "0.1.0"}, host="h", source="local", options={"areas": ["numa"]}
        ),
        InvestigatorStarted(t=t + 1, area="numa", title="NUMA"),
        InvestigatorActivity(t=t + 2, area="numa", ref="file:/proc/sys/kernel/numa_balancing"),
        ToolCall(
            t=t + 3, area="numa", op="read", target="/proc/x", result={"data_b64": base64.b64encode(b"\x00\xff1\n").decode()}
        ),
        SnapshotReferenced(t=t + 3.25, path="/snapshots/h", manifest="ab" * 32),
        ToolCall(t=t + 3.5, area="numa", op="read", target="/proc/y", result={"digest": "cd" * 16}),
        SnapshotReads(
            t=t + 3.75, area="numa", reads=(("read", "/proc/z", (), "ef" * 16), ("nvml", "nvmlDeviceGetCount", (0,), "01" * 16))
        ),
        InvestigatorFinished(t=t + 4, area="numa", status="failed", duration_s=0.25, error="boom", counts={"problem": 1}),
        FindingReported(t=t + 5, finding=FINDING),
        PlanReady(t=t + 6, plan=PLAN),
        AuditFinished(t=t + 7, result=RESULT),
        LlmExchange(
            t=t + 8,
            agent="numa",
            request={"messages": [{"role": "user", "content": "hi"}]},
            response={"x": 1},
            usage={"prompt_tokens": 12},
        ),
        ApprovalDecided(t=t + 9, step_id="S1", decision="yes", who="alice", plan_hash="abc", note="ok"),
        ChangeApplied(t=t + 10, step_id="S1", target="/proc/sys/kernel/numa_balancing", before="1", after="0", verified=True),
        BenchResultReported(
            t=t + 11,
            kind="p2p",
            summary="52 GB/s",
            data={"gbps": 52.0},
            tables=[BenchTable(title="P2P", headers=["pair", "GB/s"], rows=[["0->1", "52.0"]])],
            notes=["GPU0: H200"],
        ),
        Progress(t=t + 11.2, label="c=4", done=3, total=8),
        TopologyReported(
            t=t + 11.3,
            devices=[PcieDevice(bdf="pci0000:00", kind="root"), PcieDevice(bdf="0000:00:06.0", kind="gpu", parent="pci0000:00")],
        ),
        Output(t=t + 11.4, text="Successful requests: 8"),
        GateReported(
            t=t + 11.5,
            result=CheckResult(
                verdict="problem",
                exit_code=1,
                reason="pcie.link_width: GPU0 x8 of x16",
                host="h",
                source="snapshot:/s",
                started_at="2026-01-01T00:00:00Z",
                finished_at=t + 11.5,
                duration_s=0.4,
                fail_on="high",
                deadline_s=20.0,
                checks=(GateCheck(check="pcie.link_width", area="pcie", status="problem", severity="high", counts=True),),
                audit=RESULT,
            ),
            verbose=True,
        ),
        ApplyFinished(
            t=t + 11.6,
            host="h",
            source="snapshot:/s",
            plan_hash="abc",
            steps=[AppliedStep(step_id="S1", status="applied", changes=[("numa: 1 -> 0", "verified")])],
            journal="/j.jsonl",
            undo="rigaudit rollback /j.jsonl",
            reaudit={"numa.balancing": "ok"},
            reaudited="/copy",
        ),
        FleetStarted(t=t + 11.81, targets=["a", "b"], kind="ssh"),
        HostConnecting(t=t + 11.82, target="a"),
        HostCollected(t=t + 11.83, target="a", mode="installed", size_bytes=2048, seconds=0.5),
        HostAudited(t=t + 11.84, target="a", problems=2, seconds=0.25),
        HostFailed(t=t + 11.85, target="b", stage="connect", error="no route"),
        FleetFinished(
            t=t + 11.86,
            kind="ssh",
            hosts=2,
            audited=1,
            failures=[HostFailure(target="b", stage="connect", error="no route")],
            outliers=["a: x differs"],
            fixes=1,
        ),
        RollbackFinished(
            t=t + 11.8,
            journal="/j.jsonl",
            host="h",
            source="snapshot:/s",
            groups=[RestoredGroup(step_id="S1", outcome="restored", what="numa", text="restored 1")],
            restored=1,
        ),
        SnapshotWritten(t=t + 11.9, kind="share bundle", path="/tmp/b.tar.gz", summary="3 files -> /tmp/b.tar.gz", details=["x"]),
        ReportWritten(t=t + 12, path="/tmp/r.md", section="plan"),
        *query_events(t + 12.5, RESULT),
        Message(t=t + 13, role="assistant", text="done"),
        ReplyStreamed(t=t + 13.5, text="do"),
        Warning_(t=t + 14, text="careful"),
        SessionEnded(t=t + 15, exit_code=3, reason="problems"),
    ]


def write(path: Path, events: list[Event]) -> Path:
    with TranscriptWriter(path) as writer:
        for event in events:
            writer(event)
    return path


def test_a_display_only_ping_is_not_recorded_and_still_read(tmp_path: Path) -> None:
    ping = InvestigatorActivity(t=1.0, area="numa", ref="file:/proc/x")
    path = write(tmp_path / "t.jsonl", [ping, Warning_(t=2.0, text="kept")])
    assert [e.type for e in read_transcript(path).events] == ["warning"]
    path.write_text(path.read_text() + ping.model_dump_json() + "\n")  # an older transcript holds such pings
    assert [e.type for e in read_transcript(path).events] == ["warning", "investigator_activity"]


def test_every_event_type_round_trips(tmp_path: Path) -> None:
    events = every_event()
    assert {e.type for e in events} == KNOWN_TYPES  # the list above covers every type
    transcript = read_transcript(write(tmp_path / "t.jsonl", events))
    assert transcript.events == [e for e in events if not e.display_only]
    assert transcript.warnings == [] and not transcript.truncated
    assert transcript.version == CURRENT_VERSION and transcript.header["transcript"] == CURRENT_FORMAT
    assert transcript.session is not None and transcript.session.command == "audit"
    assert transcript.ended is not None and transcript.ended.exit_code == 3
    assert transcript.duration_s == pytest.approx(15.0)


def test_header_first_and_one_flushed_line_per_event(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TranscriptWriter(path)
    writer(SessionStarted(command="audit"))
    writer(Warning_(text="x"))
    # Flushed before close: another reader sees both events now.
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["transcript"] == CURRENT_FORMAT
    assert [json.loads(line)["type"] for line in lines[1:]] == ["session_started", "warning"]
    writer.close()
    writer(Warning_(text="after close"))  # ignored, not an error
    assert len(path.read_text().splitlines()) == 3
    assert path.stat().st_mode & 0o077 == 0


def test_writer_is_thread_safe(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TranscriptWriter(path, fsync=True)

    def burst(n: int) -> None:
        for i in range(50):
            writer(Message(role="user", text=f"{n}-{i}" * 50))

    threads = [threading.Thread(target=burst, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    transcript = read_transcript(path)
    assert len(transcript.events) == 200 and transcript.warnings == []


def test_truncated_last_line_replays_the_prefix_with_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", every_event())
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) - 20])  # the crash cut the last event mid-line
    transcript = read_transcript(path)
    assert transcript.truncated
    assert transcript.events == [e for e in every_event() if not e.display_only][:-1]
    assert len(transcript.warnings) == 1 and "cut short" in transcript.warnings[0]


@pytest.mark.parametrize(
    "content",
    [b"", b"hello world\n", b"\x89PNG\r\n\x1a\n\x00\x00binary", b'{"format": "rigaudit.snapshot/1"}\n', b"[1, 2]\n"],
)
def test_garbage_is_not_a_transcript(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(content)
    with pytest.raises(TranscriptError) as err:
        read_transcript(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_missing_file_and_directory_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="no such transcript"):
        read_transcript(tmp_path / "nope.jsonl")
    with pytest.raises(TranscriptError, match="directory"):
        read_transcript(tmp_path)


def test_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"transcript": "rigaudit.transcript/9"}\n{"type": "warning", "t": 1, "text": "x"}\n')
    with pytest.raises(TranscriptError, match="newer"):
        read_transcript(path)


def test_unknown_and_invalid_events_are_skipped_with_warnings(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = [
        {"transcript": CURRENT_FORMAT},
        {"type": "session_started", "t": 1.0, "command": "audit"},
        {"type": "hologram", "t": 2.0, "beam": 1},
        {"type": "hologram", "t": 2.5},
        {"type": "approval", "t": 3.0, "step_id": "S1", "decision": "maybe", "who": "x", "plan_hash": "h"},
        {"type": "session_ended", "t": 4.0},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n{not json\n")
    transcript = read_transcript(path)
    assert [e.type for e in transcript.events] == ["session_started", "session_ended"]
    assert transcript.skipped == 4 and not transcript.truncated
    text = "\n".join(transcript.warnings)
    assert "2 event(s) of unknown type 'hologram'" in text
    assert "line 5: invalid 'approval' event" in text and "decision" in text
    assert "line 7: damaged line" in text


def test_version_0_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    lines = [
        {"transcript": "rigaudit.transcript/0", "started": "2025-01-01"},
        {"kind": "session_started", "ts": 10.0, "command": "audit", "host": "old-host"},
        {
            "kind": "tool_call",
            "ts": 11.0,
            "area": "numa",
            "op": "read",
            "target": "/proc/sys/kernel/numa_balancing",
            "result": {"text": "1\n"},
        },
        {"kind": "finding_reported", "ts": 12.0, "finding": FINDING.model_dump(mode="json")},
        {"kind": "session_ended", "ts": 13.0},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    transcript = read_transcript(path)
    assert transcript.version == 0 and transcript.warnings == []
    session, call, finding, ended = transcript.events
    assert isinstance(session, SessionStarted) and session.host == "old-host" and session.t == 10.0
    assert isinstance(call, ToolCall) and base64.b64decode(call.result["data_b64"]) == b"1\n"
    assert isinstance(finding, FindingReported) and finding.finding == FINDING
    assert isinstance(ended, SessionEnded) and ended.t == 13.0


CONFIG = b"\xde\x10\x00\x2c" + b"API_KEY=abcdef\x00" + bytes(range(256))


def test_secrets_are_redacted_in_the_file(tmp_path: Path) -> None:
    environ = b"PATH=/usr/bin\x00HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz\x00NCCL_P2P_LEVEL=SYS\x00"
    events: list[Event] = [
        ToolCall(op="read", target="/proc/1/environ", result={"data_b64": base64.b64encode(environ).decode()}),
        ToolCall(
            op="run",
            target="ps -eww",
            args=["ps", "-eww"],
            result={
                "stdout": "python -m sglang --api-key sk-live0123456789abcdef --tp-size 8 OPENAI_API_KEY=xyz NCCL_P2P_LEVEL=SYS\n"
            },
        ),
        LlmExchange(
            agent="numa",
            request={"headers": {"Authorization": "Bearer abc.def.ghi"}, "api_key": "sk-zzzzzzzzzzzz", "max_tokens": 512},
            response={"text": "set DB_PASSWORD=hunter2 then retry"},
            usage={"prompt_tokens": 10},
        ),
        FindingReported(finding=FINDING),
        ToolCall(
            op="read", target="/sys/bus/pci/devices/0000:41:00.0/config", result={"data_b64": base64.b64encode(CONFIG).decode()}
        ),
    ]
    path = write(tmp_path / "t.jsonl", events)
    text = path.read_text()
    for secret in ("hf_abcdefghijklmnop", "sk-live0123", "xyz", "abc.def.ghi", "sk-zzzz", "hunter2"):
        assert secret not in text, secret
    read, run, llm, finding, config = read_transcript(path).events
    assert isinstance(read, ToolCall)
    data = base64.b64decode(read.result["data_b64"])
    assert data == b"PATH=/usr/bin\x00HF_TOKEN=<redacted>\x00NCCL_P2P_LEVEL=SYS\x00"
    assert isinstance(run, ToolCall) and "--tp-size 8" in run.result["stdout"] and "NCCL_P2P_LEVEL=SYS" in run.result["stdout"]
    assert isinstance(llm, LlmExchange) and llm.request["max_tokens"] == 512 and llm.usage == {"prompt_tokens": 10}
    assert finding == events[3]  # a sysctl action's "key" is not a secret
    assert config == events[4]  # binary files are never rewritten, even where bytes spell KEY=


def test_redact_text_leaves_ordinary_settings_alone() -> None:
    assert redact_text("kernel.numa_balancing=1 iommu=pt --tp 8") == "kernel.numa_balancing=1 iommu=pt --tp 8"
    assert redact_text("export AWS_SECRET_ACCESS_KEY=a b c\nX=1") == f"export AWS_SECRET_ACCESS_KEY={REDACTED}\nX=1"
    assert redact_text('{"token": "abc"}') == f'{{"token": "{REDACTED}"}}'
