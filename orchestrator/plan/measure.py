"""Measure first: where checks are unknown because the server, a container (or, from inside one, its host), the
load or the P2P path was not visible, the plan begins with the measurements that would decide them, and the steps
whose gain they decide wait on them (``measured_by``).

Which measurement decides which unknown is this module's table (by check, and by what the unknown says it could
not see); the commands are rigaudit's own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from rigaudit.tools.core.record import Record
from rigaudit.tools.schema.finding import CommandAction, Finding, Where
from rigaudit.tools.schema.plan import PlanStep


class Measurement(Record):
    id: str
    title: str
    why: str
    decides_areas: tuple[str, ...]
    """Steps of these areas (or of ``decides_checks``) wait on it: what they buy depends on what it shows."""
    decides_checks: tuple[str, ...] = ()


P2P = Measurement(
    "measure.p2p",
    "Measure GPU-to-GPU copies: does P2P work, how fast, are the data intact",
    "the P2P path was not measured: what the PCIe and IOMMU steps buy depends on it",
    ("p2p",),
    ("pcie.acs", "kernel.iommu", "pcie.mrrs", "pcie.mps", "pcie.link"),
)
NCCL = Measurement(
    "measure.nccl",
    "Measure NCCL all-reduce latency at small sizes (what tensor parallelism pays per token)",
    "decode with tensor parallelism sends small all-reduces every layer: their latency, not bandwidth, is what "
    "the P2P and NCCL steps change",
    ("nccl", "p2p"),
    ("pcie.acs", "kernel.iommu"),
)
CONTAINER = Measurement(
    "measure.container",
    "Audit inside the container that runs the server",
    "the server runs in a container whose processes, libraries and /dev/shm are not visible from here",
    ("runtime", "container", "cuda", "nccl", "power", "numa"),
)
LOAD = Measurement(
    "measure.load",
    "Audit again while the server serves (under load)",
    "no serving process was running: what the server uses, and what the CPU-side steps buy, shows only under load",
    ("runtime", "cuda", "nccl", "power", "numa"),
)
NODE = Measurement(
    "measure.node",
    "Audit the container's host (the Docker host or Kubernetes node that runs this container)",
    "a container's kernel, driver installation, kernel log and fabric manager are its host's: not visible from inside",
    ("driver", "gpu", "kernel", "power", "numa", "pcie"),
)
ALL = (NODE, CONTAINER, LOAD, P2P, NCCL)

_UNSEEN_SERVER = r"(?i)no (inference )?serv(er|ing)|process list is not recorded|no process of it|not running"
_CONTAINER = r"(?i)container"
_HOST_SIDE = r"(?i)container's host|belong to the host|on the node|the node's"


def needed(findings: Sequence[Finding], facts: Mapping[str, str]) -> dict[str, list[str]]:
    """Measurement id -> the unknown checks it would decide."""
    containers = bool(facts.get("lxc_containers") or facts.get("containers"))
    inside = "container" in facts.get("platform", "")
    multi_gpu = _gpu_count(facts) != 1
    out: dict[str, list[str]] = {}
    for f in findings:
        if f.status != "unknown":
            continue
        text = f"{f.observed} {f.explanation}"
        if f.check == "p2p.bandwidth" and "bench p2p" in text:
            out.setdefault(P2P.id, []).append(f.check)
            if multi_gpu:
                out.setdefault(NCCL.id, [])  # no check of its own: it measures what tensor parallelism pays
        elif inside and re.search(_HOST_SIDE, text):
            out.setdefault(NODE.id, []).append(f.check)
        elif not inside and re.search(_CONTAINER, text) and (containers or "inside" in text):
            out.setdefault(CONTAINER.id, []).append(f.check)
        elif re.search(_UNSEEN_SERVER, text):
            out.setdefault(CONTAINER.id if containers and not inside else LOAD.id, []).append(f.check)
    return out


def _gpu_count(facts: Mapping[str, str]) -> int | None:
    match = re.match(r"\s*(\d+)\s*x", facts.get("gpus", ""))
    return int(match.group(1)) if match else None


def steps(needs: Mapping[str, list[str]], facts: Mapping[str, str]) -> list[PlanStep]:
    """The measurement steps, with the commands that take them on this host."""
    out = []
    for m in ALL:
        if m.id not in needs:
            continue
        decided = needs[m.id]
        where, actions = _commands(m, facts)
        out.append(
            PlanStep(
                id=m.id,
                check=m.id,
                also_checks=tuple(decided),
                priority="P0",
                kind="measure",
                where=where,
                title=m.title,
                actions=actions,
                risk="low",
                verify="the checks it decides are no longer unknown in the new audit",
                rationale=m.why,
            )
        )
    return out


def _commands(m: Measurement, facts: Mapping[str, str]) -> tuple[Where, tuple[CommandAction, ...]]:
    if m is P2P:
        return "host", (
            CommandAction(description="with the GPUs idle (a minute of copies)", argv=("rigaudit", "bench", "p2p", "--yes")),
        )
    if m is NCCL:
        return "host", (
            CommandAction(
                description="with the GPUs idle; look at the latency of the smallest sizes",
                argv=("rigaudit", "bench", "nccl", "--yes", "--json", "nccl.json"),
            ),
        )
    if m is NODE:
        return "container_host", (
            CommandAction(
                description="on the container's host (the Docker host, the Kubernetes node), as root",
                argv=("rigaudit", "audit", "--json", "audit-node.json"),
            ),
        )
    if m is CONTAINER:
        lxc = [c for c in facts.get("lxc_containers", "").replace(",", " ").split() if c.isdigit()]
        if lxc:
            return "host", tuple(
                CommandAction(
                    description=f"inside LXC container {c} (rigaudit installed there)",
                    argv=("pct", "exec", c, "--", "rigaudit", "audit", "--json", f"audit-ct{c}.json"),
                )
                for c in lxc
            )
        return "container", (
            CommandAction(
                description="inside the container that runs the server (docker exec / kubectl exec into it)",
                argv=("rigaudit", "audit", "--json", "audit-container.json"),
            ),
        )
    return "host", (
        CommandAction(
            description="start a load first (rigaudit bench inference --base-url URL --model M --concurrency 8), then "
            "audit while it runs",
            argv=("rigaudit", "audit", "--json", "audit-under-load.json"),
        ),
    )


def decided_by(step: PlanStep, planned: Sequence[PlanStep]) -> list[PlanStep]:
    """The measurements of ``planned`` whose result decides what ``step`` buys."""
    area = step.check.split(".", 1)[0]
    by_id = {m.id: m for m in ALL}
    return [
        p
        for p in planned
        if p.kind == "measure" and (m := by_id.get(p.id)) and (area in m.decides_areas or step.check in m.decides_checks)
    ]
