"""gpu.ecc_errors: row remapping pending or failed, uncorrectable ECC errors, retired pages pending."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.nvml_reads import failure_text, label, labels, nvml_unusable
from rigaudit.agents.findings import not_applicable, ok, problem, unknown
from rigaudit.agents.investigators.gpu import premises
from rigaudit.agents.investigators.gpu.facts import AREA, GpuHealthFacts, hw_where, int_values
from rigaudit.tools.model.finding import CommandAction, Finding, Fix, FixKind, Severity

ECC_ERRORS_CHECK = Check(
    "gpu.ecc_errors",
    "GPU memory errors (row remapping, ECC, retired pages)",
    reads="NVML remapped rows, volatile uncorrected ECC count, retired pages pending",
    problem="remap pending (reset needed), remap failure, or uncorrectable errors",
    fix="GPU reset or reboot; RMA on remap failure",
    kinds=("reboot", "hardware"),
    premises=(premises.GPUS, premises.NVML),
)


def _no_ecc(f: GpuHealthFacts) -> bool:
    """Every memory-error read answered NOT_SUPPORTED: the board has no ECC (GeForce, some workstation cards)."""
    reads = (f.remapped, f.volatile_uncorrected, f.retired_pending)
    errors = [e for r in reads for e in r.failed().values()]
    return bool(errors) and set(errors) == {"NOT_SUPPORTED"} and all(len(r.failed()) == len(r.results) for r in reads)


def judge_ecc_errors(f: GpuHealthFacts) -> Finding:
    check, title = ECC_ERRORS_CHECK.id, ECC_ERRORS_CHECK.title
    if why := nvml_unusable(f.inventory):
        return unknown(check, AREA, title, why)
    refs = f.remapped.refs + f.volatile_uncorrected.refs + f.retired_pending.refs
    remap = {i: v for i in f.remapped.results if isinstance(v := f.remapped.value(i), list) and len(v) == 4}
    uncorrected = int_values(f.volatile_uncorrected)
    pages_pending = int_values(f.retired_pending)
    judged = set(remap) | set(uncorrected) | set(pages_pending)
    if not judged and _no_ecc(f):
        why = "these GPUs have no ECC memory (NVML: NOT_SUPPORTED for remapped rows, ECC counts and retired pages)"
        return not_applicable(check, AREA, title, why, evidence=refs)
    if not judged:
        return unknown(check, AREA, title, failure_text(f.remapped, f.inventory), evidence=refs)
    failure = [i for i, v in remap.items() if v[3]]
    pending = sorted({i for i, v in remap.items() if v[2]} | {i for i, v in pages_pending.items() if v})
    errors = [i for i, v in uncorrected.items() if v > 0]
    remapped_rows = {i: int(v[0]) + int(v[1]) for i, v in remap.items() if (v[0] or v[1])}
    if not (failure or pending or errors):
        note = ""
        if remapped_rows:
            note = "; rows remapped earlier (spares in use, healthy): " + ", ".join(
                f"{label(f.inventory, i)} {n}" for i, n in remapped_rows.items()
            )
        return ok(
            check,
            AREA,
            title,
            f"no remap pending or failed, 0 volatile uncorrectable ECC errors, no retired page pending on "
            f"{len(judged)}/{len(f.inventory.nvml_indices)} GPUs{note}",
            expected="no pending remap, no remap failure, no uncorrectable errors",
            evidence=refs,
        )
    parts = []
    for i in sorted(set(failure) | set(pending) | set(errors)):
        bits = []
        if i in failure:
            bits.append("row remapping FAILED")
        if i in pending:
            bits.append("remap/retirement pending")
        if i in errors:
            bits.append(f"{uncorrected[i]} volatile uncorrectable ECC errors")
        parts.append(f"{label(f.inventory, i)}: {', '.join(bits)}")
    subjects = labels(f.inventory, sorted(set(failure) | set(pending) | set(errors)))
    if failure:
        severity: Severity = "critical"
        kind: FixKind = "hardware"
        summary = "RMA the GPUs whose row remapping failed: " + ", ".join(labels(f.inventory, failure))
        actions = (
            CommandAction(
                description="take the GPU out of service and open an RMA with the vendor (include nvidia-bug-report.sh output)"
            ),
        )
    else:
        severity, kind = "high", "reboot"
        summary = "Reset the affected GPUs (or reboot) so pending remaps take effect"
        actions = (CommandAction(description="stop the server, then reset each affected GPU (nvidia-smi -r -i N) or reboot"),)
    fix = Fix(
        kind=kind,
        where=hw_where(f.platform),
        summary=summary,
        actions=actions,
        risk="medium",
        verify="nvidia-smi -q -d ROW_REMAPPER,ECC: Pending: No, Remapping Failure Occurred: No, volatile uncorrectable 0",
        revert="none",
        persist="remaps are stored on the GPU",
    )
    return problem(
        check,
        AREA,
        title,
        severity,
        "; ".join(parts),
        "no pending remap, no remap failure, no uncorrectable errors",
        "An uncorrectable ECC error kills the process that touched the memory and poisons the server; a pending remap "
        "only takes effect after a GPU reset, so the bad row stays in use until then. A remap failure means the GPU "
        "ran out of spare rows: it can no longer contain memory faults and must be replaced.",
        fix,
        subjects=subjects,
        evidence=refs,
    )
