"""runtime.torch_cuda: does the server's torch build include the GPUs' architectures?"""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.python_env import TorchInstall
from rigaudit.agents.investigators.runtime import premises
from rigaudit.agents.investigators.runtime.facts import (
    CUDA_FOR_ARCH,
    RuntimeFacts,
    fix_where,
    gpu_capabilities,
    no_torch_reason,
    version_tuple,
)
from rigaudit.tools.hosts.probe import file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, Severity

TORCH_CUDA_CHECK = Check(
    "runtime.torch_cuda",
    "torch build vs GPU architecture",
    reads="the serving Python's `torch/version.py` (through the server's maps or interpreter), NVML compute capability",
    problem="the build's CUDA predates the GPU's architecture, or a CPU-only build",
    fix="install a matching torch build",
    kinds=("restart",),
    premises=(premises.SERVERS, premises.PACKAGES, premises.GPUS),
    layer="workload",
)


def _torch_upgrade_fix(f: RuntimeFacts, target: TorchInstall, need: tuple[int, int] | None, arch: str) -> Fix:
    """pip install a torch build for the CUDA the GPUs need, in the serving environment of ``target``."""
    need_text = f"{need[0]}.{need[1]}" if need else "unknown"
    tag = f"cu{need[0]}{need[1]}" if need else "cu128"
    return Fix(
        kind="restart",
        where=fix_where(f, target.server),
        summary=f"Install a torch build for CUDA ≥ {need_text} in the serving environment, then restart the server",
        actions=(
            CommandAction(
                description=f"in the environment of {target.site}: pip install --upgrade torch --index-url "
                f"https://download.pytorch.org/whl/{tag} (matching the serving framework's pinned torch version)"
            ),
            CommandAction(description="restart the inference server"),
        ),
        risk="medium",
        verify=f"{target.site}/torch/version.py shows cuda ≥ {need_text}; torch.cuda.get_arch_list() includes {arch}",
        revert="reinstall the previous torch version from the pip cache",
        persist="the installed package persists",
    )


def judge_torch_cuda(f: RuntimeFacts) -> Finding:
    refs = tuple(file_ref(i.version_file) for i in f.installs) + f.capability.refs
    if not f.installs:
        searched = f"; searched {f.scan.searched} and {len(f.searched)} site-packages folders"
        return TORCH_CUDA_CHECK.unknown(no_torch_reason(f) + searched, evidence=f.capability.refs)
    confirmed = [i for i in f.installs if i.server is not None]
    judged = confirmed or list(f.installs)
    caps = gpu_capabilities(f)
    arch = ", ".join(f"sm_{a}{b}" for a, b in sorted(caps)) or "unknown architecture"
    needs = [CUDA_FOR_ARCH[c] for c in caps if c in CUDA_FOR_ARCH]
    need = max(needs) if needs else None
    need_text = f"{need[0]}.{need[1]}" if need else "unknown"
    described = "; ".join(
        f"torch {i.version or '?'} (CUDA {i.cuda or 'none: CPU-only build'}) at {i.site}"
        + (f" used by {i.server.label}" if i.server else "")
        for i in judged
    )
    observed = f"{described}; GPUs {arch} need CUDA ≥ {need_text}; compiled arch list unknown (not in a file)"
    bad = [i for i in judged if i.cuda is None or (need is not None and (version_tuple(i.cuda) or (0, 0)) < need)]
    if not bad:
        if need is None:
            return TORCH_CUDA_CHECK.unknown(f"{described}; the GPUs' compute capability is unknown", evidence=refs)
        note = "" if confirmed else " No running server confirms this is the serving Python."
        return TORCH_CUDA_CHECK.ok(
            observed,
            expected=f"a CUDA ≥ {need_text} build whose arch list includes {arch}",
            explanation="The CUDA version of the build is new enough for these GPUs. The arch list itself is compiled "
            "into libtorch_cuda.so; confirm it in the serving environment with torch.cuda.get_arch_list()." + note,
            evidence=refs,
        )
    severity: Severity = "high" if confirmed else "low"
    return TORCH_CUDA_CHECK.problem_at(
        severity,
        observed,
        f"a CUDA ≥ {need_text} build whose arch list includes {arch}",
        "A torch built with an older CUDA carries no kernels for this architecture: CUDA either fails ('no kernel image "
        "is available for execution on the device') or JIT-compiles PTX at start-up and runs slower kernels."
        + (
            ""
            if confirmed
            else " This torch was found in a system folder, not through a running server: confirm it is "
            "the one serving before changing it."
        ),
        _torch_upgrade_fix(f, bad[0], need, arch),
        subjects=tuple(i.site for i in bad),
        evidence=refs,
    )
