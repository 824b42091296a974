"""firmware.vbios_consistency: do GPUs of one model run one VBIOS?"""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.investigators.firmware import premises
from rigaudit.agents.investigators.firmware.facts import FirmwareFacts, firmware_fix
from rigaudit.tools.schema.finding import Finding

VBIOS_CONSISTENCY_CHECK = Check(
    "firmware.vbios_consistency",
    "VBIOS versions of GPUs of one model",
    reads="NVML VBIOS version of each GPU",
    problem="GPUs of one model disagree",
    fix="vendor firmware update",
    kinds=("firmware",),
    premises=(premises.GPUS,),
)


def judge_vbios(facts: FirmwareFacts) -> Finding:
    if not facts.gpus:
        return VBIOS_CONSISTENCY_CHECK.not_applicable("no NVIDIA GPU found")
    evidence = [r for g in facts.gpus for r in g.refs if "Vbios" in r or "/information" in r]
    known = [g for g in facts.gpus if g.vbios]
    if not known:
        return VBIOS_CONSISTENCY_CHECK.unknown(f"VBIOS versions not readable (NVML: {facts.nvml_error or 'no VBIOS info'})")
    if len(facts.gpus) < 2:
        return VBIOS_CONSISTENCY_CHECK.not_applicable("one GPU: nothing to compare its VBIOS with")
    groups: dict[str, dict[str, list[str]]] = {}
    for g in known:
        groups.setdefault(g.gpu.name, {}).setdefault(g.vbios or "", []).append(g.gpu.label)
    split = {name: versions for name, versions in groups.items() if len(versions) > 1}
    if not split:
        observed = "; ".join(f"{name}: VBIOS {next(iter(v))} on {len(next(iter(v.values())))} GPUs" for name, v in groups.items())
        if len(known) < len(facts.gpus):
            observed += f"; not readable on {len(facts.gpus) - len(known)} GPU(s)"
        return VBIOS_CONSISTENCY_CHECK.ok(observed, expected="one VBIOS version per GPU model", evidence=evidence)
    observed = "; ".join(
        f"{name}: " + ", ".join(f"{ver} on {', '.join(labels)}" for ver, labels in versions.items())
        for name, versions in split.items()
    )
    fix = firmware_fix(
        facts.platform,
        "Bring every GPU of one model to the same VBIOS with the vendor's (OEM's) update package",
        "Get the VBIOS bundle for this GPU model from the server vendor/NVIDIA support and flash all "
        "GPUs to the same version (nvflash or the OEM tool), then reboot",
        "nvidia-smi --query-gpu=name,vbios_version --format=csv shows one version per model",
        risk="medium",
    )
    return VBIOS_CONSISTENCY_CHECK.problem_at(
        "low",
        observed=observed,
        expected="one VBIOS version per GPU model",
        explanation="GPUs of one model with different VBIOS can differ in clocks, power limits, link training and "
        "bug fixes; in tensor parallelism the slowest GPU sets the pace, and mixed firmware makes issues hard to "
        "reproduce. Often harmless (a replaced board), so update only through the vendor's package.",
        fix=fix,
        subjects=[label for versions in split.values() for labels in versions.values() for label in labels],
        evidence=evidence,
    )
