"""The probe's limit on host operations in flight follows the host's measured latency (``concurrency=None``): a
local read keeps the floor, 5 ms per read opens more at once; a number fixes it."""

from __future__ import annotations

from pathlib import Path

import anyio

from rigaudit.tools.hosts.probe import AUTO_CEILING, AUTO_FLOOR, Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost

SEED = Path(__file__).parent / "fixtures" / "seed-lxc-8x-rtxpro6000"
PATHS = [f"/sys/bus/pci/devices/0000:{bus}:00.0/vendor" for bus in ("03", "04", "43", "44", "83", "84", "c3", "c4")]


def tokens_after_reads(latency_s: float, concurrency: int | None) -> tuple[float, int]:
    probe = Probe(SnapshotHost(SEED, latency_s=latency_s), concurrency=concurrency)

    async def read_all() -> None:
        await probe.gather(*[lambda p=p: probe.text(p) for p in PATHS])

    anyio.run(read_all)
    limiter = probe._shared.limiter
    return limiter.total_tokens, limiter.borrowed_tokens


def test_the_limit_opens_with_the_hosts_latency() -> None:
    assert tokens_after_reads(0.0, None) == (AUTO_FLOOR, 0)
    opened, borrowed = tokens_after_reads(0.005, None)
    assert AUTO_FLOOR < opened <= AUTO_CEILING and borrowed == 0


def test_a_number_fixes_the_limit() -> None:
    assert tokens_after_reads(0.005, 2) == (2, 0)


def test_a_host_that_answers_at_once_is_read_in_order_and_gives_the_same_audit() -> None:
    """A snapshot without latency is read one call after another (no task per read); with latency the reads
    overlap. Both give the same findings and the same evidence."""
    from rigaudit.orchestrator.audit.run import run_audit

    done: list[str] = []
    probe = Probe(SnapshotHost(SEED), observer=lambda ref, _: done.append(ref))

    async def read_all() -> list[str | None]:
        async def first_then_check(path: str) -> str | None:
            text = await probe.text(path)
            assert done[-1] == f"file:{path}", "another read ended in between"
            return text

        return await probe.gather(*[lambda p=p: first_then_check(p) for p in PATHS])

    assert anyio.run(read_all) == ["0x10de\n"] * len(PATHS)
    at_once = anyio.run(lambda: run_audit(SnapshotHost(SEED)))
    overlapped = anyio.run(lambda: run_audit(SnapshotHost(SEED, latency_s=1e-5)))
    assert [f.model_dump() for f in at_once.findings] == [f.model_dump() for f in overlapped.findings]
    assert set(at_once.evidence) == set(overlapped.evidence)
