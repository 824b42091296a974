"""Findings, fixes and actions: the answer to one check."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

Area = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,39}$")]
"""An investigator's area: a lower-case name. Which areas exist is discovered (``rigaudit.agents.registry``), so
this type only checks the shape; the orchestrator checks a finding's area is one it knows."""

RENAMED_AREAS: dict[str, tuple[str, ...]] = {
    "kernel_params": ("kernel",),
    "kernel_version": ("kernel",),
    "cuda_memory": ("cuda",),
    "nccl_p2p": ("p2p", "nccl"),
}
"""Areas of older releases and the areas that hold their checks now. Findings, audit results and transcripts
written with the old names load with the new ones (a check's area is the prefix of its id)."""


def current_area(area: str, check: str = "") -> str:
    """``area`` as today's releases name it: a renamed area becomes the one holding ``check``."""
    now = RENAMED_AREAS.get(area)
    if now is None:
        return area
    prefix = check.split(".", 1)[0]
    return prefix if prefix in now else now[0]


Status = Literal["ok", "problem", "unknown", "not_applicable"]
Severity = Literal["critical", "high", "medium", "low"]
FixKind = Literal["runtime", "restart", "reboot", "firmware", "hardware"]
Where = Literal["host", "hypervisor", "container"]
Risk = Literal["low", "medium", "high"]

SEVERITY_ORDER: dict[str, int] = {"critical": 0, "high": 1, "medium": 2, "low": 3}
FIX_KIND_ORDER: dict[str, int] = {"runtime": 0, "restart": 1, "reboot": 2, "firmware": 3, "hardware": 4}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SysctlAction(_Frozen):
    """Write a sysctl through /proc/sys (``key`` in dotted form)."""

    type: Literal["sysctl"] = "sysctl"
    key: str
    value: str


class SysfsWriteAction(_Frozen):
    """Write ``value`` to each of ``paths`` (cpuidle disable, governor, EPP, boost...)."""

    type: Literal["sysfs_write"] = "sysfs_write"
    paths: tuple[str, ...]
    value: str


class PciRegisterAction(_Frozen):
    """Write ``value`` under ``mask`` into a config-space register of each device.

    ``capability`` names where ``offset`` is counted from: ``"header"`` (absolute),
    ``"exp"`` (the PCI Express capability) or ``"ecap:0x000d"`` (an extended capability).
    """

    type: Literal["pci_register"] = "pci_register"
    devices: tuple[str, ...]
    capability: str
    offset: int
    width: Literal[1, 2, 4]
    value: int
    mask: int


class ModuleLoadAction(_Frozen):
    type: Literal["module_load"] = "module_load"
    module: str


class ServiceStartAction(_Frozen):
    type: Literal["service_start"] = "service_start"
    unit: str


class CommandAction(_Frozen):
    """A step that can only be described as a command (kernel command line, BIOS...).

    Never executed by ``apply``; shown to the person and written to emitted scripts.
    """

    type: Literal["command"] = "command"
    argv: tuple[str, ...] = ()
    description: str


Action = Annotated[
    SysctlAction | SysfsWriteAction | PciRegisterAction | ModuleLoadAction | ServiceStartAction | CommandAction,
    Field(discriminator="type"),
]


class Fix(_Frozen):
    """How to fix a problem: what kind of change, where, exactly what, and how to undo it."""

    kind: FixKind
    where: Where
    summary: str
    actions: tuple[Action, ...] = ()
    risk: Risk = "low"
    verify: str = ""
    revert: str = ""
    persist: str = ""


class Finding(_Frozen):
    """The answer to one check on one host."""

    @model_validator(mode="before")
    @classmethod
    def _renamed_area(cls, data: Any) -> Any:
        """A finding of an older release names its area as it was then (``kernel_params``): name it as now."""
        if isinstance(data, dict) and data.get("area") in RENAMED_AREAS:
            return {**data, "area": current_area(str(data["area"]), str(data.get("check", "")))}
        return data

    check: str
    area: Area
    status: Status
    severity: Severity | None = None
    title: str
    subjects: tuple[str, ...] = ()
    observed: str = ""
    expected: str = ""
    explanation: str = ""
    evidence: tuple[str, ...] = ()
    fix: Fix | None = None
    source: Literal["rules", "llm"] = "rules"
