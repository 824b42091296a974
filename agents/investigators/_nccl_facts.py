"""nccl_p2p facts: NVML P2P status and topology of every GPU pair, the P2P benchmark's file, and the NCCL
variables of config files, LXC configs and server environments."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from rigaudit.agents.facts.gpus import GpuInventory, collect_gpus
from rigaudit.agents.facts.lxc import LxcConfigs, read_lxc_configs
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.facts.processes import ServerProcess, ServerScan, find_servers, parse_environ
from rigaudit.agents.investigators._nccl_version import NcclVersionFacts, collect_nccl_version
from rigaudit.tools.hosts.base import FileResult, NvmlResult
from rigaudit.tools.model.finding import Area
from rigaudit.tools.probe import Probe, file_ref

AREA: Area = "nccl_p2p"
P2P_READ, P2P_WRITE = 0, 1
BENCH_FILE = "/var/tmp/rigaudit/p2p.json"
BENCH_SCHEMA = "rigaudit.p2p/1"
NCCL_CONF_FILES = ("/etc/nccl.conf", "/root/.nccl.conf")
IB_CLASS = "/sys/class/infiniband"


@dataclass(frozen=True)
class Pair:
    a: int
    b: int
    read: NvmlResult
    write: NvmlResult
    ancestor: NvmlResult
    nvlink: bool = False
    """Both GPUs report NVLink link 0 active: peer traffic takes NVLink, not the PCIe path of the topology."""


@dataclass(frozen=True)
class EnvSource:
    """One place NCCL variables come from: a config file, an LXC config or a process environment."""

    name: str
    ref: str
    variables: dict[str, str] | None
    """None when the source exists but could not be read."""
    error: str | None
    in_container: bool
    container: str | None = None


@dataclass(frozen=True)
class NcclP2pFacts:
    inventory: GpuInventory
    platform: Platform
    pairs: tuple[Pair, ...]
    bench: FileResult
    sources: tuple[EnvSource, ...]
    absent: tuple[str, ...]
    """Config files looked for and not there."""
    scan: ServerScan
    ib_devices: tuple[str, ...]
    version: NcclVersionFacts


async def _pair(probe: Probe, a: int, b: int) -> Pair:
    read = await probe.nvml("nvmlDeviceGetP2PStatus", a, b, P2P_READ)
    write = await probe.nvml("nvmlDeviceGetP2PStatus", a, b, P2P_WRITE)
    ancestor = await probe.nvml("nvmlDeviceGetTopologyCommonAncestor", a, b)
    links = [await probe.nvml("nvmlDeviceGetNvLinkState", gpu, 0) for gpu in (a, b)]
    return Pair(a, b, read, write, ancestor, nvlink=all(r.ok and r.value == 1 for r in links))


def parse_nccl_conf(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines of nccl.conf; ``#`` starts a comment."""
    out = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        key, sep, value = line.partition("=")
        if sep and key.strip():
            out[key.strip()] = value.strip().strip("'\"")
    return out


async def _conf_sources(probe: Probe, paths: list[tuple[str, bool, str | None]]) -> tuple[list[EnvSource], list[str]]:
    results = await probe.gather(*[lambda p=p: probe.read(p) for p, _, _ in paths])
    sources, absent = [], []
    for (path, inside, container), result in zip(paths, results, strict=True):
        if result.error == "ENOENT":
            absent.append(path)
            continue
        text = result.text()
        variables = parse_nccl_conf(text) if text is not None else None
        sources.append(EnvSource(path, file_ref(path), variables, result.error, inside, container))
    return sources, absent


async def _process_sources(probe: Probe, servers: tuple[ServerProcess, ...], platform: Platform) -> list[EnvSource]:
    environs = await probe.gather(*[lambda s=s: probe.read(f"/proc/{s.pid}/environ") for s in servers])
    out = []
    for server, result in zip(servers, environs, strict=True):
        inside = platform.in_container or bool(server.container) or bool(server.foreign_mnt_ns)
        out.append(
            EnvSource(
                f"environment of {server.label}",
                file_ref(f"/proc/{server.pid}/environ"),
                parse_environ(result.data),
                result.error,
                inside,
                server.container,
            )
        )
    return out


async def collect(probe: Probe) -> NcclP2pFacts:
    inventory = await collect_gpus(probe)
    platform = await detect_platform(probe)
    indices = inventory.nvml_indices
    pairs = await probe.gather(*[lambda a=a, b=b: _pair(probe, a, b) for a, b in combinations(indices, 2)])
    bench = await probe.read(BENCH_FILE)
    lxc = await read_lxc_configs(probe, platform)
    scan = await find_servers(probe)
    conf_paths: list[tuple[str, bool, str | None]] = [(p, platform.in_container, None) for p in NCCL_CONF_FILES]
    for server in scan.servers[:8]:
        if server.root:
            conf_paths += [(f"{server.root}{p}", True, server.container) for p in NCCL_CONF_FILES]
    sources, absent = await _conf_sources(probe, list(dict.fromkeys(conf_paths)))
    sources += _lxc_sources(lxc)
    sources += await _process_sources(probe, scan.servers[:16], platform)
    ib = await probe.list_dir(IB_CLASS)
    version = await collect_nccl_version(probe, platform, scan)
    return NcclP2pFacts(inventory, platform, tuple(pairs), bench, tuple(sources), tuple(absent), scan, ib.entries or (), version)


def _lxc_sources(lxc: LxcConfigs) -> list[EnvSource]:
    sources = [EnvSource(f"{c.path} (lxc.environment)", c.ref, c.environment, None, True, f"lxc {c.ctid}") for c in lxc.configs]
    sources += [EnvSource(path, file_ref(path), None, error, True) for path, error in lxc.unreadable]
    return sources
