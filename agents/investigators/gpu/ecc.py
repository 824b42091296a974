"""gpu.ecc_errors: row remapping pending or failed, uncorrectable ECC errors, retired pages pending."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.kernel_log import log_unavailable
from rigaudit.agents.facts.nvml_reads import failure_text, label, labels, nvml_unusable
from rigaudit.agents.investigators.gpu import premises
from rigaudit.agents.investigators.gpu.facts import GpuHealthFacts, int_values
from rigaudit.agents.investigators.gpu.memory import SOURCE, MemoryEvent, memory_fix
from rigaudit.agents.investigators.gpu.xid_after import parse_xids
from rigaudit.agents.investigators.gpu.xid_settled import gpu_memory_event, xids_by_bdf
from rigaudit.tools.schema.finding import SEVERITY_ORDER, Finding, Severity

ECC_ERRORS_CHECK = Check(
    "gpu.ecc_errors",
    "GPU memory errors (row remapping, ECC, retired pages)",
    reads="NVML remapped rows, volatile uncorrected ECC count, retired pages pending",
    problem="graded once for gpu.xid and this check: correctable with a remap pending low, a contained uncorrectable error "
    "medium, an uncontained one (or Xid 48) high, a remap failure (or Xid 95) critical",
    fix="restart the application now, then reset at the next service window (contained; in a VM guest a restart of the "
    "VM); reset or reboot; drain and RMA on remap failure, the GPU named by serial and UUID",
    kinds=("reboot", "hardware"),
    premises=(premises.GPUS, premises.NVML),
)


def _no_ecc(f: GpuHealthFacts) -> bool:
    """Every memory-error read answered NOT_SUPPORTED: the board has no ECC (GeForce, some workstation cards)."""
    reads = (f.remapped, f.volatile_uncorrected, f.retired_pending)
    errors = [e for r in reads for e in r.failed().values()]
    return bool(errors) and set(errors) == {"NOT_SUPPORTED"} and all(len(r.failed()) == len(r.results) for r in reads)


def _graded_events(f: GpuHealthFacts, affected: list[int]) -> dict[int, MemoryEvent]:
    """Each affected GPU's memory event, graded with the memory Xids its kernel log holds."""
    logged = xids_by_bdf(parse_xids(f.dmesg.stdout)) if log_unavailable(f.dmesg) is None else {}
    events: dict[int, MemoryEvent] = {}
    for i in affected:
        gpu = f.inventory.by_index(i)
        if (event := gpu_memory_event(f, i, logged.get(gpu.bdf, frozenset()) if gpu else frozenset())) is not None:
            events[i] = event
    return events


def _errors_problem(
    f: GpuHealthFacts, failure: list[int], pending: list[int], uncorrected: dict[int, int], refs: tuple[str, ...]
) -> Finding:
    errors = [i for i, v in uncorrected.items() if v > 0]
    affected = sorted(set(failure) | set(pending) | set(errors))
    events = _graded_events(f, affected)
    parts = []
    for i in affected:
        bits = []
        if i in failure:
            bits.append("row remapping FAILED")
        if i in pending:
            bits.append("remap/retirement pending")
        if i in errors:
            bits.append(f"{uncorrected[i]} volatile uncorrectable ECC errors")
        if i in events:
            bits.append(f"{events[i].state}: act {events[i].urgency}")
        parts.append(f"{label(f.inventory, i)}: {', '.join(bits)}")
    severity: Severity = min((e.severity for e in events.values()), key=lambda s: SEVERITY_ORDER[s], default="high")
    gpus = [(g, e) for i, e in events.items() if (g := f.inventory.by_index(i)) is not None]
    return ECC_ERRORS_CHECK.problem_at(
        severity,
        "; ".join(parts),
        "no pending remap, no remap failure, no uncorrectable errors",
        "A pending remap only takes effect after a GPU reset. How soon that reset is due depends on the event, graded "
        "with the memory Xids the kernel log holds for the GPU (as gpu.xid grades them): a correctable error's remap "
        "and a contained uncorrectable error (its page offlined, other work unaffected) wait for the next service "
        "window; an uncorrectable error whose containment is not shown, or an uncontained one (Xid 95), needs the "
        "reset now; a remap failure means the GPU ran out of spare rows and must be replaced "
        f"({SOURCE}).",
        memory_fix(f.platform, gpus),
        subjects=labels(f.inventory, affected),
        evidence=refs,
    )


def judge_ecc_errors(f: GpuHealthFacts) -> Finding:
    if why := nvml_unusable(f.inventory):
        return ECC_ERRORS_CHECK.unknown(why)
    refs = f.remapped.refs + f.volatile_uncorrected.refs + f.retired_pending.refs
    remap = {i: v for i in f.remapped.results if isinstance(v := f.remapped.value(i), list) and len(v) == 4}
    uncorrected = int_values(f.volatile_uncorrected)
    pages_pending = int_values(f.retired_pending)
    judged = set(remap) | set(uncorrected) | set(pages_pending)
    if not judged and _no_ecc(f):
        why = "these GPUs have no ECC memory (NVML: NOT_SUPPORTED for remapped rows, ECC counts and retired pages)"
        return ECC_ERRORS_CHECK.not_applicable(why, evidence=refs)
    if not judged:
        return ECC_ERRORS_CHECK.unknown(failure_text(f.remapped, f.inventory), evidence=refs)
    failure = [i for i, v in remap.items() if v[3]]
    pending = sorted({i for i, v in remap.items() if v[2]} | {i for i, v in pages_pending.items() if v})
    if failure or pending or any(v > 0 for v in uncorrected.values()):
        return _errors_problem(f, failure, pending, uncorrected, refs)
    if not uncorrected:
        unread = failure_text(f.volatile_uncorrected, f.inventory)
        said = f"no remap pending or failed on {len(remap)} GPU(s); no uncorrectable ECC count was read ({unread})"
        if set(f.volatile_uncorrected.failed().values()) == {"NOT_SUPPORTED"}:
            why = f"{said}: NVML counts memory errors only with ECC mode on, so none is judged (whether ECC should be "
            return ECC_ERRORS_CHECK.not_applicable(why + "on: cuda.ecc_mode)", evidence=refs)
        return ECC_ERRORS_CHECK.unknown(f"{said}; nvidia-smi -q -d ECC would tell", evidence=refs)
    remapped_rows = {i: int(v[0]) + int(v[1]) for i, v in remap.items() if (v[0] or v[1])}
    note = ""
    if remapped_rows:
        note = "; rows remapped earlier (spares in use, healthy): " + ", ".join(
            f"{label(f.inventory, i)} {n}" for i, n in remapped_rows.items()
        )
    return ECC_ERRORS_CHECK.ok(
        f"no remap pending or failed, 0 volatile uncorrectable ECC errors on {len(uncorrected)} GPU(s), no retired page "
        f"pending on {len(judged)}/{len(f.inventory.nvml_indices)} GPUs{note}",
        expected="no pending remap, no remap failure, no uncorrectable errors",
        evidence=refs,
    )
