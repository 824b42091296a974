"""driver.vgpu_license: an NVIDIA vGPU guest holds its licence (nvidia-gridd, NVML's licensable features).

An unlicensed vGPU for Compute starts at full capability and, after a 20-minute grace period, degrades to an idle
level of compute until a licence is acquired (NVIDIA AI Enterprise, "NVIDIA vGPU for Compute Licensing"): a
serving VM that lost or never got its licence serves at a fraction of its speed with nothing else wrong. Only vGPUs
are licensed this way; GPUs passed through (or on bare metal) are not judged.
"""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.vgpu import LICENSE_FN
from rigaudit.agents.investigators.driver import premises
from rigaudit.agents.investigators.driver.facts import DriverFacts, fix_where
from rigaudit.tools.hosts.probe import nvml_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, ServiceStartAction

VGPU_LICENSE_CHECK = Check(
    "driver.vgpu_license",
    "vGPU licence",
    reads="NVML virtualization mode and licensable features of each vGPU (nvmlDeviceGetGridLicensableFeatures)",
    problem="a vGPU without its licence: after a 20-minute grace period its compute drops to an idle level",
    fix="a client configuration token and FeatureType=1 for nvidia-gridd, then restart it",
    kinds=("runtime",),
    premises=(premises.GPU_CONFIG, premises.NVML),
)

GRIDD_STEPS = (
    "copy the client configuration token from your NVIDIA License System service instance (CLS or DLS) to "
    "/etc/nvidia/ClientConfigToken/ (mode 744), set FeatureType=1 in /etc/nvidia/gridd.conf, then restart nvidia-gridd"
)


def judge_vgpu_license(facts: DriverFacts) -> Finding:
    if not facts.platform.in_vm:
        return VGPU_LICENSE_CHECK.not_applicable("not a VM guest: NVIDIA vGPUs (and their licences) exist only in guests")
    if not facts.nvml_ok:
        return VGPU_LICENSE_CHECK.unknown(f"NVML unavailable: {facts.nvml_error}", evidence=("nvml:nvmlInit()",))
    licenses = facts.licenses
    if not licenses:
        return VGPU_LICENSE_CHECK.not_applicable(
            "no NVIDIA vGPU here (NVML virtualization mode is not VGPU): bare-metal and passed-through GPUs hold no vGPU licence",
        )
    refs = tuple(nvml_ref(LICENSE_FN, (v.gpu.index or 0,)) for v in licenses)
    unread = [v for v in licenses if v.licensed is None]
    missing = [v for v in licenses if v.licensed is False]
    if missing:
        names = ", ".join(v.gpu.label for v in missing)
        fix = Fix(
            kind="runtime",
            where=fix_where(facts.platform),
            summary="License the vGPUs: give nvidia-gridd its client configuration token and restart it",
            actions=(CommandAction(description=GRIDD_STEPS), ServiceStartAction(unit="nvidia-gridd")),
            risk="low",
            verify="nvidia-smi -q | grep -A2 'vGPU Software Licensed Product' shows License Status: Licensed; "
            "journalctl -u nvidia-gridd shows 'License acquired successfully'",
            revert="none needed: a licence changes no setting of the GPU",
            persist="nvidia-gridd requests the licence at every boot once the token is in place",
        )
        return VGPU_LICENSE_CHECK.problem_at(
            "high",
            f"{len(missing)}/{len(licenses)} vGPUs unlicensed ({missing[0].product()}): {names}",
            "every vGPU licensed",
            "An unlicensed vGPU for Compute runs at full capability for a 20-minute grace period, then its compute is "
            "reduced to an idle level until a licence is acquired (NVIDIA AI Enterprise, vGPU for Compute "
            "Licensing): the server keeps answering, slowly. A licensed VM that loses its license server keeps "
            "working for the lease's grace period (about 7 days with CLS).",
            fix,
            subjects=tuple(v.gpu.label for v in missing),
            evidence=refs,
        )
    if unread:
        error = unread[0].read.error or "no licensable feature enabled"
        shown = "not recorded in this snapshot" if error == "NOT_RECORDED" else error
        return VGPU_LICENSE_CHECK.unknown(
            f"licence state of {len(unread)}/{len(licenses)} vGPUs not readable ({shown}); read "
            "nvidia-smi -q | grep -A2 'vGPU Software Licensed Product' in this guest",
            evidence=refs,
        )
    expiry = {e for v in licenses if (e := v.expiry())}
    until = f", expiring {', '.join(sorted(expiry))}" if expiry else ""
    return VGPU_LICENSE_CHECK.ok(
        f"{len(licenses)}/{len(licenses)} vGPUs licensed ({licenses[0].product()}{until})",
        expected="every vGPU licensed",
        evidence=refs,
    )
