"""nccl.env: NCCL overrides that turn off P2P, SHM or IB, and an NCCL_IB_HCA that also selects an NVLink management
port, in config files, LXC configs and server environments."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.p2p_context import P2pContext
from rigaudit.agents.investigators.nccl import premises
from rigaudit.agents.investigators.nccl.facts import INFINIBAND, EnvSource, NcclFacts
from rigaudit.agents.investigators.nccl.hca import SOURCE as HCA_SOURCE
from rigaudit.agents.investigators.nccl.hca import exact_value, in_name_order, parse_hca
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import dir_ref, file_ref
from rigaudit.tools.schema.finding import SEVERITY_ORDER, CommandAction, Finding, Fix, Severity

IbVerdict = tuple[Severity | None, str]
"""What NCCL_IB_DISABLE=1 costs here: (severity, why), or (None, why it is harmless)."""


def _ib_disable(f: NcclFacts) -> IbVerdict | None:
    """NCCL_IB_DISABLE=1 judged once for the host (None: no RDMA device, nothing to judge). EFA is no IB for it: NCCL
    reaches EFA through the aws-ofi-nccl net plugin, not its IB verbs transport. Medium only where a server's
    collectives cross nodes (driver.peermem's premise, :mod:`...driver.internode`), or where that is unread."""
    if not f.ib_devices:
        return None
    nics = f.p2p.rdma.nics or ()
    if nics and all(n.kind == "EFA" for n in nics):
        return (
            None,
            "NCCL_IB_DISABLE=1 is harmless here (EFA: NCCL reaches it through the aws-ofi-nccl net plugin, not its IB transport)",
        )
    if nics and all(n.state is not None and not n.active for n in nics if n.kind != "EFA"):
        return None, "NCCL_IB_DISABLE=1 is harmless here (no RDMA port is active)"
    cross = f.internode
    if cross is not None and cross.used:
        signals = ", ".join(cross.signals[:3])
        return (
            "medium",
            f"InfiniBand present but disabled, and a server talks to other nodes ({signals}): inter-node traffic over TCP",
        )
    ray = [s.label for s in f.scan.servers if s.marker.startswith("ray::")]
    if cross is None or cross.used is None or ray:
        unread = f"Ray places workers ({ray[0]}) on other nodes unseen here" if ray else "no server found to tell by"
        return (
            "medium",
            "InfiniBand present but disabled: inter-node traffic over TCP (whether a server's collectives cross nodes "
            f"is unread: {unread})",
        )
    return "low", (
        "InfiniBand present but disabled; no server here talks to other nodes (its collectives stay on NVLink or PCIe "
        "inside this host): no cost now, inter-node traffic over TCP once one does"
    )


def _p2p_cost(ctx: P2pContext) -> tuple[Severity, str] | None:
    """Low where no server instance spans GPUs (TP 1, no PP/DP across GPUs): NCCL creates no communicator at world
    size 1, so P2P off changes nothing yet; None where the usual cost applies."""
    if ctx.tp == 1 and ctx.groups is not None and ctx.groups and all(len(g) == 1 for g in ctx.groups):
        return (
            "low",
            "no effect now (every server instance runs on one GPU: NCCL builds no communicator at world size 1); it "
            "will cost P2P if a server is made tensor-parallel",
        )
    return None


def _bad_settings(
    env: dict[str, str], ib: IbVerdict | None, ctx: P2pContext
) -> tuple[list[tuple[str, Severity, str]], list[str]]:
    """(overrides that cost something here, overrides that are harmless here with why)."""
    bad: list[tuple[str, Severity, str]] = []
    harmless: list[str] = []
    moot = ctx.p2p_refused() if not ctx.all_nvlink else None
    p2p_cost: Severity = "medium" if ctx.tp == 1 else "high"
    single = _p2p_cost(ctx)
    p2p_off = []
    if env.get("NCCL_P2P_DISABLE", "").strip() == "1":
        p2p_off.append(("NCCL_P2P_DISABLE=1", "P2P off: every GPU-to-GPU transfer staged through host memory"))
    level = env.get("NCCL_P2P_LEVEL", "").strip().upper()
    if level in ("LOC", "0"):
        p2p_off.append((f"NCCL_P2P_LEVEL={level}", "P2P allowed only within one GPU: the same as P2P off"))
    for setting, why in p2p_off:
        if moot is not None:
            harmless.append(f"{setting} is harmless here ({moot})")
        elif single is not None:
            bad.append((setting, single[0], f"{setting}: {single[1]}"))
        elif ctx.all_nvlink:
            bad.append((setting, "high", why + ", NVLink included (hundreds of GB/s given up for PCIe through the host)"))
        else:
            bad.append((setting, p2p_cost, why))
    if env.get("NCCL_SHM_DISABLE", "").strip() == "1":
        if (ctx.support == "no" or ctx.pcie_refused) and len(ctx.gpus) > 1:
            bad.append(
                ("NCCL_SHM_DISABLE=1", "high", "shared-memory transport off on GPUs without P2P: every transfer falls to sockets")
            )
        else:
            bad.append(("NCCL_SHM_DISABLE=1", "medium", "shared-memory transport off: pairs without P2P fall to sockets"))
    if ib is not None and env.get("NCCL_IB_DISABLE", "").strip() == "1":
        if ib[0] is None:
            harmless.append(ib[1])
        else:
            bad.append(("NCCL_IB_DISABLE=1", ib[0], ib[1]))
    return bad, harmless


NCCL_ENV_CHECK = Check(
    "nccl.env",
    "NCCL overrides in configs and server environments",
    reads="`/etc/nccl.conf`, `~/.nccl.conf`, LXC `lxc.environment`, `/proc/PID/environ` of the servers (where none is "
    "recognized, of the processes NVML lists on the GPUs), the NVLink management ports among the RDMA devices (VPD "
    "SMDL=SW_MNG), the RDMA NICs' kind, whether a server talks to other nodes (the premise `driver.peermem` grades by)",
    problem="`NCCL_P2P_DISABLE=1`, `NCCL_P2P_LEVEL=LOC` (low where every server instance runs on one GPU: NCCL builds "
    "no communicator at world size 1), `NCCL_SHM_DISABLE=1`, `NCCL_IB_DISABLE=1` with an IB NIC (EFA is no IB for it: "
    "NCCL drives EFA through the aws-ofi-nccl plugin; medium where a server's collectives cross nodes or that is "
    "unread, as on a Ray worker node, low where no server does); a P2P override is harmless where NVML refuses P2P on "
    "every pair or the cards have none (P2P the driver allows outranks the product line); an `NCCL_IB_HCA` that also "
    "selects an NVLink management port (a name without `=` is a prefix: `mlx5` takes in HGX B200's mlx5_8-11); "
    "unknown where no process environment was there to read (no server, nothing on the GPUs); the node's fault where "
    "the worst override is in a host file (`/etc/nccl.conf` read outside a container), else the workload's",
    fix="remove the override; name the data ports exactly (`NCCL_IB_HCA==mlx5_0,…`)",
    kinds=("restart",),
    premises=(premises.PLATFORM_FIX, premises.SERVERS, premises.RDMA),
    layer="workload",
)


def _from_runtime_options(source: EnvSource) -> bool:
    """The variable comes from the container's definition: an LXC config's lxc.environment, or the environment of
    a process in an application container (docker run -e, a pod spec's env); an LXC system container's services
    set their own."""
    if source.ref.endswith(".conf") and "lxc.environment" in source.name:
        return True
    if not source.ref.endswith("/environ") or not source.in_container:
        return False
    label = source.container or ""
    return not label.startswith("lxc")


def _node_file(source: EnvSource) -> bool:
    """The variable is set in a host's own config file (``/etc/nccl.conf``, ``/root/.nccl.conf`` read outside a
    container): node configuration every NCCL process on the host inherits, fixed by a node edit."""
    return not source.ref.endswith("/environ") and not source.in_container and not _from_runtime_options(source)


def _unread(f: NcclFacts) -> str | None:
    """Why no override found is no ``ok``: a config that could not be read, or no server's environment read."""
    unreadable = [s for s in f.sources if s.variables is None]
    environs = [s for s in f.sources if s.ref.endswith("/environ")]
    configs = [s for s in unreadable if not s.ref.endswith("/environ")]
    if not configs and (not environs or any(s.variables is not None for s in environs)):
        return None
    shown = "; ".join(f"{s.name}: {s.error}" for s in (configs or unreadable)[:6])
    return (
        f"where an override would be, nothing was read: {shown}; reading those files "
        "(/proc/PID/environ as root or as the server's user) would tell"
    )


def _no_environment(f: NcclFacts, harmless: list[str], refs: tuple[str, ...]) -> Finding | None:
    """Unknown where no process environment was there to read (no server, nothing on the GPUs): NCCL takes these
    variables from the server's environment too, so clean config files alone are no ``ok``."""
    if any(s.ref.endswith("/environ") for s in f.sources):
        return None
    read = [s.name for s in f.sources if s.variables is not None] + [f"{p} (absent)" for p in f.absent]
    return NCCL_ENV_CHECK.unknown(
        f"no inference server process found to read its environment ({f.scan.searched}), and no process on the GPUs; "
        f"read: {', '.join(read) or 'nothing'}"
        + (f"; {'; '.join(harmless)}" if harmless else "")
        + ": auditing while the server runs (or tr '\\0' '\\n' < /proc/PID/environ of its process) would tell",
        evidence=refs,
    )


class Hit(Record):
    """One override that costs something here, where it is set."""

    source: EnvSource
    setting: str
    severity: Severity
    why: str
    action: str
    """The fix's step for it: ``remove NCCL_P2P_DISABLE=1 from /etc/nccl.conf``."""
    hca: bool = False
    """An NCCL_IB_HCA that selects a management port (changed, not removed)."""


def _hits(f: NcclFacts) -> tuple[list[Hit], list[str]]:
    """(the overrides that cost something, those harmless here with why) across every source read."""
    hits: list[Hit] = []
    harmless: dict[str, list[str]] = {}
    ib = _ib_disable(f)
    for source in f.sources:
        if source.variables is not None:
            bad, fine = _bad_settings(source.variables, ib, f.p2p)
            hits += [Hit(source, setting, sev, why, f"remove {setting} from {source.name}") for setting, sev, why in bad]
            for text in fine:
                harmless.setdefault(text, []).append(source.name)
            hits += [hit] if (hit := _hca_hit(source, source.variables, f)) is not None else []
    return hits, [_where(text, names) for text, names in harmless.items()]


def _where(text: str, names: list[str]) -> str:
    """``text`` once for the sources that share it (a server's workers all carry its environment)."""
    more = f" and {len(names) - 1} more source(s) alike" if len(names) > 1 else ""
    return f"{text} in {names[0]}{more}"


HCA_WHY = (
    "NCCL takes each name of NCCL_IB_HCA as a prefix unless the list starts with '=' (after an optional '^', which "
    f"excludes) ({HCA_SOURCE}). The NVLink management ports of an NVLink 5 baseboard are mlx5 devices like the data "
    "NICs (their VPD says SMDL=SW_MNG): they reach this baseboard's NVSwitches only, no other node, yet NCCL counts a "
    "selected one among its network devices and can place inter-node traffic on it, which then fails or stalls. "
    "Naming the data ports exactly keeps NCCL off them."
)


def _hca_hit(source: EnvSource, env: dict[str, str], f: NcclFacts) -> Hit | None:
    """An NCCL_IB_HCA of ``source`` that selects an NVLink management port (where IB is not disabled)."""
    value = env.get("NCCL_IB_HCA")
    hca = parse_hca(value) if value is not None and f.ib_management else None
    if hca is None or env.get("NCCL_IB_DISABLE", "").strip() == "1":
        return None
    taken = in_name_order(m for m in f.ib_management if hca.selects(m))
    if not taken:
        return None
    setting = f"NCCL_IB_HCA={value}"
    data = [d for d in f.ib_devices if hca.selects(d)] or list(f.ib_devices)
    action = (
        f"in {source.name}: set NCCL_IB_HCA={exact_value(data)} (the data ports by exact name) in place of {setting}"
        if data
        else f"in {source.name}: replace {setting} with NCCL_IB_DISABLE=1 (this host has no data RDMA NIC)"
    )
    why = f"{setting} also selects the NVLink management ports {', '.join(taken)}"
    return Hit(source, setting, "medium", why, action, hca=True)


def _no_override(f: NcclFacts, harmless: list[str], refs: tuple[str, ...]) -> Finding:
    searched = [s.name for s in f.sources if s.variables is not None]
    unreadable = [f"{s.name} ({s.error})" for s in f.sources if s.variables is None]
    parts = []
    if harmless:
        parts += harmless
    elif searched:
        parts.append("no NCCL_P2P_DISABLE/P2P_LEVEL=LOC/SHM_DISABLE/IB_DISABLE override in " + ", ".join(searched))
    if f.absent:
        parts.append("absent: " + ", ".join(f.absent))
    if not f.scan.servers:
        parts.append(f"no inference server recognized ({f.scan.searched}): read the environments of the GPUs' processes")
    if unreadable:
        parts.append("not readable: " + ", ".join(unreadable))
    return NCCL_ENV_CHECK.ok(
        "; ".join(parts),
        expected="no override that turns off P2P, SHM or IB",
        explanation="NCCL picks P2P, SHM or network transports by topology; these variables force it off a "
        "transport and are often left behind from debugging.",
        evidence=refs,
    )


def _override_fix(hits: list[Hit]) -> Fix:
    """Remove each override (and name the data ports of an NCCL_IB_HCA) where it is set (the container's definition,
    the container or the host), then restart."""
    in_container = any(h.source.in_container for h in hits)
    from_options = any(_from_runtime_options(h.source) for h in hits)
    removed = [h for h in hits if not h.hca]
    hca = [h for h in hits if h.hca]
    actions = (
        *(CommandAction(description=h.action) for h in hits),
        CommandAction(description="restart the inference server (or its container) so the environment is read again"),
    )
    summary = "Remove the NCCL overrides" if removed else "Name the data ports exactly in NCCL_IB_HCA"
    summary += ", name the data ports exactly in NCCL_IB_HCA" if removed and hca else ""
    verify = (
        "after the restart, tr '\\0' '\\n' < /proc/PID/environ | grep ^NCCL_ shows none of them, and NCCL_DEBUG=INFO "
        "logs 'via P2P' for the GPU channels"
        if removed
        else "after the restart, tr '\\0' '\\n' < /proc/PID/environ | grep ^NCCL_IB_HCA shows the exact list"
    )
    verify += "; NCCL_DEBUG=INFO's 'NET/IB : Using' line names no management port" if hca else ""
    return Fix(
        kind="restart",
        where="container_config" if from_options else "container" if in_container else "host",
        summary=summary
        + (
            " at the server's next restart (nothing is lost now): "
            if all(h.severity == "low" for h in hits)
            else " and restart the server: "
        )
        + ", ".join(sorted({h.setting for h in hits})),
        actions=actions,
        risk="low",
        verify=verify,
        revert=("put the earlier values back and restart: " if hca else "put the removed lines back and restart: ")
        + "; ".join(f"{h.setting} in {h.source.name}" for h in hits),
        persist="the edited files are persistent",
    )


def _overrides_why(hits: list[Hit]) -> str:
    """What the overrides cost, then what the HCA filters take in."""
    removed = sorted({h.why for h in hits if not h.hca})
    hca = sorted({h.why for h in hits if h.hca})
    parts = []
    if removed:
        parts.append("; ".join(removed) + ".")
    if any(h.setting.startswith("NCCL_P2P") for h in hits) and not all(h.severity == "low" for h in hits if not h.hca):
        parts.append(
            "With P2P off, tensor-parallel all-reduce on PCIe GPUs loses about half its bandwidth. Such overrides are "
            "sometimes a deliberate workaround for broken P2P (the IOMMU data corruption case): remove them only once "
            "p2p.bandwidth shows the data check passing on every pair."
        )
    if hca:
        parts.append("; ".join(hca) + ". " + HCA_WHY)
    return " ".join(parts)


def judge_nccl_env(f: NcclFacts) -> Finding:
    refs = tuple(s.ref for s in f.sources) + tuple(file_ref(p) for p in f.absent) + (dir_ref(INFINIBAND),)
    hits, harmless = _hits(f)
    if not hits and (why := _unread(f)) is not None:
        return NCCL_ENV_CHECK.unknown(why, evidence=refs)
    if not hits:
        return _no_environment(f, harmless, refs) or _no_override(f, harmless, refs)
    expected = "no override that turns off P2P, SHM or IB" if any(not h.hca for h in hits) else ""
    if any(h.hca for h in hits):
        expected += ("; " if expected else "") + "an NCCL_IB_HCA that names the data ports only"
    worst = min((h.severity for h in hits), key=lambda sev: SEVERITY_ORDER[sev])
    finding = NCCL_ENV_CHECK.problem_at(
        worst,
        "; ".join(f"{h.setting} in {h.source.name}" for h in hits),
        expected,
        _overrides_why(hits),
        _override_fix(hits),
        subjects=tuple(sorted({h.source.name for h in hits})),
        evidence=refs,
    )
    node = any(_node_file(h.source) for h in hits if h.severity == worst)
    return finding.model_copy(update={"layer": "node" if node else "workload"})
