"""container: where the audit runs, and whether containers get their GPUs, locked memory and /dev/shm."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agents.facts.gpus import GpuInventory, collect_gpus
from agents.facts.lxc import NVIDIA_MAJOR, DeviceAllow, LxcConfig, LxcConfigs, read_lxc_configs
from agents.facts.platform import Platform, detect_platform
from agents.facts.processes import ServerScan, find_servers
from agents.findings import not_applicable, ok, problem, unknown
from agents.investigator import CheckDoc, Investigator
from agents.investigators._container_cpu import CpuFacts, collect_cpu, judge_cgroup_cpu
from tools.hosts.base import CommandResult
from tools.model.finding import Area, CommandAction, Finding, Fix, Severity
from tools.probe import Probe, command_ref, dir_ref, file_ref

AREA: Area = "container"
CHECKS = ("container.platform", "container.gpu_devices", "container.memlock", "container.shm", "container.cgroup_cpu")
CTL_MINOR = 255
SHM_MIN = 2**30
PCT_LIST = ("pct", "list")


@dataclass(frozen=True)
class ContainerFacts:
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
    cpu: CpuFacts


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
    servers = scan.servers[:16]
    limits = await probe.gather(*[lambda s=s: probe.text(f"/proc/{s.pid}/limits") for s in servers])
    server_mounts = await probe.gather(*[lambda s=s: probe.text(f"/proc/{s.pid}/mounts") for s in servers])
    pct = await probe.run(PCT_LIST) if lxc.configs else None
    cpu = await collect_cpu(probe, platform, lxc, len(inventory.gpus))
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
    )


def uvm_major(proc_devices: str | None) -> int | None:
    match = re.search(r"^\s*(\d+)\s+nvidia-uvm\s*$", proc_devices or "", re.MULTILINE)
    return int(match.group(1)) if match else None


def _gpu_minors(f: ContainerFacts) -> list[int]:
    if f.minors:
        return sorted(f.minors.values())
    return sorted(f.inventory.nvml_indices)


def _node_span(minors: list[int]) -> str:
    if not minors:
        return "none"
    if minors == list(range(minors[0], minors[-1] + 1)) and len(minors) > 2:
        return f"/dev/nvidia{minors[0]}–{minors[-1]}"
    return ", ".join(f"/dev/nvidia{m}" for m in minors)


def _running(f: ContainerFacts) -> dict[str, str]:
    """Container id -> status, from `pct list`."""
    if f.pct is None or not f.pct.ok:
        return {}
    out = {}
    for line in f.pct.stdout.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 2 and parts[0].isdigit():
            out[parts[0]] = parts[1]
    return out


def _gpu_nodes(config: LxcConfig) -> list[int]:
    nodes = config.mounted_nodes | config.dev_nodes
    return sorted(int(n.removeprefix("/dev/nvidia")) for n in nodes if re.fullmatch(r"/dev/nvidia\d+", n))


def judge_platform(f: ContainerFacts) -> Finding:
    check, title = "container.platform", "Where the audit runs"
    refs = f.platform.evidence + tuple(c.ref for c in f.lxc.configs)
    if f.platform.kind == "unknown":
        return unknown(check, AREA, title, f.platform.how, evidence=refs)
    observed = f"{f.platform.kind} ({f.platform.how})"
    where = {
        "bare_metal": "fixes apply on this host",
        "vm": "kernel, PCI and CPU fixes belong to the guest kernel; BIOS, IOMMU and ACS of the physical host belong to "
        "the hypervisor",
        "lxc": "kernel, PCI, CPU and driver fixes belong to the hypervisor (the container shares its kernel); the "
        "container's config holds its devices, limits and environment",
        "docker": "kernel, PCI, CPU and driver fixes belong to the host; the container's run options hold its devices, "
        "shm size, limits and environment",
        "container": "kernel, PCI, CPU and driver fixes belong to the host",
    }[f.platform.kind]
    if f.lxc.configs:
        status = _running(f)
        parts = []
        for config in f.lxc.configs:
            nodes = _gpu_nodes(config)
            state = f" ({status[config.ctid]})" if config.ctid in status else ""
            gpus = f"{len(nodes)} GPUs ({_node_span(nodes)})" if nodes else "no GPU"
            parts.append(f"{config.ctid}{state}: {gpus}")
        observed += "; Proxmox host of LXC containers: " + "; ".join(parts)
        where += "; container-level fixes go in /etc/pve/lxc/ID.conf and need a container restart"
        if f.pct is not None:
            refs += (command_ref(PCT_LIST),)
    return ok(check, AREA, title, observed, explanation=where.capitalize() + ".", evidence=refs)


def _lxc_device_problems(f: ContainerFacts, config: LxcConfig, others: set[int]) -> list[tuple[Severity, str]]:
    out: list[tuple[Severity, str]] = []
    passed_nodes = config.mounted_nodes | config.dev_nodes
    mounted = config.mounted_nodes
    uvm = uvm_major(f.proc_devices)
    missing_gpus = [m for m in _gpu_minors(f) if f"/dev/nvidia{m}" not in passed_nodes and m not in others]
    if missing_gpus:
        out.append(("medium", f"{_node_span(missing_gpus)} not passed in (and not given to another container)"))
    for node in ("/dev/nvidiactl", "/dev/nvidia-uvm"):
        if node not in passed_nodes:
            out.append(("high", f"{node} not passed in"))
    needs = [(f"/dev/nvidia{m}", NVIDIA_MAJOR, m) for m in _gpu_minors(f)]
    needs.append(("/dev/nvidiactl", NVIDIA_MAJOR, CTL_MINOR))
    if uvm is not None:
        needs.append(("/dev/nvidia-uvm", uvm, 0))
    denied = [node for node, major, minor in needs if node in mounted and not config.allowed(major, minor)]
    if denied:
        out.append(("high", f"cgroup does not allow {', '.join(denied)} (lxc.cgroup2.devices.allow)"))
    return out


def _rule_text(rule: DeviceAllow, uvm: int | None) -> str:
    text = f"{rule.kind} {rule.major}:{rule.minor}"
    names = {str(NVIDIA_MAJOR): "nvidia", str(uvm): "nvidia-uvm"}
    return f"{text} ({names[rule.major]})" if rule.major in names else text


def _lxc_fix(config: LxcConfig, uvm: int | None, summary: str, lines: list[str]) -> Fix:
    return Fix(
        kind="restart",
        where="container",
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


def _no_gpu_on_this_machine(f: ContainerFacts) -> bool:
    """Inside a container with no NVIDIA GPU even in sysfs (which shows the host's PCI bus): nothing to pass in."""
    return f.platform.in_container and not f.inventory.gpus and not f.inventory.nvml_ok


NO_GPU = "no NVIDIA GPU on this machine (none on the PCI bus as sysfs shows it, NVML unavailable): nothing to pass in"


def judge_gpu_devices(f: ContainerFacts) -> Finding:
    check, title = "container.gpu_devices", "GPU device nodes in containers"
    if _no_gpu_on_this_machine(f):
        return not_applicable(check, AREA, title, NO_GPU, evidence=(dir_ref("/sys/bus/pci/devices"),))
    if f.platform.in_container:
        return _judge_inside(f)
    if f.platform.kind == "vm" and not f.lxc.configs:
        return not_applicable(check, AREA, title, "a VM guest: GPUs arrive by PCI passthrough (see pcie and driver)")
    gpu_configs = f.lxc.gpu_configs
    refs = (*(c.ref for c in f.lxc.configs), file_ref("/proc/devices"))
    if not gpu_configs:
        why = "no container config on this host passes GPUs" if f.lxc.configs else "not a container, and hosts no LXC containers"
        return not_applicable(check, AREA, title, why, evidence=refs)
    uvm = uvm_major(f.proc_devices)
    found: list[tuple[LxcConfig, Severity, str]] = []
    for config in gpu_configs:
        others = {m for c in gpu_configs if c is not config for m in _gpu_nodes(c)}
        found += [(config, sev, text) for sev, text in _lxc_device_problems(f, config, others)]
    if not found:
        uvm_note = "" if uvm is not None else " (nvidia-uvm major unknown: /proc/devices unreadable)"
        parts = [
            f"container {c.ctid}: {_node_span(_gpu_nodes(c))}, nvidiactl, nvidia-uvm passed in; cgroup allows "
            + (", ".join(_rule_text(r, uvm) for r in c.allows) or "them through devN entries")
            for c in gpu_configs
        ]
        return ok(
            check,
            AREA,
            title,
            "; ".join(parts) + uvm_note,
            expected="every GPU, nvidiactl and nvidia-uvm passed in and allowed by the cgroup",
            evidence=refs,
        )
    config = found[0][0]
    severity: Severity = "high" if any(s == "high" for _, s, _ in found) else "medium"
    lines = [f"lxc.cgroup2.devices.allow: c {NVIDIA_MAJOR}:* rwm"]
    if uvm is not None:
        lines.append(f"lxc.cgroup2.devices.allow: c {uvm}:* rwm")
    lines += [
        f"lxc.mount.entry: {n} {n[1:]} none bind,optional,create=file"
        for n in [*(f"/dev/nvidia{m}" for m in _gpu_minors(f)), "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
        if n not in config.mounted_nodes | config.dev_nodes
    ]
    return problem(
        check,
        AREA,
        title,
        severity,
        "; ".join(f"container {c.ctid}: {text}" for c, _, text in found),
        "every GPU, nvidiactl and nvidia-uvm passed in and allowed by the cgroup",
        "A container sees a GPU only if its device node is mounted in and its cgroup allows the major:minor. Without "
        "nvidiactl or nvidia-uvm, CUDA cannot initialise at all (NVML may still list GPUs); a missing /dev/nvidiaN "
        "silently shrinks the GPUs the server can use.",
        _lxc_fix(config, uvm, f"Pass the missing devices into container {config.ctid}", lines),
        subjects=tuple(f"container {c.ctid}" for c, _, _ in found),
        evidence=refs,
    )


def _judge_inside(f: ContainerFacts) -> Finding:
    check, title = "container.gpu_devices", "GPU device nodes in containers"
    refs = (dir_ref("/dev"), *(file_ref(f"/proc/driver/nvidia/gpus/{b}/information") for b in f.minors))
    if f.dev_entries is None:
        return unknown(check, AREA, title, f"/dev not listable: {f.dev_error}", evidence=refs)
    present = set(f.dev_entries)
    problems: list[str] = []
    for node in ("nvidiactl", "nvidia-uvm"):
        if node not in present:
            problems.append(f"/dev/{node} missing")
    minors_by_index = {g.index: f.minors[g.bdf] for g in f.inventory.gpus if g.index is not None and g.bdf in f.minors}
    missing = sorted(m for m in minors_by_index.values() if f"nvidia{m}" not in present)
    if missing:
        problems.append(f"{_node_span(missing)} missing for GPUs NVML lists")
    gpu_nodes = sorted(int(e[6:]) for e in present if re.fullmatch(r"nvidia\d+", e))
    if not gpu_nodes and f.minors:
        problems.append(f"no /dev/nvidiaN at all while the host driver has {len(f.minors)} GPUs")
    host_total = len(f.minors)
    if not problems:
        share = f" of the host's {host_total}" if host_total and host_total != len(gpu_nodes) else ""
        return ok(
            check,
            AREA,
            title,
            f"{_node_span(gpu_nodes)}{share}, nvidiactl, nvidia-uvm present",
            expected="a node for every GPU, nvidiactl and nvidia-uvm",
            evidence=refs,
        )
    docker = f.platform.kind == "docker"
    fix = Fix(
        kind="restart",
        where="container",
        summary="Pass the GPU device nodes into the container"
        + (" (docker run --gpus all with the NVIDIA container toolkit)" if docker else " (its config on the host)"),
        actions=(
            CommandAction(
                description="docker: recreate with --gpus all (or --device for each /dev/nvidia*, nvidiactl, nvidia-uvm)"
                if docker
                else "on the host: add lxc.mount.entry and lxc.cgroup2.devices.allow lines for each missing node, "
                "then restart the container"
            ),
        ),
        risk="medium",
        verify="ls -l /dev/nvidia* inside the container shows every node; nvidia-smi -L lists every GPU",
        revert="recreate/restart the container with its previous config",
        persist="the container's config",
    )
    return problem(
        check,
        AREA,
        title,
        "high",
        "; ".join(problems),
        "a node for every GPU, nvidiactl and nvidia-uvm",
        "CUDA opens /dev/nvidiactl, /dev/nvidia-uvm and /dev/nvidiaN for each GPU; without them it fails to "
        "initialise or sees fewer GPUs than the server was told to use.",
        fix,
        evidence=refs,
    )


def parse_memlock(limits: str | None) -> str | None:
    """The soft limit of ``Max locked memory`` in /proc/PID/limits (``unlimited`` or bytes)."""
    match = re.search(r"^Max locked memory\s+(\S+)\s+(\S+)", limits or "", re.MULTILINE)
    return match.group(1) if match else None


def _unlimited(value: str) -> bool:
    return value.split(":", maxsplit=1)[0].strip().lower() in ("unlimited", "infinity", "-1")


def judge_memlock(f: ContainerFacts) -> Finding:
    check, title = "container.memlock", "Locked-memory limit"
    if _no_gpu_on_this_machine(f):
        return not_applicable(check, AREA, title, NO_GPU, evidence=(dir_ref("/sys/bus/pci/devices"),))
    limited: list[str] = []
    seen: list[str] = []
    refs: list[str] = []
    lxc_fix_config: LxcConfig | None = None
    for config in f.lxc.gpu_configs:
        refs.append(config.ref)
        value = config.memlock
        if value is not None and _unlimited(value):
            seen.append(f"container {config.ctid}: lxc.prlimit.memlock {value}")
        else:
            limited.append(f"container {config.ctid}: lxc.prlimit.memlock {value or 'not set (inherits the LXC default)'}")
            lxc_fix_config = lxc_fix_config or config
    for server in f.scan.servers[:16]:
        soft = parse_memlock(f.server_limits.get(server.pid))
        if soft is None:
            continue
        refs.append(file_ref(f"/proc/{server.pid}/limits"))
        (seen if _unlimited(soft) else limited).append(f"{server.label}: max locked memory {soft}")
    if not limited and not seen and f.platform.in_container:
        soft = parse_memlock(f.self_limits)
        refs.append(file_ref("/proc/self/limits"))
        if soft is None:
            return unknown(check, AREA, title, "/proc/self/limits not readable", evidence=refs)
        (seen if _unlimited(soft) else limited).append(f"this container: max locked memory {soft}")
    if not limited and not seen:
        if f.platform.in_container or f.lxc.gpu_configs:
            return unknown(check, AREA, title, "locked-memory limit not readable", evidence=refs)
        return not_applicable(check, AREA, title, "not a container, and hosts no GPU containers", evidence=refs)
    if not limited:
        return ok(check, AREA, title, "; ".join(seen), expected="unlimited", evidence=refs)
    if lxc_fix_config is not None:
        fix = _lxc_fix(
            lxc_fix_config,
            None,
            f"Set lxc.prlimit.memlock: unlimited for container {lxc_fix_config.ctid}",
            ["lxc.prlimit.memlock: unlimited"],
        )
    else:
        fix = Fix(
            kind="restart",
            where="container" if f.platform.in_container or any(s.container for s in f.scan.servers) else "host",
            summary="Raise the locked-memory limit of the server to unlimited",
            actions=(
                CommandAction(
                    description="docker: --ulimit memlock=-1:-1; systemd unit: LimitMEMLOCK=infinity; "
                    "LXC: lxc.prlimit.memlock: unlimited; then restart the server"
                ),
            ),
            risk="low",
            verify="grep 'Max locked memory' /proc/PID/limits of the server shows unlimited",
            revert="restore the previous limit and restart",
            persist="the container or unit config",
        )
    return problem(
        check,
        AREA,
        title,
        "medium",
        "; ".join(limited),
        "unlimited",
        "RDMA memory registration (NCCL over InfiniBand/RoCE, GPUDirect) and mlock-based pinned buffers count "
        "against RLIMIT_MEMLOCK; with a small limit they fail or fall back to slower paths. CUDA's own pinned "
        "allocations are not bound by it, so the effect is largest on multi-node or RDMA setups.",
        fix,
        subjects=tuple(s.split(":")[0] for s in limited),
        evidence=tuple(refs),
    )


def shm_size(mounts: str | None) -> tuple[str, int | None] | None:
    """(options, size in bytes or None for the tmpfs default) of /dev/shm in a mounts file; None if not mounted."""
    for line in (mounts or "").splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[1] == "/dev/shm":
            match = re.search(r"(?:^|,)size=(\d+)([kmgKMG%]?)", fields[3])
            if not match or match.group(2) == "%":
                return fields[3], None
            scale = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}[match.group(2).lower()]
            return fields[3], int(match.group(1)) * scale
    return None


def judge_shm(f: ContainerFacts) -> Finding:
    check, title = "container.shm", "/dev/shm size in containers"
    if _no_gpu_on_this_machine(f):
        return not_applicable(check, AREA, title, NO_GPU, evidence=(dir_ref("/sys/bus/pci/devices"),))
    readings: list[tuple[str, str, int | None]] = []
    refs: list[str] = []
    for server in f.scan.servers[:16]:
        text = f.server_mounts.get(server.pid)
        if server.foreign_mnt_ns is False or text is None or (found := shm_size(text)) is None:
            continue
        refs.append(file_ref(f"/proc/{server.pid}/mounts"))
        readings.append((server.label, *found))
    if f.platform.in_container and (found := shm_size(f.mounts)) is not None:
        refs.append(file_ref("/proc/mounts"))
        readings.append(("this container", *found))
    if not readings:
        if f.platform.in_container:
            return unknown(check, AREA, title, "/dev/shm not found in /proc/mounts", evidence=(file_ref("/proc/mounts"),))
        if f.lxc.gpu_configs:
            ids = ", ".join(c.ctid for c in f.lxc.gpu_configs)
            return unknown(
                check,
                AREA,
                title,
                f"measure inside container {ids}: its /dev/shm is its own tmpfs, not "
                "visible from the host while no server process runs there",
                evidence=tuple(c.ref for c in f.lxc.gpu_configs),
            )
        return not_applicable(check, AREA, title, "not a container: /dev/shm is the host's tmpfs (half of RAM by default)")
    small = [(who, size) for who, _, size in readings if size is not None and size < SHM_MIN]
    shown = "; ".join(
        f"{who}: {'default (half of RAM)' if size is None else f'{size / 2**20:.0f} MiB'}" for who, _, size in readings
    )
    if not small:
        return ok(check, AREA, title, f"/dev/shm {shown}", expected="at least 1 GiB", evidence=tuple(refs))
    docker = f.platform.kind == "docker" or any(s.container and s.container.startswith("docker") for s in f.scan.servers)
    fix = Fix(
        kind="restart",
        where="container",
        summary="Give the container a larger /dev/shm" + (" (--shm-size=16g or --ipc=host)" if docker else ""),
        actions=(
            CommandAction(
                description="docker: recreate with --shm-size=16g (or --ipc=host); LXC: mount a larger "
                "tmpfs on /dev/shm in the container's config; then restart"
            ),
        ),
        risk="low",
        verify="df -h /dev/shm inside the container shows the new size",
        revert="recreate/restart with the previous size",
        persist="the container's config",
    )
    return problem(
        check,
        AREA,
        title,
        "medium",
        f"/dev/shm {shown}",
        "at least 1 GiB",
        "NCCL's shared-memory transport, PyTorch's inter-process tensors and the servers' input broadcast rings live "
        "in /dev/shm. Docker's 64 MiB default makes NCCL fail with 'No space left on device' or errors such as "
        "'unhandled system error' once tensor parallelism starts.",
        fix,
        subjects=tuple(who for who, _ in small),
        evidence=tuple(refs),
    )


def judge(f: ContainerFacts) -> list[Finding]:
    return [judge_platform(f), judge_gpu_devices(f), judge_memlock(f), judge_shm(f), judge_cgroup_cpu(f.cpu)]


DOCS = {
    "container.platform": CheckDoc(
        "Where the audit runs",
        "`systemd-detect-virt`, `/proc/cpuinfo` hypervisor flag, `/proc/1/environ`, `/.dockerenv`, "
        "`/etc/pve/lxc/*.conf`, `pct list`",
        "never a problem: says where the audit runs and where fixes must go",
        "—",
    ),
    "container.gpu_devices": CheckDoc(
        "GPU device nodes in containers",
        "`/dev/nvidia*`; LXC `lxc.cgroup2.devices.allow`, `lxc.mount.entry`, `devN:` entries; `/proc/devices`",
        "a GPU, nvidiactl or nvidia-uvm not passed in or not allowed by the cgroup",
        "edit the container config",
        ("restart",),
    ),
    "container.memlock": CheckDoc(
        "Locked-memory limit",
        "`/proc/PID/limits` of the servers, `/proc/self/limits` in a container, LXC `lxc.prlimit.memlock`",
        "limited (RDMA registration and pinned buffers fail or shrink)",
        "raise it to unlimited",
        ("restart",),
    ),
    "container.shm": CheckDoc(
        "/dev/shm size in containers",
        "`/proc/mounts`, `/proc/PID/mounts` of the servers",
        "under 1 GiB in a container running NCCL",
        "`--shm-size` / `--ipc=host` / a larger tmpfs",
        ("restart",),
    ),
    "container.cgroup_cpu": CheckDoc(
        "CPU quota and CPUs of the serving container",
        "LXC `cpulimit`, `cores`, `lxc.cgroup2.cpu.max`, `lxc.cgroup2.cpuset.cpus`; inside: `/sys/fs/cgroup/cpu.max`, "
        "`cpu.stat`, `cpuset.cpus.effective`",
        "a CFS CPU quota on the container (throttling stalls GPU workers), or fewer than 2 CPUs per GPU",
        "remove the quota, give it more cores",
        ("restart",),
    ),
}


INVESTIGATOR = Investigator(
    area=AREA, title="Platform and container GPU access and limits", checks=CHECKS, collect=collect, judge=judge, docs=DOCS
)
