"""nccl_p2p: GPU peer-to-peer status and topology, the P2P micro-benchmark's verdict, NCCL overrides."""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import combinations

from agents.facts.gpus import GpuInventory, collect_gpus
from agents.facts.lxc import LxcConfigs, read_lxc_configs
from agents.facts.nvml_reads import label, nvml_unusable
from agents.facts.platform import Platform, detect_platform
from agents.facts.processes import ServerProcess, ServerScan, find_servers, parse_environ
from agents.findings import not_applicable, ok, problem, unknown
from agents.investigator import CheckDoc, Investigator
from agents.investigators._nccl_version import NcclVersionFacts, collect_nccl_version, judge_nccl_version
from tools.hosts.base import FileResult, NvmlResult
from tools.model.finding import Area, CommandAction, Finding, Fix, FixKind, Severity, Where
from tools.probe import Probe, dir_ref, file_ref, nvml_ref

AREA: Area = "nccl_p2p"
CHECKS = ("p2p.status", "p2p.bandwidth", "nccl.env", "nccl.version")
P2P_READ, P2P_WRITE = 0, 1
P2P_STATUS = {
    0: "OK",
    1: "CHIPSET_NOT_SUPPORTED",
    2: "GPU_NOT_SUPPORTED",
    3: "IOH_TOPOLOGY_NOT_SUPPORTED",
    4: "DISABLED_BY_REGKEY",
    5: "NOT_SUPPORTED",
    6: "UNKNOWN",
}
ANCESTOR = {
    0: "same board",
    10: "one PCIe switch",
    20: "several PCIe switches",
    30: "a PCIe host bridge",
    40: "host bridges within a NUMA node",
    50: "the CPU interconnect (SYS)",
}
BENCH_FILE = "/var/tmp/rigaudit/p2p.json"
BENCH_SCHEMA = "rigaudit.p2p/1"
SLOW_FRACTION = 0.5
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


# -- p2p.status -------------------------------------------------------------------------------


def _status(result: NvmlResult) -> int | None:
    return result.value if result.ok and isinstance(result.value, int) else None


def _topology_text(f: NcclP2pFacts) -> str:
    groups: dict[int, list[str]] = {}
    nvlinked = [f"GPU{p.a}–GPU{p.b}" for p in f.pairs if p.nvlink]
    for pair in f.pairs:
        if pair.nvlink:
            continue
        level = pair.ancestor.value if pair.ancestor.ok and isinstance(pair.ancestor.value, int) else -1
        groups.setdefault(level, []).append(f"GPU{pair.a}–GPU{pair.b}")
    parts = []
    for level in sorted(groups):
        names = groups[level]
        where = ANCESTOR.get(level, "an unknown path" if level == -1 else f"level {level}")
        shown = f" ({', '.join(names)})" if len(names) <= 4 else ""
        parts.append(f"{len(names)} pairs through {where}{shown}")
    if nvlinked:
        shown = f" ({', '.join(nvlinked)})" if len(nvlinked) <= 4 else ""
        parts.insert(0, f"{len(nvlinked)} pairs over NVLink{shown}")
    return "; ".join(parts)


def _p2p_fix(codes: set[int], platform: Platform) -> Fix:
    where: Where = "hypervisor" if platform.is_guest else "host"
    verify = "nvidia-smi topo -p2p r and -p2p w show OK for every pair; then `rigaudit bench p2p`"
    if codes == {2}:
        return Fix(
            kind="hardware",
            where=where,
            summary="These GPUs do not support peer-to-peer (consumer cards): "
            "use P2P-capable GPUs or accept NCCL staging through host memory",
            actions=(CommandAction(description="no software fix: GPU_NOT_SUPPORTED is a property of the card"),),
            verify=verify,
            revert="none",
            persist="none",
        )
    if 4 in codes:
        return Fix(
            kind="reboot",
            where=where,
            summary="Remove the driver registry key that disables P2P, then reload the driver",
            actions=(
                CommandAction(
                    description="remove the P2P-disabling NVreg_RegistryDwords entry from "
                    "/etc/modprobe.d/*.conf, update the initramfs and reboot"
                ),
            ),
            risk="medium",
            verify=verify,
            revert="put the registry key back and reboot",
            persist="the modprobe.d edit is persistent",
        )
    return Fix(
        kind="reboot",
        where=where,
        summary="Let P2P through the PCIe path: IOMMU in passthrough (kernel.iommu) and no ACS redirect on the switch "
        "ports between GPUs (pcie.acs)",
        actions=(
            CommandAction(
                description="apply the kernel.iommu and pcie.acs fixes (iommu=pt on the kernel command "
                "line; ACS redirect off on switch downstream ports), reboot, and re-read nvidia-smi topo -p2p r"
            ),
        ),
        risk="medium",
        verify=verify,
        revert="restore the previous kernel command line",
        persist="kernel command line",
    )


def judge_status(f: NcclP2pFacts) -> Finding:
    check, title = "p2p.status", "GPU peer-to-peer status"
    if why := nvml_unusable(f.inventory):
        return unknown(check, AREA, title, why)
    if len(f.inventory.nvml_indices) < 2:
        return not_applicable(check, AREA, title, "fewer than two GPUs: no peer pairs")
    refs = tuple(
        nvml_ref(fn, args)
        for p in f.pairs
        for fn, args in (
            ("nvmlDeviceGetP2PStatus", (p.a, p.b, P2P_READ)),
            ("nvmlDeviceGetP2PStatus", (p.a, p.b, P2P_WRITE)),
            ("nvmlDeviceGetTopologyCommonAncestor", (p.a, p.b)),
        )
    )
    missing = [p for p in f.pairs if _status(p.read) is None or _status(p.write) is None]
    bad = [p for p in f.pairs if p not in missing and (_status(p.read) != 0 or _status(p.write) != 0)]
    good = len(f.pairs) - len(missing) - len(bad)
    topology = _topology_text(f)
    if not bad and missing:
        error = missing[0].read.error or missing[0].write.error or "unknown error"
        shown = "not recorded in this snapshot" if error == "NOT_RECORDED" else error
        return unknown(
            check, AREA, title, f"P2P status of {len(missing)}/{len(f.pairs)} pairs unavailable: {shown}", evidence=refs
        )
    if not bad:
        return ok(
            check,
            AREA,
            title,
            f"{good}/{len(f.pairs)} pairs OK for read and write; topology: {topology}",
            expected="OK for read and write on every pair",
            explanation="NVML allows peer-to-peer on every pair. That says P2P is permitted, not that it is fast or "
            "correct: pairs that cross the CPU interconnect go through the root complex, and only the P2P "
            "micro-benchmark (p2p.bandwidth) shows the bandwidth and whether the copied data is intact.",
            evidence=refs,
        )
    codes: set[int] = set()
    parts = []
    for p in bad:
        r, w = _status(p.read), _status(p.write)
        codes |= {c for c in (r, w) if c}
        parts.append(f"GPU{p.a}–GPU{p.b}: read {P2P_STATUS.get(r or 0, str(r))}, write {P2P_STATUS.get(w or 0, str(w))}")
    shown = "; ".join(parts[:8]) + (f"; and {len(parts) - 8} more" if len(parts) > 8 else "")
    subjects = sorted({label(f.inventory, i) for p in bad for i in (p.a, p.b)})
    return problem(
        check,
        AREA,
        title,
        "high",
        f"{len(bad)}/{len(f.pairs)} pairs refuse P2P: {shown}; topology: {topology}",
        "OK for read and write on every pair",
        "Without P2P, NCCL and the CUDA runtime stage every GPU-to-GPU copy through host memory: all-reduce bandwidth "
        "in tensor parallelism drops by about half on PCIe and latency rises. CHIPSET/IOH_TOPOLOGY_NOT_SUPPORTED usually "
        "means the IOMMU translates DMA or ACS redirects peer traffic to the root complex; DISABLED_BY_REGKEY is a "
        "driver option; GPU_NOT_SUPPORTED is the card itself.",
        _p2p_fix(codes, f.platform),
        subjects=subjects,
        evidence=refs,
    )


# -- p2p.bandwidth ----------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchPair:
    src: int
    dst: int
    unidir: float
    bidir: float | None
    staged: float | None
    limit: float | None
    data_ok: bool


def parse_bench(text: str) -> list[BenchPair] | str:
    """The pairs of a ``rigaudit.p2p/1`` result, or why the file is not one."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"{BENCH_FILE} is not JSON ({exc.msg} at line {exc.lineno})"
    if not isinstance(raw, dict) or raw.get("schema") != BENCH_SCHEMA:
        return f"{BENCH_FILE} is not a {BENCH_SCHEMA} result"
    pairs = []
    for item in raw.get("pairs") or []:
        if not isinstance(item, dict):
            continue
        try:
            pairs.append(
                BenchPair(
                    int(item["src"]),
                    int(item["dst"]),
                    float(item["unidir_gbps"]),
                    _num(item.get("bidir_gbps")),
                    _num(item.get("staged_gbps")),
                    _num(item.get("limit_gbps")),
                    item.get("data_ok") is True,
                )
            )
        except (KeyError, TypeError, ValueError):
            return f"{BENCH_FILE}: a pair lacks src, dst or unidir_gbps"
    if not pairs:
        return f"{BENCH_FILE} holds no pairs"
    return pairs


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def judge_bandwidth(f: NcclP2pFacts) -> Finding:
    check, title = "p2p.bandwidth", "GPU peer-to-peer bandwidth and data check"
    refs = (file_ref(BENCH_FILE),)
    text = f.bench.text()
    if text is None:
        if len(f.inventory.gpus) < 2:
            return not_applicable(check, AREA, title, "fewer than two GPUs: no peer pairs to benchmark", evidence=refs)
        if f.bench.error == "ENOENT":
            return unknown(check, AREA, title, "needs the P2P micro-benchmark: run `rigaudit bench p2p`", evidence=refs)
        return unknown(check, AREA, title, f"{BENCH_FILE} not readable: {f.bench.error}", evidence=refs)
    parsed = parse_bench(text)
    if isinstance(parsed, str):
        return unknown(check, AREA, title, parsed, evidence=refs)
    corrupt = [p for p in parsed if not p.data_ok]
    slow = [
        p
        for p in parsed
        if (p.limit is not None and p.unidir < SLOW_FRACTION * p.limit) or (p.staged is not None and p.unidir < p.staged)
    ]
    uni = [p.unidir for p in parsed]
    limits = sorted({p.limit for p in parsed if p.limit is not None})
    limit_text = f" (limit {'/'.join(f'{v:.0f}' for v in limits)} GB/s)" if limits else ""
    summary = f"{len(parsed)} pairs: unidirectional {min(uni):.1f}–{max(uni):.1f} GB/s{limit_text}"
    if not corrupt and not slow:
        return ok(
            check,
            AREA,
            title,
            f"{summary}; data check passed on every pair",
            expected=f"≥ {SLOW_FRACTION:.0%} of the link limit, faster than staging through the host, data intact",
            evidence=refs,
        )
    where: Where = "hypervisor" if f.platform.is_guest else "host"
    subjects = sorted({label(f.inventory, i) for p in (corrupt or slow) for i in (p.src, p.dst)})
    if corrupt:
        fix = Fix(
            kind="reboot",
            where=where,
            summary="Stop translating peer DMA through the IOMMU (iommu=pt) and keep P2P off in NCCL until the data check passes",
            actions=(
                CommandAction(
                    description="add iommu=pt (with amd_iommu=on or intel_iommu=on) to the kernel command line "
                    "and reboot; see kernel.iommu"
                ),
                CommandAction(description="until then run the server with NCCL_P2P_DISABLE=1 so NCCL stages through host memory"),
            ),
            risk="medium",
            verify="rigaudit bench p2p: data_ok true on every pair",
            revert="restore the previous kernel command line",
            persist="kernel command line",
        )
        pairs = ", ".join(f"GPU{p.src}→GPU{p.dst}" for p in corrupt[:8])
        return problem(
            check,
            AREA,
            title,
            "critical",
            f"data check FAILED on {len(corrupt)} pairs ({pairs}); {summary}",
            "data copied peer-to-peer arrives intact on every pair",
            "A peer copy that completes but delivers wrong bytes is the IOMMU failure mode: with DMA translation on, "
            "peer writes can be dropped or land elsewhere without an error. A model served over such a path returns "
            "wrong results silently. This outranks any performance finding.",
            fix,
            subjects=subjects,
            evidence=refs,
        )
    shown = "; ".join(
        f"GPU{p.src}→GPU{p.dst} {p.unidir:.1f} GB/s"
        + (f" of {p.limit:.0f}" if p.limit is not None else "")
        + (f", staged {p.staged:.1f}" if p.staged is not None else "")
        for p in slow[:8]
    )
    kind: FixKind = "reboot"
    fix = Fix(
        kind=kind,
        where=where,
        summary="Find what slows the P2P path: ACS redirect (pcie.acs), IOMMU translation (kernel.iommu), a degraded "
        "link (pcie.link); fix that, then re-run `rigaudit bench p2p`",
        actions=(
            CommandAction(
                description="apply the fixes of the pcie.acs, kernel.iommu and pcie.link findings, then re-run rigaudit bench p2p"
            ),
        ),
        risk="low",
        verify="rigaudit bench p2p: every pair above half its limit and faster than staged copies",
        revert="per the underlying fix",
        persist="per the underlying fix",
    )
    severity: Severity = "high"
    return problem(
        check,
        AREA,
        title,
        severity,
        f"{len(slow)} slow pairs: {shown}; {summary}",
        f"≥ {SLOW_FRACTION:.0%} of the link limit and faster than staging through the host",
        "Tensor-parallel all-reduce runs at the speed of the slowest pair in the ring. A pair below half its link, "
        "or slower than bouncing through host memory, usually has its traffic redirected through the root complex "
        "(ACS, IOMMU) or a link that trained down.",
        fix,
        subjects=subjects,
        evidence=refs,
    )


# -- nccl.env ---------------------------------------------------------------------------------


def _bad_settings(env: dict[str, str], ib_present: bool) -> list[tuple[str, Severity, str]]:
    bad: list[tuple[str, Severity, str]] = []
    if env.get("NCCL_P2P_DISABLE", "").strip() == "1":
        bad.append(("NCCL_P2P_DISABLE=1", "high", "P2P off: every GPU-to-GPU transfer staged through host memory"))
    level = env.get("NCCL_P2P_LEVEL", "").strip().upper()
    if level in ("LOC", "0"):
        bad.append((f"NCCL_P2P_LEVEL={level}", "high", "P2P allowed only within one GPU: the same as P2P off"))
    if env.get("NCCL_SHM_DISABLE", "").strip() == "1":
        bad.append(("NCCL_SHM_DISABLE=1", "medium", "shared-memory transport off: pairs without P2P fall to sockets"))
    if ib_present and env.get("NCCL_IB_DISABLE", "").strip() == "1":
        bad.append(("NCCL_IB_DISABLE=1", "medium", "InfiniBand present but disabled: inter-node traffic over TCP"))
    return bad


def judge_env(f: NcclP2pFacts) -> Finding:
    check, title = "nccl.env", "NCCL overrides in configs and server environments"
    refs = tuple(s.ref for s in f.sources) + tuple(file_ref(p) for p in f.absent) + (dir_ref(IB_CLASS),)
    hits: list[tuple[EnvSource, str, Severity, str]] = []
    for source in f.sources:
        if source.variables is not None:
            hits += [(source, setting, sev, why) for setting, sev, why in _bad_settings(source.variables, bool(f.ib_devices))]
    searched = [s.name for s in f.sources if s.variables is not None]
    unreadable = [f"{s.name} ({s.error})" for s in f.sources if s.variables is None]
    if not hits:
        parts = []
        if searched:
            parts.append("no NCCL_P2P_DISABLE/P2P_LEVEL=LOC/SHM_DISABLE/IB_DISABLE override in " + ", ".join(searched))
        if f.absent:
            parts.append("absent: " + ", ".join(f.absent))
        if not f.scan.servers:
            parts.append(f"no inference server process found to read its environment ({f.scan.searched})")
        if unreadable:
            parts.append("not readable: " + ", ".join(unreadable))
        return ok(
            check,
            AREA,
            title,
            "; ".join(parts),
            expected="no override that turns off P2P, SHM or IB",
            explanation="NCCL picks P2P, SHM or network transports by topology; these variables force it off a "
            "transport and are often left behind from debugging.",
            evidence=refs,
        )
    severity: Severity = "high" if any(h[2] == "high" for h in hits) else "medium"
    in_container = any(h[0].in_container for h in hits)
    actions = (
        *(CommandAction(description=f"remove {setting} from {source.name}") for source, setting, _, _ in hits),
        CommandAction(description="restart the inference server (or its container) so the environment is read again"),
    )
    fix = Fix(
        kind="restart",
        where="container" if in_container else "host",
        summary="Remove the NCCL overrides and restart the server: " + ", ".join(sorted({h[1] for h in hits})),
        actions=actions,
        risk="low",
        verify="after the restart, tr '\\0' '\\n' < /proc/PID/environ | grep ^NCCL_ shows none of them, and NCCL_DEBUG=INFO "
        "logs 'via P2P' for the GPU channels",
        revert="put the removed lines back and restart: " + "; ".join(f"{h[1]} in {h[0].name}" for h in hits),
        persist="the edited files are persistent",
    )
    return problem(
        check,
        AREA,
        title,
        severity,
        "; ".join(f"{setting} in {source.name}" for source, setting, _, _ in hits),
        "no override that turns off P2P, SHM or IB",
        "; ".join(sorted({h[3] for h in hits})) + ". With P2P off, tensor-parallel all-reduce on PCIe GPUs loses about "
        "half its bandwidth. Such overrides are sometimes a deliberate workaround for broken P2P (the IOMMU data "
        "corruption case): remove them only once p2p.bandwidth shows the data check passing on every pair.",
        fix,
        subjects=tuple(sorted({h[0].name for h in hits})),
        evidence=refs,
    )


def judge(f: NcclP2pFacts) -> list[Finding]:
    return [judge_status(f), judge_bandwidth(f), judge_env(f), judge_nccl_version(f.version)]


DOCS = {
    "p2p.status": CheckDoc(
        "GPU peer-to-peer status",
        "NVML P2P status (read, write) for each GPU pair; NVML common ancestor",
        "a pair reports anything but OK",
        "per cause: ACS, IOMMU, driver regkey",
        ("runtime", "reboot", "firmware"),
    ),
    "p2p.bandwidth": CheckDoc(
        "GPU peer-to-peer bandwidth and data check",
        "the P2P micro-benchmark's result (`/var/tmp/rigaudit/p2p.json`)",
        "a pair far below its link, slower than staging through the host, or corrupting data",
        "per cause",
        ("runtime", "reboot", "hardware"),
    ),
    "nccl.env": CheckDoc(
        "NCCL overrides in configs and server environments",
        "`/etc/nccl.conf`, `~/.nccl.conf`, LXC `lxc.environment`, `/proc/PID/environ` of the servers",
        "`NCCL_P2P_DISABLE=1`, `NCCL_P2P_LEVEL=LOC`, `NCCL_SHM_DISABLE=1`, `NCCL_IB_DISABLE=1` with an IB NIC",
        "remove the override",
        ("restart",),
    ),
    "nccl.version": CheckDoc(
        "NCCL library vs the torch build",
        "torch's wheel METADATA (`Requires-Dist: nvidia-nccl-cuXX==`), the nvidia-nccl wheel's dist-info, the libnccl the "
        "server maps (`/proc/PID/maps`)",
        "the NCCL loaded or installed differs from the one torch pins (medium when older or missing)",
        "install the pinned nvidia-nccl wheel; drop LD_LIBRARY_PATH overrides",
        ("restart",),
    ),
}


INVESTIGATOR = Investigator(
    area=AREA, title="GPU peer-to-peer and NCCL transport settings", checks=CHECKS, collect=collect, judge=judge, docs=DOCS
)
