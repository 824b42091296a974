"""container.platform: where the audit runs, and so where fixes must go."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.investigators.container.facts import PCT_LIST, ContainerFacts, gpu_nodes, node_span
from rigaudit.tools.hosts.probe import command_ref
from rigaudit.tools.schema.finding import Finding


def _running(f: ContainerFacts) -> dict[str, str]:
    """Container id -> status, from `pct list`."""
    if f.pct is None or not f.pct.ok:
        return {}
    out = {}
    for line in f.pct.stdout.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 2 and parts[0].isdecimal():
            out[parts[0]] = parts[1]
    return out


PLATFORM_CHECK = Check(
    "container.platform",
    "Where the audit runs",
    reads=(
        "`/proc/cpuinfo` hypervisor flag, `/sys/class/dmi/id`, `/sys/hypervisor/type`, `/proc/cmdline`, `/.dockerenv`, "
        "`/run/.containerenv`, `/dev/.lxc-boot-id`, PID 1's environment and cgroup, `/proc/self/mountinfo`, "
        "`/var/run/secrets/kubernetes.io`, `systemd-detect-virt`, `/etc/pve/lxc/*.conf`, `pct list`; the audit's own "
        "cgroup and environment (`/proc/self/cgroup`, `/proc/self/environ`: a Slurm job step, its GPUs) and Slurm's "
        "cgroup.conf (`ConstrainDevices`)"
    ),
    problem="never a problem: says the layers the audit runs on (bare metal, VM guest, container, and their "
    "combinations, a scheduler's job step) and where fixes must go",
    fix="—",
    kinds=(),
    premises=(),
)


_OPTIONS = {
    "docker": "its docker run / compose options",
    "podman": "its podman run options",
    "kubernetes": "its pod spec (resources, volumes, securityContext)",
    "containerd": "its runtime spec (nerdctl/ctr options, or the pod spec that made it)",
    "lxc": "its LXC config",
}


def _where(f: ContainerFacts) -> str:
    """Where fixes go, layer by layer, in words."""
    platform = f.platform
    vm, container = platform.vm, platform.container
    parts = []
    if container is not None:
        host = f"a VM ({vm.name})" if vm else "bare metal"
        parts.append(
            f"the container shares its host's kernel: kernel, CPU, PCI, module and NVIDIA driver fixes go to the "
            f"container's host ({host}); {_OPTIONS.get(container.name, 'its runtime options')} hold its devices, "
            "/dev/shm, limits and environment"
        )
    if vm is not None:
        parts.append(
            ("the container's host is a VM guest: " if container else "")
            + "the guest's own kernel settings are fixed in the guest; BIOS, PCIe slots and switches, CPU power "
            "management and the VM's definition (vCPU pinning, NUMA, MMIO window, passthrough) belong to the hypervisor"
            + (f" (on {vm.cloud or platform.cloud}: the provider, or another instance type)" if platform.cloud else "")
        )
    if not parts:
        parts.append("fixes apply on this host")
    return "; ".join(parts)


def judge_platform(f: ContainerFacts) -> Finding:
    refs = f.platform.evidence + tuple(c.ref for c in f.lxc.configs)
    if f.platform.kind == "unknown":
        return PLATFORM_CHECK.unknown(f.platform.how, evidence=refs)
    observed = f"{f.platform.label} ({f.platform.how})"
    observed += "".join(f"; {note}" for note in f.platform.notes)
    where = _where(f)
    if f.lxc.configs:
        status = _running(f)
        parts = []
        for config in f.lxc.configs:
            nodes = gpu_nodes(config)
            state = f" ({status[config.ctid]})" if config.ctid in status else ""
            gpus = f"{len(nodes)} GPUs ({node_span(nodes)})" if nodes else "no GPU"
            parts.append(f"{config.ctid}{state}: {gpus}")
        observed += "; Proxmox host of LXC containers: " + "; ".join(parts)
        where += "; container-level fixes go in /etc/pve/lxc/ID.conf and need a container restart"
        if f.pct is not None:
            refs += (command_ref(PCT_LIST),)
    if f.platform.vm_configs:
        observed += f"; hosts {len(f.platform.vm_configs)} VM definition(s)"
        where += "; a GPU bound to vfio-pci belongs to the VM guest it is passed to"
    return PLATFORM_CHECK.ok(observed, explanation=where[0].upper() + where[1:] + ".", evidence=refs)
