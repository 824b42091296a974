"""Audit speed on the seed snapshot: CPU cost of judging, fan-out speed-up (in process and end to end), transcript
recording overhead, end-to-end wall time and memory.

Run: python benchmarks/audit_speed.py [SNAPSHOT_DIR] [--instructions]
Prints figures; docs/performance.md records them. ``--instructions`` also counts the instructions of an audit without
and with a transcript (valgrind, a few minutes): the figure the machine's load does not move. The bytecode of rigaudit
and its dependencies is compiled first (what an installed package has: a fresh copy under PYTHONDONTWRITEBYTECODE
compiles every module at every start).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.tools.hosts.snapshot import SnapshotHost

SEED = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "seed-lxc-8x-rtxpro6000"


def cpu_cost(snapshot: Path, repeats: int = 5) -> tuple[float, float]:
    """(CPU seconds of a whole in-process audit, CPU seconds of the judge step alone), best of N."""
    from rigaudit.agents.registry import all_investigators
    from rigaudit.tools.hosts.probe import Probe

    best_audit = best_judge = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        anyio.run(lambda: run_audit(SnapshotHost(snapshot)))
        best_audit = min(best_audit, time.process_time() - start)
        probe = Probe(SnapshotHost(snapshot))
        investigators = all_investigators()

        async def collect_all() -> list[object]:
            return [await inv.collect(probe) for inv in investigators]

        facts = anyio.run(collect_all)
        start = time.process_time()
        for inv, fact in zip(investigators, facts, strict=True):
            inv.findings(fact)
        best_judge = min(best_judge, time.process_time() - start)
    return best_audit, best_judge


def latency_speedup(snapshot: Path, latency_ms: float = 5.0) -> tuple[float, float]:
    """Wall seconds of the audit with ``latency_ms`` per host operation: default concurrency, then 1."""
    times = []
    for concurrency in (AuditOptions().concurrency, 1):
        host = SnapshotHost(snapshot, latency_s=latency_ms / 1000)
        start = time.perf_counter()
        anyio.run(lambda: run_audit(host, options=AuditOptions(concurrency=concurrency, timeout_s=600)))
        times.append(time.perf_counter() - start)
    return times[0], times[1]


def _audit_argv(snapshot: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "rigaudit", "audit", "--snapshot", str(snapshot), "--no-live", "--json", "/dev/null", *extra]


def fanout_end_to_end(snapshot: Path, latency_ms: float = 5.0, repeats: int = 3) -> tuple[float, float, float]:
    """Best wall seconds of `rigaudit audit --replay-latency-ms 5` as a new process: default concurrency (chosen from
    the measured latency), then --concurrency 1; and the CPU seconds of the default's best run (where the CPU is shared,
    the default run waits for it, not for the reads)."""
    times, cpu = [], 0.0
    for extra in ((), ("--concurrency", "1")):
        best = float("inf")
        for _ in range(repeats if not extra else 1):
            argv = _audit_argv(snapshot, "--no-transcript", "--replay-latency-ms", f"{latency_ms:g}", *extra)
            before = _children_cpu()
            start = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True)
            took, used = time.perf_counter() - start, _children_cpu() - before
            if took < best:
                best, cpu = took, cpu if extra else used
        times.append(best)
    return times[0], times[1], cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def transcript_overhead(snapshot: Path, repeats: int = 5) -> tuple[float, float, int, int]:
    """(CPU seconds of an in-process audit without a transcript, with one, events recorded, reads they hold), best of
    N each, the two interleaved (a change in the machine's load falls on both)."""
    import json
    import tempfile

    from rigaudit.orchestrator.session.core import open_session

    def audit(record: Path | None) -> float:
        start = time.process_time()
        if record is None:
            anyio.run(lambda: run_audit(SnapshotHost(snapshot)))
            return time.process_time() - start
        with open_session("audit", consumers=[], transcript=record, announce=False) as session:
            anyio.run(lambda: run_audit(SnapshotHost(snapshot), emit=session.emit))
        return time.process_time() - start

    audit(None)  # imports and first-use caches out of the figure
    with tempfile.TemporaryDirectory() as folder:
        runs = [(audit(None), audit(Path(folder) / f"t{i}.jsonl")) for i in range(repeats)]
        events = [json.loads(line) for line in (Path(folder) / "t0.jsonl").read_text().splitlines()[1:]]
    reads = sum(len(e["reads"]) if e["type"] == "snapshot_reads" else e["type"] == "tool_call" for e in events)
    return min(w for w, _ in runs), min(t for _, t in runs), len(events), reads


def transcript_overhead_cold(snapshot: Path, repeats: int = 3) -> tuple[float, float]:
    """(CPU seconds of an in-process audit without a transcript, of the first with one), each pair in a new process:
    what one ``rigaudit audit`` pays, nothing of this host's redaction cached yet (imports and event schemas warmed
    first). Best of N each."""
    import json

    argv = [sys.executable, str(Path(__file__).resolve()), "--cold-transcript", str(snapshot)]
    runs = [json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout) for _ in range(repeats)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def _cold_pair(snapshot: Path) -> None:
    """One process's pair for :func:`transcript_overhead_cold`, printed as JSON."""
    import json
    import tempfile

    from rigaudit.orchestrator.session.core import open_session, versions
    from rigaudit.tools.schema.events.session import SessionStarted
    from rigaudit.transcripts.writer import encode_event

    events: list[Any] = []
    anyio.run(lambda: run_audit(SnapshotHost(snapshot)))
    anyio.run(lambda: run_audit(SnapshotHost(snapshot), emit=events.append))  # every event's model built
    encode_event(SessionStarted(command="audit", versions=versions()))  # the writer and redaction imported
    start = time.process_time()
    anyio.run(lambda: run_audit(SnapshotHost(snapshot)))
    without = time.process_time() - start
    with tempfile.TemporaryDirectory() as folder:
        start = time.process_time()
        with open_session("audit", consumers=[], transcript=Path(folder) / "t.jsonl", announce=False) as session:
            anyio.run(lambda: run_audit(SnapshotHost(snapshot), emit=session.emit))
        print(json.dumps([without, time.process_time() - start]))


def transcript_instructions(snapshot: Path) -> tuple[float, float] | None:
    """Millions of instructions (valgrind's callgrind: load-proof) of one in-process audit without a transcript and
    of one with, each in a process warmed by one of each; ``None`` without valgrind. Callgrind counts only inside
    ``exec()``: the measured call runs in one, and so does every import, so a process executing nothing is
    subtracted."""
    import re
    import shutil

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    toggled = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", "--collect-atstart=no"]
    toggled.append("--toggle-collect=builtin_exec")
    counts = []
    for what in ("none", "without", "with"):
        argv = [*toggled, sys.executable, str(Path(__file__).resolve()), "--counted", what, str(snapshot)]
        env = {**os.environ, "PYTHONHASHSEED": "0"}  # the same sets' order, the same work, in each process
        done = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=600, env=env)
        found = re.search(r"Collected : (\d+)", done.stderr)
        if found is None:
            return None
        counts.append(int(found.group(1)) / 1e6)
    return counts[1] - counts[0], counts[2] - counts[0]


def _counted(what: str, snapshot: Path) -> None:
    """One process of :func:`transcript_instructions`: one audit of each kind, then the one counted in ``exec()``."""
    import gc
    import tempfile

    from rigaudit.orchestrator.session.core import open_session

    folder = Path(tempfile.mkdtemp())

    def audit(record: bool) -> None:
        if not record:
            anyio.run(lambda: run_audit(SnapshotHost(snapshot)))
            return
        with open_session("audit", consumers=[], transcript=folder / "t.jsonl", announce=False) as session:
            anyio.run(lambda: run_audit(SnapshotHost(snapshot), emit=session.emit))

    audit(False)
    audit(True)
    gc.collect()  # each counted audit from the same collector's state (a full collection costs 60-80 M)
    exec({"none": "pass", "without": "audit(False)", "with": "audit(True)"}[what])  # counted: callgrind's toggle


def transcript_costs(snapshot: Path) -> dict[str, Any]:
    """Where a transcript's CPU goes, in a new process, as its writer encodes the events: the lines without
    redaction (dump and JSON), the lines the first time (nothing redacted before: what one ``rigaudit audit`` pays)
    with the costliest events, and the lines again (every text's redaction kept)."""
    import json

    argv = [sys.executable, str(Path(__file__).resolve()), "--costs", str(snapshot)]
    return dict(json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout))


def _costs(snapshot: Path) -> None:
    """:func:`transcript_costs` in this process, printed as JSON."""
    import json

    from rigaudit.tools.schema.events.audit import SnapshotReads, ToolCall
    from rigaudit.transcripts.reuse import RedactedParts
    from rigaudit.transcripts.writer import encode_event

    events: list[Any] = []
    anyio.run(lambda: run_audit(SnapshotHost(snapshot), emit=events.append))
    recorded = [e for e in events if not e.display_only]
    start = time.process_time()
    [encode_event(e, redact=False) for e in recorded]
    encoding = time.process_time() - start
    costs, parts, reads = [], RedactedParts(), 0.0
    start = time.process_time()
    for event in recorded:
        began = time.process_time()
        encode_event(event, parts=parts)
        took = time.process_time() - began
        read = isinstance(event, (ToolCall, SnapshotReads))
        reads += took if read else 0.0
        what = f"{event.op} {event.target}" if isinstance(event, ToolCall) else event.type
        costs.append((took, f"{what} {event.area}" if isinstance(event, SnapshotReads) else what))
    first = time.process_time() - start
    start = time.process_time()
    parts = RedactedParts()
    [encode_event(e, parts=parts) for e in recorded]
    again = time.process_time() - start
    print(
        json.dumps(
            {"encoding": encoding, "first": first, "again": again, "reads": reads, "costliest": sorted(costs, reverse=True)[:3]}
        )
    )


def end_to_end(snapshot: Path, repeats: int = 3) -> tuple[float, float]:
    """(best wall seconds, peak RSS MiB) of `rigaudit audit --snapshot` as a new process."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "orchestrator",
                "audit",
                "--snapshot",
                str(snapshot),
                "--no-live",
                "--no-transcript",
                "--json",
                "/dev/null",
            ],
            check=True,
            capture_output=True,
        )
        best = min(best, time.perf_counter() - start)
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return best, peak_kib / 1024


def main() -> None:
    if sys.argv[1:2] == ["--cold-transcript"]:
        _cold_pair(Path(sys.argv[2]))
        return
    if sys.argv[1:2] == ["--costs"]:
        _costs(Path(sys.argv[2]))
        return
    if sys.argv[1:2] == ["--counted"]:
        _counted(sys.argv[2], Path(sys.argv[3]))
        return
    counting = "--instructions" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--instructions"]
    snapshot = Path(args[0]) if args else SEED
    from gate_speed import compile_bytecode  # the sibling script: the processes below start as an installed one does

    print(f"bytecode compiled in {compile_bytecode()} packages (rigaudit and its dependencies, where writable)", flush=True)
    audit_cpu, judge_cpu = cpu_cost(snapshot)
    print(f"cpu: whole in-process audit {audit_cpu:.3f} s, judging alone {judge_cpu * 1000:.1f} ms")
    fast, slow = latency_speedup(snapshot)
    print(f"5 ms per host op: default concurrency {fast:.2f} s, --concurrency 1 {slow:.2f} s, speed-up {slow / fast:.1f}x")
    auto, one, auto_cpu = fanout_end_to_end(snapshot)
    print(
        f"end to end at 5 ms per host op: default {auto:.2f} s ({auto_cpu:.2f} s CPU), --concurrency 1 {one:.2f} s, "
        f"speed-up {one / auto:.1f}x"
    )
    without, with_transcript, events, reads = transcript_overhead(snapshot)
    extra = with_transcript - without
    print(
        f"transcript: {without:.3f} s CPU without, {with_transcript:.3f} s with ({events} events, {reads} reads): "
        f"+{extra / without:.0%}, {extra / max(reads, 1) * 1e6:.1f} µs a read"
    )
    cold_without, cold_with = transcript_overhead_cold(snapshot)
    print(
        f"  a new process's first audit: {cold_without:.3f} s CPU without, {cold_with:.3f} s with: "
        f"+{(cold_with - cold_without) / cold_without:.0%}"
    )
    costs = transcript_costs(snapshot)
    heaviest = ", ".join(f"{what} {took * 1000:.1f} ms" for took, what in costs["costliest"])
    print(
        f"  its lines as the writer makes them: {costs['encoding'] * 1000:.0f} ms unredacted, {costs['first'] * 1000:.0f} ms "
        f"redacted the first time ({costs['reads'] * 1000:.0f} ms of it the reads; costliest: {heaviest}), "
        f"{costs['again'] * 1000:.0f} ms again (every text's redaction kept)"
    )
    counted = transcript_instructions(snapshot) if counting else None
    if counted is not None:
        print(
            f"  instructions (callgrind) of one audit without / with: {counted[0]:.0f} M / {counted[1]:.0f} M: "
            f"+{(counted[1] - counted[0]) / counted[0]:.1%}"
        )
    wall, peak = end_to_end(snapshot)
    print(f"end to end (process start included): {wall:.2f} s, peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main()
