"""container facts: the platform, LXC configs, GPU device minors, /dev, limits and mounts of this container and of
the servers, `pct list`; plus the helpers the container rules share."""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.facts.cdi import CdiUse, read_cdi
from rigaudit.agents.facts.gpus import GpuInventory, collect_gpus
from rigaudit.agents.facts.lxc import LxcConfig, LxcConfigs, read_lxc_configs
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.facts.processes import ServerScan, find_servers
from rigaudit.agents.facts.rdma import RdmaFacts, collect_rdma
from rigaudit.agents.facts.rootless import Rootless, read_rootless
from rigaudit.agents.investigators.container.cpu import CgroupCpuFacts, collect_cgroup_cpu
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.hosts.base import CommandResult
from rigaudit.tools.hosts.probe import Probe, dir_ref
from rigaudit.tools.schema.finding import Area, CommandAction, Finding, Fix

AREA: Area = "container"
PCT_LIST = ("pct", "list")


class ContainerFacts(Record):
    platform: Platform
    inventory: GpuInventory
    lxc: LxcConfigs
    minors: dict[str, int]
    """GPU BDF -> /dev/nvidiaN minor, from /proc/driver/nvidia/gpus/BDF/information."""
    proc_devices: str | None
    dev_entries: tuple[str, ...] | None
    dev_error: str | None
    self_limits: str | None
    mounts: str | None
    scan: ServerScan
    server_limits: dict[int, str | None]
    server_mounts: dict[int, str | None]
    pct: CommandResult | None
    cpu: CgroupCpuFacts
    rdma: RdmaFacts
    host_pids: bool = False
    """This container shares the machine's PID namespace (Kubernetes' ``hostPID``, a DaemonSet's): PID 1 runs in
    another mount namespace, so every server on the machine is visible from here, and one in none is elsewhere."""
    rootless: Rootless = Rootless(False, None, "not read")
    cdi: CdiUse = CdiUse(False, "not read")
    server_dev: dict[int, tuple[str, ...] | None] = field(default_factory=dict)
    """On a host: the /dev of each server that runs in a container (``/proc/PID/root/dev``; None: unread)."""


async def _minor(probe: Probe, bdf: str) -> int | None:
    text = await probe.text(f"/proc/driver/nvidia/gpus/{bdf}/information")
    match = re.search(r"^Device Minor:\s*(\d+)", text or "", re.MULTILINE)
    return int(match.group(1)) if match else None


async def collect(probe: Probe) -> ContainerFacts:
    platform = await detect_platform(probe)
    inventory = await collect_gpus(probe)
    lxc = await read_lxc_configs(probe, platform)
    bdfs = [g.bdf for g in inventory.gpus]
    minors = await probe.gather(*[lambda b=b: _minor(probe, b) for b in bdfs])
    proc_devices = await probe.text("/proc/devices")
    dev = await probe.list_dir("/dev") if platform.in_container else None
    self_limits = await probe.text("/proc/self/limits") if platform.in_container else None
    mounts = await probe.text("/proc/mounts") if platform.in_container else None
    scan = await find_servers(probe)
    host_pids = False
    if platform.in_container:
        init_ns, own_ns = await probe.gather(
            lambda: probe.readlink("/proc/1/ns/mnt"), lambda: probe.readlink("/proc/self/ns/mnt")
        )
        host_pids = init_ns is not None and own_ns is not None and init_ns != own_ns
    servers = scan.servers[:16]
    limits = await probe.gather(*[lambda s=s: probe.text(f"/proc/{s.pid}/limits") for s in servers])
    server_mounts = await probe.gather(*[lambda s=s: probe.text(f"/proc/{s.pid}/mounts") for s in servers])
    pct = await probe.run(PCT_LIST) if lxc.configs else None
    cpu = await collect_cgroup_cpu(probe, platform, lxc, len(inventory.gpus))
    contained = [] if platform.in_container else [s for s in servers if s.container]
    server_dev = await probe.gather(*[lambda s=s: probe.list_dir(f"/proc/{s.pid}/root/dev") for s in contained])
    return ContainerFacts(
        platform=platform,
        inventory=inventory,
        lxc=lxc,
        minors={b: m for b, m in zip(bdfs, minors, strict=True) if m is not None},
        proc_devices=proc_devices,
        dev_entries=dev.entries if dev is not None else None,
        dev_error=dev.error if dev is not None else None,
        self_limits=self_limits,
        mounts=mounts,
        scan=scan,
        server_limits={s.pid: t for s, t in zip(servers, limits, strict=True)},
        server_mounts={s.pid: t for s, t in zip(servers, server_mounts, strict=True)},
        pct=pct,
        cpu=cpu,
        rdma=await collect_rdma(probe),
        host_pids=host_pids,
        rootless=await read_rootless(probe, platform, tuple(s.pid for s in contained)),
        cdi=await read_cdi(probe, platform),
        server_dev={s.pid: d.entries for s, d in zip(contained, server_dev, strict=True)},
    )


def uvm_major(proc_devices: str | None) -> int | None:
    match = re.search(r"^\s*(\d+)\s+nvidia-uvm\s*$", proc_devices or "", re.MULTILINE)
    return int(match.group(1)) if match else None


def gpu_minors(f: ContainerFacts) -> list[int]:
    """The /dev/nvidiaN minors of the GPUs (NVML indices when the driver's minors are unknown)."""
    if f.minors:
        return sorted(f.minors.values())
    return sorted(f.inventory.nvml_indices)


def node_span(minors: list[int]) -> str:
    """``/dev/nvidia0–7`` for a contiguous run of more than two minors, else the nodes listed."""
    if not minors:
        return "none"
    if minors == list(range(minors[0], minors[-1] + 1)) and len(minors) > 2:
        return f"/dev/nvidia{minors[0]}–{minors[-1]}"
    return ", ".join(f"/dev/nvidia{m}" for m in minors)


def gpu_nodes(config: LxcConfig) -> list[int]:
    """The /dev/nvidiaN minors a container config passes in."""
    nodes = config.mounted_nodes | config.dev_nodes
    return sorted(int(n.removeprefix("/dev/nvidia")) for n in nodes if re.fullmatch(r"/dev/nvidia\d+", n))


def lxc_fix(config: LxcConfig, uvm: int | None, summary: str, lines: list[str]) -> Fix:
    """Add config lines to an LXC container and restart it."""
    return Fix(
        kind="restart",
        where="container_config",
        summary=summary,
        actions=(
            *(CommandAction(description=f"add to {config.path}: {line}") for line in lines),
            CommandAction(description=f"restart container {config.ctid}", argv=("pct", "reboot", config.ctid)),
        ),
        risk="medium",
        verify=f"pct exec {config.ctid} -- nvidia-smi -L lists every GPU; ls -l /dev/nvidia* inside shows the nodes",
        revert=f"remove the added lines from {config.path} and restart the container",
        persist=f"{config.path} is persistent",
    )


def no_gpu_here(check: Check, f: ContainerFacts) -> Finding | None:
    """The check's ``not_applicable`` inside a container with no NVIDIA GPU even in sysfs (which shows the host's PCI
    bus): nothing to pass in. None where there is one."""
    if f.platform.in_container and not f.inventory.gpus and not f.inventory.nvml_ok:
        return check.not_applicable(NO_GPU, evidence=(dir_ref("/sys/bus/pci/devices"),))
    return None


def rdma_devices_here(f: ContainerFacts) -> bool | None:
    """Whether the server can reach an RDMA device: on a host, a server of the host always and one in a container
    only with /dev/infiniband in its /dev (``/proc/PID/root/dev``); in a container only with /dev/infiniband passed
    in (the host's NICs show in sysfs either way). None: the container's /dev unread."""
    if not f.platform.in_container:
        if not f.server_dev:
            return True
        listed = list(f.server_dev.values())
        if any(d is not None and "infiniband" in d for d in listed):
            return True
        return None if any(d is None for d in listed) else False
    if f.dev_entries is None:
        return None
    return "infiniband" in f.dev_entries


def servers_runtime(f: ContainerFacts) -> str:
    """The container runtime to fix: this container's, else the first server container's (empty when none is known)."""
    return f.platform.container_runtime or next((s.container.split()[0] for s in f.scan.servers if s.container), "")


NO_GPU = "no NVIDIA GPU on this machine (none on the PCI bus as sysfs shows it, NVML unavailable): nothing to pass in"
