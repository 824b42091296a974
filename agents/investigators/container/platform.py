"""container.platform: where the audit runs, and so where fixes must go."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.findings import ok, unknown
from rigaudit.agents.investigators.container.facts import AREA, PCT_LIST, ContainerFacts, gpu_nodes, node_span
from rigaudit.tools.model.finding import Finding
from rigaudit.tools.probe import command_ref


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


PLATFORM_CHECK = Check(
    "container.platform",
    "Where the audit runs",
    reads=(
        "`systemd-detect-virt`, `/proc/cpuinfo` hypervisor flag, `/proc/1/environ`, `/.dockerenv`, "
        "`/etc/pve/lxc/*.conf`, `pct list`"
    ),
    problem="never a problem: says where the audit runs and where fixes must go",
    fix="—",
    kinds=(),
)


def judge_platform(f: ContainerFacts) -> Finding:
    check, title = PLATFORM_CHECK.id, PLATFORM_CHECK.title
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
            nodes = gpu_nodes(config)
            state = f" ({status[config.ctid]})" if config.ctid in status else ""
            gpus = f"{len(nodes)} GPUs ({node_span(nodes)})" if nodes else "no GPU"
            parts.append(f"{config.ctid}{state}: {gpus}")
        observed += "; Proxmox host of LXC containers: " + "; ".join(parts)
        where += "; container-level fixes go in /etc/pve/lxc/ID.conf and need a container restart"
        if f.pct is not None:
            refs += (command_ref(PCT_LIST),)
    return ok(check, AREA, title, observed, explanation=where.capitalize() + ".", evidence=refs)
