"""p2p.bandwidth: the P2P micro-benchmark's verdict (bandwidth per pair against its link, data check)."""

from __future__ import annotations

import json

from rigaudit.agents.check import Check
from rigaudit.agents.facts.deliberate import CONFIDENTIAL_COMPUTING
from rigaudit.agents.facts.nvml_reads import label
from rigaudit.agents.investigators.p2p import premises
from rigaudit.agents.investigators.p2p.facts import BENCH_FILE, P2pFacts
from rigaudit.tools.bench.p2p_file import P2P_SCHEMA
from rigaudit.tools.core.record import Record
from rigaudit.tools.files.bounded import loads
from rigaudit.tools.hosts.probe import file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, Where

SLOW_FRACTION = 0.5


class BenchPair(Record):
    src: int
    dst: int
    unidir: float
    bidir: float | None
    staged: float | None
    limit: float | None
    data_ok: bool


def parse_bench(text: str) -> list[BenchPair] | str:
    """The pairs of a ``rigaudit.p2p/1`` result, or why the file is not one."""
    try:
        raw = loads(text)
    except json.JSONDecodeError as exc:
        return f"{BENCH_FILE} is not JSON ({exc.msg} at line {exc.lineno})"
    if not isinstance(raw, dict) or raw.get("schema") != P2P_SCHEMA:
        return f"{BENCH_FILE} is not a {P2P_SCHEMA} result"
    pairs = []
    for item in raw.get("pairs") or []:
        if not isinstance(item, dict):
            continue
        try:
            pairs.append(
                BenchPair(
                    int(item["src"]),
                    int(item["dst"]),
                    float(item["unidir_gbps"]),
                    _num(item.get("bidir_gbps")),
                    _num(item.get("staged_gbps")),
                    _num(item.get("limit_gbps")),
                    item.get("data_ok") is True,
                )
            )
        except (KeyError, TypeError, ValueError):
            return f"{BENCH_FILE}: a pair lacks src, dst or unidir_gbps"
    if not pairs:
        return f"{BENCH_FILE} holds no pairs"
    return pairs


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


P2P_BANDWIDTH_CHECK = Check(
    "p2p.bandwidth",
    "GPU peer-to-peer bandwidth and data check",
    reads="the P2P micro-benchmark's result (`/var/tmp/rigaudit/p2p.json`)",
    problem="a pair far below its link, slower than staging through the host, or corrupting data; on GPUs in "
    "confidential-computing mode, slow pairs are CC's encrypted bounce-buffer copies (low)",
    fix="per cause",
    kinds=("runtime", "reboot", "hardware"),
    premises=(premises.PLATFORM, premises.GPUS, premises.BENCHMARK),
)


def _no_bench(f: P2pFacts, refs: tuple[str, ...]) -> Finding:
    """No benchmark file: nothing to benchmark, not run yet, or not readable."""
    if len(f.inventory.gpus) < 2:
        return P2P_BANDWIDTH_CHECK.not_applicable("fewer than two GPUs: no peer pairs to benchmark", evidence=refs)
    if f.bench.error == "ENOENT":
        return P2P_BANDWIDTH_CHECK.unknown("needs the P2P micro-benchmark: run `rigaudit bench p2p`", evidence=refs)
    return P2P_BANDWIDTH_CHECK.unknown(f"{BENCH_FILE} not readable: {f.bench.error}", evidence=refs)


def _slow(pair: BenchPair) -> bool:
    """Below the fraction of its link limit, or slower than staging through the host."""
    return (pair.limit is not None and pair.unidir < SLOW_FRACTION * pair.limit) or (
        pair.staged is not None and pair.unidir < pair.staged
    )


def judge_p2p_bandwidth(f: P2pFacts) -> Finding:
    refs = (file_ref(BENCH_FILE),)
    text = f.bench.text()
    if text is None:
        return _no_bench(f, refs)
    parsed = parse_bench(text)
    if isinstance(parsed, str):
        return P2P_BANDWIDTH_CHECK.unknown(parsed, evidence=refs)
    corrupt = [p for p in parsed if not p.data_ok]
    slow = [p for p in parsed if _slow(p)]
    uni = [p.unidir for p in parsed]
    limits = sorted({p.limit for p in parsed if p.limit is not None})
    limit_text = f" (limit {'/'.join(f'{v:.0f}' for v in limits)} GB/s)" if limits else ""
    summary = f"{len(parsed)} pairs: unidirectional {min(uni):.1f}–{max(uni):.1f} GB/s{limit_text}"
    if not corrupt and not slow:
        return P2P_BANDWIDTH_CHECK.ok(
            f"{summary}; data check passed on every pair",
            expected=f"≥ {SLOW_FRACTION:.0%} of the link limit, faster than staging through the host, data intact",
            evidence=refs,
        )
    where: Where = "hypervisor" if f.platform.is_guest else "host"
    subjects = sorted({label(f.inventory, i) for p in (corrupt or slow) for i in (p.src, p.dst)})
    if corrupt:
        pairs = ", ".join(f"GPU{p.src}→GPU{p.dst}" for p in corrupt[:8])
        return P2P_BANDWIDTH_CHECK.problem_at(
            "critical",
            f"data check FAILED on {len(corrupt)} pairs ({pairs}); {summary}",
            "data copied peer-to-peer arrives intact on every pair",
            "A peer copy that completes but delivers wrong bytes is the IOMMU failure mode: with DMA translation on, "
            "peer writes can be dropped or land elsewhere without an error. A model served over such a path returns "
            "wrong results silently. This outranks any performance finding.",
            _corrupt_fix(where),
            subjects=subjects,
            evidence=refs,
        )
    if f.cc_on:
        return _cc_cost(f, slow, summary, where, subjects, refs)
    shown = "; ".join(
        f"GPU{p.src}→GPU{p.dst} {p.unidir:.1f} GB/s"
        + (f" of {p.limit:.0f}" if p.limit is not None else "")
        + (f", staged {p.staged:.1f}" if p.staged is not None else "")
        for p in slow[:8]
    )
    return P2P_BANDWIDTH_CHECK.problem_at(
        "high",
        f"{len(slow)} slow pairs: {shown}; {summary}",
        f"≥ {SLOW_FRACTION:.0%} of the link limit and faster than staging through the host",
        "Tensor-parallel all-reduce runs at the speed of the slowest pair in the ring. A pair below half its link, "
        "or slower than bouncing through host memory, usually has its traffic redirected through the root complex "
        "(ACS, IOMMU) or a link that trained down.",
        _slow_fix(where),
        subjects=subjects,
        evidence=refs,
    )


CC_COPIES = "https://forums.developer.nvidia.com/t/memory-allocation-and-data-copy-in-cc-mode/261009"


def _cc_cost(
    f: P2pFacts, slow: list[BenchPair], summary: str, where: Where, subjects: list[str], refs: tuple[str, ...]
) -> Finding:
    """Slow pairs on GPUs in CC mode: every copy leaving a GPU is encrypted and staged through a bounce buffer in
    shared memory, by design; no ACS, IOMMU or link setting is the cause."""
    cc = CONFIDENTIAL_COMPUTING
    fix = Fix(
        kind="runtime",
        where=where,
        summary="Nothing lifts CC's copy cost inside the CVM: keep tensor-parallel groups to the fewest GPUs, or give "
        "an HGX baseboard to one CVM in PPCIe mode, where NVLink carries peer traffic",
        actions=(
            CommandAction(
                description="serve with the fewest GPUs per model (TP 1 replicas where the model fits): each all-reduce "
                "step crosses the encrypted bounce buffers"
            ),
            CommandAction(description=f"for NVLink-speed tensor parallelism: {cc.conditions[1]} ({cc.source})"),
        ),
        risk="low",
        verify="rigaudit bench inference at the new layout",
        revert="the previous layout",
        persist="the serving layout",
    )
    slowest = min(slow, key=lambda p: p.unidir)
    return P2P_BANDWIDTH_CHECK.problem_at(
        "low",
        f"{len(slow)} slow pairs (slowest GPU{slowest.src}→GPU{slowest.dst} {slowest.unidir:.1f} GB/s) with the GPUs in "
        f"confidential-computing mode (NVML's CC state on); {summary}",
        "CC mode's copy cost, or ≥ half the link limit outside CC",
        f"Deliberate ({cc.key}): {cc.conditions[0]}. In CC mode the CUDA driver encrypts every copy that leaves a GPU and "
        f"stages it through a bounce buffer in memory the CVM shares with the host, where the other GPU decrypts it "
        f"({CC_COPIES}): that staging, not ACS, the IOMMU or a link, is what these pairs measure. Tensor-parallel "
        "all-reduce pays it on every step.",
        fix,
        subjects=subjects,
        evidence=(*refs, "nvml:nvmlSystemGetConfComputeState()"),
    )


def _corrupt_fix(where: Where) -> Fix:
    """Peer DMA untranslated (iommu=pt), and P2P off in NCCL meanwhile."""
    return Fix(
        kind="reboot",
        where=where,
        summary="Stop translating peer DMA through the IOMMU (iommu=pt) and keep P2P off in NCCL until the data check passes",
        actions=(
            CommandAction(
                description="add iommu=pt (with amd_iommu=on or intel_iommu=on) to the kernel command line "
                "and reboot; see kernel.iommu"
            ),
            CommandAction(description="until then run the server with NCCL_P2P_DISABLE=1 so NCCL stages through host memory"),
        ),
        risk="medium",
        verify="rigaudit bench p2p: data_ok true on every pair",
        revert="restore the previous kernel command line",
        persist="kernel command line",
    )


def _slow_fix(where: Where) -> Fix:
    """The fixes of what slows a P2P path (ACS, IOMMU, link), then the benchmark again."""
    return Fix(
        kind="reboot",
        where=where,
        summary="Find what slows the P2P path: ACS redirect (pcie.acs), IOMMU translation (kernel.iommu), a degraded "
        "link (pcie.link); fix that, then re-run `rigaudit bench p2p`",
        actions=(
            CommandAction(
                description="apply the fixes of the pcie.acs, kernel.iommu and pcie.link findings, then re-run rigaudit bench p2p"
            ),
        ),
        risk="low",
        verify="rigaudit bench p2p: every pair above half its limit and faster than staged copies",
        revert="per the underlying fix",
        persist="per the underlying fix",
    )
