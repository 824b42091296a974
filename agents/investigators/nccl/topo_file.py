"""nccl.topo_file: on an Azure ND-class guest, NCCL is pointed at the size's topology file."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.investigators.nccl import premises
from rigaudit.agents.investigators.nccl.facts import NcclFacts
from rigaudit.agents.investigators.nccl.topo_facts import NO_SERVER, VARIABLE, TopoChoice, nd_size, shipped_paths
from rigaudit.tools.hosts.probe import file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, Severity

NCCL_TOPO_FILE_CHECK = Check(
    "nccl.topo_file",
    "NCCL topology file on an Azure ND-class guest",
    reads="`NCCL_TOPO_FILE` in the servers' `/proc/PID/environ`, `~/.nccl.conf` and `/etc/nccl.conf` (the server's own "
    "filesystem), the file it names, Azure's `/opt/microsoft/nd*-topo.xml`; NVML's GPU model (which ND size)",
    problem="an ND-class guest (ND40rs_v2, ND A100 v4, ND H100/H200 v5) whose servers' NCCL is pointed at no topology "
    "file, or at one that is not there: NCCL cannot see the GPU/NIC affinity through Hyper-V's vPCI (medium where a "
    "server's collectives cross nodes, else low); not on Azure: not applicable",
    fix="set `NCCL_TOPO_FILE` to Azure's file for the size in `/etc/nccl.conf` or the server's environment, restart it",
    kinds=("restart",),
    premises=(premises.PLATFORM, premises.GPUS, premises.SERVERS),
    layer="workload",
)

WHY = (
    "In a Hyper-V guest every GPU and InfiniBand VF sits alone in its own PCI domain with no bridge above it, so NCCL's "
    "topology detection sees each GPU and NIC only as far apart as their NUMA nodes: it cannot tell which NIC shares "
    "a PCIe switch with which GPU, pairs GPUs with NICs behind other switches and can leave GPUDirect RDMA off for "
    "them. Azure ships the size's topology file (the physical PCIe switches, as NCCL's XML) for NCCL to load instead. "
    "Without it collectives that cross the NICs (multi-node tensor or pipeline parallelism, KV transfer) run below line "
    "rate (a public run of TP 16 decode over two ND H200 v5 measured about 20% slower); NVLink inside the VM is found "
    "without it."
)


def _describe(choice: TopoChoice) -> str:
    if choice.path is None:
        where = (
            "the NCCL config files"
            if choice.source is None and choice.server == NO_SERVER
            else "its environment or NCCL config files"
        )
        return f"{choice.server}: no {VARIABLE} in {where}"
    there = "present" if choice.exists else "absent"
    return f"{choice.server}: {choice.source} names {choice.path} ({there})"


def _grouped(choices: tuple[TopoChoice, ...]) -> str:
    """One line per distinct (source kind, path): a server's worker processes share theirs."""
    seen: dict[tuple[str | None, bool | None], list[TopoChoice]] = {}
    for c in choices:
        seen.setdefault((c.path, c.exists), []).append(c)
    parts = []
    for group in seen.values():
        first = _describe(group[0])
        parts.append(first + (f" (and {len(group) - 1} more process(es) alike)" if len(group) > 1 else ""))
    return "; ".join(parts)


def _severity(f: NcclFacts) -> tuple[Severity, str]:
    if not f.scan.servers:
        return "low", "no server visible: medium for a server whose collectives span GPUs or nodes"
    if f.internode is not None and f.internode.used:
        return "medium", "a server talks to other nodes (" + ", ".join(
            f.internode.signals[:3]
        ) + "): its collectives cross the NICs"
    return "low", "no server here talks to other nodes: its collectives stay on NVLink inside this VM (medium once one does)"


def _fix(f: NcclFacts, stem: str, bad: list[TopoChoice]) -> Fix:
    shipped, linked = shipped_paths(stem)
    target = linked if linked in f.shipped else shipped
    contained = any(c.in_container for c in bad)
    actions: list[CommandAction] = []
    if shipped not in f.shipped:
        actions.append(
            CommandAction(
                description=f"put Azure's topology file for the size at {shipped} (Azure's HPC images ship it; its "
                f"source: github.com/Azure/azhpc-images, topology/{stem}-topo.xml)"
            )
        )
    if contained:
        actions.append(
            CommandAction(
                description=f"set {VARIABLE}={target} in the server container's environment (docker run -e, the "
                "pod's env) and mount the file into it read-only (-v /opt/microsoft:/opt/microsoft:ro)"
            )
        )
    elif any(c.from_environment for c in bad):
        actions.append(
            CommandAction(
                description=f"correct {VARIABLE} in the server's environment (its unit's Environment=, its launch "
                f"script) to {target}, or remove it there so /etc/nccl.conf's line applies: the environment outranks "
                "NCCL's config files, so a line in /etc/nccl.conf alone changes nothing"
            )
        )
    else:
        actions.append(
            CommandAction(
                description=f"add the line {VARIABLE}={target} to /etc/nccl.conf (as Azure's HPC images do), or set "
                f"{VARIABLE} in the server's environment (its unit's Environment=)"
            )
        )
    actions.append(CommandAction(description="restart the inference server: NCCL reads it when its communicators start"))
    return Fix(
        kind="restart",
        where="container_config" if contained else "host",
        summary=f"Point NCCL at Azure's {stem} topology file ({VARIABLE}={target}) and restart the server",
        actions=tuple(actions),
        risk="low",
        verify=f"with NCCL_DEBUG=INFO the server's log shows '{VARIABLE} set by environment to {target}' (or by "
        "/etc/nccl.conf) when its communicators start",
        revert=f"remove the {VARIABLE} line or variable and restart the server",
        persist="/etc/nccl.conf, a unit's Environment= and a container's definition persist",
    )


def judge_topo_file(f: NcclFacts) -> Finding:
    platform, gpus = f.version.platform, f.p2p.gpus
    if platform.cloud != "azure":
        return NCCL_TOPO_FILE_CHECK.not_applicable("not an Azure VM: Azure's NCCL topology files describe its ND-series guests")
    if not gpus:
        return NCCL_TOPO_FILE_CHECK.not_applicable("no NVIDIA GPU")
    size = nd_size(gpus)
    if size is None:
        names = ", ".join(dict.fromkeys(g.name for g in gpus))
        return NCCL_TOPO_FILE_CHECK.not_applicable(
            f"an Azure VM with {names}: not an ND size Azure ships an NCCL topology file for"
        )
    sizes, stem = size
    refs = [file_ref(p) for p in shipped_paths(stem)] + [s.ref for s in f.sources]
    unread = [c for c in f.topo if not c.environ_readable]
    if unread:
        return NCCL_TOPO_FILE_CHECK.unknown(
            f"{sizes} guest; the environment of {', '.join(c.server for c in unread[:3])} is unreadable: a {VARIABLE} "
            "there outranks the NCCL config files; reading /proc/PID/environ as root would tell",
            evidence=refs,
        )
    bad = [c for c in f.topo if not (c.path and c.exists)]
    observed = f"{sizes} guest; {_grouped(f.topo)}"
    if not bad:
        return NCCL_TOPO_FILE_CHECK.ok(observed, expected=f"{VARIABLE} names Azure's {stem} topology file", evidence=refs)
    severity, scope = _severity(f)
    return NCCL_TOPO_FILE_CHECK.problem_at(
        severity,
        f"{observed}; {scope}",
        f"{VARIABLE} names Azure's {stem} topology file",
        WHY,
        _fix(f, stem, bad),
        subjects=tuple(dict.fromkeys(c.server for c in bad)),
        evidence=refs,
    )
