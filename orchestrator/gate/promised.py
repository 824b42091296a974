"""The GPUs this node should have, from what already says so, judged as checks ``promised.*`` on every gate run.

- ``promised.slurm``: Slurm's GRES for this node (:mod:`.slurm_gres`);
- ``promised.kubernetes``: the node object's ``nvidia.com/gpu`` capacity (``--kube-node``, :mod:`.kube_node`);
- ``promised.pci``: with the NVIDIA module loaded, every NVIDIA GPU function on the PCI bus that no other driver
  holds (vfio-pci for a VM is another's) is one NVML shows; inside a Slurm job step whose NVML shows no more GPUs
  than it was given (``SLURM_STEP_GPUS``/``SLURM_JOB_GPUS``), every GPU it was given is, and the node's others are
  another's; a step that shows more is judged as the host, one that names no GPU but shows some not all: unknown;
- ``promised.query``: every GPU NVML lists answers NVML (``GPU_IS_LOST`` is a GPU fallen off the bus).

A missing GPU is a ``critical`` problem. An ``unknown`` here is counted as "could not check" (exit 3), as an
``--expect`` value is: it is an unknown that hides the GPUs (NVML refused or too slow, the bus unlisted, the
scheduler's promise unreadable). A snapshot that did not record NVML is judged by its PCI bus alone.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from rigaudit.agents.check import Check
from rigaudit.agents.facts.driver_origin import operator_node
from rigaudit.agents.facts.gpus import PCI_DEVICES, GpuInventory, collect_gpus
from rigaudit.agents.facts.job_step import STEP_VARIABLES, JobStep
from rigaudit.agents.facts.platform import detect_platform
from rigaudit.agents.findings import not_applicable, ok, problem, unknown
from rigaudit.agents.investigator import Investigator
from rigaudit.orchestrator.gate.kube_node import RESOURCE, KubeNode
from rigaudit.orchestrator.gate.slurm_gres import SlurmGres
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.nvml_local import OPERATOR_ROOT
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.schema.finding import Finding, Fix

AREA = "promised"
MODULE = "/sys/module/nvidia"
HIDDEN = frozenset({"NO_PERMISSION", "TIMEOUT"})
"""NVML answers that hide the GPUs (the gate cannot tell how many work): could not check."""
NOT_RECORDED = "NOT_RECORDED"
HARMLESS = frozenset({"NOT_SUPPORTED", "FUNCTION_NOT_FOUND", NOT_RECORDED, *HIDDEN})
QUERIES = ("nvmlDeviceGetPciInfo", "nvmlDeviceGetName", "nvmlDeviceGetUUID")
_FIX = "a GPU is missing or lost: look for Xid 79 (fallen off the bus) and Xid 48/94 in the kernel log; reset or reseat it"
_ALNUM = r"[^a-z0-9]"


def _check(name: str, title: str, reads: str, problem_when: str) -> Check:
    return Check(f"{AREA}.{name}", title, reads=reads, problem=problem_when, fix=_FIX, kinds=("hardware",))


CHECKS = (
    _check(
        "slurm",
        "The GPUs Slurm's GRES promises this node",
        "slurm.conf NodeName ... Gres= ($SLURM_CONF), else gres.conf Name=gpu; NVML, else the PCI bus",
        "fewer usable GPUs than Slurm's GRES count (a GPU of another type than its GRES type: medium)",
    ),
    _check(
        "kubernetes",
        "The GPUs the Kubernetes node advertises",
        f"the node object's status.capacity[{RESOURCE}] (--kube-node); NVML, else the PCI bus",
        "fewer usable GPUs than the node's capacity",
    ),
    _check(
        "pci",
        "Every NVIDIA GPU on the PCI bus is on NVML",
        f"{MODULE}, the NVIDIA display functions of {PCI_DEVICES} and their drivers, NVML's device count; in a "
        "Slurm job step, the GPUs it was given (SLURM_STEP_GPUS, SLURM_JOB_GPUS) and cgroup.conf's ConstrainDevices",
        "the NVIDIA module is loaded and a GPU function no other driver holds is not on NVML (in a job step whose NVML "
        "shows no more GPUs than it was given: a GPU the step was given; one given none, or naming none while NVML "
        "shows some of the bus's, cannot tell: unknown)",
    ),
    _check(
        "query",
        "Every GPU NVML lists answers it",
        "NVML PCI info, name and UUID of every device NVML counts",
        "NVML lists a GPU but cannot query it (GPU_IS_LOST: fallen off the bus)",
    ),
)


class Promises(Record):
    """What the scheduler says, read before the audit (outside the host's probe: it is this machine's setting)."""

    slurm: SlurmGres | None = None
    kubernetes: KubeNode | None = None


class PromisedFacts(Record):
    inventory: GpuInventory
    pci_listed: bool
    module_loaded: bool
    drivers: tuple[tuple[str, str | None], ...]
    """Each NVIDIA GPU function on the bus and the driver bound to it (``None``: none)."""
    lost: tuple[tuple[int, str], ...]
    """NVML indices that answer an error to a query, and the error."""
    in_container: bool
    operator: bool = False
    """The GPU Operator's driver container holds the driver and its libraries (:func:`operator_node`)."""
    job_step: JobStep | None = None
    """The Slurm job step the check runs in, unless what NVML shows says it is not confined (judged as the host)."""


def collector(seen: list[GpuInventory] | None = None) -> Callable[[Probe], Awaitable[PromisedFacts]]:
    """``seen`` receives the GPU inventory read (the gate's per-GPU metric labels come from it)."""

    async def collect(probe: Probe) -> PromisedFacts:
        inventory = await collect_gpus(probe)
        if seen is not None:
            seen.append(inventory)
        listing = (await probe.list_dir(PCI_DEVICES)).entries
        module = await probe.exists(MODULE)
        platform = await detect_platform(probe)
        links = await probe.gather(*[lambda g=g: probe.readlink(f"{g.sysfs}/driver") for g in inventory.gpus])
        drivers = tuple((g.bdf, link.rsplit("/", 1)[-1] if link else None) for g, link in zip(inventory.gpus, links, strict=True))
        lost: list[tuple[int, str]] = []
        for index in range(inventory.nvml_count or 0):
            answers = await probe.gather(*[lambda fn=fn: probe.nvml(fn, index) for fn in QUERIES])
            error = next((a.error for a in answers if a.error and a.error not in HARMLESS), None)
            if error is not None:
                lost.append((index, error))
        operator = inventory.nvml_error == "LIBRARY_NOT_FOUND" and await operator_node(probe)
        step = platform.job_step if inventory.confined else None
        return PromisedFacts(inventory, listing is not None, module, drivers, tuple(lost), platform.in_container, operator, step)

    return collect


class Usable(Record):
    count: int | None
    """``None``: hidden (see :attr:`why`)."""
    detail: str
    why: str = ""


def usable(facts: PromisedFacts) -> Usable:
    """The GPUs a job could use: NVML's, less those it cannot query; the PCI bus's where NVML was not recorded."""
    inv = facts.inventory
    if inv.nvml_count is not None:
        outside = inv.elsewhere if facts.in_container or facts.job_step else 0
        count = inv.nvml_count - len(facts.lost) + outside
        lost = f", {len(facts.lost)} NVML cannot query" if facts.lost else ""
        if outside:  # given to other containers or jobs: on the bus, not queried from here
            here = "this job step" if facts.job_step else "this container"
            return Usable(
                count, f"{count} GPU(s): NVML {inv.nvml_count} here{lost}, {outside} on the PCI bus outside {here} (not queried)"
            )
        return Usable(count, f"{count} usable GPU(s) (NVML {inv.nvml_count}{lost})")
    error = inv.nvml_error or "no answer"
    if error in HIDDEN:
        return Usable(None, "", f"NVML: {error}: how many GPUs work cannot be told")
    if not facts.pci_listed:
        return Usable(None, "", f"NVML: {error} and {PCI_DEVICES} could not be listed")
    seen = len(inv.gpus)
    if error == NOT_RECORDED:
        return Usable(seen, f"{seen} NVIDIA GPU(s) on the PCI bus (NVML not recorded)")
    return Usable(0, f"0 usable GPU(s): NVML fails ({error}) with {seen} NVIDIA GPU(s) on the PCI bus")


def _fix() -> Fix:
    return Fix(kind="hardware", where="host", summary=_FIX)


def _short(text: str) -> str:
    return re.sub(_ALNUM, "", text.lower())


def _against(check: Check, promised: int, kind: str | None, said: str, source: str, facts: PromisedFacts) -> Finding:
    have = usable(facts)
    if have.count is None:
        return unknown(check.id, AREA, check.title, f"{said}; {have.why}")
    expected = f"{promised} GPU(s)" + (f" of type {kind}" if kind else "")
    if have.count < promised:
        text = f"{promised - have.count} of {said} missing, {have.detail}"
        why = f"the scheduler expects {expected} ({source}): {text}"
        return problem(check.id, AREA, check.title, "critical", text, expected, why, _fix())
    names = {g.name for g in facts.inventory.gpus if g.index is not None}
    if kind and names and not any(_short(kind) in _short(n) for n in names):
        text = f"{said}, but these GPUs are {', '.join(sorted(names))}"
        why = f"the GRES type does not name these GPUs: {text}"
        return problem(check.id, AREA, check.title, "medium", text, expected, why, _fix())
    return ok(check.id, AREA, check.title, f"{have.detail}; {said} ({source})", expected=expected)


def _slurm(check: Check, slurm: SlurmGres | None, facts: PromisedFacts) -> Finding:
    if slurm is None:
        return not_applicable(check.id, AREA, check.title, "no Slurm configuration ($SLURM_CONF unset, no /etc/slurm/slurm.conf)")
    if slurm.error is not None:
        return unknown(check.id, AREA, check.title, f"Slurm's promise for {slurm.node} could not be read: {slurm.error}")
    if slurm.promise is None:
        return not_applicable(check.id, AREA, check.title, f"Slurm promises node {slurm.node} no GPU")
    p = slurm.promise
    said = f"the {p.count} gpu" + (f":{p.type}" if p.type else "") + f" Slurm's GRES promises {slurm.node}"
    return _against(check, p.count, p.type, said, p.source, facts)


def _kubernetes(check: Check, node: KubeNode | None, facts: PromisedFacts) -> Finding:
    if node is None:
        return not_applicable(check.id, AREA, check.title, "no node object named (--kube-node)")
    if node.error is not None:
        return unknown(check.id, AREA, check.title, node.error)
    if node.capacity is None:
        return not_applicable(check.id, AREA, check.title, f"node {node.name} advertises no {RESOURCE}")
    said = f"the {node.capacity} {RESOURCE} node {node.name} advertises"
    return _against(check, node.capacity, None, said, node.source, facts)


def _pci(check: Check, facts: PromisedFacts) -> Finding:
    inv = facts.inventory
    if not facts.module_loaded:
        return not_applicable(check.id, AREA, check.title, f"the NVIDIA module is not loaded ({MODULE} absent)")
    if facts.in_container:
        return not_applicable(check.id, AREA, check.title, "in a container: NVML shows the GPUs it was given, the bus every GPU")
    if facts.job_step is not None and inv.nvml_count is not None:
        return _in_step(check, facts, facts.job_step)
    ours = [bdf for bdf, driver in facts.drivers if driver in (None, "nvidia")]
    on_nvml = {g.bdf for g in inv.gpus if g.index is not None}
    if inv.nvml_count is None:
        error = inv.nvml_error or "no answer"
        if error == NOT_RECORDED or not ours:
            return not_applicable(check.id, AREA, check.title, f"NVML: {error}")
        if error in HIDDEN:
            return unknown(check.id, AREA, check.title, f"NVML: {error} with {len(ours)} NVIDIA GPU function(s) on the bus")
        if facts.operator:
            why = f"NVML: {error}: the driver's libraries are the GPU Operator's, in its driver container ({OPERATOR_ROOT}), "
            why += f"and none could be loaded from there; {len(ours)} NVIDIA GPU function(s) on the bus. What would tell: "
            why += "run the check with that root's library folder on LD_LIBRARY_PATH, or inside the driver container"
            return unknown(check.id, AREA, check.title, why)
        text = f"NVML fails ({error}) with the module loaded and {len(ours)} NVIDIA GPU function(s) on the bus"
        return problem(check.id, AREA, check.title, "critical", text, "NVML shows them", text, _fix())
    missing = [bdf for bdf in ours if bdf not in on_nvml]
    expected = f"{len(ours)} GPU(s) on NVML"
    if missing or inv.nvml_count < len(ours):
        shown = ", ".join(missing[:4]) + (f" +{len(missing) - 4} more" if len(missing) > 4 else "")
        text = f"NVML shows {inv.nvml_count} of the {len(ours)} NVIDIA GPU functions on the PCI bus" + (
            f" (not {shown})" if shown else ""
        )
        return problem(check.id, AREA, check.title, "critical", text, expected, text, _fix())
    return ok(check.id, AREA, check.title, f"NVML shows the {len(ours)} NVIDIA GPU function(s) on the PCI bus", expected=expected)


def _in_step(check: Check, facts: PromisedFacts, step: JobStep) -> Finding:
    """Inside a job step NVML shows no more GPUs than it was given: those must all be there; the node's others are
    another's. Naming none while NVML shows some of the bus's, it cannot tell which are missing: unknown."""
    inv = facts.inventory
    ours = len([bdf for bdf, driver in facts.drivers if driver in (None, "nvidia")])
    on_bus = ours + (inv.elsewhere if inv.nvml_indices else 0)  # given none, the inventory lists the bus's GPUs
    shown = (inv.nvml_count or 0) - len(facts.lost)
    where = f"inside {step.label} ({step.constraint})"
    if step.confines(inv.nvml_count, len(inv.gpus) + (inv.elsewhere if inv.nvml_indices else 0)) is None:
        why = f"{where}: no GPU of the step named, NVML shows {inv.nvml_count} of the {on_bus} GPU(s) on the PCI bus "
        why += f"({', '.join(STEP_VARIABLES)} unset: an ssh login pam_slurm_adopt put in the job's extern step has "
        why += "sshd's environment), so whether one is missing cannot be told; check the node from the host "
        why += "(slurmd's HealthCheckProgram, ssh outside a job) or in a step given its GPUs (srun --gres=gpu:N)"
        return unknown(check.id, AREA, check.title, why)
    if not step.gpus and shown == 0:
        why = f"in {step.label}, which was given no GPU: its device cgroup ({step.constraint}) opens none of the "
        why += f"{on_bus} on the PCI bus, so they cannot be judged from here; check the node from the host (slurmd's "
        why += "HealthCheckProgram, ssh) or in a step given its GPUs (srun --gres=gpu:N)"
        return unknown(check.id, AREA, check.title, why)
    given = len(step.gpus)
    expected = f"the {given} GPU(s) the step was given on NVML"
    if shown < given:
        text = f"{where}: NVML shows {shown} of the {given} GPU(s) the step was given ({step.given})"
        return problem(check.id, AREA, check.title, "critical", text, expected, text, _fix())
    observed = f"{where}: NVML shows the {shown} GPU(s) the step was given ({step.given}) of the {on_bus} on the PCI bus"
    return ok(check.id, AREA, check.title, observed, expected=expected)


def _query(check: Check, facts: PromisedFacts) -> Finding:
    inv = facts.inventory
    if inv.nvml_count is None:
        return not_applicable(check.id, AREA, check.title, f"NVML: {inv.nvml_error or 'no answer'}")
    if facts.lost:
        text = "NVML lists but cannot query " + ", ".join(f"GPU{i} ({error})" for i, error in facts.lost)
        return problem(check.id, AREA, check.title, "critical", text, "every listed GPU answers", text, _fix())
    observed = f"the {inv.nvml_count} GPU(s) NVML lists answer it"
    return ok(check.id, AREA, check.title, observed, expected="every listed GPU answers")


def judge(promises: Promises, facts: PromisedFacts) -> list[Finding]:
    slurm, kubernetes, pci, query = CHECKS
    return [
        _slurm(slurm, promises.slurm, facts),
        _kubernetes(kubernetes, promises.kubernetes, facts),
        _pci(pci, facts),
        _query(query, facts),
    ]


def investigator(promises: Promises, seen: list[GpuInventory] | None = None) -> Investigator[PromisedFacts]:
    return Investigator(
        area=AREA,
        title="The GPUs this node should have (scheduler, PCI bus, NVML)",
        checks=CHECKS,
        collect=collector(seen),
        judge=lambda facts: judge(promises, facts),
    )


__all__ = ["AREA", "CHECKS", "Promises", "investigator", "judge", "usable"]
