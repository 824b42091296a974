"""driver.persistence, driver.fabricmanager: the driver's daemons (nvidia-persistenced, nvidia-fabricmanager)."""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.facts.deliberate import PERSISTENCE_BY_UNIT
from rigaudit.agents.facts.driver_origin import OPERATOR_SOURCE
from rigaudit.agents.facts.driver_support import BLACKWELL
from rigaudit.agents.facts.gpus import PCI_DEVICES
from rigaudit.agents.facts.nvlsm import LOG as NVLSM_LOG
from rigaudit.agents.facts.os_image import NAMES
from rigaudit.agents.facts.platform import FixTarget
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.facts.unit_reasons import FABRICMANAGER, PERSISTENCED, Cause, unit_cause
from rigaudit.agents.investigators.driver import premises
from rigaudit.agents.investigators.driver.facts import (
    DriverFacts,
    Service,
    fix_where,
    gpu_labels,
    kernel_log,
    passed_through,
    rack_gpus,
)
from rigaudit.agents.persist import service_persist
from rigaudit.tools.core.record import replace
from rigaudit.tools.hosts.nvml_local import OPERATOR_ROOT
from rigaudit.tools.hosts.probe import dir_ref, file_ref, nvml_ref
from rigaudit.tools.schema.finding import CommandAction, Edge, Finding, Fix, ModuleLoadAction, ServiceStartAction

FABRIC_STATES = {0: "not supported", 1: "not started", 2: "in progress", 3: "completed"}


def _start(
    facts: DriverFacts,
    unit: str,
    summary: str,
    verify: str,
    *,
    edges: tuple[Edge, ...] = (),
    before: tuple[CommandAction, ...] = (),
) -> Fix:
    """The runtime fix that starts a driver daemon's systemd ``unit`` and enables it at boot; ``verify``: what
    shows it working, after ``systemctl is-active``; ``before``: steps ahead of the start (reading its reason).
    On an image-based OS without systemd units to enable (Talos, Bottlerocket), the OS's own way to run it."""
    image = facts.platform.image
    if image is not None and image.image_based and image.kind not in ("flatcar", "coreos"):
        how = service_persist(unit, image)
        return Fix(
            kind="runtime",
            where=fix_where(facts.platform),
            summary=f"{summary} ({NAMES.get(image.kind or '', 'this image-based OS')}: through its own configuration, "
            "not systemctl)",
            actions=(*before, CommandAction(description=how)),
            risk="low",
            verify=("talosctl services shows it Running; " if image.kind == "talos" else "") + verify,
            revert="remove it from the OS's configuration",
            persist=how,
            edges=edges,
        )
    return Fix(
        kind="runtime",
        where=fix_where(facts.platform),
        summary=summary,
        actions=(*before, ServiceStartAction(unit=unit)),
        risk="low",
        verify=f"systemctl is-active {unit}  -> active; {verify}",
        revert=f"systemctl stop {unit}",
        persist=service_persist(unit, facts.platform.image),
        edges=edges,
    )


def _unit_option_fix(facts: DriverFacts, path: str, exec_start: str) -> Fix:
    """nvidia-persistenced runs with --no-persistence-mode from its unit: start it without that option."""
    wanted = " ".join(w for w in exec_start.split() if w != "--no-persistence-mode")
    return Fix(
        kind="runtime",
        where=fix_where(facts.platform),
        summary="Drop --no-persistence-mode from nvidia-persistenced's unit (a drop-in) and restart the daemon",
        actions=(
            CommandAction(
                description=f"systemctl edit nvidia-persistenced: '[Service]' 'ExecStart=' 'ExecStart={wanted}' "
                f"(overrides {path})"
            ),
            CommandAction(
                description="systemctl restart nvidia-persistenced", argv=("systemctl", "restart", "nvidia-persistenced")
            ),
        ),
        risk="low",
        verify="nvidia-smi -q | grep 'Persistence Mode'  -> Enabled on every GPU",
        revert="systemctl revert nvidia-persistenced; systemctl restart nvidia-persistenced",
        persist="the drop-in under /etc/systemd/system/nvidia-persistenced.service.d persists",
    )


PERSISTENCE_CHECK = Check(
    "driver.persistence",
    "GPU persistence mode",
    reads="NVML persistence mode, `systemctl is-active nvidia-persistenced`, its unit's ExecStart (and drop-ins)",
    problem="disabled (every CUDA start pays driver init; settings are lost in between)",
    fix="`systemctl enable --now nvidia-persistenced` (Talos: its system extension); a running daemon started with "
    "--no-persistence-mode: its unit's option",
    kinds=("runtime",),
    premises=(premises.PLATFORM, premises.NVML, premises.ORIGIN, premises.OS),
)


DRIVER_POD_LOG = (
    "find the node's driver pod (kubectl -n gpu-operator get pods -l app=nvidia-driver-daemonset --field-selector "
    "spec.nodeName=NODE; the Operator's namespace may differ) and read its log (kubectl -n gpu-operator logs POD -c "
    "nvidia-driver-ctr)"
)
"""How to read the GPU Operator's driver container on one node (``kubectl logs`` takes no field selector)."""

NODE_ORIGINS = (
    "on the node, by where its driver comes from: a host package's unit (the start below), or the GPU Operator's "
    f"driver container, which runs nvidia-persistenced itself: there {DRIVER_POD_LOG}, and restart that pod"
)
"""What a container cannot tell: whether the node's daemons are host units or the GPU Operator's (``driver_origin``)."""


def _persistence_fix(facts: DriverFacts, cause: Cause | None, by_option: bool) -> Fix:
    """The journal's reason removed, the unit's --no-persistence-mode dropped, or the daemon started."""
    daemon, unit = facts.persistenced, facts.persistenced_unit
    if cause is not None and cause.known:
        return _persistenced_cause_fix(facts, cause)
    if by_option and unit is not None:
        return _unit_option_fix(facts, unit.path, unit.exec_start)
    failed = daemon.state == "failed" and cause is not None
    before = (CommandAction(description=f"first read why it failed: {cause.tell}"),) if failed and cause else ()
    if facts.platform.in_container:  # where the node's driver comes from is not seen from here
        before = (*before, CommandAction(description=NODE_ORIGINS))
    return _start(
        facts,
        "nvidia-persistenced",
        "Start nvidia-persistenced (and enable it at boot) so the driver keeps the GPUs initialized"
        + (
            " where the node's driver is a host package; with the GPU Operator, its driver pod runs it"
            if facts.platform.in_container
            else ""
        ),
        "nvidia-smi -q | grep 'Persistence Mode'  -> Enabled",
        before=before,
    )


def _persistence_why(facts: DriverFacts, cause: Cause | None, by_option: bool) -> str:
    daemon, unit = facts.persistenced, facts.persistenced_unit
    return (
        "Without persistence the driver tears a GPU's state down when its last client exits and rebuilds it on the "
        "next open: every CUDA start (server restart, health check, nvidia-smi) pays seconds of initialization, and "
        "settings such as application clocks and power limits can be lost in between. nvidia-persistenced is the "
        "supported way to keep GPUs initialized (the legacy nvidia-smi -pm switch is deprecated)."
        + (
            f" The daemon runs as its unit says: {unit.path} starts it with --no-persistence-mode, which keeps the "
            "daemon and turns the mode off on purpose; the fix is that option, not "
            f"starting the daemon ({PERSISTENCE_BY_UNIT.source})."
            if by_option and unit is not None
            else f" It is {daemon.state} for the reason its journal gives ({cause.told_by}): {cause.cause}; starting it "
            f"again fails the same way until that is dealt with ({cause.source})."
            if cause is not None and cause.known
            else " The daemon is active yet these GPUs report persistence off: check its options (--no-persistence-mode)."
            if daemon.state == "active"
            else ""
        )
    )


def judge_persistence(facts: DriverFacts) -> Finding:
    daemon = facts.persistenced
    refs = [*[nvml_ref("nvmlDeviceGetPersistenceMode", (i,)) for i in sorted(facts.persistence)][:8], daemon.ref]
    origin = facts.install.origin
    if origin.origin == "vfio":
        return passed_through(PERSISTENCE_CHECK, facts)
    if not facts.nvml_ok and origin.origin == "operator":
        pid = origin.daemon("nvidia-persistenced")
        why = f"NVML unavailable on the host ({facts.nvml_error}): the driver is {origin.said}, whose libraries stay "
        why += "in it; nvidia-persistenced " + (f"runs there (pid {pid})" if pid else "is not seen as a process")
        why += "; what would tell: kubectl exec into the node's nvidia-driver-daemonset pod: nvidia-smi -q | grep Persistence"
        return PERSISTENCE_CHECK.unknown(why, evidence=("nvml:nvmlInit()", *origin.evidence))
    if not facts.nvml_ok:
        return PERSISTENCE_CHECK.unknown(f"NVML unavailable: {facts.nvml_error}", evidence=("nvml:nvmlInit()", daemon.ref))
    known = {i: v for i, v in facts.persistence.items() if v is not None}
    if not known:
        return PERSISTENCE_CHECK.unknown("nvmlDeviceGetPersistenceMode gave no answer", evidence=refs)
    off = sorted(i for i, v in known.items() if v == 0)
    service = daemon.state or f"unknown ({daemon.error or 'no answer'})"
    if not off:
        observed = f"enabled on {len(known)}/{len(facts.persistence)} GPUs; nvidia-persistenced {service}"
        return PERSISTENCE_CHECK.ok(observed, expected="enabled on every GPU", evidence=refs)
    unit = facts.persistenced_unit
    by_option = daemon.state == "active" and unit is not None and unit.no_persistence_mode
    if unit is not None:
        refs = [*refs, *unit.refs]
    log = facts.persistenced_log
    cause = unit_cause(log, PERSISTENCED) if log is not None and not by_option else None
    if cause is not None and cause.known:
        refs = [*refs, *(log.refs if log else ()), *([cause.told_by] if cause.told_by else [])]
    return PERSISTENCE_CHECK.problem_at(
        "low" if daemon.state == "active" else "medium",
        f"persistence off on {len(off)}/{len(known)} GPUs; nvidia-persistenced {service}",
        "persistence enabled on every GPU; nvidia-persistenced active",
        _persistence_why(facts, cause, by_option),
        _persistence_fix(facts, cause, by_option),
        subjects=gpu_labels(facts, off),
        evidence=refs,
    )


def _persistenced_cause_fix(facts: DriverFacts, cause: Cause) -> Fix:
    """nvidia-persistenced failed for the reason its journal names: the fix removes it, then restarts the daemon."""
    actions = (
        (
            CommandAction(description="unmask the unit", argv=("systemctl", "unmask", "nvidia-persistenced")),
            CommandAction(description="enable and start it", argv=("systemctl", "enable", "--now", "nvidia-persistenced")),
        )
        if cause.key == "masked"
        else (
            CommandAction(description=cause.fix),
            CommandAction(description="then restart it", argv=("systemctl", "restart", "nvidia-persistenced")),
        )
    )
    return Fix(
        kind="runtime",
        where=fix_where(facts.platform),
        summary=f"{cause.fix[0].upper()}{cause.fix[1:]} (nvidia-persistenced's journal says why it failed: starting it "
        "again as it is fails the same way)",
        actions=actions,
        risk="low",
        verify="systemctl is-active nvidia-persistenced -> active; nvidia-smi -q | grep 'Persistence Mode' -> Enabled",
        revert="undo the change named above",
        persist=service_persist("nvidia-persistenced", facts.platform.image),
    )


RACK_DOC = "https://docs.nvidia.com/multi-node-nvlink-systems/mnnvl-user-guide/overview.html"


def _rack_fabric(facts: DriverFacts, seen: str, state: str | None, fabric: str | None, refs: list[str]) -> Finding:
    """A rack compute tray without a local fabric manager: deliberate; a fabric not up is the switch trays' to fix."""
    observed = f"{seen}; nvidia-fabricmanager {state or 'not installed'} on this compute tray; GPU fabric state: {fabric}"
    if facts.fabric_state == 3 or fabric is None:
        return FABRICMANAGER_CHECK.ok(
            observed,
            expected="the rack's fabric set up by its NVLink switch trays",
            explanation="On a multi-node NVLink rack (GB200/GB300 NVL) the NVLink switch trays' NVOS runs the fabric "
            f"manager and NVLSM; a compute tray runs none ({RACK_DOC}).",
            evidence=refs,
        )
    fix = Fix(
        kind="runtime",
        where=fix_where(facts.platform),
        summary="Bring the rack's NVLink fabric up from its switch trays (NMX-Controller, fabric manager and NVLSM on "
        "NVOS), then this tray's IMEX service; no fabric manager is to be started on a compute tray",
        actions=(
            CommandAction(
                description="on the NVLink switch trays (NVOS): check the NMX-Controller's fabric manager and subnet "
                "manager state for this rack's partition"
            ),
            CommandAction(description="on this tray: systemctl status nvidia-imex; nvidia-smi -q | grep -A3 Fabric"),
        ),
        risk="low",
        verify="nvidia-smi -q | grep -A2 Fabric  -> State: Completed on every GPU",
    )
    return FABRICMANAGER_CHECK.problem_at(
        "critical",
        observed,
        "GPU fabric state: completed",
        f"These GPUs are a multi-node NVLink rack's compute tray: the fabric manager and NVLSM run on the rack's NVLink "
        f"switch trays, not here ({RACK_DOC}). The GPUs' fabric registration is {fabric}: NVLink to the other trays is "
        "down until the switch trays complete it.",
        fix,
        subjects=tuple(g.label for g in facts.gpus),
        evidence=refs,
    )


FABRICMANAGER_CHECK = Check(
    "driver.fabricmanager",
    "NVIDIA Fabric Manager (NVSwitch)",
    reads=(
        "NVIDIA PCI bridges (class 0x0680), `/dev/nvidia-nvswitch*`, NVML fabric info, `systemctl is-active nvidia-fabricmanager`"
        "; when it is down its journal, status and log, and on NVLink 5 NVLSM's binary, pid file, process and "
        "`/var/log/nvlsm.log`"
    ),
    problem="NVSwitch system with the fabric manager not active; on a GB200/GB300 rack's compute tray (whose switch trays "
    "run it) the fabric not completed",
    fix="what the unit's own reason asks (its journal, status and fabricmanager.log): the fabric manager package of the "
    "driver's version, the open modules, ib_umad or NVLSM on NVLink 5, unmask; a bare start only where none is read",
    kinds=("runtime",),
    premises=(premises.PLATFORM, premises.GPUS, premises.NVLINK, premises.ORIGIN, premises.OS),
)


NEEDS_FM_VERSION = Edge(
    kind="requires",
    check="driver.fabricmanager_version",
    why="it refuses to start unless its version is exactly the driver's: install that version first",
)
"""The fabric manager starts only once its version is the driver's (driver.fabricmanager_version's fix)."""


def _fm_subjects(facts: DriverFacts, switches: list[str]) -> tuple[str, ...]:
    return tuple(switches) or tuple(g.label for g in facts.gpus)


def _no_nvswitch(facts: DriverFacts, fabric: str | None, refs: list[str]) -> Finding:
    why = "no NVSwitch (no NVIDIA PCI bridge of class 0x0680"
    why += ", no /dev/nvidia-nvswitch*" if facts.dev is not None else ""
    why += f", NVML fabric state: {fabric})" if fabric else ")"
    return FABRICMANAGER_CHECK.not_applicable(why + ": PCIe-only or NVLink-bridge GPUs need no fabric manager", evidence=refs)


def _up_elsewhere(facts: DriverFacts, seen: str, service: Service, refs: list[str]) -> Finding:
    """The fabric manager is not active here, yet NVML reports the fabric set up: it runs elsewhere (the node's)."""
    where_fm = "on the container's host" if facts.platform.in_container else "on this host"
    return FABRICMANAGER_CHECK.ok(
        f"{seen}; GPU fabric state: completed (nvidia-fabricmanager {service.state or 'not visible'} {where_fm})",
        expected="the NVSwitch fabric set up",
        explanation="NVML reports the GPU's fabric registration completed: the fabric manager did its work, "
        "wherever it runs (the node's, for a container).",
        evidence=refs,
    )


def _state_unread(facts: DriverFacts, seen: str, service: Service, fabric: str | None, refs: list[str]) -> Finding:
    why = f"{seen}, but the state of nvidia-fabricmanager is unknown (systemctl: {service.error or 'no answer'})"
    if facts.platform.in_container:
        why += "; it runs on the container's host: check there (systemctl is-active nvidia-fabricmanager on the node)"
    if fabric:
        why += f"; NVML fabric state: {fabric}"
    return FABRICMANAGER_CHECK.unknown(why, evidence=refs)


def _upgrade_pending(facts: DriverFacts, seen: str, state: str, switches: list[str], refs: list[str]) -> Finding:
    """The fabric manager is down because an upgraded driver waits for its reboot: the reboot is the fix."""
    pending = facts.install.pending
    fix = Fix(
        kind="reboot",
        where=fix_where(facts.platform),
        summary=f"Reboot into the upgraded driver ({pending.new_version}): the fabric manager of that version starts "
        "with it (starting it now cannot work: it refuses the old loaded module)",
        actions=(CommandAction(description="drain the server, then reboot", argv=("systemctl", "reboot")),),
        risk="medium",
        verify="after the reboot: systemctl is-active nvidia-fabricmanager -> active; nvidia-smi -q | grep -A2 Fabric "
        "-> State: Completed",
        revert="boot the previous driver (reinstall its packages)",
        persist="the reboot is the change",
        provides=("driver.reloaded",),
    )
    return FABRICMANAGER_CHECK.problem_at(
        "critical",
        f"{seen}; nvidia-fabricmanager {state}; a driver upgrade to {pending.new_version} waits for a reboot "
        f"(loaded module {pending.loaded})",
        "nvidia-fabricmanager active",
        "On NVSwitch systems the fabric manager programs the switches; without it the NVLink fabric is down and "
        "CUDA fails or hangs on these GPUs. Here it is down because the upgraded fabric manager refuses the old "
        "module still loaded: the cause is the pending reboot (driver.library_mismatch), and the reboot is the fix.",
        fix,
        subjects=_fm_subjects(facts, switches),
        evidence=[*refs, *pending.refs],
    )


def _fm_cause(facts: DriverFacts) -> Cause | None:
    """Why the fabric manager stopped, by its log, journal and the kernel log (NVLSM's own on NVLink 5)."""
    cause = unit_cause(facts.fabricmanager_log, FABRICMANAGER, kernel_log(facts)) if facts.fabricmanager_log else None
    if cause is not None and cause.key == "nvswitch_nothing":
        return _nvlsm_cause(facts, cause) if _nvlink5(facts) else replace(cause, **NVSWITCH_UNSEEN)
    return cause


def _fm_stopped(facts: DriverFacts, seen: str, state: str, cause: Cause | None, switches: list[str], refs: list[str]) -> Finding:
    """The fabric manager is down for no reason rigaudit knows: read why, then start it."""
    tell = cause.tell if cause else "journalctl -u nvidia-fabricmanager -n 50 --no-pager; tail -n 50 /var/log/fabricmanager.log"
    read = CommandAction(
        description=f"first read why it stopped (starting it again fails the same way if its log names a reason): {tell}"
    )
    fix = _start(
        facts,
        "nvidia-fabricmanager",
        "Read why nvidia-fabricmanager stopped, then start it (its version must equal the driver's) and enable it at boot",
        "nvidia-smi -q | grep -A2 Fabric  -> State: Completed",
        edges=(NEEDS_FM_VERSION,),
        before=(read,) if state != "inactive" else (),
    )
    said = cause.cause if cause else "unknown: its log was not read"
    return FABRICMANAGER_CHECK.problem_at(
        "critical",
        f"{seen}; nvidia-fabricmanager {state}; cause {said}",
        "nvidia-fabricmanager active",
        "On NVSwitch systems the fabric manager programs the switches; without it the GPUs' NVLink fabric is not set "
        "up, CUDA initialization fails or hangs on these GPUs, and NCCL cannot use NVLink. Neither its log, its journal "
        f"nor the kernel log names a reason rigaudit knows; what would tell: {tell}.",
        fix,
        subjects=_fm_subjects(facts, switches),
        evidence=[*refs, *(facts.fabricmanager_log.refs if facts.fabricmanager_log else ()), *_nvlsm_refs(facts)],
    )


def _operator_fabric(facts: DriverFacts, seen: str, switches: list[str], refs: list[str]) -> Finding:
    """The GPU Operator's driver container runs the fabric manager: judged by its process, never by a host unit."""
    origin = facts.install.origin
    refs = [*refs, *origin.evidence]
    pid = origin.daemon("nv-fabricmanager")
    if pid is not None:
        return FABRICMANAGER_CHECK.ok(
            f"{seen}; nv-fabricmanager runs (pid {pid}) in {origin.said}; no host unit, as the Operator deploys it",
            expected="the fabric manager running",
            explanation=f"On NVSwitch systems the GPU Operator's driver container starts the fabric manager itself "
            f"({OPERATOR_SOURCE}); the host has no nvidia-fabricmanager unit to start.",
            evidence=refs,
        )
    fix = Fix(
        kind="runtime",
        where=fix_where(facts.platform),
        summary="Read why the GPU Operator's driver container has no fabric manager, then restart that node's driver "
        "pod; no host unit or package is to be installed under the Operator's driver",
        actions=(
            CommandAction(description=f"{DRIVER_POD_LOG}: its reason for the fabric manager"),
            CommandAction(description="with the node drained: delete that node's nvidia-driver-daemonset pod (it is recreated)"),
        ),
        risk="medium",
        verify="a nv-fabricmanager process runs; nvidia-smi -q | grep -A2 Fabric -> State: Completed",
    )
    return FABRICMANAGER_CHECK.problem_at(
        "critical",
        f"{seen}; no nv-fabricmanager process, and the driver is {origin.said}",
        "nv-fabricmanager running in the Operator's driver container",
        "On NVSwitch systems the fabric manager programs the switches; here the GPU Operator's driver container runs it "
        f"({OPERATOR_SOURCE}), and no nv-fabricmanager process is running, so the NVLink fabric is not set up. The "
        f"container's log (its root on the host: {OPERATOR_ROOT}) says why.",
        fix,
        subjects=_fm_subjects(facts, switches),
        evidence=refs,
    )


def judge_fabricmanager(facts: DriverFacts) -> Finding:
    switches_dev = [e for e in facts.dev or () if re.fullmatch(r"nvidia-nvswitch\d+", e)]
    refs = [dir_ref(PCI_DEVICES), dir_ref("/dev")] + ([facts.fabric_ref] if facts.fabric_ref else [])
    fabric = FABRIC_STATES.get(facts.fabric_state) if facts.fabric_state is not None else None
    if facts.install.origin.origin == "vfio":
        return passed_through(FABRICMANAGER_CHECK, facts)
    if facts.fabricmanager is None:
        return _no_nvswitch(facts, fabric, refs)
    switches = list(facts.nvswitch_pci) or switches_dev
    seen = f"{len(switches)} NVSwitches" if switches else "an NVSwitch fabric (NVML)"
    service = facts.fabricmanager
    refs.append(service.ref)
    if service.state == "active":
        state = f"; GPU fabric state: {fabric}" if fabric else ""
        return FABRICMANAGER_CHECK.ok(f"{seen}; nvidia-fabricmanager active{state}", evidence=refs)
    if facts.install.origin.origin == "operator" and facts.fabric_state != 3:
        return _operator_fabric(facts, seen, switches, refs)
    if rack := rack_gpus(facts):
        rack_seen = f"{len(rack)} {rack[0].name} GPUs on NVLink to the rack's switch trays"
        return _rack_fabric(facts, rack_seen, service.state, fabric, refs)
    if facts.fabric_state == 3:
        return _up_elsewhere(facts, seen, service, refs)
    if service.state is None:
        return _state_unread(facts, seen, service, fabric, refs)
    if facts.install.pending.driver_upgraded:
        return _upgrade_pending(facts, seen, service.state, switches, refs)
    cause = _fm_cause(facts)
    if cause is not None and cause.known:
        return _fabric_cause(facts, seen, service.state, cause, switches, refs)
    return _fm_stopped(facts, seen, service.state, cause, switches, refs)


NVLSM_MISSING = {
    "key": "nvlsm",
    "cause": "on an NVLink 5 system the NVSwitches are programmed by NVLSM, which is not running: the fabric manager "
    "finds nothing to do without it",
    "fix": "install NVLSM (the nvlsm package of the fabric manager's release) and ib_umad, and start the fabric manager "
    "through its unit (nvidia-fabricmanager-start.sh starts NVLSM first)",
}
"""NV_WARN_NOTHING_TO_DO on NVLink 5 (Blackwell HGX): the Fabric Manager user guide, release 2.3, 'Systems Using Fourth
Generation NVSwitches': without NVLSM, FabricManager fails to start with NV_WARN_NOTHING_TO_DO."""


NVSWITCH_UNSEEN = {
    "cause": "the NVSwitch driver reports no NVSwitch to manage, though this host shows NVSwitches",
    "fix": "check that the NVSwitches are up for the driver (ls /dev/nvidia-nvswitch*; dmesg | grep -i nvswitch; "
    "lspci -d 10de: | grep -i bridge) and power-cycle the machine; switches that stay missing are the baseboard's "
    "(the vendor's support)",
    "kind": "hardware",
}
"""NV_WARN_NOTHING_TO_DO before NVLink 5: the fabric manager found no switch through the NVSwitch driver."""


def _nvlsm_cause(facts: DriverFacts, nothing: Cause) -> Cause:
    """The fabric manager found nothing to do on NVLink 5: NVLSM is not running. Why is NVLSM's own: not installed
    (install it), stopped with a reason its log names (that reason), or stopped with none readable (unknown, naming
    what would tell)."""
    nvlsm = facts.nvlsm
    if nvlsm is None or not nvlsm.installed:
        return replace(nothing, **NVLSM_MISSING)
    if nvlsm.running:
        return nothing  # NVLSM runs and the fabric manager still finds nothing: not NVLSM's absence
    own = nvlsm.cause()
    if own.known:
        return replace(own, cause=f"NVLSM stopped: {own.cause}")
    said = own.cause.removeprefix("unknown: ")
    return replace(own, cause=f"unknown: {nvlsm.text()} (the fabric manager finds nothing to do without it); its own log: {said}")


def _nvlsm_refs(facts: DriverFacts) -> tuple[str, ...]:
    return facts.nvlsm.refs if facts.nvlsm is not None and _nvlink5(facts) else ()


def _teller(cause: Cause) -> str:
    return "NVLSM's own log" if cause.told_by == file_ref(NVLSM_LOG) else "the fabric manager's log"


def _nvlink5(facts: DriverFacts) -> bool:
    """Blackwell or newer GPUs on a local NVSwitch fabric: NVLink 5, whose switches NVLSM programs."""
    return any(a is not None and a >= BLACKWELL for a in facts.archs.values())


def _cause_actions(cause: Cause) -> tuple[CommandAction | ModuleLoadAction | ServiceStartAction, ...]:
    """The steps that remove the reason the fabric manager's log names, then start it again."""
    restart = CommandAction(description="then restart it", argv=("systemctl", "restart", "nvidia-fabricmanager"))
    if cause.key == "fm_version":
        return (ServiceStartAction(unit="nvidia-fabricmanager"),)  # after the install its requires edge orders
    if cause.key == "ib_umad":
        return (ModuleLoadAction(module="ib_umad"), restart)
    if cause.key == "masked":
        return (
            CommandAction(description="unmask the unit", argv=("systemctl", "unmask", "nvidia-fabricmanager")),
            CommandAction(description="enable and start it", argv=("systemctl", "enable", "--now", "nvidia-fabricmanager")),
        )
    if cause.kind in ("runtime", "restart"):
        return (CommandAction(description=cause.fix), restart)
    return (CommandAction(description=cause.fix),)


def _cause_fix(facts: DriverFacts, cause: Cause) -> Fix:
    """The fix that removes the fabric manager's reason. A version refusal is removed by driver.fabricmanager_version's
    install (a restart step): this fix restarts the daemon once that is done (the requires edge orders it), never
    before."""
    target: FixTarget = "hardware" if cause.kind == "hardware" else "gpu_driver"
    enable = service_persist("nvidia-fabricmanager", facts.platform.image)
    return Fix(
        kind="runtime" if cause.key == "fm_version" else cause.kind or "runtime",
        where=layer_where(facts.platform, target),
        summary="Start nvidia-fabricmanager once the fabric manager of exactly the loaded driver's version is installed "
        "(driver.fabricmanager_version): its log says it refuses the driver it found"
        if cause.key == "fm_version"
        else f"{cause.fix[0].upper()}{cause.fix[1:]} ({_teller(cause)} says why it stopped: starting it "
        "again as it is fails the same way)",
        actions=_cause_actions(cause),
        risk="medium" if cause.kind in ("reboot", "restart") else "low",
        verify="systemctl is-active nvidia-fabricmanager -> active; nvidia-smi -q | grep -A2 Fabric -> State: Completed",
        revert="undo the change named above",
        persist=f"echo ib_umad > /etc/modules-load.d/ib_umad.conf; {enable}" if cause.key == "ib_umad" else enable,
        edges=(NEEDS_FM_VERSION,) if cause.key == "fm_version" else (),
    )


def _fabric_cause(
    facts: DriverFacts, seen: str, state: str | None, cause: Cause, switches: list[str], refs: list[str]
) -> Finding:
    """The fabric manager is down for a reason its log (or the kernel log) names: the fix removes that reason."""
    return FABRICMANAGER_CHECK.problem_at(
        "critical",
        f"{seen}; nvidia-fabricmanager {state}; cause: {cause.cause}; its words: {cause.line}",
        "nvidia-fabricmanager active",
        "On NVSwitch systems the fabric manager programs the switches; without it the GPUs' NVLink fabric is not set "
        f"up and CUDA fails or hangs on these GPUs. It stopped for the reason its own log gives ({cause.told_by}): "
        f"{cause.cause}. The fix removes that reason; a plain start would fail again (source: {cause.source}).",
        _cause_fix(facts, cause),
        subjects=_fm_subjects(facts, switches),
        evidence=[
            *refs,
            *(facts.fabricmanager_log.refs if facts.fabricmanager_log else ()),
            *_nvlsm_refs(facts),
            *([cause.told_by] if cause.told_by else []),
        ],
    )
