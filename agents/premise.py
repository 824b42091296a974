"""Premises: the facts a check's verdict rests on, declared as data next to the check.

A premise is a named fact (:data:`PREMISES`: the platform's layers, the running kernel, the GPU model...), what
reads it, and a function of the area's facts object that tells whether it was read (:func:`held` with its value)
or not (:func:`missing` with what would tell). Each area keeps a table of them (``<area>/premises.py``) and each
``Check`` names the ones its verdict rests on. :func:`enforce` applies them once, for every check: where a premise
is missing, a verdict it guards (``ok`` or a ``problem``) becomes ``unknown`` naming what would tell, and every
finding carries its premises as read (:class:`~rigaudit.tools.schema.finding.PremiseRead`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rigaudit.tools.core.record import Record
from rigaudit.tools.schema.finding import Finding, PremiseRead, Status

PREMISES: dict[str, str] = {
    "platform": "the layers the audit runs on: bare metal, VM guest, container, pod",
    "os": "the OS kind: a distribution, or an image-based OS (Talos, Bottlerocket, Flatcar/CoreOS) whose settings "
    "persist only through its own configuration",
    "kernel": "the running kernel's release",
    "kernel_log": "the kernel log",
    "cmdline": "the kernel command line",
    "cpu": "the CPU's vendor, family and model",
    "numa": "the NUMA nodes and their CPUs",
    "gpus": "the GPUs: which are there, their model (NVML, else the PCI bus)",
    "nvml": "NVML: the driver's view of each GPU",
    "driver": "the NVIDIA driver: loaded module, version",
    "driver_flavor": "the NVIDIA kernel module's flavor: open or proprietary",
    "driver_origin": "where the driver comes from: DKMS, Ubuntu's precompiled modules, the GPU Operator, a guest (vfio-pci)",
    "modules": "the loaded kernel modules",
    "pci_topology": "the PCIe tree above the GPUs (bridges, switches, links)",
    "p2p": "whether the GPUs can peer (NVML P2P status, product line)",
    "nvlink": "the GPUs' NVLinks and the NVSwitch fabric",
    "gpu_config": "what the GPUs are configured to do: MIG, vGPU, compute mode",
    "servers": "the serving processes: which they are, their GPUs, environment and limits",
    "rdma": "the RDMA NICs and their links",
    "cpufreq": "the CPU frequency driver and its policies",
    "tuned": "tuned: whether it owns the CPU tunables, its active profile",
    "packages": "installed packages and libraries (torch, NCCL, the driver's user space)",
    "benchmark": "the result of rigaudit's P2P micro-benchmark",
}
"""Every premise name and what it stands for: one word for one fact across every area."""


class Reading(Record):
    """What a premise's function tells of one host's facts."""

    held: bool
    text: str
    """The value read (held), or what would tell (missing)."""


def held(value: str) -> Reading:
    """The premise was read: ``value`` is what it was read as."""
    return Reading(True, value)


def missing(tell: str) -> Reading:
    """The premise was not read: ``tell`` says what would tell."""
    return Reading(False, tell)


GUARDS: tuple[Status, ...] = ("ok", "problem")


class Premise(Record):
    """A fact a verdict rests on: its name (one of :data:`PREMISES`), what reads it, and how the area's facts tell it.

    ``guards``: the verdicts that rest on it (both by default; ``("ok",)`` where a problem stands without it).
    """

    name: str
    reads: str
    tell: Callable[[Any], Reading]
    guards: tuple[Status, ...] = GUARDS

    def __post_init__(self) -> None:
        if self.name not in PREMISES:
            raise ValueError(f"premise {self.name!r} is not one of {sorted(PREMISES)}")

    def read(self, facts: Any) -> PremiseRead:
        """This premise on ``facts``: held with its value, or missing with what would tell (a function that fails on
        facts it was not built for reads as missing: no verdict may rest on it)."""
        try:
            reading = self.tell(facts)
        except Exception as exc:  # a premise's bug must not end the audit, nor pass as held
            reading = missing(f"its reader failed ({exc.__class__.__name__})")
        return PremiseRead(name=self.name, state="held" if reading.held else "missing", value=reading.text)


def _withheld(finding: Finding, premises: Sequence[Premise], reads: Sequence[PremiseRead]) -> Finding:
    """``finding`` as ``unknown`` when a premise guarding its status is missing; else as it is."""
    gaps = [r for p, r in zip(premises, reads, strict=True) if r.state == "missing" and finding.status in p.guards]
    if not gaps:
        return finding
    tells = "; ".join(f"{r.name} not read ({r.value})" for r in gaps)
    verdict = f"{finding.status} ({finding.severity})" if finding.severity else finding.status
    why = f"{tells}: the verdict rests on it, so it is unknown (the rule alone would say {verdict}: {finding.observed})"
    return finding.model_copy(update={"status": "unknown", "severity": None, "fix": None, "observed": why, "explanation": why})


def enforce(premises: Sequence[Premise], facts: Any, finding: Finding) -> Finding:
    """``finding`` carrying its premises as read on ``facts``, ``unknown`` where one it rests on is missing."""
    if not premises or finding.source != "rules":
        return finding
    reads = [p.read(facts) for p in premises]
    return _withheld(finding, premises, reads).model_copy(update={"premises": tuple(reads)})


__all__ = ["GUARDS", "PREMISES", "Premise", "Reading", "enforce", "held", "missing"]
