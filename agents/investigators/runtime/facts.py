"""runtime facts: the serving processes, their torch installs, environments, limits, and the GPUs' compute
capabilities; plus the helpers the runtime rules share."""

from __future__ import annotations

import re

from rigaudit.agents.facts.gpus import GpuInventory, collect_gpus
from rigaudit.agents.facts.lxc import LxcConfigs, read_lxc_configs
from rigaudit.agents.facts.nvml_reads import GpuReads, read_per_gpu
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.facts.processes import ServerProcess, ServerScan, find_servers, parse_environ
from rigaudit.agents.facts.python_env import TorchInstall, find_torch
from rigaudit.agents.investigators.runtime.cuda import (
    CudaCompatFacts,
    collect_cuda,
)
from rigaudit.agents.investigators.runtime.limits import LimitsFacts, collect_limits
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.schema.finding import Area, Where

AREA: Area = "runtime"


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


class RuntimeFacts(Record):
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
    cuda = await collect_cuda(probe, inventory, platform, scan.servers[:8])
    return RuntimeFacts(
        inventory, platform, lxc, scan, capability, torch.installs, torch.searched, environs, limits=limits, cuda=cuda
    )


def version_tuple(text: str | None) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def gpu_capabilities(f: RuntimeFacts) -> set[tuple[int, int]]:
    out = set()
    for index in f.capability.results:
        value = f.capability.value(index)
        if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
            out.add((value[0], value[1]))
    return out


def fix_where(f: RuntimeFacts, server: ServerProcess | None) -> Where:
    inside = f.platform.in_container or (server is not None and (bool(server.container) or bool(server.foreign_mnt_ns)))
    return "container" if inside else "host"


def no_torch_reason(f: RuntimeFacts) -> str:
    if f.scan.servers:
        names = ", ".join(s.label for s in f.scan.servers[:4])
        return f"torch not found for the server ({names}): no libtorch in its memory maps, no torch/version.py by its interpreter"
    hint = ""
    if f.lxc.gpu_configs and not f.platform.in_container:
        ids = ", ".join(c.ctid for c in f.lxc.gpu_configs)
        hint = f" (the server likely runs inside LXC container {ids}, which holds the GPUs; no process of it is visible)"
    return f"no serving Python found on this host{hint}"
