"""driver.imex: NVIDIA IMEX on a node whose GPUs are in a multi-node NVLink domain (GB200/GB300 NVL racks).

IMEX is what lets CUDA export GPU memory to, and import it from, the other nodes of the NVLink domain (fabric
handles: NVLink peer-to-peer and shared memory across OS domains). Its pieces, per NVIDIA's IMEX guide: the
``nvidia-imex`` service, its nodes config (one IP address per node of the domain, the same file on every node), and
an IMEX channel device the workload opens (without one, "dependent CUDA APIs" fail "with an insufficient permission
error"). A failed start is judged by the service's own reason (its log, journal and status), as the fabric
manager's is.
"""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.unit_reasons import IMEX, Cause, unit_cause
from rigaudit.agents.investigators.driver import premises
from rigaudit.agents.investigators.driver.facts import DriverFacts, fix_where
from rigaudit.agents.investigators.driver.imex_facts import IMEX_CHANNELS, IMEX_UNIT, ImexFacts
from rigaudit.agents.persist import service_persist
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix

IMEX_DOC = "https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/overview.html"
CHANNELS_DOC = "https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/imexchannels.html"
WHY = (
    "This node's GPUs are in a multi-node NVLink domain; IMEX is what exports and imports their memory across the "
    "domain's nodes (CUDA fabric handles, multi-node NVLink P2P). Without it, multi-node NVLink memory sharing "
    "cannot work: work that imports memory from another tray fails, and communication across trays cannot use "
    f"NVLink; work within this tray's own GPUs is unaffected ({IMEX_DOC})."
)

IMEX_CHECK = Check(
    "driver.imex",
    "NVIDIA IMEX (multi-node NVLink memory)",
    reads="NVML fabric info (cluster UUID, clique), `systemctl is-active nvidia-imex`, `/etc/nvidia-imex/config.cfg` "
    "and its nodes config, `/dev/nvidia-caps-imex-channels`, `/proc/devices`; when it is not active its journal, "
    "status and `/var/log/nvidia-imex.log`",
    problem="GPUs in a multi-node NVLink domain (GB200/GB300 NVL) with nvidia-imex not active, its nodes config "
    "missing or empty, or no IMEX channel: multi-node NVLink memory sharing cannot work",
    fix="what the service's own reason asks (the nodes config listing every node of the domain, this one's address "
    "among them); create the IMEX channel; a bare start only where no reason is read",
    kinds=("runtime",),
    premises=(premises.PLATFORM, premises.GPUS, premises.NVLINK_DOMAIN, premises.OS),
)


def _domain(facts: DriverFacts) -> str:
    names = ", ".join(dict.fromkeys(g.name for g in facts.gpus)) or "GPUs"
    if facts.fabric_cluster and facts.fabric_clique is not None:
        return f"{len(facts.gpus)} {names} in NVLink domain {facts.fabric_cluster} (clique {facts.fabric_clique})"
    return f"{len(facts.gpus)} {names} of a multi-node NVLink rack"


def _restart(facts: DriverFacts, summary: str, first: CommandAction) -> Fix:
    """Remove the cause (``first``), then restart the service."""
    return Fix(
        kind="runtime",
        where=fix_where(facts.platform),
        summary=summary,
        actions=(first, CommandAction(description="then restart it", argv=("systemctl", "restart", IMEX_UNIT))),
        risk="low",
        verify=f"systemctl is-active {IMEX_UNIT} -> active; nvidia-imex-ctl -N -> every node Connected",
        revert="restore the previous nodes config and restart nvidia-imex",
        persist=service_persist(IMEX_UNIT, facts.platform.image),
    )


def _down(facts: DriverFacts, imex: ImexFacts, seen: str, refs: list[str]) -> Finding:
    """nvidia-imex is not active: the fix follows what stopped it (its nodes config, its log), never a bare start."""
    state = imex.active
    cause: Cause | None = unit_cause(imex.log, IMEX) if imex.log is not None else None
    log_refs = [*(imex.log.refs if imex.log else ()), *([cause.told_by] if cause and cause.told_by else [])]
    if imex.nodes is None or not imex.nodes:
        said = f"{imex.nodes_path} missing ({imex.nodes_error})" if imex.nodes is None else f"{imex.nodes_path} empty"
        fix = _restart(
            facts,
            f"Write {imex.nodes_path} with the IP address of every node of this NVLink domain (the same file on each, "
            "this node's own address among them), then restart nvidia-imex",
            CommandAction(description=f"list the domain's node addresses, one a line, in {imex.nodes_path}"),
        )
        observed = f"{seen}; nvidia-imex {state}; cause: its nodes config {said}"
    elif cause is not None and cause.known:
        fix = _restart(
            facts,
            f"{cause.fix[0].upper()}{cause.fix[1:]} (the nodes config is {imex.nodes_path}; IMEX's log says why it "
            "stopped: starting it again as it is fails the same way)",
            CommandAction(description=f"correct {imex.nodes_path}: {cause.cause}"),
        )
        observed = f"{seen}; nvidia-imex {state}; cause: {cause.cause}; its words: {cause.line}"
    else:
        tell = cause.tell if cause else f"journalctl -u {IMEX_UNIT} -n 50 --no-pager"
        fix = _restart(
            facts,
            "Read why nvidia-imex stopped, remove that cause, then start it and enable it at boot",
            CommandAction(description=f"first read why it stopped (a plain start fails again if it names a reason): {tell}"),
        )
        observed = f"{seen}; nvidia-imex {state}; cause {cause.cause if cause else 'unknown: its log was not read'}"
    return IMEX_CHECK.problem_at(
        "high",
        observed,
        "nvidia-imex active with the domain's nodes config",
        WHY,
        fix,
        subjects=tuple(g.label for g in facts.gpus),
        evidence=[*refs, *log_refs],
    )


def _no_channel(facts: DriverFacts, imex: ImexFacts, seen: str, refs: list[str]) -> Finding:
    fix = Fix(
        kind="runtime",
        where=fix_where(facts.platform),
        summary="Create the default IMEX channel (/dev/nvidia-caps-imex-channels/channel0, the major number of "
        "nvidia-caps-imex-channels in /proc/devices) and recreate it at every boot",
        actions=(
            CommandAction(
                description="mkdir -p /dev/nvidia-caps-imex-channels; mknod /dev/nvidia-caps-imex-channels/channel0 c "
                "$(awk '$2==\"nvidia-caps-imex-channels\" {print $1}' /proc/devices) 0"
            ),
        ),
        risk="low",
        verify="ls -l /dev/nvidia-caps-imex-channels/channel0",
        revert="rm /dev/nvidia-caps-imex-channels/channel0",
        persist="a boot unit (or udev rule) that runs the mknod: IMEX channels do not persist through a reboot",
    )
    return IMEX_CHECK.problem_at(
        "high",
        f"{seen}; nvidia-imex active; no IMEX channel under {IMEX_CHANNELS}",
        f"{IMEX_CHANNELS}/channel0",
        f"{WHY} The IMEX channels are not created by default; without one the CUDA calls that depend on IMEX fail "
        f"with an insufficient permission error ({CHANNELS_DOC}).",
        fix,
        subjects=tuple(g.label for g in facts.gpus),
        evidence=refs,
    )


def judge_imex(facts: DriverFacts) -> Finding:
    imex = facts.imex
    if imex is None:
        cluster = facts.fabric_cluster or "not read"
        why = f"not in a multi-node NVLink domain (NVML fabric cluster UUID: {cluster}; no GB200/GB300 GPU): no IMEX"
        return IMEX_CHECK.not_applicable(why, evidence=[facts.fabric_ref] if facts.fabric_ref else [])
    seen, refs = _domain(facts), list(imex.refs)
    if imex.active is None:
        why = f"{seen}; the state of nvidia-imex is unreadable (systemctl: {imex.state.error or 'no answer'})"
        if facts.platform.in_container:
            why += "; it runs on the node: check there (systemctl is-active nvidia-imex)"
        return IMEX_CHECK.unknown(why, evidence=refs)
    if imex.active != "active" or not imex.nodes:
        return _down(facts, imex, seen, refs)
    channels = sorted(e for e in imex.channels or () if e.startswith("channel"))
    if not channels:
        return _no_channel(facts, imex, seen, refs)
    return IMEX_CHECK.ok(
        f"{seen}; nvidia-imex active; {imex.nodes_path} lists {len(imex.nodes)} nodes; IMEX channel(s): {', '.join(channels)}",
        expected="nvidia-imex active with the domain's nodes config and an IMEX channel",
        explanation=WHY,
        evidence=refs,
    )
