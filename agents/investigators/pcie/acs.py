"""pcie.acs: ACS P2P redirect on the switch ports between GPUs."""

from __future__ import annotations

from itertools import combinations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.gpus import Gpu
from rigaudit.agents.facts.peer_groups import together
from rigaudit.agents.investigators.pcie import premises
from rigaudit.agents.investigators.pcie.facts import PcieFacts, config_of, config_refs, fix_where
from rigaudit.tools.core.record import Record
from rigaudit.tools.pci import bridges_between
from rigaudit.tools.schema.finding import CommandAction, Edge, Finding, Fix, PciRegisterAction, Severity

ACS_CHECK = Check(
    "pcie.acs",
    "ACS redirect on switch ports between GPUs",
    reads="ACS extended capability (0x000D) control register on every bridge between GPUs",
    problem="ReqRedir/CmpltRedir set on a switch port between GPUs: high where two GPUs under it peer over PCIe "
    "for one server instance (or GPU processes cannot be traced), medium on a node with no GPU process (between jobs: "
    "the next job that spans a switch pays) or where only RDMA NICs' traffic crosses, low where no GPU traffic "
    "crosses it (GeForce, NVLink, MIG, replicas, TP groups across switches)",
    fix="`setpci -s BRIDGE ECAP_ACS+6.w=0000`; `pci=disable_acs_redir=` or BIOS",
    kinds=("runtime", "reboot"),
    premises=(premises.PLATFORM, premises.GPUS, premises.TOPOLOGY),
)


def _not_applicable(facts: PcieFacts, vfio: list[Gpu]) -> Finding | None:
    """No GPU pair to judge: fewer than two GPUs, a VM guest's emulated bridges, or the GPUs passed to VMs."""
    if len(facts.gpus) < 2:
        return ACS_CHECK.not_applicable(f"{len(facts.gpus)} GPU(s): there is no GPU pair for peer-to-peer traffic")
    if facts.platform.in_vm:
        why = (
            "a VM guest: the bridges seen here are the hypervisor's emulation, and ACS on the physical switches is set "
            "on the hypervisor (see p2p.status for what the guest's GPUs are allowed)"
        )
        return ACS_CHECK.not_applicable(why)
    if len(facts.gpus) - len(vfio) < 2:
        return ACS_CHECK.not_applicable(f"{len(vfio)} GPU(s) are bound to vfio-pci for VMs; ACS isolation is wanted there")
    return None


class _SwitchPorts(Record):
    """The switch ports between GPU pairs."""

    between: dict[str, None]
    via: dict[str, list[tuple[str, str]]]
    """Switch port -> the GPU pairs (BDFs) whose peer traffic it routes."""
    shared_pairs: int
    """GPU pairs that meet below a switch."""


def _switch_ports(chains: dict[str, tuple[str, ...]]) -> _SwitchPorts:
    between: dict[str, None] = {}
    via: dict[str, list[tuple[str, str]]] = {}
    shared_pairs = 0
    for a, b in combinations(sorted(chains), 2):
        ports = bridges_between(chains[a], chains[b])
        if ports:
            shared_pairs += 1
        between.update(dict.fromkeys(ports))
        for port in ports:
            via.setdefault(port, []).append((a, b))
    return _SwitchPorts(between, via, shared_pairs)


def _redirect_names(facts: PcieFacts, bridge: str) -> str | None:
    """The ACS control bits a port sets when it redirects peer traffic (None: it does not, or was not read)."""
    config = config_of(facts, bridge)
    if config is not None and config.acs is not None and config.acs.redirects:
        return " ".join(config.acs.control.names)
    return None


def _gpu_redirects(facts: PcieFacts, between: dict[str, None]) -> tuple[dict[str, str], list[str]]:
    """The redirecting ports between GPUs (port -> its ACSCtl bits), and the ports whose extended config was unread."""
    redirecting: dict[str, str] = {}
    unread: list[str] = []
    for bridge in between:
        config = config_of(facts, bridge)
        if config is None or not config.extended_known:
            unread.append(bridge)
        elif names := _redirect_names(facts, bridge):
            redirecting[bridge] = names
    return redirecting, unread


def _nic_paths(facts: PcieFacts, chains: dict[str, tuple[str, ...]]) -> dict[str, None]:
    """The switch ports between the GPUs and the active RDMA NICs."""
    paths: dict[str, None] = {}
    for read_nic in facts.nic_chains.values():
        for gpu_chain in chains.values():
            paths.update(dict.fromkeys(bridges_between(gpu_chain, read_nic.chain or ())))
    return paths


def _root_notes(facts: PcieFacts) -> list[str]:
    notes = []
    for bridge in facts.bridges:
        config = config_of(facts, bridge)
        if config and config.express and config.express.port_type == 0x4 and config.acs is not None:
            notes.append(f"{bridge} (root port) ACSCtl {' '.join(config.acs.control.names) or 'none set'}")
    return notes


def judge_acs(facts: PcieFacts) -> Finding:
    vfio = [g for g in facts.gpus if facts.drivers.get(g.bdf) == "vfio-pci"]
    if skipped := _not_applicable(facts, vfio):
        return skipped
    host_gpus = [g for g in facts.gpus if g not in vfio]
    chains = {g.bdf: c for g in host_gpus if g.bdf in facts.chains and (c := facts.chains[g.bdf].chain)}
    evidence = [facts.chains[g.bdf].ref for g in host_gpus if g.bdf in facts.chains]
    if len(chains) < 2:
        return ACS_CHECK.unknown("the PCI tree is not readable (no /sys/bus/pci/devices/BDF links)", evidence=evidence)
    ports = _switch_ports(chains)
    evidence += config_refs(facts, list(ports.between))
    redirecting, unread = _gpu_redirects(facts, ports.between)
    nic_paths = _nic_paths(facts, chains)
    nic_redirecting = {b: names for b in nic_paths if b not in redirecting and (names := _redirect_names(facts, b))}
    if nic_paths:
        evidence += config_refs(facts, list(nic_paths)) + [c.ref for c in facts.nic_chains.values()]
    if redirecting or nic_redirecting:
        return _redirect_problem(facts, vfio, ports, redirecting, nic_redirecting, evidence)
    if unread and not (set(ports.between) - set(unread)):
        return ACS_CHECK.unknown(
            f"extended config space not readable for {', '.join(unread[:4])} (needs root)", evidence=evidence
        )
    return _no_redirect(facts, ports, unread, evidence)


def _no_redirect(facts: PcieFacts, ports: _SwitchPorts, unread: list[str], evidence: list[str]) -> Finding:
    if not ports.between:
        observed = "no GPU pair shares a PCIe switch: peer traffic meets in the root complex, where switch ACS does not apply"
    else:
        readable = [b for b in ports.between if b not in unread]
        without = [b for b in readable if _acs_absent(facts, b)]
        observed = (
            f"{len(readable)} switch port(s) between {ports.shared_pairs} GPU pair(s) ({', '.join(readable)}): no ACS redirect"
        )
        if without:
            observed += f" ({len(without)} of them have no ACS capability at all)"
    if unread:
        observed += f"; not readable: {', '.join(unread)}"
    if root_notes := _root_notes(facts):
        observed += "; " + "; ".join(root_notes)
    return ACS_CHECK.ok(observed, expected="ReqRedir- CmpltRedir- on switch ports between GPUs", evidence=evidence)


def _redirect_problem(
    facts: PcieFacts,
    vfio: list[Gpu],
    ports: _SwitchPorts,
    redirecting: dict[str, str],
    nic_redirecting: dict[str, str],
    evidence: list[str],
) -> Finding:
    """Redirect set on ports between GPUs (or between GPUs and RDMA NICs): how much it costs here, and its fix."""
    shown = {**redirecting, **nic_redirecting}
    bridges = tuple(shown)
    vfio_note = (
        " vfio_pci is loaded but every GPU is bound to nvidia: do not apply this while planning to pass these GPUs to "
        "VMs, since the redirect is what isolates devices behind one switch."
        if facts.vfio_loaded and not vfio
        else ""
    )
    pairs = {pair for bridge in bridges if bridge in ports.via for pair in ports.via[bridge]}
    severity, cost = _redirect_cost(facts, bool(redirecting), pairs)
    return ACS_CHECK.problem_at(
        severity,
        observed="; ".join(f"{b} ACSCtl {names}" for b, names in shown.items()),
        expected="ReqRedir- CmpltRedir- on switch ports between GPUs (and between GPUs and RDMA NICs)",
        explanation="With P2P Request/Completion Redirect set, peer writes between GPUs under one switch are sent up to "
        "the root complex instead of being routed inside the switch: P2P bandwidth drops, latency rises, "
        "and on AMD platforms hangs and IO_PAGE_FAULTs have been reported. Linux enables ACS redirect "
        "when the IOMMU is on and the port supports it." + vfio_note + cost,
        fix=_vfio_fix(facts, vfio, bridges) if vfio else _clear_fix(facts, bridges),
        subjects=bridges,
        evidence=evidence,
    )


def _redirect_cost(facts: PcieFacts, gpu_pairs_redirected: bool, pairs: set[tuple[str, str]]) -> tuple[Severity, str]:
    """The severity of the redirect and the sentence saying what it costs on this host."""
    moot = facts.p2p.pcie_peer_traffic()
    unused = _unused(facts, pairs) if moot is None else None
    if not gpu_pairs_redirected:
        return "medium", (
            " Here the redirect sits between the active RDMA NICs and the GPUs that share their switches: GPUDirect "
            "RDMA writes detour through the root complex (multi-node and KV-transfer bandwidth, not single-node "
            "tensor parallelism)."
        )
    if moot is not None or unused is not None:
        return "medium" if facts.p2p.rdma_active else "low", f" For GPU-to-GPU traffic it is moot here ({moot or unused})" + (
            "; but the active RDMA NICs' GPUDirect traffic to GPUs under these switches is redirected too."
            if facts.p2p.rdma_active
            else "; what is left is hygiene."
        )
    if facts.p2p.idle:
        return "medium", (
            " No GPU process runs now (a node between jobs), so nothing pays yet: the redirect is a latent fault of "
            "the node, judged by what its GPUs can do. The next job whose tensor-parallel (or expert-parallel) "
            "group puts two GPUs under one of these switches pays (high once one runs); a job of replicas at TP 1 "
            "never does. It stays until cleared (the fix below), whatever runs; `rigaudit check --fail-on medium` "
            "keeps such a node out of service."
        )
    if facts.p2p.groups is None:
        return "high", (
            " Which GPUs exchange traffic could not be told (not every GPU's process is traced to a server "
            "instance): judged by what the GPUs can do; low where no instance holds two GPUs under one switch."
        )
    return "high", ""


def _vfio_fix(facts: PcieFacts, vfio: list[Gpu], bridges: tuple[str, ...]) -> Fix:
    """On a host passing GPUs to VMs the redirect is their isolation: no runtime clear."""
    return Fix(
        kind="reboot",
        where=fix_where(facts.platform),
        summary="Do not clear ACS at runtime on a host that passes GPUs to VMs; keep host GPUs behind their own switch",
        actions=(
            CommandAction(
                description=f"GPUs {', '.join(g.bdf for g in vfio)} are bound to vfio-pci: clearing ACS "
                "redirect would merge IOMMU groups and break VM isolation. Only if those GPUs "
                "sit behind other switches: pci=disable_acs_redir=" + ";".join(bridges)
            ),
        ),
        risk="high",
        verify="lspci -vvv -s BRIDGE: ACSCtl ReqRedir- CmpltRedir-",
    )


def _clear_fix(facts: PcieFacts, bridges: tuple[str, ...]) -> Fix:
    """Clear ReqRedir and CmpltRedir on the ports, once the GPUs' DMA is passthrough."""
    return Fix(
        kind="runtime",
        where=fix_where(facts.platform),
        summary=f"Clear ACS P2P Request/Completion Redirect on {len(bridges)} switch port(s) between GPUs",
        actions=(PciRegisterAction(devices=bridges, capability="ecap:0x000d", offset=6, width=2, value=0, mask=0x000C),),
        risk="medium",
        verify=f"lspci -vvv -s {bridges[0]} shows 'ACSCtl: ... ReqRedir- CmpltRedir-'; nvidia-smi topo -p2p r shows OK "
        "for the GPU pairs; re-run the P2P benchmark",
        revert="; ".join(f"setpci -s {b} ECAP_ACS+6.w={_acs_ctl(facts, b):04x}:000c" for b in bridges),
        persist="pci=disable_acs_redir=" + ";".join(bridges) + " on the kernel command line (kernel >= 5.1), or ACS "
        "disabled for these ports in the BIOS",
        edges=(
            Edge(
                kind="not_before",
                fact="iommu.passthrough",
                why="with the IOMMU translating GPU DMA, peer traffic the switch then routes directly bypasses "
                "translation and can be misrouted: clear ACS only once the GPUs' DMA is passthrough",
            ),
        ),
    )


def _unused(facts: PcieFacts, pairs: set[tuple[str, str]]) -> str | None:
    """Why no GPU peer traffic crosses the redirecting ports although the host could peer over PCIe (None: some
    does, or may): every pair under them is NVLinked or a MIG slice, or no server instance holds both GPUs of one."""
    index = {g.bdf: g.index for g in facts.gpus}
    known = [(index.get(a), index.get(b)) for a, b in sorted(pairs)]
    if not known or any(i is None or j is None for i, j in known):
        return None
    over_pcie = [(i, j) for i, j in known if i is not None and j is not None and facts.p2p.peers_over_pcie(i, j)]
    if not over_pcie:
        return f"the {len(known)} GPU pair(s) under these ports peer over NVLink or are MIG slices"
    groups = facts.p2p.groups
    if groups is None or any(together(groups, i, j) for i, j in over_pcie):
        return None
    held = "; ".join(",".join(f"GPU{i}" for i in sorted(g)) for g in groups)
    return (
        f"no server instance holds two GPUs under these ports (the servers hold {held}): nothing crosses them "
        "between GPUs today; it costs once a tensor-parallel group spans GPUs under one switch"
    )


def _acs_absent(facts: PcieFacts, bridge: str) -> bool:
    config = config_of(facts, bridge)
    return config is not None and config.acs is None


def _acs_ctl(facts: PcieFacts, bridge: str) -> int:
    config = config_of(facts, bridge)
    return config.acs.control.raw if config and config.acs else 0
