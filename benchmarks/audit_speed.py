"""Audit speed on the seed snapshot: CPU cost of judging, fan-out speed-up, end-to-end wall time and memory.

Run: python benchmarks/audit_speed.py [SNAPSHOT_DIR]
Prints figures; docs/performance.md records them.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

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
            inv.judge(fact)
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
    snapshot = Path(sys.argv[1]) if len(sys.argv) > 1 else SEED
    audit_cpu, judge_cpu = cpu_cost(snapshot)
    print(f"cpu: whole in-process audit {audit_cpu:.3f} s, judging alone {judge_cpu * 1000:.1f} ms")
    fast, slow = latency_speedup(snapshot)
    print(f"5 ms per host op: default concurrency {fast:.2f} s, --concurrency 1 {slow:.2f} s, speed-up {slow / fast:.1f}x")
    wall, peak = end_to_end(snapshot)
    print(f"end to end (process start included): {wall:.2f} s, peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main()
