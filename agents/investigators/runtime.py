"""runtime: the serving Python's torch build against the GPUs and the driver, its environment and its limits.

No interpreter is ever run (the policy denies interpreters given code): torch's ``version.py`` is read as a file,
found through the server process (its memory maps, its interpreter path) or well-known site-packages folders
(:mod:`rigaudit.agents.facts.python_env`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rigaudit.agents.facts.gpus import GpuInventory, collect_gpus
from rigaudit.agents.facts.lxc import LxcConfigs, read_lxc_configs
from rigaudit.agents.facts.nvml_reads import GpuReads, read_per_gpu
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.facts.processes import ServerProcess, ServerScan, find_servers, parse_environ
from rigaudit.agents.facts.python_env import TorchInstall, find_torch, parse_torch_version
from rigaudit.agents.findings import ok, problem, unknown
from rigaudit.agents.investigator import CheckDoc, Investigator
from rigaudit.agents.investigators._runtime_cuda import (
    CudaCompatFacts,
    collect_cuda,
    judge_cuda_driver_compat,
    judge_device_order,
)
from rigaudit.agents.investigators._runtime_limits import LimitsFacts, collect_limits, judge_nofile, judge_nproc
from rigaudit.tools.model.finding import Area, CommandAction, Finding, Fix, Severity, Where
from rigaudit.tools.probe import Probe, file_ref
from rigaudit.tools.redact import redact_text

AREA: Area = "runtime"
CHECKS = (
    "runtime.torch_cuda",
    "runtime.env",
    "runtime.cuda_driver_compat",
    "runtime.device_order",
    "runtime.nofile",
    "runtime.nproc",
)
__all__ = ["CHECKS", "INVESTIGATOR", "debug_variables", "parse_torch_version"]
CUDA_FOR_ARCH: dict[tuple[int, int], tuple[int, int]] = {
    (7, 0): (9, 0),
    (7, 5): (10, 0),
    (8, 0): (11, 0),
    (8, 6): (11, 1),
    (8, 7): (11, 4),
    (8, 9): (11, 8),
    (9, 0): (11, 8),
    (10, 0): (12, 8),
    (10, 3): (12, 9),
    (12, 0): (12, 8),
    (12, 1): (12, 9),
}
"""The first CUDA release that compiles for each compute capability."""


@dataclass(frozen=True)
class RuntimeFacts:
    inventory: GpuInventory
    platform: Platform
    lxc: LxcConfigs
    scan: ServerScan
    capability: GpuReads
    installs: tuple[TorchInstall, ...]
    searched: tuple[str, ...]
    environs: dict[int, tuple[dict[str, str] | None, str | None]]
    limits: LimitsFacts
    cuda: CudaCompatFacts


async def collect(probe: Probe) -> RuntimeFacts:
    inventory = await collect_gpus(probe)
    platform = await detect_platform(probe)
    lxc = await read_lxc_configs(probe, platform)
    scan = await find_servers(probe)
    capability = await read_per_gpu(probe, inventory, "nvmlDeviceGetCudaComputeCapability")
    torch = await find_torch(probe)
    environ_reads = await probe.gather(*[lambda s=s: probe.read(f"/proc/{s.pid}/environ") for s in scan.servers[:16]])
    environs = {s.pid: (parse_environ(r.data), r.error) for s, r in zip(scan.servers[:16], environ_reads, strict=True)}
    limits = await collect_limits(probe, scan, platform)
    cuda = await collect_cuda(probe, inventory, platform)
    return RuntimeFacts(
        inventory, platform, lxc, scan, capability, torch.installs, torch.searched, environs, limits=limits, cuda=cuda
    )


def _version_tuple(text: str | None) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def _capabilities(f: RuntimeFacts) -> set[tuple[int, int]]:
    out = set()
    for index in f.capability.results:
        value = f.capability.value(index)
        if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
            out.add((value[0], value[1]))
    return out


def _where(f: RuntimeFacts, server: ServerProcess | None) -> Where:
    inside = f.platform.in_container or (server is not None and (bool(server.container) or bool(server.foreign_mnt_ns)))
    return "container" if inside else "host"


def _no_torch_reason(f: RuntimeFacts) -> str:
    if f.scan.servers:
        names = ", ".join(s.label for s in f.scan.servers[:4])
        return f"torch not found for the server ({names}): no libtorch in its memory maps, no torch/version.py by its interpreter"
    hint = ""
    if f.lxc.gpu_configs and not f.platform.in_container:
        ids = ", ".join(c.ctid for c in f.lxc.gpu_configs)
        hint = f" (the server likely runs inside LXC container {ids}, which holds the GPUs; no process of it is visible)"
    return f"no serving Python found on this host{hint}"


def judge_torch_cuda(f: RuntimeFacts) -> Finding:
    check, title = "runtime.torch_cuda", "torch build vs GPU architecture"
    refs = tuple(file_ref(i.version_file) for i in f.installs) + f.capability.refs
    if not f.installs:
        searched = f"; searched {f.scan.searched} and {len(f.searched)} site-packages folders"
        return unknown(check, AREA, title, _no_torch_reason(f) + searched, evidence=f.capability.refs)
    confirmed = [i for i in f.installs if i.server is not None]
    judged = confirmed or list(f.installs)
    caps = _capabilities(f)
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
    bad = [i for i in judged if i.cuda is None or (need is not None and (_version_tuple(i.cuda) or (0, 0)) < need)]
    if not bad:
        if need is None:
            return unknown(check, AREA, title, f"{described}; the GPUs' compute capability is unknown", evidence=refs)
        note = "" if confirmed else " No running server confirms this is the serving Python."
        return ok(
            check,
            AREA,
            title,
            observed,
            expected=f"a CUDA ≥ {need_text} build whose arch list includes {arch}",
            explanation="The CUDA version of the build is new enough for these GPUs. The arch list itself is compiled "
            "into libtorch_cuda.so; confirm it in the serving environment with torch.cuda.get_arch_list()." + note,
            evidence=refs,
        )
    severity: Severity = "high" if confirmed else "low"
    target = bad[0]
    tag = f"cu{need[0]}{need[1]}" if need else "cu128"
    fix = Fix(
        kind="restart",
        where=_where(f, target.server),
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
    return problem(
        check,
        AREA,
        title,
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
        fix,
        subjects=tuple(i.site for i in bad),
        evidence=refs,
    )


def debug_variables(env: dict[str, str]) -> list[str]:
    """Variables that slow a server down or load a tool into it."""
    found = []
    if env.get("CUDA_LAUNCH_BLOCKING", "").strip() not in ("", "0"):
        found.append(f"CUDA_LAUNCH_BLOCKING={env['CUDA_LAUNCH_BLOCKING']}")
    for key in ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"):
        if env.get(key, "").strip():
            found.append(f"{key}={env[key]}")
    found += sorted(k for k in env if k.startswith(("NSYS_", "NV_COMPUTE_PROFILER", "NV_SANITIZER", "NCU_")))
    for key in ("CUDA_PROFILE", "COMPUTE_PROFILE", "PYTORCH_NO_CUDA_MEMORY_CACHING"):
        if env.get(key, "").strip() not in ("", "0"):
            found.append(f"{key}={env[key]}")
    preload = env.get("LD_PRELOAD", "")
    if any(tool in preload.lower() for tool in ("nsys", "nsight", "sanitizer", "injection", "ncu")):
        found.append(f"LD_PRELOAD={preload}")
    return [redact_text(item) for item in found]


def judge_env(f: RuntimeFacts) -> Finding:
    check, title = "runtime.env", "Debug and profiler variables in the server's environment"
    servers = f.scan.servers[:16]
    refs = tuple(file_ref(f"/proc/{s.pid}/environ") for s in servers)
    if not servers:
        return unknown(check, AREA, title, f"no inference server process found ({f.scan.searched})")
    hits: list[tuple[ServerProcess, list[str]]] = []
    unreadable = []
    for server in servers:
        env, error = f.environs.get(server.pid, (None, "not read"))
        if env is None:
            unreadable.append(f"{server.label}: {error}")
        elif found := debug_variables(env):
            hits.append((server, found))
    if not hits:
        readable = len(servers) - len(unreadable)
        if not readable:
            return unknown(check, AREA, title, "server environments not readable: " + "; ".join(unreadable), evidence=refs)
        return ok(
            check,
            AREA,
            title,
            f"no debug or profiler variable in {readable} server processes' environments",
            expected="no CUDA_LAUNCH_BLOCKING, injection or profiler variables",
            evidence=refs,
        )
    variables = sorted({v.split("=")[0] for _, found in hits for v in found})
    fix = Fix(
        kind="restart",
        where=_where(f, hits[0][0]),
        summary="Unset " + ", ".join(variables) + " in the server's launch environment and restart it",
        actions=(
            CommandAction(
                description="remove them from the unit, container environment or launch script that starts "
                "the server (they are inherited by every worker)"
            ),
            CommandAction(description="restart the inference server"),
        ),
        risk="low",
        verify="after the restart, tr '\\0' '\\n' < /proc/PID/environ of the server shows none of them",
        revert="set them again and restart (only while debugging)",
        persist="the edited launch config persists",
    )
    return problem(
        check,
        AREA,
        title,
        "medium",
        "; ".join(f"{s.label}: {', '.join(found)}" for s, found in hits),
        "no CUDA_LAUNCH_BLOCKING, injection or profiler variables",
        "CUDA_LAUNCH_BLOCKING=1 makes every kernel launch synchronous: CUDA graphs and launch overlap disappear and "
        "decode slows several-fold. Injection paths and NSYS/NCU variables load a profiler or sanitizer into every "
        "CUDA process; PYTORCH_NO_CUDA_MEMORY_CACHING turns off torch's allocator cache. All are debugging leftovers.",
        fix,
        subjects=tuple(s.label for s, _ in hits),
        evidence=refs,
    )


def judge(f: RuntimeFacts) -> list[Finding]:
    return [
        judge_torch_cuda(f),
        judge_env(f),
        judge_cuda_driver_compat(f.cuda, f.installs, _no_torch_reason(f)),
        judge_device_order(f.cuda, f.scan.servers[:16], f.environs),
        judge_nofile(f.limits),
        judge_nproc(f.limits),
    ]


DOCS = {
    "runtime.torch_cuda": CheckDoc(
        "torch build vs GPU architecture",
        "the serving Python's `torch/version.py` (through the server's maps or interpreter), NVML compute capability",
        "the build's CUDA predates the GPU's architecture, or a CPU-only build",
        "install a matching torch build",
        ("restart",),
    ),
    "runtime.env": CheckDoc(
        "Debug and profiler variables in the server's environment",
        "`/proc/PID/environ` of the servers",
        "`CUDA_LAUNCH_BLOCKING=1`, injection paths, profiler or sanitizer variables",
        "unset them",
        ("restart",),
    ),
    "runtime.cuda_driver_compat": CheckDoc(
        "CUDA runtime of the server vs the driver's CUDA version",
        "torch's CUDA version (`torch/version.py`), NVML `nvmlSystemGetCudaDriverVersion`",
        "the runtime's major version is newer than the driver supports (high: CUDA init fails); a newer minor (low)",
        "newer driver, or a torch build for the driver's CUDA",
        ("reboot",),
    ),
    "runtime.device_order": CheckDoc(
        "CUDA device order vs NVML/PCI order",
        "NVML GPU names and PCI bus ids by index, `CUDA_DEVICE_ORDER` / `CUDA_VISIBLE_DEVICES` in the servers' environment",
        "mixed GPU models (or NVML out of PCI order) and a server without `CUDA_DEVICE_ORDER=PCI_BUS_ID` or UUIDs",
        "set `CUDA_DEVICE_ORDER=PCI_BUS_ID`",
        ("restart",),
    ),
    "runtime.nofile": CheckDoc(
        "Open-file limit of the server",
        "`/proc/PID/limits` (Max open files) of the servers, `/proc/sys/fs/file-nr`",
        "soft limit below 65536 (medium at 4096 or less), or the system's file handles nearly exhausted",
        "`LimitNOFILE=` / `--ulimit nofile` / `lxc.prlimit.nofile`",
        ("restart",),
    ),
    "runtime.nproc": CheckDoc(
        "Process/thread limit of the server's user",
        "`/proc/PID/limits` (Max processes), `/proc/PID/status` (Uid, Threads) of the servers",
        "a non-root server whose soft limit is below 4096 or under twice the threads its user runs",
        "`LimitNPROC=` / `--ulimit nproc` / `lxc.prlimit.nproc`",
        ("restart",),
    ),
}


INVESTIGATOR = Investigator(
    area=AREA,
    title="Serving runtime: torch and CUDA builds, environment, limits",
    checks=CHECKS,
    collect=collect,
    judge=judge,
    docs=DOCS,
)
