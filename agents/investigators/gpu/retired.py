"""gpu.retired_pages: how much of a GPU's spare memory is used up (retired pages; row-remapper spare rows per bank)."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.gpus import GpuInventory
from rigaudit.agents.facts.nvml_reads import GpuReads, label, labels, nvml_unusable, read_per_gpu
from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.facts.vgpu import hypervisor_side
from rigaudit.agents.investigators.gpu import premises
from rigaudit.agents.investigators.gpu.hardware import hardware_fix
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.schema.finding import CommandAction, Finding, Severity

SBE, DBE = 0, 1
"""nvmlPageRetirementCause_t: multiple single-bit errors, double-bit error."""


class RetiredFacts(Record):
    inventory: GpuInventory
    platform: Platform
    pages_sbe: GpuReads
    pages_dbe: GpuReads
    histogram: GpuReads


async def collect_retired(probe: Probe, inventory: GpuInventory, platform: Platform) -> RetiredFacts:
    sbe = await read_per_gpu(probe, inventory, "nvmlDeviceGetRetiredPages", SBE)
    dbe = await read_per_gpu(probe, inventory, "nvmlDeviceGetRetiredPages", DBE)
    histogram = await read_per_gpu(probe, inventory, "nvmlDeviceGetRowRemapperHistogram")
    return RetiredFacts(inventory, platform, sbe, dbe, histogram)


def _error(reads: GpuReads) -> str:
    error = next(iter(reads.failed().values()), "no value")
    return "not recorded in this snapshot" if error == "NOT_RECORDED" else error


def _count(reads: GpuReads, index: int) -> int | None:
    value = reads.value(index)
    return len(value) if isinstance(value, list) else None


def _rows(remapped: GpuReads, index: int) -> int | None:
    value = remapped.value(index)
    if isinstance(value, list) and len(value) == 4 and all(isinstance(v, int) for v in value[:2]):
        return int(value[0]) + int(value[1])
    return None


RETIRED_PAGES_CHECK = Check(
    "gpu.retired_pages",
    "Spare memory used up (retired pages, spare rows)",
    reads="NVML retired pages (single- and double-bit causes), remapped rows, row-remapper histogram",
    problem="a memory bank with no spare row left (high); banks low on spares or retired pages (low)",
    fix="plan an RMA",
    kinds=("hardware",),
    premises=(premises.GPUS, premises.NVML),
)


class _Spares(Record):
    """Per GPU index, what its spare memory reads show."""

    exhausted: list[tuple[int, int]]
    """(GPU, banks with no spare row left)."""
    low_banks: list[tuple[int, int]]
    retired: dict[int, tuple[int, int]]
    """GPU: (single-bit, double-bit) retired pages."""
    unknown_spares: list[tuple[int, int]]
    """(GPU, rows remapped) where the histogram is not read."""
    judged: int


def _tally_spares(f: RetiredFacts, remapped: GpuReads) -> _Spares:
    exhausted, low_banks, retired, unknown_spares = [], [], {}, []
    judged = 0
    for index in f.inventory.nvml_indices:
        sbe, dbe = _count(f.pages_sbe, index), _count(f.pages_dbe, index)
        rows = _rows(remapped, index)
        histogram = f.histogram.value(index)
        if sbe is None and dbe is None and rows is None and not isinstance(histogram, dict):
            continue
        judged += 1
        if (sbe or 0) + (dbe or 0):
            retired[index] = (sbe or 0, dbe or 0)
        if isinstance(histogram, dict):
            if int(histogram.get("none") or 0) > 0:
                exhausted.append((index, int(histogram["none"])))
            elif int(histogram.get("low") or 0) > 0:
                low_banks.append((index, int(histogram["low"])))
        elif rows:
            unknown_spares.append((index, rows))
    return _Spares(exhausted, low_banks, retired, unknown_spares, judged)


def _unread(f: RetiredFacts, remapped: GpuReads, refs: tuple[str, ...]) -> Finding:
    """No GPU's spares read: GPUs without ECC memory, else unknown."""
    failed = {e for reads in (f.pages_sbe, remapped) for e in reads.failed().values()}
    if failed == {"NOT_SUPPORTED"}:
        why = "these GPUs have no ECC memory to retire pages or remap rows of (NVML: NOT_SUPPORTED)"
        return RETIRED_PAGES_CHECK.not_applicable(why, evidence=refs)
    shown = ", ".join(sorted("not recorded in this snapshot" if e == "NOT_RECORDED" else e for e in failed))
    return RETIRED_PAGES_CHECK.unknown(f"retired pages and remapped rows not readable: {shown}", evidence=refs)


def _spares_problem(f: RetiredFacts, spares: _Spares, refs: tuple[str, ...]) -> Finding:
    parts = [f"{label(f.inventory, i)}: {n} banks with no spare row left" for i, n in spares.exhausted]
    parts += [f"{label(f.inventory, i)}: {n} banks with few spare rows left" for i, n in spares.low_banks]
    parts += [f"{label(f.inventory, i)}: {s + d} retired pages ({d} double-bit)" for i, (s, d) in spares.retired.items()]
    severity: Severity = "high" if spares.exhausted else "low"
    subjects = sorted({i for i, _ in spares.exhausted} | {i for i, _ in spares.low_banks} | set(spares.retired))
    fix = hardware_fix(
        f.inventory,
        f.platform,
        subjects,
        "Plan the replacement of " + ", ".join(labels(f.inventory, subjects)) + " with the vendor",
        (
            CommandAction(description="record the state", argv=("nvidia-smi", "-q", "-d", "ROW_REMAPPER,PAGE_RETIREMENT")),
            CommandAction(description="open an RMA with the vendor (attach nvidia-bug-report.sh); run dcgmi diag -r 3 on it"),
        ),
        "nvidia-smi -q -d ROW_REMAPPER on the replacement: all banks at Max availability",
    )
    return RETIRED_PAGES_CHECK.problem_at(
        severity,
        "; ".join(parts),
        "spare rows left in every bank; no retired pages",
        "GPU memory replaces failing rows with spare ones (row remapping, Ampere and newer) or retires failing pages "
        "(older GPUs). A bank with no spare row left cannot absorb its next error: it ends in a remap failure, an "
        "uncontained error that kills the server, and a GPU that must be replaced. A few retired pages or low banks "
        "are a trend to watch rather than an outage.",
        fix,
        subjects=labels(f.inventory, subjects),
        evidence=refs,
    )


def judge_retired_pages(f: RetiredFacts, remapped: GpuReads) -> Finding:
    if why := nvml_unusable(f.inventory):
        return RETIRED_PAGES_CHECK.unknown(why)
    if why := hypervisor_side(f.inventory, "retired pages and remapped rows"):
        return RETIRED_PAGES_CHECK.unknown(why, evidence=f.pages_sbe.refs + remapped.refs)
    refs = f.pages_sbe.refs + f.pages_dbe.refs + remapped.refs + f.histogram.refs
    spares = _tally_spares(f, remapped)
    if not spares.judged:
        return _unread(f, remapped, refs)
    if spares.exhausted or spares.low_banks or spares.retired:
        return _spares_problem(f, spares, refs)
    if spares.unknown_spares:
        rows_text = ", ".join(f"{label(f.inventory, i)} {n} rows remapped" for i, n in spares.unknown_spares)
        return RETIRED_PAGES_CHECK.unknown(
            f"{rows_text}; spare rows per bank unknown (nvmlDeviceGetRowRemapperHistogram: {_error(f.histogram)})",
            evidence=refs,
        )
    return RETIRED_PAGES_CHECK.ok(
        f"no retired pages, no bank short of spare rows on {spares.judged}/{len(f.inventory.nvml_indices)} GPUs",
        expected="spare rows left in every bank; no retired pages",
        evidence=refs,
    )
