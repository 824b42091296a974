"""nccl facts: the NCCL variables of config files, LXC configs and server environments, and the NCCL library in use."""

from __future__ import annotations

from rigaudit.agents.facts.lxc import LxcConfigs, read_lxc_configs
from rigaudit.agents.facts.nvlink_management import rdma_devices
from rigaudit.agents.facts.p2p_context import P2pContext, collect_p2p_context
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.facts.processes import ServerScan, find_servers, parse_environ
from rigaudit.agents.investigators.driver.internode import Internode, collect_internode
from rigaudit.agents.investigators.nccl.topo_facts import TopoChoice, choose, nd_size, shipped_paths
from rigaudit.agents.investigators.nccl.version import NcclVersionFacts, collect_nccl_version
from rigaudit.tools.core.record import Record, replace
from rigaudit.tools.hosts.probe import Probe, file_ref
from rigaudit.tools.schema.finding import Area

AREA: Area = "nccl"
NCCL_CONF_FILES = ("/etc/nccl.conf", "/root/.nccl.conf")
NCCL_CONF_ORDER = ("/root/.nccl.conf", "/etc/nccl.conf")
"""The order NCCL takes a variable from its config files in: the user's first (setenv without overwrite)."""
INFINIBAND = "/sys/class/infiniband"


class EnvSource(Record):
    """One place NCCL variables come from: a config file, an LXC config or a process environment."""

    name: str
    ref: str
    variables: dict[str, str] | None
    """None when the source exists but could not be read."""
    error: str | None
    in_container: bool
    container: str | None = None


class NcclFacts(Record):
    sources: tuple[EnvSource, ...]
    absent: tuple[str, ...]
    """Config files looked for and not there."""
    scan: ServerScan
    ib_devices: tuple[str, ...]
    version: NcclVersionFacts
    p2p: P2pContext
    topo: tuple[TopoChoice, ...] = ()
    """On an Azure VM: the NCCL topology file each server loads (nccl.topo_file); empty elsewhere."""
    shipped: tuple[str, ...] = ()
    """Azure's topology file of this ND size and its link, those present on this host."""
    internode: Internode | None = None
    """Where RDMA NICs are (and on an Azure VM): whether a server talks to other nodes (its collectives cross the
    NICs); None elsewhere."""
    ib_management: tuple[str, ...] = ()
    """The NVLink management ports left out of ``ib_devices`` (VPD SMDL=SW_MNG): an NCCL_IB_HCA must not select them."""


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


class _Environ(Record):
    """A process whose environment NCCL would run with: a server, or where none is known, a process on a GPU."""

    pid: int
    label: str
    container: str | None
    foreign_mnt_ns: bool


def _environ_targets(scan: ServerScan) -> list[_Environ]:
    """The servers; where none is recognized, the processes NVML lists on the GPUs (an engine rigaudit does not know:
    NCCL reads its variables there all the same)."""
    if scan.servers:
        return [_Environ(s.pid, s.label, s.container, bool(s.foreign_mnt_ns)) for s in scan.servers[:16]]
    seen: dict[int, _Environ] = {}
    for p in scan.gpu_processes:
        name = p.argv[0].rsplit("/", 1)[-1] if p.argv else "command unknown"
        where = f" in {p.container}" if p.container else ""
        label = f"pid {p.pid} ({name}{where} on GPU{p.gpu_index}, not a server rigaudit knows)"
        seen.setdefault(p.pid, _Environ(p.pid, label, p.container, bool(p.foreign_mnt_ns)))
    return list(seen.values())[:16]


async def _process_sources(probe: Probe, targets: list[_Environ], platform: Platform) -> list[EnvSource]:
    environs = await probe.gather(*[lambda t=t: probe.read(f"/proc/{t.pid}/environ") for t in targets])
    out = []
    for target, result in zip(targets, environs, strict=True):
        inside = platform.in_container or bool(target.container) or target.foreign_mnt_ns
        out.append(
            EnvSource(
                f"environment of {target.label}",
                file_ref(f"/proc/{target.pid}/environ"),
                parse_environ(result.data),
                result.error,
                inside,
                target.container or platform.container_runtime,
            )
        )
    return out


async def collect(probe: Probe) -> NcclFacts:
    platform = await detect_platform(probe)
    lxc = await read_lxc_configs(probe, platform)
    scan = await find_servers(probe)
    conf_paths: list[tuple[str, bool, str | None]] = [(p, platform.in_container, None) for p in NCCL_CONF_FILES]
    for server in scan.servers[:8]:
        if server.root:
            conf_paths += [(f"{server.root}{p}", True, server.container) for p in NCCL_CONF_FILES]
    sources, absent = await _conf_sources(probe, list(dict.fromkeys(conf_paths)))
    sources += _lxc_sources(lxc)
    sources += await _process_sources(probe, _environ_targets(scan), platform)
    ib = await rdma_devices(probe)
    version = await collect_nccl_version(probe, platform, scan)
    p2p = await collect_p2p_context(probe)
    internode = await collect_internode(probe) if ib.entries else None
    facts = NcclFacts(
        tuple(sources), tuple(absent), scan, ib.entries or (), version, p2p, internode=internode, ib_management=ib.management
    )
    size = nd_size(p2p.gpus) if platform.cloud == "azure" else None
    if size is None:
        return facts
    shipped = [p for p in shipped_paths(size[1]) if await probe.exists(p)]
    topo = await _topo_choices(probe, scan, sources, platform)
    return replace(facts, topo=topo, shipped=tuple(shipped), internode=internode or await collect_internode(probe))


async def _topo_choices(probe: Probe, scan: ServerScan, sources: list[EnvSource], platform: Platform) -> tuple[TopoChoice, ...]:
    """Each server's NCCL topology file: its environment, then ~/.nccl.conf, then /etc/nccl.conf (NCCL's order)."""
    by_ref = {s.ref: s for s in sources}

    def confs(root: str) -> list[tuple[str, dict[str, str] | None]]:
        return [
            (f"{root}{p}", by_ref[file_ref(f"{root}{p}")].variables) for p in NCCL_CONF_ORDER if file_ref(f"{root}{p}") in by_ref
        ]

    if not scan.servers:
        return (await choose(probe, None, None, confs(""), platform.in_container),)
    out = []
    for server in scan.servers[:16]:
        env = by_ref.get(file_ref(f"/proc/{server.pid}/environ"))
        inside = platform.in_container or bool(server.container) or bool(server.foreign_mnt_ns)
        pair = (env.name, env.variables) if env else None
        out.append(await choose(probe, server, pair, confs(server.root), inside))
    return tuple(out)


def _lxc_sources(lxc: LxcConfigs) -> list[EnvSource]:
    sources = [EnvSource(f"{c.path} (lxc.environment)", c.ref, c.environment, None, True, f"lxc {c.ctid}") for c in lxc.configs]
    sources += [EnvSource(path, file_ref(path), None, error, True) for path, error in lxc.unreadable]
    return sources
