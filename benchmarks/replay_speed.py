"""How long replaying a 100,000-event transcript takes with ``--no-live`` at full speed (budget: 5 s).

Generates a transcript shaped like a long audit session (mostly tool calls and board activity,
investigators starting and finishing, findings, a plan, an audit result) in a temporary folder,
then times ``rigaudit replay FILE --no-live`` in-process (read, parse, feed the terminal UI).

    /work/venv/bin/python benchmarks/replay_speed.py [--events N]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

from rigaudit.orchestrator.cli import main
from rigaudit.tools.schema.audit import AuditResult, HostSummary
from rigaudit.tools.schema.events.audit import (
    AuditFinished,
    FindingReported,
    InvestigatorActivity,
    InvestigatorFinished,
    InvestigatorStarted,
    PlanReady,
    ToolCall,
)
from rigaudit.tools.schema.events.session import SessionEnded, SessionStarted
from rigaudit.tools.schema.events.union import Event
from rigaudit.tools.schema.finding import Finding
from rigaudit.tools.schema.plan import Plan
from rigaudit.transcripts.reader import read_transcript
from rigaudit.transcripts.writer import TranscriptWriter

AREAS = ("firmware", "kernel", "numa", "pcie", "driver", "gpu", "power", "p2p", "nccl")
BUDGET_S = 5.0


def _events(count: int) -> list[Event]:
    t0 = 1_780_000_000.0
    config = base64.b64encode(bytes(range(256))).decode("ascii")
    findings = [
        Finding(check=f"{area}.check{i}", area=area, status="ok", title=f"{area} check {i}", observed="fine")  # type: ignore[arg-type]
        for area in AREAS
        for i in range(3)
    ]
    events: list[Event] = [SessionStarted(t=t0, command="audit", host="bench-host", source="snapshot:bench")]
    n = 0
    while len(events) < count - len(findings) - 4:
        area = AREAS[n % len(AREAS)]
        if n % 500 == 0:
            events.append(InvestigatorStarted(t=t0 + n * 1e-4, area=area, title=area))
        ref = f"/sys/bus/pci/devices/0000:{n % 256:02x}:00.0/config"
        events.append(InvestigatorActivity(t=t0 + n * 1e-4, area=area, ref=f"file:{ref}"))
        if n % 3 == 2:
            argv = ["lspci", "-vvv", "-s", f"{n % 256:02x}:00.0"]
            result = {"exit_code": 0, "stdout": "LnkSta: Speed 32GT/s, Width x16\n" * 4, "stderr": "", "duration_s": 0.01}
            events.append(ToolCall(t=t0 + n * 1e-4, area=area, op="run", target=" ".join(argv), args=argv, result=result))
        else:
            events.append(ToolCall(t=t0 + n * 1e-4, area=area, op="read", target=ref, result={"data_b64": config}))
        if n % 500 == 499:
            events.append(InvestigatorFinished(t=t0 + n * 1e-4, area=area, status="done", duration_s=0.05, counts={"ok": 3}))
        n += 1
    end = t0 + n * 1e-4
    events.extend(FindingReported(t=end, finding=f) for f in findings)
    events.append(PlanReady(t=end, plan=Plan()))
    audit = AuditResult(
        host=HostSummary(name="bench-host", source="snapshot:bench"), started_at="", duration_s=1.0, findings=tuple(findings)
    )
    events.append(AuditFinished(t=end, result=audit))
    events.append(SessionEnded(t=end))
    return events


def run(count: int) -> float:
    with tempfile.TemporaryDirectory(prefix="rigaudit-bench-") as tmp:
        path = Path(tmp) / "bench.jsonl"
        started = time.perf_counter()
        with TranscriptWriter(path) as writer:
            for event in _events(count):
                writer(event)
        written = time.perf_counter() - started
        size = path.stat().st_size
        started = time.perf_counter()
        parsed = len(read_transcript(path).events)
        read_s = time.perf_counter() - started
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["replay", str(path), "--no-live"])
        replay_s = time.perf_counter() - started
    print(f"generated and wrote {parsed} events ({size / 1e6:.1f} MB) in {written:.2f} s")
    print(f"read + parse: {read_s:.2f} s")
    print(f"rigaudit replay --no-live: {replay_s:.2f} s (exit {code}; budget {BUDGET_S:.0f} s)")
    return replay_s


def _main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000)
    args = parser.parse_args()
    return 0 if run(args.events) < BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(_main())
