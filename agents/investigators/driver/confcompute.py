"""driver.confidential_computing: GPUs in CC mode are set ready, in a production CC mode.

In CC mode (Hopper and later GPUs passed into a confidential VM) CUDA refuses every context until the CVM attests the
GPUs and sets their ready state: a server there holds no GPU memory and fails at start (``cudaGetDeviceCount``
returned 802, "system not yet initialized"). DevTools mode is a CC mode for profiling and debugging: the attestation
reports it and its guarantees are not production's. What CC mode does to P2P is p2p.status's
(:data:`~rigaudit.agents.facts.deliberate.CONFIDENTIAL_COMPUTING`).
"""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.confcompute import CC_SOURCE, ConfCompute
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.investigators.driver import premises
from rigaudit.agents.investigators.driver.facts import DriverFacts, fix_where
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix

CC_CHECK = Check(
    "driver.confidential_computing",
    "Confidential computing ready state",
    reads="NVML's CC state (nvmlSystemGetConfComputeState) and the GPUs' ready state (nvmlSystemGetConfComputeGpusReadyState)",
    problem="GPUs in CC mode not set ready: CUDA refuses every context (critical); CC DevTools mode (medium)",
    fix="attest the GPUs, then `nvidia-smi conf-compute -srs 1` (a unit before the server); DevTools off on the host",
    kinds=("runtime",),
    premises=(premises.PLATFORM_FIX, premises.NVML),
)


def _not_ready(facts: DriverFacts, cc: ConfCompute) -> Finding:
    fix = Fix(
        kind="runtime",
        where=fix_where(facts.platform),
        summary="Attest the GPUs, then set them ready: CUDA refuses every context until then",
        actions=(
            CommandAction(
                description="attest the GPUs with NVIDIA's verifier (nvattest, or the nvtrust local GPU verifier, which "
                "sets the ready state when the attestation passes), or after your own attestation run"
            ),
            CommandAction(argv=("nvidia-smi", "conf-compute", "-srs", "1"), description="set the GPUs ready"),
            CommandAction(description="restart the inference server"),
        ),
        risk="low",
        verify="nvidia-smi conf-compute -grs prints 'ready'; the server's processes hold GPU memory (nvidia-smi)",
        revert="nvidia-smi conf-compute -srs 0 (CUDA refuses work again)",
        persist="a unit ordered after nvidia-persistenced and before the server that attests and sets the ready state",
    )
    return CC_CHECK.problem_at(
        "critical",
        "CC mode on; the GPUs' ready state is not-ready",
        "GPUs in CC mode set ready (after attestation)",
        "In confidential-computing mode CUDA creates no context on a GPU until the confidential VM has attested it and "
        "set the GPUs' ready state: every CUDA call fails (cudaGetDeviceCount returns 802, 'system not yet "
        f"initialized'), so the server cannot start ({CC_SOURCE}).",
        fix,
        subjects=tuple(g.label for g in facts.gpus),
        evidence=cc.refs,
    )


def _devtools(facts: DriverFacts, cc: ConfCompute) -> Finding:
    fix = Fix(
        kind="reboot",
        where=layer_where(facts.platform, "vm_definition"),
        summary="Set the GPUs' CC mode to on, not DevTools, on the hypervisor host",
        actions=(
            CommandAction(
                description="on the host, with the VM stopped: NVIDIA's gpu-admin-tools (nvidia_gpu_tools.py "
                "--set-cc-mode=on --reset-after-cc-mode-switch) for each GPU passed to this VM, then start the VM"
            ),
        ),
        risk="medium",
        verify="nvidia-smi conf-compute -d in the guest shows DevTools mode OFF; the attestation no longer reports it",
        revert="the same tool with --set-cc-mode=devtools",
        persist="the GPU keeps its CC mode across resets",
    )
    return CC_CHECK.problem_at(
        "medium",
        "CC mode on in DevTools mode",
        "a production CC mode (DevTools off)",
        "DevTools is the CC mode for profiling and debugging: the GPUs' attestation reports it and its protection is "
        f"not production's; NVIDIA's tools set it off by default ({CC_SOURCE}).",
        fix,
        subjects=tuple(g.label for g in facts.gpus),
        evidence=cc.refs,
    )


def judge_confidential_computing(facts: DriverFacts) -> Finding:
    cc = facts.conf_compute
    if cc.on is None and not facts.gpus:
        return CC_CHECK.not_applicable(f"no NVIDIA GPU on this host (NVML: {cc.error})", evidence=cc.refs[:1])
    if cc.on is None:
        return CC_CHECK.unknown(
            f"NVML's CC state not read ({cc.error}): nvmlSystemGetConfComputeState would tell", evidence=cc.refs[:1]
        )
    if not cc.on:
        why = f"NVML: {cc.error}" if cc.error else "NVML's CC state: off"
        return CC_CHECK.not_applicable(f"no confidential computing ({why})", evidence=cc.refs)
    if cc.ready is None:
        return CC_CHECK.unknown(
            "CC mode on; the GPUs' ready state was not read (nvmlSystemGetConfComputeGpusReadyState)", evidence=cc.refs
        )
    if not cc.ready:
        return _not_ready(facts, cc)
    if cc.devtools:
        return _devtools(facts, cc)
    return CC_CHECK.ok("CC mode on (production, DevTools off); the GPUs are set ready", evidence=cc.refs)
